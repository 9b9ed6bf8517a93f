// The tree assembly's kernels (src/ensemble/tree_assembly.hpp): a thread per node of a level, each
// calling the inline function the host's loops call, so the trees have the host's bits. I(v) is
// counted a level at a time from the last up; the trees' sizes and their first nodes in one set
// of columns for the batch come from a scan; then each level, from the roots down, writes its
// nodes' fields and places its nodes' children. The columns come back to the trees' vectors in
// one chunked copy per column.
#include "cuda/ensemble/tree_assembly.cuh"

#include <cub/device/device_scan.cuh>

#include <algorithm>
#include <vector>

#include "cuda/core/kernel_util.cuh"
#include "gpuml/core/array.hpp"
#include "gpuml/core/error.hpp"

namespace gpuml::detail {
namespace {

constexpr int kAssemblyBlock = 256;

__global__ void __launch_bounds__(kAssemblyBlock) subtree_splits_kernel(LevelLog level, const int32_t* __restrict__ next,
                                                                        int32_t* __restrict__ splits) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * kAssemblyBlock + threadIdx.x;
  if (i < level.count) splits[i] = subtree_splits(level.flags[i], level.at[i], next);
}

// Each root's tree size (2 I + 1 nodes) at its tree's index in the batch (the others stay 0).
__global__ void __launch_bounds__(kAssemblyBlock) tree_sizes_kernel(LevelLog roots, const int32_t* __restrict__ splits,
                                                                    int64_t* __restrict__ sizes) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * kAssemblyBlock + threadIdx.x;
  if (i < roots.count) sizes[roots.tree_of(i)] = 1 + 2 * static_cast<int64_t>(splits[i]);
}

// The roots' own statistics, impurity and rows (node 0 of each tree, as the driver made it).
__global__ void __launch_bounds__(kAssemblyBlock) write_roots_kernel(LevelLog roots, const int64_t* __restrict__ root_rows,
                                                                     const int64_t* __restrict__ first, TreeColumns columns,
                                                                     Criterion criterion, int width) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * kAssemblyBlock + threadIdx.x;
  if (i >= roots.count) return;
  write_node(columns.from(first[roots.tree_of(i)], width), 0, criterion, width, roots.stats + i * width, root_rows[i]);
}

// A level's nodes (places: theirs; null for the roots) written, and their searched children's
// places (next_places; null at the last level).
__global__ void __launch_bounds__(kAssemblyBlock) assemble_level_kernel(LevelLog level, const NodePlace* __restrict__ places,
                                                                        const int32_t* __restrict__ next_splits,
                                                                        NodePlace* __restrict__ next_places,
                                                                        const int64_t* __restrict__ first, TreeColumns columns,
                                                                        Criterion criterion, int width, BinRanges ranges) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * kAssemblyBlock + threadIdx.x;
  if (i >= level.count) return;
  const NodePlace p = places != nullptr ? places[i] : NodePlace{};
  const LevelSplit s = level.splits[i];
  const uint8_t flags = level.flags[i];
  assemble_node(columns.from(first[level.tree_of(i)], width), p, s, flags, level.stats + i * width, level.left + i * width,
                criterion, width, ranges);
  if (next_places != nullptr) place_children(p, flags, level.at[i], next_splits, next_places);
}

unsigned blocks_for(int64_t count) { return static_cast<unsigned>(std::max<int64_t>(1, ceil_div(count, kAssemblyBlock))); }

}  // namespace

void assemble_trees_on_device(Context& ctx, cuda::Resources& res, const std::vector<LevelLog>& levels,
                              const std::vector<LevelNode>& roots, Criterion criterion, int width, const FeatureBins& bins,
                              Tree* trees, int threads) {
  const int64_t depths = static_cast<int64_t>(levels.size());
  if (depths == 0 || roots.empty()) return;
  GPUML_EXPECT(levels[0].count == static_cast<int64_t>(roots.size()), "tree assembly: the first level is not the roots");
  auto device = [&ctx](int64_t bytes) { return Buffer(ctx, static_cast<std::size_t>(std::max<int64_t>(bytes, 1))); };
  auto upload = [&](const auto& host) {
    Buffer b = device(static_cast<int64_t>(host.size() * sizeof(host[0])));
    res.copy_to_device(b.data(), host.data(), host.size() * sizeof(host[0]), threads);
    return b;
  };

  // I(v), the last level first.
  std::vector<Buffer> splits(static_cast<std::size_t>(depths));
  for (int64_t d = depths - 1; d >= 0; --d) {
    splits[d] = device(levels[d].count * static_cast<int64_t>(sizeof(int32_t)));
    if (levels[d].count == 0) continue;
    subtree_splits_kernel<<<blocks_for(levels[d].count), kAssemblyBlock, 0, res.stream>>>(
        levels[d], d + 1 < depths ? splits[d + 1].as<int32_t>() : nullptr, splits[d].as<int32_t>());
    GPUML_CUDA_CHECK_LAUNCH();
  }

  // The trees' sizes (per tree of the batch) and first nodes in the columns (an exclusive scan;
  // first[trees] is the total).
  const int64_t tree_count = static_cast<int64_t>(roots.back().tree) + 1;
  Buffer sizes_d = device((tree_count + 1) * static_cast<int64_t>(sizeof(int64_t)));
  Buffer first_d = device((tree_count + 1) * static_cast<int64_t>(sizeof(int64_t)));
  GPUML_CUDA_CHECK(cudaMemsetAsync(sizes_d.data(), 0, (tree_count + 1) * sizeof(int64_t), res.stream));
  tree_sizes_kernel<<<blocks_for(levels[0].count), kAssemblyBlock, 0, res.stream>>>(levels[0], splits[0].as<int32_t>(),
                                                                                   sizes_d.as<int64_t>());
  GPUML_CUDA_CHECK_LAUNCH();
  {
    std::size_t bytes = 0;
    GPUML_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(nullptr, bytes, sizes_d.as<int64_t>(), first_d.as<int64_t>(),
                                                   static_cast<int>(tree_count + 1), res.stream));
    Buffer temp = device(static_cast<int64_t>(bytes));
    GPUML_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(temp.data(), bytes, sizes_d.as<int64_t>(), first_d.as<int64_t>(),
                                                   static_cast<int>(tree_count + 1), res.stream));
  }
  std::vector<int64_t> sizes(static_cast<std::size_t>(tree_count + 1));
  res.copy_to_host(sizes.data(), sizes_d.data(), sizes.size() * sizeof(int64_t));
  int64_t total = 0;
  for (int64_t t = 0; t < tree_count; ++t) total += sizes[t];

  // The batch's columns, every tree's nodes from its first.
  Buffer feature = device(total * 4), left = device(total * 4), right = device(total * 4);
  Buffer threshold = device(total * 8), stats = device(total * width * 8), impurity = device(total * 8),
         improvement = device(total * 8), rows = device(total * 8);
  const TreeColumns columns{feature.as<int32_t>(), left.as<int32_t>(),     right.as<int32_t>(),
                            threshold.as<double>(), stats.as<double>(),     impurity.as<double>(),
                            improvement.as<double>(), rows.as<int64_t>()};
  std::vector<int64_t> root_rows(roots.size());
  for (std::size_t i = 0; i < roots.size(); ++i) root_rows[i] = trees[roots[i].tree].rows[0];
  const Buffer root_rows_d = upload(root_rows);
  const Buffer offsets_d = upload(bins.offsets), low_d = upload(bins.low), high_d = upload(bins.high);
  const BinRanges ranges{offsets_d.as<int64_t>(), low_d.as<double>(), high_d.as<double>()};
  write_roots_kernel<<<blocks_for(levels[0].count), kAssemblyBlock, 0, res.stream>>>(
      levels[0], root_rows_d.as<int64_t>(), first_d.as<int64_t>(), columns, criterion, width);
  GPUML_CUDA_CHECK_LAUNCH();
  Buffer places;  // the level's (none for the roots)
  for (int64_t d = 0; d < depths; ++d) {
    const bool last = d + 1 == depths;
    Buffer next_places = last ? Buffer() : device(levels[d + 1].count * static_cast<int64_t>(sizeof(NodePlace)));
    if (levels[d].count > 0) {
      assemble_level_kernel<<<blocks_for(levels[d].count), kAssemblyBlock, 0, res.stream>>>(
          levels[d], d == 0 ? nullptr : places.as<NodePlace>(), last ? nullptr : splits[d + 1].as<int32_t>(),
          last ? nullptr : next_places.as<NodePlace>(), first_d.as<int64_t>(), columns, criterion, width, ranges);
      GPUML_CUDA_CHECK_LAUNCH();
    }
    places = std::move(next_places);
  }

  // The trees' vectors at their sizes (node 0 kept), their fresh pages touched by the host's
  // threads while the device assembles, then each column copied into them.
  std::vector<int64_t> root_sizes(roots.size());
  std::vector<int32_t> root_trees(roots.size());
  for (std::size_t i = 0; i < roots.size(); ++i) {
    root_trees[i] = roots[i].tree;
    root_sizes[i] = sizes[roots[i].tree];
  }
  size_trees(trees, root_trees.data(), static_cast<int64_t>(roots.size()), root_sizes.data(), width, threads);
  auto copy_column = [&](const Buffer& column, auto member) {
    std::vector<cuda::Resources::HostPiece> pieces;
    pieces.reserve(roots.size());
    for (const LevelNode& root : roots) {
      auto& values = trees[root.tree].*member;
      pieces.push_back({values.data(), values.size() * sizeof(values[0])});
    }
    res.copy_to_host(pieces, column.data(), threads);
  };
  copy_column(feature, &Tree::feature);
  copy_column(left, &Tree::left);
  copy_column(right, &Tree::right);
  copy_column(threshold, &Tree::threshold);
  copy_column(stats, &Tree::stats);
  copy_column(impurity, &Tree::impurity);
  copy_column(improvement, &Tree::improvement);
  copy_column(rows, &Tree::rows);
}

}  // namespace gpuml::detail

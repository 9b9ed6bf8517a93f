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

#include "core/parallel.hpp"
#include "cuda/core/kernel_util.cuh"
#include "ensemble/forest_backend.hpp"
#include "ensemble/forest_nodes.hpp"
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

// The written forest (write_forest_on_device) -----------------------------------------------------

// Every tree's root (node 0) as the driver made it, a leaf until its level is assembled.
__global__ void __launch_bounds__(kAssemblyBlock) write_every_root_kernel(int64_t n_trees, const double* __restrict__ root_stats,
                                                                          const double* __restrict__ root_impurity,
                                                                          const int64_t* __restrict__ root_rows,
                                                                          const int64_t* __restrict__ first, TreeColumns columns,
                                                                          int width) {
  const int64_t t = static_cast<int64_t>(blockIdx.x) * kAssemblyBlock + threadIdx.x;
  if (t >= n_trees) return;
  const TreeColumns c = columns.from(first[t], width);
  for (int j = 0; j < width; ++j) c.stats[j] = root_stats[t * width + j];
  c.impurity[0] = root_impurity[t];
  c.rows[0] = root_rows[t];
  write_leaf(c, 0);
}

// The trees' columns as the estimator's node arrays (forest_nodes' fields, in place where they
// share the column): leaves' feature and threshold, and every node's value row and weight.
__global__ void __launch_bounds__(kAssemblyBlock) node_arrays_kernel(int64_t total, TreeColumns c, int width, bool classification,
                                                                     double* __restrict__ value, double* __restrict__ weighted) {
  const int64_t v = static_cast<int64_t>(blockIdx.x) * kAssemblyBlock + threadIdx.x;
  if (v >= total) return;
  if (c.feature[v] < 0) {
    c.feature[v] = kLeafFeature;
    c.threshold[v] = static_cast<double>(kLeafFeature);
  }
  const int k = classification ? width : 1;
  weighted[v] = node_value(c.stats + v * width, width, classification, value + v * k);
}

// Each tree's improvements summed per feature in node order (compute_importances' order): a warp
// per tree, lane l keeping the features l, l + 32, ... of one pass, 32 nodes read at a time.
constexpr int kImportanceWarps = 4;
__global__ void __launch_bounds__(32 * kImportanceWarps) importance_sums_kernel(int64_t n_trees, const int64_t* __restrict__ first,
                                                                                const int32_t* __restrict__ feature,
                                                                                const double* __restrict__ improvement, int64_t d,
                                                                                double* __restrict__ sums) {
  const int64_t t = static_cast<int64_t>(blockIdx.x) * kImportanceWarps + threadIdx.x / 32;
  const int lane = static_cast<int>(threadIdx.x % 32);
  if (t >= n_trees) return;
  const int64_t begin = first[t], end = first[t + 1];
  for (int64_t f0 = 0; f0 < d; f0 += 32) {
    const int64_t own = f0 + lane;
    double acc = 0.0;
    for (int64_t base = begin; base < end; base += 32) {
      const int64_t v = base + lane;
      const int32_t f = v < end ? feature[v] : -1;
      const double g = v < end ? improvement[v] : 0.0;
      for (int j = 0; j < 32; ++j) {
        const int32_t fj = __shfl_sync(0xffffffffu, f, j);
        const double gj = __shfl_sync(0xffffffffu, g, j);
        if (fj >= 0 && fj == own) acc = __dadd_rn(acc, gj);
      }
    }
    if (own < d) sums[t * d + own] = acc;
  }
}

// Level `depth` packed (pack_level_node, tree_assembly.hpp: the host's packer calls it too).
__global__ void __launch_bounds__(kAssemblyBlock) pack_level_kernel(LevelLog level, int64_t depth, const int32_t* __restrict__ rank,
                                                                    const int32_t* __restrict__ split_before,
                                                                    const int32_t* __restrict__ next_split_before,
                                                                    int32_t* __restrict__ next_rank, PackTables tables,
                                                                    BinRanges ranges, int width, bool classification,
                                                                    PackedNode* __restrict__ packed, double* __restrict__ values) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * kAssemblyBlock + threadIdx.x;
  if (i < level.count)
    pack_level_node(level, i, depth, rank, split_before, next_split_before, next_rank, tables, ranges, width, classification,
                    packed, values);
}

// The roots that were not searched: single-leaf trees.
__global__ void __launch_bounds__(kAssemblyBlock) pack_leaf_roots_kernel(int64_t n_trees, const uint8_t* __restrict__ searched,
                                                                         const double* __restrict__ root_stats, PackTables tables,
                                                                         int width, bool classification,
                                                                         PackedNode* __restrict__ packed, double* __restrict__ values) {
  const int64_t t = static_cast<int64_t>(blockIdx.x) * kAssemblyBlock + threadIdx.x;
  if (t >= n_trees || searched[t] != 0) return;
  pack_leaf(packed, tables.node_base[t], tables.leaf_base[t], root_stats + t * width, width, classification, values);
}

__global__ void __launch_bounds__(kAssemblyBlock) split_made_kernel(LevelLog level, int32_t* __restrict__ made) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * kAssemblyBlock + threadIdx.x;
  if (i < level.count) made[i] = (level.flags[i] & kSplitMade) != 0 ? 1 : 0;
}

// The steps both assemblies share -----------------------------------------------------------------

struct Assembly {
  Context& ctx;
  cuda::Resources& res;
  int threads;

  Buffer device(int64_t bytes) const { return Buffer(ctx, static_cast<std::size_t>(std::max<int64_t>(bytes, 1))); }
  template <typename V>
  Buffer upload(const V& host) const {
    Buffer b = device(static_cast<int64_t>(host.size() * sizeof(host[0])));
    res.copy_to_device(b.data(), host.data(), host.size() * sizeof(host[0]), threads);
    return b;
  }

  // I(v) of every level's nodes, the last level first.
  std::vector<Buffer> subtree_splits(const std::vector<LevelLog>& levels) const {
    const int64_t depths = static_cast<int64_t>(levels.size());
    std::vector<Buffer> splits(static_cast<std::size_t>(depths));
    for (int64_t d = depths - 1; d >= 0; --d) {
      splits[d] = device(levels[d].count * static_cast<int64_t>(sizeof(int32_t)));
      if (levels[d].count == 0) continue;
      subtree_splits_kernel<<<blocks_for(levels[d].count), kAssemblyBlock, 0, res.stream>>>(
          levels[d], d + 1 < depths ? splits[d + 1].as<int32_t>() : nullptr, splits[d].as<int32_t>());
      GPUML_CUDA_CHECK_LAUNCH();
    }
    return splits;
  }

  // Every level's nodes written where their places say (the roots' own fields are written).
  void assemble_levels(const std::vector<LevelLog>& levels, const std::vector<Buffer>& splits, const int64_t* first,
                       const TreeColumns& columns, Criterion criterion, int width, const BinRanges& ranges) const {
    const int64_t depths = static_cast<int64_t>(levels.size());
    Buffer places;  // the level's (none for the roots)
    for (int64_t d = 0; d < depths; ++d) {
      const bool last = d + 1 == depths;
      Buffer next_places = last ? Buffer() : device(levels[d + 1].count * static_cast<int64_t>(sizeof(NodePlace)));
      if (levels[d].count > 0) {
        assemble_level_kernel<<<blocks_for(levels[d].count), kAssemblyBlock, 0, res.stream>>>(
            levels[d], d == 0 ? nullptr : places.as<NodePlace>(), last ? nullptr : splits[d + 1].as<int32_t>(),
            last ? nullptr : next_places.as<NodePlace>(), first, columns, criterion, width, ranges);
        GPUML_CUDA_CHECK_LAUNCH();
      }
      places = std::move(next_places);
    }
  }

  // The trees' columns for `total` nodes.
  struct Columns {
    Buffer feature, left, right, threshold, stats, impurity, improvement, rows;
    TreeColumns view() const {
      return TreeColumns{feature.as<int32_t>(),   left.as<int32_t>(),     right.as<int32_t>(),      threshold.as<double>(),
                         stats.as<double>(),      impurity.as<double>(),  improvement.as<double>(), rows.as<int64_t>()};
    }
  };
  Columns columns(int64_t total, int width) const {
    return Columns{device(total * 4), device(total * 4),         device(total * 4), device(total * 8),
                   device(total * width * 8), device(total * 8), device(total * 8), device(total * 8)};
  }

  // level's split_before: a scan of its splits (count + 1, from 0).
  Buffer split_before(const LevelLog& level) const {
    Buffer out = device((level.count + 1) * static_cast<int64_t>(sizeof(int32_t)));
    GPUML_CUDA_CHECK(cudaMemsetAsync(out.data(), 0, sizeof(int32_t), res.stream));
    if (level.count == 0) return out;
    Buffer made = device(level.count * static_cast<int64_t>(sizeof(int32_t)));
    split_made_kernel<<<blocks_for(level.count), kAssemblyBlock, 0, res.stream>>>(level, made.as<int32_t>());
    GPUML_CUDA_CHECK_LAUNCH();
    std::size_t bytes = 0;
    GPUML_CUDA_CHECK(cub::DeviceScan::InclusiveSum(nullptr, bytes, made.as<int32_t>(), out.as<int32_t>() + 1,
                                                   static_cast<int>(level.count), res.stream));
    Buffer temp = device(static_cast<int64_t>(bytes));
    GPUML_CUDA_CHECK(cub::DeviceScan::InclusiveSum(temp.data(), bytes, made.as<int32_t>(), out.as<int32_t>() + 1,
                                                   static_cast<int>(level.count), res.stream));
    return out;
  }
};

}  // namespace

WrittenForestMemory::WrittenForestMemory(int64_t most_nodes, int k_values)
    : feature(Buffer::host(static_cast<std::size_t>(most_nodes) * 4)),
      left(Buffer::host(static_cast<std::size_t>(most_nodes) * 4)),
      right(Buffer::host(static_cast<std::size_t>(most_nodes) * 4)),
      threshold(Buffer::host(static_cast<std::size_t>(most_nodes) * 8)),
      impurity(Buffer::host(static_cast<std::size_t>(most_nodes) * 8)),
      n_samples(Buffer::host(static_cast<std::size_t>(most_nodes) * 8)),
      weighted(Buffer::host(static_cast<std::size_t>(most_nodes) * 8)),
      value(Buffer::host(static_cast<std::size_t>(most_nodes * k_values) * 8)),
      nodes(most_nodes),
      k(k_values) {}

void WrittenForestMemory::touch(int64_t from, int64_t to, int threads) {
  to = std::min(to, nodes);
  auto pages = [&](void* base, int64_t bytes_per_node) {
    touch_pages(base, static_cast<std::size_t>(from * bytes_per_node), static_cast<std::size_t>(to * bytes_per_node), threads);
  };
  for (Buffer* column : {&feature, &left, &right}) pages(column->data(), 4);
  for (Buffer* column : {&threshold, &impurity, &n_samples, &weighted}) pages(column->data(), 8);
  pages(value.data(), 8 * k);
}

void WrittenForestMemory::touch_up_to(int64_t to, int threads) {
  wait();
  touching_ = std::async(std::launch::async, [this, from = touched_, to, threads] { touch(from, to, threads); });
  touched_ = std::max(touched_, to);
}

void WrittenForestMemory::wait() {
  if (touching_.valid()) touching_.get();
}

void assemble_trees_on_device(Context& ctx, cuda::Resources& res, const std::vector<LevelLog>& levels,
                              const std::vector<LevelNode>& roots, Criterion criterion, int width, const FeatureBins& bins,
                              Tree* trees, int threads) {
  const int64_t depths = static_cast<int64_t>(levels.size());
  if (depths == 0 || roots.empty()) return;
  GPUML_EXPECT(levels[0].count == static_cast<int64_t>(roots.size()), "tree assembly: the first level is not the roots");
  const Assembly a{ctx, res, threads};
  const std::vector<Buffer> splits = a.subtree_splits(levels);

  // The trees' sizes (per tree of the batch) and first nodes in the columns (an exclusive scan;
  // first[trees] is the total).
  const int64_t tree_count = static_cast<int64_t>(roots.back().tree) + 1;
  Buffer sizes_d = a.device((tree_count + 1) * static_cast<int64_t>(sizeof(int64_t)));
  Buffer first_d = a.device((tree_count + 1) * static_cast<int64_t>(sizeof(int64_t)));
  GPUML_CUDA_CHECK(cudaMemsetAsync(sizes_d.data(), 0, (tree_count + 1) * sizeof(int64_t), res.stream));
  tree_sizes_kernel<<<blocks_for(levels[0].count), kAssemblyBlock, 0, res.stream>>>(levels[0], splits[0].as<int32_t>(),
                                                                                   sizes_d.as<int64_t>());
  GPUML_CUDA_CHECK_LAUNCH();
  {
    std::size_t bytes = 0;
    GPUML_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(nullptr, bytes, sizes_d.as<int64_t>(), first_d.as<int64_t>(),
                                                   static_cast<int>(tree_count + 1), res.stream));
    Buffer temp = a.device(static_cast<int64_t>(bytes));
    GPUML_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(temp.data(), bytes, sizes_d.as<int64_t>(), first_d.as<int64_t>(),
                                                   static_cast<int>(tree_count + 1), res.stream));
  }
  std::vector<int64_t> sizes(static_cast<std::size_t>(tree_count + 1));
  res.copy_to_host(sizes.data(), sizes_d.data(), sizes.size() * sizeof(int64_t));
  int64_t total = 0;
  for (int64_t t = 0; t < tree_count; ++t) total += sizes[t];

  // The batch's columns, every tree's nodes from its first.
  const Assembly::Columns columns = a.columns(total, width);
  std::vector<int64_t> root_rows(roots.size());
  for (std::size_t i = 0; i < roots.size(); ++i) root_rows[i] = trees[roots[i].tree].rows[0];
  const Buffer root_rows_d = a.upload(root_rows);
  const Buffer offsets_d = a.upload(bins.offsets), low_d = a.upload(bins.low), high_d = a.upload(bins.high);
  const BinRanges ranges{offsets_d.as<int64_t>(), low_d.as<double>(), high_d.as<double>()};
  write_roots_kernel<<<blocks_for(levels[0].count), kAssemblyBlock, 0, res.stream>>>(
      levels[0], root_rows_d.as<int64_t>(), first_d.as<int64_t>(), columns.view(), criterion, width);
  GPUML_CUDA_CHECK_LAUNCH();
  a.assemble_levels(levels, splits, first_d.as<int64_t>(), columns.view(), criterion, width, ranges);

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
  copy_column(columns.feature, &Tree::feature);
  copy_column(columns.left, &Tree::left);
  copy_column(columns.right, &Tree::right);
  copy_column(columns.threshold, &Tree::threshold);
  copy_column(columns.stats, &Tree::stats);
  copy_column(columns.impurity, &Tree::impurity);
  copy_column(columns.improvement, &Tree::improvement);
  copy_column(columns.rows, &Tree::rows);
}

void write_forest_on_device(Context& ctx, cuda::Resources& res, const std::vector<LevelLog>& levels,
                            const std::vector<LevelNode>& roots, const std::vector<int32_t>& level_splits, const Tree* trees,
                            int64_t n_trees, Criterion criterion, int width, bool classification, const FeatureBins& bins,
                            int threads, WrittenForestMemory& memory, WrittenForest& out) {
  const int64_t depths = static_cast<int64_t>(levels.size());
  GPUML_EXPECT(depths == 0 || levels[0].count == static_cast<int64_t>(roots.size()), "written forest: the first level is not the roots");
  const Assembly a{ctx, res, threads};
  const int k = classification ? width : 1;
  const int64_t d = bins.n_features();

  // Per tree and depth: where its nodes and leaves go (forest_tables; first: each tree's first node).
  const ForestTables layout = forest_tables(level_splits, n_trees, depths);
  const std::vector<int64_t>& first = layout.first;
  const int64_t total = layout.total, leaves = layout.leaves;
  std::vector<int32_t> roots_at(static_cast<std::size_t>(n_trees));
  for (int64_t tree = 0; tree < n_trees; ++tree) roots_at[tree] = static_cast<int32_t>(first[tree]);

  // The trees' columns: every root, then the levels, then the node arrays' fields.
  std::vector<double> root_stats(static_cast<std::size_t>(n_trees * width)), root_impurity(static_cast<std::size_t>(n_trees));
  std::vector<int64_t> root_rows(static_cast<std::size_t>(n_trees));
  std::vector<uint8_t> searched(static_cast<std::size_t>(n_trees), 0);
  for (int64_t t = 0; t < n_trees; ++t) {
    std::copy(trees[t].stats.begin(), trees[t].stats.begin() + width, root_stats.begin() + t * width);
    root_impurity[t] = trees[t].impurity[0];
    root_rows[t] = trees[t].rows[0];
  }
  for (const LevelNode& root : roots) searched[root.tree] = 1;
  const Buffer first_d = a.upload(first), root_stats_d = a.upload(root_stats), root_impurity_d = a.upload(root_impurity),
               root_rows_d = a.upload(root_rows);
  const Assembly::Columns columns = a.columns(total, width);
  write_every_root_kernel<<<blocks_for(n_trees), kAssemblyBlock, 0, res.stream>>>(
      n_trees, root_stats_d.as<double>(), root_impurity_d.as<double>(), root_rows_d.as<int64_t>(), first_d.as<int64_t>(),
      columns.view(), width);
  GPUML_CUDA_CHECK_LAUNCH();
  const Buffer offsets_d = a.upload(bins.offsets), low_d = a.upload(bins.low), high_d = a.upload(bins.high);
  const BinRanges ranges{offsets_d.as<int64_t>(), low_d.as<double>(), high_d.as<double>()};
  if (depths > 0) a.assemble_levels(levels, a.subtree_splits(levels), first_d.as<int64_t>(), columns.view(), criterion, width, ranges);
  Buffer value = a.device(total * k * 8), weighted = a.device(total * 8);
  node_arrays_kernel<<<blocks_for(total), kAssemblyBlock, 0, res.stream>>>(total, columns.view(), width, classification,
                                                                           value.as<double>(), weighted.as<double>());
  GPUML_CUDA_CHECK_LAUNCH();
  Buffer sums = a.device(n_trees * d * 8);
  importance_sums_kernel<<<static_cast<unsigned>(ceil_div(n_trees, kImportanceWarps)), 32 * kImportanceWarps, 0, res.stream>>>(
      n_trees, first_d.as<int64_t>(), columns.feature.as<int32_t>(), columns.improvement.as<double>(), d, sums.as<double>());
  GPUML_CUDA_CHECK_LAUNCH();

  // The packed forest, level by level.
  const Buffer node_base_d = a.upload(layout.node_base), leaf_base_d = a.upload(layout.leaf_base),
               split_first_d = a.upload(layout.split_first);
  const PackTables tables{node_base_d.as<int64_t>(), leaf_base_d.as<int64_t>(), split_first_d.as<int32_t>(), n_trees};
  auto staged = std::make_shared<StagedForest>();
  staged->nodes = a.device(total * static_cast<int64_t>(sizeof(PackedNode)));
  staged->values = a.device(leaves * k * 8);
  PackedNode* packed_d = staged->nodes.as<PackedNode>();
  double* values_d = staged->values.as<double>();
  Buffer rank, split_before = depths > 0 ? a.split_before(levels[0]) : Buffer();
  for (int64_t e = 0; e < depths; ++e) {
    const bool last = e + 1 == depths;
    Buffer next_split_before = last ? Buffer() : a.split_before(levels[e + 1]);
    Buffer next_rank = last ? Buffer() : a.device(levels[e + 1].count * static_cast<int64_t>(sizeof(int32_t)));
    if (levels[e].count > 0) {
      pack_level_kernel<<<blocks_for(levels[e].count), kAssemblyBlock, 0, res.stream>>>(
          levels[e], e, e == 0 ? nullptr : rank.as<int32_t>(), split_before.as<int32_t>(),
          last ? nullptr : next_split_before.as<int32_t>(), last ? nullptr : next_rank.as<int32_t>(), tables, ranges, width,
          classification, packed_d, values_d);
      GPUML_CUDA_CHECK_LAUNCH();
    }
    rank = std::move(next_rank);
    split_before = std::move(next_split_before);
  }
  const Buffer searched_d = a.upload(searched);
  pack_leaf_roots_kernel<<<blocks_for(n_trees), kAssemblyBlock, 0, res.stream>>>(
      n_trees, searched_d.as<uint8_t>(), root_stats_d.as<double>(), tables, width, classification, packed_d, values_d);
  GPUML_CUDA_CHECK_LAUNCH();
  staged->roots = a.upload(roots_at);
  staged->n_trees = n_trees;
  staged->k = k;

  // Everything back to the host (into `memory`): the node arrays, the packed forest, the
  // importance sums.
  memory.wait();
  GPUML_EXPECT(memory.k == k && memory.nodes >= total, "written forest: more nodes than the host memory was sized for");
  ForestNodes& nodes = out.nodes;
  nodes.offsets = HostArray(DType::int64, n_trees + 1);
  std::copy(first.begin(), first.end(), nodes.offsets.as<int64_t>());
  auto back = [&](Buffer& host, const Buffer& column, DType dtype, int64_t columns_of_it) {
    const ArraySpec spec = columns_of_it == 0 ? ArraySpec{dtype, 1, {total, 0}} : ArraySpec{dtype, 2, {total, columns_of_it}};
    const std::size_t bytes = static_cast<std::size_t>(total * std::max<int64_t>(columns_of_it, 1)) * dtype_size(dtype);
    res.copy_to_host(host.data(), column.data(), bytes, threads);
    return HostArray(spec, std::move(host));
  };
  nodes.feature = back(memory.feature, columns.feature, DType::int32, 0);
  nodes.left = back(memory.left, columns.left, DType::int32, 0);
  nodes.right = back(memory.right, columns.right, DType::int32, 0);
  nodes.threshold = back(memory.threshold, columns.threshold, DType::float64, 0);
  nodes.impurity = back(memory.impurity, columns.impurity, DType::float64, 0);
  nodes.n_samples = back(memory.n_samples, columns.rows, DType::int64, 0);
  nodes.weighted = back(memory.weighted, weighted, DType::float64, 0);
  nodes.value = back(memory.value, value, DType::float64, k);
  out.importance_sums.resize(static_cast<std::size_t>(n_trees * d));
  res.copy_to_host(out.importance_sums.data(), sums.data(), out.importance_sums.size() * sizeof(double), threads);
  out.staged = std::move(staged);
}

}  // namespace gpuml::detail

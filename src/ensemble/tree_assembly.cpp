// The host's loops of the tree assembly (tree_assembly.hpp), and the default
// LevelBackend::grow_trees: grow_levels' records kept on the host and assembled there.
#include "ensemble/tree_assembly.hpp"

#include <algorithm>
#include <vector>

#include "core/parallel.hpp"
#include "gpuml/core/error.hpp"

namespace gpuml::detail {

void size_trees(Tree* trees, const int32_t* root_trees, int64_t count, const int64_t* sizes, int width, int threads) {
#pragma omp parallel for num_threads(threads) schedule(dynamic)
  for (int64_t i = 0; i < count; ++i) {
    Tree& tree = trees[root_trees[i]];
    const std::size_t nodes = static_cast<std::size_t>(sizes[i]);
    tree.feature.resize(nodes);
    tree.left.resize(nodes);
    tree.right.resize(nodes);
    tree.threshold.resize(nodes);
    tree.stats.resize(nodes * static_cast<std::size_t>(width));
    tree.impurity.resize(nodes);
    tree.improvement.resize(nodes);
    tree.rows.resize(nodes);
  }
}

void assemble_trees_on_host(const std::vector<LevelLog>& levels, Criterion criterion, int width, const FeatureBins& bins,
                            Tree* trees, int threads) {
  const int64_t depths = static_cast<int64_t>(levels.size());
  if (depths == 0 || levels[0].count == 0) return;
  // I(v) of every searched node, the last level first.
  std::vector<std::vector<int32_t>> splits(static_cast<std::size_t>(depths));
  for (int64_t depth = depths - 1; depth >= 0; --depth) {
    const LevelLog& level = levels[depth];
    const int32_t* next = depth + 1 < depths ? splits[depth + 1].data() : nullptr;
    std::vector<int32_t>& own = splits[depth];
    own.resize(static_cast<std::size_t>(level.count));
#pragma omp parallel for num_threads(threads_for(threads, level.count * 8)) schedule(static)
    for (int64_t i = 0; i < level.count; ++i) own[i] = subtree_splits(level.flags[i], level.at[i], next);
  }
  // Each root's tree at its size (2 I + 1 nodes), and its columns.
  const LevelLog& roots = levels[0];
  std::vector<int64_t> sizes(static_cast<std::size_t>(roots.count));
  std::vector<int32_t> root_trees(static_cast<std::size_t>(roots.count));
  for (int64_t i = 0; i < roots.count; ++i) {
    sizes[i] = 1 + 2 * static_cast<int64_t>(splits[0][i]);
    root_trees[i] = roots.tree_of(i);
  }
  size_trees(trees, root_trees.data(), roots.count, sizes.data(), width, threads);
  std::vector<TreeColumns> columns(static_cast<std::size_t>(root_trees.back()) + 1);
  for (int64_t i = 0; i < roots.count; ++i) {
    Tree& tree = trees[root_trees[i]];
    columns[root_trees[i]] = TreeColumns{tree.feature.data(),   tree.left.data(),     tree.right.data(),
                                               tree.threshold.data(), tree.stats.data(),    tree.impurity.data(),
                                               tree.improvement.data(), tree.rows.data()};
  }
  // The places, level by level from the roots (node 0, children from id 1), and every node's fields.
  const BinRanges ranges{bins.offsets.data(), bins.low.data(), bins.high.data()};
  std::vector<NodePlace> places(static_cast<std::size_t>(roots.count)), next;
  for (int64_t depth = 0; depth < depths; ++depth) {
    const LevelLog& level = levels[depth];
    const bool last = depth + 1 == depths;
    next.resize(last ? 0 : static_cast<std::size_t>(levels[depth + 1].count));
    const int32_t* next_splits = last ? nullptr : splits[depth + 1].data();
#pragma omp parallel for num_threads(threads_for(threads, level.count * 8)) schedule(static)
    for (int64_t i = 0; i < level.count; ++i) {
      const NodePlace& p = places[i];
      assemble_node(columns[level.tree_of(i)], p, level.splits[i], level.flags[i], level.stats + i * width,
                    level.left + i * width, criterion, width, ranges);
      if (!last) place_children(p, level.flags[i], level.at[i], next_splits, next.data());
    }
    places.swap(next);
  }
}

void grow_trees_by_levels(LevelBackend& backend, const std::vector<LevelNode>& roots, const std::vector<double>& root_stats,
                          const LevelRules& rules, const LevelGrowth& growth, const FeatureBins& bins, Tree* trees,
                          const LevelTally& tally, int threads) {
  const int k = growth.width;
  // What the assembly reads of each level, kept until the last one (the nodes themselves only
  // until the next level is made from them: two lists, reused).
  struct HostLevel {
    std::vector<int32_t> tree;
    std::vector<double> stats;
    std::vector<LevelSplit> splits;
    std::vector<double> left;
    std::vector<uint8_t> flags;
    std::vector<int32_t> at;
  };
  std::vector<HostLevel> levels;
  std::vector<LevelNode> nodes = roots, next;  // the level the next records are of, and the one after
  std::vector<double> stats = root_stats;
  backend.grow_levels(roots, root_stats, rules, growth, [&](const LevelRecords& r) {
    const int64_t m = static_cast<int64_t>(nodes.size());
    GPUML_EXPECT(r.count == m, "levelwise builder: the backend's level is not the driver's");
    HostLevel& level = levels.emplace_back();
    level.tree.resize(static_cast<std::size_t>(m));
    for (int64_t i = 0; i < m; ++i) level.tree[i] = nodes[i].tree;
    level.stats = std::move(stats);
    level.splits.assign(r.splits, r.splits + m);
    level.left.assign(r.left_stats, r.left_stats + m * k);
    level.flags.assign(r.flags, r.flags + m);
    if (tally) tally(r.depth, nodes.data(), level.flags.data(), m);
    stats = {};
    next_level(nodes, level.stats, level.splits.data(), level.left.data(), level.flags.data(), k, threads, level.at, next,
               stats);
    nodes.swap(next);
  });
  GPUML_EXPECT(nodes.empty(), "levelwise builder: the backend stopped before the last level");
  std::vector<LevelLog> logs(levels.size());
  for (std::size_t d = 0; d < levels.size(); ++d) {
    const HostLevel& h = levels[d];
    logs[d] = LevelLog{static_cast<int64_t>(h.tree.size()), h.tree.data(), 1, h.stats.data(), h.splits.data(),
                       h.left.data(), h.flags.data(), h.at.data()};
  }
  assemble_trees_on_host(logs, rules.criterion, k, bins, trees, threads);
}

}  // namespace gpuml::detail

// The host's loops of the tree assembly (tree_assembly.hpp), and the default
// LevelBackend::grow_trees: grow_levels' records kept on the host and assembled there.
#include "ensemble/tree_assembly.hpp"

#include <algorithm>
#include <climits>
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

ForestTables forest_tables(const std::vector<int32_t>& level_splits, int64_t n_trees, int64_t depths) {
  GPUML_EXPECT(static_cast<int64_t>(level_splits.size()) == depths * n_trees,
               "written forest: the split counts are not per level and tree");
  ForestTables t;
  t.n_trees = n_trees;
  const std::size_t cells = static_cast<std::size_t>((depths + 1) * n_trees);
  t.node_base.resize(cells);
  t.leaf_base.resize(cells);
  t.split_first.assign(cells, 0);
  t.first.resize(static_cast<std::size_t>(n_trees + 1));
  int64_t next_node = 0, next_leaf = 0;
  for (int64_t tree = 0; tree < n_trees; ++tree) {
    t.first[tree] = next_node;
    int64_t nodes = 1;  // of this depth: the root, then two a split of the depth above
    for (int64_t e = 0; e <= depths; ++e) {
      const int64_t splits = e < depths ? level_splits[e * n_trees + tree] : 0;
      t.node_base[e * n_trees + tree] = next_node;
      t.leaf_base[e * n_trees + tree] = next_leaf;
      next_node += nodes;
      next_leaf += nodes - splits;
      nodes = 2 * splits;
    }
  }
  t.first[n_trees] = next_node;
  t.total = next_node;
  t.leaves = next_leaf;
  GPUML_EXPECT(t.total < INT32_MAX, "the forest has too many nodes to pack (2^31)");
  for (int64_t e = 0; e < depths; ++e)
    for (int64_t tree = 1; tree < n_trees; ++tree)
      t.split_first[e * n_trees + tree] = t.split_first[e * n_trees + tree - 1] + level_splits[e * n_trees + tree - 1];
  return t;
}

std::vector<int32_t> splits_per_level(const std::vector<LevelLog>& levels, int64_t n_trees) {
  std::vector<int32_t> splits(levels.size() * static_cast<std::size_t>(n_trees), 0);
  for (std::size_t e = 0; e < levels.size(); ++e)
    for (int64_t i = 0; i < levels[e].count; ++i)
      if ((levels[e].flags[i] & kSplitMade) != 0) ++splits[e * n_trees + levels[e].tree_of(i)];
  return splits;
}

namespace {
// The level's splits before each node (count + 1: the exclusive scan of its split flags, then the total).
std::vector<int32_t> splits_before(const LevelLog& level) {
  std::vector<int32_t> out(static_cast<std::size_t>(level.count + 1), 0);
  for (int64_t i = 0; i < level.count; ++i) out[i + 1] = out[i] + ((level.flags[i] & kSplitMade) != 0 ? 1 : 0);
  return out;
}
}  // namespace

PackedForest pack_levels_on_host(const std::vector<LevelLog>& levels, const ForestTables& tables, const uint8_t* searched,
                                 const double* root_stats, const FeatureBins& bins, int width, bool classification,
                                 int threads) {
  const int k = classification ? width : 1;
  const int64_t n_trees = tables.n_trees, depths = static_cast<int64_t>(levels.size());
  PackedForest out;
  out.k = k;
  out.n_features = bins.n_features();
  out.nodes.resize(static_cast<std::size_t>(tables.total));
  out.values.resize(static_cast<std::size_t>(tables.leaves * k));
  out.roots.resize(static_cast<std::size_t>(n_trees));
  for (int64_t t = 0; t < n_trees; ++t) out.roots[t] = static_cast<int32_t>(tables.first[t]);
  const BinRanges ranges{bins.offsets.data(), bins.low.data(), bins.high.data()};
  const PackTables view = tables.view();
  std::vector<int32_t> rank, next_rank, before = depths > 0 ? splits_before(levels[0]) : std::vector<int32_t>(), next_before;
  for (int64_t e = 0; e < depths; ++e) {
    const LevelLog& level = levels[e];
    const bool last = e + 1 == depths;
    if (!last) {
      next_before = splits_before(levels[e + 1]);
      next_rank.assign(static_cast<std::size_t>(levels[e + 1].count), 0);
    }
#pragma omp parallel for num_threads(threads_for(threads, level.count * 8)) schedule(static)
    for (int64_t i = 0; i < level.count; ++i)
      pack_level_node(level, i, e, e == 0 ? nullptr : rank.data(), before.data(), last ? nullptr : next_before.data(),
                      last ? nullptr : next_rank.data(), view, ranges, width, classification, out.nodes.data(),
                      out.values.data());
    rank.swap(next_rank);
    before.swap(next_before);
  }
  for (int64_t t = 0; t < n_trees; ++t)
    if (searched[t] == 0)
      pack_leaf(out.nodes.data(), view.node_base[t], view.leaf_base[t], root_stats + t * width, width, classification,
                out.values.data());
  return out;
}

HostLevels record_levels(LevelBackend& backend, const std::vector<LevelNode>& roots, const std::vector<double>& root_stats,
                         const LevelRules& rules, const LevelGrowth& growth, const LevelTally& tally, int threads) {
  const int k = growth.width;
  HostLevels recorded;
  // The nodes themselves are kept only until the next level is made from them: two lists, reused.
  std::vector<LevelNode> nodes = roots, next;  // the level the next records are of, and the one after
  std::vector<double> stats = root_stats;
  backend.grow_levels(roots, root_stats, rules, growth, [&](const LevelRecords& r) {
    const int64_t m = static_cast<int64_t>(nodes.size());
    GPUML_EXPECT(r.count == m, "levelwise builder: the backend's level is not the driver's");
    HostLevels::Level& level = recorded.levels.emplace_back();
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
  return recorded;
}

std::vector<LevelLog> HostLevels::logs() const {
  std::vector<LevelLog> out(levels.size());
  for (std::size_t d = 0; d < levels.size(); ++d) {
    const Level& h = levels[d];
    out[d] = LevelLog{static_cast<int64_t>(h.tree.size()), h.tree.data(), 1, h.stats.data(), h.splits.data(),
                      h.left.data(), h.flags.data(), h.at.data()};
  }
  return out;
}

void grow_trees_by_levels(LevelBackend& backend, const std::vector<LevelNode>& roots, const std::vector<double>& root_stats,
                          const LevelRules& rules, const LevelGrowth& growth, const FeatureBins& bins, Tree* trees,
                          const LevelTally& tally, int threads) {
  const HostLevels recorded = record_levels(backend, roots, root_stats, rules, growth, tally, threads);
  assemble_trees_on_host(recorded.logs(), rules.criterion, growth.width, bins, trees, threads);
}

}  // namespace gpuml::detail

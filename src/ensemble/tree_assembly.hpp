#pragma once
// The trees of depth-first level growth made from the levels' records (levelwise.hpp), in
// grow_tree's node order: a split node's children take the next two ids when it splits, and the
// left subtree is grown before the right. With I(v), the split nodes in v's subtree (v included),
// counted from the last level up, each node's place follows from its parent's: the root is node 0
// and its children take ids 1 and 2; a node whose children take ids c and c + 1 passes c + 2 on to
// its left child (whose own children take it) and c + 2 + 2 I(left) to its right child. Each
// level's nodes then write their fields where their places say, independently of each other.
// Plain inline functions for the host's loops and the CUDA backend's kernels alike, so both make
// the same arrays, bit for bit; tree_assembly.cpp has the host's loops, cuda/ensemble/
// tree_assembly.cu the kernels.
#include <cmath>
#include <cstddef>
#include <cstdint>

#include <vector>

#include "criteria.hpp"
#include "forest_layout.hpp"
#include "forest_nodes.hpp"
#include "level_growth.hpp"
#include "levelwise.hpp"

namespace gpuml::detail {

// scikit-learn's threshold between neighbouring values a < b: a / 2 + b / 2, or a when that
// rounds to b (or overflows).
GPUML_HOST_DEVICE inline double cut_between(double a, double b) {
  const double t = add_rn(mul_rn(a, 0.5), mul_rn(b, 0.5));  // halving is exact: a / 2 + b / 2
#if defined(__CUDA_ARCH__)
  const bool finite = isfinite(t);
#else
  const bool finite = std::isfinite(t);
#endif
  return t == b || !finite ? a : t;
}

// FeatureBins' per-bin value ranges, wherever they are kept: the thresholds of the splits.
struct BinRanges {
  const int64_t* offsets = nullptr;  // d + 1: feature j's bins start at offsets[j] + j
  const double* low = nullptr;
  const double* high = nullptr;
};

// The threshold of a split between bins `bin` and `next_bin` of `feature` (set_split's).
GPUML_HOST_DEVICE inline double split_threshold(const BinRanges& r, int32_t feature, int32_t bin, int32_t next_bin) {
  const int64_t first = r.offsets[feature] + feature;
  return cut_between(r.high[first + bin], r.low[first + next_bin]);
}

// One level's records as the assembly reads them, in host or device memory alike.
struct LevelLog {
  int64_t count = 0;
  const int32_t* tree = nullptr;       // node i's tree in the batch: tree[i * tree_stride]
  int64_t tree_stride = 1;             // (a LevelNode array's .tree fields: kLevelNodeInts)
  const double* stats = nullptr;       // count x width: each node's statistics
  const LevelSplit* splits = nullptr;
  const double* left = nullptr;        // count x width: the left side's statistics
  const uint8_t* flags = nullptr;      // level_flags'
  const int32_t* at = nullptr;         // count + 1: node i's searched children are next level's [at[i], at[i + 1])

  GPUML_HOST_DEVICE int32_t tree_of(int64_t i) const { return tree[i * tree_stride]; }
};
// A LevelNode's size in int32s: the stride of an array of them read as their trees.
constexpr int64_t kLevelNodeInts = sizeof(LevelNode) / sizeof(int32_t);
static_assert(sizeof(LevelNode) % sizeof(int32_t) == 0 && offsetof(LevelNode, tree) == 0, "LevelNode::tree is read by stride");

// I(v) of a node with these flags, from its searched children's (next: the next level's counts).
GPUML_HOST_DEVICE inline int32_t subtree_splits(uint8_t flags, int32_t at, const int32_t* next) {
  if ((flags & kSplitMade) == 0) return 0;
  int32_t count = 1, j = at;
  if ((flags & kLeftSearched) != 0) count += next[j++];
  if ((flags & kRightSearched) != 0) count += next[j];
  return count;
}

// Where a node goes in its tree: its id, and the id its first child takes if it splits (grow_tree's
// counter when the node is taken from the stack).
struct NodePlace {
  int32_t id = 0;
  int32_t first_child = 1;
};

// The places of a split node's searched children (next level's [at, ...)), from its own and the
// left child's I (next_splits: the next level's counts).
GPUML_HOST_DEVICE inline void place_children(const NodePlace& p, uint8_t flags, int32_t at, const int32_t* next_splits,
                                             NodePlace* next_places) {
  if ((flags & kSplitMade) == 0) return;
  int32_t j = at, left_splits = 0;
  if ((flags & kLeftSearched) != 0) {
    left_splits = next_splits[j];
    next_places[j++] = NodePlace{p.first_child, p.first_child + 2};
  }
  if ((flags & kRightSearched) != 0) next_places[j] = NodePlace{p.first_child + 1, p.first_child + 2 + 2 * left_splits};
}

// One tree's node arrays (Tree's, as raw columns; node ids index them).
struct TreeColumns {
  int32_t* feature = nullptr;
  int32_t* left = nullptr;
  int32_t* right = nullptr;
  double* threshold = nullptr;
  double* stats = nullptr;  // nodes x width
  double* impurity = nullptr;
  double* improvement = nullptr;
  int64_t* rows = nullptr;

  // The columns of the tree whose node 0 is at `first` of these.
  GPUML_HOST_DEVICE TreeColumns from(int64_t first, int width) const {
    return TreeColumns{feature + first,  left + first,        right + first,       threshold + first,
                       stats + first * width, impurity + first, improvement + first, rows + first};
  }
};

// Node v's own statistics, impurity and rows (new_node's).
GPUML_HOST_DEVICE inline void write_node(const TreeColumns& c, int32_t v, Criterion criterion, int width, const double* stats,
                                         int64_t rows) {
  for (int j = 0; j < width; ++j) c.stats[static_cast<int64_t>(v) * width + j] = stats[j];
  c.impurity[v] = stats_impurity(criterion, stats, width);
  c.rows[v] = rows;
}

// Node v as a leaf (new_node's fields before any split).
GPUML_HOST_DEVICE inline void write_leaf(const TreeColumns& c, int32_t v) {
  c.feature[v] = -1;
  c.left[v] = -1;
  c.right[v] = -1;
  c.threshold[v] = 0.0;
  c.improvement[v] = 0.0;
}

// A searched node at place p (its own statistics `stats`, written by its parent): its split, or a
// leaf; when it splits, its children's statistics, impurity and rows (the right side's statistics
// are stats - left, as the host's trees take them), and those of them not searched as leaves.
GPUML_HOST_DEVICE inline void assemble_node(const TreeColumns& c, const NodePlace& p, const LevelSplit& s, uint8_t flags,
                                            const double* stats, const double* left, Criterion criterion, int width,
                                            const BinRanges& ranges) {
  if ((flags & kSplitMade) == 0) {
    write_leaf(c, p.id);
    return;
  }
  const int32_t l = p.first_child, r = p.first_child + 1;
  c.feature[p.id] = s.feature;
  c.threshold[p.id] = split_threshold(ranges, s.feature, s.bin, s.next_bin);
  c.left[p.id] = l;
  c.right[p.id] = r;
  c.improvement[p.id] = s.improvement;
  double right[kMaxLevelWidth];
  for (int j = 0; j < width; ++j) right[j] = sub_rn(stats[j], left[j]);
  write_node(c, l, criterion, width, left, s.left_rows);
  write_node(c, r, criterion, width, right, s.right_rows);
  if ((flags & kLeftSearched) == 0) write_leaf(c, l);
  if ((flags & kRightSearched) == 0) write_leaf(c, r);
}

// Root i's tree (trees[root_trees[i]]) resized to sizes[i] nodes, node 0 kept (the new ones zero
// until assembled), the trees over `threads`: their fresh pages are touched side by side.
void size_trees(Tree* trees, const int32_t* root_trees, int64_t count, const int64_t* sizes, int width, int threads);

// The trees of the roots (levels[0], in tree order; root i's tree holds it as node 0, with its statistics,
// impurity and rows) from the levels' logs (levels[0]: the roots'), in grow_tree's order: each
// such tree's arrays are resized to its nodes and filled. The host's loops over `threads`.
// (GPUML_API: for the tests.)
GPUML_API void assemble_trees_on_host(const std::vector<LevelLog>& levels, Criterion criterion, int width,
                                      const FeatureBins& bins, Tree* trees, int threads);

// grow_levels' records kept on the host (grow_trees_by_levels'): per level, each node's tree,
// statistics, split, left statistics, flags and where its searched children are in the next level.
struct HostLevels {
  struct Level {
    std::vector<int32_t> tree;
    std::vector<double> stats;
    std::vector<LevelSplit> splits;
    std::vector<double> left;
    std::vector<uint8_t> flags;
    std::vector<int32_t> at;
  };
  std::vector<Level> levels;
  GPUML_API std::vector<LevelLog> logs() const;  // (GPUML_API: for the tests)
};
// backend.grow_levels from roots (their statistics: root_stats), each level's records kept as
// above (their nodes and statistics made from their parents' as grow_levels_by_search makes them);
// tally, when set, gets each level's nodes and flags.
GPUML_API HostLevels record_levels(LevelBackend& backend, const std::vector<LevelNode>& roots,
                                   const std::vector<double>& root_stats, const LevelRules& rules, const LevelGrowth& growth,
                                   const LevelTally& tally, int threads);

// ---- The packed forest written level by level (pack_forest's layout, from the levels) --------
// Each tree's nodes of depth e + 1 are the children of its splits of depth e, 2 a split, in the
// level's order; a tree's nodes of a depth are packed together, in that order (breadth first, as
// pack_forest packs grow_tree's trees), trees one after another. With each tree's splits per level
// known, every node's packed index follows from its rank among its tree's nodes of its depth, and
// every leaf's value row from its rank less the splits before it.

// Per tree and depth (depth-major, (depths + 1) x n_trees): where the tree's nodes of that depth
// start in the packed nodes, where its leaves of that depth start in the value rows, and the
// level's splits before the tree's. Pointers into host or device memory alike.
struct PackTables {
  const int64_t* node_base = nullptr;
  const int64_t* leaf_base = nullptr;
  const int32_t* split_first = nullptr;
  int64_t n_trees = 0;
};

// The tables on the host, from level_splits (depth-major, depths x n_trees: each tree's splits per
// level); first: each tree's first node (n_trees + 1), also the node arrays' offsets.
struct ForestTables {
  std::vector<int64_t> node_base, leaf_base, first;
  std::vector<int32_t> split_first;
  int64_t n_trees = 0, total = 0, leaves = 0;  // nodes and leaves of the forest
  PackTables view() const { return PackTables{node_base.data(), leaf_base.data(), split_first.data(), n_trees}; }
};
GPUML_API ForestTables forest_tables(const std::vector<int32_t>& level_splits, int64_t n_trees, int64_t depths);

// A packed leaf (value row `leaf`) at `at`, its values from its statistics.
GPUML_HOST_DEVICE inline void pack_leaf(PackedNode* packed, int64_t at, int64_t leaf, const double* stats, int width,
                                        bool classification, double* values) {
  packed[at] = PackedNode{0.0, -1, static_cast<int32_t>(leaf)};
  node_value(stats, width, classification, values + leaf * (classification ? width : 1));
}

// Node i of level `depth` packed: at breadth-first rank rank[i] among its tree's nodes of that depth
// (rank null: the roots, rank 0) with split_before[i] splits before it in the level; when it
// splits, its children that are not searched (leaves) too, and its searched children's ranks go to
// next_rank. next_split_before: the next level's split_before (null after the last level).
GPUML_HOST_DEVICE inline void pack_level_node(const LevelLog& level, int64_t i, int64_t depth, const int32_t* rank,
                                              const int32_t* split_before, const int32_t* next_split_before,
                                              int32_t* next_rank, const PackTables& tables, const BinRanges& ranges, int width,
                                              bool classification, PackedNode* packed, double* values) {
  const int32_t t = level.tree_of(i);
  const int64_t here = depth * tables.n_trees + t, below = here + tables.n_trees;
  const int64_t q = rank != nullptr ? rank[i] : 0;
  const int64_t r = split_before[i] - tables.split_first[here];  // the tree's splits of this depth before node i
  const int64_t at = tables.node_base[here] + q;
  const uint8_t flags = level.flags[i];
  const double* stats = level.stats + i * width;
  if ((flags & kSplitMade) == 0) {
    pack_leaf(packed, at, tables.leaf_base[here] + q - r, stats, width, classification, values);
    return;
  }
  const LevelSplit s = level.splits[i];
  const int64_t child = tables.node_base[below] + 2 * r;
  packed[at] = PackedNode{split_threshold(ranges, s.feature, s.bin, s.next_bin), s.feature, static_cast<int32_t>(child)};
  const double* left = level.left + i * width;
  double right[kMaxLevelWidth];
  for (int j = 0; j < width; ++j) right[j] = sub_rn(stats[j], left[j]);
  int32_t j = level.at[i];  // the next searched child's place in the next level
  for (int side = 0; side < 2; ++side) {
    const int64_t qc = 2 * r + side;
    if ((flags & (side == 0 ? kLeftSearched : kRightSearched)) != 0) {
      next_rank[j++] = static_cast<int32_t>(qc);
      continue;
    }
    const int64_t splits_before = next_split_before != nullptr ? next_split_before[j] - tables.split_first[below] : 0;
    pack_leaf(packed, child + side, tables.leaf_base[below] + qc - splits_before, side == 0 ? left : right, width,
              classification, values);
  }
}

// The packed forest of n_trees trees from their levels (levels[0]: the searched roots) on the
// host's threads, as write_forest_on_device writes it: a tree whose root was not searched
// (searched[t] == 0) is one leaf of root_stats' row t (n_trees x width). The CPU's reference for
// the device's packing (the packing formulas run in CI through it).
GPUML_API PackedForest pack_levels_on_host(const std::vector<LevelLog>& levels, const ForestTables& tables,
                                           const uint8_t* searched, const double* root_stats, const FeatureBins& bins,
                                           int width, bool classification, int threads);

// Each tree's splits per level (depth-major, levels x n_trees) from the levels' flags.
GPUML_API std::vector<int32_t> splits_per_level(const std::vector<LevelLog>& levels, int64_t n_trees);

}  // namespace gpuml::detail

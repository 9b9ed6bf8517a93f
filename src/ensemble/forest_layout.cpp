// Packing a fitted forest for prediction (forest_layout.hpp).
#include "ensemble/forest_layout.hpp"

#include <algorithm>
#include <climits>
#include <string>
#include <utility>
#include <vector>

#include "gpuml/core/error.hpp"

namespace gpuml::detail {
namespace {

struct LevelOrderScratch {
  std::vector<int32_t> depth, position;
  std::vector<int64_t> at_depth, leaf_at_depth;
};

// Tree t packed level by level in three forward passes over its arrays, when its node ids allow
// it: every split's children are ids c and c + 1 with c above the split's own id (grow_tree's
// order, best-first's, and a pruned tree's: children are numbered together when their parent
// splits), and every node is reached once. Each depth's nodes then go in id order, a split's two
// children next to each other, and the leaves take their value rows in that order: for
// grow_tree's order (each depth's ids left to right) the very layout of the breadth-first walk,
// whose queue read the node arrays in a scattered order (~5 cache misses a node at full depth).
// False (nothing written) when the ids do not allow it: the caller walks the tree breadth first.
bool pack_in_level_order(const ForestArrays& a, int64_t t, int64_t first_leaf, PackedForest& packed,
                         LevelOrderScratch& scratch) {
  const int64_t first = a.offsets[t], count = a.offsets[t + 1] - first;
  if (count <= 0) return false;
  const int32_t* feature = a.feature + first;
  const int32_t* left = a.left + first;
  const int32_t* right = a.right + first;
  std::vector<int32_t>& depth = scratch.depth;
  depth.assign(static_cast<std::size_t>(count), -1);
  depth[0] = 0;
  int32_t deepest = 0;
  for (int64_t v = 0; v < count; ++v) {
    if (depth[v] < 0) return false;  // not reached from the root
    if (feature[v] < 0) continue;
    const int64_t c = left[v];
    if (c <= v || c + 1 >= count || right[v] != c + 1 || depth[c] >= 0 || depth[c + 1] >= 0) return false;
    depth[c] = depth[c + 1] = depth[v] + 1;
    deepest = std::max(deepest, depth[v] + 1);
  }
  // Where each depth starts in the tree's packed range, then each node's place.
  // Where each depth's nodes and leaves start (the tree's packed range, its value rows), then each
  // node's place.
  std::vector<int64_t>& at_depth = scratch.at_depth;
  std::vector<int64_t>& leaf_at_depth = scratch.leaf_at_depth;
  at_depth.assign(static_cast<std::size_t>(deepest) + 2, 0);
  leaf_at_depth.assign(static_cast<std::size_t>(deepest) + 2, 0);
  for (int64_t v = 0; v < count; ++v) {
    ++at_depth[depth[v] + 1];
    if (feature[v] < 0) ++leaf_at_depth[depth[v] + 1];
  }
  const int64_t base = first - a.offsets[0];
  at_depth[0] = base;
  leaf_at_depth[0] = first_leaf;
  for (int32_t d = 0; d <= deepest; ++d) {
    at_depth[d + 1] += at_depth[d];
    leaf_at_depth[d + 1] += leaf_at_depth[d];
  }
  std::vector<int32_t>& position = scratch.position;
  position.resize(static_cast<std::size_t>(count));
  for (int64_t v = 0; v < count; ++v) position[v] = static_cast<int32_t>(at_depth[depth[v]]++);
  packed.roots[t] = static_cast<int32_t>(base);
  for (int64_t v = 0; v < count; ++v) {
    PackedNode& out = packed.nodes[position[v]];
    if (feature[v] < 0) {
      const int64_t leaf = leaf_at_depth[depth[v]]++;
      out.feature = -1;
      out.threshold = 0.0;
      out.child = static_cast<int32_t>(leaf);
      std::copy(a.value + (first + v) * a.k, a.value + (first + v + 1) * a.k, packed.values.begin() + leaf * a.k);
    } else {
      out.feature = feature[v];
      out.threshold = a.threshold[first + v];
      out.child = position[left[v]];
    }
  }
  return true;
}

}  // namespace

PackedForest pack_forest(const ForestArrays& a, int threads) {
  PackedForest packed;
  packed.k = a.k;
  packed.n_features = a.n_features;
  const int64_t n_trees = a.n_trees;
  // A tree packs into one node per node and one value row per leaf: each tree's ranges come from
  // prefix sums over the trees, which then pack in parallel (a forest at full depth has ~10^7 nodes).
  std::vector<int64_t> leaf_at(static_cast<std::size_t>(n_trees + 1), 0);
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t t = 0; t < n_trees; ++t)
    leaf_at[t + 1] = std::count_if(a.feature + a.offsets[t], a.feature + a.offsets[t + 1], [](int32_t f) { return f < 0; });
  for (int64_t t = 0; t < n_trees; ++t) leaf_at[t + 1] += leaf_at[t];
  const int64_t total = a.offsets[n_trees] - a.offsets[0];
  GPUML_EXPECT(total < INT32_MAX, "the forest has too many nodes to pack (2^31)");
  packed.nodes.resize(static_cast<std::size_t>(total));
  packed.roots.resize(static_cast<std::size_t>(n_trees));
  packed.values.resize(static_cast<std::size_t>(leaf_at[n_trees] * a.k));
  std::vector<uint8_t> bad(static_cast<std::size_t>(n_trees), 0);  // no exception leaves a parallel loop
#pragma omp parallel num_threads(threads)
  {
    LevelOrderScratch scratch;
    std::vector<std::pair<int64_t, int64_t>> queue;  // (node in the tree, its packed index), first-in first-out
#pragma omp for schedule(dynamic)
    for (int64_t t = 0; t < n_trees; ++t) {
      if (pack_in_level_order(a, t, leaf_at[t], packed, scratch)) continue;
      // Breadth-first: a split's two children are placed next to each other when it is visited.
      const int64_t first = a.offsets[t];
      const int64_t base = first - a.offsets[0];
      const int64_t end = base + (a.offsets[t + 1] - first);
      int64_t next = base + 1, leaf = leaf_at[t];
      packed.roots[t] = static_cast<int32_t>(base);
      queue.assign(1, {0, base});
      for (std::size_t head = 0; head < queue.size(); ++head) {
        const auto [node, at] = queue[head];
        const int64_t in = first + node;
        PackedNode& out = packed.nodes[at];
        if (a.feature[in] < 0) {
          // restore() accepts trees only; a leaf reached twice would write past the tree's rows.
          if (leaf >= leaf_at[t + 1]) {
            bad[t] = 1;
            break;
          }
          out.feature = -1;
          out.threshold = 0.0;
          out.child = static_cast<int32_t>(leaf);
          std::copy(a.value + in * a.k, a.value + (in + 1) * a.k, packed.values.begin() + leaf * a.k);
          ++leaf;
          continue;
        }
        // A node reached twice would pack past `end` (into the next tree's nodes).
        if (next + 2 > end) {
          bad[t] = 1;
          break;
        }
        out.feature = a.feature[in];
        out.threshold = a.threshold[in];
        out.child = static_cast<int32_t>(next);
        queue.emplace_back(a.left[in], next);
        queue.emplace_back(a.right[in], next + 1);
        next += 2;
      }
    }
  }
  const auto first_bad = std::find(bad.begin(), bad.end(), 1);
  if (first_bad != bad.end())
    throw_error(ErrorCode::invalid_argument,
                "tree " + std::to_string(first_bad - bad.begin()) + " is not a tree: a node is reached by two paths");
  return packed;
}

}  // namespace gpuml::detail

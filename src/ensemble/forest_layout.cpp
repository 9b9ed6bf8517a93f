// Packing a fitted forest for prediction (forest_layout.hpp).
#include "ensemble/forest_layout.hpp"

#include <algorithm>
#include <climits>
#include <string>
#include <utility>
#include <vector>

#include "gpuml/core/error.hpp"

namespace gpuml::detail {

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
    std::vector<std::pair<int64_t, int64_t>> queue;  // (node in the tree, its packed index), first-in first-out
#pragma omp for schedule(dynamic)
    for (int64_t t = 0; t < n_trees; ++t) {
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

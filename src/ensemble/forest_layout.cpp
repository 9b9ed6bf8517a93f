// Packing a fitted forest for prediction (forest_layout.hpp).
#include "ensemble/forest_layout.hpp"

#include <climits>
#include <deque>
#include <string>

#include "gpuml/core/error.hpp"

namespace gpuml::detail {

PackedForest pack_forest(const ForestArrays& a) {
  PackedForest packed;
  packed.k = a.k;
  packed.n_features = a.n_features;
  for (int64_t t = 0; t < a.n_trees; ++t) {
    // Breadth-first: a split's two children are placed next to each other when it is visited.
    const int64_t first = a.offsets[t];
    const int64_t base = static_cast<int64_t>(packed.nodes.size());
    const int64_t end = base + (a.offsets[t + 1] - first);  // a tree packs into one node per node
    GPUML_EXPECT(end < INT32_MAX, "the forest has too many nodes to pack (2^31)");
    packed.roots.push_back(static_cast<int32_t>(base));
    packed.nodes.push_back(PackedNode{});
    std::deque<std::pair<int64_t, int64_t>> queue{{0, base}};  // (node in the tree, its packed index)
    while (!queue.empty()) {
      const auto [node, at] = queue.front();
      queue.pop_front();
      const int64_t in = first + node;
      PackedNode& out = packed.nodes[at];
      if (a.feature[in] < 0) {
        out.feature = -1;
        out.threshold = 0.0;
        out.child = static_cast<int32_t>(packed.values.size() / packed.k);
        packed.values.insert(packed.values.end(), a.value + in * a.k, a.value + (in + 1) * a.k);
        continue;
      }
      const int64_t child = static_cast<int64_t>(packed.nodes.size());
      // restore() accepts trees only; a node reached twice would pack past `end`, and past 2^31
      // the int32 indices would wrap.
      GPUML_EXPECT(child + 2 <= end, "tree " + std::to_string(t) + " is not a tree: a node is reached by two paths");
      out.feature = a.feature[in];
      out.threshold = a.threshold[in];
      out.child = static_cast<int32_t>(child);
      packed.nodes.push_back(PackedNode{});
      packed.nodes.push_back(PackedNode{});
      queue.emplace_back(a.left[in], child);
      queue.emplace_back(a.right[in], child + 1);
    }
  }
  return packed;
}

}  // namespace gpuml::detail

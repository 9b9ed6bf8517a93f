// Packing a fitted forest for prediction (forest_layout.hpp).
#include "ensemble/forest_layout.hpp"

#include <climits>
#include <deque>

#include "ensemble/tree_builder.hpp"
#include "gpuml/core/error.hpp"

namespace gpuml::detail {

PackedForest pack_forest(const Forest& forest) {
  PackedForest packed;
  packed.k = forest.classification ? forest.width : 1;
  packed.n_features = forest.n_features;
  const int width = forest.width;
  for (const Tree& tree : forest.trees) {
    // Breadth-first: a split's two children are placed next to each other when it is visited.
    const int64_t base = static_cast<int64_t>(packed.nodes.size());
    GPUML_EXPECT(base + tree.node_count() < INT32_MAX, "the forest has too many nodes to pack (2^31)");
    packed.roots.push_back(static_cast<int32_t>(base));
    packed.nodes.push_back(PackedNode{});
    std::deque<std::pair<int32_t, int64_t>> queue{{0, base}};  // (node in the tree, its packed index)
    while (!queue.empty()) {
      const auto [node, at] = queue.front();
      queue.pop_front();
      PackedNode& out = packed.nodes[at];
      if (tree.feature[node] < 0) {
        const double* s = tree.stats.data() + static_cast<int64_t>(node) * width;
        out.feature = -1;
        out.threshold = 0.0;
        out.child = static_cast<int32_t>(packed.values.size() / packed.k);
        if (forest.classification) {
          double total = 0.0;
          for (int c = 0; c < width; ++c) total += s[c];
          for (int c = 0; c < width; ++c) packed.values.push_back(s[c] / total);
        } else {
          packed.values.push_back(s[1] / s[0]);
        }
        continue;
      }
      const int64_t child = static_cast<int64_t>(packed.nodes.size());
      out.feature = tree.feature[node];
      out.threshold = tree.threshold[node];
      out.child = static_cast<int32_t>(child);
      packed.nodes.push_back(PackedNode{});
      packed.nodes.push_back(PackedNode{});
      queue.emplace_back(tree.left[node], child);
      queue.emplace_back(tree.right[node], child + 1);
    }
  }
  return packed;
}

}  // namespace gpuml::detail

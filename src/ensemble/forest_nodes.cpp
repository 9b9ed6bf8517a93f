// The node arrays of grown trees on the host (forest_nodes.hpp).
#include "ensemble/forest_nodes.hpp"

#include "ensemble/tree_builder.hpp"

namespace gpuml::detail {

// One pass over each tree's nodes, the trees over the threads, each into its own range of the
// arrays (a forest at full depth has ~10^7 nodes).
ForestNodes forest_nodes(const std::vector<Tree>& trees, int width, bool classification, int threads) {
  const int64_t n_trees = static_cast<int64_t>(trees.size());
  ForestNodes out;
  out.offsets = HostArray(DType::int64, n_trees + 1);
  int64_t* offsets = out.offsets.as<int64_t>();
  offsets[0] = 0;
  for (int64_t t = 0; t < n_trees; ++t) offsets[t + 1] = offsets[t] + trees[t].node_count();
  const int64_t total = offsets[n_trees];
  const int64_t k = classification ? width : 1;
  out.feature = HostArray(DType::int32, total);
  out.left = HostArray(DType::int32, total);
  out.right = HostArray(DType::int32, total);
  out.threshold = HostArray(DType::float64, total);
  out.impurity = HostArray(DType::float64, total);
  out.weighted = HostArray(DType::float64, total);
  out.n_samples = HostArray(DType::int64, total);
  out.value = HostArray(DType::float64, total, k);
  int32_t *feature_at = out.feature.as<int32_t>(), *left_at = out.left.as<int32_t>(), *right_at = out.right.as<int32_t>();
  double *threshold_at = out.threshold.as<double>(), *impurity_at = out.impurity.as<double>();
  double *weighted_at = out.weighted.as<double>(), *value_at = out.value.as<double>();
  int64_t* samples_at = out.n_samples.as<int64_t>();
#pragma omp parallel for num_threads(threads) schedule(dynamic)
  for (int64_t t = 0; t < n_trees; ++t) {
    const Tree& tree = trees[t];
    for (int64_t node = 0, at = offsets[t]; node < tree.node_count(); ++node, ++at) {
      const bool leaf = tree.feature[node] < 0;
      feature_at[at] = leaf ? kLeafFeature : tree.feature[node];
      threshold_at[at] = leaf ? double(kLeafFeature) : tree.threshold[node];
      left_at[at] = leaf ? kLeafChild : tree.left[node];
      right_at[at] = leaf ? kLeafChild : tree.right[node];
      impurity_at[at] = tree.impurity[node];
      samples_at[at] = tree.rows[node];
      weighted_at[at] = node_value(tree.stats.data() + node * width, width, classification, value_at + at * k);
    }
  }
  return out;
}

}  // namespace gpuml::detail

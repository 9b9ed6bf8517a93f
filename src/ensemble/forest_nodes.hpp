#pragma once
// The fitted trees in their final forms: the estimator's node arrays (random_forest.hpp's
// estimator_node_offsets_ and nodes_*), made from the grown trees on the host (forest_nodes) or
// written by the CUDA level builder itself, with its packed forest (forest_layout.hpp) already in
// the device's memory (WrittenForest). The per-node values come from one inline
// function on the host and the device alike, so both make the same bits.
#include <cstdint>
#include <memory>
#include <vector>

#include "criteria.hpp"  // GPUML_HOST_DEVICE
#include "gpuml/core/array.hpp"

namespace gpuml::detail {

struct StagedForest;
struct Tree;

constexpr int32_t kLeafFeature = -2;  // scikit-learn's TREE_UNDEFINED (feature and threshold of a leaf)
constexpr int32_t kLeafChild = -1;    // scikit-learn's TREE_LEAF

// Tree t owns nodes [offsets[t], offsets[t + 1]), children numbered within the tree.
struct ForestNodes {
  HostArray offsets;                          // int64, trees + 1
  HostArray feature, left, right;             // int32
  HostArray threshold, impurity, weighted;    // float64
  HostArray n_samples;                        // int64
  HostArray value;                            // float64, nodes x k
};

// A node's value row (k class fractions, or the mean: k = 1) and weighted sample count from its
// statistics (width: k class weights, or W, W y, W y²).
GPUML_HOST_DEVICE inline double node_value(const double* stats, int width, bool classification, double* value) {
  if (!classification) {
    value[0] = stats[1] / stats[0];
    return stats[0];
  }
  double w = 0.0;
  for (int c = 0; c < width; ++c) w += stats[c];
  for (int c = 0; c < width; ++c) value[c] = stats[c] / w;
  return w;
}

// The node arrays of grown trees (each tree's nodes in its own order), the trees over `threads`.
// (GPUML_API: for the tests.)
GPUML_API ForestNodes forest_nodes(const std::vector<Tree>& trees, int width, bool classification, int threads);

// What a backend that writes the forest itself hands back (LevelBackend::grow_forest): every tree's
// node arrays, its packed forest staged in the fitting device's memory (the host's packed copy is
// made from the node arrays when a CPU predict or another device needs it), and each tree's sums
// of its splits' impurity improvements per feature (trees x d), in node order.
struct WrittenForest {
  ForestNodes nodes;
  std::shared_ptr<const StagedForest> staged;
  std::vector<double> importance_sums;
};

}  // namespace gpuml::detail

#pragma once
// The fitted forest as both backends predict with it: one array of 16-byte nodes for all trees,
// numbered level by level within each tree so that a node's children are neighbours (one load
// per step down the tree; each depth's nodes in id order when the ids number a split's children
// together, as the fitted trees' do, else in breadth-first walk order), and one row of leaf
// values per leaf, already normalized (class
// fractions, or the mean). The walk and the sum are inline functions shared by the CPU loop and
// the CUDA kernel, so the two backends compute the same bits.
#include <cstdint>
#include <vector>

#include "../core/default_init.hpp"
#include "criteria.hpp"  // GPUML_HOST_DEVICE
#include "gpuml/core/export.hpp"

namespace gpuml::detail {

struct PackedNode {
  double threshold;  // x <= threshold goes to child, else to child + 1
  int32_t feature;   // < 0: a leaf, whose values are row `child` of PackedForest::values
  int32_t child;
};
static_assert(sizeof(PackedNode) == 16, "one 16-byte load per node");

struct PackedForest {
  DefaultInitVector<PackedNode> nodes;  // written in full by pack_forest (no zero fill first)
  std::vector<int32_t> roots;   // per tree, its root's index in nodes
  DefaultInitVector<double> values;  // leaves x k
  int k = 1;                    // values per leaf: classes, or 1 (regression)
  int64_t n_features = 0;
  int64_t n_trees() const { return static_cast<int64_t>(roots.size()); }
};

// A fitted forest as the estimator's attribute arrays (random_forest.hpp): tree t owns nodes
// [offsets[t], offsets[t + 1]), children numbered within the tree, feature < 0 at leaves, and k
// values per node (class fractions, or the mean).
struct ForestArrays {
  const int64_t* offsets;
  int64_t n_trees;
  const int32_t* feature;
  const double* threshold;
  const int32_t* left;
  const int32_t* right;
  const double* value;
  int k;
  int64_t n_features;
};

// The trees pack in parallel over `threads` (each into its own range: the same layout on any
// thread count). (GPUML_API: for the tests.)
GPUML_API PackedForest pack_forest(const ForestArrays& arrays, int threads);

// One step down from a split node for a row whose value of node.feature is x: the index of the
// child it goes to.
GPUML_HOST_DEVICE inline int32_t packed_step(const PackedNode& node, double x) {
  return node.child + (x <= node.threshold ? 0 : 1);
}

// One step down from a split node for the row x (dense).
template <typename T>
GPUML_HOST_DEVICE inline int32_t packed_next(const PackedNode& node, const T* x) {
  return packed_step(node, static_cast<double>(x[node.feature]));
}

// The value row of the leaf x (one row of X) falls in, in the tree rooted at `root`.
template <typename T>
GPUML_HOST_DEVICE inline int32_t packed_leaf(const PackedNode* nodes, int32_t root, const T* x) {
  PackedNode node = nodes[root];
  while (node.feature >= 0) node = nodes[packed_next(node, x)];
  return node.child;
}

// acc + share · v, rounded twice (never fused into one FMA), on the host and the device alike.
GPUML_HOST_DEVICE inline double add_share(double acc, double share, double v) {
#if defined(__CUDA_ARCH__)
  return __dadd_rn(acc, __dmul_rn(share, v));
#else
  const volatile double product = share * v;  // volatile: no contraction into an FMA
  return acc + product;
#endif
}

}  // namespace gpuml::detail

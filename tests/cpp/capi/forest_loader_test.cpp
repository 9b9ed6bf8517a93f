// The random forests' model loader against trees that are not trees (issue 22, item 2). restore()
// once checked only that children point forward, so a tree whose split i sends both ways to node
// i + 1 loaded, and packing for prediction copied node i + 1 once per path: 2^(N-1) leaves from N
// nodes (a 2.6 KB file cost 2.2 GB and 8.6 s). Every node but the root must have exactly one
// parent. Each hostile model is a real fitted forest (through the C ABI) with one tree's arrays
// rewritten and the size and checksum repaired, and must be refused with a named status.
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "capi/capi_harness.hpp"
#include "capi/model_bytes.hpp"
#include "test_util.hpp"

namespace gpuml::test::capi {
namespace {

constexpr int32_t kLeafFeature = -2, kLeafChild = -1;  // scikit-learn's TREE_UNDEFINED and TREE_LEAF
constexpr int32_t kChainLength = 24;                     // 2^23 leaves: ~0.5 GB when packed

// A forest of the kind fitted on noisy random data, so that its trees have far more than
// kChainLength nodes, and its model bytes.
std::vector<uint8_t> fitted_forest(const std::string& kind, std::mt19937_64& rng) {
  const int64_t n = 300, d = 4;
  std::vector<double> X(n * d), y(n);
  std::vector<int32_t> labels(n);
  std::normal_distribution<double> normal;
  for (double& v : X) v = normal(rng);
  for (int64_t i = 0; i < n; ++i) {
    y[i] = normal(rng);
    labels[i] = static_cast<int32_t>(2 * uniform_int(rng, 0, 2) + 1);
  }
  ContextHandle ctx("cpu");
  EstimatorHandle est(kind, R"({"n_estimators": 2, "random_state": )" + std::to_string(uniform_int(rng, 0, 1000)) + "}");
  EXPECT_EQ(est.status(), GPUML_OK) << gpuml_last_error();
  const gpuml_array_t Xa = host_matrix(X.data(), n, d);
  const gpuml_array_t ya = kind == "random_forest_classifier" ? host_vector(labels.data(), n) : host_vector(y.data(), n);
  EXPECT_EQ(gpuml_estimator_fit(ctx.get(), est.get(), &Xa, &ya, nullptr), GPUML_OK) << gpuml_last_error();
  return serialize(est.get());
}

// Tree 0's nodes as editable arrays.
struct Tree {
  int32_t* feature;
  double* threshold;
  int32_t* left;
  int32_t* right;
  int64_t size;
};

Tree first_tree(ModelParts& parts) {
  const int64_t* offsets = parts.array("estimator_node_offsets_").values<int64_t>();
  return Tree{parts.array("nodes_feature_").values<int32_t>(), parts.array("nodes_threshold_").values<double>(),
              parts.array("nodes_children_left_").values<int32_t>(),
              parts.array("nodes_children_right_").values<int32_t>(), offsets[1] - offsets[0]};
}

void make_split(Tree& t, int32_t node, int32_t left, int32_t right) {
  t.feature[node] = 0;
  t.threshold[node] = 0.0;
  t.left[node] = left;
  t.right[node] = right;
}

void make_leaf(Tree& t, int32_t node) {
  t.feature[node] = kLeafFeature;
  t.threshold[node] = kLeafFeature;
  t.left[node] = t.right[node] = kLeafChild;
}

// The edits, each giving a graph that is not a tree (or not forward).
struct Edit {
  std::string name;
  std::function<void(Tree&)> apply;
};

std::vector<Edit> edits() {
  return {
      // Splits 0 .. N-2 send both ways to the next node; node N-1 is a leaf. The nodes after it
      // are left as fitted (forward children), unreachable.
      {"shared-child chain", [](Tree& t) {
         for (int32_t i = 0; i + 1 < kChainLength; ++i) make_split(t, i, i + 1, i + 1);
         make_leaf(t, kChainLength - 1);
       }},
      // Both children of the root are the same node: one node, two parents.
      {"shared child", [](Tree& t) { t.right[0] = t.left[0]; }},
      // The root's right child is also a child of another split: two parents, and the root's
      // old right subtree is unreachable.
      {"two parents", [](Tree& t) {
         for (int32_t node = 1; node < t.size; ++node)
           if (t.feature[node] >= 0 && t.left[node] > t.right[0]) {
             t.right[0] = t.left[node];
             return;
           }
         FAIL() << "tree 0 has no split below the root's right child";
       }},
      // The root becomes a leaf: every other node is unreachable.
      {"unreachable nodes", [](Tree& t) { make_leaf(t, 0); }},
      // A split pointing to itself (a cycle): refused as a backward child.
      {"cycle", [](Tree& t) { t.left[0] = 0; }},
  };
}

class ForestLoader : public ::testing::TestWithParam<std::string> {};

TEST_P(ForestLoader, RefusesGraphsThatAreNotTrees) {
  GPUML_FRESH_RNG(rng);
  const std::vector<uint8_t> bytes = fitted_forest(GetParam(), rng);
  ASSERT_FALSE(bytes.empty()) << gpuml_last_error();
  ASSERT_EQ(join_model(split_model(bytes)), bytes) << "the test's model writer must match the library's";
  {
    EstimatorHandle loaded(bytes);
    ASSERT_EQ(loaded.status(), GPUML_OK) << gpuml_last_error();
  }
  for (const Edit& edit : edits()) {
    SCOPED_TRACE(edit.name);
    ModelParts parts = split_model(bytes);
    Tree tree = first_tree(parts);
    ASSERT_GT(tree.size, kChainLength) << "tree 0 is too small for the chain";
    edit.apply(tree);
    const std::vector<uint8_t> hostile = join_model(parts);
    const auto start = std::chrono::steady_clock::now();
    EstimatorHandle loaded(hostile);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_TRUE(loaded.status() == GPUML_ERROR_IO || loaded.status() == GPUML_ERROR_INVALID_ARGUMENT)
        << "status " << loaded.status() << " after " << seconds << " s: " << gpuml_last_error();
    EXPECT_EQ(loaded.get(), nullptr);
    if (loaded.status() != GPUML_OK) EXPECT_NE(std::string(gpuml_last_error()).find("tree"), std::string::npos)
        << gpuml_last_error();
    // A refusal reads the model's arrays once: well under a second even on a slow, shared
    // machine (the accepted chain took seconds and a gigabyte).
    EXPECT_LT(seconds, 1.0);
  }
}

INSTANTIATE_TEST_SUITE_P(CApi, ForestLoader,
                         ::testing::Values("random_forest_classifier", "random_forest_regressor"));

}  // namespace
}  // namespace gpuml::test::capi

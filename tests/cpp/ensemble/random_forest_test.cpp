// RandomForestClassifier / RandomForestRegressor through the public API: predictions against
// the probabilities and a held-out set, any labels, determinism over thread counts, the
// serialized model, the attributes' tree arrays, and named errors for bad input. The forest's
// quality against scikit-learn is checked in forest_test.cpp (C++) and test_ensemble.py (Python).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iterator>
#include <type_traits>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "gpuml/ensemble/random_forest.hpp"
#include "../backend_test_util.hpp"
#include "../random_sparse.hpp"
#include "test_util.hpp"

namespace gpuml {
namespace {

using test::uniform_int;
using test::uniform_real;

// Rows of d features; the label of a row is one of `labels`, picked by which of |labels| bands
// x0 + x1 falls in (learnable, with a little noise in the other features).
struct Blobs {
  int64_t n, d;
  std::vector<double> X, y;
};
Blobs make_blobs(std::mt19937_64& rng, int64_t n, int64_t d, const std::vector<double>& labels) {
  Blobs b{n, d, std::vector<double>(n * d), std::vector<double>(n)};
  const int64_t k = static_cast<int64_t>(labels.size());
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < d; ++j) b.X[i * d + j] = uniform_real(rng, -1.0, 1.0);
    const double s = (b.X[i * d] + b.X[i * d + 1] + 2.0) / 4.0;  // in [0, 1]
    b.y[i] = labels[std::min<int64_t>(k - 1, static_cast<int64_t>(s * k))];
  }
  return b;
}

std::vector<double> run(const Estimator& model, Context& ctx, const char* method, const std::vector<double>& X, int64_t n) {
  const ArraySpec spec = model.output_spec(method, n);
  std::vector<double> out(static_cast<std::size_t>(n * std::max<int64_t>(1, spec.ndim == 2 ? spec.shape[1] : 1)));
  const int64_t d = static_cast<int64_t>(X.size()) / n;
  const ArrayView o = spec.ndim == 2 ? host_view(out.data(), n, spec.shape[1]) : host_view(out.data(), n);
  if (std::string(method) == "predict_proba") model.predict_proba(ctx, host_view(X.data(), n, d), o);
  else model.predict(ctx, host_view(X.data(), n, d), o);
  return out;
}

TEST(RandomForestClassifier, PredictsTheMostProbableOfAnyLabelsAndGeneralizes) {
  GPUML_FRESH_RNG(rng);
  Context ctx = Context::cpu(2);
  const std::vector<double> labels = {-3.0, 1.5, 7.0};
  const Blobs train = make_blobs(rng, uniform_int(rng, 600, 1500), uniform_int(rng, 2, 6), labels);
  const Blobs test = make_blobs(rng, 500, train.d, labels);
  RandomForestParams p;
  p.n_estimators = 30;
  p.random_state = rng();
  RandomForestClassifier model(p);
  model.fit(ctx, host_view(train.X.data(), train.n, train.d), host_view(train.y.data(), train.n));
  const std::vector<double> classes(model.classes().as<const double>(), model.classes().as<const double>() + 3);
  EXPECT_EQ(classes, labels);
  const std::vector<double> proba = run(model, ctx, "predict_proba", test.X, test.n);
  const std::vector<double> predicted = run(model, ctx, "predict", test.X, test.n);
  int64_t right = 0;
  for (int64_t i = 0; i < test.n; ++i) {
    const double* p_i = proba.data() + i * 3;
    EXPECT_NEAR(p_i[0] + p_i[1] + p_i[2], 1.0, 1e-12);
    EXPECT_EQ(predicted[i], labels[std::max_element(p_i, p_i + 3) - p_i]);
    right += predicted[i] == test.y[i];
  }
  // Bands of x0 + x1 with axis-aligned splits: measured ~0.93-0.97 held-out accuracy.
  EXPECT_GE(static_cast<double>(right) / test.n, 0.85);
  const HostArray& importances = model.feature_importances();
  double total = 0.0;
  for (int64_t j = 0; j < train.d; ++j) total += importances.as<const double>()[j];
  EXPECT_NEAR(total, 1.0, 1e-12);
  // The label depends on x0 and x1 only: they carry most of the importance.
  EXPECT_GT(importances.as<const double>()[0] + importances.as<const double>()[1], 0.6);
}

TEST(RandomForestClassifier, SameSeedSameForestOnAnyThreadCountAndAfterSerialization) {
  GPUML_FRESH_RNG(rng);
  const Blobs b = make_blobs(rng, uniform_int(rng, 300, 900), 4, {0.0, 1.0});
  const std::string params = R"({"n_estimators": 12, "max_depth": 6, "random_state": )" + std::to_string(rng() >> 12) + "}";
  Context one = Context::cpu(1), two = Context::cpu(2);
  auto a = make_estimator("random_forest_classifier", params);
  auto c = make_estimator("random_forest_classifier", params);
  const ArrayView X = host_view(b.X.data(), b.n, b.d), y = host_view(b.y.data(), b.n);
  a->fit(one, X, &y, nullptr);
  c->fit(two, X, &y, nullptr);
  const std::vector<double> pa = run(*a, one, "predict_proba", b.X, b.n), pc = run(*c, two, "predict_proba", b.X, b.n);
  EXPECT_EQ(pa, pc);
  const std::vector<uint8_t> bytes = serialize(*a);
  EXPECT_EQ(bytes, serialize(*c));
  auto restored = deserialize(bytes.data(), bytes.size());
  EXPECT_EQ(run(*restored, two, "predict_proba", b.X, b.n), pa);
  // max_depth 6: no root-to-leaf path is longer (walk every tree from its root).
  const HostArray& offsets = restored->attribute("estimator_node_offsets_");
  const int32_t* left = restored->attribute("nodes_children_left_").as<const int32_t>();
  const int32_t* right = restored->attribute("nodes_children_right_").as<const int32_t>();
  ASSERT_EQ(offsets.spec().shape[0], 13);
  for (int64_t t = 0; t < 12; ++t) {
    const int64_t base = offsets.as<const int64_t>()[t], size = offsets.as<const int64_t>()[t + 1] - base;
    std::vector<int> depth(static_cast<std::size_t>(size), 0);
    for (int64_t node = 0; node < size; ++node) {
      if (left[base + node] < 0) continue;
      depth[left[base + node]] = depth[right[base + node]] = depth[node] + 1;
      EXPECT_LE(depth[node] + 1, 6);
    }
  }
}

TEST(RandomForestRegressor, FollowsASmoothTargetWithOutOfBagPredictions) {
  GPUML_FRESH_RNG(rng);
  Context ctx = Context::cpu(2);
  const int64_t n = uniform_int(rng, 800, 2000), d = 3;
  auto target = [](const double* x) { return 3.0 * std::sin(2.0 * x[0]) + x[1] * x[1]; };
  std::vector<double> X(n * d), y(n), Xt(400 * d), yt(400);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < d; ++j) X[i * d + j] = uniform_real(rng, -2.0, 2.0);
    y[i] = target(&X[i * d]) + uniform_real(rng, -0.1, 0.1);
  }
  for (int64_t i = 0; i < 400; ++i) {
    for (int64_t j = 0; j < d; ++j) Xt[i * d + j] = uniform_real(rng, -2.0, 2.0);
    yt[i] = target(&Xt[i * d]);
  }
  RandomForestParams p;
  p.n_estimators = 40;
  p.oob_score = true;
  p.random_state = rng();
  RandomForestRegressor model(p);
  model.fit(ctx, host_view(X.data(), n, d), host_view(y.data(), n));
  const std::vector<double> predicted = run(model, ctx, "predict", Xt, 400);
  double mean = 0.0, ss_res = 0.0, ss_tot = 0.0;
  for (double v : yt) mean += v / 400;
  for (int64_t i = 0; i < 400; ++i) ss_res += std::pow(yt[i] - predicted[i], 2), ss_tot += std::pow(yt[i] - mean, 2);
  EXPECT_GT(1.0 - ss_res / ss_tot, 0.95);  // measured ~0.98-0.99
  const double oob = *model.attribute("oob_score_").as<const double>();
  EXPECT_GT(oob, 0.9);
  EXPECT_EQ(model.attribute("oob_prediction_").spec().shape[0], n);
  // The root of each tree holds every drawn row: n draws, fewer distinct rows.
  const int64_t* offsets = model.attribute("estimator_node_offsets_").as<const int64_t>();
  const double* weighted = model.attribute("nodes_weighted_n_samples_").as<const double>();
  const int64_t* rows = model.attribute("nodes_n_samples_").as<const int64_t>();
  for (int64_t t = 0; t < 40; ++t) {
    EXPECT_EQ(weighted[offsets[t]], static_cast<double>(n));
    EXPECT_LT(rows[offsets[t]], n);
    EXPECT_GT(rows[offsets[t]], n / 2);  // ~63% distinct
  }
  // Every row has out-of-bag trees (0.632^40 per row), so none is counted without; one tree
  // leaves exactly its in-bag rows (its root's distinct rows) without.
  EXPECT_EQ(*model.attribute("oob_missing_").as<const int64_t>(), 0);
  RandomForestParams one = p;
  one.n_estimators = 1;
  RandomForestRegressor single(one);
  single.fit(ctx, host_view(X.data(), n, d), host_view(y.data(), n));
  EXPECT_EQ(*single.attribute("oob_missing_").as<const int64_t>(), single.attribute("nodes_n_samples_").as<const int64_t>()[0]);
}

// A (n, 1) y that is a column of a wider array (row stride > 1) is read through its stride: the
// same forest as its contiguous copy. (It used to be read as contiguous: the other column's values.)
TEST(RandomForestRegressor, StridedColumnTargetIsReadThroughItsStride) {
  GPUML_FRESH_RNG(rng);
  Context ctx = Context::cpu(2);
  const int64_t n = uniform_int(rng, 200, 500), d = 3;
  std::vector<double> X(n * d), y(n), wide(n * 2);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < d; ++j) X[i * d + j] = uniform_real(rng, -2.0, 2.0);
    y[i] = X[i * d] * X[i * d] + uniform_real(rng, -0.1, 0.1);
    wide[i * 2] = y[i];
    wide[i * 2 + 1] = uniform_real(rng, -100.0, 100.0);  // the neighbouring column: never a target
  }
  ArrayView column = host_view(wide.data(), n, 2);
  column.shape[1] = 1;  // the first column: rows 2 elements apart
  RandomForestParams p;
  p.n_estimators = 5;
  p.random_state = rng();
  RandomForestRegressor strided(p), contiguous(p);
  strided.fit(ctx, host_view(X.data(), n, d), column);
  contiguous.fit(ctx, host_view(X.data(), n, d), host_view(y.data(), n));
  EXPECT_EQ(run(strided, ctx, "predict", X, n), run(contiguous, ctx, "predict", X, n));  // the same trees, bit for bit
}

TEST(RandomForestClassifier, MaxLeafNodesGrowsBestFirst) {
  // Each tree has exactly max_leaf_nodes leaves when the data allow that many splits; the
  // leaves go to the best splits first, so one more leaf adds one split and keeps the others;
  // and a leaf budget that the depth limit cannot exhaust grows the depth-first tree.
  GPUML_FRESH_RNG(rng);
  Context ctx = Context::cpu(2);
  const Blobs b = make_blobs(rng, uniform_int(rng, 800, 2000), 4, {0.0, 1.0, 2.0, 3.0});
  const int64_t max_leaves = uniform_int(rng, 2, 30);
  const int64_t n_trees = 6;
  RandomForestParams p;
  p.n_estimators = n_trees;
  p.max_leaf_nodes = max_leaves;
  p.random_state = rng();
  auto fit = [&](RandomForestClassifier& model) {
    model.fit(ctx, host_view(b.X.data(), b.n, b.d), host_view(b.y.data(), b.n));
  };
  // Per tree, its splits as sorted (feature, threshold) pairs, and its number of leaves.
  using Splits = std::vector<std::pair<int32_t, double>>;
  auto splits_of = [&](const RandomForestClassifier& model, int64_t t) {
    const int64_t* offsets = model.attribute("estimator_node_offsets_").as<const int64_t>();
    const int32_t* feature = model.attribute("nodes_feature_").as<const int32_t>();
    const double* threshold = model.attribute("nodes_threshold_").as<const double>();
    Splits splits;
    for (int64_t at = offsets[t]; at < offsets[t + 1]; ++at)
      if (feature[at] >= 0) splits.emplace_back(feature[at], threshold[at]);
    std::sort(splits.begin(), splits.end());
    return splits;
  };
  RandomForestClassifier model(p);
  fit(model);
  for (int64_t t = 0; t < n_trees; ++t) {
    const int64_t leaves = static_cast<int64_t>(splits_of(model, t).size()) + 1;  // a binary tree
    EXPECT_EQ(leaves, max_leaves) << "tree " << t;  // ~1000 noisy rows: splits never run out this early
  }
  // Best first: node ids follow creation, so the k-th split made nodes 2k+1 and 2k+2. When a
  // node split, no node already waiting split later with a larger impurity improvement.
  {
    const int64_t* offsets = model.attribute("estimator_node_offsets_").as<const int64_t>();
    const int32_t* left = model.attribute("nodes_children_left_").as<const int32_t>();
    const int32_t* right = model.attribute("nodes_children_right_").as<const int32_t>();
    const double* impurity = model.attribute("nodes_impurity_").as<const double>();
    const double* weight = model.attribute("nodes_weighted_n_samples_").as<const double>();
    for (int64_t t = 0; t < n_trees; ++t) {
      const int64_t at = offsets[t], nodes = offsets[t + 1] - offsets[t];
      auto improvement = [&](int64_t i) {  // scikit-learn's impurity_improvement, from the node's arrays
        const int64_t l = at + left[at + i], r = at + right[at + i];
        return (weight[at + i] * impurity[at + i] - weight[l] * impurity[l] - weight[r] * impurity[r]) / weight[at];
      };
      for (int64_t a = 0; a < nodes; ++a) {
        if (left[at + a] < 0) continue;
        const int64_t split_at = (left[at + a] - 1) / 2;
        for (int64_t b = 0; b <= 2 * split_at && b < nodes; ++b) {  // b existed when a split
          if (left[at + b] < 0 || (left[at + b] - 1) / 2 <= split_at) continue;
          EXPECT_GE(improvement(a) + 1e-12, improvement(b)) << "tree " << t << " nodes " << a << ", " << b;  // 1e-12: rounding of the recomputed sums
        }
      }
    }
  }
  // One more leaf: the same splits and one more (node seeds make a node's split independent of
  // the order in which nodes grow).
  RandomForestParams one_more = p;
  one_more.max_leaf_nodes = max_leaves + 1;
  RandomForestClassifier bigger(one_more);
  fit(bigger);
  for (int64_t t = 0; t < n_trees; ++t) {
    const Splits fewer = splits_of(model, t), more = splits_of(bigger, t);
    ASSERT_EQ(more.size(), fewer.size() + 1) << "tree " << t;
    Splits kept;
    std::set_intersection(fewer.begin(), fewer.end(), more.begin(), more.end(), std::back_inserter(kept));
    EXPECT_EQ(kept, fewer) << "tree " << t;
  }
  // A leaf budget of 2^max_depth cannot run out before the depth limit: the depth-first trees.
  RandomForestParams deep = p, budget = p;
  deep.max_leaf_nodes = std::nullopt;
  deep.max_depth = uniform_int(rng, 1, 5);
  budget.max_depth = deep.max_depth;
  budget.max_leaf_nodes = std::max<int64_t>(2, int64_t{1} << *deep.max_depth);
  RandomForestClassifier depth_first(deep), best_first(budget);
  fit(depth_first);
  fit(best_first);
  for (int64_t t = 0; t < n_trees; ++t) EXPECT_EQ(splits_of(best_first, t), splits_of(depth_first, t)) << "tree " << t;
}

TEST(RandomForest, BadInputGetsNamedErrors) {
  GPUML_FRESH_RNG(rng);
  Context ctx = Context::cpu(2);
  Blobs b = make_blobs(rng, 200, 3, {0.0, 1.0});
  const ArrayView X = host_view(b.X.data(), b.n, b.d), y = host_view(b.y.data(), b.n);
  RandomForestParams small;
  small.n_estimators = 3;
  // Unfitted.
  std::vector<double> out(b.n);
  GPUML_EXPECT_ERROR(RandomForestClassifier(small).predict(ctx, X, host_view(out.data(), b.n)), ErrorCode::not_fitted);
  // NaN in X; one class; a negative weight; weights summing to 0.
  std::vector<double> nan_X = b.X;
  nan_X[uniform_int(rng, 0, b.n * b.d - 1)] = std::numeric_limits<double>::quiet_NaN();
  GPUML_EXPECT_ERROR(RandomForestClassifier(small).fit(ctx, host_view(nan_X.data(), b.n, b.d), y), ErrorCode::invalid_argument);
  std::vector<double> one_class(b.n, 4.0);
  GPUML_EXPECT_ERROR(RandomForestClassifier(small).fit(ctx, X, host_view(one_class.data(), b.n)), ErrorCode::invalid_argument);
  std::vector<double> w(b.n, 1.0);
  w[uniform_int(rng, 0, b.n - 1)] = -1.0;
  const ArrayView wv = host_view(w.data(), b.n);
  GPUML_EXPECT_ERROR(RandomForestClassifier(small).fit(ctx, X, y, &wv), ErrorCode::invalid_argument);
  std::fill(w.begin(), w.end(), 0.0);
  GPUML_EXPECT_ERROR(RandomForestRegressor(small).fit(ctx, X, y, &wv), ErrorCode::invalid_argument);
  // Parameters: max_features 0 or past d, bad counts, unknown names, presets.
  for (const char* params :
       {R"({"max_features": 0})", R"({"max_features": 1.5})", R"({"max_features": "cube"})", R"({"n_estimators": 0})",
        R"({"min_samples_split": 1})", R"({"min_samples_leaf": 0})", R"({"max_depth": 0})", R"({"n_bins": 1})",
        R"({"class_weight": "even"})", R"({"criterion": "squared_error"})", R"({"trees": 5})",
        R"({"min_weight_fraction_leaf": 0.6})", R"({"min_weight_fraction_leaf": -0.1})", R"({"ccp_alpha": -1.0})"}) {
    SCOPED_TRACE(params);
    GPUML_EXPECT_ERROR(make_estimator("random_forest_classifier", params), ErrorCode::invalid_argument);
  }
  auto too_many = make_estimator("random_forest_classifier", R"({"max_features": 4, "n_estimators": 2})");
  GPUML_EXPECT_ERROR(too_many->fit(ctx, X, &y, nullptr), ErrorCode::invalid_argument);  // d = 3
  // Rules between parameters (the table's relations, in scikit-learn's words).
  GPUML_EXPECT_ERROR(make_estimator("random_forest_regressor", R"({"bootstrap": false, "oob_score": true})"),
                     ErrorCode::invalid_argument);
  GPUML_EXPECT_ERROR(make_estimator("random_forest_regressor", R"({"bootstrap": false, "max_samples": 0.5})"),
                     ErrorCode::invalid_argument);
  // A JSON float is a fraction (scikit-learn's RealNotInt), never a count: 1.0 is no leaf fraction.
  for (const char* params : {R"({"min_samples_leaf": 1.0})", R"({"min_samples_split": 2.0})", R"({"max_samples": 0})",
                             R"({"max_features": 2.0})"}) {
    SCOPED_TRACE(params);
    GPUML_EXPECT_ERROR(make_estimator("random_forest_regressor", params), ErrorCode::invalid_argument);
  }
  RandomForestParams fraction_as_count = small;  // C++ callers: a count must be whole
  fraction_as_count.min_samples_split = {2.5, false};
  GPUML_EXPECT_ERROR(RandomForestRegressor{fraction_as_count}, ErrorCode::invalid_argument);
  // Values scikit-learn takes that gpuml cannot honour.
  GPUML_EXPECT_ERROR(make_estimator("random_forest_regressor", R"({"criterion": "absolute_error"})"), ErrorCode::unsupported);
  GPUML_EXPECT_ERROR(make_estimator("random_forest_classifier", R"({"monotonic_cst": [1, 0, -1]})"), ErrorCode::unsupported);
  auto poisson = make_estimator("random_forest_regressor", R"({"criterion": "poisson", "n_estimators": 2})");
  std::vector<double> negative = b.y;
  negative[uniform_int(rng, 0, b.n - 1)] = -1.0;
  const ArrayView negative_y = host_view(negative.data(), b.n);
  GPUML_EXPECT_ERROR(poisson->fit(ctx, X, &negative_y, nullptr), ErrorCode::invalid_argument);
  GPUML_EXPECT_ERROR(make_estimator("random_forest_regressor", R"({"max_leaf_nodes": 1})"), ErrorCode::invalid_argument);
  // A corrupted model is refused: a child pointing back to the root would loop forever.
  RandomForestClassifier model(small);
  model.fit(ctx, X, y);
  std::map<std::string, HostArray> attributes;
  for (const std::string& name : model.attribute_names()) {
    const HostArray& a = model.attribute(name);
    HostArray copy = a.spec().ndim == 0 ? HostArray::scalar(a.dtype())
                     : a.spec().ndim == 1 ? HostArray(a.dtype(), a.spec().shape[0])
                                          : HostArray(a.dtype(), a.spec().shape[0], a.spec().shape[1]);
    std::copy(a.as<const uint8_t>(), a.as<const uint8_t>() + a.bytes(), copy.as<uint8_t>());
    attributes[name] = std::move(copy);
  }
  int32_t* left = attributes["nodes_children_left_"].as<int32_t>();
  ASSERT_GE(left[0], 1);  // the root of tree 0 is split
  left[left[0]] = left[left[0]] < 0 ? left[left[0]] : 0;
  left[0] = 0;
  RandomForestClassifier broken(small);
  GPUML_EXPECT_ERROR(broken.restore(std::move(attributes)), ErrorCode::invalid_argument);
}

// GPU predictions from device arrays equal the CPU backend's bit for bit (the same walk and the
// same unfused sums in tree order): classifiers of few classes (register sums) and of more than 8
// (sums in the output), a regressor, float32 and float64 X. A fit on the CUDA context grows the
// same forest as on the CPU.
// wide > 0: X gets noise columns up to that many features (the CUDA predict reads wide rows from
// global memory, narrow ones from a copy in shared memory).
template <typename T>
void check_gpu_predictions(Context& gpu, std::mt19937_64& rng, int k, int64_t wide = 0) {
  SCOPED_TRACE("k=" + std::to_string(k) + (sizeof(T) == 4 ? " float32" : " float64") + " wide=" + std::to_string(wide));
  Context cpu = Context::cpu(2);
  std::vector<double> labels;
  for (int c = 0; c < std::max(k, 2); ++c) labels.push_back(2.0 * c - 5.0);
  const Blobs b = make_blobs(rng, uniform_int(rng, 2000, 5000), uniform_int(rng, 2, 7), labels);
  const int64_t n = b.n, d = std::max(b.d, wide);
  std::vector<T> X(static_cast<std::size_t>(n * d)), y(b.y.begin(), b.y.end());
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < d; ++j) X[i * d + j] = static_cast<T>(j < b.d ? b.X[i * b.d + j] : uniform_real(rng, -1.0, 1.0));
  const std::string params = R"({"n_estimators": 15, "random_state": )" + std::to_string(rng() >> 12) + "}";
  const bool classify = k >= 2;
  const char* kind = classify ? "random_forest_classifier" : "random_forest_regressor";
  auto on_cpu = make_estimator(kind, params), on_gpu = make_estimator(kind, params);
  const ArrayView Xh = host_view(X.data(), n, d), yh = host_view(y.data(), n);
  on_cpu->fit(cpu, Xh, &yh, nullptr);
  Buffer Xd = test::to_device(gpu, X), yd = test::to_device(gpu, y);
  const ArrayView Xdv = make_view(Xd.data(), dtype_of<T>::value, gpu.device(), n, d);
  const ArrayView ydv = make_view(yd.data(), dtype_of<T>::value, gpu.device(), n);
  on_gpu->fit(gpu, Xdv, &ydv, nullptr);
  EXPECT_EQ(serialize(*on_cpu), serialize(*on_gpu));
  const int64_t width = classify ? k : 1;
  const char* method = classify ? "predict_proba" : "predict";
  std::vector<double> want(n * width);
  const ArrayView want_view = classify ? host_view(want.data(), n, width) : host_view(want.data(), n);
  if (classify) on_cpu->predict_proba(cpu, Xh, want_view);
  else on_cpu->predict(cpu, Xh, want_view);
  Buffer out(gpu, n * width * sizeof(double));
  const ArrayView out_view = classify ? make_view(out.data(), DType::float64, gpu.device(), n, width)
                                      : make_view(out.data(), DType::float64, gpu.device(), n);
  if (classify) on_cpu->predict_proba(gpu, Xdv, out_view);
  else on_cpu->predict(gpu, Xdv, out_view);
  EXPECT_EQ(test::to_host<double>(gpu, out, n * width), want) << method;
  // The GPU fit's own packed forest (written by the device, kept there and copied to the host)
  // predicts the same bits on either backend.
  if (classify) on_gpu->predict_proba(gpu, Xdv, out_view);
  else on_gpu->predict(gpu, Xdv, out_view);
  EXPECT_EQ(test::to_host<double>(gpu, out, n * width), want) << method << " by the GPU fit's forest, on the GPU";
  std::vector<double> on_host(n * width);
  const ArrayView host_out = classify ? host_view(on_host.data(), n, width) : host_view(on_host.data(), n);
  if (classify) on_gpu->predict_proba(cpu, Xh, host_out);
  else on_gpu->predict(cpu, Xh, host_out);
  EXPECT_EQ(on_host, want) << method << " by the GPU fit's forest, on the CPU";
  if (classify) {  // labels on the device: the first most probable class
    Buffer predicted(gpu, n * sizeof(double));
    on_cpu->predict(gpu, Xdv, make_view(predicted.data(), DType::float64, gpu.device(), n));
    const std::vector<double> got = test::to_host<double>(gpu, predicted, n);
    for (int64_t i = 0; i < n; ++i) {
      const double* p = want.data() + i * k;
      ASSERT_EQ(got[i], labels[std::max_element(p, p + k) - p]) << "row " << i;
    }
  }
}

// The tree arrays of a fitted forest (everything but the scalars and the out-of-bag arrays).
std::map<std::string, std::vector<uint8_t>> tree_arrays(const Estimator& model) {
  std::map<std::string, std::vector<uint8_t>> arrays;
  for (const std::string& name : model.attribute_names()) {
    if (name.rfind("nodes_", 0) != 0 && name != "estimator_node_offsets_" && name != "estimator_seeds_") continue;
    const HostArray& a = model.attribute(name);
    const auto* bytes = a.as<const uint8_t>();
    arrays[name].assign(bytes, bytes + a.bytes());
  }
  return arrays;
}

// warm_start: a forest of n1 trees continued to n2 (warm_start_from) is the forest of n2 trees
// grown at once with the same seed: the same tree arrays and seeds, importances and out-of-bag
// score up to rounding (the kept trees' statistics come back from their arrays).
void check_warm_start(Context& ctx, std::mt19937_64& rng, const char* kind) {
  const bool classification = std::string(kind) == "random_forest_classifier";
  const Blobs b = make_blobs(rng, uniform_int(rng, 200, 600), 4, {0.0, 1.0, 2.0});
  const ArrayView X = host_view(b.X.data(), b.n, b.d), y = host_view(b.y.data(), b.n);
  const int64_t n1 = uniform_int(rng, 1, 5), n2 = n1 + uniform_int(rng, 0, 6);
  const std::string seed = std::to_string(rng() >> 12);
  auto params = [&](int64_t trees, bool warm) {
    return R"({"n_estimators": )" + std::to_string(trees) + R"(, "oob_score": true, "warm_start": )" +
           (warm ? "true" : "false") + R"(, "max_depth": 7, "random_state": )" + seed + "}";
  };
  auto first = make_estimator(kind, params(n1, true));
  first->fit(ctx, X, &y, nullptr);
  auto grown = make_estimator(kind, params(n2, true));
  grown->warm_start_from(*first);
  grown->fit(ctx, X, &y, nullptr);
  auto once = make_estimator(kind, params(n2, false));
  once->fit(ctx, X, &y, nullptr);
  EXPECT_EQ(tree_arrays(*grown), tree_arrays(*once));
  const char* method = classification ? "predict_proba" : "predict";
  EXPECT_EQ(run(*grown, ctx, method, b.X, b.n), run(*once, ctx, method, b.X, b.n));
  // The kept trees' improvements and leaf statistics are recomputed from their arrays: 1e-12.
  const double* a = grown->attribute("feature_importances_").as<const double>();
  const double* c = once->attribute("feature_importances_").as<const double>();
  for (int64_t j = 0; j < b.d; ++j) EXPECT_NEAR(a[j], c[j], 1e-12);
  EXPECT_NEAR(*grown->attribute("oob_score_").as<const double>(), *once->attribute("oob_score_").as<const double>(), 1e-12);
  // Fewer trees than kept: scikit-learn's error. Another kind, or an unfitted forest: refused.
  if (n1 > 1) {
    auto fewer = make_estimator(kind, params(n1 - 1, true));
    fewer->warm_start_from(*first);
    GPUML_EXPECT_ERROR(fewer->fit(ctx, X, &y, nullptr), ErrorCode::invalid_argument);
  }
  auto other = make_estimator(classification ? "random_forest_regressor" : "random_forest_classifier", "{}");
  GPUML_EXPECT_ERROR(grown->warm_start_from(*other), ErrorCode::invalid_argument);
  GPUML_EXPECT_ERROR(grown->warm_start_from(*make_estimator(kind, "{}")), ErrorCode::not_fitted);
  GPUML_EXPECT_ERROR(make_estimator("ridge", "{}")->warm_start_from(*first), ErrorCode::unsupported);
}

// A trial's targets and parameters on random sparse X: labels from bands of the first two
// features' sum (or the sum with noise), integer row weights (used on even trials), oob_score,
// and in turn max_samples, class weights ("balanced", "balanced_subsample") and 7 bins (the
// percentile thresholds).
struct SparseTrial {
  std::vector<double> y, w;
  std::string params;
  bool weighted = false;
};

template <typename I>
SparseTrial sparse_trial(std::mt19937_64& rng, const test::RandomSparse<I>& m, bool classification, int trial) {
  const int64_t n = m.rows, d = m.cols;
  SparseTrial t;
  t.y.resize(static_cast<std::size_t>(n));
  t.w.resize(static_cast<std::size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const double s = m.dense[i * d] + m.dense[i * d + 1];
    t.y[i] = classification ? static_cast<double>(s > 0.0) + static_cast<double>(s > 1.0) : s + uniform_real(rng, -0.1, 0.1);
    t.w[i] = static_cast<double>(uniform_int(rng, classification ? 1 : 0, 3));  // "balanced" needs weight in every class
  }
  t.w[0] = 1.0;
  if (classification) t.y[0] = 0.0, t.y[n - 1] = 1.0;  // two classes even when X is nearly empty
  t.params = R"({"n_estimators": 6, "oob_score": true, "max_features": 0.6, "random_state": )" + std::to_string(rng() >> 12);
  if (trial % 3 == 1) t.params += R"(, "max_samples": 0.7)";
  if (classification && trial % 3 == 2) t.params += R"(, "class_weight": "balanced_subsample")";
  if (classification && trial % 3 == 0) t.params += R"(, "class_weight": "balanced")";
  if (trial % 4 == 3) t.params += R"(, "n_bins": 7)";
  t.params += "}";
  t.weighted = trial % 2 == 0;
  return t;
}

// Sparse X (CSR or CSC, int32 or int64 indices, float64 or float32 values, duplicates and
// unsorted indices, empty rows and columns) grows the forest of the dense matrix with the same
// values, bit for bit: the same tree arrays, importances and out-of-bag arrays, and the same
// predictions from sparse rows; with sample weights, class weights, max_samples and oob_score.
template <typename I, typename V>
void check_sparse_fit(Context& ctx, std::mt19937_64& rng, const char* kind, int trial) {
  const bool classification = std::string(kind) == "random_forest_classifier";
  const int64_t n = uniform_int(rng, 40, 300), d = uniform_int(rng, 3, 15);
  const double density = std::vector<double>{0.02, 0.1, 0.4, 0.9}[trial % 4];
  const SparseFormat format = trial % 2 ? SparseFormat::csc : SparseFormat::csr;
  test::RandomSparse<I> m = test::random_sparse<I>(rng, n, d, density, format, 0.05);
  std::vector<V> values(m.values.begin(), m.values.end()), dense(m.dense.begin(), m.dense.end());
  if (std::is_same_v<V, float>) {  // the dense matrix of the float32 values (duplicates summed in float)
    std::fill(dense.begin(), dense.end(), V(0));
    for (int64_t line = 0; line + 1 < static_cast<int64_t>(m.indptr.size()); ++line)
      for (int64_t k = m.indptr[line]; k < m.indptr[line + 1]; ++k) {
        const int64_t i = format == SparseFormat::csr ? line : m.indices[k], j = format == SparseFormat::csr ? m.indices[k] : line;
        dense[i * d + j] += values[k];
      }
  }
  SparseView Xs = m.view();
  Xs.dtype = dtype_of<V>::value;
  Xs.values = values.data();
  const SparseTrial t = sparse_trial(rng, m, classification, trial);
  const ArrayView X = host_view(dense.data(), n, d), yv = host_view(t.y.data(), n), wv = host_view(t.w.data(), n);
  auto on_dense = make_estimator(kind, t.params), on_sparse = make_estimator(kind, t.params);
  on_dense->fit(ctx, X, &yv, t.weighted ? &wv : nullptr);
  on_sparse->fit_sparse(ctx, Xs, &yv, t.weighted ? &wv : nullptr);
  const std::string where = std::string(kind) + " trial " + std::to_string(trial) + " " + t.params;
  EXPECT_EQ(tree_arrays(*on_dense), tree_arrays(*on_sparse)) << where;
  for (const char* name : {"feature_importances_", "oob_score_", classification ? "oob_decision_function_" : "oob_prediction_"}) {
    const HostArray &a = on_dense->attribute(name), &b = on_sparse->attribute(name);
    ASSERT_EQ(a.bytes(), b.bytes()) << where << " " << name;
    EXPECT_EQ(0, std::memcmp(a.as<const uint8_t>(), b.as<const uint8_t>(), a.bytes())) << where << " " << name;
  }
  // Predictions from the sparse rows (both formats) equal the dense ones, bit for bit.
  const int k = classification ? static_cast<int>(on_dense->attribute("classes_").spec().shape[0]) : 1;
  for (const char* method : {"predict", "predict_proba"}) {
    if (!classification && std::string(method) == "predict_proba") continue;
    const bool proba = std::string(method) == "predict_proba";
    const int64_t width = proba ? k : 1;
    std::vector<double> want(static_cast<std::size_t>(n * width)), got(want.size());
    const ArrayView w_out = proba ? host_view(want.data(), n, width) : host_view(want.data(), n);
    const ArrayView g_out = proba ? host_view(got.data(), n, width) : host_view(got.data(), n);
    if (proba) on_dense->predict_proba(ctx, X, w_out), on_sparse->predict_proba_sparse(ctx, Xs, g_out);
    else on_dense->predict(ctx, X, w_out), on_sparse->predict_sparse(ctx, Xs, g_out);
    EXPECT_EQ(want, got) << where << " " << method;
  }
}

TEST(RandomForest, SparseXGrowsTheDenseForest) {
  GPUML_FRESH_RNG(rng);
  Context ctx = Context::cpu(2);
  for (int trial = 0; trial < 8; ++trial) {
    for (const char* kind : {"random_forest_classifier", "random_forest_regressor"}) {
      if (trial % 2) check_sparse_fit<int64_t, double>(ctx, rng, kind, trial);
      else check_sparse_fit<int32_t, double>(ctx, rng, kind, trial);
      check_sparse_fit<int32_t, float>(ctx, rng, kind, trial);
    }
  }
}

TEST(RandomForest, SparseBadInputGetsNamedErrors) {
  GPUML_FRESH_RNG(rng);
  Context ctx = Context::cpu(2);
  test::RandomSparse<int32_t> m = test::random_sparse<int32_t>(rng, 30, 4, 0.5, SparseFormat::csr);
  std::vector<double> y(30, 0.0);
  y[3] = 1.0;
  const ArrayView yv = host_view(y.data(), 30);
  auto forest = make_estimator("random_forest_classifier", R"({"n_estimators": 2})");
  EXPECT_TRUE(forest->accepts_sparse());
  GPUML_EXPECT_ERROR(forest->fit_sparse(ctx, m.view(), nullptr, nullptr), ErrorCode::invalid_argument);  // no y
  GPUML_EXPECT_ERROR(forest->predict_sparse(ctx, m.view(), host_view(y.data(), 30)), ErrorCode::not_fitted);
  SparseView bad = m.view();
  m.values[1] = std::numeric_limits<double>::quiet_NaN();
  GPUML_EXPECT_ERROR(forest->fit_sparse(ctx, bad, &yv, nullptr), ErrorCode::invalid_argument);
  m.values[1] = 0.5;
  bad.shape[1] = 0;  // no features (and indices out of range)
  GPUML_EXPECT_ERROR(forest->fit_sparse(ctx, bad, &yv, nullptr), ErrorCode::invalid_argument);
  forest->fit_sparse(ctx, m.view(), &yv, nullptr);
  test::RandomSparse<int32_t> wide = test::random_sparse<int32_t>(rng, 30, 5, 0.5, SparseFormat::csc);
  std::vector<double> out(30 * 2);
  GPUML_EXPECT_ERROR(forest->predict_sparse(ctx, wide.view(), host_view(out.data(), 30)), ErrorCode::invalid_argument);
  GPUML_EXPECT_ERROR(forest->predict_proba_sparse(ctx, wide.view(), host_view(out.data(), 30, 2)), ErrorCode::invalid_argument);
  // Sparse X describing more n x d one-byte codes than any memory holds: a named error, before
  // anything of that size is allocated.
  std::vector<int32_t> indptr(31, 0);
  SparseView huge{};
  huge.format = SparseFormat::csr;
  huge.shape[0] = 30;
  huge.shape[1] = int64_t(1) << 58;
  huge.indptr = indptr.data();
  GPUML_EXPECT_ERROR(forest->fit_sparse(ctx, huge, &yv, nullptr), ErrorCode::out_of_memory);
  // A regressor has no predict_proba, sparse or dense: unsupported, naming it.
  auto regressor = make_estimator("random_forest_regressor", R"({"n_estimators": 2})");
  regressor->fit_sparse(ctx, m.view(), &yv, nullptr);
  GPUML_EXPECT_ERROR(regressor->predict_proba_sparse(ctx, m.view(), host_view(out.data(), 30, 2)), ErrorCode::unsupported);
}

// On a CUDA context sparse X (CSR or CSC, int32 or int64 indices, float64 or float32 values, in
// host or device memory) grows the CPU's sparse forest bit for bit: the codes are binned on the
// host from the columns and the trees grown level by level on the device. Every fitted attribute
// (the serialized models: tree arrays, importances, out-of-bag arrays) is the CPU's, with sample
// weights, class weights (balanced_subsample grows on the host) and max_samples; predict and
// predict_proba from sparse X on the CUDA context, written to device memory, are the CPU's.
template <typename I, typename V>
void check_gpu_sparse_fit(Context& gpu, std::mt19937_64& rng, const char* kind, int trial) {
  Context cpu = Context::cpu(2);
  const bool classification = std::string(kind) == "random_forest_classifier";
  const int64_t n = uniform_int(rng, 100, 800), d = uniform_int(rng, 3, 15);
  const double density = std::vector<double>{0.05, 0.3, 0.9}[trial % 3];
  const SparseFormat format = trial % 2 ? SparseFormat::csc : SparseFormat::csr;
  const bool on_device = (trial / 4) % 2 == 0;
  test::RandomSparse<I> m = test::random_sparse<I>(rng, n, d, density, format, 0.05);
  std::vector<V> values(m.values.begin(), m.values.end());
  SparseView Xh = m.view();
  Xh.dtype = dtype_of<V>::value;
  Xh.values = values.data();
  const SparseTrial t = sparse_trial(rng, m, classification, trial);
  const std::vector<double> &y = t.y, &w = t.w;
  const Buffer indptr_d = test::to_device(gpu, m.indptr), indices_d = test::to_device(gpu, m.indices);
  const Buffer values_d = test::to_device(gpu, values), y_d = test::to_device(gpu, y), w_d = test::to_device(gpu, w);
  SparseView Xg = Xh;
  if (on_device) {
    Xg.device = gpu.device();
    Xg.indptr = indptr_d.data();
    Xg.indices = indices_d.data();
    Xg.values = values_d.data();
  }
  const ArrayView yh = host_view(y.data(), n), wh = host_view(w.data(), n);
  const ArrayView yg = on_device ? make_view(y_d.data(), DType::float64, gpu.device(), n) : yh;
  const ArrayView wg = on_device ? make_view(w_d.data(), DType::float64, gpu.device(), n) : wh;
  auto on_cpu = make_estimator(kind, t.params), on_gpu = make_estimator(kind, t.params);
  on_cpu->fit_sparse(cpu, Xh, &yh, t.weighted ? &wh : nullptr);
  on_gpu->fit_sparse(gpu, Xg, &yg, t.weighted ? &wg : nullptr);
  const std::string where = std::string(kind) + " trial " + std::to_string(trial) + (on_device ? " device X " : " host X ") +
                            (sizeof(I) == 4 ? "int32 " : "int64 ") + (sizeof(V) == 4 ? "float32 " : "float64 ") + t.params;
  EXPECT_EQ(tree_arrays(*on_cpu), tree_arrays(*on_gpu)) << where;
  EXPECT_EQ(serialize(*on_cpu), serialize(*on_gpu)) << where;  // every fitted attribute
  const int k = classification ? static_cast<int>(on_cpu->attribute("classes_").spec().shape[0]) : 1;
  for (const char* method : {"predict", "predict_proba"}) {
    if (!classification && std::string(method) == "predict_proba") continue;
    const bool proba = std::string(method) == "predict_proba";
    const int64_t width = proba ? k : 1;
    std::vector<double> want(static_cast<std::size_t>(n * width));
    const ArrayView want_view = proba ? host_view(want.data(), n, width) : host_view(want.data(), n);
    Buffer out(gpu, static_cast<std::size_t>(n * width) * sizeof(double));
    const ArrayView out_view = proba ? make_view(out.data(), DType::float64, gpu.device(), n, width)
                                     : make_view(out.data(), DType::float64, gpu.device(), n);
    if (proba) on_cpu->predict_proba_sparse(cpu, Xh, want_view), on_gpu->predict_proba_sparse(gpu, Xg, out_view);
    else on_cpu->predict_sparse(cpu, Xh, want_view), on_gpu->predict_sparse(gpu, Xg, out_view);
    EXPECT_EQ(test::to_host<double>(gpu, out, static_cast<std::size_t>(n * width)), want) << where << " " << method;
  }
}

TEST(RandomForest, GpuSparseXGrowsTheCpuSparseForest) {
  GPUML_CUDA_CONTEXT_OR_SKIP(gpu);
  GPUML_FRESH_RNG(rng);
  // trial % 2: CSR or CSC; (trial / 2) % 2: int32 or int64 indices; (trial / 4) % 2: device or host X.
  for (int trial = 0; trial < 8; ++trial) {
    for (const char* kind : {"random_forest_classifier", "random_forest_regressor"}) {
      if ((trial / 2) % 2) check_gpu_sparse_fit<int64_t, double>(gpu, rng, kind, trial);
      else check_gpu_sparse_fit<int32_t, double>(gpu, rng, kind, trial);
      check_gpu_sparse_fit<int32_t, float>(gpu, rng, kind, trial);
    }
  }
}

TEST(RandomForest, WarmStartGrowsTheForestOfOneFit) {
  GPUML_FRESH_RNG(rng);
  Context ctx = Context::cpu(2);
  check_warm_start(ctx, rng, "random_forest_classifier");
  check_warm_start(ctx, rng, "random_forest_regressor");
}

TEST(RandomForest, GpuWarmStartGrowsTheForestOfOneFit) {
  GPUML_CUDA_CONTEXT_OR_SKIP(gpu);
  GPUML_FRESH_RNG(rng);
  check_warm_start(gpu, rng, "random_forest_classifier");
  check_warm_start(gpu, rng, "random_forest_regressor");
}

// min_weight_fraction_leaf: every leaf of a tree carries at least that fraction of the tree's
// weight (its root's), with bootstrap counts or with sample weights.
TEST(RandomForest, MinWeightFractionLeafBoundsEveryLeaf) {
  GPUML_FRESH_RNG(rng);
  Context ctx = Context::cpu(2);
  const Blobs b = make_blobs(rng, uniform_int(rng, 200, 600), 4, {0.0, 1.0});
  std::vector<double> w(b.n);
  for (double& v : w) v = uniform_real(rng, 0.1, 3.0);
  const ArrayView X = host_view(b.X.data(), b.n, b.d), y = host_view(b.y.data(), b.n), wv = host_view(w.data(), b.n);
  const double fraction = uniform_real(rng, 0.02, 0.2);
  for (const char* bootstrap : {"true", "false"}) {
    SCOPED_TRACE(bootstrap);
    auto model = make_estimator("random_forest_regressor", R"({"n_estimators": 4, "min_weight_fraction_leaf": )" +
                                                               std::to_string(fraction) + R"(, "bootstrap": )" + bootstrap + "}");
    model->fit(ctx, X, &y, &wv);
    const int64_t* offsets = model->attribute("estimator_node_offsets_").as<const int64_t>();
    const int32_t* feature = model->attribute("nodes_feature_").as<const int32_t>();
    const double* weighted = model->attribute("nodes_weighted_n_samples_").as<const double>();
    for (int64_t t = 0; t < 4; ++t)
      for (int64_t at = offsets[t]; at < offsets[t + 1]; ++at)
        if (feature[at] < 0) EXPECT_GE(weighted[at], fraction * weighted[offsets[t]] * (1 - 1e-12));  // summation order
  }
}

// ccp_alpha: pruning only removes subtrees (fewer nodes, the same root), a larger alpha prunes
// more, and an alpha above every weakest link leaves the root alone. (Against scikit-learn's
// pruned trees: test_random_forest_sklearn_api.py.)
TEST(RandomForest, CcpAlphaPrunesSubtrees) {
  GPUML_FRESH_RNG(rng);
  Context ctx = Context::cpu(2);
  const Blobs b = make_blobs(rng, uniform_int(rng, 200, 500), 3, {0.0, 1.0, 2.0});
  const ArrayView X = host_view(b.X.data(), b.n, b.d), y = host_view(b.y.data(), b.n);
  const std::string seed = std::to_string(rng() >> 12);
  std::vector<int64_t> nodes;
  for (const char* alpha : {"0.0", "0.001", "0.01", "10.0"}) {
    auto model = make_estimator("random_forest_classifier",
                                R"({"n_estimators": 3, "ccp_alpha": )" + std::string(alpha) + R"(, "random_state": )" + seed + "}");
    model->fit(ctx, X, &y, nullptr);
    const HostArray& offsets = model->attribute("estimator_node_offsets_");
    nodes.push_back(offsets.as<const int64_t>()[3]);
    if (std::string(alpha) == "10.0") {
      EXPECT_EQ(nodes.back(), 3);  // three single-leaf trees
      EXPECT_EQ(model->attribute("nodes_feature_").as<const int32_t>()[0], -2);
    }
  }
  EXPECT_GE(nodes[0], nodes[1]);
  EXPECT_GE(nodes[1], nodes[2]);
  EXPECT_GT(nodes[0], nodes[3]);
}

TEST(RandomForest, GpuPredictionsEqualTheCpuBackend) {
  GPUML_CUDA_CONTEXT_OR_SKIP(gpu);
  GPUML_FRESH_RNG(rng);
  check_gpu_predictions<float>(gpu, rng, 3);
  check_gpu_predictions<double>(gpu, rng, 2);
  check_gpu_predictions<float>(gpu, rng, 11);  // more classes than register sums
  check_gpu_predictions<double>(gpu, rng, 0);  // regression
  check_gpu_predictions<float>(gpu, rng, 3, 100);  // rows too wide to stage in shared memory
  check_gpu_predictions<double>(gpu, rng, 0, 50);
}

// A row of very large sample_weight is drawn more than 255 times in a tree's bootstrap: past the
// level builder's byte weights, so the GPU fit grows those trees on the host, and its forest is
// still the CPU backend's (the draws counted as bytes must stop there, not wrap).
TEST(RandomForest, GpuRowDrawnPast255TimesGrowsTheCpuForest) {
  GPUML_CUDA_CONTEXT_OR_SKIP(gpu);
  GPUML_FRESH_RNG(rng);
  Context cpu = Context::cpu(2);
  const Blobs b = make_blobs(rng, uniform_int(rng, 300, 600), uniform_int(rng, 2, 5), {0.0, 1.0, 2.0});
  std::vector<double> weights(static_cast<std::size_t>(b.n));
  for (double& w : weights) w = uniform_real(rng, 0.5, 2.0);
  weights[uniform_int(rng, 0, b.n - 1)] = 1e4;  // ~95% of every tree's draws
  const std::string params = R"({"n_estimators": 6, "random_state": )" + std::to_string(rng() >> 12) + "}";
  auto on_cpu = make_estimator("random_forest_classifier", params), on_gpu = make_estimator("random_forest_classifier", params);
  const ArrayView X = host_view(b.X.data(), b.n, b.d), y = host_view(b.y.data(), b.n), w = host_view(weights.data(), b.n);
  on_cpu->fit(cpu, X, &y, &w);
  on_gpu->fit(gpu, X, &y, &w);
  EXPECT_EQ(serialize(*on_cpu), serialize(*on_gpu));
}

}  // namespace
}  // namespace gpuml

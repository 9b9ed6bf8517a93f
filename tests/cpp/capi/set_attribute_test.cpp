// gpuml_estimator_set_attribute (issue 22, item 5: the Python bindings push hand-edited fitted
// attributes into the model). For every estimator kind with attributes that its outputs use, on
// the CPU backend and on CUDA when a device is present: a new value of each such attribute is
// read back exactly, changes the outputs to what the new value gives (computed here from the
// attributes), survives serialization; each refused value (unknown name, wrong shape, NaN, a
// float for an integer attribute, a width that contradicts the other attributes, NULLs, an
// unfitted model) is the named error and leaves the model's outputs as they were, bit for bit.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "capi/capi_harness.hpp"
#include "test_util.hpp"

namespace gpuml::test::capi {
namespace {

using KindOnBackend = std::tuple<KindSpec, std::string>;

std::string param_name(const ::testing::TestParamInfo<KindOnBackend>& info) {
  return std::get<0>(info.param).kind + (std::get<1>(info.param) == "cpu" ? "_cpu" : "_Gpu");
}

// The attributes each kind's outputs are computed from (what the Python bindings keep settable).
std::vector<std::string> used_attributes(const std::string& kind) {
  if (kind == "kmeans") return {"cluster_centers_"};
  if (kind == "pca") return {"components_", "mean_"};
  if (kind == "truncated_svd") return {"components_"};
  if (kind.rfind("random_forest", 0) == 0) return {};
  return {"coef_", "intercept_"};  // the linear models and logistic regression
}

struct Attribute {
  int32_t ndim = 0;
  int64_t shape[2] = {0, 0};
  std::vector<double> values;  // as float64
};

Attribute read(gpuml_context_t ctx, gpuml_estimator_t est, const std::string& name) {
  Attribute a;
  int32_t dtype = -1;
  EXPECT_EQ(gpuml_estimator_attribute_shape(est, name.c_str(), &dtype, &a.ndim, a.shape), GPUML_OK) << gpuml_last_error();
  a.values.assign(static_cast<std::size_t>((a.ndim >= 1 ? a.shape[0] : 1) * (a.ndim == 2 ? a.shape[1] : 1)), 0.0);
  gpuml_array_t out = host_array(a.values.data(), GPUML_FLOAT64, a.ndim, a.shape[0], a.shape[1]);
  EXPECT_EQ(gpuml_estimator_get_attribute(ctx, est, name.c_str(), &out), GPUML_OK) << gpuml_last_error();
  return a;
}

gpuml_status_t write(gpuml_context_t ctx, gpuml_estimator_t est, const std::string& name, const Attribute& a) {
  const gpuml_array_t value = host_array(a.values.data(), GPUML_FLOAT64, a.ndim, a.shape[0], a.shape[1]);
  return gpuml_estimator_set_attribute(ctx, est, name.c_str(), &value);
}

// The main output of `kind` on X computed here from the attributes (float64; the row-wise
// formulas of each estimator), with the size of the terms of each entry (for its tolerance).
struct Reference {
  std::vector<double> values, scale;
};

Reference reference_output(const std::string& kind, gpuml_context_t ctx, gpuml_estimator_t est, const Data& X) {
  Reference r;
  const int64_t n = X.n, d = X.d;
  if (kind == "kmeans") {
    const Attribute centers = read(ctx, est, "cluster_centers_");
    const int64_t k = centers.shape[0];
    for (int64_t i = 0; i < n; ++i) {
      std::vector<double> dist(k, 0.0);
      for (int64_t c = 0; c < k; ++c)
        for (int64_t j = 0; j < d; ++j) dist[c] += std::pow(X.X[i * d + j] - centers.values[c * d + j], 2);
      std::vector<double> sorted = dist;
      std::sort(sorted.begin(), sorted.end());
      r.values.push_back(static_cast<double>(std::min_element(dist.begin(), dist.end()) - dist.begin()));
      r.scale.push_back(sorted.size() > 1 ? sorted[1] - sorted[0] : 1.0);  // the margin of the choice
    }
    return r;
  }
  const bool decomposition = kind == "pca" || kind == "truncated_svd";
  const Attribute w = read(ctx, est, decomposition ? "components_" : "coef_");
  const int64_t k = w.ndim == 1 ? 1 : w.shape[0];
  std::vector<double> offset(k, 0.0), mean(d, 0.0);
  if (!decomposition) offset = read(ctx, est, "intercept_").values;
  if (kind == "pca") mean = read(ctx, est, "mean_").values;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t c = 0; c < k; ++c) {
      double sum = offset[c], size = std::abs(offset[c]);
      for (int64_t j = 0; j < d; ++j) {
        const double term = (X.X[i * d + j] - mean[j]) * w.values[c * d + j];
        sum += term;
        size += std::abs(term);
      }
      r.values.push_back(sum);
      r.scale.push_back(size);
    }
  return r;
}

class CApiSetAttribute : public ::testing::TestWithParam<KindOnBackend> {};

TEST_P(CApiSetAttribute, NewValuesAreUsedAndRefusedOnesChangeNothing) {
  const KindSpec& spec = std::get<0>(GetParam());
  const std::string& backend = std::get<1>(GetParam());
  GPUML_SKIP_UNLESS_BACKEND(backend);
  GPUML_FRESH_RNG(rng);
  std::normal_distribution<double> normal(0.0, 1.0);
  const Data train = make_data(rng, 300, 5);
  const Data test = make_data(rng, 40, 5);
  ContextHandle ctx(backend.c_str());
  ASSERT_EQ(ctx.status(), GPUML_OK) << gpuml_last_error();
  EstimatorHandle est(spec.kind, spec.params);
  ASSERT_EQ(est.status(), GPUML_OK) << gpuml_last_error();
  // Logistic regression's main output is its class index: its scores (transform) are what coef_ gives.
  const std::string method = spec.kind == "logistic_regression" ? "transform" : spec.method;
  const std::vector<std::string> names = used_attributes(spec.kind);
  const std::string some_name = names.empty() ? "feature_importances_" : names.front();

  // Not fitted yet.
  {
    const Attribute one{1, {1, 0}, {normal(rng)}};
    const gpuml_array_t value = host_array(one.values.data(), GPUML_FLOAT64, 1, 1, 0);
    EXPECT_EQ(gpuml_estimator_set_attribute(ctx.get(), est.get(), some_name.c_str(), &value), GPUML_ERROR_NOT_FITTED);
    EXPECT_TRUE(mentions(gpuml_last_error(), "fitted|fit")) << gpuml_last_error();
  }
  ASSERT_EQ(fit(ctx.get(), est.get(), spec, train, false), GPUML_OK) << gpuml_last_error();

  for (const std::string& name : names) {
    SCOPED_TRACE(name);
    // A new value: the old one moved by noise of its own size.
    Attribute changed = read(ctx.get(), est.get(), name);
    for (double& v : changed.values) v += (0.5 + std::abs(v)) * normal(rng);
    ASSERT_EQ(write(ctx.get(), est.get(), name, changed), GPUML_OK) << gpuml_last_error();
    EXPECT_EQ(read(ctx.get(), est.get(), name).values, changed.values) << "read back differs";

    const Output out = apply(ctx.get(), est.get(), method, test);
    ASSERT_EQ(out.status, GPUML_OK) << out.error;
    const Reference expected = reference_output(spec.kind, ctx.get(), est.get(), test);
    ASSERT_EQ(out.values.size(), expected.values.size());
    for (std::size_t i = 0; i < out.values.size(); ++i) {
      if (spec.kind == "kmeans") {
        // Rows whose two nearest centers are within rounding of each other may go either way.
        if (expected.scale[i] > 1e-9) EXPECT_EQ(out.values[i], expected.values[i]) << "row " << i;
      } else {
        // float64 sums of d terms in another order (and on another device): 1e-12 of the terms' size.
        EXPECT_NEAR(out.values[i], expected.values[i], 1e-12 * (1.0 + expected.scale[i])) << "entry " << i;
      }
    }

    // Serialization keeps the new value.
    gpuml_status_t status = GPUML_OK;
    const std::vector<uint8_t> bytes = serialize(est.get(), &status);
    ASSERT_EQ(status, GPUML_OK) << gpuml_last_error();
    EstimatorHandle loaded(bytes);
    ASSERT_EQ(loaded.status(), GPUML_OK) << gpuml_last_error();
    EXPECT_EQ(read(ctx.get(), loaded.get(), name).values, changed.values);
    EXPECT_TRUE(same_bits(apply(ctx.get(), loaded.get(), method, test).values, out.values));
  }

  // Refused values: each is the named error, and the outputs stay what they were, bit for bit.
  const std::vector<double> before = apply(ctx.get(), est.get(), method, test).values;
  ASSERT_FALSE(before.empty());
  auto expect_refused = [&](gpuml_status_t status, gpuml_status_t code, const std::string& words, const char* what) {
    const std::string message = gpuml_last_error();
    EXPECT_EQ(status, code) << what << ": " << message;
    EXPECT_TRUE(mentions(message, words)) << what << ": \"" << message << "\" should name " << words;
    EXPECT_TRUE(same_bits(apply(ctx.get(), est.get(), method, test).values, before)) << what << " changed the model";
  };
  const Attribute current = read(ctx.get(), est.get(), some_name);
  expect_refused(write(ctx.get(), est.get(), "bogus_", current), GPUML_ERROR_INVALID_ARGUMENT, "bogus_", "unknown name");

  Attribute wider = current;  // one more row (or entry)
  wider.shape[0] += 1;
  wider.values.resize(wider.values.size() + static_cast<std::size_t>(wider.ndim == 2 ? wider.shape[1] : 1), 1.0);
  expect_refused(write(ctx.get(), est.get(), some_name, wider), GPUML_ERROR_INVALID_ARGUMENT, some_name, "wrong shape");

  if (!names.empty()) {  // the forests' importances are never used by predictions; NaN there is not checked
    Attribute nan = current;
    nan.values[nan.values.size() / 2] = std::numeric_limits<double>::quiet_NaN();
    expect_refused(write(ctx.get(), est.get(), some_name, nan), GPUML_ERROR_INVALID_ARGUMENT, "NaN|finite", "NaN");
    Attribute inf = current;
    inf.values[0] = -std::numeric_limits<double>::infinity();
    expect_refused(write(ctx.get(), est.get(), some_name, inf), GPUML_ERROR_INVALID_ARGUMENT, "NaN|finite|infinity",
                   "infinity");
  }

  // n_features_in_: a float is refused for an integer; an integer that contradicts the width of
  // the other attributes is refused by the model's own checks.
  const double width_as_float = static_cast<double>(train.d);
  const gpuml_array_t float_width = host_array(&width_as_float, GPUML_FLOAT64, 0, 0, 0);
  expect_refused(gpuml_estimator_set_attribute(ctx.get(), est.get(), "n_features_in_", &float_width),
                 GPUML_ERROR_INVALID_ARGUMENT, "n_features_in_", "a float for an integer attribute");
  const int64_t wrong_width = train.d + 1;
  const gpuml_array_t int_width = host_array(&wrong_width, GPUML_INT64, 0, 0, 0);
  expect_refused(gpuml_estimator_set_attribute(ctx.get(), est.get(), "n_features_in_", &int_width),
                 GPUML_ERROR_INVALID_ARGUMENT, "n_features_in_|" + some_name,  // the loader names either
                 "an inconsistent n_features_in_");

  const gpuml_array_t value = host_array(current.values.data(), GPUML_FLOAT64, current.ndim, current.shape[0], current.shape[1]);
  expect_refused(gpuml_estimator_set_attribute(ctx.get(), est.get(), some_name.c_str(), nullptr),
                 GPUML_ERROR_INVALID_ARGUMENT, "value", "NULL value");
  expect_refused(gpuml_estimator_set_attribute(ctx.get(), est.get(), nullptr, &value), GPUML_ERROR_INVALID_ARGUMENT,
                 "name", "NULL name");
  expect_refused(gpuml_estimator_set_attribute(ctx.get(), nullptr, some_name.c_str(), &value),
                 GPUML_ERROR_INVALID_ARGUMENT, "est", "NULL est");
  expect_refused(gpuml_estimator_set_attribute(nullptr, est.get(), some_name.c_str(), &value),
                 GPUML_ERROR_INVALID_ARGUMENT, "ctx", "NULL ctx");

  // The value it already holds is accepted and changes nothing.
  ASSERT_EQ(write(ctx.get(), est.get(), some_name, current), GPUML_OK) << gpuml_last_error();
  EXPECT_TRUE(same_bits(apply(ctx.get(), est.get(), method, test).values, before));
}

INSTANTIATE_TEST_SUITE_P(CApi, CApiSetAttribute,
                         ::testing::Combine(::testing::ValuesIn(kind_specs()), ::testing::ValuesIn(backends())),
                         param_name);

}  // namespace
}  // namespace gpuml::test::capi

namespace gpuml::test::capi {
namespace {

// With whiten, PCA's transform divides by sqrt(explained_variance_): a negative variance would
// make NaN outputs, so the model (set by hand or loaded) refuses it.
TEST(CApiSetAttributePca, NegativeExplainedVarianceIsRefused) {
  GPUML_FRESH_RNG(rng);
  const Data train = make_data(rng, 200, 4);
  ContextHandle ctx("cpu");
  EstimatorHandle est("pca", R"({"n_components": 2, "whiten": true})");
  ASSERT_EQ(est.status(), GPUML_OK) << gpuml_last_error();
  const KindSpec& spec = *std::find_if(kind_specs().begin(), kind_specs().end(), [](const KindSpec& s) { return s.kind == "pca"; });
  ASSERT_EQ(fit(ctx.get(), est.get(), spec, train, false), GPUML_OK) << gpuml_last_error();
  const std::vector<double> before = apply(ctx.get(), est.get(), "transform", train).values;
  Attribute variance = read(ctx.get(), est.get(), "explained_variance_");
  variance.values[1] = -variance.values[1];
  EXPECT_EQ(write(ctx.get(), est.get(), "explained_variance_", variance), GPUML_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(mentions(gpuml_last_error(), "explained_variance_")) << gpuml_last_error();
  EXPECT_TRUE(same_bits(apply(ctx.get(), est.get(), "transform", train).values, before));
}

}  // namespace
}  // namespace gpuml::test::capi

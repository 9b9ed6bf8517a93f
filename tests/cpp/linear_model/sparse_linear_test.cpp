// Sparse X for LinearRegression, Ridge and ElasticNet (issue 24): fit_sparse / predict_sparse on
// fresh random CSR and CSC matrices (duplicates, unsorted indices, an empty row and column, both
// index widths) against fit / predict on the dense matrix they stand for.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "gpuml/gpuml.hpp"
#include "sparse_random.hpp"
#include "test_util.hpp"

namespace gpuml {
namespace {

using test::random_sparse;
using test::RandomSparse;

std::vector<double> values_of(const HostArray& a) {
  const double* p = a.as<const double>();
  return std::vector<double>(p, p + a.bytes() / sizeof(double));
}

template <typename I>
void check_against_dense(const std::string& kind, const std::string& params, const RandomSparse<I>& X,
                         std::mt19937_64& rng, double tolerance) {
  SCOPED_TRACE(kind + " " + params);
  Context ctx = Context::cpu();
  std::normal_distribution<double> normal;
  std::vector<double> y(static_cast<std::size_t>(X.rows));
  for (double& v : y) v = 2.0 + normal(rng);
  const ArrayView yv = host_view(y.data(), X.rows);
  auto on_sparse = make_estimator(kind, params);
  auto on_dense = make_estimator(kind, params);
  ASSERT_TRUE(on_sparse->accepts_sparse());
  on_sparse->fit_sparse(ctx, X.view(), &yv, nullptr);
  on_dense->fit(ctx, host_view(X.dense.data(), X.rows, X.cols), &yv, nullptr);
  for (const char* name : {"coef_", "intercept_"}) {
    const std::vector<double> a = values_of(on_sparse->attribute(name)), b = values_of(on_dense->attribute(name));
    ASSERT_EQ(a.size(), b.size());
    for (std::size_t j = 0; j < a.size(); ++j) EXPECT_NEAR(a[j], b[j], tolerance * (1.0 + std::abs(b[j]))) << name << j;
  }
  std::vector<double> sparse_pred(static_cast<std::size_t>(X.rows)), dense_pred(sparse_pred.size());
  on_sparse->predict_sparse(ctx, X.view(), host_view(sparse_pred.data(), X.rows));
  on_sparse->predict(ctx, host_view(X.dense.data(), X.rows, X.cols), host_view(dense_pred.data(), X.rows));
  // The same model on the same matrix: products in another order, 1e-12 relative.
  for (std::size_t i = 0; i < sparse_pred.size(); ++i)
    EXPECT_NEAR(sparse_pred[i], dense_pred[i], 1e-12 * (1.0 + std::abs(dense_pred[i]))) << "row " << i;
}

TEST(SparseLinear, FitsMatchDenseFits) {
  const uint64_t seed = test::fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  for (SparseFormat format : {SparseFormat::csr, SparseFormat::csc}) {
    const auto denser = random_sparse<int32_t>(rng, 120, 15, 0.3, format);
    const auto sparser = random_sparse<int64_t>(rng, 120, 15, 0.1, format);
    // Exact solves of the same normal equations (the dense one from X itself, the sparse one from
    // sparse products): both backward stable, 1e-9 relative for these well-conditioned X.
    check_against_dense("linear_regression", "{}", denser, rng, 1e-9);  // the empty column: minimum norm
    check_against_dense("ridge", "{\"alpha\": 0.5}", denser, rng, 1e-9);
    check_against_dense("ridge", "{\"alpha\": 0.5, \"fit_intercept\": false}", denser, rng, 1e-9);
    check_against_dense("linear_regression", "{\"fit_intercept\": false}", sparser, rng, 1e-9);
    // Coordinate descent on the same Gram system to a 1e-12 gap: 1e-6 relative.
    check_against_dense("elastic_net", "{\"alpha\": 0.01, \"l1_ratio\": 0.5, \"tol\": 1e-12, \"max_iter\": 100000}",
                        sparser, rng, 1e-6);
    check_against_dense("lasso", "{\"alpha\": 0.01, \"tol\": 1e-12, \"max_iter\": 100000}", denser, rng, 1e-6);
  }
}

TEST(SparseLinear, BadInputIsNamed) {
  std::mt19937_64 rng(test::fresh_seed());
  Context ctx = Context::cpu();
  auto X = random_sparse<int32_t>(rng, 30, 5, 0.5, SparseFormat::csr);
  std::vector<double> y(29, 1.0);
  const ArrayView yv = host_view(y.data(), 29);
  auto ridge = make_estimator("ridge", "{}");
  try {
    ridge->fit_sparse(ctx, X.view(), &yv, nullptr);
    ADD_FAILURE() << "y of the wrong length was taken";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
  }
  X.indices[0] = 99;  // out of range: named by the sparse checks
  std::vector<double> y30(30, 1.0);
  const ArrayView y30v = host_view(y30.data(), 30);
  try {
    ridge->fit_sparse(ctx, X.view(), &y30v, nullptr);
    ADD_FAILURE() << "an index out of range was taken";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("out of range"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace gpuml

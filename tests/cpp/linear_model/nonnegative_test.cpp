// positive=True of Ridge and LinearRegression (the active set on the Gram system): the CPU backend
// against a brute-force reference over every support (linear_reference.hpp), the constraint
// binding, multi-target and per-target alpha, the step limit, the parameter rules, and CUDA
// against CPU (skipped without a GPU).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "linear_model/linear_reference.hpp"
#include "test_util.hpp"

namespace gpuml {
namespace {

using test::make_regression;
using test::max_rel_diff;
using test::nonnegative_reference;
using test::reference_fit;
using test::Regression;
using test::to_doubles;
using test::uniform_int;
using test::uniform_real;

template <typename T, typename Model>
void fit_model(Context& ctx, const Regression& r, Model& model) {
  std::vector<T> X(r.X.begin(), r.X.end()), Y(r.Y.begin(), r.Y.end()), w(r.w.begin(), r.w.end());
  const ArrayView wv = host_view(w.data(), r.n);
  model.fit(ctx, host_view(X.data(), r.n, r.d), host_view(Y.data(), r.n, r.t), r.w.empty() ? nullptr : &wv);
}

RidgeParams positive_ridge(std::vector<double> alpha, bool fit_intercept) {
  RidgeParams p;
  p.alpha = std::move(alpha);
  p.fit_intercept = fit_intercept;
  p.positive = true;
  return p;
}

LinearRegressionParams positive_ols(bool fit_intercept) {
  LinearRegressionParams p;
  p.fit_intercept = fit_intercept;
  p.positive = true;
  return p;
}

// A random problem whose unconstrained solution has a coefficient in [-4, -1] for every target
// (y_k gets c X_j subtracted where target k had none below -1), so that the constraint binds.
Regression binding_problem(std::mt19937_64& rng, int64_t n, int64_t d, int64_t t, bool weighted) {
  Regression r = make_regression(rng, n, d, t, uniform_real(rng, -3.0, 3.0));
  if (weighted) {
    r.w.resize(n);
    for (auto& v : r.w) v = uniform_real(rng, 0.1, 3.0);
  }
  const Eigen::MatrixXd free = reference_fit(r, true).coef;
  for (int64_t k = 0; k < t; ++k) {
    if (free.row(k).minCoeff() < -1) continue;
    const int64_t j = uniform_int(rng, 0, d - 1);
    const double c = free(k, j) + uniform_real(rng, 1.0, 3.0);  // coef (k, j) becomes free(k, j) − c
    for (int64_t i = 0; i < n; ++i) r.Y[i * t + k] -= c * r.X[i * d + j];
  }
  return r;
}

// The constraint binds: some reference coefficient is exactly zero (on the boundary) for each target.
void expect_binds(const test::ReferenceFit& ref) {
  for (Eigen::Index k = 0; k < ref.coef.rows(); ++k) EXPECT_EQ(ref.coef.row(k).minCoeff(), 0.0) << "target " << k;
}

TEST(Nonnegative, RidgeMatchesTheBruteForceReference) {
  GPUML_FRESH_RNG(rng);
  Context ctx = Context::cpu();
  for (int trial = 0; trial < 4; ++trial) {
    const int64_t n = uniform_int(rng, 30, 300), d = uniform_int(rng, 2, 8), t = uniform_int(rng, 1, 3);
    const Regression r = binding_problem(rng, n, d, t, trial % 2 == 1);
    std::vector<double> alpha;
    for (int64_t k = 0; k < (trial == 0 ? 1 : t); ++k) alpha.push_back(uniform_real(rng, 0.01, 20.0));
    for (bool fit_intercept : {true, false}) {
      SCOPED_TRACE("n=" + std::to_string(n) + " d=" + std::to_string(d) + " t=" + std::to_string(t) +
                   " intercept=" + std::to_string(fit_intercept));
      const test::ReferenceFit ref = nonnegative_reference(r, fit_intercept, alpha);
      if (fit_intercept) expect_binds(ref);
      Ridge ridge(positive_ridge(alpha, fit_intercept));
      fit_model<double>(ctx, r, ridge);
      const std::vector<double> coef = to_doubles(ridge.coef());
      EXPECT_GE(*std::min_element(coef.begin(), coef.end()), 0.0);
      // An exact method in double on a well-conditioned problem: rounding only.
      EXPECT_LT(max_rel_diff(coef, ref.coef), 1e-9);
      EXPECT_LT(max_rel_diff(to_doubles(ridge.intercept()), ref.intercept), 1e-9);
      EXPECT_TRUE(ridge.converged());
    }
  }
}

TEST(Nonnegative, LinearRegressionMatchesTheBruteForceReference) {
  GPUML_FRESH_RNG(rng);
  Context ctx = Context::cpu();
  for (int trial = 0; trial < 4; ++trial) {
    const int64_t n = uniform_int(rng, 30, 300), d = uniform_int(rng, 2, 8), t = uniform_int(rng, 1, 3);
    const Regression r = binding_problem(rng, n, d, t, trial % 2 == 1);
    const test::ReferenceFit ref = nonnegative_reference(r, true);
    expect_binds(ref);
    for (const char* algorithm : {"auto", "svd"}) {  // positive ignores the algorithm
      SCOPED_TRACE(std::string(algorithm) + " n=" + std::to_string(n) + " d=" + std::to_string(d));
      LinearRegressionParams params = positive_ols(true);
      params.algorithm = algorithm;
      LinearRegression ols(params);
      fit_model<double>(ctx, r, ols);
      EXPECT_LT(max_rel_diff(to_doubles(ols.coef()), ref.coef), 1e-9);  // exact method, double, cond < ~20
      EXPECT_LT(max_rel_diff(to_doubles(ols.intercept()), ref.intercept), 1e-9);
      EXPECT_TRUE(ols.converged());
      EXPECT_EQ(ols.rank(), d);
    }
    // float32: the Gram matrix from float32 products, solved in double.
    LinearRegression f32(positive_ols(true));
    fit_model<float>(ctx, r, f32);
    EXPECT_EQ(f32.coef().dtype(), DType::float32);
    EXPECT_LT(max_rel_diff(to_doubles(f32.coef()), ref.coef), 1e-3);  // float32 sums over n rows, cond < ~20
  }
}

// Without a penalty and with collinear columns, the free set's system is singular: still a
// minimizer of the objective, with coef >= 0.
TEST(Nonnegative, CollinearColumnsStillMinimize) {
  GPUML_FRESH_RNG(rng);
  Context ctx = Context::cpu();
  const int64_t n = uniform_int(rng, 40, 200), d_free = uniform_int(rng, 2, 5);
  const Regression base = binding_problem(rng, n, d_free, 1, false);
  Regression r = base;
  r.d = d_free + 1;
  r.X.clear();
  const double factor = uniform_real(rng, 0.5, 2.0);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < d_free; ++j) r.X.push_back(base.X[i * d_free + j]);
    r.X.push_back(factor * base.X[i * d_free]);  // proportional to the first column
  }
  const test::ReferenceFit ref = nonnegative_reference(base, true);
  LinearRegression ols(positive_ols(true));
  fit_model<double>(ctx, r, ols);
  const std::vector<double> coef = to_doubles(ols.coef());
  EXPECT_GE(*std::min_element(coef.begin(), coef.end()), 0.0);
  // The combined weight of the two proportional columns is the reference's first coefficient.
  EXPECT_NEAR(coef[0] + factor * coef[d_free], ref.coef(0, 0), 1e-8 * (1 + std::abs(ref.coef(0, 0))));  // double
  for (int64_t j = 1; j < d_free; ++j) EXPECT_NEAR(coef[j], ref.coef(0, j), 1e-8 * (1 + std::abs(ref.coef(0, j))));
}

TEST(Nonnegative, StepLimitIsReportedAsNotConverged) {
  GPUML_FRESH_RNG(rng);
  Context ctx = Context::cpu();
  // Many features with positive coefficients: the active set needs one step per feature.
  const int64_t d = uniform_int(rng, 6, 12);
  Regression r = make_regression(rng, uniform_int(rng, 100, 300), d, 1);
  for (int64_t i = 0; i < r.n; ++i) {
    double v = 0.0;
    for (int64_t j = 0; j < d; ++j) v += uniform_real(rng, 1.0, 2.0) * r.X[i * d + j];
    r.Y[i] = v;
  }
  RidgeParams params = positive_ridge({uniform_real(rng, 0.1, 1.0)}, true);
  params.max_iter = 2;
  params.tol = 1e-8;
  Ridge limited(params);
  fit_model<double>(ctx, r, limited);
  EXPECT_FALSE(limited.converged());
  const std::vector<double> coef = to_doubles(limited.coef());
  EXPECT_GE(*std::min_element(coef.begin(), coef.end()), 0.0);  // feasible even when stopped early
  params.max_iter.reset();
  Ridge full(params);
  fit_model<double>(ctx, r, full);
  EXPECT_TRUE(full.converged());
}

TEST(Nonnegative, ParameterRules) {
  for (const char* solver : {"svd", "cholesky", "lsqr", "sparse_cg", "sag", "saga"}) {
    RidgeParams p = positive_ridge({1.0}, true);
    p.solver = solver;
    GPUML_EXPECT_ERROR(Ridge{p}, ErrorCode::invalid_argument);  // scikit-learn: only "auto" or "lbfgs"
    p.positive = false;
    EXPECT_NO_THROW(Ridge{p});  // every scikit-learn name is accepted
  }
  RidgeParams lbfgs;
  lbfgs.solver = "lbfgs";
  GPUML_EXPECT_ERROR(Ridge{lbfgs}, ErrorCode::invalid_argument);  // lbfgs needs positive
  lbfgs.positive = true;
  EXPECT_NO_THROW(Ridge{lbfgs});
  for (const char* bad : {R"({"max_iter": 0})", R"({"tol": -1})", R"({"positive": 1})", R"({"solver": "newton"})",
                          R"({"solver": "svd", "positive": true})"})
    GPUML_EXPECT_ERROR(make_estimator("ridge", bad), ErrorCode::invalid_argument);
  for (const char* bad : {R"({"tol": -1e-3})", R"({"positive": "yes"})"})
    GPUML_EXPECT_ERROR(make_estimator("linear_regression", bad), ErrorCode::invalid_argument);
  const char* params = R"({"alpha": 2, "solver": "lbfgs", "positive": true, "max_iter": 7, "tol": 0.001})";
  std::unique_ptr<Estimator> ridge = make_estimator("ridge", params);
  EXPECT_EQ(make_estimator("ridge", ridge->get_params_json())->get_params_json(), ridge->get_params_json());
  EXPECT_EQ(dynamic_cast<Ridge*>(ridge.get())->params().max_iter, std::optional<int64_t>(7));
  std::unique_ptr<Estimator> ols = make_estimator("linear_regression", R"({"positive": true, "tol": 0.5})");
  EXPECT_EQ(make_estimator("linear_regression", ols->get_params_json())->get_params_json(), ols->get_params_json());
}

TEST(Nonnegative, SerializationKeepsTheModel) {
  GPUML_FRESH_RNG(rng);
  Context ctx = Context::cpu();
  const Regression r = binding_problem(rng, uniform_int(rng, 30, 100), uniform_int(rng, 2, 6), 2, false);
  Ridge ridge(positive_ridge({0.5, 2.0}, true));
  fit_model<double>(ctx, r, ridge);
  const std::vector<uint8_t> bytes = serialize(ridge);
  std::unique_ptr<Estimator> back = deserialize(bytes.data(), bytes.size());
  EXPECT_EQ(back->get_params_json(), ridge.get_params_json());
  EXPECT_EQ(to_doubles(back->attribute("coef_")), to_doubles(ridge.coef()));
  EXPECT_EQ(*back->attribute("converged_").as<const int64_t>(), 1);
}

// CUDA against CPU: the Gram system is formed on the device, the active set runs on the host.
TEST(Nonnegative, GpuMatchesCpu) {
  GPUML_CUDA_CONTEXT_OR_SKIP(gpu);
  GPUML_FRESH_RNG(rng);
  Context cpu = Context::cpu();
  const int64_t n = uniform_int(rng, 500, 5000), d = uniform_int(rng, 2, 10), t = uniform_int(rng, 1, 3);
  const Regression r = binding_problem(rng, n, d, t, true);
  std::vector<double> alpha;
  for (int64_t k = 0; k < t; ++k) alpha.push_back(uniform_real(rng, 0.0, 10.0));
  Ridge a(positive_ridge(alpha, true)), b(positive_ridge(alpha, true));
  fit_model<double>(cpu, r, a);
  fit_model<double>(gpu, r, b);
  const std::vector<double> ca = to_doubles(a.coef()), cb = to_doubles(b.coef());
  for (std::size_t i = 0; i < ca.size(); ++i) EXPECT_NEAR(ca[i], cb[i], 1e-9 * (1 + std::abs(ca[i])));  // double, summation order
  LinearRegression oa(positive_ols(true)), ob(positive_ols(true));
  fit_model<float>(cpu, r, oa);
  fit_model<float>(gpu, r, ob);
  const std::vector<double> fa = to_doubles(oa.coef()), fb = to_doubles(ob.coef());
  for (std::size_t i = 0; i < fa.size(); ++i) EXPECT_NEAR(fa[i], fb[i], 1e-3 * (1 + std::abs(fa[i])));  // float32 sums over n rows
  EXPECT_TRUE(oa.converged() && ob.converged());
}

}  // namespace
}  // namespace gpuml

// ElasticNet and Lasso: the CPU backend against an independent reference (plain coordinate
// descent on the weighted, centered data in long double, written here without the library's
// code), the KKT conditions of the library's own solution, the error paths, serialization, and
// CUDA against CPU (skipped without a GPU).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "linear_model/linear_reference.hpp"
#include "test_util.hpp"

namespace gpuml {
namespace {

using test::make_regression;
using test::Regression;
using test::to_doubles;
using test::uniform_int;
using test::uniform_real;

template <typename T>
ElasticNet fit_enet(Context& ctx, const Regression& r, ElasticNetParams params) {
  std::vector<T> X(r.X.begin(), r.X.end()), Y(r.Y.begin(), r.Y.end()), w(r.w.begin(), r.w.end());
  ElasticNet model(std::move(params));
  const ArrayView wv = host_view(w.data(), r.n);
  const ArrayView yv = r.t == 1 ? host_view(Y.data(), r.n) : host_view(Y.data(), r.n, r.t);
  model.fit(ctx, host_view(X.data(), r.n, r.d), yv, r.w.empty() ? nullptr : &wv);
  return model;
}

// The centered (weighted means) problem of one target, weights normalized to mean 1.
struct Centered {
  int64_t n = 0, d = 0;
  std::vector<long double> X, y, w, x_mean;
  long double y_mean = 0;
};

Centered center(const Regression& r, int64_t k, bool fit_intercept) {
  Centered c;
  c.n = r.n, c.d = r.d;
  c.w.assign(r.n, 1.0L);
  if (!r.w.empty()) {
    long double total = 0;
    for (double v : r.w) total += v;
    for (int64_t i = 0; i < r.n; ++i) c.w[i] = r.w[i] * r.n / total;
  }
  c.x_mean.assign(r.d, 0.0L);
  if (fit_intercept) {
    for (int64_t i = 0; i < r.n; ++i) {
      for (int64_t j = 0; j < r.d; ++j) c.x_mean[j] += c.w[i] * r.X[i * r.d + j] / r.n;
      c.y_mean += c.w[i] * r.Y[i * r.t + k] / r.n;
    }
  }
  c.X.resize(r.n * r.d);
  c.y.resize(r.n);
  for (int64_t i = 0; i < r.n; ++i) {
    for (int64_t j = 0; j < r.d; ++j) c.X[i * r.d + j] = r.X[i * r.d + j] - c.x_mean[j];
    c.y[i] = r.Y[i * r.t + k] - c.y_mean;
  }
  return c;
}

// Plain cyclic coordinate descent on min 1/(2n) Σ w_i r_i² + a ρ |b|₁ + a (1−ρ)/2 |b|², with the
// residual kept explicitly, until a sweep changes no coefficient by more than 1e-15 (relative).
std::vector<long double> reference_cd(const Centered& c, double alpha, double l1_ratio, bool positive) {
  const int64_t n = c.n, d = c.d;
  std::vector<long double> b(d, 0.0L), r = c.y, z(d, 0.0L);
  for (int64_t j = 0; j < d; ++j)
    for (int64_t i = 0; i < n; ++i) z[j] += c.w[i] * c.X[i * d + j] * c.X[i * d + j] / n;
  const long double l1 = alpha * l1_ratio, l2 = alpha * (1 - l1_ratio);
  for (int sweep = 0; sweep < 200000; ++sweep) {
    long double change = 0, largest = 0;
    for (int64_t j = 0; j < d; ++j) {
      if (z[j] == 0) continue;
      long double rho = 0;
      for (int64_t i = 0; i < n; ++i) rho += c.w[i] * c.X[i * d + j] * (r[i] + c.X[i * d + j] * b[j]) / n;
      long double next = std::max(std::fabs(rho) - l1, 0.0L) / (z[j] + l2);
      next = rho < 0 ? -next : next;
      if (positive && rho < 0) next = 0;
      for (int64_t i = 0; i < n; ++i) r[i] -= c.X[i * d + j] * (next - b[j]);
      change = std::max(change, std::fabs(next - b[j]));
      largest = std::max(largest, std::fabs(next));
      b[j] = next;
    }
    if (change <= 1e-15L * std::max(largest, 1e-300L)) break;
  }
  return b;
}

// g_j = X_jᵀ W (y − X b) / n − a (1−ρ) b_j: the smooth part's negative gradient.
std::vector<long double> kkt_gradient(const Centered& c, const std::vector<double>& b, double alpha, double l1_ratio) {
  std::vector<long double> g(c.d, 0.0L), r = c.y;
  for (int64_t i = 0; i < c.n; ++i)
    for (int64_t j = 0; j < c.d; ++j) r[i] -= c.X[i * c.d + j] * b[j];
  for (int64_t j = 0; j < c.d; ++j) {
    for (int64_t i = 0; i < c.n; ++i) g[j] += c.w[i] * c.X[i * c.d + j] * r[i] / c.n;
    g[j] -= alpha * (1 - l1_ratio) * b[j];
  }
  return g;
}

// The smallest alpha with an all-zero solution (for l1_ratio ρ > 0): max |X_jᵀ W y| / (n ρ).
double alpha_max(const Centered& c, double l1_ratio) {
  long double best = 0;
  for (int64_t j = 0; j < c.d; ++j) {
    long double s = 0;
    for (int64_t i = 0; i < c.n; ++i) s += c.w[i] * c.X[i * c.d + j] * c.y[i];
    best = std::max(best, std::fabs(s) / c.n);
  }
  return static_cast<double>(best / l1_ratio);
}

TEST(ElasticNet, MatchesTheReferenceAndMeetsKkt) {
  GPUML_FRESH_RNG(rng);
  Context ctx = Context::cpu();
  for (int trial = 0; trial < 6; ++trial) {
    const int64_t n = uniform_int(rng, 30, 200), d = uniform_int(rng, 1, 12), t = trial == 5 ? 2 : 1;
    Regression r = make_regression(rng, n, d, t, uniform_real(rng, -3.0, 3.0));
    if (trial % 2 == 1) {
      r.w.resize(n);
      for (auto& v : r.w) v = uniform_real(rng, 0.1, 3.0);
    }
    const double l1_ratio = trial == 0 ? 1.0 : uniform_real(rng, 0.05, 1.0);
    const bool positive = trial == 4;
    const bool fit_intercept = trial != 3;
    const double fraction = uniform_real(rng, 0.02, 0.6);  // of alpha_max: a mix of zero and non-zero coefficients
    const double alpha = fraction * alpha_max(center(r, 0, fit_intercept), l1_ratio);
    SCOPED_TRACE("trial " + std::to_string(trial) + " n=" + std::to_string(n) + " d=" + std::to_string(d) +
                 " alpha=" + std::to_string(alpha) + " l1_ratio=" + std::to_string(l1_ratio));
    ElasticNetParams params;
    params.alpha = alpha;
    params.l1_ratio = l1_ratio;
    params.fit_intercept = fit_intercept;
    params.positive = positive;
    params.tol = 1e-14;
    params.max_iter = 100000;
    const ElasticNet model = fit_enet<double>(ctx, r, params);
    EXPECT_TRUE(model.converged());
    EXPECT_EQ(model.n_features_in(), d);
    const std::vector<double> coef = to_doubles(model.coef()), intercept = to_doubles(model.intercept());
    for (int64_t k = 0; k < t; ++k) {
      const Centered c = center(r, k, fit_intercept);
      const std::vector<long double> ref = reference_cd(c, alpha, l1_ratio, positive);
      const std::vector<double> b(coef.begin() + k * d, coef.begin() + (k + 1) * d);
      long double scale = 1e-3;
      for (long double v : ref) scale = std::max(scale, std::fabs(v));
      for (int64_t j = 0; j < d; ++j)  // both solve a strictly convex-enough problem to ~1e-12; 1e-7 leaves room for conditioning
        EXPECT_NEAR(b[j], static_cast<double>(ref[j]), 1e-7 * static_cast<double>(scale)) << "coef " << j;
      long double expected_intercept = c.y_mean;
      for (int64_t j = 0; j < d; ++j) expected_intercept -= c.x_mean[j] * b[j];
      EXPECT_NEAR(intercept[k], static_cast<double>(expected_intercept), 1e-9 * (1 + std::fabs(intercept[k])));
      // KKT: |g_j| <= a ρ everywhere, g_j = a ρ sign(b_j) on the support (g_j <= a ρ and b_j >= 0
      // when positive). The gap reached 1e-14 |y|²: violations of order 1e-6 of the scale remain.
      const std::vector<long double> g = kkt_gradient(c, b, alpha, l1_ratio);
      const double l1 = alpha * l1_ratio, slack = 1e-6 * (l1 + 1.0);
      for (int64_t j = 0; j < d; ++j) {
        if (positive) {
          EXPECT_GE(b[j], 0.0);
          EXPECT_LE(static_cast<double>(g[j]), l1 + slack) << "feature " << j;
        } else {
          EXPECT_LE(std::fabs(static_cast<double>(g[j])), l1 + slack) << "feature " << j;
        }
        if (b[j] != 0) EXPECT_NEAR(static_cast<double>(g[j]), b[j] > 0 ? l1 : -l1, slack) << "feature " << j;
        // Strictly inside the subgradient interval: the reference's zero must be an exact zero here.
        if (ref[j] == 0 && std::fabs(g[j]) < l1 - 1e-4 * (l1 + 1.0)) EXPECT_EQ(b[j], 0.0) << "feature " << j;
      }
    }
  }
}

TEST(ElasticNet, LassoIsElasticNetWithRatioOneAndRandomSelectionAgrees) {
  GPUML_FRESH_RNG(rng);
  Context ctx = Context::cpu();
  const int64_t n = uniform_int(rng, 50, 300), d = uniform_int(rng, 2, 15);
  const Regression r = make_regression(rng, n, d, 1);
  const double alpha = uniform_real(rng, 0.01, 1.0);
  ElasticNetParams ep;
  ep.alpha = alpha, ep.l1_ratio = 1.0, ep.tol = 1e-13, ep.max_iter = 100000;
  const ElasticNet enet = fit_enet<double>(ctx, r, ep);
  LassoParams lp;
  lp.alpha = alpha, lp.tol = 1e-13, lp.max_iter = 100000;
  Lasso lasso(lp);
  lasso.fit(ctx, host_view(r.X.data(), n, d), host_view(r.Y.data(), n));
  EXPECT_EQ(to_doubles(lasso.coef()), to_doubles(enet.coef()));  // the same computation
  EXPECT_STREQ(lasso.kind(), "lasso");
  EXPECT_EQ(lasso.get_params_json().find("l1_ratio"), std::string::npos);
  ep.selection = "random";
  ep.random_state = rng();
  const ElasticNet random = fit_enet<double>(ctx, r, ep);
  EXPECT_TRUE(random.converged());
  const std::vector<double> a = to_doubles(enet.coef()), b = to_doubles(random.coef());
  for (int64_t j = 0; j < d; ++j) EXPECT_NEAR(a[j], b[j], 1e-6 * (1 + std::fabs(a[j])));  // same optimum, gap 1e-13
}

TEST(ElasticNet, TinyMaxIterIsReportedAsNotConverged) {
  GPUML_FRESH_RNG(rng);
  Context ctx = Context::cpu();
  const int64_t n = uniform_int(rng, 100, 300), d = uniform_int(rng, 8, 20);
  Regression r = make_regression(rng, n, d, 1);
  for (int64_t i = 0; i < n; ++i)  // correlated columns: many sweeps needed
    for (int64_t j = 1; j < d; ++j) r.X[i * d + j] += 3.0 * r.X[i * d];
  ElasticNetParams p;
  p.alpha = 1e-3, p.tol = 1e-12, p.max_iter = 1;
  const ElasticNet model = fit_enet<double>(ctx, r, p);
  EXPECT_FALSE(model.converged());
  EXPECT_EQ(model.n_iter(), 1);
  EXPECT_GT(*model.dual_gap().as<const double>(), 0.0);
}

TEST(ElasticNet, InitCoefWarmStartsAndIsChecked) {
  GPUML_FRESH_RNG(rng);
  Context ctx = Context::cpu();
  const int64_t n = uniform_int(rng, 50, 200), d = uniform_int(rng, 2, 10);
  const Regression r = make_regression(rng, n, d, 2);
  ElasticNetParams p;
  p.alpha = uniform_real(rng, 0.01, 0.5), p.tol = 1e-12, p.max_iter = 100000;
  const ElasticNet cold = fit_enet<double>(ctx, r, p);
  EXPECT_GT(cold.n_iter(), 0);
  p.init_coef = to_doubles(cold.coef());  // (2, d): already optimal
  const ElasticNet warm = fit_enet<double>(ctx, r, p);
  // The gap check before the first sweep stops it, unless rounding made that gap (~0) negative,
  // which is not trusted: then one sweep, which moves nothing beyond rounding.
  EXPECT_LE(warm.n_iter(), 1);
  EXPECT_TRUE(warm.converged());
  const std::vector<double> warm_coef = to_doubles(warm.coef());
  for (std::size_t i = 0; i < warm_coef.size(); ++i)
    EXPECT_NEAR(warm_coef[i], p.init_coef[i], 1e-9 * (1 + std::fabs(p.init_coef[i])));
  std::unique_ptr<Estimator> from_json = make_estimator("elastic_net", warm.get_params_json());
  EXPECT_EQ(from_json->get_params_json(), warm.get_params_json());
  p.init_coef.pop_back();  // wrong size for (2, d)
  GPUML_EXPECT_ERROR(fit_enet<double>(ctx, r, p), ErrorCode::invalid_argument);
  GPUML_EXPECT_ERROR(make_estimator("lasso", R"({"init_coef": [[1, 2], [3]]})"), ErrorCode::invalid_argument);
  GPUML_EXPECT_ERROR(make_estimator("lasso", R"({"init_coef": ["a"]})"), ErrorCode::invalid_argument);
}

TEST(ElasticNet, Errors) {
  GPUML_FRESH_RNG(rng);
  Context ctx = Context::cpu();
  const int64_t n = uniform_int(rng, 10, 50), d = uniform_int(rng, 1, 5);
  Regression r = make_regression(rng, n, d, 1);
  GPUML_EXPECT_ERROR(ElasticNet({-1.0}), ErrorCode::invalid_argument);
  GPUML_EXPECT_ERROR(ElasticNet({1.0, 1.5}), ErrorCode::invalid_argument);
  GPUML_EXPECT_ERROR(ElasticNet({1.0, -0.1}), ErrorCode::invalid_argument);
  ElasticNetParams bad_selection;
  bad_selection.selection = "shuffled";
  GPUML_EXPECT_ERROR(ElasticNet{bad_selection}, ErrorCode::invalid_argument);
  ElasticNetParams bad_iter;
  bad_iter.max_iter = 0;
  GPUML_EXPECT_ERROR(ElasticNet{bad_iter}, ErrorCode::invalid_argument);
  for (const char* bad : {R"({"alpha": -1})", R"({"l1_ratio": 2})", R"({"selection": "x"})", R"({"tol": -1})",
                          R"({"max_iter": 0})", R"({"bogus": 1})", R"({"positive": 1})"})
    GPUML_EXPECT_ERROR(make_estimator("elastic_net", bad), ErrorCode::invalid_argument);
  GPUML_EXPECT_ERROR(make_estimator("lasso", R"({"l1_ratio": 0.5})"), ErrorCode::invalid_argument);
  EXPECT_STREQ(make_estimator("lasso", "{}")->kind(), "lasso");

  ElasticNet model;
  std::vector<double> out(n);
  GPUML_EXPECT_ERROR(model.predict(ctx, host_view(r.X.data(), n, d), host_view(out.data(), n)), ErrorCode::not_fitted);
  Regression nan_x = r;
  nan_x.X[uniform_int(rng, 0, n * d - 1)] = std::numeric_limits<double>::quiet_NaN();
  GPUML_EXPECT_ERROR(fit_enet<double>(ctx, nan_x, {}), ErrorCode::invalid_argument);
  Regression nan_y = r;
  nan_y.Y[uniform_int(rng, 0, n - 1)] = std::numeric_limits<double>::infinity();
  GPUML_EXPECT_ERROR(fit_enet<double>(ctx, nan_y, {}), ErrorCode::invalid_argument);
  Regression negative_w = r;
  negative_w.w.assign(n, 1.0);
  negative_w.w[uniform_int(rng, 0, n - 1)] = -1.0;
  GPUML_EXPECT_ERROR(fit_enet<double>(ctx, negative_w, {}), ErrorCode::invalid_argument);
  const ElasticNet fitted = fit_enet<double>(ctx, r, {});
  std::vector<double> wide(n * (d + 1), 1.0);
  GPUML_EXPECT_ERROR(fitted.predict(ctx, host_view(wide.data(), n, d + 1), host_view(out.data(), n)),
                     ErrorCode::invalid_argument);
}

TEST(ElasticNet, SerializationRoundTripAndPredict) {
  GPUML_FRESH_RNG(rng);
  Context ctx = Context::cpu();
  const int64_t n = uniform_int(rng, 20, 100), d = uniform_int(rng, 1, 6);
  const Regression r = make_regression(rng, n, d, 2);
  ElasticNetParams p;
  p.alpha = uniform_real(rng, 0.01, 0.5);
  p.l1_ratio = uniform_real(rng, 0.0, 1.0);
  const ElasticNet model = fit_enet<double>(ctx, r, p);
  const std::vector<uint8_t> bytes = serialize(model);
  std::unique_ptr<Estimator> back = deserialize(bytes.data(), bytes.size());
  EXPECT_STREQ(back->kind(), "elastic_net");
  EXPECT_EQ(back->get_params_json(), model.get_params_json());
  EXPECT_EQ(back->attribute("dual_gap_").spec().shape[0], 2);
  std::vector<double> a(n * 2), b(n * 2);
  model.predict(ctx, host_view(r.X.data(), n, d), host_view(a.data(), n, 2));
  back->predict(ctx, host_view(r.X.data(), n, d), host_view(b.data(), n, 2));
  EXPECT_EQ(a, b);
}

TEST(ElasticNet, GpuMatchesCpu) {
  GPUML_CUDA_CONTEXT_OR_SKIP(gpu);
  GPUML_FRESH_RNG(rng);
  Context cpu = Context::cpu();
  const int64_t n = uniform_int(rng, 500, 5000), d = uniform_int(rng, 1, 40), t = uniform_int(rng, 1, 3);
  Regression r = make_regression(rng, n, d, t);
  r.w.resize(n);
  for (auto& v : r.w) v = uniform_real(rng, 0.0, 2.0);
  ElasticNetParams p;
  p.alpha = uniform_real(rng, 0.01, 1.0);
  p.l1_ratio = uniform_real(rng, 0.1, 1.0);
  p.tol = 1e-12, p.max_iter = 100000;
  const ElasticNet a = fit_enet<double>(cpu, r, p), b = fit_enet<double>(gpu, r, p);
  const std::vector<double> ca = to_doubles(a.coef()), cb = to_doubles(b.coef());
  for (std::size_t i = 0; i < ca.size(); ++i) EXPECT_NEAR(ca[i], cb[i], 1e-8 * (1 + std::abs(ca[i])));  // Gram sums' order, tight tol
  const ElasticNet af = fit_enet<float>(cpu, r, p), bf = fit_enet<float>(gpu, r, p);
  const std::vector<double> fa = to_doubles(af.coef()), fb = to_doubles(bf.coef());
  for (std::size_t i = 0; i < fa.size(); ++i) EXPECT_NEAR(fa[i], fb[i], 1e-3 * (1 + std::abs(fa[i])));  // float32 Gram over n rows
}

}  // namespace
}  // namespace gpuml

// Ridge: the CPU backend against an independent reference (normal equations in double, written
// in linear_reference.hpp), the error paths, serialization, and CUDA against CPU (skipped
// without a GPU).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <string>

#include "linear_model/linear_reference.hpp"
#include "test_util.hpp"

namespace gpuml {
namespace {

using test::make_regression;
using test::max_rel_diff;
using test::reference_fit;
using test::Regression;
using test::to_doubles;
using test::uniform_int;
using test::uniform_real;

template <typename T>
Ridge fit_ridge(Context& ctx, const Regression& r, RidgeParams params) {
  std::vector<T> X(r.X.begin(), r.X.end()), Y(r.Y.begin(), r.Y.end()), w(r.w.begin(), r.w.end());
  Ridge ridge(std::move(params));
  const ArrayView wv = host_view(w.data(), r.n);
  ridge.fit(ctx, host_view(X.data(), r.n, r.d), host_view(Y.data(), r.n, r.t), r.w.empty() ? nullptr : &wv);
  return ridge;
}

TEST(Ridge, SolversMatchTheReferenceWithPerTargetAlpha) {
  GPUML_FRESH_RNG(rng);
  Context ctx = Context::cpu();
  for (int trial = 0; trial < 4; ++trial) {
    // trial 3: fewer samples than features (the Gram route of "svd").
    const int64_t n = trial == 3 ? uniform_int(rng, 5, 20) : uniform_int(rng, 40, 400);
    const int64_t d = trial == 3 ? n + uniform_int(rng, 1, 10) : uniform_int(rng, 1, 12);
    const int64_t t = uniform_int(rng, 1, 3);
    Regression r = make_regression(rng, n, d, t);
    if (trial % 2 == 1) {
      r.w.resize(n);
      for (auto& v : r.w) v = uniform_real(rng, 0.1, 3.0);
    }
    std::vector<double> alpha;
    for (int64_t k = 0; k < (trial == 0 ? 1 : t); ++k) alpha.push_back(uniform_real(rng, 0.01, 50.0));
    for (bool fit_intercept : {true, false}) {
      const test::ReferenceFit ref = reference_fit(r, fit_intercept, alpha);
      for (const char* solver : {"auto", "cholesky", "svd"}) {
        SCOPED_TRACE(std::string(solver) + " n=" + std::to_string(n) + " d=" + std::to_string(d) +
                     " t=" + std::to_string(t) + " intercept=" + std::to_string(fit_intercept));
        Ridge ridge = fit_ridge<double>(ctx, r, {alpha, fit_intercept, solver});
        // alpha > 0 keeps XᵀX + alpha I well conditioned: double agrees to ~1e-12.
        EXPECT_LT(max_rel_diff(to_doubles(ridge.coef()), ref.coef), 1e-9);
        EXPECT_LT(max_rel_diff(to_doubles(ridge.intercept()), ref.intercept), 1e-9);
        EXPECT_EQ(ridge.n_features_in(), d);
      }
    }
  }
}

TEST(Ridge, Float32MatchesTheFloat64Reference) {
  GPUML_FRESH_RNG(rng);
  Context ctx = Context::cpu();
  const int64_t n = uniform_int(rng, 200, 2000), d = uniform_int(rng, 2, 10);
  Regression r = make_regression(rng, n, d, 1, /*offset=*/uniform_real(rng, -1e4, 1e4));
  for (auto& v : r.X) v = static_cast<float>(v);
  for (auto& v : r.Y) v = static_cast<float>(v);
  const std::vector<double> alpha = {uniform_real(rng, 0.1, 10.0)};
  const test::ReferenceFit ref = reference_fit(r, true, alpha);
  for (const char* solver : {"cholesky", "svd"}) {
    SCOPED_TRACE(solver);
    Ridge ridge = fit_ridge<float>(ctx, r, {alpha, true, solver});
    EXPECT_EQ(ridge.coef().dtype(), DType::float32);
    // Centered before anything is squared: float32 keeps ~1e-5 even 1e4 away from the origin.
    EXPECT_LT(max_rel_diff(to_doubles(ridge.coef()), ref.coef), 1e-3);
  }
}

TEST(Ridge, AlphaZeroOnSingularX) {
  GPUML_FRESH_RNG(rng);
  Context ctx = Context::cpu();
  const int64_t n = uniform_int(rng, 30, 200), d_free = uniform_int(rng, 2, 6);
  Regression base = make_regression(rng, n, d_free, 1);
  Regression r = base;
  r.d = d_free + 1;
  r.X.clear();
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < d_free; ++j) r.X.push_back(base.X[i * d_free + j]);
    r.X.push_back(base.X[i * d_free]);  // an exact copy of the first column
  }
  // "svd" with alpha = 0 is the minimum-norm least-squares solution; the Cholesky route falls back
  // to it when XᵀX is singular, as scikit-learn's "cholesky" does (it was an error before).
  for (const char* solver : {"svd", "cholesky", "auto", "lsqr"}) {
    SCOPED_TRACE(solver);
    Ridge ridge = fit_ridge<double>(ctx, r, {{0.0}, true, solver});
    EXPECT_LT(max_rel_diff(to_doubles(ridge.coef()), reference_fit(r, true).coef), 1e-8);  // cond < ~20, double
  }
}

TEST(Ridge, ParamsAndErrors) {
  GPUML_FRESH_RNG(rng);
  Context ctx = Context::cpu();
  std::unique_ptr<Estimator> est = make_estimator("ridge", R"({"alpha": [0.5, 2], "solver": "svd", "fit_intercept": false})");
  auto* ridge = dynamic_cast<Ridge*>(est.get());
  ASSERT_NE(ridge, nullptr);
  EXPECT_EQ(ridge->params().alpha, (std::vector<double>{0.5, 2.0}));
  EXPECT_EQ(make_estimator("ridge", est->get_params_json())->get_params_json(), est->get_params_json());
  EXPECT_EQ(dynamic_cast<Ridge*>(make_estimator("ridge", R"({"alpha": 3})").get())->params().alpha, std::vector<double>{3.0});
  for (const char* bad : {R"({"alpha": -1})", R"({"alpha": []})", R"({"alpha": "big"})", R"({"alpha": [1, -2]})",
                          R"({"solver": "newton"})", R"({"max_iter": 0})", R"({"tol": -1})", "[1, 2]"})
    GPUML_EXPECT_ERROR(make_estimator("ridge", bad), ErrorCode::invalid_argument);
  GPUML_EXPECT_ERROR(Ridge({{-1.0}, true, "auto"}), ErrorCode::invalid_argument);
  GPUML_EXPECT_ERROR(Ridge({{}, true, "auto"}), ErrorCode::invalid_argument);

  const int64_t n = uniform_int(rng, 10, 50), d = uniform_int(rng, 1, 5);
  Regression r = make_regression(rng, n, d, 3);
  GPUML_EXPECT_ERROR(fit_ridge<double>(ctx, r, {{1.0, 2.0}, true, "auto"}), ErrorCode::invalid_argument);  // 2 alphas, 3 targets
  Ridge unfitted;
  std::vector<double> out(n * 3);
  GPUML_EXPECT_ERROR(unfitted.predict(ctx, host_view(r.X.data(), n, d), host_view(out.data(), n, 3)), ErrorCode::not_fitted);
  std::vector<double> bad_y = r.Y;
  bad_y[uniform_int(rng, 0, n * 3 - 1)] = std::numeric_limits<double>::quiet_NaN();
  GPUML_EXPECT_ERROR(unfitted.fit(ctx, host_view(r.X.data(), n, d), host_view(bad_y.data(), n, 3)), ErrorCode::invalid_argument);
  EXPECT_FALSE(unfitted.fitted());

  Ridge fitted = fit_ridge<double>(ctx, r, {{1.0}, true, "auto"});
  EXPECT_EQ(fitted.output_spec("predict", n).shape[1], 3);
  GPUML_EXPECT_ERROR(fitted.predict(ctx, host_view(r.X.data(), n, d + 1), host_view(out.data(), n, 3)),
                     ErrorCode::invalid_argument);  // wrong width: checked before any read
}

std::string error_message(const std::function<void()>& call) {
  try {
    call();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_argument) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

// Ridge's parameter table: every scikit-learn 1.9 parameter, in its order, read and written back
// (copy_X and random_state too, accepted without effect on the fit), and scikit-learn's rules.
TEST(Ridge, ParameterTableTakesEveryScikitLearnParameter) {
  GPUML_FRESH_RNG(rng);
  const nlohmann::json schema = nlohmann::json::parse(estimator_params_schema("ridge"));
  std::vector<std::string> names;
  for (const auto& row : schema["parameters"]) names.push_back(row["name"]);
  EXPECT_EQ(names, (std::vector<std::string>{"alpha", "fit_intercept", "copy_X", "max_iter", "tol", "solver", "positive",
                                             "random_state"}));
  const double alpha = uniform_real(rng, 0.1, 3.0);
  const int64_t seed = uniform_int(rng, 0, 1 << 30), max_iter = uniform_int(rng, 1, 100);
  const nlohmann::json given = {{"alpha", alpha}, {"fit_intercept", false}, {"copy_X", false}, {"max_iter", max_iter},
                                {"tol", 1e-6}, {"solver", "lbfgs"}, {"positive", true}, {"random_state", seed}};
  std::unique_ptr<Estimator> est = make_estimator("ridge", given.dump());
  EXPECT_EQ(nlohmann::json::parse(est->get_params_json()), given);

  // copy_X and random_state change nothing.
  Context ctx = Context::cpu();
  const Regression r = make_regression(rng, uniform_int(rng, 20, 80), uniform_int(rng, 1, 6), 1);
  RidgeParams plain{{alpha}}, other{{alpha}};
  other.copy_X = false;
  other.random_state = static_cast<uint64_t>(seed);
  EXPECT_EQ(to_doubles(fit_ridge<double>(ctx, r, plain).coef()), to_doubles(fit_ridge<double>(ctx, r, other).coef()));

  const auto create = [](const char* json) { return [json] { make_estimator("ridge", json); }; };
  EXPECT_EQ(error_message(create(R"({"alpha": [1, -2]})")),
            "ridge parameter 'alpha' must be a finite number >= 0 or a non-empty list of them, got [1.0,-2.0]");
  EXPECT_EQ(error_message(create(R"({"alpha": []})")),
            "ridge parameter 'alpha' must be a finite number >= 0 or a non-empty list of them, got []");
  EXPECT_EQ(error_message(create(R"({"alpha": "big"})")),
            "ridge parameter 'alpha' must be a finite number >= 0 or a list of finite numbers, got \"big\"");
  EXPECT_EQ(error_message(create(R"({"copy_X": 1})")), "ridge parameter 'copy_X' must be true or false, got 1");
  EXPECT_EQ(error_message(create(R"({"random_state": -1})")),
            "ridge parameter 'random_state' must be null or an integer >= 0, got -1");
  EXPECT_EQ(error_message(create(R"({"max_iter": 0})")), "ridge parameter 'max_iter' must be an integer >= 1 or null, got 0");
  EXPECT_EQ(error_message(create(R"({"solver": "svd", "positive": true})")),
            "solver='svd' does not support positive fitting. Please set the solver to 'auto' or 'lbfgs', or set "
            "`positive=False`");  // scikit-learn's words
  EXPECT_EQ(error_message(create(R"({"solver": "lbfgs"})")),
            "'lbfgs' solver can be used only when positive=True. Please use another solver.");
  RidgeParams nan_alpha;
  nan_alpha.alpha = {std::nan("")};
  EXPECT_EQ(error_message([&] { Ridge{nan_alpha}; }),
            "ridge parameter 'alpha' must be a finite number >= 0 or a list of finite numbers, got NaN");
}

TEST(Ridge, SerializationRoundTripAndPredict) {
  GPUML_FRESH_RNG(rng);
  Context ctx = Context::cpu();
  const int64_t n = uniform_int(rng, 20, 100), d = uniform_int(rng, 1, 5);
  const Regression r = make_regression(rng, n, d, 2);
  Ridge ridge = fit_ridge<double>(ctx, r, {{0.5, 3.0}, true, "svd"});
  const std::vector<uint8_t> bytes = serialize(ridge);
  std::unique_ptr<Estimator> back = deserialize(bytes.data(), bytes.size());
  EXPECT_STREQ(back->kind(), "ridge");
  EXPECT_EQ(back->get_params_json(), ridge.get_params_json());
  std::vector<double> a(n * 2), b(n * 2);
  ridge.predict(ctx, host_view(r.X.data(), n, d), host_view(a.data(), n, 2));
  back->predict(ctx, host_view(r.X.data(), n, d), host_view(b.data(), n, 2));
  EXPECT_EQ(a, b);
  const std::vector<double> coef = to_doubles(ridge.coef()), intercept = to_doubles(ridge.intercept());
  for (int64_t i = 0; i < n; ++i)
    for (int64_t k = 0; k < 2; ++k) {
      double expected = intercept[k];
      for (int64_t j = 0; j < d; ++j) expected += r.X[i * d + j] * coef[k * d + j];
      EXPECT_NEAR(a[i * 2 + k], expected, 1e-10 * (1 + std::abs(expected)));  // summation order only
    }
}

// Extreme magnitudes (issue 22, item 3): X and y times 2^e with alpha times 4^e are the same
// problem (coef equal, intercept times 2^e). Before the power-of-two rescaling, |X| past ~1e154
// overflowed XᵀX (an error for cholesky, NaN coefficients for svd).
TEST(Ridge, ExtremeMagnitudesFitTheUnitScaleModel) {
  GPUML_FRESH_RNG(rng);
  Context cpu = Context::cpu();
  const Regression r = make_regression(rng, 300, 6, 2, 1.5);
  for (const char* solver : {"cholesky", "svd"}) {
    RidgeParams unit_params;
    unit_params.alpha = {0.5, 1.0};  // 4^e of them stays within float64 at every e below
    unit_params.solver = solver;
    const Ridge unit = fit_ridge<double>(cpu, r, unit_params);
    for (int exponent : {-530, -520, 511}) {  // XᵀX underflows, overflows
      SCOPED_TRACE(std::string(solver) + " at 2^" + std::to_string(exponent));
      Regression s = r;
      for (double& v : s.X) v = std::ldexp(v, exponent);
      for (double& v : s.Y) v = std::ldexp(v, exponent);
      RidgeParams params = unit_params;
      for (double& a : params.alpha) a = std::ldexp(a, 2 * exponent);
      const Ridge fit = fit_ridge<double>(cpu, s, params);
      // Double, well conditioned: the same problem up to rounding.
      const std::vector<double> c0 = to_doubles(unit.coef()), c1 = to_doubles(fit.coef());
      for (std::size_t i = 0; i < c0.size(); ++i) EXPECT_NEAR(c1[i], c0[i], 1e-10 * (1 + std::abs(c0[i])));
      const std::vector<double> b0 = to_doubles(unit.intercept()), b1 = to_doubles(fit.intercept());
      for (std::size_t i = 0; i < b0.size(); ++i)
        EXPECT_NEAR(std::ldexp(b1[i], -exponent), b0[i], 1e-10 * (1 + std::abs(b0[i])));
    }
  }
}

TEST(Ridge, GpuMatchesCpu) {
  GPUML_CUDA_CONTEXT_OR_SKIP(gpu);
  GPUML_FRESH_RNG(rng);
  Context cpu = Context::cpu();
  const int64_t n = uniform_int(rng, 500, 5000), d = uniform_int(rng, 1, 40), t = uniform_int(rng, 1, 3);
  Regression r = make_regression(rng, n, d, t);
  r.w.resize(n);
  for (auto& v : r.w) v = uniform_real(rng, 0.0, 2.0);
  std::vector<double> alpha;
  for (int64_t k = 0; k < t; ++k) alpha.push_back(uniform_real(rng, 0.0, 10.0));
  for (const char* solver : {"cholesky", "svd"}) {
    SCOPED_TRACE(solver);
    Ridge a = fit_ridge<double>(cpu, r, {alpha, true, solver});
    Ridge b = fit_ridge<double>(gpu, r, {alpha, true, solver});
    const std::vector<double> ca = to_doubles(a.coef()), cb = to_doubles(b.coef());
    for (std::size_t i = 0; i < ca.size(); ++i) EXPECT_NEAR(ca[i], cb[i], 1e-9 * (1 + std::abs(ca[i])));  // double, summation order
    Ridge af = fit_ridge<float>(cpu, r, {alpha, true, solver});
    Ridge bf = fit_ridge<float>(gpu, r, {alpha, true, solver});
    const std::vector<double> fa = to_doubles(af.coef()), fb = to_doubles(bf.coef());
    for (std::size_t i = 0; i < fa.size(); ++i) EXPECT_NEAR(fa[i], fb[i], 1e-3 * (1 + std::abs(fa[i])));  // float32 sums over n rows
  }
}

}  // namespace
}  // namespace gpuml

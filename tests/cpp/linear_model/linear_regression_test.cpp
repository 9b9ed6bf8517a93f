// LinearRegression: the CPU backend against an independent reference (linear_reference.hpp),
// the error paths, serialization, and the CUDA backend against the CPU backend (skipped
// without a GPU).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <thread>

#include <cmath>
#include <cstring>
#include <limits>

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

template <typename T>
struct Fitted {
  std::vector<T> X, Y, w;
};

// Fits on r in T (1-d y when t == 1 and one_d_y).
template <typename T>
LinearRegression fit_lr(Context& ctx, const Regression& r, const std::string& algorithm, bool fit_intercept = true,
                        bool one_d_y = false) {
  std::vector<T> X(r.X.begin(), r.X.end()), Y(r.Y.begin(), r.Y.end()), w(r.w.begin(), r.w.end());
  LinearRegression lr({fit_intercept, algorithm});
  const ArrayView y = one_d_y ? host_view(Y.data(), r.n) : host_view(Y.data(), r.n, r.t);
  const ArrayView wv = host_view(w.data(), r.n);
  lr.fit(ctx, host_view(X.data(), r.n, r.d), y, r.w.empty() ? nullptr : &wv);
  return lr;
}

TEST(LinearRegression, AllAlgorithmsMatchTheReferenceFloat64) {
  GPUML_FRESH_RNG(rng);
  Context ctx = Context::cpu();
  for (int trial = 0; trial < 3; ++trial) {
    const int64_t n = uniform_int(rng, 40, 400), d = uniform_int(rng, 1, 12), t = uniform_int(rng, 1, 3);
    Regression r = make_regression(rng, n, d, t);
    if (trial == 1) {  // weighted
      r.w.resize(n);
      for (auto& v : r.w) v = test::uniform_real(rng, 0.1, 3.0);
    }
    for (bool fit_intercept : {true, false}) {
      const test::ReferenceFit ref = reference_fit(r, fit_intercept);
      for (const char* algorithm : {"auto", "eig", "qr", "svd"}) {
        SCOPED_TRACE(std::string(algorithm) + " n=" + std::to_string(n) + " d=" + std::to_string(d) +
                     " t=" + std::to_string(t) + " intercept=" + std::to_string(fit_intercept));
        LinearRegression lr = fit_lr<double>(ctx, r, algorithm, fit_intercept);
        // Well-conditioned (cond(X) < ~20) in double: every route is accurate to ~1e-12.
        EXPECT_LT(max_rel_diff(to_doubles(lr.coef()), ref.coef), 1e-9);
        EXPECT_LT(max_rel_diff(to_doubles(lr.intercept()), ref.intercept), 1e-9);
        EXPECT_EQ(lr.rank(), d);
        EXPECT_EQ(lr.n_features_in(), d);
        ASSERT_EQ(lr.coef().spec().ndim, 2);
        EXPECT_EQ(lr.coef().spec().shape[0], t);
        // Singular values of the centered weighted X (from λ = s² for eig: 1e-7 relative).
        const std::vector<double> s = to_doubles(lr.singular_values());
        ASSERT_EQ(static_cast<int64_t>(s.size()), std::min(n, d));
        for (int64_t i = 0; i < std::min(n, d); ++i)
          EXPECT_NEAR(s[i], ref.singular_values[i], 1e-7 * ref.singular_values[0]);
        if (!fit_intercept) {
          for (double v : to_doubles(lr.intercept())) EXPECT_EQ(v, 0.0);
        }
      }
    }
  }
}

TEST(LinearRegression, OneDimensionalYAndPredict) {
  GPUML_FRESH_RNG(rng);
  Context ctx = Context::cpu();
  const int64_t n = uniform_int(rng, 30, 300), d = uniform_int(rng, 1, 8);
  const Regression r = make_regression(rng, n, d, 1);
  LinearRegression lr = fit_lr<double>(ctx, r, "auto", true, /*one_d_y=*/true);
  EXPECT_EQ(lr.coef().spec().ndim, 1);
  EXPECT_EQ(lr.coef().spec().shape[0], d);
  EXPECT_EQ(lr.intercept().spec().ndim, 0);
  EXPECT_EQ(lr.output_spec("predict", n).ndim, 1);
  std::vector<double> out(n);
  lr.predict(ctx, host_view(r.X.data(), n, d), host_view(out.data(), n));
  const std::vector<double> coef = to_doubles(lr.coef());
  const double b = to_doubles(lr.intercept())[0];
  for (int64_t i = 0; i < n; ++i) {
    double expected = b;
    for (int64_t j = 0; j < d; ++j) expected += r.X[i * d + j] * coef[j];
    EXPECT_NEAR(out[i], expected, 1e-10 * (1 + std::abs(expected)));  // summation order only
  }
}

TEST(LinearRegression, Float32MatchesTheFloat64Reference) {
  GPUML_FRESH_RNG(rng);
  Context ctx = Context::cpu();
  const int64_t n = uniform_int(rng, 200, 2000), d = uniform_int(rng, 2, 10), t = 2;
  Regression r = make_regression(rng, n, d, t);
  // The reference solves the float32-rounded data, so only float32 arithmetic separates them.
  for (auto& v : r.X) v = static_cast<float>(v);
  for (auto& v : r.Y) v = static_cast<float>(v);
  const test::ReferenceFit ref = reference_fit(r, true);
  for (const char* algorithm : {"auto", "eig", "qr", "svd"}) {
    SCOPED_TRACE(algorithm);
    LinearRegression lr = fit_lr<float>(ctx, r, algorithm);
    EXPECT_EQ(lr.coef().dtype(), DType::float32);
    // cond(X) < ~20, eps(float32) = 6e-8: errors ~1e-6; the normal equations square cond.
    EXPECT_LT(max_rel_diff(to_doubles(lr.coef()), ref.coef), 2e-4);
    EXPECT_LT(max_rel_diff(to_doubles(lr.intercept()), ref.intercept), 2e-4);
  }
}

TEST(LinearRegression, SingularValuesComputedOnFirstUseAreTheSameFromManyThreads) {
  // "eig" and "qr" leave singular_values_ to first use: many threads asking at once (as
  // concurrent C ABI calls may) all get the one array, equal to the reference, and a serialized
  // copy carries it.
  GPUML_FRESH_RNG(rng);
  Context ctx = Context::cpu();
  const int64_t n = uniform_int(rng, 200, 2000), d = uniform_int(rng, 2, 12);
  const Regression r = make_regression(rng, n, d, 1);
  const test::ReferenceFit ref = reference_fit(r, true);
  for (const char* algorithm : {"eig", "qr"}) {
    SCOPED_TRACE(algorithm);
    const LinearRegression lr = fit_lr<double>(ctx, r, algorithm);
    std::vector<const HostArray*> seen(8, nullptr);
    std::vector<std::thread> threads;
    for (std::size_t t = 0; t < seen.size(); ++t)
      threads.emplace_back([&, t] { seen[t] = &lr.attribute("singular_values_"); });
    for (auto& thread : threads) thread.join();
    for (const HostArray* a : seen) EXPECT_EQ(a, seen.front());
    const std::vector<double> s = to_doubles(*seen.front());
    ASSERT_EQ(static_cast<int64_t>(s.size()), d);
    for (int64_t i = 0; i < d; ++i)  // as in the reference tests above: double, well conditioned
      EXPECT_NEAR(s[i], ref.singular_values[i], 1e-7 * ref.singular_values[0]) << i;
    const std::vector<uint8_t> bytes = serialize(lr);
    EXPECT_EQ(to_doubles(deserialize(bytes.data(), bytes.size())->attribute("singular_values_")), s);
  }
}

TEST(LinearRegression, Float32FarFromTheOriginStaysAccurate) {
  GPUML_FRESH_RNG(rng);
  Context ctx = Context::cpu();
  const int64_t n = uniform_int(rng, 500, 3000), d = uniform_int(rng, 2, 6);
  Regression r = make_regression(rng, n, d, 1, /*offset=*/1e4);
  for (auto& v : r.X) v = static_cast<float>(v);
  for (auto& v : r.Y) v = static_cast<float>(v);
  const test::ReferenceFit ref = reference_fit(r, true);
  for (const char* algorithm : {"auto", "eig", "qr", "svd"}) {
    SCOPED_TRACE(algorithm);
    LinearRegression lr = fit_lr<float>(ctx, r, algorithm);
    // Centering first keeps float32 accurate: without it XᵀX (entries ~1e8 n) would lose all digits
    // of the spread (~1). Coefficients to 1e-3; predictions to 1e-2 of y's spread, plus the
    // float32 rounding of an intercept of size ~1e4.
    EXPECT_LT(max_rel_diff(to_doubles(lr.coef()), ref.coef), 1e-3);
    std::vector<float> Xf(r.X.begin(), r.X.end()), out(n);
    lr.predict(ctx, host_view(Xf.data(), n, d), host_view(out.data(), n, 1));
    double spread = 0, y_mean = 0;
    for (int64_t i = 0; i < n; ++i) y_mean += r.Y[i] / n;
    for (int64_t i = 0; i < n; ++i) spread = std::max(spread, std::abs(r.Y[i] - y_mean));
    const double tol = 1e-2 * spread + 8 * std::numeric_limits<float>::epsilon() * std::abs(ref.intercept[0]);
    for (int64_t i = 0; i < n; ++i) {
      double expected = ref.intercept[0];
      for (int64_t j = 0; j < d; ++j) expected += r.X[i * d + j] * ref.coef(0, j);
      ASSERT_NEAR(out[i], expected, tol) << "row " << i;
    }
  }
}

TEST(LinearRegression, Float32FarFromTheOriginWithUnrepresentativeFirstRows) {
  // The Gram routes center on the mean of the first 4096 rows and correct the Gram matrix
  // afterwards: rows sorted by the first feature make that shift miss the true mean by ~1.5
  // standard deviations, which must not cost accuracy.
  GPUML_FRESH_RNG(rng);
  Context ctx = Context::cpu();
  const int64_t n = uniform_int(rng, 9000, 20000), d = uniform_int(rng, 2, 6);
  Regression r = make_regression(rng, n, d, 1, /*offset=*/1e4);
  std::vector<int64_t> order(n);
  for (int64_t i = 0; i < n; ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return r.X[a * d] < r.X[b * d]; });
  Regression sorted = r;
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < d; ++j) sorted.X[i * d + j] = static_cast<float>(r.X[order[i] * d + j]);
    sorted.Y[i] = static_cast<float>(r.Y[order[i]]);
  }
  const test::ReferenceFit ref = reference_fit(sorted, true);
  for (const char* algorithm : {"auto", "eig"}) {
    SCOPED_TRACE(algorithm);
    LinearRegression lr = fit_lr<float>(ctx, sorted, algorithm);
    // As in Float32FarFromTheOriginStaysAccurate: 1e-3 covers float32 rounding of centered data.
    EXPECT_LT(max_rel_diff(to_doubles(lr.coef()), ref.coef), 1e-3);
  }
}

// X = X0 M with M = U diag(s) (U random orthogonal, s log-spaced from 1 down to 1/cond): a
// chosen condition number, and coefficients of size up to ~cond.
Regression ill_conditioned(std::mt19937_64& rng, int64_t n, int64_t d, double cond) {
  Regression r = make_regression(rng, n, d, 2);
  Eigen::MatrixXd Z(d, d);
  std::normal_distribution<double> normal(0.0, 1.0);
  for (int64_t i = 0; i < d * d; ++i) Z(i % d, i / d) = normal(rng);
  const Eigen::MatrixXd U = Eigen::HouseholderQR<Eigen::MatrixXd>(Z).householderQ();
  Eigen::VectorXd s(d);
  for (int64_t j = 0; j < d; ++j) s[j] = std::pow(cond, -static_cast<double>(j) / std::max<int64_t>(1, d - 1));
  const Eigen::MatrixXd M = U * s.asDiagonal();
  Eigen::Map<Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>> X(r.X.data(), n, d);
  X = (X * M).eval();
  return r;
}

// "qr" is Cholesky QR (two or three passes) while that converges, Householder QR beyond: both
// routes against the complete orthogonal decomposition, with the rank and singular values.
TEST(LinearRegression, QrOnIllConditionedXMatchesTheReference) {
  GPUML_FRESH_RNG(rng);
  std::vector<Context> contexts = {Context::cpu()};
  if (cuda_device_count() > 0) contexts.push_back(Context::cuda(0));
  for (Context& ctx : contexts) {
    // cond 1e3 and 1e6: Cholesky QR well inside its textbook bound (cond² ≪ 1/eps); 1e10: beyond it,
    // where only the near-identity test of the later passes vouches for R. (Rank-deficient X, where
    // the Cholesky factorization breaks down and Householder QR takes over, is tested below.)
    for (double cond : {1e3, 1e6, 1e10}) {
      const int64_t n = uniform_int(rng, 200, 800), d = uniform_int(rng, 3, 12);
      const Regression r = ill_conditioned(rng, n, d, cond);
      SCOPED_TRACE("cond=" + std::to_string(cond) + " n=" + std::to_string(n) + " d=" + std::to_string(d) +
                   (ctx.is_cuda() ? " cuda" : " cpu"));
      const test::ReferenceFit ref = reference_fit(r, true);
      LinearRegression lr = fit_lr<double>(ctx, r, "qr");
      EXPECT_EQ(lr.rank(), d);
      // Backward-stable solvers in double: coefficients agree to ~eps * cond² * (residual / (|X| |coef|))
      // + eps * cond, i.e. ~1e-16 * cond * 1e2 at most here, relative to the largest coefficient.
      const std::vector<double> coef = to_doubles(lr.coef());
      double coef_max = 0;
      for (Eigen::Index i = 0; i < ref.coef.size(); ++i) coef_max = std::max(coef_max, std::abs(ref.coef(i / d, i % d)));
      for (Eigen::Index i = 0; i < ref.coef.size(); ++i)
        EXPECT_NEAR(coef[i], ref.coef(i / d, i % d), 1e-13 * cond * coef_max) << i;
      // Singular values to ~eps * s_max absolute (an SVD of R when cond is large).
      const std::vector<double> sv = to_doubles(lr.singular_values());
      ASSERT_EQ(static_cast<int64_t>(sv.size()), d);
      for (int64_t i = 0; i < d; ++i) EXPECT_NEAR(sv[i], ref.singular_values[i], 1e-12 * ref.singular_values[0]) << i;
    }
    // float32, cond 100: Cholesky QR in float32; errors ~eps_32 * cond * (a few), relative.
    Regression r = ill_conditioned(rng, uniform_int(rng, 500, 2000), uniform_int(rng, 3, 10), 100.0);
    for (auto& v : r.X) v = static_cast<float>(v);
    for (auto& v : r.Y) v = static_cast<float>(v);
    const test::ReferenceFit ref = reference_fit(r, true);
    LinearRegression lr = fit_lr<float>(ctx, r, "qr");
    const std::vector<double> coef = to_doubles(lr.coef());
    double coef_max = 0;
    for (Eigen::Index i = 0; i < ref.coef.size(); ++i) coef_max = std::max(coef_max, std::abs(ref.coef(i / r.d, i % r.d)));
    for (Eigen::Index i = 0; i < ref.coef.size(); ++i)
      EXPECT_NEAR(coef[i], ref.coef(i / r.d, i % r.d), 1e-4 * coef_max) << i;
  }
}

TEST(LinearRegression, IntegerSampleWeightsEqualRepeatedRows) {
  GPUML_FRESH_RNG(rng);
  Context ctx = Context::cpu();
  const int64_t n = uniform_int(rng, 30, 200), d = uniform_int(rng, 1, 6), t = 2;
  Regression weighted = make_regression(rng, n, d, t);
  weighted.w.resize(n);
  Regression repeated;
  repeated.d = d, repeated.t = t;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t times = i < 2 * d + 2 ? 1 : uniform_int(rng, 0, 3);  // enough rows stay for full rank
    weighted.w[i] = static_cast<double>(times);
    for (int64_t c = 0; c < times; ++c) {
      repeated.X.insert(repeated.X.end(), weighted.X.begin() + i * d, weighted.X.begin() + (i + 1) * d);
      repeated.Y.insert(repeated.Y.end(), weighted.Y.begin() + i * t, weighted.Y.begin() + (i + 1) * t);
      ++repeated.n;
    }
  }
  for (const char* algorithm : {"eig", "qr", "svd"}) {
    SCOPED_TRACE(algorithm);
    LinearRegression a = fit_lr<double>(ctx, weighted, algorithm);
    LinearRegression b = fit_lr<double>(ctx, repeated, algorithm);
    const std::vector<double> ca = to_doubles(a.coef()), cb = to_doubles(b.coef());
    const std::vector<double> ia = to_doubles(a.intercept()), ib = to_doubles(b.intercept());
    for (std::size_t i = 0; i < ca.size(); ++i) EXPECT_NEAR(ca[i], cb[i], 1e-9 * (1 + std::abs(cb[i])));  // same problem
    for (std::size_t i = 0; i < ia.size(); ++i) EXPECT_NEAR(ia[i], ib[i], 1e-9 * (1 + std::abs(ib[i])));
  }
}

// X with exactly dependent columns (a copy and a doubled copy: both exact in floating point).
Regression rank_deficient(std::mt19937_64& rng, int64_t n, int64_t d_free) {
  Regression base = make_regression(rng, n, d_free, 2);
  Regression r;
  r.n = n, r.d = d_free + 2, r.t = 2, r.Y = base.Y;
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < d_free; ++j) r.X.push_back(base.X[i * d_free + j]);
    r.X.push_back(base.X[i * d_free]);
    r.X.push_back(2 * base.X[i * d_free + d_free - 1]);
  }
  return r;
}

TEST(LinearRegression, RankDeficientXGivesTheMinimumNormSolution) {
  GPUML_FRESH_RNG(rng);
  Context ctx = Context::cpu();
  const int64_t d_free = uniform_int(rng, 2, 6);
  const Regression r = rank_deficient(rng, uniform_int(rng, 50, 300), d_free);
  const test::ReferenceFit ref = reference_fit(r, true);
  for (const char* algorithm : {"svd", "auto"}) {
    SCOPED_TRACE(algorithm);
    LinearRegression lr = fit_lr<double>(ctx, r, algorithm);
    EXPECT_EQ(lr.rank(), d_free);
    // The minimum-norm solution is unique: cond of the nonzero part < ~20, double.
    EXPECT_LT(max_rel_diff(to_doubles(lr.coef()), ref.coef), 1e-8);
    EXPECT_LT(max_rel_diff(to_doubles(lr.intercept()), ref.intercept), 1e-8);
  }
  GPUML_EXPECT_ERROR(fit_lr<double>(ctx, r, "eig"), ErrorCode::invalid_argument);
  GPUML_EXPECT_ERROR(fit_lr<double>(ctx, r, "qr"), ErrorCode::invalid_argument);
  try {
    fit_lr<double>(ctx, r, "eig");
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("svd"), std::string::npos) << e.what();  // names the way out
  }
}

TEST(LinearRegression, FewerSamplesThanFeatures) {
  GPUML_FRESH_RNG(rng);
  Context ctx = Context::cpu();
  const int64_t n = uniform_int(rng, 5, 20), d = n + uniform_int(rng, 1, 20);
  const Regression r = make_regression(rng, n, d, 1);
  const test::ReferenceFit ref = reference_fit(r, true);
  for (const char* algorithm : {"svd", "auto"}) {
    SCOPED_TRACE(algorithm);
    LinearRegression lr = fit_lr<double>(ctx, r, algorithm);
    EXPECT_EQ(lr.rank(), n - 1);  // centering removes one dimension
    EXPECT_EQ(static_cast<int64_t>(to_doubles(lr.singular_values()).size()), n);
    // Pseudo-inverse of the Gram matrix: squares cond of the nonzero part (< ~50 here).
    EXPECT_LT(max_rel_diff(to_doubles(lr.coef()), ref.coef), 1e-7);
  }
  GPUML_EXPECT_ERROR(fit_lr<double>(ctx, r, "qr"), ErrorCode::invalid_argument);
  GPUML_EXPECT_ERROR(fit_lr<double>(ctx, r, "eig"), ErrorCode::invalid_argument);
}

TEST(LinearRegression, SerializationRoundTrip) {
  GPUML_FRESH_RNG(rng);
  Context ctx = Context::cpu();
  const int64_t n = uniform_int(rng, 20, 100), d = uniform_int(rng, 1, 5);
  const Regression r = make_regression(rng, n, d, 2);
  LinearRegression lr = fit_lr<float>(ctx, r, "qr", false);
  const std::vector<uint8_t> bytes = serialize(lr);
  std::unique_ptr<Estimator> back = deserialize(bytes.data(), bytes.size());
  EXPECT_STREQ(back->kind(), "linear_regression");
  EXPECT_EQ(back->get_params_json(), lr.get_params_json());
  for (const std::string& name : lr.attribute_names()) {
    EXPECT_EQ(back->attribute(name).bytes(), lr.attribute(name).bytes()) << name;
    EXPECT_EQ(std::memcmp(back->attribute(name).as<void>(), lr.attribute(name).as<void>(), lr.attribute(name).bytes()), 0)
        << name;
  }
  std::vector<float> Xf(r.X.begin(), r.X.end()), a(n * 2), b(n * 2);
  lr.predict(ctx, host_view(Xf.data(), n, d), host_view(a.data(), n, 2));
  back->predict(ctx, host_view(Xf.data(), n, d), host_view(b.data(), n, 2));
  EXPECT_EQ(a, b);  // the same attributes, the same arithmetic
}

TEST(LinearRegression, ParamsJson) {
  std::unique_ptr<Estimator> est = make_estimator("linear_regression", R"({"fit_intercept": false, "algorithm": "qr"})");
  auto* lr = dynamic_cast<LinearRegression*>(est.get());
  ASSERT_NE(lr, nullptr);
  EXPECT_FALSE(lr->params().fit_intercept);
  EXPECT_EQ(lr->params().algorithm, "qr");
  EXPECT_EQ(make_estimator("linear_regression", est->get_params_json())->get_params_json(), est->get_params_json());
  GPUML_EXPECT_ERROR(make_estimator("linear_regression", R"({"algorithm": "lsqr"})"), ErrorCode::invalid_argument);
  GPUML_EXPECT_ERROR(make_estimator("linear_regression", R"({"alpha": 1})"), ErrorCode::invalid_argument);
  GPUML_EXPECT_ERROR(make_estimator("linear_regression", R"({"fit_intercept": 3})"), ErrorCode::invalid_argument);
  GPUML_EXPECT_ERROR(make_estimator("linear_regression", "{not json"), ErrorCode::invalid_argument);
  GPUML_EXPECT_ERROR(LinearRegression({true, "cholesky"}), ErrorCode::invalid_argument);
}

// LinearRegression's parameter table: scikit-learn 1.9's parameters in its order, then gpuml's
// algorithm; copy_X and n_jobs are read and written back, accepted without effect on the fit.
TEST(LinearRegression, ParameterTableTakesEveryScikitLearnParameter) {
  GPUML_FRESH_RNG(rng);
  const nlohmann::json schema = nlohmann::json::parse(estimator_params_schema("linear_regression"));
  std::vector<std::string> names;
  for (const auto& row : schema["parameters"]) names.push_back(row["name"]);
  EXPECT_EQ(names, (std::vector<std::string>{"fit_intercept", "copy_X", "tol", "n_jobs", "positive", "algorithm"}));
  const int64_t n_jobs = uniform_int(rng, -4, 16);
  const nlohmann::json given = {{"fit_intercept", false}, {"copy_X", false}, {"tol", 1e-8},
                                {"n_jobs", n_jobs},       {"positive", false}, {"algorithm", "qr"}};
  EXPECT_EQ(nlohmann::json::parse(make_estimator("linear_regression", given.dump())->get_params_json()), given);

  Context ctx = Context::cpu();
  const int64_t n = uniform_int(rng, 20, 80), d = uniform_int(rng, 1, 6);
  const Regression r = make_regression(rng, n, d, 1);
  LinearRegressionParams other;
  other.copy_X = false;
  other.n_jobs = n_jobs;
  LinearRegression plain, accepting(other);
  plain.fit(ctx, host_view(r.X.data(), n, d), host_view(r.Y.data(), n));
  accepting.fit(ctx, host_view(r.X.data(), n, d), host_view(r.Y.data(), n));
  EXPECT_EQ(to_doubles(plain.coef()), to_doubles(accepting.coef()));  // the same arithmetic

  try {
    make_estimator("linear_regression", R"({"n_jobs": 1.5})");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "linear_regression parameter 'n_jobs' must be null or an integer, got 1.5");
  }
  GPUML_EXPECT_ERROR(make_estimator("linear_regression", R"({"copy_X": "yes"})"), ErrorCode::invalid_argument);
}

TEST(LinearRegression, ErrorPaths) {
  GPUML_FRESH_RNG(rng);
  Context ctx = Context::cpu();
  const int64_t n = uniform_int(rng, 10, 50), d = uniform_int(rng, 2, 5);
  Regression r = make_regression(rng, n, d, 1);
  LinearRegression lr;
  std::vector<double> out(n), w(n, 1.0);
  const ArrayView X = host_view(r.X.data(), n, d), y = host_view(r.Y.data(), n);

  GPUML_EXPECT_ERROR(lr.predict(ctx, X, host_view(out.data(), n)), ErrorCode::not_fitted);
  GPUML_EXPECT_ERROR(lr.coef(), ErrorCode::not_fitted);
  GPUML_EXPECT_ERROR(lr.output_spec("predict", n), ErrorCode::not_fitted);

  std::vector<double> bad = r.X;
  bad[uniform_int(rng, 0, n * d - 1)] = std::numeric_limits<double>::quiet_NaN();
  GPUML_EXPECT_ERROR(lr.fit(ctx, host_view(bad.data(), n, d), y), ErrorCode::invalid_argument);
  std::vector<double> bad_y = r.Y;
  bad_y[uniform_int(rng, 0, n - 1)] = std::numeric_limits<double>::infinity();
  GPUML_EXPECT_ERROR(lr.fit(ctx, X, host_view(bad_y.data(), n)), ErrorCode::invalid_argument);
  std::vector<double> bad_w = w;
  bad_w[uniform_int(rng, 0, n - 1)] = std::numeric_limits<double>::quiet_NaN();
  ArrayView bw = host_view(bad_w.data(), n);
  GPUML_EXPECT_ERROR(lr.fit(ctx, X, y, &bw), ErrorCode::invalid_argument);
  bad_w = w;
  bad_w[0] = -1.0;
  GPUML_EXPECT_ERROR(lr.fit(ctx, X, y, &bw), ErrorCode::invalid_argument);
  ArrayView short_w = host_view(w.data(), n - 1);
  GPUML_EXPECT_ERROR(lr.fit(ctx, X, y, &short_w), ErrorCode::invalid_argument);
  GPUML_EXPECT_ERROR(lr.fit(ctx, X, host_view(r.Y.data(), n - 1)), ErrorCode::invalid_argument);  // y length
  GPUML_EXPECT_ERROR(lr.fit(ctx, X, host_view(r.Y.data(), n, 0)), ErrorCode::invalid_argument);   // 0 targets
  GPUML_EXPECT_ERROR(lr.fit(ctx, host_view(r.X.data(), 0, d), host_view(r.Y.data(), 0)), ErrorCode::invalid_argument);
  GPUML_EXPECT_ERROR(lr.fit(ctx, host_view(r.X.data(), n, 0), y), ErrorCode::invalid_argument);
  GPUML_EXPECT_ERROR(static_cast<Estimator&>(lr).fit(ctx, X, nullptr, nullptr), ErrorCode::invalid_argument);
  EXPECT_FALSE(lr.fitted());  // failed fits leave nothing behind

  lr.fit(ctx, X, y);
  GPUML_EXPECT_ERROR(lr.predict(ctx, host_view(r.X.data(), n * d / (d + 1), d + 1), host_view(out.data(), n)),
                     ErrorCode::invalid_argument);  // wrong width
  GPUML_EXPECT_ERROR(lr.attribute("alpha_"), ErrorCode::invalid_argument);

  auto attrs = [&lr]() {
    std::map<std::string, HostArray> a;
    for (const std::string& name : lr.attribute_names()) a[name] = test::copy_array(lr.attribute(name));
    return a;
  };
  LinearRegression restored;
  restored.restore(attrs());
  EXPECT_TRUE(restored.fitted());
  auto missing = attrs();
  missing.erase("rank_");
  GPUML_EXPECT_ERROR(LinearRegression().restore(std::move(missing)), ErrorCode::invalid_argument);
  auto extra = attrs();
  extra["labels_"] = test::copy_array(lr.attribute("rank_"));
  GPUML_EXPECT_ERROR(LinearRegression().restore(std::move(extra)), ErrorCode::invalid_argument);
  auto wrong = attrs();
  *wrong["n_features_in_"].as<int64_t>() = d + 1;
  GPUML_EXPECT_ERROR(LinearRegression().restore(std::move(wrong)), ErrorCode::invalid_argument);
}

// Extreme magnitudes (issue 22, item 3): X and y times 2^e fit the same coefficients, with the
// intercept and singular values times 2^e, on every route and with weights. Before the
// power-of-two rescaling, XᵀX and the Householder norms underflowed (NaN coefficients or 1e-5
// errors at 2^-531 ~ 1e-160 and below) or overflowed (NaN for "svd", errors for the others).
Regression scaled(const Regression& r, int exponent) {
  Regression out = r;
  for (double& v : out.X) v = std::ldexp(v, exponent);
  for (double& v : out.Y) v = std::ldexp(v, exponent);
  return out;
}

void expect_scaled_fit(const LinearRegression& unit, const LinearRegression& fit, int exponent) {
  // Double, cond < ~20: the two fits differ only by rounding (1e-10 leaves room for the routes).
  const std::vector<double> c0 = to_doubles(unit.coef()), c1 = to_doubles(fit.coef());
  for (std::size_t i = 0; i < c0.size(); ++i) EXPECT_NEAR(c1[i], c0[i], 1e-10 * (1 + std::abs(c0[i]))) << "coef " << i;
  const std::vector<double> b0 = to_doubles(unit.intercept()), b1 = to_doubles(fit.intercept());
  for (std::size_t i = 0; i < b0.size(); ++i)
    EXPECT_NEAR(std::ldexp(b1[i], -exponent), b0[i], 1e-10 * (1 + std::abs(b0[i]))) << "intercept " << i;
  const std::vector<double> s0 = to_doubles(unit.singular_values()), s1 = to_doubles(fit.singular_values());
  for (std::size_t i = 0; i < s0.size(); ++i) EXPECT_NEAR(std::ldexp(s1[i], -exponent), s0[i], 1e-10 * s0[0]);
  EXPECT_EQ(unit.rank(), fit.rank());
}

TEST(LinearRegression, ExtremeMagnitudesFitTheUnitScaleModel) {
  GPUML_FRESH_RNG(rng);
  Context cpu = Context::cpu();
  Regression r = make_regression(rng, 300, 6, 2, 1.5);
  r.w.resize(r.n);
  for (auto& v : r.w) v = test::uniform_real(rng, 0.5, 2.0);
  for (const char* algorithm : {"auto", "eig", "qr", "svd"}) {
    const LinearRegression unit = fit_lr<double>(cpu, r, algorithm);
    for (int exponent : {-997, -664, -531, -332, 332, 515, 664, 997}) {
      SCOPED_TRACE(std::string(algorithm) + " at 2^" + std::to_string(exponent));
      expect_scaled_fit(unit, fit_lr<double>(cpu, scaled(r, exponent), algorithm), exponent);
    }
  }
  // Fewer rows than features ("svd": the SVD of A on the host, whose s² overflowed in the solve).
  const Regression wide = make_regression(rng, 4, 9, 1);
  const LinearRegression unit = fit_lr<double>(cpu, wide, "svd");
  for (int exponent : {-997, 997}) expect_scaled_fit(unit, fit_lr<double>(cpu, scaled(wide, exponent), "svd"), exponent);
}

TEST(LinearRegression, ExtremeMagnitudesGpuMatchesCpu) {
  GPUML_CUDA_CONTEXT_OR_SKIP(gpu);
  GPUML_FRESH_RNG(rng);
  Context cpu = Context::cpu();
  const Regression r = make_regression(rng, 500, 8, 1, 1.5);
  for (const char* algorithm : {"auto", "eig", "qr", "svd"})
    for (int exponent : {-997, -531, 515, 997}) {
      SCOPED_TRACE(std::string(algorithm) + " at 2^" + std::to_string(exponent));
      const Regression s = scaled(r, exponent);
      expect_scaled_fit(fit_lr<double>(cpu, s, algorithm), fit_lr<double>(gpu, s, algorithm), 0);
    }
}

TEST(LinearRegression, GpuMatchesCpu) {
  GPUML_CUDA_CONTEXT_OR_SKIP(gpu);
  GPUML_FRESH_RNG(rng);
  Context cpu = Context::cpu();
  const int64_t n = uniform_int(rng, 500, 5000), d = uniform_int(rng, 1, 40), t = uniform_int(rng, 1, 3);
  Regression r = make_regression(rng, n, d, t);
  r.w.resize(n);
  for (auto& v : r.w) v = test::uniform_real(rng, 0.0, 2.0);
  for (const char* algorithm : {"auto", "eig", "qr", "svd"}) {
    for (bool fit_intercept : {true, false}) {
      SCOPED_TRACE(std::string(algorithm) + (fit_intercept ? " intercept" : " no intercept"));
      LinearRegression a = fit_lr<double>(cpu, r, algorithm, fit_intercept);
      LinearRegression b = fit_lr<double>(gpu, r, algorithm, fit_intercept);
      // Same problem, different summation orders: double, cond < ~20.
      const std::vector<double> ca = to_doubles(a.coef()), cb = to_doubles(b.coef());
      for (std::size_t i = 0; i < ca.size(); ++i) EXPECT_NEAR(ca[i], cb[i], 1e-9 * (1 + std::abs(ca[i])));
      EXPECT_EQ(a.rank(), b.rank());
      LinearRegression af = fit_lr<float>(cpu, r, algorithm, fit_intercept);
      LinearRegression bf = fit_lr<float>(gpu, r, algorithm, fit_intercept);
      // float32: rounding of sums over n rows, squared by the normal equations for eig.
      const std::vector<double> fa = to_doubles(af.coef()), fb = to_doubles(bf.coef());
      for (std::size_t i = 0; i < fa.size(); ++i) EXPECT_NEAR(fa[i], fb[i], 1e-3 * (1 + std::abs(fa[i])));
      // predict on the device equals predict on the host for the same coefficients.
      std::vector<double> pa(n * t), pb(n * t);
      a.predict(cpu, host_view(r.X.data(), n, d), host_view(pa.data(), n, t));
      a.predict(gpu, host_view(r.X.data(), n, d), host_view(pb.data(), n, t));
      for (int64_t i = 0; i < n * t; ++i) EXPECT_NEAR(pa[i], pb[i], 1e-10 * (1 + std::abs(pa[i])));
    }
  }
}

}  // namespace
}  // namespace gpuml

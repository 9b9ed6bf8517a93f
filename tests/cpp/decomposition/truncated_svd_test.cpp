// TruncatedSVD: both algorithms against an independent reference (JacobiSVD of the uncentered
// data in long double; explained variances recomputed here from the reference vectors), errors,
// serialization, and CUDA against the CPU backend.
#include <gtest/gtest.h>

#include <functional>
#include <limits>

#include <cmath>

#include <nlohmann/json.hpp>

#include "decomposition/decomposition_reference.hpp"
#include "test_util.hpp"

namespace gpuml {
namespace {

using test::reference_svd;
using test::ReferenceSvd;
using test::spectrum_data;

std::vector<double> values(const HostArray& a) {
  const int64_t count = static_cast<int64_t>(a.bytes() / (a.dtype() == DType::float32 ? 4 : 8));
  std::vector<double> out(static_cast<std::size_t>(count));
  for (int64_t i = 0; i < count; ++i)
    out[i] = a.dtype() == DType::float32 ? a.as<const float>()[i] : a.as<const double>()[i];
  return out;
}

// Variance (ddof 0) of the column x·v over the rows of X.
double projected_variance(const std::vector<double>& X, int64_t n, int64_t d, const std::vector<double>& v) {
  long double sum = 0, sq = 0;
  for (int64_t i = 0; i < n; ++i) {
    long double p = 0;
    for (int64_t j = 0; j < d; ++j) p += static_cast<long double>(X[i * d + j]) * v[j];
    sum += p, sq += p * p;
  }
  return static_cast<double>(sq / n - (sum / n) * (sum / n));
}

template <typename T>
TruncatedSVD fit_tsvd(Context& ctx, const std::vector<double>& X, int64_t n, int64_t d, const std::string& algorithm,
                      int64_t k) {
  std::vector<T> Xt(X.begin(), X.end());
  TruncatedSVDParams p;
  p.n_components = k;
  p.algorithm = algorithm;
  p.random_state = 11;
  TruncatedSVD t(p);
  t.fit(ctx, host_view(Xt.data(), n, d));
  return t;
}

void expect_matches(const TruncatedSVD& t, const std::vector<double>& X, int64_t n, int64_t d, double rtol, double vtol) {
  const ReferenceSvd ref = reference_svd(X, n, d, false);
  const std::vector<double> comps = values(t.components()), var = values(t.explained_variance()),
                            ratio = values(t.explained_variance_ratio()), s = values(t.singular_values());
  double total = 0;  // summed column variances of X
  for (int64_t j = 0; j < d; ++j) {
    std::vector<double> e(d, 0.0);
    e[j] = 1;
    total += projected_variance(X, n, d, e);
  }
  for (int64_t i = 0; i < static_cast<int64_t>(s.size()); ++i) {
    EXPECT_NEAR(s[i], ref.s[i], rtol * ref.s[i]) << i;
    const double v = projected_variance(X, n, d, ref.rows[i]);
    EXPECT_NEAR(var[i], v, rtol * v + 1e-12 * total) << i;
    EXPECT_NEAR(ratio[i], v / total, rtol * v / total + 1e-12) << i;
    for (int64_t j = 0; j < d; ++j) EXPECT_NEAR(comps[i * d + j], ref.rows[i][j], vtol) << i << "," << j;
  }
}

TEST(TruncatedSVD, BothAlgorithmsMatchTheReference) {
  GPUML_FRESH_RNG(rng);
  const int64_t n = 300, d = 10;
  const std::vector<double> X = spectrum_data(rng, n, d, 2.0, 8.0, 0.5);  // the mean makes a dominant first direction
  Context ctx = Context::cpu();
  // full: exact, float64 (~1e-13; 1e-9 leaves room for d eps cond). randomized: 5 power
  // iterations, 10 oversamples of a 10-column matrix span it all: exact up to rounding too.
  expect_matches(fit_tsvd<double>(ctx, X, n, d, "full", 4), X, n, d, 1e-9, 1e-9);
  expect_matches(fit_tsvd<double>(ctx, X, n, d, "randomized", 4), X, n, d, 1e-9, 1e-8);
  // float32: ~eps * cond; 1e-4 / 1e-3 as in the PCA tests.
  std::vector<double> Xf = X;
  for (double& v : Xf) v = static_cast<float>(v);
  expect_matches(fit_tsvd<float>(ctx, Xf, n, d, "full", 4), Xf, n, d, 1e-4, 1e-3);
  expect_matches(fit_tsvd<float>(ctx, Xf, n, d, "randomized", 4), Xf, n, d, 1e-4, 1e-3);
}

// arpack is the exact SVD (as "full"): the same bits.
TEST(TruncatedSVD, ArpackIsTheExactSvd) {
  GPUML_FRESH_RNG(rng);
  const int64_t n = 80, d = 12;
  const std::vector<double> X = spectrum_data(rng, n, d, 1.0, 6.0, 0.5);
  Context ctx = Context::cpu();
  const TruncatedSVD a = fit_tsvd<double>(ctx, X, n, d, "arpack", 5), f = fit_tsvd<double>(ctx, X, n, d, "full", 5);
  EXPECT_EQ(values(a.components()), values(f.components()));
  EXPECT_EQ(values(a.singular_values()), values(f.singular_values()));
  expect_matches(a, X, n, d, 1e-9, 1e-9);
}

TEST(TruncatedSVD, RandomizedOnAWideMatrix) {
  GPUML_FRESH_RNG(rng);
  // 40 columns, 3 components + 10 oversamples: a real range finder (not the whole space). The
  // spectrum falls ~1.2x per component, so 5 power iterations leave (s_14/s_4)^11 ~ 1e-4 on
  // the leading singular values: 1e-3.
  const int64_t n = 400, d = 40;
  const std::vector<double> X = spectrum_data(rng, n, d, 0.0, 20.0, 0.1);
  Context ctx = Context::cpu();
  const TruncatedSVD t = fit_tsvd<double>(ctx, X, n, d, "randomized", 3);
  const ReferenceSvd ref = reference_svd(X, n, d, false);
  const std::vector<double> s = values(t.singular_values());
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(s[i], ref.s[i], 1e-3 * ref.s[i]) << i;
}

TEST(TruncatedSVD, TransformAndInverse) {
  GPUML_FRESH_RNG(rng);
  const int64_t n = 60, d = 5;
  const std::vector<double> X = spectrum_data(rng, n, d, 1.0, 3.0, 1.0);
  Context ctx = Context::cpu();
  const TruncatedSVD t = fit_tsvd<double>(ctx, X, n, d, "full", 5);
  std::vector<double> Z(n * 5), back(n * d);
  t.transform(ctx, host_view(X.data(), n, d), host_view(Z.data(), n, 5));
  t.inverse_transform(ctx, host_view(Z.data(), n, 5), host_view(back.data(), n, d));
  for (int64_t i = 0; i < n * d; ++i) ASSERT_NEAR(back[i], X[i], 1e-10);  // all components: V Vᵀ = I
}

TEST(TruncatedSVD, ErrorsAndSerialization) {
  GPUML_FRESH_RNG(rng);
  const int64_t n = 30, d = 4;
  std::vector<double> X = spectrum_data(rng, n, d, 0.0, 1.0, 0.5);
  Context ctx = Context::cpu();
  EXPECT_THROW(fit_tsvd<double>(ctx, X, n, d, "full", 5), Error);           // n_components > n_features
  EXPECT_THROW(fit_tsvd<double>(ctx, X, n, d, "arnoldi", 2), Error);        // bad algorithm
  EXPECT_THROW(fit_tsvd<double>(ctx, X, n, d, "arpack", 4), Error);         // arpack: < min(n_samples, n_features)
  EXPECT_NO_THROW(fit_tsvd<double>(ctx, X, n, d, "full", 4));               // the exact SVD without arpack's rule
  EXPECT_THROW(make_estimator("truncated_svd", R"({"n_components": 0})"), Error);
  auto est = make_estimator("truncated_svd", R"({"n_components": 2, "random_state": 5})");
  est->fit(ctx, host_view(X.data(), n, d), nullptr, nullptr);
  const std::vector<uint8_t> bytes = serialize(*est);
  auto again = deserialize(bytes.data(), bytes.size());
  std::vector<double> a(n * 2), b(n * 2);
  est->transform(ctx, host_view(X.data(), n, d), host_view(a.data(), n, 2));
  again->transform(ctx, host_view(X.data(), n, d), host_view(b.data(), n, 2));
  EXPECT_EQ(a, b);
  X[7] = std::nan("");
  try {
    fit_tsvd<double>(ctx, X, n, d, "randomized", 2);
    FAIL() << "NaN accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
  }
}

// Every scikit-learn parameter is one of the C++ estimator's (issue 23: one parameter table per
// estimator): power_iteration_normalizer and tol (without effect) are accepted and written back;
// gpuml's older "full" still reads, though messages list scikit-learn's choices only.
TEST(TruncatedSVD, ParamsTakeEveryScikitLearnParameter) {
  for (const char* given :
       {R"({"n_components": 3, "algorithm": "arpack", "n_iter": 0, "n_oversamples": 1,
            "power_iteration_normalizer": "LU", "random_state": 4, "tol": 0.5})",
        R"({"n_components": 1, "algorithm": "full", "n_iter": 7, "n_oversamples": 10,
            "power_iteration_normalizer": "auto", "random_state": null, "tol": 0.0})"}) {
    SCOPED_TRACE(given);
    EXPECT_EQ(nlohmann::json::parse(make_estimator("truncated_svd", given)->get_params_json()),
              nlohmann::json::parse(given));
  }
  try {
    make_estimator("truncated_svd", R"({"algorithm": "lanczos"})");
    ADD_FAILURE() << "algorithm \"lanczos\" was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "truncated_svd parameter 'algorithm' must be \"arpack\" or \"randomized\", got \"lanczos\"");
  }
  TruncatedSVDParams p;
  p.tol = std::numeric_limits<double>::quiet_NaN();
  EXPECT_THROW(TruncatedSVD{p}, Error);
}

// n_oversamples past 2^53 is refused where params are read (count + n_oversamples overflowed int64).
TEST(TruncatedSVD, HugeOversamplesAreRefused) {
  for (int64_t bad : {std::numeric_limits<int64_t>::max(), int64_t{9007199254740993}}) {
    TruncatedSVDParams p;
    p.n_oversamples = bad;
    for (auto make : std::vector<std::function<void()>>{
             [&] { TruncatedSVD{p}; },
             [&] { make_estimator("truncated_svd", R"({"n_oversamples": )" + std::to_string(bad) + "}"); }}) {
      try {
        make();
        ADD_FAILURE() << "n_oversamples=" << bad << " was accepted";
      } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
        EXPECT_NE(std::string(e.what()).find("n_oversamples"), std::string::npos) << e.what();
      }
    }
  }
}

TEST(TruncatedSVD, GpuMatchesCpu) {
  GPUML_CUDA_CONTEXT_OR_SKIP(gpu);
  GPUML_FRESH_RNG(rng);
  const int64_t n = 5000, d = 48;
  const std::vector<double> X = spectrum_data(rng, n, d, 5.0, 10.0, 0.5);
  Context cpu = Context::cpu();
  for (const std::string algorithm : {"full", "arpack", "randomized"}) {
    SCOPED_TRACE(algorithm);
    const TruncatedSVD a = fit_tsvd<double>(cpu, X, n, d, algorithm, 6), b = fit_tsvd<double>(gpu, X, n, d, algorithm, 6);
    const std::vector<double> sa = values(a.singular_values()), sb = values(b.singular_values());
    for (int i = 0; i < 6; ++i) EXPECT_NEAR(sb[i], sa[i], 1e-10 * sa[i]);  // float64, same draws
    const std::vector<double> ea = values(a.explained_variance()), eb = values(b.explained_variance());
    for (int i = 0; i < 6; ++i) EXPECT_NEAR(eb[i], ea[i], 1e-9 * ea[i]);
  }
}

}  // namespace
}  // namespace gpuml

// The CUDA LogisticBackend against the CPU backend, primitive by primitive, on fresh random data
// (skipped without a GPU): loss_gradient on each of the CUDA backend's ways (the fused kernel
// with one or several gradient entries per thread, and the cuBLAS path), repeated calls with new
// coefficients, determinism, large scores, probabilities and predict_labels; loss_residuals
// (scores given, R separate or over Z) with its determinism.
//
// The backends are internal: this file reaches them through the src/ headers (their factories
// and detail::copy_bytes are exported for it).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "../backend_test_util.hpp"
#include "../../../src/linear_model/logistic_backend.hpp"
#include "test_util.hpp"

namespace gpuml {
namespace {

using test::cast_vector;
using test::to_device;
using test::to_host;
using test::uniform_int;
using test::uniform_real;



std::vector<double> normal_vector(std::mt19937_64& rng, std::size_t count, double sd) {
  std::normal_distribution<double> normal(0.0, sd);
  std::vector<double> v(count);
  for (auto& x : v) x = normal(rng);
  return v;
}

// Coefficients k x (d + 1) (intercept last) that keep the scores of N(0, 1) rows around 1.
std::vector<double> random_coef(std::mt19937_64& rng, int64_t d, int64_t k) {
  std::vector<double> coef = normal_vector(rng, static_cast<std::size_t>(k * (d + 1)), 1.0 / std::sqrt(static_cast<double>(d) + 1.0));
  return coef;
}

std::vector<int32_t> random_labels(std::mt19937_64& rng, int64_t n, int64_t k) {
  std::vector<int32_t> labels(n);
  for (auto& y : labels) y = static_cast<int32_t>(uniform_int(rng, 0, std::max<int64_t>(k, 2) - 1));
  return labels;
}

// One loss_gradient problem on both backends: host copies for the CPU, device copies for CUDA.
template <typename T>
struct Problem {
  int64_t n = 0, d = 0, k = 0;
  std::vector<T> X, w;  // w empty: unweighted
  std::vector<int32_t> labels;
  Buffer X_dev, w_dev, labels_dev;

  Problem(Context& gpu, const std::vector<double>& X_double, int64_t n_, int64_t d_, int64_t k_, std::vector<int32_t> labels_,
          const std::vector<double>& w_double)
      : n(n_), d(d_), k(k_), X(cast_vector<T>(X_double)), w(cast_vector<T>(w_double)), labels(std::move(labels_)) {
    X_dev = to_device(gpu, X);
    w_dev = to_device(gpu, w);
    labels_dev = to_device(gpu, labels);
  }
  const T* w_host() const { return w.empty() ? nullptr : w.data(); }
  const T* w_device() const { return w.empty() ? nullptr : w_dev.template as<T>(); }
  int64_t entries() const { return k * (d + 1); }

  // Σ_i w_i |x_ij| (Σ_i w_i for the intercept) per gradient entry: it bounds Σ_i |w_i r_ic x_ij|
  // (|r| <= 1), the scale of the rounding in a gradient entry whatever its cancellation.
  std::vector<double> gradient_scale() const {
    std::vector<double> column(d + 1, 0.0);
    for (int64_t i = 0; i < n; ++i) {
      const double wi = w.empty() ? 1.0 : static_cast<double>(w[i]);
      for (int64_t j = 0; j < d; ++j) column[j] += wi * std::abs(static_cast<double>(X[i * d + j]));
      column[d] += wi;
    }
    std::vector<double> scale(entries());
    for (int64_t c = 0; c < k; ++c)
      for (int64_t j = 0; j <= d; ++j) scale[c * (d + 1) + j] = column[j];
    return scale;
  }

  double cpu(const std::vector<double>& coef, std::vector<double>& grad) const {
    grad.assign(entries(), std::nan(""));
    return detail::make_logistic_cpu_backend<T>(Context::cpu())
        ->loss_gradient(X.data(), labels.data(), w_host(), n, d, k, coef.data(), grad.data());
  }
  double cuda(detail::LogisticBackend<T>& backend, const std::vector<double>& coef, std::vector<double>& grad) const {
    grad.assign(entries(), std::nan(""));
    return backend.loss_gradient(X_dev.template as<T>(), labels_dev.template as<int32_t>(), w_device(), n, d, k, coef.data(),
                                 grad.data());
  }
};

// float32: both backends form the scores in float in different orders (and the CPU rounds w r to
// float for its float GEMMs), so loss and gradient differ by float rounding: relative ~1e-6
// typically, 1e-5 leaves a margin. double: the same sums in different orders, plus exp/log ulps.
template <typename T>
constexpr double kRelTol = std::is_same_v<T, float> ? 1e-5 : 1e-12;

template <typename T>
void expect_matches_cpu(Context& gpu, const Problem<T>& p, const std::vector<std::vector<double>>& coefs, double rel_tol) {
  SCOPED_TRACE(std::string(std::is_same_v<T, float> ? "float32" : "float64") + " n=" + std::to_string(p.n) + " d=" +
               std::to_string(p.d) + " k=" + std::to_string(p.k) + (p.w.empty() ? " unweighted" : " weighted"));
  const std::vector<double> scale = p.gradient_scale();
  // One CUDA backend for all coefficient vectors, as the driver uses it: the scratch is reused.
  auto backend = detail::make_logistic_cuda_backend<T>(gpu);
  for (std::size_t round = 0; round < coefs.size(); ++round) {
    SCOPED_TRACE("coefficients #" + std::to_string(round));
    std::vector<double> grad_cpu, grad_gpu;
    const double loss_cpu = p.cpu(coefs[round], grad_cpu);
    const double loss_gpu = p.cuda(*backend, coefs[round], grad_gpu);
    ASSERT_TRUE(std::isfinite(loss_cpu));
    ASSERT_TRUE(std::isfinite(loss_gpu));
    // The loss is a sum of non-negative terms: relative.
    EXPECT_NEAR(loss_gpu, loss_cpu, rel_tol * loss_cpu);
    int reported = 0;
    for (int64_t e = 0; e < p.entries(); ++e) {
      const double tol = rel_tol * scale[e];
      if (!(std::abs(grad_gpu[e] - grad_cpu[e]) <= tol) && reported++ < 10)
        ADD_FAILURE() << "gradient entry " << e << " (class " << e / (p.d + 1) << ", column " << e % (p.d + 1) << "): cuda "
                      << grad_gpu[e] << ", cpu " << grad_cpu[e] << ", tolerance " << tol;
    }
  }
}

// Every (d, k) of the brief on one n: d in {1, 7, 64, 300} and k in {1, 3, 7} cover the fused
// kernel with one entry per thread (k (d + 1) <= 256), with several (d = 64, k = 7; d = 300,
// k <= 3) and the cuBLAS path (d = 300, k = 7: 2107 entries > 2048).
template <typename T>
void check_sizes(Context& gpu, std::mt19937_64& rng, int64_t n) {
  for (int64_t d : {1, 7, 64, 300}) {
    const std::vector<double> X = normal_vector(rng, static_cast<std::size_t>(n * d), 1.0);
    const std::vector<double> w = [&] {
      std::vector<double> v(n);
      for (auto& x : v) x = uniform_real(rng, 0.1, 2.0);
      return v;
    }();
    for (int64_t k : {1, 3, 7}) {
      const std::vector<int32_t> labels = random_labels(rng, n, k);
      const std::vector<std::vector<double>> coefs = {random_coef(rng, d, k), random_coef(rng, d, k)};
      for (bool weighted : {false, true}) {
        const Problem<T> p(gpu, X, n, d, k, labels, weighted ? w : std::vector<double>{});
        expect_matches_cpu<T>(gpu, p, coefs, kRelTol<T>);
      }
    }
  }
}

TEST(LogisticBackendGpu, LossGradientMatchesCpuSmall) {
  GPUML_CUDA_CONTEXT_OR_SKIP(gpu);
  GPUML_FRESH_RNG(rng);
  const int64_t n = uniform_int(rng, 2900, 3100);
  check_sizes<float>(gpu, rng, n);
  check_sizes<double>(gpu, rng, n);
}

TEST(LogisticBackendGpu, LossGradientMatchesCpuLarge) {
  GPUML_CUDA_CONTEXT_OR_SKIP(gpu);
  GPUML_FRESH_RNG(rng);
  const int64_t n = 100000 + 2 * uniform_int(rng, 0, 500) + 1;  // odd: no chunk or tile divides it evenly
  check_sizes<float>(gpu, rng, n);
  check_sizes<double>(gpu, rng, n);
}

// One row; and the cuBLAS path with a single class column (d > 2047 for k = 1).
TEST(LogisticBackendGpu, LossGradientMatchesCpuEdgeShapes) {
  GPUML_CUDA_CONTEXT_OR_SKIP(gpu);
  GPUML_FRESH_RNG(rng);
  struct Shape {
    int64_t n, d, k;
  };
  const Shape shapes[] = {{1, 1, 1}, {1, 64, 3}, {1, 300, 3}, {1, 300, 7}, {uniform_int(rng, 2900, 3100), 2100, 1}, {2, 2100, 1}};
  for (const Shape& s : shapes) {
    const std::vector<double> X = normal_vector(rng, static_cast<std::size_t>(s.n * s.d), 1.0);
    std::vector<double> w(s.n);
    for (auto& x : w) x = uniform_real(rng, 0.1, 2.0);
    const std::vector<int32_t> labels = random_labels(rng, s.n, s.k);
    const std::vector<std::vector<double>> coefs = {random_coef(rng, s.d, s.k), random_coef(rng, s.d, s.k)};
    expect_matches_cpu<float>(gpu, Problem<float>(gpu, X, s.n, s.d, s.k, labels, w), coefs, kRelTol<float>);
    expect_matches_cpu<double>(gpu, Problem<double>(gpu, X, s.n, s.d, s.k, labels, w), coefs, kRelTol<double>);
  }
}

// The same call gives the same bits: after a call with other coefficients (scratch reused), and
// from a second backend object.
template <typename T>
void check_deterministic(Context& gpu, std::mt19937_64& rng, int64_t n, int64_t d, int64_t k) {
  SCOPED_TRACE(std::string(std::is_same_v<T, float> ? "float32" : "float64") + " d=" + std::to_string(d) + " k=" + std::to_string(k));
  const std::vector<double> X = normal_vector(rng, static_cast<std::size_t>(n * d), 1.0);
  std::vector<double> w(n);
  for (auto& x : w) x = uniform_real(rng, 0.1, 2.0);
  const Problem<T> p(gpu, X, n, d, k, random_labels(rng, n, k), w);
  const std::vector<double> coef_a = random_coef(rng, d, k), coef_b = random_coef(rng, d, k);
  auto backend = detail::make_logistic_cuda_backend<T>(gpu);
  std::vector<double> g1, g2, g3, g4;
  const double l1 = p.cuda(*backend, coef_a, g1);
  p.cuda(*backend, coef_b, g2);
  const double l3 = p.cuda(*backend, coef_a, g3);
  const double l4 = p.cuda(*detail::make_logistic_cuda_backend<T>(gpu), coef_a, g4);
  EXPECT_EQ(std::memcmp(&l1, &l3, sizeof(double)), 0) << l1 << " vs " << l3;
  EXPECT_EQ(std::memcmp(&l1, &l4, sizeof(double)), 0) << l1 << " vs " << l4;
  EXPECT_EQ(std::memcmp(g1.data(), g3.data(), g1.size() * sizeof(double)), 0);
  EXPECT_EQ(std::memcmp(g1.data(), g4.data(), g1.size() * sizeof(double)), 0);
  EXPECT_NE(std::memcmp(g1.data(), g2.data(), g1.size() * sizeof(double)), 0) << "new coefficients, same gradient";
}

TEST(LogisticBackendGpu, LossGradientIsDeterministic) {
  GPUML_CUDA_CONTEXT_OR_SKIP(gpu);
  GPUML_FRESH_RNG(rng);
  const int64_t n = 100000 + 2 * uniform_int(rng, 0, 500) + 1;
  for (auto [d, k] : {std::pair<int64_t, int64_t>{64, 1}, {64, 7}, {300, 7}}) {  // the three ways
    check_deterministic<float>(gpu, rng, n, d, k);
    check_deterministic<double>(gpu, rng, n, d, k);
  }
}

// X scaled by 1e3: scores in the thousands, where a naive log(1 + e^z) or softmax overflows.
TEST(LogisticBackendGpu, LargeScoresGiveFiniteLoss) {
  GPUML_CUDA_CONTEXT_OR_SKIP(gpu);
  GPUML_FRESH_RNG(rng);
  const int64_t n = uniform_int(rng, 2900, 3100);
  for (auto [d, k] : {std::pair<int64_t, int64_t>{7, 1}, {64, 1}, {64, 3}, {300, 7}}) {
    std::vector<double> X = normal_vector(rng, static_cast<std::size_t>(n * d), 1e3);
    const std::vector<int32_t> labels = random_labels(rng, n, k);
    const std::vector<std::vector<double>> coefs = {random_coef(rng, d, k)};
    // float32: the loss is now ~|z| per misclassified row and z carries float rounding of terms
    // ~1e3 times larger than z's typical size: 1e-4 relative (gradients: same scale argument).
    expect_matches_cpu<float>(gpu, Problem<float>(gpu, X, n, d, k, labels, {}), coefs, 1e-4);
    expect_matches_cpu<double>(gpu, Problem<double>(gpu, X, n, d, k, labels, {}), coefs, 1e-11);
  }
}

// Scores with ties: for k == 1 some exact zeros (σ(0) = 0.5 must pick class 0), for k > 1 some
// rows whose maximum appears twice (the first index wins).
template <typename T>
std::vector<T> random_scores(std::mt19937_64& rng, int64_t n, int64_t k) {
  std::vector<T> Z = cast_vector<T>(normal_vector(rng, static_cast<std::size_t>(n * k), 3.0));
  for (int64_t i = 0; i < n; i += 13) {
    T* z = Z.data() + i * k;
    if (k == 1) {
      z[0] = T(0);
    } else {
      const int64_t top = std::max_element(z, z + k) - z;
      z[(top + 1 + uniform_int(rng, 0, k - 2)) % k] = z[top];
    }
  }
  return Z;
}

template <typename T>
void check_probabilities_and_labels(Context& gpu, std::mt19937_64& rng, int64_t n, int64_t k) {
  SCOPED_TRACE(std::string(std::is_same_v<T, float> ? "float32" : "float64") + " n=" + std::to_string(n) + " k=" + std::to_string(k));
  const std::vector<T> Z = random_scores<T>(rng, n, k);
  const int64_t n_classes = std::max<int64_t>(k, 2);
  std::vector<double> classes(n_classes);
  for (int64_t c = 0; c < n_classes; ++c) classes[c] = (c == 0 ? 0.0 : classes[c - 1]) + uniform_real(rng, 0.5, 3.0);
  const Buffer Z_dev = to_device(gpu, Z);
  auto cpu = detail::make_logistic_cpu_backend<T>(Context::cpu());
  auto cuda = detail::make_logistic_cuda_backend<T>(gpu);

  std::vector<T> proba_cpu(n * n_classes);
  cpu->probabilities(Z.data(), n, k, proba_cpu.data());
  Buffer proba_dev(gpu, proba_cpu.size() * sizeof(T));
  cuda->probabilities(Z_dev.as<T>(), n, k, proba_dev.as<T>());
  const std::vector<T> proba_gpu = to_host<T>(gpu, proba_dev, proba_cpu.size());
  // Both compute in double and round to T; exp may differ by an ulp of double, which 1 − σ(z)
  // near 1 turns into ~1e-16 absolute. Probabilities lie in [0, 1]: absolute tolerances of a
  // few float32 ulps at 1, and ~10 double ulps.
  const double tol = std::is_same_v<T, float> ? 2e-7 : 2e-15;
  int reported = 0;
  for (std::size_t i = 0; i < proba_cpu.size(); ++i)
    if (!(std::abs(static_cast<double>(proba_gpu[i]) - static_cast<double>(proba_cpu[i])) <= tol) && reported++ < 10)
      ADD_FAILURE() << "probability " << i << ": cuda " << proba_gpu[i] << ", cpu " << proba_cpu[i];

  std::vector<double> labels_cpu(n);
  cpu->predict_labels(Z.data(), n, k, classes.data(), labels_cpu.data());
  Buffer labels_dev(gpu, n * sizeof(double));
  cuda->predict_labels(Z_dev.as<T>(), n, k, classes.data(), labels_dev.as<double>());
  const std::vector<double> labels_gpu = to_host<double>(gpu, labels_dev, n);
  // The same comparisons on the same T values: exactly equal.
  reported = 0;
  for (int64_t i = 0; i < n; ++i)
    if (labels_gpu[i] != labels_cpu[i] && reported++ < 10)
      ADD_FAILURE() << "label of row " << i << ": cuda " << labels_gpu[i] << ", cpu " << labels_cpu[i];
}

TEST(LogisticBackendGpu, ProbabilitiesAndLabelsMatchCpu) {
  GPUML_CUDA_CONTEXT_OR_SKIP(gpu);
  GPUML_FRESH_RNG(rng);
  for (int64_t n : {int64_t(1), uniform_int(rng, 2900, 3100), 100000 + 2 * uniform_int(rng, 0, 500) + 1}) {
    for (int64_t k : {1, 3, 7, 150}) {
      check_probabilities_and_labels<float>(gpu, rng, n, k);
      check_probabilities_and_labels<double>(gpu, rng, n, k);
    }
  }
}


// ---- loss_residuals: the loss from scores formed elsewhere (sparse X) ----------------------

// Σ_i |R_ic| per class: the scale of the rounding in the residual sums whatever their cancellation.
template <typename T>
std::vector<double> column_abs_sums(const std::vector<T>& R, int64_t n, int64_t k) {
  std::vector<double> sums(k, 0.0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t c = 0; c < k; ++c) sums[c] += std::abs(static_cast<double>(R[i * k + c]));
  return sums;
}

// One loss_residuals call on the device: R into its own buffer, or over a copy of Z (aliased).
template <typename T>
struct ResidualsResult {
  double loss = 0.0;
  std::vector<double> sums;
  std::vector<T> R;
};

template <typename T>
ResidualsResult<T> cuda_loss_residuals(Context& gpu, detail::LogisticBackend<T>& backend, const std::vector<T>& Z, const Buffer& labels,
                                       const T* w, int64_t n, int64_t k, const std::vector<double>& intercept, bool aliased) {
  ResidualsResult<T> out;
  out.sums.assign(k, std::nan(""));
  Buffer Z_dev = to_device(gpu, Z);
  Buffer R_dev(gpu, std::max<std::size_t>(Z.size() * sizeof(T), 1));
  T* R = aliased ? Z_dev.as<T>() : R_dev.as<T>();
  out.loss = backend.loss_residuals(Z_dev.as<T>(), labels.as<int32_t>(), w, n, k, intercept.data(), R, out.sums.data());
  out.R = to_host<T>(gpu, aliased ? Z_dev : R_dev, Z.size());
  if (!aliased) {
    const std::vector<T> Z_after = to_host<T>(gpu, Z_dev, Z.size());
    EXPECT_EQ(std::memcmp(Z_after.data(), Z.data(), Z.size() * sizeof(T)), 0) << "Z changed although R is another buffer";
  }
  return out;
}

template <typename T>
bool same_bits(const ResidualsResult<T>& a, const ResidualsResult<T>& b) {
  return std::memcmp(&a.loss, &b.loss, sizeof(double)) == 0 &&
         std::memcmp(a.sums.data(), b.sums.data(), a.sums.size() * sizeof(double)) == 0 &&
         std::memcmp(a.R.data(), b.R.data(), a.R.size() * sizeof(T)) == 0;
}

// Scores N(0, 3²), and with `large` a third of the rows at ±(60..100), where a naive
// log(1 + e^z) or softmax overflows (float32 e^89 already does); intercepts N(0, 1).
template <typename T>
void check_loss_residuals(Context& gpu, std::mt19937_64& rng, int64_t n, int64_t k, bool weighted, bool large) {
  SCOPED_TRACE(std::string(std::is_same_v<T, float> ? "float32" : "float64") + " n=" + std::to_string(n) + " k=" + std::to_string(k) +
               (weighted ? " weighted" : " unweighted") + (large ? " large scores" : ""));
  std::vector<T> Z = cast_vector<T>(normal_vector(rng, static_cast<std::size_t>(n * k), 3.0));
  if (large)
    for (int64_t i = 0; i < n; i += 3)
      for (int64_t c = 0; c < k; ++c) Z[i * k + c] = static_cast<T>((uniform_int(rng, 0, 1) ? 1.0 : -1.0) * uniform_real(rng, 60.0, 100.0));
  const std::vector<int32_t> labels = random_labels(rng, n, k);
  const std::vector<double> intercept = normal_vector(rng, static_cast<std::size_t>(k), 1.0);
  std::vector<T> w;
  if (weighted) {
    w.resize(n);
    for (auto& x : w) x = static_cast<T>(uniform_real(rng, 0.1, 2.0));
  }
  const T* w_host = weighted ? w.data() : nullptr;
  const Buffer labels_dev = to_device(gpu, labels), w_dev = to_device(gpu, w);
  const T* w_device = weighted ? w_dev.as<T>() : nullptr;

  std::vector<T> R_cpu(n * k, std::numeric_limits<T>::quiet_NaN());
  std::vector<double> sums_cpu(k, std::nan(""));
  const double loss_cpu = detail::make_logistic_cpu_backend<T>(Context::cpu())
                              ->loss_residuals(Z.data(), labels.data(), w_host, n, k, intercept.data(), R_cpu.data(), sums_cpu.data());

  auto backend = detail::make_logistic_cuda_backend<T>(gpu);
  const ResidualsResult<T> separate = cuda_loss_residuals(gpu, *backend, Z, labels_dev, w_device, n, k, intercept, false);
  ASSERT_TRUE(std::isfinite(loss_cpu));
  ASSERT_TRUE(std::isfinite(separate.loss));
  // The loss is a sum of non-negative terms, each formed in double by the same formulas on both
  // (only exp/log1p ulps and the summation order differ): relative, float32 1e-5 and float64
  // 1e-12 (both far above the ~1e-15 expected).
  EXPECT_NEAR(separate.loss, loss_cpu, kRelTol<T> * loss_cpu);
  // R_ic = w_i r_ic, |r| <= 1, computed in double and rounded to T on both: they differ by at most
  // one rounding step of T where a double ulp tips it (float32: 2^-23 |w_i| < 1e-6 |w_i|), else
  // by a few double ulps (1e-14 |w_i| leaves a margin).
  const double r_tol = std::is_same_v<T, float> ? 1e-6 : 1e-14;
  int reported = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double wi = weighted ? static_cast<double>(w[i]) : 1.0;
    for (int64_t c = 0; c < k; ++c) {
      const double a = static_cast<double>(separate.R[i * k + c]), b = static_cast<double>(R_cpu[i * k + c]);
      if (!(std::abs(a - b) <= r_tol * wi) && reported++ < 10)
        ADD_FAILURE() << "R[" << i << "][" << c << "]: cuda " << a << ", cpu " << b << ", tolerance " << r_tol * wi;
    }
  }
  // Residual sums: sums in double of the stored R in different orders, plus the R differences
  // above: float32 1e-5, float64 1e-12, relative to Σ_i |R_ic|.
  const std::vector<double> scale = column_abs_sums(R_cpu, n, k);
  for (int64_t c = 0; c < k; ++c)
    EXPECT_NEAR(separate.sums[c], sums_cpu[c], kRelTol<T> * scale[c]) << "residual sum of class " << c;

  // R over Z itself: the same kernel and order, so the same bits; and again, and from a fresh
  // backend (scratch reused or not): deterministic.
  const ResidualsResult<T> aliased = cuda_loss_residuals(gpu, *backend, Z, labels_dev, w_device, n, k, intercept, true);
  EXPECT_TRUE(same_bits(aliased, separate)) << "R aliasing Z changed the result";
  const ResidualsResult<T> again = cuda_loss_residuals(gpu, *backend, Z, labels_dev, w_device, n, k, intercept, false);
  EXPECT_TRUE(same_bits(again, separate)) << "a second call gave other bits";
  const ResidualsResult<T> fresh =
      cuda_loss_residuals(gpu, *detail::make_logistic_cuda_backend<T>(gpu), Z, labels_dev, w_device, n, k, intercept, false);
  EXPECT_TRUE(same_bits(fresh, separate)) << "a new backend gave other bits";
}

template <typename T>
void check_loss_residuals_shapes(Context& gpu, std::mt19937_64& rng, int64_t n) {
  for (int64_t k : {1, 4, 40})  // 40: two column slabs of the per-chunk residual sums
    for (bool weighted : {false, true})
      for (bool large : {false, true}) check_loss_residuals<T>(gpu, rng, n, k, weighted, large);
}

TEST(LogisticBackendGpu, LossResidualsMatchesCpu) {
  GPUML_CUDA_CONTEXT_OR_SKIP(gpu);
  GPUML_FRESH_RNG(rng);
  // One row; a few thousand (a partial last chunk); ~10^5, odd (about 400 chunks).
  for (int64_t n : {int64_t(1), uniform_int(rng, 2900, 3100), 100000 + 2 * uniform_int(rng, 0, 500) + 1}) {
    check_loss_residuals_shapes<float>(gpu, rng, n);
    check_loss_residuals_shapes<double>(gpu, rng, n);
  }
}

// Binary at the size that matters for speed (10^6 rows, several thousand chunks).
TEST(LogisticBackendGpu, LossResidualsMatchesCpuMillionRows) {
  GPUML_CUDA_CONTEXT_OR_SKIP(gpu);
  GPUML_FRESH_RNG(rng);
  const int64_t n = 1000000 + 2 * uniform_int(rng, 0, 500) + 1;
  check_loss_residuals<float>(gpu, rng, n, 1, true, true);
  check_loss_residuals<double>(gpu, rng, n, 1, true, false);
}

// No rows: zero loss and sums, nothing read.
TEST(LogisticBackendGpu, LossResidualsOfNoRows) {
  GPUML_CUDA_CONTEXT_OR_SKIP(gpu);
  auto backend = detail::make_logistic_cuda_backend<double>(gpu);
  const std::vector<double> intercept = {0.5, -1.0, 2.0};
  std::vector<double> sums(3, std::nan(""));
  EXPECT_EQ(backend->loss_residuals(nullptr, nullptr, nullptr, 0, 3, intercept.data(), nullptr, sums.data()), 0.0);
  EXPECT_EQ(sums, std::vector<double>(3, 0.0));
}

}  // namespace
}  // namespace gpuml

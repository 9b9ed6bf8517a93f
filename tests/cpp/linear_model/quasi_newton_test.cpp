// The host L-BFGS / OWL-QN minimizer (src/linear_model/quasi_newton.cpp) on problems whose
// minimizer is known in closed form, at a size where its vector work is split over threads: the
// answer, and the same bits whatever the thread count.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "../../../src/linear_model/quasi_newton.hpp"  // internal: exported for this test
#include "test_util.hpp"

namespace gpuml {
namespace {

using detail::minimize_quasi_newton;
using detail::QuasiNewtonOptions;
using detail::QuasiNewtonResult;

// f(x) = ½ Σ a_i (x_i − b_i)² + ½ c (uᵀx)²: a diagonal plus rank-one Hessian, so L-BFGS needs
// its curvature pairs, and the minimizer solves (diag(a) + c u uᵀ) x = a ∘ b (Sherman–Morrison).
struct Quadratic {
  std::vector<double> a, b, u;
  double c = 0.0;

  Quadratic(std::mt19937_64& rng, std::size_t n) : a(n), b(n), u(n), c(0.5) {
    std::uniform_real_distribution<double> scale(1.0, 10.0), centre(-2.0, 2.0), direction(-1.0, 1.0);
    for (std::size_t i = 0; i < n; ++i) a[i] = scale(rng), b[i] = centre(rng), u[i] = direction(rng) / std::sqrt(double(n));
  }

  double operator()(const std::vector<double>& x, std::vector<double>& g) const {
    double ux = 0.0, f = 0.0;
    for (std::size_t i = 0; i < x.size(); ++i) ux += u[i] * x[i];
    for (std::size_t i = 0; i < x.size(); ++i) {
      const double r = x[i] - b[i];
      f += 0.5 * a[i] * r * r;
      g[i] = a[i] * r + c * ux * u[i];
    }
    return f + 0.5 * c * ux * ux;
  }

  std::vector<double> minimizer() const {
    // x = D⁻¹ab − D⁻¹u c (uᵀ D⁻¹ ab) / (1 + c uᵀD⁻¹u) with D = diag(a): D⁻¹ab = b.
    double ub = 0.0, uDu = 0.0;
    for (std::size_t i = 0; i < a.size(); ++i) ub += u[i] * b[i], uDu += u[i] * u[i] / a[i];
    std::vector<double> x(a.size());
    for (std::size_t i = 0; i < a.size(); ++i) x[i] = b[i] - u[i] / a[i] * c * ub / (1.0 + c * uDu);
    return x;
  }
};

double max_abs_diff(const std::vector<double>& x, const std::vector<double>& y) {
  double m = 0.0;
  for (std::size_t i = 0; i < x.size(); ++i) m = std::max(m, std::abs(x[i] - y[i]));
  return m;
}

// f(x) + Σ l1_i |x_i|.
double objective(const Quadratic& q, const std::vector<double>& x, const std::vector<double>& l1) {
  std::vector<double> g(x.size());
  double F = q(x, g);
  for (std::size_t i = 0; i < l1.size(); ++i) F += l1[i] * std::abs(x[i]);
  return F;
}

// Above the size where the vector work goes to several threads (core/parallel.hpp: 2^17).
constexpr std::size_t kLarge = (std::size_t{1} << 17) + 4099;  // not a whole number of chunks

TEST(QuasiNewton, LbfgsFindsTheMinimizerOfALargeQuadratic) {
  GPUML_FRESH_RNG(rng);
  const Quadratic q(rng, kLarge);
  QuasiNewtonOptions options;
  options.gtol = 1e-9;
  options.max_iter = 500;
  options.threads = 2;
  std::vector<double> x(kLarge, 0.0);
  const QuasiNewtonResult r = minimize_quasi_newton(q, x, {}, options);
  EXPECT_TRUE(r.converged);
  const std::vector<double> best = q.minimizer();
  const double start = objective(q, std::vector<double>(kLarge, 0.0), {});  // the scale of the values
  const double gap = r.objective - objective(q, best, {});
  // It stops on a relative decrease of 64 eps (or |∇f| <= 1e-9): within 1e-12 of the start's value of the least.
  EXPECT_LE(gap, 1e-12 * start);
  // The Hessian's eigenvalues are >= 1: |x − x*|² <= 2 gap.
  EXPECT_LE(max_abs_diff(x, best), std::sqrt(2.0 * (std::max(gap, 0.0) + 1e-13 * start)));
}

TEST(QuasiNewton, ThreadCountDoesNotChangeTheBits) {
  GPUML_FRESH_RNG(rng);
  const Quadratic q(rng, kLarge);
  std::vector<double> l1(kLarge, 0.0);
  for (std::size_t i = 0; i < kLarge; i += 3) l1[i] = 0.7;  // OWL-QN too: an L1 term on a third
  for (const bool with_l1 : {false, true}) {
    std::vector<std::vector<double>> answers;
    std::vector<double> objectives;
    for (const int threads : {1, 2, 3}) {
      QuasiNewtonOptions options;
      options.max_iter = 8;
      options.threads = threads;
      std::vector<double> x(kLarge, 0.0);
      objectives.push_back(minimize_quasi_newton(q, x, with_l1 ? l1 : std::vector<double>{}, options).objective);
      answers.push_back(std::move(x));
    }
    for (std::size_t t = 1; t < answers.size(); ++t) {
      EXPECT_EQ(answers[t], answers[0]) << "with_l1=" << with_l1 << ", " << t + 1 << " threads";  // exact
      EXPECT_EQ(objectives[t], objectives[0]);
    }
  }
}

TEST(QuasiNewton, OwlqnSolvesASeparableLassoExactly) {
  // ½ Σ a_i (x_i − b_i)² + Σ λ_i |x_i|: x_i = sign(b_i) max(|b_i| − λ_i / a_i, 0).
  GPUML_FRESH_RNG(rng);
  Quadratic q(rng, kLarge);
  q.c = 0.0;
  std::vector<double> l1(kLarge), expected(kLarge);
  std::uniform_real_distribution<double> weight(0.0, 10.0);
  for (std::size_t i = 0; i < kLarge; ++i) {
    l1[i] = weight(rng);
    expected[i] = std::copysign(std::max(std::abs(q.b[i]) - l1[i] / q.a[i], 0.0), q.b[i]);
  }
  QuasiNewtonOptions options;
  options.gtol = 1e-10;
  options.max_iter = 500;
  options.threads = 2;
  std::vector<double> x(kLarge, 0.0);
  const QuasiNewtonResult r = minimize_quasi_newton(q, x, l1, options);
  EXPECT_TRUE(r.converged);
  const double start = objective(q, std::vector<double>(kLarge, 0.0), l1);  // the scale of the values
  const double gap = r.objective - objective(q, expected, l1);
  EXPECT_LE(gap, 1e-12 * start);  // stops on a relative decrease of 64 eps
  // Curvature >= 1: |x − x*|² <= 2 gap, the gap known to the objective's rounding (1e-13 of it).
  EXPECT_LE(max_abs_diff(x, expected), std::sqrt(2.0 * (std::max(gap, 0.0) + 1e-13 * start)));
  std::size_t zeros = 0, expected_zeros = 0;
  for (std::size_t i = 0; i < kLarge; ++i) zeros += x[i] == 0.0, expected_zeros += expected[i] == 0.0;
  // The orthant projection leaves exact zeros: all but a few of the expected ones (those whose
  // |b_i| − λ_i / a_i is within the remaining error of 0).
  EXPECT_GE(zeros, expected_zeros - expected_zeros / 1000);
  EXPECT_GT(expected_zeros, kLarge / 4);  // the case tests something
}

TEST(QuasiNewton, NoMemoryIsSteepestDescentAndStillConverges) {
  GPUML_FRESH_RNG(rng);
  Quadratic q(rng, 64);
  for (double& v : q.a) v = 1.0 + v / 100.0;  // well conditioned: steepest descent suffices
  QuasiNewtonOptions options;
  options.memory = 0;
  options.gtol = 1e-10;
  options.max_iter = 2000;
  std::vector<double> x(64, 0.0);
  const QuasiNewtonResult r = minimize_quasi_newton(q, x, {}, options);
  EXPECT_TRUE(r.converged);
  const double start = objective(q, std::vector<double>(64, 0.0), {});  // the scale of the values
  const double gap = r.objective - objective(q, q.minimizer(), {});
  EXPECT_LE(gap, 1e-12 * start);  // stops on a relative decrease of 64 eps
  // Curvature >= 1: |x − x*|² <= 2 gap, the gap known to the objective's rounding.
  EXPECT_LE(max_abs_diff(x, q.minimizer()), std::sqrt(2.0 * (std::max(gap, 0.0) + 1e-13 * start)));
}

}  // namespace
}  // namespace gpuml

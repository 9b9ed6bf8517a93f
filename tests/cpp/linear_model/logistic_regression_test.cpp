// LogisticRegression: the fitted models against the optimality conditions of the objective,
// evaluated here in long double without the library's code; binary L2 against an independent
// Newton solve; class weights against the equivalent sample weights; the error paths;
// serialization; and CUDA against the CPU backend (skipped without a GPU).
#include <gtest/gtest.h>

#include <Eigen/Dense>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include "test_util.hpp"

namespace gpuml {
namespace {

using test::uniform_int;
using test::uniform_real;

// A classification problem: X (n x d) with features of different scales, labels drawn from a
// softmax of random linear scores (noisy, so not separable), optional positive weights.
struct Classification {
  int64_t n = 0, d = 0, n_classes = 0;
  std::vector<double> X, y, w;
};

Classification make_classification(std::mt19937_64& rng, int64_t n, int64_t d, int64_t n_classes, bool weighted,
                                   double label_offset = 0.0) {
  Classification c;
  c.n = n, c.d = d, c.n_classes = n_classes;
  std::normal_distribution<double> normal;
  std::vector<double> scale(d), beta(n_classes * d);
  for (double& s : scale) s = uniform_real(rng, 0.5, 2.0);
  for (double& b : beta) b = normal(rng);
  c.X.resize(n * d);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < d; ++j) c.X[i * d + j] = scale[j] * normal(rng) + 0.3;
  c.y.resize(n);
  std::vector<double> p(n_classes);
  for (int64_t i = 0; i < n; ++i) {
    if (i < n_classes) {  // every class appears
      c.y[i] = label_offset + 2.0 * i;
      continue;
    }
    double total = 0;
    for (int64_t k = 0; k < n_classes; ++k) {
      double z = 0;
      for (int64_t j = 0; j < d; ++j) z += beta[k * d + j] * c.X[i * d + j];
      p[k] = std::exp(z);
      total += p[k];
    }
    double u = uniform_real(rng, 0.0, total);
    int64_t k = 0;
    while (k + 1 < n_classes && u > p[k]) u -= p[k++];
    c.y[i] = label_offset + 2.0 * k;  // labels need not be 0..K-1
  }
  if (weighted) {
    c.w.resize(n);
    for (double& v : c.w) v = uniform_real(rng, 0.2, 3.0);
  }
  return c;
}

template <typename T>
LogisticRegression fit_logistic(Context& ctx, const Classification& c, LogisticRegressionParams params,
                                const std::vector<double>* weights = nullptr) {
  std::vector<T> X(c.X.begin(), c.X.end());
  std::vector<double> y = c.y;
  const std::vector<double>& wsrc = weights ? *weights : c.w;
  std::vector<T> w(wsrc.begin(), wsrc.end());
  LogisticRegression model(std::move(params));
  const ArrayView wv = host_view(w.data(), c.n);
  model.fit(ctx, host_view(X.data(), c.n, c.d), host_view(y.data(), c.n), wsrc.empty() ? nullptr : &wv);
  return model;
}

template <typename T>
std::vector<double> doubles(const HostArray& a) {
  const std::size_t count = a.bytes() / sizeof(T);
  return std::vector<double>(a.as<const T>(), a.as<const T>() + count);
}
std::vector<double> doubles(const HostArray& a) {
  return a.dtype() == DType::float32 ? doubles<float>(a) : doubles<double>(a);
}

// The gradient of the objective (mean weighted loss + L2 part; the L1 part is checked
// separately) at the model's coefficients, in long double: (k x (d+1)), column d the intercept.
struct Gradient {
  int64_t k = 0, d = 0;
  std::vector<long double> g;  // k x (d + 1)
  long double at(int64_t c, int64_t j) const { return g[c * (d + 1) + j]; }
};

Gradient objective_gradient(const Classification& c, const std::vector<double>& coef, const std::vector<double>& b,
                            const std::vector<double>& row_w, double C, double l1_ratio, bool penalized) {
  const int64_t n = c.n, d = c.d, K = c.n_classes, k = K == 2 ? 1 : K;
  std::vector<double> classes;
  for (double v : c.y) classes.push_back(v);
  std::sort(classes.begin(), classes.end());
  classes.erase(std::unique(classes.begin(), classes.end()), classes.end());
  Gradient out;
  out.k = k, out.d = d;
  out.g.assign(k * (d + 1), 0.0L);
  long double S = 0;
  for (int64_t i = 0; i < n; ++i) S += row_w.empty() ? 1.0L : row_w[i];
  std::vector<long double> z(k), r(k);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t label = std::lower_bound(classes.begin(), classes.end(), c.y[i]) - classes.begin();
    for (int64_t m = 0; m < k; ++m) {
      z[m] = b[m];
      for (int64_t j = 0; j < d; ++j) z[m] += static_cast<long double>(coef[m * d + j]) * c.X[i * d + j];
    }
    if (k == 1) {
      r[0] = 1.0L / (1.0L + std::exp(-z[0])) - label;
    } else {
      long double top = *std::max_element(z.begin(), z.end()), sum = 0;
      for (int64_t m = 0; m < k; ++m) sum += std::exp(z[m] - top);
      for (int64_t m = 0; m < k; ++m) r[m] = std::exp(z[m] - top) / sum - (m == label ? 1.0L : 0.0L);
    }
    const long double wi = row_w.empty() ? 1.0L : row_w[i];
    for (int64_t m = 0; m < k; ++m) {
      for (int64_t j = 0; j < d; ++j) out.g[m * (d + 1) + j] += wi * r[m] * c.X[i * d + j] / S;
      out.g[m * (d + 1) + d] += wi * r[m] / S;
    }
  }
  if (penalized)
    for (int64_t m = 0; m < k; ++m)
      for (int64_t j = 0; j < d; ++j) out.g[m * (d + 1) + j] += (1 - l1_ratio) * coef[m * d + j] / (C * S);
  return out;
}

// The objective itself, in long double: mean weighted loss plus the penalty.
double objective_value(const Classification& c, const std::vector<double>& coef, const std::vector<double>& b,
                       const std::vector<double>& row_w, double C, double l1_ratio) {
  const int64_t n = c.n, d = c.d, K = c.n_classes, k = K == 2 ? 1 : K;
  std::vector<double> classes(c.y.begin(), c.y.end());
  std::sort(classes.begin(), classes.end());
  classes.erase(std::unique(classes.begin(), classes.end()), classes.end());
  long double S = 0, loss = 0;
  std::vector<long double> z(k);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t label = std::lower_bound(classes.begin(), classes.end(), c.y[i]) - classes.begin();
    for (int64_t m = 0; m < k; ++m) {
      z[m] = b[m];
      for (int64_t j = 0; j < d; ++j) z[m] += static_cast<long double>(coef[m * d + j]) * c.X[i * d + j];
    }
    long double li;
    if (k == 1) {
      li = std::log1p(std::exp(-std::fabs(z[0]))) + std::max(z[0], 0.0L) - label * z[0];
    } else {
      const long double top = *std::max_element(z.begin(), z.end());
      long double sum = 0;
      for (int64_t m = 0; m < k; ++m) sum += std::exp(z[m] - top);
      li = top + std::log(sum) - z[label];
    }
    const long double wi = row_w.empty() ? 1.0L : row_w[i];
    loss += wi * li;
    S += wi;
  }
  long double l2 = 0, l1 = 0;
  for (double v : coef) {
    l2 += static_cast<long double>(v) * v;
    l1 += std::fabs(v);
  }
  return static_cast<double>(loss / S + ((1 - l1_ratio) / 2 * l2 + l1_ratio * l1) / (C * S));
}

// Optimality: the smooth gradient is ~0 for unpenalized-by-L1 variables; with an L1 weight λ,
// |g| <= λ where the coefficient is 0 and g = −λ sign(b) elsewhere. With solver "liblinear"
// (its objective, intercept_scaling s) the intercept b carries the penalty of v = b / s: L2 weight
// (1 − ρ) / (C S s²) and L1 weight ρ / (C S s).
void expect_optimal(const LogisticRegression& model, const Classification& c, const LogisticRegressionParams& p,
                    const std::vector<double>& row_w, double tolerance) {
  const std::vector<double> coef = doubles(model.coef()), b = doubles(model.intercept());
  // The penalty the objective has (scikit-learn >= 1.8: unnamed, l1_ratio chooses it).
  const double ratio = p.l1_ratio.value_or(0.0);
  const std::string penalty = p.penalty != "deprecated" ? p.penalty
                              : ratio == 0.0               ? "l2"
                              : ratio == 1.0               ? "l1"
                                                           : "elasticnet";
  const bool penalized = penalty != "none";
  const double rho = penalty == "l1" ? 1.0 : penalty == "elasticnet" ? ratio : 0.0;
  const Gradient g = objective_gradient(c, coef, b, row_w, p.C, rho, penalized);
  long double S = 0;
  for (int64_t i = 0; i < c.n; ++i) S += row_w.empty() ? 1.0L : row_w[i];
  const double l1 = penalized ? static_cast<double>(rho / (p.C * S)) : 0.0;
  const double s = p.fit_intercept && p.solver == "liblinear" ? p.intercept_scaling : 0.0;
  const double intercept_l2 = penalized && s > 0 ? static_cast<double>((1 - rho) / (p.C * S * s * s)) : 0.0;
  const double intercept_l1 = s > 0 ? l1 / s : 0.0;
  // g + l2 · b against the L1 weight λ of that variable.
  auto expect_stationary = [&](double v, double bj, double lambda, const std::string& what) {
    if (lambda > 0 && bj == 0)
      EXPECT_LE(std::abs(v), lambda + tolerance) << what;
    else
      EXPECT_NEAR(v + lambda * (bj > 0 ? 1 : bj < 0 ? -1 : 0), 0.0, tolerance) << what;
  };
  for (int64_t m = 0; m < g.k; ++m) {
    for (int64_t j = 0; j < c.d; ++j)
      expect_stationary(static_cast<double>(g.at(m, j)), coef[m * c.d + j], l1,
                        "class " + std::to_string(m) + " feature " + std::to_string(j));
    if (p.fit_intercept)
      expect_stationary(static_cast<double>(g.at(m, c.d)) + intercept_l2 * b[m], b[m], intercept_l1,
                        "intercept " + std::to_string(m));
  }
}

LogisticRegressionParams tight(LogisticRegressionParams p) {
  p.tol = 1e-10;
  p.max_iter = 10000;
  return p;
}

TEST(LogisticRegression, BinaryL2IsOptimalAndMatchesNewton) {
  GPUML_FRESH_RNG(rng);
  Context ctx = Context::cpu();
  const Classification c = make_classification(rng, uniform_int(rng, 200, 2000), uniform_int(rng, 1, 12), 2, false);
  LogisticRegressionParams p = tight({});
  p.C = uniform_real(rng, 0.05, 5.0);
  const LogisticRegression model = fit_logistic<double>(ctx, c, p);
  EXPECT_TRUE(model.converged());
  // gtol is 1e-10, but the fit stops first, nearly always, on the ftol rule (L-BFGS-B's, as
  // scikit-learn's lbfgs): a step that lowered f by at most tau = 64 eps max(|f|, 1). That rule
  // bounds the last step's decrease, not f − f*. The step met the strong Wolfe curvature condition
  // (c2 = 0.9): along its line, it went a fraction t of the way to the minimum with |1 − t| <= c2,
  // which removes at least 1 − c2² = 19% of f's excess over that minimum (exactly so on a
  // quadratic). Near the optimum the quasi-Newton direction points at it, so f − f* <= tau / (1 − c2²)
  // = 5.3 tau. The Hessian is at most L = λ_max([X 1]ᵀ[X 1]) / (4n) + 1 / (Cn) everywhere (the
  // sigmoid's slope is <= 1/4), and |∇f|² <= 2 L (f − f*) for an L-smooth f: the tolerance is
  // sqrt(2 L tau / (1 − c2²)), ~3e-7 here. (Measured over 20000 problems drawn as here: f − f* up
  // to 5.7 tau, the gradient up to 0.5 of this bound, L being an upper bound; up to 1.8e-7, above
  // the 1e-7 once assumed, for ~1 in 2500, as scipy's L-BFGS-B does on the same problems.)
  const double c2 = 0.9, f_fit = objective_value(c, doubles(model.coef()), doubles(model.intercept()), {}, p.C, 0.0);
  const double gap_bound = 64 * std::numeric_limits<double>::epsilon() * std::max(std::abs(f_fit), 1.0) / (1.0 - c2 * c2);
  {
    Eigen::MatrixXd gram = Eigen::MatrixXd::Zero(c.d + 1, c.d + 1);
    for (int64_t i = 0; i < c.n; ++i) {
      Eigen::VectorXd x(c.d + 1);
      for (int64_t j = 0; j < c.d; ++j) x[j] = c.X[i * c.d + j];
      x[c.d] = 1.0;
      gram += x * x.transpose();
    }
    const double L =
        Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>(gram, Eigen::EigenvaluesOnly).eigenvalues().maxCoeff() / (4.0 * c.n) +
        1.0 / (p.C * c.n);
    expect_optimal(model, c, p, {}, std::sqrt(2.0 * L * gap_bound));
  }

  // The fitted point is the minimum of the objective as written in this test (used below for
  // the GPU comparison): any small step raises it.
  {
    const std::vector<double> coef = doubles(model.coef()), b = doubles(model.intercept());
    const double at_fit = objective_value(c, coef, b, {}, p.C, 0.0);
    for (std::size_t j = 0; j < coef.size(); ++j)
      for (double step : {-1e-3, 1e-3}) {
        std::vector<double> moved = coef;
        moved[j] += step;
        EXPECT_GT(objective_value(c, moved, b, {}, p.C, 0.0), at_fit) << "feature " << j;
      }
  }

  // Newton's method on the same objective, with [X 1] and the penalty on the coefficients only.
  const int64_t n = c.n, d = c.d;
  const double lambda = 1.0 / (p.C * n);
  Eigen::VectorXd beta = Eigen::VectorXd::Zero(d + 1);
  Eigen::MatrixXd H;
  for (int it = 0; it < 100; ++it) {
    Eigen::VectorXd g = Eigen::VectorXd::Zero(d + 1);
    H = Eigen::MatrixXd::Zero(d + 1, d + 1);
    for (int64_t i = 0; i < n; ++i) {
      Eigen::VectorXd x(d + 1);
      for (int64_t j = 0; j < d; ++j) x[j] = c.X[i * d + j];
      x[d] = 1.0;
      const double prob = 1.0 / (1.0 + std::exp(-x.dot(beta)));
      g += (prob - (c.y[i] > 0 ? 1.0 : 0.0)) * x / n;
      H += prob * (1 - prob) * x * x.transpose() / n;
    }
    for (int64_t j = 0; j < d; ++j) {
      g[j] += lambda * beta[j];
      H(j, j) += lambda;
    }
    beta -= H.ldlt().solve(g);
    if (g.cwiseAbs().maxCoeff() < 1e-14) break;
  }
  // Newton ends at the gradient's rounding; the fit within gap_bound of f* (above). With mu the
  // least eigenvalue of the Hessian there (the fit is ~1e-6 away: the same to first order),
  // f − f* >= mu |x − x*|² / 2, so |x − x*| <= sqrt(2 gap_bound / mu): ~3e-6 (mu ~ 0.02). A fixed
  // 1e-6 (1 + |x*|), assumed before, was exceeded (1.04) once in 20000 problems drawn as here.
  const double mu = Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>(H, Eigen::EigenvaluesOnly).eigenvalues().minCoeff();
  const double distance = std::sqrt(2.0 * gap_bound / mu);
  const std::vector<double> coef = doubles(model.coef());
  for (int64_t j = 0; j < d; ++j) EXPECT_NEAR(coef[j], beta[j], distance) << "feature " << j;
  EXPECT_NEAR(doubles(model.intercept())[0], beta[d], distance);
}

TEST(LogisticRegression, MultinomialWeightedOptimal) {
  GPUML_FRESH_RNG(rng);
  Context ctx = Context::cpu();
  const int64_t K = uniform_int(rng, 3, 7);
  const Classification c = make_classification(rng, uniform_int(rng, 300, 3000), uniform_int(rng, 2, 10), K, true, -3.0);
  LogisticRegressionParams p = tight({});
  p.C = uniform_real(rng, 0.1, 10.0);
  const LogisticRegression model = fit_logistic<double>(ctx, c, p);
  // tol = 1e-10 sits at the rounding of the objective: ~0.3% of fresh seeds stop on no progress
  // just above it (not converged), well inside max_iter; the optimality check below still holds.
  EXPECT_TRUE(model.converged() || model.n_iter() < p.max_iter);
  ASSERT_EQ(model.coef().spec().shape[0], K);
  // As in the binary test, but ~1% of fresh seeds stop on a failed line search with gradients up
  // to ~4e-6 (measured over 200 seeds): a solver limit noted in the issue, checked at 1e-5.
  expect_optimal(model, c, p, c.w, 1e-5);
  // classes_ are the sorted distinct labels.
  const std::vector<double> classes = doubles(model.classes());
  ASSERT_EQ(static_cast<int64_t>(classes.size()), K);
  for (int64_t k = 0; k < K; ++k) EXPECT_EQ(classes[k], -3.0 + 2.0 * k);
}

TEST(LogisticRegression, L1AndElasticNetSatisfySubgradientConditions) {
  GPUML_FRESH_RNG(rng);
  Context ctx = Context::cpu();
  for (int64_t K : {2, 4}) {
    const Classification c = make_classification(rng, uniform_int(rng, 300, 2000), uniform_int(rng, 5, 20), K, false);
    for (const char* penalty : {"l1", "elasticnet"}) {
      SCOPED_TRACE(std::string(penalty) + " with " + std::to_string(K) + " classes");
      LogisticRegressionParams p = tight({});
      p.penalty = penalty;
      p.l1_ratio = uniform_real(rng, 0.2, 0.9);
      p.C = uniform_real(rng, 0.01, 0.2);  // strong enough that some coefficients are exactly 0
      const LogisticRegression model = fit_logistic<double>(ctx, c, p);
      EXPECT_TRUE(model.converged() || model.n_iter() < p.max_iter);  // converged, or stalled on rounding
      // As in the binary test, f stops decreasing in double before the pseudo-gradient reaches
      // gtol: about 1e-8 here; ~1% of fresh seeds stop on a failed line search up to ~2e-6
      // (measured over 200 seeds), so checked at 1e-5.
      expect_optimal(model, c, p, {}, 1e-5);
    }
  }
}

// scikit-learn >= 1.8: without a named penalty, l1_ratio chooses it. Before, an unnamed penalty
// was "l2" whatever l1_ratio said: l1_ratio = 1 fitted L2, every coefficient non-zero.
TEST(LogisticRegression, L1RatioChoosesThePenaltyWhenNoneIsNamed) {
  GPUML_FRESH_RNG(rng);
  Context ctx = Context::cpu();
  auto with_ratio = [](std::optional<double> ratio, std::string penalty = "deprecated") {
    LogisticRegressionParams p;
    p.l1_ratio = ratio;
    p.penalty = std::move(penalty);
    return p;
  };
  // The parameters stay as given (scikit-learn's get_params); the fit applies the rule: each
  // unnamed penalty fits exactly as the penalty it stands for.
  EXPECT_EQ(make_estimator("logistic_regression", "{}")->get_params_json(), LogisticRegression().get_params_json());
  EXPECT_NE(LogisticRegression().get_params_json().find(R"("penalty":"deprecated")"), std::string::npos);
  EXPECT_NE(make_estimator("logistic_regression", R"({"penalty": null})")->get_params_json().find(R"("penalty":null)"),
            std::string::npos);
  GPUML_EXPECT_ERROR(make_estimator("logistic_regression", R"({"penalty": ""})"), ErrorCode::invalid_argument);
  GPUML_EXPECT_ERROR(make_estimator("logistic_regression", R"({"penalty": "none"})"), ErrorCode::invalid_argument);
  const Classification small = make_classification(rng, uniform_int(rng, 100, 300), uniform_int(rng, 3, 8), 3, true);
  const double ratio = uniform_real(rng, 0.1, 0.9);
  for (const auto& [unnamed, named] : std::vector<std::pair<LogisticRegressionParams, LogisticRegressionParams>>{
           {with_ratio(std::nullopt), with_ratio(0.0, "l2")},
           {with_ratio(0.0), with_ratio(0.5, "l2")},
           {with_ratio(1.0), with_ratio(0.0, "l1")},
           {with_ratio(ratio), with_ratio(ratio, "elasticnet")}}) {
    SCOPED_TRACE("named " + named.penalty);
    EXPECT_EQ(doubles(fit_logistic<double>(ctx, small, unnamed).coef()),
              doubles(fit_logistic<double>(ctx, small, named).coef()));
  }

  const Classification c = make_classification(rng, uniform_int(rng, 300, 1500), uniform_int(rng, 8, 20), 3, false);
  LogisticRegressionParams p = tight(with_ratio(1.0));
  p.C = uniform_real(rng, 0.01, 0.05);  // strong enough that some coefficients are exactly 0
  const LogisticRegression model = fit_logistic<double>(ctx, c, p);
  expect_optimal(model, c, model.params(), {}, 1e-5);  // the L1 problem's optimum (see above for 1e-5)
  const std::vector<double> coef = doubles(model.coef());
  EXPECT_GT(std::count(coef.begin(), coef.end(), 0.0), 0) << "L1 zeroes some coefficients; L2 would zero none";
}

// solver "liblinear" is scikit-learn's liblinear objective: the intercept penalized as the
// weight of a constant feature of that value.
TEST(LogisticRegression, InterceptScalingPenalizesTheInterceptAsLiblinear) {
  GPUML_FRESH_RNG(rng);
  Context ctx = Context::cpu();
  for (int64_t K : {2, 3}) {
    const Classification unshifted = make_classification(rng, uniform_int(rng, 300, 1500), uniform_int(rng, 3, 10), K, true);
    for (const char* penalty : {"l2", "l1"}) {
      for (const double s : {0.3, 3.0}) {
        SCOPED_TRACE(std::string(penalty) + " with " + std::to_string(K) + " classes, intercept_scaling " +
                     std::to_string(s));
        LogisticRegressionParams p = tight({});
        p.penalty = penalty;
        p.C = uniform_real(rng, 0.05, 0.5);
        // Intercepts far from 0, so that their penalty matters: it moves b in proportion to b.
        // Shifting feature j by t_j leaves the coefficients v of the fit with an unpenalized
        // intercept as they are and moves its intercept b to b − Σ_j t_j v_j (an exact
        // reparametrization). The same shift of 1.5 for every feature gave b − 1.5 Σ_j v_j, near 0
        // where the v_j cancel: |b_plain| was 0.02 (change 8e-4) with GPUML_TEST_SEED=135, 5e-4
        // (change 4e-5) with 1299. t_j = −1.5 sign(b_0) sign(v_0j) makes it b_0 + 1.5 sign(b_0) Σ_j |v_0j|.
        Classification c = unshifted;
        {
          p.solver = "lbfgs";
          const LogisticRegression before = fit_logistic<double>(ctx, unshifted, p);
          const std::vector<double> v = doubles(before.coef());
          const double away = doubles(before.intercept())[0] < 0 ? -1.0 : 1.0;
          for (int64_t i = 0; i < c.n; ++i)
            for (int64_t j = 0; j < c.d; ++j) c.X[i * c.d + j] -= 1.5 * away * (v[j] < 0 ? -1.0 : 1.0);
        }
        p.solver = "liblinear";
        p.intercept_scaling = s;
        const LogisticRegression model = fit_logistic<double>(ctx, c, p);
        expect_optimal(model, c, p, c.w, 1e-5);  // as in L1AndElasticNetSatisfySubgradientConditions
        // The unpenalized intercept is another optimum: the conditions tell them apart.
        p.solver = "lbfgs";  // intercept_scaling then has no effect
        const LogisticRegression plain = fit_logistic<double>(ctx, c, p);
        const std::vector<double> b = doubles(model.intercept()), b_plain = doubles(plain.intercept());
        double change = 0;
        for (std::size_t m = 0; m < b.size(); ++m) change = std::max(change, std::abs(b[m] - b_plain[m]));
        EXPECT_GT(change, 1e-3);
      }
    }
  }
  LogisticRegressionParams bad;
  bad.intercept_scaling = -1;
  GPUML_EXPECT_ERROR(LogisticRegression{bad}, ErrorCode::invalid_argument);
  bad.intercept_scaling = 0;  // scikit-learn's interval is open at 0
  GPUML_EXPECT_ERROR(LogisticRegression{bad}, ErrorCode::invalid_argument);
  bad.intercept_scaling = INFINITY;
  GPUML_EXPECT_ERROR(LogisticRegression{bad}, ErrorCode::invalid_argument);
  GPUML_EXPECT_ERROR(make_estimator("logistic_regression", R"({"intercept_scaling": -2})"), ErrorCode::invalid_argument);
}

// init_coef / init_intercept (scikit-learn's warm_start) are where the iterations begin.
TEST(LogisticRegression, WarmStartBeginsAtInitCoef) {
  GPUML_FRESH_RNG(rng);
  Context ctx = Context::cpu();
  const Classification c = make_classification(rng, uniform_int(rng, 300, 1500), uniform_int(rng, 3, 10), 3, true);
  const LogisticRegression cold = fit_logistic<double>(ctx, c, tight({}));
  // No iteration: the fit returns its starting point.
  LogisticRegressionParams p = tight({});
  p.max_iter = 0;
  p.init_coef = doubles(cold.coef());
  p.init_intercept = doubles(cold.intercept());
  const LogisticRegression at_start = fit_logistic<double>(ctx, c, p);
  EXPECT_EQ(doubles(at_start.coef()), p.init_coef);
  EXPECT_EQ(doubles(at_start.intercept()), p.init_intercept);
  // A chain of 2-iteration fits, each from the last, reaches the cold fit's optimum.
  LogisticRegressionParams step = tight({});
  step.max_iter = 2;
  LogisticRegression last = fit_logistic<double>(ctx, c, step);
  const std::vector<double> first = doubles(last.coef());
  for (int i = 0; i < 500 && !last.converged(); ++i) {
    step.init_coef = doubles(last.coef());
    step.init_intercept = doubles(last.intercept());
    last = fit_logistic<double>(ctx, c, step);
  }
  EXPECT_TRUE(last.converged());
  const std::vector<double> warm = doubles(last.coef()), optimum = doubles(cold.coef());
  EXPECT_NE(warm, first);
  // Restarted every 2 iterations, L-BFGS loses its curvature pairs and its steps shrink until the
  // relative-decrease rule (64 eps) stops it, short of the 1e-10 gradient: coefficients ~3e-6 from
  // the cold optimum were seen. Check the optimality conditions as the other tests do, and the
  // objective, which is flat to second order there.
  expect_optimal(last, c, step, c.w, 1e-5);
  const double f_warm = objective_value(c, warm, doubles(last.intercept()), c.w, step.C, 0.0);
  const double f_cold = objective_value(c, optimum, doubles(cold.intercept()), c.w, step.C, 0.0);
  EXPECT_NEAR(f_warm, f_cold, 1e-10 * f_cold);
  // The parameters round-trip through JSON.
  const auto from_json = make_estimator("logistic_regression", LogisticRegression(p).get_params_json());
  EXPECT_EQ(from_json->get_params_json(), LogisticRegression(p).get_params_json());
  // Sizes that do not fit the data, values that are not finite, an intercept without coef.
  for (const auto& edit : std::vector<std::function<void(LogisticRegressionParams&)>>{
           [](auto& q) { q.init_coef.pop_back(); }, [](auto& q) { q.init_intercept.push_back(0.0); }}) {
    LogisticRegressionParams q = p;
    edit(q);
    LogisticRegression model(q);
    std::vector<double> X = c.X, y = c.y;
    GPUML_EXPECT_ERROR(model.fit(ctx, host_view(X.data(), c.n, c.d), host_view(y.data(), c.n)),
                       ErrorCode::invalid_argument);
    EXPECT_FALSE(model.fitted());
  }
  LogisticRegressionParams q = p;
  q.init_coef[0] = NAN;
  GPUML_EXPECT_ERROR(LogisticRegression{q}, ErrorCode::invalid_argument);
  q = LogisticRegressionParams{};
  q.init_intercept = {0.0};
  GPUML_EXPECT_ERROR(LogisticRegression{q}, ErrorCode::invalid_argument);
  GPUML_EXPECT_ERROR(make_estimator("logistic_regression", R"({"init_coef": [1, "a"]})"), ErrorCode::invalid_argument);
  GPUML_EXPECT_ERROR(make_estimator("logistic_regression", R"({"init_coef": [[1, 2], [3]]})"),
                     ErrorCode::invalid_argument);
}

// warm_start (in C++): a refit of the same model continues from its own coef_ and intercept_;
// with liblinear (as scikit-learn) or without warm_start it starts from zeros again.
TEST(LogisticRegression, WarmStartRefitContinuesTheModelsOwnFit) {
  GPUML_FRESH_RNG(rng);
  Context ctx = Context::cpu();
  const Classification c = make_classification(rng, uniform_int(rng, 200, 800), uniform_int(rng, 3, 8), 3, true);
  std::vector<double> X = c.X, y = c.y, w = c.w;
  const ArrayView Xv = host_view(X.data(), c.n, c.d), yv = host_view(y.data(), c.n), wv = host_view(w.data(), c.n);
  for (const bool warm : {true, false}) {
    for (const char* solver : {"lbfgs", "liblinear"}) {
      SCOPED_TRACE(std::string(solver) + (warm ? " warm" : " cold"));
      LogisticRegressionParams p = tight({});
      p.max_iter = 3;  // far from tol 1e-10: each fit stops after 3 iterations
      p.warm_start = warm;
      p.solver = solver;
      LogisticRegression model(p);
      model.fit(ctx, Xv, yv, &wv);
      const std::vector<double> first = doubles(model.coef());
      model.fit(ctx, Xv, yv, &wv);
      if (warm && std::string(solver) == "lbfgs")
        EXPECT_NE(doubles(model.coef()), first);  // 3 more iterations from the first fit's end
      else
        EXPECT_EQ(doubles(model.coef()), first);  // the same 3 iterations from zeros
    }
  }
}

TEST(LogisticRegression, ClassWeightsEqualSampleWeights) {
  GPUML_FRESH_RNG(rng);
  Context ctx = Context::cpu();
  const Classification c = make_classification(rng, uniform_int(rng, 200, 1500), uniform_int(rng, 2, 8), 3, true);
  LogisticRegressionParams balanced = tight({});
  balanced.class_weight_balanced = true;
  const LogisticRegression by_class = fit_logistic<double>(ctx, c, balanced);

  // "balanced": S / (K * weighted count of the class), times the sample weight.
  std::vector<double> count(3, 0.0);
  double S = 0;
  for (int64_t i = 0; i < c.n; ++i) {
    count[static_cast<int>(c.y[i] / 2)] += c.w[i];
    S += c.w[i];
  }
  std::vector<double> combined(c.n);
  for (int64_t i = 0; i < c.n; ++i) combined[i] = c.w[i] * S / (3 * count[static_cast<int>(c.y[i] / 2)]);
  const LogisticRegression by_sample = fit_logistic<double>(ctx, c, tight({}), &combined);
  const std::vector<double> a = doubles(by_class.coef()), b = doubles(by_sample.coef());
  // The same problem (up to the rounding of the weights) solved twice to gtol 1e-10: the
  // coefficients then differ by up to gtol / λ_min of the Hessian; up to 2.2e-7 was seen in 1000
  // fits (0.2% of them passed 1e-7), so 1e-6.
  for (std::size_t j = 0; j < a.size(); ++j) EXPECT_NEAR(a[j], b[j], 1e-6 * (1 + std::abs(b[j])));

  LogisticRegressionParams dict = tight({});
  dict.class_weight = {{2.0, 3.5}, {0.0, 0.5}};  // label 4 not listed: weight 1
  const LogisticRegression listed = fit_logistic<double>(ctx, c, dict);
  for (int64_t i = 0; i < c.n; ++i) combined[i] = c.w[i] * (c.y[i] == 2.0 ? 3.5 : c.y[i] == 0.0 ? 0.5 : 1.0);
  const LogisticRegression listed_ref = fit_logistic<double>(ctx, c, tight({}), &combined);
  const std::vector<double> e = doubles(listed.coef()), f = doubles(listed_ref.coef());
  for (std::size_t j = 0; j < e.size(); ++j) EXPECT_NEAR(e[j], f[j], 1e-6 * (1 + std::abs(f[j])));
}

TEST(LogisticRegression, PredictionsAgreeWithProbabilitiesAndScores) {
  GPUML_FRESH_RNG(rng);
  Context ctx = Context::cpu();
  for (int64_t K : {2, 5}) {
    const Classification c = make_classification(rng, uniform_int(rng, 100, 800), uniform_int(rng, 1, 6), K, false, 1.0);
    const LogisticRegression model = fit_logistic<double>(ctx, c, {});
    const int64_t n = c.n, k = K == 2 ? 1 : K;
    std::vector<double> labels(n), proba(n * K), scores(n * k);
    const ArrayView X = host_view(c.X.data(), n, c.d);
    model.predict(ctx, X, host_view(labels.data(), n));
    model.predict_proba(ctx, X, host_view(proba.data(), n, K));
    if (k == 1)
      model.decision_function(ctx, X, host_view(scores.data(), n));
    else
      model.decision_function(ctx, X, host_view(scores.data(), n, k));
    const std::vector<double> classes = doubles(model.classes()), coef = doubles(model.coef()),
                              b = doubles(model.intercept());
    for (int64_t i = 0; i < n; ++i) {
      double total = 0;
      for (int64_t m = 0; m < K; ++m) total += proba[i * K + m];
      EXPECT_NEAR(total, 1.0, 1e-12);  // a softmax / sigmoid pair in double
      const int64_t best = std::max_element(&proba[i * K], &proba[i * K] + K) - &proba[i * K];
      EXPECT_EQ(labels[i], classes[best]);
      for (int64_t m = 0; m < k; ++m) {
        double z = b[m];
        for (int64_t j = 0; j < c.d; ++j) z += coef[m * c.d + j] * c.X[i * c.d + j];
        EXPECT_NEAR(scores[i * k + m], z, 1e-12 * (1 + std::abs(z)));
      }
      if (k == 1) EXPECT_NEAR(proba[i * 2 + 1], 1 / (1 + std::exp(-scores[i])), 1e-14);
    }
    // Integer output arrays hold the labels too.
    std::vector<int64_t> int_labels(n);
    model.predict(ctx, X, host_view(int_labels.data(), n));
    for (int64_t i = 0; i < n; ++i) EXPECT_EQ(static_cast<double>(int_labels[i]), labels[i]);
  }
}

TEST(LogisticRegression, Float32FitsCloseToFloat64) {
  GPUML_FRESH_RNG(rng);
  Context ctx = Context::cpu();
  const Classification c = make_classification(rng, uniform_int(rng, 500, 3000), uniform_int(rng, 2, 10), 3, false);
  LogisticRegressionParams p;
  p.tol = 1e-6;
  p.max_iter = 1000;
  const LogisticRegression f32 = fit_logistic<float>(ctx, c, p), f64 = fit_logistic<double>(ctx, c, p);
  EXPECT_EQ(f32.coef().dtype(), DType::float32);
  const std::vector<double> a = doubles(f32.coef()), b = doubles(f64.coef());
  double largest = 0;
  for (double v : b) largest = std::max(largest, std::abs(v));
  // The objective (in long double, on the float64 data) is what float32 can match closely: its
  // rounding of X and of the scores moves f by ~1e-7 relative. The coefficients move further along
  // flat directions of f (3 classes, possibly near-separable data): up to 1.9e-4 of the largest
  // coefficient was seen in 400 fits (4% of them passed 1e-4), so they get 1e-3.
  const double f32_objective = objective_value(c, a, doubles(f32.intercept()), {}, p.C, 0.0);
  const double f64_objective = objective_value(c, b, doubles(f64.intercept()), {}, p.C, 0.0);
  EXPECT_NEAR(f32_objective, f64_objective, 1e-6 * f64_objective);
  for (std::size_t j = 0; j < a.size(); ++j) EXPECT_NEAR(a[j], b[j], 1e-3 * largest);
}

TEST(LogisticRegression, ReachingMaxIterIsReportedAndZeroIterationsGivesZeros) {
  GPUML_FRESH_RNG(rng);
  Context ctx = Context::cpu();
  const Classification c = make_classification(rng, 500, 6, 3, false);
  LogisticRegressionParams p;
  p.tol = 1e-14;
  p.max_iter = 2;
  const LogisticRegression few = fit_logistic<double>(ctx, c, p);
  EXPECT_FALSE(few.converged());
  EXPECT_EQ(few.n_iter(), 2);
  p.max_iter = 0;
  const LogisticRegression none = fit_logistic<double>(ctx, c, p);
  EXPECT_EQ(none.n_iter(), 0);
  for (double v : doubles(none.coef())) EXPECT_EQ(v, 0.0);
}

TEST(LogisticRegression, BadInputGivesNamedErrors) {
  GPUML_FRESH_RNG(rng);
  Context ctx = Context::cpu();
  const Classification c = make_classification(rng, 50, 3, 2, false);
  std::vector<double> X = c.X, y = c.y;
  const ArrayView Xv = host_view(X.data(), c.n, c.d);

  std::vector<double> one_class(c.n, 4.0);
  LogisticRegression model;
  GPUML_EXPECT_ERROR(model.fit(ctx, Xv, host_view(one_class.data(), c.n)), ErrorCode::invalid_argument);
  EXPECT_FALSE(model.fitted());
  std::vector<double> bad = X;
  bad[uniform_int(rng, 0, static_cast<int64_t>(bad.size()) - 1)] = std::nan("");
  GPUML_EXPECT_ERROR(model.fit(ctx, host_view(bad.data(), c.n, c.d), host_view(y.data(), c.n)), ErrorCode::invalid_argument);
  std::vector<double> bad_y = y;
  bad_y[3] = INFINITY;
  GPUML_EXPECT_ERROR(model.fit(ctx, Xv, host_view(bad_y.data(), c.n)), ErrorCode::invalid_argument);
  GPUML_EXPECT_ERROR(model.fit(ctx, Xv, host_view(y.data(), c.n - 1)), ErrorCode::invalid_argument);
  std::vector<double> negative(c.n, 1.0);
  negative[7] = -1.0;
  const ArrayView nv = host_view(negative.data(), c.n);
  GPUML_EXPECT_ERROR(model.fit(ctx, Xv, host_view(y.data(), c.n), &nv), ErrorCode::invalid_argument);
  std::vector<double> out(c.n);
  GPUML_EXPECT_ERROR(model.predict(ctx, Xv, host_view(out.data(), c.n)), ErrorCode::not_fitted);

  auto params = [](auto edit) {
    LogisticRegressionParams p;
    edit(p);
    return p;
  };
  GPUML_EXPECT_ERROR(LogisticRegression(params([](auto& p) { p.C = 0; })), ErrorCode::invalid_argument);
  GPUML_EXPECT_ERROR(LogisticRegression(params([](auto& p) { p.C = -1; })), ErrorCode::invalid_argument);
  GPUML_EXPECT_ERROR(LogisticRegression(params([](auto& p) { p.penalty = "l3"; })), ErrorCode::invalid_argument);
  GPUML_EXPECT_ERROR(LogisticRegression(params([](auto& p) {
                       p.penalty = "elasticnet";
                       p.l1_ratio = std::nullopt;
                     })),
                     ErrorCode::invalid_argument);
  GPUML_EXPECT_ERROR(LogisticRegression(params([](auto& p) { p.tol = -1; })), ErrorCode::invalid_argument);
  GPUML_EXPECT_ERROR(LogisticRegression(params([](auto& p) { p.max_iter = -1; })), ErrorCode::invalid_argument);
  GPUML_EXPECT_ERROR(make_estimator("logistic_regression", R"({"penalty": "elasticnet", "l1_ratio": null})"),
                     ErrorCode::invalid_argument);
  GPUML_EXPECT_ERROR(make_estimator("logistic_regression", R"({"class_weight": {"1": 2}})"), ErrorCode::invalid_argument);
  GPUML_EXPECT_ERROR(make_estimator("logistic_regression", R"({"solver": "sgd"})"), ErrorCode::invalid_argument);

  // A listed label that is not a class, while a class is unlisted.
  LogisticRegression listed(params([](auto& p) { p.class_weight = {{0.0, 2.0}, {7.0, 1.0}}; }));
  GPUML_EXPECT_ERROR(listed.fit(ctx, Xv, host_view(y.data(), c.n)), ErrorCode::invalid_argument);

  model.fit(ctx, Xv, host_view(y.data(), c.n));
  std::vector<double> wide(c.n * (c.d + 1), 1.0);
  GPUML_EXPECT_ERROR(model.predict(ctx, host_view(wide.data(), c.n, c.d + 1), host_view(out.data(), c.n)),
                     ErrorCode::invalid_argument);
}

// A C so small that the penalty's weight 1 / (C · total sample weight) overflows is an error
// naming C (it was "the objective is not finite (X too large?)"); a C just large enough to keep
// that weight finite still fits, to the model with no coefficients.
TEST(LogisticRegression, TinyCIsRefusedByNameAndTheSmallestUsableCFits) {
  GPUML_FRESH_RNG(rng);
  Context ctx = Context::cpu();
  const Classification c = make_classification(rng, 60, 3, 2, false);
  std::vector<double> X = c.X, y = c.y;
  const ArrayView Xv = host_view(X.data(), c.n, c.d), yv = host_view(y.data(), c.n);
  for (const double C : {5e-324, 1e-320}) {  // C · 60 rows < 1 / DBL_MAX: 1 / (C · 60) is inf
    LogisticRegressionParams p;
    p.C = C;
    LogisticRegression model(p);
    try {
      model.fit(ctx, Xv, yv);
      ADD_FAILURE() << "C = " << C << " fitted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::invalid_argument) << e.what();
      EXPECT_NE(std::string(e.what()).find("C = "), std::string::npos) << "the message names C: " << e.what();
    }
    EXPECT_FALSE(model.fitted());
  }
  // C · n = 4 / DBL_MAX: the penalty's weight is DBL_MAX / 4, finite.
  LogisticRegressionParams p;
  p.C = 4.0 / std::numeric_limits<double>::max() / static_cast<double>(c.n);
  LogisticRegression model(p);
  model.fit(ctx, Xv, yv);
  // The penalty pins every coefficient to ~gradient / 4.5e307: zero to the last subnormal.
  for (const double b : doubles(model.coef())) EXPECT_LE(std::abs(b), 1e-300);
  for (const double b : doubles(model.intercept())) EXPECT_TRUE(std::isfinite(b));
}

TEST(LogisticRegression, ParamsAndModelRoundTrip) {
  GPUML_FRESH_RNG(rng);
  Context ctx = Context::cpu();
  const Classification c = make_classification(rng, 300, 4, 3, true);
  auto model = make_estimator("logistic_regression",
                              R"({"penalty": "elasticnet", "l1_ratio": 0.3, "C": 0.5, "class_weight": [[0, 2.0]],
                                  "max_iter": 500, "tol": 1e-8, "fit_intercept": true})");
  std::vector<double> X = c.X, y = c.y;
  const ArrayView wv = host_view(c.w.data(), c.n);
  const ArrayView yv = host_view(y.data(), c.n);
  model->fit(ctx, host_view(X.data(), c.n, c.d), &yv, &wv);
  const std::vector<uint8_t> bytes = serialize(*model);
  const auto restored = deserialize(bytes.data(), bytes.size());
  EXPECT_EQ(restored->get_params_json(), model->get_params_json());
  std::vector<double> a(c.n * 3), b(c.n * 3);
  model->predict_proba(ctx, host_view(X.data(), c.n, c.d), host_view(a.data(), c.n, 3));
  restored->predict_proba(ctx, host_view(X.data(), c.n, c.d), host_view(b.data(), c.n, 3));
  EXPECT_EQ(a, b);
  const auto again = make_estimator("logistic_regression", model->get_params_json());
  EXPECT_EQ(again->get_params_json(), model->get_params_json());
}

TEST(LogisticRegressionGpu, MatchesCpu) {
  GPUML_CUDA_CONTEXT_OR_SKIP(gpu);
  GPUML_FRESH_RNG(rng);
  Context cpu = Context::cpu();
  for (int64_t K : {2, 4}) {
    for (const char* penalty : {"l2", "l1"}) {
      SCOPED_TRACE(std::string(penalty) + " with " + std::to_string(K) + " classes");
      const Classification c = make_classification(rng, uniform_int(rng, 2000, 20000), uniform_int(rng, 3, 40), K, true);
      LogisticRegressionParams p = tight({});
      p.penalty = penalty;
      p.C = 0.5;
      const LogisticRegression on_gpu = fit_logistic<double>(gpu, c, p), on_cpu = fit_logistic<double>(cpu, c, p);
      const std::vector<double> a = doubles(on_gpu.coef()), b = doubles(on_cpu.coef());
      // L2: one strongly convex problem, both fits at gradients ~1e-9: 1e-6. L1 (OWL-QN): both
      // stop when f stops decreasing in double, and the L1 kinks leave directions along which f
      // hardly changes: coefficients 5e-5 apart were seen, with equal objectives.
      const bool l1 = std::string(penalty) == "l1";
      for (std::size_t j = 0; j < a.size(); ++j) EXPECT_NEAR(a[j], b[j], (l1 ? 1e-3 : 1e-6) * (1 + std::abs(b[j])));
      const double f_a = objective_value(c, a, doubles(on_gpu.intercept()), c.w, p.C, l1 ? 1.0 : 0.0);
      const double f_b = objective_value(c, b, doubles(on_cpu.intercept()), c.w, p.C, l1 ? 1.0 : 0.0);
      EXPECT_NEAR(f_a, f_b, 1e-10 * f_b);
      // float32: the same fit from float32 data on both; the scores round differently.
      LogisticRegressionParams q;
      q.penalty = penalty;
      q.tol = 1e-5;
      q.max_iter = 2000;
      const LogisticRegression g32 = fit_logistic<float>(gpu, c, q), c32 = fit_logistic<float>(cpu, c, q);
      // float32 scores carry ~1e-7 relative rounding into f itself, so near the optimum the line
      // searches stop on noise, at points that depend on the summation order: coefficients 2e-3
      // of the largest apart and objectives up to ~1e-5 apart were seen. Compare objectives
      // (in double) to 1e-4 and predictions.
      const double rho = std::string(penalty) == "l1" ? 1.0 : 0.0;
      const double f_gpu = objective_value(c, doubles(g32.coef()), doubles(g32.intercept()), c.w, q.C, rho);
      const double f_cpu = objective_value(c, doubles(c32.coef()), doubles(c32.intercept()), c.w, q.C, rho);
      EXPECT_NEAR(f_gpu, f_cpu, 1e-4 * f_cpu);
      std::vector<float> X(c.X.begin(), c.X.end());
      std::vector<double> la(c.n), lb(c.n);
      g32.predict(gpu, host_view(X.data(), c.n, c.d), host_view(la.data(), c.n));
      c32.predict(cpu, host_view(X.data(), c.n, c.d), host_view(lb.data(), c.n));
      int64_t differ = 0;
      for (int64_t i = 0; i < c.n; ++i) differ += la[i] != lb[i];
      EXPECT_LE(differ, c.n / 50) << "predictions may differ only for rows near the decision boundary";
    }
  }
}

// liblinear's penalized intercept and the warm start on the CUDA backend, against the CPU one.
TEST(LogisticRegressionGpu, InterceptScalingAndWarmStartMatchCpu) {
  GPUML_CUDA_CONTEXT_OR_SKIP(gpu);
  GPUML_FRESH_RNG(rng);
  Context cpu = Context::cpu();
  Classification c = make_classification(rng, uniform_int(rng, 2000, 20000), uniform_int(rng, 3, 40), 2, true);
  for (double& x : c.X) x += 1.5;
  LogisticRegressionParams p = tight({});
  p.C = 0.5;
  p.solver = "liblinear";
  p.intercept_scaling = 2.0;
  const LogisticRegression on_gpu = fit_logistic<double>(gpu, c, p), on_cpu = fit_logistic<double>(cpu, c, p);
  expect_optimal(on_gpu, c, p, c.w, 1e-5);
  // One strongly convex L2 problem, both at gradients ~1e-9: 1e-6, as MatchesCpu.
  const std::vector<double> a = doubles(on_gpu.coef()), b = doubles(on_cpu.coef());
  for (std::size_t j = 0; j < a.size(); ++j) EXPECT_NEAR(a[j], b[j], 1e-6 * (1 + std::abs(b[j])));
  EXPECT_NEAR(doubles(on_gpu.intercept())[0], doubles(on_cpu.intercept())[0],
              1e-6 * (1 + std::abs(doubles(on_cpu.intercept())[0])));
  LogisticRegressionParams warm = p;
  warm.max_iter = 0;
  warm.init_coef = b;
  warm.init_intercept = doubles(on_cpu.intercept());
  const LogisticRegression started = fit_logistic<double>(gpu, c, warm);
  EXPECT_EQ(doubles(started.coef()), warm.init_coef);
  EXPECT_EQ(doubles(started.intercept()), warm.init_intercept);
}

}  // namespace
}  // namespace gpuml

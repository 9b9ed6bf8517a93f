// Gram-form elastic-net coordinate descent, following scikit-learn's enet_coordinate_descent_gram:
// the same update, stopping rule (a sweep whose largest coefficient change is at most tol times
// the largest coefficient, or the last sweep, triggers a duality-gap check; stop when the gap is
// at most tol * yᵀy) and gap formulas. Its gap-safe screening is left out: it only skips
// coordinates that are provably zero at the optimum, so the solution is the same.
#include "linear_model/coordinate_descent.hpp"

#include <algorithm>
#include <cmath>

#include "core/random.hpp"

namespace gpuml::detail {

namespace {

// The duality gap at w (Qw = Q w), and Xᵀ(y − Xw) − l2 w into XtA.
double duality_gap(const std::vector<double>& w, const std::vector<double>& Qw, const double* q, double y_sq_norm,
                   const CoordinateDescentOptions& o, std::vector<double>& XtA) {
  const std::size_t d = w.size();
  double q_dot_w = 0.0, wQw = 0.0, w_l1 = 0.0, w_l2_sq = 0.0;
  for (std::size_t j = 0; j < d; ++j) {
    q_dot_w += w[j] * q[j];
    wQw += w[j] * Qw[j];
    w_l1 += std::fabs(w[j]);
    w_l2_sq += w[j] * w[j];
  }
  const double R_sq = y_sq_norm + wQw - 2.0 * q_dot_w;  // |y − Xw|²
  const double Ry = y_sq_norm - q_dot_w;                // (y − Xw)ᵀy
  for (std::size_t j = 0; j < d; ++j) XtA[j] = q[j] - Qw[j] - o.l2 * w[j];
  if (o.l1 == 0) {
    double grad_sq = 0.0;
    for (std::size_t j = 0; j < d; ++j) grad_sq += (q[j] - Qw[j]) * (q[j] - Qw[j]);
    if (o.l2 == 0) return grad_sq;  // least squares: no dual, the squared gradient instead
    return R_sq + 0.5 * o.l2 * w_l2_sq - Ry + grad_sq / (2 * o.l2);  // ridge
  }
  double dual_norm = 0.0;  // the largest |XᵀA_j| (the largest XᵀA_j when positive)
  for (std::size_t j = 0; j < d; ++j) dual_norm = std::max(dual_norm, o.positive ? XtA[j] : std::fabs(XtA[j]));
  const double primal = 0.5 * (R_sq + o.l2 * w_l2_sq) + o.l1 * w_l1;
  const double scale = dual_norm > o.l1 ? o.l1 / dual_norm : 1.0;  // to a dual-feasible point
  const double dual = -0.5 * scale * scale * (R_sq + o.l2 * w_l2_sq) + scale * Ry;
  return primal - dual;
}

}  // namespace

CoordinateDescentResult enet_coordinate_descent_gram(const double* Q, const double* q, double y_sq_norm, int64_t d,
                                                     std::vector<double> coef_init,
                                                     const CoordinateDescentOptions& o) {
  const std::size_t m = static_cast<std::size_t>(d);
  CoordinateDescentResult result;
  std::vector<double>& w = result.coef;
  w = coef_init.empty() ? std::vector<double>(m, 0.0) : std::move(coef_init);
  std::vector<double> Qw(m, 0.0), XtA(m, 0.0);
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t j = 0; j < m; ++j) Qw[i] += Q[i * m + j] * w[j];
  const double tol = o.tol * y_sq_norm;
  Random rng(o.seed);

  result.gap = duality_gap(w, Qw, q, y_sq_norm, o, XtA);
  if (result.gap >= 0 && result.gap <= tol) {  // a negative gap (singular Q) is not trusted
    result.converged = true;
    return result;
  }
  for (int64_t iter = 0; iter < o.max_iter; ++iter) {
    result.n_iter = iter + 1;
    double w_max = 0.0, dw_max = 0.0;
    for (std::size_t f = 0; f < m; ++f) {
      const std::size_t j = o.random ? static_cast<std::size_t>(rng.below(m)) : f;
      const double Qjj = Q[j * m + j];
      if (Qjj == 0.0) continue;
      const double w_old = w[j];
      const double rho = q[j] - Qw[j] + w_old * Qjj;  // X_jᵀ(y − Xw + X_j w_j)
      if (o.positive && rho < 0)
        w[j] = 0.0;
      else
        w[j] = std::copysign(std::max(std::fabs(rho) - o.l1, 0.0), rho) / (Qjj + o.l2);
      if (w[j] != w_old) {
        const double delta = w[j] - w_old;
        const double* Qj = Q + j * m;
        for (std::size_t i = 0; i < m; ++i) Qw[i] += delta * Qj[i];
      }
      dw_max = std::max(dw_max, std::fabs(w[j] - w_old));
      w_max = std::max(w_max, std::fabs(w[j]));
    }
    if (w_max == 0.0 || dw_max / w_max <= o.tol || iter == o.max_iter - 1) {
      result.gap = duality_gap(w, Qw, q, y_sq_norm, o, XtA);
      if (result.gap <= tol) {
        result.converged = true;
        break;
      }
    }
  }
  return result;
}

}  // namespace gpuml::detail

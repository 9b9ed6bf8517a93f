// Lawson-Hanson active-set non-negative least squares on the Gram system (see the header).
#define EIGEN_DONT_PARALLELIZE  // as every unit of the library that uses Eigen (least_squares.cpp)
#include "linear_model/nonnegative_quadratic.hpp"

#include <Eigen/Dense>

#include <algorithm>
#include <cmath>
#include <limits>

namespace gpuml::detail {

namespace {

// The solution of M_FF s_F = q_F over the free coordinates F (s is zero elsewhere): Cholesky, or
// the minimum-norm solution when M_FF is singular.
std::vector<double> solve_free(const double* Q, const double* q, int64_t d, double l2, const std::vector<int64_t>& free) {
  const Eigen::Index k = static_cast<Eigen::Index>(free.size());
  Eigen::MatrixXd M(k, k);
  Eigen::VectorXd r(k);
  for (Eigen::Index a = 0; a < k; ++a) {
    for (Eigen::Index b = 0; b < k; ++b) M(a, b) = Q[free[a] * d + free[b]];
    M(a, a) += l2;
    r[a] = q[free[a]];
  }
  Eigen::VectorXd s;
  const Eigen::LLT<Eigen::MatrixXd> llt(M);
  if (llt.info() == Eigen::Success) s = llt.solve(r);
  if (llt.info() != Eigen::Success || !s.allFinite()) s = M.completeOrthogonalDecomposition().solve(r);
  std::vector<double> out(static_cast<std::size_t>(d), 0.0);
  for (Eigen::Index a = 0; a < k; ++a) out[free[a]] = s[a];
  return out;
}

}  // namespace

NonnegativeResult nonnegative_quadratic(const double* Q, const double* q, int64_t d, const NonnegativeOptions& o) {
  const std::size_t m = static_cast<std::size_t>(d);
  const int64_t max_iter = o.max_iter > 0 ? o.max_iter : 3 * d + 10;
  NonnegativeResult result;
  std::vector<double>& c = result.coef;
  c.assign(m, 0.0);
  std::vector<bool> is_free(m, false);
  std::vector<bool> blocked(m, false);  // joined and left at once (rounding): skipped until c moves
  double q_max = 0.0, diag_max = 0.0;
  for (std::size_t j = 0; j < m; ++j) {
    q_max = std::max(q_max, std::fabs(q[j]));
    diag_max = std::max(diag_max, Q[j * m + j] + o.l2);
  }
  std::vector<double> w(m);  // q − (Q + l2 I) c: minus the gradient
  auto update_gradient = [&] {
    double c_max = 0.0;
    for (std::size_t i = 0; i < m; ++i) {
      double v = q[i] - o.l2 * c[i];
      const double* Qi = Q + i * m;
      for (std::size_t j = 0; j < m; ++j) v -= Qi[j] * c[j];
      w[i] = v;
      c_max = std::max(c_max, c[i]);
    }
    // What rounding leaves in w: a coordinate must want to grow by more than this to join.
    return 10.0 * std::numeric_limits<double>::epsilon() * (q_max + static_cast<double>(d) * diag_max * c_max);
  };
  // The KKT residual: growth wanted by a coordinate at zero, or any gradient on a free one.
  auto projected_gradient = [&] {
    double g = 0.0;
    for (std::size_t j = 0; j < m; ++j) g = std::max(g, is_free[j] ? std::fabs(w[j]) : std::max(w[j], 0.0));
    return g;
  };

  bool kkt = false;
  while (true) {
    const double floor = update_gradient();
    int64_t join = -1;
    for (std::size_t j = 0; j < m; ++j)
      if (!is_free[j] && !blocked[j] && w[j] > floor && (join < 0 || w[j] > w[static_cast<std::size_t>(join)]))
        join = static_cast<int64_t>(j);
    if (join < 0) {
      kkt = true;
      break;
    }
    if (result.n_iter >= max_iter) break;
    is_free[join] = true;
    // Solve on the free set; while the solution leaves the feasible set, step from c toward it up
    // to the boundary and drop the coordinates that reach zero.
    bool first = true, moved = false;
    while (result.n_iter < max_iter) {
      ++result.n_iter;
      std::vector<int64_t> free;
      for (std::size_t j = 0; j < m; ++j)
        if (is_free[j]) free.push_back(static_cast<int64_t>(j));
      const std::vector<double> s = solve_free(Q, q, d, o.l2, free);
      if (first && s[join] <= 0) {  // the joining coordinate cannot grow after all (rounding)
        is_free[join] = false;
        blocked[join] = true;
        break;
      }
      first = false;
      double step = 1.0;
      int64_t blocking = -1;  // the coordinate that reaches zero first
      for (int64_t j : free)
        if (s[j] <= 0 && c[j] / (c[j] - s[j]) < step) {
          step = c[j] / (c[j] - s[j]);
          blocking = j;
        }
      moved = true;
      if (blocking < 0) {
        for (int64_t j : free) c[j] = s[j];
        break;
      }
      for (int64_t j : free) {
        c[j] += step * (s[j] - c[j]);
        if (j == blocking || c[j] <= 0) {  // on the boundary (exactly, for the one that set the step)
          c[j] = 0.0;
          is_free[j] = false;
        }
      }
    }
    if (moved) std::fill(blocked.begin(), blocked.end(), false);
  }
  update_gradient();
  result.projected_gradient = projected_gradient();
  result.converged = kkt || result.projected_gradient <= o.tol * q_max;
  return result;
}

}  // namespace gpuml::detail

#pragma once
// Non-negative least squares in the Gram form, on the host in double: over c (d,),
//   minimize (1/2) cᵀ(Q + l2 I)c − qᵀc  subject to c >= 0,
// which is (1/2)|y − Xc|² + (l2/2)|c|² under c >= 0 when Q = XᵀX and q = Xᵀy: positive=True of
// LinearRegression (l2 = 0, scipy.optimize.nnls's problem) and of Ridge (l2 = alpha). The
// method is Lawson and Hanson's active set: coordinates join the free set one at a time (the one
// whose gradient most wants to grow), the free set's unconstrained problem is solved exactly, and
// a step that would cross zero stops at the boundary and frees no more than it must. It ends in
// finitely many steps at the exact minimizer (up to rounding); the cost per step is a solve of the
// free set's system, at most d x d, independent of the number of samples.
#include <cstdint>
#include <vector>

namespace gpuml::detail {

struct NonnegativeOptions {
  double l2 = 0.0;          // >= 0
  int64_t max_iter = 0;     // steps (a coordinate joining, or a step to the boundary); <= 0: 3 d + 10
  double tol = 1e-4;        // converged when the largest gradient entry wanting a coordinate to grow
                            // is at most tol * |q|∞ (the KKT conditions, relative to the gradient at 0)
};

struct NonnegativeResult {
  std::vector<double> coef;        // (d,), every entry >= 0
  int64_t n_iter = 0;              // steps taken
  bool converged = false;          // the KKT conditions hold within tol
  double projected_gradient = 0.0; // max over j of the entry of the projected gradient, unscaled
};

// Q is d x d row-major (symmetric, positive semidefinite), q (d,). Q + l2 I singular on the free
// set (collinear columns without a penalty) takes the minimum-norm solution of that set.
NonnegativeResult nonnegative_quadratic(const double* Q, const double* q, int64_t d, const NonnegativeOptions& options);

}  // namespace gpuml::detail

#pragma once
// Limited-memory quasi-Newton minimization on the host, in double: L-BFGS for smooth objectives
// and OWL-QN (Andrew and Gao, 2007) when an L1 term is added. The variables are few (classes x
// features); each evaluation of the objective is the expensive part, done by a backend.
#include <functional>
#include <limits>
#include <vector>

#include "gpuml/core/export.hpp"

namespace gpuml::detail {

struct QuasiNewtonOptions {
  int max_iter = 100;       // iterations (accepted steps)
  double gtol = 1e-4;       // converged when max |projected gradient| <= gtol (scipy's pgtol)
  double ftol = 64 * std::numeric_limits<double>::epsilon();  // or when the relative decrease is <= ftol
  // > 0: converged instead when a step's max |dx| <= xtol * max |x| (scikit-learn's sag / saga
  // rule, whose tol bounds the weights' change, not the gradient), or the gradient is 0.
  double xtol = 0.0;
  int memory = 10;          // correction pairs kept (scipy's maxcor)
  int max_line_search = 50; // evaluations per line search (scikit-learn's maxls)
  int threads = 1;          // host threads for the vector work (results do not depend on it)
};

struct QuasiNewtonResult {
  int n_iter = 0;
  int n_evaluations = 0;
  // false: max_iter reached, or the line search found no step with sufficient decrease. A step
  // that leaves the objective unchanged in double (no decrease left above its rounding) counts as
  // one of zero reduction, which meets ftol: converged, as L-BFGS-B's.
  bool converged = false;
  double objective = 0.0;   // f(x) + Σ l1_i |x_i| at the returned x
};

// f(x) returns the smooth part of the objective and writes its gradient into grad (sized like x).
using SmoothObjective = std::function<double(const std::vector<double>& x, std::vector<double>& grad)>;

// Minimizes f(x) + Σ_i l1_i |x_i| starting from x, which receives the result. l1 empty (or all
// zero): L-BFGS with a strong Wolfe line search; else OWL-QN with a projected backtracking search.
// Exported (GPUML_API) only for tests/cpp/linear_model/quasi_newton_test.cpp.
GPUML_API QuasiNewtonResult minimize_quasi_newton(const SmoothObjective& f, std::vector<double>& x, const std::vector<double>& l1,
                                        const QuasiNewtonOptions& options);

}  // namespace gpuml::detail

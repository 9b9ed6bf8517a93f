#pragma once
// Elastic-net coordinate descent in the Gram form (scikit-learn's enet_coordinate_descent_gram),
// on the host in double. It minimizes, over w (d,),
//   (1/2) wᵀQw − qᵀw + (1/2) yᵀy + l1 |w|₁ + (l2/2) |w|²
// which is (1/2)|y − Xw|² + l1 |w|₁ + (l2/2)|w|² when Q = XᵀX and q = Xᵀy. The cost per sweep is
// O(d²), independent of the number of samples.
#include <cstdint>
#include <vector>

namespace gpuml::detail {

struct CoordinateDescentOptions {
  double l1 = 0.0;         // >= 0
  double l2 = 0.0;         // >= 0
  int64_t max_iter = 1000;  // sweeps over the coordinates
  double tol = 1e-4;       // relative: the duality gap must reach tol * yᵀy
  bool positive = false;   // constrain w >= 0
  bool random = false;     // "random" selection: coordinates drawn uniformly with replacement
  uint64_t seed = 0;       // for random selection
};

struct CoordinateDescentResult {
  std::vector<double> coef;  // (d,)
  double gap = 0.0;          // the last duality gap (unscaled)
  int64_t n_iter = 0;        // sweeps run
  bool converged = false;    // the gap reached tol * yᵀy
};

// Q is d x d row-major (symmetric), q (d,), y_sq_norm = yᵀy; coef_init (d,) or empty (zeros).
CoordinateDescentResult enet_coordinate_descent_gram(const double* Q, const double* q, double y_sq_norm, int64_t d,
                                                     std::vector<double> coef_init,
                                                     const CoordinateDescentOptions& options);

}  // namespace gpuml::detail

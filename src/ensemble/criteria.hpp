#pragma once
// Split criteria of the random forests, as scikit-learn's tree criteria define them (weighted
// impurities; entropy in bits). Plain inline functions, usable from host code and (with
// __CUDACC__) from kernels, so that the CPU and CUDA backends score splits with the same formulas.
//
// A node's statistics:
//  - classification: the weighted count of each of k classes (and their total W);
//  - regression: W = Σ w, S = Σ w y, and Q = Σ w y² (squared_error) or Σ w y log y (poisson).
#include <cmath>

#if defined(__CUDACC__)
#define GPUML_HOST_DEVICE __host__ __device__
#else
#define GPUML_HOST_DEVICE
#endif

namespace gpuml::detail {

enum class Criterion { gini, entropy, squared_error, poisson };

// scikit-learn's EPSILON of the Poisson criterion: a node or child whose Σ w y is at most this
// has an infinite impurity (a child of such a split is refused).
inline constexpr double kPoissonEpsilon = 10 * 2.220446049250313e-16;

// A regression row's statistics (W, S, Q) for the criterion.
GPUML_HOST_DEVICE inline void regression_row_stats(Criterion criterion, double w, double y, double* s) {
  s[0] = w;
  s[1] = w * y;
  s[2] = criterion == Criterion::poisson ? (y > 0.0 ? w * y * log(y) : 0.0) : w * y * y;  // xlogy(y, y): 0 at y = 0
}

// Gini impurity 1 − Σ p_c² of class weights w (k of them) with total W > 0.
GPUML_HOST_DEVICE inline double gini_impurity(const double* w, int k, double total) {
  double sum_sq = 0.0;
  for (int c = 0; c < k; ++c) sum_sq += w[c] * w[c];
  return 1.0 - sum_sq / (total * total);
}

// Entropy −Σ p_c log2 p_c (scikit-learn's "entropy" and "log_loss").
GPUML_HOST_DEVICE inline double entropy_impurity(const double* w, int k, double total) {
  double h = 0.0;
  for (int c = 0; c < k; ++c)
    if (w[c] > 0.0) {
      const double p = w[c] / total;
      h -= p * log2(p);
    }
  return h;
}

// Weighted variance Q / W − (S / W)² (scikit-learn's "squared_error"), never below 0.
GPUML_HOST_DEVICE inline double squared_error_impurity(double total, double sum, double sum_sq) {
  const double mean = sum / total;
  const double v = sum_sq / total - mean * mean;
  return v > 0.0 ? v : 0.0;
}

// Half Poisson deviance Σ w y log(y / mean) / W = (L − S log(S / W)) / W (scikit-learn's
// "poisson"), infinite when S <= kPoissonEpsilon.
GPUML_HOST_DEVICE inline double poisson_impurity(double total, double sum, double sum_ylogy) {
  if (sum <= kPoissonEpsilon) return INFINITY;
  const double v = (sum_ylogy - sum * log(sum / total)) / total;
  return v > 0.0 ? v : 0.0;
}

// scikit-learn's impurity_improvement: the decrease of the weighted impurity of the whole tree
// when a node (weight W of W_root) splits into left and right:
// W / W_root (imp − W_L / W imp_L − W_R / W imp_R). min_impurity_decrease compares with it, and
// feature_importances_ sum it.
GPUML_HOST_DEVICE inline double impurity_improvement(double root_weight, double node_weight, double node_impurity,
                                                     double left_weight, double left_impurity, double right_weight,
                                                     double right_impurity) {
  return node_weight / root_weight *
         (node_impurity - left_weight / node_weight * left_impurity - right_weight / node_weight * right_impurity);
}

}  // namespace gpuml::detail

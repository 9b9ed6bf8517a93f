#pragma once
// Split criteria of the random forests, as scikit-learn's tree criteria define them (weighted
// impurities; entropy in bits). Plain inline functions, usable from host code and (with
// __CUDACC__) from kernels, so that the CPU and CUDA backends score splits with the same formulas.
//
// A node's statistics:
//  - classification: the weighted count of each of k classes (and their total W);
//  - regression: W = Σ w, S = Σ w y, and Q = Σ w y² (squared_error) or Σ w y log y (poisson).
#include <cmath>

#include "../core/host_device.hpp"  // relative: the tests include this header by path

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

// Rounded double operations, never fused into an FMA, so that host and device code computing
// the same formula get the same bits (the host build does not contract: no -march with FMA, and
// -ffp-contract=off on these sources).
GPUML_HOST_DEVICE inline double add_rn(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dadd_rn(a, b);
#else
  return a + b;
#endif
}
GPUML_HOST_DEVICE inline double sub_rn(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dsub_rn(a, b);
#else
  return a - b;
#endif
}
GPUML_HOST_DEVICE inline double mul_rn(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dmul_rn(a, b);
#else
  return a * b;
#endif
}
GPUML_HOST_DEVICE inline double div_rn(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __ddiv_rn(a, b);
#else
  return a / b;
#endif
}

// Natural logarithm of m in [sqrt(1/2), sqrt(2)] by the atanh series, 2 s Σ s^2j / (2j + 1)
// with s = (m − 1) / (m + 1), |s| <= 0.172: twelve terms reach double precision.
GPUML_HOST_DEVICE inline double log_reduced(double m) {
  const double s = div_rn(sub_rn(m, 1.0), add_rn(m, 1.0));
  const double s2 = mul_rn(s, s);
  double series = 1.0 / 23.0;
  for (int j = 10; j >= 0; --j) series = add_rn(mul_rn(series, s2), 1.0 / (2 * j + 1));
  return mul_rn(mul_rn(2.0, s), series);
}

// x = m 2^e with m in [sqrt(1/2), sqrt(2)] (x > 0, finite).
GPUML_HOST_DEVICE inline double split_exponent(double x, int* e) {
  double m = frexp(x, e);  // [1/2, 1)
  if (m < 0.70710678118654752) {
    m = mul_rn(m, 2.0);
    --*e;
  }
  return m;
}

// log2 and log of x > 0 (finite) within a few ulps, the same bits on the host and the device
// (the splits' scores must agree to the bit; the libraries' log2 differ in the last bit).
GPUML_HOST_DEVICE inline double portable_log2(double x) {
  int e = 0;
  const double m = split_exponent(x, &e);
  return add_rn(static_cast<double>(e), mul_rn(log_reduced(m), 1.4426950408889634));  // 1 / ln 2
}
GPUML_HOST_DEVICE inline double portable_log(double x) {
  int e = 0;
  const double m = split_exponent(x, &e);
  return add_rn(mul_rn(static_cast<double>(e), 0.69314718055994531), log_reduced(m));  // ln 2
}

// Gini impurity 1 − Σ p_c² of class weights w (k of them) with total W > 0.
GPUML_HOST_DEVICE inline double gini_impurity(const double* w, int k, double total) {
  double sum_sq = 0.0;
  for (int c = 0; c < k; ++c) sum_sq = add_rn(sum_sq, mul_rn(w[c], w[c]));
  return sub_rn(1.0, div_rn(sum_sq, mul_rn(total, total)));
}

// Entropy −Σ p_c log2 p_c (scikit-learn's "entropy" and "log_loss").
GPUML_HOST_DEVICE inline double entropy_impurity(const double* w, int k, double total) {
  double h = 0.0;
  for (int c = 0; c < k; ++c)
    if (w[c] > 0.0) {
      const double p = div_rn(w[c], total);
      h = sub_rn(h, mul_rn(p, portable_log2(p)));
    }
  return h;
}

// Weighted variance Q / W − (S / W)² (scikit-learn's "squared_error"), never below 0.
GPUML_HOST_DEVICE inline double squared_error_impurity(double total, double sum, double sum_sq) {
  const double mean = div_rn(sum, total);
  const double v = sub_rn(div_rn(sum_sq, total), mul_rn(mean, mean));
  return v > 0.0 ? v : 0.0;
}

// Half Poisson deviance Σ w y log(y / mean) / W = (L − S log(S / W)) / W (scikit-learn's
// "poisson"), infinite when S <= kPoissonEpsilon.
GPUML_HOST_DEVICE inline double poisson_impurity(double total, double sum, double sum_ylogy) {
  if (sum <= kPoissonEpsilon) return INFINITY;
  const double v = div_rn(sub_rn(sum_ylogy, mul_rn(sum, portable_log(div_rn(sum, total)))), total);
  return v > 0.0 ? v : 0.0;
}

// scikit-learn's impurity_improvement: the decrease of the weighted impurity of the whole tree
// when a node (weight W of W_root) splits into left and right:
// W / W_root (imp − W_L / W imp_L − W_R / W imp_R). min_impurity_decrease compares with it, and
// feature_importances_ sum it.
GPUML_HOST_DEVICE inline double impurity_improvement(double root_weight, double node_weight, double node_impurity,
                                                     double left_weight, double left_impurity, double right_weight,
                                                     double right_impurity) {
  const double left_term = mul_rn(div_rn(left_weight, node_weight), left_impurity);
  const double right_term = mul_rn(div_rn(right_weight, node_weight), right_impurity);
  return mul_rn(div_rn(node_weight, root_weight), sub_rn(sub_rn(node_impurity, left_term), right_term));
}

// scikit-learn's proxy_impurity_improvement: ranks one node's candidate splits as
// impurity_improvement does (the terms of the node itself dropped), with two divisions instead of
// seven for squared_error and gini: W_L imp_L = Q_L − S_L² / W_L (gini: W_L − Σ c_L² / W_L), and Q
// (W) is the node's whatever the split, so the larger S_L² / W_L + S_R² / W_R (Σ c_L² / W_L +
// Σ c_R² / W_R), the better. Entropy and poisson: −(W_L imp_L + W_R imp_R). The search keeps the
// best proxy and scores that split alone with impurity_improvement, as scikit-learn's splitter does.
GPUML_HOST_DEVICE inline double split_proxy(Criterion criterion, const double* left, const double* right, int width,
                                            double left_weight, double right_weight) {
  if (criterion == Criterion::squared_error)
    return add_rn(div_rn(mul_rn(left[1], left[1]), left_weight), div_rn(mul_rn(right[1], right[1]), right_weight));
  if (criterion == Criterion::gini) {
    double left_sq = 0.0, right_sq = 0.0;
    for (int c = 0; c < width; ++c) {
      left_sq = add_rn(left_sq, mul_rn(left[c], left[c]));
      right_sq = add_rn(right_sq, mul_rn(right[c], right[c]));
    }
    return add_rn(div_rn(left_sq, left_weight), div_rn(right_sq, right_weight));
  }
  const double left_impurity = criterion == Criterion::entropy ? entropy_impurity(left, width, left_weight)
                                                               : poisson_impurity(left_weight, left[1], left[2]);
  const double right_impurity = criterion == Criterion::entropy ? entropy_impurity(right, width, right_weight)
                                                                : poisson_impurity(right_weight, right[1], right[2]);
  return -add_rn(mul_rn(left_weight, left_impurity), mul_rn(right_weight, right_impurity));
}

// A node's weight from its statistics (width values): W for regression, Σ class weights.
GPUML_HOST_DEVICE inline double stats_weight(Criterion criterion, const double* stats, int width) {
  if (criterion == Criterion::squared_error || criterion == Criterion::poisson) return stats[0];
  double total = 0.0;
  for (int c = 0; c < width; ++c) total = add_rn(total, stats[c]);
  return total;
}

// A node's impurity from its statistics (k class weights, or W, S, Q with width 3); 0 for an
// empty node.
GPUML_HOST_DEVICE inline double stats_impurity(Criterion criterion, const double* stats, int width) {
  const double total = stats_weight(criterion, stats, width);
  if (!(total > 0.0)) return 0.0;
  switch (criterion) {
    case Criterion::gini: return gini_impurity(stats, width, total);
    case Criterion::entropy: return entropy_impurity(stats, width, total);
    case Criterion::squared_error: return squared_error_impurity(total, stats[1], stats[2]);
    case Criterion::poisson: return poisson_impurity(total, stats[1], stats[2]);
  }
  return 0.0;
}

// impurity_improvement of a split of a node from its sides' statistics (the search's winner:
// split_proxy ranked the candidates).
GPUML_HOST_DEVICE inline double split_improvement(Criterion criterion, double root_weight, double node_weight,
                                                  double node_impurity, const double* left, const double* right,
                                                  int width) {
  return impurity_improvement(root_weight, node_weight, node_impurity, stats_weight(criterion, left, width),
                              stats_impurity(criterion, left, width), stats_weight(criterion, right, width),
                              stats_impurity(criterion, right, width));
}

}  // namespace gpuml::detail

#pragma once
// Shared by the linear-model tests: random regression problems and an independent reference
// solution in double (Eigen's complete orthogonal decomposition and normal equations on the
// weighted, centered problem, written here without the library's code).
#include <Eigen/Dense>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "test_util.hpp"

namespace gpuml::test {

struct Regression {
  int64_t n = 0, d = 0, t = 0;
  std::vector<double> X;  // n x d
  std::vector<double> Y;  // n x t
  std::vector<double> w;  // n (empty: no weights)
};

// X ~ N(offset, scale_j^2) per column (scales in [0.5, 2]: well conditioned), Y = X B + c + noise.
inline Regression make_regression(std::mt19937_64& rng, int64_t n, int64_t d, int64_t t, double offset = 0.0,
                                  double noise = 0.1) {
  Regression r;
  r.n = n, r.d = d, r.t = t;
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<double> scale(d), B(d * t), c(t);
  for (auto& s : scale) s = uniform_real(rng, 0.5, 2.0);
  for (auto& b : B) b = uniform_real(rng, -3.0, 3.0);
  for (auto& v : c) v = uniform_real(rng, -5.0, 5.0);
  r.X.resize(n * d);
  r.Y.resize(n * t);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < d; ++j) r.X[i * d + j] = offset + scale[j] * normal(rng);
    for (int64_t k = 0; k < t; ++k) {
      double v = c[k] + noise * normal(rng);
      for (int64_t j = 0; j < d; ++j) v += (r.X[i * d + j] - offset) * B[j * t + k];
      r.Y[i * t + k] = v;
    }
  }
  return r;
}

struct ReferenceFit {
  Eigen::MatrixXd coef;       // t x d
  Eigen::VectorXd intercept;  // t
  Eigen::VectorXd singular_values;  // of the centered weighted X, descending
};

// The centered (for the intercept), sqrt(w)-scaled system both references solve: A c = B.
struct CenteredSystem {
  Eigen::MatrixXd A, Bm;
  Eigen::RowVectorXd x_mean, y_mean;
};
inline CenteredSystem centered_system(const Regression& r, bool fit_intercept) {
  const int64_t n = r.n, d = r.d, t = r.t;
  Eigen::MatrixXd X(n, d), Y(n, t);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < d; ++j) X(i, j) = r.X[i * d + j];
    for (int64_t k = 0; k < t; ++k) Y(i, k) = r.Y[i * t + k];
  }
  Eigen::VectorXd w = r.w.empty() ? Eigen::VectorXd::Ones(n) : Eigen::Map<const Eigen::VectorXd>(r.w.data(), n).eval();
  CenteredSystem sys{{}, {}, Eigen::RowVectorXd::Zero(d), Eigen::RowVectorXd::Zero(t)};
  if (fit_intercept) {
    sys.x_mean = (w.transpose() * X) / w.sum();
    sys.y_mean = (w.transpose() * Y) / w.sum();
  }
  const Eigen::VectorXd sqrt_w = w.cwiseSqrt();
  sys.A = sqrt_w.asDiagonal() * (X.rowwise() - sys.x_mean);
  sys.Bm = sqrt_w.asDiagonal() * (Y.rowwise() - sys.y_mean);
  return sys;
}

// alpha empty: minimum-norm least squares; else Ridge with alpha per target (or one for all).
inline ReferenceFit reference_fit(const Regression& r, bool fit_intercept, const std::vector<double>& alpha = {}) {
  const int64_t n = r.n, d = r.d, t = r.t;
  const CenteredSystem sys = centered_system(r, fit_intercept);
  const Eigen::MatrixXd& A = sys.A;
  const Eigen::MatrixXd& Bm = sys.Bm;
  const Eigen::RowVectorXd &x_mean = sys.x_mean, &y_mean = sys.y_mean;
  ReferenceFit ref;
  ref.coef.resize(t, d);
  if (alpha.empty()) {
    ref.coef = A.completeOrthogonalDecomposition().solve(Bm).transpose();
  } else {
    for (int64_t k = 0; k < t; ++k) {
      Eigen::MatrixXd M = A.transpose() * A;
      M.diagonal().array() += alpha[alpha.size() == 1 ? 0 : k];
      ref.coef.row(k) = M.ldlt().solve(A.transpose() * Bm.col(k)).transpose();
    }
  }
  ref.intercept = (y_mean - x_mean * ref.coef.transpose()).transpose();
  ref.singular_values = Eigen::BDCSVD<Eigen::MatrixXd>(A).singularValues();
  return ref;
}

// positive=True: min |A c − B_k|² + alpha_k |c|² over c >= 0 (A, B weighted and centered as in
// reference_fit), by brute force over every support S (d <= 12): the minimizer is the
// unconstrained solution on its own support, so it is the feasible support solution of least
// objective. alpha empty: none (non-negative least squares).
inline ReferenceFit nonnegative_reference(const Regression& r, bool fit_intercept, const std::vector<double>& alpha = {}) {
  const int64_t n = r.n, d = r.d, t = r.t;
  const CenteredSystem sys = centered_system(r, fit_intercept);
  const Eigen::MatrixXd& A = sys.A;
  const Eigen::MatrixXd& Bm = sys.Bm;
  const Eigen::RowVectorXd &x_mean = sys.x_mean, &y_mean = sys.y_mean;
  ReferenceFit ref;
  ref.coef = Eigen::MatrixXd::Zero(t, d);
  for (int64_t k = 0; k < t; ++k) {
    const double a = alpha.empty() ? 0.0 : alpha[alpha.size() == 1 ? 0 : k];
    double best = (Bm.col(k)).squaredNorm();  // the empty support: c = 0
    for (uint32_t mask = 1; mask < (1u << d); ++mask) {
      std::vector<int64_t> S;
      for (int64_t j = 0; j < d; ++j)
        if (mask & (1u << j)) S.push_back(j);
      Eigen::MatrixXd AS(n, static_cast<Eigen::Index>(S.size()));
      for (std::size_t s = 0; s < S.size(); ++s) AS.col(s) = A.col(S[s]);
      Eigen::MatrixXd M = AS.transpose() * AS;
      M.diagonal().array() += a;
      const Eigen::VectorXd c = M.ldlt().solve(AS.transpose() * Bm.col(k));
      if (c.minCoeff() < 0) continue;
      const double objective = (AS * c - Bm.col(k)).squaredNorm() + a * c.squaredNorm();
      if (objective < best) {
        best = objective;
        ref.coef.row(k).setZero();
        for (std::size_t s = 0; s < S.size(); ++s) ref.coef(k, S[s]) = c[s];
      }
    }
  }
  ref.intercept = (y_mean - x_mean * ref.coef.transpose()).transpose();
  return ref;
}

// A fitted float32/float64 array as doubles.
inline std::vector<double> to_doubles(const HostArray& a) {
  const int64_t count = static_cast<int64_t>(a.bytes() / dtype_size(a.dtype()));
  std::vector<double> out(count);
  for (int64_t i = 0; i < count; ++i)
    out[i] = a.dtype() == DType::float32 ? a.as<const float>()[i] : a.as<const double>()[i];
  return out;
}

inline HostArray copy_array(const HostArray& a) {
  const ArraySpec& s = a.spec();
  HostArray out = s.ndim == 0 ? HostArray::scalar(s.dtype) : s.ndim == 1 ? HostArray(s.dtype, s.shape[0])
                                                                       : HostArray(s.dtype, s.shape[0], s.shape[1]);
  std::memcpy(out.as<void>(), a.as<const void>(), a.bytes());
  return out;
}

// max |a - b| over entries, relative to 1 + max |b| (coefficients are O(1) here).
inline double max_rel_diff(const std::vector<double>& a, const Eigen::MatrixXd& b_rowmajor_t_by_d) {
  double diff = 0, scale = 1;
  const Eigen::Index cols = b_rowmajor_t_by_d.cols();
  for (Eigen::Index i = 0; i < b_rowmajor_t_by_d.size(); ++i) {
    const double b = b_rowmajor_t_by_d(i / cols, i % cols);
    diff = std::max(diff, std::abs(a[i] - b));
    scale = std::max(scale, std::abs(b));
  }
  return diff / scale;
}

}  // namespace gpuml::test

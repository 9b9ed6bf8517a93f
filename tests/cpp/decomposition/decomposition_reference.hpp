#pragma once
// An independent reference for the decomposition tests: the SVD of the centered (or not)
// data by Eigen's JacobiSVD in long double, with scikit-learn's svd_flip on the rows of Vᵀ.
#include <Eigen/Dense>

#include <cmath>
#include <random>
#include <vector>

namespace gpuml::test {

struct ReferenceSvd {
  std::vector<double> mean;                 // d (zeros without centering)
  std::vector<double> s;                    // min(n, d), descending
  std::vector<std::vector<double>> rows;    // right singular vectors, flipped
};

inline ReferenceSvd reference_svd(const std::vector<double>& X, int64_t n, int64_t d, bool center) {
  using M = Eigen::Matrix<long double, Eigen::Dynamic, Eigen::Dynamic>;
  M A(n, d);
  ReferenceSvd ref;
  ref.mean.assign(d, 0.0);
  for (int64_t j = 0; j < d; ++j) {
    long double sum = 0;
    for (int64_t i = 0; i < n; ++i) sum += X[i * d + j];
    const long double m = center ? sum / n : 0;
    ref.mean[j] = static_cast<double>(m);
    for (int64_t i = 0; i < n; ++i) A(i, j) = X[i * d + j] - m;
  }
  Eigen::JacobiSVD<M> svd(A, Eigen::ComputeThinV);
  for (Eigen::Index i = 0; i < svd.singularValues().size(); ++i) {
    ref.s.push_back(static_cast<double>(svd.singularValues()[i]));
    std::vector<double> row(d);
    Eigen::Index arg = 0;
    for (Eigen::Index j = 0; j < d; ++j)
      if (std::abs(svd.matrixV()(j, i)) > std::abs(svd.matrixV()(arg, i))) arg = j;
    const long double sign = svd.matrixV()(arg, i) < 0 ? -1 : 1;
    for (int64_t j = 0; j < d; ++j) row[j] = static_cast<double>(sign * svd.matrixV()(j, i));
    ref.rows.push_back(row);
  }
  return ref;
}

// n x d data with a given mean and singular values falling geometrically from `top` to `bottom`
// along a random rotation (well separated: each spread differs from the next by a fixed ratio).
inline std::vector<double> spectrum_data(std::mt19937_64& rng, int64_t n, int64_t d, double mean, double top,
                                         double bottom) {
  std::normal_distribution<double> normal;
  Eigen::MatrixXd G(d, d);
  for (Eigen::Index i = 0; i < G.size(); ++i) G.data()[i] = normal(rng);
  const Eigen::MatrixXd Q = Eigen::HouseholderQR<Eigen::MatrixXd>(G).householderQ();
  std::vector<double> X(static_cast<std::size_t>(n * d));
  Eigen::VectorXd z(d);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < d; ++j)
      z[j] = normal(rng) * top * std::pow(bottom / top, d > 1 ? static_cast<double>(j) / (d - 1) : 0.0);
    const Eigen::VectorXd x = Q * z;
    for (int64_t j = 0; j < d; ++j) X[i * d + j] = mean + x[j];
  }
  return X;
}

}  // namespace gpuml::test

// The CPU backend of LogisticRegression: LogisticBackend<T> with OpenMP threads and Eigen.
//
// Determinism: rows are split into a fixed number of contiguous blocks (a function of the row
// count and the context's thread count only); per-block sums are combined in block order.
#define EIGEN_DONT_PARALLELIZE  // this file threads its own loops (see least_squares.cpp)
#include <Eigen/Dense>

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/parallel.hpp"
#include "linear_model/logistic_backend.hpp"

namespace gpuml::detail {

namespace {

template <typename T>
using RowMatrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// Rows per chunk: the chunk's scores and gradient are products in T (fast GEMMs); chunk
// gradients are summed in double, so float32 sums never run over more rows than this.
constexpr int64_t kChunk = 512;

// log(1 + e^z) without overflow.
inline double log1p_exp(double z) { return z > 0 ? z + std::log1p(std::exp(-z)) : std::log1p(std::exp(z)); }
inline double sigmoid(double z) {
  if (z >= 0) return 1.0 / (1.0 + std::exp(-z));
  const double e = std::exp(z);
  return e / (1.0 + e);
}

template <typename T>
class LogisticCpuBackend final : public LogisticBackend<T> {
 public:
  explicit LogisticCpuBackend(const Context& ctx) : threads_(std::max(1, ctx.n_threads())) {}

  double loss_gradient(const T* X, const int32_t* labels, const T* w, int64_t n, int64_t d, int64_t k,
                       const double* coef_host, double* grad_host) override {
    const int64_t width = d + 1;
    const RowMatrix<T> coef = Eigen::Map<const RowMatrix<double>>(coef_host, k, width).leftCols(d).template cast<T>();
    const Eigen::VectorXd intercept = Eigen::Map<const RowMatrix<double>>(coef_host, k, width).col(d);
    const RowBlocks blocks(n, threads_, kChunk);
    const int64_t stride = k * width + 1;  // a block's gradient, then its loss
    std::vector<double> partial(static_cast<std::size_t>(blocks.count() * stride), 0.0);
#pragma omp parallel for num_threads(detail::threads_for(threads_, n * d * k)) schedule(static)
    for (int b = 0; b < blocks.count(); ++b) {
      Eigen::Map<RowMatrix<double>> grad(partial.data() + b * stride, k, width);
      double& loss = partial[b * stride + k * width];
      RowMatrix<T> Z, R;
      std::vector<double> scores(static_cast<std::size_t>(k));
      for (int64_t i0 = blocks.begin(b); i0 < blocks.end(b); i0 += kChunk) {
        const int64_t rows = std::min(kChunk, blocks.end(b) - i0);
        Eigen::Map<const RowMatrix<T>> Xc(X + i0 * d, rows, d);
        Z.noalias() = Xc * coef.transpose();
        R.resize(rows, k);
        for (int64_t i = 0; i < rows; ++i) {
          const double wi = w ? static_cast<double>(w[i0 + i]) : 1.0;
          const int32_t label = labels[i0 + i];
          loss += wi * residuals(Z.row(i).data(), intercept, k, label, R.row(i).data(), wi, scores.data());
        }
        grad.leftCols(d) += (R.transpose() * Xc).template cast<double>();
        grad.col(d) += R.colwise().sum().transpose().template cast<double>();
      }
    }
    std::fill(grad_host, grad_host + k * width, 0.0);
    double loss = 0.0;
    for (int b = 0; b < blocks.count(); ++b) {
      for (int64_t j = 0; j < k * width; ++j) grad_host[j] += partial[b * stride + j];
      loss += partial[b * stride + k * width];
    }
    return loss;
  }

  double loss_residuals(const T* Z, const int32_t* labels, const T* w, int64_t n, int64_t k,
                        const double* intercept_host, T* R, double* residual_sums_host) override {
    const Eigen::VectorXd intercept = Eigen::Map<const Eigen::VectorXd>(intercept_host, k);
    const RowBlocks blocks(n, threads_, kChunk);
    const int64_t stride = k + 1;  // a block's residual sums, then its loss
    std::vector<double> partial(static_cast<std::size_t>(blocks.count() * stride), 0.0);
#pragma omp parallel for num_threads(detail::threads_for(threads_, n * k * 16)) schedule(static)
    for (int b = 0; b < blocks.count(); ++b) {
      double* sums = partial.data() + b * stride;
      std::vector<double> scores(static_cast<std::size_t>(k));
      for (int64_t i = blocks.begin(b); i < blocks.end(b); ++i) {
        const double wi = w ? static_cast<double>(w[i]) : 1.0;
        sums[k] += wi * residuals(Z + i * k, intercept, k, labels[i], R + i * k, wi, scores.data());
        for (int64_t c = 0; c < k; ++c) sums[c] += static_cast<double>(R[i * k + c]);
      }
    }
    std::fill(residual_sums_host, residual_sums_host + k, 0.0);
    double loss = 0.0;
    for (int b = 0; b < blocks.count(); ++b) {
      for (int64_t c = 0; c < k; ++c) residual_sums_host[c] += partial[b * stride + c];
      loss += partial[b * stride + k];
    }
    return loss;
  }

  void probabilities(const T* Z, int64_t n, int64_t k, T* out) override {
#pragma omp parallel for num_threads(detail::threads_for(threads_, n * k)) schedule(static)
    for (int64_t i = 0; i < n; ++i) {
      if (k == 1) {
        const double p = sigmoid(static_cast<double>(Z[i]));
        out[2 * i] = static_cast<T>(1.0 - p);
        out[2 * i + 1] = static_cast<T>(p);
        continue;
      }
      const T* z = Z + i * k;
      const double top = static_cast<double>(*std::max_element(z, z + k));
      double sum = 0.0;
      for (int64_t c = 0; c < k; ++c) sum += std::exp(static_cast<double>(z[c]) - top);
      for (int64_t c = 0; c < k; ++c) out[i * k + c] = static_cast<T>(std::exp(static_cast<double>(z[c]) - top) / sum);
    }
  }

  void predict_labels(const T* Z, int64_t n, int64_t k, const double* classes_host, double* out) override {
#pragma omp parallel for num_threads(detail::threads_for(threads_, n * k)) schedule(static)
    for (int64_t i = 0; i < n; ++i) {
      const T* z = Z + i * k;
      const int64_t index = k == 1 ? (z[0] > 0 ? 1 : 0) : std::max_element(z, z + k) - z;
      out[i] = classes_host[index];
    }
  }

 private:
  // Row i's loss; writes w_i * residuals into r. z holds the row's scores without the intercept;
  // `scores` is k doubles of scratch (the shifted exponentials, computed once).
  static double residuals(const T* z_no_intercept, const Eigen::VectorXd& intercept, int64_t k, int32_t label, T* r,
                          double wi, double* scores) {
    if (k == 1) {
      const double z = static_cast<double>(z_no_intercept[0]) + intercept[0];
      r[0] = static_cast<T>(wi * (sigmoid(z) - label));
      return log1p_exp(z) - label * z;
    }
    double top = -INFINITY;
    for (int64_t c = 0; c < k; ++c) {
      scores[c] = static_cast<double>(z_no_intercept[c]) + intercept[c];
      top = std::max(top, scores[c]);
    }
    const double z_label = scores[label];
    double sum = 0.0;
    for (int64_t c = 0; c < k; ++c) sum += (scores[c] = std::exp(scores[c] - top));
    for (int64_t c = 0; c < k; ++c) r[c] = static_cast<T>(wi * (scores[c] / sum - (c == label ? 1.0 : 0.0)));
    return top + std::log(sum) - z_label;
  }

  int threads_;
};

}  // namespace

template <typename T>
std::unique_ptr<LogisticBackend<T>> make_logistic_cpu_backend(const Context& ctx) {
  return std::make_unique<LogisticCpuBackend<T>>(ctx);
}

template std::unique_ptr<LogisticBackend<float>> make_logistic_cpu_backend<float>(const Context&);
template std::unique_ptr<LogisticBackend<double>> make_logistic_cpu_backend<double>(const Context&);

}  // namespace gpuml::detail

#pragma once
// The primitives a backend provides for LogisticRegression. The algorithm — labels and class
// weights, the penalty, the quasi-Newton iterations (L-BFGS / OWL-QN) — lives once, on the host,
// in src/linear_model/logistic_regression.cpp; src/linear_model/logistic_cpu.cpp and
// cuda/linear_model/logistic.cu implement only these. The decision function itself is
// LinearBackend::predict.
//
// Pointers without a `_host` suffix are in the backend's memory (host for the CPU, the device for
// CUDA), contiguous and row-major. `_host` pointers are host memory.
//
// Scores: k = 1 column for two classes (z = x·β + b, P(class 1) = σ(z)), else k = n_classes
// columns with softmax probabilities.
#include <cstdint>
#include <memory>

#include "gpuml/core/context.hpp"
#include "gpuml/core/error.hpp"

namespace gpuml::detail {

template <typename T>
class LogisticBackend {
 public:
  virtual ~LogisticBackend() = default;

  // The weighted loss Σ_i w_i loss_i and its gradient, at coef_host (k x (d+1) row-major doubles,
  // column d the intercept), accumulated in double in an order that does not depend on
  // scheduling (same inputs, same bits).
  //   k == 1:  loss_i = log(1 + e^z) − y_i z,  r_i = σ(z) − y_i          (labels 0 or 1)
  //   k > 1:   loss_i = logsumexp(z) − z_{y_i}, r_ic = softmax(z)_c − [y_i == c]
  //   grad_host[c][j] = Σ_i w_i r_ic x_ij,  grad_host[c][d] = Σ_i w_i r_ic.
  // X is n x d; labels n class indices in [0, max(k, 2)); w n weights, or nullptr for all ones.
  // The scores are formed in T (exactly: no TF32); the loss must not overflow for large |z|.
  virtual double loss_gradient(const T* X, const int32_t* labels, const T* w, int64_t n, int64_t d, int64_t k,
                               const double* coef_host, double* grad_host) = 0;

  // The same loss from scores already formed, for sparse X (whose products X·coefᵀ and Xᵀ·R are
  // the sparse primitives', core/sparse_backend.hpp): Z (n x k) holds x_i·β_c without the
  // intercept, intercept_host (k) the intercepts. Writes R (n x k; it may be Z itself) with R_ic = w_i r_ic and
  // residual_sums_host[c] = Σ_i R_ic (the intercepts' gradient) in double, and returns
  // Σ_i w_i loss_i, both accumulated in an order that does not depend on scheduling.
  virtual double loss_residuals(const T* Z, const int32_t* labels, const T* w, int64_t n, int64_t k,
                                const double* intercept_host, T* R, double* residual_sums_host) = 0;

  // Scores Z (n x k) to probabilities out (n x max(k, 2)): k == 1 gives [1 − σ(z), σ(z)],
  // k > 1 the softmax of each row (computed stably: shifted by the row's maximum).
  virtual void probabilities(const T* Z, int64_t n, int64_t k, T* out) = 0;

  // The predicted label per row, out (n) in double: classes_host[z > 0] when k == 1 (σ(0) = 0.5
  // picks class 0, as scikit-learn), else classes_host[first index of the row's largest score].
  virtual void predict_labels(const T* Z, int64_t n, int64_t k, const double* classes_host, double* out) = 0;
};

// Exported (GPUML_API) only so that tests/cpp/linear_model/logistic_backend_gpu_test.cpp can
// compare the two backends primitive by primitive; not part of the public API.
template <typename T> GPUML_API std::unique_ptr<LogisticBackend<T>> make_logistic_cpu_backend(const Context& ctx);
template <typename T> GPUML_API std::unique_ptr<LogisticBackend<T>> make_logistic_cuda_backend(const Context& ctx);

}  // namespace gpuml::detail

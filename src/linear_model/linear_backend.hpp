#pragma once
// The primitives a backend provides for the least-squares family (LinearRegression, Ridge, and
// later the Gram-matrix form of Lasso/ElasticNet). The algorithms — centering for the intercept,
// sample weights, the choice of solver, rank handling, the small dense solves on the host — live
// once in src/linear_model/*.cpp; src/linear_model/linear_cpu.cpp and cuda/linear_model/linear.cu
// implement only these.
//
// Pointers without a `_host` suffix are in the backend's memory (host for the CPU, the device for
// CUDA), contiguous and row-major. `_host` pointers are host memory. Small results (m x m, m x t)
// come back to the host in double.
#include <cstdint>
#include <memory>

#include "gpuml/core/context.hpp"

namespace gpuml::detail {

template <typename T>
class LinearBackend {
 public:
  virtual ~LinearBackend() = default;

  // Weighted column means of A (n x m): sum_i w_i A_ij / sum_i w_i, accumulated in double in a
  // fixed order. w == nullptr means all ones.
  virtual void weighted_means(const T* A, int64_t n, int64_t m, const T* w, double* means_host) = 0;

  // out_i = sqrt(w_i) * (A_i - means), rounded to T (means_host == nullptr: no centering;
  // w == nullptr: no scaling). `out` may alias A. With sums_host (m + 1 doubles), the same pass
  // also gives sums_host[j] = Σ_i w_i (A_ij − means_j) and sums_host[m] = Σ_i w_i, accumulated
  // in double in a fixed order (NaN or infinity in A shows in them).
  virtual void center_scale(const T* A, int64_t n, int64_t m, const double* means_host, const T* w, T* out,
                            double* sums_host = nullptr) = 0;

  // gram_host = A^T A (m x m, both triangles) and cross_host = A^T B (m x t), row-major double.
  // Products are formed in T with exact arithmetic (no TF32).
  virtual void gram(const T* A, const T* B, int64_t n, int64_t m, int64_t t, double* gram_host, double* cross_host) = 0;

  // Thin Householder QR of A (n x m, n >= m): R_host = R (m x m, upper triangular, row-major)
  // and QtB_host = Q^T B (m x t). A and B may be overwritten.
  virtual void qr(T* A, T* B, int64_t n, int64_t m, int64_t t, double* R_host, double* QtB_host) = 0;

  // A = A R^-1 in place (the triangular solve of Cholesky QR): A is n x m, R_host m x m upper
  // triangular with a positive diagonal, row-major double (rounded to T for the solve).
  virtual void right_triangular_solve(T* A, int64_t n, int64_t m, const double* R_host) = 0;

  // out = X coef^T + intercept: X is n x d, coef_host t x d, intercept_host t (or nullptr), out n x t.
  virtual void predict(const T* X, int64_t n, int64_t d, const T* coef_host, const T* intercept_host, int64_t t,
                       T* out) = 0;

  // cross_host = A^T B (m x t, row-major double) without A^T A: A is n x m, B n x t. Summed in
  // double over chunks of rows as in gram (PCA's randomized range finder: A^T Q).
  virtual void cross(const T* A, const T* B, int64_t n, int64_t m, int64_t t, double* cross_host) = 0;

  // The eigen-decomposition of a symmetric m x m matrix M_host (host, double; symmetric, so its
  // row-major and column-major layouts agree): eigenvalues ascending into values_host (m), unit
  // eigenvectors into vectors_host, eigenvector k at vectors_host[k * m, (k + 1) * m). Small dense
  // work, but ~1.5 ms at m = 128 on a host CPU: CUDA does it on the device (cuSOLVER syevd).
  virtual void symmetric_eigen(const double* M_host, int64_t m, double* values_host, double* vectors_host) = 0;
};

template <typename T> std::unique_ptr<LinearBackend<T>> make_linear_cpu_backend(const Context& ctx);
template <typename T> std::unique_ptr<LinearBackend<T>> make_linear_cuda_backend(const Context& ctx);

}  // namespace gpuml::detail

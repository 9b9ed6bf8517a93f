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

  // The Gram products of A = sqrt(w) (X − shift) without a stored copy of A: gram_host = AᵀA
  // (m x m, both triangles, equal bit for bit), cross_host = AᵀB (m x t; B is n x t, already centered and scaled;
  // B == nullptr and t == 0 for none), and sums_host (m + 1): Σ_i w_i (X_ij − shift_j) and Σ_i w_i
  // (NaN or infinity in X shows in them). shift_host == nullptr: no shift; w == nullptr: ones.
  // Callers round the shift to T (so that X − shift is exact near it in either precision).
  // CUDA float32 (m >= 64, t <= 7) forms them in one pass over X on tensor cores from a two-term
  // TF32 split of each value (hi + lo, three products, lo·lo dropped: ~2^-21 relative per
  // product, about float32's own rounding; cuda/linear_model/gram_tf32.cu); elsewhere it is
  // center_scale into a scratch copy (sums in double), then gram.
  virtual void shifted_gram(const T* X, int64_t n, int64_t m, const double* shift_host, const T* w, const T* B, int64_t t,
                            double* gram_host, double* cross_host, double* sums_host) = 0;

  // The Cholesky factor of the symmetric positive definite m x m M_host (row-major double, both
  // triangles): U_host = U = Lᵀ, row-major, with M = Uᵀ U; only the upper triangle is set (what
  // lies below it is unspecified: the device's column-major lower factor is this, uncopied).
  // Returns false when M is not numerically positive definite. CUDA factors on the device
  // (cuSOLVER potrf: ~0.1 ms at m = 256, against ~1 ms on a host core) once m is large enough to
  // pay for the copies.
  virtual bool cholesky(const double* M_host, int64_t m, double* U_host) = 0;

  // Solves M Z = R by the Cholesky factorization M = Uᵀ U, for the symmetric positive definite
  // M_host (m x m, row-major double, both triangles) and R_host (m x t, row-major double):
  // Z_host (m x t, row-major) and U's diagonal (diagonal_host, m). Returns false when M is not
  // numerically positive definite (Z_host and diagonal_host are then unspecified). For the solves
  // that need no factor: CUDA keeps U on the device (512 kB at m = 256) and returns only these.
  virtual bool cholesky_solve(const double* M_host, int64_t m, const double* R_host, int64_t t, double* Z_host,
                              double* diagonal_host) = 0;

  // gram_host = A^T A (m x m, both triangles, equal bit for bit: the driver relies on it) and cross_host = A^T B (m x t), row-major double.
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

  // The eigenvalues of a symmetric m x m matrix M_host (host, double, both triangles), all m of
  // them ascending into values_host, and the unit eigenvectors of the k largest, largest first:
  // vector i (of values_host[m − 1 − i]) at vectors_host[i * m, (i + 1) * m). Small dense work,
  // but ~1.5 ms at m = 128 on a host core: CUDA does it on the device (for few vectors by
  // bisection and inverse iteration, cuda/linear_model/symmetric_eigen.cu; else cuSOLVER syevd).
  virtual void symmetric_eigen(const double* M_host, int64_t m, int64_t k, double* values_host, double* vectors_host) = 0;
};

// The host Cholesky factorization and solve (Eigen, double) behind LinearBackend::cholesky and
// cholesky_solve: the CPU backend's, and CUDA's for small m.
GPUML_API bool host_cholesky(const double* M_host, int64_t m, double* U_host);
GPUML_API bool host_cholesky_solve(const double* M_host, int64_t m, const double* R_host, int64_t t, double* Z_host,
                                   double* diagonal_host);

// Exported (GPUML_API) only so that tests/cpp/linear_model/linear_backend_gpu_test.cpp can
// compare the two backends primitive by primitive; not part of the public API.
template <typename T> GPUML_API std::unique_ptr<LinearBackend<T>> make_linear_cpu_backend(const Context& ctx);
template <typename T> GPUML_API std::unique_ptr<LinearBackend<T>> make_linear_cuda_backend(const Context& ctx);

}  // namespace gpuml::detail

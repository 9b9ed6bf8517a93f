#pragma once
// The primitives sparse estimators are written over: a caller's sparse X, checked and
// canonicalized once (core/sparse.hpp), seen through products with dense blocks. The CPU
// implements them with Eigen's sparse module (core/sparse_cpu.cpp); make_sparse_matrix is the one
// dispatch point. Dense blocks live in the backend's memory (host for the CPU) and are
// row-major, as in linear_backend.hpp; `_host` pointers are host memory.
#include <cstdint>
#include <algorithm>
#include <memory>
#include <vector>

#include "device_ops.hpp"  // beside this header: tests/cpp include it by a relative path
#include "gpuml/core/context.hpp"
#include "gpuml/core/sparse.hpp"

namespace gpuml::detail {

// A matrix A (n x d) known only through its products with dense blocks: what the randomized
// SVD driver (decomposition/spectral.hpp) needs. A dense A is one (spectral.cpp), a sparse X another.
// Every block lives in the backend's memory (the device for CUDA), so that iterative drivers keep
// their n x t and d x t blocks there (upload / download below move the small ones).
template <typename T>
class MatrixProducts {
 public:
  virtual ~MatrixProducts() = default;
  // out = A B: B is d x t, out n x t, both row-major.
  virtual void times(const T* B, int64_t t, T* out) = 0;
  // out = Aᵀ B: B is n x t, out d x t, both row-major.
  virtual void transpose_times(const T* B, int64_t t, T* out) = 0;
};

// A buffer in ctx's memory holding host[0, count); and its way back.
template <typename T>
Buffer upload(Context& ctx, const T* host, int64_t count) {
  Buffer out(ctx, static_cast<std::size_t>(std::max<int64_t>(count, 1)) * sizeof(T));
  if (count > 0) copy_bytes(ctx, out.data(), ctx.device(), host, Device{}, static_cast<std::size_t>(count) * sizeof(T));
  return out;
}
template <typename T>
std::vector<T> download(const Context& ctx, const T* data, int64_t count) {
  std::vector<T> out(static_cast<std::size_t>(count));
  if (count > 0) copy_bytes(ctx, out.data(), Device{}, data, ctx.device(), static_cast<std::size_t>(count) * sizeof(T));
  return out;
}

// out (cols x rows, row-major) = inᵀ for in rows x cols, converted to U; in tiles, so that
// neither side is walked with a long stride (a 100 x 2^18 block: ~20x faster than row by row).
template <typename T, typename U>
void transpose_into(const T* in, int64_t rows, int64_t cols, U* out) {
  constexpr int64_t kTile = 32;
  for (int64_t i0 = 0; i0 < rows; i0 += kTile)
    for (int64_t j0 = 0; j0 < cols; j0 += kTile)
      for (int64_t i = i0; i < std::min(rows, i0 + kTile); ++i)
        for (int64_t j = j0; j < std::min(cols, j0 + kTile); ++j) out[j * rows + i] = static_cast<U>(in[i * cols + j]);
}

// out = A Mᵀ for M_host t x d (row-major host: a model's coefficients or centers, one per row),
// out n x t in the backend's memory: M goes to the backend as the d x t block A multiplies.
template <typename T>
void times_rows(Context& ctx, MatrixProducts<T>& A, int64_t d, const T* M_host, int64_t t, T* out) {
  std::vector<T> columns(static_cast<std::size_t>(d * t));
  transpose_into(M_host, t, d, columns.data());
  const Buffer block = upload(ctx, columns.data(), d * t);
  A.times(block.as<const T>(), t, out);
}

template <typename T>
class SparseMatrix : public MatrixProducts<T> {
 public:
  int64_t rows() const { return rows_; }
  int64_t cols() const { return cols_; }
  // Per column j of X: sums_host[j] = Σ_i X_ij and squares_host[j] = Σ_i X_ij², in double.
  virtual void column_moments(double* sums_host, double* squares_host) = 0;
  // gram_host = Xᵀ diag(w) X (d x d, row-major double; exactly symmetric), w_host of n weights
  // (nullptr: all 1). Formed from the sparse product, so its cost follows the squares of the rows'
  // non-zeros, not n d²; the caller decides whether d x d fits.
  virtual void weighted_gram(const T* w_host, double* gram_host) = 0;
  // norms[i] = Σ_j X_ij² (summed in double, rounded to T), n values in the backend's memory.
  virtual void row_squared_norms(T* norms) = 0;
  // Rows rows_host[0..m) of X, dense, into out_host (m x d, row-major, zeros where nothing is stored).
  virtual void dense_rows(const int64_t* rows_host, int64_t m, T* out_host) = 0;
  // Weighted row sums by group (Xᵀ times the n x k matrix of w_i at (i, groups[i])): row g of
  // sums_host (k x d, double) = Σ_{i in g} w_i X_i, and group_weights_host[g] = Σ_{i in g} w_i.
  // groups (values in [0, k)) and w (nullptr: all 1) are n values in the backend's memory.
  virtual void grouped_row_sums(const int32_t* groups, const T* w, int64_t k, double* sums_host,
                                double* group_weights_host) = 0;

 protected:
  int64_t rows_ = 0, cols_ = 0;
};

// X (any device; values of T, the caller passes X.dtype's type) checked and canonicalized
// where `ctx` computes (the CPU: sparse_cpu.cpp; CUDA: cuda/core/sparse.cu); errors name `what`.
template <typename T>
std::unique_ptr<SparseMatrix<T>> make_sparse_matrix(const Context& ctx, const SparseView& X, const char* what);
// make_sparse_matrix for X of either float dtype: values of another dtype than T are converted
// once into a host copy (what a fitted model's predict needs: it computes in the model's dtype).
template <typename T>
std::unique_ptr<SparseMatrix<T>> make_sparse_matrix_as(const Context& ctx, const SparseView& X, const char* what);
template <typename T>
GPUML_API std::unique_ptr<SparseMatrix<T>> make_sparse_cpu_matrix(const Context& ctx, const SparseView& X, const char* what);
// The CUDA implementation (cuda/core/sparse.cu): X (host or device memory, values of either float
// dtype, converted to T) checked and canonicalized on the context's device, with the same errors
// as the CPU's checks (validate_sparse).
template <typename T>
GPUML_API std::unique_ptr<SparseMatrix<T>> make_sparse_cuda_matrix(const Context& ctx, const SparseView& X, const char* what);

// The checks of validate_sparse (core/sparse.cpp), shared with the CUDA backend so that both
// refuse a matrix with the same words. check_header reads no array.
void check_header(const SparseView& X, const char* what);
// The first problem of each kind in X's arrays (positions -1: none), found by the CPU's scans or
// the device's reductions; expect_sparse_contents throws the first one in the order of the checks.
struct SparseContentsFirst {
  int64_t indptr_first = 0, indptr_last = 0;                     // indptr[0], indptr[major]
  int64_t decreasing_at = -1, decreasing_left = 0, decreasing_right = 0;  // indptr[i] > indptr[i + 1]
  int64_t bad_index_at = -1, bad_index = 0;                      // outside [0, minor)
  int64_t bad_value_at = -1;                                     // not finite
  bool bad_value_nan = false;
};
void expect_sparse_contents(const SparseView& X, const char* what, const SparseContentsFirst& first);

}  // namespace gpuml::detail

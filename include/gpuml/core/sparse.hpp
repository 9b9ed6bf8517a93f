#pragma once
// Sparse matrices: a non-owning view of a caller's CSR or CSC matrix (host or device memory), its
// checks, and an owned canonical copy. Estimators that take sparse X override the *_sparse
// methods of gpuml::Estimator (estimator.hpp).
#include <cstdint>

#include "gpuml/core/array.hpp"
#include "gpuml/core/export.hpp"

namespace gpuml {

class Context;

// Values match the C ABI's GPUML_SPARSE_CSR / GPUML_SPARSE_CSC.
enum class SparseFormat : int32_t { csr = 0, csc = 1 };

// A caller's CSR or CSC matrix, as SciPy keeps one. CSR: indptr has shape[0] + 1 entries and
// row i holds indices[indptr[i] .. indptr[i + 1]) (column numbers) and the values beside them;
// CSC the same with columns and row numbers. Values are float32 or float64; indptr and indices
// share one index dtype, int32 or int64. Indices need not be sorted within a row, duplicates are
// summed and explicit zeros are allowed (validate_sparse says what is refused).
struct SparseView {
  SparseFormat format = SparseFormat::csr;
  DType dtype = DType::float64;        // of values
  DType index_dtype = DType::int32;    // of indptr and indices
  Device device{};
  int64_t shape[2] = {0, 0};           // rows, columns
  int64_t nnz = 0;                     // stored entries (duplicates and zeros included)
  const void* indptr = nullptr;
  const void* indices = nullptr;
  const void* values = nullptr;

  int64_t rows() const { return shape[0]; }
  int64_t cols() const { return shape[1]; }
  // The compressed dimension (rows for CSR) and the other one.
  int64_t major() const { return format == SparseFormat::csr ? shape[0] : shape[1]; }
  int64_t minor() const { return format == SparseFormat::csr ? shape[1] : shape[0]; }
};

// Checks a sparse matrix in host memory: format, dtypes, shape, pointers; indptr[0] == 0,
// indptr non-decreasing, indptr[major] == nnz; every index in [0, minor); finite values. Throws
// ErrorCode::invalid_argument naming `what` and the first problem found. (Device matrices are
// checked on a host copy: see canonicalize.)
GPUML_API void validate_sparse(const SparseView& X, const char* what = "X");

// An owned canonical copy in host memory: the view's format, dtype and index dtype, indices
// strictly increasing within each row (CSR) or column (CSC), duplicates summed (explicit zeros,
// given or summed, kept). What the backends read.
class GPUML_API SparseHostMatrix {
 public:
  SparseHostMatrix() = default;
  SparseHostMatrix(SparseFormat format, DType dtype, DType index_dtype, int64_t rows, int64_t cols, int64_t nnz);
  SparseView view() const;
  void* indptr() const { return indptr_.view().data; }
  void* indices() const { return indices_.view().data; }
  void* values() const { return values_.view().data; }

 private:
  SparseView spec_{};
  HostArray indptr_, indices_, values_;
};

// Validates X (copied to the host first when it is in device memory) and returns its canonical
// copy. `ctx` does the device copies.
GPUML_API SparseHostMatrix canonicalize(const Context& ctx, const SparseView& X, const char* what = "X");

}  // namespace gpuml

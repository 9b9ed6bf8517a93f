#pragma once
// A checked sparse matrix as Eigen sparse matrices in both storage orders (the CPU's canonical
// form): the products X·M and Xᵀ·M both run over rows of a row-major matrix, one per thread
// block, with no reduction between threads. Include only from units that define
// EIGEN_DONT_PARALLELIZE (as every unit of the library that uses Eigen).
#include <Eigen/SparseCore>

#include "gpuml/core/sparse.hpp"

namespace gpuml::detail {

template <typename T, typename I>
struct EigenSparse {
  using Rows_t = Eigen::SparseMatrix<T, Eigen::RowMajor, I>;
  using Cols_t = Eigen::SparseMatrix<T, Eigen::ColMajor, I>;
  Rows_t by_rows;     // X, CSR: sorted, duplicates summed
  Cols_t by_columns;  // X, CSC: the same entries
};

// Both orders of a validated host matrix (validate_sparse), whatever its order of indices and
// its duplicates: the transposition into the other order sorts (a counting sort over the
// compressed dimension), duplicates are summed there, and a second transposition gives the
// first order sorted. Explicit zeros stay.
template <typename T, typename I>
EigenSparse<T, I> to_eigen(const SparseView& X);

// Calls f(T{}, I{}) with the value type of `dtype` and the index type of `index_dtype`.
template <typename F>
decltype(auto) with_sparse_types(DType dtype, DType index_dtype, F&& f) {
  if (dtype == DType::float32) {
    if (index_dtype == DType::int32) return f(float{}, int32_t{});
    return f(float{}, int64_t{});
  }
  if (index_dtype == DType::int32) return f(double{}, int32_t{});
  return f(double{}, int64_t{});
}

// A caller's sparse X in host memory and checked: the view itself when it is host memory,
// else a host copy of its three arrays.
struct HostSparse {
  SparseView view;
  Buffer indptr, indices, values;  // empty when `view` is the caller's
};
HostSparse host_sparse(const Context& ctx, const SparseView& X, const char* what);

}  // namespace gpuml::detail

// Sparse matrices: the checks of a caller's CSR / CSC matrix, its canonical copies (the public
// SparseHostMatrix, and Eigen's two storage orders for the CPU's products).
#define EIGEN_DONT_PARALLELIZE  // as every unit of the library that uses Eigen (least_squares.cpp)
#include "core/sparse_eigen.hpp"

#include <cmath>
#include <cstring>
#include <string>

#include "core/device_ops.hpp"
#include "core/sparse_backend.hpp"
#include "gpuml/core/context.hpp"
#include "gpuml/core/error.hpp"

namespace gpuml {

namespace {

std::string prefix(const char* what) { return std::string(what) + " (sparse matrix): "; }

}  // namespace

namespace detail {

void check_header(const SparseView& X, const char* what) {
  const std::string at = prefix(what);
  GPUML_EXPECT(X.format == SparseFormat::csr || X.format == SparseFormat::csc,
               at + "format is " + std::to_string(static_cast<int32_t>(X.format)) + ": expected 0 (CSR) or 1 (CSC)");
  GPUML_EXPECT(X.dtype == DType::float32 || X.dtype == DType::float64,
               at + "values must be float32 or float64, got dtype " + std::to_string(static_cast<int32_t>(X.dtype)));
  GPUML_EXPECT(X.index_dtype == DType::int32 || X.index_dtype == DType::int64,
               at + "indptr and indices must be int32 or int64, got dtype " +
                   std::to_string(static_cast<int32_t>(X.index_dtype)));
  GPUML_EXPECT(X.shape[0] >= 0 && X.shape[1] >= 0, at + "shape (" + std::to_string(X.shape[0]) + ", " +
                                                       std::to_string(X.shape[1]) + ") has a negative extent");
  GPUML_EXPECT(X.nnz >= 0, at + "nnz is " + std::to_string(X.nnz) + ": expected >= 0");
  if (X.index_dtype == DType::int32) {
    const int64_t limit = INT32_MAX;
    GPUML_EXPECT(X.major() < limit && X.nnz <= limit,
                 at + "int32 indices cannot describe " + std::to_string(X.major()) + " compressed lines and " +
                     std::to_string(X.nnz) + " entries: use int64 indices");
  }
  GPUML_EXPECT(X.indptr != nullptr, at + "indptr is NULL (it has " + std::to_string(X.major() + 1) + " entries)");
  GPUML_EXPECT(X.nnz == 0 || (X.indices != nullptr && X.values != nullptr),
               at + "indices or values is NULL but nnz is " + std::to_string(X.nnz));
}

void expect_sparse_contents(const SparseView& X, const char* what, const SparseContentsFirst& f) {
  const std::string at = prefix(what);
  const bool csr = X.format == SparseFormat::csr;
  const char* line = csr ? "n_rows" : "n_cols";
  const char* index_kind = csr ? "column" : "row";
  GPUML_EXPECT(f.indptr_first == 0, at + "indptr[0] is " + std::to_string(f.indptr_first) + ": it must be 0");
  const int64_t i = f.decreasing_at;
  GPUML_EXPECT(i < 0, at + "indptr is not non-decreasing: indptr[" + std::to_string(i) + "] = " +
                          std::to_string(f.decreasing_left) + " > indptr[" + std::to_string(i + 1) + "] = " +
                          std::to_string(f.decreasing_right));
  GPUML_EXPECT(f.indptr_last == X.nnz, at + "indptr[" + line + "] = " + std::to_string(f.indptr_last) +
                                           " does not match nnz = " + std::to_string(X.nnz));
  GPUML_EXPECT(f.bad_index_at < 0, at + "indices[" + std::to_string(f.bad_index_at) + "] = " +
                                       std::to_string(f.bad_index) + " is out of range: " + index_kind +
                                       " indices must be in [0, " + std::to_string(X.minor()) + ")");
  GPUML_EXPECT(f.bad_value_at < 0, at + "values[" + std::to_string(f.bad_value_at) + "] is " +
                                       (f.bad_value_nan ? "NaN" : "infinite") + ": values must be finite");
}

}  // namespace detail

namespace {

// The first problem of each kind, by scans that stop at it.
template <typename T, typename I>
void check_contents(const SparseView& X, const char* what) {
  const I* indptr = static_cast<const I*>(X.indptr);
  const I* indices = static_cast<const I*>(X.indices);
  const T* values = static_cast<const T*>(X.values);
  const int64_t major = X.major(), minor = X.minor();
  detail::SparseContentsFirst f;
  f.indptr_first = indptr[0];
  for (int64_t i = 0; i < major && f.decreasing_at < 0; ++i)
    if (indptr[i] > indptr[i + 1]) {
      f.decreasing_at = i;
      f.decreasing_left = indptr[i];
      f.decreasing_right = indptr[i + 1];
    }
  f.indptr_last = indptr[major];
  for (int64_t k = 0; k < X.nnz && f.bad_index_at < 0; ++k)
    if (indices[k] < 0 || static_cast<int64_t>(indices[k]) >= minor) {
      f.bad_index_at = k;
      f.bad_index = indices[k];
    }
  for (int64_t k = 0; k < X.nnz && f.bad_value_at < 0; ++k)
    if (!std::isfinite(values[k])) {
      f.bad_value_at = k;
      f.bad_value_nan = std::isnan(values[k]);
    }
  detail::expect_sparse_contents(X, what, f);
}

}  // namespace

void validate_sparse(const SparseView& X, const char* what) {
  detail::check_header(X, what);
  GPUML_EXPECT(!X.device.is_cuda(), prefix(what) + "validate_sparse reads host memory; this matrix is on " +
                                        device_name(X.device) + " (canonicalize copies it first)");
  detail::with_sparse_types(X.dtype, X.index_dtype, [&](auto t, auto i) {
    check_contents<decltype(t), decltype(i)>(X, what);
  });
}

SparseHostMatrix::SparseHostMatrix(SparseFormat format, DType dtype, DType index_dtype, int64_t rows, int64_t cols,
                                   int64_t nnz) {
  spec_.format = format;
  spec_.dtype = dtype;
  spec_.index_dtype = index_dtype;
  spec_.shape[0] = rows;
  spec_.shape[1] = cols;
  spec_.nnz = nnz;
  indptr_ = HostArray(index_dtype, spec_.major() + 1);
  indices_ = HostArray(index_dtype, nnz);
  values_ = HostArray(dtype, nnz);
}

SparseView SparseHostMatrix::view() const {
  SparseView v = spec_;
  v.indptr = indptr_.view().data;
  v.indices = indices_.view().data;
  v.values = values_.view().data;
  return v;
}

SparseHostMatrix canonicalize(const Context& ctx, const SparseView& X, const char* what) {
  const detail::HostSparse host = detail::host_sparse(ctx, X, what);
  return detail::with_sparse_types(X.dtype, X.index_dtype, [&](auto t, auto i) {
    using T = decltype(t);
    using I = decltype(i);
    const detail::EigenSparse<T, I> both = detail::to_eigen<T, I>(host.view);
    SparseHostMatrix out(X.format, X.dtype, X.index_dtype, X.rows(), X.cols(), 0);
    auto copy = [&](const auto& m) {
      out = SparseHostMatrix(X.format, X.dtype, X.index_dtype, X.rows(), X.cols(), m.nonZeros());
      std::memcpy(out.indptr(), m.outerIndexPtr(), sizeof(I) * static_cast<std::size_t>(m.outerSize() + 1));
      if (m.nonZeros() == 0) return;  // no entries: Eigen's arrays may be null, memcpy's may not
      std::memcpy(out.indices(), m.innerIndexPtr(), sizeof(I) * static_cast<std::size_t>(m.nonZeros()));
      std::memcpy(out.values(), m.valuePtr(), sizeof(T) * static_cast<std::size_t>(m.nonZeros()));
    };
    if (X.format == SparseFormat::csr)
      copy(both.by_rows);
    else
      copy(both.by_columns);
    return out;
  });
}

namespace detail {

template <typename T, typename I>
EigenSparse<T, I> to_eigen(const SparseView& X) {
  using Rows = Eigen::SparseMatrix<T, Eigen::RowMajor, I>;
  using Cols = Eigen::SparseMatrix<T, Eigen::ColMajor, I>;
  EigenSparse<T, I> out;
  const auto* indptr = static_cast<const I*>(X.indptr);
  const auto* indices = static_cast<const I*>(X.indices);
  const auto* values = static_cast<const T*>(X.values);
  // After the transposition, duplicates sit side by side in their line: summed there.
  auto sum_duplicates = [](auto& m) {
    for (Eigen::Index j = 0; j < m.outerSize(); ++j)
      for (I k = m.outerIndexPtr()[j] + 1; k < m.outerIndexPtr()[j + 1]; ++k)
        if (m.innerIndexPtr()[k] == m.innerIndexPtr()[k - 1]) {
          m.uncompress();
          m.sumupDuplicates();  // leaves it compressed
          return;
        }
  };
  if (X.format == SparseFormat::csr) {
    const Eigen::Map<const Rows> given(X.rows(), X.cols(), X.nnz, indptr, indices, values);
    out.by_columns = given;
    sum_duplicates(out.by_columns);
    out.by_rows = out.by_columns;
  } else {
    const Eigen::Map<const Cols> given(X.rows(), X.cols(), X.nnz, indptr, indices, values);
    out.by_rows = given;
    sum_duplicates(out.by_rows);
    out.by_columns = out.by_rows;
  }
  return out;
}

HostSparse host_sparse(const Context& ctx, const SparseView& X, const char* what) {
  check_header(X, what);
  HostSparse out;
  out.view = X;
  if (X.device.is_cuda()) {
    const std::size_t index = dtype_size(X.index_dtype), value = dtype_size(X.dtype);
    const auto nnz = static_cast<std::size_t>(X.nnz), lines = static_cast<std::size_t>(X.major() + 1);
    out.indptr = Buffer::host(lines * index);
    out.indices = Buffer::host(nnz * index);
    out.values = Buffer::host(nnz * value);
    copy_bytes(ctx, out.indptr.data(), Device{}, X.indptr, X.device, lines * index);
    if (nnz > 0) {
      copy_bytes(ctx, out.indices.data(), Device{}, X.indices, X.device, nnz * index);
      copy_bytes(ctx, out.values.data(), Device{}, X.values, X.device, nnz * value);
    }
    out.view.device = Device{};
    out.view.indptr = out.indptr.data();
    out.view.indices = out.indices.data();
    out.view.values = out.values.data();
  } else {
    check_pointer_location(X.indptr, X.device, what);
    if (X.nnz > 0) {
      check_pointer_location(X.indices, X.device, what);
      check_pointer_location(X.values, X.device, what);
    }
  }
  validate_sparse(out.view, what);
  return out;
}

template EigenSparse<float, int32_t> to_eigen<float, int32_t>(const SparseView&);
template EigenSparse<float, int64_t> to_eigen<float, int64_t>(const SparseView&);
template EigenSparse<double, int32_t> to_eigen<double, int32_t>(const SparseView&);
template EigenSparse<double, int64_t> to_eigen<double, int64_t>(const SparseView&);

}  // namespace detail

}  // namespace gpuml

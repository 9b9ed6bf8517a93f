// The CPU's sparse primitives (core/sparse_backend.hpp): Eigen's sparse-dense products over
// both storage orders of X, threaded over blocks of output rows (no reduction between threads,
// so results do not depend on the thread count).
#define EIGEN_DONT_PARALLELIZE  // this file threads its own loops (and see least_squares.cpp)
#include <Eigen/Dense>

#include <algorithm>
#include <vector>

#include "core/parallel.hpp"
#include "core/sparse_backend.hpp"
#include "core/sparse_eigen.hpp"
#include "gpuml/core/error.hpp"

namespace gpuml::detail {

namespace {

template <typename T>
using RowsOf = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

template <typename T, typename I>
class SparseCpu final : public SparseMatrix<T> {
 public:
  SparseCpu(const Context& ctx, EigenSparse<T, I> X) : X_(std::move(X)), threads_(std::max(1, ctx.n_threads())) {
    this->rows_ = X_.by_rows.rows();
    this->cols_ = X_.by_rows.cols();
  }

  void times(const T* B, int64_t t, T* out) override {
    const int64_t n = this->rows_, d = this->cols_;
    const Eigen::Map<const RowsOf<T>> right(B, d, t);
    const RowBlocks blocks(n, threads_, 256);
#pragma omp parallel for num_threads(threads_for(threads_, X_.by_rows.nonZeros() * t)) schedule(static)
    for (int b = 0; b < blocks.count(); ++b) {
      const int64_t begin = blocks.begin(b), rows = blocks.end(b) - begin;
      Eigen::Map<RowsOf<T>> slice(out + begin * t, rows, t);
      slice.noalias() = X_.by_rows.middleRows(begin, rows) * right;
    }
  }

  void transpose_times(const T* B, int64_t t, T* out) override {
    const int64_t n = this->rows_, d = this->cols_;
    const Eigen::Map<const RowsOf<T>> right(B, n, t);
    const RowBlocks blocks(d, threads_, 256);
#pragma omp parallel for num_threads(threads_for(threads_, X_.by_rows.nonZeros() * t)) schedule(static)
    for (int b = 0; b < blocks.count(); ++b) {
      const int64_t begin = blocks.begin(b), cols = blocks.end(b) - begin;
      Eigen::Map<RowsOf<T>> slice(out + begin * t, cols, t);
      slice.noalias() = X_.by_columns.middleCols(begin, cols).transpose() * right;  // Xᵀ's rows
    }
  }

  void column_moments(double* sums_host, double* squares_host) override {
    const auto& C = X_.by_columns;
#pragma omp parallel for num_threads(threads_for(threads_, C.nonZeros())) schedule(static)
    for (Eigen::Index j = 0; j < C.outerSize(); ++j) {
      double sum = 0.0, squares = 0.0;
      for (typename EigenSparse<T, I>::Cols_t::InnerIterator it(C, j); it; ++it) {
        const double v = it.value();
        sum += v;
        squares += v * v;
      }
      sums_host[j] = sum;
      squares_host[j] = squares;
    }
  }

  void weighted_gram(const T* w_host, double* gram_host) override {
    const int64_t d = this->cols_;
    const auto& R = X_.by_rows;
    // Σ_i w_i x_i x_iᵀ, one thread per block of output rows j: row j of the Gram matrix is
    // Σ_i w_i x_ij x_i over the rows i where column j is stored (X's CSC column j), so threads
    // write disjoint rows and nothing is reduced between them (the result does not depend on the
    // thread count).
    const auto& C = X_.by_columns;
    std::fill(gram_host, gram_host + d * d, 0.0);
    const RowBlocks blocks(d, threads_, 16);
#pragma omp parallel for num_threads(threads_for(threads_, R.nonZeros() * 16)) schedule(dynamic)
    for (int b = 0; b < blocks.count(); ++b)
      for (int64_t j = blocks.begin(b); j < blocks.end(b); ++j) {
        double* row = gram_host + j * d;
        for (typename EigenSparse<T, I>::Cols_t::InnerIterator c(C, j); c; ++c) {
          const double scaled = static_cast<double>(c.value()) * (w_host ? static_cast<double>(w_host[c.row()]) : 1.0);
          for (typename EigenSparse<T, I>::Rows_t::InnerIterator r(R, c.row()); r; ++r)
            row[r.col()] += scaled * static_cast<double>(r.value());
        }
      }
    // Symmetric in exact arithmetic; made exactly so (the solvers read one triangle or both).
    for (int64_t j = 0; j < d; ++j)
      for (int64_t k = j + 1; k < d; ++k) gram_host[k * d + j] = gram_host[j * d + k];
  }

  void row_squared_norms(T* norms) override {
    const auto& R = X_.by_rows;
#pragma omp parallel for num_threads(threads_for(threads_, R.nonZeros())) schedule(static)
    for (Eigen::Index i = 0; i < R.outerSize(); ++i) {
      double sum = 0.0;
      for (typename EigenSparse<T, I>::Rows_t::InnerIterator it(R, i); it; ++it)
        sum += static_cast<double>(it.value()) * static_cast<double>(it.value());
      norms[i] = static_cast<T>(sum);
    }
  }

  void dense_rows(const int64_t* rows_host, int64_t m, T* out_host) override {
    const int64_t n = this->rows_, d = this->cols_;
    std::fill(out_host, out_host + m * d, T(0));
    for (int64_t r = 0; r < m; ++r) {
      GPUML_EXPECT(rows_host[r] >= 0 && rows_host[r] < n, "sparse dense_rows: row index out of range");
      for (typename EigenSparse<T, I>::Rows_t::InnerIterator it(X_.by_rows, rows_host[r]); it; ++it)
        out_host[r * d + it.col()] = it.value();
    }
  }

  void grouped_row_sums(const int32_t* groups, const T* w, int64_t k, double* sums_host,
                        double* group_weights_host) override {
    const int64_t n = this->rows_, d = this->cols_;
    const auto& C = X_.by_columns;
    std::fill(sums_host, sums_host + k * d, 0.0);
    // One thread per block of columns, each column's entries in row order: threads write
    // disjoint columns of the sums (nothing reduced between threads, no dependence on their count).
    const RowBlocks blocks(d, threads_, 64);
#pragma omp parallel for num_threads(threads_for(threads_, C.nonZeros())) schedule(static)
    for (int b = 0; b < blocks.count(); ++b)
      for (int64_t j = blocks.begin(b); j < blocks.end(b); ++j)
        for (typename EigenSparse<T, I>::Cols_t::InnerIterator it(C, j); it; ++it) {
          const int64_t i = it.row();
          sums_host[groups[i] * d + j] += static_cast<double>(it.value()) * (w ? static_cast<double>(w[i]) : 1.0);
        }
    std::fill(group_weights_host, group_weights_host + k, 0.0);
    for (int64_t i = 0; i < n; ++i) group_weights_host[groups[i]] += w ? static_cast<double>(w[i]) : 1.0;
  }

 private:
  EigenSparse<T, I> X_;
  int threads_;
};

}  // namespace

template <typename T>
std::unique_ptr<SparseMatrix<T>> make_sparse_cpu_matrix(const Context& ctx, const SparseView& X, const char* what) {
  GPUML_EXPECT(X.dtype == dtype_of<T>::value, std::string(what) + ": internal: values of another dtype");
  const HostSparse host = host_sparse(ctx, X, what);
  if (X.index_dtype == DType::int32)
    return std::make_unique<SparseCpu<T, int32_t>>(ctx, to_eigen<T, int32_t>(host.view));
  return std::make_unique<SparseCpu<T, int64_t>>(ctx, to_eigen<T, int64_t>(host.view));
}

template <typename T>
std::unique_ptr<SparseMatrix<T>> make_sparse_matrix_as(const Context& ctx, const SparseView& X, const char* what) {
  if (ctx.is_cuda()) return make_sparse_cuda_matrix<T>(ctx, X, what);  // converts on the device
  if (X.dtype == dtype_of<T>::value) return make_sparse_cpu_matrix<T>(ctx, X, what);
  const HostSparse host = host_sparse(ctx, X, what);  // checked
  std::vector<T> values(static_cast<std::size_t>(X.nnz));
  with_sparse_types(X.dtype, X.index_dtype, [&](auto from, auto) {
    std::copy_n(static_cast<const decltype(from)*>(host.view.values), X.nnz, values.data());
  });
  SparseView converted = host.view;
  converted.dtype = dtype_of<T>::value;
  converted.values = values.data();
  if (X.index_dtype == DType::int32)
    return std::make_unique<SparseCpu<T, int32_t>>(ctx, to_eigen<T, int32_t>(converted));
  return std::make_unique<SparseCpu<T, int64_t>>(ctx, to_eigen<T, int64_t>(converted));
}

template <typename T>
std::unique_ptr<SparseMatrix<T>> make_sparse_matrix(const Context& ctx, const SparseView& X, const char* what) {
  if (ctx.is_cuda()) return make_sparse_cuda_matrix<T>(ctx, X, what);
  return make_sparse_cpu_matrix<T>(ctx, X, what);
}

template std::unique_ptr<SparseMatrix<float>> make_sparse_matrix<float>(const Context&, const SparseView&, const char*);
template std::unique_ptr<SparseMatrix<double>> make_sparse_matrix<double>(const Context&, const SparseView&, const char*);
template std::unique_ptr<SparseMatrix<float>> make_sparse_matrix_as<float>(const Context&, const SparseView&, const char*);
template std::unique_ptr<SparseMatrix<double>> make_sparse_matrix_as<double>(const Context&, const SparseView&,
                                                                             const char*);
template std::unique_ptr<SparseMatrix<float>> make_sparse_cpu_matrix<float>(const Context&, const SparseView&, const char*);
template std::unique_ptr<SparseMatrix<double>> make_sparse_cpu_matrix<double>(const Context&, const SparseView&,
                                                                              const char*);

}  // namespace gpuml::detail

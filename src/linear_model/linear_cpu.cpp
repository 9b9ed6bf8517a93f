// The CPU backend of the least-squares family: LinearBackend<T> with OpenMP threads and Eigen.
//
// Determinism: rows are split into a fixed number of contiguous blocks (a function of the row
// count and the context's thread count only); per-block partial results are combined in block
// order, so results never depend on scheduling.
#define EIGEN_DONT_PARALLELIZE  // this file threads its own loops (and see least_squares.cpp)
#include <omp.h>

#include <Eigen/Dense>

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/parallel.hpp"
#include "gpuml/core/error.hpp"
#include "linear_model/linear_backend.hpp"

namespace gpuml::detail {

namespace {


template <typename T>
using RowMatrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <typename T>
using ColMatrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic>;
using DoubleMatrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic>;

// Rows per chunk of the Gram product: each chunk's product is formed in T (a fast GEMM), and the
// chunks are summed in double, so float32 sums never run over more than this many rows.
constexpr int64_t kGramChunk = 512;

template <typename T>
class LinearCpuBackend final : public LinearBackend<T> {
 public:
  explicit LinearCpuBackend(const Context& ctx) : threads_(std::max(1, ctx.n_threads())) {}

  void weighted_means(const T* A, int64_t n, int64_t m, const T* w, double* means_host) override {
    const RowBlocks blocks(n, threads_, 1024);
    std::vector<double> partial(static_cast<std::size_t>(blocks.count() * (m + 1)), 0.0);
#pragma omp parallel for num_threads(threads_for(n * m)) schedule(static)
    for (int b = 0; b < blocks.count(); ++b) {
      double* acc = partial.data() + static_cast<int64_t>(b) * (m + 1);
      for (int64_t i = blocks.begin(b); i < blocks.end(b); ++i) {
        const double wi = w ? static_cast<double>(w[i]) : 1.0;
        const T* row = A + i * m;
        for (int64_t j = 0; j < m; ++j) acc[j] += wi * static_cast<double>(row[j]);
        acc[m] += wi;
      }
    }
    std::vector<double> total(static_cast<std::size_t>(m + 1), 0.0);
    for (int b = 0; b < blocks.count(); ++b)
      for (int64_t j = 0; j <= m; ++j) total[j] += partial[b * (m + 1) + j];
    for (int64_t j = 0; j < m; ++j) means_host[j] = total[m] > 0 ? total[j] / total[m] : 0.0;
  }

  void center_scale(const T* A, int64_t n, int64_t m, const double* means_host, const T* w, T* out,
                    double* sums_host) override {
    const RowBlocks blocks(n, threads_, 1024);
    const int64_t width = sums_host ? m + 1 : 0;
    std::vector<double> partial(static_cast<std::size_t>(blocks.count() * width), 0.0);
#pragma omp parallel for num_threads(threads_for(n * m)) schedule(static)
    for (int b = 0; b < blocks.count(); ++b) {
      double* acc = sums_host ? partial.data() + static_cast<int64_t>(b) * width : nullptr;
      for (int64_t i = blocks.begin(b); i < blocks.end(b); ++i) {
        const double wi = w ? static_cast<double>(w[i]) : 1.0;
        const double scale = w ? std::sqrt(wi) : 1.0;
        for (int64_t j = 0; j < m; ++j) {
          const double v = static_cast<double>(A[i * m + j]) - (means_host ? means_host[j] : 0.0);
          if (acc) acc[j] += wi * v;
          out[i * m + j] = static_cast<T>(v * scale);
        }
        if (acc) acc[m] += wi;
      }
    }
    if (!sums_host) return;
    std::fill(sums_host, sums_host + width, 0.0);
    for (int b = 0; b < blocks.count(); ++b)
      for (int64_t j = 0; j < width; ++j) sums_host[j] += partial[b * width + j];
  }

  void gram(const T* A, const T* B, int64_t n, int64_t m, int64_t t, double* gram_host, double* cross_host) override {
    const RowBlocks blocks(n, threads_, kGramChunk);
    const int64_t stride = m * m + m * t;
    std::vector<double> partial(static_cast<std::size_t>(blocks.count() * stride), 0.0);
#pragma omp parallel for num_threads(threads_for(n * m * m)) schedule(static)
    for (int b = 0; b < blocks.count(); ++b) {
      Eigen::Map<DoubleMatrix> G(partial.data() + b * stride, m, m);
      Eigen::Map<DoubleMatrix> C(partial.data() + b * stride + m * m, m, t);
      ColMatrix<T> Gc(m, m), Cc(m, t);
      for (int64_t i0 = blocks.begin(b); i0 < blocks.end(b); i0 += kGramChunk) {
        const int64_t rows = std::min(kGramChunk, blocks.end(b) - i0);
        Eigen::Map<const RowMatrix<T>> Ac(A + i0 * m, rows, m);
        Eigen::Map<const RowMatrix<T>> Bc(B + i0 * t, rows, t);
        // Only the lower triangle (a symmetric rank-k update: half the work of a full product).
        Gc.setZero();
        Gc.template selfadjointView<Eigen::Lower>().rankUpdate(Ac.transpose());
        Cc.noalias() = Ac.transpose() * Bc;
        G.template triangularView<Eigen::Lower>() += Gc.template cast<double>();
        C += Cc.template cast<double>();
      }
    }
    Eigen::Map<Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>> G_out(gram_host, m, m);
    Eigen::Map<Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>> C_out(cross_host, m, t);
    DoubleMatrix G_sum = DoubleMatrix::Zero(m, m);
    C_out.setZero();
    for (int b = 0; b < blocks.count(); ++b) {
      G_sum += Eigen::Map<DoubleMatrix>(partial.data() + b * stride, m, m);
      C_out += Eigen::Map<DoubleMatrix>(partial.data() + b * stride + m * m, m, t);
    }
    G_out = G_sum.selfadjointView<Eigen::Lower>();
  }

  void qr(T* A, T* B, int64_t n, int64_t m, int64_t t, double* R_host, double* QtB_host) override {
    if (n < m) throw_error(ErrorCode::internal, "linear qr: needs n >= m");
    // Householder QR in T on a column-major copy (Eigen's blocked algorithm, one thread).
    Eigen::HouseholderQR<ColMatrix<T>> qr(Eigen::Map<const RowMatrix<T>>(A, n, m));
    ColMatrix<T> QtB = Eigen::Map<const RowMatrix<T>>(B, n, t);
    QtB.applyOnTheLeft(qr.householderQ().adjoint());
    const ColMatrix<T>& packed = qr.matrixQR();
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < m; ++j) R_host[i * m + j] = j >= i ? static_cast<double>(packed(i, j)) : 0.0;
      for (int64_t k = 0; k < t; ++k) QtB_host[i * t + k] = static_cast<double>(QtB(i, k));
    }
  }

  void right_triangular_solve(T* A, int64_t n, int64_t m, const double* R_host) override {
    const RowMatrix<T> R = Eigen::Map<const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(R_host, m, m)
                               .template cast<T>();
    const RowBlocks blocks(n, threads_, 1024);
#pragma omp parallel for num_threads(threads_for(n * m * m)) schedule(static)
    for (int b = 0; b < blocks.count(); ++b) {
      Eigen::Map<RowMatrix<T>> Ab(A + blocks.begin(b) * m, blocks.end(b) - blocks.begin(b), m);
      R.template triangularView<Eigen::Upper>().template solveInPlace<Eigen::OnTheRight>(Ab);  // Ab R = old Ab
    }
  }

  void predict(const T* X, int64_t n, int64_t d, const T* coef_host, const T* intercept_host, int64_t t,
               T* out) override {
    Eigen::Map<const RowMatrix<T>> coef(coef_host, t, d);
    const RowBlocks blocks(n, threads_, 1024);
#pragma omp parallel for num_threads(threads_for(n * d * t)) schedule(static)
    for (int b = 0; b < blocks.count(); ++b) {
      const int64_t rows = blocks.end(b) - blocks.begin(b);
      Eigen::Map<const RowMatrix<T>> Xb(X + blocks.begin(b) * d, rows, d);
      Eigen::Map<RowMatrix<T>> Ob(out + blocks.begin(b) * t, rows, t);
      Ob.noalias() = Xb * coef.transpose();
      if (intercept_host)
        for (int64_t i = 0; i < rows; ++i)
          for (int64_t k = 0; k < t; ++k) Ob(i, k) += intercept_host[k];
    }
  }

  void symmetric_eigen(const double* M_host, int64_t m, int64_t k, double* values_host, double* vectors_host) override {
    const Eigen::SelfAdjointEigenSolver<DoubleMatrix> es(Eigen::Map<const DoubleMatrix>(M_host, m, m));
    GPUML_EXPECT(es.info() == Eigen::Success, "the eigen-decomposition of a symmetric matrix did not converge");
    Eigen::Map<Eigen::VectorXd>(values_host, m) = es.eigenvalues();
    for (int64_t i = 0; i < std::min(k, m); ++i)  // column-major: each vector contiguous
      Eigen::Map<Eigen::VectorXd>(vectors_host + i * m, m) = es.eigenvectors().col(m - 1 - i);
  }

  void shifted_gram(const T* X, int64_t n, int64_t m, const double* shift_host, const T* w, const T* B, int64_t t,
                    double* gram_host, double* cross_host, double* sums_host) override {
    std::vector<T> A(static_cast<std::size_t>(n * m));
    center_scale(X, n, m, shift_host, w, A.data(), sums_host);
    gram(A.data(), B, n, m, t, gram_host, cross_host);
  }

  bool cholesky(const double* M_host, int64_t m, double* U_host) override { return host_cholesky(M_host, m, U_host); }

  bool cholesky_solve(const double* M_host, int64_t m, const double* R_host, int64_t t, double* Z_host,
                      double* diagonal_host) override {
    return host_cholesky_solve(M_host, m, R_host, t, Z_host, diagonal_host);
  }

  void cross(const T* A, const T* B, int64_t n, int64_t m, int64_t t, double* cross_host) override {
    const RowBlocks blocks(n, threads_, kGramChunk);
    const int64_t stride = m * t;
    std::vector<double> partial(static_cast<std::size_t>(blocks.count() * stride), 0.0);
#pragma omp parallel for num_threads(threads_for(n * m * t)) schedule(static)
    for (int b = 0; b < blocks.count(); ++b) {
      Eigen::Map<DoubleMatrix> C(partial.data() + b * stride, m, t);
      ColMatrix<T> Cc(m, t);
      for (int64_t i0 = blocks.begin(b); i0 < blocks.end(b); i0 += kGramChunk) {
        const int64_t rows = std::min(kGramChunk, blocks.end(b) - i0);
        Eigen::Map<const RowMatrix<T>> Ac(A + i0 * m, rows, m);
        Eigen::Map<const RowMatrix<T>> Bc(B + i0 * t, rows, t);
        Cc.noalias() = Ac.transpose() * Bc;
        C += Cc.template cast<double>();
      }
    }
    Eigen::Map<Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>> C_out(cross_host, m, t);
    C_out.setZero();
    for (int b = 0; b < blocks.count(); ++b) C_out += Eigen::Map<DoubleMatrix>(partial.data() + b * stride, m, t);
  }

 private:
  int threads_for(int64_t work) const { return detail::threads_for(threads_, work); }

  int threads_;
};

}  // namespace

bool host_cholesky(const double* M_host, int64_t m, double* U_host) {
  using RowDouble = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const Eigen::LLT<RowDouble> llt(Eigen::Map<const RowDouble>(M_host, m, m));
  if (llt.info() != Eigen::Success) return false;
  Eigen::Map<RowDouble>(U_host, m, m) = llt.matrixU().toDenseMatrix();
  return true;
}

bool host_cholesky_solve(const double* M_host, int64_t m, const double* R_host, int64_t t, double* Z_host,
                         double* diagonal_host) {
  using RowDouble = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const Eigen::LLT<Eigen::MatrixXd> llt(Eigen::Map<const Eigen::MatrixXd>(M_host, m, m));  // symmetric: either layout
  if (llt.info() != Eigen::Success) return false;
  // t == 0 (only the factorization asked for): R and Z may be NULL, and Eigen's triangular solve
  // binds a reference to their first element even when empty (UBSan: null reference).
  if (t > 0) Eigen::Map<RowDouble>(Z_host, m, t) = llt.solve(Eigen::Map<const RowDouble>(R_host, m, t));
  Eigen::Map<Eigen::VectorXd>(diagonal_host, m) = llt.matrixLLT().diagonal();
  return true;
}

template <typename T>
std::unique_ptr<LinearBackend<T>> make_linear_cpu_backend(const Context& ctx) {
  return std::make_unique<LinearCpuBackend<T>>(ctx);
}

template std::unique_ptr<LinearBackend<float>> make_linear_cpu_backend<float>(const Context&);
template std::unique_ptr<LinearBackend<double>> make_linear_cpu_backend<double>(const Context&);

}  // namespace gpuml::detail

// Exact and randomized SVDs over the linear backend primitives, and PCA / TruncatedSVD's shared
// helpers. The heavy products run in the backend; the small dense work (SVDs of d x d or
// (k + p) x d matrices, eigen-decompositions of small Gram matrices) on the host with Eigen.
#define EIGEN_DONT_PARALLELIZE  // as in least_squares.cpp: all library units agree
#include "decomposition/spectral.hpp"

#include <Eigen/Dense>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "core/parallel.hpp"
#include "core/random.hpp"
#include "core/staging.hpp"
#include "core/trace.hpp"
#include "gpuml/core/error.hpp"
#include "linear_model/least_squares.hpp"

namespace gpuml::detail {

namespace {

using Matrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using Vector = Eigen::VectorXd;

template <typename T>
std::vector<T> to_type(const Matrix& m) {
  std::vector<T> out(static_cast<std::size_t>(m.size()));
  for (Eigen::Index i = 0; i < m.rows(); ++i)
    for (Eigen::Index j = 0; j < m.cols(); ++j) out[i * m.cols() + j] = static_cast<T>(m(i, j));
  return out;
}

// splitmix64's finalizer: entry i of a counter-based stream is mix(key + i), whatever thread
// draws it, so the test matrix comes out the same on any number of threads (and backends).
inline uint64_t mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// rows x cols standard normal draws from `seed` (Box-Muller on pairs of entries), row-major.
template <typename T>
std::vector<T> gaussian_block(uint64_t seed, int64_t rows, int64_t cols, int threads) {
  const int64_t total = rows * cols, pairs = (total + 1) / 2;
  const uint64_t key = Random(seed).next();
  constexpr uint64_t kGolden = 0x9e3779b97f4a7c15ULL;
  auto unit = [](uint64_t bits) { return static_cast<double>(bits >> 11) * (1.0 / 9007199254740992.0); };
  std::vector<T> out(static_cast<std::size_t>(total));
#pragma omp parallel for num_threads(threads_for(threads, total)) schedule(static)
  for (int64_t p = 0; p < pairs; ++p) {
    const uint64_t at = key + kGolden * static_cast<uint64_t>(2 * p);
    const double u1 = 1.0 - unit(mix(at)), u2 = unit(mix(at + kGolden));  // u1 in (0, 1]
    const double radius = std::sqrt(-2.0 * std::log(u1)), angle = 2.0 * M_PI * u2;
    out[2 * p] = static_cast<T>(radius * std::cos(angle));
    if (2 * p + 1 < total) out[2 * p + 1] = static_cast<T>(radius * std::sin(angle));
  }
  return out;
}

// out (cols x rows, row-major, double) = inᵀ for in rows x cols (row-major), split over the
// threads by tiles of `in`'s rows (a 2^18 x 100 block: the right vectors of a wide X).
template <typename T>
void transpose_rows(const T* in, int64_t rows, int64_t cols, double* out, int threads) {
  constexpr int64_t kTile = 32;
  const int64_t tiles = (rows + kTile - 1) / kTile;
#pragma omp parallel for num_threads(threads_for(threads, rows * cols)) schedule(static)
  for (int64_t t = 0; t < tiles; ++t) {
    const int64_t i0 = t * kTile, i1 = std::min(rows, i0 + kTile);
    for (int64_t j0 = 0; j0 < cols; j0 += kTile)
      for (int64_t i = i0; i < i1; ++i)
        for (int64_t j = j0; j < std::min(cols, j0 + kTile); ++j) out[j * rows + i] = static_cast<double>(in[i * cols + j]);
  }
}

// Y (n x c, backend memory) times M (c x r, host): a new n x r buffer, through predict.
template <typename T>
Buffer multiply(Context& ctx, LinearBackend<T>& backend, const T* Y, int64_t n, int64_t c, const Matrix& M) {
  const int64_t r = M.cols();
  Buffer out(ctx, static_cast<std::size_t>(std::max<int64_t>(n * r, 1)) * sizeof(T));
  const std::vector<T> coef = to_type<T>(M.transpose());  // r x c
  backend.predict(Y, n, c, coef.data(), nullptr, r, out.as<T>());
  return out;
}

// An orthonormal basis Q (n x r) of the columns of Y (n x c): r is Y's numerical rank.
// Pass 1: R of Householder QR (accurate for any conditioning), R = U S Vᵀ on the host, and
// Q₁ = Y V S⁻¹ over the directions with s > cutoff s_max; Q₁ is Q·U up to errors ~ eps s_max / s
// per column. Pass 2 (Cholesky QR through the eigen-decomposition of Q₁ᵀQ₁, which is near the
// identity) makes it orthonormal to working precision.
template <typename T>
Buffer orthonormalize(Context& ctx, LinearBackend<T>& backend, const T* Y, int64_t n, int64_t c, int64_t& r,
                      Trace* trace = nullptr) {
  auto mark = [&](const char* phase) {
    if (trace) trace->mark(phase);
  };
  r = 0;
  if (c == 0 || n == 0) return Buffer();
  const double eps = std::numeric_limits<T>::epsilon();
  Matrix R(c, c);
  {
    Buffer work(ctx, static_cast<std::size_t>(n * c) * sizeof(T));  // qr overwrites its input
    backend.center_scale(Y, n, c, nullptr, nullptr, work.as<T>());   // a plain copy
    if (n >= c) {
      backend.qr(work.as<T>(), nullptr, n, c, 0, R.data(), nullptr);
    } else {
      // Fewer rows than columns: the Gram matrix is small (c x c) and Y's rank is at most n.
      std::vector<double> G(static_cast<std::size_t>(c * c));
      backend.gram(Y, nullptr, n, c, 0, G.data(), nullptr);
      Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(Eigen::Map<const Matrix>(G.data(), c, c));
      const Vector lambda = es.eigenvalues().cwiseMax(0.0);
      R = (es.eigenvectors() * lambda.cwiseSqrt().asDiagonal()).transpose();  // RᵀR = G
    }
  }
  mark("  copy and R");
  Eigen::BDCSVD<Eigen::MatrixXd> svd(R, Eigen::ComputeFullV);  // Jacobi's for small c, faster past it
  const Vector& s = svd.singularValues();
  const double cutoff = 100.0 * static_cast<double>(c) * eps * (s.size() ? s[0] : 0.0);
  int64_t r1 = 0;
  while (r1 < s.size() && s[r1] > cutoff && s[r1] > 0) ++r1;
  if (r1 == 0) return Buffer();
  const Matrix M1 = svd.matrixV().leftCols(r1) * s.head(r1).cwiseInverse().asDiagonal();
  mark("  SVD of R (host)");
  Buffer Q1 = multiply(ctx, backend, Y, n, c, M1);
  mark("  Q1 = Y V / s");

  std::vector<double> G(static_cast<std::size_t>(r1 * r1));
  backend.gram(Q1.as<const T>(), nullptr, n, r1, 0, G.data(), nullptr);
  Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(Eigen::Map<const Matrix>(G.data(), r1, r1));
  GPUML_EXPECT(es.info() == Eigen::Success, "randomized SVD: the orthonormalization did not converge");
  mark("  Q1 gram and its eigen");
  const Vector lambda = es.eigenvalues();
  // Q₁ᵀQ₁ is within ~1e-2 of the identity by the cutoff above: its eigenvalues are near 1.
  int64_t keep_from = 0;
  while (keep_from < lambda.size() && !(lambda[keep_from] > 0.25)) ++keep_from;
  r = r1 - keep_from;
  if (r == 0) return Buffer();
  const Matrix M2 = es.eigenvectors().rightCols(r) * lambda.tail(r).cwiseSqrt().cwiseInverse().asDiagonal();
  return multiply(ctx, backend, Q1.as<const T>(), n, r1, M2);
}

// Rows that extend the orthonormal rows of V (k x d) to `total` orthonormal rows.
Matrix complete_rows(const Matrix& V, int64_t total) {
  const int64_t k = V.rows(), d = V.cols();
  // Householder QR of [Vᵀ | I]: its Q's first k columns span V's rows, the next ones complete them.
  Eigen::MatrixXd M(d, k + d);
  M.leftCols(k) = V.transpose();
  M.rightCols(d) = Eigen::MatrixXd::Identity(d, d);
  Eigen::HouseholderQR<Eigen::MatrixXd> qr(M);
  const Eigen::MatrixXd Q = qr.householderQ() * Eigen::MatrixXd::Identity(d, d);
  Matrix out(total, d);
  out.topRows(k) = V;
  for (int64_t i = k; i < total; ++i) out.row(i) = Q.col(i).transpose();
  return out;
}

}  // namespace

void svd_flip_rows(RightSvd& svd, int threads) {
  // Rows are independent: one per thread (a row is n_features long: up to millions).
#pragma omp parallel for num_threads(threads_for(threads, svd.count * svd.d)) schedule(static)
  for (int64_t i = 0; i < svd.count; ++i) {
    double* row = svd.Vt.data() + i * svd.d;
    int64_t arg = 0;
    for (int64_t j = 1; j < svd.d; ++j)
      if (std::abs(row[j]) > std::abs(row[arg])) arg = j;
    if (row[arg] < 0)
      for (int64_t j = 0; j < svd.d; ++j) row[j] = -row[j];
  }
}

void truncate_svd(RightSvd& svd, int64_t count) {
  if (count <= svd.count) {
    svd.s.resize(static_cast<std::size_t>(count));
    svd.Vt.resize(static_cast<std::size_t>(count * svd.d));
    svd.count = count;
    return;
  }
  const Matrix V = Eigen::Map<const Matrix>(svd.Vt.data(), svd.count, svd.d);
  const Matrix full = complete_rows(V, count);
  svd.Vt.assign(full.data(), full.data() + full.size());
  svd.s.resize(static_cast<std::size_t>(count), 0.0);
  svd.count = count;
}

template <typename T>
RightSvd exact_svd(Context& ctx, LinearBackend<T>& backend, T* A, int64_t n, int64_t d, bool rescalable) {
  RightSvd out;
  out.d = d;
  Matrix M;
  if (n >= d) {
    M.resize(d, d);
    backend.qr(A, nullptr, n, d, 0, M.data(), nullptr);
    // R's columns have A's norms: the QR squared them (overflow, or underflow: NaN or noise).
    const Matrix R = M.triangularView<Eigen::Upper>();
    if (rescalable && !squares_in_range<T>(R.colwise().squaredNorm().maxCoeff())) throw BadlyScaled{};
  } else {
    const HostArray h = to_host(ctx, make_view(A, dtype_of<T>::value, ctx.device(), n, d));
    using Rows = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
    M = Eigen::Map<const Rows>(h.as<T>(), n, d).template cast<double>();
  }
  Eigen::BDCSVD<Eigen::MatrixXd> svd(M, Eigen::ComputeThinV);
  GPUML_EXPECT(svd.info() == Eigen::Success, "SVD did not converge");
  out.count = svd.singularValues().size();
  out.s.assign(svd.singularValues().data(), svd.singularValues().data() + out.count);
  const Matrix Vt = svd.matrixV().transpose();
  out.Vt.assign(Vt.data(), Vt.data() + Vt.size());
  return out;
}

namespace {

// A dense A in the backend's memory, through the backend's products (which take the small side
// on the host: d x t blocks travel, as they did before the products moved to the backend).
template <typename T>
class DenseProducts final : public MatrixProducts<T> {
 public:
  DenseProducts(Context& ctx, LinearBackend<T>& backend, const T* A, int64_t n, int64_t d)
      : ctx_(ctx), backend_(backend), A_(A), n_(n), d_(d) {}
  void times(const T* B, int64_t t, T* out) override {
    const std::vector<T> columns = download(ctx_, B, d_ * t);  // d x t
    std::vector<T> rows(columns.size());                         // t x d, as predict takes it
    transpose_into(columns.data(), d_, t, rows.data());
    backend_.predict(A_, n_, d_, rows.data(), nullptr, t, out);
  }
  void transpose_times(const T* B, int64_t t, T* out) override {
    std::vector<double> cross(static_cast<std::size_t>(d_ * t));
    backend_.cross(A_, B, n_, d_, t, cross.data());
    const std::vector<T> rounded(cross.begin(), cross.end());
    copy_bytes(ctx_, out, ctx_.device(), rounded.data(), Device{}, rounded.size() * sizeof(T));
  }

 private:
  Context& ctx_;
  LinearBackend<T>& backend_;
  const T* A_;
  int64_t n_, d_;
};

// An orthonormal basis Qd (d x r, backend memory) of the columns of AᵀQ (Q: n x q), r its
// numerical rank; with R, also R = Qdᵀ AᵀQ (r x q), so that AᵀQ = Qd R.
template <typename T>
Buffer feature_basis(Context& ctx, LinearBackend<T>& backend, MatrixProducts<T>& A, const T* Q, int64_t d, int64_t q,
                     int64_t& r, Matrix* R = nullptr, Trace* trace = nullptr) {
  Buffer Z(ctx, static_cast<std::size_t>(std::max<int64_t>(d * q, 1)) * sizeof(T));
  A.transpose_times(Q, q, Z.as<T>());
  if (trace) trace->mark("  A transposed times Q");
  Buffer Qd = orthonormalize(ctx, backend, Z.as<const T>(), d, q, r, trace);
  if (R != nullptr && r > 0) {
    R->resize(r, q);
    backend.cross(Qd.as<const T>(), Z.as<const T>(), d, r, q, R->data());
  }
  return Qd;
}

}  // namespace

template <typename T>
RightSvd randomized_svd(Context& ctx, LinearBackend<T>& backend, MatrixProducts<T>& A, int64_t n, int64_t d,
                        int64_t count, int64_t n_oversamples, int64_t n_iter, uint64_t seed, double tolerance,
                        bool keep_projected) {
  // More test vectors than min(n, d) add nothing: that many already span A's range.
  // (Summed after the cap: no int64 overflow whatever n_oversamples is.)
  const int64_t columns = std::min(count + std::min(n_oversamples, std::min(n, d)), std::min(n, d));
  Trace trace(ctx, "randomized SVD");
  // The test matrix Ω (d x columns), standard normal draws made on the host threads.
  const std::vector<T> omega = gaussian_block<T>(seed, d, columns, ctx.n_threads());
  trace.mark("test matrix (host)");
  Buffer Y(ctx, static_cast<std::size_t>(std::max<int64_t>(n * columns, 1)) * sizeof(T));
  {
    const Buffer block = upload(ctx, omega.data(), d * columns);
    A.times(block.as<const T>(), columns, Y.as<T>());
  }
  trace.mark("A times the test matrix");
  int64_t c = columns, r = 0;
  Matrix leading;  // tolerance > 0: the previous iteration's `count` leading Ritz vectors (d x count)
  for (int64_t it = 0; it < n_iter; ++it) {
    Buffer Q = orthonormalize(ctx, backend, Y.as<const T>(), n, c, r, &trace);
    trace.mark("orthonormalize (rows)");
    if (r == 0) break;
    Matrix R;
    int64_t rd = 0;
    Buffer Qd = feature_basis(ctx, backend, A, Q.as<const T>(), d, r, rd, tolerance > 0 ? &R : nullptr, &trace);
    trace.mark("feature basis");
    if (rd == 0) break;
    Y = Buffer(ctx, static_cast<std::size_t>(n * rd) * sizeof(T));
    A.times(Qd.as<const T>(), rd, Y.as<T>());
    trace.mark("A times the basis");
    c = rd;
    if (tolerance > 0 && rd >= count) {
      // Run to convergence: the Ritz vectors of the `count` largest values (AᵀQ = Qd R, so
      // Qd times R's left singular vectors) stop moving: the sine of the largest principal angle
      // between this iteration's span and the last one's is at most `tolerance`.
      Eigen::BDCSVD<Eigen::MatrixXd> small(R, Eigen::ComputeThinU);
      const Matrix U = small.matrixU().leftCols(count);
      const Buffer ritz = multiply(ctx, backend, Qd.as<const T>(), d, rd, U);
      const std::vector<T> ritz_host = download(ctx, ritz.as<const T>(), d * count);
      const Matrix current = Eigen::Map<const Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(
                                 ritz_host.data(), d, count).template cast<double>();
      if (leading.size() > 0) {
        const Matrix residual = current - leading * (leading.transpose() * current);
        if (residual.colwise().norm().maxCoeff() <= tolerance) break;
      }
      leading = current;
    }
  }
  // The last half step lands on the feature side: Qd (d x r) an orthonormal basis of AᵀQ, whose
  // span holds the right singular vectors that the SVD of QᵀA would give; the SVD of A Qd then
  // picks them within it (A Qd = U S Wᵀ, V = Qd W). So A V = U S exactly: transform(X) has
  // orthogonal columns of norms s, as scikit-learn's U S, and A Qd Qdᵀ approximates A at least as
  // well as Q Qᵀ A.
  RightSvd out;
  out.d = d;
  Buffer Q = orthonormalize(ctx, backend, Y.as<const T>(), n, c, r);
  int64_t rd = 0;
  Buffer Qd;
  if (r > 0) Qd = feature_basis(ctx, backend, A, Q.as<const T>(), d, r, rd);
  if (rd > 0) {
    Buffer B(ctx, static_cast<std::size_t>(n * rd) * sizeof(T));
    A.times(Qd.as<const T>(), rd, B.as<T>());                    // A Qd (n x rd)
    trace.mark("last basis and product");
    Buffer B_kept;  // keep_projected: B, which exact_svd overwrites
    if (keep_projected) {
      B_kept = Buffer(ctx, static_cast<std::size_t>(n * rd) * sizeof(T));
      backend.center_scale(B.as<const T>(), n, rd, nullptr, nullptr, B_kept.as<T>());  // a plain copy
    }
    RightSvd small = exact_svd(ctx, backend, B.as<T>(), n, rd);  // s and Wᵀ (min(n, rd) x rd)
    trace.mark("small SVD");
    // Only the vectors kept: the oversampled ones would be truncated below (d x them is large).
    out.count = std::min(count, small.count);
    out.s.assign(small.s.begin(), small.s.begin() + out.count);
    const Matrix W = Eigen::Map<const Matrix>(small.Vt.data(), small.count, rd).transpose().leftCols(out.count);
    const Buffer V = multiply(ctx, backend, Qd.as<const T>(), d, rd, W);  // Qd W (d x count)
    if (keep_projected) {
      out.projected_cols = out.count;
      out.projected = multiply(ctx, backend, B_kept.as<const T>(), n, rd, W);  // A V = B W
    }
    const std::vector<T> V_host = download(ctx, V.as<const T>(), d * out.count);
    out.Vt.resize(static_cast<std::size_t>(out.count * d));
    transpose_rows(V_host.data(), d, out.count, out.Vt.data(), ctx.n_threads());
    trace.mark("right vectors");
  }
  truncate_svd(out, count);
  return out;
}

template <typename T>
RightSvd randomized_svd(Context& ctx, LinearBackend<T>& backend, const T* A, int64_t n, int64_t d, int64_t count,
                        int64_t n_oversamples, int64_t n_iter, uint64_t seed) {
  DenseProducts<T> products(ctx, backend, A, n, d);
  return randomized_svd(ctx, backend, products, n, d, count, n_oversamples, n_iter, seed, 0.0);
}

template <typename T>
RightSvd converged_svd(Context& ctx, LinearBackend<T>& backend, MatrixProducts<T>& A, int64_t n, int64_t d,
                       int64_t count, uint64_t seed, double tol) {
  const double tolerance = tol > 0 ? tol : 1e-2 * std::sqrt(std::numeric_limits<T>::epsilon());
  // tol = 0 (ARPACK's "machine precision") on small problems: a block spanning the whole space
  // (min(n, d) vectors) costs about a dense SVD (n min(n, d)² <= 2^32 flops) and is exact at
  // once. One power iteration then replaces the random block by an orthonormal basis of A's row
  // space.
  const double width = static_cast<double>(std::min(n, d));
  if (!(tol > 0) && static_cast<double>(n) * width * width <= 4294967296.0)
    return randomized_svd(ctx, backend, A, n, d, count, std::min(n, d), 1, seed, 0.0);
  return randomized_svd(ctx, backend, A, n, d, count, count + 10, 10000, seed, tolerance);
}

template <typename T>
CenteredProducts<T>::CenteredProducts(Context& ctx, LinearBackend<T>& backend, MatrixProducts<T>& A, int64_t n,
                                      std::vector<double> mean)
    : ctx_(ctx), backend_(backend), A_(A), n_(n), mean_(std::move(mean)) {
  const std::vector<T> rounded(mean_.begin(), mean_.end());
  mean_block_ = upload(ctx_, rounded.data(), static_cast<int64_t>(rounded.size()));
}

template <typename T>
void CenteredProducts<T>::times(const T* B, int64_t t, T* out) {
  A_.times(B, t, out);
  const int64_t d = static_cast<int64_t>(mean_.size());
  std::vector<double> shift(static_cast<std::size_t>(t), 0.0);  // Bᵀ μ
  backend_.cross(B, mean_block_.as<const T>(), d, t, 1, shift.data());
  backend_.center_scale(out, n_, t, shift.data(), nullptr, out);  // in place
}

template <typename T>
void CenteredProducts<T>::transpose_times(const T* B, int64_t t, T* out) {
  if (n_ == 0 || t == 0) return A_.transpose_times(B, t, out);
  // (A − 1μᵀ)ᵀB = Aᵀ(B − 1 mᵀ) for m = B's column means, since Aᵀ1 = n μ.
  std::vector<double> means(static_cast<std::size_t>(t));
  backend_.weighted_means(B, n_, t, nullptr, means.data());
  if (centered_.bytes() < static_cast<std::size_t>(n_ * t) * sizeof(T))
    centered_ = Buffer(ctx_, static_cast<std::size_t>(n_ * t) * sizeof(T));
  backend_.center_scale(B, n_, t, means.data(), nullptr, centered_.as<T>());
  A_.transpose_times(centered_.as<const T>(), t, out);
}

template <typename T>
double squared_norm(LinearBackend<T>& backend, const T* A, int64_t n, int64_t d) {
  const int64_t total = n * d;
  if (total == 0) return 0.0;
  const int64_t cols = std::gcd(total, int64_t{32});
  std::vector<double> G(static_cast<std::size_t>(cols * cols));
  backend.gram(A, nullptr, total / cols, cols, 0, G.data(), nullptr);
  double sum = 0.0;
  for (int64_t j = 0; j < cols; ++j) sum += G[j * cols + j];
  return sum;
}

void apply_linear_map(Context& ctx, const ArrayView& X, DType dtype, const std::vector<double>& coef, int64_t t,
                      int64_t width, const std::vector<double>& center, const std::vector<double>& intercept,
                      const ArrayView& out, const std::string& estimator, const char* width_name) {
  check_matrix_shape(X);
  GPUML_EXPECT(X.shape[1] == width, "X has " + std::to_string(X.shape[1]) + " features, but " + estimator +
                                        " is expecting " + std::to_string(width) + " " + width_name + " as input");
  const int64_t n = X.shape[0];
  Staged staged = stage(ctx, X, dtype, "X");
  require_finite(ctx, staged.view, "X");
  with_float_type(dtype, [&](auto tag) {
    using T = decltype(tag);
    auto backend = make_linear_backend<T>(ctx);
    const T* input = staged.view.as<const T>();
    Buffer centered;
    if (!center.empty()) {
      // Centering first, in double, then rounding: no cancellation in T when the mean is large.
      centered = Buffer(ctx, static_cast<std::size_t>(n * width) * sizeof(T));
      backend->center_scale(input, n, width, center.data(), nullptr, centered.as<T>());
      input = centered.as<const T>();
    }
    std::vector<T> coef_t(coef.begin(), coef.end()), intercept_t(intercept.begin(), intercept.end());
    Buffer result(ctx, static_cast<std::size_t>(std::max<int64_t>(n * t, 1)) * sizeof(T));
    backend->predict(input, n, width, coef_t.data(), intercept.empty() ? nullptr : intercept_t.data(), t, result.as<T>());
    write_output(ctx, make_view(result.data(), dtype, ctx.device(), n, t), out, "transformed X");
  });
}

void expect_finite_in(DType dtype, std::initializer_list<const std::vector<double>*> vectors,
                      std::initializer_list<double> scalars, const std::string& message) {
  with_float_type(dtype, [&](auto tag) {
    using T = decltype(tag);
    const auto finite = [](double v) { return std::isfinite(static_cast<T>(v)); };
    bool ok = std::all_of(scalars.begin(), scalars.end(), finite);
    for (const std::vector<double>* v : vectors) ok = ok && std::all_of(v->begin(), v->end(), finite);
    GPUML_EXPECT(ok, message);
  });
}

HostArray host_array(DType dtype, const std::vector<double>& values) {
  HostArray a(dtype, static_cast<int64_t>(values.size()));
  with_float_type(dtype, [&](auto tag) { std::copy(values.begin(), values.end(), a.as<decltype(tag)>()); });
  return a;
}

HostArray host_array(DType dtype, const std::vector<double>& values, int64_t rows, int64_t cols) {
  HostArray a(dtype, rows, cols);
  with_float_type(dtype, [&](auto tag) { std::copy(values.begin(), values.end(), a.as<decltype(tag)>()); });
  return a;
}

HostArray host_scalar(DType dtype, double value) {
  HostArray a = HostArray::scalar(dtype);
  with_float_type(dtype, [&](auto tag) { *a.as<decltype(tag)>() = static_cast<decltype(tag)>(value); });
  return a;
}

HostArray host_int64(int64_t value) {
  HostArray a = HostArray::scalar(DType::int64);
  *a.as<int64_t>() = value;
  return a;
}

std::vector<double> host_values(const HostArray& a) {
  return with_float_type(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* p = a.as<const T>();
    return std::vector<double>(p, p + a.bytes() / sizeof(T));
  });
}

DType check_restored(const std::map<std::string, HostArray>& attributes, const std::vector<AttributeShape>& shapes,
                     const std::string& kind) {
  const std::string where = kind + " model: ";
  for (const auto& entry : attributes)
    GPUML_EXPECT(std::any_of(shapes.begin(), shapes.end(), [&](const AttributeShape& s) { return s.name == entry.first; }),
                 where + "unknown attribute '" + entry.first + "'");
  const auto first = attributes.find(shapes.front().name);
  GPUML_EXPECT(first != attributes.end() && !first->second.empty() && is_floating(first->second.dtype()),
               where + "attribute '" + shapes.front().name + "' is missing or not float32/float64");
  const DType dtype = first->second.dtype();
  for (const AttributeShape& shape : shapes) {
    GPUML_EXPECT(attributes.count(shape.name) && !attributes.at(shape.name).empty(),
                 where + "attribute '" + shape.name + "' is missing");
    const HostArray& a = attributes.at(shape.name);
    const ArraySpec& spec = a.spec();
    if (shape.ndim < 0) {
      GPUML_EXPECT(a.dtype() == DType::int64 && spec.ndim == 0 && *a.as<const int64_t>() >= 0,
                   where + shape.name + " must be a non-negative int64 scalar");
      continue;
    }
    bool ok = a.dtype() == dtype && spec.ndim == shape.ndim;
    if (ok && shape.ndim >= 1) ok = spec.shape[0] == shape.rows;
    if (ok && shape.ndim == 2) ok = spec.shape[1] == shape.cols;
    GPUML_EXPECT(ok, where + shape.name + " must be a " + std::to_string(shape.ndim) + "-d array of " +
                         dtype_name(dtype) + " with the shape the other attributes imply");
    const std::vector<double> values = host_values(a);
    GPUML_EXPECT(std::all_of(values.begin(), values.end(), [](double v) { return std::isfinite(v); }),
                 where + shape.name + " contains NaN or infinity");
  }
  return dtype;
}

template RightSvd exact_svd<float>(Context&, LinearBackend<float>&, float*, int64_t, int64_t, bool);
template RightSvd exact_svd<double>(Context&, LinearBackend<double>&, double*, int64_t, int64_t, bool);
template RightSvd randomized_svd<float>(Context&, LinearBackend<float>&, const float*, int64_t, int64_t, int64_t, int64_t,
                                        int64_t, uint64_t);
template RightSvd randomized_svd<double>(Context&, LinearBackend<double>&, const double*, int64_t, int64_t, int64_t,
                                         int64_t, int64_t, uint64_t);
template RightSvd randomized_svd<float>(Context&, LinearBackend<float>&, MatrixProducts<float>&, int64_t, int64_t,
                                        int64_t, int64_t, int64_t, uint64_t, double, bool);
template RightSvd randomized_svd<double>(Context&, LinearBackend<double>&, MatrixProducts<double>&, int64_t, int64_t,
                                         int64_t, int64_t, int64_t, uint64_t, double, bool);
template RightSvd converged_svd<float>(Context&, LinearBackend<float>&, MatrixProducts<float>&, int64_t, int64_t,
                                       int64_t, uint64_t, double);
template RightSvd converged_svd<double>(Context&, LinearBackend<double>&, MatrixProducts<double>&, int64_t, int64_t,
                                        int64_t, uint64_t, double);
template class CenteredProducts<float>;
template class CenteredProducts<double>;
template double squared_norm<float>(LinearBackend<float>&, const float*, int64_t, int64_t);
template double squared_norm<double>(LinearBackend<double>&, const double*, int64_t, int64_t);

}  // namespace gpuml::detail

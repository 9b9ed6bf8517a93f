// The least-squares driver: everything but the heavy primitives, written once for every backend.
//
// With weights w and fit_intercept, the problem is that of scikit-learn: x̄ = Σ w x / Σ w,
// ȳ likewise, A = √w (X − x̄), B = √w (y − ȳ); coef minimizes |A b − B|² (+ alpha |b|²) and
// intercept = ȳ − x̄·coef. A and B are working copies in the backend's memory; only the small
// m x m and m x t results come to the host, where Eigen solves them in double.
//
// Distributed (SPMD, the context's communicator): every rank holds its own rows, and the fit is
// that of one process on all rows. The Gram routes (eig, Cholesky, the Gram system of coordinate
// descent) center each rank's rows on that rank's means and merge the ranks' centered sums as in
// a parallel variance: with W_r, x̄_r, ȳ_r the rank's weight and means and x̄, ȳ those of all rows,
//   AᵀA = Σ_r [A_rᵀA_r + W_r (x̄_r − x̄)(x̄_r − x̄)ᵀ],  AᵀB = Σ_r [A_rᵀB_r + (x̄_r − x̄)(W_r (ȳ_r − ȳ) + s_r)ᵀ]
// with s_r = Σ w (y − ȳ_r) on the rank, zero but for rounding (merge_centered_over_ranks); no
// uncentered sums, so nothing cancels. The routes that factor A (QR, SVD) center every rank's
// rows on the means of all rows; "qr"'s Cholesky QR passes sum their Gram matrices over ranks, and
// Householder QR is TSQR: each rank's R factor and QᵀB (or its rows, when it has fewer than d)
// are gathered in rank order and factored again on every rank; the minimum-norm SVD with fewer
// rows than features (n < d over all ranks) gathers the rows themselves (n x d, smaller than
// the Gram matrix). The small solves are replicated: every rank holds the same bits and takes the
// same decisions (those that lead to collectives are rank 0's, broadcast). With the local
// communicator (1 rank) every collective is the identity and each rank's share is 1: the fit
// is what it always was.
//
// Parallel Eigen products are off in every translation unit of the library that uses Eigen: the
// host solves are small, the CPU backend threads its own loops, and all units must agree.
#define EIGEN_DONT_PARALLELIZE
#include "linear_model/least_squares.hpp"

#include <Eigen/Dense>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>
#include <type_traits>

#include "core/distributed.hpp"
#include "core/sparse_backend.hpp"
#include "core/staging.hpp"
#include "core/trace.hpp"
#include "gpuml/core/error.hpp"
#include "linear_model/nonnegative_quadratic.hpp"

namespace gpuml::detail {

template <typename T>
std::unique_ptr<LinearBackend<T>> make_linear_backend(const Context& ctx) {
  return ctx.is_cuda() ? make_linear_cuda_backend<T>(ctx) : make_linear_cpu_backend<T>(ctx);
}
template std::unique_ptr<LinearBackend<float>> make_linear_backend<float>(const Context&);
template std::unique_ptr<LinearBackend<double>> make_linear_backend<double>(const Context&);

namespace {

using Matrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using Vector = Eigen::VectorXd;


HostArray scalar_i64(int64_t v) {
  HostArray a = HostArray::scalar(DType::int64);
  *a.as<int64_t>() = v;
  return a;
}

std::string rank_deficient(const LeastSquaresRequest& r, const char* algorithm, int64_t rank, int64_t d) {
  return std::string(r.estimator) + ": X is rank deficient (rank " + std::to_string(rank) + " < " + std::to_string(d) +
         " features, after centering when fit_intercept) and algorithm=\"" + algorithm +
         "\" needs full rank: use algorithm=\"svd\" (the minimum-norm solution)";
}

// The solution on the host: coef (t x d), the numerical rank and the singular values of A
// (descending, min(n, d) of them).
struct HostSolution {
  Matrix coef;
  int64_t rank = 0;
  std::vector<double> singular_values;
  // Set instead of singular_values when the solve did not need them: computes them later.
  std::function<std::vector<double>()> singular_values_later;
  bool converged = true;  // false when an iterative solve (nonnegative) stopped at max_iter
};

// Solves from an eigen-decomposition of G = AᵀA: coef_k = V diag(f(λ)) Vᵀ C_k with
// f = 1 / (λ + alpha_k), and with alpha_k = 0, f = 0 below the rank cutoff (pseudo-inverse).
Matrix spectral_solve(const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>& es, const Matrix& C,
                      const std::vector<double>& alpha, double lambda_cutoff) {
  const Eigen::MatrixXd& V = es.eigenvectors();
  const Vector lambda = es.eigenvalues().cwiseMax(0.0);
  const Eigen::MatrixXd VtC = V.transpose() * C;  // d x t
  Matrix coef(C.cols(), C.rows());
  for (Eigen::Index k = 0; k < C.cols(); ++k) {
    const double a = alpha.empty() ? 0.0 : alpha[alpha.size() == 1 ? 0 : k];
    Vector scaled = VtC.col(k);
    for (Eigen::Index i = 0; i < scaled.size(); ++i)
      scaled[i] = (a > 0 || lambda[i] > lambda_cutoff) ? scaled[i] / (lambda[i] + a) : 0.0;
    coef.row(k) = (V * scaled).transpose();
  }
  return coef;
}

// Solves from the SVD of R (A = Q R = Q U S Vᵀ): coef_k = V diag(g(s)) Uᵀ QᵀB_k with
// g = s / (s² + alpha_k), and with alpha_k = 0, g = 1/s above the cutoff and 0 below.
template <typename Svd>
Matrix svd_solve(const Svd& svd, const Matrix& QtB, const std::vector<double>& alpha, double s_cutoff) {
  const Vector& s = svd.singularValues();
  const Eigen::MatrixXd UtB = svd.matrixU().transpose() * QtB;
  Matrix coef(QtB.cols(), svd.matrixV().rows());  // t x d
  for (Eigen::Index k = 0; k < QtB.cols(); ++k) {
    const double a = alpha.empty() ? 0.0 : alpha[alpha.size() == 1 ? 0 : k];
    Vector scaled = UtB.col(k);
    for (Eigen::Index i = 0; i < s.size(); ++i)
      scaled[i] = (a > 0 || s[i] > s_cutoff) ? scaled[i] * s[i] / (s[i] * s[i] + a) : 0.0;
    coef.row(k) = (svd.matrixV() * scaled).transpose();
  }
  return coef;
}

// A Cholesky factorization M = Uᵀ U from the backend (CholeskyQR keeps the factors).
struct CholeskyFactor {
  bool ok = false;
  Matrix U;  // M = Uᵀ U; only the upper triangle is meaningful (LinearBackend::cholesky)
};

// Overflow of the squares shows as infinity in G. Σ 0·v is NaN exactly when some v is NaN or
// infinite; eight independent sums let the compiler vectorize the pass (one dependent chain of
// 65536 additions took ~0.1 ms at d = 256).
void expect_finite_gram(const std::vector<double>& G, const std::string& estimator) {
  constexpr std::size_t kLanes = 8;
  double probe[kLanes] = {};
  const std::size_t full = G.size() / kLanes * kLanes;
  for (std::size_t i = 0; i < full; i += kLanes)
    for (std::size_t l = 0; l < kLanes; ++l) probe[l] += 0.0 * G[i + l];
  for (std::size_t i = full; i < G.size(); ++i) probe[0] += 0.0 * G[i];
  double total = 0.0;
  for (double p : probe) total += p;
  GPUML_EXPECT(total == 0.0, estimator + ": XᵀX overflows: X has values too large to square in its dtype");
}

bool host_all_finite(const HostArray& a) {
  return with_float_type(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* p = a.as<const T>();
    return std::all_of(p, p + a.bytes() / sizeof(T), [](T v) { return std::isfinite(v); });
  });
}

void expect_finite_sums(const std::vector<double>& sums) {
  GPUML_EXPECT(std::all_of(sums.begin(), sums.end(), [](double v) { return std::isfinite(v); }),
               "X contains NaN or infinity");
}

}  // namespace

double largest_diagonal(const std::vector<double>& M, int64_t d) {
  double top = 0.0;
  for (int64_t j = 0; j < d; ++j) {
    const double v = M[static_cast<std::size_t>(j * d + j)];
    if (!(v <= top)) top = v;  // NaN sticks
  }
  return top;
}

template <typename T>
void check_gram_scale(const std::vector<double>& G, int64_t d, bool rescalable, const std::string& estimator) {
  if (rescalable && !squares_in_range<T>(largest_diagonal(G, d))) throw BadlyScaled{};
  expect_finite_gram(G, estimator);
}
template void check_gram_scale<float>(const std::vector<double>&, int64_t, bool, const std::string&);
template void check_gram_scale<double>(const std::vector<double>&, int64_t, bool, const std::string&);

namespace {

template <typename T>
class LeastSquares {
 public:
  // rows: this rank's (in rank order, rows.rows[comm.rank()]); weight_sum: Σ w over this rank's
  // rows (its row count without weights).
  LeastSquares(Context& ctx, const LeastSquaresRequest& request, const RowCounts& rows, int64_t d, int64_t t,
               double weight_sum, Trace& trace, bool rescalable)
      : ctx_(ctx), request_(request), trace_(trace), backend_(make_linear_backend<T>(ctx)), comm_(ctx.comm()),
        row_counts_(rows), rows_(rows.rows[static_cast<std::size_t>(ctx.comm().rank())]), n_(rows.total), d_(d), t_(t),
        weight_sum_(weight_sum),
        // The rank cutoff: singular values below rcond * s_max are zero, with rcond = eps * max(n,
        // d) (NumPy's lstsq rule: margin over the rounding of s, which grows with the sums over
        // rows) but at most sqrt(eps). Uncapped, it passed 1 past 1 / eps rows (8.4M in
        // float32) and called every X rank 0; scikit-learn's own cutoff (scipy's lstsq) is eps.
        rcond_(std::min(std::numeric_limits<T>::epsilon() * static_cast<double>(std::max(n_, d)),
                        std::sqrt(static_cast<double>(std::numeric_limits<T>::epsilon())))),
        rescalable_(rescalable), svd_cutoff_(std::max(rcond_, request.lstsq_cond)) {}

  // Σ w over all ranks, once prepared.
  double total_weight() const { return total_weight_; }

  // Centers and weights y into the working copy B = √w (y − ȳ) (its means first: t columns), and
  // then X:
  //  - the routes that factor A itself (QR, SVD): the working copy A = √w (X − x̄), the means
  //    first;
  //  - gram_only (the Gram routes: eig, Cholesky, the Gram system of coordinate descent): no copy
  //    of A; G and C from one pass over X (centered_gram).
  // NaN or infinity in X shows in the column sums of that pass (no separate check of X).
  void prepare(const T* X, const T* y, const T* w, bool gram_only) {
    X_ = X, y_ = y, w_ = w;  // kept for a second, exact preparation (fallbacks to QR or SVD)
    gram_only_ = gram_only;
    x_mean_.assign(static_cast<std::size_t>(d_), 0.0);
    y_mean_.assign(static_cast<std::size_t>(t_), 0.0);
    y_offset_.assign(static_cast<std::size_t>(t_), 0.0);
    G_.clear();
    C_.clear();
    A_ = Buffer();
    B_ = Buffer(ctx_, static_cast<std::size_t>(rows_ * t_) * sizeof(T));
    const std::string estimator = request_.estimator;
    if (gram_only_) {
      // This rank's rows centered on this rank's means; merged over the ranks below.
      CenteredGram g;
      check_on_every_rank(comm_, estimator, "the pass over X and y", [&] {
        local_y_means(y, w);
        // Over several ranks, with the sums Σ w (y − ȳ_r) of the centered y, which rounding leaves
        // nonzero: the merge needs them (merge_centered_over_ranks).
        y_sums_.assign(static_cast<std::size_t>(t_ + 1), 0.0);
        backend_->center_scale(y, rows_, t_, request_.fit_intercept ? y_mean_.data() : nullptr, w, B_.as<T>(),
                               comm_.size() > 1 ? y_sums_.data() : nullptr);
        y_sums_.resize(static_cast<std::size_t>(t_));
        trace_.mark("means and centering of y");
        g = centered_gram(*backend_, X, rows_, d_, w, B_.as<const T>(), t_, request_.fit_intercept, estimator);
      });
      G_ = std::move(g.gram);
      C_ = std::move(g.cross);
      if (request_.fit_intercept) x_mean_ = std::move(g.mean);
      merge_over_ranks();
      trace_.mark("sums and gram of X");
      return;
    }
    // The routes that factor A: every rank's rows centered on the means of all rows.
    check_on_every_rank(comm_, estimator, "the means of X and y", [&] {
      local_y_means(y, w);
      if (request_.fit_intercept) {
        backend_->weighted_means(X, rows_, d_, w, x_mean_.data());
        expect_finite_sums(x_mean_);
      }
    });
    std::vector<double> x_offset(static_cast<std::size_t>(d_));
    global_means(x_offset, y_offset_);
    std::fill(y_offset_.begin(), y_offset_.end(), 0.0);  // B is centered on ȳ itself
    y_sums_.assign(static_cast<std::size_t>(t_), 0.0);
    A_ = Buffer(ctx_, static_cast<std::size_t>(rows_ * d_) * sizeof(T));
    check_on_every_rank(comm_, estimator, "centering X", [&] {
      backend_->center_scale(y, rows_, t_, request_.fit_intercept ? y_mean_.data() : nullptr, w, B_.as<T>());
      std::vector<double> sums(static_cast<std::size_t>(d_ + 1));
      backend_->center_scale(X, rows_, d_, request_.fit_intercept ? x_mean_.data() : nullptr, w, A_.as<T>(), sums.data());
      expect_finite_sums(sums);
    });
    trace_.mark("means, center and sums");
  }

  // Sparse X (one rank): the Gram system formed by the caller from sparse products, centered on
  // the means of all rows; the minimum-norm routes then use G's eigen-decomposition (by_svd).
  void adopt_gram(std::vector<double> G, std::vector<double> C, std::vector<double> x_mean,
                  std::vector<double> y_mean, double total_weight) {
    G_ = std::move(G);
    C_ = std::move(C);
    x_mean_ = std::move(x_mean);
    y_mean_ = std::move(y_mean);
    y_offset_.assign(static_cast<std::size_t>(t_), 0.0);
    total_weight_ = total_weight;
    gram_only_ = from_gram_ = true;
    check_gram_scale<T>(G_, d_, false, request_.estimator);  // no rescaled refit for sparse X: overflow is named
  }

  // y_mean_ = the weighted means of this rank's y (zeros without intercept).
  void local_y_means(const T* y, const T* w) {
    if (!request_.fit_intercept) return;
    backend_->weighted_means(y, rows_, t_, w, y_mean_.data());
    GPUML_EXPECT(std::all_of(y_mean_.begin(), y_mean_.end(), [](double v) { return std::isfinite(v); }),
                 "y contains NaN or infinity");
  }

  // x_mean_ and y_mean_ from this rank's means to those of all rows (merge_centered_over_ranks);
  // x_offset and y_offset get this rank's means minus those of all rows.
  void global_means(std::vector<double>& x_offset, std::vector<double>& y_offset) {
    MergedSums m = merge_centered_over_ranks(comm_, weight_sum_, x_mean_, y_mean_, nullptr, nullptr);
    total_weight_ = m.total_weight;
    x_offset = std::move(m.x_offset);
    y_offset = std::move(m.y_offset);
  }

  // G_, C_ (this rank's, centered on its own means) to those of all rows, centered on the means
  // of all rows: the parallel-variance merge (top of the file).
  void merge_over_ranks() {
    MergedSums m = merge_centered_over_ranks(comm_, weight_sum_, x_mean_, y_mean_, &G_, &C_, &y_sums_);
    total_weight_ = m.total_weight;
    y_offset_ = std::move(m.y_offset);
    check_gram_scale<T>(G_, d_, rescalable_, request_.estimator);
  }

  // The local rows of a working copy (rows_ x cols) as a host matrix of all ranks' rows, in rank order.
  Matrix gather_rows(const Matrix& local) const {
    if (comm_.size() == 1) return local;
    const int64_t cols = local.cols();
    std::vector<int64_t> counts;
    for (int64_t r : row_counts_.rows) counts.push_back(r * cols);
    Matrix all(n_, cols);
    comm_.allgatherv(local.data(), rows_ * cols, all.data(), counts.data(), DType::float64);
    return all;
  }

  // The Gram system of coordinate descent: G = AᵀA, C = AᵀB, |B_k|² and the means.
  void fill_gram_system(GramSystem& sys) {
    compute_gram();
    sys.gram = G_;
    sys.cross = C_;
    std::vector<double> yty(static_cast<std::size_t>(t_ * t_)), unused(static_cast<std::size_t>(t_ * t_));
    backend_->gram(B_.as<const T>(), B_.as<const T>(), rows_, t_, t_, yty.data(), unused.data());
    sys.y_sq_norm.resize(static_cast<std::size_t>(t_));
    // |B_k|² over all ranks: Σ w (y − ȳ)² = Σ w (y − ȳ_r)² + 2 (ȳ_r − ȳ) Σ w (y − ȳ_r) + W_r (ȳ_r − ȳ)²
    // on each rank, summed (one rank: no offset, the first term alone).
    for (int64_t k = 0; k < t_; ++k) {
      const double dy = y_offset_[k];
      sys.y_sq_norm[k] = yty[k * t_ + k];
      if (dy != 0.0) sys.y_sq_norm[k] += dy * (2.0 * y_sums_[k] + weight_sum_ * dy);
    }
    comm_.allreduce_sum(sys.y_sq_norm.data(), t_);
    sys.x_mean = x_mean_;
    sys.y_mean = y_mean_;
  }

  HostSolution solve() {
    switch (request_.solver) {
      case LeastSquaresSolver::auto_eig: return by_eig(true);
      case LeastSquaresSolver::eig: return by_eig(false);
      case LeastSquaresSolver::qr: return by_qr();
      case LeastSquaresSolver::svd:
      case LeastSquaresSolver::ridge_svd: return by_svd();
      case LeastSquaresSolver::cholesky: return by_cholesky();
      case LeastSquaresSolver::nonnegative: return by_nonnegative();
    }
    throw_error(ErrorCode::internal, "unknown least-squares solver");
  }

  // intercept_k = ȳ_k − x̄·coef_k (0 without intercept).
  std::vector<double> intercept(const Matrix& coef) const {
    std::vector<double> out(static_cast<std::size_t>(t_), 0.0);
    if (!request_.fit_intercept) return out;
    for (int64_t k = 0; k < t_; ++k) {
      double dot = 0.0;
      for (int64_t j = 0; j < d_; ++j) dot += x_mean_[j] * coef(k, j);
      out[k] = y_mean_[k] - dot;
    }
    return out;
  }

 private:
  void compute_gram() {
    if (!G_.empty()) return;
    G_.assign(static_cast<std::size_t>(d_ * d_), 0.0);
    C_.assign(static_cast<std::size_t>(d_ * t_), 0.0);
    backend_->gram(A_.as<const T>(), B_.as<const T>(), rows_, d_, t_, G_.data(), C_.data());
    // A is centered on the means of all rows: the sums over ranks are AᵀA and AᵀB.
    comm_.allreduce_sum(G_.data(), d_ * d_);
    comm_.allreduce_sum(C_.data(), d_ * t_);
    check_gram_scale<T>(G_, d_, rescalable_, request_.estimator);
    trace_.mark("gram");
  }

  // An exactly centered A for the routes that factor A itself (after a gram-only preparation).
  void require_exact_centering() {
    if (!gram_only_) return;
    prepare(X_, y_, w_, false);
  }

  // G as an Eigen (column-major) matrix. G_ is symmetric, so its row-major array is also its
  // column-major one: a straight copy (the transposing copy took ~130 us at 256 x 256).
  Eigen::MatrixXd gram_matrix() const { return Eigen::Map<const Eigen::MatrixXd>(G_.data(), d_, d_); }
  Matrix cross_matrix() const { return Eigen::Map<const Matrix>(C_.data(), d_, t_); }

  // Singular values of A from G's eigenvalues (ascending): descending square roots, `count` of them.
  static std::vector<double> singular_values_from(const Vector& lambda, int64_t count) {
    std::vector<double> s;
    for (Eigen::Index i = lambda.size() - 1; i >= 0 && static_cast<int64_t>(s.size()) < count; --i)
      s.push_back(std::sqrt(std::max(lambda[i], 0.0)));
    return s;
  }
  std::vector<double> singular_values_from(const Vector& lambda) const {
    return singular_values_from(lambda, std::min(n_, d_));
  }

  // Numerical rank: singular values above cutoff * s_max count.
  static int64_t rank_of(const std::vector<double>& s, double cutoff) {
    if (s.empty() || s.front() <= 0) return 0;
    return std::count_if(s.begin(), s.end(), [&](double v) { return v > cutoff * s.front(); });
  }
  // The cutoff on s = sqrt(λ) when the singular values come from G = AᵀA: G's eigenvalues are
  // only known to about eps * λ_max, so the lstsq cutoff rcond applies to λ, i.e. sqrt(rcond) on s.
  double gram_cutoff() const { return std::sqrt(rcond_); }

  // Eigenvalues of a symmetric matrix, ascending, without eigenvectors: at d = 256 about a
  // quarter of the time of the decomposition with vectors (measured: 3.5 ms against 12 ms).
  // Returns false (no exception: it also runs inside an OpenMP section) when they do not converge.
  static bool eigenvalues_of(const Eigen::MatrixXd& S, Vector& lambda) {
    Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(S, Eigen::EigenvaluesOnly);
    if (es.info() != Eigen::Success) return false;
    lambda = es.eigenvalues();
    return true;
  }
  void expect_eigenvalues(bool converged) const {
    GPUML_EXPECT(converged, std::string(request_.estimator) + ": the eigenvalues of XᵀX did not converge");
  }

  // The two things by_eig decides from G's eigenvalues: the rank (λ_min / λ_max above
  // gram_cutoff()², i.e. rcond_) and, for "auto", whether the normal equations are accurate
  // (λ_min / λ_max above eps / wanted). Both hold when cond(G) < limit.
  double eig_condition_limit(bool fall_back) const {
    const double wanted = std::is_same_v<T, double> ? 1e-4 : 1e-2;
    const double rank_limit = 1.0 / rcond_;
    if (!fall_back) return rank_limit;
    // "auto" also leaves for the SVD when a singular value may fall below lstsq_cond * s_max.
    const double cond_limit = request_.lstsq_cond > 0 ? 1.0 / (request_.lstsq_cond * request_.lstsq_cond) : rank_limit;
    return std::min({rank_limit, cond_limit, wanted / std::numeric_limits<T>::epsilon()});
  }

  // The Cholesky factorization of a symmetric d x d matrix by the backend (on the device for CUDA).
  bool factor(const Eigen::MatrixXd& M, CholeskyFactor& f) const {
    f.U.resize(M.rows(), M.cols());
    f.ok = backend_->cholesky(M.data(), M.rows(), f.U.data());  // M symmetric: either layout
    return f.ok;
  }
  // Z = M⁻¹ R and the diagonal of M's Cholesky factor, by the backend (on the device for CUDA,
  // which then returns only these).
  struct CholeskySolve {
    bool ok = false;
    Matrix Z;         // d x t
    Vector diagonal;  // of U, M = Uᵀ U
  };
  bool cholesky_solve(const Eigen::Ref<const Eigen::MatrixXd>& M, const Matrix& R, CholeskySolve& s) const {
    s.Z.resize(M.rows(), R.cols());
    s.diagonal.resize(M.rows());
    s.ok = backend_->cholesky_solve(M.data(), M.rows(), R.data(), R.cols(), s.Z.data(), s.diagonal.data());  // M symmetric
    return s.ok;
  }
  // Whether M has a Cholesky factorization (is numerically positive definite).
  bool factors(const Eigen::MatrixXd& M) const {
    CholeskySolve s;
    return cholesky_solve(M, Matrix(M.rows(), 0), s);
  }

  // Solves G Z = C by Cholesky, and proves cond(G) < limit without the eigenvalues or says it
  // cannot, cheapest proof first (each Cholesky factorization of a 256 x 256 matrix: ~0.1 ms on the device, 0.5-1.3
  // ms on a host core):
  //  1. Gershgorin's discs bound every eigenvalue: λ_max <= max_i (G_ii + r_i) = β and
  //     λ_min >= min_i (G_ii − r_i), r_i = Σ_{j≠i} |G_ij|. Enough when the features are nearly
  //     uncorrelated (G diagonally dominant): no factorization beyond G's own.
  //  2. λ_min > β / limit when G − (β / limit) I has a Cholesky factorization.
  //  3. A tighter β from power iterations (checked by factoring βI − G), then 2 again.
  // In double, the factorizations' rounding (~d eps_64 λ_max) is far below the margins these
  // limits leave.
  bool solve_if_well_conditioned(const Eigen::Ref<const Eigen::MatrixXd>& G, double limit, CholeskySolve& llt) const {
    if (!cholesky_solve(G, cross_matrix(), llt)) return false;
    trace_.mark("Cholesky of the gram");
    const Eigen::Index d = G.rows();
    // Row sums of |G| as column sums (G is symmetric; columns are contiguous).
    const Vector radius = G.cwiseAbs().colwise().sum().transpose() - G.diagonal().cwiseAbs();
    const double lowest = (G.diagonal() - radius).minCoeff();
    double beta = (G.diagonal() + radius).maxCoeff();
    if (!(beta > 0)) return false;
    if (lowest > 0 && beta / lowest < limit) return true;
    auto above_floor = [&](double upper) {  // λ_min > upper / limit?
      Eigen::MatrixXd M = G;
      M.diagonal().array() -= upper / limit;
      return factors(M);
    };
    if (above_floor(beta)) return true;
    Vector v = Vector::Ones(d) / std::sqrt(static_cast<double>(d));
    double mu = 0.0;
    for (int it = 0; it < 12; ++it) {
      const Vector Gv = G * v;
      mu = v.dot(Gv);
      const double norm = Gv.norm();
      if (!(norm > 0)) return false;
      v = Gv / norm;
    }
    // The power iterations approach λ_max from below, slowly when the top eigenvalues crowd
    // together: 25% headroom, confirmed by factoring βI − G.
    beta = 1.25 * mu;
    Eigen::MatrixXd M = -G;
    M.diagonal().array() += beta;
    return factors(M) && above_floor(beta);
  }

  HostSolution by_eig(bool fall_back) {
    compute_gram();
    // G_ symmetric: its row-major array is also its column-major one (no copy).
    const Eigen::Map<const Eigen::MatrixXd> G(G_.data(), d_, d_);
    // Well conditioned (the common case): full rank, a Cholesky solve, and the singular values
    // only if someone asks for them.
    CholeskySolve llt;
    const bool well_conditioned = same_on_every_rank(comm_, solve_if_well_conditioned(G, eig_condition_limit(fall_back), llt));
    trace_.mark("Cholesky and conditioning");
    if (well_conditioned) {
      HostSolution sol;
      sol.rank = d_;
      sol.coef = llt.Z.transpose();
      const int64_t count = std::min(n_, d_);
      sol.singular_values_later = [G = std::move(G_), d = d_, count, estimator = std::string(request_.estimator)] {
        Vector lambda;
        GPUML_EXPECT(eigenvalues_of(Eigen::Map<const Eigen::MatrixXd>(G.data(), d, d), lambda),
                     estimator + ": the eigenvalues of XᵀX did not converge");
        return singular_values_from(lambda, count);
      };
      trace_.mark("coefficients");
      return sol;
    }
    // Near the limits: the eigenvalues decide.
    Vector lambda;
    expect_eigenvalues(eigenvalues_of(G, lambda));
    HostSolution sol;
    sol.singular_values = singular_values_from(lambda);
    sol.rank = rank_of(sol.singular_values, gram_cutoff());
    const double s_max = sol.singular_values.empty() ? 0.0 : sol.singular_values.front();
    const double s_min = static_cast<int64_t>(sol.singular_values.size()) == d_ ? sol.singular_values.back() : 0.0;
    // The normal equations' relative error is about eps * cond(A)^2: "auto" leaves them once that
    // exceeds 1e-4 in float64 (cond > ~7e5) or 1e-2 in float32 (cond > ~290), where the QR/SVD
    // route's eps * cond(A) is still accurate.
    const double wanted = std::is_same_v<T, double> ? 1e-4 : 1e-2;
    const bool ill_conditioned =
        s_min <= std::max(std::sqrt(std::numeric_limits<T>::epsilon() / wanted), request_.lstsq_cond) * s_max;
    if (same_on_every_rank(comm_, fall_back && (sol.rank < d_ || ill_conditioned))) return by_svd();
    if (sol.rank < d_) throw_error(ErrorCode::invalid_argument, rank_deficient(request_, "eig", sol.rank, d_));
    // Full rank: G is positive definite and its Cholesky solve equals the spectral one (both
    // backward stable, error ~ eps * cond(G)). Where the factorization still fails (an
    // eigenvalue just above the rank cutoff), the eigenvectors solve it as before.
    if (llt.ok) {
      sol.coef = llt.Z.transpose();
    } else {
      const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(G);
      GPUML_EXPECT(es.info() == Eigen::Success, std::string(request_.estimator) + ": the eigen-decomposition of XᵀX failed");
      sol.coef = spectral_solve(es, cross_matrix(), {}, 0.0);
    }
    trace_.mark("host solve (eigenvalues)");
    return sol;
  }

  // QR of the working copies (n >= d): R and QᵀB on the host. A and B are overwritten.
  // Over several ranks (n >= d over all of them), TSQR: this rank's R and QᵀB (its rows of A and B
  // themselves when it has fewer than d), stacked in rank order on every rank and factored again
  // (Householder, on the host): the stack's R is A's, up to the signs of its rows, and its QᵀB is
  // the matching one.
  void compute_qr(Eigen::MatrixXd& R, Matrix& QtB) {
    compute_qr_unchecked(R, QtB);
    // R's columns have A's column norms: Householder QR squares them (overflow, or precision
    // lost to underflow, NaN where a norm underflowed to zero).
    expect_squares_in_range(R.colwise().squaredNorm().maxCoeff());
  }
  // Where a fit may rescale (rescalable_), squares out of range throw BadlyScaled.
  void expect_squares_in_range(double largest_square) const {
    if (rescalable_ && !squares_in_range<T>(largest_square)) throw BadlyScaled{};
  }
  void compute_qr_unchecked(Eigen::MatrixXd& R, Matrix& QtB) {
    const int64_t k = std::min(rows_, d_);
    Matrix R_rows(k, d_), QtB_rows(k, t_);
    if (rows_ >= d_) {
      backend_->qr(A_.as<T>(), B_.as<T>(), rows_, d_, t_, R_rows.data(), QtB_rows.data());
      R_rows = R_rows.triangularView<Eigen::Upper>();
    } else {
      R_rows = host_matrix(A_, d_);
      QtB_rows = host_matrix(B_, t_);
    }
    if (comm_.size() == 1) {
      R = R_rows;
      QtB = QtB_rows;
      return;
    }
    Matrix block(k, d_ + t_);
    block << R_rows, QtB_rows;
    const std::vector<int64_t> blocks = comm_.allgather(k);
    int64_t stacked_rows = 0;
    std::vector<int64_t> counts;
    for (int64_t b : blocks) {
      stacked_rows += b;
      counts.push_back(b * (d_ + t_));
    }
    Matrix stacked(stacked_rows, d_ + t_);
    comm_.allgatherv(block.data(), k * (d_ + t_), stacked.data(), counts.data(), DType::float64);
    const Eigen::HouseholderQR<Eigen::MatrixXd> qr(stacked.leftCols(d_));
    R = qr.matrixQR().topRows(d_).triangularView<Eigen::Upper>();
    QtB = (qr.householderQ().transpose() * stacked.rightCols(t_)).topRows(d_);
    trace_.mark("TSQR over the ranks");
  }

  // A's R factor as a product of upper-triangular factors R = F_k ⋯ F_1 (Cholesky QR's passes;
  // one factor from Householder QR). Kept apart: solves need only the factors, and forming the
  // product (a d³ product on the host) is left to whoever asks for the singular values.
  using Factors = std::vector<Eigen::MatrixXd>;

  // Cholesky QR, repeated (CholeskyQR2/3): with G = AᵀA = R₁ᵀR₁, Q₁ = A R₁⁻¹ is orthogonal up to
  // ~eps cond(A)²; factoring Q₁ the same way gives R₂ with Q = Q₁ R₂⁻¹ orthogonal to working
  // precision, and R = R₂ R₁ is A's R factor (positive diagonal), QᵀB = R₂⁻ᵀ Q₁ᵀB. Each pass is
  // a Gram product and a triangular solve over A: GEMM-shaped work, unlike Householder QR's
  // column-by-column panels. A pass is final once its Gram matrix is within kOrthogonalEnough of
  // the identity (then its Cholesky factor is accurate); otherwise another pass, at most three.
  // Returns false when a factorization fails or the passes do not converge (cond(A) beyond
  // ~eps^-1/2 for two passes): the caller then takes Householder QR. A_ is overwritten.
  bool cholesky_qr(Factors& factors, Matrix& QtB) {
    constexpr int kMaxPasses = 3;
    constexpr double kOrthogonalEnough = 0.1;
    compute_gram();
    Eigen::MatrixXd G = gram_matrix();
    Matrix C = cross_matrix();
    factors.clear();
    std::vector<double> G_rows(static_cast<std::size_t>(d_ * d_)), C_rows(static_cast<std::size_t>(d_ * t_));
    for (int pass = 1; pass <= kMaxPasses; ++pass) {
      CholeskyFactor llt;
      const bool factored = factor(G, llt);
      const Eigen::MatrixXd Rk = llt.U.triangularView<Eigen::Upper>();  // below the diagonal: unspecified
      if (!same_on_every_rank(comm_, factored && Rk.diagonal().minCoeff() > 0)) return false;
      factors.push_back(Rk);
      const bool final_pass = same_on_every_rank(
          comm_, pass > 1 && (G - Eigen::MatrixXd::Identity(d_, d_)).cwiseAbs().maxCoeff() <= kOrthogonalEnough);
      if (final_pass) {
        QtB = Rk.transpose().triangularView<Eigen::Lower>().solve(C);  // Rkᵀ QᵀB = QₖᵀB
        trace_.mark("host factorizations");
        return true;
      }
      if (pass == kMaxPasses) return false;
      const Matrix Rk_rows = Rk;
      backend_->right_triangular_solve(A_.as<T>(), rows_, d_, Rk_rows.data());
      trace_.mark("triangular solve over A");
      backend_->gram(A_.as<const T>(), B_.as<const T>(), rows_, d_, t_, G_rows.data(), C_rows.data());
      comm_.allreduce_sum(G_rows.data(), d_ * d_);
      comm_.allreduce_sum(C_rows.data(), d_ * t_);
      trace_.mark("gram (next pass)");
      G = Eigen::Map<const Matrix>(G_rows.data(), d_, d_);
      C = Eigen::Map<const Matrix>(C_rows.data(), d_, t_);
    }
    return false;
  }

  // Singular values of an upper-triangular R (descending). The square roots of RᵀR's eigenvalues
  // carry absolute errors ~ c eps_64 s_max² / s_i (c <= d): used when that stays below
  // kSingularTolerance * s_max for every s_i, i.e. for well-conditioned R; else an SVD of R
  // (absolute errors ~ eps s_max; ~20 ms at d = 256 against ~4 ms for the eigenvalues).
  static std::vector<double> singular_values_of_r(const Eigen::MatrixXd& R) {
    const int64_t d = R.rows();
    const double tolerance = std::is_same_v<T, double> ? 1e-11 : 1e-8;  // well below T's rounding of the result
    const Eigen::MatrixXd RtR = R.transpose() * R;
    Vector lambda;
    if (eigenvalues_of(RtR, lambda)) {
      std::vector<double> s = singular_values_from(lambda, d);
      const double s_max = s.front(), s_min = s.back();
      const double lambda_error = static_cast<double>(d) * std::numeric_limits<double>::epsilon() * s_max * s_max;
      if (s_min > 0 && lambda_error / (2 * s_min) <= tolerance * s_max) return s;  // δs = δλ / (2 s)
    }
    Eigen::BDCSVD<Eigen::MatrixXd> svd(R);
    const Vector& values = svd.singularValues();
    return std::vector<double>(values.data(), values.data() + values.size());
  }

  HostSolution by_qr() {
    if (n_ < d_)
      throw_error(ErrorCode::invalid_argument,
                  rank_deficient(request_, "qr", n_, d_) + " (X has fewer samples than features)");
    Factors factors;
    Matrix QtB;
    if (!cholesky_qr(factors, QtB)) {
      // Ill conditioned or rank deficient: Householder QR of freshly centered copies decides.
      prepare(X_, y_, w_, false);
      Eigen::MatrixXd R;
      compute_qr(R, QtB);
      factors = {R};
    }
    HostSolution sol;
    Vector diagonal = Vector::Ones(d_);  // R's diagonal: the product of the factors' diagonals
    for (const Eigen::MatrixXd& f : factors) diagonal = diagonal.cwiseProduct(f.diagonal());
    const double diag_max = diagonal.cwiseAbs().maxCoeff();
    sol.rank = (diagonal.cwiseAbs().array() > rcond_ * diag_max).count();
    if (diag_max <= 0) sol.rank = 0;
    if (sol.rank < d_) throw_error(ErrorCode::invalid_argument, rank_deficient(request_, "qr", sol.rank, d_));
    // R coef = QᵀB with R = F_k ⋯ F_1: undo F_k first.
    Eigen::MatrixXd y = QtB;
    for (auto f = factors.rbegin(); f != factors.rend(); ++f) y = f->triangularView<Eigen::Upper>().solve(y);
    sol.coef = y.transpose();
    sol.singular_values_later = [factors] {
      Eigen::MatrixXd R = factors.front();
      for (std::size_t k = 1; k < factors.size(); ++k) R = (factors[k].triangularView<Eigen::Upper>() * R).eval();
      return singular_values_of_r(R);
    };
    trace_.mark("host solve (triangular)");
    return sol;
  }

  // The minimum-norm (and Ridge "svd") solution from G = AᵀA alone (sparse X: no A to factor):
  // coef_k = V diag(1 / (λ + alpha_k)) Vᵀ C_k, eigenvalues below the cutoff dropped when alpha_k = 0.
  // G's eigenvalues are known to about eps λ_max, hence the cutoff on λ: max(rcond, lstsq_cond²).
  HostSolution by_gram_spectrum() {
    const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(gram_matrix());
    GPUML_EXPECT(es.info() == Eigen::Success, std::string(request_.estimator) + ": the eigen-decomposition of XᵀX failed");
    HostSolution sol;
    sol.singular_values = singular_values_from(es.eigenvalues());
    sol.rank = rank_of(sol.singular_values, std::max(gram_cutoff(), request_.lstsq_cond));
    const double s_max = sol.singular_values.empty() ? 0.0 : sol.singular_values.front();
    const double s_cut = std::max(gram_cutoff(), request_.lstsq_cond) * s_max;
    // A penalty below the eigenvalues' own noise (alpha = 1e-16, say) cannot regularize the noise
    // of G's null space: such an alpha counts as 0 there (the minimum-norm solution, which the
    // SVD of A gives on dense X); above it, every eigenvalue is divided by λ + alpha as usual.
    std::vector<double> alpha = request_.alpha;
    for (double& a : alpha)
      if (a <= s_cut * s_cut) a = 0.0;
    sol.coef = spectral_solve(es, cross_matrix(), alpha, s_cut * s_cut);
    return sol;
  }

  HostSolution by_svd() {
    if (from_gram_) return by_gram_spectrum();
    require_exact_centering();
    HostSolution sol;
    if (n_ < d_) {
      // Fewer rows than features: R would not be square, and the Gram matrix's eigenvalues are
      // too noisy to find the rank (its null space is d - n wide). A is at most n x d with n < d,
      // no larger than the Gram matrix itself: take its SVD on the host, as scikit-learn's lstsq.
      const Matrix A = gather_rows(host_matrix(A_, d_)), B = gather_rows(host_matrix(B_, t_));
      Eigen::BDCSVD<Eigen::MatrixXd> svd(A, Eigen::ComputeThinU | Eigen::ComputeThinV);
      const Vector& s = svd.singularValues();
      if (s.size() > 0) expect_squares_in_range(s[0] * s[0]);  // svd_solve squares them
      sol.singular_values.assign(s.data(), s.data() + s.size());
      sol.rank = rank_of(sol.singular_values, svd_cutoff_);
      const double s_cut = sol.singular_values.empty() ? 0.0 : svd_cutoff_ * sol.singular_values.front();
      sol.coef = svd_solve(svd, B, request_.alpha, s_cut);
      return sol;
    }
    Eigen::MatrixXd R;
    Matrix QtB;
    compute_qr(R, QtB);
    Eigen::JacobiSVD<Eigen::MatrixXd> svd(R, Eigen::ComputeFullU | Eigen::ComputeFullV);
    const Vector& s = svd.singularValues();
    sol.singular_values.assign(s.data(), s.data() + s.size());
    sol.rank = rank_of(sol.singular_values, svd_cutoff_);
    const double s_cut = sol.singular_values.empty() ? 0.0 : svd_cutoff_ * sol.singular_values.front();
    sol.coef = svd_solve(svd, QtB, request_.alpha, s_cut);
    return sol;
  }

  // A working copy (n x cols, in the context's memory) as a host double matrix.
  Matrix host_matrix(const Buffer& buffer, int64_t cols) const {
    const HostArray h = detail::to_host(ctx_, make_view(buffer.data(), dtype_of<T>::value, ctx_.device(), rows_, cols));
    using Rows = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
    return Eigen::Map<const Rows>(h.as<T>(), rows_, cols).template cast<double>();
  }

  HostSolution by_cholesky() {
    compute_gram();
    const Eigen::MatrixXd G = gram_matrix();
    const Matrix C = cross_matrix();
    HostSolution sol;
    sol.coef.resize(t_, d_);
    sol.rank = d_;
    const double diag_max = G.diagonal().maxCoeff();
    auto alpha_of = [&](int64_t k) { return request_.alpha[request_.alpha.size() == 1 ? 0 : static_cast<std::size_t>(k)]; };
    // Targets with the same alpha share one factorization: solved together.
    for (int64_t k = 0; k < t_;) {
      const double a = alpha_of(k);
      int64_t end = k + 1;
      while (end < t_ && alpha_of(end) == a) ++end;
      Eigen::MatrixXd M = G;
      M.diagonal().array() += a;
      CholeskySolve llt;
      cholesky_solve(M, C.middleCols(k, end - k), llt);
      // A numerically singular matrix can factor with tiny pivots: those count as failures.
      const double pivot_min = llt.ok ? llt.diagonal.minCoeff() : 0.0;
      // Not positive definite (alpha = 0 and X not of full column rank): the SVD's minimum-norm
      // solution, as scikit-learn's "cholesky" falls back to "svd" (every rank decides alike: G is
      // the same on all).
      if (!llt.ok || !(pivot_min * pivot_min > rcond_ * (diag_max + a))) return by_svd();
      sol.coef.middleRows(k, end - k) = llt.Z.transpose();
      k = end;
    }
    return sol;
  }

  // coef >= 0 (positive=True), per target: the active set on G + alpha_k I and C_k, in double on
  // the host (the Gram system is the backend's). The singular values come from G's eigenvalues.
  HostSolution by_nonnegative() {
    compute_gram();
    HostSolution sol;
    sol.coef.resize(t_, d_);
    std::vector<double> cross_k(static_cast<std::size_t>(d_));
    for (int64_t k = 0; k < t_; ++k) {
      NonnegativeOptions options;
      options.l2 = request_.alpha.empty() ? 0.0 : request_.alpha[request_.alpha.size() == 1 ? 0 : static_cast<std::size_t>(k)];
      options.max_iter = request_.max_iter;
      options.tol = request_.tol;
      for (int64_t j = 0; j < d_; ++j) cross_k[j] = C_[j * t_ + k];
      const NonnegativeResult r = nonnegative_quadratic(G_.data(), cross_k.data(), d_, options);
      for (int64_t j = 0; j < d_; ++j) sol.coef(k, j) = r.coef[j];
      sol.converged = sol.converged && r.converged;
    }
    trace_.mark("host solve (active set)");
    Vector lambda;
    expect_eigenvalues(eigenvalues_of(gram_matrix(), lambda));
    sol.singular_values = singular_values_from(lambda);
    sol.rank = rank_of(sol.singular_values, gram_cutoff());
    return sol;
  }

  Context& ctx_;
  const LeastSquaresRequest& request_;
  Trace& trace_;
  std::unique_ptr<LinearBackend<T>> backend_;
  Comm& comm_;
  const RowCounts& row_counts_;  // every rank's rows
  int64_t rows_;                 // this rank's rows (the working copies' height)
  int64_t n_, d_, t_;            // n_: the rows of all ranks
  double weight_sum_;            // Σ w over this rank's rows
  double total_weight_ = 0.0;    // over all ranks, once prepared
  std::vector<double> y_offset_;  // this rank's ȳ_r − ȳ in the Gram routes (zeros otherwise)
  std::vector<double> y_sums_;    // Σ w (y − ȳ_r) over this rank's rows as centered (Gram routes)
  double rcond_;
  bool rescalable_;  // squares out of range throw BadlyScaled (see least_squares.hpp)
  double svd_cutoff_;  // the minimum-norm routes' cutoff: rcond_, or the caller's lstsq_cond above it
  const T *X_ = nullptr, *y_ = nullptr, *w_ = nullptr;  // the staged inputs
  std::vector<double> x_mean_, y_mean_;
  Buffer A_, B_;                  // the centered, weighted working copies
  bool gram_only_ = false;        // prepared without A: G and C straight from X (see prepare)
  bool from_gram_ = false;        // sparse X: G and C given (adopt_gram), no X to factor
  std::vector<double> G_, C_;     // AᵀA and AᵀB once computed
};

// Sample weights staged in T, checked (finite, non-negative, positive sum).
detail::Staged stage_weights(Context& ctx, const ArrayView& sw, DType dtype, int64_t n, double* sum = nullptr) {
  GPUML_EXPECT(sw.ndim == 1, "sample_weight must be a 1-d array, got " + std::to_string(sw.ndim) + " dimension(s)");
  GPUML_EXPECT(sw.shape[0] == n, "sample_weight has " + std::to_string(sw.shape[0]) + " entries but X has " +
                                     std::to_string(n) + " samples");
  detail::Staged staged = detail::stage(ctx, sw, dtype, "sample_weight");
  detail::require_finite(ctx, staged.view, "sample_weight");
  HostArray copy;
  if (staged.view.device.is_cuda()) copy = detail::to_host(ctx, staged.view);
  const void* host = staged.view.device.is_cuda() ? copy.as<const void>() : staged.view.data;
  with_float_type(dtype, [&](auto tag) {
    using T = decltype(tag);
    const T* w = static_cast<const T*>(host);
    double total = 0.0;
    for (int64_t i = 0; i < n; ++i) {
      GPUML_EXPECT(w[i] >= 0, "sample_weight must be non-negative, got " + std::to_string(static_cast<double>(w[i])) +
                                  " at index " + std::to_string(i));
      total += static_cast<double>(w[i]);
    }
    GPUML_EXPECT(total > 0, "sample_weight must have a positive sum");
    if (sum) *sum = total;
  });
  return staged;
}

}  // namespace

namespace {

// The checks on y shared by the least-squares and Gram-form fits; returns the number of targets.
int64_t check_targets(const ArrayView& y, int64_t n) {
  GPUML_EXPECT(y.ndim == 1 || y.ndim == 2,
               "y must be a 1-d (n_samples,) or 2-d (n_samples, n_targets) array, got " + std::to_string(y.ndim) +
                   " dimension(s)");
  GPUML_EXPECT(y.shape[0] == n, "y has " + std::to_string(y.shape[0]) + " samples but X has " + std::to_string(n));
  const int64_t t = y.ndim == 1 ? 1 : y.shape[1];
  GPUML_EXPECT(t >= 1, "y must have at least 1 target column, got shape " + shape_string(y));
  return t;
}

}  // namespace

MergedSums merge_centered_over_ranks(Comm& comm, double weight_sum, std::vector<double>& x_mean,
                                     std::vector<double>& y_mean, std::vector<double>* gram, std::vector<double>* cross,
                                     const std::vector<double>* y_sums) {
  const int64_t d = static_cast<int64_t>(x_mean.size()), t = static_cast<int64_t>(y_mean.size());
  MergedSums m;
  m.total_weight = weight_sum;
  comm.allreduce_sum(&m.total_weight, 1);
  // Each rank's means weighted by its share of the total weight, summed (one rank: a share of
  // exactly 1, the means unchanged).
  const double share = weight_sum / m.total_weight;
  std::vector<double> means(static_cast<std::size_t>(d + t));
  for (int64_t j = 0; j < d; ++j) means[j] = share * x_mean[j];
  for (int64_t k = 0; k < t; ++k) means[d + k] = share * y_mean[k];
  comm.allreduce_sum(means.data(), d + t);
  m.x_offset.resize(static_cast<std::size_t>(d));
  m.y_offset.resize(static_cast<std::size_t>(t));
  for (int64_t j = 0; j < d; ++j) {
    m.x_offset[j] = x_mean[j] - means[j];
    x_mean[j] = means[j];
  }
  for (int64_t k = 0; k < t; ++k) {
    m.y_offset[k] = y_mean[k] - means[d + k];
    y_mean[k] = means[d + k];
  }
  if (comm.size() == 1 || gram == nullptr) return m;  // one rank: no offsets, nothing to sum
  const double W = weight_sum;
  const std::vector<double>& dx = m.x_offset;
  for (int64_t i = 0; i < d; ++i) {
    double* row = gram->data() + i * d;
    for (int64_t j = 0; j < d; ++j) row[j] += W * (dx[i] * dx[j]);  // symmetric bit for bit
    if (cross)
      for (int64_t k = 0; k < t; ++k) (*cross)[i * t + k] += dx[i] * (W * m.y_offset[k] + (y_sums ? (*y_sums)[k] : 0.0));
  }
  comm.allreduce_sum(gram->data(), d * d);
  if (cross) comm.allreduce_sum(cross->data(), d * t);
  return m;
}

template <typename T>
CenteredGram centered_gram(LinearBackend<T>& backend, const T* X, int64_t n, int64_t d, const T* w, const T* B, int64_t t,
                           bool center, const std::string& estimator) {
  CenteredGram out;
  std::vector<double> shift;
  if (center) {
    shift.resize(static_cast<std::size_t>(d));
    backend.weighted_means(X, std::min<int64_t>(n, kShiftRows), d, w, shift.data());
    for (double& c : shift) c = static_cast<double>(static_cast<T>(c));  // exact in T (see shifted_gram)
  }
  out.gram.resize(static_cast<std::size_t>(d * d));
  out.cross.resize(static_cast<std::size_t>(d * t));
  std::vector<double> sums(static_cast<std::size_t>(d + 1));
  backend.shifted_gram(X, n, d, shift.empty() ? nullptr : shift.data(), w, B, t, out.gram.data(), out.cross.data(),
                       sums.data());
  expect_finite_sums(sums);
  out.weight_sum = sums[d];
  out.mean.assign(static_cast<std::size_t>(d), 0.0);
  if (center) {
    GPUML_EXPECT(sums[d] > 0, estimator + ": sample_weight sums to 0");
    std::vector<double> delta(static_cast<std::size_t>(d));
    for (int64_t j = 0; j < d; ++j) {
      delta[j] = sums[j] / sums[d];
      out.mean[j] = shift[j] + delta[j];
    }
    // G −= S δδᵀ over whole rows (vectorized): S (δ_i δ_j) is symmetric in i and j bit for bit,
    // so G stays exactly symmetric (the backends return both triangles equal).
    const double S = sums[d];
    for (int64_t i = 0; i < d; ++i) {
      double* row = out.gram.data() + i * d;
      const double di = delta[i];
      for (int64_t j = 0; j < d; ++j) row[j] -= S * (di * delta[j]);
    }
  }
  return out;
}
template CenteredGram centered_gram<float>(LinearBackend<float>&, const float*, int64_t, int64_t, const float*, const float*,
                                           int64_t, bool, const std::string&);
template CenteredGram centered_gram<double>(LinearBackend<double>&, const double*, int64_t, int64_t, const double*,
                                            const double*, int64_t, bool, const std::string&);

namespace {

// Staged inputs of a least-squares or Gram-system fit, checked on every rank, and the agreement
// of the ranks on what they fit.
struct StagedProblem {
  int64_t d = 0, t = 0;
  bool y_is_1d = true;
  DType dtype = DType::float64;
  detail::Staged X, y, w;
  bool weighted = false;
  double weight_sum = 0.0;  // this rank's Σ w (its row count without weights)
  RowCounts rows;
};

StagedProblem stage_problem(Context& ctx, const ArrayView& X, const ArrayView& y, const ArrayView* sample_weight,
                            const std::string& estimator, bool check_y_finite, const std::vector<double>& alpha,
                            std::vector<RankField> fields, Trace& trace) {
  Comm& comm = ctx.comm();
  StagedProblem p;
  int64_t n = 0;
  check_on_every_rank(comm, estimator, "checking X, y and sample_weight", [&] {
    check_matrix_shape(X);
    n = X.shape[0];
    p.d = X.shape[1];
    p.t = check_targets(y, n);
    p.y_is_1d = y.ndim == 1;
    if (!alpha.empty())
      GPUML_EXPECT(alpha.size() == 1 || static_cast<int64_t>(alpha.size()) == p.t,
                   estimator + ": Number of targets and number of penalties do not correspond: " +  // scikit-learn's words
                       std::to_string(alpha.size()) + " != " + std::to_string(p.t) + " (give one alpha or one per target)");
    p.dtype = float_dtype_for(X.dtype);
    p.X = detail::stage(ctx, X, p.dtype, "X");  // NaN and infinity: found by the centering pass
    trace.mark("stage X");
    p.y = detail::stage(ctx, y, p.dtype, "y");
    if (check_y_finite) detail::require_finite(ctx, p.y.view, "y");
    p.weight_sum = static_cast<double>(n);
    p.weighted = sample_weight != nullptr;
    if (sample_weight) p.w = stage_weights(ctx, *sample_weight, p.dtype, n, &p.weight_sum);
    trace.mark("stage y and weights");
  });
  fields.insert(fields.begin(), {{"n_features", p.d},
                                 {"n_targets", p.t},
                                 {"whether y is 1-d", p.y_is_1d ? 1 : 0},
                                 {"dtype (0 float32, 1 float64)", static_cast<int64_t>(p.dtype)}});
  p.rows = agree_on_every_rank(comm, estimator, n, fields);
  return p;
}

}  // namespace

GramSystem gram_system(Context& ctx, const ArrayView& X, const ArrayView& y, const ArrayView* sample_weight,
                       bool fit_intercept, bool rescale_weights, const std::string& estimator,
                       const std::vector<RankField>& fields) {
  Trace trace(ctx, "Gram system");
  std::vector<RankField> all_fields = fields;
  all_fields.push_back({"fit_intercept", fit_intercept ? 1 : 0});
  StagedProblem p = stage_problem(ctx, X, y, sample_weight, estimator, true, {}, all_fields, trace);
  GramSystem sys;
  sys.n = p.rows.total;
  sys.d = p.d;
  sys.t = p.t;
  sys.y_is_1d = p.y_is_1d;
  sys.dtype = p.dtype;
  double total_weight = 0.0;
  with_float_type(sys.dtype, [&](auto tag) {
    using T = decltype(tag);
    LeastSquaresRequest request;
    request.estimator = estimator.c_str();
    request.fit_intercept = fit_intercept;
    // Not rescalable: coordinate descent's alpha is in X's units; at extreme magnitudes its
    // penalty or its data term is negligible and XᵀX's overflow is an error.
    LeastSquares<T> ls(ctx, request, p.rows, sys.d, sys.t, p.weight_sum, trace, false);
    ls.prepare(p.X.view.as<const T>(), p.y.view.as<const T>(), p.weighted ? p.w.view.as<const T>() : nullptr, true);
    ls.fill_gram_system(sys);
    total_weight = ls.total_weight();
  });
  // Every entry is linear in w: rescaling w to sum to n (over all ranks) scales them all by
  // n / Σw (the means do not change). The ranks agree on whether they are weighted only through
  // the sums: a rank without weights has weights of 1.
  if (rescale_weights && total_weight != static_cast<double>(sys.n)) {
    const double scale = static_cast<double>(sys.n) / total_weight;
    for (auto* v : {&sys.gram, &sys.cross, &sys.y_sq_norm})
      for (double& x : *v) x *= scale;
  }
  return sys;
}

namespace {

// The fitted arrays from a host solution; never a non-finite attribute (values beyond T's range
// are an error).
template <typename T>
LinearFit linear_fit(HostSolution& sol, const std::vector<double>& intercept, int64_t d, int64_t t, bool y_is_1d,
                     DType dtype, const char* estimator) {
  const auto finite_in_t = [](double v) { return std::isfinite(static_cast<T>(v)); };
  GPUML_EXPECT(sol.coef.unaryExpr([&](double v) { return finite_in_t(v) ? 0.0 : 1.0; }).sum() == 0 &&
                   std::all_of(intercept.begin(), intercept.end(), finite_in_t),
               std::string(estimator) + ": the coefficients or intercept overflow " + dtype_name(dtype) +
                   " (X or y too large or too small)");
  GPUML_EXPECT(std::all_of(sol.singular_values.begin(), sol.singular_values.end(), finite_in_t),
               std::string(estimator) + ": singular_values_ overflow " + dtype_name(dtype) +
                   ": X's values are too large");

  LinearFit fit;
  fit.coef = y_is_1d ? HostArray(dtype, d) : HostArray(dtype, t, d);
  fit.intercept = y_is_1d ? HostArray::scalar(dtype) : HostArray(dtype, t);
  for (int64_t k = 0; k < t; ++k) {
    for (int64_t j = 0; j < d; ++j) fit.coef.as<T>()[k * d + j] = static_cast<T>(sol.coef(k, j));
    fit.intercept.as<T>()[k] = static_cast<T>(intercept[k]);
  }
  auto as_array = [dtype](const std::vector<double>& values) {
    HostArray a(dtype, static_cast<int64_t>(values.size()));
    std::copy(values.begin(), values.end(), a.as<T>());
    return a;
  };
  fit.singular_values = sol.singular_values_later
                            ? std::make_shared<DeferredArray>([later = sol.singular_values_later, as_array] {
                                return as_array(later());
                              })
                            : std::make_shared<DeferredArray>(as_array(sol.singular_values));
  fit.rank = scalar_i64(sol.rank);
  fit.n_features_in = scalar_i64(d);
  fit.converged = scalar_i64(sol.converged ? 1 : 0);
  return fit;
}

}  // namespace

LinearFit fit_least_squares(Context& ctx, const ArrayView& X, const ArrayView& y, const ArrayView* sample_weight,
                            const LeastSquaresRequest& request) {
  Trace trace(ctx, request.estimator);
  // With an intercept, NaN or infinity in y shows in its means (prepare): no pass of its own.
  const StagedProblem p =
      stage_problem(ctx, X, y, sample_weight, request.estimator, !request.fit_intercept, request.alpha,
                    request.rank_fields, trace);
  const int64_t d = p.d, t = p.t;
  const bool y_is_1d = p.y_is_1d;
  const DType dtype = p.dtype;

  return with_float_type(dtype, [&](auto tag) {
    using T = decltype(tag);
    const LeastSquaresSolver solver = request.solver;
    const bool gram_route = solver == LeastSquaresSolver::auto_eig || solver == LeastSquaresSolver::eig ||
                            solver == LeastSquaresSolver::cholesky || solver == LeastSquaresSolver::nonnegative;
    const T* w = p.weighted ? p.w.view.as<const T>() : nullptr;
    HostSolution sol;
    std::vector<double> intercept;
    auto solve_on = [&](const ArrayView& Xv, const ArrayView& yv, const LeastSquaresRequest& r, bool rescalable) {
      LeastSquares<T> ls(ctx, r, p.rows, d, t, p.weight_sum, trace, rescalable);
      ls.prepare(Xv.as<const T>(), yv.as<const T>(), w, gram_route);
      sol = ls.solve();
      trace.mark("solve (rest)");
      intercept = ls.intercept(sol.coef);
    };
    try {
      solve_on(p.X.view, p.y.view, request, true);
    } catch (const BadlyScaled&) {
      // Extreme magnitudes (least_squares.hpp): the fit of 2^e X and 2^e y has the same coef, the
      // penalty alpha 4^e, the intercept and singular values 2^e times ours. For a penalty that
      // would overflow, X is scaled up less: its Gram matrix is then negligible beside alpha.
      int exponent = scale_exponent(ctx, p.X.view);
      const double alpha_max = request.alpha.empty() ? 0.0 : *std::max_element(request.alpha.begin(), request.alpha.end());
      if (exponent > 0 && alpha_max > 0)
        exponent = std::max(0, std::min(exponent, (kSquaresRange<double> - std::ilogb(alpha_max)) / 2));
      LeastSquaresRequest scaled = request;
      for (double& a : scaled.alpha) a = std::ldexp(a, 2 * exponent);
      const ScaledCopy Xs = scaled_copy(ctx, p.X.view, exponent), ys = scaled_copy(ctx, p.y.view, exponent);
      GPUML_EXPECT(host_all_finite(ys.host),
                   std::string(request.estimator) + ": y is too large for X's magnitude: the coefficients overflow " +
                       dtype_name(dtype));
      solve_on(Xs.view(), ys.view(), scaled, false);
      for (double& b : intercept) b = std::ldexp(b, -exponent);
      if (sol.singular_values_later) sol.singular_values = sol.singular_values_later();
      sol.singular_values_later = nullptr;
      for (double& v : sol.singular_values) v = std::ldexp(v, -exponent);
    }
    return linear_fit<T>(sol, intercept, d, t, y_is_1d, dtype, request.estimator);
  });
}

namespace {

// The Gram system of the implicitly centered sparse X (least_squares.hpp), one pass of products
// each: x̄ = Xᵀw / Σw, C = Xᵀ b − x̄ Σ b with b = w (y − ȳ) (Σ b is zero but for rounding), and, when
// `with_gram`, G = XᵀWX − (Σw) x̄ x̄ᵀ. The subtraction cancels where a column's mean is large
// beside its spread (a dense column far from 0); sparse columns, mostly zeros, are not such.
struct SparseGramParts {
  std::vector<double> gram, cross, x_mean, y_mean, y_sq_norm;
  double weight_sum = 0.0;
};

// The sparse least-squares routes keep their vectors on the host (the solvers after the products
// are host work): X B and Xᵀ B for host B, through the backend's memory.
template <typename T>
std::vector<T> times_host(Context& ctx, SparseMatrix<T>& X, const T* B, int64_t t) {
  const Buffer in = upload(ctx, B, X.cols() * t);
  Buffer out(ctx, static_cast<std::size_t>(std::max<int64_t>(X.rows() * t, 1)) * sizeof(T));
  X.times(in.as<const T>(), t, out.as<T>());
  return download(ctx, out.as<const T>(), X.rows() * t);
}
template <typename T>
std::vector<double> transpose_times_host(Context& ctx, SparseMatrix<T>& X, const T* B, int64_t t) {
  const Buffer in = upload(ctx, B, X.rows() * t);
  Buffer out(ctx, static_cast<std::size_t>(std::max<int64_t>(X.cols() * t, 1)) * sizeof(T));
  X.transpose_times(in.as<const T>(), t, out.as<T>());
  const std::vector<T> cross = download(ctx, out.as<const T>(), X.cols() * t);
  return std::vector<double>(cross.begin(), cross.end());
}

template <typename T>
SparseGramParts sparse_gram_parts(Context& ctx, SparseMatrix<T>& X, const T* y, const T* w, int64_t t, bool fit_intercept,
                                  bool with_gram = true) {
  const int64_t n = X.rows(), d = X.cols();
  SparseGramParts p;
  p.weight_sum = static_cast<double>(n);
  if (w) p.weight_sum = std::accumulate(w, w + n, 0.0);
  auto weight = [&](int64_t i) { return w ? static_cast<double>(w[i]) : 1.0; };
  p.x_mean.assign(static_cast<std::size_t>(d), 0.0);
  p.y_mean.assign(static_cast<std::size_t>(t), 0.0);
  if (fit_intercept) {
    std::vector<T> ones;
    if (!w) ones.assign(static_cast<std::size_t>(n), T(1));
    p.x_mean = transpose_times_host(ctx, X, w ? w : ones.data(), 1);
    for (double& v : p.x_mean) v /= p.weight_sum;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t k = 0; k < t; ++k) p.y_mean[k] += weight(i) * static_cast<double>(y[i * t + k]);
    for (double& v : p.y_mean) v /= p.weight_sum;
  }
  std::vector<T> b(static_cast<std::size_t>(n * t));
  std::vector<double> b_sums(static_cast<std::size_t>(t), 0.0);
  p.y_sq_norm.assign(static_cast<std::size_t>(t), 0.0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t k = 0; k < t; ++k) {
      const double r = static_cast<double>(y[i * t + k]) - p.y_mean[k];
      b[i * t + k] = static_cast<T>(weight(i) * r);
      b_sums[k] += static_cast<double>(b[i * t + k]);
      p.y_sq_norm[k] += weight(i) * r * r;
    }
  p.cross = transpose_times_host(ctx, X, b.data(), t);
  for (int64_t j = 0; j < d; ++j)
    for (int64_t k = 0; k < t; ++k) p.cross[j * t + k] -= p.x_mean[j] * b_sums[k];
  if (!with_gram) return p;
  p.gram.assign(static_cast<std::size_t>(d * d), 0.0);
  X.weighted_gram(w, p.gram.data());
  if (fit_intercept)
    for (int64_t j = 0; j < d; ++j)
      for (int64_t k = 0; k < d; ++k) p.gram[j * d + k] -= p.weight_sum * p.x_mean[j] * p.x_mean[k];
  return p;
}

// Sparse X's shape, y and sample_weight checked and readable on the host in X's float dtype
// (float32 stays float32, as scikit-learn keeps it): the sparse routes' vector work runs there.
struct SparseProblem {
  int64_t n = 0, d = 0, t = 0;
  bool y_is_1d = true;
  DType dtype = DType::float64;
  detail::HostReadable y;
  detail::Staged w_staged;
  HostArray w_copy;  // of w_staged, when that is in device memory
  bool weighted = false;
  template <typename T>
  const T* y_host() const { return static_cast<const T*>(y.data()); }
  template <typename T>
  const T* w_host() const {
    if (!weighted) return nullptr;
    return w_copy.empty() ? w_staged.view.as<const T>() : w_copy.as<const T>();
  }
};

SparseProblem stage_sparse_problem(Context& ctx, const SparseView& X, const ArrayView& y, const ArrayView* sample_weight,
                                   const std::string& estimator, const std::vector<double>& alpha,
                                   bool needs_gram) {
  if (ctx.comm().size() > 1)
    throw_error(ErrorCode::unsupported, estimator + ": sparse X over several ranks is not written yet");
  SparseProblem p;
  p.n = X.rows();
  p.d = X.cols();
  GPUML_EXPECT(p.n >= 1 && p.d >= 1, "X (sparse matrix) has shape (" + std::to_string(p.n) + ", " +
                                         std::to_string(p.d) + "): at least 1 sample and 1 feature are required");
  if (needs_gram && p.d > kSparseGramFeatures)
    throw_error(ErrorCode::unsupported,
                estimator + ": sparse X with " + std::to_string(p.d) + " features (more than " +
                    std::to_string(kSparseGramFeatures) +
                    "): coordinate descent runs on a d x d Gram matrix here, and over CSC columns is not written "
                    "yet");
  p.t = check_targets(y, p.n);
  p.y_is_1d = y.ndim == 1;
  if (!alpha.empty())
    GPUML_EXPECT(alpha.size() == 1 || static_cast<int64_t>(alpha.size()) == p.t,
                 estimator + ": Number of targets and number of penalties do not correspond: " +
                     std::to_string(alpha.size()) + " != " + std::to_string(p.t) + " (give one alpha or one per target)");
  p.dtype = X.dtype == DType::float32 ? DType::float32 : DType::float64;
  p.y = detail::host_readable(ctx, y, p.dtype, "y");
  p.weighted = sample_weight != nullptr;
  if (sample_weight) {
    p.w_staged = stage_weights(ctx, *sample_weight, p.dtype, p.n);
    if (p.w_staged.view.device.is_cuda()) p.w_copy = detail::to_host(ctx, p.w_staged.view);
  }
  return p;
}


// Wide sparse X (more than kSparseGramFeatures features): conjugate gradients on the normal
// equations (AᵀA + alpha_k I) c = AᵀB_k, A = √w (X − x̄) applied through the sparse products and
// never formed (scikit-learn's sparse_cg; lsqr's problem too). From zero, the iterates stay in the
// row space of A, so with alpha = 0 and rank-deficient X they reach the minimum-norm solution, as
// lsqr's. Stops at a residual of √eps_T / 100 relative to |AᵀB_k| (1.5e-10 in float64, far below
// scikit-learn's tolerances), or after max_iter steps (default 2 d, lsqr's), then converged_ = 0.
// rank_ and singular_values_ are not computed there (-1 and empty; scikit-learn's sparse fit sets
// neither).
template <typename T>
HostSolution sparse_normal_cg(Context& ctx, SparseMatrix<T>& X, const T* w, const SparseGramParts& parts, int64_t t,
                              const LeastSquaresRequest& request) {
  const int64_t n = X.rows(), d = X.cols();
  const std::vector<double>& mean = parts.x_mean;
  std::vector<T> v_t(static_cast<std::size_t>(d)), Xv(static_cast<std::size_t>(n));
  // out = AᵀA v = Xᵀ W (X v − 1 x̄ᵀv) − x̄ Σ w (X v − x̄ᵀv) (the last sum is zero but for rounding).
  auto normal = [&](const Vector& v, double alpha, Vector& out) {
    for (int64_t j = 0; j < d; ++j) v_t[j] = static_cast<T>(v[j]);
    Xv = times_host(ctx, X, v_t.data(), 1);
    const double shift = Eigen::Map<const Vector>(mean.data(), d).dot(v);
    double total = 0.0;
    for (int64_t i = 0; i < n; ++i) {
      const double u = (w ? static_cast<double>(w[i]) : 1.0) * (static_cast<double>(Xv[i]) - shift);
      Xv[i] = static_cast<T>(u);
      total += static_cast<double>(Xv[i]);
    }
    const std::vector<double> cross = transpose_times_host(ctx, X, Xv.data(), 1);
    out = Eigen::Map<const Vector>(cross.data(), d);
    out -= total * Eigen::Map<const Vector>(mean.data(), d);
    out += alpha * v;
  };
  const double rtol = 1e-2 * std::sqrt(static_cast<double>(std::numeric_limits<T>::epsilon()));
  const int64_t max_iter = request.max_iter > 0 ? request.max_iter : std::max<int64_t>(2 * d, 100);
  HostSolution sol;
  sol.coef = Matrix::Zero(t, d);
  sol.rank = -1;
  for (int64_t k = 0; k < t; ++k) {
    const double alpha = request.alpha.empty() ? 0.0 : request.alpha[request.alpha.size() == 1 ? 0 : k];
    Vector b(d);
    for (int64_t j = 0; j < d; ++j) b[j] = parts.cross[j * t + k];
    const double target = rtol * b.norm();
    Vector c = Vector::Zero(d), r = b, p = r, Ap;
    double rr = r.squaredNorm();
    bool converged = std::sqrt(rr) <= target;
    for (int64_t it = 0; it < max_iter && !converged; ++it) {
      normal(p, alpha, Ap);
      const double pAp = p.dot(Ap);
      if (!(pAp > 0)) break;  // p in A's null space (alpha = 0): nothing left to reduce
      const double step = rr / pAp;
      c += step * p;
      r -= step * Ap;
      const double rr_next = r.squaredNorm();
      converged = std::sqrt(rr_next) <= target;
      p = r + (rr_next / rr) * p;
      rr = rr_next;
    }
    sol.coef.row(k) = c.transpose();
    sol.converged = sol.converged && converged;
  }
  return sol;
}
}  // namespace

LinearFit fit_least_squares_sparse(Context& ctx, const SparseView& X, const ArrayView& y,
                                   const ArrayView* sample_weight, const LeastSquaresRequest& request) {
  const std::string label = std::string(request.estimator) + " (sparse)";
  Trace trace(ctx, label.c_str());
  const bool iterative = X.cols() > kSparseGramFeatures;
  if (iterative && request.solver == LeastSquaresSolver::nonnegative)
    throw_error(ErrorCode::unsupported, std::string(request.estimator) + ": positive=True on sparse X with more than " +
                                            std::to_string(kSparseGramFeatures) +
                                            " features is not written yet (the active set runs on X^T X)");
  const SparseProblem p =
      stage_sparse_problem(ctx, X, y, sample_weight, request.estimator, request.alpha, false);
  return with_float_type(p.dtype, [&](auto tag) {
    using T = decltype(tag);
    auto A = make_sparse_matrix<T>(ctx, X, "X");
    trace.mark("check and canonicalize X");
    if (iterative) {
      const T* w = p.w_host<T>();
      const SparseGramParts parts = sparse_gram_parts<T>(ctx, *A, p.y_host<T>(), w, p.t, request.fit_intercept, false);
      HostSolution sol = sparse_normal_cg<T>(ctx, *A, w, parts, p.t, request);
      std::vector<double> intercept(static_cast<std::size_t>(p.t), 0.0);
      for (int64_t k = 0; k < p.t && request.fit_intercept; ++k)
        intercept[k] = parts.y_mean[k] - sol.coef.row(k).dot(Eigen::Map<const Vector>(parts.x_mean.data(), p.d));
      trace.mark("conjugate gradients");
      return linear_fit<T>(sol, intercept, p.d, p.t, p.y_is_1d, p.dtype, request.estimator);
    }
    SparseGramParts parts = sparse_gram_parts<T>(ctx, *A, p.y_host<T>(), p.w_host<T>(), p.t, request.fit_intercept);
    trace.mark("sparse Gram system");
    // No X to factor: "qr" solves as "eig" (both exact for full-rank X), "svd" from G's spectrum.
    LeastSquaresRequest r = request;
    if (r.solver == LeastSquaresSolver::qr) r.solver = LeastSquaresSolver::eig;
    const RowCounts rows{{p.n}, p.n};
    LeastSquares<T> ls(ctx, r, rows, p.d, p.t, parts.weight_sum, trace, false);
    ls.adopt_gram(std::move(parts.gram), std::move(parts.cross), std::move(parts.x_mean), std::move(parts.y_mean),
                  parts.weight_sum);
    HostSolution sol = ls.solve();
    const std::vector<double> intercept = ls.intercept(sol.coef);
    trace.mark("solve");
    return linear_fit<T>(sol, intercept, p.d, p.t, p.y_is_1d, p.dtype, request.estimator);
  });
}

GramSystem gram_system_sparse(Context& ctx, const SparseView& X, const ArrayView& y, const ArrayView* sample_weight,
                              bool fit_intercept, bool rescale_weights, const std::string& estimator) {
  const std::string label = estimator + " (sparse Gram system)";
  Trace trace(ctx, label.c_str());
  const SparseProblem p = stage_sparse_problem(ctx, X, y, sample_weight, estimator, {}, true);
  GramSystem sys;
  sys.n = p.n;
  sys.d = p.d;
  sys.t = p.t;
  sys.y_is_1d = p.y_is_1d;
  sys.dtype = p.dtype;
  double total_weight = 0.0;
  with_float_type(p.dtype, [&](auto tag) {
    using T = decltype(tag);
    auto A = make_sparse_matrix<T>(ctx, X, "X");
    SparseGramParts parts = sparse_gram_parts<T>(ctx, *A, p.y_host<T>(), p.w_host<T>(), p.t, fit_intercept);
    check_gram_scale<T>(parts.gram, p.d, false, estimator);
    sys.gram = std::move(parts.gram);
    sys.cross = std::move(parts.cross);
    sys.y_sq_norm = std::move(parts.y_sq_norm);
    sys.x_mean = std::move(parts.x_mean);
    sys.y_mean = std::move(parts.y_mean);
    total_weight = parts.weight_sum;
  });
  // As gram_system: weights rescaled to sum to n scale every entry by n / Σw.
  if (rescale_weights && total_weight != static_cast<double>(sys.n)) {
    const double scale = static_cast<double>(sys.n) / total_weight;
    for (auto* v : {&sys.gram, &sys.cross, &sys.y_sq_norm})
      for (double& x : *v) x *= scale;
  }
  return sys;
}

void linear_predict_sparse(Context& ctx, const SparseView& X, const HostArray& coef, const HostArray& intercept,
                           const ArrayView& out, const char* estimator) {
  const bool one_target = coef.spec().ndim == 1;
  const int64_t d = one_target ? coef.spec().shape[0] : coef.spec().shape[1];
  const int64_t t = one_target ? 1 : coef.spec().shape[0];
  GPUML_EXPECT(X.cols() == d, "X has " + std::to_string(X.cols()) + " features, but " + estimator +
                                  " was fitted with " + std::to_string(d) + " features");
  const int64_t n = X.rows();
  with_float_type(coef.dtype(), [&](auto tag) {
    using T = decltype(tag);
    auto A = make_sparse_matrix_as<T>(ctx, X, "X");  // values in coef's dtype, as the dense predict
    Buffer products(ctx, static_cast<std::size_t>(std::max<int64_t>(n * t, 1)) * sizeof(T));
    times_rows(ctx, *A, d, coef.as<const T>(), t, products.as<T>());
    std::vector<T> result = download(ctx, products.as<const T>(), n * t);
    const T* b = intercept.as<const T>();
    for (int64_t i = 0; i < n; ++i)
      for (int64_t k = 0; k < t; ++k) result[i * t + k] += b[k];
    const ArrayView view = one_target ? make_view(result.data(), coef.dtype(), Device{}, n)
                                      : make_view(result.data(), coef.dtype(), Device{}, n, t);
    detail::write_output(ctx, view, out, "predictions");
  });
}

ArraySpec linear_output_spec(const HostArray& coef, int64_t n_rows) {
  GPUML_EXPECT(n_rows >= 0, "n_rows must be >= 0, got " + std::to_string(n_rows));
  if (coef.spec().ndim == 1) return ArraySpec{coef.dtype(), 1, {n_rows, 0}};
  return ArraySpec{coef.dtype(), 2, {n_rows, coef.spec().shape[0]}};
}

void linear_predict(Context& ctx, const ArrayView& X, const HostArray& coef, const HostArray& intercept,
                    const ArrayView& out, const char* estimator) {
  check_matrix_shape(X);
  const bool one_target = coef.spec().ndim == 1;
  const int64_t d = one_target ? coef.spec().shape[0] : coef.spec().shape[1];
  const int64_t t = one_target ? 1 : coef.spec().shape[0];
  GPUML_EXPECT(X.shape[1] == d, "X has " + std::to_string(X.shape[1]) + " features, but " + estimator +
                                    " was fitted with " + std::to_string(d) + " features");
  const int64_t n = X.shape[0];
  detail::Staged staged = detail::stage(ctx, X, coef.dtype(), "X");
  detail::require_finite(ctx, staged.view, "X");
  with_float_type(coef.dtype(), [&](auto tag) {
    using T = decltype(tag);
    Buffer result(ctx, static_cast<std::size_t>(n * t) * sizeof(T));
    make_linear_backend<T>(ctx)->predict(staged.view.as<const T>(), n, d, coef.as<const T>(), intercept.as<const T>(), t,
                                         result.as<T>());
    const ArrayView view = one_target ? make_view(result.data(), coef.dtype(), ctx.device(), n)
                                      : make_view(result.data(), coef.dtype(), ctx.device(), n, t);
    detail::write_output(ctx, view, out, "predictions");
  });
}

HostArray take_converged(std::map<std::string, HostArray>& attributes, const std::string& kind) {
  const auto it = attributes.find("converged_");
  if (it == attributes.end()) return scalar_i64(1);
  HostArray converged = std::move(it->second);
  attributes.erase(it);
  GPUML_EXPECT(converged.dtype() == DType::int64 && converged.spec().ndim == 0 &&
                   (*converged.as<const int64_t>() == 0 || *converged.as<const int64_t>() == 1),
               kind + " model: converged_ must be an int64 scalar, 0 or 1");
  return converged;
}

void check_linear_attributes(const std::map<std::string, HostArray>& attributes, const std::vector<std::string>& names,
                             const std::string& kind) {
  const std::string where = kind + " model: ";
  for (const auto& entry : attributes)
    GPUML_EXPECT(std::find(names.begin(), names.end(), entry.first) != names.end(),
                 where + "unknown attribute '" + entry.first + "'");
  for (const std::string& name : names)
    GPUML_EXPECT(attributes.count(name) && !attributes.at(name).empty(), where + "attribute '" + name + "' is missing");

  auto all_finite = [](const HostArray& a) {
    return with_float_type(a.dtype(), [&](auto tag) {
      using T = decltype(tag);
      const T* p = a.as<const T>();
      const int64_t count = a.bytes() / sizeof(T);
      return std::all_of(p, p + count, [](T v) { return std::isfinite(v); });
    });
  };
  const HostArray& coef = attributes.at("coef_");
  const ArraySpec& cs = coef.spec();
  GPUML_EXPECT(is_floating(coef.dtype()) && (cs.ndim == 1 || cs.ndim == 2) && cs.shape[0] >= 1 &&
                   (cs.ndim == 1 || cs.shape[1] >= 1),
               where + "coef_ must be a float32/float64 array of shape (n_features,) or (n_targets, n_features)");
  GPUML_EXPECT(all_finite(coef), where + "coef_ contains NaN or infinity");
  const int64_t d = cs.ndim == 1 ? cs.shape[0] : cs.shape[1];

  const HostArray& intercept = attributes.at("intercept_");
  const bool intercept_ok = intercept.dtype() == coef.dtype() &&
                            (cs.ndim == 1 ? intercept.spec().ndim == 0
                                          : intercept.spec().ndim == 1 && intercept.spec().shape[0] == cs.shape[0]);
  GPUML_EXPECT(intercept_ok, where + "intercept_ must have coef_'s dtype and be 0-d (coef_ 1-d) or (n_targets,)");
  GPUML_EXPECT(all_finite(intercept), where + "intercept_ contains NaN or infinity");

  const HostArray& n_features = attributes.at("n_features_in_");
  GPUML_EXPECT(n_features.dtype() == DType::int64 && n_features.spec().ndim == 0 && *n_features.as<const int64_t>() == d,
               where + "n_features_in_ must be an int64 scalar equal to the width of coef_");

  if (attributes.count("rank_")) {
    const HostArray& rank = attributes.at("rank_");
    // -1: not computed (sparse X on the iterative route, fit_least_squares_sparse).
    GPUML_EXPECT(rank.dtype() == DType::int64 && rank.spec().ndim == 0 && *rank.as<const int64_t>() >= -1 &&
                     *rank.as<const int64_t>() <= d,
                 where + "rank_ must be an int64 scalar in [-1, n_features] (-1: not computed)");
  }
  if (attributes.count("singular_values_")) {
    const HostArray& s = attributes.at("singular_values_");
    GPUML_EXPECT(s.dtype() == coef.dtype() && s.spec().ndim == 1 && s.spec().shape[0] <= d && all_finite(s),
                 where + "singular_values_ must be a finite 1-d array of coef_'s dtype with at most n_features values");
  }
}

}  // namespace gpuml::detail

#pragma once
// The least-squares driver shared by LinearRegression and Ridge: validation and staging of
// X / y / sample_weight, centering and weighting through the backend primitives, the choice of
// solver, and the small dense solves on the host (Eigen). Written once for every backend.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/deferred.hpp"
#include "core/distributed.hpp"
#include "core/magnitudes.hpp"
#include "gpuml/core/array.hpp"
#include "gpuml/core/context.hpp"
#include "gpuml/core/sparse.hpp"
#include "linear_model/linear_backend.hpp"

namespace gpuml::detail {

// The single dispatch point between the linear-model backends.
template <typename T>
std::unique_ptr<LinearBackend<T>> make_linear_backend(const Context& ctx);

enum class LeastSquaresSolver {
  auto_eig,   // LinearRegression "auto": eig, falling back to svd when rank deficient or badly conditioned
  eig,        // normal equations, eigen-decomposed; rank deficiency is an error
  qr,         // Householder QR, triangular solve; rank deficiency is an error
  svd,        // SVD of R (n >= d) or pseudo-inverse of the Gram matrix (n < d): minimum norm
  cholesky,   // Ridge: (G + alpha I) by Cholesky; not positive definite: ridge_svd (scikit-learn's fallback)
  ridge_svd,  // Ridge: V diag(s / (s^2 + alpha)) U^T
  nonnegative,  // positive=True: coef >= 0, Lawson-Hanson on XᵀX + alpha I (nonnegative_quadratic.hpp)
};

struct LeastSquaresRequest {
  const char* estimator = "";  // "LinearRegression" or "Ridge", for messages
  LeastSquaresSolver solver = LeastSquaresSolver::auto_eig;
  bool fit_intercept = true;
  std::vector<double> alpha;   // Ridge: one value or one per target; empty: no penalty
  // LinearRegression's tol (scikit-learn 1.9's lstsq cond): the minimum-norm routes ("auto"'s
  // fallback and "svd") count singular values below lstsq_cond * s_max as zero, when that is
  // above the numerical cutoff. 0: the numerical cutoff alone.
  double lstsq_cond = 0.0;
  int64_t max_iter = 0;        // nonnegative: the active set's steps per target (<= 0: its default)
  double tol = 1e-4;           // nonnegative: the KKT tolerance, relative (NonnegativeOptions::tol)
  // The estimator's parameters every rank of a distributed fit must pass alike (its parameter
  // table's rank_fields).
  std::vector<RankField> rank_fields;
};

// Extreme magnitudes: see core/magnitudes.hpp (the Gram and QR routes check their squares).

// A fitted linear model as host arrays in X's float dtype (rank and n_features_in: int64).
struct LinearFit {
  HostArray coef;             // (d,) when y was 1-d, else (t, d)
  HostArray intercept;        // 0-d when y was 1-d, else (t,)
  std::shared_ptr<const DeferredArray> singular_values;  // (min(n, d),) descending, of the centered weighted X
  HostArray rank;             // 0-d
  HostArray n_features_in;    // 0-d
  HostArray converged;        // 0-d int64: 0 when an iterative solve (nonnegative) stopped at max_iter, else 1
};

// Distributed (the context's communicator): every rank passes its own rows and gets the fit of
// all rows; the ranks must agree on the shapes and the request, else every rank throws.
LinearFit fit_least_squares(Context& ctx, const ArrayView& X, const ArrayView& y, const ArrayView* sample_weight,
                            const LeastSquaresRequest& request);

// The Gram form of a weighted least-squares problem, for the coordinate-descent solvers
// (Lasso/ElasticNet): with A = √w (X − x̄) and B = √w (y − ȳ) as in fit_least_squares,
// gram = AᵀA (d x d), cross = AᵀB (d x t), y_sq_norm_k = |B_k|², all host double, row-major.
// With `rescale_weights`, the weights are first scaled to sum to n (scikit-learn's ElasticNet).
struct GramSystem {
  DType dtype = DType::float64;  // X's float dtype: that of the fitted attributes
  int64_t n = 0, d = 0, t = 0;
  bool y_is_1d = true;
  std::vector<double> gram, cross, y_sq_norm, x_mean, y_mean;  // means are 0 without intercept
};

// Distributed (the context's communicator): every rank passes its own rows and gets the system of
// all rows (n is theirs); the ranks must agree on the shapes, fit_intercept and `fields` (the
// caller's parameters), else every rank throws. `estimator` prefixes messages.
GramSystem gram_system(Context& ctx, const ArrayView& X, const ArrayView& y, const ArrayView* sample_weight,
                       bool fit_intercept, bool rescale_weights, const std::string& estimator = "the Gram system",
                       const std::vector<RankField>& fields = {});

// The Gram products of the weighted, exactly centered X from one pass of the backend over X
// (LinearBackend::shifted_gram): with A = √w (X − c), c the mean of the first kShiftRows rows
// rounded to T (no shift without `center`), the pass gives AᵀA, AᵀB and the sums S δ = Σ w (x − c);
// with δ = x̄ − c, the Gram matrix of the exactly centered A is AᵀA − S δδᵀ, and its products with
// an exactly centered B are AᵀB (as √wᵀB = 0). c is near x̄, so δ is small and nothing cancels:
// data far from the origin keep their precision. NaN or infinity in X shows in the sums, and
// overflow of the squares in the Gram matrix: both are named errors (`estimator` prefixes them).
struct CenteredGram {
  std::vector<double> gram;   // d x d, row-major, exactly symmetric
  std::vector<double> cross;  // d x t, row-major
  std::vector<double> mean;   // x̄ (d), zeros without `center`
  double weight_sum = 0.0;    // Σ w (n without weights)
};
inline constexpr int64_t kShiftRows = 4096;
// Its caller checks the size of the Gram matrix (check_gram_scale) once merged over the ranks.
template <typename T>
CenteredGram centered_gram(LinearBackend<T>& backend, const T* X, int64_t n, int64_t d, const T* w, const T* B, int64_t t,
                           bool center, const std::string& estimator);

// The largest diagonal entry of a d x d row-major matrix (NaN when one is NaN).
double largest_diagonal(const std::vector<double>& M, int64_t d);

// Whether XᵀX (d x d, merged over the ranks) is usable: squares within kSquaresRange<T> pass;
// outside it `rescalable` throws BadlyScaled, else overflow (infinity) is the named error
// "<estimator>: XᵀX overflows" and underflow passes (the caller has already rescaled).
template <typename T>
void check_gram_scale(const std::vector<double>& G, int64_t d, bool rescalable, const std::string& estimator);

// Distributed: this rank's means (x_mean (d), y_mean (t)) and, when given, its Gram products
// centered on them (gram d x d, cross d x t, row-major) become those of all ranks' rows,
// centered on the means of all rows, as a parallel variance merges:
//   gram = Σ_r [gram_r + W_r (x̄_r − x̄)(x̄_r − x̄)ᵀ],
//   cross = Σ_r [cross_r + (x̄_r − x̄)(W_r (ȳ_r − ȳ) + s_r)ᵀ],
// x̄ = Σ_r (W_r / W) x̄_r; weight_sum is this rank's W_r (its row count without weights);
// y_sums (t, or nullptr for zeros) are s_r = Σ w (y − ȳ_r) over this rank's rows as they were
// centered: zero but for the rounding of ȳ_r, which (x̄_r − x̄) would otherwise amplify when y
// has a large mean. Returns W and this rank's offsets x̄_r − x̄, ȳ_r − ȳ. One rank: nothing
// changes, bit for bit.
struct MergedSums {
  double total_weight = 0.0;
  std::vector<double> x_offset, y_offset;
};
MergedSums merge_centered_over_ranks(Comm& comm, double weight_sum, std::vector<double>& x_mean,
                                     std::vector<double>& y_mean, std::vector<double>* gram, std::vector<double>* cross,
                                     const std::vector<double>* y_sums = nullptr);

// Sparse X (CSR or CSC, host memory or a host copy; one rank), never densified. With an
// intercept, X is centered implicitly: x̄ = Xᵀw / Σw, and the Gram system of A = √w (X − x̄) is
// Xᵀ W X − (Σw) x̄ x̄ᵀ, XᵀW(y − ȳ) − x̄ Σ w (y − ȳ), from the sparse products (SparseMatrix). Up to
// kSparseGramFeatures features, the Gram routes of the dense driver solve it exactly ("qr" as
// "eig"; "svd" and the minimum-norm fallbacks from G's eigen-decomposition); above, conjugate
// gradients on the normal equations over the sparse products (scikit-learn's sparse_cg; the
// minimum-norm solution for rank-deficient X, as lsqr's), to a residual far below scikit-learn's
// tolerances; rank_ is then -1 and singular_values_ empty (not computed). gram_system_sparse
// (coordinate descent) needs the Gram matrix: wider X is unsupported there, named.
inline constexpr int64_t kSparseGramFeatures = 4096;
LinearFit fit_least_squares_sparse(Context& ctx, const SparseView& X, const ArrayView& y,
                                   const ArrayView* sample_weight, const LeastSquaresRequest& request);
GramSystem gram_system_sparse(Context& ctx, const SparseView& X, const ArrayView& y, const ArrayView* sample_weight,
                              bool fit_intercept, bool rescale_weights, const std::string& estimator);
// out = X coef^T + intercept for sparse X (any float dtype; computed in coef's).
void linear_predict_sparse(Context& ctx, const SparseView& X, const HostArray& coef, const HostArray& intercept,
                           const ArrayView& out, const char* estimator);

// What predict returns: (n,) or (n, t) in coef's dtype.
ArraySpec linear_output_spec(const HostArray& coef, int64_t n_rows);

// out = X coef^T + intercept, X checked against coef's width.
void linear_predict(Context& ctx, const ArrayView& X, const HostArray& coef, const HostArray& intercept,
                    const ArrayView& out, const char* estimator);

// Checks restored coef_ / intercept_ / n_features_in_ (and rank_ / singular_values_ when
// present in `names`); unknown or missing names are errors. `kind` prefixes messages.
// Removes converged_ from restored attributes and checks it (an int64 scalar, 0 or 1); absent (a
// model saved before positive=True existed, always a direct solve): 1.
HostArray take_converged(std::map<std::string, HostArray>& attributes, const std::string& kind);

void check_linear_attributes(const std::map<std::string, HostArray>& attributes, const std::vector<std::string>& names,
                             const std::string& kind);

}  // namespace gpuml::detail

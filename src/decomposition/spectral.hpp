#pragma once
// What PCA and TruncatedSVD share, written once over the least-squares backend primitives
// (src/linear_model/linear_backend.hpp): exact and randomized SVDs of a matrix in the context's
// memory, scikit-learn's svd_flip, and the linear maps behind transform / inverse_transform.
#include <cstdint>
#include <initializer_list>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "gpuml/core/array.hpp"
#include "gpuml/core/context.hpp"
#include "core/sparse_backend.hpp"
#include "linear_model/linear_backend.hpp"

namespace gpuml::detail {

// The leading singular triplets of a matrix A (n x d), right side only: s descending (count
// values) and Vt (count x d, row-major), both host double.
struct RightSvd {
  int64_t count = 0, d = 0;
  std::vector<double> s, Vt;
  // A Vᵀ's first projected_cols columns (n x projected_cols, the backend's memory) where the
  // driver was asked for them (randomized_svd's keep_projected: its U S), else empty; column signs are those
  // before svd_flip_rows (their variances are what callers read).
  Buffer projected;
  int64_t projected_cols = 0;
};

// The whole thin SVD: min(n, d) triplets. n >= d: R of a QR of A (backend), then the SVD of R on
// the host; n < d: the SVD of A itself on the host (it is no larger than a d x d matrix). A (in
// the backend's memory) is overwritten. `rescalable`: R's squares out of range throw BadlyScaled
// (least_squares.hpp).
template <typename T>
RightSvd exact_svd(Context& ctx, LinearBackend<T>& backend, T* A, int64_t n, int64_t d, bool rescalable = false);

// The `count` leading triplets by Halko, Martinsson and Tropp's randomized SVD (scikit-learn's
// randomized_svd): a Gaussian test matrix of count + n_oversamples columns drawn on the host from
// `seed` (so every backend makes the same draws), n_iter power iterations orthonormalized at
// each step, then the SVD of the small projected matrix on the host. When A's rank is below
// `count`, the missing triplets have s = 0 and rows completing Vt to an orthonormal set.
// The largest n_oversamples the estimators accept (checked where their params are read).
inline constexpr int64_t kMaxOversamples = int64_t{1} << 53;
template <typename T>
RightSvd randomized_svd(Context& ctx, LinearBackend<T>& backend, const T* A, int64_t n, int64_t d, int64_t count,
                        int64_t n_oversamples, int64_t n_iter, uint64_t seed);
// The same over A seen only through its products (a sparse X, say: core/sparse_backend.hpp);
// the backend does the dense work on the blocks. tolerance > 0: run to convergence, n_iter
// being the cap: stop once the span of the `count` leading Ritz vectors moves by at most
// `tolerance` (the sine of the largest principal angle) in an iteration ("arpack" on sparse X).
// keep_projected: also return A Vᵀ (RightSvd::projected), formed from the last product on the
// backend (cheaper than another pass over a sparse A); off, no copy of that product is kept.
template <typename T>
RightSvd randomized_svd(Context& ctx, LinearBackend<T>& backend, MatrixProducts<T>& A, int64_t n, int64_t d,
                        int64_t count, int64_t n_oversamples, int64_t n_iter, uint64_t seed, double tolerance,
                        bool keep_projected = false);

// "arpack" on A seen through its products (a sparse X): the randomized_svd above run to
// convergence over a block of 2 count + 10 vectors (converging at the rate (s_{2count+11} /
// s_count)² per iteration), or, with tol = 0 and n min(n, d)² <= 2^32, of min(n, d) vectors
// (the whole space, hence exact at once, at about a dense SVD's cost). The
// angle tolerance: scikit-learn's `tol` when set (> 0), else ~1e-2 sqrt(eps), where the
// vectors' own rounding starts to show.
template <typename T>
RightSvd converged_svd(Context& ctx, LinearBackend<T>& backend, MatrixProducts<T>& A, int64_t n, int64_t d,
                       int64_t count, uint64_t seed, double tol);

// A − 1μᵀ for A (n x d) known through its products and μ (d, host double): the implicitly
// centered matrix PCA needs of sparse X, never formed: (A − 1μᵀ)B = AB − 1(Bᵀμ)ᵀ, and, when μ is
// the mean of A's rows (the fit's case; transform only multiplies), (A − 1μᵀ)ᵀB = Aᵀ(B − 1mᵀ)
// for m the column means of B. The subtractions run in double before rounding to T.
template <typename T>
class CenteredProducts final : public MatrixProducts<T> {
 public:
  CenteredProducts(Context& ctx, LinearBackend<T>& backend, MatrixProducts<T>& A, int64_t n, std::vector<double> mean);
  void times(const T* B, int64_t t, T* out) override;
  void transpose_times(const T* B, int64_t t, T* out) override;

 private:
  Context& ctx_;
  LinearBackend<T>& backend_;
  MatrixProducts<T>& A_;
  int64_t n_;
  std::vector<double> mean_;
  Buffer mean_block_;  // μ in T, in the backend's memory
  Buffer centered_;    // transpose_times' centered B, kept between calls
};

// scikit-learn's svd_flip(u_based_decision=False): each row of Vt is negated when its entry of
// largest magnitude (the first such, on ties) is negative.
void svd_flip_rows(RightSvd& svd, int threads = 1);

// Keeps the first `count` triplets, padding with s = 0 and rows that complete Vt to an
// orthonormal set when there are fewer.
void truncate_svd(RightSvd& svd, int64_t count);

// |A|_F² in double (A n x d in the backend's memory), through gram on A viewed as a matrix of a
// few columns (the trace of its Gram matrix), so the sums run in double over chunks of rows.
template <typename T>
double squared_norm(LinearBackend<T>& backend, const T* A, int64_t n, int64_t d);

// out = ((X - center) coef^T + intercept): X (n x width) a caller array, coef t x width,
// center (width) and intercept (t) optional (empty), all host double, computed in `dtype`; out
// (n x t) a caller array. `estimator` and `fitted_what` name things in messages.
void apply_linear_map(Context& ctx, const ArrayView& X, DType dtype, const std::vector<double>& coef, int64_t t,
                      int64_t width, const std::vector<double>& center, const std::vector<double>& intercept,
                      const ArrayView& out, const std::string& estimator, const char* width_name);

// Throws invalid_argument `message` unless every value (of `vectors` and `scalars`) is finite
// once rounded to `dtype`: no fitted attribute holds infinity or NaN.
void expect_finite_in(DType dtype, std::initializer_list<const std::vector<double>*> vectors,
                      std::initializer_list<double> scalars, const std::string& message);

// A host array of `dtype` holding `values` (1-d) or values as rows x cols.
HostArray host_array(DType dtype, const std::vector<double>& values);
HostArray host_array(DType dtype, const std::vector<double>& values, int64_t rows, int64_t cols);
HostArray host_scalar(DType dtype, double value);
HostArray host_int64(int64_t value);
// The values of a float host array as doubles.
std::vector<double> host_values(const HostArray& a);

// Checks restored attributes: exactly `names`, float ones of one dtype and finite, with the
// shapes given (rows x cols; cols < 0: 1-d; rows < 0: 0-d). Returns that dtype.
struct AttributeShape {
  std::string name;
  int ndim;  // 0, 1 or 2; int64 scalars use ndim -1
  int64_t rows = 0, cols = 0;
};
DType check_restored(const std::map<std::string, HostArray>& attributes, const std::vector<AttributeShape>& shapes,
                     const std::string& kind);

}  // namespace gpuml::detail

// TruncatedSVD: the SVD of X itself (no centering), over the linear backend primitives (see
// spectral.hpp), with scikit-learn's explained variances: those of the columns of X Vᵀ, over the
// summed variances of X's columns (both with ddof = 0, both computed on centered copies).
#include "gpuml/decomposition/truncated_svd.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <tuple>

#include "core/distributed.hpp"
#include "core/param_table.hpp"
#include "decomposition/randomized_rows.hpp"
#include "core/registry.hpp"
#include "core/staging.hpp"
#include "core/trace.hpp"
#include "decomposition/spectral.hpp"
#include "gpuml/core/error.hpp"
#include "linear_model/least_squares.hpp"

namespace gpuml {

namespace {

const std::vector<std::string> kAttributeNames = {"components_", "explained_variance_", "explained_variance_ratio_",
                                                  "singular_values_", "n_features_in_"};

// TruncatedSVD's parameters, declared once (core/param_table.hpp), in scikit-learn's order.
const detail::ParamTable<TruncatedSVDParams>& params_table() {
  using namespace detail;
  using P = TruncatedSVDParams;
  static const ParamTable<P> table(
      "truncated_svd",
      joined<P>({{
          field("n_components", &P::n_components, {integer_in(1)}, "How many components to keep."),
          // "full": gpuml's older name for the exact SVD without arpack's n_components rule, kept
          // for code that used it (hidden: messages list only scikit-learn's choices).
          field("algorithm", &P::algorithm, {one_of({"arpack", "randomized"}), one_of({"full"}, true)},
                "\"randomized\": Halko et al.'s randomized SVD; \"arpack\": scikit-learn's rule (n_components < "
                "min(n_samples, n_features)), answered by the exact SVD (Householder QR, then the SVD of R)."),
          field("n_iter", &P::n_iter, {integer_in(0)}, "The randomized SVD's power iterations."),
      }, randomized_svd_rows<P>(), {
          field("tol", &P::tol, {number_in(0)},
                "\"arpack\" on sparse X: the subspace iteration's tolerance on the angle the leading vectors "
                "move by; 0: exact where n_samples min(n_samples, n_features)^2 <= 2^32, else ~1e-2 sqrt(eps). "
                "Dense X: without effect (\"arpack\" is the exact SVD).")
              .per_rank(),
      }}),
      [](const P& p) {
        // n_oversamples is summed with n_components in int64.
        GPUML_EXPECT(p.n_oversamples <= detail::kMaxOversamples,
                     "truncated_svd parameter 'n_oversamples' must be at most 2^53, got " +
                         std::to_string(p.n_oversamples));
      });
  return table;
}

// scikit-learn's rules and messages: ARPACK (scipy's svds) finds fewer than min(n_samples,
// n_features) triplets; the randomized SVD at most n_features.
void check_n_components(const TruncatedSVDParams& params, int64_t n, int64_t d) {
  const int64_t k = params.n_components;
  GPUML_EXPECT(n >= 2, "TruncatedSVD needs at least 2 samples (explained_variance_ratio_ divides by the variance of X), "
                       "got n_samples=" + std::to_string(n));
  if (params.algorithm == "arpack")
    GPUML_EXPECT(k < std::min(n, d), "TruncatedSVD: `k` must be an integer satisfying `0 < k < min(A.shape)`. "
                                     "(algorithm='arpack': n_components=" + std::to_string(k) +
                                         ", min(n_samples, n_features)=" + std::to_string(std::min(n, d)) + ")");
  GPUML_EXPECT(k <= d, "TruncatedSVD: n_components(" + std::to_string(k) + ") must be <= n_features(" +
                           std::to_string(d) + ").");
}

// The variances of the k columns of P = X Vᵀ (n x k, the backend's memory), ddof = 0: P's
// column means, then the squared norms of the centered copy (no cancellation in T).
template <typename T>
std::vector<double> column_variances(Context& ctx, detail::LinearBackend<T>& backend, const T* P, int64_t n, int64_t k) {
  std::vector<double> mean(static_cast<std::size_t>(k)), G(static_cast<std::size_t>(k * k)), variance;
  backend.weighted_means(P, n, k, nullptr, mean.data());
  Buffer centered(ctx, static_cast<std::size_t>(std::max<int64_t>(n * k, 1)) * sizeof(T));
  backend.center_scale(P, n, k, mean.data(), nullptr, centered.as<T>());
  backend.gram(centered.as<const T>(), nullptr, n, k, 0, G.data(), nullptr);
  for (int64_t i = 0; i < k; ++i) variance.push_back(G[i * k + i] / static_cast<double>(n));
  return variance;
}

// components_, explained_variance_, explained_variance_ratio_ and singular_values_ of a fit (dense
// or sparse), refused when they overflow X's dtype.
std::tuple<HostArray, HostArray, HostArray, HostArray> fitted_arrays(DType dtype, const detail::RightSvd& svd,
                                                                     const std::vector<double>& variance,
                                                                     const std::vector<double>& ratio, int64_t k,
                                                                     int64_t d) {
  detail::expect_finite_in(dtype, {&variance, &svd.s}, {},
                           "TruncatedSVD: explained_variance_ or singular_values_ overflow " +
                               std::string(dtype_name(dtype)) + ": X's values are too large");
  return {detail::host_array(dtype, svd.Vt, k, d), detail::host_array(dtype, variance),
          detail::host_array(dtype, ratio), detail::host_array(dtype, svd.s)};
}

}  // namespace

TruncatedSVD::TruncatedSVD(TruncatedSVDParams params) : params_(std::move(params)) { params_table().check(params_); }

TruncatedSVD& TruncatedSVD::fit(Context& ctx, const ArrayView& X) {
  // Distributed (the context's communicator): every rank passes its own rows; the ranks agree on
  // the shapes and parameters (else every rank throws), the checks of X pass on every rank or
  // fail on all, and the model is that of all rows. Over several ranks both algorithms take the
  // Gram route: XᵀX summed over the ranks and eigen-decomposed on every rank (s = √λ; its
  // relative accuracy is eps cond(X)², not eps cond(X), on the smallest values kept), which is
  // "full"'s answer up to that rounding and what "randomized" approximates (random_state is then
  // unused). The variances use the mean of all rows and sums over the ranks.
  Comm& comm = ctx.comm();
  int64_t local_n = 0, d = 0;
  const int64_t k = params_.n_components;
  DType dtype = DType::float64;
  detail::Staged Xs;
  detail::Trace trace(ctx, "TruncatedSVD");
  detail::check_on_every_rank(comm, "TruncatedSVD", "checking X", [&] {
    detail::check_matrix_shape(X);
    local_n = X.shape[0];
    d = X.shape[1];
    dtype = detail::float_dtype_for(X.dtype);
    Xs = detail::stage(ctx, X, dtype, "X");
    detail::require_finite(ctx, Xs.view, "X");
    trace.mark("stage and check X");
  });
  std::vector<detail::RankField> fields = {{"n_features", d}, {"dtype (0 float32, 1 float64)", static_cast<int64_t>(dtype)}};
  for (const detail::RankField& f : params_table().rank_fields(params_)) fields.push_back(f);
  const detail::RowCounts rows = detail::agree_on_every_rank(comm, "TruncatedSVD", local_n, fields);
  const int64_t n = rows.total;
  check_n_components(params_, n, d);

  detail::RightSvd svd;
  std::vector<double> variance(static_cast<std::size_t>(k));
  double total_variance = 0.0;
  // One fit of X as given, or times 2^exponent (extreme magnitudes, least_squares.hpp: where
  // `rescalable`, squares out of range throw BadlyScaled, and X is scaled and fitted again).
  auto compute = [&](const ArrayView& Xv, bool rescalable) {
    detail::with_float_type(dtype, [&](auto tag) {
      using T = decltype(tag);
      auto backend = detail::make_linear_backend<T>(ctx);
      const T* A = Xv.as<const T>();
      if (comm.size() > 1) {
        std::vector<double> G(static_cast<std::size_t>(d * d)), eigenvalues(static_cast<std::size_t>(d));
        backend->gram(A, nullptr, local_n, d, 0, G.data(), nullptr);
        comm.allreduce_sum(G.data(), d * d);
        detail::check_gram_scale<T>(G, d, rescalable, "TruncatedSVD");
        svd.count = k;
        svd.d = d;
        svd.Vt.resize(static_cast<std::size_t>(k * d));
        backend->symmetric_eigen(G.data(), d, k, eigenvalues.data(), svd.Vt.data());  // largest first
        for (int64_t i = 0; i < k; ++i) svd.s.push_back(std::sqrt(std::max(eigenvalues[d - 1 - i], 0.0)));
      } else if (params_.algorithm != "randomized") {  // "arpack" and "full": the exact SVD
        Buffer work(ctx, static_cast<std::size_t>(n * d) * sizeof(T));
        backend->center_scale(A, n, d, nullptr, nullptr, work.as<T>());  // a copy: the QR overwrites it
        svd = detail::exact_svd(ctx, *backend, work.as<T>(), n, d, rescalable);
        detail::truncate_svd(svd, k);
      } else {
        svd = detail::randomized_svd(ctx, *backend, A, n, d, k, params_.n_oversamples, params_.n_iter,
                                     params_.random_state.value_or(ctx.seed()));
      }
      // The QRs' squares (exact and randomized) overflow or underflow with s_max² (NaN or 0 when
      // they broke down).
      if (rescalable && !detail::squares_in_range<T>(svd.s.empty() ? 1.0 : svd.s[0] * svd.s[0]))
        throw detail::BadlyScaled{};
      detail::svd_flip_rows(svd, ctx.n_threads());
      trace.mark("svd");

      // Both variances from a centered copy (no cancellation in T when the mean is large): the total,
      // |X - x̄|_F² / n, and each column of (X - x̄) Vᵀ (whose mean is 0), its squared norm / n.
      // Over several ranks: x̄ of all rows, and the squared norms summed over the ranks.
      std::vector<double> mean(static_cast<std::size_t>(d)), no_targets;
      backend->weighted_means(A, local_n, d, nullptr, mean.data());
      detail::merge_centered_over_ranks(comm, static_cast<double>(local_n), mean, no_targets, nullptr, nullptr);
      Buffer centered(ctx, static_cast<std::size_t>(local_n * d) * sizeof(T));
      backend->center_scale(A, local_n, d, mean.data(), nullptr, centered.as<T>());
      const std::vector<T> coef(svd.Vt.begin(), svd.Vt.end());
      Buffer projected(ctx, static_cast<std::size_t>(local_n * k) * sizeof(T));
      backend->predict(centered.as<const T>(), local_n, d, coef.data(), nullptr, k, projected.as<T>());
      std::vector<double> G(static_cast<std::size_t>(k * k));
      backend->gram(projected.as<const T>(), nullptr, local_n, k, 0, G.data(), nullptr);
      std::vector<double> sums(static_cast<std::size_t>(k + 1));  // the k squared norms, then the total
      for (int64_t i = 0; i < k; ++i) sums[i] = G[i * k + i];
      sums[k] = detail::squared_norm(*backend, centered.as<const T>(), local_n, d);
      comm.allreduce_sum(sums.data(), k + 1);
      total_variance = sums[k] / static_cast<double>(n);
      for (int64_t i = 0; i < k; ++i) variance[i] = sums[i] / static_cast<double>(n);
      trace.mark("variances");
    });
  };
  const int exponent = detail::with_rescaling(ctx, Xs.view, compute);

  std::vector<double> ratio;
  for (double v : variance) ratio.push_back(total_variance > 0 ? v / total_variance : 0.0);
  // Back from the units of 2^exponent X: ratios and components are the same.
  for (double& v : variance) v = std::ldexp(v, -2 * exponent);
  for (double& v : svd.s) v = std::ldexp(v, -exponent);
  std::tie(components_, explained_variance_, explained_variance_ratio_, singular_values_) =
      fitted_arrays(dtype, svd, variance, ratio, k, d);
  n_features_in_ = detail::host_int64(d);
  return *this;
}

void TruncatedSVD::fit_sparse(Context& ctx, const SparseView& X, const ArrayView* /*y*/, const ArrayView* sample_weight) {
  GPUML_EXPECT(sample_weight == nullptr, "TruncatedSVD.fit takes no sample_weight");
  if (ctx.comm().size() > 1)
    throw_error(ErrorCode::unsupported, "TruncatedSVD: sparse X over several ranks is not written yet");
  const int64_t n = X.rows(), d = X.cols(), k = params_.n_components;
  GPUML_EXPECT(n >= 1 && d >= 1, "X (sparse matrix) has shape (" + std::to_string(n) + ", " + std::to_string(d) +
                                     "): at least 1 sample and 1 feature are required");
  check_n_components(params_, n, d);
  const DType dtype = X.dtype == DType::float32 ? DType::float32 : DType::float64;
  detail::Trace trace(ctx, "TruncatedSVD (sparse)");
  detail::RightSvd svd;
  std::vector<double> variance;
  double total_variance = 0.0;
  detail::with_float_type(dtype, [&](auto tag) {
    using T = decltype(tag);
    auto A = detail::make_sparse_matrix<T>(ctx, X, "X");
    auto backend = detail::make_linear_backend<T>(ctx);
    trace.mark("check and canonicalize X");
    const uint64_t seed = params_.random_state.value_or(ctx.seed());
    if (params_.algorithm == "randomized") {
      svd = detail::randomized_svd(ctx, *backend, *A, n, d, k, params_.n_oversamples, params_.n_iter, seed, 0.0,
                                   /*keep_projected=*/true);
    } else {
      svd = detail::converged_svd(ctx, *backend, *A, n, d, k, seed, params_.tol);  // "arpack" (and "full")
    }
    detail::svd_flip_rows(svd, ctx.n_threads());
    trace.mark("svd");
    // explained_variance_: the columns of X Vᵀ; the total: Σ_j E[x_j²] − E[x_j]² from X's column
    // sums and sums of squares (what scikit-learn's mean_variance_axis gives).
    Buffer projected = std::move(svd.projected);  // the randomized SVD's U S, else X Vᵀ by the sparse product
    if (svd.projected_cols != k) {
      projected = Buffer(ctx, static_cast<std::size_t>(std::max<int64_t>(n * k, 1)) * sizeof(T));
      const std::vector<T> coef(svd.Vt.begin(), svd.Vt.end());
      detail::times_rows(ctx, *A, d, coef.data(), k, projected.as<T>());
    }
    variance = column_variances(ctx, *backend, projected.as<const T>(), n, k);
    std::vector<double> sums(static_cast<std::size_t>(d)), squares(static_cast<std::size_t>(d));
    A->column_moments(sums.data(), squares.data());
    for (int64_t j = 0; j < d; ++j) {
      const double mean = sums[j] / static_cast<double>(n);
      total_variance += std::max(squares[j] / static_cast<double>(n) - mean * mean, 0.0);
    }
    trace.mark("variances");
  });
  std::vector<double> ratio;
  for (double v : variance) ratio.push_back(total_variance > 0 ? v / total_variance : 0.0);
  std::tie(components_, explained_variance_, explained_variance_ratio_, singular_values_) =
      fitted_arrays(dtype, svd, variance, ratio, k, d);
  n_features_in_ = detail::host_int64(d);
}

void TruncatedSVD::transform_sparse(Context& ctx, const SparseView& X, const ArrayView& out) const {
  require_fitted();
  const int64_t k = components_.spec().shape[0], d = components_.spec().shape[1], n = X.rows();
  GPUML_EXPECT(X.cols() == d, "X has " + std::to_string(X.cols()) + " features, but TruncatedSVD is expecting " +
                                  std::to_string(d) + " features as input");
  // Computed in the model's dtype, as the dense transform (X's values are converted once).
  const DType dtype = components_.dtype();
  detail::with_float_type(dtype, [&](auto tag) {
    using T = decltype(tag);
    auto A = detail::make_sparse_matrix_as<T>(ctx, X, "X");
    const std::vector<double> components = detail::host_values(components_);
    const std::vector<T> coef(components.begin(), components.end());
    Buffer result(ctx, static_cast<std::size_t>(std::max<int64_t>(n * k, 1)) * sizeof(T));
    detail::times_rows(ctx, *A, d, coef.data(), k, result.as<T>());
    detail::write_output(ctx, make_view(result.data(), dtype, ctx.device(), n, k), out, "transformed X");
  });
}

void TruncatedSVD::fit(Context& ctx, const ArrayView& X, const ArrayView* /*y*/, const ArrayView* sample_weight) {
  GPUML_EXPECT(sample_weight == nullptr, "TruncatedSVD.fit takes no sample_weight");
  fit(ctx, X);
}

ArraySpec TruncatedSVD::output_spec(const std::string& method, int64_t n_rows) const {
  if (method == "transform") {
    require_fitted();
    GPUML_EXPECT(n_rows >= 0, "n_rows must be >= 0, got " + std::to_string(n_rows));
    return ArraySpec{components_.dtype(), 2, {n_rows, components_.spec().shape[0]}};
  }
  return Estimator::output_spec(method, n_rows);
}

ArraySpec TruncatedSVD::inverse_transform_spec(int64_t n_rows) const {
  require_fitted();
  GPUML_EXPECT(n_rows >= 0, "n_rows must be >= 0, got " + std::to_string(n_rows));
  return ArraySpec{components_.dtype(), 2, {n_rows, n_features_in()}};
}

void TruncatedSVD::transform(Context& ctx, const ArrayView& X, const ArrayView& out) const {
  require_fitted();
  const int64_t k = components_.spec().shape[0], d = components_.spec().shape[1];
  detail::apply_linear_map(ctx, X, components_.dtype(), detail::host_values(components_), k, d, {}, {}, out,
                           "TruncatedSVD", "features");
}

void TruncatedSVD::inverse_transform(Context& ctx, const ArrayView& X, const ArrayView& out) const {
  require_fitted();
  const int64_t k = components_.spec().shape[0], d = components_.spec().shape[1];
  const std::vector<double> components = detail::host_values(components_);
  std::vector<double> coef(static_cast<std::size_t>(d * k));
  for (int64_t i = 0; i < k; ++i)
    for (int64_t j = 0; j < d; ++j) coef[j * k + i] = components[i * d + j];
  detail::apply_linear_map(ctx, X, components_.dtype(), coef, d, k, {}, {}, out, "TruncatedSVD", "components");
}

const HostArray& TruncatedSVD::components() const { return attribute("components_"); }
const HostArray& TruncatedSVD::explained_variance() const { return attribute("explained_variance_"); }
const HostArray& TruncatedSVD::explained_variance_ratio() const { return attribute("explained_variance_ratio_"); }
const HostArray& TruncatedSVD::singular_values() const { return attribute("singular_values_"); }
int64_t TruncatedSVD::n_features_in() const { return *attribute("n_features_in_").as<const int64_t>(); }

std::vector<std::string> TruncatedSVD::attribute_names() const { return kAttributeNames; }

const HostArray& TruncatedSVD::attribute(const std::string& name) const {
  const std::array<const HostArray*, 5> arrays = {&components_, &explained_variance_, &explained_variance_ratio_,
                                                  &singular_values_, &n_features_in_};
  for (std::size_t i = 0; i < kAttributeNames.size(); ++i) {
    if (kAttributeNames[i] != name) continue;
    require_fitted();
    return *arrays[i];
  }
  throw_error(ErrorCode::invalid_argument, "truncated_svd has no attribute '" + name + "'");
}

void TruncatedSVD::restore(std::map<std::string, HostArray> attributes) {
  auto it = attributes.find("components_");
  GPUML_EXPECT(it != attributes.end() && it->second.spec().ndim == 2,
               "truncated_svd model: attribute 'components_' is missing or not 2-d");
  const int64_t k = it->second.spec().shape[0], d = it->second.spec().shape[1];
  detail::check_restored(attributes,
                         {{"components_", 2, k, d},
                          {"explained_variance_", 1, k},
                          {"explained_variance_ratio_", 1, k},
                          {"singular_values_", 1, k},
                          {"n_features_in_", -1}},
                         kind());
  GPUML_EXPECT(*attributes.at("n_features_in_").as<const int64_t>() == d,
               "truncated_svd model: n_features_in_ must match the width of components_");
  components_ = std::move(attributes.at("components_"));
  explained_variance_ = std::move(attributes.at("explained_variance_"));
  explained_variance_ratio_ = std::move(attributes.at("explained_variance_ratio_"));
  singular_values_ = std::move(attributes.at("singular_values_"));
  n_features_in_ = std::move(attributes.at("n_features_in_"));
}

std::string TruncatedSVD::get_params_json() const { return params_table().write(params_).dump(); }

namespace detail {

std::unique_ptr<Estimator> truncated_svd_from_params(const nlohmann::json& params) {
  return std::make_unique<TruncatedSVD>(params_table().read(params));
}

nlohmann::json truncated_svd_params_schema() { return params_table().schema(); }

}  // namespace detail

}  // namespace gpuml

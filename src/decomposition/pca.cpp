// PCA: validation, the choice of solver, and the three solvers written once over the linear
// backend primitives (see spectral.hpp); scikit-learn's formulas for every fitted attribute.
//
// Every solver centers X into a working copy first (x̄ accumulated in double): the products are
// then formed on data of zero mean, so a large mean (1e4 in float32) costs no precision. The
// covariance is never formed as XᵀX − n x̄x̄ᵀ.
#define EIGEN_DONT_PARALLELIZE  // as in least_squares.cpp: all library units agree
#include "gpuml/decomposition/pca.hpp"

#include <Eigen/Dense>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <numeric>

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

const std::vector<std::string> kAttributeNames = {
    "components_", "explained_variance_", "explained_variance_ratio_", "singular_values_", "mean_",
    "noise_variance_", "n_components_", "n_features_in_", "n_samples_"};

bool is_integer(double v) { return std::floor(v) == v; }

// n_components is stored as a double: integers up to 2^53, where doubles still hold every
// integer (get_params writes it as one).
constexpr int64_t kMaxExactInteger = int64_t{1} << 53;

// PCA's parameters, declared once (core/param_table.hpp), in scikit-learn's order.
const detail::ParamTable<PCAParams>& params_table() {
  using namespace detail;
  using P = PCAParams;
  static const ParamTable<P> table(
      "pca",
      joined<P>({{
          ParamRow<P>{"n_components", {integer_in(0), number_in(0, 1, "neither"), one_of({"mle"}), null_form()},
                      "How many components to keep: an integer (0 with \"full\" and \"covariance_eigh\" only); a "
                      "fraction in (0, 1), the fewest whose explained variance ratio sums above it; \"mle\", "
                      "Minka's estimate (\"full\" and \"covariance_eigh\" only); null: min(n_samples, "
                      "n_features), one less for \"arpack\".",
                      [](P& p, const nlohmann::json& v) {
                        p.n_components_mle = v.is_string();
                        p.n_components.reset();
                        if (!v.is_number()) return;
                        GPUML_EXPECT(!v.is_number_integer() || v.get<int64_t>() <= kMaxExactInteger,
                                     "pca parameter 'n_components' must be at most 2^53, got " + v.dump());
                        p.n_components = v.get<double>();
                      },
                      [](const P& p) -> nlohmann::json {
                        if (p.n_components_mle) return "mle";
                        if (!p.n_components) return nullptr;
                        const double k = *p.n_components;  // integers as integers; the forms judge the rest
                        if (std::isfinite(k) && is_integer(k) && std::fabs(k) <= 9.2e18) return static_cast<int64_t>(k);
                        return k;
                      }},
          field("copy", &P::copy, {boolean()}, "Accepted, without effect: gpuml never writes to X.").per_rank(),
          field("whiten", &P::whiten, {boolean()},
                "Divides the projections by sqrt(explained_variance_), for outputs of unit variance."),
          field("svd_solver", &P::svd_solver, {one_of({"auto", "full", "covariance_eigh", "arpack", "randomized"})},
                "\"covariance_eigh\": eigen-decomposition of the centered covariance (one pass over X); \"full\": "
                "the SVD of R from a QR of the centered X; \"arpack\": scikit-learn's rules for it, answered by "
                "the exact SVD (sparse X: a subspace iteration run to convergence); \"randomized\": Halko et "
                "al.'s; \"auto\": scikit-learn's rule (\"arpack\" for sparse X)."),
          field("tol", &P::tol, {number_in(0)},
                "\"arpack\" on sparse X: the subspace iteration's tolerance on the angle the leading vectors "
                "move by; 0: exact where n_samples min(n_samples, n_features)^2 <= 2^32, else ~1e-2 sqrt(eps). "
                "Dense X: without effect (exact answers).")
              .per_rank(),
          ParamRow<P>{"iterated_power", {one_of({"auto"}), integer_in(0)},
                      "The randomized solver's power iterations; \"auto\": 7 when n_components < 0.1 "
                      "min(n_samples, n_features), else 4.",
                      [](P& p, const nlohmann::json& v) {
                        p.iterated_power = v.is_string() ? -1 : field_from_json<int64_t>(v);
                      },
                      [](const P& p) {
                        return p.iterated_power == -1 ? nlohmann::json("auto") : nlohmann::json(p.iterated_power);
                      }},
      }, randomized_svd_rows<P>()}),
      [](const P& p) {
        GPUML_EXPECT(!(p.n_components_mle && p.n_components),
                     "pca parameter 'n_components' is either a number or \"mle\", not both");
        GPUML_EXPECT(!p.n_components || *p.n_components <= static_cast<double>(kMaxExactInteger),
                     "pca parameter 'n_components' must be at most 2^53, got " +
                         nlohmann::json(*p.n_components).dump());
        GPUML_EXPECT(p.n_oversamples <= detail::kMaxOversamples,
                     "pca parameter 'n_oversamples' must be at most 2^53, got " + std::to_string(p.n_oversamples));
      });
  return table;
}

// scikit-learn's "auto" rule (PCA._fit).
std::string resolve_solver(const std::string& solver, int64_t n, int64_t d, double k, bool mle) {
  if (solver != "auto") return solver;
  if (d <= 1000 && n >= 10 * d) return "covariance_eigh";
  if (std::max(n, d) <= 500 || mle) return "full";
  if (k >= 1 && k < 0.8 * static_cast<double>(std::min(n, d))) return "randomized";
  return "full";
}

// n_components as Python's repr writes it (3, 0.5), for messages worded as scikit-learn's.
std::string python_number(double v) {
  if (is_integer(v) && std::abs(v) < 1e17) return std::to_string(static_cast<int64_t>(v));
  char text[32];
  for (int digits = 1; digits <= 17; ++digits) {  // the shortest form that reads back as v
    std::snprintf(text, sizeof text, "%.*g", digits, v);
    if (std::strtod(text, nullptr) == v) break;
  }
  return text;
}

// Minka's log-likelihood of a rank-`rank` model of `spectrum` (the explained variances, all
// n_features of them, descending), as scikit-learn's _assess_dimension.
double assess_dimension(const std::vector<double>& spectrum, int64_t rank, int64_t n_samples) {
  const int64_t d = static_cast<int64_t>(spectrum.size());
  const double n = static_cast<double>(n_samples), eps = 1e-15;
  // A rank ending on a negligible eigenvalue cannot be the best, and its terms would take the
  // log of ~0.
  if (spectrum[rank - 1] < eps) return -std::numeric_limits<double>::infinity();
  double pu = -static_cast<double>(rank) * std::log(2.0);
  for (int64_t i = 1; i <= rank; ++i) {
    const double half = static_cast<double>(d - i + 1) / 2.0;
    pu += std::lgamma(half) - std::log(M_PI) * half;
  }
  double pl = 0.0;
  for (int64_t i = 0; i < rank; ++i) pl += std::log(spectrum[i]);
  pl = -pl * n / 2.0;
  double tail = 0.0;
  for (int64_t i = rank; i < d; ++i) tail += spectrum[i];
  const double v = std::max(eps, tail / static_cast<double>(d - rank));
  const double pv = -std::log(v) * n * static_cast<double>(d - rank) / 2.0;
  const double r = static_cast<double>(rank);
  const double m = static_cast<double>(d) * r - r * (r + 1.0) / 2.0;
  const double pp = std::log(2.0 * M_PI) * (m + r) / 2.0;
  double pa = 0.0;
  for (int64_t i = 0; i < rank; ++i) {
    const double inverse_i = 1.0 / spectrum[i];
    for (int64_t j = i + 1; j < d; ++j) {
      const double inverse_j = 1.0 / (j < rank ? spectrum[j] : v);  // the tail's eigenvalues replaced by v
      pa += std::log((spectrum[i] - spectrum[j]) * (inverse_j - inverse_i)) + std::log(n);
    }
  }
  return pu + pl + pv + pp - pa / 2.0 - r * std::log(n) / 2.0;
}

// The rank in [1, n_features - 1] of the largest likelihood (the first on ties), as
// scikit-learn's _infer_dimension; 0 when there is a single feature (its argmax over [-inf]).
int64_t infer_dimension(const std::vector<double>& spectrum, int64_t n_samples) {
  int64_t best = 0;
  double best_ll = -std::numeric_limits<double>::infinity();
  for (int64_t rank = 1; rank < static_cast<int64_t>(spectrum.size()); ++rank) {
    const double ll = assess_dimension(spectrum, rank, n_samples);
    if (std::isnan(ll)) return rank;  // NumPy's argmax returns the first NaN
    if (ll > best_ll) {
      best_ll = ll;
      best = rank;
    }
  }
  return best;
}

// What a fit computes, after scikit-learn's checks (PCA._fit, _fit_full, _fit_truncated).
struct ComponentRequest {
  std::string solver;     // after "auto"
  double requested = 0;   // n_components as a number (unused with mle)
  bool mle = false, fraction = false, exact = false;
};

// scikit-learn's choices and checks, with its messages. Sparse X: "auto" is "arpack".
ComponentRequest plan_components(const PCAParams& params, int64_t n, int64_t d, bool sparse) {
  const int64_t min_nd = std::min(n, d);
  ComponentRequest plan;
  plan.mle = params.n_components_mle;
  const std::string chosen = sparse && params.svd_solver == "auto" ? "arpack" : params.svd_solver;
  // scikit-learn's default: every component, one less for arpack (it cannot find them all).
  plan.requested = params.n_components.value_or(static_cast<double>(chosen == "arpack" ? min_nd - 1 : min_nd));
  plan.solver = resolve_solver(chosen, n, d, plan.requested, plan.mle);
  plan.exact = plan.solver == "full" || plan.solver == "covariance_eigh";
  plan.fraction = !plan.mle && plan.requested > 0 && plan.requested < 1;
  const std::string with_solver = " with svd_solver='" + plan.solver + "'";
  const std::string between = " must be between " + std::string(plan.exact ? "0" : "1") +
                              " and min(n_samples, n_features)=" + std::to_string(min_nd) + with_solver;
  if (plan.exact && plan.mle)
    GPUML_EXPECT(n >= d, "PCA: n_components='mle' is only supported if n_samples >= n_features");
  else if (plan.mle)
    throw_error(ErrorCode::invalid_argument, "PCA: n_components='mle' cannot be a string" + with_solver);
  else
    GPUML_EXPECT((plan.exact || plan.requested >= 1) && plan.requested <= static_cast<double>(min_nd),
                 "PCA: n_components=" + python_number(plan.requested) + between);
  GPUML_EXPECT(plan.solver != "arpack" || plan.requested < static_cast<double>(min_nd),
               "PCA: n_components=" + python_number(plan.requested) +
                   " must be strictly less than min(n_samples, n_features)=" + std::to_string(min_nd) + with_solver);
  return plan;
}

// A solver's answer before n_components is settled: the triplets, X's mean, and either every
// component's explained variance (exact solvers) or the total variance (truncated ones: arpack on
// sparse X, randomized).
struct SpectralFit {
  detail::RightSvd svd;
  std::vector<double> mean, variance_all;
  double total_variance = 0.0;
};

// "covariance_eigh" from the centered Gram matrix G (d x d; overwritten by the covariance):
// every eigenvalue (the variances), and the vectors of the components kept (all of them when a
// variance fraction or the MLE decides how many).
template <typename T>
void eigen_of_centered_gram(detail::LinearBackend<T>& backend, std::vector<double>& G, int64_t d, double dof,
                            const ComponentRequest& plan, SpectralFit& fit) {
  for (double& g : G) g /= dof;  // the covariance
  const int64_t vectors =
      plan.fraction || plan.mle ? d : std::min<int64_t>(d, static_cast<int64_t>(plan.requested));
  std::vector<double> eigenvalues(static_cast<std::size_t>(d));
  fit.svd.count = vectors;
  fit.svd.d = d;
  fit.svd.Vt.resize(static_cast<std::size_t>(vectors * d));
  backend.symmetric_eigen(G.data(), d, vectors, eigenvalues.data(), fit.svd.Vt.data());  // largest first
  fit.svd.s.resize(static_cast<std::size_t>(d));
  fit.variance_all.resize(static_cast<std::size_t>(d));
  for (int64_t i = 0; i < d; ++i) {  // descending; rounding-negative eigenvalues are 0, as in scikit-learn
    const double lambda = std::max(eigenvalues[d - 1 - i], 0.0);
    fit.variance_all[i] = lambda;
    fit.svd.s[i] = std::sqrt(lambda * dof);
  }
}

// The fitted attributes (named as PCA::attribute_names) from a solver's answer, with
// scikit-learn's formulas: n_components settled (MLE, variance fraction), noise_variance_, and
// everything back from the units of 2^exponent X.
std::map<std::string, HostArray> fitted_attributes(const ComponentRequest& plan, SpectralFit fit, int64_t n,
                                                   int64_t d, DType dtype, int exponent) {
  const int64_t min_nd = std::min(n, d);
  const double dof = static_cast<double>(n - 1);
  detail::svd_flip_rows(fit.svd);
  int64_t k = plan.mle ? 0 : static_cast<int64_t>(plan.requested);
  double noise_variance = 0.0;
  std::vector<double> variance, ratio;
  if (fit.variance_all.empty()) {  // truncated: the variances of the triplets found, over the total
    const double total = fit.total_variance;
    for (double s : fit.svd.s) variance.push_back(s * s / dof);
    for (double v : variance) ratio.push_back(total > 0 ? v / total : 0.0);
    if (k < min_nd)
      noise_variance = (total - std::accumulate(variance.begin(), variance.end(), 0.0)) / static_cast<double>(min_nd - k);
  } else {
    const std::vector<double>& all = fit.variance_all;
    const double total = std::accumulate(all.begin(), all.end(), 0.0);
    std::vector<double> ratio_all;
    for (double v : all) ratio_all.push_back(total > 0 ? v / total : 0.0);
    if (plan.mle) {
      k = infer_dimension(all, n);
    } else if (plan.fraction) {  // scikit-learn: searchsorted(cumsum(ratio), fraction, side="right") + 1
      double cumulative = 0.0;
      k = 1;
      for (std::size_t i = 0; i + 1 < ratio_all.size(); ++i) {
        cumulative += ratio_all[i];
        if (cumulative <= plan.requested) k = static_cast<int64_t>(i) + 2;
        else break;
      }
      k = std::min(k, min_nd);
    }
    if (k < min_nd)
      noise_variance = std::accumulate(all.begin() + k, all.end(), 0.0) / static_cast<double>(all.size() - k);
    variance.assign(all.begin(), all.begin() + k);
    ratio.assign(ratio_all.begin(), ratio_all.begin() + k);
  }
  detail::truncate_svd(fit.svd, k);
  std::vector<double>& mean = fit.mean;
  if (exponent != 0) {  // back from the units of 2^exponent X: ratios and components are the same
    noise_variance = std::ldexp(noise_variance, -2 * exponent);
    for (double& v : variance) v = std::ldexp(v, -2 * exponent);
    for (double& v : fit.svd.s) v = std::ldexp(v, -exponent);
    for (double& v : mean) v = std::ldexp(v, -exponent);
  }
  detail::expect_finite_in(dtype, {&variance, &fit.svd.s, &mean}, {noise_variance},
                           "PCA: explained_variance_ or singular_values_ overflow " + std::string(dtype_name(dtype)) +
                               ": X's values are too large");
  std::map<std::string, HostArray> attributes;
  attributes["components_"] = detail::host_array(dtype, fit.svd.Vt, k, d);
  attributes["explained_variance_"] = detail::host_array(dtype, variance);
  attributes["explained_variance_ratio_"] = detail::host_array(dtype, ratio);
  attributes["singular_values_"] = detail::host_array(dtype, fit.svd.s);
  attributes["mean_"] = detail::host_array(dtype, mean);
  attributes["noise_variance_"] = detail::host_scalar(dtype, noise_variance);
  attributes["n_components_"] = detail::host_int64(k);
  attributes["n_features_in_"] = detail::host_int64(d);
  attributes["n_samples_"] = detail::host_int64(n);
  return attributes;
}

// transform's coefficients: components_, each row divided by sqrt(explained_variance_) when
// whitening (floored at the dtype's epsilon, as scikit-learn).
std::vector<double> transform_coefficients(const HostArray& components, const HostArray& explained_variance,
                                           bool whiten) {
  std::vector<double> coef = detail::host_values(components);
  if (!whiten) return coef;
  const int64_t k = components.spec().shape[0], d = components.spec().shape[1];
  const double floor = components.dtype() == DType::float32 ? std::numeric_limits<float>::epsilon()
                                                             : std::numeric_limits<double>::epsilon();
  const std::vector<double> variance = detail::host_values(explained_variance);
  for (int64_t i = 0; i < k; ++i)
    for (int64_t j = 0; j < d; ++j) coef[i * d + j] /= std::max(std::sqrt(variance[i]), floor);
  return coef;
}

}  // namespace

PCA::PCA(PCAParams params) : params_(std::move(params)) { params_table().check(params_); }

PCA& PCA::fit(Context& ctx, const ArrayView& X) {
  // Distributed (the context's communicator): every rank passes its own rows; the ranks agree on
  // the shapes and parameters (else every rank throws), the checks of X pass on every rank or
  // fail on all, and the model is that of all rows. Over several ranks every solver is
  // "covariance_eigh": each rank's centered Gram matrix, merged over the ranks as a parallel
  // variance (merge_centered_over_ranks), and the eigen-decomposition replicated. "full" gives
  // the same answer up to rounding; "randomized" an approximation of it, so its request is
  // answered exactly (random_state is then unused).
  Comm& comm = ctx.comm();
  int64_t local_n = 0, d = 0;
  DType dtype = DType::float64;
  detail::Staged Xs;
  detail::Trace trace(ctx, "PCA");
  detail::check_on_every_rank(comm, "PCA", "checking X", [&] {
    detail::check_matrix_shape(X);
    local_n = X.shape[0];
    d = X.shape[1];
    dtype = detail::float_dtype_for(X.dtype);
    Xs = detail::stage(ctx, X, dtype, "X");  // NaN and infinity: found by the centering pass
    trace.mark("stage X");
  });
  std::vector<detail::RankField> fields = {{"n_features", d}, {"dtype (0 float32, 1 float64)", static_cast<int64_t>(dtype)}};
  for (const detail::RankField& f : params_table().rank_fields(params_)) fields.push_back(f);
  const detail::RowCounts rows = detail::agree_on_every_rank(comm, "PCA", local_n, fields);
  const int64_t n = rows.total, min_nd = std::min(n, d);
  GPUML_EXPECT(n >= 2, "PCA needs at least 2 samples (the variances divide by n_samples - 1), got n_samples=" +
                           std::to_string(n));
  const ComponentRequest plan = plan_components(params_, n, d, false);
  std::string solver = plan.solver;
  if (comm.size() > 1) solver = "covariance_eigh";

  SpectralFit fit;
  const double dof = static_cast<double>(n - 1);
  // One fit of X as given, or times 2^exponent (extreme magnitudes, least_squares.hpp: where
  // `rescalable`, squares out of range throw BadlyScaled, and X is scaled and fitted again).
  auto compute = [&](const ArrayView& Xv, bool rescalable) {
    fit = SpectralFit{};
    fit.mean.assign(static_cast<std::size_t>(d), 0.0);
    detail::with_float_type(dtype, [&](auto tag) {
      using T = decltype(tag);
      auto backend = detail::make_linear_backend<T>(ctx);
      auto expect_squares_in_range = [&](double largest_square) {
        if (rescalable && !detail::squares_in_range<T>(largest_square)) throw detail::BadlyScaled{};
      };
      auto expect_finite = [](const std::vector<double>& v) {
        GPUML_EXPECT(std::all_of(v.begin(), v.end(), [](double x) { return std::isfinite(x); }),
                     "X contains NaN or infinity");
      };
      if (solver == "covariance_eigh") {
        // One pass over X, as the least-squares Gram routes (centered_gram): data with a large
        // mean keep their precision.
        detail::CenteredGram centered;
        detail::check_on_every_rank(comm, "PCA", "the pass over X", [&] {
          centered = detail::centered_gram<T>(*backend, Xv.as<const T>(), local_n, d, nullptr, nullptr, 0, true, "PCA");
        });
        std::vector<double>& G = centered.gram;
        std::vector<double> no_targets;
        detail::merge_centered_over_ranks(comm, static_cast<double>(local_n), centered.mean, no_targets, &G, nullptr);
        detail::check_gram_scale<T>(G, d, rescalable, "PCA");
        fit.mean = centered.mean;
        trace.mark("sums and gram");
        eigen_of_centered_gram(*backend, G, d, dof, plan, fit);
        trace.mark("eigen-decomposition");
        return;
      }
      backend->weighted_means(Xv.as<const T>(), n, d, nullptr, fit.mean.data());
      expect_finite(fit.mean);
      Buffer A(ctx, static_cast<std::size_t>(n * d) * sizeof(T));
      backend->center_scale(Xv.as<const T>(), n, d, fit.mean.data(), nullptr, A.as<T>());
      trace.mark("mean and center");
      if (solver == "full" || solver == "arpack") {  // arpack: the exact SVD, truncated later
        fit.svd = detail::exact_svd(ctx, *backend, A.as<T>(), n, d, rescalable);
        // The QR's squares overflow or underflow with s_max² (NaN or 0 when it broke down).
        expect_squares_in_range(fit.svd.s.empty() ? 1.0 : fit.svd.s[0] * fit.svd.s[0]);
        for (double s : fit.svd.s) fit.variance_all.push_back(s * s / dof);
        trace.mark("svd");
      } else {
        const int64_t k = static_cast<int64_t>(plan.requested);
        const int64_t n_iter = params_.iterated_power >= 0 ? params_.iterated_power : (k < 0.1 * min_nd ? 7 : 4);
        const double squared_norm = detail::squared_norm(*backend, A.as<const T>(), n, d);
        expect_squares_in_range(squared_norm);
        fit.total_variance = squared_norm / dof;
        fit.svd = detail::randomized_svd(ctx, *backend, A.as<const T>(), n, d, k, params_.n_oversamples, n_iter,
                                         params_.random_state.value_or(ctx.seed()));
        expect_squares_in_range(fit.svd.s.empty() ? 1.0 : fit.svd.s[0] * fit.svd.s[0]);
        trace.mark("randomized svd");
      }
    });
  };
  const int exponent = detail::with_rescaling(ctx, Xs.view, compute);
  restore(fitted_attributes(plan, std::move(fit), n, d, dtype, exponent));
  return *this;
}

void PCA::fit_sparse(Context& ctx, const SparseView& X, const ArrayView* /*y*/, const ArrayView* sample_weight) {
  // scikit-learn's rules for sparse X: "arpack" (also what "auto" picks) and "covariance_eigh"
  // only, both centering implicitly: X itself is never densified or copied centered.
  GPUML_EXPECT(sample_weight == nullptr, "PCA.fit takes no sample_weight");
  const std::string& requested_solver = params_.svd_solver;
  GPUML_EXPECT(requested_solver == "auto" || requested_solver == "arpack" || requested_solver == "covariance_eigh",
               "PCA only support sparse inputs with the \"arpack\" and \"covariance_eigh\" solvers, while \"" +
                   requested_solver + "\" was passed. See TruncatedSVD for a possible alternative.");
  if (ctx.comm().size() > 1) throw_error(ErrorCode::unsupported, "PCA: sparse X over several ranks is not written yet");
  const int64_t n = X.rows(), d = X.cols();
  GPUML_EXPECT(n >= 1 && d >= 1, "X (sparse matrix) has shape (" + std::to_string(n) + ", " + std::to_string(d) +
                                     "): at least 1 sample and 1 feature are required");
  GPUML_EXPECT(n >= 2, "PCA needs at least 2 samples (the variances divide by n_samples - 1), got n_samples=" +
                           std::to_string(n));
  const ComponentRequest plan = plan_components(params_, n, d, true);
  // covariance_eigh forms the d x d covariance densely, as scikit-learn does; past this width
  // that is gigabytes and a cubic eigen-decomposition.
  if (plan.solver == "covariance_eigh" && d > detail::kSparseGramFeatures)
    throw_error(ErrorCode::unsupported, "PCA: svd_solver='covariance_eigh' on sparse X with " + std::to_string(d) +
                                            " features (more than " + std::to_string(detail::kSparseGramFeatures) +
                                            ") would form a dense " + std::to_string(d) + " x " + std::to_string(d) +
                                            " covariance; use svd_solver='arpack'");
  const DType dtype = X.dtype == DType::float32 ? DType::float32 : DType::float64;
  const double dof = static_cast<double>(n - 1);
  detail::Trace trace(ctx, "PCA (sparse)");
  SpectralFit fit;
  detail::with_float_type(dtype, [&](auto tag) {
    using T = decltype(tag);
    auto A = detail::make_sparse_matrix<T>(ctx, X, "X");
    auto backend = detail::make_linear_backend<T>(ctx);
    trace.mark("check and canonicalize X");
    std::vector<double> sums(static_cast<std::size_t>(d)), squares(static_cast<std::size_t>(d));
    A->column_moments(sums.data(), squares.data());
    fit.mean.resize(static_cast<std::size_t>(d));
    for (int64_t j = 0; j < d; ++j) fit.mean[j] = sums[j] / static_cast<double>(n);
    if (plan.solver == "covariance_eigh") {
      // scikit-learn's: XᵀX − n x̄x̄ᵀ (sparse columns, mostly zeros, lose little to the subtraction).
      std::vector<double> G(static_cast<std::size_t>(d * d));
      A->weighted_gram(nullptr, G.data());
      for (int64_t i = 0; i < d; ++i)
        for (int64_t j = 0; j < d; ++j) G[i * d + j] -= static_cast<double>(n) * fit.mean[i] * fit.mean[j];
      detail::check_gram_scale<T>(G, d, false, "PCA");
      trace.mark("gram");
      eigen_of_centered_gram(*backend, G, d, dof, plan, fit);
      trace.mark("eigen-decomposition");
      return;
    }
    // arpack: the total variance from the column moments (scikit-learn's mean_variance_axis,
    // times n / (n - 1)), the leading triplets of X − 1x̄ᵀ through its products.
    for (int64_t j = 0; j < d; ++j)
      fit.total_variance += std::max(squares[j] / static_cast<double>(n) - fit.mean[j] * fit.mean[j], 0.0);
    fit.total_variance *= static_cast<double>(n) / dof;
    detail::CenteredProducts<T> centered(ctx, *backend, *A, n, fit.mean);
    fit.svd = detail::converged_svd(ctx, *backend, centered, n, d, static_cast<int64_t>(plan.requested),
                                    params_.random_state.value_or(ctx.seed()), params_.tol);
    trace.mark("svd");
  });
  restore(fitted_attributes(plan, std::move(fit), n, d, dtype, 0));
}

void PCA::fit(Context& ctx, const ArrayView& X, const ArrayView* /*y*/, const ArrayView* sample_weight) {
  GPUML_EXPECT(sample_weight == nullptr, "PCA.fit takes no sample_weight");
  fit(ctx, X);
}

ArraySpec PCA::output_spec(const std::string& method, int64_t n_rows) const {
  if (method == "transform") {
    require_fitted();
    GPUML_EXPECT(n_rows >= 0, "n_rows must be >= 0, got " + std::to_string(n_rows));
    return ArraySpec{components_.dtype(), 2, {n_rows, n_components()}};
  }
  return Estimator::output_spec(method, n_rows);
}

ArraySpec PCA::inverse_transform_spec(int64_t n_rows) const {
  require_fitted();
  GPUML_EXPECT(n_rows >= 0, "n_rows must be >= 0, got " + std::to_string(n_rows));
  return ArraySpec{components_.dtype(), 2, {n_rows, n_features_in()}};
}

void PCA::transform(Context& ctx, const ArrayView& X, const ArrayView& out) const {
  require_fitted();
  const int64_t k = n_components(), d = n_features_in();
  detail::apply_linear_map(ctx, X, components_.dtype(), transform_coefficients(components_, explained_variance_, params_.whiten),
                           k, d, detail::host_values(mean_), {}, out, "PCA", "features");
}

void PCA::transform_sparse(Context& ctx, const SparseView& X, const ArrayView& out) const {
  require_fitted();
  const int64_t k = n_components(), d = n_features_in(), n = X.rows();
  GPUML_EXPECT(X.cols() == d, "X has " + std::to_string(X.cols()) + " features, but PCA is expecting " +
                                  std::to_string(d) + " features as input");
  const DType dtype = components_.dtype();  // computed in the model's dtype, as the dense transform
  const std::vector<double> coef = transform_coefficients(components_, explained_variance_, params_.whiten);
  detail::with_float_type(dtype, [&](auto tag) {
    using T = decltype(tag);
    auto A = detail::make_sparse_matrix_as<T>(ctx, X, "X");
    auto backend = detail::make_linear_backend<T>(ctx);
    // (X − 1 mean_ᵀ) coefᵀ without centering X: X coefᵀ − 1 (coef mean_)ᵀ.
    detail::CenteredProducts<T> centered(ctx, *backend, *A, n, detail::host_values(mean_));
    const std::vector<T> coef_t(coef.begin(), coef.end());
    Buffer result(ctx, static_cast<std::size_t>(std::max<int64_t>(n * k, 1)) * sizeof(T));
    detail::times_rows(ctx, centered, d, coef_t.data(), k, result.as<T>());
    detail::write_output(ctx, make_view(result.data(), dtype, ctx.device(), n, k), out, "transformed X");
  });
}

void PCA::inverse_transform(Context& ctx, const ArrayView& X, const ArrayView& out) const {
  require_fitted();
  const int64_t k = n_components(), d = n_features_in();
  const std::vector<double> components = detail::host_values(components_);
  const std::vector<double> variance = detail::host_values(explained_variance_);
  std::vector<double> coef(static_cast<std::size_t>(d * k));  // (d x k) = componentsᵀ, rows scaled when whiten
  for (int64_t i = 0; i < k; ++i)
    for (int64_t j = 0; j < d; ++j)
      coef[j * k + i] = components[i * d + j] * (params_.whiten ? std::sqrt(variance[i]) : 1.0);
  detail::apply_linear_map(ctx, X, components_.dtype(), coef, d, k, {}, detail::host_values(mean_), out, "PCA",
                           "components");
}

const HostArray& PCA::components() const { return attribute("components_"); }
const HostArray& PCA::explained_variance() const { return attribute("explained_variance_"); }
const HostArray& PCA::explained_variance_ratio() const { return attribute("explained_variance_ratio_"); }
const HostArray& PCA::singular_values() const { return attribute("singular_values_"); }
const HostArray& PCA::mean() const { return attribute("mean_"); }
double PCA::noise_variance() const { return detail::host_values(attribute("noise_variance_")).at(0); }
int64_t PCA::n_components() const { return *attribute("n_components_").as<const int64_t>(); }
int64_t PCA::n_features_in() const { return *attribute("n_features_in_").as<const int64_t>(); }
int64_t PCA::n_samples() const { return *attribute("n_samples_").as<const int64_t>(); }

std::vector<std::string> PCA::attribute_names() const { return kAttributeNames; }

const HostArray& PCA::attribute(const std::string& name) const {
  const std::array<const HostArray*, 9> arrays = {&components_, &explained_variance_, &explained_variance_ratio_,
                                                  &singular_values_, &mean_, &noise_variance_, &n_components_,
                                                  &n_features_in_, &n_samples_};
  for (std::size_t i = 0; i < kAttributeNames.size(); ++i) {
    if (kAttributeNames[i] != name) continue;
    require_fitted();
    return *arrays[i];
  }
  throw_error(ErrorCode::invalid_argument, "pca has no attribute '" + name + "'");
}

void PCA::restore(std::map<std::string, HostArray> attributes) {
  auto it = attributes.find("components_");
  GPUML_EXPECT(it != attributes.end() && it->second.spec().ndim == 2,
               "pca model: attribute 'components_' is missing or not 2-d");
  const int64_t k = it->second.spec().shape[0], d = it->second.spec().shape[1];
  detail::check_restored(attributes,
                         {{"components_", 2, k, d},
                          {"explained_variance_", 1, k},
                          {"explained_variance_ratio_", 1, k},
                          {"singular_values_", 1, k},
                          {"mean_", 1, d},
                          {"noise_variance_", 0},
                          {"n_components_", -1},
                          {"n_features_in_", -1},
                          {"n_samples_", -1}},
                         kind());
  GPUML_EXPECT(*attributes.at("n_components_").as<const int64_t>() == k &&
                   *attributes.at("n_features_in_").as<const int64_t>() == d,
               "pca model: n_components_ and n_features_in_ must match the shape of components_");
  // transform divides by sqrt(explained_variance_) when whiten: a negative one would give NaN.
  const std::vector<double> variance = detail::host_values(attributes.at("explained_variance_"));
  GPUML_EXPECT(std::all_of(variance.begin(), variance.end(), [](double v) { return v >= 0; }),
               "pca model: explained_variance_ must be >= 0");
  components_ = std::move(attributes.at("components_"));
  explained_variance_ = std::move(attributes.at("explained_variance_"));
  explained_variance_ratio_ = std::move(attributes.at("explained_variance_ratio_"));
  singular_values_ = std::move(attributes.at("singular_values_"));
  mean_ = std::move(attributes.at("mean_"));
  noise_variance_ = std::move(attributes.at("noise_variance_"));
  n_components_ = std::move(attributes.at("n_components_"));
  n_features_in_ = std::move(attributes.at("n_features_in_"));
  n_samples_ = std::move(attributes.at("n_samples_"));
}

std::string PCA::get_params_json() const { return params_table().write(params_).dump(); }

namespace detail {

std::unique_ptr<Estimator> pca_from_params(const nlohmann::json& params) {
  return std::make_unique<PCA>(params_table().read(params));
}

nlohmann::json pca_params_schema() { return params_table().schema(); }

}  // namespace detail

}  // namespace gpuml

// ElasticNet and Lasso: parameters, fitted attributes, and the fit: the Gram system from the
// least-squares driver (computed by the backend), then coordinate descent on the host, with
// scikit-learn's scaling (penalties times n, dual gap divided by n).
#include "gpuml/linear_model/elastic_net.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

#include "core/param_table.hpp"
#include "core/distributed.hpp"
#include "core/registry.hpp"
#include "core/staging.hpp"
#include "gpuml/core/error.hpp"
#include "linear_model/coordinate_descent.hpp"
#include "linear_model/least_squares.hpp"

namespace gpuml {

namespace {

const std::vector<std::string> kAttributeNames = {"coef_",     "intercept_", "n_iter_",
                                                  "dual_gap_", "converged_", "n_features_in_"};

// ElasticNet's parameters (Lasso's: all but l1_ratio), declared once, in scikit-learn's order.
detail::ParamTable<ElasticNetParams> make_params_table(const char* kind, bool with_l1_ratio) {
  using namespace detail;
  using P = ElasticNetParams;
  std::vector<ParamRow<P>> rows = {
      field("alpha", &P::alpha, {number_in(0)}, "The penalty's strength (0: least squares; use LinearRegression)."),
      field("l1_ratio", &P::l1_ratio, {number_in(0, 1, "both")}, "The L1 share of the penalty: 1 is the Lasso, 0 ridge."),
      field("fit_intercept", &P::fit_intercept, {boolean()}, "Whether to fit an intercept (X and y centered)."),
      field("precompute", &P::precompute, {boolean()},
            "Accepted, without effect: gpuml always solves on the Gram matrix it forms (the Python "
            "bindings check a given Gram array as scikit-learn does, then form their own).").per_rank(),
      field("max_iter", &P::max_iter, {integer_in(1)}, "The most coordinate-descent sweeps."),
      field("copy_X", &P::copy_X, {boolean()}, "Accepted, without effect: gpuml never writes to X.").per_rank(),
      field("tol", &P::tol, {number_in(0)}, "Convergence: the duality gap below tol * ||y - mean(y)||^2."),
      field("warm_start", &P::warm_start, {boolean()}, "A refit starts from the fitted coef_."),
      field("positive", &P::positive, {boolean()}, "Constrains the coefficients to be >= 0."),
      field("random_state", &P::random_state, {seed()},
            "The seed of selection=\"random\"; null: a fresh one per fit (the context's in C++)."),
      field("selection", &P::selection, {one_of({"cyclic", "random"})},
            "The order coordinates are updated in: \"cyclic\", or \"random\" draws (often faster at high tol)."),
      ParamRow<P>{"init_coef", {numbers(), matrix()},
                  "gpuml's: the starting coefficients (n_targets x n_features, or flat); empty: zeros.",
                  [](P& p, const nlohmann::json& v) { p.init_coef = flat_numbers(v); },
                  [](const P& p) { return nlohmann::json(p.init_coef); }}
          .not_in_constructor(),
  };
  if (!with_l1_ratio) {  // Lasso: no l1_ratio, and copy_X comes before max_iter in its signature
    rows.erase(rows.begin() + 1);
    std::swap(rows[3], rows[4]);
  }
  return ParamTable<P>(kind, std::move(rows));
}

const detail::ParamTable<ElasticNetParams>& params_table(bool lasso) {
  static const detail::ParamTable<ElasticNetParams> elastic_net = make_params_table("elastic_net", true),
                                                    lasso_table = make_params_table("lasso", false);
  return lasso ? lasso_table : elastic_net;
}

ElasticNetParams from_lasso(const LassoParams& p) {
  ElasticNetParams e;
  e.alpha = p.alpha;
  e.l1_ratio = 1.0;
  e.fit_intercept = p.fit_intercept;
  e.precompute = p.precompute;
  e.max_iter = p.max_iter;
  e.copy_X = p.copy_X;
  e.tol = p.tol;
  e.warm_start = p.warm_start;
  e.positive = p.positive;
  e.random_state = p.random_state;
  e.selection = p.selection;
  e.init_coef = p.init_coef;
  return e;
}

HostArray scalar_i64(int64_t v) {
  HostArray a = HostArray::scalar(DType::int64);
  *a.as<int64_t>() = v;
  return a;
}

}  // namespace

ElasticNet::ElasticNet(ElasticNetParams params) : ElasticNet(std::move(params), "ElasticNet") {}

ElasticNet::ElasticNet(ElasticNetParams params, const char* display_name)
    : display_name_(display_name), params_(std::move(params)) {
  params_table(display_name_ == std::string("Lasso")).check(params_);
}

Lasso::Lasso(LassoParams params) : ElasticNet(from_lasso(params), "Lasso") {}

ElasticNet& ElasticNet::fit(Context& ctx, const ArrayView& X, const ArrayView& y, const ArrayView* sample_weight) {
  const std::string name = display_name_;
  // Distributed: the Gram system of all ranks' rows (the ranks agreeing on these parameters), then
  // the same coordinate descent on every rank, with rank 0's seed.
  const detail::GramSystem sys =
      detail::gram_system(ctx, X, y, sample_weight, params_.fit_intercept, true, name,
                          params_table(name == "Lasso").rank_fields(params_));
  fit_system(ctx, sys);
  return *this;
}

void ElasticNet::fit_sparse(Context& ctx, const SparseView& X, const ArrayView* y, const ArrayView* sample_weight) {
  GPUML_EXPECT(y != nullptr, std::string(display_name_) + ".fit needs y");
  // The Gram form of scikit-learn's sparse coordinate descent (precompute=False over CSC columns):
  // the same objective and the same duality-gap test, so the same minimizer within tol.
  fit_system(ctx, detail::gram_system_sparse(ctx, X, *y, sample_weight, params_.fit_intercept, true, display_name_));
}

void ElasticNet::predict_sparse(Context& ctx, const SparseView& X, const ArrayView& out) const {
  require_fitted();
  detail::linear_predict_sparse(ctx, X, coef_, intercept_, out, display_name_);
}

void ElasticNet::fit_system(Context& ctx, const detail::GramSystem& sys) {
  const std::string name = display_name_;
  const int64_t n = sys.n, d = sys.d, t = sys.t;
  GPUML_EXPECT(params_.init_coef.empty() || static_cast<int64_t>(params_.init_coef.size()) == t * d,
               name + ": init_coef has " + std::to_string(params_.init_coef.size()) + " values but the fit needs " +
                   std::to_string(t) + " target(s) x " + std::to_string(d) + " features = " + std::to_string(t * d));
  std::vector<double> start = params_.init_coef;
  const ArraySpec fitted_coef = fitted() ? coef_.spec() : ArraySpec{};
  const int64_t fitted_values = fitted_coef.ndim == 2 ? fitted_coef.shape[0] * fitted_coef.shape[1] : fitted_coef.shape[0];
  if (start.empty() && params_.warm_start && fitted() && fitted_values == t * d) {  // else from zeros, as scikit-learn
    detail::with_float_type(coef_.dtype(), [&](auto tag) {
      using T = decltype(tag);
      start.assign(coef_.as<const T>(), coef_.as<const T>() + t * d);
    });
  }

  detail::CoordinateDescentOptions options;
  options.l1 = params_.alpha * params_.l1_ratio * static_cast<double>(n);
  options.l2 = params_.alpha * (1.0 - params_.l1_ratio) * static_cast<double>(n);
  options.max_iter = params_.max_iter;
  options.tol = params_.tol;
  options.positive = params_.positive;
  options.random = params_.selection == "random";
  int64_t seed = static_cast<int64_t>(params_.random_state.value_or(ctx.seed()));
  ctx.comm().broadcast(&seed, 1, 0);
  options.seed = static_cast<uint64_t>(seed);

  std::vector<double> cross_k(static_cast<std::size_t>(d));
  auto init_coef = [&](int64_t k) {  // target k's starting point: empty means zeros
    if (start.empty()) return std::vector<double>();
    return std::vector<double>(start.begin() + k * d, start.begin() + (k + 1) * d);
  };
  HostArray coef = sys.y_is_1d ? HostArray(sys.dtype, d) : HostArray(sys.dtype, t, d);
  HostArray intercept = sys.y_is_1d ? HostArray::scalar(sys.dtype) : HostArray(sys.dtype, t);
  HostArray dual_gap = sys.y_is_1d ? HostArray::scalar(DType::float64) : HostArray(DType::float64, t);
  int64_t n_iter = 0;
  bool converged = true;
  for (int64_t k = 0; k < t; ++k) {
    for (int64_t j = 0; j < d; ++j) cross_k[j] = sys.cross[j * t + k];
    const detail::CoordinateDescentResult r =
        detail::enet_coordinate_descent_gram(sys.gram.data(), cross_k.data(), sys.y_sq_norm[k], d, init_coef(k), options);
    GPUML_EXPECT(std::all_of(r.coef.begin(), r.coef.end(), [](double v) { return std::isfinite(v); }),
                 name + ": coordinate descent produced non-finite coefficients; the input data may contain very large "
                        "values and need to be preprocessed");
    double x_mean_dot_coef = 0.0;
    for (int64_t j = 0; j < d; ++j) x_mean_dot_coef += sys.x_mean[j] * r.coef[j];
    detail::with_float_type(sys.dtype, [&](auto tag) {
      using T = decltype(tag);
      for (int64_t j = 0; j < d; ++j) coef.as<T>()[k * d + j] = static_cast<T>(r.coef[j]);
      intercept.as<T>()[k] = static_cast<T>(params_.fit_intercept ? sys.y_mean[k] - x_mean_dot_coef : 0.0);
    });
    dual_gap.as<double>()[k] = r.gap / static_cast<double>(n);
    n_iter = std::max(n_iter, r.n_iter);
    converged = converged && r.converged;
  }
  coef_ = std::move(coef);
  intercept_ = std::move(intercept);
  dual_gap_ = std::move(dual_gap);
  n_iter_ = scalar_i64(n_iter);
  converged_ = scalar_i64(converged ? 1 : 0);
  n_features_in_ = scalar_i64(d);
}

void ElasticNet::fit(Context& ctx, const ArrayView& X, const ArrayView* y, const ArrayView* sample_weight) {
  GPUML_EXPECT(y != nullptr, std::string(display_name_) + ".fit needs y");
  fit(ctx, X, *y, sample_weight);
}

ArraySpec ElasticNet::output_spec(const std::string& method, int64_t n_rows) const {
  if (method == "predict") {
    require_fitted();
    return detail::linear_output_spec(coef_, n_rows);
  }
  return Estimator::output_spec(method, n_rows);
}

void ElasticNet::predict(Context& ctx, const ArrayView& X, const ArrayView& out) const {
  require_fitted();
  detail::linear_predict(ctx, X, coef_, intercept_, out, display_name_);
}

const HostArray& ElasticNet::coef() const {
  require_fitted();
  return coef_;
}
const HostArray& ElasticNet::intercept() const {
  require_fitted();
  return intercept_;
}
const HostArray& ElasticNet::dual_gap() const {
  require_fitted();
  return dual_gap_;
}
int64_t ElasticNet::n_iter() const {
  require_fitted();
  return *n_iter_.as<const int64_t>();
}
bool ElasticNet::converged() const {
  require_fitted();
  return *converged_.as<const int64_t>() != 0;
}
int64_t ElasticNet::n_features_in() const {
  require_fitted();
  return *n_features_in_.as<const int64_t>();
}

std::vector<std::string> ElasticNet::attribute_names() const { return kAttributeNames; }

const HostArray& ElasticNet::attribute(const std::string& name) const {
  if (std::find(kAttributeNames.begin(), kAttributeNames.end(), name) == kAttributeNames.end())
    throw_error(ErrorCode::invalid_argument,
                std::string(kind()) + " has no attribute '" + name +
                    "' (known: coef_, intercept_, n_iter_, dual_gap_, converged_, n_features_in_)");
  require_fitted();
  if (name == "coef_") return coef_;
  if (name == "intercept_") return intercept_;
  if (name == "n_iter_") return n_iter_;
  if (name == "dual_gap_") return dual_gap_;
  if (name == "converged_") return converged_;
  return n_features_in_;
}

void ElasticNet::restore(std::map<std::string, HostArray> attributes) {
  detail::check_linear_attributes(attributes, kAttributeNames, kind());
  const std::string where = std::string(kind()) + " model: ";
  const ArraySpec& cs = attributes.at("coef_").spec();
  const HostArray& gap = attributes.at("dual_gap_");
  const bool gap_ok = gap.dtype() == DType::float64 &&
                      (cs.ndim == 1 ? gap.spec().ndim == 0 : gap.spec().ndim == 1 && gap.spec().shape[0] == cs.shape[0]);
  GPUML_EXPECT(gap_ok, where + "dual_gap_ must be float64, 0-d (coef_ 1-d) or (n_targets,)");
  for (const char* name : {"n_iter_", "converged_"}) {
    const HostArray& a = attributes.at(name);
    GPUML_EXPECT(a.dtype() == DType::int64 && a.spec().ndim == 0 && *a.as<const int64_t>() >= 0,
                 where + name + " must be a non-negative int64 scalar");
  }
  GPUML_EXPECT(*attributes.at("converged_").as<const int64_t>() <= 1, where + "converged_ must be 0 or 1");
  coef_ = std::move(attributes.at("coef_"));
  intercept_ = std::move(attributes.at("intercept_"));
  n_iter_ = std::move(attributes.at("n_iter_"));
  dual_gap_ = std::move(attributes.at("dual_gap_"));
  converged_ = std::move(attributes.at("converged_"));
  n_features_in_ = std::move(attributes.at("n_features_in_"));
}

std::string ElasticNet::get_params_json() const { return params_table(false).write(params_).dump(); }
std::string Lasso::get_params_json() const { return params_table(true).write(params()).dump(); }

namespace detail {

std::unique_ptr<Estimator> elastic_net_from_params(const nlohmann::json& params) {
  return std::make_unique<ElasticNet>(params_table(false).read(params));
}

std::unique_ptr<Estimator> lasso_from_params(const nlohmann::json& params) {
  const ElasticNetParams p = params_table(true).read(params);
  return std::make_unique<Lasso>(LassoParams{p.alpha, p.fit_intercept, p.precompute, p.max_iter, p.copy_X, p.tol,
                                             p.warm_start, p.positive, p.random_state, p.selection, p.init_coef});
}

nlohmann::json elastic_net_params_schema() { return params_table(false).schema(); }
nlohmann::json lasso_params_schema() { return params_table(true).schema(); }

}  // namespace detail

}  // namespace gpuml

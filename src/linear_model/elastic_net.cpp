// ElasticNet and Lasso: parameters, fitted attributes, and the fit: the Gram system from the
// least-squares driver (computed by the backend), then coordinate descent on the host, with
// scikit-learn's scaling (penalties times n, dual gap divided by n).
#include "gpuml/linear_model/elastic_net.hpp"

#include <algorithm>
#include <cmath>

#include "core/params.hpp"
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

void validate_params(const ElasticNetParams& p, const std::string& name) {
  GPUML_EXPECT(std::isfinite(p.alpha) && p.alpha >= 0, name + ": alpha must be finite and >= 0, got " + std::to_string(p.alpha));
  GPUML_EXPECT(p.l1_ratio >= 0 && p.l1_ratio <= 1,
               name + ": l1_ratio must be in [0, 1], got " + std::to_string(p.l1_ratio));
  GPUML_EXPECT(p.max_iter >= 1, name + ": max_iter must be >= 1, got " + std::to_string(p.max_iter));
  GPUML_EXPECT(std::isfinite(p.tol) && p.tol >= 0, name + ": tol must be finite and >= 0, got " + std::to_string(p.tol));
  GPUML_EXPECT(p.selection == "cyclic" || p.selection == "random",
               name + ": selection must be \"cyclic\" or \"random\", got \"" + p.selection + "\"");
  GPUML_EXPECT(std::all_of(p.init_coef.begin(), p.init_coef.end(), [](double v) { return std::isfinite(v); }),
               name + ": init_coef must be finite");
}

ElasticNetParams from_lasso(const LassoParams& p) {
  ElasticNetParams e;
  e.alpha = p.alpha;
  e.l1_ratio = 1.0;
  e.fit_intercept = p.fit_intercept;
  e.max_iter = p.max_iter;
  e.tol = p.tol;
  e.selection = p.selection;
  e.positive = p.positive;
  e.random_state = p.random_state;
  e.init_coef = p.init_coef;
  return e;
}

HostArray scalar_i64(int64_t v) {
  HostArray a = HostArray::scalar(DType::int64);
  *a.as<int64_t>() = v;
  return a;
}

nlohmann::json params_json(const ElasticNetParams& p, bool with_l1_ratio) {
  nlohmann::json j;
  j["alpha"] = p.alpha;
  if (with_l1_ratio) j["l1_ratio"] = p.l1_ratio;
  j["fit_intercept"] = p.fit_intercept;
  j["max_iter"] = p.max_iter;
  j["tol"] = p.tol;
  j["selection"] = p.selection;
  j["positive"] = p.positive;
  j["random_state"] = p.random_state ? nlohmann::json(*p.random_state) : nlohmann::json(nullptr);
  if (!p.init_coef.empty()) j["init_coef"] = p.init_coef;  // only when warm starting
  return j;
}

ElasticNetParams read_params(const nlohmann::json& params, const char* kind, bool with_l1_ratio) {
  detail::ParamReader reader(params, kind);
  ElasticNetParams p;
  p.alpha = reader.get_double("alpha", p.alpha);
  if (!std::isfinite(p.alpha) || p.alpha < 0) reader.fail("alpha", "a finite number >= 0");
  if (with_l1_ratio) {
    p.l1_ratio = reader.get_double("l1_ratio", p.l1_ratio);
    if (!(p.l1_ratio >= 0 && p.l1_ratio <= 1)) reader.fail("l1_ratio", "a number in [0, 1]");
  } else {
    p.l1_ratio = 1.0;
  }
  p.fit_intercept = reader.get_bool("fit_intercept", p.fit_intercept);
  const int64_t max_iter = reader.get_int("max_iter", p.max_iter);
  if (max_iter < 1 || max_iter > 1000000000) reader.fail("max_iter", "an integer in [1, 1e9]");
  p.max_iter = static_cast<int>(max_iter);
  p.tol = reader.get_double("tol", p.tol);
  if (!std::isfinite(p.tol) || p.tol < 0) reader.fail("tol", "a finite number >= 0");
  p.selection = reader.get_string("selection", p.selection);
  if (p.selection != "cyclic" && p.selection != "random") reader.fail("selection", "\"cyclic\" or \"random\"");
  p.positive = reader.get_bool("positive", p.positive);
  p.random_state = reader.get_seed("random_state");
  p.init_coef = detail::read_finite_numbers(reader, "init_coef");  // one row per target
  reader.finish();
  return p;
}

}  // namespace

ElasticNet::ElasticNet(ElasticNetParams params) : ElasticNet(std::move(params), "ElasticNet") {}

ElasticNet::ElasticNet(ElasticNetParams params, const char* display_name)
    : display_name_(display_name), params_(std::move(params)) {
  validate_params(params_, display_name_);
}

Lasso::Lasso(LassoParams params) : ElasticNet(from_lasso(params), "Lasso") {}

ElasticNet& ElasticNet::fit(Context& ctx, const ArrayView& X, const ArrayView& y, const ArrayView* sample_weight) {
  const std::string name = display_name_;
  // Distributed: the Gram system of all ranks' rows (the ranks agreeing on these parameters), then
  // the same coordinate descent on every rank, with rank 0's seed.
  const detail::GramSystem sys =
      detail::gram_system(ctx, X, y, sample_weight, params_.fit_intercept, true, name,
                          {{"alpha (bits)", detail::bits_of(params_.alpha)},
                           {"l1_ratio (bits)", detail::bits_of(params_.l1_ratio)},
                           {"max_iter", static_cast<int64_t>(params_.max_iter)},
                           {"tol (bits)", detail::bits_of(params_.tol)},
                           {"selection", detail::hash_of(params_.selection)},
                           {"positive", params_.positive ? 1 : 0},
                           {"whether random_state is set", params_.random_state.has_value() ? 1 : 0},
                           {"random_state", static_cast<int64_t>(params_.random_state.value_or(0))},
                           {"init_coef (hash)", detail::hash_of(params_.init_coef)}});
  const int64_t n = sys.n, d = sys.d, t = sys.t;
  GPUML_EXPECT(params_.init_coef.empty() || static_cast<int64_t>(params_.init_coef.size()) == t * d,
               name + ": init_coef has " + std::to_string(params_.init_coef.size()) + " values but the fit needs " +
                   std::to_string(t) + " target(s) x " + std::to_string(d) + " features = " + std::to_string(t * d));

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
    if (params_.init_coef.empty()) return std::vector<double>();
    return std::vector<double>(params_.init_coef.begin() + k * d, params_.init_coef.begin() + (k + 1) * d);
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
  return *this;
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

std::string ElasticNet::get_params_json() const { return params_json(params_, true).dump(); }
std::string Lasso::get_params_json() const { return params_json(params(), false).dump(); }

namespace detail {

std::unique_ptr<Estimator> elastic_net_from_params(const nlohmann::json& params) {
  return std::make_unique<ElasticNet>(read_params(params, "elastic_net", true));
}

std::unique_ptr<Estimator> lasso_from_params(const nlohmann::json& params) {
  const ElasticNetParams p = read_params(params, "lasso", false);
  return std::make_unique<Lasso>(LassoParams{p.alpha, p.fit_intercept, p.max_iter, p.tol, p.selection, p.positive,
                                             p.random_state, p.init_coef});
}

}  // namespace detail

}  // namespace gpuml

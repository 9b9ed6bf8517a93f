// Ridge: parameters, fitted attributes and the calls into the least-squares driver.
#include "gpuml/linear_model/ridge.hpp"

#include <algorithm>
#include <cmath>

#include "core/params.hpp"
#include "core/registry.hpp"
#include "gpuml/core/error.hpp"
#include "linear_model/least_squares.hpp"

namespace gpuml {

namespace {

const std::vector<std::string> kAttributeNames = {"coef_", "intercept_", "n_features_in_"};

void validate_params(const RidgeParams& p) {
  GPUML_EXPECT(!p.alpha.empty(), "Ridge: alpha must be a number or a non-empty list of numbers");
  for (double a : p.alpha)
    GPUML_EXPECT(std::isfinite(a) && a >= 0, "Ridge: alpha must be finite and >= 0, got " + std::to_string(a));
  GPUML_EXPECT(p.solver == "auto" || p.solver == "cholesky" || p.solver == "svd",
               "Ridge: solver must be \"auto\", \"cholesky\" or \"svd\", got \"" + p.solver + "\"");
}

}  // namespace

Ridge::Ridge(RidgeParams params) : params_(std::move(params)) { validate_params(params_); }

Ridge& Ridge::fit(Context& ctx, const ArrayView& X, const ArrayView& y, const ArrayView* sample_weight) {
  detail::LeastSquaresRequest request;
  request.estimator = "Ridge";
  request.solver = params_.solver == "svd" ? detail::LeastSquaresSolver::ridge_svd : detail::LeastSquaresSolver::cholesky;
  request.fit_intercept = params_.fit_intercept;
  request.alpha = params_.alpha;
  detail::LinearFit fit = detail::fit_least_squares(ctx, X, y, sample_weight, request);
  coef_ = std::move(fit.coef);
  intercept_ = std::move(fit.intercept);
  n_features_in_ = std::move(fit.n_features_in);
  return *this;
}

void Ridge::fit(Context& ctx, const ArrayView& X, const ArrayView* y, const ArrayView* sample_weight) {
  GPUML_EXPECT(y != nullptr, "Ridge.fit needs y");
  fit(ctx, X, *y, sample_weight);
}

ArraySpec Ridge::output_spec(const std::string& method, int64_t n_rows) const {
  if (method == "predict") {
    require_fitted();
    return detail::linear_output_spec(coef_, n_rows);
  }
  return Estimator::output_spec(method, n_rows);
}

void Ridge::predict(Context& ctx, const ArrayView& X, const ArrayView& out) const {
  require_fitted();
  detail::linear_predict(ctx, X, coef_, intercept_, out, "Ridge");
}

const HostArray& Ridge::coef() const {
  require_fitted();
  return coef_;
}
const HostArray& Ridge::intercept() const {
  require_fitted();
  return intercept_;
}
int64_t Ridge::n_features_in() const {
  require_fitted();
  return *n_features_in_.as<const int64_t>();
}

std::vector<std::string> Ridge::attribute_names() const { return kAttributeNames; }

const HostArray& Ridge::attribute(const std::string& name) const {
  if (std::find(kAttributeNames.begin(), kAttributeNames.end(), name) == kAttributeNames.end())
    throw_error(ErrorCode::invalid_argument, "ridge has no attribute '" + name + "' (known: coef_, intercept_, n_features_in_)");
  require_fitted();
  if (name == "coef_") return coef_;
  if (name == "intercept_") return intercept_;
  return n_features_in_;
}

void Ridge::restore(std::map<std::string, HostArray> attributes) {
  detail::check_linear_attributes(attributes, kAttributeNames, kind());
  const HostArray& coef = attributes.at("coef_");
  const int64_t t = coef.spec().ndim == 1 ? 1 : coef.spec().shape[0];
  GPUML_EXPECT(params_.alpha.size() == 1 || static_cast<int64_t>(params_.alpha.size()) == t,
               "ridge model: alpha has " + std::to_string(params_.alpha.size()) + " values but coef_ has " +
                   std::to_string(t) + " target(s)");
  coef_ = std::move(attributes.at("coef_"));
  intercept_ = std::move(attributes.at("intercept_"));
  n_features_in_ = std::move(attributes.at("n_features_in_"));
}

std::string Ridge::get_params_json() const {
  nlohmann::json j;
  // One alpha is written as a number (scikit-learn's usual form), several as a list.
  j["alpha"] = params_.alpha.size() == 1 ? nlohmann::json(params_.alpha[0]) : nlohmann::json(params_.alpha);
  j["fit_intercept"] = params_.fit_intercept;
  j["solver"] = params_.solver;
  return j.dump();
}

namespace detail {

std::unique_ptr<Estimator> ridge_from_params(const nlohmann::json& params) {
  ParamReader reader(params, "ridge");
  RidgeParams p;
  if (reader.has("alpha")) {
    const nlohmann::json& alpha = reader.raw("alpha");
    const char* expected = "a number >= 0 or a non-empty list of numbers >= 0";
    p.alpha.clear();
    if (alpha.is_number() && !alpha.is_boolean()) {
      p.alpha.push_back(alpha.get<double>());
    } else if (alpha.is_array() && !alpha.empty()) {
      for (const auto& v : alpha) {
        if (!v.is_number() || v.is_boolean()) reader.fail("alpha", expected);
        p.alpha.push_back(v.get<double>());
      }
    } else {
      reader.fail("alpha", expected);
    }
    for (double a : p.alpha)
      if (!std::isfinite(a) || a < 0) reader.fail("alpha", expected);
  }
  p.fit_intercept = reader.get_bool("fit_intercept", p.fit_intercept);
  p.solver = reader.get_string("solver", p.solver);
  if (p.solver != "auto" && p.solver != "cholesky" && p.solver != "svd")
    reader.fail("solver", "\"auto\", \"cholesky\" or \"svd\"");
  reader.finish();
  return std::make_unique<Ridge>(std::move(p));
}

}  // namespace detail

}  // namespace gpuml

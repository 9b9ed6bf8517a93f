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

const std::vector<std::string> kAttributeNames = {"coef_", "intercept_", "n_features_in_", "converged_"};
// scikit-learn's solver names; see RidgeParams::solver for what each runs.
const std::vector<std::string> kSolvers = {"auto", "svd", "cholesky", "lsqr", "sparse_cg", "sag", "saga", "lbfgs"};

bool known_solver(const std::string& solver) {
  return std::find(kSolvers.begin(), kSolvers.end(), solver) != kSolvers.end();
}

void validate_params(const RidgeParams& p) {
  GPUML_EXPECT(!p.alpha.empty(), "Ridge: alpha must be a number or a non-empty list of numbers");
  for (double a : p.alpha)
    GPUML_EXPECT(std::isfinite(a) && a >= 0, "Ridge: alpha must be finite and >= 0, got " + std::to_string(a));
  GPUML_EXPECT(known_solver(p.solver),
               "Ridge: solver must be one of \"auto\", \"svd\", \"cholesky\", \"lsqr\", \"sparse_cg\", \"sag\", "
               "\"saga\", \"lbfgs\", got \"" + p.solver + "\"");
  GPUML_EXPECT(!p.max_iter || *p.max_iter >= 1, "Ridge: max_iter must be >= 1 or unset, got " +
                                                    std::to_string(p.max_iter.value_or(0)));
  GPUML_EXPECT(std::isfinite(p.tol) && p.tol >= 0, "Ridge: tol must be finite and >= 0, got " + std::to_string(p.tol));
  // scikit-learn's rules and messages.
  GPUML_EXPECT(!p.positive || p.solver == "auto" || p.solver == "lbfgs",
               "solver='" + p.solver + "' does not support positive fitting. Please set the solver to 'auto' or " +
                   "'lbfgs', or set `positive=False`");
  GPUML_EXPECT(p.positive || p.solver != "lbfgs",
               "'lbfgs' solver can be used only when positive=True. Please use another solver.");
}

detail::LeastSquaresSolver solver_for(const RidgeParams& p) {
  if (p.positive) return detail::LeastSquaresSolver::nonnegative;
  if (p.solver == "svd") return detail::LeastSquaresSolver::ridge_svd;
  return detail::LeastSquaresSolver::cholesky;  // the exact minimizer the iterative solvers approach
}

}  // namespace

Ridge::Ridge(RidgeParams params) : params_(std::move(params)) { validate_params(params_); }

Ridge& Ridge::fit(Context& ctx, const ArrayView& X, const ArrayView& y, const ArrayView* sample_weight) {
  detail::LeastSquaresRequest request;
  request.estimator = "Ridge";
  request.solver = solver_for(params_);
  request.fit_intercept = params_.fit_intercept;
  request.alpha = params_.alpha;
  request.max_iter = params_.max_iter.value_or(0);
  request.tol = params_.tol;
  detail::LinearFit fit = detail::fit_least_squares(ctx, X, y, sample_weight, request);
  coef_ = std::move(fit.coef);
  intercept_ = std::move(fit.intercept);
  n_features_in_ = std::move(fit.n_features_in);
  converged_ = std::move(fit.converged);
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
bool Ridge::converged() const {
  require_fitted();
  return *converged_.as<const int64_t>() != 0;
}

std::vector<std::string> Ridge::attribute_names() const { return kAttributeNames; }

const HostArray& Ridge::attribute(const std::string& name) const {
  if (std::find(kAttributeNames.begin(), kAttributeNames.end(), name) == kAttributeNames.end())
    throw_error(ErrorCode::invalid_argument,
                "ridge has no attribute '" + name + "' (known: coef_, intercept_, n_features_in_, converged_)");
  require_fitted();
  if (name == "coef_") return coef_;
  if (name == "intercept_") return intercept_;
  if (name == "converged_") return converged_;
  return n_features_in_;
}

void Ridge::restore(std::map<std::string, HostArray> attributes) {
  // converged_ came with positive; models saved before it have none (a direct solve: 1).
  HostArray converged = detail::take_converged(attributes, kind());
  detail::check_linear_attributes(attributes, {"coef_", "intercept_", "n_features_in_"}, kind());
  const HostArray& coef = attributes.at("coef_");
  const int64_t t = coef.spec().ndim == 1 ? 1 : coef.spec().shape[0];
  GPUML_EXPECT(params_.alpha.size() == 1 || static_cast<int64_t>(params_.alpha.size()) == t,
               "ridge model: alpha has " + std::to_string(params_.alpha.size()) + " values but coef_ has " +
                   std::to_string(t) + " target(s)");
  coef_ = std::move(attributes.at("coef_"));
  intercept_ = std::move(attributes.at("intercept_"));
  n_features_in_ = std::move(attributes.at("n_features_in_"));
  converged_ = std::move(converged);
}

std::string Ridge::get_params_json() const {
  nlohmann::json j;
  // One alpha is written as a number (scikit-learn's usual form), several as a list.
  j["alpha"] = params_.alpha.size() == 1 ? nlohmann::json(params_.alpha[0]) : nlohmann::json(params_.alpha);
  j["fit_intercept"] = params_.fit_intercept;
  j["solver"] = params_.solver;
  j["max_iter"] = params_.max_iter ? nlohmann::json(*params_.max_iter) : nlohmann::json(nullptr);
  j["tol"] = params_.tol;
  j["positive"] = params_.positive;
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
  if (!known_solver(p.solver))
    reader.fail("solver", "one of \"auto\", \"svd\", \"cholesky\", \"lsqr\", \"sparse_cg\", \"sag\", \"saga\", \"lbfgs\"");
  if (reader.has("max_iter")) {
    const int64_t max_iter = reader.get_int("max_iter", 0);
    if (max_iter < 1) reader.fail("max_iter", "an integer >= 1 or null");
    p.max_iter = max_iter;
  }
  p.tol = reader.get_double("tol", p.tol);
  if (!std::isfinite(p.tol) || p.tol < 0) reader.fail("tol", "a finite number >= 0");
  p.positive = reader.get_bool("positive", p.positive);
  reader.finish();
  return std::make_unique<Ridge>(std::move(p));
}

}  // namespace detail

}  // namespace gpuml

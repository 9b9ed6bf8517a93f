// Ridge: parameters, fitted attributes and the calls into the least-squares driver.
#include "gpuml/linear_model/ridge.hpp"

#include <algorithm>
#include <cmath>

#include "core/param_table.hpp"
#include "core/params.hpp"
#include "core/registry.hpp"
#include "gpuml/core/error.hpp"
#include "linear_model/least_squares.hpp"

namespace gpuml {

namespace {

const std::vector<std::string> kAttributeNames = {"coef_", "intercept_", "n_features_in_", "converged_"};

// Ridge's parameters, declared once, in scikit-learn's order.
const detail::ParamTable<RidgeParams>& params_table() {
  using namespace detail;
  using P = RidgeParams;
  static const ParamTable<P> table(
      "ridge",
      {
          ParamRow<P>{"alpha", {number_in(0), numbers()},
                      "The penalty's strength, >= 0: one for every target, or a list of one per target.",
                      [](P& p, const nlohmann::json& v) {
                        p.alpha = v.is_array() ? flat_numbers(v) : std::vector<double>{v.get<double>()};
                      },
                      [](const P& p) {  // one alpha as a number (scikit-learn's usual form), several as a list
                        return p.alpha.size() == 1 ? nlohmann::json(p.alpha[0]) : nlohmann::json(p.alpha);
                      }},
          field("fit_intercept", &P::fit_intercept, {boolean()}, "Whether to fit an intercept (X and y centered)."),
          field("copy_X", &P::copy_X, {boolean()}, "Accepted, without effect: gpuml never writes to X.").per_rank(),
          field("max_iter", &P::max_iter, {integer_in(1), null_form()},
                "positive=True: the active set's step limit per target (null: 3 n_features + 10); the direct "
                "solves need none (nor do scikit-learn's \"svd\" and \"cholesky\")."),
          field("tol", &P::tol, {number_in(0)},
                "positive=True: the tolerance of the active set's optimality conditions, relative to max|X^T y|; "
                "the direct solves need none."),
          field("solver", &P::solver,
                {one_of({"auto", "svd", "cholesky", "lsqr", "sparse_cg", "sag", "saga", "lbfgs"})},
                "Any scikit-learn name; gpuml solves the same objective exactly: \"svd\" by QR, then the SVD of R "
                "(the minimum-norm solution when alpha = 0 and X is singular); the others by the normal equations "
                "plus alpha through Cholesky (the minimizer scikit-learn's iterative solvers approach; alpha = 0 "
                "with singular X falls back to \"svd\", as scikit-learn's \"cholesky\"); \"lbfgs\" only with "
                "positive=True."),
          field("positive", &P::positive, {boolean()},
                "Constrains the coefficients to be >= 0, solved exactly by an active set on X^T X + alpha I; "
                "solver must be \"auto\" or \"lbfgs\"."),
          field("random_state", &P::random_state, {seed()},
                "Accepted, without effect: only scikit-learn's sag and saga draw at random; gpuml's solves do not.")
              .per_rank(),
      },
      [](const P& p) {
        // A list's form says only that its values are finite numbers.
        if (p.alpha.empty() || std::any_of(p.alpha.begin(), p.alpha.end(), [](double a) { return a < 0; }))
          throw_error(ErrorCode::invalid_argument,
                      "ridge parameter 'alpha' must be a finite number >= 0 or a non-empty list of them, got " +
                          json_excerpt(nlohmann::json(p.alpha)));
        // scikit-learn's rules and messages.
        GPUML_EXPECT(!p.positive || p.solver == "auto" || p.solver == "lbfgs",
                     "solver='" + p.solver + "' does not support positive fitting. Please set the solver to 'auto' "
                     "or 'lbfgs', or set `positive=False`");
        GPUML_EXPECT(p.positive || p.solver != "lbfgs",
                     "'lbfgs' solver can be used only when positive=True. Please use another solver.");
      });
  return table;
}

detail::LeastSquaresSolver solver_for(const RidgeParams& p) {
  if (p.positive) return detail::LeastSquaresSolver::nonnegative;
  if (p.solver == "svd") return detail::LeastSquaresSolver::ridge_svd;
  return detail::LeastSquaresSolver::cholesky;  // the exact minimizer the iterative solvers approach
}

}  // namespace

Ridge::Ridge(RidgeParams params) : params_(std::move(params)) { params_table().check(params_); }

namespace {

detail::LeastSquaresRequest request_for(const RidgeParams& params) {
  detail::LeastSquaresRequest request;
  request.estimator = "Ridge";
  request.solver = solver_for(params);
  request.fit_intercept = params.fit_intercept;
  request.alpha = params.alpha;
  request.max_iter = params.max_iter.value_or(0);
  request.tol = params.tol;
  request.rank_fields = params_table().rank_fields(params);
  return request;
}

}  // namespace

Ridge& Ridge::fit(Context& ctx, const ArrayView& X, const ArrayView& y, const ArrayView* sample_weight) {
  adopt(detail::fit_least_squares(ctx, X, y, sample_weight, request_for(params_)));
  return *this;
}

void Ridge::fit_sparse(Context& ctx, const SparseView& X, const ArrayView* y, const ArrayView* sample_weight) {
  GPUML_EXPECT(y != nullptr, "Ridge.fit needs y");
  adopt(detail::fit_least_squares_sparse(ctx, X, *y, sample_weight, request_for(params_)));
}

void Ridge::predict_sparse(Context& ctx, const SparseView& X, const ArrayView& out) const {
  require_fitted();
  detail::linear_predict_sparse(ctx, X, coef_, intercept_, out, "Ridge");
}

void Ridge::adopt(detail::LinearFit fit) {
  coef_ = std::move(fit.coef);
  intercept_ = std::move(fit.intercept);
  n_features_in_ = std::move(fit.n_features_in);
  converged_ = std::move(fit.converged);
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

std::string Ridge::get_params_json() const { return params_table().write(params_).dump(); }

namespace detail {

std::unique_ptr<Estimator> ridge_from_params(const nlohmann::json& params) {
  return std::make_unique<Ridge>(params_table().read(params));
}

nlohmann::json ridge_params_schema() { return params_table().schema(); }

}  // namespace detail

}  // namespace gpuml

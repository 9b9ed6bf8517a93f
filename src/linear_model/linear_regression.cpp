// LinearRegression: parameters, fitted attributes and the calls into the least-squares driver.
#include "gpuml/linear_model/linear_regression.hpp"

#include <algorithm>
#include <cmath>

#include "core/deferred.hpp"
#include "core/param_table.hpp"
#include "core/registry.hpp"
#include "gpuml/core/error.hpp"
#include "linear_model/least_squares.hpp"

namespace gpuml {

namespace {

const std::vector<std::string> kAttributeNames = {"coef_",   "intercept_",     "singular_values_",
                                                  "rank_",   "n_features_in_", "converged_"};

// LinearRegression's parameters, declared once: scikit-learn's, in its order, then gpuml's algorithm.
const detail::ParamTable<LinearRegressionParams>& params_table() {
  using namespace detail;
  using P = LinearRegressionParams;
  static const ParamTable<P> table(
      "linear_regression",
      {
          field("fit_intercept", &P::fit_intercept, {boolean()}, "Whether to fit an intercept (X and y centered)."),
          field("copy_X", &P::copy_X, {boolean()}, "Accepted, without effect: gpuml never writes to X.").per_rank(),
          field("tol", &P::tol, {number_in(0)},
                "As scikit-learn 1.9's lstsq cond: singular values below tol * s_max count as zero in the "
                "minimum-norm solution (algorithm \"auto\" and \"svd\"; \"eig\" and \"qr\" solve full-rank X "
                "exactly). With positive=True: the tolerance of the active set's optimality conditions, relative "
                "to max|X^T y|."),
          field("n_jobs", &P::n_jobs, {null_form(), any_integer()},
                "Accepted, without effect: the CPU backend's threads are the context's.")
              .per_rank(),
          field("positive", &P::positive, {boolean()},
                "Constrains the coefficients to be >= 0: non-negative least squares (scipy.optimize.nnls's "
                "problem), solved exactly by an active set on X^T X, whatever the algorithm."),
          field("algorithm", &P::algorithm, {one_of({"auto", "eig", "qr", "svd"})},
                "gpuml's: how to solve. \"eig\": the normal equations, eigen-decomposed (fastest; squares the "
                "condition number; rank-deficient X is an error); \"qr\": Householder QR (rank-deficient X is an "
                "error); \"svd\": QR, then the SVD of R (the minimum-norm solution for any X); \"auto\": \"eig\", "
                "falling back to \"svd\" when X is rank deficient or ill conditioned."),
      });
  return table;
}

detail::LeastSquaresSolver solver_for(const std::string& algorithm) {
  if (algorithm == "eig") return detail::LeastSquaresSolver::eig;
  if (algorithm == "qr") return detail::LeastSquaresSolver::qr;
  if (algorithm == "svd") return detail::LeastSquaresSolver::svd;
  return detail::LeastSquaresSolver::auto_eig;  // "auto" (the table allows no other)
}

}  // namespace

LinearRegression::LinearRegression(LinearRegressionParams params) : params_(std::move(params)) {
  params_table().check(params_);
}

namespace {

detail::LeastSquaresRequest request_for(const LinearRegressionParams& params) {
  detail::LeastSquaresRequest request;
  request.estimator = "LinearRegression";
  request.solver = params.positive ? detail::LeastSquaresSolver::nonnegative : solver_for(params.algorithm);
  request.fit_intercept = params.fit_intercept;
  request.lstsq_cond = params.tol;
  request.tol = params.tol;
  request.rank_fields = params_table().rank_fields(params);
  return request;
}

}  // namespace

LinearRegression& LinearRegression::fit(Context& ctx, const ArrayView& X, const ArrayView& y,
                                        const ArrayView* sample_weight) {
  adopt(detail::fit_least_squares(ctx, X, y, sample_weight, request_for(params_)));
  return *this;
}

void LinearRegression::fit_sparse(Context& ctx, const SparseView& X, const ArrayView* y, const ArrayView* sample_weight) {
  GPUML_EXPECT(y != nullptr, "LinearRegression.fit needs y");
  adopt(detail::fit_least_squares_sparse(ctx, X, *y, sample_weight, request_for(params_)));
}

void LinearRegression::predict_sparse(Context& ctx, const SparseView& X, const ArrayView& out) const {
  require_fitted();
  detail::linear_predict_sparse(ctx, X, coef_, intercept_, out, "LinearRegression");
}

void LinearRegression::adopt(detail::LinearFit fit) {
  // Replace the fitted state only once everything has succeeded.
  coef_ = std::move(fit.coef);
  intercept_ = std::move(fit.intercept);
  singular_values_ = std::move(fit.singular_values);
  rank_ = std::move(fit.rank);
  n_features_in_ = std::move(fit.n_features_in);
  converged_ = std::move(fit.converged);
}

void LinearRegression::fit(Context& ctx, const ArrayView& X, const ArrayView* y, const ArrayView* sample_weight) {
  GPUML_EXPECT(y != nullptr, "LinearRegression.fit needs y");
  fit(ctx, X, *y, sample_weight);
}

ArraySpec LinearRegression::output_spec(const std::string& method, int64_t n_rows) const {
  if (method == "predict") {
    require_fitted();
    return detail::linear_output_spec(coef_, n_rows);
  }
  return Estimator::output_spec(method, n_rows);
}

void LinearRegression::predict(Context& ctx, const ArrayView& X, const ArrayView& out) const {
  require_fitted();
  detail::linear_predict(ctx, X, coef_, intercept_, out, "LinearRegression");
}

const HostArray& LinearRegression::coef() const {
  require_fitted();
  return coef_;
}
const HostArray& LinearRegression::intercept() const {
  require_fitted();
  return intercept_;
}
const HostArray& LinearRegression::singular_values() const {
  require_fitted();
  return singular_values_->get();
}
int64_t LinearRegression::rank() const {
  require_fitted();
  return *rank_.as<const int64_t>();
}
int64_t LinearRegression::n_features_in() const {
  require_fitted();
  return *n_features_in_.as<const int64_t>();
}
bool LinearRegression::converged() const {
  require_fitted();
  return *converged_.as<const int64_t>() != 0;
}

std::vector<std::string> LinearRegression::attribute_names() const { return kAttributeNames; }

const HostArray& LinearRegression::attribute(const std::string& name) const {
  if (std::find(kAttributeNames.begin(), kAttributeNames.end(), name) == kAttributeNames.end())
    throw_error(ErrorCode::invalid_argument,
                "linear_regression has no attribute '" + name +
                    "' (known: coef_, intercept_, singular_values_, rank_, n_features_in_, converged_)");
  require_fitted();
  if (name == "coef_") return coef_;
  if (name == "converged_") return converged_;
  if (name == "intercept_") return intercept_;
  if (name == "singular_values_") return singular_values_->get();
  if (name == "rank_") return rank_;
  return n_features_in_;
}

void LinearRegression::restore(std::map<std::string, HostArray> attributes) {
  // converged_ came with positive; models saved before it have none (a direct solve: 1).
  HostArray converged = detail::take_converged(attributes, kind());
  detail::check_linear_attributes(attributes, {"coef_", "intercept_", "singular_values_", "rank_", "n_features_in_"},
                                  kind());
  coef_ = std::move(attributes.at("coef_"));
  intercept_ = std::move(attributes.at("intercept_"));
  singular_values_ = std::make_shared<detail::DeferredArray>(std::move(attributes.at("singular_values_")));
  rank_ = std::move(attributes.at("rank_"));
  n_features_in_ = std::move(attributes.at("n_features_in_"));
  converged_ = std::move(converged);
}

std::string LinearRegression::get_params_json() const { return params_table().write(params_).dump(); }

namespace detail {

std::unique_ptr<Estimator> linear_regression_from_params(const nlohmann::json& params) {
  return std::make_unique<LinearRegression>(params_table().read(params));
}

nlohmann::json linear_regression_params_schema() { return params_table().schema(); }

}  // namespace detail

}  // namespace gpuml

// LogisticRegression: parameters, fitted attributes, and the fit, written once for every backend:
// labels, class and sample weights on the host; the loss and gradient over X by the backend;
// L-BFGS (smooth penalties) or OWL-QN (L1) on the host over the few coefficients.
//
// Distributed (SPMD, the context's communicator): every rank passes its own rows. The ranks
// check their inputs together (a bad rank makes every rank throw) and agree on n_features, dtype
// and the parameters; the classes are the union of every rank's labels (sorted, the same on every
// rank, so a rank may hold rows of one class only); "balanced" class weights count the rows of
// all ranks; the weight total behind the penalty's scale is summed over ranks; and every
// evaluation of the objective sums the ranks' losses and gradients (reduced once and broadcast:
// the same bits everywhere). The quasi-Newton iterations then see the same numbers on every rank
// and take the same steps and decisions, so every rank ends with the same coefficients, those of
// a 1-process fit on all rows up to the order of the sums. One rank (the local communicator):
// every collective is the identity, and the fit is what it always was.
#include "gpuml/linear_model/logistic_regression.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <sstream>

#include "core/distributed.hpp"
#include "core/parallel.hpp"
#include "core/params.hpp"
#include "core/labels.hpp"
#include "core/registry.hpp"
#include "core/staging.hpp"
#include "core/trace.hpp"
#include "gpuml/core/comm.hpp"
#include "gpuml/core/error.hpp"
#include "linear_model/least_squares.hpp"
#include "linear_model/logistic_backend.hpp"
#include "linear_model/quasi_newton.hpp"

namespace gpuml {

namespace {

const std::vector<std::string> kAttributeNames = {"classes_", "coef_",      "intercept_",
                                                  "n_iter_",  "converged_", "n_features_in_"};

template <typename T>
std::unique_ptr<detail::LogisticBackend<T>> make_backend(const Context& ctx) {
  return ctx.is_cuda() ? detail::make_logistic_cuda_backend<T>(ctx) : detail::make_logistic_cpu_backend<T>(ctx);
}

std::string number(double v) { return detail::number_text(v); }

// scikit-learn >= 1.8's rule: without an explicit penalty, l1_ratio chooses it (unset counts as 0).
std::string penalty_from_l1_ratio(double l1_ratio) {
  if (l1_ratio == -1.0 || l1_ratio == 0.0) return "l2";
  if (l1_ratio == 1.0) return "l1";
  return "elasticnet";
}

void validate_params(const LogisticRegressionParams& p) {
  const std::string& pen = p.penalty;
  GPUML_EXPECT(pen == "l2" || pen == "l1" || pen == "elasticnet" || pen == "none",
               "LogisticRegression: penalty must be \"l2\", \"l1\", \"elasticnet\" or None, got \"" + pen + "\"");
  GPUML_EXPECT(std::isfinite(p.C) && p.C > 0, "LogisticRegression: C must be a finite number > 0, got " + number(p.C));
  if (pen == "elasticnet")
    GPUML_EXPECT(p.l1_ratio >= 0 && p.l1_ratio <= 1,
                 "LogisticRegression: penalty=\"elasticnet\" needs l1_ratio in [0, 1], got " +
                     (p.l1_ratio == -1.0 ? std::string("none") : number(p.l1_ratio)));
  else
    GPUML_EXPECT(p.l1_ratio == -1.0 || (p.l1_ratio >= 0 && p.l1_ratio <= 1),
                 "LogisticRegression: l1_ratio must be in [0, 1] or unset, got " + number(p.l1_ratio));
  GPUML_EXPECT(p.max_iter >= 0, "LogisticRegression: max_iter must be >= 0, got " + std::to_string(p.max_iter));
  GPUML_EXPECT(std::isfinite(p.tol) && p.tol >= 0, "LogisticRegression: tol must be finite and >= 0, got " + number(p.tol));
  GPUML_EXPECT(std::isfinite(p.intercept_scaling) && p.intercept_scaling >= 0,
               "LogisticRegression: intercept_scaling must be finite and >= 0 (0: the intercept is not penalized), got " +
                   number(p.intercept_scaling));
  const auto finite = [](const std::vector<double>& v) {
    return std::all_of(v.begin(), v.end(), [](double x) { return std::isfinite(x); });
  };
  GPUML_EXPECT(finite(p.init_coef) && finite(p.init_intercept),
               "LogisticRegression: init_coef and init_intercept (the warm start) must be finite");
  GPUML_EXPECT(!p.init_coef.empty() || p.init_intercept.empty(),
               "LogisticRegression: init_intercept needs init_coef (the warm start is coef_ with its intercept_)");
  GPUML_EXPECT(!(p.class_weight_balanced && !p.class_weight.empty()),
               "LogisticRegression: class_weight is either \"balanced\" or a list of (label, weight), not both");
  for (const auto& [label, weight] : p.class_weight) {
    GPUML_EXPECT(std::isfinite(label), "LogisticRegression: class_weight labels must be finite");
    GPUML_EXPECT(std::isfinite(weight) && weight >= 0,
                 "LogisticRegression: class_weight for label " + number(label) + " must be finite and >= 0, got " +
                     number(weight));
  }
}

// The L1 fraction of the penalty (ρ) and whether there is a penalty at all.
double l1_fraction(const LogisticRegressionParams& p) {
  if (p.penalty == "l1") return 1.0;
  if (p.penalty == "elasticnet") return p.l1_ratio;
  return 0.0;
}

// The weight of each row: sample_weight (checked, w) times its class's weight ("balanced" counts
// the rows of every rank). Empty when every weight is 1.
std::vector<double> row_weights(std::vector<double> w, const detail::Labels& labels, const LogisticRegressionParams& p,
                                Comm& comm) {
  const std::vector<double> class_weight =
      detail::class_weights(labels, w, p.class_weight_balanced, p.class_weight, "LogisticRegression", &comm);
  const bool unit_classes = std::all_of(class_weight.begin(), class_weight.end(), [](double v) { return v == 1.0; });
  if (unit_classes) return w;
  const std::size_t n = labels.index.size();
  if (w.empty()) w.assign(n, 1.0);
  for (std::size_t i = 0; i < n; ++i) w[i] *= class_weight[labels.index[i]];
  return w;
}

// The fit's problem, for one float type: the staged data, and the objective over the packed
// variables [coef (k x d, row-major), intercept (k) when fit_intercept], summed over the ranks of
// the context's communicator.
template <typename T>
class LogisticFit {
 public:
  LogisticFit(Context& ctx, const LogisticRegressionParams& p, const ArrayView& X, const detail::Labels& labels,
              const std::vector<double>& weights)
      : backend_(make_backend<T>(ctx)), n_(X.shape[0]), d_(X.shape[1]),
        k_(labels.classes.size() == 2 ? 1 : static_cast<int64_t>(labels.classes.size())),
        fit_intercept_(p.fit_intercept), X_(X.as<const T>()), comm_(ctx.comm()) {
    label_host_ = HostArray(DType::int32, n_);
    std::copy(labels.index.begin(), labels.index.end(), label_host_.as<int32_t>());
    labels_ = detail::stage_host(ctx, label_host_);
    weight_sum_ = static_cast<double>(n_);
    if (!weights.empty()) {
      weight_host_ = HostArray(dtype_of<T>::value, n_);
      weight_sum_ = 0.0;
      for (int64_t i = 0; i < n_; ++i) {
        weight_host_.as<T>()[i] = static_cast<T>(weights[i]);
        weight_sum_ += static_cast<double>(weight_host_.as<T>()[i]);
      }
      weights_ = detail::stage_host(ctx, weight_host_);
    }
    comm_.allreduce_sum(&weight_sum_, 1);  // every rank's rows
    GPUML_EXPECT(weight_sum_ > 0, "LogisticRegression: sample_weight (times the class weights of class_weight) sums to 0; "
                                  "some rows need a positive weight");
    const double strength = p.penalty == "none" ? 0.0 : 1.0 / (p.C * weight_sum_);
    // The penalty's weight scales with 1 / (C · total weight): a tiny C (or tiny weights) makes it
    // infinite, and every objective value with it. Any C for which it is finite still fits.
    GPUML_EXPECT(std::isfinite(strength),
                 "LogisticRegression: C = " + number(p.C) + " is too small for these sample weights (total " +
                     number(weight_sum_) + "): the penalty 1 / (C * total weight) overflows; C * total weight must be >= " +
                     number(1.0 / std::numeric_limits<double>::max()));
    l2_ = strength * (1.0 - l1_fraction(p));
    l1_weight_ = strength * l1_fraction(p);
    // liblinear's objective: the intercept b = s v with v penalized like a coefficient, so b's
    // penalty weights are those of v divided by s (L1) and s² (L2).
    if (p.fit_intercept && p.intercept_scaling > 0) {
      intercept_l2_ = l2_ / (p.intercept_scaling * p.intercept_scaling);
      intercept_l1_ = l1_weight_ / p.intercept_scaling;
    }
    coef_host_.assign(static_cast<std::size_t>(k_ * (d_ + 1)), 0.0);
    grad_host_.assign(coef_host_.size() + 1, 0.0);  // the gradient, then the loss: one allreduce
  }

  int64_t n_variables() const { return k_ * d_ + (fit_intercept_ ? k_ : 0); }
  int64_t k() const { return k_; }

  // L1 weights per variable: the coefficients, and the intercepts only under intercept_scaling.
  std::vector<double> l1_weights() const {
    if (l1_weight_ == 0) return {};
    std::vector<double> l1(static_cast<std::size_t>(n_variables()), intercept_l1_);
    std::fill(l1.begin(), l1.begin() + k_ * d_, l1_weight_);
    return l1;
  }

  // The smooth part of the objective: the mean weighted loss plus the L2 term.
  double operator()(const std::vector<double>& x, std::vector<double>& grad) {
    for (int64_t c = 0; c < k_; ++c) {
      for (int64_t j = 0; j < d_; ++j) coef_host_[c * (d_ + 1) + j] = x[c * d_ + j];
      coef_host_[c * (d_ + 1) + d_] = fit_intercept_ ? x[k_ * d_ + c] : 0.0;
    }
    const T* w = weights_.view.data ? weights_.view.as<const T>() : nullptr;
    grad_host_.back() = backend_->loss_gradient(X_, labels_.view.as<const int32_t>(), w, n_, d_, k_, coef_host_.data(),
                                                grad_host_.data());
    comm_.allreduce_sum(grad_host_.data(), static_cast<int64_t>(grad_host_.size()));
    double f = grad_host_.back() / weight_sum_;
    for (int64_t c = 0; c < k_; ++c) {
      for (int64_t j = 0; j < d_; ++j) {
        const double b = x[c * d_ + j];
        grad[c * d_ + j] = grad_host_[c * (d_ + 1) + j] / weight_sum_ + l2_ * b;
        f += 0.5 * l2_ * b * b;
      }
      if (fit_intercept_) {
        const double b = x[k_ * d_ + c];
        grad[k_ * d_ + c] = grad_host_[c * (d_ + 1) + d_] / weight_sum_ + intercept_l2_ * b;
        f += 0.5 * intercept_l2_ * b * b;
      }
    }
    return f;
  }

 private:
  std::unique_ptr<detail::LogisticBackend<T>> backend_;
  int64_t n_, d_, k_;
  bool fit_intercept_;
  const T* X_;
  Comm& comm_;
  HostArray label_host_, weight_host_;  // staged views alias these on the CPU
  detail::Staged labels_, weights_;
  double weight_sum_ = 0.0, l2_ = 0.0, l1_weight_ = 0.0;
  double intercept_l2_ = 0.0, intercept_l1_ = 0.0;  // nonzero only under intercept_scaling
  std::vector<double> coef_host_, grad_host_;
};

HostArray int64_array(std::vector<int64_t> values, bool scalar) {
  HostArray a = scalar ? HostArray::scalar(DType::int64) : HostArray(DType::int64, static_cast<int64_t>(values.size()));
  std::copy(values.begin(), values.end(), a.as<int64_t>());
  return a;
}

}  // namespace

LogisticRegression::LogisticRegression(LogisticRegressionParams params) : params_(std::move(params)) {
  if (params_.penalty.empty()) params_.penalty = penalty_from_l1_ratio(params_.l1_ratio);
  validate_params(params_);
}

LogisticRegression& LogisticRegression::fit(Context& ctx, const ArrayView& X, const ArrayView& y,
                                            const ArrayView* sample_weight) {
  Comm& comm = ctx.comm();
  int64_t n = 0, d = 0;
  DType dtype = DType::float64;
  detail::Trace trace(ctx, "LogisticRegression");
  detail::Staged Xs;
  detail::LabelValues y_values;
  std::vector<double> sw;
  detail::check_on_every_rank(comm, "LogisticRegression", "checking X, y and sample_weight", [&] {
    detail::check_matrix_shape(X);
    n = X.shape[0];
    d = X.shape[1];
    dtype = detail::float_dtype_for(X.dtype);
    Xs = detail::stage(ctx, X, dtype, "X");
    detail::require_finite(ctx, Xs.view, "X");
    trace.mark("stage and check X");
    y_values = detail::read_labels(ctx, y, n, "LogisticRegression");
    sw = detail::host_sample_weights(ctx, sample_weight, n);
  });
  std::vector<double> listed;
  for (const auto& [label, weight] : params_.class_weight) listed.insert(listed.end(), {label, weight});
  detail::agree_on_every_rank(comm, "LogisticRegression", n,
                              {{"n_features", d},
                               {"dtype (0 float32, 1 float64)", static_cast<int64_t>(dtype)},
                               {"penalty", detail::hash_of(params_.penalty)},
                               {"C (bits)", detail::bits_of(params_.C)},
                               {"l1_ratio (bits)", detail::bits_of(params_.l1_ratio)},
                               {"fit_intercept", params_.fit_intercept ? 1 : 0},
                               {"max_iter", static_cast<int64_t>(params_.max_iter)},
                               {"tol (bits)", detail::bits_of(params_.tol)},
                               {"intercept_scaling (bits)", detail::bits_of(params_.intercept_scaling)},
                               {"init_coef (hash)", detail::hash_of(params_.init_coef)},
                               {"init_intercept (hash)", detail::hash_of(params_.init_intercept)},
                               {"class_weight=\"balanced\"", params_.class_weight_balanced ? 1 : 0},
                               {"class_weight (hash)", detail::hash_of(listed)}});
  // The classes of all ranks; the checks after this point see the same numbers on every rank
  // (the classes, the summed weights), so they fail on all ranks together.
  std::vector<double> classes = detail::union_over_ranks(comm, y_values.classes);
  const detail::Labels labels = detail::index_labels(ctx, y_values, std::move(classes), "LogisticRegression");
  y_values = {};
  trace.mark("labels");
  const std::vector<double> weights = row_weights(std::move(sw), labels, params_, comm);
  trace.mark("weights");

  detail::with_float_type(dtype, [&](auto tag) {
    using T = decltype(tag);
    LogisticFit<T> problem(ctx, params_, Xs.view, labels, weights);
    trace.mark("stage labels and weights");
    std::vector<double> x(static_cast<std::size_t>(problem.n_variables()), 0.0);
    start_from_init(x, problem.k(), d);
    detail::QuasiNewtonOptions options;
    options.max_iter = params_.max_iter;
    options.gtol = params_.tol;
    const detail::QuasiNewtonResult result = detail::minimize_quasi_newton(
        [&](const std::vector<double>& v, std::vector<double>& g) { return problem(v, g); }, x, problem.l1_weights(),
        options);
    if (detail::Trace::enabled())  // the label costs string work: only when tracing
      trace.mark(("optimize: " + std::to_string(result.n_iter) + " iterations, " +
                  std::to_string(result.n_evaluations) + " evaluations").c_str());
    GPUML_EXPECT(std::isfinite(result.objective), "LogisticRegression: the objective is not finite (X too large?)");

    const int64_t k = problem.k();
    HostArray coef(dtype, k, d), intercept(dtype, k), classes(DType::float64, static_cast<int64_t>(labels.classes.size()));
    for (int64_t c = 0; c < k; ++c) {
      for (int64_t j = 0; j < d; ++j) coef.as<T>()[c * d + j] = static_cast<T>(x[c * d + j]);
      intercept.as<T>()[c] = params_.fit_intercept ? static_cast<T>(x[k * d + c]) : T(0);
    }
    std::copy(labels.classes.begin(), labels.classes.end(), classes.as<double>());
    classes_ = std::move(classes);
    coef_ = std::move(coef);
    intercept_ = std::move(intercept);
    n_iter_ = int64_array({result.n_iter}, false);
    converged_ = int64_array({result.converged ? 1 : 0}, true);
    n_features_in_ = int64_array({d}, true);
  });
  return *this;
}

void LogisticRegression::start_from_init(std::vector<double>& x, int64_t k, int64_t d) const {
  if (params_.init_coef.empty()) return;
  const std::string shape = "(" + std::to_string(k) + ", " + std::to_string(d) + ")";
  GPUML_EXPECT(static_cast<int64_t>(params_.init_coef.size()) == k * d,
               "LogisticRegression: init_coef (the warm start) has " + std::to_string(params_.init_coef.size()) +
                   " values, but coef_ for these data has shape " + shape);
  std::copy(params_.init_coef.begin(), params_.init_coef.end(), x.begin());
  if (!params_.fit_intercept || params_.init_intercept.empty()) return;
  GPUML_EXPECT(static_cast<int64_t>(params_.init_intercept.size()) == k,
               "LogisticRegression: init_intercept (the warm start) has " + std::to_string(params_.init_intercept.size()) +
                   " values, but intercept_ for these data has " + std::to_string(k));
  std::copy(params_.init_intercept.begin(), params_.init_intercept.end(), x.begin() + k * d);
}

void LogisticRegression::fit(Context& ctx, const ArrayView& X, const ArrayView* y, const ArrayView* sample_weight) {
  GPUML_EXPECT(y != nullptr, "LogisticRegression.fit needs y");
  fit(ctx, X, *y, sample_weight);
}

ArraySpec LogisticRegression::output_spec(const std::string& method, int64_t n_rows) const {
  if (method != "predict" && method != "predict_proba" && method != "transform")
    return Estimator::output_spec(method, n_rows);
  require_fitted();
  GPUML_EXPECT(n_rows >= 0, "n_rows must be >= 0, got " + std::to_string(n_rows));
  const int64_t n_classes = classes_.spec().shape[0];
  if (method == "predict") return ArraySpec{DType::float64, 1, {n_rows, 0}};
  if (method == "predict_proba") return ArraySpec{coef_.dtype(), 2, {n_rows, n_classes}};
  if (n_classes == 2) return ArraySpec{coef_.dtype(), 1, {n_rows, 0}};
  return ArraySpec{coef_.dtype(), 2, {n_rows, n_classes}};
}

namespace {

// The scores Z = X coefᵀ + intercept (n x k) in the context's memory, then `finish` on them.
template <typename Finish>
void with_scores(Context& ctx, const ArrayView& X, const HostArray& coef, const HostArray& intercept, Finish&& finish) {
  detail::check_matrix_shape(X);
  const int64_t k = coef.spec().shape[0], d = coef.spec().shape[1];
  GPUML_EXPECT(X.shape[1] == d, "X has " + std::to_string(X.shape[1]) +
                                    " features, but LogisticRegression was fitted with " + std::to_string(d) + " features");
  const int64_t n = X.shape[0];
  detail::Staged staged = detail::stage(ctx, X, coef.dtype(), "X");
  detail::require_finite(ctx, staged.view, "X");
  detail::with_float_type(coef.dtype(), [&](auto tag) {
    using T = decltype(tag);
    Buffer Z(ctx, static_cast<std::size_t>(n * k) * sizeof(T));
    detail::make_linear_backend<T>(ctx)->predict(staged.view.as<const T>(), n, d, coef.as<const T>(),
                                                 intercept.as<const T>(), k, Z.as<T>());
    finish(Z.as<T>(), n, k, *make_backend<T>(ctx));
  });
}

}  // namespace

void LogisticRegression::decision_function(Context& ctx, const ArrayView& X, const ArrayView& out) const {
  require_fitted();
  with_scores(ctx, X, coef_, intercept_, [&](auto* Z, int64_t n, int64_t k, auto&) {
    const ArrayView view = k == 1 ? make_view(Z, coef_.dtype(), ctx.device(), n)
                                  : make_view(Z, coef_.dtype(), ctx.device(), n, k);
    detail::write_output(ctx, view, out, "decision function");
  });
}

void LogisticRegression::transform(Context& ctx, const ArrayView& X, const ArrayView& out) const {
  decision_function(ctx, X, out);
}

void LogisticRegression::predict_proba(Context& ctx, const ArrayView& X, const ArrayView& out) const {
  require_fitted();
  with_scores(ctx, X, coef_, intercept_, [&](auto* Z, int64_t n, int64_t k, auto& backend) {
    using T = std::remove_pointer_t<decltype(Z)>;
    const int64_t n_classes = classes_.spec().shape[0];
    Buffer proba(ctx, static_cast<std::size_t>(n * n_classes) * sizeof(T));
    backend.probabilities(Z, n, k, proba.as<T>());
    detail::write_output(ctx, make_view(proba.data(), coef_.dtype(), ctx.device(), n, n_classes), out, "probabilities");
  });
}

void LogisticRegression::predict(Context& ctx, const ArrayView& X, const ArrayView& out) const {
  require_fitted();
  with_scores(ctx, X, coef_, intercept_, [&](auto* Z, int64_t n, int64_t k, auto& backend) {
    Buffer labels(ctx, static_cast<std::size_t>(n) * sizeof(double));
    backend.predict_labels(Z, n, k, classes_.as<const double>(), labels.as<double>());
    detail::write_labels(ctx, make_view(labels.data(), DType::float64, ctx.device(), n), classes_, out);
  });
}

const HostArray& LogisticRegression::classes() const {
  require_fitted();
  return classes_;
}
const HostArray& LogisticRegression::coef() const {
  require_fitted();
  return coef_;
}
const HostArray& LogisticRegression::intercept() const {
  require_fitted();
  return intercept_;
}
int64_t LogisticRegression::n_iter() const {
  require_fitted();
  return n_iter_.as<const int64_t>()[0];
}
bool LogisticRegression::converged() const {
  require_fitted();
  return *converged_.as<const int64_t>() != 0;
}
int64_t LogisticRegression::n_features_in() const {
  require_fitted();
  return *n_features_in_.as<const int64_t>();
}

std::vector<std::string> LogisticRegression::attribute_names() const { return kAttributeNames; }

const HostArray& LogisticRegression::attribute(const std::string& name) const {
  if (std::find(kAttributeNames.begin(), kAttributeNames.end(), name) == kAttributeNames.end())
    throw_error(ErrorCode::invalid_argument,
                "logistic_regression has no attribute '" + name +
                    "' (known: classes_, coef_, intercept_, n_iter_, converged_, n_features_in_)");
  require_fitted();
  if (name == "classes_") return classes_;
  if (name == "coef_") return coef_;
  if (name == "intercept_") return intercept_;
  if (name == "n_iter_") return n_iter_;
  if (name == "converged_") return converged_;
  return n_features_in_;
}

void LogisticRegression::restore(std::map<std::string, HostArray> attributes) {
  const std::string where = "logistic_regression model: ";
  for (const auto& entry : attributes)
    GPUML_EXPECT(std::find(kAttributeNames.begin(), kAttributeNames.end(), entry.first) != kAttributeNames.end(),
                 where + "unknown attribute '" + entry.first + "'");
  for (const std::string& name : kAttributeNames)
    GPUML_EXPECT(attributes.count(name) && !attributes.at(name).empty(), where + "attribute '" + name + "' is missing");

  const HostArray& classes = attributes.at("classes_");
  GPUML_EXPECT(classes.dtype() == DType::float64 && classes.spec().ndim == 1 && classes.spec().shape[0] >= 2,
               where + "classes_ must be a float64 array of at least 2 labels");
  const double* cls = classes.as<const double>();
  const int64_t n_classes = classes.spec().shape[0];
  for (int64_t c = 0; c < n_classes; ++c)
    GPUML_EXPECT(std::isfinite(cls[c]) && (c == 0 || cls[c - 1] < cls[c]),
                 where + "classes_ must be finite and strictly increasing");
  const int64_t k = n_classes == 2 ? 1 : n_classes;

  const HostArray& coef = attributes.at("coef_");
  GPUML_EXPECT(is_floating(coef.dtype()) && coef.spec().ndim == 2 && coef.spec().shape[0] == k &&
                   coef.spec().shape[1] >= 1,
               where + "coef_ must be a float32/float64 array of shape (" + std::to_string(k) + ", n_features)");
  const int64_t d = coef.spec().shape[1];
  const HostArray& intercept = attributes.at("intercept_");
  GPUML_EXPECT(intercept.dtype() == coef.dtype() && intercept.spec().ndim == 1 && intercept.spec().shape[0] == k,
               where + "intercept_ must have coef_'s dtype and shape (" + std::to_string(k) + ",)");
  const bool finite = detail::with_float_type(coef.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* c = coef.as<const T>();
    const T* b = intercept.as<const T>();
    return std::all_of(c, c + k * d, [](T v) { return std::isfinite(v); }) &&
           std::all_of(b, b + k, [](T v) { return std::isfinite(v); });
  });
  GPUML_EXPECT(finite, where + "coef_ and intercept_ must be finite");
  const HostArray& n_iter = attributes.at("n_iter_");
  GPUML_EXPECT(n_iter.dtype() == DType::int64 && n_iter.spec().ndim == 1 && n_iter.spec().shape[0] == 1 &&
                   n_iter.as<const int64_t>()[0] >= 0,
               where + "n_iter_ must be an int64 array of one value >= 0");
  const HostArray& converged = attributes.at("converged_");
  GPUML_EXPECT(converged.dtype() == DType::int64 && converged.spec().ndim == 0 &&
                   (*converged.as<const int64_t>() == 0 || *converged.as<const int64_t>() == 1),
               where + "converged_ must be an int64 scalar, 0 or 1");
  const HostArray& n_features = attributes.at("n_features_in_");
  GPUML_EXPECT(n_features.dtype() == DType::int64 && n_features.spec().ndim == 0 && *n_features.as<const int64_t>() == d,
               where + "n_features_in_ must be an int64 scalar equal to the width of coef_");

  classes_ = std::move(attributes.at("classes_"));
  coef_ = std::move(attributes.at("coef_"));
  intercept_ = std::move(attributes.at("intercept_"));
  n_iter_ = std::move(attributes.at("n_iter_"));
  converged_ = std::move(attributes.at("converged_"));
  n_features_in_ = std::move(attributes.at("n_features_in_"));
}

std::string LogisticRegression::get_params_json() const {
  nlohmann::json j;
  j["penalty"] = params_.penalty == "none" ? nlohmann::json(nullptr) : nlohmann::json(params_.penalty);
  j["C"] = params_.C;
  j["l1_ratio"] = params_.l1_ratio == -1.0 ? nlohmann::json(nullptr) : nlohmann::json(params_.l1_ratio);
  j["fit_intercept"] = params_.fit_intercept;
  j["max_iter"] = params_.max_iter;
  j["tol"] = params_.tol;
  if (params_.intercept_scaling > 0) j["intercept_scaling"] = params_.intercept_scaling;  // liblinear's objective only
  if (!params_.init_coef.empty()) j["init_coef"] = params_.init_coef;  // only when warm starting
  if (!params_.init_intercept.empty()) j["init_intercept"] = params_.init_intercept;
  j["class_weight"] = detail::class_weight_json(params_.class_weight_balanced ? "balanced" : "", params_.class_weight);
  return j.dump();
}

namespace detail {

// class_weight in JSON: null, "balanced", or a list of [label, weight] pairs (JSON object keys
// would have to be strings, and labels are numbers).
std::unique_ptr<Estimator> logistic_regression_from_params(const nlohmann::json& params) {
  ParamReader reader(params, "logistic_regression");
  LogisticRegressionParams p;
  // Absent: l1_ratio chooses (scikit-learn >= 1.8); null: no penalty (Python's None).
  const bool penalty_null = params.is_object() && params.contains("penalty") && params["penalty"].is_null();
  const bool penalty_named = reader.has("penalty") || penalty_null;  // has() also marks it known
  p.penalty = penalty_null ? "none" : reader.get_string("penalty", p.penalty);
  if (penalty_named && p.penalty != "l2" && p.penalty != "l1" && p.penalty != "elasticnet" && p.penalty != "none")
    reader.fail("penalty", "\"l2\", \"l1\", \"elasticnet\", \"none\", null, or absent (l1_ratio chooses)");
  p.C = reader.get_double("C", p.C);
  if (!(std::isfinite(p.C) && p.C > 0)) reader.fail("C", "a finite number > 0");
  if (reader.has("l1_ratio")) {
    p.l1_ratio = reader.get_double("l1_ratio", p.l1_ratio);
    if (!(p.l1_ratio >= 0 && p.l1_ratio <= 1)) reader.fail("l1_ratio", "a number in [0, 1] or null");
  }
  p.fit_intercept = reader.get_bool("fit_intercept", p.fit_intercept);
  const int64_t max_iter = reader.get_int("max_iter", p.max_iter);
  if (max_iter < 0 || max_iter > (1 << 30)) reader.fail("max_iter", "an integer >= 0");
  p.max_iter = static_cast<int>(max_iter);
  p.tol = reader.get_double("tol", p.tol);
  if (!(std::isfinite(p.tol) && p.tol >= 0)) reader.fail("tol", "a finite number >= 0");
  p.intercept_scaling = reader.get_double("intercept_scaling", p.intercept_scaling);
  if (!(std::isfinite(p.intercept_scaling) && p.intercept_scaling >= 0))
    reader.fail("intercept_scaling", "a finite number >= 0 (0 or null: the intercept is not penalized)");
  p.init_coef = detail::read_finite_numbers(reader, "init_coef");
  p.init_intercept = detail::read_finite_numbers(reader, "init_intercept");
  std::string preset;
  detail::read_class_weight(reader, {"balanced"}, preset, p.class_weight);
  p.class_weight_balanced = preset == "balanced";
  reader.finish();
  GPUML_EXPECT(p.penalty != "elasticnet" || p.l1_ratio != -1.0,
               "logistic_regression: penalty \"elasticnet\" needs l1_ratio, a number in [0, 1]");
  return std::make_unique<LogisticRegression>(std::move(p));
}

}  // namespace detail

}  // namespace gpuml

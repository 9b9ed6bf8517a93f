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
#include <functional>
#include <limits>
#include <map>
#include <sstream>

#include "core/distributed.hpp"
#include "core/parallel.hpp"
#include "core/param_table.hpp"
#include "core/params.hpp"
#include "core/labels.hpp"
#include "core/registry.hpp"
#include "core/staging.hpp"
#include "core/sparse_backend.hpp"
#include "core/trace.hpp"
#include "gpuml/core/comm.hpp"
#include "gpuml/core/error.hpp"
#include "linear_model/least_squares.hpp"
#include "linear_model/logistic_backend.hpp"
#include "linear_model/quasi_newton.hpp"

namespace gpuml {

namespace detail {

// What a fit leaves: the fitted attributes (LogisticRegression::adopt takes them).
struct LogisticFitted {
  HostArray classes, coef, intercept, n_iter, converged, n_features_in;
};

}  // namespace detail

namespace {

const std::vector<std::string> kAttributeNames = {"classes_", "coef_",      "intercept_",
                                                  "n_iter_",  "converged_", "n_features_in_"};

template <typename T>
std::unique_ptr<detail::LogisticBackend<T>> make_backend(const Context& ctx) {
  return ctx.is_cuda() ? detail::make_logistic_cuda_backend<T>(ctx) : detail::make_logistic_cpu_backend<T>(ctx);
}

std::string number(double v) { return detail::number_text(v); }

// LogisticRegression's parameters, declared once (core/param_table.hpp), in scikit-learn's order.
const detail::ParamTable<LogisticRegressionParams>& params_table() {
  using namespace detail;
  using P = LogisticRegressionParams;
  static const ParamTable<P> table(
      "logistic_regression",
      {
          ParamRow<P>{"penalty", {one_of({"l1", "l2", "elasticnet"}), null_form(), one_of({"deprecated"}, true)},
                      "Deprecated (scikit-learn 1.8): \"l2\", \"l1\", \"elasticnet\" or null (none); the default, "
                      "\"deprecated\", lets l1_ratio choose (0: \"l2\", 1: \"l1\", in between: \"elasticnet\").",
                      [](P& p, const nlohmann::json& v) { p.penalty = v.is_null() ? "none" : v.get<std::string>(); },
                      [](const P& p) { return p.penalty == "none" ? nlohmann::json(nullptr) : nlohmann::json(p.penalty); }},
          field("C", &P::C, {number_in(0, std::nullopt, "right")},
                "The inverse of the penalty's strength (Python: np.inf for no penalty)."),
          field("l1_ratio", &P::l1_ratio, {number_in(0, 1, "both"), null_form()},
                "The L1 share of the penalty: 0 L2, 1 L1, in between the elastic net."),
          field("dual", &P::dual, {boolean()},
                "Accepted, without effect: liblinear's dual has the primal's solution, which gpuml computes."),
          field("tol", &P::tol, {number_in(0)}, "Convergence: the largest (pseudo-)gradient entry <= tol; with solver \"sag\" or \"saga\", as theirs: a step's "
                "largest weight change <= tol times the largest weight."),
          field("fit_intercept", &P::fit_intercept, {boolean()}, "Whether to fit an intercept."),
          ParamRow<P>{"intercept_scaling", {number_in(0, std::nullopt, "neither")},
                      "With solver=\"liblinear\" and fit_intercept: the intercept is intercept_scaling times the "
                      "weight of a constant feature of that value, penalized like the coefficients; else without "
                      "effect (the intercept is not penalized).",
                      [](P& p, const nlohmann::json& v) { p.intercept_scaling = v.get<double>(); },
                      [](const P& p) {  // a whole number as an integer: scikit-learn's default is the int 1
                        const double s = p.intercept_scaling;
                        return s == std::floor(s) && std::fabs(s) < 1e15 ? nlohmann::json(static_cast<int64_t>(s))
                                                                         : nlohmann::json(s);
                      }},
          ParamRow<P>{"class_weight", {pairs(), one_of({"balanced"}), null_form()},
                      "Weights of the classes: [label, weight] pairs (Python: a dict; labels not listed weigh 1), "
                      "\"balanced\" (inversely proportional to the classes' weighted counts) or null (all 1).",
                      [](P& p, const nlohmann::json& v) {
                        p.class_weight_balanced = v.is_string();
                        p.class_weight.clear();
                        if (v.is_array())
                          for (const auto& pair : v) p.class_weight.emplace_back(pair[0].get<double>(), pair[1].get<double>());
                      },
                      [](const P& p) {
                        return class_weight_json(p.class_weight_balanced ? "balanced" : "", p.class_weight);
                      }},
          field("random_state", &P::random_state, {seed()},
                "Accepted, without effect: gpuml's method draws nothing (scikit-learn's sag, saga and liblinear "
                "shuffle)."),
          field("solver", &P::solver, {one_of({"lbfgs", "liblinear", "newton-cg", "newton-cholesky", "sag", "saga"})},
                "The named solver's objective, which gpuml minimizes with L-BFGS (OWL-QN with an L1 part): "
                "\"liblinear\" penalizes the intercept (intercept_scaling) and ignores warm_start."),
          field("max_iter", &P::max_iter, {integer_in(0)}, "The most quasi-Newton iterations."),
          field("verbose", &P::verbose, {verbose()}, "Accepted, without effect: gpuml prints nothing.").per_rank(),
          field("warm_start", &P::warm_start, {boolean()},
                "A refit starts from the fitted coef_ and intercept_ (not with liblinear); the Python bindings pass "
                "them as init_coef and init_intercept."),
          field("n_jobs", &P::n_jobs, {null_form(), any_integer()},
                "Accepted, without effect (as in scikit-learn >= 1.8).")
              .per_rank(),
          ParamRow<P>{"init_coef", {numbers(), matrix()},
                      "gpuml's: the starting coefficients, coef_ of an earlier fit (flat or (k, n_features)); "
                      "empty: zeros.",
                      [](P& p, const nlohmann::json& v) { p.init_coef = flat_numbers(v); },
                      [](const P& p) { return nlohmann::json(p.init_coef); }}
              .not_in_constructor(),
          ParamRow<P>{"init_intercept", {numbers()},
                      "gpuml's: the starting intercepts, intercept_ of an earlier fit (needs init_coef); empty: zeros.",
                      [](P& p, const nlohmann::json& v) { p.init_intercept = flat_numbers(v); },
                      [](const P& p) { return nlohmann::json(p.init_intercept); }}
              .not_in_constructor(),
      },
      [](const P& p) {
        GPUML_EXPECT(p.penalty != "elasticnet" || p.l1_ratio.has_value(),
                     "logistic_regression parameter 'l1_ratio' must be a number in [0, 1] with penalty "
                     "\"elasticnet\", got null");
        GPUML_EXPECT(!p.init_coef.empty() || p.init_intercept.empty(),
                     "logistic_regression parameter 'init_intercept' needs init_coef (the warm start is coef_ with "
                     "its intercept_)");
        GPUML_EXPECT(!(p.class_weight_balanced && !p.class_weight.empty()),
                     "logistic_regression parameter 'class_weight' is either \"balanced\" or a list of [label, "
                     "weight] pairs, not both");
      });
  return table;
}

// The penalty the objective has: "l2", "l1", "elasticnet" or "none" (scikit-learn >= 1.8: without
// an explicit penalty, l1_ratio chooses it).
std::string effective_penalty(const LogisticRegressionParams& p) {
  if (p.penalty != "deprecated") return p.penalty;
  const double ratio = p.l1_ratio.value_or(0.0);
  return ratio == 0.0 ? "l2" : ratio == 1.0 ? "l1" : "elasticnet";
}

// The L1 fraction of the penalty (ρ) and whether there is a penalty at all.
double l1_fraction(const LogisticRegressionParams& p) {
  const std::string penalty = effective_penalty(p);
  if (penalty == "l1") return 1.0;
  if (penalty == "elasticnet") return *p.l1_ratio;
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

// X as the fit sees it: a staged dense n x d matrix (the backend's loss_gradient reads it), or a
// sparse one seen through its products (core/sparse_backend.hpp). Exactly one is set.
template <typename T>
struct Design {
  const T* dense = nullptr;
  detail::SparseMatrix<T>* sparse = nullptr;
};

// The fit's problem, for one float type: the staged data, and the objective over the packed
// variables [coef (k x d, row-major), intercept (k) when fit_intercept], summed over the ranks of
// the context's communicator.
template <typename T>
class LogisticFit {
 public:
  LogisticFit(Context& ctx, const LogisticRegressionParams& p, int64_t n, int64_t d, Design<T> X,
              const detail::Labels& labels, const std::vector<double>& weights)
      : backend_(make_backend<T>(ctx)), n_(n), d_(d),
        k_(labels.classes.size() == 2 ? 1 : static_cast<int64_t>(labels.classes.size())),
        fit_intercept_(p.fit_intercept), X_(X), ctx_(ctx), comm_(ctx.comm()) {
    if (X_.sparse) {  // scratch of the sparse route: the scores, then the residuals, in place
      scores_ = Buffer(ctx, static_cast<std::size_t>(std::max<int64_t>(n_ * k_, 1)) * sizeof(T));
      coef_columns_.resize(static_cast<std::size_t>(d_ * k_));
      coef_block_ = Buffer(ctx, coef_columns_.size() * sizeof(T));
      cross_block_ = Buffer(ctx, coef_columns_.size() * sizeof(T));
      intercepts_.resize(static_cast<std::size_t>(k_));
    }
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
    const double strength = effective_penalty(p) == "none" ? 0.0 : 1.0 / (p.C * weight_sum_);
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
    if (p.fit_intercept && p.solver == "liblinear") {
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
    grad_host_.back() = X_.sparse ? sparse_loss_gradient(w)
                                  : backend_->loss_gradient(X_.dense, labels_.view.as<const int32_t>(), w, n_, d_, k_,
                                                            coef_host_.data(), grad_host_.data());
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
  // loss_gradient's loss and gradient (into grad_host_) for sparse X, in two passes over its
  // entries: the scores Z = X coefᵀ, the residuals R from them, then the gradient Xᵀ R.
  double sparse_loss_gradient(const T* w) {
    const int64_t width = d_ + 1;
    for (int64_t c = 0; c < k_; ++c) {
      for (int64_t j = 0; j < d_; ++j) coef_columns_[j * k_ + c] = static_cast<T>(coef_host_[c * width + j]);
      intercepts_[c] = coef_host_[c * width + d_];
    }
    detail::copy_bytes(ctx_, coef_block_.data(), ctx_.device(), coef_columns_.data(), Device{}, coef_columns_.size() * sizeof(T));
    T* Z = scores_.as<T>();
    X_.sparse->times(coef_block_.as<const T>(), k_, Z);
    std::vector<double> residual_sums(static_cast<std::size_t>(k_));
    const double loss = backend_->loss_residuals(Z, labels_.view.as<const int32_t>(), w, n_, k_, intercepts_.data(), Z,
                                                 residual_sums.data());
    X_.sparse->transpose_times(Z, k_, cross_block_.as<T>());  // d x k
    detail::copy_bytes(ctx_, coef_columns_.data(), Device{}, cross_block_.data(), ctx_.device(), coef_columns_.size() * sizeof(T));
    for (int64_t c = 0; c < k_; ++c) {
      for (int64_t j = 0; j < d_; ++j) grad_host_[c * width + j] = static_cast<double>(coef_columns_[j * k_ + c]);
      grad_host_[c * width + d_] = residual_sums[c];
    }
    return loss;
  }

  std::unique_ptr<detail::LogisticBackend<T>> backend_;
  int64_t n_, d_, k_;
  bool fit_intercept_;
  Design<T> X_;
  Context& ctx_;
  Comm& comm_;
  HostArray label_host_, weight_host_;  // staged views alias these on the CPU
  detail::Staged labels_, weights_;
  double weight_sum_ = 0.0, l2_ = 0.0, l1_weight_ = 0.0;
  double intercept_l2_ = 0.0, intercept_l1_ = 0.0;  // nonzero only under liblinear's objective
  std::vector<double> coef_host_, grad_host_;
  // Sparse X: Z, then R (n x k); coef (d x k, transposed) in T on the host, and the blocks the
  // products read and write (coef, then Xᵀ R) in the backend's memory; the intercepts.
  Buffer scores_, coef_block_, cross_block_;
  std::vector<T> coef_columns_;
  std::vector<double> intercepts_;
};

HostArray int64_array(std::vector<int64_t> values, bool scalar) {
  HostArray a = scalar ? HostArray::scalar(DType::int64) : HostArray(DType::int64, static_cast<int64_t>(values.size()));
  std::copy(values.begin(), values.end(), a.as<int64_t>());
  return a;
}


// The fit once X, y and sample_weight are checked, the same for dense and sparse X: the classes
// (the union over ranks), the rows' weights, then L-BFGS / OWL-QN from the warm start that
// `start(x, k)` writes, over the objective on the Design that design_for(T{}) gives for the
// model's float type T.
template <typename DesignFor>
detail::LogisticFitted fit_logistic(Context& ctx, const LogisticRegressionParams& p, DType dtype, int64_t n, int64_t d,
                    detail::LabelValues& y_values, std::vector<double> sw,
                    const std::function<void(std::vector<double>&, int64_t)>& start, detail::Trace& trace,
                    DesignFor&& design_for) {
  Comm& comm = ctx.comm();
  // The classes of all ranks; the checks after this point see the same numbers on every rank
  // (the classes, the summed weights), so they fail on all ranks together.
  std::vector<double> classes = detail::union_over_ranks(comm, y_values.classes);
  const detail::Labels labels = detail::index_labels(ctx, y_values, std::move(classes), "LogisticRegression");
  y_values = {};
  trace.mark("labels");
  const std::vector<double> weights = row_weights(std::move(sw), labels, p, comm);
  trace.mark("weights");

  detail::LogisticFitted fitted;
  detail::with_float_type(dtype, [&](auto tag) {
    using T = decltype(tag);
    LogisticFit<T> problem(ctx, p, n, d, design_for(tag), labels, weights);
    trace.mark("stage labels and weights");
    std::vector<double> x(static_cast<std::size_t>(problem.n_variables()), 0.0);
    start(x, problem.k());
    detail::QuasiNewtonOptions options;
    options.max_iter = p.max_iter;
    options.gtol = p.tol;
    options.threads = ctx.n_threads();
    if (p.solver == "sag" || p.solver == "saga") options.xtol = p.tol;  // their tol's meaning
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
      intercept.as<T>()[c] = p.fit_intercept ? static_cast<T>(x[k * d + c]) : T(0);
    }
    std::copy(labels.classes.begin(), labels.classes.end(), classes.as<double>());
    fitted.classes = std::move(classes);
    fitted.coef = std::move(coef);
    fitted.intercept = std::move(intercept);
    fitted.n_iter = int64_array({result.n_iter}, false);
    fitted.converged = int64_array({result.converged ? 1 : 0}, true);
    fitted.n_features_in = int64_array({d}, true);
  });
  return fitted;
}

}  // namespace

LogisticRegression::LogisticRegression(LogisticRegressionParams params) : params_(std::move(params)) {
  params_table().check(params_);
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
  std::vector<detail::RankField> fields = {{"n_features", d}, {"dtype (0 float32, 1 float64)", static_cast<int64_t>(dtype)}};
  for (const detail::RankField& f : params_table().rank_fields(params_)) fields.push_back(f);
  detail::agree_on_every_rank(comm, "LogisticRegression", n, fields);
  const Design<float> dense32{dtype == DType::float32 ? Xs.view.as<const float>() : nullptr, nullptr};
  const Design<double> dense64{dtype == DType::float64 ? Xs.view.as<const double>() : nullptr, nullptr};
  adopt(fit_logistic(ctx, params_, dtype, n, d, y_values, std::move(sw), [&](std::vector<double>& x, int64_t k) { start_from_init(x, k, d); }, trace, [&](auto tag) {
    if constexpr (std::is_same_v<decltype(tag), float>) return dense32;
    else return dense64;
  }));
  return *this;
}

void LogisticRegression::fit_sparse(Context& ctx, const SparseView& X, const ArrayView* y,
                                    const ArrayView* sample_weight) {
  GPUML_EXPECT(y != nullptr, "LogisticRegression.fit needs y");
  if (ctx.comm().size() > 1)
    throw_error(ErrorCode::unsupported, "LogisticRegression: sparse X over several ranks is not written yet");
  const int64_t n = X.rows(), d = X.cols();
  GPUML_EXPECT(n >= 1 && d >= 1, "X (sparse matrix) has shape (" + std::to_string(n) + ", " + std::to_string(d) +
                                     "): at least 1 sample and 1 feature are required");
  const DType dtype = X.dtype == DType::float32 ? DType::float32 : DType::float64;
  detail::Trace trace(ctx, "LogisticRegression (sparse)");
  // X checked and canonicalized first (its errors before y's), in its own float type.
  std::unique_ptr<detail::SparseMatrix<float>> X32;
  std::unique_ptr<detail::SparseMatrix<double>> X64;
  if (dtype == DType::float32) X32 = detail::make_sparse_matrix<float>(ctx, X, "X");
  else X64 = detail::make_sparse_matrix<double>(ctx, X, "X");
  trace.mark("check and canonicalize X");
  detail::LabelValues y_values = detail::read_labels(ctx, *y, n, "LogisticRegression");
  std::vector<double> sw = detail::host_sample_weights(ctx, sample_weight, n);
  adopt(fit_logistic(ctx, params_, dtype, n, d, y_values, std::move(sw), [&](std::vector<double>& x, int64_t k) { start_from_init(x, k, d); }, trace, [&](auto tag) {
    if constexpr (std::is_same_v<decltype(tag), float>) return Design<float>{nullptr, X32.get()};
    else return Design<double>{nullptr, X64.get()};
  }));
}

void LogisticRegression::adopt(detail::LogisticFitted&& fitted) {
  classes_ = std::move(fitted.classes);
  coef_ = std::move(fitted.coef);
  intercept_ = std::move(fitted.intercept);
  n_iter_ = std::move(fitted.n_iter);
  converged_ = std::move(fitted.converged);
  n_features_in_ = std::move(fitted.n_features_in);
}

void LogisticRegression::start_from_init(std::vector<double>& x, int64_t k, int64_t d) const {
  if (params_.init_coef.empty()) {
    // warm_start: from this model's own fit when it has these data's shape (else from zeros), as
    // scikit-learn, which ignores warm_start with liblinear.
    if (!params_.warm_start || params_.solver == "liblinear" || !fitted() || coef_.spec().shape[0] != k ||
        coef_.spec().shape[1] != d)
      return;
    detail::with_float_type(coef_.dtype(), [&](auto tag) {
      using T = decltype(tag);
      std::copy(coef_.as<const T>(), coef_.as<const T>() + k * d, x.begin());
      if (params_.fit_intercept) std::copy(intercept_.as<const T>(), intercept_.as<const T>() + k, x.begin() + k * d);
    });
    return;
  }
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

// The same for sparse X (checked, in the model's dtype): Z = X coefᵀ by the sparse products, then
// the intercept added (center_scale's centering by −intercept: one addition rounded in T, as
// the dense predict).
template <typename Finish>
void with_scores(Context& ctx, const SparseView& X, const HostArray& coef, const HostArray& intercept, Finish&& finish) {
  const int64_t k = coef.spec().shape[0], d = coef.spec().shape[1];
  GPUML_EXPECT(X.cols() == d, "X has " + std::to_string(X.cols()) +
                                  " features, but LogisticRegression was fitted with " + std::to_string(d) + " features");
  const int64_t n = X.rows();
  detail::with_float_type(coef.dtype(), [&](auto tag) {
    using T = decltype(tag);
    auto A = detail::make_sparse_matrix_as<T>(ctx, X, "X");
    Buffer Z(ctx, static_cast<std::size_t>(std::max<int64_t>(n * k, 1)) * sizeof(T));
    detail::times_rows(ctx, *A, d, coef.as<const T>(), k, Z.as<T>());
    std::vector<double> shift(static_cast<std::size_t>(k));
    for (int64_t c = 0; c < k; ++c) shift[c] = -static_cast<double>(intercept.as<const T>()[c]);
    detail::make_linear_backend<T>(ctx)->center_scale(Z.as<T>(), n, k, shift.data(), nullptr, Z.as<T>());
    finish(Z.as<T>(), n, k, *make_backend<T>(ctx));
  });
}

}  // namespace

// Each output once over the scores, for dense and sparse X alike.
template <typename Matrix>
void LogisticRegression::write_decision_function(Context& ctx, const Matrix& X, const ArrayView& out) const {
  require_fitted();
  with_scores(ctx, X, coef_, intercept_, [&](auto* Z, int64_t n, int64_t k, auto&) {
    const ArrayView view = k == 1 ? make_view(Z, coef_.dtype(), ctx.device(), n)
                                  : make_view(Z, coef_.dtype(), ctx.device(), n, k);
    detail::write_output(ctx, view, out, "decision function");
  });
}

template <typename Matrix>
void LogisticRegression::write_probabilities(Context& ctx, const Matrix& X, const ArrayView& out) const {
  require_fitted();
  with_scores(ctx, X, coef_, intercept_, [&](auto* Z, int64_t n, int64_t k, auto& backend) {
    using T = std::remove_pointer_t<decltype(Z)>;
    const int64_t n_classes = classes_.spec().shape[0];
    Buffer proba(ctx, static_cast<std::size_t>(std::max<int64_t>(n * n_classes, 1)) * sizeof(T));
    backend.probabilities(Z, n, k, proba.as<T>());
    detail::write_output(ctx, make_view(proba.data(), coef_.dtype(), ctx.device(), n, n_classes), out, "probabilities");
  });
}

template <typename Matrix>
void LogisticRegression::write_labels(Context& ctx, const Matrix& X, const ArrayView& out) const {
  require_fitted();
  with_scores(ctx, X, coef_, intercept_, [&](auto* Z, int64_t n, int64_t k, auto& backend) {
    Buffer labels(ctx, static_cast<std::size_t>(std::max<int64_t>(n, 1)) * sizeof(double));
    backend.predict_labels(Z, n, k, classes_.as<const double>(), labels.as<double>());
    detail::write_labels(ctx, make_view(labels.data(), DType::float64, ctx.device(), n), classes_, out);
  });
}

void LogisticRegression::decision_function(Context& ctx, const ArrayView& X, const ArrayView& out) const {
  write_decision_function(ctx, X, out);
}
void LogisticRegression::decision_function(Context& ctx, const SparseView& X, const ArrayView& out) const {
  write_decision_function(ctx, X, out);
}
void LogisticRegression::transform(Context& ctx, const ArrayView& X, const ArrayView& out) const {
  write_decision_function(ctx, X, out);
}
void LogisticRegression::transform_sparse(Context& ctx, const SparseView& X, const ArrayView& out) const {
  write_decision_function(ctx, X, out);
}
void LogisticRegression::predict_proba(Context& ctx, const ArrayView& X, const ArrayView& out) const {
  write_probabilities(ctx, X, out);
}
void LogisticRegression::predict_proba_sparse(Context& ctx, const SparseView& X, const ArrayView& out) const {
  write_probabilities(ctx, X, out);
}
void LogisticRegression::predict(Context& ctx, const ArrayView& X, const ArrayView& out) const {
  write_labels(ctx, X, out);
}
void LogisticRegression::predict_sparse(Context& ctx, const SparseView& X, const ArrayView& out) const {
  write_labels(ctx, X, out);
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

std::string LogisticRegression::get_params_json() const { return params_table().write(params_).dump(); }

namespace detail {

std::unique_ptr<Estimator> logistic_regression_from_params(const nlohmann::json& params) {
  return std::make_unique<LogisticRegression>(params_table().read(params));
}

nlohmann::json logistic_regression_params_schema() { return params_table().schema(); }

}  // namespace detail

}  // namespace gpuml

#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gpuml/core/estimator.hpp"

namespace gpuml {

namespace detail {
struct LogisticFitted;
}

// scikit-learn's LogisticRegression parameters (its "lbfgs" solver, and OWL-QN where the penalty
// has an L1 part). With sample weights s_i (times the class weights), S = Σ s_i and the penalty r,
// the objective is
//   (1/S) Σ_i s_i loss_i(coef, intercept) + r(coef) / (C S),
//   r = (1 − ρ)/2 |coef|² + ρ |coef|₁,  ρ = 0 ("l2"), 1 ("l1"), l1_ratio ("elasticnet"); r = 0 ("none").
// The intercept is not penalized (but see intercept_scaling). Two classes: the binomial loss on one
// score column; more: the multinomial (softmax) loss on one column per class.
struct LogisticRegressionParams {
  // scikit-learn's constructor parameters, with its defaults; each one's rule and meaning is in the
  // parameter table (logistic_regression.cpp), which checks them.
  // "deprecated" (the default): l1_ratio chooses, as in scikit-learn >= 1.8: 0 or null "l2", 1
  // "l1", in between "elasticnet". Or explicitly "l2", "l1", "elasticnet", or "none" (Python's
  // None, JSON null): scikit-learn's deprecated `penalty`.
  std::string penalty = "deprecated";
  double C = 1.0;
  std::optional<double> l1_ratio = 0.0;  // in [0, 1]; needed by an explicit "elasticnet"
  bool dual = false;
  double tol = 1e-4;  // stop when max |(pseudo-)gradient of the objective| <= tol
  bool fit_intercept = true;
  // With solver "liblinear" and fit_intercept, scikit-learn's liblinear objective: the intercept b
  // is intercept_scaling times the weight v of a constant feature of value intercept_scaling, and
  // v is penalized like the coefficients: r gains (1 − ρ)/2 v² + ρ |v|. Otherwise the intercept is
  // not penalized.
  double intercept_scaling = 1.0;
  // Class weights: "balanced" (S / (n_classes * weighted class count)), or one weight per listed
  // label (labels not listed weigh 1; a listed label that is not in y is an error), or none.
  bool class_weight_balanced = false;
  std::vector<std::pair<double, double>> class_weight;  // (label, weight >= 0)
  std::optional<uint64_t> random_state;
  std::string solver = "lbfgs";
  int max_iter = 100;  // quasi-Newton iterations
  int verbose = 0;
  bool warm_start = false;
  std::optional<int64_t> n_jobs;
  // gpuml's: the starting point (a warm start): coef_ (row-major, (1, d) for two classes, else
  // (n_classes, d)) and intercept_ (one per coef_ row; read with fit_intercept only) of an earlier
  // fit. Empty: zeros. A size that does not fit the data is an error at fit.
  std::vector<double> init_coef, init_intercept;
};

// Logistic regression as scikit-learn's LogisticRegression. Labels y are numbers (the Python
// binding maps any labels to 0..n_classes-1); classes_ holds the sorted distinct values.
class GPUML_API LogisticRegression final : public Estimator {
 public:
  explicit LogisticRegression(LogisticRegressionParams params = {});
  const LogisticRegressionParams& params() const { return params_; }

  const char* kind() const override { return "logistic_regression"; }
  std::string get_params_json() const override;

  // y (n,) of class labels (integer or float dtype, finite), at least two distinct values.
  LogisticRegression& fit(Context& ctx, const ArrayView& X, const ArrayView& y, const ArrayView* sample_weight = nullptr);
  void fit(Context& ctx, const ArrayView& X, const ArrayView* y, const ArrayView* sample_weight) override;
  bool fitted() const override { return !coef_.empty(); }

  // "predict": (n,) labels (float64 by default); "predict_proba": (n, n_classes);
  // "transform": the decision function, (n,) for two classes, else (n, n_classes).
  ArraySpec output_spec(const std::string& method, int64_t n_rows) const override;
  void predict(Context& ctx, const ArrayView& X, const ArrayView& out) const override;
  void predict_proba(Context& ctx, const ArrayView& X, const ArrayView& out) const override;
  void decision_function(Context& ctx, const ArrayView& X, const ArrayView& out) const;
  // The C ABI has no decision_function entry: transform is it, for a classifier.
  void transform(Context& ctx, const ArrayView& X, const ArrayView& out) const override;

  // Sparse X (CSR or CSC) on CPU contexts: the same objective and L-BFGS / OWL-QN, the loss's
  // products X·coefᵀ and Xᵀ·R by Eigen's sparse module (core/sparse_backend.hpp); X is never
  // densified. Predictions compute in the model's dtype (X's values converted once if needed).
  bool accepts_sparse() const override { return true; }
  void fit_sparse(Context& ctx, const SparseView& X, const ArrayView* y, const ArrayView* sample_weight) override;
  void predict_sparse(Context& ctx, const SparseView& X, const ArrayView& out) const override;
  void predict_proba_sparse(Context& ctx, const SparseView& X, const ArrayView& out) const override;
  void decision_function(Context& ctx, const SparseView& X, const ArrayView& out) const;
  void transform_sparse(Context& ctx, const SparseView& X, const ArrayView& out) const override;

  const HostArray& classes() const;    // (n_classes,) float64, ascending
  const HostArray& coef() const;       // (1, d) for two classes, else (n_classes, d); X's float dtype
  const HostArray& intercept() const;  // (1,) or (n_classes,); zeros without fit_intercept
  int64_t n_iter() const;              // quasi-Newton iterations run
  bool converged() const;              // reached tol within max_iter
  int64_t n_features_in() const;

  std::vector<std::string> attribute_names() const override;
  const HostArray& attribute(const std::string& name) const override;
  void restore(std::map<std::string, HostArray> attributes) override;

 private:
  // Copies the warm start (init_coef and init_intercept, checking their sizes; else, with
  // warm_start, this model's own fit) into the packed variables x of a fit with k score columns
  // and d features.
  void start_from_init(std::vector<double>& x, int64_t k, int64_t d) const;
  void adopt(detail::LogisticFitted&& fitted);  // a fit's attributes become this model's
  // decision_function, predict_proba and predict on dense (ArrayView) or sparse (SparseView) X.
  template <typename Matrix> void write_decision_function(Context& ctx, const Matrix& X, const ArrayView& out) const;
  template <typename Matrix> void write_probabilities(Context& ctx, const Matrix& X, const ArrayView& out) const;
  template <typename Matrix> void write_labels(Context& ctx, const Matrix& X, const ArrayView& out) const;

  LogisticRegressionParams params_;
  HostArray classes_, coef_, intercept_, n_iter_, converged_, n_features_in_;
};

}  // namespace gpuml

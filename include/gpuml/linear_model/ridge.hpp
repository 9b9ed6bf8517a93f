#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gpuml/core/estimator.hpp"

namespace gpuml {

namespace detail {
struct LinearFit;
}

// scikit-learn's Ridge parameters, with its defaults (those added later last, so that aggregate
// initializations keep their meaning). Each is declared once, with its forms and documentation
// (what every solver name runs), in the parameter table in src/linear_model/ridge.cpp.
struct RidgeParams {
  std::vector<double> alpha = {1.0};  // one value for every target, or one per target; each >= 0
  bool fit_intercept = true;
  std::string solver = "auto";        // any scikit-learn name; "lbfgs" only with positive
  std::optional<int64_t> max_iter;    // positive: the active set's steps per target (unset: 3 n_features + 10)
  double tol = 1e-4;                  // positive: the KKT tolerance, relative to |Xᵀy|∞
  bool positive = false;              // coef >= 0; solver must be "auto" or "lbfgs"
  bool copy_X = true;                 // accepted: gpuml never writes to X
  std::optional<uint64_t> random_state;  // accepted: no solver here draws at random
};

// Least squares with an L2 penalty alpha * |coef|^2, as scikit-learn's Ridge.
class GPUML_API Ridge final : public Estimator {
 public:
  explicit Ridge(RidgeParams params = {});
  const RidgeParams& params() const { return params_; }

  const char* kind() const override { return "ridge"; }
  std::string get_params_json() const override;

  // y is (n,) or (n, n_targets); sample_weight (n,) or null.
  Ridge& fit(Context& ctx, const ArrayView& X, const ArrayView& y, const ArrayView* sample_weight = nullptr);
  void fit(Context& ctx, const ArrayView& X, const ArrayView* y, const ArrayView* sample_weight) override;
  bool fitted() const override { return !coef_.empty(); }

  ArraySpec output_spec(const std::string& method, int64_t n_rows) const override;
  void predict(Context& ctx, const ArrayView& X, const ArrayView& out) const override;  // (n,) or (n, t)
  // Sparse X (CSR / CSC, core/sparse.hpp), on a CPU context: the same fit and predictions, X
  // centered implicitly, never densified (least_squares.hpp, fit_least_squares_sparse).
  bool accepts_sparse() const override { return true; }
  void fit_sparse(Context& ctx, const SparseView& X, const ArrayView* y, const ArrayView* sample_weight) override;
  void predict_sparse(Context& ctx, const SparseView& X, const ArrayView& out) const override;

  const HostArray& coef() const;       // (d,) when y was 1-d, else (t, d); X's float dtype
  const HostArray& intercept() const;  // 0-d when y was 1-d, else (t,)
  int64_t n_features_in() const;
  bool converged() const;              // false when positive's active set stopped at max_iter

  std::vector<std::string> attribute_names() const override;
  const HostArray& attribute(const std::string& name) const override;
  void restore(std::map<std::string, HostArray> attributes) override;

 private:
  void adopt(detail::LinearFit fit);  // the fitted state, replaced once a fit has succeeded
  RidgeParams params_;
  HostArray coef_, intercept_, n_features_in_, converged_;
};

}  // namespace gpuml

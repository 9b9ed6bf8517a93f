#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gpuml/core/estimator.hpp"

namespace gpuml {

// scikit-learn's Ridge parameters that change a fit (copy_X and random_state cannot: gpuml never
// writes to X, and no solver here draws at random).
struct RidgeParams {
  std::vector<double> alpha = {1.0};  // one value for every target, or one per target; each >= 0
  bool fit_intercept = true;
  // Any scikit-learn name: "svd" solves by QR then the SVD of R; "auto", "cholesky", "lsqr",
  // "sparse_cg", "sag" and "saga" by the normal equations plus alpha (Cholesky), the same
  // minimizer those iterative solvers approach; "lbfgs" only with positive (scikit-learn's rule).
  std::string solver = "auto";
  // positive: the active set's steps per target (unset: 3 n_features + 10); ignored otherwise,
  // as the direct solves need no iterations.
  std::optional<int64_t> max_iter;
  double tol = 1e-4;                  // positive: the KKT tolerance, relative to |Xᵀy|∞; >= 0
  bool positive = false;              // coef >= 0; solver must be "auto" or "lbfgs"
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

  const HostArray& coef() const;       // (d,) when y was 1-d, else (t, d); X's float dtype
  const HostArray& intercept() const;  // 0-d when y was 1-d, else (t,)
  int64_t n_features_in() const;
  bool converged() const;              // false when positive's active set stopped at max_iter

  std::vector<std::string> attribute_names() const override;
  const HostArray& attribute(const std::string& name) const override;
  void restore(std::map<std::string, HostArray> attributes) override;

 private:
  RidgeParams params_;
  HostArray coef_, intercept_, n_features_in_, converged_;
};

}  // namespace gpuml

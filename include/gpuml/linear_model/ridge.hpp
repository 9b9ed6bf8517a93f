#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "gpuml/core/estimator.hpp"

namespace gpuml {

// scikit-learn's Ridge parameters (the direct solvers).
struct RidgeParams {
  std::vector<double> alpha = {1.0};  // one value for every target, or one per target; each >= 0
  bool fit_intercept = true;
  std::string solver = "auto";        // "auto" (= "cholesky"), "cholesky" or "svd"
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

  std::vector<std::string> attribute_names() const override;
  const HostArray& attribute(const std::string& name) const override;
  void restore(std::map<std::string, HostArray> attributes) override;

 private:
  RidgeParams params_;
  HostArray coef_, intercept_, n_features_in_;
};

}  // namespace gpuml

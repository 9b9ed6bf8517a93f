#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gpuml/core/estimator.hpp"

namespace gpuml {

namespace detail {
struct GramSystem;
}

// scikit-learn's ElasticNet parameters. The objective, per target, is
//   1/(2 n) |y − X w − b|² + alpha * l1_ratio * |w|₁ + alpha * (1 − l1_ratio) / 2 * |w|²
// (sample weights are rescaled to sum to n and weight the squared errors).
struct ElasticNetParams {
  double alpha = 1.0;         // >= 0
  double l1_ratio = 0.5;      // in [0, 1]; 1 is the Lasso
  bool fit_intercept = true;
  bool precompute = false;    // accepted: gpuml always solves on the Gram matrix it forms
  int max_iter = 1000;        // >= 1 sweeps of coordinate descent
  bool copy_X = true;         // accepted: gpuml never writes to X
  double tol = 1e-4;          // >= 0; the duality gap must reach tol * |y − ȳ|² (weighted)
  bool warm_start = false;    // a refit starts from the fitted coef_ (when init_coef is empty)
  bool positive = false;      // constrain coef >= 0
  std::optional<uint64_t> random_state;  // for "random"; unset: the context's seed
  std::string selection = "cyclic";  // "cyclic" or "random" (coordinates drawn at random)
  // The starting coefficients: empty for zeros (or coef_ with warm_start), else n_targets *
  // n_features values (row-major (t, d)); a fit with another size is an error.
  std::vector<double> init_coef;
};

// Lasso's parameters: those of ElasticNet with l1_ratio fixed to 1. Both are declared once, with
// their forms and documentation, in the parameter tables in src/linear_model/elastic_net.cpp.
struct LassoParams {
  double alpha = 1.0;
  bool fit_intercept = true;
  bool precompute = false;
  int max_iter = 1000;
  bool copy_X = true;
  double tol = 1e-4;
  bool warm_start = false;
  bool positive = false;
  std::optional<uint64_t> random_state;
  std::string selection = "cyclic";
  std::vector<double> init_coef;  // as ElasticNetParams::init_coef
};

// Linear regression with a combined L1 and L2 penalty, as scikit-learn's ElasticNet: coordinate
// descent on the Gram matrix XᵀX (formed by the backend), run on the host in double.
class GPUML_API ElasticNet : public Estimator {
 public:
  explicit ElasticNet(ElasticNetParams params = {});
  const ElasticNetParams& params() const { return params_; }

  const char* kind() const override { return "elastic_net"; }
  std::string get_params_json() const override;

  // y is (n,) or (n, n_targets) (each target fitted separately); sample_weight (n,) or null.
  ElasticNet& fit(Context& ctx, const ArrayView& X, const ArrayView& y, const ArrayView* sample_weight = nullptr);
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
  const HostArray& dual_gap() const;   // float64: 0-d when y was 1-d, else (t,); divided by n
  int64_t n_iter() const;              // sweeps run, the most over the targets
  bool converged() const;              // every target reached tol within max_iter
  int64_t n_features_in() const;

  std::vector<std::string> attribute_names() const override;
  const HostArray& attribute(const std::string& name) const override;
  void restore(std::map<std::string, HostArray> attributes) override;

 protected:
  ElasticNet(ElasticNetParams params, const char* display_name);
  const char* display_name_;  // "ElasticNet" or "Lasso", for messages

 private:
  void fit_system(Context& ctx, const detail::GramSystem& sys);  // coordinate descent on the Gram system
  ElasticNetParams params_;
  HostArray coef_, intercept_, n_iter_, dual_gap_, converged_, n_features_in_;
};

// ElasticNet with l1_ratio = 1, as scikit-learn's Lasso.
class GPUML_API Lasso final : public ElasticNet {
 public:
  explicit Lasso(LassoParams params = {});
  const char* kind() const override { return "lasso"; }
  std::string get_params_json() const override;  // ElasticNet's, without l1_ratio
};

}  // namespace gpuml

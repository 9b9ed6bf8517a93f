#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "gpuml/core/estimator.hpp"

namespace gpuml {

namespace detail {
class DeferredArray;
struct LinearFit;
}

// scikit-learn's LinearRegression parameters, with its defaults, and gpuml's algorithm (those
// added later last, so that aggregate initializations keep their meaning). Each is declared once,
// with its forms and documentation, in the parameter table in src/linear_model/linear_regression.cpp.
struct LinearRegressionParams {
  bool fit_intercept = true;
  // gpuml's: "auto": normal equations ("eig"), falling back to "svd" when X is rank deficient or
  // badly conditioned; "eig": normal equations, eigen-decomposed; "qr": Householder QR;
  // "svd": SVD of R from the QR (the minimum-norm solution, as scikit-learn's lstsq).
  std::string algorithm = "auto";
  // scikit-learn 1.9's lstsq cond: singular values below tol * s_max count as zero in the
  // minimum-norm routes ("auto" when X is rank deficient or ill conditioned, and "svd"); "eig"
  // and "qr" solve full-rank X exactly and ignore it. With positive: the KKT tolerance of the
  // active set, relative to |Xᵀy|∞. >= 0.
  double tol = 1e-6;
  // coef >= 0: non-negative least squares (scipy.optimize.nnls's problem) by the active set on
  // XᵀX, whatever the algorithm.
  bool positive = false;
  bool copy_X = true;             // accepted: gpuml never writes to X
  std::optional<int64_t> n_jobs;  // accepted: the CPU backend's threads are the context's
};

// Ordinary least squares, as scikit-learn's LinearRegression (sample weights included).
class GPUML_API LinearRegression final : public Estimator {
 public:
  explicit LinearRegression(LinearRegressionParams params = {});
  const LinearRegressionParams& params() const { return params_; }

  const char* kind() const override { return "linear_regression"; }
  std::string get_params_json() const override;

  // y is (n,) or (n, n_targets); sample_weight (n,) or null.
  LinearRegression& fit(Context& ctx, const ArrayView& X, const ArrayView& y, const ArrayView* sample_weight = nullptr);
  void fit(Context& ctx, const ArrayView& X, const ArrayView* y, const ArrayView* sample_weight) override;
  bool fitted() const override { return !coef_.empty(); }

  ArraySpec output_spec(const std::string& method, int64_t n_rows) const override;
  void predict(Context& ctx, const ArrayView& X, const ArrayView& out) const override;  // (n,) or (n, t)
  // Sparse X (CSR / CSC, core/sparse.hpp), on a CPU context: the same fit and predictions, X
  // centered implicitly, never densified (least_squares.hpp, fit_least_squares_sparse).
  bool accepts_sparse() const override { return true; }
  void fit_sparse(Context& ctx, const SparseView& X, const ArrayView* y, const ArrayView* sample_weight) override;
  void predict_sparse(Context& ctx, const SparseView& X, const ArrayView& out) const override;

  // Fitted attributes, on the host, in X's float dtype (rank and n_features_in are int64).
  const HostArray& coef() const;              // (d,) when y was 1-d, else (t, d)
  const HostArray& intercept() const;         // 0-d when y was 1-d, else (t,)
  // (min(n, d),), descending, of the centered weighted X. When the solve did not need them, they
  // are computed on first use (here, by attribute(), or by serialization), not during fit.
  const HostArray& singular_values() const;
  int64_t rank() const;
  int64_t n_features_in() const;
  bool converged() const;  // false when positive's active set stopped at its step limit

  std::vector<std::string> attribute_names() const override;
  const HostArray& attribute(const std::string& name) const override;
  void restore(std::map<std::string, HostArray> attributes) override;

 private:
  void adopt(detail::LinearFit fit);  // the fitted state, replaced once a fit has succeeded
  LinearRegressionParams params_;
  HostArray coef_, intercept_, rank_, n_features_in_, converged_;
  std::shared_ptr<const detail::DeferredArray> singular_values_;
};

}  // namespace gpuml

#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "gpuml/core/estimator.hpp"

namespace gpuml {

// scikit-learn's TruncatedSVD parameters, in its order; declared once in
// src/decomposition/truncated_svd.cpp's table (forms, defaults, documentation).
struct TruncatedSVDParams {
  int64_t n_components = 2;
  // "randomized" (Halko et al.), "arpack" (scikit-learn's rule: n_components < min(n_samples,
  // n_features); the exact SVD) or "full" (the exact SVD, any n_components <= n_features): SVD of R
  // from a QR of X.
  std::string algorithm = "randomized";
  int64_t n_iter = 5;                    // randomized power iterations
  int64_t n_oversamples = 10;
  // Accepted, without effect: the randomized power iterations always orthonormalize.
  std::string power_iteration_normalizer = "auto";
  std::optional<uint64_t> random_state;  // unset: the context's seed
  double tol = 0.0;  // accepted, without effect: "arpack" is answered by the exact SVD
};

// Truncated SVD of X without centering, as scikit-learn's TruncatedSVD (signs by svd_flip on
// the rows of components_). explained_variance_ is the variance of each column of X
// components_ᵀ, explained_variance_ratio_ that over the total variance of X's columns.
class GPUML_API TruncatedSVD final : public Estimator {
 public:
  explicit TruncatedSVD(TruncatedSVDParams params = {});
  const TruncatedSVDParams& params() const { return params_; }

  const char* kind() const override { return "truncated_svd"; }
  std::string get_params_json() const override;

  TruncatedSVD& fit(Context& ctx, const ArrayView& X);
  void fit(Context& ctx, const ArrayView& X, const ArrayView* y, const ArrayView* sample_weight) override;
  bool fitted() const override { return !components_.empty(); }

  // Sparse X (CSR or CSC) on CPU contexts: the same solvers over the products X·M and Xᵀ·M
  // (no dense copy of X); "arpack" runs the randomized subspace iteration to convergence.
  bool accepts_sparse() const override { return true; }
  void fit_sparse(Context& ctx, const SparseView& X, const ArrayView* y, const ArrayView* sample_weight) override;
  void transform_sparse(Context& ctx, const SparseView& X, const ArrayView& out) const override;

  ArraySpec output_spec(const std::string& method, int64_t n_rows) const override;
  void transform(Context& ctx, const ArrayView& X, const ArrayView& out) const override;  // X components_ᵀ
  // X components_ (n, n_features). Not in the C ABI.
  void inverse_transform(Context& ctx, const ArrayView& X, const ArrayView& out) const;
  ArraySpec inverse_transform_spec(int64_t n_rows) const;

  const HostArray& components() const;  // (n_components, n_features)
  const HostArray& explained_variance() const;
  const HostArray& explained_variance_ratio() const;
  const HostArray& singular_values() const;
  int64_t n_features_in() const;

  std::vector<std::string> attribute_names() const override;
  const HostArray& attribute(const std::string& name) const override;
  void restore(std::map<std::string, HostArray> attributes) override;

 private:
  TruncatedSVDParams params_;
  HostArray components_, explained_variance_, explained_variance_ratio_, singular_values_, n_features_in_;
};

}  // namespace gpuml

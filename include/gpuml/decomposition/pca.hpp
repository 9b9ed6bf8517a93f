#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "gpuml/core/estimator.hpp"

namespace gpuml {

// scikit-learn's PCA parameters, in its order; declared once in src/decomposition/pca.cpp's
// table (forms, defaults, documentation).
struct PCAParams {
  // unset: min(n_samples, n_features) components (one less for arpack); an integer >= 0: that
  // many (0 with full and covariance_eigh only); a value in (0, 1) (full and covariance_eigh
  // only): the fewest components whose explained variance ratio sums above it.
  std::optional<double> n_components;
  // n_components="mle": Minka's MLE of the dimension, as scikit-learn's (full and
  // covariance_eigh only, n_samples >= n_features); n_components is then unset.
  bool n_components_mle = false;
  bool copy = true;  // accepted, without effect: gpuml never writes to X
  bool whiten = false;
  // "auto" (scikit-learn's rule: covariance_eigh when n_features <= 1000 and n_samples >=
  // 10 n_features, else full for small data, else randomized for few components), "full" (SVD of
  // R from a QR of the centered X), "covariance_eigh" (eigen-decomposition of the centered
  // covariance; one pass over X), "arpack" (scikit-learn's rules for it: n_components an integer
  // below min(n_samples, n_features); answered by full's exact SVD restricted to n_components,
  // on sparse X by a subspace iteration, see fit_sparse), "randomized" (Halko et al.). Sparse X:
  // "auto" is "arpack".
  std::string svd_solver = "auto";
  // "arpack" on sparse X: the subspace iteration's tolerance (0: exact where n min(n, d)² <=
  // 2^32, else ~1e-2 sqrt(eps)); dense X: without effect (the exact SVD).
  double tol = 0.0;
  int64_t iterated_power = -1;  // randomized power iterations; -1: "auto" (7 if n_components < 0.1 min(n, d), else 4)
  int64_t n_oversamples = 10;
  // Accepted, without effect: the randomized power iterations always orthonormalize.
  std::string power_iteration_normalizer = "auto";
  std::optional<uint64_t> random_state;  // unset: the context's seed
};

// Principal component analysis, as scikit-learn's PCA (float32 and float64, dense or, on the
// CPU, sparse X; signs follow its svd_flip convention on the rows of components_). Fitted attributes are host arrays in X's
// float dtype; n_components_, n_features_in_ and n_samples_ are int64 scalars, noise_variance_ a
// 0-d array. A constant column gives finite results (a zero-variance direction), never NaN.
class GPUML_API PCA final : public Estimator {
 public:
  explicit PCA(PCAParams params = {});
  const PCAParams& params() const { return params_; }

  const char* kind() const override { return "pca"; }
  std::string get_params_json() const override;

  PCA& fit(Context& ctx, const ArrayView& X);
  void fit(Context& ctx, const ArrayView& X, const ArrayView* y, const ArrayView* sample_weight) override;
  bool fitted() const override { return !components_.empty(); }

  // Sparse X (CSR / CSC, float32 / float64, int32 / int64 indices), CPU contexts on one rank,
  // as scikit-learn: svd_solver "arpack" ("auto" picks it; the subspace iteration over X's
  // products run to convergence) or "covariance_eigh" (XᵀX − n x̄x̄ᵀ from the sparse product, a
  // dense d x d matrix: at most kSparseGramFeatures features), both centering X implicitly;
  // other solvers throw invalid_argument with scikit-learn's message. transform_sparse takes
  // sparse X whatever the solver of the fit.
  bool accepts_sparse() const override { return true; }
  void fit_sparse(Context& ctx, const SparseView& X, const ArrayView* y, const ArrayView* sample_weight) override;
  void transform_sparse(Context& ctx, const SparseView& X, const ArrayView& out) const override;

  ArraySpec output_spec(const std::string& method, int64_t n_rows) const override;
  // (n, n_components_): (X - mean_) components_ᵀ, divided by sqrt(explained_variance_) when whiten.
  void transform(Context& ctx, const ArrayView& X, const ArrayView& out) const override;
  // (n, n_features_in_): X components_ (scaled back when whiten) + mean_. Not in the C ABI.
  void inverse_transform(Context& ctx, const ArrayView& X, const ArrayView& out) const;
  ArraySpec inverse_transform_spec(int64_t n_rows) const;

  const HostArray& components() const;  // (n_components_, n_features)
  const HostArray& explained_variance() const;
  const HostArray& explained_variance_ratio() const;
  const HostArray& singular_values() const;
  const HostArray& mean() const;        // (n_features,)
  double noise_variance() const;
  int64_t n_components() const;
  int64_t n_features_in() const;
  int64_t n_samples() const;

  std::vector<std::string> attribute_names() const override;
  const HostArray& attribute(const std::string& name) const override;
  void restore(std::map<std::string, HostArray> attributes) override;

 private:
  PCAParams params_;
  HostArray components_, explained_variance_, explained_variance_ratio_, singular_values_, mean_, noise_variance_,
      n_components_, n_features_in_, n_samples_;
};

}  // namespace gpuml

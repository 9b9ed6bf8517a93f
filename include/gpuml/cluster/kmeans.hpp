#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gpuml/core/estimator.hpp"

namespace gpuml {

// scikit-learn's KMeans parameters, same names and defaults. Declared once, with their forms and
// documentation, in the parameter table in src/cluster/kmeans.cpp.
struct KMeansParams {
  int64_t n_clusters = 8;
  std::string init = "k-means++";   // "k-means++", "k-means||", "random", or "array" (then init_array is used)
  std::vector<double> init_array;   // n_clusters x n_features, row-major, when init == "array"
  int n_init = 0;                   // 0 means "auto": 10 for random, else 1
  int max_iter = 300;
  double tol = 1e-4;                // relative: multiplied by the mean per-feature variance of X
  int verbose = 0;                  // > 0: progress on stdout, as scikit-learn prints it
  std::optional<uint64_t> random_state;  // unset: the context's seed
  bool copy_x = true;               // accepted: gpuml never writes to X
  std::string algorithm = "lloyd";  // "lloyd" or "elkan": the same result, so both run Lloyd
};

// Lloyd's k-means with k-means++ seeding, as scikit-learn's KMeans(algorithm="lloyd"), or
// k-means|| seeding (scalable k-means++, as Spark MLlib's and cuML's), which scikit-learn lacks.
// Sparse X (CSR / CSC, core/sparse.hpp) is accepted on the CPU: the same fit through the sparse
// products, X never made dense and not centered (as scikit-learn); one rank only.
class GPUML_API KMeans final : public Estimator {
 public:
  explicit KMeans(KMeansParams params = {});
  const KMeansParams& params() const { return params_; }

  const char* kind() const override { return "kmeans"; }
  std::string get_params_json() const override;

  KMeans& fit(Context& ctx, const ArrayView& X, const ArrayView* sample_weight = nullptr);
  void fit(Context& ctx, const ArrayView& X, const ArrayView* y, const ArrayView* sample_weight) override;
  bool fitted() const override { return !centers_.empty(); }

  ArraySpec output_spec(const std::string& method, int64_t n_rows) const override;
  void predict(Context& ctx, const ArrayView& X, const ArrayView& labels) const override;      // n
  void transform(Context& ctx, const ArrayView& X, const ArrayView& distances) const override; // n x k
  double score(Context& ctx, const ArrayView& X, const ArrayView* sample_weight = nullptr) const;  // -inertia
  void fit_predict(Context& ctx, const ArrayView& X, const ArrayView& labels, const ArrayView* sample_weight = nullptr);

  // The same for sparse X.
  bool accepts_sparse() const override;
  KMeans& fit(Context& ctx, const SparseView& X, const ArrayView* sample_weight = nullptr);
  void fit_sparse(Context& ctx, const SparseView& X, const ArrayView* y, const ArrayView* sample_weight) override;
  void predict_sparse(Context& ctx, const SparseView& X, const ArrayView& labels) const override;
  void transform_sparse(Context& ctx, const SparseView& X, const ArrayView& distances) const override;
  double score(Context& ctx, const SparseView& X, const ArrayView* sample_weight = nullptr) const;
  void fit_predict(Context& ctx, const SparseView& X, const ArrayView& labels, const ArrayView* sample_weight = nullptr);

  // Fitted attributes, on the host.
  const HostArray& cluster_centers() const;  // k x d, the dtype of X
  const HostArray& labels() const;           // n, int32
  double inertia() const;
  int64_t n_iter() const;
  int64_t n_features_in() const;

  // "init": the initial centers (n_clusters x n_features, finite), as the JSON matrix form.
  void set_param_array(Context& ctx, const std::string& name, const ArrayView& value) override;

  std::vector<std::string> attribute_names() const override;
  const HostArray& attribute(const std::string& name) const override;
  void restore(std::map<std::string, HostArray> attributes) override;

 private:
  void adopt(Context& ctx, HostArray centers, double inertia, int64_t n_iter, int64_t distinct_clusters, const Buffer& labels,
             int64_t n);

  KMeansParams params_;
  HostArray centers_, labels_, inertia_, n_iter_, n_features_in_, distinct_clusters_;
};

}  // namespace gpuml

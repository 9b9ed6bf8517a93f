#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gpuml/core/estimator.hpp"

namespace gpuml {

namespace detail {
struct PackedForest;
struct StagedForest;
struct WarmStart;
}

// A count given either as a number or as a fraction of something (scikit-learn's int-or-float
// parameters: min_samples_split, min_samples_leaf, max_samples).
struct CountOrFraction {
  double value = 0.0;
  bool fraction = false;  // value in (0, 1]: that share; else a whole number
};

// scikit-learn's RandomForestClassifier / RandomForestRegressor parameters (names and defaults),
// declared with their forms and documentation in the parameter table of random_forest.cpp.
// X is binned once per fit into at most n_bins quantile bins per feature (scikit-learn's
// histogram thresholds); splits are searched over those bins.
struct RandomForestParams {
  int64_t n_estimators = 100;
  std::string criterion;                // "" the estimator's default: "gini" | "squared_error"
  std::optional<int64_t> max_depth;     // None: no limit
  CountOrFraction min_samples_split{2, false};
  CountOrFraction min_samples_leaf{1, false};
  double min_weight_fraction_leaf = 0.0;
  double min_impurity_decrease = 0.0;
  // "sqrt", "log2", "all" (None), "count" (max_features_value features) or "fraction" (of them);
  // "" the estimator's default: "sqrt" for the classifier, the fraction 1.0 for the regressor.
  std::string max_features;
  double max_features_value = 0.0;
  std::optional<int64_t> max_leaf_nodes;  // None; with it, trees grow best-first to that many leaves
  bool bootstrap = true;
  std::optional<CountOrFraction> max_samples;  // bootstrap draws: None = n
  // Classifier only: "balanced" or "balanced_subsample", or (label, weight >= 0) pairs (labels
  // not listed weigh 1), or neither.
  std::string class_weight_mode;
  std::vector<std::pair<double, double>> class_weight;
  std::optional<uint64_t> random_state;
  bool oob_score = false;
  bool warm_start = false;
  double ccp_alpha = 0.0;
  std::optional<int64_t> n_jobs;        // accepted, without effect
  int64_t verbose = 0;                  // accepted, without effect
  std::optional<std::vector<double>> monotonic_cst;  // only None is supported
  int64_t n_bins = 256;
};

// What both forests share: the fit, the tree arrays, predictions, the fitted attributes.
// Fitted attributes (scikit-learn's names where it has them):
//   n_features_in_, feature_importances_ (d), and for the classifier classes_, n_classes_;
//   with oob_score: oob_score_, and oob_decision_function_ (n x n_classes) or oob_prediction_ (n),
//   and oob_missing_ (not scikit-learn's: how many rows every tree drew, so that no tree predicts
//   them; their rows of the above are 0, and scikit-learn warns about them);
//   the trees as flat node arrays concatenated over trees, tree t owning nodes
//   [estimator_node_offsets_[t], estimator_node_offsets_[t + 1]) with children numbered within
//   the tree (as scikit-learn's tree_ arrays): nodes_feature_ (int32, −2 at leaves),
//   nodes_threshold_ (float64, x <= threshold goes left; −2 at leaves), nodes_children_left_,
//   nodes_children_right_ (int32, −1 at leaves), nodes_value_ (nodes x n_classes class fractions,
//   or nodes x 1 means), nodes_impurity_, nodes_n_samples_ (int64), nodes_weighted_n_samples_;
//   estimator_seeds_ (int64: per tree the seed of its bootstrap draws, for the out-of-bag rows of a
//   warm-started fit).
class GPUML_API RandomForestBase : public Estimator {
 public:
  const RandomForestParams& params() const { return params_; }
  std::string get_params_json() const override;

  // X (n, d) float32 or float64, finite. Classifier: y (n,) class labels (numbers), at least two
  // classes; regressor: y (n,) finite targets. sample_weight (n,) >= 0 with a positive sum.
  void fit(Context& ctx, const ArrayView& X, const ArrayView* y, const ArrayView* sample_weight) override;
  // Sparse X (CSR or CSC, float32 or float64 values, int32 or int64 indices; CPU contexts, one
  // rank; a CUDA context is an unsupported error): the forest fit on the dense matrix with the
  // same values, bit for bit, and the same predictions. X's values are never densified: the bins
  // come from its columns (implicit zeros counted), and the one dense structure is the fit's
  // n x d matrix of one-byte bin codes, as for dense X (an out_of_memory error when it cannot fit
  // in the machine's memory). Predictions walk X's CSR rows.
  bool accepts_sparse() const override;
  void fit_sparse(Context& ctx, const SparseView& X, const ArrayView* y, const ArrayView* sample_weight) override;
  void predict_sparse(Context& ctx, const SparseView& X, const ArrayView& out) const override;
  bool fitted() const override { return !n_features_in_.empty(); }

  ArraySpec output_spec(const std::string& method, int64_t n_rows) const override;
  void predict(Context& ctx, const ArrayView& X, const ArrayView& out) const override;

  int64_t n_features_in() const;
  int64_t n_estimators_fitted() const;
  const HostArray& feature_importances() const;

  std::vector<std::string> attribute_names() const override;
  const HostArray& attribute(const std::string& name) const override;
  void restore(std::map<std::string, HostArray> attributes) override;
  // The fitted trees of `previous` (a forest of the same kind) are kept by the next fit with warm_start.
  void warm_start_from(const Estimator& previous) override;

  ~RandomForestBase() override;

 protected:
  RandomForestBase(RandomForestParams params, bool classification);
  // Per row: class probabilities (n x n_classes) or the mean prediction (n), float64, in the
  // context's memory (a Buffer of n * columns doubles).
  Buffer predict_values(Context& ctx, const ArrayView& X) const;
  Buffer predict_values_sparse(Context& ctx, const SparseView& X) const;
  // predict's output from predict_values's (n rows): the means (regressor), the labels (classifier).
  virtual void write_predictions(Context& ctx, const Buffer& values, int64_t n, const ArrayView& out) const;
  int forest_k() const;  // values per leaf: classes, or 1

  RandomForestParams params_;
  bool classification_;
  std::map<std::string, HostArray> attributes_;
  HostArray n_features_in_;                 // empty until fitted
  // The trees for prediction on the host, packed from the attributes (after a fit or restore; after
  // a CUDA fit that staged its own packed forest, on first use), and the packed trees staged on
  // each device that predicted (made on first use, dropped on refit); both under staged_mutex_.
  mutable std::shared_ptr<const detail::PackedForest> forest_;
  mutable std::mutex staged_mutex_;
  mutable std::map<std::string, std::shared_ptr<const detail::StagedForest>> staged_;
  // warm_start_from's trees (and classes), kept by the next fit only.
  std::shared_ptr<const detail::WarmStart> warm_start_source_;
  // The last fit's grown trees, freed by a thread of their own (joined when this is replaced or
  // destroyed): returning their memory (~1 GB at full depth) took ~60 ms of the fit.
  std::shared_ptr<void> freeing_;

 private:
  void rebuild_forest(int threads);
  void pack_unlocked(int threads) const;
  std::shared_ptr<const detail::PackedForest> packed_forest(int threads) const;
  void fit_any(Context& ctx, const ArrayView* X_dense, const SparseView* X_sparse, const ArrayView* y,
               const ArrayView* sample_weight);
};

class GPUML_API RandomForestClassifier final : public RandomForestBase {
 public:
  explicit RandomForestClassifier(RandomForestParams params = {});
  const char* kind() const override { return "random_forest_classifier"; }
  RandomForestClassifier& fit(Context& ctx, const ArrayView& X, const ArrayView& y, const ArrayView* sample_weight = nullptr);
  using RandomForestBase::fit;
  // "predict": (n,) labels (float64 by default), the most probable class; "predict_proba": (n, n_classes).
  void predict_proba(Context& ctx, const ArrayView& X, const ArrayView& out) const override;
  void predict_proba_sparse(Context& ctx, const SparseView& X, const ArrayView& out) const override;
  const HostArray& classes() const;

 protected:
  void write_predictions(Context& ctx, const Buffer& proba, int64_t n, const ArrayView& out) const override;

 private:
  void write_probabilities(Context& ctx, const Buffer& proba, int64_t n, const ArrayView& out) const;
};

class GPUML_API RandomForestRegressor final : public RandomForestBase {
 public:
  explicit RandomForestRegressor(RandomForestParams params = {});
  const char* kind() const override { return "random_forest_regressor"; }
  RandomForestRegressor& fit(Context& ctx, const ArrayView& X, const ArrayView& y, const ArrayView* sample_weight = nullptr);
  using RandomForestBase::fit;
};

}  // namespace gpuml

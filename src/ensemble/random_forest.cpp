// RandomForestClassifier and RandomForestRegressor: parameters, fitted attributes, the fit and
// predictions, written once for both. The trees are grown by fit_forest (tree_builder.hpp,
// docs/random_forest.md): on the host threads, on a CUDA context level by level on the device,
// and over the ranks of the context's communicator (CPU contexts) level by level with summed
// histograms. Predictions run on the context's backend (forest_backend.hpp). Sparse X (one rank,
// either context: canonicalized on the host) takes the same fit through its CSC columns
// (fit_forest_sparse; on a CUDA context the codes go to the device) and predicts from its CSR rows
// on the host threads (forest_predict_sparse).
#include "gpuml/ensemble/random_forest.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <system_error>
#include <thread>
#include <tuple>
#include <vector>

#include "core/distributed.hpp"
#include "core/labels.hpp"
#include "core/param_table.hpp"
#include "core/params.hpp"
#include "core/registry.hpp"
#include "core/sparse_backend.hpp"
#include "core/staging.hpp"
#include "core/trace.hpp"
#include "ensemble/forest_backend.hpp"
#include "ensemble/forest_nodes.hpp"
#include "ensemble/sparse_lines.hpp"
#include "ensemble/tree_builder.hpp"
#include "linear_model/logistic_backend.hpp"
#include "gpuml/core/error.hpp"

namespace gpuml {

namespace detail {
// A forest's trees and classes kept for a warm-started fit.
struct WarmStart {
  Forest forest;
  std::vector<double> classes;  // the classifier's labels
  // The kept nodes' nodes_value_ and nodes_weighted_n_samples_ as they were: the forest holds
  // them as weighted statistics, and value * weight / sum back is not always the same double.
  std::vector<double> value, weighted;
};
}  // namespace detail

namespace {

using detail::kLeafChild;
using detail::kLeafFeature;

const char* estimator_name(bool classification) {
  return classification ? "RandomForestClassifier" : "RandomForestRegressor";
}

std::string default_criterion(bool classification) { return classification ? "gini" : "squared_error"; }

// The estimator's defaults of the two parameters whose defaults differ ("" in RandomForestParams).
RandomForestParams with_defaults(RandomForestParams p, bool classification) {
  if (p.criterion.empty()) p.criterion = default_criterion(classification);
  if (p.max_features.empty()) {
    p.max_features = classification ? "sqrt" : "fraction";  // the regressor's 1.0: every feature
    p.max_features_value = classification ? 0.0 : 1.0;
  }
  return p;
}

// An int-or-float parameter as JSON and back: a JSON integer is a count, a JSON float a fraction
// (require_form has matched it to the row's count or fraction form).
nlohmann::json count_json(const CountOrFraction& c) {
  return c.fraction ? nlohmann::json(c.value) : nlohmann::json(static_cast<int64_t>(c.value));
}
CountOrFraction count_of_json(const nlohmann::json& v) { return {v.get<double>(), v.is_number_float()}; }

nlohmann::json max_features_json(const std::string& mf, double value) {
  if (mf == "all") return nullptr;
  if (mf == "count") return static_cast<int64_t>(value);
  if (mf == "fraction") return value;
  return mf;  // "sqrt", "log2", or a wrong name the forms refuse
}

detail::ParamRow<RandomForestParams> count_or_fraction_row(const char* name, CountOrFraction RandomForestParams::*member,
                                                           std::vector<detail::ParamForm> forms, const char* doc) {
  return {name, std::move(forms), doc,
          [member](RandomForestParams& p, const nlohmann::json& v) { p.*member = count_of_json(v); },
          [member](const RandomForestParams& p) { return count_json(p.*member); }};
}

// Whole counts: a count held as a double with a fraction would be truncated (C++ callers only;
// JSON counts are integers).
void expect_whole(const char* kind, const char* name, bool fraction, double value) {
  GPUML_EXPECT(fraction || value == std::floor(value), std::string(kind) + " parameter '" + name +
                                                           "' must be a whole count or a fraction, got the count " +
                                                           detail::number_text(value));
}

// Both forests' parameters, declared once, in scikit-learn's order, then gpuml's n_bins. The
// classifier's table has its criteria and class_weight, the regressor's its criteria.
detail::ParamTable<RandomForestParams> make_params_table(bool classification) {
  using namespace detail;
  using P = RandomForestParams;
  const char* kind = classification ? "random_forest_classifier" : "random_forest_regressor";
  std::vector<std::string> criteria = {"gini", "entropy", "log_loss"};
  if (!classification) criteria = {"squared_error", "absolute_error", "poisson"};
  std::vector<ParamRow<P>> rows = {
      field("n_estimators", &P::n_estimators, {integer_in(1)}, "The number of trees."),
      ParamRow<P>{"criterion", {one_of(criteria)},
                  classification ? "The split quality: \"gini\" impurity, or \"entropy\" (\"log_loss\" is the same)."
                                 : "The split quality: \"squared_error\", or \"poisson\" (y >= 0 with a positive sum). "
                                   "\"absolute_error\" is not supported.",
                  [](P& p, const nlohmann::json& v) { p.criterion = v.get<std::string>(); },
                  [classification](const P& p) -> nlohmann::json {
                    return p.criterion.empty() ? default_criterion(classification) : p.criterion;
                  }},
      field("max_depth", &P::max_depth, {integer_in(1), null_form()}, "The deepest a tree grows; null: no limit."),
      count_or_fraction_row("min_samples_split", &P::min_samples_split, {integer_in(2), real_not_int_in(0, 1, "right")},
                            "The fewest rows a node needs to be split: a count, or a fraction of the rows (rounded up)."),
      count_or_fraction_row("min_samples_leaf", &P::min_samples_leaf, {integer_in(1), real_not_int_in(0, 1, "neither")},
                            "The fewest rows in each child of a split: a count, or a fraction of the rows (rounded up)."),
      field("min_weight_fraction_leaf", &P::min_weight_fraction_leaf, {number_in(0, 0.5, "both")},
            "The least share of the tree's total sample weight (bootstrap counts times weights) in each child "
            "of a split; above 0, trees grow on the host (also on a GPU context)."),
      ParamRow<P>{"max_features",
                  {integer_in(1), real_not_int_in(0, 1, "right"), one_of({"sqrt", "log2"}), null_form()},
                  "The features drawn for each split: a count, a fraction of n_features (rounded down, at least "
                  "1), \"sqrt\" or \"log2\" of n_features, or null: all of them.",
                  [](P& p, const nlohmann::json& v) {
                    p.max_features_value = v.is_number() ? v.get<double>() : 0.0;
                    p.max_features = v.is_null()           ? "all"
                                     : v.is_string()       ? v.get<std::string>()
                                     : v.is_number_float() ? "fraction"
                                                           : "count";
                  },
                  [classification](const P& p) {
                    const P resolved = with_defaults(p, classification);
                    return max_features_json(resolved.max_features, resolved.max_features_value);
                  }},
      field("max_leaf_nodes", &P::max_leaf_nodes, {integer_in(2), null_form()},
            "The most leaves of a tree: with it, trees grow best-first (scikit-learn's order); null: no limit."),
      field("min_impurity_decrease", &P::min_impurity_decrease, {number_in(0)},
            "A split must decrease the weighted impurity by at least this much."),
      field("bootstrap", &P::bootstrap, {boolean()},
            "Each tree grows on a bootstrap draw of the rows (in proportion to sample and class weights); "
            "false: on every row."),
      field("oob_score", &P::oob_score, {boolean()},
            "Scores the forest on each row's out-of-bag trees (needs bootstrap); Python also takes a callable "
            "score(y, predictions)."),
      field("n_jobs", &P::n_jobs, {any_integer(), null_form()},
            "Accepted, without effect: the CPU backend uses the context's threads.")
          .per_rank(),
      field("random_state", &P::random_state, {seed()},
            "The seed of the bootstrap draws and feature draws; the same seed gives the same forest on any "
            "thread count and device. null: a fresh seed (rank 0's in a distributed fit)."),
      field("verbose", &P::verbose, {verbose()}, "Accepted, without effect: gpuml prints nothing.").per_rank(),
      field("warm_start", &P::warm_start, {boolean()},
            "A refit keeps the fitted trees and grows trees len(estimators_)..n_estimators-1 as a fit of "
            "n_estimators trees with the same random_state would."),
      ParamRow<P>{"class_weight", {one_of({"balanced", "balanced_subsample"}), pairs(), null_form()},
                  "Weights of the classes: \"balanced\" (inverse to their frequencies), \"balanced_subsample\" "
                  "(the same per bootstrap draw), (class, weight) pairs (classes not listed weigh 1), or null.",
                  [](P& p, const nlohmann::json& v) {
                    p.class_weight_mode.clear();
                    p.class_weight.clear();
                    if (v.is_string()) p.class_weight_mode = v.get<std::string>();
                    if (v.is_array())
                      for (const auto& pair : v) p.class_weight.emplace_back(pair[0].get<double>(), pair[1].get<double>());
                  },
                  [](const P& p) { return class_weight_json(p.class_weight_mode, p.class_weight); }},
      field("ccp_alpha", &P::ccp_alpha, {number_in(0)},
            "Minimal cost-complexity pruning after growth: subtrees whose impurity decrease per added leaf is "
            "at most ccp_alpha become leaves."),
      ParamRow<P>{"max_samples", {null_form(), real_not_int_in(0, std::nullopt, "neither"), integer_in(1)},
                  "The bootstrap draws per tree: a count, a fraction of the rows' total weight (at least 1), or "
                  "null: n_samples. Needs bootstrap.",
                  [](P& p, const nlohmann::json& v) {
                    p.max_samples = v.is_null() ? std::nullopt : std::optional<CountOrFraction>(count_of_json(v));
                  },
                  [](const P& p) { return p.max_samples ? count_json(*p.max_samples) : nlohmann::json(nullptr); }},
      field("monotonic_cst", &P::monotonic_cst, {numbers(), null_form()},
            "Not supported: only null (a list is an unsupported error)."),
      field("n_bins", &P::n_bins, {integer_in(2, 256, "both")},
            "gpuml's: the most quantile bins per feature that splits are searched over (scikit-learn's exact "
            "thresholds wherever a feature has at most n_bins distinct values)."),
  };
  if (!classification) rows.erase(rows.begin() + 15);  // class_weight
  return ParamTable<P>(kind, std::move(rows), [kind, classification](const P& p) {
    if (!classification)
      GPUML_EXPECT(p.class_weight_mode.empty() && p.class_weight.empty(), std::string(kind) + " has no class_weight");
    GPUML_EXPECT(p.class_weight_mode.empty() || p.class_weight.empty(),
                 std::string(kind) + " parameter 'class_weight' is a preset or a list of pairs, not both");
    expect_whole(kind, "min_samples_split", p.min_samples_split.fraction, p.min_samples_split.value);
    expect_whole(kind, "min_samples_leaf", p.min_samples_leaf.fraction, p.min_samples_leaf.value);
    if (p.max_samples) expect_whole(kind, "max_samples", p.max_samples->fraction, p.max_samples->value);
    expect_whole(kind, "max_features", p.max_features != "count", p.max_features_value);
    // scikit-learn's messages, from its fit.
    GPUML_EXPECT(p.bootstrap || !p.max_samples,
                 "`max_sample` cannot be set if `bootstrap=False`. Either switch to `bootstrap=True` or set "
                 "`max_sample=None`.");
    GPUML_EXPECT(p.bootstrap || !p.oob_score, "Out of bag estimation only available if bootstrap=True");
    if (p.criterion == "absolute_error")
      throw_error(ErrorCode::unsupported, std::string(kind) + " parameter 'criterion': \"absolute_error\" is not supported");
    if (p.monotonic_cst)
      throw_error(ErrorCode::unsupported, std::string(kind) + " parameter 'monotonic_cst': only null is supported");
  });
}

const detail::ParamTable<RandomForestParams>& params_table(bool classification) {
  static const detail::ParamTable<RandomForestParams> classifier = make_params_table(true),
                                                      regressor = make_params_table(false);
  return classification ? classifier : regressor;
}

// scikit-learn's resolution of max_features for d features.
int64_t features_per_node(const RandomForestParams& p, int64_t d, const std::string& name) {
  int64_t m = d;
  if (p.max_features == "sqrt") m = static_cast<int64_t>(std::sqrt(static_cast<double>(d)));
  else if (p.max_features == "log2") m = static_cast<int64_t>(std::log2(static_cast<double>(d)));
  else if (p.max_features == "count") m = static_cast<int64_t>(p.max_features_value);
  else if (p.max_features == "fraction") m = static_cast<int64_t>(p.max_features_value * static_cast<double>(d));
  m = std::max<int64_t>(m, 1);
  GPUML_EXPECT(m <= d, name + ": max_features must be <= n_features (" + std::to_string(d) + "), got " + std::to_string(m));
  return m;
}

int64_t rows_of(const CountOrFraction& c, int64_t n) {
  return c.fraction ? static_cast<int64_t>(std::ceil(c.value * static_cast<double>(n))) : static_cast<int64_t>(c.value);
}

template <typename T>
HostArray array_of(DType dtype, const std::vector<T>& values) {
  HostArray a(dtype, static_cast<int64_t>(values.size()));
  std::copy(values.begin(), values.end(), a.as<T>());
  return a;
}

template <typename T>
HostArray scalar_of(DType dtype, T value) {
  HostArray a = HostArray::scalar(dtype);
  *a.as<T>() = value;
  return a;
}

// Frees `doomed` on a thread of its own; the handle joins that thread when released.
// (Without a thread to be had, it is freed here, as the lambda holding it is destroyed.)
template <typename T>
std::shared_ptr<void> free_on_a_thread(T doomed) {
  std::thread* thread = nullptr;
  try {
    thread = new std::thread([doomed = std::move(doomed)]() mutable { doomed = T(); });
  } catch (const std::system_error&) {
    return nullptr;
  }
  return std::shared_ptr<void>(thread, [](void* p) {
    auto* t = static_cast<std::thread*>(p);
    t->join();
    delete t;
  });
}

// The fitted trees as the attribute arrays (see random_forest.hpp): the node arrays the backend
// wrote, or made from the grown trees; a warm start's kept trees (the first ones) keep their node
// values and weights to the bit.
void tree_attributes(detail::Forest& forest, const detail::WarmStart* kept, int threads,
                     std::map<std::string, HostArray>& out) {
  HostArray seeds(DType::int64, static_cast<int64_t>(forest.tree_seeds.size()));
  for (std::size_t t = 0; t < forest.tree_seeds.size(); ++t) seeds.as<int64_t>()[t] = static_cast<int64_t>(forest.tree_seeds[t]);
  out["estimator_seeds_"] = std::move(seeds);
  detail::ForestNodes nodes = forest.written ? std::move(forest.written->nodes)
                                             : detail::forest_nodes(forest.trees, forest.width, forest.classification, threads);
  if (kept) {
    std::copy(kept->value.begin(), kept->value.end(), nodes.value.as<double>());
    std::copy(kept->weighted.begin(), kept->weighted.end(), nodes.weighted.as<double>());
  }
  out["estimator_node_offsets_"] = std::move(nodes.offsets);
  out["nodes_feature_"] = std::move(nodes.feature);
  out["nodes_threshold_"] = std::move(nodes.threshold);
  out["nodes_children_left_"] = std::move(nodes.left);
  out["nodes_children_right_"] = std::move(nodes.right);
  out["nodes_value_"] = std::move(nodes.value);
  out["nodes_impurity_"] = std::move(nodes.impurity);
  out["nodes_n_samples_"] = std::move(nodes.n_samples);
  out["nodes_weighted_n_samples_"] = std::move(nodes.weighted);
}

const std::vector<std::string> kTreeAttributes = {
    "estimator_node_offsets_", "nodes_feature_",   "nodes_threshold_", "nodes_children_left_",     "nodes_children_right_",
    "nodes_value_",            "nodes_impurity_", "nodes_n_samples_",  "nodes_weighted_n_samples_",
    "estimator_seeds_"};

// The trees of a fitted forest's attributes (a warm start keeps them): what the fit needs of them,
// the walk, each leaf's weighted statistics, and each split's impurity improvement (up to the
// factor 1 / root weight, which the per-tree normalized importances do not see).
detail::Forest forest_of_attributes(const std::map<std::string, HostArray>& a, bool classification) {
  const int64_t d = a.at("feature_importances_").spec().shape[0];
  const int64_t k = a.at("nodes_value_").spec().shape[1];
  const int width = classification ? static_cast<int>(k) : 3;
  detail::Forest forest;
  forest.n_features = d;
  forest.classification = classification;
  forest.width = width;
  const int64_t* offsets = a.at("estimator_node_offsets_").as<const int64_t>();
  const int64_t n_trees = a.at("estimator_node_offsets_").spec().shape[0] - 1;
  const int32_t* feature = a.at("nodes_feature_").as<const int32_t>();
  const int32_t* left = a.at("nodes_children_left_").as<const int32_t>();
  const int32_t* right = a.at("nodes_children_right_").as<const int32_t>();
  const double* threshold = a.at("nodes_threshold_").as<const double>();
  const double* value = a.at("nodes_value_").as<const double>();
  const double* impurity = a.at("nodes_impurity_").as<const double>();
  const int64_t* rows = a.at("nodes_n_samples_").as<const int64_t>();
  const double* weighted = a.at("nodes_weighted_n_samples_").as<const double>();
  const int64_t* seeds = a.at("estimator_seeds_").as<const int64_t>();
  for (int64_t t = 0; t < n_trees; ++t) {
    detail::Tree tree;
    for (int64_t at = offsets[t]; at < offsets[t + 1]; ++at) {
      std::vector<double> stats(static_cast<std::size_t>(width), 0.0);
      if (classification) {
        for (int64_t c = 0; c < k; ++c) stats[c] = value[at * k + c] * weighted[at];
      } else {
        stats[0] = weighted[at];
        stats[1] = value[at] * weighted[at];
      }
      detail::new_node(tree, width, stats.data(), impurity[at], rows[at]);
    }
    for (int64_t node = 0; node < tree.node_count(); ++node) {
      const int64_t at = offsets[t] + node;
      if (feature[at] == kLeafFeature) continue;
      tree.feature[node] = feature[at];
      tree.threshold[node] = threshold[at];
      tree.left[node] = left[at];
      tree.right[node] = right[at];
      const int64_t l = offsets[t] + left[at], r = offsets[t] + right[at];
      tree.improvement[node] = weighted[at] * impurity[at] - weighted[l] * impurity[l] - weighted[r] * impurity[r];
    }
    forest.trees.push_back(std::move(tree));
    forest.tree_seeds.push_back(static_cast<uint64_t>(seeds[t]));
  }
  return forest;
}

std::shared_ptr<const detail::WarmStart> warm_start_of(const std::map<std::string, HostArray>& a, bool classification) {
  auto kept = std::make_shared<detail::WarmStart>();
  kept->forest = forest_of_attributes(a, classification);
  const HostArray &value = a.at("nodes_value_"), &weighted = a.at("nodes_weighted_n_samples_");
  kept->value.assign(value.as<const double>(), value.as<const double>() + value.bytes() / sizeof(double));
  kept->weighted.assign(weighted.as<const double>(), weighted.as<const double>() + weighted.bytes() / sizeof(double));
  if (classification) {
    const HostArray& classes = a.at("classes_");
    kept->classes.assign(classes.as<const double>(), classes.as<const double>() + classes.spec().shape[0]);
  }
  return kept;
}

}  // namespace

RandomForestBase::RandomForestBase(RandomForestParams params, bool classification)
    : params_(with_defaults(std::move(params), classification)), classification_(classification) {
  params_table(classification_).check(params_);
}

RandomForestBase::~RandomForestBase() = default;

void RandomForestBase::fit(Context& ctx, const ArrayView& X, const ArrayView* y, const ArrayView* sample_weight) {
  fit_any(ctx, &X, nullptr, y, sample_weight);
}

bool RandomForestBase::accepts_sparse() const { return true; }

void RandomForestBase::fit_sparse(Context& ctx, const SparseView& X, const ArrayView* y, const ArrayView* sample_weight) {
  if (ctx.comm().size() > 1)
    throw_error(ErrorCode::unsupported, std::string(estimator_name(classification_)) +
                                            ": sparse X over several ranks is not written yet");
  fit_any(ctx, nullptr, &X, y, sample_weight);
}

// One of dense X and sparse X_sparse.
void RandomForestBase::fit_any(Context& ctx, const ArrayView* X_dense, const SparseView* X_sparse, const ArrayView* y,
                               const ArrayView* sample_weight) {
  const std::string name = estimator_name(classification_);
  detail::Trace trace(ctx, estimator_name(classification_));  // GPUML_TRACE=1: the time of each phase
  // Distributed (SPMD) over the context's communicator: every rank passes its own rows, and the
  // ranks check their inputs together (a bad rank makes every rank throw), agree on the
  // parameters, take the union of the classes, count "balanced" class weights, the weight total
  // and fractions of rows over all ranks, and fit_forest grows the forest one process would grow
  // on all rows in rank order. One rank (the local communicator) is the single-process fit.
  Comm& comm = ctx.comm();
  const bool distributed = comm.size() > 1;
  int64_t n = 0, d = 0;
  DType dtype = DType::float64;
  detail::HostReadable Xh, yh;
  detail::SparseLines columns;  // sparse X, canonical CSC (the binning reads it feature by feature)
  detail::LabelValues y_values;
  std::vector<double> weights;
  detail::check_on_every_rank(comm, name, "checking X, y and sample_weight", [&] {
    GPUML_EXPECT(y != nullptr, name + ".fit needs y");
    if (X_sparse) {  // checked and canonicalized first: its errors before y's
      if (X_sparse->rows() >= 1 && X_sparse->cols() >= 1) detail::check_codes_fit(X_sparse->rows(), X_sparse->cols());
      columns = detail::sparse_lines(ctx, *X_sparse, SparseFormat::csc, "X");
      n = columns.rows, d = columns.cols;
      dtype = X_sparse->dtype;
    } else {
      detail::check_matrix_shape(*X_dense);
      n = X_dense->shape[0], d = X_dense->shape[1];
      dtype = detail::float_dtype_for(X_dense->dtype);
    }
    GPUML_EXPECT(n >= 1 && d >= 1, name + ": X needs at least one sample and one feature");
    GPUML_EXPECT(n <= INT32_MAX, name + ": at most 2^31 - 1 samples");
    if (X_dense) Xh = detail::host_readable(ctx, *X_dense, dtype, "X");
    if (distributed)  // here rather than mid-fit, where one rank's error would leave the others waiting
      detail::with_float_type(dtype, [&](auto tag) {
        const auto* v = static_cast<const decltype(tag)*>(Xh.data());
        GPUML_EXPECT(std::all_of(v, v + n * d, [](auto x) { return std::isfinite(x); }), "X contains NaN or infinity");
      });
    weights = detail::host_sample_weights(ctx, sample_weight, n);
    if (classification_) {
      y_values = detail::read_labels(ctx, *y, n, name);
    } else {
      GPUML_EXPECT(y->ndim == 1 || (y->ndim == 2 && y->shape[1] == 1),
                   name + ": y must be 1-d (one target); got " + detail::shape_string(*y));
      GPUML_EXPECT(y->shape[0] == n, "y has " + std::to_string(y->shape[0]) + " samples but X has " + std::to_string(n));
      ArrayView flat = *y;
      if (flat.ndim == 2) {  // (n, 1): the rows keep their stride (a column of a wider array)
        flat.ndim = 1;
        flat.shape[1] = flat.strides[1] = 0;
      }
      yh = detail::host_readable(ctx, flat, dtype, "y");
      if (distributed)
        detail::with_float_type(dtype, [&](auto tag) {
          const auto* v = static_cast<const decltype(tag)*>(yh.data());
          GPUML_EXPECT(std::all_of(v, v + n, [](auto x) { return std::isfinite(x); }), "y contains NaN or infinity");
        });
    }
  });
  trace.mark("checks, stage X, y, weights");
  std::vector<detail::RankField> fields = {{"n_features", d},
                                          {"dtype (0 float32, 1 float64)", static_cast<int64_t>(dtype)},
                                          {"whether sample_weight is given", sample_weight != nullptr ? 1 : 0}};
  for (const detail::RankField& f : params_table(classification_).rank_fields(params_)) fields.push_back(f);
  const detail::RowCounts all_rows = detail::agree_on_every_rank(comm, name, n, fields);
  const int64_t n_all = all_rows.total;

  detail::Labels labels;
  if (classification_) {
    // Every rank's classes (a rank may hold one class only); "balanced" counts every rank's rows.
    std::vector<double> classes = detail::union_over_ranks(comm, y_values.classes);
    labels = detail::index_labels(ctx, y_values, std::move(classes), name);
    y_values = {};
    const bool subsample = params_.class_weight_mode == "balanced_subsample" && params_.bootstrap;
    const bool balanced = params_.class_weight_mode == "balanced" ||
                          (params_.class_weight_mode == "balanced_subsample" && !params_.bootstrap);
    if (!subsample && (balanced || !params_.class_weight.empty())) {
      const std::vector<double> per_class =
          detail::class_weights(labels, weights, balanced, params_.class_weight, name, &comm);
      if (weights.empty()) weights.assign(static_cast<std::size_t>(n), 1.0);
      for (int64_t i = 0; i < n; ++i) weights[i] *= per_class[labels.index[i]];
    }
  } else if (params_.criterion == "poisson") {  // scikit-learn's checks, in its words, over every rank's y
    double checks[2] = {0.0, 0.0};  // negative values, sum
    detail::with_float_type(dtype, [&](auto tag) {
      const auto* v = static_cast<const decltype(tag)*>(yh.data());
      for (int64_t i = 0; i < n; ++i) checks[0] += v[i] < 0, checks[1] += static_cast<double>(v[i]);
    });
    comm.allreduce_sum(checks, 2);
    GPUML_EXPECT(checks[0] == 0, name + ": Some value(s) of y are negative which is not allowed for Poisson regression.");
    GPUML_EXPECT(checks[1] > 0, name + ": Sum of y is not strictly positive which is necessary for Poisson regression.");
  }
  double weight_total = static_cast<double>(n_all);
  if (!weights.empty()) {
    // Summed in row order, rank after rank: one process's bits (max_samples as a fraction uses it).
    weight_total = 0.0;
    for (int r = 0; r < comm.size(); ++r) {
      if (r == comm.rank())
        for (double w : weights) weight_total += w;
      comm.broadcast(&weight_total, 1, r);
    }
    GPUML_EXPECT(weight_total > 0, name + ": sample_weight sums to 0: no row has weight");
  }

  trace.mark("labels, class weights");

  detail::ForestRules rules;
  rules.n_estimators = params_.n_estimators;
  rules.tree.criterion = params_.criterion == "gini"            ? detail::Criterion::gini
                         : params_.criterion == "squared_error" ? detail::Criterion::squared_error
                         : params_.criterion == "poisson"       ? detail::Criterion::poisson
                                                                : detail::Criterion::entropy;
  rules.tree.width = classification_ ? static_cast<int>(labels.classes.size()) : 3;
  rules.tree.max_depth = params_.max_depth.value_or(-1);  // -1: no limit
  rules.tree.min_samples_leaf = std::max<int64_t>(1, rows_of(params_.min_samples_leaf, n_all));
  rules.tree.min_samples_split = std::max<int64_t>(2, rows_of(params_.min_samples_split, n_all));
  rules.tree.min_impurity_decrease = params_.min_impurity_decrease;
  rules.tree.max_features = features_per_node(params_, d, name);
  rules.tree.max_leaf_nodes = params_.max_leaf_nodes.value_or(-1);  // -1: depth first, no limit
  rules.bootstrap = params_.bootstrap;
  if (params_.max_samples) {
    const CountOrFraction& ms = *params_.max_samples;
    rules.bootstrap_draws = ms.fraction ? std::max<int64_t>(1, static_cast<int64_t>(ms.value * weight_total))
                                        : static_cast<int64_t>(ms.value);
  }
  rules.max_bins = static_cast<int>(params_.n_bins);
  int64_t seed = static_cast<int64_t>(params_.random_state ? *params_.random_state : std::random_device{}());
  comm.broadcast(&seed, 1, 0);  // rank 0's when random_state is None
  rules.seed = static_cast<uint64_t>(seed);
  rules.threads = ctx.n_threads();
  rules.device = ctx.is_cuda() ? &ctx : nullptr;
  rules.comm = distributed ? &comm : nullptr;
  rules.oob_score = params_.oob_score;
  rules.balanced_subsample = classification_ && params_.class_weight_mode == "balanced_subsample" && params_.bootstrap;
  rules.tree.min_weight_fraction_leaf = params_.min_weight_fraction_leaf;
  rules.tree.ccp_alpha = params_.ccp_alpha;

  // warm_start: the trees of warm_start_from's forest, else of this estimator's last fit.
  std::shared_ptr<const detail::WarmStart> kept;
  if (params_.warm_start) kept = warm_start_source_ ? warm_start_source_ : fitted() ? warm_start_of(attributes_, classification_) : nullptr;
  if (kept) {
    const int64_t kept_d = kept->forest.n_features;
    const int64_t kept_trees = static_cast<int64_t>(kept->forest.trees.size());
    GPUML_EXPECT(params_.n_estimators >= kept_trees, "n_estimators=" + std::to_string(params_.n_estimators) +
                                                         " must be larger or equal to len(estimators_)=" +
                                                         std::to_string(kept_trees) + " when warm_start==True");
    GPUML_EXPECT(kept_d == d, name + ": X has " + std::to_string(d) + " features, but the forest warm_start continues was fitted with " +
                                  std::to_string(kept_d) + " features");
    GPUML_EXPECT(kept->classes == labels.classes, name + ": with warm_start, y must have the classes of the forest it continues");
    rules.kept = &kept->forest;
  }

  detail::Forest forest = detail::with_float_type(dtype, [&](auto tag) {
    using T = decltype(tag);
    const int32_t* label_index = classification_ ? labels.index.data() : nullptr;
    const T* targets = classification_ ? nullptr : static_cast<const T*>(yh.data());
    const double* row_weights = weights.empty() ? nullptr : weights.data();
    if (X_sparse) return detail::fit_forest_sparse<T>(columns, label_index, targets, row_weights, rules);
    return detail::fit_forest<T>(static_cast<const T*>(Xh.data()), n, d, label_index, targets, row_weights, rules);
  });
  trace.mark("fit_forest");

  std::map<std::string, HostArray> attributes;
  tree_attributes(forest, kept.get(), ctx.n_threads(), attributes);
  trace.mark("tree_attributes");
  attributes["feature_importances_"] = array_of(DType::float64, forest.feature_importances);
  if (classification_) {
    attributes["classes_"] = array_of(DType::float64, labels.classes);
    attributes["n_classes_"] = scalar_of<int64_t>(DType::int64, static_cast<int64_t>(labels.classes.size()));
  }
  if (params_.oob_score) {
    attributes["oob_score_"] = scalar_of<double>(DType::float64, forest.oob_score);
    const int64_t k = classification_ ? static_cast<int64_t>(labels.classes.size()) : 1;
    HostArray oob = classification_ ? HostArray(DType::float64, n, k) : HostArray(DType::float64, n);
    std::copy(forest.oob_decision.begin(), forest.oob_decision.end(), oob.as<double>());
    attributes[classification_ ? "oob_decision_function_" : "oob_prediction_"] = std::move(oob);
    attributes["oob_missing_"] = scalar_of<int64_t>(DType::int64, forest.oob_missing);
  }
  trace.mark("other attrs");
  std::map<std::string, HostArray> last = std::move(attributes_);  // the last fit's model
  attributes_ = std::move(attributes);
  n_features_in_ = scalar_of<int64_t>(DType::int64, d);
  warm_start_source_.reset();
  if (forest.written) {  // packed by the backend on the fitting device; the host's copy on first use
    const std::lock_guard<std::mutex> lock(staged_mutex_);
    forest_.reset();
    staged_.clear();
    staged_[device_name(ctx.device())] = std::move(forest.written->staged);
  } else {
    rebuild_forest(ctx.n_threads());
  }
  trace.mark("rebuild_forest (pack_forest)");
  // The grown trees (copied into the attributes) and the last fit's model, freed on a thread of
  // their own once the packing is done: freeing (munmap) beside it slowed its page faults down
  // (pack_forest 50 -> 123 ms at full depth on the H200).
  freeing_ = free_on_a_thread(std::make_tuple(std::move(forest), std::move(last)));
  trace.mark("free the trees, join the last freeing");
}

void RandomForestBase::warm_start_from(const Estimator& previous) {
  const auto* forest = dynamic_cast<const RandomForestBase*>(&previous);
  GPUML_EXPECT(forest != nullptr && std::string(previous.kind()) == kind(),
               std::string(kind()) + ": warm_start_from needs a " + kind() + ", got a " + previous.kind());
  forest->require_fitted();
  warm_start_source_ = warm_start_of(forest->attributes_, classification_);
}

// The prediction trees from the attribute arrays: the one path for a fitted and a restored model.
void RandomForestBase::rebuild_forest(int threads) {
  const std::lock_guard<std::mutex> lock(staged_mutex_);
  forest_.reset();
  staged_.clear();
  pack_unlocked(threads);
}

// forest_ packed from the attribute arrays (staged_mutex_ held).
void RandomForestBase::pack_unlocked(int threads) const {
  const HostArray& offsets = attributes_.at("estimator_node_offsets_");
  const detail::ForestArrays arrays{offsets.as<const int64_t>(),
                                    offsets.spec().shape[0] - 1,
                                    attributes_.at("nodes_feature_").as<const int32_t>(),
                                    attributes_.at("nodes_threshold_").as<const double>(),
                                    attributes_.at("nodes_children_left_").as<const int32_t>(),
                                    attributes_.at("nodes_children_right_").as<const int32_t>(),
                                    attributes_.at("nodes_value_").as<const double>(),
                                    static_cast<int>(attributes_.at("nodes_value_").spec().shape[1]),
                                    *n_features_in_.as<const int64_t>()};
  forest_ = std::make_shared<const detail::PackedForest>(detail::pack_forest(arrays, threads));
}

std::shared_ptr<const detail::PackedForest> RandomForestBase::packed_forest(int threads) const {
  const std::lock_guard<std::mutex> lock(staged_mutex_);
  if (!forest_) pack_unlocked(threads);
  return forest_;
}

int RandomForestBase::forest_k() const { return static_cast<int>(attributes_.at("nodes_value_").spec().shape[1]); }

int64_t RandomForestBase::n_features_in() const {
  require_fitted();
  return *n_features_in_.as<const int64_t>();
}

int64_t RandomForestBase::n_estimators_fitted() const {
  require_fitted();
  return attributes_.at("estimator_node_offsets_").spec().shape[0] - 1;
}

const HostArray& RandomForestBase::feature_importances() const { return attribute("feature_importances_"); }

ArraySpec RandomForestBase::output_spec(const std::string& method, int64_t n_rows) const {
  const bool proba = classification_ && method == "predict_proba";
  if (method != "predict" && !proba) return Estimator::output_spec(method, n_rows);
  require_fitted();
  GPUML_EXPECT(n_rows >= 0, "n_rows must be >= 0, got " + std::to_string(n_rows));
  if (proba) return ArraySpec{DType::float64, 2, {n_rows, forest_k()}};
  return ArraySpec{DType::float64, 1, {n_rows, 0}};
}

Buffer RandomForestBase::predict_values(Context& ctx, const ArrayView& X) const {
  require_fitted();
  detail::check_matrix_shape(X);
  const int64_t n = X.shape[0], d = n_features_in();
  GPUML_EXPECT(X.shape[1] == d, "X has " + std::to_string(X.shape[1]) + " features, but " +
                                    estimator_name(classification_) + " was fitted with " + std::to_string(d) + " features");
  const DType dtype = detail::float_dtype_for(X.dtype);
  const detail::Staged staged = detail::stage(ctx, X, dtype, "X");
  detail::require_finite(ctx, staged.view, "X");
  Buffer out(ctx, static_cast<std::size_t>(std::max<int64_t>(n * forest_k(), 1)) * sizeof(double));
  detail::with_float_type(dtype, [&](auto tag) {
    using T = decltype(tag);
    auto backend = ctx.is_cuda() ? detail::make_forest_cuda_backend<T>(ctx) : detail::make_forest_cpu_backend<T>(ctx);
    std::shared_ptr<const detail::StagedForest> trees;
    {
      const std::lock_guard<std::mutex> lock(staged_mutex_);
      std::shared_ptr<const detail::StagedForest>& slot = staged_[device_name(ctx.device())];
      if (!slot) {
        if (!forest_) pack_unlocked(ctx.n_threads());
        slot = backend->stage(forest_);
      }
      trees = slot;
    }
    backend->predict(*trees, staged.view.as<const T>(), n, d, out.as<double>());
  });
  return out;
}

Buffer RandomForestBase::predict_values_sparse(Context& ctx, const SparseView& X) const {
  require_fitted();
  const detail::SparseLines rows = detail::sparse_lines(ctx, X, SparseFormat::csr, "X");  // in host memory
  const int64_t n = rows.rows, d = n_features_in();
  GPUML_EXPECT(rows.cols == d, "X has " + std::to_string(rows.cols) + " features, but " + estimator_name(classification_) +
                                   " was fitted with " + std::to_string(d) + " features");
  // Sparse predictions run on the host threads, on a CUDA context too; the values then go to the
  // context's memory (the device there), where the writers read them.
  const int k = forest_k();
  std::vector<double> values(static_cast<std::size_t>(n * k));
  detail::forest_predict_sparse(*packed_forest(ctx.n_threads()), rows, values.data(), ctx.n_threads());
  return detail::upload(ctx, values.data(), n * k);
}

void RandomForestBase::write_predictions(Context& ctx, const Buffer& values, int64_t n, const ArrayView& out) const {
  detail::write_output(ctx, make_view(values.data(), DType::float64, ctx.device(), n), out, "predictions");
}

void RandomForestBase::predict(Context& ctx, const ArrayView& X, const ArrayView& out) const {
  write_predictions(ctx, predict_values(ctx, X), X.shape[0], out);
}

void RandomForestBase::predict_sparse(Context& ctx, const SparseView& X, const ArrayView& out) const {
  write_predictions(ctx, predict_values_sparse(ctx, X), X.rows(), out);
}

std::vector<std::string> RandomForestBase::attribute_names() const {
  std::vector<std::string> names = {"n_features_in_", "feature_importances_"};
  if (classification_) names.insert(names.end(), {"classes_", "n_classes_"});
  if (params_.oob_score)
    names.insert(names.end(), {"oob_score_", classification_ ? "oob_decision_function_" : "oob_prediction_", "oob_missing_"});
  names.insert(names.end(), kTreeAttributes.begin(), kTreeAttributes.end());
  return names;
}

const HostArray& RandomForestBase::attribute(const std::string& name) const {
  const std::vector<std::string> names = attribute_names();
  if (std::find(names.begin(), names.end(), name) == names.end()) {
    std::string known;
    for (const std::string& n : names) known += (known.empty() ? "" : ", ") + n;
    throw_error(ErrorCode::invalid_argument, std::string(kind()) + " has no attribute '" + name + "' (known: " + known + ")");
  }
  require_fitted();
  if (name == "n_features_in_") return n_features_in_;
  return attributes_.at(name);
}

void RandomForestBase::restore(std::map<std::string, HostArray> attributes) {
  const std::string where = std::string(kind()) + " model: ";
  const std::vector<std::string> names = attribute_names();
  for (const auto& entry : attributes)
    GPUML_EXPECT(std::find(names.begin(), names.end(), entry.first) != names.end(),
                 where + "unknown attribute '" + entry.first + "'");
  for (const std::string& name : names)
    GPUML_EXPECT(name == "estimator_seeds_" || name == "oob_missing_" || (attributes.count(name) && !attributes.at(name).empty()),
                 where + "attribute '" + name + "' is missing");
  auto expect_shape = [&](const std::string& name, DType dtype, int ndim, int64_t rows, int64_t cols) {
    const ArraySpec spec = attributes.at(name).spec();
    GPUML_EXPECT(attributes.at(name).dtype() == dtype && spec.ndim == ndim && (ndim == 0 || spec.shape[0] == rows) &&
                     (ndim < 2 || spec.shape[1] == cols),
                 where + name + " has the wrong dtype or shape");
  };
  expect_shape("n_features_in_", DType::int64, 0, 0, 0);
  const int64_t d = *attributes.at("n_features_in_").as<const int64_t>();
  GPUML_EXPECT(d >= 1, where + "n_features_in_ must be >= 1");
  expect_shape("feature_importances_", DType::float64, 1, d, 0);
  int64_t k = 1;
  if (classification_) {
    const HostArray& classes = attributes.at("classes_");
    GPUML_EXPECT(classes.dtype() == DType::float64 && classes.spec().ndim == 1 && classes.spec().shape[0] >= 2,
                 where + "classes_ must be a float64 array of at least 2 labels");
    k = classes.spec().shape[0];
    const double* cls = classes.as<const double>();
    for (int64_t c = 0; c < k; ++c)
      GPUML_EXPECT(std::isfinite(cls[c]) && (c == 0 || cls[c - 1] < cls[c]), where + "classes_ must be finite and increasing");
    expect_shape("n_classes_", DType::int64, 0, 0, 0);
    GPUML_EXPECT(*attributes.at("n_classes_").as<const int64_t>() == k, where + "n_classes_ must equal the size of classes_");
  }
  const HostArray& offsets_array = attributes.at("estimator_node_offsets_");
  GPUML_EXPECT(offsets_array.dtype() == DType::int64 && offsets_array.spec().ndim == 1 && offsets_array.spec().shape[0] >= 2,
               where + "estimator_node_offsets_ must be an int64 array of at least 2 entries");
  const int64_t n_trees = offsets_array.spec().shape[0] - 1;
  const int64_t* offsets = offsets_array.as<const int64_t>();
  const int64_t total = offsets[n_trees];
  GPUML_EXPECT(offsets[0] == 0 && total >= n_trees && total <= (int64_t(1) << 40), where + "bad estimator_node_offsets_");
  for (int64_t t = 0; t < n_trees; ++t)
    GPUML_EXPECT(offsets[t + 1] > offsets[t] && offsets[t + 1] - offsets[t] <= INT32_MAX,
                 where + "estimator_node_offsets_ must increase: every tree has a node");
  expect_shape("nodes_feature_", DType::int32, 1, total, 0);
  expect_shape("nodes_threshold_", DType::float64, 1, total, 0);
  expect_shape("nodes_children_left_", DType::int32, 1, total, 0);
  expect_shape("nodes_children_right_", DType::int32, 1, total, 0);
  expect_shape("nodes_value_", DType::float64, 2, total, k);
  expect_shape("nodes_impurity_", DType::float64, 1, total, 0);
  expect_shape("nodes_n_samples_", DType::int64, 1, total, 0);
  expect_shape("nodes_weighted_n_samples_", DType::float64, 1, total, 0);
  // Every walk must end at a leaf: children point forward within their tree (as grown, and as
  // scikit-learn numbers them), split features exist, values are finite.
  const int32_t* feature = attributes.at("nodes_feature_").as<const int32_t>();
  const int32_t* left = attributes.at("nodes_children_left_").as<const int32_t>();
  const int32_t* right = attributes.at("nodes_children_right_").as<const int32_t>();
  const double* threshold = attributes.at("nodes_threshold_").as<const double>();
  const double* value = attributes.at("nodes_value_").as<const double>();
  std::vector<uint8_t> parents;  // per node of the tree being checked: whether a split points to it
  for (int64_t t = 0; t < n_trees; ++t) {
    const int64_t size = offsets[t + 1] - offsets[t];
    for (int64_t node = 0; node < size; ++node) {
      const int64_t at = offsets[t] + node;
      if (feature[at] == kLeafFeature) {
        GPUML_EXPECT(left[at] == kLeafChild && right[at] == kLeafChild, where + "a leaf has children");
      } else {
        GPUML_EXPECT(feature[at] >= 0 && feature[at] < d, where + "a split feature is out of range");
        GPUML_EXPECT(left[at] > node && left[at] < size && right[at] > node && right[at] < size,
                     where + "children must point forward within their tree");
        GPUML_EXPECT(!std::isnan(threshold[at]), where + "a threshold is NaN");
      }
      for (int64_t c = 0; c < k; ++c) GPUML_EXPECT(std::isfinite(value[at * k + c]), where + "node values must be finite");
    }
    // ...and each tree must be a tree: every node but the root has exactly one parent. With
    // forward children that also makes every node reachable and rules out cycles. Packing copies
    // a node once per path to it, so a node shared by two parents (a chain of them) would cost
    // 2^depth nodes from a few bytes of model.
    parents.assign(static_cast<std::size_t>(size), 0);
    for (int64_t node = 0; node < size; ++node) {
      const int64_t at = offsets[t] + node;
      if (feature[at] == kLeafFeature) continue;
      for (const int32_t child : {left[at], right[at]}) {
        GPUML_EXPECT(parents[child] == 0, where + "node " + std::to_string(child) + " of tree " + std::to_string(t) +
                                              " has two parents: the nodes of a tree must form a tree");
        parents[child] = 1;
      }
    }
    for (int64_t node = 1; node < size; ++node)
      GPUML_EXPECT(parents[node] == 1, where + "node " + std::to_string(node) + " of tree " + std::to_string(t) +
                                           " has no parent: every node of a tree must be reachable from its root");
  }
  if (!attributes.count("estimator_seeds_") || attributes.at("estimator_seeds_").empty()) {
    // A model saved before the seeds were: it was grown at once (there was no warm start) from
    // random_state, the seed the bindings always pass.
    GPUML_EXPECT(params_.random_state.has_value(), where + "attribute 'estimator_seeds_' is missing");
    HostArray seeds(DType::int64, n_trees);
    for (int64_t t = 0; t < n_trees; ++t) seeds.as<int64_t>()[t] = static_cast<int64_t>(detail::tree_seed(*params_.random_state, t));
    attributes["estimator_seeds_"] = std::move(seeds);
  }
  expect_shape("estimator_seeds_", DType::int64, 1, n_trees, 0);
  if (params_.oob_score) {
    expect_shape("oob_score_", DType::float64, 0, 0, 0);
    const std::string oob = classification_ ? "oob_decision_function_" : "oob_prediction_";
    const ArraySpec spec = attributes.at(oob).spec();
    GPUML_EXPECT(attributes.at(oob).dtype() == DType::float64 && spec.ndim == (classification_ ? 2 : 1) &&
                     (!classification_ || spec.shape[1] == k),
                 where + oob + " has the wrong dtype or shape");
    // Models saved before it: unknown, taken as none (it only decides a warning at fit time).
    if (!attributes.count("oob_missing_") || attributes.at("oob_missing_").empty())
      attributes["oob_missing_"] = scalar_of<int64_t>(DType::int64, 0);
    expect_shape("oob_missing_", DType::int64, 0, 0, 0);
    GPUML_EXPECT(*attributes.at("oob_missing_").as<const int64_t>() >= 0, where + "oob_missing_ must be >= 0");
  }
  n_features_in_ = std::move(attributes.at("n_features_in_"));
  attributes.erase("n_features_in_");
  attributes_ = std::move(attributes);
  rebuild_forest(omp_get_max_threads());  // no context here: OpenMP's threads, as a CPU context's default
}

std::string RandomForestBase::get_params_json() const { return params_table(classification_).write(params_).dump(); }

RandomForestClassifier::RandomForestClassifier(RandomForestParams params) : RandomForestBase(std::move(params), true) {}

RandomForestClassifier& RandomForestClassifier::fit(Context& ctx, const ArrayView& X, const ArrayView& y,
                                                    const ArrayView* sample_weight) {
  RandomForestBase::fit(ctx, X, &y, sample_weight);
  return *this;
}

void RandomForestClassifier::predict_proba(Context& ctx, const ArrayView& X, const ArrayView& out) const {
  write_probabilities(ctx, predict_values(ctx, X), X.shape[0], out);
}

void RandomForestClassifier::predict_proba_sparse(Context& ctx, const SparseView& X, const ArrayView& out) const {
  write_probabilities(ctx, predict_values_sparse(ctx, X), X.rows(), out);
}

void RandomForestClassifier::write_probabilities(Context& ctx, const Buffer& proba, int64_t n, const ArrayView& out) const {
  detail::write_output(ctx, make_view(proba.data(), DType::float64, ctx.device(), n, forest_k()), out, "probabilities");
}

void RandomForestClassifier::write_predictions(Context& ctx, const Buffer& proba, int64_t n, const ArrayView& out) const {
  Buffer labels(ctx, static_cast<std::size_t>(std::max<int64_t>(n, 1)) * sizeof(double));
  // The first most probable class (numpy's argmax): the logistic backends' label primitive, on
  // the probabilities as scores.
  auto backend = ctx.is_cuda() ? detail::make_logistic_cuda_backend<double>(ctx) : detail::make_logistic_cpu_backend<double>(ctx);
  backend->predict_labels(proba.as<const double>(), n, forest_k(), classes().as<const double>(), labels.as<double>());
  detail::write_labels(ctx, make_view(labels.data(), DType::float64, ctx.device(), n), classes(), out);
}

const HostArray& RandomForestClassifier::classes() const { return attribute("classes_"); }

RandomForestRegressor::RandomForestRegressor(RandomForestParams params) : RandomForestBase(std::move(params), false) {}

RandomForestRegressor& RandomForestRegressor::fit(Context& ctx, const ArrayView& X, const ArrayView& y,
                                                  const ArrayView* sample_weight) {
  RandomForestBase::fit(ctx, X, &y, sample_weight);
  return *this;
}

namespace detail {

std::unique_ptr<Estimator> random_forest_classifier_from_params(const nlohmann::json& params) {
  return std::make_unique<RandomForestClassifier>(params_table(true).read(params));
}

std::unique_ptr<Estimator> random_forest_regressor_from_params(const nlohmann::json& params) {
  return std::make_unique<RandomForestRegressor>(params_table(false).read(params));
}

nlohmann::json random_forest_classifier_params_schema() { return params_table(true).schema(); }
nlohmann::json random_forest_regressor_params_schema() { return params_table(false).schema(); }

}  // namespace detail

}  // namespace gpuml

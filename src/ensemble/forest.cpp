// The host reference forest (tree_builder.hpp): bootstrap, per-row statistics, trees grown in
// parallel (each from its own seed: the same forest whatever the thread count), predictions. One
// driver (grow_forest) for dense X and sparse X (DenseInput, SparseInput).
#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "core/default_init.hpp"
#include "core/random.hpp"
#include "core/trace.hpp"
#include "ensemble/forest_nodes.hpp"
#include "ensemble/levelwise.hpp"
#include "ensemble/tree_builder.hpp"
#include "gpuml/core/comm.hpp"
#include "gpuml/core/error.hpp"

namespace gpuml::detail {

uint64_t tree_seed(uint64_t seed, int64_t tree) {  // splitmix64 of (seed, tree)
  uint64_t x = seed + 0x9e3779b97f4a7c15ULL * static_cast<uint64_t>(tree + 1);
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

namespace {

// This rank's rows: rows [offset, offset + n) of all ranks' `total` (offset 0, total n in one process).
struct RowShare {
  int64_t offset = 0, n = 0, total = 0;
};

RowShare share_of(Comm& comm, int64_t n) {
  RowShare share{0, n, 0};
  const std::vector<int64_t> counts = comm.allgather(n);
  for (int r = 0; r < comm.size(); ++r) {
    if (r == comm.rank()) share.offset = share.total;
    share.total += counts[r];
  }
  return share;
}

// Running sums of the weights in the order of all rows, for the weighted draws: this rank's
// (continuing the previous ranks' sums, so that every value is the one a single process would
// compute), the sum before its first row, and the total. Empty without weights.
struct Cumulative {
  std::vector<double> sums;
  double before = 0.0, total = 0.0;
};

Cumulative cumulative_weights(const double* sample_weight, int64_t n, Comm& comm) {
  Cumulative c;
  if (!sample_weight) return c;
  c.sums.resize(static_cast<std::size_t>(n));
  double running = 0.0;
  for (int r = 0; r < comm.size(); ++r) {  // one rank after the other: a scan in row order
    if (r == comm.rank()) {
      c.before = running;
      for (int64_t i = 0; i < n; ++i) c.sums[i] = running += sample_weight[i];
    }
    comm.broadcast(&running, 1, r);
  }
  c.total = running;
  return c;
}

// A tree's bootstrap draws: `draws` draws with replacement from the tree's seed, uniform, or in
// proportion to the weights when there are weights (scikit-learn 1.9: the weights then pick the
// rows instead of weighing them); count(row) for each draw of one of this rank's rows (its index
// among them). The draws are of indices of all rows: every rank makes all of them and keeps its
// rows', so a row's count depends on (seed, tree, its index among all rows) only, not on how the
// rows are split.
template <typename Count>
void draw_bootstrap(uint64_t seed, const RowShare& share, const ForestRules& rules, const Cumulative& cumulative, Count&& count) {
  const int64_t n = share.n;
  const int64_t draws = rules.bootstrap_draws > 0 ? rules.bootstrap_draws : share.total;
  Random random(seed);
  if (cumulative.sums.empty()) {
    for (int64_t draw = 0; draw < draws; ++draw) {
      const int64_t row = static_cast<int64_t>(random.below(static_cast<uint64_t>(share.total))) - share.offset;
      if (row >= 0 && row < n) count(row);
    }
  } else {
    const std::vector<double>& sums = cumulative.sums;
    const bool first = share.offset == 0, last = share.offset + n == share.total;
    for (int64_t draw = 0; draw < draws; ++draw) {
      // The first row whose cumulative weight exceeds u: rows of weight 0 are never drawn. It is
      // this rank's when no earlier rank's sum exceeds u; past the total (rounding), the last row.
      const double u = random.uniform() * cumulative.total;
      const auto it = std::upper_bound(sums.begin(), sums.end(), u);
      if (it != sums.end()) {
        if (first || cumulative.before <= u) count(it - sums.begin());
      } else if (last) {
        count(n - 1);
      }
    }
  }
}

// A tree's rows as counts: all ones without bootstrap, else its draws counted.
std::vector<int32_t> bootstrap_counts(uint64_t seed, const RowShare& share, const ForestRules& rules, const Cumulative& cumulative) {
  std::vector<int32_t> counts(static_cast<std::size_t>(share.n), rules.bootstrap ? 0 : 1);
  if (rules.bootstrap) draw_bootstrap(seed, share, rules, cumulative, [&](int64_t row) { ++counts[row]; });
  return counts;
}

// The same counts as bytes into out (share.n of them, zero on entry); false when a row is drawn
// more than 255 times (its byte then stops at 255).
bool bootstrap_bytes(uint64_t seed, const RowShare& share, const ForestRules& rules, const Cumulative& cumulative, uint8_t* out) {
  if (!rules.bootstrap) {
    std::fill(out, out + share.n, uint8_t{1});
    return true;
  }
  bool fits = true;
  draw_bootstrap(seed, share, rules, cumulative, [&](int64_t row) {
    if (out[row] == 255) fits = false;
    else ++out[row];
  });
  return fits;
}

// One tree's prediction for a row: its leaf's class distribution (normalized) or value, added
// into out (k values, or 1).
void add_leaf(const Forest& forest, const Tree& tree, int32_t leaf, double scale, double* out) {
  const double* s = tree.stats.data() + static_cast<int64_t>(leaf) * forest.width;
  if (forest.classification) {
    double total = 0.0;
    for (int c = 0; c < forest.width; ++c) total += s[c];
    for (int c = 0; c < forest.width; ++c) out[c] += scale * s[c] / total;
  } else {
    out[0] += scale * s[1] / s[0];
  }
}

// Adds a tree's normalized sums (its splits' improvements per feature) to the importances; used:
// the trees with a split.
void add_tree_importances(const double* sums, int64_t d, bool has_split, std::vector<double>& importances, int64_t& used) {
  if (!has_split) return;
  double total = 0.0;
  for (int64_t f = 0; f < d; ++f) total += sums[f];
  if (total > 0.0)
    for (int64_t f = 0; f < d; ++f) importances[f] += sums[f] / total;
  ++used;  // scikit-learn averages over every tree with a split, even one of zero improvement
}

void compute_importances(Forest& forest, int64_t d, int threads) {
  forest.feature_importances.assign(static_cast<std::size_t>(d), 0.0);
  int64_t used = 0;
  if (forest.written) {  // the backend's sums per tree, in node order as below
    const int64_t* offsets = forest.written->nodes.offsets.as<const int64_t>();
    const int64_t n_trees = forest.written->nodes.offsets.spec().shape[0] - 1;
    for (int64_t t = 0; t < n_trees; ++t)
      add_tree_importances(forest.written->importance_sums.data() + t * d, d, offsets[t + 1] - offsets[t] > 1,
                           forest.feature_importances, used);
  }
  // Each tree's sums per feature on the threads (a forest at full depth has ~10^7 nodes), a chunk
  // of trees at a time; then added up in tree order, as one thread would.
  const int64_t n_trees = static_cast<int64_t>(forest.trees.size());
  const int64_t chunk = std::max<int64_t>(1, std::min<int64_t>(n_trees, (int64_t(1) << 22) / d));
  std::vector<double> per_tree(static_cast<std::size_t>(chunk * d));
  for (int64_t begin = 0; begin < n_trees; begin += chunk) {
    const int64_t end = std::min(n_trees, begin + chunk);
#pragma omp parallel for num_threads(threads) schedule(dynamic)
    for (int64_t t = begin; t < end; ++t) {
      const Tree& tree = forest.trees[t];
      double* sums = per_tree.data() + (t - begin) * d;
      std::fill(sums, sums + d, 0.0);
      for (int64_t node = 0; node < tree.node_count(); ++node)
        if (tree.feature[node] >= 0) sums[tree.feature[node]] += tree.improvement[node];
    }
    for (int64_t t = begin; t < end; ++t)
      add_tree_importances(per_tree.data() + (t - begin) * d, d, forest.trees[t].node_count() > 1, forest.feature_importances,
                           used);
  }
  double total = 0.0;
  for (double& v : forest.feature_importances) total += (v /= std::max<int64_t>(used, 1));
  if (total > 0.0)
    for (double& v : forest.feature_importances) v /= total;
}

// ccp_alpha: the trees grown by this fit (from `first`; kept trees were pruned when grown).
void prune_grown_trees(Forest& forest, int64_t first, const ForestRules& rules) {
  if (!(rules.tree.ccp_alpha > 0.0)) return;
#pragma omp parallel for num_threads(rules.threads) schedule(dynamic)
  for (int64_t t = first; t < static_cast<int64_t>(forest.trees.size()); ++t)
    prune_tree(forest.trees[t], rules.tree.criterion, forest.width, rules.tree.ccp_alpha);
}

// The out-of-bag predictions of this rank's rows; the score over every rank's rows.
template <typename T, typename Input>
void compute_oob(Forest& forest, const Input& X, const int32_t* labels, const T* y, const ForestRules& rules,
                 const RowShare& share, const Cumulative& cumulative, Comm& comm) {
  const int64_t n = X.n;
  const int k = forest.classification ? forest.width : 1;
  std::vector<double> sums(static_cast<std::size_t>(n * k), 0.0);
  std::vector<int32_t> trees_out(static_cast<std::size_t>(n), 0);
  for (int64_t t = 0; t < static_cast<int64_t>(forest.trees.size()); ++t) {  // trees in order: fixed sums
    const std::vector<int32_t> counts = bootstrap_counts(forest.tree_seeds[t], share, rules, cumulative);
    const Tree& tree = forest.trees[t];
#pragma omp parallel for num_threads(rules.threads) schedule(static)
    for (int64_t i = 0; i < n; ++i) {
      if (counts[i] != 0) continue;
      const int32_t leaf = leaf_of(tree, [&](int64_t f) { return X.value(i, f); });
      add_leaf(forest, tree, leaf, 1.0, sums.data() + i * k);
      ++trees_out[i];
    }
  }
  forest.oob_decision.assign(static_cast<std::size_t>(n * k), 0.0);
  int64_t missing = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (trees_out[i] == 0) {
      ++missing;
      continue;
    }
    for (int c = 0; c < k; ++c) forest.oob_decision[i * k + c] = sums[i * k + c] / trees_out[i];
  }
  comm.allreduce_sum(&missing, 1);
  forest.oob_missing = missing;
  const double total = static_cast<double>(share.total);
  if (forest.classification) {
    int64_t right = 0;
    for (int64_t i = 0; i < n; ++i) {
      const double* p = forest.oob_decision.data() + i * k;
      right += std::max_element(p, p + k) - p == labels[i];
    }
    comm.allreduce_sum(&right, 1);  // an integer: the score of one process
    forest.oob_score = static_cast<double>(right) / total;
  } else {
    // Over several ranks the sums are per rank, then over ranks: a single process's score up to rounding.
    double mean = 0.0;
    for (int64_t i = 0; i < n; ++i) mean += static_cast<double>(y[i]);
    comm.allreduce_sum(&mean, 1);
    mean /= total;
    double ss[2] = {0.0, 0.0};  // residual, total
    for (int64_t i = 0; i < n; ++i) {
      const double v = static_cast<double>(y[i]);
      ss[0] += (v - forest.oob_decision[i]) * (v - forest.oob_decision[i]);
      ss[1] += (v - mean) * (v - mean);
    }
    comm.allreduce_sum(ss, 2);
    forest.oob_score = ss[1] > 0.0 ? 1.0 - ss[0] / ss[1] : 0.0;
  }
}

// The rows the bins' thresholds are found from (find_bins's sample_rows).
constexpr int64_t kBinSampleRows = 200000;

// X as the fit reads it: its bins, its codes (with the bins' value ranges), a row's value of a
// feature (the out-of-bag walks), and how a level-by-level backend gets it (load). Dense:
// row-major n x d.
template <typename T>
struct DenseInput {
  const T* X;
  int64_t n, d;
  FeatureBins bins(const ForestRules& rules, Comm* comm) const {
    return find_bins(X, n, d, rules.max_bins, kBinSampleRows, rules.seed, rules.threads, comm);
  }
  void codes(FeatureBins& bins, uint8_t* codes, int threads) const {
    bin_rows(X, n, d, bins, codes, threads);
    value_ranges(X, n, d, codes, bins, threads);
  }
  double value(int64_t i, int64_t f) const { return static_cast<double>(X[i * d + f]); }
  // The matrix itself: the backend bins it where it grows the trees (the device, or this rank).
  void load(LevelBackend& backend, FeatureBins& bins, const LevelTargets& targets, int) const {
    backend.load(X, n, d, bins, targets);
  }
};

// Sparse: canonical CSC (sparse_lines.hpp); a row's value is found in its feature's column.
struct SparseInput {
  const SparseLines& X;
  int64_t n, d;
  FeatureBins bins(const ForestRules& rules, Comm*) const {
    return find_bins_sparse(X, rules.max_bins, kBinSampleRows, rules.seed, rules.threads);
  }
  void codes(FeatureBins& bins, uint8_t* codes, int threads) const { bin_sparse_columns(X, bins, codes, threads); }
  double value(int64_t i, int64_t f) const { return X.at(f, i); }
  // Binned here from the columns (X is never made dense), the codes sent to the backend.
  void load(LevelBackend& backend, FeatureBins& bins, const LevelTargets& targets, int threads) const {
    std::vector<uint8_t> codes(static_cast<std::size_t>(n * d));
    this->codes(bins, codes.data(), threads);
    backend.load_codes(codes.data(), n, d, bins, targets);
  }
};

}  // namespace

void check_codes_fit(int64_t n, int64_t d) {
  const double cells = static_cast<double>(n) * static_cast<double>(d);
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  const double memory = pages > 0 && page > 0 ? static_cast<double>(pages) * static_cast<double>(page) : 0x1p62;
  if (cells > std::min(memory, 0x1p62))
    throw_error(ErrorCode::out_of_memory,
                "a random forest bins X into n_samples x n_features one-byte codes: " + std::to_string(n) + " x " +
                    std::to_string(d) + " bytes exceed this machine's memory (" +
                    std::to_string(static_cast<int64_t>(memory / 0x1p30)) + " GiB)");
}

namespace {

// The fit, written once for dense and sparse X (DenseInput, SparseInput).
template <typename T, typename Input>
Forest grow_forest(const Input& X, const int32_t* labels, const T* y, const double* sample_weight, const ForestRules& rules) {
  const int64_t n = X.n, d = X.d;
  GPUML_EXPECT(n >= 1 && d >= 1, "a forest needs at least one sample and one feature");
  GPUML_EXPECT(rules.n_estimators >= 1, "n_estimators must be >= 1");
  GPUML_EXPECT((labels != nullptr) != (y != nullptr), "fit_forest: give labels or y");
  Forest forest;
  forest.classification = labels != nullptr;
  forest.width = rules.tree.width;
  GPUML_EXPECT(forest.classification || forest.width == 3, "regression forests carry W, S, Q");
  if (labels)
    GPUML_EXPECT(std::all_of(labels, labels + n, [&](int32_t c) { return c >= 0 && c < rules.tree.width; }),
                 "fit_forest: labels must be class indices in [0, k)");
  GPUML_EXPECT(rules.tree.max_features >= 1 && rules.tree.max_features <= d, "max_features must be in [1, n_features]");
  GPUML_EXPECT(!rules.oob_score || rules.bootstrap, "oob_score needs bootstrap");
  if (sample_weight) {
    GPUML_EXPECT(std::all_of(sample_weight, sample_weight + n, [](double w) { return std::isfinite(w) && w >= 0; }),
                 "sample_weight must be finite and >= 0");
  }
  GPUML_EXPECT(!rules.balanced_subsample || labels, "balanced_subsample is for classification");
  const Context host = Context::cpu();
  Trace trace(rules.device != nullptr ? *rules.device : host, "forest fit");
  // One process is the 1-rank case: the local communicator's collectives are the identity.
  const std::shared_ptr<Comm> local = rules.comm != nullptr ? nullptr : Comm::local();
  Comm& comm = rules.comm != nullptr ? *rules.comm : *local;
  const bool distributed = comm.size() > 1;
  const RowShare share = share_of(comm, n);
  if (sample_weight) {  // over all ranks: a rank may hold rows of weight 0 only
    int64_t positive = std::any_of(sample_weight, sample_weight + n, [](double w) { return w > 0; }) ? 1 : 0;
    comm.allreduce_sum(&positive, 1);
    GPUML_EXPECT(positive > 0, "sample_weight sums to 0 (times the class weights): no row has weight");
  }
  check_codes_fit(n, d);
  forest.bins = X.bins(rules, &comm);
  trace.mark("find_bins");
  forest.n_features = d;
  // warm_start: the kept trees first, then trees [first, n_estimators) grown from this fit's seed.
  const int64_t first = rules.kept != nullptr ? static_cast<int64_t>(rules.kept->trees.size()) : 0;
  if (rules.kept != nullptr) {
    GPUML_EXPECT(rules.kept->tree_seeds.size() == rules.kept->trees.size(), "fit_forest: every kept tree needs its seed");
    GPUML_EXPECT(rules.kept->n_features == d && rules.kept->width == rules.tree.width &&
                     rules.kept->classification == forest.classification,
                 "fit_forest: the kept trees were fitted on other features or targets");
    GPUML_EXPECT(first <= rules.n_estimators, "fit_forest: more trees kept than n_estimators");
  }
  forest.trees.resize(static_cast<std::size_t>(rules.n_estimators));
  forest.tree_seeds.resize(static_cast<std::size_t>(rules.n_estimators));
  for (int64_t t = 0; t < rules.n_estimators; ++t) {
    if (t < first) {
      forest.trees[t] = rules.kept->trees[t];
      forest.tree_seeds[t] = rules.kept->tree_seeds[t];
    } else {
      forest.tree_seeds[t] = tree_seed(rules.seed, t);
    }
  }
  const int64_t grown = rules.n_estimators - first;
  const int width = forest.width;
  const Cumulative cumulative = rules.bootstrap ? cumulative_weights(sample_weight, n, comm) : Cumulative();
  // After the trees grow (level by level or depth first, `grown_by`): pruning, importances, out-of-bag.
  auto finish = [&](const char* grown_by) {
    prune_grown_trees(forest, first, rules);
    trace.mark(grown_by);
    compute_importances(forest, d, rules.threads);
    trace.mark("importances");
    if (rules.oob_score) {
      compute_oob(forest, X, labels, y, rules, share, cumulative, comm);
      trace.mark("out-of-bag");
    }
    return std::move(forest);
  };
  // Regression targets in exact units (tree_builder.hpp): the same sums on every backend, and in
  // any order (over ranks too).
  const int64_t weight_total = rules.bootstrap && rules.bootstrap_draws > 0 ? rules.bootstrap_draws : share.total;
  const QuantizedTargets quantized = y ? quantize_targets(rules.tree.criterion, y, n, weight_total, &comm) : QuantizedTargets{};
  const bool in_scope = levelwise_eligible(rules, sample_weight != nullptr);
  if (distributed && !in_scope)
    throw_error(ErrorCode::unsupported,
                "a random forest fitted over several ranks needs integer row weights and no min_weight_fraction_leaf: "
                "bootstrap=False with sample_weight or class_weight, class_weight=\"balanced_subsample\" and "
                "min_weight_fraction_leaf > 0 are not supported there yet");
  if ((rules.device != nullptr || distributed) && in_scope) {
    // The same trees, grown level by level on the device (or over the ranks): the bootstrap
    // counts (as bytes) and the feature-draw seeds come from the same streams as below.
    // Not zero-filled here: each tree's thread clears and fills its own row (its pages too).
    DefaultInitVector<uint8_t> weights(static_cast<std::size_t>(grown * n));
    std::vector<uint64_t> seeds(static_cast<std::size_t>(grown));
    bool fits = true;
#pragma omp parallel for num_threads(rules.threads) schedule(dynamic) reduction(&& : fits)
    for (int64_t t = 0; t < grown; ++t) {
      const uint64_t seed = forest.tree_seeds[first + t];
      std::memset(weights.data() + t * n, 0, static_cast<std::size_t>(n));
      fits = bootstrap_bytes(seed, share, rules, cumulative, weights.data() + t * n) && fits;
      seeds[t] = tree_seed(seed, 0);
    }
    trace.mark("bootstrap counts");
    int64_t too_many = fits ? 0 : 1;  // every rank's verdict: all grow level by level, or none
    comm.allreduce_sum(&too_many, 1);
    if (distributed && too_many != 0)
      throw_error(ErrorCode::unsupported, "a random forest fitted over several ranks draws some row more than 255 times "
                                          "(a row of very large sample_weight, or a large max_samples): not supported there yet");
    if (too_many == 0) {
      std::unique_ptr<LevelBackend> backend =
          rules.device != nullptr ? make_level_cuda_backend(*rules.device, &comm) : make_level_cpu_backend(&comm, rules.threads);
      LevelTargets targets;
      if (labels) {
        targets.labels = labels;
        targets.k = width;
      } else {
        targets.units = quantized.units.data();
        targets.unit[0] = quantized.unit[0];
        targets.unit[1] = quantized.unit[1];
      }
      X.load(*backend, forest.bins, targets, rules.threads);  // ranges of all ranks
      trace.mark("load (X binned)");
      // The trees in their final forms straight from the backend, when it writes them and nothing
      // after the growth needs the trees themselves (out-of-bag rows, pruning) or keeps some.
      auto written = first == 0 && !distributed && !rules.oob_score && !(rules.tree.ccp_alpha > 0.0)
                         ? std::make_shared<WrittenForest>()
                         : nullptr;
      std::vector<Tree> trees = grown > 0 ? grow_trees_levelwise(*backend, n, d, forest.bins, targets, weights.data(), seeds, rules.tree,
                                                                 rules.threads, distributed ? &comm : nullptr, written.get())
                                         : std::vector<Tree>();
      if (written && written->staged) {
        forest.trees.clear();
        forest.written = std::move(written);
        return finish("trees (levelwise, written by the backend)");
      }
      std::move(trees.begin(), trees.end(), forest.trees.begin() + first);
      return finish("trees (levelwise)");
    }
  }
  std::vector<uint8_t> codes(static_cast<std::size_t>(n * d));
  X.codes(forest.bins, codes.data(), rules.threads);
  trace.mark("bin_rows, value_ranges");
#pragma omp parallel for num_threads(rules.threads) schedule(dynamic)
  for (int64_t t = first; t < rules.n_estimators; ++t) {
    const uint64_t seed = forest.tree_seeds[t];
    const std::vector<int32_t> counts = bootstrap_counts(seed, share, rules, cumulative);
    std::vector<double> subsample_weight;  // per class, balanced_subsample
    if (rules.balanced_subsample) {
      std::vector<int64_t> drawn(static_cast<std::size_t>(width), 0);
      for (int64_t i = 0; i < n; ++i) drawn[labels[i]] += counts[i];
      const int64_t present = std::count_if(drawn.begin(), drawn.end(), [](int64_t c) { return c > 0; });
      int64_t total = 0;
      for (int64_t c : drawn) total += c;
      subsample_weight.assign(static_cast<std::size_t>(width), 0.0);
      for (int c = 0; c < width; ++c)
        if (drawn[c] > 0) subsample_weight[c] = static_cast<double>(total) / (static_cast<double>(present) * drawn[c]);
    }
    std::vector<double> row_stats(static_cast<std::size_t>(n * width), 0.0);
    std::vector<int32_t> rows;
    for (int64_t i = 0; i < n; ++i) {
      // With bootstrap the weights chose the rows; without, they weigh them.
      double w = rules.bootstrap ? counts[i] : (sample_weight ? sample_weight[i] : 1.0);
      if (labels && rules.balanced_subsample) w *= subsample_weight[labels[i]];
      if (!(w > 0.0)) continue;
      rows.push_back(static_cast<int32_t>(i));
      double* s = row_stats.data() + i * width;
      if (labels) {
        s[labels[i]] = w;
      } else {
        s[0] = w;
        s[1] = w * quantized.value(i, 0);
        s[2] = w * quantized.value(i, 1);
      }
    }
    // The feature draws: a second seed from the tree's (the first drew the bootstrap).
    forest.trees[t] = grow_tree(codes.data(), n, d, forest.bins, row_stats.data(), std::move(rows), rules.tree, tree_seed(seed, 0));
  }
  return finish("trees (depth first, host)");
}

}  // namespace

template <typename T>
Forest fit_forest(const T* X, int64_t n, int64_t d, const int32_t* labels, const T* y, const double* sample_weight,
                  const ForestRules& rules) {
  return grow_forest(DenseInput<T>{X, n, d}, labels, y, sample_weight, rules);
}

template <typename T>
Forest fit_forest_sparse(const SparseLines& X, const int32_t* labels, const T* y, const double* sample_weight,
                         const ForestRules& rules) {
  GPUML_EXPECT(X.format == SparseFormat::csc, "fit_forest_sparse: X must be CSC");
  GPUML_EXPECT(rules.comm == nullptr || rules.comm->size() == 1, "fit_forest_sparse: sparse X is fitted by one process");
  return grow_forest(SparseInput{X, X.rows, X.cols}, labels, y, sample_weight, rules);
}

template <typename T>
void forest_predict(const Forest& forest, const T* X, int64_t n, int64_t d, double* out, int threads) {
  GPUML_EXPECT(forest.n_features == d, "X has " + std::to_string(d) + " features, the forest " +
                                         std::to_string(forest.n_features));
  const int k = forest.classification ? forest.width : 1;
  std::fill(out, out + n * k, 0.0);
  const double share = 1.0 / static_cast<double>(forest.trees.size());
  constexpr int64_t kBlockRows = 1024;
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t begin = 0; begin < n; begin += kBlockRows) {
    const int64_t rows = std::min(kBlockRows, n - begin);
    std::vector<int32_t> leaves(static_cast<std::size_t>(rows));
    for (const Tree& tree : forest.trees) {  // trees in order: the same sums on any thread count
      tree_leaves(tree, X + begin * d, rows, d, leaves.data());
      for (int64_t i = 0; i < rows; ++i) add_leaf(forest, tree, leaves[i], share, out + (begin + i) * k);
    }
  }
}

template Forest fit_forest<float>(const float*, int64_t, int64_t, const int32_t*, const float*, const double*,
                                  const ForestRules&);
template Forest fit_forest<double>(const double*, int64_t, int64_t, const int32_t*, const double*, const double*,
                                   const ForestRules&);
template Forest fit_forest_sparse<float>(const SparseLines&, const int32_t*, const float*, const double*, const ForestRules&);
template Forest fit_forest_sparse<double>(const SparseLines&, const int32_t*, const double*, const double*,
                                          const ForestRules&);
template void forest_predict<float>(const Forest&, const float*, int64_t, int64_t, double*, int);
template void forest_predict<double>(const Forest&, const double*, int64_t, int64_t, double*, int);

}  // namespace gpuml::detail

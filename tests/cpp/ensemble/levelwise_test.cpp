// The level-by-level tree builder (src/ensemble/levelwise.hpp) against the depth-first one
// (grow_tree): the same trees, node for node and bit for bit, on random data with constant and
// low-cardinality columns, random bootstrap counts and random rules, classification and
// regression (targets over seven decades, integer or not); X binned by the backend (load) or
// codes binned on the host (load_codes); with the host reference backend here, and with the
// CUDA backend where there is a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "../../../src/core/random.hpp"
#include "../../../src/ensemble/feature_draws.hpp"
#include "../../../src/ensemble/levelwise.hpp"
#include "../../../src/ensemble/tree_assembly.hpp"
#include "test_util.hpp"

namespace gpuml {
namespace {

using test::uniform_int;
using test::uniform_real;

struct Problem {
  int64_t n = 0, d = 0;
  int k = 2;
  std::vector<double> X;
  std::vector<uint8_t> codes;
  std::vector<int32_t> labels;  // classification
  detail::QuantizedTargets targets;  // regression
  detail::FeatureBins bins;
  std::vector<uint8_t> weights;  // trees x n
  std::vector<uint64_t> seeds;
  detail::TreeRules rules;
};

Problem make_problem(std::mt19937_64& rng, detail::Criterion criterion, int64_t min_d, int64_t max_d) {
  Problem p;
  p.n = uniform_int(rng, 200, 3000);
  p.d = uniform_int(rng, min_d, max_d);
  p.k = static_cast<int>(uniform_int(rng, 2, 6));
  std::vector<double> X(static_cast<std::size_t>(p.n * p.d)), y(static_cast<std::size_t>(p.n));
  const bool regression = criterion == detail::Criterion::squared_error || criterion == detail::Criterion::poisson;
  const double regression_scale = std::pow(10.0, uniform_real(rng, -3.0, 4.0));
  const bool integer_targets = uniform_int(rng, 0, 2) == 0;
  p.labels.resize(static_cast<std::size_t>(p.n));
  const int64_t constant = uniform_int(rng, 0, p.d - 1), coarse = uniform_int(rng, 0, p.d - 1);
  for (int64_t i = 0; i < p.n; ++i) {
    for (int64_t j = 0; j < p.d; ++j) {
      double v = uniform_real(rng, -2.0, 2.0);
      if (j == constant) v = 1.5;
      if (j == coarse) v = static_cast<double>(uniform_int(rng, 0, 3));
      X[i * p.d + j] = v;
    }
    // Labels from bands of two features, with 10% noise.
    const double s = X[i * p.d] + 0.5 * X[i * p.d + (p.d > 1 ? 1 : 0)];
    y[i] = regression_scale * (s + (uniform_real(rng, 0, 1) < 0.2 ? uniform_real(rng, -1.0, 1.0) : 0.0));
    if (criterion == detail::Criterion::poisson) y[i] = std::fabs(y[i]);  // counts-like: >= 0, zeros when rounded
    if (integer_targets) y[i] = std::round(y[i]);
    p.labels[i] = uniform_real(rng, 0, 1) < 0.1 ? static_cast<int32_t>(uniform_int(rng, 0, p.k - 1))
                                                : static_cast<int32_t>(std::clamp<int64_t>(static_cast<int64_t>((s + 3.0) / 6.0 * p.k), 0, p.k - 1));
  }
  const int max_bins = uniform_int(rng, 0, 2) == 0 ? static_cast<int>(uniform_int(rng, 4, 64)) : 256;
  p.bins = detail::find_bins(X.data(), p.n, p.d, max_bins, 200000, rng(), 1);
  p.codes.resize(static_cast<std::size_t>(p.n * p.d));
  detail::bin_rows(X.data(), p.n, p.d, p.bins, p.codes.data(), 1);
  detail::value_ranges(X.data(), p.n, p.d, p.codes.data(), p.bins, 1);
  p.X = X;
  const int64_t trees = uniform_int(rng, 1, 4);
  p.weights.resize(static_cast<std::size_t>(trees * p.n));
  for (auto& w : p.weights) w = static_cast<uint8_t>(uniform_int(rng, 0, 3));  // bootstrap-like counts, 0 = out of the tree
  for (int64_t t = 0; t < trees; ++t) p.seeds.push_back(rng());
  p.rules.criterion = criterion;
  p.rules.width = p.k;
  if (regression) {
    p.targets = detail::quantize_targets(criterion, y.data(), p.n, 3 * p.n);  // counts up to 3 per row
    p.rules.width = 3;
  }
  p.rules.max_depth = uniform_int(rng, 0, 2) == 0 ? -1 : uniform_int(rng, 1, 10);
  p.rules.min_samples_leaf = uniform_int(rng, 1, 5);
  p.rules.min_samples_split = uniform_int(rng, 2, 10);
  p.rules.min_impurity_decrease = uniform_int(rng, 0, 3) == 0 ? uniform_real(rng, 0.0, 0.01) : 0.0;
  p.rules.max_features = uniform_int(rng, 1, p.d);
  if (uniform_int(rng, 0, 3) == 0) p.rules.max_leaf_nodes = uniform_int(rng, 2, 60);  // best-first growth
  return p;
}

// The problem's targets as the backends take them.
detail::LevelTargets level_targets(const Problem& p) {
  detail::LevelTargets targets;
  if (p.targets.units.empty()) {
    targets.labels = p.labels.data();
    targets.k = p.k;
  } else {
    targets.units = p.targets.units.data();
    targets.unit[0] = p.targets.unit[0];
    targets.unit[1] = p.targets.unit[1];
  }
  return targets;
}

// grow_tree's trees for the problem: the reference.
std::vector<detail::Tree> depth_first_trees(const Problem& p) {
  std::vector<detail::Tree> trees;
  for (std::size_t t = 0; t < p.seeds.size(); ++t) {
    const int width = p.rules.width;
    std::vector<double> row_stats(static_cast<std::size_t>(p.n * width), 0.0);
    std::vector<int32_t> rows;
    for (int64_t i = 0; i < p.n; ++i) {
      const uint8_t w = p.weights[t * p.n + i];
      if (w == 0) continue;
      rows.push_back(static_cast<int32_t>(i));
      if (p.targets.units.empty()) {
        row_stats[i * width + p.labels[i]] = w;
      } else {  // as fit_forest makes them
        row_stats[i * width] = w;
        row_stats[i * width + 1] = w * p.targets.value(i, 0);
        row_stats[i * width + 2] = w * p.targets.value(i, 1);
      }
    }
    trees.push_back(detail::grow_tree(p.codes.data(), p.n, p.d, p.bins, row_stats.data(), rows, p.rules, p.seeds[t]));
  }
  return trees;
}

void expect_same_trees(const std::vector<detail::Tree>& want, const std::vector<detail::Tree>& got) {
  ASSERT_EQ(want.size(), got.size());
  for (std::size_t t = 0; t < want.size(); ++t) {
    SCOPED_TRACE("tree " + std::to_string(t));
    // Exact: the same splits from the same integer sums and the same formulas.
    EXPECT_EQ(want[t].feature, got[t].feature);
    EXPECT_EQ(want[t].left, got[t].left);
    EXPECT_EQ(want[t].right, got[t].right);
    EXPECT_EQ(want[t].threshold, got[t].threshold);
    EXPECT_EQ(want[t].stats, got[t].stats);
    EXPECT_EQ(want[t].impurity, got[t].impurity);
    EXPECT_EQ(want[t].rows, got[t].rows);
    EXPECT_EQ(want[t].improvement, got[t].improvement);
  }
}

void check(detail::LevelBackend& backend, std::mt19937_64& rng, detail::Criterion criterion, int problems,
           int64_t min_d = 3, int64_t max_d = 24) {
  for (int trial = 0; trial < problems; ++trial) {
    SCOPED_TRACE("problem " + std::to_string(trial));
    const Problem p = make_problem(rng, criterion, min_d, max_d);
    const std::vector<detail::Tree> want = depth_first_trees(p);
    // The backend bins X itself: the same value ranges as value_ranges (exact: min and max). Every
    // other problem it gets the host's codes and ranges instead (load_codes, sparse X's load).
    const bool from_codes = trial % 2 == 1;
    detail::FeatureBins bins = p.bins;
    if (!from_codes) {
      bins.low.clear();
      bins.high.clear();
    }
    const detail::LevelTargets targets = level_targets(p);
    if (from_codes) backend.load_codes(p.codes.data(), p.n, p.d, bins, targets);
    else backend.load(p.X.data(), p.n, p.d, bins, targets);
    EXPECT_EQ(bins.low, p.bins.low);
    EXPECT_EQ(bins.high, p.bins.high);
    // 1 to 3 host threads (the feature draws, the children, the renumbering): grow_tree's trees on any.
    const int threads = 1 + trial % 3;
    const std::vector<detail::Tree> got =
        detail::grow_trees_levelwise(backend, p.n, p.d, bins, targets, p.weights.data(), p.seeds, p.rules, threads);
    expect_same_trees(want, got);
  }
}

TEST(LevelwiseTrees, HostBackendGrowsTheDepthFirstTrees) {
  GPUML_FRESH_RNG(rng);
  auto backend = detail::make_level_cpu_backend();
  check(*backend, rng, detail::Criterion::gini, 12);
  check(*backend, rng, detail::Criterion::entropy, 6);
  check(*backend, rng, detail::Criterion::squared_error, 10);
  check(*backend, rng, detail::Criterion::poisson, 6);
  check(*backend, rng, detail::Criterion::gini, 1, 150, 170);  // wide X (draws past the engine's first twist)
}

// The host backend with grow_trees keeping the levels it assembles (record_levels), so that what
// the levels write can be checked against what the trees make.
class RecordingBackend : public detail::LevelBackend {
 public:
  explicit RecordingBackend(detail::LevelBackend& inner) : inner_(inner) {}
  detail::LevelPrimitives& primitives() override { return inner_.primitives(); }
  void load(const float* X, int64_t n, int64_t d, detail::FeatureBins& bins, const detail::LevelTargets& targets) override {
    inner_.load(X, n, d, bins, targets);
  }
  void load(const double* X, int64_t n, int64_t d, detail::FeatureBins& bins, const detail::LevelTargets& targets) override {
    inner_.load(X, n, d, bins, targets);
  }
  void load_codes(const uint8_t* codes, int64_t n, int64_t d, const detail::FeatureBins& bins,
                  const detail::LevelTargets& targets) override {
    inner_.load_codes(codes, n, d, bins, targets);
  }
  void begin_trees(const detail::TreeSlots& slots) override { inner_.begin_trees(slots); }
  void split_level(const std::vector<detail::LevelNode>& nodes, const detail::LevelRules& rules,
                   std::vector<detail::LevelSplit>& splits, std::vector<double>& left_stats) override {
    inner_.split_level(nodes, rules, splits, left_stats);
  }
  void grow_levels(const std::vector<detail::LevelNode>& roots, const std::vector<double>& root_stats,
                   const detail::LevelRules& rules, const detail::LevelGrowth& growth, const detail::LevelSink& sink) override {
    inner_.grow_levels(roots, root_stats, rules, growth, sink);
  }
  void grow_trees(const std::vector<detail::LevelNode>& roots, const std::vector<double>& root_stats,
                  const detail::LevelRules& rules, const detail::LevelGrowth& growth, const detail::FeatureBins& bins,
                  detail::Tree* trees, const detail::LevelTally& tally, int threads) override {
    recorded = detail::record_levels(inner_, roots, root_stats, rules, growth, tally, threads);
    detail::assemble_trees_on_host(recorded.logs(), rules.criterion, growth.width, bins, trees, threads);
    searched.clear();
    for (const detail::LevelNode& root : roots) searched.push_back(root.tree);
    ++batches;
  }

  detail::HostLevels recorded;
  std::vector<int32_t> searched;  // the trees whose roots were searched
  int batches = 0;

 private:
  detail::LevelBackend& inner_;
};

// The packed forest written level by level (pack_level_node: the CUDA backend's kernel runs it on
// its levels) is the one pack_forest packs from the trees' node arrays, byte for byte, and the
// tables' first nodes are the node arrays' offsets.
TEST(LevelwiseTrees, LevelsPackAsTheTreesPack) {
  GPUML_FRESH_RNG(rng);
  auto cpu = detail::make_level_cpu_backend();
  RecordingBackend backend(*cpu);
  for (detail::Criterion criterion : {detail::Criterion::gini, detail::Criterion::squared_error, detail::Criterion::entropy,
                                      detail::Criterion::poisson}) {
    for (int trial = 0; trial < 3; ++trial) {
      SCOPED_TRACE("criterion " + std::to_string(static_cast<int>(criterion)) + " problem " + std::to_string(trial));
      Problem p = make_problem(rng, criterion, 3, 24);
      p.rules.max_leaf_nodes = -1;  // depth first (best first grows no levels)
      if (trial == 1) std::fill(p.weights.begin() + 1, p.weights.begin() + p.n, uint8_t{0});  // tree 0: one row, a leaf root
      if (trial == 2) p.rules.max_depth = uniform_int(rng, 1, 4);  // shallow: most leaves at the last level
      detail::FeatureBins bins = p.bins;
      const detail::LevelTargets targets = level_targets(p);
      backend.load(p.X.data(), p.n, p.d, bins, targets);
      const int threads = 1 + trial % 3;
      backend.batches = 0;
      const std::vector<detail::Tree> trees =
          detail::grow_trees_levelwise(backend, p.n, p.d, bins, targets, p.weights.data(), p.seeds, p.rules, threads);
      ASSERT_EQ(backend.batches, 1);
      const int64_t n_trees = static_cast<int64_t>(trees.size());
      const bool classification = targets.labels != nullptr;
      const int width = targets.width(), k = classification ? width : 1;

      const detail::ForestNodes nodes = detail::forest_nodes(trees, width, classification, threads);
      const detail::ForestArrays arrays{nodes.offsets.as<const int64_t>(), n_trees, nodes.feature.as<const int32_t>(),
                                        nodes.threshold.as<const double>(), nodes.left.as<const int32_t>(),
                                        nodes.right.as<const int32_t>(), nodes.value.as<const double>(), k, p.d};
      const detail::PackedForest want = detail::pack_forest(arrays, threads);

      const std::vector<detail::LevelLog> logs = backend.recorded.logs();
      const detail::ForestTables tables =
          detail::forest_tables(detail::splits_per_level(logs, n_trees), n_trees, static_cast<int64_t>(logs.size()));
      std::vector<uint8_t> searched(static_cast<std::size_t>(n_trees), 0);
      for (int32_t t : backend.searched) searched[t] = 1;
      std::vector<double> root_stats;
      for (const detail::Tree& tree : trees) root_stats.insert(root_stats.end(), tree.stats.begin(), tree.stats.begin() + width);
      const detail::PackedForest got =
          detail::pack_levels_on_host(logs, tables, searched.data(), root_stats.data(), bins, width, classification, threads);

      EXPECT_EQ(std::vector<int64_t>(tables.first.begin(), tables.first.end()),
                std::vector<int64_t>(arrays.offsets, arrays.offsets + n_trees + 1));
      EXPECT_EQ(got.roots, want.roots);
      EXPECT_EQ(got.k, want.k);
      EXPECT_EQ(got.n_features, want.n_features);
      ASSERT_EQ(got.nodes.size(), want.nodes.size());
      EXPECT_EQ(std::memcmp(got.nodes.data(), want.nodes.data(), got.nodes.size() * sizeof(detail::PackedNode)), 0);
      ASSERT_EQ(got.values.size(), want.values.size());
      EXPECT_EQ(std::memcmp(got.values.data(), want.values.data(), got.values.size() * sizeof(double)), 0);
    }
  }
}

// Each tree's slots are its rows of nonzero weight, ascending, with their weights, one tree after
// another; the same on any thread count (a tree of no in-bag rows and one of all rows included).
TEST(LevelwiseTrees, InBagSlotsListEachTreesRowsOfNonzeroWeight) {
  GPUML_FRESH_RNG(rng);
  const int64_t n = uniform_int(rng, 1, 5000), trees = uniform_int(rng, 2, 9);
  std::vector<uint8_t> weights(static_cast<std::size_t>(trees * n));
  const double empty = uniform_real(rng, 0.1, 0.9);  // share of out-of-bag rows
  for (auto& w : weights) w = uniform_real(rng, 0, 1) < empty ? 0 : static_cast<uint8_t>(uniform_int(rng, 1, 255));
  std::fill_n(weights.begin(), n, uint8_t{0});                   // tree 0: no row
  std::fill_n(weights.begin() + n, n, static_cast<uint8_t>(7));  // tree 1: every row
  const detail::TreeSlots one = detail::in_bag_slots(weights.data(), n, trees, 1);
  ASSERT_EQ(static_cast<int64_t>(one.offset.size()), trees + 1);
  int64_t at = 0;
  for (int64_t t = 0; t < trees; ++t) {
    ASSERT_EQ(one.offset[t], at) << "tree " << t;
    for (int64_t i = 0; i < n; ++i) {
      if (weights[t * n + i] == 0) continue;
      ASSERT_LT(at, one.offset[t + 1]) << "tree " << t;
      EXPECT_EQ(one.rows[at], i) << "tree " << t << " slot " << at;
      EXPECT_EQ(one.weights[at], weights[t * n + i]) << "tree " << t << " slot " << at;
      ++at;
    }
  }
  EXPECT_EQ(one.offset[1], 0);
  EXPECT_EQ(one.offset[2], n);
  EXPECT_EQ(one.size(), at);
  const detail::TreeSlots three = detail::in_bag_slots(weights.data(), n, trees, 3);
  EXPECT_EQ(three.offset, one.offset);
  EXPECT_TRUE(std::equal(three.rows.begin(), three.rows.end(), one.rows.begin(), one.rows.end()));
  EXPECT_TRUE(std::equal(three.weights.begin(), three.weights.end(), one.weights.begin(), one.weights.end()));
}

// feature_orders computes the engine's first outputs without running it (d <= 156): the same
// swaps as Random(seed)'s, on either side of that bound and for any number of seeds (lanes of 8
// and the rest); so does feature_order_direct, one seed at a time (the CUDA builder's).
TEST(LevelwiseTrees, FeatureOrdersAreTheSwapsOfTheSeedsRandomStream) {
  GPUML_FRESH_RNG(rng);
  for (const int64_t d : {1, 2, 3, 5, 31, 32, 100, 155, 156, 157, 312, 400}) {
    for (const int64_t count : {1, 7, 8, 9, 21}) {
      std::vector<uint64_t> seeds(static_cast<std::size_t>(count));
      for (auto& s : seeds) s = rng();
      if (count > 2) seeds[1] = 0;  // an edge seed: the engine's words from 0
      std::vector<int32_t> got(static_cast<std::size_t>(count * d), -1);
      detail::feature_orders(seeds.data(), count, d, got.data());
      for (int64_t c = 0; c < count; ++c) {
        detail::Random random(seeds[c]);
        std::vector<int32_t> want(static_cast<std::size_t>(d));
        for (int64_t i = 0; i < d; ++i) want[i] = static_cast<int32_t>(i);
        for (int64_t i = 0; i < d; ++i) std::swap(want[i], want[i + static_cast<int64_t>(random.below(static_cast<uint64_t>(d - i)))]);
        ASSERT_EQ(want, std::vector<int32_t>(got.begin() + c * d, got.begin() + (c + 1) * d)) << "d " << d << ", seed " << c;
        if (d <= detail::kDirectDraws) {  // the CUDA builder's one-seed form (feature_draws.hpp)
          std::vector<int32_t> one(static_cast<std::size_t>(d), -1);
          std::vector<uint64_t> low(static_cast<std::size_t>(d + 1));
          detail::feature_order_direct(seeds[c], static_cast<int>(d), one.data(), low.data());
          ASSERT_EQ(want, one) << "feature_order_direct, d " << d << ", seed " << c;
        }
      }
    }
  }
}

// gather_rows on a backend loaded with a problem's X and its in-bag slots, for random slot
// ranges of random trees: the codes and statistics appended after what the vectors held.
struct Gathered {
  std::vector<uint8_t> codes;
  std::vector<double> stats;
};
Gathered gather_random_nodes(detail::LevelBackend& backend, const Problem& p, std::mt19937_64& rng,
                             std::vector<detail::LevelNode>& nodes, detail::TreeSlots& slots) {
  const detail::LevelTargets targets = level_targets(p);
  detail::FeatureBins bins = p.bins;
  backend.load(p.X.data(), p.n, p.d, bins, targets);
  const int64_t trees = static_cast<int64_t>(p.seeds.size());
  slots = detail::in_bag_slots(p.weights.data(), p.n, trees, 2);
  backend.begin_trees(slots);
  nodes.clear();
  for (int64_t i = uniform_int(rng, 1, 40); i > 0; --i) {
    const int64_t t = uniform_int(rng, 0, trees - 1), size = slots.offset[t + 1] - slots.offset[t];
    const int64_t begin = uniform_int(rng, 0, size), count = uniform_int(rng, 0, size - begin);
    detail::LevelNode node;
    node.tree = static_cast<int32_t>(t);
    node.rows = static_cast<int32_t>(count);
    node.slot_begin = slots.offset[t] + begin;
    node.slot_count = count;
    nodes.push_back(node);
  }
  Gathered g;
  g.codes.assign(3, 7);  // appended after these
  g.stats.assign(2, -1.0);
  backend.primitives().gather_rows(nodes, g.codes, g.stats);
  return g;
}

TEST(LevelPrimitives, GatherRowsAreTheSlotsCodesAndStatistics) {
  GPUML_FRESH_RNG(rng);
  for (const auto criterion : {detail::Criterion::gini, detail::Criterion::squared_error}) {
    const Problem p = make_problem(rng, criterion, 1, 40);
    auto backend = detail::make_level_cpu_backend();
    std::vector<detail::LevelNode> nodes;
    detail::TreeSlots slots;
    const Gathered got = gather_random_nodes(*backend, p, rng, nodes, slots);
    Gathered want;
    want.codes.assign(3, 7);
    want.stats.assign(2, -1.0);
    const int width = p.rules.width;
    for (const detail::LevelNode& node : nodes)
      for (int64_t s = node.slot_begin; s < node.slot_begin + node.slot_count; ++s) {
        const int32_t row = slots.rows[s];
        const double w = slots.weights[s];
        for (int64_t f = 0; f < p.d; ++f) want.codes.push_back(p.codes[f * p.n + row]);  // bin_rows's codes
        std::vector<double> stats(static_cast<std::size_t>(width), 0.0);
        if (p.targets.units.empty()) {
          stats[p.labels[row]] = w;
        } else {
          stats[0] = w;
          stats[1] = w * p.targets.value(row, 0);
          stats[2] = w * p.targets.value(row, 1);
        }
        want.stats.insert(want.stats.end(), stats.begin(), stats.end());
      }
    EXPECT_EQ(got.codes, want.codes);
    EXPECT_EQ(got.stats, want.stats);
  }
}

// The CUDA primitives gather the host's bytes and bits (the distributed search's small nodes).
TEST(LevelPrimitivesGpu, GatherRowsEqualTheHostBackends) {
  GPUML_CUDA_CONTEXT_OR_SKIP(gpu);
  GPUML_FRESH_RNG(rng);
  for (const auto criterion : {detail::Criterion::gini, detail::Criterion::entropy, detail::Criterion::squared_error,
                               detail::Criterion::poisson}) {
    const Problem p = make_problem(rng, criterion, 1, 160);
    auto host = detail::make_level_cpu_backend();
    auto device = detail::make_level_cuda_backend(gpu);
    std::vector<detail::LevelNode> nodes;
    detail::TreeSlots slots;
    std::mt19937_64 same(rng());
    std::mt19937_64 again = same;
    const Gathered want = gather_random_nodes(*host, p, same, nodes, slots);
    const Gathered got = gather_random_nodes(*device, p, again, nodes, slots);
    EXPECT_EQ(got.codes, want.codes);
    EXPECT_EQ(got.stats, want.stats);
  }
}

// One level of nodes of every size (the warp kernel's up to 32 slots, the wide one's up to 128,
// the block kernel's beyond): the CUDA search finds the host's split at each node, field for field.
TEST(LevelwiseTreesGpu, SplitLevelFindsTheHostSplitsAtEveryNodeSize) {
  GPUML_CUDA_CONTEXT_OR_SKIP(gpu);
  GPUML_FRESH_RNG(rng);
  for (const auto criterion : {detail::Criterion::gini, detail::Criterion::entropy, detail::Criterion::squared_error,
                               detail::Criterion::poisson}) {
    SCOPED_TRACE("criterion " + std::to_string(static_cast<int>(criterion)));
    const Problem p = make_problem(rng, criterion, 3, 40);
    const detail::LevelTargets targets = level_targets(p);
    const detail::TreeSlots slots = detail::in_bag_slots(p.weights.data(), p.n, static_cast<int64_t>(p.seeds.size()), 2);
    // Each tree's slots cut into consecutive nodes of 1 to 300 slots.
    std::vector<detail::LevelNode> nodes;
    for (std::size_t t = 0; t < p.seeds.size(); ++t)
      for (int64_t at = slots.offset[t]; at < slots.offset[t + 1];) {
        const int64_t size = std::min(slots.offset[t + 1] - at, uniform_int(rng, 0, 2) == 0 ? uniform_int(rng, 1, 32)
                                                                                            : uniform_int(rng, 1, 300));
        detail::LevelNode node;
        node.tree = static_cast<int32_t>(t);
        node.rows = static_cast<int32_t>(size);
        node.slot_begin = at;
        node.slot_count = size;
        node.root_weight = uniform_real(rng, 1.0, 3.0) * static_cast<double>(p.n);
        node.seed = rng();
        nodes.push_back(node);
        at += size;
      }
    detail::LevelRules rules;
    rules.criterion = criterion;
    rules.width = p.rules.width;
    rules.max_features = p.rules.max_features;
    rules.min_samples_leaf = p.rules.min_samples_leaf;
    std::vector<detail::LevelSplit> want, got;
    std::vector<double> want_left, got_left;
    auto host = detail::make_level_cpu_backend();
    auto device = detail::make_level_cuda_backend(gpu);
    for (auto* backend : {host.get(), device.get()}) {
      detail::FeatureBins bins = p.bins;
      backend->load_codes(p.codes.data(), p.n, p.d, bins, targets);
      backend->begin_trees(slots);
      backend->split_level(nodes, rules, backend == host.get() ? want : got, backend == host.get() ? want_left : got_left);
    }
    ASSERT_EQ(want.size(), got.size());
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      SCOPED_TRACE("node " + std::to_string(i) + " of " + std::to_string(nodes[i].slot_count) + " slots");
      ASSERT_EQ(want[i].found, got[i].found);
      if (want[i].found == 0) continue;
      EXPECT_EQ(want[i].feature, got[i].feature);
      EXPECT_EQ(want[i].bin, got[i].bin);
      EXPECT_EQ(want[i].next_bin, got[i].next_bin);
      EXPECT_EQ(want[i].improvement, got[i].improvement);
      EXPECT_EQ(want[i].left_rows, got[i].left_rows);
      EXPECT_EQ(want[i].right_rows, got[i].right_rows);
      EXPECT_EQ(want[i].left_slots, got[i].left_slots);
      const int k = rules.width;
      EXPECT_EQ(std::vector<double>(want_left.begin() + i * k, want_left.begin() + (i + 1) * k),
                std::vector<double>(got_left.begin() + i * k, got_left.begin() + (i + 1) * k));
    }
  }
}

TEST(LevelwiseTreesGpu, CudaBackendGrowsTheDepthFirstTrees) {
  GPUML_CUDA_CONTEXT_OR_SKIP(gpu);
  GPUML_FRESH_RNG(rng);
  auto backend = detail::make_level_cuda_backend(gpu);
  check(*backend, rng, detail::Criterion::gini, 16);
  // Entropy and poisson take their logarithms from criteria.hpp (the library's log2 differs
  // between host and device in the last bit: improvements an ulp apart split a near tie differently).
  check(*backend, rng, detail::Criterion::entropy, 10);
  // Regression's sums are exact (quantized targets): the device's atomics give the host's bits.
  check(*backend, rng, detail::Criterion::squared_error, 16);
  check(*backend, rng, detail::Criterion::poisson, 10);
  // Wider X: the device's feature draws for up to 156 features (the kernel's larger form), and
  // past that the host's, sent.
  check(*backend, rng, detail::Criterion::gini, 2, 33, 156);
  check(*backend, rng, detail::Criterion::gini, 1, 157, 170);
}

}  // namespace
}  // namespace gpuml

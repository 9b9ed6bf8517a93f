// The forests' split finder (src/ensemble/split_finder.hpp) against a brute-force search over the
// raw rows: fresh random nodes (weighted rows, features with few levels so that every threshold
// is a bin threshold), gini, entropy and squared error, with min_samples_leaf. The brute force
// computes each candidate's impurities straight from the rows with its own formulas.
//
// The split finder is internal: this file reaches it through the src/ header (exported for it).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <vector>

#include "../../../src/ensemble/split_finder.hpp"
#include "../../../src/ensemble/tree_builder.hpp"
#include "test_util.hpp"

namespace gpuml {
namespace {

using detail::Criterion;
using test::uniform_int;
using test::uniform_real;

struct Node {
  int64_t n, d;
  int k;                          // classes (classification) or 0 (regression)
  std::vector<int> levels;        // n x d feature levels: bin = level
  std::vector<int> bins;          // per feature
  std::vector<int> label;         // classification
  std::vector<double> y, w;
};

Node random_node(std::mt19937_64& rng, bool classification, bool counts = false) {
  Node node;
  node.n = uniform_int(rng, 2, 300);
  node.d = uniform_int(rng, 1, 6);
  node.k = classification ? static_cast<int>(uniform_int(rng, 2, 5)) : 0;
  for (int64_t j = 0; j < node.d; ++j) node.bins.push_back(static_cast<int>(uniform_int(rng, 1, 12)));
  for (int64_t i = 0; i < node.n; ++i) {
    for (int64_t j = 0; j < node.d; ++j) node.levels.push_back(static_cast<int>(uniform_int(rng, 0, node.bins[j] - 1)));
    node.label.push_back(classification ? static_cast<int>(uniform_int(rng, 0, node.k - 1)) : 0);
    // Poisson targets: counts, zeros included.
    node.y.push_back(counts ? static_cast<double>(uniform_int(rng, 0, 4)) : uniform_real(rng, -3.0, 5.0));
    // Integer weights, as bootstrap counts give, or real ones.
    node.w.push_back(uniform_int(rng, 0, 1) ? static_cast<double>(uniform_int(rng, 1, 4)) : uniform_real(rng, 0.1, 2.0));
  }
  return node;
}

detail::NodeHistogram histogram_of(const Node& node, Criterion criterion) {
  detail::NodeHistogram h;
  h.n_features = node.d;
  h.max_bins = *std::max_element(node.bins.begin(), node.bins.end());
  h.width = node.k > 0 ? node.k : 3;
  h.bins = node.bins;
  h.stats.assign(static_cast<std::size_t>(node.d * h.max_bins * h.width), 0.0);
  h.rows.assign(static_cast<std::size_t>(node.d * h.max_bins), 0);
  for (int64_t i = 0; i < node.n; ++i)
    for (int64_t j = 0; j < node.d; ++j) {
      const int64_t cell = j * h.max_bins + node.levels[i * node.d + j];
      ++h.rows[cell];
      double* s = h.stats.data() + cell * h.width;
      if (node.k > 0) {
        s[node.label[i]] += node.w[i];
      } else {
        double r[3];
        detail::regression_row_stats(criterion, node.w[i], node.y[i], r);
        for (int c = 0; c < 3; ++c) s[c] += r[c];
      }
    }
  return h;
}

// The same histogram with only the occupied bins of each feature kept (the compact form that
// nodes with fewer rows than bins use).
detail::NodeHistogram compact_of(const detail::NodeHistogram& dense) {
  detail::NodeHistogram h = dense;
  h.stats.assign(dense.stats.size(), 0.0);
  h.rows.assign(dense.rows.size(), 0);
  h.bin_ids.assign(dense.rows.size(), 0);
  for (int64_t f = 0; f < dense.n_features; ++f) {
    int kept = 0;
    for (int b = 0; b < dense.bins[f]; ++b) {
      const int64_t from = f * dense.max_bins + b;
      if (dense.rows[from] == 0) continue;
      const int64_t to = f * dense.max_bins + kept++;
      h.rows[to] = dense.rows[from];
      h.bin_ids[to] = b;
      for (int j = 0; j < dense.width; ++j) h.stats[to * dense.width + j] = dense.stats[from * dense.width + j];
    }
    h.bins[f] = kept;
  }
  return h;
}

// Impurity of a set of rows, from the rows.
double impurity_of(const Node& node, const std::vector<int64_t>& rows, Criterion criterion, double& weight) {
  weight = 0.0;
  for (int64_t i : rows) weight += node.w[i];
  if (criterion == Criterion::poisson) {  // Σ w y log(y / mean) / W over the rows
    double sum = 0.0;
    for (int64_t i : rows) sum += node.w[i] * node.y[i];
    if (sum <= detail::kPoissonEpsilon) return INFINITY;
    const double mean = sum / weight;
    double v = 0.0;
    for (int64_t i : rows) v += node.y[i] > 0 ? node.w[i] * node.y[i] * std::log(node.y[i] / mean) : 0.0;
    return v / weight;
  }
  if (criterion == Criterion::squared_error) {
    double mean = 0.0;
    for (int64_t i : rows) mean += node.w[i] * node.y[i];
    mean /= weight;
    double v = 0.0;
    for (int64_t i : rows) v += node.w[i] * (node.y[i] - mean) * (node.y[i] - mean);
    return v / weight;
  }
  std::map<int, double> per_class;
  for (int64_t i : rows) per_class[node.label[i]] += node.w[i];
  double impurity = criterion == Criterion::gini ? 1.0 : 0.0;
  for (const auto& [c, wc] : per_class) {
    const double p = wc / weight;
    impurity += criterion == Criterion::gini ? -p * p : -p * std::log(p) / std::log(2.0);
  }
  return impurity;
}

TEST(SplitFinder, MatchesABruteForceSearch) {
  GPUML_FRESH_RNG(rng);
  for (int rep = 0; rep < 300; ++rep) {
    const Criterion criterion =
        std::vector<Criterion>{Criterion::gini, Criterion::entropy, Criterion::squared_error, Criterion::poisson}[rep % 4];
    const bool regression = criterion == Criterion::squared_error || criterion == Criterion::poisson;
    const Node node = random_node(rng, !regression, criterion == Criterion::poisson);
    detail::SplitRules rules;
    rules.criterion = criterion;
    rules.min_samples_leaf = uniform_int(rng, 1, 5);
    rules.root_weight = uniform_real(rng, 1.0, 3.0) * 1000.0;
    std::vector<bool> constant;
    const detail::Split got = detail::best_split(histogram_of(node, criterion), rules, &constant);
    // The compact form finds the same split, to the bit (the same sums, bins renumbered).
    const detail::Split compact = detail::best_split(compact_of(histogram_of(node, criterion)), rules);
    ASSERT_EQ(compact.found, got.found);
    if (got.found) {
      EXPECT_EQ(compact.feature, got.feature);
      EXPECT_EQ(compact.bin, got.bin);
      EXPECT_EQ(compact.improvement, got.improvement);
    }

    std::vector<int64_t> all(node.n);
    for (int64_t i = 0; i < node.n; ++i) all[i] = i;
    double node_weight = 0.0;
    const double node_imp = impurity_of(node, all, criterion, node_weight);
    bool found = false;
    double best = 0.0;
    for (int64_t j = 0; j < node.d; ++j) {
      std::vector<int> present;
      for (int64_t i = 0; i < node.n; ++i) present.push_back(node.levels[i * node.d + j]);
      std::sort(present.begin(), present.end());
      present.erase(std::unique(present.begin(), present.end()), present.end());
      EXPECT_EQ(constant[j], present.size() <= 1) << "feature " << j;
      for (std::size_t t = 0; t + 1 < present.size(); ++t) {  // thresholds between levels present
        std::vector<int64_t> left, right;
        for (int64_t i = 0; i < node.n; ++i) (node.levels[i * node.d + j] <= present[t] ? left : right).push_back(i);
        if (static_cast<int64_t>(left.size()) < rules.min_samples_leaf || static_cast<int64_t>(right.size()) < rules.min_samples_leaf)
          continue;
        double wl = 0.0, wr = 0.0;
        const double il = impurity_of(node, left, criterion, wl), ir = impurity_of(node, right, criterion, wr);
        if (std::isinf(il) || std::isinf(ir)) continue;  // Poisson: a child without positive targets
        const double improvement = node_weight / rules.root_weight * (node_imp - wl / node_weight * il - wr / node_weight * ir);
        if (!found || improvement > best) best = improvement;
        found = true;
      }
    }
    SCOPED_TRACE("rep " + std::to_string(rep));
    ASSERT_EQ(got.found, found);
    if (!found) continue;
    // Same maximum (the formulas differ in rounding: sums of stats vs sums over rows); 1e-13
    // absolute for pure nodes, where both are 0 up to rounding of targets |y| <= 5.
    EXPECT_NEAR(got.improvement, best, 1e-9 * (std::abs(best) + node_imp) + 1e-13);
    EXPECT_NEAR(got.impurity, node_imp, 1e-12 * (1.0 + node_imp));  // finite: a split was found
    EXPECT_GE(got.left_rows, rules.min_samples_leaf);
    EXPECT_GE(got.right_rows, rules.min_samples_leaf);
    EXPECT_EQ(got.left_rows + got.right_rows, node.n);
    // The chosen threshold's rows really are its left side.
    int64_t left_rows = 0;
    for (int64_t i = 0; i < node.n; ++i) left_rows += node.levels[i * node.d + got.feature] <= got.bin;
    EXPECT_EQ(left_rows, got.left_rows);
  }
}

TEST(SplitFinder, PureOrTinyNodesDoNotSplit) {
  detail::NodeHistogram h;
  h.n_features = 1;
  h.max_bins = 2;
  h.width = 2;
  h.bins = {2};
  h.stats = {3.0, 0.0, 0.0, 0.0};  // every row in bin 0: constant feature
  h.rows = {3, 0};
  std::vector<bool> constant;
  EXPECT_FALSE(detail::best_split(h, {}, &constant).found);
  EXPECT_TRUE(constant[0]);
  h.stats = {1.0, 0.0, 0.0, 1.0};  // two rows, one per bin; min_samples_leaf 2 forbids the split
  h.rows = {1, 1};
  detail::SplitRules rules;
  rules.min_samples_leaf = 2;
  EXPECT_FALSE(detail::best_split(h, rules, &constant).found);
  rules.min_samples_leaf = 1;
  const detail::Split s = detail::best_split(h, rules);
  ASSERT_TRUE(s.found);
  EXPECT_DOUBLE_EQ(s.impurity, 0.5);  // gini of (1, 1)
  EXPECT_DOUBLE_EQ(s.left_impurity, 0.0);
  EXPECT_DOUBLE_EQ(s.right_impurity, 0.0);
}

// The criteria's own logarithms (shared by the host and the CUDA kernels, so that the scores
// agree to the bit) against the C library's, over the whole positive range and the
// probabilities entropy sees.
TEST(SplitCriteria, PortableLogarithmsAreAccurate) {
  GPUML_FRESH_RNG(rng);
  double worst2 = 0.0, worst = 0.0;
  for (int i = 0; i < 200000; ++i) {
    const double x = i % 2 ? uniform_real(rng, 1e-9, 1.0) : std::pow(10.0, uniform_real(rng, -300.0, 300.0));
    const double want2 = std::log2(x), want = std::log(x);
    // Relative to the result, or to 1 near x = 1 where the result passes through 0.
    worst2 = std::max(worst2, std::fabs(detail::portable_log2(x) - want2) / std::max(std::fabs(want2), 1.0));
    worst = std::max(worst, std::fabs(detail::portable_log(x) - want) / std::max(std::fabs(want), 1.0));
  }
  EXPECT_LT(worst2, 8 * 2.220446049250313e-16);  // a few ulps
  EXPECT_LT(worst, 8 * 2.220446049250313e-16);
  EXPECT_EQ(detail::portable_log2(1.0), 0.0);
  EXPECT_EQ(detail::portable_log2(0.5), -1.0);
  EXPECT_EQ(detail::portable_log(1.0), 0.0);
}

// Quantized regression targets: within the stated rounding of y, and every weighted sum of
// them exact, so two different orders of adding give the same bits.
TEST(SplitCriteria, QuantizedTargetsSumExactlyInAnyOrder) {
  GPUML_FRESH_RNG(rng);
  for (int trial = 0; trial < 20; ++trial) {
    const int64_t n = uniform_int(rng, 1, 5000);
    const double scale = std::pow(10.0, uniform_real(rng, -5.0, 8.0));
    std::vector<double> y(static_cast<std::size_t>(n));
    for (double& v : y) v = scale * uniform_real(rng, -1.0, 1.0);
    const int64_t total = 255 * n;  // counts up to 255 per row
    const detail::QuantizedTargets q = detail::quantize_targets(Criterion::squared_error, y.data(), n, total);
    double largest = 0.0;
    for (double v : y) largest = std::max(largest, std::fabs(v));
    for (int64_t i = 0; i < n; ++i) {
      // Rounded by at most half a unit, and a unit is at most 2^-(52 - log2 total) of the largest |y|
      // (times 4: the largest and the total rounded up to powers of two).
      EXPECT_LE(std::fabs(q.value(i, 0) - y[i]), 0.5 * q.unit[0]);
      EXPECT_LE(q.unit[0], largest * std::ldexp(static_cast<double>(total), -50));
    }
    std::vector<int> w(static_cast<std::size_t>(n));
    for (int& c : w) c = static_cast<int>(uniform_int(rng, 0, 255));
    double forward = 0.0, backward = 0.0, forward_sq = 0.0, backward_sq = 0.0;
    for (int64_t i = 0; i < n; ++i) {
      forward += w[i] * q.value(i, 0);
      forward_sq += w[i] * q.value(i, 1);
    }
    for (int64_t i = n - 1; i >= 0; --i) {
      backward += w[i] * q.value(i, 0);
      backward_sq += w[i] * q.value(i, 1);
    }
    EXPECT_EQ(forward, backward);
    EXPECT_EQ(forward_sq, backward_sq);
  }
}

}  // namespace
}  // namespace gpuml

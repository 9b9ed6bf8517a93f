#include "ensemble/split_finder.hpp"

#include <algorithm>
#include <string>

#include "gpuml/core/error.hpp"

namespace gpuml::detail {

double node_impurity(Criterion criterion, const double* stats, int width) {
  const bool regression = criterion == Criterion::squared_error || criterion == Criterion::poisson;
  GPUML_EXPECT(!regression || width == 3, "regression criteria need W, S, Q statistics");
  return stats_impurity(criterion, stats, width);
}

int append_compact_feature(NodeHistogram& h, const uint8_t* codes, const double* stats, int64_t count) {
  const int width = h.width;
  const std::size_t stride = static_cast<std::size_t>(h.max_bins), at = static_cast<std::size_t>(h.n_features) * stride;
  h.stats.resize(at * width + stride * width, 0.0);
  h.rows.resize(at + stride, 0);
  h.bin_ids.resize(at + stride, 0);
  double* cells = h.stats.data() + at * width;
  int64_t* rows = h.rows.data() + at;
  int* ids = h.bin_ids.data() + at;
  uint64_t seen[4] = {0, 0, 0, 0};
  for (int64_t k = 0; k < count; ++k) seen[codes[k] >> 6] |= uint64_t{1} << (codes[k] & 63);
  int compact_of[256];  // a code's index among the occupied bins (only occupied codes are read)
  int occupied = 0;
  for (int word = 0; word < 4; ++word)
    for (uint64_t bits = seen[word]; bits != 0; bits &= bits - 1) {
      const int code = word * 64 + __builtin_ctzll(bits);
      compact_of[code] = occupied;
      ids[occupied++] = code;
    }
  for (int64_t k = 0; k < count; ++k) {
    const int cell = compact_of[codes[k]];
    ++rows[cell];
    const double* s = stats + k * width;
    for (int j = 0; j < width; ++j) cells[cell * width + j] += s[j];
  }
  h.bins.push_back(occupied);
  ++h.n_features;
  return occupied;
}

namespace {

double weight_of(Criterion criterion, const double* stats, int width) { return stats_weight(criterion, stats, width); }

}  // namespace

Split best_split(const NodeHistogram& h, const SplitRules& rules, std::vector<bool>* constant) {
  Split best;
  if (constant) constant->assign(static_cast<std::size_t>(h.n_features), true);
  if (h.n_features == 0) return best;
  const int width = h.width;
  // The node's totals, from the first feature's bins (every feature holds the same rows).
  std::vector<double> node(static_cast<std::size_t>(width), 0.0);
  int64_t node_rows = 0;
  for (int b = 0; b < h.bins[0]; ++b) {
    for (int j = 0; j < width; ++j) node[j] += h.stats[static_cast<std::size_t>(b) * width + j];
    node_rows += h.rows[b];
  }
  const double node_weight = weight_of(rules.criterion, node.data(), width);
  best.impurity = node_impurity(rules.criterion, node.data(), width);
  if (!(node_weight > 0.0)) return best;

  std::vector<double> left(static_cast<std::size_t>(width)), right(static_cast<std::size_t>(width)), right_target;
  double best_proxy = 0.0;
  for (int64_t f = 0; f < h.n_features; ++f) {
    const double* stats = h.stats.data() + static_cast<std::size_t>(f) * h.max_bins * width;
    const int64_t* rows = h.rows.data() + static_cast<std::size_t>(f) * h.max_bins;
    int occupied = 0;
    for (int b = 0; b < h.bins[f]; ++b) occupied += rows[b] > 0;
    if (occupied <= 1) continue;  // constant in this node
    if (constant) (*constant)[f] = false;
    std::fill(left.begin(), left.end(), 0.0);
    int64_t left_rows = 0;
    // Poisson: Σ w y of the bins above each threshold, summed from the top, so that a right side
    // of zero targets sums to exactly 0 (node − left leaves rounding residue above EPSILON).
    if (rules.criterion == Criterion::poisson) {
      right_target.assign(static_cast<std::size_t>(h.bins[f]), 0.0);
      for (int b = h.bins[f] - 2; b >= 0; --b) right_target[b] = right_target[b + 1] + stats[static_cast<std::size_t>(b + 1) * width + 1];
    }
    for (int b = 0; b + 1 < h.bins[f]; ++b) {
      for (int j = 0; j < width; ++j) left[j] += stats[static_cast<std::size_t>(b) * width + j];
      left_rows += rows[b];
      // The same partition as the previous threshold (an empty bin): that one was scored.
      if (rows[b] == 0) continue;
      const int64_t right_rows = node_rows - left_rows;
      if (left_rows < rules.min_samples_leaf || right_rows < rules.min_samples_leaf) continue;
      if (right_rows == 0) break;
      for (int j = 0; j < width; ++j) right[j] = node[j] - left[j];
      const double left_weight = weight_of(rules.criterion, left.data(), width);
      const double right_weight = weight_of(rules.criterion, right.data(), width);
      if (left_weight < rules.min_weight_leaf || right_weight < rules.min_weight_leaf) continue;
      if (!(left_weight > 0.0) || !(right_weight > 0.0)) continue;
      // Poisson: both children need Σ w y above EPSILON (scikit-learn refuses the split).
      if (rules.criterion == Criterion::poisson && (left[1] <= kPoissonEpsilon || right_target[b] <= kPoissonEpsilon)) continue;
      // Ranked by scikit-learn's proxy (criteria.hpp); the winner's improvement is scored below.
      const double proxy = split_proxy(rules.criterion, left.data(), right.data(), width, left_weight, right_weight);
      if (!best.found || proxy > best_proxy) {
        // The same rows go left for any cut from bin b up to the next occupied bin: the tree
        // cuts halfway between the two bins' values (tree_builder.cpp), as scikit-learn cuts
        // halfway between a node's neighbouring values.
        int next = b + 1;
        while (rows[next] == 0) ++next;  // exists: right_rows > 0
        const int* ids = h.bin_ids.empty() ? nullptr : h.bin_ids.data() + static_cast<std::size_t>(f) * h.max_bins;
        best.found = true;
        best_proxy = proxy;
        best.feature = f;
        best.bin = ids ? ids[b] : b;
        best.next_bin = ids ? ids[next] : next;
        best.left_rows = left_rows;
        best.right_rows = right_rows;
        best.left_stats = left;
        best.right_stats = right;
      }
    }
  }
  if (best.found) {
    best.left_impurity = stats_impurity(rules.criterion, best.left_stats.data(), width);
    best.right_impurity = stats_impurity(rules.criterion, best.right_stats.data(), width);
    best.improvement = split_improvement(rules.criterion, rules.root_weight, node_weight, best.impurity,
                                         best.left_stats.data(), best.right_stats.data(), width);
  }
  return best;
}

}  // namespace gpuml::detail

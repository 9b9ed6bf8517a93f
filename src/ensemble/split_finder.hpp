#pragma once
// The best split of one tree node from its histograms (the host version: the CPU backend's, and
// the reference for the CUDA kernels; docs/random_forest.md has the plan). Candidates are the bin
// thresholds of each drawn feature: "bins <= b go left". Scores follow scikit-learn's trees
// (criteria.hpp): the largest split_proxy (scikit-learn's ranking of a node's candidates) wins,
// ties go to the first candidate (features in the order given, then thresholds ascending); the
// winner's impurity improvement is then computed.
#include <cstdint>
#include <vector>

#include "criteria.hpp"
#include "gpuml/core/export.hpp"

namespace gpuml::detail {

// A node's histograms over its drawn features. Feature i of the list has bins[i] bins; entry
// (i, b) has stats[(i * max_bins + b) * width + j] (j < width: the k class weights, or W, S, Q for
// regression) and rows[i * max_bins + b], the number of rows (not weights) in that bin.
struct NodeHistogram {
  int64_t n_features = 0;
  int max_bins = 0;
  int width = 0;
  std::vector<int> bins;
  std::vector<double> stats;
  std::vector<int64_t> rows;
  // Empty, or compact histograms: entry (i, b) is bin bin_ids[i * max_bins + b] of feature i
  // (ascending; a node with fewer rows than bins keeps only its occupied ones).
  std::vector<int> bin_ids;
};

struct SplitRules {
  Criterion criterion = Criterion::gini;
  int64_t min_samples_leaf = 1;  // rows on each side
  double min_weight_leaf = 0.0;  // weight on each side
  double root_weight = 1.0;      // W of the tree's root, for impurity_improvement
};

struct Split {
  bool found = false;
  int64_t feature = -1;      // index into the node's feature list
  int bin = -1;              // the last occupied bin on the left: bins <= bin go left
  int next_bin = -1;         // the first occupied bin on the right (the cut lies between the two)
  double improvement = 0.0;  // impurity_improvement (criteria.hpp)
  double impurity = 0.0;     // the node's
  double left_impurity = 0.0, right_impurity = 0.0;
  int64_t left_rows = 0, right_rows = 0;
  std::vector<double> left_stats, right_stats;  // width values each
};

// The node's best split under the rules, or found = false. constant (optional, n_features) marks
// the features whose rows all fall in one bin (scikit-learn draws more features past those).
GPUML_API Split best_split(const NodeHistogram& h, const SplitRules& rules, std::vector<bool>* constant = nullptr);

// Appends one feature's compact histogram to h, whose max_bins (the stride) is at least count:
// the occupied codes of a node's rows, ascending, are its bins (bin_ids), and each row's
// statistics go into its code's cell in row order, so the sums are those of the rows sorted by
// (code, position). codes: the node's rows' codes of the feature (count of them); stats: their
// statistics (count x h.width). Returns the number of occupied bins.
int append_compact_feature(NodeHistogram& h, const uint8_t* codes, const double* stats, int64_t count);

// The impurity of a node's statistics (width values) under the criterion.
GPUML_API double node_impurity(Criterion criterion, const double* stats, int width);

}  // namespace gpuml::detail

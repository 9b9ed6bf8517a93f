#pragma once
// One histogram tree on binned rows, and a forest of them: the host reference of the random
// forests (docs/random_forest.md), in scikit-learn's semantics. It is the CPU backend's core and
// the reference the CUDA primitives will be checked against; the public estimators come next.
#include <cstdint>
#include <memory>
#include <vector>

#include "binning.hpp"
#include "criteria.hpp"
#include "level_growth.hpp"
#include "gpuml/core/export.hpp"

namespace gpuml {
class Comm;
class Context;
}

namespace gpuml::detail {

struct TreeRules {
  Criterion criterion = Criterion::gini;
  int width = 2;                  // statistics per row: k class weights, or W, S, Q (regression)
  int64_t max_depth = -1;         // < 0: none
  int64_t min_samples_split = 2;  // rows
  int64_t min_samples_leaf = 1;   // rows
  double min_weight_fraction_leaf = 0.0;  // each child's share of the tree's total (root) weight, at least
  double min_impurity_decrease = 0.0;
  int64_t max_features = 1;       // features drawn per node (more when the drawn ones are constant)
  int64_t max_leaf_nodes = -1;    // < 0: none (depth-first growth); else best-first growth to that many leaves
  double ccp_alpha = 0.0;         // > 0: each grown tree is pruned (prune_tree)
};

// Flat node arrays; node 0 is the root. A leaf has feature −1.
struct Tree {
  std::vector<int32_t> feature, left, right;
  std::vector<double> threshold;    // x <= threshold goes left: halfway between the values of the split's bin and the next occupied bin
  std::vector<double> stats;        // nodes x width: the node's summed row statistics
  std::vector<double> impurity;
  std::vector<int64_t> rows;        // n_node_samples
  std::vector<double> improvement;  // impurity_improvement of each split (0 at leaves)
  int64_t node_count() const { return static_cast<int64_t>(feature.size()); }
};

// Grows a tree over `rows` (the in-bag row ids, each with nonzero weight) of the feature-major
// codes (d x n) from the rows' statistics row_stats (n x width: w times the one-hot label, or
// w, w y, w y²). Feature draws come from `seed` and each node's position, not from the order in
// which nodes are grown.
GPUML_API Tree grow_tree(const uint8_t* codes, int64_t n, int64_t d, const FeatureBins& bins, const double* row_stats,
                         std::vector<int32_t> rows, const TreeRules& rules, uint64_t seed);

// The pieces of grow_tree that the level-by-level builder (levelwise.cpp) shares with it:
// whether a node stays a leaf before any search (level_growth.hpp's rule; child_seed is there
// too); appending a node; making a node a split (the threshold halfway
// between the values of bin and next_bin, as scikit-learn cuts between neighbouring values).
bool stays_leaf(const TreeRules& rules, int64_t depth, int64_t rows, double impurity);
int32_t new_node(Tree& tree, int width, const double* stats, double impurity, int64_t rows);
// Room for the most nodes a tree of `rows` in-bag rows can grow under `rules` (2 rows - 1, fewer
// with max_depth or max_leaf_nodes): its arrays then never move while it grows. Only the pages of
// the nodes made are touched; where the address space is short (std::bad_alloc), the arrays grow
// as they go.
void reserve_nodes(Tree& tree, const TreeRules& rules, int64_t rows);
void set_split(Tree& tree, const FeatureBins& bins, int32_t node, int64_t feature, int bin, int next_bin, double improvement,
               int32_t left, int32_t right);

// The feature draw orders of `count` nodes from their seeds (orders: count x d): each row is the
// order in which grow_tree's node draws the features, its swaps from Random(seed), all d of them
// (the first i entries are the first i features drawn). For d <= 156 the draws come from the
// engine's first d outputs computed directly (they read the seeded state's words 0..d and
// 156..155 + d only), several seeds at once: seeding all 312 words and the first twist, as
// constructing the engine and drawing once does, cost ~10x more. (GPUML_API: for the tests.)
GPUML_API void feature_orders(const uint64_t* seeds, int64_t count, int64_t d, int32_t* orders);

// scikit-learn's minimal cost-complexity pruning of a grown tree: while the weakest link (the
// split whose subtree lowers the weighted impurity least per leaf it adds, R(t) - R(T_t) over
// |T_t| - 1, with R weighted by the node's share of the root's weight) costs at most ccp_alpha,
// its subtree becomes a leaf. The kept nodes keep their order (parents before children).
void prune_tree(Tree& tree, Criterion criterion, int width, double ccp_alpha);

// Regression targets rounded to integer multiples of a power of two per column (S: y; Q: y², or
// y log y for poisson), small enough that every sum of weight x target over a tree's rows is an
// integer below 2^53 units when the weights are integers summing to at most weight_total: such
// sums are exact doubles, so they come out the same in any order (the CUDA builder's atomics and
// the host's loops agree bit for bit). The rounding moves a target by at most 2^-(52 - log2
// weight_total) of the column's largest magnitude (about 1e-10 at a million rows); integer and
// short binary fractions stay exact. With a communicator (collective), y is this rank's share of
// the rows and the units are those of all ranks' rows (weight_total then counts all of them).
// A y whose y² (or y log y) overflows is an invalid_argument error on every rank.
struct QuantizedTargets {
  std::vector<int64_t> units;  // n x 2
  double unit[2] = {1.0, 1.0};
  double value(int64_t row, int column) const { return static_cast<double>(units[row * 2 + column]) * unit[column]; }
};
template <typename T>
GPUML_API QuantizedTargets quantize_targets(Criterion criterion, const T* y, int64_t n, int64_t weight_total,
                                            Comm* comm = nullptr);

// The leaf a row reaches in `tree`; value(f) is the row's value of feature f as a double (dense
// and sparse rows walk alike).
template <typename Value>
int32_t leaf_of(const Tree& tree, Value&& value) {
  int32_t node = 0;
  while (tree.feature[node] >= 0) node = value(tree.feature[node]) <= tree.threshold[node] ? tree.left[node] : tree.right[node];
  return node;
}

// The leaf of each of X's rows (n x d, row-major) in `tree`.
template <typename T>
GPUML_API void tree_leaves(const Tree& tree, const T* X, int64_t n, int64_t d, int32_t* leaves);

}  // namespace gpuml::detail

namespace gpuml::detail {

struct Forest;

// The seed of tree `tree` of a forest grown from `seed`: its bootstrap draws come from it (and
// its feature draws from tree_seed(it, 0)).
uint64_t tree_seed(uint64_t seed, int64_t tree);

// A forest of such trees with scikit-learn 1.9's bootstrap: per tree, n (or bootstrap_draws)
// draws with replacement from a seed derived from `seed` and the tree's index, uniform, or in
// proportion to the sample weights when there are some; the tree weighs each row by its count.
// Without bootstrap, every row is in every tree with its sample weight.
struct ForestRules {
  TreeRules tree;
  int64_t n_estimators = 100;
  bool bootstrap = true;
  int64_t bootstrap_draws = 0;  // <= 0: n (scikit-learn's max_samples=None)
  int max_bins = 256;
  uint64_t seed = 0;
  int threads = 1;
  bool oob_score = false;  // with bootstrap: the out-of-bag predictions and score
  // scikit-learn's "balanced_subsample" (classification, with bootstrap): per tree, class c also
  // weighs draws / (k_drawn · draws of c), from the tree's own draws. Other class weights come in
  // the sample weights (the estimator multiplies them in).
  bool balanced_subsample = false;
  // A CUDA context to grow the trees on, level by level (levelwise.hpp), when the rules are in
  // that builder's scope; null, or out of scope: grow_tree on the host threads.
  const Context* device = nullptr;
  // Distributed (SPMD): the ranks of this communicator each pass their own rows (X, labels or y,
  // weights), the rows of all ranks in rank order being the data; every rank gets the forest one
  // process would grow on all of them with the same seed. The bins come from a sample of all
  // rows, the bootstrap from draws over all rows (each rank keeps its rows' counts), and the
  // trees grow level by level with each level's histograms summed over the ranks (levelwise.hpp;
  // its scope only: integer row weights). Null or one rank: a single process.
  Comm* comm = nullptr;
  // warm_start: trees kept from an earlier fit (with their bootstrap seeds). They become trees
  // [0, kept) of the forest, and trees [kept, n_estimators) are grown as a fit of this seed would
  // grow them (tree t from the t-th tree seed), so a forest grown in steps is the forest grown at
  // once. Importances and the out-of-bag predictions cover all trees. Null: none kept.
  const Forest* kept = nullptr;
};

struct WrittenForest;

struct Forest {
  FeatureBins bins;
  int64_t n_features = 0;
  std::vector<Tree> trees;
  // Set when the backend wrote the trees in their final forms itself (the CUDA level builder, for
  // a fit of one batch without out-of-bag scores, pruning, kept trees or ranks): trees is then
  // empty (forest_nodes.hpp).
  std::shared_ptr<WrittenForest> written;
  std::vector<uint64_t> tree_seeds;  // per tree: the seed of its bootstrap draws (tree_seed(forest seed, t))
  int width = 0;
  bool classification = true;
  // scikit-learn's feature_importances_: each tree's impurity improvements per feature normalized
  // to 1 (trees without a split left out), averaged, normalized again (zeros without any split).
  std::vector<double> feature_importances;
  // With oob_score: per row the mean over the trees that did not draw it of their predictions
  // (n x k class probabilities, or n values), 0 for rows every tree drew (oob_missing counts them,
  // scikit-learn warns about them); oob_score is the accuracy (classification) or R² of those.
  std::vector<double> oob_decision;
  int64_t oob_missing = 0;
  double oob_score = 0.0;
};

// Classification: labels in [0, k) with k = rules.tree.width; regression: y (labels null). Weights
// may be null (ones); else finite, >= 0, not all 0 (over all ranks). With several ranks (rules.comm),
// oob_decision holds this rank's rows and oob_missing / oob_score count every rank's.
template <typename T>
GPUML_API Forest fit_forest(const T* X, int64_t n, int64_t d, const int32_t* labels, const T* y, const double* sample_weight,
                            const ForestRules& rules);

// The n x d one-byte codes of a fit (dense or sparse X alike) are refused by name, as an
// out_of_memory error, before anything is allocated for them when they cannot fit in this
// machine's memory: sparse X can describe far more cells than it stores. fit_forest checks;
// callers holding sparse X check before converting it.
GPUML_API void check_codes_fit(int64_t n, int64_t d);

// fit_forest on sparse X: a canonical CSC matrix in host memory (sparse_lines), one process (a
// communicator of several ranks is an invalid_argument error). With rules.device the codes are
// binned on the host and the trees grown level by level on the device (LevelBackend::load_codes).
// The same forest, bit for bit, as fit_forest on the dense matrix with the same values; the out-of-
// bag rows are read from X's columns. y is of the dtype the estimator computes in.
template <typename T>
GPUML_API Forest fit_forest_sparse(const SparseLines& X, const int32_t* labels, const T* y, const double* sample_weight,
                                   const ForestRules& rules);

// out: n x k class probabilities (the mean over trees of each leaf's class distribution), or n
// means of the leaves' values (regression).
template <typename T>
GPUML_API void forest_predict(const Forest& forest, const T* X, int64_t n, int64_t d, double* out, int threads);

}  // namespace gpuml::detail

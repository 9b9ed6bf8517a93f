#pragma once
// Trees grown level by level on a device (docs/random_forest.md): every tree of a batch at once,
// one split search and one partition per level for all of the level's nodes. The host keeps the
// tree arrays and the rules (which nodes may split, their feature draws from the host random
// stream); the backend keeps the rows and finds and applies the splits. The trees are the
// depth-first builder's (tree_builder.cpp) node for node, in its order (depth-first growth: made
// from the levels' records at the end, tree_assembly.hpp).
//
// Scope: integer row weights (bootstrap counts up to 255, or ones; with bootstrap, sample
// weights only choose the rows, so they are in scope too), every criterion, depth-first or
// best-first (max_leaf_nodes) growth: classification's class counts and regression's quantized
// targets (quantize_targets) sum exactly, so the device's atomics add up to the host's bits, and
// the scores come from the same formulas (criteria.hpp, with a logarithm of our own).
// balanced_subsample and sample weights without bootstrap (non-integer weights) grow on the host.
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "binning.hpp"
#include "../core/default_init.hpp"
#include "level_growth.hpp"
#include "tree_builder.hpp"
#include "gpuml/core/context.hpp"
#include "gpuml/core/error.hpp"
#include "gpuml/core/export.hpp"

namespace gpuml::detail {

// A node of the level being split: its in-bag rows are slots [slot_begin, slot_begin + slot_count)
// of the batch's slot list (TreeSlots; the node's own range of its tree's).
struct LevelNode {
  int32_t tree = 0;
  int32_t rows = 0;  // its in-bag rows over all ranks, capped at INT32_MAX (compared with small sizes only)
  int64_t slot_begin = 0, slot_count = 0;
  double root_weight = 1.0;  // the tree's, for impurity_improvement
  uint64_t seed = 0;         // its feature draws: feature_orders of this seed (grow_tree's node seed)
};

// The best split of a level node (found = 0: none meets the rules), as best_split finds it, and
// how many of its slots went left when it was applied (the slots are partitioned in place, left
// ones first).
struct LevelSplit {
  int32_t found = 0;
  int32_t feature = -1;  // the feature's index in X
  int32_t bin = -1, next_bin = -1;
  double improvement = 0.0;
  int64_t left_rows = 0, right_rows = 0;
  int64_t left_slots = 0;
};

// A row count as LevelNode::rows keeps it.
GPUML_HOST_DEVICE inline int32_t capped_rows(int64_t rows) { return rows < INT32_MAX ? static_cast<int32_t>(rows) : INT32_MAX; }

// A split node's child (side 1 left, 2 right) as the next level searches it: its rows, its slots
// (the partition puts the left ones first) and its seed (child_seed); tree and root weight are
// the parent's. grow_levels_by_search and the CUDA backend's next level both make them so.
GPUML_HOST_DEVICE inline LevelNode child_node(const LevelNode& parent, const LevelSplit& split, int side) {
  LevelNode child = parent;
  child.rows = capped_rows(side == 1 ? split.left_rows : split.right_rows);
  child.slot_begin = side == 1 ? parent.slot_begin : parent.slot_begin + split.left_slots;
  child.slot_count = side == 1 ? split.left_slots : parent.slot_count - split.left_slots;
  child.seed = child_seed(parent.seed, side);
  return child;
}

// What the trees fit: class labels in [0, k), or (labels null) quantized regression targets,
// each row's y and y² as integers times unit[0] and unit[1] (quantize_targets).
struct LevelTargets {
  const int32_t* labels = nullptr;
  int k = 0;
  const int64_t* units = nullptr;  // n x 2
  double unit[2] = {1.0, 1.0};
  bool regression() const { return labels == nullptr; }
  int width() const { return regression() ? 3 : k; }  // statistics per node: k class weights, or W, S, Q
};

// Statistics per node at most (classes): the builder's scope (levelwise_eligible).
constexpr int kMaxLevelWidth = 64;

struct LevelRules {
  Criterion criterion = Criterion::gini;
  int width = 2;               // statistics per node (LevelTargets::width)
  int64_t max_features = 1;    // informative features to evaluate per node
  int64_t min_samples_leaf = 1;
};

// The slot list of a batch of trees: tree t's rows of weight > 0 (its in-bag rows), ascending,
// with their weights, at slots [offset[t], offset[t + 1]). Out-of-bag rows get no slot: they
// would only ride along through every level's search and partition (a bootstrap leaves ~37% of
// the rows out of each tree).
struct TreeSlots {
  std::vector<int64_t> offset;  // trees + 1
  DefaultInitVector<int32_t> rows;
  DefaultInitVector<uint8_t> weights;
  int64_t size() const { return offset.empty() ? 0 : offset.back(); }
};

// The slots of `trees` trees from their row weights (weights[t * n + i]: row i's count in tree t).
// (GPUML_API: for the tests.)
GPUML_API TreeSlots in_bag_slots(const uint8_t* weights, int64_t n, int64_t trees, int threads);

// One level of depth-first growth as grow_levels hands it over, in the level's node order: each
// node's split and left statistics (split_level's) and its flags (level_flags: the split made,
// and which children are searched in the next level).
struct LevelRecords {
  int64_t depth = 0;
  int64_t count = 0;  // nodes
  const LevelSplit* splits = nullptr;
  const double* left_stats = nullptr;  // count x width
  const uint8_t* flags = nullptr;
};
using LevelSink = std::function<void(const LevelRecords&)>;
// A depth-first level as GPUML_TRACE counts it: its nodes and their flags (host memory).
using LevelTally = std::function<void(int64_t depth, const LevelNode* nodes, const uint8_t* flags, int64_t count)>;

class LevelPrimitives;
class LevelBackend;
struct WrittenForest;
// LevelBackend::grow_trees' default: grow_levels' records kept on the host (each level's nodes and
// statistics made from its parents' as grow_levels_by_search makes them), then the trees
// assembled there (assemble_trees_on_host, tree_assembly.hpp).
GPUML_API void grow_trees_by_levels(LevelBackend& backend, const std::vector<LevelNode>& roots,
                                    const std::vector<double>& root_stats, const LevelRules& rules, const LevelGrowth& growth,
                                    const FeatureBins& bins, Tree* trees, const LevelTally& tally, int threads);

class LevelBackend {
 public:
  virtual ~LevelBackend() = default;
  // Its per-rank primitives (every backend has them; the tests call them directly).
  virtual LevelPrimitives& primitives() = 0;
  // The data: X (n x d, row-major, host memory) binned with bins' thresholds and kept as codes
  // (bin_rows's), bins.low / bins.high filled (value_ranges's), and the targets (n rows). NaN or
  // infinity in X is an invalid_argument error.
  virtual void load(const float* X, int64_t n, int64_t d, FeatureBins& bins, const LevelTargets& targets) = 0;
  virtual void load(const double* X, int64_t n, int64_t d, FeatureBins& bins, const LevelTargets& targets) = 0;
  // The data already binned on the host (sparse X: bin_sparse_columns): codes in bin_rows's
  // layout (feature-major, codes[j * n + i]), bins with their low / high filled from the same rows
  // (the ranges of every rank's rows with a communicator), and the targets (n rows).
  virtual void load_codes(const uint8_t* codes, int64_t n, int64_t d, const FeatureBins& bins,
                          const LevelTargets& targets) = 0;
  // A batch of trees, as their slot list (read during the call); the level nodes' slot ranges
  // index it, and split_level partitions it in place.
  virtual void begin_trees(const TreeSlots& slots) = 0;
  // Finds each node's best split over its drawn features (taken in the order feature_orders gives
  // for the node's seed until max_features are informative) and partitions the slots of the
  // nodes that found one. left_stats: nodes x width, the left side's statistics.
  virtual void split_level(const std::vector<LevelNode>& nodes, const LevelRules& rules, std::vector<LevelSplit>& splits,
                           std::vector<double>& left_stats) = 0;
  // Depth-first growth of the batch from its roots that are searched (roots, in tree order, and
  // their statistics, roots x width): each level is searched and partitioned as split_level
  // does, its nodes' flags set by level_flags, and the next level made of the children the
  // flags name, in order (a node's left child, then its right), with their statistics, slots
  // (the left ones first), row counts, root weights and seeds (child_seed). sink gets each
  // level's records before the next level is searched; the levels end when none is left.
  // grow_levels_by_search does it with split_level and the host's loops; a backend may keep the
  // levels where its rows are.
  virtual void grow_levels(const std::vector<LevelNode>& roots, const std::vector<double>& root_stats,
                           const LevelRules& rules, const LevelGrowth& growth, const LevelSink& sink) = 0;
  // Depth-first growth as grow_levels, and the trees made from its levels (tree_assembly.hpp, in
  // grow_tree's node order): trees are the batch's (LevelNode::tree indexes them); root i's tree
  // holds it as node 0 (statistics, impurity, rows) and gets the rest of its nodes. tally, when
  // set, gets each level's nodes and flags. By default grow_levels' records are kept on the host
  // and the trees assembled there (grow_trees_by_levels); a backend may assemble them where it
  // keeps its levels. (Inline, as gather_rows: no key function.)
  virtual void grow_trees(const std::vector<LevelNode>& roots, const std::vector<double>& root_stats, const LevelRules& rules,
                          const LevelGrowth& growth, const FeatureBins& bins, Tree* trees, const LevelTally& tally,
                          int threads) {
    grow_trees_by_levels(*this, roots, root_stats, rules, growth, bins, trees, tally, threads);
  }
  // Whether grow_forest is there: the backend writes a whole forest's final forms itself.
  virtual bool writes_forests() const { return false; }
  // grow_trees for the whole forest in one batch, written in its final forms (forest_nodes.hpp):
  // trees are all n_trees of it, each holding its root as node 0 (roots lists those searched);
  // out gets every tree's node arrays as forest_nodes makes them from grow_trees' trees (values
  // of class fractions when classification, else means), the forest pack_forest packs from them
  // staged in the device's memory, and the importance sums. (Inline: no key function.)
  virtual void grow_forest(const std::vector<LevelNode>& /*roots*/, const std::vector<double>& /*root_stats*/,
                           const LevelRules& /*rules*/, const LevelGrowth& /*growth*/, const FeatureBins& /*bins*/,
                           const Tree* /*trees*/, int64_t /*n_trees*/, bool /*classification*/, const LevelTally& /*tally*/,
                           int /*threads*/, WrittenForest& /*out*/) {
    throw_error(ErrorCode::internal, "levelwise builder: this backend does not write forests");
  }
};

// The next level of depth-first growth, as the CUDA backend's next_level_kernel makes it too: the
// searched children the flags name, in order (a node's left child, then its right; child_node's),
// and their statistics (left, or the node's minus left); at (count + 1): where node i's children go.
void next_level(const std::vector<LevelNode>& level, const std::vector<double>& stats, const LevelSplit* splits,
                const double* left, const uint8_t* flags, int width, int threads, std::vector<int32_t>& at,
                std::vector<LevelNode>& next, std::vector<double>& next_stats);

// LevelBackend::grow_levels on backend.split_level, the next level made on the host.
void grow_levels_by_search(LevelBackend& backend, std::vector<LevelNode> level, std::vector<double> stats,
                           const LevelRules& rules, const LevelGrowth& growth, int threads, const LevelSink& sink);

// A distributed level search (split_level_over_ranks) runs on three per-rank primitives over
// this rank's slots: the host loops of levelwise_cpu.cpp or the CUDA backend's kernels.
// (node, feature) pairs of one step, and where each pair's cells start (offset: pairs + 1).
struct LevelPairs {
  std::vector<int32_t> node;  // an index into the level's nodes
  std::vector<int32_t> feature;
  std::vector<int64_t> offset;
  int64_t size() const { return static_cast<int64_t>(node.size()); }
};

class LevelPrimitives {
 public:
  virtual ~LevelPrimitives() = default;
  // counts[pairs.offset[p] + b] = this rank's slots of weight > 0 in node pairs.node[p] whose
  // code of feature pairs.feature[p] is b (counts: pairs.offset.back() entries).
  virtual void count_bins(const std::vector<LevelNode>& nodes, const LevelPairs& pairs, std::vector<int32_t>& counts) = 0;
  // stats[(pairs.offset[p] + cell_of[p * 256 + b]) * width + c] = statistic c (class weights, or
  // W, W y, W y²) of those slots in bin b, for the bins that occur (cell_of maps them to cells).
  virtual void bin_stats(const std::vector<LevelNode>& nodes, const LevelPairs& pairs, const std::vector<int32_t>& cell_of,
                         std::vector<double>& stats) = 0;
  // Partitions the slots of every node whose split was found: code <= split.bin of split.feature
  // go left, first; sets split.left_slots.
  virtual void partition(const std::vector<LevelNode>& nodes, std::vector<LevelSplit>& splits) = 0;
  // Whether gather_rows is there: small nodes then travel as rows, not as histograms.
  virtual bool gathers_rows() const { return false; }
  // This rank's slots of each node of the list (in order, slots in order): their codes of every
  // feature (slots x d, row-major) and their statistics (slots x width: class weights, or W, W y,
  // W y²), appended to codes and stats.
  // (Inline, so that the class has no key function: its type information is emitted wherever it
  // is used, which UBSan's checks of virtual calls in the tests need.)
  virtual void gather_rows(const std::vector<LevelNode>& /*nodes*/, std::vector<uint8_t>& /*codes*/,
                           std::vector<double>& /*stats*/) {
    throw_error(ErrorCode::internal, "levelwise builder: this backend does not gather rows");
  }
};

// LevelBackend::split_level over the ranks of comm, on primitives. Small nodes (few rows for their
// histograms' cells; with primitives that gather rows) are gathered to every rank as rows, codes
// and statistics, and searched as grow_tree searches a compact node. The others go in groups of
// nodes (the same on every rank), 1. rounds of row counts per bin of each node's drawn features, summed over the
// ranks, until max_features of them are informative (more than one occupied bin over all rows) or
// none is left, the features grow_tree evaluates; 2. the statistics of the occupied bins only
// (compact histograms: a node's cost follows its rows), summed over the ranks; then best_split,
// and each rank partitions its own slots. Every sum is exact (integer weights; regression
// targets in integer units), so the ranks' partial sums add up to one process's bits.
// bins: each feature's bin count; width: statistics per cell.
// The level's feature draw orders on the host (nodes x d, feature_orders of each node's seed).
std::vector<int32_t> level_feature_orders(const std::vector<LevelNode>& nodes, int64_t d, int threads);

void split_level_over_ranks(LevelPrimitives& primitives, Comm& comm, const std::vector<LevelNode>& nodes,
                            const LevelRules& rules, int64_t d,
                            const std::vector<int32_t>& bins, int width, int threads, std::vector<LevelSplit>& splits,
                            std::vector<double>& left_stats);

// With a communicator of several ranks (collective, as make_level_cpu_backend's), each rank holds
// its own rows and split_level runs split_level_over_ranks on the backend's kernels; else (null,
// or one rank) the fused one-kernel-per-level search.
GPUML_API std::unique_ptr<LevelBackend> make_level_cuda_backend(const Context& ctx, Comm* comm = nullptr);
// The host backend (levelwise_cpu.cpp): the reference for the CUDA backend's tests, and the
// distributed CPU fit. With a communicator of several ranks (collective: every rank calls each
// method with the same nodes), each rank holds its own rows; load merges every rank's value
// ranges, and split_level sums each node's histograms over the ranks before it picks a split (so
// the split, its row counts and left statistics are those of all rows), then partitions this
// rank's slots. Sums are exact (integer weights, quantized targets): the ranks' order of
// addition does not matter.
GPUML_API std::unique_ptr<LevelBackend> make_level_cpu_backend(Comm* comm = nullptr, int threads = 1);

// Whether grow_trees_levelwise can grow the trees of these rules (see the scope above; the
// bootstrap counts must also fit in a byte, which the caller checks).
GPUML_API bool levelwise_eligible(const ForestRules& rules, bool has_sample_weight);

// The trees of `seeds.size()` trees from their row weights (weights[t * n + i]: row i's
// bootstrap count in tree t), as grow_tree would grow each (same seeds, same rules), on
// `backend`, loaded with the data and these targets (load) and the bins it filled. With a
// communicator (collective; backend: make_level_cpu_backend over the same one), n rows are this
// rank's and the trees those of all ranks' rows, the same on every rank.
// With `written` (no communicator), when the backend writes forests, the trees grow depth first
// and fit one batch, the backend writes them there in their final forms (grow_forest) and the
// trees returned are empty; else `written` is left as it is.
GPUML_API std::vector<Tree> grow_trees_levelwise(LevelBackend& backend, int64_t n, int64_t d, const FeatureBins& bins,
                                                 const LevelTargets& targets, const uint8_t* weights,
                                                 const std::vector<uint64_t>& seeds, const TreeRules& rules, int threads,
                                                 Comm* comm = nullptr, WrittenForest* written = nullptr);

}  // namespace gpuml::detail

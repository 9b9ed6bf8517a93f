#include "ensemble/tree_builder.hpp"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <new>
#include <numeric>
#include <optional>
#include <string>

#include "core/random.hpp"
#include "ensemble/feature_draws.hpp"
#include "ensemble/tree_assembly.hpp"
#include "ensemble/split_finder.hpp"
#include "gpuml/core/comm.hpp"
#include "gpuml/core/error.hpp"

namespace gpuml::detail {
namespace {

struct Pending {
  int32_t node;
  int64_t begin, end;  // the node's rows: rows[begin, end)
  int64_t depth;
  uint64_t seed;
};

}  // namespace

bool stays_leaf(const TreeRules& rules, int64_t depth, int64_t rows, double impurity) {
  return leaf_before_search(rules.max_depth, rules.min_samples_split, rules.min_samples_leaf, depth, rows, impurity);
}

int32_t new_node(Tree& tree, int width, const double* stats, double impurity, int64_t rows) {
  tree.feature.push_back(-1);
  tree.left.push_back(-1);
  tree.right.push_back(-1);
  tree.threshold.push_back(0.0);
  tree.stats.insert(tree.stats.end(), stats, stats + width);
  tree.impurity.push_back(impurity);
  tree.rows.push_back(rows);
  tree.improvement.push_back(0.0);
  return static_cast<int32_t>(tree.feature.size() - 1);
}

void reserve_nodes(Tree& tree, const TreeRules& rules, int64_t rows) {
  int64_t most = 2 * std::max<int64_t>(rows, 1) - 1;
  if (rules.max_depth >= 0 && rules.max_depth < 40) most = std::min(most, (int64_t(2) << rules.max_depth) - 1);
  if (rules.max_leaf_nodes > 0) most = std::min(most, 2 * rules.max_leaf_nodes - 1);
  const std::size_t nodes = static_cast<std::size_t>(most);
  try {
    tree.feature.reserve(nodes);
    tree.left.reserve(nodes);
    tree.right.reserve(nodes);
    tree.threshold.reserve(nodes);
    tree.stats.reserve(nodes * static_cast<std::size_t>(rules.width));
    tree.impurity.reserve(nodes);
    tree.rows.reserve(nodes);
    tree.improvement.reserve(nodes);
  } catch (const std::bad_alloc&) {
    // The arrays grow as nodes are made instead.
  }
}

void set_split(Tree& tree, const FeatureBins& bins, int32_t node, int64_t feature, int bin, int next_bin, double improvement,
               int32_t left, int32_t right) {
  tree.feature[node] = static_cast<int32_t>(feature);
  tree.threshold[node] = split_threshold(BinRanges{bins.offsets.data(), bins.low.data(), bins.high.data()},
                                         static_cast<int32_t>(feature), bin, next_bin);
  tree.left[node] = left;
  tree.right[node] = right;
  tree.improvement[node] = improvement;
}

namespace {

// feature_orders of L seeds (d <= 156). Seeding is one serial chain of multiplies per seed: L
// chains interleaved keep the multiplier busy.
template <int L>
void feature_orders_of(const uint64_t* seeds, int64_t d, int32_t* orders) {
  uint64_t x[kMtWords][L], v[L];
  for (int l = 0; l < L; ++l) x[0][l] = v[l] = seeds[l];
  for (int64_t i = 1; i < kMtShift + d; ++i)
#pragma GCC unroll 8
    for (int l = 0; l < L; ++l) x[i][l] = v[l] = mt_seed_word(v[l], static_cast<uint64_t>(i));
  for (int l = 0; l < L; ++l) {
    // The draws first, then the swaps: the draws do not wait for each other's swaps.
    int64_t pick[kMtWords - kMtShift];
    for (int64_t i = 0; i < d; ++i)
      pick[i] = i + static_cast<int64_t>(Random::below_of(mt_output(x[i][l], x[i + 1][l], x[i + kMtShift][l]), static_cast<uint64_t>(d - i)));
    int32_t* order = orders + l * d;
    std::iota(order, order + d, 0);
    for (int64_t i = 0; i < d; ++i) std::swap(order[i], order[pick[i]]);
  }
}

}  // namespace

void feature_orders(const uint64_t* seeds, int64_t count, int64_t d, int32_t* orders) {
  if (d > kDirectDraws) {  // outputs past the first twist's kept words: the engine itself
    for (int64_t c = 0; c < count; ++c) {
      Random random(seeds[c]);
      int32_t* order = orders + c * d;
      std::iota(order, order + d, 0);
      for (int64_t i = 0; i < d; ++i) std::swap(order[i], order[i + static_cast<int64_t>(random.below(static_cast<uint64_t>(d - i)))]);
    }
    return;
  }
  constexpr int kLanes = 8;
  int64_t c = 0;
  for (; c + kLanes <= count; c += kLanes) feature_orders_of<kLanes>(seeds + c, d, orders + c * d);
  for (; c < count; ++c) feature_orders_of<1>(seeds + c, d, orders + c * d);
}

void prune_tree(Tree& tree, Criterion criterion, int width, double ccp_alpha) {
  const int64_t n = tree.node_count();
  if (n <= 1 || !(ccp_alpha > 0.0)) return;
  std::vector<double> r_node(static_cast<std::size_t>(n)), r_branch(static_cast<std::size_t>(n), 0.0);
  std::vector<int64_t> leaves(static_cast<std::size_t>(n), 0), parent(static_cast<std::size_t>(n), -1);
  const double total = stats_weight(criterion, tree.stats.data(), width);
  for (int64_t i = 0; i < n; ++i) {
    r_node[i] = stats_weight(criterion, tree.stats.data() + i * width, width) * tree.impurity[i] / total;
    if (tree.feature[i] >= 0) parent[tree.left[i]] = parent[tree.right[i]] = i;
  }
  std::vector<uint8_t> leaf(static_cast<std::size_t>(n)), candidate(static_cast<std::size_t>(n)), kept(static_cast<std::size_t>(n), 1);
  for (int64_t i = 0; i < n; ++i) {
    leaf[i] = tree.feature[i] < 0;
    candidate[i] = !leaf[i];
    if (!leaf[i]) continue;
    r_branch[i] = r_node[i];
    for (int64_t p = parent[i]; p >= 0; p = parent[p]) r_branch[p] += r_node[i], ++leaves[p];
  }
  std::vector<int64_t> stack;
  while (candidate[0]) {
    double weakest = DBL_MAX;
    int64_t pruned = -1;
    for (int64_t i = 0; i < n; ++i) {
      if (!candidate[i]) continue;
      const double alpha = (r_node[i] - r_branch[i]) / static_cast<double>(leaves[i] - 1);
      if (alpha < weakest) weakest = alpha, pruned = i;
    }
    if (ccp_alpha < weakest) break;
    stack.assign(1, pruned);  // the subtree goes, its root stays as a leaf
    while (!stack.empty()) {
      const int64_t node = stack.back();
      stack.pop_back();
      if (!kept[node]) continue;
      candidate[node] = leaf[node] = kept[node] = 0;
      if (tree.feature[node] >= 0) stack.insert(stack.end(), {tree.left[node], tree.right[node]});
    }
    leaf[pruned] = kept[pruned] = 1;
    const int64_t removed = leaves[pruned] - 1;
    const double r_diff = r_node[pruned] - r_branch[pruned];
    leaves[pruned] = 0;
    r_branch[pruned] = r_node[pruned];
    for (int64_t p = parent[pruned]; p >= 0; p = parent[p]) leaves[p] -= removed, r_branch[p] += r_diff;
  }
  // The kept nodes, renumbered in their order; a pruned split becomes a leaf.
  std::vector<int32_t> id(static_cast<std::size_t>(n), -1);
  Tree out;
  for (int64_t i = 0; i < n; ++i) {
    if (!kept[i]) continue;
    id[i] = new_node(out, width, tree.stats.data() + i * width, tree.impurity[i], tree.rows[i]);
  }
  for (int64_t i = 0; i < n; ++i) {
    if (!kept[i] || leaf[i]) continue;
    const int32_t at = id[i];
    out.feature[at] = tree.feature[i];
    out.threshold[at] = tree.threshold[i];
    out.left[at] = id[tree.left[i]];
    out.right[at] = id[tree.right[i]];
    out.improvement[at] = tree.improvement[i];
  }
  tree = std::move(out);
}

Tree grow_tree(const uint8_t* codes, int64_t n, int64_t d, const FeatureBins& bins, const double* row_stats,
               std::vector<int32_t> rows, const TreeRules& rules, uint64_t seed) {
  GPUML_EXPECT(rules.max_features >= 1 && rules.max_features <= d, "max_features must be in [1, n_features]");
  GPUML_EXPECT(!bins.low.empty(), "grow_tree: the bins need their value ranges (value_ranges)");
  const int width = rules.width;
  Tree tree;
  std::vector<double> root(static_cast<std::size_t>(width), 0.0);
  for (int32_t r : rows)
    for (int j = 0; j < width; ++j) root[j] += row_stats[static_cast<int64_t>(r) * width + j];
  const bool regression = rules.criterion == Criterion::squared_error || rules.criterion == Criterion::poisson;
  const double root_weight = regression ? root[0] : std::accumulate(root.begin(), root.end(), 0.0);
  new_node(tree, width, root.data(), node_impurity(rules.criterion, root.data(), width), static_cast<int64_t>(rows.size()));

  int max_bins = 1;
  for (int64_t f = 0; f < d; ++f) max_bins = std::max<int>(max_bins, static_cast<int>(bins.bins(f)));
  SplitRules split_rules;
  split_rules.criterion = rules.criterion;
  split_rules.min_samples_leaf = rules.min_samples_leaf;
  split_rules.root_weight = root_weight;
  // scikit-learn's min_weight_leaf: the fraction of the weight the tree was given (its root's).
  split_rules.min_weight_leaf = rules.min_weight_fraction_leaf * root_weight;

  std::vector<int32_t> order(static_cast<std::size_t>(d));
  std::vector<int32_t> scratch(rows.size());
  std::vector<double> node_stats;
  std::vector<uint8_t> node_codes;  // a compact node's codes of one feature, in row order
  NodeHistogram h;
  h.max_bins = max_bins;
  h.width = width;

  // The best split of a pending node, in feature `chosen` (none when the node stays a leaf).
  auto evaluate = [&](const Pending& p, int64_t& chosen) -> Split {
    const int64_t count = p.end - p.begin;
    if (stays_leaf(rules, p.depth, count, tree.impurity[p.node])) return Split{};
    // Features in a random order (from the node's seed), histogram by histogram, until
    // max_features of them are not constant here or none are left (scikit-learn's rule).
    // All d draws at once where feature_orders computes them cheaply; else one by one, as needed.
    std::optional<Random> random;
    if (d > kDirectDraws) {
      random.emplace(p.seed);
      std::iota(order.begin(), order.end(), 0);
    } else {
      feature_orders(&p.seed, 1, d, order.data());
    }
    // Nodes with fewer rows than bins keep only their occupied bins (ascending codes), so that their
    // cost follows their rows, not 256 bins per feature; the sums come out in the same order
    // either way (rows ascending within a bin), so both give the same tree.
    const bool compact = count < max_bins;
    const int stride = compact ? static_cast<int>(count) : max_bins;
    h.max_bins = stride;
    h.n_features = 0;
    h.bins.clear();
    h.stats.clear();
    h.rows.clear();
    h.bin_ids.clear();
    // The node's row statistics gathered in row order once: each feature's pass then reads them
    // sequentially (only the one-byte codes are gathered per feature).
    node_stats.resize(static_cast<std::size_t>(count * width));
    for (int64_t k = p.begin; k < p.end; ++k)
      std::copy_n(row_stats + static_cast<int64_t>(rows[k]) * width, width, node_stats.data() + (k - p.begin) * width);
    std::vector<int64_t> drawn;
    int64_t informative = 0;
    for (int64_t i = 0; i < d && informative < rules.max_features; ++i) {
      if (random) std::swap(order[i], order[i + static_cast<int64_t>(random->below(static_cast<uint64_t>(d - i)))]);
      const int64_t f = order[i];
      const uint8_t* column = codes + f * n;
      int occupied = 0;
      if (compact) {
        node_codes.resize(static_cast<std::size_t>(count));
        for (int64_t k = 0; k < count; ++k) node_codes[k] = column[rows[p.begin + k]];
        occupied = append_compact_feature(h, node_codes.data(), node_stats.data(), count);
      } else {
        h.stats.resize(h.stats.size() + static_cast<std::size_t>(stride) * width, 0.0);
        h.rows.resize(h.rows.size() + static_cast<std::size_t>(stride), 0);
        double* stats = h.stats.data() + static_cast<std::size_t>(h.n_features) * stride * width;
        int64_t* counts = h.rows.data() + static_cast<std::size_t>(h.n_features) * stride;
        for (int64_t k = p.begin; k < p.end; ++k) {
          const int b = column[rows[k]];
          ++counts[b];
          const double* s = node_stats.data() + (k - p.begin) * width;
          for (int j = 0; j < width; ++j) stats[b * width + j] += s[j];
        }
        h.bins.push_back(static_cast<int>(bins.bins(f)));
        for (int b = 0; b < h.bins.back(); ++b) occupied += counts[b] > 0;
        ++h.n_features;
      }
      informative += occupied > 1;
      drawn.push_back(f);
    }
    Split split = best_split(h, split_rules);
    if (!split.found || split.improvement + DBL_EPSILON < rules.min_impurity_decrease) return Split{};
    chosen = drawn[split.feature];
    return split;
  };

  // Splits node p (its rows partitioned in place) and returns its two children.
  auto apply = [&](const Pending& p, const Split& split, int64_t f) -> std::pair<Pending, Pending> {
    // Stable partition of the node's rows: bins <= split.bin go left.
    const uint8_t* column = codes + f * n;
    int64_t left_end = p.begin, right_fill = 0;
    for (int64_t k = p.begin; k < p.end; ++k) {
      const int32_t r = rows[k];
      if (column[r] <= split.bin) rows[left_end++] = r;
      else scratch[right_fill++] = r;
    }
    std::copy(scratch.begin(), scratch.begin() + right_fill, rows.begin() + left_end);
    const int32_t left = new_node(tree, width, split.left_stats.data(), split.left_impurity, split.left_rows);
    const int32_t right = new_node(tree, width, split.right_stats.data(), split.right_impurity, split.right_rows);
    set_split(tree, bins, p.node, f, split.bin, split.next_bin, split.improvement, left, right);
    return {Pending{left, p.begin, left_end, p.depth + 1, child_seed(p.seed, 1)},
            Pending{right, left_end, p.end, p.depth + 1, child_seed(p.seed, 2)}};
  };

  const Pending root_node{0, 0, static_cast<int64_t>(rows.size()), 0, seed};
  if (rules.max_leaf_nodes < 0) {  // depth first, left before right
    std::vector<Pending> stack{root_node};
    while (!stack.empty()) {
      const Pending p = stack.back();
      stack.pop_back();
      int64_t f = -1;
      const Split split = evaluate(p, f);
      if (!split.found) continue;
      const auto [left, right] = apply(p, split, f);
      stack.push_back(right);
      stack.push_back(left);
    }
  } else {
    // Best first (scikit-learn's max_leaf_nodes): a node's split is found when the node is made;
    // the splittable node of the largest improvement splits next (ties: the older node), until
    // the tree has max_leaf_nodes leaves.
    struct Candidate {
      double improvement;
      int32_t node;
      Pending pending;
      Split split;
      int64_t feature;
    };
    auto later = [](const Candidate& a, const Candidate& b) {
      return a.improvement < b.improvement || (a.improvement == b.improvement && a.node > b.node);
    };
    std::vector<Candidate> frontier;
    auto offer = [&](const Pending& p) {
      int64_t f = -1;
      Split split = evaluate(p, f);
      if (!split.found) return;
      const double improvement = split.improvement;
      frontier.push_back(Candidate{improvement, p.node, p, std::move(split), f});
      std::push_heap(frontier.begin(), frontier.end(), later);
    };
    offer(root_node);
    for (int64_t leaves = 1; leaves < rules.max_leaf_nodes && !frontier.empty(); ++leaves) {
      std::pop_heap(frontier.begin(), frontier.end(), later);
      const Candidate best = std::move(frontier.back());
      frontier.pop_back();
      const auto [left, right] = apply(best.pending, best.split, best.feature);
      offer(left);
      offer(right);
    }
  }
  return tree;
}

template <typename T>
QuantizedTargets quantize_targets(Criterion criterion, const T* y, int64_t n, int64_t weight_total, Comm* comm) {
  QuantizedTargets q;
  q.units.resize(static_cast<std::size_t>(2 * n));
  std::vector<double> base(static_cast<std::size_t>(2 * n));
  double largest[2] = {0.0, 0.0};  // infinity when some target overflows
  for (int64_t i = 0; i < n; ++i) {
    double s[3];
    regression_row_stats(criterion, 1.0, static_cast<double>(y[i]), s);
    for (int j = 0; j < 2; ++j) {
      base[2 * i + j] = s[j + 1];
      largest[j] = std::isfinite(s[j + 1]) ? std::max(largest[j], std::fabs(s[j + 1])) : HUGE_VAL;
    }
  }
  if (comm != nullptr && comm->size() > 1) {  // the largest of every rank's: the same units everywhere
    std::vector<double> all(static_cast<std::size_t>(2 * comm->size()));
    comm->allgather(largest, 2, all.data(), DType::float64);
    for (int r = 0; r < comm->size(); ++r)
      for (int j = 0; j < 2; ++j) largest[j] = std::max(largest[j], all[2 * r + j]);
  }
  GPUML_EXPECT(std::isfinite(largest[0]) && std::isfinite(largest[1]),
               "y is too large for the forest's criterion (y² or y log y overflows)");
  int weight_bits = 0;  // weight_total <= 2^weight_bits
  while (weight_bits < 62 && (int64_t{1} << weight_bits) < weight_total) ++weight_bits;
  for (int j = 0; j < 2; ++j) {
    if (largest[j] == 0.0) continue;
    int exponent = 0;  // largest <= 2^exponent
    std::frexp(largest[j], &exponent);
    // |target| / unit <= 2^(52 - weight_bits): weight_total of them sum below 2^53. Units stay
    // normal numbers (absurdly small targets lose their low bits rather than go subnormal).
    q.unit[j] = std::ldexp(1.0, std::max(exponent + weight_bits - 52, -1000));
  }
  for (int64_t i = 0; i < 2 * n; ++i) q.units[i] = std::llrint(base[i] / q.unit[i % 2]);
  return q;
}

template QuantizedTargets quantize_targets<float>(Criterion, const float*, int64_t, int64_t, Comm*);
template QuantizedTargets quantize_targets<double>(Criterion, const double*, int64_t, int64_t, Comm*);

template <typename T>
void tree_leaves(const Tree& tree, const T* X, int64_t n, int64_t d, int32_t* leaves) {
  for (int64_t i = 0; i < n; ++i) leaves[i] = leaf_of(tree, [&](int64_t f) { return static_cast<double>(X[i * d + f]); });
}

template void tree_leaves<float>(const Tree&, const float*, int64_t, int64_t, int32_t*);
template void tree_leaves<double>(const Tree&, const double*, int64_t, int64_t, int32_t*);

}  // namespace gpuml::detail

// The level-by-level tree builder's host side (levelwise.hpp): the trees' node arrays, which
// nodes may split and their feature draws; depth-first trees are assembled from the levels'
// records (tree_assembly.hpp).
#include "ensemble/levelwise.hpp"

#include <algorithm>
#include <cfloat>
#include <chrono>
#include <cstdio>
#include <numeric>
#include <string>
#include <utility>

#include "core/parallel.hpp"
#include "core/trace.hpp"
#include "ensemble/split_finder.hpp"
#include "gpuml/core/comm.hpp"
#include "gpuml/core/error.hpp"

namespace gpuml::detail {
namespace {

struct Active {
  int32_t tree;  // in the batch
  int32_t node;
  int64_t slot_begin, slot_count;
  int32_t depth;
  int32_t rows;  // LevelNode::rows: all ranks' in-bag rows, capped at INT32_MAX
  uint64_t seed;
};

// With GPUML_TRACE: what one depth (depth-first growth) or one round (best-first) cost, summed
// over the batches. Times are host clocks around the calls, as the totals' are: split_level hands
// its splits back in host vectors, so the device's work of the level is done when it returns (on
// CUDA its last copy synchronizes the stream); the batch's begin_trees, queued before the first
// level, is in depth 0's split_level time.
struct LevelCost {
  int64_t levels = 0;  // searches (a depth is searched once per batch of trees)
  int64_t nodes = 0;   // live nodes searched
  int64_t small = 0;   // of them, nodes of fewer than kSmallNode slots
  int64_t split = 0;   // nodes whose split was found and kept (best first: made when their tree's turn comes)
  int64_t slots = 0;   // the nodes' slots (this rank's in-bag rows): what the kernels loop over
  int64_t rows = 0;    // the nodes' in-bag rows (n_node_samples)
  double split_ms = 0.0, host_ms = 0.0;

  void add(const LevelCost& c) {
    levels += c.levels;
    nodes += c.nodes;
    small += c.small;
    split += c.split;
    slots += c.slots;
    rows += c.rows;
    split_ms += c.split_ms;
    host_ms += c.host_ms;
  }
};
// A node smaller than one block of the CUDA search (256 threads) leaves threads idle.
constexpr int64_t kSmallNode = 256;

// The costs per depth (or round): one line per level when there are at most 16 of them, else in
// bands (0-7, then four levels a band), and their sum.
void print_level_costs(const std::vector<LevelCost>& costs, bool rounds) {
  const int64_t count = static_cast<int64_t>(costs.size());
  if (count == 0) return;
  std::vector<std::pair<int64_t, int64_t>> bands;  // [first, last]
  if (count <= 16) {
    for (int64_t l = 0; l < count; ++l) bands.emplace_back(l, l);
  } else {
    bands.emplace_back(0, 7);
    for (int64_t l = 8; l < count; l += 4) bands.emplace_back(l, std::min(l + 3, count - 1));
  }
  double total_ms = 0.0;
  for (const LevelCost& c : costs) total_ms += c.split_ms;
  const char* what = rounds ? "round" : "depth";
  std::fprintf(stderr,
               "gpuml trace: levelwise trees by %s (split_level: the time waiting for the backend's level, its search, "
               "partition, copies and feature draws, and in depth-first growth its next level; host: making the children "
               "of best-first rounds (depth-first trees are assembled after the last level: the total's line)):\n"
               "gpuml trace:   %-7s %6s %10s %10s %10s %13s %13s %14s %6s %9s %9s\n",
               what, what, "levels", "nodes", "<256 slots", "split", "slots", "in-bag rows", "split_level ms", "%",
               "us/node", "host ms");
  auto line = [&](const std::string& label, const LevelCost& c) {
    const double share = total_ms > 0.0 ? 100.0 * c.split_ms / total_ms : 0.0;
    const double per_node = c.nodes > 0 ? 1e3 * c.split_ms / static_cast<double>(c.nodes) : 0.0;
    std::fprintf(stderr, "gpuml trace:   %-7s %6lld %10lld %9.1f%% %10lld %13lld %13lld %14.3f %5.1f%% %9.3f %9.3f\n",
                 label.c_str(), static_cast<long long>(c.levels), static_cast<long long>(c.nodes),
                 c.nodes > 0 ? 100.0 * static_cast<double>(c.small) / static_cast<double>(c.nodes) : 0.0,
                 static_cast<long long>(c.split), static_cast<long long>(c.slots), static_cast<long long>(c.rows), c.split_ms,
                 share, per_node, c.host_ms);
  };
  LevelCost all;
  for (const auto& [a, b] : bands) {
    LevelCost sum;
    for (int64_t l = a; l <= b; ++l) sum.add(costs[l]);
    line(a == b ? std::to_string(a) : std::to_string(a) + "-" + std::to_string(b), sum);
    all.add(sum);
  }
  line("all", all);
}

}  // namespace

TreeSlots in_bag_slots(const uint8_t* weights, int64_t n, int64_t trees, int threads) {
  TreeSlots slots;
  slots.offset.assign(static_cast<std::size_t>(trees + 1), 0);
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t t = 0; t < trees; ++t) {
    const uint8_t* w = weights + t * n;
    int64_t count = 0;
    for (int64_t i = 0; i < n; ++i) count += w[i] != 0 ? 1 : 0;
    slots.offset[t + 1] = count;
  }
  for (int64_t t = 0; t < trees; ++t) slots.offset[t + 1] += slots.offset[t];
  slots.rows.resize(static_cast<std::size_t>(slots.size()));
  slots.weights.resize(static_cast<std::size_t>(slots.size()));
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t t = 0; t < trees; ++t) {
    const uint8_t* w = weights + t * n;
    int64_t at = slots.offset[t];
    if (at == slots.offset[t + 1]) continue;
    // Without a branch per row (a bootstrap leaves ~37% of them out, at random): every row up to
    // the last in-bag one is written at `at`, which moves past the in-bag ones only, so nothing is
    // written past the tree's slots.
    int64_t last = n - 1;
    while (w[last] == 0) --last;
    for (int64_t i = 0; i <= last; ++i) {
      slots.rows[at] = static_cast<int32_t>(i);
      slots.weights[at] = w[i];
      at += w[i] != 0 ? 1 : 0;
    }
  }
  return slots;
}

void next_level(const std::vector<LevelNode>& level, const std::vector<double>& stats, const LevelSplit* splits,
                const double* left, const uint8_t* flags, int width, int threads, std::vector<int32_t>& at,
                std::vector<LevelNode>& next, std::vector<double>& next_stats) {
  const int64_t m = static_cast<int64_t>(level.size());
  const int k = width;
  at.assign(static_cast<std::size_t>(m + 1), 0);
  for (int64_t i = 0; i < m; ++i)
    at[i + 1] = at[i] + ((flags[i] & kLeftSearched) != 0 ? 1 : 0) + ((flags[i] & kRightSearched) != 0 ? 1 : 0);
  next.resize(static_cast<std::size_t>(at[m]));
  next_stats.resize(static_cast<std::size_t>(at[m]) * k);
#pragma omp parallel for num_threads(threads_for(threads, m * 8)) schedule(static)
  for (int64_t i = 0; i < m; ++i) {
    const LevelNode& p = level[i];
    const LevelSplit& s = splits[i];
    int64_t j = at[i];
    if ((flags[i] & kLeftSearched) != 0) {
      next[j] = child_node(p, s, 1);
      std::copy(left + i * k, left + (i + 1) * k, next_stats.begin() + j * k);
      ++j;
    }
    if ((flags[i] & kRightSearched) != 0) {
      next[j] = child_node(p, s, 2);
      for (int c = 0; c < k; ++c) next_stats[j * k + c] = sub_rn(stats[i * k + c], left[i * k + c]);
    }
  }
}

void grow_levels_by_search(LevelBackend& backend, std::vector<LevelNode> level, std::vector<double> stats,
                           const LevelRules& rules, const LevelGrowth& growth, int threads, const LevelSink& sink) {
  const int k = growth.width;
  std::vector<LevelSplit> splits;
  std::vector<double> left_stats, next_stats;
  std::vector<uint8_t> flags;
  std::vector<int32_t> at;
  std::vector<LevelNode> next;
  for (int64_t depth = 0; !level.empty(); ++depth) {
    backend.split_level(level, rules, splits, left_stats);
    const int64_t m = static_cast<int64_t>(level.size());
    flags.resize(static_cast<std::size_t>(m));
#pragma omp parallel for num_threads(threads_for(threads, m * 8)) schedule(static)
    for (int64_t i = 0; i < m; ++i) {
      const LevelSplit& s = splits[i];
      double right[kMaxLevelWidth];
      flags[i] = level_flags(growth, depth, s.found != 0, s.improvement, s.left_rows, s.right_rows, stats.data() + i * k,
                             left_stats.data() + i * k, right);
    }
    next_level(level, stats, splits.data(), left_stats.data(), flags.data(), k, threads, at, next, next_stats);
    sink(LevelRecords{depth, m, splits.data(), left_stats.data(), flags.data()});
    level.swap(next);
    stats.swap(next_stats);
  }
}

bool levelwise_eligible(const ForestRules& rules, bool has_sample_weight) {
  // With bootstrap, sample weights only choose the rows (the counts are integers).
  const bool integer_weights = !has_sample_weight || rules.bootstrap;
  // min_weight_fraction_leaf is checked by the host's split search only (grow_tree).
  return integer_weights && !rules.balanced_subsample && rules.tree.width <= kMaxLevelWidth && rules.tree.min_weight_fraction_leaf == 0.0;
}

std::vector<Tree> grow_trees_levelwise(LevelBackend& backend, int64_t n, int64_t d, const FeatureBins& bins,
                                       const LevelTargets& targets, const uint8_t* weights,
                                       const std::vector<uint64_t>& seeds, const TreeRules& rules, int threads,
                                       Comm* comm, WrittenForest* written) {
  const int k = rules.width;  // statistics per node
  GPUML_EXPECT(k == targets.width(), "grow_trees_levelwise: the rules' width does not match the targets");
  GPUML_EXPECT(bins.n_features() == d, "grow_trees_levelwise: the bins are of another number of features");
  LevelRules level_rules;
  level_rules.criterion = rules.criterion;
  level_rules.width = k;
  level_rules.max_features = rules.max_features;
  level_rules.min_samples_leaf = rules.min_samples_leaf;
  LevelGrowth growth;
  growth.criterion = rules.criterion;
  growth.width = k;
  growth.max_depth = rules.max_depth;
  growth.min_samples_split = rules.min_samples_split;
  growth.min_samples_leaf = rules.min_samples_leaf;
  growth.min_impurity_decrease = rules.min_impurity_decrease;

  const int64_t n_trees = static_cast<int64_t>(seeds.size());
  std::vector<Tree> trees(static_cast<std::size_t>(n_trees));
  // Trees per batch: the backend holds up to 10 bytes per row and tree (two slot lists).
  int64_t batch = std::max<int64_t>(1, std::min<int64_t>(n_trees, (int64_t(1) << 31) / std::max<int64_t>(10 * n, 1)));
  if (comm != nullptr) {  // the same batches on every rank (the smallest)
    const std::vector<int64_t> all = comm->allgather(batch);
    batch = *std::min_element(all.begin(), all.end());
  }
  const bool writes = written != nullptr && comm == nullptr && backend.writes_forests() && batch >= n_trees &&
                      rules.max_leaf_nodes < 0;
  std::vector<LevelNode> nodes;
  std::vector<LevelSplit> splits;
  std::vector<double> left_stats;
  // With GPUML_TRACE: the time in each part, summed over levels, and per depth (or round). Off,
  // no clock is read and nothing is counted (a branch per level).
  const bool tracing = Trace::enabled();
  using Clock = std::chrono::steady_clock;
  double host_ms = 0.0, device_ms = 0.0, assembly_ms = 0.0;
  auto now = [tracing] { return tracing ? Clock::now() : Clock::time_point(); };
  auto since = [tracing](Clock::time_point t) {
    return tracing ? std::chrono::duration<double, std::milli>(Clock::now() - t).count() : 0.0;
  };
  Clock::time_point t0 = now();
  int64_t levels = 0, searched = 0;
  std::vector<LevelCost> costs;  // per depth, or per round of best-first growth
  auto cost_of = [&](int64_t key) -> LevelCost& {
    if (static_cast<int64_t>(costs.size()) <= key) costs.resize(static_cast<std::size_t>(key + 1));
    return costs[key];
  };
  for (int64_t first = 0; first < n_trees; first += batch) {
    const int64_t count = std::min(batch, n_trees - first);
    const uint8_t* this_batch = weights + first * n;  // the batch's trees x n bytes
    std::vector<double> root_weight(static_cast<std::size_t>(count));
    std::vector<char> root_splits(static_cast<std::size_t>(count), 0);
    const TreeSlots slots = in_bag_slots(this_batch, n, count, threads);  // this rank's rows
    // Each root's statistics and row count (k + 1 values per tree), summed over the ranks: over
    // each tree's slots (its in-bag rows). The sums are of integers (weights, and targets in units
    // of a power of two below 2^53: quantize_targets), so integer sums give grow_tree's doubles.
    std::vector<double> roots(static_cast<std::size_t>(count * (k + 1)), 0.0);
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t t = 0; t < count; ++t) {
      double* root = roots.data() + t * (k + 1);
      const int64_t begin = slots.offset[t], end = slots.offset[t + 1];
      if (targets.regression()) {
        int64_t w_sum = 0, y_sum = 0, q_sum = 0;  // in registers (units may alias a vector's int64s)
        for (int64_t s = begin; s < end; ++s) {
          const int64_t i = slots.rows[s], w = slots.weights[s];
          w_sum += w;
          y_sum += w * targets.units[2 * i];
          q_sum += w * targets.units[2 * i + 1];
        }
        root[0] = static_cast<double>(w_sum);
        root[1] = static_cast<double>(y_sum) * targets.unit[0];
        root[2] = static_cast<double>(q_sum) * targets.unit[1];
      } else {
        std::vector<int64_t> sums(static_cast<std::size_t>(k), 0);  // the thread's own (not next to another tree's)
        for (int64_t s = begin; s < end; ++s) sums[targets.labels[slots.rows[s]]] += slots.weights[s];
        for (int c = 0; c < k; ++c) root[c] = static_cast<double>(sums[c]);
      }
      root[k] = static_cast<double>(end - begin);
    }
    if (comm != nullptr) comm->allreduce_sum(roots.data(), static_cast<int64_t>(roots.size()));  // exact: integers
    for (int64_t t = 0; t < count; ++t) {
      const double* root = roots.data() + t * (k + 1);
      const int64_t rows = static_cast<int64_t>(root[k]);
      Tree& tree = trees[first + t];
      const double impurity = node_impurity(rules.criterion, root, k);
      if (!writes) reserve_nodes(tree, rules, rows);  // no array moves while the tree grows (they were 10% of the host's work)
      new_node(tree, k, root, impurity, rows);
      root_weight[t] = targets.regression() ? root[0] : std::accumulate(root, root + k, 0.0);
      root_splits[t] = !stays_leaf(rules, 0, rows, impurity);
    }
    std::vector<Active> level;
    for (int64_t t = 0; t < count; ++t)
      if (root_splits[t])
        level.push_back(Active{static_cast<int32_t>(t), 0, slots.offset[t], slots.offset[t + 1] - slots.offset[t], 0,
                               capped_rows(trees[first + t].rows[0]), seeds[first + t]});
    backend.begin_trees(slots);
    host_ms += since(t0);
    t0 = now();
    // Finds the best split of each node of `level` (and partitions its slots); with tracing, its
    // costs go to costs[key] (the level's depth, or the round).
    auto search = [&](const std::vector<Active>& level, int64_t key) {
      const int64_t m = static_cast<int64_t>(level.size());
      ++levels;
      searched += m;
      t0 = now();
      nodes.resize(static_cast<std::size_t>(m));
#pragma omp parallel for num_threads(threads_for(threads, m * 8)) schedule(static)
      for (int64_t i = 0; i < m; ++i) {
        const Active& a = level[i];
        nodes[i] = LevelNode{a.tree, a.rows, a.slot_begin, a.slot_count, root_weight[a.tree], a.seed};
      }
      backend.split_level(nodes, level_rules, splits, left_stats);
      const double device = since(t0);
      device_ms += device;
      t0 = now();
      if (tracing) {
        LevelCost& c = cost_of(key);
        ++c.levels;
        c.nodes += m;
        c.split_ms += device;
        int64_t small = 0, slots = 0, rows = 0;
#pragma omp parallel for num_threads(threads) schedule(static) reduction(+ : small, slots, rows)
        for (int64_t i = 0; i < m; ++i) {
          const Active& a = level[i];
          small += a.slot_count < kSmallNode ? 1 : 0;
          slots += a.slot_count;
          rows += trees[first + a.tree].rows[a.node];
        }
        c.small += small;
        c.slots += slots;
        c.rows += rows;
      }
    };
    auto splits_node = [&](const LevelSplit& s) {
      return s.found && !(s.improvement + DBL_EPSILON < rules.min_impurity_decrease);
    };
    // Makes node's split s in its tree (left: the left side's statistics; right: k doubles of
    // scratch, set to the right side's): its two children. Returns their ids.
    auto add_children = [&](Tree& tree, int32_t node, const LevelSplit& s, const double* left, double* right) {
      const double* stats = tree.stats.data() + static_cast<int64_t>(node) * k;  // read before the arrays grow
      for (int c = 0; c < k; ++c) right[c] = stats[c] - left[c];
      const int32_t l = new_node(tree, k, left, stats_impurity(rules.criterion, left, k), s.left_rows);
      const int32_t r = new_node(tree, k, right, stats_impurity(rules.criterion, right, k), s.right_rows);
      set_split(tree, bins, node, s.feature, s.bin, s.next_bin, s.improvement, l, r);
      return std::pair<int32_t, int32_t>(l, r);
    };
    // add_children, and those of the children the flags (level_flags') name appended to next
    // (left, then right), for best-first rounds.
    auto make_children = [&](Tree& tree, const Active& a, const LevelSplit& s, const double* left, uint8_t flags,
                             double* right, std::vector<Active>& next) {
      const auto [l, r] = add_children(tree, a.node, s, left, right);
      const LevelNode parent{a.tree, a.rows, a.slot_begin, a.slot_count, 0.0, a.seed};
      for (const int side : {1, 2}) {
        if ((flags & (side == 1 ? kLeftSearched : kRightSearched)) == 0) continue;
        const LevelNode c = child_node(parent, s, side);
        next.push_back(Active{a.tree, side == 1 ? l : r, c.slot_begin, c.slot_count, a.depth + 1, c.rows, c.seed});
      }
    };
    if (rules.max_leaf_nodes < 0) {
      // Depth first: the backend grows the levels (every node of a level that may split does; the
      // children are the next level) and makes the trees from their records (tree_assembly.hpp),
      // in grow_tree's order.
      std::vector<LevelNode> roots(level.size());
      std::vector<double> root_stats(level.size() * static_cast<std::size_t>(k));
      for (std::size_t i = 0; i < level.size(); ++i) {
        const Active& a = level[i];
        roots[i] = LevelNode{a.tree, a.rows, a.slot_begin, a.slot_count, root_weight[a.tree], a.seed};
        const double* stats = trees[first + a.tree].stats.data();
        std::copy(stats, stats + k, root_stats.begin() + static_cast<int64_t>(i) * k);
      }
      level.clear();
      LevelTally tally;
      if (tracing)
        tally = [&](int64_t depth, const LevelNode* level_nodes, const uint8_t* flags, int64_t m) {
          const double device = since(t0);
          device_ms += device;
          ++levels;
          searched += m;
          LevelCost& c = cost_of(depth);
          ++c.levels;
          c.nodes += m;
          c.split_ms += device;
          for (int64_t i = 0; i < m; ++i) {
            c.small += level_nodes[i].slot_count < kSmallNode ? 1 : 0;
            c.slots += level_nodes[i].slot_count;
            c.rows += level_nodes[i].rows;
            c.split += (flags[i] & kSplitMade) != 0 ? 1 : 0;
          }
          t0 = now();
        };
      host_ms += since(t0);
      t0 = now();
      if (writes)
        backend.grow_forest(roots, root_stats, level_rules, growth, bins, trees.data(), n_trees, !targets.regression(), tally,
                            threads, *written);
      else
        backend.grow_trees(roots, root_stats, level_rules, growth, bins, trees.data() + first, tally, threads);
      if (tracing) {
        const double assembly = since(t0);
        assembly_ms += assembly;
        host_ms += assembly;
      }
    } else {
      // Best first (grow_tree's max_leaf_nodes): a node's split is searched when the node is
      // made; each round, every tree splits its waiting node of the largest improvement (ties:
      // the older node), and the new children are searched together in the next round. Node ids
      // come out in grow_tree's order (children numbered when their parent splits).
      struct Waiting {
        double improvement;
        int32_t node;
        Active active;
        LevelSplit split;
        std::vector<double> left;
      };
      auto later = [](const Waiting& a, const Waiting& b) {
        return a.improvement < b.improvement || (a.improvement == b.improvement && a.node > b.node);
      };
      std::vector<std::vector<Waiting>> waiting(static_cast<std::size_t>(count));
      std::vector<int64_t> leaves(static_cast<std::size_t>(count), 1);
      std::vector<double> right(static_cast<std::size_t>(k));
      for (int64_t round_index = 0;; ++round_index) {
        if (!level.empty()) {
          search(level, round_index);
          for (std::size_t i = 0; i < level.size(); ++i) {
            if (!splits_node(splits[i])) continue;
            if (tracing) ++cost_of(round_index).split;
            std::vector<Waiting>& heap = waiting[level[i].tree];
            heap.push_back(Waiting{splits[i].improvement, level[i].node, level[i], splits[i],
                                   std::vector<double>(left_stats.begin() + static_cast<int64_t>(i) * k,
                                                       left_stats.begin() + static_cast<int64_t>(i + 1) * k)});
            std::push_heap(heap.begin(), heap.end(), later);
          }
        }
        std::vector<Active> next;
        bool any = false;
        for (int64_t t = 0; t < count; ++t) {
          std::vector<Waiting>& heap = waiting[t];
          if (heap.empty() || leaves[t] >= rules.max_leaf_nodes) continue;
          std::pop_heap(heap.begin(), heap.end(), later);
          const Waiting best = std::move(heap.back());
          heap.pop_back();
          Tree& tree = trees[first + t];
          const LevelSplit& s = best.split;
          const uint8_t flags = level_flags(growth, best.active.depth, true, s.improvement, s.left_rows, s.right_rows,
                                            tree.stats.data() + static_cast<int64_t>(best.active.node) * k, best.left.data(),
                                            right.data());
          make_children(tree, best.active, s, best.left.data(), flags, right.data(), next);
          ++leaves[t];
          any = true;
        }
        const double host = since(t0);
        host_ms += host;
        if (tracing) cost_of(round_index).host_ms += host;
        if (!any && next.empty()) break;
        level = std::move(next);
        t0 = now();
      }
    }
    t0 = now();
  }
  host_ms += since(t0);
  if (tracing) {
    std::fprintf(stderr,
                 "gpuml trace: levelwise trees: %lld levels, %lld node searches: split_level %.3f ms, host tree work "
                 "%.3f ms (of it, the trees assembled from the levels: %.3f ms)\n",
                 static_cast<long long>(levels), static_cast<long long>(searched), device_ms, host_ms, assembly_ms);
    print_level_costs(costs, rules.max_leaf_nodes >= 0);
  }
  if (writes) trees.clear();
  return trees;
}

}  // namespace gpuml::detail

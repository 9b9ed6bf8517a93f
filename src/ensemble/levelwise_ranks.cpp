// split_level_over_ranks (levelwise.hpp): a level's split search over the ranks' rows, on a
// backend's per-rank primitives (the host's loops, or the CUDA backend's kernels), with the
// collectives and the choice of splits here, written once.
#include <algorithm>
#include <vector>

#include "ensemble/levelwise.hpp"
#include "ensemble/split_finder.hpp"
#include "core/parallel.hpp"
#include "gpuml/core/comm.hpp"

namespace gpuml::detail {
namespace {

// Values per allreduce of a group's histograms, at most (a bound on the memory of a level).
constexpr int64_t kGroupValues = int64_t{1} << 23;

// A node's evaluated features (in draw order) with their occupied bins and row counts.
struct Drawn {
  int64_t taken = 0, informative = 0;
  std::vector<int32_t> features;
  std::vector<std::vector<int32_t>> bins;    // per feature: the occupied bins, ascending
  std::vector<std::vector<int64_t>> counts;  // per feature: their rows over all ranks
};

void split_group(LevelPrimitives& primitives, Comm& comm, const std::vector<LevelNode>& all_nodes,
                 const std::vector<int32_t>& order, const LevelRules& rules, int64_t d, const std::vector<int32_t>& bins,
                 int k, int threads, int64_t first, int64_t end, std::vector<LevelSplit>& splits,
                 std::vector<double>& left_stats) {
  const int64_t m = end - first;
  const std::vector<LevelNode> nodes(all_nodes.begin() + first, all_nodes.begin() + end);
  std::vector<Drawn> drawn(static_cast<std::size_t>(m));
  // 1. Rounds of row counts until every node has its features.
  std::vector<int64_t> pending(static_cast<std::size_t>(m));
  for (int64_t i = 0; i < m; ++i) pending[i] = i;
  std::vector<int32_t> counts;
  while (!pending.empty()) {
    LevelPairs pairs;
    pairs.offset.assign(1, 0);
    for (int64_t i : pending) {
      Drawn& dr = drawn[i];
      const int64_t want = std::min(rules.max_features - dr.informative, d - dr.taken);
      for (int64_t j = 0; j < want; ++j) {
        const int32_t f = order[(first + i) * d + dr.taken++];
        dr.features.push_back(f);
        pairs.node.push_back(static_cast<int32_t>(i));
        pairs.feature.push_back(f);
        pairs.offset.push_back(pairs.offset.back() + bins[f]);
      }
    }
    counts.assign(static_cast<std::size_t>(pairs.offset.back()), 0);
    primitives.count_bins(nodes, pairs, counts);
    comm.allreduce_sum(counts.data(), static_cast<int64_t>(counts.size()));
    std::vector<int64_t> still;
    for (int64_t p = 0; p < pairs.size(); ++p) {
      Drawn& dr = drawn[pairs.node[p]];
      std::vector<int32_t> occupied;
      std::vector<int64_t> rows;
      for (int64_t b = pairs.offset[p]; b < pairs.offset[p + 1]; ++b)
        if (counts[b] > 0) occupied.push_back(static_cast<int32_t>(b - pairs.offset[p])), rows.push_back(counts[b]);
      dr.informative += occupied.size() > 1;
      dr.bins.push_back(std::move(occupied));
      dr.counts.push_back(std::move(rows));
    }
    for (int64_t i : pending)
      if (drawn[i].informative < rules.max_features && drawn[i].taken < d) still.push_back(i);
    pending = std::move(still);
  }

  // 2. The statistics of the occupied bins, summed over the ranks: every (node, feature) pair's
  // occupied bins are its cells, numbered in order.
  LevelPairs pairs;
  pairs.offset.assign(1, 0);
  std::vector<int32_t> cell_of;
  for (int64_t i = 0; i < m; ++i) {
    const Drawn& dr = drawn[i];
    for (std::size_t j = 0; j < dr.features.size(); ++j) {
      pairs.node.push_back(static_cast<int32_t>(i));
      pairs.feature.push_back(dr.features[j]);
      pairs.offset.push_back(pairs.offset.back() + static_cast<int64_t>(dr.bins[j].size()));
      const std::size_t at = cell_of.size();
      cell_of.resize(at + 256, -1);
      for (std::size_t b = 0; b < dr.bins[j].size(); ++b) cell_of[at + dr.bins[j][b]] = static_cast<int32_t>(b);
    }
  }
  std::vector<double> stats(static_cast<std::size_t>(pairs.offset.back() * k), 0.0);
  primitives.bin_stats(nodes, pairs, cell_of, stats);
  comm.allreduce_sum(stats.data(), static_cast<int64_t>(stats.size()));

  // The best split of each node (the pairs of node i are consecutive, from its first).
  std::vector<int64_t> first_pair(static_cast<std::size_t>(m + 1), 0);
  for (int64_t i = 0; i < m; ++i) first_pair[i + 1] = first_pair[i] + static_cast<int64_t>(drawn[i].features.size());
  std::vector<LevelSplit> group_splits(static_cast<std::size_t>(m));
#pragma omp parallel for num_threads(threads) schedule(dynamic)
  for (int64_t i = 0; i < m; ++i) {
    const Drawn& dr = drawn[i];
    NodeHistogram h;
    h.width = k;
    h.n_features = static_cast<int64_t>(dr.features.size());
    h.max_bins = 1;
    for (const auto& b : dr.bins) h.max_bins = std::max(h.max_bins, static_cast<int>(b.size()));
    const int stride = h.max_bins;
    h.stats.assign(static_cast<std::size_t>(h.n_features * stride * k), 0.0);
    h.rows.assign(static_cast<std::size_t>(h.n_features * stride), 0);
    h.bin_ids.assign(static_cast<std::size_t>(h.n_features * stride), 0);
    for (int64_t j = 0; j < h.n_features; ++j) {
      const int occupied = static_cast<int>(dr.bins[j].size());
      h.bins.push_back(occupied);
      const double* at = stats.data() + pairs.offset[first_pair[i] + j] * k;
      std::copy_n(at, occupied * k, h.stats.begin() + j * stride * k);
      std::copy(dr.counts[j].begin(), dr.counts[j].end(), h.rows.begin() + j * stride);
      std::copy(dr.bins[j].begin(), dr.bins[j].end(), h.bin_ids.begin() + j * stride);
    }
    SplitRules split_rules;
    split_rules.criterion = rules.criterion;
    split_rules.min_samples_leaf = rules.min_samples_leaf;
    split_rules.root_weight = nodes[i].root_weight;
    const Split split = best_split(h, split_rules);
    if (!split.found) continue;
    LevelSplit& out = group_splits[i];
    out.found = 1;
    out.feature = dr.features[split.feature];
    out.bin = split.bin;
    out.next_bin = split.next_bin;
    out.improvement = split.improvement;
    out.left_rows = split.left_rows;
    out.right_rows = split.right_rows;
    std::copy(split.left_stats.begin(), split.left_stats.end(), left_stats.begin() + (first + i) * k);
  }
  primitives.partition(nodes, group_splits);  // this rank's slots
  std::copy(group_splits.begin(), group_splits.end(), splits.begin() + first);
}

}  // namespace

std::vector<int32_t> level_feature_orders(const std::vector<LevelNode>& nodes, int64_t d, int threads) {
  const int64_t m = static_cast<int64_t>(nodes.size());
  std::vector<int32_t> order(static_cast<std::size_t>(m * d));
  constexpr int64_t kBlock = 64;  // feature_orders draws for several seeds at once
#pragma omp parallel for num_threads(threads_for(threads, m * d * 32)) schedule(static)
  for (int64_t b = 0; b < m; b += kBlock) {
    const int64_t e = std::min(m, b + kBlock);
    uint64_t seeds[kBlock];
    for (int64_t i = b; i < e; ++i) seeds[i - b] = nodes[i].seed;
    feature_orders(seeds, e - b, d, order.data() + b * d);
  }
  return order;
}

void split_level_over_ranks(LevelPrimitives& primitives, Comm& comm, const std::vector<LevelNode>& nodes,
                            const LevelRules& rules, int64_t d, const std::vector<int32_t>& bins, int width, int threads,
                            std::vector<LevelSplit>& splits, std::vector<double>& left_stats) {
  const int64_t m = static_cast<int64_t>(nodes.size());
  const std::vector<int32_t> order = level_feature_orders(nodes, d, threads);
  splits.assign(static_cast<std::size_t>(m), LevelSplit{});
  left_stats.assign(static_cast<std::size_t>(m * width), 0.0);
  int32_t max_bins = 1;
  for (int32_t b : bins) max_bins = std::max(max_bins, b);
  // Groups of nodes whose histograms (at most max_features features of max_bins bins) fit
  // kGroupValues: the same groups on every rank (nodes, rules and bins are the same).
  const int64_t per_node = std::min<int64_t>(rules.max_features, d) * max_bins * (width + 1);
  const int64_t group = std::max<int64_t>(1, kGroupValues / std::max<int64_t>(per_node, 1));
  for (int64_t first = 0; first < m; first += group)
    split_group(primitives, comm, nodes, order, rules, d, bins, width, threads, first, std::min(m, first + group), splits,
                left_stats);
}

}  // namespace gpuml::detail

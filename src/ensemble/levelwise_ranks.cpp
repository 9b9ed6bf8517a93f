// split_level_over_ranks (levelwise.hpp): a level's split search over the ranks' rows, on a
// backend's per-rank primitives (the host's loops, or the CUDA backend's kernels), with the
// collectives and the choice of splits here, written once.
#include <algorithm>
#include <cstring>
#include <numeric>
#include <vector>

#include "ensemble/levelwise.hpp"
#include "ensemble/split_finder.hpp"
#include "core/parallel.hpp"
#include "gpuml/core/comm.hpp"

namespace gpuml::detail {
namespace {

// Values per allreduce of a group's histograms, at most (a bound on the memory of a level).
constexpr int64_t kGroupValues = int64_t{1} << 23;
// Bytes of small nodes' rows gathered at once (all ranks' codes and statistics), at most.
constexpr int64_t kGatherBytes = int64_t{1} << 28;

// A node's evaluated features (in draw order) with their occupied bins and row counts.
struct Drawn {
  int64_t taken = 0, informative = 0;
  std::vector<int32_t> features;
  std::vector<std::vector<int32_t>> bins;    // per feature: the occupied bins, ascending
  std::vector<std::vector<int64_t>> counts;  // per feature: their rows over all ranks
};

// The best split of a node's histograms as a LevelSplit (found = 0: none), its left side's
// statistics written to left. features: the histograms' features in X.
LevelSplit level_split_of(const NodeHistogram& h, const LevelRules& rules, double root_weight,
                          const std::vector<int32_t>& features, double* left) {
  SplitRules split_rules;
  split_rules.criterion = rules.criterion;
  split_rules.min_samples_leaf = rules.min_samples_leaf;
  split_rules.root_weight = root_weight;
  const Split split = best_split(h, split_rules);
  LevelSplit out;
  if (!split.found) return out;
  out.found = 1;
  out.feature = features[split.feature];
  out.bin = split.bin;
  out.next_bin = split.next_bin;
  out.improvement = split.improvement;
  out.left_rows = split.left_rows;
  out.right_rows = split.right_rows;
  std::copy(split.left_stats.begin(), split.left_stats.end(), left);
  return out;
}

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
  std::vector<int64_t> pair_begin;  // each pending node's first pair in the round
  while (!pending.empty()) {
    LevelPairs pairs;
    pairs.offset.assign(1, 0);
    pair_begin.clear();
    for (int64_t i : pending) {
      Drawn& dr = drawn[i];
      pair_begin.push_back(pairs.size());
      const int64_t want = std::min(rules.max_features - dr.informative, d - dr.taken);
      for (int64_t j = 0; j < want; ++j) {
        const int32_t f = order[(first + i) * d + dr.taken++];
        dr.features.push_back(f);
        pairs.node.push_back(static_cast<int32_t>(i));
        pairs.feature.push_back(f);
        pairs.offset.push_back(pairs.offset.back() + bins[f]);
      }
    }
    pair_begin.push_back(pairs.size());
    counts.assign(static_cast<std::size_t>(pairs.offset.back()), 0);
    primitives.count_bins(nodes, pairs, counts);
    comm.allreduce_sum(counts.data(), static_cast<int64_t>(counts.size()));
    // Each node's occupied bins and their rows, a node a thread (its pairs are consecutive).
    const int64_t waiting = static_cast<int64_t>(pending.size());
#pragma omp parallel for num_threads(threads_for(threads, pairs.offset.back())) schedule(dynamic, 64)
    for (int64_t w = 0; w < waiting; ++w) {
      Drawn& dr = drawn[pending[w]];
      for (int64_t p = pair_begin[w]; p < pair_begin[w + 1]; ++p) {
        std::vector<int32_t> occupied;
        std::vector<int64_t> rows;
        for (int64_t b = pairs.offset[p]; b < pairs.offset[p + 1]; ++b)
          if (counts[b] > 0) occupied.push_back(static_cast<int32_t>(b - pairs.offset[p])), rows.push_back(counts[b]);
        dr.informative += occupied.size() > 1;
        dr.bins.push_back(std::move(occupied));
        dr.counts.push_back(std::move(rows));
      }
    }
    std::vector<int64_t> still;
    for (int64_t i : pending)
      if (drawn[i].informative < rules.max_features && drawn[i].taken < d) still.push_back(i);
    pending = std::move(still);
  }

  // 2. The statistics of the occupied bins, summed over the ranks: every (node, feature) pair's
  // occupied bins are its cells, numbered in order.
  LevelPairs pairs;
  pairs.offset.assign(1, 0);
  for (int64_t i = 0; i < m; ++i) {
    const Drawn& dr = drawn[i];
    for (std::size_t j = 0; j < dr.features.size(); ++j) {
      pairs.node.push_back(static_cast<int32_t>(i));
      pairs.feature.push_back(dr.features[j]);
      pairs.offset.push_back(pairs.offset.back() + static_cast<int64_t>(dr.bins[j].size()));
    }
  }
  // Each pair's 256 entries: its occupied bins' cell numbers (-1 elsewhere), a node a thread.
  std::vector<int32_t> cell_of(static_cast<std::size_t>(pairs.size() * 256));
  std::vector<int64_t> node_pair(static_cast<std::size_t>(m + 1), 0);
  for (int64_t i = 0; i < m; ++i) node_pair[i + 1] = node_pair[i] + static_cast<int64_t>(drawn[i].features.size());
#pragma omp parallel for num_threads(threads_for(threads, pairs.size() * 256)) schedule(dynamic, 64)
  for (int64_t i = 0; i < m; ++i) {
    const Drawn& dr = drawn[i];
    for (std::size_t j = 0; j < dr.features.size(); ++j) {
      int32_t* cells = cell_of.data() + (node_pair[i] + static_cast<int64_t>(j)) * 256;
      std::fill(cells, cells + 256, -1);
      for (std::size_t b = 0; b < dr.bins[j].size(); ++b) cells[dr.bins[j][b]] = static_cast<int32_t>(b);
    }
  }
  std::vector<double> stats(static_cast<std::size_t>(pairs.offset.back() * k), 0.0);
  primitives.bin_stats(nodes, pairs, cell_of, stats);
  comm.allreduce_sum(stats.data(), static_cast<int64_t>(stats.size()));

  // The best split of each node (the pairs of node i are consecutive, from node_pair[i]).
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
      const double* at = stats.data() + pairs.offset[node_pair[i] + j] * k;
      std::copy_n(at, occupied * k, h.stats.begin() + j * stride * k);
      std::copy(dr.counts[j].begin(), dr.counts[j].end(), h.rows.begin() + j * stride);
      std::copy(dr.bins[j].begin(), dr.bins[j].end(), h.bin_ids.begin() + j * stride);
    }
    group_splits[i] = level_split_of(h, rules, nodes[i].root_weight, dr.features, left_stats.data() + (first + i) * k);
  }
  primitives.partition(nodes, group_splits);  // this rank's slots
  std::copy(group_splits.begin(), group_splits.end(), splits.begin() + first);
}

// A level's small nodes (the same list on every rank), searched from their rows: each rank's
// slots of them, codes and statistics, gathered to every rank in rank order, then each node as
// grow_tree searches a compact node (append_compact_feature; the sums are exact, so the rows'
// order does not matter). Then each rank partitions its own slots.
void split_small_nodes(LevelPrimitives& primitives, Comm& comm, const std::vector<LevelNode>& all_nodes,
                       const std::vector<int64_t>& small, const std::vector<int32_t>& order, const LevelRules& rules,
                       int64_t d, int k, int threads, std::vector<LevelSplit>& splits, std::vector<double>& left_stats) {
  const int64_t m = static_cast<int64_t>(small.size());
  std::vector<LevelNode> nodes(static_cast<std::size_t>(m));
  for (int64_t i = 0; i < m; ++i) nodes[i] = all_nodes[small[i]];
  // This rank's rows of the nodes, packed as int64 words (the communicators' types): per node its
  // slot count, then the statistics' bits, then the codes in whole words.
  std::vector<uint8_t> codes;
  std::vector<double> stats;
  primitives.gather_rows(nodes, codes, stats);
  const int64_t code_words = (static_cast<int64_t>(codes.size()) + 7) / 8;
  std::vector<int64_t> packed(static_cast<std::size_t>(m + static_cast<int64_t>(stats.size()) + code_words), 0);
  for (int64_t i = 0; i < m; ++i) packed[i] = nodes[i].slot_count;
  if (!stats.empty()) std::memcpy(packed.data() + m, stats.data(), stats.size() * sizeof(double));  // (a rank of no such rows
  if (!codes.empty()) std::memcpy(packed.data() + m + static_cast<int64_t>(stats.size()), codes.data(), codes.size());  // has none)
  const std::vector<int64_t> sizes = comm.allgather(static_cast<int64_t>(packed.size()));
  std::vector<int64_t> all(static_cast<std::size_t>(std::accumulate(sizes.begin(), sizes.end(), int64_t{0})));
  comm.allgatherv(packed.data(), static_cast<int64_t>(packed.size()), all.data(), sizes.data(), DType::int64);
  // Each rank's part unpacked (its statistics copied back into doubles): rank r's slots of node
  // i are its slots [first[r][i], first[r][i] + count) of its codes and statistics.
  const int ranks = comm.size();
  std::vector<const int64_t*> rank_counts(static_cast<std::size_t>(ranks));
  std::vector<std::vector<double>> rank_stats(static_cast<std::size_t>(ranks));
  std::vector<const uint8_t*> rank_codes(static_cast<std::size_t>(ranks));
  std::vector<std::vector<int64_t>> first(static_cast<std::size_t>(ranks), std::vector<int64_t>(static_cast<std::size_t>(m + 1), 0));
  int64_t at = 0;
  for (int r = 0; r < ranks; ++r) {
    rank_counts[r] = all.data() + at;
    for (int64_t i = 0; i < m; ++i) first[r][i + 1] = first[r][i] + rank_counts[r][i];
    const int64_t slots = first[r][m];
    const int64_t* words = all.data() + at + m;
    rank_stats[r].resize(static_cast<std::size_t>(slots * k));
    if (slots > 0) std::memcpy(rank_stats[r].data(), words, static_cast<std::size_t>(slots * k) * sizeof(double));
    rank_codes[r] = reinterpret_cast<const uint8_t*>(words + slots * k);  // bytes may alias any words
    at += sizes[r];
  }
  std::vector<LevelSplit> found(static_cast<std::size_t>(m));
#pragma omp parallel num_threads(threads_for(threads, m * 64))
  {
    std::vector<uint8_t> node_codes, column;
    std::vector<double> node_stats;
    NodeHistogram h;
    h.width = k;
#pragma omp for schedule(dynamic, 16)
    for (int64_t i = 0; i < m; ++i) {
      // The node's rows from every rank, in rank order.
      int64_t count = 0;
      for (int r = 0; r < ranks; ++r) count += rank_counts[r][i];
      node_codes.resize(static_cast<std::size_t>(count * d));
      node_stats.resize(static_cast<std::size_t>(count * k));
      int64_t row = 0;
      for (int r = 0; r < ranks; ++r) {
        const int64_t c = rank_counts[r][i], from = first[r][i];
        std::copy_n(rank_codes[r] + from * d, c * d, node_codes.begin() + row * d);
        std::copy_n(rank_stats[r].begin() + from * k, c * k, node_stats.begin() + row * k);
        row += c;
      }
      // Features in the node's draw order until max_features are informative (split_group's rule).
      h.max_bins = static_cast<int>(std::max<int64_t>(count, 1));
      h.n_features = 0;
      h.bins.clear();
      h.stats.clear();
      h.rows.clear();
      h.bin_ids.clear();
      column.resize(static_cast<std::size_t>(count));
      std::vector<int32_t> drawn;
      int64_t informative = 0;
      const int32_t* node_order = order.data() + small[i] * d;
      for (int64_t j = 0; j < d && informative < rules.max_features; ++j) {
        const int32_t f = node_order[j];
        for (int64_t r = 0; r < count; ++r) column[r] = node_codes[r * d + f];
        informative += append_compact_feature(h, column.data(), node_stats.data(), count) > 1;
        drawn.push_back(f);
      }
      found[i] = level_split_of(h, rules, nodes[i].root_weight, drawn, left_stats.data() + small[i] * k);
    }
  }
  primitives.partition(nodes, found);  // this rank's slots
  for (int64_t i = 0; i < m; ++i) splits[small[i]] = found[i];
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
  // A node travels as rows when its rows' codes and statistics (d bytes and width doubles a row)
  // take fewer bytes than one round of its row counts (max_features x max_bins int32): most nodes
  // of a deep tree.
  std::vector<int64_t> small;
  std::vector<LevelNode> large;
  std::vector<int64_t> large_index;
  for (int64_t i = 0; i < m; ++i) {
    const int64_t rows = nodes[i].rows;
    if (primitives.gathers_rows() && rows * (d + 8 * width) <= 4 * std::min<int64_t>(rules.max_features, d) * max_bins)
      small.push_back(i);
    else
      large_index.push_back(i), large.push_back(nodes[i]);
  }
  // In groups of at most kGatherBytes of all ranks' rows (every rank receives all of them): the
  // same groups on every rank (the nodes' rows are all ranks').
  for (std::size_t first = 0; first < small.size();) {
    std::size_t end = first;
    int64_t bytes = 0;
    while (end < small.size() && (end == first || bytes + nodes[small[end]].rows * (d + 8 * width) <= kGatherBytes))
      bytes += nodes[small[end++]].rows * (d + 8 * width);
    const std::vector<int64_t> group(small.begin() + static_cast<std::ptrdiff_t>(first), small.begin() + static_cast<std::ptrdiff_t>(end));
    split_small_nodes(primitives, comm, nodes, group, order, rules, d, width, threads, splits, left_stats);
    first = end;
  }
  if (large.empty()) return;
  const bool all_large = static_cast<int64_t>(large.size()) == m;
  std::vector<int32_t> large_order;
  if (!all_large) {
    large_order.resize(large.size() * static_cast<std::size_t>(d));
    for (std::size_t i = 0; i < large.size(); ++i)
      std::copy_n(order.begin() + large_index[i] * d, d, large_order.begin() + static_cast<int64_t>(i) * d);
  }
  std::vector<LevelSplit> large_splits(large.size());
  std::vector<double> large_left(large.size() * static_cast<std::size_t>(width), 0.0);
  const int64_t count = static_cast<int64_t>(large.size());
  const int64_t group = std::max<int64_t>(1, kGroupValues / std::max<int64_t>(per_node, 1));
  for (int64_t first = 0; first < count; first += group)
    split_group(primitives, comm, all_large ? nodes : large, all_large ? order : large_order, rules, d, bins, width, threads,
                first, std::min(count, first + group), all_large ? splits : large_splits, all_large ? left_stats : large_left);
  if (all_large) return;
  for (int64_t i = 0; i < count; ++i) {
    splits[large_index[i]] = large_splits[i];
    std::copy_n(large_left.begin() + i * width, width, left_stats.begin() + large_index[i] * width);
  }
}

}  // namespace gpuml::detail

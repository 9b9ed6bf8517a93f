// The host LevelBackend (levelwise.hpp) on split_finder's best_split: the reference the CUDA
// backend's splits are checked against, and the CPU backend of distributed fits, where each rank
// holds its own rows and every level's histograms are summed over the ranks.
//
// A level is searched in groups of nodes (the same groups on every rank), each in two steps:
//  1. Row counts per bin of each node's drawn features, summed over the ranks, in rounds: a
//     node takes the next max_features - (informative so far) features of its draw order until
//     max_features of them are informative (more than one occupied bin over all rows) or none is
//     left, the features grow_tree evaluates. Counts alone decide this, so the rounds are cheap.
//  2. The statistics of the occupied bins only (compact histograms: a node's cost follows its
//     rows, not 256 bins per feature), summed over the ranks; then best_split, and each rank
//     partitions its own slots.
// Every sum is exact (integer weights; regression targets in integer units, quantize_targets),
// so the ranks' partial sums add up to one process's bits, and a compact histogram gives
// best_split's result on the full one (empty bins add nothing and are skipped).
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <memory>

#include "ensemble/binning.hpp"
#include "ensemble/levelwise.hpp"
#include "ensemble/split_finder.hpp"
#include "gpuml/core/comm.hpp"
#include "gpuml/core/error.hpp"

namespace gpuml::detail {
namespace {

// Values per allreduce of a group's histograms, at most (a bound on the memory of a level).
constexpr int64_t kGroupValues = int64_t{1} << 23;

class CpuLevelBackend final : public LevelBackend {
 public:
  CpuLevelBackend(Comm* comm, int threads) : threads_(std::max(threads, 1)) {
    if (comm == nullptr) local_ = Comm::local();
    comm_ = comm != nullptr ? comm : local_.get();
  }

  void load(const float* X, int64_t n, int64_t d, FeatureBins& bins, const LevelTargets& targets) override {
    load_any(X, n, d, bins, targets);
  }
  void load(const double* X, int64_t n, int64_t d, FeatureBins& bins, const LevelTargets& targets) override {
    load_any(X, n, d, bins, targets);
  }

  void begin_trees(const std::vector<uint8_t>& weights, int64_t trees) override {
    weights_ = weights;
    rows_.resize(static_cast<std::size_t>(trees * n_));
    for (int64_t s = 0; s < trees * n_; ++s) rows_[s] = static_cast<int32_t>(s % n_);
  }

  void split_level(const std::vector<LevelNode>& nodes, const std::vector<int32_t>& order, const LevelRules& rules,
                   std::vector<LevelSplit>& splits, std::vector<double>& left_stats) override {
    const int64_t m = static_cast<int64_t>(nodes.size());
    splits.assign(static_cast<std::size_t>(m), LevelSplit{});
    left_stats.assign(static_cast<std::size_t>(m * k_), 0.0);
    // Groups of nodes whose histograms (at most max_features features of max_bins bins) fit
    // kGroupValues: the same groups on every rank (nodes, rules and bins are the same).
    const int64_t per_node = std::min<int64_t>(rules.max_features, d_) * max_bins_ * (k_ + 1);
    const int64_t group = std::max<int64_t>(1, kGroupValues / std::max<int64_t>(per_node, 1));
    for (int64_t first = 0; first < m; first += group)
      split_group(nodes, order, rules, first, std::min(m, first + group), splits, left_stats);
  }

 private:
  // A node's evaluated features (in draw order) with their occupied bins and row counts.
  struct Drawn {
    int64_t taken = 0, informative = 0;
    std::vector<int32_t> features;
    std::vector<std::vector<int32_t>> bins;     // per feature: the occupied bins, ascending
    std::vector<std::vector<int64_t>> counts;   // per feature: their rows over all ranks
  };

  void split_group(const std::vector<LevelNode>& nodes, const std::vector<int32_t>& order, const LevelRules& rules,
                   int64_t first, int64_t end, std::vector<LevelSplit>& splits, std::vector<double>& left_stats) {
    const int64_t m = end - first;
    std::vector<Drawn> drawn(static_cast<std::size_t>(m));
    // 1. Rounds of row counts until every node has its features.
    std::vector<int64_t> pending(static_cast<std::size_t>(m));
    for (int64_t i = 0; i < m; ++i) pending[i] = i;
    std::vector<int64_t> round_begin;  // per pending node: its first feature this round
    std::vector<int64_t> first_pair;   // per pending node: its first (node, feature) pair this round
    std::vector<int64_t> offsets;      // per (node, feature) of the round: where its counts start
    std::vector<int32_t> counts;
    while (!pending.empty()) {
      round_begin.clear();
      first_pair.clear();
      offsets.assign(1, 0);
      for (int64_t i : pending) {
        Drawn& dr = drawn[i];
        round_begin.push_back(static_cast<int64_t>(dr.features.size()));
        first_pair.push_back(static_cast<int64_t>(offsets.size()) - 1);
        const int64_t want = std::min(rules.max_features - dr.informative, d_ - dr.taken);
        for (int64_t j = 0; j < want; ++j) {
          const int32_t f = order[(first + i) * d_ + dr.taken++];
          dr.features.push_back(f);
          offsets.push_back(offsets.back() + bins_[f]);
        }
      }
      counts.assign(static_cast<std::size_t>(offsets.back()), 0);
      const int64_t p = static_cast<int64_t>(pending.size());
#pragma omp parallel for num_threads(threads_) schedule(dynamic)
      for (int64_t q = 0; q < p; ++q) {
        const Drawn& dr = drawn[pending[q]];
        const LevelNode& node = nodes[first + pending[q]];
        int64_t pair = first_pair[q];
        for (std::size_t j = static_cast<std::size_t>(round_begin[q]); j < dr.features.size(); ++j, ++pair) {
          const uint8_t* column = codes_.data() + static_cast<int64_t>(dr.features[j]) * n_;
          int32_t* c = counts.data() + offsets[pair];
          for (int64_t s = node.slot_begin; s < node.slot_begin + node.slot_count; ++s)
            if (weights_[s] != 0) ++c[column[rows_[s]]];
        }
      }
      comm_->allreduce_sum(counts.data(), static_cast<int64_t>(counts.size()));
      std::vector<int64_t> still;
      int64_t pair = 0;
      for (std::size_t q = 0; q < pending.size(); ++q) {
        Drawn& dr = drawn[pending[q]];
        for (std::size_t j = static_cast<std::size_t>(round_begin[q]); j < dr.features.size(); ++j, ++pair) {
          std::vector<int32_t> occupied;
          std::vector<int64_t> rows;
          for (int64_t b = offsets[pair]; b < offsets[pair + 1]; ++b)
            if (counts[b] > 0) occupied.push_back(static_cast<int32_t>(b - offsets[pair])), rows.push_back(counts[b]);
          dr.informative += occupied.size() > 1;
          dr.bins.push_back(std::move(occupied));
          dr.counts.push_back(std::move(rows));
        }
        if (dr.informative < rules.max_features && dr.taken < d_) still.push_back(pending[q]);
      }
      pending = std::move(still);
    }

    // 2. The statistics of the occupied bins, summed over the ranks.
    std::vector<int64_t> node_at(static_cast<std::size_t>(m + 1), 0);  // where each node's statistics start
    for (int64_t i = 0; i < m; ++i) {
      int64_t cells = 0;
      for (const auto& b : drawn[i].bins) cells += static_cast<int64_t>(b.size());
      node_at[i + 1] = node_at[i] + cells * k_;
    }
    std::vector<double> stats(static_cast<std::size_t>(node_at[m]), 0.0);
#pragma omp parallel num_threads(threads_)
    {
      std::vector<int32_t> slot_of(256);  // bin -> its place among the occupied bins
#pragma omp for schedule(dynamic)
      for (int64_t i = 0; i < m; ++i) {
        const Drawn& dr = drawn[i];
        const LevelNode& node = nodes[first + i];
        double* at = stats.data() + node_at[i];
        for (std::size_t j = 0; j < dr.features.size(); ++j) {
          for (std::size_t b = 0; b < dr.bins[j].size(); ++b) slot_of[dr.bins[j][b]] = static_cast<int32_t>(b);
          const uint8_t* column = codes_.data() + static_cast<int64_t>(dr.features[j]) * n_;
          for (int64_t s = node.slot_begin; s < node.slot_begin + node.slot_count; ++s) {
            if (weights_[s] == 0) continue;
            const int32_t row = rows_[s];
            double* cell = at + static_cast<int64_t>(slot_of[column[row]]) * k_;
            const double w = weights_[s];
            if (regression_) {  // exact sums (quantize_targets), as grow_tree's
              cell[0] += w;
              cell[1] += w * values_[2 * row];
              cell[2] += w * values_[2 * row + 1];
            } else {
              cell[labels_[row]] += w;
            }
          }
          at += static_cast<int64_t>(dr.bins[j].size()) * k_;
        }
      }
    }
    comm_->allreduce_sum(stats.data(), static_cast<int64_t>(stats.size()));

    // The best split of each node, and the partition of this rank's slots.
#pragma omp parallel for num_threads(threads_) schedule(dynamic)
    for (int64_t i = 0; i < m; ++i) {
      const Drawn& dr = drawn[i];
      const LevelNode& node = nodes[first + i];
      NodeHistogram h;
      h.width = k_;
      h.n_features = static_cast<int64_t>(dr.features.size());
      h.max_bins = 1;
      for (const auto& b : dr.bins) h.max_bins = std::max(h.max_bins, static_cast<int>(b.size()));
      const int stride = h.max_bins;
      h.stats.assign(static_cast<std::size_t>(h.n_features * stride * k_), 0.0);
      h.rows.assign(static_cast<std::size_t>(h.n_features * stride), 0);
      h.bin_ids.assign(static_cast<std::size_t>(h.n_features * stride), 0);
      const double* at = stats.data() + node_at[i];
      for (int64_t j = 0; j < h.n_features; ++j) {
        const int occupied = static_cast<int>(dr.bins[j].size());
        h.bins.push_back(occupied);
        std::copy_n(at, occupied * k_, h.stats.begin() + j * stride * k_);
        std::copy(dr.counts[j].begin(), dr.counts[j].end(), h.rows.begin() + j * stride);
        std::copy(dr.bins[j].begin(), dr.bins[j].end(), h.bin_ids.begin() + j * stride);
        at += static_cast<int64_t>(occupied) * k_;
      }
      SplitRules split_rules;
      split_rules.criterion = rules.criterion;
      split_rules.min_samples_leaf = rules.min_samples_leaf;
      split_rules.root_weight = node.root_weight;
      const Split split = best_split(h, split_rules);
      if (!split.found) continue;
      const int32_t f = dr.features[split.feature];
      LevelSplit& out = splits[first + i];
      out.found = 1;
      out.feature = f;
      out.bin = split.bin;
      out.next_bin = split.next_bin;
      out.improvement = split.improvement;
      out.left_rows = split.left_rows;
      out.right_rows = split.right_rows;
      std::copy(split.left_stats.begin(), split.left_stats.end(), left_stats.begin() + (first + i) * k_);
      // Partition in place: left slots first (in order), right ones after (in order).
      std::vector<int32_t> right_rows;
      std::vector<uint8_t> right_weights;
      int64_t left_end = node.slot_begin;
      const uint8_t* column = codes_.data() + static_cast<int64_t>(f) * n_;
      for (int64_t s = node.slot_begin; s < node.slot_begin + node.slot_count; ++s) {
        if (column[rows_[s]] <= split.bin) {
          rows_[left_end] = rows_[s];
          weights_[left_end++] = weights_[s];
        } else {
          right_rows.push_back(rows_[s]);
          right_weights.push_back(weights_[s]);
        }
      }
      std::copy(right_rows.begin(), right_rows.end(), rows_.begin() + left_end);
      std::copy(right_weights.begin(), right_weights.end(), weights_.begin() + left_end);
      out.left_slots = left_end - node.slot_begin;
    }
  }

  template <typename T>
  void load_any(const T* X, int64_t n, int64_t d, FeatureBins& bins, const LevelTargets& targets) {
    codes_.resize(static_cast<std::size_t>(n * d));
    bin_rows(X, n, d, bins, codes_.data(), threads_);
    value_ranges(X, n, d, codes_.data(), bins, threads_);
    merge_value_ranges(bins, *comm_);  // every rank's rows
    n_ = n;
    d_ = d;
    bins_.resize(static_cast<std::size_t>(d));
    max_bins_ = 1;
    for (int64_t f = 0; f < d; ++f) {
      bins_[f] = static_cast<int32_t>(bins.bins(f));
      max_bins_ = std::max(max_bins_, bins_[f]);
    }
    regression_ = targets.regression();
    k_ = targets.width();
    if (regression_) {
      values_.resize(static_cast<std::size_t>(2 * n));
      for (int64_t i = 0; i < 2 * n; ++i) values_[i] = static_cast<double>(targets.units[i]) * targets.unit[i % 2];
    } else {
      labels_.assign(targets.labels, targets.labels + n);
    }
  }

  std::shared_ptr<Comm> local_;
  Comm* comm_ = nullptr;
  int threads_ = 1;
  std::vector<uint8_t> codes_, weights_;
  std::vector<int32_t> bins_, labels_, rows_;
  std::vector<double> values_;  // regression: n x 2, y and y² (quantized)
  bool regression_ = false;
  int64_t n_ = 0, d_ = 0;
  int32_t max_bins_ = 1;
  int k_ = 2;  // statistics per node
};

}  // namespace

std::unique_ptr<LevelBackend> make_level_cpu_backend(Comm* comm, int threads) {
  return std::make_unique<CpuLevelBackend>(comm, threads);
}

}  // namespace gpuml::detail

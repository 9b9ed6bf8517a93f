// The host LevelBackend (levelwise.hpp): the reference the CUDA backend's splits are checked
// against, and the CPU backend of distributed fits, where each rank holds its own rows. Its
// split_level is split_level_over_ranks (levelwise_ranks.cpp) on this file's loops: row counts
// and statistics per bin of (node, feature) pairs, and the partition of the slots.
#include <omp.h>

#include <algorithm>
#include <memory>

#include "ensemble/binning.hpp"
#include "ensemble/levelwise.hpp"
#include "gpuml/core/comm.hpp"
#include "gpuml/core/error.hpp"

namespace gpuml::detail {
namespace {

class CpuLevelBackend final : public LevelBackend, public LevelPrimitives {
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
  void load_codes(const uint8_t* codes, int64_t n, int64_t d, const FeatureBins& bins, const LevelTargets& targets) override {
    GPUML_EXPECT(bins.n_features() == d, "levelwise builder: bins for another number of features");
    codes_.assign(codes, codes + n * d);
    keep(n, d, bins, targets);
  }

  void begin_trees(const TreeSlots& slots) override {
    rows_.assign(slots.rows.begin(), slots.rows.end());
    weights_.assign(slots.weights.begin(), slots.weights.end());
  }

  void split_level(const std::vector<LevelNode>& nodes, const LevelRules& rules, std::vector<LevelSplit>& splits,
                   std::vector<double>& left_stats) override {
    split_level_over_ranks(*this, *comm_, nodes, rules, d_, bins_, k_, threads_, splits, left_stats);
  }

  void grow_levels(const std::vector<LevelNode>& roots, const std::vector<double>& root_stats, const LevelRules& rules,
                   const LevelGrowth& growth, const LevelSink& sink) override {
    grow_levels_by_search(*this, roots, root_stats, rules, growth, threads_, sink);
  }

  void count_bins(const std::vector<LevelNode>& nodes, const LevelPairs& pairs, std::vector<int32_t>& counts) override {
#pragma omp parallel for num_threads(threads_) schedule(dynamic)
    for (int64_t p = 0; p < pairs.size(); ++p) {
      const LevelNode& node = nodes[pairs.node[p]];
      const uint8_t* column = codes_.data() + static_cast<int64_t>(pairs.feature[p]) * n_;
      int32_t* c = counts.data() + pairs.offset[p];
      for (int64_t s = node.slot_begin; s < node.slot_begin + node.slot_count; ++s)
        if (weights_[s] != 0) ++c[column[rows_[s]]];
    }
  }

  void bin_stats(const std::vector<LevelNode>& nodes, const LevelPairs& pairs, const std::vector<int32_t>& cell_of,
                 std::vector<double>& stats) override {
#pragma omp parallel for num_threads(threads_) schedule(dynamic)
    for (int64_t p = 0; p < pairs.size(); ++p) {
      const LevelNode& node = nodes[pairs.node[p]];
      const uint8_t* column = codes_.data() + static_cast<int64_t>(pairs.feature[p]) * n_;
      const int32_t* cell = cell_of.data() + p * 256;
      double* at = stats.data() + pairs.offset[p] * k_;
      for (int64_t s = node.slot_begin; s < node.slot_begin + node.slot_count; ++s) {
        if (weights_[s] == 0) continue;
        const int32_t row = rows_[s];
        double* c = at + static_cast<int64_t>(cell[column[row]]) * k_;
        const double w = weights_[s];
        if (regression_) {  // exact sums (quantize_targets), as grow_tree's
          c[0] += w;
          c[1] += w * values_[2 * row];
          c[2] += w * values_[2 * row + 1];
        } else {
          c[labels_[row]] += w;
        }
      }
    }
  }

  LevelPrimitives& primitives() override { return *this; }
  bool gathers_rows() const override { return true; }

  void gather_rows(const std::vector<LevelNode>& nodes, std::vector<uint8_t>& codes, std::vector<double>& stats) override {
    int64_t total = 0;
    for (const LevelNode& node : nodes) total += node.slot_count;
    const std::size_t codes_at = codes.size(), stats_at = stats.size();
    codes.resize(codes_at + static_cast<std::size_t>(total * d_));
    stats.resize(stats_at + static_cast<std::size_t>(total * k_), 0.0);
    uint8_t* c = codes.data() + codes_at;
    double* st = stats.data() + stats_at;
    for (const LevelNode& node : nodes)
      for (int64_t s = node.slot_begin; s < node.slot_begin + node.slot_count; ++s, c += d_, st += k_) {
        const int32_t row = rows_[s];
        for (int64_t f = 0; f < d_; ++f) c[f] = codes_[f * n_ + row];
        const double w = weights_[s];
        if (regression_) {  // bin_stats's products
          st[0] = w;
          st[1] = w * values_[2 * row];
          st[2] = w * values_[2 * row + 1];
        } else {
          st[labels_[row]] = w;
        }
      }
  }

  // In place, stably: left slots first (in order), right ones after (in order).
  void partition(const std::vector<LevelNode>& nodes, std::vector<LevelSplit>& splits) override {
    const int64_t m = static_cast<int64_t>(nodes.size());
#pragma omp parallel for num_threads(threads_) schedule(dynamic)
    for (int64_t i = 0; i < m; ++i) {
      LevelSplit& split = splits[i];
      if (!split.found) continue;
      const LevelNode& node = nodes[i];
      std::vector<int32_t> right_rows;
      std::vector<uint8_t> right_weights;
      int64_t left_end = node.slot_begin;
      const uint8_t* column = codes_.data() + static_cast<int64_t>(split.feature) * n_;
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
      split.left_slots = left_end - node.slot_begin;
    }
  }

 private:
  template <typename T>
  void load_any(const T* X, int64_t n, int64_t d, FeatureBins& bins, const LevelTargets& targets) {
    codes_.resize(static_cast<std::size_t>(n * d));
    bin_rows(X, n, d, bins, codes_.data(), threads_);
    value_ranges(X, n, d, codes_.data(), bins, threads_);
    merge_value_ranges(bins, *comm_);  // every rank's rows
    keep(n, d, bins, targets);
  }

  // What both loads keep besides the codes: the sizes, each feature's bin count, the targets.
  void keep(int64_t n, int64_t d, const FeatureBins& bins, const LevelTargets& targets) {
    n_ = n;
    d_ = d;
    bins_.resize(static_cast<std::size_t>(d));
    for (int64_t f = 0; f < d; ++f) bins_[f] = static_cast<int32_t>(bins.bins(f));
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
  int k_ = 2;  // statistics per node
};

}  // namespace

std::unique_ptr<LevelBackend> make_level_cpu_backend(Comm* comm, int threads) {
  return std::make_unique<CpuLevelBackend>(comm, threads);
}

}  // namespace gpuml::detail

// A host LevelBackend (levelwise.hpp) on split_finder's best_split: the reference the CUDA
// backend's splits are checked against, and what lets the level-by-level driver be tested
// without a GPU. One node at a time; no speed intended.
#include <algorithm>
#include <cstring>

#include "ensemble/levelwise.hpp"
#include "ensemble/split_finder.hpp"
#include "gpuml/core/error.hpp"

namespace gpuml::detail {
namespace {

class CpuLevelBackend final : public LevelBackend {
 public:
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
    int max_bins = 1;
    for (int32_t b : bins_) max_bins = std::max(max_bins, static_cast<int>(b));
    for (int64_t i = 0; i < m; ++i) {
      const LevelNode& node = nodes[i];
      const int32_t* features = order.data() + i * d_;
      NodeHistogram h;
      h.max_bins = max_bins;
      h.width = k_;
      SplitRules split_rules;
      split_rules.criterion = rules.criterion;
      split_rules.min_samples_leaf = rules.min_samples_leaf;
      split_rules.root_weight = node.root_weight;
      int64_t informative = 0;
      for (int64_t j = 0; j < d_ && informative < rules.max_features; ++j) {
        const int32_t f = features[j];
        h.stats.resize(h.stats.size() + static_cast<std::size_t>(max_bins) * k_, 0.0);
        h.rows.resize(h.rows.size() + static_cast<std::size_t>(max_bins), 0);
        double* stats = h.stats.data() + static_cast<std::size_t>(h.n_features) * max_bins * k_;
        int64_t* counts = h.rows.data() + static_cast<std::size_t>(h.n_features) * max_bins;
        for (int64_t s = node.slot_begin; s < node.slot_begin + node.slot_count; ++s) {
          if (weights_[s] == 0) continue;
          const int32_t row = rows_[s];
          const int b = codes_[static_cast<int64_t>(f) * n_ + row];
          ++counts[b];
          const double w = weights_[s];
          if (regression_) {  // exact sums (quantize_targets), as grow_tree's
            stats[b * 3] += w;
            stats[b * 3 + 1] += w * values_[2 * row];
            stats[b * 3 + 2] += w * values_[2 * row + 1];
          } else {
            stats[b * k_ + labels_[row]] += w;
          }
        }
        int occupied = 0;
        for (int b = 0; b < bins_[f]; ++b) occupied += counts[b] > 0;
        informative += occupied > 1;
        h.bins.push_back(bins_[f]);
        ++h.n_features;
      }
      const Split split = best_split(h, split_rules);
      if (!split.found) continue;
      const int32_t f = features[split.feature];
      LevelSplit& out = splits[i];
      out.found = 1;
      out.feature = f;
      out.bin = split.bin;
      out.next_bin = split.next_bin;
      out.improvement = split.improvement;
      out.left_rows = split.left_rows;
      out.right_rows = split.right_rows;
      std::copy(split.left_stats.begin(), split.left_stats.end(), left_stats.begin() + i * k_);
      // Partition in place: left slots first (in order), right ones after (in order).
      std::vector<int32_t> right_rows;
      std::vector<uint8_t> right_weights;
      int64_t left_end = node.slot_begin;
      for (int64_t s = node.slot_begin; s < node.slot_begin + node.slot_count; ++s) {
        if (codes_[static_cast<int64_t>(f) * n_ + rows_[s]] <= split.bin) {
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

 private:
  template <typename T>
  void load_any(const T* X, int64_t n, int64_t d, FeatureBins& bins, const LevelTargets& targets) {
    codes_.resize(static_cast<std::size_t>(n * d));
    bin_rows(X, n, d, bins, codes_.data(), 1);
    value_ranges(X, n, d, codes_.data(), bins, 1);
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

  std::vector<uint8_t> codes_, weights_;
  std::vector<int32_t> bins_, labels_, rows_;
  std::vector<double> values_;  // regression: n x 2, y and y² (quantized)
  bool regression_ = false;
  int64_t n_ = 0, d_ = 0;
  int k_ = 2;  // statistics per node
};

}  // namespace

std::unique_ptr<LevelBackend> make_level_cpu_backend() { return std::make_unique<CpuLevelBackend>(); }

}  // namespace gpuml::detail

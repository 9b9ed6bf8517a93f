#include "ensemble/binning.hpp"

#include <omp.h>

#include <algorithm>
#include <limits>
#include <atomic>
#include <cmath>
#include <numeric>
#include <string>

#include "core/parallel.hpp"
#include "core/default_init.hpp"
#include "core/random.hpp"
#include "core/sort_values.hpp"
#include "gpuml/core/comm.hpp"
#include "gpuml/core/error.hpp"

namespace gpuml::detail {
namespace {

// A feature's sampled values in ascending order: the sorted stored values with `zeros` more
// 0.0s among them (sparse X's implicit zeros: counted, never stored). Dense X has none.
struct SortedValues {
  const std::vector<double>& stored;
  int64_t zeros = 0;
  int64_t negatives = 0;  // stored values below 0: the zeros come after them

  SortedValues(const std::vector<double>& sorted, int64_t zeros_) : stored(sorted), zeros(zeros_) {
    negatives = std::lower_bound(stored.begin(), stored.end(), 0.0) - stored.begin();
  }
  int64_t size() const { return static_cast<int64_t>(stored.size()) + zeros; }
  double operator[](int64_t i) const {
    return i < negatives ? stored[i] : i < negatives + zeros ? 0.0 : stored[i - zeros];
  }
  // The distinct values, ascending (0.0 once among them when there are zeros).
  std::vector<double> distinct() const {
    std::vector<double> out;
    auto add = [&](double v) {
      if (out.empty() || out.back() != v) out.push_back(v);
    };
    for (int64_t i = 0; i < static_cast<int64_t>(stored.size()); ++i) {
      if (i == negatives && zeros > 0) add(0.0);
      add(stored[i]);
    }
    if (negatives == static_cast<int64_t>(stored.size()) && zeros > 0) add(0.0);
    return out;
  }
};

// The thresholds of one feature from its sorted, finite sample values.
void thresholds_of(const SortedValues& sorted, int max_bins, std::vector<double>& out) {
  out.clear();
  const std::vector<double> distinct = sorted.distinct();
  if (static_cast<int64_t>(distinct.size()) <= max_bins) {
    for (std::size_t i = 0; i + 1 < distinct.size(); ++i) out.push_back(0.5 * (distinct[i] + distinct[i + 1]));
    return;
  }
  // numpy's percentile(..., method="averaged_inverted_cdf") at p = k (100 / max_bins), with its
  // arithmetic: index i = N p / 100 − 1; a whole i gives the average of the order statistics i and
  // i + 1 (as b − (b − a) / 2), otherwise order statistic floor(i) + 1. Repeats are dropped.
  const double count = static_cast<double>(sorted.size());
  const double step = 100.0 / static_cast<double>(max_bins);
  const auto at = [&](double index) {
    const double clamped = std::min(std::max(index, 0.0), count - 1.0);
    return sorted[static_cast<int64_t>(clamped)];
  };
  for (int k = 1; k < max_bins; ++k) {
    const double index = count * (static_cast<double>(k) * step / 100.0) - 1.0;
    const double below = std::floor(index);
    const double a = at(below), b = at(below + 1.0);
    const double value = index == below ? b - (b - a) * 0.5 : b;
    if (out.empty() || value > out.back()) out.push_back(value);
  }
}

// The rows the thresholds are found from: all `total`, or sample_rows of them drawn without
// replacement with `seed`, ascending.
std::vector<int64_t> sampled_rows(int64_t total, int64_t sample_rows, uint64_t seed) {
  std::vector<int64_t> rows;
  if (total > sample_rows) {
    Random random(seed);
    // The same rows in ascending order (cache-friendlier; the set is what counts), by marks
    // rather than a sort.
    std::vector<uint8_t> drawn(static_cast<std::size_t>(total), 0);
    for (int64_t r : random.sample_without_replacement(total, sample_rows)) drawn[r] = 1;
    rows.reserve(static_cast<std::size_t>(sample_rows));
    for (int64_t r = 0; r < total; ++r)
      if (drawn[r]) rows.push_back(r);
  } else {
    rows.resize(static_cast<std::size_t>(total));
    std::iota(rows.begin(), rows.end(), int64_t{0});
  }
  return rows;
}

FeatureBins bins_of(const std::vector<std::vector<double>>& per_feature) {
  FeatureBins bins;
  bins.offsets.assign(1, 0);
  for (const auto& t : per_feature) {
    bins.values.insert(bins.values.end(), t.begin(), t.end());
    bins.offsets.push_back(static_cast<int64_t>(bins.values.size()));
  }
  return bins;
}

// The bin of x in feature j: the number of thresholds strictly below x (x <= threshold goes left).
uint8_t code_of(const FeatureBins& bins, int64_t j, double x) {
  const double* first = bins.begin(j);
  return static_cast<uint8_t>(std::lower_bound(first, first + bins.thresholds(j), x) - first);
}

}  // namespace

template <typename T>
FeatureBins find_bins(const T* X, int64_t n, int64_t d, int max_bins, int64_t sample_rows, uint64_t seed, int threads,
                      Comm* comm) {
  GPUML_EXPECT(max_bins >= 2 && max_bins <= 256, "max_bins must be in [2, 256], got " + std::to_string(max_bins));
  GPUML_EXPECT(n >= 1 && d >= 1, "binning needs at least one sample and one feature");
  // This rank's rows are rows [offset, offset + n) of all ranks' `total`.
  const bool distributed = comm != nullptr && comm->size() > 1;
  std::vector<int64_t> counts{n};
  if (distributed) counts = comm->allgather(n);
  int64_t offset = 0, total = 0;
  for (std::size_t r = 0; r < counts.size(); ++r) {
    if (distributed && static_cast<int>(r) == comm->rank()) offset = total;
    total += counts[r];
  }
  const std::vector<int64_t> rows = sampled_rows(total, sample_rows, seed);  // indices of all rows
  // Over several ranks the sampled rows are gathered (in rank order: ascending, as above); one
  // process reads them in X.
  std::vector<T> gathered;
  if (distributed) {
    std::vector<int64_t> sizes(counts.size());
    int64_t begin = 0;
    for (std::size_t r = 0; r < counts.size(); ++r) {
      const auto first = std::lower_bound(rows.begin(), rows.end(), begin);
      sizes[r] = (std::lower_bound(rows.begin(), rows.end(), begin + counts[r]) - first) * d;
      begin += counts[r];
    }
    std::vector<T> mine;
    mine.reserve(static_cast<std::size_t>(sizes[comm->rank()]));
    for (auto it = std::lower_bound(rows.begin(), rows.end(), offset); it != rows.end() && *it < offset + n; ++it)
      mine.insert(mine.end(), X + (*it - offset) * d, X + (*it - offset + 1) * d);
    gathered.resize(rows.size() * static_cast<std::size_t>(d));
    comm->allgatherv(mine.data(), static_cast<int64_t>(mine.size()), gathered.data(), sizes.data(), dtype_of<T>::value);
  }
  const T* sample = distributed ? gathered.data() : X;
  auto sampled = [&](int64_t r) { return distributed ? r : rows[r]; };  // the row in `sample`
  // The sampled rows copied feature by feature (row blocks in parallel), then each feature's
  // column sorted by its bits (exact, in X's type; converted to double afterwards, which keeps
  // the order) and its thresholds found.
  const int64_t m = static_cast<int64_t>(rows.size());
  const int team = threads_for(threads, m * d);
  DefaultInitVector<T> columns(static_cast<std::size_t>(m * d));  // first touched by the copying threads
  constexpr int64_t kRowBlock = 1024;
#pragma omp parallel for num_threads(team) schedule(static)
  for (int64_t r0 = 0; r0 < m; r0 += kRowBlock) {
    const int64_t r1 = std::min(m, r0 + kRowBlock);
    for (int64_t r = r0; r < r1; ++r) {
      const T* row = sample + sampled(r) * d;
      for (int64_t j = 0; j < d; ++j) columns[j * m + r] = row[j];
    }
  }
  std::vector<std::vector<double>> per_feature(static_cast<std::size_t>(d));
  std::atomic<bool> finite{true};
#pragma omp parallel num_threads(team)
  {
    std::vector<T> scratch;
    std::vector<double> column(static_cast<std::size_t>(m));
#pragma omp for schedule(dynamic)
    for (int64_t j = 0; j < d; ++j) {
      T* values = columns.data() + j * m;
      if (!std::all_of(values, values + m, [](T v) { return std::isfinite(v); })) {
        finite = false;
        continue;
      }
      radix_sort_values(values, m, scratch);
      std::copy(values, values + m, column.begin());
      thresholds_of(SortedValues(column, 0), max_bins, per_feature[j]);
    }
  }
  GPUML_EXPECT(finite, "X contains NaN or infinity");
  return bins_of(per_feature);
}

FeatureBins find_bins_sparse(const SparseLines& X, int max_bins, int64_t sample_rows, uint64_t seed, int threads) {
  GPUML_EXPECT(max_bins >= 2 && max_bins <= 256, "max_bins must be in [2, 256], got " + std::to_string(max_bins));
  GPUML_EXPECT(X.format == SparseFormat::csc, "find_bins_sparse: X must be CSC");
  const int64_t n = X.rows, d = X.cols;
  GPUML_EXPECT(n >= 1 && d >= 1, "binning needs at least one sample and one feature");
  // The rows dense X's binning samples; a mask says which stored entries are among them.
  const std::vector<int64_t> rows = sampled_rows(n, sample_rows, seed);
  std::vector<uint8_t> in_sample;
  if (static_cast<int64_t>(rows.size()) < n) {
    in_sample.assign(static_cast<std::size_t>(n), 0);
    for (int64_t r : rows) in_sample[r] = 1;
  }
  const int64_t sampled = static_cast<int64_t>(rows.size());
  std::vector<std::vector<double>> per_feature(static_cast<std::size_t>(d));
#pragma omp parallel num_threads(threads_for(threads, static_cast<int64_t>(X.values.size())))
  {
    std::vector<double> stored;
#pragma omp for schedule(dynamic)
    for (int64_t j = 0; j < d; ++j) {
      stored.clear();
      for (int64_t k = X.indptr[j]; k < X.indptr[j + 1]; ++k)
        if (in_sample.empty() || in_sample[X.indices[k]]) stored.push_back(X.values[k]);
      std::sort(stored.begin(), stored.end());
      // Canonical columns hold each row once: the sampled rows not stored are implicit zeros.
      thresholds_of(SortedValues(stored, sampled - static_cast<int64_t>(stored.size())), max_bins, per_feature[j]);
    }
  }
  return bins_of(per_feature);
}

template <typename T>
void bin_rows(const T* X, int64_t n, int64_t d, const FeatureBins& bins, uint8_t* codes, int threads) {
  GPUML_EXPECT(bins.n_features() == d, "binning: X has " + std::to_string(d) + " features, the bins " +
                                           std::to_string(bins.n_features()));
  std::atomic<bool> finite{true};
  const RowBlocks blocks(n, threads_for(threads, n * d), 4096);
#pragma omp parallel for num_threads(blocks.count()) schedule(static)
  for (int b = 0; b < blocks.count(); ++b) {
    bool ok = true;
    for (int64_t i = blocks.begin(b); i < blocks.end(b); ++i) {
      for (int64_t j = 0; j < d; ++j) {
        const double x = static_cast<double>(X[i * d + j]);
        ok = ok && std::isfinite(x);
        codes[j * n + i] = code_of(bins, j, x);
      }
    }
    if (!ok) finite = false;
  }
  GPUML_EXPECT(finite, "X contains NaN or infinity");
}

template <typename T>
void value_ranges(const T* X, int64_t n, int64_t d, const uint8_t* codes, FeatureBins& bins, int threads) {
  const std::size_t cells = static_cast<std::size_t>(bins.values.size() + d);
  bins.low.assign(cells, std::numeric_limits<double>::infinity());
  bins.high.assign(cells, -std::numeric_limits<double>::infinity());
  // Row blocks (X read in its row-major order), each with its own ranges, merged after: min and
  // max do not depend on the merge order.
  const RowBlocks blocks(n, threads_for(threads, n * d), 4096);
  std::vector<std::vector<double>> lows(static_cast<std::size_t>(blocks.count())), highs(lows.size());
#pragma omp parallel for num_threads(blocks.count()) schedule(static)
  for (int b = 0; b < blocks.count(); ++b) {
    std::vector<double> low(cells, std::numeric_limits<double>::infinity()), high(cells, -std::numeric_limits<double>::infinity());
    for (int64_t i = blocks.begin(b); i < blocks.end(b); ++i)
      for (int64_t j = 0; j < d; ++j) {
        const double x = static_cast<double>(X[i * d + j]);
        const int64_t cell = bins.bin_index(j, codes[j * n + i]);
        low[cell] = std::min(low[cell], x);
        high[cell] = std::max(high[cell], x);
      }
    lows[b] = std::move(low);
    highs[b] = std::move(high);
  }
  for (int b = 0; b < blocks.count(); ++b)
    for (std::size_t c = 0; c < cells; ++c) {
      bins.low[c] = std::min(bins.low[c], lows[b][c]);
      bins.high[c] = std::max(bins.high[c], highs[b][c]);
    }
}

void bin_sparse_columns(const SparseLines& X, FeatureBins& bins, uint8_t* codes, int threads) {
  GPUML_EXPECT(X.format == SparseFormat::csc, "bin_sparse_columns: X must be CSC");
  const int64_t n = X.rows, d = X.cols;
  GPUML_EXPECT(bins.n_features() == d, "binning: X has " + std::to_string(d) + " features, the bins " +
                                           std::to_string(bins.n_features()));
  const std::size_t cells = static_cast<std::size_t>(bins.values.size() + d);
  bins.low.assign(cells, std::numeric_limits<double>::infinity());
  bins.high.assign(cells, -std::numeric_limits<double>::infinity());
  // One feature per iteration: its codes and its bins' ranges are its own (no merging).
#pragma omp parallel for num_threads(threads_for(threads, n * d)) schedule(dynamic)
  for (int64_t j = 0; j < d; ++j) {
    uint8_t* column = codes + j * n;
    const int64_t begin = X.indptr[j], end = X.indptr[j + 1];
    const uint8_t zero = code_of(bins, j, 0.0);
    std::fill(column, column + n, zero);
    if (end - begin < n) {  // some row of the column is an implicit zero
      const int64_t cell = bins.bin_index(j, zero);
      bins.low[cell] = std::min(bins.low[cell], 0.0);
      bins.high[cell] = std::max(bins.high[cell], 0.0);
    }
    for (int64_t k = begin; k < end; ++k) {
      const double x = X.values[k];
      const uint8_t code = code_of(bins, j, x);
      column[X.indices[k]] = code;
      const int64_t cell = bins.bin_index(j, code);
      bins.low[cell] = std::min(bins.low[cell], x);
      bins.high[cell] = std::max(bins.high[cell], x);
    }
  }
}

void merge_value_ranges(FeatureBins& bins, Comm& comm) {
  if (comm.size() == 1) return;
  const int64_t cells = static_cast<int64_t>(bins.low.size());
  std::vector<double> mine(bins.low), all(static_cast<std::size_t>(2 * cells * comm.size()));
  mine.insert(mine.end(), bins.high.begin(), bins.high.end());
  comm.allgather(mine.data(), 2 * cells, all.data(), DType::float64);
  for (int r = 0; r < comm.size(); ++r)
    for (int64_t c = 0; c < cells; ++c) {
      bins.low[c] = std::min(bins.low[c], all[r * 2 * cells + c]);
      bins.high[c] = std::max(bins.high[c], all[r * 2 * cells + cells + c]);
    }
}

template FeatureBins find_bins<float>(const float*, int64_t, int64_t, int, int64_t, uint64_t, int, Comm*);
template FeatureBins find_bins<double>(const double*, int64_t, int64_t, int, int64_t, uint64_t, int, Comm*);
template void bin_rows<float>(const float*, int64_t, int64_t, const FeatureBins&, uint8_t*, int);
template void bin_rows<double>(const double*, int64_t, int64_t, const FeatureBins&, uint8_t*, int);
template void value_ranges<float>(const float*, int64_t, int64_t, const uint8_t*, FeatureBins&, int);
template void value_ranges<double>(const double*, int64_t, int64_t, const uint8_t*, FeatureBins&, int);

}  // namespace gpuml::detail

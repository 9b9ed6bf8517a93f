// Feature binning of the histogram forests (src/ensemble/binning.hpp): scikit-learn's threshold
// rule on hand-checked cases, the properties on fresh random data (order, placement against the
// thresholds, balanced percentile bins, sampling), and the errors.
//
// The binning is internal: this file reaches it through the src/ header (exported for it).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "../../../src/ensemble/binning.hpp"
#include "../random_sparse.hpp"
#include "gpuml/core/error.hpp"
#include "test_util.hpp"

namespace gpuml {
namespace {

using test::uniform_int;
using test::uniform_real;

std::vector<double> thresholds_of(const detail::FeatureBins& bins, int64_t j) {
  return std::vector<double>(bins.begin(j), bins.begin(j) + bins.thresholds(j));
}

TEST(Binning, FewDistinctValuesSplitAtTheirMidpoints) {
  // Column 0: 3 distinct values; column 1: more than max_bins = 4 distinct values, 0..999.
  std::vector<double> X;
  const std::vector<double> first = {2.0, 1.0, 2.0, 3.0};
  for (int i = 0; i < 1000; ++i) {
    X.push_back(first[i % 4]);
    X.push_back(static_cast<double>((i * 7) % 1000));  // a permutation of 0..999
  }
  const detail::FeatureBins bins = detail::find_bins(X.data(), 1000, 2, 4, 1000, 0, 1);
  EXPECT_EQ(thresholds_of(bins, 0), (std::vector<double>{1.5, 2.5}));
  // numpy.percentile(0..999, [25, 50, 75], method="averaged_inverted_cdf"): N q = 250, 500 and
  // 750 are whole, so the averages of order statistics 250 and 251 (1-based), and so on.
  EXPECT_EQ(thresholds_of(bins, 1), (std::vector<double>{249.5, 499.5, 749.5}));
  std::vector<uint8_t> codes(2000);
  detail::bin_rows(X.data(), 1000, 2, bins, codes.data(), 1);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(codes[i], static_cast<uint8_t>(first[i] - 1.0)) << "row " << i;
  // Row i of column 1 holds 7 i mod 1000.
  EXPECT_EQ(codes[1000 + 0], 0);    // 0
  EXPECT_EQ(codes[1000 + 36], 1);   // 252
  EXPECT_EQ(codes[1000 + 107], 2);  // 749 <= 749.5
  EXPECT_EQ(codes[1000 + 108], 3);  // 756
}

TEST(Binning, CodesFollowTheThresholdsOnRandomData) {
  GPUML_FRESH_RNG(rng);
  const int64_t n = uniform_int(rng, 2000, 20000), d = uniform_int(rng, 1, 12);
  const int max_bins = static_cast<int>(uniform_int(rng, 2, 256));
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<float> X(n * d);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < d; ++j)  // even columns continuous, odd ones a few levels (rounded)
      X[i * d + j] = static_cast<float>(j % 2 ? std::round(3.0 * normal(rng)) : 100.0 * normal(rng) + 7.0);
  const detail::FeatureBins bins = detail::find_bins(X.data(), n, d, max_bins, n, 0, 2);
  std::vector<uint8_t> codes(n * d);
  detail::bin_rows(X.data(), n, d, bins, codes.data(), 2);
  detail::FeatureBins ranged = bins;
  detail::value_ranges(X.data(), n, d, codes.data(), ranged, 2);
  for (int64_t j = 0; j < d; ++j) {
    const std::vector<double> t = thresholds_of(bins, j);
    // Each bin's value range is the exact min and max of its rows, inside its thresholds.
    std::vector<double> low(t.size() + 1, INFINITY), high(t.size() + 1, -INFINITY);
    for (int64_t i = 0; i < n; ++i) {
      const int b = codes[j * n + i];
      low[b] = std::min(low[b], static_cast<double>(X[i * d + j]));
      high[b] = std::max(high[b], static_cast<double>(X[i * d + j]));
    }
    for (int b = 0; b <= static_cast<int>(t.size()); ++b) {
      EXPECT_EQ(ranged.low[ranged.bin_index(j, b)], low[b]) << "feature " << j << " bin " << b;
      EXPECT_EQ(ranged.high[ranged.bin_index(j, b)], high[b]) << "feature " << j << " bin " << b;
      if (b < static_cast<int>(t.size()) && high[b] >= low[b]) EXPECT_LE(high[b], t[b]);
    }
    ASSERT_LE(static_cast<int64_t>(t.size()), max_bins - 1);
    ASSERT_TRUE(std::is_sorted(t.begin(), t.end()) && std::adjacent_find(t.begin(), t.end()) == t.end()) << "feature " << j;
    std::vector<int64_t> counts(t.size() + 1, 0);
    for (int64_t i = 0; i < n; ++i) {
      const double x = X[i * d + j];
      const int b = codes[j * n + i];
      ASSERT_LT(b, static_cast<int>(t.size()) + 1);
      // x <= thresholds[b] (if any) and x > thresholds[b - 1] (if any): x <= t goes left.
      if (b < static_cast<int>(t.size())) ASSERT_LE(x, t[b]) << "feature " << j << " row " << i;
      if (b > 0) ASSERT_GT(x, t[b - 1]) << "feature " << j << " row " << i;
      ++counts[b];
    }
    if (j % 2 == 0 && max_bins <= 64) {
      // Continuous values, percentile thresholds: each bin holds about n / max_bins rows (the
      // sample is every row; +-50% allows for the midpoint rule and ties of rounded floats).
      for (int64_t c : counts) EXPECT_NEAR(static_cast<double>(c), static_cast<double>(n) / max_bins, 0.5 * n / max_bins);
    }
    if (j % 2 == 1) {
      // Few distinct values: one bin each, when they fit.
      std::vector<float> column;
      for (int64_t i = 0; i < n; ++i) column.push_back(X[i * d + j]);
      std::sort(column.begin(), column.end());
      const int64_t distinct = std::unique(column.begin(), column.end()) - column.begin();
      if (distinct <= max_bins) EXPECT_EQ(static_cast<int64_t>(t.size()) + 1, distinct) << "feature " << j;
    }
  }
}

TEST(Binning, SamplingIsSeededAndStillBinsEveryRow) {
  GPUML_FRESH_RNG(rng);
  const int64_t n = uniform_int(rng, 5000, 20000), d = 3, sample = uniform_int(rng, 500, 2000);
  std::vector<double> X(n * d);
  for (auto& v : X) v = uniform_real(rng, -5.0, 5.0);
  const uint64_t seed = rng();
  const detail::FeatureBins a = detail::find_bins(X.data(), n, d, 32, sample, seed, 2);
  const detail::FeatureBins b = detail::find_bins(X.data(), n, d, 32, sample, seed, 1);
  EXPECT_EQ(a.values, b.values);  // same seed and sample: the same thresholds, whatever the threads
  const detail::FeatureBins c = detail::find_bins(X.data(), n, d, 32, sample, seed + 1, 2);
  EXPECT_NE(a.values, c.values);  // another sample (continuous values: different midpoints)
  std::vector<uint8_t> codes(n * d);
  detail::bin_rows(X.data(), n, d, a, codes.data(), 2);  // rows outside the sample's range: the end bins
  for (int64_t j = 0; j < d; ++j)
    for (int64_t i = 0; i < n; ++i) ASSERT_LE(codes[j * n + i], a.thresholds(j));
}

TEST(Binning, BadInputIsANamedError) {
  std::vector<double> X = {1.0, 2.0, 3.0, 4.0};
  std::vector<uint8_t> codes(4);
  auto expect_invalid = [](auto&& call, const char* what) {
    try {
      call();
      ADD_FAILURE() << what << ": no error";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::invalid_argument) << what;
    }
  };
  expect_invalid([&] { detail::find_bins(X.data(), 2, 2, 1, 10, 0, 1); }, "max_bins 1");
  expect_invalid([&] { detail::find_bins(X.data(), 2, 2, 257, 10, 0, 1); }, "max_bins 257");
  const detail::FeatureBins bins = detail::find_bins(X.data(), 2, 2, 16, 10, 0, 1);
  expect_invalid([&] { detail::bin_rows(X.data(), 4, 1, bins, codes.data(), 1); }, "feature count");
  for (double bad : {std::nan(""), std::numeric_limits<double>::infinity()}) {
    std::vector<double> Y = X;
    Y[3] = bad;
    expect_invalid([&] { detail::find_bins(Y.data(), 2, 2, 16, 10, 0, 1); }, "NaN/inf in the sample");
    expect_invalid([&] { detail::bin_rows(Y.data(), 2, 2, bins, codes.data(), 1); }, "NaN/inf when binning");
  }
}

// Sparse X's bins (find_bins_sparse, bin_sparse_columns) are the dense matrix's: the same
// thresholds (on the midpoint path and the percentile path, with and without row sampling), codes
// and value ranges, with implicit zeros counted and never stored.
TEST(Binning, SparseColumnsGiveTheDenseBins) {
  GPUML_FRESH_RNG(rng);
  const Context ctx = Context::cpu();
  for (int trial = 0; trial < 12; ++trial) {
    const int64_t n = uniform_int(rng, 1, 400), d = uniform_int(rng, 1, 12);
    const double density = std::vector<double>{0.0, 0.05, 0.3, 0.9}[trial % 4];
    const auto format = trial % 2 ? SparseFormat::csr : SparseFormat::csc;
    test::RandomSparse<int64_t> m = test::random_sparse<int64_t>(rng, n, d, density, format, 0.1);
    // Some columns of few distinct values (midpoints), some of many (percentiles with small max_bins).
    for (double& v : m.values) v = trial % 3 == 0 ? std::round(v) + 0.0 : v;  // + 0.0: no -0.0
    m.dense.assign(static_cast<std::size_t>(n * d), 0.0);
    for (int64_t line = 0; line + 1 < static_cast<int64_t>(m.indptr.size()); ++line)
      for (int64_t k = m.indptr[line]; k < m.indptr[line + 1]; ++k) {
        const int64_t i = format == SparseFormat::csr ? line : m.indices[k], j = format == SparseFormat::csr ? m.indices[k] : line;
        m.dense[i * d + j] += m.values[k];
      }
    const detail::SparseLines columns = detail::sparse_lines(ctx, m.view(), SparseFormat::csc, "X");
    const int max_bins = static_cast<int>(uniform_int(rng, 2, 256));
    const int64_t sample_rows = trial % 4 == 3 ? uniform_int(rng, 1, n) : 200000;  // sampling: the same rows drawn
    const uint64_t seed = rng();
    detail::FeatureBins dense = detail::find_bins(m.dense.data(), n, d, max_bins, sample_rows, seed, 2);
    detail::FeatureBins sparse = detail::find_bins_sparse(columns, max_bins, sample_rows, seed, 2);
    ASSERT_EQ(dense.offsets, sparse.offsets) << "trial " << trial;
    ASSERT_EQ(dense.values, sparse.values) << "trial " << trial;  // exact: the same order statistics
    std::vector<uint8_t> dense_codes(static_cast<std::size_t>(n * d)), sparse_codes(dense_codes.size());
    detail::bin_rows(m.dense.data(), n, d, dense, dense_codes.data(), 2);
    detail::value_ranges(m.dense.data(), n, d, dense_codes.data(), dense, 2);
    detail::bin_sparse_columns(columns, sparse, sparse_codes.data(), 2);
    EXPECT_EQ(dense_codes, sparse_codes) << "trial " << trial;
    EXPECT_EQ(dense.low, sparse.low) << "trial " << trial;
    EXPECT_EQ(dense.high, sparse.high) << "trial " << trial;
  }
}

}  // namespace
}  // namespace gpuml

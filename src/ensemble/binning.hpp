#pragma once
// Feature binning for the histogram-based random forests (issue 5; the forests themselves come
// next): per feature, at most max_bins − 1 ascending split thresholds found once from a sample of
// the rows, and the bin code of every value.
//
// Thresholds follow scikit-learn 1.9's histogram binning (HistGradientBoosting's
// _find_binning_thresholds, unweighted): with at most max_bins distinct values in the sample, the
// midpoints between consecutive distinct values (so a tree on the codes can make every split an
// exact tree could, at the same thresholds as scikit-learn's trees, which also split at
// midpoints); otherwise the "averaged_inverted_cdf" percentiles at 100 k / max_bins,
// k = 1 .. max_bins − 1, without repeats. A value x falls in bin b = the number
// of thresholds strictly below x: x <= thresholds[b] goes to the left of threshold b, as
// scikit-learn's trees send x <= threshold left.
#include <cstdint>
#include <vector>

#include "sparse_lines.hpp"
#include "gpuml/core/export.hpp"

namespace gpuml {
class Comm;
}

namespace gpuml::detail {

struct FeatureBins {
  std::vector<int64_t> offsets;  // feature j's thresholds are values[offsets[j], offsets[j + 1])
  std::vector<double> values;
  // After value_ranges: the smallest and largest value of X in each bin (feature j's bins at
  // offsets[j] + j ...; +inf / -inf for an empty bin). A split between two occupied bins cuts
  // halfway between their values, as scikit-learn cuts halfway between neighbouring values.
  std::vector<double> low, high;

  int64_t n_features() const { return static_cast<int64_t>(offsets.size()) - 1; }
  int64_t thresholds(int64_t j) const { return offsets[j + 1] - offsets[j]; }
  int64_t bins(int64_t j) const { return thresholds(j) + 1; }
  const double* begin(int64_t j) const { return values.data() + offsets[j]; }
  int64_t bin_index(int64_t j, int b) const { return offsets[j] + j + b; }
};

// The thresholds of every feature of X (n x d, row-major), from all rows when n <= sample_rows,
// else from sample_rows rows drawn without replacement with `seed`. max_bins in [2, 256]. NaN or
// infinity in the sampled rows is an invalid_argument error (bin_rows checks the rest).
// With a communicator of several ranks (collective), X is this rank's share of the rows of all
// ranks in rank order, and the sample is drawn from the indices of all rows and gathered: every
// rank gets the thresholds a single process would find on all rows, however they are split.
// (GPUML_API: exported for tests/cpp/ensemble/binning_test.cpp only.)
template <typename T>
GPUML_API FeatureBins find_bins(const T* X, int64_t n, int64_t d, int max_bins, int64_t sample_rows, uint64_t seed, int threads,
                                Comm* comm = nullptr);

// codes[j * n + i] = the bin of X[i, j] (feature-major: a feature's codes are contiguous). NaN or
// infinity is an invalid_argument error.
template <typename T>
GPUML_API void bin_rows(const T* X, int64_t n, int64_t d, const FeatureBins& bins, uint8_t* codes, int threads);

// Fills bins.low and bins.high from X and its codes (bin_rows's), over every row.
template <typename T>
GPUML_API void value_ranges(const T* X, int64_t n, int64_t d, const uint8_t* codes, FeatureBins& bins, int threads);

// Sparse X (CSC, canonical; one process): find_bins's thresholds of the dense matrix with the
// same values (the same sampled rows; each feature's implicit zeros among them counted, not
// stored), and bin_rows's codes with value_ranges's ranges in one pass (every implicit zero gets
// the code of 0.0 of its feature). The codes are the one dense structure: n x d bytes.
GPUML_API FeatureBins find_bins_sparse(const SparseLines& X, int max_bins, int64_t sample_rows, uint64_t seed, int threads);
GPUML_API void bin_sparse_columns(const SparseLines& X, FeatureBins& bins, uint8_t* codes, int threads);

// The ranges of every rank's rows (each rank's from value_ranges): the smallest low and the
// largest high of each bin over the ranks, the same on every rank. Collective.
void merge_value_ranges(FeatureBins& bins, Comm& comm);

}  // namespace gpuml::detail

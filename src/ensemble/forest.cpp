// The host reference forest (tree_builder.hpp): bootstrap, per-row statistics, trees grown in
// parallel (each from its own seed: the same forest whatever the thread count), predictions.
#include <omp.h>

#include <algorithm>
#include <string>

#include "core/random.hpp"
#include "ensemble/tree_builder.hpp"
#include "gpuml/core/error.hpp"

namespace gpuml::detail {
namespace {

uint64_t tree_seed(uint64_t seed, int64_t tree) {  // splitmix64 of (seed, tree)
  uint64_t x = seed + 0x9e3779b97f4a7c15ULL * static_cast<uint64_t>(tree + 1);
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

template <typename T>
Forest fit_forest(const T* X, int64_t n, int64_t d, const int32_t* labels, const T* y, const T* sample_weight,
                  const ForestRules& rules) {
  GPUML_EXPECT(n >= 1 && d >= 1, "a forest needs at least one sample and one feature");
  GPUML_EXPECT(rules.n_estimators >= 1, "n_estimators must be >= 1");
  GPUML_EXPECT((labels != nullptr) != (y != nullptr), "fit_forest: give labels or y");
  Forest forest;
  forest.classification = labels != nullptr;
  forest.width = rules.tree.width;
  GPUML_EXPECT(forest.classification || forest.width == 3, "regression forests carry W, S, Q");
  if (labels)
    GPUML_EXPECT(std::all_of(labels, labels + n, [&](int32_t c) { return c >= 0 && c < rules.tree.width; }),
                 "fit_forest: labels must be class indices in [0, k)");
  GPUML_EXPECT(rules.tree.max_features >= 1 && rules.tree.max_features <= d, "max_features must be in [1, n_features]");
  forest.bins = find_bins(X, n, d, rules.max_bins, 200000, rules.seed, rules.threads);
  std::vector<uint8_t> codes(static_cast<std::size_t>(n * d));
  bin_rows(X, n, d, forest.bins, codes.data(), rules.threads);
  forest.trees.resize(static_cast<std::size_t>(rules.n_estimators));
  const int width = forest.width;
#pragma omp parallel for num_threads(rules.threads) schedule(dynamic)
  for (int64_t t = 0; t < rules.n_estimators; ++t) {
    const uint64_t seed = tree_seed(rules.seed, t);
    std::vector<int32_t> counts(static_cast<std::size_t>(n), 1);
    if (rules.bootstrap) {
      std::fill(counts.begin(), counts.end(), 0);
      Random random(seed);
      for (int64_t draw = 0; draw < n; ++draw) ++counts[random.below(static_cast<uint64_t>(n))];
    }
    std::vector<double> row_stats(static_cast<std::size_t>(n * width), 0.0);
    std::vector<int32_t> rows;
    for (int64_t i = 0; i < n; ++i) {
      const double w = counts[i] * (sample_weight ? static_cast<double>(sample_weight[i]) : 1.0);
      if (!(w > 0.0)) continue;
      rows.push_back(static_cast<int32_t>(i));
      double* s = row_stats.data() + i * width;
      if (labels) {
        s[labels[i]] = w;
      } else {
        const double v = static_cast<double>(y[i]);
        s[0] = w, s[1] = w * v, s[2] = w * v * v;
      }
    }
    // The feature draws: a second seed from the tree's (the first drew the bootstrap).
    forest.trees[t] = grow_tree(codes.data(), n, d, forest.bins, row_stats.data(), std::move(rows), rules.tree, tree_seed(seed, 0));
  }
  return forest;
}

template <typename T>
void forest_predict(const Forest& forest, const T* X, int64_t n, int64_t d, double* out, int threads) {
  GPUML_EXPECT(forest.bins.n_features() == d, "X has " + std::to_string(d) + " features, the forest " +
                                                  std::to_string(forest.bins.n_features()));
  const int k = forest.classification ? forest.width : 1;
  std::fill(out, out + n * k, 0.0);
  const double share = 1.0 / static_cast<double>(forest.trees.size());
  constexpr int64_t kBlockRows = 1024;
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t begin = 0; begin < n; begin += kBlockRows) {
    const int64_t rows = std::min(kBlockRows, n - begin);
    std::vector<int32_t> leaves(static_cast<std::size_t>(rows));
    for (const Tree& tree : forest.trees) {  // trees in order: the same sums on any thread count
      tree_leaves(tree, X + begin * d, rows, d, leaves.data());
      for (int64_t i = 0; i < rows; ++i) {
        const double* s = tree.stats.data() + static_cast<int64_t>(leaves[i]) * forest.width;
        double* o = out + (begin + i) * k;
        if (forest.classification) {
          double total = 0.0;
          for (int c = 0; c < k; ++c) total += s[c];
          for (int c = 0; c < k; ++c) o[c] += share * s[c] / total;
        } else {
          o[0] += share * s[1] / s[0];
        }
      }
    }
  }
}

template Forest fit_forest<float>(const float*, int64_t, int64_t, const int32_t*, const float*, const float*, const ForestRules&);
template Forest fit_forest<double>(const double*, int64_t, int64_t, const int32_t*, const double*, const double*,
                                   const ForestRules&);
template void forest_predict<float>(const Forest&, const float*, int64_t, int64_t, double*, int);
template void forest_predict<double>(const Forest&, const double*, int64_t, int64_t, double*, int);

}  // namespace gpuml::detail

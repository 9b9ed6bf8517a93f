// The CPU KMeansBackend's k-means++ primitives skip rows through their nearest centers
// (detail::NearestCenters, the triangle inequality with detail::PlusPlusBound's margin) without
// changing a bit: candidate_potentials and update_closest with the gaps against the same calls
// without them, step after step, on fresh random data. Two kinds of data: Gaussian blobs (most
// rows skippable once their blob holds a center), and rows at the bound's edge (every row of a
// blob at one radius r from its center a, candidates at a + 2 (1 + t)(x - a) for t down to 0,
// so that |x - c| and |x - a| tie up to rounding).
//
// The backends are internal: this file reaches them through the src/ headers (their factories
// are exported for it).
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "../../../src/cluster/kmeans_backend.hpp"
#include "test_util.hpp"

namespace gpuml {
namespace {

using test::uniform_int;
using test::uniform_real;

template <typename T>
T squared_gap(const T* a, const T* b, int64_t d) {
  T sum = 0;
  for (int64_t j = d - 1; j >= 0; --j) sum += (a[j] - b[j]) * (a[j] - b[j]);  // any order keeps the margin
  return sum;
}

enum class Data { blobs, edge };

template <typename T>
void check_skipping(std::mt19937_64& rng, Data data, int64_t n, int64_t d, int64_t blobs, int threads) {
  SCOPED_TRACE(std::string(std::is_same_v<T, float> ? "float32" : "float64") + (data == Data::blobs ? " blobs" : " edge") +
               " n=" + std::to_string(n) + " d=" + std::to_string(d) + " blobs=" + std::to_string(blobs) +
               " threads=" + std::to_string(threads));
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<T> C(blobs * d), X(n * d), w(n);
  std::vector<int64_t> blob_of(n);
  std::vector<double> radius(blobs);
  for (auto& v : C) v = static_cast<T>(normal(rng) * 10.0);
  for (auto& r : radius) r = uniform_real(rng, 0.5, 3.0);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t b = blob_of[i] = uniform_int(rng, 0, blobs - 1);
    std::vector<double> u(d);
    double norm = 0.0;
    for (auto& v : u) {
      v = normal(rng);
      norm += v * v;
    }
    // edge: on the sphere of the blob's radius around its center; blobs: a unit Gaussian.
    const double scale = data == Data::edge ? radius[b] / std::sqrt(norm) : 1.0;
    for (int64_t j = 0; j < d; ++j) X[i * d + j] = static_cast<T>(static_cast<double>(C[b * d + j]) + scale * u[j]);
    w[i] = static_cast<T>(uniform_real(rng, 0.5, 2.0));
  }
  const int64_t k = blobs + 12, trials = 2 + static_cast<int64_t>(std::floor(std::log(static_cast<double>(k))));
  auto cpu = detail::make_kmeans_cpu_backend<T>(Context::cpu(threads));

  // The centers: the blobs' own centers (edge) or row 0 (blobs) first, then one step at a time.
  std::vector<T> centers(k * d);
  const int64_t given = data == Data::edge ? blobs : 1;
  std::copy_n(data == Data::edge ? C.data() : X.data(), given * d, centers.data());
  std::vector<T> closest_skip(n), closest_all(n);
  std::vector<int32_t> nearest_skip(n), nearest_all(n);
  auto update = [&](int64_t c, const std::vector<T>& gaps) {
    const T* center = centers.data() + c * d;
    cpu->update_closest(X.data(), n, d, center, closest_skip.data(), {nearest_skip.data(), gaps.data(), c}, c == 0);
    cpu->update_closest(X.data(), n, d, center, closest_all.data(), {nearest_all.data(), nullptr, c}, c == 0);
    ASSERT_EQ(std::memcmp(closest_skip.data(), closest_all.data(), n * sizeof(T)), 0) << "closest after center " << c;
    ASSERT_EQ(nearest_skip, nearest_all) << "nearest after center " << c;
  };
  auto gaps_to = [&](const T* rows, int64_t m, int64_t count) {
    std::vector<T> gaps(count * m);
    for (int64_t a = 0; a < count; ++a)
      for (int64_t q = 0; q < m; ++q) gaps[a * m + q] = squared_gap(rows + q * d, centers.data() + a * d, d);
    return gaps;
  };
  for (int64_t c = 0; c < given; ++c) update(c, gaps_to(centers.data() + c * d, 1, c));

  const detail::PlusPlusBound<T> bound(d);
  int64_t skippable = 0;  // rows x steps the bound lets the potentials skip: the test must see some
  std::vector<T> candidates(trials * d);
  std::vector<double> potentials_skip(trials), potentials_all(trials);
  for (int64_t c = given; c < k; ++c) {
    for (int64_t q = 0; q < trials; ++q) {
      const int64_t row = uniform_int(rng, 0, n - 1);
      if (data == Data::blobs) {
        std::copy_n(X.data() + row * d, d, candidates.data() + q * d);
        continue;
      }
      // a + 2 (1 + t)(x - a): |c - a| = 2 (1 + t) r, as far from the blob's rows as a is, up to t.
      const double t = std::array<double, 6>{0.0, 1e-7, 1e-6, 1e-5, 1e-4, 1e-2}[uniform_int(rng, 0, 5)];
      const T* a = C.data() + blob_of[row] * d;
      for (int64_t j = 0; j < d; ++j)
        candidates[q * d + j] = static_cast<T>(static_cast<double>(a[j]) +
                                               2.0 * (1.0 + t) * (static_cast<double>(X[row * d + j]) - static_cast<double>(a[j])));
    }
    const std::vector<T> gaps = gaps_to(candidates.data(), trials, c);
    for (int64_t i = 0; i < n; ++i) {
      bool all = true;
      for (int64_t q = 0; q < trials; ++q) all = all && bound.unchanged(gaps[nearest_all[i] * trials + q], closest_all[i]);
      skippable += all;
    }
    cpu->candidate_potentials(X.data(), w.data(), closest_skip.data(), {nearest_skip.data(), gaps.data(), c}, n, d,
                              candidates.data(), trials, potentials_skip.data());
    cpu->candidate_potentials(X.data(), w.data(), closest_all.data(), {nearest_all.data(), nullptr, c}, n, d,
                              candidates.data(), trials, potentials_all.data());
    ASSERT_EQ(std::memcmp(potentials_skip.data(), potentials_all.data(), trials * sizeof(double)), 0) << "step " << c;
    const int64_t best = std::min_element(potentials_all.begin(), potentials_all.end()) - potentials_all.begin();
    std::copy_n(candidates.data() + best * d, d, centers.data() + c * d);
    update(c, gaps_to(centers.data() + c * d, 1, c));
  }
  // Blobs: once a blob holds a center, its rows are skipped for candidates in other blobs.
  // Edge: the candidates with t >= 1e-2 clear the margin for their blob's rows.
  EXPECT_GT(skippable, n * (k - given) / 20);
}

TEST(KMeansBackendCpu, PlusPlusSkipsRowsWithoutChangingABit) {
  GPUML_FRESH_RNG(rng);
  for (Data data : {Data::blobs, Data::edge}) {
    check_skipping<float>(rng, data, uniform_int(rng, 2000, 4000), 64, 8, 1);
    check_skipping<float>(rng, data, uniform_int(rng, 2000, 4000), uniform_int(rng, 2, 20), 5, 3);
    check_skipping<double>(rng, data, uniform_int(rng, 2000, 4000), uniform_int(rng, 2, 70), 6, 2);
  }
}

// nearest_weights on the CPU: counts split over the context's threads (exact), weights added in row
// order; both against a plain loop over the rows, for 1, 2 and 4 threads.
TEST(KMeansBackendCpu, NearestWeightsCountAndSumInRowOrder) {
  GPUML_FRESH_RNG(rng);
  const int64_t n = uniform_int(rng, 200000, 400000), m = uniform_int(rng, 1, 5000);
  std::vector<int32_t> nearest(n);
  std::vector<double> w(n);
  for (int64_t i = 0; i < n; ++i) {
    nearest[i] = static_cast<int32_t>(uniform_int(rng, 0, m - 1));
    w[i] = uniform_real(rng, 0.0, 3.0);
  }
  std::vector<double> counts(m, 0.0), sums(m, 0.0);
  for (int64_t i = 0; i < n; ++i) {
    counts[nearest[i]] += 1.0;
    sums[nearest[i]] += w[i];
  }
  for (int threads : {1, 2, 4}) {
    auto cpu = detail::make_kmeans_cpu_backend<double>(Context::cpu(threads));
    std::vector<double> got(m, -1.0);
    cpu->nearest_weights(nullptr, nearest.data(), n, m, got.data());
    EXPECT_EQ(got, counts) << threads << " threads";
    cpu->nearest_weights(w.data(), nearest.data(), n, m, got.data());
    EXPECT_EQ(got, sums) << threads << " threads";  // the same bits: the same order
  }
}

}  // namespace
}  // namespace gpuml

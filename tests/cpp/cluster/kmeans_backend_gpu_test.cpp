// The CUDA KMeansBackend against the CPU backend, primitive by primitive, on fresh random data
// (skipped without a GPU): the *_from_products primitives, which see X only through its
// products with the centers (sparse X): assign_from_products (labels, dist2, count of changed
// labels, exact ties between duplicate centers, rows on a center), candidate_potentials_from_
// products (one and several candidate batches), update_closest_from_products and
// distances_from_products; plusplus_steps against the loop over the dense primitives; and the
// float32 assign on the tensor cores against the FP32 kernel alone.
//
// The backends are internal: this file reaches them through the src/ headers (their factories
// and detail::copy_bytes are exported for it).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "../backend_test_util.hpp"
#include "../../../src/cluster/kmeans_backend.hpp"
#include "test_util.hpp"

namespace gpuml {
namespace {

using test::ScopedEnv;
using test::to_device;
using test::to_host;
using test::uniform_int;
using test::uniform_real;

template <typename T>
std::string type_name() {
  return std::is_same_v<T, float> ? "float32" : "float64";
}

// Rows of X and centers as products would come from a sparse X: products = X Cᵀ, |x|² and |c|²,
// each formed in double and rounded to T. Exact ties: center 1 duplicates center 0 and the last
// center duplicates the middle one (equal norms and products, so equal |c|² − 2 x·c: the lowest
// index must win, whatever lane of the CUDA kernel holds it). Every 7th row is a copy of a center
// (|x − c|² ~ 0, where rounding makes the double expression negative and the clamp matters).
template <typename T>
struct Products {
  int64_t n = 0, k = 0;
  std::vector<T> products, row_norms, center_norms;

  Products(std::mt19937_64& rng, int64_t n_, int64_t k_, int64_t d) : n(n_), k(k_) {
    std::normal_distribution<double> normal(0.0, 1.0);
    std::vector<double> C(k * d), X(n * d);
    for (auto& v : C) v = normal(rng) * 2.0;
    if (k >= 2) std::copy(C.begin(), C.begin() + d, C.begin() + d);
    if (k >= 4) std::copy(C.begin() + (k / 2) * d, C.begin() + (k / 2 + 1) * d, C.begin() + (k - 1) * d);
    for (int64_t i = 0; i < n; ++i) {
      if (i % 7 == 0) {
        const int64_t c = uniform_int(rng, 0, k - 1);
        std::copy(C.begin() + c * d, C.begin() + (c + 1) * d, X.begin() + i * d);
      } else {
        for (int64_t j = 0; j < d; ++j) X[i * d + j] = normal(rng);
      }
    }
    auto dot = [d](const double* a, const double* b) {
      double s = 0.0;
      for (int64_t j = 0; j < d; ++j) s += a[j] * b[j];
      return s;
    };
    products.resize(n * k);
    row_norms.resize(n);
    center_norms.resize(k);
    for (int64_t c = 0; c < k; ++c) center_norms[c] = static_cast<T>(dot(&C[c * d], &C[c * d]));
    for (int64_t i = 0; i < n; ++i) {
      row_norms[i] = static_cast<T>(dot(&X[i * d], &X[i * d]));
      for (int64_t c = 0; c < k; ++c) products[i * k + c] = static_cast<T>(dot(&X[i * d], &C[c * d]));
    }
  }

  // The scale of |x_i|² − 2 x_i·c + |c|² (its terms' sizes): both backends evaluate the same double
  // expression and round it once to T, so they should agree bit for bit; one rounding of T at
  // this scale is allowed all the same.
  double scale(int64_t i, int64_t c) const {
    return static_cast<double>(row_norms[i]) + 2.0 * std::abs(static_cast<double>(products[i * k + c])) +
           static_cast<double>(center_norms[c]);
  }
};

template <typename T>
constexpr double kEps = std::numeric_limits<T>::epsilon();

template <typename T>
void check_assign(Context& gpu, std::mt19937_64& rng, int64_t n, int64_t k) {
  SCOPED_TRACE(type_name<T>() + " assign_from_products n=" + std::to_string(n) + " k=" + std::to_string(k));
  const Products<T> p(rng, n, k, 16);
  std::vector<int32_t> old_labels(n);
  for (auto& y : old_labels) y = static_cast<int32_t>(uniform_int(rng, 0, k - 1));
  auto cpu = detail::make_kmeans_cpu_backend<T>(Context::cpu());
  auto cuda = detail::make_kmeans_cuda_backend<T>(gpu);

  std::vector<int32_t> labels_cpu = old_labels;
  std::vector<T> dist2_cpu(n);
  const int64_t changes_cpu =
      cpu->assign_from_products(p.products.data(), p.row_norms.data(), n, p.center_norms.data(), k, labels_cpu.data(), dist2_cpu.data(), true);

  const Buffer products = to_device(gpu, p.products), row_norms = to_device(gpu, p.row_norms);
  Buffer labels = to_device(gpu, old_labels);
  Buffer dist2(gpu, n * sizeof(T));
  const int64_t changes_gpu =
      cuda->assign_from_products(products.as<T>(), row_norms.as<T>(), n, p.center_norms.data(), k, labels.as<int32_t>(), dist2.as<T>(), true);
  // An integer count over the same labels: exactly equal.
  EXPECT_EQ(changes_gpu, changes_cpu);
  const std::vector<int32_t> labels_gpu = to_host<int32_t>(gpu, labels, n);
  const std::vector<T> dist2_gpu = to_host<T>(gpu, dist2, n);
  int reported = 0;
  for (int64_t i = 0; i < n; ++i) {
    // The same double comparisons in the same order of preference: exactly equal labels.
    if (labels_gpu[i] != labels_cpu[i] && reported++ < 10)
      ADD_FAILURE() << "label of row " << i << ": cuda " << labels_gpu[i] << ", cpu " << labels_cpu[i];
    const double tol = kEps<T> * p.scale(i, labels_cpu[i]);
    if (!(std::abs(static_cast<double>(dist2_gpu[i]) - static_cast<double>(dist2_cpu[i])) <= tol) && reported++ < 10)
      ADD_FAILURE() << "dist2 of row " << i << ": cuda " << dist2_gpu[i] << ", cpu " << dist2_cpu[i] << ", tolerance " << tol;
    if (!(dist2_gpu[i] >= T(0)) && reported++ < 10) ADD_FAILURE() << "dist2 of row " << i << " is " << dist2_gpu[i];
  }
  if (k >= 2) {  // the duplicate of center 0 never wins
    for (int64_t i = 0; i < n; ++i)
      if (labels_gpu[i] == 1 && reported++ < 10) ADD_FAILURE() << "row " << i << " took center 1, a duplicate of center 0";
  }

  // Again from the new labels: nothing changes; without counting: 0, and the same labels.
  EXPECT_EQ(cuda->assign_from_products(products.as<T>(), row_norms.as<T>(), n, p.center_norms.data(), k, labels.as<int32_t>(),
                                       dist2.as<T>(), true),
            0);
  EXPECT_EQ(cuda->assign_from_products(products.as<T>(), row_norms.as<T>(), n, p.center_norms.data(), k, labels.as<int32_t>(),
                                       dist2.as<T>(), false),
            0);
  EXPECT_EQ(to_host<int32_t>(gpu, labels, n), labels_gpu);
}

template <typename T>
void check_closest_and_potentials(Context& gpu, std::mt19937_64& rng, int64_t n, int64_t m) {
  SCOPED_TRACE(type_name<T>() + " potentials / update_closest n=" + std::to_string(n) + " m=" + std::to_string(m));
  // The first candidate seeds `closest` (products n x 1 of its own), the m candidates follow.
  const Products<T> seed(rng, n, 1, 16);
  const Products<T> cand(rng, n, m, 16);
  std::vector<T> weights(n);
  for (auto& w : weights) w = static_cast<T>(uniform_real(rng, 0.1, 2.0));
  auto cpu = detail::make_kmeans_cpu_backend<T>(Context::cpu());
  auto cuda = detail::make_kmeans_cuda_backend<T>(gpu);
  const Buffer seed_products = to_device(gpu, seed.products), seed_norms = to_device(gpu, seed.row_norms);
  const Buffer products = to_device(gpu, cand.products), row_norms = to_device(gpu, cand.row_norms);
  const Buffer weights_dev = to_device(gpu, weights);

  // update_closest_from_products: with reset from the seed, then the min with candidate 0's
  // column (products n x 1: a copy of that column, and its norm).
  std::vector<T> closest_cpu(n, T(-1));
  cpu->update_closest_from_products(seed.products.data(), seed.row_norms.data(), n, seed.center_norms[0], closest_cpu.data(), true);
  Buffer closest = to_device(gpu, std::vector<T>(n, T(-1)));
  cuda->update_closest_from_products(seed_products.as<T>(), seed_norms.as<T>(), n, seed.center_norms[0], closest.as<T>(), true);
  std::vector<T> column(n);
  for (int64_t i = 0; i < n; ++i) column[i] = cand.products[i * m];
  const Buffer column_dev = to_device(gpu, column);
  cpu->update_closest_from_products(column.data(), cand.row_norms.data(), n, cand.center_norms[0], closest_cpu.data(), false);
  cuda->update_closest_from_products(column_dev.as<T>(), row_norms.as<T>(), n, cand.center_norms[0], closest.as<T>(), false);
  const std::vector<T> closest_gpu = to_host<T>(gpu, closest, n);
  int reported = 0;
  for (int64_t i = 0; i < n; ++i) {
    // The same double expression, rounded once to T: one T rounding at the terms' scale.
    const double tol = kEps<T> * std::max(seed.scale(i, 0), cand.scale(i, 0));
    if (!(std::abs(static_cast<double>(closest_gpu[i]) - static_cast<double>(closest_cpu[i])) <= tol) && reported++ < 10)
      ADD_FAILURE() << "closest[" << i << "]: cuda " << closest_gpu[i] << ", cpu " << closest_cpu[i] << ", tolerance " << tol;
  }

  // candidate_potentials_from_products, both from the CPU's closest (the primitive alone).
  const Buffer closest_in = to_device(gpu, closest_cpu);
  std::vector<double> pot_cpu(m, std::nan("")), pot_gpu(m, std::nan(""));
  cpu->candidate_potentials_from_products(cand.products.data(), cand.row_norms.data(), weights.data(), closest_cpu.data(), n,
                                          cand.center_norms.data(), m, pot_cpu.data());
  cuda->candidate_potentials_from_products(products.as<T>(), row_norms.as<T>(), weights_dev.as<T>(), closest_in.as<T>(), n,
                                           cand.center_norms.data(), m, pot_gpu.data());
  // Sums in double of the same non-negative terms (w_i times the same T value) in different
  // orders: rounding errors of either sign, ~sqrt(n) 1e-16 relative (< 1e-13 for n ~ 10^5):
  // 1e-12 relative for both types.
  for (int64_t q = 0; q < m; ++q) EXPECT_NEAR(pot_gpu[q], pot_cpu[q], 1e-12 * pot_cpu[q]) << "potential of candidate " << q;
  // Deterministic: the same call, the same bits.
  std::vector<double> pot_again(m);
  cuda->candidate_potentials_from_products(products.as<T>(), row_norms.as<T>(), weights_dev.as<T>(), closest_in.as<T>(), n,
                                           cand.center_norms.data(), m, pot_again.data());
  EXPECT_EQ(std::memcmp(pot_again.data(), pot_gpu.data(), m * sizeof(double)), 0);
}

template <typename T>
void check_distances(Context& gpu, std::mt19937_64& rng, int64_t n, int64_t k) {
  SCOPED_TRACE(type_name<T>() + " distances_from_products n=" + std::to_string(n) + " k=" + std::to_string(k));
  const Products<T> p(rng, n, k, 16);
  std::vector<T> out_cpu = p.products;
  detail::make_kmeans_cpu_backend<T>(Context::cpu())->distances_from_products(out_cpu.data(), p.row_norms.data(), n, p.center_norms.data(), k);
  Buffer out = to_device(gpu, p.products);
  const Buffer row_norms = to_device(gpu, p.row_norms);
  detail::make_kmeans_cuda_backend<T>(gpu)->distances_from_products(out.as<T>(), row_norms.as<T>(), n, p.center_norms.data(), k);
  const std::vector<T> out_gpu = to_host<T>(gpu, out, n * k);
  int reported = 0;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t c = 0; c < k; ++c) {
      // sqrt of the same T value (correctly rounded on both): equal; allowed, the square root of
      // one T rounding at the terms' scale (its effect near a zero distance).
      const double tol = std::sqrt(kEps<T> * p.scale(i, c));
      const double a = static_cast<double>(out_gpu[i * k + c]), b = static_cast<double>(out_cpu[i * k + c]);
      if (!(std::abs(a - b) <= tol) && reported++ < 10)
        ADD_FAILURE() << "distance[" << i << "][" << c << "]: cuda " << a << ", cpu " << b << ", tolerance " << tol;
    }
}

// k covers one lane per row (1), groups of 4 and 8 lanes, a warp (40) and a warp with several
// columns per lane (300).
TEST(KMeansBackendGpu, AssignFromProductsMatchesCpu) {
  GPUML_CUDA_CONTEXT_OR_SKIP(gpu);
  GPUML_FRESH_RNG(rng);
  for (int64_t n : {int64_t(1), uniform_int(rng, 2900, 3100), 100000 + 2 * uniform_int(rng, 0, 500) + 1})
    for (int64_t k : {1, 3, 8, 40, 300}) {
      if (n == 1 && k > 1) continue;
      check_assign<float>(gpu, rng, n, k);
      check_assign<double>(gpu, rng, n, k);
    }
}

// m = 300: two batches of candidates (256 + 44).
TEST(KMeansBackendGpu, PotentialsAndClosestFromProductsMatchCpu) {
  GPUML_CUDA_CONTEXT_OR_SKIP(gpu);
  GPUML_FRESH_RNG(rng);
  for (int64_t n : {int64_t(1), uniform_int(rng, 2900, 3100), 100000 + 2 * uniform_int(rng, 0, 500) + 1})
    for (int64_t m : {1, 5, 40, 300}) {
      check_closest_and_potentials<float>(gpu, rng, n, m);
      check_closest_and_potentials<double>(gpu, rng, n, m);
    }
}

// k-means||'s merge: the first batch (first == 0) takes every row's D², later ones where lower;
// negative D² (rounding) clamp to 0; equal D² keep the earlier candidate; listed rows end at 0.
// Pure comparisons and copies: the two backends must agree exactly.
template <typename T>
void check_merge_nearest(Context& gpu, std::mt19937_64& rng, int64_t n) {
  SCOPED_TRACE(type_name<T>() + " n=" + std::to_string(n));
  auto cpu = detail::make_kmeans_cpu_backend<T>(Context::cpu());
  auto cuda = detail::make_kmeans_cuda_backend<T>(gpu);
  std::vector<T> closest_cpu(n), closest_gpu;
  std::vector<int32_t> nearest_cpu(n), nearest_gpu;
  Buffer closest = to_device(gpu, closest_cpu), nearest = to_device(gpu, nearest_cpu);
  int64_t first = 0;
  for (int batch = 0; batch < 4; ++batch) {
    const int64_t m = uniform_int(rng, 1, 300);
    std::vector<int32_t> labels(n);
    std::vector<T> dist2(n);
    for (int64_t i = 0; i < n; ++i) {
      labels[i] = static_cast<int32_t>(uniform_int(rng, 0, m - 1));
      // a few small values (some negative), a few repeats of the row's current D², the rest spread
      const int64_t kind = uniform_int(rng, 0, 9);
      dist2[i] = kind == 0 ? static_cast<T>(uniform_real(rng, -1e-3, 1e-3))
                 : kind == 1 && batch > 0 ? closest_cpu[i]
                                          : static_cast<T>(uniform_real(rng, 0.0, 100.0));
    }
    std::vector<int64_t> zero_rows;
    for (int64_t e = uniform_int(rng, 0, 20); e > 0 && n > 0; --e) zero_rows.push_back(uniform_int(rng, 0, n - 1));
    const Buffer labels_d = to_device(gpu, labels), dist2_d = to_device(gpu, dist2);
    cpu->merge_nearest(labels.data(), dist2.data(), n, first, closest_cpu.data(), nearest_cpu.data(), zero_rows.data(),
                       static_cast<int64_t>(zero_rows.size()));
    cuda->merge_nearest(labels_d.as<int32_t>(), dist2_d.as<T>(), n, first, closest.as<T>(), nearest.as<int32_t>(),
                        zero_rows.data(), static_cast<int64_t>(zero_rows.size()));
    closest_gpu = to_host<T>(gpu, closest, n);
    nearest_gpu = to_host<int32_t>(gpu, nearest, n);
    int reported = 0;
    for (int64_t i = 0; i < n; ++i)
      if ((std::memcmp(&closest_gpu[i], &closest_cpu[i], sizeof(T)) != 0 || nearest_gpu[i] != nearest_cpu[i]) && reported++ < 10)
        ADD_FAILURE() << "batch " << batch << " row " << i << ": cuda " << closest_gpu[i] << " / " << nearest_gpu[i] << ", cpu "
                      << closest_cpu[i] << " / " << nearest_cpu[i];
    for (int64_t r : zero_rows) EXPECT_EQ(closest_cpu[r], T(0));
    for (int64_t i = 0; i < n; ++i) EXPECT_GE(closest_cpu[i], T(0)) << i;
    first += m;
  }
}

TEST(KMeansBackendGpu, MergeNearestMatchesCpu) {
  GPUML_CUDA_CONTEXT_OR_SKIP(gpu);
  GPUML_FRESH_RNG(rng);
  for (int64_t n : {int64_t(1), uniform_int(rng, 2900, 3100), 200000 + uniform_int(rng, 0, 999)}) {
    check_merge_nearest<float>(gpu, rng, n);
    check_merge_nearest<double>(gpu, rng, n);
  }
}

// k-means||'s draws (oversampling_potential, oversample) and candidate weights (nearest_weights).
// Weights are halves (some zero) and D² multiples of 1/16 below 64 (some zero): every sum is exact
// in double in any order, so φ has the same bits on both backends and the draws must be the same
// rows; the candidate weights, integers or halves, must be equal too.
template <typename T>
void check_oversample(Context& gpu, std::mt19937_64& rng, int64_t n) {
  SCOPED_TRACE(type_name<T>() + " n=" + std::to_string(n));
  auto cpu = detail::make_kmeans_cpu_backend<T>(Context::cpu());
  auto cuda = detail::make_kmeans_cuda_backend<T>(gpu);
  std::vector<T> w(n), closest(n);
  for (int64_t i = 0; i < n; ++i) {
    w[i] = static_cast<T>(0.5 * static_cast<double>(uniform_int(rng, i % 11 == 0 ? 0 : 1, 4)));
    closest[i] = static_cast<T>(static_cast<double>(uniform_int(rng, 0, 1023)) / 16.0);
  }
  const Buffer w_d = to_device(gpu, w), closest_d = to_device(gpu, closest);
  const double phi_cpu = cpu->oversampling_potential(w.data(), closest.data(), n);
  const double phi_gpu = cuda->oversampling_potential(w_d.as<T>(), closest_d.as<T>(), n);
  EXPECT_EQ(phi_gpu, phi_cpu);  // exact: see above
  const uint64_t key = rng();
  for (const double oversampling : {2.0, 64.0, 0.5 * static_cast<double>(n)}) {
    for (uint64_t round = 0; round < 3; ++round) {
      const int64_t offset = uniform_int(rng, 0, 1 << 20);
      const std::vector<int64_t> chosen_cpu = cpu->oversample(w.data(), closest.data(), n, oversampling, phi_cpu, key, round, offset);
      const std::vector<int64_t> chosen_gpu =
          cuda->oversample(w_d.as<T>(), closest_d.as<T>(), n, oversampling, phi_cpu, key, round, offset);
      EXPECT_EQ(chosen_gpu, chosen_cpu) << "oversampling " << oversampling << ", round " << round;
      for (int64_t i : chosen_cpu) EXPECT_GT(static_cast<double>(w[i]) * static_cast<double>(closest[i]), 0.0) << i;
    }
  }
  const int64_t m = uniform_int(rng, 1, 3000);
  std::vector<int32_t> nearest(n);
  for (auto& v : nearest) v = static_cast<int32_t>(uniform_int(rng, 0, m - 1));
  const Buffer nearest_d = to_device(gpu, nearest);
  for (const bool weighted : {false, true}) {
    std::vector<double> totals_cpu(m, -1.0), totals_gpu(m, -1.0);
    cpu->nearest_weights(weighted ? w.data() : nullptr, nearest.data(), n, m, totals_cpu.data());
    cuda->nearest_weights(weighted ? w_d.as<T>() : nullptr, nearest_d.as<int32_t>(), n, m, totals_gpu.data());
    EXPECT_EQ(totals_gpu, totals_cpu) << (weighted ? "weighted" : "counts");
    double total = 0.0;
    for (double v : totals_cpu) total += v;
    double expected = weighted ? 0.0 : static_cast<double>(n);
    if (weighted)
      for (T v : w) expected += static_cast<double>(v);
    EXPECT_EQ(total, expected);
  }
}

TEST(KMeansBackendGpu, OversampleMatchesCpu) {
  GPUML_CUDA_CONTEXT_OR_SKIP(gpu);
  GPUML_FRESH_RNG(rng);
  for (int64_t n : {int64_t(1), uniform_int(rng, 2900, 3100), 200000 + uniform_int(rng, 0, 999)}) {
    check_oversample<float>(gpu, rng, n);
    check_oversample<double>(gpu, rng, n);
  }
}

TEST(KMeansBackendGpu, DistancesFromProductsMatchCpu) {
  GPUML_CUDA_CONTEXT_OR_SKIP(gpu);
  GPUML_FRESH_RNG(rng);
  for (int64_t n : {int64_t(1), uniform_int(rng, 2900, 3100)})
    for (int64_t k : {1, 3, 40}) {
      check_distances<float>(gpu, rng, n, k);
      check_distances<double>(gpu, rng, n, k);
    }
}

// plusplus_steps (the CUDA backend's k-means++ in device memory) against the same steps taken
// through the same backend's fine primitives, as the driver's loop takes them. X holds small
// integers and the weights halves, so every distance, sum and threshold comparison is exact in
// both paths, whatever their summation orders: the same draws must choose the same rows (the
// centers equal bit for bit) and leave the same closest, with rows skipped through their nearest
// centers (NearestCenters) and without; and the same nearest centers. d covers every layout of the
// potentials pass (rows in registers as 4 or up to 16 vectors a lane, candidates padded to
// whole groups of vectors, or read per candidate) and n several chunks of rows.
template <typename T>
void check_plusplus_steps(Context& gpu, std::mt19937_64& rng, int64_t n, int64_t d, int64_t k, bool weighted) {
  SCOPED_TRACE(type_name<T>() + " plusplus_steps n=" + std::to_string(n) + " d=" + std::to_string(d) +
               " k=" + std::to_string(k) + (weighted ? " weighted" : ""));
  // Blobs around k / 2 integer centers in [-10, 10]; |x - c|² <= 300 * 40² < 2^24: exact in float.
  std::normal_distribution<double> normal(0.0, 2.0);
  const int64_t blobs = std::max<int64_t>(1, k / 2);
  std::vector<double> C(blobs * d);
  for (auto& v : C) v = static_cast<double>(uniform_int(rng, -10, 10));
  std::vector<T> X(n * d), w(n);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t b = uniform_int(rng, 0, blobs - 1);
    for (int64_t j = 0; j < d; ++j) X[i * d + j] = static_cast<T>(std::clamp(std::round(C[b * d + j] + normal(rng)), -20.0, 20.0));
    w[i] = static_cast<T>(0.5 * static_cast<double>(uniform_int(rng, 1, 4)));
  }
  auto cuda = detail::make_kmeans_cuda_backend<T>(gpu);
  const Buffer Xd = to_device(gpu, X), wd = to_device(gpu, w);
  const T* weights = weighted ? wd.as<const T>() : nullptr;
  const int64_t trials = 2 + static_cast<int64_t>(std::floor(std::log(static_cast<double>(k))));
  std::vector<double> uniforms((k - 1) * trials);
  for (double& u : uniforms) u = uniform_real(rng, 0.0, 1.0);

  // The loop over the primitives, from row 0 as the first center.
  std::vector<T> want(k * d);
  std::copy(X.begin(), X.begin() + d, want.begin());
  Buffer closest_want = to_device(gpu, std::vector<T>(n));
  Buffer nearest_want = to_device(gpu, std::vector<int32_t>(n));
  cuda->update_closest(Xd.as<T>(), n, d, want.data(), closest_want.as<T>(), {nearest_want.as<int32_t>(), nullptr, 0}, true);
  double potential = cuda->weighted_sum(weights, closest_want.as<T>(), n);
  const double first_potential = potential;
  std::vector<double> thresholds(trials), potentials(trials);
  std::vector<int64_t> rows(trials);
  std::vector<T> candidates(trials * d);
  for (int64_t c = 1; c < k; ++c) {
    for (int64_t t = 0; t < trials; ++t) thresholds[t] = uniforms[(c - 1) * trials + t] * potential;
    cuda->search_cumsum(weights, closest_want.as<T>(), n, thresholds.data(), trials, rows.data());
    cuda->gather_rows(Xd.as<T>(), n, d, rows.data(), trials, candidates.data());
    cuda->candidate_potentials(Xd.as<T>(), weights, closest_want.as<T>(), {}, n, d, candidates.data(), trials, potentials.data());
    const int64_t best = std::min_element(potentials.begin(), potentials.end()) - potentials.begin();
    std::copy_n(candidates.begin() + best * d, d, want.begin() + c * d);
    cuda->update_closest(Xd.as<T>(), n, d, want.data() + c * d, closest_want.as<T>(), {nearest_want.as<int32_t>(), nullptr, c},
                         false);
    potential = potentials[best];
  }

  for (bool skipping : {true, false}) {
    SCOPED_TRACE(skipping ? "rows skipped through their nearest centers" : "every row read");
    std::vector<T> got(k * d);
    std::copy(X.begin(), X.begin() + d, got.begin());
    Buffer closest = to_device(gpu, std::vector<T>(n));
    Buffer nearest = to_device(gpu, std::vector<int32_t>(n));
    int32_t* kept = skipping ? nearest.as<int32_t>() : nullptr;
    cuda->update_closest(Xd.as<T>(), n, d, got.data(), closest.as<T>(), {kept, nullptr, 0}, true);
    ASSERT_TRUE(cuda->plusplus_steps(Xd.as<T>(), weights, n, d, closest.as<T>(), kept, first_potential, uniforms.data(), trials,
                                     1, k, got.data()));
    for (int64_t c = 0; c < k; ++c)
      ASSERT_EQ(std::memcmp(got.data() + c * d, want.data() + c * d, d * sizeof(T)), 0) << "center " << c;
    EXPECT_EQ(to_host<T>(gpu, closest, n), to_host<T>(gpu, closest_want, n));
    if (skipping) EXPECT_EQ(to_host<int32_t>(gpu, nearest, n), to_host<int32_t>(gpu, nearest_want, n));
  }
}

TEST(KMeansBackendGpu, PlusPlusStepsMatchTheLoopOverPrimitives) {
  GPUML_CUDA_CONTEXT_OR_SKIP(gpu);
  GPUML_FRESH_RNG(rng);
  const int64_t n = 3 * 2048 + uniform_int(rng, 1, 3000);  // several chunks of the potentials pass
  // float: 16-byte vectors of 4; d = 64 fills 4 vectors a lane, 8 and 40 pad the candidates, 3
  // and 300 read rows per candidate. double: vectors of 2.
  for (int64_t d : {64, 8, 40, 3, 300}) check_plusplus_steps<float>(gpu, rng, n, d, uniform_int(rng, 2, 60), d % 2 == 0);
  for (int64_t d : {10, 60, 7}) check_plusplus_steps<double>(gpu, rng, n, d, uniform_int(rng, 2, 60), d != 7);
  check_plusplus_steps<float>(gpu, rng, uniform_int(rng, 1, 40), 16, 3, true);  // fewer rows than a group's trip
}

// Where the candidates' columns (trials x n values) do not fit under the context's memory limit,
// plusplus_steps declines (returns false, closest untouched, the context usable) so that the
// driver's loop runs instead of the fit failing.
TEST(KMeansBackendGpu, PlusPlusStepsDeclineWhereTheirBufferDoesNotFit) {
  GPUML_CUDA_CONTEXT_OR_SKIP(gpu);
  GPUML_FRESH_RNG(rng);
  const int64_t n = uniform_int(rng, 20000, 30000), d = 8, k = 10, trials = 2 + 2;  // 2 + floor(ln 10)
  std::vector<float> X(n * d);
  for (float& v : X) v = static_cast<float>(uniform_int(rng, -20, 20));
  auto cuda = detail::make_kmeans_cuda_backend<float>(gpu);
  const Buffer Xd = to_device(gpu, X);
  Buffer closest = to_device(gpu, std::vector<float>(n));
  cuda->update_closest(Xd.as<float>(), n, d, X.data(), closest.as<float>(), {}, true);
  const std::vector<float> before = to_host<float>(gpu, closest, n);
  const double potential = cuda->weighted_sum(nullptr, closest.as<float>(), n);
  std::vector<double> uniforms((k - 1) * trials, 0.5);
  std::vector<float> centers(k * d, 0.0f);
  gpu.set_memory_limit(gpu.memory_in_use() + trials * n * static_cast<int64_t>(sizeof(float)) / 2);
  EXPECT_FALSE(cuda->plusplus_steps(Xd.as<float>(), nullptr, n, d, closest.as<float>(), nullptr, potential, uniforms.data(),
                                    trials, 1, k, centers.data()));
  gpu.set_memory_limit(0);
  EXPECT_EQ(to_host<float>(gpu, closest, n), before);
  EXPECT_TRUE(cuda->plusplus_steps(Xd.as<float>(), nullptr, n, d, closest.as<float>(), nullptr, potential, uniforms.data(),
                                   trials, 1, k, centers.data()));
}

enum class AssignData { normal, ties, offset, blobs };

// The float32 assign as users get it (TF32 products on the tensor cores, near ties settled
// exactly, doubtful rows re-assigned by the FP32 kernel) against the FP32 kernel alone
// (GPUML_KMEANS_ASSIGN=fp32), from the same old labels: the same labels, the same dist2 bits, the
// same count of changes. Then the TF32 kernel without its FP32 pass ("tf32-unchecked"): every
// row it settles equals the FP32 kernel's, and on data without crowded ties it settles all but
// max_handed_back of them (otherwise the comparison above would test the FP32 kernel against itself).
void check_tensor_core_assign(Context& gpu, std::mt19937_64& rng, int64_t n, int64_t d, int64_t k, AssignData data,
                              double max_handed_back) {
  SCOPED_TRACE("assign n=" + std::to_string(n) + " d=" + std::to_string(d) + " k=" + std::to_string(k) + " data=" +
               std::to_string(static_cast<int>(data)));
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> X(n * d), C(k * d);
  if (data == AssignData::blobs) {  // 20 blobs in [-10, 10]^d; centers are rows, several per blob
    std::vector<float> blob(20 * d);
    for (float& v : blob) v = static_cast<float>(uniform_real(rng, -10.0, 10.0));
    for (int64_t i = 0; i < n; ++i) {
      const int64_t b = uniform_int(rng, 0, 19);
      for (int64_t j = 0; j < d; ++j) X[i * d + j] = blob[b * d + j] + normal(rng);
    }
    for (int64_t c = 0; c < k; ++c) {
      const int64_t i = uniform_int(rng, 0, n - 1);
      std::copy(X.begin() + i * d, X.begin() + (i + 1) * d, C.begin() + c * d);
    }
  } else {
    const float shift = data == AssignData::offset ? 1000.0f : 0.0f;  // a large mean: |x||c| >> the gaps
    for (float& v : C) v = normal(rng) + shift;
    for (float& v : X) v = normal(rng) + shift;
    if (data == AssignData::ties && k >= 3) {
      std::copy(C.begin(), C.begin() + d, C.begin() + d);  // center 1 duplicates center 0
      for (int64_t j = 0; j < d; ++j) C[2 * d + j] = C[j] * (1.0f + 1e-6f * normal(rng));  // 2 nearly does
      for (int64_t i = 0; i < n; ++i) {
        const int64_t a = uniform_int(rng, 0, k - 1), b = uniform_int(rng, 0, k - 1);
        for (int64_t j = 0; j < d; ++j) {
          if (i % 3 == 0) X[i * d + j] = 0.5f * (C[a * d + j] + C[b * d + j]);  // about equally far from a and b
          if (i % 5 == 0) X[i * d + j] = C[a * d + j];                          // on a center
        }
      }
    }
  }
  std::vector<int32_t> old_labels(n);
  for (auto& y : old_labels) y = static_cast<int32_t>(uniform_int(rng, 0, k - 1));
  auto cuda = detail::make_kmeans_cuda_backend<float>(gpu);
  const Buffer Xd = to_device(gpu, X);
  auto run = [&](const char* path, const std::vector<int32_t>& start, std::vector<int32_t>& labels_out, std::vector<float>& dist2_out) {
    ScopedEnv env("GPUML_KMEANS_ASSIGN", path);
    Buffer labels = to_device(gpu, start);
    Buffer dist2 = to_device(gpu, std::vector<float>(n, -1.0f));
    const int64_t changes = cuda->assign(Xd.as<float>(), n, d, C.data(), k, labels.as<int32_t>(), dist2.as<float>(), true);
    labels_out = to_host<int32_t>(gpu, labels, n);
    dist2_out = to_host<float>(gpu, dist2, n);
    return changes;
  };
  std::vector<int32_t> labels_fp32, labels_tc;
  std::vector<float> dist2_fp32, dist2_tc;
  const int64_t changes_fp32 = run("fp32", old_labels, labels_fp32, dist2_fp32);
  int reported = 0;
  // The default path (warpgroup MMAs on an sm_90a build) and the mma.sync kernel.
  for (const char* path : {static_cast<const char*>(nullptr), "tf32-mma"}) {
    SCOPED_TRACE(path ? path : "default");
    const int64_t changes_tc = run(path, old_labels, labels_tc, dist2_tc);
    EXPECT_EQ(changes_tc, changes_fp32);  // integer counts over equal labels: exactly equal
    for (int64_t i = 0; i < n; ++i) {
      // Exactness is the contract: equal labels, dist2 equal bit for bit.
      if ((labels_tc[i] != labels_fp32[i] || std::memcmp(&dist2_tc[i], &dist2_fp32[i], sizeof(float)) != 0) && reported++ < 10)
        ADD_FAILURE() << "row " << i << ": tensor cores " << labels_tc[i] << " / " << dist2_tc[i] << ", FP32 " << labels_fp32[i]
                      << " / " << dist2_fp32[i];
    }
  }
  if (d > 128) return;  // wider rows take the FP32 kernel: nothing is handed back
  std::vector<int32_t> labels_unchecked;
  std::vector<float> dist2_unchecked;
  run("tf32-unchecked", std::vector<int32_t>(n, -1), labels_unchecked, dist2_unchecked);
  int64_t handed_back = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (labels_unchecked[i] == -1) {
      ++handed_back;
      if (dist2_unchecked[i] != -1.0f && reported++ < 10) ADD_FAILURE() << "row " << i << " handed back, yet its dist2 was written";
    } else if ((labels_unchecked[i] != labels_fp32[i] ||
                std::memcmp(&dist2_unchecked[i], &dist2_fp32[i], sizeof(float)) != 0) && reported++ < 10) {
      ADD_FAILURE() << "row " << i << " settled on the tensor cores: " << labels_unchecked[i] << " / " << dist2_unchecked[i]
                    << ", FP32 " << labels_fp32[i] << " / " << dist2_fp32[i];
    }
  }
  std::printf("[ handed back ] %lld of %lld rows (n=%lld d=%lld k=%lld data=%d)\n", static_cast<long long>(handed_back),
              static_cast<long long>(n), static_cast<long long>(n), static_cast<long long>(d), static_cast<long long>(k),
              static_cast<int>(data));
  // Counted, not timed: a kernel that handed every row back would be exact and useless.
  EXPECT_LE(static_cast<double>(handed_back), max_handed_back * static_cast<double>(n)) << handed_back << " of " << n << " rows handed back";
}

TEST(KMeansBackendGpu, TensorCoreAssignEqualsTheFp32Kernel) {
  GPUML_CUDA_CONTEXT_OR_SKIP(gpu);
  GPUML_FRESH_RNG(rng);
  // Shapes around the kernel's tiles (128 rows, 128 centers, 32-feature slices, 16-byte vectors).
  check_tensor_core_assign(gpu, rng, 20000 + uniform_int(rng, 0, 127), 64, 300, AssignData::normal, 0.02);
  check_tensor_core_assign(gpu, rng, 3001, 37, 129, AssignData::normal, 0.02);
  check_tensor_core_assign(gpu, rng, 4099, 128, 256, AssignData::normal, 0.02);
  check_tensor_core_assign(gpu, rng, 129, 3, 5, AssignData::normal, 0.02);
  check_tensor_core_assign(gpu, rng, 1, 1, 1, AssignData::normal, 0.0);
  check_tensor_core_assign(gpu, rng, 777, 129, 40, AssignData::normal, 0.0);
  // More center tiles than the warpgroup kernel's stages: the centers stream through them per row tile.
  check_tensor_core_assign(gpu, rng, 6000 + uniform_int(rng, 0, 127), 48, 1000, AssignData::normal, 0.02);
  // ~3 centers per blob: most rows have two or three centers within the TF32 error bound, and a
  // row goes back when two of them fall in one of its 8 lists (two: 1 in 8, three: about 1 in 3;
  // 10.7% and 16.4% handed back for two seeds on an H100, 5.0% for one with warpgroup MMAs).
  check_tensor_core_assign(gpu, rng, 20000, 64, 64, AssignData::blobs, 0.35);
  check_tensor_core_assign(gpu, rng, 10000, 32, 200, AssignData::ties, 1.0);
  check_tensor_core_assign(gpu, rng, 5000, 64, 100, AssignData::offset, 1.0);  // most rows handed back
}

}  // namespace
}  // namespace gpuml

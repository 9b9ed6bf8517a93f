// 64-bit sizes on the GPU (issue 9): KMeans, LinearRegression and PCA on an X of more than 2^31
// elements (33.6M x 64 float32, 8.6 GB), each checked against the structure the data were drawn
// from: KMeans finds the four generating centers and puts every row with its own; OLS recovers
// the generating coefficients; PCA's leading components are the axes of the four largest
// variances, with those variances. A 32-bit index anywhere would wrap and break these. On a GPU
// only (the CPU backend is not the point, and 8.6 GB would not fit CI); the names leave out "Gpu"
// so that scripts/gpu-check's compute-sanitizer run does not take them.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <random>
#include <vector>

#include "gpuml/gpuml.hpp"
#include "test_util.hpp"

namespace gpuml {
namespace {

constexpr int64_t kD = 64;
constexpr int64_t kN = (int64_t(1) << 31) / kD + 1000;  // n * d = 2^31 + 64000

// Rows of X drawn in parallel, each thread's stream seeded from `seed` and its block, so the data
// depend only on the seed. fill(row, rng, out) writes one row.
template <typename Fill>
std::vector<float> draw_rows(uint64_t seed, Fill fill) {
  std::vector<float> X(static_cast<std::size_t>(kN * kD));
  constexpr int64_t kBlockRows = 1 << 16;
#pragma omp parallel for schedule(dynamic)
  for (int64_t block = 0; block < (kN + kBlockRows - 1) / kBlockRows; ++block) {
    std::mt19937_64 rng(seed ^ (0x9E3779B97F4A7C15ull * static_cast<uint64_t>(block + 1)));
    for (int64_t i = block * kBlockRows; i < std::min(kN, (block + 1) * kBlockRows); ++i) fill(i, rng, X.data() + i * kD);
  }
  return X;
}

TEST(LargeSizes, KMeansPastTwoToTheThirtyOneElements) {
  GPUML_CUDA_CONTEXT_OR_SKIP(gpu);
  GPUML_FRESH_RNG(rng);
  const uint64_t seed = rng();
  // Four centers at +-10 on two coordinates each; unit noise: every row is nearer its own center.
  auto center = [](int64_t c, int64_t j) { return j == 2 * c ? 10.0f : j == 2 * c + 1 ? -10.0f : 0.0f; };
  const std::vector<float> X = draw_rows(seed, [&](int64_t i, std::mt19937_64& r, float* row) {
    std::normal_distribution<float> noise(0.0f, 1.0f);
    for (int64_t j = 0; j < kD; ++j) row[j] = center(i % 4, j) + noise(r);
  });
  KMeansParams params;
  params.n_clusters = 4;
  params.max_iter = 30;
  params.random_state = rng();
  KMeans km(params);
  km.fit(gpu, host_view(X.data(), kN, kD));
  const float* centers = km.cluster_centers().as<float>();
  const int32_t* labels = km.labels().as<int32_t>();
  ASSERT_EQ(km.labels().spec().shape[0], kN);
  // Each fitted center is within 0.01 of one generating center (the mean of 8.4M unit-noise rows
  // is off by ~4e-4 per coordinate), and the rows of a generating center share one label.
  int32_t label_of[4];
  for (int c = 0; c < 4; ++c) label_of[c] = labels[c];
  for (int c = 0; c < 4; ++c) {
    const float* fitted = centers + static_cast<int64_t>(label_of[c]) * kD;
    for (int64_t j = 0; j < kD; ++j) ASSERT_NEAR(fitted[j], center(c, j), 0.01) << "center " << c << " coordinate " << j;
  }
  int64_t wrong = 0;
#pragma omp parallel for reduction(+ : wrong)
  for (int64_t i = 0; i < kN; ++i) wrong += labels[i] != label_of[i % 4];
  EXPECT_EQ(wrong, 0);  // 10 sigma of separation: no row is nearer another center
}

TEST(LargeSizes, LinearRegressionPastTwoToTheThirtyOneElements) {
  GPUML_CUDA_CONTEXT_OR_SKIP(gpu);
  GPUML_FRESH_RNG(rng);
  std::vector<double> w(kD);
  for (double& v : w) v = test::uniform_real(rng, -2.0, 2.0);
  const double intercept = test::uniform_real(rng, -5.0, 5.0);
  std::vector<float> y(static_cast<std::size_t>(kN));
  const std::vector<float> X = draw_rows(rng(), [&](int64_t i, std::mt19937_64& r, float* row) {
    std::normal_distribution<float> normal(0.0f, 1.0f);
    double t = intercept;
    for (int64_t j = 0; j < kD; ++j) t += w[j] * (row[j] = normal(r));
    y[i] = static_cast<float>(t + 0.01 * normal(r));
  });
  LinearRegressionParams params;
  params.algorithm = "eig";
  LinearRegression ols(params);
  const ArrayView yv = host_view(y.data(), kN);
  ols.fit(gpu, host_view(X.data(), kN, kD), &yv, nullptr);
  // Noise 0.01 over 33.6M rows: the coefficients' sampling error is ~2e-6, float32 targets round
  // by ~1e-7 relative; 1e-3 leaves room for the float32 Gram and still catches any lost rows.
  const float* coef = ols.coef().as<float>();
  for (int64_t j = 0; j < kD; ++j) EXPECT_NEAR(coef[j], w[j], 1e-3) << "coefficient " << j;
  EXPECT_NEAR(ols.intercept().as<float>()[0], intercept, 1e-3);
}

TEST(LargeSizes, PcaPastTwoToTheThirtyOneElements) {
  GPUML_CUDA_CONTEXT_OR_SKIP(gpu);
  GPUML_FRESH_RNG(rng);
  // Feature j has standard deviation scale[j]: 8, 6, 4, 3 on four random features, 1 elsewhere,
  // and a large mean (the precision trap).
  std::vector<double> scale(kD, 1.0);
  std::vector<int64_t> order(kD);
  for (int64_t j = 0; j < kD; ++j) order[j] = j;
  std::shuffle(order.begin(), order.end(), rng);
  const double top[4] = {8.0, 6.0, 4.0, 3.0};
  for (int c = 0; c < 4; ++c) scale[order[c]] = top[c];
  const std::vector<float> X = draw_rows(rng(), [&](int64_t, std::mt19937_64& r, float* row) {
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (int64_t j = 0; j < kD; ++j) row[j] = static_cast<float>(1000.0 + scale[j] * normal(r));
  });
  PCAParams params;
  params.n_components = 4;
  params.svd_solver = "covariance_eigh";
  PCA pca(params);
  pca.fit(gpu, host_view(X.data(), kN, kD), nullptr, nullptr);
  const float* components = pca.components().as<float>();
  const float* variance = pca.explained_variance().as<float>();
  for (int c = 0; c < 4; ++c) {
    // The variance estimate's relative sampling error is sqrt(2 / n) ~ 2.4e-4: 1% is loose.
    EXPECT_NEAR(variance[c], top[c] * top[c], 0.01 * top[c] * top[c]) << "component " << c;
    // The component is the axis of that feature (up to sign): |loading| > 0.999 there.
    EXPECT_GT(std::fabs(components[c * kD + order[c]]), 0.999) << "component " << c;
  }
}

}  // namespace
}  // namespace gpuml

namespace gpuml {
namespace {

// PageRank on more than 2^31 edges (or the most the GPU holds): 2^27 vertices, each with k
// out-edges to v + offset[j] (mod n), j < k, k = 17 at most: 2.28G edges. Every vertex has
// out-degree k, so one iteration from nstart x0 is exactly x1[v] = alpha / k * sum_j
// x0[v - offset[j]] + (1 - alpha) / n, checked at every vertex: an edge lost, doubled or misplaced
// by a 32-bit index would show. The edges are stored offset by offset, so the first k * n are the
// graph of degree k: when the device runs out of memory (ErrorCode::out_of_memory, which the
// context survives), the next try takes two offsets fewer.
TEST(LargeSizes, PageRankPastTwoToTheThirtyOneEdges) {
  GPUML_CUDA_CONTEXT_OR_SKIP(gpu);
  GPUML_FRESH_RNG(rng);
  constexpr int64_t n = int64_t(1) << 27, kMaxDegree = 17;
  std::vector<int64_t> offset(kMaxDegree);
  for (int64_t& o : offset) o = test::uniform_int(rng, 1, n - 1);  // repeats would be duplicate edges: fine
  std::vector<int32_t> src(static_cast<std::size_t>(kMaxDegree * n)), dst(src.size());
#pragma omp parallel for collapse(2)
  for (int64_t j = 0; j < kMaxDegree; ++j)
    for (int64_t v = 0; v < n; ++v) {
      src[j * n + v] = static_cast<int32_t>(v);
      dst[j * n + v] = static_cast<int32_t>((v + offset[j]) % n);
    }
  std::vector<float> start(static_cast<std::size_t>(n)), ranks(static_cast<std::size_t>(n));
  for (float& x : start) x = static_cast<float>(test::uniform_real(rng, 0.5, 1.5));
  double total = 0.0;
  for (float x : start) total += x;
  PageRankParams params;
  params.max_iter = 1;
  params.tol = 0.0;
  params.allow_unconverged = true;
  const ArrayView nstart = host_view(start.data(), n);
  int64_t k = kMaxDegree;
  for (;; k -= 2) {
    ASSERT_GE(k, 1) << "no degree fits the device";
    try {
      const PageRankResult r = pagerank(gpu, n, host_view(src.data(), k * n), host_view(dst.data(), k * n), nullptr, nullptr,
                                        &nstart, nullptr, params, host_view(ranks.data(), n));
      EXPECT_EQ(r.n_iter, 1);
      break;
    } catch (const Error& e) {
      ASSERT_EQ(e.code(), ErrorCode::out_of_memory) << e.what();
    }
  }
  std::cout << "PageRank of " << k * n << " edges (2^31 = " << (int64_t(1) << 31) << ")\n";
  const double alpha = params.alpha;
  double worst = 0.0;
#pragma omp parallel for reduction(max : worst)
  for (int64_t v = 0; v < n; ++v) {
    double s = 0.0;
    for (int64_t j = 0; j < k; ++j) s += static_cast<double>(start[(v - offset[j] % n + n) % n]) / total;
    const double expected = alpha * s / static_cast<double>(k) + (1.0 - alpha) / static_cast<double>(n);
    worst = std::max(worst, std::fabs(ranks[v] - expected) / expected);
  }
  // float32 ranks and terms: a few float32 roundings (6e-8 each) per vertex.
  EXPECT_LE(worst, 1e-5);
}

}  // namespace
}  // namespace gpuml

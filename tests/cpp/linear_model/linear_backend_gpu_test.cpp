// The CUDA LinearBackend's Gram products and Cholesky factorization against the CPU backend in
// double, on fresh random data (skipped without a GPU): shifted_gram through the fused float32
// tensor-core pass (one tile and many, partial tiles, with and without weights, shift and
// targets), through the exact SGEMM route (few features, many targets) and in float64; cholesky
// on the device and its refusal of a matrix that is not positive definite; the symmetric
// eigenproblem (all eigenvalues, the top eigenvectors) against the CPU backend's Eigen solver.
//
// The backends are internal: this file reaches them through the src/ headers (their factories,
// host_cholesky and detail::copy_bytes are exported for it).
#include <Eigen/Dense>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "../backend_test_util.hpp"
#include "../../../src/linear_model/linear_backend.hpp"
#include "test_util.hpp"

namespace gpuml {
namespace {

using test::to_device;
using test::uniform_int;
using test::uniform_real;


struct GramResult {
  std::vector<double> gram, cross, sums;
};

// X (n x m) around `mean` with column scales 0.5-2, B (n x t) around 0, w in [0, 2] (or none),
// shift near the column means (or none); the same values in T for both backends.
template <typename T>
struct GramProblem {
  int64_t n, m, t;
  std::vector<T> X, B, w;
  std::vector<double> shift;

  GramProblem(std::mt19937_64& rng, int64_t n_, int64_t m_, int64_t t_, double mean, bool weighted, bool shifted)
      : n(n_), m(m_), t(t_) {
    std::normal_distribution<double> normal(0.0, 1.0);
    std::vector<double> scale(m);
    for (auto& s : scale) s = uniform_real(rng, 0.5, 2.0);
    X.resize(n * m);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < m; ++j) X[i * m + j] = static_cast<T>(mean + scale[j] * normal(rng));
    B.resize(n * t);
    for (auto& v : B) v = static_cast<T>(normal(rng));
    if (weighted) {
      w.resize(n);
      for (auto& v : w) v = static_cast<T>(uniform_real(rng, 0.0, 2.0));
    }
    if (shifted) {
      shift.resize(m);
      for (auto& c : shift) c = static_cast<double>(static_cast<T>(mean + 0.01 * normal(rng)));  // callers round it to T
    }
  }

  GramResult run(detail::LinearBackend<double>& backend) const {  // the reference: the same values in double
    std::vector<double> Xd(X.begin(), X.end()), Bd(B.begin(), B.end()), wd(w.begin(), w.end());
    return call(backend, Xd.data(), Bd.data(), wd.empty() ? nullptr : wd.data());
  }
  GramResult run(Context& gpu, detail::LinearBackend<T>& backend) const {
    const Buffer Xg = to_device(gpu, X), Bg = to_device(gpu, B), wg = to_device(gpu, w);
    return call(backend, Xg.as<const T>(), Bg.as<const T>(), w.empty() ? nullptr : wg.as<const T>());
  }

  template <typename U>
  GramResult call(detail::LinearBackend<U>& backend, const U* Xp, const U* Bp, const U* wp) const {
    GramResult r{std::vector<double>(m * m, std::nan("")), std::vector<double>(m * t, std::nan("")),
                 std::vector<double>(m + 1, std::nan(""))};
    backend.shifted_gram(Xp, n, m, shift.empty() ? nullptr : shift.data(), wp, t > 0 ? Bp : nullptr, t, r.gram.data(),
                         t > 0 ? r.cross.data() : nullptr, r.sums.data());
    return r;
  }
};

// Entry (i, j) of a Gram matrix against the reference, relative to sqrt(G_ii G_jj) (its
// Cauchy-Schwarz bound); cross entries likewise with the targets' squared norms, and the column
// sums Σ w (x − c) = Σ √w · √w (x − c) with Σ w in place of one of them.
void expect_gram_near(const GramResult& got, const GramResult& want, const std::vector<double>& target_norms, int64_t m,
                      int64_t t, double tolerance) {
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < m; ++j) {
      const double bound = std::sqrt(want.gram[i * m + i] * want.gram[j * m + j]);
      ASSERT_NEAR(got.gram[i * m + j], want.gram[i * m + j], tolerance * bound) << "gram (" << i << ", " << j << ")";
    }
    for (int64_t k = 0; k < t; ++k) {
      const double bound = std::sqrt(want.gram[i * m + i] * target_norms[k]);
      ASSERT_NEAR(got.cross[i * t + k], want.cross[i * t + k], tolerance * bound) << "cross (" << i << ", " << k << ")";
    }
  }
  const double weight_total = want.sums[m];
  for (int64_t j = 0; j < m; ++j)
    ASSERT_NEAR(got.sums[j], want.sums[j], tolerance * std::sqrt(weight_total * want.gram[j * m + j])) << "sums " << j;
  ASSERT_NEAR(got.sums[m], weight_total, tolerance * weight_total) << "sum of the weights";
}

template <typename T>
void check_shifted_gram(Context& gpu, std::mt19937_64& rng, int64_t n, int64_t m, int64_t t, double mean, bool weighted,
                        bool shifted, double tolerance) {
  SCOPED_TRACE("n=" + std::to_string(n) + " m=" + std::to_string(m) + " t=" + std::to_string(t) + " mean=" +
               std::to_string(mean) + (weighted ? " weighted" : "") + (shifted ? " shifted" : ""));
  const GramProblem<T> problem(rng, n, m, t, mean, weighted, shifted);
  const GramResult want = problem.run(*detail::make_linear_cpu_backend<double>(Context::cpu()));
  const GramResult got = problem.run(gpu, *detail::make_linear_cuda_backend<T>(gpu));
  std::vector<double> target_norms(t, 0.0);
  for (int64_t i = 0; i < n; ++i)  // B comes already scaled: its products carry no weights
    for (int64_t k = 0; k < t; ++k) target_norms[k] += static_cast<double>(problem.B[i * t + k]) * problem.B[i * t + k];
  expect_gram_near(got, want, target_norms, m, t, tolerance);
}

// float32 on tensor cores: TF32 hi + lo (~2^-21 per product) and float32 sums over chunks of
// at most 2048 rows: 2e-5 of sqrt(G_ii G_jj) leaves about a factor of ten (the inputs are float32 anyway).
constexpr double kFloat32GramTolerance = 2e-5;

TEST(LinearBackendGpu, ShiftedGramFloat32FusedMatchesDoubleReference) {
  GPUML_CUDA_CONTEXT_OR_SKIP(gpu);
  GPUML_FRESH_RNG(rng);
  for (int rep = 0; rep < 6; ++rep) {  // one to three tiles of 128, most of them partial
    const int64_t n = uniform_int(rng, 1, 20000), m = uniform_int(rng, 64, 300), t = uniform_int(rng, 0, 7);
    check_shifted_gram<float>(gpu, rng, n, m, t, rep % 2 ? 1e3 : 0.0, rep % 3 == 0, rep % 2 == 1, kFloat32GramTolerance);
  }
}

TEST(LinearBackendGpu, ShiftedGramFloat32ManyChunksAndTiles) {
  GPUML_CUDA_CONTEXT_OR_SKIP(gpu);
  GPUML_FRESH_RNG(rng);
  // ~150 chunks x 10 tiles (4 column blocks, the last one partial).
  check_shifted_gram<float>(gpu, rng, uniform_int(rng, 280000, 320000), 500, 2, 50.0, true, true, kFloat32GramTolerance);
}

TEST(LinearBackendGpu, ShiftedGramExactRoutes) {
  GPUML_CUDA_CONTEXT_OR_SKIP(gpu);
  GPUML_FRESH_RNG(rng);
  // float32 with few features or many targets: a centered copy multiplied exactly (float32 sums
  // over chunks of rows).
  check_shifted_gram<float>(gpu, rng, uniform_int(rng, 2000, 6000), uniform_int(rng, 1, 63), 1, 10.0, true, true,
                            kFloat32GramTolerance);
  check_shifted_gram<float>(gpu, rng, uniform_int(rng, 2000, 6000), uniform_int(rng, 64, 200), 8, 10.0, false, true,
                            kFloat32GramTolerance);
  // float64: exact products, double sums.
  check_shifted_gram<double>(gpu, rng, uniform_int(rng, 2000, 6000), uniform_int(rng, 1, 200), 2, 10.0, true, true, 1e-12);
}

TEST(LinearBackendGpu, CholeskyOnTheDeviceMatchesTheHost) {
  GPUML_CUDA_CONTEXT_OR_SKIP(gpu);
  GPUML_FRESH_RNG(rng);
  auto backend = detail::make_linear_cuda_backend<float>(gpu);
  for (int64_t m : {int64_t(5), uniform_int(rng, 96, 300)}) {  // the host path below 96, the device above
    SCOPED_TRACE("m=" + std::to_string(m));
    std::normal_distribution<double> normal(0.0, 1.0);
    std::vector<double> Y((m + 10) * m), M(m * m, 0.0);
    for (auto& v : Y) v = normal(rng);
    for (int64_t k = 0; k < m + 10; ++k)
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < m; ++j) M[i * m + j] += Y[k * m + i] * Y[k * m + j];
    std::vector<double> U_host(m * m), U_gpu(m * m, std::nan(""));
    ASSERT_TRUE(detail::host_cholesky(M.data(), m, U_host.data()));
    ASSERT_TRUE(backend->cholesky(M.data(), m, U_gpu.data()));
    double scale = 0.0;
    for (double v : U_host) scale = std::max(scale, std::abs(v));
    // Both factor the same double matrix (a Wishart matrix with 10 spare rows: cond up to ~2e4),
    // each with error ~ eps cond |U|; only the upper triangles are the factor.
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = i; j < m; ++j) ASSERT_NEAR(U_gpu[i * m + j], U_host[i * m + j], 1e-9 * scale) << "entry " << i << ", " << j;
    // Uᵀ U = M, from the upper triangle alone.
    for (int64_t i = 0; i < m; i += 7)
      for (int64_t j = 0; j < m; j += 5) {
        double v = 0.0;
        for (int64_t k = 0; k <= std::min(i, j); ++k) v += U_gpu[k * m + i] * U_gpu[k * m + j];
        ASSERT_NEAR(v, M[i * m + j], 1e-9 * scale * scale * m) << "entry " << i << ", " << j;
      }
    // A negative diagonal entry: not positive definite.
    std::vector<double> bad = M;
    bad[0] = -1.0;
    EXPECT_FALSE(backend->cholesky(bad.data(), m, U_gpu.data()));
  }
}

TEST(LinearBackendGpu, CholeskySolveOnTheDeviceMatchesTheHost) {
  GPUML_CUDA_CONTEXT_OR_SKIP(gpu);
  GPUML_FRESH_RNG(rng);
  auto backend = detail::make_linear_cuda_backend<float>(gpu);
  std::normal_distribution<double> normal(0.0, 1.0);
  for (int64_t m : {int64_t(7), uniform_int(rng, 96, 300)}) {  // the host path below 96, the device above
    for (int64_t t : {int64_t(0), int64_t(1), uniform_int(rng, 2, 5)}) {
      SCOPED_TRACE("m=" + std::to_string(m) + ", t=" + std::to_string(t));
      std::vector<double> Y((m + 10) * m), M(m * m, 0.0), R(m * t);
      for (auto& v : Y) v = normal(rng);
      for (auto& v : R) v = normal(rng);
      for (int64_t k = 0; k < m + 10; ++k)
        for (int64_t i = 0; i < m; ++i)
          for (int64_t j = 0; j < m; ++j) M[i * m + j] += Y[k * m + i] * Y[k * m + j];
      std::vector<double> Z_host(m * t), diag_host(m), Z_gpu(m * t, std::nan("")), diag_gpu(m, std::nan(""));
      ASSERT_TRUE(detail::host_cholesky_solve(M.data(), m, R.data(), t, Z_host.data(), diag_host.data()));
      ASSERT_TRUE(backend->cholesky_solve(M.data(), m, R.data(), t, Z_gpu.data(), diag_gpu.data()));
      // The same double system (a Wishart matrix with 10 spare rows: cond up to ~2e4) solved on
      // both sides: relative differences ~ eps cond.
      double z_scale = 0.0, d_scale = 0.0;
      for (double v : Z_host) z_scale = std::max(z_scale, std::abs(v));
      for (double v : diag_host) d_scale = std::max(d_scale, std::abs(v));
      for (int64_t i = 0; i < m; ++i) ASSERT_NEAR(diag_gpu[i], diag_host[i], 1e-10 * d_scale) << "diagonal " << i;
      for (int64_t i = 0; i < m * t; ++i) ASSERT_NEAR(Z_gpu[i], Z_host[i], 1e-8 * z_scale) << "entry " << i;
      // M Z = R, checked on the device's answer itself.
      for (int64_t i = 0; i < m; ++i)
        for (int64_t k = 0; k < t; ++k) {
          double v = 0.0, scale = 0.0;
          for (int64_t j = 0; j < m; ++j) {
            v += M[i * m + j] * Z_gpu[j * t + k];
            scale += std::abs(M[i * m + j] * Z_gpu[j * t + k]);
          }
          ASSERT_NEAR(v, R[i * t + k], 1e-10 * scale) << "row " << i << ", column " << k;
        }
      std::vector<double> bad = M;
      bad[(m / 2) * m + m / 2] = -1.0;  // a negative diagonal entry: not positive definite
      EXPECT_FALSE(backend->cholesky_solve(bad.data(), m, R.data(), t, Z_gpu.data(), diag_gpu.data()));
      EXPECT_FALSE(detail::host_cholesky_solve(bad.data(), m, R.data(), t, Z_host.data(), diag_host.data()));
    }
  }
}

// M = V diag(λ) Vᵀ with a random orthogonal V (QR of a Gaussian matrix) and the given spectrum.
std::vector<double> symmetric_with_spectrum(std::mt19937_64& rng, const std::vector<double>& lambda) {
  const int64_t m = static_cast<int64_t>(lambda.size());
  std::normal_distribution<double> normal(0.0, 1.0);
  Eigen::MatrixXd Y(m, m);
  for (int64_t i = 0; i < m * m; ++i) Y.data()[i] = normal(rng);
  const Eigen::MatrixXd V = Eigen::HouseholderQR<Eigen::MatrixXd>(Y).householderQ();
  const Eigen::MatrixXd M = V * Eigen::Map<const Eigen::VectorXd>(lambda.data(), m).asDiagonal() * V.transpose();
  std::vector<double> out(m * m);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < m; ++j) out[i * m + j] = 0.5 * (M(i, j) + M(j, i));  // exactly symmetric
  return out;
}

TEST(LinearBackendGpu, SymmetricEigenTopMatchesTheCpu) {
  GPUML_CUDA_CONTEXT_OR_SKIP(gpu);
  GPUML_FRESH_RNG(rng);
  Context cpu = Context::cpu();
  auto cuda_backend = detail::make_linear_cuda_backend<float>(gpu);
  auto cpu_backend = detail::make_linear_cpu_backend<float>(cpu);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  struct Case {
    const char* name;
    int64_t m, k;
    std::vector<double> lambda;
  };
  std::vector<Case> cases;
  for (int64_t m : {int64_t(7), int64_t(128), uniform_int(rng, 40, 300)}) {
    const int64_t k = std::max<int64_t>(1, std::min<int64_t>(16, m / 4));
    std::vector<double> spread(m), near_identity(m), clustered(m), rank_deficient(m);
    for (int64_t i = 0; i < m; ++i) {
      spread[i] = std::pow(10.0, 4.0 * unit(rng) - 2.0);          // distinct, over six decades
      near_identity[i] = 1.0 + 0.04 * (unit(rng) - 0.5);           // PCA of white noise: one tight cluster
      clustered[i] = static_cast<double>(1 + i % 3) * 10.0;        // three values, each repeated
      rank_deficient[i] = i < m / 2 ? 0.0 : 1.0 + unit(rng);       // half the spectrum zero
    }
    cases.push_back({"spread", m, k, spread});
    cases.push_back({"near identity", m, k, near_identity});
    cases.push_back({"clustered", m, k, clustered});
    cases.push_back({"rank deficient", m, k, rank_deficient});
    cases.push_back({"spread, every vector (cuSOLVER syevd)", m, m, spread});
  }
  for (const Case& c : cases) {
    const int64_t m = c.m, k = c.k;
    SCOPED_TRACE(std::string(c.name) + ", m=" + std::to_string(m) + ", k=" + std::to_string(k));
    const std::vector<double> M = symmetric_with_spectrum(rng, c.lambda);
    std::vector<double> values_cpu(m), vectors_cpu(k * m), values_gpu(m, std::nan("")), vectors_gpu(k * m, std::nan(""));
    cpu_backend->symmetric_eigen(M.data(), m, k, values_cpu.data(), vectors_cpu.data());
    cuda_backend->symmetric_eigen(M.data(), m, k, values_gpu.data(), vectors_gpu.data());
    const double norm = *std::max_element(c.lambda.begin(), c.lambda.end());
    // Eigenvalues: both backward stable, each within ~m eps |M| of the truth.
    for (int64_t i = 0; i < m; ++i) ASSERT_NEAR(values_gpu[i], values_cpu[i], 1e-12 * m * norm) << "eigenvalue " << i;
    const Eigen::Map<const Eigen::MatrixXd> Mm(M.data(), m, m);
    const Eigen::Map<const Eigen::MatrixXd> V(vectors_gpu.data(), m, k);  // column i: vector i
    // Residuals |M v − λ v| and orthonormality: what defines eigenvectors when eigenvalues repeat.
    for (int64_t i = 0; i < k; ++i) {
      const double lambda = values_gpu[m - 1 - i];
      ASSERT_LE((Mm * V.col(i) - lambda * V.col(i)).norm(), 1e-10 * m * norm) << "vector " << i;
    }
    ASSERT_LE((V.transpose() * V - Eigen::MatrixXd::Identity(k, k)).cwiseAbs().maxCoeff(), 1e-10) << "orthonormality";
    // Where a vector's eigenvalue stands apart (relative gap > 1e-3), it is unique up to sign:
    // equal to the CPU's within ~eps |M| / gap.
    for (int64_t i = 0; i < k; ++i) {
      const double lambda = values_cpu[m - 1 - i];
      double gap = std::numeric_limits<double>::infinity();
      for (int64_t j = 0; j < m; ++j)
        if (j != m - 1 - i) gap = std::min(gap, std::abs(values_cpu[j] - lambda));
      if (gap <= 1e-3 * norm) continue;
      const Eigen::Map<const Eigen::VectorXd> a(vectors_gpu.data() + i * m, m), b(vectors_cpu.data() + i * m, m);
      const double sign = a.dot(b) < 0 ? -1.0 : 1.0;
      ASSERT_LE((a - sign * b).cwiseAbs().maxCoeff(), 1e-12 * m * norm / gap) << "vector " << i;
    }
  }
}

}  // namespace
}  // namespace gpuml

// The top of a small symmetric eigenproblem on the device: all eigenvalues, and the eigenvectors
// of the k largest only (PCA covariance_eigh wants n_components of them). cuSOLVER's syevd spends
// ~1.2 of its ~1.7 ms at m = 128 back-transforming all m vectors (127 pairs of small ormtr
// kernels); this path back-transforms only the k vectors wanted, in a few kernels:
//  1. cuSOLVER sytrd: M = Q T Qᵀ, T tridiagonal (one CTA, ~0.4 ms at m = 128);
//  2. every eigenvalue of T by bisection on Sturm counts (LAPACK's dstebz), a warp per
//     eigenvalue that cuts its interval into 33 parts per step (~12 steps to full precision);
//  3. the k eigenvectors of T by inverse iteration (LAPACK's dstein): a warp per cluster of
//     eigenvalues closer than 1e-5 |T|₁, Gram-Schmidt among a cluster's vectors after each solve;
//  4. back to M's basis through Q's reflectors, a warp per vector.
#include "cuda/linear_model/symmetric_eigen.cuh"

#include <cusolverDn.h>

#include <algorithm>
#include <cfloat>
#include <cstring>
#include <vector>

#include "cuda/core/kernel_util.cuh"
#include "cuda/core/resources.cuh"
#include "gpuml/core/array.hpp"

namespace gpuml::detail {
namespace {

constexpr int kWarpsPerBlock = 4;
// Accurate eigenvalues: the first solve already gives a vector within ~eps |T| / gap of its own;
// the second, after Gram-Schmidt, settles vectors of (nearly) equal eigenvalues.
constexpr int kInverseIterations = 2;
// Eigenvalues closer than this, relative to |T|₁, form a cluster whose vectors are
// Gram-Schmidt'ed (a serial chain in one warp). LAPACK's dstein uses 1e-3; here vectors further
// apart are left to inverse iteration alone, which gives them within ~eps |T| / gap <= 2e-11 of
// the truth, and every cluster runs in parallel (one 16-vector cluster took ~0.2 ms at 1e-3).
constexpr double kClusterGap = 1e-5;
constexpr unsigned kFullMask = 0xffffffffu;
constexpr int64_t kBackTransformPartBytes = 48 * 1024;
constexpr int kMaxVectorsPerBlock = 16;
constexpr std::size_t kClusterSharedBytes = 96 * 1024;

__device__ double warp_max(double v) {
  for (int offset = kWarp / 2; offset > 0; offset /= 2) v = fmax(v, __shfl_xor_sync(kFullMask, v, offset));
  return v;
}

// For each of kPointsPerLane shifts σ_p, the number of eigenvalues of T (diagonal d, squared
// off-diagonal e2) below σ_p: the negative pivots of T − σ_p I = L D Lᵀ, tiny pivots pushed to
// −pivmin as in LAPACK's dlaebz. The recurrences run side by side (their divisions overlap).
constexpr int kPointsPerLane = 1;  // 4 ran 2.3x slower: the divisions did not overlap
__device__ void sturm_counts(const double* d, const double* e2, int m, const double (&sigma)[kPointsPerLane],
                             double pivmin, int (&count)[kPointsPerLane]) {
  double q[kPointsPerLane];
#pragma unroll
  for (int p = 0; p < kPointsPerLane; ++p) {
    q[p] = d[0] - sigma[p];
    if (fabs(q[p]) < pivmin) q[p] = -pivmin;
    count[p] = q[p] < 0.0;
  }
  for (int i = 1; i < m; ++i) {
    const double di = d[i], ei = e2[i - 1];
#pragma unroll
    for (int p = 0; p < kPointsPerLane; ++p) {
      q[p] = di - sigma[p] - ei / q[p];
      if (fabs(q[p]) < pivmin) q[p] = -pivmin;
      count[p] += q[p] < 0.0;
    }
  }
}

// Gershgorin bounds of T and |T|₁ (= its largest absolute row sum), over a warp.
struct Bounds {
  double low, high, norm;
};
__device__ Bounds tridiagonal_bounds(const double* d, const double* e, int m, int lane) {
  double low = DBL_MAX, high = -DBL_MAX, norm = 0.0;
  for (int i = lane; i < m; i += kWarp) {
    const double r = (i > 0 ? fabs(e[i - 1]) : 0.0) + (i + 1 < m ? fabs(e[i]) : 0.0);
    low = fmin(low, d[i] - r);
    high = fmax(high, d[i] + r);
    norm = fmax(norm, fabs(d[i]) + r);
  }
  return {-warp_max(-low), warp_max(high), warp_max(norm)};
}

// values[j] = the j-th smallest eigenvalue of T; a warp per j. Invariant: count(low) <= j <
// count(high). Each step evaluates 32 kPointsPerLane interior points (point t = p 32 + lane) and
// keeps the part between the last point with count <= j and the first with count > j (the first
// failing point: safe even where rounding made the counts non-monotone).
__global__ void __launch_bounds__(kWarp * kWarpsPerBlock)
    bisection_kernel(const double* __restrict__ d_global, const double* __restrict__ e_global, int m,
                     double* __restrict__ values) {
  extern __shared__ double shared[];
  double* d = shared;
  double* e = shared + m;
  double* e2 = shared + 2 * m;
  for (int i = threadIdx.x; i < m; i += blockDim.x) {
    d[i] = d_global[i];
    const double v = i + 1 < m ? e_global[i] : 0.0;
    e[i] = v;
    e2[i] = v * v;
  }
  __syncthreads();
  const int lane = threadIdx.x % kWarp;
  const int j = blockIdx.x * kWarpsPerBlock + threadIdx.x / kWarp;
  if (j >= m) return;
  const Bounds b = tridiagonal_bounds(d, e, m, lane);
  double e2_max = 0.0;
  for (int i = lane; i + 1 < m; i += kWarp) e2_max = fmax(e2_max, e2[i]);
  const double pivmin = DBL_MIN * fmax(1.0, warp_max(e2_max));
  const double tnorm = fmax(fabs(b.low), fabs(b.high));
  const double fudge = 2.1 * DBL_EPSILON * tnorm * m + 4.2 * pivmin;  // dstebz's widening
  double low = b.low - fudge, high = b.high + fudge;
  const double atol = DBL_EPSILON * tnorm;
  constexpr int kPoints = kWarp * kPointsPerLane;
  for (int step = 0; step < 64; ++step) {
    const double width = high - low;
    if (width <= fmax(fmax(atol, pivmin), 2.0 * DBL_EPSILON * fmax(fabs(low), fabs(high)))) break;
    auto point = [&](int t) { return low + width * ((t + 1) / double(kPoints + 1)); };  // the same bits in every lane
    double sigma[kPointsPerLane];
    int count[kPointsPerLane];
#pragma unroll
    for (int p = 0; p < kPointsPerLane; ++p) sigma[p] = point(p * kWarp + lane);
    sturm_counts(d, e2, m, sigma, pivmin, count);
    int first_fail = kPoints;
#pragma unroll
    for (int p = kPointsPerLane - 1; p >= 0; --p) {
      const unsigned failing = __ballot_sync(kFullMask, count[p] > j);
      if (failing != 0) first_fail = p * kWarp + __ffs(failing) - 1;
    }
    const double new_low = first_fail > 0 ? point(first_fail - 1) : low;
    const double new_high = first_fail < kPoints ? point(first_fail) : high;
    low = new_low;
    high = new_high;
  }
  if (lane == 0) values[j] = 0.5 * (low + high);
}

// A start vector for inverse iteration: deterministic values in (−1, 1).
__device__ double start_value(int vector, int i) {
  uint32_t h = static_cast<uint32_t>(vector) * 0x9E3779B9u ^ (static_cast<uint32_t>(i) + 0x7F4A7C15u) * 0x85EBCA6Bu;
  h ^= h >> 16;
  h *= 0x7FEB352Du;
  h ^= h >> 15;
  h *= 0x846CA68Bu;
  h ^= h >> 16;
  return (static_cast<double>(h) + 0.5) / 2147483648.0 - 1.0;
}

// LU with partial pivoting of T − λI (LAPACK's dgttrf) into f (5 m doubles: the multipliers,
// the reciprocals of U's diagonal, U's first and second superdiagonals, 1.0 where rows i and
// i + 1 were swapped); pivots smaller than eps3 are replaced by ±eps3 (dstein's perturbation), so
// that the solves stay finite. The row being eliminated travels in registers: only stores go to
// f (a loop-carried dependency through memory made each step wait for it).
__device__ void tridiagonal_lu(const double* __restrict__ d, const double* __restrict__ e, int m, double lambda,
                               double eps3, double* __restrict__ f) {
  double* lower = f;
  double* inverse_diag = f + m;
  double* upper = f + 2 * m;
  double* upper2 = f + 3 * m;
  double* swapped = f + 4 * m;
  auto pivot = [eps3](double v) { return fabs(v) < eps3 ? (v < 0.0 ? -eps3 : eps3) : v; };
  double diag = d[0] - lambda, up = m > 1 ? e[0] : 0.0;  // row i of U as it stands
  for (int i = 0; i + 1 < m; ++i) {
    const double sub = e[i], next_diag = d[i + 1] - lambda, next_up = i + 2 < m ? e[i + 1] : 0.0;
    if (fabs(diag) >= fabs(sub)) {
      diag = pivot(diag);
      const double factor = sub / diag;
      lower[i] = factor;
      inverse_diag[i] = 1.0 / diag;
      upper[i] = up;
      upper2[i] = 0.0;
      swapped[i] = 0.0;
      diag = next_diag - factor * up;
      up = next_up;
    } else {  // rows i and i + 1 swapped
      const double factor = diag / sub;
      lower[i] = factor;
      inverse_diag[i] = 1.0 / pivot(sub);
      upper[i] = next_diag;
      upper2[i] = next_up;
      swapped[i] = 1.0;
      diag = up - factor * next_diag;
      up = -factor * next_up;
    }
  }
  inverse_diag[m - 1] = 1.0 / pivot(diag);
  lower[m - 1] = upper[m - 1] = upper2[m - 1] = swapped[m - 1] = 0.0;
}

// x = (T − λI)⁻¹ x from tridiagonal_lu's factors (LAPACK's dgttrs), then x / max |x| (the solve
// grows x by up to ~1/eps). The running entries travel in registers.
__device__ void tridiagonal_solve(const double* __restrict__ f, int m, double* __restrict__ x) {
  const double* lower = f;
  const double* inverse_diag = f + m;
  const double* upper = f + 2 * m;
  const double* upper2 = f + 3 * m;
  const double* swapped = f + 4 * m;
  double carried = x[0];  // L solve: row i after the rows above it
  for (int i = 0; i + 1 < m; ++i) {
    const double next = x[i + 1];
    if (swapped[i] == 0.0) {
      x[i] = carried;
      carried = next - lower[i] * carried;
    } else {
      x[i] = next;
      carried = carried - lower[i] * next;
    }
  }
  x[m - 1] = carried;
  double x1 = x[m - 1] * inverse_diag[m - 1], x2 = 0.0;  // U solve: x[i + 1], x[i + 2]
  x[m - 1] = x1;
  double scale = fabs(x1);
  for (int i = m - 2; i >= 0; --i) {
    const double v = (x[i] - upper[i] * x1 - upper2[i] * x2) * inverse_diag[i];
    x[i] = v;
    scale = fmax(scale, fabs(v));
    x2 = x1;
    x1 = v;
  }
  const double inv = 1.0 / scale;
  for (int i = 0; i < m; ++i) x[i] *= inv;
}

// The eigenvectors of T for its k largest eigenvalues (z: k x m, largest first), by inverse
// iteration (LAPACK's dstein). Eigenvalues closer than kClusterGap |T|₁ form a cluster; warp j
// handles the cluster that starts at vector j (and nothing when j continues one). Its lanes
// factor and solve for the cluster's members side by side (a lane per member, in passes of 32);
// after each round of solves the warp orthogonalizes the members in order (Gram-Schmidt) and
// normalizes them. Eigenvalues equal to rounding are first separated by eps |T|₁.
// scratch: 5 m doubles per vector.
// A warp per block; with `in_shared`, the cluster's vectors live in shared memory (k m doubles)
// while the warp works on them: Gram-Schmidt's dependent loads then wait on shared memory.
__global__ void __launch_bounds__(kWarp)
    inverse_iteration_kernel(const double* __restrict__ d, const double* __restrict__ e, int m,
                             const double* __restrict__ values, int k, bool in_shared, double* __restrict__ z_global,
                             double* __restrict__ scratch) {
  extern __shared__ double shared[];
  const int lane = threadIdx.x;
  const int j = blockIdx.x;
  if (j >= k) return;
  double norm = 0.0;  // |T|₁
  for (int i = lane; i < m; i += kWarp)
    norm = fmax(norm, fabs(d[i]) + (i > 0 ? fabs(e[i - 1]) : 0.0) + (i + 1 < m ? fabs(e[i]) : 0.0));
  norm = warp_max(norm);
  const double gap = kClusterGap * norm;
  auto value_of = [&](int vector) { return values[m - 1 - vector]; };  // vector 0: the largest
  if (j > 0 && value_of(j - 1) - value_of(j) <= gap) return;         // not the start of a cluster
  int end = j + 1;
  while (end < k && value_of(end - 1) - value_of(end) <= gap) ++end;
  auto row = [&](int v) { return in_shared ? shared + int64_t(v - j) * m : z_global + int64_t(v) * m; };
  const double eps3 = DBL_EPSILON * fmax(norm, DBL_MIN);
  for (int base = j; base < end; base += kWarp) {  // factors and start vectors, a lane per member
    const int v = base + lane;
    if (v >= end) continue;
    double lambda = value_of(j), previous = lambda;
    for (int u = j + 1; u <= v; ++u) {  // the separated shifts, in order (a short serial pass)
      lambda = value_of(u);
      if (previous - lambda < eps3) lambda = previous - eps3;
      previous = lambda;
    }
    tridiagonal_lu(d, e, m, lambda, eps3, scratch + int64_t(v) * 5 * m);
    double* x = row(v);
    for (int i = 0; i < m; ++i) x[i] = start_value(v, i);
  }
  __syncwarp();
  for (int it = 0; it < kInverseIterations; ++it) {
    for (int base = j; base < end; base += kWarp) {
      const int v = base + lane;
      if (v < end) tridiagonal_solve(scratch + int64_t(v) * 5 * m, m, row(v));
    }
    __syncwarp();
    for (int v = j; v < end; ++v) {
      double* x = row(v);
      for (int p = j; p < v; ++p) {
        const double* y = row(p);
        double dot = 0.0;
        for (int i = lane; i < m; i += kWarp) dot += x[i] * y[i];
        dot = warp_sum(dot);
        for (int i = lane; i < m; i += kWarp) x[i] -= dot * y[i];
      }
      double sq = 0.0;
      for (int i = lane; i < m; i += kWarp) sq += x[i] * x[i];
      const double inv = 1.0 / sqrt(warp_sum(sq));
      for (int i = lane; i < m; i += kWarp) x[i] *= inv;
      __syncwarp();
    }
  }
  if (in_shared)
    for (int64_t idx = lane; idx < int64_t(end - j) * m; idx += kWarp) z_global[int64_t(j) * m + idx] = shared[idx];
}

// vectors (k x m) = Q z, Q = H(0) H(1) ⋯ H(m − 2) from sytrd (lower): H(i) = I − τ_i v vᵀ with
// v_r = 0 for r <= i, v_{i+1} = 1 and v_r = A(r, i) below (A column-major, lda = m). A warp per
// vector (`per_block` of them), applying H(m − 2) first; the block brings the reflectors into
// shared memory `chunk` columns at a time, so that each step of the sequential chain reads
// shared memory rather than waiting on L2.
__global__ void back_transform_kernel(const double* __restrict__ A, const double* __restrict__ tau, int m,
                                      const double* __restrict__ z, int k, int per_block, int chunk,
                                      double* __restrict__ vectors) {
  extern __shared__ double shared[];
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  const int v = blockIdx.x * per_block + warp;
  const bool active = v < k;
  double* x = shared + warp * m;
  double* columns = shared + per_block * m;  // chunk x m
  double* taus = columns + chunk * m;        // chunk
  if (active)
    for (int r = lane; r < m; r += kWarp) x[r] = z[int64_t(v) * m + r];
  for (int high = m - 2; high >= 0; high -= chunk) {
    const int low = max(0, high - chunk + 1), count = high - low + 1;
    __syncthreads();  // the previous chunk is consumed
    for (int idx = threadIdx.x; idx < count * m; idx += blockDim.x) {
      const int c = idx / m, r = idx % m, i = low + c;
      columns[idx] = r > i + 1 ? A[int64_t(i) * m + r] : (r == i + 1 ? 1.0 : 0.0);
    }
    for (int c = threadIdx.x; c < count; c += blockDim.x) taus[c] = tau[low + c];
    __syncthreads();
    if (!active) continue;
    for (int i = high; i >= low; --i) {
      const double* column = columns + (i - low) * m;
      double s = 0.0;
      for (int r = i + 1 + lane; r < m; r += kWarp) s += column[r] * x[r];
      s = warp_sum(s) * taus[i - low];
      for (int r = i + 1 + lane; r < m; r += kWarp) x[r] -= s * column[r];
      __syncwarp();
    }
  }
  if (active)
    for (int r = lane; r < m; r += kWarp) vectors[int64_t(v) * m + r] = x[r];
}

}  // namespace

void device_symmetric_eigen_top(const Context& ctx, const double* M_host, int64_t m, int64_t k, double* values_host,
                                double* vectors_host) {
  cuda::Resources& res = cuda::activate(ctx);
  if (m <= 0) return;
  Context context = ctx;  // buffers take a mutable context
  const int m_ = checked_int(m, "matrix size");
  const int k_ = static_cast<int>(std::clamp<int64_t>(k, 0, m));
  // One buffer: [A (m x m) | values (m) | vectors (k x m) | d (m) | e (m) | tau (m) | z (k x m) |
  // inverse-iteration scratch (5 m per vector) | info]; values and vectors come back in one copy.
  const int64_t mm = m * m, back = m + k_ * m;
  const int64_t doubles = mm + back + 3 * m + k_ * m + 5 * m * k_ + 1;
  Buffer buffer(context, static_cast<std::size_t>(doubles) * sizeof(double));
  double* A = buffer.as<double>();
  double* values = A + mm;
  double* vectors = values + m;
  double* d = vectors + k_ * m;
  double* e = d + m;
  double* tau = e + m;
  double* z = tau + m;
  double* scratch = z + k_ * m;
  int* info = reinterpret_cast<int*>(scratch + 5 * m * k_);
  double* staging = static_cast<double*>(res.pinned(static_cast<std::size_t>(std::max(mm, back + 1)) * sizeof(double)));
  std::memcpy(staging, M_host, static_cast<std::size_t>(mm) * sizeof(double));  // symmetric: column-major as it is
  GPUML_CUDA_CHECK(cudaMemcpyAsync(A, staging, static_cast<std::size_t>(mm) * sizeof(double), cudaMemcpyHostToDevice, res.stream));

  cusolverDnHandle_t handle = res.cusolver();
  int lwork = 0;
  GPUML_CUSOLVER_CHECK(cusolverDnDsytrd_bufferSize(handle, CUBLAS_FILL_MODE_LOWER, m_, A, m_, d, e, tau, &lwork));
  Buffer work = cuda::solver_workspace(ctx, res, static_cast<std::size_t>(std::max(1, lwork)) * sizeof(double));
  GPUML_CUSOLVER_CHECK(cusolverDnDsytrd(handle, CUBLAS_FILL_MODE_LOWER, m_, A, m_, d, e, tau, work.as<double>(), lwork, info));

  const unsigned eigen_blocks = static_cast<unsigned>(ceil_div(m, kWarpsPerBlock));
  bisection_kernel<<<eigen_blocks, kWarp * kWarpsPerBlock, 3 * m * sizeof(double), res.stream>>>(d, e, m_, values);
  GPUML_CUDA_CHECK_LAUNCH();
  if (k_ > 0) {
    // A block (one warp) per vector; the cluster's vectors in shared memory when all k fit.
    const std::size_t cluster_bytes = static_cast<std::size_t>(k_ * m) * sizeof(double);
    const bool in_shared = cluster_bytes <= kClusterSharedBytes;
    if (in_shared)
      GPUML_CUDA_CHECK(cudaFuncSetAttribute(inverse_iteration_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                            static_cast<int>(cluster_bytes)));
    inverse_iteration_kernel<<<static_cast<unsigned>(k_), kWarp, in_shared ? cluster_bytes : 0, res.stream>>>(
        d, e, m_, values, k_, in_shared, z, scratch);
    GPUML_CUDA_CHECK_LAUNCH();
    // Shared memory: per_block vectors and chunk reflector columns of m doubles, ~48 kB each part.
    const int per_row = static_cast<int>(std::max<int64_t>(1, kBackTransformPartBytes / (m * int64_t(sizeof(double)))));
    const int per_block = std::min({per_row, kMaxVectorsPerBlock, k_});
    const int chunk = std::max(1, std::min(per_row, m_ - 1));
    const std::size_t shared_bytes = static_cast<std::size_t>((per_block + chunk) * m + chunk) * sizeof(double);
    GPUML_CUDA_CHECK(cudaFuncSetAttribute(back_transform_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                          static_cast<int>(shared_bytes)));
    back_transform_kernel<<<static_cast<unsigned>(ceil_div(k_, per_block)), kWarp * per_block, shared_bytes, res.stream>>>(
        A, tau, m_, z, k_, per_block, chunk, vectors);
    GPUML_CUDA_CHECK_LAUNCH();
  }
  GPUML_CUDA_CHECK(cudaMemcpyAsync(staging, values, static_cast<std::size_t>(back) * sizeof(double), cudaMemcpyDeviceToHost,
                                   res.stream));
  GPUML_CUDA_CHECK(cudaMemcpyAsync(staging + back, info, sizeof(int), cudaMemcpyDeviceToHost, res.stream));
  GPUML_CUDA_CHECK(cudaStreamSynchronize(res.stream));
  int status = 0;
  std::memcpy(&status, staging + back, sizeof(int));
  if (status != 0) throw Error(ErrorCode::cuda, "cuSOLVER sytrd failed with devInfo = " + std::to_string(status));
  std::memcpy(values_host, staging, static_cast<std::size_t>(m) * sizeof(double));
  std::memcpy(vectors_host, staging + m, static_cast<std::size_t>(k_ * m) * sizeof(double));
}

}  // namespace gpuml::detail

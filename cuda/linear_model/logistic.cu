// The CUDA backend of LogisticRegression: the primitives of src/linear_model/logistic_backend.hpp
// on the device (the quasi-Newton driver lives in src/linear_model/logistic_regression.cpp).
//
// loss_gradient is the hot path: the driver calls it 20-200 times per fit with the same X and a
// new coef, so each call reads X once, allocates nothing after the first call (the scratch is
// kept in the backend), copies coef in with one H2D copy and the loss and gradient out with one
// D2H copy. Two ways, by the size of the gradient E = k (d + 1):
//
//  - fused (E <= kFusedMaxEntries): one kernel. Each block takes a contiguous chunk of rows and
//    walks it in tiles held in shared memory: the scores x·β in T from the tile and the
//    coefficients (in shared memory as T), then per row the loss and the weighted residuals w r
//    in double, then the gradient entries Σ w r x, each accumulated in double in a register by a
//    fixed thread over fixed rows of the tile. A block writes one partial row per chunk; a second
//    kernel adds the chunks in chunk order.
//  - cuBLAS (larger E): Z = X Bᵀ by one GEMM in T (pedantic math: no TF32), a row kernel for the
//    loss and the weighted residuals (written over Z, in T, as the CPU backend rounds them) with
//    the intercept gradient as per-chunk column sums of R in double, and Rᵀ X as chunked
//    strided-batched GEMMs whose chunk products are added in double in chunk order (as the gram
//    in linear.cu).
//
// loss_residuals (sparse X: the scores come from the sparse product) is that row kernel on the
// given scores: one pass over Z, one H2D copy of the intercepts and one D2H copy of the loss and
// the residual sums.
//
// As on the CPU, the intercept is added to the T score in double. No floating atomics anywhere:
// the chunking depends on (n, d, k, T) only, so the same inputs give the same bits.
#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "cuda/core/resources.cuh"
#include "cuda/core/kernel_util.cuh"
#include "gpuml/core/error.hpp"
#include "linear_model/logistic_backend.hpp"

namespace gpuml::detail {
namespace {

// Fused path: gradients of up to kFusedMaxEntries doubles, each thread holding at most
// kFusedMaxEntries / kBlock accumulators. The dynamic shared memory of a block stays within
// kFusedSharedBytes (under the 48 KiB that needs no opt-in; about 5 blocks per SM on an H100).
constexpr int kFusedMaxEntries = 2048;
constexpr int kMaxEntriesPerThread = kFusedMaxEntries / kBlock;
// Loads of X in flight per thread while a tile is copied into shared memory.
constexpr int kLoadBatch = 8;
constexpr int64_t kFusedSharedBytes = 40 * 1024;
constexpr std::size_t kSharedWithoutOptIn = 48 * 1024;
// Row chunks (one block and one partial row each): about kTargetChunks of them, so that the
// grid is several waves deep (a short last wave), fewer for large E so that the partials
// (chunks x (E + 1) doubles, written and read once more per call) stay within
// kFusedPartialBytes, but never fewer than kMinFusedChunks (a few waves on 132 SMs).
constexpr int64_t kTargetChunks = 4096;
constexpr int64_t kFusedPartialBytes = int64_t(16) << 20;
constexpr int64_t kMinFusedChunks = 1024;
// cuBLAS path: about kGemmChunks chunks of at least kMinGemmRows rows for Rᵀ X, the chunk
// products (d x k each, in T) kept under kGemmPartialBytes where d k allows.
constexpr int64_t kGemmChunks = 256;
constexpr int64_t kMinGemmRows = 1024;
constexpr int64_t kGemmPartialBytes = int64_t(256) << 20;
constexpr int64_t kMaxGemmRows = int64_t(1) << 30;  // cuBLAS dimensions are int
// Loss and residuals from scores (loss_residuals_kernel): about kTargetChunks chunks of at least
// kBlock rows; for k > 1 a chunk's residuals (re-read for its column sums) within
// kResidualChunkBytes where the partials ((k + 1) doubles per chunk) stay within
// kResidualPartialBytes.
constexpr int64_t kResidualChunkBytes = 64 * 1024;
constexpr int64_t kResidualPartialBytes = int64_t(64) << 20;


// ---- the loss of one row, shared by both paths --------------------------------------------

// log(1 + e^z) without overflow.
__device__ __forceinline__ double log1p_exp(double z) { return z > 0 ? z + log1p(exp(-z)) : log1p(exp(z)); }

__device__ __forceinline__ double sigmoid(double z) {
  if (z >= 0) return 1.0 / (1.0 + exp(-z));
  const double e = exp(z);
  return e / (1.0 + e);
}

// Binomial: returns the row's loss, sets *residual = w (σ(z) − y).
__device__ __forceinline__ double binomial_row(double z, int32_t label, double wv, double* residual) {
  const double y = static_cast<double>(label);
  *residual = wv * (sigmoid(z) - y);
  return log1p_exp(z) - y * z;
}

// Multinomial over the scores z[0..k) (including the intercepts; z[c] at z[c * stride]):
// returns the row's loss logsumexp(z) − z_label and leaves the row's max and Σ e^(z − max) for
// the residuals softmax(z)_c − [c == label].
__device__ __forceinline__ double multinomial_row_loss(const double* z, int k, int32_t label, double* top_out, double* sum_out) {
  double top = -INFINITY, z_label = 0.0;
  for (int c = 0; c < k; ++c) top = fmax(top, z[c]);
  double sum = 0.0;
  for (int c = 0; c < k; ++c) {
    sum += exp(z[c] - top);
    if (c == label) z_label = z[c];
  }
  *top_out = top;
  *sum_out = sum;
  return top + log(sum) - z_label;
}

// ---- fused loss and gradient ----------------------------------------------------------------

// Shared memory of the fused kernel (bytes), in this order: scores / residuals (tile_rows x k
// doubles), the block-sum scratch (kBlock doubles), the intercepts (k doubles), the coefficients
// without intercept (k rows of d, d | 1 apart: an odd stride, so that the lanes reading one
// column of several classes hit different banks), the tile of X (tile_rows x ld, T). Doubles
// first: every part is aligned.
__host__ __device__ constexpr int fused_coef_ld(int64_t d) { return d == 0 ? 0 : static_cast<int>(d | 1); }

template <typename T>
__host__ __device__ constexpr int64_t fused_shared_bytes(int64_t tile_rows, int64_t ld, int64_t d, int64_t k) {
  return (tile_rows * k + kBlock + k) * int64_t(sizeof(double)) + (k * fused_coef_ld(d) + tile_rows * ld) * int64_t(sizeof(T));
}

// One block per chunk of rows [chunk * chunk_rows, min(n, (chunk + 1) * chunk_rows)), walked in
// tiles of tile_rows (<= kBlock) rows. Per tile:
//  1. the tile of X (contiguous in memory) into shared memory, rows ld apart (ld chosen so that
//     the score teams read without bank conflicts);
//  2. scores: each (row, class) pair by a team of `team` lanes (a power of two <= 32) summing
//     x_j β_cj in T over j = lane, lane + team, ..., then a shuffle tree; plus the intercept in
//     double;
//  3. per row (thread r): the loss (summed per thread, rows in order) and w r in place of the
//     scores;
//  4. gradient entries e = c (d + 1) + j: with E <= kBlock, `groups` = kBlock / E thread groups
//     each own every entry over the rows r ≡ group (mod groups); with E > kBlock, thread t owns
//     entries t, t + kBlock, ... over all rows. Rows in order: a fixed summation order.
// Finally the groups are added in group order and partials[e * n_chunks + chunk] written (the
// loss at e = E).
template <typename T, int kEntries>
__global__ void __launch_bounds__(kBlock) fused_loss_gradient_kernel(const T* __restrict__ X, const int32_t* __restrict__ labels,
                                                                     const T* __restrict__ w, int64_t n, int d, int k,
                                                                     const double* __restrict__ coef, int tile_rows, int ld, int team,
                                                                     int64_t chunk_rows, int64_t n_chunks,
                                                                     double* __restrict__ partials) {
  extern __shared__ __align__(16) unsigned char shared_raw[];
  double* z_s = reinterpret_cast<double*>(shared_raw);  // tile_rows x k
  double* reduce_s = z_s + tile_rows * k;                // kBlock
  double* intercept_s = reduce_s + kBlock;               // k
  const int coef_ld = fused_coef_ld(d);
  T* coef_s = reinterpret_cast<T*>(intercept_s + k);     // k rows, coef_ld apart
  T* x_s = coef_s + k * coef_ld;                          // tile_rows x ld

  const int tid = threadIdx.x;
  const int width = d + 1;
  const int E = k * width;
  for (int e = tid; e < E; e += kBlock) {
    const int c = e / width, j = e - c * width;
    if (j < d)
      coef_s[c * coef_ld + j] = static_cast<T>(coef[e]);
    else
      intercept_s[c] = coef[e];
  }

  // Gradient roles (see above). kEntries == 1 exactly when E <= kBlock.
  const int groups = kEntries == 1 ? kBlock / E : 1;
  const int group = kEntries == 1 ? tid / E : 0;
  const int first_entry = kEntries == 1 ? tid - group * E : tid;
  int n_entries = 0;
  int entry_class[kEntries], entry_col[kEntries];
  double acc[kEntries];
#pragma unroll
  for (int m = 0; m < kEntries; ++m) {
    const int e = first_entry + m * kBlock;
    const bool mine = group < groups && e < E;
    n_entries += mine ? 1 : 0;
    entry_class[m] = mine ? e / width : 0;
    entry_col[m] = mine ? e - entry_class[m] * width : 0;
    acc[m] = 0.0;
  }
  double loss = 0.0;

  // Score teams: `team` consecutive lanes of one warp per (row, class) pair.
  const int teams = kBlock / team, team_id = tid / team, lane = tid - team_id * team;
  // Tile loading: thread tid copies elements tid, tid + kBlock, ...; (r, j) tracked incrementally.
  const int step_rows = d > 0 ? kBlock / d : 0, step_cols = d > 0 ? kBlock - step_rows * d : 0;

  const int64_t chunk = blockIdx.x;
  const int64_t chunk_begin = chunk * chunk_rows;
  const int64_t chunk_end = min(n, chunk_begin + chunk_rows);
  for (int64_t tile_begin = chunk_begin; tile_begin < chunk_end; tile_begin += tile_rows) {  // block-uniform
    const int rows = static_cast<int>(min(static_cast<int64_t>(tile_rows), chunk_end - tile_begin));
    __syncthreads();  // the coefficients are in; the previous tile is no longer read

    // 1. The tile: rows * d contiguous elements, kLoadBatch independent loads in flight per
    //    thread (X is read from memory once per call: this is what the kernel waits on).
    if (d > 0) {
      const T* src = X + tile_begin * d;
      const int count = rows * d;  // <= kBlock * ld, far below 2^31
      int r = tid / d, j = tid - (tid / d) * d;
      for (int base = tid; base < count; base += kLoadBatch * kBlock) {
        T v[kLoadBatch];
#pragma unroll
        for (int u = 0; u < kLoadBatch; ++u) v[u] = base + u * kBlock < count ? src[base + u * kBlock] : T(0);
#pragma unroll
        for (int u = 0; u < kLoadBatch; ++u) {
          if (base + u * kBlock < count) {
            x_s[r * ld + j] = v[u];
            r += step_rows;  // (r, j) of element base + (u + 1) kBlock
            j += step_cols;
            if (j >= d) {
              j -= d;
              ++r;
            }
          }
        }
      }
    }
    __syncthreads();

    // 2. Scores. The round count is block-uniform, so every lane reaches the shuffles.
    const int pairs = rows * k;
    for (int base = 0; base < pairs; base += teams) {
      const int p = base + team_id;
      const int r = p / k, c = p - r * k;
      T partial = T(0);
      if (p < pairs) {
        const T* xr = x_s + r * ld;
        const T* cr = coef_s + c * coef_ld;
        for (int j = lane; j < d; j += team) partial += xr[j] * cr[j];
      }
      for (int offset = team / 2; offset > 0; offset /= 2) partial += __shfl_xor_sync(0xffffffffu, partial, offset);
      if (p < pairs && lane == 0) z_s[r * k + c] = static_cast<double>(partial) + intercept_s[c];
    }
    __syncthreads();

    // 3. Loss and weighted residuals, one row per thread (tile_rows <= kBlock).
    if (tid < rows) {
      const int64_t i = tile_begin + tid;
      const double wv = w ? static_cast<double>(w[i]) : 1.0;
      const int32_t label = labels[i];
      double* zr = z_s + tid * k;
      if (k == 1) {
        loss += wv * binomial_row(zr[0], label, wv, zr);
      } else {
        double top, sum;
        loss += wv * multinomial_row_loss(zr, k, label, &top, &sum);
        for (int c = 0; c < k; ++c) zr[c] = wv * (exp(zr[c] - top) / sum - (c == label ? 1.0 : 0.0));
      }
    }
    __syncthreads();

    // 4. Gradient entries.
    if (n_entries > 0) {
      for (int r = group; r < rows; r += groups) {
        const double* zr = z_s + r * k;
        const T* xr = x_s + r * ld;
#pragma unroll
        for (int m = 0; m < kEntries; ++m) {
          if (m < n_entries) {
            const double x = entry_col[m] < d ? static_cast<double>(xr[entry_col[m]]) : 1.0;
            acc[m] += zr[entry_class[m]] * x;
          }
        }
      }
    }
  }

  __syncthreads();  // reduce_s is free (it was never used in the tile loop)
  if (groups > 1) {   // block-uniform
    if (n_entries > 0) reduce_s[tid] = acc[0];  // tid == group * E + first_entry
    __syncthreads();
    if (tid < E) {
      double total = reduce_s[tid];
      for (int g = 1; g < groups; ++g) total += reduce_s[g * E + tid];
      partials[tid * n_chunks + chunk] = total;
    }
    __syncthreads();  // reduce_s is reused by block_sum
  } else {
#pragma unroll
    for (int m = 0; m < kEntries; ++m)
      if (m < n_entries) partials[(first_entry + int64_t(m) * kBlock) * n_chunks + chunk] = acc[m];
  }
  const double loss_total = block_sum(loss, reduce_s);
  if (tid == 0) partials[int64_t(E) * n_chunks + chunk] = loss_total;
}

// out[c * out_stride + out_offset] = Σ_chunk partials[c * n_chunks + chunk] for c < ncols: a
// block per column, thread t summing chunks t, t + kBlock, ... in order, then a fixed-order tree.
__global__ void __launch_bounds__(kBlock) reduce_chunks_kernel(const double* __restrict__ partials, int64_t n_chunks, int64_t ncols,
                                                               double* __restrict__ out, int64_t out_stride, int64_t out_offset) {
  __shared__ double shared[kBlock];
  for (int64_t c = blockIdx.x; c < ncols; c += gridDim.x) {  // block-uniform
    double acc = 0.0;
    for (int64_t b = threadIdx.x; b < n_chunks; b += kBlock) acc += partials[c * n_chunks + b];
    const double total = block_sum(acc, shared);
    if (threadIdx.x == 0) out[c * out_stride + out_offset] = total;
    __syncthreads();  // `shared` is reused by the next column
  }
}

// ---- loss and residuals from scores (the cuBLAS path and loss_residuals) ---------------------

// partials[c * n_chunks + chunk] = Σ_{begin <= i < end} R[i][c] in double, for c < k. Called by
// a whole block of kBlock = kWarp x kRowLanes threads: thread (tx, ty) = (tid % kWarp, tid / kWarp)
// sums column slab * kWarp + tx over rows begin + ty, begin + ty + kRowLanes, ... in order, then
// the row lanes are added in order.
static_assert(kBlock == kWarp * kRowLanes, "chunk_column_sums maps a block onto kWarp x kRowLanes");
template <typename T>
__device__ void chunk_column_sums(const T* R, int64_t k, int64_t begin, int64_t end, int64_t chunk, int64_t n_chunks,
                                  double* __restrict__ partials, double (*lane_sums)[kWarp] /* [kRowLanes][kWarp] */) {
  const int tx = threadIdx.x % kWarp, ty = threadIdx.x / kWarp;
  const int64_t n_slabs = ceil_div(k, kWarp);
  for (int64_t slab = 0; slab < n_slabs; ++slab) {  // block-uniform
    const int64_t col = slab * kWarp + tx;
    double acc = 0.0;
    if (col < k)
      for (int64_t row = begin + ty; row < end; row += kRowLanes) acc += static_cast<double>(R[row * k + col]);
    lane_sums[ty][tx] = acc;
    __syncthreads();
    if (ty == 0 && col < k) {
      double total = lane_sums[0][tx];
      for (int y = 1; y < kRowLanes; ++y) total += lane_sums[y][tx];
      partials[col * n_chunks + chunk] = total;
    }
    __syncthreads();  // lane_sums is reused
  }
}

// From the scores Z (n x k, T, without intercept; the intercept of class c is
// intercept[c * intercept_stride]): R = w (p − onehot) rounded to T (R may be Z: each row is read
// before it is written), and per chunk of rows [chunk * chunk_rows, min(n, (chunk + 1) chunk_rows))
// partials[c * n_chunks + chunk] = Σ_rows R_ic in double (c < k), partials[k * n_chunks + chunk]
// = Σ_rows w_i loss_i. A block per chunk, thread t taking rows t, t + kBlock, ... of it in order;
// for k == 1 the residual sum is kept in a register, for k > 1 the block sums the chunk's R
// after writing it (its own writes, visible to it after the barrier; the chunk is small enough
// to be re-read from L2). One pass over Z.
template <typename T>
__global__ void __launch_bounds__(kBlock) loss_residuals_kernel(const T* Z, const int32_t* __restrict__ labels,
                                                                const T* __restrict__ w, int64_t n, int k,
                                                                const double* __restrict__ intercept, int64_t intercept_stride,
                                                                int64_t chunk_rows, int64_t n_chunks, T* R,
                                                                double* __restrict__ partials) {
  __shared__ double shared[kBlock];
  __shared__ double lane_sums[kRowLanes][kWarp];
  for (int64_t chunk = blockIdx.x; chunk < n_chunks; chunk += gridDim.x) {  // block-uniform
    const int64_t begin = chunk * chunk_rows, end = min(n, begin + chunk_rows);
    double loss = 0.0, residual_sum = 0.0;  // residual_sum: k == 1 only
    for (int64_t i = begin + threadIdx.x; i < end; i += kBlock) {
      const double wv = w ? static_cast<double>(w[i]) : 1.0;
      const int32_t label = labels[i];
      const T* zr = Z + i * k;
      T* rr = R + i * k;
      if (k == 1) {
        double r;
        loss += wv * binomial_row(static_cast<double>(zr[0]) + intercept[0], label, wv, &r);
        const T rounded = static_cast<T>(r);
        rr[0] = rounded;
        residual_sum += static_cast<double>(rounded);  // the sum of R as stored, as the CPU backend
        continue;
      }
      double top = -INFINITY, z_label = 0.0;
      for (int c = 0; c < k; ++c) top = fmax(top, static_cast<double>(zr[c]) + intercept[c * intercept_stride]);
      double sum = 0.0;
      for (int c = 0; c < k; ++c) {
        const double z = static_cast<double>(zr[c]) + intercept[c * intercept_stride];
        sum += exp(z - top);
        if (c == label) z_label = z;
      }
      loss += wv * (top + log(sum) - z_label);
      for (int c = 0; c < k; ++c) {
        const double z = static_cast<double>(zr[c]) + intercept[c * intercept_stride];
        rr[c] = static_cast<T>(wv * (exp(z - top) / sum - (c == label ? 1.0 : 0.0)));
      }
    }
    const double loss_total = block_sum(loss, shared);  // its barriers also publish R to the block
    if (threadIdx.x == 0) partials[k * n_chunks + chunk] = loss_total;
    __syncthreads();  // `shared` is reused
    if (k == 1) {  // block-uniform
      const double total = block_sum(residual_sum, shared);
      if (threadIdx.x == 0) partials[chunk] = total;
      __syncthreads();  // `shared` is reused by the next chunk
    } else {
      chunk_column_sums(R, k, begin, end, chunk, n_chunks, partials, lane_sums);
    }
  }
}

// ---- cuBLAS path kernels --------------------------------------------------------------------

template <typename T>
__global__ void cast_kernel(const double* __restrict__ src, int64_t count, T* __restrict__ dst) {
  for (int64_t i = global_thread(); i < count; i += grid_threads()) dst[i] = static_cast<T>(src[i]);
}

// out[c * (d + 1) + j] = Σ_slot partials[slot][j + c d] (each slot column-major d x k), in slot order.
template <typename T>
__global__ void reduce_gemm_gradient_kernel(const T* __restrict__ partials, int64_t slots, int64_t d, int64_t k,
                                            double* __restrict__ out) {
  const int64_t dk = d * k;
  for (int64_t idx = global_thread(); idx < dk; idx += grid_threads()) {
    const int64_t c = idx / d, j = idx - c * d;
    double s = 0.0;
#pragma unroll 8
    for (int64_t p = 0; p < slots; ++p) s += static_cast<double>(partials[p * dk + idx]);
    out[c * (d + 1) + j] = s;
  }
}

// ---- probabilities and labels ---------------------------------------------------------------

template <typename T>
__global__ void probabilities_kernel(const T* __restrict__ Z, int64_t n, int64_t k, T* __restrict__ out) {
  for (int64_t i = global_thread(); i < n; i += grid_threads()) {
    if (k == 1) {
      const double p = sigmoid(static_cast<double>(Z[i]));
      out[2 * i] = static_cast<T>(1.0 - p);
      out[2 * i + 1] = static_cast<T>(p);
      continue;
    }
    const T* z = Z + i * k;
    T top_t = z[0];
    for (int64_t c = 1; c < k; ++c)
      if (top_t < z[c]) top_t = z[c];
    const double top = static_cast<double>(top_t);
    double sum = 0.0;
    for (int64_t c = 0; c < k; ++c) sum += exp(static_cast<double>(z[c]) - top);
    for (int64_t c = 0; c < k; ++c) out[i * k + c] = static_cast<T>(exp(static_cast<double>(z[c]) - top) / sum);
  }
}

// classes[z > 0] for k == 1 (σ(0) = 0.5 picks class 0), else classes[first index of the row's max].
template <typename T>
__global__ void predict_labels_kernel(const T* __restrict__ Z, int64_t n, int64_t k, const double* __restrict__ classes,
                                      double* __restrict__ out) {
  for (int64_t i = global_thread(); i < n; i += grid_threads()) {
    const T* z = Z + i * k;
    int64_t best = 0;
    if (k == 1) {
      best = z[0] > T(0) ? 1 : 0;
    } else {
      for (int64_t c = 1; c < k; ++c)
        if (z[best] < z[c]) best = c;
    }
    out[i] = classes[best];
  }
}

// ---- library wrapper (float / double) -------------------------------------------------------

// C[b] = op(A[b]) op(B[b]) for b < batch (alpha 1, beta 0), column-major.
template <typename T>
void gemm_strided_batched(cublasHandle_t handle, cublasOperation_t op_a, cublasOperation_t op_b, int m, int n, int k, const T* A,
                          int lda, long long stride_a, const T* B, int ldb, long long stride_b, T* C, int ldc, long long stride_c,
                          int batch) {
  const T one = 1, zero = 0;
  if constexpr (std::is_same_v<T, float>) {
    GPUML_CUBLAS_CHECK(cublasSgemmStridedBatched(handle, op_a, op_b, m, n, k, &one, A, lda, stride_a, B, ldb, stride_b, &zero, C, ldc,
                                                 stride_c, batch));
  } else {
    GPUML_CUBLAS_CHECK(cublasDgemmStridedBatched(handle, op_a, op_b, m, n, k, &one, A, lda, stride_a, B, ldb, stride_b, &zero, C, ldc,
                                                 stride_c, batch));
  }
}

// ---- the backend ----------------------------------------------------------------------------

// The fused kernel's launch shape for (n, d, k, T): a function of these only (determinism).
struct FusedPlan {
  int tile_rows = 0, ld = 0, team = 1;
  int64_t chunk_rows = 0, n_chunks = 0;
  std::size_t shared_bytes = 0;
};

template <typename T>
FusedPlan plan_fused(int64_t n, int64_t d, int64_t k) {
  FusedPlan plan;
  const int64_t fixed = (kBlock + k) * int64_t(sizeof(double)) + k * fused_coef_ld(d) * int64_t(sizeof(T));
  const int64_t budget = kFusedSharedBytes - fixed;  // the caller checks that the total fits
  auto rows_for = [&](int64_t ld) {
    return std::clamp<int64_t>(budget / (ld * int64_t(sizeof(T)) + k * int64_t(sizeof(double))), 1, kBlock);
  };
  // A first tile height with odd row strides (one lane per pair), then the team that spreads the
  // tile's pairs over the block's kBlock threads, then the stride that keeps the team's reads
  // free of bank conflicts: an odd multiple of the team size (rows land `team` banks apart).
  const int64_t rows0 = rows_for(d | 1);
  int team = 1;
  while (team < kWarp && team * 2 * rows0 * k <= kBlock) team *= 2;
  const int64_t ld = d == 0 ? 0 : team * (ceil_div(d, team) | 1);
  plan.team = team;
  plan.ld = static_cast<int>(ld);
  plan.tile_rows = static_cast<int>(std::min(rows0, rows_for(ld)));
  const int64_t tiles = ceil_div(n, plan.tile_rows);
  const int64_t max_chunks =
      std::clamp<int64_t>(kFusedPartialBytes / ((k * (d + 1) + 1) * int64_t(sizeof(double))), kMinFusedChunks, kTargetChunks);
  plan.chunk_rows = ceil_div(tiles, max_chunks) * plan.tile_rows;
  plan.n_chunks = ceil_div(n, plan.chunk_rows);
  plan.shared_bytes = static_cast<std::size_t>(fused_shared_bytes<T>(plan.tile_rows, ld, d, k));
  return plan;
}

// The chunks of loss_residuals_kernel for (n, k, T): a function of these only (determinism).
struct ResidualPlan {
  int64_t chunk_rows = 0, n_chunks = 0;
};

template <typename T>
ResidualPlan plan_residuals(int64_t n, int64_t k) {
  int64_t rows = std::max<int64_t>(kBlock, ceil_div(n, kTargetChunks));
  if (k > 1) {
    rows = std::min(rows, std::max<int64_t>(kBlock, kResidualChunkBytes / (k * int64_t(sizeof(T)))));
    rows = std::max(rows, ceil_div(n * (k + 1) * int64_t(sizeof(double)), kResidualPartialBytes));
  }
  return {rows, ceil_div(n, rows)};
}

// Grows `buffer` to at least `bytes` (never shrinks: the driver calls with the same sizes).
void reserve(Context& ctx, Buffer& buffer, std::size_t bytes) {
  if (buffer.bytes() < bytes || buffer.data() == nullptr) buffer = Buffer(ctx, std::max<std::size_t>(bytes, 1));
}

template <typename T>
class CudaLogisticBackend final : public LogisticBackend<T> {
 public:
  explicit CudaLogisticBackend(const Context& ctx) : ctx_(ctx) {}

  double loss_gradient(const T* X, const int32_t* labels, const T* w, int64_t n, int64_t d, int64_t k, const double* coef_host,
                       double* grad_host) override {
    cuda::Resources& res = cuda::activate(ctx_);
    const int64_t E = k * (d + 1);
    if (E <= 0) return 0.0;
    if (n <= 0) {
      std::fill(grad_host, grad_host + E, 0.0);
      return 0.0;
    }
    // coef in (one H2D copy; from pageable memory cudaMemcpyAsync returns once it has been read).
    reserve(ctx_, coef_, E * sizeof(double));
    GPUML_CUDA_CHECK(cudaMemcpyAsync(coef_.data(), coef_host, E * sizeof(double), cudaMemcpyHostToDevice, res.stream));
    reserve(ctx_, out_, (E + 1) * sizeof(double));  // the gradient, then the loss
    bool fits = E <= kFusedMaxEntries;
    FusedPlan plan;
    if (fits) {
      plan = plan_fused<T>(n, d, k);
      fits = plan.shared_bytes <= kSharedWithoutOptIn;  // always, by the budget; checked all the same
    }
    if (fits)
      fused(res, plan, X, labels, w, n, d, k);
    else
      with_cublas(res, X, labels, w, n, d, k);
    return copy_out(res, E, grad_host);
  }

  double loss_residuals(const T* Z, const int32_t* labels, const T* w, int64_t n, int64_t k, const double* intercept_host, T* R,
                        double* residual_sums_host) override {
    cuda::Resources& res = cuda::activate(ctx_);
    if (k <= 0) return 0.0;
    if (n <= 0) {
      std::fill(residual_sums_host, residual_sums_host + k, 0.0);
      return 0.0;
    }
    const int k_ = checked_int(k, "n_classes");
    // The intercepts in (coef_ is free scratch here), one H2D copy.
    reserve(ctx_, coef_, k * sizeof(double));
    GPUML_CUDA_CHECK(cudaMemcpyAsync(coef_.data(), intercept_host, k * sizeof(double), cudaMemcpyHostToDevice, res.stream));
    reserve(ctx_, out_, (k + 1) * sizeof(double));  // the residual sums, then the loss
    const ResidualPlan plan = plan_residuals<T>(n, k);
    reserve(ctx_, partials_, (k + 1) * plan.n_chunks * sizeof(double));
    double* partials = partials_.as<double>();
    loss_residuals_kernel<T><<<static_cast<unsigned>(std::min(plan.n_chunks, kMaxBlocks)), kBlock, 0, res.stream>>>(
        Z, labels, w, n, k_, coef_.as<double>(), 1, plan.chunk_rows, plan.n_chunks, R, partials);
    GPUML_CUDA_CHECK_LAUNCH();
    reduce_chunks_kernel<<<static_cast<unsigned>(std::min(k + 1, kMaxBlocks)), kBlock, 0, res.stream>>>(partials, plan.n_chunks, k + 1,
                                                                                                    out_.as<double>(), 1, 0);
    GPUML_CUDA_CHECK_LAUNCH();
    return copy_out(res, k, residual_sums_host);
  }

  void probabilities(const T* Z, int64_t n, int64_t k, T* out) override {
    cuda::Resources& res = cuda::activate(ctx_);
    if (n <= 0 || k <= 0) return;
    probabilities_kernel<T><<<blocks_for_threads(n), kBlock, 0, res.stream>>>(Z, n, k, out);
    GPUML_CUDA_CHECK_LAUNCH();
    // The caller may read `out` on another stream or the host.
    GPUML_CUDA_CHECK(cudaStreamSynchronize(res.stream));
  }

  void predict_labels(const T* Z, int64_t n, int64_t k, const double* classes_host, double* out) override {
    cuda::Resources& res = cuda::activate(ctx_);
    if (n <= 0 || k <= 0) return;
    const int64_t n_classes = std::max<int64_t>(k, 2);
    Buffer classes(ctx_, n_classes * sizeof(double));
    GPUML_CUDA_CHECK(cudaMemcpyAsync(classes.data(), classes_host, n_classes * sizeof(double), cudaMemcpyHostToDevice, res.stream));
    predict_labels_kernel<T><<<blocks_for_threads(n), kBlock, 0, res.stream>>>(Z, n, k, classes.as<double>(), out);
    GPUML_CUDA_CHECK_LAUNCH();
    GPUML_CUDA_CHECK(cudaStreamSynchronize(res.stream));  // before `classes` goes back to the pool, and for the caller
  }

 private:
  static unsigned blocks_for_threads(int64_t threads) { return cuda::grid_for(threads, kBlock, kMaxBlocks); }

  // out_ (count sums, then the loss) to the host by one D2H copy, then waits: copies the sums to
  // sums_host and returns the loss.
  double copy_out(cuda::Resources& res, int64_t count, double* sums_host) {
    out_host_.resize(count + 1);
    GPUML_CUDA_CHECK(cudaMemcpyAsync(out_host_.data(), out_.data(), (count + 1) * sizeof(double), cudaMemcpyDeviceToHost, res.stream));
    GPUML_CUDA_CHECK(cudaStreamSynchronize(res.stream));
    std::memcpy(sums_host, out_host_.data(), count * sizeof(double));
    return out_host_[count];
  }

  void fused(cuda::Resources& res, const FusedPlan& plan, const T* X, const int32_t* labels, const T* w, int64_t n, int64_t d,
             int64_t k) {
    const int64_t E = k * (d + 1);
    reserve(ctx_, partials_, (E + 1) * plan.n_chunks * sizeof(double));
    double* partials = partials_.as<double>();
    const unsigned grid = static_cast<unsigned>(plan.n_chunks);  // <= kTargetChunks
    const int d_ = static_cast<int>(d), k_ = static_cast<int>(k);  // E <= kFusedMaxEntries
    if (E <= kBlock)
      fused_loss_gradient_kernel<T, 1><<<grid, kBlock, plan.shared_bytes, res.stream>>>(
          X, labels, w, n, d_, k_, coef_.as<double>(), plan.tile_rows, plan.ld, plan.team, plan.chunk_rows, plan.n_chunks, partials);
    else
      fused_loss_gradient_kernel<T, kMaxEntriesPerThread><<<grid, kBlock, plan.shared_bytes, res.stream>>>(
          X, labels, w, n, d_, k_, coef_.as<double>(), plan.tile_rows, plan.ld, plan.team, plan.chunk_rows, plan.n_chunks, partials);
    GPUML_CUDA_CHECK_LAUNCH();
    reduce_chunks_kernel<<<static_cast<unsigned>(std::min(E + 1, kMaxBlocks)), kBlock, 0, res.stream>>>(
        partials, plan.n_chunks, E + 1, out_.as<double>(), 1, 0);
    GPUML_CUDA_CHECK_LAUNCH();
  }

  void with_cublas(cuda::Resources& res, const T* X, const int32_t* labels, const T* w, int64_t n, int64_t d, int64_t k) {
    const int64_t width = d + 1, E = k * width;
    const int d_ = checked_int(d, "n_features"), k_ = checked_int(k, "n_classes");
    cublasHandle_t handle = res.cublas();  // pedantic math mode: exact FP32/FP64, no TF32

    // The coefficients in T for cuBLAS (double: as copied in).
    const T* coef_t = nullptr;
    if constexpr (std::is_same_v<T, double>) {
      coef_t = coef_.as<double>();
    } else {
      reserve(ctx_, coef_t_, E * sizeof(T));
      cast_kernel<T><<<blocks_for_threads(E), kBlock, 0, res.stream>>>(coef_.as<double>(), E, coef_t_.as<T>());
      GPUML_CUDA_CHECK_LAUNCH();
      coef_t = coef_t_.as<T>();
    }

    // Z (n x k, row-major) = X Bᵀ: column-major Zᵀ (k x rows, ld k) = (coef memory as column-major
    // (d+1) x k, ld d+1)ᵀ[:, 0:d] · (X rows as column-major d x rows, ld d).
    reserve(ctx_, z_, n * k * sizeof(T));
    T* Z = z_.as<T>();
    if (d == 0) {
      GPUML_CUDA_CHECK(cudaMemsetAsync(Z, 0, n * k * sizeof(T), res.stream));
    } else {
      for (int64_t row0 = 0; row0 < n; row0 += kMaxGemmRows) {
        const int rows = static_cast<int>(std::min(kMaxGemmRows, n - row0));
        gemm_strided_batched<T>(handle, CUBLAS_OP_T, CUBLAS_OP_N, k_, rows, d_, coef_t, checked_int(width, "n_features + 1"), 0,
                                X + row0 * d, d_, 0, Z + row0 * k, k_, 0, 1);
      }
    }

    // Loss and residuals (over Z) with the intercept gradient, per chunk of rows in double (the
    // intercept of class c is coef[c (d + 1) + d]).
    const ResidualPlan plan = plan_residuals<T>(n, k);
    const int64_t n_chunks = plan.n_chunks;
    reserve(ctx_, partials_, (k + 1) * n_chunks * sizeof(double));
    double* partials = partials_.as<double>();
    loss_residuals_kernel<T><<<static_cast<unsigned>(std::min(n_chunks, kMaxBlocks)), kBlock, 0, res.stream>>>(
        Z, labels, w, n, k_, coef_.as<double>() + d, width, plan.chunk_rows, n_chunks, Z, partials);
    GPUML_CUDA_CHECK_LAUNCH();
    double* out = out_.as<double>();
    // Intercept gradients to out[c (d + 1) + d], the loss to out[E].
    reduce_chunks_kernel<<<static_cast<unsigned>(std::min(k, kMaxBlocks)), kBlock, 0, res.stream>>>(partials, n_chunks, k, out, width,
                                                                                                d);
    GPUML_CUDA_CHECK_LAUNCH();
    reduce_chunks_kernel<<<1, kBlock, 0, res.stream>>>(partials + k * n_chunks, n_chunks, 1, out, 0, E);
    GPUML_CUDA_CHECK_LAUNCH();
    if (d == 0) return;

    // Rᵀ X per chunk of rows: column-major G_p (d x k, ld d) = (X_p as column-major d x rows) ·
    // (R_p as column-major k x rows)ᵀ; the chunk products added in double in chunk order.
    const int64_t per_slot = d * k;
    int64_t chunks = std::min(kGemmChunks, ceil_div(n, kMinGemmRows));
    chunks = std::max<int64_t>(1, std::min<int64_t>(chunks, kGemmPartialBytes / (per_slot * int64_t(sizeof(T)))));
    const int64_t gemm_rows = std::min(ceil_div(n, chunks), kMaxGemmRows);
    const int64_t full_chunks = n / gemm_rows;
    const int64_t rest_rows = n - full_chunks * gemm_rows;
    const int64_t slots = full_chunks + (rest_rows > 0 ? 1 : 0);
    checked_int(slots, "chunks");
    reserve(ctx_, slot_partials_, slots * per_slot * sizeof(T));
    T* G = slot_partials_.as<T>();
    auto multiply = [&](int64_t row0, int64_t rows, int64_t count, int64_t slot0) {
      gemm_strided_batched<T>(handle, CUBLAS_OP_N, CUBLAS_OP_T, d_, k_, static_cast<int>(rows), X + row0 * d, d_,
                              static_cast<long long>(rows * d), Z + row0 * k, k_, static_cast<long long>(rows * k), G + slot0 * per_slot,
                              d_, static_cast<long long>(per_slot), static_cast<int>(count));
    };
    if (full_chunks > 0) multiply(0, gemm_rows, full_chunks, 0);
    if (rest_rows > 0) multiply(full_chunks * gemm_rows, rest_rows, 1, full_chunks);
    reduce_gemm_gradient_kernel<T><<<blocks_for_threads(per_slot), kBlock, 0, res.stream>>>(G, slots, d, k, out);
    GPUML_CUDA_CHECK_LAUNCH();
  }

  Context ctx_;
  // Scratch kept across calls (the driver creates one backend per fit and calls it repeatedly).
  Buffer coef_;           // k x (d+1) doubles, as given (loss_residuals: the k intercepts)
  Buffer coef_t_;         // the same in float (cuBLAS path, float only)
  Buffer out_;            // the gradient (loss_residuals: the residual sums), then the loss
  Buffer partials_;       // per-chunk partial sums (column-major: entry x chunk)
  Buffer z_;              // cuBLAS path: scores, then residuals (n x k)
  Buffer slot_partials_;  // cuBLAS path: per-chunk Rᵀ X (d x k each, T)
  std::vector<double> out_host_;
};

}  // namespace

template <typename T>
std::unique_ptr<LogisticBackend<T>> make_logistic_cuda_backend(const Context& ctx) {
  return std::make_unique<CudaLogisticBackend<T>>(ctx);
}

template std::unique_ptr<LogisticBackend<float>> make_logistic_cuda_backend<float>(const Context&);
template std::unique_ptr<LogisticBackend<double>> make_logistic_cuda_backend<double>(const Context&);

}  // namespace gpuml::detail

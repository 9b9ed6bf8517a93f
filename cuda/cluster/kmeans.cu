// The CUDA backend of KMeans: the primitives of src/cluster/kmeans_backend.hpp on the device.
// Design notes and measurements: benchmarks/NOTES.md.
//
// Lloyd's iteration is assign + accumulate:
//  - assign never materializes the n x k distance matrix. float32: one fused kernel computes
//    x.c like an SGEMM (exact FP32 FMA, register tiles) and keeps a running argmin of
//    |c_j|^2 - 2 x.c_j per row; for d <= 128 the TF32 tensor-core kernel (kmeans_tf32.cu) runs
//    first and settles every row whose answer it can prove equal to this kernel's.
//    float64: cuBLAS DGEMM (pedantic math: exact) on row tiles sized
//    to stay in L2, then an argmin kernel (a warp per row). Both count changed labels.
//  - accumulate is deterministic: rows are sorted by label (stable radix sort), every cluster's
//    rows are cut into fixed chunks summed in double in a fixed order, and the chunks of each
//    cluster are then added in order. No float atomics anywhere.
// Reductions (weighted_sum, variances, potentials) use a grid whose size depends on n only and
// fixed-order trees, so the same input gives bit-identical results on every run and device.
// The *_from_products primitives (sparse X, known through X C^T and row norms) use the CPU
// backend's double arithmetic, so that their labels agree with it exactly.
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>
#include <cuda_pipeline_primitives.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "cluster/kmeans_backend.hpp"
#include "core/counter_random.hpp"
#include "core/trace.hpp"
#include "cuda/cluster/kmeans_tf32.cuh"
#include "cuda/core/resources.cuh"
#include "gpuml/core/error.hpp"
#include "cuda/core/kernel_util.cuh"

namespace gpuml::detail {
namespace {

constexpr int kWarpsPerBlock = kBlock / kWarp;
constexpr unsigned kFullMask = 0xffffffffu;

// ---- small device helpers ------------------------------------------------------------------

// 16-byte vector loads of G and the center norms (buffers this file allocates and pads).
template <typename T>
struct Vec16 {
  static constexpr int width = 16 / sizeof(T);
  __device__ static void load(const T* p, T (&v)[width]) {
    if constexpr (std::is_same_v<T, float>) {
      const float4 q = *reinterpret_cast<const float4*>(p);
      v[0] = q.x; v[1] = q.y; v[2] = q.z; v[3] = q.w;
    } else {
      const double2 q = *reinterpret_cast<const double2*>(p);
      v[0] = q.x; v[1] = q.y;
    }
  }
};

// Butterfly sum: every lane ends with the same bits (a + b == b + a), whatever lane reads it.
template <typename V>
__device__ __forceinline__ V warp_sum(V v) {
  for (int offset = kWarp / 2; offset > 0; offset /= 2) v += __shfl_xor_sync(kFullMask, v, offset);
  return v;
}

// |row|^2 summed per lane over columns lane, lane + 32, ..., then across the warp.
template <typename T>
__device__ __forceinline__ T warp_sqnorm(const T* __restrict__ row, int64_t d, int lane) {
  T s = 0;
  for (int64_t c = lane; c < d; c += kWarp) s += row[c] * row[c];
  return warp_sum(s);
}

__device__ __forceinline__ int64_t global_warp() { return global_thread() / kWarp; }
__device__ __forceinline__ int64_t grid_warps() { return grid_threads() / kWarp; }

template <typename T>
__device__ __forceinline__ T min_value(T a, T b) { return b < a ? b : a; }

// (min, argmin) over the lanes l ^ offset, offset = first_offset, first_offset / 2, ..., 1 (a
// group of 2 first_offset lanes; every lane of the warp must call it): the least value, the lowest
// index among equal values. Lanes holding no candidate pass (INFINITY, INT_MAX).
template <typename V>
__device__ __forceinline__ void shuffle_argmin(V& best, int& best_j, int first_offset) {
  for (int offset = first_offset; offset > 0; offset /= 2) {
    const V other = __shfl_xor_sync(kFullMask, best, offset);
    const int other_j = __shfl_xor_sync(kFullMask, best_j, offset);
    if (other < best || (other == best && other_j < best_j)) {
      best = other;
      best_j = other_j;
    }
  }
}

// Adds every thread's count to *changes: a fixed-order sum per block, then one integer atomic
// per block (exact in any order). Every thread of the kBlock-thread block must call it.
__device__ __forceinline__ void add_block_changes(unsigned long long mine, unsigned long long* changes) {
  __shared__ unsigned long long warp_changes[kWarpsPerBlock];
  mine = warp_sum(mine);
  if (threadIdx.x % kWarp == 0) warp_changes[threadIdx.x / kWarp] = mine;
  __syncthreads();
  if (threadIdx.x == 0) {
    unsigned long long total = 0;
    for (int w = 0; w < kWarpsPerBlock; ++w) total += warp_changes[w];
    if (total) atomicAdd(changes, total);
  }
}

// One row of X spread over a warp for repeated distance computations: rows of up to
// kRegCols * 32 columns are kept in registers, longer ones are re-read (from L1). Both paths
// add the same terms in the same order, so a distance does not depend on the path.
constexpr int kRegCols = 4;
template <typename T>
struct WarpRow {
  const T* row;
  int64_t d;
  int lane;
  T regs[kRegCols];

  __device__ WarpRow(const T* row_, int64_t d_, int lane_) : row(row_), d(d_), lane(lane_) {
    if (d <= kRegCols * kWarp) {
#pragma unroll
      for (int e = 0; e < kRegCols; ++e) {
        const int64_t c = lane + int64_t(e) * kWarp;
        regs[e] = c < d ? row[c] : T(0);
      }
    }
  }

  // |row - center|^2, the same value in every lane.
  __device__ T sqdist(const T* __restrict__ center) const {
    T s = 0;
    if (d <= kRegCols * kWarp) {
#pragma unroll
      for (int e = 0; e < kRegCols; ++e) {
        const int64_t c = lane + int64_t(e) * kWarp;
        if (c < d) {
          const T diff = regs[e] - center[c];
          s += diff * diff;
        }
      }
    } else {
      for (int64_t c = lane; c < d; c += kWarp) {
        const T diff = row[c] - center[c];
        s += diff * diff;
      }
    }
    return warp_sum(s);
  }
};

// ---- kernels -----------------------------------------------------------------------------

// out[r] = |X_r|^2 for rows of a rows x d matrix (a warp per row). Padding entries
// out[rows..padded) are zeroed so that vector loads of `out` read defined memory.
template <typename T>
__global__ void row_sqnorms_kernel(const T* __restrict__ X, int64_t rows, int64_t d, int64_t padded, T* __restrict__ out) {
  const int lane = threadIdx.x % kWarp;
  for (int64_t r = global_warp(); r < padded; r += grid_warps()) {
    if (r >= rows) {
      if (lane == 0) out[r] = T(0);
      continue;
    }
    const T s = warp_sqnorm(X + r * d, d, lane);
    if (lane == 0) out[r] = s;
  }
}

// The assign epilogue for one tile of rows [row0, row0 + rows): G is rows x k (leading
// dimension ldg, a multiple of the vector width) holding X_tile * C^T. A warp per row finds
// argmin_j (|c_j|^2 - 2 G_ij) (lowest j on ties), adds |x|^2, writes label and dist2, and
// counts rows whose label changed.
template <typename T>
__global__ void __launch_bounds__(kBlock) argmin_tile_kernel(const T* __restrict__ G, int64_t ldg, const T* __restrict__ center_sqnorms,
                                                             int64_t k, const T* __restrict__ X, int64_t d, int64_t row0, int64_t rows,
                                                             int32_t* __restrict__ labels, T* __restrict__ dist2, bool count_changes,
                                                             unsigned long long* __restrict__ changes) {
  using V = Vec16<T>;
  constexpr int W = V::width;
  const int lane = threadIdx.x % kWarp;
  unsigned long long my_changes = 0;
  for (int64_t r = global_warp(); r < rows; r += grid_warps()) {
    const T* g = G + r * ldg;
    T best = INFINITY;
    int best_j = INT_MAX;  // k < 2^31 (checked before the GEMM)
    // Each lane visits its columns in increasing j, so a strict < keeps the lowest j.
#pragma unroll 4
    for (int j0 = lane * W; j0 < k; j0 += kWarp * W) {
      T gv[W], cv[W];
      V::load(g + j0, gv);
      V::load(center_sqnorms + j0, cv);
#pragma unroll
      for (int e = 0; e < W; ++e) {
        const T v = cv[e] - T(2) * gv[e];
        if (j0 + e < k && v < best) {
          best = v;
          best_j = j0 + e;
        }
      }
    }
    shuffle_argmin(best, best_j, kWarp / 2);
    const int64_t i = row0 + r;
    const T x_sqnorm = warp_sqnorm(X + i * d, d, lane);
    if (lane == 0) {
      const int32_t label = best_j < k ? best_j : 0;  // no finite candidate (overflow): 0
      if (count_changes && labels[i] != label) ++my_changes;
      labels[i] = label;
      const T d2 = x_sqnorm + best;
      dist2[i] = d2 > T(0) ? d2 : T(0);  // rounding can push an exact 0 below zero
    }
  }
  if (count_changes) add_block_changes(my_changes, changes);
}

// ---- the fused float32 assign: distances and argmin without writing G ----------------------
//
// A block owns kTileRows rows of X and walks all centers in tiles of kTileCenters; for each
// pair of tiles it computes the kTileRows x kTileCenters dot products like an SGEMM (shared
// memory tiles of depth kDepth, double buffered through registers, an 8 x 8 register tile per
// thread, plain FP32 FMA), then folds |c_j|^2 - 2 x.c_j into a running (min, argmin) per row.
// Nothing but labels and dist2 reaches memory. Rows, centers and features past the ends are
// zero-filled in shared memory and skipped in the epilogue.
namespace fused {
constexpr int kTileRows = 128;
constexpr int kTileCenters = 128;  // == kTileRows: one loader serves both tiles
constexpr int kDepth = 16;
constexpr int kThreads = 256;      // a 16 x 16 grid of threads, each with an 8 x 8 register tile
constexpr int kPad = 4;            // keeps float4 alignment; tile stores are at most 2-way bank conflicts
constexpr int kPerThread = kTileRows * kDepth / kThreads;  // 8 elements per thread and tile
static_assert(kTileRows == kTileCenters && kPerThread == 8, "the loader and the 8 x 8 register tile assume these");

using Tile = float[kDepth][kTileRows + kPad];  // transposed: feature-major
// Dynamic shared memory: A and B tiles (double buffered), then each thread's running best value
// and index for its 8 rows (kept out of registers during the multiply: 2 blocks fit per SM).
constexpr std::size_t kSharedBytes = 4 * sizeof(Tile) + 8 * kThreads * (sizeof(float) + sizeof(int));

// Starts asynchronous copies (cp.async, no registers held) of the kTileRows x kDepth tile at
// (row0, col0) of a row-major rows x cols matrix into S, transposed; zeros outside the matrix.
// With row_list, tile row i is matrix row row_list[row0 + i] (rows counts the list).
// Thread t copies feature (t % 16) of rows (t / 16) + 16 i, i < 8.
__device__ __forceinline__ void issue_tile(Tile& S, const float* __restrict__ M, int64_t rows, int64_t cols, int64_t row0,
                                           int64_t col0, const int64_t* __restrict__ row_list = nullptr) {
  const int c = threadIdx.x % kDepth, r = threadIdx.x / kDepth;
  const bool col_ok = col0 + c < cols;
  const int64_t rows_left = rows - row0 - r;  // copy row r + 16 i while 16 i < rows_left
#pragma unroll
  for (int i = 0; i < kPerThread; ++i) {
    float* dst = &S[c][r + 16 * i];
    if (col_ok && 16 * i < rows_left) {
      const int64_t row = row0 + r + 16 * i;
      __pipeline_memcpy_async(dst, M + (row_list ? row_list[row] : row) * cols + col0 + c, sizeof(float));
    } else {
      *dst = 0.0f;
    }
  }
}

// The i-th of a thread's 8 rows (or columns) inside a tile: two groups of 4, 64 apart, so that
// the float4 reads of a warp are broadcasts (rows) or contiguous (columns).
__device__ __forceinline__ int tile_index(int t, int i) { return (i < 4 ? 0 : 64) + t * 4 + (i & 3); }

__device__ __forceinline__ void load4(const float* p, float* out) {
  const float4 q = *reinterpret_cast<const float4*>(p);
  out[0] = q.x; out[1] = q.y; out[2] = q.z; out[3] = q.w;
}
}  // namespace fused

// With row_list, only rows row_list[0 .. *list_count) of X are assigned (n is ignored).
__global__ void __launch_bounds__(fused::kThreads, 2) fused_argmin_kernel(
    const float* __restrict__ X, int64_t n, int64_t d, const float* __restrict__ C, int64_t k, const float* __restrict__ center_sqnorms,
    const float* __restrict__ row_sqnorms, int32_t* __restrict__ labels, float* __restrict__ dist2, bool count_changes,
    unsigned long long* __restrict__ changes, const int64_t* __restrict__ row_list, const unsigned long long* __restrict__ list_count) {
  using namespace fused;
  if (row_list) n = static_cast<int64_t>(*list_count);
  extern __shared__ __align__(16) unsigned char shared_bytes[];
  Tile* As = reinterpret_cast<Tile*>(shared_bytes);  // [2]
  Tile* Bs = As + 2;                                 // [2]
  float* best_value = reinterpret_cast<float*>(Bs + 2);     // [8][kThreads]
  int* best_index = reinterpret_cast<int*>(best_value + 8 * kThreads);  // [8][kThreads]
  __shared__ unsigned int block_changes;
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;  // tx: the 16 lanes of a half-warp
  if (threadIdx.x == 0) block_changes = 0;
  __syncthreads();
  unsigned int my_changes = 0;

  for (int64_t row0 = int64_t(blockIdx.x) * kTileRows; row0 < n; row0 += int64_t(gridDim.x) * kTileRows) {
#pragma unroll
    for (int i = 0; i < 8; ++i) {  // only this thread touches its slots: no barrier needed
      best_value[i * kThreads + threadIdx.x] = INFINITY;
      best_index[i * kThreads + threadIdx.x] = INT_MAX;
    }
    for (int64_t c0 = 0; c0 < k; c0 += kTileCenters) {
      float acc[8][8];
#pragma unroll
      for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j) acc[i][j] = 0.0f;
      // Double buffering: the copy of the next depth slice runs while this one is multiplied.
      // A buffer is refilled only after the barrier that ends the step which last read it.
      issue_tile(As[0], X, n, d, row0, 0, row_list);
      issue_tile(Bs[0], C, k, d, c0, 0);
      __pipeline_commit();
      int buf = 0;
      for (int64_t k0 = 0; k0 < d; k0 += kDepth) {
        if (k0 + kDepth < d) {
          issue_tile(As[buf ^ 1], X, n, d, row0, k0 + kDepth, row_list);
          issue_tile(Bs[buf ^ 1], C, k, d, c0, k0 + kDepth);
          __pipeline_commit();
          __pipeline_wait_prior(1);  // this step's copies are done, the next step's may still run
        } else {
          __pipeline_wait_prior(0);
        }
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < kDepth; ++kk) {
          float a[8], b[8];
          load4(&As[buf][kk][ty * 4], a);
          load4(&As[buf][kk][64 + ty * 4], a + 4);
          load4(&Bs[buf][kk][tx * 4], b);
          load4(&Bs[buf][kk][64 + tx * 4], b + 4);
#pragma unroll
          for (int i = 0; i < 8; ++i)
#pragma unroll
            for (int j = 0; j < 8; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
        }
        __syncthreads();
        buf ^= 1;
      }
      // Columns in increasing j (within the thread, then tile after tile): strict < keeps the lowest.
      float best[8];
      int best_j[8];
#pragma unroll
      for (int i = 0; i < 8; ++i) {
        best[i] = best_value[i * kThreads + threadIdx.x];
        best_j[i] = best_index[i * kThreads + threadIdx.x];
      }
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        const int64_t cj = c0 + tile_index(tx, j);
        if (cj < k) {
          const float cn = center_sqnorms[cj];
#pragma unroll
          for (int i = 0; i < 8; ++i) {
            const float v = fmaf(-2.0f, acc[i][j], cn);
            if (v < best[i]) {
              best[i] = v;
              best_j[i] = static_cast<int>(cj);
            }
          }
        }
      }
#pragma unroll
      for (int i = 0; i < 8; ++i) {
        best_value[i * kThreads + threadIdx.x] = best[i];
        best_index[i * kThreads + threadIdx.x] = best_j[i];
      }
    }
    float best[8];
    int best_j[8];
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      best[i] = best_value[i * kThreads + threadIdx.x];
      best_j[i] = best_index[i * kThreads + threadIdx.x];
    }
    // The 16 threads of a half-warp share rows: combine them (lowest j on ties).
#pragma unroll
    for (int i = 0; i < 8; ++i) shuffle_argmin(best[i], best_j[i], 8);
    if (tx == 0) {
#pragma unroll
      for (int i = 0; i < 8; ++i) {
        const int64_t slot = row0 + tile_index(ty, i);
        if (slot < n) {
          const int64_t row = row_list ? row_list[slot] : slot;
          const int32_t label = best_j[i] < k ? best_j[i] : 0;  // no finite candidate (overflow): 0
          if (count_changes && labels[row] != label) ++my_changes;
          labels[row] = label;
          const float d2 = row_sqnorms[row] + best[i];
          dist2[row] = d2 > 0.0f ? d2 : 0.0f;  // rounding can push an exact 0 below zero
        }
      }
    }
  }
  if (count_changes) {
    if (my_changes) atomicAdd(&block_changes, my_changes);
    __syncthreads();
    if (threadIdx.x == 0 && block_changes) atomicAdd(changes, static_cast<unsigned long long>(block_changes));  // integers: exact
  }
}

// The transform epilogue, in place on a tile: out_ij = sqrt(max(0, |x_i|^2 + |c_j|^2 - 2 G_ij)).
template <typename T>
__global__ void distances_tile_kernel(T* __restrict__ G, int64_t k, const T* __restrict__ center_sqnorms, const T* __restrict__ X,
                                      int64_t d, int64_t row0, int64_t rows) {
  const int lane = threadIdx.x % kWarp;
  for (int64_t r = global_warp(); r < rows; r += grid_warps()) {
    const T x_sqnorm = warp_sqnorm(X + (row0 + r) * d, d, lane);
    T* g = G + r * k;
    for (int64_t j = lane; j < k; j += kWarp) {
      const T d2 = x_sqnorm + (center_sqnorms[j] - T(2) * g[j]);  // as assign adds them
      g[j] = sqrt(d2 > T(0) ? d2 : T(0));
    }
  }
}

__global__ void iota_kernel(int64_t* __restrict__ out, int64_t n) {
  for (int64_t i = global_thread(); i < n; i += grid_threads()) out[i] = i;
}

// offsets[j] = first position of label j in the sorted labels, for j = 0..k (offsets[k] = n).
__global__ void segment_offsets_kernel(const int32_t* __restrict__ sorted, int64_t n, int64_t k, int64_t* __restrict__ offsets) {
  for (int64_t j = global_thread(); j <= k; j += grid_threads()) {
    int64_t lo = 0, hi = n;
    while (lo < hi) {
      const int64_t mid = lo + (hi - lo) / 2;
      if (sorted[mid] < j) lo = mid + 1; else hi = mid;
    }
    offsets[j] = lo;
  }
}

// Each cluster's rows (positions [offsets[j], offsets[j + 1]) of the sorted order) in chunks of
// chunk_rows: counts[j] = the number of chunks of cluster j, counts[k] = 0 (the exclusive scan of
// counts then gives each cluster's first chunk, and the total last).
__global__ void chunk_counts_kernel(const int64_t* __restrict__ offsets, int64_t k, int64_t chunk_rows, int64_t* __restrict__ counts) {
  for (int64_t j = global_thread(); j <= k; j += grid_threads())
    counts[j] = j < k ? (offsets[j + 1] - offsets[j] + chunk_rows - 1) / chunk_rows : 0;
}

// The chunks' bounds: cluster j's chunks are [group_start[j], group_start[j + 1]).
__global__ void chunk_bounds_kernel(const int64_t* __restrict__ offsets, const int64_t* __restrict__ group_start, int64_t k,
                                    int64_t chunk_rows, int64_t* __restrict__ begins, int64_t* __restrict__ ends) {
  for (int64_t j = global_thread(); j < k; j += grid_threads()) {
    int64_t chunk = group_start[j];
    for (int64_t b = offsets[j]; b < offsets[j + 1]; b += chunk_rows, ++chunk) {
      begins[chunk] = b;
      ends[chunk] = b + chunk_rows < offsets[j + 1] ? b + chunk_rows : offsets[j + 1];
    }
  }
}

// Column sums over chunks of rows, a block of (32 columns) x (8 row lanes) per (chunk, slab of
// 32 columns). Rows of a chunk are positions [begin, end) of `order` (nullptr: the identity).
// Column c < d adds w_row * X[row, c] (weights == nullptr: w = 1), or (X[row, c] - center[c])^2
// when center != nullptr. With with_weights, column d of the output holds the sum of w_row.
// One value per (chunk, column) goes to partials[chunk * ncols + column], ncols = d (+ 1).
// With squares and centered != nullptr, centered[row, c] = X[row, c] - center[c] rounded to T
// (centered may be X: each element is read, then written, by the same thread).
// Chunks are explicit (chunk_begin/chunk_end) or uniform: [c * chunk_rows, min(n, (c + 1) * chunk_rows)).
// Every sum runs in a fixed order (rows ascending per lane, then lanes ascending).
constexpr int kSlabCols = 32;
constexpr int kRowLanes = 8;
__device__ __forceinline__ void add_term(double& acc, double& acc_w, double x, double w, double shift, bool squares) {
  if (squares) {
    const double dev = x - shift;
    acc += dev * dev;
  } else {
    acc += w * x;
  }
  acc_w += w;
}
constexpr int kRowsInFlight = 8;  // independent row loads per lane before their first use
template <typename T>
__global__ void __launch_bounds__(kSlabCols * kRowLanes) chunk_column_sums_kernel(
    const T* X, int64_t d, const int64_t* __restrict__ order, const T* __restrict__ weights,
    const double* __restrict__ center, const int64_t* __restrict__ chunk_begin, const int64_t* __restrict__ chunk_end,
    int64_t chunk_rows, int64_t n, int64_t n_chunks, const int64_t* __restrict__ live_chunks, bool with_weights,
    double* __restrict__ partials, T* centered) {
  __shared__ double lane_sums[kRowLanes][kSlabCols];
  if (live_chunks) n_chunks = *live_chunks;  // planned on the device: the grid was sized for the most there can be
  __shared__ double lane_weights[kRowLanes];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int64_t n_slabs = (d + kSlabCols - 1) / kSlabCols;
  const int64_t ncols = d + (with_weights ? 1 : 0);
  // Block-uniform loops: every thread reaches the same barriers.
  for (int64_t chunk = blockIdx.x; chunk < n_chunks; chunk += gridDim.x) {
    const int64_t begin = chunk_begin ? chunk_begin[chunk] : chunk * chunk_rows;
    const int64_t end = chunk_end ? chunk_end[chunk] : (begin + chunk_rows < n ? begin + chunk_rows : n);
    for (int64_t slab = blockIdx.y; slab < n_slabs; slab += gridDim.y) {
      const int64_t col = slab * kSlabCols + tx;
      const bool in_range = col < d;
      const double shift = (center && in_range) ? center[col] : 0.0;
      double acc = 0.0, acc_w = 0.0;
      const bool squares = center != nullptr;
      int64_t p = begin + ty;
      for (; p + (kRowsInFlight - 1) * kRowLanes < end; p += kRowsInFlight * kRowLanes) {
        int64_t rows[kRowsInFlight];
        double x[kRowsInFlight], w[kRowsInFlight];
#pragma unroll
        for (int u = 0; u < kRowsInFlight; ++u) rows[u] = order ? order[p + u * kRowLanes] : p + u * kRowLanes;
#pragma unroll
        for (int u = 0; u < kRowsInFlight; ++u) {
          w[u] = weights ? static_cast<double>(weights[rows[u]]) : 1.0;
          x[u] = in_range ? static_cast<double>(X[rows[u] * d + col]) : 0.0;
        }
#pragma unroll
        for (int u = 0; u < kRowsInFlight; ++u) add_term(acc, acc_w, x[u], w[u], shift, squares);
        if (centered && in_range) {
#pragma unroll
          for (int u = 0; u < kRowsInFlight; ++u) centered[rows[u] * d + col] = static_cast<T>(x[u] - shift);
        }
      }
      for (; p < end; p += kRowLanes) {
        const int64_t row = order ? order[p] : p;
        const double x = in_range ? static_cast<double>(X[row * d + col]) : 0.0;
        add_term(acc, acc_w, x, weights ? static_cast<double>(weights[row]) : 1.0, shift, squares);
        if (centered && in_range) centered[row * d + col] = static_cast<T>(x - shift);
      }
      lane_sums[ty][tx] = acc;
      if (tx == 0) lane_weights[ty] = acc_w;
      __syncthreads();
      if (ty == 0 && in_range) {
        double total = lane_sums[0][tx];
        for (int y = 1; y < kRowLanes; ++y) total += lane_sums[y][tx];
        partials[chunk * ncols + col] = total;
      }
      if (with_weights && slab == 0 && ty == 0 && tx == 0) {
        double total = lane_weights[0];
        for (int y = 1; y < kRowLanes; ++y) total += lane_weights[y];
        partials[chunk * ncols + d] = total;
      }
      __syncthreads();
    }
  }
}

// The Lloyd step's cluster sums for float rows with d % 4 == 0 and d <= 4 * kColumnThreads (d <=
// 128), X 16-byte aligned: chunk_column_sums_kernel's sums of w_row * X[row, c] and of w_row
// (with_weights), one block a chunk, each thread four columns (one float4 a row), kColumnThreads
// threads a row and kLanes rows at once. Two blocks each reading half of every 256-byte row (the
// general kernel's 32-column slabs at d = 64) ran at about half the memory's rate. Every sum runs
// in a fixed order: rows ascending per lane, then lanes ascending.
template <int kColumnThreads>
__global__ void __launch_bounds__(kBlock) chunk_row_sums4_kernel(const float* __restrict__ X, int64_t d,
                                                                 const int64_t* __restrict__ order, const float* __restrict__ weights,
                                                                 const int64_t* __restrict__ chunk_begin,
                                                                 const int64_t* __restrict__ chunk_end,
                                                                 const int64_t* __restrict__ live_chunks, double* __restrict__ partials) {
  constexpr int kLanes = kBlock / kColumnThreads, kRowsAhead = 4;
  __shared__ double lane_sums[kLanes][4 * kColumnThreads];
  __shared__ double lane_weights[kLanes];
  const int tx = static_cast<int>(threadIdx.x) % kColumnThreads, ty = static_cast<int>(threadIdx.x) / kColumnThreads;
  const int64_t n_chunks = *live_chunks, ncols = d + 1;
  const int64_t col = 4 * static_cast<int64_t>(tx);
  const bool in_range = col < d;
  for (int64_t chunk = blockIdx.x; chunk < n_chunks; chunk += gridDim.x) {  // block-uniform
    const int64_t begin = chunk_begin[chunk], end = chunk_end[chunk];
    double acc[4] = {0.0, 0.0, 0.0, 0.0}, acc_w = 0.0;
    auto add = [&](float4 x, double w) {
      acc[0] += w * static_cast<double>(x.x);
      acc[1] += w * static_cast<double>(x.y);
      acc[2] += w * static_cast<double>(x.z);
      acc[3] += w * static_cast<double>(x.w);
      acc_w += w;
    };
    const float4 zero = make_float4(0.f, 0.f, 0.f, 0.f);
    int64_t p = begin + ty;
    for (; p + (kRowsAhead - 1) * kLanes < end; p += kRowsAhead * kLanes) {
      int64_t rows[kRowsAhead];
      float4 x[kRowsAhead];
      double w[kRowsAhead];
#pragma unroll
      for (int u = 0; u < kRowsAhead; ++u) rows[u] = order[p + u * kLanes];
#pragma unroll
      for (int u = 0; u < kRowsAhead; ++u) {
        w[u] = weights ? static_cast<double>(weights[rows[u]]) : 1.0;
        x[u] = in_range ? *reinterpret_cast<const float4*>(X + rows[u] * d + col) : zero;
      }
#pragma unroll
      for (int u = 0; u < kRowsAhead; ++u) add(x[u], w[u]);
    }
    for (; p < end; p += kLanes) {
      const int64_t row = order[p];
      add(in_range ? *reinterpret_cast<const float4*>(X + row * d + col) : zero, weights ? static_cast<double>(weights[row]) : 1.0);
    }
#pragma unroll
    for (int c = 0; c < 4; ++c) lane_sums[ty][4 * tx + c] = acc[c];
    if (tx == 0) lane_weights[ty] = acc_w;
    __syncthreads();
    if (ty == 0 && in_range) {
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        double total = lane_sums[0][4 * tx + c];
        for (int y = 1; y < kLanes; ++y) total += lane_sums[y][4 * tx + c];
        partials[chunk * ncols + col + c] = total;
      }
    }
    if (ty == 0 && tx == 0) {
      double total = lane_weights[0];
      for (int y = 1; y < kLanes; ++y) total += lane_weights[y];
      partials[chunk * ncols + d] = total;
    }
    __syncthreads();
  }
}

// out[g * ncols + c] = (sum over chunks of group g, in order, of partials[chunk * ncols + c]) / divisor.
// Group g owns chunks [group_start[g], group_start[g + 1]); group_start == nullptr: one group of all chunks.
__global__ void reduce_chunk_groups_kernel(const double* __restrict__ partials, int64_t ncols, const int64_t* __restrict__ group_start,
                                           int64_t n_groups, int64_t n_chunks, double divisor, double* __restrict__ out) {
  for (int64_t t = global_thread(); t < n_groups * ncols; t += grid_threads()) {
    const int64_t g = t / ncols, c = t % ncols;
    const int64_t first = group_start ? group_start[g] : 0;
    const int64_t last = group_start ? group_start[g + 1] : n_chunks;
    double s = 0.0;
    int64_t chunk = first;
    // Loads a batch ahead of the adds (the same adds, in order): one chunk at a time waited on
    // each load, ~0.2 ms for the ~2000 chunks of a column mean at 1M rows.
    constexpr int kBatch = 16;
    for (; chunk + kBatch <= last; chunk += kBatch) {
      double v[kBatch];
#pragma unroll
      for (int i = 0; i < kBatch; ++i) v[i] = partials[(chunk + i) * ncols + c];
#pragma unroll
      for (int i = 0; i < kBatch; ++i) s += v[i];
    }
    for (; chunk < last; ++chunk) s += partials[chunk * ncols + c];
    out[t] = s / divisor;
  }
}

// Per-block partial sums of w_i * v_i (nullptr: ones) over a grid-stride loop.
template <typename T>
__global__ void __launch_bounds__(kBlock) weighted_sum_partials_kernel(const T* __restrict__ w, const T* __restrict__ v, int64_t n,
                                                                       double* __restrict__ partials) {
  __shared__ double shared[kBlock];
  double acc = 0.0;
  for (int64_t i = global_thread(); i < n; i += grid_threads())
    acc += (w ? static_cast<double>(w[i]) : 1.0) * (v ? static_cast<double>(v[i]) : 1.0);
  const double total = block_sum(acc, shared);
  if (threadIdx.x == 0) partials[blockIdx.x] = total;
}

// Sums of w_i * v_i over consecutive chunks of chunk_len elements into totals[chunk * stride]
// (a block per chunk).
template <typename T>
__global__ void __launch_bounds__(kBlock) chunk_totals_kernel(const T* __restrict__ w, const T* __restrict__ v, int64_t n,
                                                              int64_t chunk_len, int64_t n_chunks, int64_t stride,
                                                              double* __restrict__ totals) {
  __shared__ double shared[kBlock];
  for (int64_t chunk = blockIdx.x; chunk < n_chunks; chunk += gridDim.x) {
    const int64_t begin = chunk * chunk_len;
    const int64_t end = begin + chunk_len < n ? begin + chunk_len : n;
    double acc = 0.0;
    for (int64_t i = begin + threadIdx.x; i < end; i += kBlock)
      acc += (w ? static_cast<double>(w[i]) : 1.0) * (v ? static_cast<double>(v[i]) : 1.0);
    const double total = block_sum(acc, shared);
    if (threadIdx.x == 0) totals[chunk * stride] = total;
    __syncthreads();  // `shared` is reused by the next chunk
  }
}

// For query q: the first i >= start[q] at which base[q] + sum_{start..i} w*v exceeds
// threshold[q]; n - 1 when none does. Sequential per query (the chunk was found on the host).
template <typename T>
__global__ void scan_search_kernel(const T* __restrict__ w, const T* __restrict__ v, int64_t n, const int64_t* __restrict__ start,
                                   const double* __restrict__ base, const double* __restrict__ threshold, int64_t m,
                                   int64_t* __restrict__ result) {
  for (int64_t q = global_thread(); q < m; q += grid_threads()) {
    double run = base[q];
    const double t = threshold[q];
    int64_t found = n - 1;
    for (int64_t i = start[q]; i < n; ++i) {
      run += (w ? static_cast<double>(w[i]) : 1.0) * (v ? static_cast<double>(v[i]) : 1.0);
      if (run > t) {
        found = i;
        break;
      }
    }
    result[q] = found;
  }
}

// Per-block accumulators of the k-means++ potentials kernels: `groups` rows of m doubles in
// shared memory, each row owned by one group of threads (a warp, or a few lanes per row of X).
__device__ __forceinline__ void zero_group_potentials(double* acc, int groups, int64_t m) {
  for (int64_t t = threadIdx.x; t < groups * m; t += blockDim.x) acc[t] = 0.0;
  __syncthreads();
}
// partials[blockIdx.x * m + q] = Σ_g acc[g * m + q], the groups in order.
__device__ __forceinline__ void write_group_potentials(const double* acc, int groups, int64_t m, double* __restrict__ partials) {
  __syncthreads();
  for (int64_t q = threadIdx.x; q < m; q += blockDim.x) {
    double s = 0.0;
    for (int g = 0; g < groups; ++g) s += acc[g * m + q];
    partials[blockIdx.x * m + q] = s;
  }
}

// k-means++ potentials of m candidates in one pass over X: per block, for every candidate q,
// sum_i w_i * min(closest_i, |X_i - cand_q|^2) in double (a warp per row, fixed-order sums
// over the block's warps) into partials[block * m + q].
template <typename T>
__global__ void __launch_bounds__(kBlock) candidate_potentials_kernel(const T* __restrict__ X, const T* __restrict__ weights,
                                                                      const T* __restrict__ closest, int64_t n, int64_t d,
                                                                      const T* __restrict__ candidates, int64_t m,
                                                                      double* __restrict__ partials) {
  extern __shared__ double warp_potentials[];  // [kWarpsPerBlock][m]
  const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
  zero_group_potentials(warp_potentials, kWarpsPerBlock, m);
  for (int64_t i = global_warp(); i < n; i += grid_warps()) {
    const WarpRow<T> row(X + i * d, d, lane);
    const double w = weights ? static_cast<double>(weights[i]) : 1.0;
    const T c = closest[i];
    for (int64_t q = 0; q < m; ++q) {
      const T dist = row.sqdist(candidates + q * d);
      if (lane == 0) warp_potentials[warp * m + q] += w * static_cast<double>(min_value(c, dist));
    }
  }
  write_group_potentials(warp_potentials, kWarpsPerBlock, m, partials);
}

// closest_i = min(closest_i, |X_i - center|^2), or = |X_i - center|^2 with reset; where it
// is set or decreases, nearest_i = index (nearest may be null).
template <typename T>
__global__ void update_closest_kernel(const T* __restrict__ X, int64_t n, int64_t d, const T* __restrict__ center,
                                      T* __restrict__ closest, int32_t* __restrict__ nearest, int32_t index, bool reset) {
  const int lane = threadIdx.x % kWarp;
  for (int64_t i = global_warp(); i < n; i += grid_warps()) {
    const WarpRow<T> row(X + i * d, d, lane);
    const T dist = row.sqdist(center);
    if (lane == 0 && (reset || dist < closest[i])) {
      closest[i] = dist;
      if (nearest) nearest[i] = index;
    }
  }
}

// dist2_i = |X_i - centers[labels_i]|^2 as WarpRow sums it (a warp per row).
template <typename T>
__global__ void labeled_distances_kernel(const T* __restrict__ X, int64_t n, int64_t d, const T* __restrict__ centers,
                                         const int32_t* __restrict__ labels, T* __restrict__ dist2) {
  const int lane = threadIdx.x % kWarp;
  for (int64_t i = global_warp(); i < n; i += grid_warps()) {
    const WarpRow<T> row(X + i * d, d, lane);
    const T dist = row.sqdist(centers + static_cast<int64_t>(labels[i]) * d);
    if (lane == 0) dist2[i] = dist;
  }
}

// ---- k-means++ in the device's memory (one process, dense X) -------------------------------
//
// Each step is a few launches and no host round trip. apply (closest and nearest take the
// previous step's chosen column, on the rows that step read), draw (one warp per threshold walks
// the segment sums of the chunks' totals, the totals, then the chosen chunk's rows: the first row
// whose running sum passes the threshold), gaps (the candidates' distances to the centers),
// judge (per chunk of kPlusChunkRows rows, the rows some candidate may bring closer, in order,
// and the sum of the others' terms), potentials (one pass over the rows judged: every row's
// distance to every candidate, min'd with closest, written per candidate, and their weighted
// sums per chunk), choose (the candidate of least potential, the first on ties; its row becomes
// the step's center). A chunk's total for the draw is the chosen candidate's partial potential
// over it: the sum of w * closest once applied. Without nearest, gaps and judge are not run and
// every row is read. Sums run in double, in orders fixed by n alone (the grids' sizes change no
// result). Measurements: benchmarks/NOTES.md.
constexpr int64_t kPlusChunkRows = 2048;  // rows per chunk: judge's lists, partial potentials, draw's totals
constexpr int64_t kPlusSegment = 256;     // chunk totals per segment sum (the draw's first level)
constexpr int kPlusLanes = 4;             // lanes per row in the potentials pass
constexpr int kMaxTrials = 24;            // 2 + floor(ln k) <= 23 for every k < 2^31

// Where a chunk's rows start and end.
struct PlusChunk {
  int64_t begin, rows;
  __device__ PlusChunk(int64_t chunk, int64_t n)
      : begin(chunk * kPlusChunkRows), rows((begin + kPlusChunkRows < n ? begin + kPlusChunkRows : n) - begin) {}
};

// closest = min(closest, column *best of cand) on the rows the last potentials pass read (lists
// and counts from judge; every row where lists is null; cand holds a chunk's values in the order
// of its list), and nearest_i = index where it decreases.
template <typename T>
__global__ void __launch_bounds__(kBlock) plusplus_apply_kernel(const T* __restrict__ cand, const int32_t* __restrict__ best,
                                                                int64_t n, int64_t n_chunks, const int32_t* __restrict__ lists,
                                                                const int32_t* __restrict__ counts, T* __restrict__ closest,
                                                                int32_t* __restrict__ nearest, int32_t index) {
  const T* source = cand + static_cast<int64_t>(*best) * n;
  for (int64_t chunk = blockIdx.x; chunk < n_chunks; chunk += gridDim.x) {
    const PlusChunk c(chunk, n);
    const int64_t count = lists ? counts[chunk] : c.rows;
    for (int64_t s = threadIdx.x; s < count; s += kBlock) {
      const int64_t i = c.begin + (lists ? lists[c.begin + s] : s);
      const T v = source[c.begin + s];  // min(closest, distance), at the row's slot
      if (v < closest[i]) {
        closest[i] = v;
        if (nearest) nearest[i] = index;
      }
    }
  }
}

// Per chunk: the rows some candidate may bring closer (PlusPlusBound on their nearest center's
// least gap), as offsets in the chunk, in increasing order, into lists[begin ..], their
// closest and weights beside them (listed_closest, listed_w: the potentials pass reads them in
// order), and their count into counts[chunk]; the sum of w * closest over the other rows into
// unread[chunk]. Thread t judges rows t + kBlock j, j < kJudgeRounds, its loads issued at once.
constexpr int kJudgeRounds = kPlusChunkRows / kBlock;
template <typename T>
__global__ void __launch_bounds__(kBlock) plusplus_judge_kernel(const T* __restrict__ w, const T* __restrict__ closest,
                                                                const int32_t* __restrict__ nearest,
                                                                const T* __restrict__ least_gaps, PlusPlusBound<T> bound,
                                                                int64_t n, int64_t n_chunks,
                                                                int32_t* __restrict__ lists, T* __restrict__ listed_closest,
                                                                T* __restrict__ listed_w, int32_t* __restrict__ counts,
                                                                double* __restrict__ unread) {
  __shared__ double shared[kBlock];
  __shared__ int warp_counts[kJudgeRounds][kWarpsPerBlock];
  const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
  for (int64_t chunk = blockIdx.x; chunk < n_chunks; chunk += gridDim.x) {
    const PlusChunk c(chunk, n);
    T near[kJudgeRounds], weight[kJudgeRounds];
    int32_t center[kJudgeRounds];
#pragma unroll
    for (int j = 0; j < kJudgeRounds; ++j) {
      const int64_t r = threadIdx.x + j * kBlock;
      const bool valid = r < c.rows;
      near[j] = valid ? closest[c.begin + r] : T(0);
      weight[j] = valid && w ? w[c.begin + r] : T(1);
      center[j] = valid ? nearest[c.begin + r] : 0;
    }
    double acc = 0.0;
    unsigned ballots[kJudgeRounds];
#pragma unroll
    for (int j = 0; j < kJudgeRounds; ++j) {
      const bool valid = threadIdx.x + j * kBlock < c.rows;
      const bool unchanged = bound.unchanged(least_gaps[center[j]], near[j]);
      const bool read = valid && !unchanged;
      if (valid && unchanged) acc += static_cast<double>(weight[j]) * static_cast<double>(near[j]);
      ballots[j] = __ballot_sync(kFullMask, read);
      if (lane == 0) warp_counts[j][warp] = __popc(ballots[j]);
    }
    __syncthreads();
    int at = 0, total = 0;  // rows listed before this thread's round-j row; rows listed in all
#pragma unroll
    for (int j = 0; j < kJudgeRounds; ++j) {
      int before = total;
      for (int v = 0; v < kWarpsPerBlock; ++v) {
        if (v < warp) before += warp_counts[j][v];
        total += warp_counts[j][v];
      }
      if (ballots[j] >> lane & 1u) {
        at = before + __popc(ballots[j] & ((1u << lane) - 1u));
        lists[c.begin + at] = static_cast<int32_t>(threadIdx.x + j * kBlock);
        listed_closest[c.begin + at] = near[j];
        if (w) listed_w[c.begin + at] = weight[j];
      }
    }
    const double sum = block_sum(acc, shared);  // (its barriers also end the reads of warp_counts)
    if (threadIdx.x == 0) {
      counts[chunk] = total;
      unread[chunk] = sum;
    }
  }
}

// A warp's search of values value(0..len) (all >= 0) for the first index at which run + the
// running sum exceeds t: lane l sums 8 consecutive values of each window of 256, a warp scan
// orders the lanes, and the first lane to pass walks its 8 again. Returns that index, with run
// advanced to the sum before it; -1 when none passes, with run advanced by the sum of all. Where
// the walk rounds short of the lane's sum, the lane's last positive value is taken (in exact
// arithmetic the index found always holds a positive value). Every lane returns the same.
template <typename F>
__device__ int64_t warp_search(F value, int64_t len, double& run, double t) {
  const int lane = threadIdx.x % kWarp;
  for (int64_t base = 0; base < len; base += 8 * kWarp) {
    const int64_t first = base + 8 * lane;
    double mine = 0.0;
#pragma unroll
    for (int e = 0; e < 8; ++e)
      if (first + e < len) mine += value(first + e);
    double scan = mine;  // inclusive, over lanes in order
#pragma unroll
    for (int offset = 1; offset < kWarp; offset *= 2) {
      const double other = __shfl_up_sync(kFullMask, scan, offset);
      if (lane >= offset) scan += other;
    }
    const unsigned passed = __ballot_sync(kFullMask, run + scan > t);
    if (passed) {
      const int owner = __ffs(passed) - 1;
      double r = run + __shfl_sync(kFullMask, scan - mine, owner);
      const int64_t owner_first = base + 8 * owner, owner_end = owner_first + 8 < len ? owner_first + 8 : len;
      int64_t found = -1, last_positive = -1;
      double before_last_positive = r;
      for (int64_t i = owner_first; i < owner_end; ++i) {
        const double v = value(i);
        if (r + v > t) {
          found = i;
          break;
        }
        if (v > 0) {
          last_positive = i;
          before_last_positive = r;
        }
        r += v;
      }
      if (found < 0) {  // rounded short: the lane's sum passed, so it holds a positive value
        found = last_positive;
        r = before_last_positive;
      }
      run = r;
      return found;
    }
    run += __shfl_sync(kFullMask, scan, kWarp - 1);
  }
  return -1;
}

// The last index of value(0..len) holding a positive value, -1 when none does (every lane).
template <typename F>
__device__ int64_t warp_last_positive(F value, int64_t len) {
  int64_t last = -1;
  for (int64_t i = threadIdx.x % kWarp; i < len; i += kWarp)
    if (value(i) > 0) last = i;
  for (int offset = kWarp / 2; offset > 0; offset /= 2) {
    const int64_t other = __shfl_xor_sync(kFullMask, last, offset);
    last = other > last ? other : last;
  }
  return last;
}

// warp_search, and where nothing passes (t at or past the sum: rounding, as the potential and
// these sums add in different orders), the last positive value; -1 when every value is 0.
template <typename F>
__device__ int64_t warp_search_or_last(F value, int64_t len, double& run, double t) {
  const double start = run;
  const int64_t found = warp_search(value, len, run, t);
  if (found >= 0) return found;
  run = start;  // the next level then passes nothing either, and takes its last positive value
  return warp_last_positive(value, len);
}

// The step's `m` candidate rows: thresholds uniforms[t] * (*potential), each answered by
// warp t as search_cumsum does (the first row whose cumulative w * closest passes it; the last
// row when none does), through the segment totals (computed here), the chunk totals
// (partials[c * stride + *best]), then the rows. One block of m warps.
template <typename T>
__global__ void plusplus_draw_kernel(const T* __restrict__ w, const T* __restrict__ closest, int64_t n,
                                     const double* __restrict__ partials, int64_t stride, const int32_t* __restrict__ best,
                                     int64_t n_chunks, double* __restrict__ segments, const double* __restrict__ uniforms,
                                     const double* __restrict__ potential, int64_t m, int64_t* __restrict__ idx) {
  const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp, warps = blockDim.x / kWarp;
  const double* totals = partials + *best;  // chunk c's total at totals[c * stride]
  const int64_t n_segments = ceil_div(n_chunks, kPlusSegment);
  for (int64_t s = warp; s < n_segments; s += warps) {
    double acc = 0.0;
    const int64_t end = (s + 1) * kPlusSegment < n_chunks ? (s + 1) * kPlusSegment : n_chunks;
#pragma unroll 8
    for (int64_t c = s * kPlusSegment + lane; c < end; c += kWarp) acc += totals[c * stride];
    acc = warp_sum(acc);
    if (lane == 0) segments[s] = acc;
  }
  __syncthreads();
  if (warp >= m) return;
  const double t = uniforms[warp] * *potential;
  double run = 0.0;
  int64_t found = n - 1;  // every value 0 (each row on a center or of zero weight): clipped, as search_cumsum
  const int64_t s = warp_search_or_last([&](int64_t i) { return segments[i]; }, n_segments, run, t);
  if (s >= 0) {
    const int64_t c0 = s * kPlusSegment, chunks = (c0 + kPlusSegment < n_chunks ? c0 + kPlusSegment : n_chunks) - c0;
    // (A positive sum holds a positive term: -1 below only for negative weights; then the last.)
    const int64_t cs = warp_search_or_last([&](int64_t i) { return totals[(c0 + i) * stride]; }, chunks, run, t);
    const int64_t c = c0 + (cs >= 0 ? cs : chunks - 1);
    const int64_t r0 = c * kPlusChunkRows, rows = (r0 + kPlusChunkRows < n ? r0 + kPlusChunkRows : n) - r0;
    const int64_t r = warp_search_or_last(
        [&](int64_t i) { return (w ? static_cast<double>(w[r0 + i]) : 1.0) * static_cast<double>(closest[r0 + i]); }, rows,
        run, t);
    found = r0 + (r >= 0 ? r : rows - 1);
  }
  if (lane == 0) idx[warp] = found;
}

// least_gaps[a] = min over q of |X_idx[q] - center a|², for the centers [0, count) (a warp per
// center): a row whose nearest center is a is unchanged by every candidate when the bound holds
// for the least gap (PlusPlusBound::unchanged grows with the gap).
template <typename T>
__global__ void plusplus_gaps_kernel(const T* __restrict__ centers, int64_t count, int64_t d, const T* __restrict__ X,
                                     const int64_t* __restrict__ idx, int m, T* __restrict__ least_gaps) {
  const int lane = threadIdx.x % kWarp;
  for (int64_t a = global_warp(); a < count; a += grid_warps()) {
    const WarpRow<T> center(centers + a * d, d, lane);
    T least = center.sqdist(X + idx[0] * d);
    for (int q = 1; q < m; ++q) {
      const T gap = center.sqdist(X + idx[q] * d);
      least = gap < least ? gap : least;
    }
    if (lane == 0) least_gaps[a] = least;
  }
}

// For the m candidate rows idx[0..m) of X, over the rows judged in each chunk (lists, their
// closest and weights, and counts from judge, unread its sum of the others' terms; every row
// where lists is null): cand[q n + begin + s] = min(closest_i, |X_i - X_idx[q]|^2) for the
// chunk's s-th row read, i (so that a warp's writes are contiguous), and partials[chunk m + q] = the sum of
// w_i min(closest_i, |X_i - X_idx[q]|^2) over the chunk's rows (double, in an order fixed by n
// and the lists; a block per chunk, the grid any size). The chunk's rows are shared out in order
// to groups of kPlusLanes lanes, kRowsPer rows a group and trip (two where they fit in
// registers), the next trip's rows loaded while this trip's are used; the candidates sit in
// shared memory (m d values, after the groups' potentials: groups x m doubles). Vectors > 0:
// lane s holds the row's 16-byte vectors s, s + kPlusLanes, ... (at most Vectors of them) in
// registers (X aligned, d a multiple of the vector width); 0: lane s reads columns s,
// s + kPlusLanes, ... per candidate.
template <typename T, int Vectors>
__global__ void __launch_bounds__(kBlock) plusplus_potentials_kernel(const T* __restrict__ X, const T* __restrict__ w,
                                                                     const T* __restrict__ closest, int64_t n, int64_t d,
                                                                     const int32_t* __restrict__ lists,
                                                                     const T* __restrict__ listed_closest,
                                                                     const T* __restrict__ listed_w,
                                                                     const int32_t* __restrict__ counts,
                                                                     const double* __restrict__ unread,
                                                                     const int64_t* __restrict__ idx, int m,
                                                                     T* __restrict__ cand, double* __restrict__ partials) {
  using V = Vec16<T>;
  constexpr int W = V::width, kSlots = Vectors > 0 ? Vectors * W : 1;
  // Rows per group and trip: two where they fit in registers, else one (two halve the
  // shared-memory reads of the candidates).
  constexpr int kRowsPer = Vectors > 0 && kSlots <= 16 ? 2 : 1;
  constexpr int kGroups = kBlock / kPlusLanes, kTripRows = kRowsPer * kGroups;
  extern __shared__ double plusplus_shared[];
  double* group_potentials = plusplus_shared;  // [kGroups][m]
  // The candidates, [m][width], 16-byte aligned: Vectors > 0, each padded with zeros to width =
  // Vectors kPlusLanes W (the host sizes the buffer so), so that no lane tests its vectors against
  // d (0 - 0 adds exactly nothing); lane s then reads vectors s, s + kPlusLanes, ... (a group's
  // lanes 4 consecutive vectors: no bank conflict). Else width = d.
  T* candidates = reinterpret_cast<T*>(plusplus_shared + kGroups * m);
  constexpr int64_t kPadded = Vectors * kPlusLanes * W;
  const int64_t width = Vectors > 0 ? kPadded : d;
  for (int64_t e = threadIdx.x; e < m * width; e += blockDim.x) {
    const int64_t q = e / width, c = e % width;
    candidates[e] = c < d ? X[idx[q] * d + c] : T(0);
  }
  __syncthreads();
  const int lane = threadIdx.x % kPlusLanes, group = threadIdx.x / kPlusLanes;
  const int64_t n_chunks = ceil_div(n, kPlusChunkRows);
  double* my_potentials = group_potentials + group * m;  // lane s owns candidates s, s + kPlusLanes, ...
  // A trip's rows (slot s0 + group + r kGroups of the chunk's list) into x, near and wi; past
  // `count` the list's first row, unused (wi 0).
  struct Trip {
    int64_t rows[kRowsPer], slots[kRowsPer];
    bool active[kRowsPer];
    T x[kRowsPer][kSlots];
    T near[kRowsPer];
    double wi[kRowsPer];
  };
  auto load = [&](Trip& t, const PlusChunk& c, const int32_t* list, int64_t count, int64_t s0) {
#pragma unroll
    for (int r = 0; r < kRowsPer; ++r) {
      const int64_t slot = s0 + group + r * kGroups;
      t.active[r] = slot < count;
      const int64_t at = t.active[r] ? slot : 0;
      t.slots[r] = c.begin + at;
      t.rows[r] = c.begin + (list ? list[at] : at);
      const T* row = X + t.rows[r] * d;
      if constexpr (Vectors > 0) {
#pragma unroll
        for (int j = 0; j < Vectors; ++j) {
          const int col = (lane + j * kPlusLanes) * W;
          T v[W];
          if (col < d) {
            V::load(row + col, v);
          } else {
#pragma unroll
            for (int e = 0; e < W; ++e) v[e] = T(0);
          }
#pragma unroll
          for (int e = 0; e < W; ++e) t.x[r][j * W + e] = v[e];
        }
      }
      t.near[r] = list ? listed_closest[t.slots[r]] : closest[t.rows[r]];
      t.wi[r] = t.active[r] && w ? static_cast<double>(list ? listed_w[t.slots[r]] : w[t.rows[r]]) : t.active[r] ? 1.0 : 0.0;
    }
  };
  for (int64_t chunk = blockIdx.x; chunk < n_chunks; chunk += gridDim.x) {
    const PlusChunk c(chunk, n);
    const int32_t* list = lists ? lists + c.begin : nullptr;
    const int64_t count = lists ? counts[chunk] : c.rows;
    for (int q = lane; q < m; q += kPlusLanes) my_potentials[q] = 0.0;
    Trip now;
    if (count > 0) load(now, c, list, count, 0);
    // Block-uniform trips (the shuffles below take every lane of a warp).
    for (int64_t s0 = 0; s0 < count; s0 += kTripRows) {
      Trip next;
      const bool more = s0 + kTripRows < count;
      if (more) load(next, c, list, count, s0 + kTripRows);
      // kPlusLanes candidates a turn, lane s then keeping candidate q0 + s (its column and its
      // potential): no lane waits on another's branch, and the turn's chains of adds interleave.
      for (int q0 = 0; q0 < m; q0 += kPlusLanes) {
        T kept[kRowsPer];
#pragma unroll
        for (int r = 0; r < kRowsPer; ++r) kept[r] = now.near[r];
#pragma unroll
        for (int t = 0; t < kPlusLanes; ++t) {
          const int q = q0 + t;
          if (q >= m) break;  // the same in every lane
          T dist[kRowsPer];
#pragma unroll
          for (int r = 0; r < kRowsPer; ++r) dist[r] = 0;
          if constexpr (Vectors > 0) {
            const T* mine = candidates + q * kPadded + lane * W;
#pragma unroll
            for (int j = 0; j < Vectors; ++j) {
              T v[W];
              V::load(mine + j * kPlusLanes * W, v);
#pragma unroll
              for (int e = 0; e < W; ++e) {
#pragma unroll
                for (int r = 0; r < kRowsPer; ++r) {
                  const T diff = now.x[r][j * W + e] - v[e];
                  dist[r] += diff * diff;
                }
              }
            }
          } else {
            const T* center = candidates + int64_t(q) * d;
            const T* row = X + now.rows[0] * d;
            for (int64_t col = lane; col < d; col += kPlusLanes) {
              const T diff = row[col] - center[col];
              dist[0] += diff * diff;
            }
          }
#pragma unroll
          for (int r = 0; r < kRowsPer; ++r) {
            // The group's lanes hold partial sums: a butterfly within the group, the same in every lane.
            for (int offset = kPlusLanes / 2; offset > 0; offset /= 2) dist[r] += __shfl_xor_sync(kFullMask, dist[r], offset);
            const T v = dist[r] < now.near[r] ? dist[r] : now.near[r];
            if (lane == t) kept[r] = v;
          }
        }
        const int q = q0 + lane;
        if (q < m) {
#pragma unroll
          for (int r = 0; r < kRowsPer; ++r)
            if (now.active[r]) {
              cand[int64_t(q) * n + now.slots[r]] = kept[r];
              my_potentials[q] += now.wi[r] * static_cast<double>(kept[r]);
            }
        }
      }
      if (more) now = next;
    }
    __syncthreads();
    // A warp per candidate sums the groups' potentials (lane l: groups l, l + 32, ...; then a
    // fixed butterfly).
    const int warp_lane = threadIdx.x % kWarp;
    for (int q = threadIdx.x / kWarp; q < m; q += kWarpsPerBlock) {
      double sum = 0.0;
      for (int g = warp_lane; g < kGroups; g += kWarp) sum += group_potentials[g * m + q];
      sum = warp_sum(sum);
      if (warp_lane == 0) partials[chunk * m + q] = sum + (unread ? unread[chunk] : 0.0);
    }
    __syncthreads();  // group_potentials is written again by the next chunk
  }
}

// The candidate of least potential (the first on ties; a warp per candidate sums its chunks'
// partials in a fixed order): *best, *potential, and its row of X into center. One block of
// at least m warps.
template <typename T>
__global__ void plusplus_choose_kernel(const double* __restrict__ partials, int64_t chunks, int m,
                                       const int64_t* __restrict__ idx, const T* __restrict__ X, int64_t d,
                                       T* __restrict__ center, int32_t* __restrict__ best, double* __restrict__ potential) {
  __shared__ double potentials[kMaxTrials];
  __shared__ int chosen;
  const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
  if (warp < m) {
    double s = 0.0;
#pragma unroll 8
    for (int64_t b = lane; b < chunks; b += kWarp) s += partials[b * m + warp];
    s = warp_sum(s);
    if (lane == 0) potentials[warp] = s;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    int b = 0;
    for (int q = 1; q < m; ++q)
      if (potentials[q] < potentials[b]) b = q;
    chosen = b;
    *best = b;
    *potential = potentials[b];
  }
  __syncthreads();
  const T* row = X + idx[chosen] * d;
  for (int64_t c = threadIdx.x; c < d; c += blockDim.x) center[c] = row[c];
}

// ---- X known through its products with the centers (sparse X) ------------------------------
//
// The arithmetic of the CPU backend (kmeans_cpu.cpp), so that labels agree with it exactly:
// |x - c|^2 = max(0, |x|^2 - 2 x.c + |c|^2) in double, rounded to T; the nearest center is the
// one of least |c|^2 - 2 x.c in double (lowest index on ties). A row's m products are read by a
// group of `lanes` consecutive lanes (a power of two, lanes_for(m)), lane s taking columns
// s, s + lanes, ... : coalesced for any m, and no idle lanes for small m.

// Lanes per row: the least power of two >= m, at most a warp.
int lanes_for(int64_t m) {
  int lanes = 1;
  while (lanes < kWarp && lanes < m) lanes *= 2;
  return lanes;
}

template <typename T>
__device__ __forceinline__ T squared_distance_from_product(T row_norm, T product, T center_norm) {
  const double d2 = static_cast<double>(row_norm) - 2.0 * static_cast<double>(product) + static_cast<double>(center_norm);
  return static_cast<T>(0.0 < d2 ? d2 : 0.0);  // std::max(0.0, d2), as the CPU backend
}

// assign_from_products: labels, dist2 and the count of changed labels (as argmin_tile_kernel).
// The group's lanes scan their columns in increasing c with a strict <, then shuffle_argmin
// combines them: the CPU's sequential scan, including its cases without a finite minimum (all
// values +inf, or a NaN first value: center 0 and that value).
template <typename T>
__global__ void __launch_bounds__(kBlock) assign_from_products_kernel(const T* __restrict__ products, const T* __restrict__ row_norms,
                                                                      int64_t n, const T* __restrict__ center_norms, int64_t k,
                                                                      int lanes, int32_t* __restrict__ labels, T* __restrict__ dist2,
                                                                      bool count_changes, unsigned long long* __restrict__ changes) {
  const int lane = threadIdx.x % kWarp, sub = lane % lanes;
  const int64_t rows_per_warp = kWarp / lanes;
  unsigned long long my_changes = 0;
  for (int64_t base = global_warp() * rows_per_warp; base < n; base += grid_warps() * rows_per_warp) {  // warp-uniform
    const int64_t i = base + lane / lanes;
    const T* p = products + i * k;
    double best = INFINITY;
    int best_c = INT_MAX;  // k < 2^31 (checked on the host)
    if (i < n) {
      for (int64_t c = sub; c < k; c += lanes) {
        const double v = static_cast<double>(center_norms[c]) - 2.0 * static_cast<double>(p[c]);
        if (v < best) {
          best = v;
          best_c = static_cast<int>(c);
        }
      }
    }
    shuffle_argmin(best, best_c, lanes / 2);
    if (i < n && sub == 0) {
      const double first = static_cast<double>(center_norms[0]) - 2.0 * static_cast<double>(p[0]);
      if (best_c == INT_MAX || first != first) {  // the CPU keeps center 0 and its value
        best = first;
        best_c = 0;
      }
      if (count_changes && labels[i] != best_c) ++my_changes;
      labels[i] = best_c;
      const double d2 = static_cast<double>(row_norms[i]) + best;
      dist2[i] = static_cast<T>(0.0 < d2 ? d2 : 0.0);  // std::max(0.0, d2)
    }
  }
  if (count_changes) add_block_changes(my_changes, changes);
}

// candidate_potentials_from_products for candidates [0, m) of a batch: products (row stride ld)
// and candidate_norms start at the batch's first candidate. As candidate_potentials_kernel, with
// a group of `lanes` lanes per row instead of a warp: per block and candidate, each group sums its
// rows in order into its own shared accumulator, the groups are added in order into
// partials[block * m + q].
template <typename T>
__global__ void __launch_bounds__(kBlock) candidate_potentials_from_products_kernel(
    const T* __restrict__ products, int64_t ld, const T* __restrict__ row_norms, const T* __restrict__ weights,
    const T* __restrict__ closest, int64_t n, const T* __restrict__ candidate_norms, int64_t m, int lanes,
    double* __restrict__ partials) {
  extern __shared__ double group_potentials[];  // [kBlock / lanes][m]
  const int groups = kBlock / lanes, group = threadIdx.x / lanes, sub = threadIdx.x % lanes;
  zero_group_potentials(group_potentials, groups, m);
  double* mine = group_potentials + group * m;
  for (int64_t i = int64_t(blockIdx.x) * groups + group; i < n; i += int64_t(gridDim.x) * groups) {
    const double w = weights ? static_cast<double>(weights[i]) : 1.0;
    const T c = closest[i], row_norm = row_norms[i];
    const T* p = products + i * ld;
    for (int64_t q = sub; q < m; q += lanes)
      mine[q] += w * static_cast<double>(min_value(c, squared_distance_from_product(row_norm, p[q], candidate_norms[q])));
  }
  write_group_potentials(group_potentials, groups, m, partials);
}

// closest_i = min(closest_i, |x_i - c|^2), or = |x_i - c|^2 with reset (products: n x 1).
template <typename T>
__global__ void update_closest_from_products_kernel(const T* __restrict__ products, const T* __restrict__ row_norms, int64_t n,
                                                    T center_norm, T* __restrict__ closest, bool reset) {
  for (int64_t i = global_thread(); i < n; i += grid_threads()) {
    const T dist = squared_distance_from_product(row_norms[i], products[i], center_norm);
    closest[i] = reset ? dist : min_value(closest[i], dist);
  }
}

// In place: products (n x k) become sqrt(|x_i - c_j|^2).
template <typename T>
__global__ void distances_from_products_kernel(T* __restrict__ products, const T* __restrict__ row_norms, int64_t n,
                                               const T* __restrict__ center_norms, int64_t k) {
  for (int64_t t = global_thread(); t < n * k; t += grid_threads()) {
    const int64_t i = t / k, c = t - i * k;
    products[t] = sqrt(squared_distance_from_product(row_norms[i], products[t], center_norms[c]));
  }
}

template <typename T>
__global__ void merge_nearest_kernel(const int32_t* __restrict__ labels, const T* __restrict__ dist2, int64_t n, int64_t first,
                                     T* __restrict__ closest, int32_t* __restrict__ nearest) {
  for (int64_t i = global_thread(); i < n; i += grid_threads()) {
    const T d2 = dist2[i] > T(0) ? dist2[i] : T(0);
    if (first == 0 || d2 < closest[i]) {
      closest[i] = d2;
      nearest[i] = static_cast<int32_t>(first + labels[i]);
    }
  }
}

// move_centers: each center's move (KMeansBackend's move_center) into moves[c], or 0 and *empty
// set where its weight is 0.
template <typename T>
__global__ void move_centers_kernel(const double* __restrict__ sums, int64_t k, int64_t d, const T* __restrict__ centers,
                                    T* __restrict__ next, double* __restrict__ moves, int* __restrict__ empty) {
  // A warp a center: the divisions in parallel over the features, the squared moves added by lane
  // 0 in feature order (move_center's order and roundings: the host's bits).
  const int lane = threadIdx.x % kWarp;
  const int64_t warps = grid_threads() / kWarp;
  for (int64_t c = global_thread() / kWarp; c < k; c += warps) {
    const double* s = sums + c * (d + 1);
    const double weight = s[d];
    if (!(weight > 0.0)) {
      if (lane == 0) {
        moves[c] = 0.0;
        *empty = 1;
      }
      continue;
    }
    double moved = 0.0;
    for (int64_t j0 = 0; j0 < d; j0 += kWarp) {
      const int64_t j = j0 + lane;
      double m = 0.0;
      if (j < d) {
        const T v = static_cast<T>(s[j] / weight);
        next[c * d + j] = v;
        m = static_cast<double>(v) - static_cast<double>(centers[c * d + j]);
      }
      for (int l = 0; l < kWarp && j0 + l < d; ++l) {
        const double ml = __shfl_sync(0xffffffffu, m, l);
        if (lane == 0) moved = add_square(moved, ml);
      }
    }
    if (lane == 0) moves[c] = moved;
  }
}

// One block: the step's report, CenterMoves' fields as doubles: changed (the sums' last entry),
// the moves summed in order (staged through shared memory a block at a time), empty.
__global__ void center_moves_report_kernel(const double* __restrict__ sums, int64_t k, int64_t d, const double* __restrict__ moves,
                                           const int* __restrict__ empty, double* __restrict__ report) {
  __shared__ double staged[kBlock];
  double shift = 0.0;
  for (int64_t c0 = 0; c0 < k; c0 += kBlock) {
    staged[threadIdx.x] = c0 + threadIdx.x < k ? moves[c0 + threadIdx.x] : 0.0;
    __syncthreads();
    if (threadIdx.x == 0)
      for (int i = 0; i < kBlock && c0 + i < k; ++i) shift += staged[i];
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    report[0] = sums[k * (d + 1)];
    report[1] = shift;
    report[2] = *empty ? 1.0 : 0.0;
  }
}

// sums[k (d + 1)] = the labels changed (lloyd_sums' last entry).
__global__ void store_changes_kernel(const unsigned long long* __restrict__ changes, double* __restrict__ out) {
  *out = changes ? static_cast<double>(*changes) : 0.0;
}

// k-means||'s draw (KMeansBackend::oversample): the rows drawn, appended in any order (the
// caller sorts them) to chosen[0, capacity); *count ends as the number drawn, which may exceed
// the capacity (the caller then draws again with room for all).
template <typename T>
__global__ void oversample_kernel(const T* __restrict__ weights, const T* __restrict__ closest, int64_t n, double oversampling,
                                  double phi, uint64_t key, uint64_t round, int64_t offset, int64_t* __restrict__ chosen,
                                  int64_t capacity, unsigned long long* __restrict__ count) {
  for (int64_t i = global_thread(); i < n; i += grid_threads()) {
    const double mass = oversampling * static_cast<double>(weights[i]) * static_cast<double>(closest[i]);
    if (mass > 0.0 && counter_uniform(key, round, static_cast<uint64_t>(offset + i)) * phi < mass) {
      const unsigned long long at = atomicAdd(count, 1ull);
      if (static_cast<int64_t>(at) < capacity) chosen[at] = i;
    }
  }
}

// counts[c] = the number of rows i with nearest[i] == c (exact: integer adds in any order). With
// m <= kSharedCounts, each block counts in shared memory first and adds its nonzero counts: 1M rows
// straight into 256 global counters took 0.18 ms, the atomics queueing on the same addresses.
constexpr int64_t kSharedCounts = 12288;  // 48 KiB of uint32
__global__ void count_nearest_kernel(const int32_t* __restrict__ nearest, int64_t n, int64_t m, unsigned long long* __restrict__ counts) {
  extern __shared__ unsigned block_counts[];
  if (m > kSharedCounts) {
    for (int64_t i = global_thread(); i < n; i += grid_threads()) atomicAdd(counts + nearest[i], 1ull);
    return;
  }
  for (int64_t c = threadIdx.x; c < m; c += blockDim.x) block_counts[c] = 0u;
  __syncthreads();
  for (int64_t i = global_thread(); i < n; i += grid_threads()) atomicAdd(block_counts + nearest[i], 1u);
  __syncthreads();
  for (int64_t c = threadIdx.x; c < m; c += blockDim.x)
    if (block_counts[c] != 0u) atomicAdd(counts + c, static_cast<unsigned long long>(block_counts[c]));
}

template <typename T>
__global__ void zero_at_kernel(T* __restrict__ values, const int64_t* __restrict__ idx, int64_t m) {
  for (int64_t e = global_thread(); e < m; e += grid_threads()) values[idx[e]] = T(0);
}

template <typename T>
__global__ void gather_rows_kernel(const T* __restrict__ X, int64_t d, const int64_t* __restrict__ idx, int64_t m, T* __restrict__ out) {
  for (int64_t t = global_thread(); t < m * d; t += grid_threads()) out[t] = X[idx[t / d] * d + t % d];
}

// ---- host side ---------------------------------------------------------------------------

// Grids for grid-stride kernels: at most kMaxBlocks blocks, so launches stay far below 2^31 - 1.
unsigned blocks_for_threads(int64_t threads) { return cuda::grid_for(threads, kBlock, kMaxBlocks); }
unsigned blocks_for_warps(int64_t warps) { return cuda::grid_for(warps, kWarpsPerBlock, kMaxBlocks); }

// Grid sizes of the deterministic reductions depend on n only (never on the device), so
// results are the same on every GPU.
constexpr int64_t kReduceBlocks = 1024;
constexpr int64_t kPotentialBlocks = 4096;
// Candidates per k-means++ potentials batch: per-warp (per-group) accumulators in shared memory,
// at most 8 x 256 doubles = 16 KiB.
constexpr int64_t kPotentialBatch = 256;
// Rows per accumulate / variance chunk: at least kMinChunkRows, and about kTargetChunks chunks.
constexpr int64_t kMinChunkRows = 512;
constexpr int64_t kTargetChunks = 4096;
// Elements per chunk of the k-means++ cumulative sum.
constexpr int64_t kCumsumChunk = 1024;
// G tiles are sized to about half the L2 and at most this many bytes.
constexpr std::size_t kMaxTileBytes = std::size_t(512) << 20;

// Rows per G tile: G (rows x ldg) should stay in L2 between the GEMM that writes it and the
// kernel that reads it (measured on an H100: half the L2 beats 2048 rows by 1.4x).
int64_t tile_rows_for(const cuda::Resources& res, int64_t n, int64_t ldg, std::size_t elem_bytes) {
  const int64_t row_bytes = ldg * static_cast<int64_t>(elem_bytes);
  int64_t rows = std::max<int64_t>(static_cast<int64_t>(res.l2_bytes / 2) / row_bytes, 1024);
  rows = std::min<int64_t>(rows, std::max<int64_t>(1, static_cast<int64_t>(kMaxTileBytes) / row_bytes));
  rows = std::min<int64_t>(rows, std::min<int64_t>(n, INT_MAX));
  return std::max<int64_t>(rows, 1);
}

template <typename T>
void launch_row_sqnorms(cuda::Resources& res, const T* rows_ptr, int64_t rows, int64_t d, int64_t padded, T* out) {
  row_sqnorms_kernel<T><<<blocks_for_warps(padded), kBlock, 0, res.stream>>>(rows_ptr, rows, d, padded, out);
  GPUML_CUDA_CHECK_LAUNCH();
}

// G (rows x k, row-major, leading dimension ldg) = X_rows (rows x d) * C^T, C k x d. In
// cuBLAS's column-major terms: G^T (k x rows) = C^T-as-stored (k x d) * X^T-as-stored (d x rows).
template <typename T>
void gemm_rows_by_centers(cuda::Resources& res, const T* X_rows, int64_t rows, int64_t d, const T* C, int64_t k, T* G,
                                 int64_t ldg) {
  const int m_ = checked_int(k, "n_clusters"), n_ = checked_int(rows, "tile rows"), k_ = checked_int(d, "n_features");
  const int ld_x = checked_int(d, "n_features"), ld_g = checked_int(ldg, "n_clusters");
  const T one = 1, zero = 0;
  cublasHandle_t handle = res.cublas();  // pedantic math mode: exact FP32/FP64, no TF32
  if constexpr (std::is_same_v<T, float>) {
    GPUML_CUBLAS_CHECK(cublasSgemm(handle, CUBLAS_OP_T, CUBLAS_OP_N, m_, n_, k_, &one, C, ld_x, X_rows, ld_x, &zero, G, ld_g));
  } else {
    GPUML_CUBLAS_CHECK(cublasDgemm(handle, CUBLAS_OP_T, CUBLAS_OP_N, m_, n_, k_, &one, C, ld_x, X_rows, ld_x, &zero, G, ld_g));
  }
}

// assign through cuBLAS: G = X_tile * C^T on row tiles sized to stay in L2, then the argmin
// kernel. `centers` is on the device; `changes` is a zeroed device counter.
template <typename T>
void assign_gemm(Context& ctx, cuda::Resources& res, const T* X, int64_t n, int64_t d, const T* centers, int64_t k, int32_t* labels,
                 T* dist2, bool count_changes, unsigned long long* changes) {
  const int64_t ldg = ceil_div(k, Vec16<T>::width) * Vec16<T>::width;
  Buffer center_sqnorms(ctx, ldg * sizeof(T));
  launch_row_sqnorms(res, centers, k, d, ldg, center_sqnorms.as<T>());
  const int64_t tile = tile_rows_for(res, n, ldg, sizeof(T));
  Buffer G(ctx, tile * ldg * sizeof(T));
  // Vector loads read the padding columns [k, ldg) too (their values are ignored): define them.
  if (ldg != k) GPUML_CUDA_CHECK(cudaMemsetAsync(G.data(), 0, G.bytes(), res.stream));
  for (int64_t row0 = 0; row0 < n; row0 += tile) {
    const int64_t rows = std::min(tile, n - row0);
    gemm_rows_by_centers(res, X + row0 * d, rows, d, centers, k, G.as<T>(), ldg);
    argmin_tile_kernel<T><<<blocks_for_warps(rows), kBlock, 0, res.stream>>>(G.as<T>(), ldg, center_sqnorms.as<T>(), k, X, d, row0, rows,
                                                                             labels, dist2, count_changes, changes);
    GPUML_CUDA_CHECK_LAUNCH();
  }
}

// float32 assign: the tensor-core kernel (kmeans_tf32.cu) then the FP32 kernel on the rows it
// hands back, unless GPUML_KMEANS_ASSIGN (read at every call) says otherwise: "fp32", the FP32
// kernel alone (for comparison: both give the same bits); "tf32-mma", the tensor-core kernel on
// mma.sync even where the warpgroup MMA one runs (for comparison); "tf32-unchecked", a test hook
// that skips the FP32 pass, so that the rows handed back keep their old labels.
enum class AssignPath { fp32, tf32, tf32_mma, tf32_unchecked };
AssignPath float_assign_path(int64_t d) {
  if (d > kTf32MaxFeatures) return AssignPath::fp32;
  const char* v = std::getenv("GPUML_KMEANS_ASSIGN");
  if (v == nullptr) return AssignPath::tf32;
  if (std::strcmp(v, "fp32") == 0) return AssignPath::fp32;
  if (std::strcmp(v, "tf32-mma") == 0) return AssignPath::tf32_mma;
  return std::strcmp(v, "tf32-unchecked") == 0 ? AssignPath::tf32_unchecked : AssignPath::tf32;
}

// assign for float32: the tensor-core kernel, then the FP32 fused kernel on the rows it hands
// back; or the fused kernel on every row. Both paths give the same labels and dist2, bit for bit.
// known_row_sqnorms: X's squared norms as launch_row_sqnorms gives them, or nullptr (computed here).
void assign_fused(Context& ctx, cuda::Resources& res, const float* X, int64_t n, int64_t d, const float* centers, int64_t k,
                  int32_t* labels, float* dist2, bool count_changes, unsigned long long* changes,
                  const float* known_row_sqnorms) {
  checked_int(k, "n_clusters");  // labels and the kernel's column indices are int
  if (n <= 0) return;            // (a rank without rows): nothing to assign, and no empty grid to launch
  Buffer center_sqnorms(ctx, k * sizeof(float));
  launch_row_sqnorms(res, centers, k, d, k, center_sqnorms.as<float>());
  Buffer computed_row_sqnorms;
  if (known_row_sqnorms == nullptr) {
    computed_row_sqnorms = Buffer(ctx, n * sizeof(float));
    launch_row_sqnorms(res, X, n, d, n, computed_row_sqnorms.as<float>());
  }
  const float* row_sqnorms = known_row_sqnorms ? known_row_sqnorms : computed_row_sqnorms.as<const float>();
  // Over 48 KiB of dynamic shared memory needs an opt-in (per device; cheap to repeat).
  GPUML_CUDA_CHECK(cudaFuncSetAttribute(fused_argmin_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        static_cast<int>(fused::kSharedBytes)));
  const AssignPath path = float_assign_path(d);
  if (path != AssignPath::fp32) {
    std::optional<Buffer> recheck_rows;
    try {
      recheck_rows.emplace(ctx, std::max<int64_t>(n, 1) * sizeof(int64_t));
    } catch (const Error& e) {
      if (e.code() != ErrorCode::out_of_memory) throw;  // no room for the list: the FP32 kernel alone
    }
    if (recheck_rows) {
      Buffer recheck_count(ctx, sizeof(unsigned long long));
      GPUML_CUDA_CHECK(cudaMemsetAsync(recheck_count.data(), 0, sizeof(unsigned long long), res.stream));
      assign_tf32(ctx, res, X, n, d, centers, k, center_sqnorms.as<float>(), row_sqnorms, labels, dist2, count_changes,
                  changes, recheck_rows->as<int64_t>(), recheck_count.as<unsigned long long>(), path != AssignPath::tf32_mma);
      // The handed-back rows, however many: a grid of resident blocks strides over the list.
      const unsigned blocks = static_cast<unsigned>(std::min<int64_t>(ceil_div(n, fused::kTileRows), 2 * int64_t(res.sm_count)));
      if (path != AssignPath::tf32_unchecked) {
        fused_argmin_kernel<<<blocks, fused::kThreads, fused::kSharedBytes, res.stream>>>(
            X, n, d, centers, k, center_sqnorms.as<float>(), row_sqnorms, labels, dist2, count_changes, changes,
            recheck_rows->as<int64_t>(), recheck_count.as<unsigned long long>());
        GPUML_CUDA_CHECK_LAUNCH();
      }
      if (Trace::enabled()) {
        unsigned long long rechecked = 0;
        res.copy_to_host(&rechecked, recheck_count.data(), sizeof(rechecked));
        std::fprintf(stderr, "gpuml trace: kmeans assign: TF32 (%s), %llu of %lld rows rechecked in FP32\n",
                     path != AssignPath::tf32_mma && tf32_wgmma_available(res) ? "wgmma" : "mma.sync", rechecked,
                     static_cast<long long>(n));
      }
      return;
    }
  }
  const unsigned blocks = static_cast<unsigned>(std::min(ceil_div(n, fused::kTileRows), kMaxBlocks));
  fused_argmin_kernel<<<blocks, fused::kThreads, fused::kSharedBytes, res.stream>>>(X, n, d, centers, k, center_sqnorms.as<float>(),
                                                                   row_sqnorms, labels, dist2, count_changes, changes,
                                                                   nullptr, nullptr);
  GPUML_CUDA_CHECK_LAUNCH();
}

template <typename T>
class CudaKMeansBackend final : public KMeansBackend<T> {
 public:
  explicit CudaKMeansBackend(const Context& ctx) : ctx_(ctx) {}
  CudaKMeansBackend(const CudaKMeansBackend&) = delete;
  CudaKMeansBackend& operator=(const CudaKMeansBackend&) = delete;

  void column_means(const T* X, int64_t n, int64_t d, double* means_host) override {
    cuda::Resources& res = cuda::activate(ctx_);
    Buffer means = device(d * sizeof(double));
    launch_column_means(res, X, n, d, means.as<double>());
    copy_to_host(res, means_host, means.data(), d * sizeof(double));
  }

  double center_columns(const T* X, int64_t n, int64_t d, const double* means_host, T* out) override {
    cuda::Resources& res = cuda::activate(ctx_);
    if (n <= 0 || d <= 0) return 0.0;
    const int64_t chunk_rows = chunk_rows_for(n);
    const int64_t n_chunks = ceil_div(n, chunk_rows);
    Buffer means = to_device(res, means_host, d);
    Buffer partials = device(n_chunks * d * sizeof(double));
    Buffer variances = device(d * sizeof(double));
    launch_chunk_sums(res, X, d, nullptr, nullptr, means.as<double>(), nullptr, nullptr, chunk_rows, n, n_chunks, false,
                      partials.as<double>(), out);
    reduce_chunk_groups_kernel<<<blocks_for_threads(d), kBlock, 0, res.stream>>>(partials.as<double>(), d, nullptr, 1, n_chunks,
                                                                                 static_cast<double>(n), variances.as<double>());
    GPUML_CUDA_CHECK_LAUNCH();
    std::vector<double> host(d);
    copy_to_host(res, host.data(), variances.data(), d * sizeof(double));
    double total = 0.0;
    for (double v : host) total += v;
    return total / static_cast<double>(d);
  }

  double oversampling_potential(const T* weights, const T* closest, int64_t n) override {
    cuda::Resources& res = cuda::activate(ctx_);
    const int64_t n_chunks = ceil_div(n, kOversampleChunk);
    if (n_chunks == 0) return 0.0;
    Buffer totals = device(n_chunks * sizeof(double));
    chunk_totals_kernel<T><<<static_cast<unsigned>(std::min(n_chunks, kMaxBlocks)), kBlock, 0, res.stream>>>(
        weights, closest, n, kOversampleChunk, n_chunks, 1, totals.as<double>());
    GPUML_CUDA_CHECK_LAUNCH();
    std::vector<double> host(n_chunks);
    copy_to_host(res, host.data(), totals.data(), n_chunks * sizeof(double));
    double phi = 0.0;
    for (double v : host) phi += v;  // the chunks in order
    return phi;
  }

  std::vector<int64_t> oversample(const T* weights, const T* closest, int64_t n, double oversampling, double phi,
                                  uint64_t key, uint64_t round, int64_t offset) override {
    cuda::Resources& res = cuda::activate(ctx_);
    if (n <= 0) return {};
    // The rows drawn number oversampling in expectation (the masses sum to φ oversampling): room
    // for twice that, and a second pass in the rare case of more.
    int64_t capacity = std::min<int64_t>(n, 2 * static_cast<int64_t>(oversampling) + 1024);
    Buffer count = device(sizeof(unsigned long long));
    for (;;) {
      Buffer chosen = device(capacity * sizeof(int64_t));
      GPUML_CUDA_CHECK(cudaMemsetAsync(count.data(), 0, sizeof(unsigned long long), res.stream));
      oversample_kernel<T><<<blocks_for_threads(n), kBlock, 0, res.stream>>>(weights, closest, n, oversampling, phi, key, round,
                                                                             offset, chosen.as<int64_t>(), capacity,
                                                                             count.as<unsigned long long>());
      GPUML_CUDA_CHECK_LAUNCH();
      unsigned long long drawn = 0;
      copy_to_host(res, &drawn, count.data(), sizeof(drawn));
      if (static_cast<int64_t>(drawn) > capacity) {
        capacity = static_cast<int64_t>(drawn);
        continue;
      }
      std::vector<int64_t> rows(drawn);
      copy_to_host(res, rows.data(), chosen.data(), drawn * sizeof(int64_t));
      std::sort(rows.begin(), rows.end());  // row order
      return rows;
    }
  }

  void nearest_weights(const T* weights, const int32_t* nearest, int64_t n, int64_t m, double* totals_host) override {
    cuda::Resources& res = cuda::activate(ctx_);
    std::fill(totals_host, totals_host + m, 0.0);
    if (n <= 0 || m <= 0) return;
    if (weights == nullptr) {  // counts: integer atomics give the bits of the CPU's ordered sum of ones
      Buffer counts = device(m * sizeof(unsigned long long));
      GPUML_CUDA_CHECK(cudaMemsetAsync(counts.data(), 0, m * sizeof(unsigned long long), res.stream));
      // Few blocks with shared counts: each adds its m counts to the global ones once.
      const bool shared = m <= kSharedCounts;
      const unsigned blocks = shared ? static_cast<unsigned>(std::max<int64_t>(1, std::min<int64_t>(blocks_for_threads(n), 2 * int64_t(res.sm_count))))
                                     : blocks_for_threads(n);
      count_nearest_kernel<<<blocks, kBlock, shared ? m * sizeof(unsigned) : 0, res.stream>>>(nearest, n, m,
                                                                                             counts.as<unsigned long long>());
      GPUML_CUDA_CHECK_LAUNCH();
      std::vector<unsigned long long> host(m);
      copy_to_host(res, host.data(), counts.data(), m * sizeof(unsigned long long));
      for (int64_t c = 0; c < m; ++c) totals_host[c] = static_cast<double>(host[c]);
      return;
    }
    // Weighted: added in row order on the host, as the CPU backend adds them.
    std::vector<int32_t> host_nearest(n);
    std::vector<T> host_weights(n);
    copy_to_host(res, host_nearest.data(), nearest, n * sizeof(int32_t));
    copy_to_host(res, host_weights.data(), weights, n * sizeof(T));
    for (int64_t i = 0; i < n; ++i) totals_host[host_nearest[i]] += static_cast<double>(host_weights[i]);
  }

  void merge_nearest(const int32_t* labels, const T* dist2, int64_t n, int64_t first, T* closest, int32_t* nearest,
                     const int64_t* zero_rows_host, int64_t m_zero) override {
    cuda::Resources& res = cuda::activate(ctx_);
    if (n > 0) {
      merge_nearest_kernel<T><<<blocks_for_threads(n), kBlock, 0, res.stream>>>(labels, dist2, n, first, closest, nearest);
      GPUML_CUDA_CHECK_LAUNCH();
    }
    if (m_zero > 0) {
      Buffer idx = to_device(res, zero_rows_host, m_zero);
      zero_at_kernel<T><<<blocks_for_threads(m_zero), kBlock, 0, res.stream>>>(closest, idx.as<int64_t>(), m_zero);
      GPUML_CUDA_CHECK_LAUNCH();
    }
  }

  void keep_rows(const T* X, int64_t n, int64_t d) override {
    kept_X_ = X;
    kept_n_ = n;
    kept_d_ = d;
    kept_sqnorms_ = Buffer();
    if constexpr (std::is_same_v<T, float>) {  // the float assign's row norms (the float64 GEMM path takes none)
      if (n <= 0 || d <= 0) return;
      cuda::Resources& res = cuda::activate(ctx_);
      kept_sqnorms_ = device(n * sizeof(float));
      launch_row_sqnorms(res, X, n, d, n, kept_sqnorms_.as<float>());
    }
  }

  int64_t assign(const T* X, int64_t n, int64_t d, const T* centers_host, int64_t k, int32_t* labels, T* dist2,
                 bool count_changes) override {
    cuda::Resources& res = cuda::activate(ctx_);
    Buffer centers = to_device(res, centers_host, k * d);
    Buffer changes = device(sizeof(unsigned long long));
    GPUML_CUDA_CHECK(cudaMemsetAsync(changes.data(), 0, sizeof(unsigned long long), res.stream));
    launch_assign(res, X, n, d, centers.as<T>(), k, labels, dist2, count_changes, changes.as<unsigned long long>());
    if (!count_changes) return 0;
    unsigned long long host_changes = 0;
    copy_to_host(res, &host_changes, changes.data(), sizeof(host_changes));
    return static_cast<int64_t>(host_changes);
  }

  void refine_distances(const T* X, int64_t n, int64_t d, const T* centers_host, int64_t k, const int32_t* labels,
                        T* dist2) override {
    if (n == 0) return;
    cuda::Resources& res = cuda::activate(ctx_);
    Buffer centers = to_device(res, centers_host, k * d);
    labeled_distances_kernel<T><<<blocks_for_warps(n), kBlock, 0, res.stream>>>(X, n, d, centers.as<T>(), labels, dist2);
    GPUML_CUDA_CHECK_LAUNCH();
  }

  void lloyd_sums(const T* X, const T* weights, int64_t n, int64_t d, const T* centers, int64_t k, int32_t* labels, T* dist2,
                  bool count_changes, double* sums) override {
    cuda::Resources& res = cuda::activate(ctx_);
    Buffer changes = device(sizeof(unsigned long long));
    GPUML_CUDA_CHECK(cudaMemsetAsync(changes.data(), 0, sizeof(unsigned long long), res.stream));
    launch_assign(res, X, n, d, centers, k, labels, dist2, count_changes, changes.as<unsigned long long>());
    launch_cluster_sums(res, X, weights, labels, n, d, k, sums);
    store_changes_kernel<<<1, 1, 0, res.stream>>>(count_changes ? changes.as<unsigned long long>() : nullptr, sums + k * (d + 1));
    GPUML_CUDA_CHECK_LAUNCH();
  }

  // The report goes to the context's pinned mailbox (the shared pinned area may be used by the
  // work queued before finish), and its event marks it filled.
  void start_move_centers(const double* sums, int64_t k, int64_t d, const T* centers, T* next) override {
    cuda::Resources& res = cuda::activate(ctx_);
    const cuda::Resources::Mailbox mailbox = res.mailbox();
    Buffer moves = device(k * sizeof(double)), empty = device(sizeof(int)), report = device(3 * sizeof(double));
    GPUML_CUDA_CHECK(cudaMemsetAsync(empty.data(), 0, sizeof(int), res.stream));
    move_centers_kernel<T><<<blocks_for_warps(k), kBlock, 0, res.stream>>>(sums, k, d, centers, next, moves.as<double>(),
                                                                           empty.as<int>());
    GPUML_CUDA_CHECK_LAUNCH();
    center_moves_report_kernel<<<1, kBlock, 0, res.stream>>>(sums, k, d, moves.as<double>(), empty.as<int>(), report.as<double>());
    GPUML_CUDA_CHECK_LAUNCH();
    GPUML_CUDA_CHECK(cudaMemcpyAsync(mailbox.values, report.data(), 3 * sizeof(double), cudaMemcpyDeviceToHost, res.stream));
    GPUML_CUDA_CHECK(cudaEventRecord(mailbox.filled, res.stream));
  }

  CenterMoves finish_move_centers() override {
    const cuda::Resources::Mailbox mailbox = cuda::activate(ctx_).mailbox();
    GPUML_CUDA_CHECK(cudaEventSynchronize(mailbox.filled));
    CenterMoves out;
    out.changed = mailbox.values[0];
    out.shift = mailbox.values[1];
    out.empty = mailbox.values[2] != 0.0;
    return out;
  }

  double weighted_sum(const T* weights, const T* values, int64_t n) override {
    cuda::Resources& res = cuda::activate(ctx_);
    const int64_t blocks = std::min(kReduceBlocks, std::max<int64_t>(1, ceil_div(n, kBlock)));
    Buffer partials = device(blocks * sizeof(double));
    Buffer total = device(sizeof(double));
    weighted_sum_partials_kernel<T><<<static_cast<unsigned>(blocks), kBlock, 0, res.stream>>>(weights, values, n,
                                                                                             partials.as<double>());
    GPUML_CUDA_CHECK_LAUNCH();
    reduce_chunk_groups_kernel<<<1, kBlock, 0, res.stream>>>(partials.as<double>(), 1, nullptr, 1, blocks, 1.0, total.as<double>());
    GPUML_CUDA_CHECK_LAUNCH();
    double host = 0.0;
    copy_to_host(res, &host, total.data(), sizeof(double));
    return host;
  }

  void largest(const T* dist2, int64_t n, int64_t m, int64_t* idx_host) override {
    cuda::Resources& res = cuda::activate(ctx_);
    m = std::min(m, n);
    if (m <= 0) return;
    // A stable descending radix sort of (dist2, index): ties keep ascending indices.
    Buffer keys = device(n * sizeof(T));
    Buffer order_in = device(n * sizeof(int64_t));
    Buffer order = device(n * sizeof(int64_t));
    iota_kernel<<<blocks_for_threads(n), kBlock, 0, res.stream>>>(order_in.as<int64_t>(), n);
    GPUML_CUDA_CHECK_LAUNCH();
    std::size_t temp_bytes = 0;
    GPUML_CUDA_CHECK(cub::DeviceRadixSort::SortPairsDescending(nullptr, temp_bytes, dist2, keys.as<T>(), order_in.as<int64_t>(),
                                                               order.as<int64_t>(), n, 0, int(sizeof(T) * 8), res.stream));
    Buffer temp = device(temp_bytes);
    GPUML_CUDA_CHECK(cub::DeviceRadixSort::SortPairsDescending(temp.data(), temp_bytes, dist2, keys.as<T>(), order_in.as<int64_t>(),
                                                               order.as<int64_t>(), n, 0, int(sizeof(T) * 8), res.stream));
    copy_to_host(res, idx_host, order.data(), m * sizeof(int64_t));
  }

  void gather_rows(const T* X, int64_t n, int64_t d, const int64_t* idx_host, int64_t m, T* out_host) override {
    cuda::Resources& res = cuda::activate(ctx_);
    if (m <= 0 || d <= 0) return;
    for (int64_t r = 0; r < m; ++r)
      if (idx_host[r] < 0 || idx_host[r] >= n)
        throw_error(ErrorCode::internal, "KMeans gather_rows: row index " + std::to_string(idx_host[r]) + " outside [0, " +
                                             std::to_string(n) + ")");
    Buffer idx = to_device(res, idx_host, m);
    Buffer out = device(m * d * sizeof(T));
    gather_rows_kernel<T><<<blocks_for_threads(m * d), kBlock, 0, res.stream>>>(X, d, idx.as<int64_t>(), m, out.as<T>());
    GPUML_CUDA_CHECK_LAUNCH();
    copy_to_host(res, out_host, out.data(), m * d * sizeof(T));
  }

  void search_cumsum(const T* weights, const T* values, int64_t n, const double* thresholds_host, int64_t m,
                     int64_t* idx_host) override {
    cuda::Resources& res = cuda::activate(ctx_);
    if (m <= 0) return;
    // Chunk totals on the device, their prefix sums and the chunk of each threshold on the
    // host, then a sequential scan inside that chunk on the device.
    const int64_t n_chunks = ceil_div(n, kCumsumChunk);
    Buffer totals = device(n_chunks * sizeof(double));
    chunk_totals_kernel<T><<<static_cast<unsigned>(std::min(n_chunks, kMaxBlocks)), kBlock, 0, res.stream>>>(
        weights, values, n, kCumsumChunk, n_chunks, 1, totals.as<double>());
    GPUML_CUDA_CHECK_LAUNCH();
    std::vector<double> prefix(n_chunks + 1, 0.0);
    copy_to_host(res, prefix.data() + 1, totals.data(), n_chunks * sizeof(double));
    for (int64_t c = 0; c < n_chunks; ++c) prefix[c + 1] += prefix[c];

    std::vector<int64_t> starts, query_of;
    std::vector<double> bases, thresholds;
    for (int64_t q = 0; q < m; ++q) {
      const double t = thresholds_host[q];
      // First chunk whose end prefix exceeds t.
      const auto it = std::upper_bound(prefix.begin() + 1, prefix.end(), t);
      if (it == prefix.end()) {
        idx_host[q] = n - 1;  // t >= the total: clipped
        continue;
      }
      const int64_t chunk = static_cast<int64_t>(it - prefix.begin()) - 1;
      starts.push_back(chunk * kCumsumChunk);
      bases.push_back(prefix[chunk]);
      thresholds.push_back(t);
      query_of.push_back(q);
    }
    const int64_t n_queries = static_cast<int64_t>(starts.size());
    if (n_queries == 0) return;
    Buffer d_starts = to_device(res, starts.data(), n_queries);
    Buffer d_bases = to_device(res, bases.data(), n_queries);
    Buffer d_thresholds = to_device(res, thresholds.data(), n_queries);
    Buffer d_found = device(n_queries * sizeof(int64_t));
    scan_search_kernel<T><<<blocks_for_threads(n_queries), kBlock, 0, res.stream>>>(
        weights, values, n, d_starts.as<int64_t>(), d_bases.as<double>(), d_thresholds.as<double>(), n_queries, d_found.as<int64_t>());
    GPUML_CUDA_CHECK_LAUNCH();
    std::vector<int64_t> found(n_queries);
    copy_to_host(res, found.data(), d_found.data(), n_queries * sizeof(int64_t));
    for (int64_t i = 0; i < n_queries; ++i) idx_host[query_of[i]] = found[i];
  }

  // The rows are all read (known is not used): the driver's loop runs on the GPU only over
  // several processes, where plusplus_steps does not.
  void candidate_potentials(const T* X, const T* weights, const T* closest, const NearestCenters<T>& /*known*/, int64_t n,
                            int64_t d, const T* candidates_host, int64_t m, double* potentials_host) override {
    cuda::Resources& res = cuda::activate(ctx_);
    if (m <= 0) return;
    Buffer candidates = to_device(res, candidates_host, m * d);
    potentials_in_batches(res, n, m, kWarpsPerBlock, potentials_host, [&](unsigned blocks, std::size_t shared_bytes, int64_t q0, int64_t mb,
                                                                          double* partials) {
      candidate_potentials_kernel<T><<<blocks, kBlock, shared_bytes, res.stream>>>(X, weights, closest, n, d, candidates.as<T>() + q0 * d,
                                                                                   mb, partials);
    });
  }

  void update_closest(const T* X, int64_t n, int64_t d, const T* center_host, T* closest, const NearestCenters<T>& known,
                      bool reset) override {
    cuda::Resources& res = cuda::activate(ctx_);
    Buffer center = to_device(res, center_host, d);
    update_closest_kernel<T><<<blocks_for_warps(n), kBlock, 0, res.stream>>>(
        X, n, d, center.as<T>(), closest, known.nearest, static_cast<int32_t>(reset ? 0 : known.centers), reset);
    GPUML_CUDA_CHECK_LAUNCH();
  }

  bool plusplus_steps(const T* X, const T* weights, int64_t n, int64_t d, T* closest, int32_t* nearest, double potential,
                      const double* uniforms_host, int64_t trials, int64_t from, int64_t k, T* centers_host) override {
    constexpr std::size_t kMaxSharedBytes = 48 << 10;  // without opting in to more
    // Rows held in registers where they fit (16-byte vectors: X aligned, d a multiple of the width),
    // the candidates then padded to the vectors the kernel takes (plusplus_potentials_kernel).
    constexpr int W = Vec16<T>::width;
    const bool vectors = reinterpret_cast<std::uintptr_t>(X) % 16 == 0 && d % W == 0;
    const int64_t padded_d = vectors && d <= 4 * kPlusLanes * W ? 4 * kPlusLanes * W
                             : vectors && d <= 16 * kPlusLanes * W ? 16 * kPlusLanes * W
                                                                   : d;
    auto potentials = padded_d == 4 * kPlusLanes * W    ? plusplus_potentials_kernel<T, 4>
                      : padded_d == 16 * kPlusLanes * W ? plusplus_potentials_kernel<T, 16>
                                                        : plusplus_potentials_kernel<T, 0>;
    const std::size_t shared_bytes = static_cast<std::size_t>(kBlock / kPlusLanes * trials) * sizeof(double) +
                                     static_cast<std::size_t>(trials * padded_d) * sizeof(T);
    if (trials < 1 || trials > kMaxTrials || shared_bytes > kMaxSharedBytes || n <= 0 || d <= 0) return false;
    const int64_t steps = k - from;
    if (steps <= 0) return true;
    cuda::Resources& res = cuda::activate(ctx_);
    // Each candidate's column of min'd distances (trials x n): where the device cannot hold it,
    // the driver's loop (no such buffer) runs instead.
    Buffer cand;
    try {
      cand = device(static_cast<std::size_t>(trials * n) * sizeof(T));
    } catch (const Error& e) {
      if (e.code() != ErrorCode::out_of_memory) throw;
      return false;
    }
    const int m = static_cast<int>(trials);
    const int64_t n_chunks = ceil_div(n, kPlusChunkRows);
    Buffer uniforms = to_device(res, uniforms_host, steps * trials);
    Buffer state = to_device(res, &potential, 1);  // the potential of the centers so far
    Buffer best = device(sizeof(int32_t));         // the step's chosen candidate (0 before the first)
    GPUML_CUDA_CHECK(cudaMemsetAsync(best.data(), 0, sizeof(int32_t), res.stream));
    Buffer idx = device(trials * sizeof(int64_t));
    Buffer partials = device(n_chunks * trials * sizeof(double));
    Buffer segments = device(ceil_div(n_chunks, kPlusSegment) * sizeof(double));
    // Every center (those given, then each step's); with nearest, their gaps to the step's
    // candidates and judge's lists of rows to read.
    Buffer centers = device(k * d * sizeof(T));
    if (from > 0) res.copy_to_device(centers.data(), centers_host, from * d * sizeof(T));
    Buffer gaps, lists, listed_closest, listed_w, counts, unread;
    if (nearest) {
      gaps = device(k * sizeof(T));  // each center's least gap
      lists = device(n * sizeof(int32_t));
      listed_closest = device(n * sizeof(T));
      if (weights) listed_w = device(n * sizeof(T));
      counts = device(n_chunks * sizeof(int32_t));
      unread = device(n_chunks * sizeof(double));
    }
    const PlusPlusBound<T> bound(d);
    const unsigned chunk_blocks = static_cast<unsigned>(std::min(n_chunks, kMaxBlocks));
    // The pass's partial sums are per chunk of rows, so its grid may fill this device.
    int per_sm = 0, sms = 0, device_id = 0;
    GPUML_CUDA_CHECK(cudaGetDevice(&device_id));
    GPUML_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device_id));
    GPUML_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, potentials, kBlock, shared_bytes));
    const unsigned blocks = static_cast<unsigned>(std::min<int64_t>(n_chunks, std::max(1, per_sm) * int64_t(sms)));
    // The first step's chunk totals, where the steps then find the chosen candidate's partials.
    chunk_totals_kernel<T><<<chunk_blocks, kBlock, 0, res.stream>>>(weights, closest, n, kPlusChunkRows, n_chunks, m,
                                                                     partials.as<double>());
    auto apply = [&](int32_t index) {
      plusplus_apply_kernel<T><<<chunk_blocks, kBlock, 0, res.stream>>>(cand.as<T>(), best.as<int32_t>(), n, n_chunks,
                                                                        lists.as<int32_t>(), counts.as<int32_t>(), closest,
                                                                        nearest, index);
    };
    for (int64_t step = 0; step < steps; ++step) {
      const int64_t chosen = from + step;  // the number of centers chosen before this step
      if (step > 0) apply(static_cast<int32_t>(chosen - 1));
      plusplus_draw_kernel<T><<<1, kWarp * std::max(m, 8), 0, res.stream>>>(
          weights, closest, n, partials.as<double>(), m, best.as<int32_t>(), n_chunks, segments.as<double>(),
          uniforms.as<double>() + step * trials, state.as<double>(), m, idx.as<int64_t>());
      if (nearest) {
        plusplus_gaps_kernel<T><<<blocks_for_warps(chosen), kBlock, 0, res.stream>>>(centers.as<T>(), chosen, d, X,
                                                                                      idx.as<int64_t>(), m, gaps.as<T>());
        plusplus_judge_kernel<T><<<chunk_blocks, kBlock, 0, res.stream>>>(
            weights, closest, nearest, gaps.as<T>(), bound, n, n_chunks, lists.as<int32_t>(), listed_closest.as<T>(),
            listed_w.as<T>(), counts.as<int32_t>(), unread.as<double>());
      }
      potentials<<<blocks, kBlock, shared_bytes, res.stream>>>(
          X, weights, closest, n, d, lists.as<int32_t>(), listed_closest.as<T>(), listed_w.as<T>(), counts.as<int32_t>(),
          unread.as<double>(), idx.as<int64_t>(), m, cand.as<T>(), partials.as<double>());
      plusplus_choose_kernel<T><<<1, kWarp * m, 0, res.stream>>>(partials.as<double>(), n_chunks, m, idx.as<int64_t>(), X, d,
                                                                 centers.as<T>() + chosen * d, best.as<int32_t>(),
                                                                 state.as<double>());
      GPUML_CUDA_CHECK_LAUNCH();
    }
    apply(static_cast<int32_t>(k - 1));  // closest (and nearest) as the last step leaves them
    GPUML_CUDA_CHECK_LAUNCH();
    copy_to_host(res, centers_host + from * d, centers.as<T>() + from * d, steps * d * sizeof(T));
    return true;
  }

  void distances(const T* X, int64_t n, int64_t d, const T* centers_host, int64_t k, T* out) override {
    cuda::Resources& res = cuda::activate(ctx_);
    Buffer centers = to_device(res, centers_host, k * d);
    Buffer center_sqnorms = device(k * sizeof(T));
    launch_row_sqnorms(res, centers.as<T>(), k, d, k, center_sqnorms.as<T>());
    // GEMM straight into the output, a tile at a time so that the epilogue re-reads it from L2.
    const int64_t tile = tile_rows_for(res, n, k, sizeof(T));
    for (int64_t row0 = 0; row0 < n; row0 += tile) {
      const int64_t rows = std::min(tile, n - row0);
      T* G = out + row0 * k;
      gemm_rows_by_centers(res, X + row0 * d, rows, d, centers.as<T>(), k, G, k);
      distances_tile_kernel<T><<<blocks_for_warps(rows), kBlock, 0, res.stream>>>(G, k, center_sqnorms.as<T>(), X, d, row0, rows);
      GPUML_CUDA_CHECK_LAUNCH();
    }
    GPUML_CUDA_CHECK(cudaStreamSynchronize(res.stream));
  }

  // X known through its products with the centers (sparse X: the products come from the sparse
  // matrix, in device memory).
  int64_t assign_from_products(const T* products, const T* row_norms, int64_t n, const T* center_norms_host, int64_t k,
                               int32_t* labels, T* dist2, bool count_changes) override {
    cuda::Resources& res = cuda::activate(ctx_);
    if (n <= 0 || k <= 0) return 0;
    checked_int(k, "n_clusters");  // labels and the kernel's column indices are int
    Buffer center_norms = to_device(res, center_norms_host, k);
    Buffer changes = device(sizeof(unsigned long long));
    GPUML_CUDA_CHECK(cudaMemsetAsync(changes.data(), 0, sizeof(unsigned long long), res.stream));
    const int lanes = lanes_for(k);
    assign_from_products_kernel<T><<<blocks_for_warps(ceil_div(n, kWarp / lanes)), kBlock, 0, res.stream>>>(
        products, row_norms, n, center_norms.as<T>(), k, lanes, labels, dist2, count_changes, changes.as<unsigned long long>());
    GPUML_CUDA_CHECK_LAUNCH();
    if (!count_changes) return 0;  // as assign: the buffers are freed in stream order
    unsigned long long host_changes = 0;
    copy_to_host(res, &host_changes, changes.data(), sizeof(host_changes));
    return static_cast<int64_t>(host_changes);
  }

  void candidate_potentials_from_products(const T* products, const T* row_norms, const T* weights, const T* closest, int64_t n,
                                          const T* candidate_norms_host, int64_t m, double* potentials_host) override {
    cuda::Resources& res = cuda::activate(ctx_);
    if (m <= 0) return;
    Buffer candidate_norms = to_device(res, candidate_norms_host, m);
    const int lanes = lanes_for(std::min(m, kPotentialBatch));  // the same for every batch: one grid
    potentials_in_batches(res, n, m, kBlock / lanes, potentials_host, [&](unsigned blocks, std::size_t shared_bytes, int64_t q0,
                                                                          int64_t mb, double* partials) {
      candidate_potentials_from_products_kernel<T><<<blocks, kBlock, shared_bytes, res.stream>>>(
          products + q0, m, row_norms, weights, closest, n, candidate_norms.as<T>() + q0, mb, lanes, partials);
    });
  }

  void update_closest_from_products(const T* products, const T* row_norms, int64_t n, T center_norm, T* closest,
                                    bool reset) override {
    cuda::Resources& res = cuda::activate(ctx_);
    if (n <= 0) return;
    update_closest_from_products_kernel<T><<<blocks_for_threads(n), kBlock, 0, res.stream>>>(products, row_norms, n, center_norm,
                                                                                            closest, reset);
    GPUML_CUDA_CHECK_LAUNCH();
  }

  void distances_from_products(T* products, const T* row_norms, int64_t n, const T* center_norms_host, int64_t k) override {
    cuda::Resources& res = cuda::activate(ctx_);
    if (n <= 0 || k <= 0) return;
    Buffer center_norms = to_device(res, center_norms_host, k);
    distances_from_products_kernel<T><<<blocks_for_threads(n * k), kBlock, 0, res.stream>>>(products, row_norms, n,
                                                                                           center_norms.as<T>(), k);
    GPUML_CUDA_CHECK_LAUNCH();
    GPUML_CUDA_CHECK(cudaStreamSynchronize(res.stream));  // as distances
  }

 private:
  // k-means++ potentials of m candidates into potentials_host, in batches of kPotentialBatch
  // candidates (the kernels' per-block accumulators, groups_per_block x batch doubles, live in
  // shared memory). launch(blocks, shared_bytes, q0, mb, partials) runs the kernel for candidates
  // [q0, q0 + mb) with rows spread over groups_per_block groups per block; it writes
  // partials[block * mb + q], added here in block order. The grid depends on n and the group
  // size only: deterministic.
  template <typename Launch>
  void potentials_in_batches(cuda::Resources& res, int64_t n, int64_t m, int64_t groups_per_block, double* potentials_host,
                             Launch&& launch) {
    const int64_t blocks = std::min(kPotentialBlocks, std::max<int64_t>(1, ceil_div(n, groups_per_block)));
    Buffer partials = device(blocks * std::min(m, kPotentialBatch) * sizeof(double));
    Buffer potentials = device(m * sizeof(double));
    for (int64_t q0 = 0; q0 < m; q0 += kPotentialBatch) {
      const int64_t mb = std::min(kPotentialBatch, m - q0);
      launch(static_cast<unsigned>(blocks), static_cast<std::size_t>(groups_per_block * mb) * sizeof(double), q0, mb,
             partials.as<double>());
      GPUML_CUDA_CHECK_LAUNCH();
      reduce_chunk_groups_kernel<<<blocks_for_threads(mb), kBlock, 0, res.stream>>>(partials.as<double>(), mb, nullptr, 1, blocks, 1.0,
                                                                                    potentials.as<double>() + q0);
      GPUML_CUDA_CHECK_LAUNCH();
    }
    copy_to_host(res, potentials_host, potentials.data(), m * sizeof(double));
  }

  // assign's kernels, the centers on the device, the labels changed added to *changes; no wait.
  // float32: TF32 tensor cores with the FP32 fused kernel's exact answers (assign_fused; no
  // distance matrix). float64: cuBLAS DGEMM (FP64 tensor cores are exact IEEE FMA) on L2-sized
  // tiles + the argmin kernel.
  void launch_assign(cuda::Resources& res, const T* X, int64_t n, int64_t d, const T* centers, int64_t k, int32_t* labels,
                     T* dist2, bool count_changes, unsigned long long* changes) {
    if constexpr (std::is_same_v<T, float>) {
      const bool kept = X == kept_X_ && n == kept_n_ && d == kept_d_ && kept_sqnorms_.data() != nullptr;
      assign_fused(ctx_, res, X, n, d, centers, k, labels, dist2, count_changes, changes,
                   kept ? kept_sqnorms_.as<const float>() : nullptr);
    } else {
      assign_gemm(ctx_, res, X, n, d, centers, k, labels, dist2, count_changes, changes);
    }
  }

  // Per-cluster weighted sums of rows and weights into sums (k x (d + 1) doubles: each cluster's
  // d sums, then its weight), in a fixed order: the rows sorted by label (stable), each cluster's
  // rows cut into chunks of chunk_rows_for(n), the chunks summed, then each cluster's chunks in
  // order. Planned on the device: no wait.
  void launch_cluster_sums(cuda::Resources& res, const T* X, const T* weights, const int32_t* labels, int64_t n, int64_t d,
                           int64_t k, double* sums) {
    const int64_t ncols = d + 1;
    if (n <= 0) {
      GPUML_CUDA_CHECK(cudaMemsetAsync(sums, 0, k * ncols * sizeof(double), res.stream));
      return;
    }
    // 1. Row indices sorted by label (stable: ascending indices within a cluster).
    Buffer sorted_labels = device(n * sizeof(int32_t));
    Buffer order_in = device(n * sizeof(int64_t));
    Buffer order = device(n * sizeof(int64_t));
    iota_kernel<<<blocks_for_threads(n), kBlock, 0, res.stream>>>(order_in.as<int64_t>(), n);
    GPUML_CUDA_CHECK_LAUNCH();
    int key_bits = 1;
    while (key_bits < 31 && (int64_t(1) << key_bits) < k) ++key_bits;  // labels are in [0, k)
    std::size_t temp_bytes = 0;
    GPUML_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, temp_bytes, labels, sorted_labels.as<int32_t>(), order_in.as<int64_t>(),
                                                     order.as<int64_t>(), n, 0, key_bits, res.stream));
    Buffer temp = device(temp_bytes);
    GPUML_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(temp.data(), temp_bytes, labels, sorted_labels.as<int32_t>(),
                                                     order_in.as<int64_t>(), order.as<int64_t>(), n, 0, key_bits, res.stream));

    // 2. Where each cluster's rows start, its chunks, and their bounds.
    Buffer offsets = device((k + 1) * sizeof(int64_t));
    segment_offsets_kernel<<<blocks_for_threads(k + 1), kBlock, 0, res.stream>>>(sorted_labels.as<int32_t>(), n, k,
                                                                                  offsets.as<int64_t>());
    GPUML_CUDA_CHECK_LAUNCH();
    const int64_t chunk_rows = chunk_rows_for(n);
    Buffer counts = device((k + 1) * sizeof(int64_t)), group_start = device((k + 1) * sizeof(int64_t));
    chunk_counts_kernel<<<blocks_for_threads(k + 1), kBlock, 0, res.stream>>>(offsets.as<int64_t>(), k, chunk_rows,
                                                                              counts.as<int64_t>());
    GPUML_CUDA_CHECK_LAUNCH();
    std::size_t scan_bytes = 0;
    GPUML_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(nullptr, scan_bytes, counts.as<int64_t>(), group_start.as<int64_t>(), k + 1,
                                                   res.stream));
    Buffer scan_temp = device(scan_bytes);
    GPUML_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(scan_temp.data(), scan_bytes, counts.as<int64_t>(), group_start.as<int64_t>(),
                                                   k + 1, res.stream));
    const int64_t max_chunks = ceil_div(n, chunk_rows) + k;  // each cluster adds at most one partial chunk
    Buffer bounds = device(2 * max_chunks * sizeof(int64_t));
    chunk_bounds_kernel<<<blocks_for_threads(k), kBlock, 0, res.stream>>>(offsets.as<int64_t>(), group_start.as<int64_t>(), k,
                                                                          chunk_rows, bounds.as<int64_t>(),
                                                                          bounds.as<int64_t>() + max_chunks);
    GPUML_CUDA_CHECK_LAUNCH();

    // 3. Chunk sums in fixed order, then each cluster's chunks in order.
    Buffer partials = device(max_chunks * ncols * sizeof(double));
    if (!launch_row_sums4(res, X, d, order.as<int64_t>(), weights, bounds.as<int64_t>(), bounds.as<int64_t>() + max_chunks,
                          max_chunks, group_start.as<int64_t>() + k, partials.as<double>()))
      launch_chunk_sums(res, X, d, order.as<int64_t>(), weights, nullptr, bounds.as<int64_t>(), bounds.as<int64_t>() + max_chunks,
                        chunk_rows, n, max_chunks, true, partials.as<double>(), nullptr, group_start.as<int64_t>() + k);
    reduce_chunk_groups_kernel<<<blocks_for_threads(k * ncols), kBlock, 0, res.stream>>>(
        partials.as<double>(), ncols, group_start.as<int64_t>(), k, max_chunks, 1.0, sums);
    GPUML_CUDA_CHECK_LAUNCH();
  }

  static int64_t round_up(int64_t v, int64_t multiple) { return ceil_div(v, multiple) * multiple; }

  // chunk_row_sums4_kernel where it applies (float rows, d % 4 == 0, d <= 128, X 16-byte aligned);
  // false otherwise.
  static bool launch_row_sums4(cuda::Resources& res, const T* X, int64_t d, const int64_t* order, const T* weights,
                               const int64_t* chunk_begin, const int64_t* chunk_end, int64_t max_chunks,
                               const int64_t* live_chunks, double* partials) {
    if constexpr (!std::is_same_v<T, float>) {
      return false;
    } else {
      if (d % 4 != 0 || d > 128 || reinterpret_cast<std::uintptr_t>(X) % 16 != 0 || max_chunks > INT_MAX) return false;
      const unsigned grid = static_cast<unsigned>(max_chunks);
      if (d <= 32)
        chunk_row_sums4_kernel<8><<<grid, kBlock, 0, res.stream>>>(X, d, order, weights, chunk_begin, chunk_end, live_chunks, partials);
      else if (d <= 64)
        chunk_row_sums4_kernel<16><<<grid, kBlock, 0, res.stream>>>(X, d, order, weights, chunk_begin, chunk_end, live_chunks, partials);
      else
        chunk_row_sums4_kernel<32><<<grid, kBlock, 0, res.stream>>>(X, d, order, weights, chunk_begin, chunk_end, live_chunks, partials);
      GPUML_CUDA_CHECK_LAUNCH();
      return true;
    }
  }

  Buffer device(std::size_t bytes) { return Buffer(ctx_, bytes); }

  template <typename U>
  Buffer to_device(cuda::Resources& res, const U* host, int64_t count) {
    Buffer b = device(count * sizeof(U));
    if (count > 0) GPUML_CUDA_CHECK(cudaMemcpyAsync(b.data(), host, count * sizeof(U), cudaMemcpyHostToDevice, res.stream));
    return b;
  }

  static void copy_to_host(cuda::Resources& res, void* host, const void* dev, std::size_t bytes) {
    if (bytes == 0) return;
    GPUML_CUDA_CHECK(cudaMemcpyAsync(host, dev, bytes, cudaMemcpyDeviceToHost, res.stream));
    GPUML_CUDA_CHECK(cudaStreamSynchronize(res.stream));
  }

  static int64_t chunk_rows_for(int64_t n) { return std::max(kMinChunkRows, ceil_div(n, kTargetChunks)); }

  // Column means of X into the device array means (d doubles): fixed chunks of rows summed in
  // a fixed order, then the chunks in order (deterministic).
  void launch_column_means(cuda::Resources& res, const T* X, int64_t n, int64_t d, double* means) {
    const int64_t chunk_rows = chunk_rows_for(n);
    const int64_t n_chunks = ceil_div(n, chunk_rows);
    Buffer partials = device(n_chunks * d * sizeof(double));
    launch_chunk_sums(res, X, d, nullptr, nullptr, nullptr, nullptr, nullptr, chunk_rows, n, n_chunks, false, partials.as<double>());
    reduce_chunk_groups_kernel<<<blocks_for_threads(d), kBlock, 0, res.stream>>>(partials.as<double>(), d, nullptr, 1, n_chunks,
                                                                                 static_cast<double>(n), means);
    GPUML_CUDA_CHECK_LAUNCH();
  }

  static void launch_chunk_sums(cuda::Resources& res, const T* X, int64_t d, const int64_t* order, const T* weights,
                                const double* center, const int64_t* chunk_begin, const int64_t* chunk_end, int64_t chunk_rows,
                                int64_t n, int64_t n_chunks, bool with_weights, double* partials, T* centered = nullptr,
                                const int64_t* live_chunks = nullptr) {
    const int64_t n_slabs = ceil_div(d, kSlabCols);
    const dim3 grid(static_cast<unsigned>(std::min(n_chunks, int64_t(INT_MAX))), static_cast<unsigned>(std::min<int64_t>(n_slabs, 65535)));
    const dim3 block(kSlabCols, kRowLanes);
    chunk_column_sums_kernel<T><<<grid, block, 0, res.stream>>>(X, d, order, weights, center, chunk_begin, chunk_end, chunk_rows, n,
                                                                n_chunks, live_chunks, with_weights, partials, centered);
    GPUML_CUDA_CHECK_LAUNCH();
  }

  Context ctx_;
  // keep_rows: the rows that stay fixed, and their squared norms (float).
  const T* kept_X_ = nullptr;
  int64_t kept_n_ = 0, kept_d_ = 0;
  Buffer kept_sqnorms_;
};

}  // namespace

template <typename T>
std::unique_ptr<KMeansBackend<T>> make_kmeans_cuda_backend(const Context& ctx) {
  return std::make_unique<CudaKMeansBackend<T>>(ctx);
}

template std::unique_ptr<KMeansBackend<float>> make_kmeans_cuda_backend<float>(const Context&);
template std::unique_ptr<KMeansBackend<double>> make_kmeans_cuda_backend<double>(const Context&);

}  // namespace gpuml::detail

// KMeans assignment on the tensor cores, with the FP32 kernel's exact answers.
//
// The distances |c_j|^2 - 2 x.c_j come from a TF32 GEMM (mma.sync m16n8k8, operands rounded to
// nearest TF32, FP32 accumulation) that keeps, per row and per lane (8 lanes share a row's
// centers), the least value, its center and the least value let go. TF32 products err by at
// most ~2^-10 |x||c|, so every center whose TF32 value lies within twice that bound (E, below)
// of the row's least value may be the FP32 winner; every other center cannot be. Those few
// candidates (a lane's least each) are then recomputed exactly as fused_argmin_kernel computes
// them (one sequential FP32 FMA chain over the features, then fmaf(-2, acc, |c|^2)), and the
// least, lowest index on ties, is the label. A row with two candidates in one lane (a value let
// go within the bound), more than kMaxCandidates, or values that are not finite, is handed back
// (recheck_rows) for the FP32 kernel to assign in full.
//
// Layout: a block owns 128 rows (all their features, rounded to TF32, in shared memory) and
// streams the centers (pre-rounded, zero-padded) through a double-buffered 128 x 32 slice,
// cp.async. 8 warps, 4 along rows x 2 along centers, each 32 rows x 64 centers; fragments are
// read with ldmatrix from rows padded by 16 bytes (no bank conflicts).
#include <cuda_pipeline_primitives.h>

#include <algorithm>
#include <climits>
#include <cstdint>

#include "cuda/cluster/kmeans_tf32.cuh"
#include "cuda/core/kernel_util.cuh"
#include "cuda/core/tensor_core.cuh"
#include "gpuml/core/error.hpp"

namespace gpuml::detail {
namespace {

constexpr int kRows = 128;                    // rows per block tile
constexpr int kCenters = 128;                 // centers per tile
constexpr int kSlice = 32;                    // features per streamed slice of the centers
constexpr int kThreads = 256;                 // 8 warps: 4 along rows x 2 along centers
constexpr int kPadWords = 4;                  // 16 bytes per shared row: ldmatrix conflict-free
constexpr int kSliceStride = kSlice + kPadWords;
constexpr int kSlots = 8;                     // partial lists per row: 2 warps x 4 lanes
constexpr int kSlotWords = 3;                 // least, center, rest
constexpr int kMaxCandidates = 4;             // more near-tied candidates: the FP32 kernel decides
static_assert(kRows * kSlots * kSlotWords <= 2 * kCenters * kSliceStride, "the merge reuses the slice buffers");

__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const float* p) {
  const unsigned addr = static_cast<unsigned>(__cvta_generic_to_shared(p));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr)
               : "memory");
}

// Where feature f sits along K in the packed centers (and so in the A fragments): within each group
// of 16 features, lane t's float4 of features 4t .. 4t + 3 feeds its fragments (step 2G, column t),
// (2G, t + 4), (2G + 1, t), (2G + 1, t + 4): one vector load for four fragment values. The products
// sum the same terms, in another order (the bound does not depend on it).
__host__ __device__ constexpr int64_t wgmma_k_position(int64_t f) {
  const int64_t r = f & 15, t = r >> 2, e = r & 3;
  return (f & ~int64_t(15)) + 8 * (e >> 1) + 4 * (e & 1) + t;
}

// Ct (k_pad x dpad) = the centers rounded to TF32, zeros past k and d; cn_pad (k_pad) = their
// squared norms, +inf (2^127 when packed) past k (a padding center is never anyone's candidate). packed: each tile of
// kCenters centers is stored as wgmma's core matrices (8 centers x 4 features, 128 contiguous
// bytes), [center / 8][feature / 4][center % 8][feature % 4], then the tile's kCenters norms, so
// that a tile and its norms are one contiguous copy into shared memory; otherwise row-major.
__global__ void tf32_centers_kernel(const float* __restrict__ C, int64_t k, int64_t d, int64_t k_pad, int64_t dpad, bool packed,
                                    const float* __restrict__ cn, float* __restrict__ Ct, float* __restrict__ cn_pad) {
  for (int64_t i = global_thread(); i < k_pad * dpad; i += grid_threads()) {
    const int64_t j = i / dpad, f = i % dpad;
    int64_t at = i;
    if (packed) {
      const int64_t tile = j / kCenters, jj = j % kCenters, fk = wgmma_k_position(f);
      at = tile * kCenters * (dpad + 1) + ((jj >> 3) * (dpad >> 2) + (fk >> 2)) * 32 + (jj & 7) * 4 + (fk & 3);
    }
    Ct[at] = (j < k && f < d) ? round_to_tf32(C[j * d + f]) : 0.0f;
    // (The wgmma lists pack an index into each value: +inf would become a NaN there. 2^127 stays
    // finite and above any row's least value that is not itself near overflow.)
    if (f == 0) {
      const float norm = j < k ? cn[j] : packed ? 0x1p127f : INFINITY;
      cn_pad[j] = norm;
      if (packed) Ct[(j / kCenters) * kCenters * (dpad + 1) + kCenters * dpad + j % kCenters] = norm;
    }
  }
}

// out[0] = max(v[0..n)) (one block).
__global__ void max_value_kernel(const float* __restrict__ v, int64_t n, float* __restrict__ out) {
  __shared__ float s[kBlock];
  float m = 0.0f;
  for (int64_t i = threadIdx.x; i < n; i += kBlock) m = fmaxf(m, v[i]);
  s[threadIdx.x] = m;
  __syncthreads();
  for (int width = kBlock / 2; width > 0; width /= 2) {
    if (static_cast<int>(threadIdx.x) < width) s[threadIdx.x] = fmaxf(s[threadIdx.x], s[threadIdx.x + width]);
    __syncthreads();
  }
  if (threadIdx.x == 0) out[0] = s[0];
}

// x.c exactly as fused_argmin_kernel forms it: one FMA chain over the features in order.
__device__ __forceinline__ float fp32_product(const float* __restrict__ x, const float* __restrict__ c, int64_t d, bool vec4) {
  float acc = 0.0f;
  if (vec4) {
    for (int64_t f = 0; f < d; f += 4) {
      const float4 a = *reinterpret_cast<const float4*>(x + f), b = *reinterpret_cast<const float4*>(c + f);
      acc = fmaf(a.x, b.x, acc);
      acc = fmaf(a.y, b.y, acc);
      acc = fmaf(a.z, b.z, acc);
      acc = fmaf(a.w, b.w, acc);
    }
  } else {
    for (int64_t f = 0; f < d; ++f) acc = fmaf(x[f], c[f], acc);
  }
  return acc;
}

// A row's running list over one lane's share of the centers: the least value seen, its center,
// and the least of the values it let go. Three min/max and a select per value: this update runs
// once per (row, center), as often as the products themselves, so it is kept this short.
struct Shortlist {
  float least = INFINITY, rest = INFINITY;
  int center = -1;

  __device__ __forceinline__ void offer(float v, int j) {
    rest = fminf(rest, fmaxf(least, v));  // the one not kept: the old least or v (a NaN v leaves rest <= least)
    center = v < least ? j : center;
    least = fminf(least, v);
  }
};

// The settling bound of a row whose least TF32 value (over every center) is `least`: the centers
// whose TF32 value lies at or below it may be the FP32 winner, no other can. +inf or NaN when the
// bound cannot be trusted (the row then goes to the FP32 kernel).
__device__ __forceinline__ float settle_bound(float least, float row_sqnorm, int64_t d, float cm, float pack_slack) {
  // |TF32 value - FP32 value| <= E for every center: twice (v = |c|^2 - 2 x.c) the product's
  // error, 2^-10 from the operands' rounding (2^-11 each) plus d 2^-20 for the accumulations
  // (the tensor cores truncate: ~2.25 d 2^-23 at worst; FP32: d 2^-24), with |x.c| <= |x||c|
  // <= nx cm; the fmaf roundings; 5% to spare; a floor for subnormal operands flushed to zero.
  const float nx = sqrtf(row_sqnorm);
  const float df = static_cast<float>(d);
  // pack_slack: the lists' values may carry a center index in their low mantissa bits, which moves
  // each by at most pack_slack |v|, |v| <= |c|^2 + 2 |x||c| (and 2% for the TF32 error in it).
  const float E = 1.05f * (0x1p-9f + df * 0x1p-19f) * nx * cm + 0x1p-21f * cm * cm + df * 0x1p-122f * (1.0f + nx + cm) +
                  1.02f * pack_slack * (cm * cm + 2.0f * nx * cm);
  return E < INFINITY ? least + 2.001f * E + fabsf(least) * 0x1p-22f : INFINITY;
}

// Settles one row from its lists (`slots` of them at m, kSlotWords words each: least, center,
// rest): its label and dist2 as the FP32 kernel gives them, or the row appended to recheck_rows.
// Returns 1 when the label changed (and count_changes), else 0.
__device__ __noinline__ unsigned settle_row(const float* m, int slots, int64_t row,
                                           const float* __restrict__ X, int64_t d, bool vec4,
                               const float* __restrict__ C, const float* __restrict__ cn_pad, float cm,
                               const float* __restrict__ row_sqnorms, int32_t* __restrict__ labels, float* __restrict__ dist2,
                               bool count_changes, int64_t* __restrict__ recheck_rows, unsigned long long* __restrict__ recheck_count) {
  float least = INFINITY;
  for (int s = 0; s < slots; ++s) least = fminf(least, m[s * kSlotWords]);
  const float row_sqnorm = row_sqnorms[row];
  const float bound = settle_bound(least, row_sqnorm, d, cm, 0.0f);
  bool full = !(bound < INFINITY) || !(least > -INFINITY);
  int count = 0;
  for (int s = 0; s < slots && !full; ++s) {
    const float* slot = m + s * kSlotWords;
    if (slot[2] <= bound) full = true;  // a value a list let go may be the winner
    count += slot[0] <= bound;
  }
  if (count > kMaxCandidates) full = true;
  if (full) {
    const unsigned long long at = atomicAdd(recheck_count, 1ull);
    recheck_rows[at] = row;
    return 0;
  }
  float best = INFINITY;
  int best_j = INT_MAX;
  for (int s = 0; s < slots; ++s) {
    const float* slot = m + s * kSlotWords;
    if (slot[0] <= bound) {
      const int j = __float_as_int(slot[1]);
      const float v = fmaf(-2.0f, fp32_product(X + row * d, C + int64_t(j) * d, d, vec4), cn_pad[j]);
      if (v < best || (v == best && j < best_j)) {
        best = v;
        best_j = j;
      }
    }
  }
  const unsigned changed = count_changes && labels[row] != best_j ? 1u : 0u;
  labels[row] = best_j;
  const float d2 = row_sqnorm + best;
  dist2[row] = d2 > 0.0f ? d2 : 0.0f;  // as the FP32 kernel: rounding can push an exact 0 below zero
  return changed;
}

__global__ void __launch_bounds__(kThreads, 2) tf32_argmin_kernel(
    const float* __restrict__ X, int64_t n, int64_t d, int dpad, bool vec4, const float* __restrict__ C,
    const float* __restrict__ Ct, int64_t k_pad, const float* __restrict__ cn_pad, const float* __restrict__ max_center_sqnorm,
    const float* __restrict__ row_sqnorms, int32_t* __restrict__ labels, float* __restrict__ dist2, bool count_changes,
    unsigned long long* __restrict__ changes, int64_t* __restrict__ recheck_rows, unsigned long long* __restrict__ recheck_count) {
  extern __shared__ __align__(16) float smem[];
  const int a_stride = dpad + kPadWords;
  float* As = smem;                     // kRows x a_stride
  float* Bs = As + kRows * a_stride;    // 2 x kCenters x kSliceStride
  float* merge = Bs;                    // after the center loop: kRows x kSlots x kSlotWords
  __shared__ unsigned int block_changes;

  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  const int warp_row = warp % 4, warp_col = warp / 4;
  const int g = lane >> 2, t = lane & 3;        // the mma fragments' group and thread in group
  const int mat = lane >> 3, mat_row = lane & 7;  // ldmatrix: which 8 x 4 matrix this lane addresses
  const int slices = dpad / kSlice;
  const int tiles = static_cast<int>(k_pad / kCenters);  // k_pad < 2^31: labels are int32
  const float cm = sqrtf(max_center_sqnorm[0]);
  if (threadIdx.x == 0) block_changes = 0;
  unsigned int my_changes = 0;
  // The slice copy: thread i moves 16 bytes of rows i / 8 + 32 p (p < kCopies), at word (i % 8) * 4.
  constexpr int kChunksPerRow = kSlice / 4, kRowsPerPass = kThreads / kChunksPerRow;
  constexpr int kCopies = kCenters / kRowsPerPass;
  static_assert(kThreads % kChunksPerRow == 0 && kCenters % kRowsPerPass == 0, "the slice copy's shape");
  const int copy_row = threadIdx.x / kChunksPerRow, copy_word = (threadIdx.x % kChunksPerRow) * 4;
  const float* copy_src = Ct + int64_t(copy_row) * dpad + copy_word;
  float* copy_dst = Bs + copy_row * kSliceStride + copy_word;
  // Fragment addresses that do not change over the loop.
  const float* a_frag = As + (warp_row * 32 + (mat & 1) * 8 + mat_row) * a_stride + (mat >> 1) * 4;
  const int b_frag = (warp_col * 64 + (mat >> 1) * 8 + mat_row) * kSliceStride + (mat & 1) * 4;

  for (int64_t row0 = int64_t(blockIdx.x) * kRows; row0 < n; row0 += int64_t(gridDim.x) * kRows) {
    // 1. The block's rows, rounded to TF32; zeros past n and d. (The barrier that ended the
    //    previous tile guards both buffers.)
    const int chunks = dpad / 4;
    for (int i = threadIdx.x; i < kRows * chunks; i += kThreads) {
      const int r = i / chunks, c4 = (i % chunks) * 4;
      const int64_t row = row0 + r;
      float v[4] = {0.0f, 0.0f, 0.0f, 0.0f};
      if (row < n) {
        const float* src = X + row * d + c4;
        if (vec4) {
          if (c4 < d) {
            const float4 q = *reinterpret_cast<const float4*>(src);
            v[0] = q.x; v[1] = q.y; v[2] = q.z; v[3] = q.w;
          }
        } else {
#pragma unroll
          for (int e = 0; e < 4; ++e)
            if (c4 + e < d) v[e] = src[e];
        }
      }
      *reinterpret_cast<float4*>(&As[r * a_stride + c4]) =
          make_float4(round_to_tf32(v[0]), round_to_tf32(v[1]), round_to_tf32(v[2]), round_to_tf32(v[3]));
    }
    // 2. Stream the centers slice by slice, tile after tile, into alternating buffers.
    auto issue = [&](int tile, int slice, int buffer) {
      const float* src = copy_src + int64_t(tile) * kCenters * dpad + slice * kSlice;
      float* dst = copy_dst + buffer * kCenters * kSliceStride;
#pragma unroll
      for (int p = 0; p < kCopies; ++p)
        __pipeline_memcpy_async(dst + p * kRowsPerPass * kSliceStride, src + int64_t(p) * kRowsPerPass * dpad, 16);
      __pipeline_commit();
    };
    Shortlist lists[4];  // the thread's rows: warp_row*32 + mi*16 + half*8 + g, index mi*2 + half
    float acc[2][8][4];
#pragma unroll
    for (int mi = 0; mi < 2; ++mi)
#pragma unroll
      for (int ni = 0; ni < 8; ++ni)
#pragma unroll
        for (int q = 0; q < 4; ++q) acc[mi][ni][q] = 0.0f;
    issue(0, 0, 0);
    int buffer = 0;
    for (int tile = 0; tile < tiles; ++tile) {
      for (int slice = 0; slice < slices; ++slice) {
        const bool last = tile + 1 == tiles && slice + 1 == slices;
        if (!last) {
          // into the buffer the previous step read; the barrier ending that step guards it
          if (slice + 1 < slices) issue(tile, slice + 1, buffer ^ 1);
          else issue(tile + 1, 0, buffer ^ 1);
          __pipeline_wait_prior(1);
        } else {
          __pipeline_wait_prior(0);
        }
        __syncthreads();
        const float* B = Bs + buffer * kCenters * kSliceStride + b_frag;
        const float* A = a_frag + slice * kSlice;
#pragma unroll
        for (int ks = 0; ks < kSlice / 8; ++ks) {
          uint32_t a[2][4];
#pragma unroll
          for (int mi = 0; mi < 2; ++mi) ldmatrix_x4(a[mi], A + mi * 16 * a_stride + ks * 8);
#pragma unroll
          for (int np = 0; np < 4; ++np) {
            uint32_t b[4];  // b[0], b[1]: n-tile 2 np; b[2], b[3]: n-tile 2 np + 1
            ldmatrix_x4(b, B + np * 16 * kSliceStride + ks * 8);
#pragma unroll
            for (int mi = 0; mi < 2; ++mi) {
              mma_tf32(acc[mi][2 * np], a[mi], b[0], b[1]);
              mma_tf32(acc[mi][2 * np + 1], a[mi], b[2], b[3]);
            }
          }
        }
        if (slice + 1 == slices) {  // the tile's products are complete: offer |c|^2 - 2 x.c to the lists
          const int tile0 = tile * kCenters + warp_col * 64 + 2 * t;
#pragma unroll
          for (int ni = 0; ni < 8; ++ni) {
            const int j0 = tile0 + ni * 8;
            const float2 cn = *reinterpret_cast<const float2*>(cn_pad + j0);
#pragma unroll
            for (int mi = 0; mi < 2; ++mi) {
#pragma unroll
              for (int q = 0; q < 4; ++q) {
                const float v = fmaf(-2.0f, acc[mi][ni][q], (q & 1) ? cn.y : cn.x);
                lists[mi * 2 + (q >> 1)].offer(v, j0 + (q & 1));
                acc[mi][ni][q] = 0.0f;
              }
            }
          }
        }
        buffer ^= 1;
        __syncthreads();
      }
    }

    // 3. Merge the 8 lists of each row, then settle its candidates exactly (threads 0..127, a row each).
#pragma unroll
    for (int l = 0; l < 4; ++l) {
      const int r = warp_row * 32 + (l >> 1) * 16 + (l & 1) * 8 + g;
      float* m = merge + (r * kSlots + warp_col * 4 + t) * kSlotWords;
      m[0] = lists[l].least;
      m[1] = __int_as_float(lists[l].center);
      m[2] = lists[l].rest;
    }
    __syncthreads();
    const int64_t row = row0 + threadIdx.x;
    if (threadIdx.x < kRows && row < n &&
        settle_row(merge + threadIdx.x * kSlots * kSlotWords, kSlots, row, X, d, vec4, C, cn_pad, cm, row_sqnorms,
                   labels, dist2,
                   count_changes, recheck_rows, recheck_count))
      ++my_changes;
    __syncthreads();  // the merge area is the next tile's slice buffers
  }
  if (count_changes) {
    if (my_changes) atomicAdd(&block_changes, my_changes);
    __syncthreads();
    if (threadIdx.x == 0 && block_changes) atomicAdd(changes, static_cast<unsigned long long>(block_changes));
  }
}

// ---- The warpgroup-MMA kernel (sm_90a) -------------------------------------------------------
// The same lists and bound as tf32_argmin_kernel, with the products from wgmma: a warpgroup owns
// 64 rows, whose TF32 fragments stay in its registers for the whole pass over the centers; the
// centers stream through shared memory, a 128-center tile per step (one contiguous copy of the
// packed layout), read straight from there by the MMAs. Each tile is two halves of 64 centers
// (kSteps m64n64k8 MMAs each), both issued at once: the threads offer the first half to the lists
// while the tensor cores compute the second. Each row has 8 lists, all in one quad of lanes of one
// warp (the 4 lanes that hold its columns, each with one list of even and one of odd centers), so
// each warp merges and settles its own 16 rows with shuffles: no shared memory, no block barrier.
// Where the centers stay resident (every tile has a stage of its own) the warpgroups then run
// independently, one settling while the other multiplies. A list's values carry the center's
// index in their low `index_bits` mantissa bits (one min keeps value and center; the slack that
// costs is in the bound). Stages: the tile being read and `stages - 1` tiles loading ahead.
constexpr int kWgRows = 64;                          // rows per warpgroup
constexpr int kWgGroups = 2;                         // warpgroups per block
constexpr int kWgThreads = 128 * kWgGroups;
constexpr int kWgBlockRows = kWgRows * kWgGroups;

// A row's features where the settle reads them: in global memory (X's row), or in a warp's
// staged slice (shared memory; float4 q of slice row r at q ^ (r & 7), so that lanes reading
// different rows at the same feature hit different banks).
struct GlobalRow {
  const float* x;
  __device__ __forceinline__ float4 four(int64_t q) const { return *reinterpret_cast<const float4*>(x + 4 * q); }
  __device__ __forceinline__ float one(int64_t f) const { return x[f]; }
};
struct StagedRow {
  const float* x;
  int swizzle;  // r & 7
  __device__ __forceinline__ float4 four(int64_t q) const { return *reinterpret_cast<const float4*>(x + ((q ^ swizzle) << 2)); }
  __device__ __forceinline__ float one(int64_t f) const { return x[(((f >> 2) ^ swizzle) << 2) | (f & 3)]; }
};

// x0.c0 and x1.c1, each exactly as fp32_product forms it: two independent FMA chains, interleaved,
// their operands loaded 16 features at a time ahead of the FMAs (ncu: a load waited on before
// every 4 FMAs made these chains a third of the wgmma kernel's stall samples). vec4: the centers
// (and a global row) may be read as float4.
template <typename Row>
__device__ __forceinline__ void fp32_products(const Row& x0, const float* __restrict__ c0, const Row& x1, const float* __restrict__ c1,
                                              int64_t d, bool vec4, float& p0, float& p1) {
  float acc0 = 0.0f, acc1 = 0.0f;
  int64_t f = 0;
  if (vec4) {
    constexpr int kAhead = 4;  // float4s per operand per batch
    for (; f + 4 * kAhead <= d; f += 4 * kAhead) {
      float4 a0[kAhead], b0[kAhead], a1[kAhead], b1[kAhead];
#pragma unroll
      for (int u = 0; u < kAhead; ++u) {
        a0[u] = x0.four(f / 4 + u);
        b0[u] = *reinterpret_cast<const float4*>(c0 + f + 4 * u);
        a1[u] = x1.four(f / 4 + u);
        b1[u] = *reinterpret_cast<const float4*>(c1 + f + 4 * u);
      }
#pragma unroll
      for (int u = 0; u < kAhead; ++u) {
        acc0 = fmaf(a0[u].x, b0[u].x, acc0);
        acc1 = fmaf(a1[u].x, b1[u].x, acc1);
        acc0 = fmaf(a0[u].y, b0[u].y, acc0);
        acc1 = fmaf(a1[u].y, b1[u].y, acc1);
        acc0 = fmaf(a0[u].z, b0[u].z, acc0);
        acc1 = fmaf(a1[u].z, b1[u].z, acc1);
        acc0 = fmaf(a0[u].w, b0[u].w, acc0);
        acc1 = fmaf(a1[u].w, b1[u].w, acc1);
      }
    }
  }
  for (; f < d; ++f) {
    acc0 = fmaf(x0.one(f), c0[f], acc0);
    acc1 = fmaf(x1.one(f), c1[f], acc1);
  }
  p0 = acc0;
  p1 = acc1;
}

// As Shortlist, for values that carry their center's index in their low mantissa bits, one level
// deeper: the least value, the second least (each with its center) and the least of the values
// let go; five min/max a value. Two near-tied centers in one list (a lane's even or odd centers)
// are then both candidates, where one list level handed the row back to the FP32 kernel (2.7% of
// the rows at 1M x 64, k = 256, blobs). A NaN v sets second to least: read as doubt.
struct PackedShortlist {
  float least = INFINITY, second = INFINITY, rest = INFINITY;

  __device__ __forceinline__ void offer(float v) {
    rest = fminf(rest, fmaxf(second, v));
    second = fminf(second, fmaxf(least, v));
    least = fminf(least, v);
  }
};

// (value, center) pairs: the lesser value, the lower center on ties.
__device__ __forceinline__ void keep_least(float& best, int& best_j, float v, int j) {
  if (v < best || (v == best && j < best_j)) {
    best = v;
    best_j = j;
  }
}

template <int kSteps>  // dpad = 8 kSteps features
__global__ void __launch_bounds__(kWgThreads, kSteps <= 8 ? 2 : 1) wgmma_argmin_kernel(
    const float* __restrict__ X, int64_t n, int64_t d, bool vec4, const float* __restrict__ C, const float* __restrict__ Ct,
    int64_t k, int tiles, int stages, int index_bits, const float* __restrict__ cn_pad, const float* __restrict__ max_center_sqnorm,
    const float* __restrict__ row_sqnorms, int32_t* __restrict__ labels, float* __restrict__ dist2, bool count_changes,
    unsigned long long* __restrict__ changes, int64_t* __restrict__ recheck_rows, unsigned long long* __restrict__ recheck_count) {
  constexpr int dpad = 8 * kSteps;
  // A list's index of its center: tile * 16 + half * 8 + column block, in index_bits bits.
  const uint32_t index_mask = (1u << index_bits) - 1u;
  const float pack_slack = ldexpf(1.0f, index_bits - 23);
  // A stage: a tile's centers (packed), then their norms (read by the lists from there).
  constexpr int kCenterFloats = kCenters * dpad, kHalfFloats = kCenterFloats / 2, kTileFloats = kCenterFloats + kCenters;
  extern __shared__ __align__(16) float smem[];  // stages x kTileFloats
  __shared__ unsigned int block_changes;

  const int wg = threadIdx.x / 128, warp = (threadIdx.x / kWarp) % 4, lane = threadIdx.x % kWarp;
  const int g = lane >> 2, t = lane & 3;
  const float cm = sqrtf(max_center_sqnorm[0]);
  if (threadIdx.x == 0) block_changes = 0;  // (added to only after a barrier)
  unsigned int my_changes = 0;
  auto issue = [&](int tile) {  // tile's copy into its stage, or an empty group past the last tile
    if (tile < tiles) {
      const float* src = Ct + int64_t(tile) * kTileFloats;
      float* dst = smem + (tile % stages) * kTileFloats;
      for (int c = threadIdx.x; c < kTileFloats / 4; c += kWgThreads) __pipeline_memcpy_async(dst + 4 * c, src + 4 * c, 16);
    }
    __pipeline_commit();
  };
  // The products of half `half` of `tile`: kSteps MMAs of 8 features (2 core matrices along K: 64
  // floats); the half's 8 groups of 8 centers start 8 group strides (dpad * 32 bytes each) in.
  auto multiply = [&](float (&acc)[32], const uint32_t (&a)[kSteps][4], int tile, int half) {
    const float* B = smem + (tile % stages) * kTileFloats + half * kHalfFloats;
    wgmma_fence();
#pragma unroll
    for (int ks = 0; ks < kSteps; ++ks) wgmma_m64n64k8_tf32(acc, a[ks], wgmma_descriptor(B + ks * 64, 128, dpad * 32), ks > 0);
    wgmma_commit();
  };
  PackedShortlist lists[4];  // the thread's rows h = 0, 1 (row_lo, row_hi; index 2 * (q >> 1)) x even and odd centers (+ (q & 1))
  auto offer = [&](float (&acc)[32], int tile, int half) {
    wgmma_pin(acc);
    const float* norms = smem + (tile % stages) * kTileFloats + kCenterFloats + half * 64 + 2 * t;
    const uint32_t index_base = (tile * 2 + half) * 8;
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      const float2 cn = *reinterpret_cast<const float2*>(norms + 8 * i);
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        const float v = fmaf(-2.0f, acc[4 * i + q], (q & 1) ? cn.y : cn.x);
        lists[q].offer(__uint_as_float((__float_as_uint(v) & ~index_mask) | (index_base + i)));
      }
    }
  };
  // The center of a value of list `list` (its index bits; the list's parity).
  auto center_of = [&](float value, int list) {
    const uint32_t index = __float_as_uint(value) & index_mask;
    return static_cast<int>((index >> 3) * 64 + (index & 7) * 8 + 2 * t + (list & 1));
  };

  // Few centers (every tile has a stage of its own): copied once, read by every row tile.
  const bool resident = tiles <= stages;
  if (resident) {
    for (int tile = 0; tile < tiles; ++tile) issue(tile);
    __pipeline_wait_prior(0);
    fence_async_shared();
    __syncthreads();
  }
  // With a stage to spare (resident centers), each warp keeps its 16 raw rows there for its settle
  // (16 x dpad floats a warp: 8 warps fit a stage), so the FP32 chains read X from shared memory;
  // else they read it from global memory.
  float* slice = resident && tiles < stages ? smem + tiles * kTileFloats + (threadIdx.x / kWarp) * 16 * dpad : nullptr;
  // The warp's 16 rows of the row tile at row0 (rows g and g + 8: h = 0, 1), their features as
  // wgmma_k_position orders them, into a as raw FP32 bits (rounded to TF32 where the tile starts):
  // loaded one row tile ahead, while the previous tile settles.
  uint32_t a[kSteps][4];
  auto load_rows = [&](int64_t row0) {
    const int64_t first = row0 + wg * kWgRows + warp * 16 + g;
#pragma unroll
    for (int group = 0; group < kSteps / 2; ++group) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int64_t row = first + 8 * h;
        const int f0 = 16 * group + 4 * t;
        float v[4] = {0.0f, 0.0f, 0.0f, 0.0f};
        if (row < n) {
          const float* src = X + row * d + f0;
          if (vec4) {
            if (f0 < d) {
              const float4 q = *reinterpret_cast<const float4*>(src);
              v[0] = q.x; v[1] = q.y; v[2] = q.z; v[3] = q.w;
            }
          } else {
#pragma unroll
            for (int e = 0; e < 4; ++e)
              if (f0 + e < d) v[e] = src[e];
          }
        }
        a[2 * group][h] = __float_as_uint(v[0]);
        a[2 * group][2 + h] = __float_as_uint(v[1]);
        a[2 * group + 1][h] = __float_as_uint(v[2]);
        a[2 * group + 1][2 + h] = __float_as_uint(v[3]);
      }
    }
  };
  const int64_t row_step = int64_t(gridDim.x) * kWgBlockRows;
  load_rows(int64_t(blockIdx.x) * kWgBlockRows);
  for (int64_t row0 = int64_t(blockIdx.x) * kWgBlockRows; row0 < n; row0 += row_step) {
    // (Without resident centers, the barrier that ended the previous row tile guards the stages.)
    if (!resident)
      for (int s = 0; s < stages - 1; ++s) issue(s);
    if (slice != nullptr) {
      __syncwarp();  // the previous row tile's settle has read the slice
#pragma unroll
      for (int group = 0; group < kSteps / 2; ++group)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int r = g + 8 * h, q = 4 * group + t;  // (load_rows' layout: features 16 group + 4 t ..)
          *reinterpret_cast<float4*>(slice + r * dpad + ((q ^ (r & 7)) << 2)) =
              make_float4(__uint_as_float(a[2 * group][h]), __uint_as_float(a[2 * group][2 + h]),
                          __uint_as_float(a[2 * group + 1][h]), __uint_as_float(a[2 * group + 1][2 + h]));
        }
    }
#pragma unroll
    for (int ks = 0; ks < kSteps; ++ks)
#pragma unroll
      for (int q = 0; q < 4; ++q) a[ks][q] = __float_as_uint(round_to_tf32(__uint_as_float(a[ks][q])));
    // What settling the rows reads, loaded while they multiply.
    const int64_t rows[2] = {row0 + wg * kWgRows + warp * 16 + g, row0 + wg * kWgRows + warp * 16 + g + 8};
    const float sq[2] = {rows[0] < n ? row_sqnorms[rows[0]] : 0.0f, rows[1] < n ? row_sqnorms[rows[1]] : 0.0f};
    const int64_t my_row = t == 0 ? rows[0] : rows[1];  // lane t < 2 writes row t's answer
    const int32_t old_label = count_changes && t < 2 && my_row < n ? labels[my_row] : -1;
    lists[0] = lists[1] = lists[2] = lists[3] = PackedShortlist{};
    float acc0[32], acc1[32];  // first and second halves
    for (int tile = 0; tile < tiles; ++tile) {
      if (!resident) {
        __pipeline_wait_prior(stages - 2);  // this thread's copies of `tile` have landed
        fence_async_shared();
        __syncthreads();                    // everyone's have, and every MMA on tile - 1 is done
        issue(tile + stages - 1);           // into the stage of tile - 1
      }
      // Both halves in flight, then the first offered while the second runs. (No MMA stays in
      // flight across iterations: ptxas then serializes every MMA, C7514.)
      multiply(acc0, a, tile, 0);
      multiply(acc1, a, tile, 1);
      wgmma_wait_all_but_one();
      offer(acc0, tile, 0);
      wgmma_wait_all();
      offer(acc1, tile, 1);
    }
    if (!resident) __syncthreads();  // every MMA on the stages is done: the next row tile may refill them
    load_rows(row0 + row_step);      // every MMA that read a is done

    // Settle row h from its 8 lists in the quad: the least, the bound, then its candidates (the
    // values within the bound: a list's least and second), unless a list let go a third value
    // within it, there are more than kMaxCandidates, one is a padding center, a list saw a NaN or
    // the bound is not finite: then the FP32 kernel decides.
    float bound[2];
    bool full[2];
    unsigned within[2];  // bit 2 e + level: list 2 h + e's least (level 0) or second (1) is a candidate
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float least = fminf(lists[2 * h].least, lists[2 * h + 1].least);
      least = fminf(least, __shfl_xor_sync(~0u, least, 1));
      least = fminf(least, __shfl_xor_sync(~0u, least, 2));
      bound[h] = settle_bound(least, sq[h], d, cm, pack_slack);
      bool doubt = !(bound[h] < INFINITY) || !(least > -INFINITY);
      within[h] = 0;
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const PackedShortlist& list = lists[2 * h + e];
        doubt |= list.rest <= bound[h] || (list.second == list.least && list.least < INFINITY);
        if (list.least <= bound[h]) {
          within[h] |= 1u << (2 * e);
          doubt |= center_of(list.least, e) >= k;
        }
        if (list.second <= bound[h]) {
          within[h] |= 2u << (2 * e);
          doubt |= center_of(list.second, e) >= k;
        }
      }
      int tally = __popc(within[h]) + (doubt ? 64 : 0);  // 64: more than any count of candidates
      tally += __shfl_xor_sync(~0u, tally, 1);
      tally += __shfl_xor_sync(~0u, tally, 2);
      full[h] = tally > kMaxCandidates;
      if (full[h] || rows[h] >= n) within[h] = 0;
    }
    // The candidates' FP32 products, a round per candidate (each round takes one of each row's,
    // two chains at once), while any lane has one left; then the least over the quad.
    float best[2] = {INFINITY, INFINITY};
    int best_j[2] = {INT_MAX, INT_MAX};
    __syncwarp();  // the slice's rows, stored by the warp's lanes, are visible to all of them
    while (__any_sync(~0u, (within[0] | within[1]) != 0)) {
      int j[2];
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        j[h] = -1;
        if (within[h]) {
          const int slot = __ffs(within[h]) - 1;
          within[h] &= within[h] - 1;
          const PackedShortlist& even = lists[2 * h];
          const PackedShortlist& odd = lists[2 * h + 1];
          j[h] = center_of(slot == 0 ? even.least : slot == 1 ? even.second : slot == 2 ? odd.least : odd.second, slot >> 1);
        }
      }
      if (j[0] >= 0 || j[1] >= 0) {
        // (a row without a candidate repeats the other's product)
        const int h_a = j[0] >= 0 ? 0 : 1, h_b = j[1] >= 0 ? 1 : 0;
        const int j_a = j[0] >= 0 ? j[0] : j[1], j_b = j[1] >= 0 ? j[1] : j[0];
        const float* c_a = C + int64_t(j_a) * d;
        const float* c_b = C + int64_t(j_b) * d;
        float p[2];
        if (slice != nullptr) {
          const int r_a = g + 8 * h_a, r_b = g + 8 * h_b;
          fp32_products(StagedRow{slice + r_a * dpad, r_a & 7}, c_a, StagedRow{slice + r_b * dpad, r_b & 7}, c_b, d, vec4, p[0], p[1]);
        } else {
          fp32_products(GlobalRow{X + (h_a ? rows[1] : rows[0]) * d}, c_a, GlobalRow{X + (h_b ? rows[1] : rows[0]) * d}, c_b, d, vec4,
                        p[0], p[1]);
        }
#pragma unroll
        for (int h = 0; h < 2; ++h)
          if (j[h] >= 0) keep_least(best[h], best_j[h], fmaf(-2.0f, p[h], cn_pad[j[h]]), j[h]);
      }
    }
#pragma unroll
    for (int h = 0; h < 2; ++h)
#pragma unroll
      for (int m = 1; m <= 2; m <<= 1) {
        const float other = __shfl_xor_sync(~0u, best[h], m);
        const int other_j = __shfl_xor_sync(~0u, best_j[h], m);
        keep_least(best[h], best_j[h], other, other_j);
      }
    if (t < 2 && my_row < n) {
      if (t == 0 ? full[0] : full[1]) {
        const unsigned long long at = atomicAdd(recheck_count, 1ull);
        recheck_rows[at] = my_row;
      } else {
        const int label = t == 0 ? best_j[0] : best_j[1];
        const float d2 = (t == 0 ? sq[0] + best[0] : sq[1] + best[1]);
        my_changes += count_changes && old_label != label ? 1u : 0u;
        labels[my_row] = label;
        dist2[my_row] = d2 > 0.0f ? d2 : 0.0f;  // as the FP32 kernel: rounding can push an exact 0 below zero
      }
    }
  }
  if (count_changes) {
    __syncthreads();
    if (my_changes) atomicAdd(&block_changes, my_changes);
    __syncthreads();
    if (threadIdx.x == 0 && block_changes) atomicAdd(changes, static_cast<unsigned long long>(block_changes));
  }
}

template <int kSteps>
void launch_wgmma_argmin(cuda::Resources& res, const float* X, int64_t n, int64_t d, bool vec4, const float* C, const float* Ct,
                         int64_t k, int64_t k_pad, const float* cn_pad, const float* max_norm, const float* row_sqnorms, int32_t* labels,
                         float* dist2, bool count_changes, unsigned long long* changes, int64_t* recheck_rows,
                         unsigned long long* recheck_count) {
  constexpr std::size_t tile_bytes = std::size_t(kCenters) * (8 * kSteps + 1) * sizeof(float);
  // Two blocks per SM fit 100 KiB of stages each (d <= 64: 3 stages); one (d <= 128, more registers) fits 200.
  const std::size_t budget = kSteps <= 8 ? (100u << 10) : (200u << 10);
  const int stages = static_cast<int>(std::clamp<std::size_t>(budget / tile_bytes, 2, 6));
  const std::size_t shared = stages * tile_bytes;
  auto kernel = wgmma_argmin_kernel<kSteps>;
  GPUML_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(shared)));
  int per_sm = 0;
  GPUML_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kWgThreads, shared));
  const int64_t blocks = std::min<int64_t>(ceil_div(n, kWgBlockRows), int64_t(std::max(per_sm, 1)) * res.sm_count);
  const int tiles = static_cast<int>(k_pad / kCenters);
  int index_bits = 1;
  while ((int64_t(1) << index_bits) < int64_t(tiles) * 16) ++index_bits;
  kernel<<<static_cast<unsigned>(blocks), kWgThreads, shared, res.stream>>>(
      X, n, d, vec4, C, Ct, k, tiles, stages, index_bits, cn_pad, max_norm, row_sqnorms, labels, dist2, count_changes, changes,
      recheck_rows, recheck_count);
  GPUML_CUDA_CHECK_LAUNCH();
}

}  // namespace

void assign_tf32(Context& ctx, cuda::Resources& res, const float* X, int64_t n, int64_t d, const float* centers, int64_t k,
                 const float* center_sqnorms, const float* row_sqnorms, int32_t* labels, float* dist2, bool count_changes,
                 unsigned long long* changes, int64_t* recheck_rows, unsigned long long* recheck_count, bool allow_wgmma) {
  if (n <= 0) return;
  // (Past 32768 centers the wgmma lists' center index would take more than 12 mantissa bits.)
  const bool wgmma = allow_wgmma && tf32_wgmma_available(res) && k <= 32768;
  // wgmma: 8-feature steps, padded to 32, 64 or 128 features (three instantiations); mma.sync: 32-feature slices.
  const int64_t dpad = wgmma ? (d <= 32 ? 32 : d <= 64 ? 64 : 128) : ceil_div(d, kSlice) * kSlice;
  const int64_t k_pad = ceil_div(k, kCenters) * kCenters;
  Buffer centers_tf32(ctx, k_pad * (dpad + (wgmma ? 1 : 0)) * sizeof(float)), norms_pad(ctx, k_pad * sizeof(float)),
      max_norm(ctx, sizeof(float));
  tf32_centers_kernel<<<cuda::grid_for(k_pad * dpad, kBlock), kBlock, 0, res.stream>>>(
      centers, k, d, k_pad, dpad, wgmma, center_sqnorms, centers_tf32.as<float>(), norms_pad.as<float>());
  GPUML_CUDA_CHECK_LAUNCH();
  max_value_kernel<<<1, kBlock, 0, res.stream>>>(center_sqnorms, k, max_norm.as<float>());
  GPUML_CUDA_CHECK_LAUNCH();
  const bool vec4 = d % 4 == 0 && reinterpret_cast<uintptr_t>(X) % 16 == 0;
  if (wgmma) {
    auto launch = dpad == 32 ? launch_wgmma_argmin<4> : dpad == 64 ? launch_wgmma_argmin<8> : launch_wgmma_argmin<16>;
    launch(res, X, n, d, vec4, centers, centers_tf32.as<float>(), k, k_pad, norms_pad.as<float>(), max_norm.as<float>(), row_sqnorms,
           labels, dist2, count_changes, changes, recheck_rows, recheck_count);
    return;
  }
  const std::size_t shared = (kRows * (dpad + kPadWords) + 2 * kCenters * kSliceStride) * sizeof(float);
  GPUML_CUDA_CHECK(cudaFuncSetAttribute(tf32_argmin_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(shared)));
  int per_sm = 0;
  GPUML_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, tf32_argmin_kernel, kThreads, shared));
  const int64_t blocks = std::min<int64_t>(ceil_div(n, kRows), int64_t(std::max(per_sm, 1)) * res.sm_count);
  tf32_argmin_kernel<<<static_cast<unsigned>(blocks), kThreads, shared, res.stream>>>(
      X, n, d, static_cast<int>(dpad), vec4, centers, centers_tf32.as<float>(), k_pad, norms_pad.as<float>(), max_norm.as<float>(),
      row_sqnorms, labels, dist2, count_changes, changes, recheck_rows, recheck_count);
  GPUML_CUDA_CHECK_LAUNCH();
}

bool tf32_wgmma_available(const cuda::Resources& res) { return kWgmmaBuilt && res.compute_capability == 90; }

}  // namespace gpuml::detail

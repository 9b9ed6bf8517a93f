// The float32 Gram products of the least-squares family and PCA's covariance in one pass over X,
// on tensor cores, at about float32's accuracy (see gram_tf32.cuh).
//
// Why: XᵀX in exact FP32 (cuBLAS SGEMM, no tensor cores) reached ~36 TFLOP/s, 2.7 ms at 1M x 256,
// after a centering pass that wrote a shifted copy of X (1.1 ms). Here every value is split in
// two TF32 numbers, v = hi + lo with hi = TF32(v) and lo = TF32(v − hi) (both rounded to nearest;
// hi + lo carries ~22 significant bits), and the tensor cores form hiᵀhi + loᵀhi + hiᵀlo (the
// lo·lo term, ~2^-22 relative, is dropped): each product is exact in the FP32 accumulators, so
// the result is about as accurate as an FP32 GEMM (measured against float64 in
// tests/cpp/linear_model/linear_backend_gpu_test.cpp).
//
// How:
//  - The m x m result is cut into 128 x 128 tiles; only tiles on and above the diagonal are
//    computed. The rows of X are cut into fixed chunks (up to kMaxChunkRows rows, more when the
//    partial products would take too much memory); a block takes one (chunk, tile) pair.
//  - A block stages kStageRows rows of the tile's two column blocks of X through registers into
//    shared memory, applying the shift and sqrt(w) and splitting on the way. Two buffers and one
//    barrier per stage: while some warps still multiply one stage, others split the next into
//    the other buffer; the rows after that are loaded into registers meanwhile.
//  - 16 warps, each a 32 x 32 part of the tile (in diagonal tiles, the 10 on or above the
//    diagonal): per 8 rows, 2 x 4 mma.sync m16n8k8 TF32 tiles,
//    three products each, summed per 16 rows in fresh accumulators (the tensor cores' own
//    additions truncate) and then added to the running sums in ordinary float32. The kernel is
//    issue-bound at about a third of the MMA peak (8 warps of 64 x 32 ran the same; see
//    benchmarks/NOTES.md).
//  - The extra columns E = [B | sqrt(w)] ride along on the CUDA cores: the blocks of diagonal
//    tiles also sum v·E for their 128 columns (AᵀB, and the column sums Σ w (x − shift)), and
//    Σ w.
//  - Each block writes its partial tile in float; small kernels add the chunks in double, in
//    chunk order. No atomics: the same input gives the same bits on every run, and the chunking
//    depends on n and m only, not on the device.
#include "cuda/linear_model/gram_tf32.cuh"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "cuda/core/kernel_util.cuh"
#include "cuda/core/tensor_core.cuh"
#include "gpuml/core/array.hpp"
#include "gpuml/core/error.hpp"

namespace gpuml::detail {
namespace {

constexpr int kTile = 128;                 // edge of a tile of the result
constexpr int kStageRows = 16;             // rows of X in shared memory at a time
constexpr int kLd = kTile + 8;             // shared row stride: conflict-free fragment loads
constexpr int kThreads = 512;              // 16 warps: 4 (rows of the tile) x 4 (columns), 32 x 32 each
constexpr int kLoaderRows = kThreads / kTile;  // 4: thread tid stages column tid % 128 of rows tid / 128 + 4 q
constexpr int kExtras = 8;                 // extra columns: up to 7 targets, then sqrt(w)
constexpr int kLoadsPerThread = kStageRows / kLoaderRows;
// Rows per chunk: n / kMinChunks rounded up to whole stages, within [kMinChunkRows, kMaxChunkRows]
// (2048-row chunks left 6 blocks at n = 4096 x 256: the whole fit took 2.0 ms, now 1.4 ms).
constexpr int64_t kMinChunks = 128;
constexpr int64_t kMinChunkRows = 64;
constexpr int64_t kMaxChunkRows = 2048;
constexpr std::size_t kPartialBytes = std::size_t(512) << 20;
constexpr std::size_t kSharedBytes = 2 * (4 * kStageRows * kLd + kStageRows * kExtras) * sizeof(float);
static_assert(kSharedBytes <= 227 * 1024, "more than an sm_90 block may have");
static_assert(kLoaderRows * (kExtras * kTile + 1) <= 8 * kStageRows * kLd, "the extras' partial sums reuse the stages");
static_assert(kStageRows * kExtras <= kThreads && kStageRows % kLoaderRows == 0, "loader shape");

// Grid: (tiles, chunks), so that the blocks of one chunk run side by side and share its rows of X
// in L2. tiles[x] = (I, J), I <= J: the tile's row and column blocks of 128.
// gram_partials: per tile, per chunk, 128 x 128 floats (row-major, row i of block I, column j of
// block J). extra_partials (diagonal tiles): per column block I, per chunk, kExtras + 1 rows of
// 128 floats: Σ v·E_e for e < kExtras, then Σ w in entry 0 of the last row.
// kColumns: the extra columns carried (t + 1 rounded up to 2, 4 or 8, or 1; the last is sqrt(w)):
// their products cost CUDA-core instructions in every stage of the diagonal tiles.
template <int kColumns>
__global__ void __launch_bounds__(kThreads, 1)
    fused_gram_kernel(const float* __restrict__ X, int64_t n, int64_t m, const float* __restrict__ shift,
                      const float* __restrict__ w, const float* __restrict__ B, int64_t t, const int2* __restrict__ tiles,
                      int64_t chunk_rows, int64_t n_chunks, float* __restrict__ gram_partials,
                      float* __restrict__ extra_partials) {
  extern __shared__ float shared[];
  // Two buffers: while the products read one stage, the next is split into the other.
  constexpr int kPlane = kStageRows * kLd;
  constexpr int kBuffer = 4 * kPlane + kStageRows * kExtras;  // a_hi, a_lo, b_hi, b_lo, E of the rows
  static_assert(kColumns >= 1 && kColumns <= kExtras, "extra columns");

  const int2 tile = tiles[blockIdx.x];
  const bool diagonal = tile.x == tile.y;  // one operand: b is a
  const int64_t chunk = blockIdx.y;
  const int64_t row_begin = chunk * chunk_rows;
  const int64_t row_end = row_begin + chunk_rows < n ? row_begin + chunk_rows : n;

  const int tid = threadIdx.x, warp = tid / kWarp, lane = tid % kWarp;
  const int group = lane / 4, quad = lane % 4;  // mma fragment coordinates
  // Warp w takes the 32 x 32 part (row block, column block) in 4 bits (row << 2 | column) of
  // kWarpTiles: (1,0) (2,1) (3,1) (3,2) (2,0) (3,0) (1,1) (2,2) (0,0) (0,2) (1,2) (2,3) (0,1) (0,3)
  // (1,3) (3,3) for warps 0..15. In a diagonal tile the 6 parts below the diagonal are never read
  // (the result is symmetric): their warps skip the products, and this order spreads them over
  // the 4 schedulers (warp % 4) two, two, one and one. Measured at 1M x 256: the whole eig fit
  // 3.65 -> 3.48 ms (H200), though ptxas now spills 8-48 bytes.
  constexpr uint64_t kWarpTiles = 0xf731b620a5c8ed94ULL;
  const int warp_tile = static_cast<int>((kWarpTiles >> (4 * warp)) & 0xF);
  const int warp_i = (warp_tile >> 2) * 32, warp_j = (warp_tile & 3) * 32;
  const bool idle = diagonal && warp_i > warp_j;
  // Loader: column tid % 128 of each operand, rows tid / 128 + kLoaderRows q of a stage.
  const int load_col = tid % kTile, load_row = tid / kTile;
  const int64_t a_col = int64_t(tile.x) * kTile + load_col, b_col = int64_t(tile.y) * kTile + load_col;
  const bool a_in = a_col < m, b_in = b_col < m;
  const float a_shift = shift && a_in ? shift[a_col] : 0.0f;
  const float b_shift = shift && b_in ? shift[b_col] : 0.0f;
  // Extras loader (diagonal tiles): thread tid < kStageRows * kColumns stages E[tid / kColumns][tid % kColumns].
  const int extra_row = tid / kColumns, extra_col = tid % kColumns;

  float acc[2][4][4];
#pragma unroll
  for (int mt = 0; mt < 2; ++mt)
#pragma unroll
    for (int nt = 0; nt < 4; ++nt)
#pragma unroll
      for (int r = 0; r < 4; ++r) acc[mt][nt][r] = 0.0f;
  float extra_sums[kColumns];
#pragma unroll
  for (int e = 0; e < kColumns; ++e) extra_sums[e] = 0.0f;
  float weight_sum = 0.0f;

  // Raw values of the next stage, in registers: x of both operands, sqrt(w) of the rows (0 past
  // the end, so those rows count as zero) and one entry of E.
  float a_next[kLoadsPerThread], b_next[kLoadsPerThread], scale_next[kLoadsPerThread], extra_next = 0.0f;
  auto load = [&](int64_t row0) {
#pragma unroll
    for (int q = 0; q < kLoadsPerThread; ++q) {
      const int64_t row = row0 + load_row + kLoaderRows * q;
      const bool in = row < row_end;
      a_next[q] = in && a_in ? X[row * m + a_col] : 0.0f;
      if (!diagonal) b_next[q] = in && b_in ? X[row * m + b_col] : 0.0f;
      scale_next[q] = in ? (w ? sqrtf(w[row]) : 1.0f) : 0.0f;
    }
    if (diagonal && tid < kStageRows * kColumns) {
      const int64_t row = row0 + extra_row;
      extra_next = 0.0f;
      if (row < row_end) {
        if (extra_col < t) extra_next = B[row * t + extra_col];
        else if (extra_col == kColumns - 1) extra_next = w ? sqrtf(w[row]) : 1.0f;
      }
    }
  };
  // v = sqrt(w) (x − shift), split into buffer `buf`.
  auto stage = [&](float* buf) {
    float* a_hi = buf;
    float* a_lo = buf + kPlane;
    float* b_hi = buf + 2 * kPlane;
    float* b_lo = buf + 3 * kPlane;
#pragma unroll
    for (int q = 0; q < kLoadsPerThread; ++q) {
      const int r = load_row + kLoaderRows * q;
      const float v = (a_next[q] - a_shift) * scale_next[q];
      const float hi = round_to_tf32(v);
      a_hi[r * kLd + load_col] = hi;
      a_lo[r * kLd + load_col] = round_to_tf32(v - hi);
      if (!diagonal) {
        const float u = (b_next[q] - b_shift) * scale_next[q];
        const float u_hi = round_to_tf32(u);
        b_hi[r * kLd + load_col] = u_hi;
        b_lo[r * kLd + load_col] = round_to_tf32(u - u_hi);
      }
    }
    if (diagonal && tid < kStageRows * kColumns) buf[4 * kPlane + extra_row * kColumns + extra_col] = extra_next;
  };

  // One barrier per stage: at the top of iteration s, stage s is complete in buf[s % 2], and no
  // warp still reads buf[(s + 1) % 2] (its products were those of iteration s − 1).
  load(row_begin);
  stage(shared);
  if (row_begin + kStageRows < row_end) load(row_begin + kStageRows);
  int parity = 0;
  for (int64_t row0 = row_begin; row0 < row_end; row0 += kStageRows, parity ^= 1) {
    __syncthreads();
    const float* cur = shared + parity * kBuffer;
    if (row0 + kStageRows < row_end) {
      stage(shared + (parity ^ 1) * kBuffer);
      if (row0 + 2 * kStageRows < row_end) load(row0 + 2 * kStageRows);  // in flight during the products
    }
    const float* a_hi = cur;
    const float* a_lo = cur + kPlane;
    const float* b_hi = diagonal ? cur : cur + 2 * kPlane;
    const float* b_lo = diagonal ? cur + kPlane : cur + 3 * kPlane;
    if (diagonal) {  // the extras of this stage: v = hi + lo (to ~2^-22) against E
      const float* e_stage = cur + 4 * kPlane;
#pragma unroll
      for (int q = 0; q < kLoadsPerThread; ++q) {
        const int r = load_row + kLoaderRows * q;
        const float v = a_hi[r * kLd + load_col] + a_lo[r * kLd + load_col];
        const float* e_row = e_stage + r * kColumns;
#pragma unroll
        for (int e = 0; e < kColumns; ++e) extra_sums[e] += v * e_row[e];
        if (load_col == 0) weight_sum += e_row[kColumns - 1] * e_row[kColumns - 1];
      }
    }
    // The tensor cores add into their accumulators with truncation (measured: a 2e-5 relative
    // downward bias over 2048 rows), so each stage's products start from zero and are added to
    // acc with ordinary rounding.
    static_assert(kStageRows == 16, "two steps of 8 rows per stage");
    if (idle) continue;  // warp-uniform; the loop's barrier is still reached every stage
    uint32_t bh[2][4][2], bl[2][4][2];
#pragma unroll
    for (int ks = 0; ks < 2; ++ks)
#pragma unroll
      for (int nt = 0; nt < 4; ++nt) {
        const int j = warp_j + nt * 8 + group, k = ks * 8 + quad;
        bh[ks][nt][0] = __float_as_uint(b_hi[k * kLd + j]);
        bh[ks][nt][1] = __float_as_uint(b_hi[(k + 4) * kLd + j]);
        bl[ks][nt][0] = __float_as_uint(b_lo[k * kLd + j]);
        bl[ks][nt][1] = __float_as_uint(b_lo[(k + 4) * kLd + j]);
      }
#pragma unroll
    for (int mt = 0; mt < 2; ++mt) {
      float part[4][4];
#pragma unroll
      for (int nt = 0; nt < 4; ++nt)
#pragma unroll
        for (int r = 0; r < 4; ++r) part[nt][r] = 0.0f;
#pragma unroll
      for (int ks = 0; ks < 2; ++ks) {
        const int i = warp_i + mt * 16 + group, k = ks * 8 + quad;
        uint32_t ah[4], al[4];
        ah[0] = __float_as_uint(a_hi[k * kLd + i]);
        ah[1] = __float_as_uint(a_hi[k * kLd + i + 8]);
        ah[2] = __float_as_uint(a_hi[(k + 4) * kLd + i]);
        ah[3] = __float_as_uint(a_hi[(k + 4) * kLd + i + 8]);
        al[0] = __float_as_uint(a_lo[k * kLd + i]);
        al[1] = __float_as_uint(a_lo[k * kLd + i + 8]);
        al[2] = __float_as_uint(a_lo[(k + 4) * kLd + i]);
        al[3] = __float_as_uint(a_lo[(k + 4) * kLd + i + 8]);
        // Independent accumulators back to back; the small products first.
#pragma unroll
        for (int nt = 0; nt < 4; ++nt) mma_tf32(part[nt], al, bh[ks][nt]);
#pragma unroll
        for (int nt = 0; nt < 4; ++nt) mma_tf32(part[nt], ah, bl[ks][nt]);
#pragma unroll
        for (int nt = 0; nt < 4; ++nt) mma_tf32(part[nt], ah, bh[ks][nt]);
      }
#pragma unroll
      for (int nt = 0; nt < 4; ++nt)
#pragma unroll
        for (int r = 0; r < 4; ++r) acc[mt][nt][r] += part[nt][r];
    }
  }

  float* out = gram_partials + (int64_t(blockIdx.x) * n_chunks + chunk) * kTile * kTile;
#pragma unroll
  for (int mt = 0; mt < 2; ++mt)
#pragma unroll
    for (int nt = 0; nt < 4; ++nt)
#pragma unroll
      for (int r = 0; r < 4; ++r) {
        const int i = warp_i + mt * 16 + group + (r >= 2 ? 8 : 0);
        const int j = warp_j + nt * 8 + 2 * quad + (r & 1);
        out[i * kTile + j] = acc[mt][nt][r];
      }
  if (diagonal) {
    // The kLoaderRows loader rows (tid / 128) of each column, added in shared memory in a fixed
    // order (wait until every warp is done with the buffers).
    __syncthreads();
    float* parts = shared;  // kLoaderRows x kExtras x kTile, then the kLoaderRows weight sums
#pragma unroll
    for (int e = 0; e < kExtras; ++e)  // targets in slots 0..t-1, sqrt(w) in the last; the rest zero
      parts[(load_row * kExtras + e) * kTile + load_col] =
          e == kExtras - 1 ? extra_sums[kColumns - 1] : (e < kColumns - 1 ? extra_sums[e < kColumns ? e : 0] : 0.0f);
    if (load_col == 0) parts[kLoaderRows * kExtras * kTile + load_row] = weight_sum;
    __syncthreads();
    float* extra_out = extra_partials + (int64_t(tile.x) * n_chunks + chunk) * (kExtras + 1) * kTile;
    if (tid < kTile)
      for (int e = 0; e < kExtras; ++e) {
        float total = 0.0f;
        for (int l = 0; l < kLoaderRows; ++l) total += parts[(l * kExtras + e) * kTile + tid];
        extra_out[e * kTile + tid] = total;
      }
    if (tid == 0) {
      float total = 0.0f;
      for (int l = 0; l < kLoaderRows; ++l) total += parts[kLoaderRows * kExtras * kTile + l];
      extra_out[kExtras * kTile] = total;
    }
  }
}

// The partials of every chunk summed in double: gram_out (m x m, row-major, both triangles) and
// extras_out (m x kExtras, row-major, then the weight total). One launch for both. Each entry's
// chunks are cut into kReduceParts contiguous ranges, summed in chunk order by one thread each
// (the threads of a warp take neighbouring entries: coalesced), and the range sums are added in
// range order: the same bits on every run and device. (One thread per entry over all ~500 chunks
// took 60 us for each of the two results at 1M rows.)
constexpr int kReduceParts = 8;
constexpr int kReduceEntries = 32;  // entries per block (one warp wide)

__global__ void __launch_bounds__(kReduceEntries * kReduceParts)
    reduce_fused_partials_kernel(const float* __restrict__ gram_partials, const float* __restrict__ extra_partials,
                                 int64_t m, int64_t blocks, int64_t n_chunks, double* __restrict__ gram_out,
                                 double* __restrict__ extras_out) {
  __shared__ double range_sums[kReduceParts][kReduceEntries];
  const int64_t mm = m * m, count = mm + m * kExtras + 1;
  const int64_t per_part = (n_chunks + kReduceParts - 1) / kReduceParts;
  const int64_t c0 = min(n_chunks, threadIdx.y * per_part), c1 = min(n_chunks, c0 + per_part);
  for (int64_t base = blockIdx.x * int64_t(kReduceEntries); base < count; base += int64_t(gridDim.x) * kReduceEntries) {
    const int64_t idx = base + threadIdx.x;
    const float* p = nullptr;
    int64_t stride = 0;
    if (idx < mm) {
      const int64_t i = idx / m, j = idx % m;
      if (i <= j) {
        const int64_t I = i / kTile, J = j / kTile;
        const int64_t tile = I * blocks - I * (I - 1) / 2 + (J - I);  // upper-triangle order, row by row
        p = gram_partials + tile * n_chunks * kTile * kTile + (i % kTile) * kTile + (j % kTile);
        stride = int64_t(kTile) * kTile;
      }
    } else if (idx < count) {
      const int64_t e = idx - mm;
      const bool weights = e == m * kExtras;
      const int64_t j = weights ? 0 : e / kExtras, x = weights ? kExtras : e % kExtras;
      p = extra_partials + (j / kTile) * n_chunks * (kExtras + 1) * kTile + x * kTile + (j % kTile);
      stride = int64_t(kExtras + 1) * kTile;
    }
    double s = 0.0;
    if (p != nullptr)
      for (int64_t c = c0; c < c1; ++c) s += static_cast<double>(p[c * stride]);
    range_sums[threadIdx.y][threadIdx.x] = s;
    __syncthreads();
    if (threadIdx.y == 0 && p != nullptr) {
      double total = 0.0;
      for (int r = 0; r < kReduceParts; ++r) total += range_sums[r][threadIdx.x];
      if (idx < mm) {
        const int64_t i = idx / m, j = idx % m;
        gram_out[i * m + j] = total;
        gram_out[j * m + i] = total;
      } else {
        extras_out[idx - mm] = total;
      }
    }
    __syncthreads();
  }
}

}  // namespace

void fused_gram_tf32(const Context& ctx, const float* X, int64_t n, int64_t m, const float* shift_host, const float* w,
                     const float* B, int64_t t, double* gram_host, double* cross_host, double* sums_host) {
  cuda::Resources& res = cuda::activate(ctx);
  Context context = ctx;
  GPUML_EXPECT(t >= 0 && t <= kFusedGramMaxTargets, "fused_gram_tf32: too many targets");
  const int64_t blocks = ceil_div(m, int64_t(kTile));
  const int64_t n_tiles = blocks * (blocks + 1) / 2;

  // Chunks (see kMinChunks), fewer and longer when the partials would pass kPartialBytes. They
  // depend on n and m only: the sums are the same on every device.
  const std::size_t per_chunk = n_tiles * kTile * kTile * sizeof(float) + blocks * (kExtras + 1) * kTile * sizeof(float);
  const int64_t wanted_rows =
      std::clamp(ceil_div(ceil_div(n, kMinChunks), int64_t(kStageRows)) * kStageRows, kMinChunkRows, kMaxChunkRows);
  int64_t n_chunks = std::max<int64_t>(1, ceil_div(n, wanted_rows));
  n_chunks = std::max<int64_t>(1, std::min<int64_t>({n_chunks, static_cast<int64_t>(kPartialBytes / per_chunk), 65535}));
  const int64_t chunk_rows = ceil_div(n, n_chunks);
  n_chunks = ceil_div(n, chunk_rows);

  std::vector<int2> tile_list;
  for (int I = 0; I < blocks; ++I)
    for (int J = I; J < blocks; ++J) tile_list.push_back(make_int2(I, J));
  Buffer tiles(context, tile_list.size() * sizeof(int2));
  Buffer shift(context, std::max<int64_t>(m, 1) * sizeof(float));
  GPUML_CUDA_CHECK(cudaMemcpyAsync(tiles.data(), tile_list.data(), tile_list.size() * sizeof(int2), cudaMemcpyHostToDevice, res.stream));
  if (shift_host)
    GPUML_CUDA_CHECK(cudaMemcpyAsync(shift.data(), shift_host, m * sizeof(float), cudaMemcpyHostToDevice, res.stream));
  Buffer gram_partials(context, n_tiles * n_chunks * kTile * kTile * sizeof(float));
  Buffer extra_partials(context, blocks * n_chunks * (kExtras + 1) * kTile * sizeof(float));

  const dim3 grid(static_cast<unsigned>(n_tiles), static_cast<unsigned>(n_chunks));
  auto launch = [&](auto kernel) {
    // Over 48 kB of shared memory: opted into on the current device (cheap; every call, as the
    // attribute is per device).
    GPUML_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(kSharedBytes)));
    kernel<<<grid, kThreads, kSharedBytes, res.stream>>>(X, n, m, shift_host ? shift.as<float>() : nullptr, w, B, t,
                                                         tiles.as<int2>(), chunk_rows, n_chunks, gram_partials.as<float>(),
                                                         extra_partials.as<float>());
  };
  if (t == 0) launch(fused_gram_kernel<1>);
  else if (t + 1 <= 2) launch(fused_gram_kernel<2>);
  else if (t + 1 <= 4) launch(fused_gram_kernel<4>);
  else launch(fused_gram_kernel<8>);
  GPUML_CUDA_CHECK_LAUNCH();

  Buffer gram(context, m * m * sizeof(double));
  Buffer extras(context, (m * kExtras + 1) * sizeof(double));
  const int64_t entries = m * m + m * kExtras + 1;
  reduce_fused_partials_kernel<<<cuda::grid_for(entries, kReduceEntries, kMaxBlocks), dim3(kReduceEntries, kReduceParts), 0,
                                 res.stream>>>(gram_partials.as<float>(), extra_partials.as<float>(), m, blocks, n_chunks,
                                               gram.as<double>(), extras.as<double>());
  GPUML_CUDA_CHECK_LAUNCH();
  // Both results back through the context's pinned area, one wait.
  const std::size_t gram_bytes = static_cast<std::size_t>(m * m) * sizeof(double);
  std::vector<double> extras_host(static_cast<std::size_t>(m * kExtras + 1));
  const std::size_t extras_bytes = extras_host.size() * sizeof(double);
  char* staging = static_cast<char*>(res.pinned(gram_bytes + extras_bytes));
  GPUML_CUDA_CHECK(cudaMemcpyAsync(staging, gram.data(), gram_bytes, cudaMemcpyDeviceToHost, res.stream));
  GPUML_CUDA_CHECK(cudaMemcpyAsync(staging + gram_bytes, extras.data(), extras_bytes, cudaMemcpyDeviceToHost, res.stream));
  GPUML_CUDA_CHECK(cudaStreamSynchronize(res.stream));
  std::memcpy(gram_host, staging, gram_bytes);
  std::memcpy(extras_host.data(), staging + gram_bytes, extras_bytes);
  for (int64_t j = 0; j < m; ++j) {
    for (int64_t k = 0; k < t; ++k) cross_host[j * t + k] = extras_host[j * kExtras + k];
    sums_host[j] = extras_host[j * kExtras + kExtras - 1];
  }
  sums_host[m] = extras_host[m * kExtras];
}

}  // namespace gpuml::detail

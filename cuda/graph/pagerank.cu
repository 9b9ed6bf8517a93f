// The CUDA backend of PageRank (src/graph/pagerank_backend.hpp).
//
// build: the vertices are renumbered by out-degree, largest first (the ranks gathered most then
// sit together in cache lines); the edges are sorted by new destination with CUB's radix sort
// (stable: input order within a destination, as the CPU backend's counting sort), row offsets
// found by binary search in the sorted keys, new source ids gathered as int32 columns (and
// weights as values). Unweighted
// out-degrees are integer atomic counts; weighted ones come from a second stable sort by source,
// each vertex's weights then summed by one thread in input order (the CPU's order and bits).
// The rows are then cut into tiles, a CUDA block's work each (CSR-Adaptive's row blocks): a run
// of consecutive short rows holding about kTile edges-plus-rows, or one piece of kTile edges of a
// long row (in-degree > kLongRow, the hubs of power-law graphs).
//
// iterate (no host work but the one 8-byte read of the L1 change):
//   1. (first call only) y = x * inv_outdeg and the dangling mass, per fixed chunk of vertices,
//      the chunks' partials summed in order by one block: dsum stays on the device;
//   2. the pull SpMV, a tile per sub-block of kBlock threads; a block per SM holds kSubBlocks of
//      them and a shared-memory copy of the hot ranks (y of the largest out-degrees, gathered
//      most: the SpMV is bound by the gathers' L2 traffic). A short-row tile first gathers its
//      edges' terms into shared memory as T (every lane busy, each with up to 12 independent
//      loads in flight), then sums each row there in double with a group of lanes sized to
//      the tile's row count, and writes x_new = alpha (s + dsum d_i) + (1 - alpha) p_i, the next
//      iteration's y = x_new * inv_outdeg, and the tile's sums of |x_new - x| and of the new
//      dangling mass. A long-row piece leaves its sum; the last of a row's pieces to
//      finish adds them in order and finishes the row;
//   3. a block per 2048 tiles sums their changes and dangling masses; one block adds those.
// Every reduction has a fixed shape that depends only on the graph (not on the device), so
// results are deterministic.
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_reduce.cuh>
#include <cub/device/device_scan.cuh>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "cuda/core/kernel_util.cuh"
#include "cuda/core/resources.cuh"
#include "gpuml/core/array.hpp"
#include "gpuml/core/error.hpp"
#include "graph/pagerank_backend.hpp"

namespace gpuml::detail {
namespace {

constexpr int64_t kChunk = 8192;  // vertices per reduction block
constexpr int64_t kTile = 2048;   // edges plus rows per short-row tile; edges per long-row piece
constexpr int64_t kLongRow = kTile / 2;  // rows with more edges are split into pieces
// A short-row tile's rows all start in one kTile window of (edge offset + row index) and none is
// longer than kLongRow, so its edges fit in kTile + kLongRow.
constexpr int64_t kTileEdges = kTile + kLongRow;
static_assert(kTileEdges % kBlock == 0 && kTile % kBlock == 0, "tiles are whole rounds of a block");

unsigned blocks_for(int64_t threads) { return cuda::grid_for(threads, kBlock, kMaxBlocks); }

// out[i] = in[i] as int32, or new_of[in[i]] when the new numbering is given.
__global__ void narrow_kernel(const int64_t* __restrict__ in, const int32_t* __restrict__ new_of, int32_t* __restrict__ out,
                              int64_t n) {
  for (int64_t i = global_thread(); i < n; i += grid_threads())
    out[i] = new_of != nullptr ? new_of[in[i]] : static_cast<int32_t>(in[i]);
}

__global__ void iota32_kernel(int32_t* __restrict__ out, int64_t n) {
  for (int64_t i = global_thread(); i < n; i += grid_threads()) out[i] = static_cast<int32_t>(i);
}

__global__ void invert_permutation_kernel(const int32_t* __restrict__ old_of_new, int64_t n, int32_t* __restrict__ new_of) {
  for (int64_t v = global_thread(); v < n; v += grid_threads()) new_of[old_of_new[v]] = static_cast<int32_t>(v);
}

// to_new: out[v] = in[old_of_new[v]]; else out[old_of_new[v]] = in[v].
template <typename T>
__global__ void permute_kernel(const T* __restrict__ in, const int32_t* __restrict__ old_of_new, int64_t n, bool to_new,
                               T* __restrict__ out) {
  for (int64_t v = global_thread(); v < n; v += grid_threads()) {
    if (to_new)
      out[v] = in[old_of_new[v]];
    else
      out[old_of_new[v]] = in[v];
  }
}

__global__ void iota_kernel(int64_t* __restrict__ out, int64_t n) {
  for (int64_t i = global_thread(); i < n; i += grid_threads()) out[i] = i;
}

// offsets[v] = first e with sorted[e] >= v, for v in [0, n].
__global__ void offsets_kernel(const int32_t* __restrict__ sorted, int64_t m, int64_t n, int64_t* __restrict__ offsets) {
  for (int64_t v = global_thread(); v <= n; v += grid_threads()) {
    int64_t lo = 0, hi = m;
    while (lo < hi) {
      const int64_t mid = lo + (hi - lo) / 2;
      if (sorted[mid] < v)
        lo = mid + 1;
      else
        hi = mid;
    }
    offsets[v] = lo;
  }
}

template <typename T>
__global__ void gather_edges_kernel(const int64_t* __restrict__ order, const int64_t* __restrict__ src,
                                    const int32_t* __restrict__ new_of, const T* __restrict__ weights, int64_t m,
                                    int32_t* __restrict__ col, T* __restrict__ val) {
  for (int64_t e = global_thread(); e < m; e += grid_threads()) {
    const int64_t from = order[e];
    col[e] = new_of[src[from]];
    if (weights != nullptr) val[e] = weights[from];
  }
}

// keys[i] = the bit length of counts[i] (0 for none), or 0 for every vertex (identity order).
__global__ void bucket_kernel(const unsigned long long* __restrict__ counts, int64_t n, bool none,
                              unsigned long long* __restrict__ keys) {
  for (int64_t i = global_thread(); i < n; i += grid_threads()) keys[i] = none ? 0ull : 64 - __clzll(counts[i]);
}

__global__ void gather_counts_kernel(const unsigned long long* __restrict__ counts, const int32_t* __restrict__ old_of_new,
                                     int64_t n, unsigned long long* __restrict__ out) {
  for (int64_t i = global_thread(); i < n; i += grid_threads()) out[i] = counts[old_of_new[i]];
}

__global__ void count_out_kernel(const int64_t* __restrict__ src, int64_t m, unsigned long long* __restrict__ counts) {
  for (int64_t e = global_thread(); e < m; e += grid_threads()) atomicAdd(counts + src[e], 1ull);
}

// inv[v] = 1 / outdeg[v] (0 when the out-degree is 0); counts the dangling vertices.
template <typename T>
__global__ void inverse_count_kernel(const unsigned long long* __restrict__ counts, int64_t n, T* __restrict__ inv,
                                     unsigned long long* __restrict__ n_dangling) {
  for (int64_t v = global_thread(); v < n; v += grid_threads()) {
    const unsigned long long c = counts[v];
    inv[v] = c > 0 ? static_cast<T>(1.0 / static_cast<double>(c)) : T(0);
    if (c == 0) atomicAdd(n_dangling, 1ull);
  }
}

// Weighted out-degrees: vertex v's edges are order[offsets[v] .. offsets[v+1]) (input order).
template <typename T>
__global__ void inverse_weighted_kernel(const int64_t* __restrict__ offsets, const int64_t* __restrict__ order,
                                        const T* __restrict__ weights, int64_t n, T* __restrict__ inv,
                                        unsigned long long* __restrict__ n_dangling) {
  for (int64_t v = global_thread(); v < n; v += grid_threads()) {
    double s = 0.0;
    for (int64_t k = offsets[v]; k < offsets[v + 1]; ++k) s += static_cast<double>(weights[order[k]]);
    inv[v] = s > 0 ? static_cast<T>(1.0 / s) : T(0);
    if (!(s > 0)) atomicAdd(n_dangling, 1ull);
  }
}

// Tiles per row: ceil(len / kTile) for a long row; for a short row 1 if it starts a tile (the
// first row, the row after a long one, or the first in a new kTile window of offset + index), else 0.
__global__ void tile_counts_kernel(const int64_t* __restrict__ row_ptr, int64_t n, int32_t* __restrict__ counts) {
  for (int64_t r = global_thread(); r <= n; r += grid_threads()) {
    if (r == n) {
      counts[r] = 0;
      continue;
    }
    const int64_t len = row_ptr[r + 1] - row_ptr[r];
    if (len > kLongRow) {
      counts[r] = static_cast<int32_t>(ceil_div(len, kTile));
    } else {
      bool start = r == 0;
      if (!start) {
        const int64_t previous = row_ptr[r] - row_ptr[r - 1];
        start = previous > kLongRow || (row_ptr[r] + r) / kTile != (row_ptr[r - 1] + r - 1) / kTile;
      }
      counts[r] = start ? 1 : 0;
    }
  }
}

// tile_row[t] = the tile's first row; tile_piece[t] = its piece of a long row, or -1.
__global__ void tile_scatter_kernel(const int64_t* __restrict__ row_ptr, const int32_t* __restrict__ counts,
                                    const int32_t* __restrict__ offsets, int64_t n, int32_t* __restrict__ tile_row,
                                    int32_t* __restrict__ tile_piece) {
  for (int64_t r = global_thread(); r < n; r += grid_threads()) {
    const int32_t count = counts[r];
    if (count == 0) continue;
    const bool long_row = row_ptr[r + 1] - row_ptr[r] > kLongRow;
    for (int32_t k = 0; k < count; ++k) {
      tile_row[offsets[r] + k] = static_cast<int32_t>(r);
      tile_piece[offsets[r] + k] = long_row ? k : -1;
    }
  }
}

// Block b: y = x * inv over chunk b, and the chunk's dangling mass into partials[b].
template <typename T>
__global__ void __launch_bounds__(kBlock) prepare_kernel(const T* __restrict__ x, const T* __restrict__ inv, int64_t n,
                                                         T* __restrict__ y, double* __restrict__ partials) {
  __shared__ double shared[kBlock];
  const int64_t begin = blockIdx.x * kChunk;
  const int64_t end = min(n, begin + kChunk);
  double mass = 0.0;
  for (int64_t v = begin + threadIdx.x; v < end; v += kBlock) {
    const T xv = x[v];
    const T iv = inv[v];
    y[v] = xv * iv;
    if (iv == T(0)) mass += static_cast<double>(xv);
  }
  const double total = block_sum(mass, shared);
  if (threadIdx.x == 0) partials[blockIdx.x] = total;
}

// One block: *out = sum of partials[0..count), in a fixed order.
__global__ void __launch_bounds__(kBlock) finish_kernel(const double* __restrict__ partials, int64_t count,
                                                        double* __restrict__ out) {
  __shared__ double shared[kBlock];
  double s = 0.0;
  for (int64_t i = threadIdx.x; i < count; i += kBlock) s += partials[i];
  const double total = block_sum(s, shared);
  if (threadIdx.x == 0) *out = total;
}

template <typename T>
__device__ __forceinline__ T combine(double s, int64_t i, const T* p, const T* dangling, const double* dsum, double alpha,
                                     double uniform) {
  const double pi = p != nullptr ? static_cast<double>(p[i]) : uniform;
  const double di = dangling != nullptr ? static_cast<double>(dangling[i]) : pi;
  return static_cast<T>(alpha * (s + *dsum * di) + (1.0 - alpha) * pi);
}

struct IterateArgs {
  const int64_t* row_ptr;
  const int32_t* col;
  const int32_t* tile_row;
  const int32_t* tile_piece;
  int64_t tiles;
  double alpha;
  double uniform;
  const double* dsum;
  int64_t hot;  // vertices [0, hot) are gathered from shared memory
};

// The SpMV kernel runs one block per SM of kSubBlocks independent sub-blocks of kBlock threads
// (a tile each at a time, with their own barriers), which share a copy of the hot ranks in
// shared memory: y[0, hot), the vertices of largest out-degree, gathered most (on R-MAT scale
// 22, the first 16k sources are the sources of 42% of the edges). The SpMV is bound by L2 traffic, mostly the
// gathers' sectors; hits in shared memory take them off L2 (hot_vertices() has the measurements).
constexpr int kSubBlocks = 4;

// The sub-block's barrier (named barrier 1 + sub; barrier 0 is __syncthreads).
__device__ __forceinline__ void sub_sync(int sub) { asm volatile("bar.sync %0, %1;" ::"r"(sub + 1), "r"(kBlock) : "memory"); }

// block_sum over a sub-block's kBlock threads (lane tid), the same order of adds.
__device__ inline double sub_sum(double v, double* shared, int tid, int sub) {
  shared[tid] = v;
  sub_sync(sub);
  for (int width = kBlock / 2; width > 0; width /= 2) {
    if (tid < width) shared[tid] += shared[tid + width];
    sub_sync(sub);
  }
  return shared[0];
}

// terms[k] for edges begin + tid + k * kBlock < end (k < kPer): all column loads first, then
// all gathers, so that each thread has kPer independent loads in flight. The terms are y
// (exact) or weight * y, rounded to T; hot sources come from shared memory. The columns and
// weights are read once: they bypass L1.
template <int kPer, typename T>
__device__ __forceinline__ void gather_terms(const T* __restrict__ val, const T* __restrict__ y, const T* hot_y,
                                             int64_t hot, const int32_t* __restrict__ col, int64_t begin, int64_t end,
                                             int tid, T (&terms)[kPer]) {
  int32_t c[kPer];
#pragma unroll
  for (int k = 0; k < kPer; ++k) {
    const int64_t e = begin + tid + int64_t(k) * kBlock;
    c[k] = e < end ? __ldcg(col + e) : -1;
  }
#pragma unroll
  for (int k = 0; k < kPer; ++k) {
    const int64_t e = begin + tid + int64_t(k) * kBlock;
    T g = T(0);
    if (c[k] >= 0) g = c[k] < hot ? hot_y[c[k]] : __ldg(y + c[k]);
    terms[k] = c[k] >= 0 && val != nullptr ? __ldcg(val + e) * g : g;
  }
}

// Dynamic shared memory of tiles_kernel: per sub-block the tile's terms (kTileEdges T) and a
// reduction buffer (kBlock doubles), then the hot ranks.
template <typename T>
constexpr int64_t tile_shared_bytes() {
  return kSubBlocks * (kTileEdges * static_cast<int64_t>(sizeof(T)) + kBlock * static_cast<int64_t>(sizeof(double)));
}

// Sub-block s of block b takes tiles b * kSubBlocks + s, then every gridDim.x * kSubBlocks-th.
// Writes x_new for short rows, piece_sums[t] for long-row pieces, and changes[t] = sum of
// |x_new - x| over the tile's short rows. kTile = 1024 measured slower (with a 256-thread block
// per tile and no hot cache).
template <typename T>
__global__ void __launch_bounds__(kBlock* kSubBlocks, 1)
    tiles_kernel(IterateArgs a, const T* __restrict__ val, const T* __restrict__ y, const T* __restrict__ x,
                 const T* __restrict__ p, const T* __restrict__ dangling, const T* __restrict__ inv, T* __restrict__ x_new,
                 T* __restrict__ y_next, double* __restrict__ piece_sums, double* __restrict__ changes,
                 double* __restrict__ masses, int* __restrict__ counters) {
  constexpr int kPerTile = kTileEdges / kBlock, kPerPiece = kTile / kBlock;
  extern __shared__ double dynamic_shared[];
  const int sub = threadIdx.x / kBlock, tid = threadIdx.x % kBlock;
  double* shared = dynamic_shared + sub * kBlock;
  T* terms = reinterpret_cast<T*>(dynamic_shared + kSubBlocks * kBlock) + sub * kTileEdges;
  T* hot_y = reinterpret_cast<T*>(reinterpret_cast<unsigned char*>(dynamic_shared) + tile_shared_bytes<T>());
  for (int64_t v = threadIdx.x; v < a.hot; v += blockDim.x) hot_y[v] = y[v];
  __syncthreads();
  for (int64_t t = int64_t(blockIdx.x) * kSubBlocks + sub; t < a.tiles; t += int64_t(gridDim.x) * kSubBlocks) {
    const int64_t r0 = a.tile_row[t];
    const int32_t piece = a.tile_piece[t];
    if (piece >= 0) {
      const int64_t begin = a.row_ptr[r0] + piece * kTile;
      const int64_t end = min(a.row_ptr[r0 + 1], begin + kTile);
      T mine[kPerPiece];
      gather_terms<kPerPiece>(val, y, hot_y, a.hot, a.col, begin, end, tid, mine);
      double s = 0.0;
#pragma unroll
      for (int k = 0; k < kPerPiece; ++k) s += static_cast<double>(mine[k]);
      const double total = sub_sum(s, shared, tid, sub);
      if (tid == 0) {
        piece_sums[t] = total;
        changes[t] = 0.0;
        masses[t] = 0.0;
        // The sub-block that adds the row's last piece (whichever finishes last) adds the pieces
        // in order and finishes the row; it leaves the counter at 0 for the next iteration.
        const int64_t first = t - piece;
        const int pieces = static_cast<int>(ceil_div(a.row_ptr[r0 + 1] - a.row_ptr[r0], kTile));
        __threadfence();
        if (atomicAdd(counters + first, 1) == pieces - 1) {
          __threadfence();
          double row_sum = 0.0;
          for (int k = 0; k < pieces; ++k) row_sum += __ldcg(piece_sums + first + k);
          counters[first] = 0;
          const T xv = combine(row_sum, r0, p, dangling, a.dsum, a.alpha, a.uniform);
          x_new[r0] = xv;
          const T iv = inv[r0];
          y_next[r0] = xv * iv;
          __stcg(changes + first, fabs(static_cast<double>(xv) - static_cast<double>(x[r0])));
          __stcg(masses + first, iv == T(0) ? static_cast<double>(xv) : 0.0);
        }
      }
      sub_sync(sub);  // shared[] is reused by the next tile
      continue;
    }
    const int64_t r1 = a.tile_row[t + 1];  // the next tile's first row (tile_row[tiles] = n)
    const int64_t e0 = a.row_ptr[r0], e1 = a.row_ptr[r1];
    {
      T mine[kPerTile];
      gather_terms<kPerTile>(val, y, hot_y, a.hot, a.col, e0, e1, tid, mine);
#pragma unroll
      for (int k = 0; k < kPerTile; ++k) terms[tid + k * kBlock] = mine[k];
    }
    sub_sync(sub);
    // Groups of `group` lanes, one row each; the loop bound is uniform across the sub-block so
    // that every lane reaches the shuffles.
    const int64_t rows = r1 - r0;
    int group = 1;
    while (group < kWarp && rows * group * 2 <= kBlock) group *= 2;
    const int lane = tid % group;
    const int64_t groups = kBlock / group;
    double change = 0.0, mass = 0.0;
    for (int64_t base = 0; base < rows; base += groups) {
      const int64_t r = r0 + base + tid / group;
      double s = 0.0;
      if (r < r1)
        for (int64_t e = a.row_ptr[r] + lane; e < a.row_ptr[r + 1]; e += group) s += static_cast<double>(terms[e - e0]);
      for (int offset = group / 2; offset > 0; offset /= 2) s += __shfl_down_sync(0xffffffffu, s, offset, group);
      if (r < r1 && lane == 0) {
        const T xv = combine(s, r, p, dangling, a.dsum, a.alpha, a.uniform);
        x_new[r] = xv;
        change += fabs(static_cast<double>(xv) - static_cast<double>(x[r]));
        const T iv = inv[r];
        y_next[r] = xv * iv;
        if (iv == T(0)) mass += static_cast<double>(xv);
      }
    }
    const double total = sub_sum(change, shared, tid, sub);
    if (tid == 0) changes[t] = total;
    sub_sync(sub);
    const double total_mass = sub_sum(mass, shared, tid, sub);
    if (tid == 0) masses[t] = total_mass;
    sub_sync(sub);  // terms[] and shared[] are reused by the next tile
  }
}

constexpr int64_t kTileSumsChunk = 8 * kBlock;  // tiles per block of tile_sums_kernel

// Block b: the sums of changes[] and masses[] over tiles [b * kTileSumsChunk, (b + 1) *
// kTileSumsChunk) into partials[2b], partials[2b + 1].
__global__ void __launch_bounds__(kBlock) tile_sums_kernel(const double* __restrict__ changes,
                                                           const double* __restrict__ masses, int64_t tiles,
                                                           double* __restrict__ partials) {
  __shared__ double shared[kBlock];
  double change = 0.0, mass = 0.0;
  for (int k = 0; k < kTileSumsChunk / kBlock; ++k) {
    const int64_t t = blockIdx.x * kTileSumsChunk + k * kBlock + threadIdx.x;
    if (t < tiles) {
      change += changes[t];
      mass += masses[t];
    }
  }
  const double total_change = block_sum(change, shared);
  if (threadIdx.x == 0) partials[2 * blockIdx.x] = total_change;
  __syncthreads();
  const double total_mass = block_sum(mass, shared);
  if (threadIdx.x == 0) partials[2 * blockIdx.x + 1] = total_mass;
}

// One block: out0 = sum of pairs[0], pairs[2], ..., out1 = sum of pairs[1], pairs[3], ... (count
// pairs), in a fixed order.
__global__ void __launch_bounds__(kBlock) finish_pairs_kernel(const double* __restrict__ pairs, int64_t count,
                                                              double* __restrict__ out0, double* __restrict__ out1) {
  __shared__ double shared[kBlock];
  double s = 0.0, u = 0.0;
  for (int64_t i = threadIdx.x; i < count; i += kBlock) {
    s += pairs[2 * i];
    u += pairs[2 * i + 1];
  }
  const double total = block_sum(s, shared);
  if (threadIdx.x == 0) *out0 = total;
  __syncthreads();
  const double total_second = block_sum(u, shared);
  if (threadIdx.x == 0) *out1 = total_second;
}

int bits_for(int64_t n) {
  int bits = 1;
  while (bits < 31 && (int64_t(1) << bits) < n) ++bits;
  return bits;
}

template <typename T>
class CudaPageRankBackend final : public PageRankBackend<T> {
 public:
  explicit CudaPageRankBackend(const Context& ctx) : ctx_(ctx) {}

  EdgeSummary summarize(const int64_t* src, const int64_t* dst, const T* weights, int64_t m) override {
    cuda::Resources& res = cuda::activate(ctx_);
    EdgeSummary s;
    if (m == 0) return s;
    Buffer out = device(5 * sizeof(double));
    int64_t* ids = out.as<int64_t>();
    T* wmin = reinterpret_cast<T*>(out.as<double>() + 4);
    std::size_t bytes = 0, most = 0;
    GPUML_CUDA_CHECK(cub::DeviceReduce::Min(nullptr, bytes, src, ids, m, res.stream));
    most = std::max(most, bytes);
    GPUML_CUDA_CHECK(cub::DeviceReduce::Max(nullptr, bytes, src, ids + 1, m, res.stream));
    most = std::max(most, bytes);
    if (weights != nullptr) {
      GPUML_CUDA_CHECK(cub::DeviceReduce::Min(nullptr, bytes, weights, wmin, m, res.stream));
      most = std::max(most, bytes);
    }
    Buffer temp = device(most);
    GPUML_CUDA_CHECK(cub::DeviceReduce::Min(temp.data(), most, src, ids, m, res.stream));
    GPUML_CUDA_CHECK(cub::DeviceReduce::Max(temp.data(), most, src, ids + 1, m, res.stream));
    GPUML_CUDA_CHECK(cub::DeviceReduce::Min(temp.data(), most, dst, ids + 2, m, res.stream));
    GPUML_CUDA_CHECK(cub::DeviceReduce::Max(temp.data(), most, dst, ids + 3, m, res.stream));
    if (weights != nullptr) GPUML_CUDA_CHECK(cub::DeviceReduce::Min(temp.data(), most, weights, wmin, m, res.stream));
    double host[5] = {0, 0, 0, 0, 0};
    res.copy_to_host(host, out.data(), sizeof(host));
    int64_t h_ids[4];
    std::memcpy(h_ids, host, sizeof(h_ids));
    T h_w;
    std::memcpy(&h_w, host + 4, sizeof(T));
    s.min_vertex = std::min(h_ids[0], h_ids[2]);
    s.max_vertex = std::max(h_ids[1], h_ids[3]);
    s.min_weight = weights != nullptr ? static_cast<double>(h_w) : 0.0;
    return s;
  }

  int64_t build(const int64_t* src, const int64_t* dst, const T* weights, int64_t m, int64_t n) override {
    cuda::Resources& res = cuda::activate(ctx_);
    n_ = n;
    hot_ = -1;
    m_ = m;
    weighted_ = weights != nullptr;
    const int key_bits = bits_for(n);

    // 1. The backend's numbering: the vertices by out-degree (edge count), largest first, ties
    //    by id (a stable radix sort). The ranks gathered most then share cache sectors and lines
    //    (on a power-law graph a few percent of the vertices are the sources of most edges).
    Buffer counts = device(n * sizeof(unsigned long long));
    Buffer sorted_counts = device(n * sizeof(unsigned long long));
    GPUML_CUDA_CHECK(cudaMemsetAsync(counts.data(), 0, n * sizeof(unsigned long long), res.stream));
    if (m > 0) {
      count_out_kernel<<<blocks_for(m), kBlock, 0, res.stream>>>(src, m, counts.as<unsigned long long>());
      GPUML_CUDA_CHECK_LAUNCH();
    }
    old_of_new_ = device(n * sizeof(int32_t));
    Buffer new_of = device(n * sizeof(int32_t));
    {
      Buffer ids = device(n * sizeof(int32_t));
      iota32_kernel<<<blocks_for(n), kBlock, 0, res.stream>>>(ids.as<int32_t>(), n);
      GPUML_CUDA_CHECK_LAUNCH();
      int count_bits = 1;
      while (count_bits < 64 && (static_cast<unsigned long long>(1) << count_bits) <= static_cast<unsigned long long>(m))
        ++count_bits;
      // The sort key: the out-degree itself, or (GPUML_PAGERANK_ORDER=buckets) its bit length, so
      // that vertices of similar degree keep their input order (degree-based grouping), or
      // (=none) nothing: the input numbering. For tuning.
      static const int order_kind = [] {
        const char* v = std::getenv("GPUML_PAGERANK_ORDER");
        return v == nullptr ? 0 : std::strcmp(v, "buckets") == 0 ? 1 : std::strcmp(v, "none") == 0 ? 2 : 0;
      }();
      Buffer keys = device(n * sizeof(unsigned long long));
      const unsigned long long* key_in = counts.as<unsigned long long>();
      int key_bits = count_bits;
      if (order_kind != 0) {
        bucket_kernel<<<blocks_for(n), kBlock, 0, res.stream>>>(counts.as<unsigned long long>(), n, order_kind == 2,
                                                                keys.as<unsigned long long>());
        GPUML_CUDA_CHECK_LAUNCH();
        key_in = keys.as<unsigned long long>();
        key_bits = 7;
      }
      std::size_t temp_bytes = 0;
      GPUML_CUDA_CHECK(cub::DeviceRadixSort::SortPairsDescending(
          nullptr, temp_bytes, key_in, sorted_counts.as<unsigned long long>(), ids.as<int32_t>(),
          old_of_new_.as<int32_t>(), n, 0, key_bits, res.stream));
      Buffer temp = device(temp_bytes);
      GPUML_CUDA_CHECK(cub::DeviceRadixSort::SortPairsDescending(
          temp.data(), temp_bytes, key_in, sorted_counts.as<unsigned long long>(),
          ids.as<int32_t>(), old_of_new_.as<int32_t>(), n, 0, key_bits, res.stream));
      if (order_kind != 0) {  // the counts in the new order
        gather_counts_kernel<<<blocks_for(n), kBlock, 0, res.stream>>>(counts.as<unsigned long long>(),
                                                                       old_of_new_.as<int32_t>(), n,
                                                                       sorted_counts.as<unsigned long long>());
        GPUML_CUDA_CHECK_LAUNCH();
      }
      invert_permutation_kernel<<<blocks_for(n), kBlock, 0, res.stream>>>(old_of_new_.as<int32_t>(), n, new_of.as<int32_t>());
      GPUML_CUDA_CHECK_LAUNCH();
    }

    // 2. Edges sorted by (new) destination, stably, their order as edge indices; the columns are
    //    the sources' new ids.
    Buffer order = device(std::max<int64_t>(m, 1) * sizeof(int64_t));
    row_ptr_ = device((n + 1) * sizeof(int64_t));
    col_ = device(std::max<int64_t>(m, 1) * sizeof(int32_t));
    val_ = weighted_ ? device(std::max<int64_t>(m, 1) * sizeof(T)) : Buffer();
    {
      Buffer keys = sort_by(dst, new_of.as<int32_t>(), m, key_bits, order, res);
      offsets_kernel<<<blocks_for(n + 1), kBlock, 0, res.stream>>>(keys.as<int32_t>(), m, n, row_ptr_.as<int64_t>());
      GPUML_CUDA_CHECK_LAUNCH();
    }
    if (m > 0) {
      gather_edges_kernel<T><<<blocks_for(m), kBlock, 0, res.stream>>>(order.as<int64_t>(), src, new_of.as<int32_t>(),
                                                                         weights, m, col_.as<int32_t>(),
                                                                         weighted_ ? val_.as<T>() : nullptr);
      GPUML_CUDA_CHECK_LAUNCH();
    }

    // 3. Inverse (weighted) out-degrees in the new numbering, and the number of dangling vertices.
    inv_out_ = device(n * sizeof(T));
    Buffer dangling = device(sizeof(unsigned long long));
    GPUML_CUDA_CHECK(cudaMemsetAsync(dangling.data(), 0, sizeof(unsigned long long), res.stream));
    if (!weighted_) {
      inverse_count_kernel<T><<<blocks_for(n), kBlock, 0, res.stream>>>(sorted_counts.as<unsigned long long>(), n,
                                                                          inv_out_.as<T>(), dangling.as<unsigned long long>());
      GPUML_CUDA_CHECK_LAUNCH();
    } else {
      Buffer out_ptr = device((n + 1) * sizeof(int64_t));
      {
        Buffer keys = sort_by(src, nullptr, m, key_bits, order, res);
        offsets_kernel<<<blocks_for(n + 1), kBlock, 0, res.stream>>>(keys.as<int32_t>(), m, n, out_ptr.as<int64_t>());
        GPUML_CUDA_CHECK_LAUNCH();
      }
      Buffer inv_by_id = device(n * sizeof(T));
      inverse_weighted_kernel<T><<<blocks_for(n), kBlock, 0, res.stream>>>(
          out_ptr.as<int64_t>(), order.as<int64_t>(), weights, n, inv_by_id.as<T>(), dangling.as<unsigned long long>());
      GPUML_CUDA_CHECK_LAUNCH();
      permute_kernel<T><<<blocks_for(n), kBlock, 0, res.stream>>>(inv_by_id.as<T>(), old_of_new_.as<int32_t>(), n, true,
                                                                  inv_out_.as<T>());
      GPUML_CUDA_CHECK_LAUNCH();
    }

    // 4. The tiles.
    {
      Buffer counts = device((n + 1) * sizeof(int32_t));
      Buffer offsets = device((n + 1) * sizeof(int32_t));
      tile_counts_kernel<<<blocks_for(n + 1), kBlock, 0, res.stream>>>(row_ptr_.as<int64_t>(), n, counts.as<int32_t>());
      GPUML_CUDA_CHECK_LAUNCH();
      std::size_t temp_bytes = 0;
      GPUML_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(nullptr, temp_bytes, counts.as<int32_t>(), offsets.as<int32_t>(), n + 1,
                                                     res.stream));
      Buffer temp = device(temp_bytes);
      GPUML_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(temp.data(), temp_bytes, counts.as<int32_t>(), offsets.as<int32_t>(),
                                                     n + 1, res.stream));
      int32_t tiles = 0;
      res.copy_to_host(&tiles, offsets.as<int32_t>() + n, sizeof(int32_t));
      tiles_ = tiles;
      tile_row_ = device((tiles_ + 1) * sizeof(int32_t));
      tile_piece_ = device(std::max<int64_t>(tiles_, 1) * sizeof(int32_t));
      const int32_t end_row = static_cast<int32_t>(n);
      res.copy_to_device(tile_row_.as<int32_t>() + tiles_, &end_row, sizeof(int32_t));
      tile_scatter_kernel<<<blocks_for(n), kBlock, 0, res.stream>>>(row_ptr_.as<int64_t>(), counts.as<int32_t>(),
                                                                    offsets.as<int32_t>(), n, tile_row_.as<int32_t>(),
                                                                    tile_piece_.as<int32_t>());
      GPUML_CUDA_CHECK_LAUNCH();
    }
    unsigned long long n_dangling = 0;
    res.copy_to_host(&n_dangling, dangling.data(), sizeof(n_dangling));

    // 5. Iteration scratch.
    chunks_ = ceil_div(n, kChunk);
    y_[0] = device(n * sizeof(T));
    y_[1] = device(n * sizeof(T));
    partials_ = device(chunks_ * sizeof(double));
    piece_sums_ = device(std::max<int64_t>(tiles_, 1) * sizeof(double));
    changes_ = device(std::max<int64_t>(tiles_, 1) * sizeof(double));
    masses_ = device(std::max<int64_t>(tiles_, 1) * sizeof(double));
    counters_ = device(std::max<int64_t>(tiles_, 1) * sizeof(int));
    GPUML_CUDA_CHECK(cudaMemsetAsync(counters_.data(), 0, std::max<int64_t>(tiles_, 1) * sizeof(int), res.stream));
    tile_partials_ = device(2 * ceil_div(std::max<int64_t>(tiles_, 1), kTileSumsChunk) * sizeof(double));
    scalars_ = device(3 * sizeof(double));
    current_ = 0;
    prepared_for_ = nullptr;
    GPUML_CUDA_CHECK(cudaStreamSynchronize(res.stream));  // the temporaries above die with this call
    return static_cast<int64_t>(n_dangling);
  }

  void to_backend_order(T* v) override { permute(v, true); }
  void to_vertex_order(T* v) override { permute(v, false); }

  // The SpMV also leaves the next iteration's y and dangling mass (from x_new), so a call whose x is
  // the previous call's x_new (the driver's loop) skips step 1.
  double iterate(const T* x, T* x_new, const T* p, const T* dangling, double alpha) override {
    cuda::Resources& res = cuda::activate(ctx_);
    const int64_t n = n_;
    double* scalars = scalars_.as<double>();  // dangling mass for y_[0], for y_[1], the change
    T* y = y_[current_].template as<T>();
    T* y_next = y_[1 - current_].template as<T>();
    if (x != prepared_for_) {
      prepare_kernel<T><<<static_cast<unsigned>(chunks_), kBlock, 0, res.stream>>>(x, inv_out_.as<T>(), n, y,
                                                                                    partials_.as<double>());
      GPUML_CUDA_CHECK_LAUNCH();
      finish_kernel<<<1, kBlock, 0, res.stream>>>(partials_.as<double>(), chunks_, scalars + current_);
      GPUML_CUDA_CHECK_LAUNCH();
    }
    IterateArgs a{row_ptr_.as<int64_t>(), col_.as<int32_t>(), tile_row_.as<int32_t>(), tile_piece_.as<int32_t>(), tiles_,
                  alpha, 1.0 / static_cast<double>(n), scalars + current_, hot_vertices()};
    const T* val = weighted_ ? val_.as<T>() : nullptr;
    // One block per SM (the hot ranks fill its shared memory), kSubBlocks tiles at a time.
    const unsigned grid = static_cast<unsigned>(std::max<int64_t>(1, std::min<int64_t>(ceil_div(tiles_, kSubBlocks), res.sm_count)));
    const std::size_t shared = static_cast<std::size_t>(tile_shared_bytes<T>() + a.hot * static_cast<int64_t>(sizeof(T)));
    if (!kernel_configured_) {
      GPUML_CUDA_CHECK(cudaFuncSetAttribute(tiles_kernel<T>, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(shared)));
      kernel_configured_ = true;
    }
    tiles_kernel<T><<<grid, kBlock * kSubBlocks, shared, res.stream>>>(a, val, y, x, p, dangling, inv_out_.as<T>(), x_new, y_next,
                                                                     piece_sums_.as<double>(), changes_.as<double>(),
                                                                     masses_.as<double>(), counters_.as<int>());
    GPUML_CUDA_CHECK_LAUNCH();
    const int64_t sum_blocks = ceil_div(tiles_, kTileSumsChunk);
    tile_sums_kernel<<<static_cast<unsigned>(sum_blocks), kBlock, 0, res.stream>>>(changes_.as<double>(), masses_.as<double>(),
                                                                                  tiles_, tile_partials_.as<double>());
    GPUML_CUDA_CHECK_LAUNCH();
    finish_pairs_kernel<<<1, kBlock, 0, res.stream>>>(tile_partials_.as<double>(), sum_blocks, scalars + 2,
                                                      scalars + (1 - current_));
    GPUML_CUDA_CHECK_LAUNCH();
    double host_err = 0.0;
    res.copy_to_host(&host_err, scalars + 2, sizeof(double));
    current_ = 1 - current_;
    prepared_for_ = x_new;
    return host_err;
  }

 private:
  Buffer device(std::size_t bytes) { return Buffer(ctx_, std::max<std::size_t>(bytes, 1)); }

  void permute(T* v, bool to_new) {
    cuda::Resources& res = cuda::activate(ctx_);
    Buffer moved = device(n_ * sizeof(T));
    permute_kernel<T><<<blocks_for(n_), kBlock, 0, res.stream>>>(v, old_of_new_.as<int32_t>(), n_, to_new, moved.as<T>());
    GPUML_CUDA_CHECK_LAUNCH();
    GPUML_CUDA_CHECK(cudaMemcpyAsync(v, moved.data(), n_ * sizeof(T), cudaMemcpyDeviceToDevice, res.stream));
    prepared_for_ = nullptr;
  }

  // order = the edge indices 0..m-1 stably sorted by keys (ids < 2^31, narrowed to int32 first,
  // or mapped through new_of); returns the sorted keys.
  Buffer sort_by(const int64_t* keys, const int32_t* new_of, int64_t m, int key_bits, Buffer& order, cuda::Resources& res) {
    Buffer sorted = device(m * sizeof(int32_t));
    if (m == 0) return sorted;
    Buffer narrow = device(m * sizeof(int32_t));
    Buffer ids = device(m * sizeof(int64_t));
    narrow_kernel<<<blocks_for(m), kBlock, 0, res.stream>>>(keys, new_of, narrow.as<int32_t>(), m);
    GPUML_CUDA_CHECK_LAUNCH();
    iota_kernel<<<blocks_for(m), kBlock, 0, res.stream>>>(ids.as<int64_t>(), m);
    GPUML_CUDA_CHECK_LAUNCH();
    std::size_t temp_bytes = 0;
    GPUML_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, temp_bytes, narrow.as<int32_t>(), sorted.as<int32_t>(),
                                                     ids.as<int64_t>(), order.as<int64_t>(), m, 0, key_bits, res.stream));
    Buffer temp = device(temp_bytes);
    GPUML_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(temp.data(), temp_bytes, narrow.as<int32_t>(), sorted.as<int32_t>(),
                                                     ids.as<int64_t>(), order.as<int64_t>(), m, 0, key_bits, res.stream));
    return sorted;
  }

  // How many hot ranks the SpMV keeps in shared memory: kHotBytes of them (GPUML_PAGERANK_HOT, a
  // vertex count, for tuning), at most what fits next to the tiles' buffers. Measured on an
  // H200 (R-MAT float32, ms per iteration at scales 22 / 24 / 25): 16k floats 0.453 / 2.20 / 4.53,
  // 24k 0.452 / 2.18 / 4.56, 8k 0.463 / 2.22 / 4.62, none 0.472 at 22, all that fit (~40k)
  // 0.509 / 3.25 / 7.85 (L1, which the gathers of the other vertices need, shrinks to ~30 kB;
  // the SpMV kernel of 256-thread blocks without the cache: 0.495 / 2.19 / 4.61).
  static constexpr int64_t kHotBytes = 64 * 1024;
  int64_t hot_vertices() {
    if (hot_ < 0) {
      int device = 0, optin = 0;
      GPUML_CUDA_CHECK(cudaGetDevice(&device));
      GPUML_CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
      const int64_t fit = std::max<int64_t>(0, (optin - tile_shared_bytes<T>()) / static_cast<int64_t>(sizeof(T)));
      int64_t want = kHotBytes / static_cast<int64_t>(sizeof(T));
      if (const char* v = std::getenv("GPUML_PAGERANK_HOT")) want = std::max<long long>(0, std::atoll(v));
      hot_ = std::min({n_, fit, want});
    }
    return hot_;
  }

  Context ctx_;
  int64_t n_ = 0, m_ = 0, chunks_ = 0, tiles_ = 0;
  bool weighted_ = false;
  int current_ = 0;                 // y_[current_] holds x * inv for the next call's x
  int64_t hot_ = -1;                 // hot_vertices(), once known
  bool kernel_configured_ = false;   // tiles_kernel's shared memory limit set
  const T* prepared_for_ = nullptr;  // ... when that x is this (the last call's x_new)
  Buffer old_of_new_;  // the backend's numbering: old_of_new_[new id] = vertex id
  Buffer row_ptr_, col_, val_, inv_out_, tile_row_, tile_piece_, partials_, piece_sums_, changes_, masses_, counters_, tile_partials_, scalars_;
  Buffer y_[2];
};

}  // namespace

template <typename T>
std::unique_ptr<PageRankBackend<T>> make_pagerank_cuda_backend(const Context& ctx) {
  return std::make_unique<CudaPageRankBackend<T>>(ctx);
}

template std::unique_ptr<PageRankBackend<float>> make_pagerank_cuda_backend<float>(const Context&);
template std::unique_ptr<PageRankBackend<double>> make_pagerank_cuda_backend<double>(const Context&);

}  // namespace gpuml::detail

// The CUDA backend of PageRank (src/graph/pagerank_backend.hpp): propagation blocking.
//
// Why not a pull SpMV: gathering x[j] / outdeg[j] for every in-edge is one random 4-byte read
// per edge, each its own 32-byte sector; on R-MAT scale 22 that kernel was bound by L2 traffic at
// 0.41-0.45 ms per iteration (benchmarks/NOTES.md). Here every edge's data is streamed instead:
//
// build: the vertices are cut into ranges of consecutive ids, each at most kRangeWidth wide (its
// sums fit in shared memory) and holding about the same in-edges + out-edges (a block's work; a
// hub's out-edges are no block's).
// The edges are grouped by (range of the source c, range of the destination b), region (c, b),
// and sorted by destination within a region, stably. Each region is padded to whole pieces of
// kWarp slots (one warp's round) and stored twice over: the sources' offsets in their range
// (uint16) in source-range-major order, where a range's out-edges are one contiguous stream, and
// the destinations' offsets in destination-range-major order, where its in-edges are one. A piece
// of the first order knows where it lies in the second.
//
// hubs: the sources of most out-edges (R-MAT's top 16384 by out-degree send 42% of the edges at
// scale 22) skip the regions. Their y values (kHubBytes of them) are copied into every block's
// shared memory each iteration, and their out-edges are kept only destination-major, per range as
// (hub, destination offset) pairs: 4 bytes per edge slot instead of 12, and no scattered writes.
//
// iterate: one kernel, one block per range b:
//   1. the range's in-edges (a stream) add their terms (w_e x[j] / outdeg[j], written by the
//      previous iteration, or for a hub j, w_e times its y in shared memory) to the range's sums
//      in shared memory, as exact fixed-point integers (integer atomics, one per run of a
//      destination within a lane): the sums do not depend on the order of the adds, so results
//      are deterministic, and a hub's edge gives the same bits as a region's;
//   2. x_new over the range, with the range's sums of |x_new - x| and of the new dangling mass,
//      and y = x_new / outdeg kept in shared memory (and written out for the range's hubs);
//   3. the range's out-edges (a stream) write their terms y[src] * w_e for the next iteration,
//      each piece a whole 128-byte segment at its place in destination order.
// Then one block adds the ranges' partial sums in order. Per edge slot and iteration: the term
// written and read and two uint16 offsets (12 bytes for float32), or for a hub's edge two uint16
// offsets (4 bytes), all in whole segments.
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_reduce.cuh>
#include <cub/device/device_scan.cuh>
#include <cuda/std/functional>

#include <algorithm>
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

unsigned blocks_for(int64_t threads) { return cuda::grid_for(threads, kBlock, kMaxBlocks); }

// The fixed-point sums of a range, exact so that the order of the adds cannot matter: every term
// is a share of one vertex's rank (<= 1), and every sum is at most the total rank (1).
// - float32 terms are rounded to units of 2^-52 (a vertex of in-degree d is off by at most
//   d 2^-53, below float32's resolution of a rank >= d 2^-29) and summed in 64 bits kept as two
//   32-bit words, the low word's carry added to the high one: shared memory has 32-bit atomic
//   adds, while a 64-bit one is a compare-and-swap loop (measured: 0.56 against 0.69 ms per
//   iteration at R-MAT scale 22).
// - float64 terms are split into units of 2^-61 and a remainder in units of 2^-93, and summed as
//   one 96-bit integer in three 32-bit words, each word's carry added to the next: the same 32-bit
//   atomics (two 64-bit compare-and-swap loops per add ran float64 iterations at 6 times float32's).
template <typename T> constexpr double kUnit = sizeof(T) == 4 ? 0x1p52 : 0x1p61;
constexpr double kRemainderUnit = 0x1p32;
template <typename T> constexpr int kWords = sizeof(T) == 4 ? 2 : 3;  // 32-bit words per vertex
constexpr int64_t kAccumulatorBytes = 128 * 1024;  // 224 kB (wider ranges, longer regions) measured slower
// Vertices per range: the sums fill kAccumulatorBytes; offsets within a range fit in uint16.
template <typename T> constexpr int64_t kRangeWidth = kAccumulatorBytes / (4 * kWords<T>);
static_assert(kRangeWidth<float> < 0xFFFF && kRangeWidth<double> < 0xFFFF, "offsets are uint16, 0xFFFF marks padding");
// The build's sort keys: (region << kOffsetBits) + the destination's offset in its range. Two bits
// fewer than 16 saved a radix pass at R-MAT scale 22 (32 key bits, not 34).
constexpr int kOffsetBits = 14;
constexpr unsigned long long kOffsetMask = (1ull << kOffsetBits) - 1;
static_assert(kRangeWidth<float> <= (1 << kOffsetBits) && kRangeWidth<double> <= (1 << kOffsetBits), "offsets fit the keys");

constexpr int kThreads = 1024;  // per block of the iteration kernel: one per SM (two of 512 threads measured no faster)
// Work ranges hold about total work / (kRangesPerSm * SMs), and those wider than kRangeWidth are
// cut in equal parts: fewer, larger ranges make longer regions (the scattered writes of step 3 are
// whole regions), more balance the blocks. H200 with hubs, R-MAT scale 22 / 22 scrambled / 24 / 25,
// ms per iteration: 1: 0.297 / 0.282 / 1.21 / 2.62, 2: 0.276-0.282 / 0.270-0.272 / 1.13 / 2.25-2.30,
// 3: 0.283 / 0.252 / 1.08 / 2.27, 4: 0.289 / 0.280 / 1.06 / 2.24.
constexpr int kRangesPerSm = 3;
constexpr uint16_t kNoVertex = 0xFFFF;  // the destination offset of a padding slot (> any offset)
// Hubs: at most kHubBytes of their y values (16384 float32 or 8192 float64: shared memory holds
// them beside the sums), and only vertices with at least kMinHubDegree out-edges. A hub costs
// every block a 4- or 8-byte read from L2 per iteration and saves 8 bytes of DRAM traffic per
// out-edge. GPUML_PAGERANK_HUBS (a count, 0 for none) lowers the limit, to measure the difference.
constexpr int64_t kHubBytes = 64 * 1024;
template <typename T> constexpr int64_t kMaxHubs = kHubBytes / static_cast<int64_t>(sizeof(T));
static_assert(kMaxHubs<float> < 0xFFFF, "hub indices are uint16");
constexpr unsigned long long kMinHubDegree = 64;

// Adds a sum of terms, in fixed point (whole units and, for float64, the remainder), to vertex
// `to` of the range's sums.
// The words: float32 [low words | high words]; float64 [(lowest, middle) pairs | highest words],
// so that a vertex's y (written over its sums in step 2) covers only its own words.
template <typename T>
__device__ __forceinline__ void add_fixed(unsigned long long* sums, int to, long long whole, long long rest) {
  if (to == kNoVertex) return;
  unsigned* words = reinterpret_cast<unsigned*>(sums);
  const unsigned long long w = static_cast<unsigned long long>(whole);
  if constexpr (sizeof(T) == 4) {
    const unsigned low = static_cast<unsigned>(w), high = static_cast<unsigned>(w >> 32);
    const unsigned old = atomicAdd(words + to, low);
    const unsigned carry = old + low < old ? 1u : 0u;
    if (high + carry != 0u) atomicAdd(words + kRangeWidth<T> + to, high + carry);
  } else {
    // whole 2^32 + rest (rest < 2^35: a lane's run of at most 4 remainders) as three words.
    const unsigned long long r = static_cast<unsigned long long>(rest);
    const unsigned long long mid = (w & 0xFFFFFFFFull) + (r >> 32);
    const unsigned lowest = static_cast<unsigned>(r);
    unsigned highest = static_cast<unsigned>(w >> 32) + static_cast<unsigned>(mid >> 32);
    unsigned long long middle = mid & 0xFFFFFFFFull;
    if (lowest != 0u) {
      const unsigned old = atomicAdd(words + 2 * to, lowest);
      middle += old + lowest < old ? 1u : 0u;
    }
    highest += static_cast<unsigned>(middle >> 32);  // middle <= 2^32
    const unsigned middle_word = static_cast<unsigned>(middle);
    if (middle_word != 0u) {
      const unsigned old = atomicAdd(words + 2 * to + 1, middle_word);
      highest += old + middle_word < old ? 1u : 0u;
    }
    if (highest != 0u) atomicAdd(words + 2 * kRangeWidth<T> + to, highest);
  }
}

// Four consecutive slots' values and offsets in registers (16-byte and 8-byte streaming loads,
// 16-byte stores). Vector types, not arrays reinterpreted: those went to local memory.
__device__ __forceinline__ void load4(const float* p, float (&out)[4]) {
  const float4 v = __ldcs(reinterpret_cast<const float4*>(p));
  out[0] = v.x, out[1] = v.y, out[2] = v.z, out[3] = v.w;
}
__device__ __forceinline__ void load4(const double* p, double (&out)[4]) {
  const double2 u = __ldcs(reinterpret_cast<const double2*>(p)), v = __ldcs(reinterpret_cast<const double2*>(p) + 1);
  out[0] = u.x, out[1] = u.y, out[2] = v.x, out[3] = v.y;
}
__device__ __forceinline__ void store4(float* p, const float (&in)[4]) {
  *reinterpret_cast<float4*>(p) = make_float4(in[0], in[1], in[2], in[3]);
}
__device__ __forceinline__ void store4(double* p, const double (&in)[4]) {
  reinterpret_cast<double2*>(p)[0] = make_double2(in[0], in[1]);
  reinterpret_cast<double2*>(p)[1] = make_double2(in[2], in[3]);
}
// Four uint16 offsets stay packed in a uint2 until used (registers are the limit at 1024 threads).
__device__ __forceinline__ uint2 load4(const uint16_t* p) { return __ldcs(reinterpret_cast<const uint2*>(p)); }
__device__ __forceinline__ int offset_at(uint2 packed, int j) {  // j: a compile-time constant after unrolling
  return static_cast<int>(((j < 2 ? packed.x : packed.y) >> (16 * (j % 2))) & 0xFFFFu);
}

// Adds a lane's consecutive slots of a piece (sorted by destination, padding last): equal
// destinations are summed first, so a hub's in-edges cost an atomic per lane, not per edge.
template <typename T, int kSlots = 4>
__device__ __forceinline__ void add_slots(unsigned long long* sums, uint2 to, const T (&term)[kSlots]) {
  int key = offset_at(to, 0);
  long long whole = 0, rest = 0;
#pragma unroll
  for (int j = 0; j < kSlots; ++j) {
    long long w = 0, r = 0;
    if constexpr (sizeof(T) == 4) {
      w = __float2ll_rn(term[j] * static_cast<float>(kUnit<T>));  // exact product: a power of two
    } else {
      const double scaled = term[j] * kUnit<T>;
      w = __double2ll_rd(scaled);
      r = __double2ll_rn((scaled - static_cast<double>(w)) * kRemainderUnit);
    }
    if (offset_at(to, j) != key) {
      add_fixed<T>(sums, key, whole, rest);
      key = offset_at(to, j);
      whole = 0;
      rest = 0;
    }
    whole += w;
    rest += r;
  }
  add_fixed<T>(sums, key, whole, rest);
}

template <typename T>
__device__ __forceinline__ double sum_of(const unsigned long long* sums, int v) {
  const unsigned* words = reinterpret_cast<const unsigned*>(sums);
  if constexpr (sizeof(T) == 4) {
    return static_cast<double>((static_cast<unsigned long long>(words[kRangeWidth<T> + v]) << 32) | words[v]) / kUnit<T>;
  } else {
    const unsigned long long high = (static_cast<unsigned long long>(words[2 * kRangeWidth<T> + v]) << 32) | words[2 * v + 1];
    return static_cast<double>(high) / kUnit<T> + static_cast<double>(words[2 * v]) / (kUnit<T> * kRemainderUnit);
  }
}

// Fixed-order sum over the kThreads threads of a block (scratch: kWarp doubles); valid in thread 0.
__device__ inline double block_total(double v, double* scratch) {
  const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
  for (int offset = kWarp / 2; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  double total = 0.0;
  if (warp == 0) {
    total = lane < kThreads / kWarp ? scratch[lane] : 0.0;
    for (int offset = kWarp / 2; offset > 0; offset /= 2) total += __shfl_down_sync(0xffffffffu, total, offset);
  }
  __syncthreads();
  return total;
}

// ---- build kernels ----------------------------------------------------------------------------

// counts[id] += the edges with that id. Equal ids of a warp's 32 edges are added once: R-MAT's
// popular vertices made same-address atomics this kernel's cost (1.6 ms a call at scale 22).
__global__ void count_kernel(const int64_t* __restrict__ ids, int64_t m, unsigned long long* __restrict__ counts) {
  const int lane = threadIdx.x % kWarp;
  for (int64_t base = global_thread() - lane; base < m; base += grid_threads()) {  // warp-uniform: every lane matches
    const int64_t e = base + lane;
    const long long id = e < m ? ids[e] : -1;
    const unsigned peers = __match_any_sync(0xffffffffu, id);
    if (id >= 0 && lane == __ffs(peers) - 1) atomicAdd(counts + id, static_cast<unsigned long long>(__popc(peers)));
  }
}

// work[v] = in-degree + out-degree (none for a hub) + 1: a vertex's share of a block's iteration work.
__global__ void work_kernel(const unsigned long long* __restrict__ in, const unsigned long long* __restrict__ out,
                            const int32_t* __restrict__ hub_of, int64_t n, unsigned long long* __restrict__ work) {
  for (int64_t v = global_thread(); v < n; v += grid_threads()) work[v] = in[v] + (hub_of[v] < 0 ? out[v] : 0) + 1;
}

// hub_of[hub_vertex[h]] = h (hub_of is -1 elsewhere).
__global__ void hub_of_kernel(const int64_t* __restrict__ hub_vertex, int64_t hubs, int32_t* __restrict__ hub_of) {
  for (int64_t h = global_thread(); h < hubs; h += grid_threads()) hub_of[hub_vertex[h]] = static_cast<int32_t>(h);
}

// hub_first[r] = the first hub h with hub_vertex[h] >= first[r], r in [0, ranges]: range r's hubs.
__global__ void hub_first_kernel(const int64_t* __restrict__ hub_vertex, int64_t hubs, const int32_t* __restrict__ first,
                                 int64_t ranges, int32_t* __restrict__ hub_first) {
  for (int64_t r = global_thread(); r <= ranges; r += grid_threads()) {
    int64_t lo = 0, hi = hubs;
    while (lo < hi) {
      const int64_t mid = lo + (hi - lo) / 2;
      if (hub_vertex[mid] < first[r])
        lo = mid + 1;
      else
        hi = mid;
    }
    hub_first[r] = static_cast<int32_t>(lo);
  }
}

// starts[v] = 1 where a work range starts: at vertex 0, and where the work before v crosses a
// multiple of target (before[v] = the work of vertices < v).
__global__ void work_starts_kernel(const unsigned long long* __restrict__ before, int64_t n, unsigned long long target,
                                   int32_t* __restrict__ starts) {
  for (int64_t v = global_thread(); v < n; v += grid_threads())
    starts[v] = v == 0 || before[v] / target != before[v - 1] / target ? 1 : 0;
}

// starts[v] = 1 where a range starts: a work range wider than width (work range r is vertices
// [first[r], first[r + 1]), v's is work_of[v]) is cut into the fewest equal parts that fit.
__global__ void split_starts_kernel(const int32_t* __restrict__ work_of, const int32_t* __restrict__ first, int64_t n,
                                    int64_t width, int32_t* __restrict__ starts) {
  for (int64_t v = global_thread(); v < n; v += grid_threads()) {
    const int64_t s = first[work_of[v]], len = first[work_of[v] + 1] - s, parts = ceil_div(len, width);
    starts[v] = v == s || (v - s) * parts / len != (v - 1 - s) * parts / len ? 1 : 0;
  }
}

// With index = the inclusive scan of starts: range_of[v] = index[v] - 1, and first[r] = the first
// vertex of range r (first[count] = n, written by the caller).
__global__ void range_of_kernel(const int32_t* __restrict__ starts, const int32_t* __restrict__ index, int64_t n,
                                int32_t* __restrict__ range_of, int32_t* __restrict__ first) {
  for (int64_t v = global_thread(); v < n; v += grid_threads()) {
    range_of[v] = index[v] - 1;
    if (starts[v]) first[index[v] - 1] = static_cast<int32_t>(v);
  }
}

// keys[e] = (region << kOffsetBits) + the destination's offset in its range, the region being range of
// src * ranges + range of dst (source-range major): edges sorted by region, and by destination
// within a region (add_slots needs that). A hub's edge takes region ranges^2 + range of dst: the
// hubs' edges sort last, by destination.
// Also src_offset[e] = the source's offset in its range, or for a hub's edge its hub index, for
// the placing kernels, which would otherwise gather src, range_of and hub_of again at random.
// K: unsigned long long, or uint32_t where every key fits 32 bits.
template <typename K>
__global__ void region_keykernel(const int64_t* __restrict__ src, const int64_t* __restrict__ dst,
                                  const int32_t* __restrict__ range_of, const int32_t* __restrict__ first,
                                  const int32_t* __restrict__ hub_of, int64_t m, unsigned long long ranges,
                                  K* __restrict__ keys, uint16_t* __restrict__ src_offset) {
  for (int64_t e = global_thread(); e < m; e += grid_threads()) {
    const int64_t s = src[e], d = dst[e];
    const int32_t to = range_of[d];
    const bool hub = hub_of[s] >= 0;
    const int32_t source_range = hub ? 0 : range_of[s];
    const unsigned long long from = hub ? ranges : static_cast<unsigned long long>(source_range);
    const unsigned long long region = from * ranges + to;
    keys[e] = static_cast<K>((region << kOffsetBits) + static_cast<unsigned long long>(d - first[to]));
    src_offset[e] = static_cast<uint16_t>(hub ? hub_of[s] : s - first[source_range]);
  }
}

// low[e] = sorted[e]'s low kOffsetBits bits: edge e's destination offset in its range (the sort's order).
template <typename K>
__global__ void low_bits_kernel(const K* __restrict__ sorted, int64_t count, uint16_t* __restrict__ low) {
  for (int64_t e = global_thread(); e < count; e += grid_threads()) low[e] = static_cast<uint16_t>(sorted[e] & kOffsetMask);
}

__global__ void vertex_key_kernel(const int64_t* __restrict__ ids, int64_t m, unsigned long long* __restrict__ keys) {
  for (int64_t e = global_thread(); e < m; e += grid_threads()) keys[e] = static_cast<unsigned long long>(ids[e]);
}

template <typename V>
__global__ void iota_kernel(V* __restrict__ out, int64_t n) {
  for (int64_t i = global_thread(); i < n; i += grid_threads()) out[i] = static_cast<V>(i);
}

// The first i with sorted[i] >= key (len when none).
template <typename K>
__device__ int64_t lower_bound_of(const K* __restrict__ sorted, int64_t len, unsigned long long key) {
  int64_t lo = 0, hi = len;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (sorted[mid] < key)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

// bounds[k] = first i with sorted[i] >= offset + k * step, for k in [0, count]: where each key run starts.
template <typename K>
__global__ void lower_bounds_kernel(const K* __restrict__ sorted, int64_t len, unsigned long long offset,
                                    unsigned long long step, int64_t count, int64_t* __restrict__ bounds) {
  for (int64_t k = global_thread(); k <= count; k += grid_threads())
    bounds[k] = lower_bound_of(sorted, len, offset + static_cast<unsigned long long>(k) * step);
}

// bounds[k] = first i with sorted[i] >= keys[k], for k in [0, count].
__global__ void lower_bounds_of_kernel(const unsigned long long* __restrict__ sorted, int64_t len,
                                       const int64_t* __restrict__ keys, int64_t count, int64_t* __restrict__ bounds) {
  for (int64_t k = global_thread(); k <= count; k += grid_threads())
    bounds[k] = lower_bound_of(sorted, len, static_cast<unsigned long long>(keys[k]));
}

// starts[e] = 1 where a new region begins in the sorted keys.
template <typename K>
__global__ void run_starts_kernel(const K* __restrict__ sorted, int64_t m, int32_t* __restrict__ starts) {
  for (int64_t e = global_thread(); e < m; e += grid_threads())
    starts[e] = e == 0 || sorted[e] >> kOffsetBits != sorted[e - 1] >> kOffsetBits ? 1 : 0;
}

// For each region q (index = inclusive scan of starts): its first edge, its key, and its key
// transposed to destination-range major (dst range * ranges + src range).
template <typename K>
__global__ void regions_kernel(const K* __restrict__ sorted, const int32_t* __restrict__ starts,
                               const int64_t* __restrict__ index, int64_t m, unsigned long long ranges,
                               int64_t* __restrict__ region_first, unsigned long long* __restrict__ key,
                               unsigned long long* __restrict__ by_dst_key) {
  for (int64_t e = global_thread(); e < m; e += grid_threads()) {
    if (!starts[e]) continue;
    const int64_t q = index[e] - 1;
    const unsigned long long region = static_cast<unsigned long long>(sorted[e]) >> kOffsetBits;
    region_first[q] = e;
    key[q] = region;
    by_dst_key[q] = (region % ranges) * ranges + region / ranges;
  }
}

// pieces[q] = region q's edges in whole pieces of kWarp slots.
__global__ void piece_counts_kernel(const int64_t* __restrict__ region_first, int64_t regions, int64_t* __restrict__ pieces) {
  for (int64_t q = global_thread(); q < regions; q += grid_threads())
    pieces[q] = ceil_div(region_first[q + 1] - region_first[q], kWarp);
}

// out[k] = values[at[k]] (gather), or out[at[k]] = values[k] (scatter).
__global__ void gather_kernel(const int64_t* __restrict__ values, const int64_t* __restrict__ at, int64_t count,
                              int64_t* __restrict__ out) {
  for (int64_t k = global_thread(); k < count; k += grid_threads()) out[k] = values[at[k]];
}
__global__ void scatter_kernel(const int64_t* __restrict__ values, const int64_t* __restrict__ at, int64_t count,
                               int64_t* __restrict__ out) {
  for (int64_t k = global_thread(); k < count; k += grid_threads()) out[at[k]] = values[k];
}

// position[p] = where source-major piece p lies in destination-major order (region q's pieces
// start at piece src_major[q] and dst_major[q] in the two orders).
__global__ void piece_positions_kernel(const int64_t* __restrict__ src_major, const int64_t* __restrict__ dst_major,
                                       int64_t regions, int64_t* __restrict__ position) {
  for (int64_t q = global_thread(); q < regions; q += grid_threads())
    for (int64_t k = 0; k < src_major[q + 1] - src_major[q]; ++k) position[src_major[q] + k] = dst_major[q] + k;
}

// Edge e of the sorted order (region index[e] - 1) into its slot in both orders: its source's
// offset (edge_src_offset, by input edge) and weight source-major, its destination's offset
// (sorted_dst_offset, by sorted position) destination-major.
template <typename T, typename V>
__global__ void place_edges_kernel(const V* __restrict__ order, const int64_t* __restrict__ index,
                                   const int64_t* __restrict__ region_first, const int64_t* __restrict__ src_major,
                                   const int64_t* __restrict__ dst_major, const uint16_t* __restrict__ edge_src_offset,
                                   const uint16_t* __restrict__ sorted_dst_offset, const T* __restrict__ weights, int64_t m,
                                   uint16_t* __restrict__ src_offset, uint16_t* __restrict__ dst_offset, T* __restrict__ val) {
  for (int64_t e = global_thread(); e < m; e += grid_threads()) {
    const int64_t q = index[e] - 1, i = e - region_first[q], from = order[e];
    const int64_t slot = src_major[q] * kWarp + i;
    src_offset[slot] = edge_src_offset[from];
    if (weights != nullptr) val[slot] = weights[from];
    dst_offset[dst_major[q] * kWarp + i] = sorted_dst_offset[e];
  }
}

// The hubs' edges, sorted[e] for e in [hub_edges[0], hub_edges[ranges]) (by destination), into
// their slots: range r's are hub pieces [hub_pieces[r], hub_pieces[r + 1]).
template <typename T, typename K, typename V>
__global__ void place_hub_edges_kernel(const V* __restrict__ order, const K* __restrict__ sorted,
                                       const int64_t* __restrict__ hub_edges, const int64_t* __restrict__ hub_pieces,
                                       const uint16_t* __restrict__ edge_hub, const T* __restrict__ weights,
                                       unsigned long long ranges, int64_t begin,
                                       int64_t m, uint16_t* __restrict__ hub_index, uint16_t* __restrict__ dst_offset,
                                       T* __restrict__ val) {
  for (int64_t e = begin + global_thread(); e < m; e += grid_threads()) {
    const int64_t r = static_cast<int64_t>((static_cast<unsigned long long>(sorted[e]) >> kOffsetBits) - ranges * ranges);
    const int64_t from = order[e];
    const int64_t slot = hub_pieces[r] * kWarp + (e - hub_edges[r]);
    hub_index[slot] = edge_hub[from];
    dst_offset[slot] = static_cast<uint16_t>(sorted[e] & kOffsetMask);
    if (weights != nullptr) val[slot] = weights[from];
  }
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

// Weighted out-degrees, summed exactly so that any order of the edges gives the same bits: each of
// vertex v's weights w becomes the integer floor(w 2^(63 - e)), e the exponent of v's largest weight
// (below 2^64), and these are added in 128 bits (two words, the low word's wraps counted into the
// high one). A thread a vertex summing in input order took ~25 ms at R-MAT scale 22: its hubs have
// 10^5 out-edges. Weights are finite and >= 0 (checked before); zeros add nothing.
template <typename T>
__global__ void largest_weight_kernel(const int64_t* __restrict__ src, const T* __restrict__ weights, int64_t m,
                                      unsigned long long* __restrict__ largest) {
  for (int64_t e = global_thread(); e < m; e += grid_threads()) {
    const double w = static_cast<double>(weights[e]);
    if (w > 0.0) atomicMax(largest + src[e], static_cast<unsigned long long>(__double_as_longlong(w)));
  }
}

__device__ __forceinline__ int fixed_exponent(unsigned long long largest_bits) {
  return ilogb(__longlong_as_double(static_cast<long long>(largest_bits))) - 63;
}

template <typename T>
__global__ void fixed_sum_kernel(const int64_t* __restrict__ src, const T* __restrict__ weights, int64_t m,
                                 const unsigned long long* __restrict__ largest, unsigned long long* __restrict__ low,
                                 unsigned long long* __restrict__ high) {
  for (int64_t e = global_thread(); e < m; e += grid_threads()) {
    const double w = static_cast<double>(weights[e]);
    if (!(w > 0.0)) continue;
    const int64_t v = src[e];
    const auto units = static_cast<unsigned long long>(ldexp(w, -fixed_exponent(largest[v])));  // < 2^64, truncated
    const unsigned long long before = atomicAdd(low + v, units);
    if (before + units < before) atomicAdd(high + v, 1ull);
  }
}

__global__ void fixed_to_double_kernel(const unsigned long long* __restrict__ largest, const unsigned long long* __restrict__ low,
                                       const unsigned long long* __restrict__ high, int64_t n, double* __restrict__ sums) {
  for (int64_t v = global_thread(); v < n; v += grid_threads()) {
    const int e = largest[v] != 0 ? fixed_exponent(largest[v]) : 0;
    sums[v] = ldexp(static_cast<double>(high[v]), e + 64) + ldexp(static_cast<double>(low[v]), e);
  }
}

template <typename T>
__global__ void inverse_weighted_kernel(const double* __restrict__ sums, int64_t n, T* __restrict__ inv,
                                        unsigned long long* __restrict__ n_dangling) {
  for (int64_t v = global_thread(); v < n; v += grid_threads()) {
    const double s = sums[v];
    inv[v] = s > 0 ? static_cast<T>(1.0 / s) : T(0);
    if (!(s > 0)) atomicAdd(n_dangling, 1ull);
  }
}

// ---- the iteration ----------------------------------------------------------------------------

template <typename T>
__device__ __forceinline__ T combine(double s, int64_t i, const T* p, const T* dangling, const double* dsum, double alpha,
                                     double uniform) {
  const double pi = p != nullptr ? static_cast<double>(p[i]) : uniform;
  const double di = dangling != nullptr ? static_cast<double>(dangling[i]) : pi;
  return static_cast<T>(alpha * (s + *dsum * di) + (1.0 - alpha) * pi);
}

template <typename T>
struct IterateArgs {
  const int32_t* first;         // ranges + 1: each range's first vertex
  const int64_t* out_pieces;    // ranges + 1: range c's out-edges are source-major pieces [out_pieces[c], out_pieces[c + 1])
  const int64_t* in_pieces;     // ranges + 1: range b's in-edges are destination-major pieces [in_pieces[b], in_pieces[b + 1])
  const int64_t* position;      // per source-major piece: its place in destination-major order
  const uint16_t* src_offset;   // per source-major slot
  const uint16_t* dst_offset;   // per destination-major slot (kNoVertex: padding)
  const T* weight;              // per source-major slot, or nullptr
  const T* terms;               // per destination-major slot: this iteration's terms (from x)
  T* next_terms;                // ... the next iteration's (from x_new)
  const T* x;
  T* x_new;                     // nullptr: only write the terms of x and the dangling mass of x
  const T* p;
  const T* dangling;
  const T* inv;
  const double* dsum;           // the dangling mass of x
  double alpha, uniform;
  double* partials;             // 2 per range: sum |x_new - x|, the dangling mass of x_new (or x)
  // hubs
  int64_t hubs;
  const int64_t* hub_vertex;    // hubs, ascending
  const int32_t* hub_first;     // ranges + 1: range r's hubs are [hub_first[r], hub_first[r + 1])
  const int64_t* hub_pieces;    // ranges + 1: range b's in-edges from hubs are hub pieces [hub_pieces[b], hub_pieces[b + 1])
  const uint16_t* hub_index;    // per hub slot: its hub (0 for padding)
  const uint16_t* hub_dst_offset;  // per hub slot (kNoVertex: padding)
  const T* hub_weight;          // per hub slot, or nullptr
  const T* hub_y;               // the hubs' y of x
  T* next_hub_y;                // ... of x_new
};

// Step 1 over in-pieces [begin, end): a lane takes kSlotsIn consecutive slots of a piece, a warp
// kRoundsIn * kWarp / kLanesIn pieces at a time (the loads in flight bound this loop). Each slot's
// term is terms[slot], or for the hubs' pieces weight[slot] * hub_y[hub_index[slot]].
template <typename T, bool kFromHubs>
__device__ __forceinline__ void add_in_pieces(unsigned long long* sums, int64_t begin, int64_t end, const uint16_t* dst_offset,
                                              const T* terms, const uint16_t* hub_index, const T* weight, const T* hub_y) {
  // Fewer rounds for hubs and float64: registers are the limit at 1024 threads (float64 spilled at 4).
  constexpr int kSlotsIn = 4, kLanesIn = kWarp / kSlotsIn, kRoundsIn = kFromHubs || sizeof(T) == 8 ? 2 : 4;
  constexpr int kPiecesPerRound = kWarp / kLanesIn;
  constexpr int kWarps = kThreads / kWarp;
  const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
  for (int64_t base = begin + int64_t(warp) * kRoundsIn * kPiecesPerRound; base < end;
       base += int64_t(kWarps) * kRoundsIn * kPiecesPerRound) {
    uint2 to[kRoundsIn], hub[kRoundsIn];
    T term[kRoundsIn][kSlotsIn];
#pragma unroll
    for (int r = 0; r < kRoundsIn; ++r) {
      const int64_t piece = base + r * kPiecesPerRound + lane / kLanesIn;
      const int64_t slot = piece * kWarp + (lane % kLanesIn) * kSlotsIn;
      if (piece < end) {
        to[r] = load4(dst_offset + slot);
        const T* values = kFromHubs ? weight : terms;  // hubs: the weights, if any
        if (!kFromHubs || values != nullptr) load4(values + slot, term[r]);
        if constexpr (kFromHubs) hub[r] = load4(hub_index + slot);
      } else {
        to[r] = make_uint2(0xFFFFFFFFu, 0xFFFFFFFFu);  // kNoVertex
        hub[r] = make_uint2(0, 0);
#pragma unroll
        for (int j = 0; j < kSlotsIn; ++j) term[r][j] = T(0);
      }
    }
#pragma unroll
    for (int r = 0; r < kRoundsIn; ++r) {
      if constexpr (kFromHubs) {
#pragma unroll
        for (int j = 0; j < kSlotsIn; ++j)
          term[r][j] = weight != nullptr ? term[r][j] * hub_y[offset_at(hub[r], j)] : hub_y[offset_at(hub[r], j)];
      }
      add_slots<T>(sums, to[r], term[r]);
    }
  }
}

template <typename T>
__global__ void __launch_bounds__(kThreads, 1) iterate_kernel(IterateArgs<T> a) {
  extern __shared__ unsigned long long sums[];  // the range's fixed-point sums, then its y (as T); then the hubs' y
  __shared__ double scratch[kWarp];
  T* hub_y = reinterpret_cast<T*>(sums + kAccumulatorBytes / sizeof(unsigned long long));
  constexpr int kWarps = kThreads / kWarp;
  const int tid = threadIdx.x, lane = tid % kWarp, warp = tid / kWarp;
  const int64_t b = blockIdx.x;
  const int64_t begin = a.first[b];
  const int width = static_cast<int>(a.first[b + 1] - begin);
  double change = 0.0, mass = 0.0;
  if (a.x_new != nullptr) {
    for (int v = tid; v < kWords<T> * kRangeWidth<T>; v += kThreads) reinterpret_cast<unsigned*>(sums)[v] = 0u;
    for (int64_t h = tid; h < a.hubs; h += kThreads) hub_y[h] = a.hub_y[h];
    __syncthreads();
    // 1. The in-edges' terms, from the regions and from the hubs.
    add_in_pieces<T, false>(sums, a.in_pieces[b], a.in_pieces[b + 1], a.dst_offset, a.terms, nullptr, nullptr, nullptr);
    add_in_pieces<T, true>(sums, a.hub_pieces[b], a.hub_pieces[b + 1], a.hub_dst_offset, nullptr, a.hub_index, a.hub_weight,
                           hub_y);
    __syncthreads();
  }
  // 2. The range's x_new, and y for its out-edges: y[v] takes the place of vertex v's first sum
  //    word (a thread reads and writes only its own vertices' words).
  T* y_shared = reinterpret_cast<T*>(sums);
  for (int v = tid; v < width; v += kThreads) {
    const int64_t i = begin + v;
    T xv = a.x[i];
    if (a.x_new != nullptr) {
      const T updated = combine(sum_of<T>(sums, v), i, a.p, a.dangling, a.dsum, a.alpha, a.uniform);
      a.x_new[i] = updated;
      change += fabs(static_cast<double>(updated) - static_cast<double>(xv));
      xv = updated;
    }
    const T iv = a.inv[i];
    y_shared[v] = xv * iv;
    if (iv == T(0)) mass += static_cast<double>(xv);
  }
  __syncthreads();
  for (int64_t h = a.hub_first[b] + tid; h < a.hub_first[b + 1]; h += kThreads) a.next_hub_y[h] = y_shared[a.hub_vertex[h] - begin];
  // 3. The out-edges' terms for the next iteration, each piece to its place in destination order:
  //    a lane takes kSlotsOut consecutive slots of a piece (one 8-byte load of source offsets, one
  //    16-byte store of float32 terms: the lanes of a store fill whole sectors), a warp kWarp
  //    pieces at a time.
  constexpr int kSlotsOut = 4, kLanesOut = kWarp / kSlotsOut, kPiecesPerRound = kWarp / kLanesOut;
  constexpr int kRoundsOut = kWarp / kPiecesPerRound;  // a lane fetches one piece's position
  const int64_t end = a.out_pieces[b + 1];
  for (int64_t base = a.out_pieces[b] + int64_t(warp) * kWarp; base < end; base += int64_t(kWarps) * kWarp) {
    const int64_t place = base + lane < end ? __ldcs(a.position + base + lane) : 0;
    // float64: the rounds' offsets loaded in two batches (all eight at once spilled registers).
    constexpr int kBatchOut = sizeof(T) == 8 ? kRoundsOut / 2 : kRoundsOut;
#pragma unroll
    for (int r0 = 0; r0 < kRoundsOut; r0 += kBatchOut) {
      // Slots as 32-bit offsets from the round's first piece: fewer 64-bit values live.
      const int64_t first_slot = base * kWarp;
      const int lane_slot = (lane / kLanesOut) * kWarp + (lane % kLanesOut) * kSlotsOut;
      uint2 from[kBatchOut];
#pragma unroll
      for (int r = 0; r < kBatchOut; ++r) {
        const int within = (r0 + r) * kPiecesPerRound + lane / kLanesOut;
        from[r] = base + within < end ? load4(a.src_offset + first_slot + (r0 + r) * kPiecesPerRound * kWarp + lane_slot)
                                      : make_uint2(0, 0);
      }
#pragma unroll
      for (int r = 0; r < kBatchOut; ++r) {
        const int within = (r0 + r) * kPiecesPerRound + lane / kLanesOut;
        const int64_t to = __shfl_sync(0xffffffffu, place, within);
        if (base + within >= end) continue;
        const int64_t src_slot = first_slot + (r0 + r) * kPiecesPerRound * kWarp + lane_slot;
        const int64_t dst_slot = to * kWarp + (lane % kLanesOut) * kSlotsOut;
        T out[kSlotsOut];
#pragma unroll
        for (int j = 0; j < kSlotsOut; ++j) out[j] = y_shared[offset_at(from[r], j)];
        if (a.weight != nullptr) {
          T w[kSlotsOut];
          load4(a.weight + src_slot, w);
#pragma unroll
          for (int j = 0; j < kSlotsOut; ++j) out[j] = w[j] * out[j];
        }
        store4(a.next_terms + dst_slot, out);
      }
    }
  }
  const double total_change = block_total(change, scratch);
  const double total_mass = block_total(mass, scratch);
  if (tid == 0) {
    a.partials[2 * b] = total_change;
    a.partials[2 * b + 1] = total_mass;
  }
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

// ---- The distributed driver's primitives (out_degrees, group_by_range, build_range, iterate_range) ----
// Everything stays on the GPU (the driver's collectives are NCCL's on device memory). A rank's
// rows [first, first + count): a CSR of their in-edges by destination, stably sorted (so each row
// sums in the union's edge order, as the CPU backend does), one warp per row.

template <typename T>
__global__ void range_inverse_kernel(const double* __restrict__ out_degree, int64_t n, T* __restrict__ inv) {
  for (int64_t v = global_thread(); v < n; v += grid_threads())
    inv[v] = out_degree[v] > 0 ? static_cast<T>(1.0 / out_degree[v]) : T(0);
}

// The distributed driver's out-degrees: counts (exact in double) or weighted sums (weighted_sums).
__global__ void counts_to_double_kernel(const unsigned long long* __restrict__ counts, int64_t n, double* __restrict__ out) {
  for (int64_t v = global_thread(); v < n; v += grid_threads()) out[v] = static_cast<double>(counts[v]);
}

// The edges in `order` (group_by_range).
template <typename T>
__global__ void gather_edges_kernel(const int64_t* __restrict__ order, const int64_t* __restrict__ src,
                                    const int64_t* __restrict__ dst, const T* __restrict__ weights, int64_t m,
                                    int64_t* __restrict__ src_out, int64_t* __restrict__ dst_out, T* __restrict__ weights_out) {
  for (int64_t i = global_thread(); i < m; i += grid_threads()) {
    const int64_t e = order[i];
    src_out[i] = src[e];
    dst_out[i] = dst[e];
    if (weights != nullptr) weights_out[i] = weights[e];
  }
}

__global__ void range_key_kernel(const int64_t* __restrict__ dst, int64_t m, int64_t first, unsigned long long* __restrict__ keys) {
  for (int64_t e = global_thread(); e < m; e += grid_threads()) keys[e] = static_cast<unsigned long long>(dst[e] - first);
}

template <typename T>
__global__ void range_gather_kernel(const int64_t* __restrict__ order, const int64_t* __restrict__ src,
                                    const T* __restrict__ weights, int64_t m, int32_t* __restrict__ col, T* __restrict__ val) {
  for (int64_t i = global_thread(); i < m; i += grid_threads()) {
    col[i] = static_cast<int32_t>(src[order[i]]);
    if (weights != nullptr) val[i] = weights[order[i]];
  }
}

// y = x / outdeg_w (as T, like the CPU backend), and each dangling vertex's x (0 elsewhere).
template <typename T>
__global__ void range_terms_kernel(const T* __restrict__ x, const T* __restrict__ inv, int64_t n, T* __restrict__ y,
                                   double* __restrict__ dangling_x) {
  for (int64_t v = global_thread(); v < n; v += grid_threads()) {
    y[v] = x[v] * inv[v];
    dangling_x[v] = inv[v] == T(0) ? static_cast<double>(x[v]) : 0.0;
  }
}

// Row r (vertex first + r): its in-edges' terms summed in double (lanes strided, then the warp's
// butterfly: a fixed order), then the update and |x_new - x|. p and dangling hold the range's
// entries only (or are null: uniform, and dangling null means p).
template <typename T>
__global__ void range_rows_kernel(const int64_t* __restrict__ row_ptr, const int32_t* __restrict__ col,
                                  const T* __restrict__ val, const T* __restrict__ y, const T* __restrict__ x,
                                  const T* __restrict__ p, const T* __restrict__ dangling, const double* __restrict__ dsum,
                                  double alpha, double uniform, int64_t first, int64_t count, T* __restrict__ x_new,
                                  double* __restrict__ change) {
  const int lane = threadIdx.x % kWarp;
  for (int64_t r = global_thread() / kWarp; r < count; r += grid_threads() / kWarp) {
    double s = 0.0;
    for (int64_t e = row_ptr[r] + lane; e < row_ptr[r + 1]; e += kWarp)
      s += val != nullptr ? static_cast<double>(val[e]) * static_cast<double>(y[col[e]]) : static_cast<double>(y[col[e]]);
    s = warp_sum(s);
    if (lane == 0) {
      const double pi = p != nullptr ? static_cast<double>(p[r]) : uniform;
      const T* dvec = dangling != nullptr ? dangling : p;
      const double di = dvec != nullptr ? static_cast<double>(dvec[r]) : uniform;
      const T value = static_cast<T>(alpha * (s + *dsum * di) + (1.0 - alpha) * pi);
      x_new[r] = value;
      change[r] = fabs(static_cast<double>(value) - static_cast<double>(x[first + r]));
    }
  }
}

int bits_for(unsigned long long values) {  // bits of the keys 0 .. values - 1
  int bits = 1;
  while (bits < 64 && (1ull << bits) < values) ++bits;
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
    // Only the slots written: copying the unset weight slot reads uninitialized memory (initcheck).
    res.copy_to_host(host, out.data(), 4 * sizeof(int64_t) + (weights != nullptr ? sizeof(T) : 0));
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
    weighted_ = weights != nullptr;

    // 1. Degrees, the hubs, and the ranges: about equal work (so the heaviest ranges are narrow), at
    //    most kRangeWidth vertices.
    Buffer in = counts_of(dst, m, n, res), out = counts_of(src, m, n, res);
    Buffer hub_of = choose_hubs(out, n, m, res);
    Buffer before = device((n + 1) * sizeof(unsigned long long));
    {
      Buffer work = device(n * sizeof(unsigned long long));
      work_kernel<<<blocks_for(n), kBlock, 0, res.stream>>>(in.as<unsigned long long>(), out.as<unsigned long long>(),
                                                           hub_of.as<int32_t>(), n, work.as<unsigned long long>());
      GPUML_CUDA_CHECK_LAUNCH();
      GPUML_CUDA_CHECK(cudaMemsetAsync(before.data(), 0, sizeof(unsigned long long), res.stream));
      scan(work.as<unsigned long long>(), before.as<unsigned long long>() + 1, n, res);
    }
    unsigned long long total_work = 0;
    res.copy_to_host(&total_work, before.as<unsigned long long>() + n, sizeof(total_work));
    const unsigned long long target =
        std::max<unsigned long long>(1, total_work / (static_cast<unsigned long long>(kRangesPerSm) * std::max(1, res.sm_count)));
    Buffer range_of = device(n * sizeof(int32_t));
    {
      Buffer starts = device(n * sizeof(int32_t)), index = device(n * sizeof(int32_t));
      // Ranges of about equal work, then those wider than kRangeWidth cut into equal parts.
      work_starts_kernel<<<blocks_for(n), kBlock, 0, res.stream>>>(before.as<unsigned long long>(), n, target,
                                                                   starts.as<int32_t>());
      GPUML_CUDA_CHECK_LAUNCH();
      scan(starts.as<int32_t>(), index.as<int32_t>(), n, res);
      int32_t work_ranges = 0;
      res.copy_to_host(&work_ranges, index.as<int32_t>() + n - 1, sizeof(work_ranges));
      Buffer work_first = device((work_ranges + 1) * sizeof(int32_t));
      range_of_kernel<<<blocks_for(n), kBlock, 0, res.stream>>>(starts.as<int32_t>(), index.as<int32_t>(), n,
                                                               range_of.as<int32_t>(), work_first.as<int32_t>());
      GPUML_CUDA_CHECK_LAUNCH();
      const int32_t end = static_cast<int32_t>(n);
      res.copy_to_device(work_first.as<int32_t>() + work_ranges, &end, sizeof(end));
      split_starts_kernel<<<blocks_for(n), kBlock, 0, res.stream>>>(range_of.as<int32_t>(), work_first.as<int32_t>(), n,
                                                                    kRangeWidth<T>, starts.as<int32_t>());
      GPUML_CUDA_CHECK_LAUNCH();
      scan(starts.as<int32_t>(), index.as<int32_t>(), n, res);
      int32_t ranges = 0;
      res.copy_to_host(&ranges, index.as<int32_t>() + n - 1, sizeof(ranges));
      ranges_ = ranges;
      first_ = device((ranges_ + 1) * sizeof(int32_t));
      range_of_kernel<<<blocks_for(n), kBlock, 0, res.stream>>>(starts.as<int32_t>(), index.as<int32_t>(), n,
                                                               range_of.as<int32_t>(), first_.as<int32_t>());
      GPUML_CUDA_CHECK_LAUNCH();
      res.copy_to_device(first_.as<int32_t>() + ranges_, &end, sizeof(end));
    }
    const unsigned long long ranges = static_cast<unsigned long long>(ranges_);
    hub_first_ = device((ranges_ + 1) * sizeof(int32_t));
    hub_first_kernel<<<blocks_for(ranges_ + 1), kBlock, 0, res.stream>>>(hub_vertex_.as<int64_t>(), hubs_, first_.as<int32_t>(),
                                                                        ranges_, hub_first_.as<int32_t>());
    GPUML_CUDA_CHECK_LAUNCH();

    // 2. The edges sorted by (region, destination), stably, and the regions: where the region changes.
    // 32-bit keys and edge ids where they fit (R-MAT scale 22: 32 key bits): half the sort's bytes.
    const int key_bits = bits_for(ranges * ranges + ranges) + kOffsetBits;
    const bool narrow = key_bits <= 32 && m < (int64_t(1) << 31);
    Buffer order = device(m * (narrow ? sizeof(int32_t) : sizeof(int64_t))), index;
    Buffer region_first, region_key, by_dst_key;  // region q: first edge, key, transposed key
    Buffer hub_edges;
    int64_t regions = 0, region_edges = 0;  // region_edges: the edges not from hubs
    // Each edge's source offset or hub index (by input edge), and later each region edge's
    // destination offset (by sorted position): the placing kernels read these, not src, dst,
    // range_of and hub_of.
    Buffer edge_src_offset = device(m * sizeof(uint16_t)), sorted_dst_offset;
    auto sort_edges = [&](auto key_type, auto id_type) {
      using K = decltype(key_type);
      using V = decltype(id_type);
      Buffer sorted;
      {
        Buffer keys = device(m * sizeof(K));
        region_keykernel<K><<<blocks_for(m), kBlock, 0, res.stream>>>(src, dst, range_of.as<int32_t>(), first_.as<int32_t>(),
                                                                       hub_of.as<int32_t>(), m, ranges, keys.as<K>(),
                                                                       edge_src_offset.as<uint16_t>());
        GPUML_CUDA_CHECK_LAUNCH();
        sorted = stable_order<K, V>(keys, m, key_bits, order, res);
      }
      // The hubs' edges, last: range r's are sorted [hub_edges[r], hub_edges[r + 1]).
      hub_edges = device((ranges_ + 1) * sizeof(int64_t));
      lower_bounds_kernel<K><<<blocks_for(ranges_ + 1), kBlock, 0, res.stream>>>(
          sorted.as<K>(), m, (ranges * ranges) << kOffsetBits, 1ull << kOffsetBits, ranges_, hub_edges.as<int64_t>());
      GPUML_CUDA_CHECK_LAUNCH();
      res.copy_to_host(&region_edges, hub_edges.as<int64_t>(), sizeof(region_edges));
      index = device(m * sizeof(int64_t));  // after the sort: the build's peak is there
      {
        Buffer starts = device(m * sizeof(int32_t));
        run_starts_kernel<K><<<blocks_for(region_edges), kBlock, 0, res.stream>>>(sorted.as<K>(), region_edges, starts.as<int32_t>());
        GPUML_CUDA_CHECK_LAUNCH();
        scan(starts.as<int32_t>(), index.as<int64_t>(), region_edges, res);
        if (region_edges > 0) res.copy_to_host(&regions, index.as<int64_t>() + region_edges - 1, sizeof(regions));
        region_first = device((regions + 1) * sizeof(int64_t));
        region_key = device(regions * sizeof(unsigned long long));
        by_dst_key = device(regions * sizeof(unsigned long long));
        regions_kernel<K><<<blocks_for(region_edges), kBlock, 0, res.stream>>>(
            sorted.as<K>(), starts.as<int32_t>(), index.as<int64_t>(), region_edges, ranges, region_first.as<int64_t>(),
            region_key.as<unsigned long long>(), by_dst_key.as<unsigned long long>());
        GPUML_CUDA_CHECK_LAUNCH();
        res.copy_to_device(region_first.as<int64_t>() + regions, &region_edges, sizeof(region_edges));
      }
      place_hub_edges<K, V>(sorted, order, hub_edges, edge_src_offset.as<uint16_t>(), weights, m, res);
      sorted_dst_offset = device(std::max<int64_t>(region_edges, 1) * sizeof(uint16_t));
      if (region_edges > 0) {
        low_bits_kernel<K><<<blocks_for(region_edges), kBlock, 0, res.stream>>>(sorted.as<K>(), region_edges,
                                                                               sorted_dst_offset.as<uint16_t>());
        GPUML_CUDA_CHECK_LAUNCH();
      }
    };
    if (narrow) sort_edges(uint32_t{}, int32_t{});
    else sort_edges(0ull, int64_t{});

    // 3. The regions' pieces in both orders (src_major[q], dst_major[q]: region q's first piece),
    //    each range's out-pieces and in-pieces, and where each source-major piece goes.
    Buffer src_major = device((regions + 1) * sizeof(int64_t)), dst_major = device((regions + 1) * sizeof(int64_t));
    out_pieces_ = device((ranges_ + 1) * sizeof(int64_t));
    in_pieces_ = device((ranges_ + 1) * sizeof(int64_t));
    int64_t pieces = 0;
    {
      Buffer counts = device(regions * sizeof(int64_t));
      piece_counts_kernel<<<blocks_for(regions), kBlock, 0, res.stream>>>(region_first.as<int64_t>(), regions,
                                                                         counts.as<int64_t>());
      GPUML_CUDA_CHECK_LAUNCH();
      exclusive_scan(counts.as<int64_t>(), src_major.as<int64_t>(), regions, res);
      res.copy_to_host(&pieces, src_major.as<int64_t>() + regions, sizeof(pieces));
      Buffer first_region = device((ranges_ + 1) * sizeof(int64_t));
      lower_bounds_kernel<<<blocks_for(ranges_ + 1), kBlock, 0, res.stream>>>(region_key.as<unsigned long long>(), regions,
                                                                               0, ranges, ranges_, first_region.as<int64_t>());
      GPUML_CUDA_CHECK_LAUNCH();
      gather_kernel<<<blocks_for(ranges_ + 1), kBlock, 0, res.stream>>>(src_major.as<int64_t>(), first_region.as<int64_t>(),
                                                                       ranges_ + 1, out_pieces_.as<int64_t>());
      GPUML_CUDA_CHECK_LAUNCH();
      // Destination-major: the regions sorted by transposed key; their pieces scanned in that order.
      Buffer by_dst = device(regions * sizeof(int64_t));
      Buffer sorted_keys = stable_order(by_dst_key, regions, bits_for(ranges * ranges), by_dst, res);
      Buffer counts_by_dst = device(regions * sizeof(int64_t)), first_by_dst = device((regions + 1) * sizeof(int64_t));
      gather_kernel<<<blocks_for(regions), kBlock, 0, res.stream>>>(counts.as<int64_t>(), by_dst.as<int64_t>(), regions,
                                                                   counts_by_dst.as<int64_t>());
      GPUML_CUDA_CHECK_LAUNCH();
      exclusive_scan(counts_by_dst.as<int64_t>(), first_by_dst.as<int64_t>(), regions, res);
      scatter_kernel<<<blocks_for(regions), kBlock, 0, res.stream>>>(first_by_dst.as<int64_t>(), by_dst.as<int64_t>(), regions,
                                                                    dst_major.as<int64_t>());
      GPUML_CUDA_CHECK_LAUNCH();
      res.copy_to_device(dst_major.as<int64_t>() + regions, &pieces, sizeof(pieces));
      lower_bounds_kernel<<<blocks_for(ranges_ + 1), kBlock, 0, res.stream>>>(sorted_keys.as<unsigned long long>(), regions,
                                                                               0, ranges, ranges_, first_region.as<int64_t>());
      GPUML_CUDA_CHECK_LAUNCH();
      gather_kernel<<<blocks_for(ranges_ + 1), kBlock, 0, res.stream>>>(first_by_dst.as<int64_t>(), first_region.as<int64_t>(),
                                                                       ranges_ + 1, in_pieces_.as<int64_t>());
      GPUML_CUDA_CHECK_LAUNCH();
      position_ = device(pieces * sizeof(int64_t));
      piece_positions_kernel<<<blocks_for(regions), kBlock, 0, res.stream>>>(src_major.as<int64_t>(), dst_major.as<int64_t>(),
                                                                            regions, position_.as<int64_t>());
      GPUML_CUDA_CHECK_LAUNCH();
    }
    region_key = Buffer();
    by_dst_key = Buffer();

    const int64_t slots = pieces * kWarp;
    allocate_slots(slots, src_offset_, dst_offset_, val_, res);
    auto place_edges = [&](auto id_type) {
      using V = decltype(id_type);
      place_edges_kernel<T, V><<<blocks_for(region_edges), kBlock, 0, res.stream>>>(
          order.as<V>(), index.as<int64_t>(), region_first.as<int64_t>(), src_major.as<int64_t>(), dst_major.as<int64_t>(),
          edge_src_offset.as<uint16_t>(), sorted_dst_offset.as<uint16_t>(), weights, region_edges, src_offset_.as<uint16_t>(),
          dst_offset_.as<uint16_t>(), weighted_ ? val_.as<T>() : nullptr);
      GPUML_CUDA_CHECK_LAUNCH();
    };
    if (narrow) place_edges(int32_t{});
    else place_edges(int64_t{});
    region_first = Buffer();
    order = Buffer();
    index = Buffer();
    edge_src_offset = Buffer();
    sorted_dst_offset = Buffer();

    // 4. Inverse (weighted) out-degrees and the number of dangling vertices.
    inv_out_ = device(n * sizeof(T));
    Buffer dangling = device(sizeof(unsigned long long));
    GPUML_CUDA_CHECK(cudaMemsetAsync(dangling.data(), 0, sizeof(unsigned long long), res.stream));
    if (!weighted_) {
      inverse_count_kernel<T><<<blocks_for(n), kBlock, 0, res.stream>>>(out.as<unsigned long long>(), n, inv_out_.as<T>(),
                                                                          dangling.as<unsigned long long>());
      GPUML_CUDA_CHECK_LAUNCH();
    } else {
      const Buffer sums = device(n * sizeof(double));
      weighted_sums(src, weights, m, n, sums.as<double>(), res);
      inverse_weighted_kernel<T><<<blocks_for(n), kBlock, 0, res.stream>>>(sums.as<double>(), n, inv_out_.as<T>(),
                                                                             dangling.as<unsigned long long>());
      GPUML_CUDA_CHECK_LAUNCH();
    }
    unsigned long long n_dangling = 0;
    res.copy_to_host(&n_dangling, dangling.data(), sizeof(n_dangling));

    // 5. Iteration scratch.
    terms_[0] = device(slots * sizeof(T));
    terms_[1] = device(slots * sizeof(T));
    hub_y_[0] = device(hubs_ * sizeof(T));
    hub_y_[1] = device(hubs_ * sizeof(T));
    partials_ = device(2 * ranges_ * sizeof(double));
    scalars_ = device(3 * sizeof(double));
    current_ = 0;
    prepared_for_ = nullptr;
    GPUML_CUDA_CHECK(cudaStreamSynchronize(res.stream));  // the temporaries above die with this call
    return static_cast<int64_t>(n_dangling);
  }

  // The kernel also leaves the next iteration's terms and dangling mass (from x_new), so a call
  // whose x is the previous call's x_new (the driver's loop) skips the preparing pass.
  double iterate(const T* x, T* x_new, const T* p, const T* dangling, double alpha) override {
    cuda::Resources& res = cuda::activate(ctx_);
    double* scalars = scalars_.as<double>();  // dangling mass for terms_[0], for terms_[1], the change
    if (!kernel_configured_) {
      GPUML_CUDA_CHECK(cudaFuncSetAttribute(iterate_kernel<T>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                            static_cast<int>(kAccumulatorBytes + kHubBytes)));
      kernel_configured_ = true;
    }
    IterateArgs<T> a{first_.as<int32_t>(), out_pieces_.as<int64_t>(), in_pieces_.as<int64_t>(), position_.as<int64_t>(),
                     src_offset_.as<uint16_t>(), dst_offset_.as<uint16_t>(), weighted_ ? val_.as<T>() : nullptr, nullptr,
                     nullptr, x, nullptr, p, dangling, inv_out_.as<T>(), nullptr, alpha, 1.0 / static_cast<double>(n_),
                     partials_.as<double>(), hubs_, hub_vertex_.as<int64_t>(), hub_first_.as<int32_t>(),
                     hub_pieces_.as<int64_t>(), hub_index_.as<uint16_t>(), hub_dst_offset_.as<uint16_t>(),
                     weighted_ ? hub_val_.as<T>() : nullptr, nullptr, nullptr};
    if (x != prepared_for_) {  // the terms, hubs' y and dangling mass of x
      a.next_terms = terms_[current_].template as<T>();
      a.next_hub_y = hub_y_[current_].template as<T>();
      launch(a, res);
      finish_pairs_kernel<<<1, kBlock, 0, res.stream>>>(partials_.as<double>(), ranges_, scalars + 2, scalars + current_);
      GPUML_CUDA_CHECK_LAUNCH();
    }
    a.terms = terms_[current_].template as<T>();
    a.next_terms = terms_[1 - current_].template as<T>();
    a.hub_y = hub_y_[current_].template as<T>();
    a.next_hub_y = hub_y_[1 - current_].template as<T>();
    a.x_new = x_new;
    a.dsum = scalars + current_;
    launch(a, res);
    finish_pairs_kernel<<<1, kBlock, 0, res.stream>>>(partials_.as<double>(), ranges_, scalars + 2, scalars + (1 - current_));
    GPUML_CUDA_CHECK_LAUNCH();
    double host_err = 0.0;
    res.copy_to_host(&host_err, scalars + 2, sizeof(double));
    current_ = 1 - current_;
    prepared_for_ = x_new;
    return host_err;
  }

  // A new pagerank call: its x is never the last call's x_new, even at the same address.
  void restart() override { prepared_for_ = nullptr; }

  std::size_t memory_bytes() const override {
    std::size_t bytes = 0;
    for (const Buffer* b : {&first_, &out_pieces_, &in_pieces_, &position_, &src_offset_, &dst_offset_, &val_, &inv_out_,
                            &partials_, &scalars_, &terms_[0], &terms_[1], &hub_vertex_, &hub_first_, &hub_pieces_,
                            &hub_index_, &hub_dst_offset_, &hub_val_, &hub_y_[0], &hub_y_[1], &range_row_ptr_, &range_col_,
                            &range_y_, &range_dangling_x_, &range_change_})
      bytes += b->bytes();
    return bytes;
  }

  // The distributed driver's primitives, on device memory.
  void out_degrees(const int64_t* src, const T* weights, int64_t m, int64_t n, double* out) override {
    cuda::Resources& res = cuda::activate(ctx_);
    if (weights == nullptr) {
      const Buffer counts = counts_of(src, m, n, res);
      counts_to_double_kernel<<<blocks_for(n), kBlock, 0, res.stream>>>(counts.as<unsigned long long>(), n, out);
      GPUML_CUDA_CHECK_LAUNCH();
    } else {
      weighted_sums(src, weights, m, n, out, res);
    }
  }

  // Stably sorted by destination (so grouped by range, in input order within a destination).
  void group_by_range(const int64_t* src, const int64_t* dst, const T* weights, int64_t m, int64_t n, const int64_t* first_host,
                      int ranges, int64_t* src_out, int64_t* dst_out, T* weights_out, int64_t* starts_host) override {
    cuda::Resources& res = cuda::activate(ctx_);
    Buffer keys = device(m * sizeof(unsigned long long)), order = device(m * sizeof(int64_t));
    vertex_key_kernel<<<blocks_for(m), kBlock, 0, res.stream>>>(dst, m, keys.as<unsigned long long>());
    GPUML_CUDA_CHECK_LAUNCH();
    const Buffer sorted = stable_order(keys, m, bits_for(static_cast<unsigned long long>(n)), order, res);
    gather_edges_kernel<T><<<blocks_for(m), kBlock, 0, res.stream>>>(order.as<int64_t>(), src, dst, weights, m, src_out, dst_out,
                                                                      weights_out);
    GPUML_CUDA_CHECK_LAUNCH();
    Buffer firsts = device((ranges + 1) * sizeof(int64_t)), bounds = device((ranges + 1) * sizeof(int64_t));
    res.copy_to_device(firsts.data(), first_host, (ranges + 1) * sizeof(int64_t));
    lower_bounds_of_kernel<<<blocks_for(ranges + 1), kBlock, 0, res.stream>>>(sorted.as<unsigned long long>(), m,
                                                                              firsts.as<int64_t>(), ranges, bounds.as<int64_t>());
    GPUML_CUDA_CHECK_LAUNCH();
    res.copy_to_host(starts_host, bounds.data(), (ranges + 1) * sizeof(int64_t));
  }

  void build_range(const int64_t* src, const int64_t* dst, const T* weights, int64_t m, int64_t n, int64_t first,
                   int64_t count, const double* out_degree) override {
    cuda::Resources& res = cuda::activate(ctx_);
    n_ = n;
    range_first_ = first;
    range_count_ = count;
    weighted_ = weights != nullptr;
    inv_out_ = device(n * sizeof(T));
    range_inverse_kernel<T><<<blocks_for(n), kBlock, 0, res.stream>>>(out_degree, n, inv_out_.as<T>());
    GPUML_CUDA_CHECK_LAUNCH();
    Buffer keys = device(m * sizeof(unsigned long long)), order = device(m * sizeof(int64_t));
    range_key_kernel<<<blocks_for(m), kBlock, 0, res.stream>>>(dst, m, first, keys.as<unsigned long long>());
    GPUML_CUDA_CHECK_LAUNCH();
    const Buffer sorted = stable_order(keys, m, bits_for(static_cast<unsigned long long>(count) + 1), order, res);
    range_row_ptr_ = device((count + 1) * sizeof(int64_t));
    lower_bounds_kernel<<<blocks_for(count + 1), kBlock, 0, res.stream>>>(sorted.as<unsigned long long>(), m, 0, 1, count,
                                                                          range_row_ptr_.as<int64_t>());
    GPUML_CUDA_CHECK_LAUNCH();
    range_col_ = device(m * sizeof(int32_t));
    val_ = device(weighted_ ? m * sizeof(T) : 0);
    range_gather_kernel<T><<<blocks_for(m), kBlock, 0, res.stream>>>(order.as<int64_t>(), src, weights, m,
                                                                     range_col_.as<int32_t>(), val_.as<T>());
    GPUML_CUDA_CHECK_LAUNCH();
    range_y_ = device(n * sizeof(T));
    range_dangling_x_ = device(n * sizeof(double));
    range_change_ = device(count * sizeof(double));
    scalars_ = device(2 * sizeof(double));
  }

  // x, p and dangling are whole vectors on the device; x_new_range the range's new values.
  double iterate_range(const T* x, T* x_new_range, const T* p, const T* dangling, double alpha) override {
    cuda::Resources& res = cuda::activate(ctx_);
    const int64_t n = n_, count = range_count_;
    double* scalars = scalars_.as<double>();  // the dangling mass, the change
    range_terms_kernel<T><<<blocks_for(n), kBlock, 0, res.stream>>>(x, inv_out_.as<T>(), n, range_y_.as<T>(),
                                                                  range_dangling_x_.as<double>());
    GPUML_CUDA_CHECK_LAUNCH();
    sum(range_dangling_x_.as<double>(), n, scalars, res);
    range_rows_kernel<T><<<blocks_for(count * kWarp), kBlock, 0, res.stream>>>(
        range_row_ptr_.as<int64_t>(), range_col_.as<int32_t>(), weighted_ ? val_.as<T>() : nullptr, range_y_.as<T>(), x,
        p != nullptr ? p + range_first_ : nullptr, dangling != nullptr ? dangling + range_first_ : nullptr, scalars, alpha,
        1.0 / static_cast<double>(n), range_first_, count, x_new_range, range_change_.as<double>());
    GPUML_CUDA_CHECK_LAUNCH();
    sum(range_change_.as<double>(), count, scalars + 1, res);
    double err = 0.0;
    res.copy_to_host(&err, scalars + 1, sizeof(double));
    return err;
  }

 private:
  Buffer device(std::size_t bytes) { return Buffer(ctx_, std::max<std::size_t>(bytes, 1)); }

  // *out = in[0] + ... + in[len - 1] (CUB's reduction: a fixed order for a given length).
  void sum(const double* in, int64_t len, double* out, cuda::Resources& res) {
    if (len == 0) {
      GPUML_CUDA_CHECK(cudaMemsetAsync(out, 0, sizeof(double), res.stream));
      return;
    }
    std::size_t bytes = 0;
    GPUML_CUDA_CHECK(cub::DeviceReduce::Sum(nullptr, bytes, in, out, len, res.stream));
    Buffer temp = device(bytes);
    GPUML_CUDA_CHECK(cub::DeviceReduce::Sum(temp.data(), bytes, in, out, len, res.stream));
  }

  void launch(const IterateArgs<T>& a, cuda::Resources& res) {
    const std::size_t shared = kAccumulatorBytes + ceil_div(hubs_ * static_cast<int64_t>(sizeof(T)), 16) * 16;
    iterate_kernel<T><<<static_cast<unsigned>(ranges_), kThreads, shared, res.stream>>>(a);
    GPUML_CUDA_CHECK_LAUNCH();
  }

  // The hubs (hubs_, hub_vertex_ ascending): the vertices of the most out-edges, at most
  // kMaxHubs<T> of them and each with at least kMinHubDegree; returns hub_of (n: the hub index of
  // a vertex, or -1).
  Buffer choose_hubs(Buffer& out, int64_t n, int64_t m, cuda::Resources& res) {  // out: out-degrees, each <= m
    Buffer hub_of = device(n * sizeof(int32_t));
    GPUML_CUDA_CHECK(cudaMemsetAsync(hub_of.data(), 0xFF, n * sizeof(int32_t), res.stream));
    int64_t limit = std::min<int64_t>(kMaxHubs<T>, n);
    if (const char* env = std::getenv("GPUML_PAGERANK_HUBS")) limit = std::min<int64_t>(limit, std::max(0L, std::atol(env)));
    hubs_ = 0;
    hub_vertex_ = device(sizeof(int64_t));
    if (limit == 0) return hub_of;
    Buffer by_degree = device(n * sizeof(int64_t)), keys = device(n * sizeof(unsigned long long));
    GPUML_CUDA_CHECK(cudaMemcpyAsync(keys.data(), out.data(), n * sizeof(unsigned long long), cudaMemcpyDeviceToDevice, res.stream));
    Buffer degrees = stable_order(keys, n, bits_for(static_cast<unsigned long long>(m) + 1), by_degree, res, /*descending=*/true);
    std::vector<unsigned long long> top(static_cast<std::size_t>(limit));
    res.copy_to_host(top.data(), degrees.data(), limit * sizeof(unsigned long long));
    while (hubs_ < limit && top[hubs_] >= kMinHubDegree) ++hubs_;
    if (hubs_ == 0) return hub_of;
    Buffer ids = device(hubs_ * sizeof(unsigned long long)), unused = device(hubs_ * sizeof(int64_t));
    vertex_key_kernel<<<blocks_for(hubs_), kBlock, 0, res.stream>>>(by_degree.as<int64_t>(), hubs_, ids.as<unsigned long long>());
    GPUML_CUDA_CHECK_LAUNCH();
    hub_vertex_ = stable_order(ids, hubs_, bits_for(static_cast<unsigned long long>(n)), unused, res);  // ids >= 0: as int64
    hub_of_kernel<<<blocks_for(hubs_), kBlock, 0, res.stream>>>(hub_vertex_.as<int64_t>(), hubs_, hub_of.as<int32_t>());
    GPUML_CUDA_CHECK_LAUNCH();
    return hub_of;
  }

  // The hubs' edges (sorted [hub_edges[0], m), by destination) into hub pieces, range by range.
  // edge_hub: each input edge's hub index (where its source is a hub).
  template <typename K, typename V>
  void place_hub_edges(Buffer& sorted, Buffer& order, Buffer& hub_edges, const uint16_t* edge_hub, const T* weights, int64_t m,
                       cuda::Resources& res) {
    hub_pieces_ = device((ranges_ + 1) * sizeof(int64_t));
    Buffer counts = device(ranges_ * sizeof(int64_t));
    piece_counts_kernel<<<blocks_for(ranges_), kBlock, 0, res.stream>>>(hub_edges.as<int64_t>(), ranges_, counts.as<int64_t>());
    GPUML_CUDA_CHECK_LAUNCH();
    exclusive_scan(counts.as<int64_t>(), hub_pieces_.as<int64_t>(), ranges_, res);
    int64_t pieces = 0, begin = 0;
    res.copy_to_host(&pieces, hub_pieces_.as<int64_t>() + ranges_, sizeof(pieces));
    res.copy_to_host(&begin, hub_edges.as<int64_t>(), sizeof(begin));
    allocate_slots(pieces * kWarp, hub_index_, hub_dst_offset_, hub_val_, res);
    if (begin == m) return;
    place_hub_edges_kernel<T, K, V><<<blocks_for(m - begin), kBlock, 0, res.stream>>>(
        order.as<V>(), sorted.as<K>(), hub_edges.as<int64_t>(), hub_pieces_.as<int64_t>(), edge_hub,
        weights, static_cast<unsigned long long>(ranges_), begin, m, hub_index_.as<uint16_t>(),
        hub_dst_offset_.as<uint16_t>(), weighted_ ? hub_val_.as<T>() : nullptr);
    GPUML_CUDA_CHECK_LAUNCH();
  }

  // Slot arrays filled as padding: source offset (or hub) 0, destination offset kNoVertex, weight 0.
  void allocate_slots(int64_t slots, Buffer& from, Buffer& to, Buffer& weight, cuda::Resources& res) {
    from = device(slots * sizeof(uint16_t));
    to = device(slots * sizeof(uint16_t));
    weight = weighted_ ? device(slots * sizeof(T)) : Buffer();
    GPUML_CUDA_CHECK(cudaMemsetAsync(from.data(), 0, slots * sizeof(uint16_t), res.stream));
    GPUML_CUDA_CHECK(cudaMemsetAsync(to.data(), 0xFF, slots * sizeof(uint16_t), res.stream));
    if (weighted_) GPUML_CUDA_CHECK(cudaMemsetAsync(weight.data(), 0, slots * sizeof(T), res.stream));
  }

  // sums[v]: vertex v's weighted out-degree, the same bits in any edge order (fixed_sum_kernel).
  void weighted_sums(const int64_t* src, const T* weights, int64_t m, int64_t n, double* sums, cuda::Resources& res) {
    Buffer words = device(3 * n * sizeof(unsigned long long));
    unsigned long long* largest = words.as<unsigned long long>();
    GPUML_CUDA_CHECK(cudaMemsetAsync(largest, 0, words.bytes(), res.stream));
    if (m > 0) {
      largest_weight_kernel<T><<<blocks_for(m), kBlock, 0, res.stream>>>(src, weights, m, largest);
      GPUML_CUDA_CHECK_LAUNCH();
      fixed_sum_kernel<T><<<blocks_for(m), kBlock, 0, res.stream>>>(src, weights, m, largest, largest + n, largest + 2 * n);
      GPUML_CUDA_CHECK_LAUNCH();
    }
    if (n > 0) {
      fixed_to_double_kernel<<<blocks_for(n), kBlock, 0, res.stream>>>(largest, largest + n, largest + 2 * n, n, sums);
      GPUML_CUDA_CHECK_LAUNCH();
    }
  }

  Buffer counts_of(const int64_t* ids, int64_t m, int64_t n, cuda::Resources& res) {
    Buffer counts = device(n * sizeof(unsigned long long));
    GPUML_CUDA_CHECK(cudaMemsetAsync(counts.data(), 0, n * sizeof(unsigned long long), res.stream));
    if (m > 0) {
      count_kernel<<<blocks_for(m), kBlock, 0, res.stream>>>(ids, m, counts.as<unsigned long long>());
      GPUML_CUDA_CHECK_LAUNCH();
    }
    return counts;
  }

  // out[0] = 0, out[i + 1] = in[0] + ... + in[i].
  void exclusive_scan(const int64_t* in, int64_t* out, int64_t len, cuda::Resources& res) {
    GPUML_CUDA_CHECK(cudaMemsetAsync(out, 0, sizeof(int64_t), res.stream));
    scan(in, out + 1, len, res);
  }

  // out[i] = in[0] + ... + in[i] (CUB).
  template <typename In, typename Out>
  void scan(const In* in, Out* out, int64_t len, cuda::Resources& res) {
    if (len == 0) return;
    std::size_t bytes = 0;
    GPUML_CUDA_CHECK(cub::DeviceScan::InclusiveScan(nullptr, bytes, in, out, ::cuda::std::plus<Out>(), len, res.stream));
    Buffer temp = device(bytes);
    GPUML_CUDA_CHECK(cub::DeviceScan::InclusiveScan(temp.data(), bytes, in, out, ::cuda::std::plus<Out>(), len, res.stream));
  }

  // order = 0 .. len-1 stably sorted by keys (their low `bits` bits); returns the sorted keys.
  // The sort ping-pongs between keys and the sorted keys, ids and order (cub::DoubleBuffer): no
  // second copy of each in CUB's workspace, 16 bytes per item less at the build's peak. keys'
  // contents are lost.
  // K, V: the keys' and ids' types (order holds len V's).
  template <typename K = unsigned long long, typename V = int64_t>
  Buffer stable_order(Buffer& keys, int64_t len, int bits, Buffer& order, cuda::Resources& res, bool descending = false) {
    Buffer sorted = device(len * sizeof(K));
    if (len == 0) return sorted;
    Buffer ids = device(len * sizeof(V));
    iota_kernel<V><<<blocks_for(len), kBlock, 0, res.stream>>>(ids.as<V>(), len);
    GPUML_CUDA_CHECK_LAUNCH();
    cub::DoubleBuffer<K> key_buffers(keys.as<K>(), sorted.as<K>());
    cub::DoubleBuffer<V> id_buffers(ids.as<V>(), order.as<V>());
    const auto sort = [&](void* temp, std::size_t& bytes) {
      return descending ? cub::DeviceRadixSort::SortPairsDescending(temp, bytes, key_buffers, id_buffers, len, 0, bits, res.stream)
                        : cub::DeviceRadixSort::SortPairs(temp, bytes, key_buffers, id_buffers, len, 0, bits, res.stream);
    };
    std::size_t bytes = 0;
    GPUML_CUDA_CHECK(sort(nullptr, bytes));
    Buffer temp = device(bytes);
    GPUML_CUDA_CHECK(sort(temp.data(), bytes));
    if (key_buffers.Current() != sorted.as<K>()) std::swap(keys, sorted);
    if (id_buffers.Current() != order.as<V>()) std::swap(ids, order);
    return sorted;
  }

  Context ctx_;
  int64_t n_ = 0, ranges_ = 0, hubs_ = 0;
  bool weighted_ = false;
  int current_ = 0;                  // terms_[current_] holds the terms of the next call's x
  bool kernel_configured_ = false;   // iterate_kernel's shared memory limit set
  const T* prepared_for_ = nullptr;  // ... when that x is this (the last call's x_new)
  Buffer first_, out_pieces_, in_pieces_, position_, src_offset_, dst_offset_, val_, inv_out_, partials_, scalars_;
  Buffer terms_[2];
  Buffer hub_vertex_, hub_first_, hub_pieces_, hub_index_, hub_dst_offset_, hub_val_;
  Buffer hub_y_[2];  // the hubs' y for terms_[0] and terms_[1]
  // The distributed range (build_range): its CSR, y of every vertex, and its changes.
  int64_t range_first_ = 0, range_count_ = 0;
  Buffer range_row_ptr_, range_col_, range_y_, range_dangling_x_, range_change_;
};

}  // namespace

template <typename T>
std::unique_ptr<PageRankBackend<T>> make_pagerank_cuda_backend(const Context& ctx) {
  return std::make_unique<CudaPageRankBackend<T>>(ctx);
}

template std::unique_ptr<PageRankBackend<float>> make_pagerank_cuda_backend<float>(const Context&);
template std::unique_ptr<PageRankBackend<double>> make_pagerank_cuda_backend<double>(const Context&);

}  // namespace gpuml::detail

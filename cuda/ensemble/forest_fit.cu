// The CUDA side of the level-by-level tree builder (src/ensemble/levelwise.hpp).
//
// X is binned on the device (bin_rows's codes, row-major there: one 32-byte sector per row at
// d = 32, and value_ranges's per-bin ranges by integer atomics on order-preserving keys). The
// rows stay where they are; each tree of a batch has a list of slots (its in-bag rows: row id, weight), and a
// level's nodes own ranges of it (a second list is the partition's scratch). One kernel per level, a block per node:
//   1. histograms of the node's rows over its next drawn features, in shared memory, as integer
//      atomics (integer weights, and regression targets in integer units (quantize_targets):
//      exact, so the sums do not depend on the order of the adds);
//   2. per feature in draw order: skipped when constant in the node (scikit-learn draws more),
//      else prefix sums over the bins (CUB block scans) and each threshold's score (split_proxy,
//      scikit-learn's ranking), one bin per thread, with the host's formulas (criteria.hpp:
//      unfused double operations and a logarithm of our own), so the scores have the CPU's bits;
//      the block's best, ties to the lower bin, replaces the node's best only when strictly better
//      (the first feature drawn wins ties, as best_split); the winner's impurity improvement last;
//   3. the node's slots partitioned through the scratch list and back: left ones first in
//      order, right ones after them in reverse order.
// In depth-first growth the next level is made here too (grow_levels: each node's flags by
// level_growth.hpp's rules, a scan, the children written in order); grow_trees keeps every level
// on the device and assembles the trees there (tree_assembly.cu), grow_levels hands each level's
// records to the host.
// Best-first rounds and searches over ranks go through split_level, the host making the children.
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
#include <cub/device/device_partition.cuh>
#include <cub/device/device_scan.cuh>
#include <thrust/iterator/counting_iterator.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "cuda/core/kernel_util.cuh"
#include "cuda/core/resources.cuh"
#include "ensemble/feature_draws.hpp"
#include "cuda/ensemble/tree_assembly.cuh"
#include "ensemble/levelwise.hpp"
#include "gpuml/core/array.hpp"
#include "gpuml/core/comm.hpp"
#include "gpuml/core/error.hpp"

namespace gpuml::detail {
namespace {

constexpr int kFitBlock = 256;  // one thread per bin (max_bins <= 256)
constexpr int kMaxClasses = 64;
// Histogram bytes per block before asking for more: with the kernel's static shared memory
// (~3 kB) it stays under the 48 kB a launch may use without opting in.
constexpr int kSharedBudget = 40 * 1024;

// Doubles as unsigned keys in the same order (negative ones bit-flipped, positive ones with the
// sign bit set), for min / max by integer atomics.
__device__ __forceinline__ unsigned long long ordered_key(double x) {
  const unsigned long long bits = static_cast<unsigned long long>(__double_as_longlong(x));
  return (bits >> 63) ? ~bits : bits | 0x8000000000000000ULL;
}
__host__ __device__ inline double key_value(unsigned long long key) {
  const unsigned long long bits = (key >> 63) ? key & 0x7fffffffffffffffULL : ~key;
  double x;
  memcpy(&x, &bits, sizeof(x));
  return x;
}

// codes[i * d + j] = the number of feature j's thresholds strictly below X[i, j] (bin_rows's
// code, row-major here), and each (feature, bin) cell's smallest and largest value
// (value_ranges's) as ordered keys; *bad = 1 on NaN or infinity.
template <typename T>
__global__ void bin_kernel(const T* __restrict__ X, int64_t n, int64_t d, const double* __restrict__ thresholds,
                           const int64_t* __restrict__ offsets, uint8_t* __restrict__ codes,
                           unsigned long long* __restrict__ low, unsigned long long* __restrict__ high, int* __restrict__ bad) {
  for (int64_t idx = global_thread(); idx < n * d; idx += grid_threads()) {
    const int64_t j = idx % d;
    const double x = static_cast<double>(X[idx]);
    if (!isfinite(x)) {
      *bad = 1;
      codes[idx] = 0;
      continue;
    }
    int64_t lo = offsets[j], hi = offsets[j + 1];
    const int64_t first = lo;
    while (lo < hi) {  // lower_bound: the first threshold >= x
      const int64_t mid = lo + (hi - lo) / 2;
      if (thresholds[mid] < x)
        lo = mid + 1;
      else
        hi = mid;
    }
    const int b = static_cast<int>(lo - first);
    codes[idx] = static_cast<uint8_t>(b);
    const int64_t cell = first + j + b;  // FeatureBins::bin_index
    // The atomics only where they may change the cell: a cell's keys only move outwards, so a
    // value read from L2 that already covers x (stale or not) makes the atomic a no-op. Most of a
    // cell's ~n / bins values are inside its range early, and the atomics on one address serialize.
    const unsigned long long key = ordered_key(x);
    if (key < __ldcg(low + cell)) atomicMin(low + cell, key);
    if (key > __ldcg(high + cell)) atomicMax(high + cell, key);
  }
}

// codes[i * d + j] = columns[j * n + i]: codes binned on the host (bin_rows's feature-major
// layout) in this backend's row-major order.
__global__ void transpose_codes_kernel(const uint8_t* __restrict__ columns, int64_t n, int64_t d,
                                       uint8_t* __restrict__ codes) {
  for (int64_t idx = global_thread(); idx < n * d; idx += grid_threads()) codes[idx] = columns[(idx % d) * n + idx / d];
}

struct Candidate {
  double score;  // split_proxy
  int32_t bin;  // -1: none
  int64_t left_rows;
};

struct BetterCandidate {
  __device__ Candidate operator()(const Candidate& a, const Candidate& b) const {
    if (a.bin < 0) return b;
    if (b.bin < 0) return a;
    if (a.score != b.score) return a.score > b.score ? a : b;
    return a.bin < b.bin ? a : b;
  }
};

struct SplitArgs {
  const LevelNode* nodes;
  const int32_t* order;  // nodes x d
  const uint8_t* codes;  // n x d
  int64_t d;
  const int32_t* bins;
  const int32_t* labels;    // classification
  const long long* units;   // regression: n x 2, y and y² in units of unit[0], unit[1]
  double unit[2];
  int32_t* rows_in;  // a node's slots, partitioned in place (through rows_out, weights_out)
  uint8_t* weights_in;
  int32_t* rows_out;
  uint8_t* weights_out;
  Criterion criterion;
  int k;  // statistics per node: classes, or 3 (W, S, Q)
  int64_t max_features;
  int64_t min_samples_leaf;
  int batch_cap;  // features per histogram pass
  LevelSplit* splits;
  double* left_stats;  // nodes x k
  const int32_t* node_index;  // the launch's nodes: block (or warp) i takes node node_index[i]
};

// Histogram cells: class weights (int32: at most 255 x n < 2^31 in the driver's batches), or
// regression's W, S, Q in integer units (int64: below 2^53, quantize_targets).
template <bool kRegression>
using Cell = std::conditional_t<kRegression, long long, int32_t>;

template <bool kRegression>
__device__ __forceinline__ double cell_value(const SplitArgs& a, Cell<kRegression> cell, int column) {
  if constexpr (kRegression) return column == 0 ? static_cast<double>(cell) : static_cast<double>(cell) * a.unit[column - 1];
  return static_cast<double>(cell);
}

// A node's record as both search kernels write it (found = false: no split; the other fields
// as the kernel found them).
__device__ __forceinline__ LevelSplit split_record(bool found, int32_t feature, int32_t bin, int32_t next_bin,
                                                   double improvement, int64_t left_rows, int64_t right_rows,
                                                   int64_t left_slots) {
  LevelSplit s;
  s.found = found ? 1 : 0;
  s.feature = feature;
  s.bin = bin;
  s.next_bin = next_bin;
  s.improvement = improvement;
  s.left_rows = left_rows;
  s.right_rows = right_rows;
  s.left_slots = left_slots;
  return s;
}

// The winning split's impurity_improvement (split_proxy ranked the candidates): node and left
// statistics, width of them (at most K).
template <int K>
__device__ double winner_improvement(const SplitArgs& a, double root_weight, const double* node, const double* left,
                                     int width) {
  double right[K];
  for (int c = 0; c < width; ++c) right[c] = __dsub_rn(node[c], left[c]);
  return split_improvement(a.criterion, root_weight, stats_weight(a.criterion, node, width),
                           stats_impurity(a.criterion, node, width), left, right, width);
}

template <bool kRegression>
__global__ void __launch_bounds__(kFitBlock) split_level_kernel(SplitArgs a) {
  using C = Cell<kRegression>;
  using Scan = cub::BlockScan<int64_t, kFitBlock>;
  using Reduce = cub::BlockReduce<Candidate, kFitBlock>;
  __shared__ union {
    typename Scan::TempStorage scan;
    typename Reduce::TempStorage reduce;
  } temp;
  __shared__ double node_stats[kMaxClasses], best_left[kMaxClasses];
  __shared__ int64_t shared_rows;
  __shared__ int32_t split_feature, split_bin;
  extern __shared__ long long shared_words[];
  C* histogram = reinterpret_cast<C*>(shared_words);  // [batch][256][k] cells, then [batch][256] rows
  const int k = a.k;
  const int tid = threadIdx.x;
  const int32_t index = a.node_index[blockIdx.x];
  const LevelNode node = a.nodes[index];
  const int32_t* order = a.order + static_cast<int64_t>(index) * a.d;
  const int64_t begin = node.slot_begin, end = node.slot_begin + node.slot_count;

  bool found = false;
  double best_score = 0.0;
  int32_t best_feature = -1, best_bin = -1, best_next = -1;
  int64_t best_left_rows = 0, node_rows = 0;
  int64_t informative = 0, next = 0;
  while (informative < a.max_features && next < a.d) {
    const int batch = static_cast<int>(min(static_cast<int64_t>(a.batch_cap), min(a.max_features - informative, a.d - next)));
    int32_t* rows_hist = reinterpret_cast<int32_t*>(histogram + batch * kFitBlock * k);
    for (int i = tid; i < batch * kFitBlock * k; i += kFitBlock) histogram[i] = 0;
    for (int i = tid; i < batch * kFitBlock; i += kFitBlock) rows_hist[i] = 0;
    __syncthreads();
    for (int64_t s = begin + tid; s < end; s += kFitBlock) {
      const int w = a.weights_in[s];
      if (w == 0) continue;
      const int32_t row = a.rows_in[s];
      const uint8_t* code_row = a.codes + static_cast<int64_t>(row) * a.d;
      if constexpr (kRegression) {
        // Two's complement: unsigned adds give the signed sums.
        const unsigned long long wy = static_cast<unsigned long long>(w * a.units[2 * static_cast<int64_t>(row)]);
        const unsigned long long wq = static_cast<unsigned long long>(w * a.units[2 * static_cast<int64_t>(row) + 1]);
        for (int fi = 0; fi < batch; ++fi) {
          const int b = code_row[order[next + fi]];
          unsigned long long* cell = reinterpret_cast<unsigned long long*>(histogram + (fi * kFitBlock + b) * 3);
          atomicAdd(cell, static_cast<unsigned long long>(w));
          atomicAdd(cell + 1, wy);
          atomicAdd(cell + 2, wq);
          atomicAdd(rows_hist + fi * kFitBlock + b, 1);
        }
      } else {
        const int c = a.labels[row];
        for (int fi = 0; fi < batch; ++fi) {
          const int b = code_row[order[next + fi]];
          atomicAdd(histogram + (fi * kFitBlock + b) * k + c, w);
          atomicAdd(rows_hist + fi * kFitBlock + b, 1);
        }
      }
    }
    __syncthreads();
    for (int fi = 0; fi < batch; ++fi) {
      const int32_t f = order[next + fi];
      const int nb = a.bins[f];
      const int64_t rows_here = rows_hist[fi * kFitBlock + tid];
      const int occupied = __syncthreads_count(tid < nb && rows_here > 0);
      if (occupied <= 1) continue;  // constant in this node
      ++informative;
      int64_t left_rows = 0;
      Scan(temp.scan).InclusiveSum(rows_here, left_rows);
      __syncthreads();
      C* counts = histogram + (fi * kFitBlock + tid) * k;
      for (int c = 0; c < k; ++c) {
        int64_t prefix = 0;
        Scan(temp.scan).InclusiveSum(static_cast<int64_t>(counts[c]), prefix);
        __syncthreads();
        counts[c] = static_cast<C>(prefix);
      }
      if (tid == kFitBlock - 1) {  // the last bin's prefix: the node's totals
        shared_rows = left_rows;
        for (int c = 0; c < k; ++c) node_stats[c] = cell_value<kRegression>(a, counts[c], c);
      }
      __syncthreads();
      node_rows = shared_rows;
      Candidate mine{0.0, -1, 0};
      const int64_t right_rows = node_rows - left_rows;
      if (tid + 1 < nb && rows_here > 0 && left_rows >= a.min_samples_leaf && right_rows >= a.min_samples_leaf) {
        double left[kRegression ? 3 : kMaxClasses], right[kRegression ? 3 : kMaxClasses];
        for (int c = 0; c < k; ++c) {
          left[c] = cell_value<kRegression>(a, counts[c], c);
          right[c] = __dsub_rn(node_stats[c], left[c]);
        }
        const double left_weight = stats_weight(a.criterion, left, k), right_weight = stats_weight(a.criterion, right, k);
        // Poisson: both children need Σ w y above EPSILON (best_split's rule).
        const bool refused = a.criterion == Criterion::poisson && (left[1] <= kPoissonEpsilon || right[1] <= kPoissonEpsilon);
        if (left_weight > 0.0 && right_weight > 0.0 && !refused)
          mine = Candidate{split_proxy(a.criterion, left, right, k, left_weight, right_weight), tid, left_rows};
      }
      const Candidate best = Reduce(temp.reduce).Reduce(mine, BetterCandidate());
      if (tid == 0 && best.bin >= 0 && (!found || best.score > best_score)) {
        found = true;
        best_score = best.score;
        best_feature = f;
        best_bin = best.bin;
        int after = best.bin + 1;
        while (rows_hist[fi * kFitBlock + after] == 0) ++after;  // exists: right_rows > 0
        best_next = after;
        best_left_rows = best.left_rows;
        for (int c = 0; c < k; ++c) best_left[c] = cell_value<kRegression>(a, histogram[(fi * kFitBlock + best.bin) * k + c], c);
      }
      __syncthreads();
    }
    next += batch;
    __syncthreads();
  }

  // The record, and the winner broadcast for the partition.
  if (tid == 0) {
    a.splits[index] = split_record(found, best_feature, best_bin, best_next,
                                   found ? winner_improvement<kMaxClasses>(a, node.root_weight, node_stats, best_left, k) : 0.0,
                                   best_left_rows, node_rows - best_left_rows, 0);
    for (int c = 0; c < k; ++c) a.left_stats[static_cast<int64_t>(index) * k + c] = found ? best_left[c] : 0.0;
    split_bin = found ? best_bin : -1;
    split_feature = best_feature;
  }
  __syncthreads();
  if (split_bin < 0) return;
  const int bin = split_bin;
  const int64_t feature = split_feature;
  int64_t left_base = 0, right_base = 0;
  for (int64_t chunk = begin; chunk < end; chunk += kFitBlock) {
    const int64_t s = chunk + tid;
    const bool valid = s < end;
    int32_t row = 0;
    uint8_t w = 0;
    bool go_left = false;
    if (valid) {
      row = a.rows_in[s];
      w = a.weights_in[s];
      go_left = a.codes[static_cast<int64_t>(row) * a.d + feature] <= bin;
    }
    int64_t position = 0, lefts = 0;
    Scan(temp.scan).ExclusiveSum(static_cast<int64_t>(go_left), position, lefts);
    __syncthreads();
    const int64_t valid_count = min(static_cast<int64_t>(kFitBlock), end - chunk);
    if (valid) {
      const int64_t dst = go_left ? begin + left_base + position : end - 1 - (right_base + (tid - position));
      a.rows_out[dst] = row;
      a.weights_out[dst] = w;
    }
    left_base += lefts;
    right_base += valid_count - lefts;
  }
  // Back into the list the node's slots came from, so that every node's slots are always in one
  // place, whichever level or round split it (best-first growth evaluates nodes long before it
  // expands them). The block's own writes are visible to it after the barrier.
  __syncthreads();
  for (int64_t s = begin + tid; s < end; s += kFitBlock) {
    a.rows_in[s] = a.rows_out[s];
    a.weights_in[s] = a.weights_out[s];
  }
  if (tid == 0) a.splits[index].left_slots = left_base;
}

// ---- Small nodes: a warp each -----------------------------------------------------------------
// Most nodes of a deep level hold a few dozen slots, and a block per node then spends its time
// clearing and scanning 256-bin histograms. A small node takes a warp instead. Per drawn feature
// the warp sorts its slots' (code, slot) keys, so that inclusive sums over the sorted slots give
// each occupied bin's prefix sums, the integers the block kernel's histogram scans give; the
// thresholds between occupied bins are scored with the same formulas (split_proxy) and picked by
// the same rules (ties: the lower bin; a later feature only when strictly better), and the slots
// are partitioned as the block kernel partitions them: the same records, bit for bit.
//  - Regression: nodes of up to kWarp x J slots (J = 1 up to 32 slots, J = kWideSlots up to
//    128), a lane holding J slots (element e = j * kWarp + lane). Only what the score needs is
//    summed per feature (W and S; Q too for poisson); the winner's left statistics are summed
//    once, over the slots that go left, as the slots are partitioned.
//  - Classification: nodes of up to kWarp slots, a lane holding a slot's k class weights (up to
//    kWarpNodeClasses). (The regression kernel's layout did not give the host's classification
//    splits at every node on the H200, a bug not found yet: LevelwiseTreesGpu.SplitLevel* finds it.)
constexpr int kWarpNodeClasses = 8;   // more classes: the block kernel (a lane holds k sums)
constexpr int kWarpNodesPerBlock = 8;
constexpr int kWideSlots = 4;         // slots a lane in the wide warp kernel: nodes of up to 128 slots
constexpr unsigned kAllLanes = 0xffffffffu;
constexpr int kInactiveBin = 256;     // weight-0 and padding elements sort after every code
constexpr int kElementBits = 7;       // an element's index in its key (kWarp * kWideSlots <= 128)

// The warp's J x kWarp keys in ascending order of e (bitonic network: partners across lanes by
// shuffles, partners in one lane's registers directly).
template <int J>
__device__ __forceinline__ void warp_sort(uint32_t (&key)[J]) {
  const int lane = threadIdx.x % kWarp;
#pragma unroll
  for (int size = 2; size <= kWarp * J; size <<= 1) {
#pragma unroll
    for (int stride = size >> 1; stride > 0; stride >>= 1) {
      if (stride >= kWarp) {
        const int s = stride / kWarp;
#pragma unroll
        for (int j = 0; j < J; ++j) {
          if ((j & s) != 0) continue;
          const bool ascending = ((j * kWarp) & size) == 0;
          const uint32_t lo = min(key[j], key[j + s]), hi = max(key[j], key[j + s]);
          key[j] = ascending ? lo : hi;
          key[j + s] = ascending ? hi : lo;
        }
      } else {
#pragma unroll
        for (int j = 0; j < J; ++j) {
          const int e = j * kWarp + lane;
          const uint32_t other = __shfl_xor_sync(kAllLanes, key[j], stride);
          const bool ascending = (e & size) == 0, lower = (e & stride) == 0;
          key[j] = (lower == ascending) ? min(key[j], other) : max(key[j], other);
        }
      }
    }
  }
}

// Inclusive sums over the elements in the order of e.
template <int J, typename V>
__device__ __forceinline__ void warp_inclusive_sums(V (&v)[J]) {
  const int lane = threadIdx.x % kWarp;
  V carry = 0;
#pragma unroll
  for (int j = 0; j < J; ++j) {
    V x = v[j];
#pragma unroll
    for (int offset = 1; offset < kWarp; offset <<= 1) {
      const V up = __shfl_up_sync(kAllLanes, x, offset);
      if (lane >= offset) x += up;
    }
    x += carry;
    v[j] = x;
    carry = __shfl_sync(kAllLanes, x, kWarp - 1);
  }
}

__device__ __forceinline__ long long warp_total(long long v) {
  for (int offset = kWarp / 2; offset > 0; offset >>= 1) v += __shfl_xor_sync(kAllLanes, v, offset);
  return v;
}

// v[j] of the lane's register j (j the same on every lane).
template <int J, typename V>
__device__ __forceinline__ V register_at(const V (&v)[J], int j) {
  V out = v[0];
#pragma unroll
  for (int i = 1; i < J; ++i)
    if (i == j) out = v[i];
  return out;
}

// The warp's slots' cells, read by sorted position: W, S and Q in units (Q: Σ w y² or Σ w y log y).
template <int J>
struct WarpSlots {
  static constexpr int N = kWarp * J;
  int32_t weight[kWarpNodesPerBlock][N];
  long long sum[kWarpNodesPerBlock][N];
  long long third[kWarpNodesPerBlock][N];
};

template <int J>
__global__ void __launch_bounds__(kWarp * kWarpNodesPerBlock) split_small_regression_kernel(SplitArgs a, int64_t count) {
  constexpr int K = 3;
  using V = long long;
  __shared__ WarpSlots<J> slots;
  const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
  const int64_t w_index = blockIdx.x * int64_t(kWarpNodesPerBlock) + warp;
  if (w_index >= count) return;  // (a whole warp; no block barrier below)
  const int32_t index = a.node_index[w_index];
  const LevelNode node = a.nodes[index];
  const int32_t* order = a.order + static_cast<int64_t>(index) * a.d;
  const int64_t begin = node.slot_begin, end = node.slot_begin + node.slot_count;
  const bool third_scored = a.criterion == Criterion::poisson;  // the poisson score reads Σ w y log y
  int32_t row[J];
  uint8_t weight[J];
  V node_cells[K];
#pragma unroll
  for (int c = 0; c < K; ++c) node_cells[c] = 0;
#pragma unroll
  for (int j = 0; j < J; ++j) {
    const int e = j * kWarp + lane;
    const bool valid = begin + e < end;
    row[j] = valid ? a.rows_in[begin + e] : 0;
    weight[j] = valid ? a.weights_in[begin + e] : 0;
    const int w = weight[j];
    const long long s = w > 0 ? w * a.units[2 * static_cast<int64_t>(row[j])] : 0;
    const long long q = w > 0 ? w * a.units[2 * static_cast<int64_t>(row[j]) + 1] : 0;
    slots.weight[warp][e] = w;
    slots.sum[warp][e] = s;
    slots.third[warp][e] = q;
    node_cells[0] += w;
    node_cells[1] += s;
    node_cells[2] += q;
  }
  __syncwarp();
  auto value = [&](long long cell, int c) { return c == 0 ? static_cast<double>(cell) : static_cast<double>(cell) * a.unit[c - 1]; };
  double node_stats[K];
  int64_t node_rows = 0;
#pragma unroll
  for (int c = 0; c < K; ++c) node_stats[c] = value(warp_total(node_cells[c]), c);
#pragma unroll
  for (int j = 0; j < J; ++j) node_rows += __popc(__ballot_sync(kAllLanes, weight[j] > 0));

  bool found = false, informative_seen = false;
  double best_score = 0.0;
  int32_t best_feature = -1, best_bin = -1, best_next = -1;
  int64_t best_left_rows = 0;
  int64_t informative = 0;
  for (int64_t next = 0; next < a.d && informative < a.max_features; ++next) {
    const int32_t f = order[next];
    uint32_t key[J];
#pragma unroll
    for (int j = 0; j < J; ++j) {
      const uint32_t code = weight[j] > 0 ? a.codes[static_cast<int64_t>(row[j]) * a.d + f] : kInactiveBin;
      key[j] = (code << kElementBits) | static_cast<uint32_t>(j * kWarp + lane);
    }
    warp_sort<J>(key);
    int bin[J], next_bin[J], from[J];
    bool bin_end[J];
    int ends = 0;
#pragma unroll
    for (int j = 0; j < J; ++j) {
      bin[j] = static_cast<int>(key[j] >> kElementBits);
      from[j] = static_cast<int>(key[j] & ((1u << kElementBits) - 1));
    }
#pragma unroll
    for (int j = 0; j < J; ++j) {
      const int down = __shfl_down_sync(kAllLanes, bin[j], 1);
      const int next_first = j + 1 < J ? __shfl_sync(kAllLanes, bin[(j + 1) % J], 0) : kInactiveBin + 1;
      next_bin[j] = lane == kWarp - 1 ? next_first : down;
      bin_end[j] = bin[j] < kInactiveBin && next_bin[j] != bin[j];
      ends += __popc(__ballot_sync(kAllLanes, bin_end[j]));
    }
    if (ends <= 1) continue;  // constant in this node
    ++informative;
    informative_seen = true;
    // The left side's sums at each sorted element (weight-0 elements sort last and add nothing).
    V left[K][J];
#pragma unroll
    for (int j = 0; j < J; ++j) {
      const bool counted = bin[j] < kInactiveBin;
      left[0][j] = counted ? slots.weight[warp][from[j]] : 0;
      left[1][j] = counted ? slots.sum[warp][from[j]] : 0;
      left[2][j] = counted && third_scored ? slots.third[warp][from[j]] : 0;
    }
    warp_inclusive_sums<J>(left[0]);
    warp_inclusive_sums<J>(left[1]);
    if (third_scored) warp_inclusive_sums<J>(left[2]);
    // The lane's best threshold (after a bin's last element), then the warp's.
    double top = 0.0;
    int top_e = INT_MAX;
#pragma unroll
    for (int j = 0; j < J; ++j) {
      const int e = j * kWarp + lane;
      const int64_t left_rows = e + 1, right_rows = node_rows - left_rows;  // elements up to e are all counted
      if (!bin_end[j] || left_rows < a.min_samples_leaf || right_rows < a.min_samples_leaf) continue;
      double l[K], r[K];
#pragma unroll
      for (int c = 0; c < K; ++c) {
        l[c] = value(left[c][j], c);
        r[c] = __dsub_rn(node_stats[c], l[c]);
      }
      const double left_weight = stats_weight(a.criterion, l, K), right_weight = stats_weight(a.criterion, r, K);
      const bool refused = a.criterion == Criterion::poisson && (l[1] <= kPoissonEpsilon || r[1] <= kPoissonEpsilon);
      if (!(left_weight > 0.0) || !(right_weight > 0.0) || refused) continue;
      const double score = split_proxy(a.criterion, l, r, K, left_weight, right_weight);
      if (top_e == INT_MAX || score > top) {  // e ascends with j: ties keep the lower bin
        top = score;
        top_e = e;
      }
    }
    const bool candidate = top_e != INT_MAX;
    if (!__any_sync(kAllLanes, candidate)) continue;
    double warp_top = candidate ? top : -INFINITY;
    for (int offset = kWarp / 2; offset > 0; offset >>= 1) warp_top = fmax(warp_top, __shfl_xor_sync(kAllLanes, warp_top, offset));
    const int e_best = __reduce_min_sync(kAllLanes, candidate && top == warp_top ? top_e : INT_MAX);
    if (e_best == INT_MAX) continue;  // (scores are never NaN: both sides weigh > 0)
    if (!found || warp_top > best_score) {
      found = true;
      best_score = warp_top;
      best_feature = f;
      const int j_best = e_best / kWarp, lane_best = e_best % kWarp;
      best_bin = __shfl_sync(kAllLanes, register_at<J>(bin, j_best), lane_best);
      best_next = __shfl_sync(kAllLanes, register_at<J>(next_bin, j_best), lane_best);
      best_left_rows = e_best + 1;
    }
  }

  // The partition (left slots first in order, right ones after them in reverse order) and the
  // winner's left statistics, summed over the slots that go left.
  int64_t lefts = 0;
  V left_cells[K];
#pragma unroll
  for (int c = 0; c < K; ++c) left_cells[c] = 0;
  if (found) {
    bool go_left[J];
#pragma unroll
    for (int j = 0; j < J; ++j) {
      const int e = j * kWarp + lane;
      go_left[j] = begin + e < end && a.codes[static_cast<int64_t>(row[j]) * a.d + best_feature] <= best_bin;
      if (go_left[j]) {
        left_cells[0] += weight[j];
        left_cells[1] += slots.sum[warp][e];
        left_cells[2] += slots.third[warp][e];
      }
    }
    __syncwarp();  // every lane has read its slots
    int before = 0;  // left slots among the earlier elements
#pragma unroll
    for (int j = 0; j < J; ++j) {
      const int e = j * kWarp + lane;
      const unsigned mask = __ballot_sync(kAllLanes, go_left[j]);
      const int position = before + __popc(mask & ((1u << lane) - 1u));
      if (begin + e < end) {
        const int64_t dst = go_left[j] ? begin + position : end - 1 - (e - position);
        a.rows_in[dst] = row[j];
        a.weights_in[dst] = weight[j];
      }
      before += __popc(mask);
    }
    lefts = before;
  }
  double best_left[K];
#pragma unroll
  for (int c = 0; c < K; ++c) best_left[c] = found ? value(warp_total(left_cells[c]), c) : 0.0;
  if (lane == 0) {
    // right_rows: (informative_seen ? node_rows : 0) is the block kernel's count, from a scan.
    a.splits[index] = split_record(found, best_feature, best_bin, best_next,
                                   found ? winner_improvement<K>(a, node.root_weight, node_stats, best_left, K) : 0.0,
                                   best_left_rows, (informative_seen ? node_rows : 0) - best_left_rows, lefts);
  }
  if (lane < K) {
    double v = 0.0;
#pragma unroll
    for (int c = 0; c < K; ++c)
      if (c == lane) v = best_left[c];
    a.left_stats[static_cast<int64_t>(index) * K + lane] = v;
  }
}

// Classification's small nodes (up to kWarp slots, at most kWarpNodeClasses classes): a lane
// holds a slot and its k class weights.
__global__ void __launch_bounds__(kWarp * kWarpNodesPerBlock) split_small_class_nodes_kernel(SplitArgs a, int64_t count) {
  constexpr int K = kWarpNodeClasses;
  constexpr unsigned kAll = kAllLanes;
  const int lane = threadIdx.x % kWarp;
  const int64_t w_index = blockIdx.x * int64_t(kWarpNodesPerBlock) + threadIdx.x / kWarp;
  if (w_index >= count) return;  // (a whole warp)
  const int32_t index = a.node_index[w_index];
  const LevelNode node = a.nodes[index];
  const int32_t* order = a.order + static_cast<int64_t>(index) * a.d;
  const int64_t begin = node.slot_begin, end = node.slot_begin + node.slot_count;
  const int k = a.k;
  const bool valid = begin + lane < end;
  const int32_t row = valid ? a.rows_in[begin + lane] : 0;
  const uint8_t w = valid ? a.weights_in[begin + lane] : 0;
  const bool active = w > 0;
  // The slot's cells (as the block kernel adds them): class weights, or W, S, Q in units.
  long long mine[K];
#pragma unroll
  for (int c = 0; c < K; ++c) mine[c] = 0;
  if (active) {
    const int label = a.labels[row];
#pragma unroll
    for (int c = 0; c < K; ++c) mine[c] = c == label ? w : 0;
  }
  auto value = [](long long cell, int) { return static_cast<double>(cell); };
  double node_stats[K];
#pragma unroll
  for (int c = 0; c < K; ++c) {
    long long total = mine[c];
    for (int offset = kWarp / 2; offset > 0; offset >>= 1) total += __shfl_xor_sync(kAll, total, offset);
    node_stats[c] = c < k ? value(total, c) : 0.0;
  }
  const int64_t node_rows = __popc(__ballot_sync(kAll, active));

  bool found = false, informative_seen = false;
  double best_score = 0.0;
  int32_t best_feature = -1, best_bin = -1, best_next = -1;
  int64_t best_left_rows = 0;
  double best_left[K];
#pragma unroll
  for (int c = 0; c < K; ++c) best_left[c] = 0.0;
  int64_t informative = 0;
  for (int64_t next = 0; next < a.d && informative < a.max_features; ++next) {
    const int32_t f = order[next];
    // Inactive slots (weight 0) sort after every code, as bin 256.
    const uint32_t code = active ? a.codes[static_cast<int64_t>(row) * a.d + f] : 256u;
    uint32_t key[1] = {(code << 5) | static_cast<uint32_t>(lane)};
    warp_sort<1>(key);
    const int from = static_cast<int>(key[0] & 31u), bin = static_cast<int>(key[0] >> 5);
    const bool counted = bin < 256;
    long long left[K];
#pragma unroll
    for (int c = 0; c < K; ++c) {
      long long sums[1] = {__shfl_sync(kAll, mine[c], from)};
      warp_inclusive_sums<1>(sums);
      left[c] = sums[0];
    }
    const int64_t left_rows = lane + 1;  // counted slots sort first
    const int next_bin = __shfl_down_sync(kAll, bin, 1);
    const bool bin_end = counted && (lane == kWarp - 1 || next_bin != bin);
    const unsigned ends = __ballot_sync(kAll, bin_end);
    if (__popc(ends) <= 1) continue;  // constant in this node
    ++informative;
    informative_seen = true;
    // A threshold after each occupied bin but the last.
    const bool later = lane < kWarp - 1 && (ends >> (lane + 1)) != 0u;
    double score = 0.0;
    bool candidate = false;
    const int64_t right_rows = node_rows - left_rows;
    if (bin_end && later && left_rows >= a.min_samples_leaf && right_rows >= a.min_samples_leaf) {
      double l[K], r[K];
#pragma unroll
      for (int c = 0; c < K; ++c) {
        l[c] = c < k ? value(left[c], c) : 0.0;
        r[c] = __dsub_rn(node_stats[c], l[c]);
      }
      const double left_weight = stats_weight(a.criterion, l, k), right_weight = stats_weight(a.criterion, r, k);
      const bool refused = a.criterion == Criterion::poisson && (l[1] <= kPoissonEpsilon || r[1] <= kPoissonEpsilon);
      if (left_weight > 0.0 && right_weight > 0.0 && !refused) {
        score = split_proxy(a.criterion, l, r, k, left_weight, right_weight);
        candidate = true;
      }
    }
    // The warp's best (BetterCandidate's order: greater score, then the lower bin).
    double top = score;
    int top_bin = candidate ? bin : -1, top_lane = lane;
    for (int offset = kWarp / 2; offset > 0; offset >>= 1) {
      const double other = __shfl_xor_sync(kAll, top, offset);
      const int other_bin = __shfl_xor_sync(kAll, top_bin, offset), other_lane = __shfl_xor_sync(kAll, top_lane, offset);
      const bool take = top_bin < 0 ? other_bin >= 0
                                    : other_bin >= 0 && (other != top ? other > top : other_bin < top_bin);
      if (take) {
        top = other;
        top_bin = other_bin;
        top_lane = other_lane;
      }
    }
    if (top_bin >= 0 && (!found || top > best_score)) {
      found = true;
      best_score = top;
      best_feature = f;
      best_bin = top_bin;
      best_next = __shfl_sync(kAll, bin, top_lane + 1);  // the next occupied bin's first sorted lane
      best_left_rows = __shfl_sync(kAll, left_rows, top_lane);
#pragma unroll
      for (int c = 0; c < K; ++c) best_left[c] = c < k ? value(__shfl_sync(kAll, left[c], top_lane), c) : 0.0;
    }
  }

  // The partition: left slots first in order, right ones after them in reverse order.
  int64_t lefts = 0;
  if (found) {
    const bool go_left = valid && a.codes[static_cast<int64_t>(row) * a.d + best_feature] <= best_bin;
    const unsigned left_mask = __ballot_sync(kAll, go_left);
    const int position = __popc(left_mask & ((1u << lane) - 1u));
    lefts = __popc(left_mask);
    __syncwarp();  // every lane has read its slot
    if (valid) {
      const int64_t dst = go_left ? begin + position : end - 1 - (lane - position);
      a.rows_in[dst] = row;
      a.weights_in[dst] = w;
    }
  }
  if (lane == 0) {
    // right_rows: (informative_seen ? node_rows : 0) is the block kernel's count, from a scan.
    a.splits[index] = split_record(found, best_feature, best_bin, best_next,
                                   found ? winner_improvement<K>(a, node.root_weight, node_stats, best_left, k) : 0.0,
                                   best_left_rows, (informative_seen ? node_rows : 0) - best_left_rows, lefts);
  }
  if (lane < k) {
    double v = 0.0;
#pragma unroll
    for (int c = 0; c < K; ++c)
      if (c == lane) v = found ? best_left[c] : 0.0;
    a.left_stats[static_cast<int64_t>(index) * k + lane] = v;
  }
}

// ---- The distributed search's primitives (split_level_over_ranks): a block per (node, feature)
// pair, or per node for the partition. Integer sums, so the order of the atomics does not matter.

struct PairArgs {
  const LevelNode* nodes;
  const int32_t* pair_node;
  const int32_t* pair_feature;
  const int64_t* offset;  // pairs + 1: the first cell of each pair
  const uint8_t* codes;   // n x d
  int64_t d;
  const int32_t* rows;  // the slots
  const uint8_t* weights;
};

__global__ void __launch_bounds__(kFitBlock) count_bins_kernel(PairArgs a, int32_t* __restrict__ counts) {
  __shared__ int32_t histogram[256];
  const int64_t p = blockIdx.x;
  const LevelNode node = a.nodes[a.pair_node[p]];
  const int64_t f = a.pair_feature[p];
  histogram[threadIdx.x] = 0;  // kFitBlock == 256
  __syncthreads();
  for (int64_t s = node.slot_begin + threadIdx.x; s < node.slot_begin + node.slot_count; s += kFitBlock)
    if (a.weights[s] != 0) atomicAdd(&histogram[a.codes[static_cast<int64_t>(a.rows[s]) * a.d + f]], 1);
  __syncthreads();
  if (threadIdx.x < a.offset[p + 1] - a.offset[p]) counts[a.offset[p] + threadIdx.x] = histogram[threadIdx.x];
}

// acc[(offset[p] + cell_of[p * 256 + bin]) * k + c]: class weights, or regression's W, W y, W y²
// in integer units (two's complement: unsigned atomics add signed values).
template <bool kRegression>
__global__ void __launch_bounds__(kFitBlock) bin_stats_kernel(PairArgs a, const int32_t* __restrict__ cell_of,
                                                              const int32_t* __restrict__ labels,
                                                              const long long* __restrict__ units, int k,
                                                              unsigned long long* __restrict__ acc) {
  const int64_t p = blockIdx.x;
  const LevelNode node = a.nodes[a.pair_node[p]];
  const int64_t f = a.pair_feature[p];
  const int32_t* cell = cell_of + p * 256;
  unsigned long long* base = acc + a.offset[p] * k;
  for (int64_t s = node.slot_begin + threadIdx.x; s < node.slot_begin + node.slot_count; s += kFitBlock) {
    const long long w = a.weights[s];
    if (w == 0) continue;
    const int64_t row = a.rows[s];
    unsigned long long* c = base + static_cast<int64_t>(cell[a.codes[row * a.d + f]]) * k;
    if constexpr (kRegression) {
      atomicAdd(c, static_cast<unsigned long long>(w));
      atomicAdd(c + 1, static_cast<unsigned long long>(w * units[2 * row]));
      atomicAdd(c + 2, static_cast<unsigned long long>(w * units[2 * row + 1]));
    } else {
      atomicAdd(c + labels[row], static_cast<unsigned long long>(w));
    }
  }
}

// A block per node with a split: its slots partitioned stably (left ones first, in order, then
// the right ones in order) through the scratch lists and back, chunk by chunk with block scans.
__global__ void __launch_bounds__(kFitBlock) partition_kernel(const LevelNode* __restrict__ nodes,
                                                              LevelSplit* __restrict__ splits, const uint8_t* __restrict__ codes,
                                                              int64_t d, int32_t* __restrict__ rows, uint8_t* __restrict__ weights,
                                                              int32_t* __restrict__ rows_out, uint8_t* __restrict__ weights_out) {
  using Scan = cub::BlockScan<int, kFitBlock>;
  using Reduce = cub::BlockReduce<int, kFitBlock>;
  __shared__ union {
    typename Scan::TempStorage scan;
    typename Reduce::TempStorage reduce;
  } temp;
  __shared__ int64_t shared_total;
  LevelSplit& split = splits[blockIdx.x];
  if (!split.found) return;
  const LevelNode node = nodes[blockIdx.x];
  const int64_t begin = node.slot_begin, end = node.slot_begin + node.slot_count, f = split.feature;
  const int bin = split.bin;
  auto goes_left = [&](int64_t s) { return s < end && codes[static_cast<int64_t>(rows[s]) * d + f] <= bin; };
  int64_t lefts = 0;  // valid in thread 0
  for (int64_t base = begin; base < end; base += kFitBlock) {
    lefts += Reduce(temp.reduce).Sum(goes_left(base + threadIdx.x) ? 1 : 0);
    __syncthreads();
  }
  if (threadIdx.x == 0) shared_total = lefts;
  __syncthreads();
  const int64_t left_total = shared_total;
  int64_t left_before = 0, right_before = 0;
  for (int64_t base = begin; base < end; base += kFitBlock) {
    const int64_t s = base + threadIdx.x;
    const bool in = s < end;
    const bool left = goes_left(s);
    int left_rank = 0, chunk_lefts = 0;
    Scan(temp.scan).ExclusiveSum(left ? 1 : 0, left_rank, chunk_lefts);
    __syncthreads();
    const int64_t right_rank = threadIdx.x - left_rank;
    if (in) {
      const int64_t to = left ? begin + left_before + left_rank : begin + left_total + right_before + right_rank;
      rows_out[to] = rows[s];
      weights_out[to] = weights[s];
    }
    const int64_t chunk = end - base < kFitBlock ? end - base : kFitBlock;
    left_before += chunk_lefts;
    right_before += chunk - chunk_lefts;
  }
  __syncthreads();  // the block's writes to the scratch lists are visible to all its threads
  for (int64_t s = begin + threadIdx.x; s < end; s += kFitBlock) {
    rows[s] = rows_out[s];
    weights[s] = weights_out[s];
  }
  if (threadIdx.x == 0) split.left_slots = left_total;
}

// gather_rows: a block per node, its slots' codes (a slot's d codes are its row's, row-major) and
// statistics (the host backend's products: w, w y, w y², or w in the label's column) into the
// node's range of the outputs.
template <bool kRegression>
__global__ void __launch_bounds__(kFitBlock) gather_rows_kernel(const LevelNode* __restrict__ nodes,
                                                                const int64_t* __restrict__ out_begin,
                                                                const uint8_t* __restrict__ codes, int64_t d,
                                                                const int32_t* __restrict__ rows,
                                                                const uint8_t* __restrict__ weights,
                                                                const int32_t* __restrict__ labels,
                                                                const long long* __restrict__ units, double unit0,
                                                                double unit1, int k, uint8_t* __restrict__ out_codes,
                                                                double* __restrict__ out_stats) {
  const LevelNode node = nodes[blockIdx.x];
  const int64_t begin = out_begin[blockIdx.x];
  for (int64_t i = threadIdx.x; i < node.slot_count * d; i += kFitBlock) {
    const int64_t s = i / d, f = i - s * d;
    out_codes[(begin + s) * d + f] = codes[static_cast<int64_t>(rows[node.slot_begin + s]) * d + f];
  }
  for (int64_t s = threadIdx.x; s < node.slot_count; s += kFitBlock) {
    const int64_t row = rows[node.slot_begin + s];
    const double w = static_cast<double>(weights[node.slot_begin + s]);
    double* out = out_stats + (begin + s) * k;
    if (kRegression) {
      const double y = static_cast<double>(units[2 * row]) * unit0;
      const double y2 = static_cast<double>(units[2 * row + 1]) * unit1;
      out[0] = w;
      out[1] = w * y;
      out[2] = w * y2;
    } else {
      for (int c = 0; c < k; ++c) out[c] = 0.0;
      out[labels[row]] = w;
    }
  }
}

// Each node's feature draw order from its seed (feature_order_direct, d <= kMaxD <= kDirectDraws):
// a thread per node, its words and order in local memory (sized for kMaxD: the device reserves
// local memory for every thread it can hold), then written out.
constexpr int kOrderBlock = 128;
template <int kMaxD>
__global__ void __launch_bounds__(kOrderBlock) feature_orders_kernel(const LevelNode* nodes, int64_t m, int d, int32_t* orders) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * kOrderBlock + threadIdx.x;
  if (i >= m) return;
  uint64_t low[kMaxD + 1];
  int32_t order[kMaxD];
  feature_order_direct(nodes[i].seed, d, order, low);
  int32_t* out = orders + i * d;
  for (int j = 0; j < d; ++j) out[j] = order[j];
}

// ---- Levels kept on the device (grow_levels): the next level made where the splits are -------
constexpr int kLevelBlock = 256;

// Each node's flags (level_flags), how many of its children are searched next, and its tree's
// count of splits made (tree_splits, by one atomic per tree and warp: a level's nodes come
// grouped by tree).
__global__ void __launch_bounds__(kLevelBlock) level_flags_kernel(const LevelNode* __restrict__ nodes,
                                                                  const LevelSplit* __restrict__ splits,
                                                                  const double* __restrict__ stats,
                                                                  const double* __restrict__ left, int64_t m, int64_t depth,
                                                                  LevelGrowth growth, uint8_t* __restrict__ flags,
                                                                  int32_t* __restrict__ children, int32_t* __restrict__ tree_splits) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * kLevelBlock + threadIdx.x;
  int32_t counted = -1;  // the node's tree when its split is made (every lane reaches the match below)
  if (i < m) {
    const LevelSplit s = splits[i];
    const int k = growth.width;
    double right[kMaxClasses];
    const uint8_t f = level_flags(growth, depth, s.found != 0, s.improvement, s.left_rows, s.right_rows, stats + i * k,
                                  left + i * k, right);
    flags[i] = f;
    children[i] = ((f & kLeftSearched) != 0 ? 1 : 0) + ((f & kRightSearched) != 0 ? 1 : 0);
    if ((f & kSplitMade) != 0) counted = nodes[i].tree;
  }
  const unsigned peers = __match_any_sync(0xffffffffu, counted);
  if (counted >= 0 && (threadIdx.x % kWarp) == static_cast<unsigned>(__ffs(peers) - 1)) atomicAdd(tree_splits + counted, __popc(peers));
}

// The next level: node i's searched children at at[i] (left, then right), as
// grow_levels_by_search makes them.
__global__ void __launch_bounds__(kLevelBlock) next_level_kernel(const LevelNode* __restrict__ nodes,
                                                                 const double* __restrict__ stats,
                                                                 const LevelSplit* __restrict__ splits,
                                                                 const double* __restrict__ left,
                                                                 const uint8_t* __restrict__ flags,
                                                                 const int32_t* __restrict__ at, int64_t m, int k,
                                                                 LevelNode* __restrict__ next, double* __restrict__ next_stats) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * kLevelBlock + threadIdx.x;
  if (i >= m) return;
  const uint8_t f = flags[i];
  if ((f & (kLeftSearched | kRightSearched)) == 0) return;
  const LevelNode p = nodes[i];
  const LevelSplit s = splits[i];
  int64_t j = at[i];
  if ((f & kLeftSearched) != 0) {
    next[j] = child_node(p, s, 1);
    for (int v = 0; v < k; ++v) next_stats[j * k + v] = left[i * k + v];
    ++j;
  }
  if ((f & kRightSearched) != 0) {
    next[j] = child_node(p, s, 2);
    for (int v = 0; v < k; ++v) next_stats[j * k + v] = sub_rn(stats[i * k + v], left[i * k + v]);
  }
}

// Which kernel searches a node: the warp kernel (up to kWarp slots), the wide one (regression, up to
// kWarp x kWideSlots), else the block kernel (also every node where warps do not apply: many classes).
enum class NodeKernel { warp, wide, block };
__host__ __device__ inline NodeKernel node_kernel(int64_t slot_count, bool warps, bool wide) {
  if (warps && slot_count <= kWarp) return NodeKernel::warp;
  return wide && slot_count <= kWarp * kWideSlots ? NodeKernel::wide : NodeKernel::block;
}
struct SearchedBy {
  const LevelNode* nodes;
  bool warps, wide;
  NodeKernel kernel;
  __device__ bool operator()(int32_t i) const { return node_kernel(nodes[i].slot_count, warps, wide) == kernel; }
};

// A level's launch order: its nodes (indices into the level) by kernel, each list at its own
// place of one buffer of 3 x m.
struct LaunchOrder {
  const int32_t* index = nullptr;  // [warp nodes | m][wide nodes | m][block nodes | m]
  int64_t m = 0;
  int64_t warp = 0, wide = 0;      // the block kernel's: m - warp - wide
  const int32_t* of(NodeKernel kernel) const { return index + static_cast<int64_t>(kernel) * m; }
  int64_t count(NodeKernel kernel) const {
    return kernel == NodeKernel::warp ? warp : kernel == NodeKernel::wide ? wide : m - warp - wide;
  }
};

class CudaLevelBackend final : public LevelBackend, public LevelPrimitives {
 public:
  CudaLevelBackend(const Context& ctx, Comm* comm) : ctx_(ctx), comm_(comm != nullptr && comm->size() > 1 ? comm : nullptr) {}

  void load(const float* X, int64_t n, int64_t d, FeatureBins& bins, const LevelTargets& targets) override {
    load_any(X, n, d, bins, targets);
  }
  void load(const double* X, int64_t n, int64_t d, FeatureBins& bins, const LevelTargets& targets) override {
    load_any(X, n, d, bins, targets);
  }
  // Codes binned on the host (sparse X): uploaded and turned row-major; the ranges are the caller's.
  void load_codes(const uint8_t* codes, int64_t n, int64_t d, const FeatureBins& bins, const LevelTargets& targets) override {
    cuda::Resources& res = cuda::activate(ctx_);
    keep(n, d, bins, targets, res);
    Buffer columns = device(n * d);
    res.copy_to_device(columns.data(), codes, static_cast<std::size_t>(n * d), ctx_.n_threads());
    codes_ = device(n * d);
    transpose_codes_kernel<<<cuda::grid_for(n * d, kBlock, kMaxBlocks), kBlock, 0, res.stream>>>(columns.as<uint8_t>(), n, d,
                                                                                                 codes_.as<uint8_t>());
    GPUML_CUDA_CHECK_LAUNCH();
  }

  void begin_trees(const TreeSlots& slots) override {
    cuda::Resources& res = cuda::activate(ctx_);
    const int64_t total = slots.size();
    for (int copy = 0; copy < 2; ++copy) {
      rows_[copy] = device(total * static_cast<int64_t>(sizeof(int32_t)));
      weights_[copy] = device(total);
    }
    if (total == 0) return;
    res.copy_to_device(rows_[0].data(), slots.rows.data(), static_cast<std::size_t>(total) * sizeof(int32_t), ctx_.n_threads());
    res.copy_to_device(weights_[0].data(), slots.weights.data(), static_cast<std::size_t>(total), ctx_.n_threads());
  }

  void split_level(const std::vector<LevelNode>& nodes, const LevelRules& rules, std::vector<LevelSplit>& splits,
                   std::vector<double>& left_stats) override {
    if (comm_ != nullptr) {  // several ranks: the search over every rank's rows, on this backend's kernels
      split_level_over_ranks(*this, *comm_, nodes, rules, d_, bin_counts_, k_, ctx_.n_threads(), splits, left_stats);
      return;
    }
    cuda::Resources& res = cuda::activate(ctx_);
    const int64_t m = static_cast<int64_t>(nodes.size());
    splits.resize(static_cast<std::size_t>(m));
    left_stats.resize(static_cast<std::size_t>(m * k_));
    if (m == 0) return;
    Buffer nodes_d = device(m * sizeof(LevelNode));
    res.copy_to_device(nodes_d.data(), nodes.data(), m * sizeof(LevelNode), ctx_.n_threads());
    // The launch order: the nodes of each kernel.
    std::vector<int32_t> node_index(static_cast<std::size_t>(3 * m));
    int64_t counts[3] = {0, 0, 0};
    for (int64_t i = 0; i < m; ++i) {
      const int kernel = static_cast<int>(node_kernel(nodes[i].slot_count, warp_nodes(), regression_));
      node_index[kernel * m + counts[kernel]++] = static_cast<int32_t>(i);
    }
    Buffer index_d = device(3 * m * static_cast<int64_t>(sizeof(int32_t)));
    res.copy_to_device(index_d.data(), node_index.data(), 3 * m * sizeof(int32_t), ctx_.n_threads());
    Buffer splits_d = device(m * sizeof(LevelSplit));
    Buffer left_d = device(m * k_ * sizeof(double));
    search(nodes_d.as<LevelNode>(), &nodes, LaunchOrder{index_d.as<int32_t>(), m, counts[0], counts[1]}, rules,
           splits_d.as<LevelSplit>(), left_d.as<double>(), res);
    res.copy_to_host(splits.data(), splits_d.data(), m * sizeof(LevelSplit), ctx_.n_threads());
    res.copy_to_host(left_stats.data(), left_d.data(), m * k_ * sizeof(double), ctx_.n_threads());
  }

  void grow_levels(const std::vector<LevelNode>& roots, const std::vector<double>& root_stats, const LevelRules& rules,
                   const LevelGrowth& growth, const LevelSink& sink) override {
    if (levels_on_host()) {
      grow_levels_by_search(*this, roots, root_stats, rules, growth, ctx_.n_threads(), sink);
      return;
    }
    cuda::Resources& res = cuda::activate(ctx_);
    // Two sets of host records: the sink takes one level while the device searches the next.
    std::vector<LevelSplit> splits[2];
    std::vector<double> left[2];
    std::vector<uint8_t> flags[2];
    LevelRecords pending;  // count 0: none
    device_levels(roots, root_stats, rules, growth, [&](int64_t depth, const DeviceLevel& level, const int32_t*) {
      if (pending.count > 0) sink(pending);  // the last level, while this one is searched
      const int h = static_cast<int>(depth % 2);
      const int64_t m = level.count;
      splits[h].resize(static_cast<std::size_t>(m));
      left[h].resize(static_cast<std::size_t>(m * k_));
      flags[h].resize(static_cast<std::size_t>(m));
      res.copy_to_host(splits[h].data(), level.splits.data(), m * sizeof(LevelSplit), ctx_.n_threads());
      res.copy_to_host(left[h].data(), level.left.data(), m * k_ * sizeof(double), ctx_.n_threads());
      res.copy_to_host(flags[h].data(), level.flags.data(), static_cast<std::size_t>(m), ctx_.n_threads());
      pending = LevelRecords{depth, m, splits[h].data(), left[h].data(), flags[h].data()};
    });
    if (pending.count > 0) sink(pending);
  }

  // The levels kept on the device and the trees assembled there (tree_assembly.cu): only the
  // finished trees' arrays come back to the host.
  void grow_trees(const std::vector<LevelNode>& roots, const std::vector<double>& root_stats, const LevelRules& rules,
                  const LevelGrowth& growth, const FeatureBins& bins, Tree* trees, const LevelTally& tally,
                  int threads) override {
    if (levels_on_host()) {
      grow_trees_by_levels(*this, roots, root_stats, rules, growth, bins, trees, tally, threads);
      return;
    }
    cuda::Resources& res = cuda::activate(ctx_);
    std::vector<DeviceLevel> levels;
    std::vector<int64_t> sizes(roots.size());
    std::vector<int32_t> root_trees(roots.size());
    for (std::size_t i = 0; i < roots.size(); ++i) root_trees[i] = roots[i].tree;
    device_levels(roots, root_stats, rules, growth, [&](int64_t depth, DeviceLevel& level, const int32_t* tree_splits) {
      // The trees' vectors grown to the nodes their splits so far have made, while the device
      // searches: most of their fresh pages are touched here, not after the last level.
      for (std::size_t i = 0; i < roots.size(); ++i) sizes[i] = 1 + 2 * static_cast<int64_t>(tree_splits[root_trees[i]]);
      size_trees(trees, root_trees.data(), static_cast<int64_t>(roots.size()), sizes.data(), k_, threads);
      keep_level(depth, level, tally, levels, res, threads);
    });
    assemble_trees_on_device(ctx_, res, logs_of(levels), roots, growth.criterion, k_, bins, trees, threads);
  }

  bool writes_forests() const override { return !levels_on_host(); }

  // The levels kept on the device, and the forest written there in its final forms
  // (tree_assembly.cu): only the node arrays and the packed forest come back to the host.
  void grow_forest(const std::vector<LevelNode>& roots, const std::vector<double>& root_stats, const LevelRules& rules,
                   const LevelGrowth& growth, const FeatureBins& bins, const Tree* trees, int64_t n_trees, bool classification,
                   const LevelTally& tally, int threads, WrittenForest& out) override {
    GPUML_EXPECT(writes_forests(), "levelwise CUDA builder: this fit's levels are made on the host");
    cuda::Resources& res = cuda::activate(ctx_);
    std::vector<DeviceLevel> levels;
    // Each tree's splits per level: the differences of the splits made before each level.
    std::vector<int32_t> before(static_cast<std::size_t>(n_trees), 0), level_splits;
    auto splits_since = [&](const int32_t* tree_splits, int64_t tree_count) {
      for (int64_t t = 0; t < n_trees; ++t) {
        const int32_t now = t < tree_count ? tree_splits[t] : 0;
        level_splits.push_back(now - before[t]);
        before[t] = now;
      }
    };
    const int64_t tree_count = roots.empty() ? 0 : static_cast<int64_t>(roots.back().tree) + 1;
    // The host memory the forest comes back to, for the most nodes its trees can have (2 slots - 1
    // each, fewer with max_depth; a root not searched is a leaf), its pages touched as the levels
    // make nodes, on a thread of its own (each level's range after the last's).
    const int k = classification ? k_ : 1;
    int64_t most_nodes = n_trees - static_cast<int64_t>(roots.size());
    const int64_t depth_bound = growth.max_depth >= 0 && growth.max_depth < 40 ? (int64_t(2) << growth.max_depth) - 1 : INT64_MAX;
    for (const LevelNode& root : roots) {
      const int64_t most = std::min(2 * std::max<int64_t>(root.slot_count, 1) - 1, depth_bound);
      most_nodes += most;
    }
    WrittenForestMemory memory(most_nodes, k);
    auto touch_up_to = [&](const int32_t* tree_splits) {
      int64_t nodes_made = n_trees;
      for (int64_t t = 0; t < tree_count; ++t) nodes_made += 2 * static_cast<int64_t>(tree_splits[t]);
      memory.touch_up_to(nodes_made, threads);
    };
    const std::vector<int32_t> made = device_levels(roots, root_stats, rules, growth,
                                                    [&](int64_t depth, DeviceLevel& level, const int32_t* tree_splits) {
      if (depth > 0) splits_since(tree_splits, tree_count);
      touch_up_to(tree_splits);
      keep_level(depth, level, tally, levels, res, threads);
    });
    if (!levels.empty()) splits_since(made.data(), tree_count);
    touch_up_to(made.data());  // the last level's children, beside the assembly's kernels
    write_forest_on_device(ctx_, res, logs_of(levels), roots, level_splits, trees, n_trees, growth.criterion, k_, classification, bins,
                           threads, memory, out);
  }

  // One depth-first level kept on the device: its nodes and their statistics, splits, left
  // statistics, flags, and where their children are in the next level (tree_assembly.hpp's log).
  struct DeviceLevel {
    int64_t count = 0;
    Buffer nodes, stats, splits, left, flags, at;
    LevelLog log() const {
      return LevelLog{count, &nodes.as<LevelNode>()->tree, kLevelNodeInts, stats.as<double>(), splits.as<LevelSplit>(),
                      left.as<double>(), flags.as<uint8_t>(), at.as<int32_t>()};
    }
  };

  // Keeps a level made on the device, after handing the tally (if any) copies of its nodes and flags.
  void keep_level(int64_t depth, DeviceLevel& level, const LevelTally& tally, std::vector<DeviceLevel>& levels,
                  cuda::Resources& res, int threads) {
    if (tally) {
      std::vector<LevelNode> nodes(static_cast<std::size_t>(level.count));
      std::vector<uint8_t> flags(static_cast<std::size_t>(level.count));
      res.copy_to_host(nodes.data(), level.nodes.data(), level.count * sizeof(LevelNode), threads);
      res.copy_to_host(flags.data(), level.flags.data(), static_cast<std::size_t>(level.count), threads);
      tally(depth, nodes.data(), flags.data(), level.count);
    }
    levels.push_back(std::move(level));
  }

  static std::vector<LevelLog> logs_of(const std::vector<DeviceLevel>& levels) {
    std::vector<LevelLog> logs;
    for (const DeviceLevel& level : levels) logs.push_back(level.log());
    return logs;
  }

  // Over ranks (each level's histograms are summed through the communicator), past kDirectDraws
  // features (the draws come from the host), or when asked (GPUML_FOREST_HOST_LEVELS=1, to
  // compare), the levels are made on the host from split_level's searches.
  bool levels_on_host() const {
    static const bool asked = [] {
      const char* v = std::getenv("GPUML_FOREST_HOST_LEVELS");
      return v != nullptr && std::strcmp(v, "1") == 0;
    }();
    return comm_ != nullptr || d_ > kDirectDraws || asked;
  }

  // Depth-first growth on the device from the roots, a level at a time: its launch order, search,
  // flags, and next level queued, then on_level(depth, level, tree_splits) gets the level while
  // the device works on it (it may keep the level's buffers) and each tree's splits made in the
  // levels before it (host memory, indexed by LevelNode::tree), then the next level's size is read.
  // Returns each tree's splits over all levels.
  template <typename OnLevel>
  std::vector<int32_t> device_levels(const std::vector<LevelNode>& roots, const std::vector<double>& root_stats, const LevelRules& rules,
                     const LevelGrowth& growth, OnLevel&& on_level) {
    cuda::Resources& res = cuda::activate(ctx_);
    int64_t m = static_cast<int64_t>(roots.size());
    const int k = k_;
    GPUML_EXPECT(growth.width == k && rules.width == k, "levelwise CUDA builder: the rules' width does not match the targets");
    Buffer nodes_d = device(m * static_cast<int64_t>(sizeof(LevelNode))), stats_d = device(m * k * static_cast<int64_t>(sizeof(double)));
    if (m > 0) {
      res.copy_to_device(nodes_d.data(), roots.data(), m * sizeof(LevelNode), ctx_.n_threads());
      res.copy_to_device(stats_d.data(), root_stats.data(), m * k * sizeof(double), ctx_.n_threads());
    }
    // The next level's size and each tree's splits so far (progress[1 + tree]), read after each level.
    const int64_t tree_count = m > 0 ? static_cast<int64_t>(roots.back().tree) + 1 : 0;
    Buffer progress_d = device((1 + tree_count) * static_cast<int64_t>(sizeof(int32_t)));
    GPUML_CUDA_CHECK(cudaMemsetAsync(progress_d.data(), 0, (1 + tree_count) * sizeof(int32_t), res.stream));
    std::vector<int32_t> progress(static_cast<std::size_t>(1 + tree_count), 0);
    for (int64_t depth = 0; m > 0; ++depth) {
      // The level's launch order: the nodes of each kernel (a three-way partition).
      Buffer index_d = device(3 * m * static_cast<int64_t>(sizeof(int32_t))), counts_d = device(2 * sizeof(int32_t));
      {
        std::size_t bytes = 0;
        const thrust::counting_iterator<int32_t> ids(0);
        int32_t* index = index_d.as<int32_t>();
        const SearchedBy by_warp{nodes_d.as<LevelNode>(), warp_nodes(), regression_, NodeKernel::warp};
        const SearchedBy by_wide{nodes_d.as<LevelNode>(), warp_nodes(), regression_, NodeKernel::wide};
        GPUML_CUDA_CHECK(cub::DevicePartition::If(nullptr, bytes, ids, index, index + m, index + 2 * m,
                                                  counts_d.as<int32_t>(), static_cast<int>(m), by_warp, by_wide, res.stream));
        Buffer temp = device(static_cast<int64_t>(bytes));
        GPUML_CUDA_CHECK(cub::DevicePartition::If(temp.data(), bytes, ids, index, index + m, index + 2 * m,
                                                  counts_d.as<int32_t>(), static_cast<int>(m), by_warp, by_wide, res.stream));
      }
      int32_t counts[2] = {0, 0};
      res.copy_to_host(counts, counts_d.data(), sizeof(counts));
      Buffer splits_d = device(m * static_cast<int64_t>(sizeof(LevelSplit))), left_d = device(m * k * static_cast<int64_t>(sizeof(double)));
      search(nodes_d.as<LevelNode>(), nullptr, LaunchOrder{index_d.as<int32_t>(), m, counts[0], counts[1]}, rules,
             splits_d.as<LevelSplit>(), left_d.as<double>(), res);
      // Flags, where each node's children go (a scan of their counts), and the next level.
      Buffer flags_d = device(m), children_d = device(m * static_cast<int64_t>(sizeof(int32_t))),
             at_d = device((m + 1) * static_cast<int64_t>(sizeof(int32_t)));
      const unsigned blocks = static_cast<unsigned>(ceil_div(m, kLevelBlock));
      level_flags_kernel<<<blocks, kLevelBlock, 0, res.stream>>>(nodes_d.as<LevelNode>(), splits_d.as<LevelSplit>(),
                                                                 stats_d.as<double>(), left_d.as<double>(), m, depth, growth,
                                                                 flags_d.as<uint8_t>(), children_d.as<int32_t>(),
                                                                 progress_d.as<int32_t>() + 1);
      GPUML_CUDA_CHECK_LAUNCH();
      GPUML_CUDA_CHECK(cudaMemsetAsync(at_d.data(), 0, sizeof(int32_t), res.stream));
      {
        std::size_t bytes = 0;
        GPUML_CUDA_CHECK(cub::DeviceScan::InclusiveSum(nullptr, bytes, children_d.as<int32_t>(), at_d.as<int32_t>() + 1,
                                                       static_cast<int>(m), res.stream));
        Buffer temp = device(static_cast<int64_t>(bytes));
        GPUML_CUDA_CHECK(cub::DeviceScan::InclusiveSum(temp.data(), bytes, children_d.as<int32_t>(), at_d.as<int32_t>() + 1,
                                                       static_cast<int>(m), res.stream));
      }
      Buffer next_d = device(2 * m * static_cast<int64_t>(sizeof(LevelNode))),
             next_stats_d = device(2 * m * k * static_cast<int64_t>(sizeof(double)));
      next_level_kernel<<<blocks, kLevelBlock, 0, res.stream>>>(nodes_d.as<LevelNode>(), stats_d.as<double>(),
                                                                splits_d.as<LevelSplit>(), left_d.as<double>(),
                                                                flags_d.as<uint8_t>(), at_d.as<int32_t>(), m, k,
                                                                next_d.as<LevelNode>(), next_stats_d.as<double>());
      GPUML_CUDA_CHECK_LAUNCH();
      GPUML_CUDA_CHECK(cudaMemcpyAsync(progress_d.data(), at_d.as<int32_t>() + m, sizeof(int32_t), cudaMemcpyDeviceToDevice,
                                       res.stream));
      // The level to on_level while the device searches it (with the trees' splits of the levels
      // before it), then the next level's size and the splits so far.
      DeviceLevel level{m, std::move(nodes_d), std::move(stats_d), std::move(splits_d), std::move(left_d), std::move(flags_d),
                        std::move(at_d)};
      on_level(depth, level, progress.data() + 1);
      res.copy_to_host(progress.data(), progress_d.data(), progress.size() * sizeof(int32_t));
      nodes_d = std::move(next_d);
      stats_d = std::move(next_stats_d);
      m = progress[0];
    }
    return std::vector<int32_t>(progress.begin() + 1, progress.end());
  }

  void count_bins(const std::vector<LevelNode>& nodes, const LevelPairs& pairs, std::vector<int32_t>& counts) override {
    if (pairs.size() == 0) return;
    cuda::Resources& res = cuda::activate(ctx_);
    Buffer nodes_d, pairs_d;
    const PairArgs a = pair_args(nodes, pairs, nodes_d, pairs_d, res);
    Buffer counts_d = device(static_cast<int64_t>(counts.size() * sizeof(int32_t)));
    GPUML_CUDA_CHECK(cudaMemsetAsync(counts_d.data(), 0, counts.size() * sizeof(int32_t), res.stream));
    count_bins_kernel<<<static_cast<unsigned>(pairs.size()), kFitBlock, 0, res.stream>>>(a, counts_d.as<int32_t>());
    GPUML_CUDA_CHECK_LAUNCH();
    res.copy_to_host(counts.data(), counts_d.data(), counts.size() * sizeof(int32_t), ctx_.n_threads());
  }

  void bin_stats(const std::vector<LevelNode>& nodes, const LevelPairs& pairs, const std::vector<int32_t>& cell_of,
                 std::vector<double>& stats) override {
    if (pairs.size() == 0) return;
    cuda::Resources& res = cuda::activate(ctx_);
    Buffer nodes_d, pairs_d;
    const PairArgs a = pair_args(nodes, pairs, nodes_d, pairs_d, res);
    Buffer cell_of_d = device(static_cast<int64_t>(cell_of.size() * sizeof(int32_t)));
    res.copy_to_device(cell_of_d.data(), cell_of.data(), cell_of.size() * sizeof(int32_t), ctx_.n_threads());
    Buffer acc = device(static_cast<int64_t>(stats.size() * sizeof(unsigned long long)));
    GPUML_CUDA_CHECK(cudaMemsetAsync(acc.data(), 0, stats.size() * sizeof(unsigned long long), res.stream));
    const unsigned blocks = static_cast<unsigned>(pairs.size());
    if (regression_)
      bin_stats_kernel<true><<<blocks, kFitBlock, 0, res.stream>>>(a, cell_of_d.as<int32_t>(), nullptr, units_.as<long long>(),
                                                                   k_, acc.as<unsigned long long>());
    else
      bin_stats_kernel<false><<<blocks, kFitBlock, 0, res.stream>>>(a, cell_of_d.as<int32_t>(), labels_.as<int32_t>(),
                                                                    nullptr, k_, acc.as<unsigned long long>());
    GPUML_CUDA_CHECK_LAUNCH();
    std::vector<unsigned long long> host(stats.size());
    res.copy_to_host(host.data(), acc.data(), host.size() * sizeof(unsigned long long), ctx_.n_threads());
    // Integer units times a power of two: the host backend's double sums, bit for bit.
    for (std::size_t i = 0; i < host.size(); ++i) {
      const double value = static_cast<double>(static_cast<long long>(host[i]));
      const int column = static_cast<int>(i % static_cast<std::size_t>(k_));
      stats[i] = regression_ && column > 0 ? value * unit_[column - 1] : value;
    }
  }

  LevelPrimitives& primitives() override { return *this; }
  bool gathers_rows() const override { return true; }

  void gather_rows(const std::vector<LevelNode>& nodes, std::vector<uint8_t>& codes, std::vector<double>& stats) override {
    const int64_t m = static_cast<int64_t>(nodes.size());
    std::vector<int64_t> begin(static_cast<std::size_t>(m));
    int64_t total = 0;
    for (int64_t i = 0; i < m; ++i) {
      begin[i] = total;
      total += nodes[i].slot_count;
    }
    if (total == 0) return;
    cuda::Resources& res = cuda::activate(ctx_);
    Buffer nodes_d = device(m * static_cast<int64_t>(sizeof(LevelNode)));
    res.copy_to_device(nodes_d.data(), nodes.data(), m * sizeof(LevelNode), ctx_.n_threads());
    Buffer begin_d = device(m * static_cast<int64_t>(sizeof(int64_t)));
    res.copy_to_device(begin_d.data(), begin.data(), m * sizeof(int64_t), ctx_.n_threads());
    Buffer codes_d = device(total * d_), stats_d = device(total * k_ * static_cast<int64_t>(sizeof(double)));
    auto kernel = regression_ ? gather_rows_kernel<true> : gather_rows_kernel<false>;
    kernel<<<static_cast<unsigned>(m), kFitBlock, 0, res.stream>>>(
        nodes_d.as<LevelNode>(), begin_d.as<int64_t>(), codes_.as<uint8_t>(), d_, rows_[0].as<int32_t>(),
        weights_[0].as<uint8_t>(), regression_ ? nullptr : labels_.as<int32_t>(),
        regression_ ? units_.as<long long>() : nullptr, unit_[0], unit_[1], k_, codes_d.as<uint8_t>(), stats_d.as<double>());
    GPUML_CUDA_CHECK_LAUNCH();
    const std::size_t codes_at = codes.size(), stats_at = stats.size();
    codes.resize(codes_at + static_cast<std::size_t>(total * d_));
    stats.resize(stats_at + static_cast<std::size_t>(total * k_));
    res.copy_to_host(codes.data() + codes_at, codes_d.data(), static_cast<std::size_t>(total * d_), ctx_.n_threads());
    res.copy_to_host(stats.data() + stats_at, stats_d.data(), static_cast<std::size_t>(total * k_) * sizeof(double), ctx_.n_threads());
  }

  void partition(const std::vector<LevelNode>& nodes, std::vector<LevelSplit>& splits) override {
    const int64_t m = static_cast<int64_t>(nodes.size());
    if (m == 0) return;
    cuda::Resources& res = cuda::activate(ctx_);
    Buffer nodes_d = device(m * static_cast<int64_t>(sizeof(LevelNode)));
    res.copy_to_device(nodes_d.data(), nodes.data(), m * sizeof(LevelNode), ctx_.n_threads());
    Buffer splits_d = device(m * static_cast<int64_t>(sizeof(LevelSplit)));
    res.copy_to_device(splits_d.data(), splits.data(), m * sizeof(LevelSplit), ctx_.n_threads());
    partition_kernel<<<static_cast<unsigned>(m), kFitBlock, 0, res.stream>>>(
        nodes_d.as<LevelNode>(), splits_d.as<LevelSplit>(), codes_.as<uint8_t>(), d_, rows_[0].as<int32_t>(),
        weights_[0].as<uint8_t>(), rows_[1].as<int32_t>(), weights_[1].as<uint8_t>());
    GPUML_CUDA_CHECK_LAUNCH();
    res.copy_to_host(splits.data(), splits_d.data(), m * sizeof(LevelSplit), ctx_.n_threads());
  }

 private:
  // Each node's split (split_level's search and partition) of the launch's m nodes at nodes_d
  // (host copy: nodes, or null where d <= kDirectDraws), each list of nodes by its kernel.
  void search(const LevelNode* nodes_d, const std::vector<LevelNode>* nodes, const LaunchOrder& launch,
              const LevelRules& rules, LevelSplit* splits_d, double* left_d, cuda::Resources& res) {
    const int64_t m = launch.m;
    // The nodes' feature draw orders: drawn here from their seeds (a thread per node), or past
    // kDirectDraws features (the engine itself) on the host and sent.
    Buffer order_d = device(m * d_ * sizeof(int32_t));
    if (d_ <= kDirectDraws) {
      const unsigned blocks = static_cast<unsigned>(ceil_div(m, kOrderBlock));
      auto kernel = d_ <= 32 ? feature_orders_kernel<32> : feature_orders_kernel<kDirectDraws>;
      kernel<<<blocks, kOrderBlock, 0, res.stream>>>(nodes_d, m, static_cast<int>(d_), order_d.as<int32_t>());
      GPUML_CUDA_CHECK_LAUNCH();
    } else {
      GPUML_EXPECT(nodes != nullptr, "levelwise CUDA builder: the host's draws need the nodes on the host");
      const std::vector<int32_t> order = level_feature_orders(*nodes, d_, ctx_.n_threads());
      res.copy_to_device(order_d.data(), order.data(), m * d_ * sizeof(int32_t), ctx_.n_threads());
    }
    GPUML_EXPECT(rules.width == k_, "levelwise CUDA builder: the rules' width does not match the loaded targets");
    const int cell_bytes = regression_ ? static_cast<int>(sizeof(long long)) : static_cast<int>(sizeof(int32_t));
    const int per_feature = kFitBlock * (k_ * cell_bytes + static_cast<int>(sizeof(int32_t)));
    const int cap = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(rules.max_features, kSharedBudget / per_feature)));
    const int shared = cap * per_feature;
    SplitArgs a{nodes_d, order_d.as<int32_t>(), codes_.as<uint8_t>(), d_, bins_.as<int32_t>(),
                regression_ ? nullptr : labels_.as<int32_t>(), regression_ ? units_.as<long long>() : nullptr,
                {unit_[0], unit_[1]}, rows_[0].as<int32_t>(), weights_[0].as<uint8_t>(),
                rows_[1].as<int32_t>(), weights_[1].as<uint8_t>(), rules.criterion, k_,
                rules.max_features, rules.min_samples_leaf, cap, splits_d, left_d, launch.of(NodeKernel::block)};
    if (const int64_t big = launch.count(NodeKernel::block); big > 0) {
      auto kernel = regression_ ? split_level_kernel<true> : split_level_kernel<false>;
      if (shared > kSharedBudget)  // one feature of many classes
        GPUML_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, shared));
      kernel<<<static_cast<unsigned>(big), kFitBlock, shared, res.stream>>>(a);
      GPUML_CUDA_CHECK_LAUNCH();
    }
    for (const NodeKernel by : {NodeKernel::wide, NodeKernel::warp}) {
      const int64_t count = launch.count(by);
      if (count == 0) continue;
      SplitArgs small = a;
      small.node_index = launch.of(by);
      const unsigned blocks = static_cast<unsigned>(ceil_div(count, kWarpNodesPerBlock));
      auto kernel = !regression_ ? split_small_class_nodes_kernel
                                 : by == NodeKernel::wide ? split_small_regression_kernel<kWideSlots> : split_small_regression_kernel<1>;
      kernel<<<blocks, kWarp * kWarpNodesPerBlock, 0, res.stream>>>(small, count);
      GPUML_CUDA_CHECK_LAUNCH();
    }
  }

  // Whether small nodes take a warp each (the warp kernel holds at most kWarpNodeClasses classes).
  bool warp_nodes() const { return regression_ || k_ <= kWarpNodeClasses; }

  Buffer device(int64_t bytes) { return Buffer(ctx_, static_cast<std::size_t>(std::max<int64_t>(bytes, 1))); }

  // The nodes and pairs on the device (kept alive by nodes_d and pairs_d).
  PairArgs pair_args(const std::vector<LevelNode>& nodes, const LevelPairs& pairs, Buffer& nodes_d, Buffer& pairs_d,
                     cuda::Resources& res) {
    const int64_t m = static_cast<int64_t>(nodes.size()), p = pairs.size();
    nodes_d = device(m * static_cast<int64_t>(sizeof(LevelNode)));
    res.copy_to_device(nodes_d.data(), nodes.data(), m * sizeof(LevelNode), ctx_.n_threads());
    pairs_d = device((p + 1) * static_cast<int64_t>(sizeof(int64_t)) + 2 * p * static_cast<int64_t>(sizeof(int32_t)));
    int64_t* offset = pairs_d.as<int64_t>();
    int32_t* pair_node = reinterpret_cast<int32_t*>(offset + p + 1);
    int32_t* pair_feature = pair_node + p;
    res.copy_to_device(offset, pairs.offset.data(), (p + 1) * sizeof(int64_t), ctx_.n_threads());
    res.copy_to_device(pair_node, pairs.node.data(), p * sizeof(int32_t), ctx_.n_threads());
    res.copy_to_device(pair_feature, pairs.feature.data(), p * sizeof(int32_t), ctx_.n_threads());
    return PairArgs{nodes_d.as<LevelNode>(), pair_node, pair_feature, offset, codes_.as<uint8_t>(), d_,
                    rows_[0].as<int32_t>(), weights_[0].as<uint8_t>()};
  }

  // X to the device once, binned there (codes row-major: a row's codes are one load), the value
  // ranges back to the host.
  template <typename T>
  void load_any(const T* X, int64_t n, int64_t d, FeatureBins& bins, const LevelTargets& targets) {
    cuda::Resources& res = cuda::activate(ctx_);
    keep(n, d, bins, targets, res);
    Buffer X_d = device(n * d * static_cast<int64_t>(sizeof(T)));
    res.copy_to_device(X_d.data(), X, static_cast<std::size_t>(n * d) * sizeof(T), ctx_.n_threads());
    const int64_t n_thresholds = static_cast<int64_t>(bins.values.size());
    Buffer thresholds = device(n_thresholds * static_cast<int64_t>(sizeof(double)));
    res.copy_to_device(thresholds.data(), bins.values.data(), n_thresholds * sizeof(double), ctx_.n_threads());
    Buffer offsets = device((d + 1) * static_cast<int64_t>(sizeof(int64_t)));
    res.copy_to_device(offsets.data(), bins.offsets.data(), (d + 1) * sizeof(int64_t), ctx_.n_threads());
    const int64_t cells = n_thresholds + d;
    Buffer keys = device(2 * cells * static_cast<int64_t>(sizeof(unsigned long long)) + static_cast<int64_t>(sizeof(int)));
    unsigned long long* low = keys.as<unsigned long long>();
    unsigned long long* high = low + cells;
    int* bad = reinterpret_cast<int*>(high + cells);
    GPUML_CUDA_CHECK(cudaMemsetAsync(low, 0xff, cells * sizeof(unsigned long long), res.stream));  // above every key
    GPUML_CUDA_CHECK(cudaMemsetAsync(high, 0, cells * sizeof(unsigned long long) + sizeof(int), res.stream));
    codes_ = device(n * d);
    bin_kernel<T><<<cuda::grid_for(n * d, kBlock, kMaxBlocks), kBlock, 0, res.stream>>>(
        X_d.as<T>(), n, d, thresholds.as<double>(), offsets.as<int64_t>(), codes_.as<uint8_t>(), low, high, bad);
    GPUML_CUDA_CHECK_LAUNCH();
    std::vector<unsigned long long> host_keys(static_cast<std::size_t>(2 * cells));
    int host_bad = 0;
    res.copy_to_host(host_keys.data(), low, 2 * cells * sizeof(unsigned long long), ctx_.n_threads());
    res.copy_to_host(&host_bad, bad, sizeof(int), ctx_.n_threads());
    GPUML_EXPECT(host_bad == 0, "X contains NaN or infinity");
    // Untouched cells (empty bins) come back as +inf / -inf, as value_ranges leaves them.
    bins.low.assign(static_cast<std::size_t>(cells), std::numeric_limits<double>::infinity());
    bins.high.assign(static_cast<std::size_t>(cells), -std::numeric_limits<double>::infinity());
    for (int64_t c = 0; c < cells; ++c) {
      if (host_keys[c] != ~0ULL) bins.low[c] = key_value(host_keys[c]);
      if (host_keys[cells + c] != 0ULL) bins.high[c] = key_value(host_keys[cells + c]);
    }
    if (comm_ != nullptr) merge_value_ranges(bins, *comm_);  // every rank's rows
  }

  // What both loads keep besides the codes: the sizes, each feature's bin count (host and
  // device), the targets on the device.
  void keep(int64_t n, int64_t d, const FeatureBins& bins, const LevelTargets& targets, cuda::Resources& res) {
    const int k = targets.width();
    GPUML_EXPECT(k >= 1 && k <= kMaxClasses, "levelwise CUDA builder: at most 64 classes");
    GPUML_EXPECT(bins.n_features() == d, "levelwise CUDA builder: bins for another number of features");
    n_ = n;
    d_ = d;
    k_ = k;
    bin_counts_.assign(static_cast<std::size_t>(d), 0);
    for (int64_t f = 0; f < d; ++f) bin_counts_[f] = static_cast<int32_t>(bins.bins(f));
    bins_ = device(d * static_cast<int64_t>(sizeof(int32_t)));
    res.copy_to_device(bins_.data(), bin_counts_.data(), d * sizeof(int32_t), ctx_.n_threads());
    regression_ = targets.regression();
    if (regression_) {
      units_ = device(2 * n * static_cast<int64_t>(sizeof(long long)));
      res.copy_to_device(units_.data(), targets.units, 2 * n * sizeof(long long), ctx_.n_threads());
      unit_[0] = targets.unit[0];
      unit_[1] = targets.unit[1];
    } else {
      labels_ = device(n * static_cast<int64_t>(sizeof(int32_t)));
      res.copy_to_device(labels_.data(), targets.labels, n * sizeof(int32_t), ctx_.n_threads());
    }
  }

  Context ctx_;  // its threads also copy through the pinned area (Resources::copy_to_device)
  Comm* comm_ = nullptr;  // several ranks only
  int64_t n_ = 0, d_ = 0;
  std::vector<int32_t> bin_counts_;  // per feature
  int k_ = 2;  // statistics per node
  bool regression_ = false;
  double unit_[2] = {1.0, 1.0};
  Buffer codes_, bins_, labels_, units_;
  Buffer rows_[2], weights_[2];
};

}  // namespace

std::unique_ptr<LevelBackend> make_level_cuda_backend(const Context& ctx, Comm* comm) {
  return std::make_unique<CudaLevelBackend>(ctx, comm);
}

}  // namespace gpuml::detail

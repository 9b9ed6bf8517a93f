// The CUDA backend of the sparse primitives (src/core/sparse_backend.hpp). A caller's CSR / CSC
// matrix (host or device memory) is checked on the device with the CPU's error messages,
// canonicalized there (indices strictly increasing per line, duplicates summed, explicit zeros
// kept) and kept in both orders: X's CSR for X·B, and X's CSC stored as the CSR of Xᵀ for Xᵀ·B,
// so that both products are the same row-major product over lines. Either index width is kept:
// the orders are built with CUB radix sorts (cusparseCsr2cscEx2 takes 32-bit indices only).
//
// The products are this file's warp-per-line kernels, not cuSPARSE's SpMM: on the H100,
// CSR_ALG2 with row-major blocks gave different bits on repeated calls, and gpuml promises the
// same bits for the same inputs; here long lines (a frequent column of X) are cut into pieces
// whose partial rows are added in a fixed order.
//
// Determinism: no floating-point atomics. Every reduction of the other primitives runs one
// thread per output line over that line's entries in index order, as the CPU's loops do, with
// the CPU's double arithmetic (no FMA contraction), so they agree with the CPU to the bit.
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "core/device_ops.hpp"
#include "core/sparse_backend.hpp"
#include "cuda/core/kernel_util.cuh"
#include "cuda/core/resources.cuh"

namespace gpuml::detail {
namespace {

// ---- device helpers ---------------------------------------------------------------------------

// First position p in sorted a[0, n) with a[p] >= v.
template <typename A>
__device__ int64_t lower_bound(const A* a, int64_t n, int64_t v) {
  int64_t lo = 0, hi = n;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (static_cast<int64_t>(a[mid]) < v)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

// The line holding entry k of a compressed matrix (indptr has lines + 1 entries): the last l
// with indptr[l] <= k (empty lines before it share its start).
template <typename I>
__device__ int64_t line_of(const I* indptr, int64_t lines, int64_t k) {
  int64_t lo = 0, hi = lines + 1;  // first l with indptr[l] > k, minus one
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (static_cast<int64_t>(indptr[mid]) <= k)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo - 1;
}

// acc + a b rounded twice, as the CPU computes it (nvcc would contract it into an FMA).
__device__ __forceinline__ double add_product(double acc, double a, double b) { return __dadd_rn(acc, __dmul_rn(a, b)); }

// ---- checks -------------------------------------------------------------------------------------

// first[0..3) = the first decreasing indptr position, out-of-range index, non-finite value
// (UINT64_MAX: none). The minimum position is the same whatever the order of the atomics.
template <typename I, typename V>
__global__ void check_kernel(const I* indptr, int64_t major, const I* indices, const V* values, int64_t nnz,
                             int64_t minor, unsigned long long* first) {
  const int64_t n = major > nnz ? major : nnz;
  for (int64_t k = global_thread(); k < n; k += grid_threads()) {
    if (k < major && indptr[k] > indptr[k + 1]) atomicMin(first, static_cast<unsigned long long>(k));
    if (k < nnz) {
      const int64_t index = indices[k];
      if (index < 0 || index >= minor) atomicMin(first + 1, static_cast<unsigned long long>(k));
      if (!isfinite(values[k])) atomicMin(first + 2, static_cast<unsigned long long>(k));
    }
  }
}

// *found = 1 when some entry does not start its line and its index is not above the previous one.
template <typename I>
__global__ void not_canonical_kernel(const I* indptr, int64_t lines, const I* indices, int64_t nnz, int* found) {
  for (int64_t k = 1 + global_thread(); k < nnz; k += grid_threads()) {
    const int64_t p = lower_bound(indptr, lines + 1, k);
    const bool starts_line = p <= lines && static_cast<int64_t>(indptr[p]) == k;
    if (!starts_line && indices[k] <= indices[k - 1]) *found = 1;  // every writer stores 1
  }
}

template <typename V, typename T>
__global__ void convert_kernel(const V* in, int64_t n, T* out) {
  for (int64_t k = global_thread(); k < n; k += grid_threads()) out[k] = static_cast<T>(in[k]);
}

template <typename P>
__global__ void iota_kernel(P* out, int64_t n) {
  for (int64_t k = global_thread(); k < n; k += grid_threads()) out[k] = static_cast<P>(k);
}

// ---- canonical order ----------------------------------------------------------------------------

template <typename I, typename U>
__global__ void entry_lines_kernel(const I* indptr, int64_t lines, int64_t nnz, U* out) {
  for (int64_t k = global_thread(); k < nnz; k += grid_threads()) out[k] = static_cast<U>(line_of(indptr, lines, k));
}

template <typename U, typename P>
__global__ void gather_kernel(const U* in, const P* positions, int64_t n, U* out) {
  for (int64_t k = global_thread(); k < n; k += grid_threads()) out[k] = in[positions[k]];
}

// Entries in (line, index) order (line_sorted[p], indices[order[p]]): head[p] = 1 where a new
// (line, index) pair starts.
template <typename I, typename U>
__global__ void heads_kernel(const U* line_sorted, const I* indices, const I* order, int64_t nnz, I* head) {
  for (int64_t p = global_thread(); p < nnz; p += grid_threads())
    head[p] = p == 0 || line_sorted[p] != line_sorted[p - 1] || indices[order[p]] != indices[order[p - 1]];
}

// One thread per run of equal (line, index): its values summed in T in the caller's order (the
// CPU's sumupDuplicates), written at slot[p] - 1 (slot: inclusive sum of the heads).
template <typename T, typename I, typename U>
__global__ void sum_runs_kernel(const U* line_sorted, const I* indices, const T* values, const I* order, const I* head,
                                const I* slot, int64_t nnz, U* out_lines, I* out_indices, T* out_values) {
  for (int64_t p = global_thread(); p < nnz; p += grid_threads()) {
    if (!head[p]) continue;
    T sum = values[order[p]];
    for (int64_t q = p + 1; q < nnz && !head[q]; ++q) sum += values[order[q]];
    const int64_t u = static_cast<int64_t>(slot[p]) - 1;
    out_lines[u] = line_sorted[p];
    out_indices[u] = indices[order[p]];
    out_values[u] = sum;
  }
}

// indptr[l] = the first entry of line l, from the entries' sorted lines.
template <typename U, typename I>
__global__ void indptr_from_sorted_kernel(const U* sorted, int64_t nnz, int64_t lines, I* indptr) {
  for (int64_t l = global_thread(); l <= lines; l += grid_threads()) indptr[l] = static_cast<I>(lower_bound(sorted, nnz, l));
}

// The other order: entry p of the transposed matrix is entry order[p] of the given one.
template <typename T, typename I>
__global__ void transpose_gather_kernel(const I* indptr, int64_t lines, const T* values, const I* order, int64_t nnz,
                                        I* out_indices, T* out_values) {
  for (int64_t p = global_thread(); p < nnz; p += grid_threads()) {
    const int64_t k = order[p];
    out_indices[p] = static_cast<I>(line_of(indptr, lines, k));
    out_values[p] = values[k];
  }
}

// ---- primitives ---------------------------------------------------------------------------------

// Per line: Σ x and Σ x² in double (squares may be null), in index order.
template <typename T, typename I>
__global__ void line_moments_kernel(const I* indptr, const T* values, int64_t lines, double* sums, double* squares) {
  for (int64_t l = global_thread(); l < lines; l += grid_threads()) {
    double sum = 0.0, sq = 0.0;
    for (I k = indptr[l]; k < indptr[l + 1]; ++k) {
      const double v = values[k];
      sum = __dadd_rn(sum, v);
      sq = add_product(sq, v, v);
    }
    if (sums) sums[l] = sum;
    if (squares) squares[l] = sq;
  }
}

template <typename T, typename I>
__global__ void row_norms_kernel(const I* indptr, const T* values, int64_t rows, T* norms) {
  for (int64_t i = global_thread(); i < rows; i += grid_threads()) {
    double sq = 0.0;
    for (I k = indptr[i]; k < indptr[i + 1]; ++k) sq = add_product(sq, values[k], values[k]);
    norms[i] = static_cast<T>(sq);
  }
}

// Row j of Xᵀ diag(w) X by thread j: Σ over column j's entries (i, x_ij) of w_i x_ij x_i, as
// the CPU forms it; threads write disjoint rows.
template <typename T, typename I>
__global__ void gram_rows_kernel(const I* row_ptr, const I* row_cols, const T* row_values, const I* col_ptr,
                                 const I* col_rows, const T* col_values, const T* w, int64_t d, double* gram) {
  for (int64_t j = global_thread(); j < d; j += grid_threads()) {
    double* row = gram + j * d;
    for (I c = col_ptr[j]; c < col_ptr[j + 1]; ++c) {
      const I i = col_rows[c];
      const double scaled = __dmul_rn(static_cast<double>(col_values[c]), w ? static_cast<double>(w[i]) : 1.0);
      for (I r = row_ptr[i]; r < row_ptr[i + 1]; ++r) row[row_cols[r]] = add_product(row[row_cols[r]], scaled, row_values[r]);
    }
  }
}

// The lower triangle from the upper one (exactly symmetric, as the CPU makes it).
__global__ void mirror_kernel(double* gram, int64_t d) {
  for (int64_t e = global_thread(); e < d * d; e += grid_threads()) {
    const int64_t j = e / d, k = e % d;
    if (k > j) gram[k * d + j] = gram[j * d + k];
  }
}

// One warp per wanted row: its entries (distinct columns) scattered into a zeroed dense row.
template <typename T, typename I>
__global__ void dense_rows_kernel(const I* indptr, const I* cols, const T* values, const int64_t* rows, int64_t m,
                                  int64_t d, T* out) {
  const int64_t warps = grid_threads() / kWarp;
  const int lane = threadIdx.x % kWarp;
  for (int64_t r = global_thread() / kWarp; r < m; r += warps) {
    const int64_t i = rows[r];
    for (int64_t k = indptr[i] + lane; k < indptr[i + 1]; k += kWarp) out[r * d + cols[k]] = values[k];
  }
}

// sums[g d + j] by thread j over column j's entries in row order (the CPU's order).
template <typename T, typename I>
__global__ void grouped_columns_kernel(const I* col_ptr, const I* col_rows, const T* col_values, int64_t d,
                                       const int32_t* groups, const T* w, int64_t k, double* sums) {
  for (int64_t j = global_thread(); j < d; j += grid_threads())
    for (I c = col_ptr[j]; c < col_ptr[j + 1]; ++c) {
      const I i = col_rows[c];
      const int64_t g = groups[i];
      if (g < 0 || g >= k) continue;  // outside the contract; never written out of bounds
      double* at = sums + g * d + j;
      *at = __dadd_rn(*at, __dmul_rn(static_cast<double>(col_values[c]), w ? static_cast<double>(w[i]) : 1.0));
    }
}

__global__ void group_keys_kernel(const int32_t* groups, int64_t n, uint64_t* keys) {
  // As unsigned: a negative group (outside the contract) sorts after every valid one.
  for (int64_t i = global_thread(); i < n; i += grid_threads()) keys[i] = static_cast<uint32_t>(groups[i]);
}

// Group g's weight by thread g over its rows in increasing order (a stable sort by group).
template <typename T>
__global__ void group_weights_kernel(const uint64_t* sorted_groups, const int64_t* rows, int64_t n, const T* w, int64_t k,
                                     double* out) {
  for (int64_t g = global_thread(); g < k; g += grid_threads()) {
    double sum = 0.0;
    for (int64_t p = lower_bound(sorted_groups, n, g); p < n && static_cast<int64_t>(sorted_groups[p]) == g; ++p)
      sum = __dadd_rn(sum, w ? static_cast<double>(w[rows[p]]) : 1.0);
    out[g] = sum;
  }
}

// ---- host helpers -------------------------------------------------------------------------------

// ---- products ------------------------------------------------------------------------------

// Lines longer than this are cut into pieces of this many entries, one warp each, whose partial
// rows are then added in piece order: a power-law column of X (a line of Xᵀ) can hold most of
// the rows, and one warp over it would serialize the product.
constexpr int64_t kPieceEntries = 2048;

// out[0, t) = Σ_{k in [begin, end)} val[k] B[idx[k], 0..t), by one warp: the entries in batches
// of 32 (one per lane, then broadcast), the columns 32 at a time (one per lane; rows of B read
// coalesced). t == 1: lanes over the entries, then the warp's butterfly sum. Fixed order: the
// same bits on every call.
template <typename T, typename I>
__device__ void line_times(const I* idx, const T* val, int64_t begin, int64_t end, const T* B, int64_t t, T* out,
                           int lane) {
  if (t == 1) {
    double acc = 0.0;
    for (int64_t k = begin + lane; k < end; k += kWarp) acc += static_cast<double>(val[k]) * static_cast<double>(B[idx[k]]);
    acc = warp_sum(acc);
    if (lane == 0) out[0] = static_cast<T>(acc);
    return;
  }
  for (int64_t c0 = 0; c0 < t; c0 += kWarp) {
    const int64_t c = c0 + lane;
    T acc = 0;
    for (int64_t k0 = begin; k0 < end; k0 += kWarp) {
      const int64_t k = k0 + lane;
      const I mine = k < end ? idx[k] : I(0);
      const T mine_value = k < end ? val[k] : T(0);
      const int batch = static_cast<int>(end - k0 < kWarp ? end - k0 : kWarp);
      for (int e = 0; e < batch; ++e) {
        const I j = __shfl_sync(0xffffffffu, mine, e);
        const T v = __shfl_sync(0xffffffffu, mine_value, e);
        if (c < t) acc += v * B[static_cast<int64_t>(j) * t + c];
      }
    }
    if (c < t) out[c] = acc;
  }
}

// out (lines x t) = M B for the lines of at most kPieceEntries entries (the others: pieces).
template <typename T, typename I>
__global__ void short_lines_times_kernel(const I* indptr, const I* idx, const T* val, int64_t lines, const T* B, int64_t t,
                                         T* out) {
  const int lane = threadIdx.x % kWarp;
  const int64_t warps = grid_threads() / kWarp;
  for (int64_t l = global_thread() / kWarp; l < lines; l += warps) {
    const int64_t begin = indptr[l], end = indptr[l + 1];
    if (end - begin > kPieceEntries) continue;
    line_times(idx, val, begin, end, B, t, out + l * t, lane);
  }
}

// partial (pieces x t): piece p covers entries [starts[p], starts[p] + kPieceEntries) of its line, clipped at ends[p].
template <typename T, typename I>
__global__ void pieces_times_kernel(const I* idx, const T* val, const int64_t* starts, const int64_t* ends, int64_t pieces,
                                    const T* B, int64_t t, T* partial) {
  const int lane = threadIdx.x % kWarp;
  const int64_t warps = grid_threads() / kWarp;
  for (int64_t p = global_thread() / kWarp; p < pieces; p += warps) {
    const int64_t begin = starts[p], end = begin + kPieceEntries < ends[p] ? begin + kPieceEntries : ends[p];
    line_times(idx, val, begin, end, B, t, partial + p * t, lane);
  }
}

// out[line q's row] = the sum of its pieces' partial rows, in piece order (first[q] .. first[q + 1]).
template <typename T>
__global__ void add_pieces_kernel(const int64_t* long_lines, const int64_t* first, int64_t count, const T* partial, int64_t t,
                                  T* out) {
  for (int64_t e = global_thread(); e < count * t; e += grid_threads()) {
    const int64_t q = e / t, c = e % t;
    T acc = 0;
    for (int64_t p = first[q]; p < first[q + 1]; ++p) acc += partial[p * t + c];
    out[long_lines[q] * t + c] = acc;
  }
}

unsigned blocks_for(int64_t n) { return cuda::grid_for(n, kBlock, kMaxBlocks); }

// A device buffer of `count` values of U (at least one byte, so that it is never null).
template <typename U>
Buffer device_array(Context& ctx, int64_t count) {
  return Buffer(ctx, std::max<std::size_t>(static_cast<std::size_t>(count) * sizeof(U), 1));
}

// Bits that hold every value in [0, max_value] (at least 1).
int bits_for(int64_t max_value) {
  int bits = 1;
  while (bits < 63 && (int64_t(1) << bits) <= max_value) ++bits;
  return bits;
}

// Stable LSD radix sort of (keys, values) on the key bits [0, end_bit).
template <typename K, typename P>
void sort_pairs(Context& ctx, cudaStream_t stream, const K* keys_in, K* keys_out, const P* values_in, P* values_out,
                int64_t n, int end_bit) {
  if (n == 0) return;
  std::size_t bytes = 0;
  GPUML_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, bytes, keys_in, keys_out, values_in, values_out, n, 0, end_bit, stream));
  Buffer temp(ctx, std::max<std::size_t>(bytes, 1));
  GPUML_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(temp.data(), bytes, keys_in, keys_out, values_in, values_out, n, 0, end_bit, stream));
}

template <typename I>
void inclusive_sum(Context& ctx, cudaStream_t stream, const I* in, I* out, int64_t n) {
  std::size_t bytes = 0;
  GPUML_CUDA_CHECK(cub::DeviceScan::InclusiveSum(nullptr, bytes, in, out, n, stream));
  Buffer temp(ctx, std::max<std::size_t>(bytes, 1));
  GPUML_CUDA_CHECK(cub::DeviceScan::InclusiveSum(temp.data(), bytes, in, out, n, stream));
}

template <typename U>
U read_one(cudaStream_t stream, const U* device) {
  U host{};
  GPUML_CUDA_CHECK(cudaMemcpyAsync(&host, device, sizeof(U), cudaMemcpyDeviceToHost, stream));
  GPUML_CUDA_CHECK(cudaStreamSynchronize(stream));
  return host;
}

template <typename U>
void to_host(cudaStream_t stream, U* host, const U* device, int64_t count) {
  if (count <= 0) return;
  GPUML_CUDA_CHECK(cudaMemcpyAsync(host, device, static_cast<std::size_t>(count) * sizeof(U), cudaMemcpyDeviceToHost, stream));
  GPUML_CUDA_CHECK(cudaStreamSynchronize(stream));
}

// A canonical compressed matrix on the device: `count` lines of indices in [0, width).
template <typename T, typename I>
struct Lines {
  int64_t count = 0, width = 0, nnz = 0;
  Buffer indptr, indices, values;
  const I* ptr() const { return indptr.as<I>(); }
  const I* idx() const { return indices.as<I>(); }
  const T* val() const { return values.as<T>(); }
};

// The caller's three arrays where this context's kernels can read them: the caller's own when
// they are on this device, else copies (one cudaMemcpyAsync each).
struct Staged {
  const void* indptr = nullptr;
  const void* indices = nullptr;
  const void* values = nullptr;
  Buffer indptr_copy, indices_copy, values_copy;  // empty when the caller's arrays are used
};

Staged stage(Context& ctx, cuda::Resources& res, const SparseView& X) {
  Staged s{X.indptr, X.indices, X.values};
  if (X.device.is_cuda() && X.device.id == res.device) return s;
  auto copy = [&](Buffer& to, const void* from, std::size_t bytes) {
    to = Buffer(ctx, std::max<std::size_t>(bytes, 1));
    if (bytes > 0) GPUML_CUDA_CHECK(cudaMemcpyAsync(to.data(), from, bytes, cudaMemcpyDefault, res.stream));
    return static_cast<const void*>(to.data());
  };
  const std::size_t index = dtype_size(X.index_dtype), nnz = static_cast<std::size_t>(X.nnz);
  s.indptr = copy(s.indptr_copy, X.indptr, static_cast<std::size_t>(X.major() + 1) * index);
  s.indices = copy(s.indices_copy, X.indices, nnz * index);
  s.values = copy(s.values_copy, X.values, nnz * dtype_size(X.dtype));
  return s;
}

// The checks of validate_sparse on the device: one pass for the first problem of each kind, then
// (only when there is one) a few reads to word it as the CPU does.
template <typename I, typename V>
void check_on_device(Context& ctx, cuda::Resources& res, const SparseView& X, const Staged& s, const char* what) {
  const I* indptr = static_cast<const I*>(s.indptr);
  const I* indices = static_cast<const I*>(s.indices);
  const V* values = static_cast<const V*>(s.values);
  const int64_t major = X.major(), nnz = X.nnz;
  Buffer first = device_array<unsigned long long>(ctx, 3);
  GPUML_CUDA_CHECK(cudaMemsetAsync(first.data(), 0xff, 3 * sizeof(unsigned long long), res.stream));
  check_kernel<I, V><<<blocks_for(std::max(major, nnz)), kBlock, 0, res.stream>>>(indptr, major, indices, values, nnz, X.minor(),
                                                                                   first.as<unsigned long long>());
  GPUML_CUDA_CHECK_LAUNCH();
  unsigned long long at[3];
  I ends[2];
  GPUML_CUDA_CHECK(cudaMemcpyAsync(at, first.data(), sizeof(at), cudaMemcpyDeviceToHost, res.stream));
  GPUML_CUDA_CHECK(cudaMemcpyAsync(&ends[0], indptr, sizeof(I), cudaMemcpyDeviceToHost, res.stream));
  GPUML_CUDA_CHECK(cudaMemcpyAsync(&ends[1], indptr + major, sizeof(I), cudaMemcpyDeviceToHost, res.stream));
  GPUML_CUDA_CHECK(cudaStreamSynchronize(res.stream));
  SparseContentsFirst f;
  f.indptr_first = ends[0];
  f.indptr_last = ends[1];
  const unsigned long long none = ~0ull;
  if (at[0] != none) {
    f.decreasing_at = static_cast<int64_t>(at[0]);
    f.decreasing_left = read_one(res.stream, indptr + at[0]);
    f.decreasing_right = read_one(res.stream, indptr + at[0] + 1);
  }
  if (at[1] != none) {
    f.bad_index_at = static_cast<int64_t>(at[1]);
    f.bad_index = read_one(res.stream, indices + at[1]);
  }
  if (at[2] != none) {
    f.bad_value_at = static_cast<int64_t>(at[2]);
    f.bad_value_nan = std::isnan(read_one(res.stream, values + at[2]));
  }
  expect_sparse_contents(X, what, f);
}

// X's lines sorted by index with duplicates summed (values already in T), when they are not.
template <typename T, typename I>
Lines<T, I> canonical(Context& ctx, cudaStream_t stream, Lines<T, I> in) {
  using U = std::make_unsigned_t<I>;
  const int64_t nnz = in.nnz, lines = in.count;
  if (nnz < 2) return in;
  {
    Buffer found = device_array<int>(ctx, 1);
    GPUML_CUDA_CHECK(cudaMemsetAsync(found.data(), 0, sizeof(int), stream));
    not_canonical_kernel<I><<<blocks_for(nnz), kBlock, 0, stream>>>(in.ptr(), lines, in.idx(), nnz, found.as<int>());
    GPUML_CUDA_CHECK_LAUNCH();
    if (read_one(stream, found.as<int>()) == 0) return in;
  }
  // Stable sorts by index, then by line: entries in (line, index) order, duplicates in the
  // caller's order. (Two passes: line * width + index may not fit 64 bits.)
  Buffer entry_lines = device_array<U>(ctx, nnz), order0 = device_array<I>(ctx, nnz), order1 = device_array<I>(ctx, nnz);
  Buffer keys = device_array<U>(ctx, nnz), lines1 = device_array<U>(ctx, nnz);
  entry_lines_kernel<<<blocks_for(nnz), kBlock, 0, stream>>>(in.ptr(), lines, nnz, entry_lines.as<U>());
  iota_kernel<<<blocks_for(nnz), kBlock, 0, stream>>>(order0.as<I>(), nnz);
  GPUML_CUDA_CHECK_LAUNCH();
  sort_pairs(ctx, stream, reinterpret_cast<const U*>(in.idx()), keys.as<U>(), order0.as<I>(), order1.as<I>(), nnz,
             bits_for(in.width - 1));
  gather_kernel<<<blocks_for(nnz), kBlock, 0, stream>>>(entry_lines.as<U>(), order1.as<I>(), nnz, lines1.as<U>());
  GPUML_CUDA_CHECK_LAUNCH();
  Buffer& lines2 = entry_lines;  // reused: the entries' lines are read no more
  Buffer& order2 = order0;
  sort_pairs(ctx, stream, lines1.as<U>(), lines2.as<U>(), order1.as<I>(), order2.as<I>(), nnz, bits_for(lines - 1));
  // Runs of equal (line, index), one output entry each.
  Buffer& head = order1;
  Buffer& slot = keys;  // U and I have one size
  heads_kernel<<<blocks_for(nnz), kBlock, 0, stream>>>(lines2.as<U>(), in.idx(), order2.as<I>(), nnz, head.as<I>());
  GPUML_CUDA_CHECK_LAUNCH();
  inclusive_sum(ctx, stream, head.as<I>(), slot.as<I>(), nnz);
  const int64_t unique = read_one(stream, slot.as<I>() + nnz - 1);
  Lines<T, I> out;
  out.count = lines;
  out.width = in.width;
  out.nnz = unique;
  out.indptr = device_array<I>(ctx, lines + 1);
  out.indices = device_array<I>(ctx, unique);
  out.values = device_array<T>(ctx, unique);
  Buffer& out_lines = lines1;
  sum_runs_kernel<<<blocks_for(nnz), kBlock, 0, stream>>>(lines2.as<U>(), in.idx(), in.val(), order2.as<I>(), head.as<I>(),
                                                         slot.as<I>(), nnz, out_lines.as<U>(), out.indices.template as<I>(),
                                                         out.values.template as<T>());
  indptr_from_sorted_kernel<<<blocks_for(lines + 1), kBlock, 0, stream>>>(out_lines.as<U>(), unique, lines,
                                                                           out.indptr.template as<I>());
  GPUML_CUDA_CHECK_LAUNCH();
  return out;
}

// The same matrix by the other dimension: a stable sort of the entries by index (within an
// index, by line, since the entries are in line order), gathers, and the new indptr.
template <typename T, typename I>
Lines<T, I> transposed(Context& ctx, cudaStream_t stream, const Lines<T, I>& in) {
  using U = std::make_unsigned_t<I>;
  const int64_t nnz = in.nnz;
  Lines<T, I> out;
  out.count = in.width;
  out.width = in.count;
  out.nnz = nnz;
  out.indptr = device_array<I>(ctx, out.count + 1);
  out.indices = device_array<I>(ctx, nnz);
  out.values = device_array<T>(ctx, nnz);
  if (nnz == 0) {
    GPUML_CUDA_CHECK(cudaMemsetAsync(out.indptr.data(), 0, static_cast<std::size_t>(out.count + 1) * sizeof(I), stream));
    return out;
  }
  Buffer order0 = device_array<I>(ctx, nnz), order = device_array<I>(ctx, nnz), sorted = device_array<U>(ctx, nnz);
  iota_kernel<<<blocks_for(nnz), kBlock, 0, stream>>>(order0.as<I>(), nnz);
  GPUML_CUDA_CHECK_LAUNCH();
  sort_pairs(ctx, stream, reinterpret_cast<const U*>(in.idx()), sorted.as<U>(), order0.as<I>(), order.as<I>(), nnz,
             bits_for(in.width - 1));
  transpose_gather_kernel<<<blocks_for(nnz), kBlock, 0, stream>>>(in.ptr(), in.count, in.val(), order.as<I>(), nnz,
                                                                  out.indices.template as<I>(), out.values.template as<T>());
  indptr_from_sorted_kernel<<<blocks_for(out.count + 1), kBlock, 0, stream>>>(sorted.as<U>(), nnz, out.count,
                                                                               out.indptr.template as<I>());
  GPUML_CUDA_CHECK_LAUNCH();
  return out;
}

template <typename T, typename I>
class SparseCuda final : public SparseMatrix<T> {
 public:
  SparseCuda(const Context& ctx, Lines<T, I> by_rows, Lines<T, I> by_cols)
      : ctx_(ctx), by_rows_(std::move(by_rows)), by_cols_(std::move(by_cols)) {
    this->rows_ = by_rows_.count;
    this->cols_ = by_cols_.count;
    rows_pieces_ = pieces_of(by_rows_);
    cols_pieces_ = pieces_of(by_cols_);
  }
  SparseCuda(const SparseCuda&) = delete;
  SparseCuda& operator=(const SparseCuda&) = delete;

  void times(const T* B, int64_t t, T* out) override { product(by_rows_, rows_pieces_, B, t, out); }
  void transpose_times(const T* B, int64_t t, T* out) override { product(by_cols_, cols_pieces_, B, t, out); }

  void column_moments(double* sums_host, double* squares_host) override {
    cuda::Resources& res = cuda::activate(ctx_);
    const int64_t d = this->cols_;
    if (d == 0) return;
    Buffer out = device_array<double>(ctx_, 2 * d);
    line_moments_kernel<<<blocks_for(d), kBlock, 0, res.stream>>>(by_cols_.ptr(), by_cols_.val(), d, out.as<double>(),
                                                                  out.as<double>() + d);
    GPUML_CUDA_CHECK_LAUNCH();
    to_host(res.stream, sums_host, out.as<double>(), d);
    to_host(res.stream, squares_host, out.as<double>() + d, d);
  }

  void weighted_gram(const T* w_host, double* gram_host) override {
    cuda::Resources& res = cuda::activate(ctx_);
    const int64_t n = this->rows_, d = this->cols_;
    if (d == 0) return;
    Buffer w = w_host ? upload(ctx_, w_host, n) : Buffer();
    Buffer gram = device_array<double>(ctx_, d * d);
    GPUML_CUDA_CHECK(cudaMemsetAsync(gram.data(), 0, static_cast<std::size_t>(d * d) * sizeof(double), res.stream));
    gram_rows_kernel<<<blocks_for(d), kBlock, 0, res.stream>>>(by_rows_.ptr(), by_rows_.idx(), by_rows_.val(), by_cols_.ptr(),
                                                               by_cols_.idx(), by_cols_.val(), w_host ? w.as<T>() : nullptr, d,
                                                               gram.as<double>());
    mirror_kernel<<<blocks_for(d * d), kBlock, 0, res.stream>>>(gram.as<double>(), d);
    GPUML_CUDA_CHECK_LAUNCH();
    to_host(res.stream, gram_host, gram.as<double>(), d * d);
  }

  void row_squared_norms(T* norms) override {
    cuda::Resources& res = cuda::activate(ctx_);
    const int64_t n = this->rows_;
    if (n == 0) return;
    row_norms_kernel<<<blocks_for(n), kBlock, 0, res.stream>>>(by_rows_.ptr(), by_rows_.val(), n, norms);
    GPUML_CUDA_CHECK_LAUNCH();
    GPUML_CUDA_CHECK(cudaStreamSynchronize(res.stream));  // the caller may read `norms` on another stream
  }

  void dense_rows(const int64_t* rows_host, int64_t m, T* out_host) override {
    cuda::Resources& res = cuda::activate(ctx_);
    const int64_t n = this->rows_, d = this->cols_;
    for (int64_t r = 0; r < m; ++r)
      GPUML_EXPECT(rows_host[r] >= 0 && rows_host[r] < n, "sparse dense_rows: row index out of range");
    if (m == 0 || d == 0) return;
    Buffer rows = upload(ctx_, rows_host, m);
    Buffer out = device_array<T>(ctx_, m * d);
    GPUML_CUDA_CHECK(cudaMemsetAsync(out.data(), 0, static_cast<std::size_t>(m * d) * sizeof(T), res.stream));
    dense_rows_kernel<<<blocks_for(m * kWarp), kBlock, 0, res.stream>>>(by_rows_.ptr(), by_rows_.idx(), by_rows_.val(),
                                                                        rows.as<int64_t>(), m, d, out.as<T>());
    GPUML_CUDA_CHECK_LAUNCH();
    to_host(res.stream, out_host, out.as<T>(), m * d);
  }

  void grouped_row_sums(const int32_t* groups, const T* w, int64_t k, double* sums_host,
                        double* group_weights_host) override {
    cuda::Resources& res = cuda::activate(ctx_);
    const int64_t n = this->rows_, d = this->cols_;
    if (k <= 0) return;
    if (d > 0) {
      Buffer sums = device_array<double>(ctx_, k * d);
      GPUML_CUDA_CHECK(cudaMemsetAsync(sums.data(), 0, static_cast<std::size_t>(k * d) * sizeof(double), res.stream));
      grouped_columns_kernel<<<blocks_for(d), kBlock, 0, res.stream>>>(by_cols_.ptr(), by_cols_.idx(), by_cols_.val(), d,
                                                                       groups, w, k, sums.as<double>());
      GPUML_CUDA_CHECK_LAUNCH();
      to_host(res.stream, sums_host, sums.as<double>(), k * d);
    }
    // The group weights in row order within each group: rows stably sorted by group.
    Buffer weights = device_array<double>(ctx_, k);
    Buffer keys = device_array<uint64_t>(ctx_, n), sorted = device_array<uint64_t>(ctx_, n);
    Buffer rows = device_array<int64_t>(ctx_, n), order = device_array<int64_t>(ctx_, n);
    if (n > 0) {
      group_keys_kernel<<<blocks_for(n), kBlock, 0, res.stream>>>(groups, n, keys.as<uint64_t>());
      iota_kernel<<<blocks_for(n), kBlock, 0, res.stream>>>(rows.as<int64_t>(), n);
      GPUML_CUDA_CHECK_LAUNCH();
      sort_pairs(ctx_, res.stream, keys.as<uint64_t>(), sorted.as<uint64_t>(), rows.as<int64_t>(), order.as<int64_t>(), n, 32);
    }
    group_weights_kernel<<<blocks_for(k), kBlock, 0, res.stream>>>(sorted.as<uint64_t>(), order.as<int64_t>(), n, w, k,
                                                                   weights.as<double>());
    GPUML_CUDA_CHECK_LAUNCH();
    to_host(res.stream, group_weights_host, weights.as<double>(), k);
  }

 private:
  // The lines of one order longer than kPieceEntries, cut into pieces (line_times' warps).
  struct Pieces {
    int64_t count = 0, long_lines = 0;
    Buffer starts, ends;      // per piece: its first entry, and its line's end
    Buffer lines, first;      // per long line: its number, and its first piece (long_lines + 1)
  };

  // From the host copy of indptr: one pass, once per matrix.
  Pieces pieces_of(const Lines<T, I>& m) {
    cuda::Resources& res = cuda::activate(ctx_);
    std::vector<I> indptr(static_cast<std::size_t>(m.count + 1));
    to_host(res.stream, indptr.data(), m.ptr(), m.count + 1);
    std::vector<int64_t> starts, ends, lines, first;
    for (int64_t l = 0; l < m.count; ++l) {
      const int64_t begin = indptr[l], end = indptr[l + 1];
      if (end - begin <= kPieceEntries) continue;
      lines.push_back(l);
      first.push_back(static_cast<int64_t>(starts.size()));
      for (int64_t k = begin; k < end; k += kPieceEntries) {
        starts.push_back(k);
        ends.push_back(end);
      }
    }
    first.push_back(static_cast<int64_t>(starts.size()));
    Pieces p;
    p.count = static_cast<int64_t>(starts.size());
    p.long_lines = static_cast<int64_t>(lines.size());
    Context context = ctx_;
    p.starts = upload(context, starts.data(), p.count);
    p.ends = upload(context, ends.data(), p.count);
    p.lines = upload(context, lines.data(), p.long_lines);
    p.first = upload(context, first.data(), p.long_lines + 1);
    return p;
  }

  // out (m.count x t) = m · B (m.width x t), row-major: short lines a warp each, long lines by
  // pieces added in order. No atomics: the same bits on every call.
  void product(const Lines<T, I>& m, const Pieces& pieces, const T* B, int64_t t, T* out) {
    cuda::Resources& res = cuda::activate(ctx_);
    if (m.count == 0 || t == 0) return;
    const unsigned warps_grid = cuda::grid_for(m.count * kWarp, kBlock, kMaxBlocks);
    short_lines_times_kernel<<<warps_grid, kBlock, 0, res.stream>>>(m.ptr(), m.idx(), m.val(), m.count, B, t, out);
    GPUML_CUDA_CHECK_LAUNCH();
    if (pieces.count == 0) return;
    const std::size_t bytes = static_cast<std::size_t>(pieces.count * t) * sizeof(T);
    if (partial_.bytes() < bytes) partial_ = Buffer(ctx_, bytes);
    pieces_times_kernel<<<cuda::grid_for(pieces.count * kWarp, kBlock, kMaxBlocks), kBlock, 0, res.stream>>>(
        m.idx(), m.val(), pieces.starts.template as<int64_t>(), pieces.ends.template as<int64_t>(), pieces.count, B, t,
        partial_.as<T>());
    GPUML_CUDA_CHECK_LAUNCH();
    add_pieces_kernel<<<blocks_for(pieces.long_lines * t), kBlock, 0, res.stream>>>(
        pieces.lines.template as<int64_t>(), pieces.first.template as<int64_t>(), pieces.long_lines, partial_.as<T>(), t, out);
    GPUML_CUDA_CHECK_LAUNCH();
  }

  Context ctx_;
  Lines<T, I> by_rows_;  // X: n lines over d columns
  Lines<T, I> by_cols_;  // Xᵀ: d lines over n rows (X's CSC)
  Pieces rows_pieces_, cols_pieces_;
  Buffer partial_;  // the pieces' partial rows, kept and grown
};

template <typename T, typename I>
std::unique_ptr<SparseMatrix<T>> build(const Context& ctx, const SparseView& X, const char* what) {
  Context context = ctx;  // a Buffer takes a mutable context (a shared handle)
  cuda::Resources& res = cuda::activate(ctx);
  const bool csr = X.format == SparseFormat::csr;
  // Both orders keep the index width: the CSR of Xᵀ holds row numbers, X's CSR column numbers.
  if (sizeof(I) == 4 && (X.rows() >= INT32_MAX || X.cols() >= INT32_MAX))
    throw_error(ErrorCode::unsupported, std::string(what) + " (sparse matrix): shape (" + std::to_string(X.rows()) + ", " +
                                            std::to_string(X.cols()) + ") exceeds int32 indices on CUDA: use int64 indices");
  check_pointer_location(X.indptr, X.device, what);
  if (X.nnz > 0) {
    check_pointer_location(X.indices, X.device, what);
    check_pointer_location(X.values, X.device, what);
  }
  Staged s = stage(context, res, X);
  Lines<T, I> given;
  given.count = X.major();
  given.width = X.minor();
  given.nnz = X.nnz;
  auto convert = [&](auto v) {
    using V = decltype(v);
    check_on_device<I, V>(context, res, X, s, what);
    given.values = device_array<T>(context, X.nnz);
    convert_kernel<<<blocks_for(X.nnz), kBlock, 0, res.stream>>>(static_cast<const V*>(s.values), X.nnz,
                                                                 given.values.template as<T>());
    GPUML_CUDA_CHECK_LAUNCH();
  };
  if (X.dtype == DType::float32)
    convert(float{});
  else
    convert(double{});
  // The index arrays: the staged copies, or copies of the caller's.
  auto own = [&](Buffer& staged, const void* caller, int64_t count) {
    if (staged.data() != nullptr) return std::move(staged);
    Buffer out = device_array<I>(context, count);
    if (count > 0)
      GPUML_CUDA_CHECK(cudaMemcpyAsync(out.data(), caller, static_cast<std::size_t>(count) * sizeof(I), cudaMemcpyDeviceToDevice,
                                       res.stream));
    return out;
  };
  given.indptr = own(s.indptr_copy, s.indptr, X.major() + 1);
  given.indices = own(s.indices_copy, s.indices, X.nnz);
  s.values_copy = Buffer();
  Lines<T, I> first = canonical(context, res.stream, std::move(given));
  Lines<T, I> second = transposed(context, res.stream, first);
  // Nothing may be left queued on the caller's arrays once the constructor returns.
  GPUML_CUDA_CHECK(cudaStreamSynchronize(res.stream));
  if (csr) return std::make_unique<SparseCuda<T, I>>(ctx, std::move(first), std::move(second));
  return std::make_unique<SparseCuda<T, I>>(ctx, std::move(second), std::move(first));
}

}  // namespace

template <typename T>
std::unique_ptr<SparseMatrix<T>> make_sparse_cuda_matrix(const Context& ctx, const SparseView& X, const char* what) {
  check_header(X, what);
  if (X.index_dtype == DType::int32) return build<T, int32_t>(ctx, X, what);
  return build<T, int64_t>(ctx, X, what);
}

template std::unique_ptr<SparseMatrix<float>> make_sparse_cuda_matrix<float>(const Context&, const SparseView&, const char*);
template std::unique_ptr<SparseMatrix<double>> make_sparse_cuda_matrix<double>(const Context&, const SparseView&, const char*);

}  // namespace gpuml::detail

// The CUDA backend of PageRank (src/graph/pagerank_backend.hpp).
//
// build: the edges are sorted by destination with CUB's radix sort (stable: input order within
// a destination, as the CPU backend's counting sort), row offsets found by binary search in the
// sorted keys, source ids gathered as int32 columns (and weights as values). Unweighted
// out-degrees are integer atomic counts; weighted ones come from a second stable sort by source,
// each vertex's weights then summed by one thread in input order (the CPU's order and bits).
// Rows longer than 32 * group lanes ("heavy", the hubs of power-law graphs) are listed once.
//
// iterate (no host work but the one 8-byte read of the L1 change):
//   1. y = x * inv_outdeg and the dangling mass, per fixed chunk of vertices (block_sum), then
//      the chunks' partials summed in order by one block: dsum stays on the device;
//   2. the pull SpMV: a group of G lanes per row (G = 4..32 from the mean in-degree), lanes
//      strided over the row's edges, a fixed shuffle tree, sums in double; heavy rows get a
//      block of kBlock threads each; both write x_new = alpha (s + dsum d_i) + (1 - alpha) p_i;
//   3. sum |x_new - x| the same way as 1.
// Every reduction has a fixed shape that depends only on n (not on the device), so results are
// deterministic.
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_reduce.cuh>
#include <cub/device/device_scan.cuh>

#include <algorithm>
#include <climits>
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

unsigned blocks_for(int64_t threads) { return cuda::grid_for(threads, kBlock, kMaxBlocks); }

__global__ void narrow_kernel(const int64_t* __restrict__ in, int32_t* __restrict__ out, int64_t n) {
  for (int64_t i = global_thread(); i < n; i += grid_threads()) out[i] = static_cast<int32_t>(in[i]);
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
                                    const T* __restrict__ weights, int64_t m, int32_t* __restrict__ col,
                                    T* __restrict__ val) {
  for (int64_t e = global_thread(); e < m; e += grid_threads()) {
    const int64_t from = order[e];
    col[e] = static_cast<int32_t>(src[from]);
    if (weights != nullptr) val[e] = weights[from];
  }
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

__global__ void heavy_flags_kernel(const int64_t* __restrict__ row_ptr, int64_t n, int64_t threshold,
                                   int32_t* __restrict__ flags) {
  for (int64_t v = global_thread(); v <= n; v += grid_threads())
    flags[v] = v < n && row_ptr[v + 1] - row_ptr[v] > threshold ? 1 : 0;
}

__global__ void heavy_scatter_kernel(const int32_t* __restrict__ flags, const int32_t* __restrict__ positions, int64_t n,
                                     int32_t* __restrict__ heavy) {
  for (int64_t v = global_thread(); v < n; v += grid_threads())
    if (flags[v]) heavy[positions[v]] = static_cast<int32_t>(v);
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

// Block b: sum |x_new - x| over chunk b into partials[b].
template <typename T>
__global__ void __launch_bounds__(kBlock) change_kernel(const T* __restrict__ x, const T* __restrict__ x_new, int64_t n,
                                                        double* __restrict__ partials) {
  __shared__ double shared[kBlock];
  const int64_t begin = blockIdx.x * kChunk;
  const int64_t end = min(n, begin + kChunk);
  double change = 0.0;
  for (int64_t v = begin + threadIdx.x; v < end; v += kBlock)
    change += fabs(static_cast<double>(x_new[v]) - static_cast<double>(x[v]));
  const double total = block_sum(change, shared);
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

struct RowArgs {
  const int64_t* row_ptr;
  const int32_t* col;
  int64_t n;
  int64_t heavy_threshold;
  double alpha;
  double uniform;
  const double* dsum;
};

// Groups of `group` lanes (a power of two <= 32), one row each, rows above the heavy threshold
// skipped. The loop bound is uniform across a warp so that every lane reaches the shuffles.
template <typename T>
__global__ void __launch_bounds__(kBlock) rows_kernel(RowArgs a, int group, const T* __restrict__ val,
                                                      const T* __restrict__ y, const T* __restrict__ p,
                                                      const T* __restrict__ dangling, T* __restrict__ x_new) {
  const int lane = threadIdx.x % kWarp;
  const int groups_per_warp = kWarp / group;
  const int64_t warp = global_thread() / kWarp;
  const int64_t warps = grid_threads() / kWarp;
  const int in_group = lane % group;
  const int64_t group_in_warp = lane / group;
  for (int64_t base = warp * groups_per_warp; base < a.n; base += warps * groups_per_warp) {
    const int64_t r = base + group_in_warp;
    int64_t begin = 0, end = 0;
    bool write = false;
    if (r < a.n) {
      begin = a.row_ptr[r];
      end = a.row_ptr[r + 1];
      write = end - begin <= a.heavy_threshold;
      if (!write) end = begin;
    }
    double s = 0.0;
    if (val != nullptr)
      for (int64_t e = begin + in_group; e < end; e += group) s += static_cast<double>(val[e]) * static_cast<double>(y[a.col[e]]);
    else
      for (int64_t e = begin + in_group; e < end; e += group) s += static_cast<double>(y[a.col[e]]);
    for (int offset = group / 2; offset > 0; offset /= 2) s += __shfl_down_sync(0xffffffffu, s, offset, group);
    if (write && in_group == 0) x_new[r] = combine(s, r, p, dangling, a.dsum, a.alpha, a.uniform);
  }
}

// A block per heavy row.
template <typename T>
__global__ void __launch_bounds__(kBlock) heavy_kernel(RowArgs a, const int32_t* __restrict__ heavy, int64_t n_heavy,
                                                       const T* __restrict__ val, const T* __restrict__ y,
                                                       const T* __restrict__ p, const T* __restrict__ dangling,
                                                       T* __restrict__ x_new) {
  __shared__ double shared[kBlock];
  for (int64_t h = blockIdx.x; h < n_heavy; h += gridDim.x) {
    const int64_t r = heavy[h];
    const int64_t begin = a.row_ptr[r], end = a.row_ptr[r + 1];
    double s = 0.0;
    if (val != nullptr)
      for (int64_t e = begin + threadIdx.x; e < end; e += kBlock) s += static_cast<double>(val[e]) * static_cast<double>(y[a.col[e]]);
    else
      for (int64_t e = begin + threadIdx.x; e < end; e += kBlock) s += static_cast<double>(y[a.col[e]]);
    const double total = block_sum(s, shared);
    if (threadIdx.x == 0) x_new[r] = combine(total, r, p, dangling, a.dsum, a.alpha, a.uniform);
    __syncthreads();  // shared[] is reused by the next row
  }
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
    m_ = m;
    weighted_ = weights != nullptr;
    const int key_bits = bits_for(n);

    // 1. Edges sorted by destination (stable), their order as edge indices.
    Buffer order = device(std::max<int64_t>(m, 1) * sizeof(int64_t));
    row_ptr_ = device((n + 1) * sizeof(int64_t));
    col_ = device(std::max<int64_t>(m, 1) * sizeof(int32_t));
    val_ = weighted_ ? device(std::max<int64_t>(m, 1) * sizeof(T)) : Buffer();
    {
      Buffer keys = sort_by(dst, m, key_bits, order, res);
      offsets_kernel<<<blocks_for(n + 1), kBlock, 0, res.stream>>>(keys.as<int32_t>(), m, n, row_ptr_.as<int64_t>());
      GPUML_CUDA_CHECK_LAUNCH();
    }
    if (m > 0) {
      gather_edges_kernel<T><<<blocks_for(m), kBlock, 0, res.stream>>>(order.as<int64_t>(), src, weights, m,
                                                                         col_.as<int32_t>(), weighted_ ? val_.as<T>() : nullptr);
      GPUML_CUDA_CHECK_LAUNCH();
    }

    // 2. Inverse (weighted) out-degrees and the number of dangling vertices.
    inv_out_ = device(n * sizeof(T));
    Buffer dangling = device(sizeof(unsigned long long));
    GPUML_CUDA_CHECK(cudaMemsetAsync(dangling.data(), 0, sizeof(unsigned long long), res.stream));
    if (!weighted_) {
      Buffer counts = device(n * sizeof(unsigned long long));
      GPUML_CUDA_CHECK(cudaMemsetAsync(counts.data(), 0, n * sizeof(unsigned long long), res.stream));
      if (m > 0) {
        count_out_kernel<<<blocks_for(m), kBlock, 0, res.stream>>>(src, m, counts.as<unsigned long long>());
        GPUML_CUDA_CHECK_LAUNCH();
      }
      inverse_count_kernel<T><<<blocks_for(n), kBlock, 0, res.stream>>>(counts.as<unsigned long long>(), n, inv_out_.as<T>(),
                                                                          dangling.as<unsigned long long>());
      GPUML_CUDA_CHECK_LAUNCH();
    } else {
      Buffer out_ptr = device((n + 1) * sizeof(int64_t));
      {
        Buffer keys = sort_by(src, m, key_bits, order, res);
        offsets_kernel<<<blocks_for(n + 1), kBlock, 0, res.stream>>>(keys.as<int32_t>(), m, n, out_ptr.as<int64_t>());
        GPUML_CUDA_CHECK_LAUNCH();
      }
      inverse_weighted_kernel<T><<<blocks_for(n), kBlock, 0, res.stream>>>(
          out_ptr.as<int64_t>(), order.as<int64_t>(), weights, n, inv_out_.as<T>(), dangling.as<unsigned long long>());
      GPUML_CUDA_CHECK_LAUNCH();
    }

    // 3. The row group size from the mean in-degree, and the heavy rows.
    const double mean = static_cast<double>(m) / static_cast<double>(n);
    group_ = mean <= 6 ? 4 : mean <= 12 ? 8 : mean <= 24 ? 16 : 32;
    heavy_threshold_ = int64_t(32) * group_;
    Buffer flags = device((n + 1) * sizeof(int32_t));
    Buffer positions = device((n + 1) * sizeof(int32_t));
    heavy_flags_kernel<<<blocks_for(n + 1), kBlock, 0, res.stream>>>(row_ptr_.as<int64_t>(), n, heavy_threshold_,
                                                                    flags.as<int32_t>());
    GPUML_CUDA_CHECK_LAUNCH();
    std::size_t temp_bytes = 0;
    GPUML_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(nullptr, temp_bytes, flags.as<int32_t>(), positions.as<int32_t>(), n + 1,
                                                   res.stream));
    Buffer temp = device(std::max<std::size_t>(temp_bytes, 1));
    GPUML_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(temp.data(), temp_bytes, flags.as<int32_t>(), positions.as<int32_t>(),
                                                   n + 1, res.stream));
    int32_t n_heavy = 0;
    unsigned long long n_dangling = 0;
    res.copy_to_host(&n_heavy, positions.as<int32_t>() + n, sizeof(int32_t));
    res.copy_to_host(&n_dangling, dangling.data(), sizeof(n_dangling));
    n_heavy_ = n_heavy;
    heavy_ = device(std::max<int64_t>(n_heavy_, 1) * sizeof(int32_t));
    if (n_heavy_ > 0) {
      heavy_scatter_kernel<<<blocks_for(n), kBlock, 0, res.stream>>>(flags.as<int32_t>(), positions.as<int32_t>(), n,
                                                                     heavy_.as<int32_t>());
      GPUML_CUDA_CHECK_LAUNCH();
    }

    // 4. Iteration scratch.
    chunks_ = ceil_div(n, kChunk);
    y_ = device(n * sizeof(T));
    partials_ = device(chunks_ * sizeof(double));
    scalars_ = device(2 * sizeof(double));
    GPUML_CUDA_CHECK(cudaStreamSynchronize(res.stream));  // the temporaries above die with this call
    return static_cast<int64_t>(n_dangling);
  }

  double iterate(const T* x, T* x_new, const T* p, const T* dangling, double alpha) override {
    cuda::Resources& res = cuda::activate(ctx_);
    const int64_t n = n_;
    double* dsum = scalars_.as<double>();
    double* err = scalars_.as<double>() + 1;
    prepare_kernel<T><<<static_cast<unsigned>(chunks_), kBlock, 0, res.stream>>>(x, inv_out_.as<T>(), n, y_.as<T>(),
                                                                                  partials_.as<double>());
    GPUML_CUDA_CHECK_LAUNCH();
    finish_kernel<<<1, kBlock, 0, res.stream>>>(partials_.as<double>(), chunks_, dsum);
    GPUML_CUDA_CHECK_LAUNCH();

    RowArgs a{row_ptr_.as<int64_t>(), col_.as<int32_t>(), n, heavy_threshold_, alpha, 1.0 / static_cast<double>(n), dsum};
    const T* val = weighted_ ? val_.as<T>() : nullptr;
    const int64_t warps_needed = ceil_div(n, kWarp / group_);
    rows_kernel<T><<<blocks_for(warps_needed * kWarp), kBlock, 0, res.stream>>>(a, group_, val, y_.as<T>(), p, dangling, x_new);
    GPUML_CUDA_CHECK_LAUNCH();
    if (n_heavy_ > 0) {
      const unsigned grid = static_cast<unsigned>(std::min<int64_t>(n_heavy_, kMaxBlocks));
      heavy_kernel<T><<<grid, kBlock, 0, res.stream>>>(a, heavy_.as<int32_t>(), n_heavy_, val, y_.as<T>(), p, dangling, x_new);
      GPUML_CUDA_CHECK_LAUNCH();
    }

    change_kernel<T><<<static_cast<unsigned>(chunks_), kBlock, 0, res.stream>>>(x, x_new, n, partials_.as<double>());
    GPUML_CUDA_CHECK_LAUNCH();
    finish_kernel<<<1, kBlock, 0, res.stream>>>(partials_.as<double>(), chunks_, err);
    GPUML_CUDA_CHECK_LAUNCH();
    double host_err = 0.0;
    res.copy_to_host(&host_err, err, sizeof(double));
    return host_err;
  }

 private:
  Buffer device(std::size_t bytes) { return Buffer(ctx_, std::max<std::size_t>(bytes, 1)); }

  // order = the edge indices 0..m-1 stably sorted by keys (ids < 2^31, narrowed to int32 first);
  // returns the sorted keys.
  Buffer sort_by(const int64_t* keys, int64_t m, int key_bits, Buffer& order, cuda::Resources& res) {
    Buffer sorted = device(m * sizeof(int32_t));
    if (m == 0) return sorted;
    Buffer narrow = device(m * sizeof(int32_t));
    Buffer ids = device(m * sizeof(int64_t));
    narrow_kernel<<<blocks_for(m), kBlock, 0, res.stream>>>(keys, narrow.as<int32_t>(), m);
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

  Context ctx_;
  int64_t n_ = 0, m_ = 0, chunks_ = 0, n_heavy_ = 0, heavy_threshold_ = 0;
  int group_ = 32;
  bool weighted_ = false;
  Buffer row_ptr_, col_, val_, inv_out_, heavy_, y_, partials_, scalars_;
};

}  // namespace

template <typename T>
std::unique_ptr<PageRankBackend<T>> make_pagerank_cuda_backend(const Context& ctx) {
  return std::make_unique<CudaPageRankBackend<T>>(ctx);
}

template std::unique_ptr<PageRankBackend<float>> make_pagerank_cuda_backend<float>(const Context&);
template std::unique_ptr<PageRankBackend<double>> make_pagerank_cuda_backend<double>(const Context&);

}  // namespace gpuml::detail

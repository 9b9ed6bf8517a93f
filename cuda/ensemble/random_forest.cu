// The CUDA backend of the random forests (src/ensemble/forest_backend.hpp).
//
// predict: a thread per row walks the trees (packed_step's steps, shared with the CPU backend;
// four trees side by side) and sums the leaves' values in tree order in registers (up to
// kRegisterValues per leaf; more go through the output in global memory), so a row's sum has the
// CPU's order and bits. The nodes are 16 bytes with neighbouring children: one load per step,
// served by L1/L2 for the forest's top levels. Each thread's row is first copied to shared memory
// (rows of up to 48 kB a block): read from there at every step, X no longer competes with the
// nodes for L2 (H200, 1M rows, 100 full-depth trees: 29 -> 16.6 ms for the classifier, 36 -> 24.2
// ms for the regressor). The packed forest is copied to a device once (stage) and kept by the
// estimator.
#include <algorithm>
#include <vector>

#include "cuda/core/kernel_util.cuh"
#include "cuda/core/resources.cuh"
#include "ensemble/forest_backend.hpp"
#include "gpuml/core/array.hpp"
#include "gpuml/core/error.hpp"

namespace gpuml::detail {
namespace {

constexpr int kRegisterValues = 8;
constexpr int kPredictBlock = 128;

// A row of X as the walk reads it: x[f] straight from X, or (Staged) from the block's copy of
// its rows in shared memory, feature f of thread t's row at f * kPredictBlock + t (every thread
// reads its own row only, in its own bank: no barrier and no conflicts). X's rows are read from
// L2 at every step otherwise, as often as the nodes (d = 32: a 128-byte row per thread, more
// than L1 holds at full occupancy).
template <typename T>
struct GlobalRow {
  const T* x;
  __device__ double operator[](int32_t f) const { return static_cast<double>(x[f]); }
};
template <typename T>
struct StagedRow {
  const T* x;  // this thread's element of feature 0
  __device__ double operator[](int32_t f) const { return static_cast<double>(x[f * kPredictBlock]); }
};

// The leaves x falls in, in kWays trees walked side by side (packed_step's steps, interleaved):
// each step's loads of the ways are independent, so kWays of them are in flight at once (a
// deep tree's walk is a chain of dependent loads, mostly from L2 or memory).
constexpr int kWays = 4;
template <typename Row>
__device__ __forceinline__ void leaves_side_by_side(const PackedNode* __restrict__ nodes, const int32_t* __restrict__ roots,
                                                    const Row& x, int32_t* leaf) {
  PackedNode node[kWays];
#pragma unroll
  for (int w = 0; w < kWays; ++w) node[w] = nodes[roots[w]];
  for (bool stepped = true; stepped;) {
    stepped = false;
#pragma unroll
    for (int w = 0; w < kWays; ++w) {
      if (node[w].feature >= 0) {
        node[w] = nodes[packed_step(node[w], x[node[w].feature])];
        stepped = true;
      }
    }
  }
#pragma unroll
  for (int w = 0; w < kWays; ++w) leaf[w] = node[w].child;
}

// Every tree's leaf value row for x, in tree order: add(v) for each (kWays trees walked at once).
template <typename Row, typename Add>
__device__ __forceinline__ void for_each_leaf(const PackedNode* __restrict__ nodes, const int32_t* __restrict__ roots,
                                              int64_t n_trees, const double* __restrict__ values, int k, const Row& x,
                                              Add&& add) {
  int64_t t = 0;
  for (; t + kWays <= n_trees; t += kWays) {
    int32_t leaf[kWays];
    leaves_side_by_side(nodes, roots + t, x, leaf);
#pragma unroll
    for (int w = 0; w < kWays; ++w) add(values + static_cast<int64_t>(leaf[w]) * k);
  }
  for (; t < n_trees; ++t) {
    PackedNode node = nodes[roots[t]];
    while (node.feature >= 0) node = nodes[packed_step(node, x[node.feature])];
    add(values + static_cast<int64_t>(node.child) * k);
  }
}

// out's row for x: the mean of the trees' leaf values, summed in tree order.
template <typename Row>
__device__ __forceinline__ void predict_row(const PackedNode* __restrict__ nodes, const int32_t* __restrict__ roots,
                                            int64_t n_trees, const double* __restrict__ values, int k, const Row& x,
                                            double* __restrict__ o) {
  const double share = 1.0 / static_cast<double>(n_trees);
  if (k <= kRegisterValues) {
    double acc[kRegisterValues];
#pragma unroll
    for (int c = 0; c < kRegisterValues; ++c) acc[c] = 0.0;
    for_each_leaf(nodes, roots, n_trees, values, k, x, [&](const double* v) {
#pragma unroll
      for (int c = 0; c < kRegisterValues; ++c)
        if (c < k) acc[c] = add_share(acc[c], share, v[c]);
    });
#pragma unroll
    for (int c = 0; c < kRegisterValues; ++c)
      if (c < k) o[c] = acc[c];
  } else {
    for (int c = 0; c < k; ++c) o[c] = 0.0;
    for_each_leaf(nodes, roots, n_trees, values, k, x, [&](const double* v) {
      for (int c = 0; c < k; ++c) o[c] = add_share(o[c], share, v[c]);
    });
  }
}

// Each thread's rows of X, read from X (Staged false) or from the thread's copy of it in shared
// memory (d x kPredictBlock values a block).
template <typename T, bool Staged>
__global__ void __launch_bounds__(kPredictBlock) predict_kernel(const PackedNode* __restrict__ nodes,
                                                                const int32_t* __restrict__ roots, int64_t n_trees,
                                                                const double* __restrict__ values, int k,
                                                                const T* __restrict__ X, int64_t n, int64_t d,
                                                                double* __restrict__ out) {
  extern __shared__ unsigned char staged_rows[];
  T* own = reinterpret_cast<T*>(staged_rows) + threadIdx.x;
  for (int64_t i = global_thread(); i < n; i += grid_threads()) {
    const T* x = X + i * d;
    if constexpr (Staged) {
      for (int64_t f = 0; f < d; ++f) own[f * kPredictBlock] = x[f];
      predict_row(nodes, roots, n_trees, values, k, StagedRow<T>{own}, out + i * k);
    } else {
      predict_row(nodes, roots, n_trees, values, k, GlobalRow<T>{x}, out + i * k);
    }
  }
}

// Shared memory a block may stage without opting in to more.
constexpr int64_t kStagedBytes = 48 * 1024;

template <typename T>
class CudaForestBackend final : public ForestBackend<T> {
 public:
  explicit CudaForestBackend(const Context& ctx) : ctx_(ctx) {}

  std::shared_ptr<const StagedForest> stage(std::shared_ptr<const PackedForest> forest) override {
    cuda::Resources& res = cuda::activate(ctx_);
    auto staged = std::make_shared<StagedForest>();
    staged->nodes = upload(res, forest->nodes);
    staged->roots = upload(res, forest->roots);
    staged->values = upload(res, forest->values);
    staged->n_trees = forest->n_trees();
    staged->k = forest->k;
    GPUML_CUDA_CHECK(cudaStreamSynchronize(res.stream));  // usable from any stream from now on
    return staged;
  }

  void predict(const StagedForest& staged, const T* X, int64_t n, int64_t d, double* out) override {
    cuda::Resources& res = cuda::activate(ctx_);
    if (n == 0) return;
    const int64_t stage_bytes = d * kPredictBlock * static_cast<int64_t>(sizeof(T));
    const bool staged_rows = stage_bytes <= kStagedBytes;
    const auto kernel = staged_rows ? predict_kernel<T, true> : predict_kernel<T, false>;
    kernel<<<cuda::grid_for(n, kPredictBlock, kMaxBlocks), kPredictBlock, staged_rows ? static_cast<std::size_t>(stage_bytes) : 0,
             res.stream>>>(staged.nodes.as<PackedNode>(), staged.roots.as<int32_t>(), staged.n_trees,
                           staged.values.as<double>(), staged.k, X, n, d, out);
    GPUML_CUDA_CHECK_LAUNCH();
  }

 private:
  template <typename V, typename Allocator>
  Buffer upload(cuda::Resources& res, const std::vector<V, Allocator>& host) {
    Buffer buffer(ctx_, std::max<std::size_t>(host.size(), 1) * sizeof(V));
    if (!host.empty())
      GPUML_CUDA_CHECK(cudaMemcpyAsync(buffer.data(), host.data(), host.size() * sizeof(V), cudaMemcpyHostToDevice, res.stream));
    return buffer;
  }

  Context ctx_;
};

}  // namespace

template <typename T>
std::unique_ptr<ForestBackend<T>> make_forest_cuda_backend(const Context& ctx) {
  return std::make_unique<CudaForestBackend<T>>(ctx);
}

template std::unique_ptr<ForestBackend<float>> make_forest_cuda_backend<float>(const Context&);
template std::unique_ptr<ForestBackend<double>> make_forest_cuda_backend<double>(const Context&);

}  // namespace gpuml::detail

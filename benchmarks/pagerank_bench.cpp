// PageRank time per power iteration on CPU and CUDA contexts, float32 ranks, on an R-MAT graph
// (a, b, c, d = 0.57, 0.19, 0.19, 0.05; edge factor 16), generated here with a per-edge random
// stream (independent of the thread count). Each benchmark iteration runs PageRank twice, with
// max_iter = 1 and 1 + kIters (tol = 0, the partial result allowed), and reports the difference
// over kIters: the per-iteration time without the graph build. CUDA inputs are copied to the
// device before timing. Arguments: the R-MAT scale (22 on CUDA: the target is <= 0.3 ms
// per iteration on one H100/H200; 24 and 25 too; 18 on the CPU) and 1 for scrambled ids.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <cstdint>
#include <map>
#include <utility>
#include <memory>
#include <string>
#include <vector>

#include "bench_util.hpp"
#include "gpuml/gpuml.hpp"

namespace {

constexpr int64_t kEdgeFactor = 16;
constexpr int64_t kIters = 200;  // the build varies by ~2 ms: enough iterations that it cannot matter

struct Edges {
  std::vector<int64_t> src, dst;
};

// scrambled: vertex ids through a bijection of [0, 2^scale) (an odd multiplier, then a xor), so
// that the input numbering carries none of R-MAT's structure (Graph500 scrambles its ids).
const Edges& rmat(int scale, bool scrambled) {
  static std::map<std::pair<int, bool>, std::unique_ptr<Edges>> cache;
  auto& slot = cache[{scale, scrambled}];
  if (slot) return *slot;
  auto g = std::make_unique<Edges>();
  const int64_t m = kEdgeFactor << scale;
  g->src.resize(m);
  g->dst.resize(m);
  const double a = 0.57, ab = 0.76, abc = 0.95;
#pragma omp parallel for schedule(static)
  for (int64_t e = 0; e < m; ++e) {
    uint64_t state = 0x5EED0000ull ^ (static_cast<uint64_t>(e) * 0x9E3779B97F4A7C15ull);
    int64_t s = 0, d = 0;
    for (int level = scale - 1; level >= 0; --level) {
      const double r = bench::uniform_open(state);
      if (r >= ab) s |= int64_t(1) << level;
      if ((r >= a && r < ab) || r >= abc) d |= int64_t(1) << level;
    }
    if (scrambled) {
      const uint64_t mask = (uint64_t(1) << scale) - 1;
      s = static_cast<int64_t>(((static_cast<uint64_t>(s) * 0x9E3779B97F4A7C15ull) & mask) ^ (0x5DEECE66Dull & mask));
      d = static_cast<int64_t>(((static_cast<uint64_t>(d) * 0x9E3779B97F4A7C15ull) & mask) ^ (0x5DEECE66Dull & mask));
    }
    g->src[e] = s;
    g->dst[e] = d;
  }
  slot = std::move(g);
  return *slot;
}

// The edges from hubs in the CUDA backend's layout (cuda/graph/pagerank.cu: the 16384 vertices of
// most out-edges for float32, each with at least 64): these cost 4 bytes per iteration, not 12.
int64_t hub_edges(const Edges& g, int64_t n) {
  std::vector<int64_t> degree(static_cast<std::size_t>(n), 0);
  for (int64_t s : g.src) ++degree[s];
  const std::size_t top = std::min<std::size_t>(16384, degree.size());
  std::nth_element(degree.begin(), degree.begin() + top - 1, degree.end(), std::greater<int64_t>());
  int64_t sum = 0;
  for (std::size_t i = 0; i < top; ++i)
    if (degree[i] >= 64) sum += degree[i];
  return sum;
}

// A host int64 array as a view in ctx's memory (a device copy held by `storage` on CUDA).
gpuml::ArrayView ids_in_context(gpuml::Context& ctx, const std::vector<int64_t>& host, gpuml::Buffer& storage) {
  if (!ctx.is_cuda()) return gpuml::host_view(host.data(), static_cast<int64_t>(host.size()));
#if GPUML_BENCH_WITH_CUDA
  storage = gpuml::Buffer(ctx, host.size() * sizeof(int64_t));
  ctx.synchronize();
  if (cudaMemcpy(storage.data(), host.data(), storage.bytes(), cudaMemcpyHostToDevice) != cudaSuccess)
    throw std::runtime_error("cudaMemcpy of the edges to the device failed");
  return gpuml::make_view(storage.data(), gpuml::DType::int64, ctx.device(), static_cast<int64_t>(host.size()));
#else
  (void)storage;
  throw std::runtime_error("benchmarks built without CUDA");
#endif
}

void per_iteration(benchmark::State& state, bool on_cuda) {
  const int scale = static_cast<int>(state.range(0));
  const bool scrambled = state.range(1) != 0;
  if (on_cuda && gpuml::cuda_device_count() == 0) {
    state.SkipWithError(gpuml::built_with_cuda() ? "no CUDA device" : "built without CUDA");
    return;
  }
  try {
    const Edges& g = rmat(scale, scrambled);
    const int64_t n = int64_t(1) << scale, m = static_cast<int64_t>(g.src.size());
    gpuml::Context ctx = on_cuda ? gpuml::Context::cuda(0) : gpuml::Context::cpu();
    gpuml::Buffer s_store, d_store, out_store(ctx, n * sizeof(float));
    const gpuml::ArrayView src = ids_in_context(ctx, g.src, s_store), dst = ids_in_context(ctx, g.dst, d_store);
    const gpuml::ArrayView out = gpuml::make_view(out_store.data(), gpuml::DType::float32, ctx.device(), n);
    gpuml::PageRankParams params;
    params.tol = 0.0;
    params.allow_unconverged = true;
    auto run = [&](int64_t iters) {
      params.max_iter = iters;
      const auto t0 = std::chrono::steady_clock::now();
      gpuml::pagerank(ctx, n, src, dst, nullptr, nullptr, nullptr, nullptr, params, out);
      ctx.synchronize();
      return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    };
    run(1);  // warm-up: the memory pool, first-touch pages
    double build = 0;
    for (auto _ : state) {
      const double one = run(1), many = run(1 + kIters);
      build += one;
      state.SetIterationTime((many - one) / kIters);
    }
    state.counters["build_plus_1_iter_ms"] = 1e3 * build / static_cast<double>(state.iterations());
    // The compulsory traffic of one iteration of the CUDA backend's layout (cuda/graph/pagerank.cu):
    // per edge the float32 term written and read and two uint16 offsets (12 bytes), per edge from
    // a hub two uint16 offsets (4 bytes; the padding to 32-edge pieces adds some to both), and x,
    // 1/outdeg and x_new. Divided by the device's memory bandwidth, it is the floor;
    // bytes_per_second is how near.
    const double from_hubs = static_cast<double>(hub_edges(g, n));
    const double bytes = 12.0 * (static_cast<double>(m) - from_hubs) + 4.0 * from_hubs + 3.0 * 4.0 * static_cast<double>(n);
    state.counters["floor_MB"] = bytes / 1e6;
    state.counters["bytes_per_second"] = benchmark::Counter(bytes * static_cast<double>(state.iterations()),
                                                            benchmark::Counter::kIsRate);
    state.SetItemsProcessed(m * state.iterations());  // edges per second, per iteration
    state.SetLabel(std::string(on_cuda ? "cuda" : "cpu") + " float32 R-MAT scale " + std::to_string(scale) +
                   (scrambled ? " (ids scrambled)" : "") +
                   " n=" + std::to_string(n) + " m=" + std::to_string(m));
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
  }
}

void BM_PageRankIteration_CPU(benchmark::State& state) { per_iteration(state, false); }
void BM_PageRankIteration_CUDA(benchmark::State& state) { per_iteration(state, true); }

}  // namespace

// Arguments: scale, and whether the ids are scrambled.
BENCHMARK(BM_PageRankIteration_CPU)->Args({18, 0})->Unit(benchmark::kMillisecond)->UseManualTime()->Iterations(3);
BENCHMARK(BM_PageRankIteration_CUDA)
    ->Args({22, 0})
    ->Args({22, 1})
    ->Args({24, 0})
    ->Args({25, 0})
    ->Unit(benchmark::kMillisecond)
    ->UseManualTime()
    ->Iterations(5);

BENCHMARK_MAIN();

// KMeans fit time per Lloyd iteration on CPU and CUDA contexts, float32 Gaussian blobs.
//
// Each benchmark iteration is one whole fit (init from an array, n_init = 1, tol = 0); the
// counters divide by the Lloyd iterations the fits ran:
//   items_per_second  rows assigned per second (n x Lloyd iterations / time)
//   FLOP/s            2 n d k per Lloyd iteration (the distance GEMM) / time
//   time_per_iter     seconds per Lloyd iteration (fit time / n_iter, fixed costs included)
// CUDA inputs are copied to the device before timing, so host-to-device staging is not timed.
// Arguments: n, d, k, max_iter. BM_KMeansInit_*: the init alone (init_alone below).
#include <benchmark/benchmark.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "bench_util.hpp"
#include "gpuml/gpuml.hpp"


namespace {

struct Blobs {
  std::vector<float> X;       // n x d
  std::vector<double> init;   // k x d: the first k rows, the initial centers of every fit
};

using bench::normal;
using bench::splitmix64;
using bench::uniform_open;

// k Gaussian blobs (unit variance, centers uniform in [-10, 10]^d). Every row has its own
// random stream, so the data do not depend on the thread count. Cached: the large case takes
// seconds to generate and gigabytes to hold.
const Blobs& blobs(int64_t n, int64_t d, int64_t k) {
  static std::map<std::tuple<int64_t, int64_t, int64_t>, std::unique_ptr<Blobs>> cache;
  auto& slot = cache[{n, d, k}];
  if (slot) return *slot;
  constexpr uint64_t kSeed = 20240611;
  std::vector<double> centers(k * d);
  uint64_t state = kSeed;
  for (double& c : centers) c = -10.0 + 20.0 * uniform_open(state);
  auto data = std::make_unique<Blobs>();
  data->X.resize(static_cast<std::size_t>(n * d));
  float* X = data->X.data();
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    uint64_t s = kSeed ^ (static_cast<uint64_t>(i) * 0xD1B54A32D192ED03ull);
    const int64_t blob = static_cast<int64_t>(splitmix64(s) % static_cast<uint64_t>(k));
    for (int64_t c = 0; c < d; c += 2) {
      // Box-Muller: two standard normals per pair of uniforms.
      const double r = std::sqrt(-2.0 * std::log(uniform_open(s)));
      const double theta = 6.283185307179586 * uniform_open(s);
      X[i * d + c] = static_cast<float>(centers[blob * d + c] + r * std::cos(theta));
      if (c + 1 < d) X[i * d + c + 1] = static_cast<float>(centers[blob * d + c + 1] + r * std::sin(theta));
    }
  }
  data->init.assign(data->X.begin(), data->X.begin() + k * d);
  slot = std::move(data);
  return *slot;
}

// False (the benchmark skipped) when CUDA is asked for and absent.
bool device_present(benchmark::State& state, bool on_cuda) {
  if (on_cuda && gpuml::cuda_device_count() == 0) {
    state.SkipWithError(gpuml::built_with_cuda() ? "no CUDA device" : "built without CUDA");
    return false;
  }
  return true;
}

// A fit of k clusters from the data's first k rows, n_init = 1, tol = 0.
gpuml::KMeansParams from_given_centers(const Blobs& data, int64_t k, int max_iter) {
  gpuml::KMeansParams params;
  params.n_clusters = k;
  params.init = "array";
  params.init_array = data.init;
  params.n_init = 1;
  params.max_iter = max_iter;
  params.tol = 0.0;
  return params;
}

void fit_per_iteration(benchmark::State& state, bool on_cuda) {
  const int64_t n = state.range(0), d = state.range(1), k = state.range(2);
  const int max_iter = static_cast<int>(state.range(3));
  if (!device_present(state, on_cuda)) return;
  try {
    const Blobs& data = blobs(n, d, k);
    gpuml::Context ctx = on_cuda ? gpuml::Context::cuda(0) : gpuml::Context::cpu();
    gpuml::Buffer device_X;
    const gpuml::ArrayView X = bench::in_context(ctx, data.X, n, d, device_X);
    gpuml::KMeansParams params = from_given_centers(data, k, 1);

    gpuml::KMeans(params).fit(ctx, X);  // warm-up (max_iter 1): library handles, the memory pool, first-touch pages
    ctx.synchronize();

    params.max_iter = max_iter;
    int64_t lloyd_iterations = 0;
    double inertia = 0.0;
    for (auto _ : state) {
      gpuml::KMeans model(params);
      model.fit(ctx, X);
      ctx.synchronize();
      lloyd_iterations += model.n_iter();
      inertia = model.inertia();
    }
    state.SetItemsProcessed(n * lloyd_iterations);
    state.counters["FLOP/s"] = benchmark::Counter(2.0 * double(n) * double(d) * double(k) * double(lloyd_iterations),
                                                  benchmark::Counter::kIsRate);
    state.counters["time_per_iter"] =
        benchmark::Counter(double(lloyd_iterations), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
    state.counters["n_iter"] = double(lloyd_iterations) / double(state.iterations());
    state.counters["inertia"] = inertia;
    state.SetLabel(std::string(on_cuda ? "cuda" : "cpu") + " n=" + std::to_string(n) + " d=" + std::to_string(d) +
                   " k=" + std::to_string(k));
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
  }
}

// The init alone: a fit with init = "k-means++" (range(3) = 0) or "k-means||" (1), n_init = 1,
// max_iter = 1, less a 1-iteration fit from given centers (timed alongside): the counter
// init_seconds. The benchmark's own time is the whole 1-iteration fit with that init.
void init_alone(benchmark::State& state, bool on_cuda) {
  const int64_t n = state.range(0), d = state.range(1), k = state.range(2);
  const std::string init = state.range(3) == 0 ? "k-means++" : "k-means||";
  if (!device_present(state, on_cuda)) return;
  try {
    const Blobs& data = blobs(n, d, k);
    gpuml::Context ctx = on_cuda ? gpuml::Context::cuda(0) : gpuml::Context::cpu();
    gpuml::Buffer device_X;
    const gpuml::ArrayView X = bench::in_context(ctx, data.X, n, d, device_X);
    const gpuml::KMeansParams given = from_given_centers(data, k, 1);
    gpuml::KMeansParams drawn = given;
    drawn.init = init;
    drawn.init_array.clear();
    drawn.random_state = 0;
    auto seconds = [&](const gpuml::KMeansParams& params) {
      const auto start = std::chrono::steady_clock::now();
      gpuml::KMeans(params).fit(ctx, X);
      ctx.synchronize();
      return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    };
    seconds(given);  // warm-up: library handles, the memory pool, first-touch pages
    double init_total = 0.0;
    for (auto _ : state) {
      const double whole = seconds(drawn);
      state.PauseTiming();
      init_total += whole - seconds(given);
      state.ResumeTiming();
    }
    state.counters["init_seconds"] = init_total / double(state.iterations());
    state.SetLabel(std::string(on_cuda ? "cuda " : "cpu ") + init + " n=" + std::to_string(n) + " d=" + std::to_string(d) +
                   " k=" + std::to_string(k));
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
  }
}

void BM_KMeansFit_CPU(benchmark::State& state) { fit_per_iteration(state, false); }
void BM_KMeansFit_CUDA(benchmark::State& state) { fit_per_iteration(state, true); }
void BM_KMeansInit_CPU(benchmark::State& state) { init_alone(state, false); }
void BM_KMeansInit_CUDA(benchmark::State& state) { init_alone(state, true); }

}  // namespace

// n, d, k, max_iter. The CPU runs the smaller sizes only (the largest takes minutes per iteration).
BENCHMARK(BM_KMeansFit_CPU)
    ->Args({100000, 64, 64, 10})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_KMeansFit_CPU)
    ->Args({1000000, 64, 256, 5})
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_KMeansFit_CUDA)
    ->Args({100000, 64, 64, 20})
    ->Args({1000000, 64, 256, 20})
    ->Args({10000000, 64, 1024, 5})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// n, d, k, init (0 k-means++, 1 k-means||).
BENCHMARK(BM_KMeansInit_CPU)
    ->Args({100000, 64, 64, 0})
    ->Args({100000, 64, 64, 1})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_KMeansInit_CUDA)
    ->Args({1000000, 64, 256, 0})
    ->Args({1000000, 64, 256, 1})
    ->Args({10000000, 64, 1024, 0})
    ->Args({10000000, 64, 1024, 1})
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

BENCHMARK_MAIN();

// LogisticRegression fit time on CPU and CUDA contexts, float32, L2 (C = 1, tol = 1e-4: the
// defaults), labels from a noisy linear rule so the classes overlap.
//
// Each benchmark iteration is one whole fit (labels and weights on the host, then the
// quasi-Newton iterations, each one or more loss-gradient passes over X). Counters:
//   n_iter            quasi-Newton iterations of the fit
//   items_per_second  rows fitted per second
// CUDA inputs are copied to the device before timing. Arguments: n, d, classes.
#include <benchmark/benchmark.h>

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

struct Problem {
  std::vector<float> X;  // n x d
  std::vector<float> y;  // n labels 0..classes-1
};

using bench::normal;
using bench::splitmix64;
using bench::uniform_open;

// Standard normal features; per class a random direction; each row's label is the class with the
// largest score plus Gumbel-like noise (a softmax draw). Every row has its own random stream.
const Problem& problem(int64_t n, int64_t d, int64_t classes) {
  static std::map<std::tuple<int64_t, int64_t, int64_t>, std::unique_ptr<Problem>> cache;
  auto& slot = cache[{n, d, classes}];
  if (slot) return *slot;
  constexpr uint64_t kSeed = 20261122;
  const int64_t k = classes == 2 ? 1 : classes;
  std::vector<double> beta(static_cast<std::size_t>(k * d));
  uint64_t state = kSeed;
  for (double& v : beta) v = normal(state) / std::sqrt(static_cast<double>(d)) * 2.0;
  auto data = std::make_unique<Problem>();
  data->X.resize(static_cast<std::size_t>(n * d));
  data->y.resize(static_cast<std::size_t>(n));
  float* X = data->X.data();
  float* y = data->y.data();
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    uint64_t s = kSeed ^ (static_cast<uint64_t>(i) * 0xD1B54A32D192ED03ull);
    for (int64_t c = 0; c < d; ++c) X[i * d + c] = static_cast<float>(normal(s));
    double best = -INFINITY;
    int64_t label = 0;
    for (int64_t m = 0; m < k; ++m) {
      double z = 0;
      for (int64_t c = 0; c < d; ++c) z += beta[m * d + c] * X[i * d + c];
      z -= std::log(-std::log(uniform_open(s)));  // Gumbel noise: argmax is a softmax draw
      if (k == 1) {
        z += std::log(-std::log(uniform_open(s)));  // logistic noise for the binary rule
        label = z > 0 ? 1 : 0;
      } else if (z > best) {
        best = z;
        label = m;
      }
    }
    y[i] = static_cast<float>(label);
  }
  slot = std::move(data);
  return *slot;
}

void fit_time(benchmark::State& state, bool on_cuda) {
  const int64_t n = state.range(0), d = state.range(1), classes = state.range(2);
  if (on_cuda && gpuml::cuda_device_count() == 0) {
    state.SkipWithError(gpuml::built_with_cuda() ? "no CUDA device" : "built without CUDA");
    return;
  }
  try {
    const Problem& data = problem(n, d, classes);
    gpuml::Context ctx = on_cuda ? gpuml::Context::cuda(0) : gpuml::Context::cpu();
    gpuml::Buffer device_X, device_y;
    const gpuml::ArrayView X = bench::in_context(ctx, data.X, n, d, device_X);
    const gpuml::ArrayView y = bench::in_context(ctx, data.y, n, 0, device_y);
    gpuml::LogisticRegression model;
    model.fit(ctx, X, y);  // warm-up: library handles, the memory pool, first-touch pages
    ctx.synchronize();
    for (auto _ : state) {
      model.fit(ctx, X, y);
      ctx.synchronize();
    }
    state.SetItemsProcessed(n * state.iterations());
    state.counters["n_iter"] = static_cast<double>(model.n_iter());
    state.SetLabel(std::string(on_cuda ? "cuda" : "cpu") + " n=" + std::to_string(n) + " d=" + std::to_string(d) +
                   " classes=" + std::to_string(classes));
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
  }
}

void BM_LogisticRegression_CPU(benchmark::State& state) { fit_time(state, false); }
void BM_LogisticRegression_CUDA(benchmark::State& state) { fit_time(state, true); }

}  // namespace

// n, d, classes. The CUDA binary size is the speed target's (1M x 64 float32, L2).
BENCHMARK(BM_LogisticRegression_CPU)->Args({200000, 64, 2})->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_LogisticRegression_CUDA)
    ->Args({1000000, 64, 2})
    ->Args({1000000, 64, 7})
    ->Args({100000, 512, 2})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

BENCHMARK_MAIN();

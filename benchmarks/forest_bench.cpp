// Random forest fit and predict times, float32 binary classification with 32 features (the
// issue's shape: 100 trees, max_depth 12). Predict runs on each context's backend with X already
// in its memory; the predicting forest is fitted once, on 100k rows. Arguments: rows.
//   fit:     20k rows, 20 trees, on the CPU; 500k rows, 100 trees, on CUDA (the target: <= 0.5 s).
//   predict: 100k rows on the CPU, 1M rows on CUDA (the target: <= 20 ms).
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "bench_util.hpp"
#include "gpuml/gpuml.hpp"

namespace {

using bench::normal;

constexpr int64_t kFeatures = 32;

// x_ij standard normal; y = [x0 + x1 x2 + 0.5 noise > 0]. Each row has its own random stream.
struct Data {
  std::vector<float> X, y;
};
const Data& data(int64_t n) {
  static std::map<int64_t, std::unique_ptr<Data>> cache;
  auto& slot = cache[n];
  if (slot) return *slot;
  slot = std::make_unique<Data>();
  slot->X.resize(static_cast<std::size_t>(n * kFeatures));
  slot->y.resize(static_cast<std::size_t>(n));
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    uint64_t s = 7771ull ^ (static_cast<uint64_t>(i) * 0xD1B54A32D192ED03ull);
    float* x = slot->X.data() + i * kFeatures;
    for (int64_t j = 0; j < kFeatures; ++j) x[j] = static_cast<float>(normal(s));
    slot->y[i] = x[0] + x[1] * x[2] + 0.5 * normal(s) > 0 ? 1.0f : 0.0f;
  }
  return *slot;
}

gpuml::RandomForestParams params(int64_t trees) {
  gpuml::RandomForestParams p;
  p.n_estimators = trees;
  p.max_depth = 12;
  p.random_state = 0;
  return p;
}

bool skip_without_cuda(benchmark::State& state, bool on_cuda) {
  if (on_cuda && gpuml::cuda_device_count() == 0) {
    state.SkipWithError(gpuml::built_with_cuda() ? "no CUDA device" : "built without CUDA");
    return true;
  }
  return false;
}

void BM_ForestFit_CPU(benchmark::State& state) {
  const int64_t n = state.range(0);
  const Data& d = data(n);
  gpuml::Context ctx = gpuml::Context::cpu();
  for (auto _ : state)
    gpuml::RandomForestClassifier(params(20)).fit(ctx, gpuml::host_view(d.X.data(), n, kFeatures), gpuml::host_view(d.y.data(), n));
  state.SetItemsProcessed(n * state.iterations());
  state.SetLabel("cpu fit, 20 trees, depth 12, n=" + std::to_string(n));
}

// The fit: 500k x 32, 100 trees, depth 12, on a CUDA context (X on the host, as a user
// passes a NumPy array; binning on the host, the trees grown on the device).
void BM_ForestFit_CUDA(benchmark::State& state) {
  if (skip_without_cuda(state, true)) return;
  const int64_t n = state.range(0);
  try {
    const Data& d = data(n);
    gpuml::Context ctx = gpuml::Context::cuda(0);
    for (auto _ : state) {
      gpuml::RandomForestClassifier(params(100)).fit(ctx, gpuml::host_view(d.X.data(), n, kFeatures),
                                                     gpuml::host_view(d.y.data(), n));
      ctx.synchronize();
    }
    state.SetItemsProcessed(n * state.iterations());
    state.SetLabel("cuda fit, 100 trees, depth 12, n=" + std::to_string(n));
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
  }
}

const gpuml::RandomForestClassifier& fitted_forest() {
  static std::unique_ptr<gpuml::RandomForestClassifier> model;
  if (model) return *model;
  constexpr int64_t n = 100000;
  const Data& d = data(n);
  gpuml::Context ctx = gpuml::Context::cpu();
  model = std::make_unique<gpuml::RandomForestClassifier>(params(100));
  model->fit(ctx, gpuml::host_view(d.X.data(), n, kFeatures), gpuml::host_view(d.y.data(), n));
  return *model;
}

void predict_time(benchmark::State& state, bool on_cuda) {
  if (skip_without_cuda(state, on_cuda)) return;
  const int64_t n = state.range(0);
  try {
    const gpuml::RandomForestClassifier& model = fitted_forest();
    const Data& d = data(n);
    gpuml::Context ctx = on_cuda ? gpuml::Context::cuda(0) : gpuml::Context::cpu();
    gpuml::Buffer device_X, device_out;
    const gpuml::ArrayView X = bench::in_context(ctx, d.X, n, kFeatures, device_X);
    const std::vector<float> zeros(static_cast<std::size_t>(n * 2), 0.0f);
    const gpuml::ArrayView out = bench::in_context(ctx, zeros, n, 2, device_out);
    model.predict_proba(ctx, X, out);  // warm-up
    ctx.synchronize();
    for (auto _ : state) {
      model.predict_proba(ctx, X, out);
      ctx.synchronize();
    }
    state.SetItemsProcessed(n * state.iterations());
    state.SetLabel(std::string(on_cuda ? "cuda" : "cpu") + " predict_proba, 100 trees, depth 12, n=" + std::to_string(n));
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
  }
}

void BM_ForestPredict_CPU(benchmark::State& state) { predict_time(state, false); }
void BM_ForestPredict_CUDA(benchmark::State& state) { predict_time(state, true); }

}  // namespace

BENCHMARK(BM_ForestFit_CPU)->Arg(20000)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_ForestFit_CUDA)->Arg(500000)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(3);
BENCHMARK(BM_ForestPredict_CPU)->Arg(100000)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_ForestPredict_CUDA)->Arg(1000000)->Unit(benchmark::kMillisecond)->UseRealTime();

BENCHMARK_MAIN();

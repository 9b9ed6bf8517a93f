// LinearRegression ("eig" = normal equations, "qr") and Ridge ("cholesky") fit time on CPU and
// CUDA contexts, float32, y = X w + noise with one target.
//
// Each benchmark iteration is one whole fit (means, centering, the Gram matrix or the Cholesky QR
// passes, the small host solve). Counters:
//   items_per_second  rows fitted per second
//   FLOP/s            n d^2 (the symmetric Gram product, or the leading term of Householder QR's
//                     2 n d^2 halved, for a like-for-like rate) / time
// CUDA inputs are copied to the device before timing, so host-to-device staging is not timed.
// Arguments: n, d.
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "bench_util.hpp"
#include "gpuml/gpuml.hpp"


namespace {

struct Problem {
  std::vector<float> X;  // n x d
  std::vector<float> y;  // n
};

using bench::normal;
using bench::splitmix64;
using bench::uniform_open;

// Standard normal features, true coefficients uniform in [-1, 1], intercept 3, noise 0.1.
// Every row has its own random stream (independent of the thread count). Cached per size.
const Problem& problem(int64_t n, int64_t d) {
  static std::map<std::pair<int64_t, int64_t>, std::unique_ptr<Problem>> cache;
  auto& slot = cache[{n, d}];
  if (slot) return *slot;
  constexpr uint64_t kSeed = 20240612;
  std::vector<double> w(d);
  uint64_t state = kSeed;
  for (double& v : w) v = -1.0 + 2.0 * uniform_open(state);
  auto data = std::make_unique<Problem>();
  data->X.resize(static_cast<std::size_t>(n * d));
  data->y.resize(static_cast<std::size_t>(n));
  float* X = data->X.data();
  float* y = data->y.data();
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    uint64_t s = kSeed ^ (static_cast<uint64_t>(i) * 0xD1B54A32D192ED03ull);
    double target = 3.0;
    for (int64_t c = 0; c < d; ++c) {
      const float x = static_cast<float>(normal(s));
      X[i * d + c] = x;
      target += w[c] * x;
    }
    y[i] = static_cast<float>(target + 0.1 * normal(s));
  }
  slot = std::move(data);
  return *slot;
}

enum class Model { eig, qr, ridge };

void fit(gpuml::Context& ctx, Model model, const gpuml::ArrayView& X, const gpuml::ArrayView& y) {
  if (model == Model::ridge) {
    gpuml::Ridge(gpuml::RidgeParams{}).fit(ctx, X, y);
  } else {
    gpuml::LinearRegressionParams params;
    params.algorithm = model == Model::eig ? "eig" : "qr";
    gpuml::LinearRegression(params).fit(ctx, X, y);
  }
}

void fit_time(benchmark::State& state, Model model, bool on_cuda) {
  const int64_t n = state.range(0), d = state.range(1);
  if (on_cuda && gpuml::cuda_device_count() == 0) {
    state.SkipWithError(gpuml::built_with_cuda() ? "no CUDA device" : "built without CUDA");
    return;
  }
  try {
    const Problem& data = problem(n, d);
    gpuml::Context ctx = on_cuda ? gpuml::Context::cuda(0) : gpuml::Context::cpu();
    gpuml::Buffer device_X, device_y;
    const gpuml::ArrayView X = bench::in_context(ctx, data.X, n, d, device_X);
    const gpuml::ArrayView y = bench::in_context(ctx, data.y, n, 0, device_y);
    fit(ctx, model, X, y);  // warm-up: library handles, the memory pool, first-touch pages
    ctx.synchronize();
    for (auto _ : state) {
      fit(ctx, model, X, y);
      ctx.synchronize();
    }
    state.SetItemsProcessed(n * state.iterations());
    state.counters["FLOP/s"] =
        benchmark::Counter(double(n) * double(d) * double(d) * double(state.iterations()), benchmark::Counter::kIsRate);
    const char* name = model == Model::eig ? "eig" : model == Model::qr ? "qr" : "ridge";
    state.SetLabel(std::string(on_cuda ? "cuda " : "cpu ") + name + " n=" + std::to_string(n) + " d=" + std::to_string(d));
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
  }
}

void BM_LinearRegressionEig_CPU(benchmark::State& state) { fit_time(state, Model::eig, false); }
void BM_LinearRegressionQR_CPU(benchmark::State& state) { fit_time(state, Model::qr, false); }
void BM_Ridge_CPU(benchmark::State& state) { fit_time(state, Model::ridge, false); }
void BM_LinearRegressionEig_CUDA(benchmark::State& state) { fit_time(state, Model::eig, true); }
void BM_LinearRegressionQR_CUDA(benchmark::State& state) { fit_time(state, Model::qr, true); }
void BM_Ridge_CUDA(benchmark::State& state) { fit_time(state, Model::ridge, true); }

}  // namespace

// n, d. The CPU runs a smaller size; the CUDA size is the speed target's (OLS 1M x 256 float32).
BENCHMARK(BM_LinearRegressionEig_CPU)->Args({200000, 128})->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_LinearRegressionQR_CPU)->Args({200000, 128})->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Ridge_CPU)->Args({200000, 128})->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_LinearRegressionEig_CUDA)->Args({1000000, 256})->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_LinearRegressionQR_CUDA)->Args({1000000, 256})->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Ridge_CUDA)->Args({1000000, 256})->Unit(benchmark::kMillisecond)->UseRealTime();
// The host's d x d work alone, nearly: at 4096 x 256 the data passes are ~1% of the fit. eig: the
// eigenvalues of XᵀX (singular_values_) beside a Cholesky solve; qr: Cholesky QR's small
// factorizations and the eigenvalues of RᵀR; ridge: one Cholesky solve.
BENCHMARK(BM_LinearRegressionEig_CPU)->Args({4096, 256})->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_LinearRegressionQR_CPU)->Args({4096, 256})->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Ridge_CPU)->Args({4096, 256})->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_LinearRegressionEig_CUDA)->Args({4096, 256})->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_LinearRegressionQR_CUDA)->Args({4096, 256})->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Ridge_CUDA)->Args({4096, 256})->Unit(benchmark::kMillisecond)->UseRealTime();

BENCHMARK_MAIN();

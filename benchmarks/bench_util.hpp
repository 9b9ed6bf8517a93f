#pragma once
// Helpers shared by the benchmark programs: a seedable random stream per row (so the data do not
// depend on the thread count), and inputs placed in a context's memory before timing.
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "gpuml/gpuml.hpp"

#if GPUML_BENCH_WITH_CUDA
#include <cuda_runtime.h>
#endif

namespace bench {

inline uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
inline double uniform_open(uint64_t& state) { return (static_cast<double>(splitmix64(state) >> 11) + 0.5) * 0x1.0p-53; }
inline double normal(uint64_t& state) {
  return std::sqrt(-2.0 * std::log(uniform_open(state))) * std::cos(6.283185307179586 * uniform_open(state));
}

// A float32 host array (rows x cols, or 1-d when cols == 0) as a view in ctx's memory: the host
// array itself on the CPU; on CUDA a device copy held by `storage`, so that the timed region
// never pays for the host-to-device copy. Throws std::runtime_error when the copy fails.
inline gpuml::ArrayView in_context(gpuml::Context& ctx, const std::vector<float>& host, int64_t rows, int64_t cols,
                                   gpuml::Buffer& storage) {
  if (!ctx.is_cuda()) return cols ? gpuml::host_view(host.data(), rows, cols) : gpuml::host_view(host.data(), rows);
#if GPUML_BENCH_WITH_CUDA
  storage = gpuml::Buffer(ctx, host.size() * sizeof(float));
  ctx.synchronize();  // the pool allocates on the context's stream
  if (cudaMemcpy(storage.data(), host.data(), storage.bytes(), cudaMemcpyHostToDevice) != cudaSuccess)
    throw std::runtime_error("cudaMemcpy of the input to the device failed");
  return cols ? gpuml::make_view(storage.data(), gpuml::DType::float32, ctx.device(), rows, cols)
              : gpuml::make_view(storage.data(), gpuml::DType::float32, ctx.device(), rows);
#else
  (void)storage;
  throw std::runtime_error("benchmarks built without CUDA");
#endif
}

}  // namespace bench

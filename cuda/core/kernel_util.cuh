#pragma once
// Small helpers shared by the CUDA backends' kernels: launch shapes, 64-bit grid-stride
// indices, a fixed-order block sum, and the int limit of cuBLAS/cuSOLVER dimensions.
#include <climits>
#include <cstdint>
#include <string>

#include "gpuml/core/error.hpp"

namespace gpuml::detail {

inline constexpr int kWarp = 32;
inline constexpr int kBlock = 256;    // 1-d kernels; block_sum assumes it
inline constexpr int kRowLanes = 8;   // 2-d kernels: kWarp columns x kRowLanes rows
inline constexpr int64_t kMaxBlocks = 65535LL * 32;

__host__ __device__ constexpr int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// A size as the int that cuBLAS and cuSOLVER take; beyond it, an `unsupported` error naming it.
inline int checked_int(int64_t v, const char* what) {
  if (v > INT_MAX)
    throw_error(ErrorCode::unsupported, std::string("CUDA backend: ") + what + " = " + std::to_string(v) +
                                            " exceeds the cuBLAS/cuSOLVER limit of 2^31 - 1");
  return static_cast<int>(v);
}

__device__ __forceinline__ int64_t global_thread() { return blockIdx.x * int64_t(blockDim.x) + threadIdx.x; }
__device__ __forceinline__ int64_t grid_threads() { return int64_t(gridDim.x) * blockDim.x; }

// Butterfly sum over a full warp: every lane gets the same bits (each step adds the same two
// values, in either order), and the order is fixed.
__device__ inline double warp_sum(double v) {
  for (int offset = kWarp / 2; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

// Fixed-order tree sum over a block of kBlock threads; the result is valid in thread 0.
__device__ inline double block_sum(double v, double* shared /* kBlock */) {
  shared[threadIdx.x] = v;
  __syncthreads();
  for (int width = kBlock / 2; width > 0; width /= 2) {
    if (static_cast<int>(threadIdx.x) < width) shared[threadIdx.x] += shared[threadIdx.x + width];
    __syncthreads();
  }
  return shared[0];
}

}  // namespace gpuml::detail

#include <cstring>
#include <limits>
#include <type_traits>

#include "core/device_ops.hpp"
#include "cuda/core/resources.cuh"

namespace gpuml::detail {

namespace {
// Host memory the driver knows as page-locked (a pinned torch tensor): copied directly.
bool page_locked(const void* host) {
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, host) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return attributes.type == cudaMemoryTypeHost;
}
}  // namespace

void copy_bytes(const Context& ctx, void* dst, Device dst_device, const void* src, Device src_device, std::size_t bytes) {
  if (bytes == 0) return;
  if (!dst_device.is_cuda() && !src_device.is_cuda()) {
    std::memcpy(dst, src, bytes);
    return;
  }
  if (ctx.is_cuda()) {
    cuda::Resources& res = cuda::activate(ctx);
    if (!dst_device.is_cuda() && src_device.is_cuda() && bytes >= (std::size_t(64) << 10)) {
      res.copy_to_host(dst, src, bytes, ctx.n_threads());  // through the pinned area (a pageable copy of 4 MB of labels took ~2 ms)
      return;
    }
    if (dst_device.is_cuda() && !src_device.is_cuda() && bytes >= (std::size_t(64) << 10) && !page_locked(src)) {
      res.copy_to_device(dst, src, bytes, ctx.n_threads());  // likewise: a NumPy X of 64 MB
      return;
    }
    GPUML_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, res.stream));
    if (!dst_device.is_cuda()) GPUML_CUDA_CHECK(cudaStreamSynchronize(res.stream));
  } else {
    // A CPU context touching device memory (a CUDA array passed to a CPU estimator): synchronous copy.
    GPUML_CUDA_CHECK(cudaSetDevice(dst_device.is_cuda() ? dst_device.id : src_device.id));
    GPUML_CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyDefault));
  }
}

void copy_rows(const Context& ctx, void* dst, Device dst_device, const void* src, Device src_device, int64_t rows,
               std::size_t row_bytes, std::size_t src_pitch) {
  if (rows == 0 || row_bytes == 0) return;
  if (!dst_device.is_cuda() && !src_device.is_cuda()) {
    for (int64_t r = 0; r < rows; ++r)
      std::memcpy(static_cast<char*>(dst) + r * row_bytes, static_cast<const char*>(src) + r * src_pitch, row_bytes);
    return;
  }
  if (ctx.is_cuda()) {
    cuda::Resources& res = cuda::activate(ctx);
    GPUML_CUDA_CHECK(cudaMemcpy2DAsync(dst, row_bytes, src, src_pitch, row_bytes, rows, cudaMemcpyDefault, res.stream));
    if (!dst_device.is_cuda()) GPUML_CUDA_CHECK(cudaStreamSynchronize(res.stream));
  } else {
    GPUML_CUDA_CHECK(cudaSetDevice(dst_device.is_cuda() ? dst_device.id : src_device.id));
    GPUML_CUDA_CHECK(cudaMemcpy2D(dst, row_bytes, src, src_pitch, row_bytes, rows, cudaMemcpyDefault));
  }
}

namespace {

template <typename From, typename To>
__global__ void convert_kernel(const From* src, To* dst, int64_t n, int* overflow) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    From v = src[i];
    if constexpr (std::is_integral_v<To> && std::is_integral_v<From> && sizeof(To) < sizeof(From)) {
      if (v < From(std::numeric_limits<To>::min()) || v > From(std::numeric_limits<To>::max())) *overflow = 1;
    }
    dst[i] = static_cast<To>(v);
  }
}

template <typename T>
__global__ void nonfinite_kernel(const T* p, int64_t n, int* found) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    if (!isfinite(p[i])) *found = 1;  // benign race: every writer stores 1
}

template <typename T>
__global__ void fill_kernel(T* p, int64_t n, T value) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) p[i] = value;
}

// Runs `launch(flag_ptr)` with a zeroed device flag and returns the flag's final value.
template <typename Launch>
int with_device_flag(const Context& ctx, Launch launch) {
  cuda::Resources& res = cuda::activate(ctx);
  Buffer flag(const_cast<Context&>(ctx), sizeof(int));
  GPUML_CUDA_CHECK(cudaMemsetAsync(flag.data(), 0, sizeof(int), res.stream));
  launch(flag.as<int>(), res.stream);
  int host = 0;
  GPUML_CUDA_CHECK(cudaMemcpyAsync(&host, flag.data(), sizeof(int), cudaMemcpyDeviceToHost, res.stream));
  GPUML_CUDA_CHECK(cudaStreamSynchronize(res.stream));
  return host;
}

template <typename From>
bool convert_from(const Context& ctx, const From* src, void* dst, DType to, int64_t n) {
  auto run = [&](auto* typed_dst) {
    return with_device_flag(ctx, [&](int* flag, cudaStream_t stream) {
      convert_kernel<<<cuda::grid_for(n, 256), 256, 0, stream>>>(src, typed_dst, n, flag);
      GPUML_CUDA_CHECK_LAUNCH();
    }) == 0;
  };
  switch (to) {
    case DType::float32: return run(static_cast<float*>(dst));
    case DType::float64: return run(static_cast<double*>(dst));
    case DType::int32: return run(static_cast<int32_t*>(dst));
    case DType::int64: return run(static_cast<int64_t*>(dst));
  }
  return false;
}

}  // namespace

bool convert_dtype_device(const Context& ctx, const void* src, DType from, void* dst, DType to, int64_t n) {
  if (n == 0) return true;
  switch (from) {
    case DType::float32: return convert_from(ctx, static_cast<const float*>(src), dst, to, n);
    case DType::float64: return convert_from(ctx, static_cast<const double*>(src), dst, to, n);
    case DType::int32: return convert_from(ctx, static_cast<const int32_t*>(src), dst, to, n);
    case DType::int64: return convert_from(ctx, static_cast<const int64_t*>(src), dst, to, n);
  }
  return false;
}

bool all_finite_device(const Context& ctx, const void* data, DType dtype, int64_t n) {
  if (n == 0) return true;
  return with_device_flag(ctx, [&](int* flag, cudaStream_t stream) {
           if (dtype == DType::float32)
             nonfinite_kernel<<<cuda::grid_for(n, 256, 4096), 256, 0, stream>>>(static_cast<const float*>(data), n, flag);
           else
             nonfinite_kernel<<<cuda::grid_for(n, 256, 4096), 256, 0, stream>>>(static_cast<const double*>(data), n, flag);
           GPUML_CUDA_CHECK_LAUNCH();
         }) == 0;
}

void fill_device(const Context& ctx, void* data, DType dtype, int64_t n, double value) {
  if (n == 0) return;
  cudaStream_t stream = cuda::activate(ctx).stream;
  if (dtype == DType::float32)
    fill_kernel<<<cuda::grid_for(n, 256, 4096), 256, 0, stream>>>(static_cast<float*>(data), n, static_cast<float>(value));
  else
    fill_kernel<<<cuda::grid_for(n, 256, 4096), 256, 0, stream>>>(static_cast<double*>(data), n, value);
  GPUML_CUDA_CHECK_LAUNCH();
}

void check_pointer_location(const void* data, Device device, const char* what) {
  cudaPointerAttributes attr{};
  cudaError_t err = cudaPointerGetAttributes(&attr, data);
  if (err != cudaSuccess) {
    cudaGetLastError();
    if (device.is_cuda())
      throw Error(ErrorCode::invalid_argument,
                  std::string(what) + " is declared as CUDA memory, but CUDA cannot inspect the pointer (" +
                      cudaGetErrorString(err) + ")");
    return;  // no usable driver: a host pointer is all there can be
  }
  const bool on_device = attr.type == cudaMemoryTypeDevice;
  const bool managed = attr.type == cudaMemoryTypeManaged;
  if (device.is_cuda()) {
    if (!on_device && !managed)
      throw Error(ErrorCode::invalid_argument, std::string(what) + " is declared as CUDA memory but is a host pointer");
    if (on_device && attr.device != device.id)
      throw Error(ErrorCode::invalid_argument, std::string(what) + " is declared on cuda:" + std::to_string(device.id) +
                                                   " but lives on cuda:" + std::to_string(attr.device));
  } else if (on_device) {
    throw Error(ErrorCode::invalid_argument, std::string(what) + " is declared as host memory but is a CUDA device pointer");
  }
}

}  // namespace gpuml::detail

#pragma once
// Memory moves and element-wise checks that differ between host and device memory. The CUDA
// build implements the device side in cuda/core/device_ops.cu; a build without CUDA links
// src/core/no_cuda.cpp, whose versions throw "built without CUDA".
#include <cstddef>
#include <cstdint>
#include <memory>

#include "gpuml/core/array.hpp"
#include "gpuml/core/context.hpp"

namespace gpuml::detail {

// Copies `bytes` between any two of host / device memory, ordered on the context's stream,
// and waits when the destination is host memory. (GPUML_API: the backend tests stage their inputs with it.)
GPUML_API void copy_bytes(const Context& ctx, void* dst, Device dst_device, const void* src, Device src_device, std::size_t bytes);

// Element-wise dtype conversion of n contiguous elements in the context's device memory.
// Returns false when a value does not fit in the destination type (int64 -> int32).
bool convert_dtype_device(const Context& ctx, const void* src, DType src_dtype, void* dst, DType dst_dtype, int64_t n);

// Sets n contiguous floating-point elements (device memory) to `value`, queued on the context's stream.
void fill_device(const Context& ctx, void* data, DType dtype, int64_t n, double value);

// True when none of the n contiguous floating-point elements (device memory) is NaN or infinite.
bool all_finite_device(const Context& ctx, const void* data, DType dtype, int64_t n);

// Checks that `data` really lives where a caller says it does (a host pointer declared as
// device memory, or the reverse, is an error naming `what`).
void check_pointer_location(const void* data, Device device, const char* what);

}  // namespace gpuml::detail

namespace gpuml::detail {

// CUDA runtime plumbing behind Context and Buffer.
int cuda_device_count_impl() noexcept;
std::shared_ptr<cuda::Resources> create_cuda_resources(int device_id);
// Device memory from the context's pool, counted against the context's limit (0: none): beyond
// it, ErrorCode::out_of_memory, as when the device itself is full.
void* device_allocate(cuda::Resources& res, std::size_t bytes);
void device_free(cuda::Resources& res, void* ptr, std::size_t bytes) noexcept;
void set_device_memory_limit(cuda::Resources& res, int64_t bytes);
int64_t device_memory_limit(const cuda::Resources& res);
int64_t device_memory_in_use(const cuda::Resources& res);
void device_synchronize(cuda::Resources& res);
// The GPU's 16-byte UUID (unique across hosts): ranks compare them to learn whether each has a GPU
// of its own, which NCCL needs.
void cuda_device_uuid(int device_id, uint8_t out[16]);

// Copies `rows` rows of `row_bytes` each, the source rows `src_pitch` bytes apart, into contiguous
// memory: the strided staging of device arrays.
void copy_rows(const Context& ctx, void* dst, Device dst_device, const void* src, Device src_device,
               int64_t rows, std::size_t row_bytes, std::size_t src_pitch);

}  // namespace gpuml::detail

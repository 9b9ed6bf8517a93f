#include "gpuml/core/array.hpp"

#include <cstdlib>
#include <cstring>
#include <new>

#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "core/device_ops.hpp"
#include "gpuml/core/context.hpp"
#include "gpuml/core/error.hpp"

namespace gpuml {

std::string device_name(Device device) {
  return device.is_cuda() ? "cuda:" + std::to_string(device.id) : "cpu";
}

bool ArrayView::is_contiguous() const {
  if (ndim == 0) return true;
  if (ndim == 1) return shape[0] <= 1 || strides[0] == 1;
  if (shape[0] == 0 || shape[1] == 0) return true;  // no element to misplace (NumPy gives such arrays strides 0)
  bool rows_ok = shape[0] <= 1 || strides[0] == shape[1];
  bool cols_ok = shape[1] <= 1 || strides[1] == 1;
  return rows_ok && cols_ok;
}

ArrayView make_view(void* data, DType dtype, Device device, int64_t rows, int64_t cols) {
  ArrayView v;
  v.data = data;
  v.dtype = dtype;
  v.device = device;
  v.ndim = 2;
  v.shape[0] = rows;
  v.shape[1] = cols;
  v.strides[0] = cols;
  v.strides[1] = 1;
  return v;
}

ArrayView make_view(void* data, DType dtype, Device device, int64_t length) {
  ArrayView v;
  v.data = data;
  v.dtype = dtype;
  v.device = device;
  v.ndim = 1;
  v.shape[0] = length;
  v.strides[0] = 1;
  return v;
}

ArrayView make_scalar_view(void* data, DType dtype, Device device) {
  ArrayView v;
  v.data = data;
  v.dtype = dtype;
  v.device = device;
  v.ndim = 0;
  return v;
}

// ---- Buffer --------------------------------------------------------------------------------

Buffer::Buffer(Context& ctx, std::size_t bytes) : bytes_(bytes), device_(ctx.device()) {
  if (bytes == 0) return;
  if (device_.is_cuda()) {
    owner_ = ctx.keepalive();
    data_ = detail::device_allocate(ctx.cuda_resources(), bytes);
  } else {
    *this = Buffer::host(bytes);
  }
}

Buffer Buffer::host(std::size_t bytes) {
  Buffer b;
  b.bytes_ = bytes;
  if (bytes == 0) return b;
  // A cache line (enough for any SIMD load); large buffers on whole huge pages, and asked to be
  // backed by them: their first touch (copying a fit's 10M labels to the host, say) then takes a
  // few faults instead of one per 4 KiB page, ~25 ms for 40 MB on a virtual machine.
  constexpr std::size_t kLineAlign = 64, kHugePage = std::size_t(2) << 20;
  const std::size_t align = bytes >= kHugePage ? kHugePage : kLineAlign;
  const std::size_t rounded = (bytes + align - 1) / align * align;
  b.data_ = std::aligned_alloc(align, rounded);
  if (!b.data_) throw_error(ErrorCode::out_of_memory, "could not allocate " + std::to_string(bytes) + " bytes of host memory");
#if defined(__linux__)
  if (align == kHugePage) madvise(b.data_, rounded, MADV_HUGEPAGE);  // a hint: refused or not, the memory is usable
#endif
  return b;
}

Buffer::~Buffer() { release(); }

Buffer::Buffer(Buffer&& other) noexcept { *this = std::move(other); }

Buffer& Buffer::operator=(Buffer&& other) noexcept {
  if (this != &other) {
    release();
    data_ = other.data_;
    bytes_ = other.bytes_;
    device_ = other.device_;
    owner_ = std::move(other.owner_);
    other.data_ = nullptr;
    other.bytes_ = 0;
  }
  return *this;
}

void Buffer::release() noexcept {
  if (data_) {
    if (device_.is_cuda())
      detail::device_free(*static_cast<cuda::Resources*>(owner_.get()), data_, bytes_);
    else
      std::free(data_);
  }
  data_ = nullptr;
  owner_.reset();
}

// ---- HostArray -----------------------------------------------------------------------------

HostArray::HostArray(DType dtype, int64_t rows, int64_t cols) {
  GPUML_EXPECT(rows >= 0 && cols >= 0, "array shape must be non-negative");
  spec_ = ArraySpec{dtype, 2, {rows, cols}};
  defined_ = true;
  buffer_ = Buffer::host(static_cast<std::size_t>(rows * cols) * dtype_size(dtype));
}

HostArray::HostArray(DType dtype, int64_t length) {
  GPUML_EXPECT(length >= 0, "array length must be non-negative");
  spec_ = ArraySpec{dtype, 1, {length, 0}};
  defined_ = true;
  buffer_ = Buffer::host(static_cast<std::size_t>(length) * dtype_size(dtype));
}

HostArray::HostArray(const ArraySpec& spec, Buffer memory) {
  GPUML_EXPECT(spec.ndim >= 0 && spec.ndim <= 2 && spec.shape[0] >= 0 && spec.shape[1] >= 0, "array shape must be non-negative");
  spec_ = spec;
  defined_ = true;
  GPUML_EXPECT(!memory.device().is_cuda() && memory.bytes() >= bytes(), "HostArray: the memory is not host memory of the array's size");
  buffer_ = std::move(memory);
}

std::size_t HostArray::bytes() const {
  if (!defined_) return 0;
  const int64_t elements = spec_.ndim == 0 ? 1 : spec_.ndim == 1 ? spec_.shape[0] : spec_.shape[0] * spec_.shape[1];
  return static_cast<std::size_t>(elements) * dtype_size(spec_.dtype);
}

HostArray HostArray::scalar(DType dtype) {
  HostArray a;
  a.spec_ = ArraySpec{dtype, 0, {0, 0}};
  a.defined_ = true;
  a.buffer_ = Buffer::host(dtype_size(dtype));
  std::memset(a.buffer_.data(), 0, dtype_size(dtype));
  return a;
}

ArrayView HostArray::view() const {
  if (spec_.ndim == 0) return make_scalar_view(buffer_.data(), spec_.dtype, Device{});
  if (spec_.ndim == 1) return make_view(buffer_.data(), spec_.dtype, Device{}, spec_.shape[0]);
  return make_view(buffer_.data(), spec_.dtype, Device{}, spec_.shape[0], spec_.shape[1]);
}

}  // namespace gpuml

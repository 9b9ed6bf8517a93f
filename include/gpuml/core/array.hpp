#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>

#include "gpuml/core/dtype.hpp"
#include "gpuml/core/export.hpp"

namespace gpuml {

// Values match DLPack's device types (kDLCPU = 1, kDLCUDA = 2) and the C ABI.
enum class DeviceType : int32_t { cpu = 1, cuda = 2 };

struct Device {
  DeviceType type = DeviceType::cpu;
  int32_t id = 0;
  bool is_cuda() const { return type == DeviceType::cuda; }
  bool operator==(const Device& o) const { return type == o.type && (type == DeviceType::cpu || id == o.id); }
  bool operator!=(const Device& o) const { return !(*this == o); }
};
GPUML_API std::string device_name(Device device);

// A non-owning, DLPack-shaped view of a 0-, 1- or 2-d array in host or device memory.
// Strides are in elements, as in the C ABI.
struct ArrayView {
  void* data = nullptr;
  DType dtype = DType::float32;
  Device device{};
  int32_t ndim = 0;
  int64_t shape[2] = {0, 0};
  int64_t strides[2] = {0, 0};

  int64_t rows() const { return ndim >= 1 ? shape[0] : 1; }
  int64_t cols() const { return ndim >= 2 ? shape[1] : 1; }
  int64_t size() const { return rows() * cols(); }
  GPUML_API bool is_contiguous() const;  // row-major (C order) with no gaps
  template <typename T> T* as() const { return static_cast<T*>(data); }
};

// Views over contiguous row-major memory.
GPUML_API ArrayView make_view(void* data, DType dtype, Device device, int64_t rows, int64_t cols);
GPUML_API ArrayView make_view(void* data, DType dtype, Device device, int64_t length);
GPUML_API ArrayView make_scalar_view(void* data, DType dtype, Device device);
template <typename T>
ArrayView host_view(T* data, int64_t rows, int64_t cols) {
  return make_view(const_cast<std::remove_const_t<T>*>(data), dtype_of<std::remove_const_t<T>>::value, Device{}, rows, cols);
}
template <typename T>
ArrayView host_view(T* data, int64_t length) {
  return make_view(const_cast<std::remove_const_t<T>*>(data), dtype_of<std::remove_const_t<T>>::value, Device{}, length);
}

// Describes the array an output will have (the C ABI's shape queries).
struct ArraySpec {
  DType dtype = DType::float64;
  int32_t ndim = 0;
  int64_t shape[2] = {0, 0};
};

class Context;

// An owning, RAII buffer of host or device memory. Device memory comes from the context's
// stream-ordered pool and is returned to it when the buffer dies.
class GPUML_API Buffer {
 public:
  Buffer() = default;
  Buffer(Context& ctx, std::size_t bytes);        // on the context's device
  static Buffer host(std::size_t bytes);           // plain host memory, no context needed
  ~Buffer();
  Buffer(Buffer&& other) noexcept;
  Buffer& operator=(Buffer&& other) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  void* data() const { return data_; }
  template <typename T> T* as() const { return static_cast<T*>(data_); }
  std::size_t bytes() const { return bytes_; }
  Device device() const { return device_; }

 private:
  void release() noexcept;
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
  Device device_{};
  std::shared_ptr<void> owner_;  // keeps the allocating context's resources alive
};

// A host array that owns its memory: fitted state is kept in these (it must outlive any
// context and be readable from many threads), and backends stage it where they need it.
class GPUML_API HostArray {
 public:
  HostArray() = default;
  HostArray(DType dtype, int64_t rows, int64_t cols);  // 2-d
  HostArray(DType dtype, int64_t length);              // 1-d
  static HostArray scalar(DType dtype);                // 0-d
  // An array of `spec` over `memory`: host memory of at least its bytes (the rest is kept, unused).
  HostArray(const ArraySpec& spec, Buffer memory);
  ArrayView view() const;
  bool empty() const { return !defined_; }  // default-constructed: holds nothing, not even 0 elements
  DType dtype() const { return spec_.dtype; }
  const ArraySpec& spec() const { return spec_; }
  template <typename T> T* as() const { return buffer_.as<T>(); }
  std::size_t bytes() const;

 private:
  ArraySpec spec_{};
  Buffer buffer_;
  bool defined_ = false;
};

}  // namespace gpuml

#include "core/staging.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "core/device_ops.hpp"
#include "gpuml/core/error.hpp"

namespace gpuml::detail {

std::string shape_string(const ArrayView& a) {
  if (a.ndim == 0) return "()";
  if (a.ndim == 1) return "(" + std::to_string(a.shape[0]) + ",)";
  return "(" + std::to_string(a.shape[0]) + ", " + std::to_string(a.shape[1]) + ")";
}

void check_matrix_shape(const ArrayView& X) {
  GPUML_EXPECT(X.ndim == 2, "X must be a 2-d array (n_samples, n_features), got " + std::to_string(X.ndim) + " dimension(s)");
  GPUML_EXPECT(X.shape[0] >= 1, "X must have at least 1 sample, got shape " + shape_string(X));
  GPUML_EXPECT(X.shape[1] >= 1, "X must have at least 1 feature, got shape " + shape_string(X));
}

namespace {

// Structural checks every caller array gets before anything reads it.
void validate_view(const ArrayView& a, const char* what) {
  const std::string name(what);
  GPUML_EXPECT(is_valid_dtype(static_cast<int32_t>(a.dtype)),
               name + " has an unknown dtype code " + std::to_string(static_cast<int>(a.dtype)));
  GPUML_EXPECT(a.device.type == DeviceType::cpu || a.device.type == DeviceType::cuda,
               name + " has an unknown device type " + std::to_string(static_cast<int>(a.device.type)));
  GPUML_EXPECT(a.ndim >= 0 && a.ndim <= 2, name + " must have 0, 1 or 2 dimensions, got " + std::to_string(a.ndim));
  for (int i = 0; i < a.ndim; ++i) {
    GPUML_EXPECT(a.shape[i] >= 0, name + " has a negative dimension: shape " + shape_string(a));
    GPUML_EXPECT(a.strides[i] >= 0, name + " has a negative stride, which is not supported");
  }
  if (a.ndim == 2 && a.shape[0] > 0 && a.shape[1] > 0)
    GPUML_EXPECT(a.shape[0] <= std::numeric_limits<int64_t>::max() / a.shape[1], name + " has too many elements");
  if (a.size() > 0) {
    // The byte offset of the last element must fit in int64; each term is bounded by what is
    // left, so the sum itself cannot overflow. A zero stride on a dimension longer than 1 is
    // refused as in the C ABI: it is what a view whose strides were never set holds (ArrayView's
    // default), and it would read one element over and over.
    const int64_t max_offset = std::numeric_limits<int64_t>::max() / 8;
    int64_t last = 0;  // largest element offset
    for (int i = 0; i < a.ndim; ++i) {
      if (a.shape[i] <= 1) continue;
      GPUML_EXPECT(a.strides[i] != 0, name + " has a zero stride on a dimension of length " + std::to_string(a.shape[i]) +
                                           ": strides must be given, in elements (a row-major n x d array has {d, 1})");
      GPUML_EXPECT(a.strides[i] <= (max_offset - last) / (a.shape[i] - 1),
                   name + " has strides that overflow: it is too large to address");
      last += (a.shape[i] - 1) * a.strides[i];
    }
  }
  GPUML_EXPECT(a.size() == 0 || a.data != nullptr, name + " has a NULL data pointer");
  if (a.size() > 0) check_pointer_location(a.data, a.device, what);
}

template <typename From, typename To>
bool convert_host_typed(const From* src, To* dst, int64_t n) {
  bool ok = true;
  for (int64_t i = 0; i < n; ++i) {
    if constexpr (std::is_integral_v<To> && std::is_integral_v<From> && sizeof(To) < sizeof(From)) {
      if (src[i] < std::numeric_limits<To>::min() || src[i] > std::numeric_limits<To>::max()) ok = false;
    }
    dst[i] = static_cast<To>(src[i]);
  }
  return ok;
}

template <typename From>
bool convert_host_from(const From* src, void* dst, DType to, int64_t n) {
  switch (to) {
    case DType::float32: return convert_host_typed(src, static_cast<float*>(dst), n);
    case DType::float64: return convert_host_typed(src, static_cast<double*>(dst), n);
    case DType::int32: return convert_host_typed(src, static_cast<int32_t*>(dst), n);
    case DType::int64: return convert_host_typed(src, static_cast<int64_t*>(dst), n);
  }
  return false;
}

bool convert_host(const void* src, DType from, void* dst, DType to, int64_t n) {
  switch (from) {
    case DType::float32: return convert_host_from(static_cast<const float*>(src), dst, to, n);
    case DType::float64: return convert_host_from(static_cast<const double*>(src), dst, to, n);
    case DType::int32: return convert_host_from(static_cast<const int32_t*>(src), dst, to, n);
    case DType::int64: return convert_host_from(static_cast<const int64_t*>(src), dst, to, n);
  }
  return false;
}

void convert(const Context& ctx, Device device, const void* src, DType from, void* dst, DType to, int64_t n, const char* what) {
  bool ok = device.is_cuda() ? convert_dtype_device(ctx, src, from, dst, to, n) : convert_host(src, from, dst, to, n);
  GPUML_EXPECT(ok, std::string(what) + " has values that do not fit in " + dtype_name(to));
}

template <typename T>
bool all_finite_host(const T* p, int64_t n, int threads) {
  int64_t bad = 0;
#pragma omp parallel for num_threads(threads) reduction(+ : bad) schedule(static)
  for (int64_t i = 0; i < n; ++i) bad += std::isfinite(p[i]) ? 0 : 1;
  return bad == 0;
}

}  // namespace

Staged stage(const Context& ctx, const ArrayView& src, DType dtype, const char* what) {
  validate_view(src, what);
  const Device here = ctx.device();
  Staged out;
  const bool contiguous = src.is_contiguous();
  // Loading an element through a pointer that is not a multiple of its size is undefined
  // behaviour on the host (UBSan: misaligned address) and a fault in a CUDA kernel. A misaligned
  // array (a NumPy view at an odd byte offset) is therefore never aliased or read typed: step 1
  // copies its bytes into aligned memory. Strides are whole elements, so only the base can be off.
  const bool aligned = reinterpret_cast<std::uintptr_t>(src.data) % dtype_size(src.dtype) == 0;
  if (contiguous && aligned && src.device == here && src.dtype == dtype) {
    out.view = src;
    out.view.strides[0] = src.ndim == 2 ? src.shape[1] : 1;  // normalize strides of size-1 dims
    out.view.strides[1] = src.ndim == 2 ? 1 : 0;
    return out;
  }
  const int64_t n = src.size();
  const std::size_t elem = dtype_size(src.dtype);
  Context& mctx = const_cast<Context&>(ctx);
  // 1. A contiguous, aligned copy in the context's memory, still in the source dtype (bytewise:
  // memcpy, cudaMemcpy). Only a contiguous aligned array already there is used as it is.
  Buffer moved(mctx, static_cast<std::size_t>(n) * elem);
  const void* moved_ptr = src.data;
  if (contiguous) {
    if (src.device != here || !aligned) {
      copy_bytes(ctx, moved.data(), here, src.data, src.device, moved.bytes());
      moved_ptr = moved.data();
    }
  } else if (src.ndim == 2 && (src.shape[1] <= 1 || src.strides[1] == 1)) {
    copy_rows(ctx, moved.data(), here, src.data, src.device, src.shape[0], static_cast<std::size_t>(src.shape[1]) * elem,
              static_cast<std::size_t>(src.strides[0]) * elem);
    moved_ptr = moved.data();
  } else {
    // General strides: gather element by element on the host.
    GPUML_EXPECT(!src.device.is_cuda(), std::string(what) + " is a CUDA array with a non-unit column stride; pass a row-major array");
    Buffer gathered = Buffer::host(moved.bytes());
    const char* base = static_cast<const char*>(src.data);
    for (int64_t i = 0; i < src.rows(); ++i)
      for (int64_t j = 0; j < src.cols(); ++j) {
        int64_t off = i * (src.ndim >= 1 ? src.strides[0] : 0) + j * (src.ndim == 2 ? src.strides[1] : 0);
        std::memcpy(gathered.as<char>() + (i * src.cols() + j) * elem, base + off * elem, elem);
      }
    copy_bytes(ctx, moved.data(), here, gathered.data(), Device{}, moved.bytes());
    moved_ptr = moved.data();
  }
  // 2. The dtype the backend computes in.
  ArrayView v = src;
  v.device = here;
  v.dtype = dtype;
  v.strides[0] = src.ndim == 2 ? src.shape[1] : 1;
  v.strides[1] = src.ndim == 2 ? 1 : 0;
  if (src.dtype == dtype) {
    v.data = const_cast<void*>(moved_ptr);
    out.owned = std::move(moved);
  } else {
    Buffer converted(mctx, static_cast<std::size_t>(n) * dtype_size(dtype));
    convert(ctx, here, moved_ptr, src.dtype, converted.data(), dtype, n, what);
    v.data = converted.data();
    out.owned = std::move(converted);
  }
  out.view = v;
  return out;
}

void require_finite(const Context& ctx, const ArrayView& a, const char* what) {
  if (!is_floating(a.dtype) || a.size() == 0) return;
  bool ok;
  if (a.device.is_cuda())
    ok = all_finite_device(ctx, a.data, a.dtype, a.size());
  else if (a.dtype == DType::float32)
    ok = all_finite_host(a.as<const float>(), a.size(), ctx.n_threads());
  else
    ok = all_finite_host(a.as<const double>(), a.size(), ctx.n_threads());
  GPUML_EXPECT(ok, std::string(what) + " contains NaN or infinity");
}

void write_output(const Context& ctx, const ArrayView& src, const ArrayView& out, const char* what) {
  // Messages name the caller's argument (`out` in the C++ and C APIs) and what it receives.
  const std::string name = std::string("out (") + what + ")";
  validate_view(out, name.c_str());
  GPUML_EXPECT(out.ndim == src.ndim && out.rows() == src.rows() && out.cols() == src.cols(),
               name + " must have shape " + shape_string(src) + ", got " + shape_string(out));
  GPUML_EXPECT(out.is_contiguous(), name + " must be C-contiguous (row-major, no gaps)");
  GPUML_EXPECT(!(is_floating(src.dtype) && !is_floating(out.dtype)),
               name + " must be a floating-point array (float32 or float64), got " + dtype_name(out.dtype));
  const int64_t n = src.size();
  if (n == 0) return;
  if (src.dtype == out.dtype) {
    copy_bytes(ctx, out.data, out.device, src.data, src.device, static_cast<std::size_t>(n) * dtype_size(src.dtype));
    if (out.device.is_cuda()) ctx.synchronize();
    return;
  }
  Buffer converted(const_cast<Context&>(ctx), static_cast<std::size_t>(n) * dtype_size(out.dtype));
  convert(ctx, src.device, src.data, src.dtype, converted.data(), out.dtype, n, what);
  copy_bytes(ctx, out.data, out.device, converted.data(), src.device, converted.bytes());
  if (out.device.is_cuda()) ctx.synchronize();  // the caller may read it on any stream once we return
}

Staged stage_host(const Context& ctx, const HostArray& host) {
  Staged out;
  out.view = host.view();
  if (!ctx.is_cuda() || host.bytes() == 0) {
    out.view.device = Device{};
    return out;
  }
  out.owned = Buffer(const_cast<Context&>(ctx), host.bytes());
  copy_bytes(ctx, out.owned.data(), ctx.device(), out.view.data, Device{}, host.bytes());
  out.view.data = out.owned.data();
  out.view.device = ctx.device();
  return out;
}

Staged stage_filled(const Context& ctx, DType dtype, int64_t n, double value) {
  GPUML_EXPECT(dtype == DType::float32 || dtype == DType::float64, "stage_filled: a float dtype is required");
  Staged out;
  const std::size_t bytes = static_cast<std::size_t>(n) * dtype_size(dtype);
  out.owned = ctx.is_cuda() ? Buffer(const_cast<Context&>(ctx), bytes) : Buffer::host(bytes);
  if (ctx.is_cuda()) {
    fill_device(ctx, out.owned.data(), dtype, n, value);
  } else if (dtype == DType::float32) {
    std::fill_n(out.owned.as<float>(), n, static_cast<float>(value));
  } else {
    std::fill_n(out.owned.as<double>(), n, value);
  }
  out.view = make_view(out.owned.data(), dtype, ctx.is_cuda() ? ctx.device() : Device{}, n);
  return out;
}

HostArray to_host(const Context& ctx, const ArrayView& src) {
  HostArray h = src.ndim == 0   ? HostArray::scalar(src.dtype)
                : src.ndim == 1 ? HostArray(src.dtype, src.shape[0])
                                : HostArray(src.dtype, src.shape[0], src.shape[1]);
  if (h.bytes() > 0) copy_bytes(ctx, h.view().data, Device{}, src.data, src.device, h.bytes());
  return h;
}

HostReadable host_readable(const Context& ctx, const ArrayView& src, DType dtype, const char* what) {
  HostReadable h;
  h.staged = stage(ctx, src, dtype, what);
  require_finite(ctx, h.staged.view, what);
  if (h.staged.view.device.is_cuda()) h.copy = to_host(ctx, h.staged.view);
  return h;
}

}  // namespace gpuml::detail

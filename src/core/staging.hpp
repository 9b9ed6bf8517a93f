#pragma once
// Moving caller arrays to where a context computes, and results back to caller arrays.
#include <string>

#include "gpuml/core/array.hpp"
#include "gpuml/core/context.hpp"

namespace gpuml::detail {

// A contiguous, row-major copy (or the original, when it already is one) of a caller array in
// the context's memory and in `dtype`. `view` is what backends read.
struct Staged {
  ArrayView view;
  Buffer owned;  // empty when `view` aliases the caller's memory
};

// Validates a caller array (pointer location, dtype, ndim, strides that stay in bounds) and
// stages it. `what` names the argument in error messages ("X", "sample_weight", ...).
Staged stage(const Context& ctx, const ArrayView& src, DType dtype, const char* what);

// Rejects NaN and infinity, naming the argument.
void require_finite(const Context& ctx, const ArrayView& staged, const char* what);

// Writes a contiguous result that lives in the context's memory into a caller's output array:
// any device, any dtype that holds the values. The output must have `src`'s shape.
void write_output(const Context& ctx, const ArrayView& src, const ArrayView& out, const char* what);

// A view of a host array in the context's memory (copied when the context is a device).
Staged stage_host(const Context& ctx, const HostArray& host);

// A 1-d float32 or float64 array of n copies of `value` in the context's memory (filled where it
// lives: no host array and no copy for a device).
Staged stage_filled(const Context& ctx, DType dtype, int64_t n, double value);

// Copies a contiguous array in the context's memory into a new host array.
HostArray to_host(const Context& ctx, const ArrayView& src);

// `src` as dtype, checked finite, readable on the host: the staged view itself in host memory,
// else a host copy of it (for the host-side parts of a fit on a CUDA context).
struct HostReadable {
  Staged staged;
  HostArray copy;
  const void* data() const { return copy.empty() ? staged.view.data : copy.as<const void>(); }
};
HostReadable host_readable(const Context& ctx, const ArrayView& src, DType dtype, const char* what);

std::string shape_string(const ArrayView& a);

// The dtype an estimator computes in for input X: float32 stays float32, everything else
// (float64, int32, int64) is float64.
inline DType float_dtype_for(DType dtype) { return dtype == DType::float32 ? DType::float32 : DType::float64; }

// Calls f(T{}) with T = float for float32 and double otherwise.
template <typename F>
decltype(auto) with_float_type(DType dtype, F&& f) {
  if (dtype == DType::float32) return f(float{});
  return f(double{});
}

// X must be 2-d with at least one sample and one feature (messages name X).
void check_matrix_shape(const ArrayView& X);

}  // namespace gpuml::detail

// Extreme magnitudes: the exponent of max |X| over the ranks, and X scaled by a power of two.
#include "core/magnitudes.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>

#include "gpuml/core/comm.hpp"

namespace gpuml::detail {

int scale_exponent(Context& ctx, const ArrayView& X) {
  const HostArray host = to_host(ctx, X);  // the rare path only: a copy is fine
  const double largest = with_float_type(X.dtype, [&](auto tag) {
    using T = decltype(tag);
    const T* p = host.as<const T>();
    double top = 0.0;
    for (std::size_t i = 0, count = host.bytes() / sizeof(T); i < count; ++i)
      top = std::max(top, std::abs(static_cast<double>(p[i])));
    return top;
  });
  // This rank's exponent (none for zeros), then the one of the largest value over the ranks.
  constexpr int64_t kNone = std::numeric_limits<int64_t>::max();
  const int64_t local = largest > 0 ? -(std::ilogb(largest) + 1) : kNone;
  int64_t exponent = kNone;
  for (int64_t e : ctx.comm().allgather(local)) exponent = std::min(exponent, e);
  return exponent == kNone ? 0 : static_cast<int>(exponent);
}

ScaledCopy scaled_copy(Context& ctx, const ArrayView& X, int exponent) {
  ScaledCopy out;
  out.host = to_host(ctx, X);
  with_float_type(X.dtype, [&](auto tag) {
    using T = decltype(tag);
    T* p = out.host.as<T>();
    for (std::size_t i = 0, count = out.host.bytes() / sizeof(T); i < count; ++i) p[i] = std::ldexp(p[i], exponent);
  });
  out.staged = stage_host(ctx, out.host);
  return out;
}

}  // namespace gpuml::detail

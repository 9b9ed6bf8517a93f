#pragma once
// Extreme magnitudes, shared by the drivers (least squares, PCA, TruncatedSVD, KMeans).
#include <cmath>

#include "core/staging.hpp"
#include "gpuml/core/array.hpp"
#include "gpuml/core/context.hpp"

namespace gpuml::detail {

// Products of X's values (XᵀX, the norms inside Householder QR, squared distances) overflow, or
// lose their precision to underflow, long before X's values do (|x| past ~1e154 or below ~1e-154
// in float64). So a fit checks the size of the squares it computed (the largest diagonal entry of
// XᵀX, column norm of R, squared singular value, variance) against kSquaresRange; outside it, a fit that
// may rescale throws BadlyScaled, and its driver fits again on X (and y) times 2^e, e from
// max |X| (as LAPACK's equilibration: a power of two scales exactly), then unscales the results.
// Well-scaled data (squares within 2^±600 in float64, 2^±75 in float32) never take that path.
struct BadlyScaled {};  // not an Error: caught by the drivers, never leaves the library
template <typename T>
inline constexpr int kSquaresRange = sizeof(T) == 8 ? 600 : 75;
template <typename T>
bool squares_in_range(double largest_square) {
  return largest_square >= std::ldexp(1.0, -kSquaresRange<T>) && largest_square <= std::ldexp(1.0, kSquaresRange<T>);
}

// e such that max |X| 2^e lies in [1/2, 1), over every rank's X (a staged float array in the
// context's memory); 0 when X is all zeros. Collective.
int scale_exponent(Context& ctx, const ArrayView& X);

// A staged float array times 2^exponent, in the context's memory (exact but for values that
// underflow, which are below 2^-1000 of the largest).
struct ScaledCopy {
  HostArray host;
  Staged staged;  // views `host` on a CPU context, a device copy of it on CUDA
  const ArrayView& view() const { return staged.view; }
};
ScaledCopy scaled_copy(Context& ctx, const ArrayView& X, int exponent);

// Runs compute(X, true) (true: it may throw BadlyScaled); if it does, runs compute(2^e X, false)
// and returns e, else 0. The caller scales its results back by 2^-e (or 4^-e for squares).
template <typename Compute>
int with_rescaling(Context& ctx, const ArrayView& X, Compute&& compute) {
  try {
    compute(X, true);
    return 0;
  } catch (const BadlyScaled&) {
  }
  const int exponent = scale_exponent(ctx, X);
  const ScaledCopy scaled = scaled_copy(ctx, X, exponent);
  compute(scaled.view(), false);
  return exponent;
}

}  // namespace gpuml::detail

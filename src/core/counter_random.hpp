#pragma once
// Counter-based random values: pure functions of their arguments, shared by host code and (under
// nvcc) kernels, so that a draw keyed by a row's global index is the same on every backend.
#include <cstdint>

#include "host_device.hpp"

namespace gpuml::detail {

// SplitMix64's output function: a bijection of 64-bit words that mixes every input bit into
// every output bit.
GPUML_HOST_DEVICE inline uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

// A counter-based uniform on [0, 1) (53 bits): a pure function of (key, stream, counter), so a
// draw per row keyed by the row's global index is the same whatever order, thread, backend or
// rank computes it: SplitMix64 over a Weyl sequence that starts at the stream's key.
GPUML_HOST_DEVICE inline double counter_uniform(uint64_t key, uint64_t stream, uint64_t counter) {
  constexpr uint64_t kGolden = 0x9E3779B97F4A7C15ULL;
  const uint64_t stream_key = mix64(key + (stream + 1) * kGolden);
  return static_cast<double>(mix64(stream_key + (counter + 1) * kGolden) >> 11) * (1.0 / 9007199254740992.0);
}

// Uniform on [0, 1) from a raw 64-bit draw (its top 53 bits), and a uniform integer in [0, n)
// from one (n < 2^63): fixed arithmetic, unlike std distributions, the same on host and device.
// Through signed integers, which hold every value here and convert faster on x86.
GPUML_HOST_DEVICE inline double uniform_from_bits(uint64_t raw) {
  return static_cast<double>(static_cast<int64_t>(raw >> 11)) * (1.0 / 9007199254740992.0);
}
// (uniform * n < n but may round to n, which wraps to 0: the same as % n without a division.)
GPUML_HOST_DEVICE inline uint64_t below_from_bits(uint64_t raw, uint64_t n) {
  const int64_t v = static_cast<int64_t>(uniform_from_bits(raw) * static_cast<double>(static_cast<int64_t>(n)));
  return static_cast<uint64_t>(v) == n ? 0 : static_cast<uint64_t>(v);
}

}  // namespace gpuml::detail

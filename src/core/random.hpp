#pragma once
// The host random stream behind every random choice an algorithm makes. Backends never draw
// random numbers themselves, so the CPU and CUDA backends make the same choices from a seed.
#include <cstdint>
#include <random>
#include <vector>

namespace gpuml::detail {

class Random {
 public:
  explicit Random(uint64_t seed) : engine_(seed) {}
  // Uniform on [0, 1) with 53 random bits (fixed arithmetic, unlike std distributions).
  double uniform() { return static_cast<double>(engine_() >> 11) * (1.0 / 9007199254740992.0); }
  // Uniform integer in [0, n).
  // (uniform() * n < n but may round to n, which wraps to 0: the same as % n without a division.)
  uint64_t below(uint64_t n) {
    const uint64_t v = static_cast<uint64_t>(uniform() * static_cast<double>(n));
    return v == n ? 0 : v;
  }
  // The first m entries of a uniformly random permutation of 0..n-1 (partial Fisher-Yates).
  std::vector<int64_t> sample_without_replacement(int64_t n, int64_t m);
  uint64_t next() { return engine_(); }

 private:
  std::mt19937_64 engine_;
};

// SplitMix64's output function: a bijection of 64-bit words that mixes every input bit into
// every output bit.
inline uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

// A counter-based uniform on [0, 1) (53 bits): a pure function of (key, stream, counter), so a
// draw per row keyed by the row's global index is the same whatever order, thread, backend or
// rank computes it: SplitMix64 over a Weyl sequence that starts at the stream's key.
inline double counter_uniform(uint64_t key, uint64_t stream, uint64_t counter) {
  constexpr uint64_t kGolden = 0x9E3779B97F4A7C15ULL;
  const uint64_t stream_key = mix64(key + (stream + 1) * kGolden);
  return static_cast<double>(mix64(stream_key + (counter + 1) * kGolden) >> 11) * (1.0 / 9007199254740992.0);
}

}  // namespace gpuml::detail

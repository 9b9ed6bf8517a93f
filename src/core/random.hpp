#pragma once
// The host random stream behind every random choice an algorithm makes. Backends draw none of
// their own: at most they evaluate counter_uniform (counter_random.hpp) on keys the driver hands
// them, so the CPU and CUDA backends make the same choices from a seed.
#include <cstdint>
#include <random>
#include <vector>

#include "counter_random.hpp"  // mix64, counter_uniform

namespace gpuml::detail {

class Random {
 public:
  explicit Random(uint64_t seed) : engine_(seed) {}
  // Uniform on [0, 1) with 53 random bits (fixed arithmetic, unlike std distributions).
  double uniform() { return uniform_of(engine_()); }
  // Uniform integer in [0, n).
  uint64_t below(uint64_t n) { return below_of(engine_(), n); }
  // The two from one raw draw of the engine (for code that computes the engine's outputs itself).
  // Through signed integers (n < 2^63), which hold every value here and convert faster on x86.
  static double uniform_of(uint64_t raw) { return static_cast<double>(static_cast<int64_t>(raw >> 11)) * (1.0 / 9007199254740992.0); }
  // (uniform * n < n but may round to n, which wraps to 0: the same as % n without a division.)
  static uint64_t below_of(uint64_t raw, uint64_t n) {
    const int64_t v = static_cast<int64_t>(uniform_of(raw) * static_cast<double>(static_cast<int64_t>(n)));
    return static_cast<uint64_t>(v) == n ? 0 : static_cast<uint64_t>(v);
  }
  // The first m entries of a uniformly random permutation of 0..n-1 (partial Fisher-Yates).
  std::vector<int64_t> sample_without_replacement(int64_t n, int64_t m);
  uint64_t next() { return engine_(); }

 private:
  std::mt19937_64 engine_;
};

}  // namespace gpuml::detail

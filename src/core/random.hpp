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

}  // namespace gpuml::detail

#pragma once
// The host random stream behind every random choice an algorithm makes. Backends draw none of
// their own: at most they evaluate counter_uniform (counter_random.hpp) on keys the driver hands
// them, so the CPU and CUDA backends make the same choices from a seed.
#include <cstdint>
#include <random>
#include <vector>

#include "counter_random.hpp"  // mix64, counter_uniform, uniform_from_bits, below_from_bits

namespace gpuml::detail {

class Random {
 public:
  explicit Random(uint64_t seed) : engine_(seed) {}
  // Uniform on [0, 1) with 53 random bits (fixed arithmetic, unlike std distributions).
  double uniform() { return uniform_of(engine_()); }
  // Uniform integer in [0, n).
  uint64_t below(uint64_t n) { return below_of(engine_(), n); }
  // The two from one raw draw of the engine (for code that computes the engine's outputs itself).
  static double uniform_of(uint64_t raw) { return uniform_from_bits(raw); }
  static uint64_t below_of(uint64_t raw, uint64_t n) { return below_from_bits(raw, n); }
  // The first m entries of a uniformly random permutation of 0..n-1 (partial Fisher-Yates).
  std::vector<int64_t> sample_without_replacement(int64_t n, int64_t m);
  uint64_t next() { return engine_(); }

 private:
  std::mt19937_64 engine_;
};

}  // namespace gpuml::detail

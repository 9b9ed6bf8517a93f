#pragma once
// A tree node's feature draw order (grow_tree's: the swaps Random(seed) makes over 0..d-1) from
// std::mt19937_64's first d outputs, computed without running the engine: for d <= 156 output i
// reads only the seeded state's words i, i + 1 and i + 156. Shared by the host (feature_orders,
// several seeds interleaved) and the CUDA level builder (a thread per node), so both draw the
// same features.
#include <cstdint>

#include "../core/counter_random.hpp"  // below_from_bits
#include "../core/host_device.hpp"

namespace gpuml::detail {

// std::mt19937_64's state words, the words its first twist keeps, seeding multiplier, twist
// constant and masks.
constexpr int64_t kMtWords = 312, kMtShift = 156;
constexpr uint64_t kMtSeedMultiplier = 6364136223846793005ULL, kMtTwist = 0xB5026F5AA96619E9ULL;
constexpr uint64_t kMtUpper = ~uint64_t{0} << 31, kMtLower = ~kMtUpper;
// The most features whose draws are computed without the engine.
constexpr int64_t kDirectDraws = kMtWords - kMtShift;

// Seeded word i from word i - 1.
GPUML_HOST_DEVICE inline uint64_t mt_seed_word(uint64_t previous, uint64_t i) {
  return kMtSeedMultiplier * (previous ^ (previous >> 62)) + i;
}

// Output i < 156 of the engine from seeded words i, i + 1 and i + 156: the twist of word i, tempered.
GPUML_HOST_DEVICE inline uint64_t mt_output(uint64_t x0, uint64_t x1, uint64_t x_shift) {
  const uint64_t y = (x0 & kMtUpper) | (x1 & kMtLower);
  uint64_t z = x_shift ^ (y >> 1) ^ ((y & 1) ? kMtTwist : 0);
  z ^= (z >> 29) & 0x5555555555555555ULL;
  z ^= (z << 17) & 0x71D67FFFEDA60000ULL;
  z ^= (z << 37) & 0xFFF7EEE000000000ULL;
  return z ^ (z >> 43);
}

// One seed's order (d <= kDirectDraws), one word at a time: words 0..d are kept in `low` (d + 1
// entries of scratch), and draw j is made when word j + 156 comes.
GPUML_HOST_DEVICE inline void feature_order_direct(uint64_t seed, int d, int32_t* order, uint64_t* low) {
  for (int j = 0; j < d; ++j) order[j] = j;
  uint64_t word = seed;
  low[0] = word;
  for (int i = 1; i < kMtShift + d; ++i) {
    word = mt_seed_word(word, static_cast<uint64_t>(i));
    if (i <= d) low[i] = word;
    if (i >= kMtShift) {
      const int j = i - static_cast<int>(kMtShift);
      const int pick = j + static_cast<int>(below_from_bits(mt_output(low[j], low[j + 1], word), static_cast<uint64_t>(d - j)));
      const int32_t t = order[j];
      order[j] = order[pick];
      order[pick] = t;
    }
  }
}

}  // namespace gpuml::detail

#pragma once
// Sorting floating-point values ascending by their bits: an LSD radix sort over unsigned keys in
// the values' order (sign bit flipped for positives, every bit for negatives; -0.0 comes before
// +0.0). For the large columns a forest's binning sorts, where it is several times faster than
// std::sort's comparisons. NaN: sorted by its bits (callers reject it first).
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

namespace gpuml::detail {

template <typename T>
void radix_sort_values(T* values, int64_t n, std::vector<T>& scratch) {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>, "float or double");
  using Key = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
  constexpr int kBits = 11, kBuckets = 1 << kBits;
  constexpr int kPasses = (8 * static_cast<int>(sizeof(T)) + kBits - 1) / kBits;
  constexpr Key kSign = Key{1} << (8 * sizeof(T) - 1);
  if (n < 2) return;
  auto key_of = [](T v) {
    Key k;
    std::memcpy(&k, &v, sizeof(T));
    return (k & kSign) ? ~k : (k | kSign);
  };
  // Every pass's digit counts from one read.
  std::vector<int64_t> counts(static_cast<std::size_t>(kPasses) * kBuckets, 0);
  for (int64_t i = 0; i < n; ++i) {
    const Key k = key_of(values[i]);
    for (int p = 0; p < kPasses; ++p) ++counts[p * kBuckets + ((k >> (p * kBits)) & (kBuckets - 1))];
  }
  scratch.resize(static_cast<std::size_t>(n));
  T* from = values;
  T* to = scratch.data();
  for (int p = 0; p < kPasses; ++p) {
    int64_t* count = counts.data() + p * kBuckets;
    const Key first_digit = (key_of(from[0]) >> (p * kBits)) & (kBuckets - 1);
    if (count[first_digit] == n) continue;  // one digit for all: the pass would not move anything
    int64_t at = 0;
    for (int b = 0; b < kBuckets; ++b) {
      const int64_t c = count[b];
      count[b] = at;
      at += c;
    }
    for (int64_t i = 0; i < n; ++i) to[count[(key_of(from[i]) >> (p * kBits)) & (kBuckets - 1)]++] = from[i];
    std::swap(from, to);
  }
  if (from != values) std::memcpy(values, from, static_cast<std::size_t>(n) * sizeof(T));
}

}  // namespace gpuml::detail

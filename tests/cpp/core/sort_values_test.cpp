// radix_sort_values (src/core/sort_values.hpp) against std::sort in the same total order (-0.0
// before +0.0), bit for bit: negatives, zeros of both signs, subnormals, repeats, huge and tiny
// magnitudes, and sizes around its edges.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "../../../src/core/sort_values.hpp"
#include "test_util.hpp"

namespace gpuml {
namespace {

template <typename T>
std::vector<T> draw_values(std::mt19937_64& rng, int64_t n) {
  std::vector<T> pool = {T(0), -T(0), std::numeric_limits<T>::denorm_min(), -std::numeric_limits<T>::denorm_min(),
                         std::numeric_limits<T>::max(), std::numeric_limits<T>::lowest(), T(1), T(-1)};
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  std::uniform_int_distribution<int> exponent(-40, 40), kind(0, 9);
  std::vector<T> out(static_cast<std::size_t>(n));
  for (T& v : out) {
    const int c = kind(rng);
    if (c == 0) v = pool[std::uniform_int_distribution<std::size_t>(0, pool.size() - 1)(rng)];
    else if (c <= 2) v = static_cast<T>(std::round(unit(rng) * 20.0));  // repeats
    else v = static_cast<T>(unit(rng) * std::pow(10.0, exponent(rng)));
  }
  return out;
}

template <typename T>
void check_sorts(std::mt19937_64& rng) {
  auto bits_less = [](T a, T b) { return a < b || (a == b && std::signbit(a) && !std::signbit(b)); };
  std::vector<T> scratch;
  for (const int64_t n : {0, 1, 2, 3, 100, 2047, 2049, 100000}) {
    std::vector<T> got = draw_values<T>(rng, n), want = got;
    std::sort(want.begin(), want.end(), bits_less);
    detail::radix_sort_values(got.data(), n, scratch);
    ASSERT_EQ(0, n == 0 ? 0 : std::memcmp(got.data(), want.data(), static_cast<std::size_t>(n) * sizeof(T))) << "n " << n;
  }
  // All values alike in their high bits (passes skipped), then all equal.
  std::vector<T> close(5000), same(300, T(2.5));
  for (T& v : close) v = T(1) + static_cast<T>(std::uniform_int_distribution<int>(0, 1000)(rng)) * std::numeric_limits<T>::epsilon();
  std::vector<T> want = close;
  std::sort(want.begin(), want.end());
  detail::radix_sort_values(close.data(), static_cast<int64_t>(close.size()), scratch);
  EXPECT_EQ(want, close);
  detail::radix_sort_values(same.data(), static_cast<int64_t>(same.size()), scratch);
  EXPECT_EQ(std::vector<T>(300, T(2.5)), same);
}

TEST(SortValues, RadixSortEqualsStdSortBitForBit) {
  GPUML_FRESH_RNG(rng);
  check_sorts<float>(rng);
  check_sorts<double>(rng);
}

}  // namespace
}  // namespace gpuml

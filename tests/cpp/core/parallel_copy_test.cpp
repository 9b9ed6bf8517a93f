// parallel_copy (src/core/parallel.hpp): the bytes of a plain memcpy for any size and thread
// count, slices of at least 1 MiB, and nothing written past the end; touch_pages' writes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "../../../src/core/parallel.hpp"
#include "test_util.hpp"

using namespace gpuml;
using gpuml::test::uniform_int;

TEST(ParallelCopy, CopiesEveryByteOnAnyThreadCount) {
  GPUML_FRESH_RNG(rng);
  const std::size_t mib = std::size_t(1) << 20;
  for (const std::size_t bytes : {std::size_t(0), std::size_t(1), mib - 1, mib, 2 * mib + 3,
                                  static_cast<std::size_t>(uniform_int(rng, 1, 9 * static_cast<int64_t>(mib)))}) {
    for (const int threads : {0, 1, 2, 3, 8}) {
      std::vector<uint8_t> src(bytes), dst(bytes + 64, 0xA5);
      for (auto& b : src) b = static_cast<uint8_t>(rng());
      detail::parallel_copy(dst.data(), src.data(), bytes, threads);
      EXPECT_TRUE(std::equal(src.begin(), src.end(), dst.begin())) << bytes << " bytes, " << threads << " threads";
      for (std::size_t i = bytes; i < dst.size(); ++i) ASSERT_EQ(dst[i], 0xA5) << "written past the end, " << bytes << " bytes";
    }
  }
}

// touch_pages writes a zero at the start of each page that starts in [from, to), and nothing else;
// contiguous ranges one after the other reach every page of the whole.
TEST(TouchPages, WritesOnceIntoEachPageThatStartsInTheRange) {
  GPUML_FRESH_RNG(rng);
  constexpr std::size_t kPage = 4096;
  for (const int threads : {1, 3}) {
    const std::size_t bytes = static_cast<std::size_t>(uniform_int(rng, 3, 300)) * kPage + static_cast<std::size_t>(uniform_int(rng, 0, 4095));
    alignas(4096) static uint8_t area[301 * 4096];
    std::fill(area, area + bytes, uint8_t{0xA5});
    std::size_t from = 0;
    while (from < bytes) {
      const std::size_t to = std::min(bytes, from + static_cast<std::size_t>(uniform_int(rng, 1, 20 * kPage)));
      detail::touch_pages(area, from, to, threads);
      for (std::size_t i = from; i < to; ++i)
        ASSERT_EQ(area[i], i % kPage == 0 ? 0 : 0xA5) << "byte " << i << " of [" << from << ", " << to << ")";
      from = to;
    }
  }
}

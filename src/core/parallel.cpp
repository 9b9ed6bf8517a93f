#include "core/parallel.hpp"

#include <omp.h>

#include <cstring>

namespace gpuml::detail {

void parallel_copy(void* dst, const void* src, std::size_t bytes, int threads) {
  if (bytes == 0) return;  // an empty array's pointer may be null, which memcpy must not get
  constexpr std::size_t kMinSlice = std::size_t(1) << 20;
  const std::size_t slices = std::max<std::size_t>(1, std::min<std::size_t>(std::max(threads, 1), bytes / kMinSlice));
  if (slices == 1) {
    std::memcpy(dst, src, bytes);
    return;
  }
  // A team no larger than OpenMP's own (a larger one leaves libomp's extra threads' state behind).
  const int team = static_cast<int>(std::min<std::size_t>(slices, static_cast<std::size_t>(std::max(omp_get_max_threads(), 1))));
#pragma omp parallel for num_threads(team) schedule(static)
  for (std::size_t s = 0; s < slices; ++s) {
    const std::size_t begin = bytes * s / slices, end = bytes * (s + 1) / slices;
    std::memcpy(static_cast<char*>(dst) + begin, static_cast<const char*>(src) + begin, end - begin);
  }
}

void touch_pages(void* base, std::size_t from, std::size_t to, int threads) {
  constexpr std::size_t kPage = 4096;
  if (to <= from) return;
  char* bytes = static_cast<char*>(base);
  const std::size_t first = (from + kPage - 1) / kPage, last = (to + kPage - 1) / kPage;  // pages starting in [from, to)
  const int64_t pages = static_cast<int64_t>(last - first);
#pragma omp parallel for num_threads(threads_for(threads, pages * 64)) schedule(static)
  for (int64_t p = 0; p < pages; ++p) bytes[(first + static_cast<std::size_t>(p)) * kPage] = 0;
}

}  // namespace gpuml::detail

#include "core/parallel.hpp"

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
#pragma omp parallel for num_threads(static_cast<int>(slices)) schedule(static)
  for (std::size_t s = 0; s < slices; ++s) {
    const std::size_t begin = bytes * s / slices, end = bytes * (s + 1) / slices;
    std::memcpy(static_cast<char*>(dst) + begin, static_cast<const char*>(src) + begin, end - begin);
  }
}

}  // namespace gpuml::detail

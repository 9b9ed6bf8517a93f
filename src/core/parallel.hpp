#pragma once
// Splitting work across the CPU backend's OpenMP threads.
#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "gpuml/core/export.hpp"

namespace gpuml::detail {

// Contiguous row blocks, at most one per thread and none smaller than min_rows (except when
// there are fewer rows than that), optionally capped so that per-block scratch stays bounded.
// Blocks depend only on n and the thread count, so reductions over them are deterministic.
class RowBlocks {
 public:
  RowBlocks(int64_t n, int threads, int64_t min_rows, int64_t max_blocks = 1 << 20) : n_(n) {
    const int64_t by_size = std::max<int64_t>(1, n / std::max<int64_t>(1, min_rows));
    count_ = static_cast<int>(std::max<int64_t>(1, std::min({static_cast<int64_t>(threads), by_size, max_blocks})));
  }
  int count() const { return count_; }
  int64_t begin(int b) const { return n_ * b / count_; }
  int64_t end(int b) const { return n_ * (b + 1) / count_; }

 private:
  int64_t n_;
  int count_;
};

// dst[0, bytes) = src[0, bytes), in slices of at least 1 MiB over up to `threads` threads (and
// no more than OpenMP's): one
// thread's memcpy of pageable memory into the pinned staging area held a NumPy array's copy to
// the GPU near 4.4 GB/s, under the link's rate. (GPUML_API: for the tests.)
GPUML_API void parallel_copy(void* dst, const void* src, std::size_t bytes, int threads);

// A write to each 4 KiB page that starts in base[from, to), over `threads` threads: a fresh
// allocation's pages faulted in (and zeroed by the kernel) ahead of a copy into them, beside other
// work, range after contiguous range. The bytes written are zeros.
GPUML_API void touch_pages(void* base, std::size_t from, std::size_t to, int threads);

// Small problems run on one thread: waking a team (and its spinning) costs more than the work,
// and on a busy machine spinning threads starve everything else.
inline int threads_for(int threads, int64_t work) { return work < (int64_t{1} << 17) ? 1 : threads; }

}  // namespace gpuml::detail

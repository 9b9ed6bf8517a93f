#include "core/random.hpp"

#include <numeric>
#include <utility>

namespace gpuml::detail {

std::vector<int64_t> Random::sample_without_replacement(int64_t n, int64_t m) {
  std::vector<int64_t> perm(static_cast<std::size_t>(n));
  std::iota(perm.begin(), perm.end(), int64_t{0});
  for (int64_t i = 0; i < m; ++i) {
    int64_t j = i + static_cast<int64_t>(below(static_cast<uint64_t>(n - i)));
    std::swap(perm[i], perm[j]);
  }
  perm.resize(static_cast<std::size_t>(m));
  return perm;
}

}  // namespace gpuml::detail

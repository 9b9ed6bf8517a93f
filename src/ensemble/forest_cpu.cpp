// The CPU backend of the random forests (forest_backend.hpp): row blocks over the context's
// threads, trees in order within each row, so the sums are the same on any thread count.
#include <algorithm>

#include "ensemble/forest_backend.hpp"

namespace gpuml::detail {
namespace {

template <typename T>
class CpuForestBackend final : public ForestBackend<T> {
 public:
  explicit CpuForestBackend(const Context& ctx) : threads_(ctx.n_threads()) {}

  void predict(const PackedForest& forest, const T* X, int64_t n, int64_t d, double* out) override {
    const int k = forest.k;
    const double share = 1.0 / static_cast<double>(forest.n_trees());
    constexpr int64_t kBlockRows = 256;  // a block's rows stay in cache while the trees go by
#pragma omp parallel for num_threads(threads_) schedule(static)
    for (int64_t begin = 0; begin < n; begin += kBlockRows) {
      const int64_t end = std::min(n, begin + kBlockRows);
      std::fill(out + begin * k, out + end * k, 0.0);
      for (int64_t t = 0; t < forest.n_trees(); ++t)
        for (int64_t i = begin; i < end; ++i) {
          const double* v = forest.values.data() + static_cast<int64_t>(packed_leaf(forest.nodes.data(), forest.roots[t], X + i * d)) * k;
          for (int c = 0; c < k; ++c) out[i * k + c] = add_share(out[i * k + c], share, v[c]);
        }
    }
  }

 private:
  int threads_;
};

}  // namespace

template <typename T>
std::unique_ptr<ForestBackend<T>> make_forest_cpu_backend(const Context& ctx) {
  return std::make_unique<CpuForestBackend<T>>(ctx);
}

template std::unique_ptr<ForestBackend<float>> make_forest_cpu_backend<float>(const Context&);
template std::unique_ptr<ForestBackend<double>> make_forest_cpu_backend<double>(const Context&);

}  // namespace gpuml::detail

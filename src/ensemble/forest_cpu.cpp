// The CPU backend of the random forests (forest_backend.hpp): row blocks over the context's
// threads, trees in order within each row, so the sums are the same on any thread count.
#include <algorithm>

#include "ensemble/forest_backend.hpp"
#include "gpuml/core/error.hpp"

namespace gpuml::detail {
namespace {

// out (n x forest.k) = the mean over the trees of the rows' leaf values; value(i, f) is row i's
// value of feature f as a double (dense and sparse rows walk alike).
template <typename Value>
void predict_rows(const PackedForest& forest, int64_t n, const Value& value, double* out, int threads) {
  const int k = forest.k;
  const double share = 1.0 / static_cast<double>(forest.n_trees());
  const PackedNode* nodes = forest.nodes.data();
  constexpr int64_t kBlockRows = 256;  // a block's rows stay in cache while the trees go by
  // Rows walk a tree kLanes at a time, in lockstep: their loads are independent, so their cache
  // misses overlap (one row at a time waits for each node in turn).
  constexpr int kLanes = 16;
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t begin = 0; begin < n; begin += kBlockRows) {
    const int64_t end = std::min(n, begin + kBlockRows);
    std::fill(out + begin * k, out + end * k, 0.0);
    for (int64_t t = 0; t < forest.n_trees(); ++t) {
      for (int64_t first = begin; first < end; first += kLanes) {
        const int lanes = static_cast<int>(std::min<int64_t>(kLanes, end - first));
        PackedNode at[kLanes];
        for (int l = 0; l < lanes; ++l) at[l] = nodes[forest.roots[t]];
        for (bool moving = true; moving;) {
          moving = false;
          for (int l = 0; l < lanes; ++l)
            if (at[l].feature >= 0) {
              at[l] = nodes[packed_step(at[l], value(first + l, at[l].feature))];
              moving = true;
            }
        }
        for (int l = 0; l < lanes; ++l) {
          const double* v = forest.values.data() + static_cast<int64_t>(at[l].child) * k;
          double* o = out + (first + l) * k;
          for (int c = 0; c < k; ++c) o[c] = add_share(o[c], share, v[c]);
        }
      }
    }
  }
}

template <typename T>
class CpuForestBackend final : public ForestBackend<T> {
 public:
  explicit CpuForestBackend(const Context& ctx) : threads_(ctx.n_threads()) {}

  std::shared_ptr<const StagedForest> stage(std::shared_ptr<const PackedForest> forest) override {
    auto staged = std::make_shared<StagedForest>();
    staged->n_trees = forest->n_trees();
    staged->k = forest->k;
    staged->host = std::move(forest);
    return staged;
  }

  void predict(const StagedForest& staged, const T* X, int64_t n, int64_t d, double* out) override {
    predict_rows(*staged.host, n, [X, d](int64_t i, int32_t f) { return static_cast<double>(X[i * d + f]); }, out, threads_);
  }

 private:
  int threads_;
};

}  // namespace

template <typename T>
std::unique_ptr<ForestBackend<T>> make_forest_cpu_backend(const Context& ctx) {
  return std::make_unique<CpuForestBackend<T>>(ctx);
}

void forest_predict_sparse(const PackedForest& forest, const SparseLines& X, double* out, int threads) {
  GPUML_EXPECT(X.format == SparseFormat::csr, "forest_predict_sparse: X must be CSR");
  predict_rows(forest, X.rows, [&X](int64_t i, int32_t f) { return X.at(i, f); }, out, threads);
}

template std::unique_ptr<ForestBackend<float>> make_forest_cpu_backend<float>(const Context&);
template std::unique_ptr<ForestBackend<double>> make_forest_cpu_backend<double>(const Context&);

}  // namespace gpuml::detail

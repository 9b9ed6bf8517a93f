// The CPU backend of PageRank (src/graph/pagerank_backend.hpp).
//
// The graph is kept grouped by destination (CSR of the transposed adjacency): an iteration is a
// pull, each row's sum computed by one thread in the edges' input order, in double. One process
// builds every row; a rank of the distributed driver the rows of its vertex range (build_range,
// iterate_range), the same code. Reductions
// (dangling mass, the L1 change) go over fixed chunks of vertices, the chunks' partial sums
// then added in order, so results do not depend on the thread count.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/parallel.hpp"
#include "graph/pagerank_backend.hpp"

namespace gpuml::detail {
namespace {

constexpr int64_t kChunk = 16384;  // vertices per reduction chunk

template <typename T>
class CpuPageRankBackend final : public PageRankBackend<T> {
 public:
  explicit CpuPageRankBackend(const Context& ctx) : threads_(ctx.n_threads()) {}

  EdgeSummary summarize(const int64_t* src, const int64_t* dst, const T* weights, int64_t m) override {
    EdgeSummary s;
    if (m == 0) return s;
    int64_t lo = std::numeric_limits<int64_t>::max(), hi = std::numeric_limits<int64_t>::min();
    double wmin = std::numeric_limits<double>::infinity();
    const int threads = threads_for(threads_, m);
#pragma omp parallel for num_threads(threads) reduction(min : lo, wmin) reduction(max : hi) schedule(static)
    for (int64_t e = 0; e < m; ++e) {
      lo = std::min({lo, src[e], dst[e]});
      hi = std::max({hi, src[e], dst[e]});
      if (weights) wmin = std::min(wmin, static_cast<double>(weights[e]));
    }
    s.min_vertex = lo;
    s.max_vertex = hi;
    s.min_weight = weights ? wmin : 0.0;
    return s;
  }

  int64_t build(const int64_t* src, const int64_t* dst, const T* weights, int64_t m, int64_t n) override {
    std::vector<double> out(static_cast<std::size_t>(n));
    out_degrees(src, weights, m, n, out.data());
    build_range(src, dst, weights, m, n, 0, n, out.data());
    return static_cast<int64_t>(std::count(inv_out_.begin(), inv_out_.end(), T(0)));
  }

  void out_degrees(const int64_t* src, const T* weights, int64_t m, int64_t n, double* out) override {
    std::fill(out, out + n, 0.0);
    for (int64_t e = 0; e < m; ++e) out[src[e]] += weights ? static_cast<double>(weights[e]) : 1.0;  // input order
  }

  // A counting sort by range (stable: input order within a range, so within a destination).
  void group_by_range(const int64_t* src, const int64_t* dst, const T* weights, int64_t m, int64_t, const int64_t* first,
                      int ranges, int64_t* src_out, int64_t* dst_out, T* weights_out, int64_t* starts) override {
    std::vector<int32_t> owner(static_cast<std::size_t>(m));
    std::fill(starts, starts + ranges + 1, 0);
    for (int64_t e = 0; e < m; ++e) {
      owner[e] = static_cast<int32_t>(std::upper_bound(first, first + ranges + 1, dst[e]) - first - 1);
      ++starts[owner[e] + 1];
    }
    for (int r = 0; r < ranges; ++r) starts[r + 1] += starts[r];
    std::vector<int64_t> next(starts, starts + ranges);
    for (int64_t e = 0; e < m; ++e) {
      const int64_t at = next[owner[e]]++;
      src_out[at] = src[e];
      dst_out[at] = dst[e];
      if (weights) weights_out[at] = weights[e];
    }
  }

  // One rank's rows [first, first + count) (all rows for one process), with the out-degrees of
  // the whole graph.
  void build_range(const int64_t* src, const int64_t* dst, const T* weights, int64_t m, int64_t n, int64_t first,
                   int64_t count, const double* out) override {
    n_ = n;
    first_ = first;
    count_ = count;
    weighted_ = weights != nullptr;
    inv_out_.assign(static_cast<std::size_t>(n), T(0));
    for (int64_t v = 0; v < n; ++v)
      if (out[v] > 0) inv_out_[v] = static_cast<T>(1.0 / out[v]);
    // Counting sort by destination (stable).
    row_ptr_.assign(static_cast<std::size_t>(count) + 1, 0);
    for (int64_t e = 0; e < m; ++e) ++row_ptr_[dst[e] - first + 1];
    for (int64_t v = 0; v < count; ++v) row_ptr_[v + 1] += row_ptr_[v];
    std::vector<int64_t> next(row_ptr_.begin(), row_ptr_.end() - 1);
    col_.resize(static_cast<std::size_t>(m));
    val_.resize(weighted_ ? static_cast<std::size_t>(m) : 0);
    for (int64_t e = 0; e < m; ++e) {
      const int64_t at = next[dst[e] - first]++;
      col_[at] = static_cast<int32_t>(src[e]);
      if (weighted_) val_[at] = weights[e];
    }
    y_.assign(static_cast<std::size_t>(n), T(0));
    partials_.assign(static_cast<std::size_t>((std::max(n, count) + kChunk - 1) / kChunk), 0.0);
  }

  double iterate(const T* x, T* x_new, const T* p, const T* dangling, double alpha) override {
    return iterate_range(x, x_new, p, dangling, alpha);  // one process: the range is every row
  }

  double iterate_range(const T* x, T* x_new, const T* p, const T* dangling, double alpha) override {
    const int64_t n = n_;
    const int64_t chunks = (n + kChunk - 1) / kChunk;
    const int threads = threads_for(threads_, n + static_cast<int64_t>(col_.size()));
    const T* inv = inv_out_.data();
    T* y = y_.data();
    // y = x / outdeg_w, and the dangling mass per chunk (over every vertex: x is whole).
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t c = 0; c < chunks; ++c) {
      double mass = 0.0;
      for (int64_t v = c * kChunk, end = std::min(n, (c + 1) * kChunk); v < end; ++v) {
        y[v] = x[v] * inv[v];
        if (inv[v] == T(0)) mass += static_cast<double>(x[v]);
      }
      partials_[c] = mass;
    }
    double dsum = 0.0;
    for (int64_t c = 0; c < chunks; ++c) dsum += partials_[c];

    const double uniform = 1.0 / static_cast<double>(n);
    const int64_t* rp = row_ptr_.data();
    const int32_t* col = col_.data();
    const T* val = weighted_ ? val_.data() : nullptr;
    const T* dvec = dangling ? dangling : p;
    const int64_t first = first_, count = count_, row_chunks = (count + kChunk - 1) / kChunk;
    // The range's rows in chunks (dynamic: in-degrees are skewed), each chunk's L1 change as its
    // partial. Row r is vertex first + r, written to x_new[r].
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
    for (int64_t c = 0; c < row_chunks; ++c) {
      double change = 0.0;
      for (int64_t r = c * kChunk, end = std::min(count, (c + 1) * kChunk); r < end; ++r) {
        const int64_t i = first + r;
        double s = 0.0;
        if (val)
          for (int64_t e = rp[r]; e < rp[r + 1]; ++e) s += static_cast<double>(val[e]) * static_cast<double>(y[col[e]]);
        else
          for (int64_t e = rp[r]; e < rp[r + 1]; ++e) s += static_cast<double>(y[col[e]]);
        const double pi = p ? static_cast<double>(p[i]) : uniform;
        const double di = dvec ? static_cast<double>(dvec[i]) : uniform;
        const T value = static_cast<T>(alpha * (s + dsum * di) + (1.0 - alpha) * pi);
        x_new[r] = value;
        change += std::fabs(static_cast<double>(value) - static_cast<double>(x[i]));
      }
      partials_[c] = change;
    }
    double err = 0.0;
    for (int64_t c = 0; c < row_chunks; ++c) err += partials_[c];
    return err;
  }

  std::size_t memory_bytes() const override {
    return row_ptr_.capacity() * sizeof(int64_t) + col_.capacity() * sizeof(int32_t) +
           (val_.capacity() + inv_out_.capacity() + y_.capacity()) * sizeof(T) + partials_.capacity() * sizeof(double);
  }

 private:
  int threads_;
  int64_t n_ = 0, first_ = 0, count_ = 0;  // the graph's vertices; the rows built
  bool weighted_ = false;
  std::vector<int64_t> row_ptr_;
  std::vector<int32_t> col_;
  std::vector<T> val_, inv_out_, y_;
  std::vector<double> partials_;
};

}  // namespace

template <typename T>
std::unique_ptr<PageRankBackend<T>> make_pagerank_cpu_backend(const Context& ctx) {
  return std::make_unique<CpuPageRankBackend<T>>(ctx);
}

template std::unique_ptr<PageRankBackend<float>> make_pagerank_cpu_backend<float>(const Context&);
template std::unique_ptr<PageRankBackend<double>> make_pagerank_cpu_backend<double>(const Context&);

}  // namespace gpuml::detail

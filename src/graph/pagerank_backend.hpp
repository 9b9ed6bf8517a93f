#pragma once
// The primitives a PageRank backend provides. The algorithm (validation, normalization of the
// personalization / start / dangling vectors, the power iteration and its stopping test) is
// written once, in src/graph/pagerank.cpp, on top of these; src/graph/pagerank_cpu.cpp and
// cuda/graph/pagerank.cu implement them. A backend is built once (build, or build_range) and then
// runs any number of iterations, over any number of pagerank calls (gpuml::Graph).
//
// Pointers without a `_host` suffix are in the backend's memory (host for the CPU, the device
// for CUDA), contiguous. Vertex ids fit in int32 (the driver checks n < 2^31); edge counts are
// int64.
#include <cstddef>
#include <cstdint>
#include <memory>

#include "gpuml/core/context.hpp"
#include "gpuml/core/error.hpp"

namespace gpuml::detail {

struct EdgeSummary {
  int64_t min_vertex = 0;  // over src and dst together (0 when there are no edges)
  int64_t max_vertex = -1;
  double min_weight = 0;   // smallest weight (0 when there are no weights or no edges)
};

template <typename T>
class PageRankBackend {
 public:
  virtual ~PageRankBackend() = default;

  // The range of the vertex ids and the smallest weight (weights may be nullptr), for the driver's checks.
  virtual EdgeSummary summarize(const int64_t* src, const int64_t* dst, const T* weights, int64_t n_edges) = 0;

  // Builds the backend's graph from checked edges (ids in [0, n)): the edges grouped by
  // destination, in their input order within a destination (a stable sort: the layout, and so
  // the summation order, depends only on the input), and each vertex's inverse weighted
  // out-degree (the weights of its out-edges summed in double in input order; 0 for dangling
  // vertices, whose weighted out-degree is 0). Returns the number of dangling vertices.
  virtual int64_t build(const int64_t* src, const int64_t* dst, const T* weights, int64_t n_edges, int64_t n) = 0;

  // One power iteration over the built graph:
  //   x_new[i] = alpha * (sum_{edges j->i} w_e * x[j] / outdeg_w[j] + dsum * dangling[i]) + (1 - alpha) * p[i]
  // where dsum = sum of x over the dangling vertices, p == nullptr means uniform 1/n, and
  // dangling == nullptr means p. Row sums are in double in a fixed order, or exact (the CUDA
  // backend's fixed point), and both reductions in double in a fixed order: results do not depend
  // on the thread count or on timing. Each edge's term w_e * x[j] / outdeg_w[j] may be rounded to
  // T first. Returns sum_i |x_new[i] - x[i]|. Between calls x_new is left as written: a backend
  // may keep what it derived from x_new for a next call whose x is that x_new.
  virtual double iterate(const T* x, T* x_new, const T* p, const T* dangling, double alpha) = 0;

  // Called before the first iteration of each pagerank call: forget whatever was kept from the
  // previous call's iterates (its buffers are freed, and a new x may be allocated at the address
  // of an old x_new with other values).
  virtual void restart() {}

  // The bytes the built graph holds (its layout and the iterations' scratch), in the backend's memory.
  virtual std::size_t memory_bytes() const = 0;

  // The distributed driver's primitives (several ranks). Their pointers are in the backend's
  // memory too (the driver's collectives run on it: NCCL on the GPU), except those named _host.
  //
  // out[v] = the weighted out-degree of v over these edges (n doubles; in input order, in double).
  virtual void out_degrees(const int64_t* src, const T* weights, int64_t m, int64_t n, double* out) = 0;
  // The edges grouped by the range of their destination (range r: dst in [first_host[r],
  // first_host[r + 1]), r < ranges), in input order within a destination, into src_out, dst_out
  // and weights_out (m each; weights_out unused without weights); starts_host[r] (ranges + 1
  // entries) is where range r begins.
  virtual void group_by_range(const int64_t* src, const int64_t* dst, const T* weights, int64_t m, int64_t n,
                              const int64_t* first_host, int ranges, int64_t* src_out, int64_t* dst_out, T* weights_out,
                              int64_t* starts_host) = 0;
  // A rank builds the rows of its vertex range [first, first + count): the edges given all have
  // dst in that range (ids in [0, n)), in the order of the union of the ranks' edges; out_degree
  // (n doubles) is every vertex's weighted out-degree over all ranks' edges.
  virtual void build_range(const int64_t* src, const int64_t* dst, const T* weights, int64_t n_edges, int64_t n,
                           int64_t first, int64_t count, const double* out_degree) = 0;
  // iterate for the range's rows only: x is the whole vector (n), x_new_range receives the
  // `count` new values of the range, p and dangling are whole vectors (or nullptr) as in
  // iterate. Returns the range's sum |x_new - x|.
  virtual double iterate_range(const T* x, T* x_new_range, const T* p, const T* dangling, double alpha) = 0;
};

template <typename T> std::unique_ptr<PageRankBackend<T>> make_pagerank_cpu_backend(const Context& ctx);
template <typename T> std::unique_ptr<PageRankBackend<T>> make_pagerank_cuda_backend(const Context& ctx);

}  // namespace gpuml::detail

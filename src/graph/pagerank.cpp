// PageRank: validation, the dispatch to a backend, and the power iteration, written once on top
// of the PageRankBackend<T> primitives, in two phases: gpuml::Graph's constructor stages and
// checks the edges and builds the backend's layout (build); Graph::pagerank checks one call's
// parameters and vectors and runs the iteration (rank). gpuml::pagerank is the two in a row, so
// a one-shot call and a prebuilt graph run the same code and give the same bits. It follows
// networkx.pagerank (_pagerank_scipy):
//   x <- alpha * (x A + sum(x[dangling]) * dangling_weights) + (1 - alpha) * p
// with A the adjacency (duplicate edges summed) whose rows are divided by the weighted
// out-degree, stopping when sum |x - x_last| < N * tol; personalization, nstart and dangling are
// divided by their sums, and dangling defaults to the personalization vector.
//
// Distributed (SPMD, the context's communicator, CPU or CUDA contexts): every rank passes the edges it
// holds (any share of the edge list) and the same n_vertices, parameters and per-vertex vectors;
// the result, on every rank, is the PageRank of the union of the edges in rank order. The ranks
// check their inputs together (a bad rank makes every rank throw) and agree on the rest: on the
// graph when it is built, on the parameters and vectors at each call. Vertices are split in
// contiguous ranges, one per rank; at build the edges are redistributed so that each rank holds
// the in-edges of its range (one allgatherv per range, every rank sending its edges into that
// range, in order) and the weighted out-degrees are summed over ranks; each iteration each rank
// computes its range of x_new from the whole x, the ranges are allgathered into the next x, and
// the L1 change is summed over ranks (the same bits everywhere: the same stopping decision).
// All of it in the context's memory: on a CUDA context with NCCL only scalars visit the host.
// One rank: the single-process path, unchanged.
#include "gpuml/graph/pagerank.hpp"

#include <algorithm>
#include <climits>
#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/device_ops.hpp"
#include "core/distributed.hpp"
#include "core/staging.hpp"
#include "core/trace.hpp"
#include "gpuml/core/comm.hpp"
#include "gpuml/core/error.hpp"
#include "gpuml/graph/graph.hpp"
#include "graph/pagerank_backend.hpp"

namespace gpuml {

struct Graph::Impl {
  Impl(const Context& context, std::string rank_name, int64_t n_vertices, DType precision)
      : ctx(context), who(std::move(rank_name)), n(n_vertices), dtype(precision) {}

  Context ctx;
  std::string who;  // names the pagerank calls in messages: "Graph::pagerank", or "pagerank" (the one-shot function)
  int64_t n = 0, n_edges = 0;
  DType dtype;
  // The backend of dtype, holding the built layout (none when n == 0).
  std::unique_ptr<detail::PageRankBackend<float>> f32;
  std::unique_ptr<detail::PageRankBackend<double>> f64;
  // Several ranks: rank r owns the rows [first[r], first[r + 1]), rows[r] of them. Empty in one process.
  std::vector<int64_t> first, rows;

  template <typename T>
  std::unique_ptr<detail::PageRankBackend<T>>& backend_of() {
    if constexpr (std::is_same_v<T, float>)
      return f32;
    else
      return f64;
  }
};

namespace {

// The single dispatch point between the backends.
template <typename T>
std::unique_ptr<detail::PageRankBackend<T>> make_backend(const Context& ctx) {
  return ctx.is_cuda() ? detail::make_pagerank_cuda_backend<T>(ctx) : detail::make_pagerank_cpu_backend<T>(ctx);
}

// `who` prefixes every message: "pagerank", "Graph" or "Graph::pagerank".
void validate_params(const std::string& who, const PageRankParams& p) {
  GPUML_EXPECT(std::isfinite(p.alpha) && p.alpha > 0.0 && p.alpha < 1.0,
               who + ": alpha must be in (0, 1), got " + std::to_string(p.alpha));
  GPUML_EXPECT(p.max_iter >= 0, who + ": max_iter must be >= 0, got " + std::to_string(p.max_iter));
  GPUML_EXPECT(std::isfinite(p.tol) && p.tol >= 0.0, who + ": tol must be a finite number >= 0, got " + std::to_string(p.tol));
}

// The parameters every rank must hold the same.
std::vector<detail::RankField> param_fields(const PageRankParams& p) {
  return {{"alpha (bits)", detail::bits_of(p.alpha)},
          {"max_iter", p.max_iter},
          {"tol (bits)", detail::bits_of(p.tol)},
          {"allow_unconverged", p.allow_unconverged ? 1 : 0}};
}

void check_vector(const std::string& who, const ArrayView& a, int64_t length, const char* what, const char* length_name) {
  GPUML_EXPECT(a.ndim == 1, who + ": " + what + " must be a 1-d array, got " + std::to_string(a.ndim) + " dimension(s)");
  GPUML_EXPECT(a.shape[0] == length, who + ": " + what + " has length " + std::to_string(a.shape[0]) + ", expected " +
                                         length_name + " = " + std::to_string(length));
}

// n_vertices, and src's and dst's shapes and dtypes: what can be checked without reading the edges.
void check_edge_arguments(const std::string& who, int64_t n, const ArrayView& src, const ArrayView& dst) {
  GPUML_EXPECT(n >= 0, who + ": n_vertices must be >= 0, got " + std::to_string(n));
  if (n > INT32_MAX)
    throw_error(ErrorCode::unsupported,
                who + ": n_vertices = " + std::to_string(n) + " exceeds the supported 2^31 - 1 vertices");
  GPUML_EXPECT(src.ndim == 1 && dst.ndim == 1, who + ": src and dst must be 1-d arrays, got " + std::to_string(src.ndim) +
                                                   " and " + std::to_string(dst.ndim) + " dimension(s)");
  GPUML_EXPECT(src.shape[0] == dst.shape[0], who + ": src and dst must have the same length, got " +
                                                 std::to_string(src.shape[0]) + " and " + std::to_string(dst.shape[0]));
  GPUML_EXPECT(src.dtype == DType::int32 || src.dtype == DType::int64,
               who + ": src must be an int32 or int64 array, got " + dtype_name(src.dtype));
  GPUML_EXPECT(dst.dtype == DType::int32 || dst.dtype == DType::int64,
               who + ": dst must be an int32 or int64 array, got " + dtype_name(dst.dtype));
  if (n == 0)
    GPUML_EXPECT(src.shape[0] == 0, who + ": src and dst must hold vertex ids < n_vertices = 0, but there are edges");
}

void check_ranks_out(const std::string& who, const ArrayView& ranks_out, int64_t n) {
  check_vector(who, ranks_out, n, "ranks_out", "n_vertices");
  GPUML_EXPECT(is_floating(ranks_out.dtype),
               who + ": ranks_out must be a float32 or float64 array, got " + dtype_name(ranks_out.dtype));
}

// A per-vertex vector (personalization, nstart, dangling) divided by its sum, as T on the host.
// Values must be finite and >= 0 with a positive sum.
template <typename T>
std::vector<T> normalized(const std::string& who, const Context& ctx, const ArrayView& a, int64_t n, const char* what) {
  check_vector(who, a, n, what, "n_vertices");
  detail::HostReadable h = detail::host_readable(ctx, a, DType::float64, what);
  const double* v = static_cast<const double*>(h.data());
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    GPUML_EXPECT(v[i] >= 0.0, who + ": " + what + " must be non-negative, got " + std::to_string(v[i]) + " at index " +
                                  std::to_string(i));
    sum += v[i];
  }
  GPUML_EXPECT(sum > 0.0 && std::isfinite(sum),
               who + ": " + what + " must have a positive (finite) sum, got " + std::to_string(sum));
  std::vector<T> out(static_cast<std::size_t>(n));
  for (int64_t i = 0; i < n; ++i) out[i] = static_cast<T>(v[i] / sum);
  return out;
}

// One call's per-vertex vectors, normalized (empty: not given; x empty: the uniform start).
template <typename T>
struct Vectors {
  std::vector<T> p, x, d;
};

template <typename T>
Vectors<T> prepare_vectors(const std::string& who, const Context& ctx, int64_t n, const ArrayView* personalization,
                           const ArrayView* nstart, const ArrayView* dangling) {
  Vectors<T> v;
  if (personalization != nullptr) v.p = normalized<T>(who, ctx, *personalization, n, "personalization");
  if (nstart != nullptr) v.x = normalized<T>(who, ctx, *nstart, n, "nstart");
  if (dangling != nullptr) v.d = normalized<T>(who, ctx, *dangling, n, "dangling");
  return v;
}

template <typename T>
Buffer upload(Context& ctx, const std::vector<T>& host) {
  Buffer b(ctx, host.size() * sizeof(T));
  detail::copy_bytes(ctx, b.data(), ctx.device(), host.data(), Device{}, host.size() * sizeof(T));
  return b;
}

PageRankResult converged_empty() {
  PageRankResult empty;
  empty.converged = true;
  return empty;
}

// The power iteration's loop and stopping test; step() does one iteration and returns the L1
// change (the same on every rank).
template <typename Step>
PageRankResult power_iteration(const std::string& who, int64_t n, const PageRankParams& params, Step&& step) {
  PageRankResult result;
  const double threshold = static_cast<double>(n) * params.tol;
  for (int64_t it = 0; it < params.max_iter; ++it) {
    const double err = step();
    result.n_iter = it + 1;
    if (err < threshold) {
      result.converged = true;
      break;
    }
  }
  if (!result.converged && !params.allow_unconverged)
    throw_error(ErrorCode::not_converged, who + ": power iteration failed to converge within max_iter = " +
                                              std::to_string(params.max_iter) +
                                              " iterations (raise max_iter or tol, or set allow_unconverged)");
  return result;
}

// Several ranks: this rank's rows of the graph of every rank's edges. s, d, w: this rank's
// checked edges in the context's memory (the GPU's for a CUDA context, where the collectives then
// run over NCCL without host copies); weighted: whether there are weights (w may be null then
// when this rank has no edges).
template <typename T>
void build_ranges(Graph::Impl& g, detail::PageRankBackend<T>& backend, const int64_t* s, const int64_t* d, const T* w,
                  bool weighted, int64_t m, detail::Trace& trace) {
  Context& ctx = g.ctx;
  Comm& comm = ctx.comm();
  const int size = comm.size(), rank = comm.rank();
  const int64_t n = g.n;
  g.first.assign(static_cast<std::size_t>(size) + 1, 0);
  g.rows.assign(static_cast<std::size_t>(size), 0);
  for (int r = 0; r <= size; ++r) g.first[r] = n * r / size;
  for (int r = 0; r < size; ++r) g.rows[r] = g.first[r + 1] - g.first[r];
  const std::size_t wsize = sizeof(T);

  // Weighted out-degrees of the whole graph.
  Buffer out(ctx, static_cast<std::size_t>(n) * sizeof(double));
  backend.out_degrees(s, w, m, n, out.as<double>());
  comm.allreduce_sum_on(ctx, out.data(), n, DType::float64);
  trace.mark("out-degrees");

  // Range r's in-edges from every rank, in rank order: this rank's edges grouped by range, then
  // one allgatherv per range (an alltoallv would send each edge to its owner only; Comm has none).
  Buffer mine_s, mine_d, mine_w;
  int64_t mine = 0;
  {
    std::vector<int64_t> start(static_cast<std::size_t>(size) + 1);
    Buffer gs(ctx, static_cast<std::size_t>(m) * sizeof(int64_t)), gd(ctx, static_cast<std::size_t>(m) * sizeof(int64_t));
    Buffer gw(ctx, weighted ? static_cast<std::size_t>(m) * wsize : 0);
    backend.group_by_range(s, d, weighted ? w : nullptr, m, n, g.first.data(), size, gs.as<int64_t>(), gd.as<int64_t>(),
                           weighted ? gw.as<T>() : nullptr, start.data());
    trace.mark("group by range");
    for (int r = 0; r < size; ++r) {
      const int64_t count = start[r + 1] - start[r];
      const std::vector<int64_t> counts = comm.allgather(count);
      int64_t total = 0;
      for (int64_t c : counts) total += c;
      Buffer rs(ctx, static_cast<std::size_t>(total) * sizeof(int64_t)), rd(ctx, static_cast<std::size_t>(total) * sizeof(int64_t));
      Buffer rw(ctx, weighted ? static_cast<std::size_t>(total) * wsize : 0);
      comm.allgatherv_on(ctx, gs.as<int64_t>() + start[r], count, rs.data(), counts.data(), DType::int64);
      comm.allgatherv_on(ctx, gd.as<int64_t>() + start[r], count, rd.data(), counts.data(), DType::int64);
      if (weighted) comm.allgatherv_on(ctx, gw.as<T>() + start[r], count, rw.data(), counts.data(), dtype_of<T>::value);
      if (r == rank) mine_s = std::move(rs), mine_d = std::move(rd), mine_w = std::move(rw), mine = total;
    }
    trace.mark("exchange the ranges' edges");
  }
  backend.build_range(mine_s.as<int64_t>(), mine_d.as<int64_t>(), weighted ? mine_w.as<T>() : nullptr, mine, n,
                      g.first[rank], g.rows[rank], out.as<double>());
  trace.mark("build the range");
}

// The build phase: stages and checks the edges on every rank (and, for the one-shot function,
// the call's vectors through check_more, whose errors come before the edges' ids and weights are
// read, as they always did), agrees on the graph, and builds the backend's layout: every row in
// one process, this rank's range over several. `who` names the build in messages, `rank_who`
// the graph's later pagerank calls. The staged edges are freed on return.
template <typename T>
std::unique_ptr<Graph::Impl> build(Context& ctx, const char* who, const char* rank_who, int64_t n, const ArrayView& src,
                                   const ArrayView& dst, const ArrayView* weights, const std::function<void()>& check_more) {
  std::unique_ptr<Graph::Impl> g = std::make_unique<Graph::Impl>(ctx, rank_who, n, dtype_of<T>::value);
  const std::string name = who;
  Comm& comm = ctx.comm();
  const int64_t m = src.shape[0];
  detail::Staged s, d, w;
  const T* wp = nullptr;
  std::unique_ptr<detail::PageRankBackend<T>> backend;
  detail::Trace trace(ctx, who);  // GPUML_TRACE=1: the time of each phase
  detail::check_on_every_rank(comm, name, check_more ? "checking the edges and vectors" : "checking the edges", [&] {
    s = detail::stage(ctx, src, DType::int64, "src");
    d = detail::stage(ctx, dst, DType::int64, "dst");
    if (weights != nullptr) {
      check_vector(name, *weights, m, "weights", "the number of edges");
      w = detail::stage(ctx, *weights, dtype_of<T>::value, "weights");
      detail::require_finite(ctx, w.view, "weights");
      wp = w.view.as<const T>();
    }
    if (check_more) check_more();
    if (n == 0) return;  // no vertices and (checked) no edges: nothing to build
    backend = make_backend<T>(ctx);
    const detail::EdgeSummary summary = backend->summarize(s.view.as<const int64_t>(), d.view.as<const int64_t>(), wp, m);
    if (m > 0) {
      GPUML_EXPECT(summary.min_vertex >= 0,
                   name + ": src and dst must hold vertex ids >= 0, found " + std::to_string(summary.min_vertex));
      GPUML_EXPECT(summary.max_vertex < n, name + ": src and dst must hold vertex ids < n_vertices = " + std::to_string(n) +
                                               ", found " + std::to_string(summary.max_vertex));
      if (weights != nullptr)
        GPUML_EXPECT(summary.min_weight >= 0.0,
                     name + ": weights must be non-negative, found " + std::to_string(summary.min_weight));
    }
  });
  // Every rank's edges on the same kind of device.
  const detail::RowCounts edges = detail::agree_on_every_rank(
      comm, name, m,
      {{"whether there are weights", weights != nullptr ? 1 : 0}, {"the device (0 CPU, 1 CUDA)", ctx.is_cuda() ? 1 : 0}});
  g->n_edges = edges.total;
  trace.mark("stage and check the input");
  if (n == 0) return g;
  if (comm.size() > 1) {
    build_ranges<T>(*g, *backend, s.view.as<const int64_t>(), d.view.as<const int64_t>(), wp, weights != nullptr, m, trace);
  } else {
    backend->build(s.view.as<const int64_t>(), d.view.as<const int64_t>(), wp, m, n);
    trace.mark("build");
  }
  g->backend_of<T>() = std::move(backend);
  return g;
}

// The iterate phase: one pagerank call over a built graph (n > 0), with checked parameters and
// normalized vectors.
template <typename T>
PageRankResult rank(Graph::Impl& g, const Vectors<T>& v, const PageRankParams& params, const ArrayView& ranks_out) {
  Context& ctx = g.ctx;
  Comm& comm = ctx.comm();
  const int64_t n = g.n;
  // Every rank runs the same vectors (else the union has no single PageRank). Hashed only where
  // there are other ranks: on one, hashing (and a host uniform start) cost ~30 ms a call at 4M vertices.
  std::vector<detail::RankField> fields;
  if (comm.size() > 1) {
    auto hash = [](const std::vector<T>& values) { return detail::hash_of(std::vector<double>(values.begin(), values.end())); };
    fields = {{"personalization (hash)", hash(v.p)}, {"nstart (hash)", hash(v.x)}, {"dangling (hash)", hash(v.d)}};
  }
  detail::agree_on_every_rank(comm, g.who, 0, fields);
  detail::PageRankBackend<T>& backend = *g.backend_of<T>();
  // What the backend derived from the last call's vectors is stale: this call's x may even sit at
  // the address of the last call's x_new, with other values.
  backend.restart();
  detail::Trace trace(ctx, g.who.c_str());

  Buffer p_buf = upload(ctx, v.p), d_buf = upload(ctx, v.d);
  // The start: nstart, or uniform, filled where the iterations run.
  Buffer x = v.x.empty() ? std::move(detail::stage_filled(ctx, dtype_of<T>::value, n, 1.0 / static_cast<double>(n)).owned)
                         : upload(ctx, v.x);
  const T* p_dev = v.p.empty() ? nullptr : p_buf.as<const T>();
  const T* d_dev = v.d.empty() ? nullptr : d_buf.as<const T>();
  PageRankResult result;
  if (g.first.empty()) {
    Buffer x_new(ctx, static_cast<std::size_t>(n) * sizeof(T));
    result = power_iteration(g.who, n, params, [&] {
      const double err = backend.iterate(x.as<const T>(), x_new.as<T>(), p_dev, d_dev, params.alpha);
      std::swap(x, x_new);
      return err;
    });
  } else {
    const int rank = comm.rank();
    Buffer range(ctx, static_cast<std::size_t>(g.rows[rank]) * sizeof(T));
    result = power_iteration(g.who, n, params, [&] {
      double err = backend.iterate_range(x.as<const T>(), range.as<T>(), p_dev, d_dev, params.alpha);
      comm.allreduce_sum(&err, 1);
      comm.allgatherv_on(ctx, range.data(), g.rows[rank], x.data(), g.rows.data(), dtype_of<T>::value);
      return err;
    });
  }
  trace.mark("iterations");
  detail::write_output(ctx, make_view(x.data(), dtype_of<T>::value, ctx.device(), n), ranks_out, "ranks_out");
  return result;
}

Graph::Impl& live(const std::unique_ptr<Graph::Impl>& impl) {
  GPUML_EXPECT(impl != nullptr, "Graph: this graph was moved from; build a new one");
  return *impl;
}

}  // namespace

Graph::Graph(Context& ctx, int64_t n_vertices, const ArrayView& src, const ArrayView& dst, const ArrayView* weights,
             DType precision) {
  const std::string who = "Graph";
  Comm& comm = ctx.comm();
  detail::check_on_every_rank(comm, who, "checking the arguments", [&] {
    check_edge_arguments(who, n_vertices, src, dst);
    GPUML_EXPECT(precision == DType::float32 || precision == DType::float64,
                 who + ": precision must be float32 or float64, got " + dtype_name(precision));
  });
  detail::agree_on_every_rank(comm, who, 0,
                              {{"n_vertices", n_vertices}, {"precision (0 float32, 1 float64)", static_cast<int64_t>(precision)}});
  impl_ = detail::with_float_type(precision, [&](auto zero) {
    using T = decltype(zero);
    return build<T>(ctx, "Graph", "Graph::pagerank", n_vertices, src, dst, weights, nullptr);
  });
}

Graph::~Graph() = default;
Graph::Graph(Graph&& other) noexcept = default;
Graph& Graph::operator=(Graph&& other) noexcept = default;

PageRankResult Graph::pagerank(const ArrayView* personalization, const ArrayView* nstart, const ArrayView* dangling,
                               const PageRankParams& params, const ArrayView& ranks_out) {
  Impl& g = live(impl_);
  Comm& comm = g.ctx.comm();
  detail::check_on_every_rank(comm, g.who, "checking the arguments", [&] {
    validate_params(g.who, params);
    check_ranks_out(g.who, ranks_out, g.n);
  });
  detail::agree_on_every_rank(comm, g.who, 0, param_fields(params));
  if (g.n == 0) return converged_empty();  // as NetworkX returns {} for an empty graph
  return detail::with_float_type(g.dtype, [&](auto zero) {
    using T = decltype(zero);
    Vectors<T> v;
    detail::check_on_every_rank(comm, g.who, "checking the vectors",
                                [&] { v = prepare_vectors<T>(g.who, g.ctx, g.n, personalization, nstart, dangling); });
    return rank<T>(g, v, params, ranks_out);
  });
}

int64_t Graph::n_vertices() const { return live(impl_).n; }
int64_t Graph::n_edges() const { return live(impl_).n_edges; }
DType Graph::dtype() const { return live(impl_).dtype; }

int64_t Graph::memory_bytes() const {
  const Impl& g = live(impl_);
  std::size_t bytes = 0;
  if (g.f32) bytes += g.f32->memory_bytes();
  if (g.f64) bytes += g.f64->memory_bytes();
  return static_cast<int64_t>(bytes);
}

// A Graph built and ranked once: the arguments first (the parameters, shapes and dtypes), then the
// edges with this call's vectors, then the iteration. ranks_out's dtype is the precision.
PageRankResult pagerank(Context& ctx, int64_t n_vertices, const ArrayView& src, const ArrayView& dst,
                        const ArrayView* weights, const ArrayView* personalization, const ArrayView* nstart,
                        const ArrayView* dangling, const PageRankParams& params, const ArrayView& ranks_out) {
  const std::string who = "pagerank";
  Comm& comm = ctx.comm();
  detail::check_on_every_rank(comm, who, "checking the arguments", [&] {
    validate_params(who, params);
    check_edge_arguments(who, n_vertices, src, dst);
    check_ranks_out(who, ranks_out, n_vertices);
  });
  std::vector<detail::RankField> fields = {
      {"n_vertices", n_vertices}, {"the dtype of ranks_out (0 float32, 1 float64)", static_cast<int64_t>(ranks_out.dtype)}};
  for (const detail::RankField& f : param_fields(params)) fields.push_back(f);
  detail::agree_on_every_rank(comm, who, 0, fields);
  if (n_vertices == 0) return converged_empty();  // as NetworkX returns {} for an empty graph
  return detail::with_float_type(ranks_out.dtype, [&](auto zero) {
    using T = decltype(zero);
    Vectors<T> v;
    const std::unique_ptr<Graph::Impl> g =
        build<T>(ctx, "pagerank", "pagerank", n_vertices, src, dst, weights,
                 [&] { v = prepare_vectors<T>(who, ctx, n_vertices, personalization, nstart, dangling); });
    return rank<T>(*g, v, params, ranks_out);
  });
}

}  // namespace gpuml

// PageRank: validation, the dispatch to a backend, and the power iteration, written once on top
// of the PageRankBackend<T> primitives. It follows networkx.pagerank (_pagerank_scipy):
//   x <- alpha * (x A + sum(x[dangling]) * dangling_weights) + (1 - alpha) * p
// with A the adjacency (duplicate edges summed) whose rows are divided by the weighted
// out-degree, stopping when sum |x - x_last| < N * tol; personalization, nstart and dangling are
// divided by their sums, and dangling defaults to the personalization vector.
//
// Distributed (SPMD, the context's communicator, CPU or CUDA contexts): every rank passes the edges it
// holds (any share of the edge list) and the same n_vertices, parameters and per-vertex vectors;
// the result, on every rank, is the PageRank of the union of the edges in rank order. The ranks
// check their inputs together (a bad rank makes every rank throw) and agree on the rest. Vertices
// are split in contiguous ranges, one per rank; the edges are redistributed so that each rank
// holds the in-edges of its range (one allgatherv per range, every rank sending its edges into
// that range, in order), the weighted out-degrees are summed over ranks, and each iteration each
// rank computes its range of x_new from the whole x, the ranges are allgathered into the next x,
// and the L1 change is summed over ranks (the same bits everywhere: the same stopping decision).
// All of it in the context's memory: on a CUDA context with NCCL only scalars visit the host.
// One rank: the single-process path, unchanged.
#include "gpuml/graph/pagerank.hpp"

#include <algorithm>
#include <climits>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "core/device_ops.hpp"
#include "core/distributed.hpp"
#include "core/staging.hpp"
#include "core/trace.hpp"
#include "gpuml/core/comm.hpp"
#include "gpuml/core/error.hpp"
#include "graph/pagerank_backend.hpp"

namespace gpuml {

namespace {

// The single dispatch point between the backends.
template <typename T>
std::unique_ptr<detail::PageRankBackend<T>> make_backend(const Context& ctx) {
  return ctx.is_cuda() ? detail::make_pagerank_cuda_backend<T>(ctx) : detail::make_pagerank_cpu_backend<T>(ctx);
}

void validate_params(const PageRankParams& p) {
  GPUML_EXPECT(std::isfinite(p.alpha) && p.alpha > 0.0 && p.alpha < 1.0,
               "pagerank: alpha must be in (0, 1), got " + std::to_string(p.alpha));
  GPUML_EXPECT(p.max_iter >= 0, "pagerank: max_iter must be >= 0, got " + std::to_string(p.max_iter));
  GPUML_EXPECT(std::isfinite(p.tol) && p.tol >= 0.0, "pagerank: tol must be a finite number >= 0, got " + std::to_string(p.tol));
}

void check_vector(const ArrayView& a, int64_t length, const char* what, const char* length_name) {
  GPUML_EXPECT(a.ndim == 1, std::string("pagerank: ") + what + " must be a 1-d array, got " + std::to_string(a.ndim) +
                                " dimension(s)");
  GPUML_EXPECT(a.shape[0] == length, std::string("pagerank: ") + what + " has length " + std::to_string(a.shape[0]) +
                                         ", expected " + length_name + " = " + std::to_string(length));
}

// A per-vertex vector (personalization, nstart, dangling) divided by its sum, as T on the host.
// Values must be finite and >= 0 with a positive sum.
template <typename T>
std::vector<T> normalized(const Context& ctx, const ArrayView& a, int64_t n, const char* what) {
  check_vector(a, n, what, "n_vertices");
  detail::HostReadable h = detail::host_readable(ctx, a, DType::float64, what);
  const double* v = static_cast<const double*>(h.data());
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    GPUML_EXPECT(v[i] >= 0.0, std::string("pagerank: ") + what + " must be non-negative, got " + std::to_string(v[i]) +
                                  " at index " + std::to_string(i));
    sum += v[i];
  }
  GPUML_EXPECT(sum > 0.0 && std::isfinite(sum), std::string("pagerank: ") + what + " must have a positive (finite) sum, got " +
                                                    std::to_string(sum));
  std::vector<T> out(static_cast<std::size_t>(n));
  for (int64_t i = 0; i < n; ++i) out[i] = static_cast<T>(v[i] / sum);
  return out;
}

template <typename T>
Buffer upload(Context& ctx, const std::vector<T>& host) {
  Buffer b(ctx, host.size() * sizeof(T));
  detail::copy_bytes(ctx, b.data(), ctx.device(), host.data(), Device{}, host.size() * sizeof(T));
  return b;
}

// The power iteration's loop and stopping test; step() does one iteration and returns the L1
// change (the same on every rank).
template <typename Step>
PageRankResult power_iteration(int64_t n, const PageRankParams& params, Step&& step) {
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
    throw_error(ErrorCode::not_converged, "pagerank: power iteration failed to converge within max_iter = " +
                                              std::to_string(params.max_iter) +
                                              " iterations (raise max_iter or tol, or set allow_unconverged)");
  return result;
}

// Several ranks: the rank's rows of the graph of every rank's edges, and the iteration over
// them with the ranges allgathered. s, d, w: this rank's checked edges in the context's memory
// (the GPU's for a CUDA context, where the collectives then run over NCCL without host copies);
// weighted: whether there are weights (w may be null then when this rank has no edges).
template <typename T>
PageRankResult run_distributed(Context& ctx, detail::PageRankBackend<T>& backend, int64_t n, const int64_t* s,
                               const int64_t* d, const T* w, bool weighted, int64_t m, const std::vector<T>& x_host,
                               const std::vector<T>& p_host, const std::vector<T>& d_host, const PageRankParams& params,
                               const ArrayView& ranks_out) {
  Comm& comm = ctx.comm();
  const int size = comm.size(), rank = comm.rank();
  std::vector<int64_t> first(static_cast<std::size_t>(size) + 1), rows(static_cast<std::size_t>(size));
  for (int r = 0; r <= size; ++r) first[r] = n * r / size;
  for (int r = 0; r < size; ++r) rows[r] = first[r + 1] - first[r];
  const std::size_t wsize = sizeof(T);
  detail::Trace trace(ctx, "pagerank over ranks");  // GPUML_TRACE=1: the time of each phase

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
    backend.group_by_range(s, d, weighted ? w : nullptr, m, n, first.data(), size, gs.as<int64_t>(), gd.as<int64_t>(),
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
  backend.build_range(mine_s.as<int64_t>(), mine_d.as<int64_t>(), weighted ? mine_w.as<T>() : nullptr, mine, n, first[rank],
                      rows[rank], out.as<double>());
  mine_s = Buffer();
  mine_d = Buffer();
  mine_w = Buffer();
  out = Buffer();
  trace.mark("build the range");

  Buffer p_buf = upload(ctx, p_host), d_buf = upload(ctx, d_host), x = upload(ctx, x_host);
  Buffer range(ctx, static_cast<std::size_t>(rows[rank]) * wsize);
  const T* p_ptr = p_host.empty() ? nullptr : p_buf.as<const T>();
  const T* d_ptr = d_host.empty() ? nullptr : d_buf.as<const T>();
  const PageRankResult result = power_iteration(n, params, [&] {
    double err = backend.iterate_range(x.as<const T>(), range.as<T>(), p_ptr, d_ptr, params.alpha);
    comm.allreduce_sum(&err, 1);
    comm.allgatherv_on(ctx, range.data(), rows[rank], x.data(), rows.data(), dtype_of<T>::value);
    return err;
  });
  trace.mark("iterations");
  detail::write_output(ctx, make_view(x.data(), dtype_of<T>::value, ctx.device(), n), ranks_out, "ranks_out");
  return result;
}

template <typename T>
PageRankResult run(Context& ctx, int64_t n, const ArrayView& src, const ArrayView& dst, const ArrayView* weights,
                   const ArrayView* personalization, const ArrayView* nstart, const ArrayView* dangling,
                   const PageRankParams& params, const ArrayView& ranks_out) {
  Comm& comm = ctx.comm();
  const int64_t m = src.shape[0];
  detail::Staged s, d, w;
  const T* wp = nullptr;
  std::vector<T> p_host, x_host, d_host;
  std::unique_ptr<detail::PageRankBackend<T>> backend;
  detail::Trace trace(ctx, "pagerank");
  detail::check_on_every_rank(comm, "pagerank", "checking the edges and vectors", [&] {
    s = detail::stage(ctx, src, DType::int64, "src");
    d = detail::stage(ctx, dst, DType::int64, "dst");
    if (weights != nullptr) {
      check_vector(*weights, m, "weights", "the number of edges");
      w = detail::stage(ctx, *weights, dtype_of<T>::value, "weights");
      detail::require_finite(ctx, w.view, "weights");
      wp = w.view.as<const T>();
    }

    // Per-vertex vectors first: their errors need no graph.
    if (personalization != nullptr) p_host = normalized<T>(ctx, *personalization, n, "personalization");
    if (nstart != nullptr) x_host = normalized<T>(ctx, *nstart, n, "nstart");
    if (dangling != nullptr) d_host = normalized<T>(ctx, *dangling, n, "dangling");
    if (x_host.empty()) x_host.assign(static_cast<std::size_t>(n), static_cast<T>(1.0 / static_cast<double>(n)));

    backend = make_backend<T>(ctx);
    const detail::EdgeSummary summary = backend->summarize(s.view.as<const int64_t>(), d.view.as<const int64_t>(), wp, m);
    if (m > 0) {
      GPUML_EXPECT(summary.min_vertex >= 0, "pagerank: src and dst must hold vertex ids >= 0, found " +
                                                std::to_string(summary.min_vertex));
      GPUML_EXPECT(summary.max_vertex < n, "pagerank: src and dst must hold vertex ids < n_vertices = " +
                                               std::to_string(n) + ", found " + std::to_string(summary.max_vertex));
      if (weights != nullptr)
        GPUML_EXPECT(summary.min_weight >= 0.0, "pagerank: weights must be non-negative, found " +
                                                    std::to_string(summary.min_weight));
    }
  });
  // Every rank runs the same vectors (else the union has no single PageRank) on the same kind of
  // device.
  auto hash = [](const std::vector<T>& v) { return detail::hash_of(std::vector<double>(v.begin(), v.end())); };
  detail::agree_on_every_rank(comm, "pagerank", m,
                              {{"whether there are weights", weights != nullptr ? 1 : 0},
                               {"personalization (hash)", hash(p_host)},
                               {"nstart (hash)", hash(x_host)},
                               {"dangling (hash)", hash(d_host)},
                               {"the device (0 CPU, 1 CUDA)", ctx.is_cuda() ? 1 : 0}});
  trace.mark("stage and check the input");
  if (comm.size() > 1)
    return run_distributed<T>(ctx, *backend, n, s.view.as<const int64_t>(), d.view.as<const int64_t>(), wp,
                              weights != nullptr, m, x_host, p_host, d_host, params, ranks_out);

  backend->build(s.view.as<const int64_t>(), d.view.as<const int64_t>(), wp, m, n);
  trace.mark("build");
  s = {};
  d = {};
  w = {};

  Buffer p_buf = upload(ctx, p_host), d_buf = upload(ctx, d_host);
  Buffer x = upload(ctx, x_host), x_new(ctx, static_cast<std::size_t>(n) * sizeof(T));
  const T* p_dev = p_host.empty() ? nullptr : p_buf.as<const T>();
  const T* d_dev = d_host.empty() ? nullptr : d_buf.as<const T>();

  const PageRankResult result = power_iteration(n, params, [&] {
    const double err = backend->iterate(x.as<const T>(), x_new.as<T>(), p_dev, d_dev, params.alpha);
    std::swap(x, x_new);
    return err;
  });
  trace.mark("iterations");
  const ArrayView ranks = make_view(x.data(), dtype_of<T>::value, ctx.device(), n);
  detail::write_output(ctx, ranks, ranks_out, "ranks_out");
  return result;
}

}  // namespace

PageRankResult pagerank(Context& ctx, int64_t n_vertices, const ArrayView& src, const ArrayView& dst,
                        const ArrayView* weights, const ArrayView* personalization, const ArrayView* nstart,
                        const ArrayView* dangling, const PageRankParams& params, const ArrayView& ranks_out) {
  Comm& comm = ctx.comm();
  detail::check_on_every_rank(comm, "pagerank", "checking the arguments", [&] {
    validate_params(params);
    GPUML_EXPECT(n_vertices >= 0, "pagerank: n_vertices must be >= 0, got " + std::to_string(n_vertices));
    if (n_vertices > INT32_MAX)
      throw_error(ErrorCode::unsupported, "pagerank: n_vertices = " + std::to_string(n_vertices) +
                                              " exceeds the supported 2^31 - 1 vertices");
    GPUML_EXPECT(src.ndim == 1 && dst.ndim == 1, "pagerank: src and dst must be 1-d arrays, got " +
                                                     std::to_string(src.ndim) + " and " + std::to_string(dst.ndim) +
                                                     " dimension(s)");
    GPUML_EXPECT(src.shape[0] == dst.shape[0], "pagerank: src and dst must have the same length, got " +
                                                   std::to_string(src.shape[0]) + " and " + std::to_string(dst.shape[0]));
    GPUML_EXPECT(src.dtype == DType::int32 || src.dtype == DType::int64,
                 std::string("pagerank: src must be an int32 or int64 array, got ") + dtype_name(src.dtype));
    GPUML_EXPECT(dst.dtype == DType::int32 || dst.dtype == DType::int64,
                 std::string("pagerank: dst must be an int32 or int64 array, got ") + dtype_name(dst.dtype));
    check_vector(ranks_out, n_vertices, "ranks_out", "n_vertices");
    GPUML_EXPECT(is_floating(ranks_out.dtype),
                 std::string("pagerank: ranks_out must be a float32 or float64 array, got ") + dtype_name(ranks_out.dtype));
    if (n_vertices == 0)
      GPUML_EXPECT(src.shape[0] == 0, "pagerank: src and dst must hold vertex ids < n_vertices = 0, but there are edges");
  });
  detail::agree_on_every_rank(comm, "pagerank", 0,
                              {{"n_vertices", n_vertices},
                               {"the dtype of ranks_out (0 float32, 1 float64)", static_cast<int64_t>(ranks_out.dtype)},
                               {"alpha (bits)", detail::bits_of(params.alpha)},
                               {"max_iter", params.max_iter},
                               {"tol (bits)", detail::bits_of(params.tol)},
                               {"allow_unconverged", params.allow_unconverged ? 1 : 0}});
  if (n_vertices == 0) {
    PageRankResult empty;
    empty.converged = true;
    return empty;
  }
  return detail::with_float_type(ranks_out.dtype, [&](auto zero) {
    using T = decltype(zero);
    return run<T>(ctx, n_vertices, src, dst, weights, personalization, nstart, dangling, params, ranks_out);
  });
}

}  // namespace gpuml

// PageRank: the CPU backend against an independent dense power iteration written here (the
// NetworkX formula), on small random graphs with dangling vertices, self-loops, duplicate edges
// and isolated vertices; the error paths; gpuml::Graph (built once, ranked many times) against
// the one-shot function; and the CUDA backend against the CPU backend (skipped without a GPU).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "backend_test_util.hpp"
#include "gpuml/graph/graph.hpp"
#include "test_util.hpp"

namespace gpuml {
namespace {

using test::uniform_int;
using test::uniform_real;

struct Edges {
  int64_t n = 0;
  std::vector<int64_t> src, dst;
  std::vector<double> w;
};

// Random edges among the first n - isolated vertices; some vertices get no out-edges (dangling),
// some edges are repeated and some are self-loops. The last `isolated` vertices touch nothing.
Edges random_graph(std::mt19937_64& rng, int64_t n, int64_t m, bool weighted) {
  Edges g;
  g.n = n;
  const int64_t isolated = n > 3 ? uniform_int(rng, 0, 2) : 0;
  const int64_t used = n - isolated;
  std::vector<bool> sink(static_cast<std::size_t>(n), false);
  for (int64_t v = 0; v < used; ++v) sink[v] = uniform_real(rng, 0, 1) < 0.2;
  for (int64_t e = 0; e < m; ++e) {
    int64_t s = uniform_int(rng, 0, used - 1);
    if (sink[s]) continue;
    int64_t d = uniform_real(rng, 0, 1) < 0.1 ? s : uniform_int(rng, 0, used - 1);  // self-loops
    const int repeats = uniform_real(rng, 0, 1) < 0.1 ? 2 : 1;                    // duplicates
    for (int r = 0; r < repeats; ++r) {
      g.src.push_back(s);
      g.dst.push_back(d);
      g.w.push_back(weighted ? uniform_real(rng, 0.0, 3.0) : 1.0);
    }
  }
  return g;
}

std::vector<double> normalize(std::vector<double> v) {
  double s = 0;
  for (double x : v) s += x;
  for (double& x : v) x /= s;
  return v;
}

struct Reference {
  std::vector<double> x;
  int64_t n_iter = 0;
  bool converged = false;
};

// NetworkX's _pagerank_scipy with a dense matrix, in double.
Reference reference_pagerank(const Edges& g, bool weighted, const std::vector<double>* pers, const std::vector<double>* nstart,
                             const std::vector<double>* dangling, double alpha, int64_t max_iter, double tol) {
  const int64_t n = g.n;
  std::vector<double> A(static_cast<std::size_t>(n * n), 0.0), out(static_cast<std::size_t>(n), 0.0);
  for (std::size_t e = 0; e < g.src.size(); ++e) A[g.src[e] * n + g.dst[e]] += weighted ? g.w[e] : 1.0;
  for (int64_t j = 0; j < n; ++j)
    for (int64_t i = 0; i < n; ++i) out[j] += A[j * n + i];
  for (int64_t j = 0; j < n; ++j)
    for (int64_t i = 0; i < n; ++i)
      if (out[j] != 0) A[j * n + i] /= out[j];
  const std::vector<double> uniform(static_cast<std::size_t>(n), 1.0 / n);
  const std::vector<double> p = pers ? normalize(*pers) : uniform;
  const std::vector<double> dw = dangling ? normalize(*dangling) : p;
  Reference r;
  r.x = nstart ? normalize(*nstart) : uniform;
  for (int64_t it = 0; it < max_iter; ++it) {
    double dsum = 0;
    for (int64_t j = 0; j < n; ++j)
      if (out[j] == 0) dsum += r.x[j];
    std::vector<double> next(static_cast<std::size_t>(n), 0.0);
    for (int64_t i = 0; i < n; ++i) {
      double s = 0;
      for (int64_t j = 0; j < n; ++j) s += r.x[j] * A[j * n + i];
      next[i] = alpha * (s + dsum * dw[i]) + (1 - alpha) * p[i];
    }
    double err = 0;
    for (int64_t i = 0; i < n; ++i) err += std::fabs(next[i] - r.x[i]);
    r.x = next;
    r.n_iter = it + 1;
    if (err < n * tol) {
      r.converged = true;
      break;
    }
  }
  return r;
}

struct Outcome {
  std::vector<double> x;
  PageRankResult result;
};

// gpuml::pagerank on `ctx` with ranks of type T and int64 or int32 ids.
template <typename T>
Outcome run_pagerank(Context& ctx, const Edges& g, bool weighted, const std::vector<double>* pers,
                 const std::vector<double>* nstart, const std::vector<double>* dangling, const PageRankParams& params,
                 bool int32_ids = false) {
  const int64_t m = static_cast<int64_t>(g.src.size());
  std::vector<int32_t> s32(g.src.begin(), g.src.end()), d32(g.dst.begin(), g.dst.end());
  const ArrayView src = int32_ids ? host_view(s32.data(), m) : host_view(g.src.data(), m);
  const ArrayView dst = int32_ids ? host_view(d32.data(), m) : host_view(g.dst.data(), m);
  const ArrayView w = host_view(g.w.data(), m);
  ArrayView pv, nv, dv;
  if (pers) pv = host_view(pers->data(), g.n);
  if (nstart) nv = host_view(nstart->data(), g.n);
  if (dangling) dv = host_view(dangling->data(), g.n);
  std::vector<T> ranks(static_cast<std::size_t>(g.n));
  Outcome r;
  r.result = pagerank(ctx, g.n, src, dst, weighted ? &w : nullptr, pers ? &pv : nullptr, nstart ? &nv : nullptr,
                      dangling ? &dv : nullptr, params, host_view(ranks.data(), g.n));
  r.x.assign(ranks.begin(), ranks.end());
  return r;
}

double l1(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) s += std::fabs(a[i] - b[i]);
  return s;
}

std::vector<double> random_vector(std::mt19937_64& rng, int64_t n, bool with_zeros) {
  std::vector<double> v(static_cast<std::size_t>(n));
  for (double& x : v) x = with_zeros && uniform_real(rng, 0, 1) < 0.3 ? 0.0 : uniform_real(rng, 0.1, 2.0);
  v[0] = 1.0;  // a positive sum
  return v;
}

TEST(PageRank, MatchesReferenceFloat64) {
  GPUML_FRESH_RNG(rng);
  Context ctx = Context::cpu();
  for (int trial = 0; trial < 40; ++trial) {
    SCOPED_TRACE("trial " + std::to_string(trial));
    const int64_t n = uniform_int(rng, 1, 40);
    const bool weighted = trial % 2 == 1;
    const Edges g = random_graph(rng, n, uniform_int(rng, 0, 4 * n), weighted);
    const int options = trial % 8;
    std::vector<double> pers = random_vector(rng, n, true), nstart = random_vector(rng, n, true),
                        dang = random_vector(rng, n, true);
    const std::vector<double>* pp = options & 1 ? &pers : nullptr;
    const std::vector<double>* np = options & 2 ? &nstart : nullptr;
    const std::vector<double>* dp = options & 4 ? &dang : nullptr;
    PageRankParams params;
    params.alpha = uniform_real(rng, 0.5, 0.95);
    params.tol = 1e-13;  // to the fixed point, so a differing iteration count cannot matter
    params.max_iter = 2000;
    const Reference ref = reference_pagerank(g, weighted, pp, np, dp, params.alpha, params.max_iter, params.tol);
    ASSERT_TRUE(ref.converged);
    const Outcome run = run_pagerank<double>(ctx, g, weighted, pp, np, dp, params, trial % 3 == 0);
    EXPECT_TRUE(run.result.converged);
    // float64, both converged to 1e-13 * n: the rest is summation order (~1e-16 per value).
    EXPECT_LE(l1(run.x, ref.x), 1e-10);
    // The same iteration count as the reference, give or take the last test at the threshold.
    EXPECT_LE(std::llabs(run.result.n_iter - ref.n_iter), 1);
  }
}

TEST(PageRank, DefaultToleranceIterationsLikeNetworkX) {
  GPUML_FRESH_RNG(rng);
  Context ctx = Context::cpu();
  const Edges g = random_graph(rng, 300, 2000, true);
  PageRankParams params;
  const Reference ref = reference_pagerank(g, true, nullptr, nullptr, nullptr, params.alpha, params.max_iter, params.tol);
  const Outcome run = run_pagerank<double>(ctx, g, true, nullptr, nullptr, nullptr, params);
  EXPECT_LE(std::llabs(run.result.n_iter - ref.n_iter), 1);  // only a tie at the threshold could differ
  EXPECT_LE(l1(run.x, ref.x), 1e-6);  // the bound: at worst one iteration apart (< n tol alpha)
  double sum = 0;
  for (double v : run.x) sum += v;
  EXPECT_NEAR(sum, 1.0, 1e-12);  // rank mass is conserved (every vertex's rank goes somewhere)
}

TEST(PageRank, MatchesReferenceFloat32) {
  GPUML_FRESH_RNG(rng);
  Context ctx = Context::cpu();
  for (int trial = 0; trial < 20; ++trial) {
    SCOPED_TRACE("trial " + std::to_string(trial));
    const int64_t n = uniform_int(rng, 1, 60);
    const bool weighted = trial % 2 == 0;
    const Edges g = random_graph(rng, n, uniform_int(rng, 0, 5 * n), weighted);
    std::vector<double> pers = random_vector(rng, n, true);
    const std::vector<double>* pp = trial % 3 == 0 ? &pers : nullptr;
    PageRankParams params;
    // float32 iterates stop changing only to within an ulp or so, which can exceed n * tol for
    // tiny tol: iterate to a fixed count (alpha^400 ~ 1e-28) and take the partial result.
    params.tol = 1e-9;
    params.max_iter = 400;
    params.allow_unconverged = true;
    const Reference ref = reference_pagerank(g, weighted, pp, nullptr, nullptr, params.alpha, 5000, 1e-14);
    const Outcome run = run_pagerank<float>(ctx, g, weighted, pp, nullptr, nullptr, params);
    // float32 values (eps 6e-8) through a contraction of factor alpha: rounding stays below
    // ~eps / (1 - alpha) per unit of mass; 1e-5 leaves room for the stopping point n * 1e-8.
    EXPECT_LE(l1(run.x, ref.x), 1e-5);
  }
}

TEST(PageRank, KnownSmallGraph) {
  // 0 -> 1, 1 -> 2, 2 -> 0, 2 -> 1, 3 dangling and isolated. Computed by hand with the
  // reference iteration below; the test only checks the driver against the reference.
  Context ctx = Context::cpu();
  Edges g;
  g.n = 4;
  g.src = {0, 1, 2, 2};
  g.dst = {1, 2, 0, 1};
  g.w = {1, 1, 1, 1};
  PageRankParams params;
  const Reference ref = reference_pagerank(g, false, nullptr, nullptr, nullptr, 0.85, 100, 1e-6);
  const Outcome run = run_pagerank<double>(ctx, g, false, nullptr, nullptr, nullptr, params);
  EXPECT_EQ(run.result.n_iter, ref.n_iter);  // the same arithmetic up to the summation order
  EXPECT_TRUE(run.result.converged);
  EXPECT_LE(l1(run.x, ref.x), 1e-14);  // float64 on 4 vertices: a few ulps
}

TEST(PageRank, NoEdgesAndEmptyGraph) {
  Context ctx = Context::cpu();
  Edges g;
  g.n = 5;  // every vertex dangling: the ranks stay uniform
  const Outcome run = run_pagerank<double>(ctx, g, false, nullptr, nullptr, nullptr, PageRankParams{});
  for (double v : run.x) EXPECT_NEAR(v, 0.2, 1e-15);
  EXPECT_EQ(run.result.n_iter, 1);
  Edges empty;
  const Outcome none = run_pagerank<double>(ctx, empty, false, nullptr, nullptr, nullptr, PageRankParams{});
  EXPECT_TRUE(none.result.converged);
  EXPECT_EQ(none.result.n_iter, 0);
}

TEST(PageRank, NotConverged) {
  GPUML_FRESH_RNG(rng);
  Context ctx = Context::cpu();
  const Edges g = random_graph(rng, 50, 300, false);
  PageRankParams params;
  params.max_iter = 2;
  GPUML_EXPECT_ERROR(run_pagerank<double>(ctx, g, false, nullptr, nullptr, nullptr, params), ErrorCode::not_converged);
  params.allow_unconverged = true;
  const Outcome run = run_pagerank<double>(ctx, g, false, nullptr, nullptr, nullptr, params);
  EXPECT_FALSE(run.result.converged);
  EXPECT_EQ(run.result.n_iter, 2);
  const Reference ref = reference_pagerank(g, false, nullptr, nullptr, nullptr, 0.85, 2, 1e-6);
  EXPECT_LE(l1(run.x, ref.x), 1e-14);  // the partial result is the second iterate
}

TEST(PageRank, Deterministic) {
  GPUML_FRESH_RNG(rng);
  const Edges g = random_graph(rng, 100000, 400000, true);
  Context one = Context::cpu(1), many = Context::cpu(0);
  const Outcome a = run_pagerank<float>(one, g, true, nullptr, nullptr, nullptr, PageRankParams{});
  const Outcome b = run_pagerank<float>(many, g, true, nullptr, nullptr, nullptr, PageRankParams{});
  EXPECT_EQ(a.x, b.x);  // fixed summation order: the same bits on any thread count
  EXPECT_EQ(a.result.n_iter, b.result.n_iter);
}

TEST(PageRank, BadInput) {
  Context ctx = Context::cpu();
  Edges g;
  g.n = 3;
  g.src = {0, 1, 2};
  g.dst = {1, 2, 0};
  g.w = {1, 2, 3};
  PageRankParams params;
  auto run = [&](const Edges& graph, bool weighted, const std::vector<double>* pers, const PageRankParams& p) {
    return run_pagerank<double>(ctx, graph, weighted, pers, nullptr, nullptr, p);
  };
  Edges bad = g;
  bad.dst[1] = 3;  // vertex id >= n_vertices
  GPUML_EXPECT_ERROR(run(bad, false, nullptr, params), ErrorCode::invalid_argument);
  bad = g;
  bad.src[0] = -1;
  GPUML_EXPECT_ERROR(run(bad, false, nullptr, params), ErrorCode::invalid_argument);
  bad = g;
  bad.w[2] = -0.5;  // negative weight
  GPUML_EXPECT_ERROR(run(bad, true, nullptr, params), ErrorCode::invalid_argument);
  bad.w[2] = std::nan("");
  GPUML_EXPECT_ERROR(run(bad, true, nullptr, params), ErrorCode::invalid_argument);
  for (double alpha : {0.0, 1.0, -0.1, 1.5, std::nan("")}) {
    PageRankParams p;
    p.alpha = alpha;
    GPUML_EXPECT_ERROR(run(g, false, nullptr, p), ErrorCode::invalid_argument);
  }
  PageRankParams p;
  p.max_iter = -1;
  GPUML_EXPECT_ERROR(run(g, false, nullptr, p), ErrorCode::invalid_argument);
  p = {};
  p.tol = -1;
  GPUML_EXPECT_ERROR(run(g, false, nullptr, p), ErrorCode::invalid_argument);
  const std::vector<double> zeros(3, 0.0), negative = {1.0, -1.0, 1.0};
  GPUML_EXPECT_ERROR(run(g, false, &zeros, params), ErrorCode::invalid_argument);     // sums to zero
  GPUML_EXPECT_ERROR(run(g, false, &negative, params), ErrorCode::invalid_argument);  // negative
  // personalization of the wrong length
  std::vector<double> ranks(3), short_p = {1.0, 1.0};
  const ArrayView src = host_view(g.src.data(), 3), dst = host_view(g.dst.data(), 3), out = host_view(ranks.data(), 3);
  const ArrayView pv = host_view(short_p.data(), 2);
  GPUML_EXPECT_ERROR(pagerank(ctx, 3, src, dst, nullptr, &pv, nullptr, nullptr, params, out), ErrorCode::invalid_argument);
  GPUML_EXPECT_ERROR(pagerank(ctx, 3, src, dst, nullptr, nullptr, &pv, nullptr, params, out), ErrorCode::invalid_argument);
  GPUML_EXPECT_ERROR(pagerank(ctx, 3, src, dst, nullptr, nullptr, nullptr, &pv, params, out), ErrorCode::invalid_argument);
  // src and dst of different lengths, float ids, a wrong output
  GPUML_EXPECT_ERROR(pagerank(ctx, 3, src, host_view(g.dst.data(), 2), nullptr, nullptr, nullptr, nullptr, params, out),
                     ErrorCode::invalid_argument);
  GPUML_EXPECT_ERROR(pagerank(ctx, 3, host_view(g.w.data(), 3), dst, nullptr, nullptr, nullptr, nullptr, params, out),
                     ErrorCode::invalid_argument);
  std::vector<int64_t> int_out(3);
  GPUML_EXPECT_ERROR(pagerank(ctx, 3, src, dst, nullptr, nullptr, nullptr, nullptr, params, host_view(int_out.data(), 3)),
                     ErrorCode::invalid_argument);
  GPUML_EXPECT_ERROR(pagerank(ctx, 4, src, dst, nullptr, nullptr, nullptr, nullptr, params, out), ErrorCode::invalid_argument);
  GPUML_EXPECT_ERROR(pagerank(ctx, -1, src, dst, nullptr, nullptr, nullptr, nullptr, params, out), ErrorCode::invalid_argument);
  const ArrayView short_w = host_view(g.w.data(), 2);
  GPUML_EXPECT_ERROR(pagerank(ctx, 3, src, dst, &short_w, nullptr, nullptr, nullptr, params, out), ErrorCode::invalid_argument);
}

// ---- gpuml::Graph: built once, ranked many times ----------------------------------------------

// One pagerank call's options, for a Graph and for the one-shot function alike.
struct Call {
  const std::vector<double>* pers = nullptr;
  const std::vector<double>* nstart = nullptr;
  const std::vector<double>* dangling = nullptr;
  PageRankParams params;
};

template <typename Out>
Outcome rank_graph(gpuml::Graph& graph, const Call& c) {
  const int64_t n = graph.n_vertices();
  ArrayView pv, nv, dv;
  if (c.pers) pv = host_view(c.pers->data(), n);
  if (c.nstart) nv = host_view(c.nstart->data(), n);
  if (c.dangling) dv = host_view(c.dangling->data(), n);
  std::vector<Out> ranks(static_cast<std::size_t>(n));
  Outcome r;
  r.result = graph.pagerank(c.pers ? &pv : nullptr, c.nstart ? &nv : nullptr, c.dangling ? &dv : nullptr, c.params,
                            host_view(ranks.data(), n));
  r.x.assign(ranks.begin(), ranks.end());
  return r;
}

gpuml::Graph build_graph(Context& ctx, const Edges& g, bool weighted, DType precision, bool int32_ids = false) {
  const int64_t m = static_cast<int64_t>(g.src.size());
  const std::vector<int32_t> s32(g.src.begin(), g.src.end()), d32(g.dst.begin(), g.dst.end());
  const ArrayView w = host_view(g.w.data(), m);
  return gpuml::Graph(ctx, g.n, int32_ids ? host_view(s32.data(), m) : host_view(g.src.data(), m),
                      int32_ids ? host_view(d32.data(), m) : host_view(g.dst.data(), m), weighted ? &w : nullptr,
                      precision);
}

// Calls that differ in every option; the last repeats the first, so a call that left state
// behind would show.
std::vector<Call> varied_calls(std::mt19937_64& rng, int64_t n, std::vector<std::vector<double>>& store) {
  store.clear();
  for (int i = 0; i < 6; ++i) store.push_back(random_vector(rng, n, i % 2 == 0));
  std::vector<Call> calls(7);
  calls[1].pers = &store[0];
  calls[2].pers = &store[1];
  calls[2].params.alpha = 0.6;
  calls[3].nstart = &store[2];
  calls[3].params.tol = 1e-10;  // below float32's rounding of the L1 change: it may never converge there
  calls[3].params.max_iter = 1000;
  calls[3].params.allow_unconverged = true;  // the last iterate, compared bit for bit all the same
  calls[4].pers = &store[3];
  calls[4].dangling = &store[4];
  calls[4].nstart = &store[5];
  calls[4].params.alpha = 0.95;
  calls[4].params.max_iter = 1000;
  calls[4].params.allow_unconverged = true;
  calls[5].params.max_iter = 3;  // a partial result: the first iterations show any stale state
  calls[5].params.allow_unconverged = true;
  calls[5].nstart = &store[2];
  calls[6] = calls[1];
  return calls;
}

// A reused graph equals the one-shot function bit for bit on every call (the same code runs:
// build, then the iteration), whatever the order of the calls.
TEST(PageRankGraph, ReusedEqualsOneShotBitForBit) {
  GPUML_FRESH_RNG(rng);
  Context ctx = Context::cpu();
  for (int trial = 0; trial < 6; ++trial) {
    SCOPED_TRACE("trial " + std::to_string(trial));
    const int64_t n = uniform_int(rng, 1, 300);
    const bool weighted = trial % 2 == 0;
    const Edges g = random_graph(rng, n, uniform_int(rng, 0, 6 * n), weighted);
    std::vector<std::vector<double>> store;
    const std::vector<Call> calls = varied_calls(rng, n, store);
    gpuml::Graph g64 = build_graph(ctx, g, weighted, DType::float64, trial % 3 == 0);
    gpuml::Graph g32 = build_graph(ctx, g, weighted, DType::float32);
    for (std::size_t i = 0; i < calls.size(); ++i) {
      SCOPED_TRACE("call " + std::to_string(i));
      const Call& c = calls[i];
      const Outcome once64 = run_pagerank<double>(ctx, g, weighted, c.pers, c.nstart, c.dangling, c.params);
      const Outcome graph64 = rank_graph<double>(g64, c);
      EXPECT_EQ(graph64.x, once64.x);
      EXPECT_EQ(graph64.result.n_iter, once64.result.n_iter);
      EXPECT_EQ(graph64.result.converged, once64.result.converged);
      const Outcome once32 = run_pagerank<float>(ctx, g, weighted, c.pers, c.nstart, c.dangling, c.params);
      const Outcome graph32 = rank_graph<float>(g32, c);
      EXPECT_EQ(graph32.x, once32.x);
      EXPECT_EQ(graph32.result.n_iter, once32.result.n_iter);
    }
  }
}

// ranks_out of the other dtype: the ranks computed in the graph's precision, converted on write.
TEST(PageRankGraph, RanksOutOfTheOtherDtype) {
  GPUML_FRESH_RNG(rng);
  Context ctx = Context::cpu();
  const Edges g = random_graph(rng, 200, 1000, true);
  std::vector<double> pers = random_vector(rng, g.n, true);
  Call c;
  c.pers = &pers;
  gpuml::Graph g64 = build_graph(ctx, g, true, DType::float64);
  gpuml::Graph g32 = build_graph(ctx, g, true, DType::float32);
  const Outcome d64 = rank_graph<double>(g64, c), f64 = rank_graph<float>(g64, c);
  const Outcome f32 = rank_graph<float>(g32, c), d32 = rank_graph<double>(g32, c);
  for (std::size_t i = 0; i < d64.x.size(); ++i) {
    EXPECT_EQ(f64.x[i], static_cast<double>(static_cast<float>(d64.x[i])));  // float64 ranks rounded once
    EXPECT_EQ(d32.x[i], f32.x[i]);  // float32 ranks widened exactly
  }
  EXPECT_EQ(f64.result.n_iter, d64.result.n_iter);  // the precision is the graph's, not the output's
}

TEST(PageRankGraph, SizesAndMemory) {
  GPUML_FRESH_RNG(rng);
  Context ctx = Context::cpu();
  Edges g = random_graph(rng, 2000, 40000, true);
  const int64_t m = static_cast<int64_t>(g.src.size());
  const gpuml::Graph weighted = build_graph(ctx, g, true, DType::float64);
  EXPECT_EQ(weighted.n_vertices(), 2000);
  EXPECT_EQ(weighted.n_edges(), m);  // as given: duplicates and self-loops counted
  EXPECT_EQ(weighted.dtype(), DType::float64);
  // The layout only (the staged int64 edges, 16 bytes per edge, are gone): a 4-byte source and
  // an 8-byte weight per edge, and a few values per vertex.
  EXPECT_GE(weighted.memory_bytes(), 12 * m);
  EXPECT_LE(weighted.memory_bytes(), 12 * m + 40 * g.n + 4096);
  const gpuml::Graph unweighted = build_graph(ctx, g, false, DType::float32);
  EXPECT_EQ(unweighted.dtype(), DType::float32);
  EXPECT_GE(unweighted.memory_bytes(), 4 * m);
  EXPECT_LE(unweighted.memory_bytes(), 4 * m + 40 * g.n + 4096);
}

TEST(PageRankGraph, EmptyAndEdgeless) {
  Context ctx = Context::cpu();
  Edges none;
  gpuml::Graph empty = build_graph(ctx, none, false, DType::float64);
  EXPECT_EQ(empty.n_vertices(), 0);
  EXPECT_EQ(empty.n_edges(), 0);
  EXPECT_EQ(empty.memory_bytes(), 0);
  const Outcome r = rank_graph<double>(empty, Call{});
  EXPECT_TRUE(r.result.converged);
  EXPECT_EQ(r.result.n_iter, 0);
  Edges edgeless;
  edgeless.n = 4;  // every vertex dangling: uniform ranks
  gpuml::Graph flat = build_graph(ctx, edgeless, true, DType::float32);
  const Outcome u = rank_graph<double>(flat, Call{});
  for (double v : u.x) EXPECT_EQ(v, 0.25);
}

// The message of the gpuml::Error `f` throws, checked for its code.
template <typename F>
std::string error_message(F&& f, ErrorCode code) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "expected an error";
  return "";
}

TEST(PageRankGraph, BadInput) {
  Context ctx = Context::cpu();
  Edges g;
  g.n = 3;
  g.src = {0, 1, 2, 2};
  g.dst = {1, 2, 0, 1};
  g.w = {1, 2, 3, 1};
  const ArrayView src = host_view(g.src.data(), 4), dst = host_view(g.dst.data(), 4), w = host_view(g.w.data(), 4);
  auto has = [](const std::string& message, const std::string& word) {
    EXPECT_NE(message.find(word), std::string::npos) << "\"" << message << "\" does not name " << word;
  };
  // Building.
  Edges bad = g;
  bad.dst[2] = 3;
  has(error_message([&] { build_graph(ctx, bad, false, DType::float64); }, ErrorCode::invalid_argument), "n_vertices = 3");
  bad = g;
  bad.src[1] = -1;
  has(error_message([&] { build_graph(ctx, bad, false, DType::float64); }, ErrorCode::invalid_argument), ">= 0");
  bad = g;
  bad.w[0] = -1;
  has(error_message([&] { build_graph(ctx, bad, true, DType::float64); }, ErrorCode::invalid_argument), "weights");
  bad.w[0] = std::nan("");
  has(error_message([&] { build_graph(ctx, bad, true, DType::float64); }, ErrorCode::invalid_argument), "weights");
  const ArrayView short_w = host_view(g.w.data(), 3);
  has(error_message([&] { gpuml::Graph(ctx, 3, src, dst, &short_w); }, ErrorCode::invalid_argument), "weights");
  has(error_message([&] { gpuml::Graph(ctx, 3, src, host_view(g.dst.data(), 3), nullptr); }, ErrorCode::invalid_argument),
      "same length");
  has(error_message([&] { gpuml::Graph(ctx, 3, src, dst, &w, DType::int32); }, ErrorCode::invalid_argument), "precision");
  has(error_message([&] { gpuml::Graph(ctx, -1, src, dst, nullptr); }, ErrorCode::invalid_argument), "n_vertices");
  has(error_message([&] { gpuml::Graph(ctx, 0, src, dst, nullptr); }, ErrorCode::invalid_argument), "n_vertices = 0");
  has(error_message([&] { gpuml::Graph(ctx, int64_t{1} << 31, src, dst, nullptr); }, ErrorCode::unsupported), "n_vertices");
  has(error_message([&] { gpuml::Graph(ctx, 3, w, dst, nullptr); }, ErrorCode::invalid_argument), "src");

  // Ranking: each refused call leaves ranks_out alone, and the graph then ranks as before.
  gpuml::Graph graph(ctx, 3, src, dst, &w);
  const Outcome before = rank_graph<double>(graph, Call{});
  std::vector<double> ranks(3, -7.0), two = {1.0, 1.0}, zeros(3, 0.0), negative = {1.0, -1.0, 1.0};
  const ArrayView out = host_view(ranks.data(), 3), pv2 = host_view(two.data(), 2), zv = host_view(zeros.data(), 3),
                  nv = host_view(negative.data(), 3);
  const PageRankParams params;
  has(error_message([&] { graph.pagerank(&pv2, nullptr, nullptr, params, out); }, ErrorCode::invalid_argument),
      "personalization has length 2");
  has(error_message([&] { graph.pagerank(nullptr, &pv2, nullptr, params, out); }, ErrorCode::invalid_argument), "nstart");
  has(error_message([&] { graph.pagerank(nullptr, nullptr, &pv2, params, out); }, ErrorCode::invalid_argument), "dangling");
  has(error_message([&] { graph.pagerank(&zv, nullptr, nullptr, params, out); }, ErrorCode::invalid_argument),
      "positive (finite) sum");
  has(error_message([&] { graph.pagerank(&nv, nullptr, nullptr, params, out); }, ErrorCode::invalid_argument),
      "non-negative");
  has(error_message([&] { graph.pagerank(nullptr, nullptr, nullptr, params, host_view(ranks.data(), 2)); },
                    ErrorCode::invalid_argument),
      "ranks_out");
  std::vector<int64_t> int_out(3);
  has(error_message([&] { graph.pagerank(nullptr, nullptr, nullptr, params, host_view(int_out.data(), 3)); },
                    ErrorCode::invalid_argument),
      "ranks_out");
  for (double alpha : {0.0, 1.0, std::nan("")}) {
    PageRankParams p;
    p.alpha = alpha;
    has(error_message([&] { graph.pagerank(nullptr, nullptr, nullptr, p, out); }, ErrorCode::invalid_argument), "alpha");
  }
  PageRankParams few;
  few.max_iter = 1;
  has(error_message([&] { graph.pagerank(nullptr, nullptr, nullptr, few, out); }, ErrorCode::not_converged), "max_iter");
  for (double v : ranks) EXPECT_EQ(v, -7.0);
  EXPECT_EQ(rank_graph<double>(graph, Call{}).x, before.x);

  // A moved-from graph refuses every call; the one it moved to works.
  gpuml::Graph moved = std::move(graph);
  has(error_message([&] { rank_graph<double>(graph, Call{}); }, ErrorCode::invalid_argument), "moved from");
  has(error_message([&] { (void)graph.n_vertices(); }, ErrorCode::invalid_argument), "moved from");
  EXPECT_EQ(rank_graph<double>(moved, Call{}).x, before.x);
  graph = std::move(moved);
  EXPECT_EQ(rank_graph<double>(graph, Call{}).x, before.x);
}

// ---- the CUDA backend against the CPU backend ------------------------------------------------

TEST(PageRankGpu, MatchesCpu) {
  GPUML_CUDA_CONTEXT_OR_SKIP(gpu);
  GPUML_FRESH_RNG(rng);
  Context cpu = Context::cpu();
  for (int trial = 0; trial < 12; ++trial) {
    SCOPED_TRACE("trial " + std::to_string(trial));
    // Small graphs, and larger ones with hubs (long rows are split into pieces summed apart) and,
    // in every other one, edges only among the first tenth of the vertices (long runs of empty rows).
    const int64_t n = trial < 6 ? uniform_int(rng, 1, 50) : uniform_int(rng, 1000, 50000);
    const bool weighted = trial % 2 == 1;
    const int64_t used = trial >= 6 && trial % 3 == 0 ? n / 10 : n;
    Edges g = random_graph(rng, used, uniform_int(rng, 0, 8 * used), weighted);
    g.n = n;
    if (trial >= 6)
      for (int hub = 0; hub < 2; ++hub) {  // hubs of in-degree 1k..40k (rows of 1 to 20 pieces)
        const int64_t hub_id = uniform_int(rng, 0, used - 1), degree = uniform_int(rng, 1000, 40000);
        for (int64_t e = 0; e < degree; ++e) {
          g.src.push_back(uniform_int(rng, 0, n - 1));
          g.dst.push_back(hub_id);
          g.w.push_back(uniform_real(rng, 0.0, 2.0));
        }
      }
    if (trial >= 6)
      for (int hub = 0; hub < 3; ++hub) {  // sources of out-degree 64..20k: the CUDA backend's hubs
        const int64_t from = uniform_int(rng, 0, used - 1), degree = uniform_int(rng, 64, 20000);
        for (int64_t e = 0; e < degree; ++e) {
          g.src.push_back(from);
          g.dst.push_back(uniform_int(rng, 0, n - 1));
          g.w.push_back(uniform_real(rng, 0.0, 2.0));
        }
      }
    std::vector<double> pers = random_vector(rng, n, true), dang = random_vector(rng, n, true);
    const std::vector<double>* pp = trial % 3 == 0 ? &pers : nullptr;
    const std::vector<double>* dp = trial % 4 == 1 ? &dang : nullptr;
    PageRankParams params;
    params.tol = 1e-12;
    params.max_iter = 1000;
    const Outcome c = run_pagerank<double>(cpu, g, weighted, pp, nullptr, dp, params);
    const Outcome d = run_pagerank<double>(gpu, g, weighted, pp, nullptr, dp, params, trial % 2 == 0);
    EXPECT_TRUE(d.result.converged);
    // float64: only the order of each row's sum differs (GPU lanes vs one CPU thread).
    EXPECT_LE(l1(d.x, c.x), 1e-12);
    EXPECT_LE(std::llabs(d.result.n_iter - c.result.n_iter), 1);
    PageRankParams p32;
    const Outcome c32 = run_pagerank<float>(cpu, g, weighted, pp, nullptr, dp, p32);
    const Outcome d32 = run_pagerank<float>(gpu, g, weighted, pp, nullptr, dp, p32);
    // float32 ranks, sums in double on both: per-value differences of an ulp or so.
    EXPECT_LE(l1(d32.x, c32.x), 1e-5);
  }
}

// The weighted float64 ranks of g on the GPU and the CPU, to convergence: as in MatchesCpu.
void expect_weighted_float64_matches_cpu(Context& gpu, const Edges& g) {
  Context cpu = Context::cpu();
  PageRankParams params;
  params.tol = 1e-12;
  params.max_iter = 1000;
  const Outcome c = run_pagerank<double>(cpu, g, true, nullptr, nullptr, nullptr, params);
  const Outcome d = run_pagerank<double>(gpu, g, true, nullptr, nullptr, nullptr, params);
  EXPECT_TRUE(d.result.converged);
  EXPECT_LE(l1(d.x, c.x), 1e-12);  // float64: only the order of each row's sum differs
  EXPECT_LE(std::llabs(d.result.n_iter - c.result.n_iter), 1);
}

// More sources of out-degree >= 64 than the CUDA backend keeps as hubs (16384 for float32, 8192
// for float64): the rest go through the regions, and both kinds of edge meet at every destination.
TEST(PageRankGpu, MoreHubCandidatesThanRoom) {
  GPUML_CUDA_CONTEXT_OR_SKIP(gpu);
  GPUML_FRESH_RNG(rng);
  Context cpu = Context::cpu();
  Edges g;
  g.n = 30000;
  for (int64_t v = 0; v < g.n; ++v) {
    const int64_t degree = uniform_real(rng, 0, 1) < 0.05 ? 0 : uniform_int(rng, 32, 160);  // some dangling
    for (int64_t e = 0; e < degree; ++e) {
      g.src.push_back(v);
      g.dst.push_back(uniform_real(rng, 0, 1) < 0.3 ? uniform_int(rng, 0, 99) : uniform_int(rng, 0, g.n - 1));
      g.w.push_back(uniform_real(rng, 0.0, 2.0));
    }
  }
  expect_weighted_float64_matches_cpu(gpu, g);
  const Outcome c32 = run_pagerank<float>(cpu, g, false, nullptr, nullptr, nullptr, PageRankParams{});
  const Outcome d32 = run_pagerank<float>(gpu, g, false, nullptr, nullptr, nullptr, PageRankParams{});
  EXPECT_LE(std::llabs(d32.result.n_iter - c32.result.n_iter), 1);
  EXPECT_LE(l1(d32.x, c32.x), 1e-5);  // float32: as in MatchesCpu
}

// The CUDA backend sums each vertex's out-weights as integers in units of its largest weight's
// exponent - 63 (fixed_sum_kernel). Weights over 60 decades, zeros among them, and sources whose
// one large weight sits among thousands of tiny ones must still give the CPU's ranks.
TEST(PageRankGpu, WeightsOfManyMagnitudes) {
  GPUML_CUDA_CONTEXT_OR_SKIP(gpu);
  GPUML_FRESH_RNG(rng);
  Edges g;
  g.n = 5000;
  for (int64_t v = 0; v < g.n; ++v) {
    const int64_t degree = v < 20 ? uniform_int(rng, 1000, 5000) : uniform_int(rng, 0, 12);
    for (int64_t e = 0; e < degree; ++e) {
      g.src.push_back(v);
      g.dst.push_back(uniform_int(rng, 0, g.n - 1));
      const double decade = v < 20 ? (e == 0 ? 10.0 : uniform_real(rng, -30, -10)) : uniform_real(rng, -30, 30);
      g.w.push_back(uniform_real(rng, 0, 1) < 0.05 ? 0.0 : std::pow(10.0, decade) * uniform_real(rng, 1.0, 9.0));
    }
  }
  expect_weighted_float64_matches_cpu(gpu, g);
}

// The CUDA backend's sums are exact fixed-point integers, so the order in which the blocks' lanes
// add them cannot matter: two runs, on fresh contexts, give the same bits. A skewed graph (hubs,
// many ranges, destinations shared by many warps at once) makes the orders differ between runs.
TEST(PageRankGpu, SameBitsOnEveryRun) {
  GPUML_CUDA_CONTEXT_OR_SKIP(gpu);
  GPUML_FRESH_RNG(rng);
  Edges g;
  g.n = 300000;
  for (int64_t e = 0; e < 4000000; ++e) {
    const double u = uniform_real(rng, 0, 1), v = uniform_real(rng, 0, 1);
    g.src.push_back(static_cast<int64_t>(static_cast<double>(g.n) * u * u * u));  // low ids send most
    g.dst.push_back(static_cast<int64_t>(static_cast<double>(g.n) * v * v));
    g.w.push_back(uniform_real(rng, 0.0, 2.0));
  }
  for (bool weighted : {false, true}) {
    SCOPED_TRACE(weighted ? "weighted" : "unweighted");
    Context other = Context::cuda(gpu.device().id);
    const Outcome a = run_pagerank<float>(gpu, g, weighted, nullptr, nullptr, nullptr, PageRankParams{});
    const Outcome b = run_pagerank<float>(other, g, weighted, nullptr, nullptr, nullptr, PageRankParams{});
    EXPECT_EQ(a.x, b.x);
    EXPECT_EQ(a.result.n_iter, b.result.n_iter);
    const Outcome c = run_pagerank<double>(gpu, g, weighted, nullptr, nullptr, nullptr, PageRankParams{});
    const Outcome d = run_pagerank<double>(other, g, weighted, nullptr, nullptr, nullptr, PageRankParams{});
    EXPECT_EQ(c.x, d.x);
    EXPECT_EQ(c.result.n_iter, d.result.n_iter);
  }
}

TEST(PageRankGpu, DeviceInputsAndOutput) {
  GPUML_CUDA_CONTEXT_OR_SKIP(gpu);
  GPUML_FRESH_RNG(rng);
  Context cpu = Context::cpu();
  const Edges g = random_graph(rng, 2000, 10000, true);
  const int64_t m = static_cast<int64_t>(g.src.size());
  std::vector<double> host_ranks(static_cast<std::size_t>(g.n));
  const ArrayView hw = host_view(g.w.data(), m);
  const PageRankResult ref = pagerank(cpu, g.n, host_view(g.src.data(), m), host_view(g.dst.data(), m), &hw, nullptr,
                                      nullptr, nullptr, PageRankParams{}, host_view(host_ranks.data(), g.n));
  const std::vector<int32_t> s32(g.src.begin(), g.src.end());
  Buffer s = test::to_device(gpu, s32), d = test::to_device(gpu, g.dst), w = test::to_device(gpu, g.w);
  Buffer out(gpu, g.n * sizeof(double));
  const ArrayView ds = make_view(s.data(), DType::int32, gpu.device(), m);
  const ArrayView dd = make_view(d.data(), DType::int64, gpu.device(), m);
  const ArrayView dw = make_view(w.data(), DType::float64, gpu.device(), m);
  const PageRankResult r = pagerank(gpu, g.n, ds, dd, &dw, nullptr, nullptr, nullptr, PageRankParams{},
                                    make_view(out.data(), DType::float64, gpu.device(), g.n));
  const std::vector<double> back = test::to_host<double>(gpu, out, static_cast<std::size_t>(g.n));
  EXPECT_LE(std::llabs(r.n_iter - ref.n_iter), 1);
  EXPECT_LE(l1(back, host_ranks), 1e-6);  // float64 at the default tol: at most one iteration apart
  // Bad ids on the device are found by the device summary.
  std::vector<int64_t> bad_dst = g.dst;
  bad_dst[m / 2] = g.n;
  Buffer bd = test::to_device(gpu, bad_dst);
  GPUML_EXPECT_ERROR(pagerank(gpu, g.n, ds, make_view(bd.data(), DType::int64, gpu.device(), m), &dw, nullptr, nullptr,
                              nullptr, PageRankParams{}, make_view(out.data(), DType::float64, gpu.device(), g.n)),
                     ErrorCode::invalid_argument);
}

// A graph on the GPU ranked many times: every call equals the one-shot function on the GPU bit for
// bit and the CPU within rounding. The CUDA backend skips a pass when an iteration's x is the last
// one's x_new (a pointer it keeps): each call's vectors are new buffers, which the pool may place
// where the last call's x_new was, with other values. Calls of 1, 2 or 3 iterations (odd and even:
// x and x_new end in either buffer) and different nstart each time make stale terms show.
TEST(PageRankGraphGpu, ReusedMatchesOneShotAndCpu) {
  GPUML_CUDA_CONTEXT_OR_SKIP(gpu);
  GPUML_FRESH_RNG(rng);
  Context cpu = Context::cpu();
  Edges g = random_graph(rng, 20000, 200000, true);
  for (int hub = 0; hub < 3; ++hub) {  // sources of out-degree >= 64: the CUDA backend's hubs
    const int64_t from = uniform_int(rng, 0, g.n - 1);
    for (int64_t e = 0; e < 5000; ++e) {
      g.src.push_back(from);
      g.dst.push_back(uniform_int(rng, 0, g.n - 1));
      g.w.push_back(uniform_real(rng, 0.0, 2.0));
    }
  }
  for (DType precision : {DType::float64, DType::float32}) {
    SCOPED_TRACE(dtype_name(precision));
    gpuml::Graph on_gpu = build_graph(gpu, g, true, precision);
    gpuml::Graph on_cpu = build_graph(cpu, g, true, precision);
    EXPECT_GT(on_gpu.memory_bytes(), 0);
    std::vector<std::vector<double>> starts;
    for (int i = 0; i < 4; ++i) starts.push_back(random_vector(rng, g.n, i % 2 == 1));
    std::vector<double> pers = random_vector(rng, g.n, true);
    for (int call = 0; call < 24; ++call) {
      SCOPED_TRACE("call " + std::to_string(call));
      Call c;
      c.nstart = &starts[call % 4];
      if (call % 5 == 2) c.pers = &pers;
      c.params.max_iter = call % 3 + 1;
      c.params.allow_unconverged = true;
      if (call % 6 == 5) {  // to convergence now and then
        c.params.max_iter = 1000;
        c.params.tol = precision == DType::float64 ? 1e-12 : 1e-6;
      }
      const bool f64 = precision == DType::float64;
      const Outcome mine = f64 ? rank_graph<double>(on_gpu, c) : rank_graph<float>(on_gpu, c);
      const Outcome once = f64 ? run_pagerank<double>(gpu, g, true, c.pers, c.nstart, nullptr, c.params)
                               : run_pagerank<float>(gpu, g, true, c.pers, c.nstart, nullptr, c.params);
      EXPECT_EQ(mine.x, once.x);  // a fresh backend on the same device: the same bits
      EXPECT_EQ(mine.result.n_iter, once.result.n_iter);
      const Outcome host = f64 ? rank_graph<double>(on_cpu, c) : rank_graph<float>(on_cpu, c);
      // As PageRankGpu.MatchesCpu: float64 differs by the order of each row's sum only; float32
      // by an ulp or so per value.
      EXPECT_LE(l1(mine.x, host.x), f64 ? 1e-12 : 1e-5);
      if (c.params.max_iter < 1000) EXPECT_EQ(mine.result.n_iter, c.params.max_iter);
    }
    // A float64 output from a float32 graph and the reverse, on the device memory too.
    Call c;
    Buffer out(gpu, static_cast<std::size_t>(g.n) * sizeof(double));
    const PageRankResult r = on_gpu.pagerank(nullptr, nullptr, nullptr, c.params,
                                             make_view(out.data(), DType::float64, gpu.device(), g.n));
    const Outcome host = rank_graph<double>(on_cpu, c);
    EXPECT_TRUE(r.converged);
    EXPECT_LE(l1(test::to_host<double>(gpu, out, static_cast<std::size_t>(g.n)), host.x), 1e-5);
  }
}

}  // namespace
}  // namespace gpuml

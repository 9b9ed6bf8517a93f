#pragma once
// PageRank over an edge list, with NetworkX's semantics (networkx.pagerank): the same
// parameters, normalizations, dangling-vertex rule and stopping test, so results can be
// checked against it.
#include <cstdint>

#include "gpuml/core/array.hpp"
#include "gpuml/core/context.hpp"
#include "gpuml/core/export.hpp"

namespace gpuml {

// networkx.pagerank's parameters, same names and defaults.
struct PageRankParams {
  double alpha = 0.85;             // damping factor, in (0, 1)
  int64_t max_iter = 100;          // >= 0
  double tol = 1e-6;               // stop when sum |x - x_last| < n_vertices * tol
  bool allow_unconverged = false;  // false: not converging in max_iter is ErrorCode::not_converged
};

struct PageRankResult {
  int64_t n_iter = 0;      // power iterations done
  bool converged = false;
};

// Ranks of the vertices 0..n_vertices-1 of the graph with edges src[e] -> dst[e].
//
// - src, dst: 1-d int32 or int64 arrays of the same length, ids in [0, n_vertices), in host or
//   device memory. Duplicate edges add their weights; self-loops count as out-edges.
// - weights (or nullptr: every edge weighs 1): 1-d, one per edge, finite and >= 0. An edge's
//   share of its source's rank is its weight over the source's weighted out-degree; vertices
//   whose weighted out-degree is 0 are dangling.
// - personalization (or nullptr: uniform), nstart (or nullptr: uniform), dangling (or nullptr:
//   the personalization vector): 1-d of length n_vertices, finite, >= 0, with a positive sum;
//   each is divided by its sum, as NetworkX does with its dicts.
// - ranks_out: 1-d float32 or float64 of length n_vertices, in host or device memory; its dtype
//   is the precision of the computation (sums are accumulated in double either way).
//
// Errors: invalid_argument (naming the argument) for bad input; not_converged when the
// iteration did not converge and params.allow_unconverged is false (ranks_out is then left
// unwritten); with allow_unconverged the last iterate is written and converged is false.
// n_vertices == 0 returns {0, true} at once, as NetworkX returns {} for an empty graph.
//
// This is a gpuml::Graph (gpuml/graph/graph.hpp) built and ranked once: to rank one graph several
// times (personalized PageRank per seed set, several alphas), build the Graph once and call its
// pagerank, which skips the build and gives these ranks bit for bit.
GPUML_API PageRankResult pagerank(Context& ctx, int64_t n_vertices, const ArrayView& src, const ArrayView& dst,
                                  const ArrayView* weights, const ArrayView* personalization,
                                  const ArrayView* nstart, const ArrayView* dangling,
                                  const PageRankParams& params, const ArrayView& ranks_out);

}  // namespace gpuml

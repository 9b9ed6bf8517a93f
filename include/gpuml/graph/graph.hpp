#pragma once
// A graph built once and ranked many times: personalized PageRank per seed set, several alphas or
// starting vectors over the same edges. Building checks the edges and lays them out for the
// backend (the costly part of a one-shot gpuml::pagerank); each pagerank call then runs only the
// power iteration. gpuml::pagerank is this class used once.
#include <cstdint>
#include <memory>

#include "gpuml/core/array.hpp"
#include "gpuml/core/context.hpp"
#include "gpuml/core/export.hpp"
#include "gpuml/graph/pagerank.hpp"

namespace gpuml {

class GPUML_API Graph {
 public:
  // The graph of the edges src[e] -> dst[e] among vertices 0..n_vertices-1, built on ctx, whose
  // device then runs every pagerank call (the graph keeps a copy of the context handle).
  // src, dst and weights are as gpuml::pagerank takes them (int32 or int64 ids in
  // [0, n_vertices), weights finite and >= 0 or nullptr; host or device memory) and are not
  // needed after the constructor returns: the graph keeps the backend's layout only (memory_bytes).
  // precision (float32 or float64) is the type of the ranks during the iteration, fixed here since
  // the layout is built for it (weights are stored in it).
  //
  // Distributed (the context's communicator has several ranks): collective, as gpuml::pagerank;
  // each rank passes its share of the edges and the same n_vertices and precision, and keeps the
  // rows of its range of vertices; every pagerank call is then collective too.
  //
  // Errors: invalid_argument naming the argument, unsupported for n_vertices >= 2^31.
  Graph(Context& ctx, int64_t n_vertices, const ArrayView& src, const ArrayView& dst, const ArrayView* weights,
        DType precision = DType::float64);
  ~Graph();
  Graph(Graph&& other) noexcept;
  Graph& operator=(Graph&& other) noexcept;
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  // PageRank over this graph, as gpuml::pagerank over its edges: personalization, nstart,
  // dangling, params and the result are the same, and so are the bits of the ranks (the same
  // code runs). ranks_out is float32 or float64 whatever the graph's precision: the ranks are
  // computed in dtype() and converted on write when ranks_out's dtype differs.
  // Calls on one Graph must not overlap (the backend keeps scratch between iterations); graphs
  // of one context are used by one thread at a time, as the context is.
  PageRankResult pagerank(const ArrayView* personalization, const ArrayView* nstart, const ArrayView* dangling,
                          const PageRankParams& params, const ArrayView& ranks_out);

  int64_t n_vertices() const;
  int64_t n_edges() const;       // as given (duplicates counted), summed over the ranks
  DType dtype() const;           // the precision
  int64_t memory_bytes() const;  // what the built graph holds (this rank's share), in the context's memory

  // A moved-from Graph may only be destroyed or assigned to: any other call is invalid_argument.
  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpuml

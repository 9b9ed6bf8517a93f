#pragma once
// The tree assembly (src/ensemble/tree_assembly.hpp) over levels kept in a device's memory: the
// CUDA level builder's depth-first trees made where their levels are, then copied to the host once.
#include <future>
#include <vector>

#include "cuda/core/resources.cuh"
#include "ensemble/tree_assembly.hpp"

namespace gpuml::detail {

// assemble_trees_on_host's trees from levels whose logs point into the device's memory (queued on
// res.stream): roots (host, in tree order) are levels[0]'s nodes, each root's tree holds it as
// node 0; each such tree's arrays are resized and copied in from the device's columns (the host's
// `threads` touch the fresh pages and copy each chunk).
void assemble_trees_on_device(Context& ctx, cuda::Resources& res, const std::vector<LevelLog>& levels,
                              const std::vector<LevelNode>& roots, Criterion criterion, int width, const FeatureBins& bins,
                              Tree* trees, int threads);

// Host memory for the node arrays of a written forest of at most `nodes` nodes (k values each),
// allocated before the levels grow (no page touched), touched range after range as the levels make
// nodes (touch_up_to), and copied into at the end. A fit's node arrays are gigabytes at full
// depth: faulting their pages in beside the device's levels keeps that work off the copy back.
struct WrittenForestMemory {
  Buffer feature, left, right, threshold, impurity, n_samples, weighted, value;
  int64_t nodes = 0;
  int k = 1;
  WrittenForestMemory(int64_t most_nodes, int k);
  // The pages of the first `nodes` nodes touched on a thread of its own, after the ranges asked
  // for before (their error, if any, is thrown here or by wait).
  void touch_up_to(int64_t nodes, int threads);
  void wait();

 private:
  void touch(int64_t from, int64_t to, int threads);
  int64_t touched_ = 0;
  std::future<void> touching_;  // last: waited for before the memory goes
};

// LevelBackend::grow_forest's forest (n_trees trees, each holding its root as node 0; roots: those
// searched, levels[0]'s nodes) from its levels in the device's memory, level_splits (depth-major,
// levels x trees) each tree's splits per level: the trees assembled as above, their node arrays
// made from the columns (forest_nodes' fields), the packed forest written level by level (each
// tree's nodes of a depth in breadth-first order, as pack_forest packs grow_tree's trees), the
// importance sums; the node arrays and the sums copied to the host (into `memory`, large enough),
// the packed forest staged on the device (out.staged), not copied.
void write_forest_on_device(Context& ctx, cuda::Resources& res, const std::vector<LevelLog>& levels,
                            const std::vector<LevelNode>& roots, const std::vector<int32_t>& level_splits, const Tree* trees,
                            int64_t n_trees, Criterion criterion, int width, bool classification, const FeatureBins& bins,
                            int threads, WrittenForestMemory& memory, WrittenForest& out);

}  // namespace gpuml::detail

#pragma once
// The tree assembly (src/ensemble/tree_assembly.hpp) over levels kept in a device's memory: the
// CUDA level builder's depth-first trees made where their levels are, then copied to the host once.
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

}  // namespace gpuml::detail

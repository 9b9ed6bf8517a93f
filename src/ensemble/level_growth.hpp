#pragma once
// How the nodes of one level of depth-first growth become the next level's (LevelBackend::
// grow_levels, levelwise.hpp): which splits are made, the children's statistics and seeds, and
// which children are searched in turn. Plain inline functions for host code and kernels alike,
// so that the host driver and a backend that keeps the levels on the device decide with the same
// bits (criteria.hpp's formulas); grow_tree's rules are these too.
#include <cfloat>
#include <cstdint>

#include "criteria.hpp"

namespace gpuml::detail {

// grow_tree's rules on whether a node is searched at all.
struct LevelGrowth {
  Criterion criterion = Criterion::gini;
  int width = 2;  // statistics per node
  int64_t max_depth = -1;  // < 0: none
  int64_t min_samples_split = 2;
  int64_t min_samples_leaf = 1;
  double min_impurity_decrease = 0.0;
};

// Whether a node stays a leaf before any search: depth, rows, purity.
GPUML_HOST_DEVICE inline bool leaf_before_search(int64_t max_depth, int64_t min_samples_split, int64_t min_samples_leaf,
                                                 int64_t depth, int64_t rows, double impurity) {
  return (max_depth >= 0 && depth >= max_depth) || rows < min_samples_split || rows < 2 * min_samples_leaf ||
         impurity <= DBL_EPSILON;
}

// A child's seed (side 1 left, 2 right): splitmix64's finalizer of seed ^ side.
GPUML_HOST_DEVICE inline uint64_t child_seed(uint64_t seed, int side) {
  uint64_t x = seed ^ static_cast<uint64_t>(side);
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// What became of a searched node: its split made, and which children are searched next.
enum LevelFlag : uint8_t { kSplitMade = 1, kLeftSearched = 2, kRightSearched = 4 };

// The flags of a node at `depth` with statistics `node` whose search found (found) a split of
// this improvement, row counts and left statistics; right gets node - left when the split is made.
GPUML_HOST_DEVICE inline uint8_t level_flags(const LevelGrowth& g, int64_t depth, bool found, double improvement,
                                             int64_t left_rows, int64_t right_rows, const double* node, const double* left,
                                             double* right) {
  if (!found || improvement + DBL_EPSILON < g.min_impurity_decrease) return 0;
  for (int c = 0; c < g.width; ++c) right[c] = sub_rn(node[c], left[c]);
  uint8_t flags = kSplitMade;
  if (!leaf_before_search(g.max_depth, g.min_samples_split, g.min_samples_leaf, depth + 1, left_rows,
                          stats_impurity(g.criterion, left, g.width)))
    flags |= kLeftSearched;
  if (!leaf_before_search(g.max_depth, g.min_samples_split, g.min_samples_leaf, depth + 1, right_rows,
                          stats_impurity(g.criterion, right, g.width)))
    flags |= kRightSearched;
  return flags;
}

}  // namespace gpuml::detail

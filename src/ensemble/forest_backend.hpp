#pragma once
// The primitives a backend provides for the random forests (the estimator's driver is
// src/ensemble/random_forest.cpp; docs/random_forest.md has the plan for the fit's primitives).
#include <cstdint>
#include <memory>

#include "ensemble/forest_layout.hpp"
#include "ensemble/sparse_lines.hpp"
#include "gpuml/core/array.hpp"
#include "gpuml/core/context.hpp"
#include "gpuml/core/export.hpp"

namespace gpuml::detail {

// A packed forest where a backend predicts with it, made once for every later predict there (the
// estimator keeps one per device): copied into a device's memory (or written there by the fit:
// forest_nodes.hpp), or on the CPU the packed forest itself.
struct StagedForest {
  Buffer nodes, roots, values;
  std::shared_ptr<const PackedForest> host;  // the CPU backend's
  int64_t n_trees = 0;
  int k = 1;
};

template <typename T>
class ForestBackend {
 public:
  virtual ~ForestBackend() = default;
  // The forest in this backend's memory (complete when this returns).
  virtual std::shared_ptr<const StagedForest> stage(std::shared_ptr<const PackedForest> forest) = 0;
  // out (n x k doubles, the context's memory) = the mean over the trees, in tree order, of the
  // value rows of the leaves the rows of X (n x d, the context's memory) fall in; `staged` is this
  // backend's.
  virtual void predict(const StagedForest& staged, const T* X, int64_t n, int64_t d, double* out) = 0;
};

// predict on sparse X (canonical CSR, host memory; CPU contexts only): out (n x forest.k, host)
// as the CPU backend's predict gives for the dense matrix with the same values, bit for bit.
void forest_predict_sparse(const PackedForest& forest, const SparseLines& X, double* out, int threads);

template <typename T> GPUML_API std::unique_ptr<ForestBackend<T>> make_forest_cpu_backend(const Context& ctx);
template <typename T> GPUML_API std::unique_ptr<ForestBackend<T>> make_forest_cuda_backend(const Context& ctx);

}  // namespace gpuml::detail

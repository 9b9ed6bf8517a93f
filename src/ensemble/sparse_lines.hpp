#pragma once
// Sparse X as the random forests read it (any context; always in host memory): a canonical copy in one storage
// order, CSC to bin the features column by column, CSR to walk rows down the trees. Indices are
// widened to int64 and values to double once (a float32 value is exact as a double, and the
// trees compare values as doubles, as they do for dense X), so the readers are not templates.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "gpuml/core/export.hpp"
#include "gpuml/core/sparse.hpp"

namespace gpuml {
class Context;
}

namespace gpuml::detail {

struct SparseLines {
  SparseFormat format = SparseFormat::csc;
  int64_t rows = 0, cols = 0;
  std::vector<int64_t> indptr;   // major() + 1 entries
  std::vector<int64_t> indices;  // strictly increasing within each line (duplicates summed)
  std::vector<double> values;

  int64_t major() const { return format == SparseFormat::csr ? rows : cols; }
  // The entry at (line, other) of the compressed order (CSR: row, column; CSC: column, row): the
  // stored value, or 0 where nothing is stored (binary search in the line's sorted indices).
  double at(int64_t line, int64_t other) const {
    const int64_t* first = indices.data() + indptr[line];
    const int64_t* last = indices.data() + indptr[line + 1];
    const int64_t* it = std::lower_bound(first, last, other);
    return it != last && *it == other ? values[it - indices.data()] : 0.0;
  }
  // X[i, j] whatever the order.
  double value(int64_t i, int64_t j) const { return format == SparseFormat::csr ? at(i, j) : at(j, i); }
};

// X checked (validate_sparse's errors, naming `what`) and canonicalized in `format`, in host
// memory whatever the context (X in device memory is copied to the host).
GPUML_API SparseLines sparse_lines(const Context& ctx, const SparseView& X, SparseFormat format, const char* what);

}  // namespace gpuml::detail

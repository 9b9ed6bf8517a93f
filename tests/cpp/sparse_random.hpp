#pragma once
// Fresh random sparse matrices for the sparse tests: CSR or CSC, float64 values in [-2, 2], a
// duplicate and unsorted indices in every non-empty row (CSR) or column (CSC), row 1 and column 2
// empty, beside the dense matrix they stand for (duplicates summed).
#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "gpuml/gpuml.hpp"

namespace gpuml::test {

template <typename I>
struct RandomSparse {
  int64_t rows = 0, cols = 0;
  SparseFormat format = SparseFormat::csr;
  std::vector<I> indptr, indices;
  std::vector<double> values, dense;  // dense: rows x cols, row-major
  SparseView view() const {
    SparseView v;
    v.format = format;
    v.dtype = DType::float64;
    v.index_dtype = dtype_of<I>::value;
    v.shape[0] = rows;
    v.shape[1] = cols;
    v.nnz = static_cast<int64_t>(values.size());
    v.indptr = indptr.data();
    v.indices = indices.data();
    v.values = values.data();
    return v;
  }
};

template <typename I>
RandomSparse<I> random_sparse(std::mt19937_64& rng, int64_t rows, int64_t cols, double density, SparseFormat format) {
  RandomSparse<I> m;
  m.rows = rows;
  m.cols = cols;
  m.format = format;
  m.dense.assign(static_cast<std::size_t>(rows * cols), 0.0);
  const bool csr = format == SparseFormat::csr;
  const int64_t major = csr ? rows : cols, minor = csr ? cols : rows;
  std::uniform_real_distribution<double> unit(0.0, 1.0), value(-2.0, 2.0);
  m.indptr.push_back(0);
  for (int64_t i = 0; i < major; ++i) {
    std::vector<I> line;
    for (int64_t j = 0; j < minor; ++j) {
      const int64_t r = csr ? i : j, c = csr ? j : i;
      if (r != 1 && c != 2 && unit(rng) < density) line.push_back(static_cast<I>(j));  // row 1, column 2 empty
    }
    if (!line.empty()) line.push_back(line[rng() % line.size()]);  // a duplicate
    std::shuffle(line.begin(), line.end(), rng);                  // unsorted
    for (I j : line) {
      const double v = value(rng);
      m.indices.push_back(j);
      m.values.push_back(v);
      m.dense[static_cast<std::size_t>(csr ? i * cols + j : j * cols + i)] += v;
    }
    m.indptr.push_back(static_cast<I>(m.indices.size()));
  }
  return m;
}

}  // namespace gpuml::test

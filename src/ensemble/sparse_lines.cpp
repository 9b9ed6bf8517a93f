#define EIGEN_DONT_PARALLELIZE  // as every unit of the library that uses Eigen (sparse_eigen.hpp)
#include "ensemble/sparse_lines.hpp"


#include "core/sparse_eigen.hpp"
#include "gpuml/core/context.hpp"
#include "gpuml/core/error.hpp"

namespace gpuml::detail {

SparseLines sparse_lines(const Context& ctx, const SparseView& X, SparseFormat format, const char* what) {
  // On a CUDA context too: canonicalize copies device X to the host, where the forests bin and walk it.
  const SparseHostMatrix canonical = canonicalize(ctx, X, what);
  const SparseView v = canonical.view();
  SparseLines out;
  out.format = v.format;
  out.rows = v.rows();
  out.cols = v.cols();
  with_sparse_types(v.dtype, v.index_dtype, [&](auto t, auto i) {
    using T = decltype(t);
    using I = decltype(i);
    const auto* indptr = static_cast<const I*>(v.indptr);
    const auto* indices = static_cast<const I*>(v.indices);
    const auto* values = static_cast<const T*>(v.values);
    out.indptr.assign(indptr, indptr + v.major() + 1);
    out.indices.assign(indices, indices + v.nnz);
    out.values.assign(values, values + v.nnz);
  });
  if (out.format == format) return out;
  // The other order by a counting sort over the new lines; reading the old lines in order keeps
  // each new line's indices increasing.
  SparseLines flipped;
  flipped.format = format;
  flipped.rows = out.rows;
  flipped.cols = out.cols;
  const int64_t lines = flipped.major(), nnz = static_cast<int64_t>(out.values.size());
  flipped.indptr.assign(static_cast<std::size_t>(lines + 1), 0);
  for (int64_t k = 0; k < nnz; ++k) ++flipped.indptr[out.indices[k] + 1];
  for (int64_t l = 0; l < lines; ++l) flipped.indptr[l + 1] += flipped.indptr[l];
  flipped.indices.resize(static_cast<std::size_t>(nnz));
  flipped.values.resize(static_cast<std::size_t>(nnz));
  std::vector<int64_t> next(flipped.indptr.begin(), flipped.indptr.end() - 1);
  for (int64_t line = 0; line < out.major(); ++line)
    for (int64_t k = out.indptr[line]; k < out.indptr[line + 1]; ++k) {
      const int64_t at = next[out.indices[k]]++;
      flipped.indices[at] = line;
      flipped.values[at] = out.values[k];
    }
  return flipped;
}

}  // namespace gpuml::detail

#pragma once
// The parameters of the randomized SVD that PCA and TruncatedSVD share, as rows of their
// parameter tables (core/param_table.hpp), in scikit-learn's order.
#include <vector>

#include "core/param_table.hpp"

namespace gpuml::detail {

template <class P>
std::vector<ParamRow<P>> randomized_svd_rows() {
  return {
      field("n_oversamples", &P::n_oversamples, {integer_in(1)},
            "The randomized SVD's extra test vectors; at most 2^53 (more than min(n_samples, n_features) "
            "add nothing: Python passes larger values as 2^53)."),
      field("power_iteration_normalizer", &P::power_iteration_normalizer, {one_of({"auto", "QR", "LU", "none"})},
            "Accepted, without effect: the randomized power iterations always orthonormalize (the subspace "
            "of LU or none, more stably).")
          .per_rank(),
      field("random_state", &P::random_state, {seed()},
            "The seed of the randomized SVD; null: a fresh one per fit (the context's in C++; unused "
            "over several ranks)."),
  };
}

}  // namespace gpuml::detail

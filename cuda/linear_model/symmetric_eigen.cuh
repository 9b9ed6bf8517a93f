#pragma once
// The top of a small symmetric eigenproblem on the device (cuda/linear_model/symmetric_eigen.cu),
// behind LinearBackend::symmetric_eigen when few eigenvectors are wanted.
#include <cstdint>

#include "gpuml/core/context.hpp"

namespace gpuml::detail {

// For the symmetric m x m M_host (host, double, both triangles): all m eigenvalues ascending into
// values_host, and the unit eigenvectors of the k largest, largest first, into vectors_host
// (vector i, of values_host[m − 1 − i], at vectors_host[i * m, (i + 1) * m)).
void device_symmetric_eigen_top(const Context& ctx, const double* M_host, int64_t m, int64_t k, double* values_host,
                                double* vectors_host);

}  // namespace gpuml::detail

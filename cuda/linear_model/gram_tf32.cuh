#pragma once
// The float32 Gram products of the least-squares family in one pass over X on tensor cores
// (cuda/linear_model/gram_tf32.cu; used by LinearBackend::shifted_gram, see linear_backend.hpp).
#include <cstdint>

#include "cuda/core/resources.cuh"
#include "gpuml/core/context.hpp"

namespace gpuml::detail {

// The most targets the fused pass takes (t + 1 extra columns: the targets and sqrt(w)), and the
// fewest features it is worth its 128-wide tiles for; other shapes take the exact SGEMM route.
inline constexpr int64_t kFusedGramMaxTargets = 7;
inline constexpr int64_t kFusedGramMinFeatures = 64;

// For A = sqrt(w) (X − shift) (X: n x m row-major float on the device; shift: m floats on the
// host or nullptr; w: n floats on the device or nullptr) and B (n x t on the device, t <=
// kFusedGramMaxTargets): gram_host = AᵀA (m x m row-major double, both triangles), cross_host =
// AᵀB (m x t), sums_host = [Σ_i w_i (X_ij − shift_j) for j < m, Σ_i w_i].
void fused_gram_tf32(const Context& ctx, const float* X, int64_t n, int64_t m, const float* shift_host, const float* w,
                     const float* B, int64_t t, double* gram_host, double* cross_host, double* sums_host);

}  // namespace gpuml::detail

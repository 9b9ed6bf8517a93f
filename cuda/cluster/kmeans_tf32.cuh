#pragma once
// KMeans assignment of float32 rows on the tensor cores (TF32), exact: labels and squared
// distances equal, bit for bit, those of the FP32 fused kernel in kmeans.cu. See kmeans_tf32.cu.
#include <cstdint>

#include "cuda/core/resources.cuh"

namespace gpuml::detail {

// The most features the TF32 kernel takes: a block keeps its rows, all features, in shared memory.
inline constexpr int64_t kTf32MaxFeatures = 128;

// For every row of X (n x d, d <= kTf32MaxFeatures; centers k x d, both on the device): the label
// and dist2 that fused_argmin_kernel gives, or, for a row whose TF32 distances leave the winner in
// doubt, nothing but its index appended to recheck_rows (*recheck_count, zeroed by the caller,
// counts them) for the FP32 kernel to assign. center_sqnorms (k) and row_sqnorms (n) are the
// FP32 kernel's own (launch_row_sqnorms). Changed labels of the rows assigned here are added to
// *changes when count_changes is set. The products come from warpgroup MMAs (wgmma) where
// allow_wgmma and tf32_wgmma_available, else from mma.sync; both give the same answers.
void assign_tf32(Context& ctx, cuda::Resources& res, const float* X, int64_t n, int64_t d, const float* centers, int64_t k,
                 const float* center_sqnorms, const float* row_sqnorms, int32_t* labels, float* dist2, bool count_changes,
                 unsigned long long* changes, int64_t* recheck_rows, unsigned long long* recheck_count, bool allow_wgmma);

// Whether the library was built with the sm_90a kernels (CUDA architecture 90a) and res's device runs them.
bool tf32_wgmma_available(const cuda::Resources& res);

}  // namespace gpuml::detail

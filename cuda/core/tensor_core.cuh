#pragma once
// TF32 tensor-core primitives shared by the kernels that use them (gram_tf32.cu, kmeans_tf32.cu):
// mma.sync (sm_80 on) and Hopper's warpgroup MMAs.
#include <cstdint>

namespace gpuml::detail {

// x rounded to the nearest TF32 value (10 explicit mantissa bits; ties away from zero), as a float.
__device__ __forceinline__ float round_to_tf32(float x) {
  uint32_t bits;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(bits) : "f"(x));
  return __uint_as_float(bits);
}

// d += a b on the tensor cores: a 16 x 8 (row), b 8 x 8 (col), TF32 operands, FP32 accumulators
// (mma.sync m16n8k8; the fragments' layout is the PTX ISA's).
__device__ __forceinline__ void mma_tf32(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ void mma_tf32(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  mma_tf32(d, a, b[0], b[1]);
}

// ---- Hopper warpgroup MMA (wgmma; sm_90a) ---------------------------------------------------
// The asm bodies exist only in the sm_90a pass (__CUDA_ARCH_FEAT_SM90_ALL); callers launch their
// wgmma kernels only where kWgmmaBuilt holds and the device is sm_90.
#if defined(GPUML_WGMMA) && GPUML_WGMMA
inline constexpr bool kWgmmaBuilt = true;
#else
inline constexpr bool kWgmmaBuilt = false;
#endif

// A shared-memory matrix descriptor without swizzling: the operand is stored as 8-row x 16-byte
// core matrices, each 128 contiguous bytes; `leading` is the byte step between core matrices
// along K, `stride` the byte step between groups of 8 rows.
__device__ __forceinline__ uint64_t wgmma_descriptor(const void* smem, uint32_t leading, uint32_t stride) {
  const uint64_t addr = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  return ((addr & 0x3FFFF) >> 4) | (uint64_t((leading & 0x3FFFF) >> 4) << 16) | (uint64_t((stride & 0x3FFFF) >> 4) << 32);
}

__device__ __forceinline__ void wgmma_fence() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#endif
}
__device__ __forceinline__ void wgmma_commit() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
#endif
}
__device__ __forceinline__ void wgmma_wait_all() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
#endif
}
// Generic-proxy writes to shared memory (cp.async, st.shared) made visible to the async proxy
// that wgmma reads shared memory through.
__device__ __forceinline__ void fence_async_shared() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
#endif
}
// Pins the accumulators in place around the asynchronous MMAs: the compiler may not move their
// reads or writes across this point.
template <int N>
__device__ __forceinline__ void wgmma_pin(float (&d)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

// d (64 x 64 per warpgroup, fp32) = a b (+ d when accumulate): a 64 x 8 from registers (TF32; per
// warp the m16n8k8 A fragment of its 16 rows), b 8 x 64 from shared memory (descriptor, K-major).
// d's layout per warp is m16n8's C fragment for each of the 8 column blocks of 8: d[4 i + q] is
// row (q >> 1) * 8 + lane / 4, column 8 i + 2 (lane % 4) + (q & 1).
__device__ __forceinline__ void wgmma_m64n64k8_tf32(float (&d)[32], const uint32_t (&a)[4], uint64_t b_desc, bool accumulate) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, {%32, %33, %34, %35}, %36, p, 1, 1;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b_desc), "r"(static_cast<int>(accumulate)));
#else
  (void)d; (void)a; (void)b_desc; (void)accumulate;
  __trap();
#endif
}
// Waits until at most one committed group of this warpgroup's MMAs is still running.
__device__ __forceinline__ void wgmma_wait_all_but_one() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");
#endif
}

}  // namespace gpuml::detail

#pragma once
// TF32 tensor-core primitives shared by the kernels that use them (gram_tf32.cu, kmeans_tf32.cu).
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

}  // namespace gpuml::detail

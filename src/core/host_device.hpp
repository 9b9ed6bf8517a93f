#pragma once
// GPUML_HOST_DEVICE: inline functions that host code and (under nvcc) kernels share, so that
// the CPU and CUDA backends compute with the same formulas.
#if defined(__CUDACC__)
#define GPUML_HOST_DEVICE __host__ __device__
#else
#define GPUML_HOST_DEVICE
#endif

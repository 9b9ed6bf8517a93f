#pragma once
// Symbols marked GPUML_API are exported from libgpuml.so; everything else is hidden.
#if defined(_WIN32)
#define GPUML_API __declspec(dllexport)
#else
#define GPUML_API __attribute__((visibility("default")))
#endif

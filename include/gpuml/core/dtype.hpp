#pragma once
#include <cstddef>
#include <cstdint>

#include "gpuml/core/export.hpp"

namespace gpuml {

// Values match gpuml_dtype_t in the C ABI.
enum class DType : int32_t { float32 = 0, float64 = 1, int32 = 2, int64 = 3 };

GPUML_API std::size_t dtype_size(DType dtype);
GPUML_API const char* dtype_name(DType dtype) noexcept;
GPUML_API bool is_valid_dtype(int32_t value) noexcept;
inline bool is_floating(DType dtype) { return dtype == DType::float32 || dtype == DType::float64; }

template <typename T> struct dtype_of;
template <> struct dtype_of<float> { static constexpr DType value = DType::float32; };
template <> struct dtype_of<double> { static constexpr DType value = DType::float64; };
template <> struct dtype_of<int32_t> { static constexpr DType value = DType::int32; };
template <> struct dtype_of<int64_t> { static constexpr DType value = DType::int64; };

}  // namespace gpuml

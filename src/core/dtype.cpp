#include "gpuml/core/dtype.hpp"

#include "gpuml/core/error.hpp"

namespace gpuml {

std::size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::float32: return 4;
    case DType::float64: return 8;
    case DType::int32: return 4;
    case DType::int64: return 8;
  }
  throw_error(ErrorCode::invalid_argument, "unknown dtype code " + std::to_string(static_cast<int>(dtype)));
}

const char* dtype_name(DType dtype) noexcept {
  switch (dtype) {
    case DType::float32: return "float32";
    case DType::float64: return "float64";
    case DType::int32: return "int32";
    case DType::int64: return "int64";
  }
  return "unknown";
}

bool is_valid_dtype(int32_t value) noexcept { return value >= 0 && value <= 3; }

}  // namespace gpuml

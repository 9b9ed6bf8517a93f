#include "gpuml/core/error.hpp"

namespace gpuml {

const char* error_code_name(ErrorCode code) noexcept {
  switch (code) {
    case ErrorCode::invalid_argument: return "invalid_argument";
    case ErrorCode::not_fitted: return "not_fitted";
    case ErrorCode::out_of_memory: return "out_of_memory";
    case ErrorCode::cuda: return "cuda";
    case ErrorCode::unsupported: return "unsupported";
    case ErrorCode::io: return "io";
    case ErrorCode::internal: return "internal";
    case ErrorCode::not_converged: return "not_converged";
  }
  return "unknown";
}

Error::Error(ErrorCode code, const std::string& message) : std::runtime_error(message), code_(code) {}

void throw_error(ErrorCode code, const std::string& message) { throw Error(code, message); }

}  // namespace gpuml

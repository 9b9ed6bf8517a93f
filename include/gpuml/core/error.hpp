#pragma once
#include <stdexcept>
#include <string>

#include "gpuml/core/export.hpp"

namespace gpuml {

// Values match gpuml_status_t in the C ABI.
enum class ErrorCode : int {
  invalid_argument = 1,
  not_fitted = 2,
  out_of_memory = 3,
  cuda = 4,
  unsupported = 5,
  io = 6,
  internal = 7,
  not_converged = 8,  // an iterative method stopped at its iteration limit (PageRank)
};

GPUML_API const char* error_code_name(ErrorCode code) noexcept;

// The one exception type gpuml throws; the C ABI turns it into a status and a message.
class GPUML_API Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message);
  ErrorCode code() const noexcept { return code_; }

 private:
  ErrorCode code_;
};

[[noreturn]] GPUML_API void throw_error(ErrorCode code, const std::string& message);

}  // namespace gpuml

// Checks a condition on user input; the message must name the argument.
#define GPUML_EXPECT(cond, msg)                                              \
  do {                                                                       \
    if (!(cond)) ::gpuml::throw_error(::gpuml::ErrorCode::invalid_argument, (msg)); \
  } while (0)

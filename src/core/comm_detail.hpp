#pragma once
// Argument checks shared by the Comm implementations (src/core/comm*.cpp).
#include <cstdint>

#include "gpuml/core/comm.hpp"

namespace gpuml::detail {

// dtype valid, count >= 0, data non-NULL when count > 0 (invalid_argument naming the op).
void check_collective(const Comm& comm, const char* op, const void* data, int64_t count, DType dtype);
// 0 <= root < size().
void check_root(const Comm& comm, const char* op, int root);
// counts has size() entries >= 0 and counts[rank()] == count; returns their sum.
int64_t check_counts(const Comm& comm, int64_t count, const int64_t* counts);

}  // namespace gpuml::detail

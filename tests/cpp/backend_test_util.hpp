#pragma once
// Copies between host vectors and device buffers, for the tests that compare the internal CUDA
// backends with the CPU ones primitive by primitive (detail::copy_bytes is exported for them).
#include <algorithm>
#include <vector>

#include "../../src/core/device_ops.hpp"
#include "gpuml/core/array.hpp"
#include "gpuml/core/context.hpp"

namespace gpuml::test {

template <typename U>
Buffer to_device(Context& gpu, const std::vector<U>& host) {
  Buffer buffer(gpu, std::max<std::size_t>(host.size() * sizeof(U), 1));
  detail::copy_bytes(gpu, buffer.data(), gpu.device(), host.data(), Device{}, host.size() * sizeof(U));
  return buffer;
}

template <typename U>
std::vector<U> to_host(Context& gpu, const Buffer& buffer, std::size_t count) {
  std::vector<U> host(count);
  detail::copy_bytes(gpu, host.data(), Device{}, buffer.data(), gpu.device(), count * sizeof(U));
  return host;
}

}  // namespace gpuml::test

#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "gpuml/core/array.hpp"
#include "gpuml/core/export.hpp"

namespace gpuml {

class Comm;

namespace cuda {
struct Resources;  // stream, library handles and memory pool; defined in cuda/core (no CUDA types here)
}

// Where work runs: the CPU (with a thread count) or one CUDA device with its own stream.
// Library handles and the workspace pool are created on first use, as in RAFT's resources.
// A Context is a handle: copies share the same stream and resources. Use one context per
// thread at a time; fitted estimators can be used from many threads, each with its own context.
class GPUML_API Context {
 public:
  static Context cpu(int n_threads = 0);  // 0: all hardware threads (OpenMP's default)
  static Context cuda(int device_id = 0);
  static Context best();                   // the first CUDA device when one is present, else the CPU
  // "auto", "cpu", "cuda" or "cuda:N"
  static Context from_string(const std::string& device);

  Device device() const;
  bool is_cuda() const { return device().is_cuda(); }
  int n_threads() const;
  uint64_t seed() const;        // default seed for estimators whose random_state is unset
  void set_seed(uint64_t seed);
  void synchronize() const;     // waits for all work queued on the context's stream

  // The communicator of distributed (SPMD) training: the local one (1 rank) until one is
  // attached. Copies of a context share it. Attaching a second time, or a null communicator,
  // is ErrorCode::invalid_argument.
  Comm& comm() const;
  bool has_comm() const;  // whether one was attached
  void attach_comm(std::shared_ptr<Comm> comm);

  // A cap on the device memory this context's work may hold at once (0: none, the default):
  // an allocation beyond it fails with ErrorCode::out_of_memory, as when the device is full,
  // and the context stays usable for smaller work. Counts gpuml's own buffers (inputs copied to
  // the device, workspaces, fitted arrays), not the CUDA libraries' internal allocations.
  // CUDA contexts only (ErrorCode::unsupported on a CPU context); a negative limit is
  // ErrorCode::invalid_argument.
  void set_memory_limit(int64_t bytes);
  int64_t memory_limit() const;
  int64_t memory_in_use() const;  // bytes of this context's device buffers alive now

  // The CUDA resources of this context (throws unless it is a CUDA context). For backends.
  cuda::Resources& cuda_resources() const;
  // Keeps this context's resources alive as long as the returned pointer lives (for buffers).
  std::shared_ptr<void> keepalive() const;

  struct Impl;

 private:
  explicit Context(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<Impl> impl_;
};

// Number of CUDA devices visible (0 when built without CUDA or when no driver/device).
GPUML_API int cuda_device_count() noexcept;
// Whether this library was built with the CUDA backend.
GPUML_API bool built_with_cuda() noexcept;

}  // namespace gpuml

#pragma once
// The CUDA side of a Context: the device, its stream, and library handles created on first use.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cusolverDn.h>

#include <atomic>
#include <mutex>
#include <string>
#include <vector>

#include "gpuml/core/array.hpp"
#include "gpuml/core/context.hpp"
#include "gpuml/core/error.hpp"

namespace gpuml::cuda {

[[noreturn]] void throw_cuda_error(cudaError_t err, const char* call, const char* file, int line);
[[noreturn]] void throw_cublas_error(cublasStatus_t st, const char* call, const char* file, int line);
[[noreturn]] void throw_cusolver_error(cusolverStatus_t st, const char* call, const char* file, int line);

}  // namespace gpuml::cuda

// Every CUDA runtime call goes through this; out-of-memory becomes ErrorCode::out_of_memory.
#define GPUML_CUDA_CHECK(call)                                                          \
  do {                                                                                  \
    cudaError_t gpuml_err_ = (call);                                                    \
    if (gpuml_err_ != cudaSuccess) ::gpuml::cuda::throw_cuda_error(gpuml_err_, #call, __FILE__, __LINE__); \
  } while (0)
// After every kernel launch.
#define GPUML_CUDA_CHECK_LAUNCH() GPUML_CUDA_CHECK(cudaGetLastError())
#define GPUML_CUBLAS_CHECK(call)                                                        \
  do {                                                                                  \
    cublasStatus_t gpuml_st_ = (call);                                                  \
    if (gpuml_st_ != CUBLAS_STATUS_SUCCESS) ::gpuml::cuda::throw_cublas_error(gpuml_st_, #call, __FILE__, __LINE__); \
  } while (0)
#define GPUML_CUSOLVER_CHECK(call)                                                      \
  do {                                                                                  \
    cusolverStatus_t gpuml_st_ = (call);                                                \
    if (gpuml_st_ != CUSOLVER_STATUS_SUCCESS) ::gpuml::cuda::throw_cusolver_error(gpuml_st_, #call, __FILE__, __LINE__); \
  } while (0)

namespace gpuml::cuda {

struct Resources {
  explicit Resources(int device_id);
  ~Resources();
  Resources(const Resources&) = delete;
  Resources& operator=(const Resources&) = delete;

  int device = 0;
  cudaStream_t stream = nullptr;
  int sm_count = 0;
  int compute_capability = 0;  // major * 10 + minor: 90 on the H100 and H200
  std::size_t l2_bytes = 0;
  // Device memory of this context's Buffers, and its cap (0: none); Context::set_memory_limit.
  std::atomic<int64_t> bytes_in_use{0};
  std::atomic<int64_t> memory_limit{0};

  // Created on first use, bound to `stream`.
  cublasHandle_t cublas();
  cusolverDnHandle_t cusolver();

  // Makes this context's device current for the calling thread.
  void activate() const;

  // Page-locked host memory of at least `bytes`, kept and grown across calls, for the small
  // copies between the device and host arrays (a pageable copy of 512 kB cost ~0.1 ms more).
  // One user at a time: the context's thread, and only until that user's copies are done.
  void* pinned(std::size_t bytes);
  // host[0, bytes) = device[0, bytes) through the pinned area (waits for the stream). Past
  // kHostCopyChunk, in chunks through two halves of it: the device copies one chunk while the
  // host copies the one before (a pageable cudaMemcpy of 40 MB into fresh pages took ~28 ms).
  // `threads` host threads copy each chunk between the user's memory and the pinned area
  // (parallel_copy): one thread's memcpy, not the link, set the rate of large copies.
  static constexpr std::size_t kHostCopyChunk = std::size_t(8) << 20;
  void copy_to_host(void* host, const void* device, std::size_t bytes, int threads = 1);
  // copy_to_host into several host arrays: device's consecutive bytes, pieces[0].bytes of them
  // into pieces[0].host, the next pieces[1].bytes into pieces[1].host, and so on (a forest's trees
  // of one column, each into its own vector).
  struct HostPiece {
    void* host;
    std::size_t bytes;
  };
  void copy_to_host(const std::vector<HostPiece>& pieces, const void* device, int threads = 1);
  // device[0, bytes) = host[0, bytes) through the pinned area (queued on the stream; the pinned
  // area is reused only after the stream reaches this copy, which later copies wait for). Past
  // kHostCopyChunk, in chunks through its two halves, as copy_to_host.
  void copy_to_device(void* device, const void* host, std::size_t bytes, int threads = 1);

  // A small page-locked mailbox and its event, made on first use and kept for the context's life
  // (page-locking took ~1.6 ms and freeing ~0.7 ms per fit): for a few values the device copies
  // back while more work, which may use the pinned area, is queued behind them; the host reads
  // them after synchronizing on `filled`. One user at a time, as the pinned area.
  struct Mailbox {
    double* values = nullptr;  // kMailboxValues of them
    cudaEvent_t filled = nullptr;
  };
  static constexpr int kMailboxValues = 8;
  Mailbox mailbox();

 private:
  std::once_flag cublas_once_;
  cublasHandle_t cublas_ = nullptr;
  std::once_flag cusolver_once_;
  cusolverDnHandle_t cusolver_ = nullptr;
  void* pinned_ = nullptr;
  std::size_t pinned_bytes_ = 0;
  std::once_flag copy_events_once_;
  cudaEvent_t copy_done_[2] = {nullptr, nullptr};  // the pinned halves' copies (copy_to_host, copy_to_device), done
  void make_copy_events();
  std::once_flag mailbox_once_;
  Mailbox mailbox_;
};

// Makes ctx's device current and returns its resources: the first line of every CUDA backend entry.
Resources& activate(const Context& ctx);

// A cuSOLVER workspace (or output array) of `bytes`, zeroed on the stream. sytrd and geqrf read a
// word of theirs before writing it, which compute-sanitizer initcheck reports; zeroed, the read is
// defined.
Buffer solver_workspace(const Context& ctx, Resources& res, std::size_t bytes);

inline unsigned grid_for(int64_t n, int block, int64_t max_blocks = 65535LL * 32) {
  int64_t g = (n + block - 1) / block;
  if (g < 1) g = 1;
  return static_cast<unsigned>(g < max_blocks ? g : max_blocks);
}

}  // namespace gpuml::cuda

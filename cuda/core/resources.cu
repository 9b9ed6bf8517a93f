#include <map>
#include <mutex>
#include <string>

#include "core/device_ops.hpp"
#include "core/parallel.hpp"
#include "cuda/core/resources.cuh"

#include <algorithm>
#include <cstring>

namespace gpuml::cuda {

void throw_cuda_error(cudaError_t err, const char* call, const char* file, int line) {
  cudaGetLastError();  // clear a sticky-free error so the context stays usable
  const ErrorCode code = err == cudaErrorMemoryAllocation ? ErrorCode::out_of_memory : ErrorCode::cuda;
  throw Error(code, std::string("CUDA error ") + cudaGetErrorName(err) + " (" + cudaGetErrorString(err) + ") in " +
                        call + " at " + file + ":" + std::to_string(line));
}

void throw_cublas_error(cublasStatus_t st, const char* call, const char* file, int line) {
  const ErrorCode code = st == CUBLAS_STATUS_ALLOC_FAILED ? ErrorCode::out_of_memory : ErrorCode::cuda;
  throw Error(code, std::string("cuBLAS error ") + cublasGetStatusName(st) + " in " + call + " at " + file + ":" +
                        std::to_string(line));
}

void throw_cusolver_error(cusolverStatus_t st, const char* call, const char* file, int line) {
  // cuSOLVER has no status-name function: the number is its cusolverStatus_t value.
  const ErrorCode code = st == CUSOLVER_STATUS_ALLOC_FAILED ? ErrorCode::out_of_memory : ErrorCode::cuda;
  throw Error(code, std::string("cuSOLVER error ") + std::to_string(static_cast<int>(st)) + " in " + call + " at " + file + ":" +
                        std::to_string(line));
}

Resources::Resources(int device_id) : device(device_id) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();
    count = 0;
  }
  if (device_id >= count)
    throw Error(count == 0 ? ErrorCode::unsupported : ErrorCode::invalid_argument,
                "CUDA device " + std::to_string(device_id) + " requested but " + std::to_string(count) +
                    " CUDA device(s) are visible");
  GPUML_CUDA_CHECK(cudaSetDevice(device));
  // A blocking stream: it waits for work the caller queued on the legacy default stream (CuPy
  // and PyTorch arrays produced there are complete before gpuml reads them).
  GPUML_CUDA_CHECK(cudaStreamCreate(&stream));
  cudaDeviceProp prop{};
  GPUML_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  sm_count = prop.multiProcessorCount;
  compute_capability = prop.major * 10 + prop.minor;
  l2_bytes = static_cast<std::size_t>(prop.l2CacheSize);
}

Resources::~Resources() {
  cudaSetDevice(device);
  if (cusolver_) cusolverDnDestroy(cusolver_);
  if (cublas_) cublasDestroy(cublas_);
  if (stream) {
    cudaStreamSynchronize(stream);
    cudaStreamDestroy(stream);
  }
  if (pinned_) cudaFreeHost(pinned_);
  if (mailbox_.values) cudaFreeHost(mailbox_.values);
  if (mailbox_.filled) cudaEventDestroy(mailbox_.filled);
  for (cudaEvent_t e : copy_done_)
    if (e) cudaEventDestroy(e);
}

Resources::Mailbox Resources::mailbox() {
  std::call_once(mailbox_once_, [this] {
    GPUML_CUDA_CHECK(cudaMallocHost(&mailbox_.values, kMailboxValues * sizeof(double)));
    GPUML_CUDA_CHECK(cudaEventCreateWithFlags(&mailbox_.filled, cudaEventDisableTiming));
  });
  return mailbox_;
}

void* Resources::pinned(std::size_t bytes) {
  if (bytes > pinned_bytes_) {
    GPUML_CUDA_CHECK(cudaStreamSynchronize(stream));  // earlier copies may still read the old area
    if (pinned_) GPUML_CUDA_CHECK(cudaFreeHost(pinned_));
    pinned_ = nullptr;
    pinned_bytes_ = 0;
    const std::size_t grown = std::max<std::size_t>(bytes, std::size_t(1) << 20);
    GPUML_CUDA_CHECK(cudaMallocHost(&pinned_, grown));
    pinned_bytes_ = grown;
  }
  return pinned_;
}

void Resources::copy_to_host(void* host, const void* device_ptr, std::size_t bytes, int threads) {
  copy_to_host(std::vector<HostPiece>{HostPiece{host, bytes}}, device_ptr, threads);
}

void Resources::copy_to_host(const std::vector<HostPiece>& pieces, const void* device_ptr, int threads) {
  std::size_t bytes = 0;
  for (const HostPiece& p : pieces) bytes += p.bytes;
  if (bytes == 0) return;
  // Bytes [begin, begin + size) of the whole, from `from`, into the pieces they belong to.
  std::size_t piece = 0, piece_begin = 0;  // the first piece not wholly before `begin` (they come in order)
  auto scatter = [&](std::size_t begin, const char* from, std::size_t size) {
    const std::size_t end = begin + size;
    while (piece_begin + pieces[piece].bytes <= begin) piece_begin += pieces[piece++].bytes;
    for (std::size_t p = piece, at = piece_begin; p < pieces.size() && at < end; at += pieces[p++].bytes) {
      const std::size_t lo = std::max(begin, at), hi = std::min(end, at + pieces[p].bytes);
      if (hi > lo) detail::parallel_copy(static_cast<char*>(pieces[p].host) + (lo - at), from + (lo - begin), hi - lo, threads);
    }
  };
  if (bytes <= kHostCopyChunk) {
    void* staging = pinned(bytes);
    GPUML_CUDA_CHECK(cudaMemcpyAsync(staging, device_ptr, bytes, cudaMemcpyDeviceToHost, stream));
    GPUML_CUDA_CHECK(cudaStreamSynchronize(stream));
    scatter(0, static_cast<const char*>(staging), bytes);
    return;
  }
  char* staging = static_cast<char*>(pinned(2 * kHostCopyChunk));
  make_copy_events();
  const std::size_t chunks = (bytes + kHostCopyChunk - 1) / kHostCopyChunk;
  auto size_of = [&](std::size_t c) { return std::min(kHostCopyChunk, bytes - c * kHostCopyChunk); };
  auto start = [&](std::size_t c) {  // chunk c into half c % 2
    GPUML_CUDA_CHECK(cudaMemcpyAsync(staging + (c % 2) * kHostCopyChunk, static_cast<const char*>(device_ptr) + c * kHostCopyChunk,
                                     size_of(c), cudaMemcpyDeviceToHost, stream));
    GPUML_CUDA_CHECK(cudaEventRecord(copy_done_[c % 2], stream));
  };
  start(0);
  for (std::size_t c = 0; c < chunks; ++c) {
    if (c + 1 < chunks) start(c + 1);  // the other half: the host finished copying it out (chunk c - 1) above
    GPUML_CUDA_CHECK(cudaEventSynchronize(copy_done_[c % 2]));
    scatter(c * kHostCopyChunk, staging + (c % 2) * kHostCopyChunk, size_of(c));
  }
}

void Resources::make_copy_events() {
  std::call_once(copy_events_once_, [this] {
    for (cudaEvent_t& e : copy_done_) GPUML_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  });
}

void Resources::copy_to_device(void* device_ptr, const void* host, std::size_t bytes, int threads) {
  if (bytes == 0) return;
  GPUML_CUDA_CHECK(cudaStreamSynchronize(stream));  // the pinned area is free once earlier copies are done
  if (bytes <= kHostCopyChunk) {
    void* staging = pinned(bytes);
    detail::parallel_copy(staging, host, bytes, threads);
    GPUML_CUDA_CHECK(cudaMemcpyAsync(device_ptr, staging, bytes, cudaMemcpyHostToDevice, stream));
    return;
  }
  // Chunks through the two halves: the host fills one while the device reads the other.
  char* staging = static_cast<char*>(pinned(2 * kHostCopyChunk));
  make_copy_events();
  const std::size_t chunks = (bytes + kHostCopyChunk - 1) / kHostCopyChunk;
  for (std::size_t c = 0; c < chunks; ++c) {
    const std::size_t offset = c * kHostCopyChunk, size = std::min(kHostCopyChunk, bytes - offset);
    char* half = staging + (c % 2) * kHostCopyChunk;
    if (c >= 2) GPUML_CUDA_CHECK(cudaEventSynchronize(copy_done_[c % 2]));  // the device has read chunk c - 2
    detail::parallel_copy(half, static_cast<const char*>(host) + offset, size, threads);
    GPUML_CUDA_CHECK(cudaMemcpyAsync(static_cast<char*>(device_ptr) + offset, half, size, cudaMemcpyHostToDevice, stream));
    GPUML_CUDA_CHECK(cudaEventRecord(copy_done_[c % 2], stream));
  }
}

cusolverDnHandle_t Resources::cusolver() {
  std::call_once(cusolver_once_, [this] {
    activate();
    GPUML_CUSOLVER_CHECK(cusolverDnCreate(&cusolver_));
    GPUML_CUSOLVER_CHECK(cusolverDnSetStream(cusolver_, stream));
  });
  return cusolver_;
}

void Resources::activate() const { GPUML_CUDA_CHECK(cudaSetDevice(device)); }

cublasHandle_t Resources::cublas() {
  std::call_once(cublas_once_, [this] {
    activate();
    GPUML_CUBLAS_CHECK(cublasCreate(&cublas_));
    GPUML_CUBLAS_CHECK(cublasSetStream(cublas_, stream));
    // Exact float32: no TF32 or other reduced-precision shortcuts.
    GPUML_CUBLAS_CHECK(cublasSetMathMode(cublas_, CUBLAS_PEDANTIC_MATH));
  });
  return cublas_;
}

Resources& activate(const Context& ctx) {
  Resources& res = ctx.cuda_resources();
  res.activate();
  return res;
}

namespace {
// One stream-ordered pool per device, shared by every context on it, kept for the process.
cudaMemPool_t pool_for(int device) {
  static std::mutex mutex;
  static std::map<int, cudaMemPool_t> pools;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = pools.find(device);
  if (it != pools.end()) return it->second;
  cudaMemPoolProps props{};
  props.allocType = cudaMemAllocationTypePinned;
  props.handleTypes = cudaMemHandleTypeNone;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = device;
  cudaMemPool_t pool;
  GPUML_CUDA_CHECK(cudaMemPoolCreate(&pool, &props));
  // Keep freed memory cached for reuse instead of returning it to the driver at every sync.
  uint64_t threshold = UINT64_MAX;
  GPUML_CUDA_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold));
  pools.emplace(device, pool);
  return pool;
}
}  // namespace

Buffer solver_workspace(const Context& ctx, Resources& res, std::size_t bytes) {
  Context context = ctx;  // a Buffer takes a mutable context (a shared handle)
  Buffer work(context, std::max<std::size_t>(bytes, 1));
  GPUML_CUDA_CHECK(cudaMemsetAsync(work.data(), 0, std::max<std::size_t>(bytes, 1), res.stream));
  return work;
}

}  // namespace gpuml::cuda

namespace gpuml::detail {

int cuda_device_count_impl() noexcept {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return count;
}

std::shared_ptr<cuda::Resources> create_cuda_resources(int device_id) {
  return std::make_shared<cuda::Resources>(device_id);
}

void cuda_device_uuid(int device_id, uint8_t out[16]) {
  cudaDeviceProp prop{};
  GPUML_CUDA_CHECK(cudaGetDeviceProperties(&prop, device_id));
  static_assert(sizeof(prop.uuid.bytes) == 16, "a CUDA device UUID is 16 bytes");
  std::memcpy(out, prop.uuid.bytes, 16);
}

void* device_allocate(cuda::Resources& res, std::size_t bytes) {
  res.activate();
  const int64_t want = static_cast<int64_t>(bytes);
  const int64_t before = res.bytes_in_use.fetch_add(want);
  const int64_t limit = res.memory_limit.load();
  if (limit > 0 && before + want > limit) {
    res.bytes_in_use.fetch_sub(want);
    throw Error(ErrorCode::out_of_memory, "could not allocate " + std::to_string(bytes) + " bytes on cuda:" +
                                              std::to_string(res.device) + ": the context's memory limit is " +
                                              std::to_string(limit) + " bytes and " + std::to_string(before) +
                                              " are in use");
  }
  void* p = nullptr;
  cudaError_t err = cudaMallocFromPoolAsync(&p, bytes, cuda::pool_for(res.device), res.stream);
  if (err != cudaSuccess) {
    cudaGetLastError();
    res.bytes_in_use.fetch_sub(want);
    throw Error(err == cudaErrorMemoryAllocation ? ErrorCode::out_of_memory : ErrorCode::cuda,
                "could not allocate " + std::to_string(bytes) + " bytes on cuda:" + std::to_string(res.device) + ": " +
                    cudaGetErrorString(err));
  }
  return p;
}

void device_free(cuda::Resources& res, void* ptr, std::size_t bytes) noexcept {
  cudaSetDevice(res.device);
  cudaFreeAsync(ptr, res.stream);
  res.bytes_in_use.fetch_sub(static_cast<int64_t>(bytes));
}

void set_device_memory_limit(cuda::Resources& res, int64_t bytes) { res.memory_limit.store(bytes); }
int64_t device_memory_limit(const cuda::Resources& res) { return res.memory_limit.load(); }
int64_t device_memory_in_use(const cuda::Resources& res) { return res.bytes_in_use.load(); }

void device_synchronize(cuda::Resources& res) {
  res.activate();
  GPUML_CUDA_CHECK(cudaStreamSynchronize(res.stream));
}

}  // namespace gpuml::detail

// gpuml::Comm over NCCL, for CUDA contexts (Comm::nccl). Compiled with CUDA; without NCCL
// (GPUML_WITH_NCCL off) the factory says unsupported.
//
// The Comm interface takes host buffers (the estimators' drivers reduce host-side sums): each
// collective copies its data into a device scratch buffer of the context, runs NCCL on the
// context's stream and copies the result back. The `_on` forms take device memory and run NCCL
// on it in place (PageRank's distributed driver, whose vectors live on the GPU). Floating-point sums are ncclReduce to rank 0 then
// ncclBroadcast, so every rank gets the same bits (as the MPI communicator does); allgatherv is
// one broadcast per rank inside an NCCL group.
#include "cuda/core/resources.cuh"
#include "gpuml/core/comm.hpp"
#include "gpuml/core/error.hpp"

#if GPUML_WITH_NCCL
#include <nccl.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "core/comm_detail.hpp"
#endif

namespace gpuml {

#if GPUML_WITH_NCCL
namespace {

void check_nccl(ncclResult_t rc, const char* call) {
  if (rc == ncclSuccess) return;
  throw_error(rc == ncclInvalidArgument || rc == ncclInvalidUsage ? ErrorCode::invalid_argument : ErrorCode::cuda,
              std::string(call) + " failed: " + ncclGetErrorString(rc));
}

ncclDataType_t nccl_type(DType dtype) {
  switch (dtype) {
    case DType::float32: return ncclFloat32;
    case DType::float64: return ncclFloat64;
    case DType::int32: return ncclInt32;
    case DType::int64: return ncclInt64;
  }
  throw_error(ErrorCode::invalid_argument, "NCCL communicator: unknown dtype");
}

class NcclComm final : public Comm {
 public:
  NcclComm(const Context& ctx, const uint8_t* id_bytes, int n_ranks, int rank) : ctx_(ctx), size_(n_ranks), rank_(rank) {
    GPUML_EXPECT(ctx.is_cuda(), "NCCL communicator: needs a CUDA context");
    GPUML_EXPECT(n_ranks >= 1 && rank >= 0 && rank < n_ranks, "NCCL communicator: rank must be in [0, n_ranks)");
    static_assert(sizeof(ncclUniqueId) == 128, "NCCL's unique id is 128 bytes");
    ncclUniqueId id;
    std::memcpy(&id, id_bytes, sizeof(id));
    cuda::activate(ctx_);
    check_nccl(ncclCommInitRank(&comm_, n_ranks, id, rank), "ncclCommInitRank");
  }
  ~NcclComm() override {
    if (comm_ != nullptr) ncclCommDestroy(comm_);
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  const char* kind() const override { return "nccl"; }

  void allreduce_sum(void* data, int64_t count, DType dtype) override {
    detail::check_collective(*this, "allreduce_sum", data, count, dtype);
    if (count == 0) return;
    cuda::Resources& res = cuda::activate(ctx_);
    const std::size_t bytes = static_cast<std::size_t>(count) * dtype_size(dtype);
    void* d = scratch(bytes);
    GPUML_CUDA_CHECK(cudaMemcpyAsync(d, data, bytes, cudaMemcpyHostToDevice, res.stream));
    if (is_floating(dtype)) {  // reduced once, then everyone gets rank 0's bits
      check_nccl(ncclReduce(d, d, static_cast<std::size_t>(count), nccl_type(dtype), ncclSum, 0, comm_, res.stream), "ncclReduce");
      check_nccl(ncclBroadcast(d, d, static_cast<std::size_t>(count), nccl_type(dtype), 0, comm_, res.stream), "ncclBroadcast");
    } else {
      check_nccl(ncclAllReduce(d, d, static_cast<std::size_t>(count), nccl_type(dtype), ncclSum, comm_, res.stream),
                 "ncclAllReduce");
    }
    GPUML_CUDA_CHECK(cudaMemcpyAsync(data, d, bytes, cudaMemcpyDeviceToHost, res.stream));
    GPUML_CUDA_CHECK(cudaStreamSynchronize(res.stream));
  }

  void allgatherv(const void* send, int64_t count, void* recv, const int64_t* counts, DType dtype) override {
    detail::check_collective(*this, "allgatherv", send, count, dtype);
    const int64_t total = detail::check_counts(*this, count, counts);
    detail::check_collective(*this, "allgatherv", recv, total, dtype);
    if (total == 0) return;
    cuda::Resources& res = cuda::activate(ctx_);
    const std::size_t unit = dtype_size(dtype);
    char* d = static_cast<char*>(scratch(static_cast<std::size_t>(total) * unit));
    int64_t offset = 0;
    for (int r = 0; r < rank_; ++r) offset += counts[r];
    if (count > 0)
      GPUML_CUDA_CHECK(cudaMemcpyAsync(d + offset * unit, send, static_cast<std::size_t>(count) * unit, cudaMemcpyHostToDevice,
                                       res.stream));
    broadcast_each(d, counts, dtype, res);
    GPUML_CUDA_CHECK(cudaMemcpyAsync(recv, d, static_cast<std::size_t>(total) * unit, cudaMemcpyDeviceToHost, res.stream));
    GPUML_CUDA_CHECK(cudaStreamSynchronize(res.stream));
  }

  void broadcast(void* data, int64_t count, DType dtype, int root) override {
    detail::check_collective(*this, "broadcast", data, count, dtype);
    detail::check_root(*this, "broadcast", root);
    if (count == 0) return;
    cuda::Resources& res = cuda::activate(ctx_);
    const std::size_t bytes = static_cast<std::size_t>(count) * dtype_size(dtype);
    void* d = scratch(bytes);
    if (rank_ == root) GPUML_CUDA_CHECK(cudaMemcpyAsync(d, data, bytes, cudaMemcpyHostToDevice, res.stream));
    check_nccl(ncclBroadcast(d, d, static_cast<std::size_t>(count), nccl_type(dtype), root, comm_, res.stream), "ncclBroadcast");
    GPUML_CUDA_CHECK(cudaMemcpyAsync(data, d, bytes, cudaMemcpyDeviceToHost, res.stream));
    GPUML_CUDA_CHECK(cudaStreamSynchronize(res.stream));
  }

  // Device memory of this communicator's GPU: NCCL in place on the context's stream, no copies
  // through the host (a CPU context's memory takes the host path).
  void allreduce_sum_on(const Context& ctx, void* data, int64_t count, DType dtype) override {
    if (!on_my_device(ctx)) return Comm::allreduce_sum_on(ctx, data, count, dtype);
    detail::check_collective(*this, "allreduce_sum_on", data, count, dtype);
    if (count == 0) return;
    cuda::Resources& res = cuda::activate(ctx_);
    const std::size_t n = static_cast<std::size_t>(count);
    if (is_floating(dtype)) {  // reduced once, then everyone gets rank 0's bits
      check_nccl(ncclReduce(data, data, n, nccl_type(dtype), ncclSum, 0, comm_, res.stream), "ncclReduce");
      check_nccl(ncclBroadcast(data, data, n, nccl_type(dtype), 0, comm_, res.stream), "ncclBroadcast");
    } else {
      check_nccl(ncclAllReduce(data, data, n, nccl_type(dtype), ncclSum, comm_, res.stream), "ncclAllReduce");
    }
  }

  void allgatherv_on(const Context& ctx, const void* send, int64_t count, void* recv, const int64_t* counts,
                     DType dtype) override {
    if (!on_my_device(ctx)) return Comm::allgatherv_on(ctx, send, count, recv, counts, dtype);
    detail::check_collective(*this, "allgatherv_on", send, count, dtype);
    const int64_t total = detail::check_counts(*this, count, counts);
    detail::check_collective(*this, "allgatherv_on", recv, total, dtype);
    if (total == 0) return;
    cuda::Resources& res = cuda::activate(ctx_);
    const std::size_t unit = dtype_size(dtype);
    char* all = static_cast<char*>(recv);
    int64_t offset = 0;
    for (int r = 0; r < rank_; ++r) offset += counts[r];
    if (count > 0 && send != all + offset * unit)
      GPUML_CUDA_CHECK(cudaMemcpyAsync(all + offset * unit, send, static_cast<std::size_t>(count) * unit,
                                       cudaMemcpyDeviceToDevice, res.stream));
    broadcast_each(all, counts, dtype, res);
  }

  void barrier() override {
    int32_t one = 1;
    allreduce_sum(&one, 1, DType::int32);
  }

 private:
  bool on_my_device(const Context& ctx) const { return ctx.is_cuda() && ctx.device() == ctx_.device(); }

  // all holds every rank's block in rank order (counts[r] elements from rank r), this rank's in
  // place: one in-place broadcast per rank, inside an NCCL group.
  void broadcast_each(char* all, const int64_t* counts, DType dtype, cuda::Resources& res) {
    const std::size_t unit = dtype_size(dtype);
    check_nccl(ncclGroupStart(), "ncclGroupStart");
    int64_t offset = 0;
    for (int r = 0; r < size_; ++r) {
      if (counts[r] > 0)
        check_nccl(ncclBroadcast(all + offset * unit, all + offset * unit, static_cast<std::size_t>(counts[r]),
                                 nccl_type(dtype), r, comm_, res.stream),
                   "ncclBroadcast");
      offset += counts[r];
    }
    check_nccl(ncclGroupEnd(), "ncclGroupEnd");
  }

  // A device buffer of at least `bytes`, kept and grown across collectives.
  void* scratch(std::size_t bytes) {
    if (scratch_.bytes() < bytes) scratch_ = Buffer(ctx_, std::max(bytes, scratch_.bytes() * 2));
    return scratch_.data();
  }

  Context ctx_;
  int size_ = 1, rank_ = 0;
  ncclComm_t comm_ = nullptr;
  Buffer scratch_;
};

}  // namespace

std::shared_ptr<Comm> Comm::nccl(const Context& ctx, const uint8_t unique_id[128], int n_ranks, int rank) {
  return std::make_shared<NcclComm>(ctx, unique_id, n_ranks, rank);
}

void Comm::nccl_unique_id(uint8_t out[128]) {
  ncclUniqueId id;
  check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
  std::memcpy(out, &id, sizeof(id));
}

bool built_with_nccl() noexcept { return true; }

#else

std::shared_ptr<Comm> Comm::nccl(const Context&, const uint8_t*, int, int) {
  throw_error(ErrorCode::unsupported, "gpuml was built without NCCL: no NCCL communicators");
}
void Comm::nccl_unique_id(uint8_t*) { throw_error(ErrorCode::unsupported, "gpuml was built without NCCL: no NCCL communicators"); }
bool built_with_nccl() noexcept { return false; }

#endif

}  // namespace gpuml

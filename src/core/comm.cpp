// gpuml::Comm's local (1-rank) implementation, the checks every implementation shares, and the
// choice of a CUDA context's communicator over a host one (NCCL bootstrapped over it, or itself).
// The MPI implementation is src/core/comm_mpi.cpp (comm_no_mpi.cpp in builds without MPI), the
// Gloo one src/core/comm_gloo.cpp (comm_no_gloo.cpp without Gloo).
#include "gpuml/core/comm.hpp"

#include <algorithm>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "core/comm_detail.hpp"
#include "core/device_ops.hpp"
#include "gpuml/core/array.hpp"
#include "gpuml/core/context.hpp"
#include "gpuml/core/error.hpp"

namespace gpuml {

Comm::~Comm() = default;
GlooStore::~GlooStore() = default;

void Comm::allgather(const void* send, int64_t count, void* recv, DType dtype) {
  detail::check_collective(*this, "allgather", send, count, dtype);
  detail::check_collective(*this, "allgather", recv, count * size(), dtype);
  const std::vector<int64_t> counts(static_cast<std::size_t>(size()), count);
  allgatherv(send, count, recv, counts.data(), dtype);
}

// Host communicators: a CPU context's memory is host memory already; a CUDA context's goes
// through host copies.
void Comm::allreduce_sum_on(const Context& ctx, void* data, int64_t count, DType dtype) {
  if (!ctx.is_cuda()) return allreduce_sum(data, count, dtype);
  detail::check_collective(*this, "allreduce_sum_on", data, count, dtype);
  const std::size_t bytes = static_cast<std::size_t>(count) * dtype_size(dtype);
  Buffer host = Buffer::host(bytes);
  detail::copy_bytes(ctx, host.data(), Device{}, data, ctx.device(), bytes);
  allreduce_sum(host.data(), count, dtype);
  detail::copy_bytes(ctx, data, ctx.device(), host.data(), Device{}, bytes);
}

void Comm::allgatherv_on(const Context& ctx, const void* send, int64_t count, void* recv, const int64_t* counts,
                         DType dtype) {
  if (!ctx.is_cuda()) return allgatherv(send, count, recv, counts, dtype);
  detail::check_collective(*this, "allgatherv_on", send, count, dtype);
  const int64_t total = detail::check_counts(*this, count, counts);
  const std::size_t unit = dtype_size(dtype);
  Buffer mine = Buffer::host(static_cast<std::size_t>(count) * unit), all = Buffer::host(static_cast<std::size_t>(total) * unit);
  detail::copy_bytes(ctx, mine.data(), Device{}, send, ctx.device(), static_cast<std::size_t>(count) * unit);
  allgatherv(mine.data(), count, all.data(), counts, dtype);
  detail::copy_bytes(ctx, recv, ctx.device(), all.data(), Device{}, static_cast<std::size_t>(total) * unit);
}

bool built_with_mpi() noexcept { return GPUML_WITH_MPI != 0; }
bool built_with_gloo() noexcept { return GPUML_WITH_GLOO != 0; }

namespace detail {

void check_collective(const Comm& comm, const char* op, const void* data, int64_t count, DType dtype) {
  const std::string where = std::string("Comm::") + op + " (" + comm.kind() + "): ";
  GPUML_EXPECT(is_valid_dtype(static_cast<int32_t>(dtype)), where + "invalid dtype " + std::to_string(static_cast<int>(dtype)));
  GPUML_EXPECT(count >= 0, where + "count must be >= 0, got " + std::to_string(count));
  GPUML_EXPECT(count == 0 || data != nullptr, where + "buffer is NULL but count is " + std::to_string(count));
}

void check_root(const Comm& comm, const char* op, int root) {
  GPUML_EXPECT(root >= 0 && root < comm.size(), std::string("Comm::") + op + " (" + comm.kind() + "): root " +
                                                    std::to_string(root) + " is not a rank of a communicator of " +
                                                    std::to_string(comm.size()));
}

int64_t check_counts(const Comm& comm, int64_t count, const int64_t* counts) {
  const std::string where = std::string("Comm::allgatherv (") + comm.kind() + "): ";
  GPUML_EXPECT(counts != nullptr, where + "counts is NULL");
  int64_t total = 0;
  for (int r = 0; r < comm.size(); ++r) {
    GPUML_EXPECT(counts[r] >= 0, where + "counts[" + std::to_string(r) + "] is " + std::to_string(counts[r]));
    total += counts[r];
  }
  GPUML_EXPECT(counts[comm.rank()] == count, where + "count " + std::to_string(count) + " differs from counts[" +
                                                 std::to_string(comm.rank()) + "] = " + std::to_string(counts[comm.rank()]));
  return total;
}

}  // namespace detail

namespace {

// One rank: every collective is the identity (or a copy from send to recv).
class LocalComm final : public Comm {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  const char* kind() const override { return "local"; }

  void allreduce_sum(void* data, int64_t count, DType dtype) override {
    detail::check_collective(*this, "allreduce_sum", data, count, dtype);
  }
  void allreduce_sum_on(const Context&, void* data, int64_t count, DType dtype) override {  // no staging: a no-op
    detail::check_collective(*this, "allreduce_sum_on", data, count, dtype);
  }
  void allgatherv(const void* send, int64_t count, void* recv, const int64_t* counts, DType dtype) override {
    detail::check_collective(*this, "allgatherv", send, count, dtype);
    detail::check_collective(*this, "allgatherv", recv, detail::check_counts(*this, count, counts), dtype);
    copy(send, recv, count, dtype);
  }
  void broadcast(void* data, int64_t count, DType dtype, int root) override {
    detail::check_collective(*this, "broadcast", data, count, dtype);
    detail::check_root(*this, "broadcast", root);
  }
  void barrier() override {}

 private:
  static void copy(const void* send, void* recv, int64_t count, DType dtype) {
    if (count > 0 && send != recv) std::memmove(recv, send, static_cast<std::size_t>(count) * dtype_size(dtype));
  }
};

}  // namespace

std::shared_ptr<Comm> Comm::local() {
  static const std::shared_ptr<Comm> instance = std::make_shared<LocalComm>();  // stateless: one for all
  return instance;
}

std::shared_ptr<Comm> Comm::nccl_over(const Context& ctx, Comm& bootstrap) {
  GPUML_EXPECT(ctx.is_cuda(), "Comm::nccl_over: NCCL needs a CUDA context");
  // Rank 0's 128-byte id as 32 int32 words, then its error code (0: none): the others must not
  // wait in ncclCommInitRank for a rank that failed.
  int32_t message[33] = {};
  std::exception_ptr failure;
  if (bootstrap.rank() == 0) {
    try {
      uint8_t id[128];
      nccl_unique_id(id);
      std::memcpy(message, id, sizeof(id));
    } catch (const Error& e) {
      failure = std::current_exception();
      message[32] = static_cast<int32_t>(e.code());
    } catch (...) {
      failure = std::current_exception();
      message[32] = static_cast<int32_t>(ErrorCode::internal);
    }
  }
  bootstrap.broadcast(message, 33, DType::int32, 0);
  if (failure) std::rethrow_exception(failure);
  if (message[32] != 0)
    throw_error(static_cast<ErrorCode>(message[32]), "Comm::nccl_over: rank 0 could not make the NCCL unique id");
  uint8_t id[128];
  std::memcpy(id, message, sizeof(id));
  return nccl(ctx, id, bootstrap.size(), bootstrap.rank());
}

std::shared_ptr<Comm> Comm::for_context(const Context& ctx, std::shared_ptr<Comm> host, GpuTransport transport) {
  GPUML_EXPECT(host != nullptr, "Comm::for_context: host is NULL");
  // Every rank's facts, gathered on every rank (even a CPU context's, so that mixed contexts are
  // an error everywhere rather than a rank waiting for a collective the others skip): whether its
  // context is CUDA, whether it has NCCL, its GPU's UUID. The same facts give every rank the same choice.
  // A rank that cannot read its UUID says so (-1) rather than leave the others waiting.
  constexpr int kWords = 6;
  int32_t mine[kWords] = {ctx.is_cuda() ? 1 : 0, built_with_nccl() ? 1 : 0, 0, 0, 0, 0};
  std::exception_ptr failure;
  if (ctx.is_cuda()) {
    try {
      uint8_t uuid[16];
      detail::cuda_device_uuid(ctx.device().id, uuid);
      std::memcpy(mine + 2, uuid, sizeof(uuid));
    } catch (...) {
      failure = std::current_exception();
      mine[0] = -1;
    }
  }
  const int n = host->size();
  std::vector<int32_t> all(static_cast<std::size_t>(kWords) * static_cast<std::size_t>(n));
  host->allgather(mine, kWords, all.data(), DType::int32);
  if (failure) std::rethrow_exception(failure);
  const auto fact = [&](int rank, int word) { return all[static_cast<std::size_t>(rank) * kWords + word]; };
  for (int r = 0; r < n; ++r)
    if (fact(r, 0) < 0) throw_error(ErrorCode::cuda, "Comm::for_context: rank " + std::to_string(r) + " could not read its GPU's UUID");
  for (int r = 1; r < n; ++r)
    GPUML_EXPECT(fact(r, 0) == fact(0, 0), "Comm::for_context: rank 0's context is " + std::string(fact(0, 0) ? "CUDA" : "CPU") +
                                               " but rank " + std::to_string(r) + "'s is " + (fact(r, 0) ? "CUDA" : "CPU") +
                                               ": every rank attaches the same kind of context");
  if (!ctx.is_cuda()) {
    GPUML_EXPECT(transport != GpuTransport::nccl, "Comm::for_context: transport nccl needs CUDA contexts; a CPU context uses the host communicator");
    return host;
  }
  if (transport == GpuTransport::host) return host;
  std::string why_not;  // why NCCL cannot run here, or empty
  for (int r = 0; r < n && why_not.empty(); ++r) {
    if (!fact(r, 1)) why_not = "rank " + std::to_string(r) + "'s gpuml was built without NCCL";
    for (int s = 0; s < r && why_not.empty(); ++s)
      if (std::equal(&all[static_cast<std::size_t>(r) * kWords + 2], &all[static_cast<std::size_t>(r) * kWords + kWords],
                     &all[static_cast<std::size_t>(s) * kWords + 2]))
        why_not = "ranks " + std::to_string(s) + " and " + std::to_string(r) + " share one GPU (NCCL needs a GPU per rank)";
  }
  if (why_not.empty()) return nccl_over(ctx, *host);
  GPUML_EXPECT(transport != GpuTransport::nccl, "Comm::for_context: transport nccl cannot run: " + why_not);
  return host;  // automatic: the host communicator, through host memory
}

}  // namespace gpuml

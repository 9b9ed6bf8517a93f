// gpuml::Comm's local (1-rank) implementation and the checks every implementation shares.
// The MPI implementation is src/core/comm_mpi.cpp (comm_no_mpi.cpp in builds without MPI), the
// Gloo one src/core/comm_gloo.cpp (comm_no_gloo.cpp without Gloo).
#include "gpuml/core/comm.hpp"

#include <cstring>
#include <string>

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

}  // namespace gpuml

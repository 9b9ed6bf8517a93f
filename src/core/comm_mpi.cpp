// gpuml::Comm over MPI (host memory), with MPI's own collectives. Compiled only when the build
// found MPI (GPUML_MPI); comm_no_mpi.cpp takes its place otherwise.
//
// - The communicator is a duplicate (MPI_Comm_dup) of the one given, so gpuml's messages never
//   match the caller's; errors on it return codes (MPI_ERRORS_RETURN) that become gpuml::Error.
// - Floating-point sums are MPI_Reduce to rank 0 then MPI_Bcast: MPI_Allreduce does not promise
//   every rank the same bits for a non-associative sum, and the estimators need every rank to
//   take the same decisions. Integer sums are exact: MPI_Allreduce.
// - MPI takes int counts: large buffers go in chunks (allgatherv, whose displacements are ints,
//   refuses more than INT_MAX elements with ErrorCode::unsupported).
// - If MPI is not initialized when a communicator is made, gpuml initializes it
//   (MPI_THREAD_SERIALIZED) and finalizes it at exit.
// - Comm::nccl_over_mpi is here too: Comm::nccl_over with MPI carrying the NCCL unique id from
//   rank 0 (the NCCL communicator itself is cuda/core/comm_nccl.cu, which needs no MPI).
// MPI's C API only (Open MPI's and MPICH's mpi.h would pull in the deprecated C++ bindings).
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <mutex>
#include <string>
#include <vector>

#include "core/comm_detail.hpp"
#include "gpuml/core/comm.hpp"
#include "gpuml/core/context.hpp"
#include "gpuml/core/error.hpp"

namespace gpuml {

namespace {

constexpr int64_t kChunk = int64_t{1} << 30;  // elements per MPI call

void check_mpi(int rc, const char* call) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(rc, text, &length) != MPI_SUCCESS) length = 0;
  throw_error(ErrorCode::internal, std::string(call) + " failed: " + std::string(text, static_cast<std::size_t>(length)));
}

void finalize_at_exit() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

void ensure_initialized() {
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
  int initialized = 0, finalized = 0;
  check_mpi(MPI_Initialized(&initialized), "MPI_Initialized");
  check_mpi(MPI_Finalized(&finalized), "MPI_Finalized");
  if (finalized) throw_error(ErrorCode::unsupported, "MPI has already been finalized in this process");
  if (initialized) return;
  int provided = 0;
  check_mpi(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided), "MPI_Init_thread");
  std::atexit(finalize_at_exit);
}

MPI_Datatype mpi_type(DType dtype) {
  switch (dtype) {
    case DType::float32: return MPI_FLOAT;
    case DType::float64: return MPI_DOUBLE;
    case DType::int32: return MPI_INT32_T;
    case DType::int64: return MPI_INT64_T;
  }
  throw_error(ErrorCode::invalid_argument, "Comm (mpi): invalid dtype");
}

class MpiComm final : public Comm {
 public:
  explicit MpiComm(MPI_Comm base) {
    check_mpi(MPI_Comm_dup(base, &comm_), "MPI_Comm_dup");
    check_mpi(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
    check_mpi(MPI_Comm_rank(comm_, &rank_), "MPI_Comm_rank");
    check_mpi(MPI_Comm_size(comm_, &size_), "MPI_Comm_size");
  }
  ~MpiComm() override {
    int finalized = 1;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Comm_free(&comm_);
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  const char* kind() const override { return "mpi"; }

  void allreduce_sum(void* data, int64_t count, DType dtype) override {
    detail::check_collective(*this, "allreduce_sum", data, count, dtype);
    const MPI_Datatype type = mpi_type(dtype);
    const std::size_t bytes = dtype_size(dtype);
    for (int64_t done = 0; done < count; done += kChunk) {
      char* chunk = static_cast<char*>(data) + done * static_cast<int64_t>(bytes);
      const int n = static_cast<int>(std::min(kChunk, count - done));
      if (is_floating(dtype)) {
        check_mpi(MPI_Reduce(rank_ == 0 ? MPI_IN_PLACE : chunk, chunk, n, type, MPI_SUM, 0, comm_), "MPI_Reduce");
        check_mpi(MPI_Bcast(chunk, n, type, 0, comm_), "MPI_Bcast");
      } else {
        check_mpi(MPI_Allreduce(MPI_IN_PLACE, chunk, n, type, MPI_SUM, comm_), "MPI_Allreduce");
      }
    }
  }

  void allgatherv(const void* send, int64_t count, void* recv, const int64_t* counts, DType dtype) override {
    detail::check_collective(*this, "allgatherv", send, count, dtype);
    const int64_t total = detail::check_counts(*this, count, counts);
    detail::check_collective(*this, "allgatherv", recv, total, dtype);
    if (total > INT_MAX)
      throw_error(ErrorCode::unsupported, "Comm::allgatherv (mpi): " + std::to_string(total) +
                                              " elements in all; MPI's int displacements allow at most " +
                                              std::to_string(INT_MAX));
    std::vector<int> n(static_cast<std::size_t>(size_)), offset(static_cast<std::size_t>(size_));
    int64_t at = 0;
    for (int r = 0; r < size_; ++r) {
      n[r] = static_cast<int>(counts[r]);
      offset[r] = static_cast<int>(at);
      at += counts[r];
    }
    // send may be NULL on a rank with nothing to send; MPI wants a valid pointer regardless.
    const void* source = send != nullptr ? send : recv;
    check_mpi(MPI_Allgatherv(source, static_cast<int>(count), mpi_type(dtype), recv, n.data(), offset.data(),
                             mpi_type(dtype), comm_),
              "MPI_Allgatherv");
  }

  void broadcast(void* data, int64_t count, DType dtype, int root) override {
    detail::check_collective(*this, "broadcast", data, count, dtype);
    detail::check_root(*this, "broadcast", root);
    const std::size_t bytes = dtype_size(dtype);
    for (int64_t done = 0; done < count; done += kChunk) {
      char* chunk = static_cast<char*>(data) + done * static_cast<int64_t>(bytes);
      check_mpi(MPI_Bcast(chunk, static_cast<int>(std::min(kChunk, count - done)), mpi_type(dtype), root, comm_),
                "MPI_Bcast");
    }
  }

  void barrier() override { check_mpi(MPI_Barrier(comm_), "MPI_Barrier"); }

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1;
};

}  // namespace

std::shared_ptr<Comm> Comm::mpi_world() {
  ensure_initialized();
  return std::make_shared<MpiComm>(MPI_COMM_WORLD);
}

std::shared_ptr<Comm> Comm::mpi_from_fortran(int64_t fortran_handle) {
  ensure_initialized();
  GPUML_EXPECT(fortran_handle >= INT_MIN && fortran_handle <= INT_MAX,
               "Comm::mpi_from_fortran: " + std::to_string(fortran_handle) + " is not a Fortran communicator handle");
  const MPI_Comm comm = MPI_Comm_f2c(static_cast<MPI_Fint>(fortran_handle));
  GPUML_EXPECT(comm != MPI_COMM_NULL, "Comm::mpi_from_fortran: the handle is MPI_COMM_NULL");
  return std::make_shared<MpiComm>(comm);
}

std::shared_ptr<Comm> Comm::nccl_over_mpi(const Context& ctx) {
  GPUML_EXPECT(ctx.is_cuda(), "Comm::nccl_over_mpi: NCCL needs a CUDA context; use Comm::mpi_world for a CPU context");
  if (!built_with_nccl())
    throw_error(ErrorCode::unsupported, "Comm::nccl_over_mpi: gpuml was built with MPI but without NCCL (GPUML_NCCL=OFF, or "
                                        "NCCL was not found at build time): CUDA contexts cannot be attached over MPI");
  ensure_initialized();
  MpiComm world(MPI_COMM_WORLD);  // a duplicate, freed on return: the id's broadcast never meets the caller's messages
  return nccl_over(ctx, world);
}

}  // namespace gpuml

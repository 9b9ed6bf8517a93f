// Comm's MPI factories in a build without MPI (GPUML_MPI=OFF or MPI not found): they say so
// with ErrorCode::unsupported. (Not compiled when MPI is on; see comm_mpi.cpp.)
#include "gpuml/core/comm.hpp"
#include "gpuml/core/error.hpp"

namespace gpuml {

namespace {
[[noreturn]] void no_mpi() {
  throw_error(ErrorCode::unsupported,
              "gpuml was built without MPI (GPUML_MPI=OFF, or MPI was not found at build time): "
              "MPI communicators are unavailable");
}
}  // namespace

std::shared_ptr<Comm> Comm::mpi_world() { no_mpi(); }
std::shared_ptr<Comm> Comm::mpi_from_fortran(int64_t) { no_mpi(); }
std::shared_ptr<Comm> Comm::nccl_over_mpi(const Context&) {
  throw_error(ErrorCode::unsupported,
              "gpuml was built without MPI (GPUML_MPI=OFF, or MPI was not found at build time): NCCL cannot be "
              "bootstrapped over MPI; make the unique id with Comm::nccl_unique_id and share it yourself (Comm::nccl)");
}

}  // namespace gpuml

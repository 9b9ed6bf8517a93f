#pragma once
// gpuml::Comm: the collectives of distributed (SPMD) training. Every rank calls the same
// estimator fit on its own rows under a context that holds a communicator (Context::attach_comm);
// the fit's collectives make every rank end with the same model.
//
// Implementations: local (1 rank; every collective is the identity, so a fit without a
// communicator is the 1-rank case of the same code), MPI (host memory, over a duplicate of
// MPI_COMM_WORLD or of a caller's communicator), Gloo (host memory, TCP; ranks started by any
// engine meet through a shared directory) and NCCL (CUDA contexts).
//
// Rules: every rank calls the same collectives in the same order with matching dtypes and
// counts (the estimators check that their inputs agree across ranks before their first
// data collective). Buffers are host memory, except in the `_on` forms (a context's memory).
// Counts are elements, not bytes.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gpuml/core/dtype.hpp"
#include "gpuml/core/export.hpp"

namespace gpuml {

class Context;

// Where and how the ranks of a Gloo communicator meet (Comm::gloo).
struct GlooOptions {
  // A directory every rank can read and write (on a file system all hosts share when the ranks
  // span hosts): each rank leaves its addresses there under `prefix`.
  std::string rendezvous_dir;
  // The keys' prefix: one directory serves many jobs, each with a prefix of its own (a prefix
  // used before holds stale addresses; make a fresh one per job, e.g. a UUID).
  std::string prefix = "gpuml";
  // The address this rank listens on: a host name or IP address, or the address of a network
  // interface ("eth0"). Both empty: the address the host's name resolves to.
  std::string hostname;
  std::string interface;
  // Any wait (the rendezvous, a collective) past this fails with ErrorCode::io: a rank that died
  // or never came makes the others fail instead of hang.
  double timeout_seconds = 1800;
};

// A key-value store the caller supplies for the ranks of a Gloo communicator to meet through
// (Comm::gloo with a store), instead of a shared directory: an engine's own (Dask's scheduler,
// a Spark barrier stage's allGather). Each rank sets its keys and gets the others'.
class GPUML_API GlooStore {
 public:
  virtual ~GlooStore();
  virtual void set(const std::string& key, const std::vector<char>& value) = 0;
  // The value of `key`, waiting up to timeout_seconds for some rank to set it; throws
  // ErrorCode::io when none does in time.
  virtual std::vector<char> get(const std::string& key, double timeout_seconds) = 0;
};

// How the ranks of a CUDA context exchange data over a host communicator's ranks (Comm::for_context).
enum class GpuTransport {
  automatic,  // NCCL when gpuml has it and every rank has a GPU of its own; else host
  nccl,       // NCCL bootstrapped over the host communicator (every rank on a GPU of its own)
  host,       // the host communicator itself, device memory staged through host memory
};

class GPUML_API Comm {
 public:
  virtual ~Comm();

  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual const char* kind() const = 0;  // "local", "mpi", "gloo", "nccl" or "caller" (the C ABI's gpuml_comm_t)

  // In place: data[i] = the sum over ranks of data[i]. Every rank ends with the same bits
  // (floating-point sums are reduced once and broadcast, not summed on every rank).
  virtual void allreduce_sum(void* data, int64_t count, DType dtype) = 0;
  // recv (size() * count elements) = each rank's send (count elements), in rank order: the
  // allgatherv of equal counts.
  void allgather(const void* send, int64_t count, void* recv, DType dtype);
  // recv = each rank's send in rank order, counts[r] elements from rank r. counts has size()
  // entries, the same on every rank; count (this rank's) must equal counts[rank()].
  virtual void allgatherv(const void* send, int64_t count, void* recv, const int64_t* counts, DType dtype) = 0;
  // data (count elements) = root's data.
  virtual void broadcast(void* data, int64_t count, DType dtype, int root) = 0;
  virtual void barrier() = 0;

  // allreduce_sum and allgatherv on memory of `ctx`'s device: device memory of a CUDA context
  // (ordered on the context's stream), host memory of a CPU context. NCCL reads and writes device
  // memory directly; the host communicators (local, MPI) stage it through host memory.
  virtual void allreduce_sum_on(const Context& ctx, void* data, int64_t count, DType dtype);
  virtual void allgatherv_on(const Context& ctx, const void* send, int64_t count, void* recv, const int64_t* counts,
                             DType dtype);

  template <typename T>
  void allreduce_sum(T* data, int64_t count) {
    allreduce_sum(static_cast<void*>(data), count, dtype_of<T>::value);
  }
  template <typename T>
  std::vector<T> allgather(const T& value) {
    std::vector<T> out(static_cast<std::size_t>(size()));
    allgather(&value, 1, out.data(), dtype_of<T>::value);
    return out;
  }
  template <typename T>
  void broadcast(T* data, int64_t count, int root) {
    broadcast(static_cast<void*>(data), count, dtype_of<T>::value, root);
  }

  // A communicator of one rank.
  static std::shared_ptr<Comm> local();
  // MPI over (a duplicate of) MPI_COMM_WORLD; initializes MPI when the caller has not (and then
  // finalizes it at exit). Collective: every rank must call it. ErrorCode::unsupported when
  // gpuml was built without MPI.
  static std::shared_ptr<Comm> mpi_world();
  // MPI over (a duplicate of) any communicator, given by its Fortran handle, which is an
  // integer in every MPI: MPI_Comm_c2f(comm) in C, comm.py2f() in mpi4py. Collective.
  static std::shared_ptr<Comm> mpi_from_fortran(int64_t fortran_handle);
  // Gloo over TCP for n_ranks ranks, this one `rank`, meeting through options.rendezvous_dir.
  // Collective: every rank calls it with the same n_ranks, directory and prefix. Host memory,
  // like MPI (a CUDA context's memory is staged through the host). ErrorCode::unsupported when
  // gpuml was built without Gloo; ErrorCode::io when the ranks do not all meet in time.
  static std::shared_ptr<Comm> gloo(int n_ranks, int rank, const GlooOptions& options);
  // The same, meeting through `store` (options.rendezvous_dir unused; the keys under
  // options.prefix). The store is used during this call only.
  static std::shared_ptr<Comm> gloo(int n_ranks, int rank, GlooStore& store, const GlooOptions& options);
  // NCCL over the GPUs of a CUDA context on every rank, from a unique id that one rank made
  // (nccl_unique_id) and shared with the others by any means (MPI, a file, Dask, torchrun).
  // Collective. The buffers stay host memory: each collective goes through a device scratch
  // buffer on the context's stream. ErrorCode::unsupported when gpuml was built without NCCL.
  static std::shared_ptr<Comm> nccl(const Context& ctx, const uint8_t unique_id[128], int n_ranks, int rank);
  static void nccl_unique_id(uint8_t out[128]);
  // NCCL over the GPU of a CUDA context on every rank of MPI_COMM_WORLD, bootstrapped over MPI:
  // rank 0 makes the unique id and MPI broadcasts it (initializing MPI as mpi_world does).
  // Collective. The context's device is the caller's choice: ranks on one node need distinct
  // GPUs (NCCL refuses two ranks on one GPU). ErrorCode::unsupported without MPI or NCCL.
  static std::shared_ptr<Comm> nccl_over_mpi(const Context& ctx);
  // NCCL over the GPU of a CUDA context on every rank of `bootstrap` (any communicator: MPI,
  // Gloo), which carries rank 0's unique id to the others. Collective over bootstrap, which may
  // be dropped afterwards. ErrorCode::unsupported without NCCL.
  static std::shared_ptr<Comm> nccl_over(const Context& ctx, Comm& bootstrap);
  // The communicator for `ctx` over the ranks of `host` (collective over host): host itself for
  // a CPU context; for a CUDA context, as `transport` says. The ranks learn together whether each
  // has a GPU of its own (NCCL refuses two ranks on one GPU) and whether each has NCCL, so all
  // take the same choice, or all throw invalid_argument (nccl asked for where it cannot run).
  static std::shared_ptr<Comm> for_context(const Context& ctx, std::shared_ptr<Comm> host,
                                           GpuTransport transport = GpuTransport::automatic);
};

// Whether this library was built with MPI (GPUML_MPI).
GPUML_API bool built_with_mpi() noexcept;
// Whether this library was built with Gloo (GPUML_GLOO).
GPUML_API bool built_with_gloo() noexcept;
// Whether this library was built with NCCL (GPUML_NCCL).
GPUML_API bool built_with_nccl() noexcept;

}  // namespace gpuml

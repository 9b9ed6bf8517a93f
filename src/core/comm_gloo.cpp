// gpuml::Comm over Gloo (TCP, host memory): the communicator of engines that start the ranks
// without MPI (Dask, Spark, a plain launcher). Compiled only when the build found Gloo
// (GPUML_GLOO); comm_no_gloo.cpp takes its place otherwise.
//
// - The ranks meet through a Gloo file store, a directory every rank can read and write (a shared
//   file system across hosts), or through a caller's GlooStore; each job's keys under its prefix.
// - Sums, whatever the dtype, are a reduce to rank 0 then a broadcast, as over MPI: every rank
//   holds the same bits, so every rank takes the same decisions.
// - Gloo reports a failed peer or a wait past the timeout by an exception; it becomes
//   ErrorCode::io naming the collective. The communicator is unusable after one.
#include <gloo/allgatherv.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/math.h>
#include <gloo/reduce.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>

#include <chrono>
#include <cmath>
#include <exception>
#include <map>
#include <string>
#include <sys/stat.h>
#include <vector>

#include "core/comm_detail.hpp"
#include "gpuml/core/comm.hpp"
#include "gpuml/core/error.hpp"

namespace gpuml {

namespace {

// Runs a Gloo call; its exceptions become ErrorCode::io naming `what`.
template <typename F>
void gloo_call(const std::string& what, F&& f) {
  try {
    f();
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    throw_error(ErrorCode::io, what + " (gloo) failed: " + e.what());
  }
}

template <typename T>
void reduce_sum_to_root(const std::shared_ptr<gloo::Context>& context, void* data, int64_t count) {
  gloo::ReduceOptions options(context);
  options.setOutput(static_cast<T*>(data), static_cast<std::size_t>(count));
  options.setRoot(0);
  options.setReduceFunction(static_cast<void (*)(void*, const void*, const void*, std::size_t)>(&gloo::sum<T>));
  gloo::reduce(options);
}

// Gloo's store interface over a caller's GlooStore: wait fetches the keys (then kept for get).
class CallerStore final : public gloo::rendezvous::Store {
 public:
  CallerStore(GlooStore& store, double timeout_seconds) : store_(store), timeout_seconds_(timeout_seconds) {}
  void set(const std::string& key, const std::vector<char>& data) override { store_.set(key, data); }
  std::vector<char> get(const std::string& key) override {
    auto found = fetched_.find(key);
    return found != fetched_.end() ? found->second : store_.get(key, timeout_seconds_);
  }
  void wait(const std::vector<std::string>& keys) override { wait(keys, std::chrono::milliseconds(0)); }
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) override {
    const double seconds = timeout.count() > 0 ? timeout.count() / 1000.0 : timeout_seconds_;
    for (const std::string& key : keys)
      if (fetched_.find(key) == fetched_.end()) fetched_[key] = store_.get(key, seconds);
  }

 private:
  GlooStore& store_;
  double timeout_seconds_;
  std::map<std::string, std::vector<char>> fetched_;
};

class GlooComm final : public Comm {
 public:
  // Meets the other ranks through `store` (its keys under options.prefix).
  GlooComm(int n_ranks, int rank, gloo::rendezvous::Store& store, const std::string& where, const GlooOptions& options)
      : rank_(rank), size_(n_ranks) {
    gloo::transport::tcp::attr attr;
    attr.hostname = options.hostname;
    attr.iface = options.interface;
    gloo_call("Comm::gloo: the rendezvous " + where, [&] {
      std::shared_ptr<gloo::transport::Device> device = gloo::transport::tcp::CreateDevice(attr);
      gloo::rendezvous::PrefixStore prefixed(options.prefix, store);
      auto context = std::make_shared<gloo::rendezvous::Context>(rank, n_ranks);
      context->setTimeout(std::chrono::milliseconds(static_cast<int64_t>(options.timeout_seconds * 1000.0)));
      context->connectFullMesh(prefixed, device);
      context_ = context;
    });
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  const char* kind() const override { return "gloo"; }

  void allreduce_sum(void* data, int64_t count, DType dtype) override {
    detail::check_collective(*this, "allreduce_sum", data, count, dtype);
    if (count == 0 || size_ == 1) return;
    gloo_call("Comm::allreduce_sum", [&] {
      switch (dtype) {
        case DType::float32: reduce_sum_to_root<float>(context_, data, count); break;
        case DType::float64: reduce_sum_to_root<double>(context_, data, count); break;
        case DType::int32: reduce_sum_to_root<int32_t>(context_, data, count); break;
        case DType::int64: reduce_sum_to_root<int64_t>(context_, data, count); break;
      }
    });
    broadcast(data, count, dtype, 0);
  }

  void allgatherv(const void* send, int64_t count, void* recv, const int64_t* counts, DType dtype) override {
    detail::check_collective(*this, "allgatherv", send, count, dtype);
    const int64_t total = detail::check_counts(*this, count, counts);
    detail::check_collective(*this, "allgatherv", recv, total, dtype);
    if (total == 0) return;
    const std::size_t unit = dtype_size(dtype);
    // Gloo counts bytes here: one element type for all dtypes.
    std::vector<std::size_t> bytes(static_cast<std::size_t>(size_));
    for (int r = 0; r < size_; ++r) bytes[r] = static_cast<std::size_t>(counts[r]) * unit;
    gloo_call("Comm::allgatherv", [&] {
      gloo::AllgathervOptions options(context_);
      // A rank with nothing to send still hands Gloo a buffer (its output, which it then overwrites).
      char* source = count > 0 ? const_cast<char*>(static_cast<const char*>(send)) : nullptr;
      if (source != nullptr) options.setInput(source, bytes[rank_]);
      options.setOutput(static_cast<char*>(recv), bytes);
      gloo::allgatherv(options);
    });
  }

  void broadcast(void* data, int64_t count, DType dtype, int root) override {
    detail::check_collective(*this, "broadcast", data, count, dtype);
    detail::check_root(*this, "broadcast", root);
    if (count == 0 || size_ == 1) return;
    gloo_call("Comm::broadcast", [&] {
      gloo::BroadcastOptions options(context_);
      options.setOutput(static_cast<char*>(data), static_cast<std::size_t>(count) * dtype_size(dtype));
      options.setRoot(root);
      gloo::broadcast(options);
    });
  }

  void barrier() override {
    if (size_ == 1) return;
    gloo_call("Comm::barrier", [&] {
      gloo::BarrierOptions options(context_);
      gloo::barrier(options);
    });
  }

 private:
  std::shared_ptr<gloo::Context> context_;
  int rank_ = 0, size_ = 1;
};

}  // namespace

namespace {

void check_gloo_arguments(int n_ranks, int rank, const GlooOptions& options) {
  GPUML_EXPECT(n_ranks >= 1, "Comm::gloo: n_ranks must be >= 1, got " + std::to_string(n_ranks));
  GPUML_EXPECT(rank >= 0 && rank < n_ranks, "Comm::gloo: rank must be in [0, n_ranks) = [0, " + std::to_string(n_ranks) +
                                                "), got " + std::to_string(rank));
  GPUML_EXPECT(std::isfinite(options.timeout_seconds) && options.timeout_seconds > 0 && options.timeout_seconds <= 1e9,
               "Comm::gloo: timeout_seconds must be a positive number of seconds, got " +
                   std::to_string(options.timeout_seconds));
}

}  // namespace

std::shared_ptr<Comm> Comm::gloo(int n_ranks, int rank, const GlooOptions& options) {
  check_gloo_arguments(n_ranks, rank, options);
  GPUML_EXPECT(!options.rendezvous_dir.empty(), "Comm::gloo: rendezvous_dir is empty; give a directory every rank can reach");
  struct stat info {};
  GPUML_EXPECT(::stat(options.rendezvous_dir.c_str(), &info) == 0 && S_ISDIR(info.st_mode),
               "Comm::gloo: rendezvous_dir " + options.rendezvous_dir + " is not a directory");
  gloo::rendezvous::FileStore files(options.rendezvous_dir);
  return std::make_shared<GlooComm>(n_ranks, rank, files, "in " + options.rendezvous_dir, options);
}

std::shared_ptr<Comm> Comm::gloo(int n_ranks, int rank, GlooStore& store, const GlooOptions& options) {
  check_gloo_arguments(n_ranks, rank, options);
  CallerStore adapter(store, options.timeout_seconds);
  return std::make_shared<GlooComm>(n_ranks, rank, adapter, "through the caller's store", options);
}

}  // namespace gpuml

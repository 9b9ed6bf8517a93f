#include "gpuml/core/context.hpp"

#include <omp.h>

#include <cstdlib>
#include <random>

#include "core/device_ops.hpp"
#include "gpuml/core/comm.hpp"
#include "gpuml/core/error.hpp"

namespace gpuml {

struct Context::Impl {
  Device device;
  int n_threads = 1;
  uint64_t seed = 0;
  std::shared_ptr<cuda::Resources> cuda;  // set for CUDA contexts
  std::shared_ptr<Comm> comm;             // set once attached; Comm::local() until then
};

namespace {
uint64_t fresh_seed() {
  std::random_device rd;
  return (static_cast<uint64_t>(rd()) << 32) ^ rd();
}
}  // namespace

Context Context::cpu(int n_threads) {
  GPUML_EXPECT(n_threads >= 0, "n_threads must be >= 0 (0 means all hardware threads), got " + std::to_string(n_threads));
  auto impl = std::make_shared<Impl>();
  impl->device = Device{DeviceType::cpu, 0};
  impl->n_threads = n_threads > 0 ? n_threads : omp_get_max_threads();
  impl->seed = fresh_seed();
  return Context(impl);
}

Context Context::cuda(int device_id) {
  GPUML_EXPECT(device_id >= 0, "CUDA device id must be >= 0, got " + std::to_string(device_id));
  auto impl = std::make_shared<Impl>();
  impl->device = Device{DeviceType::cuda, device_id};
  impl->n_threads = omp_get_max_threads();
  impl->seed = fresh_seed();
  impl->cuda = detail::create_cuda_resources(device_id);  // throws when built without CUDA or no device
  return Context(impl);
}

Context Context::best() { return cuda_device_count() > 0 ? cuda(0) : cpu(); }

Context Context::from_string(const std::string& device) {
  if (device.empty() || device == "auto") return best();
  if (device == "cpu") return cpu();
  if (device == "cuda") return cuda(0);
  if (device.rfind("cuda:", 0) == 0) {
    const std::string id = device.substr(5);
    bool digits = !id.empty() && id.size() < 9 && id.find_first_not_of("0123456789") == std::string::npos;
    if (digits) return cuda(std::stoi(id));
  }
  throw_error(ErrorCode::invalid_argument,
              "device must be \"auto\", \"cpu\", \"cuda\" or \"cuda:N\", got \"" + device + "\"");
}

Device Context::device() const { return impl_->device; }
int Context::n_threads() const { return impl_->n_threads; }
uint64_t Context::seed() const { return impl_->seed; }
void Context::set_seed(uint64_t seed) { impl_->seed = seed; }

void Context::synchronize() const {
  if (impl_->cuda) detail::device_synchronize(*impl_->cuda);
}

Comm& Context::comm() const { return impl_->comm ? *impl_->comm : *Comm::local(); }
bool Context::has_comm() const { return impl_->comm != nullptr; }

void Context::attach_comm(std::shared_ptr<Comm> comm) {
  GPUML_EXPECT(comm != nullptr, "attach_comm: the communicator is null");
  GPUML_EXPECT(impl_->comm == nullptr, std::string("attach_comm: this context already has a communicator (") +
                                           impl_->comm->kind() + ", rank " + std::to_string(impl_->comm->rank()) + " of " +
                                           std::to_string(impl_->comm->size()) + "); attach once per context");
  impl_->comm = std::move(comm);
}

void Context::set_memory_limit(int64_t bytes) {
  if (!impl_->cuda) throw_error(ErrorCode::unsupported, "set_memory_limit: the memory limit is for CUDA contexts");
  GPUML_EXPECT(bytes >= 0, "set_memory_limit: the limit must be >= 0 bytes (0: none), got " + std::to_string(bytes));
  detail::set_device_memory_limit(*impl_->cuda, bytes);
}

int64_t Context::memory_limit() const { return impl_->cuda ? detail::device_memory_limit(*impl_->cuda) : 0; }

int64_t Context::memory_in_use() const { return impl_->cuda ? detail::device_memory_in_use(*impl_->cuda) : 0; }

cuda::Resources& Context::cuda_resources() const {
  if (!impl_->cuda) throw_error(ErrorCode::internal, "CUDA resources asked of a CPU context");
  return *impl_->cuda;
}

std::shared_ptr<void> Context::keepalive() const { return impl_->cuda; }

int cuda_device_count() noexcept { return detail::cuda_device_count_impl(); }
bool built_with_cuda() noexcept { return GPUML_WITH_CUDA != 0; }

}  // namespace gpuml

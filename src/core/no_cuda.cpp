// The device side of the core and the estimators in a build without CUDA: every entry that
// would touch a GPU says so with ErrorCode::unsupported. (Not compiled when CUDA is on.)
#include "cluster/kmeans_backend.hpp"
#include "core/device_ops.hpp"
#include "core/sparse_backend.hpp"
#include "ensemble/forest_backend.hpp"
#include "ensemble/levelwise.hpp"
#include "graph/pagerank_backend.hpp"
#include "linear_model/linear_backend.hpp"
#include "linear_model/logistic_backend.hpp"
#include "gpuml/core/comm.hpp"
#include "gpuml/core/error.hpp"

#include <cstring>

namespace gpuml::detail {

namespace {
[[noreturn]] void no_cuda() {
  throw_error(ErrorCode::unsupported, "gpuml was built without CUDA: only the \"cpu\" device is available");
}
}  // namespace

int cuda_device_count_impl() noexcept { return 0; }
std::shared_ptr<cuda::Resources> create_cuda_resources(int) { no_cuda(); }
void* device_allocate(cuda::Resources&, std::size_t) { no_cuda(); }
void device_free(cuda::Resources&, void*, std::size_t) noexcept {}
void set_device_memory_limit(cuda::Resources&, int64_t) { no_cuda(); }
int64_t device_memory_limit(const cuda::Resources&) { no_cuda(); }
int64_t device_memory_in_use(const cuda::Resources&) { no_cuda(); }
void device_synchronize(cuda::Resources&) { no_cuda(); }
void cuda_device_uuid(int, uint8_t*) { no_cuda(); }

void copy_bytes(const Context&, void* dst, Device dst_device, const void* src, Device src_device, std::size_t bytes) {
  if (dst_device.is_cuda() || src_device.is_cuda()) no_cuda();
  if (bytes) std::memcpy(dst, src, bytes);
}

void copy_rows(const Context&, void* dst, Device dst_device, const void* src, Device src_device, int64_t rows,
               std::size_t row_bytes, std::size_t src_pitch) {
  if (dst_device.is_cuda() || src_device.is_cuda()) no_cuda();
  for (int64_t r = 0; r < rows; ++r)
    std::memcpy(static_cast<char*>(dst) + r * row_bytes, static_cast<const char*>(src) + r * src_pitch, row_bytes);
}

void check_pointer_location(const void*, Device device, const char* what) {
  if (device.is_cuda())
    throw_error(ErrorCode::unsupported,
                std::string(what) + " is in CUDA memory, but gpuml was built without CUDA");
}

bool convert_dtype_device(const Context&, const void*, DType, void*, DType, int64_t) { no_cuda(); }
bool all_finite_device(const Context&, const void*, DType, int64_t) { no_cuda(); }
void fill_device(const Context&, void*, DType, int64_t, double) { no_cuda(); }

template <typename T>
std::unique_ptr<SparseMatrix<T>> make_sparse_cuda_matrix(const Context&, const SparseView&, const char*) { no_cuda(); }
template std::unique_ptr<SparseMatrix<float>> make_sparse_cuda_matrix<float>(const Context&, const SparseView&, const char*);
template std::unique_ptr<SparseMatrix<double>> make_sparse_cuda_matrix<double>(const Context&, const SparseView&, const char*);

template <typename T>
std::unique_ptr<KMeansBackend<T>> make_kmeans_cuda_backend(const Context&) { no_cuda(); }
template std::unique_ptr<KMeansBackend<float>> make_kmeans_cuda_backend<float>(const Context&);
template std::unique_ptr<KMeansBackend<double>> make_kmeans_cuda_backend<double>(const Context&);

template <typename T>
std::unique_ptr<LinearBackend<T>> make_linear_cuda_backend(const Context&) { no_cuda(); }
template std::unique_ptr<LinearBackend<float>> make_linear_cuda_backend<float>(const Context&);
template std::unique_ptr<LinearBackend<double>> make_linear_cuda_backend<double>(const Context&);

template <typename T>
std::unique_ptr<LogisticBackend<T>> make_logistic_cuda_backend(const Context&) { no_cuda(); }
template std::unique_ptr<LogisticBackend<float>> make_logistic_cuda_backend<float>(const Context&);
template std::unique_ptr<LogisticBackend<double>> make_logistic_cuda_backend<double>(const Context&);

template <typename T>
std::unique_ptr<ForestBackend<T>> make_forest_cuda_backend(const Context&) { no_cuda(); }
template std::unique_ptr<ForestBackend<float>> make_forest_cuda_backend<float>(const Context&);
template std::unique_ptr<ForestBackend<double>> make_forest_cuda_backend<double>(const Context&);

std::unique_ptr<LevelBackend> make_level_cuda_backend(const Context&, Comm*) { no_cuda(); }

template <typename T>
std::unique_ptr<PageRankBackend<T>> make_pagerank_cuda_backend(const Context&) { no_cuda(); }
template std::unique_ptr<PageRankBackend<float>> make_pagerank_cuda_backend<float>(const Context&);
template std::unique_ptr<PageRankBackend<double>> make_pagerank_cuda_backend<double>(const Context&);

}  // namespace gpuml::detail

namespace gpuml {

std::shared_ptr<Comm> Comm::nccl(const Context&, const uint8_t*, int, int) {
  throw_error(ErrorCode::unsupported, "gpuml was built without CUDA: no NCCL communicators");
}
void Comm::nccl_unique_id(uint8_t*) { throw_error(ErrorCode::unsupported, "gpuml was built without CUDA: no NCCL communicators"); }
bool built_with_nccl() noexcept { return false; }

}  // namespace gpuml

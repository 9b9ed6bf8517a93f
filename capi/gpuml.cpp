// The C ABI (capi/include/gpuml/gpuml.h) over the C++ API.
//
// Rules every entry point follows:
// - No exception crosses the ABI. gpuml::Error becomes its code, std::bad_alloc becomes
//   GPUML_ERROR_OUT_OF_MEMORY, anything else GPUML_ERROR_INTERNAL.
// - gpuml_last_error() returns the message of the most recent failed call on the calling
//   thread. Successful calls leave it untouched (as errno does), so read it only after a call
//   returned a status other than GPUML_OK. It is "" before any failure and never NULL.
// - A NULL pointer argument is GPUML_ERROR_INVALID_ARGUMENT naming the argument, except where
//   the header says "or NULL" (fit's y and sample_weight; pagerank's and the graph functions'
//   weights, personalization, nstart and dangling), context_create's device (NULL means
//   "auto"), and the free functions, which accept NULL and do nothing (as free() does).
//   gpuml_version skips NULL outputs (it has no status to report with); gpuml_build_info
//   returns "{}" if building its JSON fails.
// - Output handles (`out`) are set to NULL first, so they are NULL after any failure.
//
// Arrays (gpuml_array_t) are checked before the core sees them:
// - dtype is 0..3, device_type is 1 (CPU) or 2 (CUDA), device_id >= 0 (ignored for the CPU),
//   ndim is 0, 1 or 2 and shape[i] >= 0 for i < ndim; entries at i >= ndim are ignored.
// - data may be NULL only when the array has no elements (a 0-d array has one).
// - Strides are in elements and must be given: there is no "NULL strides means C order"
//   as in DLPack, because the struct has fixed arrays and a zeroed struct is a common mistake.
//   A C-contiguous n x d array has strides {d, 1}, a vector of length n has {1}. Negative
//   strides are rejected; a zero stride is rejected on any dimension longer than 1.
//   Arrays with no elements skip the stride checks.
// - A CUDA array on a build without CUDA, or host memory declared as CUDA memory (and the
//   reverse), is an error reported by the core.
//
// Estimator handles may be shared between threads: fit, set_attribute and free take the handle's
// lock exclusively (and get_params, which rewrites the handle's string); predict, transform,
// predict_proba, output_shape, attribute_shape, get_attribute, serialized_size and serialize
// take it shared, so many threads can predict at once while a fit waits for them. serialize
// writes exactly `size` bytes or fails: a size other than the model's serialized size (a fit on
// another thread between serialized_size and serialize) is INVALID_ARGUMENT, never a short
// model. A context handle is used by one thread at a time (gpuml::Context's rule); give each
// thread its own.
//
// Graph handles (gpuml_graph_t) are keys into a registry of live graphs, never dereferenced, and
// never reused: a freed handle (or any value that was not returned by gpuml_graph_create) is
// INVALID_ARGUMENT, not a read of freed memory. Calls on one graph take its lock, so they may come
// from several threads (pagerank calls on one graph run one at a time); free waits for calls
// already inside.
#include "gpuml/gpuml.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <new>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/comm_detail.hpp"
#include "core/distributed.hpp"
#include "core/staging.hpp"
#include "gpuml/core/comm.hpp"
#include "gpuml/core/context.hpp"
#include "gpuml/core/error.hpp"
#include "gpuml/core/estimator.hpp"
#include "core/params.hpp"
#include "gpuml/core/progress.hpp"
#include "gpuml/graph/graph.hpp"
#include "gpuml/graph/pagerank.hpp"

#if !defined(GPUML_VERSION_MAJOR) || !defined(GPUML_VERSION_MINOR) || !defined(GPUML_VERSION_PATCH)
#error "GPUML_VERSION_MAJOR/MINOR/PATCH must be defined by the build (see CMakeLists.txt)"
#endif
#if !defined(GPUML_WITH_CUDA) || !defined(GPUML_WITH_NCCL) || !defined(GPUML_WITH_MPI) || \
    !defined(GPUML_CUDA_ARCHITECTURES) || !defined(GPUML_CUDA_VERSION)
#error "GPUML_WITH_CUDA/NCCL/MPI and GPUML_CUDA_ARCHITECTURES/VERSION must be defined by the build"
#endif

struct gpuml_context_s {
  gpuml::Context ctx;
};

struct gpuml_estimator_s {
  std::unique_ptr<gpuml::Estimator> impl;
  std::shared_mutex mutex;
  std::string params_json;  // what get_params hands out; valid until the next call on the handle
};

namespace {

using gpuml::ErrorCode;

// ---- graph handles ------------------------------------------------------------------------------

struct GraphEntry {
  explicit GraphEntry(gpuml::Graph g) : graph(std::move(g)) {}
  gpuml::Graph graph;
  std::mutex mutex;  // one call on the graph at a time: its backend keeps scratch between iterations
};

// The live graphs by handle value. Leaked on purpose: graphs still alive at exit must not be
// destroyed after the CUDA runtime has gone.
struct GraphRegistry {
  std::mutex mutex;
  std::unordered_map<uintptr_t, std::shared_ptr<GraphEntry>> live;
  uintptr_t next = 1;  // handle values are never reused, so a stale one is always found missing
};

GraphRegistry& graph_registry() {
  static GraphRegistry* registry = new GraphRegistry;
  return *registry;
}

thread_local std::string last_error;
// Used when recording a message itself runs out of memory.
thread_local const char* last_error_fallback = nullptr;

void record_error(const char* prefix, const char* function, const char* message) noexcept {
  try {
    last_error.assign(prefix);
    last_error.append(function);
    last_error.append(": ");
    last_error.append(message);
    last_error_fallback = nullptr;
  } catch (...) {
    last_error_fallback = "out of memory while recording an error message";
  }
}

// Runs `body` and turns whatever it throws into a status and a thread-local message.
template <typename Body>
gpuml_status_t guarded(const char* function, Body&& body) noexcept {
  try {
    body();
    return GPUML_OK;
  } catch (const gpuml::Error& e) {
    try {
      last_error = e.what();
      last_error_fallback = nullptr;
    } catch (...) {
      last_error_fallback = "out of memory while recording an error message";
    }
    return static_cast<gpuml_status_t>(static_cast<int>(e.code()));
  } catch (const std::bad_alloc& e) {
    record_error("out of memory in ", function, e.what());
    return GPUML_ERROR_OUT_OF_MEMORY;
  } catch (const std::exception& e) {
    record_error("internal error in ", function, e.what());
    return GPUML_ERROR_INTERNAL;
  } catch (...) {
    record_error("internal error in ", function, "unknown exception");
    return GPUML_ERROR_INTERNAL;
  }
}

[[noreturn]] void invalid(const std::string& message) { gpuml::throw_error(ErrorCode::invalid_argument, message); }

template <typename T>
void require_arg(const T* pointer, const char* function, const char* name) {
  if (pointer == nullptr) invalid(std::string(function) + ": argument '" + name + "' is NULL");
}

gpuml::Context& context_of(gpuml_context_t ctx, const char* function) {
  require_arg(ctx, function, "ctx");
  return ctx->ctx;
}

gpuml::Estimator& estimator_of(gpuml_estimator_t est, const char* function) {
  require_arg(est, function, "est");
  return *est->impl;
}

// The graph behind a handle; kept alive by the returned pointer even if another thread frees the handle.
std::shared_ptr<GraphEntry> graph_of(gpuml_graph_t graph, const char* function) {
  require_arg(graph, function, "graph");
  GraphRegistry& registry = graph_registry();
  std::lock_guard<std::mutex> lock(registry.mutex);
  const auto found = registry.live.find(reinterpret_cast<uintptr_t>(graph));
  if (found == registry.live.end())
    invalid(std::string(function) + ": graph is not a live graph handle (freed already, or not made by gpuml_graph_create)");
  return found->second;
}

// pagerank's params_json: {"alpha", "max_iter", "tol", "allow_unconverged"}, any subset.
gpuml::PageRankParams pagerank_params(const char* params_json, const char* function) {
  require_arg(params_json, function, "params_json");
  gpuml::PageRankParams params;
  const nlohmann::json json = gpuml::detail::parse_params(params_json, "pagerank");
  gpuml::detail::ParamReader reader(json, "pagerank");
  params.alpha = reader.get_double("alpha", params.alpha);
  params.max_iter = reader.get_int("max_iter", params.max_iter);
  params.tol = reader.get_double("tol", params.tol);
  params.allow_unconverged = reader.get_bool("allow_unconverged", params.allow_unconverged);
  reader.finish();
  return params;
}

// Runs one pagerank call and reports its n_iter and converged, also when it did not converge.
template <typename Call>
void report_pagerank(Call&& call, const gpuml::PageRankParams& params, int64_t* n_iter, int32_t* converged) {
  try {
    const gpuml::PageRankResult result = call();
    *n_iter = result.n_iter;
    *converged = result.converged ? 1 : 0;
  } catch (const gpuml::Error& e) {
    if (e.code() == ErrorCode::not_converged) *n_iter = params.max_iter;
    throw;
  }
}

// Checks a caller's array descriptor against the rules in this file's header comment.
gpuml::ArrayView to_view(const gpuml_array_t* a, const char* function, const char* name) {
  require_arg(a, function, name);
  const std::string where = std::string(function) + ": " + name;
  if (!gpuml::is_valid_dtype(a->dtype))
    invalid(where + ".dtype is " + std::to_string(a->dtype) +
            ": expected 0 (float32), 1 (float64), 2 (int32) or 3 (int64)");
  if (a->device_type != GPUML_DEVICE_CPU && a->device_type != GPUML_DEVICE_CUDA)
    invalid(where + ".device_type is " + std::to_string(a->device_type) +
            ": expected 1 (GPUML_DEVICE_CPU) or 2 (GPUML_DEVICE_CUDA)");
  if (a->device_id < 0) invalid(where + ".device_id is " + std::to_string(a->device_id) + ": expected >= 0");
  if (a->ndim < 0 || a->ndim > 2) invalid(where + ".ndim is " + std::to_string(a->ndim) + ": expected 0, 1 or 2");

  const int64_t max = std::numeric_limits<int64_t>::max();
  int64_t size = 1;
  for (int i = 0; i < a->ndim; ++i) {
    const std::string shape_i = where + ".shape[" + std::to_string(i) + "]";
    if (a->shape[i] < 0) invalid(shape_i + " is " + std::to_string(a->shape[i]) + ": expected >= 0");
    if (a->shape[i] > 0 && size > max / a->shape[i]) invalid(shape_i + " makes the element count overflow int64");
    size *= a->shape[i];
  }
  if (size > 0 && a->data == nullptr)
    invalid(where + ".data is NULL but the array has " + std::to_string(size) + " elements");

  if (size > 0) {
    const int64_t element_bytes = static_cast<int64_t>(gpuml::dtype_size(static_cast<gpuml::DType>(a->dtype)));
    int64_t last_offset = 0;  // in elements, of the last element from the first
    for (int i = 0; i < a->ndim; ++i) {
      const std::string stride_i = where + ".strides[" + std::to_string(i) + "]";
      if (a->strides[i] < 0)
        invalid(stride_i + " is " + std::to_string(a->strides[i]) + ": negative strides are not supported");
      if (a->shape[i] > 1 && a->strides[i] == 0)
        invalid(stride_i + " is 0: strides must be given, in elements (a row-major n x d array has {d, 1})");
      if (a->shape[i] > 1) {
        const int64_t span_limit = (max / element_bytes - last_offset) / (a->shape[i] - 1);
        if (a->strides[i] > span_limit) invalid(stride_i + " makes the array's extent overflow int64");
        last_offset += (a->shape[i] - 1) * a->strides[i];
      }
    }
  }

  gpuml::ArrayView view;
  view.data = a->data;
  view.dtype = static_cast<gpuml::DType>(a->dtype);
  view.device.type = static_cast<gpuml::DeviceType>(a->device_type);
  view.device.id = a->device_type == GPUML_DEVICE_CUDA ? a->device_id : 0;
  view.ndim = a->ndim;
  for (int i = 0; i < a->ndim; ++i) {
    view.shape[i] = a->shape[i];
    view.strides[i] = a->strides[i];
  }
  return view;
}

// Checks a caller's sparse descriptor's fields (the core checks the arrays' contents).
gpuml::SparseView to_sparse_view(const gpuml_sparse_t* a, const char* function, const char* name) {
  require_arg(a, function, name);
  const std::string where = std::string(function) + ": " + name;
  if (a->format != GPUML_SPARSE_CSR && a->format != GPUML_SPARSE_CSC)
    invalid(where + ".format is " + std::to_string(a->format) + ": expected 0 (GPUML_SPARSE_CSR) or 1 (GPUML_SPARSE_CSC)");
  if (a->dtype != GPUML_FLOAT32 && a->dtype != GPUML_FLOAT64)
    invalid(where + ".dtype is " + std::to_string(a->dtype) + ": expected 0 (float32) or 1 (float64)");
  if (a->index_dtype != GPUML_INT32 && a->index_dtype != GPUML_INT64)
    invalid(where + ".index_dtype is " + std::to_string(a->index_dtype) + ": expected 2 (int32) or 3 (int64)");
  if (a->device_type != GPUML_DEVICE_CPU && a->device_type != GPUML_DEVICE_CUDA)
    invalid(where + ".device_type is " + std::to_string(a->device_type) +
            ": expected 1 (GPUML_DEVICE_CPU) or 2 (GPUML_DEVICE_CUDA)");
  if (a->device_id < 0) invalid(where + ".device_id is " + std::to_string(a->device_id) + ": expected >= 0");
  if (a->reserved != 0) invalid(where + ".reserved is " + std::to_string(a->reserved) + ": expected 0");
  for (int i = 0; i < 2; ++i)
    if (a->shape[i] < 0)
      invalid(where + ".shape[" + std::to_string(i) + "] is " + std::to_string(a->shape[i]) + ": expected >= 0");
  if (a->nnz < 0) invalid(where + ".nnz is " + std::to_string(a->nnz) + ": expected >= 0");
  if (a->indptr == nullptr) invalid(where + ".indptr is NULL");
  if (a->nnz > 0 && (a->indices == nullptr || a->values == nullptr))
    invalid(where + ".indices or .values is NULL but nnz is " + std::to_string(a->nnz));
  gpuml::SparseView view;
  view.format = static_cast<gpuml::SparseFormat>(a->format);
  view.dtype = static_cast<gpuml::DType>(a->dtype);
  view.index_dtype = static_cast<gpuml::DType>(a->index_dtype);
  view.device.type = static_cast<gpuml::DeviceType>(a->device_type);
  view.device.id = a->device_type == GPUML_DEVICE_CUDA ? a->device_id : 0;
  view.shape[0] = a->shape[0];
  view.shape[1] = a->shape[1];
  view.nnz = a->nnz;
  view.indptr = a->indptr;
  view.indices = a->indices;
  view.values = a->values;
  return view;
}

void write_spec(const gpuml::ArraySpec& spec, int32_t* dtype, int32_t* ndim, int64_t shape[2]) {
  *dtype = static_cast<int32_t>(spec.dtype);
  *ndim = spec.ndim;
  shape[0] = spec.ndim >= 1 ? spec.shape[0] : 0;
  shape[1] = spec.ndim >= 2 ? spec.shape[1] : 0;
}

void require_method(const char* method, const char* function) {
  require_arg(method, function, "method");
  const std::string m = method;
  if (m != "predict" && m != "transform" && m != "predict_proba")
    invalid(std::string(function) + ": method \"" + m + "\" is not one of \"predict\", \"transform\", \"predict_proba\"");
}

// The fitted attribute `name` of `estimator`; unknown names are invalid_argument, an unfitted
// estimator is not_fitted (whatever the estimator's own accessor would do).
const gpuml::HostArray& fitted_attribute(const gpuml::Estimator& estimator, const char* name, const char* function) {
  require_arg(name, function, "name");
  const std::vector<std::string> names = estimator.attribute_names();
  if (std::find(names.begin(), names.end(), name) == names.end()) {
    std::string known;
    for (const std::string& n : names) known += (known.empty() ? "" : ", ") + n;
    invalid(std::string(function) + ": attribute name \"" + name + "\" is not an attribute of " + estimator.kind() +
            " (known: " + known + ")");
  }
  if (!estimator.fitted())
    gpuml::throw_error(ErrorCode::not_fitted, std::string(function) + ": this " + estimator.kind() +
                                                 " estimator is not fitted yet; call fit before reading " + name);
  return estimator.attribute(name);
}

gpuml::HostArray copy_of(const gpuml::HostArray& source) {
  const gpuml::ArraySpec& spec = source.spec();
  gpuml::HostArray copy = spec.ndim == 0   ? gpuml::HostArray::scalar(spec.dtype)
                          : spec.ndim == 1 ? gpuml::HostArray(spec.dtype, spec.shape[0])
                                           : gpuml::HostArray(spec.dtype, spec.shape[0], spec.shape[1]);
  if (copy.bytes() > 0) std::memcpy(copy.view().data, source.view().data, copy.bytes());
  return copy;
}

using ApplyMethod = void (gpuml::Estimator::*)(gpuml::Context&, const gpuml::ArrayView&, const gpuml::ArrayView&) const;

gpuml_status_t apply(const char* function, ApplyMethod method, gpuml_context_t ctx, gpuml_estimator_t est,
                     const gpuml_array_t* X, gpuml_array_t* out) noexcept {
  return guarded(function, [&] {
    gpuml::Context& context = context_of(ctx, function);
    gpuml::Estimator& estimator = estimator_of(est, function);
    const gpuml::ArrayView x = to_view(X, function, "X");
    const gpuml::ArrayView o = to_view(out, function, "out");
    std::shared_lock<std::shared_mutex> lock(est->mutex);
    (estimator.*method)(context, x, o);
  });
}

using SparseApplyMethod = void (gpuml::Estimator::*)(gpuml::Context&, const gpuml::SparseView&,
                                                     const gpuml::ArrayView&) const;

gpuml_status_t apply_sparse(const char* function, SparseApplyMethod method, gpuml_context_t ctx, gpuml_estimator_t est,
                            const gpuml_sparse_t* X, gpuml_array_t* out) noexcept {
  return guarded(function, [&] {
    gpuml::Context& context = context_of(ctx, function);
    gpuml::Estimator& estimator = estimator_of(est, function);
    const gpuml::SparseView x = to_sparse_view(X, function, "X");
    const gpuml::ArrayView o = to_view(out, function, "out");
    std::shared_lock<std::shared_mutex> lock(est->mutex);
    (estimator.*method)(context, x, o);
  });
}

std::string make_build_info() {
  nlohmann::json info;
  info["version"] = std::to_string(GPUML_VERSION_MAJOR) + "." + std::to_string(GPUML_VERSION_MINOR) + "." +
                    std::to_string(GPUML_VERSION_PATCH);
  info["abi_version"] = GPUML_ABI_VERSION;
  info["cuda"] = static_cast<bool>(GPUML_WITH_CUDA);
  if (GPUML_WITH_CUDA)
    info["cuda_version"] = std::string(GPUML_CUDA_VERSION);
  else
    info["cuda_version"] = nullptr;
  info["cuda_architectures"] = std::string(GPUML_CUDA_ARCHITECTURES);
  info["nccl"] = static_cast<bool>(GPUML_WITH_NCCL);
  info["mpi"] = static_cast<bool>(GPUML_WITH_MPI);
  info["gloo"] = static_cast<bool>(GPUML_WITH_GLOO);
  info["cuda_devices"] = gpuml::cuda_device_count();
  return info.dump();
}

}  // namespace

extern "C" {

const char* gpuml_last_error(void) {
  return last_error_fallback != nullptr ? last_error_fallback : last_error.c_str();
}

void gpuml_version(int* major, int* minor, int* patch) {
  if (major != nullptr) *major = GPUML_VERSION_MAJOR;
  if (minor != nullptr) *minor = GPUML_VERSION_MINOR;
  if (patch != nullptr) *patch = GPUML_VERSION_PATCH;
}

int32_t gpuml_abi_version(void) { return GPUML_ABI_VERSION; }

const char* gpuml_build_info(void) {
  const char* result = "{}";  // still a JSON object should building the real one fail
  guarded("gpuml_build_info", [&] {
    static const std::string info = make_build_info();
    result = info.c_str();
  });
  return result;
}

gpuml_status_t gpuml_context_create(const char* device, gpuml_context_t* out) {
  const char* function = "gpuml_context_create";
  return guarded(function, [&] {
    require_arg(out, function, "out");
    *out = nullptr;
    gpuml::Context context = gpuml::Context::from_string(device != nullptr ? device : "auto");
    *out = new gpuml_context_s{std::move(context)};
  });
}

gpuml_status_t gpuml_context_free(gpuml_context_t ctx) {
  return guarded("gpuml_context_free", [&] { delete ctx; });
}

gpuml_status_t gpuml_context_device(gpuml_context_t ctx, int32_t* device_type, int32_t* device_id) {
  const char* function = "gpuml_context_device";
  return guarded(function, [&] {
    gpuml::Context& context = context_of(ctx, function);
    require_arg(device_type, function, "device_type");
    require_arg(device_id, function, "device_id");
    const gpuml::Device device = context.device();
    *device_type = static_cast<int32_t>(device.type);
    *device_id = device.id;
  });
}

gpuml_status_t gpuml_context_synchronize(gpuml_context_t ctx) {
  const char* function = "gpuml_context_synchronize";
  return guarded(function, [&] { context_of(ctx, function).synchronize(); });
}

gpuml_status_t gpuml_nccl_unique_id(uint8_t out[128]) {
  const char* function = "gpuml_nccl_unique_id";
  return guarded(function, [&] {
    require_arg(out, function, "out");
    gpuml::Comm::nccl_unique_id(out);
  });
}

gpuml_status_t gpuml_context_attach_nccl(gpuml_context_t ctx, const uint8_t unique_id[128], int32_t n_ranks,
                                         int32_t rank) {
  const char* function = "gpuml_context_attach_nccl";
  return guarded(function, [&] {
    gpuml::Context& context = context_of(ctx, function);
    require_arg(unique_id, function, "unique_id");
    if (n_ranks < 1) invalid(std::string(function) + ": n_ranks must be >= 1, got " + std::to_string(n_ranks));
    if (rank < 0 || rank >= n_ranks)
      invalid(std::string(function) + ": rank must be in [0, n_ranks) = [0, " + std::to_string(n_ranks) + "), got " +
              std::to_string(rank));
    if (!context.is_cuda()) invalid(std::string(function) + ": NCCL needs a CUDA context; this one is the CPU's (use gpuml_context_attach_mpi)");
    if (context.has_comm()) invalid(std::string(function) + ": this context already has a communicator; attach once per context");
    context.attach_comm(gpuml::Comm::nccl(context, unique_id, n_ranks, rank));
  });
}

gpuml_status_t gpuml_context_attach_mpi(gpuml_context_t ctx) {
  const char* function = "gpuml_context_attach_mpi";
  return guarded(function, [&] {
    gpuml::Context& context = context_of(ctx, function);
    if (!gpuml::built_with_mpi())  // the same library on every rank: all stop here, or none
      gpuml::throw_error(ErrorCode::unsupported, std::string(function) +
                                                     ": gpuml was built without MPI (GPUML_MPI=OFF, or MPI was not found at build time)");
    // Every rank checks its context, then the ranks compare: a rank that cannot attach, or one
    // whose context is of the other kind (a CPU context attaches MPI, a CUDA one bootstraps NCCL:
    // different collectives), makes every rank return an error instead of leaving the others
    // waiting in a collective it never joins.
    const std::shared_ptr<gpuml::Comm> world = gpuml::Comm::mpi_world();  // collective; the CPU context's communicator
    gpuml::detail::check_on_every_rank(*world, function, "checking the context", [&] {
      if (context.has_comm()) invalid(std::string(function) + ": this context already has a communicator; attach once per context");
      if (context.is_cuda() && !gpuml::built_with_nccl())
        gpuml::throw_error(ErrorCode::unsupported, std::string(function) +
                                                       ": a CUDA context needs NCCL (bootstrapped over MPI), and gpuml was built "
                                                       "without NCCL (GPUML_NCCL=OFF, or NCCL was not found); use a \"cpu\" context");
    });
    gpuml::detail::agree_on_every_rank(*world, function, 0, {{"the context's device (0 CPU, 1 CUDA)", context.is_cuda() ? 1 : 0}});
    context.attach_comm(context.is_cuda() ? gpuml::Comm::nccl_over_mpi(context) : world);
  });
}

// The Gloo attach functions' params_json: {"rendezvous_dir" (with_dir only), "prefix", "hostname",
// "interface", "timeout_seconds", "gpu_transport" ("auto", "nccl" or "host": Comm::for_context)}.
struct GlooAttach {
  gpuml::GlooOptions options;
  gpuml::GpuTransport transport = gpuml::GpuTransport::automatic;
};

// The attach functions' "gpu_transport": "auto" (the default), "nccl" or "host".
gpuml::GpuTransport gpu_transport_of(gpuml::detail::ParamReader& reader, const char* function) {
  const std::string transport = reader.get_string("gpu_transport", "auto");
  if (transport == "nccl") return gpuml::GpuTransport::nccl;
  if (transport == "host") return gpuml::GpuTransport::host;
  if (transport != "auto")
    invalid(std::string(function) + ": gpu_transport must be \"auto\", \"nccl\" or \"host\", got \"" + transport + "\"");
  return gpuml::GpuTransport::automatic;
}

GlooAttach gloo_attach(const char* params_json, const char* function, bool with_dir) {
  require_arg(params_json, function, "params_json");
  const nlohmann::json json = gpuml::detail::parse_params(params_json, "gloo");
  gpuml::detail::ParamReader reader(json, "gloo");
  GlooAttach attach;
  gpuml::GlooOptions& options = attach.options;
  if (with_dir) options.rendezvous_dir = reader.get_string("rendezvous_dir", "");
  options.prefix = reader.get_string("prefix", options.prefix);
  options.hostname = reader.get_string("hostname", "");
  options.interface = reader.get_string("interface", "");
  options.timeout_seconds = reader.get_double("timeout_seconds", options.timeout_seconds);
  attach.transport = gpu_transport_of(reader, function);
  reader.finish();
  return attach;
}

// A caller's gpuml_gloo_store_t as a GlooStore; its failures become io errors naming the key.
class CallerGlooStore final : public gpuml::GlooStore {
 public:
  explicit CallerGlooStore(const gpuml_gloo_store_t& store) : store_(store) {}
  void set(const std::string& key, const std::vector<char>& value) override {
    if (store_.set(store_.user, key.c_str(), value.data(), static_cast<int64_t>(value.size())) != 0)
      gpuml::throw_error(ErrorCode::io, "the caller's Gloo store failed to set " + key);
  }
  std::vector<char> get(const std::string& key, double timeout_seconds) override {
    std::vector<char> value(64);  // most values are longer: the second call is the usual path
    for (int attempt = 0; attempt < 2; ++attempt) {
      const int64_t size = store_.get(store_.user, key.c_str(), value.data(), static_cast<int64_t>(value.size()), timeout_seconds);
      if (size < 0) gpuml::throw_error(ErrorCode::io, "the caller's Gloo store has no " + key + " after " +
                                                          std::to_string(timeout_seconds) + " s");
      const bool fits = size <= static_cast<int64_t>(value.size());
      value.resize(static_cast<std::size_t>(size));
      if (fits) return value;  // else: again, with room for all of it
    }
    gpuml::throw_error(ErrorCode::io, "the caller's Gloo store returned a longer value of " + key + " the second time");
  }

 private:
  gpuml_gloo_store_t store_;
};

gpuml_status_t gpuml_context_attach_gloo(gpuml_context_t ctx, int32_t n_ranks, int32_t rank, const char* params_json) {
  const char* function = "gpuml_context_attach_gloo";
  return guarded(function, [&] {
    gpuml::Context& context = context_of(ctx, function);
    const GlooAttach attach = gloo_attach(params_json, function, true);
    if (context.has_comm()) invalid(std::string(function) + ": this context already has a communicator; attach once per context");
    context.attach_comm(gpuml::Comm::for_context(context, gpuml::Comm::gloo(n_ranks, rank, attach.options), attach.transport));
  });
}

gpuml_status_t gpuml_context_attach_gloo_store(gpuml_context_t ctx, int32_t n_ranks, int32_t rank, const char* params_json,
                                               const gpuml_gloo_store_t* store) {
  const char* function = "gpuml_context_attach_gloo_store";
  return guarded(function, [&] {
    gpuml::Context& context = context_of(ctx, function);
    require_arg(store, function, "store");
    if (store->set == nullptr || store->get == nullptr) invalid(std::string(function) + ": store->set and store->get must be set");
    const GlooAttach attach = gloo_attach(params_json, function, false);
    if (context.has_comm()) invalid(std::string(function) + ": this context already has a communicator; attach once per context");
    CallerGlooStore adapter(*store);
    context.attach_comm(gpuml::Comm::for_context(context, gpuml::Comm::gloo(n_ranks, rank, adapter, attach.options), attach.transport));
  });
}

// A caller's gpuml_comm_t as a Comm; a callback's failure becomes an io error naming the collective.
class CallerComm final : public gpuml::Comm {
 public:
  explicit CallerComm(const gpuml_comm_t& comm) : comm_(comm) {}
  int rank() const override { return comm_.rank; }
  int size() const override { return comm_.n_ranks; }
  const char* kind() const override { return "caller"; }
  void allreduce_sum(void* data, int64_t count, gpuml::DType dtype) override {
    gpuml::detail::check_collective(*this, "allreduce_sum", data, count, dtype);
    check(comm_.allreduce_sum(comm_.user, data, count, static_cast<int32_t>(dtype)), "allreduce_sum");
  }
  void allgatherv(const void* send, int64_t count, void* recv, const int64_t* counts, gpuml::DType dtype) override {
    gpuml::detail::check_collective(*this, "allgatherv", send, count, dtype);
    gpuml::detail::check_collective(*this, "allgatherv", recv, gpuml::detail::check_counts(*this, count, counts), dtype);
    check(comm_.allgatherv(comm_.user, send, count, recv, counts, static_cast<int32_t>(dtype)), "allgatherv");
  }
  void broadcast(void* data, int64_t count, gpuml::DType dtype, int root) override {
    gpuml::detail::check_collective(*this, "broadcast", data, count, dtype);
    gpuml::detail::check_root(*this, "broadcast", root);
    check(comm_.broadcast(comm_.user, data, count, static_cast<int32_t>(dtype), root), "broadcast");
  }
  void barrier() override { check(comm_.barrier(comm_.user), "barrier"); }

 private:
  static void check(int32_t rc, const char* op) {
    if (rc != 0)
      gpuml::throw_error(ErrorCode::io, std::string("the caller's communicator failed in ") + op + " (it returned " +
                                            std::to_string(rc) + ")");
  }
  gpuml_comm_t comm_;
};

gpuml_status_t gpuml_context_attach_comm(gpuml_context_t ctx, const gpuml_comm_t* comm, const char* params_json) {
  const char* function = "gpuml_context_attach_comm";
  return guarded(function, [&] {
    gpuml::Context& context = context_of(ctx, function);
    require_arg(comm, function, "comm");
    require_arg(params_json, function, "params_json");
    if (!comm->allreduce_sum || !comm->allgatherv || !comm->broadcast || !comm->barrier)
      invalid(std::string(function) + ": comm->allreduce_sum, allgatherv, broadcast and barrier must all be set");
    if (comm->n_ranks < 1) invalid(std::string(function) + ": comm->n_ranks must be >= 1, got " + std::to_string(comm->n_ranks));
    if (comm->rank < 0 || comm->rank >= comm->n_ranks)
      invalid(std::string(function) + ": comm->rank must be in [0, n_ranks) = [0, " + std::to_string(comm->n_ranks) + "), got " +
              std::to_string(comm->rank));
    const nlohmann::json json = gpuml::detail::parse_params(params_json, "comm");
    gpuml::detail::ParamReader reader(json, "comm");
    const gpuml::GpuTransport transport = gpu_transport_of(reader, function);
    reader.finish();
    if (context.has_comm()) invalid(std::string(function) + ": this context already has a communicator; attach once per context");
    context.attach_comm(gpuml::Comm::for_context(context, std::make_shared<CallerComm>(*comm), transport));
  });
}

gpuml_status_t gpuml_context_set_memory_limit(gpuml_context_t ctx, int64_t bytes) {
  const char* function = "gpuml_context_set_memory_limit";
  return guarded(function, [&] { context_of(ctx, function).set_memory_limit(bytes); });
}

gpuml_status_t gpuml_context_memory_in_use(gpuml_context_t ctx, int64_t* bytes) {
  const char* function = "gpuml_context_memory_in_use";
  return guarded(function, [&] {
    gpuml::Context& context = context_of(ctx, function);
    require_arg(bytes, function, "bytes");
    *bytes = context.memory_in_use();
  });
}

gpuml_status_t gpuml_context_rank(gpuml_context_t ctx, int32_t* rank, int32_t* n_ranks) {
  const char* function = "gpuml_context_rank";
  return guarded(function, [&] {
    gpuml::Context& context = context_of(ctx, function);
    require_arg(rank, function, "rank");
    require_arg(n_ranks, function, "n_ranks");
    *rank = context.comm().rank();
    *n_ranks = context.comm().size();
  });
}

gpuml_status_t gpuml_context_allgather(gpuml_context_t ctx, const void* send, int64_t count, int32_t dtype, void* recv) {
  const char* function = "gpuml_context_allgather";
  return guarded(function, [&] {
    gpuml::Context& context = context_of(ctx, function);
    if (!gpuml::is_valid_dtype(dtype)) invalid(std::string(function) + ": dtype " + std::to_string(dtype) + " is not a gpuml_dtype_t");
    if (count < 0) invalid(std::string(function) + ": count must be >= 0, got " + std::to_string(count));
    if (count > 0) {
      require_arg(send, function, "send");
      require_arg(recv, function, "recv");
    }
    context.comm().allgather(send, count, recv, static_cast<gpuml::DType>(dtype));
  });
}

gpuml_status_t gpuml_estimator_create(const char* kind, const char* params_json, gpuml_estimator_t* out) {
  const char* function = "gpuml_estimator_create";
  return guarded(function, [&] {
    require_arg(out, function, "out");
    *out = nullptr;
    require_arg(kind, function, "kind");
    require_arg(params_json, function, "params_json");
    auto handle = std::make_unique<gpuml_estimator_s>();
    handle->impl = gpuml::make_estimator(kind, params_json);
    if (!handle->impl) gpuml::throw_error(ErrorCode::internal, std::string(function) + ": no estimator was made");
    *out = handle.release();
  });
}

void gpuml_set_progress_sink(gpuml_progress_sink_t sink, void* user_data) { gpuml::set_progress_sink(sink, user_data); }

gpuml_status_t gpuml_estimator_params_schema(const char* kind, const char** json) {
  const char* function = "gpuml_estimator_params_schema";
  return guarded(function, [&] {
    require_arg(json, function, "json");
    *json = nullptr;
    require_arg(kind, function, "kind");
    *json = gpuml::estimator_params_schema(kind).c_str();
  });
}

gpuml_status_t gpuml_estimator_free(gpuml_estimator_t est) {
  return guarded("gpuml_estimator_free", [&] {
    if (est == nullptr) return;
    // Waits for calls already inside; calls that start after free are the caller's bug.
    { std::unique_lock<std::shared_mutex> lock(est->mutex); }
    delete est;
  });
}

gpuml_status_t gpuml_estimator_get_params(gpuml_estimator_t est, const char** json) {
  const char* function = "gpuml_estimator_get_params";
  return guarded(function, [&] {
    gpuml::Estimator& estimator = estimator_of(est, function);
    require_arg(json, function, "json");
    std::unique_lock<std::shared_mutex> lock(est->mutex);  // rewrites est->params_json
    est->params_json = estimator.get_params_json();
    *json = est->params_json.c_str();
  });
}

gpuml_status_t gpuml_estimator_fit(gpuml_context_t ctx, gpuml_estimator_t est, const gpuml_array_t* X,
                                   const gpuml_array_t* y, const gpuml_array_t* sample_weight) {
  const char* function = "gpuml_estimator_fit";
  return guarded(function, [&] {
    gpuml::Context& context = context_of(ctx, function);
    gpuml::Estimator& estimator = estimator_of(est, function);
    const gpuml::ArrayView x = to_view(X, function, "X");
    gpuml::ArrayView y_view, weight_view;
    if (y != nullptr) y_view = to_view(y, function, "y");
    if (sample_weight != nullptr) weight_view = to_view(sample_weight, function, "sample_weight");
    std::unique_lock<std::shared_mutex> lock(est->mutex);
    estimator.fit(context, x, y != nullptr ? &y_view : nullptr, sample_weight != nullptr ? &weight_view : nullptr);
  });
}

gpuml_status_t gpuml_estimator_set_param_array(gpuml_context_t ctx, gpuml_estimator_t est, const char* name,
                                               const gpuml_array_t* value) {
  const char* function = "gpuml_estimator_set_param_array";
  return guarded(function, [&] {
    gpuml::Context& context = context_of(ctx, function);
    gpuml::Estimator& estimator = estimator_of(est, function);
    require_arg(name, function, "name");
    const gpuml::ArrayView v = to_view(value, function, "value");
    std::unique_lock<std::shared_mutex> lock(est->mutex);
    estimator.set_param_array(context, name, v);
  });
}

gpuml_status_t gpuml_estimator_fit_sparse(gpuml_context_t ctx, gpuml_estimator_t est, const gpuml_sparse_t* X,
                                          const gpuml_array_t* y, const gpuml_array_t* sample_weight) {
  const char* function = "gpuml_estimator_fit_sparse";
  return guarded(function, [&] {
    gpuml::Context& context = context_of(ctx, function);
    gpuml::Estimator& estimator = estimator_of(est, function);
    const gpuml::SparseView x = to_sparse_view(X, function, "X");
    gpuml::ArrayView y_view, weight_view;
    if (y != nullptr) y_view = to_view(y, function, "y");
    if (sample_weight != nullptr) weight_view = to_view(sample_weight, function, "sample_weight");
    std::unique_lock<std::shared_mutex> lock(est->mutex);
    estimator.fit_sparse(context, x, y != nullptr ? &y_view : nullptr, sample_weight != nullptr ? &weight_view : nullptr);
  });
}

gpuml_status_t gpuml_estimator_predict_sparse(gpuml_context_t ctx, gpuml_estimator_t est, const gpuml_sparse_t* X,
                                              gpuml_array_t* out) {
  return apply_sparse("gpuml_estimator_predict_sparse", &gpuml::Estimator::predict_sparse, ctx, est, X, out);
}

gpuml_status_t gpuml_estimator_transform_sparse(gpuml_context_t ctx, gpuml_estimator_t est, const gpuml_sparse_t* X,
                                                gpuml_array_t* out) {
  return apply_sparse("gpuml_estimator_transform_sparse", &gpuml::Estimator::transform_sparse, ctx, est, X, out);
}

gpuml_status_t gpuml_estimator_predict_proba_sparse(gpuml_context_t ctx, gpuml_estimator_t est, const gpuml_sparse_t* X,
                                                    gpuml_array_t* out) {
  return apply_sparse("gpuml_estimator_predict_proba_sparse", &gpuml::Estimator::predict_proba_sparse, ctx, est, X, out);
}

gpuml_status_t gpuml_estimator_warm_start_from(gpuml_estimator_t est, gpuml_estimator_t previous) {
  const char* function = "gpuml_estimator_warm_start_from";
  return guarded(function, [&] {
    gpuml::Estimator& estimator = estimator_of(est, function);
    const gpuml::Estimator& source = estimator_of(previous, function);
    if (est == previous) invalid(std::string(function) + ": est and previous are the same handle");
    std::unique_lock<std::shared_mutex> lock(est->mutex);
    std::shared_lock<std::shared_mutex> source_lock(previous->mutex);
    estimator.warm_start_from(source);
  });
}

gpuml_status_t gpuml_estimator_output_shape(gpuml_estimator_t est, const char* method, int64_t n_rows, int32_t* dtype,
                                            int32_t* ndim, int64_t shape[2]) {
  const char* function = "gpuml_estimator_output_shape";
  return guarded(function, [&] {
    gpuml::Estimator& estimator = estimator_of(est, function);
    require_method(method, function);
    if (n_rows < 0) invalid(std::string(function) + ": n_rows is " + std::to_string(n_rows) + ": expected >= 0");
    require_arg(dtype, function, "dtype");
    require_arg(ndim, function, "ndim");
    require_arg(shape, function, "shape");
    std::shared_lock<std::shared_mutex> lock(est->mutex);
    write_spec(estimator.output_spec(method, n_rows), dtype, ndim, shape);
  });
}

gpuml_status_t gpuml_estimator_predict(gpuml_context_t ctx, gpuml_estimator_t est, const gpuml_array_t* X,
                                       gpuml_array_t* out) {
  return apply("gpuml_estimator_predict", &gpuml::Estimator::predict, ctx, est, X, out);
}

gpuml_status_t gpuml_estimator_transform(gpuml_context_t ctx, gpuml_estimator_t est, const gpuml_array_t* X,
                                         gpuml_array_t* out) {
  return apply("gpuml_estimator_transform", &gpuml::Estimator::transform, ctx, est, X, out);
}

gpuml_status_t gpuml_estimator_predict_proba(gpuml_context_t ctx, gpuml_estimator_t est, const gpuml_array_t* X,
                                             gpuml_array_t* out) {
  return apply("gpuml_estimator_predict_proba", &gpuml::Estimator::predict_proba, ctx, est, X, out);
}

gpuml_status_t gpuml_estimator_attribute_shape(gpuml_estimator_t est, const char* name, int32_t* dtype, int32_t* ndim,
                                               int64_t shape[2]) {
  const char* function = "gpuml_estimator_attribute_shape";
  return guarded(function, [&] {
    gpuml::Estimator& estimator = estimator_of(est, function);
    require_arg(name, function, "name");
    require_arg(dtype, function, "dtype");
    require_arg(ndim, function, "ndim");
    require_arg(shape, function, "shape");
    std::shared_lock<std::shared_mutex> lock(est->mutex);
    write_spec(fitted_attribute(estimator, name, function).spec(), dtype, ndim, shape);
  });
}

gpuml_status_t gpuml_estimator_get_attribute(gpuml_context_t ctx, gpuml_estimator_t est, const char* name,
                                             gpuml_array_t* out) {
  const char* function = "gpuml_estimator_get_attribute";
  return guarded(function, [&] {
    gpuml::Context& context = context_of(ctx, function);
    gpuml::Estimator& estimator = estimator_of(est, function);
    require_arg(name, function, "name");
    const gpuml::ArrayView o = to_view(out, function, "out");
    std::shared_lock<std::shared_mutex> lock(est->mutex);
    const gpuml::HostArray& attribute = fitted_attribute(estimator, name, function);
    // write_output reads its source from the context's memory: copy the host attribute there first.
    const gpuml::detail::Staged source = gpuml::detail::stage_host(context, attribute);
    gpuml::detail::write_output(context, source.view, o, name);
  });
}

gpuml_status_t gpuml_estimator_set_attribute(gpuml_context_t ctx, gpuml_estimator_t est, const char* name,
                                             const gpuml_array_t* value) {
  const char* function = "gpuml_estimator_set_attribute";
  return guarded(function, [&] {
    gpuml::Context& context = context_of(ctx, function);
    const gpuml::Estimator& estimator = estimator_of(est, function);
    require_arg(name, function, "name");
    const gpuml::ArrayView v = to_view(value, function, "value");
    std::unique_lock<std::shared_mutex> lock(est->mutex);
    const gpuml::HostArray& current = fitted_attribute(estimator, name, function);
    const gpuml::ArraySpec& spec = current.spec();
    const std::string where = std::string(function) + ": value for " + estimator.kind() + "'s " + name;
    if (v.ndim != spec.ndim || (spec.ndim >= 1 && v.shape[0] != spec.shape[0]) ||
        (spec.ndim == 2 && v.shape[1] != spec.shape[1])) {
      const auto shape = [](int32_t ndim, const int64_t* s) {
        std::string text = "(";
        for (int32_t i = 0; i < ndim; ++i) text += (i ? ", " : "") + std::to_string(s[i]);
        return text + (ndim == 1 ? ",)" : ")");
      };
      invalid(where + " has shape " + shape(v.ndim, v.shape) + "; the attribute has shape " +
              shape(spec.ndim, spec.shape));
    }
    if (!gpuml::is_floating(spec.dtype) && gpuml::is_floating(v.dtype))
      invalid(where + " is " + gpuml::dtype_name(v.dtype) + "; the attribute holds integers (" +
              gpuml::dtype_name(spec.dtype) + ")");
    // Every attribute as the model holds it (copies: restore takes them), `name` replaced by the
    // value in the attribute's dtype; a fresh estimator of the same kind and parameters restores
    // them (its checks are the model loader's) and only then replaces the old one.
    std::map<std::string, gpuml::HostArray> attributes;
    for (const std::string& attribute : estimator.attribute_names()) {
      if (attribute == name) {
        const gpuml::detail::Staged staged = gpuml::detail::stage(context, v, spec.dtype, name);
        attributes.emplace(attribute, gpuml::detail::to_host(context, staged.view));
      } else {
        attributes.emplace(attribute, copy_of(estimator.attribute(attribute)));
      }
    }
    std::unique_ptr<gpuml::Estimator> rebuilt = gpuml::make_estimator(estimator.kind(), estimator.get_params_json());
    rebuilt->restore(std::move(attributes));
    est->impl = std::move(rebuilt);
  });
}

gpuml_status_t gpuml_estimator_serialized_size(gpuml_estimator_t est, uint64_t* size) {
  const char* function = "gpuml_estimator_serialized_size";
  return guarded(function, [&] {
    gpuml::Estimator& estimator = estimator_of(est, function);
    require_arg(size, function, "size");
    std::shared_lock<std::shared_mutex> lock(est->mutex);
    *size = gpuml::serialize(estimator).size();
  });
}

gpuml_status_t gpuml_estimator_serialize(gpuml_estimator_t est, void* buffer, uint64_t size) {
  const char* function = "gpuml_estimator_serialize";
  return guarded(function, [&] {
    gpuml::Estimator& estimator = estimator_of(est, function);
    require_arg(buffer, function, "buffer");
    std::vector<uint8_t> bytes;
    {
      std::shared_lock<std::shared_mutex> lock(est->mutex);
      bytes = gpuml::serialize(estimator);
    }
    if (size < bytes.size())
      invalid(std::string(function) + ": buffer size " + std::to_string(size) + " is smaller than the serialized size " +
              std::to_string(bytes.size()) + " (ask gpuml_estimator_serialized_size)");
    // A larger size is refused too: the caller would take `size` bytes for the model, and a model
    // refitted (by another thread) since gpuml_estimator_serialized_size can be shorter.
    if (size > bytes.size())
      invalid(std::string(function) + ": buffer size " + std::to_string(size) + " is not the serialized size " +
              std::to_string(bytes.size()) + " (was the model refitted since gpuml_estimator_serialized_size? ask again)");
    std::memcpy(buffer, bytes.data(), bytes.size());
  });
}

gpuml_status_t gpuml_estimator_deserialize(const void* buffer, uint64_t size, gpuml_estimator_t* out) {
  const char* function = "gpuml_estimator_deserialize";
  return guarded(function, [&] {
    require_arg(out, function, "out");
    *out = nullptr;
    require_arg(buffer, function, "buffer");
    if (size > std::numeric_limits<std::size_t>::max())
      invalid(std::string(function) + ": size " + std::to_string(size) + " does not fit in memory");
    auto handle = std::make_unique<gpuml_estimator_s>();
    handle->impl = gpuml::deserialize(buffer, static_cast<std::size_t>(size));
    if (!handle->impl) gpuml::throw_error(ErrorCode::internal, std::string(function) + ": no estimator was made");
    *out = handle.release();
  });
}

gpuml_status_t gpuml_pagerank(gpuml_context_t ctx, int64_t n_vertices, const gpuml_array_t* src, const gpuml_array_t* dst,
                              const gpuml_array_t* weights, const gpuml_array_t* personalization,
                              const gpuml_array_t* nstart, const gpuml_array_t* dangling, const char* params_json,
                              gpuml_array_t* ranks_out, int64_t* n_iter, int32_t* converged) {
  const char* function = "gpuml_pagerank";
  return guarded(function, [&] {
    gpuml::Context& context = context_of(ctx, function);
    require_arg(n_iter, function, "n_iter");
    require_arg(converged, function, "converged");
    require_arg(params_json, function, "params_json");
    *n_iter = 0;
    *converged = 0;
    const gpuml::ArrayView s = to_view(src, function, "src");
    const gpuml::ArrayView d = to_view(dst, function, "dst");
    const gpuml::ArrayView out = to_view(ranks_out, function, "ranks_out");
    gpuml::ArrayView w, p, x0, dv;
    if (weights != nullptr) w = to_view(weights, function, "weights");
    if (personalization != nullptr) p = to_view(personalization, function, "personalization");
    if (nstart != nullptr) x0 = to_view(nstart, function, "nstart");
    if (dangling != nullptr) dv = to_view(dangling, function, "dangling");
    const gpuml::PageRankParams params = pagerank_params(params_json, function);
    report_pagerank(
        [&] {
          return gpuml::pagerank(context, n_vertices, s, d, weights != nullptr ? &w : nullptr,
                                 personalization != nullptr ? &p : nullptr, nstart != nullptr ? &x0 : nullptr,
                                 dangling != nullptr ? &dv : nullptr, params, out);
        },
        params, n_iter, converged);
  });
}

gpuml_status_t gpuml_graph_create(gpuml_context_t ctx, int64_t n_vertices, const gpuml_array_t* src,
                                  const gpuml_array_t* dst, const gpuml_array_t* weights, int32_t dtype,
                                  gpuml_graph_t* out) {
  const char* function = "gpuml_graph_create";
  return guarded(function, [&] {
    require_arg(out, function, "out");
    *out = nullptr;
    gpuml::Context& context = context_of(ctx, function);
    const gpuml::ArrayView s = to_view(src, function, "src");
    const gpuml::ArrayView d = to_view(dst, function, "dst");
    gpuml::ArrayView w;
    if (weights != nullptr) w = to_view(weights, function, "weights");
    if (dtype != GPUML_FLOAT32 && dtype != GPUML_FLOAT64)
      invalid(std::string(function) + ": dtype is " + std::to_string(dtype) + ": expected 0 (GPUML_FLOAT32) or 1 (GPUML_FLOAT64)");
    auto entry = std::make_shared<GraphEntry>(gpuml::Graph(context, n_vertices, s, d, weights != nullptr ? &w : nullptr,
                                                           static_cast<gpuml::DType>(dtype)));
    GraphRegistry& registry = graph_registry();
    std::lock_guard<std::mutex> lock(registry.mutex);
    const uintptr_t key = registry.next++;
    registry.live.emplace(key, std::move(entry));
    *out = reinterpret_cast<gpuml_graph_t>(key);
  });
}

gpuml_status_t gpuml_graph_free(gpuml_graph_t graph) {
  const char* function = "gpuml_graph_free";
  return guarded(function, [&] {
    if (graph == nullptr) return;
    std::shared_ptr<GraphEntry> entry;
    {
      GraphRegistry& registry = graph_registry();
      std::lock_guard<std::mutex> lock(registry.mutex);
      const auto found = registry.live.find(reinterpret_cast<uintptr_t>(graph));
      if (found == registry.live.end())
        invalid(std::string(function) + ": graph is not a live graph handle (freed already, or not made by gpuml_graph_create)");
      entry = std::move(found->second);
      registry.live.erase(found);
    }
    // Waits for calls already inside; the graph goes when the last of them lets go of it.
    { std::lock_guard<std::mutex> lock(entry->mutex); }
  });
}

gpuml_status_t gpuml_graph_info(gpuml_graph_t graph, int64_t* n_vertices, int64_t* n_edges, int32_t* dtype,
                                int64_t* memory_bytes) {
  const char* function = "gpuml_graph_info";
  return guarded(function, [&] {
    const std::shared_ptr<GraphEntry> entry = graph_of(graph, function);
    require_arg(n_vertices, function, "n_vertices");
    require_arg(n_edges, function, "n_edges");
    require_arg(dtype, function, "dtype");
    require_arg(memory_bytes, function, "memory_bytes");
    std::lock_guard<std::mutex> lock(entry->mutex);
    *n_vertices = entry->graph.n_vertices();
    *n_edges = entry->graph.n_edges();
    *dtype = static_cast<int32_t>(entry->graph.dtype());
    *memory_bytes = entry->graph.memory_bytes();
  });
}

gpuml_status_t gpuml_graph_pagerank(gpuml_graph_t graph, const gpuml_array_t* personalization, const gpuml_array_t* nstart,
                                    const gpuml_array_t* dangling, const char* params_json, gpuml_array_t* ranks_out,
                                    int64_t* n_iter, int32_t* converged) {
  const char* function = "gpuml_graph_pagerank";
  return guarded(function, [&] {
    const std::shared_ptr<GraphEntry> entry = graph_of(graph, function);
    require_arg(n_iter, function, "n_iter");
    require_arg(converged, function, "converged");
    require_arg(params_json, function, "params_json");
    *n_iter = 0;
    *converged = 0;
    const gpuml::ArrayView out = to_view(ranks_out, function, "ranks_out");
    gpuml::ArrayView p, x0, dv;
    if (personalization != nullptr) p = to_view(personalization, function, "personalization");
    if (nstart != nullptr) x0 = to_view(nstart, function, "nstart");
    if (dangling != nullptr) dv = to_view(dangling, function, "dangling");
    const gpuml::PageRankParams params = pagerank_params(params_json, function);
    std::lock_guard<std::mutex> lock(entry->mutex);
    report_pagerank(
        [&] {
          return entry->graph.pagerank(personalization != nullptr ? &p : nullptr, nstart != nullptr ? &x0 : nullptr,
                                       dangling != nullptr ? &dv : nullptr, params, out);
        },
        params, n_iter, converged);
  });
}

}  // extern "C"

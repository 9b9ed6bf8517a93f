/* gpuml's stable C ABI: the one binary interface promised across versions.
 * Every function returns a status (GPUML_OK is 0); on failure gpuml_last_error() says what
 * was wrong. No C++ exception crosses this boundary. Arrays are DLPack-shaped descriptors;
 * outputs are allocated by the caller (ask gpuml_estimator_output_shape for the size). */
#ifndef GPUML_GPUML_H
#define GPUML_GPUML_H

#include <stdint.h>

#if defined(_WIN32)
#define GPUML_C_API __declspec(dllexport)
#else
#define GPUML_C_API __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gpuml_context_s*   gpuml_context_t;
typedef struct gpuml_estimator_s* gpuml_estimator_t;
typedef struct gpuml_graph_s*     gpuml_graph_t;       /* ABI version 3 */
typedef enum { GPUML_OK = 0, GPUML_ERROR_INVALID_ARGUMENT = 1, GPUML_ERROR_NOT_FITTED = 2,
               GPUML_ERROR_OUT_OF_MEMORY = 3, GPUML_ERROR_CUDA = 4, GPUML_ERROR_UNSUPPORTED = 5,
               GPUML_ERROR_IO = 6, GPUML_ERROR_INTERNAL = 7,
               GPUML_ERROR_NOT_CONVERGED = 8 /* an iteration limit was reached (pagerank) */ } gpuml_status_t;
typedef enum { GPUML_FLOAT32 = 0, GPUML_FLOAT64 = 1, GPUML_INT32 = 2, GPUML_INT64 = 3 } gpuml_dtype_t;
enum { GPUML_DEVICE_CPU = 1, GPUML_DEVICE_CUDA = 2 };      /* DLPack's kDLCPU / kDLCUDA */
typedef struct { void* data; int32_t dtype; int32_t device_type; int32_t device_id;
                 int32_t ndim; int64_t shape[2]; int64_t strides[2]; /* in elements */ } gpuml_array_t;

/* Sparse matrices (ABI version 2): CSR or CSC as SciPy keeps them. CSR: indptr has shape[0] + 1
 * entries, row i holds the column indices indices[indptr[i] .. indptr[i + 1]) and the values
 * beside them; CSC likewise with columns and row indices. values: GPUML_FLOAT32 or GPUML_FLOAT64;
 * indptr and indices share index_dtype, GPUML_INT32 or GPUML_INT64; all three arrays are
 * contiguous, in host or device memory (device_type, device_id as gpuml_array_t's). Indices need
 * not be sorted, duplicates are summed, explicit zeros are allowed. Refused (INVALID_ARGUMENT,
 * the message naming the problem): indptr[0] != 0, indptr decreasing, indptr's last entry !=
 * nnz, an index outside [0, n_cols) (CSR) or [0, n_rows) (CSC), NaN or infinite values, a
 * reserved field other than 0. */
enum { GPUML_SPARSE_CSR = 0, GPUML_SPARSE_CSC = 1 };
typedef struct { int32_t format; int32_t dtype; int32_t index_dtype; int32_t device_type; int32_t device_id;
                 int32_t reserved; /* 0 */ int64_t shape[2]; int64_t nnz;
                 const void* indptr; const void* indices; const void* values; } gpuml_sparse_t;

/* Version history. 1: the first stable ABI. 2: adds gpuml_sparse_t and the *_sparse entry points
 * (additions only: every version-1 symbol and struct is unchanged). 3: adds gpuml_graph_t and the
 * gpuml_graph_* entry points (additions only). 4: adds gpuml_estimator_set_param_array (an addition).
 * 5: adds gpuml_context_attach_gloo, gpuml_gloo_store_t and gpuml_context_attach_gloo_store (additions).
 * 6: adds gpuml_comm_t, gpuml_context_attach_comm and gpuml_context_allgather (additions). */
#define GPUML_ABI_VERSION 6

GPUML_C_API const char*    gpuml_last_error(void);                 /* thread-local, never NULL */
GPUML_C_API void           gpuml_version(int* major, int* minor, int* patch);
GPUML_C_API int32_t        gpuml_abi_version(void);
GPUML_C_API const char*    gpuml_build_info(void);                 /* JSON: cuda, nccl, mpi, architectures */
/* Where estimators with verbose > 0 write progress lines (each ending in a newline): stdout by
 * default; `sink` (or NULL for stdout again) is called instead, from the fitting thread, with
 * `user_data`. Process-wide. */
typedef void (*gpuml_progress_sink_t)(const char* line, void* user_data);
GPUML_C_API void           gpuml_set_progress_sink(gpuml_progress_sink_t sink, void* user_data);
GPUML_C_API gpuml_status_t gpuml_context_create(const char* device, gpuml_context_t* out); /* "auto","cpu","cuda","cuda:N" */
GPUML_C_API gpuml_status_t gpuml_context_free(gpuml_context_t ctx);
GPUML_C_API gpuml_status_t gpuml_context_device(gpuml_context_t ctx, int32_t* device_type, int32_t* device_id);
GPUML_C_API gpuml_status_t gpuml_context_synchronize(gpuml_context_t ctx);
/* A cap on the device memory a CUDA context's work may hold at once (0: none, the default):
 * beyond it a call returns GPUML_ERROR_OUT_OF_MEMORY, as when the device is full, and the
 * context stays usable for smaller work. It counts gpuml's own buffers, not the CUDA libraries'
 * internal allocations. UNSUPPORTED on a CPU context; a negative limit is INVALID_ARGUMENT.
 * gpuml_context_memory_in_use: the bytes of the context's device buffers alive now (0 on CPU). */
GPUML_C_API gpuml_status_t gpuml_context_set_memory_limit(gpuml_context_t ctx, int64_t bytes);
GPUML_C_API gpuml_status_t gpuml_context_memory_in_use(gpuml_context_t ctx, int64_t* bytes);

/* Distributed (SPMD) training: every rank fits the same estimator on its own rows under a
 * context that holds a communicator, and every rank ends with the same model. Attaching is
 * collective (every rank calls it) and done once per context (twice is INVALID_ARGUMENT).
 * gpuml_context_attach_mpi: MPI_COMM_WORLD (initializing MPI when the program has not, and then
 * finalizing it at exit); MPI itself for CPU contexts, NCCL bootstrapped over MPI for CUDA
 * contexts (rank 0 makes the unique id, MPI broadcasts it; every rank must pass a CUDA context,
 * ranks on one node distinct GPUs, e.g. "cuda:<local rank % device count>"). UNSUPPORTED when
 * gpuml was built without MPI, or for a CUDA context without NCCL. The ranks check together: a
 * rank that cannot attach, or contexts of both kinds, make every rank return an error (no rank
 * is left waiting).
 * gpuml_nccl_unique_id / gpuml_context_attach_nccl: NCCL communicators on CUDA contexts, for
 * engines other than MPI (rank 0 makes the id and shares it); UNSUPPORTED without NCCL.
 * gpuml_context_attach_gloo: Gloo (TCP) for ranks started by any engine (Dask, Spark, a plain
 * launcher), on CPU or CUDA contexts (every rank the same kind). The ranks meet in a directory
 * every rank can reach; params_json: {"rendezvous_dir" (required), "prefix" (default "gpuml"; a
 * fresh one per job), "hostname" or "interface" (the address this rank listens on; default: the
 * host name's), "timeout_seconds" (default 1800: any wait longer fails with GPUML_ERROR_IO),
 * "gpu_transport" (CUDA contexts: "nccl", NCCL bootstrapped over Gloo, which needs a GPU per
 * rank; "host", Gloo itself with device memory staged through the host; "auto", the default:
 * NCCL when every rank has a GPU of its own and NCCL, else host; the ranks choose together)}.
 * UNSUPPORTED when gpuml was built without Gloo.
 * gpuml_context_attach_gloo_store: the same, the ranks meeting through the caller's key-value
 * store instead of a directory (an engine's own: a scheduler, a barrier stage's exchange);
 * params_json as above without "rendezvous_dir". The store is used during the call only.
 * gpuml_context_rank: this rank and the number of ranks (0 and 1 when nothing is attached). */
GPUML_C_API gpuml_status_t gpuml_nccl_unique_id(uint8_t out[128]);
GPUML_C_API gpuml_status_t gpuml_context_attach_nccl(gpuml_context_t ctx, const uint8_t unique_id[128], int32_t n_ranks, int32_t rank);
GPUML_C_API gpuml_status_t gpuml_context_attach_mpi(gpuml_context_t ctx);   /* MPI_COMM_WORLD: NCCL bootstrapped over MPI for CUDA contexts, MPI itself for CPU */
GPUML_C_API gpuml_status_t gpuml_context_attach_gloo(gpuml_context_t ctx, int32_t n_ranks, int32_t rank, const char* params_json);
/* A caller's key-value store for gpuml_context_attach_gloo_store. set: stores `size` bytes under
 * key; returns 0, nonzero on failure. get: waits up to timeout_seconds for key, then copies its
 * value into out when it fits in capacity bytes; returns the value's size (larger than capacity:
 * nothing copied, and gpuml calls again with that capacity), or -1 when the key did not come. */
typedef struct {
  void* user;
  int32_t (*set)(void* user, const char* key, const void* value, int64_t size);
  int64_t (*get)(void* user, const char* key, void* out, int64_t capacity, double timeout_seconds);
} gpuml_gloo_store_t;
GPUML_C_API gpuml_status_t gpuml_context_attach_gloo_store(gpuml_context_t ctx, int32_t n_ranks, int32_t rank,
                                                           const char* params_json, const gpuml_gloo_store_t* store);
/* A caller's communicator for gpuml_context_attach_comm: the collectives of a transport the
 * caller already has (an MPI binding such as mpi4py, a framework's process group), so that a
 * gpuml built without MPI or Gloo still trains over ranks. Every rank passes its own rank and
 * n_ranks. Buffers are host memory; counts are elements; dtype is a gpuml_dtype_t. allreduce_sum
 * sums in place and must leave every rank the same bits (reduce to one rank, then broadcast);
 * allgatherv writes each rank's send into recv in rank order, counts[r] elements from rank r;
 * broadcast copies root's data to every rank. Each returns 0, nonzero on failure (the gpuml call
 * then returns GPUML_ERROR_IO). gpuml calls them from the thread that calls a fit, for as long as
 * the context lives: `user` must outlive it. */
typedef struct {
  void* user;
  int32_t rank;
  int32_t n_ranks;
  int32_t (*allreduce_sum)(void* user, void* data, int64_t count, int32_t dtype);
  int32_t (*allgatherv)(void* user, const void* send, int64_t count, void* recv, const int64_t* counts, int32_t dtype);
  int32_t (*broadcast)(void* user, void* data, int64_t count, int32_t dtype, int32_t root);
  int32_t (*barrier)(void* user);
} gpuml_comm_t;
/* Attaches a caller's communicator (collective over its ranks: every rank calls it). params_json:
 * {"gpu_transport": as for the Gloo attach (CUDA contexts: NCCL bootstrapped over the caller's
 * communicator, or the caller's communicator with device memory staged through the host)}. */
GPUML_C_API gpuml_status_t gpuml_context_attach_comm(gpuml_context_t ctx, const gpuml_comm_t* comm, const char* params_json);
GPUML_C_API gpuml_status_t gpuml_context_rank(gpuml_context_t ctx, int32_t* rank, int32_t* n_ranks);
/* Collective over the context's communicator: every rank's `count` elements of `send` (host
 * memory, dtype a gpuml_dtype_t; count the same on every rank) into `recv` (n_ranks * count
 * elements, in rank order), on every rank. Without a communicator, a copy. For callers that agree
 * on small things across ranks before a fit (the Python classifiers' union of the classes). */
GPUML_C_API gpuml_status_t gpuml_context_allgather(gpuml_context_t ctx, const void* send, int64_t count, int32_t dtype,
                                                   void* recv);
GPUML_C_API gpuml_status_t gpuml_estimator_create(const char* kind, const char* params_json, gpuml_estimator_t* out);
GPUML_C_API gpuml_status_t gpuml_estimator_free(gpuml_estimator_t est);
/* The parameters gpuml_estimator_create takes for `kind`, as JSON (valid for the library's life):
 * {"kind", "parameters": [{"name", "forms": [{"type", ...}], "default", "ranks_agree", "constructor",
 * "doc"}]}, in scikit-learn's order ("constructor": false for gpuml's own, set by the bindings). A form's "type" is integer or number (with "min", "max": null when
 * unbounded, and "closed": "left", "right", "both" or "neither", as scikit-learn's Interval),
 * boolean, string (with "choices"), null, seed (null or an integer >= 0), verbose (an integer >= 0),
 * matrix (equally long lists of finite numbers), numbers (a list of finite numbers) or pairs
 * ([label, weight] lists); "hidden": true
 * marks a deprecated value still accepted. A value matching none of a parameter's forms is
 * INVALID_ARGUMENT; null means the default unless a null (or seed) form is listed. */
GPUML_C_API gpuml_status_t gpuml_estimator_params_schema(const char* kind, const char** json);
GPUML_C_API gpuml_status_t gpuml_estimator_get_params(gpuml_estimator_t est, const char** json); /* valid until next call on est */
GPUML_C_API gpuml_status_t gpuml_estimator_fit(gpuml_context_t ctx, gpuml_estimator_t est, const gpuml_array_t* X,
                                               const gpuml_array_t* y /* or NULL */, const gpuml_array_t* sample_weight /* or NULL */);
GPUML_C_API gpuml_status_t gpuml_estimator_output_shape(gpuml_estimator_t est, const char* method, int64_t n_rows,
                                                        int32_t* dtype, int32_t* ndim, int64_t shape[2]);
/* warm_start: est's next fit continues from `previous`'s fitted model (an estimator of the same kind,
 * with other parameters, say more trees) as it would from its own earlier fit. UNSUPPORTED for
 * estimators without such a warm start (the random forests have one); NOT_FITTED when previous is
 * not fitted. Takes est's lock exclusively and previous's shared (two different handles). */
GPUML_C_API gpuml_status_t gpuml_estimator_warm_start_from(gpuml_estimator_t est, gpuml_estimator_t previous);
GPUML_C_API gpuml_status_t gpuml_estimator_predict(gpuml_context_t ctx, gpuml_estimator_t est, const gpuml_array_t* X, gpuml_array_t* out);
GPUML_C_API gpuml_status_t gpuml_estimator_transform(gpuml_context_t ctx, gpuml_estimator_t est, const gpuml_array_t* X, gpuml_array_t* out);
GPUML_C_API gpuml_status_t gpuml_estimator_predict_proba(gpuml_context_t ctx, gpuml_estimator_t est, const gpuml_array_t* X, gpuml_array_t* out);
/* The same with a sparse X (ABI version 2). Estimators that do not take sparse input yet return
 * GPUML_ERROR_UNSUPPORTED naming the estimator; so do CUDA contexts for now (sparse input on the
 * device is computed by a CPU context: pass one). */
GPUML_C_API gpuml_status_t gpuml_estimator_fit_sparse(gpuml_context_t ctx, gpuml_estimator_t est, const gpuml_sparse_t* X,
                                                      const gpuml_array_t* y /* or NULL */,
                                                      const gpuml_array_t* sample_weight /* or NULL */);
GPUML_C_API gpuml_status_t gpuml_estimator_predict_sparse(gpuml_context_t ctx, gpuml_estimator_t est, const gpuml_sparse_t* X, gpuml_array_t* out);
GPUML_C_API gpuml_status_t gpuml_estimator_transform_sparse(gpuml_context_t ctx, gpuml_estimator_t est, const gpuml_sparse_t* X, gpuml_array_t* out);
GPUML_C_API gpuml_status_t gpuml_estimator_predict_proba_sparse(gpuml_context_t ctx, gpuml_estimator_t est, const gpuml_sparse_t* X, gpuml_array_t* out);
GPUML_C_API gpuml_status_t gpuml_estimator_attribute_shape(gpuml_estimator_t est, const char* name,
                                                           int32_t* dtype, int32_t* ndim, int64_t shape[2]);
GPUML_C_API gpuml_status_t gpuml_estimator_get_attribute(gpuml_context_t ctx, gpuml_estimator_t est, const char* name, gpuml_array_t* out);
/* Replaces the fitted attribute `name` with `value` (host or device memory, any dtype that converts
 * to the attribute's: a float value is refused for an integer attribute), for callers that edit a
 * model's coefficients, centers or components. `value` must have the attribute's shape. The
 * model is rebuilt from all its attributes with this one replaced and checked as a loaded model is
 * (finite values, consistent shapes); a refused value (INVALID_ARGUMENT, or NOT_FITTED before a
 * fit) leaves the model as it was. Takes the handle's lock exclusively, as fit does. */
GPUML_C_API gpuml_status_t gpuml_estimator_set_attribute(gpuml_context_t ctx, gpuml_estimator_t est, const char* name,
                                                         const gpuml_array_t* value);
/* ABI version 4. Sets the array-valued parameter `name` from `value` (host or device memory, any float dtype) as
 * its JSON form in params_json would, with the same checks, without the text: KMeans "init", the
 * initial centers (n_clusters x n_features, finite). Other names, shapes or values are
 * INVALID_ARGUMENT and leave the parameters as they were. Takes the handle's lock exclusively. */
GPUML_C_API gpuml_status_t gpuml_estimator_set_param_array(gpuml_context_t ctx, gpuml_estimator_t est, const char* name,
                                                           const gpuml_array_t* value);
GPUML_C_API gpuml_status_t gpuml_estimator_serialized_size(gpuml_estimator_t est, uint64_t* size);
/* size must equal gpuml_estimator_serialized_size's answer: any other size is INVALID_ARGUMENT (a fit
 * on another thread in between can change it; ask again), so `size` bytes written are the whole model. */
GPUML_C_API gpuml_status_t gpuml_estimator_serialize(gpuml_estimator_t est, void* buffer, uint64_t size);
GPUML_C_API gpuml_status_t gpuml_estimator_deserialize(const void* buffer, uint64_t size, gpuml_estimator_t* out);

/* PageRank with networkx.pagerank's semantics over the edges src[e] -> dst[e] (1-d int32 or int64,
 * ids in [0, n_vertices), host or device memory; duplicate edges add up). weights: one per edge,
 * >= 0. personalization, nstart, dangling: length n_vertices, >= 0, divided by their sums.
 * params_json: {"alpha": 0.85, "max_iter": 100, "tol": 1e-6, "allow_unconverged": false} (any subset).
 * ranks_out: 1-d float32 or float64 of length n_vertices (its dtype is the precision used).
 * Not converging is GPUML_ERROR_NOT_CONVERGED (ranks_out unwritten, *n_iter = max_iter, *converged = 0)
 * unless allow_unconverged, which writes the last iterate and sets *converged = 0. */
GPUML_C_API gpuml_status_t gpuml_pagerank(gpuml_context_t ctx, int64_t n_vertices,
    const gpuml_array_t* src, const gpuml_array_t* dst, const gpuml_array_t* weights /* or NULL */,
    const gpuml_array_t* personalization /* or NULL */, const gpuml_array_t* nstart /* or NULL */,
    const gpuml_array_t* dangling /* or NULL */, const char* params_json, /* alpha, max_iter, tol, allow_unconverged */
    gpuml_array_t* ranks_out, int64_t* n_iter, int32_t* converged);

/* A graph built once and ranked many times (ABI version 3): personalized PageRank per seed set,
 * several alphas. gpuml_graph_create checks the edges (as gpuml_pagerank does) and builds the
 * layout PageRank iterates over, in `dtype` (GPUML_FLOAT32 or GPUML_FLOAT64: the precision of every
 * later call); src, dst and weights are not read after it returns. The graph computes on ctx's
 * device and keeps a reference to the context (freeing the context handle is then allowed); its
 * calls use that context, one thread at a time as the context's rule says. With a communicator of
 * several ranks, create and pagerank are collective, as gpuml_pagerank.
 * gpuml_graph_pagerank: gpuml_pagerank over the graph's edges with these vectors and params_json,
 * the same ranks bit for bit; ranks_out may be float32 or float64 whatever the graph's dtype (the
 * ranks are converted on write). Calls on one graph take its lock: they may come from several
 * threads and run one at a time.
 * gpuml_graph_info: the number of vertices, of edges (as given, duplicates counted, summed over the
 * ranks), the dtype, and the bytes the graph holds in the context's memory (this rank's share).
 * A handle is a key, never reused: a freed one is GPUML_ERROR_INVALID_ARGUMENT (not a crash);
 * gpuml_graph_free(NULL) does nothing, and free waits for calls on the graph already inside. */
GPUML_C_API gpuml_status_t gpuml_graph_create(gpuml_context_t ctx, int64_t n_vertices, const gpuml_array_t* src,
    const gpuml_array_t* dst, const gpuml_array_t* weights /* or NULL */, int32_t dtype, gpuml_graph_t* out);
GPUML_C_API gpuml_status_t gpuml_graph_free(gpuml_graph_t graph);
GPUML_C_API gpuml_status_t gpuml_graph_info(gpuml_graph_t graph, int64_t* n_vertices, int64_t* n_edges, int32_t* dtype,
                                            int64_t* memory_bytes);
GPUML_C_API gpuml_status_t gpuml_graph_pagerank(gpuml_graph_t graph, const gpuml_array_t* personalization /* or NULL */,
    const gpuml_array_t* nstart /* or NULL */, const gpuml_array_t* dangling /* or NULL */,
    const char* params_json, /* alpha, max_iter, tol, allow_unconverged */
    gpuml_array_t* ranks_out, int64_t* n_iter, int32_t* converged);

#ifdef __cplusplus
}
#endif

#endif /* GPUML_GPUML_H */

"""Loading libgpuml and declaring its C ABI (capi/include/gpuml/gpuml.h) for ctypes.

The library is looked for, in order, at:
1. the path in the environment variable GPUML_LIBRARY;
2. ``gpuml/lib/libgpuml.so*`` inside this package (what ``pip install`` puts there);
3. ``<repository>/build*/libgpuml.so`` (a development checkout).
"""

import ctypes
import glob
import json
import os

from sklearn.exceptions import NotFittedError

EXPECTED_ABI_VERSION = 6

# gpuml_status_t
OK = 0
ERROR_INVALID_ARGUMENT = 1
ERROR_NOT_FITTED = 2
ERROR_OUT_OF_MEMORY = 3
ERROR_CUDA = 4
ERROR_UNSUPPORTED = 5
ERROR_IO = 6
ERROR_INTERNAL = 7
ERROR_NOT_CONVERGED = 8

# gpuml_dtype_t
FLOAT32 = 0
FLOAT64 = 1
INT32 = 2
INT64 = 3

# device types (DLPack's kDLCPU / kDLCUDA)
DEVICE_CPU = 1
DEVICE_CUDA = 2


class gpuml_array_t(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("dtype", ctypes.c_int32),
        ("device_type", ctypes.c_int32),
        ("device_id", ctypes.c_int32),
        ("ndim", ctypes.c_int32),
        ("shape", ctypes.c_int64 * 2),
        ("strides", ctypes.c_int64 * 2),  # in elements
    ]


# gpuml_sparse_t (ABI version 2)
SPARSE_CSR = 0
SPARSE_CSC = 1


class gpuml_sparse_t(ctypes.Structure):
    _fields_ = [
        ("format", ctypes.c_int32),
        ("dtype", ctypes.c_int32),
        ("index_dtype", ctypes.c_int32),
        ("device_type", ctypes.c_int32),
        ("device_id", ctypes.c_int32),
        ("reserved", ctypes.c_int32),
        ("shape", ctypes.c_int64 * 2),
        ("nnz", ctypes.c_int64),
        ("indptr", ctypes.c_void_p),
        ("indices", ctypes.c_void_p),
        ("values", ctypes.c_void_p),
    ]


GLOO_STORE_SET = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p, ctypes.c_int64)
GLOO_STORE_GET = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p, ctypes.c_int64,
                                  ctypes.c_double)


class gpuml_gloo_store_t(ctypes.Structure):
    _fields_ = [("user", ctypes.c_void_p), ("set", GLOO_STORE_SET), ("get", GLOO_STORE_GET)]


# gpuml_comm_t's callbacks: allreduce_sum(user, data, count, dtype), allgatherv(user, send, count,
# recv, counts, dtype), broadcast(user, data, count, dtype, root), barrier(user).
COMM_ALLREDUCE = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int32)
COMM_ALLGATHERV = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p,
                                   ctypes.POINTER(ctypes.c_int64), ctypes.c_int32)
COMM_BROADCAST = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int32,
                                  ctypes.c_int32)
COMM_BARRIER = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p)


class gpuml_comm_t(ctypes.Structure):
    _fields_ = [("user", ctypes.c_void_p), ("rank", ctypes.c_int32), ("n_ranks", ctypes.c_int32),
                ("allreduce_sum", COMM_ALLREDUCE), ("allgatherv", COMM_ALLGATHERV), ("broadcast", COMM_BROADCAST),
                ("barrier", COMM_BARRIER)]


_context_t = ctypes.c_void_p
_estimator_t = ctypes.c_void_p
_graph_t = ctypes.c_void_p
_status_t = ctypes.c_int
_array_p = ctypes.POINTER(gpuml_array_t)
_sparse_p = ctypes.POINTER(gpuml_sparse_t)
_i32_p = ctypes.POINTER(ctypes.c_int32)
_i64x2 = ctypes.c_int64 * 2

# name: (restype, argtypes); statuses are checked by `check`.
_SIGNATURES = {
    "gpuml_last_error": (ctypes.c_char_p, []),
    "gpuml_version": (None, [ctypes.POINTER(ctypes.c_int)] * 3),
    "gpuml_abi_version": (ctypes.c_int32, []),
    "gpuml_build_info": (ctypes.c_char_p, []),
    "gpuml_context_create": (_status_t, [ctypes.c_char_p, ctypes.POINTER(_context_t)]),
    "gpuml_context_free": (_status_t, [_context_t]),
    "gpuml_context_device": (_status_t, [_context_t, _i32_p, _i32_p]),
    "gpuml_context_synchronize": (_status_t, [_context_t]),
    "gpuml_nccl_unique_id": (_status_t, [ctypes.POINTER(ctypes.c_uint8)]),
    "gpuml_context_attach_nccl": (_status_t, [_context_t, ctypes.POINTER(ctypes.c_uint8), ctypes.c_int32, ctypes.c_int32]),
    "gpuml_context_attach_mpi": (_status_t, [_context_t]),
    "gpuml_context_attach_gloo": (_status_t, [_context_t, ctypes.c_int32, ctypes.c_int32, ctypes.c_char_p]),
    "gpuml_context_attach_gloo_store": (_status_t, [_context_t, ctypes.c_int32, ctypes.c_int32, ctypes.c_char_p,
                                                    ctypes.POINTER(gpuml_gloo_store_t)]),
    "gpuml_context_attach_comm": (_status_t, [_context_t, ctypes.POINTER(gpuml_comm_t), ctypes.c_char_p]),
    "gpuml_context_rank": (_status_t, [_context_t, _i32_p, _i32_p]),
    "gpuml_context_allgather": (_status_t, [_context_t, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int32, ctypes.c_void_p]),
    "gpuml_estimator_create": (_status_t, [ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(_estimator_t)]),
    "gpuml_estimator_free": (_status_t, [_estimator_t]),
    "gpuml_set_progress_sink": (None, [ctypes.c_void_p, ctypes.c_void_p]),
    "gpuml_estimator_params_schema": (_status_t, [ctypes.c_char_p, ctypes.POINTER(ctypes.c_char_p)]),
    "gpuml_estimator_get_params": (_status_t, [_estimator_t, ctypes.POINTER(ctypes.c_char_p)]),
    "gpuml_estimator_fit": (_status_t, [_context_t, _estimator_t, _array_p, _array_p, _array_p]),
    "gpuml_estimator_output_shape": (
        _status_t,
        [_estimator_t, ctypes.c_char_p, ctypes.c_int64, _i32_p, _i32_p, _i64x2],
    ),
    "gpuml_estimator_predict": (_status_t, [_context_t, _estimator_t, _array_p, _array_p]),
    "gpuml_estimator_transform": (_status_t, [_context_t, _estimator_t, _array_p, _array_p]),
    "gpuml_estimator_predict_proba": (_status_t, [_context_t, _estimator_t, _array_p, _array_p]),
    "gpuml_estimator_fit_sparse": (_status_t, [_context_t, _estimator_t, _sparse_p, _array_p, _array_p]),
    "gpuml_estimator_predict_sparse": (_status_t, [_context_t, _estimator_t, _sparse_p, _array_p]),
    "gpuml_estimator_transform_sparse": (_status_t, [_context_t, _estimator_t, _sparse_p, _array_p]),
    "gpuml_estimator_predict_proba_sparse": (_status_t, [_context_t, _estimator_t, _sparse_p, _array_p]),
    "gpuml_estimator_warm_start_from": (_status_t, [_estimator_t, _estimator_t]),
    "gpuml_estimator_attribute_shape": (_status_t, [_estimator_t, ctypes.c_char_p, _i32_p, _i32_p, _i64x2]),
    "gpuml_estimator_get_attribute": (_status_t, [_context_t, _estimator_t, ctypes.c_char_p, _array_p]),
    "gpuml_estimator_set_param_array": (_status_t, [_context_t, _estimator_t, ctypes.c_char_p, _array_p]),
    "gpuml_estimator_serialized_size": (_status_t, [_estimator_t, ctypes.POINTER(ctypes.c_uint64)]),
    "gpuml_estimator_serialize": (_status_t, [_estimator_t, ctypes.c_void_p, ctypes.c_uint64]),
    "gpuml_estimator_deserialize": (_status_t, [ctypes.c_void_p, ctypes.c_uint64, ctypes.POINTER(_estimator_t)]),
    "gpuml_pagerank": (
        _status_t,
        [_context_t, ctypes.c_int64, _array_p, _array_p, _array_p, _array_p, _array_p, _array_p, ctypes.c_char_p,
         _array_p, ctypes.POINTER(ctypes.c_int64), _i32_p],
    ),
    "gpuml_graph_create": (
        _status_t,
        [_context_t, ctypes.c_int64, _array_p, _array_p, _array_p, ctypes.c_int32, ctypes.POINTER(_graph_t)],
    ),
    "gpuml_graph_free": (_status_t, [_graph_t]),
    "gpuml_graph_info": (
        _status_t,
        [_graph_t, ctypes.POINTER(ctypes.c_int64), ctypes.POINTER(ctypes.c_int64), _i32_p, ctypes.POINTER(ctypes.c_int64)],
    ),
    "gpuml_graph_pagerank": (
        _status_t,
        [_graph_t, _array_p, _array_p, _array_p, ctypes.c_char_p, _array_p, ctypes.POINTER(ctypes.c_int64), _i32_p],
    ),
}


def _candidate_paths():
    env = os.environ.get("GPUML_LIBRARY")
    if env:
        # An explicit choice: never fall back to another library silently.
        return [env]
    package_dir = os.path.dirname(os.path.abspath(__file__))
    found = sorted(glob.glob(os.path.join(package_dir, "lib", "libgpuml.so*")))
    repo_root = os.path.abspath(os.path.join(package_dir, "..", "..", ".."))
    # Newest build first, so a stale build directory does not shadow a fresh one.
    dev = glob.glob(os.path.join(repo_root, "build*", "libgpuml.so"))
    found += sorted(dev, key=os.path.getmtime, reverse=True)
    return found


def _load():
    candidates = _candidate_paths()
    if not candidates:
        raise ImportError(
            "gpuml: libgpuml.so was not found. Install the package (pip install ./bindings/python), "
            "build the library into <repository>/build*/, or set GPUML_LIBRARY to its path."
        )
    path = candidates[0]
    try:
        lib = ctypes.CDLL(path)
    except OSError as e:
        raise ImportError(f"gpuml: could not load {path}: {e}") from e
    for name, (restype, argtypes) in _SIGNATURES.items():
        try:
            function = getattr(lib, name)
        except AttributeError as e:
            raise ImportError(f"gpuml: {path} does not export {name}; is it a gpuml library?") from e
        function.restype = restype
        function.argtypes = argtypes
    abi = lib.gpuml_abi_version()
    if abi != EXPECTED_ABI_VERSION:
        raise ImportError(
            f"gpuml: {path} has C ABI version {abi}, but this Python package needs version "
            f"{EXPECTED_ABI_VERSION}; install matching versions of the package and the library."
        )
    return lib, path


lib, library_path = _load()


@ctypes.CFUNCTYPE(None, ctypes.c_char_p, ctypes.c_void_p)
def _print_progress(line, _user_data):
    """verbose estimators' progress lines, printed through sys.stdout (so Python's capture sees them)."""
    import sys

    try:
        sys.stdout.write(line.decode("utf-8", errors="replace"))
    except Exception:  # a progress line must never fail a fit (a closed stdout at shutdown)
        pass


lib.gpuml_set_progress_sink(ctypes.cast(_print_progress, ctypes.c_void_p), None)

_ERRORS = {
    ERROR_INVALID_ARGUMENT: ValueError,
    ERROR_NOT_FITTED: NotFittedError,
    ERROR_OUT_OF_MEMORY: MemoryError,
    ERROR_CUDA: RuntimeError,
    ERROR_UNSUPPORTED: NotImplementedError,
    ERROR_IO: OSError,
    ERROR_INTERNAL: RuntimeError,
    ERROR_NOT_CONVERGED: RuntimeError,  # gpuml.graph.pagerank raises PowerIterationFailedConvergence itself
}


def last_error():
    message = lib.gpuml_last_error()
    return message.decode("utf-8", errors="replace") if message else ""


def check(status):
    """Raises the Python exception that matches a gpuml_status_t, with gpuml's message."""
    if status == OK:
        return
    exception = _ERRORS.get(status, RuntimeError)
    message = last_error()
    if status not in _ERRORS:
        message = f"unknown gpuml status {status}: {message}"
    raise exception(message)


def version():
    major, minor, patch = ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
    lib.gpuml_version(ctypes.byref(major), ctypes.byref(minor), ctypes.byref(patch))
    return f"{major.value}.{minor.value}.{patch.value}"


def params_schema(kind):
    """The parameter table of estimator `kind` (gpuml_estimator_params_schema), as a dict."""
    text = ctypes.c_char_p()
    check(lib.gpuml_estimator_params_schema(kind.encode("ascii"), ctypes.byref(text)))
    return json.loads(text.value.decode("utf-8"))


def build_info():
    """The library's build description (CUDA, NCCL, MPI, architectures, visible CUDA devices)."""
    return json.loads(lib.gpuml_build_info().decode("utf-8"))

"""The array adapter: caller arrays to gpuml_array_t descriptors, and outputs of the caller's type.

- NumPy arrays are host descriptors, zero-copy when their dtype is float32/float64/int32/int64
  (native byte order) and their strides are non-negative multiples of the item size.
- Anything with ``__cuda_array_interface__`` (CuPy arrays, PyTorch CUDA tensors, Numba device
  arrays) is a device descriptor, zero-copy.
- Other ``__dlpack__`` objects (PyTorch CPU tensors, ...) are viewed through numpy.from_dlpack.
- Outputs mirror the input: NumPy in, NumPy out; CuPy in, CuPy out; torch in, torch out on the
  same device. CuPy and torch are imported only when the caller's array is one of theirs.
"""

import sys

import numpy as np

from . import _lib

_NUMPY_TO_GPUML = {
    np.dtype(np.float32): _lib.FLOAT32,
    np.dtype(np.float64): _lib.FLOAT64,
    np.dtype(np.int32): _lib.INT32,
    np.dtype(np.int64): _lib.INT64,
}
_GPUML_TO_NUMPY = {code: dtype for dtype, code in _NUMPY_TO_GPUML.items()}
SUPPORTED_DTYPES = tuple(_NUMPY_TO_GPUML)


def numpy_dtype(gpuml_dtype):
    return _GPUML_TO_NUMPY[gpuml_dtype]


def _is_torch_tensor(obj):
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(obj, torch.Tensor)


def _is_cupy_array(obj):
    cupy = sys.modules.get("cupy")
    return cupy is not None and isinstance(obj, cupy.ndarray)


def has_cuda_array_interface(obj):
    # hasattr also hides the AttributeError torch raises for CPU tensors.
    if isinstance(obj, np.ndarray):
        return False
    try:
        return hasattr(obj, "__cuda_array_interface__")
    except Exception:  # noqa: BLE001 - some objects raise other errors for a missing interface
        return False


def _has_dlpack(obj):
    return not isinstance(obj, np.ndarray) and hasattr(obj, "__dlpack__") and hasattr(obj, "__dlpack_device__")


class ArrayKind:
    """Where a caller's array lives and which library made it, to build outputs alike."""

    def __init__(self, library, is_device, device_id=0, torch_device=None):
        self.library = library  # "numpy", "cupy", "torch" or "cuda_array_interface"
        self.is_device = is_device
        self.device_id = device_id
        self.torch_device = torch_device

    @classmethod
    def of(cls, obj):
        if _is_torch_tensor(obj):
            if obj.device.type == "cuda":
                return cls("torch", True, obj.device.index or 0, obj.device)
            return cls("torch", False, 0, obj.device)
        if _is_cupy_array(obj):
            return cls("cupy", True, obj.device.id)
        if has_cuda_array_interface(obj):
            device = getattr(obj, "device", None)
            device_id = getattr(device, "id", None)
            return cls("cuda_array_interface", True, device_id if isinstance(device_id, int) else 0)
        return cls("numpy", False)

    # -- host inputs ---------------------------------------------------------------------
    @staticmethod
    def host_input(obj):
        """A NumPy view of a host tensor that NumPy's own validation would not accept as is."""
        if _is_torch_tensor(obj):
            return np.from_dlpack(obj.detach())
        if _has_dlpack(obj) and not has_cuda_array_interface(obj):
            try:
                return np.from_dlpack(obj)
            except (TypeError, BufferError, RuntimeError):
                return obj  # leave it to np.asarray inside scikit-learn's validation
        return obj

    # -- outputs ---------------------------------------------------------------------------
    def empty(self, shape, dtype):
        """An uninitialised C-contiguous output of this kind."""
        dtype = np.dtype(dtype)
        if not self.is_device:
            return np.empty(shape, dtype=dtype)  # torch CPU results are wrapped by `wrap` at the end
        if self.library == "torch":
            import torch

            return torch.empty(shape, dtype=_torch_dtype(dtype), device=self.torch_device)
        try:
            import cupy
        except ImportError:
            cupy = None
        if cupy is not None:
            with cupy.cuda.Device(self.device_id):
                return cupy.empty(shape, dtype=dtype)
        try:
            import torch
        except ImportError as e:
            raise RuntimeError(
                "gpuml: an output for a __cuda_array_interface__ input needs CuPy or PyTorch to be installed"
            ) from e
        return torch.empty(shape, dtype=_torch_dtype(dtype), device=f"cuda:{self.device_id}")

    def wrap(self, host_result):
        """Host results (NumPy) of a host input, in the caller's type."""
        if self.library == "torch" and not self.is_device:
            import torch

            return torch.from_numpy(np.ascontiguousarray(host_result))
        return host_result

    def from_numpy(self, array):
        """A NumPy array in the caller's type and on the caller's device."""
        if not self.is_device:
            return self.wrap(array)
        if self.library == "torch":
            import torch

            return torch.as_tensor(np.ascontiguousarray(array), device=self.torch_device)
        import cupy

        with cupy.cuda.Device(self.device_id):
            return cupy.asarray(array)

    def synchronize(self):
        """Waits for the caller's library's current stream: gpuml reads and writes on its own."""
        if not self.is_device:
            return
        if self.library == "torch":
            import torch

            torch.cuda.current_stream(self.torch_device).synchronize()
        elif self.library == "cupy":
            import cupy

            with cupy.cuda.Device(self.device_id):
                cupy.cuda.get_current_stream().synchronize()


def _torch_dtype(dtype):
    import torch

    return {
        np.dtype(np.float32): torch.float32,
        np.dtype(np.float64): torch.float64,
        np.dtype(np.int32): torch.int32,
        np.dtype(np.int64): torch.int64,
    }[np.dtype(dtype)]


def to_numpy(obj):
    """A NumPy array with the values of any supported array (copied off the device if needed)."""
    if isinstance(obj, np.ndarray):
        return obj
    if _is_torch_tensor(obj):
        return obj.detach().cpu().numpy()
    if _is_cupy_array(obj):
        return obj.get()
    if has_cuda_array_interface(obj):
        if hasattr(obj, "copy_to_host"):  # Numba
            return obj.copy_to_host()
        import cupy

        return cupy.asarray(obj).get()
    return np.asarray(ArrayKind.host_input(obj))


def device_dtype(obj):
    """The NumPy dtype of a device array (float16 stands in for torch's bfloat16)."""
    if _is_torch_tensor(obj):
        if obj.dtype.is_complex:
            return np.dtype(np.complex128)
        try:
            return np.dtype(str(obj.dtype).replace("torch.", ""))
        except TypeError:
            return np.dtype(np.float16) if obj.dtype.is_floating_point else np.dtype(object)
    typestr = obj.__cuda_array_interface__["typestr"]
    return np.dtype(typestr)


def dtype_of(obj):
    """The NumPy dtype of a NumPy or device array, or of a sparse matrix's values."""
    if isinstance(obj, np.ndarray):
        return obj.dtype
    if is_sparse(obj):
        values = sparse_parts(obj)[4]
        return np.dtype(values.dtype) if isinstance(values, np.ndarray) else device_dtype(values)
    return device_dtype(obj)


def device_astype(obj, dtype):
    """A C-contiguous copy (or the array itself) of a device array in `dtype`."""
    dtype = np.dtype(dtype)
    if _is_torch_tensor(obj):
        return obj.detach().to(_torch_dtype(dtype)).contiguous()
    import cupy

    array = obj if _is_cupy_array(obj) else cupy.asarray(obj)
    return cupy.ascontiguousarray(array.astype(dtype, copy=False))


def device_is_c_contiguous(obj):
    if _is_torch_tensor(obj):
        return obj.is_contiguous()
    cai = obj.__cuda_array_interface__
    strides = cai.get("strides")
    if strides is None:
        return True
    expected = np.dtype(cai["typestr"]).itemsize
    for extent, stride in zip(reversed(cai["shape"]), reversed(strides)):
        if extent > 1 and stride != expected:
            return False
        expected *= extent
    return True


def descriptor(array, device_id=0):
    """A gpuml_array_t over `array` (NumPy, or any __cuda_array_interface__ object), zero-copy.

    Returns (descriptor, keepalive): keep `keepalive` referenced while the C side uses the
    descriptor (it is the array, or the copy made when the array's layout needed one).
    """
    if isinstance(array, np.ndarray):
        return _host_descriptor(array)
    if has_cuda_array_interface(array):
        return _device_descriptor(array, device_id)
    raise TypeError(f"gpuml: cannot pass an object of type {type(array).__name__} to the C library")


def _fill(desc, data, dtype, shape, strides_in_elements):
    if len(shape) > 2:
        raise ValueError(f"gpuml arrays have at most 2 dimensions, got shape {tuple(shape)}")
    desc.data = data
    desc.dtype = dtype
    desc.ndim = len(shape)
    for i, (extent, stride) in enumerate(zip(shape, strides_in_elements)):
        desc.shape[i] = extent
        desc.strides[i] = stride


def _host_descriptor(array):
    dtype = array.dtype
    itemsize = dtype.itemsize
    usable = (
        dtype in _NUMPY_TO_GPUML
        and dtype.isnative
        and array.ndim <= 2
        and all(s >= 0 and s % itemsize == 0 for s in array.strides)
    )
    if not usable:
        if dtype not in _NUMPY_TO_GPUML and np.dtype(dtype.newbyteorder("=")) not in _NUMPY_TO_GPUML:
            raise ValueError(f"gpuml supports float32, float64, int32 and int64 arrays, got {dtype}")
        array = np.ascontiguousarray(array, dtype=dtype.newbyteorder("="))
    desc = _lib.gpuml_array_t()
    desc.device_type = _lib.DEVICE_CPU
    desc.device_id = 0
    _fill(desc, array.ctypes.data if array.size else None, _NUMPY_TO_GPUML[array.dtype], array.shape,
          [s // array.itemsize for s in array.strides])
    return desc, array


def _device_descriptor(array, device_id):
    cai = array.__cuda_array_interface__
    dtype = np.dtype(cai["typestr"])
    if dtype not in _NUMPY_TO_GPUML:
        raise ValueError(f"gpuml supports float32, float64, int32 and int64 arrays, got {dtype}")
    if cai.get("mask") is not None:
        raise ValueError("gpuml does not support masked device arrays")
    shape = tuple(cai["shape"])
    strides = cai.get("strides")
    if strides is None:  # C-contiguous
        elements = []
        running = 1
        for extent in reversed(shape):
            elements.append(running)
            running *= extent
        elements.reverse()
    else:
        if any(s < 0 or s % dtype.itemsize for s in strides):
            raise ValueError("gpuml needs device arrays with non-negative strides that are multiples of the item size")
        elements = [s // dtype.itemsize for s in strides]
    desc = _lib.gpuml_array_t()
    desc.device_type = _lib.DEVICE_CUDA
    desc.device_id = device_id
    data = cai["data"][0]
    _fill(desc, data if data else None, _NUMPY_TO_GPUML[dtype], shape, elements)
    return desc, array


# -- sparse matrices (gpuml_sparse_t) --------------------------------------------------------
# SciPy CSR / CSC (host), CuPy sparse CSR / CSC and torch sparse CSR / CSC tensors (device or
# host): zero-copy views of their indptr, indices and values.


def _is_cupy_sparse(obj):
    cupyx_sparse = sys.modules.get("cupyx.scipy.sparse")
    return cupyx_sparse is not None and cupyx_sparse.issparse(obj)


def _torch_sparse_layout(obj):
    """"csr", "csc", another layout name for other sparse torch tensors, or None (dense / not torch)."""
    if not _is_torch_tensor(obj):
        return None
    import torch

    layouts = {torch.sparse_csr: "csr", torch.sparse_csc: "csc", torch.sparse_coo: "coo"}
    return layouts.get(obj.layout, None if obj.layout == torch.strided else str(obj.layout))


def is_sparse(obj):
    """True for SciPy, CuPy and torch sparse matrices."""
    from scipy import sparse

    return sparse.issparse(obj) or _is_cupy_sparse(obj) or _torch_sparse_layout(obj) is not None


def is_device_sparse(obj):
    """True for sparse matrices in device memory (CuPy's, torch's on CUDA)."""
    if _is_cupy_sparse(obj):
        return True
    return _torch_sparse_layout(obj) is not None and obj.device.type == "cuda"


def sparse_kind(obj):
    """The ArrayKind of a sparse matrix: where dense outputs of it are made."""
    if _is_cupy_sparse(obj):
        return ArrayKind("cupy", True, obj.data.device.id)
    return ArrayKind.of(obj)


def sparse_parts(obj):
    """(format "csr"/"csc", shape, indptr, indices, values) of a CSR or CSC matrix of any library."""
    layout = _torch_sparse_layout(obj)
    if layout is not None:
        if layout == "csr":
            return "csr", tuple(obj.shape), obj.crow_indices(), obj.col_indices(), obj.values()
        if layout == "csc":
            return "csc", tuple(obj.shape), obj.ccol_indices(), obj.row_indices(), obj.values()
        raise TypeError(f"gpuml takes torch sparse CSR or CSC tensors, got layout {obj.layout}")
    if obj.format not in ("csr", "csc"):
        raise TypeError(f"gpuml takes CSR or CSC sparse matrices, got format {obj.format!r}")
    return obj.format, tuple(obj.shape), obj.indptr, obj.indices, obj.data


def sparse_descriptor(X, device_id=0):
    """A gpuml_sparse_t over a CSR / CSC matrix (values float32 or float64), zero-copy where its
    arrays are contiguous and indptr and indices share an int32 / int64 dtype (else converted).
    Returns (descriptor, keepalive)."""
    fmt, shape, indptr, indices, values = sparse_parts(X)
    desc = _lib.gpuml_sparse_t()
    desc.format = _lib.SPARSE_CSR if fmt == "csr" else _lib.SPARSE_CSC
    desc.shape[0], desc.shape[1] = shape
    if is_device_sparse(X):
        if _is_torch_tensor(values):
            index_dtype = np.dtype(np.int64) if indptr.dtype != indices.dtype else device_dtype(indices)
            parts = [t.contiguous() for t in (indptr, indices, values)]
            if device_dtype(parts[0]) != index_dtype:
                parts[0], parts[1] = device_astype(parts[0], index_dtype), device_astype(parts[1], index_dtype)
            pointers = [t.data_ptr() for t in parts]
            device_id = values.device.index or 0
        else:
            index_dtype = np.result_type(indptr.dtype, indices.dtype)
            parts = [device_astype(indptr, index_dtype), device_astype(indices, index_dtype), device_astype(values, values.dtype)]
            pointers = [p.data.ptr for p in parts]
        value_dtype = device_dtype(parts[2])
        desc.device_type = _lib.DEVICE_CUDA
        desc.device_id = device_id
    else:
        index_dtype = np.result_type(indptr.dtype, indices.dtype)
        parts = [np.ascontiguousarray(indptr, dtype=index_dtype), np.ascontiguousarray(indices, dtype=index_dtype),
                 np.ascontiguousarray(values)]
        pointers = [p.ctypes.data if p.size else None for p in parts]
        value_dtype = parts[2].dtype
        desc.device_type = _lib.DEVICE_CPU
        desc.device_id = 0
    if np.dtype(index_dtype) not in (np.dtype(np.int32), np.dtype(np.int64)):
        raise ValueError(f"gpuml takes int32 or int64 sparse indices, got {np.dtype(index_dtype)}")
    if np.dtype(value_dtype) not in (np.dtype(np.float32), np.dtype(np.float64)):
        raise ValueError(f"gpuml takes float32 or float64 sparse values, got {np.dtype(value_dtype)}")
    desc.dtype = _NUMPY_TO_GPUML[np.dtype(value_dtype)]
    desc.index_dtype = _NUMPY_TO_GPUML[np.dtype(index_dtype)]
    desc.reserved = 0
    desc.nnz = int(parts[1].shape[0])
    desc.indptr, desc.indices, desc.values = pointers
    return desc, parts

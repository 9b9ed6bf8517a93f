"""Device strings and gpuml contexts.

A gpuml context (a CPU thread pool, or one CUDA device with its stream and library handles) is
costly to create and may be used by one thread at a time, so contexts are cached per thread and
per device string. After gpuml.distributed.init(), "cpu" (and "auto") is the one CPU context that
holds the communicator, and "cuda" the one CUDA context of this rank's GPU that holds NCCL, in
every thread (see gpuml/distributed.py); inside `with gpuml.distributed.gloo_group(...)`, "cpu"
and "auto" (or, for a group on a GPU, "auto", "cuda" and "cuda:N" of that GPU) are that group's
context in the calling thread.
"""

import ctypes
import re
import threading

from . import _lib

_DEVICE_PATTERN = re.compile(r"^(auto|cpu|cuda|cuda:[0-9]{1,8})$")


def check_device(device):
    """Returns `device` when it is "auto", "cpu", "cuda" or "cuda:N"; raises ValueError otherwise."""
    if not isinstance(device, str) or not _DEVICE_PATTERN.match(device):
        raise ValueError(f'device must be "auto", "cpu", "cuda" or "cuda:N", got {device!r}')
    return device


class Context:
    """Owns one gpuml_context_t."""

    def __init__(self, device):
        handle = _lib._context_t()
        _lib.check(_lib.lib.gpuml_context_create(device.encode("ascii"), ctypes.byref(handle)))
        self.handle = handle
        self._free = _lib.lib.gpuml_context_free  # kept: module globals may be gone at shutdown
        device_type, device_id = ctypes.c_int32(), ctypes.c_int32()
        _lib.check(_lib.lib.gpuml_context_device(handle, ctypes.byref(device_type), ctypes.byref(device_id)))
        self.is_cuda = device_type.value == _lib.DEVICE_CUDA
        self.device_id = device_id.value if self.is_cuda else 0

    def synchronize(self):
        _lib.check(_lib.lib.gpuml_context_synchronize(self.handle))

    def __del__(self):
        handle = getattr(self, "handle", None)
        if handle is not None and handle.value:
            self._free(handle)
            self.handle = None


_per_thread = threading.local()
# The contexts holding the communicator, once gpuml.distributed.init() ran: the CPU one (MPI) and,
# on GPU machines with NCCL, the CUDA one of this rank's GPU (NCCL).
_distributed_cpu = None
_distributed_cuda = None


def distributed_context():
    """The context init() attached (the CUDA one when there is one), or None."""
    return _distributed_cuda if _distributed_cuda is not None else _distributed_cpu


def set_distributed_context(context):
    global _distributed_cpu, _distributed_cuda
    if context.is_cuda:
        _distributed_cuda = context
    else:
        _distributed_cpu = context


def get_context(device):
    """The calling thread's context for `device` (created on first use).

    After gpuml.distributed.init(): "cpu" and "auto" are the attached CPU context; "cuda" and
    "cuda:N" of this rank's GPU are the attached CUDA context (the rank's GPU, which need not be
    device 0), and "auto" is that one when only a CUDA context was attached (the NCCL form, or
    init_gloo with a CUDA device). Inside a gloo_group, the group's context comes first.
    """
    check_device(device)
    scoped = getattr(_per_thread, "group", None)
    if scoped is not None and device in (("auto", "cuda", f"cuda:{scoped.device_id}") if scoped.is_cuda else ("cpu", "auto")):
        return scoped
    if device in ("cpu", "auto") and _distributed_cpu is not None:
        return _distributed_cpu
    if _distributed_cuda is not None and device in ("auto", "cuda", f"cuda:{_distributed_cuda.device_id}"):
        return _distributed_cuda
    cache = getattr(_per_thread, "contexts", None)
    if cache is None:
        cache = _per_thread.contexts = {}
    context = cache.get(device)
    if context is None:
        context = cache[device] = Context(device)
    return context


def set_thread_group(context):
    """Makes `context` (a context holding a communicator) the calling thread's "cpu" and "auto"
    (a CPU context) or "auto", "cuda" and "cuda:N" of its GPU (a CUDA one) until
    set_thread_group(None); returns the one it replaces."""
    previous = getattr(_per_thread, "group", None)
    _per_thread.group = context
    return previous


def thread_group():
    """The calling thread's group context (set_thread_group), or None."""
    return getattr(_per_thread, "group", None)


def cuda_device_count():
    """Number of CUDA devices gpuml can use (0 when built without CUDA or without a GPU)."""
    return int(_lib.build_info().get("cuda_devices", 0) or 0)

"""Distributed (SPMD) training: every rank fits the same estimator on its own rows.

Launched by ``mpirun -np N python script.py``::

    import gpuml.distributed
    gpuml.distributed.init()                 # MPI_COMM_WORLD (collective: every rank calls it)
    model = LogisticRegression(device="cpu").fit(X_local, y_local)
    # every rank now holds the same model, that of all ranks' rows

How it works: ``init()`` creates one CPU context of the package and attaches the MPI
communicator to it (``gpuml_context_attach_mpi``; gpuml initializes MPI itself when the program
has not, and finalizes it at exit). When mpi4py is installed it is imported first, so that MPI is
initialized (and finalized) by mpi4py and the script can use mpi4py alongside gpuml. When gpuml
has NCCL and every rank has a GPU of its own (a node's ranks no more than its GPUs), ``init()``
also creates one CUDA context on this rank's GPU (its rank within the node, from mpi4py or the
launcher's environment) and attaches NCCL bootstrapped over MPI to it
(``gpuml_context_attach_mpi`` again). From then on every estimator and ``gpuml.graph.pagerank``
with ``device="cpu"`` or ``"auto"`` uses the CPU context, and with ``device="cuda"`` (this rank's
GPU, whatever its number) the CUDA one, in every thread.
An explicit ``"cuda:N"`` of another GPU stays local (1 rank). Attaching happens once,
in ``init()``, so estimators created later, predictions on one rank only and the like start no
collective of their own. A fit is collective: every rank must make the same fits in the same
order, from one thread at a time.

Distributed today: KMeans, LinearRegression, Ridge, Lasso, ElasticNet, LogisticRegression, PCA,
TruncatedSVD, RandomForestClassifier and RandomForestRegressor (the forest of all rows, bit for
bit) and PageRank (each rank passing its share of the edges). The classes of a classifier are those of
all ranks' labels (the Python classifiers gather every rank's classes before the fit, so labels
of any type work and a rank may lack some classes; the C++ and C APIs take the union too). random_state=None in a distributed fit takes rank 0's seed (drawn by
rank 0's context), so every rank grows the same model; an int must be the same on every rank
(different ints are an error on every rank, not a hang).

``init(unique_id, n_ranks, rank)`` is the NCCL form (for engines other than MPI): it attaches an
NCCL communicator to the package's default CUDA context (``nccl_unique_id()`` on one rank makes
the id), when gpuml was built with NCCL (on this rank's GPU, as above, from the launcher's
LOCAL_RANK and the like); otherwise NotImplementedError. Tested over NCCL on two GPUs
(``tests/mpi``'s ``nccl`` parts and ``benchmarks/scaling.py``).

``init_comm(comm)`` attaches a communicator the program already has: an mpi4py communicator
(which init() itself uses when gpuml was built without MPI) or any object with the four
collectives on NumPy arrays; ``comm_group(comm)`` is its per-thread form.

``init_gloo(n_ranks, rank, rendezvous_dir)`` needs no MPI: Gloo (TCP) on the CPU context, the
ranks meeting in a shared directory or a caller's store, for processes started by Dask, Spark or
any launcher; with ``device="cuda"``, on a CUDA context, whose collectives go over NCCL
bootstrapped over Gloo when every rank has a GPU of its own, else through host memory over Gloo.
"""

import contextlib
import ctypes
import json
import os
import threading
import warnings

import numpy as np

from . import _context, _lib

_lock = threading.Lock()

# Set by the common launchers: Open MPI, MPICH / Intel MPI, MVAPICH, Slurm, torchrun.
_LOCAL_RANK_VARIABLES = ("OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "MV2_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID", "LOCAL_RANK")


def local_rank(comm=None):
    """This process's rank among the ranks of its node: from mpi4py's shared-memory split of
    `comm` when given, else from the launcher's environment (0 when none says)."""
    if comm is not None:
        from mpi4py import MPI

        node = comm.Split_type(MPI.COMM_TYPE_SHARED)
        try:
            return node.Get_rank()
        finally:
            node.Free()
    for name in _LOCAL_RANK_VARIABLES:
        value = os.environ.get(name, "")
        if value.isdigit():
            return int(value)
    return 0


def local_size(comm=None):
    """The number of ranks on this process's node (as local_rank; 1 when nothing says)."""
    if comm is not None:
        from mpi4py import MPI

        node = comm.Split_type(MPI.COMM_TYPE_SHARED)
        try:
            return node.Get_size()
        finally:
            node.Free()
    for name in ("OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "MV2_COMM_WORLD_LOCAL_SIZE", "LOCAL_WORLD_SIZE"):
        value = os.environ.get(name, "")
        if value.isdigit():
            return int(value)
    return 1


def init(unique_id=None, n_ranks=None, rank=None, *, cuda=None):
    """Attaches communicators to the package's default contexts (collective).

    With no arguments: MPI_COMM_WORLD (the program launched by mpirun; mpi4py used when present,
    and needed when gpuml was built without MPI, as a wheel is: mpi4py then carries the
    collectives, through init_comm's path) on the CPU context and, when gpuml has NCCL and every rank has a GPU of its own, NCCL
    bootstrapped over MPI on a CUDA context of this rank's GPU (its local rank).
    ``cuda=False`` attaches the CPU context only; ``cuda=True`` requires the CUDA one.
    With ``(unique_id, n_ranks, rank)``: an NCCL communicator on the default CUDA context
    (NotImplementedError when gpuml was built without NCCL).
    Calling init() twice raises RuntimeError.
    """
    nccl_args = (unique_id, n_ranks, rank)
    if any(a is not None for a in nccl_args):
        return _init_nccl(*nccl_args)
    with _lock:
        if _context.distributed_context() is not None:
            raise RuntimeError("gpuml.distributed.init() was already called in this process")
        try:
            from mpi4py import MPI  # initializes MPI, which gpuml then shares
            world = MPI.COMM_WORLD
        except ImportError:
            world = None  # gpuml_context_attach_mpi initializes MPI itself
        # A gpuml built without MPI (a wheel) has mpi4py's MPI carry its collectives.
        through_mpi4py = not _lib.build_info().get("mpi") and world is not None

        def attach(context):
            if through_mpi4py:
                _attach_comm(context, _Mpi4pyCollectives(world), "nccl" if context.is_cuda else "auto")
            else:
                _lib.check(_lib.lib.gpuml_context_attach_mpi(context.handle))

        context = _context.Context("cpu")
        attach(context)
        _context.set_distributed_context(context)
        # NCCL needs a GPU of its own per rank: attach CUDA only when every rank's node has at
        # least as many GPUs as ranks (several ranks sharing one GPU keep to the CPU context).
        n_gpus = _context.cuda_device_count() if _lib.build_info().get("nccl") else 0
        own_gpu = 1 if n_gpus >= local_size(world) else 0
        if world is not None:  # attaching is collective: every rank must take the same branch
            n_gpus = world.allreduce(n_gpus, op=MPI.MIN)
            own_gpu = world.allreduce(own_gpu, op=MPI.MIN)
        if cuda is True and (n_gpus == 0 or not own_gpu):
            raise RuntimeError("gpuml.distributed.init(cuda=True): gpuml has no NCCL, a rank sees no GPU, or a node has "
                               "more ranks than GPUs")
        if cuda is not False and n_gpus > 0 and own_gpu:
            gpu = _context.Context(f"cuda:{local_rank(world) % n_gpus}")
            attach(gpu)
            _context.set_distributed_context(gpu)


def _init_nccl(unique_id, n_ranks, rank):
    if unique_id is None or n_ranks is None or rank is None:
        raise TypeError("gpuml.distributed.init takes no arguments (MPI) or all of unique_id, n_ranks and rank (NCCL)")
    if not isinstance(unique_id, (bytes, bytearray)) or len(unique_id) != 128:
        raise ValueError("gpuml.distributed.init: unique_id must be the 128 bytes of gpuml's NCCL unique id")
    if not isinstance(n_ranks, int) or n_ranks < 1:
        raise ValueError(f"gpuml.distributed.init: n_ranks must be an integer >= 1, got {n_ranks!r}")
    if not isinstance(rank, int) or not 0 <= rank < n_ranks:
        raise ValueError(f"gpuml.distributed.init: rank must be an integer in [0, {n_ranks}), got {rank!r}")
    if not _lib.build_info().get("nccl"):
        raise NotImplementedError(
            "gpuml.distributed.init(unique_id, n_ranks, rank): this gpuml was built without NCCL; "
            "launch with mpirun and call gpuml.distributed.init() to train on the CPU backend"
        )
    with _lock:
        if _context.distributed_context() is not None:
            raise RuntimeError("gpuml.distributed.init() was already called in this process")
        n_gpus = _context.cuda_device_count()
        context = _context.Context(f"cuda:{local_rank() % n_gpus}" if n_gpus > 0 else "cuda")
        buffer = (ctypes.c_uint8 * 128).from_buffer_copy(bytes(unique_id))
        _lib.check(_lib.lib.gpuml_context_attach_nccl(context.handle, buffer, n_ranks, rank))
        _context.set_distributed_context(context)


_GPU_TRANSPORTS = ("auto", "nccl", "host")


def _check_group_device(function, device, gpu_transport):
    """A group's device is "cpu", "cuda" or "cuda:N", its gpu_transport one of _GPU_TRANSPORTS."""
    if device not in ("cpu", "cuda") and not (isinstance(device, str) and device.startswith("cuda:")):
        raise ValueError(f'gpuml.distributed.{function}: device must be "cpu", "cuda" or "cuda:N", got {device!r}')
    _context.check_device(device)
    if gpu_transport not in _GPU_TRANSPORTS:
        raise ValueError(f"gpuml.distributed.{function}: gpu_transport must be one of {_GPU_TRANSPORTS}, got {gpu_transport!r}")


def _group_device(device):
    """The device of an engine's group (Dask, Spark) for an estimator's `device`: the CPU for
    "cpu" and "auto" (as gloo_group maps them), the estimator's own for "cuda" and "cuda:N"."""
    _context.check_device(device)
    return "cpu" if device in ("cpu", "auto") else device


def _raise_the_cause(function, failures):
    """Raises, for an engine's fit (Dask, Spark), the error of the rank whose own fit failed (its
    rows failed their checks: ValueError...) rather than the OSError of the ranks that then lost
    it, noting the rank and where it ran. failures: [(rank, where, exception)], not empty."""
    rank, where, cause = next((f for f in failures if not isinstance(f[2], OSError)), failures[0])
    if hasattr(cause, "add_note"):
        cause.add_note(f"({function}: rank {rank}, on {where})")
    raise cause


def _gpu_for_slot(slot):
    """The GPU of a host's `slot`-th rank: the GPUs this process sees, taken in turn ("cuda"
    when it sees none, which then fails with gpuml's own error)."""
    n_gpus = _context.cuda_device_count()
    return f"cuda:{slot % n_gpus}" if n_gpus > 0 else "cuda"


def _gloo_context(function, n_ranks, rank, rendezvous_dir, store, prefix, hostname, interface, timeout, device,
                  gpu_transport):
    """A new context of `device` with Gloo attached (collective), after checking the arguments."""
    _check_group_device(function, device, gpu_transport)
    if not isinstance(n_ranks, int) or isinstance(n_ranks, bool) or n_ranks < 1:
        raise ValueError(f"gpuml.distributed.{function}: n_ranks must be an integer >= 1, got {n_ranks!r}")
    if not isinstance(rank, int) or isinstance(rank, bool) or not 0 <= rank < n_ranks:
        raise ValueError(f"gpuml.distributed.{function}: rank must be an integer in [0, {n_ranks}), got {rank!r}")
    if (rendezvous_dir is None) == (store is None):
        raise ValueError(f"gpuml.distributed.{function}: give one of rendezvous_dir (a shared directory) and store")
    if rendezvous_dir is not None:
        rendezvous_dir = os.fspath(rendezvous_dir)
        if not os.path.isdir(rendezvous_dir):
            raise ValueError(f"gpuml.distributed.{function}: rendezvous_dir {rendezvous_dir!r} is not a directory")
    elif not (callable(getattr(store, "set", None)) and callable(getattr(store, "get", None))):
        raise ValueError(f"gpuml.distributed.{function}: store must have set(key, value) and get(key, timeout) methods")
    if not _lib.build_info().get("gloo"):
        raise NotImplementedError(
            f"gpuml.distributed.{function}: this gpuml was built without Gloo (Debian: libgloo-dev at build time); "
            "launch with mpirun and call gpuml.distributed.init() instead"
        )
    params = {"prefix": str(prefix), "timeout_seconds": float(timeout), "gpu_transport": gpu_transport}
    if hostname is not None:
        params["hostname"] = str(hostname)
    if interface is not None:
        params["interface"] = str(interface)
    context = _context.Context(device)
    if rendezvous_dir is not None:
        params["rendezvous_dir"] = rendezvous_dir
        _lib.check(_lib.lib.gpuml_context_attach_gloo(context.handle, n_ranks, rank, json.dumps(params).encode()))
    else:
        _attach_through_store(context, n_ranks, rank, params, store)
    return context


def _attach_through_store(context, n_ranks, rank, params, store):
    """gpuml_context_attach_gloo_store with `store`'s methods as the C callbacks; an exception in
    one of them is raised (as the cause of the attach's error) rather than lost."""
    failures = []

    def set_value(_, key, value, size):
        try:
            store.set(key.decode(), ctypes.string_at(value, size))
            return 0
        except BaseException as e:  # noqa: BLE001 - reported after the C call returns
            failures.append(e)
            return 1

    def get_value(_, key, out, capacity, timeout):
        try:
            value = store.get(key.decode(), timeout)
        except TimeoutError:
            return -1
        except BaseException as e:  # noqa: BLE001
            failures.append(e)
            return -1
        if value is None:
            return -1
        value = bytes(value)
        if len(value) <= capacity:
            ctypes.memmove(out, value, len(value))
        return len(value)

    callbacks = _lib.gpuml_gloo_store_t(None, _lib.GLOO_STORE_SET(set_value), _lib.GLOO_STORE_GET(get_value))
    status = _lib.lib.gpuml_context_attach_gloo_store(context.handle, n_ranks, rank, json.dumps(params).encode(),
                                                      ctypes.byref(callbacks))
    if status != _lib.OK and failures:
        try:
            _lib.check(status)
        except Exception as e:
            raise e from failures[0]
    _lib.check(status)


_NUMPY_DTYPES = {0: np.float32, 1: np.float64, 2: np.int32, 3: np.int64}  # gpuml_dtype_t


def _buffer(address, count, dtype):
    """`count` elements of gpuml dtype `dtype` at `address` as a NumPy array over that memory."""
    element = np.dtype(_NUMPY_DTYPES[dtype])
    if count == 0 or not address:
        return np.empty(0, element)
    return np.frombuffer((ctypes.c_char * (count * element.itemsize)).from_address(address), dtype=element)


class _Mpi4pyCollectives:
    """The collectives over an mpi4py communicator (a duplicate of it, so gpuml's messages never
    meet the program's). Floating-point sums are reduced to rank 0, then broadcast: every rank
    holds the same bits."""

    def __init__(self, comm):
        self.comm = comm.Dup()
        self.rank, self.size = self.comm.Get_rank(), self.comm.Get_size()

    def allreduce_sum(self, data):
        from mpi4py import MPI

        if data.dtype.kind != "f":
            self.comm.Allreduce(MPI.IN_PLACE, data, op=MPI.SUM)  # integers: exact in any order
        elif self.rank == 0:
            self.comm.Reduce(MPI.IN_PLACE, data, op=MPI.SUM, root=0)
        else:
            self.comm.Reduce(data, None, op=MPI.SUM, root=0)
        if data.dtype.kind == "f":
            self.comm.Bcast(data, root=0)

    def allgatherv(self, send, recv, counts):
        self.comm.Allgatherv(send, [recv, counts])

    def broadcast(self, data, root):
        self.comm.Bcast(data, root=root)

    def barrier(self):
        self.comm.Barrier()


_COLLECTIVES = ("allreduce_sum", "allgatherv", "broadcast", "barrier")


def _collectives(function, comm):
    """`comm` as an object with rank, size and the four collectives on NumPy arrays: an mpi4py
    communicator wrapped, or the caller's own object as it is."""
    if all(hasattr(comm, name) for name in ("Get_rank", "Get_size", "Allgatherv", "Dup")):
        return _Mpi4pyCollectives(comm)
    missing = [name for name in _COLLECTIVES if not callable(getattr(comm, name, None))]
    if missing:
        raise ValueError(f"gpuml.distributed.{function}: comm must be an mpi4py communicator or have rank, size and the "
                         f"methods {', '.join(_COLLECTIVES)}; it lacks {', '.join(missing)}")
    rank, size = getattr(comm, "rank", None), getattr(comm, "size", None)
    if not isinstance(size, int) or isinstance(size, bool) or size < 1:
        raise ValueError(f"gpuml.distributed.{function}: comm.size must be an integer >= 1, got {size!r}")
    if not isinstance(rank, int) or isinstance(rank, bool) or not 0 <= rank < size:
        raise ValueError(f"gpuml.distributed.{function}: comm.rank must be an integer in [0, {size}), got {rank!r}")
    return comm


def _comm_callbacks(collectives):
    """A gpuml_comm_t calling `collectives`; an exception in one is a RuntimeWarning naming it,
    and the gpuml call fails with OSError."""

    def guarded(op, body):
        try:
            body()
            return 0
        except BaseException as e:  # noqa: BLE001 - reported here; gpuml raises OSError after the C call returns
            warnings.warn(f"gpuml: the communicator's {op} raised {e!r}", RuntimeWarning, stacklevel=2)
            return 1

    def allreduce_sum(_, data, count, dtype):
        return guarded("allreduce_sum", lambda: collectives.allreduce_sum(_buffer(data, count, dtype)))

    def allgatherv(_, send, count, recv, counts, dtype):
        sizes = np.array(counts[: collectives.size], dtype=np.int64)
        return guarded("allgatherv", lambda: collectives.allgatherv(
            _buffer(send, count, dtype), _buffer(recv, int(sizes.sum()), dtype), sizes))

    def broadcast(_, data, count, dtype, root):
        return guarded("broadcast", lambda: collectives.broadcast(_buffer(data, count, dtype), root))

    def barrier(_):
        return guarded("barrier", collectives.barrier)

    return _lib.gpuml_comm_t(None, collectives.rank, collectives.size, _lib.COMM_ALLREDUCE(allreduce_sum),
                             _lib.COMM_ALLGATHERV(allgatherv), _lib.COMM_BROADCAST(broadcast), _lib.COMM_BARRIER(barrier))


def _attach_comm(context, collectives, gpu_transport):
    """gpuml_context_attach_comm of `collectives` to `context`, which keeps the callbacks alive."""
    callbacks = _comm_callbacks(collectives)
    params = json.dumps({"gpu_transport": gpu_transport}).encode()
    _lib.check(_lib.lib.gpuml_context_attach_comm(context.handle, ctypes.byref(callbacks), params))
    context.communicator = (collectives, callbacks)


def _comm_context(function, comm, device, gpu_transport):
    """A new context of `device` with the caller's communicator attached (collective)."""
    _check_group_device(function, device, gpu_transport)
    collectives = _collectives(function, comm)
    context = _context.Context(device)
    _attach_comm(context, collectives, gpu_transport)
    return context


def init_comm(comm, *, device="cpu", gpu_transport="auto"):
    """Attaches a communicator the program already has to the package's CPU context, or to a CUDA
    context of `device` (collective: every rank calls it).

    `comm`: an mpi4py communicator (its MPI carries gpuml's collectives, so a gpuml built without
    MPI, such as a wheel's, trains under mpirun too), or any object with ``rank`` and ``size``
    and the methods ``allreduce_sum(a)`` (in place; every rank must end with the same bits),
    ``allgatherv(send, recv, counts)``, ``broadcast(a, root)`` and ``barrier()`` on NumPy arrays.
    `device` and `gpu_transport` as in init_gloo (a CUDA context: NCCL bootstrapped over `comm`
    when every rank has a GPU of its own, else `comm` itself through host memory). A collective
    that raises makes the fit raise OSError (after a RuntimeWarning naming the exception).
    RuntimeError when init(), init_gloo() or init_comm() already ran.
    """
    with _lock:
        if _context.distributed_context() is not None:
            raise RuntimeError("gpuml.distributed.init(), init_gloo() or init_comm() was already called in this process")
        _context.set_distributed_context(_comm_context("init_comm", comm, device, gpu_transport))


@contextlib.contextmanager
def comm_group(comm, *, device="cpu", gpu_transport="auto"):
    """init_comm's arguments, for one job in the calling thread only (as gloo_group)."""
    context = _comm_context("comm_group", comm, device, gpu_transport)
    previous = _context.set_thread_group(context)
    try:
        yield
    finally:
        _context.set_thread_group(previous)


@contextlib.contextmanager
def gloo_group(n_ranks, rank, rendezvous_dir=None, *, store=None, prefix="gpuml", hostname=None, interface=None,
               timeout=1800.0, device="cpu", gpu_transport="auto"):
    """A Gloo group for one job, in the calling thread only (collective: every rank enters it).

    The arguments are init_gloo's. Inside the ``with`` block, estimators with ``device="cpu"`` or
    ``"auto"`` (a group on a GPU: ``"auto"``, ``"cuda"`` or its ``"cuda:N"``) fit over the group's
    ranks in this thread; other threads, and this one afterwards, are unaffected. For engines
    whose workers run many jobs (Dask, Spark barrier tasks), where init_gloo's process-wide
    attachment would outlive the job::

        with gpuml.distributed.gloo_group(n_ranks, rank, shared_dir, prefix=job_id):
            model = KMeans(n_clusters=8).fit(X_local)
    """
    context = _gloo_context("gloo_group", n_ranks, rank, rendezvous_dir, store, prefix, hostname, interface, timeout,
                            device, gpu_transport)
    previous = _context.set_thread_group(context)
    try:
        yield
    finally:
        _context.set_thread_group(previous)


def init_gloo(n_ranks, rank, rendezvous_dir=None, *, store=None, prefix="gpuml", hostname=None, interface=None,
              timeout=1800.0, device="cpu", gpu_transport="auto"):
    """Attaches Gloo (TCP) to the package's CPU context, or to a CUDA context of `device`
    (collective: every rank calls it with the same kind of device).

    For ranks started by an engine other than mpirun (Dask, Spark, a plain launcher): rank `rank`
    of `n_ranks` meets the others in `rendezvous_dir`, a directory every rank can read and write
    (on a file system all hosts share when the ranks span hosts), under `prefix` (one directory
    serves many jobs; give each job a fresh prefix, e.g. a UUID, since a used one holds stale
    addresses). Instead of a directory, `store`: any object with ``set(key, value)`` and
    ``get(key, timeout)`` (bytes values; get waits up to `timeout` seconds for the key and returns
    None or raises TimeoutError when it does not come), such as an engine's key-value service.
    `hostname` or `interface` is the address this rank listens on (default: the host name's). A
    rank that waits longer than `timeout` seconds (the rendezvous, a collective) raises OSError
    instead of hanging. Afterwards every estimator with ``device="cpu"`` or
    ``"auto"`` fits over the ranks, as after init().

    ``device="cuda"`` (or ``"cuda:N"``, this rank's GPU) attaches a CUDA context instead, on
    which estimators with ``device="cuda"`` fit over the ranks. `gpu_transport` says how its
    collectives travel: ``"nccl"`` (NCCL bootstrapped over Gloo; every rank needs a GPU of its
    own), ``"host"`` (Gloo itself, device memory staged through host memory; ranks may share a
    GPU) or ``"auto"`` (NCCL when every rank has a GPU of its own and gpuml has NCCL, else host;
    the ranks choose together). NotImplementedError when gpuml was built without Gloo;
    RuntimeError when init() or init_gloo() already ran.
    """
    with _lock:
        if _context.distributed_context() is not None:
            raise RuntimeError("gpuml.distributed.init() or init_gloo() was already called in this process")
        context = _gloo_context("init_gloo", n_ranks, rank, rendezvous_dir, store, prefix, hostname, interface, timeout,
                                device, gpu_transport)
        _context.set_distributed_context(context)


def nccl_unique_id():
    """A new NCCL unique id (128 bytes) for init(unique_id, n_ranks, rank); NotImplementedError until NCCL is built."""
    out = (ctypes.c_uint8 * 128)()
    _lib.check(_lib.lib.gpuml_nccl_unique_id(out))
    return bytes(out)


def is_initialized():
    """Whether init() attached a communicator in this process."""
    return _context.distributed_context() is not None


def _rank_and_size():
    context = _context.thread_group() or _context.distributed_context()
    if context is None:
        return 0, 1
    rank, n_ranks = ctypes.c_int32(), ctypes.c_int32()
    _lib.check(_lib.lib.gpuml_context_rank(context.handle, ctypes.byref(rank), ctypes.byref(n_ranks)))
    return rank.value, n_ranks.value


def rank():
    """This process's rank (0 before init()); inside a gloo_group, its rank in the group."""
    return _rank_and_size()[0]


def size():
    """The number of ranks (1 before init()); inside a gloo_group, the group's."""
    return _rank_and_size()[1]


__all__ = ["comm_group", "gloo_group", "init", "init_comm", "init_gloo", "is_initialized", "local_rank", "local_size",
           "nccl_unique_id", "rank", "size"]

"""gpuml on Dask: fit an estimator on Dask collections over the workers that hold them.

    from dask.distributed import Client
    import gpuml.dask
    client = Client(...)
    model = gpuml.dask.fit(KMeans(n_clusters=8, device="cpu"), X)   # X: a Dask array or DataFrame
    labels = gpuml.dask.predict(model, X)                             # a Dask array

``fit`` splits X's row blocks into contiguous ranges, one per worker (each range going to the
worker that already holds most of it), and runs one task per worker. The tasks form a Gloo
group (gpuml.distributed.gloo_group) and fit the estimator as SPMD ranks, each on its range's
rows, so every rank ends with the model of all rows, in X's row order: the forests equal the
1-process forest bit for bit, the other estimators agree with the 1-process fit up to the
grouping of sums. It returns rank 0's fitted estimator, an ordinary gpuml estimator.

The ranks meet through the Dask scheduler (each rank's addresses a distributed.Variable,
deleted after the fit), so no shared file system is needed; ``rendezvous_dir`` (a directory every
worker can reach) is the alternative. The fits need gpuml built with Gloo. They run on the
workers' CPU backend for ``device="cpu"`` or ``"auto"``, and on their GPUs for ``device="cuda"``:
the ranks of one host take its GPUs in turn (a worker that sees one GPU, as under dask-cuda, takes
that one), and their collectives go over NCCL when every rank has a GPU of its own, else through
host memory over Gloo (several workers may share a GPU). ``"cuda:N"`` puts every rank on GPU N.
"""

import os
import uuid

import numpy as np

from . import distributed as _distributed

__all__ = ["fit", "predict"]


def _as_dask_array(collection, name):
    """A Dask array of `collection` (array, DataFrame or Series) with known row chunks, whole rows per block."""
    import dask.array as da

    if not isinstance(collection, da.Array):
        to_array = getattr(collection, "to_dask_array", None)
        if to_array is None:
            raise TypeError(f"gpuml.dask.fit: {name} must be a Dask array, DataFrame or Series, got {type(collection).__name__}")
        collection = to_array(lengths=True)
    if collection.ndim == 2 and collection.numblocks[1] > 1:
        collection = collection.rechunk({1: -1})
    if any(np.isnan(c) for c in collection.chunks[0]):
        raise ValueError(f"gpuml.dask.fit: {name}'s row chunks are unknown; compute them first (compute_chunk_sizes())")
    return collection


def _row_blocks(collection, row_chunks):
    """The Delayed row blocks of `collection`, rechunked to row_chunks (None: absent)."""
    if collection is None:
        return None
    collection = collection.rechunk({0: row_chunks})
    return list(collection.to_delayed().ravel())


def _ranges(rows_per_block, n_ranks):
    """Contiguous ranges of block indices, at most n_ranks of them, balanced by rows, none without rows."""
    cumulative = np.cumsum(rows_per_block)
    ranges, begin = [], 0
    for r in range(n_ranks):
        # The first block at which the running rows reach (r + 1) / n_ranks of them (the last range: every block).
        end = len(rows_per_block) if r == n_ranks - 1 else int(
            np.searchsorted(cumulative, cumulative[-1] * (r + 1) / n_ranks, side="left")) + 1
        if end > begin and cumulative[end - 1] > (cumulative[begin - 1] if begin else 0):
            ranges.append((begin, end))
            begin = end
    if ranges and ranges[-1][1] < len(rows_per_block):  # trailing blocks without rows
        ranges[-1] = (ranges[-1][0], len(rows_per_block))
    return ranges


def _assign(ranges, holders, rows_per_block, workers):
    """Each range to a distinct worker, greatest overlap (rows already held) first."""
    overlap = []
    for i, (start, end) in enumerate(ranges):
        for w in workers:
            held = sum(rows_per_block[b] for b in range(start, end) if w in holders[b])
            overlap.append((-held, i, w))
    overlap.sort()
    chosen, used = {}, set()
    for _, i, w in overlap:
        if i not in chosen and w not in used:
            chosen[i] = w
            used.add(w)
    return [chosen[i] for i in range(len(ranges))]


class _SchedulerStore:
    """The Gloo rendezvous through the Dask scheduler: each key a distributed.Variable (deleted
    by the rank that set it, once the job's first collective has passed every rank)."""

    def __init__(self):
        self.names = []

    def set(self, key, value):
        from distributed import Variable

        Variable(key).set(value)
        self.names.append(key)

    def get(self, key, timeout):
        from distributed import Variable

        try:
            return Variable(key).get(timeout=timeout)
        except TimeoutError:
            return None

    def delete(self):
        from distributed import Variable

        for name in self.names:
            Variable(name).delete()


def _host_of(address):
    """The host part of a Dask address ("tcp://10.0.0.5:8786" -> "10.0.0.5")."""
    return address.split("://")[-1].rsplit(":", 1)[0].strip("[]")


def _fit_rank(estimator, n_ranks, rank, rendezvous_dir, prefix, timeout, xs, ys, ws, params, device, gpu_slot):
    """One rank's task on its worker: its rows, the Gloo group (on `device`; "cuda" takes the
    host's GPU number gpu_slot, modulo the GPUs the worker sees), the fit; rank 0 returns the model."""
    from distributed import get_worker
    from sklearn.base import clone

    host = _host_of(get_worker().address)  # the address Dask reaches it on
    if device == "cuda":
        device = _distributed._gpu_for_slot(gpu_slot)
    X = np.concatenate(xs)
    y = np.concatenate(ys) if ys is not None else None
    kwargs = dict(params)
    if ws is not None:
        kwargs["sample_weight"] = np.concatenate(ws)
    model = clone(estimator)
    store = _SchedulerStore() if rendezvous_dir is None else None
    try:
        with _distributed.gloo_group(n_ranks, rank, rendezvous_dir, store=store, prefix=prefix, hostname=host,
                                     timeout=timeout, device=device):
            model.fit(X, y, **kwargs) if y is not None else model.fit(X, **kwargs)
    finally:
        if store is not None:
            store.delete()
    return model if rank == 0 else None


def fit(estimator, X, y=None, *, sample_weight=None, client=None, rendezvous_dir=None, timeout=1800.0, **fit_params):
    """Fits `estimator` (a gpuml estimator, left unchanged) on Dask collections X (and y,
    sample_weight, row-aligned) over the Dask workers; returns the fitted copy (rank 0's).

    client: the Dask client (default: the current one). rendezvous_dir: a directory every worker
    can read and write, for the ranks to meet in (default: they meet through the scheduler).
    timeout: seconds any rank waits for the others before raising OSError. fit_params go to
    each rank's fit (e.g. nothing, or a forest's own).
    """
    from distributed import default_client, wait

    device = _distributed._group_device(estimator.get_params().get("device", "auto"))
    client = client or default_client()
    X = _as_dask_array(X, "X")
    row_chunks = X.chunks[0]
    aligned = {}
    for name, collection in (("y", y), ("sample_weight", sample_weight)):
        if collection is not None:
            collection = _as_dask_array(collection, name)
            if collection.shape[0] != X.shape[0]:
                raise ValueError(f"gpuml.dask.fit: {name} has {collection.shape[0]} rows and X {X.shape[0]}")
        aligned[name] = _row_blocks(collection, row_chunks)
    ys, ws = aligned["y"], aligned["sample_weight"]
    x_blocks = list(X.to_delayed().ravel())
    x_futures = client.compute(x_blocks)
    y_futures = client.compute(ys) if ys is not None else None
    w_futures = client.compute(ws) if ws is not None else None
    wait(x_futures)
    who_has = client.who_has(x_futures)
    holders = [set(who_has.get(f.key, ())) for f in x_futures]
    workers = sorted(client.scheduler_info()["workers"])
    rows_per_block = [int(c) for c in row_chunks]
    ranges = _ranges(rows_per_block, min(len(workers), sum(1 for c in rows_per_block if c > 0)))
    assigned = _assign(ranges, holders, rows_per_block, workers)

    directory = None if rendezvous_dir is None else os.fspath(rendezvous_dir)
    prefix = f"gpuml-dask-{uuid.uuid4().hex}"
    hosts = [_host_of(worker) for worker in assigned]
    tasks = []
    for rank, ((start, end), worker) in enumerate(zip(ranges, assigned)):
        blocks = slice(start, end)
        gpu_slot = hosts[:rank].count(hosts[rank])  # this rank's number among the ranks of its host
        tasks.append(client.submit(
            _fit_rank, estimator, len(ranges), rank, directory, prefix, float(timeout), x_futures[blocks],
            y_futures[blocks] if y_futures is not None else None,
            w_futures[blocks] if w_futures is not None else None, fit_params, device, gpu_slot,
            workers=[worker], allow_other_workers=False, pure=False, key=f"gpuml-fit-{prefix}-rank-{rank}"))
    wait(tasks)
    failed = [(rank, assigned[rank], task.exception()) for rank, task in enumerate(tasks) if task.status == "error"]
    if failed:
        _distributed._raise_the_cause("gpuml.dask.fit", failed)
    return tasks[0].result()  # every rank holds the same model


def predict(estimator, X, method="predict"):
    """estimator.<method> (predict, predict_proba, transform, ...) on every row block of X, as a Dask array."""
    import dask.array as da

    X = _as_dask_array(X, "X")
    method_of = getattr(estimator, method)
    sample = np.asarray(method_of(np.zeros((1, X.shape[1]), dtype=X.dtype)))

    def on_block(block):  # a block without rows (scikit-learn refuses those) gives no rows
        return method_of(block) if len(block) else np.empty((0,) + sample.shape[1:], sample.dtype)

    if sample.ndim == 1:
        return X.map_blocks(on_block, drop_axis=1, dtype=sample.dtype, meta=np.empty((0,), sample.dtype))
    return X.map_blocks(on_block, chunks=(X.chunks[0], sample.shape[1:]), dtype=sample.dtype,
                        meta=np.empty((0, 0), sample.dtype))

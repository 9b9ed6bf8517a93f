"""gpuml on Spark: fit an estimator on a Spark DataFrame's partitions as SPMD ranks.

    import gpuml.spark
    model = gpuml.spark.fit(KMeans(n_clusters=8, device="cpu"), df, features=["x0", "x1", "x2"])
    scored = gpuml.spark.predict(model, df, features=["x0", "x1", "x2"])   # df + a "prediction" column

``fit`` runs one barrier task per partition (Spark's barrier execution mode starts them all at
once; more partitions than task slots are first coalesced, which keeps the row order). The
partitions that hold rows form a Gloo group (gpuml.distributed.gloo_group), in partition order,
and fit the estimator on their own rows, so every rank ends with the model of all rows in the
DataFrame's order (the forests equal the 1-process forest bit for bit; the other estimators agree
with it up to the grouping of sums). Rank 0's model comes back to the driver.

features: a list of numeric columns, or one column of arrays or ML vectors. label and weight:
column names (or None). The ranks meet through a small key-value server the driver starts for
the job (Python's multiprocessing manager, with a random authkey), which every executor reaches
as it reaches the driver; ``rendezvous_dir`` (a directory every executor can reach) is the
alternative. The fits need gpuml built with Gloo. They run on the executors' CPU backend for
``device="cpu"`` or ``"auto"``, and on GPUs for ``device="cuda"``: each task takes the GPU Spark
assigned it (spark.task.resource.gpu.amount) or else its host's GPUs in turn; the collectives go
over NCCL when every rank has a GPU of its own, else through host memory over Gloo.
"""

import os
import pickle
import uuid
from multiprocessing.managers import BaseManager

import numpy as np

from . import distributed as _distributed

__all__ = ["fit", "predict"]


def _columns(features, label, weight):
    names = [features] if isinstance(features, str) else list(features)
    if not names or not all(isinstance(n, str) for n in names):
        raise ValueError("gpuml.spark: features must be a column name or a non-empty list of column names")
    return names + [c for c in (label, weight) if c is not None]


def _feature_row(row, features):
    """One row's feature values: the numeric columns, or the array or vector column."""
    if isinstance(features, str):
        value = row[features]
        return np.asarray(value.toArray() if hasattr(value, "toArray") else value, dtype=np.float64)
    return np.array([row[name] for name in features], dtype=np.float64)


class _Board:
    """The rendezvous keys of one job, held by the driver's store server (one thread per
    connection there, so a get may wait for another task's set)."""

    def __init__(self):
        import threading

        self._values, self._changed = {}, threading.Condition()

    def set(self, key, value):
        with self._changed:
            self._values[key] = value
            self._changed.notify_all()

    def get(self, key, timeout):
        with self._changed:
            return self._values[key] if self._changed.wait_for(lambda: key in self._values, timeout) else None


_BOARD = None


def _board():
    global _BOARD
    if _BOARD is None:
        _BOARD = _Board()
    return _BOARD


class _StoreManager(BaseManager):
    pass


_StoreManager.register("board", callable=_board)


def _driver_store(host):
    """A store server on the driver (multiprocessing's manager: its own process, an authkey):
    the tasks of a barrier stage meet through it wherever they run. Returns (manager, address, key)."""
    key = os.urandom(32)
    manager = _StoreManager(address=(host, 0), authkey=key)
    manager.start()
    return manager, manager.address, key


def _connect_store(address, key):
    client = _StoreManager(address=tuple(address), authkey=key)
    client.connect()
    return client.board()


def _task_gpu(context, holders, device):
    """The group's device for a barrier task: `device` unless it is "cuda", which takes the GPU
    Spark assigned the task (its "gpu" resource) or else the host's GPUs in turn, by the task's
    number among the ranks of its host."""
    if device != "cuda":
        return device
    gpus = context.resources().get("gpu")
    if gpus is not None and gpus.addresses:
        return f"cuda:{gpus.addresses[0]}"
    infos = context.getTaskInfos()
    hosts = [infos[p].address.rsplit(":", 1)[0] for p in holders]
    rank = holders.index(context.partitionId())
    return _distributed._gpu_for_slot(hosts[:rank].count(hosts[rank]))


def _pickled_error(rank, host, error):
    """A task's error for the driver: ("error", rank, host, the exception, or a RuntimeError of
    its text when it does not pickle)."""
    try:
        return pickle.dumps(("error", rank, host, error))
    except Exception:  # noqa: BLE001
        return pickle.dumps(("error", rank, host, RuntimeError(f"{type(error).__name__}: {error}")))


def _fit_partition(estimator, features, label, weight, rendezvous_dir, prefix, timeout, fit_params, store_at=None,
                   device="cpu"):
    """The barrier task of every partition: its rows, the ranks (the partitions with rows), the fit."""

    def task(rows):
        from pyspark import BarrierTaskContext
        from sklearn.base import clone

        context = BarrierTaskContext.get()
        rows = list(rows)
        X = np.array([_feature_row(r, features) for r in rows], dtype=np.float64)
        counts = [int(c) for c in context.allGather(str(len(rows)))]  # in partition order
        if not rows:
            return iter([])  # a partition without rows is not a rank
        holders = [p for p, c in enumerate(counts) if c > 0]
        rank, n_ranks = holders.index(context.partitionId()), len(holders)
        host = context.getTaskInfos()[context.partitionId()].address.rsplit(":", 1)[0].strip("[]")
        try:
            kwargs = dict(fit_params)
            if weight is not None:
                kwargs["sample_weight"] = np.array([r[weight] for r in rows], dtype=np.float64)
            model = clone(estimator)
            store = _connect_store(*store_at) if store_at is not None else None
            group_device = _task_gpu(context, holders, device)
            with _distributed.gloo_group(n_ranks, rank, rendezvous_dir, store=store, prefix=prefix, hostname=host,
                                         timeout=timeout, device=group_device):
                if label is not None:
                    model.fit(X, np.array([r[label] for r in rows]), **kwargs)
                else:
                    model.fit(X, **kwargs)
        except Exception as e:  # noqa: BLE001 - returned: the driver raises the cause among all ranks' errors
            return iter([_pickled_error(rank, host, e)])
        return iter([pickle.dumps(("model", model))] if rank == 0 else [])

    return task


def fit(estimator, df, features, label=None, weight=None, *, rendezvous_dir=None, timeout=1800.0, **fit_params):
    """Fits a clone of `estimator` (a gpuml estimator, left unchanged) on DataFrame `df` over
    Spark's executors; returns the fitted clone. See the module's docstring for the arguments."""
    device = _distributed._group_device(estimator.get_params().get("device", "auto"))
    columns = _columns(features, label, weight)
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise ValueError(f"gpuml.spark.fit: df has no column(s) {missing}; it has {df.columns}")
    selected = df.select(*columns)
    slots = selected.sparkSession.sparkContext.defaultParallelism
    if selected.rdd.getNumPartitions() > slots:  # a barrier stage needs a slot per task
        selected = selected.coalesce(slots)
    # A barrier stage refuses lineages whose partition counts change (coalesce, limit, ...): the
    # rows are materialized first (a local checkpoint, which keeps the partitions and their order).
    rows = selected.rdd
    rows.localCheckpoint()  # marks rows, in place
    rows.count()
    directory = None if rendezvous_dir is None else os.fspath(rendezvous_dir)
    prefix = f"gpuml-spark-{uuid.uuid4().hex}"
    manager = store_at = None
    if directory is None:
        manager, address, key = _driver_store(selected.sparkSession.sparkContext.getConf().get("spark.driver.host"))
        store_at = (address, key)
    try:
        task = _fit_partition(estimator, features, label, weight, directory, prefix, float(timeout), fit_params, store_at,
                              device)
        outcomes = [pickle.loads(o) for o in rows.barrier().mapPartitions(task).collect()]
    finally:
        if manager is not None:
            manager.shutdown()
    failed = [o[1:] for o in outcomes if o[0] == "error"]
    if failed:
        _distributed._raise_the_cause("gpuml.spark.fit", failed)
    if not outcomes:
        raise ValueError("gpuml.spark.fit: df has no rows")
    return outcomes[0][1]


def predict(estimator, df, features, output_col="prediction", method="predict"):
    """df with a column `output_col` of estimator.<method> on each row's features (one value per
    row: predict, or a method whose rows are arrays, such as predict_proba, as an array column)."""
    import pandas as pd
    from pyspark.ml.functions import vector_to_array
    from pyspark.ml.linalg import VectorUDT
    from pyspark.sql.functions import col, pandas_udf
    from pyspark.sql.types import ArrayType, DoubleType

    if output_col in df.columns:
        raise ValueError(f"gpuml.spark.predict: df already has a column {output_col!r}")
    method_of = getattr(estimator, method)
    if isinstance(features, str):
        column = col(features)
        inputs = [vector_to_array(column) if isinstance(df.schema[features].dataType, VectorUDT) else column]
        width = len(_feature_row(df.select(features).first(), features))
    else:
        inputs = [col(name) for name in _columns(features, None, None)]
        width = len(inputs)
    sample = np.asarray(method_of(np.zeros((1, width))))
    as_array = sample.ndim > 1

    def score(*series):
        if len(series) == 1 and series[0].dtype == object:  # one array column
            X = np.array([np.asarray(v, dtype=np.float64) for v in series[0]], dtype=np.float64)
        else:
            X = np.column_stack([s.to_numpy(dtype=np.float64) for s in series])
        X = X.reshape(len(series[0]), width)
        out = np.asarray(method_of(X), dtype=np.float64) if len(X) else np.empty((0,) + sample.shape[1:])
        return pd.Series(list(out) if as_array else out)

    udf = pandas_udf(score, returnType=ArrayType(DoubleType()) if as_array else DoubleType())
    return df.withColumn(output_col, udf(*inputs))

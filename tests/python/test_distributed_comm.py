"""gpuml.distributed.init_comm / comm_group: a communicator the program already has (mpi4py, or
any object with the four collectives) carries gpuml's collectives. Here the ranks are threads
over a small in-process communicator; under mpirun, ctest's python.mpi4py_comm runs
tests/mpi/mpi4py_comm.py over mpi4py. Fits are compared with one process's fits of all rows."""

import threading
import warnings

import numpy as np
import pytest
from sklearn.linear_model import LinearRegression as SkLinearRegression

import gpuml.distributed as distributed
from gpuml.cluster import KMeans
from gpuml.ensemble import RandomForestClassifier
from gpuml.linear_model import LinearRegression, LogisticRegression

from conftest import DEVICES, on_threads


class ThreadCollectives:
    """The four collectives between threads of this process (a test double of an MPI binding):
    each rank leaves its array in a shared slot, all meet at a barrier, each reads what it needs.
    Sums go in rank order, so every rank computes the same bits."""

    class Shared:
        def __init__(self, size):
            self.slots, self.barrier = [None] * size, threading.Barrier(size)

    def __init__(self, shared, rank, fail_in=None):
        self.shared, self.rank, self.size, self.fail_in = shared, rank, len(shared.slots), fail_in

    def _exchange(self, value):
        self.shared.slots[self.rank] = value
        self.shared.barrier.wait()
        values = list(self.shared.slots)
        self.shared.barrier.wait()  # everyone has read before the next exchange writes
        return values

    def allreduce_sum(self, data):
        if self.fail_in == "allreduce_sum":
            raise ConnectionError("this rank's link is down")
        values = self._exchange(data.copy())
        total = values[0].copy()
        for v in values[1:]:
            total += v
        data[:] = total

    def allgatherv(self, send, recv, counts):
        recv[:] = np.concatenate(self._exchange(send.copy()))

    def broadcast(self, data, root):
        data[:] = self._exchange(data.copy())[root]

    def barrier(self):
        self._exchange(None)


@pytest.mark.parametrize("device", DEVICES)
def test_fits_over_a_callers_communicator_equal_the_one_process_fit(rng, device):
    """On "cuda" the ranks' contexts share one GPU: the communicator carries their sums through
    host memory (gpu_transport "auto" chooses that: NCCL refuses two ranks on one GPU)."""
    n_ranks = int(rng.integers(2, 4))
    n = int(rng.integers(300, 800))
    centers = rng.uniform(-6, 6, size=(3, 4))
    X = centers[rng.integers(0, 3, size=n)] + rng.normal(size=(n, 4))
    y = X @ rng.uniform(-2, 2, size=4) + 0.1 * rng.normal(size=n)
    labels = (X[:, 0] + 0.5 * rng.normal(size=n) > np.median(X[:, 0])).astype(np.int64)
    rows = np.array_split(np.arange(n), n_ranks)
    shared = ThreadCollectives.Shared(n_ranks)
    forest_params = dict(n_estimators=4, max_depth=6, random_state=int(rng.integers(1000)), device=device)

    def rank(r):
        with distributed.comm_group(ThreadCollectives(shared, r), device=device):
            assert distributed.rank() == r and distributed.size() == n_ranks
            ols = LinearRegression(device=device).fit(X[rows[r]], y[rows[r]])
            km = KMeans(n_clusters=3, random_state=4, device=device).fit(X[rows[r]])
            forest = RandomForestClassifier(**forest_params).fit(X[rows[r]], labels[rows[r]])
        assert distributed.size() == 1  # the group ended with the block
        return ols.coef_, km.cluster_centers_, forest.predict_proba(X)

    results = on_threads(n_ranks, rank)
    for r in range(n_ranks):
        for mine, first in zip(results[r], results[0]):
            assert np.array_equal(mine, first)  # every rank the same bits
    ols, centers_fit, proba = results[0]
    np.testing.assert_allclose(ols, SkLinearRegression().fit(X, y).coef_, rtol=1e-9)  # sums regrouped
    local = KMeans(n_clusters=3, random_state=4, device=device).fit(X)
    np.testing.assert_allclose(centers_fit, local.cluster_centers_, rtol=1e-9, atol=1e-9)
    # The forest of all rows in rank order: the 1-process forest, bit for bit.
    assert np.array_equal(proba, RandomForestClassifier(**forest_params).fit(X, labels).predict_proba(X))


def test_a_failing_collective_is_an_oserror_on_every_rank(rng):
    X = rng.normal(size=(60, 3))
    y = X @ [1.0, 2.0, 3.0]
    shared = ThreadCollectives.Shared(2)

    def rank(r):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with distributed.comm_group(ThreadCollectives(shared, r, fail_in="allreduce_sum" if r == 1 else None)):
                # Rank 1's sums fail: its fit raises, and it breaks the exchange's barrier (as a
                # real transport's closed connection would), so rank 0's fit fails too.
                # Rank 1 names its sum; rank 0 the collective it was in when the barrier broke
                # (the last one's release may not have reached it yet).
                with pytest.raises(OSError, match="failed in allreduce_sum" if r == 1 else "the caller's communicator failed in"):
                    LinearRegression(device="cpu").fit(X[r::2], y[r::2])
                if r == 1:
                    shared.barrier.abort()
        if r == 1:
            assert any("this rank's link is down" in str(w.message) for w in caught), [str(w.message) for w in caught]

    on_threads(2, rank)


class Incomplete:
    rank, size = 0, 1

    def allreduce_sum(self, data):
        pass


@pytest.mark.parametrize(
    "comm, kwargs, needle",
    [
        (object(), {}, "allreduce_sum, allgatherv, broadcast, barrier"),
        (Incomplete(), {}, "lacks allgatherv, broadcast, barrier"),
        (ThreadCollectives(ThreadCollectives.Shared(1), 1), {}, "comm.rank"),
        (ThreadCollectives(ThreadCollectives.Shared(1), 0), {"device": "gpu"}, "device"),
        (ThreadCollectives(ThreadCollectives.Shared(1), 0), {"gpu_transport": "fast"}, "gpu_transport"),
    ],
)
def test_bad_communicators_are_named_errors(comm, kwargs, needle):
    with pytest.raises(ValueError, match=needle):
        with distributed.comm_group(comm, **kwargs):
            pass
    with pytest.raises(ValueError, match=needle):
        distributed.init_comm(comm, **kwargs)
    assert not distributed.is_initialized() and distributed.size() == 1


def test_nccl_on_a_cpu_context_is_a_named_error():
    with pytest.raises(ValueError, match="transport nccl needs CUDA"):
        with distributed.comm_group(ThreadCollectives(ThreadCollectives.Shared(1), 0), gpu_transport="nccl"):
            pass


def test_a_rank_may_hold_fewer_rows_than_clusters(rng):
    """KMeans checks n_samples >= n_clusters on all ranks' rows together, not on each rank's."""
    X = rng.normal(size=(int(rng.integers(40, 120)), 3)) + rng.integers(0, 4, size=(1, 1)) * 3.0
    shares = [X[:2], X[2:]]  # rank 0: 2 rows, fewer than the 5 clusters
    shared = ThreadCollectives.Shared(2)

    def rank(r):
        with distributed.comm_group(ThreadCollectives(shared, r)):
            centers = KMeans(n_clusters=5, random_state=3, device="cpu").fit(shares[r]).cluster_centers_
            with pytest.raises(ValueError, match=r"n_samples=4 \(over 2 ranks\) should be >= n_clusters=5"):
                KMeans(n_clusters=5, device="cpu").fit(shares[r][:2])  # 2 + 2 rows in all
        return centers

    centers = on_threads(2, rank)
    assert np.array_equal(centers[0], centers[1])
    np.testing.assert_allclose(centers[0], KMeans(n_clusters=5, random_state=3, device="cpu").fit(X).cluster_centers_,
                               rtol=1e-9, atol=1e-9)  # sums regrouped


def test_the_classes_are_those_of_all_ranks(rng):
    """A rank may lack classes (a partition without the rare defect): the classifiers number the
    classes of all ranks' labels, and fit the 1-process model. Labels failing their checks on one
    rank are an error on every rank."""
    n = int(rng.integers(200, 500))
    X = rng.normal(size=(n, 4))
    names = np.array(["ok", "scratch", "dent"])
    y = names[(X[:, 0] > 0).astype(int)]
    order = np.argsort(X[:, 1])
    X, y = X[order], y[order]
    y[-5:] = "dent"  # the rare class, all on the last rank
    shares = [slice(0, n // 3), slice(n // 3, 2 * n // 3), slice(2 * n // 3, n)]
    y[shares[0]] = "ok"  # rank 0 holds one class only
    shared = ThreadCollectives.Shared(3)
    forest_params = dict(n_estimators=4, max_depth=6, random_state=int(rng.integers(1000)), device="cpu")

    def rank(r):
        with distributed.comm_group(ThreadCollectives(shared, r)):
            forest = RandomForestClassifier(**forest_params).fit(X[shares[r]], y[shares[r]])
            logistic = LogisticRegression(tol=1e-10, max_iter=1000, device="cpu").fit(X[shares[r]], y[shares[r]])
            bad = y[shares[r]].copy() if r != 1 else X[shares[r], 0]  # rank 1: continuous labels
            with pytest.raises(ValueError, match="continuous" if r == 1 else r"failed their checks on rank\(s\) \[1\]"):
                LogisticRegression(device="cpu").fit(X[shares[r]], bad)
        return forest.classes_, forest.predict_proba(X), logistic.coef_

    results = on_threads(3, rank)
    for r in range(3):
        assert list(results[r][0]) == ["dent", "ok", "scratch"]
        assert np.array_equal(results[r][1], results[0][1]) and np.array_equal(results[r][2], results[0][2])
    assert np.array_equal(results[0][1], RandomForestClassifier(**forest_params).fit(X, y).predict_proba(X))
    local = LogisticRegression(tol=1e-10, max_iter=1000, device="cpu").fit(X, y)
    np.testing.assert_allclose(results[0][2], local.coef_, rtol=1e-5, atol=1e-7)  # L-BFGS stops within its tol

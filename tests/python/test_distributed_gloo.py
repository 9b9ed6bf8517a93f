"""gpuml.distributed.init_gloo: ranks started without mpirun (here by subprocess, as Dask or
Spark would start them) meet in a directory and fit the model of all their rows. Each rank's
models are compared with one process's fits of all rows, and with scikit-learn's."""

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import numpy as np
import pytest
from sklearn.linear_model import LinearRegression as SkLinearRegression

import gpuml
import gpuml.distributed as distributed
from gpuml.cluster import KMeans
from gpuml.decomposition import PCA
from gpuml.ensemble import RandomForestClassifier
from gpuml.linear_model import LinearRegression, LogisticRegression

from conftest import on_threads

REPO_ROOT = Path(__file__).resolve().parents[2]
needs_gloo = pytest.mark.skipif(not gpuml.build_info().get("gloo"), reason="gpuml built without Gloo")

# One rank: the data from the seed, its share of the rows, the fits, the results as JSON lists.
RANK_SCRIPT = """
import json, sys
import numpy as np
import gpuml.distributed as d
from gpuml.cluster import KMeans
from gpuml.decomposition import PCA
from gpuml.ensemble import RandomForestClassifier
from gpuml.linear_model import LinearRegression, LogisticRegression

n_ranks, rank, directory, prefix, seed = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4], int(sys.argv[5])
sys.path.insert(0, sys.argv[6])
from test_distributed_gloo import make_data, shares
X, y, labels = make_data(seed)
rows = shares(len(X), n_ranks, seed)[rank]
d.init_gloo(n_ranks, rank, directory, prefix=prefix, hostname="127.0.0.1", timeout=60)
assert d.is_initialized() and d.rank() == rank and d.size() == n_ranks
out = {}
ols = LinearRegression(device="cpu").fit(X[rows], y[rows])
out["ols"] = [*ols.coef_.tolist(), float(ols.intercept_)]
km = KMeans(n_clusters=4, random_state=3, device="cpu").fit(X[rows])
out["kmeans"] = [*km.cluster_centers_.ravel().tolist(), float(km.inertia_), int(km.n_iter_)]
logistic = LogisticRegression(tol=1e-10, max_iter=1000, device="cpu").fit(X[rows], labels[rows])
out["logistic"] = [*logistic.coef_.ravel().tolist(), *logistic.intercept_.tolist()]
pca = PCA(n_components=2, device="cpu").fit(X[rows])
out["pca"] = np.abs(pca.components_).ravel().tolist() + pca.explained_variance_.tolist()
forest = RandomForestClassifier(n_estimators=5, max_depth=6, random_state=7, device="cpu").fit(X[rows], labels[rows])
out["forest"] = forest.predict_proba(X).ravel().tolist()
try:
    d.init_gloo(n_ranks, rank, directory, prefix=prefix + "-again")
except RuntimeError as e:
    out["second_init"] = str(e)
print("RESULT " + json.dumps(out))
"""


def make_data(seed):
    """The rows every rank draws from the shared seed: X, a linear target, three classes."""
    rng = np.random.default_rng(seed)
    n, d = int(rng.integers(300, 900)), int(rng.integers(2, 6))
    centers = rng.uniform(-8, 8, size=(4, d))
    X = centers[rng.integers(0, 4, size=n)] + rng.normal(size=(n, d))
    y = X @ rng.uniform(-2, 2, size=d) + 0.3 + 0.1 * rng.normal(size=n)
    labels = np.digitize(X[:, 0] + 0.5 * rng.normal(size=n), np.quantile(X[:, 0], [1 / 3, 2 / 3]))
    return X, y, labels


def shares(n, n_ranks, seed):
    """Uneven contiguous shares of the rows, each of n // (2 * n_ranks) rows or more, so that every
    rank holds every class (the Python classifiers need that) and more rows than KMeans' clusters."""
    least = n // (2 * n_ranks)
    extra = np.sort(np.random.default_rng(seed + 1).integers(0, n - n_ranks * least + 1, size=n_ranks - 1))
    bounds = [0, *(extra + least * np.arange(1, n_ranks)).tolist(), n]
    return [np.arange(bounds[r], bounds[r + 1]) for r in range(n_ranks)]


def run_ranks(n_ranks, directory, prefix, seed, script=RANK_SCRIPT):
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT / "bindings" / "python"))
    env.setdefault("GPUML_LIBRARY", gpuml.library_path)
    env["OMP_NUM_THREADS"] = "1"  # the ranks share this machine's cores
    ranks = [
        subprocess.Popen([sys.executable, "-c", script, str(n_ranks), str(r), str(directory), prefix, str(seed),
                          str(Path(__file__).parent)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for r in range(n_ranks)
    ]
    outputs = [p.communicate(timeout=180) for p in ranks]
    failed = [f"rank {r}: {stdout}{stderr}" for r, (p, (stdout, stderr)) in enumerate(zip(ranks, outputs)) if p.returncode]
    assert not failed, "\n".join(failed)  # every failing rank's output: the first to fail says why
    return [json.loads(next(line for line in stdout.splitlines() if line.startswith("RESULT "))[7:])
            for stdout, _ in outputs]


@needs_gloo
def test_ranks_started_without_mpi_fit_the_model_of_all_rows(tmp_path, rng):
    seed = int(rng.integers(2**31))
    n_ranks = 3
    results = run_ranks(n_ranks, tmp_path, f"job-{uuid.uuid4().hex}", seed)
    X, y, labels = make_data(seed)
    ols = LinearRegression(device="cpu").fit(X, y)
    km = KMeans(n_clusters=4, random_state=3, device="cpu").fit(X)
    logistic = LogisticRegression(tol=1e-10, max_iter=1000, device="cpu").fit(X, labels)
    pca = PCA(n_components=2, device="cpu").fit(X)
    forest = RandomForestClassifier(n_estimators=5, max_depth=6, random_state=7, device="cpu").fit(X, labels)
    expected = {
        "ols": [*ols.coef_.tolist(), float(ols.intercept_)],
        "kmeans": [*km.cluster_centers_.ravel().tolist(), float(km.inertia_), int(km.n_iter_)],
        "logistic": [*logistic.coef_.ravel().tolist(), *logistic.intercept_.tolist()],
        "pca": np.abs(pca.components_).ravel().tolist() + pca.explained_variance_.tolist(),
        "forest": forest.predict_proba(X).ravel().tolist(),
    }
    for r, result in enumerate(results):
        # Every rank holds the same model, bit for bit (sums reduced once, then broadcast).
        assert {k: v for k, v in result.items() if k != "second_init"} == \
            {k: v for k, v in results[0].items() if k != "second_init"}, f"rank {r} differs from rank 0"
        assert "already" in result["second_init"]
    got = results[0]
    # The forest of all rows, bit for bit; the others agree with the 1-process fit up to the
    # grouping of their sums (rtol 1e-8). L-BFGS, whose path that rounding changes, stops on the
    # objective's relative decrease within ~1e-6 of the optimum: 1e-5 of the largest coefficient.
    assert got["forest"] == expected["forest"]
    np.testing.assert_allclose(got["ols"], expected["ols"], rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(got["kmeans"], expected["kmeans"], rtol=1e-8, atol=1e-10)
    logistic, logistic_local = np.array(got["logistic"]), np.array(expected["logistic"])
    assert np.abs(logistic - logistic_local).max() <= 1e-5 * np.abs(logistic_local).max()
    np.testing.assert_allclose(got["pca"], expected["pca"], rtol=1e-8, atol=1e-10)
    # And the distributed least squares is scikit-learn's (rtol 1e-8, well-conditioned X).
    sk = SkLinearRegression().fit(X, y)
    np.testing.assert_allclose(got["ols"], [*sk.coef_, sk.intercept_], rtol=1e-8, atol=1e-10)


@needs_gloo
def test_a_rank_that_never_comes_is_an_oserror(tmp_path):
    script = """
import sys, time, gpuml.distributed as d
start = time.monotonic()
try:
    d.init_gloo(2, 0, sys.argv[1], prefix="alone", hostname="127.0.0.1", timeout=2)
except OSError as e:
    assert "rendezvous" in str(e), e
    assert not d.is_initialized()
    print("ok", time.monotonic() - start)
"""
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT / "bindings" / "python"))
    env.setdefault("GPUML_LIBRARY", gpuml.library_path)
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path)], env=env, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0 and done.stdout.startswith("ok"), done.stdout + done.stderr
    assert float(done.stdout.split()[1]) < 30  # the timeout, not a hang


@pytest.mark.parametrize(
    "args, kwargs, needle",
    [
        ((0, 0), {}, "n_ranks"),
        ((2, 2), {}, "rank"),
        ((2, -1), {}, "rank"),
        ((True, 0), {}, "n_ranks"),
        ((2, 0), {"rendezvous_dir": "/nonexistent/gpuml"}, "not a directory"),
        ((2, 0), {"device": "gpu"}, "device"),
        ((2, 0), {"device": "auto"}, "device"),
        ((2, 0), {"gpu_transport": "fast"}, "gpu_transport"),
    ],
)
def test_init_gloo_checks_its_arguments(tmp_path, args, kwargs, needle):
    with pytest.raises(ValueError, match=needle):
        distributed.init_gloo(*args, **{"rendezvous_dir": tmp_path, **kwargs})
    assert not distributed.is_initialized()


@pytest.mark.skipif(gpuml.build_info().get("gloo"), reason="Gloo is built")
def test_init_gloo_without_gloo_is_not_implemented(tmp_path):
    with pytest.raises(NotImplementedError, match="Gloo"):
        distributed.init_gloo(1, 0, tmp_path)
    assert not distributed.is_initialized()


class DictStore:
    """A key-value store shared by threads: a dict and a condition."""

    def __init__(self, fail_on_set=False):
        self.values, self.changed, self.fail_on_set = {}, __import__("threading").Condition(), fail_on_set

    def set(self, key, value):
        if self.fail_on_set:
            raise KeyError("this store refuses " + key)
        with self.changed:
            self.values[key] = value
            self.changed.notify_all()

    def get(self, key, timeout):
        with self.changed:
            return self.values[key] if self.changed.wait_for(lambda: key in self.values, timeout) else None


@needs_gloo
def test_gloo_groups_in_threads_meet_through_a_store(rng):
    n_ranks = int(rng.integers(2, 5))
    X = rng.normal(size=(int(rng.integers(50, 200)), 3))
    y = X @ [1.0, -2.0, 0.5] + 0.1 * rng.normal(size=len(X))
    rows = np.array_split(np.arange(len(X)), n_ranks)
    store = DictStore()

    def rank(r):
        with distributed.gloo_group(n_ranks, r, store=store, prefix="threads", hostname="127.0.0.1", timeout=60):
            assert distributed.rank() == r and distributed.size() == n_ranks
            coef = LinearRegression(device="cpu").fit(X[rows[r]], y[rows[r]]).coef_
        assert distributed.size() == 1  # the group ended with the block
        return coef

    results = on_threads(n_ranks, rank)
    for r in range(n_ranks):
        assert np.array_equal(results[r], results[0])  # every rank the same bits
    np.testing.assert_allclose(results[0], SkLinearRegression().fit(X, y).coef_, rtol=1e-9)  # sums regrouped


@needs_gloo
def test_a_failing_store_is_the_cause_of_the_error():
    with pytest.raises(OSError) as caught:
        with distributed.gloo_group(2, 0, store=DictStore(fail_on_set=True), timeout=5):
            pass
    assert isinstance(caught.value.__cause__, KeyError)
    with pytest.raises(ValueError, match="one of rendezvous_dir"):
        with distributed.gloo_group(2, 0):
            pass
    with pytest.raises(ValueError, match="set"):
        with distributed.gloo_group(2, 0, store=object()):
            pass
    assert distributed.size() == 1


@needs_gloo
def test_gloo_groups_on_one_gpu_fit_through_the_host(rng):
    """Ranks (threads) whose CUDA contexts share one GPU: "auto" takes Gloo through host memory
    (NCCL refuses two ranks on one GPU, and "nccl" is then an error on every rank)."""
    from conftest import CUDA_DEVICE_COUNT, cuda_or_skip

    if CUDA_DEVICE_COUNT == 0:
        cuda_or_skip("no CUDA device")
    n_ranks = 2
    X = rng.normal(size=(int(rng.integers(200, 600)), 4))
    y = X @ [1.0, -2.0, 0.5, 0.0] + 0.1 * rng.normal(size=len(X))
    labels = (X[:, 0] + 0.3 * rng.normal(size=len(X)) > 0).astype(np.int64)
    rows = np.array_split(np.arange(len(X)), n_ranks)
    forest_params = dict(n_estimators=4, max_depth=6, random_state=int(rng.integers(1000)), device="cuda")
    store = DictStore()

    def rank(r):
        with distributed.gloo_group(n_ranks, r, store=store, prefix="gpu", hostname="127.0.0.1", timeout=60,
                                    device="cuda"):
            assert distributed.rank() == r and distributed.size() == n_ranks
            ols = LinearRegression(device="cuda").fit(X[rows[r]], y[rows[r]])
            forest = RandomForestClassifier(**forest_params).fit(X[rows[r]], labels[rows[r]])
        with pytest.raises(ValueError, match="share one GPU"):
            with distributed.gloo_group(n_ranks, r, store=store, prefix="gpu-nccl", hostname="127.0.0.1",
                                        timeout=60, device="cuda", gpu_transport="nccl"):
                pass
        return ols.coef_, forest.predict_proba(X)

    results = on_threads(n_ranks, rank)
    for r in range(n_ranks):
        assert np.array_equal(results[r][0], results[0][0])  # every rank the same bits
        assert np.array_equal(results[r][1], results[0][1])
    np.testing.assert_allclose(results[0][0], SkLinearRegression().fit(X, y).coef_, rtol=1e-9)  # sums regrouped
    # The forest of all rows, as one process grows it on the GPU: bit for bit.
    assert np.array_equal(results[0][1], RandomForestClassifier(**forest_params).fit(X, labels).predict_proba(X))

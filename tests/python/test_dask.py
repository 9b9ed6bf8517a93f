"""gpuml.dask: fits on Dask collections over a LocalCluster's worker processes (Gloo between
them) against one process's fit of the same rows, and against scikit-learn."""

import os
import time
from pathlib import Path

import numpy as np
import pytest

import gpuml

pytestmark = pytest.mark.skipif(not gpuml.build_info().get("gloo"), reason="gpuml built without Gloo")
da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")

from sklearn.linear_model import LinearRegression as SkLinearRegression  # noqa: E402

import gpuml.dask  # noqa: E402
from gpuml.cluster import KMeans  # noqa: E402
from gpuml.decomposition import PCA  # noqa: E402
from gpuml.ensemble import RandomForestClassifier, RandomForestRegressor  # noqa: E402
from gpuml.linear_model import LinearRegression, LogisticRegression, Ridge  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def client():
    # The workers are new processes: they find the package and the library as this one does.
    saved = {name: os.environ.get(name) for name in ("PYTHONPATH", "GPUML_LIBRARY", "OMP_NUM_THREADS")}
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT / "bindings" / "python"), saved["PYTHONPATH"]]))
    os.environ["GPUML_LIBRARY"] = gpuml.library_path
    os.environ["OMP_NUM_THREADS"] = "1"
    try:
        with distributed.LocalCluster(n_workers=3, threads_per_worker=1, processes=True, dashboard_address=None,
                                      silence_logs=40) as cluster, distributed.Client(cluster) as c:
            yield c
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def uneven_chunks(rng, n, pieces):
    """Row chunk sizes summing to n, uneven, one of them possibly empty."""
    cuts = np.sort(rng.choice(np.arange(1, n), pieces - 1, replace=False))
    sizes = np.diff([0, *cuts, n]).tolist()
    if rng.random() < 0.5:
        sizes.insert(int(rng.integers(len(sizes) + 1)), 0)
    return tuple(sizes)


def problem(rng):
    n, d = int(rng.integers(400, 1200)), int(rng.integers(2, 7))
    centers = rng.uniform(-8, 8, size=(4, d))
    X = centers[rng.integers(0, 4, size=n)] + rng.normal(size=(n, d))
    y = X @ rng.uniform(-2, 2, size=d) + 0.5 + 0.1 * rng.normal(size=n)
    labels = np.digitize(X[:, 0], np.quantile(X[:, 0], [1 / 3, 2 / 3]))
    chunks = uneven_chunks(rng, n, int(rng.integers(3, 8)))
    return X, y, labels, chunks


def test_fits_over_workers_equal_the_one_process_fit(client, rng):
    X, y, labels, chunks = problem(rng)
    weights = rng.uniform(0.5, 2.0, size=len(X))
    Xd, yd, ld, wd = (da.from_array(a, chunks=(chunks,) + a.shape[1:]) for a in (X, y, labels, weights))

    ols = gpuml.dask.fit(LinearRegression(device="cpu"), Xd, yd)
    local = LinearRegression(device="cpu").fit(X, y)
    sk = SkLinearRegression().fit(X, y)
    # Sums grouped by rank instead of by row: rtol 1e-9 (well-conditioned X).
    np.testing.assert_allclose(ols.coef_, local.coef_, rtol=1e-9)
    np.testing.assert_allclose(ols.coef_, sk.coef_, rtol=1e-8)
    np.testing.assert_allclose(ols.intercept_, sk.intercept_, rtol=1e-8, atol=1e-10)

    ridge = gpuml.dask.fit(Ridge(alpha=3.0, device="cpu"), Xd, yd, sample_weight=wd)
    np.testing.assert_allclose(ridge.coef_, Ridge(alpha=3.0, device="cpu").fit(X, y, sample_weight=weights).coef_,
                               rtol=1e-9)

    km = gpuml.dask.fit(KMeans(n_clusters=4, random_state=1, device="cpu"), Xd)
    km_local = KMeans(n_clusters=4, random_state=1, device="cpu").fit(X)
    np.testing.assert_allclose(km.cluster_centers_, km_local.cluster_centers_, rtol=1e-9, atol=1e-9)
    assert km.n_iter_ == km_local.n_iter_
    np.testing.assert_allclose(km.inertia_, km_local.inertia_, rtol=1e-9)

    # L-BFGS on gradients that differ by rounding takes another path; both stop on the objective's
    # relative decrease (64 eps, as scikit-learn's) within ~1e-6 of the optimum (relative to the
    # largest coefficient) when tol is tight, so they agree within 1e-5 of it (at the default
    # tol=1e-4 they differed by ~1e-4).
    tight = dict(tol=1e-10, max_iter=1000, device="cpu")
    logistic = gpuml.dask.fit(LogisticRegression(**tight), Xd, ld).coef_
    logistic_local = LogisticRegression(**tight).fit(X, labels).coef_
    assert np.abs(logistic - logistic_local).max() <= 1e-5 * np.abs(logistic_local).max()

    pca = gpuml.dask.fit(PCA(n_components=2, device="cpu"), Xd)
    pca_local = PCA(n_components=2, device="cpu").fit(X)
    np.testing.assert_allclose(np.abs(pca.components_), np.abs(pca_local.components_), rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(pca.explained_variance_, pca_local.explained_variance_, rtol=1e-9)

    # The forests of all rows in X's order: the 1-process forests, bit for bit.
    params = dict(n_estimators=6, max_depth=8, random_state=5, device="cpu")
    forest = gpuml.dask.fit(RandomForestClassifier(**params), Xd, ld)
    assert np.array_equal(forest.predict_proba(X), RandomForestClassifier(**params).fit(X, labels).predict_proba(X))
    regressor = gpuml.dask.fit(RandomForestRegressor(**params), Xd, yd)
    assert np.array_equal(regressor.predict(X), RandomForestRegressor(**params).fit(X, y).predict(X))


def test_gpu_fits_over_workers_equal_the_one_process_gpu_fit(client, rng):
    """device="cuda" on workers that share this machine's GPU(s): each rank a CUDA context (the
    host's GPUs in turn), their collectives over NCCL or through the host, as the ranks choose."""
    from conftest import CUDA_DEVICE_COUNT, cuda_or_skip

    if CUDA_DEVICE_COUNT == 0:
        cuda_or_skip("no CUDA device")
    X, y, labels, chunks = problem(rng)
    Xd, yd, ld = (da.from_array(a, chunks=(chunks,) + a.shape[1:]) for a in (X, y, labels))
    ols = gpuml.dask.fit(LinearRegression(device="cuda"), Xd, yd)
    np.testing.assert_allclose(ols.coef_, SkLinearRegression().fit(X, y).coef_, rtol=1e-8)  # sums regrouped
    params = dict(n_estimators=4, max_depth=8, random_state=int(rng.integers(1000)), device="cuda")
    forest = gpuml.dask.fit(RandomForestClassifier(**params), Xd, ld)
    assert np.array_equal(forest.predict_proba(X), RandomForestClassifier(**params).fit(X, labels).predict_proba(X))


def test_a_block_may_lack_classes(client, rng):
    """Rows sorted by label: the first workers' blocks hold one class, the rare one only the last
    block. The forest is still the 1-process forest of all rows."""
    X, _, _, chunks = problem(rng)
    labels = np.where(X[:, 0] > np.quantile(X[:, 0], 0.97), "rare defect", np.where(X[:, 1] > 0, "scratch", "ok"))
    order = np.argsort(labels, kind="stable")[::-1]  # "scratch", then "rare defect", then "ok"
    X, labels = X[order], labels[order]
    Xd, ld = da.from_array(X, chunks=(chunks, X.shape[1])), da.from_array(labels, chunks=(chunks,))
    params = dict(n_estimators=4, max_depth=6, random_state=int(rng.integers(1000)), device="cpu")
    forest = gpuml.dask.fit(RandomForestClassifier(**params), Xd, ld)
    assert list(forest.classes_) == ["ok", "rare defect", "scratch"]
    assert np.array_equal(forest.predict_proba(X), RandomForestClassifier(**params).fit(X, labels).predict_proba(X))


def test_a_shared_directory_serves_the_rendezvous_too(client, rng, tmp_path):
    X, y, _, chunks = problem(rng)
    Xd, yd = da.from_array(X, chunks=(chunks, X.shape[1])), da.from_array(y, chunks=(chunks,))
    ols = gpuml.dask.fit(LinearRegression(device="cpu"), Xd, yd, rendezvous_dir=tmp_path)
    np.testing.assert_allclose(ols.coef_, SkLinearRegression().fit(X, y).coef_, rtol=1e-8)
    assert any(tmp_path.iterdir())  # the ranks met there, not through the scheduler


def test_the_scheduler_keeps_no_rendezvous_keys(client, rng):
    X, y, _, chunks = problem(rng)
    Xd, yd = da.from_array(X, chunks=(chunks, X.shape[1])), da.from_array(y, chunks=(chunks,))
    gpuml.dask.fit(LinearRegression(device="cpu"), Xd, yd)

    def variables(dask_scheduler):
        return [name for name in dask_scheduler.extensions["variables"].variables if "gpuml-dask" in name]

    # distributed.Variable.delete only sends the request: the scheduler drops them soon after.
    deadline = time.monotonic() + 30
    while client.run_on_scheduler(variables) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert client.run_on_scheduler(variables) == []


def test_predict_maps_over_the_blocks(client, rng):
    X, y, labels, chunks = problem(rng)
    Xd = da.from_array(X, chunks=(chunks, X.shape[1]))
    model = LogisticRegression(max_iter=1000, device="cpu").fit(X, labels)
    predicted = gpuml.dask.predict(model, Xd)
    assert isinstance(predicted, da.Array)
    assert np.array_equal(predicted.compute(), model.predict(X))
    probabilities = gpuml.dask.predict(model, Xd, method="predict_proba").compute()
    # Each block is one matrix product: its sums group by the block's size (rtol 1e-12).
    np.testing.assert_allclose(probabilities, model.predict_proba(X), rtol=1e-12, atol=1e-15)


def test_dataframes_are_row_blocks_too(client, rng):
    dd = pytest.importorskip("dask.dataframe")
    pd = pytest.importorskip("pandas")
    X, y, _, _ = problem(rng)
    frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(X.shape[1])])
    Xd = dd.from_pandas(frame, npartitions=int(rng.integers(2, 6)))
    yd = dd.from_pandas(pd.Series(y), npartitions=Xd.npartitions)
    ols = gpuml.dask.fit(LinearRegression(device="cpu"), Xd, yd)
    np.testing.assert_allclose(ols.coef_, SkLinearRegression().fit(X, y).coef_, rtol=1e-8)


def test_bad_calls_are_named_errors(client, rng, tmp_path):
    X, y, _, chunks = problem(rng)
    Xd = da.from_array(X, chunks=(chunks, X.shape[1]))
    template = LinearRegression(device="cpu")
    with pytest.raises(ValueError, match="device"):
        gpuml.dask.fit(LinearRegression(device="gpu"), Xd, da.from_array(y))
    with pytest.raises(ValueError, match="rows"):
        gpuml.dask.fit(template, Xd, da.from_array(y[:-3]))
    with pytest.raises(TypeError, match="Dask array"):
        gpuml.dask.fit(template, X, y)
    with pytest.raises(ValueError, match="not a directory"):
        gpuml.dask.fit(template, Xd, da.from_array(y), rendezvous_dir=tmp_path / "absent")
    # Bad rows on the last worker: its own error (not the others' lost connection), at once.
    bad = X.copy()
    bad[-1, 0] = np.nan
    started = time.monotonic()
    with pytest.raises(ValueError, match="NaN"):
        gpuml.dask.fit(template, da.from_array(bad, chunks=(chunks, X.shape[1])), da.from_array(y, chunks=(chunks,)),
                       timeout=60)
    assert time.monotonic() - started < 30  # the others fail when its connections close, not at the timeout
    assert not hasattr(template, "coef_")  # the template stays unfitted
    # The cluster is still usable after the failures.
    ols = gpuml.dask.fit(template, Xd, da.from_array(y, chunks=(chunks,)))
    np.testing.assert_allclose(ols.coef_, SkLinearRegression().fit(X, y).coef_, rtol=1e-8)

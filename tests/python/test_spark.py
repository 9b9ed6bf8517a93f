"""gpuml.spark: fits on a Spark DataFrame's partitions (local mode, three task slots, Gloo between
the Python workers) against one process's fit of the same rows, and against scikit-learn."""

import os
import shutil
import time
from pathlib import Path

import numpy as np
import pytest

import gpuml

pytestmark = pytest.mark.skipif(not gpuml.build_info().get("gloo"), reason="gpuml built without Gloo")
pyspark = pytest.importorskip("pyspark")
if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
    pytest.skip("Spark needs Java", allow_module_level=True)

from sklearn.linear_model import LinearRegression as SkLinearRegression  # noqa: E402

import gpuml.spark  # noqa: E402
from gpuml.cluster import KMeans  # noqa: E402
from gpuml.ensemble import RandomForestClassifier  # noqa: E402
from gpuml.linear_model import LinearRegression, LogisticRegression  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def spark():
    from pyspark.sql import SparkSession

    # The Python workers are new processes: they find the package and the library as this one does.
    os.environ["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT / "bindings" / "python"), os.environ.get("PYTHONPATH", "")])
    os.environ["GPUML_LIBRARY"] = gpuml.library_path
    os.environ["PYSPARK_PYTHON"] = os.environ.get("PYSPARK_PYTHON", __import__("sys").executable)
    session = (SparkSession.builder.master("local[3]").appName("gpuml-test")
               .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "3")
               .config("spark.executorEnv.OMP_NUM_THREADS", "1").getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


def frame(spark, rng, n_partitions):
    """A DataFrame of fresh rows in `n_partitions` partitions, in row order, and the rows as NumPy."""
    n, d = int(rng.integers(300, 800)), int(rng.integers(2, 6))
    centers = rng.uniform(-8, 8, size=(4, d))
    X = centers[rng.integers(0, 4, size=n)] + rng.normal(size=(n, d))
    y = X @ rng.uniform(-2, 2, size=d) + 0.5 + 0.1 * rng.normal(size=n)
    labels = np.digitize(X[:, 0], np.quantile(X[:, 0], [1 / 3, 2 / 3])).astype(np.float64)
    weights = rng.uniform(0.5, 2.0, size=n)
    columns = [f"x{j}" for j in range(d)] + ["y", "label", "w"]
    rows = [tuple(float(v) for v in row) for row in np.column_stack([X, y, labels, weights])]
    df = spark.sparkContext.parallelize(rows, n_partitions).toDF(columns)  # slices keep the row order
    return df, X, y, labels, weights, columns[:d]


def test_fits_over_partitions_equal_the_one_process_fit(spark, rng):
    df, X, y, labels, weights, features = frame(spark, rng, int(rng.integers(2, 4)))
    ols = gpuml.spark.fit(LinearRegression(device="cpu"), df, features, label="y", weight="w")
    local = LinearRegression(device="cpu").fit(X, y, sample_weight=weights)
    np.testing.assert_allclose(ols.coef_, local.coef_, rtol=1e-9)  # sums grouped by rank: rtol 1e-9
    sk = SkLinearRegression().fit(X, y, sample_weight=weights)
    np.testing.assert_allclose(ols.coef_, sk.coef_, rtol=1e-8)

    km = gpuml.spark.fit(KMeans(n_clusters=4, random_state=2, device="cpu"), df, features)
    km_local = KMeans(n_clusters=4, random_state=2, device="cpu").fit(X)
    np.testing.assert_allclose(km.cluster_centers_, km_local.cluster_centers_, rtol=1e-9, atol=1e-9)
    assert km.n_iter_ == km_local.n_iter_

    params = dict(n_estimators=5, max_depth=8, random_state=3, device="cpu")
    forest = gpuml.spark.fit(RandomForestClassifier(**params), df, features, label="label")
    # The forest of all rows in the DataFrame's order: the 1-process forest, bit for bit.
    assert np.array_equal(forest.predict_proba(X), RandomForestClassifier(**params).fit(X, labels).predict_proba(X))


def test_gpu_fits_over_partitions_equal_the_one_process_gpu_fit(spark, rng):
    """device="cuda": each task a CUDA context (the host's GPUs in turn: local mode assigns no
    GPU resource), their collectives over NCCL or through the host, as the ranks choose."""
    from conftest import CUDA_DEVICE_COUNT, cuda_or_skip

    if CUDA_DEVICE_COUNT == 0:
        cuda_or_skip("no CUDA device")
    df, X, y, labels, _, features = frame(spark, rng, int(rng.integers(2, 4)))
    ols = gpuml.spark.fit(LinearRegression(device="cuda"), df, features, label="y")
    np.testing.assert_allclose(ols.coef_, SkLinearRegression().fit(X, y).coef_, rtol=1e-8)  # sums regrouped
    params = dict(n_estimators=4, max_depth=8, random_state=int(rng.integers(1000)), device="cuda")
    forest = gpuml.spark.fit(RandomForestClassifier(**params), df, features, label="label")
    assert np.array_equal(forest.predict_proba(X), RandomForestClassifier(**params).fit(X, labels).predict_proba(X))


def test_a_partition_may_lack_classes(spark, rng):
    """Rows sorted by label: the first partition holds one class only. The forest is still the
    1-process forest of all rows."""
    n = int(rng.integers(300, 600))
    X = rng.normal(size=(n, 3))
    labels = np.sort(np.digitize(X[:, 0], [-1.5, 0.5]))[::-1].astype(np.float64)  # 2s, then 1s, then 0s
    X = X[np.argsort(np.digitize(X[:, 0], [-1.5, 0.5]), kind="stable")[::-1]]
    rows = [tuple(float(v) for v in row) for row in np.column_stack([X, labels])]
    df = spark.sparkContext.parallelize(rows, 3).toDF(["x0", "x1", "x2", "label"])
    params = dict(n_estimators=4, max_depth=6, random_state=int(rng.integers(1000)), device="cpu")
    forest = gpuml.spark.fit(RandomForestClassifier(**params), df, ["x0", "x1", "x2"], label="label")
    assert list(forest.classes_) == [0.0, 1.0, 2.0]
    assert np.array_equal(forest.predict_proba(X), RandomForestClassifier(**params).fit(X, labels).predict_proba(X))


def test_more_partitions_than_slots_and_empty_partitions(spark, rng):
    df, X, y, _, _, features = frame(spark, rng, 7)  # 7 partitions, 3 slots: coalesced in order
    ols = gpuml.spark.fit(LinearRegression(device="cpu"), df, features, label="y")
    np.testing.assert_allclose(ols.coef_, SkLinearRegression().fit(X, y).coef_, rtol=1e-8)
    few = df.limit(5)  # most partitions of this one are empty
    model = gpuml.spark.fit(LinearRegression(device="cpu"), few, features, label="y")
    rows = np.array(few.select(*features, "y").collect(), dtype=np.float64)
    np.testing.assert_allclose(model.coef_, SkLinearRegression().fit(rows[:, :-1], rows[:, -1]).coef_, rtol=1e-6)


def test_a_shared_directory_serves_the_rendezvous_too(spark, rng, tmp_path):
    df, X, y, _, _, features = frame(spark, rng, 3)
    ols = gpuml.spark.fit(LinearRegression(device="cpu"), df, features, label="y", rendezvous_dir=tmp_path)
    np.testing.assert_allclose(ols.coef_, SkLinearRegression().fit(X, y).coef_, rtol=1e-8)
    assert any(tmp_path.iterdir())  # the ranks met there, not through the driver's store


def test_vector_column_and_predict(spark, rng):
    from pyspark.ml.feature import VectorAssembler

    df, X, _, labels, _, features = frame(spark, rng, 3)
    assembled = VectorAssembler(inputCols=features, outputCol="features").transform(df)
    model = gpuml.spark.fit(LogisticRegression(max_iter=1000, device="cpu"), assembled, "features", label="label")
    local = LogisticRegression(max_iter=1000, device="cpu").fit(X, labels)
    # L-BFGS on gradients that differ by rounding: within 1e-3 of the largest coefficient at tol=1e-4.
    assert np.abs(model.coef_ - local.coef_).max() <= 1e-3 * np.abs(local.coef_).max()
    scored = gpuml.spark.predict(model, df, features).select("prediction").collect()
    assert np.array_equal(np.array([r.prediction for r in scored]), model.predict(X))
    proba = gpuml.spark.predict(model, assembled, "features", output_col="p", method="predict_proba")
    # Each batch is one matrix product: its sums group by the batch's size (rtol 1e-12).
    np.testing.assert_allclose(np.array([r.p for r in proba.select("p").collect()]), model.predict_proba(X),
                               rtol=1e-12, atol=1e-15)


def test_bad_calls_are_named_errors(spark, rng):
    df, _, _, _, _, features = frame(spark, rng, 2)
    with pytest.raises(ValueError, match="device"):
        gpuml.spark.fit(LinearRegression(device="gpu"), df, features, label="y")
    with pytest.raises(ValueError, match="no column"):
        gpuml.spark.fit(LinearRegression(device="cpu"), df, features + ["absent"], label="y")
    with pytest.raises(ValueError, match="features"):
        gpuml.spark.fit(LinearRegression(device="cpu"), df, [], label="y")
    with pytest.raises(ValueError, match="no rows"):
        gpuml.spark.fit(LinearRegression(device="cpu"), df.limit(0), features, label="y")
    # Bad rows in the last partition: its own error (not the others' lost connection), at once.
    _, X, y, _, _, names = frame(spark, rng, 2)
    X[-1, 0] = np.nan
    rows = [tuple(float(v) for v in row) for row in np.column_stack([X, y])]
    bad = spark.sparkContext.parallelize(rows, 3).toDF(names + ["y"])
    started = time.monotonic()
    with pytest.raises(ValueError, match="NaN"):
        gpuml.spark.fit(LinearRegression(device="cpu"), bad, names, label="y", timeout=60)
    assert time.monotonic() - started < 60
    with pytest.raises(ValueError, match="already has"):
        gpuml.spark.predict(LinearRegression(device="cpu").fit(np.ones((3, 1)) * [[1], [2], [3]], [1, 2, 3]), df,
                            ["x0"], output_col="y")

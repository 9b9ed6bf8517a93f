"""Misaligned NumPy arrays (issue 22 item 7): views at an odd byte offset.

Such a view passes to the library zero-copy (its strides are whole elements), but its data pointer
is not a multiple of the element size, and loading an element through it is undefined behaviour
in C++ (UBSan: "load of misaligned address") and a fault on CUDA. The library copies such arrays
bytewise before reading them; every estimator must give exactly the results of aligned copies of
the same values. (scripts/sanitize runs the C++ form of this check, the bad-input matrices' rows
"misaligned X / y / sample_weight / out", under UBSan.)
"""

import inspect

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from conftest import CUDA_DEVICE_COUNT, cuda_or_skip

from gpuml.cluster import KMeans
from gpuml.decomposition import PCA, TruncatedSVD
from gpuml.ensemble import RandomForestClassifier, RandomForestRegressor
from gpuml.linear_model import ElasticNet, Lasso, LinearRegression, LogisticRegression, Ridge

# (class, params, target): target "labels", "real" or None; the main output method.
ESTIMATORS = [
    (KMeans, {"n_clusters": 3, "random_state": 0, "n_init": 2}, None, "predict"),
    (LinearRegression, {}, "real", "predict"),
    (Ridge, {"alpha": 0.5}, "real", "predict"),
    (Lasso, {"alpha": 0.05}, "real", "predict"),
    (ElasticNet, {"alpha": 0.05, "l1_ratio": 0.5}, "real", "predict"),
    (LogisticRegression, {"C": 1.0}, "labels", "predict_proba"),
    (PCA, {"n_components": 2}, None, "transform"),
    (TruncatedSVD, {"n_components": 2, "random_state": 0}, None, "transform"),
    (RandomForestClassifier, {"n_estimators": 5, "max_depth": 5, "random_state": 0}, "labels", "predict_proba"),
    (RandomForestRegressor, {"n_estimators": 5, "max_depth": 5, "random_state": 0}, "real", "predict"),
]


def misaligned(a):
    """A copy of `a` one byte past an aligned address: every element is misaligned."""
    a = np.ascontiguousarray(a)
    storage = np.empty(a.nbytes + 1, dtype=np.uint8)
    view = storage[1:].view(a.dtype).reshape(a.shape)
    view[...] = a
    assert not view.flags.aligned and view.flags.c_contiguous
    return view


def make_data(rng, n=120, d=5):
    X = rng.normal(size=(n, d)) + np.repeat(rng.normal(scale=4.0, size=(3, d)), n // 3, axis=0)
    labels = np.repeat(np.array([3, 7, 11], dtype=np.int64), n // 3)
    y = X @ rng.normal(size=d) + rng.normal(scale=0.1, size=n)
    weights = rng.uniform(0.5, 2.0, size=n)
    return X, y, labels, weights


def fit_and_apply(cls, params, target, method, device, X, y, weights, X_test):
    est = cls(**params, device=device)
    kwargs = {}
    if weights is not None and "sample_weight" in inspect.signature(est.fit).parameters:
        kwargs["sample_weight"] = weights
    if target is None:
        est.fit(X, **kwargs)
    else:
        est.fit(X, y, **kwargs)
    return getattr(est, method)(X_test)


@pytest.mark.parametrize("cls, params, target, method", ESTIMATORS, ids=[e[0].__name__ for e in ESTIMATORS])
def test_misaligned_inputs_give_the_aligned_results(cls, params, target, method, device, rng):
    X, y_real, labels, weights = make_data(rng)
    X_test = rng.normal(size=(30, X.shape[1])) * 3.0
    y = labels if target == "labels" else y_real
    aligned = fit_and_apply(cls, params, target, method, device, X, y, weights, X_test)
    got = fit_and_apply(cls, params, target, method, device, misaligned(X), misaligned(y), misaligned(weights),
                        misaligned(X_test))
    assert_array_equal(got, aligned)  # the same values, copied: bit-identical results


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.int64])
def test_misaligned_other_dtypes(dtype, device, rng):
    """Misaligned inputs that are converted (int) or kept (float32) before the fit reads them."""
    X, _, labels, weights = make_data(rng)
    X = (X * 4).round().astype(dtype)
    aligned = fit_and_apply(LogisticRegression, {}, "labels", "predict_proba", device, X, labels.astype(np.int32),
                            weights, X)
    got = fit_and_apply(LogisticRegression, {}, "labels", "predict_proba", device, misaligned(X),
                        misaligned(labels.astype(np.int32)), misaligned(weights), misaligned(X))
    assert_array_equal(got, aligned)


@pytest.mark.parametrize("device", ["auto", "cpu"])  # computing on the input's GPU, or staged to the host
def test_misaligned_cupy_arrays(device, rng):
    """CuPy arrays one byte into their allocation: a CUDA kernel loading through such a pointer
    faults (misaligned address); gpuml copies them bytewise first."""
    try:
        import cupy
    except ImportError:
        cuda_or_skip("CuPy is not installed")
    if CUDA_DEVICE_COUNT == 0:
        cuda_or_skip("no CUDA device")

    def misaligned_on_device(a):
        a = np.ascontiguousarray(a)
        storage = cupy.empty(a.nbytes + 1, dtype=cupy.uint8)
        storage[1:] = cupy.asarray(a.view(np.uint8).ravel())  # a byte copy: no misaligned access
        return cupy.ndarray(a.shape, dtype=a.dtype, memptr=storage.data + 1)

    X, y, _, weights = make_data(rng)
    for cls, params, target in ((LinearRegression, {}, "real"), (KMeans, {"n_clusters": 3, "random_state": 0}, None)):
        aligned = fit_and_apply(cls, params, target, "predict", device, cupy.asarray(X), cupy.asarray(y),
                                cupy.asarray(weights), cupy.asarray(X))
        got = fit_and_apply(cls, params, target, "predict", device, misaligned_on_device(X), misaligned_on_device(y),
                            misaligned_on_device(weights), misaligned_on_device(X))
        # The same values: the same results, up to the order of the GPU's float sums between runs.
        assert_allclose(cupy.asnumpy(got), cupy.asnumpy(aligned), rtol=1e-12, atol=1e-12)

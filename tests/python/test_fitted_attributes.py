"""Fitted attributes as scikit-learn treats them (issue 22, items 5 and 6).

Item 5: a fitted attribute that predictions use, assigned or changed in place, is what predict /
transform / score / pickling / save_model use afterwards, as in scikit-learn. Each estimator is
compared with its scikit-learn counterpart given the same attribute values (gpuml's fitted ones,
copied into the fitted scikit-learn estimator), before and after the same edit, on fresh random
data (the seed is printed; GPUML_TEST_SEED replays it). Adapted copies of scikit-learn's own
tests that write attributes (test_write_parameters and others) run against gpuml's estimators.

Item 6: a refit the C library refuses leaves the estimator exactly as it was: same attributes,
same predictions at the old width, bit for bit.
"""

import pickle
import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.cluster import KMeans as SkKMeans
from sklearn.decomposition import PCA as SkPCA
from sklearn.decomposition import TruncatedSVD as SkTruncatedSVD
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import ElasticNet as SkElasticNet
from sklearn.linear_model import Lasso as SkLasso
from sklearn.linear_model import LinearRegression as SkLinearRegression
from sklearn.linear_model import LogisticRegression as SkLogisticRegression
from sklearn.linear_model import Ridge as SkRidge
from sklearn.utils._testing import create_memmap_backed_data

from conftest import DEVICES

from gpuml import _base
from gpuml._base import EstimatorHandle
from gpuml._context import get_context
from gpuml.cluster import KMeans
from gpuml.decomposition import PCA, TruncatedSVD
from gpuml.ensemble import RandomForestClassifier, RandomForestRegressor
from gpuml.linear_model import ElasticNet, Lasso, LinearRegression, LogisticRegression, Ridge

# ---- data -----------------------------------------------------------------------------------


def make_data(rng, n=120, d=5):
    """Three blobs with offsets and scales per column; a linear target with noise; labels 0..2."""
    centers = rng.normal(scale=4.0, size=(3, d))
    blob = np.arange(n) % 3
    X = centers[blob] + rng.normal(size=(n, d)) * rng.uniform(0.5, 2.0, size=d) + rng.normal(size=d)
    y = X @ rng.normal(size=d) + 0.1 * rng.normal(size=n)
    return X, y, blob


# name: (gpuml estimator, scikit-learn estimator, target, settable attributes, compared methods)
CASES = {
    "LinearRegression": (
        lambda dev: LinearRegression(device=dev), lambda: SkLinearRegression(), "y", ("coef_", "intercept_"),
        ("predict", "score"),
    ),
    "Ridge": (lambda dev: Ridge(alpha=0.5, device=dev), lambda: SkRidge(alpha=0.5), "y", ("coef_", "intercept_"),
              ("predict", "score")),
    "Lasso": (lambda dev: Lasso(alpha=0.05, device=dev), lambda: SkLasso(alpha=0.05), "y", ("coef_", "intercept_"),
              ("predict", "score")),
    "ElasticNet": (
        lambda dev: ElasticNet(alpha=0.05, device=dev), lambda: SkElasticNet(alpha=0.05), "y",
        ("coef_", "intercept_"), ("predict", "score"),
    ),
    "LogisticRegression": (
        lambda dev: LogisticRegression(device=dev), lambda: SkLogisticRegression(), "labels",
        ("coef_", "intercept_"), ("decision_function", "predict_proba", "predict", "score"),
    ),
    "KMeans": (
        lambda dev: KMeans(n_clusters=3, n_init=1, random_state=0, device=dev),
        lambda: SkKMeans(n_clusters=3, n_init=1, random_state=0), None, ("cluster_centers_",),
        ("predict", "transform", "score"),
    ),
    "PCA": (lambda dev: PCA(n_components=3, device=dev), lambda: SkPCA(n_components=3), None,
            ("components_", "mean_"), ("transform",)),
    "PCA-whiten": (
        lambda dev: PCA(n_components=3, whiten=True, device=dev), lambda: SkPCA(n_components=3, whiten=True), None,
        ("components_", "mean_", "explained_variance_"), ("transform",),
    ),
    "TruncatedSVD": (
        lambda dev: TruncatedSVD(n_components=3, random_state=0, device=dev),
        lambda: SkTruncatedSVD(n_components=3, random_state=0), None, ("components_",), ("transform",),
    ),
}


def fit_both(case, device, rng):
    """The gpuml estimator fitted on fresh data, and the scikit-learn one fitted on the same data
    and then given gpuml's values of the settable attributes (so both hold the same model)."""
    make, make_sk, target, settable, methods = CASES[case]
    X, y, labels = make_data(rng)
    args = (X,) if target is None else (X, y if target == "y" else labels)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        ours = make(device).fit(*args)
        theirs = make_sk().fit(*args)
    for name in settable:
        value = getattr(ours, name)
        setattr(theirs, name, np.array(value, copy=True) if isinstance(value, np.ndarray) else value)
    return ours, theirs, args


def outputs(est, methods, args):
    X = args[0]
    return {m: (est.score(*args) if m == "score" else getattr(est, m)(X)) for m in methods}


def assert_same_outputs(ours, theirs, methods, args):
    a, b = outputs(ours, methods, args), outputs(theirs, methods, args)
    for m in methods:
        if m == "predict" and np.asarray(b[m]).dtype.kind in "iu":
            # Labels: the same nearest center / largest score (random data has no ties within rounding).
            assert_array_equal(np.asarray(a[m]), np.asarray(b[m]), err_msg=m)
        else:
            # float64 sums of a few terms in another order: 1e-10 of the outputs' size.
            scale = np.max(np.abs(b[m])) + 1.0
            assert_allclose(a[m], b[m], rtol=1e-10, atol=1e-10 * scale, err_msg=m)


def edited_value(name, value, rng):
    """A new value of a fitted attribute: the old one moved by noise of its own size (variances
    stay positive)."""
    old = np.asarray(value, dtype=np.float64)
    if name == "explained_variance_":
        return old * rng.uniform(0.5, 2.0, size=old.shape)
    return old + (0.5 + np.abs(old)) * rng.normal(size=old.shape)


def edit(est, name, new, how):
    """Writes `new` into est.<name>: in place when the attribute is an array ("inplace"), else by
    assignment (a Python float for a scalar)."""
    current = getattr(est, name)
    if how == "inplace" and isinstance(current, np.ndarray) and current.ndim > 0:
        current[...] = new
    else:
        setattr(est, name, float(new) if np.ndim(new) == 0 else np.array(new, copy=True))


# ---- item 5: attributes set by hand are used --------------------------------------------------


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("how", ["inplace", "assign"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_edited_attributes_are_used(case, how, device, rng):
    ours, theirs, args = fit_both(case, device, rng)
    settable, methods = CASES[case][3], CASES[case][4]
    assert_same_outputs(ours, theirs, methods, args)  # the same model to begin with
    for name in settable:
        new = edited_value(name, getattr(ours, name), rng)
        edit(ours, name, new, how)
        edit(theirs, name, new, how)
        assert_same_outputs(ours, theirs, methods, args)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("case", sorted(CASES))
def test_edited_attributes_survive_pickle_and_save_model(case, device, rng, tmp_path):
    ours, theirs, args = fit_both(case, device, rng)
    settable, methods = CASES[case][3], CASES[case][4]
    for i, name in enumerate(settable):
        new = edited_value(name, getattr(ours, name), rng)
        edit(ours, name, new, "inplace" if i % 2 == 0 else "assign")
        edit(theirs, name, new, "assign")
    loaded = pickle.loads(pickle.dumps(ours))
    assert_same_outputs(loaded, theirs, methods, args)
    for name in settable:
        assert_array_equal(np.asarray(getattr(loaded, name)), np.asarray(getattr(ours, name)), err_msg=name)

    path = tmp_path / "model.gpuml"
    ours.save_model(path)
    model = EstimatorHandle.deserialize(path.read_bytes())
    for name in settable:
        assert_array_equal(model.attribute(get_context("cpu"), name), np.asarray(getattr(ours, name)), err_msg=name)


@pytest.mark.parametrize("case", ["LinearRegression", "KMeans"])
def test_unedited_attributes_are_not_pushed(case, rng, monkeypatch):
    ours, theirs, args = fit_both(case, "cpu", rng)
    pushed = []
    original = EstimatorHandle.set_attribute
    monkeypatch.setattr(EstimatorHandle, "set_attribute", lambda self, c, n, v: (pushed.append(n), original(self, c, n, v)))
    name = CASES[case][3][0]
    getattr(ours, name)  # read, not changed
    ours.predict(args[0])
    pickle.dumps(ours)
    assert pushed == []
    getattr(ours, name)[...] += 1.0  # changed: pushed once, then known to the model
    ours.predict(args[0])
    ours.predict(args[0])
    assert pushed == [name]


@pytest.mark.parametrize("device", DEVICES)
def test_refused_values_are_value_errors_and_change_nothing(device, rng):
    ours, theirs, args = fit_both("Ridge", device, rng)
    X = args[0]
    before = ours.predict(X)
    good = ours.coef_.copy()
    ours.coef_ = np.full_like(good, np.nan)
    with pytest.raises(ValueError, match="coef_.*(NaN|finite)"):
        ours.predict(X)
    with pytest.raises(ValueError, match="coef_"):
        pickle.dumps(ours)
    ours.coef_ = good[:-1]
    with pytest.raises(ValueError, match="coef_.*shape"):
        ours.predict(X)
    ours.coef_ = good
    assert_array_equal(ours.predict(X), before)


# Adapted copies of scikit-learn 1.9.1's tests that write fitted attributes.


@pytest.mark.parametrize("device", DEVICES)
def test_write_parameters(device, rng):
    # sklearn/linear_model/tests/test_logistic.py::test_write_parameters
    X, _, labels = make_data(rng)
    y = labels == 1  # two classes, as scikit-learn's Y1 there
    clf = LogisticRegression(device=device)
    clf.fit(X, y)
    clf.coef_[:] = 0
    clf.intercept_[:] = 0
    assert_allclose(clf.decision_function(X), 0, atol=1e-12)  # exact zeros, whatever the order of the sums


@pytest.mark.parametrize("device", DEVICES)
def test_predict_does_not_change_cluster_centers_readonly(device, rng):
    # sklearn/cluster/tests/test_k_means.py: attributes replaced by read-only memmaps (gh-24253)
    X, _, _ = make_data(rng, n=200, d=10)
    kmeans = KMeans(n_clusters=3, n_init=1, random_state=0, device=device)
    y_pred1 = kmeans.fit_predict(X)
    kmeans.cluster_centers_ = create_memmap_backed_data(kmeans.cluster_centers_)
    kmeans.labels_ = create_memmap_backed_data(kmeans.labels_)
    assert_array_equal(y_pred1, kmeans.predict(X))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("case", sorted(CASES))
def test_fitted_attributes_are_listed_as_scikit_learns(case, device, rng):
    """dir() lists the model's attributes, so that inspect.getmembers and scikit-learn's HTML repr
    of the fitted attributes (BaseEstimator._get_fitted_attr_html) show every one scikit-learn's
    estimator shows, with the same values where the model holds them."""
    ours, theirs, _ = fit_both(case, device, rng)
    mine, sk = ours._get_fitted_attr_html(), theirs._get_fitted_attr_html()
    assert set(sk) <= set(mine), f"missing: {sorted(set(sk) - set(mine))}"
    for name in CASES[case][3]:  # the settable ones: scikit-learn's estimator was given gpuml's values
        assert_allclose(np.asarray(mine[name]["value"]), np.asarray(sk[name]["value"]), rtol=0, atol=0)


def test_forest_node_arrays_are_not_listed(rng):
    """The forests' node arrays (gigabytes at full depth) stay out of dir() and so out of the HTML
    repr, and are still readable."""
    X, _, labels = make_data(rng)
    forest = RandomForestClassifier(n_estimators=3, random_state=0).fit(X, labels)
    assert "feature_importances_" in dir(forest)
    assert not any(name.startswith("nodes_") for name in dir(forest))
    assert "nodes_feature_" not in forest._get_fitted_attr_html()
    assert forest.nodes_feature_.shape == (forest.estimator_node_offsets_[-1],)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("Estimator", [Lasso, ElasticNet])
def test_warm_start_convergence_with_bad_coef(Estimator, device):
    # sklearn/linear_model/tests/test_coordinate_descent.py::test_warm_start_convergence (the
    # coefficients set by hand before the first fit are its starting point)
    reg = Estimator(alpha=1e-10, fit_intercept=False, warm_start=True, max_iter=1, tol=1e-10, device=device)
    reg.coef_ = np.array([1, 1, 1, 1000])
    X = np.array([[-1, -1, 1, 1], [1, 1, -1, -1]])
    y = np.array([-1, 1])
    with pytest.warns(ConvergenceWarning, match="Objective did not converge. You might want to increase the number"):
        reg.fit(X, y)


# ---- item 6: a refused refit changes nothing -------------------------------------------------


def _refit_cases():
    """(name, estimator, target, refused refit): `refuse(est, X, y)` refits on data one column
    wider in a way the C library refuses (the Python checks pass it)."""

    def wider(X):
        return np.hstack([X, X[:, :1]])  # a copy of a column: rank deficient

    def bad_device(est, X, y):
        est.set_params(device="cuda:99")  # Python accepts the form; the C library has no such device
        return est.fit(wider(X)) if y is None else est.fit(wider(X), y)

    return [
        ("LinearRegression-qr", lambda: LinearRegression(algorithm="qr"), "y",
         lambda est, X, y: est.fit(wider(X), y)),  # rank deficient: "qr" needs full rank
        # (XᵀX singular without a penalty is no refusal: "cholesky" falls back to "svd", as scikit-learn's.)
        ("Ridge-positive", lambda: Ridge(alpha=0.0, positive=True), "y", bad_device),
        ("Lasso-warm", lambda: Lasso(alpha=0.05, warm_start=True), "y",
         lambda est, X, y: est.fit(wider(X), y)),  # the previous coef_ has the old width
        ("ElasticNet-warm", lambda: ElasticNet(alpha=0.05, warm_start=True), "y",
         lambda est, X, y: est.fit(wider(X), y)),
        ("LogisticRegression-C", lambda: LogisticRegression(), "labels",
         lambda est, X, y: est.set_params(C=5e-324).fit(wider(X), y)),
        ("KMeans", lambda: KMeans(n_clusters=3, n_init=1, random_state=0), None, bad_device),
        ("KMeans-fit_predict", lambda: KMeans(n_clusters=3, n_init=1, random_state=0), None,
         lambda est, X, y: est.set_params(device="cuda:99").fit_predict(wider(X))),
        ("PCA", lambda: PCA(n_components=2), None, bad_device),
        ("PCA-fit_transform", lambda: PCA(n_components=2), None,
         lambda est, X, y: est.set_params(device="cuda:99").fit_transform(wider(X))),
        ("TruncatedSVD", lambda: TruncatedSVD(n_components=2, random_state=0), None, bad_device),
        ("LinearRegression", lambda: LinearRegression(), "y", bad_device),
        ("LogisticRegression", lambda: LogisticRegression(), "labels", bad_device),
        ("RandomForestClassifier", lambda: RandomForestClassifier(n_estimators=3, random_state=0), "labels",
         bad_device),
        ("RandomForestRegressor", lambda: RandomForestRegressor(n_estimators=3, random_state=0), "y", bad_device),
    ]


REFIT_CASES = {case[0]: case[1:] for case in _refit_cases()}


def _state(est):
    """Everything the estimator holds, for comparison: its __dict__ (the C model by identity) and
    its fitted attributes' values."""
    state = dict(est.__dict__)
    values = {name: np.array(getattr(est, name), copy=True) for name in type(est)._gpuml_attributes}
    return state, values


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("case", sorted(REFIT_CASES))
def test_refused_refit_leaves_estimator_as_it_was(case, device, rng):
    make, target, refuse = REFIT_CASES[case]
    X, y, labels = make_data(rng)
    y = None if target is None else (y if target == "y" else labels)
    est = make().set_params(device=device)
    est.fit(X) if y is None else est.fit(X, y)
    method = "predict" if hasattr(est, "predict") else "transform"
    before = getattr(est, method)(X)
    state, values = _state(est)
    params = est.get_params()

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # ValueError for data; no device cuda:99: NotImplementedError without CUDA, else an error of CUDA's.
        with pytest.raises((ValueError, NotImplementedError, RuntimeError)):
            refuse(est, X, y)

    # Parameters the refused call set with set_params stay set, as in scikit-learn: put them back.
    est.set_params(**params)
    assert est.n_features_in_ == X.shape[1]
    assert est.__dict__.keys() == state.keys()
    for key, value in state.items():
        if key in params:
            assert est.__dict__[key] == value, key
        else:
            assert est.__dict__[key] is value, key  # the same objects: the C model, the attribute copies
    for name, value in values.items():
        assert_array_equal(np.asarray(getattr(est, name)), value, err_msg=name)
    after = getattr(est, method)(X)
    assert after.dtype == before.dtype
    assert after.tobytes() == before.tobytes()  # bit for bit
    with pytest.raises(ValueError, match="features"):
        getattr(est, method)(np.hstack([X, X[:, :1]]))


def test_refused_fit_of_unfitted_estimator_leaves_it_unfitted(rng):
    X, y, _ = make_data(rng)
    est = LinearRegression(algorithm="qr")
    with pytest.raises(ValueError, match="rank"):
        est.fit(np.hstack([X, X[:, :1]]), y)
    assert not hasattr(est, "n_features_in_")
    assert "_gpuml_handle" not in est.__dict__
    assert_allclose(est.fit(X, y).predict(X), SkLinearRegression().fit(X, y).predict(X), rtol=1e-9, atol=1e-9)


def test_every_fit_keeps_state_on_error():
    """The base class wraps every fit-like method each estimator defines."""
    for cls in (LinearRegression, Ridge, Lasso, ElasticNet, LogisticRegression, KMeans, PCA, TruncatedSVD,
                RandomForestClassifier, RandomForestRegressor):
        for name in _base._STATE_KEEPING_METHODS:
            method = getattr(cls, name, None)
            if method is None:
                continue
            # scikit-learn's set_output wraps fit_transform again around ours.
            inner = method
            while not getattr(inner, "_gpuml_keeps_state", False) and hasattr(inner, "__wrapped__"):
                inner = inner.__wrapped__
            assert getattr(inner, "_gpuml_keeps_state", False), f"{cls.__name__}.{name}"

"""Lasso and ElasticNet against scikit-learn (float64) on real data sets, and their edges.

Parity tests run both at a tight tol (1e-10 relative to |y - mean(y)|², max_iter large), where
both coordinate descents are at the optimum to far better than the 1e-4 relative tolerance on
coef_ and intercept_, and the set of exactly-zero coefficients is the same.
"""

import pickle
import warnings

import numpy as np
import pytest
from numpy.testing import assert_array_equal
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning, NotFittedError
from sklearn.linear_model import ElasticNet as SkElasticNet
from sklearn.linear_model import Lasso as SkLasso

from conftest import DEVICES
from test_linear_model import load_dataset, more_targets, relative_error

from gpuml.linear_model import ElasticNet, Lasso

TIGHT = dict(tol=1e-10, max_iter=200000)
DATASETS = ["diabetes", "breast_cancer", "cmapss_varying"]


def alpha_max(X, y, l1_ratio, sample_weight=None):
    """The smallest alpha whose solution is all zeros: max |Xcᵀ W yc| / (sum(w) l1_ratio)."""
    w = np.ones(len(y)) if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
    Xc = X - np.average(X, axis=0, weights=w)
    yc = y - np.average(y, axis=0, weights=w)
    return np.max(np.abs(Xc.T @ (w[:, None] * yc.reshape(len(y), -1)))) / (w.sum() * l1_ratio)


def assert_same_solution(ours, ref, *, tolerance=1e-4):
    """coef_ and intercept_ within `tolerance` relative, and exactly the same zero coefficients."""
    assert ours.coef_.shape == ref.coef_.shape
    assert relative_error(ours.coef_, ref.coef_) <= tolerance, (ours.coef_, ref.coef_)
    assert relative_error(ours.intercept_, ref.intercept_) <= tolerance
    assert np.shape(ours.intercept_) == np.shape(ref.intercept_)
    assert_array_equal(ours.coef_ == 0, ref.coef_ == 0)


@pytest.mark.parametrize("dataset", DATASETS)
@pytest.mark.parametrize("l1_ratio", [1.0, 0.5, 0.1])
@pytest.mark.parametrize("fraction", [0.5, 0.05, 0.005])
@pytest.mark.parametrize("device", DEVICES)
def test_matches_sklearn(dataset, l1_ratio, fraction, device):
    X, y = load_dataset(dataset)
    alpha = fraction * alpha_max(X, y, l1_ratio)
    if l1_ratio == 1.0:
        ours = Lasso(alpha, device=device, **TIGHT).fit(X, y)
        ref = SkLasso(alpha, **TIGHT).fit(X, y)
    else:
        ours = ElasticNet(alpha, l1_ratio=l1_ratio, device=device, **TIGHT).fit(X, y)
        ref = SkElasticNet(alpha, l1_ratio=l1_ratio, **TIGHT).fit(X, y)
    assert_same_solution(ours, ref)
    assert ours.coef_.dtype == np.float64
    assert ours.n_features_in_ == X.shape[1]
    assert ours.converged_ == 1 and ours.n_iter_ >= 1
    # The gap is reported as scikit-learn's (divided by n); rounding can leave it slightly negative.
    assert abs(ours.dual_gap_) <= 1e-10 * np.sum((y - y.mean()) ** 2) / len(y)


# Raw C-MAPSS without an intercept is too ill conditioned (large column offsets) for either
# coordinate descent to converge in reasonable time: it runs with the intercept only.
@pytest.mark.parametrize(
    "dataset, fit_intercept",
    [("diabetes", True), ("diabetes", False), ("breast_cancer", True), ("breast_cancer", False), ("cmapss_varying", True)],
)
@pytest.mark.parametrize("device", DEVICES)
def test_sample_weight_positive_and_no_intercept(dataset, fit_intercept, device, rng):
    X, y = load_dataset(dataset)
    weights = rng.uniform(0.1, 3.0, size=len(y))
    alpha = 0.02 * alpha_max(X, y, 0.7, weights)
    for positive in (False, True):
        params = dict(alpha=alpha, l1_ratio=0.7, fit_intercept=fit_intercept, positive=positive, **TIGHT)
        ours = ElasticNet(device=device, **params).fit(X, y, sample_weight=weights)
        ref = SkElasticNet(**params).fit(X, y, sample_weight=weights)
        assert_same_solution(ours, ref)
        if positive:
            assert np.all(ours.coef_ >= 0)
        if not fit_intercept:
            assert ours.intercept_ == 0


@pytest.mark.parametrize("device", DEVICES)
def test_weights_equal_repeated_rows(device, rng):
    X, y = load_dataset("diabetes")
    counts = rng.integers(0, 4, size=len(y))
    counts[0] = 1  # never all zeros
    weighted = Lasso(0.1, device=device, **TIGHT).fit(X, y, sample_weight=counts.astype(np.float64))
    repeated = Lasso(0.1, device=device, **TIGHT).fit(np.repeat(X, counts, axis=0), np.repeat(y, counts))
    # With weights rescaled to sum to n_samples, the data term is the weighted average of the
    # squared errors: the same objective as the repeated rows. Both at the optimum to ~1e-10.
    assert relative_error(weighted.coef_, repeated.coef_) <= 1e-6
    assert relative_error(weighted.intercept_, repeated.intercept_) <= 1e-6
    assert_array_equal(weighted.coef_ == 0, repeated.coef_ == 0)


@pytest.mark.parametrize("dataset", ["diabetes", "cmapss_varying"])
@pytest.mark.parametrize("device", DEVICES)
def test_multi_target(dataset, device, rng):
    X, y = load_dataset(dataset)
    Y = more_targets(X, y, rng)
    alpha = 0.01 * alpha_max(X, y, 0.5)
    ours = ElasticNet(alpha, l1_ratio=0.5, device=device, **TIGHT).fit(X, Y)
    ref = SkElasticNet(alpha, l1_ratio=0.5, **TIGHT).fit(X, Y)
    assert_same_solution(ours, ref)
    assert ours.coef_.shape == (Y.shape[1], X.shape[1])
    assert ours.dual_gap_.shape == (Y.shape[1],)
    # Each target is fitted separately: n_iter_ is the most sweeps any one of them took.
    single = [ElasticNet(alpha, l1_ratio=0.5, device=device, **TIGHT).fit(X, Y[:, k]) for k in range(Y.shape[1])]
    assert ours.n_iter_ == max(m.n_iter_ for m in single)
    stacked = np.stack([m.coef_ for m in single])
    assert relative_error(ours.coef_, stacked) <= 1e-9  # XᵀY column by column: summation order only
    assert ours.predict(X).shape == Y.shape


@pytest.mark.parametrize("device", DEVICES)
def test_random_selection_reaches_the_same_optimum(device, rng):
    X, y = load_dataset("breast_cancer")
    alpha = 0.05 * alpha_max(X, y, 1.0)
    seed = int(rng.integers(0, 2**31 - 1))
    cyclic = Lasso(alpha, device=device, **TIGHT).fit(X, y)
    random = Lasso(alpha, selection="random", random_state=seed, device=device, **TIGHT).fit(X, y)
    again = Lasso(alpha, selection="random", random_state=seed, device=device, **TIGHT).fit(X, y)
    assert relative_error(random.coef_, cyclic.coef_) <= 1e-4  # the same optimum within tol
    assert_array_equal(random.coef_, again.coef_)  # a seed fixes the draws


@pytest.mark.parametrize("device", DEVICES)
def test_float32_keeps_float32(device, rng):
    X, y = load_dataset("diabetes")
    ours = ElasticNet(0.01, device=device, **TIGHT).fit(X.astype(np.float32), y.astype(np.float32))
    ref = SkElasticNet(0.01, **TIGHT).fit(X, y)
    assert ours.coef_.dtype == np.float32
    assert ours.predict(X.astype(np.float32)).dtype == np.float32
    assert relative_error(ours.coef_, ref.coef_) <= 1e-3  # the float32 Gram matrix: ~1e-6 relative, conditioning


@pytest.mark.parametrize("device", DEVICES)
def test_convergence_warning_when_max_iter_is_tiny(device):
    X, y = load_dataset("diabetes")
    with pytest.warns(ConvergenceWarning, match="did not converge"):
        model = ElasticNet(1e-4, max_iter=1, tol=1e-12, device=device).fit(X, y)
    assert model.converged_ == 0 and model.n_iter_ == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        Lasso(0.1, device=device, **TIGHT).fit(X, y)


@pytest.mark.parametrize("device", DEVICES)
def test_warm_start_continues_from_the_previous_coef(device, rng):
    X, y = load_dataset("breast_cancer")
    alpha = float(rng.uniform(0.001, 0.01)) * alpha_max(X, y, 1.0)
    reference = Lasso(alpha, device=device, **TIGHT).fit(X, y)
    model = Lasso(alpha, max_iter=3, tol=1e-10, warm_start=True, device=device)
    with pytest.warns(ConvergenceWarning):
        model.fit(X, y)
    first_error = relative_error(model.coef_, reference.coef_)
    for _ in range(30):  # 3 more sweeps each time, from where the last fit stopped
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            model.fit(X, y)
    assert relative_error(model.coef_, reference.coef_) < first_error
    # From the optimum, the duality gap already meets tol: no sweep (one when rounding made that
    # gap of ~0 negative, which is not trusted).
    model.set_params(max_iter=TIGHT["max_iter"]).fit(X, y)
    model.fit(X, y)
    assert model.n_iter_ <= 1 and model.converged_ == 1
    assert relative_error(model.coef_, reference.coef_) <= 1e-6
    # A previous coef_ of another shape is a ValueError, as scikit-learn's.
    with pytest.raises(ValueError):
        model.fit(X[:, :-1], y)


@pytest.mark.parametrize(
    "params",
    [
        dict(alpha=-1.0),
        dict(alpha=np.nan),
        dict(alpha="1"),
        dict(l1_ratio=1.5),
        dict(l1_ratio=-0.1),
        dict(max_iter=0),
        dict(max_iter=1.5),
        dict(tol=-1.0),
        dict(selection="shuffle"),
        dict(positive="yes"),
        dict(fit_intercept=None),
        dict(warm_start="no"),
    ],
)
def test_bad_parameters_raise_value_error(params):
    X, y = load_dataset("diabetes")
    with pytest.raises(ValueError):
        ElasticNet(**params).fit(X, y)


def test_bad_data_raises_value_error(rng):
    X, y = load_dataset("diabetes")
    bad = X.copy()
    bad[rng.integers(len(X)), rng.integers(X.shape[1])] = np.nan
    with pytest.raises(ValueError):
        Lasso().fit(bad, y)
    with pytest.raises(ValueError):
        Lasso().fit(X, y[:-1])
    with pytest.raises(ValueError):
        Lasso().fit(X, y, sample_weight=-np.ones(len(y)))
    model = Lasso(0.1).fit(X, y)
    with pytest.raises(ValueError):
        model.predict(X[:, :-1])


def test_not_fitted_and_params():
    with pytest.raises(NotFittedError):
        Lasso().predict(np.ones((3, 2)))
    assert "l1_ratio" not in Lasso().get_params()
    assert ElasticNet(l1_ratio=0.3).get_params()["l1_ratio"] == 0.3


@pytest.mark.parametrize("make", [Lasso, ElasticNet])
@pytest.mark.parametrize("device", DEVICES)
def test_pickle_round_trip(make, device, rng):
    X, y = load_dataset("diabetes")
    Y = more_targets(X, y, rng, n_targets=2)
    model = make(0.05, device=device).fit(X, Y)
    back = pickle.loads(pickle.dumps(model))
    assert_array_equal(back.coef_, model.coef_)
    assert_array_equal(back.dual_gap_, model.dual_gap_)
    assert back.n_iter_ == model.n_iter_
    assert_array_equal(back.predict(X), model.predict(X))
    assert_array_equal(clone(model).fit(X, Y).coef_, model.coef_)

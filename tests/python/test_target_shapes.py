"""Shapes of coef_, intercept_, predictions (and the coordinate-descent diagnostics) for every form
of y, exactly as scikit-learn 1.9.1 gives them (issue 22, item 10). scikit-learn's rules:
- Ridge, Lasso, ElasticNet fit y of shape (n, 1) as the 1-d y: coef_ (n_features,), predictions
  (n,), dual_gap_ a scalar, but intercept_ of shape (1,) (with fit_intercept);
- LinearRegression keeps the column: coef_ (1, n_features), intercept_ (1,), predictions (n, 1);
- without fit_intercept intercept_ is the float 0.0, whatever the shape of y.
Values are compared with scikit-learn's on fresh random data (seed printed; GPUML_TEST_SEED)."""

import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose
from sklearn import linear_model as sk

from conftest import DEVICES

from gpuml import linear_model as ours

TARGETS = {"1d": lambda y: y[:, 0], "column": lambda y: y[:, :1], "two": lambda y: y}
ESTIMATORS = {
    "LinearRegression": {},
    "Ridge": {"alpha": 0.5},
    "Lasso": {"alpha": 0.01, "tol": 1e-12, "max_iter": 100000},
    "ElasticNet": {"alpha": 0.01, "tol": 1e-12, "max_iter": 100000},
}


def kind_of(value):
    """What a fitted attribute is: a NumPy array and its shape, or a scalar."""
    return ("array", np.shape(value)) if isinstance(value, np.ndarray) else ("scalar", ())


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("target", sorted(TARGETS))
@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_shapes_and_values_match_scikit_learn(name, target, fit_intercept, device, rng):
    X = rng.normal(size=(80, 5)) * rng.uniform(0.5, 3.0, size=5) + rng.normal(size=5)
    Y = X @ rng.normal(size=(5, 2)) + rng.normal(size=2) + 0.1 * rng.normal(size=(80, 2))
    y = TARGETS[target](Y)
    params = dict(ESTIMATORS[name], fit_intercept=fit_intercept)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scikit-learn's ConvergenceWarning at tol=1e-12
        theirs = getattr(sk, name)(**params).fit(X, y)
        mine = getattr(ours, name)(**params, device=device).fit(X, y)

    attributes = ["coef_", "intercept_"] + (["dual_gap_"] if name in ("Lasso", "ElasticNet") and target != "two" else [])
    for attribute in attributes:
        assert kind_of(getattr(mine, attribute)) == kind_of(getattr(theirs, attribute)), attribute
    assert np.shape(mine.predict(X)) == np.shape(theirs.predict(X))
    if name in ("Lasso", "ElasticNet") and target != "two":
        assert isinstance(mine.n_iter_, int) and isinstance(theirs.n_iter_, int)

    # Exact solvers agree to rounding; coordinate descent at tol=1e-12 to its (tiny) duality gap.
    rtol = 1e-8 if name in ("LinearRegression", "Ridge") else 1e-6
    scale = np.max(np.abs(theirs.predict(X)))
    assert_allclose(mine.coef_, theirs.coef_, rtol=rtol, atol=rtol * np.max(np.abs(theirs.coef_)))
    assert_allclose(mine.intercept_, theirs.intercept_, rtol=rtol, atol=rtol * scale)
    assert_allclose(mine.predict(X), theirs.predict(X), rtol=rtol, atol=rtol * scale)

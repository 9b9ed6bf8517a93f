"""NaN and infinity in float parameters (issue 22, item 10): a ValueError that names the parameter,
never "Out of range float values are not JSON compliant" from serializing the parameters for the C
ABI, nor the C side's "params are not valid JSON"."""

import inspect
import warnings

import numpy as np
import pytest

from gpuml.cluster import KMeans
from gpuml.decomposition import PCA, TruncatedSVD
from gpuml.ensemble import RandomForestClassifier, RandomForestRegressor
from gpuml.graph import pagerank
from gpuml.linear_model import ElasticNet, Lasso, LinearRegression, LogisticRegression, Ridge

ESTIMATORS = [LinearRegression, Ridge, Lasso, ElasticNet, LogisticRegression, KMeans, PCA, TruncatedSVD,
              RandomForestClassifier, RandomForestRegressor]
NONFINITE = [np.nan, np.inf, -np.inf]

# The parameters that take floats, and the non-finite values that are meaningful (accepted).
FLOAT_PARAMS = {
    Ridge: ["alpha"],
    Lasso: ["alpha", "tol"],
    ElasticNet: ["alpha", "l1_ratio", "tol"],
    LogisticRegression: ["C", "l1_ratio", "tol"],
    KMeans: ["tol"],
    PCA: ["n_components", "tol"],
    TruncatedSVD: ["tol"],
    RandomForestClassifier: ["min_samples_split", "min_samples_leaf", "max_features", "min_impurity_decrease",
                             "max_samples"],
    RandomForestRegressor: ["min_samples_split", "min_samples_leaf", "max_features", "min_impurity_decrease",
                            "max_samples"],
}
ACCEPTED = {
    (LogisticRegression, "C", np.inf),  # no penalty, as scikit-learn
    (PCA, "tol", np.inf),  # unused (accepted for compatibility), as scikit-learn accepts it
    (TruncatedSVD, "tol", np.inf),
}


def fit(est, rng):
    X = rng.normal(size=(40, 4))
    if isinstance(est, (LogisticRegression, RandomForestClassifier)):
        return est.fit(X, np.arange(40) % 2)
    if isinstance(est, (KMeans, PCA, TruncatedSVD)):
        return est.fit(X)
    return est.fit(X, rng.normal(size=40))


@pytest.mark.parametrize("Estimator", ESTIMATORS, ids=lambda c: c.__name__)
def test_nonfinite_values_of_any_parameter_never_reach_json(Estimator, rng):
    for name in inspect.signature(Estimator.__init__).parameters:
        if name in ("self", "device"):
            continue
        for value in NONFINITE:
            est = Estimator(**{name: value}, device="cpu")
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    fit(est, rng)
                except ValueError as e:
                    assert "JSON" not in str(e), f"{Estimator.__name__}({name}={value}): {e}"


@pytest.mark.parametrize("Estimator", sorted(FLOAT_PARAMS, key=lambda c: c.__name__), ids=lambda c: c.__name__)
def test_nonfinite_float_parameters_are_named(Estimator, rng):
    for name in FLOAT_PARAMS[Estimator]:
        for value in NONFINITE:
            if (Estimator, name, value) in ACCEPTED:
                continue
            with pytest.raises(ValueError, match=name) as error:
                fit(Estimator(**{name: value}, device="cpu"), rng)
            assert "JSON" not in str(error.value)


@pytest.mark.parametrize("name", ["alpha", "tol", "max_iter"])
def test_pagerank_nonfinite_parameters_are_named(name):
    src, dst = np.array([0, 1, 2]), np.array([1, 2, 0])
    for value in NONFINITE:
        with pytest.raises(ValueError, match=f"{name} must") as error:
            pagerank((src, dst), **{name: value}, device="cpu")
        assert "JSON" not in str(error.value)


def test_pagerank_parameter_types():
    src, dst = np.array([0, 1, 2]), np.array([1, 2, 0])
    with pytest.raises(ValueError, match="max_iter"):
        pagerank((src, dst), max_iter=2.5, device="cpu")
    with pytest.raises(ValueError, match="tol"):
        pagerank((src, dst), tol=-1e-6, device="cpu")
    with pytest.raises(ValueError, match="alpha"):
        pagerank((src, dst), alpha="0.5", device="cpu")


def test_warm_start_from_nonfinite_coef_is_named(rng):
    est = ElasticNet(warm_start=True, device="cpu")
    est.coef_ = np.array([1.0, np.nan, 0.0, 2.0])
    with pytest.raises(ValueError, match="coef_"):
        fit(est, rng)

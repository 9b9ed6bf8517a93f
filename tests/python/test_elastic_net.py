"""Lasso and ElasticNet against scikit-learn (float64) on real data sets, and their edges.

Parity tests run both at a tight tol (1e-10 relative to |y - mean(y)|², max_iter large), where
both coordinate descents are at the optimum to far better than the 1e-4 relative tolerance on
coef_ and intercept_, and the set of exactly-zero coefficients is the same.
"""

import inspect
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


# ---- scikit-learn 1.9's parameters and rules ------------------------------------------------------


@pytest.mark.parametrize("ours, theirs", [(Lasso, SkLasso), (ElasticNet, SkElasticNet)])
def test_constructor_has_sklearns_parameters_and_defaults(ours, theirs):
    signature = inspect.signature(ours)
    names = list(signature.parameters)
    assert names.pop() == "device"  # gpuml's one addition, last
    sk_signature = inspect.signature(theirs)
    assert names == list(sk_signature.parameters)  # every name, in scikit-learn's order
    for name in names:  # the same default and the same positional / keyword-only split
        assert signature.parameters[name].default == sk_signature.parameters[name].default, name
        assert signature.parameters[name].kind == sk_signature.parameters[name].kind, name
    assert list(inspect.signature(ours.fit).parameters) == list(inspect.signature(theirs.fit).parameters)


def fit_outcome(estimator, X, y, **fit_params):
    """(the error's type name and message or None, the warnings other than ConvergenceWarning) of a fit."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            estimator.fit(X, y, **fit_params)
            error = None
        except Exception as e:  # noqa: BLE001  (compared with what scikit-learn raises)
            error = (type(e).__name__, str(e))
    warned = [(w.category.__name__, str(w.message)) for w in caught if not issubclass(w.category, ConvergenceWarning)]
    return error, warned


ENET_RULE_CASES = [
    dict(alpha=0),  # scikit-learn's UserWarning, then a fit
    dict(alpha=-1.0),
    dict(alpha=np.nan),
    dict(alpha="1"),
    dict(l1_ratio=1.5),
    dict(max_iter=0),
    dict(max_iter=1.5),
    dict(tol=-1.0),
    dict(selection="shuffle"),
    dict(positive="yes"),
    dict(fit_intercept=None),
    dict(warm_start="no"),
    dict(copy_X="yes"),
    dict(copy_X=False),
    dict(precompute=True),
    dict(precompute="auto"),  # not one of ElasticNet's values (only of enet_path's)
    dict(precompute=1),
    dict(random_state="a"),
]


@pytest.mark.parametrize("make, sk_make", [(Lasso, SkLasso), (ElasticNet, SkElasticNet)])
@pytest.mark.parametrize("params", ENET_RULE_CASES, ids=[repr(p) for p in ENET_RULE_CASES])
def test_parameter_rules_warn_and_raise_as_sklearn(make, sk_make, params, rng):
    if make is Lasso and "l1_ratio" in params:
        pytest.skip("Lasso has no l1_ratio")
    X = rng.standard_normal((40, 5))
    y = X @ rng.standard_normal(5) + rng.standard_normal(40)
    assert fit_outcome(make(device="cpu", **params), X, y) == fit_outcome(sk_make(**params), X, y)


@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("device", DEVICES)
def test_precomputed_gram_matrix_is_checked_and_gives_the_same_fit(fit_intercept, weighted, device, rng):
    X, y = load_dataset("diabetes")
    weights = rng.uniform(0.1, 3.0, size=len(y)) if weighted else None
    w = np.ones(len(y)) if weights is None else weights * len(y) / weights.sum()
    Xc = X - np.average(X, axis=0, weights=w)  # centered: scikit-learn uses a Gram only of centered X
    gram = (Xc * w[:, None]).T @ Xc
    params = dict(alpha=0.01, fit_intercept=fit_intercept, **TIGHT)
    plain = ElasticNet(device=device, **params).fit(Xc, y, sample_weight=weights)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a Gram of centered X: no warning
        given = ElasticNet(precompute=gram, device=device, **params).fit(Xc, y, sample_weight=weights)
    assert_array_equal(given.coef_, plain.coef_)  # a correct Gram changes nothing (gpuml forms its own)
    ref = SkElasticNet(precompute=gram, **params).fit(Xc, y, sample_weight=weights)
    assert_same_solution(given, ref)
    # A wrong Gram fails scikit-learn's check of one element, with its message; one of another
    # shape is a ValueError too.
    garbage = rng.standard_normal(X.shape)
    wrong = garbage.T @ garbage
    for bad in (wrong, gram[:-1, :-1]):
        ours = fit_outcome(ElasticNet(precompute=bad, device=device, **params), Xc, y, sample_weight=weights)
        assert ours[0][0] == "ValueError", ours
    ours = fit_outcome(ElasticNet(precompute=wrong, device=device, **params), Xc, y, sample_weight=weights)
    theirs = fit_outcome(SkElasticNet(precompute=wrong, **params), Xc, y, sample_weight=weights)
    # The same message up to the element X gives, whose last digits depend on the summation order.
    assert ours[0][0] == theirs[0][0] and ours[0][1].split(" we computed")[0] == theirs[0][1].split(" we computed")[0]
    # A Gram of uncentered X with fit_intercept: scikit-learn warns and recomputes it.
    raw_gram = X.T @ X
    ours = fit_outcome(ElasticNet(precompute=raw_gram, device=device, **params), X, y)
    assert ours == fit_outcome(SkElasticNet(precompute=raw_gram, **params), X, y)


@pytest.mark.parametrize("device", DEVICES)
def test_check_input_false_wants_what_sklearn_wants(device, rng):
    X = np.asfortranarray(rng.standard_normal((30, 4)))
    y = X @ rng.standard_normal(4) + 0.1 * rng.standard_normal(30)
    checked = ElasticNet(0.01, device=device).fit(X, y)
    unchecked = ElasticNet(0.01, device=device).fit(X, y, check_input=False)
    assert_array_equal(unchecked.coef_, checked.coef_)  # gpuml checks anyway: the same fit
    # scikit-learn's coordinate descent reads X in Fortran order when it skips the checks; C order
    # is its ValueError.
    with pytest.raises(ValueError):
        SkElasticNet(0.01).fit(np.ascontiguousarray(X), y, check_input=False)
    with pytest.raises(ValueError, match="Fortran"):
        ElasticNet(0.01, device=device).fit(np.ascontiguousarray(X), y, check_input=False)
    # With weights scikit-learn orders X itself: any order fits.
    weights = rng.uniform(0.5, 2.0, size=30)
    weighted = ElasticNet(0.01, device=device).fit(np.ascontiguousarray(X), y, sample_weight=weights, check_input=False)
    ref = SkElasticNet(0.01).fit(np.ascontiguousarray(X), y, sample_weight=weights, check_input=False)
    assert_same_solution(weighted, ref, tolerance=1e-3)  # both at tol=1e-4 (duality gap): ~1e-4 relative apart


@pytest.mark.parametrize("device", DEVICES)
def test_sparse_coef_is_coef_as_csr(device, rng):
    X = rng.standard_normal((50, 6))
    y = X[:, 0] * 3.0 + 0.1 * rng.standard_normal(50)
    model = Lasso(0.5, device=device).fit(X, y)
    ref = SkLasso(0.5).fit(X, y)
    assert type(model.sparse_coef_) is type(ref.sparse_coef_)
    assert_array_equal(model.sparse_coef_.toarray(), np.atleast_2d(model.coef_))

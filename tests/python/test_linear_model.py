"""gpuml.linear_model.LinearRegression and Ridge against scikit-learn, on every available device.

Real data sets (diabetes, breast cancer, C-MAPSS FD001) with freshly drawn sample weights, extra
targets and penalties (the seed is printed; GPUML_TEST_SEED replays it). Coefficients are compared
with a norm-based relative error, ||ours - ref|| / ||ref||; tolerances are written beside each
assertion.

scikit-learn's LinearRegression treats singular values below tol * s_max as zero (tol=1e-6 by
default, passed to lstsq as cond); gpuml uses LAPACK's default cutoff eps * max(n, d) * s_max. The
reference is therefore scikit-learn's LinearRegression with tol set to gpuml's cutoff: the same
minimum-norm problem. (On raw C-MAPSS without an intercept, tol=1e-6 would also drop three genuine
directions of X, whose singular values are ~1e-8 * s_max.)
"""

import inspect
import pickle
import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.base import clone
from sklearn.datasets import load_breast_cancer, load_diabetes
from sklearn.exceptions import ConvergenceWarning, NotFittedError
from sklearn.linear_model import LinearRegression as SkLinearRegression
from sklearn.linear_model import Ridge as SkRidge
from sklearn.preprocessing import StandardScaler

from conftest import DEVICES, cuda_or_skip

from gpuml._base import EstimatorHandle
from gpuml._context import get_context
from gpuml.linear_model import LinearRegression, Ridge

ALGORITHMS = ["auto", "eig", "qr", "svd"]
SOLVERS = ["auto", "cholesky", "svd"]

# ---- data -----------------------------------------------------------------------------------


def load_cmapss():
    from cmapss import load_cmapss_fd001

    try:
        X, y, _, _ = load_cmapss_fd001()
    except FileNotFoundError as e:
        pytest.skip(f"C-MAPSS data set missing: {e}")
    return X, y


def load_dataset(name):
    """(X float64, y float64) of a named real data set.

    "cmapss": the 24 raw columns (7 are constant: centered X has rank 17, uncentered rank 18);
    "cmapss_varying": the 17 columns that vary (full rank).
    """
    if name == "diabetes":
        data = load_diabetes()
        return data.data.astype(np.float64), data.target.astype(np.float64)
    if name == "breast_cancer":
        data = load_breast_cancer()
        return StandardScaler().fit_transform(data.data), data.target.astype(np.float64)
    X, y = load_cmapss()
    if name == "cmapss_varying":
        X = np.ascontiguousarray(X[:, np.ptp(X, axis=0) > 0])
    return X, y


FULL_RANK_DATASETS = ["diabetes", "breast_cancer", "cmapss_varying"]


def relative_error(ours, ref):
    """||ours - ref|| / ||ref|| (Frobenius), or ||ours|| when ref is exactly zero."""
    ours, ref = np.asarray(ours, dtype=np.float64), np.asarray(ref, dtype=np.float64)
    assert ours.shape == ref.shape, f"shapes differ: {ours.shape} vs {ref.shape}"
    scale = np.linalg.norm(ref)
    difference = np.linalg.norm(ours - ref)
    return difference / scale if scale > 0 else difference


def gpuml_cutoff(X):
    """gpuml's numerical relative singular-value cutoff (LAPACK's default), for the scikit-learn
    reference: gpuml's LinearRegression(tol=0) applies it alone (scikit-learn 1.9's default
    tol=1e-6, which gpuml honours too, would drop the small singular values of raw C-MAPSS)."""
    return np.finfo(X.dtype).eps * max(X.shape)


def sk_linear_regression(X, y, *, fit_intercept=True, sample_weight=None):
    reference = SkLinearRegression(fit_intercept=fit_intercept, tol=gpuml_cutoff(X))
    return reference.fit(X, y, sample_weight=sample_weight)


def more_targets(X, y, rng, n_targets=3):
    """y and n_targets - 1 more targets: random linear functions of X plus noise."""
    columns = [y]
    for _ in range(n_targets - 1):
        weights = rng.normal(size=X.shape[1])
        signal = X @ weights
        columns.append(signal + rng.normal(scale=0.1 * signal.std() + 1e-3, size=X.shape[0]) + rng.normal(scale=10))
    return np.column_stack(columns)


def intercept_error(ours, ref, X, y, sample_weight=None):
    """|ours.intercept_ - ref.intercept_| against the terms it is the difference of, |y_mean| +
    |x_mean| . |coef|: an intercept that nearly cancels (ref ~1e-4 of those terms) keeps only their
    absolute error, so its own relative error says nothing."""
    w = None if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
    x_mean = np.average(X, axis=0, weights=w)
    y_mean = np.atleast_1d(np.average(np.asarray(y, dtype=np.float64).reshape(len(X), -1), axis=0, weights=w))
    coef = np.atleast_2d(ref.coef_)
    scale = np.linalg.norm(np.abs(y_mean) + np.abs(coef) @ np.abs(x_mean))
    difference = np.linalg.norm(np.atleast_1d(ours.intercept_) - np.atleast_1d(ref.intercept_))
    return difference / scale


def assert_matches(ours, ref, tolerance, *, fit_intercept=True):
    assert relative_error(ours.coef_, ref.coef_) <= tolerance
    if fit_intercept:
        assert relative_error(ours.intercept_, ref.intercept_) <= tolerance
    else:
        assert np.all(np.asarray(ours.intercept_) == 0)  # no intercept is exactly 0
    assert np.shape(ours.intercept_) == np.shape(ref.intercept_)


# ---- LinearRegression: parity with scikit-learn ----------------------------------------------------


@pytest.mark.parametrize("dataset", FULL_RANK_DATASETS)
@pytest.mark.parametrize("algorithm", ALGORITHMS)
@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("weighted", [False, True])
def test_linear_regression_matches_sklearn(dataset, algorithm, fit_intercept, weighted, device, rng):
    X, y = load_dataset(dataset)
    if dataset == "cmapss_varying" and algorithm == "eig" and not fit_intercept:
        pytest.skip(
            "uncentered raw C-MAPSS has s_min/s_max ~2e-8, so X^T X has condition number ~2e15: the normal "
            "equations keep no correct digit (this case is for 'auto', which must leave them)"
        )
    weights = rng.uniform(0.1, 3.0, size=X.shape[0]) if weighted else None
    ours = LinearRegression(tol=0, fit_intercept=fit_intercept, algorithm=algorithm, device=device).fit(
        X, y, sample_weight=weights
    )
    ref = sk_linear_regression(X, y, fit_intercept=fit_intercept, sample_weight=weights)

    # The brief's bound. Float64 with s_max/s_min <= 1e5 (C-MAPSS, centered): the normal equations
    # lose ~eps * 1e10 ~ 2e-6, QR and SVD ~eps * 1e5.
    assert_matches(ours, ref, 1e-4, fit_intercept=fit_intercept)
    assert isinstance(ours.intercept_, float)
    assert ours.coef_.shape == (X.shape[1],) and ours.coef_.dtype == np.float64
    assert ours.rank_ == ref.rank_ == X.shape[1]
    assert ours.n_features_in_ == X.shape[1]
    assert ours.singular_values_.shape == (min(X.shape),)
    assert np.all(np.diff(ours.singular_values_) <= 0)  # descending
    s_max = ref.singular_[0]
    # From X^T X ("eig" and its "auto"), small singular values carry absolute errors ~sqrt(eps d) s_max.
    atol = 1e-6 * s_max if algorithm in ("eig", "auto") else 1e-10 * s_max
    assert_allclose(ours.singular_values_, ref.singular_, rtol=1e-8, atol=atol)
    assert ours.singular_ is ours.singular_values_

    prediction = ours.predict(X)
    assert prediction.shape == (X.shape[0],) and prediction.dtype == np.float64
    expected = ref.predict(X)
    assert relative_error(prediction, expected) <= 1e-6  # predictions are well conditioned
    assert abs(ours.score(X, y) - ref.score(X, y)) <= 1e-6  # R² from near-identical predictions


@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("weighted", [False, True])
def test_rank_deficient_cmapss(fit_intercept, weighted, device, rng):
    """Constant columns: "svd" and "auto" give scikit-learn's minimum-norm answer; "eig"/"qr" refuse."""
    X, y = load_dataset("cmapss")
    weights = rng.uniform(0.1, 3.0, size=X.shape[0]) if weighted else None
    ref = sk_linear_regression(X, y, fit_intercept=fit_intercept, sample_weight=weights)
    assert ref.rank_ == (17 if fit_intercept else 18)  # the data set's: 7 constant columns
    for algorithm in ("svd", "auto"):
        ours = LinearRegression(tol=0, fit_intercept=fit_intercept, algorithm=algorithm, device=device).fit(
            X, y, sample_weight=weights
        )
        # The minimum-norm solution is well defined: the kept singular values stay above 1e-8 s_max.
        assert_matches(ours, ref, 1e-4, fit_intercept=fit_intercept)
        assert ours.rank_ == ref.rank_, algorithm
        # Predictions do not depend on the null space.
        assert relative_error(ours.predict(X), ref.predict(X)) <= 1e-6
    for algorithm in ("eig", "qr"):
        with pytest.raises(ValueError, match="rank"):
            LinearRegression(tol=0, fit_intercept=fit_intercept, algorithm=algorithm, device=device).fit(
                X, y, sample_weight=weights
            )


@pytest.mark.parametrize("algorithm", ["auto", "svd"])
def test_fewer_samples_than_features_gives_minimum_norm(algorithm, device, rng):
    n, d = int(rng.integers(5, 30)), int(rng.integers(35, 60))
    X = rng.normal(size=(n, d))
    y = rng.normal(size=n)
    ours = LinearRegression(tol=0, algorithm=algorithm, device=device).fit(X, y)
    ref = sk_linear_regression(X, y)
    assert ours.rank_ == ref.rank_ == n - 1  # centering removes one dimension
    assert ours.singular_values_.shape == (n,)
    assert_matches(ours, ref, 1e-6)  # random Gaussian X is well conditioned in its row space


@pytest.mark.parametrize("algorithm", ALGORITHMS)
@pytest.mark.parametrize("dataset", ["diabetes", "cmapss_varying"])
def test_linear_regression_multi_target(dataset, algorithm, device, rng):
    X, y = load_dataset(dataset)
    Y = more_targets(X, y, rng)
    weights = rng.uniform(0.1, 3.0, size=X.shape[0])
    ours = LinearRegression(tol=0, algorithm=algorithm, device=device).fit(X, Y, sample_weight=weights)
    ref = sk_linear_regression(X, Y, sample_weight=weights)
    assert ours.coef_.shape == (3, X.shape[1]) and ours.intercept_.shape == (3,)
    assert_matches(ours, ref, 1e-4)  # as the single-target test
    assert ours.predict(X).shape == (X.shape[0], 3)

    # One target as a column keeps the 2-d shapes, as scikit-learn.
    column = LinearRegression(tol=0, algorithm=algorithm, device=device).fit(X, y[:, None])
    assert column.coef_.shape == (1, X.shape[1]) and column.intercept_.shape == (1,)
    assert column.predict(X).shape == (X.shape[0], 1)


def test_float32_keeps_float32(device, rng):
    X64, y64 = load_dataset("diabetes")
    X, y = X64.astype(np.float32), y64.astype(np.float32)
    weights = rng.uniform(0.1, 3.0, size=X.shape[0]).astype(np.float32)
    # The reference solves the same rounded problem in float64.
    ref = sk_linear_regression(X.astype(np.float64), y.astype(np.float64), sample_weight=weights.astype(np.float64))
    for algorithm in ALGORITHMS:
        ours = LinearRegression(tol=0, algorithm=algorithm, device=device).fit(X, y, sample_weight=weights)
        assert ours.coef_.dtype == np.float32
        assert ours.singular_values_.dtype == np.float32
        assert ours.predict(X).dtype == np.float32
        # diabetes: s_max/s_min ~ 43, so X^T X has condition ~2e3; float32 eps 1.2e-7 -> ~2e-4 at worst.
        assert relative_error(ours.coef_, ref.coef_) <= 1e-3, algorithm
        assert relative_error(ours.intercept_, ref.intercept_) <= 1e-5, algorithm  # ~ the mean of y
    for solver in SOLVERS:
        ours = Ridge(alpha=0.5, solver=solver, device=device).fit(X, y)
        ridge_ref = SkRidge(alpha=0.5, solver="svd").fit(X.astype(np.float64), y.astype(np.float64))
        assert ours.coef_.dtype == np.float32 and ours.predict(X).dtype == np.float32
        assert relative_error(ours.coef_, ridge_ref.coef_) <= 1e-3, solver  # as above; alpha only helps


def test_integer_X_is_float64(device, rng):
    X = rng.integers(-20, 20, size=(200, 4))
    y = X @ rng.normal(size=4) + rng.normal(size=200)
    ours = LinearRegression(tol=0, device=device).fit(X, y)
    ref = sk_linear_regression(X.astype(np.float64), y)
    assert ours.coef_.dtype == np.float64
    assert_matches(ours, ref, 1e-8)  # small, well-conditioned integer design


# ---- Ridge: parity with scikit-learn ------------------------------------------------------------------


@pytest.mark.parametrize("dataset", ["diabetes", "breast_cancer", "cmapss"])
@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("weighted", [False, True])
def test_ridge_matches_sklearn(dataset, solver, fit_intercept, weighted, device, rng):
    X, y = load_dataset(dataset)
    if dataset == "cmapss" and not fit_intercept and solver != "svd":
        pytest.skip(
            "uncentered raw C-MAPSS: X^T X + alpha I has condition number ~3e12, so any Cholesky answer "
            "(gpuml's or scikit-learn's) is good to ~1e-3 only; solver='svd' covers this case"
        )
    alpha = float(10 ** rng.uniform(-2, 2))
    weights = rng.uniform(0.1, 3.0, size=X.shape[0]) if weighted else None
    ours = Ridge(alpha=alpha, fit_intercept=fit_intercept, solver=solver, device=device).fit(
        X, y, sample_weight=weights
    )
    ref = SkRidge(alpha=alpha, fit_intercept=fit_intercept, solver=solver).fit(X, y, sample_weight=weights)
    # The brief's bound; X^T X + alpha I has condition <= ~2e7 here (centered C-MAPSS), so ~eps * 2e7.
    assert_matches(ours, ref, 1e-4, fit_intercept=fit_intercept)
    assert isinstance(ours.intercept_, float)
    assert ours.coef_.shape == (X.shape[1],)
    assert ours.n_features_in_ == X.shape[1]
    assert relative_error(ours.predict(X), ref.predict(X)) <= 1e-6


@pytest.mark.parametrize("solver", SOLVERS)
def test_ridge_alpha_per_target(solver, device, rng):
    X, y = load_dataset("breast_cancer")
    Y = more_targets(X, y, rng, n_targets=3)
    alphas = 10 ** rng.uniform(-2, 2, size=3)
    weights = rng.uniform(0.1, 3.0, size=X.shape[0])
    ours = Ridge(alpha=alphas, solver=solver, device=device).fit(X, Y, sample_weight=weights)
    ref = SkRidge(alpha=alphas, solver=solver).fit(X, Y, sample_weight=weights)
    assert ours.coef_.shape == (3, X.shape[1]) and ours.intercept_.shape == (3,)
    assert_matches(ours, ref, 1e-4)  # as test_ridge_matches_sklearn
    # Each target's answer is the single-target answer with its own alpha.
    for target in range(3):
        alone = Ridge(alpha=float(alphas[target]), solver=solver, device=device).fit(
            X, Y[:, target], sample_weight=weights
        )
        assert relative_error(ours.coef_[target], alone.coef_) <= 1e-10  # same arithmetic, one column
    # A list works as well as an array, and one alpha in a list is shared by every target.
    assert_allclose(Ridge(alpha=list(alphas), solver=solver, device=device).fit(X, Y).coef_,
                    SkRidge(alpha=alphas, solver=solver).fit(X, Y).coef_, rtol=1e-6, atol=1e-9)
    shared = Ridge(alpha=[float(alphas[0])], solver=solver, device=device).fit(X, Y)
    assert relative_error(shared.coef_, SkRidge(alpha=alphas[0], solver=solver).fit(X, Y).coef_) <= 1e-4


def test_ridge_alpha_zero_equals_linear_regression(device, rng):
    X, y = load_dataset("diabetes")
    weights = rng.uniform(0.1, 3.0, size=X.shape[0])
    ols = LinearRegression(tol=0, algorithm="svd", device=device).fit(X, y, sample_weight=weights)
    for solver in SOLVERS:
        ridge = Ridge(alpha=0.0, solver=solver, device=device).fit(X, y, sample_weight=weights)
        assert relative_error(ridge.coef_, ols.coef_) <= 1e-10  # diabetes: condition ~2e3 in X^T X


# ---- scikit-learn 1.9's parameters ---------------------------------------------------------------


@pytest.mark.parametrize("gpuml_class, sklearn_class", [(LinearRegression, SkLinearRegression), (Ridge, SkRidge)])
def test_signature_is_sklearns(gpuml_class, sklearn_class):
    """Every constructor parameter of scikit-learn 1.9's class, same names, defaults and keyword-only
    split, in its order; gpuml's own (LinearRegression's algorithm, device) come after."""
    ours = list(inspect.signature(gpuml_class).parameters.values())
    theirs = list(inspect.signature(sklearn_class).parameters.values())
    assert ours[: len(theirs)] == theirs
    assert [p.name for p in ours[len(theirs):]] == (["algorithm", "device"] if gpuml_class is LinearRegression
                                                     else ["device"])


@pytest.mark.parametrize("solver", ["auto", "svd", "cholesky", "lsqr", "sparse_cg", "sag", "saga"])
def test_ridge_every_solver_name_solves_the_same_objective(solver, device, rng):
    """gpuml solves Ridge's objective exactly whatever the solver name: the answer agrees with
    scikit-learn's solver within that solver's tolerance (here tight: tol=1e-10, many iterations)."""
    X, y = load_dataset("diabetes")
    Y = more_targets(X, y, rng, n_targets=2)
    alpha = float(10 ** rng.uniform(-2, 1))
    params = dict(alpha=alpha, solver=solver, tol=1e-10, max_iter=100_000, random_state=0)
    ours = Ridge(**params, device=device).fit(X, Y)
    ref = SkRidge(**params).fit(X, Y)
    # sag/saga stop on the relative change of coef (1e-10): the coefficients agree to ~1e-6.
    assert_matches(ours, ref, 1e-5)
    assert ours.solver_ == ref.solver_
    assert ours.n_iter_ is None  # direct solves (scikit-learn's lsqr, sag and saga would count)


@pytest.mark.parametrize("make", [lambda d: LinearRegression(device=d), lambda d: Ridge(device=d)])
def test_intercept_shapes_and_types_are_sklearns(make, device, rng):
    """A 1-d y's intercept_ is a NumPy scalar of X's dtype, as scikit-learn's (before: a Python
    float, which has no .shape); a column y gives (1,), two targets (2,)."""
    n, d = int(rng.integers(5, 50)), int(rng.integers(1, 12))
    X, y = rng.normal(size=(n, d)), rng.normal(size=n)
    for dtype in (np.float64, np.float32):
        ours = make(device).fit(X.astype(dtype), y.astype(dtype))
        assert ours.intercept_.shape == () and ours.intercept_.dtype == dtype
        assert isinstance(ours.intercept_, np.generic)
    assert isinstance(make(device).fit(X, y).intercept_, float)
    assert make(device).fit(X, y[:, None]).intercept_.shape == (1,)
    assert make(device).fit(X, np.c_[y, 1 + y]).intercept_.shape == (2,)


def binding_problem(rng, n, d, n_targets=1):
    """Random X and y whose unconstrained least-squares coefficients include clearly negative ones
    for every target (so that positive=True binds), with an offset and an intercept."""
    X = rng.normal(size=(n, d)) * rng.uniform(0.5, 2.0, size=d) + rng.uniform(-3, 3, size=d)
    coef = rng.uniform(-3, 3, size=(d, n_targets))
    coef[rng.integers(d), :] = -rng.uniform(1, 3, size=n_targets)  # at least one clearly negative
    Y = X @ coef + rng.uniform(-5, 5, size=n_targets) + 0.1 * rng.normal(size=(n, n_targets))
    return X, (Y[:, 0] if n_targets == 1 else Y)


@pytest.mark.parametrize("n_targets", [1, 3])
@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("weighted", [False, True])
def test_linear_regression_positive_matches_nnls(n_targets, fit_intercept, weighted, device, rng):
    n, d = int(rng.integers(50, 300)), int(rng.integers(3, 10))
    X, y = binding_problem(rng, n, d, n_targets)
    weights = rng.uniform(0.1, 3.0, size=n) if weighted else None
    ours = LinearRegression(positive=True, fit_intercept=fit_intercept, device=device).fit(X, y, sample_weight=weights)
    ref = SkLinearRegression(positive=True, fit_intercept=fit_intercept).fit(X, y, sample_weight=weights)
    free = SkLinearRegression(fit_intercept=fit_intercept).fit(X, y, sample_weight=weights)
    # The constraint binds: the unconstrained answer has negative coefficients, the constrained zeros.
    assert np.min(free.coef_) < 0 and np.any(ref.coef_ == 0)
    assert np.min(ours.coef_) >= 0
    # Both are exact methods (an active set on X^T X here, scipy's nnls on X) on well-conditioned
    # X (cond < ~50 after the offsets): the answers agree to rounding amplified by cond^2.
    assert_matches(ours, ref, 1e-8, fit_intercept=fit_intercept)
    assert_array_equal(ours.coef_ == 0, ref.coef_ == 0)  # the same active set
    assert ours.coef_.shape == ref.coef_.shape


@pytest.mark.parametrize("n_targets", [1, 3])
@pytest.mark.parametrize("solver", ["auto", "lbfgs"])
@pytest.mark.parametrize("weighted", [False, True])
def test_ridge_positive_matches_sklearn(n_targets, solver, weighted, device, rng):
    n, d = int(rng.integers(50, 300)), int(rng.integers(3, 10))
    X, y = binding_problem(rng, n, d, n_targets)
    weights = rng.uniform(0.1, 3.0, size=n) if weighted else None
    alpha = 10 ** rng.uniform(-2, 1, size=n_targets) if n_targets > 1 else float(10 ** rng.uniform(-2, 1))
    ours = Ridge(alpha=alpha, positive=True, solver=solver, device=device).fit(X, y, sample_weight=weights)
    # scikit-learn's L-BFGS-B stops on its projected gradient (tol) and on the relative decrease of
    # the objective (also tol): at 1e-12 it is within ~1e-6 of the exact answer gpuml computes.
    ref = SkRidge(alpha=alpha, positive=True, solver=solver, tol=1e-12).fit(X, y, sample_weight=weights)
    assert np.min(ours.coef_) >= 0 and np.any(ours.coef_ == 0)  # it binds
    assert relative_error(ours.coef_, ref.coef_) <= 1e-5
    assert intercept_error(ours, ref, X, y, weights) <= 1e-5  # seed 928935237: intercept ~1e-4 of its terms
    assert ours.solver_ == ref.solver_ == "lbfgs"
    # gpuml's answer is the minimizer: its objective is no larger than scikit-learn's (up to rounding).
    alphas = np.broadcast_to(alpha, (n_targets,))
    Y = y.reshape(n, -1)
    w = np.ones(n) if weights is None else weights
    for k in range(n_targets):
        def objective(model):
            coef = np.atleast_2d(model.coef_)[k]
            residual = Y[:, k] - X @ coef - np.atleast_1d(model.intercept_)[k]
            return w @ residual**2 + alphas[k] * coef @ coef
        assert objective(ours) <= objective(ref) * (1 + 1e-12)


def test_positive_rules_and_convergence_warning(device, rng):
    X, y = binding_problem(rng, 100, 5)
    for solver in ("svd", "cholesky", "lsqr", "sparse_cg", "sag", "saga"):
        with pytest.raises(ValueError, match=f"solver='{solver}' does not support positive fitting"):
            Ridge(positive=True, solver=solver, device=device).fit(X, y)
    with pytest.raises(ValueError, match="'lbfgs' solver can be used only when positive=True"):
        Ridge(solver="lbfgs", device=device).fit(X, y)
    # Every coefficient positive: the active set takes one step per feature, so max_iter=1 stops early.
    d = int(rng.integers(6, 12))
    X = rng.normal(size=(200, d))
    y = X @ rng.uniform(1, 2, size=d)
    with pytest.warns(ConvergenceWarning, match="lbfgs solver did not converge"):
        Ridge(positive=True, max_iter=1, tol=1e-10, device=device).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        Ridge(positive=True, device=device).fit(X, y)  # the default step limit is ample
        LinearRegression(positive=True, device=device).fit(X, y)


def test_linear_regression_tol_is_lstsq_cond(device, rng):
    """scikit-learn 1.9 solves dense X with lstsq(cond=tol): singular values below tol * s_max count
    as zero. gpuml's "auto" and "svd" do the same (before, gpuml kept them: a different answer)."""
    n, d = 200, 5
    U, _ = np.linalg.qr(rng.normal(size=(n, d)))
    V, _ = np.linalg.qr(rng.normal(size=(d, d)))
    s = np.array([1.0, 0.5, 0.1, 0.05, 1e-7])  # s_min / s_max = 1e-7: below the default tol 1e-6
    X = U * s @ V.T
    y = rng.normal(size=n)
    for tol in (1e-6, 1e-9):  # the smallest singular value is dropped, then kept
        ref = SkLinearRegression(fit_intercept=False, tol=tol).fit(X, y)
        for algorithm in ("auto", "svd"):
            ours = LinearRegression(fit_intercept=False, tol=tol, algorithm=algorithm, device=device).fit(X, y)
            assert ours.rank_ == ref.rank_ == (4 if tol == 1e-6 else 5)
            # cond 1e7 with tol 1e-9 (kept): the solution's own sensitivity ~eps * 1e7 ~ 2e-9.
            assert relative_error(ours.coef_, ref.coef_) <= 1e-7, (tol, algorithm)


# ---- GPU against CPU -------------------------------------------------------------------------


@pytest.mark.parametrize("dataset", ["breast_cancer", "cmapss"])
def test_cuda_matches_cpu(dataset, rng):
    if "cuda" not in DEVICES:
        cuda_or_skip("no CUDA device: nothing to compare the CPU backend with")
    X, y = load_dataset(dataset)
    weights = rng.uniform(0.1, 3.0, size=X.shape[0])
    algorithms = ["svd", "auto"] if dataset == "cmapss" else ALGORITHMS  # cmapss is rank deficient
    for algorithm in algorithms:
        cpu = LinearRegression(algorithm=algorithm, device="cpu").fit(X, y, sample_weight=weights)
        gpu = LinearRegression(algorithm=algorithm, device="cuda").fit(X, y, sample_weight=weights)
        # Same float64 algorithm, different summation orders: ~eps * condition.
        assert relative_error(gpu.coef_, cpu.coef_) <= 1e-8, algorithm
        assert gpu.rank_ == cpu.rank_
        assert relative_error(gpu.predict(X), cpu.predict(X)) <= 1e-10
    for solver in SOLVERS:
        cpu = Ridge(alpha=1.0, solver=solver, device="cpu").fit(X, y, sample_weight=weights)
        gpu = Ridge(alpha=1.0, solver=solver, device="cuda").fit(X, y, sample_weight=weights)
        assert relative_error(gpu.coef_, cpu.coef_) <= 1e-8, solver  # as above


# ---- errors -----------------------------------------------------------------------------------


def random_problem(rng, n=60, d=4):
    X = rng.normal(size=(n, d))
    return X, X @ rng.normal(size=d) + rng.normal(size=n)


@pytest.mark.parametrize("make", [lambda d: LinearRegression(device=d), lambda d: Ridge(device=d)])
def test_bad_data_is_value_error(make, device, rng):
    X, y = random_problem(rng)
    row = int(rng.integers(X.shape[0]))
    for bad in (np.nan, np.inf, -np.inf):
        X_bad = X.copy()
        X_bad[row, int(rng.integers(X.shape[1]))] = bad
        with pytest.raises(ValueError):
            make(device).fit(X_bad, y)
        y_bad = y.copy()
        y_bad[row] = bad
        with pytest.raises(ValueError):
            make(device).fit(X, y_bad)
        weights = np.ones(X.shape[0])
        weights[row] = bad
        with pytest.raises(ValueError):
            make(device).fit(X, y, sample_weight=weights)
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        make(device).fit(X, y[:-1])
    with pytest.raises(ValueError):
        make(device).fit(X, y, sample_weight=np.ones(X.shape[0] + 1))
    with pytest.raises(ValueError):
        make(device).fit(X, np.empty((X.shape[0], 0)))
    with pytest.raises(ValueError):
        make(device).fit(X[:0], y[:0])
    with pytest.raises(NotFittedError):
        make(device).predict(X)
    fitted = make(device).fit(X, y)
    with pytest.raises(ValueError, match="features"):
        fitted.predict(X[:, :-1])


def test_bad_parameters_are_value_errors(device, rng):
    X, y = random_problem(rng)
    Y = np.column_stack([y, -y, 2 * y])
    for estimator in (
        LinearRegression(algorithm="lsqr", device=device),
        LinearRegression(fit_intercept="yes", device=device),
        Ridge(solver="newton", device=device),
        Ridge(tol=-1e-3, device=device),
        Ridge(max_iter=0, device=device),
        LinearRegression(tol=-1.0, device=device),
        LinearRegression(positive="yes", device=device),
        Ridge(alpha=-float(rng.uniform(0.1, 2)), device=device),
        Ridge(alpha=np.nan, device=device),
        Ridge(alpha="one", device=device),
    ):
        with pytest.raises(ValueError):
            estimator.fit(X, y)
    with pytest.raises(ValueError, match="penalties"):
        Ridge(alpha=[1.0, 2.0], device=device).fit(X, Y)  # 2 alphas, 3 targets
    with pytest.raises(ValueError):
        Ridge(alpha=[1.0, -2.0, 3.0], device=device).fit(X, Y)


def test_singular_X_with_cholesky_and_no_penalty(device, rng):
    """scikit-learn's "cholesky" falls back to "svd" when X^T X is singular: so does gpuml's (it
    raised a ValueError before), for every solver name that takes the Cholesky route."""
    X, y = random_problem(rng)
    X = np.column_stack([X, X[:, 0] * rng.uniform(0.5, 2.0)])  # a column proportional to another
    svd = Ridge(alpha=0.0, solver="svd", device=device).fit(X, y)
    # The minimum-norm solution (scikit-learn's Ridge "svd" keeps singular values down to 1e-15
    # absolute, so rounding of the zero one blows it up: lstsq is the reference). The kept
    # singular values have cond ~10: agreement to rounding.
    reference = SkLinearRegression().fit(X, y)
    assert relative_error(svd.coef_, reference.coef_) <= 1e-8
    for solver in ("auto", "cholesky", "lsqr", "sparse_cg", "sag", "saga"):
        ridge = Ridge(alpha=0.0, solver=solver, device=device).fit(X, y)
        assert_allclose(ridge.coef_, svd.coef_, rtol=1e-10, atol=1e-12)  # the same svd route
    Ridge(alpha=1.0, solver="cholesky", device=device).fit(X, y)  # the penalty makes it definite


def test_the_c_side_checks_for_itself(device, rng):
    """The C ABI's own checks, without the Python validation in front of them."""
    from gpuml import _array

    context = get_context(device)
    X, y = random_problem(rng)
    Y = np.column_stack([y, -y])

    def fit(kind, params, X, y, weights=None):
        handle = EstimatorHandle.create(kind, params)
        descriptors = [_array.descriptor(a)[0] if a is not None else None for a in (X, y, weights)]
        handle.fit(context, *descriptors)
        return handle

    with pytest.raises(ValueError):
        EstimatorHandle.create("ridge", {"alpha": -1.0})
    with pytest.raises(ValueError):
        EstimatorHandle.create("linear_regression", {"algorithm": "lsqr"})
    with pytest.raises(ValueError):
        EstimatorHandle.create("linear_regression", {"unknown": 1})
    with pytest.raises(ValueError):
        fit("ridge", {"alpha": [1.0, 2.0, 3.0]}, X, Y)  # 3 alphas, 2 targets
    with pytest.raises(ValueError):
        fit("linear_regression", {}, X, y[:-1])
    X_nan = X.copy()
    X_nan[int(rng.integers(X.shape[0])), 0] = np.nan
    with pytest.raises(ValueError):
        fit("linear_regression", {}, X_nan, y)
    with pytest.raises(ValueError):
        fit("linear_regression", {}, X, y, np.full(X.shape[0], np.inf))
    unfitted = EstimatorHandle.create("linear_regression", {})
    with pytest.raises(NotFittedError):
        unfitted.attribute(context, "coef_")
    handle = fit("linear_regression", {}, X, y)
    with pytest.raises(ValueError):
        handle.output_shape("predict", -1)


# ---- pickling, cloning, array types ---------------------------------------------------------


@pytest.mark.parametrize("make", [lambda d: LinearRegression(device=d), lambda d: Ridge(alpha=0.3, device=d)])
def test_pickle_round_trip(make, device, rng):
    X, y = load_dataset("diabetes")
    Y = more_targets(X, y, rng, n_targets=2)
    for target in (y, Y):
        fitted = make(device).fit(X, target)
        restored = pickle.loads(pickle.dumps(fitted))
        assert_array_equal(restored.coef_, fitted.coef_)
        assert_array_equal(restored.intercept_, fitted.intercept_)
        assert_array_equal(restored.predict(X), fitted.predict(X))  # the same model, exactly
        assert restored.get_params() == fitted.get_params()
    unfitted = pickle.loads(pickle.dumps(make(device)))
    with pytest.raises(NotFittedError):
        unfitted.predict(X)
    assert not hasattr(clone(fitted), "coef_")


def test_feature_names_are_recorded(device, rng):
    pandas = pytest.importorskip("pandas", reason="pandas is not installed")
    X, y = random_problem(rng)
    frame = pandas.DataFrame(X, columns=[f"f{i}" for i in range(X.shape[1])])
    fitted = LinearRegression(device=device).fit(frame, y)
    assert list(fitted.feature_names_in_) == list(frame.columns)


def test_torch_inputs_give_torch_outputs(device, rng):
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    X, y = random_problem(rng)
    fitted = LinearRegression(device=device).fit(torch.from_numpy(X), torch.from_numpy(y))
    reference = LinearRegression(device=device).fit(X, y)
    assert_allclose(fitted.coef_, reference.coef_, rtol=1e-12)  # the same bytes reach the library
    prediction = fitted.predict(torch.from_numpy(X))
    assert isinstance(prediction, torch.Tensor)
    if "cuda" in DEVICES:
        on_gpu = fitted.predict(torch.from_numpy(X).cuda())
        assert on_gpu.is_cuda
        assert_allclose(on_gpu.cpu().numpy(), prediction.numpy(), rtol=1e-10)  # GPU vs CPU predict


def test_cupy_inputs_give_cupy_outputs(rng):
    if "cuda" not in DEVICES:
        cuda_or_skip("no CUDA device: CuPy inputs need one")
    cupy = pytest.importorskip("cupy", reason="CuPy is not installed")
    X, y = random_problem(rng)
    weights = rng.uniform(0.1, 3.0, size=X.shape[0])
    for make in (lambda: LinearRegression(), lambda: Ridge(alpha=0.7)):
        on_gpu = make().fit(cupy.asarray(X), cupy.asarray(y), sample_weight=cupy.asarray(weights))
        on_cpu = make().set_params(device="cpu").fit(X, y, sample_weight=weights)
        assert relative_error(on_gpu.coef_, on_cpu.coef_) <= 1e-10  # tiny, well-conditioned problem
        prediction = on_gpu.predict(cupy.asarray(X))
        assert isinstance(prediction, cupy.ndarray)
        assert relative_error(prediction.get(), on_cpu.predict(X)) <= 1e-10
        assert abs(on_gpu.score(cupy.asarray(X), cupy.asarray(y)) - on_cpu.score(X, y)) <= 1e-10


def test_top_level_exports():
    import gpuml

    assert gpuml.LinearRegression is LinearRegression and gpuml.Ridge is Ridge

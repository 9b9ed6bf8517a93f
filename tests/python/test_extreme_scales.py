"""Every estimator on X scaled from 1e-300 to 1e300 (issue 22, item 3), on every device.

The outcome at every scale is either agreement with scikit-learn or a ValueError; never NaN or
infinity in a fitted attribute or an output. Each scale is the power of two nearest the nominal
one, so X = s Z is exactly Z scaled, and the reference is scikit-learn fitted on the unit-scale
data Z (with the penalty that makes it the same problem), its results mapped back exactly
(coefficients, components, ratios unchanged; intercepts, means, singular values times s;
variances and inertia times s^2). scikit-learn fitted on X itself is no reference there: in
float64 its own covariance_eigh, Ridge(solver="svd") (absolute cutoff 1e-15 on s) and arpack lose
or refuse the problem at these scales. Where the mapped reference is not finite (a variance past
float64's range), gpuml must raise ValueError. The estimators fixed for this item (every
LinearRegression algorithm, Ridge, PCA, TruncatedSVD) must agree at every scale where that is
finite; the others may instead raise ValueError (e.g. "XᵀX overflows").

Tolerances: least squares, PCA and TruncatedSVD are direct methods on a well-conditioned 200 x 5
problem: 1e-9 relative (float64 agreement is ~1e-14; the margin covers the different routes).
Coordinate descent stops on a tolerance: 1e-6 relative (Lasso/ElasticNet, the same iterates up
to rounding). LogisticRegression is compared with scikit-learn on the same data (its docstring).
"""

import math
import warnings

import numpy as np
import pytest
from sklearn import cluster as skc
from sklearn import decomposition as skd
from sklearn import linear_model as skl
from sklearn.exceptions import ConvergenceWarning

from conftest import DEVICES

from gpuml.cluster import KMeans
from gpuml.decomposition import PCA, TruncatedSVD
from gpuml.ensemble import RandomForestClassifier, RandomForestRegressor
from gpuml.graph import pagerank
from gpuml.linear_model import ElasticNet, Lasso, LinearRegression, LogisticRegression, Ridge

SCALES = [1e-300, 1e-200, 1e-160, 1e-100, 1e-10, 1.0, 1e10, 1e100, 1e155, 1e200, 1e300]
DIRECT = 1e-9  # least squares, PCA, TruncatedSVD (see the module docstring)
N, D = 200, 5


def power_of_two(scale):
    return 2.0 ** round(math.log2(scale))


@pytest.fixture
def problem(rng):
    """Unit-scale data: distinct column spreads (PCA's components are well separated), a mean
    away from 0 (centering matters), y linear in Z plus noise."""
    Z = rng.standard_normal((N, D)) * np.array([3.0, 2.0, 1.0, 0.5, 0.25]) + 1.5
    y = Z @ rng.standard_normal(D) + 0.5 * rng.standard_normal(N) + 2.0
    return Z, y


def close(got, expected, rtol, what):
    got, expected = np.asarray(got, dtype=np.float64), np.asarray(expected, dtype=np.float64)
    assert np.all(np.isfinite(got)), f"{what}: not finite: {got}"
    # Relative to the largest expected value; 1e-300 absorbs values that underflow on both sides.
    bound = rtol * np.max(np.abs(expected), initial=0.0) + 1e-300
    error = np.max(np.abs(got - expected), initial=0.0)
    assert error <= bound, f"{what}: max error {error:.3e} > {bound:.3e}\n got {got}\n expected {expected}"


def fitted_attributes_finite(est):
    for name, value in vars(est).items():
        if name.endswith("_") and not name.startswith("_") and isinstance(value, (np.ndarray, float)):
            value = np.asarray(value)
            if value.dtype.kind == "f":
                assert np.all(np.isfinite(value)), f"{type(est).__name__}.{name} is not finite: {value}"


def fit_or_error(make, *args, may_fail):
    """The fitted estimator, or None after a ValueError with a message (only where allowed)."""
    try:
        est = make().fit(*args)
    except ValueError as e:
        assert str(e), "ValueError without a message"
        assert may_fail, f"ValueError where agreement was expected: {e}"
        return None
    fitted_attributes_finite(est)
    return est


def ridge_reference(Z, y, alpha):
    """Ridge on centered Z by the SVD; alpha may be 0 or infinite (the limits a scaled problem reaches)."""
    Zc, yc = Z - Z.mean(axis=0), y - y.mean()
    U, s, Vt = np.linalg.svd(Zc, full_matrices=False)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        factor = np.where(np.isinf(alpha), 0.0, s / (s * s + alpha))
    coef = Vt.T @ (factor * (U.T @ yc))
    return coef, y.mean() - Z.mean(axis=0) @ coef


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("scale", SCALES)
@pytest.mark.parametrize("algorithm", ["auto", "eig", "qr", "svd"])
def test_linear_regression(problem, device, scale, algorithm):
    Z, y = problem
    s = power_of_two(scale)
    ref = skl.LinearRegression().fit(Z, y)
    ours = fit_or_error(lambda: LinearRegression(algorithm=algorithm, device=device), Z * s, y * s, may_fail=False)
    close(ours.coef_, ref.coef_, DIRECT, "coef_")
    close(ours.intercept_, ref.intercept_ * s, DIRECT, "intercept_")
    close(ours.singular_values_, np.linalg.svd(Z - Z.mean(axis=0), compute_uv=False) * s, DIRECT, "singular_values_")
    close(ours.predict(Z * s), ref.predict(Z) * s, DIRECT, "predict")


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("scale", SCALES)
@pytest.mark.parametrize("solver", ["cholesky", "svd"])
def test_ridge(problem, device, scale, solver):
    Z, y = problem
    s = power_of_two(scale)
    alpha = 1.0
    with np.errstate(over="ignore"):
        unit_alpha = alpha / s / s  # the same problem on Z: alpha / s^2 (0 or inf at the extremes)
    coef, intercept = ridge_reference(Z, y, unit_alpha)
    ours = fit_or_error(lambda: Ridge(alpha, solver=solver, device=device), Z * s, y * s, may_fail=False)
    close(ours.coef_, coef, DIRECT, "coef_")
    close(ours.intercept_, intercept * s, DIRECT, "intercept_")
    close(ours.predict(Z * s), (Z @ coef + intercept) * s, DIRECT, "predict")


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("scale", SCALES)
@pytest.mark.parametrize("kind", ["lasso", "elastic_net"])
def test_coordinate_descent(problem, device, scale, kind):
    Z, y = problem
    s = power_of_two(scale)
    alpha = 0.1
    with np.errstate(over="ignore", under="ignore"):
        unit_alpha = alpha / s / s
    make_ours = (lambda: Lasso(alpha, device=device)) if kind == "lasso" else (
        lambda: ElasticNet(alpha, l1_ratio=0.5, device=device))
    ours = fit_or_error(make_ours, Z * s, y * s, may_fail=True)
    if ours is None:
        return
    if unit_alpha > 1e300:  # the penalty wins: every coefficient 0, the intercept the mean
        coef, intercept = np.zeros(D), y.mean()
    elif unit_alpha < 1e-300:  # no penalty left: least squares
        ref = skl.LinearRegression().fit(Z, y)
        coef, intercept = ref.coef_, ref.intercept_
    else:
        ref = (skl.Lasso(unit_alpha) if kind == "lasso" else skl.ElasticNet(unit_alpha, l1_ratio=0.5)).fit(Z, y)
        coef, intercept = ref.coef_, ref.intercept_
    close(ours.coef_, coef, 1e-6, "coef_")
    close(ours.intercept_, intercept * s, 1e-6, "intercept_")


def logistic_stationarity(X, y, model, C):
    """The gradient and Hessian of scikit-learn's binary objective (mean log-loss + |w|^2 / (2 C n),
    intercept not penalized) at a fitted model's (w, b), with the model's probabilities."""
    Xt = np.hstack([X, np.ones((X.shape[0], 1))])
    n = X.shape[0]
    penalty = np.r_[np.full(X.shape[1], 1.0 / (C * n)), 0.0]
    w = np.r_[np.ravel(model.coef_), np.ravel(model.intercept_)]
    p = 1.0 / (1.0 + np.exp(-(Xt @ w)))
    return Xt.T @ (p - y) / n + penalty * w, (Xt.T * (p * (1.0 - p))) @ Xt / n + np.diag(penalty), Xt, p


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("scale", SCALES)
def test_logistic_regression(problem, rng, device, scale):
    """Against scikit-learn fitted on the same data (the optimizer's path depends on X's scale,
    so that is the comparison): agreement, or both fail to converge and say so. Measured: from
    ~1e10 up L-BFGS stops early on both sides (scikit-learn: 0 iterations from 1e100 up, with a
    ConvergenceWarning; gpuml warns likewise)."""
    Z, y = problem
    labels = (y + 2.0 * rng.standard_normal(N) > np.median(y)).astype(np.int64)  # not separable
    X = Z * power_of_two(scale)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        ref = skl.LogisticRegression().fit(X, labels)
        ref_converged = not any(issubclass(w.category, ConvergenceWarning) for w in caught)
        caught.clear()
        ours = fit_or_error(lambda: LogisticRegression(device=device), X, labels, may_fail=True)
        ours_converged = not any(issubclass(w.category, ConvergenceWarning) for w in caught)
    if ours is None:
        return
    proba = ours.predict_proba(X)
    assert np.all(np.isfinite(proba))
    if ours_converged and ref_converged:
        # Both stop near the same minimum, each on its own tolerance: check that gpuml's point is
        # stationary for scikit-learn's objective (max |g| <= tol = 1e-4 or the relative-decrease
        # stop; measured <= 1e-4, 10x margin), and that the probabilities differ by what the two
        # gradients explain: dw = H^-1 (g_ours - g_ref) to first order (measured equal to 3 digits;
        # 1.5x covers the second-order term). A fixed 1e-3 failed on a fresh seed at 1.3e-3.
        g_ours, hessian, Xt, p = logistic_stationarity(X, labels, ours, C=1.0)
        g_ref = logistic_stationarity(X, labels, ref, C=1.0)[0]
        assert np.max(np.abs(g_ours)) <= 1e-3, f"gpuml's solution is not stationary: max |gradient| {np.max(np.abs(g_ours)):.2e}"
        explained = np.max(np.abs(p * (1.0 - p) * (Xt @ np.linalg.solve(hessian, g_ours - g_ref))))
        error = np.max(np.abs(proba - ref.predict_proba(X)))
        assert error <= 1.5 * explained + 1e-12, f"predict_proba differs by {error:.3e}; the gradients explain {explained:.3e}"
    else:
        assert not ours_converged, "scikit-learn did not converge but gpuml said nothing"


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("scale", SCALES)
def test_kmeans(rng, device, scale):
    centers = rng.standard_normal((4, D)) * 10
    Z = centers[rng.integers(0, 4, N)] + rng.standard_normal((N, D))
    init = Z[:4].copy()
    s = power_of_two(scale)
    ref = skc.KMeans(4, init=init, n_init=1, algorithm="lloyd").fit(Z)
    ours = fit_or_error(lambda: KMeans(4, init=init * s, n_init=1, device=device), Z * s, may_fail=True)
    with np.errstate(over="ignore"):
        inertia = ref.inertia_ * s * s
    if ours is None:
        return
    assert np.isfinite(inertia), f"inertia {inertia} overflows: expected a ValueError"
    np.testing.assert_array_equal(ours.labels_, ref.labels_)
    close(ours.cluster_centers_, ref.cluster_centers_ * s, DIRECT, "cluster_centers_")
    close(ours.inertia_, inertia, DIRECT, "inertia_")
    np.testing.assert_array_equal(ours.predict(Z * s), ref.predict(Z))
    # Distances scale with X (squared, they underflowed to 0 below ~1e-154 and tied every center).
    close(ours.transform(Z * s), ref.transform(Z) * s, DIRECT, "transform")


def pca_reference(Z, s, k):
    ref = skd.PCA(k, svd_solver="full").fit(Z)
    with np.errstate(over="ignore"):
        return {
            "components_": ref.components_,
            "explained_variance_": ref.explained_variance_ * s * s,
            "explained_variance_ratio_": ref.explained_variance_ratio_,
            "singular_values_": ref.singular_values_ * s,
            "mean_": ref.mean_ * s,
            "noise_variance_": ref.noise_variance_ * s * s,
        }, ref


def expect_subspace(got, expected):
    """Rows agree up to sign (each a unit vector)."""
    got, expected = np.asarray(got), np.asarray(expected)
    signs = np.sign(np.sum(got * expected, axis=1))[:, None]
    close(got * signs, expected, DIRECT, "components_ (up to sign)")


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("scale", SCALES)
@pytest.mark.parametrize("solver", ["auto", "full", "covariance_eigh", "randomized"])
def test_pca(problem, device, scale, solver):
    Z, _ = problem
    s = power_of_two(scale)
    expected, ref = pca_reference(Z, s, 3)
    overflows = not all(np.all(np.isfinite(v)) for v in expected.values())
    ours = fit_or_error(lambda: PCA(3, svd_solver=solver, random_state=0, device=device), Z * s, may_fail=overflows)
    if ours is None:
        return
    assert not overflows, "an attribute beyond float64 came back without a ValueError"
    expect_subspace(ours.components_, expected["components_"])
    for name in ("explained_variance_", "explained_variance_ratio_", "singular_values_", "mean_", "noise_variance_"):
        close(getattr(ours, name), expected[name], DIRECT, name)
    out = ours.transform(Z * s)
    signs = np.sign(np.sum(ours.components_ * ref.components_, axis=1))
    close(out * signs, ref.transform(Z) * s, DIRECT, "transform")


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("scale", SCALES)
@pytest.mark.parametrize("algorithm", ["randomized", "full"])
def test_truncated_svd(problem, device, scale, algorithm):
    Z, _ = problem
    s = power_of_two(scale)
    ref = skd.TruncatedSVD(3, algorithm="arpack", random_state=0).fit(Z)
    with np.errstate(over="ignore"):
        variance, singular = ref.explained_variance_ * s * s, ref.singular_values_ * s
    overflows = not np.all(np.isfinite(variance))
    ours = fit_or_error(lambda: TruncatedSVD(3, algorithm=algorithm, random_state=0, device=device), Z * s,
                        may_fail=overflows)
    if ours is None:
        return
    assert not overflows, "an attribute beyond float64 came back without a ValueError"
    expect_subspace(ours.components_, ref.components_)
    close(ours.explained_variance_, variance, DIRECT, "explained_variance_")
    close(ours.explained_variance_ratio_, ref.explained_variance_ratio_, DIRECT, "explained_variance_ratio_")
    close(ours.singular_values_, singular, DIRECT, "singular_values_")


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("scale", SCALES)
def test_random_forests(problem, device, scale):
    """Trees split between values: scaling X by a power of two scales every threshold exactly, so
    the forest on s Z predicts what the forest on Z predicts, value for value."""
    Z, y = problem
    s = power_of_two(scale)
    labels = (y > np.median(y)).astype(np.int64)
    for make, target in ((lambda: RandomForestClassifier(10, random_state=0, device=device), labels),
                         (lambda: RandomForestRegressor(10, random_state=0, device=device), y)):
        unit = make().fit(Z, target)
        ours = fit_or_error(make, Z * s, target, may_fail=True)
        if ours is None:
            continue
        np.testing.assert_array_equal(ours.predict(Z * s), unit.predict(Z))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("scale", SCALES)
def test_pagerank_weights(rng, device, scale):
    """PageRank divides each weight by its source's total: scaled weights give the same ranks."""
    nx = pytest.importorskip("networkx")
    n, m = 50, 300
    src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
    weights = rng.uniform(0.5, 2.0, m)
    s = power_of_two(scale)
    try:
        got = pagerank((src, dst, weights * s), n_vertices=n, device=device, tol=1e-12, max_iter=1000)
    except ValueError as e:
        assert str(e)
        return
    assert np.all(np.isfinite(got))
    G = nx.DiGraph()
    G.add_nodes_from(range(n))
    for a, b, w in zip(src, dst, weights):
        G.add_edge(int(a), int(b), weight=G.get_edge_data(int(a), int(b), {"weight": 0.0})["weight"] + w)
    expected = nx.pagerank(G, tol=1e-12, max_iter=1000)  # 1e-12 can take past the default 100
    close(got, np.array([expected[i] for i in range(n)]), 1e-8, "ranks")


@pytest.mark.parametrize("make", [lambda v: PCA(2, svd_solver="randomized", n_oversamples=v, random_state=0),
                                  lambda v: TruncatedSVD(2, n_oversamples=v, random_state=0)], ids=["PCA", "TruncatedSVD"])
@pytest.mark.parametrize("value", [2**63 - 1, 2**53 + 1, 2**64])
def test_huge_n_oversamples_is_accepted(rng, make, value):
    """Issue 22, item 8: n_oversamples summed with n_components overflowed int64 in the library.
    scikit-learn accepts any n_oversamples >= 1, and past min(n_samples, n_features) more test
    vectors add nothing: Python passes at most 2^53 (the library's bound), the fit of
    n_oversamples = n_features (every direction already), bit for bit."""
    X = rng.standard_normal((30, 4))
    huge, enough = make(value).fit(X), make(4).fit(X)
    np.testing.assert_array_equal(huge.components_, enough.components_)
    np.testing.assert_array_equal(huge.singular_values_, enough.singular_values_)

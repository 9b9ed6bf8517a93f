"""Sparse X (issue 24) for LinearRegression, Ridge, Lasso and ElasticNet: fits and predictions on
SciPy CSR / CSC (int32 and int64 indices, duplicates, unsorted indices, explicit zeros, an empty
row and an empty column) against scikit-learn on the same input."""

import numpy as np
import pytest
from scipy import sparse
from sklearn import linear_model as sk

import gpuml

from test_sparse import _messy, _random_sparse


def _problem(rng, density, *, fmt="csr", index_dtype=np.int32, dtype=np.float64, n=200, d=30, targets=None):
    X = _random_sparse(rng, n, d, density, index_dtype=index_dtype, fmt=fmt, dtype=dtype)
    coef = rng.standard_normal(d if targets is None else (d, targets))
    y = X @ coef + 3.0 + 0.1 * rng.standard_normal(n if targets is None else (n, targets))
    return X, y.astype(dtype)


def _check_predict(ours, theirs, X, rtol):
    # Predictions on the sparse X itself (its products), against scikit-learn's on the same X.
    np.testing.assert_allclose(ours.predict(X), theirs.predict(X), rtol=rtol, atol=rtol)


@pytest.mark.parametrize("fmt", ["csr", "csc"])
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("density", [0.05, 0.2, 0.6])
@pytest.mark.parametrize("fit_intercept", [True, False])
def test_linear_regression_matches_sklearn(fmt, index_dtype, density, fit_intercept):
    rng = np.random.default_rng()
    X, y = _problem(rng, density, fmt=fmt, index_dtype=index_dtype)
    ours = gpuml.LinearRegression(fit_intercept=fit_intercept).fit(X, y)
    # scikit-learn's exact lstsq on the dense copy: the minimum-norm solution (X has an empty
    # column). Both are exact solves in double: 1e-8 relative covers eps * cond(X)² of the normal
    # equations for these well-conditioned random X.
    exact = sk.LinearRegression(fit_intercept=fit_intercept).fit(X.toarray(), y)
    np.testing.assert_allclose(ours.coef_, exact.coef_, rtol=1e-8, atol=1e-8)
    np.testing.assert_allclose(ours.intercept_, exact.intercept_, rtol=1e-8, atol=1e-8)
    # scikit-learn's own sparse route (lsqr, atol = btol = tol = 1e-6) stops with an error up to
    # about cond(X) * 1e-6 * |coef| (measured 1.6e-4 with |coef| ~ 15 at density 0.05):
    # coefficients and predictions within 1e-4 * max(1, |coef|).
    lsqr = sk.LinearRegression(fit_intercept=fit_intercept).fit(X, y)
    scale = max(1.0, np.linalg.norm(exact.coef_))
    np.testing.assert_allclose(ours.coef_, lsqr.coef_, rtol=1e-4, atol=1e-4 * scale)
    _check_predict(ours, lsqr, X, 1e-4 * scale)


@pytest.mark.parametrize("fmt", ["csr", "csc"])
@pytest.mark.parametrize("density", [0.05, 0.3])
@pytest.mark.parametrize("solver", ["auto", "sparse_cg", "lsqr", "sag"])
def test_ridge_matches_sklearn(fmt, density, solver):
    rng = np.random.default_rng()
    X, y = _problem(rng, density, fmt=fmt, index_dtype=np.int64, targets=2)
    w = rng.uniform(0.5, 2.0, X.shape[0])
    ours = gpuml.Ridge(alpha=0.7, solver=solver).fit(X, y, sample_weight=w)
    # The exact minimizer (scikit-learn's Cholesky on the dense copy): both exact, 1e-9 relative.
    exact = sk.Ridge(alpha=0.7, solver="cholesky").fit(X.toarray(), y, sample_weight=w)
    np.testing.assert_allclose(ours.coef_, exact.coef_, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(ours.intercept_, exact.intercept_, rtol=1e-9, atol=1e-9)
    # scikit-learn's sparse solver at a tight tol: the same objective, so the same coefficients
    # within its stopping rule (1e-10 residual, 1e-6 on the coefficients).
    theirs = sk.Ridge(alpha=0.7, solver=solver, tol=1e-10, max_iter=100000).fit(X, y, sample_weight=w)
    np.testing.assert_allclose(ours.coef_, theirs.coef_, rtol=1e-5, atol=1e-5)
    _check_predict(ours, theirs, X, 1e-5)
    assert ours.solver_ == ("sparse_cg" if solver == "auto" else solver)


@pytest.mark.parametrize("fmt", ["csr", "csc"])
def test_ridge_positive_and_no_intercept(fmt):
    rng = np.random.default_rng()
    X, y = _problem(rng, 0.2, fmt=fmt)
    ours = gpuml.Ridge(alpha=0.3, positive=True).fit(X, y)
    theirs = sk.Ridge(alpha=0.3, positive=True, tol=1e-10).fit(X.toarray(), y)
    # The active set is exact; scikit-learn's L-BFGS-B stops on its own objective-change rule,
    # a coefficient off by up to ~2e-5 (seen 1.3e-5 in 1 draw of ~50): 1e-4. Exact means no
    # higher objective than scikit-learn's (1e-12 relative for the rounding of the sums).
    np.testing.assert_allclose(ours.coef_, theirs.coef_, rtol=1e-4, atol=1e-4)
    assert np.all(ours.coef_ >= 0)

    def objective(m):
        return np.sum((y - X @ m.coef_ - m.intercept_) ** 2) + 0.3 * np.sum(m.coef_ ** 2)

    assert objective(ours) <= objective(theirs) * (1 + 1e-12)
    ours = gpuml.Ridge(alpha=0.3, solver="cholesky", fit_intercept=False).fit(X, y)
    theirs = sk.Ridge(alpha=0.3, solver="cholesky", fit_intercept=False).fit(X, y)
    np.testing.assert_allclose(ours.coef_, theirs.coef_, rtol=1e-9, atol=1e-9)  # both exact solves


@pytest.mark.parametrize("estimator", ["Lasso", "ElasticNet"])
@pytest.mark.parametrize("fmt", ["csr", "csc"])
@pytest.mark.parametrize("density", [0.05, 0.3])
@pytest.mark.parametrize("weighted", [False, True])
def test_coordinate_descent_matches_sklearn(estimator, fmt, density, weighted):
    rng = np.random.default_rng()
    X, y = _problem(rng, density, fmt=fmt)
    w = rng.uniform(0.5, 2.0, X.shape[0]) if weighted else None
    params = {"alpha": 0.01, "tol": 1e-12, "max_iter": 100000}
    if estimator == "ElasticNet":
        params["l1_ratio"] = 0.4
    ours = getattr(gpuml, estimator)(**params).fit(X, y, sample_weight=w)
    theirs = getattr(sk, estimator)(**params).fit(X, y, sample_weight=w)
    # Both run to a duality gap of 1e-12 ||y||²: the same minimizer to ~1e-6 relative (the gap
    # bounds the objective's error, the coefficients' error is about its square root).
    np.testing.assert_allclose(ours.coef_, theirs.coef_, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ours.intercept_, theirs.intercept_, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(ours.coef_ == 0, theirs.coef_ == 0)  # the same support
    _check_predict(ours, theirs, X, 1e-5)


def test_float32_and_messy_structure():
    rng = np.random.default_rng()
    X, y = _problem(rng, 0.2, dtype=np.float32)
    for est in (gpuml.LinearRegression(), gpuml.Ridge(alpha=0.5), gpuml.Lasso(alpha=0.01, tol=1e-8)):
        fitted = est.fit(X, y)
        assert fitted.coef_.dtype == np.float32
        ref = type(est)(**est.get_params()).fit(X.astype(np.float64), y.astype(np.float64))
        # float32 products summed in double: 1e-4 relative covers float32 rounding of X, y and coef.
        np.testing.assert_allclose(fitted.coef_, ref.coef_, rtol=1e-4, atol=1e-4)
        # Duplicates, unsorted indices and explicit zeros: the same matrix, the same fit (to
        # the rounding of the split entries' sums).
        messy = _messy(X.astype(np.float64), rng)
        again = type(est)(**est.get_params()).fit(messy, y.astype(np.float64))
        np.testing.assert_allclose(again.coef_, ref.coef_, rtol=1e-8, atol=1e-8)
        np.testing.assert_allclose(again.predict(messy), ref.predict(X.astype(np.float64)), rtol=1e-8, atol=1e-8)


def test_sparse_and_dense_agree_and_predict_mixes():
    rng = np.random.default_rng()
    X, y = _problem(rng, 0.3)
    for est in (gpuml.LinearRegression(), gpuml.Ridge(alpha=2.0), gpuml.ElasticNet(alpha=0.02, tol=1e-10)):
        on_sparse = type(est)(**est.get_params()).fit(X, y)
        on_dense = type(est)(**est.get_params()).fit(X.toarray(), y)
        # Two exact routes (the elastic net's both to a 1e-10 gap): agree to 1e-7.
        np.testing.assert_allclose(on_sparse.coef_, on_dense.coef_, rtol=1e-7, atol=1e-7)
        # A model fitted on dense X predicts sparse X and the other way round.
        np.testing.assert_allclose(on_dense.predict(sparse.csr_array(X)), on_sparse.predict(X.toarray()),
                                   rtol=1e-7, atol=1e-7)


def test_sklearn_refusals():
    rng = np.random.default_rng()
    X, y = _problem(rng, 0.3)
    with pytest.raises(TypeError, match="SVD solver does not support sparse"):
        gpuml.Ridge(solver="svd", fit_intercept=False).fit(X, y)
    with pytest.raises(ValueError, match="does not support fitting the intercept on sparse"):
        gpuml.Ridge(solver="svd").fit(X, y)
    with pytest.raises(ValueError, match="does not support fitting the intercept on sparse"):
        gpuml.Ridge(solver="cholesky").fit(X, y)
    with pytest.raises(TypeError, match="Sparse data"):
        gpuml.LinearRegression(positive=True).fit(X, y)
    assert not gpuml.Ridge(solver="svd").__sklearn_tags__().input_tags.sparse
    assert gpuml.Ridge().__sklearn_tags__().input_tags.sparse
    assert gpuml.Lasso().__sklearn_tags__().input_tags.sparse
    assert not gpuml.LinearRegression(positive=True).__sklearn_tags__().input_tags.sparse
    X.data[3] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        gpuml.Lasso().fit(X, y)


def test_wide_sparse_x_iterative_route():
    rng = np.random.default_rng()
    n, d = 300, 5000  # beyond the Gram route's 4096 features: conjugate gradients
    X = sparse.random(n, d, density=0.004, format="csr", random_state=rng)
    y = X @ rng.standard_normal(d) + 1.0 + 0.1 * rng.standard_normal(n)
    ours = gpuml.Ridge(alpha=0.5).fit(X, y)
    theirs = sk.Ridge(alpha=0.5, solver="sparse_cg", tol=1e-12, max_iter=100000).fit(X, y)
    # Both CG on the same normal equations, ours to a 1.5e-10 residual, theirs to 1e-12: 1e-7.
    np.testing.assert_allclose(ours.coef_, theirs.coef_, rtol=1e-7, atol=1e-7)
    np.testing.assert_allclose(ours.intercept_, theirs.intercept_, rtol=1e-7, atol=1e-7)
    _check_predict(ours, theirs, X, 1e-7)
    # n < d: the minimum-norm least-squares solution (scikit-learn's lstsq on the dense copy).
    ours = gpuml.LinearRegression().fit(X, y)
    exact = sk.LinearRegression().fit(X.toarray(), y)
    # CG's residual 1.5e-10 relative on XᵀX's system, amplified by cond(X) (~10 for this X): 1e-6.
    np.testing.assert_allclose(ours.coef_, exact.coef_, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(ours.intercept_, exact.intercept_, rtol=1e-6, atol=1e-6)
    assert ours.rank_ == -1  # not computed on this route
    with pytest.raises(Exception, match="5000 features"):
        gpuml.Lasso().fit(X, y)  # coordinate descent still needs the Gram matrix

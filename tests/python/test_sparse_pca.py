"""Sparse X for PCA: fits, transforms and errors on SciPy CSR / CSC (int32 and int64 indices,
duplicates, unsorted indices, explicit zeros, an empty row and an empty column) against
scikit-learn on the same input, and against gpuml's dense fit of the same matrix.

Tolerances: covariance_eigh is exact on both sides, and so is gpuml's "arpack" with tol=0 on
these small X (a block spanning the whole space); scikit-learn's ARPACK (tol=0) runs to machine
precision. Components are compared with their signs (scikit-learn's svd_flip convention on both
sides) where the explained variances are separated (test_decomposition.separated: gaps above 1e-8
of the largest), where an eigenvector's error is eps * largest / gap <= 2.2e-8: hence 1e-7.
"""

import numpy as np
import pytest
from scipy import sparse
from sklearn import decomposition as skd

from gpuml.decomposition import PCA

from test_decomposition import compare_pca, separated
from test_sparse import _messy, _random_sparse

FLOAT64 = 1e-7  # see the module docstring


def _sparse_X(rng, density, *, fmt="csr", index_dtype=np.int32, dtype=np.float64, n=150, d=25):
    """Random sparse X with columns of different scales and a non-zero mean (so centering matters)."""
    X = _random_sparse(rng, n, d, density, index_dtype=index_dtype, fmt=fmt, dtype=dtype)
    X = X @ sparse.diags(rng.uniform(0.5, 4.0, d)).astype(dtype)
    X = X.asformat(fmt)
    X.indptr = X.indptr.astype(index_dtype)
    X.indices = X.indices.astype(index_dtype)
    return X


@pytest.mark.parametrize("fmt", ["csr", "csc"])
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("density", [0.02, 0.1, 0.5])
@pytest.mark.parametrize("solver", ["arpack", "covariance_eigh", "auto"])
def test_pca_sparse_matches_sklearn(fmt, index_dtype, density, solver):
    rng = np.random.default_rng()
    X = _sparse_X(rng, density, fmt=fmt, index_dtype=index_dtype)
    for k in (None, 4):
        ours = PCA(n_components=k, svd_solver=solver).fit(X)
        ref = skd.PCA(n_components=k, svd_solver=solver, random_state=0).fit(X)
        assert ours._fit_svd_solver == ref._fit_svd_solver  # "auto" is "arpack" for sparse X
        assert ours.n_samples_ == ref.n_samples_ and ours.n_features_in_ == ref.n_features_in_
        np.testing.assert_allclose(ours.mean_, ref.mean_, rtol=1e-12, atol=1e-12)  # column sums in double
        # A zero singular value from covariance_eigh is the root of an eigenvalue of rounding size
        # c eps s_max², c up to about d (a symmetric eigensolver's backward error, here d = 25) on
        # each side: up to sqrt(25 eps) s_max = 7.5e-8 s_max from each library (measured 1.6e-8).
        s_max = ref.singular_values_[0]
        np.testing.assert_allclose(ours.singular_values_, ref.singular_values_, rtol=FLOAT64, atol=1.5e-7 * s_max)
        compare_pca(ours, ref, X, exact=FLOAT64)  # transform of the sparse X: the implicitly centered product
        assert isinstance(ours.transform(X), np.ndarray)


@pytest.mark.parametrize("fmt", ["csr", "csc"])
@pytest.mark.parametrize("solver", ["arpack", "covariance_eigh"])
def test_pca_sparse_messy_input(fmt, solver):
    # Duplicates (summed), unsorted indices and explicit zeros: the same matrix as its canonical form.
    rng = np.random.default_rng()
    X = _sparse_X(rng, 0.2, fmt="csr", index_dtype=np.int64)
    messy = _messy(X, rng).asformat(fmt)
    ours = PCA(n_components=5, svd_solver=solver).fit(messy)
    ref = skd.PCA(n_components=5, svd_solver=solver, random_state=0).fit(X)
    compare_pca(ours, ref, X, exact=FLOAT64)
    m = separated(ref.explained_variance_)
    Z = ref.transform(X)[:, :m]
    np.testing.assert_allclose(ours.transform(messy)[:, :m], Z, atol=FLOAT64 * np.abs(Z).max())


@pytest.mark.parametrize("fmt", ["csr", "csc"])
def test_pca_sparse_arpack_subspace_iteration(fmt):
    # tol > 0: the subspace iteration over a block of 2k + 10 vectors, stopped once the leading
    # vectors move by at most tol a step (tol = 0 spans the whole space of a small X instead).
    rng = np.random.default_rng()
    X = _sparse_X(rng, 0.2, fmt=fmt, n=400, d=60)
    ours = PCA(n_components=4, svd_solver="arpack", tol=1e-11).fit(X)
    ref = skd.PCA(n_components=4, svd_solver="arpack", random_state=0).fit(X)
    # The error is about tol * rho / (1 - rho), rho = (s_19 / s_4)² the rate: 1e-7 allows rho
    # up to 1 - 1e-4.
    compare_pca(ours, ref, X, exact=FLOAT64)


@pytest.mark.parametrize("solver", ["arpack", "covariance_eigh"])
def test_pca_sparse_matches_dense_fit(solver):
    # The same matrix sparse and dense: both routes exact (covariance_eigh subtracts n x̄x̄ᵀ from
    # XᵀX on the sparse route and centers first on the dense one; arpack spans the whole space of
    # this small X), so the module's FLOAT64.
    rng = np.random.default_rng()
    X = _sparse_X(rng, 0.3)
    sparse_fit = PCA(n_components=6, svd_solver=solver).fit(X)
    dense_fit = PCA(n_components=6, svd_solver=solver).fit(X.toarray())
    compare_pca(sparse_fit, dense_fit, X.toarray(), exact=FLOAT64)
    m = separated(dense_fit.explained_variance_)
    Z = dense_fit.transform(X.toarray())[:, :m]
    np.testing.assert_allclose(sparse_fit.transform(X)[:, :m], Z, atol=FLOAT64 * np.abs(Z).max())


@pytest.mark.parametrize("solver", ["covariance_eigh", "arpack"])
def test_pca_sparse_float32(solver):
    rng = np.random.default_rng()
    X64 = _sparse_X(rng, 0.2, fmt="csc", index_dtype=np.int64)
    X = X64.astype(np.float32)
    ours = PCA(n_components=5, svd_solver=solver).fit(X)
    assert ours.components_.dtype == ours.mean_.dtype == ours.explained_variance_.dtype == np.float32
    assert ours.transform(X).dtype == np.float32
    ref = skd.PCA(n_components=5, svd_solver=solver, random_state=0).fit(X64)
    # float32 products against scikit-learn's float64 fit of the same values: variances and
    # components to ~1e-4 (eps32 * largest / gap for these random spectra), transforms alike.
    compare_pca(ours, ref, X64, exact=2e-4)


@pytest.mark.parametrize("whiten", [False, True])
def test_pca_sparse_fit_transform_and_inverse(whiten):
    rng = np.random.default_rng()
    X = _sparse_X(rng, 0.15)
    ours = PCA(n_components=5, whiten=whiten, svd_solver="arpack")
    ref = skd.PCA(n_components=5, whiten=whiten, svd_solver="arpack", random_state=0)
    Z, Z_ref = ours.fit_transform(X), ref.fit_transform(X)
    m = separated(ref.explained_variance_)
    # Whitened outputs have unit variance: FLOAT64 relative to the largest |output|.
    np.testing.assert_allclose(Z[:, :m], Z_ref[:, :m], atol=FLOAT64 * np.abs(Z_ref).max())
    back, back_ref = ours.inverse_transform(Z), ref.inverse_transform(Z_ref)
    assert isinstance(back, np.ndarray) and back.shape == X.shape  # dense, as scikit-learn's
    np.testing.assert_allclose(back, back_ref, atol=FLOAT64 * np.abs(back_ref).max())  # same map, same inputs


@pytest.mark.parametrize("n_components", [0.7, "mle", 0])
def test_pca_sparse_covariance_eigh_component_rules(n_components):
    # Fractions, Minka's MLE and 0 are covariance_eigh's (exact solver) choices on sparse X too.
    rng = np.random.default_rng()
    X = _sparse_X(rng, 0.3, n=300, d=20)
    ours = PCA(n_components=n_components, svd_solver="covariance_eigh").fit(X)
    ref = skd.PCA(n_components=n_components, svd_solver="covariance_eigh").fit(X)
    compare_pca(ours, ref, X, exact=FLOAT64)  # both exact eigen-decompositions of the same matrix


def test_pca_sparse_transform_of_dense_fit():
    # transform takes sparse X whatever solver fitted the model (scikit-learn's _BasePCA.transform).
    rng = np.random.default_rng()
    X = _sparse_X(rng, 0.25)
    pca = PCA(n_components=5, svd_solver="full", whiten=True).fit(X.toarray())
    np.testing.assert_allclose(pca.transform(X), pca.transform(X.toarray()), rtol=1e-12, atol=1e-12)  # same map
    X32 = X.astype(np.float32)  # converted to the model's dtype (float64) as the dense transform
    assert pca.transform(X32).dtype == np.float64


@pytest.mark.parametrize("solver", ["full", "randomized"])
def test_pca_sparse_refused_solvers(solver):
    X = _sparse_X(np.random.default_rng(), 0.2)
    message = f'PCA only support sparse inputs with the "arpack" and "covariance_eigh" solvers, while "{solver}"'
    with pytest.raises(TypeError, match=message):
        skd.PCA(svd_solver=solver).fit(X)
    with pytest.raises(TypeError, match=message):
        PCA(svd_solver=solver).fit(X)
    assert not PCA(svd_solver=solver).__sklearn_tags__().input_tags.sparse
    assert PCA(svd_solver="arpack").__sklearn_tags__().input_tags.sparse


@pytest.mark.parametrize(
    "params, match",
    [
        ({"n_components": "mle"}, "n_components='mle' cannot be a string with svd_solver='arpack'"),
        ({"n_components": 0.5}, r"n_components=0.5 must be between 1 and min\(n_samples, n_features\)=25"),
        ({"n_components": 25}, r"must be strictly less than min\(n_samples, n_features\)=25"),
        ({"n_components": 26, "svd_solver": "covariance_eigh"}, r"must be between 0 and min"),
    ],
)
def test_pca_sparse_component_errors(params, match):
    # "auto" on sparse X is "arpack", with its rules: scikit-learn's ValueError and wording.
    X = _sparse_X(np.random.default_rng(), 0.2)
    with pytest.raises(ValueError, match=match):
        skd.PCA(**params).fit(X)
    with pytest.raises(ValueError, match=match):
        PCA(**params).fit(X)


def test_pca_sparse_score_is_dense_only():
    X = _sparse_X(np.random.default_rng(), 0.2)
    pca = PCA(n_components=3, svd_solver="arpack").fit(X)
    ref = skd.PCA(n_components=3, svd_solver="arpack").fit(X)
    for est in (pca, ref):
        with pytest.raises(TypeError, match="Sparse data was passed for X, but dense data is required"):
            est.score(X)
        with pytest.raises(TypeError, match="Sparse data was passed for X, but dense data is required"):
            est.score_samples(X)
    # On the dense copy both agree (the same model): 1e-8 relative, as the fitted attributes.
    np.testing.assert_allclose(pca.score(X.toarray()), ref.score(X.toarray()), rtol=FLOAT64)


def test_pca_sparse_bad_input():
    rng = np.random.default_rng()
    X = _sparse_X(rng, 0.2)
    pca = PCA(n_components=3).fit(X)
    with pytest.raises(ValueError, match="X has 24 features, but PCA is expecting 25 features"):
        pca.transform(X[:, :24])
    bad = X.copy()
    bad.data[0] = np.nan
    with pytest.raises(ValueError):  # scikit-learn's validation refuses NaN first
        PCA(n_components=3).fit(bad)
    with pytest.raises(ValueError, match="at least 2 samples"):
        PCA(n_components=1, svd_solver="covariance_eigh").fit(X[:1])
    # covariance_eigh would form a dense d x d covariance: refused past 4096 features (named).
    wide = sparse.random(20, 5000, density=0.01, format="csr", random_state=np.random.RandomState(int(rng.integers(1 << 31))))
    with pytest.raises(NotImplementedError, match="dense 5000 x 5000 covariance"):
        PCA(n_components=3, svd_solver="covariance_eigh").fit(wide)
    ours = PCA(n_components=3).fit(wide)  # arpack takes it, through the products
    ref = skd.PCA(n_components=3, random_state=0).fit(wide)
    compare_pca(ours, ref, wide, exact=FLOAT64)

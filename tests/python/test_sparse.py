"""Sparse X (issue 24): TruncatedSVD on SciPy CSR / CSC against scikit-learn, the structure checks,
and the refusal of estimators that do not take sparse input yet."""

import numpy as np
import pytest
from scipy import sparse
from sklearn.decomposition import TruncatedSVD as SkTruncatedSVD

import gpuml
from gpuml.decomposition import TruncatedSVD


def _random_sparse(rng, n, d, density, *, index_dtype=np.int32, fmt="csr", dtype=np.float64):
    """A random sparse matrix with an empty row and an empty column (rows and columns of zeros)."""
    X = sparse.random(n, d, density=density, format="csr", dtype=dtype, random_state=rng)
    X = X.tolil()
    X[1, :] = 0
    X[:, 2] = 0
    X = X.asformat(fmt)
    X.indptr = X.indptr.astype(index_dtype)
    X.indices = X.indices.astype(index_dtype)
    return X


def _messy(X, rng):
    """The same matrix with its entries split into duplicates, unsorted indices and explicit zeros."""
    coo = X.tocoo()
    half = coo.data * rng.uniform(0.2, 0.8, size=coo.data.size)
    rows = np.concatenate([coo.row, coo.row, coo.row[:3]])
    cols = np.concatenate([coo.col, coo.col, coo.col[:3]])
    data = np.concatenate([half, coo.data - half, np.zeros(3)])  # duplicates, then explicit zeros
    order = rng.permutation(rows.size)  # unsorted within rows
    messy = sparse.csr_matrix((X.shape[0], X.shape[1]), dtype=X.dtype)
    indptr = np.zeros(X.shape[0] + 1, dtype=np.int64)
    rows, cols, data = rows[order], cols[order], data[order]
    by_row = np.argsort(rows, kind="stable")  # rows grouped, columns within a row unsorted
    np.add.at(indptr, rows + 1, 1)
    messy = sparse.csr_matrix((data[by_row], cols[by_row], np.cumsum(indptr)), shape=X.shape)
    assert not messy.has_canonical_format
    return messy


def _subspace_distance(A, B):
    """The sine of the largest principal angle between the row spaces of A and B (orthonormal rows)."""
    return np.linalg.norm(B.T - A.T @ (A @ B.T), ord=2)


@pytest.mark.parametrize("fmt", ["csr", "csc"])
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("density", [0.01, 0.1, 0.5])
def test_arpack_matches_sklearn(fmt, index_dtype, density):
    rng = np.random.default_rng()
    X = _random_sparse(rng, 300, 80, density, index_dtype=index_dtype, fmt=fmt)
    k = 6
    ours = TruncatedSVD(n_components=k, algorithm="arpack").fit(X)
    theirs = SkTruncatedSVD(n_components=k, algorithm="arpack").fit(X)
    # Singular values: both converged solvers, so within double rounding amplified by the
    # iterations (1e-8 relative is far above that and far below any real difference).
    np.testing.assert_allclose(ours.singular_values_, theirs.singular_values_, rtol=1e-8)
    # Components: the same signs (svd_flip) and vectors; a random matrix's gaps between its top
    # singular values are ~1e-2 relative, so 1e-6 leaves room for ARPACK's own tolerance.
    np.testing.assert_allclose(ours.components_, theirs.components_, atol=1e-6)
    np.testing.assert_allclose(ours.explained_variance_, theirs.explained_variance_, rtol=1e-8)
    np.testing.assert_allclose(ours.explained_variance_ratio_, theirs.explained_variance_ratio_, rtol=1e-8)
    # transform on sparse input: X components_ᵀ, as scikit-learn's (same components, so 1e-6 * |X|).
    scale = np.abs(X.toarray()).sum(axis=1).max()
    np.testing.assert_allclose(ours.transform(X), theirs.transform(X), atol=1e-6 * scale)


@pytest.mark.parametrize("fmt", ["csr", "csc"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_randomized_matches_sklearn(fmt, dtype):
    rng = np.random.default_rng()
    # A sparse matrix with a few heavy columns (a decaying spectrum at the top).
    n, d, k = 400, 120, 5
    X = sparse.random(n, d, density=0.2, random_state=rng, dtype=np.float64)
    X = (X @ sparse.diags(np.r_[np.arange(k, 0, -1) * 5.0, np.ones(d - k)])).asformat(fmt).astype(dtype)
    for n_iter, rtol, angle in ((5, 1e-3, 0.1), (40, 1e-6 if dtype == np.float64 else 1e-4, 1e-3)):
        # Randomized SVDs with different random draws (ours from the C++ stream, theirs NumPy's):
        # after 5 power iterations each value is within ~1e-4 relative of the exact one on this
        # spectrum, hence 1e-3 between the two; after 40 both have converged (float32: its own
        # rounding, ~1e-5 relative on the values).
        ours = TruncatedSVD(n_components=k, algorithm="randomized", n_iter=n_iter, random_state=0).fit(X)
        theirs = SkTruncatedSVD(n_components=k, algorithm="randomized", n_iter=n_iter, random_state=0).fit(X)
        np.testing.assert_allclose(ours.singular_values_, theirs.singular_values_, rtol=rtol)
        assert _subspace_distance(ours.components_.astype(np.float64), theirs.components_.astype(np.float64)) < angle
        np.testing.assert_allclose(ours.explained_variance_ratio_.sum(), theirs.explained_variance_ratio_.sum(), rtol=10 * rtol)
        assert ours.components_.dtype == dtype
        assert ours.transform(X).dtype == dtype


def test_messy_structure_same_fit():
    """Duplicates (summed), unsorted indices and explicit zeros give the canonical matrix's fit."""
    rng = np.random.default_rng()
    X = _random_sparse(rng, 150, 40, 0.2)
    messy = _messy(X, rng)
    clean = TruncatedSVD(n_components=4, algorithm="arpack").fit(X)
    fitted = TruncatedSVD(n_components=4, algorithm="arpack").fit(messy)
    # Same matrix up to the rounding of the split entries (1 ulp each): 1e-9 relative.
    np.testing.assert_allclose(fitted.singular_values_, clean.singular_values_, rtol=1e-9)
    np.testing.assert_allclose(fitted.components_, clean.components_, atol=1e-7)
    np.testing.assert_allclose(fitted.transform(messy), clean.transform(X), atol=1e-7 * abs(X).sum(axis=1).max())


def test_sparse_array_containers_and_dense_agree():
    rng = np.random.default_rng()
    X = _random_sparse(rng, 100, 30, 0.3)
    dense = TruncatedSVD(n_components=3, algorithm="arpack").fit(X.toarray())
    for container in (sparse.csr_array, sparse.csc_array, sparse.csc_matrix):
        fitted = TruncatedSVD(n_components=3, algorithm="arpack").fit(container(X))
        # The exact dense SVD and the converged sparse iteration: 1e-8 relative.
        np.testing.assert_allclose(fitted.singular_values_, dense.singular_values_, rtol=1e-8)
        np.testing.assert_allclose(fitted.components_, dense.components_, atol=1e-6)


def _bad(X, **changes):
    indptr, indices, data = X.indptr.copy(), X.indices.copy(), X.data.copy()
    local = {"indptr": indptr, "indices": indices, "data": data}
    for name, edit in changes.items():
        edit(local[name])
    bad = sparse.csr_matrix(X.shape)
    bad.indptr, bad.indices, bad.data = local["indptr"], local["indices"], local["data"]
    return bad


@pytest.mark.parametrize(
    "edit, message",
    [
        ({"indptr": lambda p: p.__setitem__(0, 1)}, "indptr\\[0\\]"),
        ({"indptr": lambda p: p.__setitem__(5, p[7] + 1)}, "not non-decreasing"),
        ({"indices": lambda i: i.__setitem__(3, 1000)}, "out of range"),
        ({"indices": lambda i: i.__setitem__(3, -1)}, "out of range"),
    ],
)
def test_bad_structure_is_named(edit, message):
    rng = np.random.default_rng()
    X = _random_sparse(rng, 20, 10, 0.5)
    bad = _bad(X, **edit)
    with pytest.raises(ValueError, match=message):
        TruncatedSVD(n_components=2, algorithm="arpack").fit(bad)


def test_nan_is_refused_as_sklearn_does():
    rng = np.random.default_rng()
    X = _random_sparse(rng, 20, 10, 0.5)
    X.data[4] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        TruncatedSVD(n_components=2).fit(X)


class _DenseOnlyRegressor(gpuml.RandomForestRegressor):
    """An estimator without sparse support (every gpuml estimator has it now): the refusal path."""

    _gpuml_accepts_sparse = False


def test_dense_only_estimators_still_refuse_sparse():
    # Refused in Python with scikit-learn's TypeError, before the C library sees X.
    rng = np.random.default_rng()
    X = _random_sparse(rng, 20, 5, 0.5)
    with pytest.raises(TypeError, match="Sparse data"):
        _DenseOnlyRegressor(n_estimators=2).fit(X, rng.standard_normal(20))
    assert not _DenseOnlyRegressor().__sklearn_tags__().input_tags.sparse


def test_tags():
    assert TruncatedSVD().__sklearn_tags__().input_tags.sparse
    # PCA: scikit-learn's tag, by solver (sparse X with "auto", "arpack", "covariance_eigh" only).
    assert gpuml.PCA().__sklearn_tags__().input_tags.sparse
    assert not gpuml.PCA(svd_solver="full").__sklearn_tags__().input_tags.sparse

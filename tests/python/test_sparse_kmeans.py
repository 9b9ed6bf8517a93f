"""Sparse X for KMeans: fits, predictions, distances and scores on SciPy CSR / CSC (int32 and int64
indices, float32 and float64, duplicates, unsorted indices, explicit zeros, an empty row and an
empty column) against scikit-learn's on the same sparse input."""

import numpy as np
import pytest
from scipy import sparse
from sklearn.cluster import KMeans as SkKMeans

import gpuml

from test_sparse import _messy


def _clustered_sparse(rng, density, *, k=4, n=300, d=40, fmt="csr", index_dtype=np.int32, dtype=np.float64):
    """Rows of k clusters seen through a random mask (each stored entry is its cluster's center plus
    noise), with row 1 and column 2 empty."""
    centers = rng.normal(0.0, 3.0, size=(k, d))
    truth = rng.integers(k, size=n)
    values = centers[truth] + rng.normal(size=(n, d))
    mask = rng.random((n, d)) < density
    dense = np.where(mask, values, 0.0)
    dense[1, :] = 0
    dense[:, 2] = 0
    X = sparse.csr_matrix(dense).asformat(fmt).astype(dtype)
    X.indptr = X.indptr.astype(index_dtype)
    X.indices = X.indices.astype(index_dtype)
    return X


def _init_rows(X, k, rng):
    """k distinct rows of X, dense, as an init array (rows with entries, so the centers differ)."""
    stored = np.flatnonzero(np.diff(X.tocsr().indptr) > 0)
    return X.tocsr()[rng.choice(stored, k, replace=False)].toarray()


def _int32(X):
    """X with int32 indices: scikit-learn's KMeans refuses int64 ones (accept_large_sparse=False),
    gpuml takes both."""
    X = X.copy()
    X.indptr = X.indptr.astype(np.int32)
    X.indices = X.indices.astype(np.int32)
    return X


def relative(a, b):
    return abs(a - b) / max(abs(b), 1e-300)


@pytest.mark.parametrize("fmt", ["csr", "csc"])
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("density", [0.03, 0.2, 0.7])
def test_same_init_matches_sklearn(fmt, index_dtype, density):
    rng = np.random.default_rng()
    k = 4
    X = _clustered_sparse(rng, density, k=k, fmt=fmt, index_dtype=index_dtype)
    init = _init_rows(X, k, rng)
    ours = gpuml.KMeans(k, init=init, n_init=1, device="cpu").fit(X)
    ref = SkKMeans(k, init=init, n_init=1, algorithm="lloyd").fit(_int32(X))
    # Same start, same Lloyd steps on the same distances (|x|² - 2 x·c + |c|²): only the order of
    # float64 sums differs.
    np.testing.assert_array_equal(ours.labels_, ref.labels_)  # no float64 near-ties on these draws
    scale = abs(X).max()
    np.testing.assert_allclose(ours.cluster_centers_, ref.cluster_centers_, rtol=1e-6, atol=1e-12 * scale)  # mean order
    assert relative(ours.inertia_, ref.inertia_) <= 1e-9  # float64 sums, other order
    assert ours.n_iter_ == ref.n_iter_  # same labels each step, same tolerance
    assert ours.cluster_centers_.dtype == np.float64 and ours.labels_.dtype == np.int32
    # The fitted model on the same sparse X.
    np.testing.assert_array_equal(ours.predict(X), ref.predict(_int32(X)))
    np.testing.assert_allclose(ours.transform(X), ref.transform(_int32(X)), rtol=1e-7, atol=1e-7 * scale)  # sqrt of float64 sums
    np.testing.assert_allclose(ours.score(X), ref.score(_int32(X)), rtol=1e-9)  # squared back, float64


@pytest.mark.parametrize("fmt", ["csr", "csc"])
def test_sample_weight_matches_sklearn(fmt):
    rng = np.random.default_rng()
    k = 3
    X = _clustered_sparse(rng, 0.3, k=k, fmt=fmt, index_dtype=np.int64)
    w = rng.uniform(0.2, 3.0, X.shape[0])
    init = _init_rows(X, k, rng)
    ours = gpuml.KMeans(k, init=init, n_init=1, device="cpu").fit(X, sample_weight=w)
    ref = SkKMeans(k, init=init, n_init=1).fit(_int32(X), sample_weight=w)
    np.testing.assert_array_equal(ours.labels_, ref.labels_)  # no float64 near-ties on these draws
    np.testing.assert_allclose(ours.cluster_centers_, ref.cluster_centers_, rtol=1e-6, atol=1e-12)  # weighted means
    assert relative(ours.inertia_, ref.inertia_) <= 1e-9  # float64, sum order only
    assert ours.n_iter_ == ref.n_iter_
    np.testing.assert_allclose(ours.score(X, sample_weight=w), ref.score(_int32(X), sample_weight=w), rtol=1e-9)  # same centers


@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_float32_matches_sklearn(index_dtype):
    rng = np.random.default_rng()
    k = 4
    X = _clustered_sparse(rng, 0.3, k=k, index_dtype=index_dtype, dtype=np.float32)
    init = _init_rows(X, k, rng).astype(np.float32)
    ours = gpuml.KMeans(k, init=init, n_init=1, device="cpu").fit(X)
    ref = SkKMeans(k, init=init, n_init=1).fit(_int32(X))
    assert ours.cluster_centers_.dtype == np.float32
    assert ours.transform(X).dtype == np.float32
    # float32 sums (scikit-learn) against double ones (gpuml): a row within float32 rounding of a
    # tie may go the other way, which moves the centers by far less than 1e-3 of their size.
    assert np.mean(ours.labels_ == ref.labels_) >= 0.99
    assert relative(ours.inertia_, ref.inertia_) <= 1e-3
    np.testing.assert_allclose(ours.cluster_centers_, ref.cluster_centers_, rtol=1e-3, atol=1e-3 * abs(X).max())


@pytest.mark.parametrize("init", ["k-means++", "random"])
@pytest.mark.parametrize("density", [0.03, 0.3])
def test_seeded_inits_as_good_as_sklearn(init, density):
    rng = np.random.default_rng()
    seed = int(rng.integers(2**31))
    X = _clustered_sparse(rng, density, k=5)
    ours = gpuml.KMeans(5, init=init, n_init=10, random_state=seed, device="cpu").fit(X)
    ref = SkKMeans(5, init=init, n_init=10, random_state=seed).fit(X)
    # Different random streams reach different local minima. On these sparse clusters best-of-10
    # inertias still spread: over 40 draws at density 0.03 with init="random", gpuml's was
    # 1.00x scikit-learn's at the median and up to 1.055x (1.07x against the median of three
    # scikit-learn seeds, so the spread is the data's, not gpuml's): 1.15x bounds it.
    assert ours.inertia_ <= 1.15 * ref.inertia_
    # The inertia is that of the fitted centers and labels.
    dense = X.toarray()
    assert relative(ours.inertia_, ((dense - ours.cluster_centers_[ours.labels_]) ** 2).sum()) <= 1e-9


def test_messy_structure_same_fit():
    rng = np.random.default_rng()
    X = _clustered_sparse(rng, 0.2)
    messy = _messy(X, rng)  # duplicates summed, unsorted indices, explicit zeros
    init = _init_rows(X, 4, rng)
    clean = gpuml.KMeans(4, init=init, n_init=1, device="cpu").fit(X)
    fitted = gpuml.KMeans(4, init=init, n_init=1, device="cpu").fit(messy)
    np.testing.assert_array_equal(fitted.labels_, clean.labels_)
    # The duplicates' halves sum to the entry up to one rounding: 1e-12 relative.
    np.testing.assert_allclose(fitted.cluster_centers_, clean.cluster_centers_, rtol=1e-12, atol=1e-12)
    ref = SkKMeans(4, init=init, n_init=1).fit(messy)
    np.testing.assert_array_equal(fitted.labels_, ref.labels_)  # scikit-learn on the same messy X


def test_sparse_and_dense_agree():
    rng = np.random.default_rng()
    X = _clustered_sparse(rng, 0.3)
    init = _init_rows(X, 4, rng)
    dense = gpuml.KMeans(4, init=init, n_init=1, device="cpu").fit(X.toarray())
    for container in (sparse.csr_array, sparse.csc_array, sparse.csc_matrix):
        fitted = gpuml.KMeans(4, init=init, n_init=1, device="cpu").fit(container(X))
        np.testing.assert_array_equal(fitted.labels_, dense.labels_)  # no near-ties on these draws
        # Centered exact distances (dense) and products (sparse): the same means, 1e-10 relative.
        np.testing.assert_allclose(fitted.cluster_centers_, dense.cluster_centers_, rtol=1e-10, atol=1e-10)
        assert relative(fitted.inertia_, dense.inertia_) <= 1e-9


def test_fit_predict_transform_on_new_rows():
    rng = np.random.default_rng()
    X = _clustered_sparse(rng, 0.2)
    new = _clustered_sparse(rng, 0.2, n=50).tocsc()
    model = gpuml.KMeans(4, random_state=int(rng.integers(2**31)), device="cpu")
    labels = model.fit_predict(X)
    np.testing.assert_array_equal(labels, model.labels_)
    ref = SkKMeans(4, init=model.cluster_centers_, n_init=1).fit(X.toarray())  # the same centers, for predict
    ref.cluster_centers_ = model.cluster_centers_
    np.testing.assert_array_equal(model.predict(new), ref.predict(new))
    scale = abs(new).max()
    np.testing.assert_allclose(model.transform(new), ref.transform(new), rtol=1e-7, atol=1e-7 * scale)  # float64
    np.testing.assert_allclose(model.score(new), ref.score(new), rtol=1e-9)  # float64 sums, other order
    np.testing.assert_allclose(model.fit_transform(X), model.transform(X), rtol=1e-12, atol=1e-12)  # same seed
    # The training X through dense and sparse inputs alike.
    np.testing.assert_allclose(model.transform(X), model.transform(X.toarray()), rtol=1e-7, atol=1e-7 * abs(X).max())


def test_more_clusters_than_distinct_rows():
    rng = np.random.default_rng()
    # Mostly empty rows: a few distinct rows, many duplicates of the empty one.
    X = _clustered_sparse(rng, 0.005, n=200, d=30)
    distinct = np.unique(X.toarray(), axis=0).shape[0]
    k = distinct + 2
    with pytest.warns(Warning, match="Number of distinct clusters"):
        ours = gpuml.KMeans(k, n_init=1, random_state=0, device="cpu").fit(X)
    assert ours.inertia_ <= 1e-20  # every row on a center
    assert len(np.unique(ours.labels_)) == distinct


def test_bad_sparse_input_is_named():
    rng = np.random.default_rng()
    X = _clustered_sparse(rng, 0.3, n=20, d=6)
    X.data[3] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        gpuml.KMeans(2, n_init=1).fit(X)
    X = _clustered_sparse(rng, 0.3, n=20, d=6)
    with pytest.raises(ValueError, match="n_samples=20 should be >= n_clusters=21"):
        gpuml.KMeans(21, n_init=1).fit(X)
    model = gpuml.KMeans(2, n_init=1).fit(X)
    with pytest.raises(ValueError, match="features"):
        model.predict(_clustered_sparse(rng, 0.3, n=20, d=7))


def test_tags():
    assert gpuml.KMeans().__sklearn_tags__().input_tags.sparse


@pytest.mark.parametrize("exponent", [-500, -400, 400, 480])
def test_extreme_magnitudes_fit_the_unit_scale_model(exponent):
    """Squares out of float64's comfortable range (|x|² past 2^±600): X is scaled by a power of
    two (exact) and fitted again, as dense X is; the model is the unit-scale one times 2^e."""
    rng = np.random.default_rng()
    X = _clustered_sparse(rng, 0.3, n=120, d=10)
    init = _init_rows(X, 3, rng)
    scale = 2.0**exponent
    base = gpuml.KMeans(3, init=init, n_init=1, device="cpu").fit(X)
    model = gpuml.KMeans(3, init=init * scale, n_init=1, device="cpu").fit(X * scale)
    np.testing.assert_array_equal(model.labels_, base.labels_)
    # Powers of two scale exactly; the rescaled fit is the unit one up to summation order: 1e-12.
    np.testing.assert_allclose(model.cluster_centers_ / scale, base.cluster_centers_, rtol=1e-12, atol=1e-12)
    assert relative(model.inertia_ / scale**2, base.inertia_) <= 1e-12
    np.testing.assert_array_equal(model.predict(X * scale), base.labels_)
    np.testing.assert_allclose(model.transform(X * scale) / scale, base.transform(X), rtol=1e-10, atol=1e-10)
    assert relative(model.score(X * scale) / scale**2, base.score(X)) <= 1e-10


def test_unrepresentable_inertia_is_named():
    rng = np.random.default_rng()
    X = _clustered_sparse(rng, 0.3, n=40, d=5) * 1e200  # squared distances ~1e400: past float64
    with pytest.raises(ValueError, match="overflow"):
        gpuml.KMeans(2, n_init=1, device="cpu").fit(X)

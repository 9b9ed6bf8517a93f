"""Random forests on sparse X (SciPy CSR / CSC, CPU): the fit on sparse X is gpuml's fit on the
dense matrix with the same values, bit for bit (tree arrays, importances, out-of-bag arrays,
predictions, apply, decision_path), and the forests' held-out quality on sparse data is
scikit-learn's, within the bars of test_ensemble.py's style (measured figures beside them)."""

import warnings

import numpy as np
import pytest
from scipy import sparse
from sklearn.ensemble import RandomForestClassifier as SkForestClassifier
from sklearn.ensemble import RandomForestRegressor as SkForestRegressor
from sklearn.metrics import accuracy_score, r2_score

from gpuml.ensemble import RandomForestClassifier, RandomForestRegressor
from test_sparse import _messy, _random_sparse

_TREE_ARRAYS = (
    "estimator_node_offsets_", "nodes_feature_", "nodes_threshold_", "nodes_children_left_",
    "nodes_children_right_", "nodes_value_", "nodes_impurity_", "nodes_n_samples_",
    "nodes_weighted_n_samples_", "estimator_seeds_", "feature_importances_",
)


def _signal(X):
    """A target read from a few columns of X (sparse or dense), learnable by a forest."""
    cols = np.asarray(X[:, [0, 3, 5]].todense()) if sparse.issparse(X) else X[:, [0, 3, 5]]
    return cols[:, 0] + 2.0 * cols[:, 1] - cols[:, 2]


def _assert_same_forest(dense, sparse_model):
    # Bit for bit: exact equality of every array (no tolerance).
    for name in _TREE_ARRAYS:
        np.testing.assert_array_equal(getattr(dense, name), getattr(sparse_model, name), err_msg=name)


@pytest.mark.parametrize("fmt", ["csr", "csc"])
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("density", [0.01, 0.1, 0.5])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_sparse_classifier_is_the_dense_fit(fmt, index_dtype, density, dtype):
    rng = np.random.default_rng()
    X = _random_sparse(rng, 240, 12, density, index_dtype=index_dtype, fmt=fmt, dtype=dtype)
    X = _messy(X, rng).asformat(fmt) if density == 0.1 else X  # duplicates, unsorted, explicit zeros
    X.indptr, X.indices = X.indptr.astype(index_dtype), X.indices.astype(index_dtype)
    dense = X.toarray()  # duplicates summed as the canonical form sums them
    s = _signal(dense)
    y = np.where(s > 0.3, "high", np.where(s < -0.3, "low", "mid"))
    y[:3] = ["high", "low", "mid"]  # every class present, also when 1% density leaves s ~ 0 everywhere
    weights = rng.integers(1, 4, size=X.shape[0]).astype(float)
    params = dict(n_estimators=8, oob_score=True, max_samples=0.8, class_weight="balanced",
                  random_state=int(rng.integers(2**31)), device="cpu")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # rows without out-of-bag trees, alike on both
        on_dense = RandomForestClassifier(**params).fit(dense, y, sample_weight=weights)
        on_sparse = RandomForestClassifier(**params).fit(X, y, sample_weight=weights)
    _assert_same_forest(on_dense, on_sparse)
    np.testing.assert_array_equal(on_dense.oob_decision_function_, on_sparse.oob_decision_function_)
    assert on_dense.oob_score_ == on_sparse.oob_score_
    X_test = _random_sparse(rng, 90, 12, density, index_dtype=index_dtype, fmt="csr", dtype=dtype)
    for given in (X_test, X_test.tocsc()):
        np.testing.assert_array_equal(on_dense.predict_proba(X_test.toarray()), on_sparse.predict_proba(given))
        np.testing.assert_array_equal(on_dense.predict(X_test.toarray()), on_sparse.predict(given))
        np.testing.assert_array_equal(on_dense.apply(X_test.toarray()), on_sparse.apply(given))
        dense_path, dense_ptr = on_dense.decision_path(X_test.toarray())
        sparse_path, sparse_ptr = on_sparse.decision_path(given)
        assert (dense_path != sparse_path).nnz == 0
        np.testing.assert_array_equal(dense_ptr, sparse_ptr)


@pytest.mark.parametrize("fmt", ["csr", "csc"])
@pytest.mark.parametrize("density", [0.01, 0.1, 0.5])
@pytest.mark.parametrize("bootstrap", [True, False])
def test_sparse_regressor_is_the_dense_fit(fmt, density, bootstrap):
    rng = np.random.default_rng()
    X = _messy(_random_sparse(rng, 260, 10, density), rng).asformat(fmt)
    dense = X.toarray()
    y = _signal(dense) + 0.1 * rng.standard_normal(X.shape[0])
    weights = rng.uniform(0.0, 2.0, size=X.shape[0])
    params = dict(n_estimators=6, bootstrap=bootstrap, oob_score=bootstrap, max_features=0.7, n_bins=16,
                  random_state=int(rng.integers(2**31)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        on_dense = RandomForestRegressor(**params).fit(dense, y, sample_weight=weights)
        on_sparse = RandomForestRegressor(**params).fit(X, y, sample_weight=weights)
    _assert_same_forest(on_dense, on_sparse)
    if bootstrap:
        np.testing.assert_array_equal(on_dense.oob_prediction_, on_sparse.oob_prediction_)
        assert on_dense.oob_score_ == on_sparse.oob_score_
    X_test = _random_sparse(rng, 80, 10, density, fmt=fmt)
    np.testing.assert_array_equal(on_dense.predict(X_test.toarray()), on_sparse.predict(X_test))
    np.testing.assert_array_equal(on_dense.apply(X_test.toarray()), on_sparse.apply(X_test))


def test_empty_matrix_and_all_zero_columns():
    # No stored entry at all: every feature is constant, every tree a single leaf, as on zeros.
    X = sparse.csr_matrix((50, 4))
    y = np.arange(50) % 2
    on_sparse = RandomForestClassifier(n_estimators=3, random_state=0).fit(X, y)
    on_dense = RandomForestClassifier(n_estimators=3, random_state=0).fit(np.zeros((50, 4)), y)
    _assert_same_forest(on_dense, on_sparse)
    assert np.all(on_sparse.nodes_feature_ == -2)
    np.testing.assert_array_equal(on_sparse.predict_proba(X), on_dense.predict_proba(np.zeros((50, 4))))


def _sparse_problem(rng, n, d, density):
    X = _random_sparse(rng, n, d, density).tolil()
    X[:, [0, 3, 5]] = sparse.random(n, 3, density=0.6, random_state=rng, format="lil")  # the informative columns
    return X.tocsr()


def test_classifier_accuracy_matches_sklearn_on_sparse_data():
    rng = np.random.default_rng()
    X = _sparse_problem(rng, 2000, 40, 0.05)
    y = (_signal(X) > 0.5).astype(int)
    X_train, X_test, y_train, y_test = X[:1500], X[1500:], y[:1500], y[1500:]
    ours = np.mean([accuracy_score(y_test, RandomForestClassifier(random_state=s).fit(X_train, y_train).predict(X_test))
                    for s in range(3)])
    theirs = np.mean([accuracy_score(y_test, SkForestClassifier(random_state=s, n_jobs=-1).fit(X_train, y_train).predict(X_test))
                      for s in range(3)])
    # Three seeds each, averaged. The bar: scikit-learn's accuracy minus 1 point (one seed's
    # held-out accuracy moves by up to 0.5 point with the seed on 500 rows). Measured on 4 data
    # seeds: gpuml 0.972-0.981, scikit-learn 0.969-0.977, gpuml ahead by 0.1-0.5 point each time.
    assert ours >= theirs - 0.01, (ours, theirs)


def test_regressor_r2_matches_sklearn_on_sparse_data():
    rng = np.random.default_rng()
    X = _sparse_problem(rng, 2000, 40, 0.05)
    y = _signal(X) + 0.05 * rng.standard_normal(X.shape[0])
    X_train, X_test, y_train, y_test = X[:1500], X[1500:], y[:1500], y[1500:]
    ours = np.mean([r2_score(y_test, RandomForestRegressor(n_estimators=50, random_state=s).fit(X_train, y_train).predict(X_test))
                    for s in range(3)])
    theirs = np.mean([r2_score(y_test, SkForestRegressor(n_estimators=50, random_state=s, n_jobs=-1).fit(X_train, y_train).predict(X_test))
                      for s in range(3)])
    # Three seeds each, averaged. Measured on 4 data seeds: R² 0.989-0.991 for both, within 0.0006
    # of each other (seed spread 0.0003); the bar, 0.005 below scikit-learn's, leaves room for the
    # 256 quantile bins of the continuous columns against exact thresholds.
    assert ours >= theirs - 0.005, (ours, theirs)


def test_sparse_tags_and_refusals():
    assert RandomForestClassifier().__sklearn_tags__().input_tags.sparse
    assert RandomForestRegressor().__sklearn_tags__().input_tags.sparse
    rng = np.random.default_rng()
    X = _random_sparse(rng, 30, 5, 0.3)
    model = RandomForestRegressor(n_estimators=2, random_state=0).fit(X, rng.standard_normal(30))
    with pytest.raises(ValueError, match="features"):
        model.predict(_random_sparse(rng, 10, 6, 0.3))
    bad = X.copy()
    bad.data[0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        RandomForestRegressor(n_estimators=2).fit(bad, rng.standard_normal(30))
    with pytest.raises(ValueError, match="NaN|infinity"):
        model.apply(bad)


@pytest.mark.parametrize("Forest", [RandomForestClassifier, RandomForestRegressor])
def test_sparse_y_is_refused_as_sklearn_refuses_it(Forest):
    rng = np.random.default_rng()
    X = rng.standard_normal((20, 3))
    y = sparse.csr_matrix(rng.integers(0, 3, size=(20, 1)).astype(float) + 1.0)
    for Model in (Forest, {RandomForestClassifier: SkForestClassifier, RandomForestRegressor: SkForestRegressor}[Forest]):
        with pytest.raises(ValueError, match="sparse multilabel-indicator for y is not supported"):
            Model(n_estimators=2).fit(X, y)

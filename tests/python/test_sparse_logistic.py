"""LogisticRegression on sparse X (issue 24): SciPy CSR / CSC of several densities, both index
widths, duplicates, unsorted indices and empty rows / columns, against scikit-learn on the same
sparse input, and against gpuml's own dense fit."""

import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from scipy import sparse
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression as SkLogisticRegression

from gpuml.linear_model import LogisticRegression
from test_logistic_regression import SAGA, TIGHT, assert_same_model, objective, sk_reference
from test_sparse import _messy, _random_sparse


def _labelled(rng, n, d, density, n_classes, **sparse_args):
    """Sparse X (an empty row and column included) and labels that depend on it (a noisy linear
    rule), so that the fitted coefficients are far from zero."""
    X = _random_sparse(rng, n, d, density, **sparse_args)
    scores = X @ rng.normal(scale=3.0, size=(d, n_classes)) + rng.normal(scale=0.5, size=(n, n_classes))
    if n_classes == 1:
        y = (scores[:, 0] > np.median(scores[:, 0])).astype(np.int64)
    else:
        y = np.argmax(scores, axis=1)
    return X, y


@pytest.mark.parametrize("fmt", ["csr", "csc"])
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("density", [0.02, 0.1, 0.5])
@pytest.mark.parametrize("n_classes", [1, 3])  # 1: binary labels
def test_matches_sklearn(fmt, index_dtype, density, n_classes, rng):
    X, y = _labelled(rng, 400, 30, density, n_classes, index_dtype=index_dtype, fmt=fmt)
    ours = LogisticRegression(**TIGHT).fit(X, y)
    ref = sk_reference(**TIGHT).fit(X, y)
    # gpuml stops on the gradient (~1e-10); scikit-learn's L-BFGS-B may stop first on its
    # relative decrease (ftol = 64 eps), leaving coefficients a few 1e-6 apart (measured up to
    # 2.1e-6 with max|coef| ~1.5): coefficients within 1e-5 max|coef|, and the two objectives
    # equal up to the rounding of evaluating one (a sum of 400 terms: measured 1.4e-13 relative).
    C = TIGHT.get("C", 1.0)
    f_ours, f_ref = objective(ours, X.toarray(), y, C=C), objective(ref, X.toarray(), y, C=C)
    assert abs(f_ours - f_ref) <= 1e-12 * f_ref, (f_ours, f_ref)
    assert_same_model(ours, ref, atol=1e-5)
    # (converged_ is not asserted: at tol=1e-10 on 2%-dense X the line search can meet the
    # objective's rounding before the gradient reaches tol; gpuml then warns, and the model is
    # the one checked against scikit-learn's above.)
    assert ours.coef_.dtype == np.float64
    assert ours.n_features_in_ == X.shape[1]
    # Coefficients ~1e-6 apart times rows of at most 30 values in [0, 1): scores within ~3e-5.
    assert_allclose(ours.decision_function(X), ref.decision_function(X), rtol=1e-4, atol=3e-5)
    assert_allclose(ours.predict_proba(X), ref.predict_proba(X), rtol=0, atol=1e-5)
    assert_array_equal(ours.predict(X), ref.predict(X)) if _margin(ref, X) > 1e-4 else None


def _margin(model, X):
    """The smallest gap between the two largest scores of a row (ties decide nothing robustly)."""
    scores = model.decision_function(X)
    if scores.ndim == 1:
        return np.min(np.abs(scores))
    top = np.sort(scores, axis=1)
    return np.min(top[:, -1] - top[:, -2])


@pytest.mark.parametrize("class_weight", [None, "balanced"])
@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("n_classes", [1, 4])
def test_weights_and_intercept_match_sklearn(class_weight, fit_intercept, n_classes, rng):
    X, y = _labelled(rng, 300, 25, 0.2, n_classes, fmt="csr")
    weights = rng.uniform(0.1, 3.0, size=X.shape[0])
    params = dict(class_weight=class_weight, fit_intercept=fit_intercept, C=0.5, **TIGHT)
    ours = LogisticRegression(**params).fit(X, y, sample_weight=weights)
    ref = sk_reference(**params).fit(X, y, sample_weight=weights)
    f_ours = objective(ours, X.toarray(), y, C=0.5, sample_weight=weights, class_weight=None)
    # The same objective at both optima (without class weights the helper's objective is the
    # fitted one; with "balanced" compare coefficients only): within 1e-10 relative.
    if class_weight is None:
        f_ref = objective(ref, X.toarray(), y, C=0.5, sample_weight=weights)
        assert abs(f_ours - f_ref) <= 1e-10 * f_ref, (f_ours, f_ref)
    assert_same_model(ours, ref)  # as test_matches_sklearn: 1e-6 max|coef|
    if not fit_intercept:
        assert np.all(ours.intercept_ == 0)
    assert_allclose(ours.predict_proba(X), ref.predict_proba(X), rtol=0, atol=1e-5)  # as above


@pytest.mark.parametrize("l1_ratio", [1.0, 0.5])
def test_l1_and_elastic_net_match_saga(l1_ratio, rng):
    X, y = _labelled(rng, 300, 40, 0.1, 1, fmt="csc")
    C = 0.5
    ours = LogisticRegression(l1_ratio=l1_ratio, C=C, solver="saga", **TIGHT).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # saga may stop at max_iter just short of 1e-10
        ref = SkLogisticRegression(l1_ratio=l1_ratio, C=C, solver="saga", **SAGA).fit(X, y)
    dense = X.toarray()
    ours_f, ref_f = objective(ours, dense, y, C=C, l1_ratio=l1_ratio), objective(ref, dense, y, C=C, l1_ratio=l1_ratio)
    # As the dense test_l1_ratio_alone_chooses_the_penalty_as_saga: the same objective to 1e-6,
    # the same features selected, coefficients within 1e-3 (L1 optima are flat in some directions).
    assert abs(ours_f - ref_f) <= 1e-6 * ref_f, (ours_f, ref_f)
    assert_array_equal(ours.coef_ != 0, ref.coef_ != 0)
    assert np.sum(ours.coef_ == 0) > 0
    assert_allclose(ours.coef_, ref.coef_, rtol=1e-3, atol=1e-3 * np.max(np.abs(ref.coef_)))


@pytest.mark.parametrize("n_classes", [1, 3])
def test_sparse_dense_and_messy_agree(n_classes, rng):
    X, y = _labelled(rng, 250, 20, 0.15, n_classes)
    on_sparse = LogisticRegression(**TIGHT).fit(X, y)
    on_dense = LogisticRegression(**TIGHT).fit(X.toarray(), y)
    on_messy = LogisticRegression(**TIGHT).fit(_messy(X, rng), y)
    on_csc_array = LogisticRegression(**TIGHT).fit(sparse.csc_array(X), y)
    # The same objective, evaluated with sums in other orders (dense GEMM blocks or sparse rows;
    # duplicates summed in another order): the runs reach the same objective to 1e-12. A run stops
    # with every gradient entry <= tol or when a step lowers the objective f by <= 64 eps f (as
    # scipy's L-BFGS-B), so f may stay ~64 eps f above its optimum; f (mean loss + |w|^2 / (2 C n))
    # curves by >= 1 / (C n) along the coefficients, which leaves each run within
    # sqrt(2 * 64 eps f C n) of the optimal coefficients (seed 8: 4.5e-7 apart, bound 4.3e-6).
    X_dense = X.toarray()
    f_dense = objective(on_dense, X_dense, y, C=1.0)
    bound = 2 * np.sqrt(2 * 64 * np.finfo(np.float64).eps * f_dense * X.shape[0])
    for model in (on_sparse, on_messy, on_csc_array):
        assert abs(objective(model, X_dense, y, C=1.0) - f_dense) <= 1e-12 * f_dense
        assert_allclose(model.coef_, on_dense.coef_, rtol=0, atol=bound)
        assert_allclose(model.intercept_, on_dense.intercept_, rtol=0, atol=bound)
    # One model, sparse or dense X to predict from: the same scores up to summation order (1e-12).
    X_test = _random_sparse(rng, 50, 20, 0.3)
    assert_allclose(on_sparse.decision_function(X_test), on_sparse.decision_function(X_test.toarray()),
                    rtol=1e-12, atol=1e-12)
    assert_allclose(on_sparse.predict_proba(sparse.csc_matrix(X_test)), on_sparse.predict_proba(X_test.toarray()),
                    rtol=0, atol=1e-12)
    assert_array_equal(on_sparse.predict(X_test), on_sparse.predict(X_test.toarray()))


def test_float32_sparse_keeps_float32(rng):
    X, y = _labelled(rng, 400, 30, 0.1, 1, dtype=np.float32)
    ours = LogisticRegression(tol=1e-6, max_iter=1000).fit(X, y)
    ref = sk_reference(tol=1e-10, max_iter=10000).fit(X.astype(np.float64), y)
    assert ours.coef_.dtype == np.float32
    # float32 scores and residuals (eps 6e-8) summed over 400 rows: gradients good to ~1e-5, so
    # coefficients within 1e-3 relative of the float64 optimum (the dense float32 test's bound).
    scale = np.max(np.abs(ref.coef_))
    assert_allclose(ours.coef_, ref.coef_, rtol=1e-3, atol=1e-3 * scale)
    assert_allclose(ours.predict_proba(X), ref.predict_proba(X.astype(np.float64)), rtol=0, atol=1e-3)
    assert ours.predict_proba(X).dtype == np.float32


def test_string_labels_and_warm_start(rng):
    X, y = _labelled(rng, 200, 15, 0.3, 3)
    names = np.array(["ham", "spam", "eggs"])[y]
    model = LogisticRegression(warm_start=True, **TIGHT).fit(X, names)
    assert_array_equal(model.classes_, np.unique(names))
    first = model.coef_.copy()
    model.fit(X, names)  # from the optimum: at once (a few iterations at most), the same model
    assert model.n_iter_[0] <= 2
    # Both fits stop with every gradient entry <= tol = 1e-10 on an objective whose curvature is
    # >= 1/(C n) = 1/200, so each is within sqrt(45) 1e-10 * 200 ~ 1.3e-7 of the optimum (2-norm):
    # 3e-7 apart at most (measured up to 7.3e-8).
    assert_allclose(model.coef_, first, rtol=0, atol=3e-7)


def test_bad_sparse_input_is_named(rng):
    X, y = _labelled(rng, 30, 8, 0.5, 1)
    bad = X.copy()
    bad.data[0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        LogisticRegression().fit(bad, y)
    model = LogisticRegression().fit(X, y)
    with pytest.raises(ValueError, match="NaN"):
        model.predict(bad)
    with pytest.raises(ValueError, match="features"):
        model.predict(_random_sparse(rng, 5, 9, 0.5))
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        LogisticRegression().fit(X, y[:-1])


def test_tag():
    assert LogisticRegression().__sklearn_tags__().input_tags.sparse


@pytest.mark.parametrize("solver", ["lbfgs", "liblinear", "saga"])
def test_int64_indices_follow_sklearns_solver_rule(solver, rng):
    # scikit-learn's liblinear, sag and saga refuse 64-bit indices (its ValueError); lbfgs takes them.
    X, y = _labelled(rng, 60, 10, 0.3, 1, index_dtype=np.int64)
    if solver == "lbfgs":
        assert_same_model(LogisticRegression(**TIGHT).fit(X, y), sk_reference(**TIGHT).fit(X, y))
        return
    with pytest.raises(ValueError, match="32-bit integer indices"):
        SkLogisticRegression(solver=solver).fit(X, y)
    with pytest.raises(ValueError, match="32-bit integer indices"):
        LogisticRegression(solver=solver).fit(X, y)

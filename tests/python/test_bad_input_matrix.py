"""The bad-input matrix over the Python estimators (issue 9), as scikit-learn would answer it.

Every row of ROWS is a kind of bad input (or a legal edge case); each (row, estimator) pair is
one test that checks the exception scikit-learn raises for it (ValueError, TypeError,
NotFittedError; None: the call must succeed) and then that the same estimator object still
works: a good fit and prediction on it equals a fresh estimator's, exactly. scikit-learn's own
estimator checks (test_estimator_checks.py) cover parts of this too; this table is the complete
list, the same rows as the C ABI matrix (tests/cpp/capi/bad_input_matrix_test.cpp) where they
apply to Python, and docs/reliability.md ("Bad-input matrix") summarizes both.
"""

import warnings
from dataclasses import dataclass, field

import numpy as np
import pytest
import scipy.sparse
from sklearn.exceptions import NotFittedError

from conftest import DEVICES

from gpuml.cluster import KMeans
from gpuml.decomposition import PCA, TruncatedSVD
from gpuml.ensemble import RandomForestClassifier, RandomForestRegressor
from gpuml.linear_model import ElasticNet, Lasso, LinearRegression, LogisticRegression, Ridge


@dataclass
class Spec:
    """How the matrix drives one estimator class."""

    make: type
    params: dict
    target: str  # "none", "real" or "labels"
    method: str  # "predict" or "transform"
    weights: bool = True
    out_of_range: dict = field(default_factory=dict)  # a parameter value out of its range
    wrong_type: dict = field(default_factory=dict)  # a parameter value of the wrong type
    random_state: bool = True

    @property
    def name(self):
        return self.make.__name__


SPECS = [
    Spec(KMeans, dict(n_clusters=3, n_init=1, random_state=0), "none", "predict",
         out_of_range=dict(n_clusters=0), wrong_type=dict(n_clusters="three")),
    Spec(LinearRegression, {}, "real", "predict", out_of_range=dict(algorithm="bogus"),
         wrong_type=dict(fit_intercept="yes"), random_state=False),
    Spec(Ridge, dict(alpha=0.5), "real", "predict", out_of_range=dict(alpha=-1.0), wrong_type=dict(alpha="big"),
         random_state=False),
    Spec(Lasso, dict(alpha=0.05), "real", "predict", out_of_range=dict(alpha=-0.5), wrong_type=dict(max_iter=2.5)),
    Spec(ElasticNet, dict(alpha=0.05, l1_ratio=0.5), "real", "predict", out_of_range=dict(l1_ratio=2.0),
         wrong_type=dict(tol="small")),
    Spec(LogisticRegression, dict(C=1.0), "labels", "predict", out_of_range=dict(C=0.0), wrong_type=dict(C=[1]),
         random_state=False),
    Spec(PCA, dict(n_components=2), "none", "transform", weights=False, out_of_range=dict(n_components=-3),
         wrong_type=dict(whiten=3), random_state=True),
    Spec(TruncatedSVD, dict(n_components=2, random_state=0), "none", "transform", weights=False,
         out_of_range=dict(n_components=0), wrong_type=dict(algorithm=1)),
    Spec(RandomForestClassifier, dict(n_estimators=4, max_depth=5, random_state=0), "labels", "predict",
         out_of_range=dict(n_estimators=0), wrong_type=dict(bootstrap="no")),
    Spec(RandomForestRegressor, dict(n_estimators=4, max_depth=5, random_state=0), "real", "predict",
         out_of_range=dict(min_samples_leaf=0), wrong_type=dict(max_depth="deep")),
]


def make_data(rng, n=90, d=4):
    """Three Gaussian blobs; labels 1, 3, 5; a real target linear in X plus noise; positive weights."""
    centers = 4.0 * rng.normal(size=(3, d))
    blob = np.arange(n) % 3
    X = centers[blob] + rng.normal(size=(n, d))
    y = X @ rng.normal(size=d) + 0.1 * rng.normal(size=n)
    return dict(X=X, y=y, labels=2 * blob + 1, w=rng.uniform(0.5, 2.0, size=n))


class Bench:
    """The estimator under test, its data and the calls the rows make."""

    def __init__(self, spec, device, data, test):
        self.spec, self.device, self.data, self.test = spec, device, data, test
        self.est = spec.make(**spec.params, device=device)

    def target(self, data=None):
        data = self.data if data is None else data
        return {"none": None, "real": data["y"], "labels": data["labels"]}[self.spec.target]

    def fit(self, X=None, y="default", sample_weight="default"):
        X = self.data["X"] if X is None else X
        y = self.target() if isinstance(y, str) else y
        w = (self.data["w"] if self.spec.weights else None) if isinstance(sample_weight, str) else sample_weight
        kwargs = {} if w is None else dict(sample_weight=w)
        return self.est.fit(X, y, **kwargs)

    def apply(self, X=None):
        X = self.test["X"] if X is None else X
        return getattr(self.est, self.spec.method)(X)

    def fit_apply(self, X, y="default", sample_weight="default"):
        self.fit(X, y, sample_weight)
        return self.apply(X)

    def float_target(self):
        return np.asarray(self.target(), dtype=np.float64).copy()


def with_value(X, value):
    X = X.copy()
    X[X.shape[0] // 2, -1] = value
    return X


def bad_y(bench, value):
    y = bench.float_target()
    y[len(y) // 3] = value
    return bench.fit(y=y)


def bad_w(bench, value):
    w = bench.data["w"].copy()
    w[len(w) // 4] = value
    return bench.fit(sample_weight=w)


def subset(bench, rows, cols):
    X = bench.data["X"][:rows, :cols]
    y = None if bench.spec.target == "none" else bench.target()[:rows]
    w = bench.data["w"][:rows] if bench.spec.weights else None
    return bench.fit_apply(X, y, w)


def any_kind(spec):
    return True


def supervised(spec):
    return spec.target != "none"


def weighted(spec):
    return spec.weights


def classifier(spec):
    return spec.target == "labels"


def decomposition(spec):
    return spec.method == "transform"


def one_sample_error(spec):
    # scikit-learn: KMeans needs n_samples >= n_clusters, PCA n_components <= min(n, d),
    # LogisticRegression two classes; the least-squares family and the regressor forest fit one
    # row. gpuml is stricter in two places, with a named ValueError: TruncatedSVD needs two rows
    # (scikit-learn divides by a zero variance and warns) and RandomForestClassifier two classes
    # (scikit-learn fits a forest that always predicts the one class).
    if spec.make in (KMeans, PCA, TruncatedSVD, LogisticRegression, RandomForestClassifier):
        return ValueError
    return None


def takes_sparse(spec):
    return getattr(spec.make, "_gpuml_accepts_sparse", False)


def sparse_error(spec):
    # Estimators that take sparse X fit it; the others raise scikit-learn's TypeError.
    return None if takes_sparse(spec) else TypeError


def bad_csr(X, part, index, value):
    """X as CSR with one entry of its indptr, indices or data replaced (a broken structure)."""
    good = scipy.sparse.csr_matrix(X)
    arrays = {"indptr": good.indptr.copy(), "indices": good.indices.copy(), "data": good.data.copy()}
    arrays[part][index] = value(arrays[part]) if callable(value) else value
    bad = scipy.sparse.csr_matrix(X.shape, dtype=X.dtype)
    bad.indptr, bad.indices, bad.data = arrays["indptr"], arrays["indices"], arrays["data"]
    return bad


def one_feature_error(spec):
    return ValueError if decomposition(spec) else None


INF = np.inf
NAN = np.nan

# (row, estimators it applies to, expected exception (a class, or a function of the spec; None:
# success), state before the call ("fitted" or "fresh"), the call)
ROWS = [
    ("NaN in X (fit)", any_kind, ValueError, "fitted", lambda b: b.fit(with_value(b.data["X"], NAN))),
    ("+inf in X (fit)", any_kind, ValueError, "fitted", lambda b: b.fit(with_value(b.data["X"], INF))),
    ("-inf in X (fit)", any_kind, ValueError, "fitted", lambda b: b.fit(with_value(b.data["X"], -INF))),
    ("NaN in X (predict)", any_kind, ValueError, "fitted", lambda b: b.apply(with_value(b.test["X"], NAN))),
    ("+inf in X (predict)", any_kind, ValueError, "fitted", lambda b: b.apply(with_value(b.test["X"], INF))),
    ("-inf in X (predict)", any_kind, ValueError, "fitted", lambda b: b.apply(with_value(b.test["X"], -INF))),
    ("NaN in y", supervised, ValueError, "fitted", lambda b: bad_y(b, NAN)),
    ("+inf in y", supervised, ValueError, "fitted", lambda b: bad_y(b, INF)),
    ("-inf in y", supervised, ValueError, "fitted", lambda b: bad_y(b, -INF)),
    ("NaN in sample_weight", weighted, ValueError, "fitted", lambda b: bad_w(b, NAN)),
    ("+inf in sample_weight", weighted, ValueError, "fitted", lambda b: bad_w(b, INF)),
    ("-inf in sample_weight", weighted, ValueError, "fitted", lambda b: bad_w(b, -INF)),
    ("empty X (0 rows)", any_kind, ValueError, "fitted", lambda b: subset(b, 0, b.data["X"].shape[1])),
    ("X with 0 features", any_kind, ValueError, "fitted", lambda b: subset(b, len(b.data["X"]), 0)),
    ("empty X (predict)", any_kind, ValueError, "fitted", lambda b: b.apply(b.test["X"][:0])),
    ("one sample", any_kind, one_sample_error, "fitted", lambda b: subset(b, 1, b.data["X"].shape[1])),
    ("one feature", any_kind, one_feature_error, "fitted", lambda b: subset(b, len(b.data["X"]), 1)),
    ("y length != rows of X", supervised, ValueError, "fitted", lambda b: b.fit(y=b.target()[:-1])),
    ("sample_weight length != rows of X", weighted, ValueError, "fitted",
     lambda b: b.fit(sample_weight=b.data["w"][:-1])),
    ("predict width != n_features", any_kind, ValueError, "fitted", lambda b: b.apply(b.test["X"][:, :-1])),
    ("X 1-d (fit)", any_kind, ValueError, "fitted", lambda b: b.fit(b.data["X"][:, 0])),
    ("X 3-d (fit)", any_kind, ValueError, "fitted", lambda b: b.fit(b.data["X"][:, :, None])),
    ("X 1-d (predict)", any_kind, ValueError, "fitted", lambda b: b.apply(b.test["X"][0])),
    ("complex X", any_kind, ValueError, "fitted", lambda b: b.fit(b.data["X"].astype(np.complex128))),
    ("string X", any_kind, ValueError, "fitted", lambda b: b.fit(np.full(b.data["X"].shape, "a"))),
    ("X of objects with None", any_kind, ValueError, "fitted",
     lambda b: b.fit(np.where(np.arange(b.data["X"].size).reshape(b.data["X"].shape) == 5, None,
                              b.data["X"]).astype(object))),
    ("integer X (converted)", any_kind, None, "fitted", lambda b: b.fit_apply(np.rint(4 * b.data["X"]).astype(np.int32))),
    ("sparse X (dense data required unless taken)", any_kind, sparse_error, "fitted",
     lambda b: b.fit_apply(scipy.sparse.csr_matrix(b.data["X"]))),
    ("sparse X: indptr decreasing", takes_sparse, ValueError, "fitted",
     lambda b: b.fit(bad_csr(b.data["X"], "indptr", 3, lambda p: p[5] + 1))),
    ("sparse X: indptr[0] != 0", takes_sparse, ValueError, "fitted",
     lambda b: b.fit(bad_csr(b.data["X"], "indptr", 0, 1))),
    ("sparse X: index out of range", takes_sparse, ValueError, "fitted",
     lambda b: b.fit(bad_csr(b.data["X"], "indices", 2, b.data["X"].shape[1]))),
    ("sparse X: negative index", takes_sparse, ValueError, "fitted",
     lambda b: b.fit(bad_csr(b.data["X"], "indices", 2, -1))),
    ("sparse X: NaN value", takes_sparse, ValueError, "fitted",
     lambda b: b.fit(bad_csr(b.data["X"], "data", 1, np.nan))),
    ("sparse X: NaN value (transform)", takes_sparse, ValueError, "fitted",
     lambda b: b.apply(bad_csr(b.test["X"], "data", 1, np.nan))),
    ("non-C-contiguous X (converted)", any_kind, None, "fitted",
     lambda b: b.fit_apply(np.asfortranarray(b.data["X"]))),
    ("predict before fit", any_kind, NotFittedError, "fresh", lambda b: b.apply()),
    ("unknown constructor parameter", any_kind, TypeError, "fitted",
     lambda b: b.spec.make(no_such_param=1)),
    ("unknown parameter (set_params)", any_kind, ValueError, "fitted",
     lambda b: b.est.set_params(no_such_param=1)),
    ("wrong parameter type", any_kind, ValueError, "fitted",
     lambda b: b.spec.make(**{**b.spec.params, **b.spec.wrong_type}).fit(b.data["X"], b.target())),
    ("out-of-range parameter value", any_kind, ValueError, "fitted",
     lambda b: b.spec.make(**{**b.spec.params, **b.spec.out_of_range}).fit(b.data["X"], b.target())),
    ("unknown device", any_kind, ValueError, "fitted",
     lambda b: b.spec.make(**b.spec.params, device="tpu").fit(b.data["X"], b.target())),
    ("random_state out of range", lambda s: s.random_state, ValueError, "fitted",
     lambda b: b.spec.make(**{**b.spec.params, "random_state": -1}).fit(b.data["X"], b.target())),
    ("labels with a single class", classifier, ValueError, "fitted",
     lambda b: b.fit(y=np.full(len(b.data["X"]), 3))),
    ("continuous labels for a classifier", classifier, ValueError, "fitted",
     lambda b: b.fit(y=b.data["y"])),
]

CASES = [
    pytest.param(row, spec, device, id=f"{row[0]}-{spec.name}-{device}")
    for row in ROWS
    for spec in SPECS
    if row[1](spec)
    for device in DEVICES
]


def _reference(spec, device, data, test):
    bench = Bench(spec, device, data, test)
    bench.fit()
    return np.asarray(bench.apply())


@pytest.mark.parametrize("row, spec, device", CASES)
def test_bad_input(row, spec, device, rng):
    name, _, expected, state, call = row
    data, test = make_data(rng), make_data(rng, n=20)
    if callable(expected) and not isinstance(expected, type):
        expected = expected(spec)
    bench = Bench(spec, device, data, test)
    if state == "fitted":
        bench.fit()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # convergence or degenerate-variance warnings of the edge cases
        if expected is None:
            call(bench)
        else:
            with pytest.raises(expected):
                call(bench)

    # The same estimator object still works and gives a fresh estimator's answers.
    bench.fit()
    again = np.asarray(bench.apply())
    np.testing.assert_array_equal(again, _reference(spec, device, data, test))


def test_matrix_covers_every_estimator():
    import gpuml

    kinds = {spec.make._gpuml_kind for spec in SPECS}
    assert kinds == {cls._gpuml_kind for cls in (KMeans, LinearRegression, Ridge, Lasso, ElasticNet,
                                                 LogisticRegression, PCA, TruncatedSVD, RandomForestClassifier,
                                                 RandomForestRegressor)}
    print(f"bad-input matrix (Python): {len(ROWS)} rows, {len(SPECS)} estimators, "
          f"{len(CASES) // len(DEVICES)} checks per device, gpuml {gpuml.__version__}")

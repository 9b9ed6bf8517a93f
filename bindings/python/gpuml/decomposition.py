"""Matrix decompositions: PCA and TruncatedSVD on the CPU or a CUDA GPU."""

import numbers

import numpy as np
from sklearn.base import ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.utils import check_array
from sklearn.utils.validation import check_is_fitted

from . import _array
from ._base import GpumlEstimator, seed_from

__all__ = ["PCA", "TruncatedSVD"]

_PCA_SOLVERS = ("auto", "full", "covariance_eigh", "randomized")
_TSVD_ALGORITHMS = ("randomized", "full", "arpack")
_NORMALIZERS = ("auto", "QR", "LU", "none")
# What scikit-learn draws a seed below when random_state is None or a RandomState.


def _is_int(value):
    return isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_))


def _check_int(value, name, low, high=None):
    if not _is_int(value) or value < low or (high is not None and value > high):
        bound = f">= {low}" if high is None else f"in [{low}, {high}]"
        raise ValueError(f"{name} must be an integer {bound}, got {value!r}")
    return int(value)


# The library's bound (more test vectors than min(n_samples, n_features) add nothing).
_MAX_OVERSAMPLES = 2**53


def _check_choice(value, name, choices):
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(repr(c) for c in choices)}; got {value!r}")
    return value


class _Decomposition(ClassNamePrefixFeaturesOutMixin, TransformerMixin, GpumlEstimator):
    """fit / transform / fit_transform through the C ABI; inverse_transform from the fitted arrays."""

    def fit(self, X, y=None):
        """Fits on X (n_samples, n_features); returns self."""
        params = self._gpuml_params()  # bad parameters fail before the data is looked at
        X, kind = self._prepare_X(X, reset=True)
        self._gpuml_fit(X, kind, params=params)
        return self

    @property
    def _n_features_out(self):
        # Read on use (get_feature_names_out), not in fit: components_ comes through the C ABI.
        return self.components_.shape[0]

    def fit_transform(self, X, y=None):
        """Fits and returns transform(X) (in X's array type)."""
        return self.fit(X)._transform(X)

    def transform(self, X):
        """X projected on components_: (n_samples, n_components), components_'s dtype, X's array type."""
        return self._transform(X)

    def _transform(self, X):
        # Unwrapped by scikit-learn's set_output, so fit_transform wraps its result only once.
        check_is_fitted(self)
        X, kind = self._prepare_X(X, reset=False)
        return self._gpuml_apply("transform", X, kind)

    def _inverse_matrix(self):
        return self.components_

    def _inverse_offset(self):
        return None

    def inverse_transform(self, X):
        """Back to feature space: X @ components_ (+ mean_ for PCA), in X's array type.

        Computed with NumPy on the host from the fitted arrays (a (n, k) x (k, d) product).
        """
        check_is_fitted(self)
        kind = _array.ArrayKind.of(X)
        host = _array.to_numpy(X) if kind.is_device else X
        host = check_array(host, dtype=[np.float64, np.float32], input_name="X")
        if host.shape[1] != self.components_.shape[0]:
            raise ValueError(
                f"X has {host.shape[1]} columns, but {type(self).__name__} has {self.components_.shape[0]} components"
            )
        out = host @ self._inverse_matrix()
        offset = self._inverse_offset()
        if offset is not None:
            out = out + offset
        return kind.from_numpy(np.ascontiguousarray(out)) if kind.is_device else out


class PCA(_Decomposition):
    """Principal component analysis, on the CPU or a CUDA GPU.

    Same parameters, attributes and results (signs included: scikit-learn's svd_flip on the rows
    of components_) as ``sklearn.decomposition.PCA``, with ``svd_solver``:

    - "covariance_eigh": the covariance of the centered X (one pass over the data, formed on the
      device), eigen-decomposed on the host; the fastest for n_samples >> n_features.
    - "full": Householder QR of the centered X on the device, then the SVD of R on the host.
    - "randomized": Halko et al.'s randomized SVD (``iterated_power``, ``n_oversamples``,
      ``random_state``); random draws differ from scikit-learn's, so results agree to the
      accuracy of the method, not bit for bit.
    - "auto": scikit-learn's rule.

    X is always centered (in float64 arithmetic) before any product, so data with a large mean
    keeps its precision in float32. ``copy``, ``tol`` and ``power_iteration_normalizer`` are
    accepted for compatibility and have no effect (the subspace iterations always orthonormalize);
    "arpack" and n_components="mle" are not offered. A constant column gives a zero-variance
    direction, never NaN. ``device`` as in KMeans. inverse_transform runs on the host.
    components_, mean_ and explained_variance_ (used with whiten) may be assigned or changed in
    place, as in scikit-learn: transform, pickling and save_model use the new values.
    """

    _gpuml_kind = "pca"
    _gpuml_attributes = (
        "components_",
        "explained_variance_",
        "explained_variance_ratio_",
        "singular_values_",
        "mean_",
        "noise_variance_",
        "n_components_",
        "n_samples_",
    )
    _gpuml_settable = ("components_", "mean_", "explained_variance_")  # what transform uses (the last when whiten)

    def __init__(
        self,
        n_components=None,
        *,
        copy=True,
        whiten=False,
        svd_solver="auto",
        tol=0.0,
        iterated_power="auto",
        n_oversamples=10,
        power_iteration_normalizer="auto",
        random_state=None,
        device="auto",
    ):
        self.n_components = n_components
        self.copy = copy
        self.whiten = whiten
        self.svd_solver = svd_solver
        self.tol = tol
        self.iterated_power = iterated_power
        self.n_oversamples = n_oversamples
        self.power_iteration_normalizer = power_iteration_normalizer
        self.random_state = random_state
        self.device = device

    def _gpuml_params(self, X=None):
        k = self.n_components
        if k is None:
            n_components = None
        elif _is_int(k) and k >= 1:
            n_components = int(k)
        elif isinstance(k, numbers.Real) and not isinstance(k, (bool, np.bool_)) and 0 < k < 1:
            n_components = float(k)
        else:
            raise ValueError(
                f"n_components must be None, an integer >= 1 or a float in (0, 1) (\"mle\" is not offered), got {k!r}"
            )
        if not isinstance(self.whiten, (bool, np.bool_)):
            raise ValueError(f"whiten must be a bool, got {self.whiten!r}")
        _check_choice(self.power_iteration_normalizer, "power_iteration_normalizer", _NORMALIZERS)
        if not isinstance(self.tol, numbers.Real) or not self.tol >= 0:  # NaN too, as scikit-learn
            raise ValueError(f"tol must be a real number >= 0, got {self.tol!r}")
        iterated_power = self.iterated_power
        if not (isinstance(iterated_power, str) and iterated_power == "auto"):
            iterated_power = _check_int(iterated_power, "iterated_power", 0)
        return {
            "n_components": n_components,
            "whiten": bool(self.whiten),
            "svd_solver": _check_choice(self.svd_solver, "svd_solver", _PCA_SOLVERS),
            "iterated_power": iterated_power,
            "n_oversamples": _check_int(self.n_oversamples, "n_oversamples", 0, _MAX_OVERSAMPLES),
            "random_state": seed_from(self.random_state),
        }

    def _read_fitted_attributes(self):
        super()._read_fitted_attributes()
        self.noise_variance_ = float(self.noise_variance_)

    def _inverse_matrix(self):
        if self.whiten:
            return np.sqrt(self.explained_variance_)[:, np.newaxis] * self.components_
        return self.components_

    def _inverse_offset(self):
        return self.mean_


class TruncatedSVD(_Decomposition):
    """Dimensionality reduction by a truncated SVD of X (no centering), on the CPU or a CUDA GPU.

    Same parameters, attributes and results (signs by scikit-learn's svd_flip on the rows of
    components_) as ``sklearn.decomposition.TruncatedSVD``. ``algorithm``: "randomized" (Halko
    et al.; random draws differ from scikit-learn's) or "full" (an exact SVD: Householder QR on
    the device, the SVD of R on the host; "arpack" is accepted as the same). ``tol`` and
    ``power_iteration_normalizer`` are accepted for compatibility and have no effect. Dense
    inputs only. ``device`` as in KMeans. inverse_transform runs on the host. components_ may be
    assigned or changed in place, as in scikit-learn: transform, pickling and save_model use it.
    """

    _gpuml_kind = "truncated_svd"
    _gpuml_attributes = ("components_", "explained_variance_", "explained_variance_ratio_", "singular_values_")
    _gpuml_settable = ("components_",)  # what transform uses

    def __init__(
        self,
        n_components=2,
        *,
        algorithm="randomized",
        n_iter=5,
        n_oversamples=10,
        power_iteration_normalizer="auto",
        random_state=None,
        tol=0.0,
        device="auto",
    ):
        self.n_components = n_components
        self.algorithm = algorithm
        self.n_iter = n_iter
        self.n_oversamples = n_oversamples
        self.power_iteration_normalizer = power_iteration_normalizer
        self.random_state = random_state
        self.tol = tol
        self.device = device

    def _gpuml_params(self, X=None):
        algorithm = _check_choice(self.algorithm, "algorithm", _TSVD_ALGORITHMS)
        _check_choice(self.power_iteration_normalizer, "power_iteration_normalizer", _NORMALIZERS)
        if not isinstance(self.tol, numbers.Real) or not self.tol >= 0:  # NaN too, as scikit-learn
            raise ValueError(f"tol must be a real number >= 0, got {self.tol!r}")
        return {
            "n_components": _check_int(self.n_components, "n_components", 1),
            "algorithm": "full" if algorithm == "arpack" else algorithm,
            "n_iter": _check_int(self.n_iter, "n_iter", 0),
            "n_oversamples": _check_int(self.n_oversamples, "n_oversamples", 0, _MAX_OVERSAMPLES),
            "random_state": seed_from(self.random_state),
        }

"""Linear models: ordinary least squares and ridge regression on the CPU or a CUDA GPU."""

import numbers

import numpy as np
from sklearn.base import MultiOutputMixin, RegressorMixin
from sklearn.metrics import r2_score
from sklearn.utils.validation import check_is_fitted

from . import _array
from ._base import GpumlEstimator

__all__ = ["LinearRegression", "Ridge"]

_LINEAR_REGRESSION_ALGORITHMS = ("auto", "eig", "qr", "svd")
_RIDGE_SOLVERS = ("auto", "cholesky", "svd")


def _check_bool(value, name):
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} must be a bool, got {value!r}")
    return bool(value)


def _check_choice(value, name, choices):
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(repr(c) for c in choices)}; got {value!r}")
    return value


class _LinearRegressor(MultiOutputMixin, RegressorMixin, GpumlEstimator):
    """What LinearRegression and Ridge share: fit through the C ABI, predict, score."""

    def _fit(self, X, y, sample_weight, params_for_targets):
        X, y, kind = self._prepare_X_y(X, y)
        weights = self._prepare_sample_weight(sample_weight, X, ensure_non_negative=True)
        n_targets = 1 if y.ndim == 1 else y.shape[1]
        return self._gpuml_fit(X, kind, sample_weight=weights, y=y, params=params_for_targets(n_targets))

    def predict(self, X):
        """X @ coef_.T + intercept_: (n_samples,) or (n_samples, n_targets), coef_'s dtype, in X's array type."""
        check_is_fitted(self)
        X, kind = self._prepare_X(X, reset=False, dtype=(self.coef_.dtype,))
        return self._gpuml_apply("predict", X, kind)

    def score(self, X, y, sample_weight=None):
        """R² of predict(X) against y (RegressorMixin's score; CuPy and torch inputs are read back first)."""
        y_pred = _array.to_numpy(self.predict(X))
        weights = None if sample_weight is None else _array.to_numpy(sample_weight)
        return r2_score(_array.to_numpy(y), y_pred, sample_weight=weights)


class LinearRegression(_LinearRegressor):
    """Ordinary least squares, on the CPU or a CUDA GPU.

    Same results as ``sklearn.linear_model.LinearRegression`` (the minimum-norm solution when X
    is rank deficient), with ``algorithm`` choosing how:

    - "eig": the normal equations (X^T X), solved through its eigen-decomposition; the fastest,
      but it squares the condition number; rank-deficient X is a ValueError.
    - "qr": Householder QR of X; rank-deficient X is a ValueError.
    - "svd": QR, then the SVD of R: the minimum-norm least-squares solution for any X.
    - "auto": "eig", falling back to "svd" when X is rank deficient or ill conditioned.

    ``device``: "auto" (the first GPU when there is one, else the CPU; for CUDA inputs, the GPU
    that holds them), "cpu", "cuda" or "cuda:N". Inputs may be NumPy arrays, CuPy arrays or
    PyTorch tensors; predict returns the input's type. Fitted attributes are NumPy arrays.

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,) or (n_targets, n_features), X's float dtype
    intercept_ : float, or ndarray of shape (n_targets,) when y is 2-d (0.0 without fit_intercept)
    rank_ : int, rank of the centered (weighted) X
    singular_values_ : ndarray of shape (min(n_samples, n_features),), descending, of the centered
        (weighted) X; ``singular_`` is the same array under scikit-learn's name
    n_features_in_ : int
    feature_names_in_ : ndarray of str, when X has string column names
    """

    _gpuml_kind = "linear_regression"
    _gpuml_attributes = ("coef_", "intercept_", "rank_", "singular_values_")

    def __init__(self, *, fit_intercept=True, algorithm="auto", device="auto"):
        self.fit_intercept = fit_intercept
        self.algorithm = algorithm
        self.device = device

    def _gpuml_params(self, X=None):
        return {
            "fit_intercept": _check_bool(self.fit_intercept, "fit_intercept"),
            "algorithm": _check_choice(self.algorithm, "algorithm", _LINEAR_REGRESSION_ALGORITHMS),
        }

    def fit(self, X, y, sample_weight=None):
        """Fits on X (n_samples, n_features) and y (n_samples,) or (n_samples, n_targets); returns self."""
        params = self._gpuml_params()  # bad parameters fail before the data is looked at
        return self._fit(X, y, sample_weight, lambda n_targets: params)

    def _read_fitted_attributes(self):
        super()._read_fitted_attributes()
        self.singular_ = self.singular_values_  # scikit-learn's name for the same values


class Ridge(_LinearRegressor):
    """Least squares with an L2 penalty alpha * ||coef||², on the CPU or a CUDA GPU.

    Same results as ``sklearn.linear_model.Ridge`` with solver "cholesky" or "svd".
    ``alpha``: a number >= 0, or one per target. ``solver``: "auto" (= "cholesky", the normal
    equations plus alpha, through a Cholesky factorization; alpha = 0 with singular X is a
    ValueError), "cholesky", or "svd" (QR, then the SVD of R). ``device`` as in LinearRegression.

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,) or (n_targets, n_features), X's float dtype
    intercept_ : float, or ndarray of shape (n_targets,) when y is 2-d
    n_features_in_ : int
    feature_names_in_ : ndarray of str, when X has string column names
    """

    _gpuml_kind = "ridge"
    _gpuml_attributes = ("coef_", "intercept_")

    def __init__(self, alpha=1.0, *, fit_intercept=True, solver="auto", device="auto"):
        self.alpha = alpha
        self.fit_intercept = fit_intercept
        self.solver = solver
        self.device = device

    def _alpha_json(self, n_targets):
        """alpha for the C ABI: a number (shared by every target) or a list (one per target)."""
        alpha = self.alpha
        if isinstance(alpha, (bool, np.bool_)) or not (
            isinstance(alpha, numbers.Real) or isinstance(alpha, (list, tuple, np.ndarray))
        ):
            raise ValueError(f"alpha must be a number >= 0 or an array of them, got {alpha!r}")
        try:
            values = np.asarray(alpha, dtype=np.float64)
        except (TypeError, ValueError) as e:
            raise ValueError(f"alpha must be a number >= 0 or an array of them, got {alpha!r}") from e
        if values.ndim > 1:
            raise ValueError(f"alpha must be a number or a 1-d array, got shape {values.shape}")
        values = values.reshape(-1)
        if values.size == 0 or not np.all(np.isfinite(values)) or np.any(values < 0):
            raise ValueError(f"alpha must be finite and >= 0, got {alpha!r}")
        if values.size not in (1, n_targets):
            raise ValueError(
                f"Number of targets and number of penalties do not correspond: {values.size} != {n_targets}"
            )
        return float(values[0]) if values.size == 1 else values.tolist()

    def _gpuml_params(self, X=None, n_targets=1):
        return {
            "alpha": self._alpha_json(n_targets),
            "fit_intercept": _check_bool(self.fit_intercept, "fit_intercept"),
            "solver": _check_choice(self.solver, "solver", _RIDGE_SOLVERS),
        }

    def fit(self, X, y, sample_weight=None):
        """Fits on X (n_samples, n_features) and y (n_samples,) or (n_samples, n_targets); returns self."""
        _check_bool(self.fit_intercept, "fit_intercept")  # bad parameters fail before the data is looked at
        _check_choice(self.solver, "solver", _RIDGE_SOLVERS)
        return self._fit(X, y, sample_weight, lambda n_targets: self._gpuml_params(n_targets=n_targets))

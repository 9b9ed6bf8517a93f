"""Matrix decompositions: PCA and TruncatedSVD on the CPU or a CUDA GPU."""

import math
import sys

import numpy as np
from scipy import linalg
from sklearn.base import ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.utils import check_array
from sklearn.utils.extmath import fast_logdet
from sklearn.utils.validation import check_is_fitted

from . import _array
from ._base import GpumlEstimator
from ._context import check_device

__all__ = ["PCA", "TruncatedSVD"]

# The solvers scikit-learn's PCA runs on sparse X ("auto" picks "arpack" there).
_SPARSE_SOLVERS = ("auto", "arpack", "covariance_eigh")

# The library's bound (more test vectors than min(n_samples, n_features) add nothing, so larger
# values are passed as this one: the same fit).
_MAX_OVERSAMPLES = 2**53


def _finite_tol(tol):
    """tol (without effect here) as JSON can carry it: scikit-learn accepts infinity."""
    return min(float(tol), sys.float_info.max)


class _Decomposition(ClassNamePrefixFeaturesOutMixin, TransformerMixin, GpumlEstimator):
    """fit / transform / fit_transform through the C ABI; inverse_transform from the fitted arrays."""

    def _gpuml_params(self, X=None):
        self._validate_params()
        check_device(self.device)
        # n_oversamples past the library's bound and an infinite tol change nothing: passed as the
        # bound and the largest float.
        n_oversamples = min(int(self.n_oversamples), _MAX_OVERSAMPLES)
        return self._json_params(n_oversamples=n_oversamples, tol=_finite_tol(self.tol))

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
    - "arpack": scikit-learn's rules for it (n_components an integer below min(n_samples,
      n_features), min(n_samples, n_features) - 1 by default), answered by the exact SVD of
      "full" restricted to n_components: the same subspace, to working precision rather than to
      ARPACK's ``tol``.
    - "randomized": Halko et al.'s randomized SVD (``iterated_power``, ``n_oversamples``,
      ``random_state``); random draws differ from scikit-learn's, so results agree to the
      accuracy of the method, not bit for bit.
    - "auto": scikit-learn's rule ("arpack" for sparse X).

    Sparse X (SciPy CSR / CSC, CuPy sparse, torch sparse CSR / CSC; float32 or float64, int32 or
    int64 indices) is taken on the CPU (device sparse matrices are read by the CPU context for
    now) with scikit-learn's rules: svd_solver "arpack", "covariance_eigh" or "auto" (others raise
    its TypeError), X centered implicitly, never densified. "arpack" runs a subspace iteration
    over X's products to convergence (``tol`` when set; with tol=0, exact where n_samples
    min(n_samples, n_features)² <= 2**32, else to ~1e-10 in float64); "covariance_eigh"
    forms XᵀX − n x̄x̄ᵀ from the sparse product, a dense (n_features, n_features) matrix (at most
    4096 features). transform takes sparse X whatever the fit's solver; score and score_samples
    take dense X only, as scikit-learn's.

    ``n_components`` may be an integer, a fraction of the variance in (0, 1), or "mle" (Minka's
    MLE, as scikit-learn's; "full" and "covariance_eigh" only). X is always centered (in float64
    arithmetic) before any product, so data with a large mean keeps its precision in float32.
    Accepted with no effect on the fit: ``copy`` (gpuml never writes to X), ``tol`` (the "arpack"
    answer is exact; on sparse X it is the subspace iteration's tolerance), ``power_iteration_normalizer`` (the randomized subspace iterations always
    orthonormalize, which spans the same subspace as LU or no normalization, more stably). A
    constant column gives a zero-variance direction, never NaN. ``device`` as in KMeans.
    Parameter values are checked as scikit-learn checks them (InvalidParameterError, with its
    messages). inverse_transform, score, score_samples, get_covariance and get_precision run on
    the host from the fitted arrays (device inputs are copied there; score_samples returns X's
    array type). components_, mean_ and explained_variance_ (used with whiten) may be assigned or
    changed in place, as in scikit-learn: transform, pickling and save_model use the new values.
    """

    _gpuml_kind = "pca"
    _gpuml_accepts_sparse = True  # transform: whatever the solver; fit: _SPARSE_SOLVERS (checked in fit)
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

    # Parameters: the table in src/decomposition/pca.cpp (see _params.py).
    _gpuml_sklearn_class = "sklearn.decomposition.PCA"

    def fit(self, X, y=None):
        """Fits on X (n_samples, n_features; dense, or sparse with "arpack" / "covariance_eigh" /
        "auto"); returns self."""
        params = self._gpuml_params()  # bad parameters fail before the data is looked at
        is_sparse = _array.is_sparse(X)
        if is_sparse and self.svd_solver not in _SPARSE_SOLVERS:  # scikit-learn's check and message
            raise TypeError(
                'PCA only support sparse inputs with the "arpack" and "covariance_eigh" solvers, while '
                f'"{self.svd_solver}" was passed. See TruncatedSVD for a possible alternative.'
            )
        X, kind = self._prepare_X(X, reset=True)
        self._gpuml_fit(X, kind, params=params)
        self._fit_svd_solver = self._resolved_solver(self.n_samples_, self.n_features_in_, is_sparse)
        return self

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = self.svd_solver in _SPARSE_SOLVERS  # as scikit-learn's
        return tags

    def _resolved_solver(self, n_samples, n_features, is_sparse=False):
        """The solver "auto" picks, by scikit-learn's rule (as the C++ fit's resolve_solver), for
        code that reads scikit-learn's private _fit_svd_solver. (Over several ranks the fit
        itself always takes covariance_eigh.)"""
        if self.svd_solver != "auto":
            return self.svd_solver
        if is_sparse:
            return "arpack"
        k = min(n_samples, n_features) if self.n_components is None else self.n_components
        if n_features <= 1000 and n_samples >= 10 * n_features:
            return "covariance_eigh"
        if max(n_samples, n_features) <= 500 or k == "mle":
            return "full"
        if 1 <= k < 0.8 * min(n_samples, n_features):
            return "randomized"
        return "full"

    def _read_fitted_attributes(self):
        super()._read_fitted_attributes()
        self.noise_variance_ = float(self.noise_variance_)

    def _inverse_matrix(self):
        if self.whiten:
            return np.sqrt(self.explained_variance_)[:, np.newaxis] * self.components_
        return self.components_

    def _inverse_offset(self):
        return self.mean_

    # -- the probabilistic PCA model (Tipping and Bishop), as scikit-learn's _BasePCA ----------
    def _model_components(self):
        """components_ (rows scaled by sqrt(explained_variance_) when whiten, as scikit-learn
        does) and explained_variance_ less noise_variance_, floored at 0."""
        components = np.asarray(self.components_)
        variance = np.asarray(self.explained_variance_)
        if self.whiten:
            components = components * np.sqrt(variance[:, np.newaxis])
        excess = np.where(variance > self.noise_variance_, variance - self.noise_variance_, 0.0).astype(variance.dtype)
        return components, excess

    def get_covariance(self):
        """The data covariance of the model: components_.T diag(explained_variance_ - noise_variance_)
        components_ + noise_variance_ I, shape (n_features, n_features)."""
        check_is_fitted(self)
        components, excess = self._model_components()
        cov = (components.T * excess) @ components
        cov.flat[:: cov.shape[0] + 1] += self.noise_variance_
        return cov

    def get_precision(self):
        """The inverse of get_covariance(), by the matrix inversion lemma (a k x k inverse)."""
        check_is_fitted(self)
        n_features = self.components_.shape[1]
        if self.n_components_ == 0:
            return np.eye(n_features) / self.noise_variance_
        if self.noise_variance_ == 0.0:
            return linalg.inv(self.get_covariance())
        components, excess = self._model_components()
        noise = self.noise_variance_
        precision = components @ components.T / noise
        precision.flat[:: precision.shape[0] + 1] += 1.0 / excess
        precision = components.T @ linalg.inv(precision) @ components
        precision /= -(noise**2)
        precision.flat[:: precision.shape[0] + 1] += 1.0 / noise
        return precision

    def _refuse_sparse(self, X):
        """score and score_samples take dense X only, as scikit-learn's (its TypeError and message)."""
        if _array.is_sparse(X):
            raise TypeError(
                "Sparse data was passed for X, but dense data is required. Use '.toarray()' to convert to a dense "
                "numpy array."
            )

    def score_samples(self, X):
        """The log-likelihood of each sample under the model, shape (n_samples,), in X's array type."""
        check_is_fitted(self)
        self._refuse_sparse(X)
        kind = _array.ArrayKind.of(X)
        X, _ = self._prepare_X(X, reset=False)
        log_like = self._log_likelihood(_array.to_numpy(X) if kind.is_device else X)
        return kind.from_numpy(np.ascontiguousarray(log_like)) if kind.is_device else log_like

    def score(self, X, y=None):
        """The average log-likelihood of the samples of X under the model (a float)."""
        check_is_fitted(self)
        self._refuse_sparse(X)
        kind = _array.ArrayKind.of(X)
        X, _ = self._prepare_X(X, reset=False)
        return float(np.mean(self._log_likelihood(_array.to_numpy(X) if kind.is_device else X)))

    def _log_likelihood(self, X):
        Xr = X - self.mean_
        precision = self.get_precision()
        log_like = -0.5 * np.sum(Xr * (Xr @ precision), axis=1)
        log_like -= 0.5 * (X.shape[1] * math.log(2.0 * math.pi) - fast_logdet(precision))
        return log_like


class TruncatedSVD(_Decomposition):
    """Dimensionality reduction by a truncated SVD of X (no centering), on the CPU or a CUDA GPU.

    Same parameters, attributes and results (signs by scikit-learn's svd_flip on the rows of
    components_) as ``sklearn.decomposition.TruncatedSVD``. ``algorithm``: "randomized" (Halko
    et al.; random draws differ from scikit-learn's) or "arpack" (scikit-learn's rule:
    n_components below min(n_samples, n_features); answered by an exact SVD, Householder QR on
    the device and the SVD of R on the host, so ``tol`` has no effect). Accepted with no effect:
    ``power_iteration_normalizer`` (the subspace iterations always orthonormalize, which spans
    the same subspace as LU or no normalization, more stably). Parameter values are checked as
    scikit-learn checks them (InvalidParameterError, with its messages). Sparse X (SciPy CSR /
    CSC, CuPy sparse, torch sparse CSR / CSC) is taken without a dense copy, on the CPU (device
    sparse matrices are read by the CPU context for now): the same solvers over sparse products,
    "arpack" running the subspace iteration to convergence.
    ``device`` as in KMeans. inverse_transform runs on the host. components_ may be assigned or
    changed in place, as in scikit-learn: transform, pickling and save_model use it.
    """

    _gpuml_kind = "truncated_svd"
    _gpuml_accepts_sparse = True
    _gpuml_attributes = ("components_", "explained_variance_", "explained_variance_ratio_", "singular_values_")
    _gpuml_settable = ("components_",)  # what transform uses

    # Parameters: the table in src/decomposition/truncated_svd.cpp (see _params.py).
    _gpuml_sklearn_class = "sklearn.decomposition.TruncatedSVD"

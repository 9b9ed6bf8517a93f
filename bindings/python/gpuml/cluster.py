"""Clustering estimators."""

import numbers
import warnings

import numpy as np
from sklearn.base import ClassNamePrefixFeaturesOutMixin, ClusterMixin, TransformerMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_array
from sklearn.utils.validation import check_is_fitted

from . import _array
from ._base import GpumlEstimator, seed_from

__all__ = ["KMeans"]

# What scikit-learn draws a seed below when random_state is None or a RandomState.


class KMeans(ClassNamePrefixFeaturesOutMixin, TransformerMixin, ClusterMixin, GpumlEstimator):
    """K-Means clustering (Lloyd's algorithm with k-means++ seeding) on the CPU or a CUDA GPU.

    Same parameters, attributes and results as ``sklearn.cluster.KMeans(algorithm="lloyd")``,
    plus ``device``: "auto" (the first GPU when there is one, else the CPU; for CUDA inputs,
    the GPU that holds them), "cpu", "cuda" or "cuda:N".

    Inputs may be NumPy arrays (or anything scikit-learn accepts), CuPy arrays, or PyTorch
    tensors; outputs of predict / transform / fit_predict / fit_transform have the input's type
    and device. Fitted attributes are NumPy arrays.

    Attributes
    ----------
    cluster_centers_ : ndarray of shape (n_clusters, n_features), the dtype of X
    labels_ : ndarray of shape (n_samples,), int32
    inertia_ : float, weighted sum of squared distances of samples to their closest center
    n_iter_ : int, Lloyd iterations of the best run
    n_features_in_ : int
    feature_names_in_ : ndarray of str, when X has string column names

    cluster_centers_ may be assigned or changed in place, as in scikit-learn: predict, transform,
    score, pickling and save_model use the new centers. The other attributes are read-only copies.
    """

    _gpuml_kind = "kmeans"
    _gpuml_attributes = ("cluster_centers_", "labels_", "inertia_", "n_iter_")
    _gpuml_settable = ("cluster_centers_",)  # what predict / transform / score use

    def __init__(
        self,
        n_clusters=8,
        *,
        init="k-means++",
        n_init="auto",
        max_iter=300,
        tol=1e-4,
        random_state=None,
        device="auto",
    ):
        self.n_clusters = n_clusters
        self.init = init
        self.n_init = n_init
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state
        self.device = device

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        return tags

    # -- parameters ----------------------------------------------------------------------
    def _check_params(self):
        def is_int(value):
            return isinstance(value, numbers.Integral) and not isinstance(value, bool)

        if not is_int(self.n_clusters) or self.n_clusters < 1:
            raise ValueError(f"n_clusters must be an integer >= 1, got {self.n_clusters!r}")
        if not ((isinstance(self.n_init, str) and self.n_init == "auto") or (is_int(self.n_init) and self.n_init >= 1)):
            raise ValueError(f'n_init must be "auto" or an integer >= 1, got {self.n_init!r}')
        if not is_int(self.max_iter) or self.max_iter < 1:
            raise ValueError(f"max_iter must be an integer >= 1, got {self.max_iter!r}")
        if not isinstance(self.tol, numbers.Real) or isinstance(self.tol, bool) or not 0 <= self.tol < np.inf:
            raise ValueError(f"tol must be a finite real number >= 0, got {self.tol!r}")
        if isinstance(self.init, str):
            if self.init not in ("k-means++", "random"):
                raise ValueError(f'init must be "k-means++", "random" or an array of initial centers, got {self.init!r}')
        elif callable(self.init):
            raise ValueError("init as a callable is not supported by gpuml's KMeans; pass the centers it returns")

    def _init_centers(self, X):
        """The explicit initial centers as a NumPy array in X's dtype, shape-checked."""
        centers = check_array(_array.to_numpy(self.init), dtype=_array.dtype_of(X), copy=True, order="C")
        if centers.shape[0] != self.n_clusters:
            raise ValueError(
                f"The shape of the initial centers {centers.shape} does not match the number of "
                f"clusters {self.n_clusters}."
            )
        if centers.shape[1] != X.shape[1]:
            raise ValueError(
                f"The shape of the initial centers {centers.shape} does not match the number of "
                f"features of the data {X.shape[1]}."
            )
        return centers

    def _resolved_n_init(self, init_is_array):
        if isinstance(self.n_init, str):  # "auto", checked in _check_params
            return 10 if not init_is_array and self.init == "random" else 1
        if init_is_array and self.n_init != 1:
            warnings.warn(
                "Explicit initial center position passed: performing only one init in "
                f"{type(self).__name__} instead of n_init={self.n_init}.",
                RuntimeWarning,
                stacklevel=3,
            )
            return 1
        return int(self.n_init)

    def _seed(self):
        """A fresh seed per fit for None (numpy's global RNG) or a RandomState; ints are seeds."""
        return seed_from(self.random_state)

    def _gpuml_params(self, X):
        init_is_array = not isinstance(self.init, str)
        params = self.get_params()
        return {
            "n_clusters": int(params["n_clusters"]),
            "init": self._init_centers(X).tolist() if init_is_array else params["init"],
            "n_init": self._resolved_n_init(init_is_array),
            "max_iter": int(params["max_iter"]),
            "tol": float(params["tol"]),
            "random_state": self._seed(),
        }

    # -- fitting -------------------------------------------------------------------------
    def fit(self, X, y=None, sample_weight=None):
        """Computes k-means clustering of X (n_samples x n_features); returns self."""
        self._check_params()
        X, kind = self._prepare_X(X, reset=True)
        if X.shape[0] < self.n_clusters:
            raise ValueError(f"n_samples={X.shape[0]} should be >= n_clusters={self.n_clusters}.")
        weights = self._prepare_sample_weight(sample_weight, X)
        self._gpuml_fit(X, kind, sample_weight=weights)
        self._n_features_out = self.cluster_centers_.shape[0]
        distinct_clusters = len(np.unique(self.labels_))
        if distinct_clusters < self.n_clusters:  # as scikit-learn warns, word for word
            warnings.warn(
                f"Number of distinct clusters ({distinct_clusters}) found smaller than "
                f"n_clusters ({self.n_clusters}). Possibly due to duplicate points in X.",
                ConvergenceWarning,
                stacklevel=2,
            )
        return self

    def fit_predict(self, X, y=None, sample_weight=None):
        """Fits and returns the cluster index of each sample (in X's array type)."""
        kind = _array.ArrayKind.of(X)
        self.fit(X, sample_weight=sample_weight)
        return kind.from_numpy(self.labels_)

    def fit_transform(self, X, y=None, sample_weight=None):
        """Fits and returns the distances of each sample to every center (in X's array type)."""
        return self.fit(X, sample_weight=sample_weight)._transform(X)

    # -- using the fitted model ------------------------------------------------------------
    def predict(self, X):
        """The index of the closest center of each sample (int32, in X's array type)."""
        check_is_fitted(self)
        X, kind = self._prepare_X(X, reset=False)
        return self._gpuml_apply("predict", X, kind)

    def transform(self, X):
        """Euclidean distances of each sample to every center: (n_samples, n_clusters), X's dtype."""
        return self._transform(X)

    def _transform(self, X):
        # Unwrapped by scikit-learn's set_output, so fit_transform wraps its result only once.
        check_is_fitted(self)
        X, kind = self._prepare_X(X, reset=False)
        return self._gpuml_apply("transform", X, kind, dtype=_array.dtype_of(X))

    def score(self, X, y=None, sample_weight=None):
        """Opposite of the (weighted) inertia of X on the fitted centers."""
        check_is_fitted(self)
        X, kind = self._prepare_X(X, reset=False)
        weights = self._prepare_sample_weight(sample_weight, X)
        distances = _array.to_numpy(self._gpuml_apply("transform", X, kind, dtype=np.float64))
        closest = distances.min(axis=1) ** 2
        if weights is not None:
            closest = closest * _array.to_numpy(weights).astype(np.float64)
        return -float(closest.sum())

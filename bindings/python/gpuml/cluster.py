"""Clustering estimators."""

import warnings

import numpy as np
from scipy import sparse
from sklearn.base import ClassNamePrefixFeaturesOutMixin, ClusterMixin, TransformerMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_array, check_random_state
from sklearn.utils.validation import check_is_fitted

from . import _array
from ._base import GpumlEstimator, _n_ranks
from ._context import get_context

__all__ = ["KMeans"]


class KMeans(ClassNamePrefixFeaturesOutMixin, TransformerMixin, ClusterMixin, GpumlEstimator):
    """K-Means clustering (Lloyd's algorithm with k-means++ seeding) on the CPU or a CUDA GPU.

    Same parameters, attributes and results as ``sklearn.cluster.KMeans(algorithm="lloyd")``,
    plus ``device``: "auto" (the first GPU when there is one, else the CPU; for CUDA inputs,
    the GPU that holds them), "cpu", "cuda" or "cuda:N".

    ``init`` also takes "k-means||", which scikit-learn lacks: scalable k-means++ (Bahmani et al.
    2012, Spark MLlib's default and cuML's "scalable-k-means++"). After one row drawn by weight,
    five rounds each keep every row with probability min(1, 2 n_clusters w D² / sum(w D²)) (one pass
    over X a round, D² the squared distance to the rows kept so far); k-means++ then reduces the kept
    rows, weighted by the weight nearest to each, to n_clusters centers. The inertia after Lloyd
    matches k-means++'s on average (within 1% in the tests), in six passes over X instead of one or
    more per center. ``n_init="auto"`` runs it once, as k-means++.

    Inputs may be NumPy arrays (or anything scikit-learn accepts), CuPy arrays, or PyTorch
    tensors; outputs of predict / transform / fit_predict / fit_transform have the input's type
    and device. Fitted attributes are NumPy arrays. Sparse X (SciPy CSR / CSC, CuPy sparse, torch
    sparse CSR / CSC) is taken without a dense copy, on the CPU (device sparse matrices are read
    by the CPU context for now): as in scikit-learn it is not centered, and distances come from
    the sparse products (|x|² - 2 x·c + |c|²); the centers are dense.

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
    _gpuml_accepts_sparse = True
    _gpuml_attributes = ("cluster_centers_", "labels_", "inertia_", "n_iter_")
    _gpuml_settable = ("cluster_centers_",)  # what predict / transform / score use

    # Parameters: KMeans's table in src/cluster/kmeans.cpp (see _params.py).
    _gpuml_sklearn_class = "sklearn.cluster.KMeans"
    _gpuml_python_forms = {"init": [callable]}  # called here; its centers go to the C ABI

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        return tags

    # -- parameters ----------------------------------------------------------------------
    def _init_centers(self, X, init):
        """Initial centers (an array-like) as a NumPy array in X's dtype, shape-checked."""
        centers = check_array(_array.to_numpy(init), dtype=_array.dtype_of(X), copy=True, order="C")
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
        """scikit-learn's number of runs: "auto" is 1 for k-means++ (and k-means||) and arrays, 10
        for "random" and callables; an array with n_init != 1 warns and runs once."""
        if isinstance(self.n_init, str):  # "auto"
            return 1 if init_is_array or self.init in ("k-means++", "k-means||") else 10
        if init_is_array and self.n_init != 1:
            warnings.warn(
                "Explicit initial center position passed: performing only one init in "
                f"{type(self).__name__} instead of n_init={self.n_init}.",
                RuntimeWarning,
                stacklevel=3,
            )
            return 1
        return int(self.n_init)

    def _gpuml_params(self, X, init=None):
        """The C ABI's parameters; `init`: centers to start from (an array init or a callable's),
        written into the JSON (see _fit_from for the faster path that sets them as an array)."""
        params, arrays = self._params_and_arrays(X, init)
        if "init" in arrays:
            params["init"] = arrays["init"].tolist()
        return params

    def _params_and_arrays(self, X, init=None):
        """The JSON parameters without the initial centers, and {"init": centers} where there are
        some: set as an array (gpuml_estimator_set_param_array), their text costs ~10-90 ms at
        256-1024 centers of 64 features."""
        if init is None and not isinstance(self.init, str):
            init = self._init_centers(X, self.init)
        n_init = self._resolved_n_init(not isinstance(self.init, str) and not callable(self.init))
        self._n_init = n_init  # scikit-learn's record of the runs "auto" (or a given init) resolved to
        given = {"n_init": 1 if init is not None else n_init}
        if init is not None:
            given["init"] = "k-means++"  # a valid stand-in, replaced by the centers set as an array
        return self._json_params(**given), ({"init": init} if init is not None else {})

    def _fit_from(self, X, kind, weights, init=None):
        """One C fit from the current parameters (and `init`, centers to start from)."""
        params, arrays = self._params_and_arrays(X, init)
        self._gpuml_fit(X, kind, sample_weight=weights, params=params, param_arrays=arrays)

    # -- fitting -------------------------------------------------------------------------
    def fit(self, X, y=None, sample_weight=None):
        """Computes k-means clustering of X (n_samples x n_features); returns self."""
        self._validate_params()
        X, kind = self._prepare_X(X, reset=True)
        # Over several ranks a rank may hold fewer rows than clusters: the fit checks all ranks' total.
        if X.shape[0] < self.n_clusters and _n_ranks(self._context_for(kind)) == 1:
            raise ValueError(f"n_samples={X.shape[0]} should be >= n_clusters={self.n_clusters}.")
        if self.algorithm == "elkan" and self.n_clusters == 1:  # scikit-learn's warning, word for word
            warnings.warn(
                "algorithm='elkan' doesn't make sense for a single cluster. Using 'lloyd' instead.", RuntimeWarning
            )
        weights = self._prepare_sample_weight(sample_weight, X)
        if callable(self.init):
            self._fit_from_callable(X, kind, weights)
        else:
            self._fit_from(X, kind, weights)
        self._n_features_out = self.cluster_centers_.shape[0]
        # Counted by the fit where the labels are (reading 10M labels back and counting them here
        # cost ~20 ms, np.unique's sort ~0.5 s).
        distinct_clusters = int(self._gpuml_handle.attribute(get_context("cpu"), "distinct_clusters_"))
        if distinct_clusters < self.n_clusters:  # as scikit-learn warns, word for word
            warnings.warn(
                f"Number of distinct clusters ({distinct_clusters}) found smaller than "
                f"n_clusters ({self.n_clusters}). Possibly due to duplicate points in X.",
                ConvergenceWarning,
                stacklevel=2,
            )
        return self

    def _fit_from_callable(self, X, kind, weights):
        """As scikit-learn: each of n_init runs starts from init(X, n_clusters, random_state) and the
        run of least inertia is kept (refitted from its centers: Lloyd from given centers is
        deterministic)."""
        random_state = check_random_state(self.random_state)
        X_host = X if sparse.issparse(X) else _array.to_numpy(X)  # scikit-learn hands sparse X to init as it is
        n_runs = self._resolved_n_init(False)
        self._n_init = n_runs
        best, best_start, best_inertia, best_labels = None, None, None, None
        for run in range(n_runs):
            centers = self._init_centers(X, self.init(X_host, self.n_clusters, random_state=random_state))
            self._fit_from(X, kind, weights, init=centers)
            labels = _array.to_numpy(self.labels_)
            # scikit-learn's rule: a later run replaces the kept one only when its inertia is lower
            # and its clustering differs (the same partition, relabelled, differs only by rounding).
            if best is None or (
                self.inertia_ < best_inertia and not _same_clustering(labels, best_labels, self.n_clusters)
            ):
                best, best_start, best_inertia, best_labels = run, centers, self.inertia_, labels
        if best != n_runs - 1:
            self._fit_from(X, kind, weights, init=best_start)

    def fit_predict(self, X, y=None, sample_weight=None):
        """Fits and returns the cluster index of each sample (in X's array type)."""
        kind = _array.sparse_kind(X) if _array.is_sparse(X) else _array.ArrayKind.of(X)
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


def _same_clustering(labels, other, n_clusters):
    """Whether each cluster of `labels` maps to one cluster of `other` (scikit-learn's test)."""
    pairs = np.unique(labels.astype(np.int64) * n_clusters + other.astype(np.int64))
    return np.unique(pairs // n_clusters).size == pairs.size

"""Random forests on the CPU or a CUDA GPU, with scikit-learn's RandomForestClassifier and
RandomForestRegressor interface."""

import functools
import numbers
import warnings

import numpy as np
from scipy import sparse
from sklearn.base import RegressorMixin
from sklearn.exceptions import DataConversionWarning
from sklearn.metrics import r2_score
# From the private module: scikit-learn's own classes even where sklearn.ensemble's names are
# rebound to gpuml's (the upstream test harness does that).
from sklearn.ensemble._forest import RandomForestClassifier as _SkClassifier
from sklearn.ensemble._forest import RandomForestRegressor as _SkRegressor
from sklearn.tree._criterion import Criterion
from sklearn.utils._param_validation import Hidden
from sklearn.utils.validation import check_is_fitted

from . import _array
from ._base import GpumlEstimator, _python_scalar
from ._classifier import GpumlClassifier
from ._context import check_device, get_context

__all__ = ["RandomForestClassifier", "RandomForestRegressor"]

# The forest's tree arrays (the C ABI's attributes; see include/gpuml/ensemble/random_forest.hpp).
_TREE_ATTRIBUTES = (
    "estimator_node_offsets_",
    "nodes_feature_",
    "nodes_threshold_",
    "nodes_children_left_",
    "nodes_children_right_",
    "nodes_value_",
    "nodes_impurity_",
    "nodes_n_samples_",
    "nodes_weighted_n_samples_",
    "estimator_seeds_",
)


def _warn_friedman_mse(criterion):
    """scikit-learn 1.9's constructor: "friedman_mse" is deprecated and maps to "squared_error"."""
    if isinstance(criterion, str) and criterion == "friedman_mse":
        warnings.warn(
            'Value `"friedman_mse"` for `criterion` is deprecated and will be removed in 1.11. It maps to '
            '`"squared_error"` as both were always equivalent. Use `criterion="squared_error"` to remove this warning.',
            FutureWarning,
        )
        return "squared_error"
    return criterion


def _reject_sparse_y(y):
    """scikit-learn's forests refuse a sparse y with this ValueError (not the validators' TypeError)."""
    if sparse.issparse(y):
        raise ValueError("sparse multilabel-indicator for y is not supported.")


class _Forest:
    """The parameters, fitted attributes and tree methods both forests share (mixed into the estimators)."""

    _gpuml_attributes = ("feature_importances_",) + _TREE_ATTRIBUTES
    _gpuml_unlisted = _TREE_ATTRIBUTES  # gigabytes at full depth: not in dir(), nor in the HTML repr
    _gpuml_accepts_sparse = True  # CSR / CSC, binned on the host (see _SHARED_DOC)

    # Values Python handles: a Criterion object (refused below), a callable oob_score (the C++
    # out-of-bag predictions, scored here), scikit-learn's list class_weight (of multi-output y).
    _gpuml_python_forms = {"criterion": (Hidden(Criterion),), "oob_score": (callable,), "class_weight": (list,)}

    def _forest_params(self, **given):
        """The C ABI's parameters, after scikit-learn's checks (the table's relations check the
        rest when the model is made)."""
        self._validate_params()
        check_device(self.device)
        if not isinstance(self.criterion, str):
            raise NotImplementedError(
                f"{type(self).__name__}: criterion must be one of the named criteria; a Criterion object "
                f"({self.criterion!r}) is not supported"
            )
        return self._json_params(oob_score=bool(self.oob_score), **given)

    def _fit_forest(self, X, kind, weights, y, params):
        """Fits, continuing the fitted forest with warm_start (scikit-learn's checks and warning)."""
        previous = getattr(self, "_gpuml_handle", None) if self.warm_start else None
        if previous is not None:
            kept = len(self.estimator_node_offsets_) - 1
            if self.n_estimators < kept:
                raise ValueError(
                    f"n_estimators={self.n_estimators} must be larger or equal to len(estimators_)={kept} when "
                    "warm_start==True"
                )
            if self.n_estimators == kept:
                warnings.warn("Warm-start fitting without increasing n_estimators does not fit new trees.", UserWarning)
                if not self.oob_score or hasattr(self, "oob_score_"):
                    return False  # scikit-learn fits nothing (it computes a missing out-of-bag score only)
        self._gpuml_fit(X, kind, sample_weight=weights, y=y, params=params, previous=previous)
        return True

    def _score_oob(self, y):
        """oob_score_ from a callable oob_score, as scikit-learn calls it (y as a column)."""
        if callable(self.oob_score):
            predicted = getattr(self, self._oob_attribute)
            if self._oob_attribute == "oob_decision_function_":
                predicted = np.argmax(predicted, axis=1)
            self.oob_score_ = self.oob_score(np.asarray(y).reshape(-1, 1), predicted)

    def _read_fitted_attributes(self):
        # The tree arrays are copied from the model on first access (GpumlEstimator's): a forest
        # at full depth has ~10^7 nodes, ~80 bytes each over the arrays, which a fit need not copy.
        super()._read_fitted_attributes()
        if self.oob_score:  # read by fit (the warning, a callable's score)
            context = get_context("cpu")  # attributes live on the host
            for name in ("oob_score_", self._oob_attribute):
                setattr(self, name, _python_scalar(self._gpuml_handle.attribute(context, name)))
        self.n_outputs_ = 1
        self.__dict__.pop("_gpuml_trees", None)  # estimators_ of the last fit

    def _sklearn_trees(self, tree_class, tree_params, classes):
        """The fitted trees as scikit-learn estimators of `tree_class` (their tree_ arrays built from ours)."""
        from sklearn.tree._tree import NODE_DTYPE, Tree

        n_classes = 1 if classes is None else len(classes)
        offsets = self.estimator_node_offsets_
        trees = []
        for t in range(len(offsets) - 1):
            nodes = slice(offsets[t], offsets[t + 1])
            count = offsets[t + 1] - offsets[t]
            records = np.zeros(count, dtype=NODE_DTYPE)
            records["left_child"] = self.nodes_children_left_[nodes]
            records["right_child"] = self.nodes_children_right_[nodes]
            records["feature"] = self.nodes_feature_[nodes]
            records["threshold"] = self.nodes_threshold_[nodes]
            records["impurity"] = self.nodes_impurity_[nodes]
            records["n_node_samples"] = self.nodes_n_samples_[nodes]
            records["weighted_n_node_samples"] = self.nodes_weighted_n_samples_[nodes]
            depth = np.zeros(count, dtype=np.int64)
            for node in range(count):  # children come after their parent
                if records["left_child"][node] >= 0:
                    depth[records["left_child"][node]] = depth[records["right_child"][node]] = depth[node] + 1
            tree = Tree(self.n_features_in_, np.array([n_classes], dtype=np.intp), 1)
            values = np.ascontiguousarray(self.nodes_value_[nodes].reshape(count, 1, n_classes))
            tree.__setstate__({"max_depth": int(depth.max()), "node_count": int(count), "nodes": records, "values": values})
            # The tree's bootstrap seed, in scikit-learn's range of seeds (trees grown from the
            # same seed, by a warm start or at once, have the same random_state).
            estimator = tree_class(**tree_params, random_state=int(self.estimator_seeds_[t]) & 0x7FFFFFFF)
            estimator.tree_ = tree
            estimator.n_features_in_ = self.n_features_in_
            estimator.n_outputs_ = 1
            estimator.max_features_ = self._resolved_max_features()
            if classes is not None:
                estimator.classes_ = np.arange(n_classes)  # as scikit-learn's forests' trees (class indices)
                estimator.n_classes_ = n_classes
            trees.append(estimator)
        return trees

    def _resolved_max_features(self):
        d, mf = self.n_features_in_, self.max_features
        if mf is None:
            return d
        if mf == "sqrt":
            return max(1, int(np.sqrt(d)))
        if mf == "log2":
            return max(1, int(np.log2(d)))
        if isinstance(mf, numbers.Integral):
            return int(mf)
        return max(1, int(mf * d))

    def _to_sklearn(self, forest_class, tree_class, classes):
        check_is_fitted(self)
        shared = dict(
            criterion=self.criterion, max_depth=self.max_depth, min_samples_split=self.min_samples_split,
            min_samples_leaf=self.min_samples_leaf, min_weight_fraction_leaf=self.min_weight_fraction_leaf,
            max_features=self.max_features, max_leaf_nodes=self.max_leaf_nodes,
            min_impurity_decrease=self.min_impurity_decrease, ccp_alpha=self.ccp_alpha,
        )
        forest = forest_class(n_estimators=self.n_estimators, bootstrap=self.bootstrap, oob_score=self.oob_score,
                              max_samples=self.max_samples, random_state=self.random_state, **shared)
        forest.estimators_ = self._sklearn_trees(tree_class, shared, classes)
        forest.estimator_ = tree_class(**shared)
        forest.n_features_in_ = self.n_features_in_
        forest.n_outputs_ = 1
        if hasattr(self, "feature_names_in_"):
            forest.feature_names_in_ = self.feature_names_in_
        if classes is not None:
            forest.classes_ = classes
            forest.n_classes_ = len(classes)
        return forest

    @property
    def estimators_(self):
        """The trees as fitted scikit-learn DecisionTreeClassifier / DecisionTreeRegressor objects
        (their ``tree_`` arrays built from the node arrays), for inspection (``export_text``,
        ``plot_tree``, ``decision_path``). Built on first access after a fit."""
        check_is_fitted(self, "estimator_node_offsets_")
        trees = self.__dict__.get("_gpuml_trees")
        if trees is None:
            trees = self.__dict__["_gpuml_trees"] = self.to_sklearn().estimators_
        return trees

    @property
    def estimator(self):
        """The unfitted template tree, as scikit-learn's forests hold it (not a parameter): its
        criterion and splitter name the kind of tree gpuml grows."""
        from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

        return DecisionTreeClassifier() if isinstance(self, RandomForestClassifier) else DecisionTreeRegressor()

    def __getattr__(self, name):
        # scikit-learn's feature_importances_ is a property that says "not fitted" before a fit.
        if name == "feature_importances_" and "_gpuml_handle" not in self.__dict__:
            check_is_fitted(self)
        return super().__getattr__(name)

    def __getstate__(self):
        state = super().__getstate__()
        state.pop("_gpuml_trees", None)  # estimators_ are rebuilt from the model
        return state

    def __len__(self):
        """The number of fitted trees (scikit-learn's ensembles)."""
        return len(self.estimators_)

    def __getitem__(self, index):
        return self.estimators_[index]

    def __iter__(self):
        return iter(self.estimators_)

    def _walk(self, X):
        """Per row and tree, the nodes of the row's path: yields (tree, rows, nodes) per step, nodes
        numbered within the tree; a row goes left when its value (as float64) <= the threshold, as
        the trees predict."""
        offsets = self.estimator_node_offsets_
        for t in range(len(offsets) - 1):
            nodes = slice(offsets[t], offsets[t + 1])
            feature, threshold = self.nodes_feature_[nodes], self.nodes_threshold_[nodes]
            left, right = self.nodes_children_left_[nodes], self.nodes_children_right_[nodes]
            rows = np.arange(X.shape[0])
            at = np.zeros(X.shape[0], dtype=np.int64)
            while rows.size:
                yield t, rows, at
                split = feature[at] >= 0
                rows, at = rows[split], at[split]
                values = X[rows, feature[at]]
                if sparse.issparse(X):  # single entries of the CSR rows (a matrix or array of them)
                    values = np.asarray(values.toarray() if sparse.issparse(values) else values).ravel()
                go_left = values.astype(np.float64) <= threshold[at]
                at = np.where(go_left, left[at], right[at]).astype(np.int64)

    def _host_X(self, X):
        check_is_fitted(self)
        X, kind = self._prepare_X(X, reset=False)
        if _array.is_sparse(X):  # walked entry by entry from its CSR rows, never densified
            if not sparse.issparse(X):  # CuPy / torch: its three arrays on the host
                fmt, shape, indptr, indices, values = _array.sparse_parts(X)
                parts = tuple(_array.to_numpy(a) for a in (values, indices, indptr))
                X = (sparse.csr_matrix if fmt == "csr" else sparse.csc_matrix)(parts, shape=shape)
            X = sparse.csr_matrix(X, copy=True)
            X.sum_duplicates()
            values = X.data
        else:
            X = values = _array.to_numpy(X)
        if not np.isfinite(values).all():
            raise ValueError("Input X contains NaN or infinity.")
        return X

    def apply(self, X):
        """The leaf each row of X reaches in each tree: (n_samples, n_estimators) int64, node
        indices within the tree (as ``estimators_[t].tree_``)."""
        X = self._host_X(X)
        leaves = np.empty((X.shape[0], len(self.estimator_node_offsets_) - 1), dtype=np.int64)
        for t, rows, nodes in self._walk(X):
            leaves[rows, t] = nodes  # the last step of a row is its leaf
        return leaves

    def decision_path(self, X):
        """(indicator, n_nodes_ptr) as scikit-learn's: indicator (n_samples, total nodes) CSR with a 1
        for every node each row passes through; tree t's nodes are columns
        [n_nodes_ptr[t], n_nodes_ptr[t + 1])."""
        from scipy.sparse import csr_matrix

        X = self._host_X(X)
        offsets = np.asarray(self.estimator_node_offsets_, dtype=np.int64)
        row_parts, column_parts = [], []
        for t, rows, nodes in self._walk(X):
            row_parts.append(rows)
            column_parts.append(nodes + offsets[t])
        rows, columns = np.concatenate(row_parts), np.concatenate(column_parts)
        indicator = csr_matrix((np.ones(rows.size, dtype=np.int64), (rows, columns)), shape=(X.shape[0], int(offsets[-1])))
        indicator.sort_indices()
        return indicator, offsets.copy()

    def _warn_rows_without_oob(self):
        """scikit-learn's warning when some row was drawn by every tree (the model counts them)."""
        if int(self._gpuml_handle.attribute(get_context("cpu"), "oob_missing_")):
            warnings.warn(
                "Some inputs do not have OOB scores. This probably means too few trees were used to compute any "
                "reliable OOB estimates.",
                UserWarning,
                stacklevel=3,
            )


_SHARED_DOC = """
    Trees are grown on per-feature quantile bins (at most ``n_bins``, scikit-learn's histogram
    thresholds), which reproduce scikit-learn's exact thresholds wherever a feature has at most
    ``n_bins`` distinct values. Bootstrap follows scikit-learn 1.9: with sample or class weights,
    rows are drawn in proportion to them. The same ``random_state`` gives the same forest on any
    thread count and device. With ``max_leaf_nodes``, trees grow best-first as in scikit-learn.
    ``warm_start=True`` keeps the fitted trees and grows trees len(estimators_)..n_estimators-1 as a
    fit of n_estimators trees with the same random_state would. ``oob_score`` may be a callable
    ``score(y, predictions)``. ``ccp_alpha`` prunes each tree after growth (scikit-learn's minimal
    cost-complexity pruning). ``min_weight_fraction_leaf`` > 0 grows the trees on the host (also on
    ``device="cuda"``).

    Accepted and ignored: ``n_jobs`` (the CPU backend uses all of OpenMP's threads), ``verbose``
    (gpuml prints nothing). Not supported (NotImplementedError): ``monotonic_cst`` other than None, criterion ``"absolute_error"`` or a Criterion object;
    multi-output y and NaN in X are ValueErrors. ``criterion="friedman_mse"`` is scikit-learn 1.9's
    deprecated alias of ``"squared_error"`` (FutureWarning).

    Inputs may be NumPy arrays, CuPy arrays or PyTorch tensors. Sparse X (SciPy CSR / CSC; CuPy
    and torch sparse matrices are read back to the host) is taken as scikit-learn's forests take
    it, binned on the host without densifying its values: the bins come from its columns (implicit zeros
    counted), and the fit gives the same forest, bit for bit, as on the dense matrix with the same
    values (predict, predict_proba, apply and decision_path too). The one dense structure of a fit,
    dense or sparse X, is its n_samples x n_features matrix of one-byte bin codes. With
    ``device="cuda"``, sparse X is binned on the host and the same trees grow on the GPU from its
    codes; predictions from sparse X run on the host threads (``device="auto"`` keeps sparse X on
    the CPU).
"""


class RandomForestClassifier(_Forest, GpumlClassifier):
    __doc__ = (
        """A random forest classifier with scikit-learn's RandomForestClassifier semantics (labels may be
    of any type np.unique sorts).
"""
        + _SHARED_DOC
        + """
    Attributes
    ----------
    classes_, n_classes_, n_features_in_, feature_names_in_, feature_importances_, n_outputs_,
    estimators_ (scikit-learn DecisionTreeClassifier objects with their ``tree_`` arrays),
    oob_score_ and oob_decision_function_ (with oob_score); the trees as flat node arrays
    concatenated over trees: estimator_node_offsets_ (tree t owns nodes [offsets[t], offsets[t+1])),
    nodes_feature_, nodes_threshold_, nodes_children_left_, nodes_children_right_, nodes_value_
    (class fractions), nodes_impurity_, nodes_n_samples_, nodes_weighted_n_samples_, numbered as
    scikit-learn's ``tree_`` arrays, and estimator_seeds_ (each tree's bootstrap seed).
    """
    )

    _gpuml_kind = "random_forest_classifier"
    _gpuml_sklearn_class = "sklearn.ensemble._forest.RandomForestClassifier"
    _oob_attribute = "oob_decision_function_"

    def _gpuml_params(self, X=None):
        return self._forest_params(class_weight=None)  # fit sets class_weight from the classes

    def fit(self, X, y, sample_weight=None):
        """Fits on X (n_samples, n_features) and the labels y (n_samples,); returns self."""
        params = self._gpuml_params()  # bad parameters fail before the data is looked at
        _reject_sparse_y(y)
        X, y, kind = self._prepare_X_labels(X, y)
        classes, labels = self._labels(y, kind)
        weights = self._prepare_sample_weight(sample_weight, X, ensure_non_negative=True)
        params["class_weight"] = self._class_weight_json(classes)
        if self.warm_start and getattr(self, "_gpuml_handle", None) is not None and not (
            classes.shape == self.classes_.shape and np.array_equal(classes, self.classes_)
        ):  # the model sees class indices only: the kept trees would vote for other classes
            raise ValueError(
                f"With warm_start, y must have the classes of the fitted forest ({self.classes_.tolist()}); "
                f"got {classes.tolist()}"
            )
        if not self._fit_forest(X, kind, weights, labels, params):
            return self
        self.classes_ = classes
        self.n_classes_ = int(classes.size)
        if self.oob_score:
            self._warn_rows_without_oob()
            self._score_oob(_array.to_numpy(labels))
        return self

    def to_sklearn(self):
        """This forest as a fitted ``sklearn.ensemble.RandomForestClassifier`` (same trees, same
        predictions for float32 X; scikit-learn compares float32 values with the thresholds)."""
        from sklearn.tree import DecisionTreeClassifier

        forest = self._to_sklearn(_SkClassifier, DecisionTreeClassifier, self.classes_)
        forest.class_weight = self.class_weight
        return forest


class RandomForestRegressor(_Forest, RegressorMixin, GpumlEstimator):
    __doc__ = (
        """A random forest regressor with scikit-learn's RandomForestRegressor semantics (criterion
    "squared_error" or "poisson").
"""
        + _SHARED_DOC
        + """
    Attributes
    ----------
    n_features_in_, feature_names_in_, feature_importances_, n_outputs_, estimators_
    (DecisionTreeRegressor objects), oob_score_ (R², or the callable's score) and oob_prediction_
    (with oob_score), and the tree arrays of RandomForestClassifier with nodes_value_ holding each
    node's mean target.
    """
    )

    _gpuml_kind = "random_forest_regressor"
    _gpuml_sklearn_class = "sklearn.ensemble._forest.RandomForestRegressor"
    _oob_attribute = "oob_prediction_"

    def _gpuml_params(self, X=None):
        return self._forest_params()

    def fit(self, X, y, sample_weight=None):
        """Fits on X (n_samples, n_features) and the targets y (n_samples,); returns self."""
        params = self._gpuml_params()
        _reject_sparse_y(y)
        X, y, kind = self._prepare_X_y(X, y)
        if len(tuple(y.shape)) == 2:
            if y.shape[1] != 1:
                raise ValueError(f"RandomForestRegressor supports one target for now; y has shape {tuple(y.shape)}")
            warnings.warn(  # as scikit-learn's column_or_1d
                "A column-vector y was passed when a 1d array was expected. Please change the shape of y to "
                "(n_samples,), for example using ravel().",
                DataConversionWarning,
                stacklevel=2,
            )
            y = y.reshape(-1)
        weights = self._prepare_sample_weight(sample_weight, X, ensure_non_negative=True)
        if self._fit_forest(X, kind, weights, y, params) and self.oob_score:
            self._warn_rows_without_oob()
            self._score_oob(_array.to_numpy(y))
        return self

    def to_sklearn(self):
        """This forest as a fitted ``sklearn.ensemble.RandomForestRegressor`` (same trees, same
        predictions for float32 X)."""
        from sklearn.tree import DecisionTreeRegressor

        return self._to_sklearn(_SkRegressor, DecisionTreeRegressor, None)

    def predict(self, X):
        """The mean prediction of the trees, (n_samples,) float64, in X's array type."""
        check_is_fitted(self)
        X, kind = self._prepare_X(X, reset=False)
        return self._gpuml_apply("predict", X, kind)

    def score(self, X, y, sample_weight=None):
        """R² of predict(X) against y (device inputs are read back first)."""
        y_pred = _array.to_numpy(self.predict(X))
        weights = None if sample_weight is None else _array.to_numpy(sample_weight)
        return r2_score(_array.to_numpy(y), y_pred, sample_weight=weights)


def _mapping_friedman_mse(init):
    """The generated __init__, then scikit-learn 1.9's constructor step: the deprecated
    "friedman_mse" becomes "squared_error", with its FutureWarning."""

    @functools.wraps(init)  # keeps the generated signature
    def __init__(self, *args, **kwargs):
        init(self, *args, **kwargs)
        self.criterion = _warn_friedman_mse(self.criterion)

    return __init__


RandomForestRegressor.__init__ = _mapping_friedman_mse(RandomForestRegressor.__init__)

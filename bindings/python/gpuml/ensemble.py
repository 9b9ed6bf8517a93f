"""Random forests on the CPU or a CUDA GPU, with scikit-learn's RandomForestClassifier and
RandomForestRegressor interface."""

import numbers
import warnings

import numpy as np
from sklearn.base import RegressorMixin
from sklearn.exceptions import DataConversionWarning
from sklearn.metrics import r2_score
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

from . import _array
from ._base import GpumlEstimator, _python_scalar
from ._classifier import GpumlClassifier
from ._context import get_context

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
)
_SEED_BOUND = np.iinfo(np.int32).max


def _is_int(value):
    return isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_))


def _is_real(value):
    return isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))


def _int_or_fraction(value, name, *, least, fraction_high, fraction_closed):
    """An int >= least, or a float fraction in (0, fraction_high] ((0, fraction_high) when not
    fraction_closed); returned as a JSON int or float, which the C ABI tells apart."""
    if _is_int(value):
        if value < least:
            raise ValueError(f"The '{name}' parameter must be an int >= {least} or a float; got {value!r}.")
        return int(value)
    if _is_real(value):
        ok = 0.0 < value < fraction_high or (fraction_closed and value == fraction_high)
        if not ok:
            bound = "]" if fraction_closed else ")"
            raise ValueError(f"The '{name}' parameter must be a float in (0, {fraction_high}{bound}; got {value!r}.")
        return float(value)
    raise ValueError(f"The '{name}' parameter must be an int or a float; got {value!r}.")


class _Forest:
    """The parameters and fitted attributes both forests share (mixed into the estimators)."""

    _gpuml_attributes = ("feature_importances_",) + _TREE_ATTRIBUTES

    def _forest_params(self, criteria):
        if not (_is_int(self.n_estimators) and self.n_estimators >= 1):
            raise ValueError(f"The 'n_estimators' parameter must be an int >= 1; got {self.n_estimators!r}.")
        if self.criterion not in criteria:
            raise ValueError(f"The 'criterion' parameter must be one of {criteria}; got {self.criterion!r}.")
        if self.max_depth is not None and not (_is_int(self.max_depth) and self.max_depth >= 1):
            raise ValueError(f"The 'max_depth' parameter must be an int >= 1 or None; got {self.max_depth!r}.")
        max_features = self.max_features
        if max_features is None or (isinstance(max_features, str) and max_features in ("sqrt", "log2")):
            pass
        elif _is_int(max_features) or _is_real(max_features):
            max_features = _int_or_fraction(max_features, "max_features", least=1, fraction_high=1.0, fraction_closed=True)
        else:
            raise ValueError(
                f"The 'max_features' parameter must be 'sqrt', 'log2', None, an int or a float; got {max_features!r}."
            )
        if self.max_leaf_nodes is not None and not (_is_int(self.max_leaf_nodes) and self.max_leaf_nodes >= 2):
            raise ValueError(f"The 'max_leaf_nodes' parameter must be an int >= 2 or None; got {self.max_leaf_nodes!r}.")
        if not (_is_real(self.min_impurity_decrease) and 0 <= self.min_impurity_decrease < np.inf):
            raise ValueError(
                f"The 'min_impurity_decrease' parameter must be a finite float >= 0; got {self.min_impurity_decrease!r}."
            )
        for name in ("bootstrap", "oob_score"):
            if not isinstance(getattr(self, name), (bool, np.bool_)):
                raise ValueError(f"The '{name}' parameter must be a bool; got {getattr(self, name)!r}.")
        max_samples = self.max_samples
        if max_samples is not None:
            if _is_int(max_samples):
                max_samples = _int_or_fraction(max_samples, "max_samples", least=1, fraction_high=1.0, fraction_closed=True)
            elif _is_real(max_samples) and max_samples > 0 and np.isfinite(max_samples):
                max_samples = float(max_samples)
            else:
                raise ValueError(f"The 'max_samples' parameter must be None, an int >= 1 or a float > 0; got {max_samples!r}.")
        if not (_is_int(self.n_bins) and 2 <= self.n_bins <= 256):
            raise ValueError(f"The 'n_bins' parameter must be an int in [2, 256]; got {self.n_bins!r}.")
        random_state = self.random_state
        if random_state is None or isinstance(random_state, np.random.RandomState):
            seed = int(check_random_state(random_state).randint(_SEED_BOUND))  # as scikit-learn draws seeds
        elif _is_int(random_state) and random_state >= 0:
            seed = int(random_state)
        else:
            raise ValueError(f"random_state must be None, an int >= 0 or a RandomState; got {random_state!r}.")
        return {
            "n_estimators": int(self.n_estimators),
            "criterion": self.criterion,
            "max_depth": None if self.max_depth is None else int(self.max_depth),
            "min_samples_split": _int_or_fraction(
                self.min_samples_split, "min_samples_split", least=2, fraction_high=1.0, fraction_closed=True
            ),
            "min_samples_leaf": _int_or_fraction(
                self.min_samples_leaf, "min_samples_leaf", least=1, fraction_high=1.0, fraction_closed=False
            ),
            "min_impurity_decrease": float(self.min_impurity_decrease),
            "max_features": max_features,
            "max_leaf_nodes": None if self.max_leaf_nodes is None else int(self.max_leaf_nodes),
            "bootstrap": bool(self.bootstrap),
            "oob_score": bool(self.oob_score),
            "max_samples": max_samples,
            "n_bins": int(self.n_bins),
            "random_state": seed,
        }

    def _read_fitted_attributes(self):
        context = get_context("cpu")  # attributes live on the host
        names = self._gpuml_attributes + (("oob_score_", self._oob_attribute) if self.oob_score else ())
        for name in names:
            setattr(self, name, _python_scalar(self._gpuml_handle.attribute(context, name)))
        self.n_outputs_ = 1

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
            estimator = tree_class(**tree_params)
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
        if _is_int(mf):
            return int(mf)
        return max(1, int(mf * d))

    def _to_sklearn(self, forest_class, tree_class, classes):
        check_is_fitted(self)
        shared = dict(
            criterion=self.criterion, max_depth=self.max_depth, min_samples_split=self.min_samples_split,
            min_samples_leaf=self.min_samples_leaf, max_features=self.max_features, max_leaf_nodes=self.max_leaf_nodes,
            min_impurity_decrease=self.min_impurity_decrease,
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
        ``plot_tree``, ``decision_path``). Built on each access."""
        return self.to_sklearn().estimators_

    def _warn_rows_without_oob(self, missing):
        if missing:
            warnings.warn(
                "Some inputs do not have OOB scores. This probably means too few trees were used to compute any "
                "reliable OOB estimates.",
                UserWarning,
                stacklevel=3,
            )


class RandomForestClassifier(_Forest, GpumlClassifier):
    """A random forest classifier with scikit-learn's RandomForestClassifier semantics.

    Trees are grown on per-feature quantile bins (at most ``n_bins``, scikit-learn's histogram
    thresholds), which reproduce scikit-learn's exact thresholds wherever a feature has at most
    ``n_bins`` distinct values. Bootstrap follows scikit-learn 1.9: with sample or class weights,
    rows are drawn in proportion to them. The same ``random_state`` gives the same forest on any
    thread count. With ``max_leaf_nodes``, trees grow best-first as in scikit-learn. Not supported
    yet: ``min_weight_fraction_leaf``, ``ccp_alpha``, ``warm_start``, ``monotonic_cst``,
    multi-output y.

    Labels may be of any type np.unique sorts. Inputs may be NumPy arrays, CuPy arrays or PyTorch
    tensors. On ``device="cuda"`` the forest is computed on the host for now (the CUDA kernels
    are the next step of the work).

    Attributes
    ----------
    classes_, n_classes_, n_features_in_, feature_names_in_, feature_importances_, n_outputs_,
    oob_score_ and oob_decision_function_ (with oob_score=True); the trees as flat node arrays
    concatenated over trees: estimator_node_offsets_ (tree t owns nodes [offsets[t], offsets[t+1])),
    nodes_feature_, nodes_threshold_, nodes_children_left_, nodes_children_right_, nodes_value_
    (class fractions), nodes_impurity_, nodes_n_samples_, nodes_weighted_n_samples_, numbered as
    scikit-learn's ``tree_`` arrays.
    """

    _gpuml_kind = "random_forest_classifier"
    _oob_attribute = "oob_decision_function_"

    def __init__(
        self,
        n_estimators=100,
        *,
        criterion="gini",
        max_depth=None,
        min_samples_split=2,
        min_samples_leaf=1,
        max_features="sqrt",
        max_leaf_nodes=None,
        min_impurity_decrease=0.0,
        bootstrap=True,
        oob_score=False,
        random_state=None,
        class_weight=None,
        max_samples=None,
        n_bins=256,
        device="auto",
    ):
        self.n_estimators = n_estimators
        self.criterion = criterion
        self.max_depth = max_depth
        self.min_samples_split = min_samples_split
        self.min_samples_leaf = min_samples_leaf
        self.max_features = max_features
        self.max_leaf_nodes = max_leaf_nodes
        self.min_impurity_decrease = min_impurity_decrease
        self.bootstrap = bootstrap
        self.oob_score = oob_score
        self.random_state = random_state
        self.class_weight = class_weight
        self.max_samples = max_samples
        self.n_bins = n_bins
        self.device = device

    def _gpuml_params(self, X=None):
        params = self._forest_params(("gini", "entropy", "log_loss"))
        cw = self.class_weight
        if cw is not None and not isinstance(cw, dict) and cw not in ("balanced", "balanced_subsample"):
            raise ValueError(f"class_weight must be None, 'balanced', 'balanced_subsample' or a dict; got {cw!r}.")
        return params

    def fit(self, X, y, sample_weight=None):
        """Fits on X (n_samples, n_features) and the labels y (n_samples,); returns self."""
        params = self._gpuml_params()  # bad parameters fail before the data is looked at
        X, y, kind = self._prepare_X_labels(X, y)
        classes, labels = self._labels(y)
        weights = self._prepare_sample_weight(sample_weight, X, ensure_non_negative=True)
        params["class_weight"] = self._class_weight_json(classes)
        self._gpuml_fit(X, kind, sample_weight=weights, y=labels, params=params)
        self.classes_ = classes
        self.n_classes_ = int(classes.size)
        if self.oob_score:
            self._warn_rows_without_oob(int(np.sum(self.oob_decision_function_.sum(axis=1) == 0)))
        return self

    def to_sklearn(self):
        """This forest as a fitted ``sklearn.ensemble.RandomForestClassifier`` (same trees, same
        predictions for float32 X; scikit-learn compares float32 values with the thresholds)."""
        from sklearn.ensemble import RandomForestClassifier as SkForest
        from sklearn.tree import DecisionTreeClassifier

        forest = self._to_sklearn(SkForest, DecisionTreeClassifier, self.classes_)
        forest.class_weight = self.class_weight
        return forest


class RandomForestRegressor(_Forest, RegressorMixin, GpumlEstimator):
    """A random forest regressor with scikit-learn's RandomForestRegressor semantics (see
    RandomForestClassifier for the binning, the bootstrap, devices and what is not supported yet;
    criterion "squared_error" or "poisson").

    Attributes
    ----------
    n_features_in_, feature_names_in_, feature_importances_, n_outputs_, oob_score_ (R²) and
    oob_prediction_ (with oob_score=True), and the tree arrays of RandomForestClassifier with
    nodes_value_ holding each node's mean target.
    """

    _gpuml_kind = "random_forest_regressor"
    _oob_attribute = "oob_prediction_"

    def __init__(
        self,
        n_estimators=100,
        *,
        criterion="squared_error",
        max_depth=None,
        min_samples_split=2,
        min_samples_leaf=1,
        max_features=1.0,
        max_leaf_nodes=None,
        min_impurity_decrease=0.0,
        bootstrap=True,
        oob_score=False,
        random_state=None,
        max_samples=None,
        n_bins=256,
        device="auto",
    ):
        self.n_estimators = n_estimators
        self.criterion = criterion
        self.max_depth = max_depth
        self.min_samples_split = min_samples_split
        self.min_samples_leaf = min_samples_leaf
        self.max_features = max_features
        self.max_leaf_nodes = max_leaf_nodes
        self.min_impurity_decrease = min_impurity_decrease
        self.bootstrap = bootstrap
        self.oob_score = oob_score
        self.random_state = random_state
        self.max_samples = max_samples
        self.n_bins = n_bins
        self.device = device

    def _gpuml_params(self, X=None):
        return self._forest_params(("squared_error", "poisson"))

    def fit(self, X, y, sample_weight=None):
        """Fits on X (n_samples, n_features) and the targets y (n_samples,); returns self."""
        params = self._gpuml_params()
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
        self._gpuml_fit(X, kind, sample_weight=weights, y=y, params=params)
        return self

    def to_sklearn(self):
        """This forest as a fitted ``sklearn.ensemble.RandomForestRegressor`` (same trees, same
        predictions for float32 X)."""
        from sklearn.ensemble import RandomForestRegressor as SkForest
        from sklearn.tree import DecisionTreeRegressor

        return self._to_sklearn(SkForest, DecisionTreeRegressor, None)

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

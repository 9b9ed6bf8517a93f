"""What gpuml's classifiers share: labels of any type mapped to class indices for the C ABI (on
the host, or on the device for numeric torch / CuPy labels), class_weight as the C ABI reads it,
and predictions mapped back to the labels."""

import ctypes
import numbers
import pickle

import numpy as np
from scipy import sparse
from sklearn.base import ClassifierMixin
from sklearn.metrics import accuracy_score
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_consistent_length, check_is_fitted, column_or_1d, validate_data

from . import _array, _lib
from ._base import GpumlEstimator, _n_ranks


def _log(probabilities):
    """The natural logarithm in the array's own library (NumPy, torch or CuPy)."""
    if isinstance(probabilities, np.ndarray):
        return np.log(probabilities)
    if hasattr(probabilities, "log"):  # torch tensors
        return probabilities.log()
    import cupy

    return cupy.log(probabilities)


def _unique_inverse(y):
    """np.unique(y, return_inverse=True) of 1-d host labels; integer labels within a small range
    through a count per value (one pass, no sort: ~10x faster at 500k rows)."""
    if y.dtype.kind in "iu" and y.size:
        low, high = y.min(), y.max()
        if int(high) - int(low) < 1 << 16:
            # In 64-bit integers (wrapping for uint64 past 2^63): the differences are exact.
            low_64 = np.asarray(low).astype(np.int64)
            shifted = y.astype(np.int64) - low_64
            present = np.flatnonzero(np.bincount(shifted))
            index_of = np.zeros(int(high) - int(low) + 1, dtype=np.intp)
            index_of[present] = np.arange(present.size)
            return (present + low_64).astype(y.dtype), index_of[shifted]
    return np.unique(y, return_inverse=True)


def _device_labels(y):
    """(classes_ as NumPy, each row's class index as int32 on the device) for a 1-d numeric torch or
    CuPy y, without copying y to the host: np.unique on a million host labels would cost more
    than a GPU fit. Checks what check_classification_targets checks for numbers: float labels
    must be finite and whole."""
    torch_y = _array.ArrayKind.of(y).library == "torch"
    if torch_y:
        import torch as xp

        floating = y.dtype.is_floating_point
        if y.dtype.is_complex:
            raise ValueError(f"Complex data not supported: y has dtype {y.dtype}")
    else:
        import cupy as xp

        if y.dtype.kind not in "biuf":
            raise ValueError(f"y has dtype {y.dtype}; device labels must be numbers")
        floating = y.dtype.kind == "f"
    if floating:
        if not bool(xp.isfinite(y).all()):
            raise ValueError("Input y contains NaN or infinity.")
        if not bool((y == (xp.round(y) if torch_y else xp.around(y))).all()):
            raise ValueError(
                "Unknown label type: continuous. Maybe you are trying to fit a classifier, which expects "
                "discrete classes on a regression target with continuous values."
            )
    classes, inverse = xp.unique(y, return_inverse=True)
    index = inverse.to(xp.int32).contiguous() if torch_y else xp.ascontiguousarray(inverse.astype(xp.int32))
    return _array.to_numpy(classes), index



def _allgather_int64(context, values):
    """Every rank's int64 `values` (the same length on every rank), in rank order (collective)."""
    values = np.ascontiguousarray(values, dtype=np.int64)
    out = np.empty(_n_ranks(context) * values.size, dtype=np.int64)
    _lib.check(_lib.lib.gpuml_context_allgather(context.handle, ctypes.c_void_p(values.ctypes.data), values.size, 3,
                                                ctypes.c_void_p(out.ctypes.data)))
    return out


def _classes_over_ranks(context, name, local):
    """The sorted union of every rank's classes (collective). `local` is this rank's classes, or
    the exception its labels' checks raised: every rank learns whether some rank failed, and then
    all raise (none is left waiting in the fit's first collective)."""
    failed = isinstance(local, Exception)
    # Each rank's classes as pickled bytes (the ranks of one job trust each other), padded to
    # whole int64 words: any label type, strings included.
    payload = np.frombuffer(b"" if failed else pickle.dumps(local, protocol=5), dtype=np.uint8)
    heads = _allgather_int64(context, [int(failed), payload.size]).reshape(-1, 2)
    if failed:
        raise local
    if heads[:, 0].any():
        raise ValueError(f"{name}: the labels failed their checks on rank(s) {np.flatnonzero(heads[:, 0]).tolist()}")
    width = -(-int(heads[:, 1].max()) // 8)
    words = np.zeros(width * 8, dtype=np.uint8)
    words[: payload.size] = payload
    gathered = _allgather_int64(context, words.view(np.int64)).view(np.uint8).reshape(-1, width * 8)
    parts = [pickle.loads(gathered[r, : heads[r, 1]].tobytes()) for r in range(gathered.shape[0])]
    return np.unique(np.concatenate(parts))


class GpumlClassifier(ClassifierMixin, GpumlEstimator):
    """Base of gpuml's classifiers: the C model sees class indices 0..n_classes-1; classes_ stays in Python."""

    def _class_weight_json(self, classes):
        """class_weight for the C ABI, where the labels are the class indices: None, "balanced",
        or [[index, weight], ...]. A dict follows scikit-learn's rule: classes missing from it
        weigh 1, and keys that are not classes are an error only when some class is missing."""
        class_weight = self.class_weight
        if class_weight is None or isinstance(class_weight, str):
            return class_weight
        pairs, missing = [], []
        for index, label in enumerate(classes):
            key = label.item() if isinstance(label, np.generic) else label
            if key not in class_weight:
                missing.append(key)
                continue
            weight = class_weight[key]
            if isinstance(weight, (bool, np.bool_)) or not isinstance(weight, numbers.Real) or not (
                np.isfinite(weight) and weight >= 0
            ):
                raise ValueError(f"class_weight[{key!r}] must be a finite number >= 0, got {weight!r}")
            pairs.append([index, float(weight)])
        if missing and len(pairs) != len(class_weight):
            raise ValueError(f"The classes, {missing}, are not in class_weight")
        return pairs


    def _labels(self, y, kind):
        """(classes_, each row's class index as int32) for prepared labels y (see _prepare_X_labels);
        at least two classes. Over several ranks (the fit's context holds a communicator) the
        classes are those of all ranks' labels, so a rank may lack some (a partition without a
        rare class)."""
        context = self._context_for(kind)
        over_ranks = _n_ranks(context) > 1
        if isinstance(y, np.ndarray) or over_ranks:
            y = y if isinstance(y, np.ndarray) else _array.to_numpy(y)
            try:
                check_classification_targets(y)
                classes, class_index = _unique_inverse(y.reshape(-1))
            except ValueError as e:
                if not over_ranks:
                    raise
                classes = e
            if over_ranks:
                all_classes = _classes_over_ranks(context, type(self).__name__, classes)
                class_index = np.searchsorted(all_classes, classes)[class_index]
                classes = all_classes
            labels = np.ascontiguousarray(class_index.reshape(-1), dtype=np.int32)
        else:
            classes, labels = _device_labels(y)
        if classes.size < 2:
            raise ValueError(
                f"{type(self).__name__} needs samples of at least 2 classes in the data, but the data contains "
                f"only one class: {classes[0]!r}"
            )
        return classes, labels

    def _accepts_large_sparse(self):
        """Whether fit takes SciPy sparse X with int64 indices (scikit-learn's accept_large_sparse)."""
        return True

    def _prepare_X_labels(self, X, y):
        """Validated X (for the C ABI) and the labels y; returns (X, y, ArrayKind of X), y either a
        host 1-d array of labels or, for a numeric 1-d torch / CuPy y, that device array."""
        kind = _array.ArrayKind.of(X)
        if y is None:
            raise ValueError(
                f"This {type(self).__name__} estimator requires y to be passed, but the target y is None."
            )
        y_kind = _array.ArrayKind.of(y)
        if self._gpuml_accepts_sparse and _array.is_sparse(X):
            # Sparse X (never densified): SciPy's through validate_data with y, as scikit-learn;
            # CuPy / torch sparse X checked by _prepare_sparse_X, y read on the host.
            y_host = _array.to_numpy(y) if y_kind.is_device else _array.ArrayKind.host_input(y)
            if sparse.issparse(X):
                X, y = validate_data(
                    self,
                    X,
                    y_host,
                    reset=True,
                    dtype=[np.float64, np.float32],
                    accept_sparse=["csr", "csc"],
                    accept_large_sparse=self._accepts_large_sparse(),
                )
                return X, y, _array.sparse_kind(X)
            X, kind = self._prepare_sparse_X(X, reset=True, dtype=(np.float64, np.float32))
            y = column_or_1d(y_host, warn=True)
            if y.dtype.kind in "fc" and not np.all(np.isfinite(y)):
                raise ValueError("Input y contains NaN or infinity.")
            check_consistent_length(np.empty((X.shape[0], 0)), y)
            return X, y, kind
        if kind.is_device and y_kind.is_device and y_kind.library in ("torch", "cupy") and len(tuple(y.shape)) == 1:
            X, kind = self._prepare_X(X, reset=True)
            if y.shape[0] != X.shape[0]:
                raise ValueError(
                    f"Found input variables with inconsistent numbers of samples: [{X.shape[0]}, {y.shape[0]}]"
                )
            return X, y, kind
        # Other labels are read on the host: np.unique needs them there.
        y_host = _array.to_numpy(y) if y_kind.is_device else _array.ArrayKind.host_input(y)
        if not kind.is_device:
            X, y = validate_data(
                self,
                _array.ArrayKind.host_input(X),
                y_host,
                reset=True,
                dtype=[np.float64, np.float32],
                order="C",
                accept_sparse=False,
            )
            return X, y, kind
        X, kind = self._prepare_X(X, reset=True)
        y = column_or_1d(y_host, warn=True)
        if y.dtype.kind in "fc" and not np.all(np.isfinite(y)):
            raise ValueError("Input y contains NaN or infinity.")
        check_consistent_length(np.empty((X.shape[0], 0)), y)
        return X, y, kind


    # -- using the fitted model ------------------------------------------------------------
    def _predict_dtypes(self):
        """The float dtypes X may have at predict time (the first is the one others convert to)."""
        return (np.float64, np.float32)

    def _apply(self, method, X, dtype=None):
        check_is_fitted(self)
        X, kind = self._prepare_X(X, reset=False, dtype=self._predict_dtypes())
        return self._gpuml_apply(method, X, kind, dtype=dtype), kind

    def predict_proba(self, X):
        """Class probabilities (n_samples, n_classes), columns in classes_ order, in X's array type."""
        return self._apply("predict_proba", X)[0]

    def predict_log_proba(self, X):
        """log(predict_proba(X)), as scikit-learn computes it."""
        return _log(self.predict_proba(X))

    def predict(self, X):
        """The most probable class of each sample, as classes_'s values (X's array type and device
        for numeric labels; a NumPy array for other labels)."""
        # The C model's labels are the class indices, written as float64 (exact below 2^53).
        index, kind = self._apply("predict", X)
        classes = self.classes_
        numeric = classes.dtype.kind in "biuf"
        if kind.is_device and numeric:
            return kind.from_numpy(classes)[_array.device_astype(index, np.int64)]  # the lookup stays on the device
        labels = classes[_array.to_numpy(index).astype(np.intp)]
        return kind.wrap(labels) if numeric else labels


    def score(self, X, y, sample_weight=None):
        """Mean accuracy of predict(X) against y (ClassifierMixin's score; device inputs are read back first)."""
        y_pred = _array.to_numpy(self.predict(X))
        weights = None if sample_weight is None else _array.to_numpy(sample_weight)
        return accuracy_score(_array.to_numpy(y), y_pred, sample_weight=weights)

"""Plumbing every gpuml estimator shares: the C estimator handle, input preparation for host and
device arrays, calls through the C ABI, fitted attributes, and pickling.

An estimator subclass declares
- ``_gpuml_kind``: the C ABI's estimator kind ("kmeans", ...);
- ``_gpuml_attributes``: the fitted attributes the Python object offers from the C model (each
  copied on first access);
- ``_gpuml_settable``: those of them that the C model's outputs are computed from. As in
  scikit-learn, a user may assign them or change them in place, and predict / transform / score
  / pickling / save_model then use the new values: before each of those, the ones that changed
  are pushed into the C model (``gpuml_estimator_set_attribute``, which checks them as a loaded
  model is checked: shape, finite values). Other attributes are copies for reading: changing them
  changes no output and is not kept by pickling;
- ``_gpuml_params(self, X)``: the JSON parameter object for the C ABI (called at fit, when the
  scikit-learn parameters are final), built from ``get_params()``;
- ``_gpuml_accepts_sparse``: True for estimators whose C side takes sparse X (CSR / CSC:
  SciPy's, CuPy's, torch's); their scikit-learn tag ``input_tags.sparse`` is then True. Others
  refuse sparse X with scikit-learn's TypeError. Sparse X is never densified here.

Every ``fit`` (and ``fit_transform``, ``fit_predict``, ``partial_fit``) of a subclass is wrapped
(``__init_subclass__``) so that a call that raises leaves the estimator exactly as it was:
scikit-learn's validation records n_features_in_ and the like before the C library has accepted
the data, and a refused refit must not leave attributes of a model that was never made.

Supervised estimators prepare X and y together with ``_prepare_X_y`` and weights with
``_prepare_sample_weight``; y keeps its 1-d or 2-d shape, which the C side mirrors in the shapes of
its fitted attributes and outputs.
"""

import ctypes
import functools
import json
import numbers

import numpy as np
from scipy import sparse
from sklearn.base import BaseEstimator
from sklearn.utils import check_array, check_random_state
from sklearn.utils.validation import _check_sample_weight, check_is_fitted, validate_data

from . import _array, _lib, _params
from ._context import check_device, get_context

_SEED_BOUND = np.iinfo(np.int32).max


def worded_as_sklearn(constraints, sklearn_class):
    """``constraints`` (a ``_parameter_constraints`` table) worded as scikit-learn's own: each
    parameter's constraints in scikit-learn's order, and each ``StrOptions`` replaced by scikit-learn's
    for the same parameter where it offers the same choices (messages print the choices as a set, and
    a set's order depends on how it was built). Then gpuml's InvalidParameterError reads word for
    word as scikit-learn's where gpuml accepts what scikit-learn accepts. A ``StrOptions`` offering
    more choices than scikit-learn's (KMeans's init "k-means||") takes the place of theirs."""
    from sklearn.utils._param_validation import Hidden, StrOptions, make_constraint

    def key(constraint):
        hidden = isinstance(constraint, Hidden)
        inner = constraint.constraint if hidden else constraint
        if isinstance(inner, StrOptions):
            return (hidden, frozenset(inner.options))
        return (hidden, str(make_constraint(inner)))

    def extends(ours, their):  # ours: a visible StrOptions with every choice of their visible one
        return (isinstance(ours, StrOptions) and isinstance(their, StrOptions)
                and set(their.options) <= set(ours.options))

    theirs = getattr(sklearn_class, "_parameter_constraints", {})
    worded = {}
    for name, rules in constraints.items():
        same = {key(c): (i, c) for i, c in enumerate(theirs.get(name, []))}

        def position(c):
            if key(c) in same:
                return same[key(c)][0]
            wider = [i for i, t in enumerate(theirs.get(name, [])) if extends(c, t)]
            return wider[0] if wider else len(same)  # stable: ours last

        ordered = sorted(rules, key=position)
        worded[name] = [same[key(c)][1] if key(c) in same else c for c in ordered]
    return worded


def seed_from(random_state):
    """The integer seed a fit hands the C estimator, read as scikit-learn reads random_state: an
    int is the seed (scikit-learn's range, 0 to 2**32 - 1, checked here: building a RandomState
    only to check it cost ~0.15 ms per fit); None (NumPy's global RandomState) or a RandomState
    draws one."""
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, (bool, np.bool_)):
        if not 0 <= random_state <= 2**32 - 1:
            raise ValueError("Seed must be between 0 and 2**32 - 1")
        return int(random_state)
    return int(check_random_state(random_state).randint(_SEED_BOUND))


class EstimatorHandle:
    """Owns one gpuml_estimator_t."""

    def __init__(self, handle):
        self.handle = handle
        self._free = _lib.lib.gpuml_estimator_free  # kept: module globals may be gone at shutdown

    @classmethod
    def create(cls, kind, params):
        handle = _lib._estimator_t()
        text = json.dumps(params, allow_nan=False)
        _lib.check(_lib.lib.gpuml_estimator_create(kind.encode("ascii"), text.encode("utf-8"), ctypes.byref(handle)))
        return cls(handle)

    @classmethod
    def deserialize(cls, data):
        data = bytes(data)
        handle = _lib._estimator_t()
        _lib.check(_lib.lib.gpuml_estimator_deserialize(data, len(data), ctypes.byref(handle)))
        return cls(handle)

    def serialize(self):
        size = ctypes.c_uint64()
        _lib.check(_lib.lib.gpuml_estimator_serialized_size(self.handle, ctypes.byref(size)))
        buffer = ctypes.create_string_buffer(max(size.value, 1))
        _lib.check(_lib.lib.gpuml_estimator_serialize(self.handle, buffer, size.value))
        return buffer.raw[: size.value]

    def get_params(self):
        text = ctypes.c_char_p()
        _lib.check(_lib.lib.gpuml_estimator_get_params(self.handle, ctypes.byref(text)))
        return json.loads(text.value.decode("utf-8"))

    def fit(self, context, X, y=None, sample_weight=None, sparse=False):
        """X, y, sample_weight: gpuml_array_t descriptors (y and sample_weight may be None); X a
        gpuml_sparse_t when `sparse`."""
        function = _lib.lib.gpuml_estimator_fit_sparse if sparse else _lib.lib.gpuml_estimator_fit
        _lib.check(
            function(
                context.handle,
                self.handle,
                ctypes.byref(X),
                ctypes.byref(y) if y is not None else None,
                ctypes.byref(sample_weight) if sample_weight is not None else None,
            )
        )

    def output_shape(self, method, n_rows):
        """(gpuml dtype code, shape tuple) of `method`'s output for n_rows rows."""
        dtype, ndim, shape = ctypes.c_int32(), ctypes.c_int32(), _lib._i64x2()
        _lib.check(
            _lib.lib.gpuml_estimator_output_shape(
                self.handle, method.encode("ascii"), n_rows, ctypes.byref(dtype), ctypes.byref(ndim), shape
            )
        )
        return dtype.value, tuple(shape[i] for i in range(ndim.value))

    def apply(self, method, context, X, out, sparse=False):
        """Runs predict / transform / predict_proba with descriptors X (gpuml_sparse_t when
        `sparse`) and out."""
        function = getattr(_lib.lib, f"gpuml_estimator_{method}_sparse" if sparse else f"gpuml_estimator_{method}")
        _lib.check(function(context.handle, self.handle, ctypes.byref(X), ctypes.byref(out)))

    def warm_start_from(self, previous):
        """This estimator's next fit continues from `previous`'s fitted model (warm_start)."""
        _lib.check(_lib.lib.gpuml_estimator_warm_start_from(self.handle, previous.handle))

    def set_attribute(self, context, name, value):
        """Replaces a fitted attribute with `value` (a host NumPy array of the attribute's shape)."""
        value = np.array(value, order="C")  # not ascontiguousarray: it makes 0-d arrays 1-d
        desc, keepalive = _array.descriptor(value)
        _lib.check(
            _lib.lib.gpuml_estimator_set_attribute(context.handle, self.handle, name.encode("ascii"), ctypes.byref(desc))
        )
        del keepalive

    def set_param_array(self, context, name, value):
        """Sets an array-valued parameter (KMeans "init") from a host NumPy array, without JSON text."""
        desc, keepalive = _array.descriptor(np.ascontiguousarray(value))
        _lib.check(
            _lib.lib.gpuml_estimator_set_param_array(context.handle, self.handle, name.encode("ascii"), ctypes.byref(desc))
        )
        del keepalive

    def attribute(self, context, name):
        """A fitted attribute as a NumPy array (0-d for scalars)."""
        dtype, ndim, shape = ctypes.c_int32(), ctypes.c_int32(), _lib._i64x2()
        encoded = name.encode("ascii")
        _lib.check(
            _lib.lib.gpuml_estimator_attribute_shape(
                self.handle, encoded, ctypes.byref(dtype), ctypes.byref(ndim), shape
            )
        )
        value = np.empty(tuple(shape[i] for i in range(ndim.value)), dtype=_array.numpy_dtype(dtype.value))
        out, keepalive = _array.descriptor(value)
        _lib.check(_lib.lib.gpuml_estimator_get_attribute(context.handle, self.handle, encoded, ctypes.byref(out)))
        del keepalive
        return value

    def __del__(self):
        handle = getattr(self, "handle", None)
        if handle is not None and handle.value:
            self._free(handle)
            self.handle = None


def _n_ranks(context):
    """The number of ranks of a context's communicator (1 without one)."""
    rank, n_ranks = ctypes.c_int32(), ctypes.c_int32()
    _lib.check(_lib.lib.gpuml_context_rank(context.handle, ctypes.byref(rank), ctypes.byref(n_ranks)))
    return n_ranks.value


def _python_scalar(value):
    """0-d arrays become Python numbers, as scikit-learn's scalar attributes are."""
    if isinstance(value, np.ndarray) and value.ndim == 0:
        return value.item()
    return value


_STATE_KEEPING_METHODS = ("fit", "fit_transform", "fit_predict", "partial_fit")


def _keeps_state_on_error(method):
    """`method` of an estimator, restoring the instance's __dict__ when it raises."""

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        saved = dict(self.__dict__)  # shallow: fits replace the fitted values, they never edit them in place
        try:
            return method(self, *args, **kwargs)
        except BaseException:
            self.__dict__.clear()
            self.__dict__.update(saved)
            raise

    wrapper._gpuml_keeps_state = True
    return wrapper


class GpumlEstimator(BaseEstimator):
    """Base class of gpuml's scikit-learn estimators (see the module docstring)."""

    _gpuml_kind = None
    _gpuml_attributes = ()
    _gpuml_unlisted = ()  # of those, the ones dir() leaves out
    _gpuml_settable = ()
    _gpuml_accepts_sparse = False
    # Estimators whose parameters come from their C++ table (_params.py) name their scikit-learn
    # counterpart ("sklearn.cluster.KMeans"), how many leading parameters are positional, and the
    # values Python converts before the C ABI (e.g. {"init": [callable]}).
    _gpuml_sklearn_class = None
    _gpuml_positional = 1
    _gpuml_python_forms = {}

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "_gpuml_sklearn_class" in cls.__dict__:
            _params.install(cls)
        for name in _STATE_KEEPING_METHODS:
            method = cls.__dict__.get(name)
            if callable(method) and not getattr(method, "_gpuml_keeps_state", False):
                setattr(cls, name, _keeps_state_on_error(method))

    def _gpuml_params(self, X):
        raise NotImplementedError

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        if self._gpuml_accepts_sparse:
            tags.input_tags.sparse = True
        return tags

    def _json_params(self, **given):
        """The parameters as the C ABI's JSON (for estimators with a parameter table); `given`
        supplies values already converted (e.g. initial centers checked against X)."""
        return _params.json_params(self, self._gpuml_schema, **given)

    # -- devices and inputs ---------------------------------------------------------------
    def _context_for(self, kind):
        """The context computing on an input of ArrayKind `kind` (dense or sparse) with this estimator's device."""
        device = check_device(self.device)
        if device == "auto" and kind.is_device:
            device = f"cuda:{kind.device_id}"  # compute where the data already lives
        return get_context(device)

    def _prepare_X(self, X, *, reset, dtype=(np.float64, np.float32)):
        """Validates X and returns (X ready for the C ABI, its ArrayKind).

        Host inputs go through scikit-learn's validate_data (which also records or checks
        n_features_in_ and feature_names_in_). Device inputs are checked here without leaving
        the device; the C++ side checks their values for NaN and infinity.
        """
        if self._gpuml_accepts_sparse and _array.is_sparse(X):
            return self._prepare_sparse_X(X, reset=reset, dtype=dtype)
        kind = _array.ArrayKind.of(X)
        if not kind.is_device:
            X = validate_data(
                self, _array.ArrayKind.host_input(X), reset=reset, dtype=list(dtype), order="C", accept_sparse=False
            )
            return X, kind
        X = self._check_device_array(X, dtype=dtype, name="X")
        self._record_n_features(X.shape[1], reset)
        return X, kind

    def _prepare_sparse_X(self, X, *, reset, dtype):
        """Sparse X (estimators with _gpuml_accepts_sparse): SciPy matrices through validate_data
        (CSR and CSC kept, other formats converted to CSR as scikit-learn does; NaN and infinity
        refused there), device matrices checked here (values converted to a float dtype on the
        device). Structure (indptr, indices) is checked by the C library, which names the problem."""
        from scipy import sparse as sp

        if sp.issparse(X):
            X = validate_data(
                self, X, reset=reset, dtype=list(dtype), accept_sparse=["csr", "csc"], accept_large_sparse=True
            )
            return X, _array.sparse_kind(X)
        kind = _array.sparse_kind(X)
        fmt, shape, _, _, values = _array.sparse_parts(X)
        if len(shape) != 2:
            raise ValueError(f"Expected 2D array, got {len(shape)}D sparse X of shape {shape}")
        if shape[0] < 1 or shape[1] < 1:
            raise ValueError(f"Found array with shape {shape}: a minimum of 1 sample and 1 feature is required.")
        current = _array.device_dtype(values) if kind.is_device else np.dtype(values.dtype)
        wanted = [np.dtype(d) for d in dtype]
        if current not in wanted:
            X = X.to(_array._torch_dtype(wanted[0])) if _array._is_torch_tensor(X) else X.astype(wanted[0])
        self._record_n_features(shape[1], reset)
        return X, kind

    def _record_n_features(self, n_features, reset):
        """n_features_in_ as validate_data keeps it: set on fit (dropping feature names of an
        earlier fit), checked against X on predict."""
        if reset:
            self.n_features_in_ = n_features
            if hasattr(self, "feature_names_in_"):
                del self.feature_names_in_
        elif n_features != self.n_features_in_:
            raise ValueError(
                f"X has {n_features} features, but {type(self).__name__} is expecting "
                f"{self.n_features_in_} features as input."
            )

    def _prepare_X_y(self, X, y, *, dtype=(np.float64, np.float32)):
        """Validates X and a numeric target y (1-d or 2-d) for fit; returns (X, y, ArrayKind of X).

        y gets X's float dtype and lives where X lives (host y of a device X is copied to the device,
        device y of a host X is copied to the host). Host inputs go through validate_data (which
        also records n_features_in_ and feature_names_in_, and checks y for NaN and infinity).
        """
        takes_sparse = self._gpuml_accepts_sparse and _array.is_sparse(X)
        sparse_host = takes_sparse and sparse.issparse(X)  # SciPy's: validate_data below; others: _prepare_X
        kind = _array.sparse_kind(X) if takes_sparse else _array.ArrayKind.of(X)
        y_is_device = y is not None and _array.ArrayKind.of(y).is_device
        if not kind.is_device:
            y_host = _array.to_numpy(y) if y_is_device else _array.ArrayKind.host_input(y)
            X, y = validate_data(
                self,
                _array.ArrayKind.host_input(X),
                y_host,
                reset=True,
                dtype=list(dtype),
                order="C",
                # SciPy CSR / CSC kept (other formats converted to CSR), for estimators that take them.
                accept_sparse=["csr", "csc"] if sparse_host else False,
                accept_large_sparse=True,
                y_numeric=True,
                multi_output=True,
            )
            return X, np.ascontiguousarray(y, dtype=X.dtype), kind
        if y is None:
            raise ValueError(
                f"This {type(self).__name__} estimator requires y to be passed, but the target y is None."
            )
        X, kind = self._prepare_X(X, reset=True, dtype=dtype)
        target = _array.dtype_of(X)
        if y_is_device:
            ndim = len(tuple(y.shape))
            y = self._check_device_array(y, dtype=(target,), name="y", ndim=ndim if ndim in (1, 2) else 2)
        else:
            y = check_array(
                _array.ArrayKind.host_input(y), dtype=target, ensure_2d=False, order="C", input_name="y"
            )
            if y.ndim > 2:
                raise ValueError(f"y must be 1-d or 2-d, got shape {y.shape}")
            y = kind.from_numpy(y)
        if y.shape[0] != X.shape[0]:
            raise ValueError(
                f"Found input variables with inconsistent numbers of samples: [{X.shape[0]}, {y.shape[0]}]"
            )
        return X, y, kind

    def _prepare_sample_weight(self, sample_weight, X, *, ensure_non_negative=False):
        """None, or the weights as a 1-d array of X's dtype (on the device for device weights)."""
        if sample_weight is None:
            return None
        dtype = X.dtype if sparse.issparse(X) else _array.dtype_of(X)
        if _array.ArrayKind.of(sample_weight).is_device:
            weights = self._check_device_array(sample_weight, dtype=(dtype,), name="sample_weight", ndim=1)
            if weights.shape[0] != X.shape[0]:
                raise ValueError(f"sample_weight.shape == {tuple(weights.shape)}, expected ({X.shape[0]},)!")
            return weights
        # Host weights (with host or device X): scikit-learn's checks need only X's length.
        host_X = X if isinstance(X, np.ndarray) else np.empty((X.shape[0], 0), dtype=dtype)
        return _check_sample_weight(
            _array.ArrayKind.host_input(sample_weight), host_X, dtype=dtype, ensure_non_negative=ensure_non_negative
        )

    @staticmethod
    def _check_device_array(X, *, dtype, name, ndim=2):
        """Shape and dtype checks of a CUDA array, converting (on the device) like check_array."""
        shape = tuple(X.shape)
        if len(shape) != ndim:
            if ndim == 2:
                raise ValueError(
                    f"Expected 2D array, got {len(shape)}D array instead: {name} has shape {shape}. "
                    "Reshape your data either using array.reshape(-1, 1) if your data has a single "
                    "feature or array.reshape(1, -1) if it contains a single sample."
                )
            raise ValueError(f"{name} must have {ndim} dimension(s), got shape {shape}")
        if shape[0] < 1:
            raise ValueError(f"Found array with 0 sample(s) (shape={shape}) while a minimum of 1 is required.")
        if ndim == 2 and shape[1] < 1:
            raise ValueError(f"Found array with 0 feature(s) (shape={shape}) while a minimum of 1 is required.")
        current = _array.device_dtype(X)
        wanted = [np.dtype(d) for d in dtype]
        if current.kind == "c":
            raise ValueError(f"Complex data not supported: {name} has dtype {current}")
        if current.kind not in "biuf":
            raise ValueError(f"{name} has dtype {current}; expected a numeric array")
        target = current if current in wanted else wanted[0]
        if target != current or not _array.device_is_c_contiguous(X):
            X = _array.device_astype(X, target)
        return X

    # -- calls through the C ABI -----------------------------------------------------------
    def _gpuml_fit(self, X, kind, sample_weight=None, y=None, params=None, previous=None, param_arrays=None):
        """Creates a fresh C estimator from the current parameters, fits it, and copies the
        fitted attributes into this object. X (and y, sample_weight) are prepared arrays;
        `params` (the JSON parameters) defaults to ``self._gpuml_params(X)``; `param_arrays`
        ({name: host array}) are set after them, as arrays rather than text. `previous` (an
        EstimatorHandle): a fitted model the fit continues (warm_start)."""
        is_sparse = _array.is_sparse(X)
        context = self._context_for(kind)
        params = self._gpuml_params(X) if params is None else params
        if "random_state" in params and getattr(self, "random_state", 0) is None and _n_ranks(context) > 1:
            # None over several ranks: each rank's NumPy RNG would draw its own seed, and the ranks
            # would refuse to fit with different seeds. Unset, the C++ fit takes rank 0's seed.
            params = {**params, "random_state": None}
        handle = EstimatorHandle.create(self._gpuml_kind, params)
        for name, value in (param_arrays or {}).items():
            handle.set_param_array(context, name, value)
        if previous is not None:
            handle.warm_start_from(previous)
        keep = []
        X_desc, k = (_array.sparse_descriptor if is_sparse else _array.descriptor)(X, kind.device_id)
        keep.append(k)
        y_desc = w_desc = None
        if y is not None:
            y_desc, k = _array.descriptor(y, kind.device_id)
            keep.append(k)
        if sample_weight is not None:
            w_desc, k = _array.descriptor(sample_weight, _array.ArrayKind.of(sample_weight).device_id)
            keep.append(k)
        kind.synchronize()
        handle.fit(context, X_desc, y_desc, w_desc, sparse=is_sparse)
        self._gpuml_handle = handle
        self._read_fitted_attributes()
        return self

    def _read_fitted_attributes(self):
        """Makes the C model's fitted attributes readable: each is copied from the model on first
        access (a C ABI round trip of ~20 us each; PCA has eleven, and a fit that nobody inspects
        should not pay for them). The copies live in one dict, filled in place, so that reading an
        attribute (in predict, say) leaves the estimator's __dict__ as it was."""
        for name in self._gpuml_attributes:
            self.__dict__.pop(name, None)  # set by a subclass or an older version
        self.__dict__["_gpuml_read"] = {}
        # For each settable attribute handed out or assigned: the value the C model holds (a
        # private copy), what _push_changed_attributes compares the Python attribute with.
        self.__dict__["_gpuml_held"] = {}

    def __dir__(self):
        # The model's attributes come through __getattr__: listed here, dir(), inspect.getmembers
        # and so scikit-learn's HTML repr of the fitted attributes find them, as on its estimators.
        # (Not _gpuml_unlisted: the forests' node arrays, gigabytes at full depth, which an HTML repr
        # of the estimator would copy out.)
        names = set(super().__dir__())
        if self.__dict__.get("_gpuml_read") is not None:
            names.update(name for name in self._gpuml_attributes if name not in self._gpuml_unlisted)
        return sorted(names)

    def __getattr__(self, name):
        # Only called when normal lookup fails: the model's attributes, read on first use.
        read = self.__dict__.get("_gpuml_read")
        if read is None or name not in self._gpuml_attributes:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        if name not in read:
            value = self.__dict__["_gpuml_handle"].attribute(get_context("cpu"), name)
            if name in self._gpuml_settable:
                self.__dict__["_gpuml_held"][name] = value.copy()
            read[name] = _python_scalar(self._presented(name, value))
        return read[name]

    def _presented(self, name, value):
        """The model's `value` of attribute `name` in the shape Python shows it in: the model's own,
        unless fit recorded another in ``_gpuml_shapes`` (scikit-learn's shapes for y of shape
        (n, 1), say; the same values)."""
        shape = self.__dict__.get("_gpuml_shapes", {}).get(name)
        if shape is None:
            return value
        if shape == () and value.size > 1:  # one number for equal values (intercept_ 0.0 without fit_intercept)
            return value.reshape(-1)[0]
        return value.reshape(shape)

    def _held_value(self, name):
        """What the C model holds for the settable attribute `name` (read when not yet known)."""
        held = self.__dict__.setdefault("_gpuml_held", {})
        if name not in held:  # assigned without having been read
            held[name] = self.__dict__["_gpuml_handle"].attribute(get_context("cpu"), name)
        return held[name]

    def _push_changed_attributes(self):
        """Pushes into the C model the settable attributes whose Python value (assigned, or changed
        in place) differs from what the model holds; attributes never read nor assigned are
        skipped. A value the model refuses (another shape, NaN or infinity) is a ValueError and
        leaves the model as it was."""
        handle = self.__dict__.get("_gpuml_handle")
        read = self.__dict__.get("_gpuml_read")
        if handle is None or read is None or not self._gpuml_settable:
            return
        held = self.__dict__.setdefault("_gpuml_held", {})
        for name in self._gpuml_settable:
            if name in self.__dict__:  # assigned: plain attribute lookup finds it, not __getattr__
                value = self.__dict__[name]
            elif name in read:
                value = read[name]
            else:
                continue
            model_value = self._held_value(name)
            if sparse.issparse(value):  # a sparsified coef_ (scikit-learn's sparsify): its values
                value = value.toarray()
            try:
                with np.errstate(over="ignore", invalid="ignore"):  # the C side names non-finite values
                    new = np.asarray(_array.to_numpy(value) if _array.ArrayKind.of(value).is_device else value)
                    new = new.astype(model_value.dtype, copy=False)
            except (TypeError, ValueError) as e:
                raise ValueError(
                    f"{type(self).__name__}.{name} must be numbers convertible to {model_value.dtype}, got {value!r}"
                ) from e
            shape = self._presented(name, model_value).shape
            if new.shape != shape:
                raise ValueError(f"{type(self).__name__}.{name} must have shape {shape}, got shape {new.shape}")
            # Back to the model's shape (a scalar for several equal values is broadcast).
            new = new.reshape(model_value.shape) if new.size == model_value.size else np.broadcast_to(new, model_value.shape)
            if np.array_equal(new, model_value):
                continue
            handle.set_attribute(get_context("cpu"), name, new)
            held[name] = np.array(new, copy=True)

    def _gpuml_apply(self, method, X, kind, dtype=None):
        """Runs `method` of the fitted C estimator on prepared X; the output has X's array type
        and device, and the C ABI's default dtype unless `dtype` is given."""
        handle = self._fitted_handle()
        default_dtype, shape = handle.output_shape(method, X.shape[0])
        out = kind.empty(shape, dtype if dtype is not None else _array.numpy_dtype(default_dtype))
        is_sparse = _array.is_sparse(X)
        X_desc, keep_X = (_array.sparse_descriptor if is_sparse else _array.descriptor)(X, kind.device_id)
        out_desc, keep_out = _array.descriptor(out, kind.device_id)
        kind.synchronize()
        handle.apply(method, self._context_for(kind), X_desc, out_desc, sparse=is_sparse)
        del keep_X, keep_out
        return kind.wrap(out)

    def _fitted_handle(self):
        """The C model, with the attributes changed in Python pushed into it."""
        check_is_fitted(self)
        handle = getattr(self, "_gpuml_handle", None)
        if handle is None:
            raise RuntimeError(f"{type(self).__name__} has fitted attributes but no gpuml model; refit it")
        self._push_changed_attributes()
        return handle

    # -- pickling --------------------------------------------------------------------------
    def save_model(self, path):
        """Writes the fitted model in gpuml's own format (the C ABI's serialization, what
        gpuml_estimator_deserialize and the C++ Estimator load: versioned and checksummed), for
        services that embed gpuml without Python. Returns the number of bytes written."""
        data = self._fitted_handle().serialize()
        with open(path, "wb") as f:
            f.write(data)
        return len(data)

    def __getstate__(self):
        # The C model is the fitted state: save its bytes, and rebuild the Python copies of its
        # attributes from it when unpickling.
        self._push_changed_attributes()  # the model's bytes carry the values set in Python
        state = dict(super().__getstate__())
        handle = state.pop("_gpuml_handle", None)
        state.pop("_gpuml_read", None)
        state.pop("_gpuml_held", None)
        if handle is not None:
            state["_gpuml_model"] = handle.serialize()
            for name in self._gpuml_attributes:
                state.pop(name, None)
        return state

    def __setstate__(self, state):
        state = dict(state)
        model = state.pop("_gpuml_model", None)
        super().__setstate__(state)
        if model is not None:
            self._gpuml_handle = EstimatorHandle.deserialize(model)
            self._read_fitted_attributes()

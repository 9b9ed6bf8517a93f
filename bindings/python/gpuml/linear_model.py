"""Linear models: least squares, ridge, lasso, elastic net and logistic regression on the CPU or a CUDA GPU."""

import numbers
import warnings

import numpy as np
from sklearn import linear_model
from sklearn.base import MultiOutputMixin, RegressorMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import r2_score
from scipy import sparse
from sklearn.utils import check_array
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils._sparse import _align_api_if_sparse
from sklearn.utils.validation import _check_sample_weight, check_is_fitted

from . import _array
from ._base import GpumlEstimator, seed_from, worded_as_sklearn
from ._classifier import GpumlClassifier
from ._context import check_device, get_context

__all__ = ["ElasticNet", "Lasso", "LinearRegression", "LogisticRegression", "Ridge"]


class _LinearRegressor(MultiOutputMixin, RegressorMixin, GpumlEstimator):
    """What LinearRegression and Ridge share: fit through the C ABI, predict, score."""

    # scikit-learn's Ridge, Lasso and ElasticNet fit a y of shape (n, 1) as the 1-d y: coef_ of
    # shape (n_features,), predictions of shape (n,) (LinearRegression keeps the column).
    _column_y_is_1d = True

    def _fit(self, X, y, sample_weight, params_for_targets):
        X, y, kind = self._prepare_X_y(X, y)
        weights = self._prepare_sample_weight(sample_weight, X, ensure_non_negative=True)
        column = y.ndim == 2 and y.shape[1] == 1
        if column and self._column_y_is_1d:
            y = y.reshape(-1)
        n_targets = 1 if y.ndim == 1 else y.shape[1]
        # intercept_ as scikit-learn shows it: 0.0 without fit_intercept, whatever y's shape; (1,)
        # for a column y; else the model's (a scalar for 1-d y, (n_targets,) for 2-d y).
        shapes = {}
        if not self.fit_intercept:
            shapes["intercept_"] = ()
        elif column:
            shapes["intercept_"] = (1,)
        self._gpuml_shapes = shapes
        return self._gpuml_fit(X, kind, sample_weight=weights, y=y, params=params_for_targets(n_targets))

    def _presented(self, name, value):
        # A 1-d y's intercept_ is a NumPy scalar of X's dtype (np.float64 is also a float), as
        # scikit-learn's: code reads its .shape and .dtype.
        value = super()._presented(name, value)
        if name == "intercept_" and isinstance(value, np.ndarray) and value.ndim == 0:
            return value[()]
        return value

    def _fit_converged(self):
        """Whether the last fit's iterative solve (positive=True) met tol (the C model's converged_)."""
        return bool(self.__dict__["_gpuml_handle"].attribute(get_context("cpu"), "converged_"))

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

    Same parameters, defaults and results as ``sklearn.linear_model.LinearRegression`` of
    scikit-learn 1.9 (the minimum-norm solution when X is rank deficient), plus ``algorithm``,
    which chooses how, and ``device``:

    - "eig": the normal equations (X^T X), solved through its eigen-decomposition; the fastest,
      but it squares the condition number; rank-deficient X is a ValueError.
    - "qr": Householder QR of X; rank-deficient X is a ValueError.
    - "svd": QR, then the SVD of R: the minimum-norm least-squares solution for any X.
    - "auto": "eig", falling back to "svd" when X is rank deficient or ill conditioned.

    ``tol``: as scikit-learn 1.9's lstsq ``cond``, singular values below ``tol * s_max`` count as
    zero in the minimum-norm solution ("auto" and "svd"; "eig" and "qr" solve full-rank X
    exactly). ``positive=True``: non-negative least squares (scipy.optimize.nnls's problem, as
    scikit-learn's), solved exactly by an active-set method on X^T X formed on the device (any
    ``algorithm``); ``tol`` is then the tolerance of its optimality conditions, relative to
    max|X^T y|, and a fit stopped by the active set's step limit (3 n_features + 10 steps) before
    meeting them raises ``sklearn.exceptions.ConvergenceWarning``. Accepted without effect:
    ``copy_X`` (gpuml never writes to X), ``n_jobs`` (the CPU backend's threads are the
    context's).
    Sparse X (SciPy CSR / CSC; CuPy and torch sparse matrices are read on the host) is fitted on
    the CPU without a dense copy: X is centered implicitly; up to 4096 features the normal
    equations (X^T X and X^T y) are formed from sparse products and solved exactly as on dense X,
    beyond that conjugate gradients on them run over the sparse products (the least-squares
    solution scikit-learn's lsqr approaches, the minimum-norm one for rank-deficient X; rank_ is
    then -1 and singular_values_ empty: not computed). predict takes sparse X too.
    ``positive=True`` refuses sparse X (TypeError), as scikit-learn's.

    ``device``: "auto" (the first GPU when there is one, else the CPU; for CUDA inputs, the GPU
    that holds them), "cpu", "cuda" or "cuda:N". Inputs may be NumPy arrays, CuPy arrays or
    PyTorch tensors; predict returns the input's type. Fitted attributes are NumPy arrays.
    Parameter values are checked as scikit-learn checks them (InvalidParameterError, a
    ValueError, with its messages).

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,) or (n_targets, n_features) (also for y of shape (n, 1)),
        X's float dtype
    intercept_ : float, or ndarray of shape (n_targets,) when y is 2-d (0.0 without fit_intercept)
    rank_ : int, rank of the centered (weighted) X
    singular_values_ : ndarray of shape (min(n_samples, n_features),), descending, of the centered
        (weighted) X; ``singular_`` is the same array under scikit-learn's name
    n_features_in_ : int
    feature_names_in_ : ndarray of str, when X has string column names

    coef_ and intercept_ may be assigned or changed in place, as in scikit-learn: predict, score,
    pickling and save_model use the new values (so do Ridge's, Lasso's, ElasticNet's and
    LogisticRegression's). The other attributes are read-only copies.
    """

    _gpuml_kind = "linear_regression"
    _gpuml_attributes = ("coef_", "intercept_", "rank_")

    @property
    def _gpuml_accepts_sparse(self):
        return not self.positive  # scikit-learn's: positive=True needs dense X
    _gpuml_settable = ("coef_", "intercept_")
    _column_y_is_1d = False

    # Parameters: the table in src/linear_model/linear_regression.cpp (see _params.py), with
    # gpuml's algorithm after scikit-learn's (all keyword-only, as scikit-learn's).
    _gpuml_sklearn_class = "sklearn.linear_model.LinearRegression"
    _gpuml_positional = 0

    def _gpuml_params(self, X=None):
        return self._json_params()

    def fit(self, X, y, sample_weight=None):
        """Fits on X (n_samples, n_features) and y (n_samples,) or (n_samples, n_targets); returns self.

        With positive=True, warns with ConvergenceWarning when the active set stopped before
        meeting tol."""
        self._validate_params()  # bad parameters fail before the data is looked at
        check_device(self.device)
        params = self._gpuml_params()
        self._fit(X, y, sample_weight, lambda n_targets: params)
        if params["positive"] and not self._fit_converged():
            warnings.warn(
                "Non-negative least squares did not converge: the active set reached its step limit "
                f"(3 n_features + 10) before the optimality conditions met tol={params['tol']}. Scale the "
                "features or raise tol.",
                ConvergenceWarning,
                stacklevel=2,
            )
        return self

    def _read_fitted_attributes(self):
        super()._read_fitted_attributes()
        self.__dict__.pop("_singular_values", None)  # a new model: computed again on first use

    @property
    def singular_values_(self):
        """Singular values of the centered (weighted) X. Read from the model on first use: when
        the solve did not need them, the library computes them then (a d x d eigenproblem that
        would otherwise add milliseconds to every fit)."""
        values = self.__dict__.get("_singular_values")
        if values is None:
            handle = self.__dict__.get("_gpuml_handle")
            if handle is None:
                raise AttributeError(f"{type(self).__name__} has no singular_values_ before fit")
            values = handle.attribute(get_context("cpu"), "singular_values_")
            self.__dict__["_singular_values"] = values
        return values

    @property
    def singular_(self):
        """scikit-learn's name for singular_values_."""
        return self.singular_values_


class Ridge(_LinearRegressor):
    """Least squares with an L2 penalty alpha * ||coef||², on the CPU or a CUDA GPU.

    Same parameters, defaults and results as ``sklearn.linear_model.Ridge`` of scikit-learn 1.9,
    plus ``device``. ``alpha``: a number >= 0, or one per target. Every scikit-learn ``solver``
    name is accepted, with its rules ("lbfgs" only with ``positive=True``, ``positive=True`` only
    with "auto" or "lbfgs"), and gpuml solves the same objective exactly:

    - "svd": QR, then the SVD of R (the minimum-norm solution when alpha = 0 and X is singular);
    - "auto", "cholesky", "lsqr", "sparse_cg", "sag", "saga": the normal equations plus alpha
      through a Cholesky factorization (the minimizer scikit-learn's iterative solvers approach
      within their ``tol``); alpha = 0 with singular X falls back to "svd", as scikit-learn's
      "cholesky" does;
    - ``positive=True`` ("auto" or "lbfgs"): coef >= 0, solved exactly by an active-set method on
      X^T X + alpha I; ``tol`` is the tolerance of its optimality conditions (relative to
      max|X^T y|) and ``max_iter`` its step limit (None: 3 n_features + 10); stopping there before
      meeting ``tol`` raises ``sklearn.exceptions.ConvergenceWarning``.

    ``max_iter`` and ``tol`` do not change the direct solves (nor does scikit-learn's "svd" or
    "cholesky" use them). Accepted without effect: ``copy_X`` (gpuml never writes to X) and
    ``random_state`` (only scikit-learn's sag and saga draw at random; gpuml's solves do not).
    ``device`` as in LinearRegression. Parameter values are checked as scikit-learn checks them
    (InvalidParameterError, a ValueError, with its messages).
    Sparse X (SciPy CSR / CSC; CuPy and torch sparse matrices are read on the host) is fitted on
    the CPU without a dense copy: X is centered implicitly; up to 4096 features the normal
    equations (X^T X + alpha I and X^T y) are formed from sparse products and solved exactly as on
    dense X, beyond that conjugate gradients on them run over the sparse products (scikit-learn's
    sparse_cg, to a residual far below its tolerance). predict takes sparse X too.
    scikit-learn's rules for sparse X hold: "svd" refuses it (TypeError), "cholesky" and "saga" refuse
    it with fit_intercept (ValueError); the others solve the same objective exactly.

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,) or (n_targets, n_features), X's float dtype; (n_features,)
        for y of shape (n, 1) too, and predictions of shape (n,), as scikit-learn's
    intercept_ : float, or ndarray of shape (n_targets,) when y is 2-d (0.0 without fit_intercept)
    n_iter_ : None (gpuml's solves are direct; scikit-learn's lsqr, sag and saga report iterations)
    solver_ : str, the scikit-learn solver whose objective was solved ("cholesky" for "auto", "lbfgs"
        for "auto" with positive=True, "svd" where "cholesky" fell back to it)
    n_features_in_ : int
    feature_names_in_ : ndarray of str, when X has string column names
    """

    _gpuml_kind = "ridge"
    _gpuml_attributes = ("coef_", "intercept_")
    _gpuml_settable = ("coef_", "intercept_")
    _gpuml_accepts_sparse = True

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # scikit-learn's rule: which solvers take sparse X (see _check_sparse_solver).
        tags.input_tags.sparse = self.solver != "svd" and (self.solver != "cholesky" or not self.fit_intercept)
        return tags

    def _check_sparse_solver(self, X):
        """scikit-learn's refusals of sparse X for some solvers, with its errors and messages."""
        if not (sparse.issparse(X) or _array.is_sparse(X)) or self.positive:
            return
        # In scikit-learn's order: the intercept's rule first, then "svd"'s.
        if self.fit_intercept and self.solver not in ("auto", "lbfgs", "lsqr", "sag", "sparse_cg"):
            raise ValueError(
                f"solver='{self.solver}' does not support fitting the intercept on sparse data. Please set the "
                "solver to 'auto' or 'lsqr', 'sparse_cg', 'sag', 'lbfgs' or set `fit_intercept=False`"
            )
        if self.solver == "svd":
            raise TypeError("SVD solver does not support sparse inputs currently")
        if self.fit_intercept and self.solver == "sag" and self.max_iter is None and self.tol > 1e-4:
            warnings.warn(  # scikit-learn's warning, for the same call; gpuml's own solve is exact
                '"sag" solver requires many iterations to fit an intercept with sparse inputs. Either set the solver '
                'to "auto" or "sparse_cg", or set a low "tol" and a high "max_iter" (especially if inputs are not '
                "standardized). (gpuml solves the same objective exactly; the warning is scikit-learn's.)",
                UserWarning,
                stacklevel=3,
            )

    # Parameters: the table in src/linear_model/ridge.cpp (see _params.py).
    _gpuml_sklearn_class = "sklearn.linear_model.Ridge"

    def _gpuml_params(self, X=None):
        # random_state changes nothing (no solver here draws): nothing is drawn from it.
        given = {"random_state": None}
        if not isinstance(self.alpha, numbers.Real):  # an array-like, raveled as scikit-learn ravels it
            given["alpha"] = np.asarray(self.alpha, dtype=np.float64).ravel().tolist()
        return self._json_params(**given)

    def fit(self, X, y, sample_weight=None):
        """Fits on X (n_samples, n_features) and y (n_samples,) or (n_samples, n_targets); returns self.

        With positive=True, warns with ConvergenceWarning when the active set stopped at max_iter
        before meeting tol."""
        self._validate_params()  # bad parameters fail before the data is looked at
        check_device(self.device)
        self._check_sparse_solver(X)
        params = self._gpuml_params()
        self._fit(X, y, sample_weight, lambda n_targets: params)
        self.n_iter_ = None
        auto = "sparse_cg" if sparse.issparse(X) or _array.is_sparse(X) else "cholesky"  # scikit-learn's choice
        self.solver_ = "lbfgs" if self.positive else (auto if self.solver == "auto" else self.solver)
        if self.positive and not self._fit_converged():
            warnings.warn(
                f"The lbfgs solver did not converge. Try increasing max_iter or tol. Currently: "
                f"max_iter={self.max_iter} and tol={self.tol} (gpuml: the active set for positive=True reached "
                "max_iter steps before its optimality conditions met tol)",
                ConvergenceWarning,
                stacklevel=2,
            )
        return self


class ElasticNet(_LinearRegressor):
    """Linear regression with combined L1 and L2 penalties, on the CPU or a CUDA GPU.

    Same parameters, defaults and results as ``sklearn.linear_model.ElasticNet``, plus ``device``:
    it minimizes, per target,
    ``1 / (2 n_samples) * ||y - X w - b||^2 + alpha * l1_ratio * ||w||_1
    + 0.5 * alpha * (1 - l1_ratio) * ||w||^2`` (sample weights are rescaled to sum to n_samples
    and weight the squared errors). The Gram matrix X^T X of the centered (weighted) X is formed
    on the device; coordinate descent then runs on it on the host in float64, with scikit-learn's
    stopping rule (the duality gap below ``tol * ||y - mean(y)||^2``). A fit that stops at
    ``max_iter`` before that raises ``sklearn.exceptions.ConvergenceWarning``; ``alpha=0`` gives
    scikit-learn's UserWarning (use LinearRegression). ``warm_start=True`` starts a refit from the
    previous ``coef_`` (same number of features and targets). ``device`` as in LinearRegression.
    Parameter values are checked as scikit-learn checks them (InvalidParameterError, a ValueError,
    with its messages).

    Accepted without effect on the result: ``precompute`` (gpuml always solves on the Gram matrix
    it forms itself; a given Gram array is checked as scikit-learn checks it, its shape and one
    element, with scikit-learn's UserWarning when X is not centered and fit_intercept is set, and is
    then not used), ``copy_X`` (gpuml never writes to X), ``random_state`` unless
    ``selection="random"``, and fit's ``check_input`` (gpuml checks the input anyway; with
    ``check_input=False`` a NumPy X must be in Fortran order, as scikit-learn's coordinate descent
    requires). ``max_iter=None``, which scikit-learn's constraints admit but its solver refuses, is
    a TypeError here too.
    Sparse X (SciPy CSR / CSC; CuPy and torch sparse matrices are read on the host) is fitted on
    the CPU without a dense copy: X is centered implicitly and the Gram system (X^T X, X^T y) is
    formed from sparse products; coordinate descent then runs on it, with scikit-learn's objective
    and duality-gap test, so its minimizer within ``tol`` (scikit-learn iterates over CSC columns
    instead). The Gram matrix is n_features x n_features: up to 4096 features for now, wider sparse
    X is a named error until coordinate descent over CSC columns is written. predict takes sparse X
    too.

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,) or (n_targets, n_features), X's float dtype; (n_features,)
        for y of shape (n, 1) too, and predictions of shape (n,), as scikit-learn's
    sparse_coef_ : scipy.sparse CSR matrix of shape (1, n_features) or (n_targets, n_features): coef_
    intercept_ : float, or ndarray of shape (n_targets,) when y is 2-d (0.0 without fit_intercept)
    n_iter_ : int, coordinate-descent sweeps run (the most over the targets)
    dual_gap_ : float, or ndarray of shape (n_targets,): the final duality gaps (divided by n_samples)
    converged_ : int, 1 when every target met tol within max_iter, else 0
    n_features_in_ : int
    feature_names_in_ : ndarray of str, when X has string column names
    """

    _gpuml_kind = "elastic_net"
    _gpuml_attributes = ("coef_", "intercept_", "n_iter_", "dual_gap_", "converged_")
    _gpuml_settable = ("coef_", "intercept_")
    _gpuml_accepts_sparse = True
    # Parameters: the tables in src/linear_model/elastic_net.cpp (see _params.py). A Gram array as
    # precompute is checked here, then gpuml forms its own; max_iter=None fails at fit (TypeError).
    _gpuml_sklearn_class = "sklearn.linear_model.ElasticNet"
    _gpuml_python_forms = {"precompute": ["array-like"], "max_iter": [None]}

    def _gpuml_params(self, X=None):
        if self.max_iter is None:
            raise TypeError("max_iter=None: an integer is required (scikit-learn's coordinate descent refuses None too)")
        given = {
            "precompute": bool(self.precompute) if isinstance(self.precompute, (bool, np.bool_)) else True,
            # Only random selection draws; a RandomState is then drawn from, as scikit-learn does.
            "random_state": seed_from(self.random_state) if self.selection == "random" else None,
        }
        if self.warm_start and hasattr(self, "coef_"):
            # Start from the previous fit's coefficients, or those set by hand (the C estimator
            # checks their shape).
            init_coef = np.asarray(self.coef_, dtype=np.float64).reshape(-1)
            if not np.all(np.isfinite(init_coef)):
                raise ValueError("coef_ (the warm start of fit) contains NaN or infinity")
            given["init_coef"] = init_coef.tolist()
        return self._json_params(**given)

    def _check_precomputed_gram(self, X, sample_weight, check_input):
        """scikit-learn's checks of a Gram matrix given as ``precompute`` (gpuml then forms its own):
        its shape; with fit_intercept and X not centered, scikit-learn's UserWarning (it recomputes
        the Gram); else, when check_input, one element against X's, with scikit-learn's message."""
        gram = self.precompute
        if isinstance(gram, (bool, np.bool_)):
            return
        X = _array.to_numpy(X) if _array.ArrayKind.of(X).is_device else _array.ArrayKind.host_input(X)
        X = check_array(X, dtype=[np.float64, np.float32])
        gram = np.asarray(gram)
        n_features = X.shape[1]
        if gram.shape != (n_features, n_features):
            raise ValueError(
                f"precompute, the Gram matrix, must have shape (n_features, n_features) = ({n_features}, "
                f"{n_features}); got shape {gram.shape}"
            )
        weights = None
        if sample_weight is not None and not isinstance(sample_weight, numbers.Number):
            weights = _array.to_numpy(sample_weight) if _array.ArrayKind.of(sample_weight).is_device else sample_weight
            weights = _check_sample_weight(weights, X, dtype=X.dtype)
            weights = weights * (X.shape[0] / np.sum(weights))  # scikit-learn's rescaling to sum to n_samples
        offset = np.average(X, axis=0, weights=weights) if self.fit_intercept else np.zeros(n_features, X.dtype)
        if self.fit_intercept and not np.allclose(offset, np.zeros(n_features)):
            warnings.warn(
                "Gram matrix was provided but X was centered to fit intercept: recomputing Gram matrix.",
                UserWarning,
                stacklevel=3,
            )
            return
        if not check_input:
            return
        # scikit-learn's element and tolerance: columns f1, f2 of the centered, weighted X (its
        # preprocessed X, from which it subtracts the offset, ~0 here, once more).
        f1 = n_features // 2
        f2 = min(f1 + 1, n_features - 1)
        scale = 1.0 if weights is None else np.sqrt(weights)
        v1 = (X[:, f1] - offset[f1]) * scale - offset[f1]
        v2 = (X[:, f2] - offset[f2]) * scale - offset[f2]
        expected = np.dot(v1, v2)
        actual = gram[f1, f2]
        rtol = max(1e-4 if dtype == np.float32 else 1e-7 for dtype in (gram.dtype, expected.dtype))
        if not np.isclose(expected, actual, rtol=rtol, atol=1e-5):
            raise ValueError(
                "Gram matrix passed in via 'precompute' parameter did not pass validation when a single element "
                f"was checked - please check that it was computed properly. For element ({f1},{f2}) we computed "
                f"{expected} but the user-supplied value was {actual}."
            )

    def fit(self, X, y, sample_weight=None, check_input=True):
        """Fits on X (n_samples, n_features) and y (n_samples,) or (n_samples, n_targets); returns self.

        Warns with ConvergenceWarning when max_iter sweeps did not bring the duality gap below tol.
        ``check_input`` is scikit-learn's (see the class docstring)."""
        self._validate_params()  # bad parameters fail before the data is looked at
        check_device(self.device)
        if self.alpha == 0:
            warnings.warn(
                "With alpha=0, this algorithm does not converge well. You are advised to use the LinearRegression "
                "estimator",
                stacklevel=2,
            )
        params = self._gpuml_params()
        # scikit-learn reorders X itself when weighted, and a Gram route does not read X.
        reads_X_as_given = sample_weight is None and isinstance(self.precompute, (bool, np.bool_)) and not self.precompute
        if not check_input and reads_X_as_given and isinstance(X, np.ndarray) and X.ndim == 2 and not X.flags.f_contiguous:
            raise ValueError(
                "ndarray is not Fortran contiguous: with check_input=False, X must be what scikit-learn's coordinate "
                "descent reads (a Fortran-ordered float array); pass check_input=True to have it converted"
            )
        if isinstance(sample_weight, numbers.Number):
            sample_weight = None  # scikit-learn's rule: a single number weighs every sample alike
        self._check_precomputed_gram(X, sample_weight, check_input)
        self._fit(X, y, sample_weight, lambda n_targets: params)
        if not self.converged_:
            gap = np.max(np.atleast_1d(self.dual_gap_))
            warnings.warn(
                "Objective did not converge. You might want to increase the number of iterations, check the "
                f"scale of the features or consider increasing regularisation. Duality gap: {gap:.3e} "
                f"(max_iter={params['max_iter']}, tol={params['tol']})",
                ConvergenceWarning,
                stacklevel=2,
            )
        return self

    @property
    def sparse_coef_(self):
        """coef_ as a scipy.sparse CSR matrix of shape (1, n_features) or (n_targets, n_features), as scikit-learn's."""
        return _align_api_if_sparse(sparse.csr_array(np.atleast_2d(self.coef_)))


class Lasso(ElasticNet):
    """Linear regression with an L1 penalty, on the CPU or a CUDA GPU: ElasticNet with l1_ratio=1.

    Same results as ``sklearn.linear_model.Lasso``: it minimizes
    ``1 / (2 n_samples) * ||y - X w - b||^2 + alpha * ||w||_1``. See ElasticNet for the method,
    the attributes, warm_start, ConvergenceWarning and the parameters without effect.
    """

    _gpuml_kind = "lasso"  # l1_ratio is fixed to 1 by the C estimator
    _gpuml_sklearn_class = "sklearn.linear_model.Lasso"


# scikit-learn 1.9's messages for its LogisticRegression parameter rules (matched exactly: code
# written for scikit-learn checks them).
_PENALTY_DEPRECATED = (
    "'penalty' was deprecated in version 1.8 and will be removed in 1.10. To avoid this warning, leave 'penalty' "
    "set to its default value and use 'l1_ratio' or 'C' instead. Use l1_ratio=0 instead of penalty='l2', "
    "l1_ratio=1 instead of penalty='l1', l1_ratio set to a float between 0 and 1 instead of penalty='elasticnet', "
    "and C=np.inf instead of penalty=None."
)
_L1_RATIO_NONE_DEPRECATED = (
    "'l1_ratio=None' was deprecated in version 1.8 and will trigger an error in 1.10. Use 0<=l1_ratio<=1 instead."
)


def _resolve_penalty(estimator):
    """scikit-learn 1.9's penalty for LogisticRegression's parameters, with its warnings and errors,
    in its order: the penalty as the objective has it ("l2", "l1", "elasticnet" or None)."""
    l1_ratio, C, solver = estimator.l1_ratio, estimator.C, estimator.solver
    if isinstance(estimator.penalty, str) and estimator.penalty == "deprecated":
        # l1_ratio alone chooses the penalty; C=np.inf means none.
        if l1_ratio is None or l1_ratio == 0:
            penalty = "l2"
            if l1_ratio is None:
                warnings.warn(_L1_RATIO_NONE_DEPRECATED, FutureWarning, stacklevel=3)
        elif l1_ratio == 1:
            penalty = "l1"
        else:
            penalty = "elasticnet"
        if C == np.inf:
            penalty = None
    else:
        penalty = estimator.penalty
        warnings.warn(_PENALTY_DEPRECATED, FutureWarning, stacklevel=3)
    # Which penalties each solver's objective has (gpuml minimizes each with its own method).
    if solver not in ("liblinear", "saga") and penalty not in ("l2", None):
        raise ValueError(f"Solver {solver} supports only 'l2' or None penalties, got {penalty} penalty.")
    if solver != "liblinear" and estimator.dual:
        raise ValueError(f"Solver {solver} supports only dual=False, got dual={estimator.dual}")
    if penalty == "elasticnet" and solver != "saga":
        raise ValueError(f"Only 'saga' solver supports elasticnet penalty, got solver={solver}.")
    if solver == "liblinear" and penalty is None:
        raise ValueError("C=np.inf as well as penalty=None is not supported for the liblinear solver")
    if penalty != "elasticnet" and l1_ratio is not None and 0 < l1_ratio < 1:
        warnings.warn(f"l1_ratio parameter is only used when penalty is 'elasticnet'. Got (penalty={penalty})",
                      stacklevel=3)
    if (estimator.penalty == "l2" and l1_ratio != 0) or (estimator.penalty == "l1" and l1_ratio != 1):
        warnings.warn(
            f"Inconsistent values: penalty={estimator.penalty} with l1_ratio={l1_ratio}. penalty is deprecated. "
            "Please use l1_ratio only.",
            stacklevel=3,
        )
    if penalty == "elasticnet" and l1_ratio is None:
        raise ValueError("l1_ratio must be specified when penalty is elasticnet.")
    if estimator.penalty is None and C != 1.0:
        warnings.warn("Setting penalty=None will ignore the C and l1_ratio parameters", stacklevel=3)
    if estimator.n_jobs is not None:
        warnings.warn(
            f"'n_jobs' has no effect since 1.8 and will be removed in 1.10. You provided 'n_jobs={estimator.n_jobs}', "
            "please leave it unspecified.",
            FutureWarning,
            stacklevel=3,
        )
    if C == np.inf:  # no penalty whichever was named
        penalty = None
    return penalty


def _largest_value(X):
    """max(X) over its entries (a sparse X's stored values and its implicit zeros)."""
    if _array.is_sparse(X):
        values = _array.to_numpy(_array.sparse_parts(X)[4])
        implicit_zero = values.size < X.shape[0] * X.shape[1]
        return float(max(values.max(initial=-np.inf), 0.0 if implicit_zero else -np.inf))
    return float(X.max())


class LogisticRegression(GpumlClassifier):
    """Logistic regression (binomial for two classes, multinomial for more), on the CPU or a CUDA GPU.

    Same parameters, defaults, rules and results as ``sklearn.linear_model.LogisticRegression``
    of scikit-learn 1.9, plus ``device``. It minimizes, with sample weights s_i times the class
    weights and S = sum(s_i),
    ``(1/S) sum_i s_i loss_i(coef, intercept) + r(coef) / (C S)``,
    ``r = (1 - l1_ratio)/2 ||coef||^2 + l1_ratio ||coef||_1``; no penalty with ``C=np.inf``. As in
    scikit-learn >= 1.8, ``l1_ratio`` alone chooses the penalty (0, the default: L2; 1: L1; in
    between: elastic net), and the deprecated ``penalty`` ("l2", "l1", "elasticnet", None) still
    works with scikit-learn's FutureWarning. The intercept is not penalized, except with
    ``solver="liblinear"`` (below). The loss and its gradient over X are computed on the device;
    L-BFGS (OWL-QN when the penalty has an L1 part) runs on the host in float64 over the
    coefficients, and stops when the largest (pseudo-)gradient entry is <= ``tol``. A fit that
    stops before that (``max_iter`` reached, or no more progress) raises
    ``sklearn.exceptions.ConvergenceWarning``.

    ``solver``: every scikit-learn name is accepted, with scikit-learn's rules on which penalties
    it takes (the same ValueErrors). gpuml minimizes the solver's objective with its own method,
    so the result agrees with scikit-learn's solver within that solver's tolerance. "liblinear"
    defines a different objective when ``fit_intercept``: the intercept is ``intercept_scaling``
    times the weight of a constant feature of that value, penalized like the coefficients; gpuml
    minimizes that objective. liblinear is binary only (scikit-learn's ValueError for more
    classes); ``dual=True`` (liblinear with L2 only, as scikit-learn) solves the dual of the same
    problem, whose solution is the same, so gpuml solves the primal.

    ``warm_start=True`` starts a refit from the previous ``coef_`` and ``intercept_`` (not with
    liblinear, as scikit-learn). Accepted without effect on the result: ``random_state`` (only
    scikit-learn's sag, saga and liblinear shuffle; gpuml's method is deterministic), ``verbose``
    (gpuml prints nothing), ``n_jobs`` (no effect in scikit-learn 1.9 either; a value other than
    None gives its FutureWarning), ``intercept_scaling`` without liblinear.

    Sparse X (SciPy CSR / CSC, CuPy sparse, torch sparse CSR / CSC) is taken without a dense copy,
    on the CPU (device sparse matrices are read by the CPU context for now): the same objective and
    solver over the sparse products X @ coef.T and X.T @ residuals. predict, predict_proba and
    decision_function take sparse X as well.

    Labels may be of any type np.unique sorts (ints, floats, bools, strings); ``class_weight``:
    None, "balanced", or a dict {label: weight} (labels not in the dict weigh 1). ``device`` as
    in LinearRegression. Inputs may be NumPy arrays, CuPy arrays or PyTorch tensors; outputs have
    the input's type (predict returns host NumPy labels when the labels are not numbers).
    Parameter values are checked as scikit-learn checks them (InvalidParameterError, a ValueError,
    with its messages).

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,), the sorted distinct labels of y
    coef_ : ndarray of shape (1, n_features) for two classes, else (n_classes, n_features), X's float dtype
    intercept_ : ndarray of shape (1,) or (n_classes,) (zeros without fit_intercept)
    n_iter_ : ndarray of shape (1,), int32: quasi-Newton iterations run
    converged_ : int, 1 when the fit met tol within max_iter, else 0
    n_features_in_ : int
    feature_names_in_ : ndarray of str, when X has string column names
    """

    _gpuml_kind = "logistic_regression"
    _gpuml_accepts_sparse = True
    # classes_ stays in Python (and in the pickle): the C model only sees the class indices 0..K-1.
    _gpuml_attributes = ("coef_", "intercept_", "n_iter_", "converged_")
    _gpuml_settable = ("coef_", "intercept_")

    # Parameters: the table in src/linear_model/logistic_regression.cpp (see _params.py); scikit-learn's rules
    # between them (which solver takes which penalty) and its warnings are _resolve_penalty's.
    _gpuml_sklearn_class = "sklearn.linear_model.LogisticRegression"

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        if self.solver == "liblinear":
            tags.classifier_tags.multi_class = False  # as scikit-learn's: liblinear is binary only
        return tags

    # -- parameters ----------------------------------------------------------------------
    def _checked_penalty(self):
        """Checks the parameters (scikit-learn's errors and warnings, in its order); returns the
        penalty the objective has ("l2", "l1", "elasticnet" or None)."""
        self._validate_params()
        check_device(self.device)
        return _resolve_penalty(self)

    def _gpuml_params(self, X=None, penalty="l2", classes=None):
        """The C ABI's JSON: `penalty` as _checked_penalty gave it; class_weight over the class
        indices and the warm start need the classes and X."""
        given = {
            "penalty": penalty,
            "C": float(self.C) if penalty is not None else 1.0,  # C=np.inf: no penalty, C unused
            "random_state": None,  # without effect: a RandomState given is not drawn from
            "class_weight": self._class_weight_json(classes) if classes is not None else None,
        }
        if not (self.solver == "liblinear" and self.fit_intercept):
            given["intercept_scaling"] = 1  # without effect (scikit-learn takes infinity here too)
        if X is not None and classes is not None:
            given.update(self._warm_start_json(classes.size, X.shape[1]))
        return self._json_params(**given)

    def _warm_start_json(self, n_classes, n_features):
        """init_coef / init_intercept from the previous coef_ and intercept_ (scikit-learn's shape rule)."""
        if not self.warm_start or self.solver == "liblinear" or not hasattr(self, "coef_"):
            return {}  # scikit-learn's liblinear ignores warm_start too
        coef = _array.to_numpy(self.coef_).astype(np.float64, copy=False)
        intercept = _array.to_numpy(self.intercept_).astype(np.float64, copy=False).reshape(-1)
        rows = 1 if n_classes == 2 else n_classes
        width = n_features + int(bool(self.fit_intercept))
        if coef.ndim != 2 or coef.shape != (rows, n_features) or intercept.shape != (rows,):
            # scikit-learn's message, about coef_ with the intercept as its last column.
            shape = (coef.shape[0], coef.shape[1] + 1) if self.fit_intercept and coef.ndim == 2 else coef.shape
            expected = f"({width},) or (1, {width})" if rows == 1 else f"({rows}, {width})"
            raise ValueError(f"Initialization coef is of shape {shape}, expected shape {expected}")
        if not (np.all(np.isfinite(coef)) and np.all(np.isfinite(intercept))):
            raise ValueError("coef_ and intercept_ (the warm start of fit) contain NaN or infinity")
        params = {"init_coef": coef.reshape(-1).tolist()}
        if self.fit_intercept:
            params["init_intercept"] = intercept.tolist()
        return params

    # -- fitting -------------------------------------------------------------------------
    def _accepts_large_sparse(self):
        # scikit-learn's rule (its liblinear, sag and saga take 32-bit indices only), kept so that
        # the solvers refuse the same inputs; gpuml itself takes either width.
        return self.solver not in ("liblinear", "sag", "saga")

    def fit(self, X, y, sample_weight=None):
        """Fits on X (n_samples, n_features) and the labels y (n_samples,); returns self.

        Warns with ConvergenceWarning when the solver stopped before the gradient met tol."""
        penalty = self._checked_penalty()  # bad parameters fail before the data is looked at
        X, y, kind = self._prepare_X_labels(X, y)
        classes, labels = self._labels(y, kind)
        if self.solver == "liblinear":
            if classes.size > 2:
                raise ValueError(
                    "The 'liblinear' solver does not support multiclass classification (n_classes >= 3). Either use "
                    "another solver or wrap the estimator in a OneVsRestClassifier to keep applying a one-versus-rest "
                    "scheme."
                )
            if X.shape[0] > 0 and _largest_value(X) > 1e30:
                raise ValueError(
                    "Using the 'liblinear' solver while X contains a maximum value > 1e30 results in a frozen fit. "
                    "Please choose another solver or rescale the input X."
                )
            if self.dual and penalty == "l1":
                raise ValueError(
                    "Unsupported set of arguments: The combination of penalty='l1' and loss='logistic_regression' are "
                    "not supported when dual=True, Parameters: penalty='l1', loss='logistic_regression', dual=True"
                )
        weights = self._prepare_sample_weight(sample_weight, X, ensure_non_negative=True)
        params = self._gpuml_params(X, penalty, classes)
        self._gpuml_fit(X, kind, sample_weight=weights, y=labels, params=params)
        self.classes_ = classes
        if not self.converged_:
            n_iter = int(self.n_iter_[0])
            # The named solver's scikit-learn message first (code matches on it), then gpuml's reason.
            lead = {
                "lbfgs": f"lbfgs failed to converge after {n_iter} iteration(s).",
                "newton-cg": "newton-cg failed to converge. Increase the number of iterations.",
                "newton-cholesky": f"Newton solver did not converge after {n_iter} iterations.",
                "liblinear": "Liblinear failed to converge, increase the number of iterations.",
                "sag": "The max_iter was reached which means the coef_ did not converge",
                "saga": "The max_iter was reached which means the coef_ did not converge",
            }[self.solver]
            warnings.warn(
                f"{lead} (gpuml: LogisticRegression stopped after {n_iter} iteration(s), max_iter="
                f"{params['max_iter']}, tol={params['tol']}, with the largest gradient entry still above tol. "
                "Increase max_iter, scale the data (e.g. with StandardScaler), or regularize more (a smaller C).)",
                ConvergenceWarning,
                stacklevel=2,
            )
        return self

    def _read_fitted_attributes(self):
        super()._read_fitted_attributes()
        self.n_iter_ = np.asarray(self.n_iter_, dtype=np.int32).reshape(1)  # as scikit-learn's

    # -- using the fitted model ------------------------------------------------------------
    def _predict_dtypes(self):
        return (self.coef_.dtype,)

    def decision_function(self, X):
        """Scores X @ coef_.T + intercept_: (n_samples,) for two classes (the second class's score),
        else (n_samples, n_classes); coef_'s dtype, in X's array type."""
        return self._apply("transform", X)[0]

    # -- a sparse coef_, as scikit-learn's SparseCoefMixin -----------------------------------------
    def sparsify(self):
        """Makes coef_ a scipy.sparse CSR matrix (as scikit-learn's); predictions stay the same. Returns self."""
        check_is_fitted(self, msg="Estimator, %(name)s, must be fitted before sparsifying.")
        self.coef_ = _align_api_if_sparse(sparse.csr_array(self.coef_))
        return self

    def densify(self):
        """Makes a sparse coef_ (sparsify) an ndarray again; otherwise does nothing. Returns self."""
        check_is_fitted(self, msg="Estimator, %(name)s, must be fitted before densifying.")
        if sparse.issparse(self.coef_):
            self.coef_ = self.coef_.toarray()
        return self

    def __getstate__(self):
        state = super().__getstate__()
        if sparse.issparse(self.__dict__.get("coef_")):
            state["_sparse_coef"] = self.__dict__["coef_"]  # the model holds its values; the pickle keeps the type
        return state

    def __setstate__(self, state):
        state = dict(state)
        sparse_coef = state.pop("_sparse_coef", None)
        super().__setstate__(state)
        if sparse_coef is not None:
            self.coef_ = sparse_coef

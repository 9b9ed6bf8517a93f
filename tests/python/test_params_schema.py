"""Estimators whose parameters come from their C++ parameter table (gpuml_estimator_params_schema,
bindings/python/gpuml/_params.py): scikit-learn 1.9's signature and constraints, from one declaration."""

import inspect

import numpy as np
import pytest
from sklearn.utils._param_validation import InvalidParameterError, make_constraint

import gpuml
from gpuml import _lib
from gpuml._base import GpumlEstimator

SCHEMA_DRIVEN = sorted(
    (cls for cls in (getattr(gpuml, name) for name in gpuml._LAZY_ESTIMATORS) if "_gpuml_sklearn_class" in cls.__dict__),
    key=lambda cls: cls.__name__,
)

# Where gpuml accepts other values than scikit-learn ((class name, parameter): why). Empty: identical.
DIFFERENT_CONSTRAINTS = {
    ("TruncatedSVD", "algorithm"): 'also "full" (hidden): gpuml\'s older name for the exact SVD without arpack\'s rule',
    ("KMeans", "init"): 'also "k-means||" (scalable k-means++), listed among the choices of its message',
}
# gpuml's own constructor parameters, after scikit-learn's and before device (class name: names).
GPUML_EXTRAS = {
    "LinearRegression": ("algorithm",),  # how to solve: "auto", "eig", "qr" or "svd"
    # The most quantile bins per feature the trees' splits are searched over.
    "RandomForestClassifier": ("n_bins",),
    "RandomForestRegressor": ("n_bins",),
}


def sklearn_class(cls):
    import importlib

    module, _, name = cls._gpuml_sklearn_class.rpartition(".")
    return getattr(importlib.import_module(module), name)


def test_some_estimators_are_schema_driven():
    assert SCHEMA_DRIVEN, "no estimator builds its parameters from its table"


@pytest.mark.parametrize("cls", SCHEMA_DRIVEN, ids=lambda c: c.__name__)
def test_signature_is_sklearns_plus_device(cls):
    ours = inspect.signature(cls).parameters
    theirs = inspect.signature(sklearn_class(cls)).parameters
    assert list(ours) == [*theirs, *GPUML_EXTRAS.get(cls.__name__, ()), "device"]
    for name, parameter in theirs.items():
        assert repr(ours[name].default) == repr(parameter.default), name
        assert ours[name].kind == parameter.kind, name  # positional or keyword-only, as scikit-learn


@pytest.mark.parametrize("cls", SCHEMA_DRIVEN, ids=lambda c: c.__name__)
def test_constraints_read_as_sklearns(cls):
    theirs = sklearn_class(cls)._parameter_constraints
    for name, rules in cls._parameter_constraints.items():
        if name == "device" or name in GPUML_EXTRAS.get(cls.__name__, ()) or (cls.__name__, name) in DIFFERENT_CONSTRAINTS:
            continue
        ours = [str(make_constraint(c)) for c in rules]
        assert ours == [str(make_constraint(c)) for c in theirs[name]], name


@pytest.mark.parametrize("cls", SCHEMA_DRIVEN, ids=lambda c: c.__name__)
def test_bad_values_raise_sklearns_error_word_for_word(cls, rng):
    X = rng.normal(size=(30, 3))
    y = (X[:, 0] > 0).astype(int)  # suits classifiers and regressors
    for name, rules in cls._parameter_constraints.items():
        if name == "device":
            continue
        if name in GPUML_EXTRAS.get(cls.__name__, ()):  # scikit-learn has none to compare with: named all the same
            with pytest.raises(InvalidParameterError, match=f"The '{name}' parameter of {cls.__name__} must be"):
                cls(**{name: "not-a-choice"}, device="cpu").fit(X, y)
            continue
        for bad in (object(), "not-a-choice"):
            ours = cls(**{name: bad}, device="cpu")
            with pytest.raises(InvalidParameterError) as ours_error:
                ours.fit(X, y)
            theirs = sklearn_class(cls)(**{name: bad})
            with pytest.raises(InvalidParameterError) as theirs_error:
                theirs.fit(X, y)
            if (cls.__name__, name) == ("KMeans", "init"):  # scikit-learn's words, with one more choice
                assert "'k-means||'" in str(ours_error.value)
                # Both print their choices as a set, in hash order: compared in one order.
                def canonical(text):
                    return text.replace("{'random', 'k-means++'}", "{'k-means++', 'random'}")

                shown = str(ours_error.value).replace("'k-means||', ", "").replace(", 'k-means||'", "")
                assert canonical(shown) == canonical(str(theirs_error.value))
                continue
            assert str(ours_error.value) == str(theirs_error.value)


@pytest.mark.parametrize("cls", SCHEMA_DRIVEN, ids=lambda c: c.__name__)
def test_docstring_documents_every_parameter(cls):
    for name in inspect.signature(cls).parameters:
        assert f"\n    {name} : " in cls.__doc__, name
    if "Attributes\n" in cls.__doc__:
        assert cls.__doc__.index("Parameters\n") < cls.__doc__.index("Attributes\n")


def test_schema_errors_are_named():
    with pytest.raises(ValueError, match="unknown estimator kind"):
        _lib.params_schema("kmeanz")


def test_unknown_keyword_is_pythons_type_error():
    with pytest.raises(TypeError, match="colour"):
        gpuml.KMeans(colour=1)
    with pytest.raises(TypeError):
        gpuml.KMeans(8, "k-means++")  # keyword-only after the first, as scikit-learn


def test_infinite_number_is_a_named_value_error(rng):
    with pytest.raises(ValueError, match="'tol' parameter of KMeans must be a float"):
        gpuml.KMeans(2, tol=np.inf, device="cpu").fit(rng.normal(size=(10, 2)))


def test_subclasses_keep_the_generated_signature():
    class Mine(gpuml.KMeans):
        pass

    assert inspect.signature(Mine) == inspect.signature(gpuml.KMeans)
    assert issubclass(Mine, GpumlEstimator) and Mine(3).n_clusters == 3

"""Estimator parameters from libgpuml's parameter tables (gpuml_estimator_params_schema).

Each estimator's C++ parameter table (src/core/param_table.hpp) is the one place its parameters are
declared. A Python estimator class that names its scikit-learn counterpart (``_gpuml_sklearn_class``)
gets from the table's schema, when the class is defined:
- ``__init__`` with scikit-learn's signature: the table's parameters in order, with its defaults, the
  first ``_gpuml_positional`` of them positional and the rest keyword-only, then ``device="auto"``;
- ``_parameter_constraints``, checked by scikit-learn's own validation (``_validate_params``), so a bad
  value raises scikit-learn's InvalidParameterError word for word; ``_gpuml_python_forms`` adds values
  Python turns into table values before the C ABI sees them (a callable ``init``, say);
- the "Parameters" section of its docstring.
``json_params`` then turns the parameters into the JSON object the C ABI takes.
"""

import inspect
import math
import numbers

import numpy as np
from sklearn.utils._param_validation import Hidden, Interval, RealNotInt, StrOptions

from . import _lib


def _constraint(form):
    """scikit-learn's constraint for one form of the schema."""
    kind = form["type"]
    if kind == "integer" and form["min"] is None and form["max"] is None:
        return numbers.Integral  # any integer: scikit-learn's "an instance of 'int'"
    if kind in ("integer", "number", "real_not_int"):
        number_type = {"integer": numbers.Integral, "number": numbers.Real, "real_not_int": RealNotInt}[kind]
        return Interval(number_type, form["min"], form["max"], closed=form["closed"])
    if kind == "string":
        options = StrOptions(set(form["choices"]))
        return Hidden(options) if form.get("hidden") else options
    return {"boolean": "boolean", "null": None, "seed": "random_state", "verbose": "verbose",
            "matrix": "array-like", "numbers": "array-like", "pairs": dict}[kind]


def constructor_rows(schema):
    """The parameters of scikit-learn's constructor (not gpuml's own, which the bindings set)."""
    return [row for row in schema["parameters"] if row["constructor"]]


def constraints(schema, python_forms, sklearn_class):
    """``_parameter_constraints`` from a schema, worded as scikit-learn words them."""
    from ._base import worded_as_sklearn

    table = {}
    for row in constructor_rows(schema):
        table[row["name"]] = [_constraint(form) for form in row["forms"]] + list(python_forms.get(row["name"], ()))
    table["device"] = [str]  # its values are checked by check_device
    return worded_as_sklearn(table, sklearn_class)


def make_init(schema, n_positional, qualname):
    """An ``__init__`` storing every parameter as an attribute, with scikit-learn's signature."""
    parameters = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    for i, row in enumerate(constructor_rows(schema)):
        kind = inspect.Parameter.POSITIONAL_OR_KEYWORD if i < n_positional else inspect.Parameter.KEYWORD_ONLY
        parameters.append(inspect.Parameter(row["name"], kind, default=row["default"]))
    parameters.append(inspect.Parameter("device", inspect.Parameter.KEYWORD_ONLY, default="auto"))
    signature = inspect.Signature(parameters)

    def __init__(self, *args, **kwargs):
        bound = signature.bind(self, *args, **kwargs)  # Python's own TypeError for unknown names
        bound.apply_defaults()
        for name, value in list(bound.arguments.items())[1:]:
            setattr(self, name, value)

    __init__.__signature__ = signature  # what scikit-learn's get_params, clone and repr read
    __init__.__qualname__ = f"{qualname}.__init__"
    return __init__


def docstring(schema):
    """The numpydoc "Parameters" section of a schema."""
    lines = ["", "    Parameters", "    ----------"]
    for row in constructor_rows(schema):
        lines += [f"    {row['name']} : default={row['default']!r}", f"        {row['doc']}"]
    lines += ["    device : str, default='auto'",
              '        "auto" (the first GPU when there is one, else the CPU; for CUDA inputs, the GPU that',
              '        holds them), "cpu", "cuda" or "cuda:N".']
    return "\n".join(lines) + "\n"


def _to_json(value, forms, name, owner):
    """One validated parameter value as JSON, by the first form it has."""
    from ._base import seed_from

    for form in forms:
        kind = form["type"]
        if kind == "null" and value is None:
            return None
        if kind == "seed":
            return seed_from(value)
        if kind == "boolean" and isinstance(value, (bool, np.bool_)):
            return bool(value)
        if isinstance(value, (bool, np.bool_)) and kind != "verbose":
            continue  # booleans are integers to Python, not to the table
        if kind in ("integer", "verbose") and isinstance(value, numbers.Integral):
            return int(value)
        if kind == "real_not_int" and isinstance(value, numbers.Integral):
            continue  # a float fraction only: an integer is the count of another form
        if kind in ("number", "real_not_int") and isinstance(value, numbers.Real):
            if not math.isfinite(value):  # scikit-learn's Interval lets infinity through
                raise ValueError(f"The {name!r} parameter of {owner} must be a finite number, got {value!r}.")
            return float(value)
        if kind == "string" and isinstance(value, str):
            return value
        if kind in ("matrix", "numbers") and not isinstance(value, str) and value is not None:
            return np.asarray(value, dtype=np.float64).tolist()
    raise ValueError(f"The {name!r} parameter of {owner} has a value gpuml cannot pass on: {value!r}.")


def json_params(estimator, schema, **given):
    """The estimator's parameters as the C ABI's JSON; ``given`` supplies values already converted
    (and gpuml's own parameters, which are left out, so at their defaults, unless given)."""
    owner = type(estimator).__name__
    params = {
        row["name"]: given[row["name"]] if row["name"] in given
        else _to_json(getattr(estimator, row["name"]), row["forms"], row["name"], owner)
        for row in constructor_rows(schema)
    }
    params.update((name, value) for name, value in given.items() if name not in params)
    return params


def install(cls):
    """Gives `cls` (a gpuml estimator naming ``_gpuml_sklearn_class``) its schema-made parts."""
    module, _, name = cls._gpuml_sklearn_class.rpartition(".")
    import importlib

    sklearn_class = getattr(importlib.import_module(module), name)
    schema = _lib.params_schema(cls._gpuml_kind)
    cls._gpuml_schema = schema
    cls._parameter_constraints = constraints(schema, cls._gpuml_python_forms, sklearn_class)
    if "__init__" not in cls.__dict__:
        cls.__init__ = make_init(schema, cls._gpuml_positional, cls.__qualname__)
    if cls.__doc__ and "Parameters\n" not in cls.__doc__:  # before "Attributes", as numpydoc orders them
        head, marker, tail = cls.__doc__.partition("\n    Attributes\n")
        cls.__doc__ = head.rstrip("\n") + "\n" + docstring(schema) + (marker + tail if marker else "")

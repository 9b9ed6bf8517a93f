"""gpuml's estimators (and PageRank) under scikit-learn's (and NetworkX's) names, for the upstream harness.

Each class is a thin subclass of gpuml's estimator whose only change is the default of `device`:
GPUML_UPSTREAM_DEVICE ("cpu" unless set; "cuda" on the GPU machine). The subclass keeps gpuml's
signature (scikit-learn's get_params, clone and repr read it), scikit-learn's class name (some
tests compare names), and lives in this importable module so that pickling round-trips.

install() rebinds the names in scikit-learn's and NetworkX's public namespaces; run it before the
test modules are imported, since they bind the names (and parametrize over them) at import time.
Private modules (sklearn.linear_model._ridge ...) keep their own classes, so scikit-learn's other
estimators (RidgeCV, LassoCV, ...) still use scikit-learn's code.
"""

import importlib
import inspect
import os

DEVICE = os.environ.get("GPUML_UPSTREAM_DEVICE", "cpu")

# Public namespace -> (gpuml module, names swapped there).
ESTIMATORS = {
    "sklearn.cluster": ("gpuml.cluster", ("KMeans",)),
    "sklearn.linear_model": (
        "gpuml.linear_model",
        ("LinearRegression", "Ridge", "Lasso", "ElasticNet", "LogisticRegression"),
    ),
    "sklearn.decomposition": ("gpuml.decomposition", ("PCA", "TruncatedSVD")),
    "sklearn.ensemble": ("gpuml.ensemble", ("RandomForestClassifier", "RandomForestRegressor")),
}


def _with_device_default(base, device):
    """A subclass of `base` whose `device` defaults to `device`; every other parameter as in base."""
    signature = inspect.signature(base.__init__)
    if "device" not in signature.parameters:
        raise TypeError(f"{base.__module__}.{base.__name__} has no device parameter")
    parameters = [p.replace(default=device) if p.name == "device" else p for p in signature.parameters.values()]

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("device", device)
        base.__init__(self, *args, **kwargs)

    # scikit-learn's get_params reads the parameter names and defaults from this signature.
    __init__.__signature__ = signature.replace(parameters=parameters)
    __init__.__qualname__ = f"{base.__name__}.__init__"
    return type(base.__name__, (base,), {"__init__": __init__, "__module__": __name__, "__doc__": base.__doc__})


def pagerank(G, alpha=0.85, personalization=None, max_iter=100, tol=1.0e-6, nstart=None, weight="weight",
             dangling=None):
    """networkx.pagerank's signature over gpuml.graph.pagerank on the harness device."""
    from gpuml.graph import pagerank

    return pagerank(G, alpha, personalization, max_iter, tol, nstart, weight, dangling, device=DEVICE)


_pagerank_scipy = pagerank  # NetworkX's pagerank calls it; its tests call it directly too

for _namespace, (_module, _names) in ESTIMATORS.items():
    _gpuml = importlib.import_module(_module)
    for _name in _names:
        globals()[_name] = _with_device_default(getattr(_gpuml, _name), DEVICE)


def install():
    """Rebinds scikit-learn's and NetworkX's public names to the classes and function above."""
    for namespace, (_, names) in ESTIMATORS.items():
        module = importlib.import_module(namespace)
        for name in names:
            setattr(module, name, globals()[name])
    import networkx
    import networkx.algorithms
    import networkx.algorithms.link_analysis
    from networkx.algorithms.link_analysis import pagerank_alg

    for module in (networkx, networkx.algorithms, networkx.algorithms.link_analysis, pagerank_alg):
        module.pagerank = pagerank
    pagerank_alg._pagerank_scipy = _pagerank_scipy

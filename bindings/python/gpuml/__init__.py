"""gpuml: GPU machine learning with scikit-learn's interface (ctypes over libgpuml's C ABI).

>>> from gpuml.cluster import KMeans
>>> KMeans(n_clusters=3, device="cuda").fit(X).cluster_centers_  # doctest: +SKIP
"""

from . import _lib
from ._context import cuda_device_count

__version__ = "0.1.0"

library_version = _lib.version()  # the loaded libgpuml's version
library_path = _lib.library_path


def build_info():
    """How the loaded libgpuml was built: CUDA, NCCL, MPI, architectures, visible CUDA devices."""
    return _lib.build_info()


# Estimators by name, imported on first use (gpuml.LinearRegression is gpuml.linear_model.LinearRegression).
_LAZY_ESTIMATORS = {
    "ElasticNet": "linear_model",
    "KMeans": "cluster",
    "Lasso": "linear_model",
    "LinearRegression": "linear_model",
    "LogisticRegression": "linear_model",
    "PCA": "decomposition",
    "RandomForestClassifier": "ensemble",
    "RandomForestRegressor": "ensemble",
    "Ridge": "linear_model",
    "TruncatedSVD": "decomposition",
}


def __getattr__(name):
    module = _LAZY_ESTIMATORS.get(name)
    if module is None:
        raise AttributeError(f"module 'gpuml' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f".{module}", __name__), name)


__all__ = [
    "__version__",
    "build_info",
    "cuda_device_count",
    "library_path",
    "library_version",
    *_LAZY_ESTIMATORS,
]

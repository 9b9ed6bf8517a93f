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


__all__ = ["__version__", "build_info", "cuda_device_count", "library_path", "library_version"]

"""Graph algorithms: PageRank with networkx.pagerank's semantics, on the GPU or the CPU.

>>> import networkx as nx, gpuml.graph
>>> gpuml.graph.pagerank(nx.karate_club_graph())  # doctest: +SKIP
{0: 0.0970..., 1: 0.0528..., ...}

To rank one graph many times (personalized PageRank per seed set, several alphas), build it once:

>>> g = gpuml.graph.Graph(src, dst)  # doctest: +SKIP
>>> [g.pagerank(personalization={seed: 1.0}) for seed in seeds]  # doctest: +SKIP
"""

import ctypes
import json
import numbers

import numpy as np

from . import _array, _lib
from ._context import check_device, get_context

try:  # the exception NetworkX raises, so callers can catch one type whichever library ran
    from networkx.exception import PowerIterationFailedConvergence
except ImportError:  # pragma: no cover - depends on what is installed

    class PowerIterationFailedConvergence(RuntimeError):
        """Raised when the power iteration does not converge within max_iter iterations."""

        def __init__(self, num_iterations, *args):
            msg = f"power iteration failed to converge within {num_iterations} iterations"
            super().__init__(msg, *args)


class ZeroPersonalizationError(ValueError, ZeroDivisionError):
    """A personalization vector that sums to 0: NetworkX 3.x raises ZeroDivisionError there (its
    tests expect it), and gpuml raised ValueError for it before, so the error is both."""


__all__ = ["Graph", "pagerank", "PowerIterationFailedConvergence", "ZeroPersonalizationError"]


def _is_networkx_graph(G):
    try:
        import networkx as nx
    except ImportError:
        return False
    return isinstance(G, nx.Graph)


def _is_scipy_sparse(G):
    try:
        import scipy.sparse as sp
    except ImportError:
        return False
    return sp.issparse(G)


def _per_vertex(values, n, what, index=None):
    """A float64 host vector of length n from a dict (keyed by node, or by vertex id when index is
    None; missing keys are 0, as in NetworkX) or any array."""
    if values is None:
        return None
    if isinstance(values, dict):
        out = np.zeros(n, dtype=np.float64)
        for key, value in values.items():
            i = index.get(key) if index is not None else (int(key) if isinstance(key, numbers.Integral) else None)
            if i is not None and 0 <= i < n:
                out[i] = float(value)
        return out
    out = np.asarray(_array.to_numpy(values), dtype=np.float64)
    if out.ndim != 1:
        raise ValueError(f"{what} must be a dict or a 1-d array, got an array of shape {out.shape}")
    return out


def _vectors(personalization, nstart, dangling, n, index=None):
    """The three per-vertex vectors as host float64 arrays (or None); a personalization that sums to
    0 is ZeroPersonalizationError, as NetworkX divides by that sum."""
    vectors = [_per_vertex(v, n, name, index) for v, name in
               ((personalization, "personalization"), (nstart, "nstart"), (dangling, "dangling"))]
    if vectors[0] is not None and vectors[0].sum() == 0:
        raise ZeroPersonalizationError("personalization sums to 0 over the graph's vertices")
    return vectors


def _networkx_edges(G, weight):
    """src, dst, weights (float64) of G in G's node order; an undirected edge counts both ways
    (a self-loop once), parallel edges add up, as networkx.to_scipy_sparse_array does."""
    nodes = list(G)
    index = {node: i for i, node in enumerate(nodes)}
    src, dst, w = [], [], []
    directed = G.is_directed()
    for u, v, value in G.edges(data=weight, default=1):
        if weight is None:
            value = 1
        i, j = index[u], index[v]
        src.append(i)
        dst.append(j)
        w.append(value)
        if not directed and i != j:
            src.append(j)
            dst.append(i)
            w.append(value)
    return (
        nodes,
        index,
        np.asarray(src, dtype=np.int64),
        np.asarray(dst, dtype=np.int64),
        np.asarray(w, dtype=np.float64),
    )


def _is_real(value):
    return isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))


def _checked_params(alpha, max_iter, tol):
    """alpha, max_iter and tol as the C ABI's JSON parameters; a value out of range (NaN and
    infinity included, which JSON cannot carry) is a ValueError naming the parameter."""
    if not (_is_real(alpha) and 0.0 < alpha < 1.0):
        raise ValueError(f"alpha must be a real number in (0, 1), got {alpha!r}")
    if not (isinstance(max_iter, numbers.Integral) and not isinstance(max_iter, (bool, np.bool_)) and max_iter >= 0):
        raise ValueError(f"max_iter must be an integer >= 0, got {max_iter!r}")
    if not (_is_real(tol) and np.isfinite(tol) and tol >= 0):
        raise ValueError(f"tol must be a finite real number >= 0, got {tol!r}")
    return {"alpha": float(alpha), "max_iter": int(max_iter), "tol": float(tol)}


def _host_ids(a, what):
    a = np.asarray(_array.ArrayKind.host_input(a))
    if a.dtype not in (np.int32, np.int64):
        if a.size and not np.issubdtype(a.dtype, np.integer):
            raise ValueError(f"{what} must hold integer vertex ids, got dtype {a.dtype}")
        a = a.astype(np.int64)
    return a


def _edge_inputs(src, dst, weights):
    """src, dst and weights as the C library takes them: int32 or int64 ids and float32 or float64
    weights, all on the host or all on one device (converted when they are of another dtype).
    Returns them with the ArrayKind of src (outputs are made alike) and the default precision:
    float32 when the weights are float32, float64 otherwise."""
    kind = _array.ArrayKind.of(src)
    if kind.is_device:
        if not _array.has_cuda_array_interface(dst) or (weights is not None and not _array.has_cuda_array_interface(weights)):
            raise ValueError("src, dst and weights must all be device arrays or all host arrays")
        if _array.device_dtype(src) not in (np.int32, np.int64):
            src = _array.device_astype(src, np.int64)
        if _array.device_dtype(dst) not in (np.int32, np.int64):
            dst = _array.device_astype(dst, np.int64)
        if weights is not None and _array.device_dtype(weights) not in (np.float32, np.float64):
            weights = _array.device_astype(weights, np.float64)
        src = src if _array.device_is_c_contiguous(src) else _array.device_astype(src, _array.device_dtype(src))
        dst = dst if _array.device_is_c_contiguous(dst) else _array.device_astype(dst, _array.device_dtype(dst))
        single = weights is not None and _array.device_dtype(weights) == np.float32
    else:
        if _array.has_cuda_array_interface(dst) or (weights is not None and _array.has_cuda_array_interface(weights)):
            raise ValueError("src, dst and weights must all be device arrays or all host arrays")
        src = _host_ids(src, "src")
        dst = _host_ids(dst, "dst")
        if weights is not None:
            weights = np.asarray(_array.ArrayKind.host_input(weights))
            if weights.dtype not in (np.float32, np.float64):
                weights = weights.astype(np.float64)
        single = weights is not None and weights.dtype == np.float32
    return src, dst, weights, kind, np.dtype(np.float32 if single else np.float64)


def _precision(dtype, default):
    if dtype is None:
        return default
    try:
        precision = np.dtype(dtype)
    except TypeError:
        precision = None
    if precision not in (np.float32, np.float64):
        raise ValueError(f"dtype must be float32, float64 or None, got {dtype!r}")
    return precision


class Graph:
    """A graph built once for PageRank and ranked many times.

    Building checks the edges and lays them out for the device (the costly part of a
    ``pagerank`` call); each ``pagerank`` call then runs only the power iteration, with the same
    result as ``gpuml.graph.pagerank`` on the same edges, bit for bit.

    src, dst: vertex ids (integers from 0 to n_vertices - 1), NumPy / CuPy / PyTorch arrays, all on
    the host or all on one GPU; an edge src[e] -> dst[e] per entry; duplicate edges add their
    weights, self-loops count. weights (or None: every edge weighs 1): one per edge, finite and
    >= 0. n_vertices defaults to the largest id + 1. device: "auto" (the GPU holding device
    arrays, else the best device), "cpu", "cuda" or "cuda:N". dtype: the precision of the ranks
    during the iteration, float32 or float64 (default: float32 when the weights are float32,
    float64 otherwise). The arrays are not referenced after the constructor returns.

    Ranks come back as an array of src's kind, on its device, in dtype. Bad input raises
    ValueError naming the argument. A Graph is used by one thread at a time.
    """

    def __init__(self, src, dst, weights=None, n_vertices=None, device="auto", dtype=None):
        self._handle = None
        check_device(device)
        src, dst, weights, kind, default = _edge_inputs(src, dst, weights)
        precision = _precision(dtype, default)
        if n_vertices is None:
            n_vertices = int(src.max()) + 1 if len(src) else 0
            n_vertices = max(n_vertices, int(dst.max()) + 1 if len(dst) else 0)
        elif not (isinstance(n_vertices, numbers.Integral) and not isinstance(n_vertices, (bool, np.bool_))):
            raise ValueError(f"n_vertices must be an integer or None, got {n_vertices!r}")
        if device == "auto" and kind.is_device:
            device = f"cuda:{kind.device_id}"  # compute where the data already lives
        kind.synchronize()
        self._create(get_context(device), int(n_vertices), src, dst, weights, precision, kind)

    @classmethod
    def _from_host(cls, context, n, src, dst, weights, dtype):
        """A graph of host int64 ids and float64 weights (or None) built on `context`."""
        graph = cls.__new__(cls)
        graph._handle = None
        graph._create(context, n, src, dst, weights, np.dtype(dtype), _array.ArrayKind.of(src))
        return graph

    def _create(self, context, n, src, dst, weights, dtype, kind):
        self._free = _lib.lib.gpuml_graph_free  # kept: module globals may be gone at shutdown
        self._kind = kind
        self._weighted = weights is not None
        keep = []

        def desc(a):
            if a is None:
                return None
            d, k = _array.descriptor(a, kind.device_id)
            keep.append(k)
            return ctypes.byref(d)

        handle = _lib._graph_t()
        code = _lib.FLOAT32 if dtype == np.float32 else _lib.FLOAT64
        _lib.check(
            _lib.lib.gpuml_graph_create(context.handle, n, desc(src), desc(dst), desc(weights), code, ctypes.byref(handle))
        )
        self._handle = handle
        del keep
        n_vertices, n_edges, memory = ctypes.c_int64(), ctypes.c_int64(), ctypes.c_int64()
        code = ctypes.c_int32()
        _lib.check(
            _lib.lib.gpuml_graph_info(
                handle, ctypes.byref(n_vertices), ctypes.byref(n_edges), ctypes.byref(code), ctypes.byref(memory)
            )
        )
        self._n, self._n_edges, self._nbytes = n_vertices.value, n_edges.value, memory.value
        self._dtype = _array.numpy_dtype(code.value)

    def __del__(self):
        handle = getattr(self, "_handle", None)
        if handle is not None and handle.value:
            self._free(handle)
            self._handle = None

    @property
    def n_vertices(self):
        return self._n

    @property
    def n_edges(self):
        """The number of edges given (duplicates counted), summed over the ranks when distributed."""
        return self._n_edges

    @property
    def nbytes(self):
        """The bytes the built graph holds on its device (this rank's share when distributed)."""
        return self._nbytes

    @property
    def dtype(self):
        return self._dtype

    def __repr__(self):
        return f"Graph(n_vertices={self._n}, n_edges={self._n_edges}, dtype={self._dtype.name}, nbytes={self._nbytes})"

    def pagerank(self, alpha=0.85, personalization=None, max_iter=100, tol=1e-06, nstart=None, weight="weight",
                 dangling=None):
        """PageRank of the graph's vertices, with networkx.pagerank's parameters and semantics.

        personalization, nstart and dangling: arrays of length n_vertices (any kind; copied to
        the host) or dicts keyed by vertex id (missing ids count 0); each is divided by its sum;
        dangling defaults to the personalization vector (uniform without one). weight: the
        graph's weights are those it was built with (any attribute name means them); None ranks
        unweighted and needs a graph built without weights. Returns an array of src's kind, on
        its device, in the graph's dtype. Raises ValueError for bad input (naming the argument),
        ZeroPersonalizationError for a personalization that sums to 0, and
        PowerIterationFailedConvergence when max_iter iterations do not converge.
        """
        params = _checked_params(alpha, max_iter, tol)
        if weight is None and self._weighted:
            raise ValueError(
                "weight=None asks for unweighted ranks, but this Graph was built with weights; "
                "build one without them (Graph(src, dst)) for unweighted PageRank"
            )
        return self._rank(params, _vectors(personalization, nstart, dangling, self._n))

    def _rank(self, params, vectors):
        """Ranks with checked params and host vectors (None or float64 arrays), as an array of src's kind."""
        if self._handle is None or not self._handle.value:
            raise ValueError("this Graph's handle was freed")
        out = self._kind.empty((self._n,), self._dtype)
        self._kind.synchronize()
        keep = []

        def desc(a):
            if a is None:
                return None
            d, k = _array.descriptor(a, self._kind.device_id)
            keep.append(k)
            return ctypes.byref(d)

        n_iter = ctypes.c_int64(0)
        converged = ctypes.c_int32(0)
        status = _lib.lib.gpuml_graph_pagerank(
            self._handle,
            *(desc(v) for v in vectors),
            json.dumps(params, allow_nan=False).encode("ascii"),
            desc(out),
            ctypes.byref(n_iter),
            ctypes.byref(converged),
        )
        if status == _lib.ERROR_NOT_CONVERGED:
            raise PowerIterationFailedConvergence(params["max_iter"])
        _lib.check(status)
        del keep
        return self._kind.wrap(out)


def pagerank(
    G,
    alpha=0.85,
    personalization=None,
    max_iter=100,
    tol=1e-06,
    nstart=None,
    weight="weight",
    dangling=None,
    device="auto",
    *,
    n_vertices=None,
):
    """PageRank of the vertices of G, as networkx.pagerank computes it.

    G is one of:
    - a NetworkX graph: returns a dict {node: rank}; nodes are taken in G's order, edge weights
      from the attribute `weight` (1 when missing, every edge 1 when weight is None);
      undirected edges count in both directions; parallel edges add their weights;
    - a SciPy sparse adjacency matrix (A[i, j] is the weight of the edge i -> j; with
      weight=None every stored entry weighs 1): returns a NumPy array;
    - a tuple (src, dst) or (src, dst, weights) of NumPy / CuPy / PyTorch arrays (vertex ids
      from 0 to n_vertices - 1; n_vertices defaults to the largest id + 1): returns an array of
      src's kind, on its device, float32 when the weights are float32 and float64 otherwise.

    personalization, nstart and dangling are dicts keyed by node (missing nodes count 0) or, for
    array inputs, arrays of length n_vertices (or dicts keyed by vertex id); each is divided by
    its sum. dangling defaults to the personalization vector (uniform without one).

    device: "auto" (the GPU holding a device input, else the best device), "cpu", "cuda" or
    "cuda:N". Raises ValueError for bad input (ids out of range, negative weights, alpha outside
    (0, 1), max_iter not an integer >= 0, tol not a finite number >= 0, vectors of the wrong length or with a zero sum;
    for personalization, ZeroPersonalizationError, both a ValueError and NetworkX's ZeroDivisionError) and PowerIterationFailedConvergence
    (NetworkX's exception when NetworkX is installed) when max_iter iterations do not converge.

    Each call builds a Graph (see Graph) and ranks it once; to rank one graph several times,
    build the Graph yourself.
    """
    check_device(device)
    params = _checked_params(alpha, max_iter, tol)

    if _is_networkx_graph(G):
        if len(G) == 0:
            return {}
        nodes, index, src, dst, w = _networkx_edges(G, weight)
        n = len(nodes)
        vectors = _vectors(personalization, nstart, dangling, n, index)
        graph = Graph._from_host(get_context(device), n, src, dst, w if weight is not None else None, np.float64)
        return dict(zip(nodes, map(float, graph._rank(params, vectors))))

    if _is_scipy_sparse(G):
        A = G.tocoo()
        if A.ndim != 2 or A.shape[0] != A.shape[1]:
            raise ValueError(f"a sparse adjacency matrix must be square, got shape {A.shape}")
        n = int(A.shape[0])
        src = np.ascontiguousarray(A.row, dtype=np.int64)
        dst = np.ascontiguousarray(A.col, dtype=np.int64)
        w = None if weight is None else np.ascontiguousarray(A.data, dtype=np.float64)
        vectors = _vectors(personalization, nstart, dangling, n)
        if n == 0:
            return np.empty(0, dtype=np.float64)
        return Graph._from_host(get_context(device), n, src, dst, w, np.float64)._rank(params, vectors)

    if isinstance(G, (tuple, list)) and len(G) in (2, 3):
        weights = G[2] if len(G) == 3 and weight is not None else None
        graph = Graph(G[0], G[1], weights, n_vertices=n_vertices, device=device)
        return graph._rank(params, _vectors(personalization, nstart, dangling, graph.n_vertices))

    raise TypeError(
        "pagerank expects a NetworkX graph, a SciPy sparse adjacency matrix, or a tuple (src, dst[, weights]) "
        f"of arrays; got {type(G).__name__}"
    )

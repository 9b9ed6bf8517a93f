"""gpuml.graph.pagerank against networkx.pagerank, on every device under test."""

import numpy as np
import pytest

nx = pytest.importorskip("networkx", reason="NetworkX is not installed (scripts/setup installs it)")
sp = pytest.importorskip("scipy.sparse")

from conftest import CUDA_DEVICE_COUNT, cuda_or_skip  # noqa: E402
from gpuml.graph import Graph, PowerIterationFailedConvergence, ZeroPersonalizationError, pagerank  # noqa: E402

# The bound: L1 distance to NetworkX <= 1e-6 in float64. Both run the same iteration with
# the same stopping test, so the ranks differ only by summation order (~1e-16 each) unless the
# stopping test falls on the other side of N * tol, which moves the result by less than N * tol
# * alpha in L1 (and does not happen on these graphs).
L1_FLOAT64 = 1e-6


def l1(a, b):
    return sum(abs(a[k] - b[k]) for k in b)


def assert_like_networkx(G, device, tol=L1_FLOAT64, **kwargs):
    expected = nx.pagerank(G, **kwargs)
    got = pagerank(G, device=device, **kwargs)
    assert list(got) == list(expected)  # the same nodes, in G's order
    assert l1(got, expected) <= tol
    return got


@pytest.mark.parametrize(
    "make", [nx.karate_club_graph, nx.les_miserables_graph, nx.florentine_families_graph], ids=lambda f: f.__name__
)
@pytest.mark.parametrize("weight", ["weight", None])
def test_bundled_graphs(device, make, weight):
    assert_like_networkx(make(), device, weight=weight)


def test_bundled_graphs_personalized(device, rng):
    G = nx.les_miserables_graph()
    nodes = list(G)
    personalization = {nodes[i]: float(rng.uniform(0.1, 2)) for i in rng.choice(len(nodes), 10, replace=False)}
    assert_like_networkx(G, device, personalization=personalization)
    assert_like_networkx(G, device, personalization=personalization, dangling=personalization, alpha=0.6)
    nstart = {node: float(rng.uniform(0, 1)) for node in nodes}
    assert_like_networkx(G, device, nstart=nstart, weight=None)


def messy_digraph(rng, n=60, p=0.05):
    """Dangling vertices, self-loops, isolated vertices and random weights."""
    G = nx.gnp_random_graph(n, p, seed=int(rng.integers(2**31)), directed=True)
    for v in rng.choice(n, 5, replace=False):
        G.add_edge(int(v), int(v))  # self-loops
    for v in rng.choice(n, 8, replace=False):
        G.remove_edges_from(list(G.out_edges(int(v))))  # dangling
    G.add_nodes_from([n, n + 1])  # isolated
    for u, v in G.edges:
        G[u][v]["weight"] = float(rng.uniform(0, 3))
    return G


def test_digraph_dangling_selfloops_isolated(device, rng):
    G = messy_digraph(rng)
    nodes = list(G)
    assert_like_networkx(G, device)
    assert_like_networkx(G, device, weight=None)
    personalization = {nodes[i]: float(rng.uniform(0, 1)) for i in range(0, len(nodes), 3)}
    dangling = {nodes[i]: float(rng.uniform(0, 1)) for i in range(1, len(nodes), 2)}
    assert_like_networkx(G, device, personalization=personalization)
    assert_like_networkx(G, device, dangling=dangling)
    assert_like_networkx(G, device, personalization=personalization, dangling=dangling, nstart=dangling)


def test_multigraphs_add_parallel_edges(device, rng):
    G = nx.MultiDiGraph()
    G.add_nodes_from(range(12))
    for _ in range(60):
        u, v = (int(x) for x in rng.integers(0, 10, 2))
        G.add_edge(u, v, weight=float(rng.uniform(0.5, 2)))
        if rng.uniform() < 0.3:
            G.add_edge(u, v, weight=float(rng.uniform(0.5, 2)))  # a parallel edge
    assert_like_networkx(G, device)
    assert_like_networkx(G, device, weight=None)
    U = nx.MultiGraph(G)  # undirected, with parallel edges and self-loops
    assert_like_networkx(U, device)


def test_string_nodes_and_empty_graph(device):
    G = nx.DiGraph([("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")])
    assert_like_networkx(G, device)
    assert pagerank(nx.Graph(), device=device) == {}


def test_scipy_sparse(device, rng):
    G = messy_digraph(rng)
    A = nx.to_scipy_sparse_array(G, nodelist=list(G), format="csr")
    expected = np.array(list(nx.pagerank(G).values()))
    got = pagerank(A, device=device)
    assert isinstance(got, np.ndarray) and got.dtype == np.float64
    assert np.abs(got - expected).sum() <= L1_FLOAT64
    expected_unweighted = np.array(list(nx.pagerank(G, weight=None).values()))
    assert np.abs(pagerank(sp.coo_matrix(A), device=device, weight=None) - expected_unweighted).sum() <= L1_FLOAT64


def edge_arrays(rng, n=200, m=1500):
    src = rng.integers(0, n - 20, m)  # the last 20 vertices get no out-edges (dangling or isolated)
    dst = rng.integers(0, n - 10, m)  # the last 10 are isolated
    dup = rng.choice(m, m // 10)
    src = np.concatenate([src, src[dup]])  # duplicate edges
    dst = np.concatenate([dst, dst[dup]])
    w = rng.uniform(0, 2, len(src))
    return n, src, dst, w


def reference(n, src, dst, w=None, **kwargs):
    G = nx.MultiDiGraph()
    G.add_nodes_from(range(n))
    for e in range(len(src)):
        G.add_edge(int(src[e]), int(dst[e]), weight=1.0 if w is None else float(w[e]))
    return np.array([v for _, v in sorted(nx.pagerank(G, **kwargs).items())])


@pytest.mark.parametrize("ids", [np.int64, np.int32])
def test_edge_arrays(device, rng, ids):
    n, src, dst, w = edge_arrays(rng)
    src, dst = src.astype(ids), dst.astype(ids)
    got = pagerank((src, dst), device=device, n_vertices=n)
    assert got.shape == (n,) and got.dtype == np.float64
    assert np.abs(got - reference(n, src, dst)).sum() <= L1_FLOAT64
    got = pagerank((src, dst, w), device=device, n_vertices=n)
    assert np.abs(got - reference(n, src, dst, w)).sum() <= L1_FLOAT64
    p = rng.uniform(0, 1, n)
    got = pagerank((src, dst, w), device=device, n_vertices=n, personalization=p, nstart=p[::-1].copy())
    expected = reference(n, src, dst, w, personalization=dict(enumerate(p)), nstart=dict(enumerate(p[::-1])))
    assert np.abs(got - expected).sum() <= L1_FLOAT64
    # n_vertices defaults to the largest id + 1 (the isolated tail is dropped)
    assert pagerank((src, dst), device=device).shape == (max(src.max(), dst.max()) + 1,)


def test_float32(device, rng):
    n, src, dst, w = edge_arrays(rng)
    got = pagerank((src, dst, w.astype(np.float32)), device=device, n_vertices=n)
    assert got.dtype == np.float32
    # float32 ranks (eps 6e-8, values ~1/n) through the same stopping test: a few float32 ulps
    # per vertex, plus the float32 weights' own rounding.
    assert np.abs(got - reference(n, src, dst, w.astype(np.float32))).sum() <= 1e-5


def test_torch_cpu_tensors(device, rng):
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    n, src, dst, w = edge_arrays(rng)
    got = pagerank((torch.from_numpy(src), torch.from_numpy(dst), torch.from_numpy(w)), device=device, n_vertices=n)
    assert isinstance(got, torch.Tensor) and got.device.type == "cpu"
    assert np.abs(got.numpy() - reference(n, src, dst, w)).sum() <= L1_FLOAT64


def test_device_arrays(rng):
    if CUDA_DEVICE_COUNT == 0:
        cuda_or_skip("no CUDA device")
    n, src, dst, w = edge_arrays(rng)
    expected = pagerank((src, dst, w), device="cpu", n_vertices=n)
    tested = 0
    try:
        import cupy
    except ImportError:
        cupy = None
    if cupy is not None:
        got = pagerank((cupy.asarray(src), cupy.asarray(dst), cupy.asarray(w)), n_vertices=n)
        assert isinstance(got, cupy.ndarray)
        assert np.abs(cupy.asnumpy(got) - expected).sum() <= 1e-12  # GPU vs CPU backend, float64
        tested += 1
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None and torch.cuda.is_available():
        got = pagerank((torch.from_numpy(src).cuda(), torch.from_numpy(dst).cuda(), torch.from_numpy(w).cuda()),
                       n_vertices=n)
        assert isinstance(got, torch.Tensor) and got.device.type == "cuda"
        assert np.abs(got.cpu().numpy() - expected).sum() <= 1e-12  # GPU vs CPU backend, float64
        tested += 1
    if tested == 0:
        cuda_or_skip("neither CuPy nor PyTorch with CUDA is installed")


def test_bad_input(device):
    src, dst = np.array([0, 1, 2]), np.array([1, 2, 0])
    with pytest.raises(ValueError, match="n_vertices"):
        pagerank((src, np.array([1, 2, 3])), device=device, n_vertices=3)  # id >= n_vertices
    with pytest.raises(ValueError, match=">= 0"):
        pagerank((np.array([0, -1, 2]), dst), device=device, n_vertices=3)
    with pytest.raises(ValueError, match="weights"):
        pagerank((src, dst, np.array([1.0, -1.0, 1.0])), device=device)
    for alpha in (0.0, 1.0, -0.5, 2.0):
        with pytest.raises(ValueError, match="alpha"):
            pagerank((src, dst), alpha=alpha, device=device)
    with pytest.raises(ValueError, match="personalization"):
        pagerank((src, dst), personalization=np.ones(2), device=device)  # wrong length
    with pytest.raises(ValueError, match="personalization"):
        pagerank((src, dst), personalization=np.zeros(3), device=device)  # sums to zero
    with pytest.raises(ValueError, match="personalization"):
        pagerank(nx.path_graph(3), personalization={"x": 1.0}, device=device)  # no node of G: sum zero
    with pytest.raises(ValueError, match="weights"):
        G = nx.DiGraph()
        G.add_edge(0, 1, weight=-2.0)
        pagerank(G, device=device)
    with pytest.raises(TypeError):
        pagerank("not a graph", device=device)
    with pytest.raises(ValueError, match="device"):
        pagerank((src, dst), device="tpu")


def test_not_converged(device):
    G = nx.karate_club_graph()
    with pytest.raises(PowerIterationFailedConvergence):
        nx.pagerank(G, max_iter=3)
    with pytest.raises(nx.PowerIterationFailedConvergence):  # the very class NetworkX raises
        pagerank(G, max_iter=3, device=device)


def test_zero_personalization_raises_zero_division_error_as_networkx(device, rng):
    """NetworkX 3.x raises ZeroDivisionError for a personalization vector that sums to 0
    (networkx/algorithms/link_analysis/pagerank_alg.py, _pagerank_scipy); its own test module
    expects it. gpuml's error is also a ValueError, which gpuml raised before and users may catch."""
    n = int(rng.integers(5, 30))
    G = nx.gnp_random_graph(n, 0.3, seed=int(rng.integers(2**31)), directed=True)
    zeros = {node: 0 for node in G}
    with pytest.raises(ZeroDivisionError):
        nx.pagerank(G, personalization=zeros)  # the behaviour matched
    src, dst = (np.array(side, dtype=np.int64) for side in zip(*G.edges())) if G.number_of_edges() else ([], [])
    for graph, personalization, extra in (
        (G, zeros, {}),
        (G, {"not a node": 1.0}, {}),  # no node of G: the sum over G's nodes is 0
        (nx.to_scipy_sparse_array(G), np.zeros(n), {}),
        ((src, dst), np.zeros(n), {"n_vertices": n}),
    ):
        with pytest.raises(ZeroDivisionError, match="personalization") as raised:
            pagerank(graph, personalization=personalization, device=device, **extra)
        assert isinstance(raised.value, ValueError)


# ---- gpuml.graph.Graph: built once, ranked many times -------------------------------------------


def digraph_arrays(G):
    """src, dst, weights of a graph whose nodes are 0..n-1 in order (as messy_digraph's)."""
    assert list(G) == list(range(len(G)))
    edges = list(G.edges(data="weight"))
    src = np.array([u for u, _, _ in edges], dtype=np.int64)
    dst = np.array([v for _, v, _ in edges], dtype=np.int64)
    w = np.array([x for _, _, x in edges], dtype=np.float64)
    return src, dst, w


def test_graph_ranked_many_times_like_networkx(device, rng):
    G = messy_digraph(rng, n=int(rng.integers(30, 120)))
    n = len(G)
    src, dst, w = digraph_arrays(G)
    graph = Graph(src, dst, w, n_vertices=n, device=device)
    unweighted = Graph(src, dst, n_vertices=n, device=device)
    for _ in range(4):  # fresh seed sets, alphas and starts on the same two graphs
        seeds = rng.choice(n, int(rng.integers(1, 6)), replace=False)
        personalization = {int(v): float(rng.uniform(0.1, 2)) for v in seeds}
        alpha = float(rng.uniform(0.5, 0.95))
        nstart = rng.uniform(0, 1, n)
        # Up to alpha = 0.95 the power iteration contracts slowly: NetworkX's 100 iterations may not
        # reach its tolerance (it then raises), so both get 1000.
        expected = np.array(list(nx.pagerank(G, alpha=alpha, personalization=personalization,
                                             nstart=dict(enumerate(nstart)), max_iter=1000).values()))
        got = graph.pagerank(alpha=alpha, personalization=personalization, nstart=nstart, max_iter=1000)
        assert isinstance(got, np.ndarray) and got.dtype == np.float64 and got.shape == (n,)
        assert np.abs(got - expected).sum() <= L1_FLOAT64  # float64: the bound of the one-shot tests above
        dangling = rng.uniform(0, 1, n)
        expected = np.array(list(nx.pagerank(G, weight=None, personalization=personalization,
                                             dangling=dict(enumerate(dangling))).values()))
        got = unweighted.pagerank(personalization=personalization, dangling=dangling, weight=None)
        assert np.abs(got - expected).sum() <= L1_FLOAT64  # float64, as above


def test_graph_equals_one_shot_pagerank_bit_for_bit(device, rng):
    n, src, dst, w = edge_arrays(rng)
    for weights in (w, w.astype(np.float32), None):
        graph = Graph(src, dst, weights, n_vertices=n, device=device)
        for _ in range(3):
            p = rng.uniform(0, 1, n)
            alpha = float(rng.uniform(0.5, 0.95))
            once = pagerank((src, dst) if weights is None else (src, dst, weights), alpha=alpha, personalization=p,
                            device=device, n_vertices=n, max_iter=1000)  # alpha up to 0.95: slow contraction
            got = graph.pagerank(alpha=alpha, personalization=p, max_iter=1000)
            assert got.dtype == once.dtype
            assert np.array_equal(got, once)  # the same code runs: the same bits


def test_graph_properties_and_dtypes(device, rng):
    n, src, dst, w = edge_arrays(rng)
    graph = Graph(src.astype(np.int32), dst, w, device=device)
    assert graph.n_vertices == max(src.max(), dst.max()) + 1  # n_vertices defaults to the largest id + 1
    assert graph.n_edges == len(src)
    assert graph.dtype == np.float64
    assert len(src) * 12 <= graph.nbytes  # at least a source id and a weight per edge
    assert "n_edges" in repr(graph)
    single = Graph(src, dst, w.astype(np.float32), n_vertices=n, device=device)
    assert single.dtype == np.float32 and single.pagerank().dtype == np.float32
    assert single.nbytes < graph.nbytes
    forced = Graph(src, dst, w, n_vertices=n, device=device, dtype="float32")
    assert forced.dtype == np.float32
    # float32 ranks (eps 6e-8, values ~1/n): a few float32 ulps per vertex, as test_float32.
    assert np.abs(forced.pagerank() - reference(n, src, dst, w)).sum() <= 1e-5
    empty = Graph(np.array([], dtype=np.int64), np.array([], dtype=np.int64), device=device)
    assert empty.n_vertices == 0 and empty.n_edges == 0
    assert empty.pagerank().shape == (0,)
    isolated = Graph([], [], n_vertices=4, device=device)
    assert np.abs(isolated.pagerank() - 0.25).max() <= 1e-15  # every vertex dangling: uniform, up to rounding


def test_graph_torch_cpu_tensors(device, rng):
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    n, src, dst, w = edge_arrays(rng)
    graph = Graph(torch.from_numpy(src), torch.from_numpy(dst), torch.from_numpy(w), n_vertices=n, device=device)
    got = graph.pagerank(personalization=torch.from_numpy(rng.uniform(0, 1, n)))
    assert isinstance(got, torch.Tensor) and got.device.type == "cpu" and got.dtype == torch.float64


def test_graph_device_arrays(rng):
    if CUDA_DEVICE_COUNT == 0:
        cuda_or_skip("no CUDA device")
    n, src, dst, w = edge_arrays(rng)
    host = Graph(src, dst, w, n_vertices=n, device="cpu")
    starts = [rng.uniform(0, 1, n) for _ in range(3)]
    tested = 0
    for module in ("cupy", "torch"):
        try:
            lib = __import__(module)
        except ImportError:
            continue
        if module == "torch":
            if not lib.cuda.is_available():
                continue
            to_device, to_host = (lambda a: lib.from_numpy(a).cuda()), (lambda a: a.cpu().numpy())
        else:
            to_device, to_host = lib.asarray, lib.asnumpy
        graph = Graph(to_device(src), to_device(dst), to_device(w), n_vertices=n)
        for i in range(9):  # reused, each call on fresh vectors: a stale first iteration would show
            kwargs = {"nstart": starts[i % 3]}
            if i % 4 == 3:
                kwargs["personalization"] = starts[(i + 1) % 3]
            got = graph.pagerank(**kwargs)
            assert np.abs(to_host(got) - host.pagerank(**kwargs)).sum() <= 1e-12  # GPU vs CPU, float64 (as test_device_arrays)
        tested += 1
    if tested == 0:
        cuda_or_skip("neither CuPy nor PyTorch with CUDA is installed")


def test_graph_bad_input(device, rng):
    src, dst, w = np.array([0, 1, 2, 2]), np.array([1, 2, 0, 1]), np.array([1.0, 2.0, 1.0, 0.5])
    with pytest.raises(ValueError, match="n_vertices"):
        Graph(src, dst, n_vertices=2, device=device)  # id >= n_vertices
    with pytest.raises(ValueError, match=">= 0"):
        Graph(np.array([0, -1, 2, 2]), dst, device=device)
    with pytest.raises(ValueError, match="weights"):
        Graph(src, dst, -w, device=device)
    with pytest.raises(ValueError, match="weights"):
        Graph(src, dst, w[:3], device=device)
    with pytest.raises(ValueError, match="same length"):
        Graph(src, dst[:3], device=device)
    with pytest.raises(ValueError, match="src"):
        Graph(np.array([0.5, 1, 2, 2]), dst, device=device)
    with pytest.raises(ValueError, match="dtype"):
        Graph(src, dst, dtype=np.int32, device=device)
    with pytest.raises(ValueError, match="n_vertices"):
        Graph(src, dst, n_vertices=3.5, device=device)
    with pytest.raises(ValueError, match="n_vertices"):
        Graph(src, dst, n_vertices=-1, device=device)
    with pytest.raises(ValueError, match="device"):
        Graph(src, dst, device="tpu")
    graph = Graph(src, dst, w, device=device)
    before = graph.pagerank()
    with pytest.raises(ValueError, match="personalization"):
        graph.pagerank(personalization=np.ones(2))  # wrong length
    with pytest.raises(ValueError, match="nstart"):
        graph.pagerank(nstart=np.ones((3, 1)))
    with pytest.raises(ValueError, match="dangling"):
        graph.pagerank(dangling=np.array([1.0, -1.0, 1.0]))
    with pytest.raises(ZeroPersonalizationError, match="personalization"):
        graph.pagerank(personalization={7: 1.0})  # no vertex of the graph: the sum is 0
    for alpha in (0.0, 1.0, float("nan")):
        with pytest.raises(ValueError, match="alpha"):
            graph.pagerank(alpha=alpha)
    with pytest.raises(ValueError, match="max_iter"):
        graph.pagerank(max_iter=-1)
    with pytest.raises(ValueError, match="weight"):
        graph.pagerank(weight=None)  # built with weights
    with pytest.raises(nx.PowerIterationFailedConvergence):
        graph.pagerank(max_iter=1)
    assert np.array_equal(graph.pagerank(), before)  # the refused calls left the graph as it was


def test_graph_freed_with_its_object(device, rng):
    n, src, dst, w = edge_arrays(rng)
    graphs = [Graph(src, dst, w, n_vertices=n, device=device) for _ in range(5)]
    expected = graphs[0].pagerank()
    del graphs[1:]
    import gc

    gc.collect()
    assert np.array_equal(graphs[0].pagerank(), expected)
    try:
        Graph(src, dst, -w, device=device)  # a failed build leaves an object without a handle to free
    except ValueError:
        pass
    gc.collect()

#!/usr/bin/env python3
"""PageRank: gpuml against SciPy (NetworkX's own algorithm) and PyTorch, same graph.

Graph: R-MAT (datasets/rmat.py; a, b, c, d = 0.57, 0.19, 0.19, 0.05), scale --scale (default 22
with a GPU, 16 without), edge factor 16, unweighted; src and dst as int64 torch tensors on the GPU
when there is one (NumPy arrays otherwise). Above scale 22 the graph is drawn on the GPU (rmat_torch),
and SciPy's rows and L1 check are left out above scale 23 (--scipy).

First, the user's path: whole calls, the graph build included.
  gpuml default   gpuml.graph.pagerank((src, dst), n_vertices=n) with every other parameter at
                  its default: float64 ranks (NetworkX's), tol = 1e-6, max_iter = 100; with a GPU
                  also on NumPy copies of src and dst (the copies to the device timed)
  gpuml float32   the same call with float32 weights of 1: float32 ranks
  gpuml k iters   the one-shot call with exactly --iters iterations (tol = 0, the partial result
                  allowed), float64 and float32: what issue 27's 30 ms target times
  torch           what a user writes: coalesce the edges, a CSR matrix of A^T with rows
                  normalized, torch.sparse.mm until NetworkX's stopping test (sum |x - x_last|
                  < n tol, tol = 1e-6, at most 100) and with exactly --iters iterations, float32

Then the iterations alone, the build left out:

  gpuml           a one-shot call (gpuml.graph.Graph built and ranked once, as gpuml.graph.pagerank
                  does) with tol = 0 and the partial result allowed, timed with max_iter = 1 and
                  1 + --timed-iters (default 200): the difference over --timed-iters is one
                  iteration (the graph build excluded; it is printed separately; it varies by
                  ~2 ms, which over 20 iterations was +-0.1 ms)
  gpuml Graph     a prebuilt gpuml.graph.Graph ranked with 1 + --iters iterations (default 21),
                  the whole call (start vector in, ranks out) over the iterations: what a caller
                  ranking one graph many times pays per iteration; its build is printed
  scipy           networkx's _pagerank_scipy iteration written over a SciPy CSR matrix, float64:
                  x = alpha (x A + sum(x[dangling]) / n) + (1 - alpha) / n
  torch           the same iteration with a torch sparse CSR matrix (A^T, rows normalized) and
                  torch.sparse.mm, float32, on the GPU when there is one
  networkx        networkx.pagerank itself, only for scale <= 14 (it builds a Python graph)

Prints per-iteration times, ratios against gpuml, and the L1 distance of each result to SciPy's
after the same number of iterations (1 + --iters, default 20). Target (one H100/H200): scale 22 <= 0.3 ms per iteration.

    GPUML_LIBRARY=build-gpu/libgpuml.so python3 benchmarks/compare_pagerank.py
    python3 benchmarks/compare_pagerank.py --scale 14      # no GPU needed
"""

import argparse
import os
import sys
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "bindings", "python"))
sys.path.insert(0, os.path.join(REPO, "datasets"))

TARGET_MS = 0.3
ALPHA = 0.85


def main():
    import gpuml
    from gpuml import graph
    from gpuml._context import get_context

    has_gpu = gpuml.cuda_device_count() > 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scale", type=int, default=22 if has_gpu else 16)
    parser.add_argument("--edge-factor", type=int, default=16)
    parser.add_argument("--iters", type=int, default=20, help="iterations compared with SciPy")
    parser.add_argument("--timed-iters", type=int, default=200, help="iterations timed (gpuml and torch)")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--scipy", choices=("auto", "yes", "no"), default="auto",
                        help="SciPy's iterations and the L1 check (auto: up to scale 23; its CSR build takes minutes above)")
    args = parser.parse_args()

    from rmat import rmat, rmat_torch

    context = get_context(args.device)
    try:
        import torch
    except ImportError:
        torch = None
    use_torch_cuda = torch is not None and torch.cuda.is_available() and context.is_cuda
    with_scipy = args.scipy == "yes" or (args.scipy == "auto" and args.scale <= 23)

    # Above scale 22 the graph is drawn on the GPU (NumPy took 86 s at scale 24): the same
    # distribution from another generator, so another graph.
    t0 = time.perf_counter()
    if use_torch_cuda and args.scale > 22:
        g_src, g_dst = rmat_torch(args.scale, args.edge_factor, seed=args.seed)
        torch.cuda.synchronize()
        src = dst = None  # NumPy copies only where SciPy needs them
        if with_scipy:
            src, dst = g_src.cpu().numpy(), g_dst.cpu().numpy()
        generator = "torch, on the GPU"
    else:
        src, dst = rmat(args.scale, args.edge_factor, seed=args.seed)
        g_src, g_dst = (torch.from_numpy(src).cuda(), torch.from_numpy(dst).cuda()) if use_torch_cuda else (src, dst)
        generator = "NumPy"
    n, m = 1 << args.scale, len(g_src)
    print(f"R-MAT scale {args.scale}: n={n} m={m} (generated with {generator} in {time.perf_counter() - t0:.1f} s)")
    iters = args.iters
    rows = []
    out = None  # the last one-shot call's ranks

    device = args.device if args.device != "auto" else ("cuda" if context.is_cuda else "cpu")

    def params_of(k):  # the C ABI's parameters: tol = 0 runs all k iterations, the partial result allowed
        return {"alpha": ALPHA, "max_iter": k, "tol": 0.0, "allow_unconverged": True}

    def gpuml_run(k, dtype=np.float32):
        nonlocal out
        start = time.perf_counter()
        prebuilt = graph.Graph(g_src, g_dst, n_vertices=n, device=device, dtype=dtype)
        out = prebuilt._rank(params_of(k), (None, None, None))
        context.synchronize()
        return time.perf_counter() - start

    # ---- the user's path: whole calls ------------------------------------------------------
    whole = []  # (name, seconds, note)

    def best_of(f, repeats=3):
        f()  # warm-up
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            f()
            context.synchronize()
            if use_torch_cuda:
                torch.cuda.synchronize()
            times.append(time.perf_counter() - start)
        return min(times)

    whole.append(("gpuml pagerank((src, dst)), defaults", best_of(lambda: graph.pagerank((g_src, g_dst), n_vertices=n,
                                                                                        device=device)), "float64"))
    if use_torch_cuda:  # the same call on NumPy arrays: the copies to the device inside the timing
        src_host = src if src is not None else g_src.cpu().numpy()
        dst_host = dst if dst is not None else g_dst.cpu().numpy()
        whole.append(("gpuml pagerank((src, dst)), NumPy arrays", best_of(
            lambda: graph.pagerank((src_host, dst_host), n_vertices=n, device=device)), "float64"))
        del src_host, dst_host
    if use_torch_cuda:
        ones32 = torch.ones(m, dtype=torch.float32, device="cuda")
    else:
        ones32 = np.ones(m, dtype=np.float32)
    whole.append(("gpuml pagerank((src, dst, ones)), float32", best_of(lambda: graph.pagerank((g_src, g_dst, ones32),
                                                                                             n_vertices=n, device=device)),
                  "float32"))
    for dtype in (np.float64, np.float32):
        def fixed(dtype=dtype):
            graph.Graph(g_src, g_dst, n_vertices=n, device=device, dtype=dtype)._rank(params_of(iters), (None, None, None))
        whole.append((f"gpuml build + {iters} iterations", best_of(fixed), np.dtype(dtype).name))

    timed = args.timed_iters
    for dtype in (np.float32, np.float64):  # a run of 1 + timed iterations less a run of 1
        gpuml_run(1, dtype)  # warm-up
        one = min(gpuml_run(1, dtype) for _ in range(3))
        many = min(gpuml_run(1 + timed, dtype) for _ in range(3))
        per_iter = (many - one) / timed
        gpuml_run(1 + iters, dtype)  # the ranks compared with SciPy's
        ranks_gpuml = np.asarray(out.cpu().numpy() if use_torch_cuda else out, dtype=np.float64)
        name = np.dtype(dtype).name
        rows.append((f"gpuml ({'cuda' if context.is_cuda else 'cpu'}, {name})", per_iter, ranks_gpuml))
        print(f"gpuml build + 1 iteration ({name}): {one * 1e3:.2f} ms")

    # ---- gpuml, a prebuilt Graph --------------------------------------------------------------
    start = time.perf_counter()
    prebuilt = graph.Graph(g_src, g_dst, n_vertices=n, device=device, dtype=np.float32)
    context.synchronize()
    build_seconds = time.perf_counter() - start
    print(f"gpuml Graph build: {build_seconds * 1e3:.2f} ms, {prebuilt.nbytes / m:.1f} bytes per edge")
    prebuilt._rank(params_of(1), (None, None, None))  # warm-up

    def graph_call():
        start = time.perf_counter()
        ranks = prebuilt._rank(params_of(1 + iters), (None, None, None))
        context.synchronize()
        return time.perf_counter() - start, ranks

    seconds, ranks = min((graph_call() for _ in range(3)), key=lambda timed_ranks: timed_ranks[0])
    ranks_graph = np.asarray(ranks.cpu().numpy() if use_torch_cuda else ranks, dtype=np.float64)
    rows.append((f"gpuml prebuilt Graph, {1 + iters} iterations", seconds / (1 + iters), ranks_graph))

    # ---- SciPy: networkx's algorithm --------------------------------------------------------
    reference = None  # SciPy's ranks after 1 + iters iterations, what gpuml computed, in float64
    if with_scipy:
        import scipy.sparse as sp

        A = sp.csr_matrix((np.ones(m), (src, dst)), shape=(n, n))  # duplicates summed, as networkx
        S = np.asarray(A.sum(axis=1)).ravel()
        inv = np.divide(1.0, S, out=np.zeros_like(S), where=S != 0)
        AT = (sp.diags(inv) @ A).T.tocsr()
        dangling = S == 0

        def scipy_iterations(k):
            x = np.full(n, 1.0 / n)
            for _ in range(k):
                x = ALPHA * (AT @ x + x[dangling].sum() / n) + (1 - ALPHA) / n
            return x

        k_scipy = max(1, min(iters, 3 if args.scale >= 20 else iters))
        start = time.perf_counter()
        scipy_iterations(k_scipy)
        rows.append(("scipy (networkx's iteration, float64)", (time.perf_counter() - start) / k_scipy, None))
        reference = scipy_iterations(1 + iters)
    else:
        print(f"(SciPy skipped at scale {args.scale}: its CSR build takes minutes; no L1 check)")

    # ---- PyTorch sparse CSR -----------------------------------------------------------------
    if torch is not None:
        dev = "cuda" if torch.cuda.is_available() else "cpu"
        sync = torch.cuda.synchronize if dev == "cuda" else (lambda: None)
        t_src = g_src.to(dev) if use_torch_cuda else torch.from_numpy(src).to(dev)
        t_dst = g_dst.to(dev) if use_torch_cuda else torch.from_numpy(dst).to(dev)

        def torch_matrix():  # what a user writes: A^T as CSR, duplicates summed, rows of A normalized
            coo = torch.sparse_coo_tensor(torch.stack([t_dst.long(), t_src.long()]), torch.ones(m, device=dev),
                                          (n, n)).coalesce()
            out_degree = torch.zeros(n, device=dev).index_add_(0, coo.indices()[1], coo.values())
            inv = torch.where(out_degree > 0, 1.0 / out_degree, torch.zeros_like(out_degree))
            values = coo.values() * inv[coo.indices()[1]]
            return torch.sparse_coo_tensor(coo.indices(), values, (n, n)).to_sparse_csr(), out_degree == 0

        def torch_iterations(A_T, dangling_mask, max_iter, tol=0.0):
            x = torch.full((n, 1), 1.0 / n, device=dev)
            for it in range(max_iter):
                last = x
                x = ALPHA * (torch.sparse.mm(A_T, x) + x[dangling_mask].sum() / n) + (1 - ALPHA) / n
                if tol > 0 and float((x - last).abs().sum()) < n * tol:
                    return x, it + 1
            return x, max_iter

        # The user's whole call: the CSR matrix from the edges on the device, then iterations.
        def torch_whole_call(max_iter, tol):
            return torch_iterations(*torch_matrix(), max_iter, tol)[1]

        for label, max_iter, tol in (("tol = 1e-6", 100, 1e-6), (f"{iters} iterations", iters, 0.0)):
            torch_whole_call(max_iter, tol)
            sync()
            start = time.perf_counter()
            done = torch_whole_call(max_iter, tol)
            sync()
            whole.append((f"torch whole call, {label}", time.perf_counter() - start, f"float32, {done} iterations"))

        A_T, dangling_mask = torch_matrix()
        torch_iterations(A_T, dangling_mask, 2)
        sync()
        start = time.perf_counter()
        torch_iterations(A_T, dangling_mask, 1 + timed)
        sync()
        seconds = (time.perf_counter() - start) / (1 + timed)
        x, _ = torch_iterations(A_T, dangling_mask, 1 + iters)
        rows.append((f"torch sparse CSR ({dev}, float32)", seconds, x.cpu().numpy().ravel().astype(np.float64)))
        del A_T, dangling_mask
    else:
        print("(torch not installed: its row is skipped)")

    # ---- networkx itself, small graphs only -------------------------------------------------
    if args.scale <= 14:
        try:
            import networkx as nx
        except ImportError:
            nx = None
        if nx is not None:
            G = nx.MultiDiGraph()
            G.add_nodes_from(range(n))
            G.add_edges_from(zip(src.tolist(), dst.tolist()))
            start = time.perf_counter()
            try:
                nx.pagerank(G, alpha=ALPHA, max_iter=1 + iters, tol=0.0)
            except nx.PowerIterationFailedConvergence:
                pass  # tol = 0: it runs all 1 + iters iterations, as the others
            rows.append(("networkx.pagerank (whole call)", (time.perf_counter() - start) / (1 + iters), None))

    print("\nuser's path: whole calls, the graph build included")
    print(f"{'call':<48}{'ms':>10}{'x gpuml':>10}  note")
    for name, seconds, note in whole:
        print(f"{name:<48}{seconds * 1e3:>10.2f}{seconds / whole[0][1]:>10.2f}  {note}")

    print("\ndetail: the iterations alone")
    base = rows[0][1]
    print(f"{'implementation':<40}{'ms / iteration':>16}{'x gpuml':>10}{'L1 to scipy':>14}")
    for name, seconds, ranks in rows:
        dist = f"{np.abs(ranks - reference).sum():.2e}" if ranks is not None and reference is not None else "-"
        print(f"{name:<40}{seconds * 1e3:>16.4f}{seconds / base:>10.2f}{dist:>14}")
    if args.scale == 22 and context.is_cuda:
        print(f"target: <= {TARGET_MS} ms per iteration -> {'met' if base * 1e3 <= TARGET_MS else 'NOT met'}")
        # issue 27: the one-shot call with 20 iterations <= 30 ms (float64 and float32), the build <= 15 ms
        for name, seconds, note in whole:
            if name.startswith("gpuml build +") and iters == 20:
                print(f"target: {name} ({note}) <= 30 ms -> {'met' if seconds * 1e3 <= 30 else 'NOT met'}")
        print(f"target: Graph build <= 15 ms -> {'met' if build_seconds * 1e3 <= 15 else 'NOT met'}")
        f64 = next(seconds for name, seconds, _ in rows if name.endswith("float64)"))
        print(f"target: one float64 iteration <= 0.6 ms -> {'met' if f64 * 1e3 <= 0.6 else 'NOT met'} ({f64 * 1e3:.3f} ms)")


if __name__ == "__main__":
    main()

"""Strong scaling of gpuml's distributed fits: mpirun -np N python benchmarks/scaling.py [options]

The same global data for any rank count: --rows x 64 float32 rows (blobs, a linear target and a
two-class label) made in blocks of 65536 rows, block b from the seed (--seed, b), and an R-MAT
graph of 2**--scale vertices and 16 * 2**scale edges made as 16 blocks of 2**scale edges (block b
from (--seed, b)). Each rank makes only its share: a contiguous range of rows, a contiguous
range of edge blocks. Fits: KMeans (--clusters, 20 Lloyd iterations, tol 0), LinearRegression
(OLS), PCA (8 components), RandomForestClassifier (--trees, --max-depth) and PageRank.

The rank count is MPI's (one GPU per rank on --device cuda: gpuml.distributed.init() gives each
rank the GPU of its local rank). Each fit: one warm-up, then the best of --repeats, each between
two barriers. Fits that refuse the device over several ranks print "unsupported". Rank 0 prints
the table; --save JSON writes the seconds, and --baseline JSON (a 1-rank run's --save) adds the
speedup. Needs mpi4py.

    mpirun -np 1 python benchmarks/scaling.py --device cpu --rows 200000 --scale 16 --save one.json
    mpirun -np 2 python benchmarks/scaling.py --device cpu --rows 200000 --scale 16 --baseline one.json
"""

import argparse
import json
import os
import sys
import time

import numpy as np
from mpi4py import MPI

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "bindings", "python"))
sys.path.insert(0, os.path.join(REPO, "datasets"))

import gpuml  # noqa: E402
import gpuml.distributed  # noqa: E402
from gpuml._context import get_context  # noqa: E402
from gpuml.cluster import KMeans  # noqa: E402
from gpuml.decomposition import PCA  # noqa: E402
from gpuml.ensemble import RandomForestClassifier  # noqa: E402
from gpuml.graph import pagerank  # noqa: E402
from gpuml.linear_model import LinearRegression  # noqa: E402
from rmat import rmat  # noqa: E402

BLOCK = 1 << 16
D = 64
EDGE_BLOCKS = 16


def share(n, rank, size):
    return n * rank // size, n * (rank + 1) // size


def make_rows(n, seed, rank, size):
    """This rank's rows of the global data: X (float32), a linear target and a 0/1 label."""
    start, stop = share(n, rank, size)
    head = np.random.default_rng([seed, 0])
    centers = head.normal(scale=4.0, size=(16, D)).astype(np.float32)
    coef = head.normal(size=D).astype(np.float32)
    X, y, labels = [], [], []
    for b in range(start // BLOCK, (stop + BLOCK - 1) // BLOCK):
        rng = np.random.default_rng([seed, 1, b])
        m = min(BLOCK, n - b * BLOCK)
        z = rng.integers(0, len(centers), size=m)
        xb = centers[z] + rng.standard_normal((m, D), dtype=np.float32)
        yb = xb @ coef + rng.standard_normal(m, dtype=np.float32)
        lb = (xb[:, 0] + xb[:, 1] + rng.standard_normal(m, dtype=np.float32) > 0).astype(np.int32)
        lo, hi = max(start, b * BLOCK) - b * BLOCK, min(stop, b * BLOCK + m) - b * BLOCK
        X.append(xb[lo:hi])
        y.append(yb[lo:hi])
        labels.append(lb[lo:hi])
    return np.concatenate(X), np.concatenate(y), np.concatenate(labels)


def make_edges(scale, seed, rank, size):
    start, stop = share(EDGE_BLOCKS, rank, size)
    parts = [rmat(scale, edge_factor=1, seed=[seed, 2, b]) for b in range(start, stop)]
    if not parts:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


def to_device(a):
    """`a` on this rank's GPU when CuPy or PyTorch is installed (fits then read device memory);
    else `a` itself (gpuml copies it to the GPU in every fit)."""
    device_id = get_context("cuda").device_id
    try:
        import cupy

        with cupy.cuda.Device(device_id):
            return cupy.asarray(a)
    except ImportError:
        pass
    try:
        import torch

        return torch.as_tensor(a, device=f"cuda:{device_id}")
    except ImportError:
        return a


def time_fit(fit, context, repeats, comm):
    """Best seconds of `repeats` fits after one warm-up, each between two barriers; None when the
    fit refuses the device over these ranks (every rank raises NotImplementedError together)."""
    best = None
    for i in range(repeats + 1):
        comm.Barrier()
        t = time.perf_counter()
        try:
            fit()
        except NotImplementedError as e:
            if i == 0 and comm.rank == 0:
                print(f"# unsupported: {e}", file=sys.stderr)
            return None
        context.synchronize()
        comm.Barrier()
        t = time.perf_counter() - t
        if i > 0:
            best = t if best is None else min(best, t)
    return best


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=20_000_000)
    parser.add_argument("--scale", type=int, default=24, help="R-MAT scale (2**scale vertices)")
    parser.add_argument("--clusters", type=int, default=64)
    parser.add_argument("--trees", type=int, default=16)
    parser.add_argument("--max-depth", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cuda" if gpuml.build_info().get("cuda_devices") else "cpu")
    parser.add_argument("--only", default="", help="comma-separated subset: kmeans,linear,pca,forest,pagerank")
    parser.add_argument("--save", help="write the seconds to this JSON file (rank 0)")
    parser.add_argument("--baseline", help="a 1-rank run's --save file: adds the speedup")
    args = parser.parse_args()

    comm = MPI.COMM_WORLD
    gpuml.distributed.init(cuda=args.device == "cuda")
    rank, size = gpuml.distributed.rank(), gpuml.distributed.size()
    assert size == comm.size, (size, comm.size)
    context = get_context(args.device)
    device = "cpu" if args.device == "cpu" else f"cuda:{context.device_id}"

    X, y, labels = make_rows(args.rows, args.seed, rank, size)
    src, dst = make_edges(args.scale, args.seed, rank, size)
    if args.device == "cuda":
        X, y, labels = to_device(X), to_device(y), to_device(labels)
    n_vertices = 1 << args.scale

    fits = {
        "kmeans": lambda: KMeans(args.clusters, init="random", n_init=1, max_iter=20, tol=0.0, random_state=0,
                                 device=args.device).fit(X),
        "linear": lambda: LinearRegression(device=args.device).fit(X, y),
        "pca": lambda: PCA(n_components=8, random_state=0, device=args.device).fit(X),
        "forest": lambda: RandomForestClassifier(n_estimators=args.trees, max_depth=args.max_depth, random_state=0,
                                                 device=args.device).fit(X, labels),
        "pagerank": lambda: pagerank((src, dst), n_vertices=n_vertices, device=args.device),
    }
    names = {"kmeans": f"KMeans (k={args.clusters})", "linear": "LinearRegression (OLS)", "pca": "PCA (8)",
             "forest": f"RandomForestClassifier ({args.trees} trees, depth {args.max_depth})",
             "pagerank": f"PageRank (R-MAT scale {args.scale})"}
    chosen = [k for k in fits if not args.only or k in args.only.split(",")]
    seconds = {k: time_fit(fits[k], context, args.repeats, comm) for k in chosen}

    if rank != 0:
        return
    baseline = {}
    if args.baseline:
        with open(args.baseline) as f:
            saved = json.load(f)
        if (saved["rows"], saved["scale"]) != (args.rows, args.scale):
            print(f"# baseline {args.baseline} is of other sizes: no speedup", file=sys.stderr)
        else:
            baseline = saved["seconds"]
    print(f"# {args.rows} x {D} float32 rows, R-MAT scale {args.scale} ({16 << args.scale} edges), "
          f"{size} rank(s), gpuml {gpuml.__version__}")
    print(f"| {'estimator':<44} | ranks | {'device':<6} | {'seconds':>11} | speedup |")
    print(f"| {'-' * 44} | ----- | {'-' * 6} | {'-' * 11} | ------- |")
    for k in chosen:
        s = seconds[k]
        cell = "unsupported" if s is None else f"{s:.4f}"
        speedup = f"{baseline[k] / s:.2f}x" if s is not None and baseline.get(k) else ""
        print(f"| {names[k]:<44} | {size:>5} | {device:<6} | {cell:>11} | {speedup:>7} |")
    if args.save:
        with open(args.save, "w") as f:
            json.dump({"rows": args.rows, "scale": args.scale, "ranks": size, "device": args.device,
                       "seconds": seconds}, f, indent=1)


if __name__ == "__main__":
    main()

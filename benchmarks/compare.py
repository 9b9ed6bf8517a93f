#!/usr/bin/env python3
"""KMeans as users call it, then per iteration: gpuml against scikit-learn and plain PyTorch.

One run, one data set (Gaussian blobs, float32, the seed printed). First the user's path: the
whole `KMeans(n_clusters=k, random_state=0).fit(X)` with every other parameter at its default
(k-means++, n_init="auto", max_iter=300, tol=1e-4), beside scikit-learn's same call and the
PyTorch a user would write (k-means++ with one D^2 draw per center, then Lloyd until the
centers move less than scikit-learn's tol); gpuml's init is split out (a 1-iteration fit less
one Lloyd iteration). Then the detail: one initial-center array shared by all three, max_iter
iterations with tol=0; a table of per-iteration times, the ratios against gpuml, and whether the
three inertias agree within 1e-3 (relative).

    GPUML_LIBRARY=build-cuda/libgpuml.so python3 benchmarks/compare.py --case small
    python3 benchmarks/compare.py --case large --json large.json
    python3 benchmarks/compare.py --n 20000 --k 16 --d 8     # no GPU needed: gpuml on the CPU

Cases: small = 1M x 64, k=256, 20 iterations (all three); large = 10M x 64, k=1024,
20 iterations (scikit-learn only with --with-sklearn: it takes minutes). --n/--d/--k/--iters
override a case. Timing: every implementation is warmed up first (one iteration); gpuml's
and scikit-learn's whole fits are timed and divided by n_iter_ ("fit/n_iter"), and the
marginal cost of one Lloyd iteration is (fit(max_iter) - fit(1)) / (max_iter - 1) ("per-iter"); the PyTorch loop is timed
between device synchronizations and divided by its iteration count. When PyTorch with CUDA is
present, gpuml gets X as a CUDA tensor (as PyTorch does), so neither pays for the
host-to-device copy of X inside the timed region.
"""

import argparse
import contextlib
import json
import os
import secrets
import sys
import time
import warnings

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "bindings", "python"))

CASES = {
    "small": dict(n=1_000_000, d=64, k=256, iters=20),
    "large": dict(n=10_000_000, d=64, k=1024, iters=20),
}
INERTIA_RTOL = 1e-3  # float32 data; the three sum distances in different orders and forms


def make_blobs(n, d, k, seed):
    """k Gaussian blobs (unit variance, centers uniform in [-10, 10]^d), float32, plus k
    distinct rows of X drawn at random as the shared initial centers."""
    rng = np.random.default_rng(seed)
    centers = rng.uniform(-10.0, 10.0, size=(k, d)).astype(np.float32)
    X = np.empty((n, d), dtype=np.float32)
    step = 1 << 20  # in slices, to bound the temporaries of the large case
    for s in range(0, n, step):
        e = min(n, s + step)
        X[s:e] = centers[rng.integers(0, k, e - s)] + rng.standard_normal((e - s, d), dtype=np.float32)
    init = X[rng.choice(n, size=k, replace=False)].copy()
    return X, init


def load_torch():
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    # Exact float32 matrix products, as gpuml and scikit-learn compute.
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    return torch


@contextlib.contextmanager
def quiet_short_fits():
    """The timing fits stop after max_iter (1, or the case's) on purpose: their ConvergenceWarnings
    (gpuml's and scikit-learn's alike) say nothing here."""
    from sklearn.exceptions import ConvergenceWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        yield


def time_gpuml(X, init, iters, device):
    from gpuml.cluster import KMeans

    def fit(max_iter):
        model = KMeans(n_clusters=init.shape[0], init=init, n_init=1, max_iter=max_iter, tol=0, device=device)
        with quiet_short_fits():
            start = time.perf_counter()
            model.fit(X)  # synchronous: the fitted attributes are read back to the host
            seconds = time.perf_counter() - start
        return model, seconds

    fit(1)  # warm-up: library load, context, cuBLAS handle, memory pool
    _, one = fit(1)
    model, seconds = fit(iters)
    return dict(seconds=seconds, seconds_1=one, n_iter=int(model.n_iter_), inertia=float(model.inertia_))


def time_gpuml_default(X, k, device, lloyd_seconds, extra=None):
    """The user's call: KMeans(k, random_state=0).fit(X), defaults otherwise (plus `extra`).
    The init's share: a max_iter=1 fit less one Lloyd iteration (lloyd_seconds)."""
    from gpuml.cluster import KMeans

    def fit(**params):
        model = KMeans(n_clusters=k, random_state=0, device=device, **(extra or {}), **params)
        with quiet_short_fits():
            start = time.perf_counter()
            model.fit(X)
            seconds = time.perf_counter() - start
        return model, seconds

    model, seconds = fit()
    _, one = fit(max_iter=1)
    return dict(seconds=seconds, init_seconds=max(one - lloyd_seconds, 0.0), n_iter=int(model.n_iter_),
                inertia=float(model.inertia_))


def time_sklearn_default(X, k):
    from sklearn.cluster import KMeans

    model = KMeans(n_clusters=k, random_state=0)
    start = time.perf_counter()
    model.fit(X)
    return dict(seconds=time.perf_counter() - start, n_iter=int(model.n_iter_), inertia=float(model.inertia_))


def torch_kmeans_plus_plus(torch, X, k, generator):
    """k-means++ as a PyTorch user writes it: each new center drawn with probability
    proportional to D^2 (one draw per center, not scikit-learn's greedy best of 2 + ln k)."""
    n = X.shape[0]
    first = torch.randint(n, (1,), device=X.device, generator=generator)
    centers = [X[first]]
    closest = ((X - X[first]) ** 2).sum(dim=1)
    for _ in range(1, k):
        pick = torch.multinomial(closest, 1, generator=generator)
        centers.append(X[pick])
        closest = torch.minimum(closest, ((X - X[pick]) ** 2).sum(dim=1))
    return torch.cat(centers)


def time_torch_default(torch, X_dev, k, tol=1e-4, max_iter=300):
    """The PyTorch user's whole k-means: k-means++, then Lloyd until the squared center shift is
    at most tol times the mean feature variance (scikit-learn's rule) or max_iter."""
    generator = torch.Generator(device=X_dev.device).manual_seed(0)
    torch.cuda.synchronize()
    start = time.perf_counter()
    C = torch_kmeans_plus_plus(torch, X_dev, k, generator)
    torch.cuda.synchronize()
    init_seconds = time.perf_counter() - start
    threshold = tol * float(X_dev.var(dim=0).mean())
    n_iter, inertia = torch_lloyd(torch, X_dev, C, max_iter, shift_threshold=threshold)
    torch.cuda.synchronize()
    return dict(seconds=time.perf_counter() - start, init_seconds=init_seconds, n_iter=n_iter, inertia=inertia)


def time_sklearn(X, init, iters):
    from sklearn.cluster import KMeans

    def fit(max_iter):
        model = KMeans(n_clusters=init.shape[0], init=init, n_init=1, max_iter=max_iter, tol=0, algorithm="lloyd")
        with quiet_short_fits():
            start = time.perf_counter()
            model.fit(X)
            seconds = time.perf_counter() - start
        return model, seconds

    fit(1)  # warm-up
    _, one = fit(1)
    model, seconds = fit(iters)
    return dict(seconds=seconds, seconds_1=one, n_iter=int(model.n_iter_), inertia=float(model.inertia_))


def torch_lloyd(torch, X, init, iters, shift_threshold=None):
    """Lloyd's algorithm in plain PyTorch: expanded distances by row chunks (|x|^2 - 2 x.c +
    |c|^2, argmin), index_add_ for the sums, bincount for the counts, and scikit-learn's
    relocation of empty clusters (the farthest rows become their centers). With
    shift_threshold, stops once the squared center shift is at most it. Returns (iterations
    run, inertia of the final centers)."""
    n, d = X.shape
    k = init.shape[0]
    C = init.clone()
    x_sq = (X * X).sum(dim=1)
    labels = torch.empty(n, dtype=torch.int64, device=X.device)
    best = torch.empty(n, dtype=X.dtype, device=X.device)
    chunk = max(1, (1 << 28) // k)  # a 1 GiB distance block at most

    def assign():
        c_sq = (C * C).sum(dim=1)
        for s in range(0, n, chunk):
            e = min(n, s + chunk)
            dist = torch.addmm(c_sq.unsqueeze(0), X[s:e], C.t(), beta=1.0, alpha=-2.0)
            values, idx = dist.min(dim=1)
            labels[s:e] = idx
            best[s:e] = values + x_sq[s:e]

    n_iter = 0
    for _ in range(iters):
        n_iter += 1
        assign()
        sums = torch.zeros((k, d), dtype=X.dtype, device=X.device).index_add_(0, labels, X)
        counts = torch.bincount(labels, minlength=k).to(X.dtype)
        empty = (counts == 0).nonzero().flatten()
        if empty.numel() > 0:
            far = torch.topk(best, empty.numel()).indices
            sums.index_add_(0, labels[far], -X[far])
            counts.index_add_(0, labels[far], -torch.ones_like(far, dtype=X.dtype))
            sums[empty] = X[far]
            counts[empty] = 1
        nonempty = counts > 0
        previous = C.clone() if shift_threshold is not None else None
        C[nonempty] = sums[nonempty] / counts[nonempty].unsqueeze(1)
        if shift_threshold is not None and float(((C - previous) ** 2).sum()) <= shift_threshold:
            break
    assign()
    return n_iter, float(best.clamp_min(0).double().sum())


def time_torch(torch, X_dev, init, iters):
    init_dev = torch.from_numpy(init).cuda()
    torch_lloyd(torch, X_dev, init_dev, 1)  # warm-up
    torch.cuda.synchronize()
    start = time.perf_counter()
    torch_lloyd(torch, X_dev, init_dev, 1)
    torch.cuda.synchronize()
    one = time.perf_counter() - start
    start = time.perf_counter()
    n_iter, inertia = torch_lloyd(torch, X_dev, init_dev, iters)
    torch.cuda.synchronize()
    return dict(seconds=time.perf_counter() - start, seconds_1=one, n_iter=n_iter, inertia=inertia)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--case", choices=sorted(CASES), default="small")
    parser.add_argument("--n", type=int)
    parser.add_argument("--d", type=int)
    parser.add_argument("--k", type=int)
    parser.add_argument("--iters", type=int, help="max_iter (default: the case's)")
    parser.add_argument("--seed", type=int, help="data seed (default: a fresh one, printed)")
    parser.add_argument("--device", help='gpuml device (default: "cuda" when gpuml sees a GPU, else "cpu")')
    parser.add_argument("--with-sklearn", action="store_true", help="also run scikit-learn in the large case")
    parser.add_argument("--no-sklearn", action="store_true")
    parser.add_argument("--no-torch", action="store_true")
    parser.add_argument("--json", metavar="PATH", help="write the results as JSON")
    parser.add_argument("--parallel-init", action="store_true", help='also time the user\'s call with init="k-means||"')
    args = parser.parse_args()

    import gpuml

    config = dict(CASES[args.case])
    for key in ("n", "d", "k", "iters"):
        if getattr(args, key) is not None:
            config[key] = getattr(args, key)
    n, d, k, iters = config["n"], config["d"], config["k"], config["iters"]
    seed = args.seed if args.seed is not None else secrets.randbits(32)
    device = args.device or ("cuda" if gpuml.cuda_device_count() > 0 else "cpu")
    torch = None if args.no_torch else load_torch()
    run_sklearn = not args.no_sklearn and (args.case != "large" or args.with_sklearn or args.n is not None)

    print(f"case={args.case} n={n} d={d} k={k} max_iter={iters} tol=0 float32 seed={seed}")
    print(f"gpuml {gpuml.library_version} from {gpuml.library_path}, device={device}")
    X, init = make_blobs(n, d, k, seed)

    results = {}
    X_for_gpuml = X
    X_dev = None
    if torch is not None:
        X_dev = torch.from_numpy(X).cuda()
        if device.startswith("cuda"):
            X_for_gpuml = X_dev  # zero-copy device input
    results["gpuml"] = time_gpuml(X_for_gpuml, init, iters, device)
    if run_sklearn:
        import sklearn
        from threadpoolctl import threadpool_info

        threads = max((p.get("num_threads", 1) for p in threadpool_info()), default=1)
        print(f"scikit-learn {sklearn.__version__} ({threads} threads)")
        results["sklearn"] = time_sklearn(X, init, iters)
    if torch is not None:
        print(f"torch {torch.__version__} on {torch.cuda.get_device_name()}")
        results["torch"] = time_torch(torch, X_dev, init, iters)

    # The user's path (printed first): the default call, timed whole, after the detail's warm-up.
    lloyd_seconds = max(results["gpuml"]["seconds"] - results["gpuml"]["seconds_1"], 0.0) / max(
        1, results["gpuml"]["n_iter"] - 1)
    user = {"gpuml": time_gpuml_default(X_for_gpuml, k, device, lloyd_seconds)}
    if X_for_gpuml is not X:  # the same call on the NumPy array: the copy to the device inside the timing
        user["gpuml, NumPy X"] = time_gpuml_default(X, k, device, lloyd_seconds)
    if args.parallel_init:
        user['gpuml k-means||'] = time_gpuml_default(X_for_gpuml, k, device, lloyd_seconds, {"init": "k-means||"})
    if run_sklearn:
        user["sklearn"] = time_sklearn_default(X, k)
    if torch is not None:
        user["torch"] = time_torch_default(torch, X_dev, k)
    print()
    print(f"user's path: KMeans(n_clusters={k}, random_state=0).fit(X), other parameters at their defaults")
    print(f"{'':16} {'fit s':>9} {'init s':>9} {'n_iter':>6} {'inertia':>14} {'vs gpuml (fit)':>15}")
    for name, r in user.items():
        ratio = r["seconds"] / user["gpuml"]["seconds"]
        label = "" if name == "gpuml" else f"{ratio:.1f}x slower" if ratio >= 1 else f"{1 / ratio:.1f}x faster"
        init = f"{r['init_seconds']:>9.3f}" if "init_seconds" in r else f"{'':>9}"
        print(f"{name:16} {r['seconds']:>9.3f} {init} {r['n_iter']:>6} {r['inertia']:>14.6g} {label:>15}")
    print("(gpuml's init: a max_iter=1 fit less one Lloyd iteration; torch's: its k-means++ alone)")
    print()
    print(f"detail: Lloyd iterations from shared initial centers, max_iter={iters}, tol=0")

    for r in results.values():
        # fit / n_iter carries the fixed costs (checks, the final assignment, copies back); the
        # marginal cost of one Lloyd iteration is the difference between a long and a 1-iteration fit.
        r["ms_per_iter"] = 1e3 * r["seconds"] / max(1, r["n_iter"])
        r["ms_per_lloyd_iter"] = 1e3 * (r["seconds"] - r["seconds_1"]) / max(1, r["n_iter"] - 1)
    base = results["gpuml"]
    print()
    print(f"{'':10} {'n_iter':>6} {'fit s':>9} {'fit/n_iter ms':>14} {'per-iter ms':>12} {'inertia':>14} {'vs gpuml (fit)':>15}")
    for name, r in results.items():
        ratio = r["ms_per_iter"] / base["ms_per_iter"]
        label = "" if name == "gpuml" else f"{ratio:.1f}x slower" if ratio >= 1 else f"{1 / ratio:.1f}x faster"
        print(f"{name:10} {r['n_iter']:>6} {r['seconds']:>9.3f} {r['ms_per_iter']:>14.2f} {r['ms_per_lloyd_iter']:>12.2f} "
              f"{r['inertia']:>14.6g} {label:>15}")
        r["gpuml_speedup"] = ratio

    inertias = {name: r["inertia"] for name, r in results.items()}
    ref = base["inertia"]
    worst = max(abs(v - ref) / abs(ref) for v in inertias.values()) if ref else 0.0
    agree = worst <= INERTIA_RTOL
    print()
    print(
        f"inertia agreement ({', '.join(inertias)}): max relative difference {worst:.2e} "
        f"{'<=' if agree else '>'} {INERTIA_RTOL:g}: {'OK' if agree else 'MISMATCH'}"
    )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(
                dict(case=args.case, n=n, d=d, k=k, max_iter=iters, seed=seed, device=device, results=results, user_path=user,
                     inertia_max_rel_diff=worst, inertia_agree=agree),
                f,
                indent=2,
            )
    return 0 if agree else 1


if __name__ == "__main__":
    sys.exit(main())

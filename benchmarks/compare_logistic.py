#!/usr/bin/env python3
"""Binary L2 logistic regression fit time: gpuml against scikit-learn and plain PyTorch.

One run, one data set: float32 X ~ N(0, 1) (n x d), y = (X beta + noise > 0) with beta random
and unit noise, so the classes overlap (not separable). All fit an intercept and minimize the
same objective, mean log-loss + |coef|^2 / (2 C n), from zero, with the same tol and max_iter.
Fits, each warmed up once and then timed --repeats times (the best time is reported):

  gpuml (cuda)     LogisticRegression(device="cuda"), X and y already on the GPU (torch tensors)
  gpuml (cpu)      LogisticRegression(device="cpu")          (--gpuml-cpu, or when there is no GPU)
  scikit-learn     LogisticRegression(solver="lbfgs")
  torch L-BFGS     torch.optim.LBFGS(line_search_fn="strong_wolfe", tolerance_grad=tol), full batch,
                   float32, on the GPU (skipped when PyTorch with CUDA is missing)

Prints a table of fit times, ratios against gpuml, iterations, the objective of each solution
(recomputed the same way, in float64, for all), training accuracy, and the coefficient
difference max|coef - coef_ref| / max|coef_ref| against scikit-learn (or gpuml without it).

    GPUML_LIBRARY=build-cuda/libgpuml.so python3 benchmarks/compare_logistic.py    # 1M x 64
    python3 benchmarks/compare_logistic.py --n 20000                               # no GPU needed
"""

import argparse
import json
import os
import secrets
import sys
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "bindings", "python"))

# float32 data, tol=1e-4 on the gradient: the solutions agree to ~1e-4 / curvature; 1e-2 of the
# largest coefficient is a generous "same answer" bound for a report line, not a test.
COEF_RTOL = 1e-2


def make_problem(n, d, seed):
    """X (n x d float32, standard normal) and y (n, float32 0/1) = (X beta + noise > 0)."""
    rng = np.random.default_rng(seed)
    beta = rng.normal(size=d) * (2.0 / np.sqrt(d))  # |X beta| ~ 2 noise scales: overlapping classes
    X = np.empty((n, d), dtype=np.float32)
    y = np.empty(n, dtype=np.float32)
    step = 1 << 18  # in slices, to bound the float64 temporaries
    for s in range(0, n, step):
        e = min(n, s + step)
        X[s:e] = rng.standard_normal((e - s, d), dtype=np.float32)
        y[s:e] = (X[s:e] @ beta + rng.standard_normal(e - s) > 0).astype(np.float32)
    return X, y


def objective(X, y, coef, intercept, C):
    """mean log-loss + |coef|^2 / (2 C n), in float64 (in slices of X)."""
    coef = np.asarray(coef, dtype=np.float64).ravel()
    intercept = float(np.asarray(intercept, dtype=np.float64).ravel()[0])
    n = X.shape[0]
    total = 0.0
    step = 1 << 18
    for s in range(0, n, step):
        z = X[s:s + step].astype(np.float64) @ coef + intercept
        total += float(np.sum(np.logaddexp(0.0, z) - y[s:s + step] * z))
    return total / n + coef @ coef / (2.0 * C * n)


def accuracy(X, y, coef, intercept):
    coef = np.asarray(coef, dtype=np.float64).ravel()
    intercept = float(np.asarray(intercept, dtype=np.float64).ravel()[0])
    return float(np.mean(((X @ coef + intercept) > 0) == (y > 0.5)))


def load_torch():
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    torch.backends.cuda.matmul.allow_tf32 = False  # exact float32 products, as gpuml computes
    return torch


def best_time(fit, repeats, sync=None):
    """Warm-up once, then the best of `repeats` timed calls; returns (seconds, last result)."""
    fit()
    if sync:
        sync()
    best, result = float("inf"), None
    for _ in range(repeats):
        start = time.perf_counter()
        result = fit()
        if sync:
            sync()
        best = min(best, time.perf_counter() - start)
    return best, result


def time_gpuml(X, y, device, args):
    import warnings

    from sklearn.exceptions import ConvergenceWarning

    from gpuml.linear_model import LogisticRegression

    def fit():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)  # reported through n_iter
            return LogisticRegression(C=args.C, tol=args.tol, max_iter=args.max_iter, device=device).fit(X, y)

    # fit is synchronous: the fitted attributes are read back to the host.
    seconds, model = best_time(fit, args.repeats)
    return dict(seconds=seconds, coef=model.coef_.ravel(), intercept=model.intercept_, n_iter=int(model.n_iter_[0]))


def time_sklearn(X, y, args):
    import warnings

    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import LogisticRegression

    def fit():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            return LogisticRegression(C=args.C, tol=args.tol, max_iter=args.max_iter, solver="lbfgs").fit(X, y)

    seconds, model = best_time(fit, args.repeats)
    return dict(seconds=seconds, coef=model.coef_.ravel(), intercept=model.intercept_, n_iter=int(model.n_iter_[0]))


def time_torch(torch, X, y, args):
    """Full-batch L-BFGS on the GPU in float32, on the same objective."""
    n, d = X.shape
    strength = 1.0 / (2.0 * args.C * n)

    def fit():
        w = torch.zeros(d, dtype=X.dtype, device=X.device, requires_grad=True)
        b = torch.zeros(1, dtype=X.dtype, device=X.device, requires_grad=True)
        optimizer = torch.optim.LBFGS(
            [w, b], lr=1.0, max_iter=args.max_iter, tolerance_grad=args.tol, history_size=10,
            line_search_fn="strong_wolfe",
        )

        def closure():
            optimizer.zero_grad()
            loss = torch.nn.functional.binary_cross_entropy_with_logits(X @ w + b, y) + strength * (w @ w)
            loss.backward()
            return loss

        optimizer.step(closure)
        n_iter = optimizer.state[optimizer.param_groups[0]["params"][0]]["n_iter"]
        return w.detach(), b.detach(), n_iter

    seconds, (w, b, n_iter) = best_time(fit, args.repeats, sync=torch.cuda.synchronize)
    return dict(seconds=seconds, coef=w.cpu().numpy(), intercept=b.cpu().numpy(), n_iter=int(n_iter))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--d", type=int, default=64)
    parser.add_argument("--C", type=float, default=1.0)
    parser.add_argument("--tol", type=float, default=1e-4)
    parser.add_argument("--max-iter", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3, help="timed fits per implementation (best reported)")
    parser.add_argument("--seed", type=int, help="data seed (default: a fresh one, printed)")
    parser.add_argument("--device", help='gpuml device (default: "cuda" when gpuml sees a GPU, else "cpu")')
    parser.add_argument("--gpuml-cpu", action="store_true", help='also time gpuml on device="cpu"')
    parser.add_argument("--no-sklearn", action="store_true")
    parser.add_argument("--no-torch", action="store_true")
    parser.add_argument("--json", metavar="PATH", help="write the results as JSON")
    args = parser.parse_args()

    import gpuml

    n, d = args.n, args.d
    seed = args.seed if args.seed is not None else secrets.randbits(32)
    device = args.device or ("cuda" if gpuml.cuda_device_count() > 0 else "cpu")
    torch = None
    if not args.no_torch:
        torch = load_torch()
        if torch is None:
            print("torch L-BFGS skipped: PyTorch with CUDA is not available")

    print(f"n={n} d={d} float32 binary L2 C={args.C} tol={args.tol} max_iter={args.max_iter} seed={seed} "
          f"repeats={args.repeats}")
    print(f"gpuml {gpuml.library_version} from {gpuml.library_path}, device={device}")
    X, y = make_problem(n, d, seed)

    results = {}
    X_dev = y_dev = None
    if torch is not None:
        X_dev = torch.from_numpy(X).cuda()
        y_dev = torch.from_numpy(y).cuda()
    on_gpu = device.startswith("cuda")
    gpuml_name = f"gpuml ({device})"
    # X already on the device when it runs on one (zero-copy torch input), as PyTorch has it.
    X_in, y_in = (X_dev, y_dev) if on_gpu and X_dev is not None else (X, y)
    results[gpuml_name] = time_gpuml(X_in, y_in, device, args)
    if args.gpuml_cpu and device != "cpu":
        results["gpuml (cpu)"] = time_gpuml(X, y, "cpu", args)
    if not args.no_sklearn:
        import sklearn
        from threadpoolctl import threadpool_info

        threads = max((p.get("num_threads", 1) for p in threadpool_info()), default=1)
        print(f"scikit-learn {sklearn.__version__} (BLAS/OpenMP threads: {threads}, of {os.cpu_count()} CPUs)")
        results["sklearn lbfgs"] = time_sklearn(X, y, args)
    if torch is not None:
        print(f"torch {torch.__version__} on {torch.cuda.get_device_name()}")
        results["torch L-BFGS"] = time_torch(torch, X_dev, y_dev, args)

    reference = "sklearn lbfgs" if "sklearn lbfgs" in results else gpuml_name
    ref_coef = np.asarray(results[reference]["coef"], dtype=np.float64)
    base = results[gpuml_name]["seconds"]
    print()
    print(f"{'':16} {'fit ms':>10} {'vs gpuml':>14} {'n_iter':>7} {'objective':>16} {'accuracy':>9} {'coef diff':>10}")
    worst = 0.0
    for name, r in results.items():
        r["objective"] = objective(X, y, r["coef"], r["intercept"], args.C)
        r["accuracy"] = accuracy(X, y, r["coef"], r["intercept"])
        diff = np.max(np.abs(np.asarray(r["coef"], dtype=np.float64) - ref_coef)) / np.max(np.abs(ref_coef))
        r["coef_diff"] = float(diff)
        worst = max(worst, r["coef_diff"])
        ratio = r["seconds"] / base
        label = "" if name == gpuml_name else f"{ratio:.1f}x slower" if ratio >= 1 else f"{1 / ratio:.1f}x faster"
        print(f"{name:16} {1e3 * r['seconds']:>10.2f} {label:>14} {r['n_iter']:>7} {r['objective']:>16.10f} "
              f"{r['accuracy']:>9.5f} {r['coef_diff']:>10.2e}")

    agree = worst <= COEF_RTOL
    print()
    print(f"coefficient agreement (against {reference}): max |coef - coef_ref| / max |coef_ref| = {worst:.2e} "
          f"{'<=' if agree else '>'} {COEF_RTOL:g}: {'OK' if agree else 'MISMATCH'}")
    if args.json:
        for r in results.values():
            r["coef"] = np.asarray(r["coef"], dtype=np.float64).tolist()
            r["intercept"] = np.asarray(r["intercept"], dtype=np.float64).ravel().tolist()
        with open(args.json, "w") as f:
            json.dump(dict(n=n, d=d, C=args.C, tol=args.tol, max_iter=args.max_iter, seed=seed, device=device,
                           results=results, coef_max_rel_diff=worst, coef_agree=agree), f, indent=2)
    return 0 if agree else 1


if __name__ == "__main__":
    sys.exit(main())

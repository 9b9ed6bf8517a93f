#!/usr/bin/env python3
"""OLS and ridge fit time: gpuml against scikit-learn and plain PyTorch.

One run, one data set (float32, y = X w + 3 + noise, the seed printed). Fits, each warmed up
once and then timed --repeats times (the best time is reported; scikit-learn at most 3 times):

  OLS    gpuml LinearRegression(algorithm="eig")   normal equations
         gpuml LinearRegression(algorithm="qr")    Householder QR
         scikit-learn LinearRegression             scipy lstsq
         torch normal equations                    X^T X, torch.linalg.solve
         torch lstsq                               torch.linalg.lstsq (QR, "gels" on CUDA)
  ridge  gpuml Ridge(alpha)                        (X^T X + alpha I), Cholesky
         scikit-learn Ridge(alpha)
         torch ridge                               torch.linalg.solve(X^T X + alpha I, X^T y)

All fit an intercept (centering first). Prints a table of times and the ratios against gpuml
(eig for OLS, Ridge for ridge), and whether every implementation's coefficients (coef_ and
intercept_ together) agree with the reference (scikit-learn when it runs, else gpuml eig /
gpuml Ridge) within a relative 1e-3 in the 2-norm.

    GPUML_LIBRARY=build-cuda/libgpuml.so python3 benchmarks/compare_linear.py      # 1M x 256
    python3 benchmarks/compare_linear.py --n 20000 --d 32                            # no GPU needed

When PyTorch with CUDA is present, gpuml gets X and y as CUDA tensors (as PyTorch does), so
neither pays for the host-to-device copy inside the timed region. Speed target: gpuml OLS
("eig") on 1M x 256 float32 in <= 3.5 ms on an H100/H200.
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

COEF_RTOL = 1e-3  # float32 data, well-conditioned X; the implementations sum in different orders and forms
TARGET_MS = 3.5   # OLS 1M x 256 float32 normal equations on an H100/H200


def make_problem(n, d, seed):
    """Standard normal X (n x d, float32), true coefficients uniform in [-1, 1], intercept 3,
    noise 0.1."""
    rng = np.random.default_rng(seed)
    w = rng.uniform(-1.0, 1.0, size=d)
    X = np.empty((n, d), dtype=np.float32)
    y = np.empty(n, dtype=np.float32)
    step = 1 << 18  # in slices, to bound the float64 temporaries
    for s in range(0, n, step):
        e = min(n, s + step)
        X[s:e] = rng.standard_normal((e - s, d), dtype=np.float32)
        y[s:e] = X[s:e] @ w + 3.0 + 0.1 * rng.standard_normal(e - s)
    return X, y


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


def coefficients(coef, intercept):
    """coef_ and intercept_ as one float64 vector (host)."""
    return np.concatenate([np.asarray(coef, dtype=np.float64).ravel(), np.atleast_1d(np.asarray(intercept, dtype=np.float64))])


def time_gpuml(X, y, device, alpha, repeats):
    from gpuml.linear_model import LinearRegression, Ridge

    out = {}
    for name, make in (
        ("gpuml eig", lambda: LinearRegression(algorithm="eig", device=device)),
        ("gpuml qr", lambda: LinearRegression(algorithm="qr", device=device)),
        ("gpuml ridge", lambda: Ridge(alpha=alpha, device=device)),
    ):
        # fit is synchronous: the fitted attributes are read back to the host.
        seconds, model = best_time(lambda: make().fit(X, y), repeats)
        out[name] = dict(seconds=seconds, coef=coefficients(model.coef_, model.intercept_))
    return out


def time_sklearn(X, y, alpha, repeats):
    from sklearn.linear_model import LinearRegression, Ridge

    out = {}
    for name, make in (("sklearn ols", LinearRegression), ("sklearn ridge", lambda: Ridge(alpha=alpha))):
        seconds, model = best_time(lambda: make().fit(X, y), repeats)
        out[name] = dict(seconds=seconds, coef=coefficients(model.coef_, model.intercept_))
    return out


def time_torch(torch, X, y, alpha, repeats):
    """Plain PyTorch on the GPU: center, then the normal equations (solve), lstsq, or ridge."""

    def centered():
        x_mean = X.mean(dim=0)
        y_mean = y.mean()
        return X - x_mean, y - y_mean, x_mean, y_mean

    def normal_equations(penalty):
        Xc, yc, x_mean, y_mean = centered()
        G = Xc.T @ Xc
        if penalty:
            G = G + penalty * torch.eye(G.shape[0], dtype=G.dtype, device=G.device)
        coef = torch.linalg.solve(G, Xc.T @ yc)
        return coef, y_mean - x_mean @ coef

    def lstsq():
        Xc, yc, x_mean, y_mean = centered()
        coef = torch.linalg.lstsq(Xc, yc.unsqueeze(1)).solution.squeeze(1)
        return coef, y_mean - x_mean @ coef

    out = {}
    for name, fit in (
        ("torch solve", lambda: normal_equations(0.0)),
        ("torch lstsq", lstsq),
        ("torch ridge", lambda: normal_equations(alpha)),
    ):
        seconds, (coef, intercept) = best_time(fit, repeats, sync=torch.cuda.synchronize)
        out[name] = dict(seconds=seconds, coef=coefficients(coef.cpu().numpy(), intercept.cpu().numpy()))
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--d", type=int, default=256)
    parser.add_argument("--alpha", type=float, default=1.0, help="ridge penalty (default 1.0)")
    # 3 GPU repeats left about 0.1 ms of noise in the best of ~3.5 ms fits; scikit-learn's
    # multi-second fits are repeated at most 3 times.
    parser.add_argument("--repeats", type=int, default=10, help="timed fits per implementation (best reported)")
    parser.add_argument("--seed", type=int, help="data seed (default: a fresh one, printed)")
    parser.add_argument("--device", help='gpuml device (default: "cuda" when gpuml sees a GPU, else "cpu")')
    parser.add_argument("--no-sklearn", action="store_true")
    parser.add_argument("--no-torch", action="store_true")
    parser.add_argument("--json", metavar="PATH", help="write the results as JSON")
    args = parser.parse_args()

    import gpuml

    n, d = args.n, args.d
    seed = args.seed if args.seed is not None else secrets.randbits(32)
    device = args.device or ("cuda" if gpuml.cuda_device_count() > 0 else "cpu")
    torch = None if args.no_torch else load_torch()

    print(f"n={n} d={d} alpha={args.alpha} float32 fit_intercept=True seed={seed} repeats={args.repeats}")
    print(f"gpuml {gpuml.library_version} from {gpuml.library_path}, device={device}")
    X, y = make_problem(n, d, seed)

    results = {}
    X_for_gpuml, y_for_gpuml = X, y
    X_dev = y_dev = None
    if torch is not None:
        X_dev = torch.from_numpy(X).cuda()
        y_dev = torch.from_numpy(y).cuda()
        if device.startswith("cuda"):
            X_for_gpuml, y_for_gpuml = X_dev, y_dev  # zero-copy device input
    results.update(time_gpuml(X_for_gpuml, y_for_gpuml, device, args.alpha, args.repeats))
    if not args.no_sklearn:
        import sklearn
        from threadpoolctl import threadpool_info

        threads = max((p.get("num_threads", 1) for p in threadpool_info()), default=1)
        print(f"scikit-learn {sklearn.__version__} ({threads} threads)")
        results.update(time_sklearn(X, y, args.alpha, min(args.repeats, 3)))
    if torch is not None:
        print(f"torch {torch.__version__} on {torch.cuda.get_device_name()}")
        results.update(time_torch(torch, X_dev, y_dev, args.alpha, args.repeats))

    def problem_of(name):
        return "ridge" if name.endswith("ridge") else "ols"

    base = {"ols": results["gpuml eig"], "ridge": results["gpuml ridge"]}
    reference = {
        "ols": "sklearn ols" if "sklearn ols" in results else "gpuml eig",
        "ridge": "sklearn ridge" if "sklearn ridge" in results else "gpuml ridge",
    }
    print()
    print(f"{'':14} {'problem':>7} {'fit ms':>10} {'vs gpuml':>14} {'rel. diff':>10}")
    worst = 0.0
    for name, r in results.items():
        problem = problem_of(name)
        ratio = r["seconds"] / base[problem]["seconds"]
        ref = results[reference[problem]]["coef"]
        r["rel_diff"] = float(np.linalg.norm(r["coef"] - ref) / np.linalg.norm(ref))
        worst = max(worst, r["rel_diff"])
        r["gpuml_speedup"] = ratio
        label = "" if name in ("gpuml eig", "gpuml ridge") else f"{ratio:.1f}x slower" if ratio >= 1 else f"{1 / ratio:.1f}x faster"
        print(f"{name:14} {problem:>7} {1e3 * r['seconds']:>10.3f} {label:>14} {r['rel_diff']:>10.2e}")

    agree = worst <= COEF_RTOL
    print()
    print(
        f"coefficient agreement (against {reference['ols']} / {reference['ridge']}): max relative difference "
        f"{worst:.2e} {'<=' if agree else '>'} {COEF_RTOL:g}: {'OK' if agree else 'MISMATCH'}"
    )
    if device.startswith("cuda") and (n, d) == (1_000_000, 256):
        ms = 1e3 * results["gpuml eig"]["seconds"]
        print(f"speed target: gpuml eig {ms:.3f} ms {'<=' if ms <= TARGET_MS else '>'} {TARGET_MS} ms: "
              f"{'MET' if ms <= TARGET_MS else 'MISSED'}")
    if args.json:
        for r in results.values():
            r["coef"] = r["coef"].tolist()
        with open(args.json, "w") as f:
            json.dump(dict(n=n, d=d, alpha=args.alpha, seed=seed, device=device, results=results,
                           coef_max_rel_diff=worst, coef_agree=agree), f, indent=2)
    return 0 if agree else 1


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Where the Gram-route fits spend their time, on a GPU: per-phase traces (GPUML_TRACE=1 marks,
printed by the library to stderr) and wall times of LinearRegression("eig"), Ridge and
PCA(covariance_eigh) fits on device arrays, best of --repeats after a warm-up.

    GPUML_LIBRARY=build-gpu/libgpuml.so python3 benchmarks/trace_fits.py            # times only
    GPUML_TRACE=1 GPUML_LIBRARY=... python3 benchmarks/trace_fits.py --repeats 2    # with phases
    ncu --profile-from-start off ... python3 benchmarks/trace_fits.py --profile     # kernels of one fit each

With --profile, the CUDA profiler is started around one fit of each kind (after the warm-up), so
`ncu --profile-from-start off` sees only the kernels of those fits.
"""
import argparse
import os
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "bindings", "python"))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--cprofile", action="store_true", help="the Python side of 200 small fits (cProfile)")
    args = parser.parse_args()
    import torch
    from gpuml.decomposition import PCA
    from gpuml.linear_model import LinearRegression, Ridge

    gen = torch.Generator(device="cuda").manual_seed(int.from_bytes(os.urandom(4), "little"))
    cases = []
    for n, d in ((1_000_000, 256), (4096, 256)):
        X = torch.randn(n, d, device="cuda", generator=gen)
        y = X @ torch.rand(d, device="cuda", generator=gen) + 3 + 0.1 * torch.randn(n, device="cuda", generator=gen)
        cases.append((f"OLS eig {n}x{d}", lambda X=X, y=y: LinearRegression(algorithm="eig", device="cuda").fit(X, y)))
        cases.append((f"Ridge {n}x{d}", lambda X=X, y=y: Ridge(alpha=1.0, device="cuda").fit(X, y)))
    Xp = torch.randn(1_000_000, 128, device="cuda", generator=gen) + 1e4
    cases.append(("PCA covariance_eigh 1Mx128->16",
                  lambda: PCA(n_components=16, svd_solver="covariance_eigh", device="cuda").fit(Xp)))
    torch.cuda.synchronize()
    if args.cprofile:
        import cProfile
        import pstats
        fit = cases[2][1]  # OLS eig 4096 x 256: little device work, so the Python side shows
        fit()
        profiler = cProfile.Profile()
        profiler.enable()
        for _ in range(200):
            fit()
        profiler.disable()
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(25)
        return
    for name, fit in cases:
        fit()
        torch.cuda.synchronize()
        if args.profile:
            torch.cuda.cudart().cudaProfilerStart()
            fit()
            torch.cuda.synchronize()
            torch.cuda.cudart().cudaProfilerStop()
            continue
        best = float("inf")
        for _ in range(args.repeats):
            print(f"-- {name}", file=sys.stderr, flush=True)
            t0 = time.perf_counter()
            fit()
            torch.cuda.synchronize()
            best = min(best, time.perf_counter() - t0)
        print(f"{name:36s} best of {args.repeats}: {best * 1e3:8.3f} ms", flush=True)


if __name__ == "__main__":
    main()

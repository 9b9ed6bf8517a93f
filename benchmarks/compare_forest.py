#!/usr/bin/env python3
"""Random forests at scikit-learn's default depth and at depth 12: gpuml against scikit-learn, same data, one run.

Data (issue 26): float32 X from scikit-learn's generators, random_state=0; one draw of --rows
training rows (default 500k) and --test-rows held-out rows (default 100k), --features columns (32):
  classifier  make_classification(n_informative=16, n_classes=4)   RandomForestClassifier
  regressor   make_regression()                                    RandomForestRegressor
--case picks one, or both (default classifier; --regression is --case regressor).

First, the user's path: Forest(random_state=0).fit(X, y) with every other parameter at its default
(n_estimators=100, max_depth=None: the trees grow until their leaves are pure), the whole call
timed, then model.predict on --predict-rows rows (default 1M: the held-out rows repeated), whole:
  gpuml (X NumPy)       device="auto": on the GPU when there is one (X is copied up inside the call)
  gpuml (X torch)       X and y as CUDA tensors (when PyTorch with CUDA is present)
  gpuml cpu             device="cpu", all cores (fit only)
  scikit-learn          n_jobs=-1 (its default, one core, would take far longer)
with the held-out accuracy (classifier) or R² (regressor), the node count and the deepest leaf.

Then the detail per max_depth (--depths, default "12,None"; the None rows are the user's path's
fits, not fitted again): fit (gpuml's GPU fit best of --fit-repeats after a warm-up, once when a
fit takes over --long-fit seconds; the CPU backend and scikit-learn once), whether the GPU grew
the CPU backend's forest (every fitted array equal), predict_proba (classifier) or predict
(regressor) of --predict-rows rows with X already where the model predicts (a CUDA tensor; best
of --repeats), held-out scores, nodes, depth.

There is no plain-PyTorch random forest to compare with. Targets (one H100/H200; the depth-12
classifier at 500k x 32, 100 trees): fit <= 0.5 s, predict of 1M rows <= 20 ms. --trace fits
once more per case and depth in a child process with GPUML_TRACE=1 and prints its phases and,
for the GPU's level-by-level builder, its time per depth band with the live nodes and rows
(src/ensemble/levelwise.cpp; the CPU backend grows its trees depth first and prints the phases
only). scikit-learn's full-depth fit is slow (minutes for the regressor, whose default
max_features=1.0 searches every feature): --skip-sklearn-deep or --no-sklearn keeps a run within
a time budget, as do --rows and --trees.

    GPUML_LIBRARY=build-cuda/libgpuml.so python3 benchmarks/compare_forest.py --case both --trace
    GPUML_LIBRARY=build-cuda/libgpuml.so python3 benchmarks/compare_forest.py --regression --skip-sklearn-deep
    python3 benchmarks/compare_forest.py --case both --rows 20000 --test-rows 5000 --predict-rows 100000 --trees 10 --no-gpu
"""

import argparse
import os
import subprocess
import sys
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "bindings", "python"))

FIT_TARGET_S = 0.5
PREDICT_TARGET_S = 0.020
# The fitted arrays two forests must share to be the same forest.
FOREST_ARRAYS = (
    "estimator_node_offsets_",
    "nodes_feature_",
    "nodes_threshold_",
    "nodes_children_left_",
    "nodes_children_right_",
    "nodes_value_",
    "nodes_impurity_",
    "nodes_n_samples_",
    "nodes_weighted_n_samples_",
    "feature_importances_",
)


def make_data(case, rows, test_rows, d):
    """(X, y, X_test, y_test): one draw of rows + test_rows rows, X float32."""
    from sklearn.datasets import make_classification, make_regression

    n = rows + test_rows
    if case == "classifier":
        X, y = make_classification(n_samples=n, n_features=d, n_informative=min(16, d - 2), n_classes=4, random_state=0)
    else:
        X, y = make_regression(n_samples=n, n_features=d, random_state=0)
    X = np.ascontiguousarray(X, dtype=np.float32)
    return X[:rows], y[:rows], X[rows:], y[rows:]


def repeated(X, rows):
    """The rows of X repeated to `rows` rows (X's own first)."""
    return np.ascontiguousarray(np.resize(X, (rows, X.shape[1])))


def score(case, classes, y_true, out):
    """Accuracy of labels or of class probabilities (argmax), or R² of predictions: the first rows of out
    are the held-out rows' (fewer when fewer rows were predicted)."""
    out = np.asarray(out)[: len(y_true)]
    y_true = y_true[: len(out)]
    if case == "classifier":
        labels = classes[np.argmax(out, axis=1)] if out.ndim == 2 else out
        return float(np.mean(labels == y_true))
    out = out.astype(np.float64).ravel()
    return float(1.0 - np.sum((y_true - out) ** 2) / np.sum((y_true - y_true.mean()) ** 2))


def best_time(fn, repeats, long_s=float("inf")):
    """(best seconds, last result) of `repeats` calls; no more calls once one has taken long_s or more."""
    best, result = float("inf"), None
    for _ in range(max(1, repeats)):
        t = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - t)
        if best >= long_s:
            break
    return best, result


def gpuml_shape(model):
    """(nodes, deepest leaf) of a gpuml forest, from its flat node arrays (children numbered within each tree)."""
    offsets = np.asarray(model.estimator_node_offsets_, dtype=np.int64)
    left = np.asarray(model.nodes_children_left_, dtype=np.int64)
    right = np.asarray(model.nodes_children_right_, dtype=np.int64)
    frontier, base, depth = offsets[:-1], offsets[:-1], 0  # global node ids and their trees' first node
    while True:
        inner = left[frontier] >= 0
        if not inner.any():
            return int(offsets[-1]), depth
        frontier, base = frontier[inner], base[inner]
        frontier = np.concatenate([base + left[frontier], base + right[frontier]])
        base = np.concatenate([base, base])
        depth += 1


def sklearn_shape(model):
    return sum(int(e.tree_.node_count) for e in model.estimators_), max(int(e.tree_.max_depth) for e in model.estimators_)


def same_forest(a, b):
    return all(np.array_equal(np.asarray(getattr(a, name)), np.asarray(getattr(b, name))) for name in FOREST_ARRAYS)


def depth_name(depth):
    return "None" if depth is None else str(depth)


def parse_depths(text):
    depths = []
    for part in text.split(","):
        part = part.strip()
        depths.append(None if part.lower() == "none" or part == "0" else int(part))
    return depths


def trace_fit(args, case, depth, use_gpu):
    """One fit for GPUML_TRACE (set by the parent): the data, a warm-up on the GPU, then the traced fit."""
    from gpuml.ensemble import RandomForestClassifier, RandomForestRegressor

    Forest = RandomForestClassifier if case == "classifier" else RandomForestRegressor
    X, y, _, _ = make_data(case, args.rows, args.test_rows, args.features)  # the parent's draw
    device = "cuda" if use_gpu else "cpu"
    if use_gpu:
        Forest(device=device, n_estimators=2, max_depth=depth).fit(X[:10000], y[:10000])
    sys.stderr.write(f"---- traced fit: {Forest.__name__}(n_estimators={args.trees}, max_depth={depth_name(depth)}, "
                     f"device={device!r}) on {args.rows} x {args.features} ----\n")
    sys.stderr.flush()
    profiler = None
    if args.profile and use_gpu:  # the device's kernels and copies during the traced fit
        import torch

        profiler = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU,
                                                      torch.profiler.ProfilerActivity.CUDA])
        profiler.__enter__()
    t = time.perf_counter()
    Forest(device=device, n_estimators=args.trees, max_depth=depth, random_state=0).fit(X, y)
    wall = time.perf_counter() - t
    if profiler is not None:
        profiler.__exit__(None, None, None)
    sys.stderr.flush()
    sys.stderr.write(f"---- traced fit: {wall:.3f} s ----\n")
    if profiler is not None:
        def device_us(e):  # torch >= 2.4 says device, older releases cuda
            return getattr(e, "self_device_time_total", None) or getattr(e, "self_cuda_time_total", 0)

        events = [e for e in profiler.key_averages() if "CUDA" in str(e.device_type) and device_us(e) > 0]
        busy_ms = sum(device_us(e) for e in events) / 1e3
        sys.stderr.write(f"device busy {busy_ms:.1f} ms of {wall * 1e3:.1f} ms (kernels and copies, torch.profiler):\n")
        for e in sorted(events, key=lambda e: -device_us(e))[:16]:
            sys.stderr.write(f"  {device_us(e) / 1e3:9.1f} ms  {e.count:8d} x  {e.key[:90]}\n")


def run_case(args, case, use_gpu, torch):
    import gpuml
    from gpuml.ensemble import RandomForestClassifier, RandomForestRegressor

    Forest = RandomForestClassifier if case == "classifier" else RandomForestRegressor
    metric = "accuracy" if case == "classifier" else "R2"
    t = time.perf_counter()
    X, y, X_test, y_test = make_data(case, args.rows, args.test_rows, args.features)
    Xp = repeated(X_test, args.predict_rows)
    data = (f"make_classification(n_features={args.features}, n_informative={min(16, args.features - 2)}, n_classes=4)"
            if case == "classifier" else f"make_regression(n_features={args.features})")
    print(f"\n==== {Forest.__name__}: {data}, random_state=0, float32: {args.rows} rows, {args.test_rows} held out "
          f"(made in {time.perf_counter() - t:.1f} s); {args.trees} trees; predict {args.predict_rows} rows (the held-out "
          f"ones repeated); cores={os.cpu_count()} gpu={use_gpu} torch={'cuda' if torch is not None else 'no'}")
    cores = f"cpu ({os.cpu_count()} cores)"
    gpu_device = "cuda" if use_gpu else "cpu"
    classes = np.unique(y) if case == "classifier" else None
    run_sklearn = not args.no_sklearn
    if run_sklearn:
        from sklearn import ensemble

        SkForest = getattr(ensemble, Forest.__name__)

    if use_gpu:
        Forest(device="cuda", n_estimators=2).fit(X[:10000], y[:10000])  # warm-up
        if torch is not None:
            Forest(n_estimators=2).fit(torch.from_numpy(X[:10000]).cuda(), torch.from_numpy(y[:10000]).cuda())
    fit_repeats = args.fit_repeats if use_gpu else 1  # the CPU backend's fit is long and steady

    # ---- fits per depth: gpuml where it runs best (the GPU when there is one), the CPU backend, scikit-learn
    fits = {}
    for depth in args.depths:
        params = dict(n_estimators=args.trees, max_depth=depth, random_state=0)
        r = fits[depth] = {}
        # The user's path at max_depth None: device "auto" (the GPU when there is one) on NumPy X.
        device = "auto" if use_gpu and depth is None else gpu_device
        r["gpuml"] = best_time(lambda: Forest(device=device, **params).fit(X, y), fit_repeats, args.long_fit)
        if use_gpu and not args.no_gpuml_cpu:
            r["gpuml cpu"] = best_time(lambda: Forest(device="cpu", **params).fit(X, y), 1)
            r["same"] = same_forest(r["gpuml"][1], r["gpuml cpu"][1])
            r["gpuml cpu"] = (r["gpuml cpu"][0], None)  # its forest is the GPU's (or reported not to be): keep one
        if depth is None and torch is not None:
            Xd, yd = torch.from_numpy(X).cuda(), torch.from_numpy(y).cuda()
            r["gpuml torch"] = best_time(lambda: Forest(**params).fit(Xd, yd), fit_repeats, args.long_fit)
            del Xd, yd
        if run_sklearn and not (depth is None and args.skip_sklearn_deep):
            r["sklearn"] = best_time(lambda: SkForest(n_jobs=-1, **params).fit(X, y), 1)

    # ---- predict per depth: X already where the model predicts; the held-out scores from the same outputs
    if use_gpu and torch is not None:
        Xp_dev = torch.from_numpy(Xp).cuda()
        torch.cuda.synchronize()
    for depth, r in fits.items():
        model = r["gpuml"][1]
        if use_gpu and torch is not None:
            model.set_params(device="cuda")

            def predict():
                out = model.predict_proba(Xp_dev) if case == "classifier" else model.predict(Xp_dev)
                torch.cuda.synchronize()
                return out

            predict()  # warm-up
            seconds, out = best_time(predict, args.repeats)
            r["predict"] = (seconds, "cuda", score(case, classes, y_test, out.cpu().numpy()))
        else:
            # Without PyTorch, X is NumPy: on a GPU, each call copies it up.
            def predict():
                return model.predict_proba(Xp) if case == "classifier" else model.predict(Xp)

            seconds, out = best_time(predict, args.repeats)
            r["predict"] = (seconds, gpu_device, score(case, classes, y_test, out))
        r["shape"] = gpuml_shape(model)
        if "sklearn" in r:
            sk = r["sklearn"][1]
            seconds, out = best_time(lambda: sk.predict_proba(Xp) if case == "classifier" else sk.predict(Xp), 1)
            r["sklearn predict"] = (seconds, "cpu", score(case, classes, y_test, out))
            r["sklearn shape"] = sklearn_shape(sk)

    # ---- the user's path: the whole calls at the default depth
    if None in fits:
        r = fits[None]
        call = f"{Forest.__name__}(random_state=0{'' if args.trees == 100 else f', n_estimators={args.trees}'})"
        print(f"\nuser's path: {call}.fit(X, y), then .predict(X) of {args.predict_rows} rows, whole calls; other "
              f"parameters at their defaults (max_depth=None){'' if use_gpu else ', device=cpu (--no-gpu or no GPU)'}"
              f"{'; scikit-learn with n_jobs=-1' if 'sklearn' in r else ''}")
        model = r["gpuml"][1]
        user = []  # (name, fit s, predict s or None, score, (nodes, depth))
        predict_np, out = best_time(lambda: model.set_params(device="auto" if use_gpu else "cpu").predict(Xp), args.repeats)
        user.append((f"gpuml (X NumPy, {gpu_device})", r["gpuml"][0], predict_np, score(case, classes, y_test, out), r["shape"]))
        if "gpuml torch" in r:
            model_t = r["gpuml torch"][1]

            def predict_torch():
                out = model_t.predict(Xp_dev)
                torch.cuda.synchronize()
                return out

            predict_torch()  # warm-up
            predict_t, out = best_time(predict_torch, args.repeats)
            user.append(("gpuml (X torch, cuda)", r["gpuml torch"][0], predict_t, score(case, classes, y_test, out.cpu().numpy()),
                         gpuml_shape(model_t)))
        if "gpuml cpu" in r:
            user.append((f"gpuml {cores}", r["gpuml cpu"][0], None, None, None))
        if "sklearn" in r:
            sk = r["sklearn"][1]
            predict_sk, out = best_time(lambda: sk.predict(Xp), 1)
            user.append((f"scikit-learn {cores}", r["sklearn"][0], predict_sk, score(case, classes, y_test, out),
                         r["sklearn shape"]))
        elif run_sklearn:
            print("(scikit-learn's full-depth fit skipped: --skip-sklearn-deep)")
        print(f"{'':28s} {'fit s':>9s} {'vs gpuml':>9s} {'predict ms':>11s} {'vs gpuml':>9s} {metric:>9s} {'nodes':>11s} "
              f"{'depth':>6s}")
        for name, fit_s, predict_s, sc, shape in user:
            p = f"{predict_s * 1e3:11.2f} {predict_s / user[0][2]:8.1f}x" if predict_s is not None else f"{'-':>11s} {'':>9s}"
            s = f"{sc:9.4f}" if sc is not None else f"{'(same)':>9s}"
            sh = f"{shape[0]:11d} {shape[1]:6d}" if shape is not None else f"{'':>11s} {'':>6s}"
            print(f"{name:28s} {fit_s:9.3f} {fit_s / user[0][1]:8.1f}x {p} {s} {sh}")
        if "same" in r:
            print(f"the CUDA fit grew the CPU backend's forest: {'yes' if r['same'] else 'NO'}")
        if "gpuml torch" in r:
            print(f"X torch grew the X NumPy forest: {'yes' if same_forest(model, r['gpuml torch'][1]) else 'NO'}")

    # ---- the detail, per max_depth
    predicted = "predict_proba" if case == "classifier" else "predict"
    where = "a CUDA tensor" if use_gpu and torch is not None else "NumPy"
    warm = " after a warm-up (once if over --long-fit)" if use_gpu else ""
    print(f"\ndetail by max_depth: gpuml's fit best of {fit_repeats}{warm} (max_depth=None: "
          f"the user's path's fit), the CPU backend and scikit-learn once; {predicted} of {args.predict_rows} rows, X {where}, "
          f"best of {args.repeats} (scikit-learn once)")
    print(f"{'max_depth':9s} {'':14s} {'fit s':>9s} {'fit on':>16s} {'vs gpuml':>9s} {'predict ms':>11s} {'on':>5s} "
          f"{'vs gpuml':>9s} {metric:>9s} {'nodes':>11s} {'depth':>6s}")
    for depth, r in fits.items():
        fit_s = r["gpuml"][0]
        p_s, p_on, sc = r["predict"]
        nodes, reached = r["shape"]
        print(f"{depth_name(depth):9s} {'gpuml':14s} {fit_s:9.3f} {gpu_device if use_gpu else cores:>16s} {1.0:8.1f}x "
              f"{p_s * 1e3:11.2f} {p_on:>5s} {1.0:8.1f}x {sc:9.4f} {nodes:11d} {reached:6d}")
        if "gpuml cpu" in r:
            f = r["gpuml cpu"][0]
            print(f"{'':9s} {'gpuml cpu':14s} {f:9.3f} {cores:>16s} {f / fit_s:8.1f}x {'-':>11s} {'':>5s} {'':>9s} "
                  f"{'(same)' if r['same'] else '(OTHER)':>9s}")
        if "sklearn" in r:
            f = r["sklearn"][0]
            sp_s, _, ssc = r["sklearn predict"]
            snodes, sreached = r["sklearn shape"]
            print(f"{'':9s} {'scikit-learn':14s} {f:9.3f} {cores:>16s} {f / fit_s:8.1f}x {sp_s * 1e3:11.2f} {'cpu':>5s} "
                  f"{sp_s / p_s:8.1f}x {ssc:9.4f} {snodes:11d} {sreached:6d}")
        elif run_sklearn:
            print(f"{'':9s} {'scikit-learn':14s} {'skipped (--skip-sklearn-deep)':>36s}")
    for depth, r in fits.items():
        if "same" in r:
            print(f"max_depth {depth_name(depth)}: the CUDA fit grew the CPU backend's forest: {'yes' if r['same'] else 'NO'}")
    bounded = [depth for depth in fits if depth is not None]
    if bounded:  # save / load of a depth-limited model (a full-depth one pickles to gigabytes at 500k rows)
        import pickle

        depth = bounded[0]
        model = fits[depth]["gpuml"][1]
        save_time, saved = best_time(lambda: pickle.dumps(model), 3)
        load_time, _ = best_time(lambda: pickle.loads(saved), 3)
        print(f"max_depth {depth} model: {fits[depth]['shape'][0]} nodes, pickle {len(saved) / 1e6:.1f} MB, "
              f"save {save_time * 1e3:.1f} ms, load {load_time * 1e3:.1f} ms")
    issue_shape = (args.rows, args.features, args.trees) == (500_000, 32, 100) and case == "classifier" and 12 in fits
    if issue_shape and use_gpu:
        fit_s = fits[12]["gpuml"][0]
        print(f"target fit <= {FIT_TARGET_S} s (max_depth 12): {'met' if fit_s <= FIT_TARGET_S else 'MISSED'} ({fit_s:.3f} s)")
        if args.predict_rows == 1_000_000 and torch is not None:
            p_s = fits[12]["predict"][0]
            print(f"target predict 1M rows <= {PREDICT_TARGET_S * 1e3:.0f} ms (max_depth 12): "
                  f"{'met' if p_s <= PREDICT_TARGET_S else 'MISSED'} ({p_s * 1e3:.2f} ms)")

    if args.trace:
        for depth in args.depths:
            print(f"\ntrace (GPUML_TRACE=1, a child process): {Forest.__name__}, max_depth={depth_name(depth)}", flush=True)
            command = [sys.executable, os.path.abspath(__file__), "--trace-fit", "--case", case, "--rows", str(args.rows),
                       "--test-rows", str(args.test_rows), "--features", str(args.features), "--trees", str(args.trees),
                       "--depths", depth_name(depth)]
            if not use_gpu:
                command.append("--no-gpu")
            if args.profile:
                command.append("--profile")
            done = subprocess.run(command, env=dict(os.environ, GPUML_TRACE="1"), stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True)
            marker = done.stdout.find("---- traced fit:")  # the warm-up's trace before it left out
            print(done.stdout[marker if marker >= 0 else 0:], end="", flush=True)
            if done.returncode != 0:
                print(f"(the traced fit failed: exit status {done.returncode})")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", choices=("classifier", "regressor", "both"), default="classifier")
    parser.add_argument("--regression", action="store_true", help="the same as --case regressor")
    parser.add_argument("--rows", "--n", type=int, default=500_000, help="training rows")
    parser.add_argument("--test-rows", type=int, default=100_000, help="held-out rows (scores; repeated for predict)")
    parser.add_argument("--features", "--d", type=int, default=32)
    parser.add_argument("--trees", type=int, default=100)
    parser.add_argument("--depths", "--max-depth", type=parse_depths, default=[12, None],
                        help='comma-separated max_depth values, "None" (or 0): grown to purity (default "12,None")')
    parser.add_argument("--predict-rows", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=5, help="predict repetitions (best time)")
    parser.add_argument("--fit-repeats", type=int, default=3, help="gpuml GPU fit repetitions (best time)")
    parser.add_argument("--long-fit", type=float, default=10.0, help="seconds: a GPU fit this long is not repeated")
    parser.add_argument("--no-gpu", action="store_true", help="gpuml on the CPU backend only")
    parser.add_argument("--no-gpuml-cpu", action="store_true", help="no CPU-backend fit beside the GPU's")
    parser.add_argument("--no-sklearn", action="store_true")
    parser.add_argument("--skip-sklearn-deep", action="store_true", help="no scikit-learn fit at max_depth=None")
    parser.add_argument("--trace", action="store_true", help="one more fit per case and depth with GPUML_TRACE=1")
    parser.add_argument("--profile", action="store_true",
                        help="with --trace: the traced GPU fit under torch.profiler, its kernels and copies by device time")
    parser.add_argument("--trace-fit", action="store_true", help=argparse.SUPPRESS)  # the child process of --trace
    args = parser.parse_args()
    if args.regression:
        args.case = "regressor"
    if args.features < 5:
        parser.error("--features must be at least 5 (make_classification: 4 classes, 2 clusters each)")
    cases = ("classifier", "regressor") if args.case == "both" else (args.case,)

    import gpuml

    use_gpu = not args.no_gpu and gpuml.cuda_device_count() > 0
    if args.trace_fit:
        trace_fit(args, cases[0], args.depths[0], use_gpu)
        return
    torch = None
    if use_gpu:
        try:
            import torch

            if not torch.cuda.is_available():
                torch = None
        except ImportError:
            torch = None
    for case in cases:
        run_case(args, case, use_gpu, torch)


if __name__ == "__main__":
    main()

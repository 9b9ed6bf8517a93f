#!/usr/bin/env python3
"""Sparse workloads (issue 24): gpuml against scikit-learn and plain PyTorch, same data, one run.

Cases (--only picks some, by case or case.step name, comma-separated):

  debian     Debian's package descriptions (datasets/debian_packages.py; GPUML_APT_LISTS or
             /var/lib/apt/lists), TfidfVectorizer (scikit-learn, not compared), a stratified
             80/20 split, then
             .logistic  LogisticRegression() predicting the section: held-out accuracy
             .svd       TruncatedSVD(100) on the training TF-IDF: explained variance ratio sum
             .kmeans    KMeans(n_clusters=number of sections) on scikit-learn's LSA vectors
                        (the same input for all): inertia
  synthetic  --rows x 2^18 TF-IDF-like CSR, ~100 non-zeros a row (datasets/sparse_tfidf.py), then
             .svd       TruncatedSVD(100): explained variance ratio sum
             .logistic  LogisticRegression() on the binary label (default tol): accuracy on
                        --rows / 10 more rows of the same law (fitted on the first --rows only)

Rows of each step, the user path first:

  gpuml (user path)  the gpuml estimator with default parameters on the data as a user holds it
                     (a SciPy CSR matrix in host memory), the whole call timed
  gpuml (cpu)        device="cpu", host CSR
  gpuml (cuda)       device="cuda", X as a torch sparse CSR tensor on the GPU (as PyTorch has it),
                     else host CSR; only with a CUDA device
  scikit-learn       same parameters (TruncatedSVD: random_state=0), all cores; timed once, no warm-up
  torch              torch.svd_lowrank(X, q=110, niter=5); a full-batch L-BFGS logistic regression
                     on sparse products (same objective, tol, max_iter and history as scikit-learn's
                     lbfgs); a Lloyd loop from random rows for KMeans. On CUDA; on the CPU only with
                     --torch-cpu (torch's CPU sparse products are far too slow to be worth a row)

gpuml's estimators take sparse X on both backends; a TypeError or NotImplementedError on sparse data
(a build without CUDA, say) prints "unsupported" in that row, so this script runs on any machine. Each timed row is warmed up once, then timed --repeats times, best reported.
Ratios are against gpuml (cuda), else gpuml (cpu), else none.

    GPUML_LIBRARY=build-cuda/libgpuml.so python3 benchmarks/compare_sparse.py        # 1M x 2^18
    python3 benchmarks/compare_sparse.py --rows 20000 --repeats 1                   # no GPU needed

Targets (issue 24, on the H100 with 1M rows): TruncatedSVD(100) <= 1.5 s, LogisticRegression <= 2 s,
each at least 20x scikit-learn; on the Debian descriptions, accuracy within 0.5 point of
scikit-learn's and LSA explained variance within 1%.
"""

import argparse
import os
import sys
import time
import warnings

import numpy as np
import scipy.sparse as sp

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "bindings", "python"))
sys.path.insert(0, os.path.join(REPO, "datasets"))

N_COMPONENTS = 100
SVD_OVERSAMPLES = 10  # scikit-learn's n_oversamples: q = 110, as torch.svd_lowrank is given
SVD_ITERATIONS = 5  # scikit-learn's n_iter for TruncatedSVD
LOGISTIC_TOL, LOGISTIC_MAX_ITER, LOGISTIC_C, LBFGS_HISTORY = 1e-4, 100, 1.0, 10  # scikit-learn's defaults
KMEANS_TOL, KMEANS_MAX_ITER = 1e-4, 300
TARGETS = {"synthetic.svd": 1.5, "synthetic.logistic": 2.0}  # seconds, at 1M rows on an H100
TARGET_SPEEDUP = 20.0


class Unsupported(Exception):
    """gpuml refused the sparse input (TypeError, NotImplementedError): its row prints "unsupported"."""


def best_time(fit, repeats, sync=None, warm_up=True):
    """Warm-up once (unless warm_up=False), then the best of `repeats` timed calls: (seconds, result)."""
    if warm_up:
        fit()
        if sync:
            sync()
    best, result = float("inf"), None
    for _ in range(max(1, repeats)):
        start = time.perf_counter()
        result = fit()
        if sync:
            sync()
        best = min(best, time.perf_counter() - start)
    return best, result


def quiet(fit):
    """fit() with ConvergenceWarning silenced (iterations are reported where they matter)."""
    from sklearn.exceptions import ConvergenceWarning

    def call():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            return fit()

    return call


# ---- data -------------------------------------------------------------------------------------


def total_variance(X):
    """Sum of the column variances of a sparse X (ddof=0, float64), the denominator of scikit-learn's
    explained_variance_ratio_."""
    n = X.shape[0]
    mean = np.asarray(X.sum(axis=0), dtype=np.float64).ravel() / n
    mean_square = np.asarray(X.multiply(X).sum(axis=0), dtype=np.float64).ravel() / n
    return float(np.sum(mean_square - mean * mean))


def accuracy(X, y, coef, intercept):
    """Accuracy of a linear classifier's decision from its coefficients, computed on the host the same
    way for every implementation (binary: coef (1, d); multinomial: (k, d), y the class index)."""
    coef = np.asarray(coef, dtype=np.float64)
    scores = X @ coef.T + np.asarray(intercept, dtype=np.float64).ravel()
    predicted = (scores[:, 0] > 0).astype(np.int64) if coef.shape[0] == 1 else scores.argmax(axis=1)
    return float(np.mean(predicted == y))


# ---- torch ------------------------------------------------------------------------------------


def load_torch(allow_cpu):
    try:
        import torch
    except ImportError:
        print("torch rows skipped: PyTorch is not installed")
        return None, None
    if torch.cuda.is_available():
        torch.backends.cuda.matmul.allow_tf32 = False  # exact float32 products, as gpuml computes
        return torch, torch.device("cuda")
    if allow_cpu:
        return torch, torch.device("cpu")
    print("torch rows skipped: no CUDA device (--torch-cpu runs them on the CPU, slowly)")
    return None, None


def torch_csr(torch, X, device):
    warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta")
    return torch.sparse_csr_tensor(
        torch.from_numpy(X.indptr.astype(np.int64)), torch.from_numpy(X.indices.astype(np.int64)),
        torch.from_numpy(X.data), size=X.shape, check_invariants=False,  # SciPy made it: canonical CSR
    ).to(device)


def torch_svd(torch, X_t, n_components):
    U, S, V = torch.svd_lowrank(X_t, q=n_components + SVD_OVERSAMPLES, niter=SVD_ITERATIONS)
    return U[:, :n_components], S[:n_components], V[:, :n_components]


def torch_logistic(torch, X_t, y, n_classes):
    """Full-batch L-BFGS on mean log-loss + |W|^2 / (2 C n) (intercepts unpenalized), scikit-learn's
    objective; gradients by hand (X^T G through a CSR copy of X^T, made inside the timed call)."""
    n, d = X_t.shape
    k = 1 if n_classes == 2 else n_classes
    Xt_t = X_t.t().to_sparse_csr()
    target = torch.as_tensor(y, device=X_t.device)
    one_hot = (target.float().reshape(-1, 1) if k == 1
               else torch.nn.functional.one_hot(target, k).to(X_t.dtype))
    theta = torch.zeros(d * k + k, dtype=X_t.dtype, device=X_t.device, requires_grad=True)
    strength = 1.0 / (LOGISTIC_C * n)

    def closure():
        with torch.no_grad():
            W, b = theta[: d * k].view(d, k), theta[d * k:]
            z = X_t @ W + b
            if k == 1:
                loss = torch.nn.functional.softplus(z).sum() - (one_hot * z).sum()
                residual = torch.sigmoid(z) - one_hot
            else:
                log_p = torch.log_softmax(z, dim=1)
                loss = -(one_hot * log_p).sum()
                residual = log_p.exp() - one_hot
            loss = loss / n + 0.5 * strength * (W * W).sum()
            grad_W = (Xt_t @ residual) / n + strength * W
            theta.grad = torch.cat([grad_W.reshape(-1), residual.sum(dim=0) / n])
        return loss

    optimizer = torch.optim.LBFGS([theta], lr=1.0, max_iter=LOGISTIC_MAX_ITER, tolerance_grad=LOGISTIC_TOL,
                                  tolerance_change=0.0, history_size=LBFGS_HISTORY, line_search_fn="strong_wolfe")
    optimizer.step(closure)
    W, b = theta.detach()[: d * k].view(d, k), theta.detach()[d * k:]
    return W.T.cpu().numpy(), b.cpu().numpy()


def torch_kmeans(torch, X_t, n_clusters, seed):
    """Lloyd from n_clusters distinct random rows until the centers move less than scikit-learn's tol."""
    generator = torch.Generator(device="cpu").manual_seed(seed)
    centers = X_t[torch.randperm(X_t.shape[0], generator=generator)[:n_clusters].to(X_t.device)].clone()
    tol = KMEANS_TOL * X_t.var(dim=0).mean()
    for _ in range(KMEANS_MAX_ITER):
        labels = torch.cdist(X_t, centers).argmin(dim=1)
        sums = torch.zeros_like(centers).index_add_(0, labels, X_t)
        counts = torch.bincount(labels, minlength=n_clusters).to(X_t.dtype).unsqueeze(1)
        moved = torch.where(counts > 0, sums / counts.clamp(min=1), centers)
        shift = ((moved - centers) ** 2).sum()
        centers = moved
        if shift <= tol:
            break
    distances = torch.cdist(X_t, centers).min(dim=1).values
    return float((distances.double() ** 2).sum())


# ---- gpuml ------------------------------------------------------------------------------------


def gpuml_call(fit):
    """fit(), with a refusal of the sparse input (TypeError or NotImplementedError) turned into Unsupported."""
    try:
        return fit()
    except (TypeError, NotImplementedError) as error:
        raise Unsupported(str(error).split(". ")[0].splitlines()[0]) from error


# ---- the table --------------------------------------------------------------------------------


class Step:
    """The rows of one step: (implementation, seconds or None, metric value or None, note)."""

    def __init__(self, name, metric):
        self.name, self.metric, self.rows = name, metric, []

    def run(self, implementation, timed):
        """timed() -> (seconds, metric value[, note]); Unsupported and other errors become a note."""
        try:
            seconds, value, *note = timed()
            self.rows.append((implementation, seconds, value, note[0] if note else ""))
        except Unsupported as error:
            self.rows.append((implementation, None, None, f"unsupported ({error})"))
        except Exception as error:  # a benchmark row failing must not hide the others
            self.rows.append((implementation, None, None, f"FAILED: {type(error).__name__}: {error}"))

    def print(self):
        times = dict((name, seconds) for name, seconds, _, _ in self.rows if seconds is not None)
        base_name = next((n for n in ("gpuml (cuda)", "gpuml (cpu)") if n in times), None)
        print(f"\n{self.name}")
        print(f"  {'implementation':<20}{'time (s)':>10}{'x gpuml':>10}{self.metric:>22}  note")
        for name, seconds, value, note in self.rows:
            shown = f"{seconds:>10.3f}" if seconds is not None else f"{'-':>10}"
            ratio = f"{seconds / times[base_name]:>10.2f}" if seconds is not None and base_name else f"{'-':>10}"
            metric = f"{value:>22.6f}" if value is not None else f"{'-':>22}"
            print(f"  {name:<20}{shown}{ratio}{metric}  {note}")
        target = TARGETS.get(self.name)
        if target and base_name:
            seconds = times[base_name]
            line = f"  target: {base_name} <= {target} s -> {'met' if seconds <= target else 'NOT met'}"
            if "scikit-learn" in times:
                speedup = times["scikit-learn"] / seconds
                line += f"; {speedup:.1f}x scikit-learn (target >= {TARGET_SPEEDUP:g}x)"
            print(line)


def gpuml_rows(step, make, X, fit_args, metric, args, X_cuda=None):
    """The user-path row, then gpuml (cpu) and, with a CUDA device, gpuml (cuda)."""
    import gpuml

    def timed(params, data):
        seconds, model = best_time(quiet(lambda: gpuml_call(lambda: make(**params).fit(data, *fit_args))),
                                   args.repeats)
        return seconds, metric(model)

    step.run("gpuml (user path)", lambda: timed({}, X))
    if not args.no_gpuml_cpu:
        step.run("gpuml (cpu)", lambda: timed({"device": "cpu"}, X))
    if gpuml.cuda_device_count() > 0:
        def cuda_row():
            if X_cuda is not None:
                try:
                    return timed({"device": "cuda"}, X_cuda)
                except Unsupported:
                    seconds, value = timed({"device": "cuda"}, X)
                    return seconds, value, "host CSR (torch sparse CSR not accepted)"
            return timed({"device": "cuda"}, X)

        step.run("gpuml (cuda)", cuda_row)


def svd_step(name, X, args, torch, device, X_t=None):
    from sklearn.decomposition import TruncatedSVD as SkTruncatedSVD

    from gpuml.decomposition import TruncatedSVD

    step = Step(name, "explained var. ratio")
    evr = lambda model: float(np.sum(model.explained_variance_ratio_))  # noqa: E731
    make = lambda **p: TruncatedSVD(n_components=N_COMPONENTS, **p)  # noqa: E731
    gpuml_rows(step, make, X, (), evr, args, X_cuda=X_t if device is not None and device.type == "cuda" else None)
    sk_model = None
    if not args.no_sklearn:
        def sklearn_row():
            nonlocal sk_model
            seconds, sk_model = best_time(lambda: SkTruncatedSVD(N_COMPONENTS, random_state=0).fit(X), 1, warm_up=False)
            return seconds, evr(sk_model)

        step.run("scikit-learn", sklearn_row)
    if torch is not None:
        full = total_variance(X)
        sync = torch.cuda.synchronize if device.type == "cuda" else None

        def torch_row():
            seconds, (U, S, _) = best_time(lambda: torch_svd(torch, X_t, N_COMPONENTS), args.repeats, sync)
            projected = (U * S).double()
            return seconds, float(projected.var(dim=0, unbiased=False).sum()) / full

        step.run("torch svd_lowrank", torch_row)
    step.print()
    return sk_model


def logistic_step(name, X, y, X_eval, y_eval, args, torch, device, X_t=None):
    from sklearn.linear_model import LogisticRegression as SkLogisticRegression

    from gpuml.linear_model import LogisticRegression

    step = Step(name, "accuracy")
    n_classes = int(y.max()) + 1
    score = lambda model: accuracy(X_eval, y_eval, model.coef_, model.intercept_)  # noqa: E731
    y_float = y.astype(np.float32) if n_classes == 2 else y
    y_cuda = None
    if device is not None and device.type == "cuda":
        y_cuda = torch.from_numpy(np.ascontiguousarray(y_float)).to(device)

    import gpuml

    def timed(params, data, target):
        seconds, model = best_time(quiet(lambda: gpuml_call(lambda: LogisticRegression(**params).fit(data, target))),
                                   args.repeats)
        return seconds, score(model), f"n_iter {int(np.max(model.n_iter_))}"

    step.run("gpuml (user path)", lambda: timed({}, X, y))
    if not args.no_gpuml_cpu:
        step.run("gpuml (cpu)", lambda: timed({"device": "cpu"}, X, y))
    if gpuml.cuda_device_count() > 0:
        def cuda_row():
            if X_t is not None and y_cuda is not None:
                try:
                    return timed({"device": "cuda"}, X_t, y_cuda)
                except Unsupported:
                    seconds, value, note = timed({"device": "cuda"}, X, y)
                    return seconds, value, note + "; host CSR (torch sparse CSR not accepted)"
            return timed({"device": "cuda"}, X, y)

        step.run("gpuml (cuda)", cuda_row)
    if not args.no_sklearn:
        def sklearn_row():
            seconds, model = best_time(quiet(lambda: SkLogisticRegression().fit(X, y)), 1, warm_up=False)
            return seconds, score(model), f"n_iter {int(np.max(model.n_iter_))}"

        step.run("scikit-learn", sklearn_row)
    if torch is not None:
        sync = torch.cuda.synchronize if device.type == "cuda" else None

        def torch_row():
            seconds, (coef, intercept) = best_time(lambda: torch_logistic(torch, X_t, y, n_classes), args.repeats, sync)
            return seconds, accuracy(X_eval, y_eval, coef, intercept)

        step.run("torch L-BFGS", torch_row)
    step.print()


def kmeans_step(name, X_lsa, n_clusters, args, torch, device):
    from sklearn.cluster import KMeans as SkKMeans

    from gpuml.cluster import KMeans

    step = Step(name, "inertia")
    inertia = lambda model: float(model.inertia_)  # noqa: E731
    make = lambda **p: KMeans(n_clusters=n_clusters, random_state=0, **p)  # noqa: E731
    X_cuda = torch.from_numpy(X_lsa).to(device) if device is not None and device.type == "cuda" else None
    gpuml_rows(step, make, X_lsa, (), inertia, args, X_cuda=X_cuda)
    if not args.no_sklearn:
        step.run("scikit-learn", lambda: best_time(
            lambda: inertia(SkKMeans(n_clusters=n_clusters, random_state=0).fit(X_lsa)), 1, warm_up=False))
    if torch is not None:
        X_t = torch.from_numpy(X_lsa).to(device)
        sync = torch.cuda.synchronize if device.type == "cuda" else None
        step.run("torch Lloyd", lambda: best_time(lambda: torch_kmeans(torch, X_t, n_clusters, 0), args.repeats, sync))
    step.print()


# ---- cases ------------------------------------------------------------------------------------


def wanted(args, name):
    """Whether --only asks for case or step `name` (a case is wanted when one of its steps is)."""
    return not args.only or any(name == o or name.startswith(o + ".") or o.startswith(name + ".") for o in args.only)


def debian_case(args, torch, device):
    from debian_packages import apt_lists_dir, load_debian_descriptions
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.model_selection import train_test_split

    try:
        texts, y, sections, _ = load_debian_descriptions()
    except FileNotFoundError as error:
        print(f"\ndebian: skipped ({error})")
        return
    start = time.perf_counter()
    texts_train, texts_test, y_train, y_test = train_test_split(
        texts, y, test_size=0.2, stratify=y, random_state=args.seed)
    vectorizer = TfidfVectorizer(dtype=np.float32)
    X_train = vectorizer.fit_transform(texts_train).tocsr()
    X_test = vectorizer.transform(texts_test).tocsr()
    print(f"\ndebian: {len(texts)} package descriptions from {apt_lists_dir()}, {len(sections)} sections; "
          f"TF-IDF {X_train.shape[0]} x {X_train.shape[1]} train ({X_train.nnz} non-zeros), {X_test.shape[0]} test "
          f"({time.perf_counter() - start:.1f} s, scikit-learn's TfidfVectorizer)")
    X_t = torch_csr(torch, X_train, device) if torch is not None else None
    if wanted(args, "debian.logistic"):
        logistic_step("debian.logistic", X_train, y_train, X_test, y_test, args, torch, device, X_t)
    sk_svd = svd_step("debian.svd", X_train, args, torch, device, X_t) if wanted(args, "debian.svd") else None
    if wanted(args, "debian.kmeans"):
        if sk_svd is None:
            from sklearn.decomposition import TruncatedSVD as SkTruncatedSVD

            sk_svd = SkTruncatedSVD(N_COMPONENTS, random_state=0).fit(X_train)
        X_lsa = np.ascontiguousarray(sk_svd.transform(X_train), dtype=np.float32)
        kmeans_step("debian.kmeans", X_lsa, len(sections), args, torch, device)


def synthetic_case(args, torch, device):
    from sparse_tfidf import make_sparse_tfidf

    start = time.perf_counter()
    held_out = max(1000, args.rows // 10)
    X_all, y_all, extras = make_sparse_tfidf(args.rows + held_out, seed=args.seed, return_extras=True)
    # The first --rows rows, without a copy: the same matrix as make_sparse_tfidf(args.rows) gives.
    split = X_all.indptr[args.rows]
    X = sp.csr_matrix((X_all.data[:split], X_all.indices[:split], X_all.indptr[: args.rows + 1]),
                      shape=(args.rows, X_all.shape[1]))
    y = y_all[: args.rows]
    X_eval, y_eval = X_all[args.rows:], y_all[args.rows:]
    print(f"\nsynthetic: {X.shape[0]} x {X.shape[1]} CSR float32, {X.nnz} non-zeros ({X.nnz / X.shape[0]:.1f} a row), "
          f"{X.indices.dtype} indices, seed {args.seed}; {held_out} held-out rows; best possible accuracy {extras['bayes_accuracy']:.4f} "
          f"(made in {time.perf_counter() - start:.1f} s)")
    X_t = torch_csr(torch, X, device) if torch is not None else None
    if wanted(args, "synthetic.svd"):
        svd_step("synthetic.svd", X, args, torch, device, X_t)
    if wanted(args, "synthetic.logistic"):
        logistic_step("synthetic.logistic", X, y, X_eval, y_eval, args, torch, device, X_t)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000, help="rows of the synthetic case")
    parser.add_argument("--repeats", type=int, default=3, help="timed fits per gpuml and torch row (best reported)")
    parser.add_argument("--seed", type=int, default=0, help="synthetic data and train/test split seed")
    parser.add_argument("--only", type=lambda s: [p.strip() for p in s.split(",") if p.strip()], default=[],
                        help="cases or steps, comma-separated: debian, synthetic, debian.logistic, synthetic.svd, ...")
    parser.add_argument("--no-sklearn", action="store_true")
    parser.add_argument("--no-gpuml-cpu", action="store_true", help="skip the gpuml (cpu) rows (a GPU run's time limit)")
    parser.add_argument("--no-torch", action="store_true")
    parser.add_argument("--torch-cpu", action="store_true", help="run the torch rows on the CPU when there is no GPU")
    args = parser.parse_args()
    known = {"debian", "synthetic", "debian.logistic", "debian.svd", "debian.kmeans", "synthetic.svd",
             "synthetic.logistic"}
    unknown = [o for o in args.only if o not in known]
    if unknown:
        parser.error(f"--only: unknown {', '.join(unknown)}; choose from {', '.join(sorted(known))}")

    import gpuml
    import sklearn
    from threadpoolctl import threadpool_info

    torch, device = (None, None) if args.no_torch else load_torch(args.torch_cpu)
    threads = max((p.get("num_threads", 1) for p in threadpool_info()), default=1)
    print(f"gpuml {gpuml.library_version} from {gpuml.library_path}, CUDA devices: {gpuml.cuda_device_count()}")
    print(f"scikit-learn {sklearn.__version__} (BLAS/OpenMP threads: {threads}, of {os.cpu_count()} CPUs)")
    if torch is not None:
        where = torch.cuda.get_device_name() if device.type == "cuda" else "CPU"
        print(f"torch {torch.__version__} on {where}")
    if wanted(args, "debian"):
        debian_case(args, torch, device)
    if wanted(args, "synthetic"):
        synthetic_case(args, torch, device)


if __name__ == "__main__":
    main()

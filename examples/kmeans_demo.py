"""KMeans on real defect data: the steel-plate faults set (1,941 plates, 27 features, 7 faults).

Clusters the standardized plates with gpuml (GPU when present, else CPU) and with scikit-learn from
the same initial centers, and reports how the clusters line up with the fault classes, the inertia
of both, their agreement, and the time each took.
"""
import argparse
import os
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bindings", "python"))
sys.path.insert(0, os.path.join(ROOT, "datasets"))

from sklearn.cluster import KMeans as SkKMeans  # noqa: E402
from sklearn.metrics import adjusted_rand_score  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402

import gpuml  # noqa: E402
from gpuml.cluster import KMeans  # noqa: E402
from steel_plates import load_steel_plates  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--device", default="auto", help='"auto", "cpu", "cuda" or "cuda:N"')
    parser.add_argument("--clusters", type=int, default=7)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    X, y, class_names = load_steel_plates()
    X = StandardScaler().fit_transform(X)
    device = args.device
    if device == "auto":
        device = "cuda" if gpuml.cuda_device_count() > 0 else "cpu"
    print(f"steel plates: {X.shape[0]} plates x {X.shape[1]} features, {len(class_names)} fault classes")
    print(f"gpuml {gpuml.__version__} on {device}")

    # k-means++ with 10 restarts, as a user would run it.
    t0 = time.perf_counter()
    km = KMeans(n_clusters=args.clusters, n_init=10, random_state=args.seed, device=device).fit(X)
    t_gpuml = time.perf_counter() - t0
    t0 = time.perf_counter()
    sk = SkKMeans(n_clusters=args.clusters, n_init=10, random_state=args.seed).fit(X)
    t_sk = time.perf_counter() - t0
    print(f"k-means++ x10:  gpuml inertia {km.inertia_:.2f} ({t_gpuml * 1e3:.1f} ms)   "
          f"scikit-learn inertia {sk.inertia_:.2f} ({t_sk * 1e3:.1f} ms)")

    # From the same initial centers both must land on the same partition.
    init = X[np.random.default_rng(args.seed).choice(X.shape[0], args.clusters, replace=False)]
    a = KMeans(n_clusters=args.clusters, init=init, n_init=1, device=device).fit(X)
    b = SkKMeans(n_clusters=args.clusters, init=init, n_init=1).fit(X)
    same = np.mean(a.labels_ == b.labels_)
    rel = abs(a.inertia_ - b.inertia_) / b.inertia_
    print(f"same start:     labels identical for {same * 100:.2f}% of plates, inertia differs by {rel:.1e} (relative)")

    print(f"clusters vs fault classes: adjusted Rand index {adjusted_rand_score(y, km.labels_):.3f}")
    print("cluster  plates  most common fault (share)")
    for c in range(args.clusters):
        members = y[km.labels_ == c]
        if len(members) == 0:
            continue
        top = np.bincount(members, minlength=len(class_names)).argmax()
        print(f"{c:7d}  {len(members):6d}  {class_names[top]} ({np.mean(members == top) * 100:.0f}%)")
    ok = same > 0.99 and rel < 1e-4
    print("demo:", "OK — gpuml agrees with scikit-learn" if ok else "MISMATCH with scikit-learn")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

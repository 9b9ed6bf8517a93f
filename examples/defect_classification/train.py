#!/usr/bin/env python3
"""Defect classification on real data with gpuml, as a scikit-learn user would write it.

Data sets (--dataset):
  elpv          2,624 electroluminescence images of solar cells (PyPI package elpv-dataset),
                turned into 269 features (datasets/elpv.py); defective = expert probability >= 0.5
  elpv4         the same cells, the four probability levels as classes
  steel-plates  1,941 steel plates, 27 features, 7 fault classes (../shared/datasets, or --data)
  cmapss        NASA C-MAPSS FD001 turbofan engines: remaining-useful-life regression
  auto          elpv when its package is installed, else steel-plates (the default)

Classification runs, with stratified 5-fold cross-validation (shuffled, random_state 0):
  - gpuml RandomForestClassifier (100 trees), beside scikit-learn's with the same parameters, and a
    small GridSearchCV over its parameters, scored by nested CV (the grid searched on each outer
    training set alone; not with --quick);
  - StandardScaler -> gpuml PCA (at most 64 components) -> gpuml LogisticRegression;
  - gpuml KMeans on the scaled PCA features, to report unsupervised defect clusters.
It writes to --out: report.md and metrics.json (accuracy, macro-F1, per-class recall, the timing
table), confusion_matrix.png, pca_scatter.png, feature_importance.png, the best forest in gpuml's
own format (model.gpuml: what examples/cpp_service and examples/c load) and as a pickle
(model.pkl). Timing: the same forest cross-validation with gpuml on the GPU (when present), gpuml
on the CPU backend, and scikit-learn (all cores).

    python3 examples/defect_classification/train.py --dataset steel-plates --out defect-report
    python3 examples/defect_classification/train.py --quick      # fewer trees, smaller grid
"""

import argparse
import json
import os
import pickle
import sys
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
for _path in (os.path.join(REPO, "bindings", "python"), os.path.join(REPO, "datasets")):
    if _path not in sys.path:
        sys.path.insert(0, _path)


def progress(iterable, desc, total=None):
    try:
        from tqdm import tqdm
    except ImportError:
        return iterable
    return tqdm(iterable, desc=desc, total=total, leave=False, file=sys.stderr)


def load(dataset, path):
    """(X, y, class_names or None for regression, feature names, extra) for a data set name."""
    if dataset in ("elpv", "elpv4"):
        import elpv

        X, y, names, _ = elpv.load_elpv("binary" if dataset == "elpv" else "four")
        return X, y, names, elpv.feature_names(), {}
    if dataset == "steel-plates":
        import steel_plates

        X, y, names = steel_plates.load_steel_plates(path)
        return X, y, names, steel_plates.feature_names(path), {}
    if dataset == "cmapss":
        import cmapss

        X, y, X_test, y_test = cmapss.load_cmapss_fd001(path)
        return X, np.minimum(y, 125.0), None, cmapss.FEATURE_NAMES, {"X_test": X_test, "y_test": y_test}
    raise ValueError(f"unknown data set {dataset!r}")


def cross_validated(make, X, y, folds, desc):
    """Out-of-fold predictions of make() over `folds`, and the seconds the fits and predictions took."""
    from sklearn.base import clone

    predictions = np.empty_like(y)
    seconds = 0.0
    model = make()
    for train, test in progress(folds, desc, total=len(folds)):
        estimator = clone(model)
        start = time.perf_counter()
        estimator.fit(X[train], y[train])
        predictions[test] = estimator.predict(X[test])
        seconds += time.perf_counter() - start
    return predictions, seconds


def scores(y, predicted, n_classes):
    from sklearn.metrics import accuracy_score, f1_score, recall_score

    return {
        "accuracy": float(accuracy_score(y, predicted)),
        "macro_f1": float(f1_score(y, predicted, average="macro")),
        "recall_per_class": [float(r) for r in recall_score(y, predicted, average=None, labels=range(n_classes))],
    }


def figures(out, y, predicted, class_names, X, importances, feature_names):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from sklearn.metrics import ConfusionMatrixDisplay
    from sklearn.preprocessing import StandardScaler

    from gpuml.decomposition import PCA

    paths = {}
    fig, ax = plt.subplots(figsize=(7, 6))
    ConfusionMatrixDisplay.from_predictions(y, predicted, display_labels=class_names, ax=ax, xticks_rotation=45,
                                            colorbar=False)
    ax.set_title("Random forest, 5-fold out-of-fold predictions")
    fig.tight_layout()
    paths["confusion_matrix"] = os.path.join(out, "confusion_matrix.png")
    fig.savefig(paths["confusion_matrix"], dpi=120)
    plt.close(fig)

    Z = PCA(n_components=2, device="cpu").fit_transform(StandardScaler().fit_transform(X))
    fig, ax = plt.subplots(figsize=(7, 6))
    for k, name in enumerate(class_names):
        mask = y == k
        ax.scatter(Z[mask, 0], Z[mask, 1], s=6, alpha=0.6, label=name)
    ax.set_xlabel("PC 1")
    ax.set_ylabel("PC 2")
    ax.set_title("gpuml PCA of the standardized features")
    ax.legend(markerscale=3, fontsize=8)
    fig.tight_layout()
    paths["pca_scatter"] = os.path.join(out, "pca_scatter.png")
    fig.savefig(paths["pca_scatter"], dpi=120)
    plt.close(fig)

    order = np.argsort(importances)[::-1][:20]
    fig, ax = plt.subplots(figsize=(7, 6))
    ax.barh([feature_names[i] for i in order[::-1]], importances[order[::-1]])
    ax.set_xlabel("impurity-based importance")
    ax.set_title("Random forest: the 20 most important features")
    fig.tight_layout()
    paths["feature_importance"] = os.path.join(out, "feature_importance.png")
    fig.savefig(paths["feature_importance"], dpi=120)
    plt.close(fig)
    return paths


def classify(args, X, y, class_names, feature_names, device, out):
    from sklearn.cluster import KMeans as SkKMeans  # noqa: F401  (scikit-learn's for the timing table only)
    from sklearn.ensemble import RandomForestClassifier as SkForest
    from sklearn.metrics import adjusted_rand_score
    from sklearn.model_selection import GridSearchCV, StratifiedKFold
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from gpuml.cluster import KMeans
    from gpuml.decomposition import PCA
    from gpuml.ensemble import RandomForestClassifier
    from gpuml.linear_model import LogisticRegression

    n_classes = len(class_names)
    trees = 30 if args.quick else 100
    cv = StratifiedKFold(n_splits=args.folds, shuffle=True, random_state=0)
    folds = list(cv.split(X, y))
    metrics = {}

    def forest(dev):
        return RandomForestClassifier(n_estimators=trees, random_state=0, device=dev)

    predicted, seconds = cross_validated(lambda: forest(device), X, y, folds, "forest CV")
    metrics["random_forest"] = scores(y, predicted, n_classes)
    timings = [(f"gpuml ({device})", seconds)]
    if device != "cpu":
        timings.append(("gpuml (cpu backend)", cross_validated(lambda: forest("cpu"), X, y, folds, "forest CV, cpu")[1]))
    if not args.no_sklearn:
        # The same forest, folds and seed in scikit-learn: the accuracy to compare with, and the timing.
        sk_predicted, sk_seconds = cross_validated(lambda: SkForest(n_estimators=trees, random_state=0, n_jobs=-1), X, y,
                                                   folds, "scikit-learn CV")
        metrics["random_forest_sklearn"] = scores(y, sk_predicted, n_classes)
        timings.append(("scikit-learn (all cores)", sk_seconds))

    # Standardized features rotated onto (at most 64) principal components; C = 10: n >> d here,
    # little regularization is needed (steel plates: 0.711 against 0.706 with 20 components, C = 1).
    n_components = min(X.shape[1], 64)
    logistic = lambda: make_pipeline(  # noqa: E731
        StandardScaler(), PCA(n_components=n_components, device=device),
        LogisticRegression(C=10.0, max_iter=2000, device=device),
    )
    predicted_lr, _ = cross_validated(logistic, X, y, folds, "PCA + logistic CV")
    metrics["pca_logistic"] = scores(y, predicted_lr, n_classes)

    grid = {"max_features": ["sqrt", 0.3], "min_samples_leaf": [1, 3]}
    if args.quick:
        grid = {"max_features": ["sqrt", 0.3]}
    print(f"GridSearchCV over {grid} ({args.folds} folds)", file=sys.stderr)
    search = GridSearchCV(forest(device), grid, cv=cv, scoring="accuracy", refit=True)
    search.fit(X, y)
    # best_score_ is measured on the folds that chose the parameters, so it flatters the tuned
    # forest; nested CV (the grid searched on each outer training set alone) is its fair accuracy.
    # Left out with --quick: it costs folds x the grid's fits again.
    if not args.quick:
        tuned = lambda: GridSearchCV(forest(device), grid, cv=cv, scoring="accuracy")  # noqa: E731
        predicted_tuned, _ = cross_validated(tuned, X, y, folds, "nested grid CV")
        metrics["random_forest_tuned"] = scores(y, predicted_tuned, n_classes)
    metrics["grid_search"] = {"best_params": search.best_params_, "best_accuracy": float(search.best_score_)}
    best = search.best_estimator_

    scaled = StandardScaler().fit_transform(X)
    Z = PCA(n_components=n_components, device=device).fit_transform(scaled)
    clusters = KMeans(n_clusters=n_classes, random_state=0, device=device).fit_predict(Z)
    metrics["kmeans"] = {
        "n_clusters": n_classes,
        "adjusted_rand_index": float(adjusted_rand_score(y, clusters)),
        "cluster_sizes": np.bincount(clusters, minlength=n_classes).tolist(),
    }

    paths = figures(out, y, predicted, class_names, X, np.asarray(best.feature_importances_), feature_names)
    model_bytes = best.save_model(os.path.join(out, "model.gpuml"))
    with open(os.path.join(out, "model.pkl"), "wb") as f:
        pickle.dump(best, f)
    metrics["model"] = {"gpuml_format": "model.gpuml", "bytes": model_bytes, "pickle": "model.pkl",
                        "n_features": int(X.shape[1]), "classes": list(class_names)}
    return metrics, timings, paths


def regress(args, X, y, extra, device):
    from sklearn.ensemble import RandomForestRegressor as SkForest

    from gpuml.ensemble import RandomForestRegressor

    trees = 50 if args.quick else 200
    X_test, y_test = extra["X_test"], np.minimum(extra["y_test"], 125.0)
    rows, timings = {}, []
    runs = [(f"gpuml ({device})", lambda: RandomForestRegressor(n_estimators=trees, min_samples_leaf=5, random_state=0, device=device))]
    if device != "cpu":
        runs.append(("gpuml (cpu backend)", lambda: RandomForestRegressor(n_estimators=trees, min_samples_leaf=5, random_state=0, device="cpu")))
    if not args.no_sklearn:
        runs.append(("scikit-learn (all cores)", lambda: SkForest(n_estimators=trees, min_samples_leaf=5, random_state=0, n_jobs=-1)))
    for name, make in progress(runs, "forests"):
        start = time.perf_counter()
        model = make().fit(X, y)
        rmse = float(np.sqrt(np.mean((model.predict(X_test) - y_test) ** 2)))
        timings.append((name, time.perf_counter() - start))
        rows[name] = rmse
    return {"test_rmse": rows, "trees": trees, "min_samples_leaf": 5, "rul_cap": 125}, timings, {}


def write_report(out, dataset, X, metrics, timings, paths, class_names):
    lines = [f"# Defect report: {dataset}", "", f"{X.shape[0]} samples, {X.shape[1]} features.", ""]
    if class_names is not None:
        lines += ["| model (5-fold CV) | accuracy | macro-F1 |", "| --- | --- | --- |"]
        rows = (("random_forest", "gpuml RandomForestClassifier"),
                ("random_forest_sklearn", "scikit-learn RandomForestClassifier (same parameters)"),
                ("random_forest_tuned", "gpuml forest tuned by GridSearchCV (nested CV)"),
                ("pca_logistic", "scaler + gpuml PCA + LogisticRegression"))
        for key, label in rows:
            m = metrics.get(key)
            if m is not None:  # scikit-learn's row is absent with --no-sklearn
                lines.append(f"| {label} | {m['accuracy']:.4f} | {m['macro_f1']:.4f} |")
        lines += ["", "Per-class recall (random forest): " +
                  ", ".join(f"{n} {r:.3f}" for n, r in zip(class_names, metrics["random_forest"]["recall_per_class"])), ""]
        g = metrics["grid_search"]
        lines += [f"GridSearchCV best on all rows: {g['best_params']} (accuracy {g['best_accuracy']:.4f} on the folds "
                  "that chose it, so optimistic; the nested CV row is the fair figure).", ""]
        k = metrics["kmeans"]
        lines += [f"KMeans ({k['n_clusters']} clusters on the PCA components): adjusted Rand index "
                  f"{k['adjusted_rand_index']:.3f} against the labels; cluster sizes {k['cluster_sizes']}.", ""]
    else:
        lines += ["| model | test RMSE |", "| --- | --- |"]
        lines += [f"| {name} | {rmse:.2f} |" for name, rmse in metrics["test_rmse"].items()] + [""]
    lines += ["| timing (same work) | seconds | vs gpuml |", "| --- | --- | --- |"]
    base = timings[0][1]
    lines += [f"| {name} | {s:.2f} | {s / base:.1f}x |" for name, s in timings] + [""]
    lines += [f"![{name}]({os.path.basename(path)})" for name, path in paths.items()]
    with open(os.path.join(out, "report.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    metrics["timing_seconds"] = {name: s for name, s in timings}
    with open(os.path.join(out, "metrics.json"), "w") as f:
        json.dump(metrics, f, indent=2)
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", default="auto", choices=("auto", "elpv", "elpv4", "steel-plates", "cmapss"))
    parser.add_argument("--data", help="the data set's file (steel plates CSV) or folder (C-MAPSS)")
    parser.add_argument("--device", default="auto", help='"auto", "cpu", "cuda" or "cuda:N"')
    parser.add_argument("--out", default="defect-report")
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="fewer trees and a smaller grid")
    parser.add_argument("--no-sklearn", action="store_true", help="leave scikit-learn out of the timing table")
    args = parser.parse_args(argv)

    import gpuml
    import elpv

    dataset = args.dataset
    if dataset == "auto":
        dataset = "elpv" if elpv.available() else "steel-plates"
    device = args.device
    if device == "auto":
        device = "cuda" if gpuml.cuda_device_count() > 0 else "cpu"
    os.makedirs(args.out, exist_ok=True)
    print(f"gpuml {gpuml.__version__}, device={device}, data set {dataset}", file=sys.stderr)

    X, y, class_names, feature_names, extra = load(dataset, args.data)
    if class_names is None:
        metrics, timings, paths = regress(args, X, y, extra, device)
    else:
        metrics, timings, paths = classify(args, X, y, class_names, feature_names, device, args.out)
    report = write_report(args.out, dataset, X, metrics, timings, paths, class_names)
    print(report)
    print(f"\nreport: {os.path.abspath(os.path.join(args.out, 'report.md'))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

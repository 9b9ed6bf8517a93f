"""A defect classifier trained over Dask workers: python examples/distributed/train_dask.py [--workers N] [--device cuda]

The steel plates (../shared/datasets, 7 fault classes) as a Dask array in row blocks; a
RandomForestClassifier fitted over the workers that hold the blocks (gpuml.dask.fit: the workers
form a Gloo group through the scheduler and grow the forest of all rows), scored on a held-out
quarter through gpuml.dask.predict, and checked against the same forest fitted in this process
(the same trees, bit for bit) and against scikit-learn's accuracy. Needs gpuml built with Gloo,
and dask[distributed].
"""

import argparse
import os
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "datasets"))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--trees", type=int, default=50)
    parser.add_argument("--device", default="cpu", help="cpu, or cuda: each rank on a GPU (NCCL when each has its own)")
    args = parser.parse_args(argv)

    import dask.array as da
    from distributed import Client, LocalCluster
    from sklearn.ensemble import RandomForestClassifier as SkForest
    from steel_plates import load_steel_plates

    import gpuml
    import gpuml.dask
    from gpuml.ensemble import RandomForestClassifier

    X, y, classes = load_steel_plates()
    order = np.random.default_rng(0).permutation(len(X))
    train, test = order[: 3 * len(X) // 4], order[3 * len(X) // 4 :]
    params = dict(n_estimators=args.trees, random_state=0)

    # The workers import gpuml as this process does.
    os.environ["PYTHONPATH"] = os.pathsep.join([str(ROOT / "bindings" / "python"), os.environ.get("PYTHONPATH", "")])
    os.environ.setdefault("GPUML_LIBRARY", gpuml.library_path)
    with LocalCluster(n_workers=args.workers, threads_per_worker=1, dashboard_address=None, silence_logs=40) as cluster, \
            Client(cluster) as client:
        X_train = da.from_array(X[train], chunks=(len(train) // (2 * args.workers) + 1, X.shape[1]))
        y_train = da.from_array(y[train], chunks=(X_train.chunks[0],))
        forest = gpuml.dask.fit(RandomForestClassifier(**params, device=args.device), X_train, y_train, client=client)
        predicted = gpuml.dask.predict(forest, da.from_array(X[test], chunks=(len(test) // 2 + 1, X.shape[1]))).compute()

    accuracy = float(np.mean(predicted == y[test]))
    local = RandomForestClassifier(**params, device=args.device).fit(X[train], y[train])
    same = np.array_equal(local.predict_proba(X[test]), forest.predict_proba(X[test]))
    sk_accuracy = SkForest(**params).fit(X[train], y[train]).score(X[test], y[test])
    print(f"steel plates: {len(train)} training rows in {X_train.numblocks[0]} blocks on {args.workers} Dask workers, "
          f"{len(test)} held out, {len(classes)} classes")
    print(f"gpuml.dask forest: held-out accuracy {accuracy:.3f} (scikit-learn's forest: {sk_accuracy:.3f}); "
          f"the same forest as one process's fit: {same}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())

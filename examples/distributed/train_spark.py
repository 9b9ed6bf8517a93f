"""A defect classifier trained over Spark: python examples/distributed/train_spark.py [--partitions N] [--device cuda]

The steel plates (../shared/datasets, 7 fault classes) as a Spark DataFrame of named feature
columns in N partitions (local mode); a RandomForestClassifier fitted over the partitions as
barrier tasks (gpuml.spark.fit: the partitions form a Gloo group through a store the driver
starts, and grow the forest of all rows), scored on a held-out quarter through
gpuml.spark.predict, and checked against the same forest fitted in this process (the same trees,
bit for bit) and against scikit-learn's accuracy. Needs gpuml built with Gloo, pyspark and Java.
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
    parser.add_argument("--partitions", type=int, default=2)
    parser.add_argument("--trees", type=int, default=50)
    parser.add_argument("--device", default="cpu", help="cpu, or cuda: each rank on a GPU (NCCL when each has its own)")
    args = parser.parse_args(argv)

    from pyspark.sql import SparkSession
    from sklearn.ensemble import RandomForestClassifier as SkForest
    from steel_plates import load_steel_plates

    import gpuml
    import gpuml.spark
    from gpuml.ensemble import RandomForestClassifier

    X, y, classes = load_steel_plates()
    order = np.random.default_rng(0).permutation(len(X))
    train, test = order[: 3 * len(X) // 4], order[3 * len(X) // 4 :]
    params = dict(n_estimators=args.trees, random_state=0)
    features = [f"f{j}" for j in range(X.shape[1])]

    # The Python workers import gpuml as this process does.
    os.environ["PYTHONPATH"] = os.pathsep.join([str(ROOT / "bindings" / "python"), os.environ.get("PYTHONPATH", "")])
    os.environ.setdefault("GPUML_LIBRARY", gpuml.library_path)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = (SparkSession.builder.master(f"local[{args.partitions}]").appName("gpuml-defects")
             .config("spark.ui.enabled", "false").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    try:
        def frame(rows):  # the rows in order, in N partitions
            data = [tuple(float(v) for v in x) + (float(label),) for x, label in zip(X[rows], y[rows])]
            return spark.sparkContext.parallelize(data, args.partitions).toDF(features + ["fault"])

        forest = gpuml.spark.fit(RandomForestClassifier(**params, device=args.device), frame(train), features, label="fault")
        scored = gpuml.spark.predict(forest, frame(test), features).select("fault", "prediction").collect()
    finally:
        spark.stop()

    accuracy = float(np.mean([r.prediction == r.fault for r in scored]))
    local = RandomForestClassifier(**params, device=args.device).fit(X[train], y[train].astype(float))
    same = np.array_equal(local.predict_proba(X[test]), forest.predict_proba(X[test]))
    sk_accuracy = SkForest(**params).fit(X[train], y[train]).score(X[test], y[test])
    print(f"steel plates: {len(train)} training rows in {args.partitions} Spark partitions, {len(test)} held out, "
          f"{len(classes)} classes")
    print(f"gpuml.spark forest: held-out accuracy {accuracy:.3f} (scikit-learn's forest: {sk_accuracy:.3f}); "
          f"the same forest as one process's fit: {same}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())

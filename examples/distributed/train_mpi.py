"""Distributed training with gpuml's Python package: mpirun -np N python examples/distributed/train_mpi.py

Every rank makes (here: draws) its own rows; after gpuml.distributed.init() the estimators with
device="cpu" fit on the rank's rows and every rank ends with the model of all ranks' rows
(mpi4py is used when installed, and is not needed). Rank 0 prints the models; with mpi4py every
rank also checks that it holds the same LogisticRegression coefficients, forest and unseeded
KMeans as the others.
"""

import numpy as np

import gpuml.distributed
from gpuml.cluster import KMeans
from gpuml.ensemble import RandomForestClassifier
from gpuml.graph import pagerank
from gpuml.linear_model import LinearRegression, LogisticRegression

gpuml.distributed.init()
rank, size = gpuml.distributed.rank(), gpuml.distributed.size()

rng = np.random.default_rng(2024 + rank)
n, d = 800 + 250 * rank, 4  # uneven shares
centers = np.array([[0, 0, 0, 0], [6, 6, 0, 0], [0, 6, -6, 3]], dtype=float)
X = centers[rng.integers(0, 3, size=n)] + rng.normal(size=(n, d))
y = X @ np.array([2.0, -1.0, 0.0, 0.5]) + 1.0 + 0.1 * rng.normal(size=n)
labels = (X[:, 0] - X[:, 2] + rng.normal(size=n) > 3).astype(int)

km = KMeans(n_clusters=3, random_state=0, device="cpu").fit(X)
lr = LinearRegression(device="cpu").fit(X, y)
clf = LogisticRegression(C=0.5, device="cpu").fit(X, labels)
# The forest one process would grow on all ranks' rows (every rank holds both classes here: the
# Python classifiers number the classes from each rank's own labels).
forest = RandomForestClassifier(n_estimators=20, max_depth=6, random_state=0, device="cpu").fit(X, labels)
# random_state=None: rank 0 draws the seed and every rank takes it (one model, not one per rank).
unseeded = KMeans(n_clusters=3, n_init=1, device="cpu").fit(X)

# PageRank: each rank passes its share of the edges of one graph (here its own random edges).
src = rng.integers(0, 100, size=300 + 100 * rank)
dst = rng.integers(0, 100, size=src.size)
ranks = pagerank((src, dst), n_vertices=100, device="cpu")  # of the union of every rank's edges

try:
    from mpi4py import MPI

    same = MPI.COMM_WORLD.allgather(clf.coef_.tobytes())
    assert all(s == same[0] for s in same), "the ranks' LogisticRegression models differ"
    same = MPI.COMM_WORLD.allgather(forest.nodes_threshold_.tobytes())
    assert all(s == same[0] for s in same), "the ranks' forests differ"
    same = MPI.COMM_WORLD.allgather(unseeded.cluster_centers_.tobytes())
    assert all(s == same[0] for s in same), "the ranks' KMeans models with random_state=None differ"
except ImportError:
    pass

if rank == 0:
    print(f"{size} ranks")
    print("KMeans centers:\n", np.round(km.cluster_centers_, 4), "\ninertia", km.inertia_)
    print("LinearRegression coef", np.round(lr.coef_, 4), "intercept", round(float(lr.intercept_), 4))
    print("LogisticRegression coef", np.round(clf.coef_, 4), "intercept", np.round(clf.intercept_, 4))
    print("RandomForestClassifier nodes", forest.nodes_feature_.size, "importances", np.round(forest.feature_importances_, 4))
    print("PageRank top vertices", np.argsort(ranks)[::-1][:5])

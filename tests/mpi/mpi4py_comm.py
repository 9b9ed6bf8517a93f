"""mpirun -np N python tests/mpi/mpi4py_comm.py [--init]: gpuml.distributed.init_comm over
mpi4py's MPI_COMM_WORLD; with --init, gpuml.distributed.init(), which takes that path itself when
gpuml was built without MPI (a wheel: scripts/test runs it so). Each rank fits its share of
one data set; every rank must hold the same bits, and the models must match one process's fits
of all rows (the forest bit for bit). Prints "mpi4py communicator: ok" on rank 0 (ctest's
python.mpi4py_comm looks for it)."""

import sys

import numpy as np
from mpi4py import MPI

import gpuml
import gpuml.distributed as distributed
from gpuml.cluster import KMeans
from gpuml.ensemble import RandomForestRegressor
from gpuml.linear_model import LogisticRegression

world = MPI.COMM_WORLD
seed = world.bcast(int(np.random.SeedSequence().entropy % 2**32) if world.rank == 0 else None, root=0)
rng = np.random.default_rng(seed)
n = int(rng.integers(400, 1200))
X = rng.normal(size=(n, 5)) + rng.integers(0, 3, size=(n, 1)) * 4.0
y = X @ rng.uniform(-1, 1, size=5) + 0.2 * rng.normal(size=n)
labels = (y > np.median(y)).astype(np.int64)
forest_params = dict(n_estimators=5, max_depth=7, random_state=int(rng.integers(1000)), device="cpu")

# One process's fits of all rows, before the communicator is attached.
local = {
    "logistic": LogisticRegression(tol=1e-10, max_iter=1000, device="cpu").fit(X, labels).coef_,
    "kmeans": KMeans(n_clusters=3, random_state=1, device="cpu").fit(X).cluster_centers_,
    "forest": RandomForestRegressor(**forest_params).fit(X, y).predict(X),
}

if "--init" in sys.argv:
    distributed.init(cuda=False)
    path = "init() over " + ("gpuml's MPI" if gpuml.build_info().get("mpi") else "mpi4py")
else:
    distributed.init_comm(world)
    path = "init_comm(MPI.COMM_WORLD)"
assert distributed.rank() == world.rank and distributed.size() == world.size
rows = np.array_split(np.arange(n), world.size)[world.rank]
fitted = {
    "logistic": LogisticRegression(tol=1e-10, max_iter=1000, device="cpu").fit(X[rows], labels[rows]).coef_,
    "kmeans": KMeans(n_clusters=3, random_state=1, device="cpu").fit(X[rows]).cluster_centers_,
    "forest": RandomForestRegressor(**forest_params).fit(X[rows], y[rows]).predict(X),
}
for name, value in fitted.items():
    gathered = world.allgather(value)
    assert all(np.array_equal(g, gathered[0]) for g in gathered), f"{name}: the ranks hold different bits"
# Sums regrouped by rank: the linear models within 1e-6 (L-BFGS stops within its tol), KMeans 1e-9.
np.testing.assert_allclose(fitted["logistic"], local["logistic"], rtol=1e-6, atol=1e-8)
np.testing.assert_allclose(fitted["kmeans"], local["kmeans"], rtol=1e-9, atol=1e-9)
assert np.array_equal(fitted["forest"], local["forest"]), "the forest differs from the 1-process forest"
if world.rank == 0:
    print(f"mpi4py communicator: ok ({path}, {world.size} ranks, {n} rows, seed {seed}, gpuml from {gpuml.__file__})")
sys.stdout.flush()

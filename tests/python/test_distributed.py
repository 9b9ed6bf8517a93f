"""gpuml.distributed without mpirun: rank and size before init, the NCCL form's errors, and
init() as a 1-rank MPI singleton in a subprocess (so this session's contexts stay local).
The 2-rank runs are ctest's examples.distributed.python and tests/mpi (label mpi)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

import gpuml
import gpuml.distributed as distributed

REPO_ROOT = Path(__file__).resolve().parents[2]


def test_rank_and_size_before_init():
    assert not distributed.is_initialized()
    assert distributed.rank() == 0 and distributed.size() == 1


@pytest.mark.parametrize(
    "args, error",
    [
        ((b"\0" * 128, None, None), TypeError),
        ((b"\0" * 12, 2, 0), ValueError),
        (("x" * 128, 2, 0), ValueError),
        ((b"\0" * 128, 0, 0), ValueError),
        ((b"\0" * 128, 2, 2), ValueError),
    ],
)
def test_nccl_form_checks_its_arguments(args, error):
    with pytest.raises(error):
        distributed.init(*args)
    assert not distributed.is_initialized()


@pytest.mark.skipif(gpuml.build_info().get("nccl"), reason="NCCL is built")
def test_nccl_form_is_not_built_yet():
    with pytest.raises(NotImplementedError, match="NCCL"):
        distributed.init(b"\0" * 128, 2, 1)
    with pytest.raises(NotImplementedError, match="NCCL"):
        distributed.nccl_unique_id()
    assert not distributed.is_initialized()


@pytest.mark.skipif(not gpuml.build_info().get("mpi"), reason="gpuml built without MPI")
def test_init_as_one_rank_attaches_the_cpu_context():
    # One process: the fit under the communicator equals a fit of the same rows without one.
    script = """
import numpy as np, gpuml.distributed as d
from gpuml._context import Context
from gpuml.linear_model import LogisticRegression
rng = np.random.default_rng()
X = rng.normal(size=(300, 3)); y = (X[:, 0] + 0.5 * rng.normal(size=300) > 0).astype(int)
local = LogisticRegression(device="cpu").fit(X, y).coef_
d.init()
assert d.is_initialized() and d.rank() == 0 and d.size() == 1
dist = LogisticRegression(device="cpu").fit(X, y).coef_
assert np.array_equal(local, dist), (local, dist)  # one rank: the same bits
try:
    d.init()
except RuntimeError as e:
    assert "already" in str(e)
else:
    raise AssertionError("a second init() must raise")
print("ok")
"""
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT / "bindings" / "python"),
               OMPI_MCA_btl_vader_single_copy_mechanism="none")
    env.setdefault("GPUML_LIBRARY", gpuml.library_path)
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "ok" in done.stdout, done.stdout + done.stderr


def test_local_rank_from_the_launcher(monkeypatch):
    for name in distributed._LOCAL_RANK_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    assert distributed.local_rank() == 0
    monkeypatch.setenv("SLURM_LOCALID", "3")
    assert distributed.local_rank() == 3
    monkeypatch.setenv("OMPI_COMM_WORLD_LOCAL_RANK", "1")  # Open MPI's comes first
    assert distributed.local_rank() == 1


def test_an_attached_cuda_context_serves_cuda(monkeypatch):
    # What init() leaves on a GPU machine, without a GPU: the rank's GPU need not be device 0.
    from gpuml import _context

    class Attached:
        is_cuda, device_id = True, 1

    cpu = _context.Context("cpu")
    monkeypatch.setattr(_context, "_distributed_cpu", cpu)
    monkeypatch.setattr(_context, "_distributed_cuda", Attached)
    for device in ("cuda", "cuda:1"):
        assert _context.get_context(device) is Attached
    for device in ("cpu", "auto"):  # host inputs keep to the CPU context, as before CUDA could be attached
        assert _context.get_context(device) is cpu
    assert _context.distributed_context() is Attached
    monkeypatch.setattr(_context, "_distributed_cpu", None)
    assert _context.get_context("auto") is Attached  # only a CUDA context attached (the NCCL form)

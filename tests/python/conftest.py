"""Shared pytest setup for gpuml's Python tests.

- Puts the repository's bindings/python (the gpuml package) and datasets/ on sys.path, so the
  tests run against this checkout (set GPUML_LIBRARY to pick the libgpuml.so to load).
- DEVICES: the devices every device-parametrized test runs on: "cpu" always, and "cuda" when
  gpuml reports a CUDA device. With GPUML_REQUIRE_CUDA=1, a missing CUDA device is an error,
  and so is every test that would skip for want of CUDA (cuda_or_skip).
- rng: a NumPy Generator seeded freshly for each test; the seed is printed (pytest shows it
  when the test fails) and GPUML_TEST_SEED=<seed> replays it.
"""

import os
import secrets
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
for _path in (REPO_ROOT / "datasets", REPO_ROOT / "bindings" / "python"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

import gpuml  # noqa: E402  (needs the sys.path entries above)

REQUIRE_CUDA = os.environ.get("GPUML_REQUIRE_CUDA", "") == "1"
CUDA_DEVICE_COUNT = gpuml.cuda_device_count()

if REQUIRE_CUDA and CUDA_DEVICE_COUNT == 0:
    raise RuntimeError(
        "GPUML_REQUIRE_CUDA=1 but gpuml reports no CUDA device "
        f"(library {gpuml.library_path}, build info {gpuml.build_info()})"
    )

DEVICES = ["cpu"] + (["cuda"] if CUDA_DEVICE_COUNT > 0 else [])


def cuda_or_skip(reason):
    """Skips a test that needs CUDA (or a CUDA package); fails instead under GPUML_REQUIRE_CUDA=1."""
    if REQUIRE_CUDA:
        pytest.fail(f"GPUML_REQUIRE_CUDA=1 but: {reason}")
    pytest.skip(reason)


def pytest_report_header(config):
    return [
        f"gpuml {gpuml.__version__}, library {gpuml.library_version} at {gpuml.library_path}",
        f"gpuml devices under test: {DEVICES} (build info: {gpuml.build_info()})",
    ]


@pytest.fixture(params=DEVICES)
def device(request):
    return request.param


@pytest.fixture
def seed():
    value = int(os.environ.get("GPUML_TEST_SEED", secrets.randbits(32)))
    print(f"random seed: {value} (replay with GPUML_TEST_SEED={value})")
    return value


@pytest.fixture
def rng(seed):
    return np.random.default_rng(seed)


def on_threads(n_ranks, rank):
    """rank(r) on n_ranks threads; their results in rank order, or the first error raised."""
    results, errors = [None] * n_ranks, []

    def run(r):
        try:
            results[r] = rank(r)
        except BaseException as e:  # noqa: BLE001 - raised below, in the test's thread
            errors.append(e)

    threads = [threading.Thread(target=run, args=(r,)) for r in range(n_ranks)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    assert not errors, errors
    return results

"""The gpuml package itself: loading the library, build information, and the data set loader."""

import os
import subprocess
import sys

import numpy as np
import pytest
from sklearn.exceptions import NotFittedError

from conftest import REPO_ROOT

import gpuml
from gpuml import _lib


def _import_in_subprocess(env_overrides):
    env = dict(os.environ, **env_overrides)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT / "bindings" / "python"), env.get("PYTHONPATH", "")])
    return subprocess.run([sys.executable, "-c", "import gpuml"], env=env, capture_output=True, text=True)


def test_missing_library_is_a_clear_import_error(tmp_path):
    missing = tmp_path / "libgpuml.so"
    result = _import_in_subprocess({"GPUML_LIBRARY": str(missing)})
    assert result.returncode != 0
    assert "ImportError" in result.stderr and str(missing) in result.stderr


def test_a_library_that_is_not_gpuml_is_a_clear_import_error(tmp_path):
    # Any shared library without gpuml's symbols: the C library Python itself links to.
    import ctypes.util

    libc = ctypes.util.find_library("c")
    if libc is None:
        pytest.skip("no C library found to stand in for a wrong library")
    result = _import_in_subprocess({"GPUML_LIBRARY": libc})
    assert result.returncode != 0
    assert "ImportError" in result.stderr and "gpuml_" in result.stderr


def test_build_info_and_versions():
    info = gpuml.build_info()
    assert info["abi_version"] == _lib.EXPECTED_ABI_VERSION
    assert info["version"] == gpuml.library_version
    assert isinstance(info["cuda"], bool)
    assert gpuml.cuda_device_count() == info["cuda_devices"]
    if not info["cuda"]:
        assert gpuml.cuda_device_count() == 0
    assert os.path.exists(gpuml.library_path)


def test_check_maps_every_status():
    expected = {
        _lib.ERROR_INVALID_ARGUMENT: ValueError,
        _lib.ERROR_NOT_FITTED: NotFittedError,
        _lib.ERROR_OUT_OF_MEMORY: MemoryError,
        _lib.ERROR_CUDA: RuntimeError,
        _lib.ERROR_UNSUPPORTED: NotImplementedError,
        _lib.ERROR_IO: OSError,
        _lib.ERROR_INTERNAL: RuntimeError,
        _lib.ERROR_NOT_CONVERGED: RuntimeError,
    }
    _lib.check(_lib.OK)  # success raises nothing
    for status, exception in expected.items():
        with pytest.raises(exception):
            _lib.check(status)


# ---- the steel plates loader -----------------------------------------------------------------


def test_steel_plates_loader():
    from steel_plates import CLASS_COLUMNS, load_steel_plates

    try:
        X, y, class_names = load_steel_plates()
    except FileNotFoundError as e:
        pytest.skip(f"steel plates data set missing: {e}")
    assert X.shape == (1941, 27) and X.dtype == np.float64
    assert np.isfinite(X).all()
    assert class_names == CLASS_COLUMNS
    # Class sizes as documented with the data set (shared/datasets/README.md).
    assert np.bincount(y).tolist() == [158, 190, 391, 72, 55, 402, 673]


def test_steel_plates_checksum_mismatch(tmp_path, rng):
    from steel_plates import csv_path, load_steel_plates

    if not os.path.isfile(csv_path()):
        pytest.skip("steel plates data set missing")
    data = bytearray(open(csv_path(), "rb").read())
    # Change one digit somewhere after the header: same shape, different bytes.
    digits = [i for i in range(data.index(b"\n"), len(data)) if chr(data[i]).isdigit()]
    position = digits[rng.integers(len(digits))]
    data[position] = ord("1") if data[position] != ord("1") else ord("2")
    altered = tmp_path / "steel_plates_faults.csv"
    altered.write_bytes(bytes(data))
    with pytest.raises(ValueError, match="SHA-256"):
        load_steel_plates(str(altered))

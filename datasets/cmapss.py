"""Loader for NASA's C-MAPSS turbofan data set, subset FD001 (Saxena and Goebel, 2008; U.S. Government work).

100 engines run to failure for training and 100 engines cut short for testing; each row is one
cycle of one engine: unit, cycle, 3 operational settings and 21 sensors (space separated).
The files are read from ``<repository>/../shared/datasets/cmapss-fd001/``, or from
``$GPUML_DATASETS/cmapss-fd001/`` when GPUML_DATASETS is set. Their SHA-256 digests are checked,
so a changed file is an error rather than silently different results.

    from cmapss import load_cmapss_fd001
    X, y, X_test, y_test = load_cmapss_fd001()

The task is regression of the remaining useful life (RUL, in cycles).
"""

import os

import numpy as np

try:  # imported as part of a package, or with datasets/ on sys.path
    from ._files import datasets_dir, sha256
except ImportError:
    from _files import datasets_dir, sha256

FOLDER = "cmapss-fd001"
SHA256 = {
    "train_FD001.txt": "963b5e22825b34d8b21c69e1aeb4af3e647050eb672ee8834ba4b5d91d2de0f8",
    "test_FD001.txt": "3cda7109ce17bafb5443f2ac926cfcf88154b941b8c4cf95eb55d1ddd6f52851",
    "RUL_FD001.txt": "a19c8ec94931949d0485bdc35118206e9c81c4547b422efb9cf86f4ceddbceca",
}
FEATURE_NAMES = tuple(f"setting_{i}" for i in range(1, 4)) + tuple(f"sensor_{i}" for i in range(1, 22))
N_COLUMNS = 2 + len(FEATURE_NAMES)  # unit, cycle, then the features
N_UNITS = 100


def _checked_path(folder, name):
    path = os.path.join(folder, name)
    if not os.path.isfile(path):
        raise FileNotFoundError(
            f"C-MAPSS file not found at {path}; set GPUML_DATASETS to the folder that holds {FOLDER}/{name}"
        )
    actual = sha256(path)
    if actual != SHA256[name]:
        raise ValueError(f"{path} has SHA-256 {actual}, expected {SHA256[name]}: the file is not the expected data set")
    return path


def _read_cycles(path):
    """(unit int64, cycle int64, features float64 (n, 24)) of a train or test file."""
    values = np.loadtxt(path, dtype=np.float64, ndmin=2)
    if values.shape[1] != N_COLUMNS:
        raise ValueError(f"{path}: expected {N_COLUMNS} columns, got {values.shape[1]}")
    unit, cycle = values[:, 0].astype(np.int64), values[:, 1].astype(np.int64)
    if not (np.array_equal(unit, values[:, 0]) and np.array_equal(cycle, values[:, 1])):
        raise ValueError(f"{path}: unit or cycle numbers are not integers")
    if not np.array_equal(np.unique(unit), np.arange(1, N_UNITS + 1)):
        raise ValueError(f"{path}: expected units 1..{N_UNITS}")
    return unit, cycle, np.ascontiguousarray(values[:, 2:])


def _last_cycle_per_unit(unit, cycle):
    """Max cycle of each unit, indexed by unit number (index 0 unused)."""
    last = np.zeros(N_UNITS + 1, dtype=np.int64)
    np.maximum.at(last, unit, cycle)
    return last


def load_cmapss_fd001(folder=None):
    """Returns (X, y, X_test, y_test).

    X: float64 (20631, 24), every training cycle's 3 settings and 21 sensors (FEATURE_NAMES).
    y: float64 (20631,), its remaining useful life: the unit's last cycle minus this cycle (the
       training engines run until failure).
    X_test: float64 (100, 24), the last recorded cycle of each test unit, in unit order.
    y_test: float64 (100,), the true remaining useful life of each test unit (RUL_FD001.txt).
    Raises FileNotFoundError when a file is missing and ValueError when a checksum or the contents
    are not the expected ones.
    """
    folder = folder or os.path.join(datasets_dir(), FOLDER)
    train_path = _checked_path(folder, "train_FD001.txt")
    test_path = _checked_path(folder, "test_FD001.txt")
    rul_path = _checked_path(folder, "RUL_FD001.txt")

    unit, cycle, X = _read_cycles(train_path)
    y = (_last_cycle_per_unit(unit, cycle)[unit] - cycle).astype(np.float64)

    test_unit, test_cycle, test_features = _read_cycles(test_path)
    last = _last_cycle_per_unit(test_unit, test_cycle)
    is_last = test_cycle == last[test_unit]
    order = np.argsort(test_unit[is_last], kind="stable")
    X_test = np.ascontiguousarray(test_features[is_last][order])
    if X_test.shape[0] != N_UNITS:
        raise ValueError(f"{test_path}: expected one last cycle per unit, got {X_test.shape[0]} rows")

    y_test = np.loadtxt(rul_path, dtype=np.float64, ndmin=1)
    if y_test.shape != (N_UNITS,):
        raise ValueError(f"{rul_path}: expected {N_UNITS} values, got shape {y_test.shape}")
    return X, y, X_test, y_test

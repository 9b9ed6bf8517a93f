"""Loader for the Steel Plates Faults data set (UCI, Semeion; CC BY 4.0).

1,941 steel plates, 27 numeric features, and one of 7 fault classes given as one-hot columns.
The CSV is read from ``<repository>/../shared/datasets/steel-plates-faults/steel_plates_faults.csv``,
or from ``$GPUML_DATASETS/steel-plates-faults/steel_plates_faults.csv`` when GPUML_DATASETS is set.
Its SHA-256 is checked, so a changed file is an error rather than silently different results.

    from steel_plates import load_steel_plates
    X, y, class_names = load_steel_plates()
"""

import csv
import os

import numpy as np

try:  # imported as part of a package, or with datasets/ on sys.path
    from ._files import datasets_dir, sha256
except ImportError:
    from _files import datasets_dir, sha256

SHA256 = "20825a4f48de8fd9aba03200093a0bcf79091e7151788573c04ac374215c52b2"
RELATIVE_PATH = os.path.join("steel-plates-faults", "steel_plates_faults.csv")
N_FEATURES = 27
CLASS_COLUMNS = (
    "Pastry_Fault",
    "Z_Scratch_Fault",
    "K_Scatch_Fault",  # (sic: the data set's own spelling)
    "Stains_Fault",
    "Dirtiness_Fault",
    "Bumps_Fault",
    "Other_Faults",
)


def csv_path():
    return os.path.join(datasets_dir(), RELATIVE_PATH)


def load_steel_plates(path=None):
    """Returns (X, y, class_names).

    X: float64 array (1941, 27); y: int64 class index in 0..6 (the position of the row's one-hot
    fault column); class_names: tuple of the 7 fault column names, in class-index order.
    Raises FileNotFoundError when the file is missing and ValueError when its checksum or
    contents are not the expected ones.
    """
    path = path or csv_path()
    if not os.path.isfile(path):
        raise FileNotFoundError(
            f"steel plates data set not found at {path}; set GPUML_DATASETS to the folder that holds "
            f"{RELATIVE_PATH}"
        )
    actual = sha256(path)
    if actual != SHA256:
        raise ValueError(f"{path} has SHA-256 {actual}, expected {SHA256}: the file is not the expected data set")

    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    header, body = rows[0], [r for r in rows[1:] if r]
    if len(header) != N_FEATURES + len(CLASS_COLUMNS) or tuple(header[N_FEATURES:]) != CLASS_COLUMNS:
        raise ValueError(f"{path}: unexpected header {header}")
    values = np.array(body, dtype=np.float64)
    X = np.ascontiguousarray(values[:, :N_FEATURES])
    one_hot = values[:, N_FEATURES:]
    if not np.all((one_hot == 0) | (one_hot == 1)) or not np.all(one_hot.sum(axis=1) == 1):
        raise ValueError(f"{path}: the fault columns are not one-hot")
    y = one_hot.argmax(axis=1).astype(np.int64)
    return X, y, CLASS_COLUMNS


def feature_names(path=None):
    """The 27 feature column names."""
    with open(path or csv_path(), newline="") as f:
        return tuple(next(csv.reader(f))[:N_FEATURES])

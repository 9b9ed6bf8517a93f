"""The ELPV data set: 2,624 electroluminescence images (300 x 300, 8-bit) of solar cells cut from
photovoltaic modules, each with an expert's defect probability (0, 1/3, 2/3 or 1) and the cell
type (monocrystalline or polycrystalline), as shipped by the PyPI package ``elpv-dataset``.

``load_elpv`` turns the images into a feature table a tree or linear model can use:
  - the image downsampled to 16 x 16 by block means (256 features, normalized to [0, 1]);
  - texture statistics of the whole cell: mean, standard deviation, the 5/25/50/75/95th
    percentiles, the fraction of dark pixels (below half the cell's median), the mean and
    standard deviation of the gradient magnitude, and the spread of the row and column means
    (cracks and dark regions show there);
  - the cell type (1 for monocrystalline).
Labels: ``binary`` (defective = probability >= 0.5, the usual benchmark task) or ``four`` (the four
probability levels as classes 0..3).
"""

import numpy as np

LABELINGS = ("binary", "four")
DOWNSAMPLED = 16


def available():
    """Whether the elpv-dataset package (which ships the images) is importable."""
    try:
        import elpv_dataset.utils  # noqa: F401
    except ImportError:
        return False
    return True


def _block_means(images, size):
    n, h, w = images.shape
    bh, bw = h // size, w // size
    cropped = images[:, : bh * size, : bw * size].astype(np.float32)
    return cropped.reshape(n, size, bh, size, bw).mean(axis=(2, 4))


def _texture(images):
    x = images.astype(np.float32) / 255.0
    flat = x.reshape(len(x), -1)
    percentiles = np.percentile(flat, [5, 25, 50, 75, 95], axis=1).T
    median = percentiles[:, 2:3]
    dark = (flat < 0.5 * median).mean(axis=1, keepdims=True)
    gy, gx = np.gradient(x, axis=(1, 2))
    magnitude = np.sqrt(gx * gx + gy * gy).reshape(len(x), -1)
    rows, cols = x.mean(axis=2), x.mean(axis=1)
    return np.hstack(
        [
            flat.mean(axis=1, keepdims=True),
            flat.std(axis=1, keepdims=True),
            percentiles,
            dark,
            magnitude.mean(axis=1, keepdims=True),
            magnitude.std(axis=1, keepdims=True),
            rows.std(axis=1, keepdims=True),
            cols.std(axis=1, keepdims=True),
        ]
    )


def feature_names():
    pixels = [f"pixel_{r}_{c}" for r in range(DOWNSAMPLED) for c in range(DOWNSAMPLED)]
    texture = [
        "mean", "std", "p05", "p25", "p50", "p75", "p95", "dark_fraction",
        "gradient_mean", "gradient_std", "row_mean_std", "column_mean_std",
    ]
    return tuple(pixels + texture + ["monocrystalline"])


def load_elpv(labels="binary", batch=256):
    """Returns (X, y, class_names, probabilities).

    X: float32 (2624, 269) features (see the module docstring); y: int64 classes; class_names:
    ("functional", "defective") or the four probability levels; probabilities: float64, the
    experts' defect probabilities. Raises ImportError without the elpv-dataset package and
    ValueError for an unknown labeling.
    """
    if labels not in LABELINGS:
        raise ValueError(f"labels must be one of {LABELINGS}, got {labels!r}")
    from elpv_dataset.utils import load_dataset

    images, probabilities, types = load_dataset()
    parts = []
    for start in range(0, len(images), batch):  # bounded float32 temporaries
        chunk = images[start : start + batch]
        small = _block_means(chunk, DOWNSAMPLED).reshape(len(chunk), -1) / 255.0
        parts.append(np.hstack([small, _texture(chunk)]))
    mono = (np.asarray(types) == "mono").astype(np.float32)[:, None]
    X = np.ascontiguousarray(np.hstack([np.vstack(parts), mono]), dtype=np.float32)
    probabilities = np.asarray(probabilities, dtype=np.float64)
    if labels == "binary":
        y = (probabilities >= 0.5).astype(np.int64)
        names = ("functional", "defective")
    else:
        y = np.rint(probabilities * 3).astype(np.int64)
        names = ("p=0", "p=1/3", "p=2/3", "p=1")
    return X, y, names, probabilities

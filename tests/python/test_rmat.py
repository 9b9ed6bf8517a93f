"""datasets/rmat.py: the NumPy and torch generators draw the same R-MAT distribution."""

import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "datasets"))

from rmat import rmat, rmat_torch  # noqa: E402


def _bit_means(ids, scale):
    """The share of ids with each bit set, most significant first: c + d (src) or b + d (dst) per level."""
    return np.array([((ids >> (scale - 1 - level)) & 1).mean() for level in range(scale)])


def test_numpy_generator_levels():
    scale, a, b, c, d = 12, 0.57, 0.19, 0.19, 0.05
    src, dst = rmat(scale, 16, seed=np.random.default_rng().integers(1 << 30))
    assert len(src) == 16 << scale and src.min() >= 0 and src.max() < 1 << scale
    # 65536 draws a level: a share's standard error is ~0.0017; 0.01 is ~6 of them.
    np.testing.assert_allclose(_bit_means(src, scale), c + d, atol=0.01)
    np.testing.assert_allclose(_bit_means(dst, scale), b + d, atol=0.01)
    both = ((src >> (scale - 1)) & 1) & ((dst >> (scale - 1)) & 1)
    assert abs(both.mean() - d) < 0.01  # the bottom-right quadrant at the first level


def test_torch_generator_matches_the_distribution():
    torch = pytest.importorskip("torch")
    device = "cuda" if torch.cuda.is_available() else "cpu"
    scale, b, c, d = 12, 0.19, 0.19, 0.05
    src, dst = rmat_torch(scale, 16, seed=int(np.random.default_rng().integers(1 << 30)), device=device, chunk=1 << 14)
    src, dst = src.cpu().numpy(), dst.cpu().numpy()
    assert len(src) == 16 << scale and src.min() >= 0 and src.max() < 1 << scale
    np.testing.assert_allclose(_bit_means(src, scale), c + d, atol=0.01)  # as the NumPy generator's
    np.testing.assert_allclose(_bit_means(dst, scale), b + d, atol=0.01)
    both = ((src >> (scale - 1)) & 1) & ((dst >> (scale - 1)) & 1)
    assert abs(both.mean() - d) < 0.01
    with pytest.raises(ValueError, match="scale"):
        rmat_torch(-1)

"""R-MAT graph generator (Chakrabarti, Zhan and Faloutsos, 2004), vectorized with NumPy.

A graph of 2**scale vertices and edge_factor * 2**scale directed edges. Each edge picks its
(src, dst) cell of the adjacency matrix by descending `scale` levels of a 2 x 2 recursive split,
choosing the quadrant top-left / top-right / bottom-left / bottom-right with probabilities
a, b, c, d (the Graph500 values 0.57, 0.19, 0.19, 0.05 by default). The result has a power-law
degree distribution, duplicate edges and self-loops (kept: PageRank counts duplicates as
repeated edges), and vertices with no edges at all. Vertex ids are not scrambled, so low ids are
the hubs.

    from rmat import rmat
    src, dst = rmat(scale=22, edge_factor=16, seed=0)   # 4.2M vertices, 67M edges, int64

The edges are generated in chunks (bounded memory); the result depends only on the arguments.
`rmat_torch` draws the same distribution with torch on a device (a different graph: another
generator), for scales whose NumPy draws take minutes (scale 24: 86 s; on a GPU, about a second).
"""

import numpy as np

__all__ = ["rmat", "rmat_torch"]


def _check(scale, edge_factor, a, b, c, d):
    if not (isinstance(scale, (int, np.integer)) and 0 <= scale <= 40):
        raise ValueError(f"scale must be an integer in [0, 40], got {scale!r}")
    if edge_factor < 0:
        raise ValueError(f"edge_factor must be >= 0, got {edge_factor}")
    probabilities = np.array([a, b, c, d], dtype=np.float64)
    if np.any(probabilities < 0) or not np.isclose(probabilities.sum(), 1.0):
        raise ValueError(f"a, b, c, d must be non-negative and sum to 1, got {a}, {b}, {c}, {d}")


def _descend(src, dst, scale, a, b, c, draw, chunk):
    """Sets each edge's bits level by level: src and dst (NumPy arrays or torch tensors of zeros)
    in chunks, draw(count) giving uniforms in [0, 1)."""
    ab, abc = a + b, a + b + c
    m = len(src)
    for start in range(0, m, chunk):
        stop = min(m, start + chunk)
        s = src[start:stop]
        t = dst[start:stop]
        for level in range(scale):
            r = draw(stop - start)
            bit = 1 << (scale - 1 - level)
            s |= (r >= ab) * bit  # bottom half: c or d
            t |= (((r >= a) & (r < ab)) | (r >= abc)) * bit  # right half: b or d


def rmat(scale, edge_factor=16, a=0.57, b=0.19, c=0.19, d=0.05, seed=0, chunk=1 << 22):
    """Returns (src, dst): two int64 arrays of edge_factor * 2**scale vertex ids in [0, 2**scale)."""
    _check(scale, edge_factor, a, b, c, d)
    m = int(edge_factor) * (1 << int(scale))
    src = np.zeros(m, dtype=np.int64)
    dst = np.zeros(m, dtype=np.int64)
    rng = np.random.default_rng(seed)
    # 24-bit draws: ample for 4 quadrants
    _descend(src, dst, int(scale), a, b, c, lambda count: rng.random(count, dtype=np.float32), chunk)
    return src, dst


def rmat_torch(scale, edge_factor=16, a=0.57, b=0.19, c=0.19, d=0.05, seed=0, device="cuda", chunk=1 << 26):
    """rmat's distribution drawn with torch on `device`: (src, dst) as int64 tensors there."""
    import torch

    _check(scale, edge_factor, a, b, c, d)
    m = int(edge_factor) * (1 << int(scale))
    src = torch.zeros(m, dtype=torch.int64, device=device)
    dst = torch.zeros(m, dtype=torch.int64, device=device)
    generator = torch.Generator(device=device)
    generator.manual_seed(seed)
    _descend(src, dst, int(scale), a, b, c, lambda count: torch.rand(count, generator=generator, device=device), chunk)
    return src, dst

"""A large synthetic TF-IDF-like sparse data set with a binary label, vectorized with NumPy.

Rows are documents of about `nnz_per_row` distinct terms out of `n_features` (default 2**18, as a
hashing vectorizer's): each row draws terms independently from a Zipf-like law over the columns,
the continuous power law of density ~ x**-zipf_exponent on [1, n_features + 1) floored to ranks
(so P(rank r) ~ 1 / (r + 1)**zipf_exponent for large r, and a draw is one closed-form inverse-CDF
step; ranks are scattered over the column ids by a fixed permutation, as hashing does). Repeated draws of a term add up to its count. Enough draws are
made that the expected number of distinct terms is `nnz_per_row` (the row lengths are Poisson).
Values are TF-IDF as scikit-learn's TfidfVectorizer(sublinear_tf=True) computes them, with the
document frequencies the Zipf law implies: (1 + log count) * (1 + log(1 / P(term in a row))),
each row scaled to unit L2 norm. All values are positive float32.

The label is a noisy sparse linear rule: w has 1024 non-zero N(0, 1) weights on columns drawn from
the 16384 most frequent ones (about 5 of them per row), m = X w is standardized, and
y = 1 with probability sigmoid(4 m), so about 85% is the best accuracy a classifier can reach
(`bayes_accuracy` in the result's extras says the exact figure for the draw).

The matrix is built in chunks of CHUNK_ROWS rows, each from its own random stream of (seed, chunk
index): the result depends only on the arguments, and the first rows do not depend on n_rows.
CSR with int32 indices and indptr (int64 from 2**31 non-zeros on). 1M rows x 2**18 make about
100M non-zeros (800 MB); the build's peak is about twice that.

    from sparse_tfidf import make_sparse_tfidf
    X, y = make_sparse_tfidf(1_000_000, seed=0)   # scipy.sparse.csr_matrix float32, y int64 0/1
"""

import numpy as np
import scipy.sparse as sp

__all__ = ["make_sparse_tfidf"]

CHUNK_ROWS = 8192
SIGNAL_COLUMNS = 1024
SIGNAL_FROM_TOP = 16384
SIGNAL_STRENGTH = 4.0


class _PowerLaw:
    """The law of density ~ x**-exponent on [1, n + 1): its CDF and inverse CDF."""

    def __init__(self, exponent, n):
        self.exponent, self.top = float(exponent), float(n + 1)

    def cdf(self, x):
        if self.exponent == 1.0:
            return np.log(x) / np.log(self.top)
        power = 1.0 - self.exponent
        return np.expm1(power * np.log(x)) / np.expm1(power * np.log(self.top))

    def inverse_cdf(self, u):
        if self.exponent == 1.0:
            return np.exp(u * np.log(self.top))
        power = 1.0 - self.exponent
        return np.exp(np.log1p(u * np.expm1(power * np.log(self.top))) / power)


def _draws_for_distinct(probabilities, distinct):
    """The number L of draws whose expected number of distinct columns, sum_j 1 - (1 - p_j)^L, is `distinct`."""
    log_miss = np.log1p(-probabilities)
    low, high = float(distinct), float(distinct)
    while np.sum(-np.expm1(high * log_miss)) < distinct:
        high *= 2.0
    for _ in range(60):  # bisection: the count is increasing in L
        mid = 0.5 * (low + high)
        low, high = (mid, high) if np.sum(-np.expm1(mid * log_miss)) < distinct else (low, mid)
    return 0.5 * (low + high)


def _make_rows(rng, rows, power_law, column_of_rank, idf, coef, draws_per_row, shift):
    """One chunk: (values, column indices, non-zeros per row, margins X w) of `rows` rows."""
    n_features = column_of_rank.size
    lengths = rng.poisson(draws_per_row, size=rows)
    ranks = np.floor(power_law.inverse_cdf(rng.random(int(lengths.sum())))).astype(np.int64) - 1
    np.clip(ranks, 0, n_features - 1, out=ranks)  # rounding at the ends of [1, n_features + 1)
    keys = np.repeat(np.arange(rows, dtype=np.int64) << shift, lengths)
    keys |= column_of_rank[ranks]
    keys, term_counts = np.unique(keys, return_counts=True)  # sorted: by row, then column
    row = (keys >> shift).astype(np.int32)
    column = (keys & ((1 << shift) - 1)).astype(np.int32)
    values = (1.0 + np.log(term_counts.astype(np.float32))) * idf[column]
    norms = np.sqrt(np.bincount(row, weights=values * values, minlength=rows))
    values /= norms[row].astype(np.float32)
    counts = np.bincount(row, minlength=rows)
    margin = np.bincount(row, weights=values * coef[column], minlength=rows)
    return values, column, counts, margin


def make_sparse_tfidf(n_rows, n_features=1 << 18, nnz_per_row=100, zipf_exponent=1.0, seed=0, return_extras=False):
    """Returns (X, y): X a (n_rows, n_features) scipy.sparse.csr_matrix of float32, y an int64 0/1 array.

    With return_extras=True, returns (X, y, extras) where extras holds the generating weights
    ("coef", float64 (n_features,)) and "bayes_accuracy" (the accuracy of the true rule's
    probabilities on this draw)."""
    for name, value, lowest in (("n_rows", n_rows, 1), ("n_features", n_features, 2), ("nnz_per_row", nnz_per_row, 1)):
        if not isinstance(value, (int, np.integer)) or value < lowest:
            raise ValueError(f"{name} must be an integer >= {lowest}, got {value!r}")
    if nnz_per_row > n_features / 2:
        raise ValueError(f"nnz_per_row must be at most n_features / 2, got {nnz_per_row} for {n_features} columns")
    if not zipf_exponent > 0:
        raise ValueError(f"zipf_exponent must be > 0, got {zipf_exponent!r}")

    setup = np.random.default_rng([seed, 0, 0])
    power_law = _PowerLaw(zipf_exponent, n_features)
    edges = power_law.cdf(np.arange(1, n_features + 2, dtype=np.float64))
    rank_probability = np.diff(edges) / (edges[-1] - edges[0])
    column_of_rank = setup.permutation(n_features).astype(np.int32)
    probability = np.empty(n_features)
    probability[column_of_rank] = rank_probability
    draws_per_row = _draws_for_distinct(probability, nnz_per_row)
    # Document frequency of a column under the law: P(it is among a row's draws).
    idf = (1.0 - np.log(-np.expm1(draws_per_row * np.log1p(-probability)))).astype(np.float32)
    coef = np.zeros(n_features)
    top = min(SIGNAL_FROM_TOP, n_features)
    signal = column_of_rank[setup.choice(top, size=min(SIGNAL_COLUMNS, top), replace=False)]
    coef[signal] = setup.standard_normal(signal.size)

    law = dict(power_law=power_law, column_of_rank=column_of_rank, idf=idf, coef=coef,
               draws_per_row=draws_per_row, shift=int(n_features - 1).bit_length())
    data, indices, counts_per_row, margins = [], [], [], []
    for chunk, start in enumerate(range(0, n_rows, CHUNK_ROWS)):
        rows = min(CHUNK_ROWS, n_rows - start)
        # Always a whole chunk from its stream, then cut: the rows do not depend on n_rows.
        values, column, counts, margin = _make_rows(np.random.default_rng([seed, 1, chunk]), CHUNK_ROWS, **law)
        kept = int(counts[:rows].sum())
        values, column, counts, margin = values[:kept], column[:kept], counts[:rows], margin[:rows]
        data.append(values)
        indices.append(column)
        counts_per_row.append(counts)
        margins.append(margin)

    nnz = sum(part.size for part in data)
    index_dtype = np.int32 if nnz < 2**31 else np.int64
    indptr = np.zeros(n_rows + 1, dtype=index_dtype)
    np.cumsum(np.concatenate(counts_per_row), out=indptr[1:])
    X = sp.csr_matrix((np.concatenate(data), np.concatenate(indices).astype(index_dtype, copy=False), indptr),
                      shape=(n_rows, n_features))
    X.has_sorted_indices = True

    # Standardized by the margins of rows of their own stream, so that y's first rows do not
    # depend on n_rows either.
    calibration = _make_rows(np.random.default_rng([seed, 0, 1]), CHUNK_ROWS, **law)[3]
    spread = calibration.std()
    margin = (np.concatenate(margins) - calibration.mean()) / (spread if spread > 0 else 1.0)
    probability_one = 1.0 / (1.0 + np.exp(-SIGNAL_STRENGTH * margin))
    y = (np.random.default_rng([seed, 0, 2]).random(n_rows) < probability_one).astype(np.int64)
    if not return_extras:
        return X, y
    bayes = float(np.mean((probability_one > 0.5) == (y == 1)))
    return X, y, dict(coef=coef, bayes_accuracy=bayes)

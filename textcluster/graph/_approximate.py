"""The approximate neighbour search of :func:`textcluster.graph.knn_graph` (``method=
"approximate"``, and ``"auto"`` on large data): pynndescent's NN-descent (Dong, Charikar & Li,
WWW 2011) over the unit rows, cosine distance. pynndescent is the ``large`` extra: it takes
scipy sparse rows as they are, with no projection to a dense low-rank space first (whose
neighbours differ: on 30,000 documents of real text, each row's 30 nearest in a 256-dimensional
SVD held 43 % of its 5 exact neighbours), and its time grows about as n^1.1 where the exact
search's grows as n^2.1. The tenth of the rows it serves worst (``EXACT_SHARE``: the least
similar k-th neighbour found; at most ``EXACT_MAX_ROWS``) are then searched exactly.
"""

import numbers
import warnings
from typing import Any, NamedTuple

import numpy as np
import scipy.sparse as sp

from .._compat import require
from .._errors import InvalidInputError, MissingDependencyError
from .._threads import n_threads

KNN_METHODS = ("auto", "exact", "approximate")

# NN-descent's settings: SEARCH_NEIGHBORS neighbours per row (at least k + 1), random projection
# trees and candidates. Share of the exact graph's edges found (k = 5) on the 107,332 documents of
# benchmarks/bench_knn_graph.py: pynndescent's defaults (30 neighbours, 10 trees) 0.888; 32 trees
# and 60 candidates 0.923; 64 trees and 60 candidates 0.937; 50 neighbours 0.938 (NN-descent's
# work grows as their square). More iterations did not help (30,000 documents: converged after 8).
SEARCH_NEIGHBORS = 30
SEARCH_OPTIONS = {"n_trees": 64, "max_candidates": 60}
# The rows NN-descent serves worst are those whose neighbours are least similar (short, rare-
# worded documents: on the 107,332 documents, rows whose 5th neighbour found has cosine < 0.2
# kept 0.86 of their exact neighbours, the others 0.96), and one more pass over neighbours of
# neighbours does not reach them (0.937 -> 0.938). EXACT_SHARE of the rows, those with the least
# similar k-th neighbour found, are searched exactly instead, at most EXACT_MAX_ROWS of them: at
# most a tenth of the exact search's time, and time linear in n (each row searched is compared
# with all n), so that the whole search stays near n^1.1.
EXACT_SHARE, EXACT_MAX_ROWS = 0.1, 10_000


def approximate_search(method, n, random_state, threshold):
    """None for the exact search of ``n`` rows, else their approximate search (a callable):
    ``method`` "approximate", or "auto" from ``threshold`` rows on when pynndescent is
    installed (when it is not: a warning, and the exact search)."""
    if method not in KNN_METHODS:
        raise InvalidInputError(f"method={method!r} is not supported; use one of "
                                f"{', '.join(KNN_METHODS)}")
    if method == "exact" or (method == "auto" and n < threshold):
        return None
    if not (random_state is None or isinstance(random_state, numbers.Integral)):
        raise InvalidInputError(f"random_state={random_state!r} must be an integer or None")
    try:
        module = require("pynndescent", extra="large", feature="the approximate kNN graph")
    except MissingDependencyError as error:
        if method == "approximate":
            raise
        warnings.warn(f"{n} rows: exact kNN graph, O(n²) time; {error}", stacklevel=4)
        return None
    return ApproximateSearch(module, random_state)


class ApproximateSearch(NamedTuple):
    """Rows, columns and cosine similarities of (nearly) the k nearest neighbours of each unit
    row of ``Y``, self excluded, nearest first: ``ApproximateSearch(pynndescent, seed)(Y, k)``.
    The same seed gives the same neighbours."""

    module: Any
    seed: int | None

    def __call__(self, Y, k):
        m = Y.shape[0]
        index = self.module.NNDescent(Y, metric="cosine",
                                      n_neighbors=min(max(SEARCH_NEIGHBORS, k + 1), m),
                                      random_state=self.seed, n_jobs=n_threads(),
                                      **SEARCH_OPTIONS)
        found, _ = index.neighbor_graph
        other = (found >= 0) & (found != np.arange(m)[:, None])  # -1: no neighbour found
        keep = other & (np.cumsum(other, axis=1) <= k)
        rows, cols = np.nonzero(keep)
        cols = found[rows, cols].astype(np.intp)
        return rows.astype(np.intp), cols, pair_cosines(Y, rows, cols)


def weakest_rows(rows, sims, m, k):
    """The ``min(ceil(EXACT_SHARE · m), EXACT_MAX_ROWS)`` rows (sorted) whose k-th neighbour
    found is least similar (rows with fewer than k neighbours found first), from the search's
    ``rows`` and ``sims``."""
    kth = np.full(m, np.inf)
    np.minimum.at(kth, rows, sims)
    kth[np.bincount(rows, minlength=m) < k] = -np.inf
    size = min(m, int(np.ceil(EXACT_SHARE * m)), EXACT_MAX_ROWS)
    return np.sort(np.argpartition(kth, size - 1)[:size]) if size else np.empty(0, np.intp)


def replace_rows(replaced, found, new):
    """The ``(rows, cols, sims)`` of ``found`` with the entries of the rows ``replaced`` taken
    from ``new`` instead."""
    keep = ~np.isin(found[0], replaced)
    return tuple(np.concatenate([a[keep], b]) for a, b in zip(found, new))


def pair_cosines(Y, rows, cols, chunk=2**16):
    """The dot products (float64) of rows ``rows[i]`` and ``cols[i]`` of ``Y``, for each i."""
    out = np.empty(rows.size)
    for s in range(0, rows.size, chunk):
        a, b = Y[rows[s:s + chunk]], Y[cols[s:s + chunk]]
        out[s:s + chunk] = (np.asarray(a.multiply(b).sum(axis=1)).ravel() if sp.issparse(a)
                            else np.einsum("ij,ij->i", a, b))
    return out


def sampled_distance_sum(Y, block_size, seed, size=3000):
    """The sum of the Euclidean distances over all pairs of unit rows of ``Y``, estimated from
    ``size`` random rows against all (Cai's ``constructW`` takes 3,000 rows among themselves)."""
    m = Y.shape[0]
    sample = np.sort(np.random.default_rng(seed).choice(m, min(size, m), replace=False))
    YT, total = (Y.T.tocsr() if sp.issparse(Y) else Y.T), 0.0
    for start in range(0, sample.size, block_size):
        S = Y[sample[start:start + block_size]] @ YT
        S = S.toarray() if sp.issparse(S) else S
        total += np.sqrt(np.maximum(2.0 - 2.0 * S, 0.0)).sum(dtype=np.float64)
    return total * m / sample.size

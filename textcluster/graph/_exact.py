"""The exact neighbour search: each row's k most similar rows, blockwise.

The similarities of a block of rows to all rows come from a sparse × sparse product: SciPy's,
or where most pairs of rows share a term (documents of a tf-idf matrix) MKL's with a dense
result (the ``fast`` extra), whose candidates near each row's k-th similarity are then summed
again as SciPy sums them, so that both give the same neighbours, similarities and order bit
for bit. Ties go to the row with the lower index.
"""

from __future__ import annotations

import numba
import numpy as np
import scipy.sparse as sp

from .._compat import mkl_sparse_product
from .._threads import each, n_threads

# Entries (block_size × n) per block. A block's similarities, their sparse intermediate and the
# top-k temporaries take about 20 bytes per entry, so this keeps the peak near 170 MB. On TDT2-sized
# data (n ≈ 9,400) the time is flat for blocks of 700-1,500 rows and grows below that.
_BLOCK_BUDGET = 2**23
# A block whose product has fewer stored entries than this fraction of its size is ranked from
# its stored entries. Measured: the 18,217 terms of a 5-class TDT2 subset (6 % stored) took
# 2.5 s instead of 9.7 s for the whole term graph; document blocks of tf-idf are mostly full and
# stay dense.
SPARSE_TOP_K = 0.25
# With MKL (the ``fast`` extra): the share of non-zero similarities (in rows spread over the
# matrix) from which its dense product and the dense ranking beat SciPy's sparse product and the
# ranking of stored entries. Measured, k = 7: 0.07 (biomedical's documents) 3.7 s dense against
# 1.4 s, 0.16 (CLUTO wap's terms) 0.63 against 0.79 s, 0.20 (AG News) 0.56 against 0.69 s,
# 0.93 (R8) 0.25 against 0.97 s; the terms of text corpora (0.001-0.06) up to 22 times slower.
DENSE_FROM = 0.15


def _knn_blocks(Y, k, block_size, want_distance_sum, queries=None):
    """Row, column and cosine similarity of the k nearest neighbours of each row of unit rows Y
    (of the rows ``queries`` only, when given).

    Also returns the sum of the Euclidean distances over all pairs when asked (else 0).
    """
    m = Y.shape[0]
    YT = Y.T.tocsr() if sp.issparse(Y) else Y.T
    n_queries = m if queries is None else queries.size
    mkl = None if want_distance_sum else _dense_similarities(
        Y if queries is None else Y[queries], YT)

    def block(start):
        stop = min(start + block_size, n_queries)
        own = np.arange(start, stop) if queries is None else queries[start:stop]
        rows = Y[start:stop] if queries is None else Y[own]
        if mkl is not None:  # the candidates, then ranked from their exact similarities
            S = mkl(rows, YT, dense=True)
            shared = S > 0  # the entries of SciPy's sparse product
            stored = np.count_nonzero(shared)
            r, c, sims = _top_k_sparse(_near_top(S, shared, min(k, m), Y, own), min(k, m), own)
            if stored >= SPARSE_TOP_K * S.size:  # listed as the dense ranking lists them
                order = np.lexsort((c, r))
                r, c, sims = r[order], c[order], sims[order]
            return own[r], c, sims, 0.0
        S = rows @ YT
        if sp.issparse(S) and S.nnz < SPARSE_TOP_K * S.shape[0] * m:
            S = S.tocsr()
            entries = _off_diagonal(S, own)
            distance_sum = _sparse_distance_sum(S, entries[1], m) if want_distance_sum else 0.0
            r, c, sims = _top_k_sparse(S, min(k, m), own, entries)
            return own[r], c, sims, distance_sum
        S = S.toarray() if sp.issparse(S) else S
        diagonal = (np.arange(own.size), own)
        distance_sum = 0.0
        if want_distance_sum:
            S[diagonal] = 1.0  # exactly: a row is at distance 0 from itself
            distance_sum = np.sqrt(np.maximum(2.0 - 2.0 * S, 0.0)).sum(dtype=np.float64)
        S[diagonal] = -np.inf  # no self loops
        r, c = _top_k(S, min(k, m))
        return own[r], c, S[r, c].astype(np.float64), distance_sum

    # blocks run in threads (the products release the GIL); two blocks in memory at once
    parts = each(block, range(0, n_queries, block_size), min(2, n_threads()))
    rows, cols, sims = ([p[i] for p in parts] for i in range(3))
    distance_sum = float(sum(p[3] for p in parts))
    rows, cols, sims = (np.concatenate(a) if a else np.empty(0) for a in (rows, cols, sims))
    found = np.isfinite(sims)  # fewer than k other non-zero rows: the self entry was picked
    return rows[found].astype(np.intp), cols[found].astype(np.intp), sims[found], distance_sum


def _dense_similarities(rows, YT):
    """MKL's sparse × sparse product with a dense result (``fast`` extra) when most of the
    similarities of ``rows`` (of unit rows Y, ``YT = Yᵀ``) to all rows are non-zero (documents
    of tf-idf; not the terms of a term graph, which are ranked from their stored entries), else
    None; judged on about 256 of the rows, spread over them (terms come in order). MKL skips
    SciPy's sparse result (its symbolic pass and its assembly): on TDT2 a block of 893 rows
    took 44 instead of 268 ms."""
    mkl = mkl_sparse_product()
    if mkl is None or not sp.issparse(rows) or rows.dtype not in (np.float32, np.float64):
        return None
    sample = rows[::max(1, rows.shape[0] // 256)] @ YT
    return mkl if sample.nnz >= DENSE_FROM * sample.shape[0] * YT.shape[1] else None


def _near_top(S, shared, k, Y, own):
    """The entries of ``S`` (MKL's similarities of the rows ``own`` of ``Y`` to all rows) that
    may be among a row's k largest other than itself, with their exact values: summed as the
    blockwise SciPy product sums them (:func:`_row_dots`), so the graph is the same bit for bit
    whichever product found them. Sparse, for :func:`_top_k_sparse`.

    A dot product of n terms summed in any order is within ``γ_n ≈ n ε / 2`` of the exact
    value times ``Σ|x_t y_t| ≤ 1`` (unit rows; ε the machine epsilon), so two sums differ by at
    most about ``n ε`` and every entry of a row's exact top k lies within ``2 n ε`` of the
    row's k-th largest entry in ``S``; the margin taken is ``3 n ε``, n the most terms of a row.
    Entries 0 (no shared term; ``shared`` is ``S > 0``, overwritten) are left out, as a sparse
    product leaves them: a row with fewer than k others is completed from them in column
    order."""
    n = S.shape[1]
    diagonal = (np.arange(own.size), own)
    S[diagonal], shared[diagonal] = -np.inf, False
    kth = np.partition(S, n - k, axis=1)[:, n - k]
    slack = 3.0 * float(np.diff(Y.indptr).max()) * float(np.finfo(S.dtype).eps)
    shared &= S >= (kth - slack)[:, None]
    r, c = np.nonzero(shared)
    sims = _row_dots(Y.indptr, Y.indices, Y.data, own[r], c)
    return sp.csr_matrix((sims, (r, c)), shape=S.shape)


@numba.njit(nogil=True, cache=True)
def _row_dots(indptr, indices, data, rows, cols):
    """``Y[rows[e]] · Y[cols[e]]`` for each e, in ``Y``'s dtype, as SciPy's CSR product sums
    it: each product rounded, then added in the order of ``rows[e]``'s terms (sorted)."""
    out = np.empty(rows.size, dtype=data.dtype)
    zero = np.zeros(1, dtype=data.dtype)[0]
    for e in range(rows.size):
        a, a_end = indptr[rows[e]], indptr[rows[e] + 1]
        b, b_end = indptr[cols[e]], indptr[cols[e] + 1]
        total = zero
        while a < a_end and b < b_end:
            if indices[a] == indices[b]:
                total += data[a] * data[b]
                a += 1
                b += 1
            elif indices[a] < indices[b]:
                a += 1
            else:
                b += 1
        out[e] = total
    return out


def _off_diagonal(S, own):
    """``(row_of, other)`` of the sparse block ``S`` of the rows ``own`` (its indices sorted
    first): the row, within the block, of each stored entry, and whether the entry is not
    that of a row with itself."""
    S.sort_indices()
    row_of = np.repeat(np.arange(S.shape[0]), np.diff(S.indptr))
    return row_of, S.indices != own[row_of]


def _sparse_distance_sum(S, other, m):
    """The sum of the Euclidean distances of the rows of the sparse block ``S`` of unit rows'
    similarities to all ``m`` rows (``other``: :func:`_off_diagonal`'s): ``√(2 − 2s)`` for each
    stored entry, √2 for each pair that shares no term, 0 from a row to itself (each distance
    in ``S``'s dtype, the sum in float64, as the dense path sums them). Measured on CLUTO
    la1's 31,472 terms (heat weights): the whole term graph in 2.7 s against 37 s with the
    dense blocks."""
    stored = np.sqrt(np.maximum(2.0 - 2.0 * S.data[other], 0.0))
    unshared = S.shape[0] * (m - 1) - np.count_nonzero(other)
    return float(stored.sum(dtype=np.float64)
                 + unshared * np.float64(np.sqrt(S.dtype.type(2.0))))


def _top_k_sparse(S, k, own, entries=None):
    """``_top_k`` of the rows of the sparse block ``S`` (the similarities of the rows ``own``
    to all), self pairs excluded, with the similarities; rows are numbered within the block
    (``entries``: :func:`_off_diagonal` of ``S``, when known). Only the stored entries are
    ranked; a row with fewer than ``k`` of them (its other neighbours have similarity 0) goes
    through the dense ``_top_k``, so the result is the same as the dense path's."""
    row_of, other = _off_diagonal(S, own) if entries is None else entries
    n_rows = S.shape[0]
    rows, cols, sims = row_of[other], S.indices[other], S.data[other]
    order = _by_row_largest_first(rows, sims)
    rows, cols, sims = rows[order], cols[order], sims[order]
    first = np.searchsorted(rows, np.arange(n_rows))
    rank = np.arange(rows.size) - first[rows]
    short = np.flatnonzero(np.bincount(rows, minlength=n_rows) < k)
    keep = (rank < k) & ~np.isin(rows, short)
    rows, cols, sims = rows[keep], cols[keep], sims[keep].astype(np.float64)
    if short.size:
        dense = S[short].toarray()
        dense[np.arange(short.size), own[short]] = -np.inf
        r, c = _top_k(dense, k)
        rows = np.concatenate([rows, short[r]])
        cols = np.concatenate([cols, c])
        sims = np.concatenate([sims, dense[r, c].astype(np.float64)])
    return rows, cols, sims


def _by_row_largest_first(rows, sims):
    """Stable order of the entries by row, then by decreasing similarity (ties keep their
    order). float32: one int64 key, the row and the value's bits made monotone (twice as fast as
    a two-key sort)."""
    if sims.dtype != np.float32:
        return np.lexsort((-sims, rows))
    bits = (sims + np.float32(0.0)).view(np.int32).astype(np.int64)  # + 0: -0.0 becomes 0.0
    bits ^= (bits >> 31) & 0x7FFFFFFF  # order of the integers = order of the values
    return np.argsort((rows.astype(np.int64) << 32) - bits, kind="stable")


def _top_k(S, k):
    """Indices (rows, cols) of the k largest entries of each row of S; ties go to lower columns."""
    n = S.shape[1]
    kth = np.partition(S, n - k, axis=1)[:, n - k, None]  # k-th largest value of each row
    mask = S >= kth
    tied_rows = np.flatnonzero(np.count_nonzero(mask, axis=1) > k)
    if tied_rows.size:
        sub, sub_kth = S[tied_rows], kth[tied_rows]
        above = sub > sub_kth
        tied = sub == sub_kth
        room = k - np.count_nonzero(above, axis=1)
        mask[tied_rows] = above | (tied & (np.cumsum(tied, axis=1) <= room[:, None]))
    return np.nonzero(mask)

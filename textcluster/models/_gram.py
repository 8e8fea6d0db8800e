"""The n × n matrices of the projective models: the document Gram matrix ``G = X Xᵀ`` (or a
kernel in its place) and AGPNMF's learned graph ``S``.

:class:`DataGram` uses ``G`` through the sparse ``X`` (``G B = X (Xᵀ B)``) and, once stored
dense, by BLAS-3 where that is cheaper; :class:`KernelGram` holds a dense kernel ``K``
(:func:`kernel_matrix`). Both give ``G B`` for a thin ``B`` and ``G S`` for an n × n ``S``. The
n × n work goes by blocks of rows (no second n × n temporary) and the n × n × n products on
``BLAS3_THREADS`` BLAS threads (:class:`BlasThreads`). The last section holds ``S``'s starts
and its blockwise update (paper 000, eq. 16), fused with the statistics the H-step and the
objective read (:mod:`textcluster.models.projective` has the models and their equations).

A sparse starting ``S`` (the kNN start, AGPNMF's default) keeps its zeros under the
multiplicative updates, so ``S`` is held on that support (:func:`support_graph`, CSC) and only
the entries of ``G`` and ``G S`` on it are computed: ``(G S)_ij = x_i · Σ_l S_lj x_l`` over the
column's own support, O(nnz(S) · non-zeros per document) per product instead of n² · n, and
no n × n array for ``G`` (the kernel ``K`` of :class:`KernelGram` is still stored).
"""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext

import numba
import numpy as np
import scipy.sparse as sp
from sklearn.utils.validation import check_array
from threadpoolctl import ThreadpoolController

from .._errors import InvalidInputError
from ..graph import knn_graph
from ._base import EPS
from .._threads import each, n_threads
from ._linalg import SparseOperator, gram_matrix

ROW_BLOCK = 256  # rows of S per step of the elementwise S-update (a few MB: stays in cache)
COLUMN_BLOCK = 64  # columns of S per sparse product X (Xᵀ S[:, J]) (S[:, J] stays in cache)
# Measured on the project's two-core machine (shared, loaded), n = 3,000–9,494, k = 30:
# a sparse × dense product ran at 1/12–1/25 of the multiply-adds per second of BLAS-3;
# the n × n × n product ran 1.3–2× faster on 2 BLAS threads than on 1, while the n × n × k
# products of the S-update ran 2.7× slower on 2 (0.71 s → 2.0–2.5 s per S-update at
# n = 9,494), so they stay on the update loop's single BLAS thread.
SPARSE_SLOWDOWN = 20.0  # BLAS-3 multiply-adds per second over sparse × dense ones
BLAS3_THREADS = 2  # BLAS threads for the n × n × n products
BLAS3_MIN_N = 2000  # below this, switching BLAS thread counts costs more than it gains


def factored_gram_pays(n: int, nnz: int) -> bool:
    """Whether ``G B = X (Xᵀ B)`` (2·nnz multiply-adds per column of ``B``, sparse) beats the
    stored dense ``G`` (n² per column, BLAS) for a corpus of ``n`` documents with ``nnz``
    non-zeros: ``n² > 2·nnz·SPARSE_SLOWDOWN``."""
    return n ** 2 > 2.0 * nnz * SPARSE_SLOWDOWN


class BlasThreads:
    """The BLAS threads of the n × n × n products: ``limit(n)`` is a context in which BLAS
    uses ``threads`` threads, for n ≥ ``min_n`` (smaller products run as they are).

    The ``ThreadpoolController`` (slow to make: it inspects the loaded libraries) is made on
    the first limit and kept."""

    def __init__(self, threads: int = BLAS3_THREADS, min_n: int = BLAS3_MIN_N) -> None:
        self.threads = threads
        self.min_n = min_n
        self._controller: ThreadpoolController | None = None

    def limit(self, n: int) -> AbstractContextManager:
        if n < self.min_n or self.threads == 1:
            return nullcontext()
        if self._controller is None:
            self._controller = ThreadpoolController()
        return self._controller.limit(limits=self.threads, user_api="blas")


BLAS3 = BlasThreads()
"""The process's BLAS thread limits for n × n × n products (one controller, made once)."""


class DataGram:
    """``G = X Xᵀ`` used through the sparse ``X``: ``G B = X (Xᵀ B)``.

    ``densify()`` stores the dense entries (n × n), which the S-update of AGPNMF reads."""

    def __init__(self, X, blas: BlasThreads = BLAS3) -> None:
        self.X = SparseOperator(X)
        self.n = X.shape[0]
        self.nnz = X.nnz if sp.issparse(X) else np.count_nonzero(X)
        self.dtype = X.dtype
        self.trace = self.X.squared_norm()
        self.entries: np.ndarray | None = None
        self.blas = blas
        self._source = X
        self._rows = X if sp.isspmatrix_csr(X) else None  # CSR rows for on_support
        self._support: tuple = ()

    def dot(self, B):
        """``G @ B`` for a thin ``B`` (n × k)."""
        return self.X.dot(self.X.tdot(B))

    def entries_on(self, S):
        """The entries of ``G`` that the S-update reads: all of them (stored by
        ``densify``) for a dense ``S``, those on its support (cached) for a sparse one."""
        return _entries_on(self, S)

    def on_support(self, S, out, own=False):
        """``out[p] = (G S)_ij`` for each stored entry ``p = (i, j)`` of the CSC ``S``
        (``own``: ``G_ij``)."""
        if self._rows is None:
            self._rows = sp.csr_matrix(self._source)
        X = self._rows
        arguments = (X.indptr, X.indices, X.data, X.shape[1])
        each(lambda span: _data_gram_columns(S.indptr, S.indices, S.data, own, *arguments,
                                              *span, out), _column_spans(S))

    def densify(self):
        """Store the dense ``G`` (:func:`~textcluster.models._linalg.gram_matrix`)."""
        self.entries = gram_matrix(self._source)
        return self.entries

    def sparse_pays(self):
        """Whether ``X (Xᵀ S)`` (2·nnz·n sparse multiply-adds) beats the dense ``G S`` (n³
        BLAS-3 ones, possible once ``G`` is stored)."""
        return self.entries is None or factored_gram_pays(self.n, self.nnz)

    def product(self, S, out):
        """``out ← G S``, by column blocks ``X (Xᵀ S[:, J])`` or with the dense ``G``,
        whichever is cheaper; returns ``Σ S ⊙ GS``."""
        if sp.issparse(S):
            self.on_support(S, out)
            return support_vdot(S, out)
        if not self.sparse_pays():
            return dense_product(self.entries, S, out, self.blas)
        quad = 0.0
        for start in range(0, S.shape[1], COLUMN_BLOCK):
            cols = slice(start, start + COLUMN_BLOCK)
            block = np.ascontiguousarray(S[:, cols])
            XtS = self.X.tdot(block)
            quad += float(np.vdot(XtS, XtS))  # ‖Xᵀ S_J‖² = Σ S_J ⊙ (G S_J)
            out[:, cols] = self.X.dot(XtS)
        return quad


class KernelGram:
    """A dense kernel matrix ``K`` (n × n) in place of ``X Xᵀ`` (paper 000, eqs. 18–21)."""

    def __init__(self, K, blas: BlasThreads = BLAS3) -> None:
        self.entries = K
        self.n = K.shape[0]
        self.dtype = K.dtype
        self.trace = float(np.trace(K, dtype=np.float64))
        self.blas = blas
        self._support: tuple = ()

    def dot(self, B):
        return self.entries @ B

    def entries_on(self, S):
        """As :meth:`DataGram.entries_on`."""
        return _entries_on(self, S)

    def on_support(self, S, out, own=False):
        """As :meth:`DataGram.on_support`, from the stored ``K``."""
        each(lambda span: _kernel_gram_columns(S.indptr, S.indices, S.data, own,
                                                self.entries, *span, out), _column_spans(S))

    def product(self, S, out):
        """``out ← K S`` (BLAS-3; on the support of a sparse ``S``); returns ``Σ S ⊙ KS``."""
        if sp.issparse(S):
            self.on_support(S, out)
            return support_vdot(S, out)
        return dense_product(self.entries, S, out, self.blas)


def dense_product(K, S, out, blas: BlasThreads = BLAS3):
    """``out ← K S`` (BLAS-3 on ``blas``'s threads); returns ``Σ S ⊙ KS``."""
    with blas.limit(len(K)):
        np.matmul(K, S, out=out)
    return blockwise_vdot(S, out)


def blockwise_vdot(A, B, rows=ROW_BLOCK):
    """``Σ A ⊙ B`` for two n × n arrays, accumulated in float64 over row blocks."""
    return float(sum(np.vdot(A[i:i + rows], B[i:i + rows]) for i in range(0, len(A), rows)))


# -- kernels (paper 000, section IV) --------------------------------------------------------
def kernel_matrix(X, kernel, degree, coef0, sigma):
    """The dense kernel between the rows of ``X`` and the width used (Gaussian only).

    ``polynomial``: ``(⟨x_i, x_j⟩ + coef0)^degree``; ``gaussian``:
    ``exp(−‖x_i − x_j‖² / (2σ²))``, σ = the mean distance between documents when None.
    Built in place from ``X Xᵀ``: one n × n array."""
    K = gram_matrix(X)
    if kernel == "polynomial":
        K += coef0
        np.power(K, degree, out=K)
        return K, None
    sq = np.diag(K).copy()
    squared_distances(K, sq, sq)
    if sigma is None:
        sigma = mean_distance(K)
    gaussian_map(K, sigma)
    return K, sigma


def cross_kernel(X, X_fit, kernel, degree, coef0, sigma):
    """The kernel of :func:`kernel_matrix` between new rows ``X`` and the fitted rows
    ``X_fit`` (dense, ``X``'s dtype), with the fitted width ``sigma``."""
    G = X @ X_fit.T
    G = G.toarray() if sp.issparse(G) else np.asarray(G)
    G = G.astype(X.dtype, copy=False)
    if kernel == "polynomial":
        return (G + coef0) ** degree
    sq_new = row_squares(X)
    sq_fit = row_squares(X_fit).astype(X.dtype)
    return gaussian_map(squared_distances(G, sq_new, sq_fit), sigma)


def squared_distances(G, sq_rows, sq_cols, rows=ROW_BLOCK):
    """``G ← ‖x_i‖² + ‖y_j‖² − 2 G_ij``, clipped at 0, in place."""
    for start in range(0, len(G), rows):
        block = G[start:start + rows]
        block *= -2.0
        block += sq_rows[start:start + rows, None]
        block += sq_cols[None, :]
        np.maximum(block, 0.0, out=block)
    return G


def mean_distance(D2, rows=ROW_BLOCK):
    """Mean Euclidean distance over pairs ``i ≠ j`` from squared distances (zero diagonal)."""
    n = len(D2)
    total = sum(float(np.sqrt(D2[i:i + rows]).sum(dtype=np.float64)) for i in range(0, n, rows))
    return total / max(n * (n - 1), 1) if total > 0 else 1.0


def gaussian_map(D2, sigma, rows=ROW_BLOCK):
    """``D2 ← exp(−D2 / (2σ²))`` in place."""
    for start in range(0, len(D2), rows):
        block = D2[start:start + rows]
        block *= -1.0 / (2.0 * sigma * sigma)
        np.exp(block, out=block)
    return D2


def row_squares(X):
    """Squared L2 norm of each row of a sparse or dense matrix."""
    if sp.issparse(X):
        return np.asarray(X.multiply(X).sum(axis=1)).ravel()
    return np.einsum("ij,ij->i", X, X)


# -- the learned graph S of AGPNMF (n × n, dense): starts and blockwise passes -----------------
def random_square(rng, n, dtype, rows=ROW_BLOCK):
    """Uniform random n × n array, drawn by rows (no float64 n × n temporary)."""
    S = np.empty((n, n), dtype=dtype)
    for start in range(0, n, rows):
        block = S[start:start + rows]
        block[...] = rng.uniform(size=block.shape)
    return S


def scale_graph(S, GS, quad, G, alpha):
    """Scale ``S`` (and ``G S``) by the scalar that best fits ``X ≈ S X`` with the ridge α."""
    statistics = graph_statistics(S, G)
    cross, squares = statistics["cross"], statistics["squares"]
    denominator = quad + alpha * squares
    if cross <= 0 or denominator <= 0:
        return quad
    c = cross / denominator
    if sp.issparse(S):
        S.data *= c
    else:
        S *= c
    GS *= c
    return quad * c * c


def neighbourhood_support(X, n_neighbors):
    """The starting ``S``: the cosine kNN graph of the documents (sparse), the neighbourhoods
    in which LLE (paper 000, eq. 10) reconstructs each document."""
    k = min(n_neighbors, X.shape[0] - 1)
    if k < 1:
        return sp.csr_matrix((X.shape[0], X.shape[0]), dtype=X.dtype)
    return knn_graph(X, k, weighting="cosine").astype(X.dtype)


def check_start_graph(graph, n, dtype):
    """A caller's starting graph S: n × n, finite, non-negative; sparse stays sparse (CSR),
    dense is copied."""
    if sp.issparse(graph):
        S = check_array(graph, accept_sparse="csr", dtype=dtype, ensure_all_finite=True)
        S = sp.csr_matrix(S)
        smallest = S.data.min() if S.nnz else 0.0
    else:
        S = check_array(graph, dtype=dtype, copy=True, ensure_all_finite=True)
        smallest = S.min()
    if S.shape != (n, n):
        raise InvalidInputError(
            f"the starting graph has shape {S.shape} but there are n={n} documents; pass an "
            "n × n matrix (one row and one column per document, in document order)"
        )
    if smallest < 0:
        raise InvalidInputError(
            f"the starting graph has negative weights (smallest {smallest:g}); use weights ≥ 0"
        )
    return S


def update_graph_rows(S, GS, G, H_rows, H, d_rows, d, gamma, alpha, beta, work):
    """``S ← S ⊙ (G + γ/2 HHᵀ) / (GS + αS + γ/4 (d_i + d_j) + β/2)`` on a block of rows.

    Paper 000, eq. 16 (a majorization step, as printed); ``d`` is ``diag(HHᵀ)``. ``GS`` (the
    block of ``G S``) is overwritten; ``work`` is scratch of the block's shape."""
    np.multiply(S, alpha, out=work)
    GS += work
    GS += (0.25 * gamma * d_rows + 0.5 * beta)[:, None]
    if gamma > 0:
        GS += (0.25 * gamma * d)[None, :]
    np.maximum(GS, EPS, out=GS)
    if gamma > 0:
        np.matmul(H_rows, H.T, out=work)
        work *= 0.5 * gamma
        work += G
        numerator = work
    else:
        numerator = G
    S *= np.divide(numerator, GS, out=GS)


def graph_step(S, GS, G, H, gamma, alpha, beta, rows=ROW_BLOCK):
    """One S-update (eq. 16) over blocks of rows, fused with what the H-step and the
    objective read from the new S: ``R H``, the degrees ``D``, ``Σ G⊙S``, ``‖S‖²``, ``Σ S``.
    For a sparse ``S``, on its support (``GS`` and ``G`` then hold the entries there)."""
    if sp.issparse(S):
        return _support_step(S, GS, G, H, gamma, alpha, beta)
    n = S.shape[0]
    d = np.einsum("ij,ij->i", H, H)
    SH, StH = np.empty_like(H), np.zeros_like(H)
    row_sums, col_sums = np.empty(n), np.zeros(n)
    cross = squares = 0.0
    work = np.empty((min(rows, n), n), dtype=S.dtype)
    for start in range(0, n, rows):
        I = slice(start, start + rows)
        S_I = S[I]
        update_graph_rows(S_I, GS[I], G[I], H[I], H, d[I], d, gamma, alpha, beta,
                          work[:len(S_I)])
        cross += float(np.vdot(G[I], S_I))
        squares += float(np.vdot(S_I, S_I))
        row_sums[I] = S_I.sum(axis=1)
        col_sums += S_I.sum(axis=0)
        SH[I] = S_I @ H
        StH += S_I.T @ H[I]
    return {"RH": 0.5 * (SH + StH), "degree": (0.5 * (row_sums + col_sums)).astype(H.dtype),
            "cross": cross, "squares": squares, "total": float(row_sums.sum())}


def graph_statistics(S, G, rows=ROW_BLOCK):
    """``Σ G⊙S``, ``‖S‖²``, ``Σ S`` and the degrees of ``R = (S + Sᵀ)/2`` (no update)."""
    if sp.issparse(S):
        return _support_statistics(S, G)
    n = S.shape[0]
    row_sums, col_sums = np.empty(n), np.zeros(n)
    cross = squares = 0.0
    for start in range(0, n, rows):
        I = slice(start, start + rows)
        cross += float(np.vdot(G[I], S[I]))
        squares += float(np.vdot(S[I], S[I]))
        row_sums[I] = S[I].sum(axis=1)
        col_sums += S[I].sum(axis=0)
    return {"cross": cross, "squares": squares, "total": float(row_sums.sum()),
            "degree": 0.5 * (row_sums + col_sums)}


# -- S on the support of a sparse start (CSC; entries of G, G S and the update by column) -----
def support_graph(start, dtype, self_loops):
    """The starting ``S`` held on the support of the sparse ``start`` (CSC, sorted, the
    diagonal dropped unless ``self_loops``): the multiplicative updates keep its zeros."""
    S = sp.csc_matrix(start, dtype=dtype, copy=True)
    if not self_loops:
        S.setdiag(0)
    S.eliminate_zeros()
    S.sort_indices()
    return S


def _entries_on(gram, S):
    if not sp.issparse(S):
        return gram.entries
    cached = gram._support
    if not (cached and np.array_equal(cached[0], S.indptr)
            and np.array_equal(cached[1], S.indices)):
        values = np.empty(S.nnz, dtype=gram.dtype)
        gram.on_support(S, values, own=True)
        gram._support = cached = (S.indptr.copy(), S.indices.copy(), values)
    return cached[2]


def _column_spans(S):
    """Spans of the columns of the CSC ``S`` with about equal stored entries, one per thread."""
    parts = n_threads()
    cuts = np.searchsorted(S.indptr, S.nnz * np.arange(1, parts) / parts)
    cuts = np.unique(np.r_[0, np.minimum(cuts, S.shape[1]), S.shape[1]])
    return list(zip(cuts[:-1], cuts[1:]))


def support_vdot(S, values):
    """``Σ S ⊙ values`` over the stored entries of ``S``, in float64."""
    return float(np.dot(S.data.astype(np.float64), values.astype(np.float64)))


@numba.njit(nogil=True, cache=True)
def _data_gram_columns(indptr, indices, weights, own, x_indptr, x_indices, x_data, m,
                       start, stop, out):
    """``out[p] = x_i · y_j`` for the entries ``p = (i, j)`` of columns ``start:stop``, with
    ``y_j = Σ_l weights[l, j] x_l`` over the column's support (``own``: ``y_j = x_j``), ``y_j``
    scattered into a dense accumulator of the m terms."""
    acc = np.zeros(m, dtype=np.float64)
    for j in range(start, stop):
        a, b = indptr[j], indptr[j + 1]
        for q in range(a, a + 1 if own else b):
            l, w = (j, 1.0) if own else (indices[q], np.float64(weights[q]))
            for t in range(x_indptr[l], x_indptr[l + 1]):
                acc[x_indices[t]] += w * x_data[t]
        for p in range(a, b):
            i = indices[p]
            total = 0.0
            for t in range(x_indptr[i], x_indptr[i + 1]):
                total += x_data[t] * acc[x_indices[t]]
            out[p] = total
        for q in range(a, a + 1 if own else b):
            l = j if own else indices[q]
            for t in range(x_indptr[l], x_indptr[l + 1]):
                acc[x_indices[t]] = 0.0


@numba.njit(nogil=True, cache=True)
def _kernel_gram_columns(indptr, indices, weights, own, K, start, stop, out):
    """As :func:`_data_gram_columns`, reading the stored kernel ``K``."""
    for j in range(start, stop):
        a, b = indptr[j], indptr[j + 1]
        for p in range(a, b):
            i = indices[p]
            if own:
                out[p] = K[i, j]
                continue
            total = 0.0
            for q in range(a, b):
                total += np.float64(K[i, indices[q]]) * weights[q]
            out[p] = total


@numba.njit(nogil=True, cache=True)
def _update_support(indptr, indices, S, GS, G, H, d, gamma, alpha, beta, eps):
    """:func:`update_graph_rows` on the stored entries of the CSC ``S`` (in place)."""
    for j in range(len(indptr) - 1):
        for p in range(indptr[j], indptr[j + 1]):
            i = indices[p]
            denominator = max(GS[p] + alpha * S[p] + 0.25 * gamma * (d[i] + d[j]) + 0.5 * beta,
                              eps)
            numerator = np.float64(G[p])
            if gamma > 0:
                inner = 0.0
                for c in range(H.shape[1]):
                    inner += np.float64(H[i, c]) * H[j, c]
                numerator += 0.5 * gamma * inner
            S[p] = S[p] * (numerator / denominator)


def _support_step(S, GS, G, H, gamma, alpha, beta):
    """:func:`graph_step` for a sparse ``S`` held on its support."""
    d = np.einsum("ij,ij->i", H, H)
    _update_support(S.indptr, S.indices, S.data, GS, G, H, d, gamma, alpha, beta, EPS)
    stats = _support_statistics(S, G)
    stats["RH"] = 0.5 * (S @ H + S.T @ H)
    stats["degree"] = stats["degree"].astype(H.dtype)
    return stats


def _support_statistics(S, G):
    """:func:`graph_statistics` for a sparse ``S`` held on its support."""
    row_sums = np.bincount(S.indices, weights=S.data, minlength=S.shape[0])
    col_sums = np.asarray(S.sum(axis=0), dtype=np.float64).ravel()
    return {"cross": support_vdot(S, G), "squares": support_vdot(S, S.data),
            "total": float(row_sums.sum()), "degree": 0.5 * (row_sums + col_sums)}

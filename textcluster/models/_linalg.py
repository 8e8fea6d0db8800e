"""Products with the sparse data matrix, spread over the cores.

:class:`SparseOperator` splits the rows into blocks of about equal cost and multiplies them
in threads, each by a compiled product (:func:`_csr_dense_rows`) that sums a row's products
in SciPy's order and with SciPy's operations, so its result is SciPy's bit for bit: on TDT2
in 0.35 times SciPy's time and 0.5–0.6 times MKL's, on one thread
(``benchmarks/bench_sparse_products.py``).
Both ``X`` and ``Xᵀ`` are kept in CSR form so that either product streams rows.
:func:`gram_matrix` is the one dense ``X Xᵀ`` of the package. :func:`sphere_quadratic` is the
small dense solver of the unit-column step of GNMF and ANMF (a separable quadratic on the
non-negative unit sphere). :func:`locality_order` is the document order a large graph model
fits in: neighbours in the graph near one another in memory. :func:`graph_products` is the
graph term of every graph model, one compiled pass over the graph's edges; :func:`unit_columns`
the unit-basis step of GNMF, a pass over the rows per block of columns.
"""

from __future__ import annotations

import numba
import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import reverse_cuthill_mckee

from .._threads import each, n_threads
from ..graph._exact import _BLOCK_BUDGET  # entries (rows × n) of a block of X Xᵀ at a time
from ._lanes import (LANE_BYTES, lanes_add, lanes_add_scaled, lanes_at_least, lanes_divide,
                     lanes_load, lanes_multiply, lanes_rounded, lanes_store, lanes_zero)

# documents from which a graph model fits in its graph's locality order (below, results stay
# exactly those of the given order, and one iteration gains at most a few per cent)
LOCALITY_MIN_DOCS = 50_000
# rows of a product's block handed at a time to the update fused with it: the update's
# temporaries (a few × 8,192 × k numbers) stay in the cache and below the allocator's mmap size
ROWWISE_ROWS = 8192
_COMPILED_DTYPES = (np.float32, np.float64)  # compiled products: the data and the factor alike
# a row's fixed cost in the compiled product, in entries: TDT2's Xᵀ (k = 30, one thread), the
# 1,238 terms holding half of its entries in 1.16 ms, the other 34,855 in 1.90 ms
ROW_ENTRIES = 12
# blocks of basis columns a unit-basis step moves in turn: each block's columns move together
# on a bound that is looser the more columns it couples (one block lost NMI on the defaults
# panel; see unit_basis_step), and each block is one more pass over the rows
UNIT_BLOCKS = 4


class SparseOperator:
    """``X`` (CSR or dense) with fast ``X @ B`` and ``Xᵀ @ B`` for dense ``B``."""

    def __init__(self, X, threads=None):
        self.shape = X.shape
        self.dtype = X.dtype
        self.is_sparse = sp.issparse(X)
        self.threads = threads or n_threads()
        if self.is_sparse:
            self._rows = _Rows(sp.csr_matrix(X), self.threads)
            self._cols = _Rows(sp.csr_matrix(X.T), self.threads)
        else:
            self._X = np.asarray(X)

    def dot(self, B, rowwise=None):
        """``X @ B``; ``rowwise(start, stop, rows)`` is called on each block of result rows
        as soon as it is computed, in the thread that computed it (to fuse an update)."""
        if self.is_sparse:
            return self._product(self._rows, B, rowwise)
        return _apply(self._X @ B, rowwise)

    def tdot(self, B, rowwise=None):
        """``Xᵀ @ B``; ``rowwise`` as in :meth:`dot`."""
        if self.is_sparse:
            return self._product(self._cols, B, rowwise)
        return _apply(self._X.T @ B, rowwise)

    def _product(self, rows, B, rowwise):
        A = rows.matrix
        out = np.empty((A.shape[0], B.shape[1]), dtype=np.result_type(self.dtype, B.dtype))
        compiled = B.dtype == self.dtype and self.dtype in _COMPILED_DTYPES
        if compiled:
            B = np.ascontiguousarray(B)

        def work(span):
            start, stop = span
            if compiled:  # the rows' entries where they are: no copy of the block
                _csr_dense_rows(A.indptr[start:stop + 1], A.indices, A.data, B, out[start:stop])
            else:
                out[start:stop] = A[start:stop] @ B
            if rowwise is not None:
                _apply(out[start:stop], rowwise, start)

        each(work, rows.by_entries if rowwise is not None else rows.by_cost)
        return out

    def squared_norm(self):
        """``‖X‖²_F``."""
        if self.is_sparse:  # over all of X at once: the same value whatever the threads
            A = self._rows.matrix
            data = A.data[:A.indptr[-1]].astype(np.float64)
            return float(np.dot(data, data))
        return float(np.vdot(self._X, self._X))


class _Rows:
    """A CSR matrix and its rows split for ``parts`` threads: ``by_cost`` in blocks of about
    equal cost of the compiled product (a row costs about ``ROW_ENTRIES`` entries more than its
    own), ``by_entries`` of about equal entries, where each block's rows are then handed to an
    update (whose chunks, and so whose BLAS calls, the blocks' bounds set)."""

    def __init__(self, matrix, parts):
        self.matrix = matrix
        self.by_entries = _row_spans(matrix, parts)
        self.by_cost = _row_spans(matrix, parts, ROW_ENTRIES)


@numba.njit(nogil=True, cache=True)
def _csr_dense_rows(indptr, indices, data, B, out):
    """``out = A @ B`` for the CSR matrix ``(data, indices, indptr)`` and C-contiguous ``B`` and
    ``out`` of its dtype. Each row's products are summed in the order of its stored entries,
    multiplied then added, as SciPy sums them (the same values bit for bit), a register of
    columns at a time (:mod:`._lanes`), two registers (up to 32 float32 columns) for each pass
    over the row's entries."""
    k = B.shape[1]
    flat_b, flat_out = B.reshape(-1), out.reshape(-1)
    lanes = LANE_BYTES // B.itemsize
    for i in range(out.shape[0]):
        entries = range(np.uint64(indptr[i]), np.uint64(indptr[i + 1]))  # no wrap-around
        for c in range(0, k, 2 * lanes):
            first = min(lanes, k - c)
            second = min(lanes, k - c - first)
            low, high = lanes_zero(B), lanes_zero(B)
            if second > 0:
                for p in entries:
                    at = indices[p] * k + c
                    low = lanes_add_scaled(low, data[p], flat_b, at, first)
                    high = lanes_add_scaled(high, data[p], flat_b, at + lanes, second)
                lanes_store(high, flat_out, i * k + c + lanes, second)
            else:
                for p in entries:
                    low = lanes_add_scaled(low, data[p], flat_b, indices[p] * k + c, first)
            lanes_store(low, flat_out, i * k + c, first)


def locality_order(W, min_docs: int | None = None) -> np.ndarray | None:
    """The order of the documents (rows of the symmetric graph ``W``) in which a graph model
    fits, or None (as given) below ``LOCALITY_MIN_DOCS`` (or ``min_docs``): reverse
    Cuthill–McKee, which keeps each document's neighbours near it. The products of an update
    gather factor rows by index — ``W V`` by neighbour, ``X U`` and ``Xᵀ V`` by term — and in
    this order successive rows gather rows that are near one another or were just read
    (similar documents share terms), so fewer gathers miss the cache."""
    if W.shape[0] < (LOCALITY_MIN_DOCS if min_docs is None else min_docs):
        return None
    return reverse_cuthill_mckee(sp.csr_matrix(W), symmetric_mode=True).astype(np.intp)


def _apply(out, rowwise, offset=0):
    """``rowwise(start, stop, rows)`` on ``out``, the result's rows from ``offset`` on, a chunk
    of ``ROWWISE_ROWS`` rows at a time."""
    if rowwise is not None:
        for a in range(0, out.shape[0], ROWWISE_ROWS):
            b = min(a + ROWWISE_ROWS, out.shape[0])
            rowwise(offset + a, offset + b, out[a:b])
    return out


def graph_products(W, V, degree, out=None) -> tuple[float, np.ndarray]:
    """``tr(Vᵀ(D − W)V)`` and ``W V`` of the graph ``W`` (sparse, n × n) with degrees
    ``degree``, in one pass over its edges: ``W V`` summed in float64 and stored in ``V``'s
    dtype (in ``out`` when given), the trace summed in float64 (in float32, ``D V − W V``
    cancels to rounding noise when a graph term dominates an objective: a recorded GNMF
    objective then rose by up to 67 %, measured). Row blocks of equal edge count run on every
    core. The same values as ``(W₆₄ @ V₆₄).astype(V.dtype)`` (the same sums in the same
    order), without the n × k float64 temporaries: 4.5× faster than SciPy's float64 product
    and NumPy's trace at 300,000 documents (``benchmarks/bench_graph_products.py``)."""
    W = sp.csr_matrix(W)
    V = np.ascontiguousarray(V)
    out = np.empty_like(V) if out is None else out
    degree = np.asarray(degree, dtype=np.float64)

    def block(bounds):
        return _graph_rows(W.indptr, W.indices, W.data, V, degree, out, *bounds)

    return float(sum(each(block, _row_spans(W, n_threads())))), out


@numba.njit(nogil=True, cache=True)
def _graph_rows(indptr, indices, data, V, degree, WV, start, stop):
    """Rows ``start:stop`` of :func:`graph_products`: ``WV[i] = Σ_j w_ij v_j`` and the sum of
    ``v_iᵀ(d_i v_i − (W V)_i)`` over the rows (compiled; runs without the GIL; ``V``
    C-contiguous). Every sum is made in float64 in the order of the edges, then of the columns
    and rows."""
    k = V.shape[1]
    row = np.empty(k)
    flat_v = V.reshape(-1)
    lanes = LANE_BYTES // row.itemsize
    total = 0.0
    for i in range(start, stop):
        edges = range(np.uint64(indptr[i]), np.uint64(indptr[i + 1]))  # no wrap-around
        for c in range(0, k, lanes):  # row = Σ_e w_e v_j in float64, a register at a time
            count = min(lanes, k - c)
            sums = lanes_zero(row)
            for e in edges:
                sums = lanes_add_scaled(sums, data[e], flat_v, indices[e] * k + c, count)
            lanes_store(sums, row, c, count)
        for c in range(k):
            value = np.float64(V[i, c])
            total += value * (degree[i] * value - row[c])
            WV[i, c] = row[c]
    return total


def column_major(A: np.ndarray, rows: int = 256) -> np.ndarray:
    """A column-major copy of the 2-D array ``A``, transposed ``rows`` rows at a time: for a
    tall array 5× faster than ``np.asfortranarray`` (36,093 × 30 float32: 0.5 against 2.7 ms),
    whose single pass writes every row across all columns, a page apart."""
    out = np.empty(A.shape[::-1], dtype=A.dtype)
    _transpose_rows(out, A, 0, A.shape[0], rows)
    return out.T


def _transpose_rows(out, A, start, stop, rows=256):
    """``out[:, start:stop] = A[start:stop].T``, ``rows`` rows at a time (:func:`column_major`)."""
    for a in range(start, stop, rows):
        b = min(a + rows, stop)
        out[:, a:b] = A[a:b].T


def _row_spans(A, parts, row_entries=0):
    """``[(start, stop)]``: the rows of CSR ``A`` in at most ``parts`` blocks of about equal
    non-zeros, each row counted with ``row_entries`` more (one block when there are fewer
    than two rows per part)."""
    if parts <= 1 or A.shape[0] < 2 * parts:
        return [(0, A.shape[0])]
    cost = A.indptr + row_entries * np.arange(A.shape[0] + 1)
    targets = cost[-1] * np.arange(1, parts) / parts
    cuts = np.unique(np.r_[0, np.searchsorted(cost, targets), A.shape[0]])
    return list(zip(cuts[:-1], cuts[1:]))


def gram_matrix(X) -> np.ndarray:
    """``X Xᵀ`` as a dense n × n array of ``X``'s dtype, from sparse ``X`` one block of rows at
    a time (two blocks in threads; no dense n × m matrix, no second n × n temporary).

    It allocates n² numbers: callers check the memory first
    (:func:`~textcluster.models._memory.require_memory`)."""
    n = X.shape[0]
    G = np.empty((n, n), dtype=np.dtype(X.dtype))
    if not sp.issparse(X):
        return np.matmul(X, X.T, out=G)
    X = sp.csr_matrix(X)
    XT = X.T.tocsr()
    rows = max(1, _BLOCK_BUDGET // max(n, 1))

    def block(start):
        stop = min(start + rows, n)
        G[start:stop] = (X[start:stop] @ XT).toarray()

    each(block, range(0, n, rows), min(2, n_threads()))
    return G


def sphere_value(u, b, mu, degree):
    """``−2uᵀb + 2μ uᵀ diag(degree) u``: :func:`sphere_quadratic`'s objective for
    ``a = 2μ · degree``."""
    return float(-2.0 * (u @ b) + 2.0 * mu * (degree * u) @ u)


def sphere_quadratic(b, a, steps=60):
    """``argmin −2uᵀb + uᵀ diag(a) u`` over the non-negative unit sphere: ``u_i = [b_i]₊ /
    (a_i + θ)`` with ``θ ≥ −min a`` the root of ``‖u(θ)‖ = 1`` (decreasing in θ), found by
    Newton's method on ``1/‖u(θ)‖`` (nearly linear in θ) safeguarded by bisection. When even
    ``θ = −min a`` leaves ``‖u‖ < 1`` (the "hard case" of trust-region problems, where b is
    small against the spread of a) it returns ``u(−min a)`` scaled to unit length, which need
    not be the minimizer: the caller keeps it only where it lowers the objective. None when b
    has no positive entry."""
    b = np.maximum(b, 0).astype(np.float64)
    a = a.astype(np.float64)
    support = b > 0
    if not support.any():
        return None
    b_s, a_s = b[support], a[support]
    low = -a.min()
    u = np.zeros(a.shape[0])
    gaps = a_s + low
    if np.all(gaps > 0) and float(np.sum((b_s / gaps) ** 2)) < 1.0:  # the hard case
        u[support] = b_s / gaps
        return u / np.linalg.norm(u)
    high = max(np.linalg.norm(b_s) - a_s.min(), low) + 1e-12  # ‖u(high)‖ ≤ 1
    theta = high
    for _ in range(steps):
        ratio = b_s / (a_s + theta)
        norm2 = float(ratio @ ratio)
        if abs(norm2 - 1.0) < 1e-12:
            break
        low, high = (theta, high) if norm2 > 1.0 else (low, theta)
        # Newton on 1/‖u‖ = 1; d(1/‖u‖)/dθ = Σ b²/(a + θ)³ / ‖u‖³
        step = (norm2 - norm2 ** 1.5) / float(ratio @ (ratio / (a_s + theta)))
        theta = theta - step if low < theta - step < high else (low + high) / 2.0
    u[support] = b_s / (a_s + theta)
    return u / np.linalg.norm(u)


def unit_columns(U, XtV, VtV, blocks: int = UNIT_BLOCKS) -> np.ndarray:
    """The basis step of :func:`~textcluster.models.nmf.unit_basis_step` on ``U`` (m × k, in
    place), in ``blocks`` blocks of columns: the columns ``b`` of a block are set together to
    ``[g_b]₊ / ‖[g_b]₊‖`` with ``g_b = (XᵀV)_b − U (VᵀV)_{:,b} + U_b diag(d_b)``, ``d_c`` the
    sum of ``(VᵀV)_jc`` over the block's columns j, from ``U`` with the blocks before already
    moved (a column whose ``g_c`` has no positive entry is kept). ``XtV`` is overwritten.
    Returns the new ``UᵀU``.

    A row of ``g_b`` needs only the same row of ``U``, so each block is one pass over the rows,
    in chunks of ``ROWWISE_ROWS`` over the package's threads (a product with a k × |b| matrix
    and one compiled pass that clips ``g_b`` into ``U``); the norms are known only after the
    pass, so ``U`` holds the moved columns unscaled and the later blocks' matrices take the
    scales in. A last pass scales them and sums ``UᵀU``. The chunks' sums are added in their
    order, so the result does not depend on the number of threads. The compiled pass works
    on C-contiguous rows: another layout of ``U`` is worked on in a C-contiguous copy."""
    if not (U.flags.c_contiguous and XtV.flags.c_contiguous):
        rows = np.ascontiguousarray(U)
        gram = unit_columns(rows, np.ascontiguousarray(XtV), VtV, blocks)
        U[...] = rows
        return gram
    G = VtV.astype(np.float64)
    k = U.shape[1]
    block = -(-k // blocks)
    scale = np.ones(k)  # U's column c is scale[c] × the stored one
    chunks = [(a, min(a + ROWWISE_ROWS, U.shape[0]))
              for a in range(0, U.shape[0], ROWWISE_ROWS)]

    def in_chunks(work):
        return np.sum(each(lambda chunk: work(*chunk), chunks, n_threads()), axis=0)

    for start in range(0, k, block):
        b = slice(start, min(start + block, k))
        gap = -G[:, b]  # U_b diag(d_b) − U (VᵀV)_{:,b}, its majorized curvature inside the block
        gap[b] += np.diag(G[b, b].sum(axis=0))
        gap = (scale[:, None] * gap).astype(U.dtype)
        squares = in_chunks(lambda s, e: _clip_block(U[s:e], U[s:e] @ gap, XtV[s:e], start))
        kept = squares == 0  # back to the column before the step (XtV holds it)
        if kept.any():
            U[:, b][:, kept] = XtV[:, b][:, kept]
        scale[b] = np.where(kept, 1.0, 1.0 / np.sqrt(np.where(kept, 1.0, squares)))
    factors = scale.astype(U.dtype)

    def scaled(s, e):
        U[s:e] *= factors
        return U[s:e].T @ U[s:e]

    return in_chunks(scaled).astype(U.dtype)


@numba.njit(nogil=True, cache=True)
def _clip_block(U, g, XtV, start):
    """Columns ``start:start + g.shape[1]`` of ``U`` set to ``[g + XtV]₊`` (the same columns of
    ``XtV`` to ``U``'s before); returns their squared norms (float64). ``U``, ``g`` and ``XtV``
    C-contiguous, of one dtype. The sum ``g + XtV`` is made in that dtype and each column's
    squares are summed in float64 in the order of the rows, as a loop over the entries makes
    them (:mod:`._lanes`: a register of columns at a time, in float64)."""
    width, k = g.shape[1], U.shape[1]
    squares = np.zeros(width)
    flat_u, flat_g, flat_x = U.reshape(-1), g.reshape(-1), XtV.reshape(-1)
    lanes = LANE_BYTES // squares.itemsize
    for c in range(0, width, lanes):
        count = min(lanes, width - c)
        sums = lanes_zero(squares)
        for i in range(g.shape[0]):
            at = i * k + start + c
            value = lanes_add(lanes_load(squares, flat_g, i * width + c, count),
                              lanes_load(squares, flat_x, at, count))
            value = lanes_at_least(lanes_rounded(value, U), 0.0)
            lanes_store(lanes_load(squares, flat_u, at, count), flat_x, at, count)
            lanes_store(value, flat_u, at, count)
            sums = lanes_add(sums, lanes_multiply(value, value))
        lanes_store(sums, squares, c, count)
    return squares


def graph_document_update(V, XU, WV, degree, denominator, lam, eps, floor) -> bool:
    """``V ← max(V ⊙ (XU + λ WV) / max(denominator + λ D V, eps), floor)`` in place, in one
    compiled pass (:func:`_graph_document_rows`), where NumPy would compute the same values in
    the same dtype: every array of ``V``'s dtype (float32 or float64) and C-contiguous, and
    ``lam`` a Python number or a scalar of that dtype. Returns False (nothing done) otherwise.
    Each operation is NumPy's, in its order, so the result is the same bit for bit (0.46 times
    NumPy's time on 4,697 × 30 float32 rows, 0.14 in float64)."""
    arrays = (V, XU, WV, degree, denominator)
    if (V.dtype.type not in _COMPILED_DTYPES or any(a.dtype != V.dtype for a in arrays)
            or not all(a.flags.c_contiguous for a in arrays)
            or np.result_type(lam, V) != V.dtype):
        return False
    scalar = V.dtype.type
    _graph_document_rows(V, XU, WV, degree, denominator, scalar(lam), scalar(eps),
                         scalar(floor if floor else -np.inf))
    return True


@numba.njit(nogil=True, cache=True)
def _graph_document_rows(V, XU, WV, degree, denominator, lam, eps, floor):
    """:func:`graph_document_update` (compiled; a register of columns at a time)."""
    k = V.shape[1]
    flat_v, flat_xu, flat_wv = V.reshape(-1), XU.reshape(-1), WV.reshape(-1)
    flat_d = denominator.reshape(-1)
    lanes = LANE_BYTES // V.itemsize
    for i in range(V.shape[0]):
        scaled_degree = lam * degree[i]
        for c in range(0, k, lanes):
            count, at = min(lanes, k - c), i * k + c
            numerator = lanes_add_scaled(lanes_load(V, flat_xu, at, count), lam, flat_wv, at,
                                         count)
            d = lanes_add_scaled(lanes_load(V, flat_d, at, count), scaled_degree, flat_v, at,
                                 count)
            ratio = lanes_divide(numerator, lanes_at_least(d, eps))
            v = lanes_multiply(lanes_load(V, flat_v, at, count), ratio)
            lanes_store(lanes_at_least(v, floor), flat_v, at, count)

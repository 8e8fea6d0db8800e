"""The codes of new documents for a graph-regularized model: the document attached to the
fitted document graph, the model's objective restricted to its row.

A graph model fits ``min ‖X − V Uᵀ‖² + λ tr(Vᵀ L V)`` (plus terms that do not involve a
document's row of ``V``). Add a document ``x`` as a new node linked as
:func:`~textcluster.graph.knn_graph` would link it had it been appended to the data
(:func:`attachment_edges`: its ``n_neighbors`` most cosine-similar training documents, and
the training documents whose k-th neighbour it would displace, weighted as the fitted graph's
edges), and hold ``U`` and the training rows of ``V`` fixed: what is left of the objective is

    ‖x − U v‖² + λ Σ_j s_j ‖v − v_j‖²  =  ‖x − U v‖² + λ d ‖v − m‖² + const,

``d = Σ_j s_j`` and ``m`` the neighbours' weighted mean factor: a non-negative least-squares
problem with a ridge towards ``m`` (:func:`~textcluster.models._codes.ridge_codes`). It is
exact for one new node; it leaves out how the node would change the training documents'
edges and the basis. A training document passed again is that document: it keeps its edges
in the fitted graph, so its code is its row of the objective given the others. The
neighbours' factor is the one the fit's last update of the document factor saw (the previous
iterate): each training row was last solved from it.

In the coordinates of the fitted attributes (``components_`` with unit rows, the document
factor scaled to match) a factor's ridge is ``λ d / c²`` with ``c`` the scale the fit moved
from the basis to the document factor (``factor_scale_``). Kept on the model (memory
O(nnz + n·k) plus the graph): the training documents (``X_fit_``, sparse, as given to
``fit``), their factor (``neighbour_factor_``), the graph (``graph_``), the graph term's weight
(``graph_weight_``), ``factor_scale_``, the graph's heat-kernel width and each document's k-th
neighbour similarity (``graph_width_``, ``graph_reach_``), a ridge towards 0 per factor
(``code_ridge_``, SODNMF's β) and a final scaling (``code_scale_``, SODNMF's R). With a
precomputed ``graph`` passed to ``fit`` a new document's edges to it are unknown: it is
attached by the model's kNN rule. :class:`LearnedGraphAttachment` is AGPNMF's variant.
"""
from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
import scipy.sparse as sp
from scipy.linalg import solve_triangular
from scipy.optimize import nnls

from .. import graph as graphs
from ..graph import WEIGHTINGS, _unit_rows
from ..graph._exact import _BLOCK_BUDGET, _top_k
from ._codes import ridge_codes
from ._linalg import SparseOperator

ATTACHMENT_STATE = ("X_fit_", "neighbour_factor_", "graph_weight_", "factor_scale_",
                    "graph_width_", "graph_reach_", "code_ridge_", "code_scale_")
"""The fitted attributes the attachment reads, but the fitted graph (``graph_`` for the kNN
graph models)."""


class GraphAttachment:
    """``transform`` of a model with a document graph: :func:`attached_codes` of the new
    documents (see the module docstring). The model calls :meth:`_attach` when it is fitted
    and has the parameters ``n_neighbors`` and ``weighting``."""

    n_neighbors: int
    weighting: str
    graph_method: str = "auto"  # how the neighbours are searched (a model may set it)
    components_: np.ndarray
    graph_: Any
    _state_attributes: ClassVar[tuple[str, ...]]

    def _fitted_graph(self) -> sp.csr_matrix:
        """The fitted document graph, whose rows a known document's edges are."""
        return self.graph_

    def _edge_weighting(self) -> str:
        """How the fitted graph weighs its kNN edges."""
        return self.weighting

    def _attach(self, X: Any, neighbours: np.ndarray, weight: float, scale: np.ndarray,
                shrink: np.ndarray | None = None, output: np.ndarray | None = None) -> None:
        """Keep what new documents are attached with: the training rows ``X``, their factor
        as the fit's last update of it saw it (``neighbours``), the graph term's weight
        ``weight`` (per unit of edge weight, in the fit's coordinates), the factor ``scale``,
        a ridge ``shrink`` towards 0 and the scaling ``output`` the fit applied to its factor
        after its last update of it."""
        self.X_fit_ = X if sp.isspmatrix_csr(X) else (
            sp.csr_matrix(X) if sp.issparse(X) else np.array(X))
        self.neighbour_factor_ = np.array(neighbours)
        self.graph_weight_ = float(weight)
        self.factor_scale_ = np.asarray(scale, dtype=np.float64)
        self.graph_width_, self.graph_reach_ = graphs.knn_reach(
            self.X_fit_, self.n_neighbors, self._edge_weighting(), self.graph_method)
        k = self.neighbour_factor_.shape[1]
        self.code_ridge_ = np.zeros(k) if shrink is None else np.asarray(shrink, np.float64)
        self.code_scale_ = np.ones(k) if output is None else np.asarray(output, np.float64)

    def _attached_codes(self, X: Any, weighted: Any, basis: np.ndarray) -> np.ndarray:
        """The codes of the rows of ``X`` for ``basis`` (k × m, the rows of ``weighted``:
        ``X`` as the model factorizes it) with the ridge of the attachment."""
        basis = basis.astype(weighted.dtype, copy=False)
        cross = SparseOperator(weighted).dot(np.ascontiguousarray(basis.T))
        return self._codes(X, cross, basis @ basis.T)

    def _codes(self, X: Any, cross: np.ndarray, gram: np.ndarray) -> np.ndarray:
        """:func:`attached_codes` from ``cross = Φ B`` and ``gram = BᵀB``."""
        edges, _ = self._edges(X)
        codes = attached_codes(cross, gram, edges, self.neighbour_factor_,
                               self.graph_weight_ / np.square(self.factor_scale_),
                               self.code_ridge_)
        return (codes * self.code_scale_).astype(codes.dtype, copy=False)

    def _edges(self, X: Any) -> tuple[sp.csr_matrix, np.ndarray]:
        """:func:`attachment_edges` of the rows of ``X``; the training rows themselves (as
        ``fit`` passes them for the training codes) are known at once: their rows of the
        fitted graph, as :func:`attachment_edges` would find them."""
        if X is self.X_fit_:
            graph = sp.csr_matrix(self._fitted_graph(), dtype=np.float64)
            return graph, np.arange(graph.shape[0])
        return attachment_edges(X, self.X_fit_, self._fitted_graph(), self.n_neighbors,
                                self._edge_weighting(), self.graph_width_, self.graph_reach_)


def attached_codes(cross: np.ndarray, gram: np.ndarray, edges: sp.csr_matrix,
                   embedding: np.ndarray, weight: np.ndarray,
                   shrink: np.ndarray) -> np.ndarray:
    """``argmin_{v ≥ 0} ‖φ − B v‖² + Σ_j s_j Σ_c w_c (v_c − v_jc)² + Σ_c b_c v_c²`` for each
    row: ``cross = Φ B``, ``gram = BᵀB``, ``edges`` s (n_new × n_fit) to the rows of
    ``embedding``, per-factor weights ``weight`` w and ``shrink`` b."""
    degree = np.asarray(edges.sum(axis=1), dtype=np.float64).ravel()
    pulled = np.asarray(edges @ embedding.astype(np.float64))  # Σ_j s_j v_j
    mean = pulled / np.where(degree > 0, degree, 1.0)[:, None]
    graph_ridge = degree[:, None] * weight[None, :]
    ridge = graph_ridge + shrink[None, :]
    target = np.divide(graph_ridge * mean, ridge, out=np.zeros_like(mean), where=ridge > 0)
    return ridge_codes(cross, gram, ridge, target)


def attachment_edges(X_new: Any, X_fit: Any, graph: sp.csr_matrix, n_neighbors: int,
                     weighting: str = "binary", width: float = 1.0,
                     reach: np.ndarray | None = None,
                     block_size: int | None = None) -> tuple[sp.csr_matrix, np.ndarray]:
    """The edges of new rows to the fitted rows' kNN ``graph``, as
    :func:`~textcluster.graph.knn_graph` (``symmetrize="max"``) would link a row appended to
    the data: to its ``n_neighbors`` most cosine-similar fitted rows, and to the fitted rows
    whose ``reach`` (their k-th neighbour's similarity, :func:`~textcluster.graph.knn_reach`)
    it exceeds; weighted as the graph's edges (``width``: its heat-kernel width). A row that
    coincides with a fitted row (cosine within 100 ulp of 1) is that row: it gets its edges in
    ``graph``. All-zero rows get no edges. Returns the edges (CSR, n_new × n_fit) and, per
    new row, the fitted row it coincides with (-1: none). Memory O(block_size · n_fit)."""
    weigh = WEIGHTINGS.get(weighting)
    (Y, keep), (Z, kept) = (_unit_rows(A if sp.issparse(A) else np.asarray(A), warn=False)
                            for A in (X_fit, X_new))
    (n_new, n_fit), k = (X_new.shape[0], X_fit.shape[0]), min(n_neighbors, Y.shape[0])
    known = np.full(n_new, -1, dtype=np.intp)
    if k < 1 or Z.shape[0] == 0:
        return sp.csr_matrix((n_new, n_fit)), known
    YT = Y.T.tocsr() if sp.issparse(Y) else Y.T
    block_size = block_size or max(1, _BLOCK_BUDGET // max(Y.shape[0], 1))
    rows, cols, sims, same, found = [], [], [], [], []
    for start in range(0, Z.shape[0], block_size):
        S = Z[start:start + block_size] @ YT
        S = S.toarray() if sp.issparse(S) else np.asarray(S)
        best = np.argmax(S, axis=1)
        coincide = S[np.arange(len(S)), best] >= 1 - 100 * np.finfo(S.dtype).eps
        mask = np.zeros(S.shape, dtype=bool)
        mask[_top_k(S, k)] = True
        if reach is not None:
            mask |= S > reach[keep][None, :]  # a tie goes to the fitted neighbour
        mask[coincide] = False
        r, c = np.nonzero(mask)
        rows.append(kept[r + start])
        cols.append(keep[c])
        sims.append(S[r, c].astype(np.float64))
        same.append(kept[np.flatnonzero(coincide) + start])
        found.append(keep[best[coincide]])
    edges = sp.csr_matrix((weigh(np.concatenate(sims), width),
                           (np.concatenate(rows), np.concatenate(cols))), shape=(n_new, n_fit))
    same_rows, fitted_rows = np.concatenate(same), np.concatenate(found)
    if same_rows.size:
        pick = sp.csr_matrix((np.ones(same_rows.size), (same_rows, fitted_rows)),
                             shape=(n_new, n_fit))
        edges = sp.csr_matrix(edges + pick @ sp.csr_matrix(graph, dtype=np.float64))
        known[same_rows] = fitted_rows
    edges.sort_indices()
    return edges, known


class LearnedGraphAttachment(GraphAttachment):
    """The attachment of AGPNMF, whose document graph ``S`` is learned: a new document's edges
    are its column of ``S`` — the non-negative weights that reconstruct it from its
    neighbourhood (its cosine kNN and the documents whose kNN it would join, the support ``S``
    starts on), ``min ‖φ(x) − Σ_j s_j φ(x_j)‖² + α ‖s‖² + β Σ_j s_j`` (the S-terms of the
    objective restricted to that column, the graph term left out) — entering
    ``R = (S + Sᵀ)/2`` as ``s / 2``. A known document keeps its row of the fitted ``R``
    (``symmetric_graph_``, sparse). The model provides ``alpha``, ``beta`` and
    :meth:`_kernel`."""

    alpha: float
    beta: float
    symmetric_graph_: sp.csr_matrix

    def _fitted_graph(self) -> sp.csr_matrix:
        return self.symmetric_graph_

    def _edge_weighting(self) -> str:
        return "cosine"  # the support: the cosine kNN graph S starts on

    def _kernel(self, A: Any, B: Any) -> np.ndarray:
        """The kernel between the rows of ``A`` and of ``B`` (dense): here ``A Bᵀ``."""
        product = A @ B.T
        return product.toarray() if sp.issparse(product) else np.asarray(product)

    def _edges(self, X: Any) -> tuple[sp.csr_matrix, np.ndarray]:
        support, known = super()._edges(X)
        new = np.flatnonzero(known < 0)
        if new.size == 0:
            return support, known
        column = reconstruction_weights(X[new], self.X_fit_, support[new], self._kernel,
                                        self.alpha, self.beta)
        n = support.shape[0]
        lift = sp.csr_matrix((np.full(new.size, 0.5), (new, np.arange(new.size))),
                             shape=(n, new.size))
        edges = sp.diags((known >= 0).astype(np.float64)) @ support + lift @ column
        return sp.csr_matrix(edges), known


def reconstruction_weights(X_new: Any, X_fit: Any, support: sp.csr_matrix, kernel: Any,
                           alpha: float, beta: float, block: int = 256) -> sp.csr_matrix:
    """Per row ``x`` of ``X_new``, ``argmin_{s ≥ 0} ‖φ(x) − Σ_j s_j φ(x_j)‖² + α ‖s‖² + β Σ s``
    over the fitted rows ``j`` of its row of ``support`` (``kernel(A, B)``: the dense kernel
    of two sets of rows), solved exactly (Lawson–Hanson active set on the Cholesky factor of
    each row's small system). CSR with ``support``'s pattern."""
    support = sp.csr_matrix(support)
    support.sort_indices()
    data = np.zeros(support.nnz)
    for start in range(0, support.shape[0], block):
        sub = support[start:start + block]
        if sub.nnz == 0:
            continue
        fitted = np.unique(sub.indices)
        K = kernel(X_fit[fitted], X_fit[fitted]).astype(np.float64)
        cross = kernel(X_new[start:start + block], X_fit[fitted]).astype(np.float64)
        for i in range(sub.shape[0]):
            entries = slice(sub.indptr[i], sub.indptr[i + 1])
            where = np.searchsorted(fitted, sub.indices[entries])
            data[support.indptr[start + i]:support.indptr[start + i + 1]] = _ridge_nnls(
                K[np.ix_(where, where)], cross[i, where] - beta / 2.0, alpha)
    return sp.csr_matrix((data, support.indices, support.indptr), shape=support.shape)


def _ridge_nnls(G: np.ndarray, c: np.ndarray, alpha: float) -> np.ndarray:
    """``argmin_{s ≥ 0} sᵀ(G + αI)s − 2cᵀs`` (``G`` positive semi-definite), as the
    non-negative least-squares problem ``‖Lᵀs − L⁻¹c‖²`` with ``G + αI = L Lᵀ``."""
    if c.size == 0:
        return c
    system = G + (alpha + 1e-12 * max(float(np.trace(G)), 1.0)) * np.eye(c.size)
    lower = np.linalg.cholesky(system)
    return nnls(lower.T, solve_triangular(lower, c, lower=True), maxiter=100 * c.size)[0]

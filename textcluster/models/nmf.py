"""NMF and graph-regularized NMF (GNMF) with multiplicative updates.

In the documents × terms orientation (see :mod:`textcluster.models._base`), ``X ≈ V Uᵀ`` with
``V`` (n × k) the document factor and ``U`` (m × k) the basis. Every product with ``X`` is a
sparse × dense product; the reconstruction error is computed from ``‖X‖²``, ``tr(Vᵀ X U)`` and
the k × k Gram matrices, so no dense n × m matrix is ever formed. Memory: O(nnz + (n + m)k)
plus the sparse kNN graph for GNMF.
"""

from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from sklearn.utils._param_validation import Interval, StrOptions

from .. import graph as graphs
from .._errors import InvalidInputError
from ._base import EPS, FactorizationModel, check_custom_factor
from ._linalg import SparseOperator


# -- the math: small pure functions -------------------------------------------------------
def reconstruction_error(X_norm2, V, U, XU):
    """``‖X − V Uᵀ‖²_F`` from ``‖X‖²``, ``XU = X @ U`` and the Gram matrices."""
    cross = np.vdot(V, XU)
    gram = np.vdot(U.T @ U, V.T @ V)
    return max(X_norm2 - 2.0 * cross + gram, 0.0)


def update_basis(U, V, XtV, column_penalty=None):
    """``U ← U ⊙ XᵀV / (U VᵀV + U diag(p))`` (Lee & Seung; ``p`` a ridge per column)."""
    denominator = U @ (V.T @ V)
    if column_penalty is not None:
        denominator += U * column_penalty
    U *= XtV / np.maximum(denominator, EPS)


def update_documents(U, V, XU, lam=0.0, WV=None, degree=None):
    """``V ← V ⊙ (XU + λ W V) / (V UᵀU + λ D V)`` (Cai et al. 2011, eq. 16 transposed)."""
    numerator = XU if WV is None else XU + lam * WV
    denominator = V @ (U.T @ U)
    if WV is not None:
        denominator += lam * degree[:, None] * V
    V *= numerator / np.maximum(denominator, EPS)


def normalize_basis(U, V):
    """Scale each basis column to unit L2 norm; the document factor absorbs the scale."""
    norms = np.maximum(np.linalg.norm(U, axis=0), EPS)
    U /= norms
    V *= norms
    return norms


def graph_smoothness(V, WV, degree):
    """Per factor ``v_kᵀ L v_k`` with ``L = D − W``."""
    return np.einsum("ij,ij->j", V, degree[:, None] * V - WV)


# -- the estimators -----------------------------------------------------------------------
class NMF(FactorizationModel):
    """Non-negative matrix factorization ``min ‖X − V Uᵀ‖²_F, U, V ≥ 0``.

    Lee & Seung's multiplicative updates (paper 003, eqs. 2–3), started as Deng Cai's code
    does (uniform random factors, basis columns scaled to unit norm, the document factor
    absorbing the scale) and finished the same way. ``ncw=True`` applies the normalized-cut
    weighting of Xu, Liu & Gong (SIGIR 2003): documents are scaled by ``d^{-1/2}`` with
    ``d = X Xᵀ 1`` before factorizing. Clusters: k-means on the document factor.

    Parameters are those of :class:`~textcluster.models._base.FactorizationModel` plus
    ``ncw`` (bool).

    Attributes
    ----------
    components_ : (k, m) basis ``Uᵀ``, rows of unit L2 norm.
    labels_ : (n,) cluster of each document.
    objective_history_ : objective at the start and after each iteration of the kept run.
    n_iter_ : iterations of the kept run.
    """

    _parameter_constraints = {**FactorizationModel._parameter_constraints, "ncw": ["boolean"]}

    def __init__(self, n_components=8, *, ncw=False, max_iter=100, tol=1e-5, n_init=10,
                 init_iter=30, init="random", assign="kmeans", n_assign_init=20,
                 random_state=None):
        super().__init__(n_components, max_iter=max_iter, tol=tol, n_init=n_init,
                         init_iter=init_iter, init=init, assign=assign,
                         n_assign_init=n_assign_init, random_state=random_state)
        self.ncw = ncw

    def _prepare(self, X, y, graph):
        if self.ncw:
            X = _ncw_weighted(X)
        op = SparseOperator(X)
        return {"X": op, "X_norm2": op.squared_norm(), "dtype": X.dtype}

    def _random_factors(self, ctx, rng):
        n, m = ctx["X"].shape
        k = self.n_components
        U = rng.uniform(size=(m, k)).astype(ctx["dtype"])
        V = rng.uniform(size=(n, k)).astype(ctx["dtype"])
        normalize_basis(U, V)
        return {"U": U, "V": V}

    def _custom_factors(self, ctx, W, H):
        n, m = ctx["X"].shape
        k = self.n_components
        V = check_custom_factor("W", W, (n, k), ctx["dtype"])
        U = check_custom_factor("H", H, (k, m), ctx["dtype"]).T.copy()
        return {"U": U, "V": V}

    def _objective(self, factors, ctx):
        U, V = factors["U"], factors["V"]
        return reconstruction_error(ctx["X_norm2"], V, U, ctx["X"].dot(U))

    def _update(self, factors, ctx):
        U, V, X = factors["U"], factors["V"], ctx["X"]
        update_basis(U, V, X.tdot(V))
        XU = X.dot(U)
        update_documents(U, V, XU)
        return reconstruction_error(ctx["X_norm2"], V, U, XU)

    def _finish(self, factors, ctx):
        U, V = factors["U"], factors["V"]
        normalize_basis(U, V)
        self.components_ = U.T
        return V

    def _transform(self, X):
        """Document factor of ``X`` for the fitted basis: the V-updates with U fixed."""
        U = self.components_.T.astype(X.dtype)
        rng = np.random.default_rng(0)
        V = rng.uniform(size=(X.shape[0], U.shape[1])).astype(X.dtype)
        XU = SparseOperator(X).dot(U)
        for _ in range(self.max_iter):
            update_documents(U, V, XU)
        return V


class GNMF(NMF):
    """Graph-regularized NMF (Cai, He, Wu & Han, TPAMI 2011; paper 003, eqs. 8, 15–16).

    ``min ‖X − V Uᵀ‖²_F + λ tr(Vᵀ L V)``, ``L = D − W`` the Laplacian of a kNN graph over the
    documents (``n_neighbors``, ``weighting`` of :func:`textcluster.graph.knn_graph`, or a
    precomputed ``graph`` passed to ``fit``). Memory: O(nnz + (n + m)k + n·n_neighbors).

    Scale. Multiplicative updates are not scale invariant: ``(U S, V S⁻¹)`` has the same fit
    but a different graph term, so λ's real strength depends on how U and V happen to share
    the scale. ``scaling="cai"`` is Deng Cai's reference code: the basis is normalized once at
    the start and λ is used as given (his demos use λ = 100; full TDT2 NMI 0.866). Its
    effective strength then depends on the corpus: measured here it collapses on some corpora.

    ``scaling="scale-free"`` (default) minimizes the scale-invariant objective

        ``‖X − V Uᵀ‖²_F + (λ / d̄) Σ_k ‖u_k‖² v_kᵀ L v_k``,

    i.e. the graph term measured on the document factor of a unit-norm basis, with λ divided
    by the graph's mean degree ``d̄`` so that it does not depend on the weighting scheme or
    on ``n_neighbors``. The basis is renormalized after every U-update (which leaves this
    objective unchanged); the U-update gains the ridge ``(λ/d̄) U diag(vᵀLv)`` in its
    denominator and the V-update is eq. 16. Both updates are majorization steps, so the
    objective never increases. λ = 0 gives :class:`NMF`.

    Parameters: those of :class:`NMF` plus ``lam`` (λ), ``n_neighbors``, ``weighting``
    (binary | heat | cosine), ``scaling`` (scale-free | cai).
    """

    _parameter_constraints = {
        **NMF._parameter_constraints,
        "lam": [Interval(Real, 0, None, closed="left"), None],
        "n_neighbors": [Interval(Integral, 1, None, closed="left")],
        "weighting": [StrOptions({"binary", "heat", "cosine"})],
        "scaling": [StrOptions({"scale-free", "cai"})],
    }

    def __init__(self, n_components=8, *, lam=None, n_neighbors=5, weighting="binary",
                 scaling="scale-free", ncw=False, max_iter=100, tol=1e-5, n_init=10,
                 init_iter=30, init="random", assign="kmeans", n_assign_init=20,
                 random_state=None):
        super().__init__(n_components, ncw=ncw, max_iter=max_iter, tol=tol, n_init=n_init,
                         init_iter=init_iter, init=init, assign=assign,
                         n_assign_init=n_assign_init, random_state=random_state)
        self.lam = lam
        self.n_neighbors = n_neighbors
        self.weighting = weighting
        self.scaling = scaling

    def _prepare(self, X, y, graph):
        ctx = super()._prepare(X, y, graph)
        if X.shape[0] < 2:
            raise InvalidInputError("a document graph needs at least 2 documents; got 1 sample")
        if graph is None:
            k = min(self.n_neighbors, X.shape[0] - 1)  # a tiny corpus: all other documents
            W = graphs.knn_graph(X, n_neighbors=k, weighting=self.weighting)
        else:
            W = graphs.check_graph(graph, X.shape[0])
        W = sp.csr_matrix(W, dtype=X.dtype)
        degree = np.asarray(W.sum(axis=1)).ravel()
        lam = self._effective_lam(degree)
        self.graph_ = W
        return {**ctx, "W": W, "degree": degree, "lam": lam}

    def _effective_lam(self, degree):
        lam = self.lam if self.lam is not None else DEFAULT_LAM[self.scaling]
        if self.scaling == "scale-free":
            lam /= max(degree.mean(), EPS)
        return lam

    def _objective(self, factors, ctx):
        return super()._objective(factors, ctx) + self._graph_term(factors, ctx)

    def _graph_term(self, factors, ctx):
        U, V = factors["U"], factors["V"]
        smooth = graph_smoothness(V, ctx["W"] @ V, ctx["degree"])
        if self.scaling == "scale-free":
            smooth = smooth * np.einsum("ij,ij->j", U, U)
        return ctx["lam"] * float(smooth.sum())

    def _update(self, factors, ctx):
        U, V, X, W, lam = factors["U"], factors["V"], ctx["X"], ctx["W"], ctx["lam"]
        WV = W @ V
        penalty = None
        if self.scaling == "scale-free":
            penalty = lam * graph_smoothness(V, WV, ctx["degree"])
        update_basis(U, V, X.tdot(V), penalty)
        if self.scaling == "scale-free":
            WV *= normalize_basis(U, V)
        XU = X.dot(U)
        update_documents(U, V, XU, lam, WV, ctx["degree"])
        error = reconstruction_error(ctx["X_norm2"], V, U, XU)
        return error + self._graph_term(factors, ctx)


DEFAULT_LAM = {"scale-free": 10.0, "cai": 100.0}


def _ncw_weighted(X):
    """Rows of ``X`` scaled by ``d^{-1/2}``, ``d = X (Xᵀ 1)`` (normalized-cut weighting)."""
    d = X @ np.asarray(X.sum(axis=0)).ravel()
    if np.any(d <= 0):
        d = np.where(d > 0, d, 1.0)
    scale = 1.0 / np.sqrt(d)
    return sp.diags(scale) @ X if sp.issparse(X) else X * scale[:, None]

"""NMF and graph-regularized NMF (GNMF) with multiplicative updates.

In the documents × terms orientation (see :mod:`textcluster.models._base`), ``X ≈ V Uᵀ`` with
``V`` (n × k) the document factor and ``U`` (m × k) the basis. Every product with ``X`` is a
sparse × dense product; the reconstruction error is computed from ``‖X‖²``, ``tr(Vᵀ X U)`` and
the k × k Gram matrices, so no dense n × m matrix is ever formed. Memory: O(nnz + (n + m)k)
plus the sparse kNN graph for GNMF.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, replace
from numbers import Real

import numpy as np
import scipy.sparse as sp

from .. import graph as graphs
from .._compat import Interval, StrOptions
from ._attach import ATTACHMENT_STATE, GraphAttachment
from ._base import (EPS, Context, Factors, FactorizationModel, Seed, check_custom_factor, extend,
                    kept_copy, shared_parameters)
from ._codes import basis_codes
from ._linalg import (SparseOperator, column_major, graph_document_update, graph_products,
                      locality_order, sphere_quadratic, sphere_value, unit_columns)
from ._parameters import DOCUMENT_GRAPH_CONSTRAINTS, parameter_entries
from .baselines import LSIKMeans
from .cluster_count import NComponents
from .selection import GraphStrength, SelectsGraphStrength, centroid_start, graph_fields


# -- what the family prepares and iterates --------------------------------------------------
@dataclass(kw_only=True)
class NMFContext(Context):
    """What the NMF family prepares: the data, for products and for LSA starts."""

    X: SparseOperator
    """The data factorized (after any NCW weighting), for threaded products."""
    data: sp.csr_matrix | np.ndarray
    """The same matrix, as a matrix."""
    X_norm2: float
    """``‖X‖²_F``."""


@dataclass(kw_only=True)
class GraphContext(GraphStrength, NMFContext):
    """NMF's context with GNMF's document graph and graph strength."""

    graph_off: bool = False
    """The graph failed ``graph_check``: it is fitted with λ = 0."""


@dataclass(kw_only=True)
class NMFFactors(Factors):
    """One start of ``X ≈ V Uᵀ``, with the products an update leaves for the next one."""

    document_fields = ("V", "WV", "seen")

    U: np.ndarray
    """The basis (m × k)."""
    V: np.ndarray
    """The document factor (n × k)."""
    VtV: np.ndarray | None = None
    """``VᵀV`` of the current ``V``, left by the last update (None: not computed)."""
    WV: np.ndarray | None = None
    """``W V`` of the current ``V`` (graph models), left by the last update."""
    seen: np.ndarray | None = None
    """``V`` as the last update of ``V`` saw it (graph models; None: not kept, or no update)."""


# -- the math: small pure functions -------------------------------------------------------
def reconstruction_error(X_norm2, V, XU, UtU, VtV=None):
    """``‖X − V Uᵀ‖²_F`` from ``‖X‖²``, ``XU = X @ U`` and the Gram matrices."""
    cross = np.vdot(V, XU)
    gram = np.vdot(UtU, V.T @ V if VtV is None else VtV)
    return max(X_norm2 - 2.0 * cross + gram, 0.0)


def update_basis(U, V, XtV, VtV=None):
    """``U ← U ⊙ XᵀV / (U VᵀV)`` (Lee & Seung; paper 003 eq. 15 transposed).

    ``XtV`` is overwritten (the m × k arrays dominate the memory traffic); ``VtV`` may be
    passed when already computed (``U`` and ``XtV`` may then be a block of rows)."""
    denominator = U @ (V.T @ V if VtV is None else VtV)
    np.maximum(denominator, EPS, out=denominator)
    U *= np.divide(XtV, denominator, out=XtV)


def update_documents(V, XU, UtU, lam=0.0, WV=None, degree=None, floor=0.0):
    """``V ← V ⊙ (XU + λ W V) / (V UᵀU + λ D V)`` (Cai et al. 2011, eq. 16 transposed), then
    ``max(V, floor)`` when a ``floor`` is given (:func:`normal_floor`)."""
    denominator = V @ UtU
    if WV is not None:
        if graph_document_update(V, XU, WV, degree, denominator, lam, EPS, floor):
            return  # compiled: the same values
        denominator += lam * degree[:, None] * V
    np.maximum(denominator, EPS, out=denominator)
    V *= np.divide(XU if WV is None else XU + lam * WV, denominator, out=denominator)
    if floor:
        np.maximum(V, floor, out=V)


def normal_floor(V):
    """The floor of the document factor's multiplicative update with unit basis columns
    (``scaling="unit-basis"``): the square root of the smallest normal number of ``V``'s
    dtype (2⁻⁶³ ≈ 1.1·10⁻¹⁹ in float32), so that an entry at the floor, and the product of two
    of them, is still a normal number.

    Without it an entry the update keeps shrinking passes through the subnormal numbers, which
    slow every product it enters (GNMF's λ path on TDT2: up to 4 % of ``V``, the median
    iteration 26.7 ms instead of 18.6), and then sticks at 0, where no stronger graph term can
    move it. The floor is 10¹⁷ times below the entries' scale (unit tf-idf rows). The papers'
    scalings keep their exact updates, so the reproductions stay as they were."""
    return float(np.sqrt(np.finfo(V.dtype).tiny))


UNIT_NORM_TOLERANCE = 1e-4  # a unit column in float32, with room for its rounding


def unit_basis_step(U, XtV, VtV, term_graph=None):
    """The basis columns moved on the non-negative unit sphere; the objective never increases.

    With unit columns ``‖X − V Uᵀ‖² = ‖X‖² − 2 tr(UᵀXᵀV) + tr(U G Uᵀ)``, ``G = VᵀV ≥ 0``. The
    columns go in a few blocks (:data:`~textcluster.models._linalg.UNIT_BLOCKS`), each given
    the others: for a block b, ``diag(d) − G_bb``, ``d_c = Σ_{j∈b} G_jc``, is diagonally
    dominant, so the block's ``tr(U_b G_bb U_bᵀ)`` lies below its expansion at the current
    ``U₀`` with curvature ``diag(d)``: on unit columns ``const − 2 Σ_c u_cᵀ g_c``,
    ``g_b = (XᵀV)_b − U₀ G_{:,b} + U₀_b diag(d)``, minimized on the non-negative unit sphere by
    ``u_c = [g_c]₊ / ‖[g_c]₊‖`` (a column whose ``g_c`` has no positive entry is kept). A
    majorization step: the objective never increases, and the unit columns fix the scale that
    a graph term on V would otherwise shrink towards zero (see :class:`GNMF`). With one column
    a block it is hierarchical ALS on the sphere (Cichocki & Phan 2009, the column norm fixed),
    exact but k dependent passes over the rows; with all columns in one block the bound is
    looser the more the columns of V overlap (from LSA + k-means on Reuters, k = 66, the
    objective after 10 iterations 7915 against the column sweep's 7885, and on the defaults
    panel other λ chosen: CLUTO k1b NMI 0.67 against 0.74). A few blocks keep the sweep's
    progress in a few passes on every core (:func:`~textcluster.models._linalg.unit_columns`;
    ``XtV = XᵀV`` is overwritten).

    ``term_graph = (μ, W̃, d̃)`` adds ANMF's ``μ tr(Uᵀ L̃ U)``, ``L̃ = D̃ − W̃``, column after
    column (on column-major copies): with ``r_k = Xᵀv_k − Σ_{j≠k} u_j G_jk``, on the sphere
    ``uᵀL̃u = 2uᵀD̃u − uᵀ(D̃ + W̃)u``; the convex ``uᵀ(D̃ + W̃)u`` lies above its tangent at the
    current u₀, so ``−2uᵀ(r + μ(D̃ + W̃)u₀) + 2μ uᵀD̃u`` majorizes the column's objective; its
    minimizer on the non-negative unit sphere (:func:`sphere_quadratic`) is kept
    where it lowers the majorizer."""
    if term_graph is None:
        unit_columns(U, XtV, VtV)
        return
    columns, residuals = column_major(U), column_major(XtV)
    _term_graph_columns(columns, residuals, VtV, term_graph)
    U[...] = columns


def _term_graph_columns(U, XtV, VtV, term_graph):
    """:func:`unit_basis_step` with a term graph on column-major ``U`` and ``XtV``
    (overwritten). A column not yet of unit length (a caller's start) takes the step
    unconditionally, as it does without a term graph: the majorizer bounds the objective on the
    sphere only, so comparing against a column off it would keep that column forever."""
    mu, Wt, degree = term_graph
    for k in range(U.shape[1]):
        r = XtV[:, k]
        r -= U @ VtV[:, k]
        r += VtV[k, k] * U[:, k]
        u0 = U[:, k]
        r += mu * (Wt @ u0 + degree * u0)
        u = sphere_quadratic(r, 2.0 * mu * degree)
        on_sphere = abs(np.linalg.norm(u0) - 1.0) <= UNIT_NORM_TOLERANCE
        if u is not None and (not on_sphere or sphere_value(u, r, mu, degree)
                              <= sphere_value(u0, r, mu, degree)):
            U[:, k] = u


def multiplicative_step(X, U, V, lam=0.0, W=None, degree=None, VtV=None, WV=None,
                        unit_basis=False, floor=0.0):
    """One U-update, then one V-update (λ, graph ``W`` and ``degree`` for GNMF), in place.

    The U-update is Lee & Seung's, or with ``unit_basis`` the unit-column step
    (:func:`unit_basis_step`); the V-update is floored at ``floor`` when given. Each
    multiplicative update is applied block by block in the thread that computed that block of
    its sparse product (``XᵀV``, then ``XU``), so the elementwise work runs on every core while
    the block is still in cache. ``VtV = VᵀV`` and ``WV = W V`` of the current ``V`` may be
    passed when already computed (by the previous objective). Returns ``XU`` and ``UᵀU``."""
    VtV = V.T @ V if VtV is None else VtV
    if unit_basis:  # unit_basis_step without a term graph, which also gives the new UᵀU
        UtU = unit_columns(U, X.tdot(V), VtV)
    else:
        X.tdot(V, rowwise=lambda s, e, XtV: update_basis(U[s:e], V, XtV, VtV))
        UtU = U.T @ U
    WV = W @ V if W is not None and WV is None else WV

    def update_rows(s, e, XU):
        graph = (None, None) if W is None else (WV[s:e], degree[s:e])
        update_documents(V[s:e], XU, UtU, lam, *graph, floor=floor)

    return X.dot(U, rowwise=update_rows), UtU


def normalize_basis(U, V):
    """Scale each basis column to unit L2 norm; the document factor absorbs the scale."""
    norms = np.maximum(np.linalg.norm(U, axis=0), EPS)
    U /= norms
    V *= norms
    return norms


# -- what NMF's and CF's models share --------------------------------------------------------
class NCWWeighting(FactorizationModel):
    """A model with the option ``ncw`` (:class:`NMF`, :class:`~textcluster.models.CF`): the
    documents factorized after the normalized-cut weighting (:func:`ncw_weighted`), whose term
    totals and degree offset are kept (``term_totals_``, ``ncw_offset_``) to weight new
    documents alike; their codes are then solved for ``components_``."""

    _parameter_constraints = {**FactorizationModel._parameter_constraints,
                              "ncw": ["boolean", StrOptions({"regularized"})]}
    _state_attributes = FactorizationModel._state_attributes + ("term_totals_", "ncw_offset_")
    ncw: bool | str
    components_: np.ndarray
    term_totals_: np.ndarray | None
    ncw_offset_: float | None

    def _ncw_fitted(self, X):
        """``X`` as factorized: NCW-weighted when ``ncw`` (kept: the corpus' term totals and
        the offset added to the degrees, the mean degree for ``"regularized"``, else 0)."""
        if not self.ncw:
            self.term_totals_ = self.ncw_offset_ = None
            return X
        self.term_totals_ = np.asarray(X.sum(axis=0)).ravel()
        self.ncw_offset_ = (float(np.mean(X @ self.term_totals_, dtype=np.float64))
                            if self.ncw == "regularized" else 0.0)
        return ncw_weighted(X, self.term_totals_, self.ncw_offset_)

    def _transform(self, X):
        return basis_codes(self._weighted(X), self.components_)

    def _weighted(self, X):
        """New documents weighted as the corpus was (a state saved without an offset had none)."""
        if self.term_totals_ is None:
            return X
        return ncw_weighted(X, self.term_totals_.astype(X.dtype), self.ncw_offset_ or 0.0)


class WeightedGraphAttachment(GraphAttachment):
    """``transform`` of :class:`GNMF` and :class:`~textcluster.models.LCCF`: new documents,
    weighted as the corpus was (:class:`NCWWeighting`), attached to the fitted kNN graph at the
    graph strength used (λ times the context's ``lam_scale``), their neighbours' factor the one
    the fit's last update of the document factor saw."""

    def _keep_for_transform(self, X, embedding, factors, ctx):
        seen = factors.V if factors.seen is None else factors.seen  # None: no update made
        self._attach(X, seen * self.factor_scale_, (self.lam_ or 0.0) * ctx.lam_scale,
                     self.factor_scale_)

    def _transform(self, X):
        return self._attached_codes(X, self._weighted(X), self.components_)


# -- the estimators -----------------------------------------------------------------------
@shared_parameters
class NMF(NCWWeighting):
    """Non-negative matrix factorization ``min ‖X − V Uᵀ‖²_F, U, V ≥ 0``.

    Lee & Seung's multiplicative updates (paper 003, eqs. 2–3), started as Deng Cai's code
    does (uniform random factors, basis columns scaled to unit norm, the document factor
    absorbing the scale) and finished the same way. Clusters: k-means on the document factor's
    unit rows (``assign="cosine"``; the papers' k-means on its rows as they are is
    ``assign="kmeans"``, see :func:`textcluster.assign.fit_assignment`). ``init="custom"``:
    ``W`` (n × k) starts the document factor ``V``, ``H`` (k × m) the basis ``Uᵀ``.

    Parameters
    ----------
    {n_components}
    ncw : bool or "regularized", default=False
        The normalized-cut weighting of Xu, Liu & Gong (SIGIR 2003): documents scaled by
        ``d^{-1/2}`` with ``d = X Xᵀ 1`` before factorizing; "regularized": by
        ``(d + d̄)^{-1/2}``, ``d̄`` the mean degree (:func:`ncw_weighted`).
    {loop parameters}

    Attributes
    ----------
    components_ : (k, m) basis ``Uᵀ``, rows of unit L2 norm.
    labels_ : (n,) cluster of each document.
    objective_history_ : objective at the start and after each iteration of the kept run.
    n_iter_ : iterations of the kept run.
    cluster_centers_ : (k, k) centroids of the fitted assignment rule (of the unit rows for
        ``assign="cosine"``; the axes for ``"argmax"``).
    factor_scale_ : (k,) the basis column norms the document factor absorbed at the end.
    term_totals_ : (m,) or None, the corpus' term totals of the NCW weighting.
    ncw_offset_ : float or None, the offset added to the degrees (0 unless regularized).

    Notes
    -----
    Out of sample: ``transform`` solves the non-negative least-squares codes of new documents
    for ``components_`` (after the NCW weighting with the corpus' term totals when ``ncw``): the
    objective restricted to a new row. ``predict`` applies the fitted assignment rule to them.
    """

    _parameter_constraints = {
        **NCWWeighting._parameter_constraints,
        "init": [StrOptions({"random", "custom", "lsa-kmeans"})],
    }

    def __init__(self, n_components: NComponents = 8, *, ncw: bool | str = False,
                 max_iter: int = 100, tol: float = 0.0, n_init: int = 10, init_iter: int = 30,
                 init: str = "random", assign: str = "cosine", n_assign_init: int = 20,
                 random_state: Seed = None) -> None:
        super().__init__(n_components, max_iter=max_iter, tol=tol, n_init=n_init,
                         init_iter=init_iter, init=init, assign=assign,
                         n_assign_init=n_assign_init, random_state=random_state)
        self.ncw = ncw

    def _prepare(self, X, y, graph=None):
        X = self._ncw_fitted(X)
        op = SparseOperator(X)
        return NMFContext(X=op, data=X, X_norm2=op.squared_norm(), dtype=X.dtype)

    def _random_factors(self, ctx, rng):
        n, m = ctx.X.shape
        k = self.n_components
        U = rng.uniform(size=(m, k)).astype(ctx.dtype)
        V = rng.uniform(size=(n, k)).astype(ctx.dtype)
        normalize_basis(U, V)
        return NMFFactors(U=U, V=V)

    def _lsa_start(self, ctx):
        """``init="lsa-kmeans"``: :func:`~.selection.centroid_start` from the clusters of LSA +
        k-means (:class:`~textcluster.models.baselines.LSIKMeans` with the model's seed), at
        the least-squares scale."""
        lsa = LSIKMeans(self.n_components, random_state=self.random_state)
        U, V = centroid_start(ctx, lsa.fit(ctx.data).labels_, self.n_components)
        fit_scale(U, V, ctx.X)
        return NMFFactors(U=U, V=V)

    def _custom_factors(self, ctx, W, H):
        n, m = ctx.X.shape
        k = self.n_components
        V = check_custom_factor("W", W, (n, k), ctx.dtype)
        U = check_custom_factor("H", H, (k, m), ctx.dtype).T.copy()
        return NMFFactors(U=U, V=V)

    def _objective(self, factors, ctx):
        U, V = factors.U, factors.V
        return reconstruction_error(ctx.X_norm2, V, ctx.X.dot(U), U.T @ U)

    def _update(self, factors, ctx):
        # VᵀV of the new V serves the objective now and the next update
        U, V = factors.U, factors.V
        XU, UtU = multiplicative_step(ctx.X, U, V, VtV=factors.VtV)
        factors.VtV = V.T @ V
        return reconstruction_error(ctx.X_norm2, V, XU, UtU, factors.VtV)

    def _finish(self, factors, ctx):
        U, V = factors.U, factors.V
        self.factor_scale_ = normalize_basis(U, V)
        self.components_ = U.T
        return V


@shared_parameters
@parameter_entries
class GNMF(WeightedGraphAttachment, SelectsGraphStrength, NMF):
    """Graph-regularized NMF (Cai, He, Wu & Han, TPAMI 2011; paper 003, eqs. 8, 15–16).

    ``min ‖X − V Uᵀ‖²_F + λ tr(Vᵀ L V)`` over ``U, V ≥ 0``, ``L = D − W`` the Laplacian of a kNN
    graph over the documents (``n_neighbors``, ``weighting`` of :func:`textcluster.graph.
    knn_graph`, or a precomputed ``graph`` passed to ``fit``). The V-update is
    ``V ← V ⊙ (XU + λWV) / (VUᵀU + λDV)`` (eq. 16), a majorization step, so the objective never
    increases. λ = 0 gives :class:`NMF`. Memory: O(nnz + (n + m)k + n·n_neighbors); the fitted
    model keeps the training documents (O(nnz)) for ``transform`` (Notes). From 50,000
    documents the fit holds them in the graph's reverse Cuthill–McKee order, so that the
    products gather nearby factor rows (:func:`~textcluster.models._linalg.locality_order`;
    an iteration 0.95× the time at 100,000 documents, 0.92× at 300,000); every fitted
    attribute is in the documents' given order, and the fit is the same but for the random
    draws of its starts, which go to other documents.

    Scale (``scaling``). As written the objective has no minimizer but NMF's: ``(U s, V / s)``
    fits X equally well and divides the graph term by s², so its infimum lies at V → 0, and the
    multiplicative updates drift that way (measured on tr31, λ = 10³: the basis columns grew
    from norm 1 to 106 in 300 iterations, the graph's real weight falling 10⁴-fold). What λ
    does then depends on the start and on the number of iterations.

    * ``"unit-basis"`` (default) holds the basis columns at unit L2 norm: the U-update is a
      majorization step on the non-negative unit sphere (:func:`unit_basis_step`), so the
      objective never increases, has a minimizer, and λ a meaning. With unit basis columns the
      V-subproblem has curvature about 1 per factor; λ is divided by the graph's mean degree d̄,
      so the graph term acts as a low-pass filter on the factor with response
      ``1 / (1 + λ ν)`` at the graph frequency ν (an eigenvalue of ``L / d̄``, in [0, 2]).
    * ``"scale-free"``: the previous default. The start is scaled so that ``V Uᵀ`` is the
      least-squares fit of X, λ is divided by d̄, the basis is free; with λ = 10⁸ the graph
      term dominates and 370 multiplicative steps diffuse the factor along the graph (full
      TDT2 NMI 0.859; on corpora whose graph links topics every document ends with the same
      profile: DBpedia NMI 0.09).
    * ``"cai"``: Deng Cai's code: basis columns of a random start scaled to unit norm, V
      absorbing the norms, λ as given (λ = 100 acts as about 10¹⁰ on TDT2; NMI 0.867).

    λ (``lam``). ``"auto"`` (default) is chosen per corpus without labels with
    ``scaling="unit-basis"``; with the papers' scalings it is their fixed value (10⁸
    scale-free, 100 cai). The candidates (:class:`~textcluster.models.selection.
    SelectsGraphStrength`) are (1) the clusters of LSA + k-means (:meth:`NMF._lsa_start`; or
    ``W``, ``H`` with ``init="custom"``) and a path over λ ∈ ``LAM_PATH`` (0, 0.3, 1, … 10⁴)
    from them: 50 iterations at λ = 0, then 20 at each next λ, warm-started; and (2) a
    graph-led fit at λ = 10⁵ from three random starts of ``max_iter`` iterations, where the
    kNN graph's own clusters decide, as in spectral clustering. Each candidate's clusters are
    scored on the tf-idf rows (cohesion) and on held-out edges (the next neighbours beyond the
    graph's), and :func:`~textcluster.models.selection.choose` keeps the clusters that cut the
    fewest of those among the ones as coherent as the fit at λ = 0 (within 1 %; as the most
    coherent one where that fit is more than 1 % below it); the graph-led only if their three
    starts agree (NMI ≥ 0.9) and they are within 5 % as coherent as the most coherent
    candidate. The chosen one is returned as it was scored, its ``objective_history_`` that of
    its own run at its λ: more iterations at a graph strength move the clusters on (full
    TDT2, graph-led at λ = 10⁵: NMI 0.863 after 100 iterations, 0.849 after 200, mean of three
    seeds). The candidates and their scores are in ``lam_selection_``, the λ used in
    ``lam_``. Why: no single λ holds across corpora (on the development panel the best fixed
    λ ranges from 0 to 10⁵), and a
    strong graph term on a graph that links the topics smooths every document to the same
    profile (DBpedia: NMI 0.09 at the previous default λ = 10⁸). Cost: 230 path iterations,
    ``max_iter`` for each graph-led start (3; 1 on 19 of the panel's 22 corpora, where the
    first start is already too incoherent to be chosen) and 13–15 k-means runs on the factor,
    against ``n_init × init_iter + max_iter − init_iter`` = 370 iterations for a fixed λ; end
    to end 1.1–1.7 times a fixed-λ run (TDT2, la1, AG News, Reuters; bench_lam_selection).

    The graph check. ``graph_check=True`` (default) first verifies that the graph agrees with
    the data: the documents it links must be at least ``MIN_EDGE_LIFT`` = 2 times as similar
    (mean cosine over the edges) as random pairs (:func:`textcluster.graph.edge_lift`;
    measured on three-class draws of TDT2 and Reuters: kNN graphs 4.6–6.5, random 5-regular
    graphs 0.94–1.10). A graph that fails is not used: the model is fitted with λ = 0 (plain
    NMF) and a warning says so; the outcome is in ``graph_check_``.

    Parameters
    ----------
    {n_components}
    lam : float ≥ 0 or "auto", default="auto"
        The graph weight λ (see λ above).
    {document graph parameters}
    scaling : {"unit-basis", "scale-free", "cai"}, default="unit-basis"
        What fixes the factors' scale, and so what λ means (see Scale above).
    graph_check : bool, default=True
        Fit without the graph when it does not agree with the data (see The graph check).
    {ncw}
    {loop parameters}

    Attributes
    ----------
    components_, labels_, objective_history_ : as in :class:`NMF`.
    n_iter_ : int, as in :class:`NMF`; with λ chosen, the updates of the candidates considered.
    graph_ : (n, n) sparse, the document graph.
    lam_ : float, the λ used.
    lam_selection_ : dict or None, the candidates and their scores (None unless λ was chosen).
    graph_check_ : dict or None, the graph check's ``lift`` and ``passed``.

    Notes
    -----
    Out of sample (:mod:`textcluster.models._attach`): a new document is attached to the
    fitted graph as :func:`~textcluster.graph.knn_graph` would link it (its ``n_neighbors``
    nearest training documents and those whose kNN it would join, weighted alike; a training
    document passed again keeps its own edges), and its factor minimizes the objective restricted
    to its row, ``U`` and the training rows fixed: ``‖x − Uv‖² + λ Σ_j s_j ‖v − v_j‖²``, a
    non-negative least-squares problem with a ridge towards the neighbours' weighted mean. Exact
    for one new node (how it would change the training documents' edges is left out); the
    neighbours' factor is the one the fit's last V-update saw. With a precomputed ``graph``,
    new documents are attached by the kNN rule. Kept for it: the training rows ``X_fit_``
    (sparse), ``neighbour_factor_``, ``graph_``, ``graph_weight_`` and the scales; memory
    O(nnz + n·k + n·n_neighbors).
    """

    uses_document_graph = True
    _state_attributes = NMF._state_attributes + ("graph_", "lam_") + ATTACHMENT_STATE

    _parameter_constraints = {
        **NMF._parameter_constraints,
        "lam": [Interval(Real, 0, None, closed="left"), StrOptions({"auto"})],
        **DOCUMENT_GRAPH_CONSTRAINTS,
        "scaling": [StrOptions({"unit-basis", "scale-free", "cai"})],
        "graph_check": ["boolean"],
    }

    def __init__(self, n_components: NComponents = 8, *, lam: float | str = "auto",
                 n_neighbors: int = 5,
                 weighting: str = "binary",
                 graph_method: str = "auto", scaling: str = "unit-basis", graph_check: bool = True,
                 ncw: bool | str = False, max_iter: int = 100, tol: float = 0.0, n_init: int = 10,
                 init_iter: int = 30, init: str = "random", assign: str = "cosine",
                 n_assign_init: int = 20, random_state: Seed = None) -> None:
        super().__init__(n_components, ncw=ncw, max_iter=max_iter, tol=tol, n_init=n_init,
                         init_iter=init_iter, init=init, assign=assign,
                         n_assign_init=n_assign_init, random_state=random_state)
        self.lam = lam
        self.n_neighbors = n_neighbors
        self.weighting = weighting
        self.graph_method = graph_method
        self.scaling = scaling
        self.graph_check = graph_check

    def _prepare(self, X, y, graph=None):
        ctx = self._graph_context(X, y, graph)
        return self._fixed_strength(ctx, ctx.graph_off)

    def _graph_context(self, X, y, graph):
        W = graphs.document_graph(X, graph, self.n_neighbors, self.weighting, self.graph_method)
        self.graph_ = W
        graph_off = not self._check_graph(X, W)
        # a large corpus is fitted in its graph's locality order (labelled documents: as given)
        order = None if self.semi_supervised else locality_order(W)
        if order is not None:
            X, W = X[order], W[order][:, order]
        ctx = replace(super()._prepare(X, y, graph), order=order)
        graph = graph_fields(W, own_knn=graph is None)
        return extend(ctx, GraphContext, **graph, lam_scale=self._lam_scale(graph["degree"]),
                      graph_off=graph_off)

    def _check_graph(self, X, W):
        """``graph_check``: whether to use the graph (no: fit with λ = 0, and warn)."""
        self.graph_check_ = None
        if self.graph_check:
            lift = graphs.edge_lift(X, W)
            self.graph_check_ = {"lift": lift, "passed": bool(lift >= MIN_EDGE_LIFT)}
            if not self.graph_check_["passed"]:
                warnings.warn(GRAPH_FALLBACK.format(lift=lift, minimum=MIN_EDGE_LIFT),
                              UserWarning)
                return False
        return True

    def _scaling(self) -> str:
        """The scaling in effect (a semi-supervised model resolves its ``"auto"``)."""
        return self.scaling

    def _fixed_lam(self):
        """The λ given, the papers' fixed default for their scalings, or None (to choose)."""
        if self.lam != "auto":
            return float(self.lam)
        return DEFAULT_LAM.get(self._scaling())

    def _lam_scale(self, degree):
        """Factor from λ as given to the weight in the updates: 1 / d̄ but for Cai's scaling."""
        return 1.0 if self._scaling() == "cai" else 1.0 / max(degree.mean(), EPS)

    def _random_factors(self, ctx, rng):
        factors = super()._random_factors(ctx, rng)
        if self._scaling() != "cai":
            fit_scale(factors.U, factors.V, ctx.X)
        return factors

    def _objective(self, factors, ctx):
        return super()._objective(factors, ctx) + self._graph_products(factors.V, ctx)[1]

    def _graph_term(self, V, ctx):
        return self._graph_products(V, ctx)[1]

    def _document_floor(self, V):
        """The floor of the document factor's update: :func:`normal_floor` with unit basis
        columns, none with the papers' scalings."""
        return normal_floor(V) if self._scaling() == "unit-basis" else 0.0

    def _graph_products(self, V, ctx, out=None):
        """``W V`` (in ``out`` when given) and ``λ tr(Vᵀ L V)`` (:func:`graph_products`)."""
        smoothness, WV = graph_products(ctx.W, V, ctx.degree, out)
        return WV, ctx.lam * smoothness

    def _update(self, factors, ctx):
        # VᵀV and W V of the new V serve the objective now and the next update (which writes
        # its W V and the V it saw into the arrays of the last one)
        U, V, W, degree = factors.U, factors.V, ctx.W, ctx.degree
        factors.seen = kept_copy(V, factors.seen)
        XU, UtU = multiplicative_step(ctx.X, U, V, ctx.lam, W, degree, VtV=factors.VtV,
                                      WV=factors.WV, unit_basis=self._scaling() == "unit-basis",
                                      floor=self._document_floor(V))
        factors.WV, graph_term = self._graph_products(V, ctx, out=factors.WV)
        factors.VtV = V.T @ V
        return reconstruction_error(ctx.X_norm2, V, XU, UtU, factors.VtV) + graph_term


DEFAULT_LAM = {"scale-free": 1e8, "cai": 100.0}  # fixed λ: the previous default; Cai's code
MIN_EDGE_LIFT = 2.0  # kNN graphs: 4.6–6.5; graphs unrelated to the documents: about 1

GRAPH_FALLBACK = (
    "the document graph does not agree with the data: the documents it links are on average "
    "{lift:.2f} times as similar (cosine) as random pairs, below {minimum:g}; fitting without "
    "the graph (λ = 0: GNMF becomes NMF). Pass graph_check=False to keep the graph, or try "
    "another graph (n_neighbors, weighting)."
)


def fit_scale(U, V, X):
    """Scale ``V`` by the scalar that best fits ``X ≈ α V Uᵀ`` (least squares); ``X`` a
    :class:`~textcluster.models._linalg.SparseOperator`."""
    cross = np.vdot(V, X.dot(U))
    gram = np.vdot(U.T @ U, V.T @ V)
    V *= cross / max(gram, EPS)


def ncw_weighted(X, term_totals=None, offset=0.0):
    """Rows of ``X`` scaled by ``(d + offset)^{-1/2}``, ``d = X · term_totals`` (``term_totals``
    defaults to the corpus' own, ``Xᵀ 1``, giving ``d = X Xᵀ 1``); rows without terms are kept.
    ``offset = 0`` is the normalized-cut weighting of Xu, Liu & Gong (2003). The mean degree
    (``ncw="regularized"``) regularizes it as normalized spectral clustering is (Amini, Chen,
    Bickel & Levina 2013; Qin & Rohe 2013): without it a document that shares few terms with
    the corpus weighs up to ten times a median one on short texts (smallest ``d`` 1–2 % of the
    median on StackOverflow, biomedical, DBpedia, Classic4), and a factorization spends a
    cluster on it; with it no weight exceeds ``offset^{-1/2}``."""
    if term_totals is None:
        term_totals = np.asarray(X.sum(axis=0)).ravel()
    d = np.asarray(X @ term_totals).ravel() + offset
    scale = (1.0 / np.sqrt(np.where(d > 0, d, 1.0))).astype(X.dtype)
    return sp.csr_matrix(sp.diags(scale) @ X) if sp.issparse(X) else X * scale[:, None]

"""Projective NMF and automated-graph projective NMF (Pei, Wu & Chen 2014; paper 000).

Orientation (see :mod:`textcluster.models._base`): ``X`` is documents × terms (n × m); paper 000
writes its transpose. Its projective model ``X ≈ X H Hᵀ`` (eq. 6, the terms × documents form)
reads ``X ≈ H Hᵀ X`` here: ``H`` (n × k) is the document factor, the paper's cluster
indicator, and ``HᵀX`` (k × m) the basis (the paper's ``Wᵀ = (XH)ᵀ``). All three models see the
documents only through the document Gram matrix ``G = X Xᵀ`` (the paper's ``XᵀX``), or a kernel
``K`` in its place (eqs. 18–21):

``‖X − H HᵀX‖² = tr G − 2 tr(HᵀGH) + tr(HᵀH · HᵀGH)``.

Products with a thin ``B`` are taken as ``X (Xᵀ B)``; ``G S`` with the n × n ``S`` of AGPNMF
the same way, by column blocks, unless the dense BLAS-3 product is cheaper (small n, many
non-zeros per document): :mod:`textcluster.models._gram`.

The H-update. Paper 000's eq. 17 is derived with ``W = XH`` held fixed and a Lagrange
multiplier substituted afterwards; it is not a majorization of the objective, and for
γ = 0 (Yang & Oja's PNMF rule) it raised the objective in 17 to 93 of 300 iterations on small
random and planted corpora (measured). The rule used here is derived from the objective: the
concave ``−2 tr(HᵀGH)`` and ``−γ tr(Hᵀ(D + R)H)`` (``D + R`` is positive semi-definite) are
bounded by their tangents, ``tr(HᵀH·HᵀGH)`` (non-negative coefficients, degree 4) by
``Σ (∇)_ik H_ik (H'_ik/H_ik)⁴ / 4`` and ``2γ tr(HᵀDH)`` by ``γ Σ D_i H_ik² ((H'/H)⁴ + 1)``.
The minimizer of that bound is

``H ← H ⊙ [(2GH + γ(DH + RH)) / (H·HᵀGH + GH·HᵀH + 2γDH)]^(1/3)``

(with ``L = D − R`` this is ``γ tr(HᵀLH) = 2γ tr(HᵀDH) − γ tr(Hᵀ(D + R)H)``), so the objective
never increases; for γ = 0 it is the cube-root rule for ``‖X − H HᵀX‖²`` (the one
``convex-nmf``'s cluster-NMF uses too). Its fixed points are those of eq. 17 (numerator −
denominator is half the gradient).

Acceleration (``accelerate=True``, default). The cube root makes small steps: on TDT2
five-class subsets PNMF's objective still changed by 10⁻³ per 10 iterations after 100, and
AGPNMF's clusters kept improving up to 300 (measured). Each iteration therefore first tries
the unrooted step ``H ⊙ ratio`` (three times as far in log scale; Yang & Oja's rule for
γ = 0) and keeps it when it does not raise the objective; otherwise it takes the cube-root
step. The objective still never increases, and the extra evaluation is spent only when the
trial is rejected. Measured on three TDT2 draws, 100 iterations: PNMF NMI 0.995 / 0.643 /
0.632 accelerated vs 0.995 / 0.610 / 0.483; AGPNMF 1.0 / 1.0 / 0.716 accelerated vs
0.990 / 0.987 / 0.684 for 300 plain iterations, in a third of the time.
"""

from __future__ import annotations

from dataclasses import dataclass
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp

from .._compat import Interval, StrOptions
from ._attach import ATTACHMENT_STATE, LearnedGraphAttachment
from ._base import (EPS, Context, Factors, FactorizationModel, Seed,
                    check_custom_factor, extend, shared_parameters)
from ._codes import nonnegative_codes
from ._gram import (DataGram, KernelGram, check_start_graph, graph_statistics, graph_step,
                    neighbourhood_support, random_square, scale_graph, support_graph)
from ._linalg import SparseOperator
from ._memory import dense_bytes, format_bytes, require_memory
from .baselines import LSIKMeans
from .cluster_count import NComponents
from .selection import GraphStrength, SelectsGraphStrength, graph_fields, membership

DEFAULT_GAMMA = 100.0  # scale-free γ of AGPNMF's learned-graph fits (see its docstring)
GAMMA_PATH = (0.0, 0.3, 1.0, 3.0, 10.0)  # its geometry-led path from LSA + k-means
PAPER_GAMMA = 0.01  # paper 000's γ, read unscaled


# -- what the family prepares and iterates ----------------------------------------------------
@dataclass(kw_only=True)
class ProjectiveContext(Context):
    """What PNMF prepares: the document Gram matrix (or a kernel) and the data."""

    gram: DataGram | KernelGram
    """``G = X Xᵀ``, or the kernel in its place."""
    X: SparseOperator
    """The data, for threaded products (the basis ``HᵀX``)."""
    data: sp.csr_matrix | np.ndarray
    """The data as given (the start from the clusters of LSA + k-means reads it)."""


@dataclass(kw_only=True)
class GraphProjectiveContext(GraphStrength, ProjectiveContext):
    """PNMF's context with AGPNMF's starting graph, the graph its clusterings are judged on
    (``W``: the kNN support, or the caller's graph) and the graph weight γ (``lam``)."""

    start_graph: sp.csr_matrix | np.ndarray | None
    """Where ``S`` starts (None: uniform random)."""
    scale_start: bool
    """Scale the starting ``S`` to the best fit (not for a caller's graph)."""


@dataclass(kw_only=True)
class ProjectiveFactors(Factors):
    """One start of ``X ≈ H HᵀX``."""

    H: np.ndarray
    """The document factor (n × k)."""
    GH: np.ndarray
    """``G H`` of the current ``H``."""
    value: float | None = None
    """The objective at the current ``H``, left by the last update (None: not computed)."""
    seen: np.ndarray | None = None
    """``H`` as the last update of ``H`` saw it (AGPNMF; None: not kept)."""

    @property
    def V(self) -> np.ndarray:  # the document factor, under the name the λ selection reads
        return self.H


@dataclass(kw_only=True)
class GraphProjectiveFactors(ProjectiveFactors):
    """One start of AGPNMF: PNMF's factors and the learned graph."""

    S: np.ndarray | sp.csc_matrix
    """The learned graph (n × n): dense, or on the support of a sparse start (CSC)."""
    GS: np.ndarray
    """``G S`` of the current ``S`` (its entries on that support when ``S`` is sparse)."""
    quad: float
    """``Σ S ⊙ GS``."""


# -- the math: small pure functions ---------------------------------------------------------
def projective_error(trace, H, GH):
    """``‖X − H HᵀX‖² = tr G − 2 tr(HᵀGH) + tr(HᵀH · HᵀGH)`` (paper 000, eq. 6), from
    ``tr G`` and ``G H``."""
    HtGH = H.T @ GH
    return max(trace - 2.0 * float(np.trace(HtGH)) + float(np.vdot(H.T @ H, HtGH)), 0.0)


def projection_ratio(H, GH, gamma=0.0, degree=None, RH=None):
    """``(2GH + γ(DH + RH)) / (H·HᵀGH + GH·HᵀH + 2γDH)``: the majorization step of the module
    docstring (paper 000's eq. 17, corrected) is ``H ⊙ ratio^(1/3)``; ``RH`` is ``R H`` with
    ``R = (S + Sᵀ)/2`` and ``degree`` the diagonal of ``D``."""
    HtGH, HtH = H.T @ GH, H.T @ H
    numerator = 2.0 * GH
    denominator = H @ HtGH
    denominator += GH @ HtH
    if gamma > 0:
        DH = degree[:, None] * H
        numerator += gamma * (DH + RH)
        denominator += (2.0 * gamma) * DH
    np.maximum(denominator, EPS, out=denominator)
    return np.divide(numerator, denominator, out=numerator)


def projection_step(H, ratio, evaluate, current, accelerate):
    """The next ``H``: the unrooted step ``H ⊙ ratio`` when ``accelerate`` and it does not
    raise the objective above ``current``, else the majorization step ``H ⊙ ratio^(1/3)``
    (which never does). ``evaluate(H)`` returns ``(objective, cache)``. Returns
    ``(H, objective, cache)``. Either way the objective never increases; the unrooted step
    moves three times as far in log scale, which pays where the cube root crawls."""
    if accelerate:
        trial = H * ratio
        value, cache = evaluate(trial)
        if value <= current:
            return trial, value, cache
    H = H * np.cbrt(ratio)
    value, cache = evaluate(H)
    return H, value, cache


def graph_smoothness(H, SH, degree):
    """``tr(HᵀLH) = Σ_i D_i ‖h_i‖² − tr(HᵀSH)``, ``L = D − (S + Sᵀ)/2`` (eq. 9)."""
    H64 = H.astype(np.float64, copy=False)
    return float(np.einsum("i,ij,ij->", degree, H64, H64) - np.vdot(H64, SH))


def basis_norms(H, GH):
    """The norms ``‖(HᵀX)_c‖ = √(h_cᵀ G h_c)`` of the basis vectors (at least √EPS)."""
    return np.sqrt(np.maximum(np.einsum("ij,ij->j", H, GH), EPS)).astype(H.dtype)


def projective_code_map(H, scale):
    """The map ``D⁻¹ (2I − HᵀH) D`` (``D = diag(scale)``) that takes a document's products
    with the unit basis rows to the right-hand side of its row of the stationarity conditions
    (see :class:`PNMF`'s Notes)."""
    M = 2.0 * np.eye(H.shape[1]) - H.T.astype(np.float64) @ H
    return M * scale[None, :].astype(np.float64) / scale[:, None].astype(np.float64)


def stationarity_system(X, components, code_map):
    """The right-hand side ``D⁻¹(2I − HᵀH)D · C x`` of the rows ``x`` of ``X`` in the
    stationarity conditions (``code_map`` from :func:`projective_code_map`) and the Gram
    matrix ``C Cᵀ`` of the unit basis rows ``C`` (``components``), in ``X``'s dtype: the
    system :func:`~textcluster.models._codes.nonnegative_codes` solves for new documents."""
    basis = components.astype(X.dtype, copy=False)
    cross = SparseOperator(X).dot(np.ascontiguousarray(basis.T))
    return cross @ code_map.T.astype(X.dtype), basis @ basis.T


def unit_indicators(labels, k, dtype):
    """Cluster indicators (n × k), columns at unit length (``H Hᵀ X`` puts each document at its
    cluster's mean), plus 10⁻³ of the largest entry so that every entry can move."""
    H = np.asarray(membership(labels, k).todense(), dtype=dtype)
    H /= np.sqrt(np.maximum(H.sum(axis=0), 1.0))
    H += 1e-3 * H.max()
    return H


def scale_to_fit(H, GH):
    """Scale ``H`` (and ``GH``) so that ``H HᵀX`` is the least-squares scalar fit of ``X``."""
    HtGH = H.T @ GH
    quartic = float(np.vdot(H.T @ H, HtGH))
    if quartic > 0:
        c = np.sqrt(float(np.trace(HtGH)) / quartic)
        H *= c
        GH *= c


# -- the estimators ---------------------------------------------------------------------------
@shared_parameters
class PNMF(FactorizationModel):
    """Projective NMF ``min ‖X − H HᵀX‖²_F, H ≥ 0`` (Yang & Oja 2010; paper 000, eqs. 4–6).

    Paper 000 clusters with the document-side form (its eq. 6, ``X ≈ X H Hᵀ`` with ``X`` as
    terms × documents; eq. 4 puts the projection on the terms): ``H`` (n × k) is the
    document factor and ``HᵀX`` the basis. It is the objective of cluster-NMF (eq. 8) too.
    Update: ``H ← H ⊙ [2GH / (H·HᵀGH + GH·HᵀH)]^(1/3)``, ``G = X Xᵀ`` applied as
    ``X (Xᵀ H)`` — the majorization step of the module docstring with γ = 0 (Yang & Oja's
    rule without the cube root, which paper 000 uses, is not monotone). The default start is
    the clusters of LSA + k-means (``init="lsa-kmeans"``, as the graph models start; see
    :class:`~textcluster.models.ConvexNMF` for what it gave on the panel); random starts
    (``init="random"``, the papers') are uniform and scaled so that ``H HᵀX`` is the
    least-squares fit of ``X``. Each step tries the unrooted rule first (``accelerate``, see
    the module docstring). Clusters: k-means on the unit rows of ``H``, as NMF's.

    Memory: O(nnz + (n + m)k).

    ``init="custom"``: ``W`` (n × k) is the starting ``H``; ``H`` (k × m) is not used (the
    basis is determined by the document factor) and may be None. The document factor
    returned is ``H`` with column c multiplied by ``‖(HᵀX)_c‖``, as NMF scales its document
    factor when it normalizes the basis.

    Parameters
    ----------
    {n_components}
    accelerate : bool, default=True
        Try the unrooted step first (see the module docstring).
    {loop parameters}

    Attributes
    ----------
    components_ : (k, m) basis ``HᵀX`` with rows scaled to unit L2 norm.
    labels_, objective_history_, n_iter_ : as in :class:`~textcluster.models.NMF`.

    Notes
    -----
    Out of sample: the basis ``HᵀX`` holds every document's row, so a row of a
    stationary fit is not its least-squares code but solves its row of the stationarity
    conditions, ``(HᵀG H) h = (2I − HᵀH) HᵀX x`` with ``h ≥ 0`` (the KKT conditions of the
    objective). ``transform`` solves that row for a new document with ``H`` fixed (its own share
    of the basis, O(1/n), left out): non-negative least squares for the unit basis rows with the
    right-hand side mapped by ``code_map_``. It reproduces a stationary fit; the default 100
    steps stop short of one on some corpora, so the training documents' codes (what
    ``fit_transform`` returns and ``labels_`` assigns) are this solve after the last step.
    """

    _parameter_constraints = {**FactorizationModel._parameter_constraints,
                              "init": [StrOptions({"random", "custom", "lsa-kmeans"})],
                              "accelerate": ["boolean"]}
    _state_attributes = FactorizationModel._state_attributes + ("code_map_",)

    def __init__(self, n_components: NComponents = 8, *, accelerate: bool = True,
                 max_iter: int = 100, tol: float = 0.0, n_init: int = 10, init_iter: int = 30,
                 init: str = "lsa-kmeans",
                 assign: str = "cosine", n_assign_init: int = 20,
                 random_state: Seed = None) -> None:
        super().__init__(n_components, max_iter=max_iter, tol=tol, n_init=n_init,
                         init_iter=init_iter, init=init, assign=assign,
                         n_assign_init=n_assign_init, random_state=random_state)
        self.accelerate = accelerate

    def _prepare(self, X, y, graph=None):
        gram = DataGram(X)
        return ProjectiveContext(gram=gram, X=gram.X, data=X, dtype=X.dtype)

    def _random_factors(self, ctx, rng):
        n, k = ctx.gram.n, self.n_components
        H = rng.uniform(size=(n, k)).astype(ctx.dtype)
        GH = ctx.gram.dot(H)
        scale_to_fit(H, GH)
        return ProjectiveFactors(H=H, GH=GH)

    def _lsa_start(self, ctx):
        """``init="lsa-kmeans"``: the :func:`unit_indicators` of LSA + k-means, scaled to fit."""
        labels = LSIKMeans(self.n_components, random_state=self.random_state).fit(
            ctx.data).labels_
        H = unit_indicators(labels, self.n_components, ctx.dtype)
        GH = ctx.gram.dot(H)
        scale_to_fit(H, GH)
        return ProjectiveFactors(H=H, GH=GH)

    def _custom_factors(self, ctx, W, H):
        n, m = ctx.X.shape
        k = self.n_components
        if H is not None:
            check_custom_factor("H", H, (k, m), ctx.dtype)
        H = check_custom_factor("W", W, (n, k), ctx.dtype)
        return ProjectiveFactors(H=H, GH=ctx.gram.dot(H))

    def _objective(self, factors, ctx):
        return projective_error(ctx.gram.trace, factors.H, factors.GH)

    def _update(self, factors, ctx):
        H, GH, gram = factors.H, factors.GH, ctx.gram

        def evaluate(H):
            GH = gram.dot(H)
            return projective_error(gram.trace, H, GH), GH

        current = factors.value  # the last step's objective, at this H and GH
        if current is None:
            current = self._objective(factors, ctx)
        factors.H, factors.value, factors.GH = projection_step(
            H, projection_ratio(H, GH), evaluate, current, self.accelerate)
        return factors.value

    def _finish(self, factors, ctx):
        H = factors.H
        scale = self.factor_scale_ = basis_norms(H, factors.GH)
        basis = ctx.X.tdot(H).T
        basis /= np.maximum(np.linalg.norm(basis, axis=1), EPS)[:, None].astype(H.dtype)
        self.components_ = basis
        self.code_map_ = projective_code_map(H, scale)
        return H * scale

    def _transform(self, X):
        return nonnegative_codes(*self._cross_gram(X))

    def _cross_gram(self, X):
        return stationarity_system(X, self.components_, self.code_map_)


@shared_parameters
class AGPNMF(LearnedGraphAttachment, SelectsGraphStrength, PNMF):
    """Automated-graph projective NMF (Pei, Wu & Chen 2014; paper 000, eqs. 11–17).

    ``min ‖X − H HᵀX‖² + γ tr(HᵀLH) + ‖X − SᵀX‖² + α tr(SᵀS) + β ‖S‖₁``, ``H, S ≥ 0``
    (eq. 15 in documents × terms form), with ``L = D − R``, ``R = (S + Sᵀ)/2`` (eq. 12) and
    ``D`` its degrees: the document graph ``S`` (n × n) is learned with the factor, each
    document reconstructed from the others (Kong et al.'s relaxed LLE, eq. 11).

    Each iteration updates ``S`` by eq. 16 (a majorization step, as printed), then ``H`` by
    the corrected eq. 17 of the module docstring (accelerated as described there); the
    objective never increases. ``H`` starts uniform random (paper 000, III.C); ``S`` starts
    on the cosine kNN graph of the documents
    (``start_graph="knn"``, ``n_neighbors``: the neighbourhoods in which LLE, eq. 10,
    reconstructs each document; the multiplicative updates keep its zeros) or uniform random
    over all pairs (``start_graph="random"``, the paper's); both scaled to the least-squares
    fit of ``X``. ``self_loops=False`` (default) starts ``S`` with a zero diagonal, which the
    multiplicative updates keep: each document is reconstructed from the other documents, as
    in LLE (eq. 10). With self loops the trivial ``S ≈ I`` takes over (measured on a planted
    corpus: 98 % of ``S``'s mass on the diagonal, which the Laplacian ignores).

    Memory: O(nnz(X) + nnz(S)) from a sparse start (the default kNN start, or a caller's sparse
    graph), no n × n array: the multiplicative updates keep the start's zeros, so ``S`` is held
    on its support and only the entries of ``G`` and ``G S`` there are computed
    (:mod:`textcluster.models._gram`): O(nnz(S) · non-zeros per document) an iteration. A random
    or dense start needs the dense ``G = X Xᵀ`` plus ``S`` and ``G S`` for each start, ``(1 +
    2·n_init)`` n × n arrays, and n³ multiply-adds per ``G S`` (as ``X (Xᵀ S)`` where that is
    cheaper); ``fit`` refuses a corpus whose dense arrays do not fit in the available memory
    (:func:`textcluster.models._memory.require_memory`), before allocating them. The fitted
    model keeps the training documents and ``(S + Sᵀ)/2`` (sparse) for ``transform``.

    Defaults. At the paper's setting (γ = 0.01 on a random ``S``) the graph term was
    6·10⁻⁶ of the objective on TDT2 five-class subsets and AGPNMF clustered like PNMF (mean
    NMI 0.474 vs NMF's 0.593 over 10 draws, measured). Two things are needed for the graph to
    act. (1) Scale: ``H`` is close to a projection (entries ~ √(k/n)) while the error term
    grows with ``‖X‖²``, so ``scaling="scale-free"`` (default) multiplies γ by ``‖X‖²/k``
    (``tr K / k`` for a kernel); ``scaling="paper"`` uses γ as given. (2) The start: with
    the graph term in charge, a random ``S`` smooths ``H`` over random pairs, a kNN-supported
    one over neighbours. On five-class draws that no evaluation pipeline uses
    (``reports/agpnmf_defaults.md``), mean NMI on TDT2 / Reuters: NMF 0.797 / 0.446, the
    paper's setting 0.695 / 0.417, γ = 100 with a random ``S`` 0.340 / 0.169, with the kNN
    start γ = 10: 0.833 / 0.477, γ = 100: 0.905 / 0.745, γ = 1000: 0.961 / 0.736: γ = 100 is
    the smaller of the two weights at which the graph leads on both corpora.

    ``gamma="auto"`` (default) chooses γ per corpus without labels by the rule of
    :mod:`textcluster.models.selection`, as GNMF's λ. Geometry-led candidates: the clusters of
    LSA + k-means (:meth:`PNMF._lsa_start`, ``S`` on its start), then the path γ = 0, 0.3, 1,
    3, 10 warm-started from them (50, then 20 iterations; at γ = 10 and 100 CLUTO tr31 and
    la2 kept their clusters). The learned graph's: γ = 100 from two random starts
    (``max_iter`` iterations each), chosen only where they find the same clusters (NMI ≥ 0.9),
    within 5 % as coherent and cutting fewer next-nearest-neighbour edges; from random starts
    the learned graph finds the topics on TDT2 but locks on arbitrary clusters on the CLUTO
    sets (starts agreeing at 0.72–0.80), and only reproducibility tells which. No path from a
    dense start (``lam_path``). On the panel (reports/defaults_panel) the path clears the bar
    on k1b, la2 and tr31 (66.4, 51.5, 36.9; the start alone 56.9, 46.3, 34.5), not on hitech
    (23.0 against 23.6), and loses 3–4 points on Classic4 and DBpedia; TDT2 87.7 (γ = 100 on
    every seed). Cost: 2.5–2.8 × one fit. Clusters are read by cosine on ``H``'s unit rows
    (``assign="cosine"``; ``"kmeans"``: the papers' k-means on raw rows).

    ``n_init`` defaults to 1 (a dense start keeps two n × n arrays). ``init="custom"``: ``W``
    (n × k) is the starting ``H``, ``H`` (k × m) is not used; ``graph`` passed to ``fit``
    (n × n, non-negative, dense or sparse) is the starting ``S`` for every start, used as
    given (not scaled), in place of ``start_graph``. Zeros of the starting ``S`` stay zero.

    Parameters
    ----------
    {n_components}
    gamma : float ≥ 0 or "auto", default="auto"
        Weight γ of the graph term, scale-free (paper: 0.01 unscaled); 0 decouples ``H``
        from ``S``: the H-iterates are those of :class:`PNMF`. "auto": chosen per corpus
        (see Defaults), or the paper's 0.01 with ``scaling="paper"``.
    alpha : float ≥ 0, default=0.01
        Weight α of ``tr(SᵀS)`` (the paper's value).
    beta : float ≥ 0, default=0.01
        Weight β of ``‖S‖₁`` (the paper's value).
    start_graph : {"knn", "random"}, default="knn"
        Where ``S`` starts (see above).
    n_neighbors : int ≥ 1, default=10
        Neighbours per document of the kNN start.
    scaling : {"scale-free", "paper"}, default="scale-free"
        How γ is read (see Defaults).
    self_loops : bool, default=False
        Let ``S`` have a diagonal (see above).
    accelerate : bool, default=True
        Try the unrooted step first, as in :class:`PNMF`.
    {loop parameters}

    Attributes
    ----------
    components_, labels_, objective_history_, n_iter_ : as in :class:`PNMF`.
    graph_ : (n, n) the learned ``S`` (sparse from a sparse start; where it starts at γ = 0).
    lam_ : float, the γ used (0: the clusters of LSA + k-means were kept).
    lam_selection_ : dict or None, the candidates and their scores (None unless γ was chosen).

    Notes
    -----
    Out of sample: :class:`PNMF`'s row of the stationarity conditions with the
    graph term of a new node ν of the learned graph, ``γ Σ_j R_νj ‖h − h_j‖²``, ``R_νj = s_j / 2``:
    its column ``s`` of ``S`` reconstructs the document from its cosine kNN neighbourhood (the
    support ``S`` starts on), ``min_{s ≥ 0} ‖x − Σ_j s_j x_j‖² + α‖s‖² + β Σ_j s_j`` (the graph
    term left out of this step); a training document passed again keeps its row of
    ``R = (S + Sᵀ)/2`` (``symmetric_graph_``, sparse: memory O(nnz(S)), n² for a random start).
    The neighbours' ``H`` is the one the fit's last H-update saw.
    """

    uses_document_graph = True  # the start graph S0 (or the kNN support)
    _state_attributes = (PNMF._state_attributes + ("symmetric_graph_", "lam_")
                         + ATTACHMENT_STATE)
    @property
    def lam_path(self):
        """The geometry-led path, from a sparse start (from a dense one an update costs n³)."""
        return GAMMA_PATH if getattr(self, "_sparse_start", self.start_graph == "knn") else ()
    graph_led_lam = DEFAULT_GAMMA
    strength_parameter = "gamma"
    graph_led_starts = 2  # each start is a whole fit: the choice stays within 3 fits
    _stores_kernel = False  # a dense kernel in place of G (KernelAGPNMF)

    _parameter_constraints = {
        **PNMF._parameter_constraints,
        "gamma": [Interval(Real, 0, None, closed="left"), StrOptions({"auto"})],
        "alpha": [Interval(Real, 0, None, closed="left")],
        "beta": [Interval(Real, 0, None, closed="left")],
        "self_loops": ["boolean"],
        "start_graph": [StrOptions({"knn", "random"})],
        "n_neighbors": [Interval(Integral, 1, None, closed="left")],
        "scaling": [StrOptions({"scale-free", "paper"})],
    }

    def __init__(self, n_components: NComponents = 8, *, gamma: float | str = "auto",
                 alpha: float = 0.01, beta: float = 0.01, start_graph: str = "knn",
                 n_neighbors: int = 10, scaling: str = "scale-free", self_loops: bool = False,
                 accelerate: bool = True, max_iter: int = 100, tol: float = 0.0, n_init: int = 1,
                 init_iter: int = 30, init: str = "random", assign: str = "cosine",
                 n_assign_init: int = 20, random_state: Seed = None) -> None:
        super().__init__(n_components, accelerate=accelerate, max_iter=max_iter, tol=tol,
                         n_init=n_init, init_iter=init_iter, init=init, assign=assign,
                         n_assign_init=n_assign_init, random_state=random_state)
        self.gamma = gamma
        self.alpha = alpha
        self.beta = beta
        self.start_graph = start_graph
        self.n_neighbors = n_neighbors
        self.scaling = scaling
        self.self_loops = self_loops

    # -- preparation ----------------------------------------------------------------------
    def _prepare(self, X, y, graph=None):
        given = graph is not None
        self.lam_ = self._fixed_lam()
        self.lam_selection_ = None
        on_support = self._sparse_start = (sp.issparse(graph) if given
                                           else self.start_graph == "knn")
        self._require_memory(X, given and not on_support, on_support)
        gram, n = self._gram(X, dense=not on_support), X.shape[0]
        knn = (neighbourhood_support(X, self.n_neighbors)
               if not given and (self.start_graph == "knn" or self.lam_ is None) else None)
        start = (check_start_graph(graph, n, X.dtype) if given
                 else knn if self.start_graph == "knn" else None)
        # the graph the candidates' clusters are judged on (unused at a fixed γ)
        judged_on = sp.csr_matrix(start) if given else (
            knn if knn is not None else sp.csr_matrix((n, n), dtype=X.dtype))
        scale = gram.trace / self.n_components if self.scaling == "scale-free" else 1.0
        return GraphProjectiveContext(
            gram=gram, X=SparseOperator(X), data=X, dtype=X.dtype, scale_start=not given,
            start_graph=support_graph(start, X.dtype, self.self_loops) if on_support else start,
            **graph_fields(judged_on, own_knn=not given),
            lam_scale=scale, lam=(self.lam_ or 0.0) * scale)

    def _fixed_lam(self):
        """γ as given, the paper's γ = 0.01 for its scaling, or None (to choose)."""
        if self.gamma != "auto":
            return float(self.gamma)
        return PAPER_GAMMA if self.scaling == "paper" else None

    def _gram(self, X, dense=True):  # G = X Xᵀ, stored when a dense S reads all of it
        gram = DataGram(X)
        if dense:
            gram.densify()
        return gram

    def _require_memory(self, X, with_start_graph, on_support):
        n, starts = X.shape[0], 1 if self.init == "custom" else self.n_init
        choosing = self._fixed_lam() is None
        if choosing:  # the start, the learned-graph fit running and the best one so far
            starts = 1 + min(2, self.graph_led_starts)
        held = (f"each of the {starts} fits the choice of γ holds at once" if choosing
                else f"each of the {starts} start(s)")
        stored = [name for name, kept in [
            ("the Gram matrix", self._stores_kernel or not on_support),
            ("the starting graph", with_start_graph),
            (f"the learned graph S and its product with the Gram matrix for {held}",
             not on_support)] if kept]
        count = len(stored) + (0 if on_support else 2 * starts - 1)  # S and G S per start
        if count:  # none for S on the support of a sparse start and G through X
            itemsize = np.dtype(X.dtype).itemsize
            require_memory(
                dense_bytes(n, n, itemsize, count),
                f"{type(self).__name__}'s {count} dense {n:,} × {n:,} "
                f"{np.dtype(X.dtype).name} matrices ({', '.join(stored)}; "
                f"{format_bytes(n * n * itemsize)} each)",
                "Cluster fewer documents (a sample or a class subset), pass float32 data, "
                + ("give gamma (e.g. 100: one fit), " if choosing else "use n_init=1, ")
                + "or use a model whose memory grows with the non-zeros, such as pnmf or gnmf.")

    # -- starts ---------------------------------------------------------------------------
    def _random_factors(self, ctx, rng):
        factors = super()._random_factors(ctx, rng)
        return self._with_graph(factors, ctx, rng)

    def _custom_factors(self, ctx, W, H):
        factors = super()._custom_factors(ctx, W, H)
        return self._with_graph(factors, ctx, np.random.RandomState(self._seed()))

    def _lsa_start(self, ctx):
        factors = super()._lsa_start(ctx)
        return self._with_graph(factors, ctx, np.random.RandomState(self._seed()))

    def _seed(self):
        state = self.random_state
        return state if isinstance(state, Integral) else 0

    def _with_graph(self, factors, ctx, rng):
        gram, start = ctx.gram, ctx.start_graph
        S = random_square(rng, gram.n, ctx.dtype) if start is None else start.copy()
        if not (self.self_loops or sp.issparse(S)):  # a sparse start has lost its diagonal
            np.fill_diagonal(S, 0.0)
        GS = np.empty_like(S.data if sp.issparse(S) else S)
        quad = gram.product(S, GS)
        if ctx.scale_start:
            quad = scale_graph(S, GS, quad, gram.entries_on(S), self.alpha)
        return extend(factors, GraphProjectiveFactors, S=S, GS=GS, quad=quad)

    # -- iteration ------------------------------------------------------------------------
    def _objective(self, factors, ctx):
        stats = graph_statistics(factors.S, ctx.gram.entries_on(factors.S))
        return self._total(factors, ctx, stats)

    def _total(self, factors, ctx, stats):
        """Objective (eq. 15) from the cached ``G H``, ``Σ S⊙GS`` and ``stats`` of ``S``."""
        H, S = factors.H, factors.S
        value = super()._objective(factors, ctx) + self._graph_terms(factors, ctx, stats)
        if ctx.lam > 0:
            value += ctx.lam * graph_smoothness(H, S @ H, stats["degree"])
        return value

    def _graph_terms(self, factors, ctx, stats):
        """The terms without ``H``: ``‖X − SᵀX‖² + α tr(SᵀS) + β ‖S‖₁``."""
        value = max(ctx.gram.trace - 2.0 * stats["cross"] + factors.quad, 0.0)
        return value + self.alpha * stats["squares"] + self.beta * stats["total"]

    def _update(self, factors, ctx):
        H, S, GS, gram = factors.H, factors.S, factors.GS, ctx.gram
        factors.seen = H  # the step below makes a new H
        gamma = ctx.lam
        stats = graph_step(S, GS, gram.entries_on(S), H, gamma, self.alpha, self.beta)
        factors.quad = gram.product(S, GS)  # G S of the new S: objective and next S-step
        degree, RH, GH = stats["degree"], stats["RH"], factors.GH

        def evaluate(H):  # the terms with H; tr(HᵀSH) = tr(HᵀRH)
            GH = gram.dot(H)
            value = projective_error(gram.trace, H, GH)
            if gamma > 0:
                value += gamma * graph_smoothness(H, S @ H, degree)
            return value, GH

        current = projective_error(gram.trace, H, GH)
        if gamma > 0:
            current += gamma * graph_smoothness(H, RH, degree)
        ratio = projection_ratio(H, GH, gamma, degree, RH)
        factors.H, value, factors.GH = projection_step(H, ratio, evaluate, current,
                                                       self.accelerate)
        return value + self._graph_terms(factors, ctx, stats)

    def _finish(self, factors, ctx):
        self.graph_ = sp.csr_matrix(factors.S) if sp.issparse(factors.S) else factors.S
        return super()._finish(factors, ctx)

    def _keep_for_transform(self, X, embedding, factors, ctx):
        S = sp.csr_matrix(factors.S)
        self.symmetric_graph_ = sp.csr_matrix((S + S.T) * 0.5)
        seen = factors.H if factors.seen is None else factors.seen
        self._attach(X, seen * self.factor_scale_, (self.lam_ or 0.0) * ctx.lam_scale,
                     self.factor_scale_)

    def _transform(self, X):
        return self._codes(X, *self._cross_gram(X))

"""Dual-graph NMF: a kNN graph on the documents *and* one on the terms (ANMF, SODNMF).

Orientation as everywhere in the package: ``X`` is documents × terms (n × m), ``X ≈ V Uᵀ``
with ``V`` (n × k) the document factor and ``U`` (m × k) the basis. The papers write ``X`` as
terms × documents; their equations are translated below. The term graph is a kNN graph over
the columns of ``X`` (the terms' document profiles), built sparse and blockwise by
:func:`textcluster.graph.term_graph`: no dense terms × terms matrix is formed.
Memory: O(nnz + (n + m)k) plus the two sparse graphs.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from numbers import Real

import numpy as np
import scipy.sparse as sp

from .. import graph as graphs
from .._compat import Interval, StrOptions
from ._attach import ATTACHMENT_STATE, GraphAttachment
from ._base import (EPS, Context, Factors, FactorizationModel, Seed, TermGraphFit,
                    check_custom_factor, extend, fitted_with_labels, kept_copy,
                    shared_parameters)
from ._linalg import SparseOperator, graph_products
from ._parameters import DOCUMENT_GRAPH_CONSTRAINTS, TERM_GRAPH_CONSTRAINTS, parameter_entries
from .baselines import LSIKMeans
from .cluster_count import NComponents
from .nmf import (GNMF, GraphContext, fit_scale, normalize_basis, reconstruction_error,
                  unit_basis_step, update_documents)
from ._sodnmf import (  # noqa: F401 (l2_half_penalty, label_slots: the tests read them here)
    constraint_matrix,
    l2_half_penalty,
    l2_half_weights,
    label_slots,
    typical_row_norm,
    update_auxiliary,
    update_label_weights,
    update_scaling,
)
from .selection import GraphStrength, SelectsGraphStrength, centroid_start
from .semi import LABELLED_ASSIGN, check_partial_labels


# -- ANMF --------------------------------------------------------------------------------------
@dataclass(kw_only=True)
class DualGraphContext(GraphContext):
    """GNMF's context with ANMF's term graph and its weight."""

    Wt: sp.csr_matrix
    """The term graph (m × m, sparse)."""
    term_degree: np.ndarray
    """Its degrees."""
    mu_scale: float
    """Factor from μ as given to the term graph's weight in the updates."""
    mu: float = 0.0
    """The term graph's weight in the updates."""


@shared_parameters
@parameter_entries
class ANMF(TermGraphFit, GNMF):
    """Augmented (dual-graph) NMF (Xiong, Zang, Jiang & Hu; paper 002, eqs. 3, 5-10, 13-14).

    ``min ‖X − V Uᵀ‖²_F + λ tr(Vᵀ L V) + μ tr(Uᵀ L̃ U)``, ``U, V ≥ 0``, with ``L = D − W`` the
    Laplacian of a kNN graph over the documents and ``L̃ = D̃ − W̃`` that of a kNN graph over the
    terms (paper 002 writes X as data × features with the letters of U and V swapped between
    its sections; here λ weighs the document graph exactly as in :class:`GNMF` and μ the term
    graph, so μ = 0 is GNMF and λ = μ = 0 is NMF). Updates (majorization steps, so the
    objective never increases)::

        U ← U ⊙ (XᵀV + μ W̃ U) / (U VᵀV + μ D̃ U)      (eq. 9, derived)
        V ← V ⊙ (X U + λ W V) / (V UᵀU + λ D V)      (eq. 10 = GNMF's)

    Eq. 9 is printed with ``μ L̃ U`` in both numerator and denominator, which cancels nothing
    and is not the KKT step; the rule above follows from the gradient (eq. 5) split into its
    positive part ``U VᵀV + μ D̃ U`` and negative part ``XᵀV + μ W̃ U``. At the end the basis
    columns are scaled to unit norm and V absorbs the scale (eqs. 13-14).

    Graphs: 0/1 weights. The document graph is GNMF's default (p = 5 neighbours: ANMF adds the
    term graph to GNMF, so at μ = 0 the default ANMF is the default GNMF); the term graph
    keeps the paper's p = 7 (``n_neighbors``, ``weighting`` for the documents;
    ``term_neighbors``, ``term_weighting`` for the terms; the paper used p = 7 on both sides).
    Precomputed graphs: ``fit(X, graph=W, term_graph=W̃)`` (n × n and m × m, sparse or dense,
    symmetric, non-negative), as scikit-learn takes data-dependent arrays in ``fit``.
    Terms that occur in no document get no edges. The fitted graphs are in ``graph_`` and
    ``term_graph_``.

    Scale. As for GNMF (see its docstring and the README), the multiplicative updates are not
    scale invariant, so ``scaling`` fixes what λ and μ mean. ``"unit-basis"`` (default): the
    basis columns are held at unit norm; the U-step moves them on the unit sphere as GNMF's
    does, column after column where the term graph is majorized
    (:func:`~textcluster.models.nmf.unit_basis_step`), so the objective never increases. λ is
    divided by the document graph's mean degree and μ used as ``μ ‖X‖²_F / (k · d̃)`` with d̃
    the term graph's mean degree (over terms with an edge): ``‖X‖²/k`` is the fit's curvature in
    a unit basis column when ``V Uᵀ`` reproduces X, so the result does not depend on the data's
    scale, the edge weights or the number of neighbours. λ = "auto" (default) is chosen without
    labels as GNMF's is, and μ (``mu=None``, default) is tied to it: one strength for both
    graphs, so λ = 0 is NMF. Measured on LA Times 1 (7 document neighbours): the clusters scored
    at the chosen λ = 1 have NMI 0.55, and 80 more iterations there took them to 0.38, so the
    selection returns the scored clustering (see GNMF).
    ``"scale-free"`` (the previous default): GNMF's scale-free start, a free basis, λ = 10⁸
    and μ = 1 fixed. ``"cai"``: Deng Cai's start and λ, μ used as given (the paper's setting;
    its grid 10⁻³…10⁴; default μ = 100 like λ). There U has unit columns while V carries the
    whole scale (on TDT2 about 3·10⁴ times the least-squares fit), so μ of the paper's grid is
    negligible against ``VᵀV``.

    ``graph_check`` as in GNMF; a document graph that fails it is fitted without both graphs
    (plain NMF).

    ``init="custom"``: ``W`` is the document factor V (n × k), ``H`` the basis Uᵀ (k × m).
    Memory: O(nnz + (n + m)k + (n + m)·neighbours); the fitted model keeps the training
    documents (O(nnz)) for ``transform`` (Notes).

    Parameters
    ----------
    {n_components}
    lam : float ≥ 0 or "auto", default="auto"
        Weight λ of the document graph, as in :class:`GNMF`.
    mu : float ≥ 0 or None, default=None
        Weight μ of the term graph; None: tied to λ with ``"unit-basis"``, else 1
        (``"scale-free"``) or 100 (``"cai"``).
    {document graph parameters}
    {term graph parameters}
    scaling : {"unit-basis", "scale-free", "cai"}, default="unit-basis"
        What fixes the factors' scale, and so what λ and μ mean (see Scale above).
    graph_check : bool, default=True
        Fit without both graphs when the document graph does not agree with the data.
    {ncw}
    {loop parameters}

    Notes
    -----
    Out of sample: as :class:`GNMF` (the term graph does not involve a
    document's row); kept for it: the training rows, their factor and the document graph.
    """

    _parameter_constraints = {
        **GNMF._parameter_constraints,
        "mu": [Interval(Real, 0, None, closed="left"), None],
        **TERM_GRAPH_CONSTRAINTS,
    }

    def __init__(self, n_components: NComponents = 8, *, lam: float | str = "auto",
                 mu: float | None = None, n_neighbors: int = 5, weighting: str = "binary",
                 graph_method: str = "auto",
                 term_neighbors: int = 7, term_weighting: str = "binary",
                 scaling: str = "unit-basis", graph_check: bool = True, ncw: bool | str = False,
                 max_iter: int = 100, tol: float = 0.0, n_init: int = 10, init_iter: int = 30,
                 init: str = "random", assign: str = "cosine", n_assign_init: int = 20,
                 random_state: Seed = None) -> None:
        super().__init__(n_components, lam=lam, n_neighbors=n_neighbors, weighting=weighting,
                         graph_method=graph_method,
                         scaling=scaling, graph_check=graph_check, ncw=ncw, max_iter=max_iter,
                         tol=tol, n_init=n_init, init_iter=init_iter, init=init, assign=assign,
                         n_assign_init=n_assign_init, random_state=random_state)
        self.mu = mu
        self.term_neighbors = term_neighbors
        self.term_weighting = term_weighting

    def _prepare(self, X, y, graph=None, term_graph=None):
        ctx = self._graph_context(X, y, graph)
        Wt = graphs.term_graph(X, term_graph, self.term_neighbors, self.term_weighting)
        term_degree = np.asarray(Wt.sum(axis=1)).ravel()
        self.term_graph_ = Wt
        mu_scale = (1.0 if self._scaling() == "cai"
                    else ctx.X_norm2 / (self.n_components * graphs.mean_degree(term_degree)))
        ctx = extend(ctx, DualGraphContext, Wt=Wt, term_degree=term_degree, mu_scale=mu_scale)
        return self._fixed_strength(ctx, ctx.graph_off)

    def _at_strength(self, ctx, lam):
        """λ for the document graph, and μ for the term graph: the same strength λ when μ is
        tied to it (``mu=None`` with ``scaling="unit-basis"``), else μ as given or the
        default."""
        mu = self.mu if self.mu is not None else DEFAULT_MU[self._scaling()]
        if ctx.graph_off:
            mu = 0.0
        elif mu is None:
            mu = lam
        return replace(super()._at_strength(ctx, lam), mu=mu * ctx.mu_scale)

    def _objective(self, factors, ctx):
        return super()._objective(factors, ctx) + self._term_graph_term(factors.U, ctx)

    def _term_graph_term(self, U, ctx):
        if ctx.mu == 0:
            return 0.0
        return ctx.mu * graph_products(ctx.Wt, U, ctx.term_degree)[0]

    def _update(self, factors, ctx):
        U, V, X, mu = factors.U, factors.V, ctx.X, ctx.mu
        factors.seen = kept_copy(V, factors.seen)
        if self._scaling() == "unit-basis":
            term_graph = (mu, ctx.Wt, ctx.term_degree) if mu else None
            unit_basis_step(U, X.tdot(V), V.T @ V, term_graph)
        else:
            WtU = ctx.Wt @ U if mu else None
            update_documents(U, X.tdot(V), V.T @ V, mu, WtU, ctx.term_degree)  # eq. 9
        XU, UtU = X.dot(U), U.T @ U
        update_documents(V, XU, UtU, ctx.lam, ctx.W @ V, ctx.degree,
                         self._document_floor(V))  # eq. 10
        error = reconstruction_error(ctx.X_norm2, V, XU, UtU)
        return error + self._graph_term(V, ctx) + self._term_graph_term(U, ctx)


DEFAULT_MU = {"unit-basis": None, "scale-free": 1.0, "cai": 100.0}  # None: μ = λ


# -- SODNMF ------------------------------------------------------------------------------------
PAPER_ALPHA = 100.0  # SODNMF's α with labels (see its Defaults)


@dataclass
class GraphTerm:
    """A graph term ``α tr(Fᵀ L F)`` of SODNMF: the graph, its degrees and its weight."""

    W: sp.csr_matrix
    """The graph (sparse)."""
    degree: np.ndarray
    """Its degrees."""
    alpha: float
    """The term's weight in the updates (0: no term)."""

    def value(self, F: np.ndarray) -> float:
        """``α tr(Fᵀ L F)``."""
        return self.alpha * graph_products(self.W, F, self.degree)[0] if self.alpha else 0.0

    def at(self, weight: float) -> GraphTerm:
        """The term with the weight ``weight`` per unit of mean degree (see SODNMF's Scale)."""
        return replace(self, alpha=weight / graphs.mean_degree(self.degree))


@dataclass(kw_only=True)
class SODNMFContext(GraphStrength, Context):
    """What SODNMF prepares: the data, the label slots, the two graphs and the weights
    (``lam`` is α as given, ``lam_scale`` 1: the graph terms hold the weights in the updates)."""

    X: SparseOperator
    """The data, for threaded products."""
    data: sp.csr_matrix | np.ndarray
    """The same matrix, as a matrix (for the LSA start and the choice of α)."""
    scale: float
    """``‖X‖²_F / k``, the fit's curvature: the unit of α, β and θ (see SODNMF's Scale)."""
    X_norm2: float
    """``‖X‖²_F``."""
    slot: np.ndarray
    """The row of ``A`` (column of ``C``) each document reads."""
    n_slots: int
    """Rows of ``A``: one per class, one per unlabelled document."""
    labelled: np.ndarray
    """Which documents are labelled (boolean, n)."""
    documents: GraphTerm
    """The document graph Wˢ (after the label rule) and its weight."""
    terms: GraphTerm
    """The term graph Wᴾ and its weight."""
    beta: float
    """The weight of the ridge (bi-orthogonality) terms."""
    theta: float
    """The weight of the L2,1/2 sparsity term on ``P``."""


@dataclass(kw_only=True)
class SODNMFFactors(Factors):
    """One start of ``X ≈ S R Pᵀ`` with ``S = C A``."""

    P: np.ndarray
    """The term-side factor (m × k)."""
    A: np.ndarray
    """The rows of the document factor, one per slot (n_slots × k)."""
    C: sp.csr_matrix
    """The label constraint matrix (n × n_slots, one weight per document)."""
    S: np.ndarray
    """The document factor ``C A`` (n × k)."""
    r: np.ndarray
    """The diagonal of R (k)."""
    r_seen: np.ndarray | None = None
    """R as the last update of S saw it (None: as ``r``)."""
    seen: np.ndarray | None = None
    """S as the last update of S saw it (None: not yet updated)."""

    @property
    def V(self) -> np.ndarray:
        """The document factor as the fit returns it (``S R`` times the norms of P's columns),
        which its clusters are read from."""
        return self.S * (self.r * np.linalg.norm(self.P, axis=0))


@shared_parameters
@parameter_entries
class SODNMF(GraphAttachment, SelectsGraphStrength, TermGraphFit, FactorizationModel):
    """Dual-graph NMF with sparse and bi-orthogonal constraints, semi-supervised (Meng, Shang,
    Jiao, Zhang & Yang, EAAI 2018; paper 004 §3, eqs. 16-35, Table 1).

    In the documents × terms orientation ``X ≈ S R Pᵀ`` with ``P`` (m × k) the term-side
    coefficient matrix, ``S = C A`` (n × k) the document factor and ``R`` a diagonal scaling
    matrix (eq. 18). ``C`` is the label constraint matrix (eq. 16): the labelled documents of a
    class share one row of ``A`` (each with its own weight, the entry of ``C``), every unlabelled
    document has its own. The objective minimized — the paper's Lagrangian (eq. 25) with the
    bi-orthogonality multiplier β held fixed, as its updates and its convergence proof do — is

        ‖X − S R Pᵀ‖²_F + α [tr(Pᵀ Lᴾ P) + tr(Sᵀ Lˢ S)] + β (‖P‖²_F + ‖S‖²_F)
        + θ Σ_i ‖P_i‖₂^{1/2}

    (the constant −2βk of eq. 25 left out). Note what this means: with β fixed the terms
    ``β tr(PᵀP − I) + β tr(SᵀS − I)`` are a ridge penalty; they shrink P and S but do not force
    ``PᵀP = I``, ``SᵀS = I``. Lᴾ, Lˢ are the Laplacians of kNN graphs on the terms and on the
    documents (heat-kernel weights as in the paper); an edge between two labelled documents
    gets the graph's largest weight if they share the label and 0 if not (§3.1.2).

    Updates, each a majorization step of the objective (so it never increases), in the paper's
    order P, A, C, R::

        P ← P ⊙ (XᵀSR + αWᴾP) / (P RSᵀSR + αDᴾP + βP + θQP)           (eq. 32)
        A ← A ⊙ Cᵀ(XPR + αWˢS) / (CᵀC A RPᵀPR + αCᵀDˢCA + βCᵀCA)       (eq. 33)
        C ← C ⊙ (XPRAᵀ + αWˢCAAᵀ) / (C ARPᵀPRAᵀ + αDˢCAAᵀ + βCAAᵀ)     (eq. 34)
        r ← r ⊙ diag(SᵀXP) / ((SᵀS ⊙ PᵀP) r)                           (eq. 35)

    with ``Q = diag(1 / (4 max(‖P_i‖^{3/2}, ε)))`` from the current P (eq. 27). Corrections to
    the printed rules: eq. 32 prints ``4θQP`` (and eq. 28 ``8θQP``); the gradient of
    ``θ Σ‖P_i‖^{1/2}`` is ``2θQP``, so the step has ``θQP`` — with 4θ the quadratic surrogate no
    longer majorizes the penalty. Eq. 34's numerator is garbled in print and derived from eq. 30.
    Eq. 35 is applied to the diagonal of R only (R is diagonal). C keeps its pattern (the
    updates are multiplicative) and only its labelled entries are updated: an unlabelled
    document's entry multiplies its own row of A and would only repeat the A-update.

    Scale. The objective is not scale invariant and, because R is free, P and S can shrink
    while R grows, which lowers every penalty at no cost in fit; the multiplicative updates
    drift along that direction, so the penalties fade as the iterations go on (measured on a
    5-class TDT2 subset with the defaults: ‖P‖_F fell from 2.2 to 0.30 in 100 iterations while
    r² rose from about 12 to 110–850), and the start fixes what α, β, θ mean. This class uses
    one convention: the start has unit-norm columns in P and S and R = r₀·I with r₀ the
    least-squares scale; each weight is then the ratio of its penalty's curvature to
    ``‖X‖²_F / k``, the fit's curvature when ``S R Pᵀ`` reproduces X with unit-norm columns (the
    same subset has ‖X‖²/k = 321; r² is 0.2 at the random start and 12 after the first
    iteration). α is used as ``α ‖X‖²/k / (mean degree)`` on each graph, β as ``β ‖X‖²/k``, θ as
    ``θ ‖X‖²/k · (k/m')^{3/4}`` (``√(k/m')`` is the norm of a typical row of P, m' the terms
    that occur). They mean the same for any data scale, edge weights, number of neighbours and
    vocabulary size.

    Ablations (§4.6, Table 6): ``alpha=0`` (no dual graph), ``beta=0`` (no bi-orthogonality
    term), ``scaling_matrix=False`` (R is not learned: it stays r₀·I), ``theta=0`` (no
    sparsity). With ``beta=theta=0``, ``scaling_matrix=False`` and no labels the model is
    :class:`ANMF` with one weight on both graphs; with ``alpha=0`` as well it is :class:`NMF`.

    Defaults: with labels, α, β, θ are values of the paper's grids (α ∈ {1 … 5000}, β ∈
    {10⁻⁸ … 10⁸}, θ ∈ {0.01 … 10}), chosen one at a time on 5-class draws of Cai's Reuters
    matrix, not on TDT2 (there α = 1 and β = 1 were much worse, θ = 0.1 and 1 slightly worse
    than 0.01, which scored as θ = 0): ``alpha="auto"`` is α = 100 and ``assign="auto"``
    k-means on the factor's rows. Without labels no α holds across corpora (α = 100 from the
    papers' ten random starts: NMI 0.06 on AG News, 0.27 on CLUTO tr12 and 0.25 on la1,
    against 0.45, 0.60 and 0.52 for LSA + k-means), so ``alpha="auto"`` chooses α as GNMF
    chooses λ (:mod:`~textcluster.models.selection`: the clusters of LSA + k-means, a path
    over α warm-started from them, a graph-led fit at α = 10⁵; ``lam_`` is the α chosen,
    ``lam_selection_`` the candidates) and ``assign="auto"`` reads the clusters by cosine.
    The whole path is run: the penalties fading as R grows (see Scale), a larger α need not
    move the clusters further, and after two inadmissible α in a row a later one was chosen
    in 3 of the panel's 66 runs (CLUTO hitech, seeds 1–2: α = 10³, NMI 25.7 and 25.8 against
    25.5 and 25.2 at the path's end; la2, seed 0: α = 10⁴, 53.1 against 47.3). Measured:
    reports/defaults_panel/acceptance.md. Heat weights on both graphs as in the
    paper, which does not give the number of neighbours.

    ``fit(X, y)``: ``y`` holds integer class codes, -1 for unlabelled documents (None: all
    unlabelled, the unsupervised dual-graph model); ``graph=`` and ``term_graph=`` take
    precomputed graphs (the label rule is applied to a precomputed document graph too).
    ``init="custom"``: ``W`` (n × k) is the start of the document factor S (the row of A for a
    class starts as the mean of its labelled documents' rows of W), ``H`` (k × m) that of Pᵀ,
    with C = 1 and R = I. The document factor returned is ``S R`` times the norms of P's
    columns; ``components_`` are P's columns scaled to unit norm.
    Memory: O(nnz + (n + m)k) plus the two sparse graphs; the fitted model keeps the
    training documents (O(nnz)) for ``transform`` (Notes).

    Parameters
    ----------
    {n_components}
    alpha : float ≥ 0 or "auto", default="auto"
        Weight α of the two graph terms (scale-free, see Scale); 0: no dual graph; "auto":
        100 with labels, chosen without them (see Defaults).
    beta : float ≥ 0, default=0.01
        Weight β of the bi-orthogonality (ridge) terms; 0: none.
    theta : float ≥ 0, default=0.01
        Weight θ of the L2,1/2 sparsity term on P; 0: none.
    scaling_matrix : bool, default=True
        Learn the diagonal scaling R (False: it stays r₀·I).
    {document graph parameters}
    {term graph parameters}
    {loop parameters}

    Attributes
    ----------
    components_, labels_, objective_history_, n_iter_ : as in :class:`NMF`.
    scaling_ : (k,) the diagonal of R.
    graph_, term_graph_ : the document graph (after the label rule) and the term graph.
    lam_ : float, the α fitted (given, or chosen).
    lam_selection_ : dict or None, the candidates and their scores (None unless α was chosen).

    Notes
    -----
    Out of sample: as :class:`GNMF`, with SODNMF's terms of an
    unlabelled row, ``‖x − P R s‖² + α Σ_j w_j ‖s − s_j‖² + β ‖s‖²``, solved with ``R`` and the
    neighbours' ``S`` as the fit's last update of ``S`` saw them, then scaled by the final ``R`` as
    the fitted factor is; kept for it: the training rows, their factor and the document graph.
    """

    semi_supervised = True
    uses_document_graph = True
    strength_parameter = "alpha"
    path_end_run = None  # the whole path: see Defaults
    _state_attributes = (FactorizationModel._state_attributes + ("graph_", "lam_")
                         + ATTACHMENT_STATE)

    _parameter_constraints = {
        **FactorizationModel._parameter_constraints,
        **dict.fromkeys(("beta", "theta"), [Interval(Real, 0, None, closed="left")]),
        "alpha": [Interval(Real, 0, None, closed="left"), StrOptions({"auto"})],
        "init": [StrOptions({"random", "custom", "lsa-kmeans"})],
        "assign": LABELLED_ASSIGN,
        "scaling_matrix": ["boolean"],
        **DOCUMENT_GRAPH_CONSTRAINTS,
        **TERM_GRAPH_CONSTRAINTS,
    }

    def __init__(self, n_components: NComponents = 8, *, alpha: float | str = "auto",
                 beta: float = 0.01, theta: float = 0.01, scaling_matrix: bool = True,
                 n_neighbors: int = 5, weighting: str = "heat",
                 graph_method: str = "auto", term_neighbors: int = 5, term_weighting: str = "heat",
                 max_iter: int = 100, tol: float = 0.0, n_init: int = 10, init_iter: int = 30,
                 init: str = "random", assign: str = "auto", n_assign_init: int = 20,
                 random_state: Seed = None) -> None:
        super().__init__(n_components, max_iter=max_iter, tol=tol, n_init=n_init,
                         init_iter=init_iter, init=init, assign=assign,
                         n_assign_init=n_assign_init, random_state=random_state)
        self.alpha = alpha
        self.beta = beta
        self.theta = theta
        self.scaling_matrix = scaling_matrix
        self.n_neighbors = n_neighbors
        self.weighting = weighting
        self.graph_method = graph_method
        self.term_neighbors = term_neighbors
        self.term_weighting = term_weighting

    # -- set-up ------------------------------------------------------------------------
    def _prepare(self, X, y, graph=None, term_graph=None):
        n, m = X.shape
        labels = check_partial_labels(y, n)
        self.n_label_classes_ = int(np.unique(labels[labels >= 0]).size)
        op = SparseOperator(X)
        X_norm2 = op.squared_norm()
        scale = X_norm2 / self.n_components  # the fit's curvature (see the docstring)
        doc_graph = self._document_graph(X, graph, labels)
        self.term_graph_ = graphs.term_graph(X, term_graph, self.term_neighbors,
                                             self.term_weighting)
        slot, n_slots = label_slots(labels)
        documents, terms = (GraphTerm(G, np.asarray(G.sum(axis=1)).ravel(), 0.0)
                            for G in (doc_graph, self.term_graph_))
        ctx = SODNMFContext(
            X=op, data=X, X_norm2=X_norm2, dtype=X.dtype, scale=scale, slot=slot,
            n_slots=n_slots, labelled=labels >= 0, documents=documents, terms=terms,
            W=doc_graph, degree=documents.degree, own_knn=graph is None, lam_scale=1.0,
            beta=self.beta * scale,
            theta=self.theta * scale * typical_row_norm(X, self.n_components) ** 1.5)
        return self._fixed_strength(ctx)

    def _fixed_lam(self):
        """α as given; ``"auto"``: the paper's α with labels, None without (to be chosen)."""
        if self.alpha != "auto":
            return float(self.alpha)
        return PAPER_ALPHA if fitted_with_labels(self) else None

    def _at_strength(self, ctx, lam):
        """``ctx`` with the weight α = ``lam`` (scale-free, see Scale) on both graphs."""
        return replace(ctx, lam=lam, documents=ctx.documents.at(lam * ctx.scale),
                       terms=ctx.terms.at(lam * ctx.scale))

    def _document_graph(self, X, graph, labels):
        W = graphs.document_graph(X, graph, self.n_neighbors, self.weighting,
                                  self.graph_method)
        if np.any(labels >= 0):
            W = graphs.label_aware_graph(W, labels)
        self.graph_ = sp.csr_matrix(W, dtype=X.dtype)
        return self.graph_

    # -- starts ------------------------------------------------------------------------
    def _random_factors(self, ctx, rng):
        """Uniform P and A at :meth:`_unit_scale`."""
        m, k, dtype = ctx.X.shape[1], self.n_components, ctx.dtype
        P = rng.uniform(size=(m, k)).astype(dtype)
        A = rng.uniform(size=(ctx.n_slots, k)).astype(dtype)
        return self._unit_scale(ctx, P, A)

    def _lsa_start(self, ctx):
        """``init="lsa-kmeans"``: P the unit centroids of the clusters of LSA + k-means, each
        document's row of S its product with them (:func:`~.selection.centroid_start`; a class's
        row of A the mean of its labelled documents'), at :meth:`_unit_scale`."""
        labels = LSIKMeans(self.n_components, random_state=self.random_state).fit(
            ctx.data).labels_
        P, S0 = centroid_start(ctx, labels, self.n_components)
        return self._unit_scale(ctx, P, self._slot_rows(ctx, S0))

    def _unit_scale(self, ctx, P, A):
        """The start from ``P`` and ``A``: columns of P and S = CA at unit norm, R = r₀·I
        with r₀ the least-squares scale (see Scale)."""
        P /= np.maximum(np.linalg.norm(P, axis=0), EPS)
        factors = self._assemble(ctx, P, A)
        A /= np.maximum(np.linalg.norm(factors.S, axis=0), EPS)
        S = factors.S = factors.C @ A
        unit = np.linalg.norm(S)
        fit_scale(P, S, ctx.X)  # S ← r₀ S, the least-squares scale; then move r₀ into R
        r0 = np.linalg.norm(S) / max(unit, EPS)
        S /= max(r0, EPS)
        factors.r[:] = r0
        return factors

    def _custom_factors(self, ctx, W, H):
        (n, m), k, dtype = ctx.X.shape, self.n_components, ctx.dtype
        S0 = check_custom_factor("W", W, (n, k), dtype)
        P = check_custom_factor("H", H, (k, m), dtype).T.copy()
        return self._assemble(ctx, P, self._slot_rows(ctx, S0))

    def _slot_rows(self, ctx, S0):
        """The rows of A from document rows ``S0``: a class's row the mean of its documents'."""
        counts = np.bincount(ctx.slot, minlength=ctx.n_slots).astype(S0.dtype)
        A = np.zeros((ctx.n_slots, S0.shape[1]), dtype=S0.dtype)
        np.add.at(A, ctx.slot, S0)
        return A / counts[:, None]

    def _assemble(self, ctx, P, A):
        weights = np.ones(ctx.slot.size, dtype=ctx.dtype)
        C = constraint_matrix(ctx.slot, ctx.n_slots, weights)
        r = np.ones(self.n_components, dtype=ctx.dtype)
        return SODNMFFactors(P=P, A=A, C=C, S=C @ A, r=r)

    # -- the objective and one iteration -------------------------------------------------
    def _objective(self, factors, ctx):
        P, S, r = factors.P, factors.S, factors.r
        return self._value(P, S, r, ctx.X.dot(P), ctx)

    def _value(self, P, S, r, XP, ctx):
        value = reconstruction_error(ctx.X_norm2, S * r, XP, P.T @ P)
        value += ctx.terms.value(P)
        value += ctx.documents.value(S)
        value += ctx.beta * float(np.vdot(P, P) + np.vdot(S, S))
        if ctx.theta:
            value += ctx.theta * l2_half_penalty(P)
        return value

    def _update(self, factors, ctx):
        P, r = factors.P, factors.r
        self._update_terms(P, factors.S, r, ctx)
        XP = ctx.X.dot(P)
        factors.seen = factors.S.copy()
        G = r[:, None] * (P.T @ P) * r[None, :]  # R PᵀP R
        self._update_documents(factors, XP * r, G, ctx)
        factors.r_seen = r.copy()
        if self.scaling_matrix:
            update_scaling(r, factors.S, XP, P.T @ P)
        return self._value(P, factors.S, r, XP, ctx)

    def _update_terms(self, P, S, r, ctx):
        """Eq. 32 (θQP corrected); GNMF's V-step form with the diagonal αDᴾ + β + θQ."""
        alpha, terms = ctx.terms.alpha, ctx.terms
        shrink = alpha * terms.degree + ctx.beta
        if ctx.theta:
            shrink = shrink + ctx.theta * l2_half_weights(P)
        WP = alpha * (terms.W @ P) if alpha else np.zeros_like(P)
        XtSR = ctx.X.tdot(S) * r
        update_documents(P, XtSR, r[:, None] * (S.T @ S) * r[None, :], 1.0, WP, shrink)

    def _update_documents(self, factors, XPR, G, ctx):
        """Eqs. 33 and 34: the rows of A, then the labelled documents' weights in C."""
        A, C, docs, beta = factors.A, factors.C, ctx.documents, ctx.beta
        alpha = docs.alpha
        rows_numerator = XPR + alpha * (docs.W @ factors.S) if alpha else XPR
        c = C.data
        cc = np.bincount(ctx.slot, weights=c * c, minlength=ctx.n_slots)
        cdc = np.bincount(ctx.slot, weights=docs.degree * c * c, minlength=ctx.n_slots)
        update_auxiliary(A, C, rows_numerator, G, (cc, alpha * cdc + beta * cc))
        S = C @ A
        if ctx.labelled.any():
            if alpha:
                rows_numerator = XPR + alpha * (docs.W @ S)
            update_label_weights(c, ctx.labelled, A[ctx.slot], rows_numerator, S, G,
                                 alpha * docs.degree + beta)
            S = C @ A
        factors.S = S

    def _finish(self, factors, ctx):
        P, S, r = factors.P, factors.S, factors.r
        V = S * r
        # S was last solved for R before its last update: S = V / factor_scale_
        seen = r if factors.r_seen is None else factors.r_seen
        self.factor_scale_ = seen * normalize_basis(P, V)
        self.components_ = P.T
        self.scaling_ = r
        self._seen_ratio = r / seen
        return V

    def _keep_for_transform(self, X, embedding, factors, ctx):
        scale, ctx = self.factor_scale_, self._at_strength(ctx, self.lam_)
        seen = factors.S if factors.seen is None else factors.seen  # None: no update made
        self._attach(X, seen * scale, ctx.documents.alpha, scale,
                     ctx.beta / np.square(scale), self._seen_ratio)

    def _transform(self, X):
        return self._attached_codes(X, X, self.components_)

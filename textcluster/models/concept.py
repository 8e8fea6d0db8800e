"""Concept factorization (CF), locally consistent CF (LCCF) and graph-regularized
semi-supervised CF (GRSCF).

Paper 001 (Shi, Du & Wang) writes X (terms × documents) ``≈ X W H``: each basis vector
("concept") is a non-negative combination of the documents. In the documents × terms
orientation of :mod:`textcluster.models._base`: ``X ≈ V Aᵀ X`` with ``A`` (n × k) the concept
weights (the paper's ``W``), ``V`` (n × k) the document factor (the paper's ``Hᵀ``) and the
basis ``U = Xᵀ A`` (``components_ = Aᵀ X``). With ``K = X Xᵀ`` (n × n; the paper's ``XᵀX``)

    ‖X − V Aᵀ X‖²_F = tr K − 2 tr(Vᵀ K A) + tr(AᵀKA · VᵀV),

so the updates need only ``K`` times thin matrices; two such products per iteration, through
the sparse ``X`` or with a dense ``K``, whichever is faster (:mod:`textcluster.models._kernel`).

The V-update has the form of NMF's with ``XU → KA`` and ``UᵀU → AᵀKA``
(:func:`textcluster.models.nmf.update_documents`); the graph and label terms enter exactly as
in GNMF and constrained NMF, whose functions are reused.

Scale. The graph term is not scale invariant: ``(A S, V S⁻¹)`` fits ``X`` equally well but
changes ``λ tr(VᵀLV)``, and multiplicative updates hardly move along that direction, so the
start sets how strong λ really is. Deng Cai's LCCF code rescales the document factor to
unit-norm columns after every iteration: λ acts on unit-norm columns. Here every start (random
or custom) has unit-norm document columns and the concept weights at the scalar that best fits
``X`` (least squares, :func:`fit_concept_scale`); the updates then keep the columns close to
unit norm, so λ means what it means in Cai's code while the objective never increases (the
per-iteration rescaling would change it). At the end each concept ``Xᵀ a_k`` is scaled to unit
norm and ``V`` absorbs the scale, as in Cai's code. Measured on TDT2 five-class draws, see
:class:`LCCF`.

Documents may be weighted by the normalized-cut weighting (``ncw``, Xu, Liu & Gong 2003; Cai's
``options.weight = 'NCW'``): ``K ← D^{-1/2} K D^{-1/2}``, ``D = diag(K 1)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from numbers import Real

import numpy as np
import scipy.sparse as sp

from .. import graph as graphs
from .._compat import Interval, StrOptions
from ._attach import ATTACHMENT_STATE
from ._base import EPS, Factors, Seed, extend, kept_copy, shared_parameters
from ._kernel import (KernelContext, custom_concept_start, kernel_context, kernel_fit_error,
                      normalize_concepts)
from ._linalg import graph_products
from .baselines import LSIKMeans
from ._parameters import DOCUMENT_GRAPH_CONSTRAINTS, parameter_entries
from .cluster_count import NComponents
from .nmf import (  # noqa: F401 (ncw_weighted: the tests read it here)
    NCWWeighting, WeightedGraphAttachment, ncw_weighted, update_documents)
from .selection import GraphStrength, SelectsGraphStrength, graph_fields, membership
from .semi import (LABELLED_ASSIGN, LabelConstraint, ScalingByLabels, check_partial_labels,
                   constrained_update_terms)


# -- what the family prepares and iterates --------------------------------------------------
@dataclass(kw_only=True)
class ConceptContext(KernelContext):
    """CF's context: the kernel of the (weighted) documents, and the documents as given."""

    data: sp.csr_matrix | np.ndarray
    """The documents before the NCW weighting (for LSA starts and λ's selection)."""


@dataclass(kw_only=True)
class GraphConceptContext(GraphStrength, ConceptContext):
    """CF's context with LCCF's document graph and graph strength."""


@dataclass(kw_only=True)
class LabelledConceptContext(GraphConceptContext):
    """LCCF's context with GRSCF's label constraint."""

    constraint: LabelConstraint
    """Which row of ``Z`` each document reads (``V = C Z``)."""


@dataclass(kw_only=True)
class ConceptFactors(Factors):
    """One start of ``X ≈ V Aᵀ X``."""

    A: np.ndarray
    """The concept weights (n × k)."""
    V: np.ndarray
    """The document factor (n × k)."""
    KA: np.ndarray
    """``K A`` of the current ``A``."""
    seen: np.ndarray | None = None
    """``V`` as the last update of ``V`` saw it (graph models; None: not kept)."""


@dataclass(kw_only=True)
class LabelledConceptFactors(ConceptFactors):
    """One start of GRSCF: CF's factors with ``V = C Z``."""

    Z: np.ndarray
    """The rows shared by the labelled documents of a class (n_rows × k)."""


# -- the math: small pure functions -------------------------------------------------------
def update_concepts(A, KA, KV, V):
    """``A ← A ⊙ KV / (KA VᵀV)`` (paper 001 eq. 4, 8 and 14 for ``W``, transposed).

    ``KV`` is overwritten."""
    denominator = KA @ (V.T @ V)
    np.maximum(denominator, EPS, out=denominator)
    A *= np.divide(KV, denominator, out=KV)


def unit_documents(A, V):
    """Scale each column of ``V`` to unit L2 norm; ``A`` absorbs the scale (Cai's
    ``NormalizeUV`` with ``NormV = 1``, applied to every start)."""
    norms = np.maximum(np.linalg.norm(V, axis=0), EPS).astype(V.dtype)
    V /= norms
    A *= norms
    return norms


def fit_concept_scale(A, KA, V):
    """Scale ``A`` (and ``KA``) by the scalar ``α`` that best fits ``X ≈ α V Aᵀ X`` (least
    squares): ``α = tr(VᵀKA) / tr(AᵀKA VᵀV)``."""
    cross = np.einsum("ij,ij->", V, KA, dtype=np.float64)
    gram = np.einsum("ij,ij->", A.T @ KA, V.T @ V, dtype=np.float64)
    alpha = A.dtype.type(cross / gram if gram > 0 and cross > 0 else 1.0)
    A *= alpha
    KA *= alpha


# -- the estimators -----------------------------------------------------------------------
@shared_parameters
class CF(NCWWeighting):
    """Concept factorization ``min ‖X − V Aᵀ X‖²_F, A, V ≥ 0`` (Xu & Gong, SIGIR 2004;
    paper 001 eqs. 3–4).

    Multiplicative updates, V first as in Cai's code: ``V ← V ⊙ KA / (V AᵀKA)`` then
    ``A ← A ⊙ KV / (KA VᵀV)``; each is a Lee–Seung majorization step, so the objective never
    increases. ``K = X Xᵀ`` (linear kernel), after the normalized-cut weighting (NCW) of the
    documents; that weighting is what sets CF apart from NMF on text (TDT2 five-class draws
    0–9 with the papers' protocol, mean NMI: CF 0.898, CF without NCW 0.777, NMF 0.794).
    Defaults: ``ncw="regularized"``, ``max_iter=200`` (Cai's LCCF demo) and one start from the
    clusters of LSA + k-means (``init="lsa-kmeans"``, :meth:`_lsa_start`, as PNMF and convex
    NMF start; ``"random"``: the papers' ten random starts). The papers' NCW (``ncw=True``,
    Cai's ``weight='NCW'``) weighs each document by ``d^{-1/2}``: on short texts a document
    that shares few terms with the corpus weighs up to ten times a median one, and CF spends a
    concept on it. ``"regularized"`` adds the mean degree to every degree
    (:func:`~textcluster.models.nmf.ncw_weighted`). On the 22 corpora of the development
    panel (seeds 0–2) CF's mean NMI went from 0.482 to 0.513 with it, and it cleared the
    defaults panel's bar on 18 corpora instead of 12 (StackOverflow 0.467 → 0.682, AG News
    0.296 → 0.482, Classic4 0.429 → 0.583, biomedical 0.269 → 0.316; it lost most on CLUTO
    k1b, 0.633 → 0.603, and la2, 0.480 → 0.464). On the TDT2 draws above, with these
    defaults: 0.668 regularized, 0.705 with the papers' NCW, 0.593 without, NMF 0.592. From
    random starts with the papers' NCW the short-text corpora collapsed into one cluster
    (StackOverflow 0.001, biomedical 0.048; with the clusters read on the factor's rows as
    they are). Clusters: k-means on the unit rows of the document factor,
    as :class:`~textcluster.models.NMF`'s.

    Memory: O(nnz + nk) — the kernel is used through ``X`` (``K B = X (Xᵀ B)``, time per
    iteration O(nnz·k)) unless a dense kernel, at most 40 numbers per non-zero, is faster and
    fits (:mod:`textcluster.models._kernel`).

    ``init="custom"``: ``W`` (n × k) is the initial document factor ``V``; ``H`` (k × m) an
    initial basis, from which each concept starts as the documents weighted by their
    similarity to that basis vector (``A = X Hᵀ``, rescaled); both then get the start-up
    scaling of the module docstring.

    Parameters
    ----------
    {n_components}
    ncw : bool or "regularized", default="regularized"
        Normalized-cut weighting of the documents: ``K ← D^{-1/2} K D^{-1/2}``, ``D = diag(K 1)``
        (True, the papers'); "regularized": ``D + d̄ I`` instead of ``D``, ``d̄`` the mean degree
        (:func:`~textcluster.models.nmf.ncw_weighted`); False: none.
    {loop parameters}

    Attributes
    ----------
    components_ : (k, m) the concepts ``Aᵀ X``, rows of unit norm.
    concept_weights_ : (n, k) ``A``.
    labels_, objective_history_, n_iter_ : as in :class:`~textcluster.models.NMF`.

    Notes
    -----
    Out of sample: the non-negative least-squares codes of new documents,
    NCW-weighted with the corpus' term totals (``term_totals_``), for the concepts
    ``components_``.
    """

    _parameter_constraints = {**NCWWeighting._parameter_constraints,
                              "init": [StrOptions({"random", "custom", "lsa-kmeans"})]}

    def __init__(self, n_components: NComponents = 8, *, ncw: bool | str = "regularized",
                 max_iter: int = 200, tol: float = 0.0, n_init: int = 10, init_iter: int = 30,
                 init: str = "lsa-kmeans", assign: str = "cosine", n_assign_init: int = 20,
                 random_state: Seed = None) -> None:
        super().__init__(n_components, max_iter=max_iter, tol=tol, n_init=n_init,
                         init_iter=init_iter, init=init, assign=assign,
                         n_assign_init=n_assign_init, random_state=random_state)
        self.ncw = ncw

    def _prepare(self, X, y, graph=None):
        return kernel_context(self._ncw_fitted(X), ConceptContext, data=X)

    def _random_factors(self, ctx, rng):
        n, k = ctx.X.shape[0], self.n_components
        A = rng.uniform(size=(n, k)).astype(ctx.dtype)
        V = rng.uniform(size=(n, k)).astype(ctx.dtype)
        return self._initial_factors(ctx, A, V)

    def _custom_factors(self, ctx, W, H):
        V, A = custom_concept_start(ctx, W, H, self.n_components)
        return self._initial_factors(ctx, A, V)

    def _lsa_start(self, ctx):
        """A start from the clusters of LSA + k-means: each concept the mean of its cluster's
        (weighted) documents, each document's factor its kernel product with the concepts
        (plus 10⁻³ of the largest, so that every entry can move); then the start-up scaling."""
        labels = LSIKMeans(self.n_components, random_state=self.random_state).fit(
            ctx.data).labels_
        members = membership(labels, self.n_components)
        A = np.asarray((members / np.maximum(members.sum(axis=0), 1)).todense(),
                       dtype=ctx.dtype)
        V = ctx.K.dot(A)
        V += 1e-3 * V.max()
        return self._initial_factors(ctx, A, V)

    def _initial_factors(self, ctx, A, V):
        unit_documents(A, V)
        KA = ctx.K.dot(A)
        fit_concept_scale(A, KA, V)
        return ConceptFactors(A=A, V=V, KA=KA)

    def _objective(self, factors, ctx):
        A, V, KA = factors.A, factors.V, factors.KA
        return kernel_fit_error(ctx.K_trace, V, KA, A.T @ KA) + self._graph_term(V, ctx)

    def _graph_term(self, V, ctx):
        return 0.0

    def _update(self, factors, ctx):
        K = ctx.K
        self._update_documents(factors, ctx, factors.A.T @ factors.KA)
        V = factors.V
        update_concepts(factors.A, factors.KA, K.dot(V), V)
        factors.KA = K.dot(factors.A)
        return self._objective(factors, ctx)

    def _update_documents(self, factors, ctx, AtKA):
        update_documents(factors.V, factors.KA, AtKA)

    def _finish(self, factors, ctx):
        A, V = factors.A, factors.V
        self.factor_scale_ = normalize_concepts(A, V, factors.KA)
        self.concept_weights_ = A
        self.components_ = np.ascontiguousarray(np.asarray(ctx.X.T @ A).T)
        return V


@shared_parameters
@parameter_entries
class LCCF(WeightedGraphAttachment, SelectsGraphStrength, CF):
    """Locally consistent concept factorization (Cai, He & Han, TKDE 2011; paper 001 eqs. 5–8).

    ``min ‖X − V Aᵀ X‖²_F + λ tr(Vᵀ L V)``, ``L = D − S`` the Laplacian of a kNN graph over the
    documents (eq. 5: cosine weights; or a precomputed ``graph`` passed to ``fit``).
    Updates (eq. 8 transposed): ``V ← V ⊙ (KA + λSV) / (V AᵀKA + λDV)`` and CF's A-update.
    λ = 0 gives :class:`CF` with the same ``ncw`` (same iterates).

    λ (``lam``) and ``scaling``. ``"auto"`` (default) chooses λ per corpus without labels, as
    :class:`~textcluster.models.nmf.GNMF` does (the path from the clusters of LSA + k-means,
    the graph-led fits and the rule of :mod:`textcluster.models.selection`). With
    ``scaling="scale-free"`` (default) λ multiplies the fit's curvature per factor, ``tr K / k``
    with unit-norm document columns, over the graph's mean degree, so that it means what it
    means in GNMF. ``scaling="cai"`` reads λ as Deng Cai's LCCF demo does (DESIGN §5:
    cosine graph with 5 neighbours, λ = 100 — the default for this scaling —, linear kernel,
    NCW weighting, 200 iterations, 10 starts of 30, the best continued): λ acts on document
    columns of about unit norm, as in Cai's code (see the module docstring: Cai rescales after
    every iteration; here the start is scaled so that no rescaling is needed and the objective
    never increases). Measured on TDT2 five-class draws (draws 0–9, k = 5, mean NMI): this
    start 0.957, Cai's per-iteration rescaling 0.957, Cai's start-up scaling alone 0.898 — no
    better than :class:`CF` (0.898): with it the document columns shrink to norm 0.001 in the
    first iteration (this start keeps them at 0.86), so λ = 100 acts about 10⁵ times weaker.
    The selection's cost is about 2 × a fixed-λ fit.

    Memory: O(nnz + nk) for the kernel, as :class:`CF`, plus O(n · n_neighbors) for the graph;
    the fitted model keeps the training documents (O(nnz)) for ``transform`` (Notes).

    Parameters
    ----------
    {n_components}
    lam : float ≥ 0 or "auto", default="auto"
        The graph weight λ; "auto": chosen per corpus, or 100 with ``scaling="cai"``.
    {document graph parameters}
    scaling : {"scale-free", "cai"}, default="scale-free"
        How λ is read (see above).
    ncw : bool or "regularized", default=True
        Normalized-cut weighting of the documents, as in :class:`CF`: the papers' by default.
        The choice of λ already keeps the clusters of LSA + k-means where a fit spends
        clusters on outlying documents; with ``"regularized"`` (CF's default) the mean NMI on
        the development panel was 0.528 against 0.531 (DBpedia 0.684 against 0.723, CLUTO
        tr31 0.354 against 0.365, seeds 0–2).
    {loop parameters}

    Attributes
    ----------
    components_, concept_weights_, labels_, objective_history_, n_iter_ : as in :class:`CF`.
    graph_ : (n, n) sparse, the document graph.
    lam_ : float, the λ used.
    lam_selection_ : dict or None, the candidates and their scores (None unless λ was chosen).

    Notes
    -----
    Out of sample: as :class:`~textcluster.models.GNMF`, for the concepts
    and the NCW-weighted document; kept for it: the training rows, their factor and the graph.
    """

    uses_document_graph = True
    _state_attributes = CF._state_attributes + ("graph_", "lam_") + ATTACHMENT_STATE

    _parameter_constraints = {
        **CF._parameter_constraints,
        "lam": [Interval(Real, 0, None, closed="left"), StrOptions({"auto"})],
        **DOCUMENT_GRAPH_CONSTRAINTS,
        "scaling": [StrOptions({"scale-free", "cai"})],
    }

    def __init__(self, n_components: NComponents = 8, *, lam: float | str = "auto",
                 n_neighbors: int = 5,
                 weighting: str = "cosine",
                 graph_method: str = "auto", scaling: str = "scale-free", ncw: bool | str = True,
                 max_iter: int = 200, tol: float = 0.0, n_init: int = 10, init_iter: int = 30,
                 init: str = "random", assign: str = "cosine", n_assign_init: int = 20,
                 random_state: Seed = None) -> None:
        super().__init__(n_components, ncw=ncw, max_iter=max_iter, tol=tol, n_init=n_init,
                         init_iter=init_iter, init=init, assign=assign,
                         n_assign_init=n_assign_init, random_state=random_state)
        self.lam = lam
        self.n_neighbors = n_neighbors
        self.weighting = weighting
        self.graph_method = graph_method
        self.scaling = scaling

    def _prepare(self, X, y, graph=None):
        ctx = super()._prepare(X, y, graph)
        W = graphs.document_graph(X, graph, self.n_neighbors, self.weighting,
                                  self.graph_method)
        self.graph_ = W
        graph = graph_fields(W, own_knn=graph is None)
        scale = (1.0 if self._scaling() == "cai"
                 else ctx.K_trace / (self.n_components * max(graph["degree"].mean(), EPS)))
        return self._fixed_strength(extend(ctx, GraphConceptContext, **graph, lam_scale=scale))

    def _scaling(self) -> str:
        """The scaling in effect (:class:`GRSCF` resolves its ``"auto"``)."""
        return self.scaling

    def _fixed_lam(self):
        """The λ given, Cai's λ = 100 for his scaling, or None (to choose)."""
        if self.lam != "auto":
            return float(self.lam)
        return 100.0 if self._scaling() == "cai" else None

    def _graph_term(self, V, ctx):
        return ctx.lam * graph_products(ctx.W, V, ctx.degree)[0]

    def _update_documents(self, factors, ctx, AtKA):
        V = factors.V
        factors.seen = kept_copy(V, factors.seen)
        update_documents(V, factors.KA, AtKA, ctx.lam, ctx.W @ V, ctx.degree)


@shared_parameters
@parameter_entries
class GRSCF(ScalingByLabels, LCCF):
    """Graph-regularized semi-supervised concept factorization (Shi, Du & Wang; paper 001
    eqs. 9–14).

    The labelled documents of one class share one representation: ``V = C Z`` with the label
    constraint matrix ``C`` (n × (c + n_unlabelled); the paper's ``Cᵀ``, eq. 9), so

        min ‖X − C Z Aᵀ X‖²_F + λ tr(Zᵀ Cᵀ L C Z),   A, Z ≥ 0      (eq. 10)

    Updates (eq. 14 transposed): CF's A-update with ``V = CZ``, and
    ``Z ← Z ⊙ (Cᵀ KA + λ CᵀSCZ) / (CᵀC Z AᵀKA + λ CᵀDCZ)``. ``CᵀC`` and ``CᵀDC`` are
    diagonal (class sizes, summed degrees), so this is LCCF's V-update on ``Z`` with the
    per-class means of ``KA``, ``SV`` and the degrees (the form of
    :func:`textcluster.models.semi.constrained_update_terms`).

    Labels: ``y`` with an integer class code per document and -1 for unlabelled ones
    (scikit-learn's convention; :func:`textcluster.pipeline.protocol.labeled_subset` draws them).
    ``y=None`` or all -1 gives ``C = I`` and exactly :class:`LCCF`'s iterates.

    Defaults: with labels, those of :class:`LCCF` at Cai's fixed setting (``scaling="cai"``,
    λ = 100, cosine graph, 5 neighbours, NCW, start-up scaling, restarts, raw k-means on the
    factor), not LCCF's label-free choice of λ: the labels carry the supervision. Without
    labels GRSCF is LCCF with its defaults: ``scaling="auto"`` and ``assign="auto"``
    (defaults) are then LCCF's ``"scale-free"``, λ chosen without labels, and ``"cosine"``.
    Paper 001 used ``n_neighbors=9``, ``lam=10`` on face images; on TDT2 five-class draws
    (draws 0–9, two labelled documents per class) they gave mean NMI 0.952 (0.951 on the
    unlabelled documents), against 0.961 (0.961) with the defaults and 0.957 for LCCF without
    labels. ``init="custom"``: as :class:`CF`, with the rows of ``W`` of each class's labelled
    documents averaged into their shared row of ``Z``.

    Memory: O(nnz + nk) for the kernel, as :class:`CF`, plus O(n · n_neighbors) for the graph;
    the fitted model keeps the training documents (O(nnz)) for ``transform`` (Notes).

    Parameters
    ----------
    {n_components}
    lam : float ≥ 0 or "auto", default="auto"
        The graph weight λ, as in :class:`LCCF`: 100 with Cai's scaling, else chosen.
    {document graph parameters}
    scaling : {"auto", "scale-free", "cai"}, default="auto"
        How λ is read, as in :class:`LCCF`; "auto": "cai" with labels, "scale-free" without.
    ncw : bool or "regularized", default=True
        Normalized-cut weighting of the documents, as in :class:`LCCF`.
    {loop parameters}

    Notes
    -----
    Out of sample: as :class:`LCCF`; a new document is unlabelled (its own
    row of ``Z``).
    """

    semi_supervised = True
    scaling_with_labels, scaling_without_labels = "cai", "scale-free"
    _parameter_constraints = {**LCCF._parameter_constraints,
                              "scaling": [StrOptions({"auto", "scale-free", "cai"})],
                              "assign": LABELLED_ASSIGN}

    def __init__(self, n_components: NComponents = 8, *, lam: float | str = "auto",
                 n_neighbors: int = 5,
                 weighting: str = "cosine",
                 graph_method: str = "auto", scaling: str = "auto", ncw: bool | str = True,
                 max_iter: int = 200, tol: float = 0.0, n_init: int = 10, init_iter: int = 30,
                 init: str = "random", assign: str = "auto", n_assign_init: int = 20,
                 random_state: Seed = None) -> None:
        super().__init__(n_components, lam=lam, n_neighbors=n_neighbors, weighting=weighting,
                         graph_method=graph_method,
                         scaling=scaling, ncw=ncw, max_iter=max_iter, tol=tol, n_init=n_init,
                         init_iter=init_iter, init=init, assign=assign,
                         n_assign_init=n_assign_init, random_state=random_state)

    def _prepare(self, X, y, graph=None):
        constraint = LabelConstraint(check_partial_labels(y, X.shape[0]), X.dtype)
        self.n_label_classes_ = constraint.n_classes  # known before LCCF prepares
        ctx = super()._prepare(X, y, graph)
        return extend(ctx, LabelledConceptContext, constraint=constraint)

    def _random_factors(self, ctx, rng):
        n, k = ctx.X.shape[0], self.n_components
        A = rng.uniform(size=(n, k)).astype(ctx.dtype)
        Z = rng.uniform(size=(ctx.constraint.n_rows, k)).astype(ctx.dtype)
        return self._initial_factors(ctx, A, Z)

    def _custom_factors(self, ctx, W, H):
        V, A = custom_concept_start(ctx, W, H, self.n_components)
        return self._initial_factors(ctx, A, ctx.constraint.mean(V))

    def _initial_factors(self, ctx, A, Z):
        V = ctx.constraint.expand(Z)
        Z /= unit_documents(A, V)
        KA = ctx.K.dot(A)
        fit_concept_scale(A, KA, V)
        return LabelledConceptFactors(A=A, Z=Z, V=V, KA=KA)

    def _update_documents(self, factors, ctx, AtKA):
        constraint, Z = ctx.constraint, factors.Z
        factors.seen = factors.V  # a new V is made below
        KA_mean, SV_mean, degree_mean = constrained_update_terms(
            constraint, factors.KA, ctx.W @ factors.V, ctx.degree)
        update_documents(Z, KA_mean, AtKA, ctx.lam, SV_mean, degree_mean)
        factors.V = constraint.expand(Z)

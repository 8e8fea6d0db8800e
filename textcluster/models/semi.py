"""Semi-supervised NMF: constrained NMF (CNMF), discriminative NMF (DNMF) and GSNMFC.

The three label-aware baselines of paper 004 (Meng et al. 2018, §2.3–2.5). Orientation as in
:mod:`textcluster.models._base`: ``X`` (n × m, documents × terms) ``≈ V Uᵀ``, ``V`` (n × k) the
document factor, ``U`` (m × k) the basis. Labels enter as scikit-learn's semi-supervised
estimators take them: ``y`` with an integer class code per document and ``-1`` for an
unlabelled one; ``y=None`` means no document is labelled (see
:func:`textcluster.pipeline.protocol.labeled_subset` to draw labelled subsets).

CNMF and GSNMFC write ``V = A Z`` with Liu et al.'s label constraint matrix ``A`` (n × r,
``r = c + n_unlabelled``): a labelled document's row of ``A`` is the indicator of its class, an
unlabelled one has its own identity column. Documents of one class share one row of ``Z``, so
they get the same representation. ``A`` is never formed densely: it is stored as the row of
``Z`` each document reads (:class:`LabelConstraint`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from numbers import Real
from typing import ClassVar

import numpy as np
import scipy.sparse as sp

from .._compat import Interval, StrOptions
from .._errors import InvalidInputError
from ._base import (EPS, LABELLED_FIT_CHECKS, Seed, extend, fitted_with_labels,
                    shared_parameters)
from ._parameters import parameter_entries
from .cluster_count import NComponents
from .nmf import (
    GNMF,
    NMF,
    GraphContext,
    NMFContext,
    NMFFactors,
    fit_scale,
    normalize_basis,
    reconstruction_error,
    unit_basis_step,
    update_basis,
    update_documents,
)


# -- labels --------------------------------------------------------------------------------
def check_partial_labels(y, n_samples):
    """Class codes ``0..c-1`` of the labelled documents and ``-1`` for the others.

    ``y``: None (nothing labelled) or one integer per document, ``-1`` = unlabelled. Codes need
    not be contiguous; they are renumbered in sorted order.
    """
    if y is None:
        return np.full(n_samples, -1, dtype=np.intp)
    y = np.asarray(y)
    if y.ndim != 1 or y.shape[0] != n_samples:
        raise InvalidInputError(
            f"y has shape {y.shape}, expected ({n_samples},): one class code per document, "
            "-1 for unlabelled documents"
        )
    try:
        values = y.astype(np.float64)
    except (TypeError, ValueError):
        values = None
    if values is None or not np.all(np.isfinite(values)) or np.any(values != np.round(values)):
        raise InvalidInputError(
            f"Unknown label type: y must hold integer class codes (-1 = unlabelled), got "
            f"{y.dtype} values such as {y[0]!r}; encode class names first, e.g. with "
            "textcluster.pipeline.protocol.labeled_subset"
        )
    y = values.astype(np.intp)
    if y.size and y.min() < -1:
        raise InvalidInputError(
            f"y has the code {y.min()}; class codes are >= 0 and -1 marks an unlabelled document"
        )
    codes = np.full(n_samples, -1, dtype=np.intp)
    labelled = y >= 0
    codes[labelled] = np.unique(y[labelled], return_inverse=True)[1].ravel()
    return codes


class LabelConstraint:
    """Liu et al.'s label constraint matrix ``A`` (n × r) for class codes ``codes``.

    Row ``r`` of ``Z`` is shared by the labelled documents of class ``r`` (``r < c``) or owned
    by one unlabelled document. With no labels ``A = I`` and ``Z = V``.
    """

    def __init__(self, codes, dtype):
        n = len(codes)
        n_classes = int(codes.max()) + 1 if n and codes.max() >= 0 else 0
        unlabelled = np.flatnonzero(codes < 0)
        self.rows = codes.copy()
        self.rows[unlabelled] = n_classes + np.arange(unlabelled.size)
        self.n_rows = n_classes + unlabelled.size
        self.n_classes = n_classes
        self.A = sp.csr_matrix((np.ones(n, dtype=dtype), (np.arange(n), self.rows)),
                               shape=(n, self.n_rows))
        self._At = self.A.T.tocsr()
        self.counts = np.bincount(self.rows, minlength=self.n_rows).astype(dtype)
        self.first = np.unique(self.rows, return_index=True)[1]  # a document of each Z row

    def expand(self, Z):
        """``V = A Z``."""
        return Z[self.rows]

    def mean(self, M):
        """``(AᵀA)⁻¹ Aᵀ M``: per row of ``Z``, the mean of its documents' rows of ``M``.

        ``AᵀA`` (the class sizes) and ``AᵀDA`` are diagonal, so dividing the Z-updates'
        numerators and denominators by ``AᵀA`` turns them into NMF's and GNMF's V-updates on
        ``Z`` with these means of ``XU``, ``WV`` and the degrees."""
        total = self._At @ M
        return total / (self.counts if total.ndim == 1 else self.counts[:, None])


def constrained_update_terms(constraint, XU, WV=None, degree=None):
    """The class means (:meth:`LabelConstraint.mean`) of ``XU``, ``WV`` and the degrees: the
    numerator, graph and degree terms of the constrained Z-update divided by ``AᵀA``.

    ``Z ← Z ⊙ (AᵀXU + λAᵀWAZ) / (AᵀA Z UᵀU + λAᵀDAZ)`` is then GNMF's V-update on ``Z``
    (:func:`~textcluster.models.nmf.update_documents`); None stays None."""
    mean = constraint.mean
    return mean(XU), (None if WV is None else mean(WV)), (None if degree is None else mean(degree))


def update_basis_ridge(U, V, XtV, beta):
    """``U ← U ⊙ XᵀV / (U VᵀV + βU)``: the Lee–Seung step for ``‖X − VUᵀ‖² + β‖U‖²_F``
    (paper 004 eq. 15, the F-norm term's gradient ``2βU`` joins the denominator).

    ``XtV`` is overwritten."""
    gram = V.T @ V
    gram[np.diag_indices_from(gram)] += beta
    denominator = U @ gram
    np.maximum(denominator, EPS, out=denominator)
    U *= np.divide(XtV, denominator, out=XtV)


def label_misfit(targets, V_l, A):
    """``‖Q − A V_lᵀ‖²_F`` (DNMF's label term, paper 004 eq. 11); ``targets = Qᵀ`` (l × c)."""
    residual = targets - V_l @ A.T
    return float(np.vdot(residual, residual))


def fit_label_map(V_l, targets):
    """``A = Q V_l (V_lᵀ V_l)⁻¹`` (paper 004 eq. 14), as the least-squares solution, which
    stays defined when ``V_lᵀ V_l`` is singular (fewer labelled documents than factors)."""
    if V_l.shape[0] == 0:
        return np.zeros((targets.shape[1], V_l.shape[1]), dtype=V_l.dtype)
    return np.linalg.lstsq(V_l, targets, rcond=None)[0].T.astype(V_l.dtype)


def update_documents_discriminative(V, XU, UtU, labelled, targets, A, alpha):
    """DNMF's V-update (paper 004 eq. 13, corrected; see :class:`DNMF`).

    Unlabelled rows: Lee & Seung's ``V ⊙ XU / (V UᵀU)``. Labelled rows, with ``M = AᵀA`` and
    ``P = Q̃A`` (``Q̃ = Qᵀ``) split into positive and negative parts::

        V_l ⊙ (XU + α(2 V_l M⁻ + P⁺)) / (V_l UᵀU + α(V_l |M| + P⁻))
    """
    numerator = XU.copy()
    denominator = V @ UtU
    if labelled.size:
        M, P = A.T @ A, targets @ A
        V_l = V[labelled]
        numerator[labelled] += alpha * (2.0 * (V_l @ np.maximum(-M, 0)) + np.maximum(P, 0))
        denominator[labelled] += alpha * (V_l @ np.abs(M) + np.maximum(-P, 0))
    np.maximum(denominator, EPS, out=denominator)
    V *= np.divide(numerator, denominator, out=denominator)


# -- what the models prepare and iterate ----------------------------------------------------
@dataclass(kw_only=True)
class LabelledContext(NMFContext):
    """NMF's context with CNMF's label constraint."""

    constraint: LabelConstraint
    """Which row of ``Z`` each document reads (``V = A Z``)."""


@dataclass(kw_only=True)
class LabelledGraphContext(GraphContext, LabelledContext):
    """GNMF's context with the label constraint and GSNMFC's ridge on the basis."""

    beta: float = 0.0
    """The weight of ``‖U‖²_F`` in the updates."""


@dataclass(kw_only=True)
class DNMFContext(NMFContext):
    """NMF's context with DNMF's labels."""

    labelled: np.ndarray
    """Indices of the labelled documents."""
    targets: np.ndarray
    """Their class indicators ``Qᵀ`` (l × c)."""
    alpha: float
    """The weight of the label term in the updates."""


@dataclass(kw_only=True)
class LabelledFactors(NMFFactors):
    """One start of ``X ≈ A Z Uᵀ``: NMF's factors with ``V = A Z``."""

    Z: np.ndarray
    """The rows shared by the labelled documents of a class (n_rows × k)."""


@dataclass(kw_only=True)
class DNMFFactors(NMFFactors):
    """One start of DNMF: NMF's factors and the label map."""

    A: np.ndarray
    """The map from the representation to the classes (c × k)."""


# -- the estimators -----------------------------------------------------------------------
LABELLED_ASSIGN = [StrOptions({"auto", "kmeans", "cosine", "argmax"})]
"""The ``assign`` options of a semi-supervised model ("auto": ``FactorizationModel._assign``)."""


class ScalingByLabels:
    """``scaling="auto"`` of a semi-supervised graph model: ``scaling_with_labels`` (the
    setting measured with labels) when it is fitted with labels, ``scaling_without_labels``
    (its unsupervised base model's, whose λ is chosen without labels) when not; read through
    ``_scaling()`` (:func:`~._base.fitted_with_labels`; before a fit: as without labels, for
    ``planned_iterations``)."""

    scaling: str
    scaling_with_labels: ClassVar[str]
    scaling_without_labels: ClassVar[str]

    def _scaling(self) -> str:
        if self.scaling != "auto":
            return self.scaling
        return (self.scaling_with_labels if fitted_with_labels(self)
                else self.scaling_without_labels)


class _LabelConstrained:
    """Factors ``U``, ``Z`` with ``V = A Z`` (CNMF's hard label constraint), for a base class
    whose ``_prepare`` builds ``X``; the subclass supplies ``_update_basis``/``_update_z`` and
    ``_labelled_context``, the base's context with the constraint."""

    _labelled_context: ClassVar[type[LabelledContext]]
    _expected_failed_checks = LABELLED_FIT_CHECKS

    def _prepare(self, X, y, graph=None):
        constraint = LabelConstraint(check_partial_labels(y, X.shape[0]), X.dtype)
        self.n_label_classes_ = constraint.n_classes  # known before the base prepares
        ctx = super()._prepare(X, y, graph)
        return extend(ctx, self._labelled_context, constraint=constraint)

    def _random_factors(self, ctx, rng):
        n, m = ctx.X.shape
        k, constraint = self.n_components, ctx.constraint
        U = rng.uniform(size=(m, k)).astype(ctx.dtype)
        Z = rng.uniform(size=(constraint.n_rows, k)).astype(ctx.dtype)
        normalize_basis(U, Z)
        return self._scaled_start(U, Z, ctx)

    def _scaled_start(self, U, Z, ctx):
        return LabelledFactors(U=U, Z=Z, V=ctx.constraint.expand(Z))

    def _custom_factors(self, ctx, W, H):
        """NMF's start from ``W`` and ``H``, each row of ``Z`` the mean of its documents' rows
        of ``W``."""
        start = super()._custom_factors(ctx, W, H)
        Z = ctx.constraint.mean(start.V).astype(ctx.dtype)
        return LabelledFactors(U=start.U, Z=Z, V=ctx.constraint.expand(Z))

    def _lsa_start(self, ctx):
        """``init="lsa-kmeans"``: NMF's start from the clusters of LSA + k-means
        (:meth:`NMF._lsa_start`: unit-length centroids as the basis, the least-squares scale),
        each row of ``Z`` the mean of its documents' rows of that start's document factor (as
        ``init="custom"`` makes ``Z`` of ``W``), the scale then fitted again to ``V = AZ``.
        Without labels ``A = I``: ``Z = V``, NMF's start itself."""
        start = super()._lsa_start(ctx)
        constraint = ctx.constraint
        if constraint.n_classes == 0:
            return LabelledFactors(U=start.U, Z=start.V, V=constraint.expand(start.V))
        V = constraint.expand(constraint.mean(start.V).astype(ctx.dtype))
        fit_scale(start.U, V, ctx.X)  # V = α A Z, so Z is α Z: read it off one document per row
        return LabelledFactors(U=start.U, Z=V[constraint.first], V=V)

    def _update(self, factors, ctx):
        U, X = factors.U, ctx.X
        factors.seen = factors.V  # _update_z makes a new V
        self._update_basis(U, factors.V, X.tdot(factors.V), ctx)
        XU, UtU = X.dot(U), U.T @ U
        self._update_z(factors, XU, UtU, ctx)
        return self._objective_after(factors, XU, UtU, ctx)

    def _finish(self, factors, ctx):
        U, Z = factors.U, factors.Z
        self.factor_scale_ = normalize_basis(U, Z)
        self.components_ = U.T
        return ctx.constraint.expand(Z)


@shared_parameters
@parameter_entries
class ConstrainedNMF(_LabelConstrained, NMF):
    """Constrained NMF with hard label constraints (Liu, Wu, Li & Gao, TPAMI 2012; paper 004
    §2.3, eqs. 8–10).

    ``min ‖X − A Z Uᵀ‖²_F, U, Z ≥ 0``: the document factor is ``V = A Z`` with the label
    constraint matrix ``A`` (see :mod:`textcluster.models.semi`), so all labelled documents of
    a class have the same representation and land in the same cluster. Updates (paper 004
    eqs. 9–10 transposed; eq. 10 is garbled in the text, this is the Lee–Seung step for Z)::

        U ← U ⊙ XᵀV / (U VᵀV)                   (V = AZ)
        Z ← Z ⊙ AᵀXU / (AᵀA Z UᵀU)

    both majorization steps, so the objective never increases. ``AᵀA`` is diagonal (class
    sizes), so the Z-update is NMF's V-update on ``Z`` with the class means of ``XU``.
    Without labels (``y=None`` or all ``-1``) ``A = I``, ``Z = V``: exactly :class:`NMF`.
    Start and finish as :class:`NMF` (uniform random ``U``, ``Z``; basis columns at unit norm).
    Memory: O(nnz + (n + m)k).

    ``fit(X, y)``: ``y`` integer class codes, ``-1`` = unlabelled. ``init="custom"``: ``W``
    (n × k) the document factor (each class starts from the mean of its labelled documents'
    rows), ``H`` (k × m) the basis ``Uᵀ``. ``init="lsa-kmeans"``: :class:`NMF`'s start from
    the LSA + k-means clusters, made into ``Z`` the same way (class means), at the
    least-squares scale.

    Parameters
    ----------
    {n_components}
    {ncw}
    {loop parameters}

    Attributes
    ----------
    components_, labels_, objective_history_, n_iter_ : as in :class:`NMF`.
    n_label_classes_ : int, classes among the labels (rows of ``Z`` labelled documents share).

    Notes
    -----
    Out of sample: as :class:`NMF`; a new document is unlabelled (its own
    row of ``Z``): its codes for the basis.
    """

    semi_supervised = True
    _labelled_context = LabelledContext
    _parameter_constraints = {**NMF._parameter_constraints, "assign": LABELLED_ASSIGN}

    def __init__(self, n_components: NComponents = 8, *, ncw: bool | str = False,
                 max_iter: int = 100,
                 tol: float = 0.0, n_init: int = 10, init_iter: int = 30, init: str = "random",
                 assign: str = "auto", n_assign_init: int = 20,
                 random_state: Seed = None) -> None:
        super().__init__(n_components, ncw=ncw, max_iter=max_iter, tol=tol, n_init=n_init,
                         init_iter=init_iter, init=init, assign=assign,
                         n_assign_init=n_assign_init, random_state=random_state)

    def _update_basis(self, U, V, XtV, ctx):
        update_basis(U, V, XtV)

    def _update_z(self, factors, XU, UtU, ctx):
        numerator, _, _ = constrained_update_terms(ctx.constraint, XU)
        update_documents(factors.Z, numerator, UtU)
        factors.V = ctx.constraint.expand(factors.Z)

    def _objective_after(self, factors, XU, UtU, ctx):
        return reconstruction_error(ctx.X_norm2, factors.V, XU, UtU)


@shared_parameters
@parameter_entries
class GSNMFC(ScalingByLabels, _LabelConstrained, GNMF):
    """Graph-regularized sparse constrained NMF (Sun, Xu, Hu & Jiang, Neurocomputing 2016;
    paper 004 §2.5, eq. 15).

    ``min ‖X − A Z Uᵀ‖²_F + λ tr(Zᵀ Aᵀ L A Z) + β‖U‖²_F, U, Z ≥ 0``: :class:`ConstrainedNMF`'s
    hard label constraint ``V = AZ``, GNMF's graph term on ``V`` (``L = D − W`` of the document
    kNN graph, or a precomputed ``graph`` passed to ``fit``) and the F-norm term on the basis
    that paper 004 calls the sparse constraint. The updates (derived from eq. 15; the paper
    prints none)::

        U ← U ⊙ XᵀV / (U VᵀV + βU)
        Z ← Z ⊙ (AᵀXU + λAᵀWAZ) / (AᵀA Z UᵀU + λAᵀDAZ)

    ``AᵀA`` and ``AᵀDA`` are diagonal, so the Z-update is GNMF's V-update (eq. 16 of paper 003)
    on ``Z`` with class means. Without labels it is GNMF with the ridge on U; with β = 0 too,
    exactly :class:`GNMF`; with λ = 0, β = 0 and ``scaling="cai"`` (the same start),
    :class:`ConstrainedNMF`.

    λ and the start follow :class:`GNMF` (``scaling``, ``lam``, ``graph_check``, the graph
    parameters ``n_neighbors`` and ``weighting``). ``scaling="auto"`` and ``assign="auto"``
    (defaults) are ``"scale-free"`` (λ = 10⁸, the setting measured with labels) and k-means on
    the factor's rows with labels, GNMF's ``"unit-basis"`` and ``"cosine"`` without: fitted
    without labels GSNMFC is then :class:`GNMF` with its defaults, λ chosen without labels
    (the ridge is constant on unit basis columns and left out; the U-update is GNMF's
    unit-column step; the V-update, through ``Z``, GNMF's to float rounding). β is scale-free
    like λ: with ``scaling="scale-free"`` the ridge added to ``VᵀV`` in the U-update is
    ``β ‖X‖²_F / k``; with ``scaling="cai"`` it is β itself. Default β = 10⁻³, a light ridge
    (paper 004 gives no value): at the least-squares start a diagonal entry of ``VᵀV`` is
    about ``0.03 ‖X‖²_F / k`` (measured on planted corpora), so the default adds about 3 % to
    it.
    Memory: O(nnz + (n + m)k + n·n_neighbors); the fitted model keeps the training
    documents (O(nnz)) for ``transform`` (Notes).

    ``fit(X, y, graph=None)``: ``y`` integer class codes, ``-1`` = unlabelled. ``init="custom"``:
    ``W`` (n × k) the document factor (each class starts from the mean of its labelled rows),
    ``H`` (k × m) the basis ``Uᵀ``. ``init="lsa-kmeans"``: as :class:`ConstrainedNMF`'s (at
    the least-squares scale whatever ``scaling``, as :class:`GNMF`'s LSA start).

    Parameters
    ----------
    {n_components}
    lam : float ≥ 0 or "auto", default="auto"
        The graph weight λ, as in :class:`GNMF`.
    beta : float ≥ 0, default=0.001
        Weight β of the ridge ``‖U‖²_F`` on the basis (see above).
    {document graph parameters}
    scaling : {"auto", "unit-basis", "scale-free", "cai"}, default="auto"
        How λ and β are read and the start scaled, as in :class:`GNMF` ("auto": see above).
    graph_check : bool, default=True
        Fit without the graph when it does not agree with the data, as in :class:`GNMF`.
    {ncw}
    {loop parameters}

    Attributes
    ----------
    components_, labels_, objective_history_, n_iter_ : as in :class:`NMF`.
    graph_, lam_, lam_selection_, graph_check_ : as in :class:`GNMF`.
    n_label_classes_ : int, classes among the labels (rows of ``Z`` labelled documents share).

    Notes
    -----
    Out of sample: as :class:`GNMF`; a new document is unlabelled (its own
    row of ``Z``).
    """

    semi_supervised = True
    scaling_with_labels, scaling_without_labels = "scale-free", "unit-basis"
    _labelled_context = LabelledGraphContext

    _parameter_constraints = {
        **GNMF._parameter_constraints,
        "beta": [Interval(Real, 0, None, closed="left")],
        "scaling": [StrOptions({"auto", "unit-basis", "scale-free", "cai"})],
        "assign": LABELLED_ASSIGN,
    }

    def __init__(self, n_components: NComponents = 8, *, lam: float | str = "auto",
                 beta: float = 1e-3,
                 n_neighbors: int = 5, weighting: str = "binary",
                 graph_method: str = "auto", scaling: str = "auto",
                 graph_check: bool = True, ncw: bool | str = False, max_iter: int = 100,
                 tol: float = 0.0, n_init: int = 10, init_iter: int = 30, init: str = "random",
                 assign: str = "auto", n_assign_init: int = 20,
                 random_state: Seed = None) -> None:
        super().__init__(n_components, lam=lam, n_neighbors=n_neighbors, weighting=weighting,
                         graph_method=graph_method,
                         scaling=scaling, graph_check=graph_check, ncw=ncw, max_iter=max_iter,
                         tol=tol, n_init=n_init, init_iter=init_iter, init=init, assign=assign,
                         n_assign_init=n_assign_init, random_state=random_state)
        self.beta = beta

    def _prepare(self, X, y, graph=None):
        ctx = super()._prepare(X, y, graph)
        scale = {"scale-free": ctx.X_norm2 / self.n_components, "unit-basis": 0.0,
                 "cai": 1.0}[self._scaling()]
        return replace(ctx, beta=self.beta * scale)

    def _scaled_start(self, U, Z, ctx):
        constraint = ctx.constraint
        V = constraint.expand(Z)
        if self._scaling() != "cai":
            fit_scale(U, V, ctx.X)  # V = α A Z, so Z is α Z: read it off one document per row
            Z = V[constraint.first]
        return LabelledFactors(U=U, Z=Z, V=V)

    def _update_basis(self, U, V, XtV, ctx):
        if self._scaling() == "unit-basis":
            unit_basis_step(U, XtV, V.T @ V)
        else:
            update_basis_ridge(U, V, XtV, ctx.beta)

    def _update_z(self, factors, XU, UtU, ctx):
        XU_mean, WV_mean, degree_mean = constrained_update_terms(
            ctx.constraint, XU, ctx.W @ factors.V, ctx.degree)
        update_documents(factors.Z, XU_mean, UtU, ctx.lam, WV_mean, degree_mean)
        factors.V = ctx.constraint.expand(factors.Z)

    def _objective_after(self, factors, XU, UtU, ctx):
        error = reconstruction_error(ctx.X_norm2, factors.V, XU, UtU)
        return error + self._graph_term(factors.V, ctx) + self._ridge_term(factors, ctx)

    def _objective(self, factors, ctx):
        return super()._objective(factors, ctx) + self._ridge_term(factors, ctx)

    def _ridge_term(self, factors, ctx):
        U = factors.U
        return ctx.beta * float(np.vdot(U, U))


@shared_parameters
@parameter_entries
class DNMF(NMF):
    """Discriminative NMF (Babaee, Tsoukalas, Babaee, Rigoll & Datcu, Neurocomputing 2016;
    paper 004 §2.4, eqs. 11–14).

    ``min ‖X − V Uᵀ‖²_F + α ‖Q − A V_lᵀ‖²_F, U, V ≥ 0`` (A unconstrained): ``V_l`` are the
    labelled documents' rows of ``V``, ``Q`` (c × l) their class indicators, ``A`` (c × k) a
    linear map from the representation to the classes, so labelled documents of one class are
    pushed onto one direction of the representation (not onto one point, as in CNMF).

    Updates, in this order: U as in NMF (eq. 12); V (eq. 13, corrected below); ``A`` by least
    squares (eq. 14, ``A = Q V_l (V_lᵀV_l)⁻¹``, the exact minimizer). Correction: eq. 13
    splits the products ``(V_l AᵀA)^±``; that rule is not a majorization step and can
    increase the objective. Splitting the matrices instead, ``M = AᵀA = M⁺ − M⁻`` and
    ``P = QᵀA = P⁺ − P⁻``, the quadratic bound with ``diag((UᵀU + α|M|)v + αP⁻)/v`` gives::

        V_l ← V_l ⊙ (XU + α(2 V_l M⁻ + P⁺)) / (V_l UᵀU + α(V_l |M| + P⁻))

    (unlabelled rows: NMF's step), which has the same fixed points and never increases the
    objective. Without labels, or with α = 0, this is exactly :class:`NMF`.

    α is scale-free: the label term is weighed by ``α ‖X‖²_F / n``, so α is the weight of a
    labelled document's class fit relative to an average document's squared norm (1 for unit
    tf-idf rows). Default α = 0.1 (paper 004 gives no value). A linear map cannot send rows
    ``s·e`` of different lengths ``s`` to the same indicator, so the label term is never zero
    on real factors, and a large α buys a better label fit by spending a factor on document
    length, merging two classes: on planted corpora (4 classes, 10 % labels, 12 draws) the
    unlabelled documents' mean NMI was 0.977 for NMF, 0.977 / 0.978 / 0.972 / 0.970 for
    α = 0.03 / 0.1 / 0.3 / 1. The objective is invariant to the factor scale (``A`` absorbs
    it), so the start is NMF's. Memory: O(nnz + (n + m)k + l·c).

    ``fit(X, y)``: ``y`` integer class codes, ``-1`` = unlabelled. ``init="custom"``: ``W``
    (n × k) the document factor ``V``, ``H`` (k × m) the basis ``Uᵀ``; ``A`` starts as the
    least-squares map of ``W``'s labelled rows. ``init="lsa-kmeans"``: :class:`NMF`'s start
    from the LSA + k-means clusters, ``A`` its labelled rows' least-squares map.

    Parameters
    ----------
    {n_components}
    alpha : float ≥ 0, default=0.1
        Weight α of the label term, scale-free (see above).
    {ncw}
    {loop parameters}

    Attributes
    ----------
    components_, labels_, objective_history_, n_iter_ : as in :class:`NMF`.
    n_label_classes_ : int, classes among the labels (the rows of the label map ``A``).

    Notes
    -----
    Out of sample: as :class:`NMF`; the label term involves only labelled
    rows, so a new document gets its codes for the basis.
    """

    semi_supervised = True
    _expected_failed_checks = LABELLED_FIT_CHECKS

    _parameter_constraints = {
        **NMF._parameter_constraints,
        "alpha": [Interval(Real, 0, None, closed="left")],
        "assign": LABELLED_ASSIGN,
    }

    def __init__(self, n_components: NComponents = 8, *, alpha: float = 0.1,
                 ncw: bool | str = False,
                 max_iter: int = 100, tol: float = 0.0, n_init: int = 10, init_iter: int = 30,
                 init: str = "random", assign: str = "auto", n_assign_init: int = 20,
                 random_state: Seed = None) -> None:
        super().__init__(n_components, ncw=ncw, max_iter=max_iter, tol=tol, n_init=n_init,
                         init_iter=init_iter, init=init, assign=assign,
                         n_assign_init=n_assign_init, random_state=random_state)
        self.alpha = alpha

    def _prepare(self, X, y, graph=None):
        ctx = super()._prepare(X, y, graph)
        codes = check_partial_labels(y, X.shape[0])
        labelled = np.flatnonzero(codes >= 0)
        n_classes = int(codes.max()) + 1 if labelled.size else 0
        targets = np.zeros((labelled.size, n_classes), dtype=X.dtype)
        targets[np.arange(labelled.size), codes[labelled]] = 1.0
        self.n_label_classes_ = n_classes
        alpha = self.alpha * ctx.X_norm2 / X.shape[0]
        return extend(ctx, DNMFContext, labelled=labelled, targets=targets, alpha=alpha)

    def _random_factors(self, ctx, rng):
        return self._with_label_map(super()._random_factors(ctx, rng), ctx)

    def _custom_factors(self, ctx, W, H):
        return self._with_label_map(super()._custom_factors(ctx, W, H), ctx)

    def _lsa_start(self, ctx):
        """``init="lsa-kmeans"``: NMF's start (:meth:`NMF._lsa_start`), ``A`` the
        least-squares map of its labelled rows, as for the other starts."""
        return self._with_label_map(super()._lsa_start(ctx), ctx)

    def _with_label_map(self, factors, ctx):
        A = fit_label_map(factors.V[ctx.labelled], ctx.targets)
        return extend(factors, DNMFFactors, A=A)

    def _label_term(self, factors, ctx):
        V_l = factors.V[ctx.labelled]
        return ctx.alpha * label_misfit(ctx.targets, V_l, factors.A)

    def _objective(self, factors, ctx):
        return super()._objective(factors, ctx) + self._label_term(factors, ctx)

    def _update(self, factors, ctx):
        U, V, X = factors.U, factors.V, ctx.X
        update_basis(U, V, X.tdot(V))
        XU, UtU = X.dot(U), U.T @ U
        update_documents_discriminative(V, XU, UtU, ctx.labelled, ctx.targets, factors.A,
                                        ctx.alpha)
        factors.A = fit_label_map(V[ctx.labelled], ctx.targets)
        error = reconstruction_error(ctx.X_norm2, V, XU, UtU)
        return error + self._label_term(factors, ctx)

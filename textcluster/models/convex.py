"""Convex NMF and cluster-NMF (Ding, Li & Jordan, TPAMI 2010; paper 000 eqs. 7–8).

Both restrict the basis to combinations of the documents, like concept factorization. In the
documents × terms orientation of :mod:`textcluster.models._base` (the papers write Xᵀ):

* convex NMF  ``X ≈ G Wᵀ X``: ``G`` (n × k) the document factor, ``W`` (n × k) the convex
  weights of the centroids ``Xᵀ W`` (``components_ = Wᵀ X``);
* cluster-NMF ``X ≈ H Hᵀ X`` (paper 000 eq. 8): one factor ``H`` (n × k) gives both the
  cluster indicators and the centroids ``Xᵀ H``.

Everything is written with the kernel ``K = X Xᵀ`` (n × n), used through the sparse ``X`` or
dense, whichever is faster (:mod:`textcluster.models._kernel`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._compat import StrOptions
from ._base import EPS, Factors, FactorizationModel, Seed, check_custom_factor, shared_parameters
from ._codes import nonnegative_codes
from ._kernel import custom_concept_start, kernel_context, kernel_fit_error, normalize_concepts
from .cluster_count import NComponents
from .baselines import LSIKMeans
from .projective import (projection_ratio, projective_code_map, stationarity_system,
                         unit_indicators)
from .selection import membership


@dataclass(kw_only=True)
class ConvexFactors(Factors):
    """One start of convex NMF (``X ≈ G Wᵀ X``) or cluster-NMF (``G`` and ``W`` both ``H``)."""

    G: np.ndarray
    """The document factor (n × k)."""
    W: np.ndarray
    """The centroids' convex weights (n × k); the same array as ``G`` for cluster-NMF."""
    KW: np.ndarray
    """``K W`` of the current ``W``."""


# -- the math: small pure functions -------------------------------------------------------
def update_convex_documents(G, KW, WtKW):
    """``G ← G ⊙ sqrt(KW / (G WᵀKW))`` (Ding, Li & Jordan 2010, with ``K⁻ = 0``)."""
    denominator = G @ WtKW
    np.maximum(denominator, EPS, out=denominator)
    G *= np.sqrt(np.divide(KW, denominator, out=denominator))


def update_convex_weights(W, KW, KG, G):
    """``W ← W ⊙ sqrt(KG / (KW GᵀG))`` (Ding, Li & Jordan 2010, with ``K⁻ = 0``).

    ``KG`` is overwritten."""
    denominator = KW @ (G.T @ G)
    np.maximum(denominator, EPS, out=denominator)
    W *= np.sqrt(np.divide(KG, denominator, out=KG))


def update_cluster_indicators(H, KH):
    """``H ← H ⊙ (2KH / (KH HᵀH + H HᵀKH))^{1/3}`` for ``min ‖X − H Hᵀ X‖²``.

    Derived (majorization): ``−2 tr(HᵀKH)`` is concave (K is positive semi-definite), so its
    tangent bounds it from above; the quartic ``tr(HᵀKH HᵀH)`` has non-negative coefficients,
    so ``Σ ∂_ik · H̃_ik (H_ik/H̃_ik)⁴ / 4`` bounds it. The minimizer of the bound is this update,
    hence the objective never increases. It is PNMF's step (:func:`projective.projection_ratio`
    with γ = 0) with ``K`` in place of ``X Xᵀ``.
    """
    H *= np.cbrt(projection_ratio(H, KH))


def fit_indicator_scale(H, KH):
    """Scale ``H`` by the scalar ``α`` that minimizes ``‖X − α² H Hᵀ X‖²`` (``KH`` too)."""
    HtKH = H.T @ KH
    quadratic = np.einsum("ij,ij->", HtKH, H.T @ H, dtype=np.float64)
    beta = max(float(np.trace(HtKH, dtype=np.float64)), 0.0) / max(quadratic, EPS)
    alpha = np.sqrt(beta) if beta > 0 else 1.0
    H *= H.dtype.type(alpha)
    KH *= KH.dtype.type(alpha)


# -- the estimator ------------------------------------------------------------------------
@shared_parameters
class ConvexNMF(FactorizationModel):
    """Convex NMF ``min ‖X − G Wᵀ X‖²_F`` or cluster-NMF ``min ‖X − H Hᵀ X‖²_F`` (``≥ 0``).

    Ding, Li & Jordan, "Convex and semi-nonnegative matrix factorizations", TPAMI 32(1), 2010;
    paper 000 eqs. 7–8 (used there as a baseline). ``variant="convex"`` (default) fits ``G``
    and ``W`` with Ding et al.'s multiplicative updates for convex NMF: with non-negative
    data ``K = X Xᵀ`` has no negative part, and they read
    ``G ← G ⊙ sqrt(KW / (G WᵀKW))``, ``W ← W ⊙ sqrt(KG / (KW GᵀG))``. ``variant="cluster"``
    fits the single factor ``H`` with ``H ← H ⊙ (2KH / (KH HᵀH + H HᵀKH))^{1/3}``; this rule
    is derived from the objective (see :func:`update_cluster_indicators`), not taken from a
    printed formula. Both never increase the objective (checked numerically by the tests).

    Start (``init``): by default the clusters of LSA + k-means, as Ding et al. start from
    k-means (:meth:`_lsa_start`), and as the graph models start; ``"random"``: the papers'
    ten uniform random starts, the best after 30 iterations continued (for cluster-NMF ``H``
    is scaled to the best scalar fit: the objective is not scale invariant in ``H``). On the
    14 CLUTO sets of the development panel (seeds 0–2, mean NMI over the sets) the start
    from LSA + k-means gave convex NMF 0.496 against 0.456 from random starts (better on 12
    of 14 sets) and PNMF 0.490 against 0.472 (10 of 14), at a tenth of the starts; on AG
    News, Classic4, R8, DBpedia and TDT2 it was better for both on every corpus but one tie
    (PNMF on AG News). CF starts there too (see :class:`~textcluster.models.CF`). At the end
    the convex variant scales each centroid ``Xᵀ w_k`` to unit norm, ``G`` absorbing the
    scale. Clusters: k-means on the unit rows of the document factor (``G`` or ``H``), as
    :class:`NMF`'s. ``init="custom"``: ``W`` (n × k) is the initial document factor (``G``,
    or ``H`` for cluster-NMF); for the convex variant ``H`` (k × m) is an initial basis from
    which the centroid weights start as the documents weighted by their similarity to it
    (``W = X Hᵀ``, rescaled); cluster-NMF has no second factor and does not use ``H``.

    Memory: O(nnz + nk) — the kernel is used through ``X`` (time per iteration O(nnz·k))
    unless a dense kernel, at most 40 numbers per non-zero, is faster and fits
    (:mod:`textcluster.models._kernel`).

    Parameters
    ----------
    {n_components}
    variant : {"convex", "cluster"}, default="convex"
        Convex NMF (``G`` and ``W``) or cluster-NMF (one factor ``H``).
    {loop parameters}

    Attributes
    ----------
    components_ : (k, m) the centroids ``Wᵀ X`` or ``Hᵀ X``.
    concept_weights_ : (n, k) ``W`` or ``H``.
    labels_, objective_history_, n_iter_ : as in :class:`~textcluster.models.NMF`.

    Notes
    -----
    Out of sample: convex NMF's basis ``Wᵀ X`` does not involve ``G``, so a
    new document's codes for it (non-negative least squares) are its row of the objective.
    Cluster-NMF's ``H`` is the basis' weights too: a new row solves its row of the stationarity
    conditions, as in :class:`~textcluster.models.PNMF` (``code_map_``).
    """

    _parameter_constraints = {
        **FactorizationModel._parameter_constraints,
        "variant": [StrOptions({"convex", "cluster"})],
        "init": [StrOptions({"random", "custom", "lsa-kmeans"})],
    }
    _state_attributes = FactorizationModel._state_attributes + ("code_map_",)

    def __init__(self, n_components: NComponents = 8, *, variant: str = "convex",
                 max_iter: int = 100, tol: float = 0.0, n_init: int = 10, init_iter: int = 30,
                 init: str = "lsa-kmeans",
                 assign: str = "cosine", n_assign_init: int = 20,
                 random_state: Seed = None) -> None:
        super().__init__(n_components, max_iter=max_iter, tol=tol, n_init=n_init,
                         init_iter=init_iter, init=init, assign=assign,
                         n_assign_init=n_assign_init, random_state=random_state)
        self.variant = variant

    def _prepare(self, X, y, graph=None):
        return kernel_context(X)

    def _random_factors(self, ctx, rng):
        n, k = ctx.X.shape[0], self.n_components
        G = rng.uniform(size=(n, k)).astype(ctx.dtype)
        if self.variant == "cluster":
            return self._cluster_start(ctx, G)
        W = rng.uniform(size=(n, k)).astype(ctx.dtype)
        return ConvexFactors(G=G, W=W, KW=ctx.K.dot(W))

    def _custom_factors(self, ctx, W, H):
        n, k = ctx.X.shape[0], self.n_components
        if self.variant == "cluster":
            return self._cluster_start(ctx, check_custom_factor("W", W, (n, k), ctx.dtype))
        G, weights = custom_concept_start(ctx, W, H, k)
        return ConvexFactors(G=G, W=weights, KW=ctx.K.dot(weights))

    def _lsa_start(self, ctx):
        """``init="lsa-kmeans"``: Ding, Li & Jordan's start from k-means clusters, here those
        of LSA + k-means: with ``H`` the cluster indicators and ``D`` the cluster sizes,
        ``G = H + 0.2`` and ``W = (H + 0.2) D⁻¹`` (each centroid its cluster's mean,
        smoothed); cluster-NMF's ``H`` PNMF's (:func:`~.projective.unit_indicators`)."""
        k = self.n_components
        labels = LSIKMeans(k, random_state=self.random_state).fit(ctx.X).labels_
        if self.variant == "cluster":
            return self._cluster_start(ctx, unit_indicators(labels, k, ctx.dtype))
        H = np.asarray(membership(labels, k).todense(), dtype=ctx.dtype)
        G = H + H.dtype.type(0.2)
        W = G / np.maximum(H.sum(axis=0), 1.0)
        return ConvexFactors(G=G, W=W, KW=ctx.K.dot(W))

    def _cluster_start(self, ctx, H):
        KH = ctx.K.dot(H)
        fit_indicator_scale(H, KH)
        return ConvexFactors(G=H, W=H, KW=KH)

    def _objective(self, factors, ctx):
        W, KW = factors.W, factors.KW
        return kernel_fit_error(ctx.K_trace, factors.G, KW, W.T @ KW)

    def _update(self, factors, ctx):
        K = ctx.K
        if self.variant == "cluster":
            update_cluster_indicators(factors.W, factors.KW)
        else:
            G, W = factors.G, factors.W
            update_convex_documents(G, factors.KW, W.T @ factors.KW)
            update_convex_weights(W, factors.KW, K.dot(G), G)
        factors.KW = K.dot(factors.W)
        return self._objective(factors, ctx)

    def _finish(self, factors, ctx):
        G, W = factors.G, factors.W
        if self.variant == "convex":
            normalize_concepts(W, G, factors.KW)
        self.concept_weights_ = W
        self.components_ = np.ascontiguousarray(np.asarray(ctx.X.T @ W).T)
        self.code_map_ = None
        if self.variant == "cluster":  # H is the basis' weights too: PNMF's stationarity
            self.code_map_ = projective_code_map(W, np.ones(W.shape[1]))
        return G

    def _transform(self, X):
        if self.code_map_ is None:
            return super()._transform(X)
        return nonnegative_codes(*stationarity_system(X, self.components_, self.code_map_))

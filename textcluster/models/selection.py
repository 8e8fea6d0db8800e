"""Label-free choice of a graph model's strength: candidates scored on the documents alone.

A graph-regularized model weighs two kinds of evidence: the documents' own tf-idf geometry
and the kNN graph. Where the graph links documents of the same topic, a strong graph term
finds clusters that k-means on the tf-idf rows cannot (full TDT2); where it links topics, it
smooths every document towards the same profile and the clusters become arbitrary. Neither
kind of evidence alone can choose λ: the tf-idf geometry always prefers λ = 0 (it is what
k-means optimizes) and the graph always prefers the largest λ (it is what the graph term
optimizes). The rule (:func:`choose`) lets each decide where the other cannot:

1. **Geometry-led candidates** (the clusters of LSA + k-means, the geometry's own answer,
   then a path over λ started from them) are *admissible* when the documents' geometry
   cannot tell their clusters from the best candidate's: :func:`cohesion` (the mean cosine
   of a document to its cluster's mean direction, on the tf-idf rows, not on the smoothed
   factor) within ``COHESION_TOLERANCE`` (1 %) of the best. One percent is about the spread
   of cohesion between k-means' own local optima on one corpus (relative standard deviation
   0.6–1.5 % over eight starts, measured on eleven panel corpora): a difference the geometry
   does not resolve.
2. Among them the graph decides: the clusters that cut the fewest graph edges
   (:func:`graph_cut`, the normalized cut averaged over the clusters).
3. **The graph-led candidate** (a strong graph term from random starts: the graph's own
   clusters, as spectral clustering finds them) replaces that choice only when it is *real*,
   still *coherent* and cuts fewer edges: three random starts must find the same clusters
   (mean pairwise NMI ≥ ``MIN_STABILITY`` = 0.9, the stability test of Lange et al. 2004
   over restarts), and its cohesion must be within ``GRAPH_LED_TOLERANCE`` (5 %) of the
   best. On TDT2, whose kNN graph nearly separates the topics, the starts agree at 0.94–0.95
   and the cohesion is 3.6–4.0 % below the best (NMI to the classes 0.86–0.87, the
   geometry-led path 0.77–0.80). On the other 21 corpora of the development panel and raw
   Reuters (three seeds each) the starts agree at 0.08–0.90; in the eleven runs where they
   agree at 0.83–0.90 the cohesion is 4.5–15 % below the best.

So the graph's preference acts among clusterings that are equally good for the documents,
and beyond that only where the graph alone reproducibly defines nearly as coherent clusters.
Measured on the panel: reports/defaults_panel/acceptance.md. Cost: the path's fits, the
graph-led fits and k-means on each candidate, 1.5–1.9 times one fixed-λ GNMF run end to end
(benchmarks/bench_lam_selection.py).
"""

from __future__ import annotations

import itertools
from dataclasses import asdict, dataclass, replace

import numpy as np
import scipy.sparse as sp
from sklearn.preprocessing import normalize
from sklearn.utils import check_random_state
from threadpoolctl import threadpool_limits

from ..assign import assign_clusters
from ..metrics import nmi
from ._base import run_updates
from ._linalg import SparseOperator

COHESION_TOLERANCE = 0.01
MIN_STABILITY = 0.9
GRAPH_LED_TOLERANCE = 0.05
LAM_PATH = (0.0, 0.3, 1.0, 3.0, 10.0, 30.0, 100.0, 300.0, 1000.0, 1e4)
GRAPH_LED_LAM, GRAPH_LED_STARTS = 1e5, 3
PATH_FIRST_ITER, PATH_STEP_ITER = 50, 20
SELECTION_ASSIGN_INIT = 5  # k-means starts when scoring a candidate


def membership(labels, n_clusters=None):
    """The n × k cluster indicator matrix (sparse)."""
    labels = np.asarray(labels)
    k = int(labels.max()) + 1 if n_clusters is None else n_clusters
    n = labels.size
    return sp.csr_matrix((np.ones(n), (np.arange(n), labels)), shape=(n, k))


def cohesion(X, labels):
    """Mean cosine similarity of the documents (rows of ``X``, unit length) to the mean
    direction of their cluster: ``Σ_c ‖Σ_{i∈c} x_i‖ / n``, the objective of spherical k-means.
    In [0, 1]; higher is tighter. O(nnz(X))."""
    sums = membership(labels).T @ X
    sums = sums.toarray() if sp.issparse(sums) else np.asarray(sums)
    return float(np.linalg.norm(sums, axis=1).sum() / X.shape[0])


def graph_cut(W, labels):
    """Normalized cut of a clustering on graph ``W``: the share of each cluster's edge weight
    (volume) that leaves it, averaged over the clusters. In [0, 1]; 0 = no edge between
    clusters. Clusters without edges are left out."""
    H = membership(labels)
    degree = np.asarray(W.sum(axis=1)).ravel()
    volume = H.T @ degree
    inside = (H.T @ (W @ H)).diagonal()
    linked = volume > 0
    return float(np.mean((volume[linked] - inside[linked]) / volume[linked]))


@dataclass
class Candidate:
    """One candidate setting, its clustering's scores, and whether the rule admitted it."""

    setting: dict
    cohesion: float
    graph_cut: float
    admissible: bool = False
    chosen: bool = False

    def record(self):
        return {**self.setting, **{k: v for k, v in asdict(self).items() if k != "setting"}}


def choose(candidates, graph_led=None, stability=None, tolerance=COHESION_TOLERANCE):
    """Mark the admissible candidates and the chosen one (see the module docstring) and
    return the chosen index: into ``candidates`` (the geometry-led path), or
    ``len(candidates)`` for ``graph_led``, whose restarts agree at ``stability`` (mean pairwise
    NMI). Ties go to the earlier candidate."""
    best = max(c.cohesion for c in candidates)
    for c in candidates:
        c.admissible = c.cohesion >= (1.0 - tolerance) * best
    admitted = [i for i, c in enumerate(candidates) if c.admissible]
    pick = min(admitted, key=lambda i: (candidates[i].graph_cut, i))
    if graph_led is not None:
        graph_led.admissible = (stability is not None and stability >= MIN_STABILITY
                                and graph_led.cohesion >= (1.0 - GRAPH_LED_TOLERANCE) * best)
        if graph_led.admissible and graph_led.graph_cut < candidates[pick].graph_cut:
            pick = len(candidates)
    (candidates + [graph_led])[pick].chosen = True  # graph_led may be None: not picked then
    return pick


def graph_fields(W):
    """The fields of a :class:`GraphStrength` that follow from its document graph ``W``."""
    return {"W": W, "degree": np.asarray(W.sum(axis=1)).ravel(),
            "W_products": SparseOperator(W.astype(np.float64))}


@dataclass(kw_only=True)
class GraphStrength:
    """The document graph of a model's context, and the strength the updates use it at."""

    W: sp.csr_matrix
    """The document graph (n × n, sparse)."""
    degree: np.ndarray
    """Its degrees (row sums)."""
    W_products: SparseOperator
    """``W`` in float64, for products with dense factors on every core (:func:`graph_term`)."""
    lam_scale: float
    """Factor from λ as given to the graph term's weight in the updates."""
    lam: float = 0.0
    """The graph term's weight in the updates: λ · ``lam_scale``."""


class SelectsGraphStrength:
    """The λ selection of a graph-regularized factorization model (see the module docstring).

    The model sets ``self.lam_`` in ``_prepare`` (the λ to use, or None to choose it); its
    context is a :class:`GraphStrength` with ``data`` (the matrix factorized), and its factors
    have the document factor ``V``. It provides ``_lsa_start``, ``_custom_factors``,
    ``_random_factors``, ``_best_start``, ``_update`` and ``_objective``
    (:class:`~textcluster.models._base.FactorizationModel`'s hooks)."""

    def _fit_factors(self, ctx, W, H):
        if self.lam_ is not None:
            return super()._fit_factors(ctx, W, H)
        with threadpool_limits(limits=1, user_api="blas"):
            unit_rows = normalize(ctx.data)
            runs = list(self._lam_path(ctx, W, H))
            path = [self._score(setting, f, unit_rows, ctx.W) for setting, f, _ in runs]
            graph_led = stability = None
            if self.init != "custom":  # the graph-led fits need random starts
                setting, factors, history, stability = self._graph_led(ctx)
                runs.append((setting, factors, history))
                graph_led = self._score({**setting, "stability": stability}, factors,
                                        unit_rows, ctx.W)
            setting, factors, history = runs[choose(path, graph_led, stability)]
            self.lam_ = setting["lam"]
            scored = path + ([graph_led] if graph_led else [])
            self.lam_selection_ = {"chosen": setting, "candidates": [c.record() for c in scored]}
            # the clustering the rule vouched for is returned as scored: more iterations at a
            # graph strength move it on (ANMF on LA Times 1: NMI 0.55 as scored, 0.38 after
            # 80 more iterations); the history is that of its own run at its λ
            self._record(history, converged=True)  # (a fixed number of iterations per λ)
        return factors

    def _at_strength(self, ctx, lam):
        """The context with the graph strength λ (as given: ``lam_scale`` maps it to the
        weight in the updates)."""
        return replace(ctx, lam=lam * ctx.lam_scale)

    def _lam_path(self, ctx, W, H):
        """``(setting, factors, history)``: the start itself (the LSA + k-means clusters, or
        the caller's ``W``, ``H``; no iteration), then along ``LAM_PATH`` warm-started from it,
        at most ``max_iter`` iterations at each λ."""
        if self.init == "custom":
            factors, start = self._custom_factors(ctx, W, H), "custom"
        else:
            factors, start = self._lsa_start(ctx), "lsa-kmeans"
        history = [self._objective(factors, self._at_strength(ctx, 0.0))]
        yield {"lam": 0.0, "start": start, "iterations": 0}, factors.copy(), history
        for i, lam in enumerate(LAM_PATH):
            step = self._at_strength(ctx, lam)
            history = [self._objective(factors, step)]
            n_iter = min(PATH_STEP_ITER if i else PATH_FIRST_ITER, self.max_iter)
            run_updates(self._update, factors, step, n_iter, 0.0, history)
            yield {"lam": lam, "start": start, "iterations": n_iter}, factors.copy(), history

    def _graph_led(self, ctx):
        """The graph-led candidate: ``GRAPH_LED_STARTS`` fits of ``max_iter`` iterations at
        ``GRAPH_LED_LAM`` from random starts; the one with the lowest objective, its history,
        and the mean NMI between the clusters of each pair of starts (how reproducible the
        graph's clusters are)."""
        ctx = self._at_strength(ctx, GRAPH_LED_LAM)
        rng = check_random_state(self.random_state)
        fits, labels = [], []
        for _ in range(GRAPH_LED_STARTS):
            factors = self._best_start([self._random_factors(ctx, rng)], ctx)
            fits.append((factors, list(self.objective_history_)))
            labels.append(self._labels(factors))
        pairs = itertools.combinations(labels, 2)
        stability = float(np.mean([nmi(a, b) for a, b in pairs]))
        factors, history = min(fits, key=lambda fit: fit[1][-1])
        return {"lam": GRAPH_LED_LAM, "start": "random"}, factors, history, stability

    def _labels(self, factors):
        return assign_clusters(factors.V, self.n_components, method=self.assign,
                               n_init=SELECTION_ASSIGN_INIT, random_state=self.random_state)

    def _score(self, setting, factors, unit_rows, W):
        labels = self._labels(factors)
        return Candidate(setting, cohesion(unit_rows, labels), graph_cut(W, labels))

    def planned_iterations(self):
        if self._fixed_lam() is not None:
            return super().planned_iterations()
        path = PATH_FIRST_ITER + PATH_STEP_ITER * (len(LAM_PATH) - 1)
        return path + GRAPH_LED_STARTS * self.max_iter



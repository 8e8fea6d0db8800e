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
   cannot tell their clusters from those of the model without the graph: :func:`cohesion`
   (the mean cosine of a document to its cluster's mean direction, on the tf-idf rows, not
   on the smoothed factor) at least that of the fit at λ = 0 less ``COHESION_TOLERANCE``
   (1 %). One percent is about the spread of cohesion between k-means' own local optima on
   one corpus (relative standard deviation 0.6–1.5 % over eight starts, measured on eleven
   panel corpora): a difference the geometry does not resolve. The question is what the
   graph costs the model's own fit, so the reference is that fit, not the start: LSA +
   k-means reaches clusters slightly more coherent than a factorization from them (k1b:
   0.2114 against 0.2099 at λ = 0), and measured from the start that margin left the graph
   almost none of the allowance (k1b's path from λ = 1 on, 0.2091–0.2020, NMI 0.71–0.83
   against the start's 0.58, was inadmissible; measured from the fit at λ = 0, GNMF's NMI
   there went from 0.631 to 0.740 and ANMF's (on a 7-neighbour graph) from 0.580 to 0.673,
   mean of three seeds). Where the fit at λ = 0 is itself more than 1 % less coherent than
   the most coherent candidate, the model's factorization is weaker than the documents'
   geometry, and the reference is that candidate (concept factorization on AG News: measured
   from its own fit at λ = 0, λ = 1–3 with NMI 0.38–0.41 were admitted against the start's
   0.47). The path ends after two inadmissible λ in a row (:func:`path_end`): a larger λ
   smooths the document factor more. Measured on the development panel, TDT2 and Reuters
   (GNMF, ANMF, LCCF, AGPNMF, GSNMFC and GRSCF, three seeds: 396 runs, every candidate
   scored), the choice is the one over the whole path in every run, and 39 % of the path's
   iterations are not run; after one inadmissible λ it differed in 4 (ANMF on tr41 and k1b).
   SODNMF, whose penalties fade along its path, runs the whole path (``path_end_run``).
2. Among them the graph decides, on edges it was not fitted to: the clusters that cut the
   fewest *held-out* edges (:func:`graph_cut`, the normalized cut averaged over the clusters,
   on :func:`held_out_graph`: each document's next nearest neighbours, beyond those the
   model's kNN graph links it to). The graph term lowers the cut of its own graph by fitting
   it; whether the clusters then follow the documents' neighbourhoods shows on edges it did
   not see, as a model's fit shows on held-out data. On CLUTO tr12 (313 documents, a graph
   that links the classes) the path lowers its own graph's cut from 0.29 to 0.17 while the
   held-out cut rises from 0.51 to 0.60 (NMI 0.60 → 0.44); on k1b (a graph that follows the
   classes) both fall (0.19 → 0.09 and 0.21 → 0.14; NMI 0.58 → 0.78). A graph the caller
   gives has no edges to hold out and is judged on its own.
3. **The graph-led candidate** (a strong graph term from random starts: the graph's own
   clusters, as spectral clustering finds them) replaces that choice only when it is *real*,
   still *coherent* and cuts fewer held-out edges: three random starts must find the same
   clusters (mean pairwise NMI ≥ ``MIN_STABILITY`` = 0.9, the stability test of Lange et al.
   2004 over restarts; AGPNMF, each of whose starts is a whole fit, runs two), its clusters
   (those of the start with the lowest objective) must be within ``GRAPH_LED_TOLERANCE``
   (5 %) of the best cohesion, and no start's more than 5 % below the cohesion of the
   clusters of LSA + k-means (at most the best). A start that is ends the candidate (one start of
   three on 19 of the panel's 22 corpora), as do two starts that agree below 0.7 (the mean
   of three could not reach 0.9). On TDT2, whose kNN graph nearly separates the topics, the
   starts agree at 0.94–0.95 and the cohesion is 3.6–4.0 % below the best (NMI to the
   classes 0.86–0.87, the geometry-led path 0.77–0.80). On the other 21 corpora of the
   development panel and raw Reuters (three seeds each) the starts agree at 0.08–0.90; in
   the eleven runs where they agree at 0.83–0.90 the cohesion is 4.5–15 % below the best.

So the graph's preference acts among clusterings that are equally good for the documents,
and beyond that only where the graph alone reproducibly defines nearly as coherent clusters.
Measured on the panel: reports/defaults_panel/acceptance.md. Cost: the path's fits, the
graph-led fits, k-means on each candidate and the held-out neighbours (an exact search for at
most ``HELD_OUT_SAMPLE`` documents: 0.3–0.6 s on la1, AG News and TDT2); the scores and the
graph-led fits run in threads beside the path (:class:`~textcluster.models._base.Beside`;
without a path, in the fitting thread). End to end: 1.0–1.7 times one fixed-λ GNMF run
(TDT2 1.66, la1 1.21, AG News 1.04, Reuters 1.46), 2.5–2.8 times one AGPNMF fit (its path and
up to two whole fits, measured before the path's end; benchmarks/bench_lam_selection.py).
``n_iter_`` counts the updates of the candidates considered (not those of a path step run
beside the score that ended the path); ``objective_history_`` is that of the clustering
returned.
"""

from __future__ import annotations

from concurrent.futures import Future
from dataclasses import asdict, dataclass, replace
from itertools import takewhile

import numpy as np
import scipy.sparse as sp
from sklearn.preprocessing import normalize
from sklearn.utils import check_random_state

from ..assign import assign_clusters
from ..graph._exact import _BLOCK_BUDGET, _knn_blocks
from ..metrics import nmi
from ._base import EPS, Beside, InThisThread, in_fit_order, loop_threads, run_updates

COHESION_TOLERANCE = 0.01
PATH_END_RUN = 2  # inadmissible candidates in a row that end the λ path
MIN_STABILITY = 0.9
GRAPH_LED_TOLERANCE = 0.05
LAM_PATH = (0.0, 0.3, 1.0, 3.0, 10.0, 30.0, 100.0, 300.0, 1000.0, 1e4)
GRAPH_LED_LAM, GRAPH_LED_STARTS = 1e5, 3
PATH_FIRST_ITER, PATH_STEP_ITER = 50, 20
SELECTION_ASSIGN_INIT = 5  # k-means starts when scoring a candidate
HELD_OUT_RANKS, HELD_OUT_SAMPLE = 4, 2000


def membership(labels, n_clusters=None):
    """The n × k cluster indicator matrix (sparse)."""
    labels = np.asarray(labels)
    k = int(labels.max()) + 1 if n_clusters is None else n_clusters
    n = labels.size
    return sp.csr_matrix((np.ones(n), (np.arange(n), labels)), shape=(n, k))


def centroid_start(ctx, labels, k):
    """The start of a factorization ``X ≈ V Uᵀ`` from a clustering of the rows of ``ctx.data``
    (as the λ path starts from LSA + k-means'), not yet at any scale: ``U`` (m × k) the unit
    cluster centroids, ``V`` each document's product with them plus 10⁻³ of its largest
    entry, so that the multiplicative updates can move every entry."""
    centroids = membership(labels, k).T @ ctx.data
    centroids = centroids.toarray() if sp.issparse(centroids) else np.asarray(centroids)
    U = np.ascontiguousarray(centroids.T, dtype=ctx.dtype)
    U /= np.maximum(np.linalg.norm(U, axis=0), EPS)
    V = ctx.X.dot(U)
    V += 1e-3 * V.max()
    return U, V


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


def held_out_graph(unit_rows, W, random_state=None):
    """The edges the graph ``W`` does not have, to judge its clusterings on: each document's
    nearest neighbours by cosine (rows of ``unit_rows``), as many as ``HELD_OUT_RANKS`` × the
    graph's median degree, less those ``W`` links it to; for ``HELD_OUT_SAMPLE`` documents drawn
    at random (every document of a smaller corpus; not the empty ones). n × n, binary; the
    other rows are empty."""
    n = unit_rows.shape[0]
    if sp.issparse(unit_rows):
        unit_rows = sp.csr_matrix(unit_rows)
        queries = np.flatnonzero(np.diff(unit_rows.indptr))
    else:
        queries = np.flatnonzero(np.any(unit_rows, axis=1))
    if queries.size > HELD_OUT_SAMPLE:
        rng = check_random_state(random_state)
        queries = np.sort(rng.choice(queries, HELD_OUT_SAMPLE, replace=False))
    ranks = min(n - 1, HELD_OUT_RANKS * max(1, int(np.median(np.diff(W.indptr)))))
    if ranks < 1 or queries.size == 0:  # one document, or none with a term: no edges
        return sp.csr_matrix((n, n))
    block_size = max(1, min(_BLOCK_BUDGET // max(n, 1), 256))  # blocks for both threads
    rows, cols, _, _ = _knn_blocks(unit_rows, ranks, block_size, False, queries=queries)
    near = sp.csr_matrix((np.ones(rows.size), (rows, cols)), shape=(n, n))
    held_out = near - near.multiply(W != 0)
    held_out.eliminate_zeros()
    return held_out


@dataclass
class Candidate:
    """One candidate setting, its clustering's scores, and whether the rule admitted it."""

    setting: dict
    cohesion: float
    graph_cut: float
    """On the model's graph (recorded; the rule uses the next)."""
    held_out_cut: float
    """On the edges the model's graph does not have (:func:`held_out_graph`)."""
    admissible: bool = False
    chosen: bool = False

    def record(self):
        return {**self.setting, **{k: v for k, v in asdict(self).items() if k != "setting"}}


def choose(candidates, graph_led=None, stability=None, tolerance=COHESION_TOLERANCE):
    """Mark the admissible candidates and the chosen one (see the module docstring) and
    return the chosen index: into ``candidates`` (the geometry-led path: the start, then the
    fit at λ = 0 from it, then the larger λ), or ``len(candidates)`` for ``graph_led``, whose
    restarts agree at ``stability`` (mean pairwise NMI; None: one start, not admissible).
    Ties go to the earlier candidate."""
    best = max(c.cohesion for c in candidates)
    reference = _reference(candidates, tolerance)
    for c in candidates:
        c.admissible = c.cohesion >= (1.0 - tolerance) * reference
    admitted = [i for i, c in enumerate(candidates) if c.admissible]
    pick = min(admitted, key=lambda i: (candidates[i].held_out_cut, i))
    if graph_led is not None:
        graph_led.admissible = (stability is not None and stability >= MIN_STABILITY
                                and graph_led.cohesion >= (1.0 - GRAPH_LED_TOLERANCE) * best)
        if graph_led.admissible and graph_led.held_out_cut < candidates[pick].held_out_cut:
            pick = len(candidates)
    (candidates + [graph_led])[pick].chosen = True  # graph_led may be None: not picked then
    return pick


def _reference(candidates, tolerance):
    """The cohesion the candidates are admitted against (see :func:`choose`): the model's own
    fit without the graph where the geometry cannot tell it from the best, else the best."""
    best = max(c.cohesion for c in candidates)
    without_graph = candidates[min(1, len(candidates) - 1)].cohesion
    return without_graph if without_graph >= (1.0 - tolerance) * best else best


def path_end(candidates, tolerance=COHESION_TOLERANCE, run_length=PATH_END_RUN):
    """The index of the candidate that ends the path, or None (always None for
    ``run_length=None``: the whole path): the last of the first ``run_length`` candidates in
    a row along it (after the start and the fit at λ = 0) that are each inadmissible against
    those before them and themselves. One may fall outside the tolerance and the next within
    it again (ANMF on CLUTO tr41: λ = 10 at 0.3324 against a bound of 0.3326, λ = 30 at
    0.3348, chosen at λ = 100); a larger λ smooths the document factor more, and along the
    development panel's paths no candidate after two inadmissible ones in a row was chosen
    (see the module docstring)."""
    if run_length is None:
        return None
    run = 0
    for j in range(2, len(candidates)):
        bound = (1.0 - tolerance) * _reference(candidates[:j + 1], tolerance)
        run = run + 1 if candidates[j].cohesion < bound else 0
        if run == run_length:
            return j
    return None


def _through_end(scores, run_length):
    """The candidates of the futures ``scores`` in order, through the path's end
    (:func:`path_end`); the scores after it are cancelled where they have not started."""
    candidates = []
    for future in scores:
        candidates.append(future.result())
        if path_end(candidates, run_length=run_length) is not None:
            break
    for future in scores[len(candidates):]:
        future.cancel()
    return candidates


def graph_fields(W, own_knn):
    """The fields of a :class:`GraphStrength` that follow from its document graph ``W``
    (``own_knn``: the kNN graph of the documents, not the caller's)."""
    return {"W": W, "degree": np.asarray(W.sum(axis=1)).ravel(), "own_knn": own_knn}


@dataclass(kw_only=True)
class GraphStrength:
    """The document graph of a model's context, and the strength the updates use it at."""

    W: sp.csr_matrix
    """The document graph (n × n, sparse)."""
    degree: np.ndarray
    """Its degrees (row sums)."""
    own_knn: bool
    """``W`` is the documents' kNN graph (its held-out edges are their next neighbours), not
    a graph the caller gave."""
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
    (:class:`~textcluster.models._base.FactorizationModel`'s hooks). ``lam_path`` (the λ of
    the geometry-led path after the start; empty: the start alone), ``graph_led_lam`` (the λ
    of the graph-led fits) and ``graph_led_starts`` (their number, at least 2) may be set per
    model."""

    lam_path: tuple[float, ...] = LAM_PATH
    graph_led_lam: float = GRAPH_LED_LAM
    graph_led_starts: int = GRAPH_LED_STARTS
    strength_parameter: str = "lam"
    """The parameter that fixes the strength (``"auto"``: chosen), for messages."""
    path_end_run: int | None = PATH_END_RUN
    """Inadmissible candidates in a row that end the path (None: the whole path is run)."""

    def _fit_factors(self, ctx, W, H):
        if self.lam_ is not None:
            return super()._fit_factors(ctx, W, H)
        # the graph-led fits go beside a path; without one (AGPNMF or kernel AGPNMF from a
        # dense start, kernel AGPNMF) in this thread: OpenBLAS keeps a thread beside to one
        # BLAS thread, which their n × n products need two of (k1b: 36 s beside, 21 s here)
        led_side = self._beside() if self.lam_path else InThisThread()
        with loop_threads(), self._beside() as scorer, led_side as led_fits:
            unit_rows = normalize(ctx.data)
            held_out = (scorer.submit(held_out_graph, unit_rows, ctx.W, self.random_state)
                        if ctx.own_knn else None)  # a caller's graph has no edges to hold out
            runs, path, led = [], [], None
            for setting, factors, history in self._lam_path(ctx, W, H):
                runs.append((setting, factors, history))
                path.append(scorer.submit(self._score, setting, factors, unit_rows, ctx.W,
                                          held_out))
                if len(path) == 1 and self.init != "custom":
                    # the graph-led fits (random starts) hold each start to the cohesion of
                    # the first candidate, so they begin once it is being scored
                    led = led_fits.submit(self._graph_led, ctx, unit_rows, path[0])
                scored = [c.result() for c in takewhile(Future.done, path)]
                if path_end(scored, run_length=self.path_end_run) is not None:
                    break  # no larger λ: the path has ended
            path = _through_end(path, self.path_end_run)  # not how far it ran beside them
            runs = runs[:len(path)]
            graph_led = stability = None
            n_iter = sum(len(history) - 1 for _, _, history in runs)
            if led is not None:
                setting, factors, history, stability, led_iter, labels = led.result()
                runs.append((setting, factors, history))
                n_iter += led_iter
                graph_led = self._score({**setting, "stability": stability}, factors,
                                        unit_rows, ctx.W, held_out, labels)
            setting, factors, history = runs[choose(path, graph_led, stability)]
            self.lam_ = setting["lam"]
            scored = path + ([graph_led] if graph_led else [])
            self.lam_selection_ = {"chosen": setting, "candidates": [c.record() for c in scored]}
            # the clustering the rule vouched for is returned as scored: more iterations at a
            # graph strength move it on (ANMF, 7 neighbours, on LA Times 1: NMI 0.55 as
            # scored, 0.38 after 80 more iterations); the history is that of its own run at its λ
            self._record(history, converged=True)  # (a fixed number of iterations per λ)
            self.n_iter_ = n_iter  # the candidates' updates (the start has none of its own)
        return factors

    def _fixed_strength(self, ctx, graph_off=False):
        """``ctx`` at the strength given (0 when the graph is off); ``lam_`` None: to be
        chosen by :meth:`_fit_factors`."""
        self.lam_ = 0.0 if graph_off else self._fixed_lam()
        self.lam_selection_ = None
        return self._at_strength(ctx, self.lam_ or 0.0)

    def _at_strength(self, ctx, lam):
        """The context with the graph strength λ (as given: ``lam_scale`` maps it to the
        weight in the updates)."""
        return replace(ctx, lam=lam * ctx.lam_scale)

    def _lam_path(self, ctx, W, H):
        """``(setting, factors, history)``: the start itself (the LSA + k-means clusters, or
        the caller's ``W``, ``H``; no iteration), then along ``lam_path`` warm-started from it,
        at most ``max_iter`` iterations at each λ (the start is copied only if a path follows
        it)."""
        if self.init == "custom":
            factors, start = self._custom_factors(ctx, in_fit_order(W, ctx), H), "custom"
        else:
            factors, start = self._lsa_start(ctx), "lsa-kmeans"
        history = [self._objective(factors, self._at_strength(ctx, 0.0))]
        setting = {"lam": 0.0, "start": start, "iterations": 0}
        yield setting, factors.copy() if self.lam_path else factors, history
        for i, lam in enumerate(self.lam_path):
            step = self._at_strength(ctx, lam)
            history = [self._objective(factors, step)]
            n_iter = min(PATH_STEP_ITER if i else PATH_FIRST_ITER, self.max_iter)
            run_updates(self._update, factors, step, n_iter, 0.0, history)
            yield {"lam": lam, "start": start, "iterations": n_iter}, factors.copy(), history

    def _graph_led(self, ctx, unit_rows, start):
        """The graph-led candidate: ``graph_led_starts`` fits of ``max_iter`` iterations at
        ``graph_led_lam`` from random starts; the one with the lowest objective, its history,
        the mean NMI between the clusters of each pair of starts (how reproducible the graph's
        clusters are; None after one start) and the iterations of all the fits. The starts
        stop early when the candidate can no longer be admitted: when a start's clusters are
        less coherent than ``GRAPH_LED_TOLERANCE`` allows against those of ``start`` (the
        future :class:`Candidate` of the first geometry-led candidate, whose cohesion is at
        most the best one's), or when those run already disagree so much that the mean over
        every pair cannot reach ``MIN_STABILITY`` even if each pair still to come agreed
        perfectly."""
        ctx = self._at_strength(ctx, self.graph_led_lam)
        rng = check_random_state(self.random_state)
        best = None  # (factors, history, labels) of the lowest objective so far: one kept
        labels, agreement, n_iter = [], [], 0
        all_pairs = self.graph_led_starts * (self.graph_led_starts - 1) // 2
        for _ in range(self.graph_led_starts):
            factors = self._best_start([self._random_factors(ctx, rng)], ctx)
            history = list(self.objective_history_)
            n_iter += len(history) - 1
            found = self._labels(factors)
            agreement += [nmi(earlier, found) for earlier in labels]
            labels.append(found)
            if best is None or history[-1] < best[1][-1]:
                best = (factors, history, found)
            del factors
            coherent = (cohesion(unit_rows, found)
                        >= (1.0 - GRAPH_LED_TOLERANCE) * start.result().cohesion)
            if not coherent or (sum(agreement) + (all_pairs - len(agreement))
                                < MIN_STABILITY * all_pairs):
                break
        stability = float(np.mean(agreement)) if agreement else None
        setting = {"lam": self.graph_led_lam, "start": "random", "starts": len(labels)}
        return setting, best[0], best[1], stability, n_iter, best[2]

    def _labels(self, factors):
        return assign_clusters(factors.V, self.n_components, method=self._assign(),
                               n_init=SELECTION_ASSIGN_INIT, random_state=self.random_state)

    def _score(self, setting, factors, unit_rows, W, held_out, labels=None):
        """The :class:`Candidate` of a clustering of ``factors`` (``labels`` when known) on the
        tf-idf rows, graph ``W`` and the held-out edges (a future; None: judged on ``W``)."""
        labels = self._labels(factors) if labels is None else labels
        held_out = W if held_out is None else held_out.result()
        return Candidate(setting, cohesion(unit_rows, labels), graph_cut(W, labels),
                         graph_cut(held_out, labels))

    def _beside(self):
        """A thread beside the fitting one, for the candidates' scores and the graph-led fits
        (:class:`~textcluster.models._base.Beside`; with both beside the path the default run
        on TDT2 took 10.1 s on 2 idle cores against 11.9 s in turn, medians of four,
        alternated, and 14.3 s either way beside a process holding one core); the fitting
        thread itself, each task run when submitted, when ``random_state`` is a
        ``RandomState`` instance, whose draws would then follow the threads' timing (a seed
        or None draws anew in each task)."""
        if isinstance(self.random_state, np.random.RandomState):
            return InThisThread()
        return Beside()

    def planned_iterations(self):
        if self._fixed_lam() is not None:
            return super().planned_iterations()
        path = (PATH_FIRST_ITER + PATH_STEP_ITER * (len(self.lam_path) - 1)
                if self.lam_path else 0)
        return path + self.graph_led_starts * self.max_iter

"""Label-free choice of the number of clusters: the k whose clusters a fresh sample reproduces.

``n_components="auto"`` (or a range, ``"2:40"`` or ``(2, 40)``; ``textcluster run --k auto``
or ``--k 2:40``) chooses k before the fit by :func:`choose_n_clusters`, the stability rule of
Lange, Roth, Braun & Buhmann (2004, *Stability-based validation of clustering solutions*,
Neural Computation 16): clusters that describe the documents, not the sample, are found again
on other documents of the same corpus.

For each candidate k, the documents are split at random into two halves A and B and each half
is clustered by k-means; A's centroids label B's documents (the nearest centroid), and the
*disagreement* of that labelling with B's own clusters is the share of B's documents outside
the best one-to-one matching of the two sets of cluster names (Hungarian). Any two partitions
agree in part by chance, the more so the fewer and the more unequal their clusters, so the
disagreement is divided by that of the same two labellings after one is shuffled (same cluster
sizes, no relation): the *instability*, 0 when B's clusters are reproduced exactly, about 1
when no better than chance. Its mean over ``n_splits`` splits is the criterion; the chosen k
is the smallest whose mean is within one standard error of the lowest mean (the one-standard-
error rule: among numbers of clusters the splits cannot tell apart, the fewest). With eight
splits, the lowest mean alone chose k = 30 on CLUTO tr12 for one seed (5 documents a cluster
in a half of 156), and on the whole panel the two rules came within one run of each other (19
and 20 of 66 runs within ±30 % of the number of classes).

``N_SPLITS`` = 16 splits: the mean and its standard error are estimated from the splits, and
where a corpus' curve has two minima of about the same depth, eight splits let the seed pick
one (Biomedical: 3 / 21 / 3 for seeds 0–2, minima 0.31–0.44 at 3 and 0.38–0.42 near 20).
Sixteen halve the variance of the mean: Biomedical 18 / 20 / 20, and on the whole panel 24
against 20 of 66 runs within ±30 % of the number of classes, at twice the cost.

Two clusters are not a candidate of ``"auto"`` (a range such as ``"2:30"`` includes them): a
corpus split in two along its main direction is reproducible whether or not it has clusters
(Ben-David, von Luxburg & Pál 2006, *A sober look at clustering stability*). Measured: the
LSA rows of R8 and Classic4 with each dimension shuffled across documents (no cluster
structure left) give k = 2 an instability of 0.01 and 0.13 (four splits), as low as the
real documents' lowest (R8 0.12 at k = 2, Classic4 0.10 at k = 5).

The documents are clustered as scikit-learn's LSA example clusters them (the tf-idf rows
projected on their first 100 singular vectors, scaled to unit length; k-means with two
k-means++ starts): a fast stand-in for every model's clusters, which all follow the tf-idf
geometry; the number of clusters it finds is then fitted by the chosen model.

What it cannot do: the number of classes of a labelled corpus is a choice of granularity its
documents do not hold. CLUTO's k1a and k1b are the same 2,340 documents labelled with 20 and 6
nested classes, and no rule can return both. Measured on the development panel,
TDT2 and Reuters (``reports/cluster_count``, three seeds): within ±30 % of the number of
classes in 23 of 66 runs; the rule finds coarse structure (3–6 clusters on most CLUTO sets,
TDT2 and Reuters, whose labels have 6–66 classes) and the finer one where it is pronounced
(StackOverflow 21–22 and Biomedical 18–21 for 20 classes). The curve is kept
(``cluster_count_``, ``run.json``) to be read: a flat curve says the corpus has no preferred
number of clusters. A seed gives the same curve on one machine and library build; another
moves its means by up to 0.02 (a few halvings' k-means end in other optima from the SVD's
last bits), and with them the choice where the curve is flat near its minimum (DBpedia's
seeds 0–2: 21 / 19 / 20 in the report, 18 / 20 / 20 on another machine).

Cost: ``n_splits`` × 2 k-means fits on half the documents per candidate, plus one truncated
SVD. The tests (a candidate and a halving each) run side by side over the package's threads
from ``SIDE_BY_SIDE_DOCS`` documents, each k-means in one thread; their random draws are taken
first, in the order of one test after the other, so the curve does not depend on the threads.
On two cores, candidates 3–30 (``reports/cluster_count``): 28–75 s on the panel's text corpora
(7,000–20,000 documents), 3–17 s on the CLUTO sets, 35 s on TDT2; AG News 25.4 s against 36.5 s
with the tests one after the other (``benchmarks/bench_cluster_count.py``).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from numbers import Integral
from typing import Any

import numpy as np
from scipy.optimize import linear_sum_assignment
from sklearn.cluster import KMeans
from sklearn.decomposition import TruncatedSVD
from sklearn.preprocessing import normalize
from sklearn.utils import check_array, check_random_state

from .._compat import Interval
from .._errors import InvalidInputError
from .._threads import each, n_threads, one_thread
from ..text.tfidf import distinct_rows

AUTO_RANGE = (3, 30)
"""The candidates of ``n_components="auto"``: 3 to 30 clusters (fewer on small corpora)."""
LSA_DIMENSIONS = 100
N_SPLITS = 16
KMEANS_STARTS = 2
SHUFFLES = 5  # shuffled labellings averaged for the chance disagreement
MIN_DOCS_PER_CLUSTER = 3  # on average, in half of the documents: caps the largest candidate
# documents from which the tests run side by side over the cores: below, the k-means of a
# half is too short for two threads to share the interpreter (2 cores, one thread / all:
# CLUTO tr23, 204 documents, 1.25; fbis, 2,463, 1.03; la1, 3,204, 0.85; AG News, 7,600, 0.71)
SIDE_BY_SIDE_DOCS = 3000
NComponents = int | str | tuple[int, int]
"""``n_components``: a number of clusters, ``"auto"`` or a range (``"2:40"``, ``(2, 40)``)."""
N_COMPONENTS = [Interval(Integral, 1, None, closed="left"), str, tuple, list]
"""The parameter constraint of ``n_components``: a number of clusters, "auto" or a range."""


@dataclass(frozen=True)
class ClusterCount:
    """The choice of :func:`choose_n_clusters` and its criterion curve."""

    k: int
    candidates: list[int]
    instability: list[float]  # mean over the splits, per candidate
    std_error: list[float]
    n_splits: int
    seconds: float
    criterion: str = "instability over random halves (Lange et al. 2004), one-SE rule"

    def record(self) -> dict[str, Any]:
        """The choice as plain JSON values (``run.json``'s ``cluster_count``)."""
        return asdict(self)


def candidate_range(n_components: Any) -> tuple[int, int] | None:
    """``(min, max)`` candidates for ``"auto"``, a ``"min:max"`` text or a pair; None for a
    fixed k. A value that is none of these raises :class:`InvalidInputError`."""
    if isinstance(n_components, (int, np.integer)):
        return None
    if n_components == "auto":
        return AUTO_RANGE
    if isinstance(n_components, str):
        values = n_components.split(":")
    elif isinstance(n_components, Sequence) and all(
            isinstance(v, (int, np.integer)) for v in n_components):
        values = list(n_components)
    else:
        values = []
    try:
        low, high = (int(v) for v in values)
    except ValueError:
        low = high = 0
    if not 1 <= low < high:
        raise InvalidInputError(
            f"{n_components!r} is not a number of clusters, 'auto' (chosen in "
            f"{AUTO_RANGE[0]}:{AUTO_RANGE[1]}) nor a range to choose it in, 'min:max' or "
            "(min, max) with 1 ≤ min < max")
    return low, high


def choose_n_clusters(X: Any, k_range: tuple[int, int] = AUTO_RANGE,
                      n_splits: int = N_SPLITS, random_state: Any = None) -> ClusterCount:
    """The number of clusters of the documents ``X`` (n × m, non-negative, e.g. tf-idf) in
    ``k_range`` (inclusive), chosen without labels by the stability rule of the module
    docstring.

    Parameters
    ----------
    X : array or sparse matrix, n × m
        The documents' rows.
    k_range : (int, int)
        The smallest and largest candidate; the largest is lowered so that half of the
        documents give each cluster ``MIN_DOCS_PER_CLUSTER`` documents on average, and to
        the number of distinct documents.
    n_splits : int
        Random halvings per candidate.
    random_state : int, RandomState or None
        Seed of the projection, the halvings and the k-means starts.
    """
    started = time.perf_counter()
    X = check_array(X, accept_sparse="csr", dtype=[np.float64, np.float32])
    n = X.shape[0]
    low, high = k_range
    distinct = distinct_rows(X)
    high = min(high, n // 2 // MIN_DOCS_PER_CLUSTER, distinct)
    if high < max(low, 2):
        raise InvalidInputError(
            f"{n} documents ({distinct} distinct) are too few to choose the number of "
            f"clusters in {k_range} (each half of them needs {MIN_DOCS_PER_CLUSTER} documents "
            "a cluster, and each cluster a distinct document): give k")
    rng = check_random_state(random_state)
    rows = _lsa_rows(X, rng)
    candidates = list(range(max(low, 2), high + 1))
    splits = [rng.permutation(n) for _ in range(n_splits)]
    tests = [_draws(rng, split, k) for k in candidates for split in splits]
    with one_thread():  # one thread a test, the tests over the cores
        values = each(lambda test: _instability(rows, *test), tests,
                      n_threads() if n >= SIDE_BY_SIDE_DOCS else 1)
    curves = np.array(values).reshape(len(candidates), n_splits)
    mean = curves.mean(axis=1)
    std_error = (curves.std(axis=1, ddof=1) / np.sqrt(n_splits) if n_splits > 1
                 else np.zeros_like(mean))
    best = int(np.argmin(mean))
    chosen = candidates[int(np.flatnonzero(mean <= mean[best] + std_error[best])[0])]
    return ClusterCount(chosen, candidates, mean.round(4).tolist(),
                        std_error.round(4).tolist(), n_splits,
                        round(time.perf_counter() - started, 2))


def _lsa_rows(X, rng):
    """Unit-length LSA rows (scikit-learn's document-clustering example)."""
    dims = min(LSA_DIMENSIONS, X.shape[1] - 1, X.shape[0] - 1)
    if dims < 1:  # one term: nothing to project
        return normalize(X)
    svd = TruncatedSVD(dims, random_state=rng.randint(2**31 - 1))
    return normalize(svd.fit_transform(X)).astype(np.float32)


def _draws(rng, order, k):
    """One test's random draws, taken from ``rng`` in the order of a test run after the
    other: the two k-means seeds, then the state the shuffles start from (``rng`` is moved
    past them), so that the tests can run in any order and give the same curve."""
    seeds = rng.randint(2**31 - 1, size=2)
    state = rng.get_state()
    for _ in range(SHUFFLES):
        rng.permutation(len(order) - len(order) // 2)
    return order, k, seeds, state


def _instability(rows, order, k, seeds, shuffle_state):
    """Disagreement between half B's clusters and those A's centroids give it, over that of
    the same labellings shuffled."""
    half = len(order) // 2
    first, second = rows[order[:half]], rows[order[half:]]
    # one OpenMP thread: a k-means of half of the 100-dimensional rows is too small a task
    # for threads (AG News: 42-72 s in scikit-learn's OpenMP threads on 2 idle cores, 22-23 s
    # in one), and the tests run side by side
    with one_thread("openmp"):
        transferred = _kmeans(k, seeds[0]).fit(first).predict(second)
        own = _kmeans(k, seeds[1]).fit(second).labels_
    rng = np.random.RandomState()
    rng.set_state(shuffle_state)
    chance = np.mean([_disagreement(rng.permutation(transferred), own, k)
                      for _ in range(SHUFFLES)])
    # one cluster in either labelling (duplicate documents) says nothing: chance level
    return _disagreement(transferred, own, k) / chance if chance > 0 else 1.0


def _kmeans(k, seed):
    return KMeans(k, n_init=KMEANS_STARTS, random_state=int(seed))


def _disagreement(a, b, k):
    """Share of documents outside the best one-to-one matching of the clusters of a and b."""
    table = np.zeros((k, k))
    np.add.at(table, (a, b), 1)
    rows, cols = linear_sum_assignment(table, maximize=True)
    return 1.0 - table[rows, cols].sum() / len(a)


@contextmanager
def chosen_n_components(model: Any, X: Any):
    """While fitting ``model``: its ``n_components`` chosen on ``X`` when it is ``"auto"``
    or a range (restored afterwards, as a parameter is), and the fitted attributes
    ``n_components_`` (the k fitted) and ``cluster_count_`` (the choice's
    :meth:`ClusterCount.record`, None for a fixed k)."""
    given = model.n_components
    k_range = candidate_range(given)
    if k_range is None:
        yield
        model.n_components_, model.cluster_count_ = given, None
        return
    choice = choose_n_clusters(X, k_range, random_state=model.random_state)
    model.n_components = choice.k
    try:
        yield
    finally:
        model.n_components = given
    model.n_components_, model.cluster_count_ = choice.k, choice.record()

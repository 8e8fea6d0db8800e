"""Agreement between clusterings of the same documents, for corpora without class labels.

CiteULike's articles have no classes to score against, but they can be clustered from several
views (the users who bookmarked them, their tags, both). A batch with ``[output] clusters =
true`` keeps every job's clusters in ``<output>/clusters/<job key>.csv`` (``doc_id,cluster``),
and the report compares them with the NMI of :func:`textcluster.export.agreement`:

* **across views** — the same method, k and seed on two corpora, over the documents both hold:
  do the users and the tags put the same articles together?
* **across seeds** — the same method and view, two seeds: how stable the method is, the
  yardstick for the cross-view numbers (agreement across views cannot exceed what a method
  reaches with itself).
"""

from itertools import combinations
from pathlib import Path

import numpy as np
import pandas as pd

from .export import agreement

AGREEMENT_COLUMNS = ["method", "k", "first", "second", "seed_first", "seed_second",
                     "n_shared", "nmi"]


def read_clusters(folder, key):
    """``(doc ids, clusters)`` of the job ``key``, or None when its file is missing."""
    path = Path(folder) / f"{key}.csv"
    if not path.is_file():
        return None
    frame = pd.read_csv(path, dtype={"doc_id": str})
    return frame["doc_id"].to_numpy(), frame["cluster"].to_numpy()


def _pair(method, k, first, second, seeds, a, b):
    (ids_a, labels_a), (ids_b, labels_b) = a, b
    shared = len(np.intersect1d(ids_a, ids_b))
    return {"method": method, "k": k, "first": first, "second": second,
            "seed_first": seeds[0], "seed_second": seeds[1], "n_shared": shared,
            "nmi": agreement(labels_a, labels_b, ids_a, ids_b) if shared else np.nan}


def _clusterings(rows, folder):
    """The rows of ``rows`` (finished jobs) whose clusters were kept, with them attached."""
    found = [(row, read_clusters(folder, row.key)) for row in rows.itertuples(index=False)]
    return [(row, clusters) for row, clusters in found if clusters is not None]


def cross_view_agreement(rows, folder):
    """One record per (method, k, seed) and pair of corpora: the NMI of the two clusterings
    over the documents both corpora hold (``n_shared``)."""
    records = []
    by_run = {}
    for row, clusters in _clusterings(rows, folder):
        by_run.setdefault((row.method, row.k, row.seed), []).append((row.corpus, clusters))
    for (method, k, seed), views in by_run.items():
        for (first, a), (second, b) in combinations(views, 2):
            records.append(_pair(method, k, first, second, (seed, seed), a, b))
    return pd.DataFrame.from_records(records, columns=AGREEMENT_COLUMNS)


def seed_agreement(rows, folder):
    """One record per (method, k, corpus) and pair of seeds: the NMI of the two runs."""
    records = []
    by_view = {}
    for row, clusters in _clusterings(rows, folder):
        by_view.setdefault((row.method, row.k, row.corpus), []).append((row.seed, clusters))
    for (method, k, corpus), runs in by_view.items():
        for (seed_a, a), (seed_b, b) in combinations(runs, 2):
            records.append(_pair(method, k, corpus, corpus, (seed_a, seed_b), a, b))
    return pd.DataFrame.from_records(records, columns=AGREEMENT_COLUMNS)


def summarize_agreement(pairs):
    """Mean, std and number of pairs of the NMI per (method, k, first, second)."""
    keys = ["method", "k", "first", "second"]
    if pairs.empty:
        return pd.DataFrame(columns=keys + ["mean", "std", "pairs", "n_shared"])
    grouped = pairs.groupby(keys, sort=False)
    return grouped.agg(mean=("nmi", "mean"), std=("nmi", lambda v: v.std(ddof=0)),
                       pairs=("nmi", "count"), n_shared=("n_shared", "min")).reset_index()

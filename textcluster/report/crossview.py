"""Agreement between clusterings of the same documents, for corpora without class labels.

CiteULike's articles have no classes to score against, but they can be clustered from several
views (the users who bookmarked them, their tags, both). A batch with ``[output] clusters =
true`` keeps every job's clusters in ``<output>/clusters/<job key>.csv`` (``doc_id,cluster``),
and the report compares them with the NMI of :func:`textcluster.pipeline.export.agreement`:

* **across views** — the same method, k and seed on two corpora, over the documents both hold:
  do the users and the tags put the same articles together?
* **across seeds** — the same method and view, two seeds: how stable the method is, the
  yardstick for the cross-view numbers (agreement across views cannot exceed what a method
  reaches with itself).

Only runs of the same document selection and draw are paired: two draws of different classes
are not two views of the same documents. Pairs without a shared document are left out.
:func:`agreement_markup` makes the report's table of them.
"""

import json
from itertools import combinations
from pathlib import Path

import numpy as np
import pandas as pd

from ..pipeline.export import agreement
from .markup import Table

SAME_DOCUMENTS = ("selection", "draw")  # runs are paired only within one draw of documents
AGREEMENT_COLUMNS = ["method", "k", "first", "second", "seed_first", "seed_second",
                     "n_shared", "nmi"]


def read_clusters(folder: str | Path, key: str) -> tuple[np.ndarray, np.ndarray] | None:
    """``(doc ids, clusters)`` of the job ``key``, or None when its file is missing."""
    path = Path(folder) / f"{key}.csv"
    if not path.is_file():
        return None
    frame = pd.read_csv(path, dtype={"doc_id": str})
    return frame["doc_id"].to_numpy(), frame["cluster"].to_numpy()


def cross_view_agreement(rows: pd.DataFrame, folder: str | Path) -> pd.DataFrame:
    """One record per (method, k, seed) and pair of corpora: the NMI of the two clusterings
    over the documents both corpora hold (``n_shared``)."""
    return _agreements(rows, folder, same=("method", "k", "seed", *SAME_DOCUMENTS))


def seed_agreement(rows: pd.DataFrame, folder: str | Path) -> pd.DataFrame:
    """One record per (method, k, corpus) and pair of seeds: the NMI of the two runs."""
    return _agreements(rows, folder, same=("method", "k", "corpus", *SAME_DOCUMENTS))


def _agreements(rows, folder, same):
    """The NMI of every pair of kept clusterings of ``rows`` (finished jobs) that agree on the
    columns ``same``."""
    groups = {}
    for row in rows.itertuples(index=False):
        clusters = read_clusters(folder, row.key)
        if clusters is not None:
            group = json.dumps([getattr(row, c) for c in same], sort_keys=True, default=str)
            groups.setdefault(group, []).append((row, clusters))
    records = [_pair(a, b, clusters_a, clusters_b) for members in groups.values()
               for (a, clusters_a), (b, clusters_b) in combinations(members, 2)]
    return pd.DataFrame.from_records([r for r in records if r["n_shared"]],
                                     columns=AGREEMENT_COLUMNS)


def _pair(a, b, clusters_a, clusters_b):
    (ids_a, labels_a), (ids_b, labels_b) = clusters_a, clusters_b
    shared = len(np.intersect1d(ids_a, ids_b))
    return {"method": a.method, "k": a.k, "first": a.corpus, "second": b.corpus,
            "seed_first": a.seed, "seed_second": b.seed, "n_shared": shared,
            "nmi": agreement(labels_a, labels_b, ids_a, ids_b) if shared else None}


def summarize_agreement(pairs: pd.DataFrame) -> pd.DataFrame:
    """Mean, std and number of pairs of the NMI per (method, k, first, second)."""
    keys = ["method", "k", "first", "second"]
    if pairs.empty:
        return pd.DataFrame(columns=keys + ["mean", "std", "pairs", "n_shared"])
    grouped = pairs.groupby(keys, sort=False)
    return grouped.agg(mean=("nmi", "mean"), std=("nmi", lambda v: v.std(ddof=0)),
                       pairs=("nmi", "count"), n_shared=("n_shared", "min")).reset_index()


def kept_clusters(done: pd.DataFrame, folder: Path) -> bool:
    """Whether ``folder`` holds the clusters of any of the jobs ``done``."""
    return folder.is_dir() and any((folder / f"{key}.csv").is_file() for key in done["key"])


def agreement_markup(summary: pd.DataFrame, methods: list[str], caption: str,
                     note: str) -> Table:
    """Rows method and k, one column per pair of corpora (or per corpus for seed pairs)."""
    summary = summary.assign(pair=[a if a == b else f"{a} ↔ {b}"
                                   for a, b in zip(summary["first"], summary["second"])])
    pairs = list(dict.fromkeys(summary["pair"]))
    cells = summary.set_index(["method", "k", "pair"])
    rows = []
    for method in [m for m in methods if m in set(summary["method"])]:
        for k in sorted(summary.loc[summary["method"] == method, "k"].unique()):
            row = [method, str(int(k))]
            for pair in pairs:
                if (method, k, pair) not in cells.index:
                    row.append("—")
                    continue
                cell = cells.loc[(method, k, pair)]
                spread = f" ± {cell['std']:.3f}" if cell["pairs"] > 1 else ""
                row.append(f"{cell['mean']:.3f}{spread} ({int(cell['pairs'])})")
            rows.append(row)
    return Table(["method", "k"] + pairs, rows, caption, [note])

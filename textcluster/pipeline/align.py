"""Stable cluster ids: renumber a new clustering to best match a previous one.

A refit (new documents, another seed) numbers its clusters arbitrarily. :func:`align_labels`
gives each new cluster the id of the previous cluster it matches best: the Hungarian matching
(:func:`scipy.optimize.linear_sum_assignment`) of the clusters that maximizes the number of
shared documents (same ``doc_id`` in both runs) kept together; when the two runs share no
document, the matching that maximizes the cosine similarity of the clusters' term centroids
(mean tf-idf rows) over the vocabulary both runs have. A new cluster matched to nothing (more
clusters than before, or no overlap / no similarity) is *born* and gets the smallest id the
previous run did not use; a previous cluster matched to nothing is *gone*.

:func:`align_to_previous` is the one call of ``textcluster run --align-to`` and of any other
command that writes clusters: it reads the previous output folder (:func:`read_previous`),
aligns, and returns the relabelled labels, the ``changes`` and ``moved`` tables and a summary
line (:class:`Alignment`).

``changes.csv`` has one row per cluster of either run: ``old_id`` (empty for a born cluster),
``new_id`` (the id written now: ``old_id`` for a kept cluster, empty for a gone one),
``size_before``, ``size_after``, ``overlap`` (shared documents in the cluster in both runs;
empty when matched on centroids), ``similarity`` (the centroids' cosine, when matched on
them), ``status`` (kept, born, gone) and ``fit_id`` (the number the fit gave the cluster:
``result.model.labels_`` and a saved model's predictions use it). ``moved.csv`` lists the
shared documents whose cluster id changed: ``doc_id, old_cluster, new_cluster``.
"""

from __future__ import annotations

import os
import zipfile
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pandas as pd
from scipy.optimize import linear_sum_assignment

from .._errors import InvalidInputError
from .export import CENTROIDS_FILE, CLUSTERS_FILE, atomic_write, cluster_centroids

CHANGES_FILE = "changes.csv"
MOVED_FILE = "moved.csv"
CHANGES_COLUMNS = ["old_id", "new_id", "size_before", "size_after", "overlap", "similarity",
                   "status", "fit_id"]
MOVED_COLUMNS = ["doc_id", "old_cluster", "new_cluster"]


@dataclass(frozen=True)
class Centroids:
    """Each cluster's term centroid: ``rows[i]`` (over ``terms``) is cluster ``clusters[i]``'s
    mean weighted row."""

    clusters: np.ndarray  # (k,) int
    rows: np.ndarray  # (k, m) float
    terms: np.ndarray  # (m,) str

    def __post_init__(self) -> None:
        k, m = np.shape(self.rows) if np.ndim(self.rows) == 2 else (-1, -1)
        if k != len(self.clusters) or m != len(self.terms):
            raise InvalidInputError(
                f"centroids: {len(self.clusters)} clusters and {len(self.terms)} terms but a "
                f"matrix of shape {np.shape(self.rows)}; the rows must be clusters × terms")


@dataclass(frozen=True)
class PreviousRun:
    """What alignment needs from an earlier run's output folder."""

    folder: Path
    ids: np.ndarray  # doc_id per document, str
    labels: np.ndarray  # cluster per document, int
    centroids: Centroids | None  # None: the folder has no cluster_centroids.npz


@dataclass(frozen=True)
class Alignment:
    """A new clustering renumbered to match a previous one."""

    labels: np.ndarray  # the new labels, renumbered
    mapping: dict[int, int]  # fitted cluster id → aligned id
    changes: pd.DataFrame  # CHANGES_COLUMNS, one row per cluster of either run
    moved: pd.DataFrame  # MOVED_COLUMNS, shared documents whose cluster id changed
    method: str  # "documents" or "centroids"
    n_shared: int  # documents in both runs
    previous: str = "the previous run"  # how the summary names it

    @property
    def n_kept_documents(self) -> int:
        """Shared documents whose cluster id did not change."""
        return self.n_shared - len(self.moved)

    def count(self, status: str) -> int:
        return int((self.changes["status"] == status).sum())

    @property
    def summary(self) -> str:
        """One line: ``aligned to PREVIOUS: 4 clusters kept, 0 born, 0 gone; 97.8 % of the
        2,000 shared documents kept their cluster``."""
        counts = (f"{self.count('kept')} clusters kept, {self.count('born')} born, "
                  f"{self.count('gone')} gone")
        if self.method == "centroids":
            return (f"aligned to {self.previous}: {counts} (no shared documents: matched on "
                    f"the clusters' term centroids)")
        share = 100.0 * self.n_kept_documents / self.n_shared
        return (f"aligned to {self.previous}: {counts}; {share:.1f} % of the "
                f"{self.n_shared:,} shared documents kept their cluster")


def align_labels(new_ids: npt.ArrayLike, new_labels: npt.ArrayLike, old_ids: npt.ArrayLike,
                 old_labels: npt.ArrayLike, new_centroids: Centroids | None = None,
                 old_centroids: Centroids | None = None) -> Alignment:
    """Renumber ``new_labels`` to best match the previous clustering ``old_labels``.

    Documents are matched by id (compared as strings). With shared documents, the clusters
    are matched by the Hungarian method on their overlap counts (maximized; pairs with no
    overlap stay unmatched). Without any, by the cosine similarity of ``new_centroids`` and
    ``old_centroids`` over the terms both have (pairs with similarity 0 stay unmatched); an
    error says what is missing when the centroids are not given. Pure: reads no file.
    """
    new_ids, new = _checked("new", new_ids, new_labels)
    old_ids, old = _checked("previous", old_ids, old_labels)
    _, in_new, in_old = np.intersect1d(new_ids, old_ids, assume_unique=True,
                                       return_indices=True)
    new_clusters, old_clusters = np.unique(new), np.unique(old)
    similarity = None
    if len(in_new):
        method = "documents"
        score = _overlap(new[in_new], old[in_old], new_clusters, old_clusters).astype(float)
    else:
        method = "centroids"
        if new_centroids is None or old_centroids is None:
            raise InvalidInputError(
                "the new and the previous run share no document id, and the term centroids "
                "of both runs are needed to match their clusters: write the previous run with "
                "this version of textcluster (it adds cluster_centroids.npz), or keep some "
                "documents in both runs")
        similarity = _similarity(new_centroids, old_centroids, new_clusters, old_clusters)
        score = similarity
    rows, cols = linear_sum_assignment(score, maximize=True)
    pairs = {int(new_clusters[r]): int(old_clusters[c])
             for r, c in zip(rows, cols) if score[r, c] > 0}
    mapping = _with_born(new_clusters, old_clusters, pairs)
    aligned = np.array([mapping[int(c)] for c in new], dtype=np.int64).reshape(new.shape)
    changes = _changes(new, old, aligned[in_new] if len(in_new) else None,
                       old[in_old], mapping, pairs, old_clusters, new_clusters, similarity)
    moved_rows = np.flatnonzero(aligned[in_new] != old[in_old])
    moved = pd.DataFrame({"doc_id": new_ids[in_new][moved_rows],
                          "old_cluster": old[in_old][moved_rows],
                          "new_cluster": aligned[in_new][moved_rows]}, columns=MOVED_COLUMNS)
    return Alignment(aligned, mapping, changes, moved, method, int(len(in_new)))


def align_to_previous(previous: str | os.PathLike[str] | PreviousRun, new_ids: npt.ArrayLike,
                      new_labels: npt.ArrayLike,
                      new_centroids: Centroids | None = None) -> Alignment:
    """Align ``new_labels`` to the clusters of an earlier run: its output folder (read by
    :func:`read_previous`) or what :func:`read_previous` returned (read before a long fit, so
    that a wrong folder fails early). ``new_centroids`` (in the numbering of ``new_labels``;
    ``Centroids(*export.cluster_centroids(X, labels, terms))``) are needed only when the runs share no
    document. The result's ``labels``, ``changes``, ``moved`` and ``summary`` are what
    ``textcluster run --align-to`` uses; :func:`write_alignment` writes the two tables."""
    before = previous if isinstance(previous, PreviousRun) else read_previous(previous)
    alignment = align_labels(new_ids, new_labels, before.ids, before.labels, new_centroids,
                             before.centroids)
    return replace(alignment, previous=str(before.folder))


def align_result(result, previous: str | os.PathLike[str] | PreviousRun) -> Alignment:
    """Renumber the clusters of a fitted run (a :class:`~textcluster.pipeline.JobResult`) to
    match ``previous`` (see :func:`align_to_previous`): ``result.labels`` is replaced by the
    aligned labels, so that everything written afterwards uses them (``result.model.labels_``
    keeps the fitted numbering; ``changes.csv``'s ``fit_id`` maps one to the other)."""
    centroids = Centroids(*cluster_centroids(result.X, result.labels,
                                             result.representation.terms))
    alignment = align_to_previous(previous, result.corpus.ids, result.labels, centroids)
    result.labels = alignment.labels
    return alignment


def align_assigned(assigned, vocabulary: npt.ArrayLike,
                   previous: str | os.PathLike[str] | PreviousRun) -> Alignment:
    """Renumber the clusters of documents placed by a saved model
    (:class:`~textcluster.pipeline.bundle.AssignResult`, whose rows are over the model's
    ``vocabulary``) to match ``previous``, as :func:`align_result` does for a run."""
    centroids = Centroids(*cluster_centroids(assigned.X, assigned.labels, vocabulary))
    alignment = align_to_previous(previous, assigned.corpus.ids, assigned.labels, centroids)
    assigned.labels = alignment.labels
    return alignment


def write_alignment(alignment: Alignment, out_dir: str | os.PathLike[str]) -> None:
    """Write ``changes.csv`` and ``moved.csv`` into ``out_dir``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    atomic_write(out / CHANGES_FILE, alignment.changes.to_csv(index=False))
    atomic_write(out / MOVED_FILE, alignment.moved.to_csv(index=False))


def read_previous(folder: str | os.PathLike[str]) -> PreviousRun:
    """The documents, clusters and (when written) term centroids of a textcluster output
    folder; :class:`~textcluster.InvalidInputError` naming the folder when it is not one."""
    folder = Path(folder)
    hint = ("give the --out folder of an earlier textcluster run (it holds clusters.csv)")
    if not folder.is_dir():
        raise InvalidInputError(f"previous run {folder}: no such folder; {hint}")
    path = folder / CLUSTERS_FILE
    if not path.is_file():
        raise InvalidInputError(f"previous run {folder} is not a textcluster output folder: it "
                                f"has no {CLUSTERS_FILE}; {hint}")
    try:
        frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    except (ValueError, UnicodeDecodeError) as exc:  # pandas' ParserError is a ValueError
        raise InvalidInputError(f"{path} cannot be read as CSV ({exc}); {hint}") from None
    missing = [c for c in ("doc_id", "cluster") if c not in frame.columns]
    if missing:
        raise InvalidInputError(
            f"{path} has no column {missing[0]!r} (columns: {', '.join(map(str, frame.columns))})"
            f"; a textcluster clusters.csv has doc_id,cluster,label,score — {hint}")
    clusters = pd.to_numeric(frame["cluster"], errors="coerce")
    bad = np.flatnonzero(clusters.isna().to_numpy() | (clusters % 1 != 0).to_numpy()
                         | (clusters < 0).to_numpy())
    if len(bad):
        raise InvalidInputError(
            f"{path}, row {bad[0] + 2}: cluster {frame['cluster'].iloc[bad[0]]!r} is not a "
            f"cluster id (a non-negative integer); was the file edited? Re-run the previous "
            f"clustering or fix the file")
    ids = frame["doc_id"].to_numpy(dtype=str)
    _, first, counts = np.unique(ids, return_index=True, return_counts=True)
    if (counts > 1).any():
        raise InvalidInputError(f"{path}: doc_id {str(ids[first[counts > 1][0]])!r} appears "
                                f"{counts.max()} times; each document must appear once")
    centroids = read_centroids(folder / CENTROIDS_FILE)
    return PreviousRun(folder, ids, clusters.to_numpy(dtype=np.int64), centroids)


def read_centroids(path: str | os.PathLike[str]) -> Centroids | None:
    """The centroids saved by :func:`textcluster.pipeline.export.write_run`, or ``None``
    when ``path`` does not exist."""
    path = Path(path)
    if not path.is_file():
        return None
    try:
        with np.load(path, allow_pickle=False) as data:
            return Centroids(np.asarray(data["clusters"], dtype=np.int64),
                             np.asarray(data["rows"], dtype=np.float64),
                             np.asarray(data["terms"]).astype(str))
    except (OSError, ValueError, KeyError, zipfile.BadZipFile, InvalidInputError) as exc:
        raise InvalidInputError(
            f"{path} is not a readable cluster centroid file ({exc}); delete it to align on "
            f"the shared documents only, or re-run the previous clustering") from None


# -- the matching ----------------------------------------------------------------------------


def _checked(which: str, ids: npt.ArrayLike, labels: npt.ArrayLike
             ) -> tuple[np.ndarray, np.ndarray]:
    ids_array = np.asarray(ids).astype(str)
    labels_array = np.asarray(labels)
    if ids_array.ndim != 1 or labels_array.shape != ids_array.shape:
        raise InvalidInputError(f"{which} run: {ids_array.size} ids but {labels_array.size} "
                                f"labels; give one cluster per document")
    if labels_array.size and (not np.issubdtype(labels_array.dtype, np.integer)
                              or labels_array.min() < 0):
        raise InvalidInputError(f"{which} run: cluster ids must be non-negative integers")
    if len(np.unique(ids_array)) != len(ids_array):
        raise InvalidInputError(f"{which} run: document ids are not unique")
    return ids_array, labels_array.astype(np.int64)


def _overlap(new: np.ndarray, old: np.ndarray, new_clusters: np.ndarray,
             old_clusters: np.ndarray) -> np.ndarray:
    """Shared documents in each (new cluster, old cluster) pair."""
    table = np.zeros((len(new_clusters), len(old_clusters)), dtype=np.int64)
    np.add.at(table, (np.searchsorted(new_clusters, new), np.searchsorted(old_clusters, old)), 1)
    return table


def _similarity(new: Centroids, old: Centroids, new_clusters: np.ndarray,
                old_clusters: np.ndarray) -> np.ndarray:
    """Cosine of each (new, old) pair of centroids over the terms both runs have (0 for a
    cluster without a centroid)."""
    common, in_new, in_old = np.intersect1d(np.asarray(new.terms).astype(str),
                                            np.asarray(old.terms).astype(str),
                                            return_indices=True)
    a = _rows_for(new, new_clusters)[:, in_new]
    b = _rows_for(old, old_clusters)[:, in_old]
    norms = np.linalg.norm(a, axis=1)[:, None] * np.linalg.norm(b, axis=1)[None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        cosine = np.where(norms > 0, (a @ b.T) / norms, 0.0)
    return np.clip(np.nan_to_num(cosine), 0.0, 1.0)


def _rows_for(centroids: Centroids, clusters: np.ndarray) -> np.ndarray:
    rows = np.zeros((len(clusters), len(centroids.terms)))
    known = {int(c): i for i, c in enumerate(centroids.clusters)}
    for i, cluster in enumerate(clusters):
        if int(cluster) in known:
            rows[i] = centroids.rows[known[int(cluster)]]
    return rows


def _with_born(new_clusters: np.ndarray, old_clusters: np.ndarray,
               pairs: dict[int, int]) -> dict[int, int]:
    """Matched clusters take their previous id; the others the smallest ids the previous run
    did not use, in the order of their fitted ids."""
    used = {int(c) for c in old_clusters}
    mapping = dict(pairs)
    fresh = 0
    for cluster in (int(c) for c in new_clusters if int(c) not in pairs):
        while fresh in used:
            fresh += 1
        mapping[cluster] = fresh
        used.add(fresh)
    return mapping


def _changes(new: np.ndarray, old: np.ndarray, shared_new: np.ndarray | None,
             shared_old: np.ndarray, mapping: dict[int, int], pairs: dict[int, int],
             old_clusters: np.ndarray, new_clusters: np.ndarray,
             similarity: np.ndarray | None) -> pd.DataFrame:
    """One row per cluster: kept (matched), born (new only) or gone (previous only)."""
    size_after = dict(zip(*np.unique(new, return_counts=True)))
    size_before = dict(zip(*np.unique(old, return_counts=True)))
    rows: list[tuple] = []
    for fit_id in (int(c) for c in new_clusters):
        new_id = mapping[fit_id]
        kept = fit_id in pairs
        overlap = (None if shared_new is None
                   else int(((shared_new == new_id) & (shared_old == new_id)).sum()) if kept
                   else 0)
        cosine = (float(similarity[np.searchsorted(new_clusters, fit_id),
                                   np.searchsorted(old_clusters, pairs[fit_id])])
                  if kept and similarity is not None else None)
        rows.append((new_id if kept else None, new_id, size_before.get(new_id, 0) if kept else 0,
                     int(size_after[fit_id]), overlap,
                     None if cosine is None else round(cosine, 6),
                     "kept" if kept else "born", fit_id))
    matched = set(pairs.values())
    rows += [(int(c), None, int(size_before[c]), 0, None if shared_new is None else 0, None,
              "gone", None) for c in old_clusters if int(c) not in matched]
    frame = pd.DataFrame(rows, columns=CHANGES_COLUMNS)
    for column in ("old_id", "new_id", "overlap", "fit_id"):
        frame[column] = frame[column].astype("Int64")
    order = frame["new_id"].fillna(frame["old_id"]).to_numpy()
    return frame.iloc[np.argsort(order, kind="stable")].reset_index(drop=True)

"""Writing a run's results: clusters, top terms, metrics and parameters."""

import json
import os
import platform
import shutil
import uuid
from pathlib import Path

import numpy as np
import pandas as pd

from .. import __version__
from .._errors import InvalidInputError
from ..assign import cluster_means, cluster_scores
from ..metrics import nmi
from .timeline import clusters_over_time


TERM_PROFILES = ("centroid", "basis")
OVER_TIME_FILE = "clusters_over_time.csv"
CLUSTERS_FILE = "clusters.csv"
CENTROIDS_FILE = "cluster_centroids.npz"  # clusters (k,), rows (k × m), terms (m,): no pickle
UNLABELLED_NOTE = ("the corpus has no class labels: purity, entropy, NMI, accuracy and ARI "
                   "need labels")


def top_terms(result, n_terms=10, profile="centroid"):
    """``cluster, rank, term, weight`` rows: each cluster's heaviest terms.

    ``profile="centroid"`` (default): the mean of the cluster's weighted rows of ``X`` (what
    its documents hold), for every model. ``"basis"``: for factorization models, the basis
    weighted by the mean document factor of the members. The basis profile says little where
    the graph term dominates GNMF: on citeulike-t:tags (default GNMF, k = 20) the document
    factor's rows all had cosine 0.9999998 to their mean, and all 20 clusters got the same
    five top tags, while their centroids differ (recommender systems, FPGAs, ...).
    """
    if profile not in TERM_PROFILES:
        raise InvalidInputError(f"unknown term profile {profile!r}; use centroid or basis")
    labels = result.labels
    clusters = np.unique(labels)
    profiles = (_basis_profiles(result, clusters)
                if profile == "basis" and hasattr(result.model, "components_")
                else _centroids(result.X, labels, clusters))
    rows = []
    for cluster, weights in zip(clusters, profiles):
        order = np.argsort(-weights, kind="stable")[:n_terms]
        rows += [(int(cluster), rank, result.representation.terms[j], float(weights[j]))
                 for rank, j in enumerate(order, start=1) if weights[j] > 0]
    return pd.DataFrame(rows, columns=["cluster", "rank", "term", "weight"])


def _centroids(X, labels, clusters):
    """k × m mean rows of ``X`` for the cluster ids ``clusters`` (sorted)."""
    return cluster_means(X, np.searchsorted(clusters, labels), len(clusters))[0]


def cluster_centroids(X, labels, terms):
    """``(clusters, rows, terms)``: each cluster's mean weighted row of ``X`` (float32, k × m)
    over the ``terms`` of its columns, as ``cluster_centroids.npz`` keeps them for a later run
    to align to (:mod:`textcluster.pipeline.align`) when the two runs share no document."""
    clusters = np.unique(labels)
    rows = _centroids(X, labels, clusters).astype(np.float32)
    return clusters, rows, np.asarray(terms).astype(str)


def write_centroids(result, path):
    """Save :func:`cluster_centroids` to ``path`` (``np.savez_compressed``, strings as unicode
    arrays: read back with ``allow_pickle=False``), through a temporary file."""
    clusters, rows, terms = cluster_centroids(result.X, result.labels,
                                              result.representation.terms)
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp.npz")
    try:
        np.savez_compressed(tmp, clusters=clusters.astype(np.int64), rows=rows, terms=terms)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _basis_profiles(result, clusters):
    return np.array([np.asarray(result.embedding[result.labels == c]).mean(axis=0)
                     @ result.model.components_ for c in clusters])


def clusters_frame(result):
    """``doc_id, cluster, label, score`` per document."""
    corpus = result.corpus
    return pd.DataFrame({
        "doc_id": corpus.ids,
        "cluster": result.labels,
        "label": corpus.labels if corpus.labels is not None else "",
        "score": np.round(cluster_scores(score_rows(result.model, result.X, result.embedding),
                                         result.labels), 6),
    })


def score_rows(model, X, embedding=None):
    """The rows the clusters are read on, as ``clusters.csv`` scores them: for the k-means
    models the (projected) tf-idf rows, else the document factor (``embedding``, or
    ``model.transform(X)`` for new documents), scaled to unit rows for ``assign="cosine"``."""
    if hasattr(model, "_represent"):  # KMeansBaseline, LSIKMeans
        return model._represent(X, fitting=False)
    rows = model.transform(X) if embedding is None else embedding
    return model.assignment_rule().rows(rows)


def write_run(result, out_dir, period="auto"):
    """Write ``clusters.csv``, ``cluster_terms.csv``, ``cluster_centroids.npz``,
    ``metrics.json`` and ``run.json``; for documents with dates also
    ``clusters_over_time.csv`` (per ``period``, :mod:`.timeline`)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    atomic_write(out / CLUSTERS_FILE, clusters_frame(result).to_csv(index=False))
    atomic_write(out / "cluster_terms.csv", top_terms(result).to_csv(index=False))
    write_centroids(result, out / CENTROIDS_FILE)
    if result.corpus.dates is not None:
        over_time = clusters_over_time(result.corpus.dates, result.labels, period)
        atomic_write(out / OVER_TIME_FILE, over_time.to_csv(index=False))
    metrics = {**result.metrics, **({} if result.corpus.labels is not None
                                    else {"labels": None, "note": UNLABELLED_NOTE})}
    final = result.objective()
    if final:
        metrics["objective"] = final[0]
    metrics["timings"] = result.timings
    fit_stages = getattr(result.model, "fit_seconds_", None)
    if fit_stages:
        metrics["fit_stages"] = fit_stages
    atomic_write(out / "metrics.json", json.dumps(metrics, indent=2) + "\n")
    run = {**result.params, "versions": versions(),
           "n_iter": getattr(result.model, "n_iter_", None),
           "lam_selection": getattr(result.model, "lam_selection_", None),
           "cluster_count": getattr(result.model, "cluster_count_", None),
           "objective_history": _history(result.model)}
    atomic_write(out / "run.json", json.dumps(run, indent=2) + "\n")
    return out


def agreement(labels_a, labels_b, ids_a=None, ids_b=None):
    """NMI (max-normalized, as :func:`textcluster.metrics.nmi`) between two clusterings of the
    same documents, e.g. of CiteULike's articles clustered by their tags and by their users.

    Without ids the two label arrays must be in the same document order; with ``ids_a`` and
    ``ids_b`` (e.g. ``result.corpus.ids``) only the documents in both are compared. In [0, 1]:
    1 when the two partitions are the same up to renaming, 0 when independent.
    """
    labels_a, labels_b = np.asarray(labels_a), np.asarray(labels_b)
    if (ids_a is None) != (ids_b is None):
        raise InvalidInputError("agreement: give the ids of both clusterings, or of neither")
    if ids_a is not None:
        labels_a, labels_b = _on_common_ids(labels_a, labels_b, ids_a, ids_b)
    elif len(labels_a) != len(labels_b):
        raise InvalidInputError(
            f"agreement: the clusterings have {len(labels_a)} and {len(labels_b)} documents; "
            f"pass their ids to compare the documents they share"
        )
    return nmi(labels_a, labels_b)


def _on_common_ids(labels_a, labels_b, ids_a, ids_b):
    ids_a, ids_b = np.asarray(ids_a).astype(str), np.asarray(ids_b).astype(str)
    for ids, labels in ((ids_a, labels_a), (ids_b, labels_b)):
        if len(ids) != len(labels) or len(np.unique(ids)) != len(ids):
            raise InvalidInputError("agreement: each clustering needs one unique id per label")
    common, in_a, in_b = np.intersect1d(ids_a, ids_b, return_indices=True)
    if len(common) == 0:
        raise InvalidInputError("agreement: the two clusterings share no document id")
    return labels_a[in_a], labels_b[in_b]


def versions():
    import scipy
    import sklearn
    import spacy

    return {"textcluster": __version__, "python": platform.python_version(),
            "numpy": np.__version__, "scipy": scipy.__version__,
            "scikit-learn": sklearn.__version__, "spacy": spacy.__version__}


def _history(model):
    history = getattr(model, "objective_history_", None)
    return None if history is None else [float(v) for v in history]


def atomic_write(path, data):
    """Write ``data`` (text, or bytes) to ``path`` through a temporary file and a rename (no
    partial files); returns ``path``.

    The temporary file is created with ``open(..., "x")`` rather than ``mkstemp`` so that the
    result gets the usual permissions (0666 less the umask), not mkstemp's owner-only 0600.
    """
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    try:
        if isinstance(data, bytes):
            with open(tmp, "xb") as handle:
                handle.write(data)
        else:
            with open(tmp, "x", encoding="utf-8", newline="") as handle:
                handle.write(data)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path


def replace_folder(tmp, target):
    """Move the finished folder ``tmp`` to ``target``; a folder already there is moved aside
    first and removed after, so ``target`` is never a mix of the two."""
    if not target.exists():
        os.replace(tmp, target)
        return
    old = target.parent / f".{target.name}.{uuid.uuid4().hex}.old"
    os.replace(target, old)
    try:
        os.replace(tmp, target)
    except BaseException:
        os.replace(old, target)
        raise
    shutil.rmtree(old, ignore_errors=True)

"""Writing a run's results: clusters, top terms, metrics and parameters."""

import json
import os
import platform
import uuid
from pathlib import Path

import numpy as np
import pandas as pd

from . import __version__
from .assign import cluster_scores


def top_terms(result, n_terms=10):
    """``cluster, rank, term, weight`` rows: each cluster's heaviest terms.

    For factorization models, a cluster's term profile is the basis weighted by the mean
    document factor of its members; for k-means, the centroid of its tf-idf rows.
    """
    X, labels = result.representation.X, result.labels
    rows = []
    for cluster in np.unique(labels):
        members = labels == cluster
        profile = _term_profile(result, members, X)
        order = np.argsort(-profile, kind="stable")[:n_terms]
        for rank, j in enumerate(order, start=1):
            if profile[j] > 0:
                rows.append((int(cluster), rank, result.representation.terms[j],
                             float(profile[j])))
    return pd.DataFrame(rows, columns=["cluster", "rank", "term", "weight"])


def _term_profile(result, members, X):
    components = getattr(result.model, "components_", None)
    if components is not None:
        weights = np.asarray(result.embedding[members]).mean(axis=0)
        return weights @ components
    return np.asarray(X[members].mean(axis=0)).ravel()


def clusters_frame(result):
    """``doc_id, cluster, label, score`` per document."""
    corpus = result.corpus
    return pd.DataFrame({
        "doc_id": corpus.ids,
        "cluster": result.labels,
        "label": corpus.labels if corpus.labels is not None else "",
        "score": np.round(cluster_scores(_scored_rows(result), result.labels), 6),
    })


def _scored_rows(result):
    """The rows the clusters were found on: the document factor, or for k-means models the
    (projected) tf-idf rows, whose ``transform`` gives distances instead."""
    model = result.model
    if hasattr(model, "cluster_centers_"):
        return model._represent(result.representation.X, fitting=False)
    return result.embedding


def write_run(result, out_dir):
    """Write ``clusters.csv``, ``cluster_terms.csv``, ``metrics.json`` and ``run.json``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    _atomic_write(out / "clusters.csv", clusters_frame(result).to_csv(index=False))
    _atomic_write(out / "cluster_terms.csv", top_terms(result).to_csv(index=False))
    metrics = {**result.metrics, "timings": result.timings}
    _atomic_write(out / "metrics.json", json.dumps(metrics, indent=2) + "\n")
    run = {**result.params, "versions": versions(), "n_iter": getattr(result.model, "n_iter_", None),
           "objective_history": _history(result.model)}
    _atomic_write(out / "run.json", json.dumps(run, indent=2) + "\n")
    return out


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


def _atomic_write(path, text):
    """Write ``text`` to ``path`` through a temporary file and a rename (no partial files).

    The temporary file is created with ``open(..., "x")`` rather than ``mkstemp`` so that the
    result gets the usual permissions (0666 less the umask), not mkstemp's owner-only 0600.
    """
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    try:
        with open(tmp, "x", encoding="utf-8", newline="") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise

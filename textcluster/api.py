"""The Python entry point: one corpus, one model, clustered and scored as ``textcluster run``."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from contextlib import nullcontext
from typing import Any

from .batch.spec import one_job
from .corpora import cache
from .pipeline import JobResult, run_job
from .pipeline.job import Progress


def run(corpus: str, model: str = "gnmf", k: int | None = None, seed: int = 0,
        data_dir: str | None = None,
        settings: Mapping[str, Any] | Iterable[str] | None = None,
        progress: Progress | None = None, labeled_fraction: float | None = None,
        labeled_per_class: int | None = None, use_cache: bool = True) -> JobResult:
    """Cluster ``corpus`` with ``model`` and score it: exactly what ``textcluster run`` does.

    Parameters
    ----------
    corpus : str
        A corpus name (``tdt2``, ``reuters``, ``citeulike-t:tags``, ``hf:NAME``, ...) or the
        path of a table file or of a folder of ``.txt`` files.
    model : str
        A model name (``textcluster models`` lists them).
    k : int, optional
        Number of clusters; default the number of classes of a labelled corpus.
    seed : int
        Random seed of the model (and of the labelled documents drawn for it).
    data_dir : str, optional
        Folder holding the corpora (default ``$TEXTCLUSTER_DATA``, then ``corpora/``).
    settings : mapping or iterable of str, optional
        Corpus, preprocessing and model settings, ``{"lam": 10}`` or ``["lam=10"]``, in the
        override grammar of :mod:`textcluster.batch.overrides` (bare names are shortcuts;
        ``graph="citations"`` regularizes with the corpus' own graph).
    progress : callable, optional
        ``progress(label, total)`` returning a context manager that shows a long stage.
    labeled_fraction, labeled_per_class : optional
        Semi-supervised models see the labels of this share (or number) of each class.
    use_cache : bool
        Read and write the on-disk cache of parsed corpora and term counts.
    """
    job = one_job(corpus, model, k=k, seed=seed, settings=settings or (), data_dir=data_dir,
                  labeled_fraction=labeled_fraction, labeled_per_class=labeled_per_class)
    with nullcontext() if use_cache else cache.disabled():
        return run_job(job, progress=progress)

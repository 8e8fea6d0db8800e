"""The Python entry point: one corpus, one model, clustered and scored as ``textcluster run``."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ._errors import InvalidInputError
from .batch.overrides import parse_override
from .batch.spec import one_job
from .corpora import Corpus, cache
from .pipeline import JobResult, run_job
from .pipeline.job import Progress

Settings = Mapping[str, Any] | Iterable[str | tuple[str, Any]]  # {"lam": 10}, ["lam=10"]


def run(data: Any, model: str = "gnmf", k: int | str | None = None, seed: int = 0,
        data_dir: str | None = None,
        settings: Settings | None = None,
        progress: Progress | None = None, labeled_fraction: float | None = None,
        labeled_per_class: int | None = None, use_cache: bool = True) -> JobResult:
    """Cluster ``data`` with ``model`` and score it: what ``textcluster run`` does.

    Parameters
    ----------
    data : str, path, list of str, pandas.DataFrame, datasets.Dataset or Corpus
        A corpus name (``tdt2``, ``reuters``, ``citeulike-t:tags``, ``hf:NAME``, ...) or the
        path of a table file or of a folder of ``.txt`` files; or documents in memory: a list
        of texts, a DataFrame or Hugging Face Dataset with a ``text`` column (or one named
        like it, ``body``, ``content``, …; and optional label and id columns, read as
        :meth:`Corpus.from_pandas` reads them; name other columns with
        ``settings={"text_column": ...}``), or a :class:`Corpus`.
    model : str
        A model name (``textcluster models`` lists them).
    k : int, "auto" or "min:max", optional
        Number of clusters; default the number of classes of a labelled corpus. ``"auto"``
        (or a range ``"2:40"``): chosen without labels before the fit (candidates 3–30 for
        ``"auto"``; :mod:`textcluster.models.cluster_count`).
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

    Returns
    -------
    JobResult
        ``labels``, ``scores``, ``top_terms()``, ``metrics`` (all five when the documents have
        labels), the fitted ``model``, ``save(out_dir)``.
    """
    settings = settings or ()
    corpus = None
    if not isinstance(data, (str, Path)):
        corpus, settings = as_corpus(data, settings)
    job = one_job(corpus if corpus is not None else data, model, k=k, seed=seed,
                  settings=settings, data_dir=data_dir, labeled_fraction=labeled_fraction,
                  labeled_per_class=labeled_per_class)
    with nullcontext() if use_cache else cache.disabled():
        return run_job(job, progress=progress, corpus=corpus)


TABLE_OPTIONS = ("text_column", "label_column", "id_column", "date_column")


def as_corpus(data: Any, settings: Settings = ()) -> tuple[Corpus, Settings]:
    """``data`` in memory as a :class:`Corpus`, and the settings left once the table options
    (``text_column``, ``label_column``, ``id_column``, ``date_column``) have been used."""
    if isinstance(data, Corpus):
        return data, settings
    pairs = (list(settings.items()) if isinstance(settings, Mapping)
             else [parse_override(s) if isinstance(s, str) else s for s in settings])
    table = {key: value for key, value in pairs if key in TABLE_OPTIONS}
    rest = [(key, value) for key, value in pairs if key not in TABLE_OPTIONS]
    if isinstance(data, pd.DataFrame):
        return Corpus.from_pandas(data, **table), rest
    if hasattr(data, "to_pandas") and hasattr(data, "column_names"):  # datasets.Dataset
        return Corpus.from_pandas(data.to_pandas(), name="dataset", **table), rest
    if isinstance(data, Iterable) and not isinstance(data, (bytes, Mapping)):
        texts = list(data)
        if texts and all(isinstance(t, str) for t in texts):
            return Corpus("documents", ids=np.arange(len(texts)).astype(str), texts=texts), rest
    raise InvalidInputError(
        f"textcluster.run cannot read {type(data).__name__!r} data: give a corpus name or path, "
        "a list of texts, a pandas DataFrame or Hugging Face Dataset with a text column, or a "
        "Corpus"
    )

"""One job, fitted and scored: the single run path of ``textcluster run`` and of every batch job.

A :class:`Job` names a corpus selection, a model with its parameters, ``k``, a class draw and a
seed. :func:`run_job` represents the corpus (DESIGN §5.1: tf-idf of the whole selection, before
any class subset is taken), takes the draw's documents (:func:`.protocol.class_subset`), picks the
labelled documents when the job gives labels (the same for every model of a draw), fits the model
with ``n_components=k`` and ``random_state=seed`` and scores its clusters.
``textcluster run`` is a batch of one such job (:func:`textcluster.batch.spec.one_job`); the
batch runner calls :func:`run_job` for each job of a pipeline file.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, fields
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .._errors import InvalidInputError
from ..corpora import Corpus
from ..metrics import UNLABELED, evaluate
from ..models import MODELS, chosen_settings, make_model
from . import export
from .prepare import Representation, check_k, load_corpus, represent
from .protocol import class_subset, evaluate_split, labeled_subset

Progress = Callable[[str, int], AbstractContextManager]


@dataclass(frozen=True)
class Job:
    """One fit of one model on one selection of documents; ``key`` identifies it."""

    pipeline: str
    corpus: str
    selection: dict  # select (loader options), preprocess, graph, draw_seed
    model: str
    variant: str
    params: dict
    k: int | str | None  # None: the number of classes; "auto" or "min:max": chosen by the model
    draw: int | None  # None: all documents of the selection
    seed: int
    protocol: str
    labeled: dict | None  # {"fraction": f} or {"per_class": n}
    record_history: bool = False
    data_dir: str | None = None
    keep_clusters: bool = False  # return each document's cluster with the result

    def identity(self) -> dict:
        """What makes a job the same job in another run (not where its data lives nor what
        it returns besides its metrics)."""
        return {f.name: getattr(self, f.name) for f in fields(self)
                if f.name not in ("record_history", "data_dir", "keep_clusters")}

    @cached_property
    def key(self) -> str:
        text = json.dumps(self.identity(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


@dataclass
class JobResult:
    """What one job produced: its documents, the fitted model, the clusters and the metrics."""

    job: Job
    representation: Representation  # of the whole selection
    rows: np.ndarray  # the job's rows of ``representation.X``
    corpus: Corpus  # the job's documents
    k: int
    labeled: dict | None  # which documents' labels the model saw (and how they were drawn)
    model: Any
    labels: np.ndarray
    embedding: np.ndarray
    metrics: dict
    timings: dict

    @property
    def X(self):
        """The job's rows of the tf-idf matrix."""
        rep = self.representation
        return rep.X if len(self.rows) == rep.X.shape[0] else rep.X[self.rows]

    @property
    def params(self) -> dict:
        """What was run, JSON-ready (``run.json``)."""
        job, rep = self.job, self.representation
        return {"corpus": job.corpus, "model": job.model, "k": self.k, "seed": job.seed,
                "corpus_options": job.selection["select"], "preprocess": rep.options,
                "dropped_documents": rep.dropped_docs, "graph": job.selection["graph"],
                "labeled": self.labeled,
                "model_params": {key: (value if isinstance(value, (int, float, str, bool,
                                                                    type(None)))
                                       else repr(value))
                                 for key, value in self.model.get_params().items()}}

    @property
    def scores(self) -> np.ndarray:
        """Each document's confidence in its cluster, in [0, 1] (``clusters.csv``'s score)."""
        return export.clusters_frame(self)["score"].to_numpy()

    def top_terms(self, n_terms: int = 10) -> pd.DataFrame:
        """``cluster, rank, term, weight``: each cluster's heaviest terms."""
        return export.top_terms(self, n_terms=n_terms)

    def save(self, out_dir) -> Path:
        """Write ``clusters.csv``, ``cluster_terms.csv``, ``metrics.json`` and ``run.json``."""
        return export.write_run(self, out_dir)

    def objective(self, history: bool = False) -> list[float]:
        """The objective per iteration (``history``) or just the final one (k-means models:
        their inertia); [] when the model records none."""
        values = getattr(self.model, "objective_history_", None)
        if values is None:
            inertia = getattr(getattr(self.model, "kmeans_", None), "inertia_", None)
            values = [] if inertia is None else [inertia]
        values = [float(v) for v in values]
        return values if history else values[-1:]


class Timer:
    """Wall time per named stage."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[name] = round(self.seconds.get(name, 0.0) + time.perf_counter() - start,
                                       4)


class RepresentationCache:
    """Represented corpora kept for the next jobs on the same selection (least recently used
    first out): a batch worker represents each corpus once, not once per job."""

    def __init__(self, size: int = 2) -> None:
        self.size = size
        self._entries: OrderedDict[str, Representation] = OrderedDict()

    def get(self, job: Job, timer: Timer, progress: Progress,
            corpus: Corpus | None = None) -> Representation:
        """The represented corpus of ``job``: ``corpus`` when given (data in memory, not
        kept), else the one loaded by name."""
        if corpus is not None:
            with timer.stage("preprocess"), progress("preprocessing", corpus.n_docs):
                return represent(corpus, **job.selection["preprocess"])
        key = json.dumps([job.corpus, job.selection["select"], job.selection["preprocess"],
                          job.data_dir], sort_keys=True)
        if key in self._entries:
            self._entries.move_to_end(key)
            return self._entries[key]
        with timer.stage("load"):
            corpus = load_corpus(job.corpus, data_dir=job.data_dir, **job.selection["select"])
        with timer.stage("preprocess"), progress("preprocessing", corpus.n_docs):
            rep = represent(corpus, **job.selection["preprocess"])
        if self.size > 0:
            self._entries[key] = rep
            while len(self._entries) > self.size:
                self._entries.popitem(last=False)
        return rep

    def clear(self) -> None:
        self._entries.clear()


def _no_progress(label: str, total: int) -> AbstractContextManager:
    return nullcontext()


def run_job(job: Job, progress: Progress | None = None,
            representations: RepresentationCache | None = None,
            corpus: Corpus | None = None) -> JobResult:
    """Fit and score ``job``; raises :class:`~textcluster.TextclusterError` for bad input.

    ``progress(label, total)``, when given, returns a context manager that displays the
    progress of a long stage (documents tokenized, iterations run). ``representations`` keeps
    represented corpora between jobs (none kept by default). ``corpus``: the job's corpus
    when it is data in memory (:func:`textcluster.batch.spec.one_job` on a Corpus).
    """
    progress = progress or _no_progress
    timer = Timer()
    rep = (representations or RepresentationCache(size=0)).get(job, timer, progress, corpus)
    with timer.stage("select"):
        rows = select_documents(rep.corpus, job)
        corpus = rep.corpus if job.draw is None else rep.corpus.subset(rows)
        k = job.k or _n_classes(corpus, job)
        if job.draw is None and not isinstance(k, str):  # a draw has k classes by construction
            check_k(k, rep)
        labeled, y = labelled_documents(corpus, job)
        graph = document_graph(rep.corpus, rows, job)
    model = make_model(job.model, n_components=k, random_state=job.seed, **job.params)
    planned = getattr(model, "planned_iterations", None)
    with timer.stage("fit"), progress("factorizing", planned() if planned else 1):
        X = rep.X if job.draw is None else rep.X[rows]
        embedding = model.fit_transform(X, y, **({} if graph is None else {"graph": graph}))
        k = model.n_components_  # "auto": the k chosen
    with timer.stage("evaluate"):
        metrics = {**score(corpus.labels, model.labels_, y), **chosen_settings(model)}
    return JobResult(job, rep, rows, corpus, k, labeled, model, model.labels_, embedding,
                     metrics, timer.seconds)


def select_documents(corpus: Corpus, job: Job) -> np.ndarray:
    """Row indices of the job's documents: the draw's classes, or every document."""
    if job.draw is None:
        return np.arange(corpus.n_docs)
    return class_subset(corpus.labels, job.k, job.selection["draw_seed"])


def labelled_documents(corpus: Corpus, job: Job) -> tuple[dict | None, np.ndarray | None]:
    """``(record, y)``: which documents' labels the model sees (``y``: class codes, -1
    elsewhere), or ``(None, None)``. The choice depends on the draw and the seed only, so every
    model of a draw sees the same labels."""
    if job.labeled is None:
        return None, None
    if corpus.labels is None:
        raise InvalidInputError(f"corpus {job.corpus!r} has no class labels to show the model")
    seed = [job.selection["draw_seed"] or 0, job.seed]
    y = labeled_subset(corpus.labels, fraction=job.labeled.get("fraction"),
                       per_class=job.labeled.get("per_class"),
                       random_state=np.random.default_rng(seed))
    return {**job.labeled, "n_labeled": int((y >= 0).sum()), "seed": seed}, y


def document_graph(corpus: Corpus, rows: np.ndarray, job: Job):
    """The graph passed to ``fit``: None (a graph model builds its kNN graph) or the rows
    ``rows`` of the corpus' own graph (``graph = "citations"`` for CiteULike)."""
    choice = job.selection["graph"]
    if choice == "knn":
        return None
    if corpus.graph is None or corpus.metadata.get("graph") != choice:
        has = ("no document graph" if corpus.graph is None
               else f"only the graph {corpus.metadata.get('graph')!r}")
        raise InvalidInputError(f"graph = {choice!r}: corpus {job.corpus!r} has {has}; "
                                "use graph = \"knn\" (the default)")
    if not MODELS.get(job.model).uses_document_graph:
        raise InvalidInputError(
            f"graph = {choice!r}: model {job.model!r} uses no document graph; choose a "
            "graph-regularized model such as gnmf"
        )
    return corpus.graph if len(rows) == corpus.n_docs else corpus.graph[rows][:, rows]


def score(truth: np.ndarray | None, predicted: np.ndarray,
          y: np.ndarray | None = None) -> dict:
    """The metrics of a clustering; with ``y`` (the labels a semi-supervised model saw), also on
    the unlabelled documents only (suffix ``_unlabeled``). Without class labels only the
    sizes."""
    metrics = {"n_docs": int(len(predicted)), "n_clusters": len(pd.unique(predicted))}
    if truth is None:
        return metrics
    metrics["n_classes"] = len(pd.unique(truth))
    if y is None:
        return {**metrics, **evaluate(truth, predicted)}
    split = evaluate_split(truth, predicted, y)
    metrics.update(split["all"], n_labeled=int((np.asarray(y) >= 0).sum()),
                   n_docs_unlabeled=int((np.asarray(y) == -1).sum()))
    if split["unlabelled"] is not None:
        metrics.update({f"{name}{UNLABELED}": v for name, v in split["unlabelled"].items()})
    return metrics


def _n_classes(corpus: Corpus, job: Job) -> int:
    if corpus.labels is None:
        raise InvalidInputError(
            f"corpus {job.corpus!r} has no class labels: give the number of clusters (--k N, or "
            "--k auto to choose it without labels; k in the [protocol] of a pipeline file)"
        )
    return int(len(np.unique(corpus.labels)))

"""Running jobs (in a worker) and batches (in the parent, which alone writes the ledger).

A job (:class:`~textcluster.batch.spec.Job`): represent the corpus — once per worker process,
on the whole selection, before any class subset is taken (DESIGN §5.1) — take the draw's
documents (:func:`textcluster.pipeline.protocol.class_subset`), pick the labelled documents when the
protocol gives labels (the same for every model), fit the model with ``n_components=k`` and
``random_state=seed``, and score it (:func:`textcluster.metrics.evaluate`).
"""

import importlib
import importlib.util
import itertools
import json
import platform
import socket
import time
import traceback
import warnings
from collections import OrderedDict
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd

from .. import __version__
from .._errors import InvalidInputError, TextclusterError
from ..pipeline.export import _atomic_write
from ..metrics import evaluate
from ..models import chosen_settings, make_model
from ..pipeline.prepare import Timer, check_k, load_corpus, represent
from ..pipeline.protocol import class_subset, evaluate_split, labeled_subset
from .executors import SerialExecutor, WorkerDiedError, describe_job
from .faults import fault_point
from .ledger import Ledger, LedgerError
from .spec import count_jobs, iter_jobs

CACHE_SIZE = 2  # represented corpora kept per worker process
_representations = OrderedDict()


class ResultNotSavedError(TextclusterError):
    """A finished job's result could not be written (full disk, I/O error): the batch stops,
    and the results saved before it are kept."""


# -- one job (runs in a worker) --------------------------------------------------------------
def run_job(job):
    """Fit and score one job; returns its result as a dict (status ``done`` or ``failed`` with
    the error) and never raises for a failing job."""
    fault_point("job")  # fault-injection tests only
    started, timer = time.time(), Timer()
    result = {"status": "done", "error": None}
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with timer.stage("total"):
                result.update(_fit_and_score(job, timer))
        result["error"] = _warning_text(caught)
    except Exception as exc:  # noqa: BLE001 - every failure is recorded, none stops the batch
        result.update(status="failed", error=describe_error(exc))
    result.update(timings=timer.seconds, started=started, finished=time.time(),
                  host=socket.gethostname(), versions=versions())
    return result


def _fit_and_score(job, timer):
    with timer.stage("represent"):
        rep = representation(job)
    with timer.stage("select"):
        rows = select_documents(rep.corpus, job)
        X = rep.X[rows]
        truth = None if rep.corpus.labels is None else rep.corpus.labels[rows]
        k = job.k or _n_classes(truth, job)
        if job.draw is None:  # the whole corpus: the same check as ``textcluster run``
            check_k(k, rep)
        labeled, y = labelled_documents(truth, job)
        graph = _corpus_graph(rep.corpus, rows, job)
    model = make_model(job.model, n_components=k, random_state=job.seed, **job.params)
    fit_args = {} if graph is None else {"graph": graph}
    with timer.stage("fit"):
        model.fit(X, y, **fit_args)
    with timer.stage("evaluate"):
        metrics = {**score(truth, model.labels_, y), **chosen_settings(model)}
    result = {"k": k, "labeled": labeled, "metrics": metrics,
              "objective": objective(model, job.record_history)}
    if job.keep_clusters:
        result["clusters"] = clusters_csv(np.asarray(rep.corpus.ids)[rows], model.labels_)
    return result


def clusters_csv(ids, labels):
    """The ``doc_id,cluster`` CSV text of one job's clustering."""
    frame = pd.DataFrame({"doc_id": ids, "cluster": np.asarray(labels, dtype=int)})
    return frame.to_csv(index=False)


def representation(job):
    """The represented corpus (tf-idf of the whole selection) of ``job``, cached in this
    process for the next jobs on the same corpus."""
    selection = job.selection
    cache_key = json.dumps([job.corpus, selection["select"], selection["preprocess"],
                            job.data_dir], sort_keys=True)
    if cache_key in _representations:
        _representations.move_to_end(cache_key)
        return _representations[cache_key]
    corpus = load_corpus(job.corpus, data_dir=job.data_dir, **selection["select"])
    rep = represent(corpus, **selection["preprocess"])
    _representations[cache_key] = rep
    while len(_representations) > CACHE_SIZE:
        _representations.popitem(last=False)
    return rep


def clear_cache():
    _representations.clear()


def select_documents(corpus, job):
    """Row indices of the job's documents: the draw's classes, or every document."""
    if job.draw is None:
        return np.arange(corpus.n_docs)
    return class_subset(corpus.labels, job.k, job.selection["draw_seed"])


def labelled_documents(truth, job):
    """``(ledger record, y)``: which documents' labels the model sees (``y``, -1 elsewhere), or
    ``(None, None)`` without labels. The choice depends on the draw and the seed only, so
    every model of a draw sees the same labels."""
    if job.labeled is None:
        return None, None
    seed = [job.selection["draw_seed"] or 0, job.seed]
    y = labeled_subset(truth, fraction=job.labeled.get("fraction"),
                       per_class=job.labeled.get("per_class"),
                       random_state=np.random.default_rng(seed))
    return {**job.labeled, "n_labeled": int((y >= 0).sum()), "seed": seed}, y


def score(truth, predicted, y=None):
    """The metrics of a clustering; with ``y``, also on the unlabelled documents only
    (suffix ``_unlabeled``). Without class labels only the sizes."""
    metrics = {"n_docs": int(len(predicted)), "n_clusters": int(len(np.unique(predicted)))}
    if truth is None:
        return metrics
    metrics["n_classes"] = int(len(np.unique(truth)))
    if y is None:
        return {**metrics, **evaluate(truth, predicted)}
    split = evaluate_split(truth, predicted, y)
    metrics.update(split["all"], n_docs_unlabeled=int((np.asarray(y) == -1).sum()))
    if split["unlabelled"] is not None:
        metrics.update({f"{name}_unlabeled": v for name, v in split["unlabelled"].items()})
    return metrics


def objective(model, history):
    """The objective per iteration (``history``) or just the final one; [] when the model
    records none."""
    values = getattr(model, "objective_history_", None)
    if values is None:
        inertia = getattr(getattr(model, "kmeans_", None), "inertia_", None)
        values = [] if inertia is None else [inertia]
    values = [float(v) for v in values]
    return values if history else values[-1:]


def _n_classes(truth, job):
    if truth is None:
        raise InvalidInputError(
            f"corpus {job.corpus!r} has no class labels, so k = \"classes\" cannot be used; "
            "give the number of clusters (protocol.k)"
        )
    return int(len(np.unique(truth)))


def _corpus_graph(corpus, rows, job):
    choice = job.selection["graph"]
    if choice == "knn":
        return None
    if corpus.graph is None or corpus.metadata.get("graph") != choice:
        has = ("no document graph" if corpus.graph is None
               else f"only the graph {corpus.metadata.get('graph')!r}")
        raise InvalidInputError(f"graph = {choice!r}: corpus {job.corpus!r} has {has}; "
                                "use graph = \"knn\" (the default)")
    return corpus.graph[rows][:, rows]


def describe_error(exc):
    """A one-line message for errors the user can act on (and system errors such as a full
    disk), else the traceback's last lines."""
    if isinstance(exc, TextclusterError):
        return f"{type(exc).__name__}: {exc}"
    if isinstance(exc, OSError) and exc.strerror:
        return f"{type(exc).__name__}: {exc.strerror}" + (f": {exc.filename}" if exc.filename
                                                           else "")
    lines = traceback.format_exception(type(exc), exc, exc.__traceback__)
    return "".join(lines[-4:]).strip()


def _warning_text(caught):
    messages = list(dict.fromkeys(f"{w.category.__name__}: {w.message}" for w in caught))
    return "\n".join(messages) or None


@lru_cache(maxsize=1)
def versions():
    import scipy
    import sklearn

    return {"textcluster": __version__, "python": platform.python_version(),
            "numpy": np.__version__, "scipy": scipy.__version__,
            "scikit-learn": sklearn.__version__}


# -- a batch (runs in the parent) ------------------------------------------------------------
@dataclass
class BatchSummary:
    """What a batch run did."""

    ledger: object
    total: int
    skipped: int = 0  # done in an earlier run (counted as the jobs are listed)
    done: int = 0
    failed: list = field(default_factory=list)  # (job, error) of this run
    retried: list = field(default_factory=list)  # (job, error): attempts whose worker died
    report: object = None  # the report's folder, when one was written
    report_error: str | None = None


def run_batch(pipeline, executor=None, progress=None, report=True):
    """Run the jobs of ``pipeline`` that are not done yet and record each in its ledger.

    The jobs are made as they are submitted, so the first starts at once however large the
    grid. ``executor``: from :func:`textcluster.batch.executors.make_executor` (default: this
    process). ``progress(summary)`` is called after every job. Raises
    :class:`~textcluster.batch.ledger.LedgerBusyError` when another run holds the ledger,
    :class:`~textcluster.batch.ledger.LedgerDamagedError` when it is damaged, and
    :class:`ResultNotSavedError` when a result cannot be written (the batch stops there).
    """
    executor = executor or SerialExecutor()
    summary = BatchSummary(pipeline.ledger_path, count_jobs(pipeline))
    with Ledger.open(pipeline.ledger_path) as ledger:
        ledger.write_meta(pipeline=pipeline.text, pipeline_file=pipeline.source,
                          overrides=list(pipeline.overrides), textcluster_version=__version__,
                          updated=time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                          jobs=None)  # the keys are written once every job has been listed
        keys = []
        todo = _not_done(iter_jobs(pipeline), ledger.statuses(), keys, summary)
        first = next(todo, None)
        if progress:
            progress(summary)
        if first is not None:
            _run_jobs(itertools.chain([first], todo), executor, ledger, summary, progress,
                      pipeline.clusters_dir)
        ledger.write_meta(jobs=keys)
    if report and summary.done + summary.skipped > 0:  # a report needs a finished job
        try:
            summary.report = write_report(pipeline)
        except Exception as exc:  # noqa: BLE001 - the results are safe in the ledger
            summary.report_error = describe_error(exc)
    return summary


def _not_done(jobs, statuses, keys, summary):
    """The jobs whose status is not done; every key goes to ``keys``."""
    for job in jobs:
        keys.append(job.key)
        if statuses.get(job.key) == "done":
            summary.skipped += 1
        else:
            yield job


def _run_jobs(jobs, executor, ledger, summary, progress, clusters_dir):
    died = {}  # key -> the attempts of a job whose worker died
    try:
        with executor:
            for job, outcome in executor.run(run_job, jobs):
                fault_point("result")  # fault-injection tests only
                if isinstance(outcome, WorkerDiedError) and outcome.retry:
                    # A failed attempt: replaced by the job's result when it is run again.
                    died.setdefault(job.key, []).append(str(outcome))
                    summary.retried.append((job, str(outcome)))
                    _save(ledger, clusters_dir, job, _failure(outcome))
                    continue
                result = outcome if isinstance(outcome, dict) else _failure(outcome)
                notes = died.pop(job.key, [])
                if notes and result["status"] == "done":
                    result["error"] = "\n".join(notes + [result["error"] or ""]).strip()
                _save(ledger, clusters_dir, job, result)
                _count(summary, job, result)
                if progress:
                    progress(summary)
    finally:
        clear_cache()


def _save(ledger, folder, job, result):
    """Write a job's clusters, then its ledger row (so a recorded job always has them);
    raises :class:`ResultNotSavedError` when either cannot be written."""
    text = result.pop("clusters", None)
    advice = ("The batch stopped; every result saved before it is kept. Fix the cause (e.g. "
              "free some disk space) and run the same command again to go on")
    try:
        if text is not None:
            fault_point("clusters-write")  # fault-injection tests only
            Path(folder).mkdir(parents=True, exist_ok=True)
            _atomic_write(Path(folder) / f"{job.key}.csv", text)
        ledger.record(job, result)
    except OSError as exc:
        raise ResultNotSavedError(
            f"the clusters of the job {describe_job(job)} could not be written to {folder}: "
            f"{exc.strerror or exc}. {advice}"
        ) from exc
    except LedgerError as exc:
        raise ResultNotSavedError(f"the result of the job {describe_job(job)} could not be "
                                  f"saved: {exc}. {advice}") from exc


def _failure(exc):
    return {"status": "failed", "error": describe_error(exc), "finished": time.time(),
            "versions": versions()}


def _count(summary, job, result):
    if result["status"] == "done":
        summary.done += 1
    else:
        summary.failed.append((job, result["error"]))


def write_report(pipeline):
    """Call ``textcluster.report.writer.write_report(ledger, <output>/report)`` when it exists."""
    if importlib.util.find_spec("textcluster.report.writer") is None:
        return None
    writer = getattr(importlib.import_module("textcluster.report.writer"), "write_report", None)
    if writer is None:
        return None
    folder = pipeline.output / "report"
    fault_point("report")  # fault-injection tests only
    writer(pipeline.ledger_path, folder)
    return folder

"""Running jobs (in a worker) and batches (in the parent, which alone writes the ledger).

A job is fitted and scored by :func:`textcluster.pipeline.run_job`, the one run path it shares
with ``textcluster run``; here it is wrapped so that a failing job is recorded, not raised, and
its warnings, timings, host and versions go with its result to the ledger.
"""

import itertools
import socket
import time
import traceback
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from .. import __version__
from .._errors import TextclusterError
from ..pipeline import RepresentationCache, Timer, run_job
from ..pipeline.export import atomic_write, versions
from .executors import SerialExecutor, WorkerDiedError, describe_job
from .faults import fault_point
from .ledger import Ledger, LedgerError
from .spec import count_jobs, iter_jobs

# Represented corpora a worker process keeps for its next jobs (one per process).
WORKER_REPRESENTATIONS = RepresentationCache(size=2)


class ResultNotSavedError(TextclusterError):
    """A finished job's result could not be written (full disk, I/O error): the batch stops,
    and the results saved before it are kept."""


# -- one job (runs in a worker) --------------------------------------------------------------
def run_recorded(job):
    """Run one job; returns its result as a dict for the ledger (status ``done`` or ``failed``
    with the error) and never raises for a failing job."""
    fault_point("job")  # fault-injection tests only
    started, timer = time.time(), Timer()
    result = {"status": "done", "error": None}
    timings = {}
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with timer.stage("total"):
                done = run_job(job, representations=WORKER_REPRESENTATIONS)
        timings = done.timings
        result.update(k=done.k, labeled=done.labeled, metrics=done.metrics,
                      objective=done.objective(history=job.record_history))
        if job.keep_clusters:
            result["clusters"] = clusters_csv(np.asarray(done.corpus.ids), done.labels)
        result["error"] = _warning_text(caught)
    except Exception as exc:  # noqa: BLE001 - every failure is recorded, none stops the batch
        result.update(status="failed", error=describe_error(exc))
    result.update(timings={**timings, **timer.seconds}, started=started, finished=time.time(),
                  host=socket.gethostname(), versions=versions())
    return result


def clusters_csv(ids, labels):
    """The ``doc_id,cluster`` CSV text of one job's clustering."""
    frame = pd.DataFrame({"doc_id": ids, "cluster": np.asarray(labels, dtype=int)})
    return frame.to_csv(index=False)


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


def run_batch(pipeline, executor=None, progress=None, report=None):
    """Run the jobs of ``pipeline`` that are not done yet and record each in its ledger.

    The jobs are made as they are submitted, so the first starts at once however large the
    grid. ``executor``: from :func:`textcluster.batch.executors.make_executor` (default: this
    process). ``progress(summary)`` is called after every job. ``report(ledger_path, folder)``,
    when given (e.g. :func:`textcluster.report.write_report`), writes the report into
    ``<output>/report`` once a job is done; its failure is kept in ``report_error``. Raises
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
            folder = pipeline.output / "report"
            fault_point("report")  # fault-injection tests only
            report(pipeline.ledger_path, folder)
            summary.report = folder
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
            for job, outcome in executor.run(run_recorded, jobs):
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
        WORKER_REPRESENTATIONS.clear()


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
            atomic_write(Path(folder) / f"{job.key}.csv", text)
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

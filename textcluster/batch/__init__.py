"""Declarative, resumable batches: pipeline files → jobs → executor → ledger → report.

>>> from textcluster.batch import load_pipeline, run_batch, load_results
>>> pipeline = load_pipeline("pipelines/smoke.toml", overrides=["protocol.draws=1"])
>>> summary = run_batch(pipeline)                        # doctest: +SKIP
>>> load_results(pipeline.ledger_path)                   # doctest: +SKIP

See :mod:`textcluster.batch.spec` for the pipeline file format and
:mod:`textcluster.batch.ledger` for the ledger's tables, its checks and its repair.
"""

from .executors import WorkerDiedError, make_executor
from .ledger import (
    LedgerBusyError,
    LedgerDamagedError,
    LedgerError,
    check_ledger,
    load_results,
    repair_ledger,
)
from .runner import ResultNotSavedError, run_batch, run_recorded
from .spec import Job, Pipeline, count_jobs, expand, iter_jobs, load_pipeline

__all__ = ["Job", "LedgerBusyError", "LedgerDamagedError", "LedgerError", "Pipeline",
           "ResultNotSavedError", "WorkerDiedError", "check_ledger", "count_jobs", "expand",
           "iter_jobs", "load_pipeline", "load_results", "make_executor", "repair_ledger",
           "run_batch", "run_recorded"]

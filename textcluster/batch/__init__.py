"""Declarative, resumable batches: pipeline files → jobs → executor → ledger → report.

>>> from textcluster.batch import load_pipeline, run_batch, load_results
>>> pipeline = load_pipeline("pipelines/smoke.toml", overrides=["protocol.draws=1"])
>>> summary = run_batch(pipeline)                        # doctest: +SKIP
>>> load_results(pipeline.ledger_path)                   # doctest: +SKIP

See :mod:`textcluster.batch.spec` for the pipeline file format and
:mod:`textcluster.batch.ledger` for the ledger's tables.
"""

from .executors import make_executor
from .ledger import LedgerBusyError, load_results
from .runner import run_batch, run_job
from .spec import Job, Pipeline, expand, load_pipeline

__all__ = ["Job", "LedgerBusyError", "Pipeline", "expand", "load_pipeline", "load_results",
           "make_executor", "run_batch", "run_job"]

"""The finished jobs a report is made of: read from a ledger, restricted to the pipeline's
latest run, ordered as the pipeline file names them and grouped into sections (one protocol
on one corpus).

The ledger is read with :func:`textcluster.batch.ledger.load_results` (one row per job, JSON
decoded, a ``method`` column), only ever read-only, so a report can be written while a batch
still runs.
"""

import json
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pandas as pd

from .._errors import DataNotFoundError, InvalidInputError
from ..batch.ledger import LEDGER_NAME, load_results, read_meta

__all__ = ["LedgerSnapshot", "Section", "load_results", "method_order", "read_ledger",
           "resolve_baseline", "resolve_ledger", "restrict_to_pipeline", "sections"]

PROTOCOL_ORDER = ("class-subset", "full", "sweep", "ablation", "convergence")


@dataclass
class LedgerSnapshot:
    """The jobs of a ledger (:func:`load_results`) and its ``meta`` table, as read once."""

    path: Path
    jobs: pd.DataFrame
    meta: dict
    stale: int = 0  # jobs left out: not in the pipeline's latest expansion
    pending: int = 0  # jobs of the latest expansion not in the ledger yet


def resolve_ledger(path: str | Path) -> Path:
    """The ledger file: ``path`` itself, or ``path/ledger.sqlite`` when ``path`` is a folder."""
    path = Path(path)
    candidate = path / LEDGER_NAME if path.is_dir() else path
    if not candidate.is_file():
        where = (f"the folder {path} has no {LEDGER_NAME}" if path.is_dir()
                 else f"{path} does not exist")
        raise DataNotFoundError(
            f"no ledger to report on: {where}; pass the output folder of a batch run "
            f"(textcluster batch PIPELINE) or its {LEDGER_NAME}"
        )
    return candidate


def read_ledger(path: str | Path) -> LedgerSnapshot:
    """The jobs and the meta table of the ledger at ``path`` (the file or its folder)."""
    path = resolve_ledger(path)
    return LedgerSnapshot(path, load_results(path), read_meta(path))


def json_meta(meta: dict, key: str) -> Any:
    """The JSON value of a meta entry, or None when it is missing or not JSON."""
    try:
        return json.loads(meta.get(key) or "null")
    except json.JSONDecodeError:
        return None


def restrict_to_pipeline(ledger: LedgerSnapshot) -> LedgerSnapshot:
    """The ledger's jobs that the latest expansion of its pipeline lists (meta ``jobs``), with
    the counts of the others (``stale``) and of listed jobs not in the ledger (``pending``)."""
    keys = json_meta(ledger.meta, "jobs")
    if not isinstance(keys, list):
        return ledger
    listed = ledger.jobs["key"].isin(set(keys))
    pending = len(set(keys) - set(ledger.jobs["key"]))
    return replace(ledger, jobs=ledger.jobs[listed], stale=int((~listed).sum()),
                   pending=pending)


def finished_jobs(ledger: LedgerSnapshot) -> pd.DataFrame:
    """The done jobs; :class:`InvalidInputError` when there are none, saying why."""
    jobs = ledger.jobs
    if jobs.empty:
        older = (f" of its pipeline's latest run ({ledger.stale} from earlier settings)"
                 if ledger.stale else " yet")
        raise InvalidInputError(
            f"{ledger.path} holds no jobs{older}; run the batch (textcluster batch PIPELINE) "
            f"first"
        )
    done = jobs[jobs["status"] == "done"]
    if done.empty:
        failed = jobs[jobs["status"] == "failed"]
        detail = (f"; the first error: {first_line(failed['error'].iloc[0])}"
                  if len(failed) else "")
        raise InvalidInputError(
            f"{ledger.path} has no finished job ({len(jobs)} jobs, {len(failed)} failed"
            f"{detail}); fix the cause and re-run the batch, which retries failed jobs"
        )
    return done


def is_missing(value: object) -> bool:
    """None, NaN or pandas' NA (a list or dict is a value)."""
    if value is None or isinstance(value, (list, dict, str)):
        return value is None
    return bool(pd.isna(value))


def first_line(error: object, limit: int = 300) -> str:
    """The line of a recorded error that says what went wrong (a traceback's last)."""
    text = "" if is_missing(error) else str(error).strip()
    line = text.splitlines()[-1] if text else "no error recorded"
    return line if len(line) <= limit else line[: limit - 1] + "…"


# -- order and baseline --------------------------------------------------------------------------


def method_order(jobs: pd.DataFrame, pipeline_text: str = "") -> list[str]:
    """Methods in the order the pipeline file names their models (and named variants), then
    by variant label with numbers in numeric order (``lam=2`` before ``lam=10``)."""
    methods = list(dict.fromkeys(jobs["method"]))
    models = dict(zip(jobs["method"], jobs["model"]))

    def position(method):
        variant = method.split(":", 1)[1] if ":" in method else ""
        named = variant.split(",")[0] if variant and "=" not in variant.split(",")[0] else ""
        return (name_position(pipeline_text, models[method], quoted=True),
                name_position(pipeline_text, named, quoted=False) if named else -1,
                _natural_key(variant))

    return sorted(methods, key=position)


def name_position(text: str, name: object, quoted: bool) -> float:
    """Where ``name`` first appears in the pipeline text as a quoted string (a model name) or
    as a key (``name =``, a variant); infinity when it does not."""
    pattern = (r"[\"']" + re.escape(str(name)) + r"[\"']" if quoted
               else r"(?<![\w-])[\"']?" + re.escape(str(name)) + r"[\"']?\s*=")
    match = re.search(pattern, text or "")
    return match.start() if match else math.inf


def _natural_key(label):
    """Sort key of a variant label: numbers compare as numbers."""
    parts = re.split(r"([-+]?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)", label)
    return tuple((0, float(p), "") if i % 2 else (1, 0.0, p) for i, p in enumerate(parts) if p)


def resolve_baseline(methods: list[str], models: dict, requested: str | None = None
                     ) -> str | None:
    """The baseline among ``methods``: ``requested`` (a method or a model name), else 'nmf'
    if present, else the first method. None when ``requested`` is not among them."""
    if requested:
        if requested in methods:
            return requested
        of_model = [m for m in methods if models.get(m) == requested]
        return of_model[0] if len(of_model) == 1 else None
    return "nmf" if "nmf" in methods else methods[0]


def check_baseline(baseline: str | None, done: pd.DataFrame, methods: list[str]) -> None:
    """:class:`InvalidInputError` when ``--baseline`` names no finished job's method or
    model."""
    if baseline is None:
        return
    if baseline not in set(done["method"]) and baseline not in set(done["model"]):
        known = ", ".join(methods)
        raise InvalidInputError(
            f"--baseline {baseline!r} is not among the finished jobs' models; choose one of "
            f"{known}"
        )


# -- sections ------------------------------------------------------------------------------------


@dataclass
class Section:
    """The finished jobs of one protocol on one corpus."""

    protocol: str
    corpus: str
    rows: pd.DataFrame
    methods: list
    baseline: str | None
    baseline_note: str = ""

    @property
    def title(self) -> str:
        return f"{self.corpus} — {self.protocol}"

    @property
    def slug(self) -> str:
        return slug(f"{self.corpus}-{self.protocol}")


def slug(text: object) -> str:
    """``text`` as a file name: runs of other characters than letters and digits become
    ``-``."""
    return re.sub(r"[^A-Za-z0-9]+", "-", str(text)).strip("-").lower() or "x"


def sections(done: pd.DataFrame, methods: list[str], baseline: str | None,
             pipeline_text: str = "") -> Iterator[Section]:
    """One :class:`Section` per protocol (in PROTOCOL_ORDER) and corpus (in pipeline order)."""
    protocols = sorted(done["protocol"].fillna("full").unique(),
                       key=lambda p: (PROTOCOL_ORDER.index(p) if p in PROTOCOL_ORDER
                                      else len(PROTOCOL_ORDER), p))
    models = dict(zip(done["method"], done["model"]))
    for protocol in protocols:
        of_protocol = done[done["protocol"].fillna("full") == protocol]
        corpora = sorted(dict.fromkeys(of_protocol["corpus"]),
                         key=lambda c: name_position(pipeline_text, c, quoted=True))
        for corpus in corpora:
            rows = of_protocol[of_protocol["corpus"] == corpus]
            present = [m for m in methods if m in set(rows["method"])]
            chosen = resolve_baseline(present, models, baseline)
            if chosen is None and protocol == "ablation":  # compare with the first variant
                chosen = resolve_baseline(present, models)
            note = ""
            if len(present) < 2:
                chosen, note = None, "One method only: no significance tests."
            elif chosen is None:
                note = f"The baseline {baseline} has no runs here: no significance tests."
            yield Section(protocol, str(corpus), rows, present, chosen, note)

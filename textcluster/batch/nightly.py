"""Nightly clustering of a growing corpus: one dated output folder per night, cluster ids kept
from night to night.

A nightly file (``pipelines/nightly.toml``) names a corpus that grows (a table or a folder of
``.txt`` files), a model, ``k``, a seed, the output folder and the mode:

* ``refit``: every night the model is fitted again on all documents, its clusters renumbered to
  match the previous night's (:mod:`textcluster.pipeline.align`: ``changes.csv``, ``moved.csv``),
  and its bundle saved (``model/``);
* ``assign``: the first night fits and saves the model; the next nights place every document
  with that bundle (:mod:`textcluster.pipeline.bundle`), so ids never change.

Night ``D`` is written to ``<output>/D/`` through a temporary folder renamed at the end: a night
is there whole or not at all, and a night already there is not run again (``force`` runs it
again), so a scheduler may retry freely. ``night.json`` records what the night did.
"""

from __future__ import annotations

import datetime
import json
import os
import shutil
import tomllib
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .._errors import InvalidInputError
from ..models import MODELS
from ..pipeline import load_corpus, run_job
from ..pipeline.align import align_result, read_previous, write_alignment
from ..pipeline.bundle import load_model, save_model, write_assignment
from ..pipeline.export import atomic_write, replace_folder, write_run
from .spec import one_job

MODES = ("refit", "assign")
KEYS = ("corpus", "model", "k", "seed", "mode", "output", "settings", "data_dir")
NIGHT_FILE = "night.json"
MODEL_DIR = "model"


@dataclass(frozen=True)
class Nightly:
    """A validated nightly file."""

    corpus: str
    model: str = "gnmf"
    k: int | None = None
    seed: int = 0
    mode: str = "refit"
    output: Path = Path("runs/nightly")
    settings: dict = field(default_factory=dict)
    data_dir: str | None = None
    source: str = ""


@dataclass
class Night:
    """What one night did."""

    date: str
    folder: Path
    skipped: bool  # already done before
    record: dict


def load_nightly(path: str | os.PathLike, data_dir: str | None = None) -> Nightly:
    """Read and check the ``[nightly]`` table of ``path``."""
    where = str(path)
    try:
        table = tomllib.loads(Path(path).read_text(encoding="utf-8")).get("nightly")
    except FileNotFoundError:
        raise InvalidInputError(f"nightly file {where} does not exist") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise InvalidInputError(f"{where} is not valid TOML: {exc}") from None
    if not isinstance(table, dict) or not isinstance(table.get("corpus"), str):
        raise InvalidInputError(f"{where}: needs a [nightly] table with corpus = \"PATH\"")
    unknown = sorted(set(table) - set(KEYS))
    if unknown:
        raise InvalidInputError(f"{where}: unknown key {unknown[0]!r} in [nightly]; the keys "
                                f"are: {', '.join(KEYS)}")
    if table.get("mode", "refit") not in MODES:
        raise InvalidInputError(f"{where}: mode must be one of {', '.join(MODES)}, got "
                                f"{table.get('mode')!r}")
    if not isinstance(table.get("settings", {}), dict):
        raise InvalidInputError(f"{where}: [nightly.settings] must be a table of name = value")
    MODELS.get(table.get("model", "gnmf"), suggest=True)
    nightly = Nightly(**{**table, "output": Path(table.get("output", "runs/nightly")),
                         "data_dir": data_dir or table.get("data_dir"), "source": where})
    one_job(nightly.corpus, nightly.model, k=nightly.k, seed=nightly.seed,
            settings=nightly.settings, data_dir=nightly.data_dir)  # checks names and values
    return nightly


def run_night(nightly: Nightly, date: datetime.date | str | None = None,
              force: bool = False) -> Night:
    """Run (or find done) the night ``date`` (default today) of ``nightly``."""
    day = _date(date)
    folder = nightly.output / day
    if (folder / NIGHT_FILE).is_file() and not force:
        record = json.loads((folder / NIGHT_FILE).read_text(encoding="utf-8"))
        return Night(day, folder, True, record)
    previous = _previous_night(nightly.output, day)
    nightly.output.mkdir(parents=True, exist_ok=True)
    tmp = nightly.output / f".{day}.{uuid.uuid4().hex}.tmp"
    try:
        record = _fill(nightly, day, previous, tmp)
        atomic_write(tmp / NIGHT_FILE, json.dumps(record, indent=2) + "\n")
        replace_folder(tmp, folder)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return Night(day, folder, False, record)


def _fill(nightly: Nightly, day: str, previous: Path | None, out: Path) -> dict[str, Any]:
    """Write the night's outputs into ``out``; returns its record."""
    record: dict[str, Any] = {"date": day, "mode": nightly.mode, "corpus": nightly.corpus,
                              "model": nightly.model,
                              "previous": None if previous is None else previous.name}
    bundle_dir = None if previous is None else _bundle_of(previous)
    job = one_job(nightly.corpus, nightly.model, k=nightly.k, seed=nightly.seed,
                  settings=nightly.settings, data_dir=nightly.data_dir)
    if nightly.mode == "assign" and bundle_dir is not None:
        corpus = load_corpus(nightly.corpus, data_dir=nightly.data_dir,
                             **job.selection["select"])
        bundle = load_model(bundle_dir)
        assigned = bundle.assign(corpus)
        write_assignment(assigned, bundle, out, source=nightly.corpus)
        ids = assigned.corpus.ids
        record.update(bundle=str(bundle_dir), n_docs=len(ids))
    else:
        result = run_job(job)
        if previous is not None:
            alignment = align_result(result, previous)
            write_alignment(alignment, out)
            record["alignment"] = alignment.summary
        write_run(result, out)
        save_model(result, out / MODEL_DIR)
        ids = result.corpus.ids
        record.update(bundle=str(nightly.output / day / MODEL_DIR), n_docs=len(ids),
                      metrics=result.metrics)
    if previous is not None:
        before = read_previous(previous).ids
        record["new_documents"] = int((~np.isin(ids.astype(str), before)).sum())
    return record


def _bundle_of(night: Path) -> Path:
    """The bundle the night ``night`` used or saved."""
    record = json.loads((night / NIGHT_FILE).read_text(encoding="utf-8"))
    return Path(record["bundle"])


def _previous_night(output: Path, day: str) -> Path | None:
    """The latest finished night before ``day``."""
    if not output.is_dir():
        return None
    nights = sorted(p for p in output.iterdir()
                    if p.is_dir() and _is_date(p.name) and p.name < day
                    and (p / NIGHT_FILE).is_file())
    return nights[-1] if nights else None


def _date(date: datetime.date | str | None) -> str:
    if date is None:
        return datetime.date.today().isoformat()
    if isinstance(date, datetime.date):
        return date.isoformat()
    if not _is_date(date):
        raise InvalidInputError(f"--date {date!r} is not a date like 2026-11-24")
    return date


def _is_date(text: str) -> bool:
    try:
        datetime.date.fromisoformat(text)
    except ValueError:
        return False
    return len(text) == 10

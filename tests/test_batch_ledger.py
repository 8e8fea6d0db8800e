"""The ledger: its schema (the report's contract), results, locking and reading."""

import json
import os
import sqlite3
import subprocess
import sys
import time

import numpy as np
import pytest

from textcluster._errors import DataNotFoundError, TextclusterError
from textcluster.batch.ledger import (
    COLUMNS,
    Ledger,
    LedgerBusyError,
    load_results,
    read_meta,
    read_statuses,
)
from textcluster.batch.spec import Job

SCHEMA = [("key", "TEXT"), ("pipeline", "TEXT"), ("corpus", "TEXT"), ("selection", "TEXT"),
          ("model", "TEXT"), ("variant", "TEXT"), ("params", "TEXT"), ("k", "INTEGER"),
          ("draw", "INTEGER"), ("seed", "INTEGER"), ("protocol", "TEXT"), ("labeled", "TEXT"),
          ("status", "TEXT"), ("metrics", "TEXT"), ("objective", "TEXT"), ("timings", "TEXT"),
          ("error", "TEXT"), ("started", "REAL"), ("finished", "REAL"), ("host", "TEXT"),
          ("versions", "TEXT")]


def job(draw=0, model="nmf", k=2):
    selection = {"select": {}, "preprocess": {}, "graph": "knn", "draw_seed": 1000 * k + draw}
    return Job("p", "tdt2", selection, model, "", {"max_iter": 5}, k, draw, 0, "class-subset",
               None)


def done(nmi=0.5):
    return {"status": "done", "k": 2, "metrics": {"nmi": nmi, "purity": 0.9, "n_docs": 40},
            "objective": [3.0, 2.0, 1.5], "timings": {"fit": 0.1, "total": 0.2}, "error": None,
            "started": 1.0, "finished": 2.0, "host": "h", "versions": {"numpy": "2"}}


def test_the_jobs_table_has_the_agreed_schema(tmp_path):
    with Ledger.open(tmp_path / "ledger.sqlite"):
        pass
    conn = sqlite3.connect(tmp_path / "ledger.sqlite")
    assert [(r[1], r[2]) for r in conn.execute("PRAGMA table_info(jobs)")] == SCHEMA
    assert [r[5] for r in conn.execute("PRAGMA table_info(jobs)")][0] == 1  # primary key
    assert [r[1] for r in conn.execute("PRAGMA table_info(meta)")] == ["key", "value"]
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert tuple(name for name, _ in SCHEMA) == COLUMNS


def test_results_expand_params_and_metrics_to_columns(tmp_path):
    path = tmp_path / "ledger.sqlite"
    with Ledger.open(path) as ledger:
        ledger.write_meta(pipeline="# text", jobs=["a"])
        ledger.record(job(1), done(0.25))
        ledger.record(job(0), done(0.75))
        ledger.record(job(0, model="kmeans"), {"status": "failed", "error": "boom"})
    frame = load_results(tmp_path)  # the output folder works as well as the file
    assert list(frame["model"]) == ["kmeans", "nmf", "nmf"]
    assert list(frame["draw"]) == [0, 0, 1]
    assert frame.loc[1, "metric.nmi"] == 0.75 and frame.loc[2, "metric.nmi"] == 0.25
    assert list(frame["param.max_iter"]) == [5, 5, 5]
    assert frame.loc[1, "objective"] == [3.0, 2.0, 1.5]
    assert frame.loc[1, "time.fit"] == 0.1
    assert frame.loc[0, "status"] == "failed" and frame.loc[0, "error"] == "boom"
    assert frame.loc[1, "selection"]["draw_seed"] == 2000
    meta = read_meta(path)
    assert meta["pipeline"] == "# text" and json.loads(meta["jobs"]) == ["a"]
    assert "created" in meta


def test_a_retried_job_replaces_its_failed_row(tmp_path):
    path = tmp_path / "ledger.sqlite"
    with Ledger.open(path) as ledger:
        ledger.record(job(), {"status": "failed", "error": "boom"})
        ledger.record(job(), done())
    assert read_statuses(path) == {job().key: "done"}
    assert len(load_results(path)) == 1


def test_a_second_run_is_refused_while_the_first_holds_the_ledger(tmp_path):
    path = tmp_path / "ledger.sqlite"
    with Ledger.open(path):
        with pytest.raises(LedgerBusyError, match=rf"in use by another batch run \(pid "
                                                  rf"{os.getpid()} on"):
            Ledger.open(path)
    with Ledger.open(path):  # released on close
        pass


def test_the_lock_of_a_killed_run_is_taken_over(tmp_path):
    path = tmp_path / "ledger.sqlite"
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sys, time; from textcluster.batch.ledger import Ledger; "
         "Ledger.open(sys.argv[1]); print('locked', flush=True); time.sleep(60)", str(path)],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(LedgerBusyError, match=f"pid {holder.pid} "):
            Ledger.open(path)
    finally:
        holder.kill()
        holder.wait()
    assert str(holder.pid) in (tmp_path / "ledger.sqlite.lock").read_text()  # stale lock left
    deadline = time.monotonic() + 10
    while True:
        try:
            with Ledger.open(path) as ledger:
                ledger.record(job(), done())
            break
        except LedgerBusyError:  # the system may take a moment to release a dead pid's lock
            assert time.monotonic() < deadline
            time.sleep(0.1)
    assert read_statuses(path) == {job().key: "done"}


def test_a_foreign_database_is_not_taken_for_a_ledger(tmp_path):
    path = tmp_path / "ledger.sqlite"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE jobs (id INTEGER, name TEXT)")
    conn.commit()
    conn.close()
    with pytest.raises(TextclusterError, match="not a textcluster ledger"):
        Ledger.open(path)


def test_reading_a_missing_ledger_says_how_to_make_one(tmp_path):
    with pytest.raises(DataNotFoundError, match="textcluster batch PIPELINE"):
        load_results(tmp_path / "nothing")
    assert read_statuses(tmp_path / "nothing.sqlite") == {}


# -- damage --------------------------------------------------------------------------------------
def write_ledger(path, n=300):
    """A ledger of ``n`` done jobs (every 10th with a long objective, on overflow pages);
    returns ``{key: row}`` as read back."""
    with Ledger.open(path) as ledger:
        ledger.write_meta(pipeline="# text")
        for i in range(n):
            result = done(nmi=i / n)
            if i % 10 == 0:
                result["objective"] = [1.0 / (t + 1) for t in range(400)]
            ledger.record(job(draw=i, model=("nmf", "kmeans")[i % 2]), result)
    return rows_of(path)


def rows_of(path):
    conn = sqlite3.connect(path)
    try:
        return {row[0]: row for row in conn.execute(f"SELECT {', '.join(COLUMNS)} FROM jobs")}
    finally:
        conn.close()


def flip_bytes(path, n_pages=3, seed=0):
    """Flip a few bytes in each of ``n_pages`` random pages after the first."""
    data = bytearray(path.read_bytes())
    rng = np.random.default_rng(seed)
    pages = rng.choice(np.arange(1, len(data) // 4096), n_pages, replace=False)
    for page in pages:
        for offset in rng.integers(page * 4096 + 100, (page + 1) * 4096, 12):
            data[offset] ^= 0xFF
    path.write_bytes(bytes(data))


def _truncate(path):
    size = path.stat().st_size
    with open(path, "r+b") as handle:
        handle.truncate(size * 6 // 10)


def _garbage(path):
    path.write_bytes(np.random.default_rng(1).bytes(path.stat().st_size))


def _text(path):
    path.write_text("not a database\n" * 100)


def _folder(path):
    path.unlink()
    path.mkdir()


def _other_schema(path):
    path.unlink()
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE users (id INTEGER, name TEXT)")
    conn.commit()
    conn.close()


DAMAGES = {
    "truncated": (_truncate, "damaged"),
    "garbage": (_garbage, "damaged or is not a textcluster ledger"),
    "text": (_text, "damaged or is not a textcluster ledger"),
    "flipped": (flip_bytes, "damaged"),
    "folder": (_folder, "is a folder, not a ledger file"),
    "other schema": (_other_schema, "not a textcluster ledger"),
}


@pytest.mark.parametrize("damage", DAMAGES)
def test_a_damaged_ledger_is_refused_saying_what_is_wrong_and_recoverable(tmp_path, damage):
    from textcluster.batch.ledger import LedgerError

    path = tmp_path / "ledger.sqlite"
    write_ledger(path, n=200)
    change, message = DAMAGES[damage]
    change(path)
    for use in (Ledger.open, load_results, read_statuses):
        with pytest.raises(LedgerError, match=message) as caught:
            use(path)
        text = str(caught.value)
        assert str(path) in text
        if "damaged" in message:
            assert "results can be read" in text and "textcluster ledger repair" in text
    if damage in ("garbage", "text"):
        assert "0 results can be read" in text


def test_the_batch_command_reports_a_damaged_ledger_without_a_traceback(tmp_path):
    from click.testing import CliRunner

    from textcluster.cli import main

    from ._batch import write_pipeline

    write_ledger(tmp_path / "out" / "ledger.sqlite", n=50)
    flip_bytes(tmp_path / "out" / "ledger.sqlite", n_pages=2)
    pipeline = write_pipeline(tmp_path / "p.toml", output=tmp_path / "out")
    outcome = CliRunner().invoke(main, ["batch", str(pipeline)])
    assert outcome.exit_code == 2 and "Traceback" not in outcome.output
    assert "damaged" in outcome.output and "textcluster ledger repair" in outcome.output


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_repair_salvages_every_intact_result_and_names_the_lost(tmp_path, seed):
    from textcluster.batch.ledger import check_ledger, repair_ledger

    path = tmp_path / "ledger.sqlite"
    reference = write_ledger(path)
    flip_bytes(path, n_pages=3, seed=seed)
    if seed == 2:  # and lose the last tenth of the file
        with open(path, "r+b") as handle:
            handle.truncate(path.stat().st_size * 9 // 10)
    damaged = path.read_bytes()
    repair = repair_ledger(path)
    salvaged = rows_of(path)
    assert salvaged and all(salvaged[key] == reference[key] for key in salvaged)
    assert set(repair.lost_keys) == set(reference) - set(salvaged)  # none dropped silently
    assert repair.salvaged == len(salvaged) and len(salvaged) >= (200 if seed == 2 else 260)
    assert repair.kept.name.startswith("ledger.sqlite.damaged-")
    assert repair.kept.read_bytes() == damaged  # kept aside, never deleted
    assert check_ledger(path).results == len(salvaged)  # intact
    with Ledger.open(path) as ledger:  # the repaired ledger takes new results
        ledger.record(job(draw=999), done())
    assert len(rows_of(path)) == len(salvaged) + 1


def test_repair_leaves_an_intact_ledger_alone(tmp_path):
    from textcluster.batch.ledger import repair_ledger

    path = tmp_path / "ledger.sqlite"
    write_ledger(path, n=20)
    before = path.read_bytes()
    repair = repair_ledger(path)
    assert repair.intact and repair.kept is None and path.read_bytes() == before

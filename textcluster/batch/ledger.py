"""The ledger: one SQLite file per pipeline output folder, one row per job.

Table ``jobs`` (one row per job key; a retried job replaces its failed row)::

    key TEXT PRIMARY KEY   hash of the job's identity (see textcluster.batch.spec.Job)
    pipeline, corpus, model, variant, protocol TEXT
    selection TEXT         JSON: select (loader options), preprocess, graph, draw_seed
    params TEXT            JSON: the model parameters set by the pipeline
    k, draw, seed INTEGER  k: clusters (and classes drawn); draw: NULL on full corpora
    labeled TEXT           JSON {fraction | per_class, n_labeled, seed} or NULL
    status TEXT            'done' | 'failed'
    metrics TEXT           JSON: purity, entropy, nmi, accuracy, rand_index, ari, n_docs, n_classes
                           (+ the same with suffix _unlabeled when labels were given)
    objective TEXT         JSON list: objective per iteration (convergence), else [final]
    timings TEXT           JSON: seconds per stage (represent, select, fit, evaluate, total)
    error TEXT             a failed job's error; a done job's warnings (or NULL)
    started, finished REAL Unix times; host TEXT; versions TEXT (JSON)

Table ``meta`` (key, value): the pipeline file's text, the overrides, the creation time, the
textcluster version, and the keys of the latest expansion. Table ``checksums`` (key, sha256):
a checksum of each ``jobs`` row as stored, written in the row's transaction.

Only the batch's parent process writes, one transaction per finished job, in WAL mode, so a
run killed at any moment (even with SIGKILL) leaves every finished job recorded exactly once.
An exclusive lock on ``ledger.sqlite.lock`` (holding the pid) keeps a second run out; the
operating system drops the lock when its holder dies, so a killed run's lock is taken over.

Every opening, for a batch or a report, checks the file (SQLite's ``PRAGMA integrity_check``
and each row against its checksum). A damaged ledger raises :class:`LedgerDamagedError`,
saying how many results can be read; :func:`repair_ledger` copies every intact result into a
new ledger and keeps the damaged file beside it. The SQLite layer underneath (schema, checksums,
checked connections, salvage) is :mod:`textcluster.batch.ledger_file`.
"""

import json
import os
import shutil
import socket
import sqlite3
import time
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from .._errors import DataNotFoundError
from .faults import fault_point
from .ledger_file import (
    COLUMNS,
    JSON_COLUMNS,
    LISTED_KEYS,
    SCHEMA,
    LedgerBusyError,
    LedgerDamagedError,
    LedgerError,
    Salvage,
    Transaction,
    add_missing_checksums,
    checked_connection,
    create_tables,
    damaged_error,
    iso_now,
    ledger_error,
    reading,
    row_checksum,
    salvage_ledger,
    store_checksum,
    table_names,
)
from .methods import method_label
from .spec import LEDGER_NAME  # <output dir>/ledger.sqlite

try:
    import fcntl
except ImportError:  # Windows: fall back to a pid file
    fcntl = None  # type: ignore[assignment]

__all__ = ["COLUMNS", "JSON_COLUMNS", "LEDGER_NAME", "LISTED_KEYS", "SCHEMA", "Ledger",
           "LedgerBusyError", "LedgerCheck", "LedgerDamagedError", "LedgerError", "LedgerLock",
           "Repair", "Salvage", "check_ledger", "damaged_error", "job_row", "load_results",
           "read_meta", "read_statuses", "repair_ledger", "row_checksum", "salvage_ledger"]


# -- writing -------------------------------------------------------------------------------------
class Ledger:
    """The ledger at ``path``, opened for writing by one batch run (see :meth:`open`)."""

    def __init__(self, path, connection, lock):
        self.path, self._conn, self._lock = Path(path), connection, lock

    @classmethod
    def open(cls, path: str | Path) -> "Ledger":
        """Lock, check and open (creating it if needed) the ledger at ``path``; raises
        :class:`LedgerBusyError` when another live run holds it, :class:`LedgerDamagedError`
        when it is damaged, :class:`LedgerError` when it is not a ledger."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        _check_not_folder(path)
        lock = LedgerLock(_lock_path(path))
        lock.acquire()
        try:
            conn = checked_connection(path)
        except BaseException:
            lock.release()
            raise
        return cls(path, conn, lock)

    def statuses(self) -> dict[str, str]:
        """``{key: status}`` of every job in the ledger."""
        return dict(self._conn.execute("SELECT key, status FROM jobs"))

    def write_meta(self, **items) -> None:
        """Set meta values (JSON-encoded unless strings); ``created`` is kept from the first
        run."""
        try:
            with self._transaction():
                self._conn.execute("INSERT OR IGNORE INTO meta VALUES ('created', ?)",
                                   (iso_now(),))
                for key, value in items.items():
                    text = value if isinstance(value, str) else json.dumps(value)
                    self._conn.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, text))
        except (sqlite3.Error, OSError) as exc:
            raise ledger_error(self.path, exc, "writing to") from None

    def record(self, job, result: dict) -> None:
        """Store a job's result (``textcluster.batch.runner.run_job``) and its checksum in one
        transaction; raises :class:`LedgerError` when it cannot be written (then nothing of
        it is)."""
        row = job_row(job, result)
        placeholders = ", ".join("?" for _ in COLUMNS)
        try:
            with self._transaction():
                self._conn.execute(
                    f"INSERT OR REPLACE INTO jobs ({', '.join(COLUMNS)}) VALUES ({placeholders})",
                    [row[c] for c in COLUMNS],
                )
                store_checksum(self._conn, row["key"])
                fault_point("ledger-write")  # fault-injection tests: a write failing here
        except (sqlite3.Error, OSError) as exc:
            raise ledger_error(self.path, exc, "writing to", advice=False) from None

    def close(self) -> None:
        try:
            self._conn.close()
        finally:
            self._lock.release()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def _transaction(self):
        return Transaction(self._conn)


def job_row(job, result: dict) -> dict:
    """The ``jobs`` row of ``job`` and its ``result`` (JSON columns encoded)."""
    row = {
        "key": job.key, "pipeline": job.pipeline, "corpus": job.corpus,
        "selection": job.selection, "model": job.model, "variant": job.variant,
        "params": job.params, "k": result.get("k", _fixed(job.k)), "draw": job.draw,
        "seed": job.seed,
        "protocol": job.protocol, "labeled": result.get("labeled", job.labeled),
        **{name: result.get(name) for name in ("status", "metrics", "objective", "timings",
                                               "error", "started", "finished", "host",
                                               "versions")},
    }
    for name in JSON_COLUMNS:
        if row[name] is not None:
            row[name] = json.dumps(row[name], sort_keys=True)
    return row


def _fixed(k):
    """The ``k`` column of a job that did not finish: None when k was to be chosen."""
    return None if isinstance(k, str) else k


# -- checking and repair -------------------------------------------------------------------------
@dataclass
class LedgerCheck:
    """An intact ledger: its results and the time the check took."""

    path: Path
    results: int
    done: int
    seconds: float


def check_ledger(path: str | Path) -> LedgerCheck:
    """Check the ledger at ``path`` (the file or its output folder) read-only: a
    :class:`LedgerCheck`; raises :class:`LedgerDamagedError` when it is damaged."""
    path = _ledger_file(path)
    started = time.perf_counter()
    with reading(path) as conn:
        statuses = dict(conn.execute("SELECT key, status FROM jobs"))
    return LedgerCheck(path, len(statuses), sum(s == "done" for s in statuses.values()),
                       time.perf_counter() - started)


@dataclass
class Repair:
    """What :func:`repair_ledger` did."""

    path: Path
    intact: bool  # nothing to repair: the ledger was left as it was
    salvaged: int  # results copied into the new ledger
    lost_keys: list  # results that could not be salvaged (the next batch run redoes them)
    complete: bool  # lost_keys names every lost result
    kept: Path | None  # the damaged ledger, moved aside


def repair_ledger(path: str | Path) -> Repair:
    """Salvage every intact result of the damaged ledger at ``path`` (the file or its output
    folder) into a new ledger at the same place; the damaged file (and its ``-wal``) is kept
    beside it as ``<name>.damaged-<time>``. An intact ledger is left alone."""
    path = _ledger_file(path)
    lock = LedgerLock(_lock_path(path))
    lock.acquire()
    try:
        try:
            with reading(path) as conn:
                (count,) = conn.execute("SELECT count(*) FROM jobs").fetchone()
            return Repair(path, True, count, [], True, None)
        except LedgerDamagedError:
            pass
        found = salvage_ledger(path)
        kept = path.with_name(f"{path.name}.damaged-{time.strftime('%Y%m%d-%H%M%S')}")
        new = path.with_name(f".{path.name}.repaired")
        _write_salvage(new, found, kept)
        try:
            os.link(path, kept)  # the damaged file under a second name
        except OSError:
            shutil.copy2(path, kept)
        for suffix in ("-wal", "-shm"):  # never to be read with the new ledger
            if Path(f"{path}{suffix}").exists():
                os.replace(f"{path}{suffix}", f"{kept}{suffix}")
        os.replace(new, path)
    finally:
        lock.release()
    return Repair(path, False, len(found.rows), sorted(found.lost_keys), found.complete, kept)


def _write_salvage(path, found, kept):
    """A new ledger at ``path`` holding the salvaged rows and meta, and a ``repaired`` note."""
    for suffix in ("", "-journal"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    note = {"time": iso_now(), "damaged_file": kept.name, "salvaged": len(found.rows),
            "lost": len(found.lost_keys), "lost_keys": sorted(found.lost_keys),
            "all_lost_named": found.complete}
    with closing(sqlite3.connect(path, isolation_level=None)) as conn:
        conn.execute("PRAGMA synchronous=FULL")
        with Transaction(conn):
            create_tables(conn)
            conn.executemany(f"INSERT INTO jobs ({', '.join(COLUMNS)}) VALUES "
                             f"({', '.join('?' for _ in COLUMNS)})", found.rows.values())
            add_missing_checksums(conn)
            conn.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)",
                             [*found.meta.items(), ("repaired", json.dumps(note))])


def _check_not_folder(path):
    if path.is_dir():
        raise LedgerError(f"{path} is a folder, not a ledger file; move it away or choose "
                          "another output folder (--set output.dir=...)")


def _lock_path(path):
    return path.with_name(path.name + ".lock")


# -- the lock ------------------------------------------------------------------------------------
class LedgerLock:
    """An exclusive lock on ``path`` held by this process; the file holds our pid and host.

    With ``fcntl`` (Linux, macOS) the lock is a ``flock``, which the system releases when the
    holder dies, so a lock left by a killed run is free. Elsewhere the file itself is the lock
    and a lock whose pid is no longer alive (on this host) is taken over.
    """

    def __init__(self, path):
        self.path = Path(path)
        self._fd = None

    def acquire(self) -> None:
        if fcntl is not None:
            self._acquire_flock()
        else:
            self._acquire_pidfile()

    def _acquire_flock(self):
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise self._unwritable(exc) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            holder = _read_holder(self.path)
            os.close(fd)
            raise self._busy(holder) from None
        try:
            os.ftruncate(fd, 0)
            os.write(fd, _holder_text().encode())
            os.fsync(fd)
        except OSError as exc:
            os.close(fd)  # and so release the lock
            raise self._unwritable(exc) from None
        self._fd = fd

    def _unwritable(self, exc):
        return LedgerError(f"the ledger's lock file {self.path} cannot be written: "
                           f"{exc.strerror or exc}; check that the folder can be written and "
                           "has free space, and run the same command again")

    def _acquire_pidfile(self, retry=True):
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            holder = _read_holder(self.path)
            if retry and _is_stale(holder):
                self.path.unlink(missing_ok=True)
                return self._acquire_pidfile(retry=False)
            raise self._busy(holder) from None
        os.write(fd, _holder_text().encode())
        self._fd = fd

    def _busy(self, holder):
        who = (f"pid {holder['pid']} on {holder['host']}, since {holder['since']}"
               if holder else "another process")
        return LedgerBusyError(
            f"the ledger {self.path.with_suffix('')} is in use by another batch run ({who}). "
            f"Wait for it to finish or stop it; a lock left by a run that was killed is taken "
            f"over automatically. To run both at once, give this one another output folder "
            f"(--set output.dir=...)."
        )

    def release(self) -> None:
        if self._fd is None:
            return
        if fcntl is not None:
            os.ftruncate(self._fd, 0)
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
        else:
            os.close(self._fd)
            self.path.unlink(missing_ok=True)
        self._fd = None


def _holder_text():
    return json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "since": iso_now()})


def _read_holder(path):
    try:
        return json.loads(Path(path).read_text() or "null")
    except (OSError, ValueError):
        return None


def _is_stale(holder):
    """A pid-file lock whose process is gone (only decidable on the same host)."""
    if not holder or holder.get("host") != socket.gethostname():
        return not holder
    try:
        os.kill(holder["pid"], 0)
    except ProcessLookupError:
        return True
    except OSError:  # exists, owned by someone else
        return False
    return False


# -- reading -------------------------------------------------------------------------------------
def read_statuses(path: str | Path) -> dict[str, str]:
    """``{key: status}`` of the ledger at ``path`` (empty when it does not exist yet); reads
    without taking the lock."""
    path = Path(path)
    if not path.exists():
        return {}
    _check_not_folder(path)
    with reading(path) as conn:
        if not table_names(conn):  # created by a run killed at once
            return {}
        return dict(conn.execute("SELECT key, status FROM jobs"))


def read_meta(path: str | Path) -> dict[str, str]:
    """The ``meta`` table of the ledger at ``path`` as a dict of strings."""
    with reading(_ledger_file(path), check=False) as conn:
        return dict(conn.execute("SELECT key, value FROM meta"))


def load_results(path: str | Path) -> pd.DataFrame:
    """The ledger at ``path`` (the file, or the output folder holding ``ledger.sqlite``) as a
    DataFrame, one row per job, sorted by pipeline, corpus, model, variant, k, draw, seed.

    ``params`` and ``metrics`` are expanded to columns ``param.<name>`` and
    ``metric.<name>``, ``timings`` to ``time.<stage>``; the other JSON columns (selection,
    labeled, objective, versions) hold the decoded values; ``k`` and ``draw`` are nullable
    integers (``draw`` is missing for full-corpus jobs); ``method`` names the job as reports do
    (``model`` or ``model:variant``). The ledger is opened read-only and checked first
    (:class:`LedgerDamagedError` when damaged).
    """
    path = _ledger_file(path)
    with reading(path) as conn:
        if not table_names(conn):
            raise LedgerError(f"the ledger {path} holds no results yet (the run that created "
                              "it stopped at once); run `textcluster batch PIPELINE`")
        frame = pd.read_sql_query(
            "SELECT * FROM jobs ORDER BY pipeline, corpus, model, variant, k, draw, seed, key",
            conn,
        )
    for name in JSON_COLUMNS:
        frame[name] = _decoded(frame, name, path)
    for name in ("k", "draw", "seed"):
        frame[name] = frame[name].astype("Int64")
    parts = [frame] + [_expand(frame[column], prefix) for column, prefix in
                       (("params", "param."), ("metrics", "metric."), ("timings", "time."))]
    frame = pd.concat(parts, axis=1)
    frame["method"] = [method_label(m, v) for m, v in zip(frame["model"], frame["variant"])]
    return frame


def _decoded(frame, column, path):
    """The values of the JSON ``column``; one that is not JSON raises
    :class:`LedgerDamagedError` naming its job."""
    values = []
    for key, value in zip(frame["key"], frame[column]):
        try:
            values.append(json.loads(value) if isinstance(value, str) else None)
        except json.JSONDecodeError as exc:
            raise LedgerDamagedError(
                f"{path}: job {key!r} has invalid JSON in its {column!r} column ({exc.msg} at "
                f"character {exc.pos}); the ledger is damaged — delete that row and re-run the "
                f"batch"
            ) from None
    return values


def _expand(column, prefix):
    """One column per key of the dicts in ``column``, named ``prefix + key``."""
    records = [value if isinstance(value, dict) else {} for value in column]
    frame = pd.DataFrame.from_records(records, index=column.index)
    return frame.add_prefix(prefix)


def _ledger_file(path: str | Path) -> Path:
    """The ledger file: ``path``, or ``path/ledger.sqlite`` when ``path`` is a folder."""
    path = Path(path)
    if path.is_dir():
        if not (path / LEDGER_NAME).exists() and path.suffix == ".sqlite":
            _check_not_folder(path)
        path = path / LEDGER_NAME
    if not path.is_file():
        raise DataNotFoundError(
            f"there is no ledger at {path}; run `textcluster batch PIPELINE` first (the ledger "
            f"is <output dir>/{LEDGER_NAME})"
        )
    return path


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
textcluster version, and the keys of the latest expansion.

Only the batch's parent process writes, one transaction per finished job, in WAL mode, so a
run killed at any moment (even with SIGKILL) leaves every finished job recorded exactly once.
An exclusive lock on ``ledger.sqlite.lock`` (holding the pid) keeps a second run out; the
operating system drops the lock when its holder dies, so a killed run's lock is taken over.
"""

import json
import os
import socket
import sqlite3
import time
from contextlib import closing
from pathlib import Path

import pandas as pd

from .._errors import DataNotFoundError, TextclusterError

try:
    import fcntl
except ImportError:  # Windows: fall back to a pid file
    fcntl = None

COLUMNS = ("key", "pipeline", "corpus", "selection", "model", "variant", "params", "k", "draw",
           "seed", "protocol", "labeled", "status", "metrics", "objective", "timings", "error",
           "started", "finished", "host", "versions")
JSON_COLUMNS = ("selection", "params", "labeled", "metrics", "objective", "timings", "versions")
SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    key TEXT PRIMARY KEY, pipeline TEXT, corpus TEXT, selection TEXT, model TEXT,
    variant TEXT, params TEXT, k INTEGER, draw INTEGER, seed INTEGER, protocol TEXT,
    labeled TEXT, status TEXT CHECK (status IN ('done', 'failed')), metrics TEXT,
    objective TEXT, timings TEXT, error TEXT, started REAL, finished REAL, host TEXT,
    versions TEXT
);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT);
"""


class LedgerBusyError(TextclusterError):
    """Another batch run holds the ledger."""


class Ledger:
    """The ledger at ``path``, opened for writing by one batch run (see :meth:`open`)."""

    def __init__(self, path, connection, lock):
        self.path, self._conn, self._lock = Path(path), connection, lock

    @classmethod
    def open(cls, path):
        """Lock and open (creating it if needed) the ledger at ``path``; raises
        :class:`LedgerBusyError` when another live run holds it."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        lock = LedgerLock(path.with_name(path.name + ".lock"))
        lock.acquire()
        try:
            conn = sqlite3.connect(path, timeout=60, isolation_level=None)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=FULL")
            conn.executescript(SCHEMA)
            _check_schema(conn, path)
        except BaseException:
            lock.release()
            raise
        return cls(path, conn, lock)

    def statuses(self):
        """``{key: status}`` of every job in the ledger."""
        return dict(self._conn.execute("SELECT key, status FROM jobs"))

    def write_meta(self, **items):
        """Set meta values (JSON-encoded unless strings); ``created`` is kept from the first
        run."""
        with self._transaction():
            self._conn.execute("INSERT OR IGNORE INTO meta VALUES ('created', ?)",
                               (_iso_now(),))
            for key, value in items.items():
                text = value if isinstance(value, str) else json.dumps(value)
                self._conn.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, text))

    def record(self, job, result):
        """Store a job's result (``textcluster.batch.runner.run_job``) in one transaction."""
        row = job_row(job, result)
        placeholders = ", ".join("?" for _ in COLUMNS)
        with self._transaction():
            self._conn.execute(
                f"INSERT OR REPLACE INTO jobs ({', '.join(COLUMNS)}) VALUES ({placeholders})",
                [row[c] for c in COLUMNS],
            )

    def close(self):
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
        return _Transaction(self._conn)


class _Transaction:
    def __init__(self, conn):
        self.conn = conn

    def __enter__(self):
        self.conn.execute("BEGIN IMMEDIATE")

    def __exit__(self, exc_type, *exc):
        self.conn.execute("ROLLBACK" if exc_type else "COMMIT")
        return False


def job_row(job, result):
    """The ``jobs`` row of ``job`` and its ``result`` (JSON columns encoded)."""
    row = {
        "key": job.key, "pipeline": job.pipeline, "corpus": job.corpus,
        "selection": job.selection, "model": job.model, "variant": job.variant,
        "params": job.params, "k": result.get("k", job.k), "draw": job.draw, "seed": job.seed,
        "protocol": job.protocol, "labeled": result.get("labeled", job.labeled),
        **{name: result.get(name) for name in ("status", "metrics", "objective", "timings",
                                               "error", "started", "finished", "host",
                                               "versions")},
    }
    for name in JSON_COLUMNS:
        if row[name] is not None:
            row[name] = json.dumps(row[name], sort_keys=True)
    return row


def _check_schema(conn, path):
    columns = [row[1] for row in conn.execute("PRAGMA table_info(jobs)")]
    if tuple(columns) != COLUMNS:
        raise TextclusterError(
            f"{path} is not a textcluster ledger (its jobs table has the columns "
            f"{', '.join(columns)}); choose another output folder"
        )


def _iso_now():
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


# -- the lock ----------------------------------------------------------------------------------
class LedgerLock:
    """An exclusive lock on ``path`` held by this process; the file holds our pid and host.

    With ``fcntl`` (Linux, macOS) the lock is a ``flock``, which the system releases when the
    holder dies, so a lock left by a killed run is free. Elsewhere the file itself is the lock
    and a lock whose pid is no longer alive (on this host) is taken over.
    """

    def __init__(self, path):
        self.path = Path(path)
        self._fd = None

    def acquire(self):
        if fcntl is not None:
            self._acquire_flock()
        else:
            self._acquire_pidfile()

    def _acquire_flock(self):
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            holder = _read_holder(self.path)
            os.close(fd)
            raise self._busy(holder) from None
        os.ftruncate(fd, 0)
        os.write(fd, _holder_text().encode())
        os.fsync(fd)
        self._fd = fd

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

    def release(self):
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
    return json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "since": _iso_now()})


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


# -- reading -----------------------------------------------------------------------------------
def read_statuses(path):
    """``{key: status}`` of the ledger at ``path`` (empty when it does not exist yet); reads
    without taking the lock."""
    if not Path(path).is_file():
        return {}
    with closing(_connect_readonly(path)) as conn:
        return dict(conn.execute("SELECT key, status FROM jobs"))


def read_meta(path):
    """The ``meta`` table of the ledger at ``path`` as a dict of strings."""
    with closing(_connect_readonly(_ledger_file(path))) as conn:
        return dict(conn.execute("SELECT key, value FROM meta"))


def load_results(path):
    """The ledger at ``path`` (the file, or the output folder holding ``ledger.sqlite``) as a
    DataFrame, one row per job, sorted by pipeline, corpus, model, variant, k, draw, seed.

    ``params`` and ``metrics`` are expanded to columns ``param.<name>`` and
    ``metric.<name>``, ``timings`` to ``time.<stage>``; the other JSON columns (selection,
    labeled, objective, versions) hold the decoded values; ``k`` and ``draw`` are nullable
    integers (``draw`` is missing for full-corpus jobs).
    """
    path = _ledger_file(path)
    with closing(_connect_readonly(path)) as conn:
        frame = pd.read_sql_query(
            "SELECT * FROM jobs ORDER BY pipeline, corpus, model, variant, k, draw, seed, key",
            conn,
        )
    for name in JSON_COLUMNS:
        frame[name] = [json.loads(v) if isinstance(v, str) else None for v in frame[name]]
    for name in ("k", "draw", "seed"):
        frame[name] = frame[name].astype("Int64")
    parts = [frame] + [_expand(frame[column], prefix) for column, prefix in
                       (("params", "param."), ("metrics", "metric."), ("timings", "time."))]
    return pd.concat(parts, axis=1)


def _expand(column, prefix):
    """One column per key of the dicts in ``column``, named ``prefix + key``."""
    records = [value if isinstance(value, dict) else {} for value in column]
    frame = pd.DataFrame.from_records(records, index=column.index)
    return frame.add_prefix(prefix)


def _ledger_file(path):
    path = Path(path)
    if path.is_dir():
        path = path / "ledger.sqlite"
    if not path.is_file():
        raise DataNotFoundError(
            f"there is no ledger at {path}; run `textcluster batch PIPELINE` first (the ledger "
            f"is <output dir>/ledger.sqlite)"
        )
    return path


def _connect_readonly(path):
    conn = sqlite3.connect(f"{Path(path).resolve().as_uri()}?mode=ro", uri=True, timeout=60)
    try:
        conn.execute("SELECT 1 FROM jobs LIMIT 1")
    except sqlite3.DatabaseError as exc:
        conn.close()
        raise TextclusterError(f"{path} is not a textcluster ledger ({exc})") from None
    return conn

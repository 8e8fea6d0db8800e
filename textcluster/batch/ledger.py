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
new ledger and keeps the damaged file beside it.
"""

import errno
import hashlib
import json
import os
import re
import shutil
import socket
import sqlite3
import time
from contextlib import closing, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from .._errors import DataNotFoundError, TextclusterError
from .faults import fault_point

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
CREATE TABLE IF NOT EXISTS checksums (key TEXT PRIMARY KEY, sha256 TEXT) WITHOUT ROWID;
"""
SELECT_ROW = f"SELECT {', '.join(COLUMNS)} FROM jobs"
KEY = re.compile(r"[0-9a-f]{32}")
LISTED_KEYS = 10  # lost keys named in a message
DAMAGE_ERRORS = ("SQLITE_CORRUPT", "SQLITE_NOTADB")  # error names (prefixes) of a damaged file


class LedgerError(TextclusterError):
    """The ledger cannot be used: it is not a ledger, it is damaged, or it cannot be written."""


class LedgerDamagedError(LedgerError):
    """The ledger file is damaged; :func:`repair_ledger` salvages its intact results."""


class LedgerBusyError(LedgerError):
    """Another batch run holds the ledger."""


class Ledger:
    """The ledger at ``path``, opened for writing by one batch run (see :meth:`open`)."""

    def __init__(self, path, connection, lock):
        self.path, self._conn, self._lock = Path(path), connection, lock

    @classmethod
    def open(cls, path):
        """Lock, check and open (creating it if needed) the ledger at ``path``; raises
        :class:`LedgerBusyError` when another live run holds it, :class:`LedgerDamagedError`
        when it is damaged, :class:`LedgerError` when it is not a ledger."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        _check_not_folder(path)
        lock = LedgerLock(_lock_path(path))
        lock.acquire()
        try:
            conn = _checked_connection(path)
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
        try:
            with self._transaction():
                self._conn.execute("INSERT OR IGNORE INTO meta VALUES ('created', ?)",
                                   (_iso_now(),))
                for key, value in items.items():
                    text = value if isinstance(value, str) else json.dumps(value)
                    self._conn.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, text))
        except (sqlite3.Error, OSError) as exc:
            raise _error(self.path, exc, "writing to") from None

    def record(self, job, result):
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
                _store_checksum(self._conn, row["key"])
                fault_point("ledger-write")  # fault-injection tests: a write failing here
        except (sqlite3.Error, OSError) as exc:
            raise _error(self.path, exc, "writing to", advice=False) from None

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
    """``BEGIN IMMEDIATE`` … ``COMMIT``, rolled back when the block or the commit fails."""

    def __init__(self, conn):
        self.conn = conn

    def __enter__(self):
        self.conn.execute("BEGIN IMMEDIATE")

    def __exit__(self, exc_type, *exc):
        if exc_type is None:
            try:
                self.conn.execute("COMMIT")
                return False
            except BaseException:
                self._rollback()
                raise
        self._rollback()
        return False

    def _rollback(self):
        if self.conn.in_transaction:
            try:
                self.conn.execute("ROLLBACK")
            except sqlite3.Error:  # SQLite may have rolled back already (e.g. disk full)
                pass


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


def row_checksum(values):
    """The checksum of a ``jobs`` row as SQLite returns it (values in :data:`COLUMNS` order)."""
    text = json.dumps(list(values), separators=(",", ":"), default=repr)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _create_tables(conn):
    for statement in SCHEMA.split(";"):
        if statement.strip():
            conn.execute(statement)


def _store_checksum(conn, key):
    """Checksum the row of ``key`` as stored (after SQLite's type conversions)."""
    values = conn.execute(f"{SELECT_ROW} WHERE key = ?", (key,)).fetchone()
    conn.execute("INSERT OR REPLACE INTO checksums VALUES (?, ?)", (key, row_checksum(values)))


def _add_missing_checksums(conn):
    """Checksum the rows of a ledger written before checksums were kept (already checked)."""
    for values in conn.execute(f"{SELECT_ROW} WHERE key NOT IN (SELECT key FROM checksums)")\
            .fetchall():
        conn.execute("INSERT INTO checksums VALUES (?, ?)", (values[0], row_checksum(values)))


def _iso_now():
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


# -- checking ------------------------------------------------------------------------------------
def _connect(path, readonly=False):
    """A connection in autocommit mode; text that is not UTF-8 (a damaged page) is read with
    its bytes escaped, for the checksums to catch."""
    if readonly:
        conn = sqlite3.connect(f"{Path(path).resolve().as_uri()}?mode=ro", uri=True,
                               timeout=60, isolation_level=None)
    else:
        conn = sqlite3.connect(path, timeout=60, isolation_level=None)
    conn.text_factory = lambda data: data.decode("utf-8", "surrogateescape")
    return conn


def _checked_connection(path, readonly=False, check=True):
    """A connection to the ledger at ``path``, checked (unless not ``check``); for writing,
    in WAL mode with the tables created and older rows checksummed. Raises
    :class:`LedgerDamagedError` when it is damaged, :class:`LedgerError` when it is not a
    ledger or cannot be opened."""
    try:
        conn = _connect(path, readonly)
    except sqlite3.Error as exc:
        raise _error(path, exc) from None
    try:
        problem = _check(conn, path) if check else None
        if problem is None and not readonly:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=FULL")
            with _Transaction(conn):
                _create_tables(conn)
                _add_missing_checksums(conn)
    except BaseException as exc:
        conn.close()
        if isinstance(exc, sqlite3.Error):
            raise _error(path, exc) from None
        raise
    if problem is not None:
        conn.close()
        raise damaged_error(path, problem)
    return conn


def _check(conn, path):
    """What is wrong with the ledger open on ``conn``, or None; a new (empty) file is fine.
    Raises :class:`LedgerError` for a database that is not a ledger."""
    tables = _tables(conn)
    if not tables:
        return None
    if "jobs" not in tables:
        raise LedgerError(f"{path} is not a textcluster ledger (it is an SQLite database with "
                          f"the tables {', '.join(sorted(tables))}); choose another output "
                          "folder (--set output.dir=...)")
    columns = [row[1] for row in conn.execute("PRAGMA table_info(jobs)")]
    if tuple(columns) != COLUMNS:
        raise LedgerError(
            f"{path} is not a textcluster ledger (its jobs table has the columns "
            f"{', '.join(columns)}); choose another output folder"
        )
    report = [row[0] for row in conn.execute("PRAGMA integrity_check(10)")]
    if report != ["ok"]:
        return f"SQLite's integrity check: {'; '.join(report[:3])}"
    problems = _row_problems(conn, "checksums" in tables)
    if problems:
        more = f", and {len(problems) - 1} more damaged rows" if len(problems) > 1 else ""
        return problems[0] + more
    return None


def _row_problems(conn, has_checksums):
    """What is wrong with each damaged row: one message per row."""
    checksum, join = (("c.sha256", "LEFT JOIN checksums AS c USING (key)") if has_checksums
                      else ("NULL", ""))
    query = f"SELECT {', '.join('j.' + c for c in COLUMNS)}, {checksum} FROM jobs AS j {join}"
    problems = (_row_problem(values, checksum) for *values, checksum in conn.execute(query))
    return [problem for problem in problems if problem]


def _row_problem(values, checksum):
    """What is wrong with a ``jobs`` row, or None: it must match its checksum; a row without
    one (written before checksums were kept) must have UTF-8 text, a status and valid JSON."""
    row = dict(zip(COLUMNS, values))
    key = row["key"]
    if checksum:
        return None if row_checksum(values) == checksum else (
            f"job {key!r} does not match its checksum")
    if not all(_clean_text(v) for v in values if not isinstance(v, (int, float, type(None)))):
        return f"job {key!r} has text that is not UTF-8"
    if row["status"] not in ("done", "failed"):
        return f"job {key!r} has the status {row['status']!r}"
    for name in JSON_COLUMNS:
        try:
            json.loads(row[name] if row[name] is not None else "null")
        except (TypeError, ValueError):
            return f"job {key!r} has invalid JSON in its {name!r} column"
    return None


def _error(path, exc, doing="opening", advice=True):
    """The :class:`LedgerError` for an SQLite or OS error met while ``doing`` the ledger;
    without ``advice`` when the caller says what to do."""
    name = getattr(exc, "sqlite_errorname", "") or ""
    if name.startswith(DAMAGE_ERRORS):
        return damaged_error(path, f"SQLite: {exc}")
    full = name.startswith("SQLITE_FULL") or getattr(exc, "errno", None) == errno.ENOSPC
    message = f"{doing} the ledger {path} failed: {'the disk is full: ' if full else ''}{exc}"
    if advice:
        message += (". Check that its folder exists, can be written and has free space, and "
                    "run the same command again; every result recorded before is kept")
    return LedgerError(message)


def damaged_error(path, problem):
    """:class:`LedgerDamagedError` for the ledger at ``path``, with what can be salvaged."""
    path = Path(path)
    found = salvage_ledger(path)
    repair = f"`textcluster ledger repair {path}`"
    kept = f"{path.name}.damaged-<time>"
    if not found.readable:
        return LedgerDamagedError(
            f"{path} is damaged or is not a textcluster ledger ({problem}): 0 results can be "
            f"read. Move it aside, or run {repair}, which keeps it as {kept} and starts an "
            "empty ledger; the next batch run then redoes every job"
        )
    lost = f"; {_lost_text(found)}" if found.lost_keys or not found.complete else ""
    return LedgerDamagedError(
        f"the ledger {path} is damaged ({problem}): {len(found.rows)} results can be read"
        f"{lost}. {repair} copies them into a new ledger and keeps the damaged file beside it "
        f"({kept}); the next batch run then redoes the jobs whose results were lost"
    )


def _lost_text(found):
    keys = sorted(found.lost_keys)
    named = ", ".join(keys[:LISTED_KEYS]) + (f" and {len(keys) - LISTED_KEYS} more"
                                             if len(keys) > LISTED_KEYS else "")
    text = f"{len(keys)} results are lost (keys {named})" if keys else ""
    if not found.complete:
        text += ("; " if text else "") + ("parts of the file cannot be read, so more results "
                                          "may be lost than can be named")
    return text


def check_ledger(path):
    """Check the ledger at ``path`` (the file or its output folder) read-only: a
    :class:`LedgerCheck`; raises :class:`LedgerDamagedError` when it is damaged."""
    path = _ledger_file(path)
    started = time.perf_counter()
    with _reading(path) as conn:
        statuses = dict(conn.execute("SELECT key, status FROM jobs"))
    return LedgerCheck(path, len(statuses), sum(s == "done" for s in statuses.values()),
                       time.perf_counter() - started)


@dataclass
class LedgerCheck:
    """An intact ledger: its results and the time the check took."""

    path: Path
    results: int
    done: int
    seconds: float


@contextmanager
def _reading(path, check=True):
    """A read-only connection to the ledger ``path``, checked first unless ``check`` is
    false; SQLite's errors become :class:`LedgerError`."""
    conn = _checked_connection(path, readonly=True, check=check)
    try:
        yield conn
    except Exception as exc:
        cause = exc if isinstance(exc, sqlite3.Error) else exc.__cause__  # pandas wraps them
        if isinstance(cause, sqlite3.Error):
            raise _error(path, cause, "reading") from None
        raise
    finally:
        conn.close()


# -- salvage and repair --------------------------------------------------------------------------
@dataclass
class Salvage:
    """What can be read from a (damaged) ledger."""

    rows: dict = field(default_factory=dict)  # key -> values in COLUMNS order, intact
    meta: dict = field(default_factory=dict)
    lost_keys: set = field(default_factory=set)  # rows known to exist, not readable intact
    complete: bool = False  # every row's key could be read: lost_keys is all that is lost
    readable: bool = False  # SQLite could open the file at all


def salvage_ledger(path):
    """Read every intact row of the ledger at ``path`` (read-only), going around damaged
    pages: rows by ranges of rowids, keys by ranges of their first hex digits (from the key
    index and the checksums), each range split until the damage is isolated."""
    found = Salvage()
    try:
        conn = _connect(path, readonly=True)
        conn.execute("PRAGMA writable_schema = ON")  # read a truncated file (writes nothing)
        tables = _tables(conn)
    except sqlite3.Error:
        return found
    with closing(conn):
        found.readable = True
        if "jobs" not in tables:
            return found
        checksums, unsummed = {}, [""]  # unsummed: prefixes of unreadable checksums
        if "checksums" in tables:
            unsummed = _read_key_ranges(
                conn, "SELECT key, sha256 FROM checksums WHERE key >= ? AND key < ?", checksums)
        index = {}
        unindexed = _read_key_ranges(
            conn, "SELECT key, NULL FROM jobs WHERE key >= ? AND key < ?", index)
        size = Path(path).stat().st_size
        rows = _read_rowid_ranges(conn, "jobs", COLUMNS, size)
        meta = (_read_rowid_ranges(conn, "meta", ("key", "value"), size)
                if "meta" in tables else [])
    for values in rows:
        key, checksum = values[0], checksums.get(values[0])
        unverifiable = not checksum and "checksums" in tables and any(
            str(key).startswith(prefix) for prefix in unsummed)  # its checksum is unreadable
        if not unverifiable and _row_problem(values, checksum) is None:
            found.rows[key] = values
        elif isinstance(key, str):
            found.lost_keys.add(key)
    found.meta = {key: value for key, value in meta if _clean_text(key) and _clean_text(value)}
    found.lost_keys = {key for key in found.lost_keys | set(checksums) | set(index)
                       if KEY.fullmatch(key) and key not in found.rows}
    found.complete = not unindexed or ("checksums" in tables and not unsummed)
    return found


def _clean_text(value):
    """A string without escaped (undecodable) bytes."""
    if not isinstance(value, str):
        return False
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _read_key_ranges(conn, query, into, prefix=""):
    """Read ``(key, value)`` rows of keys starting with ``prefix`` into ``into``, splitting the
    range by the next hex digit where it cannot be read; returns the prefixes of the ranges
    that could not be read (empty: all was read)."""
    upper = prefix[:-1] + chr(ord(prefix[-1]) + 1) if prefix else "\U0010ffff"
    try:
        into.update(conn.execute(query, (prefix, upper)).fetchall())
        return []
    except sqlite3.DatabaseError:
        if len(prefix) >= 4:
            return [prefix]
    return [failed for digit in "0123456789abcdef"
            for failed in _read_key_ranges(conn, query, into, prefix + digit)]


def _read_rowid_ranges(conn, table, columns, size):
    """The readable rows of ``table`` (values of ``columns``) of a file of ``size`` bytes,
    reading ranges of rowids and halving a range that cannot be read down to single rows."""
    try:
        (top,) = conn.execute(f"SELECT max(rowid) FROM {table}").fetchone()
    except sqlite3.DatabaseError:
        top = size // 64  # more rows than the file can hold
    rows = {}
    ranges = [(1, top or 0)]
    query = f"SELECT rowid, {', '.join(columns)} FROM {table} WHERE rowid BETWEEN ? AND ?"
    while ranges:
        low, high = ranges.pop()
        if low > high:
            continue
        try:
            rows.update((rowid, tuple(values))
                        for rowid, *values in conn.execute(query, (low, high)).fetchall())
        except sqlite3.DatabaseError:
            if low < high:
                middle = (low + high) // 2
                ranges += [(middle + 1, high), (low, middle)]
    return [rows[rowid] for rowid in sorted(rows)]


@dataclass
class Repair:
    """What :func:`repair_ledger` did."""

    path: Path
    intact: bool  # nothing to repair: the ledger was left as it was
    salvaged: int  # results copied into the new ledger
    lost_keys: list  # results that could not be salvaged (the next batch run redoes them)
    complete: bool  # lost_keys names every lost result
    kept: Path | None  # the damaged ledger, moved aside


def repair_ledger(path):
    """Salvage every intact result of the damaged ledger at ``path`` (the file or its output
    folder) into a new ledger at the same place; the damaged file (and its ``-wal``) is kept
    beside it as ``<name>.damaged-<time>``. An intact ledger is left alone."""
    path = _ledger_file(path)
    lock = LedgerLock(_lock_path(path))
    lock.acquire()
    try:
        try:
            with _reading(path) as conn:
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
    note = {"time": _iso_now(), "damaged_file": kept.name, "salvaged": len(found.rows),
            "lost": len(found.lost_keys), "lost_keys": sorted(found.lost_keys),
            "all_lost_named": found.complete}
    with closing(sqlite3.connect(path, isolation_level=None)) as conn:
        conn.execute("PRAGMA synchronous=FULL")
        with _Transaction(conn):
            _create_tables(conn)
            conn.executemany(f"INSERT INTO jobs ({', '.join(COLUMNS)}) VALUES "
                             f"({', '.join('?' for _ in COLUMNS)})", found.rows.values())
            _add_missing_checksums(conn)
            conn.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)",
                             [*found.meta.items(), ("repaired", json.dumps(note))])


def _check_not_folder(path):
    if path.is_dir():
        raise LedgerError(f"{path} is a folder, not a ledger file; move it away or choose "
                          "another output folder (--set output.dir=...)")


def _lock_path(path):
    return path.with_name(path.name + ".lock")


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
    path = Path(path)
    if not path.exists():
        return {}
    _check_not_folder(path)
    with _reading(path) as conn:
        if not _tables(conn):  # created by a run killed at once
            return {}
        return dict(conn.execute("SELECT key, status FROM jobs"))


def read_meta(path):
    """The ``meta`` table of the ledger at ``path`` as a dict of strings."""
    with _reading(_ledger_file(path), check=False) as conn:
        return dict(conn.execute("SELECT key, value FROM meta"))


def load_results(path):
    """The ledger at ``path`` (the file, or the output folder holding ``ledger.sqlite``) as a
    DataFrame, one row per job, sorted by pipeline, corpus, model, variant, k, draw, seed.

    ``params`` and ``metrics`` are expanded to columns ``param.<name>`` and
    ``metric.<name>``, ``timings`` to ``time.<stage>``; the other JSON columns (selection,
    labeled, objective, versions) hold the decoded values; ``k`` and ``draw`` are nullable
    integers (``draw`` is missing for full-corpus jobs). The ledger is checked first
    (:class:`LedgerDamagedError` when damaged).
    """
    path = _ledger_file(path)
    with _reading(path) as conn:
        if not _tables(conn):
            raise LedgerError(f"the ledger {path} holds no results yet (the run that created "
                              "it stopped at once); run `textcluster batch PIPELINE`")
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
        if not (path / "ledger.sqlite").exists() and path.suffix == ".sqlite":
            _check_not_folder(path)
        path = path / "ledger.sqlite"
    if not path.is_file():
        raise DataNotFoundError(
            f"there is no ledger at {path}; run `textcluster batch PIPELINE` first (the ledger "
            f"is <output dir>/ledger.sqlite)"
        )
    return path


def _tables(conn):
    return {name for (name,) in conn.execute("SELECT name FROM sqlite_master "
                                              "WHERE type = 'table'")}

"""The ledger's SQLite file underneath :mod:`textcluster.batch.ledger`: its schema, row
checksums, transactions, checked connections, and the salvage of a damaged file.

Every connection is checked (SQLite's ``PRAGMA integrity_check`` and each row against its
checksum) before it is used; a damaged file raises :class:`LedgerDamagedError` saying how many
results :func:`salvage_ledger` can read. The public API is :mod:`textcluster.batch.ledger`.
"""

import errno
import hashlib
import json
import re
import sqlite3
import time
from collections.abc import Iterator, Sequence
from contextlib import closing, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from .._errors import TextclusterError

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


class Transaction:
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


def row_checksum(values: Sequence) -> str:
    """The checksum of a ``jobs`` row as SQLite returns it (values in :data:`COLUMNS` order)."""
    text = json.dumps(list(values), separators=(",", ":"), default=repr)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def create_tables(conn: sqlite3.Connection) -> None:
    """Create the ledger's tables where they are missing."""
    for statement in SCHEMA.split(";"):
        if statement.strip():
            conn.execute(statement)


def store_checksum(conn: sqlite3.Connection, key: str) -> None:
    """Checksum the row of ``key`` as stored (after SQLite's type conversions)."""
    values = conn.execute(f"{SELECT_ROW} WHERE key = ?", (key,)).fetchone()
    conn.execute("INSERT OR REPLACE INTO checksums VALUES (?, ?)", (key, row_checksum(values)))


def add_missing_checksums(conn: sqlite3.Connection) -> None:
    """Checksum the rows of a ledger written before checksums were kept (already checked)."""
    for values in conn.execute(f"{SELECT_ROW} WHERE key NOT IN (SELECT key FROM checksums)")\
            .fetchall():
        conn.execute("INSERT INTO checksums VALUES (?, ?)", (values[0], row_checksum(values)))


def iso_now() -> str:
    """The local time as ISO 8601 with its UTC offset, to the second."""
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


def checked_connection(path: str | Path, readonly: bool = False,
                       check: bool = True) -> sqlite3.Connection:
    """A connection to the ledger at ``path``, checked (unless not ``check``); for writing,
    in WAL mode with the tables created and older rows checksummed. Raises
    :class:`LedgerDamagedError` when it is damaged, :class:`LedgerError` when it is not a
    ledger or cannot be opened."""
    try:
        conn = _connect(path, readonly)
    except sqlite3.Error as exc:
        raise ledger_error(path, exc) from None
    try:
        problem = _check(conn, path) if check else None
        if problem is None and not readonly:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=FULL")
            with Transaction(conn):
                create_tables(conn)
                add_missing_checksums(conn)
    except BaseException as exc:
        conn.close()
        if isinstance(exc, sqlite3.Error):
            raise ledger_error(path, exc) from None
        raise
    if problem is not None:
        conn.close()
        raise damaged_error(path, problem)
    return conn


def _check(conn, path):
    """What is wrong with the ledger open on ``conn``, or None; a new (empty) file is fine.
    Raises :class:`LedgerError` for a database that is not a ledger."""
    tables = table_names(conn)
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


def ledger_error(path: str | Path, exc: Exception, doing: str = "opening",
                 advice: bool = True) -> LedgerError:
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


def damaged_error(path: str | Path, problem: str) -> LedgerDamagedError:
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


@contextmanager
def reading(path: str | Path, check: bool = True) -> Iterator[sqlite3.Connection]:
    """A read-only connection to the ledger ``path``, checked first unless ``check`` is
    false; SQLite's errors become :class:`LedgerError`."""
    conn = checked_connection(path, readonly=True, check=check)
    try:
        yield conn
    except Exception as exc:
        cause = exc if isinstance(exc, sqlite3.Error) else exc.__cause__  # pandas wraps them
        if isinstance(cause, sqlite3.Error):
            raise ledger_error(path, cause, "reading") from None
        raise
    finally:
        conn.close()


# -- salvage -------------------------------------------------------------------------------------
@dataclass
class Salvage:
    """What can be read from a (damaged) ledger."""

    rows: dict = field(default_factory=dict)  # key -> values in COLUMNS order, intact
    meta: dict = field(default_factory=dict)
    lost_keys: set = field(default_factory=set)  # rows known to exist, not readable intact
    complete: bool = False  # every row's key could be read: lost_keys is all that is lost
    readable: bool = False  # SQLite could open the file at all


def salvage_ledger(path: str | Path) -> Salvage:
    """Read every intact row of the ledger at ``path`` (read-only), going around damaged
    pages: rows by ranges of rowids, keys by ranges of their first hex digits (from the key
    index and the checksums), each range split until the damage is isolated."""
    found = Salvage()
    try:
        conn = _connect(path, readonly=True)
        conn.execute("PRAGMA writable_schema = ON")  # read a truncated file (writes nothing)
        tables = table_names(conn)
    except sqlite3.Error:
        return found
    with closing(conn):
        found.readable = True
        if "jobs" not in tables:
            return found
        checksums: dict[str, str] = {}
        unsummed = [""]  # prefixes of the checksums that cannot be read
        if "checksums" in tables:
            unsummed = _read_key_ranges(
                conn, "SELECT key, sha256 FROM checksums WHERE key >= ? AND key < ?", checksums)
        index: dict[str, None] = {}
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


def table_names(conn: sqlite3.Connection) -> set[str]:
    """The names of the tables in the database open on ``conn``."""
    return {name for (name,) in conn.execute("SELECT name FROM sqlite_master "
                                              "WHERE type = 'table'")}

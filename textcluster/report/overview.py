"""The report's opening: the run in bullet points (pipeline, ledger, jobs, compute and wall
time, hosts), and the tables of versions, compute time per method, failed jobs and warnings.
"""

import json
from datetime import datetime, timezone

import numpy as np
import pandas as pd

from .markup import Table
from .results import LedgerSnapshot, first_line, is_missing, json_meta

__all__ = ["failed_table", "format_duration", "job_seconds", "overview", "time_by_method",
           "versions_table", "warnings_table"]

MAX_FAILED_LISTED = 100
MAX_WARNINGS_LISTED = 20


def overview(ledger: LedgerSnapshot) -> list[str]:
    """The report's opening bullet points: pipeline, ledger, job counts, time."""
    jobs, meta = ledger.jobs, ledger.meta
    status = jobs["status"].fillna("unknown")
    names = [str(p) for p in dict.fromkeys(jobs["pipeline"]) if not is_missing(p)]
    source = f" (file {meta['pipeline_file']})" if meta.get("pipeline_file") else ""
    items = [f"Pipeline: {', '.join(names) or 'unnamed'}{source}"]
    overrides = json_meta(meta, "overrides")
    if overrides:
        items.append(f"Overrides: {' '.join(map(str, overrides))}")
    version = meta.get("textcluster_version") or meta.get("version") or "unknown"
    items += [
        f"Ledger: {ledger.path.name}, created {meta.get('created', 'unknown')}, last run "
        f"{meta.get('updated', 'unknown')}, textcluster {version}",
        f"Report written: {datetime.now(timezone.utc):%Y-%m-%d %H:%M UTC}",
        f"Jobs: {len(jobs) + ledger.pending} — {int((status == 'done').sum())} done, "
        f"{int((status == 'failed').sum())} failed, {ledger.pending} not run yet",
    ]
    if ledger.stale:
        items.append(f"Left out: {ledger.stale} job(s) in the ledger that the pipeline no "
                     f"longer lists (run with other settings)")
    items += _time_items(jobs)
    hosts = [str(h) for h in dict.fromkeys(jobs["host"]) if not is_missing(h)]
    if hosts:
        items.append(f"Hosts: {', '.join(hosts)}")
    return items


def _time_items(jobs):
    compute = sum(job_seconds(t) for t in jobs["timings"])
    items = [f"Compute time (sum of job totals): {format_duration(compute)} ({compute:.1f} s)"]
    started, finished = _timestamps(jobs["started"]), _timestamps(jobs["finished"])
    if started.notna().any() and finished.notna().any():
        wall = (finished.max() - started.min()).total_seconds()
        items.append(f"Wall time (first start → last finish): {format_duration(wall)} "
                     f"({wall:.1f} s), {started.min():%Y-%m-%d %H:%M} → "
                     f"{finished.max():%Y-%m-%d %H:%M} UTC")
    return items


def _timestamps(values):
    values = pd.Series(values, dtype=object)
    numeric = pd.to_numeric(values, errors="coerce")
    if numeric.notna().sum() == values.notna().sum() and numeric.notna().any():
        return pd.to_datetime(numeric, unit="s", utc=True)
    return pd.to_datetime(values, utc=True, errors="coerce", format="ISO8601")


def job_seconds(timings: object) -> float:
    """A job's compute time: its timings' "total", else the sum of its stages."""
    if not isinstance(timings, dict):
        return 0.0
    if isinstance(timings.get("total"), (int, float)):
        return float(timings["total"])
    return float(sum(v for v in timings.values() if isinstance(v, (int, float))))


def format_duration(seconds: float, compact: bool = False) -> str:
    """``1:02:03`` (hours, minutes, seconds), or with ``compact`` ``1h02m`` (``2m05s`` under an
    hour, as the batch's progress line shows the time left)."""
    seconds = int(round(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if compact:
        return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{secs:02d}s"
    return f"{hours}:{minutes:02d}:{secs:02d}"


# -- tables --------------------------------------------------------------------------------------


def versions_table(jobs: pd.DataFrame) -> Table | None:
    """The package versions the jobs recorded, one column per distinct set."""
    sets: dict[str, int] = {}
    for versions in jobs["versions"]:
        if isinstance(versions, dict):
            key = json.dumps(versions, sort_keys=True)
            sets[key] = sets.get(key, 0) + 1
    if not sets:
        return None
    decoded = [(json.loads(k), n) for k, n in sets.items()]
    packages = list(dict.fromkeys(p for versions, _ in decoded for p in versions))
    header = ["package"] + ([f"set {i + 1} ({n} jobs)" for i, (_, n) in enumerate(decoded)]
                            if len(decoded) > 1 else ["version"])
    rows = [[p] + [str(v.get(p, "—")) for v, _ in decoded] for p in packages]
    return Table(header, rows, "Versions")


def time_by_method(jobs: pd.DataFrame, methods: list[str]) -> Table:
    """Jobs, total and mean compute seconds per method."""
    rows = []
    for method in methods:
        of_method = jobs[jobs["method"] == method]
        seconds = [job_seconds(t) for t in of_method["timings"]]
        rows.append([method, str(len(of_method)), f"{sum(seconds):.1f}",
                     f"{np.mean(seconds):.2f}" if seconds else "—"])
    return Table(["method", "jobs", "total s", "mean s per job"], rows, "Compute time per method")


def failed_table(failed: pd.DataFrame) -> Table:
    """The failed jobs (the first MAX_FAILED_LISTED) and the last line of each error."""
    rows = []
    for job in failed.head(MAX_FAILED_LISTED).itertuples(index=False):
        rows.append([str(job.key), job.method, str(job.corpus), _text(job.k), _text(job.draw),
                     _text(job.seed), first_line(job.error)])
    notes = []
    if len(failed) > MAX_FAILED_LISTED:
        notes.append(f"{len(failed) - MAX_FAILED_LISTED} more failed jobs in failed_jobs.csv.")
    return Table(["key", "method", "corpus", "k", "draw", "seed", "error"], rows,
                 "Failed jobs", notes)


def _text(value):
    if is_missing(value):
        return "—"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def warnings_table(done: pd.DataFrame) -> Table | None:
    """Distinct warnings recorded by finished jobs (their ``error`` column), with counts."""
    messages = [first_line(e) for e in done["error"] if not is_missing(e) and str(e).strip()]
    if not messages:
        return None
    counts = pd.Series(messages).value_counts()
    rows = [[message, str(n)] for message, n in counts.head(MAX_WARNINGS_LISTED).items()]
    notes = ([f"{len(counts) - MAX_WARNINGS_LISTED} more distinct warnings not shown."]
             if len(counts) > MAX_WARNINGS_LISTED else [])
    return Table(["warning", "jobs"], rows, "Warnings from finished jobs", notes)

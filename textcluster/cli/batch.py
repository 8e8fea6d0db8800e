"""``textcluster batch PIPELINE``: run a pipeline file's jobs, resumably, into its ledger."""

import sys
import time

import click

from ..batch import expand, load_pipeline, make_executor, run_batch
from ..batch.ledger import read_statuses
from ._common import data_dir_option, user_errors

TABLE_COLUMNS = ("#", "corpus", "model", "variant", "k", "draw", "seed", "status", "key")


@click.command("batch")
@click.argument("pipeline_file", metavar="PIPELINE", type=click.Path(dir_okay=False))
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE",
              help="Override a value of the pipeline file by its dotted key; repeatable "
                   "(e.g. --set protocol.draws=2 --set models.gnmf.params.max_iter=50).")
@click.option("--dry-run", is_flag=True, help="List the jobs and their status; run nothing.")
@click.option("--jobs", "-j", "n_jobs", type=click.IntRange(min=1), default=1,
              show_default=True, help="Jobs run at once (worker processes).")
@click.option("--executor", type=click.Choice(["local", "dask"]), default="local",
              show_default=True, help="local: a process pool on this machine; dask: a Dask "
                                      "cluster (--scheduler, else a local one).")
@click.option("--scheduler", default=None, metavar="ADDRESS",
              help="Dask scheduler address, e.g. tcp://10.0.0.5:8786 (implies --executor dask).")
@click.option("--no-report", is_flag=True, help="Do not write the report after the batch.")
@data_dir_option
@user_errors
def batch_command(pipeline_file, overrides, dry_run, n_jobs, executor, scheduler, no_report,
                  data_dir):
    """Run every job of a pipeline file (corpora × models × k × draws × seeds), skipping
    the jobs its ledger already holds as done.

    The ledger is <output dir>/ledger.sqlite; a run that was interrupted, even killed,
    resumes where it stopped, and failed jobs are retried. The exit code is 1 when a job
    failed (its error is in the ledger), 2 for a bad pipeline file.

    \b
    Examples:
      textcluster batch pipelines/smoke.toml
      textcluster batch pipelines/gnmf_tdt2.toml --jobs 2 --dry-run
      textcluster batch pipelines/gnmf_tdt2.toml --set protocol.draws=5 --set output.dir=runs/t
      textcluster batch pipelines/gnmf_tdt2.toml --executor dask --scheduler tcp://host:8786
    """
    pipeline = load_pipeline(pipeline_file, overrides, data_dir=data_dir)
    if dry_run:
        click.echo(format_jobs(pipeline))
        return
    progress = BatchProgress() if sys.stderr.isatty() else None
    summary = run_batch(pipeline, make_executor(executor, n_jobs, scheduler), progress=progress,
                        report=not no_report)
    if progress:
        progress.finish()
    click.echo(format_summary(pipeline, summary))
    if summary.failed or summary.report_error:
        sys.exit(1)


def format_jobs(pipeline):
    """The jobs as an aligned table with their status in the ledger, and a count."""
    jobs, statuses = expand(pipeline), read_statuses(pipeline.ledger_path)
    rows = [TABLE_COLUMNS] + [
        (str(i), job.corpus, job.model, job.variant or "-", _show(job.k, "classes"),
         _show(job.draw, "-"), str(job.seed), statuses.get(job.key, "to run"), job.key[:10])
        for i, job in enumerate(jobs, start=1)
    ]
    widths = [max(len(row[c]) for row in rows) for c in range(len(TABLE_COLUMNS))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows]
    counts = {status: sum(1 for j in jobs if statuses.get(j.key) == status)
              for status in ("done", "failed")}
    lines.append(f"pipeline {pipeline.name}: {len(jobs)} jobs, {counts['done']} done, "
                 f"{counts['failed']} failed, {len(jobs) - counts['done']} to run; ledger "
                 f"{pipeline.ledger_path}")
    return "\n".join(lines)


def _show(value, missing):
    return missing if value is None else str(value)


def format_summary(pipeline, summary):
    lines = [f"pipeline {pipeline.name}: {summary.total} jobs; {summary.done} done now, "
             f"{summary.skipped} done before, {len(summary.failed)} failed; ledger "
             f"{summary.ledger}"]
    for job, error in summary.failed[:10]:
        first_line = (error or "").strip().splitlines()[-1:] or ["unknown error"]
        lines.append(f"  failed: {job.corpus} {job.model} {job.variant} k={job.k} "
                     f"draw={job.draw} seed={job.seed}: {first_line[0]}")
    if len(summary.failed) > 10:
        lines.append(f"  ... and {len(summary.failed) - 10} more (status 'failed' in the ledger)")
    if summary.failed:
        lines.append("  re-run the same command to retry the failed jobs")
    if summary.report is not None:
        lines.append(f"report written to {summary.report}")
    if summary.report_error:
        lines.append(f"the report could not be written: {summary.report_error}")
    return "\n".join(lines)


class BatchProgress:
    """One status line on stderr: jobs done / failed / remaining and the time left."""

    def __init__(self):
        self.start = time.monotonic()

    def __call__(self, summary):
        finished = summary.done + len(summary.failed)
        remaining = summary.total - summary.skipped - finished
        elapsed = time.monotonic() - self.start
        eta = _duration(elapsed / finished * remaining) if finished else "?"
        click.echo(f"\rjobs: {summary.skipped + summary.done} done, {len(summary.failed)} "
                   f"failed, {remaining} remaining; ETA {eta}   ", nl=False, err=True)

    def finish(self):
        click.echo("", err=True)


def _duration(seconds):
    seconds = int(round(seconds))
    hours, rest = divmod(seconds, 3600)
    return f"{hours}h{rest // 60:02d}m" if hours else f"{rest // 60}m{rest % 60:02d}s"

"""``textcluster batch PIPELINE``: run a pipeline file's jobs, resumably, into its ledger."""

import itertools
import sys
import time

import click

from .._errors import InvalidInputError
from ..batch import count_jobs, iter_jobs, load_pipeline, make_executor, run_batch
from ..batch.ledger import read_statuses
from ..batch.runner import ResultNotSavedError
from ..batch.spec import CONFIRM_ABOVE
from ..report.overview import format_duration
from ..report import writer as report
from ._common import data_dir_option, user_errors

TABLE_COLUMNS = ("#", "corpus", "model", "variant", "k", "draw", "seed", "status", "key")
LISTED = 20  # jobs a dry run lists when there are more than CONFIRM_ABOVE


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
@click.option("--yes", "-y", is_flag=True,
              help=f"Run a batch of more than {CONFIRM_ABOVE:,} jobs without asking.")
@data_dir_option
@user_errors
def batch_command(pipeline_file, overrides, dry_run, n_jobs, executor, scheduler, no_report,
                  yes, data_dir):
    """Run every job of a pipeline file (corpora × models × k × draws × seeds), skipping
    the jobs its ledger already holds as done.

    The ledger is <output dir>/ledger.sqlite; a run that was interrupted, even killed,
    resumes where it stopped, and failed jobs are retried. A job whose worker process dies
    is run again (up to 3 times). Above 10,000 jobs the batch asks first (--yes: do not
    ask). The exit code is 1 when a job failed (its error is in the ledger) or a result
    could not be saved, 2 for a bad pipeline file or a damaged ledger (see `textcluster
    ledger repair`).

    \b
    Examples:
      textcluster batch pipelines/smoke.toml
      textcluster batch pipelines/gnmf_tdt2.toml --jobs 2 --dry-run
      textcluster batch pipelines/gnmf_tdt2.toml --set protocol.draws=5 --set output.dir=runs/t
      textcluster batch pipelines/gnmf_tdt2.toml --executor dask --scheduler tcp://host:8786
    """
    pipeline = load_pipeline(pipeline_file, overrides, data_dir=data_dir)
    total = count_jobs(pipeline)
    if dry_run:
        click.echo(format_jobs(pipeline, total))
        return
    if total > CONFIRM_ABOVE and not yes:
        confirm_large(pipeline, total)
    progress = BatchProgress() if sys.stderr.isatty() else None
    try:
        summary = run_batch(pipeline, make_executor(executor, n_jobs, scheduler),
                            progress=progress, report=None if no_report else report.write_report)
    except ResultNotSavedError as exc:
        raise click.ClickException(str(exc)) from None
    finally:
        if progress:
            progress.finish()
    click.echo(format_summary(pipeline, summary))
    if summary.failed or summary.report_error:
        sys.exit(1)


def confirm_large(pipeline, total):
    """Ask before running more than CONFIRM_ABOVE jobs; without a terminal, refuse."""
    what = (f"pipeline {pipeline.name} ({pipeline.source}) has {total:,} jobs, more than "
            f"{CONFIRM_ABOVE:,}")
    if not _interactive():
        raise InvalidInputError(
            f"{what}: pass --yes to run them all (an interrupted batch resumes where it "
            "stopped), or make the grid smaller; --dry-run lists the first jobs"
        )
    click.confirm(f"{what}. Run them all?", abort=True, err=True)


def _interactive():
    return sys.stdin.isatty()


def format_jobs(pipeline, total):
    """The jobs as an aligned table with their status in the ledger, and a count; above
    CONFIRM_ABOVE jobs only the first LISTED, and the ledger's counts."""
    statuses = read_statuses(pipeline.ledger_path)
    shown = total if total <= CONFIRM_ABOVE else LISTED
    jobs = list(itertools.islice(iter_jobs(pipeline), shown))
    rows = [TABLE_COLUMNS] + [
        (str(i), job.corpus, job.model, job.variant or "-", _show(job.k, "classes"),
         _show(job.draw, "-"), str(job.seed), statuses.get(job.key, "to run"), job.key[:10])
        for i, job in enumerate(jobs, start=1)
    ]
    widths = [max(len(row[c]) for row in rows) for c in range(len(TABLE_COLUMNS))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows]
    if shown < total:
        counts = {status: sum(1 for s in statuses.values() if s == status)
                  for status in ("done", "failed")}
        lines.append(f"... and {total - shown:,} more")
        lines.append(f"pipeline {pipeline.name}: {total:,} jobs (the first {shown} listed); "
                     f"the ledger holds {counts['done']:,} done and {counts['failed']:,} "
                     f"failed results; ledger {pipeline.ledger_path}")
        return "\n".join(lines)
    counts = {status: sum(1 for j in jobs if statuses.get(j.key) == status)
              for status in ("done", "failed")}
    lines.append(f"pipeline {pipeline.name}: {total:,} jobs, {counts['done']:,} done, "
                 f"{counts['failed']:,} failed, {total - counts['done']:,} to run; ledger "
                 f"{pipeline.ledger_path}")
    return "\n".join(lines)


def _show(value, missing):
    return missing if value is None else str(value)


def format_summary(pipeline, summary):
    lines = [f"pipeline {pipeline.name}: {summary.total:,} jobs; {summary.done:,} done now, "
             f"{summary.skipped:,} done before, {len(summary.failed):,} failed; ledger "
             f"{summary.ledger}"]
    if summary.retried:
        lines.append(f"  {len(summary.retried)} attempt(s) died with their worker process "
                     "and were run again (noted in the ledger)")
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
        lines.append(f"the report could not be written: {summary.report_error}\n  the results "
                     f"are safe in the ledger; once the cause is fixed, `textcluster report "
                     f"{pipeline.output}` writes it")
    return "\n".join(lines)


class BatchProgress:
    """One status line on stderr: jobs done / failed / remaining and the time left."""

    def __init__(self):
        self.start = time.monotonic()

    def __call__(self, summary):
        finished = summary.done + len(summary.failed)
        remaining = summary.total - summary.skipped - finished
        elapsed = time.monotonic() - self.start
        eta = format_duration(elapsed / finished * remaining, compact=True) if finished else "?"
        click.echo(f"\rjobs: {summary.skipped + summary.done} done, {len(summary.failed)} "
                   f"failed, {remaining} remaining; ETA {eta}   ", nl=False, err=True)

    def finish(self):
        click.echo("", err=True)

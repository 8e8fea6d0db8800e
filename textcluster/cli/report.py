"""``textcluster report LEDGER_OR_DIR``."""

import click

from ..report import write_report
from ._common import user_errors


@click.command("report")
@click.argument("ledger", metavar="LEDGER_OR_DIR", type=click.Path())
@click.option("--out", type=click.Path(file_okay=False), default=None,
              help="Folder for report.md, report.html, plots/ and tables/ "
                   "(default: report/ beside the ledger).")
@click.option("--baseline", default=None,
              help="Model (or model:variant) every other is tested against "
                   "(default: nmf if present, else the first model).")
@click.option("--metrics", default=None, metavar="NAMES",
              help="Comma-separated metrics to tabulate, e.g. accuracy,nmi "
                   "(default: every metric recorded; a name includes its _unlabeled twin).")
@user_errors
def report_command(ledger: str, out: str | None, baseline: str | None,
                   metrics: str | None) -> None:
    """Tables, significance tests, plots and CSVs from a batch run's ledger.

    LEDGER_OR_DIR is a batch output folder (holding ledger.sqlite) or the ledger file. Tables
    follow the papers' layout: rows k plus the average over k, one column per model, mean ± std
    in %; every model is compared with the baseline by a paired Wilcoxon signed-rank test.

    \b
    Examples:
      textcluster report runs/gnmf-tdt2
      textcluster report runs/gnmf-tdt2/ledger.sqlite --baseline kmeans --metrics accuracy,nmi
    """
    files = write_report(ledger, out, baseline=baseline, metrics=metrics)
    click.echo(f"{files.n_done} finished jobs, {files.n_failed} failed")
    click.echo(f"report written to {files.out_dir}: {files.markdown.name}, {files.html.name}, "
               f"{len(files.plots)} plots, {len(files.csvs)} CSV files")

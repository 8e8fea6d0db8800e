"""``textcluster nightly FILE``: tonight's clustering of a growing corpus."""

import click

from ..batch.nightly import load_nightly, run_night
from ._common import data_dir_option, user_errors


@click.command("nightly")
@click.argument("nightly_file", metavar="FILE", type=click.Path(dir_okay=False))
@click.option("--date", default=None, metavar="YYYY-MM-DD",
              help="The night to run (default: today); its outputs go to <output>/<date>/.")
@click.option("--force", is_flag=True, help="Run the night again even if it is done.")
@data_dir_option
@user_errors
def nightly_command(nightly_file, date, force, data_dir):
    """Cluster the corpus of a nightly file (e.g. pipelines/nightly.toml) for one night.

    mode = "refit" fits the model again and renumbers its clusters to match the previous
    night's; mode = "assign" places every document with the model fitted the first night.
    A night already done is not run again, so a scheduler may retry it.

    \b
    Example (cron, every night at 02:00):
      0 2 * * * cd /srv/clusters && .venv/bin/textcluster nightly pipelines/nightly.toml
    """
    night = run_night(load_nightly(nightly_file, data_dir=data_dir), date=date, force=force)
    if night.skipped:
        click.echo(f"night {night.date} was done before: {night.folder} (--force runs it "
                   f"again)")
        return
    record = night.record
    line = f"night {night.date}: {record['n_docs']:,} documents"
    if "new_documents" in record:
        line += f" ({record['new_documents']:,} new since {record['previous']})"
    click.echo(f"{line}, {record['mode']} → {night.folder}")
    if "alignment" in record:
        click.echo(record["alignment"])

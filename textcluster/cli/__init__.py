"""The ``textcluster`` command line: thin click commands over the library."""

import click

from .. import __version__
from .assign import assign_command
from .batch import batch_command
from .cache import cache_group
from .corpora import corpora_group
from .ledger import ledger_group
from .models import models_command
from .nightly import nightly_command
from .report import report_command
from .run import run_command


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="textcluster")
def main():
    """Cluster text corpora with NMF, GNMF and their relatives, and evaluate the clusters.

    \b
    Example:
      textcluster run tdt2 --model gnmf --out runs/tdt2-gnmf
    """


main.add_command(run_command)
main.add_command(assign_command)
main.add_command(models_command)
main.add_command(batch_command)
main.add_command(nightly_command)
main.add_command(report_command)
main.add_command(corpora_group)
main.add_command(cache_group)
main.add_command(ledger_group)

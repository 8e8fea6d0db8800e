"""The ``textcluster`` command line: thin click commands over the library."""

import click

from .. import __version__
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

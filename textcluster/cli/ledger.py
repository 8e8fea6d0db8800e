"""``textcluster ledger check|repair LEDGER_OR_DIR``: check a ledger, salvage a damaged one."""

import click

from ..batch.ledger import LISTED_KEYS, check_ledger, repair_ledger
from ._common import user_errors


@click.group("ledger")
def ledger_group() -> None:
    """Check a batch run's ledger, or salvage the results of a damaged one.

    LEDGER_OR_DIR is a batch output folder (holding ledger.sqlite) or the ledger file.
    """


@ledger_group.command("check")
@click.argument("ledger", metavar="LEDGER_OR_DIR", type=click.Path())
@user_errors
def check_command(ledger: str) -> None:
    """Check the ledger (SQLite's integrity check and every result's checksum).

    The exit code is 2 when it is damaged; the message says how many results can be read.
    """
    check = check_ledger(ledger)
    click.echo(f"the ledger {check.path} is intact: {check.results:,} results "
               f"({check.done:,} done); checked in {check.seconds:.2f} s")


@ledger_group.command("repair")
@click.argument("ledger", metavar="LEDGER_OR_DIR", type=click.Path())
@user_errors
def repair_command(ledger: str) -> None:
    """Copy every intact result of a damaged ledger into a new ledger at the same place.

    The damaged file is kept beside it (<name>.damaged-<time>), never deleted; the results
    that could not be salvaged are named, and the next `textcluster batch` run redoes them.
    An intact ledger is left alone.

    \b
    Example:
      textcluster ledger repair runs/gnmf-tdt2
    """
    repair = repair_ledger(ledger)
    if repair.intact:
        click.echo(f"the ledger {repair.path} is intact ({repair.salvaged:,} results); "
                   "nothing to repair")
        return
    lines = [f"salvaged {repair.salvaged:,} results into a new ledger {repair.path}; the "
             f"damaged file is kept as {repair.kept}"]
    keys = repair.lost_keys
    if keys:
        more = f" and {len(keys) - LISTED_KEYS:,} more" if len(keys) > LISTED_KEYS else ""
        lines.append(f"{len(keys):,} results were lost: {', '.join(keys[:LISTED_KEYS])}{more} "
                     "(all are listed in the new ledger's meta table, key 'repaired')")
    if not repair.complete:
        lines.append("parts of the damaged file could not be read at all, so more results "
                     "may be lost than are named")
    if keys or not repair.complete:
        lines.append("run the batch again (textcluster batch PIPELINE) to redo the lost jobs")
    click.echo("\n".join(lines))

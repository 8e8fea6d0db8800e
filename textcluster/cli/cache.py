"""``textcluster cache info | clear``."""

import datetime

import click

from ..corpora import cache
from ._common import user_errors


@click.group("cache")
def cache_group():
    """Show or clear the cache of parsed corpora and term counts.

    A second run on the same corpus files with the same options reads the parsed corpus and
    its term counts from the cache instead of parsing and tokenizing again. The cache lives in
    $TEXTCLUSTER_CACHE, else ~/.cache/textcluster/cache; TEXTCLUSTER_CACHE=off turns it off.

    \b
    Examples:
      textcluster cache info
      textcluster cache clear --stale
    """


@cache_group.command("info")
@user_errors
def info_command():
    """Where the cache is, and what it holds (newest first)."""
    state = "on" if cache.is_enabled() else f"off (${cache.CACHE_ENV}=off)"
    entries = cache.entries()
    total = sum(e.size for e in entries)
    stale = [e for e in entries if e.stale]
    click.echo(f"cache: {cache.location()} (caching {state})")
    click.echo(f"{len(entries)} entries, {_megabytes(total)}"
               + (f"; {len(stale)} stale (built by other versions; `textcluster cache clear "
                  f"--stale` removes them)" if stale else ""))
    for entry in entries:
        when = datetime.datetime.fromtimestamp(entry.modified).strftime("%Y-%m-%d %H:%M")
        mark = "  stale" if entry.stale else ""
        click.echo(f"  {entry.kind:<7} {when}  {_megabytes(entry.size):>9}  {entry.summary}"
                   f"{mark}")


@cache_group.command("clear")
@click.option("--stale", is_flag=True,
              help="Remove only entries built by other versions of textcluster or its "
                   "libraries (they are never read again).")
@user_errors
def clear_command(stale):
    """Remove every cache entry (or only the stale ones)."""
    removed, freed = cache.clear(stale_only=stale)
    click.echo(f"removed {removed} entries ({_megabytes(freed)}) from {cache.location()}")


def _megabytes(size):
    return f"{size / 1e6:.1f} MB"

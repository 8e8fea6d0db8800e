"""``textcluster corpora list | info NAME | fetch NAME``."""

import textwrap

import click

from ..corpora import cards, fetch
from .. import pipeline
from .._errors import CorpusFormatError, TextclusterError
from ..corpora.loaders._paths import search_dirs
from ._common import ProgressBar, data_dir_option, user_errors

TOP_CLASSES = 8


@click.group("corpora")
def corpora_group():
    """List, describe and download the built-in corpora.

    \b
    Examples:
      textcluster corpora list
      textcluster corpora info reuters --data-dir ../shared/data
      textcluster corpora fetch tdt2
    """


@corpora_group.command("list")
@data_dir_option
@user_errors
def list_command(data_dir):
    """Every corpus with a card, and whether its files are present locally.

    \b
    Example:
      textcluster corpora list --data-dir ../shared/data
    """
    rows = [("name", "title", "present", "where")]
    for card in cards.load_cards().values():
        folder = card.locate(data_dir)
        rows.append((card.name, card.title, "yes" if folder else "no",
                     str(folder) if folder else "-"))
    click.echo(format_rows(rows))


def format_rows(rows):
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    return "\n".join("  ".join([*(cell.ljust(w) for cell, w in zip(row, widths)), row[-1]])
                     .rstrip() for row in rows)


@corpora_group.command("info")
@click.argument("name")
@click.option("--stats/--no-stats", default=True, show_default=True,
              help="Load the corpus (cached) to report documents, terms and classes.")
@click.option("--verify", is_flag=True, help="Check the local files against the card's sha256.")
@data_dir_option
@user_errors
def info_command(name, stats, verify, data_dir):
    """The card of corpus NAME, and statistics when its files are present.

    The statistics come from loading the corpus with its default selection and preprocessing,
    as `textcluster run NAME` does (documents left empty are counted, not an error); both are
    cached, so only the first call is slow.

    \b
    Examples:
      textcluster corpora info tdt2
      textcluster corpora info reuters --verify --data-dir ../shared/data
    """
    card = cards.get_card(name)
    folder = card.locate(data_dir)
    click.echo(describe(card))
    click.echo(describe_files(card, folder, data_dir))
    if verify and folder:
        verify_files(card, folder)
    if stats and folder:
        click.echo(statistics(name, data_dir))


def describe(card):
    """The card as text."""
    lines = [f"{card.name}: {card.title}", "", _wrap(card.description), ""]
    lines += [_field("labels", card.labels), _field("homepage", card.homepage),
              _field("licence", card.licence), _field("citation", card.citation)]
    for source in card.sources:
        digest = _source_checksum(card, source)
        note = f"; {source.note}" if source.note else ""
        lines.append(_field("source", f"{source.url} ({digest}{note})"))
    if not card.sources:
        lines.append(_field("source", "no download reproduces the files (see the description "
                                      "and the homepage)"))
    if card.checksums:
        lines.append(_field("checksums", card.checksums))
    selection = ", ".join(f"{k}={v}" for k, v in card.selection.items()) or "everything"
    lines.append(_field("selection", f"{selection} (change with --set NAME=VALUE)"))
    preprocessing = ", ".join(f"{k}={v}" for k, v in card.preprocessing.items())
    lines.append(_field("preprocess", preprocessing))
    if card.preprocessing_note:
        lines.append(_field("", card.preprocessing_note))
    return "\n".join(lines)


def _source_checksum(card, source):
    if source.sha256:
        return f"sha256 {source.sha256}"
    expected = card.expected_sha256(source.filename)
    if expected and expected[1]:
        return f"checked against the sha256 of {expected[0]}"
    return "sha256 unknown"


def describe_files(card, folder, data_dir):
    """Where the files are, or where they were looked for and how to get them."""
    if folder is None:
        looked = "; ".join(str(base / card.folder) for base in search_dirs(data_dir))
        get = (f"download them with: textcluster corpora fetch {card.name}" if card.sources
               else f"put {', '.join(card.files)} into one of these folders by hand")
        return "\n".join([
            _field("files", f"not present locally (looked in: {looked})"),
            _field("", get),
        ])
    present = card.present_files(folder)
    missing = [name for name in card.optional_files if name not in present]
    text = f"present in {folder} ({len(present)} of {len(card.all_files)} files"
    text += f"; optional files missing: {', '.join(missing)})" if missing else ")"
    return _field("files", text)


def verify_files(card, folder):
    """Check every present file with a known sha256; a mismatch ends with exit code 2."""
    bad = []
    for name, path in sorted(card.present_files(folder).items()):
        expected = card.all_files[name]
        if expected is None:
            click.echo(f"  {path.name}: sha256 unknown, not checked")
            continue
        compressed = path.name != name
        ok = cards.file_sha256(path, decompress=compressed) == expected
        click.echo(f"  {path.name}: {'ok' if ok else 'MISMATCH'}"
                   f"{' (decompressed content)' if compressed else ''}")
        bad += [] if ok else [path.name]
    if bad:
        raise CorpusFormatError(
            f"{len(bad)} file(s) in {folder} differ from the corpus card: {', '.join(bad)}. "
            f"Remove them and run `textcluster corpora fetch {card.name}`."
        )


def statistics(name, data_dir):
    """Documents, terms, non-zeros and classes under the default selection and preprocessing
    (rows the loader already weighted are only scaled to unit length, as in a run)."""
    try:
        corpus = pipeline.load_corpus(name, data_dir=data_dir)
        weighting = {"weighting": "tf"} if corpus.metadata.get("weighted") else {}
        with ProgressBar("preprocessing", corpus.n_docs):
            rep = pipeline.represent(corpus, empty_documents="drop", **weighting)
    except TextclusterError as exc:
        return _field("statistics", f"not available: {exc}")
    X, sizes = rep.X, rep.corpus.class_sizes
    lines = ["statistics (default selection and preprocessing):",
             f"  documents   {X.shape[0]:,}" + (f" ({len(rep.dropped_docs):,} more left empty "
                                                f"by preprocessing)" if rep.dropped_docs else ""),
             f"  terms       {X.shape[1]:,}",
             f"  non-zeros   {X.nnz:,} ({X.nnz / max(X.shape[0], 1):.1f} per document)"]
    if sizes:
        shown = ", ".join(f"{label} {count:,}" for label, count in
                          list(sizes.items())[:TOP_CLASSES])
        more = " …" if len(sizes) > TOP_CLASSES else ""
        lines += [f"  classes     {len(sizes):,}", f"  largest     {shown}{more}",
                  f"  smallest    {_documents(min(sizes.values()))}"]
    else:
        lines.append("  classes     none (unlabelled)")
    return "\n".join(lines)


def _documents(n):
    return f"{n:,} document{'' if n == 1 else 's'}"


def _field(name, text):
    label = f"{name}:" if name else ""
    return textwrap.fill(" ".join(text.split()), width=96, initial_indent=f"{label:<12}",
                         subsequent_indent=" " * 12, break_long_words=False,
                         break_on_hyphens=False)


def _wrap(text):
    return textwrap.fill(" ".join(text.split()), width=96)


@corpora_group.command("fetch")
@click.argument("name")
@click.option("--force", is_flag=True, help="Download again even when the files are present.")
@data_dir_option
@user_errors
def fetch_command(name, force, data_dir):
    """Download corpus NAME from the URLs on its card, verify and unpack it.

    The files go to <data folder>/<corpus folder>: --data-dir, else $TEXTCLUSTER_DATA, else
    the default data folder. Each download is checked against the card's sha256 where it is
    known; a file that does not match is removed (exit code 2), and files the card has no
    sha256 for are listed as not verified. A download shorter than announced, an archive
    holding links, absolute or '..' paths, or unpacking to more than 256 MiB or 10,000 files
    ($TEXTCLUSTER_MAX_UNPACKED_MIB, $TEXTCLUSTER_MAX_MEMBERS) is refused and nothing is
    installed.

    \b
    Examples:
      textcluster corpora fetch tdt2
      textcluster corpora fetch reuters --data-dir ~/corpora
    """
    card = cards.get_card(name)
    report = fetch.fetch_corpus(card, data_dir=data_dir, force=force, progress=ProgressBar)
    if report.already_present:
        click.echo(f"{card.name} is already present in {report.folder} (--force downloads "
                   f"it again)")
        return
    for url in report.downloaded:
        click.echo(f"downloaded {url}")
    click.echo(f"{card.name}: {len(report.installed)} file(s) installed in {report.folder}; "
               f"{len(report.verified)} verified against the sha256 on the card")
    if report.unverified:
        click.echo(f"not verified (no sha256 on the card): {', '.join(report.unverified)}")


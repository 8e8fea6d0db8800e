"""Corpus cards: what each built-in corpus is, where to download it and which files it needs.

One TOML file per corpus in the project's ``corpora/`` folder (its README lists the fields).
A card names the corpus' folder under the data folder, the files its loader reads with their
sha256 where known (of the bytes as the source distributes them; a compressed copy such as
``reut2-000.sgm.gz`` is checked after decompressing), the download URLs, the licence and
citation, and the loader's default selection and preprocessing.
"""

import bz2
import functools
import gzip
import hashlib
import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import urlparse

from .._errors import CorpusFormatError
from .loaders._paths import StrPath, search_dirs
from ..registry import UnknownNameError

CARDS_DIR = Path(__file__).resolve().parents[2] / "corpora"
DECOMPRESSORS: dict[str, Callable[..., Any]] = {"gz": gzip.open, "bz2": bz2.open}
ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".tar.bz2", ".tar.xz", ".tar", ".zip")

_SHA256 = re.compile(r"[0-9a-f]{64}")
_TEXT_FIELDS = ("name", "title", "description", "homepage", "folder", "labels", "licence",
                "citation")
_OPTIONAL_TEXT_FIELDS = ("checksums", "preprocessing_note")
_TABLE_FIELDS = ("files", "optional_files", "selection", "preprocessing")
_FIELDS = {*_TEXT_FIELDS, *_OPTIONAL_TEXT_FIELDS, *_TABLE_FIELDS, "labelled", "compression",
           "sources"}
_SOURCE_FIELDS = {"url", "sha256", "save_as", "note"}


@dataclass(frozen=True)
class Source:
    """One download: a URL, the name it is saved as, and its sha256 when known."""

    url: str
    filename: str
    sha256: str | None = None
    note: str = ""

    @property
    def is_archive(self) -> bool:
        return self.filename.lower().endswith(ARCHIVE_SUFFIXES)


@dataclass(frozen=True)
class Card:
    """A parsed corpus card (see ``corpora/README.md`` for the fields)."""

    name: str
    title: str
    description: str
    homepage: str
    folder: str
    labels: str
    labelled: bool
    licence: str
    citation: str
    sources: tuple[Source, ...]  # empty when no download reproduces the files
    # file name -> sha256 (None when unknown): the files the default loader needs, and those
    # read only by some options (TDT2_all.mat) or only when present
    files: dict[str, str | None]
    optional_files: dict[str, str | None]
    compression: tuple[str, ...]  # compressed twins the loader also reads: ("gz",) -> name.gz
    selection: dict
    preprocessing: dict
    checksums: str = ""
    preprocessing_note: str = ""
    path: Path | None = None

    @property
    def all_files(self) -> dict[str, str | None]:
        return {**self.files, **self.optional_files}

    def candidates(self, name: str) -> list[str]:
        """The names under which file ``name`` may be stored: itself, then its compressed
        twins."""
        return [name, *(f"{name}.{suffix}" for suffix in self.compression)]

    def find_file(self, folder: Path, name: str) -> Path | None:
        """``folder``'s copy of file ``name`` (plain or compressed), or ``None``."""
        return next((folder / c for c in self.candidates(name) if (folder / c).is_file()), None)

    def present_files(self, folder: Path) -> dict[str, Path]:
        """``{name: path}`` of the card's files found in ``folder``."""
        found = {name: self.find_file(folder, name) for name in self.all_files}
        return {name: path for name, path in found.items() if path is not None}

    def is_complete(self, folder: StrPath) -> bool:
        return Path(folder).is_dir() and all(self.find_file(Path(folder), n) for n in self.files)

    def locate(self, data_dir: StrPath | None = None) -> Path | None:
        """The first ``<data folder>/<card folder>`` holding every required file, or ``None``."""
        return next((base / self.folder for base in search_dirs(data_dir)
                     if self.is_complete(base / self.folder)), None)

    def expected_sha256(self, filename: str) -> tuple[str, str | None, bool] | None:
        """``(card file name, sha256 or None, compressed?)`` for a stored or downloaded
        ``filename`` (``reut2-000.sgm.gz`` -> the checksum of ``reut2-000.sgm``'s content),
        or ``None`` when the card does not list it."""
        for name, digest in self.all_files.items():
            if filename == name:
                return name, digest, False
            if filename in self.candidates(name):
                return name, digest, True
        return None

    def verify_file(self, path: Path, filename: str, origin: str) -> None:
        """Check ``path`` (stored as ``filename``, from ``origin``) against the card's sha256,
        when it has one; a mismatch raises :class:`CorpusFormatError`."""
        expected = self.expected_sha256(filename)
        if expected and expected[1]:
            check_sha256(path, expected[1], f"{filename} from {origin}", decompress=expected[2])


def file_sha256(path: StrPath, decompress: bool = False) -> str:
    """sha256 of the bytes of ``path``, or of its decompressed content (``.gz``/``.bz2``)."""
    if not decompress and Path(path).stat().st_size <= 1 << 20:  # small: one read is faster
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    opener = DECOMPRESSORS[Path(path).suffix.lstrip(".")] if decompress else open
    digest = hashlib.sha256()
    with opener(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def check_sha256(path: StrPath, expected: str, what: str, decompress: bool = False) -> None:
    """Raise :class:`CorpusFormatError` when the sha256 of ``path`` is not ``expected``."""
    actual = file_sha256(path, decompress=decompress)
    if actual != expected:
        raise CorpusFormatError(
            f"checksum mismatch for {what}: sha256 {actual}, expected {expected}. The file was "
            f"not installed. The download may be corrupt or the source may have changed: try "
            f"again, or check the file by hand."
        )


def base_name(corpus_name: str) -> str:
    """The corpus part of a corpus name: ``"citeulike-t:tags"`` -> ``"citeulike-t"``."""
    return str(corpus_name).split(":", 1)[0]


def _card_of(cards, name):
    """The card named ``name`` (``cluto:tr31`` has its own), else its corpus' card
    (``citeulike-t:tags`` has citeulike-t's), else ``None``."""
    return cards.get(str(name)) or cards.get(base_name(name))


def load_cards(folder: StrPath | None = None) -> dict[str, Card]:
    """``{name: Card}`` for every ``*.toml`` card in ``folder`` (default: :data:`CARDS_DIR`)."""
    return _load_cards(Path(folder or CARDS_DIR))


@functools.cache
def _load_cards(folder):
    cards = {}
    for path in sorted(folder.glob("*.toml")):
        card = load_card(path)
        if card.name in cards:
            raise CorpusFormatError(f"{path}: corpus {card.name!r} already has the card "
                                    f"{cards[card.name].path}")
        cards[card.name] = card
    return dict(sorted(cards.items()))


def get_card(name: str, folder: StrPath | None = None) -> Card:
    """The card of corpus ``name`` (a view such as ``citeulike-t:tags`` has its corpus' card)."""
    cards = load_cards(folder)
    card = _card_of(cards, name)
    if card is None:
        raise UnknownNameError(
            f"no corpus card {name!r}; the corpora with cards are: {', '.join(sorted(cards))}"
        )
    return card


def find_card(name: str, folder: StrPath | None = None) -> Card | None:
    """The card of ``name``, or ``None`` (a folder path, or a corpus registered without one)."""
    return _card_of(load_cards(folder), name)


def load_card(path: StrPath) -> Card:
    """Parse and check one card file; a bad card raises :class:`CorpusFormatError` naming the
    file and the field."""
    path = Path(path)
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise CorpusFormatError(f"corpus card {path} is not valid TOML: {exc}") from None
    check = functools.partial(_fail, path)
    _check_fields(raw, check)
    return Card(
        name=raw["name"], title=raw["title"], description=raw["description"].strip(),
        homepage=raw["homepage"], folder=raw["folder"], labels=raw["labels"],
        labelled=raw["labelled"], licence=raw["licence"], citation=raw["citation"].strip(),
        sources=tuple(_source(s, i, check) for i, s in enumerate(raw["sources"])),
        files=_checksums(raw["files"], "files", check),
        optional_files=_checksums(raw.get("optional_files", {}), "optional_files", check),
        compression=tuple(raw.get("compression", [])), selection=dict(raw.get("selection", {})),
        preprocessing=dict(raw.get("preprocessing", {})),
        checksums=raw.get("checksums", "").strip(),
        preprocessing_note=raw.get("preprocessing_note", "").strip(), path=path,
    )


def _check_fields(raw, check):
    """The card's fields are known, present and of the right type (sources and checksums are
    checked as they are read)."""
    unknown = sorted(set(raw) - _FIELDS)
    if unknown:
        check(unknown[0], f"is not a card field (the fields are: {', '.join(sorted(_FIELDS))})")
    for key in _TEXT_FIELDS + tuple(k for k in _OPTIONAL_TEXT_FIELDS if k in raw):
        if not isinstance(raw.get(key), str) or not raw[key].strip():
            check(key, "must be a non-empty string")
    if not isinstance(raw.get("labelled"), bool):
        check("labelled", "must be true or false")
    _check_folder(raw["folder"], check)
    for key in _TABLE_FIELDS:
        if not isinstance(raw.get(key, {}), dict):
            check(key, "must be a table")
    if not raw.get("files"):
        check("files", "must list at least one file")
    compression = raw.get("compression", [])
    if not isinstance(compression, list) or not set(compression) <= set(DECOMPRESSORS):
        check("compression", f"must be a list drawn from {sorted(DECOMPRESSORS)}")
    if not isinstance(raw.get("sources"), list):
        check("sources", "must list the downloads as [[sources]] tables with a url, or be "
                         "sources = [] when no download reproduces the files")


def _fail(path, field, problem):
    raise CorpusFormatError(f"corpus card {path}: {field!r} {problem}")


def _check_folder(folder, check):
    parts = PurePosixPath(folder).parts
    if folder.startswith("/") or ".." in parts or "\\" in folder or not parts:
        check("folder", f"must be a relative path inside the data folder, got {folder!r}")


def _source(entry, index, check):
    field = f"sources[{index}]"
    if not isinstance(entry, dict) or not isinstance(entry.get("url"), str):
        check(field, "must be a table with a url")
    unknown = sorted(set(entry) - _SOURCE_FIELDS)
    if unknown:
        check(f"{field}.{unknown[0]}",
              f"is not a source field ({', '.join(sorted(_SOURCE_FIELDS))})")
    url = urlparse(entry["url"])
    if url.scheme not in ("http", "https", "file") or not url.path:
        check(f"{field}.url", f"must be an http(s) or file URL, got {entry['url']!r}")
    filename = entry.get("save_as") or PurePosixPath(url.path).name
    if not filename or "/" in filename or filename.startswith("."):
        check(f"{field}.save_as", f"must be a plain file name, got {filename!r}")
    return Source(url=entry["url"], filename=filename,
                  sha256=_digest(entry.get("sha256", ""), f"{field}.sha256", check),
                  note=entry.get("note", ""))


def _checksums(table, field, check):
    result = {}
    for name, digest in table.items():
        if "/" in name or name.startswith(".") or not name:
            check(f"{field}.{name}", "must be a plain file name")
        result[name] = _digest(digest, f"{field}.{name}", check)
    return result


def _digest(value, field, check):
    """A lower-case sha256, or ``None`` for ``""`` (unknown)."""
    if value == "":
        return None
    if not isinstance(value, str) or not _SHA256.fullmatch(value.lower()):
        check(field, f"must be a sha256 (64 hex digits) or \"\" when unknown, got {value!r}")
    return value.lower()

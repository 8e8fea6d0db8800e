"""Reading corpus files: a file or its ``.gz`` twin, and its lines decoded as UTF-8 or else
Latin-1 (every byte maps to a character); and how a loader declares the files it reads."""

import gzip
import zlib
from pathlib import Path

from ..._errors import CorpusFormatError, DataNotFoundError

MAX_INDEX = 2**31 - 1  # the most documents, terms or non-zeros a corpus file may declare


def reads(source_files):
    """Declare the files a loader reads: ``source_files(data_dir=..., **options)`` takes the
    loader's arguments and returns those paths. The loader finds its files through it, and
    the cache of parsed corpora keys an entry on the content of exactly these files (so a file
    added to a corpus folder is seen by the next run)."""
    def declare(loader):
        loader.source_files = source_files
        return loader
    return declare


def has_file(folder: Path, name: str) -> bool:
    """Whether ``folder`` holds ``name`` or ``name.gz``."""
    return any((folder / candidate).is_file() for candidate in (name, name + ".gz"))


def find_file(folder: Path, name: str) -> Path:
    """``folder/name``, else ``folder/name.gz``."""
    for candidate in (folder / name, folder / (name + ".gz")):
        if candidate.is_file():
            return candidate
    raise DataNotFoundError(f"{folder} has no {name} or {name}.gz")


def read_lines(path: Path) -> list[str]:
    """The lines of a (gzip-compressed) text file, decoded as UTF-8 or else Latin-1."""
    try:
        data = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    except (OSError, EOFError, zlib.error) as exc:
        raise CorpusFormatError(
            f"{path} is not a readable gzip file ({exc}); it is probably truncated or corrupt: "
            f"re-download it"
        ) from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        text = data.decode("latin-1")
    return text.splitlines()

"""A folder of plain-text documents: one ``.txt`` file per document.

``corpus/<class>/<doc>.txt`` gives labelled documents (the sub-folder is the class);
``corpus/<doc>.txt`` gives unlabelled ones. A folder without ``.txt`` files is read from its
files without an extension instead, the layout of 20 Newsgroups (``<group>/<number>``);
``pattern`` chooses other files. ``strip_headers=True`` drops the header block that e-mail and
Usenet posts begin with (``From:``, ``Subject:``, ``Newsgroups:`` … up to the first blank
line; 20 Newsgroups' ``Newsgroups:`` line names the class). Files are read as UTF-8; a file
that is not valid UTF-8 is decoded as Latin-1 instead (every byte maps to a character), and
its name is listed in ``metadata["latin1_fallback"]``. Hidden files and folders (names
starting with ``.``) are skipped. A folder without matching files is an error that says what
the folder holds instead (a table file is loaded by giving its path, see
:mod:`textcluster.corpora.loaders.table`).
"""

import re
from pathlib import Path

import numpy as np

from ..._errors import CorpusFormatError, DataNotFoundError, InvalidInputError
from ..corpus import Corpus
from ._files import reads
from ._paths import StrPath
from .table import table_format


def folder_files(path: StrPath, pattern: str | None = None, **_options: object) -> list[Path]:
    """The files :func:`load_folder` reads: those matching ``pattern`` at the top of ``path``
    and in its sub-folders (one level), hidden ones left out; by default (None) the ``.txt``
    files, or where there are none the files without an extension."""
    if pattern is not None and (not isinstance(pattern, str) or not pattern):
        raise InvalidInputError(f"pattern must be a file-name pattern such as '*.txt', got "
                                f"{pattern!r}")
    root = Path(path)
    if not root.is_dir():
        raise DataNotFoundError(f"corpus folder {root} does not exist or is not a folder")
    if pattern is not None:
        return _two_levels(root, pattern)
    return _two_levels(root, "*.txt") or [p for p in _two_levels(root, "*") if not p.suffix]


@reads(folder_files)
def load_folder(path: StrPath, pattern: str | None = None, min_class_size: int | None = None,
                top: int | None = None, strip_headers: bool = False) -> Corpus:
    """Load the documents under ``path`` (see the module docstring)."""
    if not isinstance(strip_headers, bool):
        raise InvalidInputError(f"strip_headers must be true or false, got {strip_headers!r}")
    root = Path(path)
    files = folder_files(root, pattern)
    nested = [p for p in files if len(p.relative_to(root).parts) > 1]
    if nested and len(nested) < len(files):
        raise CorpusFormatError(
            f"{root} has documents both at its top level and in sub-folders; put every "
            f"document in a class sub-folder (labelled) or all at the top level (unlabelled)"
        )
    if not files:
        wanted = (f"{pattern} files" if pattern else ".txt files (nor files without an "
                  "extension)")
        raise CorpusFormatError(f"no {wanted} in {root} or its sub-folders"
                                f"{_other_files_hint(root)}")
    read, fallback = zip(*(_read_text(p) for p in files))
    texts = [without_headers(text) for text in read] if strip_headers else list(read)
    corpus = Corpus(
        name=root.resolve().name,
        ids=np.array([p.relative_to(root).with_suffix("").as_posix() for p in files]),
        labels=np.array([p.parent.name for p in files]) if nested else None,
        texts=texts,
        metadata={"source": str(root), "pattern": pattern or ("*.txt" if files[0].suffix
                                                              else "no extension"),
                  "latin1_fallback": [str(p) for p, f in zip(files, fallback) if f],
                  "strip_headers": strip_headers},
    )
    return corpus.select_classes(min_class_size=min_class_size, top=top)


# a header field's first line: a name of printable ASCII but ':' and space, then ':'
_HEADER_FIELD = re.compile(r"[!-9;-~]+:")


def without_headers(text: str) -> str:
    """``text`` without the header block it begins with, as e-mail and Usenet posts do: lines
    ``Name: value`` (and their indented continuation lines) up to the first blank line. A text
    that does not begin so is returned as it is."""
    lines = text.splitlines()
    if not lines or not _HEADER_FIELD.match(lines[0]):
        return text
    for i, line in enumerate(lines):
        if not line.strip():
            return "\n".join(lines[i + 1:])
        if not (_HEADER_FIELD.match(line) or line[:1] in (" ", "\t")):
            return text  # not a header block after all
    return ""  # headers only


def _two_levels(root, pattern):
    """Files matching ``pattern`` at the top of ``root`` and in its sub-folders, sorted."""
    return sorted({*_documents(root, pattern), *_documents(root, f"*/{pattern}")})


def _documents(root, pattern):
    """Files matching ``pattern`` under ``root``, sorted; hidden files and folders (``.*``,
    e.g. ``.ipynb_checkpoints/`` or macOS ``._name.txt``) are left out."""
    return sorted(p for p in root.glob(pattern) if p.is_file()
                  and not any(part.startswith(".") for part in p.relative_to(root).parts))


def _other_files_hint(root):
    """A hint for a folder holding tables, documents deeper down or other files instead."""
    tables = sorted(p.name for p in root.iterdir()
                    if p.is_file() and table_format(p.name) not in (None, "lines"))
    if tables:
        return (f"; it holds {', '.join(tables[:3])}{' …' if len(tables) > 3 else ''}: give "
                f"the path of a table file to load its rows as documents")
    files = [p for p in root.rglob("*") if p.is_file()
             and not any(part.startswith(".") for part in p.relative_to(root).parts)]
    deep = sorted({p.relative_to(root).parts[0] for p in files
                   if len(p.relative_to(root).parts) > 2})
    if deep:
        return (f"; its documents lie deeper, in sub-folders of {', '.join(deep[:3])}"
                f"{' …' if len(deep) > 3 else ''}: give the path of one of those folders")
    suffixes = sorted({p.suffix for p in files if p.suffix})
    if suffixes:
        return (f"; it holds {', '.join(suffixes[:5])} files: choose them with --set "
                f"pattern='*{suffixes[0]}'")
    return " (the folder is empty)"


def _read_text(path):
    """``(text, used_fallback)``: UTF-8 (BOM allowed), else Latin-1."""
    data = path.read_bytes()
    try:
        return data.decode("utf-8-sig"), False
    except UnicodeDecodeError:
        return data.decode("latin-1"), True

"""LIBSVM / SVMlight multiclass files, and the SECTOR corpus in that format.

A line is ``<class> <index>:<value> <index>:<value> ...`` (indices 1-based and increasing,
``#`` starts a comment); files may be ``.bz2``- or ``.gz``-compressed. scikit-learn's
``load_svmlight_files`` does the parsing; when it refuses a file, the file is scanned again line
by line to name the first line that does not parse.

SECTOR (Industry Sector, McCallum's corporate web pages, 105 classes, 55,197 features) is read
from the LIBSVM site's ``sector.scale`` (6,412 training documents) and ``sector.t.scale``
(3,207 test documents), whose rows are already tf-idf weighted and of unit length. Paper 000
(Pei, Wu & Chen 2014, §V-A) keeps the classes with at least 50 documents.
"""

import bz2
import gzip
import zlib
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from sklearn.datasets import load_svmlight_files

from ..._errors import CorpusFormatError, DataNotFoundError, InvalidInputError
from ..corpus import Corpus
from ._files import MAX_INDEX, reads
from ._paths import StrPath, find_corpus_dir

SECTOR_SOURCE = "https://www.csie.ntu.edu.tw/~cjlin/libsvmtools/datasets/multiclass.html#sector"
SECTOR_FILES = {"train": "sector.scale", "test": "sector.t.scale"}
SPLITS = ("all", "train", "test")

# What reading a damaged compressed file raises.
_STREAM_ERRORS = (OSError, EOFError, zlib.error)
_OPENERS = {".bz2": bz2.open, ".gz": gzip.open}


def sector_files(data_dir: StrPath | None, split: str, **_options: object) -> list[Path]:
    """The files :func:`load_sector` reads for ``split``."""
    if split not in SPLITS:
        raise InvalidInputError(f"unknown SECTOR split {split!r}; allowed: {', '.join(SPLITS)}")
    parts = ["train", "test"] if split == "all" else [split]
    folder = find_corpus_dir("sector", [f"{SECTOR_FILES[p]}*" for p in parts], data_dir,
                             source=SECTOR_SOURCE)
    return [_pick(folder, SECTOR_FILES[p]) for p in parts]


@reads(sector_files)
def load_sector(data_dir: StrPath | None = None, split: str = "all",
                min_class_size: int | None = 50, top: int | None = None) -> Corpus:
    """SECTOR from ``<data_dir>/sector/sector.scale[.bz2]`` and ``sector.t.scale[.bz2]``.

    ``split``: ``"all"`` (training then test documents, the default), ``"train"`` or
    ``"test"``. Classes with fewer than ``min_class_size`` documents are dropped (default 50,
    paper 000's selection; ``None`` keeps all 105), then the ``top`` largest are kept. The values
    are kept as they are (``metadata["weighted"]``): a run only scales rows to unit length
    unless a tf-idf ``weighting`` is asked for. Ids are ``train-<row>`` / ``test-<row>``.
    """
    paths = sector_files(data_dir, split)
    parts = ["train", "test"] if split == "all" else [split]
    corpus = load_libsvm(paths, name="sector", parts=parts, source=SECTOR_SOURCE)
    corpus.metadata.update(split=split, min_class_size=min_class_size, top=top)
    return corpus.select_classes(min_class_size=min_class_size, top=top)


def _pick(folder, name):
    """``folder/name``, else its compressed twin."""
    for candidate in [name, *(name + suffix for suffix in _OPENERS)]:
        if (folder / candidate).is_file():
            return folder / candidate
    raise DataNotFoundError(f"no {name} or {name}.bz2 in {folder}; see {SECTOR_SOURCE}")


def load_libsvm(paths: Iterable[StrPath], name: str | None = None,
                parts: list[str] | None = None, source: str | None = None) -> Corpus:
    """A matrix corpus from LIBSVM multiclass files sharing one feature space.

    Rows of all files are stacked in order; ids are ``<part>-<row>`` (``parts`` default to the
    file names). Class numbers become the labels (``"3"``, not ``"3.0"``). Values must be finite
    and non-negative (NMF needs non-negative data); they are kept as ``metadata["weighted"]``.
    """
    files = [Path(p) for p in paths]
    parts = parts or [p.name for p in files]
    try:
        loaded = load_svmlight_files([str(p) for p in files], zero_based=False,
                                     dtype=np.float64)
    except _STREAM_ERRORS as exc:
        raise _unreadable(files, exc, source) from None
    except (ValueError, OverflowError) as exc:  # OverflowError: an index beyond MAX_INDEX
        raise _locate_error(files, exc) from None
    matrices, targets = loaded[0::2], loaded[1::2]
    for path, matrix, y in zip(files, matrices, targets):
        _check_values(path, matrix, y)
    ids = np.array([f"{part}-{i}" for part, y in zip(parts, targets) for i in range(len(y))])
    matrix = sp.vstack(matrices, format="csr")
    return Corpus(
        name=name or files[0].stem,
        ids=ids,
        labels=np.array([_class_name(v) for y in targets for v in y]),
        matrix=matrix,
        metadata={"source_files": [p.name for p in files], "format": "LIBSVM",
                  "weighted": True,
                  "documents_per_file": {p.name: len(y) for p, y in zip(files, targets)}},
    )


def _class_name(value):
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def _unreadable(paths, exc, source):
    names = ", ".join(str(p) for p in paths)
    where = f" re-download it from {source}" if source else " re-create or re-download it"
    return CorpusFormatError(
        f"cannot read {names}: {type(exc).__name__}: {exc}. A compressed file is probably "
        f"truncated or corrupt;{where}"
    )


def _check_values(path, matrix, y):
    if len(y) == 0:
        raise CorpusFormatError(f"{path} holds no document (no line '<class> <index>:<value> "
                                f"...'): it is empty or truncated; re-create or re-download it")
    if (np.all(np.isfinite(matrix.data)) and (matrix.nnz == 0 or matrix.data.min() >= 0)
            and np.all(np.isfinite(y))):
        return
    raise _locate_error([path], ValueError("non-finite classes, or non-finite or negative "
                                           "values"))


def _locate_error(paths, exc):
    """A :class:`CorpusFormatError` naming the first bad line of ``paths``."""
    for path in paths:
        try:
            found = first_bad_line(path)
        except _STREAM_ERRORS as stream_exc:
            return _unreadable([path], stream_exc, None)
        if found:
            number, reason, line = found
            shown = line if len(line) <= 80 else line[:77] + "..."
            return CorpusFormatError(
                f"{path}, line {number}: {reason} (line: {shown!r}). Expected LIBSVM lines "
                f"'<class> <index>:<value> ...' with a numeric class, indices 1, 2, ... in "
                f"increasing order and finite non-negative values"
            )
    names = ", ".join(str(p) for p in paths)
    return CorpusFormatError(f"{names}: not a LIBSVM file ({exc})")


def first_bad_line(path):
    """``(line number, reason, line)`` of the first line of ``path`` that is not a valid
    LIBSVM multiclass line, or ``None``."""
    opener = _OPENERS.get(path.suffix, open)
    with opener(path, "rb") as handle:
        for number, raw in enumerate(handle, start=1):
            line = raw.decode("latin-1").split("#", 1)[0].strip()
            reason = line_error(line) if line else None
            if reason:
                return number, reason, raw.decode("latin-1").rstrip("\r\n")
    return None


def line_error(line):
    """Why ``line`` (comment removed, not blank) is not ``<class> <index>:<value> ...``;
    ``None`` when it is valid."""
    label, *pairs = line.split()
    if _number(label) is None:
        return f"the class {label!r} is not a number"
    if not np.isfinite(_number(label)):
        return f"the class {label!r} is not a finite number"
    previous = 0
    for pair in pairs:
        index, sep, value = pair.partition(":")
        if index == "qid":
            continue
        if not sep or not index.isdigit() or _number(value) is None:
            return f"{pair!r} is not <index>:<value>"
        if int(index) == 0:
            return "feature index 0: LIBSVM indices start at 1"
        if int(index) > MAX_INDEX:
            return f"feature index {index} is too large (at most {MAX_INDEX})"
        if int(index) <= previous:
            return (f"feature index {index} is not larger than the one before it "
                    f"(indices are 1-based and increasing)")
        if not np.isfinite(_number(value)) or _number(value) < 0:
            return f"feature {index} has the value {value}; values must be finite and ≥ 0"
        previous = int(index)
    return None


def _number(text):
    try:
        return float(text)
    except ValueError:
        return None

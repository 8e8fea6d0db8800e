"""Deng Cai's preprocessed text corpora, stored as MATLAB files holding ``fea`` and ``gnd``.

``fea`` is a sparse documents × terms count matrix and ``gnd`` the 1-based class of each
document. The files carry no vocabulary. Any such file can also be given by path
(``textcluster run path/to/file.mat``, :func:`load_mat_file`).
"""

import struct
import zlib
from pathlib import Path

import numpy as np
import scipy.io
import scipy.sparse as sp
from scipy.io.matlab import MatReadError

from ..._errors import CorpusFormatError, DataNotFoundError, InvalidInputError
from ..corpus import Corpus
from ._files import reads
from ._paths import StrPath, find_corpus_dir

SOURCE = "http://www.cad.zju.edu.cn/home/dengcai/Data/TextData.html"
TDT2_FILES = {"top30": "TDT2.mat", "all": "TDT2_all.mat"}
MATLAB_MAGIC = b"MATLAB"

# What scipy.io.loadmat raises, depending on where a file is cut or damaged.
_READ_ERRORS = (
    MatReadError, ValueError, TypeError, OSError, EOFError, IndexError, KeyError,
    struct.error, zlib.error, NotImplementedError, OverflowError, UnboundLocalError,
)


def tdt2_files(data_dir: StrPath | None, variant: str, **_options: object) -> list[Path]:
    """The file :func:`load_tdt2` reads."""
    if variant not in TDT2_FILES:
        raise InvalidInputError(
            f"unknown TDT2 variant {variant!r}; allowed: {', '.join(TDT2_FILES)}"
        )
    filename = TDT2_FILES[variant]
    return [find_corpus_dir("tdt2", [filename], data_dir, source=SOURCE) / filename]


@reads(tdt2_files)
def load_tdt2(data_dir: StrPath | None = None, variant: str = "top30",
              min_class_size: int | None = None, top: int | None = None) -> Corpus:
    """TDT2 as preprocessed by Deng Cai: ``variant="top30"`` (``TDT2.mat``, the 30 largest
    classes, 9394 documents) or ``"all"`` (``TDT2_all.mat``, 96 classes)."""
    corpus = load_cai_mat(tdt2_files(data_dir, variant)[0], name="tdt2")
    corpus.metadata["variant"] = variant
    return corpus.select_classes(min_class_size=min_class_size, top=top)


def reuters_cai_files(data_dir: StrPath | None = None, **_options: object) -> list[Path]:
    """The file :func:`load_reuters_cai` reads."""
    folder = find_corpus_dir("reuters21578_cai", ["Reuters21578.mat"], data_dir, source=SOURCE)
    return [folder / "Reuters21578.mat"]


@reads(reuters_cai_files)
def load_reuters_cai(data_dir: StrPath | None = None, min_class_size: int | None = None,
                     top: int | None = None) -> Corpus:
    """Reuters-21578 as preprocessed by Deng Cai (``Reuters21578.mat``: 8293 documents with a
    single topic, 65 classes)."""
    corpus = load_cai_mat(reuters_cai_files(data_dir)[0], name="reuters-cai")
    return corpus.select_classes(min_class_size=min_class_size, top=top)


def mat_file_files(path: StrPath, **_options: object) -> list[Path]:
    """The file :func:`load_mat_file` reads: ``path``."""
    return [Path(path)]


@reads(mat_file_files)
def load_mat_file(path: StrPath, min_class_size: int | None = None,
                  top: int | None = None) -> Corpus:
    """A MATLAB file with Deng Cai's ``fea`` and ``gnd``, given by path (see
    :func:`load_cai_mat`)."""
    return load_cai_mat(path).select_classes(min_class_size=min_class_size, top=top)


def is_matlab_file(path: StrPath) -> bool:
    """Whether ``path`` is a file whose header starts with ``MATLAB`` (``MATLAB 5.0 MAT-file``,
    ``MATLAB 7.3 MAT-file``): told apart by content from CLUTO's text ``.mat`` files."""
    try:
        with open(path, "rb") as handle:
            return handle.read(len(MATLAB_MAGIC)) == MATLAB_MAGIC
    except OSError:  # not a file, or unreadable
        return False


def load_cai_mat(path: StrPath, name: str | None = None) -> Corpus:
    """A matrix corpus from one MATLAB file with ``fea`` (documents × terms counts) and ``gnd``
    (class numbers, kept as the labels ``"1"``, ``"2"``, …). Ids are the row numbers."""
    path = Path(path)
    if not path.is_file():
        raise DataNotFoundError(f"{path} does not exist. Download it from {SOURCE}")
    try:
        _check_v5_elements(path)
        contents = scipy.io.loadmat(path, variable_names=["fea", "gnd"])
    except _READ_ERRORS as exc:
        raise CorpusFormatError(
            f"{path} is not a readable MATLAB file ({type(exc).__name__}: {exc}); it is "
            f"probably truncated or corrupt: re-download it from {SOURCE}"
        ) from None
    matrix, labels = _features(contents, path), _classes(contents, path)
    if matrix.shape[0] == 0:
        raise CorpusFormatError(f"{path}: 'fea' has no rows, so the corpus has no document; "
                                f"re-download the file or check that it is the right one")
    if labels.shape[0] != matrix.shape[0]:
        raise CorpusFormatError(
            f"{path}: 'gnd' has {labels.shape[0]} entries but 'fea' has {matrix.shape[0]} rows"
        )
    return Corpus(
        name=name or path.stem,
        ids=np.arange(matrix.shape[0]).astype(str),
        labels=labels.astype(str),
        matrix=matrix,
        metadata={"source_files": [path.name], "format": "Deng Cai MATLAB (fea, gnd)"},
    )


# MAT-file v5 (MathWorks, "MAT-File Format"): data types miINT8 … miUTF32, of which numbers
# are 1-7, 9, 12 and 13; array classes 5 (sparse) and 6-15 (double … uint64).
_MI_TYPES = frozenset({1, 2, 3, 4, 5, 6, 7, 9, 12, 13, 14, 15, 16, 17, 18})
_MI_NUMBERS = frozenset({1, 2, 3, 4, 5, 6, 7, 9, 12, 13})
_MI_MATRIX, _MI_COMPRESSED, _MX_SPARSE = 14, 15, 5


def _check_v5_elements(path):
    """Raise ``ValueError`` when a MAT-file v5 is not well formed where scipy does not check
    it and can crash the interpreter (a segmentation fault, not an exception): every data
    element of a known type and within its container, and ``fea`` and ``gnd`` numeric arrays
    holding the parts their header announces."""
    data = path.read_bytes()
    if len(data) < 128 or data[126:128] not in (b"IM", b"MI"):
        return  # not v5: v4 and v7.3 (HDF5) files have no such marker, scipy checks them
    order = "<" if data[126:128] == b"IM" else ">"
    for kind, body, size in _elements(data, 128, len(data), order, top=True):
        if kind == _MI_COMPRESSED:
            inner = zlib.decompress(data[body:body + size])
            for variable in _elements(inner, 0, len(inner), order, top=True):
                _check_variable(inner, *variable, order)
        else:
            _check_variable(data, kind, body, size, order)


def _elements(data, at, end, order, top=False):
    """``(type, start, size)`` of each data element in ``data[at:end]`` (``top``: variables,
    whose sizes are not padded to 8 bytes)."""
    found = []
    while at < end:
        if end - at < 8:
            raise ValueError(f"a data element is cut short at byte {at}")
        word, size = struct.unpack_from(order + "II", data, at)
        if word >> 16:  # a small data element: type and size in one word, data in the next
            kind, size, body, step = word & 0xFFFF, word >> 16, at + 4, 8
        else:
            kind, body = word, at + 8
            step = 8 + (size if top else -(-size // 8) * 8)
        if kind not in _MI_TYPES or body + size > end:
            raise ValueError(f"the data element at byte {at} has an unknown type ({kind}) or a "
                             f"size ({size} bytes) beyond the end of its container")
        found.append((kind, body, size))
        at += step
    return found


def _nested_elements(data, body, size, order):
    """The elements of an miMATRIX, after checking those of the arrays it holds (cells,
    structures) likewise."""
    parts = _elements(data, body, body + size, order)
    for kind, start, length in parts:
        if kind == _MI_MATRIX:
            _nested_elements(data, start, length, order)
    return parts


def _check_variable(data, kind, body, size, order):
    """Check one variable (an miMATRIX element), deeply for ``fea`` and ``gnd``."""
    if kind != _MI_MATRIX:
        return  # scipy refuses it with an exception
    parts = _nested_elements(data, body, size, order)
    if len(parts) < 3 or parts[0][0] != 6 or parts[0][2] < 8 or parts[1][0] != 5:
        raise ValueError("an array's header (flags, dimensions, name) is damaged")
    name = data[parts[2][1]:parts[2][1] + parts[2][2]]
    if name not in (b"fea", b"gnd"):
        return
    flags = struct.unpack_from(order + "I", data, parts[0][1])[0]
    array_class, complex_part = flags & 0xFF, bool(flags & 0x800)
    if array_class == _MX_SPARSE:
        wanted = [(5, 6), (5, 6), _MI_NUMBERS, _MI_NUMBERS][:3 + complex_part]
    elif 6 <= array_class <= 15:
        wanted = [_MI_NUMBERS, _MI_NUMBERS][:1 + complex_part]
    else:
        raise ValueError(f"{name.decode()!r} is not a numeric array (MATLAB class "
                         f"{array_class})")
    data_parts = parts[3:]
    if len(data_parts) < len(wanted) or any(part[0] not in types
                                             for part, types in zip(data_parts, wanted)):
        raise ValueError(f"{name.decode()!r} lacks the data its header announces")


def _variable(contents, key, path):
    if key not in contents:
        found = ", ".join(k for k in contents if not k.startswith("__")) or "none"
        raise CorpusFormatError(
            f"{path} has no variable {key!r} (variables found: {found}); expected Deng Cai's "
            f"'fea' and 'gnd', see {SOURCE}"
        )
    return contents[key]


def _features(contents, path):
    """``fea`` as a CSR float64 matrix of non-negative finite counts."""
    fea = _variable(contents, "fea", path)
    try:
        if sp.issparse(fea):  # a damaged file can hold indices out of range: check them first
            fea.check_format(full_check=True)
        matrix = sp.csr_matrix(fea, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise CorpusFormatError(f"{path}: 'fea' is not a numeric matrix ({exc})") from None
    if matrix.ndim != 2:
        raise CorpusFormatError(f"{path}: 'fea' is not a 2-D matrix")
    if not np.all(np.isfinite(matrix.data)):
        raise CorpusFormatError(f"{path}: 'fea' holds NaN or infinite values")
    if matrix.data.size and matrix.data.min() < 0:
        raise CorpusFormatError(f"{path}: 'fea' holds negative values; expected term counts")
    return matrix


def _classes(contents, path):
    """``gnd`` as a 1-D integer array (one class number per document)."""
    gnd = np.asarray(_variable(contents, "gnd", path))
    if gnd.ndim > 2 or (gnd.ndim == 2 and 1 not in gnd.shape):
        raise CorpusFormatError(f"{path}: 'gnd' has shape {gnd.shape}; expected a vector")
    gnd = gnd.ravel()
    if not np.issubdtype(gnd.dtype, np.number) or not np.all(np.isfinite(gnd)):
        raise CorpusFormatError(f"{path}: 'gnd' does not hold class numbers")
    if not np.all(gnd == np.round(gnd)):
        raise CorpusFormatError(f"{path}: 'gnd' holds non-integer class numbers")
    return gnd.astype(np.int64)

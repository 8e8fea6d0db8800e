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

from .._errors import CorpusFormatError, DataNotFoundError, InvalidInputError
from ..corpus import Corpus
from ._paths import find_corpus_dir

SOURCE = "http://www.cad.zju.edu.cn/home/dengcai/Data/TextData.html"
TDT2_FILES = {"top30": "TDT2.mat", "all": "TDT2_all.mat"}
MATLAB_MAGIC = b"MATLAB"

# What scipy.io.loadmat raises, depending on where a file is cut or damaged.
_READ_ERRORS = (
    MatReadError, ValueError, TypeError, OSError, EOFError, IndexError, KeyError,
    struct.error, zlib.error, NotImplementedError,
)


def load_tdt2(data_dir=None, variant="top30", min_class_size=None, top=None):
    """TDT2 as preprocessed by Deng Cai: ``variant="top30"`` (``TDT2.mat``, the 30 largest
    classes, 9394 documents) or ``"all"`` (``TDT2_all.mat``, 96 classes)."""
    if variant not in TDT2_FILES:
        raise InvalidInputError(
            f"unknown TDT2 variant {variant!r}; allowed: {', '.join(TDT2_FILES)}"
        )
    filename = TDT2_FILES[variant]
    folder = find_corpus_dir("tdt2", [filename], data_dir, source=SOURCE)
    corpus = load_cai_mat(folder / filename, name="tdt2")
    corpus.metadata["variant"] = variant
    return corpus.select_classes(min_class_size=min_class_size, top=top)


def load_reuters_cai(data_dir=None, min_class_size=None, top=None):
    """Reuters-21578 as preprocessed by Deng Cai (``Reuters21578.mat``: 8293 documents with a
    single topic, 65 classes)."""
    folder = find_corpus_dir("reuters21578_cai", ["Reuters21578.mat"], data_dir, source=SOURCE)
    corpus = load_cai_mat(folder / "Reuters21578.mat", name="reuters-cai")
    return corpus.select_classes(min_class_size=min_class_size, top=top)


def load_mat_file(path, min_class_size=None, top=None):
    """A MATLAB file with Deng Cai's ``fea`` and ``gnd``, given by path (see
    :func:`load_cai_mat`)."""
    return load_cai_mat(path).select_classes(min_class_size=min_class_size, top=top)


def is_matlab_file(path):
    """Whether ``path`` is a file whose header starts with ``MATLAB`` (``MATLAB 5.0 MAT-file``,
    ``MATLAB 7.3 MAT-file``): told apart by content from CLUTO's text ``.mat`` files."""
    try:
        with open(path, "rb") as handle:
            return handle.read(len(MATLAB_MAGIC)) == MATLAB_MAGIC
    except OSError:  # not a file, or unreadable
        return False


def load_cai_mat(path, name=None):
    """A matrix corpus from one MATLAB file with ``fea`` (documents × terms counts) and ``gnd``
    (class numbers, kept as the labels ``"1"``, ``"2"``, …). Ids are the row numbers."""
    path = Path(path)
    if not path.is_file():
        raise DataNotFoundError(f"{path} does not exist. Download it from {SOURCE}")
    try:
        contents = scipy.io.loadmat(path, variable_names=["fea", "gnd"])
    except _READ_ERRORS as exc:
        raise CorpusFormatError(
            f"{path} is not a readable MATLAB file ({type(exc).__name__}: {exc}); it is "
            f"probably truncated or corrupt: re-download it from {SOURCE}"
        ) from None
    matrix, labels = _features(contents, path), _classes(contents, path)
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

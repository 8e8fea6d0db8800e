"""CLUTO term-count matrices (Karypis' document data sets), in the two formats of the panel.

* CLUTO's sparse format, ``<name>.mat`` (plain or ``.gz``): line 1 is ``n_docs n_terms nnz``,
  then one line per document of ``term value`` pairs with 1-based term ids. The classes are in
  ``<name>.mat.rclass`` (one per line), the terms in ``<name>.mat.clabel`` (one per column). A
  clabel that declares C4.5 attributes instead of naming terms (fbis': a line of class ids, then
  ``word-<i>: continuous.``) is recognised by its content: the corpus then has no vocabulary.
* ntyaan's converted format, ``sparse_<name>.txt`` (plain or ``.gz``): line 1 is ``n_docs
  n_terms``, then per document ``nnz term value term value ...`` with 0-based term ids; no
  vocabulary. The classes are in ``<name>.rclass``, else in the one-hot
  ``<name>_correct.txt[.gz]`` (one line per class, a 0/1 entry per document; the classes are
  then named ``class-<line>``); when both are there they must group the documents alike.

Values must be finite and non-negative; a term listed twice in a document is summed. Ids are
the row numbers. Documents without non-zeros are kept and listed in
``metadata["empty_documents"]``; a run reports them (or drops them, ``empty_documents=drop``).
The label and vocabulary files (plain or ``.gz``) are optional when a file is loaded by path.

The panel's 14 sets are registered as ``cluto:<set>`` (:data:`SETS`).
"""

import re
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from ..._errors import CorpusFormatError, DataNotFoundError, InvalidInputError
from ..corpus import Corpus
from ._files import MAX_INDEX, find_file, has_file, reads, read_lines
from ._paths import StrPath, find_corpus_dir
from .matlab import is_matlab_file

KARYPIS_FOLDER = "panel/cluto_karypis"
NTYAAN_FOLDER = "panel/cluto_ntyaan"
SETS = {
    **dict.fromkeys(("fbis", "tr31", "tr41", "tr45", "wap"), KARYPIS_FOLDER),
    **dict.fromkeys(("re0", "k1a", "k1b", "hitech", "la1", "la2", "tr11", "tr12", "tr23"),
                    NTYAAN_FOLDER),
}
SOURCES = {
    KARYPIS_FOLDER: "https://github.com/tanmaybasu/Postimpact-Similarity-for-Text-Clustering"
                    "/tree/c939e684a90428abedc9958f21fa880d41e0b1ec/corpora",
    NTYAAN_FOLDER: "https://github.com/ntyaan/some-datasets/tree/"
                   "ac28270cc96f5de53d67f22ae9547ff1a9e7c933/datasets_cluto_20171213/CLUTO",
}

_CLUTO_NAME = re.compile(r"(.+)\.mat(?:\.gz)?")
_CONVERTED_NAME = re.compile(r"sparse_(.+)\.txt(?:\.gz)?")
_C45_ATTRIBUTE = re.compile(r"\S+: continuous\.")
_WHOLE = re.compile(r"[0-9]+")


def cluto_set_files(set_name: str, data_dir: StrPath | None = None,
                    **_options: object) -> list[Path]:
    """The files :func:`load_cluto_set` reads: the set's matrix, then its label and vocabulary
    files (:func:`cluto_files`)."""
    folder_name = SETS[set_name]
    if folder_name == KARYPIS_FOLDER:
        matrix_name, labels_name = f"{set_name}.mat", f"{set_name}.mat.rclass"
    else:
        matrix_name, labels_name = f"sparse_{set_name}.txt", f"{set_name}_correct.txt"
    folder = find_corpus_dir(folder_name, [f"{matrix_name}*", f"{labels_name}*"], data_dir,
                             source=SOURCES[folder_name])
    return cluto_files(find_file(folder, matrix_name))


@reads(cluto_set_files)
def load_cluto_set(set_name: str, data_dir: StrPath | None = None,
                   min_class_size: int | None = None, top: int | None = None) -> Corpus:
    """The panel's CLUTO set ``set_name`` (a key of :data:`SETS`), from
    ``<data folder>/panel/cluto_karypis`` or ``panel/cluto_ntyaan``."""
    corpus = load_cluto(cluto_set_files(set_name, data_dir)[0])
    corpus.name = f"cluto:{set_name}"
    corpus.metadata["set"] = set_name
    return corpus.select_classes(min_class_size=min_class_size, top=top)


def cluto_files(path: StrPath, **_options: object) -> list[Path]:
    """The files :func:`load_cluto` reads: the matrix ``path`` and the label and vocabulary
    files beside it (:func:`companion_files`)."""
    return [Path(path), *companion_files(path).values()]


@reads(cluto_files)
def load_cluto(path: StrPath, min_class_size: int | None = None, top: int | None = None) -> Corpus:
    """The corpus of a CLUTO matrix file ``<name>.mat[.gz]`` or ``sparse_<name>.txt[.gz]`` and
    of the label and vocabulary files beside it (see the module docstring)."""
    path = Path(path)
    if not path.is_file():
        raise DataNotFoundError(f"CLUTO matrix file {path} does not exist or is not a file")
    if _set_name(path) is None:
        raise InvalidInputError(
            f"{path} is not named like a CLUTO matrix: name it <name>.mat (CLUTO's format) or "
            f"sparse_<name>.txt (the converted format), optionally with .gz"
        )
    matrix = read_matrix(path)
    files = companion_files(path)
    labels, label_source = _labels(files, matrix.shape[0])
    vocabulary, note = (read_vocabulary(files["clabel"], matrix.shape[1]) if "clabel" in files
                        else (None, None))
    ids = np.arange(matrix.shape[0]).astype(str)
    metadata = {
        "source_files": [path.name, *(p.name for p in files.values())],
        "format": "CLUTO, converted (ntyaan)" if _is_converted(path) else "CLUTO sparse matrix",
        "labels_from": label_source,
        "empty_documents": ids[np.diff(matrix.indptr) == 0].tolist(),
    }
    if note:
        metadata["vocabulary_note"] = note
    corpus = Corpus(name=_set_name(path), ids=ids, labels=labels, matrix=matrix,
                    vocabulary=vocabulary, metadata=metadata)
    return corpus.select_classes(min_class_size=min_class_size, top=top)


def is_cluto_file(path: StrPath) -> bool:
    """Whether ``path`` is a file named like a CLUTO matrix (``<name>.mat[.gz]``,
    ``sparse_<name>.txt[.gz]``) that is not a MATLAB file (whose header starts with
    ``MATLAB``, e.g. Deng Cai's ``.mat`` files)."""
    path = Path(path)
    return path.is_file() and _set_name(path) is not None and not is_matlab_file(path)


def companion_files(path: StrPath) -> dict[str, Path]:
    """The label and vocabulary files present beside matrix ``path``, plain or ``.gz``:
    ``{"rclass": ..., "one_hot": ..., "clabel": ...}`` (absent keys: no such file)."""
    path, name = Path(path), _set_name(Path(path))
    if name is None:
        return {}
    if _is_converted(path):
        wanted = {"rclass": f"{name}.rclass", "one_hot": f"{name}_correct.txt"}
    else:
        wanted = {"rclass": f"{name}.mat.rclass", "clabel": f"{name}.mat.clabel"}
    return {key: find_file(path.parent, file_name) for key, file_name in wanted.items()
            if has_file(path.parent, file_name)}


def _set_name(path):
    """``tr31`` for ``tr31.mat[.gz]`` and ``sparse_tr31.txt[.gz]``, else ``None``."""
    match = _CONVERTED_NAME.fullmatch(path.name) or _CLUTO_NAME.fullmatch(path.name)
    return match.group(1) if match else None


def _is_converted(path):
    return _CONVERTED_NAME.fullmatch(Path(path).name) is not None


# -- the matrix -----------------------------------------------------------------------------------


def read_matrix(path) -> sp.csr_matrix:
    """The documents × terms matrix of ``path``: ntyaan's converted format for
    ``sparse_<name>.txt[.gz]``, else CLUTO's sparse format."""
    path = Path(path)
    converted = _is_converted(path)
    lines = read_lines(path)
    header = _header(path, lines, converted)
    n_docs, n_terms = header[0], header[1]
    body = _document_lines(path, lines, n_docs)
    pairs = [_pairs(path, number, line, converted) for number, line in enumerate(body, start=2)]
    rows = np.repeat(np.arange(n_docs), [len(p) for p in pairs])
    terms, values = np.concatenate([np.zeros((0, 2)), *pairs]).T
    first = 0 if converted else 1
    bad = (terms != np.floor(terms)) | (terms < first) | (terms >= n_terms + first)
    if bad.any():
        i = int(np.argmax(bad))
        raise _line_error(path, rows[i] + 2, body[rows[i]], (
            f"term id {terms[i]:g} is not one of the {n_terms} terms the header (line 1) "
            f"declares (ids {first}..{n_terms - 1 + first}, {'0' if converted else '1'}-based)"))
    bad = ~np.isfinite(values) | (values < 0)
    if bad.any():
        i = int(np.argmax(bad))
        raise _line_error(path, rows[i] + 2, body[rows[i]], (
            f"term {terms[i]:g} has the value {values[i]:g}; term counts must be finite and "
            f"non-negative"))
    if not converted and len(terms) != header[2]:
        raise CorpusFormatError(
            f"{path}: the header (line 1) says {header[2]} non-zeros but the {n_docs} document "
            f"lines hold {len(terms)} term-value pairs; the file is corrupt or its header wrong: "
            f"re-download it (or correct the header)")
    matrix = sp.csr_matrix((values, (rows, terms.astype(np.int64) - first)),
                           shape=(n_docs, n_terms))
    matrix.sum_duplicates()
    matrix.eliminate_zeros()
    return matrix


def _header(path, lines, converted):
    """``(n_docs, n_terms)`` (converted) or ``(n_docs, n_terms, nnz)`` from line 1."""
    expected = "n_docs n_terms" if converted else "n_docs n_terms nnz"
    fields = lines[0].split() if lines else []
    whole = all(_WHOLE.fullmatch(f) for f in fields)
    numbers = [int(f) for f in fields] if whole and len(fields) == len(expected.split()) else []
    if numbers and numbers[0] and numbers[1] and max(numbers) <= MAX_INDEX:
        return tuple(numbers)
    if not lines:
        problem = "the file is empty"
    elif fields and fields[0].startswith("MATLAB"):
        problem = "it is a MATLAB file, not CLUTO text (give the uncompressed .mat file)"
    elif numbers and max(numbers) > MAX_INDEX:
        problem = (f"the header {lines[0].strip()[:60]!r} declares more than {MAX_INDEX} "
                   f"documents, terms or non-zeros")
    elif numbers:
        problem = f"the header {lines[0].strip()!r} declares an empty matrix"
    else:
        problem = f"{lines[0][:60]!r} is not the header '{expected}' (whole numbers)"
        if whole and len(fields) in (2, 3):
            problem += (" — a 3-number header is CLUTO's <name>.mat format, a 2-number one the "
                        "converted sparse_<name>.txt format; name the file accordingly")
    raise CorpusFormatError(f"{path}, line 1: {problem}. Expected a CLUTO term-count matrix; "
                            f"re-download the file or check that it is one")


def _document_lines(path, lines, n_docs):
    """The ``n_docs`` lines after the header (blank lines at the end beyond them ignored)."""
    body = _without_trailing_blanks(lines[1:], n_docs)
    if len(body) < n_docs:
        raise CorpusFormatError(
            f"{path}: the header (line 1) says {n_docs} documents but only {len(body)} "
            f"line{'' if len(body) == 1 else 's'} follow; the file is truncated (or its header "
            f"wrong): re-download it")
    if len(body) > n_docs:
        raise CorpusFormatError(
            f"{path}, line {n_docs + 2}: the header (line 1) says {n_docs} documents but more "
            f"lines follow ({len(body)}); the header is wrong or files were joined: re-download "
            f"it (or correct the header)")
    return body


def _pairs(path, number, line, converted):
    """The ``(term, value)`` pairs of one document line as an array of shape (n, 2)."""
    numbers = _numbers(path, number, line)
    if converted and numbers.size:
        count, numbers = numbers[0], numbers[1:]
        if count != numbers.size / 2:
            raise _line_error(path, number, line, (
                f"starts with the count {count:g} but lists {numbers.size / 2:g} term-value "
                f"pairs"))
    if numbers.size % 2:
        raise _line_error(path, number, line, "has a term id without its value")
    return numbers.reshape(-1, 2)


def _numbers(path, number, line):
    """The numbers on ``line`` (line ``number`` of ``path``)."""
    tokens = line.split()
    try:
        return np.array(tokens, dtype=np.float64)
    except ValueError:
        token = next(t for t in tokens if not _is_number(t))
        raise _line_error(path, number, line, f"{token!r} is not a number") from None


def _is_number(token):
    try:
        float(token)
    except ValueError:
        return False
    return True


def _line_error(path, number, line, reason):
    shown = line.strip()
    shown = shown if len(shown) <= 60 else shown[:57] + "..."
    return CorpusFormatError(f"{path}, line {number} ({shown!r}): {reason}. The file is corrupt "
                             f"or not a CLUTO matrix: re-download it")


# -- classes and terms ----------------------------------------------------------------------------


def _labels(files, n_docs):
    """``(labels or None, name of the file they come from)``."""
    rclass = read_classes(files["rclass"], n_docs) if "rclass" in files else None
    one_hot = read_one_hot(files["one_hot"], n_docs) if "one_hot" in files else None
    if rclass is not None and one_hot is not None:
        _check_partition(rclass, one_hot, files["rclass"], files["one_hot"])
    if rclass is not None:
        return rclass, files["rclass"].name
    if one_hot is not None:
        return np.char.add("class-", (one_hot + 1).astype(str)), files["one_hot"].name
    return None, None


def read_classes(path, n_docs: int) -> np.ndarray:
    """The class of each document from ``.rclass``: one per line, ``n_docs`` lines."""
    path = Path(path)
    classes = _without_trailing_blanks([line.strip() for line in read_lines(path)], n_docs)
    if len(classes) != n_docs:
        raise CorpusFormatError(
            f"{path} has {len(classes)} classes (one per line) but the matrix has {n_docs} "
            f"documents; the files do not belong together: re-download them")
    if not all(classes):
        raise CorpusFormatError(f"{path}, line {classes.index('') + 1} is blank: every "
                                f"document needs a class; re-download the file")
    return np.array(classes, dtype=str)


def read_one_hot(path, n_docs: int) -> np.ndarray:
    """The class (0-based line) of each document from a one-hot matrix with one line per class
    and one 0/1 entry per document."""
    path = Path(path)
    lines = _without_trailing_blanks(read_lines(path), 0)
    rows = [_numbers(path, number, line) for number, line in enumerate(lines, start=1)]
    for number, (line, row) in enumerate(zip(lines, rows), start=1):
        if row.size != n_docs:
            raise _line_error(path, number, line, (
                f"has {row.size} entries but the matrix has {n_docs} documents (one 0/1 entry "
                f"per document)"))
    one_hot = np.array(rows).reshape(len(rows), n_docs)
    if not np.isin(one_hot, (0, 1)).all():
        raise CorpusFormatError(f"{path} holds values other than 0 and 1; expected a one-hot "
                                f"class matrix (one line per class): re-download it")
    per_document = one_hot.sum(axis=0)
    if (per_document != 1).any():
        doc = int(np.argmax(per_document != 1))
        raise CorpusFormatError(
            f"{path}: document {doc} (entry {doc + 1} of each line) is in "
            f"{int(per_document[doc])} classes; each must be in exactly one: re-download it")
    return one_hot.argmax(axis=0)


def _check_partition(classes, rows, rclass_path, one_hot_path):
    """``classes`` (names) and ``rows`` (one-hot lines) must group the documents alike."""
    _, first_of_class, class_codes = np.unique(classes, return_index=True, return_inverse=True)
    _, first_of_row, row_codes = np.unique(rows, return_index=True, return_inverse=True)
    agree = ((rows == rows[first_of_class[class_codes]])
             & (classes == classes[first_of_row[row_codes]]))
    if not agree.all():
        doc = int(np.argmax(~agree))
        raise CorpusFormatError(
            f"{rclass_path} and {one_hot_path} disagree: document {doc} has the class "
            f"{classes[doc]!r} (line {doc + 1}) but is on line {rows[doc] + 1} of the one-hot "
            f"matrix, which does not hold exactly the documents of that class. Re-download "
            f"them, or remove {rclass_path.name} to use the one-hot classes")


def read_vocabulary(path, n_terms: int) -> tuple:
    """``(terms, None)`` from ``.clabel`` (one term per column), or ``(None, note)`` when the
    file declares C4.5 attributes (``<name>: continuous.`` after a first line) instead."""
    path = Path(path)
    terms = _without_trailing_blanks([line.strip() for line in read_lines(path)], n_terms)
    if len(terms) > 1 and all(_C45_ATTRIBUTE.fullmatch(t) for t in terms[1:]):
        return None, (f"{path.name} declares C4.5 attributes ({terms[1]!r}, ...), not terms: "
                      f"the corpus has no vocabulary")
    if len(terms) != n_terms:
        raise CorpusFormatError(
            f"{path} has {len(terms)} terms (one per line) but the matrix has {n_terms} "
            f"columns; the files do not belong together: re-download them, or remove "
            f"{path.name} to load the matrix without a vocabulary")
    return np.array(terms, dtype=str), None


def _without_trailing_blanks(lines, keep):
    """``lines`` without the blank lines at its end beyond the first ``keep``."""
    lines = list(lines)
    while len(lines) > keep and not lines[-1].strip():
        lines.pop()
    return lines

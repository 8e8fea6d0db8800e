"""The one type every loader returns."""

import re
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from numbers import Integral
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd
import scipy.sparse as sp

from .._compat import require
from .._errors import InvalidInputError


@dataclass
class Corpus:
    """A document collection, as texts or as a documents × terms count matrix.

    Attributes
    ----------
    name : str
        Name of the corpus (and selection), e.g. ``"reuters"``.
    ids : ndarray of str, shape (n_docs,)
        Document identifiers, unique.
    labels : ndarray of str, shape (n_docs,), or None
        Class of each document; ``None`` for unlabelled corpora.
    texts : list of str, or None
        Raw document texts (text corpora).
    matrix : scipy.sparse.csr_matrix, shape (n_docs, n_terms), or None
        Term counts (matrix corpora, or text corpora after vectorizing).
    vocabulary : ndarray of str, shape (n_terms,), or None
        Term of each matrix column, when known.
    metadata : dict
        Free-form provenance: source files, selection applied, split, ... Loaders whose matrix
        is already weighted (unit-length tf-idf rows) set ``metadata["weighted"] = True``.
    graph : scipy.sparse.csr_matrix, shape (n_docs, n_docs), or None
        A document graph that comes with the corpus (e.g. CiteULike's citations): symmetric,
        non-negative, rows and columns in the order of :attr:`ids`.
    dates : ndarray of datetime64[ns], shape (n_docs,), or None
        When each document was written (a table's ``date_column``): cluster sizes over time.

    Every string is one that every output can hold: a lone surrogate (from a file name that is
    not UTF-8, a JSON ``"\\ud800"``, an SGML ``&#55296;``), which UTF-8 cannot encode, becomes
    U+FFFD in the texts and an escape in the name, ids, labels and vocabulary (``\\xe9`` for
    the byte 0xE9 of a file name, else ``\\ud800``), as does NUL (``\\x00``), which NumPy's
    strings drop at their end.
    """

    name: str
    ids: np.ndarray
    labels: np.ndarray | None = None
    texts: list[str] | None = None
    matrix: sp.csr_matrix | None = None
    vocabulary: np.ndarray | None = None
    metadata: dict = field(default_factory=dict)
    graph: sp.csr_matrix | None = None
    dates: np.ndarray | None = None

    def __post_init__(self) -> None:
        self.name = _escaped(self.name)
        self.ids = _escaped_array(self.ids)
        n = len(self.ids)
        if self.labels is not None:
            self.labels = _escaped_array(self.labels)
            _check_length("labels", len(self.labels), n)
        if self.texts is not None:
            self.texts = [_SURROGATE.sub("\ufffd", t) if isinstance(t, str) else t
                          for t in self.texts]
            _check_length("texts", len(self.texts), n)
        if self.matrix is not None:
            self.matrix = sp.csr_matrix(self.matrix)
            _check_length("matrix rows", self.matrix.shape[0], n)
        if self.vocabulary is not None:
            self.vocabulary = _escaped_array(self.vocabulary)
            if self.matrix is not None:
                _check_length("vocabulary", len(self.vocabulary), self.matrix.shape[1])
        if self.dates is not None:
            self.dates = np.asarray(self.dates, dtype="datetime64[ns]")
            _check_length("dates", len(self.dates), n)
        if self.graph is not None:
            self.graph = sp.csr_matrix(self.graph)
            if self.graph.shape != (n, n):
                raise InvalidInputError(
                    f"corpus has {n} ids but its graph has shape {self.graph.shape}; "
                    f"expected {n} × {n}"
                )

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def n_docs(self) -> int:
        return len(self.ids)

    @property
    def classes(self) -> np.ndarray:
        """Sorted distinct labels (empty for an unlabelled corpus)."""
        return np.array([]) if self.labels is None else np.unique(self.labels)

    @property
    def class_sizes(self) -> dict[str, int]:
        """``{label: count}``, largest class first."""
        if self.labels is None:
            return {}
        names, counts = np.unique(self.labels, return_counts=True)
        order = np.argsort(-counts, kind="stable")
        return {str(names[i]): int(counts[i]) for i in order}

    def label_codes(self) -> np.ndarray:
        """Labels as integers 0..q-1 (in the order of :attr:`classes`)."""
        if self.labels is None:
            raise InvalidInputError(f"corpus {self.name!r} has no class labels")
        return np.searchsorted(self.classes, self.labels)

    def subset(self, index: npt.ArrayLike, name: str | None = None) -> "Corpus":
        """A new corpus holding the documents at ``index`` (boolean mask or positions)."""
        index = np.asarray(index)
        if index.dtype == bool:
            index = np.flatnonzero(index)
        return replace(
            self,
            name=name or self.name,
            ids=self.ids[index],
            labels=None if self.labels is None else self.labels[index],
            texts=None if self.texts is None else [self.texts[i] for i in index],
            matrix=None if self.matrix is None else self.matrix[index],
            metadata=dict(self.metadata),
            graph=None if self.graph is None else self.graph[index][:, index],
            dates=None if self.dates is None else self.dates[index],
        )

    def select_classes(self, classes: Iterable[str] | None = None,
                       min_class_size: int | None = None,
                       top: int | None = None) -> "Corpus":
        """Keep documents of the given classes, of classes with at least ``min_class_size``
        documents, and/or of the ``top`` largest classes (ties broken by name)."""
        if classes is None and min_class_size is None and top is None:
            return self
        if self.labels is None:
            raise InvalidInputError(
                f"corpus {self.name!r} has no class labels, so classes cannot be selected"
            )
        for option, value in (("min_class_size", min_class_size), ("top", top)):
            if value is not None and (isinstance(value, bool)
                                      or not isinstance(value, Integral) or value < 1):
                raise InvalidInputError(f"{option} must be a whole number ≥ 1, got {value!r}")
        sizes = self.class_sizes
        keep = list(sizes)
        if classes is not None:
            wanted = set(map(str, classes))
            unknown = sorted(wanted - set(sizes))
            if unknown:
                raise InvalidInputError(
                    f"corpus {self.name!r} has no class {unknown[0]!r}; "
                    f"its classes are: {', '.join(sorted(sizes))}"
                )
            keep = [c for c in keep if c in wanted]
        if min_class_size is not None:
            keep = [c for c in keep if sizes[c] >= min_class_size]
        if top is not None:
            keep = keep[:top]
        if not keep:
            raise InvalidInputError(
                f"the class selection leaves no document of corpus {self.name!r} (class "
                f"sizes: {', '.join(f'{c} {n}' for c, n in list(sizes.items())[:10])})"
            )
        return self.subset(np.isin(self.labels, keep))

    @classmethod
    def from_pandas(cls, frame: pd.DataFrame, name: str = "dataframe", text_column: str = "auto",
                    label_column: str | None = "auto", id_column: str | None = "auto",
                    date_column: str | None = "auto") -> "Corpus":
        """A text corpus from a DataFrame with one row per document, read as a table file is
        (:func:`textcluster.corpora.loaders.table.load_table`): ``text_column`` (``"auto"``:
        ``text`` or a column named like it, ``body``, ``content``, …), an optional
        ``label_column`` (``"auto"``: ``label`` or a column named like it, ``category``, …),
        ``id_column`` (``"auto"``: ``id`` or the one unique column named like ``*id``, else the
        row numbers) and ``date_column`` (``"auto"``: a column named ``date``, in any case)."""
        from .loaders.table import frame_corpus

        return frame_corpus(frame, name, f"DataFrame {name!r}", text_column, label_column,
                            id_column, date_column)

    def to_pandas(self) -> pd.DataFrame:
        """The corpus as a :class:`pandas.DataFrame`, one row per document.

        Columns: ``id``; ``label`` (labelled corpora); ``text`` (text corpora); ``date``; and for
        corpora
        with a matrix, ``terms`` and ``counts``: each document's non-zero columns as two
        parallel lists (term names, or ``term<j>`` without a vocabulary, and their values),
        so that no dense documents × terms table is ever built. The graph is not exported.
        """
        columns: dict[str, Any] = {"id": self.ids}
        if self.labels is not None:
            columns["label"] = self.labels
        if self.texts is not None:
            columns["text"] = self.texts
        if self.dates is not None:
            columns["date"] = self.dates
        if self.matrix is not None:
            columns["terms"], columns["counts"] = _sparse_rows(self.matrix, self._term_names())
        return pd.DataFrame(columns)

    def to_dataset(self) -> Any:
        """The corpus as a Hugging Face :class:`datasets.Dataset` with the columns of
        :meth:`to_pandas` (the corpus name is in ``dataset.info.description``). Needs the
        ``hf`` extra."""
        datasets = require("datasets", extra="hf", feature="Corpus.to_dataset")

        dataset = datasets.Dataset.from_pandas(self.to_pandas(), preserve_index=False)
        dataset.info.description = f"textcluster corpus {self.name!r}"
        return dataset

    def _term_names(self):
        if self.vocabulary is not None:
            return self.vocabulary
        return np.array([f"term{j}" for j in range(self.matrix.shape[1])])


def _sparse_rows(matrix, names):
    """Per row: the names and values of its non-zero entries (column order)."""
    matrix = sp.csr_matrix(matrix)
    matrix.sort_indices()
    bounds = zip(matrix.indptr[:-1], matrix.indptr[1:])
    pairs = [(names[matrix.indices[a:b]].tolist(), matrix.data[a:b].tolist()) for a, b in bounds]
    return [p[0] for p in pairs], [p[1] for p in pairs]


_SURROGATE = re.compile("[\ud800-\udfff]")
_UNHOLDABLE = re.compile("[\x00\ud800-\udfff]")  # and NUL, which NumPy strings drop at the end


def _escape(match):
    """``\\xNN`` for NUL and for a byte that a file name's ``surrogateescape`` decoding kept,
    else ``\\uNNNN``."""
    code = ord(match.group())
    if code == 0 or 0xDC80 <= code <= 0xDCFF:
        return f"\\x{code & 0xFF:02x}"
    return f"\\u{code:04x}"


def _escaped(text):
    return _UNHOLDABLE.sub(_escape, text) if isinstance(text, str) else text


def _escaped_array(values):
    """``values`` as an array of str, NUL and lone surrogates escaped (:func:`_escape`) before
    NumPy's strings would drop a NUL at the end."""
    items = values.tolist() if isinstance(values, np.ndarray) else list(values)
    if any(isinstance(v, str) and _UNHOLDABLE.search(v) for v in items):
        items = [_escaped(v) for v in items]
    return np.asarray(items).astype(str)


def _check_length(what, got, expected):
    if got != expected:
        raise InvalidInputError(f"corpus has {expected} ids but {got} {what}")

"""The one type every loader returns."""

from dataclasses import dataclass, field, replace
from numbers import Integral

import numpy as np
import pandas as pd
import scipy.sparse as sp

from ._errors import InvalidInputError


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
    """

    name: str
    ids: np.ndarray
    labels: np.ndarray | None = None
    texts: list | None = None
    matrix: sp.csr_matrix | None = None
    vocabulary: np.ndarray | None = None
    metadata: dict = field(default_factory=dict)
    graph: sp.csr_matrix | None = None

    def __post_init__(self):
        self.ids = np.asarray(self.ids).astype(str)
        n = len(self.ids)
        if self.labels is not None:
            self.labels = np.asarray(self.labels).astype(str)
            _check_length("labels", len(self.labels), n)
        if self.texts is not None:
            self.texts = list(self.texts)
            _check_length("texts", len(self.texts), n)
        if self.matrix is not None:
            self.matrix = sp.csr_matrix(self.matrix)
            _check_length("matrix rows", self.matrix.shape[0], n)
        if self.vocabulary is not None:
            self.vocabulary = np.asarray(self.vocabulary).astype(str)
            if self.matrix is not None:
                _check_length("vocabulary", len(self.vocabulary), self.matrix.shape[1])
        if self.graph is not None:
            self.graph = sp.csr_matrix(self.graph)
            if self.graph.shape != (n, n):
                raise InvalidInputError(
                    f"corpus has {n} ids but its graph has shape {self.graph.shape}; "
                    f"expected {n} × {n}"
                )

    def __len__(self):
        return len(self.ids)

    @property
    def n_docs(self):
        return len(self.ids)

    @property
    def classes(self):
        """Sorted distinct labels (empty for an unlabelled corpus)."""
        return np.array([]) if self.labels is None else np.unique(self.labels)

    @property
    def class_sizes(self):
        """``{label: count}``, largest class first."""
        if self.labels is None:
            return {}
        names, counts = np.unique(self.labels, return_counts=True)
        order = np.argsort(-counts, kind="stable")
        return {str(names[i]): int(counts[i]) for i in order}

    def label_codes(self):
        """Labels as integers 0..q-1 (in the order of :attr:`classes`)."""
        if self.labels is None:
            raise InvalidInputError(f"corpus {self.name!r} has no class labels")
        return np.searchsorted(self.classes, self.labels)

    def subset(self, index, name=None):
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
        )

    def select_classes(self, classes=None, min_class_size=None, top=None):
        """Keep documents of the given classes, of classes with at least ``min_class_size``
        documents, and/or of the ``top`` largest classes (ties broken by name)."""
        if self.labels is None:
            if classes is None and min_class_size is None and top is None:
                return self
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
            unknown = sorted(set(map(str, classes)) - set(sizes))
            if unknown:
                raise InvalidInputError(
                    f"corpus {self.name!r} has no class {unknown[0]!r}; "
                    f"its classes are: {', '.join(sorted(sizes))}"
                )
            keep = [c for c in keep if c in set(map(str, classes))]
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


    def to_pandas(self):
        """The corpus as a :class:`pandas.DataFrame`, one row per document.

        Columns: ``id``; ``label`` (labelled corpora); ``text`` (text corpora); and for corpora
        with a matrix, ``terms`` and ``counts``: each document's non-zero columns as two
        parallel lists (term names, or ``term<j>`` without a vocabulary, and their values),
        so that no dense documents × terms table is ever built. The graph is not exported.
        """
        columns = {"id": self.ids}
        if self.labels is not None:
            columns["label"] = self.labels
        if self.texts is not None:
            columns["text"] = self.texts
        if self.matrix is not None:
            columns["terms"], columns["counts"] = _sparse_rows(self.matrix, self._term_names())
        return pd.DataFrame(columns)

    def to_dataset(self):
        """The corpus as a Hugging Face :class:`datasets.Dataset` with the columns of
        :meth:`to_pandas` (the corpus name is in ``dataset.info.description``)."""
        import datasets

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


def _check_length(what, got, expected):
    if got != expected:
        raise InvalidInputError(f"corpus has {expected} ids but {got} {what}")

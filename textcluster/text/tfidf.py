"""Counting terms and weighting them.

The default weighting is the one of the GNMF papers (Deng Cai's code, DESIGN §5.1):
``w = (1 + ln tf) · ln(N / df)``, each document then scaled to unit L2 norm, and term columns
that end up all-zero (a term in every document, or in none) dropped.

A weighting is a term-frequency transform times a per-term weight (the idf) learnt from the
counts it is fitted on. :func:`fit_tfidf` returns that idf with the matrix, and a
:class:`Vectorizer` keeps it with the vocabulary, so that new documents get exactly the
columns and weights of the fitted matrix (:meth:`Vectorizer.transform`).
"""

import itertools
import multiprocessing
import os
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp
from sklearn.feature_extraction.text import CountVectorizer
from sklearn.preprocessing import normalize as _normalize_rows

from .._compat import InvalidParameterError
from .._errors import InvalidInputError
from ..registry import Registry
from .tokenize import Analyzer

WEIGHTINGS = Registry("tf-idf weighting")

# The preprocessing options that make an Analyzer.
ANALYZER_OPTIONS = ("stop_words", "lowercase", "normalize")


# Tokenizing in worker processes: below this many documents one process does it all (the
# pool's start-up and the terms' way back cost more than the second core saves; measured with
# benchmarks/bench_preprocess.py), and the documents go to the workers in chunks of this many,
# at most PARALLEL_INFLIGHT chunks per worker at a time (memory stays bounded for any corpus).
PARALLEL_MIN_DOCS = 2000
PARALLEL_CHUNK = 500
PARALLEL_INFLIGHT = 2


def available_cores() -> int:
    """The CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def count_terms(texts: Iterable[str], analyzer: Callable[[str], list[str]] | None = None,
                min_df: float = 1, max_df: float = 1.0,
                max_features: int | None = None,
                n_jobs: int | None = 1) -> tuple[sp.csr_matrix, np.ndarray]:
    """Documents × terms count matrix (CSR) and the vocabulary, via scikit-learn's
    ``CountVectorizer`` with a spaCy :class:`~textcluster.text.tokenize.Analyzer`.

    ``texts`` may be any iterable (a generator too): it is read once, in order. An
    :class:`Analyzer` analyzes each piece of text (between whitespace) once and keeps its
    terms (the terms are those of spaCy's tokens of the whole text, see
    :meth:`Analyzer.__call__`). With ``n_jobs`` > 1 (``None``: the cores this process may use,
    :func:`available_cores`), an :class:`Analyzer` and at least :data:`PARALLEL_MIN_DOCS`
    documents, the new pieces of each chunk of :data:`PARALLEL_CHUNK` documents are analyzed
    by worker processes, a bounded number of chunks in flight, and the documents put together
    and counted here in their order: the counts and the vocabulary are the same as in one
    process. The default is one process: on the shared two-core machine of
    ``benchmarks/bench_preprocess.py`` two workers were not faster (this process's share,
    putting the documents together and counting, does not shrink with them)."""
    analyzer = analyzer or Analyzer()
    n_jobs = available_cores() if n_jobs is None else n_jobs
    if n_jobs < 1:
        raise InvalidInputError(f"n_jobs must be at least 1, got {n_jobs}")
    pooled = (analyzer if n_jobs > 1 and isinstance(analyzer, Analyzer)
              and not isinstance(texts, str) else None)
    stream: Iterator[str] = iter(())
    if pooled is not None:
        stream = iter(texts)
        head = list(itertools.islice(stream, PARALLEL_MIN_DOCS))
        if len(head) < PARALLEL_MIN_DOCS:
            pooled, texts = None, head
        stream = itertools.chain(head, stream)
    parallel = pooled is not None
    vectorizer = CountVectorizer(
        analyzer=_terms_given if parallel else analyzer,
        min_df=min_df,
        max_df=max_df,
        max_features=max_features,
        dtype=np.float64,
    )
    try:
        if pooled is not None:
            with _worker_pool(pooled, n_jobs) as pool:
                counts = vectorizer.fit_transform(_terms_in_workers(pool, pooled, stream,
                                                                      n_jobs))
        else:
            counts = vectorizer.fit_transform(texts)
    except InvalidParameterError as exc:  # a bad min_df, max_df or max_features
        raise InvalidInputError(f"invalid preprocessing setting: {exc}") from None
    except ValueError as exc:  # an empty vocabulary, before or after min_df / max_df
        raise InvalidInputError(
            f"no usable term is left after preprocessing ({exc}): the documents hold only stop "
            f"words, numbers, punctuation or one-letter words, or min_df / max_df leave out "
            f"every term. Check the text (and the text column), or keep more words (--set "
            f"stop_words=none, a lower min_df, a higher max_df)"
        ) from None
    return counts.tocsr(), vectorizer.get_feature_names_out()


def _terms_given(terms: list[str]) -> list[str]:
    return terms


# The analyzer of a worker process (set once by the pool's initializer).
_worker_analyzer: Analyzer | None = None


def _start_worker(analyzer: Analyzer) -> None:
    global _worker_analyzer
    _worker_analyzer = analyzer


def _analyze_pieces(pieces: list[str]) -> dict:
    assert _worker_analyzer is not None
    return _worker_analyzer.analyze_pieces(pieces)


def _worker_pool(analyzer: Analyzer, n_jobs: int) -> ProcessPoolExecutor:
    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("fork" if "fork" in methods else None)
    return ProcessPoolExecutor(n_jobs, mp_context=context, initializer=_start_worker,
                               initargs=(analyzer,))


def _terms_in_workers(pool: ProcessPoolExecutor, analyzer: Analyzer, texts: Iterator,
                      n_jobs: int) -> Iterator[list[str]]:
    """The terms of each text, in order. The texts are read in chunks; the pieces of a chunk
    (:meth:`Analyzer.__call__`) not analyzed before are shared out among the workers, and
    the chunk's texts put together from the memo here while the workers analyze the pieces of
    the next chunks: each piece is analyzed once, in one process. At most PARALLEL_INFLIGHT
    chunks per worker are read ahead of the one being yielded."""
    decode = CountVectorizer().decode  # bytes decoded, NaN refused, as CountVectorizer does
    memo = analyzer._pieces
    sent: set[str] = set()
    pending: deque[tuple[list[str], list[list[str]], list[Future]]] = deque()

    def finish() -> Iterator[list[str]]:
        chunk, parts, futures = pending.popleft()
        for future in futures:
            entries = future.result()
            sent.difference_update(entries)
            analyzer.add_pieces(entries)
        for text, its in zip(chunk, parts):
            yield analyzer.join(text, its)

    while True:
        chunk = [decode(doc) for doc in itertools.islice(texts, PARALLEL_CHUNK)]
        if not chunk:
            break
        parts = [analyzer.pieces(text) for text in chunk]
        new = list(dict.fromkeys(piece for its in parts for piece in its
                                 if piece not in memo and piece not in sent))
        sent.update(new)
        futures = [pool.submit(_analyze_pieces, new[i::n_jobs]) for i in range(n_jobs)
                   if new[i::n_jobs]]
        pending.append((chunk, parts, futures))
        if len(pending) > PARALLEL_INFLIGHT * n_jobs:
            yield from finish()
    while pending:
        yield from finish()


@dataclass(frozen=True)
class Weighting:
    """A tf-idf weighting: each count's term-frequency transform (``tf`` or ``1 + ln tf``)
    times its term's weight ``idf(df, n_docs)`` (none: weight 1), fitted on the counts."""

    name: str
    sublinear: bool  # 1 + ln tf instead of tf
    idf_of: Callable[[np.ndarray, int], np.ndarray] | None  # (df, n_docs) → weight per term
    min_count: float = 0.0  # smaller counts are refused (1 + ln tf < 0 below 1/e)

    def fit_idf(self, counts: sp.csr_matrix) -> np.ndarray:
        """The weight of each column of ``counts`` (float64; ones without an idf)."""
        if self.idf_of is None:
            return np.ones(counts.shape[1])
        df = np.bincount(counts.indices, minlength=counts.shape[1])
        return np.asarray(self.idf_of(df, counts.shape[0]), dtype=np.float64)

    def weigh(self, counts: sp.csr_matrix, idf: np.ndarray) -> sp.csr_matrix:
        """``counts`` (CSR, float64) weighted entry by entry with the column weights ``idf``,
        entries in the order given."""
        X = sp.csr_matrix(counts, dtype=np.float64, copy=True)
        if self.sublinear:
            if X.nnz and X.data.min() < self.min_count:
                raise InvalidInputError(
                    f"the {self.name!r} weighting (1 + ln tf) needs term counts of at least "
                    f"{self.min_count:g}, but one is {X.data.min():g}: it would get a negative "
                    f"weight. For weighted or fractional values choose --set weighting=tf (or "
                    f"weighting=sklearn)"
                )
            X.data = 1.0 + np.log(X.data)
        if self.idf_of is not None:
            X.data = X.data * idf[X.indices]
        return X

    def __call__(self, counts: sp.spmatrix) -> sp.csr_matrix:
        """``counts`` weighted with the idf fitted on them."""
        counts = sp.csr_matrix(counts, dtype=np.float64)
        return self.weigh(counts, self.fit_idf(counts))


def _cai_idf(df: np.ndarray, n_docs: int) -> np.ndarray:
    return np.log(n_docs / np.maximum(df, 1))


def _smooth_idf(df: np.ndarray, n_docs: int) -> np.ndarray:
    """scikit-learn's ``TfidfTransformer`` idf (``smooth_idf=True``)."""
    return np.log((n_docs + 1) / (df + 1.0)) + 1.0


# ``(1 + ln tf) · ln(N / df)`` (Deng Cai's ``tfidf.m``).
cai_tfidf = WEIGHTINGS.register("cai", Weighting("cai", True, _cai_idf, min_count=1))
# scikit-learn's default: ``tf · (ln((1 + N) / (1 + df)) + 1)``.
sklearn_tfidf = WEIGHTINGS.register("sklearn", Weighting("sklearn", False, _smooth_idf))
# scikit-learn with ``sublinear_tf=True``: ``(1 + ln tf) · (ln((1 + N) / (1 + df)) + 1)``.
sklearn_sublinear_tfidf = WEIGHTINGS.register(
    "sklearn-sublinear", Weighting("sklearn-sublinear", True, _smooth_idf))
# Raw term counts (no idf).
raw_tf = WEIGHTINGS.register("tf", Weighting("tf", False, None))


def tfidf(counts: sp.spmatrix, weighting: str = "cai", normalize: bool = True,
          drop_empty_terms: bool = True) -> tuple[sp.csr_matrix, np.ndarray]:
    """Weighted, row-normalized documents × terms matrix and the kept column indices.

    Parameters
    ----------
    counts : sparse matrix (n_docs, n_terms) of non-negative term counts.
    weighting : name in :data:`WEIGHTINGS` (``cai``, ``sklearn``, ``sklearn-sublinear``, ``tf``).
    normalize : scale each document to unit L2 norm.
    drop_empty_terms : drop columns that are all zero after weighting.

    Returns
    -------
    X : csr_matrix, float64
    kept : ndarray of int, the original column index of each column of ``X``.
    """
    X, kept, _ = fit_tfidf(counts, weighting, normalize, drop_empty_terms)
    return X, kept


def fit_tfidf(counts: sp.spmatrix, weighting: str = "cai", normalize: bool = True,
              drop_empty_terms: bool = True) -> tuple[sp.csr_matrix, np.ndarray, np.ndarray]:
    """:func:`tfidf`, and the weight (idf) of each kept column: ``(X, kept, idf)``.
    :func:`weigh_rows` with that idf gives the same rows for the kept columns' counts."""
    scheme = WEIGHTINGS.get(weighting)
    counts = checked_counts(counts)
    used = None
    if drop_empty_terms:  # weigh only the terms that occur: memory follows them, not the shape
        used, columns = np.unique(counts.indices, return_inverse=True)
        counts = sp.csr_matrix((counts.data, columns.ravel(), counts.indptr),
                               shape=(counts.shape[0], used.size))
    idf = scheme.fit_idf(counts)
    X = scheme.weigh(counts, idf)
    X.eliminate_zeros()
    kept = np.arange(X.shape[1])
    if drop_empty_terms:
        kept = np.flatnonzero(np.bincount(X.indices, minlength=X.shape[1]))
        X = X[:, kept]
    X = unit_rows(X, normalize)
    return X, kept if used is None else used[kept], idf[kept]


def weigh_rows(counts: sp.spmatrix, weighting: str, idf: np.ndarray,
               normalize: bool = True) -> sp.csr_matrix:
    """New documents' counts over fitted columns, weighted with the fitted ``idf`` and scaled
    to unit rows as :func:`fit_tfidf` does (float64); a document without a term stays
    empty."""
    counts = checked_counts(counts)
    if counts.shape[1] != len(idf):
        raise InvalidInputError(f"the counts have {counts.shape[1]} columns, the weights "
                                f"{len(idf)}")
    X = WEIGHTINGS.get(weighting).weigh(counts, np.asarray(idf, dtype=np.float64))
    X.eliminate_zeros()
    return unit_rows(X, normalize)


def checked_counts(counts: sp.spmatrix | np.ndarray) -> sp.csr_matrix:
    """``counts`` as a canonical CSR copy (duplicates summed, indices sorted, no stored
    zeros), refused when not finite or negative."""
    counts = sp.csr_matrix(counts, copy=True)
    counts.sum_duplicates()
    counts.eliminate_zeros()  # stored zeros would count in df and give ln 0 = -inf
    if not np.all(np.isfinite(counts.data)):
        raise InvalidInputError("term counts must be finite (found NaN or infinity)")
    if counts.nnz and counts.data.min() < 0:
        raise InvalidInputError("term counts must be non-negative")
    return counts


def unit_rows(X: sp.csr_matrix, normalize: bool = True) -> sp.csr_matrix:
    """``X`` with sorted indices and, with ``normalize``, each row scaled to unit L2 norm (by
    its largest entry first: no square overflows). Sorting first fixes the order in which a
    row's squares are summed, so the same row always gets the same norm."""
    X.sort_indices()
    if normalize and X.shape[1]:
        X = _normalize_rows(_normalize_rows(X, norm="max", copy=False), norm="l2", copy=False)
    return X


def empty_rows(X: sp.spmatrix) -> np.ndarray:
    """Positions of documents with no term left."""
    return np.flatnonzero(np.diff(sp.csr_matrix(X).indptr) == 0)


def distinct_rows(X: sp.spmatrix | np.ndarray) -> int:
    """The number of distinct rows (documents) of ``X``, sparse or dense."""
    if not sp.issparse(X):
        X = np.asarray(X)
        return len(np.unique(X.reshape(len(X), -1), axis=0)) if X.size else min(len(X), 1)
    X = sp.csr_matrix(X)
    if not X.has_canonical_format or (X.data == 0).any():
        X = X.copy()
        X.sum_duplicates()
        X.eliminate_zeros()
    bounds = zip(X.indptr[:-1], X.indptr[1:])
    return len({(X.indices[a:b].tobytes(), X.data[a:b].tobytes()) for a, b in bounds})


@dataclass(frozen=True, eq=False)
class Vectorizer:
    """The fitted columns of a tf-idf matrix, to put new documents into them.

    ``vocabulary`` holds the term of each column (``term<j>`` for column ``j`` of a count
    matrix without a vocabulary), ``idf`` its weight under ``weighting`` (ones for ``tf``), as
    fitted on the training counts. ``options`` are the preprocessing options of the training
    run (:data:`textcluster.pipeline.prepare.PREPROCESS_DEFAULTS`: the tokenizer's settings
    among them); ``source`` says whether it was fitted on ``"texts"`` or on a count
    ``"matrix"``.

    :meth:`transform` tokenizes and counts new texts over the vocabulary (unknown terms are
    dropped), weighs them with the training idf and scales them to unit rows in ``dtype``: on
    the training texts it gives the training matrix, bit for bit (less the documents it left
    out as empty). :meth:`transform_matrix` does the same from counts over a vocabulary.
    """

    vocabulary: np.ndarray
    idf: np.ndarray
    weighting: str
    dtype: str = "float64"
    options: dict[str, Any] = field(default_factory=dict)
    source: str = "texts"

    def __post_init__(self) -> None:
        vocabulary = np.asarray(self.vocabulary)
        if vocabulary.ndim != 1 or vocabulary.size == 0 or not (
                vocabulary.dtype.kind == "U" or all(isinstance(t, str) for t in vocabulary)):
            raise InvalidInputError("a vectorizer's vocabulary must be a non-empty list of "
                                    "terms")
        object.__setattr__(self, "vocabulary", vocabulary.astype(str))
        object.__setattr__(self, "idf", np.asarray(self.idf, dtype=np.float64))
        if self.idf.shape != self.vocabulary.shape:
            raise InvalidInputError(f"the vectorizer has {len(self.vocabulary)} terms but "
                                    f"{self.idf.size} term weights")
        if len(np.unique(self.vocabulary)) != len(self.vocabulary):
            raise InvalidInputError("the vectorizer's vocabulary has a term twice")
        if not np.all(np.isfinite(self.idf)):
            raise InvalidInputError("the vectorizer's term weights must be finite")
        WEIGHTINGS.get(self.weighting)  # an unknown weighting names the known ones
        if self.dtype not in ("float32", "float64"):
            raise InvalidInputError(f"dtype must be float64 or float32, got {self.dtype!r}")
        if self.source not in ("texts", "matrix"):
            raise InvalidInputError(f"source must be 'texts' or 'matrix', got {self.source!r}")

    @property
    def n_terms(self) -> int:
        return len(self.vocabulary)

    def analyzer(self) -> Analyzer:
        """The tokenizer of the training run."""
        return Analyzer(**{name: self.options[name] for name in ANALYZER_OPTIONS
                           if name in self.options})

    def count(self, texts: Iterable[str]) -> sp.csr_matrix:
        """Term counts of ``texts`` over the vocabulary (terms not in it are dropped)."""
        if self.source != "texts":
            raise InvalidInputError(
                "the model was fitted on a term-count matrix, not on texts, so textcluster "
                "does not know how its terms were made: give the new documents as term counts "
                "with a vocabulary (a matrix corpus) instead of texts")
        counter = CountVectorizer(analyzer=self.analyzer(), vocabulary=list(self.vocabulary),
                                  dtype=np.float64)
        return sp.csr_matrix(counter.transform(texts))

    def match_columns(self, matrix: sp.spmatrix | np.ndarray,
                      vocabulary: Sequence[str] | np.ndarray | None = None) -> sp.csr_matrix:
        """The counts ``matrix`` (documents × its terms) over the vectorizer's vocabulary:
        columns matched by term (``vocabulary``, else ``term<j>`` for column ``j``), columns
        of unknown terms dropped, columns of a term given twice added up."""
        matrix = sp.csr_matrix(matrix)
        names = (np.asarray(vocabulary).astype(str) if vocabulary is not None
                 else np.array([f"term{j}" for j in range(matrix.shape[1])]))
        if len(names) != matrix.shape[1]:
            raise InvalidInputError(f"the matrix has {matrix.shape[1]} columns but "
                                    f"{len(names)} terms")
        order = np.argsort(self.vocabulary)
        at = np.searchsorted(self.vocabulary, names, sorter=order).clip(max=self.n_terms - 1)
        target = order[at]
        known = self.vocabulary[target] == names
        if len(names) and not known.any():
            what = ("has no vocabulary and none of its column numbers is one of the model's "
                    "terms (term<j>)" if vocabulary is None
                    else f"shares no term with the model's {self.n_terms} terms")
            raise InvalidInputError(
                f"the count matrix {what}: it cannot be put into the model's columns. Give "
                f"the new documents' counts over the training vocabulary")
        kept = matrix[:, np.flatnonzero(known)].tocsr()
        counts = sp.csr_matrix((kept.data, target[known][kept.indices], kept.indptr),
                               shape=(matrix.shape[0], self.n_terms))
        counts.sum_duplicates()
        return counts

    def transform_counts(self, counts: sp.spmatrix | np.ndarray) -> sp.csr_matrix:
        """Counts over the vocabulary (documents × :attr:`n_terms`) weighted with the training
        idf, unit rows, in :attr:`dtype`; a document without a known term is an empty row."""
        X = weigh_rows(counts, self.weighting, self.idf)
        return X.astype(self.dtype)

    def transform(self, texts: Iterable[str]) -> sp.csr_matrix:
        """New texts as rows of the training matrix (see the class docstring)."""
        return self.transform_counts(self.count(texts))

    def transform_matrix(self, matrix: sp.spmatrix | np.ndarray,
                         vocabulary: Sequence[str] | np.ndarray | None = None
                         ) -> sp.csr_matrix:
        """New documents given as counts over ``vocabulary`` (:meth:`match_columns`) as rows
        of the training matrix."""
        return self.transform_counts(self.match_columns(matrix, vocabulary))

"""Counting terms and weighting them.

The default weighting is the one of the GNMF papers (Deng Cai's code, DESIGN §5.1):
``w = (1 + ln tf) · ln(N / df)``, each document then scaled to unit L2 norm, and term columns
that end up all-zero (a term in every document, or in none) dropped.
"""

from collections.abc import Callable, Iterable

import numpy as np
import scipy.sparse as sp
from sklearn.feature_extraction.text import CountVectorizer, TfidfTransformer
from sklearn.preprocessing import normalize as _normalize_rows

from .._compat import InvalidParameterError
from .._errors import InvalidInputError
from ..registry import Registry
from .tokenize import Analyzer

WEIGHTINGS = Registry("tf-idf weighting")


def count_terms(texts: Iterable[str], analyzer: Callable[[str], list[str]] | None = None,
                min_df: float = 1, max_df: float = 1.0,
                max_features: int | None = None) -> tuple[sp.csr_matrix, np.ndarray]:
    """Documents × terms count matrix (CSR) and the vocabulary, via scikit-learn's
    ``CountVectorizer`` with a spaCy :class:`~textcluster.text.tokenize.Analyzer`."""
    vectorizer = CountVectorizer(
        analyzer=analyzer or Analyzer(),
        min_df=min_df,
        max_df=max_df,
        max_features=max_features,
        dtype=np.float64,
    )
    try:
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


@WEIGHTINGS.register("cai")
def cai_tfidf(counts: sp.spmatrix) -> sp.spmatrix:
    """``(1 + ln tf) · ln(N / df)`` (Deng Cai's ``tfidf.m``)."""
    counts = sp.csr_matrix(counts, dtype=np.float64, copy=True)
    if counts.nnz and counts.data.min() < 1:
        raise InvalidInputError(
            f"the 'cai' weighting (1 + ln tf) needs term counts of at least 1, but one is "
            f"{counts.data.min():g}: it would get a negative weight. For weighted or fractional "
            f"values choose --set weighting=tf (or weighting=sklearn)"
        )
    df = np.bincount(counts.indices, minlength=counts.shape[1])
    idf = np.log(counts.shape[0] / np.maximum(df, 1))
    counts.data = 1.0 + np.log(counts.data)
    return counts @ sp.diags(idf)


@WEIGHTINGS.register("sklearn")
def sklearn_tfidf(counts: sp.spmatrix) -> sp.spmatrix:
    """scikit-learn's default: ``tf · (ln((1 + N) / (1 + df)) + 1)``."""
    return TfidfTransformer(norm=None).fit_transform(counts)


@WEIGHTINGS.register("sklearn-sublinear")
def sklearn_sublinear_tfidf(counts: sp.spmatrix) -> sp.spmatrix:
    """scikit-learn with ``sublinear_tf=True``: ``(1 + ln tf) · (ln((1 + N) / (1 + df)) + 1)``."""
    return TfidfTransformer(norm=None, sublinear_tf=True).fit_transform(counts)


@WEIGHTINGS.register("tf")
def raw_tf(counts: sp.spmatrix) -> sp.spmatrix:
    """Raw term counts (no idf)."""
    return sp.csr_matrix(counts, dtype=np.float64, copy=True)


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
    counts = sp.csr_matrix(counts, copy=True)
    counts.eliminate_zeros()  # stored zeros would count in df and give ln 0 = -inf
    if not np.all(np.isfinite(counts.data)):
        raise InvalidInputError("term counts must be finite (found NaN or infinity)")
    if counts.nnz and counts.data.min() < 0:
        raise InvalidInputError("term counts must be non-negative")
    used = None
    if drop_empty_terms:  # weigh only the terms that occur: memory follows them, not the shape
        used, columns = np.unique(counts.indices, return_inverse=True)
        counts = sp.csr_matrix((counts.data, columns.ravel(), counts.indptr),
                               shape=(counts.shape[0], used.size))
    X = sp.csr_matrix(WEIGHTINGS.get(weighting)(counts))
    X.eliminate_zeros()
    kept = np.arange(X.shape[1])
    if drop_empty_terms:
        kept = np.flatnonzero(np.bincount(X.indices, minlength=X.shape[1]))
        X = X[:, kept]
    if normalize and X.shape[1]:  # by the largest entry first: no square overflows
        X = _normalize_rows(_normalize_rows(X, norm="max", copy=False), norm="l2", copy=False)
    X.sort_indices()
    return X, kept if used is None else used[kept]


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

"""A corpus, loaded (through the cache) and represented: the tf-idf matrix the models factorize
(DESIGN §5.1), with the checks that refuse a corpus that cannot be clustered."""

import warnings
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from .._errors import DataNotFoundError, InvalidInputError
from ..corpora import Corpus, cache, cards
from ..corpora import loaders as ingest
from ..progress import progress_step
from ..text.tfidf import (WEIGHTINGS, Vectorizer, count_terms, distinct_rows, empty_rows,
                          fit_tfidf)
from ..text.tokenize import Analyzer

# Preprocessing parameters and their defaults (DESIGN §5.1).
PREPROCESS_DEFAULTS = {
    "stop_words": "spacy",
    "lowercase": True,
    "normalize": "none",
    "min_df": 1,
    "max_df": 1.0,
    "max_features": None,
    "weighting": "cai",
    "dtype": "float32",
    "empty_documents": "drop",
}


@dataclass
class Representation:
    """The tf-idf matrix of a corpus and what its rows and columns are."""

    X: sp.csr_matrix
    corpus: Corpus
    terms: np.ndarray  # term of each column (term ids as strings when no vocabulary)
    dropped_docs: list = field(default_factory=list)
    options: dict = field(default_factory=dict)  # the preprocessing applied
    n_distinct: int | None = None  # distinct rows of X: the most clusters it can have
    vectorizer: Vectorizer | None = None  # puts new documents into the columns of X


def represent(corpus: Corpus, **options) -> Representation:
    """The weighted documents × terms matrix of ``corpus`` (DESIGN §5.1 by default; a corpus
    whose rows are already weighted, ``metadata["weighted"]``, only gets unit rows).

    A corpus that cannot be clustered is refused here, before any model is fitted, with an
    :class:`InvalidInputError` saying why and what to do: fewer than two documents, no usable
    term, all documents identical, or every term in every document (its idf is 0)."""
    if corpus.metadata.get("weighted") and "weighting" not in options:
        options = {**options, "weighting": "tf"}
    opts = _check_preprocess({**PREPROCESS_DEFAULTS, **options})
    if corpus.texts is None and corpus.matrix is None:
        raise InvalidInputError(f"corpus {corpus.name!r} has neither texts nor a matrix")
    _check_size(corpus)
    if corpus.texts is not None:
        with _naming(corpus):
            counts, vocabulary = _count_terms(corpus.texts, opts)
    else:
        counts, vocabulary = corpus.matrix, corpus.vocabulary
    _check_counts(corpus, counts)
    with _naming(corpus):
        X, kept, idf = fit_tfidf(counts, weighting=opts["weighting"])
    if X.shape[1] == 0:
        raise InvalidInputError(
            f"every term of corpus {corpus.name!r} occurs in every one of its {corpus.n_docs} "
            f"documents, so the {opts['weighting']!r} tf-idf weighting gives every term the "
            f"weight 0 (idf = ln(N / df) = 0) and the documents cannot be told apart. Add "
            f"documents that differ, or choose another weighting (--set weighting=sklearn or "
            f"weighting=tf)"
        )
    terms = (np.asarray(vocabulary)[kept] if vocabulary is not None
             else np.array([f"term{j}" for j in kept]))
    vectorizer = _vectorizer(corpus, terms, idf, opts)
    X, corpus, dropped = _handle_empty(X, corpus, opts["empty_documents"])
    n_distinct = distinct_rows(X)
    if n_distinct == 1:
        raise _identical(corpus)
    return Representation(X.astype(opts["dtype"]), corpus, terms, dropped, opts, n_distinct,
                          vectorizer)


def _vectorizer(corpus, terms, idf, opts):
    """The fitted columns, for new documents; None when terms repeat (a matrix corpus'
    vocabulary with a term twice), as new counts could not be matched to them by term."""
    terms = np.asarray(terms).astype(str)
    if len(np.unique(terms)) != len(terms):
        return None
    return Vectorizer(terms, idf, opts["weighting"], opts["dtype"], opts,
                      source="texts" if corpus.texts is not None else "matrix")


def vectorize(corpus: Corpus, vectorizer: Vectorizer) -> tuple[sp.csr_matrix, Corpus, list]:
    """New documents as rows of a fitted representation's matrix (``rep.vectorizer``):
    ``(X, documents, dropped ids)``.

    Texts are tokenized and counted as the training texts were, a count matrix is matched to
    the training vocabulary by term; unknown terms are dropped, and the training idf weighs
    the rest. Documents without any known term follow the training's ``empty_documents``:
    left out with a warning (``"drop"``, their ids returned) or an error naming them."""
    if corpus.texts is None and corpus.matrix is None:
        raise InvalidInputError(f"corpus {corpus.name!r} has neither texts nor a matrix")
    if corpus.n_docs == 0:
        raise InvalidInputError(f"corpus {corpus.name!r} has no documents")
    with _naming(corpus):
        if corpus.texts is not None:
            X = vectorizer.transform(_reporting(corpus.texts))
        else:
            X = vectorizer.transform_matrix(corpus.matrix, corpus.vocabulary)
    return _drop_unknown(X, corpus, vectorizer.options.get("empty_documents", "drop"))


@contextmanager
def _naming(corpus):
    """Errors about the data raised within name the corpus."""
    try:
        yield
    except InvalidInputError as exc:
        raise InvalidInputError(f"corpus {corpus.name!r}: {exc}") from None


def _check_size(corpus):
    if corpus.n_docs < 2:
        raise InvalidInputError(
            f"corpus {corpus.name!r} has {corpus.n_docs} document"
            f"{'' if corpus.n_docs == 1 else 's'}; clustering needs at least 2. Check the "
            f"corpus (or the class selection: top, min_class_size)"
        )


def _check_counts(corpus, counts):
    """Refuse term counts without any term, or with every document the same."""
    if counts.nnz == 0:
        why = ("every document is empty after tokenization (it holds only stop words, "
               "numbers, punctuation or one-letter words)" if corpus.texts is not None
               else "its term-count matrix is all zero")
        raise InvalidInputError(
            f"corpus {corpus.name!r} has no usable term: {why}. Check the file (and the text "
            f"column), or keep more words (--set stop_words=none, a lower min_df)"
        )
    if distinct_rows(counts) == 1:
        raise _identical(corpus)


def _identical(corpus):
    return InvalidInputError(
        f"all {corpus.n_docs} documents of corpus {corpus.name!r} are identical after "
        f"preprocessing: there is nothing to cluster. Check the corpus (a repeated row or "
        f"file?) or the preprocessing"
    )


def load_corpus(name: str, data_dir: str | None = None, **options) -> Corpus:
    """:func:`textcluster.corpora.loaders.load_corpus` through the on-disk cache (:mod:`.cache`): a
    corpus parsed before from the same files with the same options is read back instead."""
    key = cache.corpus_key(name, data_dir, options)
    corpus = cache.load_corpus(key)
    if corpus is None:
        corpus = _load_or_say_how_to_fetch(name, data_dir, options)
        cache.save_corpus(key, corpus)
    return corpus


def _load_or_say_how_to_fetch(name, data_dir, options):
    try:
        return ingest.load_corpus(name, data_dir=data_dir, **options)
    except DataNotFoundError as exc:
        card = cards.find_card(name) if name in ingest.CORPORA or ":" in name else None
        if card is None or not card.sources:  # nothing to download (e.g. the panel's CSVs)
            raise
        message = str(exc).rstrip().rstrip(".")
        raise DataNotFoundError(f"{message}. Or let textcluster download it: textcluster "
                                f"corpora fetch {card.name}") from None


# The preprocessing options that shape the term counts (the rest act on the counts).
TOKENIZE_OPTIONS = ("stop_words", "lowercase", "normalize", "min_df", "max_df", "max_features")


def _count_terms(texts, opts):
    """Term counts and vocabulary of ``texts``, from the cache when they were counted before
    with the same tokenization options."""
    key = cache.counts_key(texts, {name: opts[name] for name in TOKENIZE_OPTIONS})
    cached = cache.load_counts(key)
    if cached is not None:
        progress_step(len(texts))
        return cached
    analyzer = Analyzer(stop_words=opts["stop_words"], lowercase=opts["lowercase"],
                        normalize=opts["normalize"])
    counts, vocabulary = count_terms(_reporting(texts), analyzer, opts["min_df"],
                                     opts["max_df"], opts["max_features"])
    cache.save_counts(key, counts, vocabulary)
    return counts, vocabulary


def _reporting(items):
    for item in items:
        yield item
        progress_step()


def _check_preprocess(opts):
    """``opts`` after checking the option names and the values no later stage checks."""
    unknown = sorted(set(opts) - set(PREPROCESS_DEFAULTS))
    if unknown:
        raise InvalidInputError(
            f"unknown preprocessing option {unknown[0]!r}; the options are: "
            f"{', '.join(PREPROCESS_DEFAULTS)}"
        )
    if not isinstance(opts["lowercase"], bool):
        raise InvalidInputError(f"lowercase must be true or false, got {opts['lowercase']!r}")
    if opts["empty_documents"] not in ("error", "drop"):
        raise InvalidInputError(
            f"empty_documents must be 'error' or 'drop', got {opts['empty_documents']!r}"
        )
    if opts["weighting"] not in WEIGHTINGS:
        raise InvalidInputError(
            f"unknown tf-idf weighting {opts['weighting']!r}; known: "
            f"{', '.join(WEIGHTINGS.names())} (GNMF's graph weighting is set with "
            f"--set model.weighting=...)"
        )
    try:
        dtype = np.dtype(opts["dtype"])
    except TypeError:
        dtype = None
    if dtype not in (np.float64, np.float32):
        raise InvalidInputError(f"dtype must be float64 or float32, got {opts['dtype']!r}")
    return {**opts, "dtype": dtype.name}


def _handle_empty(X, corpus, policy):
    """Documents with no term left after preprocessing cannot be clustered: left out with a
    warning (``empty_documents="drop"``, the default; their ids are in ``dropped_docs``), or
    an error (``"error"``)."""
    empty, ids, shown = _empty_documents(X, corpus)
    if not ids:
        return X, corpus, []
    what = (f"{len(ids)} document(s) of corpus {corpus.name!r} have no terms left after "
            f"preprocessing (ids: {shown})")
    if policy != "drop":
        raise InvalidInputError(
            f"{what}. Remove them, relax the preprocessing (stop_words, min_df), or pass "
            f"--set empty_documents=drop to leave them out."
        )
    if len(ids) == X.shape[0]:
        raise InvalidInputError(f"{what}: every document is empty; relax the preprocessing "
                                f"(stop_words, min_df)")
    if len(ids) == X.shape[0] - 1:
        raise InvalidInputError(
            f"{what}: only 1 document is left, and clustering needs at least 2. Relax the "
            f"preprocessing (stop_words, min_df) or check the corpus")
    warnings.warn(f"{what} and are left out of the clustering (run.json lists them; "
                  f"--set empty_documents=error stops instead)", UserWarning, stacklevel=3)
    X, corpus = _without(X, corpus, empty)
    return X, corpus, ids


def _drop_unknown(X, corpus, policy):
    """New documents with no term of the model's vocabulary cannot be placed: the training
    policy leaves them out with a warning, or refuses them."""
    empty, ids, shown = _empty_documents(X, corpus)
    if not ids:
        return X, corpus, []
    what = (f"{len(ids)} of the {X.shape[0]} document(s) of corpus {corpus.name!r} have no "
            f"term of the model's vocabulary after preprocessing (ids: {shown})")
    if len(ids) == X.shape[0]:
        raise InvalidInputError(f"{what}: none can be assigned. Are they in the training "
                                f"corpus' language and domain (and is the text column right)?")
    if policy != "drop":
        raise InvalidInputError(f"{what}, and the model was fitted with "
                                f"empty_documents=error. Remove them to assign the others")
    warnings.warn(f"{what} and are left out", UserWarning, stacklevel=3)
    X, corpus = _without(X, corpus, empty)
    return X, corpus, ids


def _empty_documents(X, corpus):
    """The rows of ``X`` with no term, their document ids, and the ids as a message shows them
    (the first five)."""
    empty = empty_rows(X)
    ids = [str(corpus.ids[i]) for i in empty]
    return empty, ids, ", ".join(ids[:5]) + (" …" if len(ids) > 5 else "")


def _without(X, corpus, rows):
    """``X`` and ``corpus`` without the documents ``rows``."""
    keep = np.setdiff1d(np.arange(X.shape[0]), rows)
    return X[keep], corpus.subset(keep)


def check_k(k: int | None, rep: Representation) -> None:
    """``k`` clusters need at least ``k`` documents, and ``k`` distinct ones."""
    name, n_docs = rep.corpus.name, rep.X.shape[0]
    if k is None:
        raise InvalidInputError(
            f"corpus {name!r} has no class labels: give the number of clusters with --k N, or "
            "--k auto to choose it without labels"
        )
    if not 1 <= k <= n_docs:
        raise InvalidInputError(
            f"--k {k} is not possible for corpus {name!r} with {n_docs} documents; "
            f"choose 1 ≤ k ≤ {n_docs}"
        )
    if rep.n_distinct is not None and k > rep.n_distinct:
        raise InvalidInputError(
            f"corpus {name!r} has {rep.n_distinct} distinct documents (after preprocessing, "
            f"of {n_docs}); k={k} needs at least {k} — lower --k to at most {rep.n_distinct}"
        )

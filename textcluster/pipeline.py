"""One run end to end: load → preprocess → represent → factorize → assign → evaluate."""

import inspect
import time
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np

from . import metrics
from ._errors import InvalidInputError
from .ingest import CORPORA, load_corpus
from .models import MODELS, make_model
from .text.tfidf import count_terms, empty_rows, tfidf
from .text.tokenize import Analyzer

# Preprocessing parameters and their defaults (DESIGN §5.1).
PREPROCESS_DEFAULTS = {
    "stop_words": "spacy",
    "lowercase": True,
    "normalize": "none",
    "min_df": 1,
    "max_df": 1.0,
    "max_features": None,
    "weighting": "cai",
    "dtype": "float64",
    "empty_documents": "error",
}


@dataclass
class Representation:
    """The tf-idf matrix of a corpus and what its rows and columns are."""

    X: object
    corpus: object
    terms: np.ndarray  # term of each column (term ids as strings when no vocabulary)
    dropped_docs: list = field(default_factory=list)


@dataclass
class RunResult:
    """Everything one run produced."""

    corpus: object
    representation: Representation
    model: object
    labels: np.ndarray
    embedding: np.ndarray
    metrics: dict
    timings: dict
    params: dict


class Timer:
    """Wall time per named stage."""

    def __init__(self):
        self.seconds = {}

    @contextmanager
    def stage(self, name):
        start = time.perf_counter()
        yield
        self.seconds[name] = round(time.perf_counter() - start, 4)


def split_settings(corpus_name, model_name, settings):
    """Route ``--set name=value`` pairs to the corpus loader, preprocessing or the model."""
    loader_opts = [p for p in inspect.signature(CORPORA.get(corpus_name)).parameters
                   if p != "data_dir"]
    model_opts = list(MODELS.get(model_name)().get_params())
    routed = {"corpus": {}, "preprocess": {}, "model": {}}
    for name, value in settings.items():
        if name in loader_opts:
            routed["corpus"][name] = value
        elif name in PREPROCESS_DEFAULTS:
            routed["preprocess"][name] = value
        elif name in model_opts:
            routed["model"][name] = value
        else:
            raise InvalidInputError(
                f"unknown setting {name!r}. Corpus options: {', '.join(loader_opts) or '-'}; "
                f"preprocessing: {', '.join(PREPROCESS_DEFAULTS)}; model {model_name!r}: "
                f"{', '.join(model_opts)}"
            )
    return routed


def represent(corpus, **options):
    """The weighted documents × terms matrix of ``corpus`` (DESIGN §5.1 by default)."""
    opts = {**PREPROCESS_DEFAULTS, **options}
    if corpus.texts is not None:
        analyzer = Analyzer(stop_words=opts["stop_words"], lowercase=opts["lowercase"],
                            normalize=opts["normalize"])
        counts, vocabulary = count_terms(corpus.texts, analyzer, opts["min_df"],
                                         opts["max_df"], opts["max_features"])
    elif corpus.matrix is not None:
        counts, vocabulary = corpus.matrix, corpus.vocabulary
    else:
        raise InvalidInputError(f"corpus {corpus.name!r} has neither texts nor a matrix")
    X, kept = tfidf(counts, weighting=opts["weighting"])
    terms = (np.asarray(vocabulary)[kept] if vocabulary is not None
             else np.array([f"term{j}" for j in kept]))
    X, corpus, dropped = _handle_empty(X, corpus, opts["empty_documents"])
    return Representation(X.astype(opts["dtype"]), corpus, terms, dropped)


def _handle_empty(X, corpus, policy):
    empty = empty_rows(X)
    if len(empty) == 0:
        return X, corpus, []
    ids = [str(corpus.ids[i]) for i in empty]
    if policy != "drop":
        shown = ", ".join(ids[:5]) + (" …" if len(ids) > 5 else "")
        raise InvalidInputError(
            f"{len(ids)} document(s) of corpus {corpus.name!r} have no terms left after "
            f"preprocessing (ids: {shown}). Remove them, relax the preprocessing "
            f"(stop_words, min_df), or pass --set empty_documents=drop to leave them out."
        )
    keep = np.setdiff1d(np.arange(X.shape[0]), empty)
    return X[keep], corpus.subset(keep), ids


def run(corpus_name, model_name, k=None, seed=0, data_dir=None, settings=None):
    """Run one model on one corpus and evaluate it; returns a :class:`RunResult`."""
    routed = split_settings(corpus_name, model_name, settings or {})
    timer = Timer()
    with timer.stage("load"):
        corpus = load_corpus(corpus_name, data_dir=data_dir, **routed["corpus"])
    with timer.stage("preprocess"):
        rep = represent(corpus, **routed["preprocess"])
    corpus = rep.corpus
    k = k or (len(corpus.classes) if corpus.labels is not None else None)
    _check_k(k, rep.X.shape[0], corpus.name)
    model = make_model(model_name, n_components=k, random_state=seed, **routed["model"])
    with timer.stage("fit"):
        embedding = model.fit_transform(rep.X)
    labels = model.labels_
    with timer.stage("evaluate"):
        scores = evaluate(corpus, labels, k)
    params = {"corpus": corpus_name, "model": model_name, "k": k, "seed": seed,
              "corpus_options": routed["corpus"],
              "preprocess": {**PREPROCESS_DEFAULTS, **routed["preprocess"]},
              "model_params": _jsonable(model.get_params())}
    return RunResult(corpus, rep, model, labels, embedding, scores, timer.seconds, params)


def evaluate(corpus, labels, k):
    """Metrics of a clustering (all five when the corpus has labels)."""
    scores = {"n_docs": int(len(labels)), "n_clusters": int(k)}
    if corpus.labels is not None:
        scores.update(metrics.evaluate(corpus.labels, labels))
    return scores


def _check_k(k, n_docs, name):
    if k is None:
        raise InvalidInputError(
            f"corpus {name!r} has no class labels: give the number of clusters with --k"
        )
    if not 1 <= k <= n_docs:
        raise InvalidInputError(
            f"--k {k} is not possible for corpus {name!r} with {n_docs} documents; "
            f"choose 1 ≤ k ≤ {n_docs}"
        )


def _jsonable(params):
    return {key: (value if isinstance(value, (int, float, str, bool, type(None)))
                  else repr(value)) for key, value in params.items()}

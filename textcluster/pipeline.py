"""One run end to end: load → preprocess → represent → factorize → assign → evaluate."""

import inspect
import time
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field

import numpy as np

from . import metrics
from ._errors import InvalidInputError
from .ingest import load_corpus, resolve_loader
from .models import MODELS, make_model
from .progress import progress_step
from .text.tfidf import WEIGHTINGS, count_terms, empty_rows, tfidf
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
    "dtype": "float32",
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


# Model parameters that have their own command-line option instead of ``--set``.
RESERVED_SETTINGS = {"n_components": "--k", "random_state": "--seed"}
SETTING_STAGES = ("corpus", "preprocess", "model")


def split_settings(corpus_name, model_name, settings):
    """Route ``--set name=value`` pairs to the corpus loader, preprocessing or the model.

    A bare name goes to the first of corpus options, preprocessing and model parameters that
    has it. Prefix it with ``corpus.``, ``preprocess.`` or ``model.`` to choose: ``weighting``
    alone is the tf-idf weighting, ``model.weighting`` GNMF's graph weighting.
    """
    options = {
        "corpus": [p for p in inspect.signature(resolve_loader(corpus_name)).parameters
                   if p != "data_dir"],
        "preprocess": list(PREPROCESS_DEFAULTS),
        "model": [p for p in MODELS.get(model_name)().get_params()
                  if p not in RESERVED_SETTINGS],
    }
    routed = {stage: {} for stage in SETTING_STAGES}
    for name, value in settings.items():
        stage, _, bare = name.rpartition(".")
        if bare in RESERVED_SETTINGS and stage in ("", "model"):
            raise InvalidInputError(
                f"set {bare} with the {RESERVED_SETTINGS[bare]} option, not with --set"
            )
        if stage and stage not in SETTING_STAGES:
            raise InvalidInputError(
                f"unknown setting prefix {stage!r} in {name!r}; use corpus., preprocess. "
                f"or model."
            )
        stages = [stage] if stage else [s for s in SETTING_STAGES if bare in options[s]]
        if not stages or bare not in options[stages[0]]:
            raise InvalidInputError(
                f"unknown setting {name!r}. Corpus options: "
                f"{', '.join(options['corpus']) or '-'}; preprocessing: "
                f"{', '.join(options['preprocess'])}; model {model_name!r}: "
                f"{', '.join(options['model'])}"
            )
        routed[stages[0]][bare] = value
    return routed


def represent(corpus, **options):
    """The weighted documents × terms matrix of ``corpus`` (DESIGN §5.1 by default)."""
    opts = _check_preprocess({**PREPROCESS_DEFAULTS, **options})
    if corpus.texts is not None:
        analyzer = Analyzer(stop_words=opts["stop_words"], lowercase=opts["lowercase"],
                            normalize=opts["normalize"])
        counts, vocabulary = count_terms(_reporting(corpus.texts), analyzer, opts["min_df"],
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


def run(corpus_name, model_name, k=None, seed=0, data_dir=None, settings=None,
        progress=None):
    """Run one model on one corpus and evaluate it; returns a :class:`RunResult`.

    ``progress(label, total)``, when given, returns a context manager that displays the
    progress of a long stage (documents tokenized, iterations run).
    """
    routed = split_settings(corpus_name, model_name, settings or {})
    progress = progress or (lambda label, total: nullcontext())
    timer = Timer()
    with timer.stage("load"):
        corpus = load_corpus(corpus_name, data_dir=data_dir, **routed["corpus"])
    with timer.stage("preprocess"), progress("preprocessing", corpus.n_docs):
        rep = represent(corpus, **routed["preprocess"])
    corpus = rep.corpus
    k = k or (len(corpus.classes) if corpus.labels is not None else None)
    _check_k(k, rep.X.shape[0], corpus.name)
    model = make_model(model_name, n_components=k, random_state=seed, **routed["model"])
    with timer.stage("fit"), progress("factorizing", _planned_iterations(model)):
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


def _planned_iterations(model):
    planned = getattr(model, "planned_iterations", None)
    return planned() if planned else 1


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

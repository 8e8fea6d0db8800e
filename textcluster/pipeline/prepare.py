"""One run end to end: load → preprocess → represent → factorize → assign → evaluate."""

import inspect
import time
import warnings
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field

import numpy as np

from ..corpora import cache, cards, loaders as ingest
from .. import metrics
from .._errors import DataNotFoundError, InvalidInputError
from ..corpora.loaders import resolve_loader
from ..models import MODELS, SEMI_SUPERVISED, chosen_settings, make_model
from .protocol import evaluate_split, labeled_subset
from ..progress import progress_step
from ..text.tfidf import WEIGHTINGS, count_terms, distinct_rows, empty_rows, tfidf
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

    X: object
    corpus: object
    terms: np.ndarray  # term of each column (term ids as strings when no vocabulary)
    dropped_docs: list = field(default_factory=list)
    options: dict = field(default_factory=dict)  # the preprocessing applied
    n_distinct: int | None = None  # distinct rows of X: the most clusters it can have


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
        X, kept = tfidf(counts, weighting=opts["weighting"])
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
    X, corpus, dropped = _handle_empty(X, corpus, opts["empty_documents"])
    n_distinct = distinct_rows(X)
    if n_distinct == 1:
        raise _identical(corpus)
    return Representation(X.astype(opts["dtype"]), corpus, terms, dropped, opts, n_distinct)


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


def load_corpus(name, data_dir=None, **options):
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
    empty = empty_rows(X)
    if len(empty) == 0:
        return X, corpus, []
    ids = [str(corpus.ids[i]) for i in empty]
    shown = ", ".join(ids[:5]) + (" …" if len(ids) > 5 else "")
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
    keep = np.setdiff1d(np.arange(X.shape[0]), empty)
    return X[keep], corpus.subset(keep), ids


def run(corpus_name, model_name, k=None, seed=0, data_dir=None, settings=None,
        progress=None, labeled_fraction=None, labeled_per_class=None):
    """Run one model on one corpus and evaluate it; returns a :class:`RunResult`.

    ``settings`` go to the corpus loader, preprocessing or the model (:func:`split_settings`),
    except ``graph``: ``"knn"`` (default; graph-regularized models build a kNN graph) or the name
    of the graph the corpus comes with (``"citations"`` for CiteULike), passed to ``fit``.
    ``progress(label, total)``, when given, returns a context manager that displays the
    progress of a long stage (documents tokenized, iterations run).
    ``labeled_fraction`` / ``labeled_per_class``: semi-supervised models see the labels of that
    share (or number) of each class's documents, drawn with ``seed``; the metrics are then
    given on all documents and, with the suffix ``_unlabeled``, on the others.
    """
    settings = dict(settings or {})
    graph_choice = settings.pop("graph", "knn")
    routed = split_settings(corpus_name, model_name, settings)
    progress = progress or (lambda label, total: nullcontext())
    timer = Timer()
    with timer.stage("load"):
        corpus = load_corpus(corpus_name, data_dir=data_dir, **routed["corpus"])
    with timer.stage("preprocess"), progress("preprocessing", corpus.n_docs):
        rep = represent(corpus, **routed["preprocess"])
    corpus = rep.corpus
    k = k or (len(corpus.classes) if corpus.labels is not None else None)
    check_k(k, rep)
    model = make_model(model_name, n_components=k, random_state=seed, **routed["model"])
    graph = _document_graph(graph_choice, corpus, model, model_name)
    y = _seen_labels(corpus, model_name, seed, labeled_fraction, labeled_per_class)
    with timer.stage("fit"), progress("factorizing", _planned_iterations(model)):
        embedding = model.fit_transform(rep.X, y, graph=graph)
    labels = model.labels_
    with timer.stage("evaluate"):
        scores = evaluate(corpus, labels, k, model, y)
    params = {"corpus": corpus_name, "model": model_name, "k": k, "seed": seed,
              "corpus_options": routed["corpus"],
              "preprocess": rep.options,
              "dropped_documents": rep.dropped_docs,
              "graph": graph_choice,
              "labeled": {"fraction": labeled_fraction, "per_class": labeled_per_class,
                          "n_labeled": None if y is None else int((y >= 0).sum())},
              "model_params": _jsonable(model.get_params())}
    return RunResult(corpus, rep, model, labels, embedding, scores, timer.seconds, params)


UNLABELLED_NOTE = ("the corpus has no class labels: purity, entropy, NMI, accuracy and ARI "
                   "need labels")


def _document_graph(choice, corpus, model, model_name):
    """The graph passed to ``fit``: None (the model builds its kNN graph) or the corpus' own."""
    if choice == "knn":
        return None
    if choice != corpus.metadata.get("graph") or corpus.graph is None:
        has = ("no document graph" if corpus.graph is None
               else f"only the graph {corpus.metadata.get('graph')!r}")
        raise InvalidInputError(f"--set graph={choice}: corpus {corpus.name!r} has "
                                f"{has}; use graph=knn (the default)")
    if not model.uses_document_graph:
        raise InvalidInputError(
            f"--set graph={choice}: model {model_name!r} uses no document graph; "
            f"choose a graph-regularized model such as gnmf"
        )
    return corpus.graph


def _seen_labels(corpus, model_name, seed, fraction, per_class):
    """``y`` for a semi-supervised model (class codes of the labelled documents, -1 elsewhere),
    or None when no labels are asked for."""
    if fraction is None and per_class is None:
        return None
    if model_name not in SEMI_SUPERVISED:
        raise InvalidInputError(
            f"model {model_name!r} does not use labels; --labeled-fraction and "
            f"--labeled-per-class are for {', '.join(sorted(SEMI_SUPERVISED))}"
        )
    if corpus.labels is None:
        raise InvalidInputError(f"corpus {corpus.name!r} has no class labels to show the model")
    return labeled_subset(corpus.labels, fraction=fraction, per_class=per_class,
                          random_state=seed)


def evaluate(corpus, labels, k, model=None, y=None):
    """Metrics of a clustering: all five when the corpus has labels, else ``labels: None`` and a
    note saying so; plus the model's final objective when it records one. With ``y`` (the
    labels a semi-supervised model saw), also the metrics of the unlabelled documents
    (suffix ``_unlabeled``)."""
    scores = {"n_docs": int(len(labels)), "n_clusters": int(k)}
    if corpus.labels is not None and y is not None:
        split = evaluate_split(corpus.labels, labels, y)
        scores.update(split["all"], n_labeled=int((np.asarray(y) >= 0).sum()))
        if split["unlabelled"] is not None:
            scores.update({f"{n}_unlabeled": v for n, v in split["unlabelled"].items()})
    elif corpus.labels is not None:
        scores.update(metrics.evaluate(corpus.labels, labels))
    else:
        scores.update(labels=None, note=UNLABELLED_NOTE)
    history = getattr(model, "objective_history_", None)
    if history is not None and len(history):
        scores["objective"] = float(history[-1])
    return {**scores, **chosen_settings(model)}


def _planned_iterations(model):
    planned = getattr(model, "planned_iterations", None)
    return planned() if planned else 1


def check_k(k, rep):
    """``k`` clusters need at least ``k`` documents, and ``k`` distinct ones."""
    name, n_docs = rep.corpus.name, rep.X.shape[0]
    if k is None:
        raise InvalidInputError(
            f"corpus {name!r} has no class labels: give the number of clusters with --k"
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


def _jsonable(params):
    return {key: (value if isinstance(value, (int, float, str, bool, type(None)))
                  else repr(value)) for key, value in params.items()}

"""Evaluation protocols of the papers: class subsets, labelled fractions, split metrics.

* :func:`class_subset` — the class-subset protocol (DESIGN §6): draw ``k`` classes with
  ``numpy.random.default_rng(draw)`` and keep their documents, so every model sees the same
  draws.
* :func:`labeled_subset` — which documents a semi-supervised model may see the label of
  (paper 004: 10 % of each class), as scikit-learn's ``y`` with ``-1`` for unlabelled.
* :func:`evaluate_split` — the metrics on all documents and on the unlabelled ones only.
"""

from numbers import Integral, Real

import numpy as np

from .._errors import InvalidInputError
from ..metrics import evaluate

__all__ = ["class_subset", "evaluate_split", "labeled_subset"]


def _check_labels(labels):
    if labels is None:
        raise InvalidInputError(
            "the corpus has no class labels; the class-subset and labelled-fraction protocols "
            "need one label per document"
        )
    labels = np.asarray(labels)
    if labels.ndim != 1 or labels.size == 0:
        raise InvalidInputError(
            f"labels must be a non-empty 1-D sequence (one per document), got shape {labels.shape}"
        )
    return labels


def _is_int(value):
    return isinstance(value, Integral) and not isinstance(value, bool)


def labeled_subset(labels, fraction=None, per_class=None, random_state=None):
    """Class codes of a seeded, per-class random subset of the documents; ``-1`` elsewhere.

    Give exactly one of ``fraction`` (in (0, 1]: ``round(fraction · n_c)`` documents of each
    class of size ``n_c``, at least one) and ``per_class`` (that many of each class; every
    class must have at least that many). ``random_state``: seed (int), ``numpy`` Generator or
    None. The codes are the positions of the classes in ``numpy.unique(labels)``, the form the
    semi-supervised models take as ``y``.
    """
    labels = _check_labels(labels)
    classes, codes = np.unique(labels, return_inverse=True)
    codes = codes.ravel()
    sizes = np.bincount(codes, minlength=classes.size)
    counts = _labelled_counts(classes, sizes, fraction, per_class)
    rng = np.random.default_rng(random_state)
    y = np.full(labels.size, -1, dtype=np.intp)
    for code, count in enumerate(counts):
        chosen = rng.choice(np.flatnonzero(codes == code), size=count, replace=False)
        y[chosen] = code
    return y


def _labelled_counts(classes, sizes, fraction, per_class):
    """How many documents of each class get their label."""
    if (fraction is None) == (per_class is None):
        raise InvalidInputError("give exactly one of fraction= and per_class=")
    if fraction is not None:
        if not (isinstance(fraction, Real) and not isinstance(fraction, bool)
                and 0 < fraction <= 1):
            raise InvalidInputError(
                f"fraction={fraction!r} must be a number in (0, 1], e.g. 0.1 for 10 % of each "
                "class"
            )
        return np.maximum(1, np.floor(fraction * sizes + 0.5).astype(np.intp))
    if not _is_int(per_class) or per_class < 1:
        raise InvalidInputError(f"per_class={per_class!r} must be a positive integer")
    small = np.flatnonzero(sizes < per_class)
    if small.size:
        c = small[0]
        raise InvalidInputError(
            f"per_class={per_class} but class {str(classes[c])!r} has only {sizes[c]} "
            f"document{'s' if sizes[c] != 1 else ''} "
            f"(smallest class: {sizes.min()}); choose per_class <= {sizes.min()} or use fraction="
        )
    return np.full(sizes.size, per_class, dtype=np.intp)


def class_subset(labels, k, draw):
    """Indices (sorted) of the documents of ``k`` classes drawn at random.

    The classes are drawn without replacement from ``numpy.unique(labels)`` with
    ``numpy.random.default_rng(draw)``, so draw ``d`` is the same for every model and run.
    """
    labels = _check_labels(labels)
    classes = np.unique(labels)
    if not _is_int(k) or not 1 <= k <= classes.size:
        raise InvalidInputError(
            f"k={k!r} classes cannot be drawn: the corpus has {classes.size} classes; "
            f"choose 1 <= k <= {classes.size}"
        )
    if not _is_int(draw) or draw < 0:
        raise InvalidInputError(f"draw={draw!r} must be a non-negative integer (the seed)")
    chosen = np.random.default_rng(draw).choice(classes, size=k, replace=False)
    return np.flatnonzero(np.isin(labels, chosen))


def evaluate_split(labels_true, labels_pred, y):
    """Metrics (:func:`textcluster.metrics.evaluate`) on all documents and on the unlabelled.

    ``y`` marks the documents whose label the model saw (``-1`` = unlabelled). Returns
    ``{"all": {...}, "unlabelled": {...}}``; ``"unlabelled"`` is None when every document was
    labelled.
    """
    labels_true, labels_pred = np.asarray(labels_true), np.asarray(labels_pred)
    y = np.asarray(y)
    if y.shape != labels_true.shape or labels_pred.shape != labels_true.shape:
        raise InvalidInputError(
            f"labels_true {labels_true.shape}, labels_pred {labels_pred.shape} and y {y.shape} "
            "must have one entry per document each"
        )
    unlabelled = y == -1
    return {
        "all": evaluate(labels_true, labels_pred),
        "unlabelled": (evaluate(labels_true[unlabelled], labels_pred[unlabelled])
                       if unlabelled.any() else None),
    }

"""External clustering metrics: purity, entropy, NMI, accuracy, the Rand index and ARI.

Every metric is a plain function ``f(labels_true, labels_pred) -> float``. Labels may be of any
hashable type (ints, strings, ...); the two sequences must be 1-D, non-empty and of equal length.
Notation (DESIGN.md §7): n documents, cluster k holds n_k documents, n_k^l of them from class l,
q classes.

:data:`METRICS` names the metrics for pipeline files and the CLI; each entry says whether higher
is better.
"""

from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass

import numpy as np
import pandas as pd
import scipy.sparse as sp
from scipy.optimize import linear_sum_assignment
from sklearn.metrics import mutual_info_score

from ._errors import InvalidInputError
from .registry import Registry

# Suffix of a metric computed on the documents whose labels a semi-supervised model did not see.
UNLABELED = "_unlabeled"

Labels = Iterable[Hashable]  # one label per document: a 1-D array or sequence

__all__ = [
    "METRICS",
    "Metric",
    "accuracy",
    "adjusted_rand",
    "contingency",
    "entropy",
    "evaluate",
    "nmi",
    "purity",
    "rand_index",
]

NMI_AVERAGE_METHODS = ("max", "arithmetic", "geometric", "min")


# -- input checking ------------------------------------------------------------------------------


def _encode(labels, name):
    """Integer codes 0..c-1 of 1-D ``labels``, in sorted label order when the labels sort."""
    one_dim = np.iterable(labels) and getattr(labels, "ndim", 1) == 1
    if isinstance(labels, (str, bytes)) or not one_dim:
        raise InvalidInputError(
            f"{name} must be a 1-D sequence of labels, got {type(labels).__name__} "
            f"with shape {np.shape(labels)}; pass one label per document"
        )
    values = labels if isinstance(labels, np.ndarray) else pd.Series(list(labels), dtype=object)
    try:
        try:  # hashing, in O(n): codes in sorted order of the distinct labels
            return pd.factorize(values, sort=True, use_na_sentinel=False)[0]
        except TypeError:  # hashable but not mutually orderable, e.g. mixed int and str
            return pd.factorize(values, sort=False, use_na_sentinel=False)[0]
    except TypeError:  # unhashable elements such as lists: not a 1-D sequence of labels
        raise InvalidInputError(
            f"{name} must be a 1-D sequence of hashable labels; an element is "
            f"{type(values[0]).__name__}; flatten it or pass one label per document"
        ) from None


def _check_labels(labels_true, labels_pred):
    """Integer codes of both labelings, after checking they describe the same n > 0 documents."""
    true = _encode(labels_true, "labels_true")
    pred = _encode(labels_pred, "labels_pred")
    if len(true) != len(pred):
        raise InvalidInputError(
            f"labels_true has {len(true)} labels but labels_pred has {len(pred)}; "
            "pass one true and one predicted label per document, in the same order"
        )
    if len(true) == 0:
        raise InvalidInputError("labels_true and labels_pred are empty; pass at least one document")
    return true, pred


def _table(true, pred):
    """``C`` (clusters × classes) of the integer codes, in O(n) (no sort)."""
    classes = int(true.max()) + 1
    counts = np.bincount(pred * classes + true, minlength=(int(pred.max()) + 1) * classes)
    return counts.reshape(-1, classes)


# -- metrics on a contingency table C (clusters x classes) ----------------------------------------


def _purity(C):
    return C.max(axis=1).sum() / C.sum()


def _entropy(C):
    n, q = C.sum(), C.shape[1]
    if q == 1:
        return 0.0
    n_k = C.sum(axis=1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(C > 0, C * np.log2(C / n_k), 0.0)
    # clipped (and + 0.0 turns -0.0 into 0.0) so rounding never leaves [0, 1]
    return float(np.clip(-terms.sum() / (n * np.log2(q)), 0.0, 1.0)) + 0.0


def _accuracy(C):
    rows, cols = linear_sum_assignment(C, maximize=True)
    return C[rows, cols].sum() / C.sum()


def _nmi(C, average_method):
    """Mutual information over the average of the two entropies (natural logarithms), with
    scikit-learn's limits: 1 when neither labeling splits the documents, 0 when MI is 0."""
    if C.shape == (1, 1):
        return 1.0
    mi = mutual_info_score(None, None, contingency=sp.csr_matrix(C, dtype=np.float64))
    if mi == 0:
        return 0.0
    h_true, h_pred = _label_entropy(C.sum(axis=0)), _label_entropy(C.sum(axis=1))
    average = {"max": max, "min": min, "arithmetic": lambda a, b: (a + b) / 2,
               "geometric": lambda a, b: np.sqrt(a * b)}[average_method]
    return float(mi / average(h_true, h_pred))


def _label_entropy(sizes):
    sizes = sizes[sizes > 0].astype(np.float64)
    if sizes.size == 1:
        return 0.0
    total = sizes.sum()
    return float(-np.sum((sizes / total) * (np.log(sizes) - np.log(total))))


def _pairs(C):
    """Ordered document pairs ``(together in both, apart in both, (together in the clusters
    only, together in the classes only))``, as Python ints (no overflow)."""
    n, squares = int(C.sum()), int(np.square(C, dtype=np.int64).sum())
    cluster_sizes, class_sizes = C.sum(axis=1), C.sum(axis=0)
    in_cluster_only = int(np.square(cluster_sizes, dtype=np.int64).sum()) - squares
    in_class_only = int(np.square(class_sizes, dtype=np.int64).sum()) - squares
    together = squares - n
    return together, n * n - in_cluster_only - in_class_only - squares, (in_cluster_only,
                                                                         in_class_only)


def _rand(C):
    together, apart, (one, other) = _pairs(C)
    if one == other == 0:  # no pair or full agreement
        return 1.0
    return (together + apart) / (together + apart + one + other)


def _adjusted_rand(C):
    tp, tn, (fp, fn) = _pairs(C)
    if fn == 0 and fp == 0:
        return 1.0
    return 2.0 * (tp * tn - fn * fp) / ((tp + fn) * (fn + tn) + (tp + fp) * (fp + tn))


# -- public functions ----------------------------------------------------------------------------


def contingency(labels_true: Labels, labels_pred: Labels) -> np.ndarray:
    """Contingency table ``C``: ``C[k, l] = n_k^l`` documents of class l are in cluster k.

    Returns a dense int64 array of shape (n_clusters, n_classes): rows are clusters (distinct values
    of ``labels_pred``), columns classes (distinct values of ``labels_true``), each in sorted order
    of the label values (first-appearance order when the values cannot be sorted). Note that this is
    the transpose of :func:`sklearn.metrics.cluster.contingency_matrix`, which puts classes first.
    """
    return _table(*_check_labels(labels_true, labels_pred))


def purity(labels_true: Labels, labels_pred: Labels) -> float:
    """Purity = (1/n) Σ_k max_l n_k^l, in (0, 1]; higher is better.

    Zhao & Karypis (2004), "Empirical and theoretical comparisons of selected criterion functions
    for document clustering", Machine Learning 55(3).
    """
    return float(_purity(contingency(labels_true, labels_pred)))


def entropy(labels_true: Labels, labels_pred: Labels) -> float:
    """Entropy = -(1/(n log2 q)) Σ_k Σ_l n_k^l log2(n_k^l / n_k), in [0, 1]; lower is better.

    q is the number of classes; defined as 0 when q = 1. Zhao & Karypis (2004), as used in
    paper 000 (AGPNMF), eq. 24.
    """
    return _entropy(contingency(labels_true, labels_pred))


def nmi(labels_true: Labels, labels_pred: Labels, average_method: str = "max") -> float:
    """Normalized mutual information = MI(C, C') / avg(H(C), H(C')), in [0, 1]; higher is better.

    ``average_method`` is "max" (the papers' and Deng Cai's definition, the default), "arithmetic"
    (scikit-learn's default), "geometric" (Strehl & Ghosh 2002) or "min". As
    :func:`sklearn.metrics.normalized_mutual_info_score`, from the contingency table.
    """
    if average_method not in NMI_AVERAGE_METHODS:
        raise InvalidInputError(
            f"nmi: average_method={average_method!r} is not supported; "
            f"use one of {', '.join(map(repr, NMI_AVERAGE_METHODS))}"
        )
    return _nmi(contingency(labels_true, labels_pred), average_method)


def accuracy(labels_true: Labels, labels_pred: Labels) -> float:
    """Accuracy (AC) = (1/n) max_m Σ_k n_k^{m(k)} over one-to-one maps m from clusters to classes.

    The best map is found by the Hungarian method (:func:`scipy.optimize.linear_sum_assignment`);
    with more clusters than classes the unmatched clusters count as errors. In [0, 1]; higher is
    better. Cai, He & Han (2011), "Graph regularized NMF for data representation" (paper 003).
    """
    return float(_accuracy(contingency(labels_true, labels_pred)))


def rand_index(labels_true: Labels, labels_pred: Labels) -> float:
    """Rand index = share of document pairs on which clusters and classes agree (both together
    or both apart), in [0, 1]; higher is better. Rand (1971).

    Not corrected for chance: with many clusters most pairs are apart in both partitions, so
    even poor clusterings score high (see :func:`adjusted_rand`). Paper 002's "clustering
    accuracy" column matches it (see the README). As :func:`sklearn.metrics.rand_score`.
    """
    return float(_rand(contingency(labels_true, labels_pred)))


def adjusted_rand(labels_true: Labels, labels_pred: Labels) -> float:
    """Adjusted Rand index (Hubert & Arabie 1985), in [-0.5, 1], 0 for chance; higher is better.

    As :func:`sklearn.metrics.adjusted_rand_score`.
    """
    return float(_adjusted_rand(contingency(labels_true, labels_pred)))


def evaluate(labels_true: Labels, labels_pred: Labels) -> dict[str, float]:
    """All registered metrics at once: a dict with keys purity, entropy, nmi, accuracy,
    rand_index, ari."""
    C = contingency(labels_true, labels_pred)
    return {
        "purity": float(_purity(C)),
        "entropy": _entropy(C),
        "nmi": _nmi(C, "max"),
        "accuracy": float(_accuracy(C)),
        "rand_index": float(_rand(C)),
        "ari": float(_adjusted_rand(C)),
    }


# -- registry ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Metric:
    """A named metric ``func(labels_true, labels_pred) -> float`` and its direction."""

    name: str
    func: Callable[[Labels, Labels], float]
    greater_is_better: bool


METRICS = Registry("metric")
for _metric in (
    Metric("purity", purity, True),
    Metric("entropy", entropy, False),
    Metric("nmi", nmi, True),
    Metric("accuracy", accuracy, True),
    Metric("rand_index", rand_index, True),
    Metric("ari", adjusted_rand, True),
):
    METRICS.register(_metric.name, _metric)
del _metric

"""Aggregating batch results: metrics, mean ± std per k, paired Wilcoxon signed-rank tests.

Works on the job frames of :func:`textcluster.batch.ledger.load_results` (one row per job,
``metric.<name>`` columns) with a ``method`` column (the model, or ``model:variant``). Values of
the papers' metrics are given in % (``MetricInfo.scale``), as the papers print them.
"""

import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from .._errors import InvalidInputError
from ..metrics import METRICS, UNLABELED

__all__ = [
    "MetricInfo",
    "PairedTest",
    "available_metrics",
    "average_over_k",
    "metric_info",
    "metric_values",
    "paired_values",
    "select_metrics",
    "significance_mark",
    "summarize_by_k",
    "wilcoxon_test",
]

PAIR_KEYS = ("corpus", "k", "draw", "seed")
METRIC_ORDER = ("accuracy", "nmi", "purity", "entropy", "rand_index", "ari")
METRIC_LABELS = {"accuracy": "AC", "nmi": "NMI", "purity": "Purity", "entropy": "Entropy",
                 "rand_index": "RI", "ari": "ARI"}
ALPHA = 0.05
# With fewer pairs the exact two-sided test cannot reach p < 0.05 (smallest p = 2 / 2**n).
MIN_PAIRS = 6
ZERO_METHOD = "pratt"  # zero differences stay in the ranking (Pratt 1959) instead of dropped


# -- metrics -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MetricInfo:
    """How a metric is labelled and printed; ``greater_is_better`` is None when unknown."""

    name: str
    label: str
    percent: bool
    greater_is_better: object

    @property
    def scale(self) -> float:
        return 100.0 if self.percent else 1.0

    @property
    def axis_label(self) -> str:
        return f"{self.label} (%)" if self.percent else self.label


def metric_info(name: str) -> MetricInfo:
    base = name[: -len(UNLABELED)] if name.endswith(UNLABELED) else name
    known = base in METRICS
    label = METRIC_LABELS.get(base, base)
    if name.endswith(UNLABELED):
        label += " (unlabelled documents)"
    return MetricInfo(name, label, known,
                      METRICS.get(base).greater_is_better if known else None)


def available_metrics(jobs: pd.DataFrame) -> list[str]:
    """Metric names with a number in at least one job, in the papers' order (AC, NMI, purity,
    entropy, Rand index, ARI, the same on unlabelled documents, then any other); counts such as
    ``n_docs`` are left out."""
    names = []
    for column in jobs.columns:
        if not column.startswith("metric."):
            continue
        name = column[len("metric."):]
        values = pd.to_numeric(jobs[column], errors="coerce")
        if not name.startswith("n_") and values.notna().any():
            names.append(name)
    return sorted(names, key=_metric_rank)


def _metric_rank(name):
    unlabeled = name.endswith(UNLABELED)
    base = name[: -len(UNLABELED)] if unlabeled else name
    position = METRIC_ORDER.index(base) if base in METRIC_ORDER else len(METRIC_ORDER)
    return (position == len(METRIC_ORDER), unlabeled, position, name)


def select_metrics(available: list[str], requested: list[str] | None = None) -> list[str]:
    """The metrics to report: all available, or those ``requested`` (a name also selects its
    ``_unlabeled`` companion)."""
    if not available:
        raise InvalidInputError(
            "the finished jobs record no clustering metric (purity, entropy, NMI, accuracy, ARI "
            "need class labels); there is nothing to tabulate"
        )
    if not requested:
        return list(available)
    chosen: list[str] = []
    for name in requested:
        name = name.strip().lower()
        matches = [m for m in available if m in (name, name + UNLABELED)]
        if not matches:
            raise InvalidInputError(
                f"--metrics: the ledger has no metric {name!r}; it has {', '.join(available)}"
            )
        chosen.extend(m for m in matches if m not in chosen)
    return sorted(chosen, key=_metric_rank)


# -- aggregation ---------------------------------------------------------------------------------


def metric_values(rows: pd.DataFrame, metric: str, scaled: bool = True) -> pd.DataFrame:
    """``rows`` that have a value of ``metric``, with that value in a ``value`` column: in %
    where the papers use % (``scaled``), else as recorded."""
    column = f"metric.{metric}"
    if column not in rows.columns:
        return rows.iloc[0:0].assign(value=pd.Series(dtype=float))
    scale = metric_info(metric).scale if scaled else 1.0
    values = pd.to_numeric(rows[column], errors="coerce") * scale
    return rows.assign(value=values)[values.notna()]


def summarize_by_k(rows: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Mean, sample std (ddof = 1; NaN for a single run), runs and distinct draws per
    (method, k). Rows in the order of the methods' first appearance, then k."""
    data = metric_values(rows, metric)
    columns = ["method", "k", "mean", "std", "runs", "draws"]
    if data.empty:
        return pd.DataFrame(columns=columns)
    grouped = data.groupby(["method", "k"], sort=False)
    summary = grouped["value"].agg(mean="mean", std="std", runs="count")
    summary["draws"] = grouped["draw"].nunique(dropna=False)
    summary = summary.reset_index()
    order = {method: i for i, method in enumerate(dict.fromkeys(data["method"]))}
    return (summary.assign(_order=summary["method"].map(order))
            .sort_values(["_order", "k"]).drop(columns="_order").reset_index(drop=True))


def average_over_k(summary: pd.DataFrame) -> pd.DataFrame:
    """Per method: the mean over k of the per-k means (the papers' "Avg." row) and the k's."""
    grouped = summary.groupby("method", sort=False)
    return pd.DataFrame({"mean": grouped["mean"].mean(),
                         "ks": grouped["k"].apply(lambda ks: tuple(sorted(ks)))})


# -- paired significance -------------------------------------------------------------------------


@dataclass(frozen=True)
class PairedTest:
    """A two-sided Wilcoxon signed-rank test of a method against the baseline.

    ``p_value`` is None when the test was not run; ``note`` says why. ``direction`` is +1 when
    the method's values tend to be larger than the baseline's, -1 when smaller, 0 otherwise."""

    n_pairs: int
    p_value: float | None = None
    statistic: float | None = None
    direction: int = 0
    note: str = ""

    @property
    def significant(self) -> bool:
        return self.p_value is not None and self.p_value < ALPHA

    def describe(self) -> str:
        if self.p_value is None:
            return f"n/a ({self.note})"
        return f"{_format_p(self.p_value)} (n={self.n_pairs})"


def paired_values(rows: pd.DataFrame, metric: str, method: str, baseline: str
                  ) -> tuple[np.ndarray, np.ndarray]:
    """Values (as recorded, not in %) of ``method`` and ``baseline`` on the runs both have,
    paired by (corpus, k, draw, seed); repeated runs of one pair are averaged."""
    data = metric_values(rows[rows["method"].isin([method, baseline])], metric, scaled=False)
    if data.empty:
        return np.empty(0), np.empty(0)
    # missing draws or seeds (the full-corpus protocol) pair up as equal keys
    keys = data[list(PAIR_KEYS)].astype(object)
    keys = keys.where(keys.notna(), "∅").astype(str)
    paired = (data.assign(**{k: keys[k] for k in PAIR_KEYS})
              .pivot_table(index=list(PAIR_KEYS), columns="method", values="value",
                           aggfunc="mean"))
    if method not in paired.columns or baseline not in paired.columns:
        return np.empty(0), np.empty(0)
    both = paired[[method, baseline]].dropna()
    return both[method].to_numpy(float), both[baseline].to_numpy(float)


def wilcoxon_test(values: np.ndarray, baseline_values: np.ndarray) -> PairedTest:
    """Two-sided Wilcoxon signed-rank test of paired samples (:func:`scipy.stats.wilcoxon`,
    ``zero_method="pratt"``); "n/a" with fewer than 6 pairs or when all pairs are equal."""
    values = np.asarray(values, dtype=float)
    differences = values - np.asarray(baseline_values, dtype=float)
    n = differences.size
    if n < MIN_PAIRS:
        return PairedTest(n, note=f"{n} pair{'s' if n != 1 else ''}; needs {MIN_PAIRS}")
    if np.all(differences == 0):
        return PairedTest(n, note="all pairs equal")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = stats.wilcoxon(values, baseline_values, zero_method=ZERO_METHOD)
    return PairedTest(n, float(result.pvalue), float(result.statistic),
                      _signed_rank_direction(differences))


def _signed_rank_direction(differences):
    """Sign of the sum of signed ranks of the non-zero differences."""
    nonzero = differences[differences != 0]
    ranks = stats.rankdata(np.abs(nonzero))
    return int(np.sign(np.sum(np.sign(nonzero) * ranks)))


def _format_p(p):
    return f"{p:.2g}" if p >= 1e-3 else f"{p:.1e}"


def significance_mark(test: PairedTest, info: MetricInfo) -> str:
    """▲ significantly better than the baseline, ▼ worse, * different (direction unknown)."""
    if not test.significant or test.direction == 0:
        return ""
    if info.greater_is_better is None:
        return " *"
    better = (test.direction > 0) == bool(info.greater_is_better)
    return " ▲" if better else " ▼"

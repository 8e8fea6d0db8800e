"""Published numbers beside the reproduced ones: the ``[published]`` table of a pipeline file.

A pipeline may state the averages over k that a paper printed (e.g. Cai et al., *Graph
Regularized NMF*, paper 003, Tables 2–3), per corpus and method, in the unit the report shows
the metric in (% for the papers' metrics)::

    [published]
    source = "Paper 003, Tables 2-3: averages over k = 2..10"
    [published.tdt2]
    kmeans = { accuracy = 80.8, nmi = 79.9 }
    "nmf:ncw" = { accuracy = 89.4, nmi = 87.0 }
    "gnmf:best" = { nmi = 83.5 }      # the best of gnmf's grid points, as the paper reports

The report's k-table sections then set each published value beside the reproduced average —
the "Avg." of the k tables, the mean over k of the per-k means — with the difference
(reproduced − published) and the spread (the mean over k of the per-k standard deviations over
the draws), and say whether the reproduction is within the spread, better, or short by more
than the spread.
"""

import json
import math
import tomllib
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .._errors import TextclusterError
from ..batch.methods import BEST, is_number
from ..batch.overrides import apply_overrides
from .markup import Paragraph, Table
from .summary import average_over_k, metric_info

__all__ = ["Published", "comparison_records", "comparison_table", "published_from_config",
           "best_setting", "read_published", "report_blocks", "shortfall_text", "verdict"]

WITHIN = "within the spread"
SHORT = "short by more than the spread"
NOT_REPRODUCED = "not reproduced (no finished runs)"
NO_SPREAD = " (one run per k: no spread)"


@dataclass(frozen=True)
class Published:
    """The published numbers of a pipeline: ``corpora[corpus][method][metric] = value``."""

    source: str = ""
    corpora: dict = field(default_factory=dict)


# -- reading -------------------------------------------------------------------------------------


def read_published(meta: dict) -> Published:
    """The ``[published]`` table of the pipeline text a ledger's ``meta`` keeps (with the
    batch's ``--set published.…`` overrides applied); empty when there is none or the text is
    not TOML."""
    text = meta.get("pipeline")
    if not isinstance(text, str) or not text.strip():
        return Published()
    try:
        config = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return Published()
    for override in _published_overrides(meta.get("overrides")):
        try:
            apply_overrides(config, [override])
        except TextclusterError:
            continue
    return published_from_config(config)


def _published_overrides(stored):
    try:
        overrides = json.loads(stored) if isinstance(stored, str) else []
    except json.JSONDecodeError:
        return []
    if not isinstance(overrides, list):
        return []
    return [o for o in overrides if isinstance(o, str) and o.strip().startswith("published.")]


def published_from_config(config: dict) -> Published:
    """:class:`Published` from the TOML tables of a pipeline; entries that are not
    ``method = { metric = number }`` are left out."""
    table = config.get("published")
    if not isinstance(table, dict):
        return Published()
    source = table.get("source")
    corpora = {}
    for corpus, methods in table.items():
        if corpus == "source" or not isinstance(methods, dict):
            continue
        numbers = {method: {metric: float(value) for metric, value in values.items()
                            if is_number(value)}
                   for method, values in methods.items() if isinstance(values, dict)}
        corpora[corpus] = {method: values for method, values in numbers.items() if values}
    return Published(source if isinstance(source, str) else "", corpora)


# -- comparing -----------------------------------------------------------------------------------


def verdict(difference: float | None, spread: float, greater_is_better: bool | None) -> str:
    """How a reproduced average compares with the published one, ``difference`` = reproduced −
    published: within the spread when ``|difference| <= spread``, else "above" ("below" where
    lower is better) when the reproduction is better and short by more than the spread when it
    is worse. A NaN spread (one run per k) compares with a spread of 0 and says so."""
    if difference is None or not np.isfinite(difference):
        return NOT_REPRODUCED
    unknown = spread is None or not np.isfinite(spread)
    if abs(difference) <= (0.0 if unknown else spread):
        return WITHIN + (NO_SPREAD if unknown else "")
    if greater_is_better is None:
        text = "differs by more than the spread"
    elif (difference > 0) == bool(greater_is_better):
        text = "above" if greater_is_better else "below"
    else:
        text = SHORT
    return text + (NO_SPREAD if unknown else "")


def comparison_records(numbers: dict, summaries: dict[str, pd.DataFrame]) -> list[dict]:
    """One record per (method, metric) of ``numbers`` (``{method: {metric: value}}``, one
    corpus) whose metric has a summary in ``summaries`` (``{metric: summarize_by_k frame}``):
    published, reproduced (mean over k of the per-k means), difference, spread (mean over k of
    the per-k standard deviations), the k's, the runs per k and the verdict. A method
    ``model:best`` stands for the model's setting with the best average (``chosen``)."""
    records = []
    for method, values in numbers.items():
        for metric, published in values.items():
            if metric in summaries:
                summary = summaries[metric]
                chosen = best_setting(method, summary, metric)
                records.append(_record(method, metric, published, summary, chosen))
    return records


def best_setting(label: str, summary: pd.DataFrame, metric: str) -> str:
    """For ``label`` = ``model:best`` (and no method of that name): the method label of the
    model's setting with the best average over k on ``metric``, chosen on the evaluation labels
    as papers that report their best setting do; else ``label`` itself."""
    model, _, variant = label.partition(":")
    greater_is_better = metric_info(metric).greater_is_better
    present = set(summary["method"])
    if variant != BEST or label in present or greater_is_better is None:
        return label
    settings = [m for m in present if m == model or m.startswith(model + ":")]
    if not settings:
        return label
    averages = average_over_k(summary[summary["method"].isin(settings)])["mean"]
    return averages.idxmax() if greater_is_better else averages.idxmin()


def _record(method, metric, published, summary, chosen=None):
    info = metric_info(metric)
    chosen = method if chosen is None else chosen
    rows = summary[summary["method"] == chosen]
    record = {"method": method, "chosen": "" if chosen == method else chosen,
              "metric": metric, "unit": "%" if info.percent else "",
              "published": float(published), "reproduced": math.nan, "difference": math.nan,
              "spread": math.nan, "n_k": 0, "k_values": "", "runs_min": None,
              "runs_max": None}
    if len(rows):
        reproduced = float(average_over_k(rows).loc[chosen, "mean"])
        stds = pd.to_numeric(rows["std"], errors="coerce").dropna()
        record.update(reproduced=reproduced, difference=reproduced - float(published),
                      spread=float(stds.mean()) if len(stds) else math.nan,
                      n_k=int(rows["k"].nunique()),
                      k_values=" ".join(str(int(k)) for k in sorted(rows["k"].unique())),
                      runs_min=int(rows["runs"].min()), runs_max=int(rows["runs"].max()))
    record["verdict"] = verdict(record["difference"], record["spread"], info.greater_is_better)
    return record


# -- report blocks -------------------------------------------------------------------------------


def comparison_table(records: list[dict], corpus: str, source: str = "") -> Table:
    """The records as a report table: one row per (method, metric)."""
    rows = []
    for r in records:
        percent = r["unit"] == "%"
        method = r["method"] + (f" = {r['chosen']}" if r.get("chosen") else "")
        rows.append([method, metric_info(r["metric"]).label,
                     _number(r["published"], percent), _number(r["reproduced"], percent),
                     _number(r["difference"], percent, signed=True),
                     _number(r["spread"], percent), _k_range(r["k_values"]),
                     _runs(r["runs_min"], r["runs_max"]), r["verdict"]])
    header = ["method", "metric", "published", "reproduced", "difference", "spread", "k",
              "runs per k", "verdict"]
    caption = f"Published vs reproduced on {corpus}" + (f" ({source})" if source else "")
    notes = [
        ("Values in % for the papers' metrics, as in the k tables. Reproduced = Avg. of the k "
         "tables (mean over k of the per-k means); difference = reproduced − published; "
         "spread = mean over k of the per-k standard deviations over the runs (class draws, "
         "seeds)."),
        ("Within the spread: |difference| ≤ spread; above (below, where lower is better): "
         "better than published by more than the spread."),
    ]
    if any(r.get("chosen") for r in records):
        notes.append("model:best = the model's setting with the best Avg. on that metric, "
                     "chosen on the evaluation labels as the paper reports its best setting: "
                     "an optimistic figure, for comparison with the paper only.")
    return Table(header, rows, caption, notes)


def shortfall_text(records: list[dict], corpus: str) -> str:
    """One line naming the methods short of a published value by more than the spread (and
    those without finished runs), or saying that there are none."""
    short = _methods_with(records, lambda v: v.startswith("short"))
    missing = _methods_with(records, lambda v: v == NOT_REPRODUCED)
    parts = []
    if short:
        parts.append(f"Short of the published numbers by more than the spread on {corpus}: "
                     f"{short}.")
    if missing:
        parts.append(f"Published but not reproduced (no finished runs): {missing}.")
    return " ".join(parts) or (f"On {corpus} no reproduced average is short of the published "
                               "one by more than the spread.")


def _methods_with(records, chosen):
    metrics = {}
    for r in records:
        if chosen(r["verdict"]):
            metrics.setdefault(r["method"], []).append(metric_info(r["metric"]).label)
    return "; ".join(f"{method} ({', '.join(labels)})" for method, labels in metrics.items())


def report_blocks(published: Published, corpus: str, protocol: str,
                  summaries: dict[str, pd.DataFrame]) -> tuple[list, list[dict]]:
    """``(blocks, CSV rows)`` for one k-table section: the comparison table and the shortfall
    line, nothing when ``published`` has no numbers for ``corpus`` and these metrics."""
    records = comparison_records(published.corpora.get(corpus, {}), summaries)
    if not records:
        return [], []
    blocks = [comparison_table(records, corpus, published.source),
              Paragraph(shortfall_text(records, corpus))]
    rows = [{"corpus": corpus, "protocol": protocol, **r, "source": published.source}
            for r in records]
    return blocks, rows


def _number(value, percent, signed=False):
    if value is None or not np.isfinite(value):
        return "—"
    return f"{value:{'+' if signed else ''}{'.1f' if percent else '.4g'}}"


def _k_range(k_values):
    ks = [int(k) for k in k_values.split()]
    if not ks:
        return "—"
    if len(ks) > 2 and ks == list(range(ks[0], ks[-1] + 1)):
        return f"{ks[0]}–{ks[-1]}"
    return ", ".join(str(k) for k in ks)


def _runs(low, high):
    if low is None:
        return "—"
    return str(low) if low == high else f"{low}–{high}"

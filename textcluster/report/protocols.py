"""The tables of the other protocols: parameter sweeps (one line per model and value, the best
setting of each), ablations (one row per variant, tested against the first), convergence
(objective traces) and, for corpora without labels, the runs and their objectives.
"""

import json

import numpy as np
import pandas as pd

from ..batch.methods import method_label
from .markup import Table
from .results import Section, is_missing
from .summary import (
    ALPHA,
    metric_info,
    metric_values,
    paired_values,
    significance_mark,
    wilcoxon_test,
)
from .tables import format_cell

__all__ = ["ablation_markup", "ablation_tests", "best_settings", "convergence_markup",
           "convergence_traces", "is_monotone", "objective_markup", "overall_summary",
           "reference_table", "sweep_markup", "sweep_summary", "swept_parameters"]


# -- sweeps --------------------------------------------------------------------------------------


def swept_parameters(rows: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """``{parameter: rows}`` of a sweep: the jobs whose variant label names ``parameter=value``
    (the batch labels each sweep point so), with ``line`` — the model and the rest of its
    variant label, one plotted line — and ``value``, the job's value of the parameter."""
    found: dict[str, list] = {}
    for index, model, variant, params in zip(rows.index, rows["model"], rows["variant"],
                                             rows["params"]):
        params = params if isinstance(params, dict) else {}
        parts = [] if is_missing(variant) else [p for p in str(variant).split(",") if p]
        for part in parts:
            name = part.split("=", 1)[0]
            if "=" in part and name in params:
                rest = ",".join(p for p in parts if p != part)
                found.setdefault(name, []).append(
                    (index, method_label(model, rest), _hashable(params[name])))
    return {name: rows.loc[[i for i, _, _ in entries]].assign(
                line=[line for _, line, _ in entries], value=[v for _, _, v in entries])
            for name, entries in found.items()}


def _hashable(value):
    return json.dumps(value, sort_keys=True) if isinstance(value, (list, dict)) else value


def sweep_summary(rows: pd.DataFrame, metrics: list[str]) -> pd.DataFrame:
    """Mean, std and runs per (metric, line, value) of one swept parameter (``rows`` from
    :func:`swept_parameters`), over k, draws and seeds; sorted by value."""
    records = []
    for metric in metrics:
        data = metric_values(rows.rename(columns={"value": "param_value"}), metric)
        for (line, value), group in data.groupby(["line", "param_value"], sort=False):
            records.append({"metric": metric, "method": line, "value": value,
                            "mean": group["value"].mean(), "std": group["value"].std(),
                            "runs": len(group)})
    frame = pd.DataFrame(records, columns=["metric", "method", "value", "mean", "std", "runs"])
    return frame.iloc[_value_order(frame["value"])].reset_index(drop=True)


def _value_order(values):
    numeric = pd.to_numeric(values, errors="coerce")
    if numeric.notna().all():
        return np.argsort(numeric.to_numpy(), kind="stable")
    return np.argsort(values.astype(str).to_numpy(), kind="stable")


def best_settings(summary: pd.DataFrame, parameter: str, metrics: list[str]) -> list[list[str]]:
    """Table rows ``[parameter, line, best cell per metric]``: the value of ``parameter`` with
    the best mean (highest, or lowest for entropy) for each line, with every value whose mean
    ties it at the precision shown."""
    rows = []
    for line in dict.fromkeys(summary["method"]):
        row = [parameter, line]
        for metric in metrics:
            info = metric_info(metric)
            cells = summary[(summary["method"] == line) & (summary["metric"] == metric)]
            if cells.empty:
                row.append("—")
                continue
            best = cells.loc[cells["mean"].idxmin() if info.greater_is_better is False
                             else cells["mean"].idxmax()]
            shown = format_cell(best["mean"], None, info)
            tied = [v for v, m in zip(cells["value"], cells["mean"])
                    if format_cell(m, None, info) == shown]
            row.append(f"{format_cell(best['mean'], best['std'], info, best['runs'])} at "
                       f"{_values_text(parameter, tied, len(cells))}")
        rows.append(row)
    return rows


def _values_text(parameter, values, n_values):
    """``alpha=0.1``, ``alpha ∈ {0.05, 0.1}`` or ``every alpha``."""
    if len(values) == n_values > 1:
        return f"every {parameter}"
    if len(values) == 1:
        return f"{parameter}={values[0]}"
    return f"{parameter} ∈ {{{', '.join(str(v) for v in values)}}}"


def sweep_markup(summary: pd.DataFrame, parameter: str, metrics: list[str]) -> Table:
    """One row per value of ``parameter``, one column per line and metric."""
    values = list(dict.fromkeys(summary["value"]))
    lines = list(dict.fromkeys(summary["method"]))
    cells = summary.set_index(["metric", "method", "value"])
    header = [parameter] + [f"{line} {metric_info(m).axis_label}" for line in lines
                            for m in metrics]
    rows = []
    for value in values:
        row = [str(value)]
        for line in lines:
            for metric in metrics:
                key = (metric, line, value)
                if key in cells.index:
                    cell = cells.loc[key]
                    row.append(format_cell(cell["mean"], cell["std"], metric_info(metric),
                                     cell["runs"]))
                else:
                    row.append("—")
        rows.append(row)
    return Table(header, rows, f"Sweep of {parameter} on {summary.attrs.get('corpus', '')}",
                 ["Mean ± std over all runs at each value (k, draws, seeds); the other swept "
                  "parameters stay at their set values."])


def overall_summary(rows: pd.DataFrame, metrics: list[str], methods: list[str]) -> pd.DataFrame:
    """Mean, std and runs per (metric, method) over all of a method's runs."""
    records = []
    for metric in metrics:
        data = metric_values(rows, metric)
        for method in methods:
            values = data.loc[data["method"] == method, "value"]
            if len(values):
                records.append({"metric": metric, "method": method, "mean": values.mean(),
                                "std": values.std(), "runs": len(values)})
    return pd.DataFrame(records, columns=["metric", "method", "mean", "std", "runs"])


def reference_table(references: pd.DataFrame, metrics: list[str]) -> Table:
    """Mean ± std of the models that a sweep does not vary (:func:`overall_summary` rows)."""
    cells = references.set_index(["metric", "method"])
    rows = []
    for method in dict.fromkeys(references["method"]):
        rows.append([method] + [
            format_cell(cells.loc[(m, method), "mean"], cells.loc[(m, method), "std"],
                  metric_info(m), cells.loc[(m, method), "runs"])
            if (m, method) in cells.index else "—" for m in metrics])
    return Table(["model"] + [metric_info(m).axis_label for m in metrics], rows,
                 "Models without a swept parameter (mean ± std over all their runs)")


# -- ablations -----------------------------------------------------------------------------------


def ablation_tests(section: Section, metrics: list[str]) -> dict:
    """``{(method, metric): PairedTest}`` of every variant against the section's baseline."""
    tests: dict = {}
    if section.baseline is None:
        return tests
    for metric in metrics:
        for method in section.methods:
            if method != section.baseline:
                tests[method, metric] = wilcoxon_test(
                    *paired_values(section.rows, metric, method, section.baseline))
    return tests


def ablation_markup(section: Section, summary: pd.DataFrame, tests: dict,
                    metrics: list[str]) -> Table:
    """One row per variant: runs and mean ± std of each metric, marked against the baseline."""
    cells = summary.set_index(["metric", "method"])
    rows = []
    for method in section.methods:
        runs = summary.loc[summary["method"] == method, "runs"]
        row = [f"{method} (baseline)" if method == section.baseline else method,
               str(runs.max()) if len(runs) else "0"]
        for metric in metrics:
            info = metric_info(metric)
            if (metric, method) not in cells.index:
                row.append("—")
                continue
            cell, test = cells.loc[(metric, method)], tests.get((method, metric))
            row.append(format_cell(cell["mean"], cell["std"], info, cell["runs"])
                       + (significance_mark(test, info) if test else ""))
        rows.append(row)
    notes = ["Mean ± std over all runs (k, draws, seeds)."]
    if tests:
        notes.append(f"▲/▼: significantly better/worse than {section.baseline} (two-sided "
                     f"Wilcoxon signed-rank test, p < {ALPHA}, paired by corpus, k, draw and "
                     f"seed).")
    elif section.baseline_note:
        notes.append(section.baseline_note)
    header = ["variant", "runs"] + [metric_info(m).axis_label for m in metrics]
    return Table(header, rows, f"Ablation on {section.corpus}", notes)


# -- convergence and objectives ------------------------------------------------------------------


def convergence_traces(rows: pd.DataFrame, methods: list[str] | None = None
                       ) -> list[tuple[str, list[float]]]:
    """``[(method, trace), ...]`` for jobs whose objective has more than one value, in the
    order of ``methods``."""
    traces = [(method, [float(v) for v in trace])
              for method, trace in zip(rows["method"], rows["objective"])
              if isinstance(trace, list) and len(trace) > 1]
    order = {m: i for i, m in enumerate(methods or [])}
    return sorted(traces, key=lambda item: order.get(item[0], len(order)))


def is_monotone(trace, rtol: float = 1e-6) -> bool:
    """True when the objective never rises by more than ``rtol`` (relative) per iteration."""
    trace = np.asarray(trace, dtype=float)
    rises = trace[1:] - trace[:-1]
    return bool(np.all(rises <= rtol * np.abs(trace[:-1]) + 1e-12))


def convergence_markup(rows: pd.DataFrame, methods: list[str]) -> Table:
    """Per method: runs, iterations, first and final objective, runs that never rose."""
    traces = convergence_traces(rows)
    header = ["method", "runs", "iterations (median)", "first objective (mean)",
              "final objective (mean ± std)", "non-increasing"]
    table_rows = []
    for method in methods:
        of_method = [t for m, t in traces if m == method]
        if not of_method:
            continue
        finals = np.array([t[-1] for t in of_method])
        std = f" ± {finals.std(ddof=1):.4g}" if len(finals) > 1 else ""
        table_rows.append([
            method, str(len(of_method)), f"{np.median([len(t) for t in of_method]):g}",
            f"{np.mean([t[0] for t in of_method]):.6g}", f"{finals.mean():.6g}{std}",
            f"{sum(is_monotone(t) for t in of_method)}/{len(of_method)}",
        ])
    return Table(header, table_rows, "Objective traces",
                 ["non-increasing: runs whose objective never rose by more than 1e-6 "
                  "(relative) from one iteration to the next."])


def objective_markup(rows: pd.DataFrame, methods: list[str]) -> Table:
    """Per method: runs, clusters used and the final objective (each model has its own)."""
    header = ["method", "runs", "documents", "k", "non-empty clusters (mean)",
              "final objective (mean ± std)"]
    table_rows = []
    for method in methods:
        of_method = rows[rows["method"] == method]
        finals = np.array([t[-1] for t in of_method["objective"]
                           if isinstance(t, list) and t], dtype=float)
        used = _counts(of_method, "metric.n_clusters")
        ks = ", ".join(str(int(k)) for k in sorted(of_method["k"].dropna().unique()))
        docs = ", ".join(f"{int(n):,}" for n in sorted(_counts(of_method, "metric.n_docs")
                                                        .dropna().unique()))
        final = "—" if not len(finals) else (
            f"{finals.mean():.6g}" + (f" ± {finals.std(ddof=1):.2g}" if len(finals) > 1 else ""))
        table_rows.append([method, str(len(of_method)), docs or "—", ks,
                           "—" if used.isna().all() else f"{used.mean():.1f}",
                           final])
    return Table(header, table_rows, "Runs and objectives",
                 ["Each model minimizes its own objective: compare a model's values across "
                  "corpora and seeds, not across models."])


def _counts(rows, column):
    if column not in rows.columns:
        return pd.Series(np.nan, index=rows.index)
    return pd.to_numeric(rows[column], errors="coerce")

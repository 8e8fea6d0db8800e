"""The papers' tables of a section: mean ± std per k with the average over k, one column per
method (Cai et al., *Graph Regularized NMF*, paper 003, Tables 2–3), marked by two-sided
Wilcoxon signed-rank tests against a baseline, the tests' p-values, and the same as CSV rows.
"""

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .markup import Table
from .results import Section
from .summary import (
    ALPHA,
    MIN_PAIRS,
    ZERO_METHOD,
    MetricInfo,
    average_over_k,
    metric_info,
    paired_values,
    significance_mark,
    summarize_by_k,
    wilcoxon_test,
)

__all__ = ["KTable", "build_k_table", "format_cell", "k_table_long", "k_table_markup",
           "methods_markup", "p_value_markup", "wide_frame"]


# -- cells ---------------------------------------------------------------------------------------


def format_cell(mean: float, std: float | None, info: MetricInfo, runs: int | None = None) -> str:
    """``mean ± std`` at the papers' precision (in % with one decimal); ``mean`` alone for a
    single run or without a std."""
    digits = ".1f" if info.percent else ".4g"
    if runs == 1 or std is None or not np.isfinite(std):
        return f"{mean:{digits}}"
    return f"{mean:{digits}} ± {std:{digits if info.percent else '.2g'}}"


def _runs_cell(draws, runs):
    draws = sorted(set(draws))
    runs = sorted(set(runs))
    text = str(draws[0]) if len(draws) == 1 else f"{draws[0]}–{draws[-1]}"
    if runs != draws:
        text += f" ({runs[0]} runs)" if len(runs) == 1 else f" ({runs[0]}–{runs[-1]} runs)"
    return text


# -- k tables ------------------------------------------------------------------------------------


@dataclass
class KTable:
    """One metric of one section: summary, averages and tests, as tables and CSV rows."""

    section: Section
    info: MetricInfo
    summary: pd.DataFrame
    tests: dict  # (method, k or "all") -> PairedTest

    def ks(self) -> list:
        return sorted(self.summary["k"].unique())

    def methods(self) -> list[str]:
        present = set(self.summary["method"])
        return [m for m in self.section.methods if m in present]


def build_k_table(section: Section, metric: str) -> KTable:
    """The summary of ``metric`` per method and k, and the tests against the baseline (per k
    and over all k)."""
    info = metric_info(metric)
    summary = summarize_by_k(section.rows, metric)
    tests = {}
    baseline = section.baseline
    if baseline is not None and baseline in set(summary["method"]):
        for method in section.methods:
            if method == baseline:
                continue
            for k in sorted(summary["k"].unique()):
                at_k = section.rows[section.rows["k"] == k]
                tests[method, k] = wilcoxon_test(*paired_values(at_k, metric, method, baseline))
            tests[method, "all"] = wilcoxon_test(
                *paired_values(section.rows, metric, method, baseline))
    return KTable(section, info, summary, tests)


def k_table_markup(table: KTable) -> Table:
    """The papers' layout: rows k and Avg., one column per method, plus draws per k."""
    methods, ks, info = table.methods(), table.ks(), table.info
    baseline = table.section.baseline
    header = ["k", "draws"] + [f"{m} (baseline)" if m == baseline else m for m in methods]
    by_cell = table.summary.set_index(["method", "k"])
    rows = []
    for k in ks:
        at_k = table.summary[table.summary["k"] == k]
        row = [str(k), _runs_cell(at_k["draws"], at_k["runs"])]
        for method in methods:
            if (method, k) not in by_cell.index:
                row.append("—")
                continue
            cell = by_cell.loc[(method, k)]
            test = table.tests.get((method, k))
            mark = significance_mark(test, info) if test else ""
            row.append(format_cell(cell["mean"], cell["std"], info, cell["runs"]) + mark)
        rows.append(row)
    averages = average_over_k(table.summary)
    notes = _k_table_notes(table, averages, ks)
    if len(ks) > 1:
        avg_row = ["Avg.", ""]
        for method in methods:
            test = table.tests.get((method, "all"))
            mark = significance_mark(test, info) if test else ""
            avg_row.append(f"{averages.loc[method, 'mean']:{'.1f' if info.percent else '.4g'}}"
                           + mark)
        rows.append(avg_row)
    caption = f"{info.label}{' (%)' if info.percent else ''} on {table.section.corpus}"
    return Table(header, rows, caption, notes)


def methods_markup(tables: list[KTable]) -> Table:
    """One k, many methods (grid points): one row per method, one column per metric."""
    section = tables[0].section
    methods = list(dict.fromkeys(m for table in tables for m in table.methods()))
    k = ", ".join(str(k) for k in tables[0].ks())
    header = ["method", "runs"] + [f"{t.info.label}{' (%)' if t.info.percent else ''}"
                                   for t in tables]
    rows = []
    for method in methods:
        row = [f"{method} (baseline)" if method == section.baseline else method]
        runs = ""
        for table in tables:
            cell = table.summary[table.summary["method"] == method]
            if cell.empty:
                row.append("—")
                continue
            cell = cell.iloc[0]
            runs = runs or str(int(cell["runs"]))
            test = table.tests.get((method, cell["k"]))
            row.append(format_cell(cell["mean"], cell["std"], table.info, cell["runs"])
                       + (significance_mark(test, table.info) if test else ""))
        rows.append(row[:1] + [runs] + row[1:])
    notes = [f"Mean ± sample standard deviation over the runs (k = {k}); values of the papers' "
             f"metrics in %."]
    if any(table.tests for table in tables):
        notes.append(f"▲/▼: significantly better/worse than {section.baseline}, each metric "
                     f"in its own direction (two-sided Wilcoxon signed-rank test, p < {ALPHA}, "
                     f"paired by draw and seed; p-values in tables/significance.csv).")
    return Table(header, rows, f"All methods on {section.corpus}", notes)


def _k_table_notes(table, averages, ks):
    info = table.info
    unit = "in %" if info.percent else "as recorded"
    notes = [f"Mean ± sample standard deviation over the runs at each k, {unit}; "
             f"draws = class draws per k (runs when a draw was run with several seeds)."]
    if len(ks) > 1:
        notes.append("Avg. = mean over k of the per-k means, as in the papers' tables.")
    partial = [m for m in averages.index if len(averages.loc[m, "ks"]) < len(ks)]
    if partial:
        notes.append(f"Averaged over fewer k (missing runs): {', '.join(partial)}.")
    if (table.summary["runs"] == 1).any():
        notes.append("Cells without ± come from a single run.")
    if table.tests:
        notes.append(f"{_marks_legend(info, table.section.baseline)} (two-sided Wilcoxon "
                     f"signed-rank test, p < {ALPHA}, paired by corpus, k, draw and seed; "
                     f"Avg. row: all k pooled).")
    elif table.section.baseline_note:
        notes.append(table.section.baseline_note)
    return notes


def _marks_legend(info, baseline):
    if info.greater_is_better is None:
        return f"*: significantly different from {baseline}"
    direction = "higher" if info.greater_is_better else "lower"
    return f"▲/▼: significantly better/worse than {baseline} ({direction} is better)"


def p_value_markup(table: KTable) -> Table | None:
    """p-values of the tests against the baseline: rows k and "all k", one column per method."""
    others = [m for m in table.methods() if m != table.section.baseline]
    if not table.tests or not others:
        return None
    rows = []
    for k in table.ks() + ["all"]:
        label = "all k" if k == "all" else str(k)
        rows.append([label] + [table.tests[m, k].describe() if (m, k) in table.tests else "—"
                               for m in others])
    caption = (f"{table.info.label} on {table.section.corpus}: p-values against "
               f"{table.section.baseline}")
    notes = [f"Two-sided Wilcoxon signed-rank test (scipy.stats.wilcoxon, "
             f"zero_method='{ZERO_METHOD}') on the paired runs; n = pairs. "
             f"n/a: fewer than {MIN_PAIRS} pairs (the test cannot reach p < {ALPHA}) or all "
             f"pairs equal."]
    return Table(["k"] + others, rows, caption, notes)


# -- CSV rows ------------------------------------------------------------------------------------


def k_table_long(table: KTable) -> list[dict]:
    """CSV rows: one per (method, k) plus the average, with the test against the baseline."""
    records = []
    section, info = table.section, table.info
    for row in table.summary.itertuples(index=False):
        test = table.tests.get((row.method, row.k))
        records.append(_long_record(section, info, row.method, row.k, row.draws, row.runs,
                                    row.mean, row.std, test))
    for method, avg in average_over_k(table.summary).iterrows():
        test = table.tests.get((method, "all"))
        records.append(_long_record(section, info, method, "avg", None, None, avg["mean"],
                                    None, test))
    return records


def _long_record(section, info, method, k, draws, runs, mean, std, test):
    return {
        "corpus": section.corpus, "protocol": section.protocol, "metric": info.name,
        "unit": "%" if info.percent else "", "method": method, "k": k, "draws": draws,
        "runs": runs, "mean": mean, "std": std,
        "baseline": section.baseline if test else None,
        "n_pairs": test.n_pairs if test else None,
        "p_value": test.p_value if test else None,
        "significant": test.significant if test else None,
        "test_note": test.note if test else None,
    }


def wide_frame(long: pd.DataFrame) -> pd.DataFrame:
    """One row per (corpus, protocol, k), columns ``<method>`` (mean) and ``<method> std``."""
    long = long.assign(k=long["k"].astype(str))
    keys = ["corpus", "protocol", "unit", "k"]
    means = long.pivot_table(index=keys, columns="method", values="mean", sort=False)
    stds = long.pivot_table(index=keys, columns="method", values="std", sort=False,
                            dropna=False)
    stds.columns = [f"{m} std" for m in stds.columns]
    methods = list(dict.fromkeys(long["method"]))
    ordered = [c for m in methods for c in (m, f"{m} std") if c in means.columns or c in stds]
    return pd.concat([means, stds], axis=1).reindex(columns=ordered).reset_index()

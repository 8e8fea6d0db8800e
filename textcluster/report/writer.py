"""Reports from a batch ledger: the papers' tables, paired significance tests, plots and CSVs.

A batch run (``textcluster batch``) records one row per job in ``<output>/ledger.sqlite``.
:func:`write_report` turns the finished jobs into

* mean ± std tables in the layout of Cai et al., *Graph Regularized NMF* (paper 003), Tables 2–3:
  rows k = 2..10 (the k's present), then "Avg." — the mean over k of the per-k means — and one
  column per model; one table per metric, values in % (as the papers print them);
* two-sided Wilcoxon signed-rank tests of every model against a baseline, paired by
  (corpus, k, draw, seed), per k and over all k;
* plots, one per metric, as PNG and SVG: metric vs k, metric vs parameter value (sweeps), bars
  (ablations), and objective vs iteration (convergence traces); a metric's axis stays within
  its range;
* ``report.md``, a self-contained ``report.html`` and the tables as CSV.

The ledger is only ever opened read-only, so a report can be written while a batch still runs.
"""

import json
import math
import re
import sqlite3
from contextlib import closing
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pandas as pd

from . import crossview, plots
from .._errors import DataNotFoundError, InvalidInputError
from ..batch import ledger as ledger_store
from ..batch.spec import CLUSTERS_DIR, method_label
from ..pipeline.export import _atomic_write
from .markup import Bullets, Code, Heading, Image, Paragraph, Table, to_html, to_markdown
from .published import Published, read_published, report_blocks
from .summary import (
    ALPHA,
    MIN_PAIRS,
    UNLABELED,
    ZERO_METHOD,
    MetricInfo,
    available_metrics,
    average_over_k,
    metric_info,
    metric_values,
    paired_values,
    select_metrics,
    significance_mark,
    summarize_by_k,
    wilcoxon_test,
)

__all__ = ["Ledger", "ReportFiles", "load_results", "read_ledger", "write_report"]

LEDGER_NAME = "ledger.sqlite"
JSON_COLUMNS = ledger_store.JSON_COLUMNS
PROTOCOL_ORDER = ("class-subset", "full", "sweep", "ablation", "convergence")
K_TABLE_PROTOCOLS = ("class-subset", "full")
MAX_FAILED_LISTED = 100
MAX_WARNINGS_LISTED = 20
MAX_METHOD_COLUMNS = 8  # more methods at a single k: one row per method instead


# -- reading the ledger --------------------------------------------------------------------------


@dataclass
class Ledger:
    """The jobs of a ledger (one row per job, JSON decoded) and its ``meta`` table."""

    path: Path
    jobs: pd.DataFrame
    meta: dict
    stale: int = 0  # jobs left out: not in the pipeline's latest expansion
    pending: int = 0  # jobs of the latest expansion not in the ledger yet


def resolve_ledger(path):
    """The ledger file: ``path`` itself, or ``path/ledger.sqlite`` when ``path`` is a folder."""
    path = Path(path)
    candidate = path / LEDGER_NAME if path.is_dir() else path
    if not candidate.is_file():
        where = (f"the folder {path} has no {LEDGER_NAME}" if path.is_dir()
                 else f"{path} does not exist")
        raise DataNotFoundError(
            f"no ledger to report on: {where}; pass the output folder of a batch run "
            f"(textcluster batch PIPELINE) or its {LEDGER_NAME}"
        )
    return candidate


def read_ledger(path):
    """Read a ledger read-only with :func:`textcluster.batch.ledger.load_results` (one row per
    job, ``param.<name>`` and ``metric.<name>`` columns) and add the ``method`` column: the
    model, or ``model:variant`` for a named variant or grid point."""
    path = resolve_ledger(path)
    try:
        jobs, meta = ledger_store.load_results(path), ledger_store.read_meta(path)
    except json.JSONDecodeError:
        raise InvalidInputError(_damaged_json(path)) from None
    except sqlite3.DatabaseError as exc:  # e.g. a ledger without its meta table
        raise InvalidInputError(f"{path} is not a textcluster ledger ({exc})") from None
    except KeyError as exc:  # a jobs table without one of the ledger's columns
        raise InvalidInputError(
            f"{path}: the jobs table has no column {exc}; it was not written by textcluster "
            f"batch"
        ) from None
    jobs["method"] = [method_label(m, v) for m, v in zip(jobs["model"], jobs["variant"])]
    return Ledger(path, jobs, meta)


def load_results(path):
    """The jobs of a ledger (see :func:`read_ledger`) as a DataFrame."""
    return read_ledger(path).jobs


def _damaged_json(path):
    """Which job and column of the ledger hold a value that is not JSON."""
    with closing(sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)) as conn:
        for key, *values in conn.execute(f"SELECT key, {', '.join(JSON_COLUMNS)} FROM jobs"):
            for column, value in zip(JSON_COLUMNS, values):
                try:
                    json.loads(value if value is not None else "null")
                except json.JSONDecodeError as exc:
                    return (f"{path}: job {key!r} has invalid JSON in its {column!r} column "
                            f"({exc.msg} at character {exc.pos}); the ledger is damaged — "
                            f"delete that row and re-run the batch")
    return f"{path}: the ledger holds invalid JSON; it is damaged"


def method_order(jobs, pipeline_text=""):
    """Methods in the order the pipeline file names their models (and named variants), then
    by variant label with numbers in numeric order (``lam=2`` before ``lam=10``)."""
    methods = list(dict.fromkeys(jobs["method"]))
    models = dict(zip(jobs["method"], jobs["model"]))

    def position(method):
        variant = method.split(":", 1)[1] if ":" in method else ""
        named = variant.split(",")[0] if variant and "=" not in variant.split(",")[0] else ""
        return (_name_position(pipeline_text, models[method], quoted=True),
                _name_position(pipeline_text, named, quoted=False) if named else -1,
                _natural_key(variant))

    return sorted(methods, key=position)


def _name_position(text, name, quoted):
    """Where ``name`` first appears in the pipeline text as a quoted string (a model name) or
    as a key (``name =``, a variant); infinity when it does not."""
    pattern = (r"[\"']" + re.escape(str(name)) + r"[\"']" if quoted
               else r"(?<![\w-])[\"']?" + re.escape(str(name)) + r"[\"']?\s*=")
    match = re.search(pattern, text or "")
    return match.start() if match else math.inf


def _natural_key(label):
    """Sort key of a variant label: numbers compare as numbers."""
    parts = re.split(r"([-+]?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)", label)
    return tuple((0, float(p), "") if i % 2 else (1, 0.0, p) for i, p in enumerate(parts) if p)


def resolve_baseline(methods, models, requested=None):
    """The baseline among ``methods``: ``requested`` (a method or a model name), else 'nmf'
    if present, else the first method. None when ``requested`` is not among them."""
    if requested:
        if requested in methods:
            return requested
        of_model = [m for m in methods if models.get(m) == requested]
        return of_model[0] if len(of_model) == 1 else None
    return "nmf" if "nmf" in methods else methods[0]


@dataclass
class Section:
    """The finished jobs of one protocol on one corpus."""

    protocol: str
    corpus: str
    rows: pd.DataFrame
    methods: list
    baseline: object
    baseline_note: str = ""

    @property
    def title(self):
        return f"{self.corpus} — {self.protocol}"

    @property
    def slug(self):
        return _slug(f"{self.corpus}-{self.protocol}")


def _slug(text):
    return re.sub(r"[^A-Za-z0-9]+", "-", str(text)).strip("-").lower() or "x"


def _cell(mean, std, info, runs=None):
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

    def ks(self):
        return sorted(self.summary["k"].unique())

    def methods(self):
        present = set(self.summary["method"])
        return [m for m in self.section.methods if m in present]


def build_k_table(section, metric):
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


def k_table_markup(table):
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
            row.append(_cell(cell["mean"], cell["std"], info, cell["runs"]) + mark)
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


def methods_markup(tables):
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
            row.append(_cell(cell["mean"], cell["std"], table.info, cell["runs"])
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


def p_value_markup(table):
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


def k_table_long(table):
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


def wide_frame(long):
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


# -- sweeps, ablations, convergence --------------------------------------------------------------


def swept_parameters(rows):
    """``{parameter: rows}`` of a sweep: the jobs whose variant label names ``parameter=value``
    (the batch labels each sweep point so), with ``line`` — the model and the rest of its
    variant label, one plotted line — and ``value``, the job's value of the parameter."""
    found = {}
    for index, model, variant, params in zip(rows.index, rows["model"], rows["variant"],
                                             rows["params"]):
        params = params if isinstance(params, dict) else {}
        parts = [] if _is_missing(variant) else [p for p in str(variant).split(",") if p]
        for part in parts:
            name = part.split("=", 1)[0]
            if "=" in part and name in params:
                rest = ",".join(p for p in parts if p != part)
                found.setdefault(name, []).append(
                    (index, method_label(model, rest), _hashable(params[name])))
    return {name: rows.loc[[i for i, _, _ in entries]].assign(
                line=[line for _, line, _ in entries], value=[v for _, _, v in entries])
            for name, entries in found.items()}


def _is_missing(value):
    """None, NaN or pandas' NA (a list or dict is a value)."""
    if value is None or isinstance(value, (list, dict, str)):
        return value is None
    return bool(pd.isna(value))


def _hashable(value):
    return json.dumps(value, sort_keys=True) if isinstance(value, (list, dict)) else value


def sweep_summary(rows, metrics):
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


def best_settings(summary, parameter, metrics):
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
            shown = _cell(best["mean"], None, info)
            tied = [v for v, m in zip(cells["value"], cells["mean"])
                    if _cell(m, None, info) == shown]
            row.append(f"{_cell(best['mean'], best['std'], info, best['runs'])} at "
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


def sweep_markup(summary, parameter, metrics):
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
                    row.append(_cell(cell["mean"], cell["std"], metric_info(metric),
                                     cell["runs"]))
                else:
                    row.append("—")
        rows.append(row)
    return Table(header, rows, f"Sweep of {parameter} on {summary.attrs.get('corpus', '')}",
                 ["Mean ± std over all runs at each value (k, draws, seeds); the other swept "
                  "parameters stay at their set values."])


def overall_summary(rows, metrics, methods):
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


def ablation_tests(section, metrics):
    tests = {}
    if section.baseline is None:
        return tests
    for metric in metrics:
        for method in section.methods:
            if method != section.baseline:
                tests[method, metric] = wilcoxon_test(
                    *paired_values(section.rows, metric, method, section.baseline))
    return tests


def convergence_traces(rows, methods=None):
    """``[(method, trace), ...]`` for jobs whose objective has more than one value, in the
    order of ``methods``."""
    traces = [(method, [float(v) for v in trace])
              for method, trace in zip(rows["method"], rows["objective"])
              if isinstance(trace, list) and len(trace) > 1]
    order = {m: i for i, m in enumerate(methods or [])}
    return sorted(traces, key=lambda item: order.get(item[0], len(order)))


def is_monotone(trace, rtol=1e-6):
    """True when the objective never rises by more than ``rtol`` (relative) per iteration."""
    trace = np.asarray(trace, dtype=float)
    rises = trace[1:] - trace[:-1]
    return bool(np.all(rises <= rtol * np.abs(trace[:-1]) + 1e-12))


def convergence_markup(rows, methods):
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


def objective_markup(rows, methods):
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


# -- agreement between clusterings (corpora without labels) --------------------------------------


def _kept_clusters(done, folder):
    return folder.is_dir() and any((folder / f"{key}.csv").is_file() for key in done["key"])


def agreement_markup(summary, methods, caption, note):
    """Rows method and k, one column per pair of corpora (or per corpus for seed pairs)."""
    summary = summary.assign(pair=[a if a == b else f"{a} ↔ {b}"
                                   for a, b in zip(summary["first"], summary["second"])])
    pairs = list(dict.fromkeys(summary["pair"]))
    cells = summary.set_index(["method", "k", "pair"])
    rows = []
    for method in [m for m in methods if m in set(summary["method"])]:
        for k in sorted(summary.loc[summary["method"] == method, "k"].unique()):
            row = [method, str(int(k))]
            for pair in pairs:
                if (method, k, pair) not in cells.index:
                    row.append("—")
                    continue
                cell = cells.loc[(method, k, pair)]
                spread = f" ± {cell['std']:.3f}" if cell["pairs"] > 1 else ""
                row.append(f"{cell['mean']:.3f}{spread} ({int(cell['pairs'])})")
            rows.append(row)
    return Table(["method", "k"] + pairs, rows, caption, [note])


def _write_agreement(writer, done, folder, methods, pipeline_text=""):
    if not _kept_clusters(done, folder):
        return
    done = done.sort_values("corpus", kind="stable",  # pairs in the pipeline's corpus order
                            key=lambda c: c.map(lambda name: _name_position(
                                pipeline_text, name, quoted=True)))
    views = crossview.summarize_agreement(crossview.cross_view_agreement(done, folder))
    seeds = crossview.summarize_agreement(crossview.seed_agreement(done, folder))
    if views.empty and seeds.empty:
        return
    writer.blocks.append(Heading(2, "Agreement between clusterings"))
    writer.blocks.append(Paragraph(
        "NMI between two clusterings of the same documents (1: the same partition, 0: "
        "independent), mean ± std over the pairs of runs (their number in brackets)."))
    if not views.empty:
        writer.blocks.append(agreement_markup(
            views, methods, "Across corpora (views): same method, k and seed",
            "Computed on the documents both corpora hold."))
    if not seeds.empty:
        writer.blocks.append(agreement_markup(
            seeds, methods, "Across seeds: same method, k and corpus",
            "How far a method agrees with itself: the ceiling for the agreement across views."))
    writer.csv("agreement", pd.concat([views.assign(between="corpora"),
                                       seeds.assign(between="seeds")], ignore_index=True))


# -- overview ------------------------------------------------------------------------------------


def _timestamps(values):
    values = pd.Series(values, dtype=object)
    numeric = pd.to_numeric(values, errors="coerce")
    if numeric.notna().sum() == values.notna().sum() and numeric.notna().any():
        return pd.to_datetime(numeric, unit="s", utc=True)
    return pd.to_datetime(values, utc=True, errors="coerce", format="ISO8601")


def job_seconds(timings):
    """A job's compute time: its timings' "total", else the sum of its stages."""
    if not isinstance(timings, dict):
        return 0.0
    if isinstance(timings.get("total"), (int, float)):
        return float(timings["total"])
    return float(sum(v for v in timings.values() if isinstance(v, (int, float))))


def _duration(seconds):
    seconds = int(round(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}"


def overview(ledger):
    """The report's opening bullet points: pipeline, ledger, job counts, time."""
    jobs, meta = ledger.jobs, ledger.meta
    status = jobs["status"].fillna("unknown")
    names = [str(p) for p in dict.fromkeys(jobs["pipeline"]) if not _is_missing(p)]
    source = f" (file {meta['pipeline_file']})" if meta.get("pipeline_file") else ""
    items = [f"Pipeline: {', '.join(names) or 'unnamed'}{source}"]
    overrides = _json_meta(meta, "overrides")
    if overrides:
        items.append(f"Overrides: {' '.join(map(str, overrides))}")
    version = meta.get("textcluster_version") or meta.get("version") or "unknown"
    items += [
        f"Ledger: {ledger.path.name}, created {meta.get('created', 'unknown')}, last run "
        f"{meta.get('updated', 'unknown')}, textcluster {version}",
        f"Report written: {datetime.now(timezone.utc):%Y-%m-%d %H:%M UTC}",
        f"Jobs: {len(jobs) + ledger.pending} — {int((status == 'done').sum())} done, "
        f"{int((status == 'failed').sum())} failed, {ledger.pending} not run yet",
    ]
    if ledger.stale:
        items.append(f"Left out: {ledger.stale} job(s) in the ledger that the pipeline no "
                     f"longer lists (run with other settings)")
    items += _time_items(jobs)
    hosts = [str(h) for h in dict.fromkeys(jobs["host"]) if not _is_missing(h)]
    if hosts:
        items.append(f"Hosts: {', '.join(hosts)}")
    return items


def _time_items(jobs):
    compute = sum(job_seconds(t) for t in jobs["timings"])
    items = [f"Compute time (sum of job totals): {_duration(compute)} ({compute:.1f} s)"]
    started, finished = _timestamps(jobs["started"]), _timestamps(jobs["finished"])
    if started.notna().any() and finished.notna().any():
        wall = (finished.max() - started.min()).total_seconds()
        items.append(f"Wall time (first start → last finish): {_duration(wall)} "
                     f"({wall:.1f} s), {started.min():%Y-%m-%d %H:%M} → "
                     f"{finished.max():%Y-%m-%d %H:%M} UTC")
    return items


def _json_meta(meta, key):
    try:
        return json.loads(meta.get(key) or "null")
    except json.JSONDecodeError:
        return None


def restrict_to_pipeline(ledger):
    """The ledger's jobs that the latest expansion of its pipeline lists (meta ``jobs``), with
    the counts of the others (``stale``) and of listed jobs not in the ledger (``pending``)."""
    keys = _json_meta(ledger.meta, "jobs")
    if not isinstance(keys, list):
        return ledger
    listed = ledger.jobs["key"].isin(set(keys))
    pending = len(set(keys) - set(ledger.jobs["key"]))
    return replace(ledger, jobs=ledger.jobs[listed], stale=int((~listed).sum()),
                   pending=pending)


def warnings_table(done):
    """Distinct warnings recorded by finished jobs (their ``error`` column), with counts."""
    messages = [_first_line(e) for e in done["error"] if not _is_missing(e) and str(e).strip()]
    if not messages:
        return None
    counts = pd.Series(messages).value_counts()
    rows = [[message, str(n)] for message, n in counts.head(MAX_WARNINGS_LISTED).items()]
    notes = ([f"{len(counts) - MAX_WARNINGS_LISTED} more distinct warnings not shown."]
             if len(counts) > MAX_WARNINGS_LISTED else [])
    return Table(["warning", "jobs"], rows, "Warnings from finished jobs", notes)


def versions_table(jobs):
    sets = {}
    for versions in jobs["versions"]:
        if isinstance(versions, dict):
            key = json.dumps(versions, sort_keys=True)
            sets[key] = sets.get(key, 0) + 1
    if not sets:
        return None
    decoded = [(json.loads(k), n) for k, n in sets.items()]
    packages = list(dict.fromkeys(p for versions, _ in decoded for p in versions))
    header = ["package"] + ([f"set {i + 1} ({n} jobs)" for i, (_, n) in enumerate(decoded)]
                            if len(decoded) > 1 else ["version"])
    rows = [[p] + [str(v.get(p, "—")) for v, _ in decoded] for p in packages]
    return Table(header, rows, "Versions")


def time_by_method(jobs, methods):
    rows = []
    for method in methods:
        of_method = jobs[jobs["method"] == method]
        seconds = [job_seconds(t) for t in of_method["timings"]]
        rows.append([method, str(len(of_method)), f"{sum(seconds):.1f}",
                     f"{np.mean(seconds):.2f}" if seconds else "—"])
    return Table(["method", "jobs", "total s", "mean s per job"], rows, "Compute time per method")


def failed_table(failed):
    rows = []
    for job in failed.head(MAX_FAILED_LISTED).itertuples(index=False):
        rows.append([str(job.key), job.method, str(job.corpus), _text(job.k), _text(job.draw),
                     _text(job.seed), _first_line(job.error)])
    notes = []
    if len(failed) > MAX_FAILED_LISTED:
        notes.append(f"{len(failed) - MAX_FAILED_LISTED} more failed jobs in failed_jobs.csv.")
    return Table(["key", "method", "corpus", "k", "draw", "seed", "error"], rows,
                 "Failed jobs", notes)


def _text(value):
    if _is_missing(value):
        return "—"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _first_line(error, limit=300):
    text = "" if _is_missing(error) else str(error).strip()
    line = text.splitlines()[-1] if text else "no error recorded"  # a traceback ends with it
    return line if len(line) <= limit else line[: limit - 1] + "…"


# -- the report ----------------------------------------------------------------------------------


@dataclass
class ReportFiles:
    """What :func:`write_report` wrote (paths) and the job counts."""

    out_dir: Path
    markdown: Path
    html: Path
    csvs: list
    plots: list
    n_done: int
    n_failed: int


class _Writer:
    """Collects the report's blocks, CSV rows and plots while the sections are walked."""

    def __init__(self, out_dir):
        self.out_dir = Path(out_dir)
        self.blocks, self.plots, self.csvs = [], [], []
        self.long = {}  # metric -> CSV records
        self.significance, self.sweeps, self.ablations = [], [], []
        self.published, self.published_rows = Published(), []  # the pipeline's [published]

    def plot(self, figure, name, caption):
        """Save ``figure`` as ``plots/<name>.png`` and ``.svg``; the PNG goes in the report."""
        png = plots.save(figure, self.out_dir / "plots" / name)[0]
        self.plots.append(png)
        self.blocks.append(Image(png.relative_to(self.out_dir), caption))

    def csv(self, name, frame):
        path = self.out_dir / "tables" / f"{name}.csv"
        path.parent.mkdir(parents=True, exist_ok=True)
        _atomic_write(path, frame.to_csv(index=False))
        self.csvs.append(path)


def write_report(ledger_path, out_dir=None, baseline=None, metrics=None):
    """Write ``report.md``, ``report.html``, ``plots/*.png`` (each with an SVG twin) and
    ``tables/*.csv`` for the finished jobs of a ledger (a ``ledger.sqlite`` or the batch output
    folder holding it).

    ``out_dir`` defaults to ``report/`` beside the ledger; ``baseline`` is the method (or model)
    every other is tested against (default: 'nmf' if present, else the first); ``metrics``
    restricts the tables to these metric names (each with its ``_unlabeled`` companion).
    Raises :class:`DataNotFoundError` / :class:`InvalidInputError` for a missing, unreadable or
    empty ledger, or one without finished jobs.
    """
    ledger = restrict_to_pipeline(read_ledger(ledger_path))
    done = _finished_jobs(ledger)
    clusters_dir = ledger.path.parent / CLUSTERS_DIR
    available = available_metrics(done)
    chosen = ([] if not available and metrics is None and _kept_clusters(done, clusters_dir)
              else select_metrics(available, _metric_list(metrics)))
    methods = method_order(done, ledger.meta.get("pipeline", ""))
    _check_baseline(baseline, done, methods)
    out = Path(out_dir) if out_dir is not None else ledger.path.parent / "report"
    plots.require_matplotlib()  # before anything is written
    out.mkdir(parents=True, exist_ok=True)
    writer = _Writer(out)
    writer.published = read_published(ledger.meta)
    _write_overview(writer, ledger, done, methods)
    for section in _sections(done, methods, baseline, ledger.meta.get("pipeline", "")):
        _write_section(writer, section, chosen)
    _write_agreement(writer, done, clusters_dir, methods, ledger.meta.get("pipeline", ""))
    _write_csvs(writer, ledger)
    title = f"textcluster report: {ledger.path.parent.name or ledger.path.name}"
    markdown = out / "report.md"
    _atomic_write(markdown, to_markdown(writer.blocks))
    html_path = out / "report.html"
    _atomic_write(html_path, to_html(writer.blocks, out, title))
    status = ledger.jobs["status"]
    return ReportFiles(out, markdown, html_path, writer.csvs, writer.plots,
                       int((status == "done").sum()), int((status == "failed").sum()))


def _metric_list(metrics):
    if metrics is None:
        return None
    if isinstance(metrics, str):
        metrics = metrics.split(",")
    names = [m.strip() for m in metrics if m.strip()]
    return names or None


def _finished_jobs(ledger):
    jobs = ledger.jobs
    if jobs.empty:
        older = (f" of its pipeline's latest run ({ledger.stale} from earlier settings)"
                 if ledger.stale else " yet")
        raise InvalidInputError(
            f"{ledger.path} holds no jobs{older}; run the batch (textcluster batch PIPELINE) "
            f"first"
        )
    done = jobs[jobs["status"] == "done"]
    if done.empty:
        failed = jobs[jobs["status"] == "failed"]
        detail = (f"; the first error: {_first_line(failed['error'].iloc[0])}"
                  if len(failed) else "")
        raise InvalidInputError(
            f"{ledger.path} has no finished job ({len(jobs)} jobs, {len(failed)} failed"
            f"{detail}); fix the cause and re-run the batch, which retries failed jobs"
        )
    return done


def _check_baseline(baseline, done, methods):
    if baseline is None:
        return
    if baseline not in set(done["method"]) and baseline not in set(done["model"]):
        known = ", ".join(methods)
        raise InvalidInputError(
            f"--baseline {baseline!r} is not among the finished jobs' models; choose one of "
            f"{known}"
        )


def _sections(done, methods, baseline, pipeline_text=""):
    """One section per protocol (in PROTOCOL_ORDER) and corpus (in pipeline order)."""
    protocols = sorted(done["protocol"].fillna("full").unique(),
                       key=lambda p: (PROTOCOL_ORDER.index(p) if p in PROTOCOL_ORDER
                                      else len(PROTOCOL_ORDER), p))
    models = dict(zip(done["method"], done["model"]))
    for protocol in protocols:
        of_protocol = done[done["protocol"].fillna("full") == protocol]
        corpora = sorted(dict.fromkeys(of_protocol["corpus"]),
                         key=lambda c: _name_position(pipeline_text, c, quoted=True))
        for corpus in corpora:
            rows = of_protocol[of_protocol["corpus"] == corpus]
            present = [m for m in methods if m in set(rows["method"])]
            chosen = resolve_baseline(present, models, baseline)
            if chosen is None and protocol == "ablation":  # compare with the first variant
                chosen = resolve_baseline(present, models)
            note = ""
            if len(present) < 2:
                chosen, note = None, "One method only: no significance tests."
            elif chosen is None:
                note = f"The baseline {baseline} has no runs here: no significance tests."
            yield Section(protocol, str(corpus), rows, present, chosen, note)


def _write_overview(writer, ledger, done, methods):
    blocks = writer.blocks
    names = [str(p) for p in dict.fromkeys(ledger.jobs["pipeline"]) if not _is_missing(p)]
    blocks.append(Heading(1, f"Batch report: {', '.join(names)}" if names else "Batch report"))
    blocks.append(Bullets(overview(ledger)))
    pipeline_text = ledger.meta.get("pipeline")
    if pipeline_text:
        blocks.append(Code(pipeline_text, "Pipeline file"))
    versions = versions_table(ledger.jobs)
    if versions:
        blocks.append(versions)
    blocks.append(time_by_method(ledger.jobs, methods + [m for m in dict.fromkeys(
        ledger.jobs["method"]) if m not in methods]))
    failed = ledger.jobs[ledger.jobs["status"] == "failed"]
    if len(failed):
        blocks.append(failed_table(failed))
    warned = warnings_table(done)
    if warned:
        blocks.append(warned)


def _write_section(writer, section, metrics):
    present = [m for m in metrics if not metric_values(section.rows, m).empty]
    writer.blocks.append(Heading(2, section.title))
    if not present and section.protocol != "convergence":
        writer.blocks.append(Paragraph(
            "No clustering metric: these documents have no class labels."))
        writer.blocks.append(objective_markup(section.rows, section.methods))
    if section.baseline and section.protocol != "sweep" and present:
        writer.blocks.append(Paragraph(f"Baseline for the significance tests: {section.baseline}."))
    if section.protocol in K_TABLE_PROTOCOLS and present:
        _write_k_tables(writer, section, present)
    elif section.protocol == "sweep" and present:
        _write_sweep(writer, section, present)
    elif section.protocol == "ablation" and present:
        _write_ablation(writer, section, present)
    elif section.protocol == "convergence":
        _write_convergence(writer, section, present)
    elif present:  # an unknown protocol: tabulate by k
        _write_k_tables(writer, section, present)


# The range of each known metric (as recorded, before scaling to %); the axis of a plot of one
# stays inside it. Any other metric gets a free axis.
METRIC_RANGES = {"accuracy": (0.0, 1.0), "nmi": (0.0, 1.0), "purity": (0.0, 1.0),
                 "entropy": (0.0, 1.0), "rand_index": (0.0, 1.0), "ari": (-0.5, 1.0)}


def axis_range(metric: str) -> tuple[float, float] | None:
    """The range of ``metric`` as the report shows it (in % where the papers use %), or None
    for a metric without a known range."""
    bounds = METRIC_RANGES.get(metric.removesuffix(UNLABELED))
    if bounds is None:
        return None
    scale = metric_info(metric).scale
    return bounds[0] * scale, bounds[1] * scale


def _write_k_tables(writer, section, metrics):
    summaries, by_metric = [], {}
    tables = [build_k_table(section, metric) for metric in metrics]
    one_row_per_method = (len(set(section.rows["k"].dropna())) <= 1
                          and len(section.methods) > MAX_METHOD_COLUMNS)
    if one_row_per_method:  # e.g. a grid on the whole corpus: too many columns for k tables
        writer.blocks.append(methods_markup(tables))
    for metric, table in zip(metrics, tables):
        if not one_row_per_method:
            writer.blocks.append(k_table_markup(table))
            p_values = p_value_markup(table)
            if p_values:
                writer.blocks.append(p_values)
        records = k_table_long(table)
        writer.long.setdefault(metric, []).extend(records)
        writer.significance.extend(r for r in records if r["n_pairs"] is not None)
        info = table.info
        summaries.append(_in_order(table.summary, section.methods)
                         .assign(metric=metric, label=info.axis_label))
        by_metric[metric] = table.summary
    _write_published(writer, section, by_metric)
    if len(set(section.rows["k"].dropna())) > 1:
        summary = pd.concat(summaries)
        for metric in metrics:
            info = metric_info(metric)
            writer.plot(plots.metric_vs_k(summary, metric, info.axis_label, section.title,
                                          axis_range(metric)),
                        f"{section.slug}-vs-k-{_slug(metric)}",
                        f"{info.label} vs number of clusters on {section.corpus} "
                        f"(error bars: std)")


def _in_order(frame, methods):
    """``frame`` with its rows sorted (stably) by the position of their method in
    ``methods``."""
    position = frame["method"].map({m: i for i, m in enumerate(methods)})
    return frame.iloc[np.argsort(position.to_numpy(), kind="stable")]


def _write_sweep(writer, section, metrics):
    sweeps = swept_parameters(section.rows)
    if not sweeps:
        writer.blocks.append(Paragraph("No job of this sweep names a swept parameter in its "
                                       "variant; tabulated by k instead."))
        return _write_k_tables(writer, section, metrics)
    swept_keys = {i for rows in sweeps.values() for i in rows.index}
    references = overall_summary(section.rows.drop(index=list(swept_keys)), metrics,
                                  section.methods)
    best = []
    for parameter, rows in sweeps.items():
        summary = sweep_summary(rows, metrics)
        summary.attrs["corpus"] = section.corpus
        writer.blocks.append(sweep_markup(summary, parameter, metrics))
        writer.sweeps.extend(summary.assign(corpus=section.corpus, parameter=parameter)
                             .to_dict("records"))
        for metric in metrics:
            info = metric_info(metric)
            writer.plot(plots.metric_vs_parameter(summary, parameter, metric, info.axis_label,
                                                  section.title, references,
                                                  axis_range(metric)),
                        f"{section.slug}-{_slug(parameter)}-{_slug(metric)}",
                        f"{info.label} vs {parameter} on {section.corpus} (error bars: std; "
                        f"dashed: models without {parameter})")
        best.extend(best_settings(summary, parameter, metrics))
    header = ["parameter", "line"] + [metric_info(m).axis_label for m in metrics]
    writer.blocks.append(Table(header, best, "Best value of each swept parameter"))
    if len(references):
        writer.blocks.append(_reference_table(references, metrics))


def _reference_table(references, metrics):
    cells = references.set_index(["metric", "method"])
    rows = []
    for method in dict.fromkeys(references["method"]):
        rows.append([method] + [
            _cell(cells.loc[(m, method), "mean"], cells.loc[(m, method), "std"],
                  metric_info(m), cells.loc[(m, method), "runs"])
            if (m, method) in cells.index else "—" for m in metrics])
    return Table(["model"] + [metric_info(m).axis_label for m in metrics], rows,
                 "Models without a swept parameter (mean ± std over all their runs)")


def _write_published(writer, section, by_metric):
    """The pipeline's published numbers beside these (``{metric: summarize_by_k frame}``)."""
    blocks, rows = report_blocks(writer.published, section.corpus, section.protocol, by_metric)
    writer.blocks.extend(blocks)
    writer.published_rows.extend(rows)


def _write_ablation(writer, section, metrics):
    summary = overall_summary(section.rows, metrics, section.methods)
    tests = ablation_tests(section, metrics)
    writer.blocks.append(ablation_markup(section, summary, tests, metrics))
    _write_published(writer, section, {m: summarize_by_k(section.rows, m) for m in metrics})
    if tests:
        others = [m for m in section.methods if m != section.baseline]
        writer.blocks.append(Table(
            ["variant"] + [metric_info(m).label for m in metrics],
            [[m] + [tests[m, x].describe() for x in metrics] for m in others],
            f"p-values against {section.baseline}"))
    writer.ablations.extend(summary.assign(corpus=section.corpus).to_dict("records"))
    for metric in metrics:
        info = metric_info(metric)
        writer.plot(plots.ablation_bars(summary, metric, info.axis_label, section.title,
                                        axis_range(metric)),
                    f"{section.slug}-bars-{_slug(metric)}",
                    f"{info.label} of each variant on {section.corpus} (error bars: std)")


def ablation_markup(section, summary, tests, metrics):
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
            row.append(_cell(cell["mean"], cell["std"], info, cell["runs"])
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


def _write_convergence(writer, section, metrics):
    traces = convergence_traces(section.rows, section.methods)
    if not traces:
        writer.blocks.append(Paragraph(
            "These jobs recorded only a final objective, no per-iteration trace."))
    else:
        writer.blocks.append(convergence_markup(section.rows, section.methods))
        writer.plot(plots.objective_traces(traces, section.title), f"{section.slug}-objective",
                    f"Objective vs iteration on {section.corpus} (one line per run)")
    if metrics:
        _write_k_tables(writer, section, metrics)


def _integer_columns(frame, columns):
    """Counts as integers in the CSV (a missing count would otherwise make the column float)."""
    return frame.astype({c: "Int64" for c in columns if c in frame.columns})


def _write_csvs(writer, ledger):
    for metric, records in writer.long.items():
        long = _integer_columns(pd.DataFrame.from_records(records), ("draws", "runs", "n_pairs"))
        writer.csv(f"{metric}_long", long)
        writer.csv(f"{metric}_wide", wide_frame(long))
    if writer.significance:
        columns = ["corpus", "protocol", "metric", "method", "baseline", "k", "n_pairs",
                   "p_value", "significant", "test_note"]
        significance = pd.DataFrame.from_records(writer.significance)[columns]
        writer.csv("significance", _integer_columns(significance, ("n_pairs",)))
    if writer.sweeps:
        writer.csv("sweeps", pd.DataFrame.from_records(writer.sweeps))
    if writer.ablations:
        writer.csv("ablations", pd.DataFrame.from_records(writer.ablations))
    if writer.published_rows:
        writer.csv("published", _integer_columns(pd.DataFrame.from_records(
            writer.published_rows), ("runs_min", "runs_max")))
    failed = ledger.jobs[ledger.jobs["status"] == "failed"]
    if len(failed):
        columns = ["key", "method", "corpus", "protocol", "k", "draw", "seed", "error"]
        writer.csv("failed_jobs", failed[columns])

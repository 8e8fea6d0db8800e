"""Writing a report from a batch ledger: ``report.md``, a self-contained ``report.html``, the
tables as CSV and one plot per metric (PNG and SVG).

:func:`write_report` turns the finished jobs of a ledger (``textcluster batch`` records one
row per job in ``<output>/ledger.sqlite``) into

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

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from . import crossview, plots
from ..batch.spec import CLUSTERS_DIR
from ..pipeline.export import atomic_write
from .markup import Bullets, Code, Heading, Image, Paragraph, Table, to_html, to_markdown
from .overview import failed_table, overview, time_by_method, versions_table, warnings_table
from .protocols import (
    ablation_markup,
    ablation_tests,
    best_settings,
    convergence_markup,
    convergence_traces,
    objective_markup,
    overall_summary,
    reference_table,
    sweep_markup,
    sweep_summary,
    swept_parameters,
)
from .published import Published, read_published, report_blocks
from .results import (
    check_baseline,
    finished_jobs,
    is_missing,
    method_order,
    name_position,
    read_ledger,
    restrict_to_pipeline,
    sections,
    slug,
)
from .summary import (
    UNLABELED,
    available_metrics,
    metric_info,
    metric_values,
    select_metrics,
    summarize_by_k,
)
from .tables import (
    build_k_table,
    k_table_long,
    k_table_markup,
    methods_markup,
    p_value_markup,
    wide_frame,
)

__all__ = ["ReportFiles", "axis_range", "write_report"]

K_TABLE_PROTOCOLS = ("class-subset", "full")
MAX_METHOD_COLUMNS = 8  # more methods at a single k: one row per method instead
# The range of each known metric (as recorded, before scaling to %); the axis of a plot of one
# stays inside it. Any other metric gets a free axis.
METRIC_RANGES = {"accuracy": (0.0, 1.0), "nmi": (0.0, 1.0), "purity": (0.0, 1.0),
                 "entropy": (0.0, 1.0), "rand_index": (0.0, 1.0), "ari": (-0.5, 1.0)}


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
        atomic_write(path, frame.to_csv(index=False))
        self.csvs.append(path)


def write_report(ledger_path: str | Path, out_dir: str | Path | None = None,
                 baseline: str | None = None, metrics: str | list[str] | None = None
                 ) -> ReportFiles:
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
    done = finished_jobs(ledger)
    clusters_dir = ledger.path.parent / CLUSTERS_DIR
    available = available_metrics(done)
    unlabeled = not available and metrics is None and crossview.kept_clusters(done, clusters_dir)
    chosen = [] if unlabeled else select_metrics(available, _metric_list(metrics))
    methods = method_order(done, ledger.meta.get("pipeline", ""))
    check_baseline(baseline, done, methods)
    out = Path(out_dir) if out_dir is not None else ledger.path.parent / "report"
    plots.require_matplotlib()  # before anything is written
    out.mkdir(parents=True, exist_ok=True)
    writer = _Writer(out)
    writer.published = read_published(ledger.meta)
    _write_overview(writer, ledger, done, methods)
    for section in sections(done, methods, baseline, ledger.meta.get("pipeline", "")):
        _write_section(writer, section, chosen)
    _write_agreement(writer, done, clusters_dir, methods, ledger.meta.get("pipeline", ""))
    _write_csvs(writer, ledger)
    title = f"textcluster report: {ledger.path.parent.name or ledger.path.name}"
    markdown = out / "report.md"
    atomic_write(markdown, to_markdown(writer.blocks))
    html_path = out / "report.html"
    atomic_write(html_path, to_html(writer.blocks, out, title))
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


# -- sections ------------------------------------------------------------------------------------


def _write_overview(writer, ledger, done, methods):
    blocks = writer.blocks
    names = [str(p) for p in dict.fromkeys(ledger.jobs["pipeline"]) if not is_missing(p)]
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
    _write_cluster_counts(writer, section)


def _write_cluster_counts(writer, section):
    """The criterion curves of the jobs whose k was chosen without labels (``k = "auto"``)."""
    column = "metric.cluster_count"
    if column not in section.rows:
        return
    curves = {}  # the criterion does not depend on the model: one curve per seed
    for seed, count in zip(section.rows["seed"], section.rows[column]):
        if isinstance(count, dict):
            curves.setdefault(f"seed {seed}", (count["candidates"], count["instability"]))
    curves = [(label, x, y) for label, (x, y) in curves.items()]
    if curves:
        writer.plot(plots.criterion_curves(curves, "k", "instability (1 = chance)",
                                           section.title),
                    f"{section.slug}-cluster-count",
                    f"The choice of k without labels on {section.corpus}: instability over "
                    "random halves per candidate k, one line per seed (the smallest k within "
                    "one standard error of the lowest is chosen; every model of a seed sees "
                    "the same curve)")


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
                        f"{section.slug}-vs-k-{slug(metric)}",
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
                        f"{section.slug}-{slug(parameter)}-{slug(metric)}",
                        f"{info.label} vs {parameter} on {section.corpus} (error bars: std; "
                        f"dashed: models without {parameter})")
        best.extend(best_settings(summary, parameter, metrics))
    header = ["parameter", "line"] + [metric_info(m).axis_label for m in metrics]
    writer.blocks.append(Table(header, best, "Best value of each swept parameter"))
    if len(references):
        writer.blocks.append(reference_table(references, metrics))


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
                    f"{section.slug}-bars-{slug(metric)}",
                    f"{info.label} of each variant on {section.corpus} (error bars: std)")


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


def _write_agreement(writer, done, folder, methods, pipeline_text=""):
    if not crossview.kept_clusters(done, folder):
        return
    done = done.sort_values("corpus", kind="stable",  # pairs in the pipeline's corpus order
                            key=lambda c: c.map(lambda name: name_position(
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
        writer.blocks.append(crossview.agreement_markup(
            views, methods, "Across corpora (views): same method, k and seed",
            "Computed on the documents both corpora hold."))
    if not seeds.empty:
        writer.blocks.append(crossview.agreement_markup(
            seeds, methods, "Across seeds: same method, k and corpus",
            "How far a method agrees with itself: the ceiling for the agreement across views."))
    writer.csv("agreement", pd.concat([views.assign(between="corpora"),
                                       seeds.assign(between="seeds")], ignore_index=True))


# -- CSV files -----------------------------------------------------------------------------------


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

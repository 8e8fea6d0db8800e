"""PNG plots for batch reports, drawn with matplotlib's Agg renderer.

Each function takes an already aggregated table (see :mod:`textcluster.report`) and writes one
PNG. Figures are built with :class:`matplotlib.figure.Figure` on a ``FigureCanvasAgg``, never
through ``pyplot``, so plotting needs no display and leaves the caller's matplotlib backend
alone.
"""

import os
import uuid
from io import BytesIO
from pathlib import Path

import matplotlib
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

__all__ = [
    "ablation_bars",
    "metric_vs_k",
    "metric_vs_parameter",
    "objective_traces",
    "spans_decades",
]

PANEL_SIZE = (4.8, 3.6)  # inches per subplot
DPI = 100
MARGIN_INCHES = 0.85  # left of the first panel: room for the y-axis label


# -- small pure helpers --------------------------------------------------------------------


def spans_decades(values, decades=2):
    """True when all ``values`` are positive numbers and max/min is at least 10**decades."""
    try:
        values = np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        return False
    if values.size == 0 or not np.all(np.isfinite(values)) or np.any(values <= 0):
        return False
    return values.max() / values.min() >= 10.0**decades


def _is_numeric(values):
    try:
        return bool(np.all(np.isfinite(np.asarray(values, dtype=float))))
    except (TypeError, ValueError):
        return False


def _figure(n_panels):
    width, height = PANEL_SIZE
    figure = Figure(figsize=(width * n_panels, height), dpi=DPI)
    FigureCanvasAgg(figure)
    return figure, figure.subplots(1, n_panels, squeeze=False)[0]


def _save(figure, path, title="", bottom=0.16):
    """Write the figure as PNG through a temporary file and a rename (no partial files).

    Fixed margins instead of ``tight_layout``, which draws the figure twice."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if title:
        figure.suptitle(title)
    width = figure.get_figwidth()
    figure.subplots_adjust(left=MARGIN_INCHES / width, right=1 - 0.15 / width, bottom=bottom,
                           top=0.86 if title else 0.95, wspace=0.3)
    buffer = BytesIO()
    figure.savefig(buffer, format="png", dpi=DPI)
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    try:
        tmp.write_bytes(buffer.getvalue())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path


def _errorbar(ax, x, mean, std, label):
    std = np.nan_to_num(np.asarray(std, dtype=float), nan=0.0)
    ax.errorbar(x, mean, yerr=std, marker="o", markersize=4, capsize=3, label=label)


def _reference_lines(ax, references, metric):
    if references is None or len(references) == 0:
        return
    for row in references[references["metric"] == metric].itertuples(index=False):
        ax.axhline(row.mean, linestyle="--", linewidth=1, color="0.4", alpha=0.8)
        ax.annotate(row.method, (0.01, row.mean), xycoords=("axes fraction", "data"),
                    fontsize="x-small", color="0.3", va="bottom")


# -- plots ---------------------------------------------------------------------------------


def metric_vs_k(summary, metrics, path, title=""):
    """One panel per metric: mean vs number of clusters k, one line per method, error bars =
    std over the draws. ``summary``: rows ``metric, label, method, k, mean, std``; ``metrics``:
    ``[(name, axis label), ...]``."""
    figure, axes = _figure(len(metrics))
    for ax, (metric, label) in zip(axes, metrics):
        rows = summary[summary["metric"] == metric]
        for method, group in rows.groupby("method", sort=False):
            group = group.sort_values("k")
            _errorbar(ax, group["k"].astype(float), group["mean"], group["std"], method)
        ax.set_xlabel("number of clusters k")
        ax.set_ylabel(label)
        ax.xaxis.get_major_locator().set_params(integer=True)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize="small")
    return _save(figure, path, title)


def metric_vs_parameter(summary, parameter, metrics, path, title="", references=None):
    """One panel per metric: mean vs the value of ``parameter``, one line per method, error
    bars = std. Log x-axis when the grid spans two decades or more; categorical x when the values
    are not numbers. ``summary``: rows ``metric, method, value, mean, std``; ``references``
    (rows ``metric, method, mean``): models without the parameter, drawn as dashed lines."""
    figure, axes = _figure(len(metrics))
    values = list(dict.fromkeys(summary["value"]))
    numeric = _is_numeric(values)
    log_x = numeric and spans_decades(values)
    positions = {value: i for i, value in enumerate(values)}
    for ax, (metric, label) in zip(axes, metrics):
        rows = summary[summary["metric"] == metric]
        for method, group in rows.groupby("method", sort=False):
            x = (group["value"].astype(float) if numeric
                 else group["value"].map(positions).astype(float))
            _errorbar(ax, x, group["mean"], group["std"], method)
        _reference_lines(ax, references, metric)
        if log_x:
            ax.set_xscale("log")
        if not numeric:
            ax.set_xticks(range(len(values)), [str(v) for v in values], rotation=30)
        ax.set_xlabel(parameter)
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize="small")
    return _save(figure, path, title, bottom=0.16 if numeric else 0.26)


def objective_traces(traces, path, title=""):
    """Objective vs iteration, one thin line per run, one colour per method. ``traces``:
    ``[(method, [objective per iteration]), ...]``. Log y-axis when every value is positive
    and the traces span more than one decade."""
    figure, (ax,) = _figure(1)
    palette = matplotlib.rcParams["axes.prop_cycle"].by_key().get("color", ["C0"])
    methods = list(dict.fromkeys(method for method, _ in traces))
    colours = {method: palette[i % len(palette)] for i, method in enumerate(methods)}
    labelled = set()
    all_values = np.concatenate([np.asarray(t, dtype=float) for _, t in traces])
    for method, trace in traces:
        label = None if method in labelled else method
        labelled.add(method)
        iterations = np.arange(1, len(trace) + 1)
        ax.plot(iterations, trace, color=colours[method], linewidth=1, alpha=0.7, label=label)
    if spans_decades(all_values, decades=1):
        ax.set_yscale("log")
    ax.xaxis.get_major_locator().set_params(integer=True)
    ax.set_xlabel("iteration")
    ax.set_ylabel("objective")
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small")
    return _save(figure, path, title)


def ablation_bars(summary, metrics, path, title="", ylabel=""):
    """Grouped bars: one group per metric, one bar per method (variant), error bars = std.
    ``summary``: rows ``metric, method, mean, std``."""
    figure, (ax,) = _figure(1)
    methods = list(dict.fromkeys(summary["method"]))
    width = 0.8 / max(len(methods), 1)
    for i, method in enumerate(methods):
        rows = summary[summary["method"] == method].set_index("metric")
        means = [rows["mean"].get(metric, np.nan) for metric, _ in metrics]
        stds = np.nan_to_num([rows["std"].get(metric, np.nan) for metric, _ in metrics])
        x = np.arange(len(metrics)) + (i - (len(methods) - 1) / 2) * width
        ax.bar(x, means, width=width, yerr=stds, capsize=3, label=method)
    ax.set_xticks(range(len(metrics)), [label for _, label in metrics])
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3, axis="y")
    ax.legend(fontsize="small")
    return _save(figure, path, title)

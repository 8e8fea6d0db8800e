"""Report figures: one figure per metric, saved as PNG and SVG side by side.

Each plotting function takes an already aggregated table (:mod:`textcluster.report.summary`,
:mod:`textcluster.report.protocols`) and returns one :class:`matplotlib.figure.Figure`;
:func:`save` writes it. Figures are built on a ``FigureCanvasAgg``, never through ``pyplot``,
so plotting needs no display and leaves the caller's matplotlib backend alone. matplotlib is
optional (``pip install 'textcluster[plots]'``): it is imported when the first figure is made,
and its absence is a :class:`~textcluster._errors.MissingDependencyError` naming the extra.

A metric with a known range (``limits``, e.g. ``(0, 100)`` for NMI in %) gets its value axis
fitted to the data and error bars, then clipped to that range: never an NMI of 120 % or an
entropy of −5 %. Unbounded values (objective, seconds) keep free axes.
"""

from __future__ import annotations

from collections.abc import Sequence
from io import BytesIO
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from .._compat import require
from ..pipeline.export import atomic_write

if TYPE_CHECKING:  # matplotlib is optional (the ``plots`` extra): imported where a figure is made
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = [
    "FORMATS",
    "ablation_bars",
    "clip_limits",
    "clusters_over_time",
    "criterion_curves",
    "metric_vs_k",
    "metric_vs_parameter",
    "objective_traces",
    "save",
    "spans_decades",
]

FIGURE_SIZE = (6.4, 4.0)  # inches: one column of a paper page, or half a slide
DPI = 150  # of the PNG
FORMATS = ("png", "svg")  # written side by side by :func:`save`

Limits = tuple[float, float] | None


# -- small pure helpers --------------------------------------------------------------------


def spans_decades(values: Sequence | np.ndarray, decades: float = 2) -> bool:
    """True when all ``values`` are positive numbers and max/min is at least 10**decades."""
    try:
        array = np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        return False
    if array.size == 0 or not np.all(np.isfinite(array)) or np.any(array <= 0):
        return False
    return bool(array.max() / array.min() >= 10.0**decades)


def clip_limits(low: float, high: float, limits: Limits) -> tuple[float, float]:
    """The axis interval ``(low, high)`` clipped to ``limits`` (unchanged when None, or when
    clipping would leave nothing to show)."""
    if limits is None:
        return low, high
    clipped = max(low, limits[0]), min(high, limits[1])
    return clipped if clipped[0] < clipped[1] else (low, high)


def _is_numeric(values):
    try:
        return bool(np.all(np.isfinite(np.asarray(values, dtype=float))))
    except (TypeError, ValueError):
        return False


def require_matplotlib() -> ModuleType:
    """The matplotlib module, or a MissingDependencyError naming the ``plots`` extra."""
    return require("matplotlib", extra="plots", feature="textcluster report")


def _figure(title: str) -> tuple[Figure, Axes]:
    require_matplotlib()
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=FIGURE_SIZE, dpi=DPI, layout="constrained")
    FigureCanvasAgg(figure)
    ax = figure.subplots()
    if title:
        ax.set_title(title)
    ax.grid(alpha=0.3)
    return figure, ax


def _legend(figure, ax):
    """Legend outside the axes, on the right, so that it never hides a point."""
    if ax.get_legend_handles_labels()[0]:
        figure.legend(loc="outside right upper", fontsize="small")


def _clip_y(ax, limits):
    ax.set_ylim(*clip_limits(*ax.get_ylim(), limits))


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


# -- saving --------------------------------------------------------------------------------


def save(figure: Figure, stem: Path | str) -> list[Path]:
    """Write ``figure`` as ``<stem>.png`` and ``<stem>.svg`` (each through a temporary file
    and a rename: no partial files); returns the paths, PNG first. The SVG carries no date, so
    an unchanged figure gives an unchanged file."""
    stem = Path(stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    paths = []
    for fmt in FORMATS:
        buffer = BytesIO()
        with require_matplotlib().rc_context({"svg.hashsalt": "textcluster"}):
            figure.savefig(buffer, format=fmt, dpi=DPI,
                           metadata={"Date": None} if fmt == "svg" else None)
        paths.append(atomic_write(stem.with_name(f"{stem.name}.{fmt}"), buffer.getvalue()))
    return paths



# -- plots ---------------------------------------------------------------------------------


def metric_vs_k(summary: pd.DataFrame, metric: str, label: str, title: str = "",
                limits: Limits = None) -> Figure:
    """Mean of ``metric`` vs number of clusters k, one line per method, error bars = std over
    the draws. ``summary``: rows ``metric, method, k, mean, std``; ``label``: the y-axis
    label; ``limits``: the metric's range."""
    figure, ax = _figure(title)
    rows = summary[summary["metric"] == metric]
    for method, group in rows.groupby("method", sort=False):
        group = group.sort_values("k")
        _errorbar(ax, group["k"].astype(float), group["mean"], group["std"], method)
    ax.set_xlabel("number of clusters k")
    ax.set_ylabel(label)
    ax.xaxis.get_major_locator().set_params(integer=True)  # type: ignore[call-arg]
    _clip_y(ax, limits)
    _legend(figure, ax)
    return figure


def metric_vs_parameter(summary: pd.DataFrame, parameter: str, metric: str, label: str,
                        title: str = "", references: pd.DataFrame | None = None,
                        limits: Limits = None) -> Figure:
    """Mean of ``metric`` vs the value of ``parameter``, one line per method, error bars =
    std. Log x-axis when the grid spans two decades or more; categorical x when the values are
    not numbers. ``summary``: rows ``metric, method, value, mean, std``; ``references`` (rows
    ``metric, method, mean``): models without the parameter, drawn as dashed lines."""
    figure, ax = _figure(title)
    values = list(dict.fromkeys(summary["value"]))
    numeric = _is_numeric(values)
    positions = {value: i for i, value in enumerate(values)}
    rows = summary[summary["metric"] == metric]
    for method, group in rows.groupby("method", sort=False):
        x = (group["value"].astype(float) if numeric
             else group["value"].map(positions).astype(float))
        _errorbar(ax, x, group["mean"], group["std"], method)
    _reference_lines(ax, references, metric)
    if numeric and spans_decades(values):
        ax.set_xscale("log")
    if not numeric:
        ax.set_xticks(range(len(values)), [str(v) for v in values], rotation=30)
    ax.set_xlabel(parameter)
    ax.set_ylabel(label)
    _clip_y(ax, limits)
    _legend(figure, ax)
    return figure


def objective_traces(traces: Sequence[tuple[str, Sequence[float]]], title: str = "") -> Figure:
    """Objective vs iteration, one thin line per run, one colour per method. ``traces``:
    ``[(method, [objective per iteration]), ...]``. Free y-axis (an objective may be
    negative), on a log scale when every value is positive and the traces span more than one
    decade."""
    figure, ax = _figure(title)
    palette = require_matplotlib().rcParams["axes.prop_cycle"].by_key().get("color", ["C0"])
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
    ax.xaxis.get_major_locator().set_params(integer=True)  # type: ignore[call-arg]
    ax.set_xlabel("iteration")
    ax.set_ylabel("objective")
    _legend(figure, ax)
    return figure


def criterion_curves(curves: Sequence[tuple[str, Sequence[float], Sequence[float]]],
                     xlabel: str, ylabel: str, title: str = "") -> Figure:
    """A label-free criterion against the setting it chooses, one line per run (e.g. the
    instability of ``--k auto`` against k). ``curves``: ``[(label, x, y), ...]``; a label
    repeated is drawn in its first colour and named once."""
    figure, ax = _figure(title)
    palette = require_matplotlib().rcParams["axes.prop_cycle"].by_key().get("color", ["C0"])
    colours: dict[str, str] = {}
    for label, x, y in curves:
        named = label not in colours
        colour = colours.setdefault(label, palette[len(colours) % len(palette)])
        ax.plot(x, y, color=colour, linewidth=1, marker=".", label=label if named else None)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    _legend(figure, ax)
    return figure


def clusters_over_time(frame: pd.DataFrame, title: str = "") -> Figure:
    """Documents per period, one line per cluster. ``frame``: rows ``period, cluster,
    n_docs`` (:func:`textcluster.pipeline.timeline.clusters_over_time`)."""
    figure, ax = _figure(title)
    wide = frame.pivot(index="period", columns="cluster", values="n_docs")
    x = pd.to_datetime(wide.index)
    for cluster in wide.columns:
        ax.plot(x, wide[cluster].to_numpy(), marker="o", markersize=3, linewidth=1.2,
                label=f"cluster {cluster}")
    ax.set_ylim(bottom=0)
    ax.set_xlabel("period")
    ax.set_ylabel("documents")
    figure.autofmt_xdate()
    _legend(figure, ax)
    return figure


def ablation_bars(summary: pd.DataFrame, metric: str, label: str, title: str = "",
                  limits: Limits = None) -> Figure:
    """Horizontal bars of ``metric``, one per method (variant), top to bottom in the order of
    ``summary``, error bars = std. ``summary``: rows ``metric, method, mean, std``."""
    figure, ax = _figure(title)
    rows = summary[summary["metric"] == metric]
    std = np.nan_to_num(rows["std"].to_numpy(dtype=float), nan=0.0)
    positions = np.arange(len(rows))
    ax.barh(positions, rows["mean"].to_numpy(dtype=float), xerr=std, capsize=3,
            color="C0", height=0.6)
    ax.set_yticks(positions, list(rows["method"]))
    ax.invert_yaxis()
    ax.set_xlabel(label)
    ax.grid(False, axis="y")
    ax.set_xlim(*clip_limits(*ax.get_xlim(), limits))
    return figure

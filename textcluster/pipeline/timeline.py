"""Clusters over time: how many documents of each cluster per period, for corpora with dates
(a table's ``date_column``), as BERTopic's ``topics_over_time`` gives topics."""

from __future__ import annotations

import numpy as np
import pandas as pd

from .._errors import InvalidInputError

PERIODS = {"day": "D", "week": "W", "month": "M", "quarter": "Q", "year": "Y"}
# ``period="auto"``: the finest period that gives at most ~100 points over the corpus' span.
AUTO_SPANS = (("day", 92), ("week", 2 * 365), ("month", 10 * 365), ("quarter", 25 * 365))


def choose_period(dates: np.ndarray) -> str:
    """The period ``"auto"`` stands for, from the span of ``dates``."""
    span = (dates.max() - dates.min()) / np.timedelta64(1, "D")
    return next((name for name, days in AUTO_SPANS if span <= days), "year")


def clusters_over_time(dates: np.ndarray, labels: np.ndarray,
                       period: str = "auto") -> pd.DataFrame:
    """``period, cluster, n_docs, share`` rows: per period (its first day, ISO format) and
    cluster, the number of documents and their share of the period's documents; every cluster
    appears in every period, 0 where it has no document.

    ``period``: ``"auto"``, ``"day"``, ``"week"`` (starting Monday), ``"month"``,
    ``"quarter"`` or ``"year"``."""
    if period != "auto" and period not in PERIODS:
        raise InvalidInputError(f"unknown period {period!r}; choose auto, "
                                f"{', '.join(PERIODS)}")
    dates = np.asarray(dates, dtype="datetime64[ns]")
    period = choose_period(dates) if period == "auto" else period
    starts = pd.Series(dates).dt.to_period(PERIODS[period]).dt.start_time
    counts = pd.crosstab(starts.to_numpy(), np.asarray(labels))
    full = pd.period_range(starts.min(), starts.max(), freq=PERIODS[period]).start_time
    counts = counts.reindex(full, fill_value=0)
    shares = counts.div(counts.sum(axis=1).replace(0, 1), axis=0)
    frame = counts.stack().rename("n_docs").to_frame()
    frame["share"] = shares.stack().round(6)
    frame.index.names = ["period", "cluster"]
    frame = frame.reset_index()
    frame["period"] = frame["period"].dt.strftime("%Y-%m-%d")
    return frame.astype({"cluster": int, "n_docs": int})

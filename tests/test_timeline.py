"""Documents' dates: read from a table, kept through selections, cluster sizes per period."""

import numpy as np
import pandas as pd
import pytest

import textcluster
from textcluster import Corpus
from textcluster._errors import CorpusFormatError, InvalidInputError
from textcluster.corpora.loaders import load_table
from textcluster.pipeline.timeline import choose_period, clusters_over_time

from .test_api import FAST, documents


def dated(frame, start="2026-01-01", step="D"):
    return frame.assign(date=pd.date_range(start, periods=len(frame), freq=step))


def test_dates_are_read_and_follow_the_documents(tmp_path):
    frame = dated(documents()).sample(frac=1, random_state=0)
    frame["date"] = frame["date"].dt.strftime("%Y-%m-%dT%H:%M")  # text in the file
    path = tmp_path / "tickets.csv"
    frame.to_csv(path, index=False)
    corpus = load_table(path, text_column="body", label_column="topic")
    assert corpus.dates.dtype == np.dtype("datetime64[ns]")
    assert list(corpus.ids) == list(frame["ticket_id"])
    assert corpus.dates[0] == np.datetime64(frame["date"].iloc[0])
    part = corpus.subset([2, 0])
    assert list(part.dates) == [corpus.dates[2], corpus.dates[0]]
    assert "date" in corpus.to_pandas().columns


def test_an_unreadable_date_is_named(tmp_path):
    frame = dated(documents())
    frame["date"] = frame["date"].astype(str)
    frame.loc[3, "date"] = "next tuesday"
    with pytest.raises(CorpusFormatError, match="row.* 4.*'next tuesday'"):
        Corpus.from_pandas(frame, text_column="body")
    assert Corpus.from_pandas(frame, text_column="body", date_column="none").dates is None


def test_counts_per_period_with_empty_periods():
    dates = np.array(["2026-01-01", "2026-01-02", "2026-01-20", "2026-03-05"],
                     dtype="datetime64[ns]")
    frame = clusters_over_time(dates, np.array([0, 1, 1, 0]), period="month")
    assert list(frame.columns) == ["period", "cluster", "n_docs", "share"]
    table = frame.pivot(index="period", columns="cluster", values="n_docs")
    assert list(table.index) == ["2026-01-01", "2026-02-01", "2026-03-01"]
    assert table.loc["2026-01-01"].tolist() == [1, 2] and table.loc["2026-02-01"].tolist() == [0, 0]
    shares = frame.pivot(index="period", columns="cluster", values="share")
    assert shares.loc["2026-01-01"].tolist() == pytest.approx([1 / 3, 2 / 3])
    with pytest.raises(InvalidInputError, match="unknown period 'fortnight'"):
        clusters_over_time(dates, np.zeros(4, int), period="fortnight")


@pytest.mark.parametrize("days, period", [(30, "day"), (300, "week"), (2000, "month"),
                                          (5000, "quarter"), (20000, "year")])
def test_auto_period_keeps_the_points_few(days, period):
    dates = np.array(["2000-01-01"], dtype="datetime64[ns]") + np.array(
        [0, days], dtype="timedelta64[D]")
    assert choose_period(dates) == period


def test_a_run_writes_the_clusters_over_time(tmp_path):
    frame = dated(documents(), step="W")
    result = textcluster.run(frame, model="nmf", settings={"text_column": "body",
                                                          "label_column": "topic", **FAST})
    out = result.save(tmp_path / "out")
    written = pd.read_csv(out / "clusters_over_time.csv")
    assert written["n_docs"].sum() == len(frame)
    assert set(written["cluster"]) == set(result.labels)


def test_run_writes_the_figure_of_the_clusters_over_time(tmp_path):
    pytest.importorskip("matplotlib")
    from click.testing import CliRunner

    from textcluster.cli import main

    path = tmp_path / "tickets.csv"
    dated(documents(), step="W").to_csv(path, index=False)
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["run", str(path), "--model", "nmf", "--out", str(out),
                                       "--period", "month", "--set", "text_column=body",
                                       "--set", "label_column=topic", "--set", "max_iter=30"])
    assert result.exit_code == 0, result.output
    assert "document ids from the column 'ticket_id'" in result.output
    frame = pd.read_csv(out / "clusters_over_time.csv")
    assert frame["period"].str.endswith("-01").all()  # months
    assert (out / "clusters_over_time.png").is_file() and (out / "clusters_over_time.svg").is_file()

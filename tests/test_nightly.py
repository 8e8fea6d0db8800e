"""``textcluster nightly``: three simulated nights of a growing table, in both modes."""

import json
import tomllib
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from textcluster.cli import main

from .test_api import documents

SHIPPED = Path(__file__).resolve().parents[1] / "pipelines" / "nightly.toml"
FILES = ["changes.csv", "cluster_centroids.npz", "cluster_terms.csv", "clusters.csv",
         "metrics.json", "model", "moved.csv", "night.json", "run.json"]


def nightly_file(tmp_path, mode):
    """The shipped nightly file, pointed at a table in ``tmp_path`` (the rest unchanged)."""
    table = tomllib.loads(SHIPPED.read_text(encoding="utf-8"))["nightly"]
    assert table["mode"] == "refit" and table["settings"] == {"text_column": "text"}
    path = tmp_path / "nightly.toml"
    path.write_text(
        f'[nightly]\ncorpus = "{(tmp_path / "tickets.csv").as_posix()}"\n'
        f'model = "{table["model"]}"\nk = 3\nseed = {table["seed"]}\nmode = "{mode}"\n'
        f'output = "{(tmp_path / "out").as_posix()}"\n'
        '[nightly.settings]\ntext_column = "body"\nlabel_column = "topic"\n', encoding="utf-8")
    return path


def night(path, date, *extra):
    result = CliRunner().invoke(main, ["nightly", str(path), "--date", date, *extra])
    assert result.exit_code == 0, result.output
    return result.output


@pytest.mark.parametrize("mode", ["refit", "assign"])
def test_three_nights(tmp_path, mode):
    rows = documents(n_per_class=20).sample(frac=1, random_state=1)  # topics interleaved
    path = nightly_file(tmp_path, mode)
    out = tmp_path / "out"
    clusters = {}
    for day, n_rows in (("2026-01-01", 40), ("2026-01-02", 50), ("2026-01-03", 60)):
        rows.iloc[:n_rows].to_csv(tmp_path / "tickets.csv", index=False)  # the table grows
        printed = night(path, day)
        assert f"night {day}: {n_rows} documents" in printed
        folder = out / day
        record = json.loads((folder / "night.json").read_text())
        clusters[day] = pd.read_csv(folder / "clusters.csv", dtype={"doc_id": str})
        assert list(clusters[day]["doc_id"]) == list(rows["ticket_id"].iloc[:n_rows])
        if day == "2026-01-01":
            assert record["previous"] is None and (folder / "model" / "bundle.json").is_file()
            continue
        assert record["previous"] < day and record["new_documents"] == 10
        if mode == "refit":
            assert sorted(p.name for p in folder.iterdir()) == FILES
            assert "% of the" in record["alignment"]
        else:  # every night uses the first night's model
            assert record["bundle"] == str(out / "2026-01-01" / "model")
            assert (folder / "assign.json").is_file()
    # the documents of the first night keep their cluster id (the topics are planted)
    first = clusters["2026-01-01"].set_index("doc_id")["cluster"]
    last = clusters["2026-01-03"].set_index("doc_id")["cluster"]
    assert (last[first.index] == first).mean() >= 0.95
    # running a night again changes nothing; --force runs it again: the same data give the
    # same clusters
    assert "was done before" in night(path, "2026-01-02")
    before = (out / "2026-01-03" / "clusters.csv").read_bytes()
    night(path, "2026-01-03", "--force")
    assert (out / "2026-01-03" / "clusters.csv").read_bytes() == before
    assert not [p for p in out.iterdir() if p.name.startswith(".")]  # no temporary folder


def test_a_bad_nightly_file_is_refused(tmp_path):
    path = tmp_path / "n.toml"
    path.write_text('[nightly]\ncorpus = "x.csv"\nmode = "weekly"\n', encoding="utf-8")
    result = CliRunner().invoke(main, ["nightly", str(path)])
    assert result.exit_code == 2 and "mode must be one of refit, assign" in result.output
    result = CliRunner().invoke(main, ["nightly", str(path), "--date", "tomorrow"])
    assert result.exit_code == 2

"""Batch reports: tables, paired tests, plots and CSVs from synthetic ledgers."""

import json
import sqlite3

import numpy as np
import pandas as pd
import pytest
import scipy.stats
from click.testing import CliRunner

from textcluster._errors import DataNotFoundError, InvalidInputError, TextclusterError
from textcluster.cli import main
from textcluster.report import load_results, read_ledger, write_report
from textcluster.report.protocols import best_settings
from textcluster.report.summary import paired_values, select_metrics, summarize_by_k, wilcoxon_test

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
START = 1795341600.0  # 2026-11-22 10:00 UTC, as Unix time (the ledger's started/finished)
SCHEMA = """
CREATE TABLE jobs (key TEXT PRIMARY KEY, pipeline TEXT, corpus TEXT, selection TEXT,
  model TEXT, variant TEXT, params TEXT, k INTEGER, draw INTEGER, seed INTEGER, protocol TEXT,
  labeled TEXT, status TEXT, metrics TEXT, objective TEXT, timings TEXT, error TEXT,
  started REAL, finished REAL, host TEXT, versions TEXT);
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT);
"""
PIPELINE_TEXT = """# GNMF, Tables 2-3
name = "gnmf-tdt2"
[[models]]
name = "kmeans"
[[models]]
name = "nmf"
[[models]]
name = "gnmf"
"""
VERSIONS = {"textcluster": "0.1.0", "numpy": "2.4.6", "scipy": "1.17.1"}
# mean accuracy / NMI of each model, so that the tables have a known order
LEVELS = {"kmeans": (0.80, 0.78), "nmf": (0.88, 0.85), "gnmf": (0.96, 0.93)}


def job(key, model, k, draw, *, protocol="class-subset", corpus="tdt2", variant=None,
        params=None, metrics=None, status="done", objective=None, error=None, seconds=2.0,
        minute=0, labeled=None):
    seed = 0 if draw is None else 1000 * k + draw
    return {
        "key": key, "pipeline": "gnmf-tdt2", "corpus": corpus,
        "selection": json.dumps({"draw": draw, "k": k}), "model": model, "variant": variant,
        "params": json.dumps(params or {"max_iter": 100}), "k": k, "draw": draw, "seed": seed,
        "protocol": protocol, "labeled": json.dumps(labeled) if labeled else None,
        "status": status, "metrics": json.dumps(metrics) if metrics else None,
        "objective": json.dumps(objective or ([1.0] if status == "done" else None)),
        "timings": json.dumps({"fit": seconds * 0.9, "total": seconds}),
        "error": error, "started": START + 60 * minute, "finished": START + 60 * minute + seconds,
        "host": "node1", "versions": json.dumps(VERSIONS),
    }


def class_subset_jobs(ks=(2, 3, 4), draws=8, rng=None):
    """Every model on the same draws; accuracy and NMI around each model's level."""
    rng = np.random.default_rng(0) if rng is None else rng
    jobs = []
    for k in ks:
        for draw in range(draws):
            for model, (acc, nmi) in LEVELS.items():
                noise = rng.normal(0, 0.03, size=2)
                metrics = {"accuracy": float(np.clip(acc + noise[0] - 0.01 * k, 0, 1)),
                           "nmi": float(np.clip(nmi + noise[1] - 0.01 * k, 0, 1)),
                           "n_docs": 100 * k}
                jobs.append(job(f"{model}-{k}-{draw}", model, k, draw, metrics=metrics,
                                minute=len(jobs) % 60))
    return jobs


def write_ledger(path, jobs, meta=None):
    path.parent.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(path) as connection:
        connection.executescript(SCHEMA)
        columns = list(jobs[0]) if jobs else []
        for row in jobs:
            connection.execute(
                f"INSERT INTO jobs ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})",
                [row[c] for c in columns])
        meta = {"pipeline": PIPELINE_TEXT, "created": "2026-11-22T10:00:00+0000",
                "textcluster_version": "0.1.0"} if meta is None else meta
        connection.executemany("INSERT INTO meta VALUES (?, ?)", meta.items())
    connection.close()
    return path


@pytest.fixture(scope="module")
def ledger(tmp_path_factory):
    jobs = class_subset_jobs()
    jobs.append(job("gnmf-5-0", "gnmf", 5, 0, status="failed",
                    error="Traceback (most recent call last):\n  ...\nMemoryError: out of memory"))
    return write_ledger(tmp_path_factory.mktemp("batch") / "out" / "ledger.sqlite", jobs)


@pytest.fixture(scope="module")
def report(ledger, tmp_path_factory):
    return write_report(ledger, tmp_path_factory.mktemp("report"))


# -- reading ---------------------------------------------------------------------------------


def test_load_results_expands_params_and_metrics(ledger):
    jobs = load_results(ledger.parent)  # the folder works as well as the file
    assert len(jobs) == 3 * 8 * 3 + 1
    assert {"param.max_iter", "metric.accuracy", "metric.nmi", "method"} <= set(jobs.columns)
    done = jobs[jobs["status"] == "done"]
    assert done["metric.accuracy"].between(0, 1).all()
    assert jobs.loc[jobs["key"] == "gnmf-5-0", "error"].item().endswith("out of memory")


def test_ledger_is_opened_read_only(ledger):
    before = ledger.stat().st_mtime_ns
    read_ledger(ledger)
    assert ledger.stat().st_mtime_ns == before
    assert not ledger.with_name("ledger.sqlite-journal").exists()


# -- tables ----------------------------------------------------------------------------------


def test_mean_and_std_by_hand(ledger):
    jobs = load_results(ledger)
    summary = summarize_by_k(jobs[jobs["status"] == "done"], "accuracy")
    cell = summary[(summary["method"] == "nmf") & (summary["k"] == 3)].iloc[0]
    raw = [json.loads(j["metrics"])["accuracy"] for j in class_subset_jobs()
           if j["model"] == "nmf" and j["k"] == 3]
    mean = sum(raw) / len(raw)
    std = (sum((x - mean) ** 2 for x in raw) / (len(raw) - 1)) ** 0.5
    assert cell["runs"] == 8 and cell["draws"] == 8
    assert cell["mean"] == pytest.approx(100 * mean)
    assert cell["std"] == pytest.approx(100 * std)


def test_markdown_table_has_papers_layout(report, ledger):
    text = report.markdown.read_text(encoding="utf-8")
    lines = text.splitlines()
    header = next(line for line in lines if line.startswith("| k | draws |"))
    assert header.split("|")[3:6] == [" kmeans ", " nmf (baseline) ", " gnmf "]
    rows = _table_after(lines, "**AC (%) on tdt2**")
    assert [r[0] for r in rows] == ["2", "3", "4", "Avg."]
    jobs = load_results(ledger)
    nmf3 = jobs[(jobs["model"] == "nmf") & (jobs["k"] == 3)]["metric.accuracy"] * 100
    assert rows[1][1] == "8"
    assert rows[1][3] == f"{nmf3.mean():.1f} ± {nmf3.std():.1f}"
    per_k = [jobs[(jobs["model"] == "gnmf") & (jobs["k"] == k)]["metric.accuracy"].mean()
             for k in (2, 3, 4)]
    assert rows[3][4].startswith(f"{100 * np.mean(per_k):.1f}")
    assert "in %" in text


def _table_after(lines, caption):
    start = lines.index(caption) + 4  # caption, blank, header, separator
    rows = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        rows.append([c.strip() for c in line.strip("|").split("|")])
    return rows


def test_report_overview(report):
    text = report.markdown.read_text(encoding="utf-8")
    assert "Pipeline: gnmf-tdt2" in text
    assert "Jobs: 73 — 72 done, 1 failed, 0 not run yet" in text
    total = 73 * 2.0
    assert f"({total:.1f} s)" in text  # compute time = sum of job totals
    wall = 59 * 60 + 2.0  # the last job starts at minute 59 and takes 2 s
    assert f"Wall time (first start → last finish): 0:59:02 ({wall:.1f} s)" in text
    assert "MemoryError: out of memory" in text  # the failed job with its error
    assert "| scipy | 1.17.1 |" in text
    html = report.html.read_text(encoding="utf-8")
    assert "<details><summary>Pipeline file</summary>" in html
    assert "data:image/png;base64," in html and "<img src=\"plots/" not in html


def test_csv_long_and_wide(report):
    names = {p.name for p in report.csvs}
    assert {"accuracy_long.csv", "accuracy_wide.csv", "nmi_long.csv", "nmi_wide.csv",
            "significance.csv", "failed_jobs.csv"} <= names
    long = pd.read_csv(report.out_dir / "tables" / "accuracy_long.csv")
    wide = pd.read_csv(report.out_dir / "tables" / "accuracy_wide.csv")
    row = long[(long["method"] == "gnmf") & (long["k"] == "3")].iloc[0]
    wide_row = wide[wide["k"] == "3"].iloc[0]
    assert wide_row["gnmf"] == pytest.approx(row["mean"])
    assert wide_row["gnmf std"] == pytest.approx(row["std"])
    assert set(long["k"]) == {"2", "3", "4", "avg"}


# -- significance ------------------------------------------------------------------------------


def test_wilcoxon_p_values_equal_scipy(report, ledger):
    jobs = load_results(ledger)
    done = jobs[jobs["status"] == "done"]
    pairs = {}
    for j in class_subset_jobs():
        if j["k"] == 2:
            pairs.setdefault(j["draw"], {})[j["model"]] = json.loads(j["metrics"])["nmi"]
    x = np.array([pairs[d]["kmeans"] for d in sorted(pairs)])
    y = np.array([pairs[d]["nmf"] for d in sorted(pairs)])
    expected = scipy.stats.wilcoxon(x, y, zero_method="pratt").pvalue
    values, baseline = paired_values(done[done["k"] == 2], "nmi", "kmeans", "nmf")
    assert sorted(zip(values, baseline)) == sorted(zip(x, y))  # paired by draw
    assert wilcoxon_test(values, baseline).p_value == pytest.approx(expected)
    table = pd.read_csv(report.out_dir / "tables" / "significance.csv")
    row = table[(table["metric"] == "nmi") & (table["method"] == "kmeans")
                & (table["k"] == "2")].iloc[0]
    assert row["p_value"] == pytest.approx(expected)
    assert row["n_pairs"] == 8


def test_significance_marks(report):
    """GNMF is 8 points above NMF on every draw: significantly better at every k (8 pairs,
    exact p = 2/2**8); k-means below."""
    lines = report.markdown.read_text(encoding="utf-8").splitlines()
    rows = _table_after(lines, "**AC (%) on tdt2**")
    assert all(r[4].endswith("▲") for r in rows)
    assert all(r[2].endswith("▼") for r in rows)
    p_rows = _table_after(lines, "**AC on tdt2: p-values against nmf**")
    assert p_rows[0][2] == f"{2 / 2 ** 8:.2g} (n=8)"
    assert p_rows[-1][0] == "all k"


def test_wilcoxon_few_pairs_and_ties():
    assert wilcoxon_test([0.5, 0.6], [0.4, 0.5]).describe() == "n/a (2 pairs; needs 6)"
    assert wilcoxon_test([], []).p_value is None
    equal = wilcoxon_test([0.7] * 10, [0.7] * 10)
    assert equal.p_value is None and equal.describe() == "n/a (all pairs equal)"
    x = np.array([1.0, 1.0, 0.9, 0.8, 1.0, 0.95, 0.7, 1.0])
    y = np.array([1.0, 0.9, 0.9, 0.7, 1.0, 0.85, 0.6, 0.9])  # zero differences and ties
    test = wilcoxon_test(x, y)
    assert test.p_value == pytest.approx(scipy.stats.wilcoxon(x, y, zero_method="pratt").pvalue)
    assert test.direction == 1


def test_metric_selection():
    available = ["accuracy", "nmi", "accuracy_unlabeled", "nmi_unlabeled"]
    assert select_metrics(available, ["NMI"]) == ["nmi", "nmi_unlabeled"]
    assert select_metrics(available, None) == available
    with pytest.raises(InvalidInputError, match="no metric 'ari'"):
        select_metrics(available, ["ari"])
    with pytest.raises(InvalidInputError, match="no clustering metric"):
        select_metrics([], None)


def test_baseline_option_and_too_few_draws(tmp_path):
    ledger = write_ledger(tmp_path / "ledger.sqlite", class_subset_jobs(ks=(2, 3), draws=3))
    files = write_report(ledger, tmp_path / "r", baseline="kmeans", metrics="accuracy")
    text = files.markdown.read_text(encoding="utf-8")
    assert "kmeans (baseline)" in text and "**NMI" not in text
    assert "n/a (3 pairs; needs 6)" in text
    rows = _table_after(text.splitlines(), "**AC (%) on tdt2**")
    assert [r[0] for r in rows] == ["2", "3", "Avg."]
    assert not any(c.endswith(("▲", "▼")) for r in rows[:2] for c in r)  # 3 pairs: no test
    assert rows[2][3].endswith("▲")  # Avg.: all k pooled, 6 pairs, NMF above k-means in each


# -- other protocols --------------------------------------------------------------------------


@pytest.fixture
def saved_figures(monkeypatch):
    """Every matplotlib figure saved while the test runs, once each."""
    from matplotlib.figure import Figure

    figures, savefig = [], Figure.savefig

    def recording(figure, *args, **kwargs):
        if not any(figure is f for f in figures):
            figures.append(figure)
        return savefig(figure, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", recording)
    return figures


def _protocol_jobs():
    """A sweep of lam and, in turn, of n_neighbors (lam at 1.0), with NMF as a model without
    either; an ablation with unlabelled-document metrics; convergence traces."""
    rng = np.random.default_rng(1)
    jobs = []
    for draw in range(3):
        for lam in (0.01, 0.1, 1.0, 10.0, 100.0):
            acc = 0.7 + 0.05 * np.log10(lam) + rng.normal(0, 0.01)
            jobs.append(job(f"lam-{lam}-{draw}", "gnmf", 3, draw, protocol="sweep",
                            variant=f"lam={lam}", params={"lam": lam, "n_neighbors": 5},
                            metrics={"purity": acc, "entropy": 1 - acc}))
        for n_neighbors in (3, 5, 7):
            jobs.append(job(f"nn-{n_neighbors}-{draw}", "gnmf", 3, draw, protocol="sweep",
                            variant=f"n_neighbors={n_neighbors}",
                            params={"lam": 1.0, "n_neighbors": n_neighbors},
                            metrics={"purity": 0.5, "entropy": 0.5}))
        jobs.append(job(f"nmf-{draw}", "nmf", 3, draw, protocol="sweep", variant="",
                        metrics={"purity": 0.6 + 0.01 * draw, "entropy": 0.4}))
    for variant, drop in (("full", 0.0), ("alpha=0", 0.05), ("beta=0", 0.02)):
        for draw in range(6):
            value = 0.9 - drop + rng.normal(0, 0.005)
            jobs.append(job(f"abl-{variant}-{draw}", "sodnmf", 4, draw, protocol="ablation",
                            variant=variant, labeled={"fraction": 0.1},
                            metrics={"accuracy": value, "accuracy_unlabeled": value - 0.01}))
    for model in ("nmf", "gnmf"):
        for draw in range(2):
            trace = list(1e4 * np.exp(-0.2 * np.arange(40)) + 10.0 * (1 + draw))
            jobs.append(job(f"conv-{model}-{draw}", model, 5, draw, protocol="convergence",
                            objective=trace, metrics={"nmi": 0.8}))
    return jobs


def test_sweep_ablation_convergence_plots(tmp_path, saved_figures):
    ledger = write_ledger(tmp_path / "ledger.sqlite", _protocol_jobs(), meta={})
    files = write_report(tmp_path, tmp_path / "r")
    names = {p.name for p in files.plots}
    assert names == {"tdt2-sweep-lam-purity.png", "tdt2-sweep-lam-entropy.png",
                     "tdt2-sweep-n-neighbors-purity.png", "tdt2-sweep-n-neighbors-entropy.png",
                     "tdt2-ablation-bars-accuracy.png",
                     "tdt2-ablation-bars-accuracy-unlabeled.png", "tdt2-convergence-objective.png"}
    for path in files.plots:
        data = path.read_bytes()
        assert data.startswith(PNG_MAGIC) and len(data) > 1000
        assert path.with_suffix(".svg").is_file()
    for ax in (ax for figure in saved_figures for ax in figure.axes):  # lines and bars
        for label, limits in ((ax.get_ylabel(), ax.get_ylim()), (ax.get_xlabel(), ax.get_xlim())):
            if label.endswith("(%)"):
                assert 0 <= limits[0] < limits[1] <= 100, (label, limits)
    text = files.markdown.read_text(encoding="utf-8")
    lines = text.splitlines()
    lam_rows = _table_after(lines, "**Sweep of lam on tdt2**")
    assert [r[0] for r in lam_rows] == ["0.01", "0.1", "1.0", "10.0", "100.0"]
    # the n_neighbors jobs (lam = 1.0 too) are not mixed into the lam sweep
    sweeps = pd.read_csv(files.out_dir / "tables" / "sweeps.csv")
    at_one = sweeps[(sweeps["parameter"] == "lam") & (sweeps["metric"] == "purity")
                    & (sweeps["value"] == 1.0)]
    assert at_one["runs"].item() == 3
    # the best purity (highest) and the best entropy (lowest) are both at lam = 100
    best = _table_after(lines, "**Best value of each swept parameter**")
    assert best[0][:2] == ["lam", "gnmf"]
    assert best[0][2].endswith("at lam=100.0") and best[0][3].endswith("at lam=100.0")
    # a flat sweep names no single best value
    assert best[1][:2] == ["n_neighbors", "gnmf"]
    assert best[1][2] == "50.0 ± 0.0 at every n_neighbors"
    reference = _table_after(lines, "**Models without a swept parameter (mean ± std over all "
                                    "their runs)**")
    assert reference == [["nmf", "61.0 ± 1.0", "40.0 ± 0.0"]]
    assert "sodnmf:alpha=0" in text and "AC (unlabelled documents)" in text
    assert "| nmf | 2 | 40 |" in text  # convergence: runs and median iterations
    assert "2/2" in text  # both traces non-increasing
    assert ledger.exists()


def test_best_settings_names_every_tied_value():
    summary = pd.DataFrame({"method": "gnmf", "metric": "purity", "value": [0.1, 1.0, 10.0],
                            "mean": [71.44, 71.36, 70.0], "std": 2.0, "runs": 3})
    [row] = best_settings(summary, "lam", ["purity"])
    assert row == ["lam", "gnmf", "71.4 ± 2.0 at lam ∈ {0.1, 1.0}"]


def test_only_the_pipelines_latest_jobs(tmp_path):
    jobs = class_subset_jobs(ks=(2,), draws=2)
    listed = [j["key"] for j in jobs if j["model"] != "kmeans"] + ["never-run"]
    meta = {"pipeline": PIPELINE_TEXT, "jobs": json.dumps(listed)}
    files = write_report(write_ledger(tmp_path / "ledger.sqlite", jobs, meta), tmp_path / "r")
    text = files.markdown.read_text(encoding="utf-8")
    assert "Jobs: 5 — 4 done, 0 failed, 1 not run yet" in text
    assert "Left out: 2 job(s)" in text
    assert "kmeans" not in text.split("```")[-1]  # only in the pipeline text


def test_plots_are_readable_pngs(report):
    import matplotlib.image

    assert [p.name for p in report.plots] == ["tdt2-class-subset-vs-k-accuracy.png",
                                              "tdt2-class-subset-vs-k-nmi.png"]
    for path in report.plots:
        image = matplotlib.image.imread(path)
        assert image.ndim == 3 and image.shape[0] > 300 and image.shape[1] > 600
        assert image.std() > 0  # not a blank canvas


def test_plots_of_categorical_values_and_signed_objectives(tmp_path):
    from textcluster.report import plots

    summary = pd.DataFrame({"metric": ["nmi"] * 2, "method": ["gnmf"] * 2,
                            "value": ["heat", "binary"], "mean": [80.0, 78.0],
                            "std": [1.0, np.nan]})
    references = pd.DataFrame({"metric": ["nmi"], "method": ["nmf"], "mean": [70.0]})
    by_value = plots.metric_vs_parameter(summary, "weighting", "nmi", "NMI (%)",
                                         references=references, limits=(0, 100))
    objective = plots.objective_traces([("cf", [3.0, -1.0, -2.0])])
    assert [t.get_text() for t in by_value.axes[0].get_xticklabels()] == ["heat", "binary"]
    assert objective.axes[0].get_ylim()[0] < -2  # a signed objective keeps a free axis
    png, svg = plots.save(objective, tmp_path / "b")
    assert png.read_bytes().startswith(PNG_MAGIC) and svg.name == "b.svg"


def test_log_axis_rule():
    from textcluster.report.plots import spans_decades

    assert spans_decades([0.001, 0.01, 0.1, 1])
    assert not spans_decades([1, 2, 5, 10])
    assert not spans_decades([0, 1, 1000])
    assert not spans_decades(["heat", "binary"])


def _edge_jobs():
    """Values at the edges of their range, with std reaching beyond it (AC near 100 %, entropy
    near 0 %), and a metric without a known range that goes negative."""
    jobs = []
    for k in (2, 3):
        for draw in range(6):
            for model, shift in (("nmf", 0.0), ("gnmf", 0.05)):
                metrics = {"accuracy": 1.0 - shift - 0.3 * (draw % 2),
                           "entropy": shift + 0.25 * (draw % 2),
                           "modularity": -0.4 + 0.1 * draw}
                jobs.append(job(f"{model}-{k}-{draw}", model, k, draw, metrics=metrics))
    return jobs


def test_one_figure_per_metric_as_png_and_svg(tmp_path, saved_figures):
    write_ledger(tmp_path / "ledger.sqlite", _edge_jobs(), meta={})
    files = write_report(tmp_path, tmp_path / "r")
    assert sorted(p.name for p in files.plots) == [
        f"tdt2-class-subset-vs-k-{m}.png" for m in ("accuracy", "entropy", "modularity")]
    for png in files.plots:
        svg = png.with_suffix(".svg")
        assert png.read_bytes().startswith(PNG_MAGIC)
        assert svg.is_file() and "<svg" in svg.read_text(encoding="utf-8")
        assert f"]({png.relative_to(files.out_dir).as_posix()})" in files.markdown.read_text(
            encoding="utf-8")
    assert len(saved_figures) == 3
    assert all(len(f.axes) == 1 for f in saved_figures)


def test_bounded_metric_axes_stay_inside_their_range(tmp_path, saved_figures):
    write_ledger(tmp_path / "ledger.sqlite", _edge_jobs(), meta={})
    write_report(tmp_path, tmp_path / "r")
    axes = {ax.get_ylabel(): ax for f in saved_figures for ax in f.axes}
    for label in ("AC (%)", "Entropy (%)"):
        low, high = axes[label].get_ylim()
        assert 0 <= low < high <= 100, (label, low, high)
    assert axes["AC (%)"].get_ylim()[1] == 100  # the error bars reach beyond: clipped
    assert axes["Entropy (%)"].get_ylim()[0] == 0
    assert axes["modularity"].get_ylim()[0] < 0  # no known range: a free axis


def test_axis_ranges_of_the_metrics():
    from textcluster.report.plots import clip_limits
    from textcluster.report.writer import axis_range

    assert axis_range("nmi") == (0, 100) and axis_range("entropy_unlabeled") == (0, 100)
    assert axis_range("ari") == (-50, 100)
    assert axis_range("modularity") is None
    assert clip_limits(-5, 120, (0, 100)) == (0, 100)
    assert clip_limits(40, 90, (0, 100)) == (40, 90)
    assert clip_limits(-3e4, 2, None) == (-3e4, 2)


# -- bad input -----------------------------------------------------------------------------


def test_bad_ledgers(tmp_path):
    with pytest.raises(DataNotFoundError, match="does not exist"):
        write_report(tmp_path / "missing.sqlite", tmp_path / "r")
    with pytest.raises(DataNotFoundError, match="has no ledger.sqlite"):
        write_report(tmp_path, tmp_path / "r")
    empty = write_ledger(tmp_path / "empty" / "ledger.sqlite", [])
    with pytest.raises(InvalidInputError, match="holds no jobs"):
        write_report(empty, tmp_path / "r")
    failed = write_ledger(tmp_path / "failed" / "ledger.sqlite",
                          [job("a", "nmf", 2, 0, status="failed", error="boom: bad matrix")])
    with pytest.raises(InvalidInputError, match="no finished job.*boom: bad matrix"):
        write_report(failed, tmp_path / "r")
    garbage = tmp_path / "garbage.sqlite"
    garbage.write_bytes(b"not a database at all" * 100)
    with pytest.raises(TextclusterError, match="is not a textcluster ledger"):
        write_report(garbage, tmp_path / "r")
    other = tmp_path / "other.sqlite"
    with sqlite3.connect(other) as connection:
        connection.execute("CREATE TABLE t (x)")
    connection.close()
    with pytest.raises(TextclusterError, match="is not a textcluster ledger"):
        write_report(other, tmp_path / "r")


def test_bad_options(ledger, tmp_path):
    with pytest.raises(InvalidInputError, match="no metric 'purity'.*accuracy, nmi"):
        write_report(ledger, tmp_path / "r", metrics="purity")
    with pytest.raises(InvalidInputError, match="--baseline 'lsi'.*kmeans, nmf, gnmf"):
        write_report(ledger, tmp_path / "r", baseline="lsi")


def test_damaged_json(tmp_path):
    jobs = class_subset_jobs(ks=(2,), draws=1)
    jobs[0]["metrics"] = '{"accuracy": 0.9'
    ledger = write_ledger(tmp_path / "ledger.sqlite", jobs)
    with pytest.raises(TextclusterError, match="job 'kmeans-2-0' has invalid JSON in its "
                                               "'metrics' column"):
        load_results(ledger)


# -- command line ------------------------------------------------------------------------


def test_cli_report(ledger, tmp_path):
    out = tmp_path / "cli-report"
    result = CliRunner().invoke(main, ["report", str(ledger.parent), "--out", str(out),
                                       "--metrics", "nmi", "--baseline", "gnmf"])
    assert result.exit_code == 0, result.output
    assert "72 finished jobs, 1 failed" in result.output
    assert (out / "report.md").is_file() and (out / "report.html").is_file()
    assert (out / "tables" / "nmi_long.csv").is_file()
    assert not (out / "tables" / "accuracy_long.csv").exists()
    assert "gnmf (baseline)" in (out / "report.md").read_text(encoding="utf-8")


def test_cli_default_out_dir(tmp_path):
    ledger = write_ledger(tmp_path / "batch" / "ledger.sqlite",
                          class_subset_jobs(ks=(2,), draws=2))
    result = CliRunner().invoke(main, ["report", str(ledger)])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "batch" / "report" / "report.md").is_file()


@pytest.mark.parametrize("make, message", [
    (lambda p: p / "nowhere", "does not exist"),
    (lambda p: write_ledger(p / "l.sqlite", []), "holds no jobs"),
])
def test_cli_bad_input_exit_code_2(tmp_path, make, message):
    result = CliRunner().invoke(main, ["report", str(make(tmp_path))])
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert "Traceback" not in result.output


def test_full_corpus_runs_pair_by_seed(tmp_path):
    """The full-corpus protocol has no draw: runs pair by seed. A metric the package does not
    know (here: agreement) is reported as recorded, not in %."""
    rng = np.random.default_rng(2)
    jobs = []
    for seed in range(7):
        for model, level in (("nmf", 0.70), ("gnmf", 0.85)):
            row = job(f"{model}-{seed}", model, 30, None, protocol="full",
                      metrics={"nmi": level + rng.normal(0, 0.01), "agreement": 0.5})
            row["seed"] = seed
            jobs.append(row)
    files = write_report(write_ledger(tmp_path / "ledger.sqlite", jobs), tmp_path / "r")
    lines = files.markdown.read_text(encoding="utf-8").splitlines()
    rows = _table_after(lines, "**NMI (%) on tdt2**")
    assert [r[0] for r in rows] == ["30"]  # a single k: no Avg. row
    assert rows[0][1] == "1 (7 runs)"
    assert rows[0][3].endswith("▲")
    assert _table_after(lines, "**agreement on tdt2**")[0][2] == "0.5 ± 0"
    p_rows = _table_after(lines, "**NMI on tdt2: p-values against nmf**")
    assert p_rows[0][1] == f"{2 / 2 ** 7:.2g} (n=7)"


def test_many_methods_at_one_k_get_one_row_each(tmp_path):
    """A grid on the whole corpus (paper 002: 64 ANMF settings) is tabulated one row per
    method, with every metric as a column, instead of one column per method."""
    rng = np.random.default_rng(3)
    lams = [10.0 ** e for e in range(-3, 6)]  # 9 grid points and the baseline
    jobs = []
    for seed in range(6):
        for variant, level in [(None, 0.60)] + [(f"lam={lam}", 0.70 + 0.01 * i)
                                                for i, lam in enumerate(lams)]:
            model = "nmf" if variant is None else "gnmf"
            row = job(f"{model}-{variant}-{seed}", model, 30, None, protocol="full",
                      variant=variant, metrics={"nmi": level + rng.normal(0, 0.005),
                                                "accuracy": level})
            row["seed"] = seed
            jobs.append(row)
    files = write_report(write_ledger(tmp_path / "ledger.sqlite", jobs), tmp_path / "r")
    lines = files.markdown.read_text(encoding="utf-8").splitlines()
    rows = _table_after(lines, "**All methods on tdt2**")
    assert [r[0] for r in rows] == ["nmf (baseline)"] + [f"gnmf:lam={lam}" for lam in lams]
    assert all(r[1] == "6" for r in rows)
    assert rows[1][2] == "70.0 ± 0.0 ▲" and rows[1][3].endswith("▲")  # AC, NMI
    assert not any(line.startswith("**NMI (%) on tdt2**") for line in lines)
    long = pd.read_csv(files.out_dir / "tables" / "nmi_long.csv")
    assert len(long) == 2 * 10  # the k rows and the averages are still written


def _agreement_rows(tmp_path, runs):
    """Finished runs ``(key, corpus, draw, seed, doc ids)`` of one method, clusters kept."""
    folder = tmp_path / "clusters"
    folder.mkdir()
    rows = []
    for key, corpus, draw, seed, ids in runs:
        pd.DataFrame({"doc_id": ids, "cluster": np.arange(len(ids)) % 2}).to_csv(
            folder / f"{key}.csv", index=False)
        rows.append({"key": key, "method": "nmf", "k": 2, "corpus": corpus, "draw": draw,
                     "seed": seed, "selection": {"select": {}, "draw_seed": None}})
    return pd.DataFrame(rows), folder


def test_agreement_pairs_runs_of_one_draw_only(tmp_path):
    from textcluster.report.crossview import cross_view_agreement, seed_agreement

    ids = [f"d{i}" for i in range(8)]
    rows, folder = _agreement_rows(tmp_path, [
        ("a0", "users", 0, 0, ids), ("a1", "users", 1, 1, ids),  # different draws
        ("b0", "users", 0, 1, ids), ("c0", "tags", 0, 0, ids), ("c1", "tags", 1, 0, ids)])
    seeds = seed_agreement(rows, folder)
    assert sorted(zip(seeds["seed_first"], seeds["seed_second"])) == [(0, 1)]
    assert set(seeds["first"]) == {"users"}
    views = cross_view_agreement(rows, folder)
    assert len(views) == 1 and views["n_shared"].tolist() == [8]


def test_agreement_leaves_out_pairs_without_shared_documents(tmp_path):
    from textcluster.report.crossview import (
        agreement_markup,
        cross_view_agreement,
        summarize_agreement,
    )

    rows, folder = _agreement_rows(tmp_path, [
        ("a", "users", None, 0, ["u1", "u2", "u3"]), ("b", "tags", None, 0, ["t1", "t2"])])
    views = summarize_agreement(cross_view_agreement(rows, folder))
    assert views.empty
    table = agreement_markup(views, ["nmf"], "caption", "note")
    assert "nan" not in repr(table.rows)


def test_without_matplotlib_the_report_says_so_and_writes_nothing(ledger, tmp_path, monkeypatch):
    import sys

    from textcluster._errors import MissingDependencyError

    for module in [m for m in sys.modules if m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, module)
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(MissingDependencyError, match=r"textcluster\[plots\]"):
        write_report(ledger, tmp_path / "report")
    assert not (tmp_path / "report").exists()

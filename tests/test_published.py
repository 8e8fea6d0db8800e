"""Published numbers in pipeline files: validation, the verdicts, and the report's comparison."""

import json
import math

import numpy as np
import pandas as pd
import pytest

from textcluster.report import write_report
from textcluster._errors import InvalidInputError
from textcluster.batch import load_pipeline, load_results, run_batch
from textcluster.batch.spec import expand
from textcluster.report.published import (
    NOT_REPRODUCED,
    SHORT,
    WITHIN,
    best_setting,
    comparison_records,
    comparison_table,
    read_published,
    verdict,
)
from textcluster.report.summary import metric_info, summarize_by_k

from ._batch import pipeline_text, write_pipeline, write_planted_mat

# kmeans, lsi-kmeans, nmf and nmf:ncw (two [[models]] entries) and gnmf, as in paper 003
MODELS = ("kmeans", "lsi-kmeans", "nmf", "gnmf")
NCW = '[[models]]\nname = "nmf"\nvariants = { ncw = { ncw = true } }\n'
EXAMPLE = """
# Published averages over k (AC / NMI in %).
[published]
source = "Paper 003 (Cai, He & Han), Tables 2-3: averages over k = 2..10"
[published.tdt2]
kmeans = { accuracy = 80.8, nmi = 79.9 }
lsi-kmeans = { accuracy = 81.8, nmi = 80.0 }
"nmf:ncw" = { accuracy = 89.4, nmi = 87.0 }
gnmf = { accuracy = 97.6, nmi = 94.8 }
"""


def base_text():
    return pipeline_text(models=MODELS) + "\n" + NCW


def load(tmp_path, text, name="p.toml"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return load_pipeline(path)


# -- pipeline files --------------------------------------------------------------------------


def test_published_numbers_validate_and_leave_the_jobs_alone(tmp_path):
    plain = load(tmp_path, base_text(), "plain.toml")
    published = load(tmp_path, base_text() + EXAMPLE, "published.toml")
    assert published.config["published"]["tdt2"]["nmf:ncw"] == {"accuracy": 89.4, "nmi": 87.0}
    plain_jobs, published_jobs = expand(plain), expand(published)
    assert len(plain_jobs) == 2 * 2 * 5  # k × draws × methods
    assert [j.key for j in published_jobs] == [j.key for j in plain_jobs]
    assert [j.identity() for j in published_jobs] == [j.identity() for j in plain_jobs]


@pytest.mark.parametrize("published, message", [
    ("[published.reuters]\nkmeans = { accuracy = 80.0 }",
     (r"p.toml: \[published\] 'reuters' is not a corpus of \[\[corpora\]\]; the corpora are: "
      r"tdt2")),
    ("[published.tdt2]\nkmeans = { acc = 80.0 }",
     (r"p.toml: \[published.tdt2\] 'kmeans': unknown metric 'acc'; the known metrics are: "
      r"accuracy, ari, entropy, nmi, purity")),
    ("[published.tdt2]\nlsi = { accuracy = 80.0 }",
     (r"\[published.tdt2\] 'lsi': no \[\[models\]\] entry named 'lsi'; the models are: "
      r"kmeans, lsi-kmeans, nmf, gnmf")),
    ("[published.tdt2]\nkmeans = { accuracy = \"80.8\" }",
     r"\[published.tdt2\] 'kmeans': accuracy must be a number, in % .* got '80.8'"),
    ("[published.tdt2]\nkmeans = { nmi = true }", r"'kmeans': nmi must be a number"),
    ("[published.tdt2]\nkmeans = { nmi = nan }", r"'kmeans': nmi must be a number"),
    ("[published.tdt2]\n\"nmf:cai\" = { accuracy = 80.0 }",
     (r"\[published.tdt2\] 'nmf:cai': model 'nmf' has no variant 'cai'; its method labels "
      r"are: nmf, nmf:ncw")),
    ("[published.tdt2]\n\"kmeans:ncw\" = { accuracy = 80.0 }",
     r"'kmeans:ncw': model 'kmeans' has no variant 'ncw'; its method labels are: kmeans$"),
    ("[published.tdt2]\nkmeans = 80.0", r"'kmeans' must be a table of metric = number"),
    ("[published]\nsource = 3", r"\[published\] source must be a string"),
    ("[published]\ntdt2 = 3", r"\[published\] tdt2 must be a table"),
])
def test_bad_published_numbers_say_what_is_wrong(tmp_path, published, message):
    with pytest.raises(InvalidInputError, match=message):
        load(tmp_path, base_text() + "\n" + published + "\n")


def test_a_model_run_only_as_variants_needs_its_variant_named(tmp_path):
    text = pipeline_text(models=("kmeans",)) + "\n" + NCW
    text += '\n[published.tdt2]\nnmf = { accuracy = 89.4 }\n'
    with pytest.raises(InvalidInputError, match="model 'nmf' runs only as its variants; its "
                                                "method labels are: nmf:ncw"):
        load(tmp_path, text)


# -- verdicts and records --------------------------------------------------------------------


def test_verdicts_follow_the_direction_of_the_metric():
    higher = metric_info("accuracy").greater_is_better
    lower = metric_info("entropy").greater_is_better
    assert higher is True and lower is False
    assert verdict(-0.9, 1.0, higher) == WITHIN
    assert verdict(1.0, 1.0, higher) == WITHIN  # on the edge
    assert verdict(-1.5, 1.0, higher) == SHORT
    assert verdict(1.5, 1.0, higher) == "above"
    assert verdict(1.5, 1.0, lower) == SHORT  # higher entropy than published is worse
    assert verdict(-1.5, 1.0, lower) == "below"
    assert verdict(0.5, 1.0, lower) == WITHIN
    assert verdict(1.5, 1.0, None) == "differs by more than the spread"
    assert verdict(math.nan, 1.0, higher) == NOT_REPRODUCED
    assert verdict(-0.1, math.nan, higher) == SHORT + " (one run per k: no spread)"
    assert verdict(0.0, math.nan, higher).startswith(WITHIN)


def test_records_average_over_k_like_the_papers_tables():
    rows = pd.DataFrame({
        "method": ["a"] * 5 + ["b"] * 2,
        "k": [2, 2, 3, 3, 3, 2, 3],
        "draw": [0, 1, 0, 1, 2, 0, 0],
        "metric.entropy": [0.10, 0.20, 0.30, 0.40, 0.50, 0.6, 0.7],
    })
    summary = summarize_by_k(rows, "entropy")
    records = comparison_records({"a": {"entropy": 40.0}, "b": {"entropy": 60.0},
                                  "c": {"entropy": 10.0}, "a ": {"nmi": 1.0}},
                                 {"entropy": summary})
    a, b, c = records  # nmi has no summary: no record
    reproduced = np.mean([15.0, 40.0])  # the means at k = 2 and k = 3, in %
    spread = np.mean([np.std([10.0, 20.0], ddof=1), np.std([30.0, 40.0, 50.0], ddof=1)])
    assert a["reproduced"] == pytest.approx(reproduced)
    assert a["difference"] == pytest.approx(reproduced - 40.0)
    assert a["spread"] == pytest.approx(spread)
    assert (a["n_k"], a["k_values"], a["runs_min"], a["runs_max"]) == (2, "2 3", 2, 3)
    assert a["verdict"] == "below"  # 27.5 against 40: lower entropy is better
    assert b["reproduced"] == pytest.approx(65.0) and math.isnan(b["spread"])
    assert b["verdict"] == SHORT + " (one run per k: no spread)"
    assert c["verdict"] == NOT_REPRODUCED and math.isnan(c["reproduced"])


def test_runs_per_k_count_seeds_on_the_whole_corpus():
    rows = pd.DataFrame({"method": ["a"] * 3, "k": [30] * 3, "draw": [np.nan] * 3,
                         "seed": [0, 1, 2], "metric.nmi": [0.80, 0.82, 0.84]})
    (record,) = comparison_records({"a": {"nmi": 82.0}}, {"nmi": summarize_by_k(rows, "nmi")})
    assert (record["runs_min"], record["runs_max"]) == (3, 3)
    assert record["spread"] == pytest.approx(2.0)
    assert record["verdict"] == WITHIN


def test_published_numbers_are_read_from_the_ledger_meta_with_their_overrides():
    text = pipeline_text(models=("kmeans",)) + EXAMPLE
    assert read_published({}).corpora == {}
    assert read_published({"pipeline": "not = [toml"}).corpora == {}
    assert read_published({"pipeline": pipeline_text()}).corpora == {}
    published = read_published({"pipeline": text, "overrides": json.dumps(
        ["published.tdt2.kmeans.accuracy=70.5", "protocol.draws=1"])})
    assert published.source.startswith("Paper 003")
    assert published.corpora["tdt2"]["kmeans"] == {"accuracy": 70.5, "nmi": 79.9}
    assert published.corpora["tdt2"]["gnmf"] == {"accuracy": 97.6, "nmi": 94.8}


# -- the report ------------------------------------------------------------------------------


def reproduced_by_hand(jobs, method, metric):
    """The Avg. of the k tables (mean over k of the per-k means) and the mean per-k std, %."""
    values = jobs[jobs["model"] == method].groupby("k")[f"metric.{metric}"]
    return float(100 * values.mean().mean()), float(100 * values.std(ddof=1).mean())


def table_rows(markdown, caption):
    """The rows of the Markdown table under ``caption``, as lists of cells."""
    block = markdown.split(f"**{caption}**", 1)[1].split("\n\n", 2)[1]
    return [[c.strip() for c in line.strip("|").split(" | ")]
            for line in block.splitlines()[2:]]


def test_the_report_sets_published_beside_reproduced_numbers(tmp_path):
    data_dir = write_planted_mat(tmp_path / "data")
    out = tmp_path / "out"
    plain = write_pipeline(tmp_path / "p.toml", output=out)  # kmeans and nmf, k = 2, 3
    run_batch(load_pipeline(plain, data_dir=str(data_dir)), report=False)
    jobs = load_results(out)
    expected = {(m, x): reproduced_by_hand(jobs, m, x)
                for m in ("kmeans", "nmf") for x in ("accuracy", "nmi", "entropy")}
    assert all(spread > 0.1 for _, spread in expected.values())
    (ka, ka_spread), (na, na_spread) = expected["kmeans", "accuracy"], expected["nmf", "accuracy"]
    kn, ne = expected["kmeans", "nmi"][0], expected["nmf", "entropy"]
    published = {("kmeans", "accuracy"): ka + ka_spread + 10,  # far above: short
                 ("kmeans", "nmi"): round(kn, 2),  # as reproduced: within
                 ("nmf", "accuracy"): na - na_spread - 10,  # far below: above
                 ("nmf", "entropy"): ne[0] + ne[1] + 5}  # lower entropy is better: below
    text = plain.read_text(encoding="utf-8") + (
        '\n[published]\nsource = "Made-up paper"\n[published.tdt2]\n'
        f"kmeans = {{ accuracy = {published['kmeans', 'accuracy']!r}, "
        f"nmi = {published['kmeans', 'nmi']!r} }}\n"
        f"nmf = {{ accuracy = {published['nmf', 'accuracy']!r}, "
        f"entropy = {published['nmf', 'entropy']!r} }}\n")
    plain.write_text(text, encoding="utf-8")
    summary = run_batch(load_pipeline(plain, data_dir=str(data_dir)), report=write_report)
    assert (summary.done, summary.skipped, summary.report_error) == (0, 8, None)

    markdown = (out / "report" / "report.md").read_text(encoding="utf-8")
    rows = table_rows(markdown, "Published vs reproduced on tdt2 (Made-up paper)")
    verdicts = {("kmeans", "AC"): SHORT, ("kmeans", "NMI"): WITHIN,
                ("nmf", "AC"): "above", ("nmf", "Entropy"): "below"}
    labels = {"AC": "accuracy", "NMI": "nmi", "Entropy": "entropy"}
    assert [(r[0], r[1]) for r in rows] == list(verdicts)
    for method, label, cited, reproduced, difference, spread, ks, draws, said in rows:
        metric = labels[label]
        mean, std = expected[method, metric]
        assert cited == f"{published[method, metric]:.1f}"
        assert reproduced == f"{mean:.1f}"
        assert difference == f"{mean - published[method, metric]:+.1f}"
        assert spread == f"{std:.1f}"
        assert (ks, draws, said) == ("2, 3", "2", verdicts[method, label])
    assert ("Short of the published numbers by more than the spread on tdt2: kmeans (AC)."
            in markdown)

    csv = pd.read_csv(out / "report" / "tables" / "published.csv")
    assert list(zip(csv["method"], csv["metric"])) == [
        ("kmeans", "accuracy"), ("kmeans", "nmi"), ("nmf", "accuracy"), ("nmf", "entropy")]
    for row in csv.itertuples():
        mean, std = expected[row.method, row.metric]
        assert row.reproduced == pytest.approx(mean, rel=1e-12)
        assert row.spread == pytest.approx(std, rel=1e-12)
        assert row.published == published[row.method, row.metric]
        assert (row.corpus, row.protocol, row.unit, row.source) == (
            "tdt2", "class-subset", "%", "Made-up paper")
        assert (row.n_k, row.runs_min, row.runs_max) == (2, 2, 2)
    assert list(csv["verdict"]) == list(verdicts.values())


def test_an_ablation_report_sets_published_beside_its_variants(tmp_path):
    data_dir = write_planted_mat(tmp_path / "data")
    out = tmp_path / "out"
    path = tmp_path / "p.toml"
    path.write_text(
        '[[corpora]]\nname = "tdt2"\n[[models]]\nname = "gnmf"\n'
        'params = { n_init = 2, init_iter = 5, max_iter = 20, n_assign_init = 2 }\n'
        'variants = { full = {}, no-graph = { lam = 0.0 } }\n'
        '[protocol]\nkind = "ablation"\ndocuments = "class-subset"\nk = 3\ndraws = 3\n'
        f'[output]\ndir = "{out.as_posix()}"\n'
        '[published]\nsource = "Made-up table"\n[published.tdt2]\n'
        '"gnmf:full" = { accuracy = 0.0 }\n"gnmf:no-graph" = { nmi = 100.0 }\n',
        encoding="utf-8")
    summary = run_batch(load_pipeline(path, data_dir=str(data_dir)), report=write_report)
    assert summary.done == 6 and summary.report_error is None
    jobs = load_results(out)
    markdown = (out / "report" / "report.md").read_text(encoding="utf-8")
    rows = table_rows(markdown, "Published vs reproduced on tdt2 (Made-up table)")
    assert [(r[0], r[1], r[-1]) for r in rows] == [("gnmf:full", "AC", "above"),
                                                   ("gnmf:no-graph", "NMI", SHORT)]
    full = 100 * jobs.loc[jobs["variant"] == "full", "metric.accuracy"].mean()
    assert rows[0][3] == f"{full:.1f}" and rows[0][6:8] == ["3", "3"]
    csv = pd.read_csv(out / "report" / "tables" / "published.csv")
    assert set(csv["protocol"]) == {"ablation"}


def test_model_best_is_the_grid_point_with_the_best_average(tmp_path):
    grid = '[[models]]\nname = "gnmf"\nparams = { lam = [0.0, 1e8] }\n'
    text = pipeline_text(models=("kmeans",)) + "\n" + grid
    with pytest.raises(InvalidInputError, match="kmeans:best"):  # one setting: no grid
        load(tmp_path, text + '\n[published.tdt2]\n"kmeans:best" = { nmi = 50.0 }\n')
    with pytest.raises(InvalidInputError, match="or gnmf:best for the best of them"):
        load(tmp_path, text + '\n[published.tdt2]\ngnmf = { nmi = 50.0 }\n')
    load(tmp_path, text + '\n[published.tdt2]\n"gnmf:best" = { nmi = 50.0 }\n')

    rows = [("gnmf:lam=0.0", 2, 0.50, 0.1, 3, 3), ("gnmf:lam=0.0", 3, 0.70, 0.1, 3, 3),
            ("gnmf:lam=1e8", 2, 0.80, 0.2, 3, 3), ("gnmf:lam=1e8", 3, 0.50, 0.2, 3, 3),
            ("kmeans", 2, 0.90, 0.0, 3, 3)]
    columns = ["method", "k", "mean", "std", "runs", "draws"]
    nmi = pd.DataFrame(rows, columns=columns)
    entropy = nmi.assign(mean=1 - nmi["mean"])  # lower is better: the same point is best
    assert best_setting("gnmf:best", nmi, "nmi") == "gnmf:lam=1e8"  # 0.65 against 0.60
    assert best_setting("gnmf:best", entropy, "entropy") == "gnmf:lam=1e8"
    assert best_setting("gnmf", nmi, "nmi") == "gnmf"
    records = comparison_records({"gnmf:best": {"nmi": 0.6}}, {"nmi": nmi})
    assert records[0]["chosen"] == "gnmf:lam=1e8"
    assert records[0]["reproduced"] == pytest.approx(0.65)
    assert records[0]["spread"] == pytest.approx(0.2)
    table = comparison_table(records, "tdt2")
    assert table.rows[0][0] == "gnmf:best = gnmf:lam=1e8"
    assert any("optimistic" in note for note in table.notes)

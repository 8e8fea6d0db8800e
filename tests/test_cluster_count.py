"""``n_components="auto"`` / ``--k auto``: the number of clusters chosen without labels."""

import json

import numpy as np
import pytest
from click.testing import CliRunner

from textcluster import TextclusterError
from textcluster.batch import load_pipeline, load_results, run_batch
from textcluster.cli import main
from textcluster.corpora import load_corpus
from textcluster.models import make_model
from textcluster.models import cluster_count
from textcluster.models.cluster_count import (
    AUTO_RANGE,
    candidate_range,
    choose_n_clusters,
)
from textcluster.pipeline import represent
from textcluster.report import write_report

from ._batch import write_planted_mat
from ._planted import planted_corpus


@pytest.mark.parametrize("n_classes", [3, 6, 9])
def test_the_planted_number_of_clusters_is_found(n_classes):
    X, _ = planted_corpus(n_per_class=40, n_classes=n_classes, seed=n_classes)
    choice = choose_n_clusters(X, (2, 14), random_state=0)
    assert choice.k == n_classes
    assert choice.candidates == list(range(2, 15))
    curve = dict(zip(choice.candidates, choice.instability))
    assert curve[n_classes] < min(0.2, curve[n_classes - 1])


def test_without_structure_no_k_is_reproduced():
    """Uniform random documents: every candidate's instability is near chance."""
    X = np.random.default_rng(0).random((300, 40))
    choice = choose_n_clusters(X, (2, 8), random_state=0)
    assert min(choice.instability[1:]) > 0.5  # k ≥ 3: no split is found twice


def test_the_curve_does_not_depend_on_the_threads(monkeypatch):
    """The tests run side by side in any order; their draws are taken before, in one order."""
    monkeypatch.setattr(cluster_count, "SIDE_BY_SIDE_DOCS", 0)  # side by side on any size
    X, _ = planted_corpus(n_per_class=30, n_classes=4, seed=1)
    curves = []
    for threads in ("1", "2", "3"):
        monkeypatch.setenv("TEXTCLUSTER_THREADS", threads)
        choice = choose_n_clusters(X, (2, 8), n_splits=3, random_state=5)
        curves.append((choice.k, choice.instability, choice.std_error))
    assert curves[0] == curves[1] == curves[2]


@pytest.mark.parametrize("value, expected", [
    ("auto", AUTO_RANGE), ("2:40", (2, 40)), (" 3 : 9 ", (3, 9)), ((2, 40), (2, 40)),
    ([4, 5], (4, 5)), (7, None), (np.int64(7), None)])
def test_candidate_ranges(value, expected):
    assert candidate_range(value) == expected


@pytest.mark.parametrize("value", ["foo", "5:3", "0:4", "2:", "1:2:3", (2.5, 4), (3,), "3"])
def test_bad_ranges_are_refused_with_the_forms_accepted(value):
    with pytest.raises(TextclusterError, match="'auto'.*min:max"):
        candidate_range(value)


def test_too_few_documents_to_choose():
    X, _ = planted_corpus(n_per_class=3, n_classes=3)
    with pytest.raises(TextclusterError, match="too few to choose the number of clusters"):
        choose_n_clusters(X)


def test_candidates_stop_at_the_distinct_documents():
    X, _ = planted_corpus(n_per_class=1, n_classes=4)
    choice = choose_n_clusters(np.repeat(X.toarray(), 30, axis=0), random_state=0)
    assert choice.candidates == [3, 4] and choice.k == 4
    with pytest.raises(TextclusterError, match=r"\(2 distinct\) are too few"):
        choose_n_clusters(np.repeat(X.toarray()[:2], 60, axis=0))


@pytest.mark.parametrize("name", ["kmeans", "lsi-kmeans", "nmf", "gnmf"])
def test_models_fit_the_chosen_k_and_keep_the_parameter(name):
    X, _ = planted_corpus(n_per_class=30, n_classes=4, seed=1)
    model = make_model(name, n_components="2:8", random_state=0).fit(X)
    assert model.n_components == "2:8"  # a parameter is never changed by fit
    assert model.n_components_ == model.cluster_count_["k"] == 4
    assert len(np.unique(model.labels_)) == 4
    np.testing.assert_array_equal(model.predict(X), model.labels_)
    rebuilt = type(model).from_fitted_state(model.get_params(), model.fitted_state())
    np.testing.assert_array_equal(rebuilt.predict(X), model.labels_)
    fixed = make_model(name, n_components=3, random_state=0).fit(X)
    assert fixed.n_components_ == 3 and fixed.cluster_count_ is None


def test_the_cli_chooses_k_and_writes_the_curve(tmp_path):
    X, y = planted_corpus(n_per_class=25, n_classes=3, seed=2, sparse=False)
    words = [[f"w{j}" for j in np.flatnonzero(row > 0.05)] for row in X]
    corpus = tmp_path / "docs.csv"
    corpus.write_text("text\n" + "\n".join(" ".join(w) for w in words) + "\n", encoding="utf-8")
    out = tmp_path / "out"
    outcome = CliRunner().invoke(main, ["run", str(corpus), "--model", "nmf", "--k", "auto",
                                        "--set", "min_df=1", "--out", str(out)])
    assert outcome.exit_code == 0, outcome.output
    assert "chosen without labels" in outcome.output
    run = json.loads((out / "run.json").read_text())
    assert run["k"] == run["cluster_count"]["k"] == 3
    assert len(run["cluster_count"]["instability"]) == len(run["cluster_count"]["candidates"])
    bad = CliRunner().invoke(main, ["run", str(corpus), "--k", "many"])
    assert bad.exit_code == 2 and "'auto' or a range MIN:MAX" in bad.output


def test_a_pipeline_with_k_auto_records_k_and_plots_the_curves(tmp_path):
    data_dir = write_planted_mat(tmp_path / "data")
    pipeline = tmp_path / "p.toml"
    pipeline.write_text(
        '[[corpora]]\nname = "tdt2"\n[[models]]\nname = "kmeans"\n'
        '[protocol]\nkind = "full"\nk = "2:8"\nseeds = [0, 1]\n'
        f'[output]\ndir = "{(tmp_path / "out").as_posix()}"\n', encoding="utf-8")
    run_batch(load_pipeline(pipeline, data_dir=str(data_dir)), report=False)
    rows = load_results(tmp_path / "out")
    for k, metrics in zip(rows["k"], rows["metrics"]):  # the k each job chose
        assert 2 <= k <= 8 and metrics["n_clusters"] == k
        assert metrics["cluster_count"]["candidates"] == list(range(2, 9))
    write_report(tmp_path / "out" / "ledger.sqlite", tmp_path / "report")
    assert (tmp_path / "report" / "plots" / "tdt2-full-cluster-count.png").exists()


def test_k_auto_needs_the_whole_corpus(tmp_path):
    pipeline = tmp_path / "p.toml"
    pipeline.write_text('[[corpora]]\nname = "tdt2"\n[[models]]\nname = "kmeans"\n'
                        '[protocol]\nkind = "class-subset"\nk = "auto"\ndraws = 1\n',
                        encoding="utf-8")
    with pytest.raises(TextclusterError, match='needs documents = "full"'):
        load_pipeline(pipeline)


@pytest.mark.slow
def test_classic4_gets_its_number_of_classes_within_30_percent(real_data_dir):
    """A panel text corpus as ``reports/cluster_count`` measures it (about 30 s on two cores):
    its four classes (and their split in five) are the clear minimum of the curve."""
    rep = represent(load_corpus("classic4", data_dir=real_data_dir))
    choice = choose_n_clusters(rep.X, random_state=0)
    assert choice.k in (3, 4, 5)
    curve = dict(zip(choice.candidates, choice.instability))
    assert curve[choice.k] < 0.5 * min(curve[k] for k in (3, 6, 10, 20))

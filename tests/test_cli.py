"""The ``textcluster`` command line, invoked in-process with click's CliRunner."""

import bz2
import gzip
import json
import math

import numpy as np
import pandas as pd
import pytest
import scipy.io
import scipy.sparse as sp
from click.testing import CliRunner

from textcluster.cli import main
from textcluster.corpora.loaders import _paths, load_folder

from ._citeulike import write_citeulike
from ._corpora import write_folder_corpus

FAST = {
    "nmf": ["--set", "n_init=2", "--set", "max_iter=30", "--set", "n_assign_init=3"],
    "gnmf": ["--set", "n_init=2", "--set", "max_iter=30", "--set", "n_assign_init=3"],
    "kmeans": ["--set", "n_init=2", "--set", "max_iter=30"],
    "lsi-kmeans": ["--set", "n_init=2", "--set", "max_iter=30"],
}
METRICS = ["purity", "entropy", "nmi", "accuracy", "ari"]


@pytest.fixture(scope="module")
def corpus_dir(tmp_path_factory):
    """3 classes × 15 short documents with disjoint vocabularies."""
    return write_folder_corpus(tmp_path_factory.mktemp("cli") / "news")


@pytest.fixture
def no_default_data(tmp_path, monkeypatch):
    """Only ``--data-dir`` is searched: no ``$TEXTCLUSTER_DATA``, an empty default folder."""
    monkeypatch.delenv(_paths.DATA_ENV, raising=False)
    monkeypatch.setattr(_paths, "default_cache_dir", lambda: tmp_path / "default-cache")


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def run_ok(*args):
    result = invoke("run", *args)
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output
    return result


def run_fails(*args, exit_code=2):
    """A run that must stop with a message (no traceback) and a non-zero exit code."""
    result = invoke("run", *args)
    assert result.exit_code == exit_code, result.output
    assert isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output
    assert "Error" in result.output
    return result.output


def strict_json(path):
    """The JSON in ``path``; NaN or Infinity in it fail the test."""
    def refuse(constant):
        raise AssertionError(f"{path.name} holds {constant}")

    return json.loads(path.read_text(encoding="utf-8"), parse_constant=refuse)


# -- successful runs ------------------------------------------------------------------------------


def test_run_nmf_writes_all_outputs(corpus_dir, tmp_path):
    out = tmp_path / "out"
    result = run_ok(corpus_dir, "--model", "nmf", "--out", out, *FAST["nmf"])

    # the metrics table
    assert "corpus news: 45 documents" in result.output
    assert "3 clusters" in result.output and "model nmf" in result.output
    for name in METRICS:
        assert f"  {name}" in result.output
    assert "-0.0000" not in result.output
    assert f"results written to {out}" in result.output

    clusters = pd.read_csv(out / "clusters.csv")
    assert list(clusters.columns) == ["doc_id", "cluster", "label", "score"]
    assert len(clusters) == 45 and clusters["doc_id"].is_unique
    assert set(clusters["label"]) == {"cooking", "space", "sports"}
    assert set(clusters["cluster"]) == {0, 1, 2}
    assert clusters["score"].between(0, 1).all()
    # disjoint vocabularies: each cluster is exactly one class
    assert clusters.groupby("cluster")["label"].nunique().eq(1).all()

    terms = pd.read_csv(out / "cluster_terms.csv")
    assert list(terms.columns) == ["cluster", "rank", "term", "weight"]
    assert set(terms["cluster"]) == {0, 1, 2}
    assert (terms["weight"] > 0).all()
    for _, group in terms.groupby("cluster"):
        assert list(group["rank"]) == list(range(1, len(group) + 1))
        assert group["weight"].is_monotonic_decreasing
    assert "rocket" in set(terms["term"]) and "the" not in set(terms["term"])

    metrics = strict_json(out / "metrics.json")
    assert set(METRICS) | {"n_docs", "n_clusters", "timings"} <= set(metrics)
    assert metrics["n_docs"] == 45 and metrics["n_clusters"] == 3
    assert metrics["nmi"] == pytest.approx(1.0) and metrics["accuracy"] == pytest.approx(1.0)
    assert metrics["entropy"] == 0.0 and math.copysign(1, metrics["entropy"]) == 1
    assert set(metrics["timings"]) >= {"load", "preprocess", "fit", "evaluate"}
    # the fit's own stages add up to (a little under) the fit's time
    assert list(metrics["fit_stages"]) == ["prepare", "factorize", "assign"]
    assert 0 < sum(metrics["fit_stages"].values()) <= metrics["timings"]["fit"] + 1e-3

    run = strict_json(out / "run.json")
    assert run["corpus"] == str(corpus_dir) and run["model"] == "nmf"
    assert run["k"] == 3 and run["seed"] == 0
    assert run["model_params"]["n_init"] == 2 and run["model_params"]["max_iter"] == 30
    assert run["model_params"]["random_state"] == 0
    assert run["preprocess"]["weighting"] == "cai"
    assert {"textcluster", "numpy", "scikit-learn", "spacy"} <= set(run["versions"])
    assert not [p.name for p in out.iterdir() if p.name.startswith(".")]


@pytest.mark.parametrize("model", ["gnmf", "kmeans", "lsi-kmeans"])
def test_other_models_run(corpus_dir, tmp_path, model):
    out = tmp_path / model
    result = run_ok(corpus_dir, "--model", model, "--out", out, *FAST[model])
    assert f"model {model}" in result.output
    metrics = strict_json(out / "metrics.json")
    assert metrics["accuracy"] >= 0.9, metrics
    assert strict_json(out / "run.json")["model"] == model
    assert len(pd.read_csv(out / "cluster_terms.csv")) > 0


@pytest.mark.parametrize("model, name", [("gnmf", "lam"), ("sodnmf", "alpha")])
def test_a_chosen_strength_is_printed_with_the_setting_that_fixes_it(corpus_dir, tmp_path,
                                                                     model, name):
    out = tmp_path / model
    result = run_ok(corpus_dir, "--model", model, "--out", out, *FAST["gnmf"])
    lam = strict_json(out / "metrics.json")["lam"]
    assert f"  {name:<16}{lam:g}, chosen without labels among" in result.output
    assert f"--set {name}=… fixes it" in result.output
    assert strict_json(out / "run.json")["lam_selection"]["chosen"]["lam"] == lam


def test_seed_and_k_are_recorded(corpus_dir, tmp_path):
    out = tmp_path / "out"
    run_ok(corpus_dir, "--model", "nmf", "--k", 2, "--seed", 7, "--out", out, *FAST["nmf"])
    run = strict_json(out / "run.json")
    assert run["k"] == 2 and run["seed"] == 7 and run["model_params"]["random_state"] == 7
    assert strict_json(out / "metrics.json")["n_clusters"] == 2


def test_unlabelled_folder_needs_k_and_reports_counts_only(tmp_path):
    flat = write_folder_corpus(tmp_path / "flat", n_per_class=5, flat=True)
    assert "--k" in run_fails(flat, "--model", "nmf", *FAST["nmf"])
    out = tmp_path / "out"
    result = run_ok(flat, "--model", "nmf", "--k", 3, "--out", out, *FAST["nmf"])
    assert "no class labels" in result.output
    metrics = strict_json(out / "metrics.json")
    assert set(metrics) == {"n_docs", "n_clusters", "labels", "note", "objective", "timings",
                            "fit_stages"}
    assert metrics["labels"] is None and "need labels" in metrics["note"]
    history = strict_json(out / "run.json")["objective_history"]
    assert metrics["objective"] == history[-1] > 0
    assert pd.read_csv(out / "clusters.csv", keep_default_na=False)["label"].eq("").all()


def test_graph_weighting_is_set_with_a_model_prefix(corpus_dir, tmp_path):
    out = tmp_path / "out"
    run_ok(corpus_dir, "--model", "gnmf", "--set", "model.weighting=heat",
           "--set", "weighting=sklearn", "--out", out, *FAST["gnmf"])
    run = strict_json(out / "run.json")
    assert run["model_params"]["weighting"] == "heat"
    assert run["preprocess"]["weighting"] == "sklearn"


def test_run_help_shows_examples():
    result = invoke("run", "--help")
    assert result.exit_code == 0
    assert "Example" in result.output and "textcluster run tdt2" in result.output
    assert "--set KEY=VALUE" in result.output


def test_version():
    result = invoke("--version")
    assert result.exit_code == 0 and "textcluster" in result.output


# -- bad input: a message and exit code 2, never a traceback --------------------------------------


def test_missing_corpus_names_where_it_looked(tmp_path, no_default_data):
    empty = tmp_path / "empty"
    empty.mkdir()
    output = run_fails("tdt2", "--data-dir", empty)
    assert "could not find TDT2.mat" in output
    assert str(empty / "tdt2") in output
    assert "--data-dir" in output and "TEXTCLUSTER_DATA" in output


def test_unknown_corpus_name():
    output = run_fails("no-such-corpus")
    assert "unknown corpus 'no-such-corpus'" in output
    assert "reuters" in output and "tdt2" in output and "folder" in output


def test_unknown_model_lists_known_models(corpus_dir):
    output = run_fails(corpus_dir, "--model", "lda")
    assert "unknown model 'lda'" in output
    for name in ["gnmf", "kmeans", "lsi-kmeans", "nmf"]:
        assert name in output


def test_unknown_setting_lists_known_settings(corpus_dir):
    output = run_fails(corpus_dir, "--model", "gnmf", "--set", "lambda=3")
    assert "unknown setting 'lambda'" in output
    for name in ["lam", "n_neighbors", "stop_words", "min_df", "top"]:
        assert name in output


@pytest.mark.parametrize("setting", ["n_components=2", "random_state=3"])
def test_k_and_seed_are_not_settings(corpus_dir, setting):
    output = run_fails(corpus_dir, "--model", "nmf", "--set", setting)
    assert "--k" in output or "--seed" in output


@pytest.mark.parametrize("pair", ["lam", "=3"])
def test_malformed_setting(corpus_dir, pair):
    output = run_fails(corpus_dir, "--set", pair)
    assert "--set" in output and "key=value" in output


def test_k_larger_than_the_corpus(corpus_dir):
    output = run_fails(corpus_dir, "--model", "nmf", "--k", 100, *FAST["nmf"])
    assert "--k 100" in output and "45 documents" in output


def test_k_must_be_positive(corpus_dir):
    assert "--k" in run_fails(corpus_dir, "--k", 0)


def test_truncated_mat_file(tmp_path, no_default_data):
    folder = tmp_path / "tdt2"
    folder.mkdir()
    path = folder / "TDT2.mat"
    fea = sp.random(40, 60, density=0.2, format="csc", random_state=0) * 5
    scipy.io.savemat(path, {"fea": fea, "gnd": np.repeat([1, 2], 20)[:, None]})
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    output = run_fails("tdt2", "--data-dir", tmp_path)
    assert "TDT2.mat" in output and "truncated or corrupt" in output


def test_truncated_reuters_gzip(tmp_path, no_default_data):
    folder = tmp_path / "reuters21578"
    folder.mkdir()
    records = "".join(
        f'<REUTERS TOPICS="YES" LEWISSPLIT="TRAIN" CGISPLIT="TRAINING-SET" NEWID="{i}">\n'
        f"<TOPICS><D>earn</D></TOPICS>\n<TEXT><TITLE>PROFIT {i}</TITLE>"
        f"<BODY>Company {i} reported a profit.</BODY></TEXT>\n</REUTERS>\n"
        for i in range(1, 200)
    )
    data = gzip.compress(records.encode("latin-1"))
    (folder / "reut2-000.sgm.gz").write_bytes(data[: len(data) // 2])
    output = run_fails("reuters", "--data-dir", tmp_path)
    assert "reut2-000.sgm.gz" in output and "truncated or corrupt" in output


def test_document_empty_after_preprocessing(tmp_path):
    corpus = write_folder_corpus(tmp_path / "corpus", n_per_class=6)
    (corpus / "sports" / "stopwords.txt").write_text("The and of.\n", encoding="utf-8")
    output = run_fails(corpus, "--model", "nmf", "--set", "empty_documents=error",
                       *FAST["nmf"])
    assert "sports/stopwords" in output and "empty_documents=drop" in output

    out = tmp_path / "out"
    result = run_ok(corpus, "--model", "nmf", "--out", out, *FAST["nmf"])
    warned = [line for line in result.output.splitlines() if "sports/stopwords" in line]
    assert len(warned) == 1 and warned[0].startswith("warning: 1 document(s)")  # one line
    assert "UserWarning" not in result.output and ".py:" not in result.output
    clusters = pd.read_csv(out / "clusters.csv")
    assert len(clusters) == 18 and "sports/stopwords" not in set(clusters["doc_id"])
    assert json.loads((out / "run.json").read_text())["dropped_documents"] == [
        "sports/stopwords"]


def test_empty_folder(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    output = run_fails(empty)
    assert "no .txt files" in output and str(empty) in output


def test_invalid_model_parameter_value(corpus_dir):
    output = run_fails(corpus_dir, "--model", "gnmf", "--set", "lam=-1", *FAST["gnmf"])
    assert "'lam' parameter of GNMF" in output and "Got -1" in output


@pytest.mark.parametrize("setting, words", [
    ("top=0", "top must be a whole number"),
    ("top=abc", "top must be a whole number"),
    ("min_class_size=100", "leaves no document"),
    ("pattern=3", "pattern must be"),
    ("min_df=x", "'min_df' parameter"),
    ("stop_words=french", "unknown stop-word list 'french'"),
    ("weighting=heat", "model.weighting"),
    ("dtype=int32", "dtype must be float64 or float32"),
    ("empty_documents=skip", "empty_documents must be"),
    ("lowercase=yes", "lowercase must be true or false"),
    ("normalize=lemmas", "unknown term normalization"),
    ("other.lam=1", "unknown prefix 'other'"),
])
def test_invalid_settings(corpus_dir, setting, words):
    assert words in run_fails(corpus_dir, "--model", "gnmf", "--set", setting, *FAST["gnmf"])


def test_output_folder_that_cannot_be_created(corpus_dir):
    inside_a_file = corpus_dir / "sports" / "sports00.txt" / "out"
    output = run_fails(corpus_dir, "--model", "kmeans", "--out", inside_a_file, exit_code=1)
    assert "sports00.txt" in output
    assert "purity" not in output  # it stopped before the run


# -- real data ------------------------------------------------------------------------------------


@pytest.mark.slow
def test_reuters_from_raw_sgml(real_data_dir, tmp_path):
    out = tmp_path / "out"
    result = run_ok("reuters", "--model", "nmf", "--data-dir", real_data_dir, "--out", out,
                    "--set", "top=5", "--set", "n_init=2", "--set", "max_iter=40")
    for name in METRICS:
        assert f"  {name}" in result.output
    metrics = strict_json(out / "metrics.json")
    assert metrics["n_clusters"] == 5 and metrics["n_docs"] > 4000
    # Plain NMF splits the dominant class (earn, 3945 of 7383 documents): NMI measured 0.288 to
    # 0.295 over seeds 0-2, max_iter 40 or 100, n_init 2 or 10 (k-means: 0.27).
    assert metrics["nmi"] > 0.25
    assert 0.5 < metrics["purity"] <= 1 and 0.3 < metrics["accuracy"] <= 1
    assert 0 <= metrics["entropy"] < 0.8 and 0 < metrics["ari"] <= 1


# -- tables, Hugging Face, SECTOR and CiteULike ---------------------------------------------------


def write_table(corpus_dir, path):
    """The folder corpus as a table with id, label and text columns."""
    frame = load_folder(corpus_dir).to_pandas()
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".csv":
        frame.to_csv(path, index=False)
    else:
        frame.to_json(path, orient="records", lines=True)
    return path


@pytest.mark.parametrize("name", ["news.csv", "news.jsonl"])
def test_table_corpus_runs_with_labels_from_its_column(corpus_dir, tmp_path, name):
    table = write_table(corpus_dir, tmp_path / name)
    out = tmp_path / "out"
    result = run_ok(table, "--model", "nmf", "--out", out, *FAST["nmf"])
    assert "corpus news: 45 documents" in result.output and "3 clusters" in result.output
    metrics = strict_json(out / "metrics.json")
    assert metrics["nmi"] == pytest.approx(1.0) and metrics["n_docs"] == 45
    clusters = pd.read_csv(out / "clusters.csv")
    assert set(clusters["label"]) == {"cooking", "space", "sports"}
    assert clusters["doc_id"].iloc[0] == "cooking/cooking00"  # the id column


def test_table_corpus_with_named_columns(corpus_dir, tmp_path):
    frame = load_folder(corpus_dir).to_pandas().rename(columns={"text": "body",
                                                               "label": "topic"})
    frame.to_csv(tmp_path / "docs.csv", index=False)
    out = tmp_path / "out"
    run_ok(tmp_path / "docs.csv", "--model", "kmeans", "--set", "text_column=body",
           "--set", "label_column=topic", "--out", out, *FAST["kmeans"])
    assert strict_json(out / "metrics.json")["accuracy"] == pytest.approx(1.0)
    assert strict_json(out / "run.json")["corpus_options"] == {"text_column": "body",
                                                              "label_column": "topic"}


def test_hugging_face_local_file(corpus_dir, tmp_path):
    table = write_table(corpus_dir, tmp_path / "news.jsonl")
    out = tmp_path / "out"
    result = run_ok("hf:json", "--model", "nmf", "--set", f"data_files={table}",
                    "--set", f"cache_dir={tmp_path / 'hf-cache'}", "--out", out, *FAST["nmf"])
    assert "45 documents" in result.output
    assert strict_json(out / "metrics.json")["nmi"] == pytest.approx(1.0)


def test_csv_without_the_named_column(corpus_dir, tmp_path):
    table = write_table(corpus_dir, tmp_path / "news.csv")
    output = run_fails(table, "--set", "text_column=body")
    assert "no column 'body'" in output and "id, label, text" in output


def test_csv_that_does_not_exist(tmp_path):
    assert "does not exist" in run_fails(tmp_path / "missing.csv")


def sector_files(root, train_text, compress=True):
    folder = root / "sector"
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    test_lines = "".join(f"{c} {c}:0.8 {c + 3}:0.6\n" for c in rng.integers(1, 4, size=30))
    for name, text in (("sector.scale", train_text), ("sector.t.scale", test_lines)):
        if compress:
            (folder / f"{name}.bz2").write_bytes(bz2.compress(text.encode()))
        else:
            (folder / name).write_text(text)
    return folder


def test_sector_runs_without_reweighting(tmp_path, no_default_data):
    # three classes, each with its own features; rows are unit vectors
    train = "".join(f"{c} {c}:0.8 {c + 3}:0.6\n" for c in [1, 2, 3] * 30)
    sector_files(tmp_path, train)
    out = tmp_path / "out"
    result = run_ok("sector", "--data-dir", tmp_path, "--model", "nmf", "--set",
                    "min_class_size=1", "--out", out, *FAST["nmf"])
    assert "120 documents" in result.output
    assert strict_json(out / "run.json")["preprocess"]["weighting"] == "tf"
    assert strict_json(out / "metrics.json")["nmi"] == pytest.approx(1.0)


def test_libsvm_line_that_does_not_parse(tmp_path, no_default_data):
    sector_files(tmp_path, "1 1:0.5\n2 2:0.5 1:0.1\n", compress=False)
    output = run_fails("sector", "--data-dir", tmp_path)
    assert "sector.scale, line 2" in output and "increasing" in output


def test_corrupt_bz2(tmp_path, no_default_data):
    folder = sector_files(tmp_path, "1 1:0.5\n" * 500)
    data = (folder / "sector.scale.bz2").read_bytes()
    (folder / "sector.scale.bz2").write_bytes(data[: len(data) // 2])
    output = run_fails("sector", "--data-dir", tmp_path)
    assert "sector.scale.bz2" in output and "truncated or corrupt" in output


@pytest.fixture(scope="module")
def citeulike_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("citeulike-data")
    write_citeulike(root, "citeulike-t")
    return root


def test_citeulike_view_without_labels(citeulike_dir, tmp_path):
    args = ["citeulike-t:tags", "--data-dir", citeulike_dir, "--model", "gnmf",
            "--set", "min_count=2", *FAST["gnmf"]]
    message = run_fails(*args)
    assert "has no class labels: give the number of clusters (--k N" in message
    assert "--k auto" in message
    out = tmp_path / "out"
    result = run_ok(*args, "--k", 2, "--set", "graph=citations", "--out", out)
    assert "corpus citeulike-t:tags: 4 documents" in result.output
    assert "no class labels" in result.output and "top tags per cluster:" in result.output
    assert "objective" in result.output
    metrics = strict_json(out / "metrics.json")
    assert metrics["labels"] is None and "need labels" in metrics["note"]
    assert metrics["objective"] > 0 and "nmi" not in metrics
    clusters = pd.read_csv(out / "clusters.csv", keep_default_na=False)
    assert clusters["doc_id"].astype(str).tolist() == ["0", "1", "2", "3"]
    assert clusters["label"].eq("").all()
    terms = pd.read_csv(out / "cluster_terms.csv")
    assert set(terms["term"]) <= {"evolution", "genomics", "networks"}
    assert strict_json(out / "run.json")["graph"] == "citations"


def test_graph_setting_errors(citeulike_dir, corpus_dir):
    output = run_fails("citeulike-t:tags", "--data-dir", citeulike_dir, "--model", "nmf",
                       "--k", 2, "--set", "min_count=2", "--set", "graph=citations")
    assert "model 'nmf' uses no document graph" in output
    output = run_fails(corpus_dir, "--model", "gnmf", "--set", "graph=citations")
    assert "has no document graph" in output and 'graph = "knn"' in output


def test_unknown_view(citeulike_dir):
    output = run_fails("citeulike-t:authors", "--data-dir", citeulike_dir, "--k", 2)
    assert "no view 'authors'" in output and "citeulike-t:users" in output


def test_citeulike_a_has_no_terms_view(tmp_path):
    write_citeulike(tmp_path, "citeulike-a", terms=False)
    output = run_fails("citeulike-a:terms", "--data-dir", tmp_path, "--k", 2)
    assert "mult.dat" in output


@pytest.mark.slow
@pytest.mark.parametrize("view, model", [("tags", "gnmf"), ("users", "gnmf"), ("terms", "nmf"),
                                         ("combined", "gnmf")])
def test_real_citeulike_t(real_data_dir, tmp_path, view, model):
    out = tmp_path / "out"
    result = run_ok(f"citeulike-t:{view}", "--model", model, "--k", 20, "--data-dir",
                    real_data_dir, "--out", out, "--set", "n_init=2", "--set", "max_iter=40",
                    "--set", "n_assign_init=3")
    assert "9063 documents" in result.output and "no class labels" in result.output
    assert f"top {'users and tags' if view == 'combined' else view} per cluster:" in (
        result.output)
    metrics = strict_json(out / "metrics.json")
    assert metrics["n_docs"] == 9063 and metrics["n_clusters"] == 20
    assert metrics["labels"] is None and metrics["objective"] > 0
    terms = pd.read_csv(out / "cluster_terms.csv", keep_default_na=False)
    if view == "users":
        assert terms["term"].str.fullmatch(r"user \d+").all()
    # every cluster is described by its own terms (measured: 20 distinct top-5 lists and 20
    # distinct first terms in each view; the basis profile gave one list for all 20 clusters)
    top5 = terms[terms["rank"] <= 5].groupby("cluster")["term"].apply(tuple)
    assert len(top5) == 20 and top5.nunique() >= 18
    assert terms.loc[terms["rank"] == 1, "term"].nunique() >= 15


def test_folder_of_tables_says_how_to_load_them(corpus_dir, tmp_path):
    write_table(corpus_dir, tmp_path / "tables" / "news.csv")
    output = run_fails(tmp_path / "tables")
    assert "no .txt files" in output and "news.csv" in output and "path of a table" in output


# -- semi-supervised runs ---------------------------------------------------------------------


def test_labeled_fraction_reports_metrics_on_the_unlabelled_documents(corpus_dir, tmp_path):
    out = tmp_path / "out"
    result = run_ok(corpus_dir, "--model", "constrained-nmf", "--labeled-fraction", "0.25",
                    "--out", out, *FAST["nmf"])
    assert "nmi_unlabeled" in result.output
    metrics = strict_json(out / "metrics.json")
    assert metrics["n_labeled"] > 0
    assert {f"{m}_unlabeled" for m in METRICS} <= set(metrics)
    assert strict_json(out / "run.json")["labeled"]["fraction"] == 0.25


def test_labeled_per_class_is_seeded(corpus_dir, tmp_path):
    for name in ("a", "b"):
        run_ok(corpus_dir, "--model", "constrained-nmf", "--labeled-per-class", "2", "--seed",
               "3", "--out", tmp_path / name, *FAST["nmf"])
    clusters = [pd.read_csv(tmp_path / name / "clusters.csv") for name in ("a", "b")]
    pd.testing.assert_frame_equal(*clusters)
    assert strict_json(tmp_path / "a" / "metrics.json")["n_labeled"] == 2 * 3


def test_labels_for_an_unsupervised_model_are_a_clear_error(corpus_dir):
    output = run_fails(corpus_dir, "--model", "nmf", "--labeled-fraction", "0.1")
    assert "does not use labels" in output


def test_labeled_fraction_out_of_range(corpus_dir):
    run_fails(corpus_dir, "--model", "dnmf", "--labeled-fraction", "1.5")

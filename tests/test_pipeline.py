"""The pipeline stages (settings, representation, run, evaluation) and the result files."""

import json
import os

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.sparse.linalg import norm as sparse_norm
from sklearn.feature_extraction.text import TfidfTransformer
from sklearn.preprocessing import normalize

from textcluster.pipeline import export

import textcluster
from textcluster import pipeline
from textcluster.batch.spec import one_job
from textcluster._errors import InvalidInputError
from textcluster.corpora.corpus import Corpus
from textcluster.registry import UnknownNameError

from ._corpora import VOCABULARIES, write_folder_corpus

FAST_NMF = {"n_init": 2, "max_iter": 30, "n_assign_init": 3}


@pytest.fixture(scope="module")
def corpus_dir(tmp_path_factory):
    return write_folder_corpus(tmp_path_factory.mktemp("pipeline") / "news")


@pytest.fixture(scope="module")
def nmf_result(corpus_dir):
    return textcluster.run(str(corpus_dir), "nmf", settings=FAST_NMF)


@pytest.fixture(scope="module")
def kmeans_result(corpus_dir):
    return textcluster.run(str(corpus_dir), "kmeans", settings={"n_init": 2})


def class_of(term):
    return next((c for c, words in VOCABULARIES.items() if term in words.split()), None)


# -- settings: the override grammar of run (bare names are shortcuts) ---------------------------


def routed(corpus, model, settings):
    job = one_job(corpus, model, settings=settings)
    return {"corpus": job.selection["select"], "preprocess": job.selection["preprocess"],
            "model": job.params}


def test_settings_are_routed_to_their_stage(corpus_dir):
    assert routed(str(corpus_dir), "gnmf",
                  {"top": 2, "pattern": "*.md", "stop_words": "nltk", "min_df": 2, "lam": 10,
                   "n_neighbors": 3}) == {
        "corpus": {"top": 2, "pattern": "*.md"},
        "preprocess": {"stop_words": "nltk", "min_df": 2},
        "model": {"lam": 10, "n_neighbors": 3}}


def test_settings_as_text_are_toml_values(corpus_dir):
    assert routed(str(corpus_dir), "gnmf",
                  ["lam=1e3", "weighting=heat", "model.weighting=binary",
                   "models.gnmf.params.max_iter=7"]) == {
        "corpus": {}, "preprocess": {"weighting": "heat"},
        "model": {"lam": 1000.0, "weighting": "binary", "max_iter": 7}}
    job = one_job(str(corpus_dir), "nmf", settings=["ncw=True", "model.max_iter=7"])
    assert job.params == {"ncw": True, "max_iter": 7}


def test_registered_corpus_options():
    assert routed("reuters", "nmf", {"split": "modapte-train", "ncw": True}) == {
        "corpus": {"split": "modapte-train"}, "preprocess": {}, "model": {"ncw": True}}


def test_bare_name_goes_to_the_first_stage_a_prefix_chooses():
    """``weighting`` is both the tf-idf weighting and GNMF's graph weighting."""
    assert routed("tdt2", "gnmf", {"weighting": "tf"}) == {
        "corpus": {}, "preprocess": {"weighting": "tf"}, "model": {}}
    assert routed("tdt2", "gnmf", {"model.weighting": "heat", "preprocess.weighting": "sklearn",
                                   "corpus.top": 3}) == {
        "corpus": {"top": 3}, "preprocess": {"weighting": "sklearn"},
        "model": {"weighting": "heat"}}


def test_no_settings():
    assert routed("tdt2", "nmf", {}) == {"corpus": {}, "preprocess": {}, "model": {}}


def test_unknown_setting_lists_the_known_ones_and_suggests():
    with pytest.raises(InvalidInputError) as err:
        one_job("tdt2", "nmf", settings={"lam": 10})  # lam is a GNMF parameter
    message = str(err.value)
    assert "unknown setting 'lam'" in message
    assert "variant" in message and "stop_words" in message and "ncw" in message
    assert "n_components" not in message and "random_state" not in message
    with pytest.raises(InvalidInputError, match="did you mean 'n_neighbors'"):
        one_job("tdt2", "gnmf", settings={"n_neighbor": 3})


@pytest.mark.parametrize("name", ["model.top", "corpus.lam", "preprocess.n_init"])
def test_prefix_must_match_the_stage(name):
    with pytest.raises(InvalidInputError, match="unknown setting"):
        one_job("tdt2", "gnmf", settings={name: 1})


def test_unknown_prefix():
    with pytest.raises(InvalidInputError, match="unknown prefix 'graph'"):
        one_job("tdt2", "gnmf", settings={"graph.weighting": "heat"})


@pytest.mark.parametrize("name, option", [("n_components", "--k"), ("random_state", "--seed"),
                                          ("model.n_components", "--k")])
def test_k_and_seed_have_their_own_options(name, option):
    with pytest.raises(InvalidInputError, match=option):
        one_job("tdt2", "nmf", settings={name: 3})


def test_a_grid_is_for_pipeline_files():
    with pytest.raises(InvalidInputError, match="pipeline file"):
        one_job("tdt2", "gnmf", settings=["lam=[1, 10]"])


def test_labels_only_for_semi_supervised_models():
    with pytest.raises(InvalidInputError, match="does not use labels"):
        one_job("tdt2", "nmf", labeled_fraction=0.1)


def test_unknown_model_and_corpus():
    with pytest.raises(UnknownNameError, match="known models: .*gnmf, .*kmeans, .*nmf"):
        one_job("tdt2", "lda")
    with pytest.raises(UnknownNameError, match="known corpora: .*reuters, reuters-cai, .*tdt2"):
        one_job("no/such/folder", "nmf")


# -- represent ------------------------------------------------------------------------------------


def text_corpus(texts, labels=None):
    return Corpus("toy", ids=[f"d{i}" for i in range(len(texts))], labels=labels, texts=texts)


TEXTS = ["The rocket reached orbit.", "A rocket and a comet.", "Bake the bread in the oven.",
         "The oven and the bread."]


def test_represent_texts():
    rep = pipeline.represent(text_corpus(TEXTS))
    assert sorted(rep.terms) == ["bake", "bread", "comet", "orbit", "oven", "reached", "rocket"]
    assert rep.X.shape == (4, 7) and rep.X.dtype == np.float32 and sp.issparse(rep.X)
    np.testing.assert_allclose(sparse_norm(rep.X, axis=1), 1.0, rtol=1e-6)
    row = dict(zip(rep.terms, rep.X[0].toarray().ravel()))
    assert row["rocket"] > 0 and row["oven"] == 0 and rep.dropped_docs == []


def test_represent_stop_words_and_min_df():
    rep = pipeline.represent(text_corpus(TEXTS), stop_words="none", min_df=2)
    # "the" is in 3 of 4 documents: idf ln(4/3) > 0, so it stays
    assert sorted(rep.terms) == ["and", "bread", "oven", "rocket", "the"]


def test_represent_matrix_corpus_without_vocabulary():
    counts = sp.csr_matrix(np.array([[1, 2, 0, 1], [0, 0, 3, 1], [4, 1, 0, 1.0]]))
    corpus = Corpus("m", ids=["a", "b", "c"], labels=["x", "y", "x"], matrix=counts)
    rep = pipeline.represent(corpus)
    # column 3 is in every document (idf 0): dropped; the others keep their term ids
    assert list(rep.terms) == ["term0", "term1", "term2"]
    assert rep.X.shape == (3, 3)
    assert rep.corpus is corpus


def test_represent_matrix_corpus_with_vocabulary():
    corpus = Corpus("m", ids=["a", "b"], matrix=sp.csr_matrix(np.array([[1, 0, 1], [0, 2, 1.0]])),
                    vocabulary=["alpha", "beta", "gamma"])
    assert list(pipeline.represent(corpus).terms) == ["alpha", "beta"]


@pytest.mark.parametrize("weighting", ["sklearn", "sklearn-sublinear", "tf", "cai"])
def test_represent_weightings(weighting):
    counts = sp.csr_matrix(np.array([[1, 2, 0, 1], [0, 0, 3, 1], [4, 1, 0, 1.0]]))
    corpus = Corpus("m", ids=["a", "b", "c"], matrix=counts)
    rep = pipeline.represent(corpus, weighting=weighting)
    np.testing.assert_allclose(sparse_norm(rep.X, axis=1), 1.0)
    if weighting == "tf":
        np.testing.assert_allclose(rep.X.toarray(), normalize(counts).toarray())
    elif weighting == "sklearn":
        expected = TfidfTransformer().fit_transform(counts).toarray()
        np.testing.assert_allclose(rep.X.toarray(), expected)
    expected_terms = 3 if weighting == "cai" else 4
    assert len(rep.terms) == expected_terms


def test_represent_float64():
    rep = pipeline.represent(text_corpus(TEXTS), dtype="float64")
    assert rep.X.dtype == np.float64


def test_represent_empty_documents():
    corpus = text_corpus(TEXTS + ["The and of it."], labels=["s", "s", "c", "c", "c"])
    with pytest.raises(InvalidInputError, match=r"ids: d4.*empty_documents=drop"):
        pipeline.represent(corpus, empty_documents="error")
    with pytest.warns(UserWarning, match=r"ids: d4.*left out"):
        rep = pipeline.represent(corpus)
    assert rep.dropped_docs == ["d4"]
    assert list(rep.corpus.ids) == ["d0", "d1", "d2", "d3"] and rep.X.shape[0] == 4
    assert list(rep.corpus.labels) == ["s", "s", "c", "c"]


@pytest.mark.parametrize("options, words", [
    ({"stopwords": "nltk"}, "unknown preprocessing option 'stopwords'"),
    ({"weighting": "bm25"}, "unknown tf-idf weighting 'bm25'"),
    ({"dtype": "int64"}, "dtype must be float64 or float32"),
    ({"dtype": "double-ish"}, "dtype must be float64 or float32"),
    ({"empty_documents": "ignore"}, "empty_documents must be 'error' or 'drop'"),
    ({"lowercase": "no"}, "lowercase must be true or false"),
    ({"min_df": -1}, "'min_df' parameter"),
    ({"stop_words": "german"}, "unknown stop-word list"),
])
def test_represent_rejects_bad_options(options, words):
    with pytest.raises(InvalidInputError, match=words):
        pipeline.represent(text_corpus(TEXTS), **options)


def test_represent_needs_texts_or_matrix():
    with pytest.raises(InvalidInputError, match="neither texts nor a matrix"):
        pipeline.represent(Corpus("nothing", ids=["a"]))


# -- run and evaluate -----------------------------------------------------------------------------


def test_run_on_a_folder_corpus(nmf_result):
    result = nmf_result
    assert result.metrics["n_docs"] == 45 and result.metrics["n_clusters"] == 3
    for name in ["purity", "nmi", "accuracy", "ari"]:
        assert result.metrics[name] == pytest.approx(1.0)
    assert result.metrics["entropy"] == 0.0
    assert list(result.timings) == ["load", "preprocess", "select", "fit", "evaluate"]
    assert result.labels.shape == (45,) and result.embedding.shape == (45, 3)
    assert result.params["k"] == 3 and result.params["seed"] == 0
    assert result.params["model_params"]["max_iter"] == 30
    assert result.params["preprocess"] == pipeline.PREPROCESS_DEFAULTS
    json.dumps(result.params)  # JSON-ready


def test_run_routes_corpus_options(corpus_dir):
    result = textcluster.run(str(corpus_dir), "kmeans", settings={"top": 2, "n_init": 1})
    assert result.metrics["n_docs"] == 30 and result.params["k"] == 2
    assert result.params["corpus_options"] == {"top": 2}


def test_run_checks_k(corpus_dir):
    with pytest.raises(InvalidInputError, match="choose 1 ≤ k ≤ 45"):
        textcluster.run(str(corpus_dir), "kmeans", k=46)


def test_score_unlabelled_corpus():
    assert pipeline.score(None, np.array([0, 1, 1])) == {"n_docs": 3, "n_clusters": 2}


def test_score_labelled_corpus():
    scores = pipeline.score(np.array(["x", "x", "y", "y"]), np.array([1, 1, 0, 0]))
    assert set(scores) == {"n_docs", "n_clusters", "n_classes", "purity", "entropy", "nmi",
                           "accuracy", "rand_index", "ari"}
    assert scores["nmi"] == pytest.approx(1.0)


# -- export ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("which", ["nmf_result", "kmeans_result"])
def test_top_terms_are_readable_and_belong_to_one_class(request, which):
    result = request.getfixturevalue(which)
    terms = export.top_terms(result, n_terms=5)
    assert list(terms.columns) == ["cluster", "rank", "term", "weight"]
    assert sorted(terms["cluster"].unique()) == [0, 1, 2]
    classes = set()
    for _, group in terms.groupby("cluster"):
        assert list(group["rank"]) == [1, 2, 3, 4, 5]
        assert (np.diff(group["weight"]) <= 0).all() and (group["weight"] > 0).all()
        owners = {class_of(t) for t in group["term"]}
        assert len(owners) == 1 and None not in owners  # real words of one vocabulary
        classes |= owners
    assert classes == set(VOCABULARIES)


def test_clusters_frame(nmf_result):
    frame = export.clusters_frame(nmf_result)
    assert list(frame.columns) == ["doc_id", "cluster", "label", "score"]
    assert frame["doc_id"].iloc[0] == "cooking/cooking00"
    assert frame["score"].between(0, 1).all()


def test_write_run_leaves_no_temporary_files(nmf_result, tmp_path):
    out = export.write_run(nmf_result, tmp_path / "a" / "b")
    names = sorted(p.name for p in out.iterdir())
    assert names == ["cluster_centroids.npz", "cluster_terms.csv", "clusters.csv", "metrics.json",
                     "run.json"]
    run = json.loads((out / "run.json").read_text())
    assert run["n_iter"] == len(run["objective_history"]) - 1
    assert json.loads((out / "metrics.json").read_text())["timings"] == nmf_result.timings
    # writing again replaces the files, still without leftovers
    export.write_run(nmf_result, out)
    assert sorted(p.name for p in out.iterdir()) == names


@pytest.mark.skipif(os.name != "posix", reason="POSIX permissions")
def test_written_files_follow_the_umask(nmf_result, tmp_path):
    umask = os.umask(0o022)
    try:
        out = export.write_run(nmf_result, tmp_path)
    finally:
        os.umask(umask)
    for path in out.iterdir():
        assert path.stat().st_mode & 0o777 == 0o644, path.name


def test_a_failed_write_keeps_the_old_file(nmf_result, tmp_path, monkeypatch):
    target = tmp_path / "metrics.json"
    target.write_text("old\n")

    def fail(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(export.os, "replace", fail)
    with pytest.raises(OSError, match="disk full"):
        export.write_run(nmf_result, tmp_path)
    assert target.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["metrics.json"]


# -- names and texts that UTF-8 cannot hold -------------------------------------------------------


def test_file_names_that_are_not_utf8_are_run_cached_and_written(tmp_path, monkeypatch):
    """A folder whose file names are not UTF-8: the cache key, the run and clusters.csv."""
    monkeypatch.setenv("TEXTCLUSTER_CACHE", str(tmp_path / "cache"))
    root = write_folder_corpus(tmp_path / "news", n_per_class=4)
    odd = os.fsencode(root / "space") + b"/caf\xe9 \xff.txt"
    with open(odd, "wb") as handle:
        handle.write(b"Rocket orbit planet launch.")
    for _ in range(2):  # parsed, then read from the cache
        result = textcluster.run(str(root), "kmeans", settings={"n_init": 1})
        assert "space/caf\\xe9 \\xff" in result.corpus.ids.tolist()
    out = export.write_run(result, tmp_path / "out")
    written = (out / "clusters.csv").read_text(encoding="utf-8")
    assert "space/caf\\xe9 \\xff" in written


def test_a_lone_surrogate_in_texts_is_cached_and_run(tmp_path, monkeypatch):
    """JSON Lines can spell a lone surrogate ("\\ud800"); SGML an entity &#55296;."""
    monkeypatch.setenv("TEXTCLUSTER_CACHE", str(tmp_path / "cache"))
    rows = [{"id": f"d{i}\\ud800", "text": f"rocket orbit {w} \\udfff", "label": "x\\udc80"}
            for i, w in enumerate(["planet", "comet", "flour", "oven", "butter", "launch"])]
    path = tmp_path / "docs.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows).replace("\\\\u", "\\u"),
                    encoding="utf-8")
    for _ in range(2):
        result = textcluster.run(str(path), "kmeans", k=2, settings={"n_init": 1})
    assert result.corpus.ids[0] == "d0\\ud800"
    export.write_run(result, tmp_path / "out")

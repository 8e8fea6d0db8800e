"""Model bundles: save a fitted run, load it in a fresh process, assign new documents bit for
bit as the model in memory; altered, incomplete and incompatible bundles are refused; the
``textcluster assign`` command end to end."""

import json
import os
import random
import re
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from click.testing import CliRunner

import textcluster
from textcluster._errors import BundleError, InvalidInputError
from textcluster.cli import main
from textcluster.corpora.corpus import Corpus
from textcluster.models import MODELS
from textcluster.pipeline import bundle as bundles
from textcluster.pipeline.bundle import Bundle, load_model, save_model

from ._corpora import FILLER, VOCABULARIES, write_folder_corpus

FAST = {"kmeans": {"n_init": 2, "max_iter": 30},
        "nmf": {"n_init": 2, "max_iter": 30, "n_assign_init": 3},
        "gnmf": {"n_init": 2, "max_iter": 30, "n_assign_init": 3}}


def with_state(name):
    """``name`` as a parameter, skipped while its class has no fitted-state contract."""
    cls = MODELS.get(name)
    missing = not hasattr(cls, "from_fitted_state")
    return pytest.param(name, marks=pytest.mark.skipif(
        missing, reason=f"{cls.__name__} has no fitted_state()/from_fitted_state() yet"))


MODEL_NAMES = [with_state(name) for name in FAST]
SAVEABLE = next((n for n in ("kmeans", "nmf") if hasattr(MODELS.get(n), "from_fitted_state")),
                None)
needs_saveable = pytest.mark.skipif(SAVEABLE is None, reason="no model can be saved yet")


def new_texts(n=24, seed=7):
    """Documents the models have not seen: words of one or two classes, stop words, unknown
    words, and one document with no known word."""
    rng = random.Random(seed)
    classes = list(VOCABULARIES)
    texts = []
    for i in range(n):
        words = rng.choices(VOCABULARIES[classes[i % 3]].split(), k=rng.randint(2, 9))
        if i % 4 == 0:  # a few words of another class
            words += rng.choices(VOCABULARIES[classes[(i + 1) % 3]].split(), k=2)
        words += rng.choices(FILLER, k=2) + ["zeppelin", "quasar"][: i % 3]
        rng.shuffle(words)
        texts.append(" ".join(words))
    return texts + ["zeppelins over Paris"]


@pytest.fixture(scope="module")
def corpus_dir(tmp_path_factory):
    return write_folder_corpus(tmp_path_factory.mktemp("bundle") / "news")


@pytest.fixture(scope="module")
def results(corpus_dir):
    cache = {}

    def fitted(name):
        if name not in cache:
            cache[name] = textcluster.run(str(corpus_dir), name, settings=FAST[name])
        return cache[name]

    return fitted


@pytest.fixture
def saved(results, tmp_path):
    """A bundle of the first model that can be saved."""
    if SAVEABLE is None:
        pytest.skip("no model has fitted_state() yet")
    return save_model(results(SAVEABLE), tmp_path / "model")


def quietly_assign(bundle, documents):
    with pytest.warns(UserWarning, match="no term of the model's vocabulary"):
        return bundle.assign(documents)


FRESH = """
import json, sys, warnings
import numpy as np
from textcluster import load_model
from textcluster.pipeline.bundle import score_rows
warnings.simplefilter("ignore")
bundle = load_model(sys.argv[1])
with open(sys.argv[2], encoding="utf-8") as f:
    texts = json.load(f)
a = bundle.assign(texts)
rows = score_rows(bundle.model, a.X)
np.savez(sys.argv[3], labels=a.labels, scores=a.scores, data=a.X.data, indices=a.X.indices,
         indptr=a.X.indptr, ids=np.asarray(a.corpus.ids, dtype=str),
         rows=rows.toarray() if hasattr(rows, "toarray") else rows)
"""


@pytest.mark.parametrize("name", MODEL_NAMES)
def test_a_fresh_process_assigns_bit_for_bit_as_the_model_in_memory(results, tmp_path, name):
    result = results(name)
    folder = save_model(result, tmp_path / "bundle")
    texts = new_texts()
    (tmp_path / "texts.json").write_text(json.dumps(texts), encoding="utf-8")
    subprocess.run([sys.executable, "-c", FRESH, str(folder), str(tmp_path / "texts.json"),
                    str(tmp_path / "fresh.npz")], check=True, env=dict(os.environ))
    memory = quietly_assign(Bundle.from_result(result), texts)
    fresh = np.load(tmp_path / "fresh.npz")
    assert memory.dropped == [f"doc{len(texts) - 1}"]
    assert list(fresh["ids"]) == list(memory.corpus.ids)
    rows = bundles.score_rows(result.model, memory.X)
    expected = {"labels": memory.labels, "scores": memory.scores, "data": memory.X.data,
                "indices": memory.X.indices, "indptr": memory.X.indptr,
                "rows": rows.toarray() if sp.issparse(rows) else rows}
    for key, value in expected.items():
        assert fresh[key].dtype == value.dtype, key
        assert fresh[key].tobytes() == np.ascontiguousarray(value).tobytes(), key
    # the in-memory bundle is the fitted model's own rule
    np.testing.assert_array_equal(memory.labels, result.model.predict(memory.X))
    assert len(np.unique(memory.labels)) == 3 and np.all((memory.scores >= 0)
                                                         & (memory.scores <= 1))


@pytest.mark.parametrize("name", MODEL_NAMES)
def test_training_documents_keep_their_cluster(results, corpus_dir, tmp_path, name):
    result = results(name)
    loaded = load_model(save_model(result, tmp_path / "bundle"))
    assigned = loaded.assign(result.corpus)
    np.testing.assert_array_equal(assigned.labels, result.labels)
    assert list(assigned.frame().columns) == ["doc_id", "cluster", "label", "score"]
    assert loaded.model_name == name and loaded.k == 3


@needs_saveable
def test_renumbered_clusters_keep_their_ids(results, tmp_path):
    """``run --align-to`` renumbers ``result.labels``; the bundle assigns in those ids."""
    result = results(SAVEABLE)
    renumber = np.array([5, 0, 2])
    renumbered = textcluster.pipeline.JobResult(**{**vars(result),
                                                   "labels": renumber[result.labels]})
    loaded = load_model(save_model(renumbered, tmp_path / "bundle"))
    np.testing.assert_array_equal(loaded.assign(result.corpus).labels,
                                  renumber[result.labels])
    meta = json.loads((tmp_path / "bundle" / "bundle.json").read_text(encoding="utf-8"))
    assert sorted((c["fit_id"], c["id"]) for c in meta["clusters"]) == [(0, 5), (1, 0), (2, 2)]


def test_bundle_files(saved, results):
    assert sorted(p.name for p in saved.iterdir()) == ["arrays.npz", "bundle.json"]
    meta = json.loads((saved / "bundle.json").read_text(encoding="utf-8"))
    assert meta["format"] == "textcluster-model" and meta["format_version"] == 1
    assert set(meta["versions"]) >= {"textcluster", "numpy", "scipy", "scikit-learn"}
    assert meta["model"]["name"] == SAVEABLE and meta["k"] == 3
    assert meta["model"]["params"]["n_components"] == 3
    assert meta["preprocess"]["weighting"] == "cai" and meta["vectorizer"]["n_terms"] == 34
    assert [c["size"] for c in meta["clusters"]] == [15, 15, 15]
    for cluster in meta["clusters"]:  # each cluster's top terms are of one class
        classes = {next(c for c, words in VOCABULARIES.items() if t in words.split())
                   for t in cluster["top_terms"]}
        assert len(cluster["top_terms"]) == 10 and len(classes) == 1
    assert len(meta["arrays"]["sha256"]) == 64 and len(meta["checksum"]) == 64
    with np.load(saved / "arrays.npz", allow_pickle=False) as arrays:
        assert arrays["vectorizer.vocabulary"].dtype.kind == "U"
        assert arrays["vectorizer.idf"].shape == (34,)
        assert arrays["score.centroids"].shape[0] == 3
        assert any(key.startswith("state.") for key in arrays)


def test_the_api_names(saved):
    assert textcluster.load_model is load_model and textcluster.save_model is save_model
    assert isinstance(textcluster.load_model(saved), Bundle)


def edit_json(folder, change, checksum=True):
    """Change bundle.json with ``change(meta)``; recompute its checksum (a bundle written so)
    or leave it (an edit)."""
    path = folder / "bundle.json"
    meta = json.loads(path.read_text(encoding="utf-8"))
    change(meta)
    if checksum:
        meta["checksum"] = bundles._json_checksum(meta)
    path.write_text(json.dumps(meta, indent=2), encoding="utf-8")


def test_an_altered_arrays_file_is_refused(saved):
    with np.load(saved / "arrays.npz", allow_pickle=False) as arrays:
        content = dict(arrays)
    content["vectorizer.idf"] = content["vectorizer.idf"] * 1.01
    np.savez(saved / "arrays.npz", **content)
    with pytest.raises(BundleError, match=r"altered: arrays.npz does not match the SHA-256"):
        load_model(saved)


def test_a_flipped_byte_is_refused(saved):
    data = bytearray((saved / "arrays.npz").read_bytes())
    data[len(data) // 2] ^= 0x01
    (saved / "arrays.npz").write_bytes(bytes(data))
    with pytest.raises(BundleError, match="altered"):
        load_model(saved)


def test_an_edited_bundle_json_is_refused(saved):
    edit_json(saved, lambda meta: meta["clusters"][0]["top_terms"].insert(0, "hello"),
              checksum=False)
    with pytest.raises(BundleError, match=r"altered: bundle.json does not match its checksum"):
        load_model(saved)


def test_damaged_json_is_refused(saved):
    (saved / "bundle.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(BundleError, match="not valid JSON"):
        load_model(saved)


@pytest.mark.parametrize("checksum", [True, False], ids=["rewritten", "edited"])
def test_a_future_format_is_refused(saved, checksum):
    edit_json(saved, lambda meta: meta.update(format_version=2), checksum=checksum)
    with pytest.raises(BundleError, match=r"incompatible: it has bundle format 2.*reads "
                                          r"format 1 only. Upgrade textcluster"):
        load_model(saved)


def test_another_minor_version_is_refused_a_patch_is_read(saved):
    edit_json(saved, lambda meta: meta["versions"].update(textcluster="0.1.7"))
    assert load_model(saved).k == 3
    edit_json(saved, lambda meta: meta["versions"].update(textcluster="0.2.0"))
    with pytest.raises(BundleError, match=r"incompatible: it was written by textcluster "
                                          r"0.2.0.*Load it with textcluster 0.2"):
        load_model(saved)


def test_an_unknown_model_is_refused(saved):
    edit_json(saved, lambda meta: meta["model"].update(name="deep-nmf"))
    with pytest.raises(BundleError, match="named 'deep-nmf', which this textcluster does not "
                                          "know"):
        load_model(saved)


@pytest.mark.parametrize("name", ["arrays.npz", "bundle.json"])
def test_a_missing_file_is_refused(saved, name):
    (saved / name).unlink()
    with pytest.raises(BundleError, match=f"has no {name}: it is incomplete"):
        load_model(saved)


def test_not_a_folder(tmp_path):
    with pytest.raises(BundleError, match="is not a folder"):
        load_model(tmp_path / "nothing")


def test_a_failed_save_leaves_nothing(results, tmp_path, monkeypatch):
    if SAVEABLE is None:
        pytest.skip("no model has fitted_state() yet")

    def full(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(bundles.np, "savez", full)
    with pytest.raises(OSError, match="disk full"):
        save_model(results(SAVEABLE), tmp_path / "model")
    assert list(tmp_path.iterdir()) == []


def test_a_bundle_is_replaced_whole_other_folders_are_not_touched(saved, results, tmp_path):
    before = (saved / "bundle.json").read_text(encoding="utf-8")
    save_model(results(SAVEABLE), saved)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model"]  # no temporary left
    assert json.loads(before)["clusters"] == json.loads(
        (saved / "bundle.json").read_text(encoding="utf-8"))["clusters"]
    other = tmp_path / "notes"
    other.mkdir()
    (other / "todo.txt").write_text("keep me", encoding="utf-8")
    with pytest.raises(InvalidInputError, match="holding other files, not a model bundle"):
        save_model(results(SAVEABLE), other)
    assert (other / "todo.txt").read_text(encoding="utf-8") == "keep me"


def test_a_count_matrix_model_assigns_counts_over_a_vocabulary(tmp_path):
    if SAVEABLE is None:
        pytest.skip("no model has fitted_state() yet")
    rng = np.random.default_rng(0)
    blocks = [rng.poisson(2.0, size=(12, 6)) for _ in range(3)]
    counts = sp.block_diag(blocks, format="csr").astype(float)
    terms = [f"t{j:02d}" for j in range(18)]
    corpus = Corpus("matrix", ids=[f"d{i}" for i in range(36)], matrix=counts,
                    vocabulary=terms, labels=np.repeat(["a", "b", "c"], 12))
    result = textcluster.run(corpus, SAVEABLE, k=3, settings=FAST[SAVEABLE])
    loaded = load_model(save_model(result, tmp_path / "bundle"))
    order = rng.permutation(18)  # the same counts, columns in another order
    again = Corpus("again", ids=corpus.ids, matrix=counts[:, order],
                   vocabulary=np.asarray(terms)[order])
    np.testing.assert_array_equal(loaded.assign(again).labels, result.labels)
    with pytest.raises(InvalidInputError, match="fitted on a term-count matrix"):
        loaded.assign(["t01 t02"])


# -- textcluster assign ---------------------------------------------------------------------------


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def cli_settings(name):
    return [arg for key, value in FAST[name].items() for arg in ("--set", f"{key}={value}")]


@pytest.mark.parametrize("name", [with_state("kmeans"), with_state("nmf")])
def test_assign_end_to_end(corpus_dir, tmp_path, name):
    model, out = tmp_path / "model", tmp_path / "run"
    ran = invoke("run", corpus_dir, "--model", name, *cli_settings(name), "--out", out,
                 "--save-model", model)
    assert ran.exit_code == 0, ran.output
    assert f"model saved to {model}" in ran.output
    new = tmp_path / "new"
    done = invoke("assign", model, corpus_dir, "--out", new)
    assert done.exit_code == 0, done.output
    assert "45 of 45 documents" in done.output
    before = pd.read_csv(out / "clusters.csv")
    after = pd.read_csv(new / "clusters.csv")
    assert list(after.columns) == list(before.columns) == ["doc_id", "cluster", "label", "score"]
    merged = before.merge(after, on="doc_id")
    assert len(merged) == 45 and (merged["cluster_x"] == merged["cluster_y"]).all()
    record = json.loads((new / "assign.json").read_text(encoding="utf-8"))
    assert record["bundle"] == str(model) and record["model"] == name
    assert record["documents"]["given"] == 45 and record["dropped_documents"] == []
    assert sorted(record["counts"].values()) == [15, 15, 15]


@needs_saveable
def test_assign_a_table_with_a_named_text_column(corpus_dir, tmp_path):
    model = tmp_path / "model"
    assert invoke("run", corpus_dir, "--model", SAVEABLE, *cli_settings(SAVEABLE), "--terms",
                  0, "--save-model", model).exit_code == 0
    texts = new_texts(6)
    pd.DataFrame({"ticket": [f"t{i}" for i in range(len(texts))], "body": texts}).to_csv(
        tmp_path / "tickets.csv", index=False)
    done = invoke("assign", model, tmp_path / "tickets.csv", "--set", "text_column=body",
                  "--set", "id_column=ticket", "--out", tmp_path / "out")
    assert done.exit_code == 0, done.output
    assert re.search(r"^warning: .*ids: t6\) and are left out", done.output, re.MULTILINE)
    frame = pd.read_csv(tmp_path / "out" / "clusters.csv")
    assert list(frame["doc_id"]) == [f"t{i}" for i in range(6)]
    record = json.loads((tmp_path / "out" / "assign.json").read_text(encoding="utf-8"))
    assert record["dropped_documents"] == ["t6"] and record["documents"]["given"] == 7


@pytest.mark.parametrize("case", ["no bundle", "altered", "bad setting", "no documents"])
def test_assign_bad_input_exits_2_and_writes_nothing(corpus_dir, tmp_path, case):
    model = tmp_path / "model"
    if case != "no bundle":
        if SAVEABLE is None:
            pytest.skip("no model has fitted_state() yet")
        assert invoke("run", corpus_dir, "--model", SAVEABLE, *cli_settings(SAVEABLE),
                      "--terms", 0, "--save-model", model).exit_code == 0
    if case == "altered":
        edit_json(model, lambda meta: meta.update(k=4), checksum=False)
    docs, extra = corpus_dir, []
    if case == "bad setting":
        extra = ["--set", "min_df=2"]
    if case == "no documents":
        docs = tmp_path / "empty"
        docs.mkdir()
    done = invoke("assign", model, docs, *extra, "--out", tmp_path / "out")
    assert done.exit_code == 2, done.output
    assert "Error" in done.output and "Traceback" not in done.output
    assert not (tmp_path / "out").exists()


def test_run_refuses_a_save_folder_with_other_files_before_fitting(corpus_dir, tmp_path):
    other = tmp_path / "notes"
    other.mkdir()
    (other / "todo.txt").write_text("keep me", encoding="utf-8")
    done = invoke("run", corpus_dir, "--model", "nmf", "--save-model", other)
    assert done.exit_code == 2 and "not a model bundle" in done.output
    assert "purity" not in done.output  # nothing was fitted

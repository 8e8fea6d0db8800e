"""Degenerate corpora get the project's error, saying what is wrong and what to do, before any
model is fitted: through ``textcluster run`` (exit code 2, no traceback, no result file) and
through the Python API (:func:`textcluster.pipeline.prepare.run` and :func:`~.pipeline.represent`, which
batch jobs use too)."""

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp
from click.testing import CliRunner

import textcluster
from textcluster import pipeline
from textcluster._errors import InvalidInputError
from textcluster.cli import main
from textcluster.corpora.corpus import Corpus
from textcluster.models import make_model

ROCKET = "Rocket launch to orbit around the planet"
OVEN = "Bake the pastry in the oven with butter"


def write_table(path, texts, labels=None):
    labels = labels or ["x"] * len(texts)
    lines = ["text,label", *(f'"{t}",{label}' for t, label in zip(texts, labels))]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def write_zero_mat(path, n=6, m=4):
    """A Deng Cai .mat file whose features are all zero."""
    scipy.io.savemat(path, {"fea": sp.csc_matrix((n, m)), "gnd": np.arange(n)[:, None] % 2 + 1})
    return path


CASES = {
    # name: (corpus writer, extra CLI arguments, words of the message)
    "identical": (lambda p: write_table(p / "same.csv", [ROCKET] * 5, ["a", "b", "a", "b", "a"]),
                  [], ["all 5 documents", "identical", "nothing to cluster"]),
    "one document": (lambda p: write_table(p / "one.csv", [ROCKET]), [],
                     ["1 document", "at least 2"]),
    "stop words only": (lambda p: write_table(p / "stop.csv", ["the and of", "it is a", "to be"],
                                              ["a", "b", "a"]),
                        [], ["no usable term", "stop_words"]),
    "no word": (lambda p: write_table(p / "digits.csv", ["123 456", "7 8 9", "!!! ???"],
                                      ["a", "b", "a"]),
                [], ["no usable term"]),
    "zero features": (lambda p: write_zero_mat(p / "zero.mat"), [],
                      ["no usable term", "all zero"]),
    "every term everywhere": (lambda p: write_table(p / "all.csv", [
        "rocket orbit orbit", "rocket rocket orbit", "orbit rocket"], ["a", "b", "a"]),
        [], ["occurs in every one of its", "weighting"]),
    "k above distinct": (lambda p: write_table(p / "dup.csv", [ROCKET, ROCKET, OVEN, OVEN,
                                                               "A comet near Mars"]),
                         ["--k", "4"], ["3 distinct documents", "k=4 needs at least 4",
                                        "lower --k"]),
}


@pytest.mark.parametrize("case", CASES)
def test_cli_refuses_a_degenerate_corpus_and_writes_nothing(tmp_path, case):
    write, extra, words = CASES[case]
    path = write(tmp_path)
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["run", str(path), "--model", "kmeans", "--set",
                                       "n_init=1", "--out", str(out), "--no-cache", *extra])
    assert result.exit_code == 2, result.output
    assert isinstance(result.exception, SystemExit) and "Traceback" not in result.output
    for word in words:
        assert word in result.output, (word, result.output)
    assert not out.exists() or list(out.iterdir()) == []


@pytest.mark.parametrize("case", CASES)
def test_the_python_api_raises_before_fitting(tmp_path, case, monkeypatch):
    write, extra, words = CASES[case]
    path = write(tmp_path)
    k = int(extra[1]) if extra else None

    def no_fit(*args, **kwargs):
        raise AssertionError("a model was fitted")

    monkeypatch.setattr(pipeline.job, "make_model", no_fit)
    with pytest.raises(InvalidInputError) as info:
        textcluster.run(str(path), "kmeans", k=k)
    for word in words:
        assert word in str(info.value)
    assert str(path.name.split(".")[0]) in str(info.value)  # names the corpus


def test_represent_checks_what_batch_jobs_use():
    """Batch jobs load and represent through the pipeline: they get the same errors."""
    same = Corpus("same", ids=list("abc"), texts=[ROCKET] * 3)
    with pytest.raises(InvalidInputError, match="all 3 documents of corpus 'same' are identical"):
        pipeline.represent(same)
    one = Corpus("one", ids=["a"], matrix=sp.csr_matrix(np.ones((1, 3))))
    with pytest.raises(InvalidInputError, match="corpus 'one' has 1 document"):
        pipeline.represent(one)


def test_documents_left_after_dropping_the_empty_ones_are_checked_too():
    corpus = Corpus("mostly-empty", ids=list("abcd"), texts=[ROCKET, "the", "of", "and"])
    with pytest.raises(InvalidInputError, match="1 document is left"):
        pipeline.represent(corpus)


def test_a_model_refuses_more_clusters_than_distinct_documents():
    X = sp.csr_matrix(np.array([[1.0, 0, 2], [1.0, 0, 2], [0, 3.0, 0], [0, 3.0, 0]]))
    with pytest.raises(InvalidInputError, match="2 distinct documents.*n_components=3"):
        make_model("nmf", n_components=3, n_init=1, max_iter=5).fit(X)
    make_model("nmf", n_components=2, n_init=1, max_iter=5).fit(X)

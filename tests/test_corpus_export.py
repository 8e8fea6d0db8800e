"""Corpus → pandas / Hugging Face datasets, the corpus graph, and the agreement of two
clusterings."""

import numpy as np
import pytest
import scipy.sparse as sp

from textcluster._errors import InvalidInputError
from textcluster.corpora.corpus import Corpus
from textcluster.pipeline.export import agreement


def text_corpus(labels=("a", "b", "a")):
    return Corpus("texts", ids=["x", "y", "z"], labels=labels,
                  texts=["one text", "another", "third one"])


def matrix_corpus(vocabulary=("apple", "pear", "plum")):
    counts = sp.csr_matrix(np.array([[2, 0, 1], [0, 0, 0], [0, 3.5, 0]]))
    return Corpus("matrix", ids=["0", "1", "2"], matrix=counts, vocabulary=vocabulary)


def test_text_corpus_to_pandas():
    frame = text_corpus().to_pandas()
    assert list(frame.columns) == ["id", "label", "text"]
    assert frame.to_dict("records")[1] == {"id": "y", "label": "b", "text": "another"}
    unlabelled = text_corpus(labels=None).to_pandas()
    assert list(unlabelled.columns) == ["id", "text"]


def test_matrix_corpus_to_pandas_lists_the_nonzero_terms():
    frame = matrix_corpus().to_pandas()
    assert list(frame.columns) == ["id", "terms", "counts"]
    assert frame["terms"].tolist() == [["apple", "plum"], [], ["pear"]]
    assert frame["counts"].tolist() == [[2.0, 1.0], [], [3.5]]
    no_vocabulary = matrix_corpus(vocabulary=None).to_pandas()
    assert no_vocabulary["terms"].tolist()[0] == ["term0", "term2"]


def test_to_dataset():
    dataset = text_corpus().to_dataset()
    assert dataset.num_rows == 3 and dataset.column_names == ["id", "label", "text"]
    assert dataset[2] == {"id": "z", "label": "a", "text": "third one"}
    assert "texts" in dataset.info.description
    matrix = matrix_corpus().to_dataset()
    assert matrix[0]["terms"] == ["apple", "plum"] and matrix[2]["counts"] == [3.5]
    assert matrix[1]["terms"] == []


def test_graph_is_checked_and_follows_subsets():
    graph = sp.csr_matrix(np.array([[0, 1, 0], [1, 0, 1], [0, 1, 0]]))
    corpus = Corpus("g", ids=["a", "b", "c"], texts=["1", "2", "3"], graph=graph)
    sub = corpus.subset([2, 1])
    assert sub.ids.tolist() == ["c", "b"] and sub.graph.toarray().tolist() == [[0, 1], [1, 0]]
    assert corpus.subset(np.array([True, False, True])).graph.nnz == 0
    with pytest.raises(InvalidInputError, match=r"graph has shape \(2, 2\); expected 3 × 3"):
        Corpus("g", ids=["a", "b", "c"], graph=sp.eye(2))


def test_agreement():
    a = np.array([0, 0, 1, 1, 2, 2])
    assert agreement(a, np.array([5, 5, 3, 3, 4, 4])) == pytest.approx(1.0)
    assert agreement(a, np.array([0, 1, 0, 1, 0, 1])) == pytest.approx(0.0, abs=1e-12)
    # with ids, only the shared documents count, in matching order
    ids_a = ["d1", "d2", "d3", "d4", "d5", "d6"]
    ids_b = ["d6", "d5", "d2", "d1", "d9"]
    assert agreement(a, [7, 7, 8, 8, 9], ids_a, ids_b) == pytest.approx(1.0)
    with pytest.raises(InvalidInputError, match="6 and 5 documents"):
        agreement(a, a[:5])
    with pytest.raises(InvalidInputError, match="share no document"):
        agreement(a, a, ids_a, [f"e{i}" for i in range(6)])
    with pytest.raises(InvalidInputError, match="ids of both"):
        agreement(a, a, ids_a)


def test_top_terms_profiles():
    from types import SimpleNamespace

    from textcluster.pipeline.export import top_terms

    X = sp.csr_matrix(np.array([[1.0, 0, 0], [0.8, 0.2, 0], [0, 0, 1.0], [0, 0.1, 0.9]]))
    # a document factor whose rows all point the same way (GNMF's graph-dominated regime)
    embedding = np.array([[1.0, 1.0], [1.0, 1.0], [2.0, 2.0], [2.0, 2.0]])
    model = SimpleNamespace(components_=np.array([[0.1, 0.5, 0.2], [0.1, 0.5, 0.2]]))
    result = SimpleNamespace(
        labels=np.array([0, 0, 1, 1]), embedding=embedding, model=model, X=X,
        representation=SimpleNamespace(X=X, terms=np.array(["apple", "pear", "plum"])))
    centroid = top_terms(result, n_terms=2)
    assert centroid.values.tolist() == [[0, 1, "apple", 0.9], [0, 2, "pear", 0.1],
                                        [1, 1, "plum", 0.95], [1, 2, "pear", 0.05]]
    basis = top_terms(result, n_terms=1, profile="basis")
    assert basis["term"].tolist() == ["pear", "pear"]  # says nothing about the clusters
    with pytest.raises(InvalidInputError, match="unknown term profile"):
        top_terms(result, profile="lift")


def test_ids_and_labels_utf8_cannot_hold_are_escaped_and_texts_replaced():
    """Lone surrogates (a file name that is not UTF-8, a JSON "\\ud800" escape, an SGML
    &#55296;) would make every UTF-8 output fail: ids and labels keep them as escapes, texts
    get U+FFFD."""
    corpus = Corpus("caf\udce9", ids=["caf\udce9", "x\ud800", "plain"],
                    labels=["\udcff", "b", "b"], texts=["a\ud800b", "ok", "fine"])
    assert corpus.name == "caf\\xe9"
    assert corpus.ids.tolist() == ["caf\\xe9", "x\\ud800", "plain"]
    assert corpus.labels.tolist() == ["\\xff", "b", "b"]
    assert corpus.texts == ["a\ufffdb", "ok", "fine"]
    corpus.to_pandas().to_csv(index=False).encode("utf-8")


def test_a_nul_at_the_end_of_an_id_or_label_is_kept_as_an_escape():
    """NumPy's strings drop a NUL at their end: ids "" and "\x00" would become equal."""
    corpus = Corpus("nul", ids=["", "\x00", "a\x00b"], labels=["x\x00", "x", "x"],
                    texts=["a", "b", "c"])
    assert corpus.ids.tolist() == ["", "\\x00", "a\\x00b"]
    assert corpus.labels.tolist() == ["x\\x00", "x", "x"]

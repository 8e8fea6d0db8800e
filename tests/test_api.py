"""``textcluster.run`` on data in memory, and the table reader's id column."""

import numpy as np
import pandas as pd
import pytest

import textcluster
from textcluster import Corpus
from textcluster._errors import InvalidInputError

from ._corpora import VOCABULARIES

FAST = {"max_iter": 30, "n_init": 2, "n_assign_init": 3}


def documents(n_per_class=8, seed=0):
    """Texts of three planted topics, their topic and a ticket id per row."""
    rng = np.random.default_rng(seed)
    rows = []
    for topic, words in VOCABULARIES.items():
        vocabulary = words.split()
        for i in range(n_per_class):
            rows.append((f"T-{topic}-{i}", " ".join(rng.choice(vocabulary, 12)), topic))
    return pd.DataFrame(rows, columns=["ticket_id", "body", "topic"])


def test_a_list_of_texts():
    frame = documents()
    result = textcluster.run(list(frame["body"]), model="nmf", k=3, settings=FAST)
    assert result.labels.shape == (len(frame),) and len(set(result.labels)) == 3
    assert list(result.corpus.ids[:2]) == ["0", "1"]
    assert "nmi" not in result.metrics  # no labels
    assert ((0 <= result.scores) & (result.scores <= 1)).all()


def test_a_dataframe_with_its_own_columns_and_ids():
    frame = documents()
    result = textcluster.run(frame, model="nmf", settings={"text_column": "body",
                                                          "label_column": "topic", **FAST})
    assert list(result.corpus.ids) == list(frame["ticket_id"])  # not 0..n-1
    assert result.corpus.metadata["id_column"] == "ticket_id"
    assert result.metrics["n_clusters"] == 3 and result.metrics["nmi"] == pytest.approx(1.0)
    terms = result.top_terms(3)
    assert list(terms.columns) == ["cluster", "rank", "term", "weight"]


def test_settings_as_text_and_a_corpus():
    frame = documents()
    by_text = textcluster.run(frame, model="nmf", settings=[
        "text_column=body", "label_column=topic", "max_iter=30", "n_init=2",
        "n_assign_init=3"])
    corpus = Corpus.from_pandas(frame, text_column="body", label_column="topic")
    by_corpus = textcluster.run(corpus, model="nmf", settings=FAST)
    assert np.array_equal(by_text.labels, by_corpus.labels)


def test_a_hugging_face_dataset():
    datasets = pytest.importorskip("datasets")
    frame = documents().rename(columns={"body": "text", "topic": "label"})
    result = textcluster.run(datasets.Dataset.from_pandas(frame), model="kmeans",
                             settings={"n_init": 2})
    assert result.metrics["nmi"] == pytest.approx(1.0)


def test_what_cannot_be_read_is_named():
    with pytest.raises(InvalidInputError, match="cannot read 'int'"):
        textcluster.run(3)
    with pytest.raises(InvalidInputError, match="unknown setting 'top'"):
        textcluster.run(["a b", "c d"], model="nmf", k=2, settings={"top": 2})


@pytest.mark.parametrize("columns, expected", [
    ({"id": [1, 2, 3], "doc_id": ["a", "b", "c"]}, "id"),
    ({"DocID": ["a", "b", "c"]}, "DocID"),
    ({"user_id": ["u", "u", "v"], "ticket_id": ["a", "b", "c"]}, "ticket_id"),  # unique only
    ({"user_id": ["u", "w", "v"], "ticket_id": ["a", "b", "c"]}, None),  # two: row numbers
    ({"valid": ["a", "b", "c"], "paid": ["a", "b", "c"]}, None),  # not id names
    ({"Doc ID": ["a", "b", "c"]}, "Doc ID"),
    ({"docId": ["a", "b", "c"]}, "docId"),
])
def test_the_id_column_found(columns, expected):
    frame = pd.DataFrame({"text": ["x y", "y z", "z x"], **columns})
    corpus = Corpus.from_pandas(frame)
    assert corpus.metadata["id_column"] == expected
    if expected is None:
        assert list(corpus.ids) == ["0", "1", "2"]


def test_a_named_id_column_must_exist():
    frame = pd.DataFrame({"text": ["x y", "y z"], "ticket": ["a", "b"]})
    with pytest.raises(InvalidInputError, match="no column 'ticket_id'"):
        Corpus.from_pandas(frame, id_column="ticket_id")

"""CiteULike views, selection and citation graph, on tiny folders written by the tests (and on
the real citeulike-a / citeulike-t files when present)."""

import inspect

import numpy as np
import pytest
import scipy.sparse as sp

from textcluster._errors import CorpusFormatError, DataNotFoundError, InvalidInputError
from textcluster.corpora.loaders import load_corpus, resolve_loader
from textcluster.corpora.loaders.citeulike import select
from textcluster.registry import UnknownNameError

from ._citeulike import KEPT_ARTICLES, KEPT_TAGS, KEPT_USERS, WORDS, write_citeulike


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("citeulike")
    write_citeulike(root, "citeulike-t")
    write_citeulike(root, "citeulike-a", compress=False, terms=False)
    return root


def load(name, data_dir, **options):
    return load_corpus(name, data_dir=data_dir, min_count=2, **options)


def dense(corpus):
    return corpus.matrix.toarray().tolist()


def test_tags_view(data_dir):
    corpus = load("citeulike-t:tags", data_dir)
    assert corpus.name == "citeulike-t:tags" and corpus.labels is None and corpus.texts is None
    assert corpus.ids.tolist() == KEPT_ARTICLES
    assert corpus.vocabulary.tolist() == KEPT_TAGS
    assert dense(corpus) == [[1, 1, 0], [1, 0, 0], [1, 0, 1], [0, 1, 1]]
    meta = corpus.metadata
    assert meta["view"] == "tags" and meta["features"] == "tags" and not meta["weighted"]
    assert meta["selection"] == {"min_count": 2, "rounds": 3, "articles": [7, 4],
                                 "users": [5, 3], "tags": [4, 3]}


def test_users_and_terms_views(data_dir):
    users = load("citeulike-t:users", data_dir)
    assert users.vocabulary.tolist() == KEPT_USERS
    assert dense(users) == [[1, 1, 0], [1, 1, 1], [1, 1, 0], [1, 1, 1]]
    terms = load("citeulike-t:terms", data_dir)
    assert terms.vocabulary.tolist() == WORDS and terms.metadata["features"] == "terms"
    assert dense(terms) == [[3, 1, 0, 0, 0], [1, 0, 0, 0, 2], [0, 0, 1, 2, 0], [0, 0, 0, 4, 0]]
    assert terms.ids.tolist() == users.ids.tolist() == KEPT_ARTICLES  # same articles


def test_combined_view(data_dir):
    corpus = load("citeulike-t:combined", data_dir, combined_weight=0.3)
    assert corpus.vocabulary.tolist() == KEPT_USERS + KEPT_TAGS
    assert corpus.metadata["weighted"] is True and corpus.metadata["combined_weight"] == 0.3
    X = corpus.matrix.toarray()
    user_norms, tag_norms = np.linalg.norm(X[:, :3], axis=1), np.linalg.norm(X[:, 3:], axis=1)
    # users 0 and 1 are in every kept article: idf 0, so articles 0 and 2 keep no user weight
    assert np.allclose(user_norms, [0, 0.3, 0, 0.3])
    assert np.allclose(tag_norms, 0.7)
    assert (X >= 0).all() and X[1, 2] > 0 and X[1, 0] == 0


@pytest.mark.parametrize("weight", [-0.1, 1.5, "half", True])
def test_combined_weight_is_checked(data_dir, weight):
    with pytest.raises(InvalidInputError, match="combined_weight must be a number between 0"):
        load("citeulike-t:combined", data_dir, combined_weight=weight)


def test_citation_graph(data_dir):
    corpus = load("citeulike-t:tags", data_dir)
    graph = corpus.graph.toarray()
    # 0–1 both ways and a self citation 0–0 → one edge; 2→5 and 4→3 leave the selection
    expected = np.zeros((4, 4))
    expected[0, 1] = expected[1, 0] = 1
    assert (graph == expected).all()
    assert corpus.metadata["graph"] == "citations" and corpus.metadata["citation_links"] == 1
    sub = corpus.subset([1, 0])
    assert sub.graph.toarray().tolist() == [[0, 1], [1, 0]]


def test_citeulike_a_layout(data_dir):
    tags = load("citeulike-a:tags", data_dir)
    assert tags.ids.tolist() == KEPT_ARTICLES and tags.vocabulary.tolist() == KEPT_TAGS
    assert dense(tags) == dense(load("citeulike-t:tags", data_dir))
    assert load("citeulike-a:combined", data_dir).matrix.shape == (4, 6)
    with pytest.raises(DataNotFoundError, match="terms view of citeulike-a needs mult.dat"):
        load("citeulike-a:terms", data_dir)


def test_default_view_and_view_option(data_dir):
    assert load("citeulike-t", data_dir).metadata["view"] == "tags"
    assert load("citeulike-t", data_dir, view="users").vocabulary.tolist() == KEPT_USERS
    with pytest.raises(InvalidInputError, match="unknown CiteULike view 'authors'"):
        load("citeulike-t", data_dir, view="authors")


def test_min_count(data_dir):
    everything = load_corpus("citeulike-t:tags", data_dir=data_dir, min_count=1)
    # article 5 has no words; every other article has a user and a tag
    assert everything.ids.tolist() == ["0", "1", "2", "3", "4", "6"]
    assert everything.metadata["selection"]["tags"] == [4, 4]
    with pytest.raises(InvalidInputError, match="no article has 6 users"):
        load_corpus("citeulike-t:tags", data_dir=data_dir, min_count=6)
    for bad in [0, 2.5, "4", None]:
        with pytest.raises(InvalidInputError, match="min_count must be a whole number"):
            load_corpus("citeulike-t:tags", data_dir=data_dir, min_count=bad)


def test_selection_is_iterated_until_stable():
    # article 1 has one user; without it user 1 has one article (2), so user 1 goes next round
    users = sp.csr_matrix(np.array([[1, 0, 1], [0, 1, 0], [1, 1, 1], [1, 0, 1]]))
    tags = sp.csr_matrix(np.ones((4, 1)))
    articles, kept_users, kept_tags, rounds = select(users, tags, min_count=2)
    assert articles.tolist() == [0, 2, 3] and kept_users.tolist() == [0, 2]
    assert kept_tags.tolist() == [0] and rounds == 3


def test_view_names(data_dir):
    with pytest.raises(UnknownNameError, match="no view 'authors'.*citeulike-t:tags"):
        resolve_loader("citeulike-t:authors")
    with pytest.raises(UnknownNameError, match="'tdt2' has no views"):
        resolve_loader("tdt2:tags")
    assert "view" not in inspect.signature(resolve_loader("citeulike-t:users")).parameters


@pytest.mark.parametrize("name, text, words", [
    ("users.dat", "3 0 1\n", "users.dat, line 1 ('3 0 1'): starts with the count 3 but lists 2"),
    ("users.dat", "2 0 x", "users.dat, line 1 ('2 0 x'): is not '<count> <id> <id> ...' with"),
    ("users.dat", "1 0\n1 99", "users.dat, line 2: names id 99, but there are only 7 ids"),
    ("tag-item.dat", "1 0\n1 -2", "tag-item.dat, line 2 ('1 -2'): is not '<count> <id>"),
    ("tag-item.dat", "1 0", "tag-item.dat has 1 lines but the corpus has 4 tags"),
    ("mult.dat", "1 0:1\n1 9:1", "mult.dat, line 2 ('1 9:1'): names term 9, but vocabulary"),
    ("mult.dat", "1 0:1\n2 1:1 2", "mult.dat, line 2 ('2 1:1 2'): is not '<count> <term>:"),
    ("mult.dat", "1 0:1\n2 1:1", "mult.dat, line 2 ('2 1:1'): is not '<count> <term>:"),
    ("mult.dat", "1 0:1", "mult.dat has 1 lines but the corpus has 7 articles"),
])
def test_malformed_files(tmp_path, name, text, words):
    write_citeulike(tmp_path, "citeulike-t", compress=False, replace={name: text})
    with pytest.raises(CorpusFormatError) as err:
        load_corpus("citeulike-t:terms", data_dir=tmp_path)
    assert words in str(err.value)


@pytest.mark.parametrize("name, text, words", [
    ("users.dat", "1 0\n1 99999999999999999999", "users.dat, line 2 ('1 99999999999999999999')"),
    ("users.dat", "1 0\n99999999999999999999 1", "users.dat, line 2"),
    ("citations.dat", "1 0\n1 9223372036854775808", "citations.dat, line 2"),
    ("mult.dat", "1 0:1\n1 99999999999999999999:1", "mult.dat, line 2"),
    ("mult.dat", "1 0:1\n1 1:99999999999999999999999", "mult.dat, line 2"),
])
def test_numbers_beyond_int64_name_the_line(tmp_path, name, text, words):
    write_citeulike(tmp_path, "citeulike-t", compress=False, replace={name: text})
    with pytest.raises(CorpusFormatError) as err:
        load_corpus("citeulike-t:terms", data_dir=tmp_path)
    assert words in str(err.value) and "too large" in str(err.value)


def test_corrupt_gzip(tmp_path):
    folder = write_citeulike(tmp_path, "citeulike-t")
    data = (folder / "users.dat.gz").read_bytes()
    (folder / "users.dat.gz").write_bytes(data[: len(data) // 2])
    with pytest.raises(CorpusFormatError, match=r"users\.dat\.gz is not a readable gzip file"):
        load_corpus("citeulike-t:users", data_dir=tmp_path)


def test_missing_folder_names_the_source(tmp_path, monkeypatch):
    from textcluster.corpora.loaders import _paths

    monkeypatch.delenv(_paths.DATA_ENV, raising=False)
    monkeypatch.setattr(_paths, "default_cache_dir", lambda: tmp_path / "none")
    with pytest.raises(DataNotFoundError, match="github.com/js05212/citeulike-t"):
        load_corpus("citeulike-t:tags", data_dir=tmp_path)


# -- real data ----------------------------------------------------------------------------------


@pytest.mark.slow
def test_real_citeulike_t(real_data_dir):
    tags = load_corpus("citeulike-t:tags", data_dir=real_data_dir)
    # measured on the files of MANIFEST.md: 25,975 articles, 7,947 users, 52,946 tags
    assert tags.metadata["selection"] == {"min_count": 4, "rounds": 11,
                                          "articles": [25975, 9063], "users": [7947, 4857],
                                          "tags": [52946, 6664]}
    assert tags.matrix.shape == (9063, 6664) and tags.labels is None
    assert {"evolution", "bioinformatics"} <= set(tags.vocabulary)
    graph = tags.graph
    assert graph.shape == (9063, 9063) and (graph != graph.T).nnz == 0
    assert graph.diagonal().sum() == 0 and set(np.unique(graph.data)) == {1.0}
    terms = load_corpus("citeulike-t:terms", data_dir=real_data_dir)
    assert terms.matrix.shape == (9063, 20000) and (terms.ids == tags.ids).all()


def test_real_citeulike_a(real_data_dir):
    combined = load_corpus("citeulike-a:combined", data_dir=real_data_dir)
    assert combined.metadata["selection"]["articles"] == [16980, 12773]
    assert combined.matrix.shape == (12773, 5505 + 8952)
    with pytest.raises(DataNotFoundError, match="mult.dat"):
        load_corpus("citeulike-a:terms", data_dir=real_data_dir)

"""The fitted vectorizer: new documents in the columns of a represented corpus, and the
training documents exactly as the training matrix."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from textcluster import pipeline
from textcluster._errors import InvalidInputError
from textcluster.corpora.corpus import Corpus
from textcluster.pipeline.prepare import vectorize
from textcluster.text.tfidf import WEIGHTINGS, Vectorizer

from ._corpora import write_folder_corpus

TEXTS = ["The rocket reached orbit, and the rocket landed.", "A rocket and a comet.",
         "Bake the bread in the oven.", "The oven and the bread, and more bread.",
         "The and of it.", "Comet, orbit, comet: a telescope saw the comet."]


def text_corpus(texts, name="toy"):
    return Corpus(name, ids=[f"d{i}" for i in range(len(texts))], texts=texts)


def tdt2_like(seed=0, n_docs=40, n_terms=60, vocabulary=True):
    """A term-count matrix corpus like Deng Cai's TDT2: integer counts, a few terms in every
    document (dropped by the cai weighting), a column in none."""
    rng = np.random.default_rng(seed)
    counts = rng.poisson(0.3, size=(n_docs, n_terms)).astype(float)
    counts[:, 0] += 1  # in every document
    counts[:, -1] = 0  # in none
    terms = [f"w{j:03d}" for j in range(n_terms)] if vocabulary else None
    return Corpus("tdt2-like", ids=[f"doc{i}" for i in range(n_docs)],
                  labels=[f"c{i % 3}" for i in range(n_docs)], matrix=sp.csr_matrix(counts),
                  vocabulary=terms)


def assert_same_matrix(A, B):
    assert A.dtype == B.dtype and A.shape == B.shape
    np.testing.assert_array_equal(A.indptr, B.indptr)
    np.testing.assert_array_equal(A.indices, B.indices)
    np.testing.assert_array_equal(A.data, B.data)  # bit for bit


def represent_quietly(corpus, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # the empty document left out
        return pipeline.represent(corpus, **options)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("weighting", WEIGHTINGS.names())
def test_training_texts_give_the_training_matrix(weighting, dtype):
    corpus = text_corpus(TEXTS)
    rep = represent_quietly(corpus, weighting=weighting, dtype=dtype, stop_words="sklearn")
    vec = rep.vectorizer
    assert vec.weighting == weighting and vec.dtype == dtype and vec.source == "texts"
    assert list(vec.vocabulary) == list(rep.terms) and vec.idf.dtype == np.float64
    with pytest.warns(UserWarning, match=r"ids: d4\).*left out"):
        X, kept, dropped = vectorize(corpus, vec)
    assert dropped == rep.dropped_docs == ["d4"]
    assert list(kept.ids) == list(rep.corpus.ids)
    assert_same_matrix(X, rep.X)


@pytest.mark.parametrize("weighting", WEIGHTINGS.names())
def test_a_folder_corpus_gives_the_training_matrix(tmp_path, weighting):
    corpus = pipeline.load_corpus(str(write_folder_corpus(tmp_path / "news")))
    rep = pipeline.represent(corpus, weighting=weighting)
    X, kept, dropped = vectorize(corpus, rep.vectorizer)
    assert dropped == [] and kept.n_docs == corpus.n_docs
    assert_same_matrix(X, rep.X)


@pytest.mark.parametrize("vocabulary", [True, False], ids=["vocabulary", "term-ids"])
@pytest.mark.parametrize("weighting", WEIGHTINGS.names())
def test_a_count_matrix_gives_the_training_matrix(weighting, vocabulary):
    corpus = tdt2_like(vocabulary=vocabulary)
    rep = pipeline.represent(corpus, weighting=weighting)
    assert rep.vectorizer.source == "matrix"
    assert list(rep.vectorizer.vocabulary) == list(rep.terms)
    X, _, dropped = vectorize(corpus, rep.vectorizer)
    assert dropped == []
    assert_same_matrix(X, rep.X)


def test_the_idf_is_the_training_one():
    """A document's weights do not depend on the documents assigned with it."""
    corpus = tdt2_like()
    rep = pipeline.represent(corpus)
    alone = vectorize(corpus.subset([5]), rep.vectorizer)[0]
    assert_same_matrix(alone, rep.X[5])
    # the cai idf of a term in m of the 40 training documents is ln(40 / m)
    df = np.bincount(corpus.matrix.indices, minlength=corpus.matrix.shape[1])
    column = list(corpus.vocabulary).index(rep.vectorizer.vocabulary[0])
    assert rep.vectorizer.idf[0] == np.log(40 / df[column])


def test_matrix_columns_are_matched_by_term():
    corpus = tdt2_like()
    rep = pipeline.represent(corpus)
    counts = corpus.matrix.toarray()
    order = np.random.default_rng(1).permutation(counts.shape[1])
    shuffled = np.hstack([counts[:, order], np.ones((counts.shape[0], 2))])  # + 2 unknown
    terms = list(np.asarray(corpus.vocabulary)[order]) + ["unknown1", "unknown2"]
    new = Corpus("new", ids=corpus.ids, matrix=sp.csr_matrix(shuffled), vocabulary=terms)
    assert_same_matrix(vectorize(new, rep.vectorizer)[0], rep.X)


def test_a_matrix_sharing_no_term_is_refused():
    rep = pipeline.represent(tdt2_like())
    new = Corpus("other", ids=["a"], matrix=sp.csr_matrix(np.ones((1, 3))),
                 vocabulary=["x", "y", "z"])
    with pytest.raises(InvalidInputError, match="corpus 'other'.*shares no term"):
        vectorize(new, rep.vectorizer)
    unnamed = Corpus("unnamed", ids=["a"], matrix=sp.csr_matrix(np.ones((1, 3))))
    with pytest.raises(InvalidInputError, match="has no vocabulary"):
        vectorize(unnamed, rep.vectorizer)


def test_texts_for_a_matrix_model_are_refused():
    rep = pipeline.represent(tdt2_like())
    with pytest.raises(InvalidInputError, match="fitted on a term-count matrix"):
        vectorize(text_corpus(["w001 w002"]), rep.vectorizer)


def test_unknown_terms_are_dropped():
    rep = represent_quietly(text_corpus(TEXTS))
    X, _, _ = vectorize(text_corpus(["A rocket met zeppelins and a comet over Paris.",
                                     "rocket comet"]), rep.vectorizer)
    assert_same_matrix(X[0], X[1])
    assert X.shape[1] == len(rep.terms)


def test_new_documents_without_a_known_term_follow_the_training_policy():
    new = text_corpus(["a rocket", "zeppelins over Paris", "the bread"], name="new")
    rep = represent_quietly(text_corpus(TEXTS))
    with pytest.warns(UserWarning, match=r"1 of the 3 document\(s\) of corpus 'new'.*"
                                         r"ids: d1\).*left out"):
        X, kept, dropped = vectorize(new, rep.vectorizer)
    assert dropped == ["d1"] and list(kept.ids) == ["d0", "d2"] and X.shape[0] == 2
    strict = pipeline.represent(text_corpus(TEXTS[:4]), empty_documents="error")
    with pytest.raises(InvalidInputError, match=r"ids: d1\).*empty_documents=error"):
        vectorize(new, strict.vectorizer)
    with pytest.raises(InvalidInputError, match="none can be assigned"):
        vectorize(text_corpus(["zeppelins", "over Paris"]), rep.vectorizer)


def test_the_tokenizer_settings_are_kept():
    rep = pipeline.represent(text_corpus(TEXTS[:4]), stop_words="none", lowercase=False)
    assert rep.vectorizer.options["stop_words"] == "none"
    X, _, _ = vectorize(text_corpus(["The Rocket", "the rocket"]), rep.vectorizer)
    vocabulary = list(rep.vectorizer.vocabulary)
    assert X[0, vocabulary.index("The")] > 0 and X[1, vocabulary.index("the")] > 0


def test_cached_counts_give_the_same_vectorizer(tmp_path):
    corpus = pipeline.load_corpus(str(write_folder_corpus(tmp_path / "news", n_per_class=5)))
    first, second = pipeline.represent(corpus), pipeline.represent(corpus)  # 2nd: cached counts
    np.testing.assert_array_equal(first.vectorizer.vocabulary, second.vectorizer.vocabulary)
    np.testing.assert_array_equal(first.vectorizer.idf, second.vectorizer.idf)
    assert_same_matrix(vectorize(corpus, second.vectorizer)[0], first.X)


def test_a_weighted_matrix_keeps_its_values():
    """A corpus of tf-idf rows (``weighted``) is only scaled to unit rows, and so are new
    ones."""
    rng = np.random.default_rng(3)
    values = sp.random(12, 20, density=0.3, random_state=rng, format="csr")
    corpus = Corpus("weighted", ids=[f"d{i}" for i in range(12)], matrix=values,
                    metadata={"weighted": True})
    rep = represent_quietly(corpus)
    assert rep.vectorizer.weighting == "tf" and np.all(rep.vectorizer.idf == 1)
    X, kept, _ = vectorize(corpus, rep.vectorizer)
    assert_same_matrix(X, rep.X)


@pytest.mark.parametrize("fields, words", [
    ({"vocabulary": ["a", "a"], "idf": [1.0, 1.0]}, "a term twice"),
    ({"vocabulary": ["a", "b"], "idf": [1.0]}, "2 terms but 1 term weights"),
    ({"idf": [np.nan, 1.0]}, "finite"),
    ({"weighting": "bm25"}, "unknown tf-idf weighting 'bm25'"),
    ({"dtype": "int8"}, "dtype must be float64 or float32"),
    ({"vocabulary": [], "idf": []}, "non-empty list of terms"),
])
def test_an_inconsistent_vectorizer_is_refused(fields, words):
    given = {"vocabulary": ["a", "b"], "idf": [1.0, 2.0], "weighting": "cai", **fields}
    with pytest.raises((InvalidInputError, KeyError), match=words):
        Vectorizer(**given)


@pytest.mark.parametrize("name", ["cluto:tr41", "stackoverflow"])
def test_real_corpora_give_the_training_matrix(real_data_dir, name):
    corpus = pipeline.load_corpus(name, data_dir=str(real_data_dir))
    rep = represent_quietly(corpus)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        X, kept, dropped = vectorize(corpus, rep.vectorizer)
    assert dropped == rep.dropped_docs
    assert_same_matrix(X, rep.X)

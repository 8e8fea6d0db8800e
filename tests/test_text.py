"""Tokenization (spaCy Analyzer), term counting and tf-idf weighting."""

import pickle

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.sparse.linalg import norm as sparse_norm
from sklearn.feature_extraction.text import TfidfTransformer
from sklearn.preprocessing import normalize

from textcluster._errors import InvalidInputError
from textcluster.registry import UnknownNameError
from textcluster.text.tfidf import WEIGHTINGS, count_terms, empty_rows, tfidf
from textcluster.text.tokenize import Analyzer, stop_words

# -- Analyzer -------------------------------------------------------------------------------------


def test_default_analyzer():
    text = "The Rockets' launch was delayed, again: NASA's rocket-stage failed in 1987!"
    assert Analyzer()(text) == ["rockets", "launch", "delayed", "nasa", "rocket", "stage",
                                "failed"]


def test_lowercase_option():
    assert Analyzer(stop_words="none", lowercase=False)("The NASA Rocket") == [
        "The", "NASA", "Rocket"]
    # stop words are removed whatever their case
    assert Analyzer(lowercase=False)("The NASA Rocket") == ["NASA", "Rocket"]


def test_numbers_and_punctuation_are_dropped():
    words = Analyzer(stop_words="none")("In 1987 prices rose 3.5% to $12,000 (x2, covid19) -- ok")
    assert words == ["in", "prices", "rose", "to", "x2", "covid19", "ok"]


def test_words_keep_inner_apostrophes_and_hyphens_and_accents():
    assert Analyzer(stop_words="none")("O'Neil's naïve café") == ["o'neil", "naïve", "café"]


def test_negation_fragment_is_not_a_term():
    """spaCy splits "don't" into "do" + "n't"; only spaCy's stop list holds "n't"."""
    for name in ["spacy", "nltk", "sklearn", "none"]:
        assert "n't" not in Analyzer(stop_words=name)("They don't and can't agree.")


@pytest.mark.parametrize("name, removed, kept", [
    ("spacy", ["make", "whereas", "the"], ["ain", "bill"]),
    ("nltk", ["ain", "the"], ["make", "whereas", "bill"]),
    ("sklearn", ["bill", "whereas", "the"], ["make", "ain"]),
    ("none", [], ["make", "whereas", "the", "ain", "bill"]),
])
def test_stop_word_lists(name, removed, kept):
    words = Analyzer(stop_words=name)(" ".join(removed + kept + ["rocket"]))
    assert words == kept + ["rocket"]


def test_stop_word_list_sizes():
    assert len(stop_words("spacy")) == 326
    assert len(stop_words("nltk")) == 179
    assert len(stop_words("sklearn")) == 318
    assert stop_words("none") == frozenset() and stop_words(None) == frozenset()


def test_unknown_stop_word_list():
    with pytest.raises(InvalidInputError, match="unknown stop-word list 'french'.*nltk"):
        Analyzer(stop_words="french")


def test_unknown_normalization():
    with pytest.raises(InvalidInputError, match="choose none, stem or lemma"):
        Analyzer(normalize="stems")


def test_min_length():
    text = "ox cat bird zebra"
    assert Analyzer(stop_words="none")(text) == ["ox", "cat", "bird", "zebra"]
    assert Analyzer(stop_words="none", min_length=4)(text) == ["bird", "zebra"]
    assert Analyzer(stop_words="none", min_length=1)("a b") == ["a", "b"]


def test_stemming():
    assert Analyzer(normalize="stem")("The rockets were launching and launched") == [
        "rocket", "launch", "launch"]


def test_pickling_round_trip():
    analyzer = Analyzer(stop_words="nltk", lowercase=False, normalize="stem", min_length=3)
    copy = pickle.loads(pickle.dumps(analyzer))
    assert (copy.stop_words, copy.lowercase, copy.normalize, copy.min_length) == (
        "nltk", False, "stem", 3)
    text = "The Rockets were launching and made it to orbit"
    # (NLTK's Porter stemmer returns lower-case stems)
    assert copy(text) == analyzer(text) == ["rocket", "launch", "made", "orbit"]
    assert pickle.loads(pickle.dumps(Analyzer()))("The Rockets") == ["rockets"]


# -- tfidf ----------------------------------------------------------------------------------------

COUNTS = np.array([
    [2, 0, 1, 1, 0],
    [0, 3, 1, 0, 0],
    [1, 1, 1, 0, 0],
    [0, 0, 1, 4, 0],
], dtype=float)  # column 2 is in every document, column 4 in none


def test_cai_weighting_by_hand():
    X, kept = tfidf(sp.csr_matrix(COUNTS))
    n = COUNTS.shape[0]
    df = (COUNTS > 0).sum(axis=0)
    expected = np.zeros_like(COUNTS)
    for i, j in zip(*np.nonzero(COUNTS)):
        expected[i, j] = (1 + np.log(COUNTS[i, j])) * np.log(n / df[j])
    expected /= np.linalg.norm(expected, axis=1, keepdims=True)
    # the term in every document (idf ln 1 = 0) and the unused term are dropped
    assert list(kept) == [0, 1, 3]
    np.testing.assert_allclose(X.toarray(), expected[:, kept])
    assert X.dtype == np.float64 and sp.isspmatrix_csr(X) and X.has_sorted_indices


def test_cai_weighting_of_single_terms():
    X, kept = tfidf(sp.csr_matrix(COUNTS), normalize=False)
    # document 0, term 0: tf 2, df 2 of 4 documents
    assert X[0, 0] == pytest.approx((1 + np.log(2)) * np.log(2))
    # document 3, term 3: tf 4, df 2
    assert X[3, 2] == pytest.approx((1 + np.log(4)) * np.log(2))


def test_no_dropping_keeps_every_column():
    X, kept = tfidf(sp.csr_matrix(COUNTS), drop_empty_terms=False)
    assert X.shape == COUNTS.shape and list(kept) == [0, 1, 2, 3, 4]
    assert X[:, 2].nnz == 0 and X[:, 4].nnz == 0


@pytest.mark.parametrize("weighting, sublinear", [("sklearn", False),
                                                  ("sklearn-sublinear", True)])
def test_sklearn_weightings_match_sklearn(weighting, sublinear):
    X, kept = tfidf(sp.csr_matrix(COUNTS), weighting=weighting)
    reference = TfidfTransformer(sublinear_tf=sublinear, norm=None).fit_transform(COUNTS)
    reference = normalize(reference, norm="l2")
    # sklearn's smoothed idf is ≥ 1: only the unused column 4 is dropped
    assert list(kept) == [0, 1, 2, 3]
    np.testing.assert_allclose(X.toarray(), reference.toarray()[:, kept])


def test_tf_weighting():
    X, kept = tfidf(COUNTS, weighting="tf")  # dense input is accepted
    np.testing.assert_allclose(X.toarray(), normalize(COUNTS[:, :4]))


def test_rows_have_unit_norm():
    X, _ = tfidf(sp.csr_matrix(COUNTS))
    np.testing.assert_allclose(sparse_norm(X, axis=1), 1.0)


def test_stored_zeros_are_not_counted():
    """An explicitly stored 0 must not add to a term's df nor give ln 0."""
    data, indices, indptr = [2.0, 0.0, 1.0, 3.0, 1.0], [0, 1, 2, 1, 2], [0, 3, 5]
    with_zero = sp.csr_matrix((data, indices, indptr), shape=(2, 3))
    assert with_zero.nnz == 5
    without = sp.csr_matrix(with_zero.toarray())
    X1, kept1 = tfidf(with_zero)
    X2, kept2 = tfidf(without)
    assert list(kept1) == list(kept2) == [0, 1]
    np.testing.assert_array_equal(X1.toarray(), X2.toarray())
    assert np.all(np.isfinite(X1.data))
    assert with_zero.nnz == 5  # the input is left alone


def test_negative_counts():
    with pytest.raises(InvalidInputError, match="non-negative"):
        tfidf(sp.csr_matrix(np.array([[1.0, -1.0]])))


def test_non_finite_counts():
    with pytest.raises(InvalidInputError, match="finite"):
        tfidf(sp.csr_matrix(np.array([[1.0, np.nan]])))


def test_unknown_weighting():
    with pytest.raises(UnknownNameError, match="cai, sklearn, sklearn-sublinear, tf"):
        tfidf(sp.csr_matrix(COUNTS), weighting="bm25")
    assert WEIGHTINGS.names() == ["cai", "sklearn", "sklearn-sublinear", "tf"]


def test_empty_rows():
    X, _ = tfidf(sp.csr_matrix(np.array([[1.0, 0, 0], [0, 2.0, 0], [1.0, 1.0, 0]])))
    assert list(empty_rows(X)) == []
    # a document holding only a term that is in every document has nothing left
    X, _ = tfidf(sp.csr_matrix(np.array([[1.0, 1.0], [0, 1.0], [1.0, 1.0]])))
    assert list(empty_rows(X)) == [1]


# -- count_terms ----------------------------------------------------------------------------------

DOCS = ["rocket orbit rocket", "rocket comet", "oven bread", "bread oven oven rocket"]


def test_count_terms():
    counts, vocabulary = count_terms(DOCS, Analyzer(stop_words="none"))
    assert list(vocabulary) == ["bread", "comet", "orbit", "oven", "rocket"]
    assert sp.isspmatrix_csr(counts) and counts.dtype == np.float64
    np.testing.assert_array_equal(counts.toarray(), [[0, 0, 1, 0, 2], [0, 1, 0, 0, 1],
                                                     [1, 0, 0, 1, 0], [1, 0, 0, 2, 1]])


def test_count_terms_default_analyzer_removes_stop_words():
    counts, vocabulary = count_terms(["The rocket and the comet", "An oven"])
    assert list(vocabulary) == ["comet", "oven", "rocket"]


def test_count_terms_min_df_max_df_max_features():
    analyzer = Analyzer(stop_words="none")
    assert list(count_terms(DOCS, analyzer, min_df=2)[1]) == ["bread", "oven", "rocket"]
    assert list(count_terms(DOCS, analyzer, min_df=0.5)[1]) == ["bread", "oven", "rocket"]
    assert list(count_terms(DOCS, analyzer, max_df=2)[1]) == ["bread", "comet", "orbit", "oven"]
    assert list(count_terms(DOCS, analyzer, max_features=2)[1]) == ["oven", "rocket"]


def test_count_terms_errors():
    with pytest.raises(InvalidInputError, match="no usable term is left"):
        count_terms(["the and of", "a an"])
    with pytest.raises(InvalidInputError, match="no usable term is left"):
        count_terms(DOCS, Analyzer(stop_words="none"), min_df=5)
    with pytest.raises(InvalidInputError, match="invalid preprocessing setting.*'min_df'"):
        count_terms(DOCS, min_df=-1)


def test_cai_weighting_refuses_counts_below_one():
    """1 + ln tf is negative below 1/e: fractional values need another weighting."""
    counts = sp.csr_matrix(np.array([[0.1, 2.0], [1.0, 0.0]]))
    with pytest.raises(InvalidInputError, match="weighting=tf"):
        tfidf(counts)
    X, _ = tfidf(counts, weighting="tf")
    assert X.data.min() >= 0

"""The memo of pieces and the worker processes of count_terms: the same terms and counts as
spaCy's tokenizer on whole texts in one process."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from textcluster._errors import InvalidInputError
from textcluster.text import tfidf
from textcluster.text.tfidf import count_terms
from textcluster.text.tokenize import Analyzer, _piece_tokens, _spacy_tokenizer

TRICKY = [
    "The Rockets' launch was delayed, again: NASA's rocket-stage failed in 1987!",
    "They don't and can't agree. 'Cause it's 10a.m. now, said Smith Co. and Acme Corp.",
    "smile :) or :-) ( : ) ( - : ) '' quoted '' 'em 'cause ' cause ' s Corp . Co .",
    "a.m. p.m. 10 a.m . 9p.m. (-_-) (^_^) ._. o.O O_o :'( <3 </3 ^_^ (*_*) -__-",
    "line\nbreaks\tand  double  spaces \xa0nbsp\u2014dash e-mail http://x.org/a?b=c a@b.com",
    "",
    "   ",
    "O'Neil's naïve café — U.S. U.K. Calif. Mass. Dec. Jan. Inc. Ltd. vs. etc. e.g. i.e.",
    "rock 'n' roll, rock ' n ' roll, y'all, ya'll, ma'am, o'clock, 'tis, 'twas",
    # special cases of letters only (the plain words that still go through spaCy)
    "Cannot cannot dont Dont gonna Gotta im Ive nothin lovin Whatre cant wont Shouldntve",
    # other whitespace between pieces: spaCy tokenizes each run of non-space characters alone
    "said.\nThe a\x1cbb word\u2009next x\u3000yy co\x85op hello\r\nworld 'cause\nit :)\n:(",
]


def _alone(piece):
    return [t.text for t in _spacy_tokenizer()(piece)]


def test_pieces_that_skip_the_tokenizer_get_its_tokens():
    words = [w for w in _spacy_tokenizer().rules if w.isascii() and w.isalnum()]
    words += ["said", "Said", "NASA", "A", "a", "mr", "Mr", "etc", "co", "Jan", "vs", "eg",
              "1", "1987", "3.5", "104,874", "0.6840", "1,000.5", "10"]
    pieces = [w + mark for w in words for mark in ["", ",", ";", ":", "!", "?", "."]]
    assert dict(_piece_tokens(pieces)) == {piece: _alone(piece) for piece in pieces}


@given(st.from_regex(r"([A-Za-z]{1,12}|[0-9]{1,5}([.,][0-9]{1,4}){0,2})[,;:!?.]?",
                     fullmatch=True))
def test_a_word_and_a_mark_get_the_tokens_of_spacy(piece):
    assert dict(_piece_tokens([piece])) == {piece: _alone(piece)}


class _Reference(Analyzer):
    def __call__(self, text):
        return self.reference(text)


def _texts():
    words = " ".join(TRICKY).split(" ")
    rng = np.random.default_rng(0)
    texts = list(TRICKY)
    for _ in range(400):  # shuffled neighbours for the special cases
        picked = rng.choice(len(words), size=rng.integers(0, 40))
        seps = rng.choice([" ", "  ", "\n", " \n "], size=len(picked))
        texts.append("".join(words[i] + s for i, s in zip(picked, seps)))
    return texts


OPTIONS = [{}, {"stop_words": "none"}, {"stop_words": "nltk"}, {"stop_words": "sklearn"},
           {"lowercase": False}, {"stop_words": "none", "lowercase": False},
           {"normalize": "stem"}, {"normalize": "lemma"}]


def _analyzer(cls, options):
    if options.get("normalize") == "stem":
        pytest.importorskip("nltk")
    if options.get("normalize") == "lemma":
        pytest.importorskip("spacy_lookups_data")
    return cls(**options)


@pytest.mark.parametrize("options", OPTIONS)
def test_memo_gives_the_terms_of_whole_texts(options):
    analyzer = _analyzer(Analyzer, options)
    for text in _texts():
        assert analyzer(text) == analyzer.reference(text), text
    for text in TRICKY:  # again, from the memo
        assert analyzer(text) == analyzer.reference(text), text


def _same(a, b):
    (ca, va), (cb, vb) = a, b
    assert list(va) == list(vb)
    assert ca.shape == cb.shape and ca.dtype == cb.dtype
    assert np.array_equal(ca.indptr, cb.indptr)
    assert np.array_equal(ca.indices, cb.indices)
    assert np.array_equal(ca.data, cb.data)


@pytest.fixture
def small_chunks(monkeypatch):
    monkeypatch.setattr(tfidf, "PARALLEL_MIN_DOCS", 50)
    monkeypatch.setattr(tfidf, "PARALLEL_CHUNK", 37)


@pytest.mark.parametrize("options", OPTIONS)
def test_parallel_counts_are_those_of_one_process(small_chunks, options):
    texts = _texts()
    reference = count_terms(texts, _analyzer(_Reference, options), n_jobs=1)
    _same(count_terms(texts, _analyzer(Analyzer, options), n_jobs=1), reference)
    _same(count_terms(texts, _analyzer(Analyzer, options), n_jobs=2), reference)


def test_parallel_keeps_the_order_and_reads_a_generator(small_chunks):
    texts = _texts()
    reference = count_terms(texts, _Reference(), n_jobs=1)
    consumed = []

    def generate():
        for text in texts:
            consumed.append(text)
            yield text

    _same(count_terms(generate(), Analyzer(), n_jobs=2), reference)
    assert consumed == texts
    # reversed documents give reversed rows
    counts, vocabulary = count_terms(texts[::-1], Analyzer(), n_jobs=2)
    assert list(vocabulary) == list(reference[1])
    assert (counts[::-1] != reference[0]).nnz == 0


def test_parallel_empty_documents_and_min_df(small_chunks):
    texts = ["", "rocket launch", "   ", "launch pad rocket"] * 30
    for kwargs in [{}, {"min_df": 2}, {"max_df": 0.9}, {"max_features": 2}]:
        _same(count_terms(texts, Analyzer(), n_jobs=2, **kwargs),
              count_terms(texts, _Reference(), n_jobs=1, **kwargs))
    with pytest.raises(InvalidInputError, match="no usable term"):
        count_terms(["", "the and", "  "] * 40, Analyzer(), n_jobs=2)
    with pytest.raises(InvalidInputError):
        count_terms(texts, Analyzer(), n_jobs=0)


def test_small_corpora_stay_in_one_process(monkeypatch):
    def no_pool(*args):
        raise AssertionError("a pool for a small corpus")

    monkeypatch.setattr(tfidf, "_worker_pool", no_pool)
    _same(count_terms(TRICKY, Analyzer(), n_jobs=2), count_terms(TRICKY, _Reference(), n_jobs=1))


def test_parallel_reads_ahead_a_bounded_number_of_documents(small_chunks):
    read = []

    def generate():
        for i, text in enumerate(_texts() * 3):
            read.append(i)
            yield text

    seen = []
    original = tfidf._terms_in_workers

    def spy(pool, analyzer, texts, n_jobs):
        for k, terms in enumerate(original(pool, analyzer, texts, n_jobs)):
            seen.append(len(read) - k)
            yield terms

    tfidf_spy = pytest.MonkeyPatch()
    tfidf_spy.setattr(tfidf, "_terms_in_workers", spy)
    try:
        count_terms(generate(), Analyzer(), n_jobs=2)
    finally:
        tfidf_spy.undo()
    bound = tfidf.PARALLEL_CHUNK * (tfidf.PARALLEL_INFLIGHT * 2 + 2)
    assert max(seen) <= bound


def test_analyzer_pickles_without_its_memo():
    import pickle

    analyzer = Analyzer(stop_words="nltk")
    analyzer("a rocket launch")
    copy = pickle.loads(pickle.dumps(analyzer))
    assert copy._pieces == {} and copy("a rocket launch") == ["rocket", "launch"]

"""Tokenization with spaCy's rule-based English tokenizer (no model download needed)."""

import re
from functools import lru_cache

from .._compat import require
from .._errors import InvalidInputError

_WORD = re.compile(r"[^\W\d_][\w'-]*[^\W_]|[^\W\d_]")  # starts with a letter, no pure numbers
# spaCy splits "don't" into "do" + "n't"; the fragment is not a word (and only spaCy's
# stop-word list has it, so with the others it would become a term of its own).
_CLITICS = frozenset({"n't"})


@lru_cache(maxsize=1)
def _spacy_tokenizer():
    from spacy.lang.en import English

    return English().tokenizer


def stop_words(name: str | None = "spacy") -> frozenset[str]:
    """The stop-word list ``"spacy"`` (326 words), ``"nltk"`` (NLTK's English list, 179
    words, bundled in scikit-learn's form for offline use: ``"sklearn"``), or ``"none"``."""
    if name == "spacy":
        from spacy.lang.en.stop_words import STOP_WORDS

        return frozenset(STOP_WORDS)
    if name == "nltk":
        return frozenset(_NLTK_ENGLISH)
    if name == "sklearn":
        from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

        return frozenset(ENGLISH_STOP_WORDS)
    if name in ("none", None):
        return frozenset()
    raise InvalidInputError(
        f"unknown stop-word list {name!r}; choose one of: spacy, nltk, sklearn, none"
    )


class Analyzer:
    """Turns a text into terms: spaCy tokens, lower-cased, alphabetic, stop words removed,
    optionally stemmed (NLTK's Porter stemmer: the ``nltk`` extra) or lemmatized (spaCy's
    lookup lemmatizer).

    Instances are picklable so vectorizers using them can run in worker processes.
    """

    def __init__(self, stop_words: str | None = "spacy", lowercase: bool = True,
                 normalize: str = "none", min_length: int = 2) -> None:
        if normalize not in ("none", "stem", "lemma"):
            raise InvalidInputError(
                f"unknown term normalization {normalize!r}; choose none, stem or lemma"
            )
        self.stop_words = stop_words
        self.lowercase = lowercase
        self.normalize = normalize
        self.min_length = min_length
        self._stops = globals()["stop_words"](stop_words)
        self._norm = _normalizer(normalize)

    def __call__(self, text: str) -> list[str]:
        tokens = (t.text for t in _spacy_tokenizer()(text))
        if self.lowercase:
            tokens = (t.lower() for t in tokens)
        words = [t for t in tokens if len(t) >= self.min_length and _WORD.fullmatch(t)]
        words = [w for w in words if w.lower() not in self._stops and w.lower() not in _CLITICS]
        return [self._norm(w) for w in words] if self._norm else words

    def __getstate__(self):
        return {k: v for k, v in self.__dict__.items() if k not in ("_stops", "_norm")}

    def __setstate__(self, state):
        self.__init__(**state)


def _normalizer(kind):
    if kind == "stem":
        require("nltk", extra="nltk", feature="stemming (normalize=stem)")
        from nltk.stem.porter import PorterStemmer

        return PorterStemmer().stem
    if kind == "lemma":
        from spacy.lang.en import English

        lemmatizer = _lookup_lemmas(English())
        return lambda w: lemmatizer.get(w, w)
    return None


def _lookup_lemmas(nlp):
    try:
        from spacy_lookups_data import load  # optional package with lemma tables
    except ImportError:
        raise InvalidInputError(
            "lemmatization needs the lemma tables: pip install spacy-lookups-data "
            "(or use normalize='stem')"
        ) from None
    return load("en", "lemma_lookup")


# NLTK's English stop-word list (nltk.corpus.stopwords.words("english"), 179 words), kept
# here so no corpus download is needed.
_NLTK_ENGLISH = """i me my myself we our ours ourselves you you're you've you'll you'd your
yours yourself yourselves he him his himself she she's her hers herself it it's its itself
they them their theirs themselves what which who whom this that that'll these those am is are
was were be been being have has had having do does did doing a an the and but if or because
as until while of at by for with about against between into through during before after above
below to from up down in out on off over under again further then once here there when where
why how all any both each few more most other some such no nor not only own same so than too
very s t can will just don don't should should've now d ll m o re ve y ain aren aren't couldn
couldn't didn didn't doesn doesn't hadn hadn't hasn hasn't haven haven't isn isn't ma mightn
mightn't mustn mustn't needn needn't shan shan't shouldn shouldn't wasn wasn't weren weren't
won won't wouldn wouldn't""".split()

"""Tokenization with spaCy's rule-based English tokenizer (no model download needed)."""

import re
from functools import lru_cache
from itertools import chain
from typing import Any

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


# Pieces of text (the parts between whitespace) analyzed once per Analyzer: beyond this many,
# the memo is emptied and starts again (it only saves time).
_PIECE_MEMO_SIZE = 1 << 20


# A word of ASCII letters or a number, then perhaps one mark that spaCy splits off it (see
# _piece_tokens).
_PLAIN_PIECE = re.compile(r"([A-Za-z]+|[0-9]+(?:[.,][0-9]+)*)([,;:!?]|(?<=[a-z0-9])\.)?")

_Joins = tuple[frozenset[tuple[str, str]], set[str], set[str], dict[str, set[str]],
               dict[str, set[str]]]


@lru_cache(maxsize=1)
def _special_joins() -> _Joins:
    """What could make spaCy tokenize a piece of text differently inside a text than alone.

    spaCy's tokenizer splits a text at whitespace and tokenizes every run of non-space
    characters on its own (its own cache is keyed by the run), then looks for its special cases
    ("'cause", ":)", "10a.m." ...) again across the tokens of the whole text, as sequences of
    the tokens it would make of them without special cases (its phrase matcher). Only such a
    match across a space can make the tokens of a piece depend on its neighbours. Returned:
    the pairs of consecutive tokens of those sequences, and for the first / last token of each
    special case's own tokens the sequence's first / last token (what an edge token may have
    been before a special case replaced it)."""
    from spacy.symbols import ORTH
    from spacy.tokenizer import Tokenizer

    tokenizer = _spacy_tokenizer()
    plain = Tokenizer(tokenizer.vocab, rules={}, prefix_search=tokenizer.prefix_search,
                      suffix_search=tokenizer.suffix_search,
                      infix_finditer=tokenizer.infix_finditer,
                      token_match=tokenizer.token_match, url_match=tokenizer.url_match)
    pairs: set[tuple[str, str]] = set()
    first_alias: dict[str, set[str]] = {}
    last_alias: dict[str, set[str]] = {}
    for string, substrings in (tokenizer.rules or {}).items():
        if any(c.isspace() for c in string):
            continue
        pattern = [t.text for t in plain(string)]
        if not pattern:
            continue
        pairs.update(zip(pattern[:-1], pattern[1:]))
        orths = [d.get(ORTH, d.get("ORTH", "")) for d in substrings]
        if orths:
            first_alias.setdefault(orths[0], set()).add(pattern[0])
            last_alias.setdefault(orths[-1], set()).add(pattern[-1])
    lefts = {a for a, _ in pairs}
    rights = {b for _, b in pairs}
    return frozenset(pairs), lefts, rights, first_alias, last_alias


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
        # piece of text between whitespace -> its terms; and for the few pieces whose
        # first or last token may belong to a special case's sequence, those tokens
        self._pieces: dict[str, tuple[str, ...]] = {}
        self._edges: dict[str, tuple[Any, Any]] = {}

    def __call__(self, text: str) -> list[str]:
        """The terms of ``text``: the same as :meth:`reference`, faster. The text is cut at
        whitespace (:meth:`pieces`) and each piece is analyzed once per Analyzer (most pieces
        repeat); a text where a special case of spaCy could straddle a space (see
        :func:`_special_joins`) is analyzed whole instead."""
        parts = self.pieces(text)
        missing = set(parts).difference(self._pieces)
        if missing:
            self.add_pieces(self.analyze_pieces(list(missing)))
        return self.join(text, parts)

    @staticmethod
    def pieces(text: str) -> list[str]:
        """``text`` cut at whitespace: spaCy's tokenizer tokenizes each run of non-space
        characters on its own, and whitespace makes no term."""
        return text.split()

    def join(self, text: str, parts: list[str]) -> list[str]:
        """The terms of ``text``, cut into ``parts`` by :meth:`pieces`, from the memo of
        pieces (pieces not in it are analyzed here)."""
        try:
            if not self._edges.keys().isdisjoint(parts) and self._straddles(parts):
                return self.reference(text)
            return list(chain.from_iterable(map(self._pieces.__getitem__, parts)))
        except KeyError:  # the memo was emptied meanwhile
            entries = self.analyze_pieces(parts)
            self.add_pieces(entries)
            if any(_may_join(a[2], b[1]) for a, b in zip(
                    map(entries.__getitem__, parts[:-1]), map(entries.__getitem__, parts[1:]))
                   if a[2] is not None and b[1] is not None):
                return self.reference(text)
            return list(chain.from_iterable(entries[piece][0] for piece in parts))

    def _straddles(self, parts: list[str]) -> bool:
        edges = self._edges
        none = (None, None)
        tail = None
        for piece in parts:
            head, next_tail = edges.get(piece, none)
            if tail is not None and head is not None and _may_join(tail, head):
                return True
            tail = next_tail
        return False

    def reference(self, text: str) -> list[str]:
        """The terms of ``text`` from spaCy's tokens of the whole text (no memo)."""
        return self._terms(t.text for t in _spacy_tokenizer()(text))

    def _terms(self, tokens) -> list[str]:
        if self.lowercase:
            tokens = (t.lower() for t in tokens)
        words = [t for t in tokens if len(t) >= self.min_length and _WORD.fullmatch(t)]
        words = [w for w in words if w.lower() not in self._stops and w.lower() not in _CLITICS]
        return [self._norm(w) for w in words] if self._norm else words

    def add_pieces(self, entries: dict[str, tuple[tuple[str, ...], Any, Any]]) -> None:
        """Puts the analyzed pieces ``entries`` (from :meth:`analyze_pieces`) in the memo."""
        if len(self._pieces) + len(entries) >= _PIECE_MEMO_SIZE:
            self._pieces.clear()
            self._edges.clear()
        self._pieces[""] = ()
        for piece, (terms, head, tail) in entries.items():
            self._pieces[piece] = terms
            if head is not None or tail is not None:
                self._edges[piece] = (head, tail)

    def analyze_pieces(self, missing: list[str]) -> dict[str, tuple[tuple[str, ...], Any, Any]]:
        """Analyzes the pieces (no space in them): each gets the terms of the tokens spaCy makes
        of it alone (:func:`_piece_tokens`), and the edge tokens a special case could join."""
        missing = list(dict.fromkeys(p for p in missing if p))
        entries: dict[str, tuple[tuple[str, ...], Any, Any]] = {"": ((), None, None)}
        if not missing:
            return entries
        _, lefts, rights, first_alias, last_alias = _special_joins()
        for piece, its in _piece_tokens(missing):
            head = tail = None
            if its and not piece[0].isspace():
                heads = ({its[0]} | first_alias.get(its[0], set())) & rights
                head = frozenset(heads) if heads else None
            if its and not piece[-1].isspace():
                tails = ({its[-1]} | last_alias.get(its[-1], set())) & lefts
                tail = frozenset(tails) if tails else None
            entries[piece] = (tuple(self._terms(its)), head, tail)
        return entries

    def __getstate__(self):
        return {k: v for k, v in self.__dict__.items()
                if k not in ("_stops", "_norm", "_pieces", "_edges")}

    def __setstate__(self, state):
        self.__init__(**state)


def _piece_tokens(pieces: list[str]):
    """``(piece, its tokens' texts)`` for each piece (no space in it), as spaCy's tokenizer
    makes them of the piece alone (see :meth:`Analyzer.analyze_pieces`). Most new pieces are a
    plain word (ASCII letters) or a number (digits, inner points and commas), perhaps with one
    of ``, ; : ! ?`` after it, or a full stop after a lower-case letter or a digit
    (:data:`_PLAIN_PIECE`): unless the piece or its word is one of spaCy's special cases
    ("cannot", "dont", "Mr."), spaCy makes the word one token and the mark another (its suffix
    patterns split them; no prefix, infix or URL pattern matches such a word alone), and they
    skip the tokenizer. The others go through one call of it, joined by newlines (a whitespace
    token between any two, across which no special case can match; whitespace tokens are never
    terms)."""
    tokenizer = _spacy_tokenizer()
    rules = tokenizer.rules or {}
    others = []
    for piece in pieces:
        plain = _PLAIN_PIECE.fullmatch(piece)
        if plain and piece not in rules and plain[1] not in rules:
            yield piece, [token for token in plain.groups() if token]
        else:
            others.append(piece)
    if not others:
        return
    starts = []
    at = 0
    for piece in others:
        starts.append(at)
        at += len(piece) + 1
    tokens: list[list[str]] = [[] for _ in others]
    i = 0
    for token in tokenizer("\n".join(others)):
        if token.is_space:
            continue
        idx = token.idx
        while i + 1 < len(starts) and starts[i + 1] <= idx:
            i += 1
        tokens[i].append(token.text)
    yield from zip(others, tokens)


def _may_join(tails: frozenset[str], heads: frozenset[str]) -> bool:
    pairs = _special_joins()[0]
    return any((a, b) in pairs for a in tails for b in heads)


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

"""CiteULike: articles bookmarked and tagged by users (Hao Wang's citeulike-a / citeulike-t).

Files (``.dat`` or ``.dat.gz``, ids 0-based; a list line is ``<count> <id> <id> ...``):

``users.dat``      one line per user: the articles in the user's library
``tag-item.dat``   citeulike-t, one line per tag: the articles carrying it
``item-tag.dat``   citeulike-a, one line per article: its tags
``tags.dat``       one tag name per line
``citations.dat``  one line per article: the articles it is linked to by citation
``mult.dat``       one line per article: ``<count> <term>:<frequency> ...`` (the abstract's words)
``vocabulary.dat`` one word per line (the terms of ``mult.dat``)

The corpus has no class labels. Views (chosen as ``citeulike-t:<view>``):

``tags``     article × tag 0/1 matrix; vocabulary: the tag names
``users``    article × user 0/1 matrix; vocabulary: ``user <line number in users.dat>``
``terms``    article × word counts from ``mult.dat`` (citeulike-t; citeulike-a only where its
             ``mult.dat`` has been added); vocabulary: ``vocabulary.dat``
``combined`` the article–user and article–tag vectors joined as in Xiong et al., *Document
             clustering with an augmented NMF model* (paper 002, §5.2):
             ``[w · A_user | (1 − w) · A_tag]``, each block first weighted like a single view
             (``(1 + ln tf) · ln(N / df)``, which on 0/1 data is the idf) and scaled to unit
             rows, ``w = combined_weight``. The paper calls it a "linear combination of the
             article-user vectors and article-tag vectors"; as the two live in different
             spaces, the combination is this weighted concatenation. Its rows are already
             weighted (``metadata["weighted"]``).

Selection (paper 002, §5.1: "we excluded the articles, users and tags with less than four
bookmarks"): users and tags with fewer than ``min_count`` articles and articles with fewer than
``min_count`` users are dropped, **repeatedly until nothing changes** (dropping a user can take
an article below the threshold, and so on). So that every view holds the same articles (and
their clusterings can be compared), an article must also keep at least one tag and, where
``mult.dat`` is present, have at least one word. The counts before and after are in
``metadata["selection"]``.

``corpus.graph`` is the citation graph of the kept articles: symmetric, 0/1, no self loops
(``textcluster run ... --set graph=citations`` regularizes with it instead of the kNN graph).
"""

import re
from numbers import Integral, Real
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from ..._errors import CorpusFormatError, DataNotFoundError, InvalidInputError
from ..corpus import Corpus
from ...text.tfidf import tfidf
from ._files import find_file, has_file, reads, read_lines
from ._paths import StrPath, find_corpus_dir

SOURCES = {
    "citeulike-a": "https://github.com/js05212/citeulike-a",
    "citeulike-t": "https://github.com/js05212/citeulike-t",
}
VIEWS = ("tags", "users", "terms", "combined")
FEATURES = {"tags": "tags", "users": "users", "terms": "terms", "combined": "users and tags"}
# The file listing tags and whether its lines are articles (else tags).
TAG_FILES = {"citeulike-a": ("item-tag.dat", True), "citeulike-t": ("tag-item.dat", False)}


def citeulike_t_files(data_dir: StrPath | None = None, **_options: object) -> list[Path]:
    """The files :func:`load_citeulike_t` reads."""
    return list(citeulike_paths("citeulike-t", data_dir).values())


def citeulike_a_files(data_dir: StrPath | None = None, **_options: object) -> list[Path]:
    """The files :func:`load_citeulike_a` reads."""
    return list(citeulike_paths("citeulike-a", data_dir).values())


@reads(citeulike_t_files)
def load_citeulike_t(data_dir: StrPath | None = None, view: str = "tags", min_count: int = 4,
                     combined_weight: float = 0.5) -> Corpus:
    """citeulike-t (Wang, Chen & Li 2013: 25,975 articles, 7,947 users, 52,946 tags); see the
    module docstring for the views, the selection and the citation graph."""
    return load_citeulike("citeulike-t", data_dir, view, min_count, combined_weight)


@reads(citeulike_a_files)
def load_citeulike_a(data_dir: StrPath | None = None, view: str = "tags", min_count: int = 4,
                     combined_weight: float = 0.5) -> Corpus:
    """citeulike-a (Wang & Blei 2011: 16,980 articles, 5,551 users, 46,391 tags); see the
    module docstring. Its ``terms`` view needs ``mult.dat``, which not every copy has."""
    return load_citeulike("citeulike-a", data_dir, view, min_count, combined_weight)


load_citeulike_t.views = VIEWS
load_citeulike_a.views = VIEWS


def citeulike_paths(variant: str, data_dir: StrPath | None = None) -> dict[str, Path]:
    """``{file name: path}`` of every file of ``<data folder>/citeulike/<variant>/`` that the
    loader reads: the four it needs, and ``mult.dat`` and ``vocabulary.dat`` when present."""
    tag_file, _ = TAG_FILES[variant]
    needed = ["users.dat", tag_file, "tags.dat", "citations.dat"]
    folder = find_corpus_dir(f"citeulike/{variant}", [f"{name}*" for name in needed], data_dir,
                             source=SOURCES[variant])
    names = needed + [name for name in ("mult.dat", "vocabulary.dat") if has_file(folder, name)]
    return {name: find_file(folder, name) for name in names}


def load_citeulike(variant: str, data_dir: StrPath | None = None, view: str = "tags",
                   min_count: int = 4, combined_weight: float = 0.5) -> Corpus:
    """One view of ``<data_dir>/citeulike/<variant>/`` (``variant``: citeulike-a or -t)."""
    _check_options(view, min_count, combined_weight)
    paths = citeulike_paths(variant, data_dir)
    folder = paths["users.dat"].parent
    data = _read_all(paths, variant)
    if view == "terms" and data["terms"] is None:
        raise DataNotFoundError(
            f"the terms view of {variant} needs mult.dat and vocabulary.dat (the articles' "
            f"words), which are not in {folder}; get them from {SOURCES[variant]}, or use the "
            f"tags, users or combined view"
        )
    articles, users, tags, rounds = select(data["users"], data["tags"], min_count,
                                           _has_words(data["terms"]), f" in {folder}")
    return _corpus(variant, view, data, (articles, users, tags), {
        "min_count": min_count, "rounds": rounds,
        "articles": [int(data["users"].shape[0]), int(articles.size)],
        "users": [int(data["users"].shape[1]), int(users.size)],
        "tags": [int(data["tags"].shape[1]), int(tags.size)],
    }, combined_weight)


def _check_options(view, min_count, combined_weight):
    if view not in VIEWS:
        raise InvalidInputError(f"unknown CiteULike view {view!r}; views: {', '.join(VIEWS)}")
    if isinstance(min_count, bool) or not isinstance(min_count, Integral) or min_count < 1:
        raise InvalidInputError(f"min_count must be a whole number ≥ 1, got {min_count!r}")
    if (isinstance(combined_weight, bool) or not isinstance(combined_weight, Real)
            or not 0 <= combined_weight <= 1):
        raise InvalidInputError(
            f"combined_weight must be a number between 0 and 1 (the users' share), got "
            f"{combined_weight!r}"
        )


# -- selection -------------------------------------------------------------------------------


def select(article_user, article_tag, min_count, has_words=None, where=""):
    """Kept ``(articles, users, tags)`` positions and the number of rounds until stable.

    Users and tags need ``min_count`` kept articles; articles need ``min_count`` kept users, one
    kept tag and (``has_words``, when given) a word. ``where`` (e.g. ``" in <folder>"``) ends
    the error raised when no article is kept.
    """
    article_user, article_tag = sp.csc_matrix(article_user), sp.csc_matrix(article_tag)
    articles = np.ones(article_user.shape[0], dtype=bool)
    if has_words is not None:
        articles &= has_words
    users = np.ones(article_user.shape[1], dtype=bool)
    tags = np.ones(article_tag.shape[1], dtype=bool)
    rounds = 0
    while True:
        rounds += 1
        users_now = users & (_column_counts(article_user, articles) >= min_count)
        tags_now = tags & (_column_counts(article_tag, articles) >= min_count)
        articles_now = (articles & (_row_counts(article_user, users_now) >= min_count)
                        & (_row_counts(article_tag, tags_now) >= 1))
        if (articles_now == articles).all() and (users_now == users).all() \
                and (tags_now == tags).all():
            break
        articles, users, tags = articles_now, users_now, tags_now
    if not articles.any():
        raise InvalidInputError(
            f"no article has {min_count} users and a tag shared by {min_count} articles"
            f"{where}; lower min_count"
        )
    return np.flatnonzero(articles), np.flatnonzero(users), np.flatnonzero(tags), rounds


def _column_counts(matrix, rows):
    return np.asarray(matrix.T @ rows.astype(np.float64)).ravel()


def _row_counts(matrix, columns):
    return np.asarray(matrix @ columns.astype(np.float64)).ravel()


def _has_words(terms):
    return None if terms is None else np.diff(terms[0].indptr) > 0


# -- the corpus ------------------------------------------------------------------------------


def _corpus(variant, view, data, kept, selection, combined_weight):
    articles = kept[0]
    matrix, vocabulary = _view(view, data, kept, combined_weight)
    graph = data["citations"][articles][:, articles]
    return Corpus(
        name=f"{variant}:{view}",
        ids=articles.astype(str),
        matrix=matrix,
        vocabulary=vocabulary,
        graph=graph,
        metadata={
            "source": str(data["folder"]), "view": view, "features": FEATURES[view],
            "selection": selection, "weighted": view == "combined",
            "combined_weight": combined_weight if view == "combined" else None,
            "graph": "citations", "citation_links": int(graph.nnz // 2),
        },
    )


def _view(view, data, kept, combined_weight):
    """The documents × features matrix of one view and its vocabulary."""
    articles, users, tags = kept
    user_block = data["users"][articles][:, users]
    tag_block = data["tags"][articles][:, tags]
    user_names = np.array([f"user {u}" for u in users])
    tag_names = data["tag_names"][tags]
    if view == "users":
        return user_block, user_names
    if view == "tags":
        return tag_block, tag_names
    if view == "terms":
        counts, words = data["terms"]
        return counts[articles], words
    matrix = sp.hstack([combined_weight * _unit_tfidf(user_block),
                        (1 - combined_weight) * _unit_tfidf(tag_block)], format="csr")
    return matrix, np.concatenate([user_names, tag_names])


def _unit_tfidf(block):
    return tfidf(block, weighting="cai", normalize=True, drop_empty_terms=False)[0]


# -- reading ---------------------------------------------------------------------------------


def _read_all(paths, variant):
    """Every matrix of the files ``paths`` (:func:`citeulike_paths`), over all articles (rows
    of ``citations.dat``)."""
    tag_file, lines_are_articles = TAG_FILES[variant]
    citations = read_lists(paths["citations.dat"])
    n_articles = len(citations)
    tag_names = read_names(paths["tags.dat"])
    users = read_lists(paths["users.dat"])
    tag_lists = read_lists(paths[tag_file])
    if lines_are_articles:
        article_tag = incidence(tag_lists, len(tag_names), paths[tag_file])
        _check_rows(article_tag, n_articles, paths[tag_file], "articles")
    else:
        article_tag = incidence(tag_lists, n_articles, paths[tag_file]).T.tocsr()
        _check_rows(article_tag.T, len(tag_names), paths[tag_file], "tags")
    return {
        "folder": paths["users.dat"].parent,
        "users": incidence(users, n_articles, paths["users.dat"]).T.tocsr(),
        "tags": article_tag,
        "tag_names": tag_names,
        "citations": citation_graph(citations, paths["citations.dat"]),
        "terms": _read_terms(paths, n_articles) if "mult.dat" in paths else None,
    }


def _read_terms(paths, n_articles):
    path = paths["mult.dat"]
    if "vocabulary.dat" not in paths:
        raise DataNotFoundError(f"{path.parent} has mult.dat but no vocabulary.dat or "
                                f"vocabulary.dat.gz (the words of its term ids); add it")
    words = read_names(paths["vocabulary.dat"])
    counts = read_counts(path, len(words))
    _check_rows(counts, n_articles, path, "articles")
    return counts, words


def _check_rows(matrix, expected, path, what):
    if matrix.shape[0] != expected:
        raise CorpusFormatError(
            f"{path} has {matrix.shape[0]} lines but the corpus has {expected} {what}; the "
            f"files do not belong together (re-download the folder)"
        )


def read_names(path):
    """One name per line (tags.dat, vocabulary.dat)."""
    return np.array([line.strip() for line in read_lines(path)], dtype=object).astype(str)


def read_lists(path):
    """``<count> <id> <id> ...`` lines as a list of integer arrays (a blank line is empty)."""
    lists = []
    for number, line in enumerate(read_lines(path), start=1):
        values = _whole_numbers(path, number, line, _LIST_LINE,
                                "is not '<count> <id> <id> ...' with whole numbers ≥ 0")
        if values and values[0] != len(values) - 1:
            raise _bad_line(path, number, line, f"starts with the count {values[0]} but lists "
                            f"{len(values) - 1} ids")
        lists.append(np.array(values[1:], dtype=np.int64))
    return lists


def read_counts(path, n_terms):
    """``mult.dat``: ``<count> <term>:<frequency> ...`` lines as a sparse count matrix."""
    lines = read_lines(path)
    rows, terms, counts = [], [], []
    for number, line in enumerate(lines, start=1):
        values = _whole_numbers(path, number, line, _MULT_LINE, _MULT_FORMAT)
        if values and values[0] != (len(values) - 1) // 2:
            raise _bad_line(path, number, line, _MULT_FORMAT)
        rows += [number - 1] * (len(values) // 2)
        terms += values[1::2]
        counts += values[2::2]
    terms = np.array(terms, dtype=np.int64)
    if terms.size and terms.max() >= n_terms:
        row = rows[int(np.argmax(terms >= n_terms))]
        raise _bad_line(path, row + 1, lines[row], f"names term {int(terms.max())}, but "
                        f"vocabulary.dat has {n_terms} words (terms 0..{n_terms - 1})")
    return sp.csr_matrix((np.array(counts, dtype=np.float64), (rows, terms)),
                         shape=(len(lines), n_terms))


def _whole_numbers(path, number, line, pattern, expected):
    """The whole numbers of line ``number`` of ``path`` if it matches ``pattern``."""
    if not pattern.fullmatch(line):
        raise _bad_line(path, number, line, expected)
    values = list(map(int, line.replace(":", " ").split()))
    if values and max(values) > LARGEST:
        raise _bad_line(path, number, line, f"holds the number {max(values)}, too large for "
                        f"an id or a count (at most {LARGEST})")
    return values


LARGEST = 2**53  # larger than any id or count; float64 holds every whole number up to it
_LIST_LINE = re.compile(r"\s*(?:\d+(?:\s+\d+)*)?\s*")
_MULT_LINE = re.compile(r"\s*(?:\d+(?:\s+\d+:\d+)*)?\s*")
_MULT_FORMAT = "is not '<count> <term>:<frequency> ...' with whole numbers ≥ 0"


def incidence(lists, n_columns, path):
    """0/1 matrix with a row per list and a 1 in the columns it names."""
    rows = np.repeat(np.arange(len(lists)), [len(ids) for ids in lists])
    columns = np.concatenate(lists) if lists else np.zeros(0, dtype=np.int64)
    if columns.size and columns.max() >= n_columns:
        row = int(rows[np.argmax(columns >= n_columns)])
        raise _bad_line(path, row + 1, None,
                        f"names id {int(columns.max())}, but there are only {n_columns} ids "
                        f"(0..{n_columns - 1})")
    matrix = sp.csr_matrix((np.ones(columns.size), (rows, columns)),
                           shape=(len(lists), n_columns))
    matrix.data[:] = 1.0  # an id listed twice counts once
    return matrix


def citation_graph(lists, path):
    """Symmetric 0/1 article graph from ``citations.dat``, without self loops."""
    links = incidence(lists, len(lists), path)
    graph = links.maximum(links.T).tocoo()
    off_diagonal = graph.row != graph.col
    return sp.csr_matrix((graph.data[off_diagonal],
                          (graph.row[off_diagonal], graph.col[off_diagonal])),
                         shape=graph.shape)


def _bad_line(path, number, line, reason):
    shown = "" if line is None else f" ({line[:60]!r}{'...' if len(line) > 60 else ''})"
    return CorpusFormatError(f"{path}, line {number}{shown}: {reason}; re-download the file")

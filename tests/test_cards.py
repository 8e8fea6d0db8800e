"""Corpus cards: every registered corpus has a valid card that agrees with its loader."""

import gzip
import inspect
import os

import pytest

from textcluster.corpora import cards
from textcluster._errors import CorpusFormatError
from textcluster.corpora.loaders import CORPORA, _paths, load_corpus
from textcluster.pipeline import PREPROCESS_DEFAULTS
from textcluster.registry import UnknownNameError

CARDS = cards.load_cards()
MATRIX_PREPROCESSING = {"weighting", "dtype", "empty_documents"}
TEXT_PREPROCESSING = {k for k, v in PREPROCESS_DEFAULTS.items() if v is not None}

VALID = """
name = "mini"
title = "A mini corpus"
description = "Two files."
homepage = "https://example.org/mini"
folder = "mini"
labels = "the class"
labelled = true
licence = "public domain"
citation = "nobody"
compression = ["gz"]

[[sources]]
url = "https://example.org/mini/a.txt"

[files]
"a.txt" = "%s"

[optional_files]
"b.txt" = ""

[selection]
top = 3
""" % ("ab" * 32)


@pytest.fixture
def no_default_data(tmp_path, monkeypatch):
    monkeypatch.delenv(_paths.DATA_ENV, raising=False)
    monkeypatch.setattr(_paths, "default_cache_dir", lambda: tmp_path / "default-data")


def write_card(folder, text, name="mini.toml"):
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


# -- the built-in cards ---------------------------------------------------------------------------


def test_every_registered_corpus_has_a_card_and_every_card_a_corpus():
    without_card = [name for name in CORPORA.names() if cards.find_card(name) is None]
    without_corpus = [name for name in CARDS if name not in CORPORA]
    assert not without_card and not without_corpus, (
        f"corpora without a card: {without_card}; cards without a corpus: {without_corpus}"
    )


@pytest.mark.parametrize("name", sorted(CARDS))
def test_card_selection_is_the_loaders_default(name):
    parameters = inspect.signature(CORPORA.get(name)).parameters
    defaults = {p: v.default for p, v in parameters.items()
                if p != "data_dir" and v.default is not None}
    assert CARDS[name].selection == defaults


@pytest.mark.parametrize("name", sorted(CARDS))
def test_card_preprocessing_is_textclusters_default(name):
    card = CARDS[name]
    assert set(card.preprocessing) in (TEXT_PREPROCESSING, MATRIX_PREPROCESSING)
    for key, value in card.preprocessing.items():
        if key == "weighting" and value == "tf":  # already weighted rows (see the real-data test)
            continue
        assert value == PREPROCESS_DEFAULTS[key], key


@pytest.mark.parametrize("name", sorted(CARDS))
def test_card_fields(name):
    card = CARDS[name]
    assert card.path.name == f"{name.replace(':', '-')}.toml"  # cluto:tr31 -> cluto-tr31.toml
    assert all(s.url.startswith(("http://", "https://")) for s in card.sources)
    assert card.sources or "no download reproduces" in card.checksums  # and says why
    assert card.files and not set(card.files) & set(card.optional_files)
    assert card.licence and card.citation and card.labels


def test_a_view_uses_its_corpus_card():
    assert cards.get_card("citeulike-t:users") is CARDS["citeulike-t"]


def test_a_name_with_a_colon_uses_its_own_card_when_there_is_one():
    assert cards.get_card("cluto:tr31") is CARDS["cluto:tr31"]
    assert cards.find_card("cluto:tr31").files == {
        "tr31.mat": "15065e333877ee25607bc2fd3646c2ff32688fd393604ba9552bba567b23826d",
        "tr31.mat.rclass": "1a6b9ca5e9ed38be346bd742a27f7f939e3c83e06d7fdb7728c5da011c158c11"}
    with pytest.raises(UnknownNameError, match="no corpus card 'cluto'.*cluto:tr31"):
        cards.get_card("cluto")


def test_unknown_card_lists_the_known_ones():
    with pytest.raises(UnknownNameError, match="no corpus card 'nope'.*reuters.*tdt2"):
        cards.get_card("nope")
    assert cards.find_card("some/folder") is None


# -- parsing and checking a card ------------------------------------------------------------------


def test_valid_card_parses(tmp_path):
    card = cards.load_card(write_card(tmp_path, VALID))
    assert card.name == "mini" and card.files == {"a.txt": "ab" * 32}
    assert card.optional_files == {"b.txt": None}
    assert card.sources[0].filename == "a.txt" and card.sources[0].sha256 is None
    assert not card.sources[0].is_archive
    assert card.selection == {"top": 3} and card.compression == ("gz",)


@pytest.mark.parametrize("change, field", [
    (lambda t: t.replace('title = "A mini corpus"\n', ""), "title"),
    (lambda t: t.replace('"ab', '"zz'), "files.a.txt"),
    (lambda t: t.replace("https://example.org/mini/a.txt", "ftp://example.org/a.txt"),
     "sources[0].url"),
    (lambda t: t.replace('folder = "mini"', 'folder = "../mini"'), "folder"),
    (lambda t: t.replace('folder = "mini"', 'folder = "/etc"'), "folder"),
    (lambda t: t.replace("labelled = true", 'labelled = "yes"'), "labelled"),
    (lambda t: t.replace('compression = ["gz"]', 'compression = ["rar"]'), "compression"),
    (lambda t: "size = 3\n" + t, "size"),
    (lambda t: t.replace('"a.txt" = ', '"../a.txt" = '), "files.../a.txt"),
    (lambda t: t.replace("[[sources]]\nurl = \"https://example.org/mini/a.txt\"\n", ""),
     "sources"),
])
def test_bad_card_names_the_file_and_field(tmp_path, change, field):
    path = write_card(tmp_path, change(VALID))
    with pytest.raises(CorpusFormatError) as info:
        cards.load_card(path)
    assert str(path) in str(info.value) and repr(field) in str(info.value)


def test_card_without_downloads_says_so_with_an_empty_list(tmp_path):
    text = VALID.replace("[[sources]]\nurl = \"https://example.org/mini/a.txt\"\n",
                         "sources = []\n")
    assert cards.load_card(write_card(tmp_path, text)).sources == ()


def test_card_that_is_not_toml(tmp_path):
    path = write_card(tmp_path, "name = \n")
    with pytest.raises(CorpusFormatError, match="not valid TOML"):
        cards.load_card(path)


def test_two_cards_for_one_corpus(tmp_path):
    write_card(tmp_path, VALID, "a.toml")
    write_card(tmp_path, VALID, "b.toml")
    with pytest.raises(CorpusFormatError, match="already has the card"):
        cards.load_cards(tmp_path)


# -- finding a corpus' files ----------------------------------------------------------------------


def test_files_are_found_plain_or_compressed(tmp_path):
    card = cards.load_card(write_card(tmp_path / "cards", VALID))
    folder = tmp_path / "mini"
    folder.mkdir()
    assert not card.is_complete(folder)
    (folder / "a.txt.gz").write_bytes(gzip.compress(b"hello"))
    assert card.is_complete(folder)
    assert card.present_files(folder) == {"a.txt": folder / "a.txt.gz"}
    assert card.expected_sha256("a.txt.gz") == ("a.txt", "ab" * 32, True)
    assert card.expected_sha256("a.txt") == ("a.txt", "ab" * 32, False)
    assert card.expected_sha256("other.txt") is None
    assert cards.file_sha256(folder / "a.txt.gz", decompress=True) == \
        cards.file_sha256(write_card(tmp_path, "hello", "plain.txt"))


def test_locate_takes_the_first_complete_folder(tmp_path, no_default_data, monkeypatch):
    card = cards.load_card(write_card(tmp_path / "cards", VALID))
    first, second = tmp_path / "first", tmp_path / "second"
    (first / "mini").mkdir(parents=True)
    (second / "mini").mkdir(parents=True)
    (second / "mini" / "a.txt").write_text("x")
    monkeypatch.setenv(_paths.DATA_ENV, str(second))
    assert card.locate(first) == second / "mini"  # first/mini lacks a.txt
    (first / "mini" / "a.txt").write_text("x")
    assert card.locate(first) == first / "mini"
    assert card.locate(tmp_path / "nowhere") == second / "mini"


# -- the cards against the real data --------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(CARDS))
def test_card_checksums_match_the_real_files(real_data_dir, name):
    card = CARDS[name]
    folder = real_data_dir / card.folder
    present = card.present_files(folder)
    if not present:
        pytest.skip(f"{name} is not in {real_data_dir}")
    for file_name, path in present.items():
        expected = card.all_files[file_name]
        if expected is not None:
            assert cards.file_sha256(path, decompress=path.name != file_name) == expected, path


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CARDS))
def test_card_files_are_all_the_loader_needs(real_data_dir, tmp_path, no_default_data, name):
    """A data folder holding only the card's files loads, and agrees with the card."""
    card = CARDS[name]
    source = card.locate(real_data_dir)
    if source is None:
        pytest.skip(f"{name} is not in {real_data_dir}")
    target = tmp_path / "data" / card.folder
    target.mkdir(parents=True)
    for path in card.present_files(source).values():
        os.symlink(path, target / path.name)
    corpus = load_corpus(name, data_dir=tmp_path / "data")
    assert (corpus.labels is not None) == card.labelled
    expected_keys = TEXT_PREPROCESSING if corpus.texts is not None else MATRIX_PREPROCESSING
    assert set(card.preprocessing) == expected_keys
    weighted = bool(corpus.metadata.get("weighted"))
    assert (card.preprocessing["weighting"] == "tf") == weighted


def test_sector_card_matches_its_loader(tmp_path, no_default_data):
    """SECTOR (not available offline) from tiny LIBSVM files: rows come weighted, so the card's
    default weighting only scales them ("tf"), and the card's files are what the loader reads."""
    folder = tmp_path / CARDS["sector"].folder
    folder.mkdir(parents=True)
    for name in CARDS["sector"].files:
        (folder / name).write_text("1 1:0.6 2:0.8\n2 3:1.0\n", encoding="ascii")
    corpus = load_corpus("sector", data_dir=tmp_path, min_class_size=None)
    assert corpus.metadata["weighted"] and CARDS["sector"].preprocessing["weighting"] == "tf"
    assert CARDS["sector"].is_complete(folder)

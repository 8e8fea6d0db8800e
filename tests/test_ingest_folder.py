"""Folder corpora: one .txt file per document, one sub-folder per class."""

import pytest

from textcluster._errors import CorpusFormatError, DataNotFoundError, InvalidInputError
from textcluster.corpora.loaders import load_corpus, load_folder, resolve_loader
from textcluster.corpora.loaders.folder import without_headers
from textcluster.registry import UnknownNameError


def write(path, text="some words", encoding="utf-8"):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode(encoding) if isinstance(text, str) else text)
    return path


@pytest.fixture
def labelled(tmp_path):
    root = tmp_path / "news"
    for label, n in [("sports", 3), ("space", 2), ("cooking", 1)]:
        for i in range(n):
            write(root / label / f"doc{i}.txt", f"{label} document {i}")
    return root


def test_labelled_folder(labelled):
    corpus = load_folder(labelled)
    assert corpus.name == "news"
    assert list(corpus.ids) == ["cooking/doc0", "space/doc0", "space/doc1", "sports/doc0",
                                "sports/doc1", "sports/doc2"]
    assert list(corpus.labels) == ["cooking", "space", "space", "sports", "sports", "sports"]
    assert corpus.texts[1] == "space document 0"
    assert corpus.matrix is None and corpus.vocabulary is None
    assert corpus.class_sizes == {"sports": 3, "space": 2, "cooking": 1}
    assert corpus.metadata["source"] == str(labelled)
    assert corpus.metadata["pattern"] == "*.txt"
    assert corpus.metadata["latin1_fallback"] == []


def test_unlabelled_flat_folder(tmp_path):
    for name in ["b", "a", "c"]:
        write(tmp_path / "flat" / f"{name}.txt", f"text {name}")
    corpus = load_folder(tmp_path / "flat")
    assert corpus.labels is None
    assert list(corpus.ids) == ["a", "b", "c"] and corpus.texts == ["text a", "text b", "text c"]
    assert len(corpus.classes) == 0


def test_mixed_layout_is_rejected(labelled):
    write(labelled / "stray.txt")
    with pytest.raises(CorpusFormatError, match="both at its top level and in sub-folders"):
        load_folder(labelled)


def test_empty_folder(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(CorpusFormatError, match=r"no \.txt files .* in .*empty.*folder is empty"):
        load_folder(tmp_path / "empty")


def test_folder_without_matching_files(tmp_path):
    write(tmp_path / "c" / "notes.md")
    write(tmp_path / "c" / "a" / "b" / "too-deep.txt")
    with pytest.raises(CorpusFormatError, match="no"):
        load_folder(tmp_path / "c")


def test_files_without_an_extension_when_there_is_no_txt(tmp_path):
    # the layout of 20 Newsgroups: <group>/<number>
    for group, numbers in [("sci.space", ["60160", "60161"]), ("alt.atheism", ["49960"])]:
        for number in numbers:
            write(tmp_path / "news" / group / number, f"{group} post {number}")
    write(tmp_path / "news" / "sci.space" / "notes.md")
    corpus = load_folder(tmp_path / "news")
    assert list(corpus.ids) == ["alt.atheism/49960", "sci.space/60160", "sci.space/60161"]
    assert list(corpus.labels) == ["alt.atheism", "sci.space", "sci.space"]
    assert corpus.texts[0] == "alt.atheism post 49960"
    assert corpus.metadata["pattern"] == "no extension"
    write(tmp_path / "news" / "sci.space" / "extra.txt", "a text file")  # .txt files first
    assert list(load_folder(tmp_path / "news").ids) == ["sci.space/extra"]


POST = ("From: someone@example.org (Some One)\nSubject: Re: orbits\nNewsgroups: sci.space,\n"
        "  sci.astro\nLines: 2\n\nThe shuttle reached orbit.\nSubject: not a header here\n")


def test_strip_headers_drops_the_header_block_of_posts(tmp_path):
    write(tmp_path / "news" / "sci.space" / "60160", POST)
    write(tmp_path / "news" / "sci.space" / "60161", "Note: no header block\nplain text\n")
    kept, stripped = (load_folder(tmp_path / "news", strip_headers=s) for s in (False, True))
    assert kept.texts[0] == POST and stripped.metadata["strip_headers"] is True
    assert stripped.texts == ["The shuttle reached orbit.\nSubject: not a header here",
                              "Note: no header block\nplain text\n"]
    assert without_headers("Subject: only headers\nFrom: x") == ""
    assert without_headers("") == "" and without_headers("a text: x\n") == "a text: x\n"
    with pytest.raises(InvalidInputError, match="strip_headers must be true or false"):
        load_folder(tmp_path / "news", strip_headers="yes")


def test_documents_deeper_down_name_the_folders_to_give(tmp_path):
    for split in ("train", "test"):
        write(tmp_path / "bydate" / split / "sci.space" / "60160", "post")
    with pytest.raises(CorpusFormatError, match=r"deeper, in sub-folders of test, train: give "
                                                r"the path of one of those folders"):
        load_folder(tmp_path / "bydate")


def test_missing_folder(tmp_path):
    with pytest.raises(DataNotFoundError, match="does not exist") as err:
        load_folder(tmp_path / "nowhere")
    assert isinstance(err.value, FileNotFoundError)


def test_a_file_is_not_a_folder(tmp_path):
    with pytest.raises(DataNotFoundError, match="not a folder"):
        load_folder(write(tmp_path / "doc.txt"))


def test_latin1_file_is_decoded_with_fallback(tmp_path):
    root = tmp_path / "mixed"
    write(root / "a" / "utf8.txt", "Müller café")
    latin = write(root / "a" / "latin.txt", "Müller café", encoding="latin-1")
    corpus = load_folder(root)
    texts = dict(zip(corpus.ids, corpus.texts))
    assert texts == {"a/latin": "Müller café", "a/utf8": "Müller café"}
    assert corpus.metadata["latin1_fallback"] == [str(latin)]


def test_utf8_bom_is_removed(tmp_path):
    write(tmp_path / "bom" / "doc.txt", "\ufeffHello world")
    corpus = load_folder(tmp_path / "bom")
    assert corpus.texts == ["Hello world"]
    assert corpus.metadata["latin1_fallback"] == []


def test_hidden_files_and_folders_are_skipped(labelled):
    write(labelled / ".ipynb_checkpoints" / "doc0-checkpoint.txt")
    write(labelled / "sports" / "._doc0.txt", b"\x00\x05\x16\x07\xff")
    corpus = load_folder(labelled)
    assert corpus.n_docs == 6 and ".ipynb_checkpoints" not in set(corpus.labels)


def test_sub_folders_named_like_documents_are_ignored(labelled):
    (labelled / "sports" / "folder.txt").mkdir()
    assert load_folder(labelled).n_docs == 6


def test_pattern(tmp_path):
    write(tmp_path / "c" / "x" / "one.md", "markdown")
    write(tmp_path / "c" / "x" / "two.txt", "text")
    corpus = load_folder(tmp_path / "c", pattern="*.md")
    assert list(corpus.ids) == ["x/one"] and corpus.texts == ["markdown"]
    with pytest.raises(InvalidInputError, match="pattern"):
        load_folder(tmp_path / "c", pattern=3)


def test_min_class_size_and_top(labelled):
    assert load_folder(labelled, min_class_size=2).class_sizes == {"sports": 3, "space": 2}
    assert load_folder(labelled, top=1).class_sizes == {"sports": 3}
    assert load_folder(labelled, min_class_size=2, top=5).n_docs == 5
    assert load_folder(labelled, top=10).n_docs == 6


def test_class_selection_errors(labelled, tmp_path):
    with pytest.raises(InvalidInputError, match="leaves no document"):
        load_folder(labelled, min_class_size=4)
    for bad in [0, -1, "2", 1.5, True]:
        with pytest.raises(InvalidInputError, match="top must be a whole number"):
            load_folder(labelled, top=bad)
    write(tmp_path / "flat" / "a.txt")
    with pytest.raises(InvalidInputError, match="no class labels"):
        load_folder(tmp_path / "flat", top=1)


def test_load_corpus_takes_a_folder_path(labelled):
    corpus = load_corpus(str(labelled), top=2)
    assert corpus.class_sizes == {"sports": 3, "space": 2}
    # data_dir is accepted (and not needed) like for every loader
    assert load_corpus(str(labelled), data_dir="elsewhere").n_docs == 6
    with pytest.raises(InvalidInputError, match="no option 'split'.*pattern, min_class_size"):
        load_corpus(str(labelled), split="all")


def test_resolve_loader_names_the_missing_folder(tmp_path):
    with pytest.raises(UnknownNameError, match="known corpora: .*no folder"):
        resolve_loader(str(tmp_path / "nowhere"))

"""CLUTO term-count matrices, in CLUTO's format and ntyaan's converted one: small files written
here (plain and gzip), every way a file can be wrong, and the panel's sets by name."""

import gzip
import re
from pathlib import Path

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp
from click.testing import CliRunner

from textcluster.corpora import cache
from textcluster._errors import CorpusFormatError, DataNotFoundError, InvalidInputError
from textcluster.cli import main
from textcluster.corpora.loaders import CORPORA, _paths, load_corpus, load_cluto, resolve_loader
from textcluster.corpora.loaders.cluto import SETS
from textcluster.registry import UnknownNameError

DENSE = np.array([[3, 0, 1, 0], [0, 2, 0, 0], [0, 0, 0, 0], [1, 1, 0, 5]], dtype=float)
LABELS = ["a", "b", "a", "c"]
TERMS = ["alpha", "beta", "gamma", "delta"]
CLASS_ORDER = ["c", "a", "b"]  # the one-hot lines, in an order of their own


def cluto_text(dense=DENSE):
    """CLUTO's format: header ``n m nnz``, 1-based ``term value`` pairs (values as floats)."""
    rows = [" ".join(f"{j + 1} {v:.2f}" for j, v in enumerate(row) if v) for row in dense]
    return f"{dense.shape[0]} {dense.shape[1]} {int((dense != 0).sum())}\n" + "\n".join(rows)


def converted_text(dense=DENSE):
    """The converted format: header ``n m``, then ``nnz term value ...`` with 0-based ids."""
    rows = [" ".join([str(int((row != 0).sum()))]
                     + [f"{j} {int(v)}" for j, v in enumerate(row) if v]) for row in dense]
    return f"{dense.shape[0]} {dense.shape[1]}\n" + "".join(f"{row} \n" for row in rows)


def one_hot_text(labels=LABELS, order=CLASS_ORDER):
    return "".join(" ".join("1" if label == c else "0" for label in labels) + " \n"
                   for c in order)


def write(path, text, gz=False):
    """``path`` (or ``path.gz``) holding ``text``; returns the path written."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if gz:
        path = path.with_name(path.name + ".gz")
        path.write_bytes(gzip.compress(text.encode()))
    else:
        path.write_text(text, encoding="utf-8")
    return path


def write_cluto(folder, name="set", gz=False, text=None, labels=LABELS, terms=TERMS):
    matrix = write(folder / f"{name}.mat", cluto_text() if text is None else text, gz)
    if labels is not None:
        write(folder / f"{name}.mat.rclass", "".join(f"{c}\n" for c in labels))
    if terms is not None:
        write(folder / f"{name}.mat.clabel", "".join(f"{t}\n" for t in terms))
    return matrix


def write_converted(folder, name="set", gz=False, text=None, labels=LABELS,
                    one_hot=one_hot_text()):
    matrix = write(folder / f"sparse_{name}.txt", converted_text() if text is None else text, gz)
    if labels is not None:
        write(folder / f"{name}.rclass", "".join(f"{c}\n" for c in labels))
    if one_hot is not None:
        write(folder / f"{name}_correct.txt", one_hot, gz)
    return matrix


@pytest.fixture
def no_default_data(tmp_path, monkeypatch):
    """Only ``data_dir`` is searched: no ``$TEXTCLUSTER_DATA``, an empty default folder."""
    monkeypatch.delenv(_paths.DATA_ENV, raising=False)
    monkeypatch.setattr(_paths, "default_cache_dir", lambda: tmp_path / "default-data")


# -- the two formats ------------------------------------------------------------------------------


@pytest.mark.parametrize("gz", [False, True])
def test_cluto_format_with_labels_and_vocabulary(tmp_path, gz):
    corpus = load_cluto(write_cluto(tmp_path, gz=gz))
    assert isinstance(corpus.matrix, sp.csr_matrix) and corpus.matrix.dtype == np.float64
    np.testing.assert_array_equal(corpus.matrix.toarray(), DENSE)
    assert list(corpus.labels) == LABELS and list(corpus.vocabulary) == TERMS
    assert list(corpus.ids) == ["0", "1", "2", "3"] and corpus.name == "set"
    assert corpus.metadata["empty_documents"] == ["2"]  # kept; a run reports or drops it
    assert corpus.metadata["format"] == "CLUTO sparse matrix"
    assert corpus.metadata["labels_from"] == "set.mat.rclass"
    assert corpus.metadata["source_files"] == [f"set.mat{'.gz' if gz else ''}", "set.mat.rclass",
                                               "set.mat.clabel"]


@pytest.mark.parametrize("gz", [False, True])
def test_converted_format_with_rclass_checked_against_the_one_hot_classes(tmp_path, gz):
    corpus = load_cluto(write_converted(tmp_path, gz=gz))
    np.testing.assert_array_equal(corpus.matrix.toarray(), DENSE)
    assert list(corpus.labels) == LABELS and corpus.vocabulary is None
    assert corpus.metadata["format"] == "CLUTO, converted (ntyaan)"
    assert corpus.metadata["labels_from"] == "set.rclass"
    assert corpus.metadata["empty_documents"] == ["2"]


def test_converted_classes_fall_back_to_the_one_hot_lines(tmp_path):
    corpus = load_cluto(write_converted(tmp_path, labels=None))
    # line 1 of the one-hot matrix is class "c", line 2 "a", line 3 "b"
    assert list(corpus.labels) == ["class-2", "class-3", "class-2", "class-1"]
    assert corpus.metadata["labels_from"] == "set_correct.txt"


def test_without_label_files_the_corpus_is_unlabelled(tmp_path):
    assert load_cluto(write_cluto(tmp_path, labels=None, terms=None)).labels is None
    assert load_cluto(write_converted(tmp_path, labels=None, one_hot=None)).labels is None


def test_fbis_style_clabel_is_no_vocabulary(tmp_path):
    """fbis' clabel: a line of class ids, then C4.5 attribute declarations, not terms."""
    terms = ["100,108,11"] + [f"word-{j}: continuous." for j in range(4)]
    corpus = load_cluto(write_cluto(tmp_path, terms=terms))
    assert corpus.vocabulary is None
    assert "declares C4.5 attributes" in corpus.metadata["vocabulary_note"]


def test_selection_options(tmp_path):
    corpus = load_cluto(write_cluto(tmp_path), min_class_size=2)
    assert list(corpus.labels) == ["a", "a"] and list(corpus.ids) == ["0", "2"]


def test_lenient_where_nothing_is_lost(tmp_path):
    """Windows line ends, blank lines at the end, integer or float values, a term listed twice
    (summed), an explicit zero (dropped)."""
    text = "2 3 3\r\n1 1 1 2.5\r\n3 0\r\n\r\n\r\n"
    corpus = load_cluto(write_cluto(tmp_path, text=text, labels=["x", "y", ""], terms=None))
    np.testing.assert_array_equal(corpus.matrix.toarray(), [[3.5, 0, 0], [0, 0, 0]])
    assert corpus.matrix.nnz == 1 and list(corpus.labels) == ["x", "y"]


# -- bad files ------------------------------------------------------------------------------------


def _cut(text, lines):
    return "\n".join(text.splitlines()[:lines]) + "\n"


CLUTO_ERRORS = [  # (file content, what the message must say)
    ("", "line 1: the file is empty"),
    ("four 4 6\n", "line 1: 'four 4 6' is not the header 'n_docs n_terms nnz'"),
    ("4 4\n", "a 3-number header is CLUTO's"),
    ("0 4 0\n", "line 1: the header '0 4 0' declares an empty matrix"),
    ("MATLAB 5.0 MAT-file, Platform: GLNXA64\n", "it is a MATLAB file"),
    (_cut(cluto_text(), 3), "says 4 documents but only 2 lines follow; the file is truncated"),
    (cluto_text() + "\n1 1.00\n", "line 6: the header (line 1) says 4 documents but more"),
    (cluto_text().replace("4 4 6", "4 4 9"), "says 9 non-zeros but the 4 document lines hold 6"),
    (cluto_text().replace("4 4 6", "4 3 6"), "line 5 ('1 1.00 2 1.00 4 5.00'): term id 4 is "
                                             "not one of the 3 terms the header (line 1) "
                                             "declares (ids 1..3, 1-based)"),
    (cluto_text().replace("2 2.00", "0 2.00"), "line 3 ('0 2.00'): term id 0 is not one of"),
    (cluto_text().replace("2 2.00", "1.5 2.00"), "term id 1.5 is not one of"),
    (cluto_text().replace("2 2.00", "2 -2.00"), "line 3 ('2 -2.00'): term 2 has the value -2"),
    (cluto_text().replace("2 2.00", "2 nan"), "term 2 has the value nan; term counts must be "
                                              "finite and non-negative"),
    (cluto_text().replace("2 2.00", "2 inf"), "term 2 has the value inf"),
    (cluto_text().replace("2 2.00", "2 2,0"), "line 3 ('2 2,0'): '2,0' is not a number"),
    (cluto_text().replace("2 2.00", "2 2.00 3"), "line 3 ('2 2.00 3'): has a term id without "
                                                 "its value"),
]


@pytest.mark.parametrize("text, message", CLUTO_ERRORS)
def test_bad_cluto_file(tmp_path, text, message):
    path = write_cluto(tmp_path, text=text, labels=None, terms=None)
    with pytest.raises(CorpusFormatError) as info:
        load_cluto(path)
    assert str(path) in str(info.value) and message in str(info.value)
    assert "re-download" in str(info.value)  # and what to do


CONVERTED_ERRORS = [
    (converted_text().replace("4 4\n", "4 4 7\n"), "a 3-number header is CLUTO's"),
    (converted_text().replace("1 1 2", "2 1 2"), "line 3 ('2 1 2'): starts with the count 2 "
                                                 "but lists 1 term-value pairs"),
    (converted_text().replace("1 1 2", "1 4 2"), "term id 4 is not one of the 4 terms the "
                                                 "header (line 1) declares (ids 0..3, 0-based)"),
    (converted_text().replace("1 1 2", "1 -1 2"), "term id -1 is not one of"),
    (converted_text().replace("1 1 2", "1 1 -2"), "term 1 has the value -2"),
    (_cut(converted_text(), 4), "says 4 documents but only 3 lines follow"),
]


@pytest.mark.parametrize("text, message", CONVERTED_ERRORS)
def test_bad_converted_file(tmp_path, text, message):
    path = write_converted(tmp_path, text=text, labels=None, one_hot=None)
    with pytest.raises(CorpusFormatError) as info:
        load_cluto(path)
    assert str(path) in str(info.value) and message in str(info.value)


@pytest.mark.parametrize("write_matrix", [write_cluto, write_converted])
def test_truncated_gzip_file(tmp_path, write_matrix):
    path = write_matrix(tmp_path, gz=True)
    path.write_bytes(path.read_bytes()[:-12])
    with pytest.raises(CorpusFormatError, match="truncated or corrupt: re-download it"):
        load_cluto(path)


@pytest.mark.parametrize("labels, message", [
    (LABELS[:3], "set.mat.rclass has 3 classes (one per line) but the matrix has 4 documents"),
    (LABELS + ["b"], "has 5 classes (one per line) but the matrix has 4 documents"),
    (["a", "", "a", "c"], "set.mat.rclass, line 2 is blank: every document needs a class"),
])
def test_labels_that_do_not_fit_the_matrix(tmp_path, labels, message):
    with pytest.raises(CorpusFormatError, match=re.escape(message)):
        load_cluto(write_cluto(tmp_path, labels=labels))


def test_vocabulary_that_does_not_fit_the_matrix(tmp_path):
    with pytest.raises(CorpusFormatError, match=r"has 3 terms \(one per line\) but the matrix "
                                                r"has 4 columns.*remove set.mat.clabel"):
        load_cluto(write_cluto(tmp_path, terms=TERMS[:3]))


@pytest.mark.parametrize("one_hot, message", [
    ("1 0 1\n0 1 0\n", "set_correct.txt, line 1 .*has 3 entries but the matrix has 4 documents"),
    ("1 0 1 0\n0 2 0 1\n", "holds values other than 0 and 1"),
    ("1 0 1 0\n1 1 0 1\n", "document 0 .* is in 2 classes"),
    ("1 0 1 0\n0 1 0 0\n", "document 3 .* is in 0 classes"),
    ("1 0 x 0\n0 1 0 1\n", "line 1 .*'x' is not a number"),
])
def test_bad_one_hot_classes(tmp_path, one_hot, message):
    with pytest.raises(CorpusFormatError, match=message):
        load_cluto(write_converted(tmp_path, one_hot=one_hot))


@pytest.mark.parametrize("labels", [["a", "b", "b", "c"], ["a", "b", "d", "c"]])
def test_rclass_and_one_hot_classes_must_group_the_documents_alike(tmp_path, labels):
    with pytest.raises(CorpusFormatError, match="set.rclass and .*set_correct.txt disagree: "
                                                "document 2 .*remove set.rclass"):
        load_cluto(write_converted(tmp_path, labels=labels))


def test_missing_or_misnamed_file(tmp_path):
    with pytest.raises(DataNotFoundError, match="does not exist"):
        load_cluto(tmp_path / "nope.mat")
    with pytest.raises(InvalidInputError, match="name it <name>.mat"):
        load_cluto(write(tmp_path / "matrix.txt", cluto_text()))


# -- by path, from load_corpus and the command line -----------------------------------------------


def test_a_cluto_path_is_a_corpus_name(tmp_path):
    for path in (write_cluto(tmp_path / "a"), write_cluto(tmp_path / "b", gz=True),
                 write_converted(tmp_path / "c")):
        corpus = load_corpus(str(path), min_class_size=2)
        assert list(corpus.labels) == ["a", "a"]


def test_a_matlab_file_is_told_apart_by_its_content(tmp_path):
    """Deng Cai's .mat files are MATLAB files; a .mat holding text is a CLUTO matrix."""
    matlab = tmp_path / "matlab" / "set.mat"
    matlab.parent.mkdir()
    scipy.io.savemat(matlab, {"fea": sp.csc_matrix(DENSE), "gnd": np.array([[1], [2], [1], [3]])})
    corpus = load_corpus(str(matlab))
    assert corpus.metadata["format"].startswith("Deng Cai MATLAB")
    assert list(corpus.labels) == ["1", "2", "1", "3"]
    cluto = load_corpus(str(write_cluto(tmp_path / "cluto")))
    assert cluto.metadata["format"] == "CLUTO sparse matrix"


def test_the_cache_key_of_a_cluto_path_covers_its_label_files(tmp_path):
    path = write_cluto(tmp_path)
    digests = cache.source_file_digests(str(path), None, {})
    assert [Path(name).name for name, _ in digests] == ["set.mat", "set.mat.rclass",
                                                        "set.mat.clabel"]
    write(tmp_path / "set.mat.rclass", "a\na\na\nc\n")
    assert cache.source_file_digests(str(path), None, {}) != digests


def test_run_on_a_cluto_file_and_on_a_broken_one(tmp_path, monkeypatch):
    monkeypatch.setenv(cache.CACHE_ENV, str(tmp_path / "cache"))
    dense = np.repeat(np.eye(3) * 4, 4, axis=0)  # 12 documents, 3 classes, a term each
    labels = [str(i // 4) for i in range(12)]
    path = write_cluto(tmp_path, text=cluto_text(dense), labels=labels, terms=None)
    runner = CliRunner()
    result = runner.invoke(main, ["run", str(path), "--model", "nmf", "--set", "n_init=2",
                                  "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    assert "nmi" in result.output
    path.write_text(cluto_text(dense).replace("12 3 12", "12 3 40"))
    result = runner.invoke(main, ["run", str(path), "--model", "nmf"])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "says 40 non-zeros" in " ".join(result.output.split())


# -- the panel's sets by name ---------------------------------------------------------------------


def test_every_panel_set_is_registered_as_cluto_set():
    assert {f"cluto:{name}" for name in SETS} <= set(CORPORA.names())
    assert len(SETS) == 14
    assert set(SETS.values()) == {"panel/cluto_karypis", "panel/cluto_ntyaan"}


def test_named_sets_read_their_folder(tmp_path, no_default_data):
    write_cluto(tmp_path / "panel" / "cluto_karypis", name="tr31", gz=True)
    write_converted(tmp_path / "panel" / "cluto_ntyaan", name="k1b", gz=True)
    tr31 = load_corpus("cluto:tr31", data_dir=tmp_path)
    k1b = load_corpus("cluto:k1b", data_dir=tmp_path, top=1)
    assert tr31.name == "cluto:tr31" and tr31.metadata["set"] == "tr31"
    assert list(tr31.vocabulary) == TERMS and list(k1b.labels) == ["a", "a"]


def test_a_missing_set_says_where_it_was_looked_for(tmp_path, no_default_data):
    with pytest.raises(DataNotFoundError) as info:
        load_corpus("cluto:re0", data_dir=tmp_path)
    message = str(info.value)
    assert "sparse_re0.txt*" in message and str(tmp_path / "panel" / "cluto_ntyaan") in message
    assert "github.com/ntyaan/some-datasets" in message


def test_unknown_set_lists_the_known_ones():
    with pytest.raises(UnknownNameError, match="unknown corpus 'cluto:nope'.*cluto:tr31"):
        resolve_loader("cluto:nope")

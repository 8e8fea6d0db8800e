"""LIBSVM multiclass files and the SECTOR loader, on files written by the tests."""

import bz2

import numpy as np
import pytest

from textcluster._errors import CorpusFormatError, DataNotFoundError, InvalidInputError
from textcluster.corpora.loaders import _paths, load_corpus, load_libsvm, load_sector
from textcluster.corpora.loaders.libsvm import line_error

N_FEATURES = 55197


@pytest.fixture
def no_default_data(tmp_path, monkeypatch):
    monkeypatch.delenv(_paths.DATA_ENV, raising=False)
    monkeypatch.setattr(_paths, "default_cache_dir", lambda: tmp_path / "default-cache")


def libsvm_lines(classes, rng, n_features=N_FEATURES, per_doc=6):
    """One LIBSVM line per entry of ``classes``: unit-length rows over random features."""
    lines = []
    for label in classes:
        index = np.sort(rng.choice(n_features, size=per_doc, replace=False)) + 1
        values = rng.uniform(0.1, 1.0, size=per_doc)
        values /= np.linalg.norm(values)
        lines.append(f"{label} " + " ".join(f"{i}:{v:.6f}" for i, v in zip(index, values)))
    return "\n".join(lines) + "\n"


def write_sector(root, train, test, compress=False):
    folder = root / "sector"
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in (("sector.scale", train), ("sector.t.scale", test)):
        if text is None:
            continue
        if compress:
            (folder / f"{name}.bz2").write_bytes(bz2.compress(text.encode()))
        else:
            (folder / name).write_text(text)
    return folder


@pytest.fixture
def sector_dir(tmp_path):
    """Train: classes 1 (60 docs), 2 (30), 3 (5); test: 1 (10), 2 (25), 3 (2)."""
    rng = np.random.default_rng(0)
    train = libsvm_lines([1] * 60 + [2] * 30 + [3] * 5, rng)
    test = libsvm_lines([1] * 10 + [2] * 25 + [3] * 2, rng)
    write_sector(tmp_path, train, test)
    return tmp_path


def test_train_and_test_are_merged_and_small_classes_dropped(sector_dir):
    corpus = load_sector(sector_dir)
    # class 3 has 7 < 50 documents; class 2 reaches 55 only with the test documents
    assert corpus.class_sizes == {"1": 70, "2": 55}
    assert corpus.n_docs == 125 and corpus.matrix.shape[0] == 125
    assert corpus.ids[0] == "train-0" and corpus.ids[-1] == "test-34"
    assert corpus.metadata["weighted"] is True and corpus.metadata["split"] == "all"
    assert corpus.metadata["documents_per_file"] == {"sector.scale": 95, "sector.t.scale": 37}
    norms = np.sqrt(np.asarray(corpus.matrix.multiply(corpus.matrix).sum(axis=1)).ravel())
    assert np.allclose(norms, 1, atol=1e-5)  # the values are kept as they are


def test_splits_and_class_filter_option(sector_dir):
    assert load_sector(sector_dir, split="train").class_sizes == {"1": 60}
    assert load_sector(sector_dir, split="train", min_class_size=None).class_sizes == {
        "1": 60, "2": 30, "3": 5}
    test = load_sector(sector_dir, split="test", min_class_size=1)
    assert test.n_docs == 37 and test.ids[0] == "test-0"
    assert load_sector(sector_dir, min_class_size=1, top=1).class_sizes == {"1": 70}
    with pytest.raises(InvalidInputError, match="unknown SECTOR split 'dev'"):
        load_sector(sector_dir, split="dev")


def test_feature_space_is_shared(tmp_path):
    # the test file's largest index is smaller than the training file's
    write_sector(tmp_path, "1 1:0.5 100:0.5\n" * 50, "1 3:1.0\n" * 50)
    corpus = load_sector(tmp_path)
    assert corpus.matrix.shape == (100, 100)
    assert corpus.matrix[0, 99] == 0.5 and corpus.matrix[50, 2] == 1.0


def test_bz2_files(tmp_path):
    rng = np.random.default_rng(1)
    write_sector(tmp_path, libsvm_lines([4] * 50, rng), libsvm_lines([4] * 3, rng),
                 compress=True)
    corpus = load_sector(tmp_path)
    assert corpus.n_docs == 53 and corpus.metadata["source_files"] == [
        "sector.scale.bz2", "sector.t.scale.bz2"]


def test_sector_shaped_file(tmp_path):
    """105 classes and features up to index 55,197, as in the real SECTOR files."""
    rng = np.random.default_rng(2)
    classes = np.repeat(np.arange(1, 106), 2)
    train = libsvm_lines(classes, rng) + f"105 {N_FEATURES}:1.0\n"
    write_sector(tmp_path, train, libsvm_lines(np.arange(1, 106), rng), compress=True)
    corpus = load_sector(tmp_path, min_class_size=None)
    assert corpus.matrix.shape == (316, N_FEATURES)
    assert len(corpus.classes) == 105 and corpus.class_sizes["105"] == 4
    assert corpus.matrix[210, N_FEATURES - 1] == 1.0


def test_load_libsvm_directly(tmp_path):
    path = tmp_path / "data.svm"
    path.write_text("# a comment line\n2 1:1 3:2\n\n7 2:0.5 # trailing comment\n")
    corpus = load_libsvm([str(path)])
    assert list(corpus.labels) == ["2", "7"] and corpus.ids.tolist() == ["data.svm-0",
                                                                         "data.svm-1"]
    assert corpus.matrix.toarray().tolist() == [[1, 0, 2], [0, 0.5, 0]]


@pytest.mark.parametrize("line, line_number, reason", [
    ("1 1:0.5 2:x", 3, "'2:x' is not <index>:<value>"),
    ("one 1:0.5", 3, "the class 'one' is not a number"),
    ("1 1:0.5 3", 3, "'3' is not <index>:<value>"),
    ("1 0:0.5", 3, "indices start at 1"),
    ("1 4:0.5 2:0.5", 3, "not larger than the one before"),
    ("1 1:nan", 3, "values must be finite and ≥ 0"),
    ("1 1:-0.5", 3, "values must be finite and ≥ 0"),
])
def test_malformed_line_is_named(tmp_path, line, line_number, reason):
    text = "1 1:0.5 2:0.5\n2 3:1\n" + line + "\n1 1:1\n"
    folder = write_sector(tmp_path, text, "1 1:1\n")
    with pytest.raises(CorpusFormatError) as err:
        load_sector(tmp_path)
    message = str(err.value)
    assert f"{folder / 'sector.scale'}, line {line_number}" in message
    assert reason in message


@pytest.mark.parametrize("line, reason", [
    ("1 1:0.5 10000000000:1", "feature index 10000000000 is too large"),
    ("1 99999999999999999999999:1", "feature index 99999999999999999999999 is too large"),
    ("nan 1:0.5", "the class 'nan' is not a finite number"),
    ("inf 1:0.5", "the class 'inf' is not a finite number"),
    ("-Infinity 2:1", "the class '-Infinity' is not a finite number"),
])
def test_huge_index_and_non_finite_class_name_file_and_line(tmp_path, line, reason):
    path = tmp_path / "data.svm"
    path.write_text("1 1:0.5 2:0.5\n2 3:1\n" + line + "\n1 1:1\n")
    with pytest.raises(CorpusFormatError) as err:
        load_libsvm([path])
    message = str(err.value)
    assert f"{path}, line 3" in message and reason in message


def test_malformed_line_in_a_bz2_test_file(tmp_path):
    folder = write_sector(tmp_path, "1 1:1\n" * 3, "1 1:1\n1 1:1:1\n", compress=True)
    with pytest.raises(CorpusFormatError, match=r"sector\.t\.scale\.bz2, line 2"):
        load_sector(tmp_path)
    assert folder.is_dir()


def test_corrupt_bz2(tmp_path):
    folder = write_sector(tmp_path, "1 1:1\n" * 2000, "1 1:1\n", compress=True)
    data = (folder / "sector.scale.bz2").read_bytes()
    (folder / "sector.scale.bz2").write_bytes(data[: len(data) // 2])
    with pytest.raises(CorpusFormatError, match="truncated or corrupt") as err:
        load_sector(tmp_path)
    assert "sector.scale.bz2" in str(err.value) and "libsvmtools" in str(err.value)
    (folder / "sector.scale.bz2").write_bytes(b"this is not bzip2 data")
    with pytest.raises(CorpusFormatError, match="sector.scale.bz2"):
        load_sector(tmp_path)


def test_missing_files_say_where_to_download(tmp_path, no_default_data):
    with pytest.raises(DataNotFoundError) as err:
        load_sector(tmp_path)
    message = str(err.value)
    assert str(tmp_path / "sector") in message
    assert "https://www.csie.ntu.edu.tw/~cjlin/libsvmtools/datasets/multiclass.html#sector" in (
        message)
    write_sector(tmp_path, "1 1:1\n", None)
    assert load_sector(tmp_path, split="train", min_class_size=1).n_docs == 1
    with pytest.raises(DataNotFoundError, match="sector.t.scale"):
        load_sector(tmp_path)


def test_registered_as_sector(sector_dir):
    assert load_corpus("sector", data_dir=sector_dir, split="test", min_class_size=1).n_docs == 37


def test_line_error():
    assert line_error("3 1:0.1 2:0.2 qid:4") is None
    assert line_error("3") is None  # a document without features
    assert "not a number" in line_error("a,b 1:1")

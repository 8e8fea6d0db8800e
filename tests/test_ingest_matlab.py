"""Deng Cai MATLAB loaders (TDT2, Reuters-21578): tiny .mat files written here, plus real data."""

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp

from textcluster._errors import CorpusFormatError, DataNotFoundError, InvalidInputError
from textcluster.corpora.loaders import CORPORA, _paths, load_corpus, load_reuters_cai, load_tdt2
from textcluster.corpora.loaders.matlab import load_cai_mat

FEA = np.array([[1, 0, 2, 0], [0, 3, 0, 0], [4, 0, 0, 1], [0, 0, 5, 0], [1, 1, 0, 0]], float)
GND = np.array([[2], [1], [2], [3], [2]], dtype=np.uint8)


def write_mat(path, fea=FEA, gnd=GND, sparse=True, **extra):
    path.parent.mkdir(parents=True, exist_ok=True)
    if sparse and fea is not None:
        fea = sp.csc_matrix(fea)
    variables = {"fea": fea, "gnd": gnd, **extra}
    scipy.io.savemat(path, {k: v for k, v in variables.items() if v is not None})
    return path


@pytest.fixture
def cai_dir(tmp_path):
    """A data dir with ``tdt2/TDT2.mat``, ``tdt2/TDT2_all.mat`` and the Reuters .mat."""
    write_mat(tmp_path / "tdt2" / "TDT2.mat")
    write_mat(tmp_path / "tdt2" / "TDT2_all.mat", gnd=np.array([[2], [1], [2], [3], [4]]))
    write_mat(tmp_path / "reuters21578_cai" / "Reuters21578.mat", trainIdx=np.arange(1, 4))
    return tmp_path


@pytest.fixture
def no_default_data(tmp_path, monkeypatch):
    """Only ``data_dir`` is searched: no ``$TEXTCLUSTER_DATA``, an empty default folder."""
    monkeypatch.delenv(_paths.DATA_ENV, raising=False)
    monkeypatch.setattr(_paths, "default_cache_dir", lambda: tmp_path / "default-cache")


def test_tdt2_matrix_labels_and_ids(cai_dir):
    corpus = load_tdt2(cai_dir)
    assert isinstance(corpus.matrix, sp.csr_matrix) and corpus.matrix.dtype == np.float64
    np.testing.assert_array_equal(corpus.matrix.toarray(), FEA)
    assert list(corpus.labels) == ["2", "1", "2", "3", "2"]
    assert list(corpus.ids) == ["0", "1", "2", "3", "4"]
    assert corpus.vocabulary is None and corpus.texts is None
    assert corpus.name == "tdt2"
    assert corpus.metadata["source_files"] == ["TDT2.mat"]
    assert corpus.metadata["variant"] == "top30"


def test_tdt2_all_variant_reads_the_other_file(cai_dir):
    corpus = load_tdt2(cai_dir, variant="all")
    assert list(corpus.classes) == ["1", "2", "3", "4"]
    assert corpus.metadata["source_files"] == ["TDT2_all.mat"]


def test_tdt2_bad_variant(cai_dir):
    with pytest.raises(InvalidInputError, match="allowed: top30, all"):
        load_tdt2(cai_dir, variant="top20")


def test_class_selection_keeps_file_numbering_and_row_ids(cai_dir):
    corpus = load_tdt2(cai_dir, min_class_size=2)
    assert list(corpus.labels) == ["2", "2", "2"]
    assert list(corpus.ids) == ["0", "2", "4"]
    assert corpus.matrix.shape == (3, 4)
    assert list(load_reuters_cai(cai_dir, top=1).classes) == ["2"]


def test_reuters_cai(cai_dir):
    corpus = load_reuters_cai(cai_dir)
    assert corpus.name == "reuters-cai" and corpus.matrix.shape == (5, 4)
    assert corpus.metadata["source_files"] == ["Reuters21578.mat"]


def test_dense_fea_and_row_vector_gnd_are_accepted(tmp_path):
    path = write_mat(tmp_path / "x.mat", sparse=False, gnd=GND.ravel().astype(float))
    corpus = load_cai_mat(path)
    assert corpus.matrix.nnz == 8 and list(corpus.labels) == ["2", "1", "2", "3", "2"]


def test_truncated_mat_names_the_file(cai_dir):
    path = cai_dir / "tdt2" / "TDT2.mat"
    data = path.read_bytes()
    for size in (10, 100, 200, len(data) - 20):
        path.write_bytes(data[:size])
        with pytest.raises(CorpusFormatError, match=r"TDT2\.mat"):
            load_tdt2(cai_dir)


def test_not_a_mat_file(tmp_path):
    path = tmp_path / "junk.mat"
    path.write_bytes(b"this is not a MATLAB file\n" * 20)
    with pytest.raises(CorpusFormatError, match=r"junk\.mat .*re-download"):
        load_cai_mat(path)


@pytest.mark.parametrize("missing", ["fea", "gnd"])
def test_missing_variable(tmp_path, missing):
    path = write_mat(tmp_path / "x.mat", **{missing: None})
    with pytest.raises(CorpusFormatError, match=rf"x\.mat has no variable '{missing}'"):
        load_cai_mat(path)


def test_shape_mismatch(tmp_path):
    path = write_mat(tmp_path / "x.mat", gnd=GND[:4])
    with pytest.raises(CorpusFormatError, match=r"x\.mat: 'gnd' has 4 entries but 'fea' has 5"):
        load_cai_mat(path)


def test_matrix_gnd_is_rejected(tmp_path):
    path = write_mat(tmp_path / "x.mat", gnd=np.ones((5, 2)))
    with pytest.raises(CorpusFormatError, match="expected a vector"):
        load_cai_mat(path)


def test_non_integer_gnd_is_rejected(tmp_path):
    path = write_mat(tmp_path / "x.mat", gnd=GND + 0.5)
    with pytest.raises(CorpusFormatError, match="non-integer"):
        load_cai_mat(path)


def test_negative_counts_are_rejected(tmp_path):
    fea = FEA.copy()
    fea[1, 1] = -3
    path = write_mat(tmp_path / "x.mat", fea=fea)
    with pytest.raises(CorpusFormatError, match=r"x\.mat: 'fea' holds negative values"):
        load_cai_mat(path)


def test_missing_file_given_directly(tmp_path):
    with pytest.raises(DataNotFoundError, match="TextData.html"):
        load_cai_mat(tmp_path / "absent.mat")


@pytest.mark.parametrize(
    "loader, subdir", [(load_tdt2, "tdt2"), (load_reuters_cai, "reuters21578_cai")]
)
def test_missing_folder_says_where_it_looked(tmp_path, no_default_data, loader, subdir):
    with pytest.raises(DataNotFoundError) as info:
        loader(tmp_path / "nowhere")
    message = str(info.value)
    assert str(tmp_path / "nowhere" / subdir) in message
    assert str(tmp_path / "default-cache") not in message  # an explicit folder is the only one
    assert "dengcai/Data/TextData.html" in message


def test_registry_names():
    assert {"reuters", "reuters-cai", "tdt2"} <= set(CORPORA.names())
    assert CORPORA.get("tdt2") is load_tdt2


def test_load_corpus_passes_options(cai_dir):
    assert load_corpus("tdt2", cai_dir, variant="all").metadata["variant"] == "all"
    assert load_corpus("reuters-cai", data_dir=cai_dir, top=2).n_docs == 4


def test_load_corpus_errors(cai_dir):
    with pytest.raises(InvalidInputError, match="'variant'.*min_class_size, top"):
        load_corpus("reuters-cai", cai_dir, variant="all")
    with pytest.raises(KeyError, match="unknown corpus 'nope'.*reuters, reuters-cai, .*tdt2"):
        load_corpus("nope", cai_dir)


# --- real data -------------------------------------------------------------------------------


def need(real_data_dir, relative):
    if not (real_data_dir / relative).is_file():
        pytest.skip(f"{real_data_dir / relative} is not available")


@pytest.mark.realdata
def test_real_tdt2(real_data_dir):
    need(real_data_dir, "tdt2/TDT2.mat")
    corpus = load_tdt2(real_data_dir)
    assert corpus.matrix.shape == (9394, 36771)
    assert corpus.matrix.nnz == 1224135
    assert len(corpus.classes) == 30
    assert set(corpus.classes) == {str(i) for i in range(1, 31)}
    assert corpus.class_sizes["1"] == 1844
    assert len(np.unique(corpus.ids)) == 9394


@pytest.mark.realdata
def test_real_reuters_cai(real_data_dir):
    need(real_data_dir, "reuters21578_cai/Reuters21578.mat")
    corpus = load_reuters_cai(real_data_dir)
    assert corpus.matrix.shape == (8293, 18933)
    assert corpus.matrix.nnz == 389455
    assert len(corpus.classes) == 65
    assert max(corpus.class_sizes.values()) == 3713

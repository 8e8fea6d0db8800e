"""The development panel's 20 corpora by name: six CSV text corpora and 14 CLUTO sets. A small
CSV written here, and every corpus of the real panel against the numbers of its README."""

import gzip

import pytest

from textcluster.corpora import cards
from textcluster._errors import DataNotFoundError
from textcluster.corpora.loaders import CORPORA, _paths, load_corpus
from textcluster.corpora.loaders.panel import TABLES

# name: (documents, classes, largest class size, terms, non-zeros) as the panel READMEs give
# them (terms and non-zeros only for the CLUTO matrices; the CSVs hold raw text).
PANEL = {
    "agnews": (7600, 4, 1900, None, None),
    "classic4": (7095, 4, 3204, None, None),
    "dbpedia": (14000, 14, 1000, None, None),
    "r8": (7674, 8, 3923, None, None),
    "stackoverflow": (20000, 20, 1000, None, None),
    "biomedical": (20000, 20, 1000, None, None),
    "cluto:fbis": (2463, 17, 506, 2000, 393386),
    "cluto:tr31": (927, 7, 352, 10128, 248903),
    "cluto:tr41": (878, 10, 243, 7454, 171509),
    "cluto:tr45": (690, 10, 160, 8261, 193605),
    "cluto:wap": (1560, 20, 341, 8460, 220482),
    "cluto:re0": (1504, 13, 608, 2886, 77808),
    "cluto:k1a": (2340, 20, 494, 21839, 349792),
    "cluto:k1b": (2340, 6, 1389, 21839, 349792),
    "cluto:hitech": (2301, 6, 603, 126321, 346881),
    "cluto:la1": (3204, 6, 943, 31472, 484024),
    "cluto:la2": (3075, 6, 905, 31472, 455383),
    "cluto:tr11": (414, 9, 132, 6429, 116613),
    "cluto:tr12": (313, 8, 93, 5804, 85640),
    "cluto:tr23": (204, 6, 91, 5832, 78609),
}
CSV = "id,text,label\nd1,Wheat prices rose,grain\nd2,\"Oil, crude and gas\",crude\nd3,Maize,grain\n"


@pytest.fixture
def no_default_data(tmp_path, monkeypatch):
    """Only ``data_dir`` is searched: no ``$TEXTCLUSTER_DATA``, an empty default folder."""
    monkeypatch.delenv(_paths.DATA_ENV, raising=False)
    monkeypatch.setattr(_paths, "default_cache_dir", lambda: tmp_path / "default-data")


def test_every_panel_corpus_is_registered_with_a_card():
    assert set(PANEL) <= set(CORPORA.names())
    assert set(TABLES) == {name for name in PANEL if ":" not in name}
    for name in PANEL:
        card = cards.get_card(name)
        assert card.name == name and card.folder.startswith("panel/")


def test_a_panel_table_is_read_from_its_folder(tmp_path, no_default_data):
    folder = tmp_path / "panel" / "r8"
    folder.mkdir(parents=True)
    (folder / "r8.csv.gz").write_bytes(gzip.compress(CSV.encode()))
    corpus = load_corpus("r8", data_dir=tmp_path)
    assert corpus.name == "r8" and list(corpus.ids) == ["d1", "d2", "d3"]
    assert corpus.texts[1] == "Oil, crude and gas" and list(corpus.labels) == [
        "grain", "crude", "grain"]
    assert list(load_corpus("r8", data_dir=tmp_path, top=1).ids) == ["d1", "d3"]


def test_a_missing_panel_table_says_where_to_put_it(tmp_path, no_default_data):
    with pytest.raises(DataNotFoundError) as info:
        load_corpus("agnews", data_dir=tmp_path)
    message = str(info.value)
    assert "agnews.csv.gz" in message and str(tmp_path / "panel" / "agnews") in message
    assert "Put them there, or pass the folder holding panel/agnews/" in message


# -- the real panel -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def panel_data_dir(real_data_dir):
    if not (real_data_dir / "panel").is_dir():
        pytest.skip(f"the development panel is not available: no folder panel in "
                    f"{real_data_dir}")
    return real_data_dir


@pytest.mark.parametrize("name", sorted(PANEL))
def test_panel_corpus_loads_by_name_as_its_readme_says(panel_data_dir, name):
    """Loading only (the CSVs are not tokenized): documents, classes, the largest class and,
    for the CLUTO matrices, terms and non-zeros."""
    n_docs, n_classes, largest, n_terms, nnz = PANEL[name]
    corpus = load_corpus(name, data_dir=panel_data_dir)
    assert corpus.n_docs == n_docs and len(corpus.classes) == n_classes
    assert max(corpus.class_sizes.values()) == largest
    assert len(set(corpus.ids)) == n_docs
    if n_terms is None:
        assert corpus.matrix is None and all(isinstance(t, str) for t in corpus.texts)
    else:
        assert corpus.matrix.shape == (n_docs, n_terms) and corpus.matrix.nnz == nnz
        assert corpus.metadata["empty_documents"] == []  # the READMEs: no empty documents
        has_vocabulary = name in ("cluto:tr31", "cluto:tr41", "cluto:tr45", "cluto:wap")
        assert (corpus.vocabulary is not None) == has_vocabulary

"""The on-disk cache of parsed corpora and term counts."""

import json
import warnings

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp

import textcluster
from textcluster.corpora import cache

from textcluster import pipeline
from textcluster._errors import DataNotFoundError, InvalidInputError
from textcluster.corpora.corpus import Corpus
from textcluster.corpora.loaders import _paths
from textcluster.corpora import load_corpus as load_uncached
from textcluster.progress import reporting_progress

from ._corpora import write_folder_corpus


@pytest.fixture(autouse=True)
def cache_dir(tmp_path, monkeypatch):
    """A fresh cache for every test; only ``--data-dir`` is searched for corpora."""
    folder = tmp_path / "cache"
    monkeypatch.setenv(cache.CACHE_ENV, str(folder))
    monkeypatch.delenv(_paths.DATA_ENV, raising=False)
    monkeypatch.setattr(_paths, "default_cache_dir", lambda: tmp_path / "default-data")
    return folder


@pytest.fixture
def corpus_dir(tmp_path):
    return write_folder_corpus(tmp_path / "news", n_per_class=6)


@pytest.fixture
def calls(monkeypatch):
    """How often the real loader and the tokenizer ran."""
    counted = {"load": 0, "count": 0}

    def load(*args, **kwargs):
        counted["load"] += 1
        return load_uncached(*args, **kwargs)

    def count(*args, **kwargs):
        counted["count"] += 1
        return original_count(*args, **kwargs)

    original_count = pipeline.prepare.count_terms
    monkeypatch.setattr(pipeline.prepare.ingest, "load_corpus", load)
    monkeypatch.setattr(pipeline.prepare, "count_terms", count)
    return counted


@pytest.fixture
def strict():
    """Fail on any cache warning (the normal path must not warn)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", cache.CacheWarning)
        yield


def write_tdt2(data_dir, n=40, m=60, seed=0):
    folder = data_dir / "tdt2"
    folder.mkdir(parents=True, exist_ok=True)
    fea = sp.random(n, m, density=0.2, format="csc", random_state=seed) * 5
    fea.data = np.ceil(fea.data)
    scipy.io.savemat(folder / "TDT2.mat", {"fea": fea, "gnd": np.repeat([1, 2], n // 2)[:, None]})
    return folder / "TDT2.mat"


def assert_same_corpus(a, b):
    assert a.name == b.name and a.metadata == b.metadata
    for field in ("ids", "labels", "vocabulary"):
        x, y = getattr(a, field), getattr(b, field)
        assert (x is None and y is None) or (x.dtype == y.dtype and np.array_equal(x, y)), field
    assert a.texts == b.texts
    for field in ("matrix", "graph"):
        x, y = getattr(a, field, None), getattr(b, field, None)
        assert (x is None and y is None) or (x.shape == y.shape and (x != y).nnz == 0), field


def entry_dirs(kind):
    folder = cache.location() / kind
    return sorted(p for p in folder.iterdir() if not p.name.startswith(".")) \
        if folder.is_dir() else []


# -- parsed corpora -------------------------------------------------------------------------------


def test_second_load_reads_the_cache(corpus_dir, calls, strict):
    first = pipeline.load_corpus(str(corpus_dir))
    second = pipeline.load_corpus(str(corpus_dir))
    assert calls["load"] == 1 and len(entry_dirs("corpus")) == 1
    assert_same_corpus(first, second)
    assert_same_corpus(second, load_uncached(str(corpus_dir)))


def test_matrix_corpus_round_trip(tmp_path, calls, strict):
    write_tdt2(tmp_path / "data")
    first = pipeline.load_corpus("tdt2", data_dir=tmp_path / "data")
    second = pipeline.load_corpus("tdt2", data_dir=tmp_path / "data")
    assert calls["load"] == 1
    assert_same_corpus(first, second)


def test_every_corpus_field_round_trips(strict):
    graph = sp.csr_matrix(np.array([[0, 1, 0], [1, 0, 0], [0, 0, 0]], dtype=float))
    corpus = Corpus(name="all", ids=["a", "b", "c"], labels=["x", "y", "x"],
                    texts=["one", "two ünïcode", ""],
                    matrix=sp.csr_matrix(np.arange(6, dtype=np.float32).reshape(3, 2)),
                    vocabulary=["t0", "t1"], graph=graph,
                    metadata={"nested": {"list": [1, 2.5, None, "s"]}, "flag": True})
    key = cache._key("corpus", name="all", options={}, files=[["x", "0"]])
    cache.save_corpus(key, corpus)
    assert_same_corpus(corpus, cache.load_corpus(key))
    assert cache.load_corpus(key).matrix.dtype == np.float32


def test_metadata_json_cannot_hold_exactly_is_not_cached(corpus_dir, strict):
    corpus = Corpus(name="odd", ids=["a"], texts=["x"], metadata={"shape": (1, 2)})
    key = cache._key("corpus", name="odd", options={}, files=[["x", "0"]])
    cache.save_corpus(key, corpus)  # a tuple would come back as a list
    assert cache.load_corpus(key) is None and entry_dirs("corpus") == []


def test_changed_file_or_options_miss_the_cache(corpus_dir, calls, strict):
    pipeline.load_corpus(str(corpus_dir))
    pipeline.load_corpus(str(corpus_dir), top=2)
    assert calls["load"] == 2
    doc = corpus_dir / "sports" / "sports00.txt"
    doc.write_text("A different football match.", encoding="utf-8")
    changed = pipeline.load_corpus(str(corpus_dir))
    assert calls["load"] == 3 and "different" in changed.texts[list(changed.ids).index(
        "sports/sports00")]
    (corpus_dir / "notes.md").write_text("not a document")  # not matched by the pattern
    pipeline.load_corpus(str(corpus_dir))
    assert calls["load"] == 3


def test_default_options_share_an_entry(tmp_path, calls):
    write_tdt2(tmp_path / "data")
    pipeline.load_corpus("tdt2", data_dir=tmp_path / "data")
    pipeline.load_corpus("tdt2", data_dir=tmp_path / "data", variant="top30")
    assert calls["load"] == 1


def test_changed_data_file_misses_the_cache(tmp_path, calls):
    write_tdt2(tmp_path / "data", seed=0)
    first = pipeline.load_corpus("tdt2", data_dir=tmp_path / "data")
    write_tdt2(tmp_path / "data", seed=1)
    second = pipeline.load_corpus("tdt2", data_dir=tmp_path / "data")
    assert calls["load"] == 2 and (first.matrix != second.matrix).nnz > 0


def test_table_file_is_cached_by_its_content(tmp_path, calls, strict):
    table = tmp_path / "docs.csv"
    table.write_text("text,label\nrocket orbit,space\nflour oven,cooking\n", encoding="utf-8")
    pipeline.load_corpus(str(table))
    pipeline.load_corpus(str(table))
    assert calls["load"] == 1
    table.write_text("text,label\nrocket launch,space\nflour oven,cooking\n", encoding="utf-8")
    assert "launch" in pipeline.load_corpus(str(table)).texts[0] and calls["load"] == 2


def test_bad_options_are_left_to_the_loader(corpus_dir):
    with pytest.raises(InvalidInputError, match="no option 'colour'"):
        pipeline.load_corpus(str(corpus_dir), colour="red")
    with pytest.raises(InvalidInputError, match="top must be a whole number"):
        pipeline.load_corpus(str(corpus_dir), top=0)
    assert entry_dirs("corpus") == []


# -- term counts ----------------------------------------------------------------------------------


def test_second_representation_skips_tokenization(corpus_dir, calls, strict):
    corpus = load_uncached(str(corpus_dir))
    first = pipeline.represent(corpus)
    second = pipeline.represent(corpus)
    assert calls["count"] == 1 and len(entry_dirs("counts")) == 1
    assert (first.X != second.X).nnz == 0 and first.X.dtype == second.X.dtype
    assert np.array_equal(first.terms, second.terms) and first.terms.dtype == second.terms.dtype


def test_counts_are_keyed_by_tokenization_options_only(corpus_dir, calls):
    corpus = load_uncached(str(corpus_dir))
    pipeline.represent(corpus)
    weighted = pipeline.represent(corpus, weighting="sklearn", dtype="float64")
    assert calls["count"] == 1 and weighted.X.dtype == np.float64
    pipeline.represent(corpus, stop_words="none")
    pipeline.represent(corpus.subset(np.arange(10)))
    assert calls["count"] == 3


def test_cached_counts_complete_the_progress(corpus_dir):
    corpus = load_uncached(str(corpus_dir))
    for _ in range(2):
        steps = []
        with reporting_progress(steps.append):
            pipeline.represent(corpus)
        assert sum(steps) == corpus.n_docs


def test_run_twice_gives_the_same_result(corpus_dir, calls):
    settings = {"n_init": 2, "max_iter": 20, "n_assign_init": 2}
    first = textcluster.run(str(corpus_dir), "nmf", settings=settings)
    second = textcluster.run(str(corpus_dir), "nmf", settings=settings)
    assert calls == {"load": 1, "count": 1}
    assert first.metrics == second.metrics and np.array_equal(first.labels, second.labels)


# -- robustness -----------------------------------------------------------------------------------


def damage_arrays(folder):
    path = folder / "arrays.npz"
    path.write_bytes(path.read_bytes()[:40])


def damage_meta(folder):
    (folder / "meta.json").write_text("{not json", encoding="utf-8")


def damage_texts(folder):
    (folder / "texts.json").unlink()


def damage_key(folder):
    key = json.loads((folder / "key.json").read_text())
    (folder / "key.json").write_text(json.dumps({**key, "name": "other"}))


def damage_lengths(folder):
    (folder / "texts.json").write_text(json.dumps(["only one"]))


@pytest.mark.parametrize("damage", [damage_arrays, damage_meta, damage_texts, damage_key,
                                    damage_lengths])
def test_corrupt_corpus_entry_is_rebuilt(corpus_dir, calls, damage):
    expected = pipeline.load_corpus(str(corpus_dir))
    damage(entry_dirs("corpus")[0])
    with pytest.warns(cache.CacheWarning, match="unreadable.*removed and rebuilt"):
        rebuilt = pipeline.load_corpus(str(corpus_dir))
    assert calls["load"] == 2
    assert_same_corpus(expected, rebuilt)
    with warnings.catch_warnings():
        warnings.simplefilter("error", cache.CacheWarning)
        assert_same_corpus(expected, pipeline.load_corpus(str(corpus_dir)))
    assert calls["load"] == 2


def test_corrupt_counts_entry_is_rebuilt(corpus_dir, calls):
    corpus = load_uncached(str(corpus_dir))
    expected = pipeline.represent(corpus)
    folder = entry_dirs("counts")[0]
    with np.load(folder / "arrays.npz") as arrays:
        parts = dict(arrays)
    parts["vocabulary"] = parts["vocabulary"][:-1]  # one term short of the columns
    np.savez(folder / "arrays.npz", **parts)
    with pytest.warns(cache.CacheWarning, match="columns but"):
        rebuilt = pipeline.represent(corpus)
    assert calls["count"] == 2 and (expected.X != rebuilt.X).nnz == 0


def test_cache_off(corpus_dir, calls, monkeypatch):
    monkeypatch.setenv(cache.CACHE_ENV, "off")
    for _ in range(2):
        pipeline.represent(pipeline.load_corpus(str(corpus_dir)))
    assert calls == {"load": 2, "count": 2} and not cache.is_enabled()


def test_disabled_block(corpus_dir, calls):
    with cache.disabled():
        for _ in range(2):
            pipeline.represent(pipeline.load_corpus(str(corpus_dir)))
    assert calls == {"load": 2, "count": 2} and entry_dirs("corpus") == []
    pipeline.load_corpus(str(corpus_dir))
    assert len(entry_dirs("corpus")) == 1


def test_unwritable_cache_warns_and_goes_on(corpus_dir, tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv(cache.CACHE_ENV, str(blocker / "cache"))
    with pytest.warns(cache.CacheWarning, match="could not write to the cache"):
        corpus = pipeline.load_corpus(str(corpus_dir))
    assert corpus.n_docs == 18


def test_failed_write_leaves_nothing_behind(corpus_dir, monkeypatch):
    def full_disk(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(cache.np, "savez", full_disk)
    with pytest.warns(cache.CacheWarning, match="No space left"):
        pipeline.load_corpus(str(corpus_dir))
    assert list((cache.location() / "corpus").iterdir()) == []


# -- listing and clearing -------------------------------------------------------------------------


def test_entries_and_clear(corpus_dir, tmp_path):
    pipeline.represent(pipeline.load_corpus(str(corpus_dir)))
    found = cache.entries()
    assert sorted(e.kind for e in found) == ["corpus", "counts"]
    summaries = {e.kind: e.summary for e in found}
    assert str(corpus_dir) in summaries["corpus"] and "pattern=None" in summaries["corpus"]
    assert summaries["counts"].startswith("18 texts") and "stop_words=spacy" in summaries["counts"]
    assert all(e.size > 0 for e in found)
    unrelated = cache.location() / "corpus" / "keep-me"
    unrelated.mkdir()
    assert cache.clear() == (2, sum(e.size for e in found))
    assert cache.entries() == [] and unrelated.is_dir()


def test_stale_entries_are_marked_and_cleared(corpus_dir, tmp_path, monkeypatch):
    pipeline.load_corpus(str(corpus_dir))
    current = cache.versions("corpus")
    monkeypatch.setattr(cache, "versions", lambda kind: {**current, "spacy": "0.0-other"})
    pipeline.load_corpus(str(corpus_dir))  # a new entry under the other versions
    monkeypatch.setattr(cache, "versions", lambda kind: current)
    versions_of = {e.stale: e.key["versions"]["spacy"] for e in cache.entries()}
    assert versions_of == {True: "0.0-other", False: current["spacy"]}
    assert cache.clear(stale_only=True)[0] == 1
    assert [e.stale for e in cache.entries()] == [False]


def test_location(monkeypatch, tmp_path):
    monkeypatch.delenv(cache.CACHE_ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache.location() == tmp_path / "xdg" / "textcluster" / "cache"
    monkeypatch.setenv(cache.CACHE_ENV, "off")
    assert cache.location() == tmp_path / "xdg" / "textcluster" / "cache"
    assert not cache.is_enabled()


# -- real data ------------------------------------------------------------------------------------


def test_reuters_from_the_cache_equals_the_parsed_one(real_data_dir, calls, strict):
    parsed = pipeline.load_corpus("reuters", data_dir=real_data_dir, top=5)
    cached = pipeline.load_corpus("reuters", data_dir=real_data_dir, top=5)
    assert calls["load"] == 1
    assert_same_corpus(parsed, cached)


def test_missing_corpus_says_how_to_fetch_it(tmp_path):
    with pytest.raises(DataNotFoundError) as info:
        pipeline.load_corpus("tdt2", data_dir=tmp_path / "empty")
    assert "could not find TDT2.mat" in str(info.value)
    assert str(info.value).endswith("textcluster corpora fetch tdt2")


# -- the key covers every file the loader reads ---------------------------------------------------


def test_an_added_reuters_file_is_seen_by_the_next_run(tmp_path, calls, strict):
    """The loader reads every reut2-*.sgm*, not only the 22 files of the card."""
    from .test_ingest_reuters import FILE_0, FILE_1

    folder = tmp_path / "data" / "reuters21578"
    folder.mkdir(parents=True)
    (folder / "reut2-000.sgm").write_text(FILE_0, encoding="latin-1")
    first = pipeline.load_corpus("reuters", data_dir=tmp_path / "data", topics="any")
    (folder / "reut2-022.sgm").write_text(FILE_1, encoding="latin-1")
    second = pipeline.load_corpus("reuters", data_dir=tmp_path / "data", topics="any")
    assert calls["load"] == 2
    with cache.disabled():
        uncached = pipeline.load_corpus("reuters", data_dir=tmp_path / "data", topics="any")
    assert second.n_docs == uncached.n_docs == first.n_docs + 3


def test_an_added_document_or_label_file_is_seen_by_the_next_run(corpus_dir, tmp_path, calls):
    n_docs = pipeline.load_corpus(str(corpus_dir)).n_docs
    (corpus_dir / "space" / "space99.txt").write_text("Orbit and rocket.", encoding="utf-8")
    assert pipeline.load_corpus(str(corpus_dir)).n_docs == n_docs + 1
    from .test_ingest_cluto import write, write_cluto

    matrix = write_cluto(tmp_path / "cluto", labels=None)
    assert pipeline.load_corpus(str(matrix)).labels is None
    write(tmp_path / "cluto" / "set.mat.rclass", "a\nb\na\nc\n")
    assert list(pipeline.load_corpus(str(matrix)).labels) == ["a", "b", "a", "c"]
    assert calls["load"] == 4


def test_a_corpus_on_the_card_sees_an_added_optional_file(tmp_path, calls):
    """citeulike's terms need mult.dat: added later, the next run reads it."""
    from ._citeulike import write_citeulike

    write_citeulike(tmp_path / "data", terms=False)
    with pytest.raises(DataNotFoundError, match="mult.dat"):
        pipeline.load_corpus("citeulike-t:terms", data_dir=tmp_path / "data", min_count=2)
    write_citeulike(tmp_path / "data")
    corpus = pipeline.load_corpus("citeulike-t:terms", data_dir=tmp_path / "data", min_count=2)
    assert corpus.metadata["view"] == "terms"

"""Reuters-21578 SGML loader: tiny fixture files written here, plus real-data checks."""

import gzip
import time

import numpy as np
import pytest

from textcluster._errors import CorpusFormatError, DataNotFoundError, InvalidInputError
from textcluster.corpora.loaders import _paths, load_corpus, load_reuters
from textcluster.corpora.loaders.reuters import clean, parse_sgm_file

HEADER = '<!DOCTYPE lewis SYSTEM "lewis.dtd">\n'


def record(newid, topics=(), lewis="TRAIN", has_topics="YES", title="T", body="B", kind=None):
    """One <REUTERS> record in the layout of the real files."""
    d = "".join(f"<D>{t}</D>" for t in topics)
    type_attr = f' TYPE="{kind}"' if kind else ""
    if kind == "UNPROC":
        text = f"&#2;\n{body}\n&#3;"
    elif kind == "BRIEF":
        text = f"&#2;\n******<TITLE>{title}\n</TITLE>Blah blah blah.\n&#3;"
    else:
        text = f"&#2;\n<TITLE>{title}</TITLE>\n<DATELINE> X - </DATELINE><BODY>{body}\n&#3;</BODY>"
    return (
        f'<REUTERS TOPICS="{has_topics}" LEWISSPLIT="{lewis}" CGISPLIT="TRAINING-SET" '
        f'OLDID="{5000 + newid}" NEWID="{newid}">\n<DATE>26-FEB-1987 15:01:01.79</DATE>\n'
        f"<TOPICS>{d}</TOPICS>\n<PLACES><D>usa</D></PLACES>\n"
        f"<UNKNOWN> \n&#5;&#5;&#5;C T\n&#22;&#22;&#1;f0704&#31;reute</UNKNOWN>\n"
        f"<TEXT{type_attr}>{text}</TEXT>\n</REUTERS>\n"
    )


FILE_0 = HEADER + "".join([
    record(1, ["earn"], title="ACME &lt;ACM&gt; PROFIT", body="Acme &amp; Co earned\n Reuter"),
    record(2, ["grain", "wheat"], lewis="TEST", title="GRAIN", body="Wheat crop."),
    record(3, [], has_topics="NO", title="NO TOPIC", body="Nothing."),
    record(4, ["acq"], lewis="TEST", title="BIG DEAL AGREED", kind="BRIEF"),
    record(5, ["money-fx"], lewis="NOT-USED", body="FED REPORT\n M-1....736.7", kind="UNPROC"),
])
FILE_1 = HEADER + "".join([
    record(6, ["earn"], has_topics="NO", title="MUNCHEN", body="M\xfcnchen profit."),
    record(7, ["earn"], lewis="TEST", title="EARN TWO", body="Profit up."),
    record(8, ["acq", "earn"], lewis="TEST", title="MERGER", body="Bought."),
])


@pytest.fixture
def reuters_dir(tmp_path):
    """A data dir with ``reuters21578/reut2-000.sgm`` (plain) and ``reut2-001.sgm.gz``."""
    folder = tmp_path / "reuters21578"
    folder.mkdir()
    (folder / "reut2-000.sgm").write_bytes(FILE_0.encode("latin-1"))
    (folder / "reut2-001.sgm.gz").write_bytes(gzip.compress(FILE_1.encode("latin-1")))
    return tmp_path


@pytest.fixture
def no_default_data(tmp_path, monkeypatch):
    """Only ``data_dir`` is searched: no ``$TEXTCLUSTER_DATA``, an empty default folder."""
    monkeypatch.delenv(_paths.DATA_ENV, raising=False)
    monkeypatch.setattr(_paths, "default_cache_dir", lambda: tmp_path / "default-cache")


def by_id(corpus):
    return dict(zip(corpus.ids, corpus.texts))


def test_single_topic_documents_by_default(reuters_dir):
    corpus = load_reuters(reuters_dir)
    assert list(corpus.ids) == ["1", "4", "5", "6", "7"]
    assert list(corpus.labels) == ["earn", "acq", "money-fx", "earn", "earn"]
    assert corpus.name == "reuters" and corpus.matrix is None and corpus.vocabulary is None


def test_any_topic_labels_by_first_topic(reuters_dir):
    corpus = load_reuters(reuters_dir, topics="any")
    assert list(corpus.ids) == ["1", "2", "4", "5", "6", "7", "8"]
    assert dict(zip(corpus.ids, corpus.labels))["2"] == "grain"
    assert dict(zip(corpus.ids, corpus.labels))["8"] == "acq"


def test_text_is_title_and_body_with_entities_unescaped(reuters_dir):
    texts = by_id(load_reuters(reuters_dir))
    assert texts["1"] == "ACME <ACM> PROFIT\nAcme & Co earned\n Reuter"
    assert texts["7"] == "EARN TWO\nProfit up."


def test_latin1_byte_is_decoded(reuters_dir):
    assert by_id(load_reuters(reuters_dir))["6"] == "MUNCHEN\nM\xfcnchen profit."


def test_brief_document_without_body_is_its_title(reuters_dir):
    assert by_id(load_reuters(reuters_dir))["4"] == "BIG DEAL AGREED"


def test_unprocessed_document_is_its_raw_text(reuters_dir):
    assert by_id(load_reuters(reuters_dir))["5"] == "FED REPORT\n M-1....736.7"


def test_record_attributes(reuters_dir):
    records = parse_sgm_file(reuters_dir / "reuters21578" / "reut2-000.sgm")
    assert [r["id"] for r in records] == ["1", "2", "3", "4", "5"]
    assert records[1]["topics"] == ["grain", "wheat"] and records[1]["lewissplit"] == "TEST"
    assert records[2]["topics"] == [] and records[2]["has_topics"] == "NO"
    assert records[0]["cgisplit"] == "TRAINING-SET"


def test_clean_unescapes_and_drops_control_characters():
    assert clean("a &lt;b&gt; &amp; &#65;&#x42;&#3;&#127;\x05c\n\td") == "a <b> & ABc\n\td"
    assert clean("&nbsp-like &unknown; text") == "&nbsp-like &unknown; text"


@pytest.mark.parametrize(
    "split, topics, ids",
    [
        ("lewis-train", "any", ["1", "6"]),
        ("lewis-test", "any", ["2", "4", "7", "8"]),
        ("modapte-train", "any", ["1"]),  # 6 is TRAIN but TOPICS="NO"
        ("modapte-test", "single", ["4", "7"]),
        ("all", "any", ["1", "2", "4", "5", "6", "7", "8"]),
    ],
)
def test_splits(reuters_dir, split, topics, ids):
    assert list(load_reuters(reuters_dir, split=split, topics=topics).ids) == ids


def test_metadata_counts(reuters_dir):
    meta = load_reuters(reuters_dir, split="lewis-test").metadata
    assert meta["source_files"] == ["reut2-000.sgm", "reut2-001.sgm.gz"]
    assert (meta["split"], meta["topics"]) == ("lewis-test", "single")
    assert meta["records_parsed"] == 8
    assert meta["records_skipped_split"] == 4  # 1, 3, 5, 6
    assert meta["records_skipped_topics"] == 2  # 2 and 8 have two topics


def test_class_selection(reuters_dir):
    assert list(load_reuters(reuters_dir, min_class_size=2).classes) == ["earn"]
    assert list(load_reuters(reuters_dir, top=2).classes) == ["acq", "earn"]


@pytest.mark.parametrize("option, value", [("split", "modapte"), ("topics", "multi")])
def test_bad_options_name_the_allowed_values(reuters_dir, option, value):
    with pytest.raises(InvalidInputError, match="allowed: .*(lewis-train|single, any)"):
        load_reuters(reuters_dir, **{option: value})


def test_plain_file_and_gz_twin_are_read_once(reuters_dir):
    folder = reuters_dir / "reuters21578"
    (folder / "reut2-000.sgm.gz").write_bytes(gzip.compress(FILE_0.encode("latin-1")))
    corpus = load_reuters(reuters_dir, topics="any")
    assert len(corpus) == 7
    assert corpus.metadata["source_files"] == ["reut2-000.sgm", "reut2-001.sgm.gz"]


def test_duplicate_newid_across_files_is_an_error(reuters_dir):
    (reuters_dir / "reuters21578" / "reut2-002.sgm").write_text(HEADER + record(3, ["x"]))
    with pytest.raises(CorpusFormatError, match="NEWID 3 occurs twice"):
        load_reuters(reuters_dir)


def test_truncated_gz_names_the_file_and_says_to_redownload(reuters_dir):
    path = reuters_dir / "reuters21578" / "reut2-001.sgm.gz"
    path.write_bytes(path.read_bytes()[:-30])
    with pytest.raises(CorpusFormatError, match=r"reut2-001\.sgm\.gz.*re-download"):
        load_reuters(reuters_dir)


def test_garbage_gz_is_a_format_error(reuters_dir):
    (reuters_dir / "reuters21578" / "reut2-001.sgm.gz").write_bytes(b"not gzip at all" * 10)
    with pytest.raises(CorpusFormatError, match=r"reut2-001\.sgm\.gz.*re-download"):
        load_reuters(reuters_dir)


def test_record_without_closing_tag_names_file_record_and_line(reuters_dir):
    path = reuters_dir / "reuters21578" / "reut2-000.sgm"
    start = FILE_0.index("<REUTERS", FILE_0.index('NEWID="1"'))
    line = FILE_0.count("\n", 0, start) + 1
    path.write_bytes(FILE_0[: FILE_0.index("</REUTERS>", start)].encode("latin-1"))
    with pytest.raises(CorpusFormatError, match=rf"reut2-000\.sgm, record 2 \(line {line}\)"):
        load_reuters(reuters_dir)


def test_record_truncated_in_the_middle_of_the_file(reuters_dir):
    path = reuters_dir / "reuters21578" / "reut2-000.sgm"
    broken = FILE_0.replace("</REUTERS>", "", 1)
    path.write_bytes(broken.encode("latin-1"))
    with pytest.raises(CorpusFormatError, match=r"record 1 \(line 2\).*no closing"):
        load_reuters(reuters_dir)


def test_file_without_records_is_a_format_error(reuters_dir):
    (reuters_dir / "reuters21578" / "reut2-000.sgm").write_text("<html>not reuters</html>\n")
    with pytest.raises(CorpusFormatError, match=r"reut2-000\.sgm holds no <REUTERS> record"):
        load_reuters(reuters_dir)


def test_missing_folder_says_where_it_looked(tmp_path, no_default_data):
    with pytest.raises(DataNotFoundError) as info:
        load_reuters(tmp_path / "nowhere")
    message = str(info.value)
    assert str(tmp_path / "nowhere" / "reuters21578") in message
    assert str(tmp_path / "default-cache") not in message  # an explicit folder is the only one
    assert "reuters21578.tar.gz" in message


def test_folder_with_only_other_reut2_files(tmp_path, no_default_data):
    folder = tmp_path / "reuters21578"
    folder.mkdir()
    (folder / "reut2-000.sgm.bak").write_text(FILE_0)
    with pytest.raises(DataNotFoundError, match="no reut2-\\*.sgm or reut2-\\*.sgm.gz file"):
        load_reuters(tmp_path)


def test_data_dir_from_environment(reuters_dir, monkeypatch):
    monkeypatch.setenv(_paths.DATA_ENV, str(reuters_dir))
    assert len(load_reuters()) == 5


def test_load_corpus_by_name(reuters_dir):
    corpus = load_corpus("reuters", data_dir=reuters_dir, split="lewis-test", topics="any")
    assert list(corpus.ids) == ["2", "4", "7", "8"]


def test_load_corpus_rejects_unknown_option(reuters_dir):
    with pytest.raises(InvalidInputError, match="'splits'.*split, topics, min_class_size, top"):
        load_corpus("reuters", data_dir=reuters_dir, splits="all")


# --- real data -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def real_reuters_dir(real_data_dir):
    if not any((real_data_dir / "reuters21578").glob("reut2-*.sgm*")):
        pytest.skip(f"no reut2-*.sgm* files in {real_data_dir / 'reuters21578'}")
    return real_data_dir


@pytest.mark.realdata
def test_real_reuters_single_topic(real_reuters_dir):
    start = time.perf_counter()
    corpus = load_reuters(real_reuters_dir)
    seconds = time.perf_counter() - start
    assert corpus.metadata["records_parsed"] == 21578
    assert len(corpus.metadata["source_files"]) == 22
    assert len(corpus) == 9494 and len(corpus.classes) == 66
    assert len(np.unique(corpus.ids)) == len(corpus)
    assert all(text.strip() for text in corpus.texts)
    assert seconds < 30, f"loading all of Reuters took {seconds:.1f} s"


@pytest.mark.realdata
def test_real_reuters_all_records(real_reuters_dir):
    corpus = load_reuters(real_reuters_dir, topics="any")
    assert len(corpus) == 11367
    assert corpus.metadata["records_skipped_topics"] == 21578 - 11367


@pytest.mark.realdata
def test_real_reut2_017_is_parsed(real_reuters_dir):
    path = next((real_reuters_dir / "reuters21578").glob("reut2-017.sgm*"))
    records = parse_sgm_file(path)
    assert len(records) == 1000
    assert sum("\xfc" in r["text"] for r in records) >= 1  # the file's one latin-1 byte


@pytest.mark.realdata
def test_real_reuters_modapte_split(real_reuters_dir):
    train = load_reuters(real_reuters_dir, split="modapte-train", topics="any")
    test = load_reuters(real_reuters_dir, split="modapte-test", topics="any")
    assert not set(train.ids) & set(test.ids)
    assert len(train) + len(test) == 7775 + 3019


# --- an explicit data folder -----------------------------------------------------------------


def test_an_explicit_data_dir_is_the_only_one_used(reuters_dir, tmp_path, monkeypatch):
    """--data-dir EMPTY must not quietly read the copy found through $TEXTCLUSTER_DATA."""
    monkeypatch.setenv(_paths.DATA_ENV, str(reuters_dir))
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(DataNotFoundError) as info:
        load_reuters(empty)
    message = str(info.value)
    assert str(empty / "reuters21578") in message and "--data-dir" in message
    assert f"${_paths.DATA_ENV}" in message and str(reuters_dir / "reuters21578") in message
    assert len(load_reuters()) == 5  # without --data-dir the environment's copy is used


def test_the_cli_with_an_empty_data_dir_fails_and_names_the_folder(reuters_dir, tmp_path,
                                                                   monkeypatch):
    from click.testing import CliRunner

    from textcluster.cli import main

    monkeypatch.setenv(_paths.DATA_ENV, str(reuters_dir))
    (tmp_path / "empty").mkdir()
    result = CliRunner().invoke(main, ["run", "reuters", "--model", "kmeans", "--data-dir",
                                       str(tmp_path / "empty"), "--no-cache"])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert str(tmp_path / "empty" / "reuters21578") in result.output


def test_a_lone_surrogate_entity_is_replaced_and_the_corpus_cached(tmp_path, monkeypatch):
    """&#55296; names half of a UTF-16 pair: alone it is no character (U+FFFD instead), and
    the text must still be cached and tokenized."""
    from textcluster import pipeline

    monkeypatch.setenv("TEXTCLUSTER_CACHE", str(tmp_path / "cache"))
    folder = tmp_path / "reuters21578"
    folder.mkdir()
    text = FILE_0.replace("Wheat crop.", "Wheat &#55296;crop &#xDFFF;.")
    (folder / "reut2-000.sgm").write_bytes(text.encode("latin-1"))
    for _ in range(2):  # parsed and cached, then read from the cache
        corpus = pipeline.load_corpus("reuters", data_dir=tmp_path, topics="any")
        assert by_id(corpus)["2"] == "GRAIN\nWheat \ufffdcrop \ufffd."
    assert "wheat" in pipeline.represent(corpus).terms

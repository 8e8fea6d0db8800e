"""Tables of documents (CSV, TSV, JSON Lines, JSON, Parquet) and Hugging Face datasets, from
files written by the tests (the Hugging Face path reads local files: no network)."""

import inspect
import json

import pandas as pd
import pytest

from textcluster._errors import CorpusFormatError, DataNotFoundError, InvalidInputError
from textcluster.corpora.loaders import load_corpus, load_table, resolve_loader
from textcluster.corpora.loaders.table import table_format

ROWS = [
    {"id": "d1", "text": "Rocket launch to orbit", "label": "space"},
    {"id": "d2", "text": "Penalty in the last minute", "label": "sports"},
    {"id": "d3", "text": "Bake the pastry with butter", "label": "cooking"},
    {"id": "d4", "text": "A comet near the planet", "label": "space"},
]


def write_rows(path, rows=ROWS, fmt=None):
    frame = pd.DataFrame(rows)
    fmt = fmt or table_format(path)
    if fmt == "csv":
        frame.to_csv(path, index=False)
    elif fmt == "tsv":
        frame.to_csv(path, index=False, sep="\t")
    elif fmt == "jsonl":
        frame.to_json(path, orient="records", lines=True)
    elif fmt == "json":
        frame.to_json(path, orient="records")
    elif fmt == "excel":
        frame.to_excel(path, index=False)
    else:
        frame.to_parquet(path)
    return path


@pytest.mark.parametrize("name", ["docs.csv", "docs.tsv", "docs.jsonl", "docs.json",
                                  "docs.parquet", "docs.xlsx", "docs.csv.gz"])
def test_formats(tmp_path, name):
    corpus = load_table(write_rows(tmp_path / name))
    assert corpus.name == "docs"
    assert corpus.ids.tolist() == ["d1", "d2", "d3", "d4"]
    assert corpus.labels.tolist() == ["space", "sports", "cooking", "space"]
    assert corpus.texts[2] == "Bake the pastry with butter"
    assert corpus.metadata["latin1_fallback"] is False
    assert corpus.metadata["format"] == table_format(name)


@pytest.mark.parametrize("name", ["lines.txt", "lines.txt.gz"])
def test_text_file_of_one_document_per_line(tmp_path, name):
    import gzip

    data = "Rocket launch to orbit\r\n\nBake the pastry\r\nA comet near the planet\n".encode()
    path = tmp_path / name
    path.write_bytes(gzip.compress(data) if name.endswith(".gz") else data)
    corpus = load_corpus(str(path))
    assert corpus.ids.tolist() == ["1", "2", "3", "4"] and corpus.labels is None
    assert corpus.texts == ["Rocket launch to orbit", "", "Bake the pastry",
                            "A comet near the planet"]
    assert corpus.metadata["format"] == "lines"


def test_path_as_corpus_name(tmp_path):
    path = write_rows(tmp_path / "docs.jsonl")
    corpus = load_corpus(str(path), top=1)
    assert corpus.class_sizes == {"space": 2}
    assert "text_column" in inspect.signature(resolve_loader(str(path))).parameters
    with pytest.raises(DataNotFoundError, match="does not exist"):
        load_corpus(str(tmp_path / "missing.csv"))


def test_named_columns_and_no_labels(tmp_path):
    rows = [{"body": r["text"], "topic": r["label"], "key": r["id"] + "x"} for r in ROWS]
    path = write_rows(tmp_path / "named.csv", rows)
    corpus = load_table(path, text_column="body", label_column="topic", id_column="key")
    assert corpus.ids[0] == "d1x" and corpus.labels[1] == "sports"
    unlabelled = load_table(path, label_column="none")  # the texts found by their name
    assert unlabelled.labels is None and unlabelled.ids.tolist() == ["0", "1", "2", "3"]
    assert unlabelled.texts == corpus.texts
    assert load_table(write_rows(tmp_path / "a.csv"), label_column="none").labels is None


def test_auto_columns_by_name_in_any_case(tmp_path):
    # Kaggle's BBC News layout: ArticleId, Text, Category
    rows = [{"ArticleId": i + 10, "Text": r["text"], "Category": r["label"]}
            for i, r in enumerate(ROWS)]
    corpus = load_table(write_rows(tmp_path / "bbc.csv", rows))
    assert corpus.texts[0] == "Rocket launch to orbit" and corpus.labels[1] == "sports"
    assert corpus.ids.tolist() == ["10", "11", "12", "13"]
    assert {k: corpus.metadata[k] for k in ("text_column", "label_column", "id_column")} == {
        "text_column": "Text", "label_column": "Category", "id_column": "ArticleId"}
    # "text" before a column named like it; "label" before one named like a class
    rows = [{"text": r["text"], "body": "other", "label": r["label"], "topic": "x"} for r in ROWS]
    corpus = load_table(write_rows(tmp_path / "both.csv", rows))
    assert corpus.texts[0] == "Rocket launch to orbit" and corpus.labels[0] == "space"
    # two columns named like a text: the table must name its own; two like a class: no labels
    rows = [{"body": r["text"], "content": "x", "class": r["label"], "topic": "y"} for r in ROWS]
    path = write_rows(tmp_path / "two.csv", rows)
    with pytest.raises(InvalidInputError, match="no text column .*or it has two.*body, content"):
        load_table(path)
    assert load_table(path, text_column="body").labels is None


def test_missing_column_lists_the_columns(tmp_path):
    path = write_rows(tmp_path / "docs.csv")
    with pytest.raises(InvalidInputError) as err:
        load_table(path, text_column="body")
    message = str(err.value)
    assert "no column 'body'" in message and "id, text, label" in message
    assert str(path) in message
    with pytest.raises(InvalidInputError, match="no column 'topic'"):
        load_table(path, label_column="topic")


def test_latin1_fallback(tmp_path):
    path = tmp_path / "latin.csv"
    path.write_bytes("text,label\nCafé crème,food\nMüller wins,sports\n".encode("latin-1"))
    corpus = load_table(path)
    assert corpus.texts == ["Café crème", "Müller wins"]
    assert corpus.metadata["latin1_fallback"] is True
    utf8 = tmp_path / "bom.csv"
    utf8.write_bytes("\ufefftext\nCafé\n".encode("utf-8"))
    assert load_table(utf8).texts == ["Café"]


def test_missing_values(tmp_path):
    path = tmp_path / "gaps.csv"
    path.write_text("text,label\nfirst,a\n,b\nthird,\nfourth,\n")
    with pytest.raises(CorpusFormatError, match=r"2 row\(s\) have no 'label' \(rows 3, 4\)"):
        load_table(path)
    corpus = load_table(path, label_column="none")
    assert corpus.texts == ["first", "", "third", "fourth"]  # empty: the run reports it


def test_duplicate_ids(tmp_path):
    path = write_rows(tmp_path / "dup.csv", [{"id": "x", "text": "a"}, {"id": "x", "text": "b"}])
    with pytest.raises(CorpusFormatError, match="ids in 'id' are not unique"):
        load_table(path)
    assert load_table(path, id_column="none").ids.tolist() == ["0", "1"]


@pytest.mark.parametrize("name, content, words", [
    ("empty.csv", b"", "is empty"),
    ("header.csv", b"text,label\n", "has no rows"),
    ("bad.jsonl", b'{"text": "a"}\n{"text": \n', "could not be read as jsonl"),
    ("bad.parquet", b"PAR1 not really parquet", "bad.parquet"),
    ("bad.csv", b'text\n"unclosed quote\n', "could not be read as csv"),
    ("docs.odt", b"", "cannot tell the format"),
    ("bad.xlsx", b"PK\x03\x04 not a workbook", "could not be read as excel"),
])
def test_unreadable_files(tmp_path, name, content, words):
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises((CorpusFormatError, InvalidInputError), match=words):
        load_table(path)


@pytest.mark.parametrize("line, kind", [("[1, 2]", "array"), ("3", "number"),
                                        ('"text"', "string"), ("null", "null")])
def test_json_lines_line_that_is_not_an_object_names_the_line(tmp_path, line, kind):
    path = tmp_path / "docs.jsonl"
    path.write_text(f'{{"text": "a b", "label": "x"}}\n{line}\n{{"text": "c", "label": "y"}}\n')
    with pytest.raises(CorpusFormatError) as info:
        load_table(path)
    message = str(info.value)
    assert f"{path}, line 2" in message and kind in message and "JSON object" in message


def test_json_lines_syntax_error_names_line_and_column(tmp_path):
    path = tmp_path / "docs.jsonl"
    path.write_text('{"text": "a"}\n\n{"text": "b",, "label": 1}\n')
    with pytest.raises(CorpusFormatError, match=r"docs\.jsonl, line 3, column 14"):
        load_table(path)


# -- Hugging Face datasets ---------------------------------------------------------------------


@pytest.fixture
def jsonl_file(tmp_path):
    path = tmp_path / "hf.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in ROWS) + "\n")
    return path


def test_hf_local_json(jsonl_file, tmp_path):
    corpus = load_corpus("hf:json", data_files=str(jsonl_file), cache_dir=str(tmp_path / "c"))
    assert corpus.name == "json" and corpus.ids.tolist() == ["d1", "d2", "d3", "d4"]
    assert corpus.labels.tolist() == ["space", "sports", "cooking", "space"]
    assert corpus.metadata["source"] == "hf:json" and corpus.metadata["split"] == "train"


def test_hf_class_label_names(tmp_path):
    import datasets

    features = datasets.Features({"text": datasets.Value("string"),
                                  "label": datasets.ClassLabel(names=["neg", "pos"])})
    data = datasets.Dataset.from_dict({"text": ["good", "bad", "fine"], "label": [1, 0, 1]},
                                      features=features)
    data.to_parquet(str(tmp_path / "d.parquet"))
    corpus = load_corpus("hf:parquet", data_files=str(tmp_path / "d.parquet"),
                         cache_dir=str(tmp_path / "c"))
    # Parquet keeps the ClassLabel feature in its schema metadata
    assert corpus.labels.tolist() == ["pos", "neg", "pos"]


def test_hf_auto_columns(tmp_path):
    path = write_rows(tmp_path / "named.jsonl", [{"Body": r["text"], "topic": r["label"]}
                                                   for r in ROWS])
    corpus = load_corpus("hf:json", data_files=str(path), cache_dir=str(tmp_path / "c"))
    assert corpus.texts[1] == "Penalty in the last minute" and corpus.labels[1] == "sports"


def test_hf_errors(jsonl_file, tmp_path):
    cache = str(tmp_path / "c")
    with pytest.raises(InvalidInputError, match="no column 'body'.*id, text, label"):
        load_corpus("hf:json", data_files=str(jsonl_file), text_column="body", cache_dir=cache)
    with pytest.raises(InvalidInputError, match="split"):
        load_corpus("hf:json", data_files=str(jsonl_file), split="test", cache_dir=cache)
    with pytest.raises(DataNotFoundError, match="hf:|Hugging Face"):
        load_corpus("hf:json", data_files=str(tmp_path / "nowhere.jsonl"), cache_dir=cache)

"""The user's own documents as a table: CSV, TSV, JSON Lines, JSON, Parquet or Excel (its first
sheet; via pandas), a text file of one document per line (``.txt``: ids are the line numbers, no labels), or a
Hugging Face dataset (``hf:NAME``, via ``datasets.load_dataset``).

One row per document: a text column, an optional label column and an optional id column.
``text_column="auto"`` (the default) uses the column named ``text`` (in any case), else the one
column named like a document's text (``TEXT_NAMES``: ``content``, ``body``, ``abstract``, …);
``label_column="auto"`` (the default) uses the column named ``label``, else the one named like
a class (``LABEL_NAMES``: ``category``, ``class``, ``topic``, ``target``), else reads no labels
(a table with two such columns names its own); ``None`` or ``"none"`` reads no labels.
``id_column="auto"`` uses a column named ``id``, else the one column named like an id
(``ticket_id``, ``Doc ID``, ``DocID``) whose values are unique, else the row number;
``metadata`` says which columns were read (``id_column`` ``None``: row numbers).
``date_column="auto"`` reads a column named ``date`` (in any case) as the documents' dates
(:attr:`Corpus.dates`). A column named by the caller must exist.

Text files are read as UTF-8 (a byte-order mark is allowed); a file that is not valid UTF-8 is
read as Latin-1 instead (every byte maps to a character) and ``metadata["latin1_fallback"]``
is true. Missing texts become empty documents (which the run then reports, or drops with
``empty_documents=drop``); a missing label is an error.
"""

import json
import lzma
import re
import warnings
import zipfile
import zlib
from pathlib import Path

import numpy as np
import pandas as pd

from ..._compat import require
from ..._errors import CorpusFormatError, DataNotFoundError, InvalidInputError
from ..corpus import Corpus
from ._files import reads
from ._paths import StrPath

# File-name endings → format; compressed files (.gz, .bz2, .zip, .xz, .zst) are read by pandas.
FORMATS = {".csv": "csv", ".tsv": "tsv", ".jsonl": "jsonl", ".json": "json",
           ".parquet": "parquet", ".pq": "parquet", ".xlsx": "excel", ".txt": "lines"}
COMPRESSIONS = (".gz", ".bz2", ".zip", ".xz", ".zst")
HF_PREFIX = "hf:"
# the columns "auto" reads, in any case: the first name, else the one column named like another
TEXT_NAMES = ("text", "content", "body", "document", "abstract", "description", "review",
              "message")
LABEL_NAMES = ("label", "category", "class", "topic", "target")


def table_format(path: StrPath) -> str | None:
    """The format of ``path`` from its name (``data.csv.gz`` → ``"csv"``), or ``None``."""
    suffixes = [s.lower() for s in Path(path).suffixes]
    if suffixes and suffixes[-1] in COMPRESSIONS:
        suffixes = suffixes[:-1]
    return FORMATS.get(suffixes[-1]) if suffixes else None


def table_files(path: StrPath, **_options: object) -> list[Path]:
    """The file :func:`load_table` reads: ``path``."""
    return [Path(path)]


@reads(table_files)
def load_table(path: StrPath, text_column: str = "auto", label_column: str | None = "auto",
               id_column: str | None = "auto", date_column: str | None = "auto",
               min_class_size: int | None = None, top: int | None = None) -> Corpus:
    """Load the documents of one table file (see the module docstring)."""
    path = Path(path)
    if not path.is_file():
        raise DataNotFoundError(f"table file {path} does not exist or is not a file")
    fmt = table_format(path)
    if fmt is None:
        raise InvalidInputError(
            f"cannot tell the format of {path}; name it *.csv, *.tsv, *.jsonl, *.json, "
            f"*.parquet, *.xlsx or *.txt (one document per line)"
        )
    frame, fallback = _read_frame(path, fmt)
    corpus = frame_corpus(frame, _table_name(path), f"{path}", text_column, label_column,
                          id_column, date_column)
    corpus.metadata.update(source=str(path), format=fmt, latin1_fallback=fallback)
    return corpus.select_classes(min_class_size=min_class_size, top=top)


def _table_name(path):
    """``news.csv.gz`` → ``news``."""
    name, suffixes = path.name, path.suffixes
    if suffixes and suffixes[-1].lower() in COMPRESSIONS:
        name, suffixes = name[: -len(suffixes[-1])], suffixes[:-1]
    if suffixes and suffixes[-1].lower() in FORMATS:
        name = name[: -len(suffixes[-1])]
    return name or path.name


def load_hf(name: str, split: str = "train", config: str | None = None,
            data_files: str | list[str] | dict | None = None, text_column: str = "auto",
            label_column: str | None = "auto", id_column: str | None = "auto",
            date_column: str | None = "auto",
            cache_dir: StrPath | None = None, min_class_size: int | None = None,
            top: int | None = None) -> Corpus:
    """A Hugging Face dataset: ``datasets.load_dataset(name, config, split=split,
    data_files=data_files)``. ``name`` is a Hub id (``"ag_news"``) or a packaged builder for
    local files (``"csv"``, ``"json"``, ``"parquet"``, ``"text"``) with ``data_files``. Integer
    labels of a ``ClassLabel`` column become their class names. Needs the ``hf`` extra."""
    datasets = require("datasets", extra="hf", feature="a Hugging Face dataset (hf:NAME)")
    dataset = _hf_dataset(datasets, name, config, split, data_files, cache_dir)
    where = f"Hugging Face dataset {name!r} (split {split!r})"
    columns = [c for c in (text_column, _maybe(label_column), _maybe(id_column),
                           _maybe(date_column)) if c and c != "auto"]
    missing = [c for c in columns if c not in dataset.column_names]
    if missing:
        raise _missing_column(missing[0], dataset.column_names, where)
    auto = (*TEXT_NAMES, *LABEL_NAMES, "date")
    keep = [c for c in dataset.column_names
            if c in columns or c.lower() in auto or _ID_NAME.search(c)]
    frame = dataset.select_columns(keep).to_pandas()
    _class_names(dataset, frame)
    corpus = frame_corpus(frame, name, where, text_column, label_column, id_column,
                          date_column)
    corpus.metadata.update(source=f"{HF_PREFIX}{name}", split=split, config=config,
                           data_files=data_files, latin1_fallback=False)
    return corpus.select_classes(min_class_size=min_class_size, top=top)


def _maybe(column):
    return None if column in (None, "none") else column


def _hf_dataset(datasets, name, config, split, data_files, cache_dir):
    try:
        return datasets.load_dataset(name, config, split=split, data_files=data_files,
                                     cache_dir=cache_dir)
    except FileNotFoundError as exc:  # DatasetNotFoundError is one too
        raise DataNotFoundError(
            f"Hugging Face dataset {name!r} not found ({exc}); check the name (and the "
            f"network) or give local files with --set data_files=PATH"
        ) from None
    except ConnectionError as exc:
        raise DataNotFoundError(
            f"Hugging Face dataset {name!r} could not be downloaded ({exc})"
        ) from None
    except ValueError as exc:  # e.g. an unknown split or config
        raise InvalidInputError(f"Hugging Face dataset {name!r}: {exc}") from None
    except datasets.exceptions.DatasetGenerationError as exc:
        raise CorpusFormatError(
            f"Hugging Face dataset {name!r} could not be read: {exc.__cause__ or exc}"
        ) from None


def _class_names(dataset, frame):
    """Replace ``ClassLabel`` integers by their names, in place."""
    datasets = require("datasets", extra="hf", feature="a Hugging Face dataset (hf:NAME)")
    for column in frame.columns:
        feature = dataset.features.get(column)
        if isinstance(feature, datasets.ClassLabel):
            frame[column] = [feature.int2str(int(v)) for v in frame[column]]


# -- reading files ---------------------------------------------------------------------------


def _read_frame(path, fmt):
    """``(DataFrame, used_latin1)``; parse errors name the file."""
    if fmt == "parquet":
        require("pyarrow", extra="parquet", feature="reading a .parquet file")
        return _parse(path, lambda: pd.read_parquet(path)), False
    if fmt == "excel":
        require("openpyxl", extra="excel", feature="reading a .xlsx file")
        return _parse(path, lambda: _read_excel(path)), False
    try:
        return _parse(path, lambda: _read_text_table(path, fmt, "utf-8-sig")), False
    except UnicodeDecodeError:
        return _parse(path, lambda: _read_text_table(path, fmt, "latin-1")), True


def _read_excel(path):
    """The first sheet of a workbook; what openpyxl raises on a damaged one (a missing part, XML
    that does not parse, ...) becomes the project's error."""
    from openpyxl.utils.exceptions import InvalidFileException

    try:
        return pd.read_excel(path, dtype=str, keep_default_na=False, na_values=[""])
    except (KeyError, IndexError, AttributeError, SyntaxError, InvalidFileException) as exc:
        raise CorpusFormatError(f"{path} could not be read as an Excel workbook "
                                f"({type(exc).__name__}: {str(exc).strip()[:300]})") from None


def _read_text_table(path, fmt, encoding):
    if fmt in ("csv", "tsv"):
        return pd.read_csv(path, sep="\t" if fmt == "tsv" else ",", dtype=str,
                           keep_default_na=False, na_values=[""], encoding=encoding)
    text = _decompressed_text(path, encoding)
    if fmt == "lines":
        lines = text.splitlines()
        return pd.DataFrame({"id": [str(i) for i in range(1, len(lines) + 1)], "text": lines})
    if fmt == "json":  # a JSON array of records (or columns), else JSON Lines under a .json name
        try:
            return _json_frame(path, json.loads(text))
        except json.JSONDecodeError:
            pass
    return _frame(_json_lines(path, text))


def _decompressed_text(path, encoding):
    """The text of ``path``, decompressed as pandas does for ``.gz``, ``.zip``, ... files."""
    from pandas.io.common import get_handle

    with get_handle(path, "r", encoding=encoding, compression="infer") as handles:
        return handles.handle.read()


def _json_frame(path, value):
    """A DataFrame from a whole JSON document: an array of objects (one per row), an object of
    columns (``{"text": {"0": ...}, ...}``, pandas' default) or a single object (one row)."""
    if isinstance(value, list):
        for number, item in enumerate(value, start=1):
            if not isinstance(item, dict):
                raise CorpusFormatError(
                    f"{path}: item {number} of the JSON array is {_json_kind(item)}, not a JSON "
                    f"object; each item must be one document, such as {_EXAMPLE}")
        return _frame(value)
    if isinstance(value, dict):
        columns = value and all(isinstance(v, (dict, list)) for v in value.values())
        return _frame(value if columns else [value])
    raise CorpusFormatError(f"{path} holds {_json_kind(value)}, not JSON objects; give one "
                            f"object per document, such as {_EXAMPLE}")


def _frame(data):
    """A DataFrame of Python objects: JSON strings may hold lone surrogates (``"\\ud800"``),
    which pandas' Arrow-backed strings refuse (the corpus escapes them)."""
    return pd.DataFrame(data, dtype=object)


def _json_lines(path, text):
    """The JSON object of each non-blank line of ``text`` (JSON Lines)."""
    records = []
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            raise CorpusFormatError(
                f"{path}, line {number}, column {exc.colno} could not be read as jsonl "
                f"({exc.msg}); each line must hold one JSON object, such as {_EXAMPLE}"
            ) from None
        if not isinstance(value, dict):
            raise CorpusFormatError(
                f"{path}, line {number} is {_json_kind(value)}, not a JSON object; each line "
                f"must hold one JSON object, such as {_EXAMPLE}")
        records.append(value)
    return records


_EXAMPLE = '{"text": "...", "label": "..."}'


def _json_kind(value):
    if isinstance(value, list):
        return "a JSON array"
    if isinstance(value, bool):
        return f"JSON {str(value).lower()}"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "JSON null" if value is None else "an object"


def _parse(path, read):
    try:
        return read()
    except (UnicodeDecodeError, CorpusFormatError):
        raise
    except pd.errors.EmptyDataError:
        raise CorpusFormatError(f"{path} is empty: no header and no rows") from None
    except RecursionError:
        raise CorpusFormatError(f"{path}: its JSON is nested too deeply to be a table of "
                                f"documents") from None
    except (ValueError, TypeError, pd.errors.ParserError, OSError, EOFError, zlib.error,
            lzma.LZMAError, zipfile.BadZipFile, ImportError, NotImplementedError) as exc:
        # pyarrow's errors for a damaged Parquet file derive from these too; ImportError: a
        # compression whose library is missing
        raise CorpusFormatError(
            f"{path} could not be read as {table_format(path)} ({type(exc).__name__}: "
            f"{str(exc).strip()[:300]})"
        ) from None


# -- from a table to a corpus ----------------------------------------------------------------


def frame_corpus(frame, name, where, text_column="auto", label_column="auto", id_column="auto",
                 date_column="auto"):
    """A text corpus from a DataFrame; ``where`` names the source in error messages."""
    columns = [str(c) for c in frame.columns]
    if len(frame) == 0:
        raise CorpusFormatError(f"{where} has no rows")
    text_name = _column(text_column, TEXT_NAMES, columns, where)
    if text_name is None:
        raise _missing_column(text_column, columns, where)
    label_name = _column(label_column, LABEL_NAMES, columns, where)
    id_name = (_id_column(frame, columns, text_name) if id_column == "auto"
               else _column(id_column, ("id",), columns, where))
    return Corpus(
        name=name,
        ids=_ids(frame, id_name, where),
        labels=_labels(frame, label_name, where),
        texts=[_text(v) for v in frame[text_name]],
        metadata={"text_column": text_name, "label_column": label_name, "id_column": id_name},
        dates=_dates(frame, _column(date_column, ("date",), columns, where), where),
    )


def _dates(frame, column, where):
    """The column's dates (any format pandas reads; times in UTC), or None."""
    if column is None:
        return None
    values = frame[column]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "could not infer format"
        dates = pd.to_datetime(values, errors="coerce", utc=True)
    bad = np.flatnonzero(dates.isna().to_numpy())
    if bad.size:
        raise CorpusFormatError(
            f"{where}: {bad.size} row(s) have no readable date in {column!r} (rows "
            f"{_rows(bad)}, e.g. {values.iloc[bad[0]]!r}); write them as 2026-11-24 or "
            f"2026-11-24T08:30, or pass --set date_column=none"
        )
    return dates.dt.tz_localize(None).to_numpy(dtype="datetime64[ns]")


# ``ticket_id``, ``doc-id``, ``Doc ID``, ``docId``, ``DocID`` (not ``valid`` or ``paid``).
_ID_NAME = re.compile(r"(?:^|[_\-\s.])[iI][dD]$|[a-z0-9](?:Id|ID)$")


def _id_column(frame, columns, text_column):
    """The id column ``id_column="auto"`` finds: ``id``, else the one column named like
    ``*id`` with unique values; None (row numbers) when there is none or more than one."""
    if "id" in columns:
        return "id"
    named = [c for c in columns if _ID_NAME.search(c) and c != text_column]
    original = dict(zip(columns, frame.columns))
    unique = [c for c in named
              if not frame[original[c]].isna().any() and frame[original[c]].is_unique]
    return unique[0] if len(unique) == 1 else None


def _column(choice, names, columns, where):
    """The column to read: ``choice``, which must exist, or for ``"auto"`` the one named
    ``names[0]`` in any case, else the one column named like another of ``names``; ``None``
    for ``None``/``"none"`` or when ``"auto"`` finds none (or two)."""
    if choice is None or choice == "none":
        return None
    if choice != "auto":
        if choice not in columns:
            raise _missing_column(choice, columns, where)
        return choice
    if names[0] in columns:
        return names[0]
    for group in (names[:1], names[1:]):
        found = [c for c in columns if c.lower() in group]
        if found:
            return found[0] if len(found) == 1 else None
    return None


def _missing_column(column, columns, where):
    what = (f"no text column (one named {', '.join(TEXT_NAMES)}, in any case; or it has two)"
            if column == "auto" else f"no column {column!r}")
    return InvalidInputError(
        f"{where} has {what}; its columns are: {', '.join(map(str, columns))}. "
        f"Name the right one with --set text_column=... (label_column, id_column likewise)"
    )


def _text(value):
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return ""
    return str(value)


def _labels(frame, column, where):
    if column is None:
        return None
    values = frame[column]
    missing = np.flatnonzero(values.isna().to_numpy())
    if missing.size:
        raise CorpusFormatError(
            f"{where}: {missing.size} row(s) have no {column!r} (rows {_rows(missing)}); fill "
            f"them in, or pass --set label_column=none to cluster without labels"
        )
    return [_text(v) for v in values]


def _ids(frame, column, where):
    if column is None:
        return np.arange(len(frame)).astype(str)
    ids = pd.Series([_text(v) for v in frame[column]], dtype=object)
    repeated = ids[ids.duplicated(keep=False)]
    if len(repeated):
        raise CorpusFormatError(
            f"{where}: the ids in {column!r} are not unique ({repeated.iloc[0]!r} occurs "
            f"{int((ids == repeated.iloc[0]).sum())} times); pass --set id_column=none to "
            f"number the rows instead"
        )
    return ids.to_numpy()


def _rows(positions):
    """Row numbers as the user counts them (1 = first data row), at most five."""
    shown = ", ".join(str(int(p) + 1) for p in positions[:5])
    return shown + (" …" if len(positions) > 5 else "")

"""Reuters-21578 (Distribution 1.0) from its raw SGML files, parsed with regular expressions.

The files are ``reut2-000.sgm`` … ``reut2-021.sgm``, plain or gzip-compressed. They are read as
latin-1 (``reut2-017`` holds a non-UTF-8 byte) and split into ``<REUTERS …>`` … ``</REUTERS>``
records; no SGML library is needed.
"""

import gzip
import re
import zlib
from pathlib import Path

from ..._errors import CorpusFormatError, DataNotFoundError, InvalidInputError
from ..corpus import Corpus
from ._files import reads
from ._paths import StrPath, find_corpus_dir

SOURCE = "https://kdd.ics.uci.edu/databases/reuters21578/reuters21578.tar.gz"
SPLITS = ("all", "lewis-train", "lewis-test", "modapte-train", "modapte-test")
TOPIC_RULES = ("single", "any")

_RECORD_START = re.compile(r"<REUTERS\b")
_RECORD_END = "</REUTERS>"
_OPEN_TAG = re.compile(r"<REUTERS\b([^>]*)>")
_ATTRIBUTE = re.compile(r'([A-Za-z]+)\s*=\s*"([^"]*)"')
_TOPICS = re.compile(r"<TOPICS>(.*?)</TOPICS>", re.S)
_D = re.compile(r"<D>(.*?)</D>", re.S)
_TITLE = re.compile(r"<TITLE>(.*?)</TITLE>", re.S)
_BODY = re.compile(r"<BODY>(.*?)</BODY>", re.S)
_TEXT = re.compile(r"<TEXT\b([^>]*)>(.*?)</TEXT>", re.S)
_TAG = re.compile(r"<[^>]*>")
_ENTITY = re.compile(r"&(#[0-9]+|#[xX][0-9a-fA-F]+|[A-Za-z]+);")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_NAMED = {"lt": "<", "gt": ">", "amp": "&", "quot": '"', "apos": "'"}


def reuters_files(data_dir: StrPath | None = None, **_options: object) -> list[Path]:
    """The files :func:`load_reuters` reads: every ``reut2-*.sgm[.gz]`` of its folder."""
    return sgm_files(find_corpus_dir("reuters21578", ["reut2-*.sgm*"], data_dir, source=SOURCE))


@reads(reuters_files)
def load_reuters(data_dir: StrPath | None = None, split: str = "all", topics: str = "single",
                 min_class_size: int | None = None, top: int | None = None) -> Corpus:
    """Load Reuters-21578 as a text corpus labelled by TOPICS.

    ``split``: one of :data:`SPLITS` (Lewis or ModApte train/test, or all records).
    ``topics``: ``"single"`` keeps documents with exactly one topic; ``"any"`` keeps documents
    with at least one and labels each by its first topic. Then
    :meth:`Corpus.select_classes` applies ``min_class_size`` and ``top``.
    """
    _check_choice("split", split, SPLITS)
    _check_choice("topics", topics, TOPIC_RULES)
    files = reuters_files(data_dir)
    records = [rec for path in files for rec in parse_sgm_file(path)]
    _check_unique_ids(records)
    in_split = [rec for rec in records if _in_split(rec, split)]
    kept = [rec for rec in in_split if _keeps(rec["topics"], topics)]
    metadata = {
        "source_files": [path.name for path in files],
        "split": split,
        "topics": topics,
        "records_parsed": len(records),
        "records_skipped_split": len(records) - len(in_split),
        "records_skipped_topics": len(in_split) - len(kept),
        "min_class_size": min_class_size,
        "top": top,
    }
    corpus = _corpus(kept, metadata)
    return corpus.select_classes(min_class_size=min_class_size, top=top)


def _corpus(records, metadata):
    return Corpus(
        name="reuters",
        ids=[rec["id"] for rec in records],
        labels=[rec["topics"][0] for rec in records],
        texts=[rec["text"] for rec in records],
        metadata=metadata,
    )


def _check_choice(option, value, allowed):
    if value not in allowed:
        raise InvalidInputError(
            f"unknown Reuters {option} {value!r}; allowed: {', '.join(allowed)}"
        )


def sgm_files(folder: Path) -> list[Path]:
    """The ``reut2-*.sgm`` / ``reut2-*.sgm.gz`` files in ``folder``, sorted; a plain file wins
    over its ``.gz`` twin so that no record is read twice."""
    chosen: dict[str, Path] = {}
    for path in sorted(folder.glob("reut2-*.sgm*")):
        if path.name.endswith(".sgm.gz"):
            chosen.setdefault(path.name[: -len(".gz")], path)
        elif path.name.endswith(".sgm"):
            chosen[path.name] = path
    if not chosen:
        raise DataNotFoundError(f"no reut2-*.sgm or reut2-*.sgm.gz file in {folder}; see {SOURCE}")
    return [chosen[name] for name in sorted(chosen)]


def read_latin1(path):
    """The text of ``path`` (gunzipped if it ends in ``.gz``) decoded as latin-1."""
    try:
        if path.name.endswith(".gz"):
            with gzip.open(path, "rb") as handle:
                data = handle.read()
        else:
            data = path.read_bytes()
    except (OSError, EOFError, zlib.error) as exc:
        if not path.name.endswith(".gz"):
            raise
        raise CorpusFormatError(
            f"{path} is not a readable gzip file ({exc}); it is probably truncated or "
            f"corrupt: re-download it from {SOURCE}"
        ) from None
    return data.decode("latin-1").replace("\r\n", "\n")


def parse_sgm_file(path):
    """The records of one SGML file, as dicts with ``id``, ``topics``, ``text`` and the
    ``<REUTERS>`` attributes (``lewissplit``, ``cgisplit``, ``has_topics``)."""
    text = read_latin1(path)
    starts = [m.start() for m in _RECORD_START.finditer(text)]
    if not starts:
        raise CorpusFormatError(
            f"{path} holds no <REUTERS> record; it is not a Reuters-21578 SGML file "
            f"(re-download it from {SOURCE})"
        )
    records, line, previous = [], 1, 0
    for number, (start, end) in enumerate(zip(starts, starts[1:] + [len(text)]), 1):
        line, previous = line + text.count("\n", previous, start), start
        where = f"{path}, record {number} (line {line})"
        chunk = text[start:end]
        if _RECORD_END not in chunk:
            raise CorpusFormatError(
                f"{where} has no closing </REUTERS>: the file is truncated or corrupt; "
                f"re-download it from {SOURCE}"
            )
        records.append(_parse_record(chunk[: chunk.index(_RECORD_END)], where))
    return records


def _parse_record(chunk, where):
    """One record (without its closing tag); ``where`` names it in error messages."""
    opening = _OPEN_TAG.match(chunk)
    if opening is None:
        raise CorpusFormatError(f"{where} has no complete <REUTERS ...> opening tag: the file "
                                f"is corrupt; re-download it from {SOURCE}")
    attributes = dict(_ATTRIBUTE.findall(opening.group(1)))
    if not attributes.get("NEWID", "").strip().isdigit():
        raise CorpusFormatError(f"{where} has no valid NEWID attribute")
    topics_field = _TOPICS.search(chunk)
    topics = _D.findall(topics_field.group(1)) if topics_field else []
    return {
        "where": where,
        "id": attributes["NEWID"].strip(),
        "lewissplit": attributes.get("LEWISSPLIT", ""),
        "cgisplit": attributes.get("CGISPLIT", ""),
        "has_topics": attributes.get("TOPICS", ""),
        "topics": [clean(t).strip() for t in topics if clean(t).strip()],
        "text": _record_text(chunk),
    }


def _record_text(chunk):
    """Title + newline + body; for a BRIEF record the title alone; for an UNPROC record (no
    TITLE nor BODY) the raw content of TEXT."""
    title, body = _TITLE.search(chunk), _BODY.search(chunk)
    parts = [clean(m.group(1)).strip() for m in (title, body) if m]
    if not parts:
        text = _TEXT.search(chunk)
        parts = [clean(_TAG.sub(" ", text.group(2))).strip()] if text else []
    return "\n".join(p for p in parts if p)


def clean(text):
    """Unescape SGML entities (named and numeric) and drop control characters (but newlines
    and tabs)."""
    text = _ENTITY.sub(_entity, text) if "&" in text else text
    return _CONTROL.sub("", text)


def _entity(match):
    name = match.group(1)
    if name[0] != "#":
        return _NAMED.get(name.lower(), match.group(0))
    code = int(name[2:], 16) if name[1] in "xX" else int(name[1:])
    return chr(code) if code < 0x110000 else ""  # control characters go in clean()


def _check_unique_ids(records):
    seen = {}
    for rec in records:
        if rec["id"] in seen:
            raise CorpusFormatError(
                f"Reuters NEWID {rec['id']} occurs twice: {seen[rec['id']]} and {rec['where']}; "
                f"is a reut2-*.sgm file duplicated under another name? Remove the copy"
            )
        seen[rec["id"]] = rec["where"]


def _in_split(rec, split):
    if split == "all":
        return True
    scheme, part = split.split("-")
    if rec["lewissplit"] != part.upper():
        return False
    return scheme == "lewis" or rec["has_topics"] == "YES"


def _keeps(topics, rule):
    return len(topics) == 1 if rule == "single" else len(topics) >= 1

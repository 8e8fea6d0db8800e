"""On-disk cache of parsed corpora and of term counts: a second run skips parsing and
tokenization.

An entry is a folder ``<cache>/<kind>/<sha256 of its key>/`` holding ``key.json`` (what it was
built from), ``meta.json``, ``arrays.npz`` and, for texts, ``texts.json``. Nothing is pickled:
arrays are read back with ``allow_pickle=False``. The key of

* a parsed corpus (kind ``corpus``) holds the corpus name, the loader's options (defaults filled
  in) and the path and sha256 of every file the loader reads, as it declares them
  (:func:`textcluster.corpora.loaders.source_files`: e.g. every ``reut2-*.sgm`` of the Reuters
  folder, a folder's documents matching its pattern, a CLUTO matrix with its label and
  vocabulary files), so that a file added, removed or changed gives another key (``hf:``
  datasets are not cached here; Hugging Face caches them);
* term counts (kind ``counts``) hold the sha256 of the documents' texts and the tokenization
  options (stop words, lower-casing, normalization, min_df, max_df, max_features); the tf-idf
  weighting is recomputed from them, which takes milliseconds;

and both the versions of textcluster, spaCy, scikit-learn, NLTK, NumPy and SciPy plus a digest of
the textcluster source that builds the entry (the loaders for a corpus, the tokenizer for
counts), so that changed code never reads an old entry.

An entry is written into a temporary folder and renamed into place, so readers see all of it or
nothing. An entry that cannot be read is removed with a :class:`CacheWarning` and rebuilt; a cache
that cannot be written is skipped with a warning. The cache lives in ``$TEXTCLUSTER_CACHE``, else
``$XDG_CACHE_HOME/textcluster/cache`` (``~/.cache/textcluster/cache``); ``TEXTCLUSTER_CACHE=off``
or :func:`disabled` turn it off.
"""

import dataclasses
import functools
import hashlib
import importlib.metadata
import inspect
import json
import os
import re
import shutil
import tempfile
import warnings
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from .. import __version__
from . import cards
from .._errors import TextclusterError
from .corpus import Corpus
from .loaders import resolve_loader, source_files
from .loaders._paths import StrPath

CACHE_ENV = "TEXTCLUSTER_CACHE"
OFF_VALUES = frozenset({"off", "0", "false", "no", "none"})
FORMAT = 1
KINDS = ("corpus", "counts")
VERSIONED = ("spacy", "scikit-learn", "nltk", "numpy", "scipy")
_ENTRY_NAME = re.compile(r"[0-9a-f]{64}")
_disabled = ContextVar("textcluster_cache_disabled", default=False)

Key = dict[str, Any]  # what an entry is built from; JSON


class CacheWarning(UserWarning):
    """The cache could not be read or written; textcluster went on without it."""


@contextmanager
def disabled() -> Iterator[None]:
    """Within the block nothing is read from or written to the cache (``--no-cache``)."""
    token = _disabled.set(True)
    try:
        yield
    finally:
        _disabled.reset(token)


def location() -> Path:
    """The cache folder (whether or not caching is on)."""
    value = os.environ.get(CACHE_ENV, "").strip()
    if value and value.lower() not in OFF_VALUES:
        return Path(value).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "textcluster" / "cache"


def is_enabled() -> bool:
    off = os.environ.get(CACHE_ENV, "").strip().lower() in OFF_VALUES
    return not (off or _disabled.get())


# -- keys -----------------------------------------------------------------------------------------


def corpus_key(name: str, data_dir: StrPath | None, options: dict[str, Any]) -> Key | None:
    """The key of ``load_corpus(name, data_dir, **options)``, or ``None`` when it is not cached:
    caching off, a loader that does not declare its files (``hf:NAME``), options the loader
    does not take or that are not plain values, or files that cannot be found or read (the
    loader then says what is wrong)."""
    if not is_enabled():
        return None
    try:
        bound = inspect.signature(resolve_loader(name)).bind_partial(**options)
    except (TextclusterError, TypeError):
        return None
    bound.apply_defaults()
    chosen = {k: v for k, v in bound.arguments.items() if k != "data_dir"}
    files = source_file_digests(name, data_dir, chosen)
    return _key("corpus", name=name, options=chosen, files=files) if files else None


def source_file_digests(name: str, data_dir: StrPath | None,
                        options: dict[str, Any]) -> list[list[str]] | None:
    """``[[path, sha256], ...]`` of every file corpus ``name`` is read from (as its loader
    declares them, in its order); ``None`` when they are not known or cannot be read."""
    try:
        files = source_files(name, data_dir, **options)
        return None if files is None else [[str(p), cards.file_sha256(p)] for p in files]
    except (TextclusterError, OSError):
        return None


def counts_key(texts: Sequence[str], options: dict[str, Any]) -> Key | None:
    """The key of the term counts of ``texts`` under the tokenization ``options``."""
    if not is_enabled():
        return None
    try:
        digest = texts_digest(texts)
    except (AttributeError, TypeError, UnicodeError):
        return None
    return _key("counts", texts=digest, n_texts=len(texts), options=options)


def texts_digest(texts: Iterable[str]) -> str:
    """sha256 over the texts, each prefixed by its length in UTF-8 bytes."""
    digest = hashlib.sha256()
    for text in texts:
        data = text.encode("utf-8", "surrogatepass")
        digest.update(len(data).to_bytes(8, "little"))
        digest.update(data)
    return digest.hexdigest()


def _key(kind, **parts):
    key = {"kind": kind, "format": FORMAT, **parts, "versions": versions(kind)}
    try:
        _canonical(key)
    except (TypeError, ValueError):  # an option value JSON cannot hold exactly
        return None
    return key


def _canonical(value):
    """Canonical JSON; ASCII, so that strings UTF-8 cannot encode (a file name that is not
    UTF-8, a lone surrogate in a text) are escaped rather than fail."""
    return json.dumps(value, sort_keys=True, allow_nan=False)


# The textcluster source an entry of each kind depends on (besides this module).
SOURCES = {"corpus": ("corpora/loaders/*.py", "corpora/corpus.py"), "counts": ("text/*.py",)}


@functools.cache
def versions(kind: str) -> dict[str, str | None]:
    """Versions of textcluster and of the libraries that shape a parsed corpus or its counts,
    and a digest of the textcluster source that builds an entry of ``kind`` (so that edited
    loaders never read old corpora, and edited tokenizers never read old counts)."""
    found = {"textcluster": __version__, "source": _source_digest(SOURCES[kind])}
    for dist in VERSIONED:
        try:
            found[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            found[dist] = None
    return found


def _source_digest(patterns):
    package = Path(__file__).resolve().parents[1]  # textcluster/
    files = sorted({path for pattern in (*patterns, "corpora/cache.py")
                    for path in package.glob(pattern)})
    digest = hashlib.sha256()
    for path in files:
        digest.update(path.relative_to(package).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def _entry_dir(key):
    digest = hashlib.sha256(_canonical(key).encode("utf-8")).hexdigest()
    return location() / key["kind"] / digest


# -- reading and writing entries ------------------------------------------------------------------


def load_corpus(key: Key | None) -> Corpus | None:
    """The cached corpus of ``key``, or ``None``."""
    return _read(key, _read_corpus)


def save_corpus(key: Key | None, corpus: Corpus) -> None:
    _write(key, lambda folder: _write_corpus(folder, corpus))


def load_counts(key: Key | None) -> tuple[sp.csr_matrix, np.ndarray] | None:
    """The cached ``(counts, vocabulary)`` of ``key``, or ``None``."""
    return _read(key, _read_counts)


def save_counts(key: Key | None, counts: sp.spmatrix, vocabulary: Sequence[str]) -> None:
    _write(key, lambda folder: _write_counts(folder, counts, vocabulary))


def _read(key, reader):
    if key is None or not is_enabled():
        return None
    folder = _entry_dir(key)
    if not folder.is_dir():
        return None
    try:
        stored = json.loads((folder / "key.json").read_text(encoding="utf-8"))
        if _canonical(stored) != _canonical(key):
            raise ValueError("its key.json does not match the key it is stored under")
        return reader(folder)
    except Exception as exc:  # noqa: BLE001 — whatever is wrong with an entry, rebuild it
        _warn(f"the cache entry {folder} is unreadable ({type(exc).__name__}: {exc}); it is "
              f"removed and rebuilt")
        shutil.rmtree(folder, ignore_errors=True)
        return None


def _write(key, writer):
    """Write an entry atomically: into a temporary folder beside it, then renamed into place."""
    if key is None or not is_enabled():
        return
    final = _entry_dir(key)
    if final.is_dir():
        return
    tmp = None
    try:
        final.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=final.parent))
        if writer(tmp):  # False: content that cannot be stored without pickle, not cached
            (tmp / "key.json").write_text(_canonical(key), encoding="utf-8")
            os.rename(tmp, final)
            tmp = None
    except OSError as exc:
        if not final.is_dir():  # (a concurrent run that stored the same entry first is fine)
            _warn(f"could not write to the cache {location()} ({exc}); going on without it. "
                  f"Set ${CACHE_ENV} to a writable folder, or to 'off'.")
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)


def _warn(message):
    warnings.warn(f"textcluster cache: {message}", CacheWarning, stacklevel=4)


def _write_json(path, value):
    path.write_text(_canonical(value), encoding="utf-8")


def _read_json(path):
    return json.loads(path.read_text(encoding="utf-8"))


def _write_corpus(folder, corpus):
    """Each field of the :class:`Corpus` as JSON (strings, metadata, texts) or arrays."""
    arrays, meta = {}, {"fields": {}, "values": {}}
    for field in dataclasses.fields(Corpus):
        value = getattr(corpus, field.name)
        kind = _store(field.name, value, arrays, meta["values"], folder)
        if kind is None:
            return False
        meta["fields"][field.name] = kind
    np.savez(folder / "arrays.npz", **arrays)
    _write_json(folder / "meta.json", meta)
    return True


def _store(name, value, arrays, values, folder):
    """Store one field; returns how it was stored, or ``None`` when it cannot be."""
    if value is None:
        return "none"
    if sp.issparse(value):
        matrix = sp.csr_matrix(value)
        arrays.update({f"{name}__data": matrix.data, f"{name}__indices": matrix.indices,
                       f"{name}__indptr": matrix.indptr,
                       f"{name}__shape": np.array(matrix.shape, dtype=np.int64)})
        return "csr"
    if isinstance(value, np.ndarray) and value.dtype.kind in "biufU":
        arrays[name] = value
        return "array"
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        _write_json(folder / f"{name}.json", value)
        return "json-file"
    if isinstance(value, (str, dict)) and _round_trips(value):
        values[name] = value
        return "json"
    return None


def _round_trips(value):
    try:
        return json.loads(_canonical(value)) == value
    except (TypeError, ValueError):
        return False


def _read_corpus(folder):
    meta = _read_json(folder / "meta.json")
    with np.load(folder / "arrays.npz", allow_pickle=False) as arrays:
        fields = {name: _restore(name, kind, arrays, meta["values"], folder)
                  for name, kind in meta["fields"].items()}
    return Corpus(**fields)


def _restore(name, kind, arrays, values, folder):
    if kind == "none":
        return None
    if kind == "csr":
        return _csr(arrays, name)
    if kind == "array":
        return arrays[name]
    if kind == "json-file":
        return _read_json(folder / f"{name}.json")
    if kind == "json":
        return values[name]
    raise ValueError(f"unknown stored kind {kind!r} for field {name!r}")


def _csr(arrays, name):
    matrix = sp.csr_matrix(
        (arrays[f"{name}__data"], arrays[f"{name}__indices"], arrays[f"{name}__indptr"]),
        shape=tuple(int(n) for n in arrays[f"{name}__shape"]),
    )
    matrix.check_format(full_check=True)
    return matrix


def _write_counts(folder, counts, vocabulary):
    arrays = {}
    _store("counts", counts, arrays, {}, folder)
    arrays["vocabulary"] = np.asarray(vocabulary, dtype=str)
    np.savez(folder / "arrays.npz", **arrays)
    _write_json(folder / "meta.json", {"vocabulary_dtype": np.asarray(vocabulary).dtype.str})
    return True


def _read_counts(folder):
    meta = _read_json(folder / "meta.json")
    with np.load(folder / "arrays.npz", allow_pickle=False) as arrays:
        counts, vocabulary = _csr(arrays, "counts"), arrays["vocabulary"]
    if counts.shape[1] != len(vocabulary):
        raise ValueError(f"{counts.shape[1]} columns but {len(vocabulary)} terms")
    return counts, vocabulary.astype(np.dtype(meta["vocabulary_dtype"]))


# -- listing and clearing -------------------------------------------------------------------------


@dataclasses.dataclass
class Entry:
    """One cache entry, for ``textcluster cache info``."""

    kind: str
    path: Path
    size: int
    modified: float
    key: dict | None  # None when key.json cannot be read

    @property
    def stale(self) -> bool:
        """Built by other versions of textcluster or its libraries: never read again."""
        return self.key is None or self.key.get("versions") != versions(self.kind)

    @property
    def summary(self) -> str:
        if self.key is None:
            return "unreadable"
        options = ", ".join(f"{k}={v}" for k, v in sorted(self.key.get("options", {}).items()))
        what = (self.key.get("name") if self.kind == "corpus"
                else f"{self.key.get('n_texts')} texts")
        return f"{what} ({options})" if options else str(what)


def entries() -> list[Entry]:
    """Every entry in the cache folder, newest first."""
    found = []
    for kind in KINDS:
        folder = location() / kind
        for path in sorted(folder.iterdir()) if folder.is_dir() else []:
            if path.is_dir() and _ENTRY_NAME.fullmatch(path.name):
                found.append(Entry(kind, path, _size(path), path.stat().st_mtime,
                                   _key_or_none(path)))
    return sorted(found, key=lambda e: -e.modified)


def clear(stale_only: bool = False) -> tuple[int, int]:
    """Remove every entry (or only the stale ones) and leftover temporary folders; returns
    ``(entries removed, bytes freed)``.

    Only folders the cache itself names (``<kind>/<sha256>``, ``<kind>/.tmp-*``) are removed,
    so a cache location pointed at the wrong folder loses nothing else."""
    doomed = [e.path for e in entries() if e.stale or not stale_only]
    removed, freed = len(doomed), sum(_size(path) for path in doomed)
    for kind in KINDS:
        folder = location() / kind
        doomed += [p for p in folder.glob(".tmp-*") if p.is_dir()] if folder.is_dir() else []
    for path in doomed:
        shutil.rmtree(path, ignore_errors=True)
    for kind in KINDS:
        folder = location() / kind
        if folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()
    return removed, freed


def _size(folder):
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def _key_or_none(folder):
    try:
        return _read_json(folder / "key.json")
    except (OSError, ValueError):
        return None

"""Where corpus files are looked for: the folder given with ``--data-dir`` (``data_dir``) alone;
without one, ``$TEXTCLUSTER_DATA``, then ``corpora/``."""

import os
from pathlib import Path

from ..._errors import DataNotFoundError

DATA_ENV = "TEXTCLUSTER_DATA"

StrPath = str | os.PathLike[str]  # a path, as the loaders and fetch take it


def default_cache_dir() -> Path:
    """The project's ``corpora/`` folder when run from a checkout, else ``~/.cache/textcluster``."""
    checkout = Path(__file__).resolve().parents[3] / "corpora"
    if checkout.is_dir():
        return checkout
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "textcluster"


def search_dirs(data_dir: StrPath | None = None) -> list[Path]:
    """Every folder that may hold corpora, in order: ``data_dir``, ``$TEXTCLUSTER_DATA``, the
    default folder. Loaders read from :func:`corpus_dirs` only."""
    return [*([Path(data_dir)] if data_dir is not None else []), *corpus_dirs(None)]


def corpus_dirs(data_dir: StrPath | None = None) -> list[Path]:
    """The folders loaders read corpora from: ``[data_dir]`` when one is given (an explicit
    folder is the one used, never another copy), else ``$TEXTCLUSTER_DATA`` and the default
    folder."""
    if data_dir is not None:
        return [Path(data_dir)]
    env = os.environ.get(DATA_ENV)
    return [*([Path(env)] if env else []), default_cache_dir()]


def find_corpus_dir(subdir: str, required: list[str], data_dir: StrPath | None = None,
                    source: str | None = None) -> Path:
    """First ``<dir>/<subdir>`` among :func:`corpus_dirs` holding every pattern in ``required``.

    ``required`` are glob patterns, e.g. ``["reut2-0*.sgm*"]``. Raises
    :class:`DataNotFoundError` naming every folder looked at, the other data folders that do
    hold the corpus, and where to get the files.
    """
    looked = [base / subdir for base in corpus_dirs(data_dir)]
    for folder in looked:
        if _holds(folder, required):
            return folder
    if data_dir is None:
        where, hint = f"in any of: {'; '.join(map(str, looked))}", ""
    else:
        where = f"in {looked[0]} (the folder given with --data-dir)"
        others = [base for base in corpus_dirs(None) if _holds(base / subdir, required)]
        hint = (f" {_describe(others[0])} holds them in {others[0] / subdir}: leave --data-dir "
                f"out to use that copy, or pass --data-dir {others[0]}." if others else "")
    get = f"Download them from {source} and pass" if source else "Put them there, or pass"
    raise DataNotFoundError(
        f"could not find {', '.join(required)} for corpus folder {subdir!r} {where}.{hint} "
        f"{get} the folder holding {subdir}/ with --data-dir or ${DATA_ENV}."
    )


def _holds(folder, required):
    return folder.is_dir() and all(any(folder.glob(p)) for p in required)


def _describe(base):
    """``$TEXTCLUSTER_DATA (<folder>)`` or ``the default data folder <folder>``."""
    if os.environ.get(DATA_ENV) and base == Path(os.environ[DATA_ENV]):
        return f"${DATA_ENV} ({base})"
    return f"the default data folder {base}"

"""Where corpus files are looked for: ``--data-dir``, ``$TEXTCLUSTER_DATA``, then ``corpora/``."""

import os
from pathlib import Path

from .._errors import DataNotFoundError

DATA_ENV = "TEXTCLUSTER_DATA"


def default_cache_dir():
    """The project's ``corpora/`` folder when run from a checkout, else ``~/.cache/textcluster``."""
    checkout = Path(__file__).resolve().parents[2] / "corpora"
    if checkout.is_dir():
        return checkout
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "textcluster"


def search_dirs(data_dir=None):
    """The folders searched for corpora, in order."""
    dirs = []
    if data_dir is not None:
        dirs.append(Path(data_dir))
    if os.environ.get(DATA_ENV):
        dirs.append(Path(os.environ[DATA_ENV]))
    dirs.append(default_cache_dir())
    return dirs


def find_corpus_dir(subdir, required, data_dir=None, source=None):
    """First ``<dir>/<subdir>`` among :func:`search_dirs` holding every pattern in ``required``.

    ``required`` are glob patterns, e.g. ``["reut2-0*.sgm*"]``. Raises
    :class:`DataNotFoundError` naming every folder looked at and where to get the files.
    """
    looked = []
    for base in search_dirs(data_dir):
        folder = base / subdir
        looked.append(str(folder))
        if folder.is_dir() and all(any(folder.glob(p)) for p in required):
            return folder
    get = f"Download them from {source} and pass" if source else "Put them there, or pass"
    raise DataNotFoundError(
        f"could not find {', '.join(required)} for corpus folder {subdir!r}; looked in: "
        f"{'; '.join(looked)}. {get} the folder holding {subdir}/ with --data-dir or "
        f"${DATA_ENV}."
    )

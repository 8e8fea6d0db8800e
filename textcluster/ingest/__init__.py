"""Corpus loaders, by name: ``load_corpus("reuters", data_dir=..., split="modapte-train")``.

A loader is a function ``loader(data_dir=None, **options) -> Corpus``; add one with
``CORPORA.register("name", loader)``.
"""

import functools
import inspect
from pathlib import Path

from .._errors import InvalidInputError
from ..corpus import Corpus
from ..registry import Registry, UnknownNameError
from .folder import load_folder
from .matlab import load_reuters_cai, load_tdt2
from .reuters import load_reuters

CORPORA = Registry("corpus", "corpora")
CORPORA.register("reuters", load_reuters)
CORPORA.register("tdt2", load_tdt2)
CORPORA.register("reuters-cai", load_reuters_cai)


def resolve_loader(name):
    """The loader for ``name``: a registered corpus, else a folder of text files."""
    if name not in CORPORA and Path(name).is_dir():
        return functools.partial(_load_folder_corpus, name)
    try:
        return CORPORA.get(name)
    except UnknownNameError as exc:
        raise UnknownNameError(
            f"{exc}; or give the path of a folder of .txt documents (there is no folder "
            f"{name!r})"
        ) from None


def _load_folder_corpus(path, data_dir=None, pattern="*.txt", min_class_size=None, top=None):
    return load_folder(path, pattern=pattern, min_class_size=min_class_size, top=top)


def load_corpus(name, data_dir=None, **options):
    """Load the corpus registered as ``name`` (or the folder at path ``name``), passing
    ``data_dir`` and ``options`` on."""
    loader = resolve_loader(name)
    accepted = [p for p in inspect.signature(loader).parameters if p != "data_dir"]
    unknown = sorted(set(options) - set(accepted))
    if unknown:
        raise InvalidInputError(
            f"corpus {name!r} has no option {unknown[0]!r}; its options are: "
            f"{', '.join(accepted) or 'none'}"
        )
    return loader(data_dir=data_dir, **options)


__all__ = [
    "CORPORA",
    "Corpus",
    "load_corpus",
    "load_folder",
    "resolve_loader",
    "load_reuters",
    "load_reuters_cai",
    "load_tdt2",
]

"""Corpus loaders, by name: ``load_corpus("reuters", data_dir=..., split="modapte-train")``.

A loader is a function ``loader(data_dir=None, **options) -> Corpus``; add one with
``CORPORA.register("name", loader)``.
"""

import inspect

from .._errors import InvalidInputError
from ..corpus import Corpus
from ..registry import Registry
from .matlab import load_reuters_cai, load_tdt2
from .reuters import load_reuters

CORPORA = Registry("corpus", "corpora")
CORPORA.register("reuters", load_reuters)
CORPORA.register("tdt2", load_tdt2)
CORPORA.register("reuters-cai", load_reuters_cai)


def load_corpus(name, data_dir=None, **options):
    """Load the corpus registered as ``name``, passing ``data_dir`` and ``options`` on."""
    loader = CORPORA.get(name)
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
    "load_reuters",
    "load_reuters_cai",
    "load_tdt2",
]

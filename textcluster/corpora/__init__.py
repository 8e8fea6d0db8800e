"""Corpora: the :class:`Corpus` type, the loaders by name, corpus cards, downloads and the cache.

* :mod:`.corpus` — :class:`Corpus`, the one type every loader returns.
* :mod:`.loaders` — ``load_corpus(name, data_dir=..., **options)``: Reuters-21578 SGML, TDT2,
  SECTOR, CiteULike, the panel's tables and CLUTO sets, Hugging Face datasets, table files and
  folders of ``.txt`` files.
* :mod:`.cards` — what each built-in corpus is and where to download it (``corpora/*.toml``).
* :mod:`.fetch` — ``textcluster corpora fetch``: download, verify and unpack a corpus.
* :mod:`.cache` — parsed corpora and term counts on disk, so a second run skips parsing.
"""

from .corpus import Corpus
from .loaders import CORPORA, load_corpus, resolve_loader

__all__ = ["CORPORA", "Corpus", "load_corpus", "resolve_loader"]

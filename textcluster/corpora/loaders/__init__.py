"""Corpus loaders, by name: ``load_corpus("reuters", data_dir=..., split="modapte-train")``.

A loader is a function ``loader(data_dir=None, **options) -> Corpus``; add one with
``CORPORA.register("name", loader)``. A loader with a ``view`` option and a ``views`` attribute
(the allowed values) can be named ``"name:view"``, e.g. ``"citeulike-t:users"``. The panel's
CLUTO sets are registered one by one, as ``"cluto:<set>"``.

A loader declares the files it reads with :func:`~._files.reads` (``loader.source_files``):
:func:`source_files` lists them for a corpus name, and the cache of parsed corpora keys an entry
on their content. A loader without it (``hf:NAME``) is not cached.

Besides registered names, a corpus name can be ``hf:NAME`` (a Hugging Face dataset), the path
of a table file (``.csv``, ``.tsv``, ``.jsonl``, ``.json``, ``.parquet``), of a MATLAB file
with Deng Cai's ``fea`` and ``gnd``, of a CLUTO matrix (``<name>.mat[.gz]`` holding text,
``sparse_<name>.txt[.gz]``) or of a folder of ``.txt`` files.
"""

import functools
import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..._errors import InvalidInputError
from ..corpus import Corpus
from ...registry import Registry, UnknownNameError
from .citeulike import load_citeulike_a, load_citeulike_t
from .cluto import SETS as CLUTO_SETS
from .cluto import is_cluto_file, load_cluto, load_cluto_set
from ._files import reads
from ._paths import StrPath
from .folder import load_folder
from .libsvm import load_libsvm, load_sector
from .matlab import is_matlab_file, load_mat_file, load_reuters_cai, load_tdt2
from .panel import TABLES as PANEL_TABLES
from .panel import load_panel_table
from .reuters import load_reuters
from .table import HF_PREFIX, load_hf, load_table, table_format

Loader = Callable[..., Corpus]  # loader(data_dir=None, **options)

CORPORA = Registry("corpus", "corpora")
CORPORA.register("reuters", load_reuters)
CORPORA.register("tdt2", load_tdt2)
CORPORA.register("reuters-cai", load_reuters_cai)
CORPORA.register("sector", load_sector)
CORPORA.register("citeulike-t", load_citeulike_t)
CORPORA.register("citeulike-a", load_citeulike_a)


def _partial(loader, *args):
    """``functools.partial(loader, *args)``, with the files it reads declared likewise."""
    bound = functools.partial(loader, *args)
    bound.source_files = functools.partial(loader.source_files, *args)
    return bound


for _name in PANEL_TABLES:
    CORPORA.register(_name, _partial(load_panel_table, _name))
for _name in CLUTO_SETS:
    CORPORA.register(f"cluto:{_name}", _partial(load_cluto_set, _name))


def resolve_loader(name: str) -> Loader:
    """The loader for ``name``: a registered corpus, ``name:view``, ``hf:NAME``, a table file,
    a MATLAB or CLUTO matrix file or a folder of text files. Its signature lists the options it
    takes."""
    if name in CORPORA:
        return CORPORA.get(name)
    if name.startswith(HF_PREFIX) and len(name) > len(HF_PREFIX):
        return _bind(load_hf, name=name[len(HF_PREFIX):])
    path = Path(name)
    if path.is_dir():
        return _partial(_load_folder_corpus, name)
    if is_matlab_file(path):
        return _bind(load_mat_file, path=name)
    if is_cluto_file(path):  # before the tables: CLUTO's sparse_<set>.txt
        return _bind(load_cluto, path=name)
    if table_format(name) is not None:
        return _bind(load_table, path=name)
    base, sep, view = name.rpartition(":")
    if sep and base in CORPORA:
        return _view_loader(base, view)
    try:
        return CORPORA.get(name)
    except UnknownNameError as exc:
        found = (f"{name!r} is none of these" if path.exists()
                 else f"there is no folder or file {name!r}")
        raise UnknownNameError(
            f"{exc}; or give hf:NAME for a Hugging Face dataset, the path of a .csv, .jsonl, "
            f".json, .parquet or .xlsx file, of a .txt file of one document per line, of a MATLAB or "
            f"CLUTO .mat file, or of a folder of .txt documents ({found})"
        ) from None


def _view_loader(base, view):
    loader = CORPORA.get(base)
    views = getattr(loader, "views", None)
    if views is None or "view" not in inspect.signature(loader).parameters:
        raise UnknownNameError(f"corpus {base!r} has no views; name it {base!r}, without ':{view}'")
    if view not in views:
        raise UnknownNameError(
            f"corpus {base!r} has no view {view!r}; its views are: "
            f"{', '.join(f'{base}:{v}' for v in views)}"
        )
    return _bind(loader, view=view)


def _bind(loader, **fixed):
    """``loader`` with the ``fixed`` arguments set; its signature lists ``data_dir`` (passed
    on only when ``loader`` takes it) and the options left, as keyword-only parameters."""
    parameters = inspect.signature(loader).parameters
    takes_data_dir = "data_dir" in parameters

    def bound(data_dir=None, **options):
        if takes_data_dir:
            options["data_dir"] = data_dir
        return loader(**fixed, **options)

    if hasattr(loader, "source_files"):
        bound.source_files = functools.partial(loader.source_files, **fixed)
    keyword = inspect.Parameter.KEYWORD_ONLY
    bound.__signature__ = inspect.Signature([
        inspect.Parameter("data_dir", keyword, default=None),
        *(p.replace(kind=keyword) for name, p in parameters.items()
          if name not in fixed and name != "data_dir"),
    ])
    return bound


def _folder_corpus_files(path, data_dir=None, pattern=None, **_options):
    return load_folder.source_files(path, pattern=pattern)


@reads(_folder_corpus_files)
def _load_folder_corpus(path, data_dir=None, pattern=None, min_class_size=None, top=None,
                        strip_headers=False):
    return load_folder(path, pattern=pattern, min_class_size=min_class_size, top=top,
                       strip_headers=strip_headers)


def source_files(name: str, data_dir: StrPath | None = None,
                 **options: Any) -> list[Path] | None:
    """The files ``load_corpus(name, data_dir, **options)`` reads, or ``None`` when its loader
    does not declare them (``hf:NAME``). Raises what the loader would raise when they cannot
    be found (e.g. :class:`DataNotFoundError`) or an option is bad."""
    loader = resolve_loader(name)
    declared = getattr(loader, "source_files", None)
    if declared is None:
        return None
    try:
        bound = inspect.signature(loader).bind_partial(**options)
    except TypeError as exc:
        raise InvalidInputError(f"corpus {name!r}: {exc}") from None
    bound.apply_defaults()
    return list(declared(**{**bound.arguments, "data_dir": data_dir}))


def loader_options(loader: Loader) -> list[str]:
    """The options ``loader`` takes by name: its parameters but ``data_dir``."""
    return [p for p in inspect.signature(loader).parameters if p != "data_dir"]


def load_corpus(name: str, data_dir: StrPath | None = None, **options: Any) -> Corpus:
    """Load the corpus registered as ``name`` (or at path ``name``, see
    :func:`resolve_loader`), passing ``data_dir`` and ``options`` on."""
    loader = resolve_loader(name)
    accepted = loader_options(loader)
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
    "load_citeulike_a",
    "load_citeulike_t",
    "loader_options",
    "load_cluto",
    "load_cluto_set",
    "load_folder",
    "load_hf",
    "load_libsvm",
    "load_mat_file",
    "load_panel_table",
    "load_sector",
    "load_table",
    "resolve_loader",
    "source_files",
    "load_reuters",
    "load_reuters_cai",
    "load_tdt2",
]

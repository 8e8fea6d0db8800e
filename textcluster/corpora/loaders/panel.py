"""The development panel's text corpora, ``<data folder>/panel/<name>/<name>.csv.gz``: gzip CSV
with the columns ``id``, ``text`` and ``label``, read by :func:`~.table.load_table`.

Each was built from one or more public repositories (its card, ``corpora/<name>.toml``, names
them); the panel's CLUTO term-count sets are in :mod:`textcluster.corpora.loaders.cluto`.
"""

from pathlib import Path

from ..._errors import InvalidInputError
from ..corpus import Corpus
from ._files import reads
from ._paths import StrPath, find_corpus_dir
from .table import load_table

TABLES = ("agnews", "biomedical", "classic4", "dbpedia", "r8", "stackoverflow")


def panel_table_files(name: str, data_dir: StrPath | None = None,
                      **_options: object) -> list[Path]:
    """The file :func:`load_panel_table` reads for ``name``."""
    if name not in TABLES:
        raise InvalidInputError(f"no panel text corpus {name!r}; they are: {', '.join(TABLES)}")
    file_name = f"{name}.csv.gz"
    return [find_corpus_dir(f"panel/{name}", [file_name], data_dir) / file_name]


@reads(panel_table_files)
def load_panel_table(name: str, data_dir: StrPath | None = None, min_class_size: int | None = None,
                     top: int | None = None) -> Corpus:
    """The panel's text corpus ``name`` (one of :data:`TABLES`)."""
    path = panel_table_files(name, data_dir)[0]
    return load_table(path, min_class_size=min_class_size, top=top)

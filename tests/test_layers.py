"""The package's layers: every module imports only from its own layer or the ones below, and
no module grows past the size a reader can hold."""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "textcluster"
# Lowest first: the math ← corpora ← pipeline ← batch ← report ← the entry points.
LAYERS = [
    {"_compat", "_errors", "_threads", "registry", "progress"},
    {"metrics", "graph", "assign", "models", "text"},
    {"corpora"},
    {"pipeline"},
    {"batch"},
    {"report"},
    {"api", "cli"},
]
MAX_LINES = 620


def layer_of(top):
    return next(i for i, names in enumerate(LAYERS) if top in names)


def modules():
    return sorted(p for p in PACKAGE.rglob("*.py") if p != PACKAGE / "__init__.py")


def imported(path):
    """The top-level textcluster names ``path`` imports (``corpora`` for
    ``from ..corpora.cache import x``, ``graph`` for ``from .. import graph``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = path.relative_to(PACKAGE.parent).with_suffix("").parts[:-1]
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = list(package[: len(package) - node.level + 1])
                parts = base + (node.module.split(".") if node.module else [])
            else:
                parts = (node.module or "").split(".")
            if parts[:1] != ["textcluster"]:
                continue
            if len(parts) > 1:
                yield parts[1]
            else:  # from textcluster import x, y
                yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] == "textcluster" and len(parts) > 1:
                    yield parts[1]


@pytest.mark.parametrize("path", modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_imports_go_down_the_layers(path):
    own = path.relative_to(PACKAGE).with_suffix("").parts[0]
    for name in imported(path):
        if name == "__version__":
            continue
        assert layer_of(name) <= layer_of(own), (
            f"{path.relative_to(PACKAGE)} ({own}) imports {name}, a higher layer")


def test_every_module_is_in_a_layer():
    tops = {p.relative_to(PACKAGE).with_suffix("").parts[0] for p in modules()}
    assert tops <= set().union(*LAYERS), tops - set().union(*LAYERS)


@pytest.mark.parametrize("path", modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_module_is_too_long(path):
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_LINES, f"{path.relative_to(PACKAGE)} has {lines} lines"


def test_few_top_level_modules():
    top = [p.name for p in PACKAGE.glob("*.py") if p.name != "__init__.py"]
    assert len(top) <= 9, top

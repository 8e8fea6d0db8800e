"""Optional dependencies (the extras of pyproject.toml) and scikit-learn's private API.

A missing optional package is simulated with ``sys.modules[name] = None``, which makes
``import name`` fail as if it were not installed.
"""

import ast
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner

from textcluster import _compat
from textcluster._compat import require
from textcluster._errors import MissingDependencyError, TextclusterError
from textcluster.cli import main

from ._corpora import write_folder_corpus

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "textcluster"
OPTIONAL = ("matplotlib", "datasets", "pyarrow", "nltk", "dask", "distributed", "sparse_dot_mkl")


def _pyproject():
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def missing(monkeypatch, *names):
    """Make ``import name`` (and of its submodules) fail for each of ``names``."""
    for name in names:
        for module in [m for m in sys.modules if m.startswith(f"{name}.")]:
            monkeypatch.delitem(sys.modules, module)
        monkeypatch.setitem(sys.modules, name, None)


def test_require_returns_the_module():
    assert require("json", extra="none", feature="x") is sys.modules["json"]


def test_require_names_the_extra(monkeypatch):
    missing(monkeypatch, "matplotlib")
    with pytest.raises(MissingDependencyError) as caught:
        require("matplotlib", extra="plots", feature="textcluster report")
    assert str(caught.value) == (
        "textcluster report needs matplotlib: pip install 'textcluster[plots]'")
    assert isinstance(caught.value, TextclusterError)  # the CLI's exit code 2
    assert isinstance(caught.value, ImportError)


def test_require_keeps_a_broken_install_s_own_error(monkeypatch, tmp_path):
    """Only the package itself missing becomes the extra's message; a package that is there
    but fails to import (a broken install: one of its own dependencies missing) keeps its
    error."""
    (tmp_path / "brokenpkg").mkdir()
    (tmp_path / "brokenpkg" / "__init__.py").write_text("import textcluster_no_such_module\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ModuleNotFoundError) as caught:
        require("brokenpkg", extra="x", feature="x")
    assert not isinstance(caught.value, MissingDependencyError)
    assert caught.value.name == "textcluster_no_such_module"


def test_plots_need_the_plots_extra(monkeypatch):
    from textcluster.report import plots

    missing(monkeypatch, "matplotlib")
    with pytest.raises(MissingDependencyError, match=r"pip install 'textcluster\[plots\]'"):
        plots.objective_traces([("nmf", [3.0, 2.0, 1.0])])


def test_stemming_needs_the_nltk_extra(monkeypatch):
    from textcluster.text.tokenize import Analyzer

    missing(monkeypatch, "nltk")
    with pytest.raises(MissingDependencyError,
                       match=r"stemming \(normalize=stem\) needs nltk: pip install "
                             r"'textcluster\[nltk\]'"):
        Analyzer(normalize="stem")
    Analyzer()  # the default (no stemming) needs no nltk


def test_hugging_face_needs_the_hf_extra(monkeypatch):
    from textcluster.corpora.loaders import load_hf

    missing(monkeypatch, "datasets")
    with pytest.raises(MissingDependencyError, match=r"'textcluster\[hf\]'"):
        load_hf("ag_news")


@pytest.mark.parametrize("name, module, extra", [("docs.parquet", "pyarrow", "parquet"),
                                                  ("docs.xlsx", "openpyxl", "excel")])
def test_table_formats_need_their_extra(monkeypatch, tmp_path, name, module, extra):
    from textcluster.corpora.loaders import load_table

    path = tmp_path / name
    path.write_bytes(b"PK")  # never read: the check comes first
    missing(monkeypatch, module)
    with pytest.raises(MissingDependencyError, match=rf"'textcluster\[{extra}\]'"):
        load_table(path)


def test_cli_names_the_extra_and_exits_2(monkeypatch, tmp_path):
    corpus = write_folder_corpus(tmp_path / "news")
    missing(monkeypatch, "nltk")
    result = CliRunner().invoke(main, ["run", str(corpus), "--model", "nmf", "--set",
                                       "normalize=stem", "--out", str(tmp_path / "out")])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert "needs nltk: pip install 'textcluster[nltk]'" in result.output


def test_core_imports_without_the_optional_packages():
    """Every module of the package imports with none of the optional packages installed (they
    are imported where a feature uses them)."""
    code = "\n".join([
        "import importlib, pkgutil, sys",
        f"for name in {OPTIONAL!r}:",
        "    sys.modules[name] = None",
        "import textcluster",
        "for info in pkgutil.walk_packages(textcluster.__path__, 'textcluster.'):",
        "    importlib.import_module(info.name)",
        "from textcluster.cli import main",
    ])
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]


def test_extras_in_pyproject():
    """Each extra :func:`require` names exists; ``all`` and ``test`` install every one, so the
    README's ``pip install -e '.[test]'`` installs what the tests use."""
    extras = _pyproject()["project"]["optional-dependencies"]
    used = set(_compat.EXTRAS)
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "require":
                extra = {k.arg: k.value for k in node.keywords}.get("extra")
                assert isinstance(extra, ast.Constant), f"{path}:{node.lineno}"
                used.add(extra.value)
    assert used <= set(extras), used - set(extras)
    assert extras["all"] == [f"textcluster[{','.join(_compat.EXTRAS)}]"]
    assert "textcluster[all]" in extras["test"]
    names = {_requirement_name(r) for e in _compat.EXTRAS for r in extras[e]}
    required = {_requirement_name(r) for r in _pyproject()["project"]["dependencies"]}
    assert not names & required, "an optional package is also a required one"


def _requirement_name(requirement):
    return requirement.split("[")[0].split(">")[0].split("=")[0].split("<")[0].strip().lower()


def test_sklearn_private_api_in_one_module():
    """Only ``textcluster/_compat.py`` imports scikit-learn's private modules."""
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        if path == PACKAGE / "_compat.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = ([node.module or ""] if isinstance(node, ast.ImportFrom)
                     else [a.name for a in node.names] if isinstance(node, ast.Import) else [])
            if any(n.startswith("sklearn") and any(p.startswith("_") for p in n.split("."))
                   for n in names):
                offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not offenders, offenders

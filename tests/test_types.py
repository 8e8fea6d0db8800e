"""The type hints hold: mypy checks the package (settings in pyproject.toml's [tool.mypy])."""

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_mypy_finds_no_error(monkeypatch):
    api = pytest.importorskip("mypy.api", reason="mypy is in the test extra")
    monkeypatch.chdir(ROOT)  # [tool.mypy] files = ["textcluster"]
    report, errors, status = api.run(["--no-incremental", "--config-file", "pyproject.toml"])
    assert status == 0, report + errors

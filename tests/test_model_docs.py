"""Every registered model documents its constructor parameters in a numpydoc ``Parameters``
section of its class docstring: each ``get_params()`` key has an entry, no entry names
anything else, and a stated ``default=`` is the constructor's default."""

import ast
import inspect
import re

import pytest

from textcluster.models import MODELS

SECTION = re.compile(r"^Parameters\n-{10,}\n(.*?)(?=^\S[^\n]*\n-{3,}\n|\Z)", re.M | re.S)
ENTRY = re.compile(r"^(?P<names>[A-Za-z_]\w*(?:, [A-Za-z_]\w*)*)(?: : (?P<type>.*))?$")


def parameter_entries(cls):
    """``{name: type line}`` of the Parameters section of ``cls``'s docstring (the unindented
    lines of the section are the entries; ``a, b : type`` documents both)."""
    doc = inspect.cleandoc(cls.__doc__ or "")
    sections = SECTION.findall(doc)
    assert len(sections) == 1, f"{cls.__name__}: expected one Parameters section"
    entries = {}
    for line in sections[0].splitlines():
        if not line.strip() or line[0].isspace():
            continue
        match = ENTRY.match(line)
        assert match, f"{cls.__name__}: not a parameter entry: {line!r}"
        for name in match["names"].split(", "):
            assert name not in entries, f"{cls.__name__}: {name} documented twice"
            entries[name] = match["type"] or ""
    return entries


@pytest.mark.parametrize("name", MODELS.names())
def test_every_parameter_is_documented(name):
    cls = MODELS.get(name)
    documented = set(parameter_entries(cls))
    params = set(cls().get_params())
    assert not params - documented, f"{cls.__name__}: undocumented {sorted(params - documented)}"
    assert not documented - params, (
        f"{cls.__name__}: no such parameter {sorted(documented - params)}")


@pytest.mark.parametrize("name", MODELS.names())
def test_documented_defaults_are_the_constructors(name):
    cls = MODELS.get(name)
    defaults = cls().get_params()
    for param, type_line in parameter_entries(cls).items():
        match = re.search(r"default=(.+)$", type_line)
        assert match, f"{cls.__name__}.{param}: no default=… in {type_line!r}"
        assert ast.literal_eval(match[1]) == defaults[param], (
            f"{cls.__name__}.{param}: documented default {match[1]}, "
            f"constructor default {defaults[param]!r}")

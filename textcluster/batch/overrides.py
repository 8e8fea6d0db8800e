"""The one override grammar of ``textcluster run --set``, ``textcluster batch --set`` and pipeline
files: ``key=value``.

* The **key** is a dotted path into a pipeline file's tables: ``protocol.draws``,
  ``models.gnmf.params.lam``, ``corpora.*.preprocess.min_df``. In an array of tables
  (``corpora``, ``models``) a segment is an index (``models.0``), an entry's ``name``
  (``models.gnmf``) or ``*`` (every entry).
* Shortcuts, resolved in one place (:func:`resolve_key`): a **bare name** is the corpus option
  (``top``), the preprocessing option (``min_df``), the model parameter (``lam``) or ``graph``
  of the entries that have it, first found in that order; ``corpus.NAME``, ``preprocess.NAME``
  and ``model.NAME`` choose the stage (``weighting`` alone is the tf-idf weighting,
  ``model.weighting`` GNMF's graph weighting). An unknown name is an error that lists the known
  ones and suggests the closest.
* The **value** is read as TOML (``3``, ``0.1``, ``true``, ``"x"``, ``[2, 3]``,
  ``{from = 2, to = 4}``); ``True`` and ``False`` are booleans too; anything else is a string.
"""

from __future__ import annotations

import copy
import difflib
import tomllib
from collections.abc import Mapping
from typing import Any

from .._errors import InvalidInputError
from ..corpora.loaders import loader_options, resolve_loader
from ..models import MODELS
from ..pipeline import PREPROCESS_DEFAULTS
from ..registry import UnknownNameError

TABLES = ("pipeline", "corpora", "models", "protocol", "output", "published")
STAGES = {"corpus": ("corpora", "select"), "preprocess": ("corpora", "preprocess"),
          "model": ("models", "params")}
# Model parameters a job sets from its protocol, and how to give them instead.
PROTOCOL_PARAMS = {"n_components": "--k (protocol.k in a pipeline file)",
                   "random_state": "--seed (protocol.seeds in a pipeline file)"}
_BOOLEANS = {"True": True, "False": False}


def parse_override(text: str) -> tuple[str, Any]:
    """``"models.gnmf.params.lam=10"`` → ``("models.gnmf.params.lam", 10)``."""
    key, sep, raw = text.partition("=")
    key = key.strip()
    if not sep or not key or not all(s.strip() for s in key.split(".")):
        raise InvalidInputError(
            f"--set {text!r} is not of the form key=value, e.g. lam=10, "
            "protocol.draws=2 or models.gnmf.params.max_iter=50"
        )
    return key, parse_value(raw.strip(), key)


def parse_value(raw: str, key: str = "") -> Any:
    """A TOML value, ``True``/``False``, else the text itself."""
    if raw in _BOOLEANS:
        return _BOOLEANS[raw]
    try:
        parsed = tomllib.loads(f"value = {raw}")
    except tomllib.TOMLDecodeError:
        return raw
    except RecursionError:
        raise InvalidInputError(f"--set {key}: the value is nested too deeply") from None
    return parsed["value"] if list(parsed) == ["value"] else raw  # one value, not more lines


def apply_overrides(config: dict, overrides, in_memory=()) -> None:
    """Apply ``overrides`` (``"key=value"`` texts, ``(key, value)`` pairs or a mapping) to the
    tables ``config``, in place, resolving shortcuts against its corpora and models (those
    named in ``in_memory`` are data in memory: no loader options)."""
    if isinstance(overrides, Mapping):
        overrides = overrides.items()
    for override in overrides:
        key, value = parse_override(override) if isinstance(override, str) else override
        for path in resolve_key(config, key, in_memory):
            set_value(config, path, value)


def resolve_key(config: dict, key: str, in_memory=()) -> list[str]:
    """The dotted paths ``key`` stands for in ``config`` (itself when it is a path)."""
    stage, _, name = key.rpartition(".")
    if key.split(".")[0] in TABLES:
        return [key]
    if stage and stage not in STAGES:
        raise InvalidInputError(
            f"--set {key}: unknown prefix {stage!r}; use corpus., preprocess. or model., or a "
            f"dotted path into the tables {', '.join(TABLES)}"
        )
    if name in PROTOCOL_PARAMS and stage in ("", "model"):
        raise InvalidInputError(f"--set {key}: {name} is set by {PROTOCOL_PARAMS[name]}")
    options = _options(config, in_memory)
    for candidate in ([stage] if stage else [*STAGES, "graph"]):
        if candidate == "graph":
            if name == "graph":
                return ["corpora.*.graph"]
            continue
        table, field = STAGES[candidate]
        paths = [f"{table}.{i}.{field}.{name}" for i, known in enumerate(options[candidate])
                 if name in known]
        if paths:
            return paths
    known = sorted({n for stage_options in options.values() for names in stage_options
                    for n in names} | {"graph"})
    close = difflib.get_close_matches(name, known, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    raise InvalidInputError(
        f"--set {key}: unknown setting {name!r}{hint}. The settings here are: "
        f"{', '.join(known)} (or a dotted path such as models.gnmf.params.lam)"
    )


def _options(config: dict, in_memory=()) -> dict[str, list[list[str]]]:
    """Per stage, the option names of each corpus or model entry."""
    corpora, models = (_entry_names(config.get(table)) for table in ("corpora", "models"))
    return {
        "corpus": [[] if name in in_memory else _loader_options(name) for name in corpora],
        "preprocess": [list(PREPROCESS_DEFAULTS) for _ in corpora],
        "model": [_model_params(name) for name in models],
    }


def _entry_names(entries: Any) -> list[str | None]:
    if not isinstance(entries, list):
        return []
    return [entry.get("name") if isinstance(entry, dict) else None for entry in entries]


def _loader_options(name: str | None) -> list[str]:
    if not isinstance(name, str):
        return []
    try:
        return loader_options(resolve_loader(name))
    except (UnknownNameError, InvalidInputError, TypeError):
        return []  # the corpus entry itself is checked, with its own message, later


def _model_params(name: str | None) -> list[str]:
    if not isinstance(name, str) or name not in MODELS:
        return []
    return [p for p in MODELS.get(name)().get_params() if p not in PROTOCOL_PARAMS]


def set_value(config: dict, key: str, value: Any) -> None:
    """Set the dotted path ``key`` of ``config`` to ``value``, in place."""
    segments = [s.strip() for s in key.split(".")]
    for table in _containers(config, segments[:-1], key):
        if not isinstance(table, dict):
            raise InvalidInputError(f"--set {key}: {'.'.join(segments[:-1])} is not a table")
        table[segments[-1]] = copy.deepcopy(value)


def _containers(node, segments, key):
    """The tables that ``segments`` lead to (several when a segment is ``*``)."""
    nodes = [node]
    for segment in segments:
        nodes = [child for n in nodes for child in _children(n, segment, key)]
    return nodes


def _children(node, segment, key):
    if isinstance(node, dict):
        return [node.setdefault(segment, {})]
    if not isinstance(node, list):
        raise InvalidInputError(f"--set {key}: {segment!r} is inside a value, not a table")
    if segment == "*":
        return node
    if segment.isdecimal():
        if int(segment) >= len(node):
            raise InvalidInputError(
                f"--set {key}: index {segment} is out of range (there are {len(node)} entries)"
            )
        return [node[int(segment)]]
    named = [entry for entry in node if isinstance(entry, dict) and entry.get("name") == segment]
    if not named:
        names = ", ".join(str(e.get("name")) for e in node if isinstance(e, dict))
        raise InvalidInputError(
            f"--set {key}: no entry named {segment!r}; the entries are: {names} "
            "(or use an index, or * for all)"
        )
    return named

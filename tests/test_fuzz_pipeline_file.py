"""Fuzzing the pipeline-file parser: whatever a pipeline file or a ``--set`` holds,
:func:`load_pipeline` gives a Pipeline or the project's own error naming the file, and
:func:`apply_overrides` changes the tables or says what is wrong — never another exception.

The number of cases follows the Hypothesis profile (tests/conftest.py): ``ci`` by default,
``HYPOTHESIS_PROFILE=long`` for the long run.
"""

import copy
import json
import math

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from textcluster._errors import TextclusterError
from textcluster.batch.overrides import apply_overrides
from textcluster.batch.spec import KNOWN_KEYS, Pipeline, load_pipeline, tomllib

from ._batch import pipeline_text

VALID = pipeline_text(models=("kmeans", "gnmf"), extra="seeds = [0, 1]\n")
NAMES = ["tdt2", "reuters", "nmf", "gnmf", "kmeans", "classes", "full", "class-subset",
         "sweep", "ablation", "convergence", "knn", "lam", "max_iter", "n_init", "from", "to",
         "step", ""]
KEYS = sorted({key for keys in KNOWN_KEYS.values() for key in keys} | set(KNOWN_KEYS)
              | set(NAMES))


@pytest.fixture(scope="module")
def pipeline_path(tmp_path_factory):
    return tmp_path_factory.mktemp("fuzz") / "pipeline.toml"


def load(path, content, overrides=()):
    """``load_pipeline`` on ``content``: a Pipeline, or the project's error naming the file."""
    path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
    try:
        return load_pipeline(path, overrides)
    except TextclusterError as exc:
        assert str(path) in str(exc), str(exc)
        return exc


# -- TOML documents ------------------------------------------------------------------------------
def toml_value(value):
    """``value`` as an inline TOML value (strings and keys quoted as JSON, which TOML reads)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    return "{ " + ", ".join(f"{toml_value(k)} = {toml_value(v)}" for k, v in value.items()) + " }"


def toml_document(tables):
    return "\n".join(f"{toml_value(key)} = {toml_value(value)}" for key, value in tables.items())


text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=10)
keys = st.one_of(st.sampled_from(KEYS), text)
scalars = st.one_of(
    st.sampled_from(NAMES), st.booleans(), st.integers(-3, 12), st.integers(),
    st.integers(-2 ** 80, 2 ** 80), st.floats(), text,
)
values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(keys, inner, max_size=4)), max_leaves=12)


BASES = [  # valid pipelines, one per protocol, that the documents below start from
    VALID,
    pipeline_text(models=("gnmf",), k="[2]", draws=1,
                  params={"gnmf": "{ lam = [1.0, 10.0], n_neighbors = [3, 5], max_iter = 5 }"},
                  extra="labeled_fraction = 0.25\n"),
    pipeline_text(models=("kmeans", "gnmf"), k="[2]", draws=1, params={"gnmf": "{ lam = 1.0 }"},
                  extra="[protocol.sweep]\nlam = [1.0, 10.0]\n").replace(
        'kind = "class-subset"', 'kind = "sweep"\ndocuments = "class-subset"'),
    pipeline_text(models=("gnmf",), k="[2, 3]", draws=2).replace(
        'kind = "class-subset"', 'kind = "ablation"\ndocuments = "class-subset"').replace(
        "params = {", 'variants = { full = {}, "no-graph" = { lam = 0.0 } }\nparams = {'),
    '[[corpora]]\nname = "tdt2"\nselect = { top = 10 }\n[[models]]\nname = "nmf"\n'
    '[protocol]\nkind = "convergence"\nk = "classes"\nseeds = [3, 7]\n'
    '[output]\ndir = "runs/x"\nclusters = true\n'
    '[published]\nsource = "a paper"\ntdt2 = { nmf = { accuracy = 80.8 } }\n',
]
ODD_VALUES = [[], {}, "", 0, -1, 10 ** 30, -10 ** 30, 2 ** 63, 1e308, -0.0, math.inf,
              math.nan, True, "classes", [[]], [1, 1], {"from": 5, "to": 2}]


def _places(node):
    """``(container, key)`` of every value inside ``node`` (dict keys and list indices)."""
    items = node.items() if isinstance(node, dict) else enumerate(node)
    for key, value in list(items):
        yield node, key
        if isinstance(value, (dict, list)):
            yield from _places(value)


@st.composite
def documents(draw):
    """A valid pipeline's tables with a few values replaced (random, odd, huge, empty or
    deeply nested), removed, or added under a random key."""
    tables = tomllib.loads(draw(st.sampled_from(BASES)))
    for _ in range(draw(st.integers(1, 4))):
        places = list(_places(tables))
        container, key = draw(st.sampled_from(places)) if places else (tables, "pipeline")
        change = draw(st.sampled_from(["replace", "odd", "remove", "add", "nest"]))
        if change == "replace":
            container[key] = draw(values)
        elif change == "odd":
            container[key] = copy.deepcopy(draw(st.sampled_from(ODD_VALUES)))
        elif change == "remove":
            container.pop(key, None) if isinstance(container, dict) else container.pop(key)
        elif change == "add" and isinstance(container, dict):
            container[draw(keys)] = draw(values)
        elif change == "nest":
            for _ in range(draw(st.integers(1, 60))):
                container[key] = draw(st.sampled_from([[container[key]], {"x": container[key]}]))
    return tables


@pytest.mark.parametrize("base", range(len(BASES)))
def test_the_documents_start_from_valid_pipelines(pipeline_path, base):
    assert isinstance(load(pipeline_path, BASES[base]), Pipeline)


@given(documents())
def test_generated_documents(pipeline_path, tables):
    result = load(pipeline_path, toml_document(tables))
    assert isinstance(result, (Pipeline, TextclusterError))


# -- mutated and random files --------------------------------------------------------------------
@st.composite
def mutated(draw):
    """The valid pipeline file, truncated, with bytes flipped, inserted or removed, or a line
    repeated."""
    data = bytearray(VALID.encode("utf-8"))
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(data)))
        kind = draw(st.sampled_from(["truncate", "flip", "insert", "delete", "repeat"]))
        if kind == "truncate":
            del data[at:]
        elif kind == "flip" and at < len(data):
            data[at] ^= draw(st.integers(1, 255))
        elif kind == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=8))
        elif kind == "delete":
            del data[at:at + draw(st.integers(1, 20))]
        elif kind == "repeat":
            lines = bytes(data).splitlines(keepends=True)
            if lines:
                line = lines[at % len(lines)]
                data[at:at] = line
    return bytes(data)


@given(st.one_of(mutated(), st.binary(max_size=400)))
@example(b"\xff\xfe[pipeline]\n")
@example(b"x = " + b"[" * 50_000 + b"]" * 50_000)
@example(b"x = " + b"{ a = " * 5_000 + b"1" + b" }" * 5_000)
@example(VALID.encode("utf-8")[:-5])
@example(VALID.replace("draws = 2", "draws = 1e400").encode("utf-8"))
@example(VALID.replace("k = { from = 2, to = 3 }", "k = { from = 2, to = 99999999999999999999 }")
         .encode("utf-8"))
def test_mutated_and_random_files(pipeline_path, content):
    result = load(pipeline_path, content)
    assert isinstance(result, (Pipeline, TextclusterError))


# -- overrides -----------------------------------------------------------------------------------
dotted = st.lists(st.one_of(keys, st.sampled_from(["*", "0", "1", "7"])), min_size=1,
                  max_size=4).map(".".join)
raw_values = st.one_of(values.map(toml_value), text, st.sampled_from(["[]", "{}", "[" * 3000]))
overrides = st.builds(lambda key, value: f"{key}={value}", dotted, raw_values) | text


@given(st.lists(overrides, max_size=3))
@example(["models.gnmf.params.max_iter=[]"])
@example(["protocol.k=" + "[" * 5000])
@example(["protocol.draws=1\nx = 2"])
def test_overrides_of_a_valid_file(pipeline_path, changes):
    result = load(pipeline_path, VALID, changes)
    assert isinstance(result, (Pipeline, TextclusterError))


@given(st.dictionaries(keys, values, max_size=4), overrides)
def test_apply_override_on_any_tables(config, override):
    try:
        apply_overrides(config, [override])
    except TextclusterError as exc:
        assert "--set" in str(exc)

"""Pipeline files: many runs described in one commented TOML file, expanded into jobs.

A pipeline file has five tables (see ``pipelines/smoke.toml`` for a commented example)::

    [pipeline]    name, description, data_dir
    [[corpora]]   name, select (loader options), preprocess (tf-idf options), graph
    [[models]]    name, params (a list value is a grid), variants (named parameter sets)
    [protocol]    kind, documents, k, draws, seed / repeats / seeds,
                  labeled_fraction / labeled_per_class, sweep
    [output]      dir (the ledger is <dir>/ledger.sqlite), clusters (true: keep every
                  job's clusters in <dir>/clusters/<job key>.csv)

and optionally ``[published]``: ``source`` and, per corpus, method label (``model`` or
``model:variant``) → ``{ metric = number }``, the published numbers the report sets beside the
reproduced ones (:mod:`textcluster.report.published`); they are not part of any job.

Protocols (DESIGN §6): ``class-subset`` (for each k, ``draws`` random sets of k classes; every
model sees the same draws), ``full`` (the whole selection, k clusters), ``sweep`` (one
parameter over a grid, the others fixed; each parameter of ``[protocol.sweep]`` in turn),
``ablation`` (the named ``variants`` of a model) and ``convergence`` (the objective after every
iteration is recorded). The last three run on ``documents = "class-subset"`` or ``"full"``.

Every job is one fit: (pipeline, corpus, selection, model, variant, params, k, draw, seed).
Its key is a hash of that identity, so a re-run finds the jobs it has already done. Jobs are
counted from the sizes of the lists (:func:`count_jobs`) and made one at a time as they run
(:func:`iter_jobs`), so a large grid costs nothing before its first job; a list value must
hold distinct values, and an empty list is an error.
"""

import copy
import hashlib
import inspect
import itertools
import json
import math
import tomllib
from dataclasses import dataclass, fields
from functools import cached_property
from numbers import Integral, Real
from pathlib import Path

from .._compat import InvalidParameterError
from .._errors import InvalidInputError
from ..corpora.loaders import resolve_loader
from ..metrics import METRICS, UNLABELED
from ..models import MODELS, make_model
from ..pipeline.prepare import PREPROCESS_DEFAULTS
from ..registry import UnknownNameError

PROTOCOLS = ("class-subset", "full", "sweep", "ablation", "convergence")
DOCUMENTS = ("class-subset", "full")
KNOWN_KEYS = {
    "pipeline": ("name", "description", "data_dir"),
    "corpora": ("name", "select", "preprocess", "graph"),
    "models": ("name", "params", "variants"),
    "protocol": ("kind", "documents", "k", "draws", "seed", "repeats", "seeds",
                 "labeled_fraction", "labeled_per_class", "sweep"),
    "output": ("dir", "clusters"),
    "published": ("source",),  # and one table per corpus: method = { metric = number }
}
# Model parameters the protocol sets, and the key that sets them.
PROTOCOL_PARAMS = {"n_components": "protocol.k", "random_state": "protocol.seeds"}
DRAW_SEED_STRIDE = 1000  # draw d of k classes uses the seed 1000·k + d
LEDGER_NAME = "ledger.sqlite"
CLUSTERS_DIR = "clusters"  # [output] clusters = true: <dir>/clusters/<job key>.csv
BEST = "best"  # [published] "model:best": the best of the model's settings
CONFIRM_ABOVE = 10_000  # the command line asks before running more jobs than this
MAX_K = 2 ** 31 - 1
MAX_SEED = 2 ** 32 - 1  # NumPy's random seeds


@dataclass(frozen=True)
class Job:
    """One fit of one model on one selection of documents; ``key`` identifies it."""

    pipeline: str
    corpus: str
    selection: dict  # select, preprocess, graph, draw_seed
    model: str
    variant: str
    params: dict
    k: int | None  # None: the number of classes of the selection
    draw: int | None  # None: all documents of the selection
    seed: int
    protocol: str
    labeled: dict | None  # {"fraction": f} or {"per_class": n}
    record_history: bool = False
    data_dir: str | None = None
    keep_clusters: bool = False  # return each document's cluster with the result

    def identity(self):
        """What makes a job the same job in another run (not where its data lives nor what
        it returns besides its metrics)."""
        return {f.name: getattr(self, f.name) for f in fields(self)
                if f.name not in ("record_history", "data_dir", "keep_clusters")}

    @cached_property
    def key(self):
        text = json.dumps(self.identity(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


@dataclass(frozen=True)
class Pipeline:
    """A validated pipeline file, with the ``--set`` overrides applied."""

    name: str
    source: str  # the file's path
    text: str  # the file's text
    overrides: tuple
    config: dict  # the TOML tables after the overrides
    data_dir: str | None
    output: Path
    keep_clusters: bool = False

    @property
    def ledger_path(self):
        return self.output / LEDGER_NAME

    @property
    def clusters_dir(self):
        return self.output / CLUSTERS_DIR


# -- reading ---------------------------------------------------------------------------------
def load_pipeline(path, overrides=(), data_dir=None):
    """Read, override (``["protocol.draws=2", ...]``) and validate the pipeline file ``path``.

    ``data_dir`` (the command line's ``--data-dir``) takes precedence over the file's. The
    jobs are checked, not listed: :func:`count_jobs` counts them, :func:`iter_jobs` lists them.
    """
    path = Path(path)
    where = str(path)
    text = _read_text(path)
    try:
        config = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InvalidInputError(f"{path} is not valid TOML: {exc}") from None
    except RecursionError:
        raise InvalidInputError(f"{path}: values are nested too deeply for a pipeline "
                                "file") from None
    for override in overrides:
        try:
            apply_override(config, override)
        except InvalidInputError as exc:
            raise InvalidInputError(f"{where}: {exc}") from None
    _check_tables(config, where)
    name = _pipeline_name(config, path)
    data_dir = data_dir or config.get("pipeline", {}).get("data_dir")
    if data_dir is not None and not isinstance(data_dir, str):
        raise InvalidInputError(f"{where}: [pipeline] data_dir must be a folder path (a string)")
    output = config.get("output", {}).get("dir", f"runs/{name}")
    if not isinstance(output, str) or not output.strip():
        raise InvalidInputError(f"{where}: [output] dir must be a folder path (a string)")
    output = Path(output)
    keep_clusters = config.get("output", {}).get("clusters", False)
    if not isinstance(keep_clusters, bool):
        raise InvalidInputError(f"{where}: [output] clusters must be true or false")
    pipeline = Pipeline(name, where, text, tuple(overrides), config,
                        None if data_dir is None else str(data_dir), output, keep_clusters)
    plan = _plan(pipeline)  # validates corpora, models and protocol
    _check_published(config, plan, where)
    return pipeline


def _read_text(path):
    """The text of the pipeline file ``path`` (UTF-8, a byte-order mark allowed)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise InvalidInputError(f"pipeline file {path} does not exist") from None
    except OSError as exc:
        raise InvalidInputError(f"pipeline file {path} cannot be read: "
                                f"{exc.strerror or exc}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InvalidInputError(
            f"{path} is not UTF-8 text: the byte 0x{data[exc.start]:02x} at offset {exc.start} "
            f"(line {line}) cannot be decoded; save the file as UTF-8"
        ) from None
    return text.removeprefix("\ufeff")


def apply_override(config, override):
    """Set one dotted ``key=value`` in the TOML tables ``config``, in place.

    In an array of tables (``corpora``, ``models``) a segment is an index (``models.0``), the
    ``name`` of an entry (``models.gnmf``) or ``*`` (every entry). The value is read as a TOML
    value (``3``, ``0.1``, ``true``, ``[2, 3]``, ``{from = 2, to = 4}``), else kept as a string.
    """
    dotted, sep, raw = override.partition("=")
    segments = [s.strip() for s in dotted.split(".")]
    if not sep or not all(segments):
        raise InvalidInputError(
            f"--set {override!r} is not of the form key=value with a dotted key, e.g. "
            "protocol.draws=2 or models.gnmf.params.max_iter=50"
        )
    value = _toml_value(raw.strip(), dotted)
    for table in _containers(config, segments[:-1], dotted):
        if not isinstance(table, dict):
            raise InvalidInputError(f"--set {dotted}: {'.'.join(segments[:-1])} is not a table")
        table[segments[-1]] = copy.deepcopy(value)


def _toml_value(raw, dotted):
    try:
        parsed = tomllib.loads(f"value = {raw}")
    except tomllib.TOMLDecodeError:
        return raw
    except RecursionError:
        raise InvalidInputError(f"--set {dotted}: the value is nested too deeply") from None
    return parsed["value"] if list(parsed) == ["value"] else raw  # one value, not more lines


def _containers(node, segments, dotted):
    """The tables that ``segments`` lead to (several when a segment is ``*``)."""
    nodes = [node]
    for segment in segments:
        nodes = [child for n in nodes for child in _children(n, segment, dotted)]
    return nodes


def _children(node, segment, dotted):
    if isinstance(node, dict):
        return [node.setdefault(segment, {})]
    if not isinstance(node, list):
        raise InvalidInputError(f"--set {dotted}: {segment!r} is inside a value, not a table")
    if segment == "*":
        return node
    if segment.isdecimal():
        if int(segment) >= len(node):
            raise InvalidInputError(
                f"--set {dotted}: index {segment} is out of range (there are {len(node)} entries)"
            )
        return [node[int(segment)]]
    named = [entry for entry in node if isinstance(entry, dict) and entry.get("name") == segment]
    if not named:
        names = ", ".join(str(e.get("name")) for e in node if isinstance(e, dict))
        raise InvalidInputError(
            f"--set {dotted}: no entry named {segment!r}; the entries are: {names} "
            "(or use an index, or * for all)"
        )
    return named


def _check_tables(config, where):
    _check_keys(config, KNOWN_KEYS, f"{where}: top level")
    for table in ("pipeline", "protocol", "output"):
        _check_keys(_table(config, table, where), KNOWN_KEYS[table], f"{where}: [{table}]")
    for table in ("corpora", "models"):
        entries = config.get(table)
        if not isinstance(entries, list) or not entries:
            raise InvalidInputError(
                f"{where}: needs at least one [[{table}]] entry with a name, e.g. "
                f"[[{table}]] name = \"{'tdt2' if table == 'corpora' else 'gnmf'}\""
            )
        for i, entry in enumerate(entries):
            if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
                raise InvalidInputError(f"{where}: [[{table}]] entry {i + 1} has no name")
            _check_keys(entry, KNOWN_KEYS[table], f"{where}: [[{table}]] {entry['name']!r}")


def _table(config, name, where):
    table = config.get(name, {})
    if not isinstance(table, dict):
        raise InvalidInputError(f"{where}: {name} must be a table ([{name}])")
    return table


def _check_keys(table, known, where):
    unknown = [key for key in table if key not in known]
    if unknown:
        raise InvalidInputError(
            f"{where}: unknown key {unknown[0]!r}; the known keys are: {', '.join(known)}"
        )


def _pipeline_name(config, path):
    name = config.get("pipeline", {}).get("name", path.stem)
    if not isinstance(name, str) or not name.strip():
        raise InvalidInputError(f"{path}: [pipeline] name must be a non-empty string")
    return name


# -- expansion -------------------------------------------------------------------------------
def iter_jobs(pipeline):
    """The jobs of ``pipeline``, made one at a time, in a stable order: corpus, k, draw, seed,
    then model, so the models of one draw run next to each other."""
    plan = _plan(pipeline)
    protocol = plan.protocol
    for corpus in plan.corpora:
        for k, draw, seed in _data_points(protocol):
            draw_seed = None if draw is None else DRAW_SEED_STRIDE * k + draw
            selection = {**corpus["selection"], "draw_seed": draw_seed}
            for model in plan.models:
                for variant, params in model.points():
                    yield Job(
                        pipeline.name, corpus["name"], selection, model.name, variant, params,
                        k, draw, seed, protocol["kind"], protocol["labeled"],
                        protocol["kind"] == "convergence", pipeline.data_dir,
                        pipeline.keep_clusters,
                    )


def expand(pipeline):
    """Every job of ``pipeline`` as a list (see :func:`iter_jobs`; :func:`count_jobs` counts
    them without making them)."""
    return list(iter_jobs(pipeline))


def count_jobs(pipeline):
    """The number of jobs of ``pipeline``, from the sizes of its lists and ranges."""
    plan = _plan(pipeline)
    protocol = plan.protocol
    data_points = math.prod(len(protocol[name]) for name in ("k", "draws", "seeds"))
    return len(plan.corpora) * data_points * sum(model.count for model in plan.models)


@dataclass(frozen=True)
class _Plan:
    """A validated pipeline, before its jobs are made."""

    protocol: dict
    corpora: list
    models: list  # _ModelPoints


def _plan(pipeline):
    where = pipeline.source
    protocol = _protocol(pipeline.config.get("protocol", {}), where)
    corpora = [_corpus(entry, where) for entry in pipeline.config["corpora"]]
    models = [_model_points(entry, protocol, where) for entry in pipeline.config["models"]]
    _check_protocol_needs(protocol, models, pipeline.config["models"], where)
    _check_unique(corpora, models, where)
    return _Plan(protocol, corpora, models)


def _check_unique(corpora, models, where):
    """No job twice: each list holds distinct values (checked where it is read), and corpora
    and the models' settings are not repeated across entries."""
    seen = set()
    for corpus in corpora:
        identity = json.dumps([corpus["name"], corpus["selection"]], sort_keys=True)
        if identity in seen:
            raise InvalidInputError(f"{where}: corpus {corpus['name']!r} is listed twice with "
                                    "the same select, preprocess and graph; remove one")
        seen.add(identity)
    names = [model.name for model in models]
    for name in {n for n in names if names.count(n) > 1}:
        points = set()
        for model in (m for m in models if m.name == name):
            for variant, params in model.points():
                identity = json.dumps([variant, params], sort_keys=True)
                if identity in points:
                    raise InvalidInputError(
                        f"{where}: model {name!r} with the settings {variant or params!r} is "
                        "listed twice (in two [[models]] entries); remove one"
                    )
                points.add(identity)


def _data_points(protocol):
    """``(k, draw, seed)``, made one at a time (``k`` and the seeds may be long ranges)."""
    for k in protocol["k"]:
        for draw in protocol["draws"]:
            for seed in protocol["seeds"]:
                yield k, draw, seed


# -- protocol --------------------------------------------------------------------------------
def _protocol(table, where):
    where = f"{where}: [protocol]"
    kind = table.get("kind", "class-subset")
    if kind not in PROTOCOLS:
        raise InvalidInputError(f"{where}: unknown kind {kind!r}; known: {', '.join(PROTOCOLS)}")
    documents = _documents(table, kind, where)
    return {
        "kind": kind,
        "documents": documents,
        "k": _cluster_counts(table.get("k"), documents, where),
        "draws": _draws(table.get("draws"), documents, where),
        "seeds": _seeds(table, where),
        "labeled": _labeled(table, where),
        "sweep": _sweep(table.get("sweep"), kind, where),
    }


def _documents(table, kind, where):
    if kind in DOCUMENTS:
        if table.get("documents", kind) != kind:
            raise InvalidInputError(f"{where}: documents is set by kind = {kind!r}; remove it")
        return kind
    documents = table.get("documents", "class-subset" if "draws" in table else "full")
    if documents not in DOCUMENTS:
        raise InvalidInputError(
            f"{where}: documents must be one of {', '.join(DOCUMENTS)}, got {documents!r}"
        )
    return documents


def _cluster_counts(spec, documents, where):
    """``k``: an integer, a list, ``{from = 2, to = 10, step = 1}`` (both ends included), or
    ``"classes"`` (full documents only: the number of classes of the selection)."""
    if spec is None:
        if documents == "full":
            return [None]
        raise InvalidInputError(f"{where}: class-subset needs k, e.g. k = {{from = 2, to = 10}}")
    if spec == "classes":
        if documents != "full":
            raise InvalidInputError(f"{where}: k = \"classes\" needs documents = \"full\"")
        return [None]
    if isinstance(spec, dict):
        _check_keys(spec, ("from", "to", "step"), f"{where} k")
        start, stop, step = spec.get("from"), spec.get("to"), spec.get("step", 1)
        if (not all(_is_int(v) for v in (start, stop, step)) or step < 1 or stop < start
                or start < 1 or stop > MAX_K):
            raise InvalidInputError(
                f"{where}: k = {spec!r} must have integers 1 <= from <= to <= {MAX_K} (and "
                "step >= 1)"
            )
        return range(start, stop + 1, step)
    values = spec if isinstance(spec, list) else [spec]
    if not values or not all(_is_int(v) and 1 <= v <= MAX_K for v in values):
        raise InvalidInputError(
            f"{where}: k = {spec!r} must be a positive integer (at most {MAX_K}), a list of "
            "them, {from = 2, to = 10} or \"classes\""
        )
    _check_distinct(values, f"{where}: k")
    return values


def _check_distinct(values, where):
    seen = set()
    for value in values:
        text = json.dumps(value, sort_keys=True)
        if text in seen:
            raise InvalidInputError(f"{where} has {value!r} listed twice; remove the repeated "
                                    "value")
        seen.add(text)


def _draws(spec, documents, where):
    if documents == "full":
        if spec is not None:
            raise InvalidInputError(f"{where}: draws is for class subsets; remove it")
        return [None]
    if not _is_int(spec) or not 1 <= spec <= DRAW_SEED_STRIDE:
        raise InvalidInputError(
            f"{where}: class subsets need draws = the number of class draws per k "
            f"(1 to {DRAW_SEED_STRIDE}), got {spec!r}"
        )
    return range(spec)


def _seeds(table, where):
    """``seeds = [...]``, or ``repeats`` consecutive seeds from ``seed`` (default 1 from 0)."""
    if "seeds" in table:
        if "repeats" in table or "seed" in table:
            raise InvalidInputError(f"{where}: give seeds, or seed and repeats, not both")
        seeds = table["seeds"]
        if not isinstance(seeds, list) or not seeds or not all(
                _is_int(s) and 0 <= s <= MAX_SEED for s in seeds):
            raise InvalidInputError(f"{where}: seeds must be a list of integers from 0 to "
                                    f"{MAX_SEED}")
        _check_distinct(seeds, f"{where}: seeds")
        return seeds
    seed, repeats = table.get("seed", 0), table.get("repeats", 1)
    if (not _is_int(seed) or seed < 0 or not _is_int(repeats) or repeats < 1
            or seed + repeats - 1 > MAX_SEED):
        raise InvalidInputError(
            f"{where}: seed must be a non-negative and repeats a positive integer, with "
            f"seed + repeats - 1 <= {MAX_SEED}"
        )
    return range(seed, seed + repeats)


def _labeled(table, where):
    fraction, per_class = table.get("labeled_fraction"), table.get("labeled_per_class")
    if fraction is not None and per_class is not None:
        raise InvalidInputError(f"{where}: give labeled_fraction or labeled_per_class, not both")
    if fraction is not None:
        if not (isinstance(fraction, Real) and not isinstance(fraction, bool)
                and 0 < fraction <= 1):
            raise InvalidInputError(f"{where}: labeled_fraction must be in (0, 1], e.g. 0.1")
        return {"fraction": fraction}
    if per_class is not None:
        if not _is_int(per_class) or per_class < 1:
            raise InvalidInputError(f"{where}: labeled_per_class must be a positive integer")
        return {"per_class": per_class}
    return None


def _sweep(spec, kind, where):
    if kind != "sweep":
        if spec is not None:
            raise InvalidInputError(f"{where}: sweep is used only with kind = \"sweep\"")
        return {}
    if not isinstance(spec, dict) or not spec:
        raise InvalidInputError(
            f"{where}: kind = \"sweep\" needs a [protocol.sweep] table of parameter = [values], "
            "e.g. lam = [1, 10, 100]"
        )
    for name, values in spec.items():
        if not isinstance(values, list) or not values:
            raise InvalidInputError(f"{where}: sweep {name} must be a non-empty list of values")
        _check_distinct(values, f"{where}: sweep {name}")
    return spec


def _check_protocol_needs(protocol, models, entries, where):
    swept = set(protocol["sweep"])
    if swept:
        covered = {name for model in models for name in model.sweep}
        missing = sorted(swept - covered)
        if missing:
            raise InvalidInputError(
                f"{where}: no model has the swept parameter {missing[0]!r}"
            )
    if protocol["kind"] == "ablation" and not any("variants" in e for e in entries):
        raise InvalidInputError(
            f"{where}: kind = \"ablation\" needs a model with variants (named parameter "
            "sets), e.g. variants = { full = {}, no-graph = { lam = 0 } }"
        )


def _is_int(value):
    return isinstance(value, Integral) and not isinstance(value, bool)


# -- corpora ---------------------------------------------------------------------------------
def _corpus(entry, where):
    name = entry["name"]
    where = f"{where}: corpus {name!r}"
    try:
        loader = resolve_loader(name)  # an unknown name lists the known ones
    except UnknownNameError as exc:
        raise UnknownNameError(f"{where}: {exc}") from None
    select = _options(entry, "select", where)
    accepted = [p for p in inspect.signature(loader).parameters if p != "data_dir"]
    _check_keys(select, accepted, f"{where} select")
    preprocess = _options(entry, "preprocess", where)
    _check_keys(preprocess, list(PREPROCESS_DEFAULTS), f"{where} preprocess")
    graph = entry.get("graph", "knn")
    if not isinstance(graph, str):
        raise InvalidInputError(f"{where}: graph must be \"knn\" or the name of the corpus' graph")
    return {"name": name, "selection": {"select": select, "preprocess": preprocess,
                                        "graph": graph}}


def _options(entry, key, where):
    options = entry.get(key, {})
    if not isinstance(options, dict):
        raise InvalidInputError(f"{where}: {key} must be a table, e.g. {key} = {{ top = 30 }}")
    for option, value in options.items():
        _check_plain(value, f"{where}: {key} {option}", lists=False)
    return options


def _check_plain(value, where, lists=True):
    """A value a ledger can hold as JSON: a string, number, boolean or (``lists``) a list of
    them; TOML dates and tables are refused, and so are NaN and infinite numbers."""
    items = value if lists and isinstance(value, list) else [value]
    if not all(isinstance(v, (str, int, float, bool)) for v in items) or any(
            isinstance(v, float) and not math.isfinite(v) for v in items):
        kinds = "a string, finite number, boolean" + (" or a list of them" if lists else "")
        raise InvalidInputError(f"{where} must be {kinds}, got {value!r}")


# -- models ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class _ModelPoints:
    """The settings a ``[[models]]`` entry runs: each named variant × each grid point × each
    value of each swept parameter the model has; made one at a time by :meth:`points`."""

    name: str
    variants: list  # (variant name, params with lists for grids)
    sweep: dict  # the swept parameters the model has: name -> values

    @property
    def count(self):
        per_point = sum(len(values) for values in self.sweep.values()) or 1
        return per_point * sum(math.prod(len(v) for v in params.values() if isinstance(v, list))
                               for _, params in self.variants)

    def points(self):
        """``(variant label, params)`` of every setting."""
        for variant, merged in self.variants:
            for grid_names, params in _grid(merged):
                for swept_names, point in _swept(params, self.sweep):
                    yield _variant_label(variant, grid_names + swept_names, point), point


def _model_points(entry, protocol, where):
    name = entry["name"]
    try:
        cls = MODELS.get(name)  # an unknown name lists the known ones
    except UnknownNameError as exc:
        raise UnknownNameError(f"{where}: {exc}") from None
    where = f"{where}: model {name!r}"
    known = cls().get_params()
    sweep = {param: values for param, values in protocol["sweep"].items() if param in known}
    base = _params(entry.get("params", {}), known, where)
    variants = entry.get("variants", {"": {}})
    if not isinstance(variants, dict) or not variants:
        raise InvalidInputError(f"{where}: variants must be a table of name = {{ params }}")
    merged = []
    for variant, overrides in variants.items():
        at = f"{where} variant {variant!r}" if variant else where
        params = {**base, **_params(overrides, known, at)}
        _validate_values(name, params, sweep, at)
        merged.append((variant, params))
    return _ModelPoints(name, merged, sweep)


def _params(table, known, where):
    if not isinstance(table, dict):
        raise InvalidInputError(f"{where}: params must be a table, e.g. params = {{ lam = 10 }}")
    for param, value in table.items():
        _check_plain(value, f"{where}: {param}")
        if param in PROTOCOL_PARAMS:
            raise InvalidInputError(
                f"{where}: {param} is set by {PROTOCOL_PARAMS[param]}, not by params"
            )
        if param not in known:
            raise InvalidInputError(
                f"{where}: unknown parameter {param!r}; its parameters are: "
                f"{', '.join(p for p in sorted(known) if p not in PROTOCOL_PARAMS)}"
            )
        if value == []:
            raise InvalidInputError(
                f"{where}: {param} = [] is empty; a list is a grid of values to try, so give "
                f"at least one value (or remove {param})"
            )
        if isinstance(value, list):
            _check_distinct(value, f"{where}: {param}")
    return dict(table)


def _grid(params):
    """``(names of the grid parameters, params)`` for each point of the grid that the list
    values span."""
    gridded = [name for name, value in params.items() if isinstance(value, list)]
    for values in itertools.product(*(params[name] for name in gridded)):
        yield gridded, {**params, **dict(zip(gridded, values))}


def _swept(params, sweep):
    """One point per value of each swept parameter (the others at ``params``); ``params``
    itself when the model has none."""
    if not sweep:
        yield [], params
    for name, values in sweep.items():
        for value in values:
            yield [name], {**params, name: value}


def _variant_label(variant, names, point):
    parts = ([variant] if variant else []) + [f"{name}={point[name]}" for name in names]
    return ",".join(parts)  # "" for the model as its params set it


def _validate_values(name, params, sweep, where):
    """Check every value of the grid and the sweep now — each once, the other parameters at
    their first value — so a typo fails once instead of in every job."""
    both = sorted(set(sweep) & {p for p, v in params.items() if isinstance(v, list)})
    if both:
        raise InvalidInputError(f"{where}: {both[0]} is both a grid (a list in params) and "
                                "swept ([protocol.sweep]); give its values in one place")
    first = {param: value[0] if isinstance(value, list) else value
             for param, value in params.items()}
    _validate(name, first, where)
    choices = {**{p: v[1:] for p, v in params.items() if isinstance(v, list)}, **sweep}
    for param, values in choices.items():
        for value in values:
            _validate(name, {**first, param: value}, f"{where} {param}={value!r}")


def _validate(name, params, where):
    """Check the values of one setting with the model's own parameter constraints."""
    model = make_model(name, **params)
    try:
        model._validate_params()
    except InvalidParameterError as exc:
        raise InvalidInputError(f"{where}: {exc}") from None


# -- published numbers -----------------------------------------------------------------------
def _check_published(config, plan, where):
    """``[published]``: an optional ``source`` string and, for corpora of ``[[corpora]]``, a
    table of method label → ``{ metric = number }``; the labels are those of the jobs."""
    table = config.get("published")
    if table is None:
        return
    if not isinstance(table, dict):
        raise InvalidInputError(f"{where}: published must be a table ([published]) of source "
                                "and one table per corpus")
    corpora = [entry["name"] for entry in config["corpora"]]
    methods = {}  # method label -> model, in job order
    for model in plan.models:
        for variant, _ in model.points():
            methods.setdefault(method_label(model.name, variant), model.name)
    for key, value in table.items():
        if key == "source":
            if not isinstance(value, str):
                raise InvalidInputError(f"{where}: [published] source must be a string (where "
                                        f"the numbers come from), got {value!r}")
            continue
        if key not in corpora:
            raise InvalidInputError(
                f"{where}: [published] {key!r} is not a corpus of [[corpora]]; the corpora "
                f"are: {', '.join(corpora)} (the other key is source, a string)"
            )
        if not isinstance(value, dict):
            raise InvalidInputError(f"{where}: [published] {key} must be a table "
                                    f"([published.{key}]) of method = {{ metric = number }}")
        for label, numbers in value.items():
            at = f"{where}: [published.{key}] {label!r}"
            _check_method_label(label, methods, at)
            _check_published_numbers(numbers, at)


def method_label(model, variant):
    """How reports name a job's method: ``model``, or ``model:variant`` for a named variant
    (``variant`` may be None or NaN, as read back from a ledger)."""
    if not isinstance(variant, str):
        variant = ""
    variant = variant.strip()
    return str(model) if variant in ("", str(model)) else f"{model}:{variant}"


def _check_method_label(label, methods, where):
    if label in methods:
        return
    model, _, variant = label.partition(":")
    if variant == BEST and sum(name == model for name in methods.values()) > 1:
        return  # the best of the model's settings (textcluster.report.published.best_setting)
    if model not in methods.values():
        raise InvalidInputError(f"{where}: no [[models]] entry named {model!r}; the models "
                                f"are: {', '.join(dict.fromkeys(methods.values()))}")
    of_model = [m for m, name in methods.items() if name == model]
    what = f"has no variant {variant!r}" if variant else "runs only as its variants"
    best = f", or {model}:best for the best of them" if len(of_model) > 1 else ""
    raise InvalidInputError(f"{where}: model {model!r} {what}; its method labels are: "
                            f"{', '.join(of_model)}{best}")


def is_number(value):
    """A finite int or float (not a bool), as a published number must be."""
    return isinstance(value, Real) and not isinstance(value, bool) and math.isfinite(value)


def _check_published_numbers(numbers, where):
    if not isinstance(numbers, dict) or not numbers:
        raise InvalidInputError(f"{where} must be a table of metric = number, e.g. "
                                "{ accuracy = 80.8, nmi = 79.9 }")
    known = METRICS.names() + [name + UNLABELED for name in METRICS.names()]
    for metric, value in numbers.items():
        if metric not in known:
            raise InvalidInputError(f"{where}: unknown metric {metric!r}; the known metrics "
                                    f"are: {', '.join(known)}")
        if not is_number(value):
            raise InvalidInputError(f"{where}: {metric} must be a number, in % as the report "
                                    f"shows it (e.g. {metric} = 80.8), got {value!r}")

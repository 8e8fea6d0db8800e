"""Pipeline files: many runs described in one commented TOML file, expanded into jobs.

Tables (``pipelines/README.md`` documents every key; ``pipelines/smoke.toml`` is a commented
example): ``[pipeline]``, ``[[corpora]]`` (select, preprocess, graph), ``[[models]]`` (params: a
list is a grid; variants), ``[protocol]`` (kind: class-subset, full, sweep, ablation or
convergence; k, draws, seeds, labelled documents), ``[output]`` and optionally ``[published]``
(checked by :mod:`.methods`). ``textcluster run`` is a pipeline of one job (:func:`one_job`).

Every job is one fit: (pipeline, corpus, selection, model, variant, params, k, draw, seed).
Its key is a hash of that identity, so a re-run finds the jobs it has already done. Jobs are
counted from the sizes of the lists (:func:`count_jobs`) and made one at a time as they run
(:func:`iter_jobs`), so a large grid costs nothing before its first job; a list value must
hold distinct values, and an empty list is an error.
"""

import copy
import itertools
import json
import math
import tomllib
from dataclasses import dataclass
from numbers import Integral, Real
from pathlib import Path

from .._compat import InvalidParameterError
from .._errors import InvalidInputError
from ..corpora import Corpus
from ..corpora.loaders import loader_options, resolve_loader
from ..models import MODELS, SEMI_SUPERVISED, candidate_range, make_model
from ..pipeline import PREPROCESS_DEFAULTS, Job
from ..registry import UnknownNameError
from .methods import check_published
from .overrides import PROTOCOL_PARAMS, apply_overrides

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
DRAW_SEED_STRIDE = 1000  # draw d of k classes uses the seed 1000·k + d
LEDGER_NAME = "ledger.sqlite"
CLUSTERS_DIR = "clusters"  # [output] clusters = true: <dir>/clusters/<job key>.csv
CONFIRM_ABOVE = 10_000  # the command line asks before running more jobs than this
MAX_K = 2 ** 31 - 1
MAX_SEED = 2 ** 32 - 1  # NumPy's random seeds


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
    in_memory: tuple = ()  # names of corpora given as objects (textcluster.run on data)

    @property
    def ledger_path(self):
        return self.output / LEDGER_NAME

    @property
    def clusters_dir(self):
        return self.output / CLUSTERS_DIR


# -- reading ---------------------------------------------------------------------------------
def load_pipeline(path, overrides=(), data_dir=None):
    """Read, override (``["protocol.draws=2", ...]``, :mod:`.overrides`) and validate the
    pipeline file ``path``.

    ``data_dir`` (the command line's ``--data-dir``) takes precedence over the file's. The
    jobs are checked, not listed: :func:`count_jobs` counts them, :func:`iter_jobs` lists them.
    """
    path = Path(path)
    text = _read_text(path)
    try:
        config = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InvalidInputError(f"{path} is not valid TOML: {exc}") from None
    except RecursionError:
        raise InvalidInputError(f"{path}: values are nested too deeply for a pipeline "
                                "file") from None
    if "nightly" in config:
        raise InvalidInputError(f"{path} is a nightly file, not a batch pipeline: run it with "
                                f"textcluster nightly {path}")
    return make_pipeline(config, str(path), text, overrides, data_dir, default_name=path.stem)


def make_pipeline(config, source, text="", overrides=(), data_dir=None, default_name="run",
                  in_memory=()):
    """A validated :class:`Pipeline` from the tables ``config`` (read from ``source``)."""
    where = source
    config = copy.deepcopy(config)
    try:
        apply_overrides(config, overrides, in_memory)
    except InvalidInputError as exc:
        raise InvalidInputError(f"{where}: {exc}") from None
    _check_tables(config, where)
    name = _pipeline_name(config, where, default_name)
    data_dir = data_dir or config.get("pipeline", {}).get("data_dir")
    if data_dir is not None and not isinstance(data_dir, (str, Path)):
        raise InvalidInputError(f"{where}: [pipeline] data_dir must be a folder path (a string)")
    output = config.get("output", {}).get("dir", f"runs/{name}")
    if not isinstance(output, str) or not output.strip():
        raise InvalidInputError(f"{where}: [output] dir must be a folder path (a string)")
    output = Path(output)
    keep_clusters = config.get("output", {}).get("clusters", False)
    if not isinstance(keep_clusters, bool):
        raise InvalidInputError(f"{where}: [output] clusters must be true or false")
    overrides = tuple(f"{o[0]}={o[1]!r}" if isinstance(o, tuple) else str(o)
                      for o in (overrides.items() if isinstance(overrides, dict) else overrides))
    pipeline = Pipeline(name, where, text, overrides, config,
                        None if data_dir is None else str(data_dir), output, keep_clusters,
                        tuple(in_memory))
    plan = _plan(pipeline)  # validates corpora, models and protocol
    check_published(config, [(m.name, v) for m in plan.models for v, _ in m.points()],
                    where)
    return pipeline


def one_job(corpus, model="gnmf", k=None, seed=0, settings=(), data_dir=None,
            labeled_fraction=None, labeled_per_class=None):
    """The job of ``textcluster run``: a pipeline of one corpus, one model and the whole
    selection (``k`` clusters, default the number of classes), with ``settings`` as
    ``"key=value"`` texts, ``(key, value)`` pairs or a mapping (:mod:`.overrides`; bare names
    are shortcuts). ``corpus`` is a name or path, or a :class:`~textcluster.Corpus` in memory
    (then run with ``run_job(job, corpus=...)``)."""
    MODELS.get(model, suggest=True)  # an unknown name fails before anything else
    labeled = {"labeled_fraction": labeled_fraction, "labeled_per_class": labeled_per_class}
    if any(v is not None for v in labeled.values()) and model not in SEMI_SUPERVISED:
        raise InvalidInputError(
            f"model {model!r} does not use labels; --labeled-fraction and "
            f"--labeled-per-class are for {', '.join(sorted(SEMI_SUPERVISED))}"
        )
    name = corpus.name if isinstance(corpus, Corpus) else str(corpus)
    protocol = {"kind": "full", "seed": seed, **({} if k is None else {"k": k}),
                **{key: v for key, v in labeled.items() if v is not None}}
    config = {"pipeline": {"name": "run"}, "corpora": [{"name": name}],
              "models": [{"name": model}], "protocol": protocol}
    pipeline = make_pipeline(config, "textcluster run", overrides=settings, data_dir=data_dir,
                             in_memory=[name] if isinstance(corpus, Corpus) else ())
    if count_jobs(pipeline) != 1:
        raise InvalidInputError(
            "run fits one model once: give one value per setting (a list is a grid; grids "
            "and sweeps go in a pipeline file, run with textcluster batch)"
        )
    return next(iter_jobs(pipeline))


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


def _pipeline_name(config, where, default):
    name = config.get("pipeline", {}).get("name", default)
    if not isinstance(name, str) or not name.strip():
        raise InvalidInputError(f"{where}: [pipeline] name must be a non-empty string")
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
    corpora = [_corpus(entry, where, entry.get("name") in pipeline.in_memory)
               for entry in pipeline.config["corpora"]]
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
                    raise InvalidInputError(f"{where}: model {name!r} with the settings "
                                            f"{variant or params!r} is listed twice (in two "
                                            "[[models]] entries); remove one")
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
    """``k``: an integer, a list, ``{from = 2, to = 10, step = 1}`` (both ends included); for
    full documents ``"classes"`` (their number) or ``"auto"`` / ``"min:max"`` (chosen)."""
    if spec is None:
        if documents == "full":
            return [None]
        raise InvalidInputError(f"{where}: class-subset needs k, e.g. k = {{from = 2, to = 10}}")
    if isinstance(spec, str):  # "classes", or "auto" / "min:max": each job's model chooses k
        if documents != "full":
            raise InvalidInputError(f"{where}: k = {spec!r} needs documents = \"full\"")
        if spec != "classes":
            candidate_range(spec)  # refuses what is not "auto" or "min:max"
        return [None if spec == "classes" else spec]
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
            "them, {from = 2, to = 10}, \"classes\", \"auto\" or \"min:max\""
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
def _corpus(entry, where, in_memory=False):
    name = entry["name"]
    where = f"{where}: corpus {name!r}"
    try:  # an unknown name lists the known ones; data in memory has no loader (nor options)
        accepted = [] if in_memory else loader_options(resolve_loader(name))
    except UnknownNameError as exc:
        raise UnknownNameError(f"{where}: {exc}") from None
    select = _options(entry, "select", where)
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

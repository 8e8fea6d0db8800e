"""How reports name a job's method (``model`` or ``model:variant``), and the checks of a
pipeline file's ``[published]`` table: the numbers a paper printed, set beside the reproduced
ones by :mod:`textcluster.report.published`."""

import math
from numbers import Real

from .._errors import InvalidInputError
from ..metrics import METRICS, UNLABELED

BEST = "best"  # [published] "model:best": the best of the model's settings


def check_published(config, methods_run, where):
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
    for model, variant in methods_run:
        methods.setdefault(method_label(model, variant), model)
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

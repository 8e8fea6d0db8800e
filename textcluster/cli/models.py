"""``textcluster models [NAME]``."""

import re
import textwrap

import click

from .. import models
from ..models import MODELS
from ..batch.overrides import PROTOCOL_PARAMS
from ..registry import ModelDescription, describe_model
from ._common import user_errors


@click.command("models")
@click.argument("name", required=False)
@user_errors
def models_command(name: str | None) -> None:
    """List the models, or show one model's parameters and their defaults.

    \b
    Examples:
      textcluster models
      textcluster models gnmf
    """
    if name is None:
        click.echo(format_models([describe_model(n, MODELS.get(n)) for n in MODELS.names()]))
    else:
        cls = MODELS.get(name, suggest=True)
        public = getattr(models, cls.__name__, None) is cls
        where = f"{models.__name__ if public else cls.__module__}.{cls.__name__}"
        click.echo(format_model(describe_model(name, cls), where))


def format_models(models: list[ModelDescription]) -> str:
    """One aligned line per model: name, supervision, n×n memory, paper, summary."""
    rows = [("name", "supervision", "n×n memory", "paper", "model")]
    rows += [(m.name, m.supervision, "yes" if m.dense_memory else "no", m.paper or "-",
              m.summary) for m in models]
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)) + "  " + row[4]
             for row in rows]
    lines += ["", "n×n memory: dense n × n matrices, checked against the memory available "
              "($TEXTCLUSTER_MEMORY_LIMIT) before a fit.",
              "A model's parameters and defaults: textcluster models NAME"]
    return "\n".join(line.rstrip() for line in lines)


def format_model(model: ModelDescription, qualname: str) -> str:
    """The model's summary, flags and memory, then each parameter with its default."""
    lines = [f"{model.name}: {model.summary}",
             f"  paper        {model.paper or '-'}",
             f"  supervision  {model.supervision}"
             + (" (labels: run --labeled-fraction or --labeled-per-class)"
                if model.semi_supervised else ""),
             f"  graph        {'a document graph' if model.uses_document_graph else 'none'}",
             f"  memory       {plain(model.memory) or '-'}",
             *(["", "new documents (transform, predict, textcluster assign):"]
               + textwrap.wrap(plain(model.out_of_sample), 88, initial_indent="  ",
                               subsequent_indent="  ", break_on_hyphens=False)
               if model.out_of_sample else []),
             "", "parameters (run: --set NAME=VALUE, or --set model.NAME=VALUE):"]
    width = max((len(p.name) for p in model.parameters), default=0)
    type_width = min(max((len(p.type) for p in model.parameters), default=0), 40)
    for p in model.parameters:
        option = PROTOCOL_PARAMS.get(p.name)
        default = f"default {p.default}" if p.default else ""
        lines.append(f"  {p.name:<{width}}  {p.type:<{type_width}}  {default}"
                     + (f" (set with {option})" if option else ""))
        lines += textwrap.wrap(plain(p.description), 88, initial_indent=" " * 6,
                               subsequent_indent=" " * 6, break_on_hyphens=False)
    lines += ["", f"full description: python -m pydoc {qualname}"]
    return "\n".join(line.rstrip() for line in lines)


def plain(text: str) -> str:
    """Docstring markup as plain text: ``code`` → code, :func:`~a.f` → f, :class:`a.C` → a.C."""
    text = re.sub(r":\w+:`~[\w.]*?(\w+)`", r"\1", text)
    return re.sub(r"(?::\w+:)?`{1,2}([^`]*)`{1,2}", r"\1", text)

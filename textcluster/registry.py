"""Named registries for what the CLI and pipeline files refer to by name."""

import difflib
import inspect
import re
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar, overload

from ._errors import TextclusterError


T = TypeVar("T")


class UnknownNameError(TextclusterError, KeyError):
    """A name that is not in a registry; the message lists the known names."""

    def __str__(self) -> str:  # KeyError would quote the message
        return self.args[0]


class Registry:
    """A mapping from names to objects, filled with the :meth:`register` decorator.

    >>> models = Registry("model")
    >>> @models.register("nmf")
    ... class NMF: ...
    >>> models.get("nmf") is NMF
    True
    """

    def __init__(self, kind: str, plural: str | None = None) -> None:
        self.kind = kind
        self.plural = plural or f"{kind}s"
        self._entries: dict[str, Any] = {}

    @overload
    def register(self, name: str) -> Callable[[T], T]: ...
    @overload
    def register(self, name: str, obj: T) -> T: ...

    def register(self, name, obj=None):
        """Register ``obj`` as ``name`` and return it; without ``obj``, a decorator that
        registers what it decorates."""
        def add(obj):
            if name in self._entries:
                raise ValueError(f"{self.kind} {name!r} is registered twice")
            self._entries[name] = obj
            return obj

        return add if obj is None else add(obj)

    def get(self, name: str, *, suggest: bool = False) -> Any:
        """The entry named ``name``; with ``suggest``, an unknown name's error also names the
        closest known name ("did you mean")."""
        try:
            return self._entries[name]
        except KeyError:
            known = ", ".join(sorted(self._entries))
            close = self.closest(name) if suggest else None
            hint = f" (did you mean {close!r}?)" if close else ""
            raise UnknownNameError(
                f"unknown {self.kind} {name!r}{hint}; known {self.plural}: {known}"
            ) from None

    def closest(self, name: str) -> str | None:
        """The known name closest to ``name`` (ignoring case), or None if none is close."""
        by_lower = {known.lower(): known for known in self._entries}
        match = difflib.get_close_matches(str(name).lower(), by_lower, n=1, cutoff=0.6)
        return by_lower[match[0]] if match else None

    def names(self) -> list[str]:
        return sorted(self._entries)

    def flagged(self, flag: str) -> frozenset[str]:
        """The names whose entry has the class-level flag ``flag`` set (e.g. the models'
        ``semi_supervised``)."""
        return frozenset(name for name, obj in self._entries.items()
                         if getattr(obj, flag, False))

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())


@dataclass(frozen=True)
class ParameterDoc:
    """One entry of a numpydoc ``Parameters`` section."""

    name: str
    type: str  # e.g. 'float ≥ 0 or "auto"'
    default: str  # as written, e.g. '"auto"'; "" when the entry states none
    description: str  # the entry's text on one line


@dataclass(frozen=True)
class ModelDescription:
    """What a model class says about itself, read from its flags and docstrings."""

    name: str
    summary: str  # the docstring's first sentence, formulas and paper numbers left out
    paper: str  # e.g. "003 eqs. 8, 15–16" (README's paper numbers); "" for none
    semi_supervised: bool
    uses_document_graph: bool
    memory: str  # the "Memory:" sentence of the class (else module) docstring; "" if none
    dense_memory: bool  # keeps n × n matrices (memory O(n²))
    parameters: tuple[ParameterDoc, ...]
    out_of_sample: str = ""  # the Notes' "Out of sample" paragraph: how new documents are placed

    @property
    def supervision(self) -> str:
        return "semi-supervised" if self.semi_supervised else "unsupervised"


_OUT_OF_SAMPLE = re.compile(r"^Out of sample\b.*?(?=\n\s*\n|\Z)", re.M | re.S)
_PARAMETERS = re.compile(r"^Parameters\n-{3,}\n(.*?)(?=^\S[^\n]*\n-{3,}\n|\Z)", re.M | re.S)
_PAPER = re.compile(r"\bpaper (\d{3})(?:'s)?,? ?((?:eqs?\.|§)[^;()]*)?")
_MEMORY = re.compile(r"\bmemory:? (.*?)(?:\.(?=\s|$)|$)", re.I | re.S)


def describe_model(name: str, cls: type) -> ModelDescription:
    """Describe the model class registered as ``name``: its class flags ``semi_supervised``
    and ``uses_document_graph``, and from its docstring the first sentence, the paper, the
    memory (falling back to the module docstring) and the numpydoc ``Parameters``."""
    doc = inspect.cleandoc(cls.__doc__ or "")
    first = " ".join(doc.split("\n\n")[0].split())
    summary = re.sub(r"\s*``[^`]*``", "", first)
    summary = re.sub(r"[;,]?\s*\bpaper \d{3}[^()]*(?=\))", "", summary)
    summary = re.sub(r"\s*\(\s*\)", "", summary).rstrip(".")
    summary = re.sub(r"\((?P<first>[^,&()]+)(?:, [^,&()]+)+ & [^\s,()]+(?P<rest>[^()]*)\)$",
                     r"(\g<first> et al.\g<rest>)", summary)  # three or more authors
    paper = _PAPER.search(" ".join(doc.split()))
    module_doc = getattr(sys.modules.get(cls.__module__), "__doc__", None) or ""
    memory = _MEMORY.search(" ".join(doc.split())) or _MEMORY.search(" ".join(module_doc.split()))
    memory_text = memory[1].replace("``", "").strip() if memory else ""
    return ModelDescription(
        name=name, summary=summary,
        paper=" ".join(filter(None, paper.groups())).strip(" ,") if paper else "",
        semi_supervised=bool(getattr(cls, "semi_supervised", False)),
        uses_document_graph=bool(getattr(cls, "uses_document_graph", False)),
        memory=memory_text, dense_memory="n²" in memory_text,
        parameters=tuple(_parameter_docs(doc)),
        out_of_sample=" ".join(m[0].split()) if (m := _OUT_OF_SAMPLE.search(doc)) else "",
    )


def _parameter_docs(doc: str) -> list[ParameterDoc]:
    """The entries of the ``Parameters`` section: ``name : type, default=value`` lines, each
    followed by its indented description (``a, b : type`` documents both)."""
    section = _PARAMETERS.search(doc)
    blocks: list[tuple[str, list[str]]] = []
    for line in (section[1] if section else "").splitlines():
        if line and not line[0].isspace():
            blocks.append((line, []))
        elif line.strip() and blocks:
            blocks[-1][1].append(line.strip())
    entries = []
    for header, text in blocks:
        names, _, type_line = header.partition(" : ")
        type_, has_default, default = type_line.rpartition(", default=")
        if not has_default:
            type_, default = type_line, ""
        entries += [ParameterDoc(one.strip(), type_.strip(), default.strip(), " ".join(text))
                    for one in names.split(", ")]
    return entries

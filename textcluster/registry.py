"""Named registries for what the CLI and pipeline files refer to by name."""

from ._errors import TextclusterError


class UnknownNameError(TextclusterError, KeyError):
    """A name that is not in a registry; the message lists the known names."""

    def __str__(self):  # KeyError would quote the message
        return self.args[0]


class Registry:
    """A mapping from names to objects, filled with the :meth:`register` decorator.

    >>> models = Registry("model")
    >>> @models.register("nmf")
    ... class NMF: ...
    >>> models.get("nmf") is NMF
    True
    """

    def __init__(self, kind, plural=None):
        self.kind = kind
        self.plural = plural or f"{kind}s"
        self._entries = {}

    def register(self, name, obj=None):
        def add(obj):
            if name in self._entries:
                raise ValueError(f"{self.kind} {name!r} is registered twice")
            self._entries[name] = obj
            return obj

        return add if obj is None else add(obj)

    def get(self, name):
        try:
            return self._entries[name]
        except KeyError:
            known = ", ".join(sorted(self._entries))
            raise UnknownNameError(
                f"unknown {self.kind} {name!r}; known {self.plural}: {known}"
            ) from None

    def names(self) -> list[str]:
        return sorted(self._entries)

    def flagged(self, flag: str) -> frozenset[str]:
        """The names whose entry has the class-level flag ``flag`` set (e.g. the models'
        ``semi_supervised``)."""
        return frozenset(name for name, obj in self._entries.items()
                         if getattr(obj, flag, False))

    def __contains__(self, name):
        return name in self._entries

    def __iter__(self):
        return iter(self.names())

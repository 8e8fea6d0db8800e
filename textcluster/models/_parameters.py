"""The ``Parameters`` entries and the constraints that several models' graph parameters share,
documented once (:func:`parameter_entries`)."""

from __future__ import annotations

import inspect
import re
from numbers import Integral

from .._compat import Interval, StrOptions

# -- the Parameters entries several models share, documented once ---------------------------
# A docstring line ``{ncw}``, ``{document graph parameters}`` or ``{term graph parameters}``
# becomes these entries (:func:`parameter_entries`); ``{default}`` is each class's own default.
PARAMETER_ENTRIES = {
    "ncw": {"ncw": """bool or "regularized", default={default}
    Normalized-cut weighting of the documents, as in :class:`NMF`."""},
    "document graph parameters": {
        "n_neighbors": """int ≥ 1, default={default}
    Neighbours per document in the kNN document graph.""",
        "weighting": """{{"binary", "heat", "cosine"}}, default={default}
    The document graph's edge weights (:func:`textcluster.graph.knn_graph`).""",
        "graph_method": """{{"auto", "exact", "approximate"}}, default={default}
    How the neighbours are searched (:func:`textcluster.graph.knn_graph`): "auto" exactly
    below 80,000 documents, approximately (NN-descent, the ``large`` extra) above.""",
    },
    "term graph parameters": {
        "term_neighbors": """int ≥ 1, default={default}
    Neighbours per term in the kNN term graph.""",
        "term_weighting": """{{"binary", "heat", "cosine"}}, default={default}
    The term graph's edge weights.""",
    },
}


def parameter_entries(cls):
    """Class decorator: the lines of ``cls``'s docstring that name a group of
    :data:`PARAMETER_ENTRIES` become its entries, with ``cls``'s defaults, indented as the line
    (as :func:`~textcluster.models._base.shared_parameters`, applied after it, does for the
    parameters of every model)."""
    defaults = {name: p.default for name, p in inspect.signature(cls.__init__).parameters.items()}

    def entry(name, text, indent):
        default = defaults[name]
        text = text.format(default=f'"{default}"' if isinstance(default, str) else repr(default))
        return "\n".join(indent + line for line in f"{name} : {text}".splitlines())

    def entries(match):
        indent, group = match.group(1), PARAMETER_ENTRIES[match.group(2)]
        return "\n".join(entry(name, text, indent) for name, text in group.items())

    groups = "|".join(PARAMETER_ENTRIES)
    cls.__doc__ = re.sub(rf"^([ \t]*)\{{({groups})\}}$", entries, cls.__doc__, flags=re.M)
    return cls


# The constraints of the parameters of the two graphs (the entries above document them).
DOCUMENT_GRAPH_CONSTRAINTS = {
    "n_neighbors": [Interval(Integral, 1, None, closed="left")],
    "weighting": [StrOptions({"binary", "heat", "cosine"})],
    "graph_method": [StrOptions({"auto", "exact", "approximate"})],
}
TERM_GRAPH_CONSTRAINTS = {
    "term_neighbors": [Interval(Integral, 1, None, closed="left")],
    "term_weighting": [StrOptions({"binary", "heat", "cosine"})],
}

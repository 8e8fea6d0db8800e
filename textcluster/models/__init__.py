"""Clustering models, as scikit-learn estimators, registered under the names the CLI uses.

All take ``X`` as documents × terms (non-negative for the factorizations), expose
``fit``/``fit_transform``/``fit_predict``/``labels_``, and accept ``graph=`` in ``fit``.
"""

from __future__ import annotations

from typing import Any

from sklearn.base import BaseEstimator

from ..registry import Registry
from .baselines import KMeansBaseline, LSIKMeans
from .cluster_count import candidate_range, choose_n_clusters
from .nmf import GNMF, NMF
from .concept import CF, GRSCF, LCCF
from .convex import ConvexNMF
from .semi import DNMF, GSNMFC, ConstrainedNMF
from .dual import ANMF, SODNMF
from .kagpnmf import KernelAGPNMF
from .projective import AGPNMF, PNMF

MODELS = Registry("model")
MODELS.register("kmeans", KMeansBaseline)
MODELS.register("lsi-kmeans", LSIKMeans)
MODELS.register("nmf", NMF)
MODELS.register("gnmf", GNMF)
MODELS.register("convex-nmf", ConvexNMF)
MODELS.register("cf", CF)
MODELS.register("lccf", LCCF)
MODELS.register("grscf", GRSCF)
MODELS.register("constrained-nmf", ConstrainedNMF)
MODELS.register("dnmf", DNMF)
MODELS.register("gsnmfc", GSNMFC)
MODELS.register("anmf", ANMF)
MODELS.register("sodnmf", SODNMF)
MODELS.register("pnmf", PNMF)
MODELS.register("agpnmf", AGPNMF)
MODELS.register("kagpnmf", KernelAGPNMF)

# Models that take partial labels: fit(X, y) with y = class code, or -1 for unlabelled; and
# models that use a document graph (fit(X, graph=...)). Read from the classes' flags.
SEMI_SUPERVISED = MODELS.flagged("semi_supervised")
DOCUMENT_GRAPH = MODELS.flagged("uses_document_graph")


def chosen_settings(model: BaseEstimator) -> dict[str, Any]:
    """The settings a fitted model chose itself without labels, for the metrics and the
    ledger: the graph strength ``lam`` and, for ``n_components="auto"``, the criterion curve
    of the number of clusters, ``cluster_count`` (the k chosen is the metrics' ``n_clusters``
    and the ledger's ``k``); empty when it chose none."""
    chosen = {}
    if getattr(model, "lam_selection_", None) is not None:
        chosen["lam"] = model.lam_
    count = getattr(model, "cluster_count_", None)
    if count is not None:
        chosen["cluster_count"] = {name: count[name] for name in ("candidates", "instability")}
    return chosen


def make_model(name: str, **params: Any) -> BaseEstimator:
    """The estimator registered as ``name``, with ``params`` (validated on ``fit``)."""
    cls = MODELS.get(name)
    unknown = sorted(set(params) - set(cls().get_params()))
    if unknown:
        from .._errors import InvalidInputError

        raise InvalidInputError(
            f"model {name!r} has no parameter {unknown[0]!r}; its parameters are: "
            f"{', '.join(sorted(cls().get_params()))}"
        )
    return cls(**params)


__all__ = ["MODELS", "SEMI_SUPERVISED", "DOCUMENT_GRAPH", "candidate_range", "choose_n_clusters",
           "chosen_settings", "make_model", "KMeansBaseline", "LSIKMeans", "NMF", "GNMF", "ANMF",
           "SODNMF", "ConstrainedNMF", "DNMF", "GSNMFC", "ConvexNMF", "CF", "LCCF", "GRSCF",
           "PNMF", "AGPNMF", "KernelAGPNMF"]

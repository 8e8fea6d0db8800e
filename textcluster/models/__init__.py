"""Clustering models, as scikit-learn estimators, registered under the names the CLI uses.

All take ``X`` as documents × terms (non-negative for the factorizations), expose
``fit``/``fit_transform``/``fit_predict``/``labels_``, and accept ``graph=`` in ``fit``.
"""

from ..registry import Registry
from .baselines import KMeansBaseline, LSIKMeans
from .nmf import GNMF, NMF

MODELS = Registry("model")
MODELS.register("kmeans", KMeansBaseline)
MODELS.register("lsi-kmeans", LSIKMeans)
MODELS.register("nmf", NMF)
MODELS.register("gnmf", GNMF)


def make_model(name, **params):
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


__all__ = ["MODELS", "make_model", "KMeansBaseline", "LSIKMeans", "NMF", "GNMF"]

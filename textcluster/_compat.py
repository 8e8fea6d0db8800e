"""What textcluster takes from its dependencies beyond their public API, and its optional ones.

* scikit-learn's parameter validation (``Interval``, ``StrOptions``, ``InvalidParameterError``)
  lives in the private ``sklearn.utils._param_validation``; every module imports it from here,
  so a change in scikit-learn is fixed in one place. scikit-learn >= 1.6 is needed (its
  ``__sklearn_tags__`` and ``sklearn.utils.validation.validate_data``).
* :func:`require` imports an optional package (an extra of ``pyproject.toml``) where a feature
  uses it, or raises :class:`~textcluster._errors.MissingDependencyError` naming the extra.
* :func:`mkl_sparse_product` is MKL's sparse product where the ``fast`` extra is installed
  (the exact kNN graph's similarities then use it without being asked), else None.
"""

import glob
import importlib
import os
import sys
from collections.abc import Callable
from functools import lru_cache
from types import ModuleType

from sklearn.utils._param_validation import (  # noqa: F401 - re-exported
    Interval,
    InvalidParameterError,
    StrOptions,
)

from ._errors import MissingDependencyError

__all__ = ["EXTRAS", "Interval", "InvalidParameterError", "StrOptions", "require"]

# extra -> (the packages it installs, what they are for); pyproject.toml has the versions
EXTRAS = {
    "plots": ("matplotlib", "the report's figures (textcluster report, batch reports)"),
    "hf": ("datasets", "Hugging Face datasets (hf:NAME corpora, Corpus.to_dataset)"),
    "parquet": ("pyarrow", ".parquet corpus files"),
    "excel": ("openpyxl", ".xlsx corpus files"),
    "nltk": ("nltk", "Porter stemming (normalize=stem)"),
    "dask": ("dask[distributed]", "textcluster batch --executor dask / --scheduler"),
    "large": ("pynndescent", "approximate kNN graphs of large corpora (graph.knn_graph)"),
    "fast": ("sparse-dot-mkl, mkl", "MKL's sparse products in the models' updates"),
}


def require(module: str, extra: str, feature: str, package: str | None = None) -> ModuleType:
    """Import and return the optional ``module``; when it is not installed raise
    :class:`MissingDependencyError`: "``feature`` needs ``package``: pip install
    'textcluster[extra]'" (``package`` defaults to the module's name).

    Only a missing ``module`` is turned into that message; an installed package that fails to
    import (a broken install) raises its own error.
    """
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        top = module.partition(".")[0]
        if exc.name not in (module, top):
            raise
        raise MissingDependencyError(
            f"{feature} needs {package or top}: pip install 'textcluster[{extra}]'"
        ) from None


@lru_cache(maxsize=1)
def mkl_sparse_product() -> Callable | None:
    """``sparse_dot_mkl.dot_product_mkl`` (sparse products in MKL's sparse BLAS) with MKL on one
    thread per call (the callers run their own threads), or None when the ``fast`` extra is
    not installed or MKL does not load; ``TEXTCLUSTER_MKL=0`` also gives None.

    The ``mkl`` wheel puts ``libmkl_rt`` in the environment's ``lib`` folder, where the
    dynamic loader does not look: it is named to sparse_dot_mkl through ``MKL_RT``."""
    if os.environ.get("TEXTCLUSTER_MKL", "1") == "0":
        return None
    if "MKL_RT" not in os.environ:
        found = sorted(glob.glob(os.path.join(sys.prefix, "lib", "libmkl_rt.so*")))
        if found:
            os.environ["MKL_RT"] = found[0]
    try:
        sparse_dot_mkl = importlib.import_module("sparse_dot_mkl")
    except ImportError:  # not installed, or MKL itself missing
        return None
    sparse_dot_mkl.mkl_set_num_threads(1)
    return sparse_dot_mkl.dot_product_mkl

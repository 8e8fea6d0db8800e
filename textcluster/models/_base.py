"""The estimator base class and the one update loop every factorization model shares.

Orientation: ``X`` is documents × terms (scikit-learn's convention, shape ``(n, m)``); the
papers write its transpose. A model's document factor (``V`` in the papers, ``n × k``) is what
:meth:`transform` returns; its term-side basis (``U``, ``m × k``) is ``components_ = Uᵀ``.

A model family implements these hooks of :class:`FactorizationModel`, each with a
:class:`Context` and a :class:`Factors` dataclass of its own:

``_prepare(X, y, graph) -> Context``       precomputations shared by all restarts (read-only)
``_random_factors(ctx, rng) -> Factors``   a random start
``_custom_factors(ctx, W, H) -> Factors``  a start from the caller's ``W`` (n × k), ``H`` (k × m)
``_lsa_start(ctx) -> Factors``             the start of ``init="lsa-kmeans"`` (where allowed)
``_update(factors, ctx) -> objective``     one iteration, in place; objective at the new point
``_objective(factors, ctx) -> objective``  the objective at the current point
``_finish(factors, ctx) -> embedding``     fitted attributes set, document factor returned

A start's :class:`Factors` hold its factor matrices and whatever products one update leaves
for the next (declared as fields, ``None`` until computed); nothing else carries state between
iterations. :func:`run_updates` and :meth:`FactorizationModel._fit_factors` own iteration,
tolerance, restarts, the objective history and convergence warnings.

New documents: ``predict(X)`` is the fitted assignment rule (:class:`~textcluster.assign.
AssignmentRule`: ``assign`` and ``cluster_centers_``) applied to ``transform(X)``, and
``labels_`` is the same rule applied to the training factor. What ``transform`` solves is each
family's (its Notes; the hooks ``_transform`` and ``_keep_for_transform``). ``fitted_state()``
and ``from_fitted_state(params, state)`` (:mod:`textcluster.models._state`) save and rebuild
what ``transform`` and ``predict`` read, listed in ``_state_attributes``.
"""

from __future__ import annotations

import contextvars
import inspect
import re
import threading
import time
import warnings
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, fields, replace
from numbers import Integral, Real
from typing import Any, ClassVar, Self, TypeAlias, TypeVar

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike, NDArray
from sklearn.base import BaseEstimator, ClusterMixin, TransformerMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_array, check_is_fitted, validate_data
from threadpoolctl import threadpool_limits

from .._compat import Interval, StrOptions
from .._errors import InvalidInputError
from ..assign import AssignmentRule, fit_assignment
from .._threads import n_threads
from ..progress import progress_step, stopping_on
from ..text.tfidf import distinct_rows
from ._codes import basis_codes
from ._state import FittedState
from .cluster_count import N_COMPONENTS, NComponents, chosen_n_components

EPS = 1e-10  # floor of every denominator (Cai's code)
FIT_STAGES = ("prepare", "factorize", "assign")
STARTS_SIDE_BY_SIDE = 2  # random starts of one fit run at once (FactorizationModel._run_starts)

MatrixLike: TypeAlias = "ArrayLike | sp.spmatrix | sp.sparray"
"""What ``fit`` and ``transform`` take: a dense array or a sparse matrix, documents × terms."""
Seed: TypeAlias = "int | np.random.RandomState | None"
"""A ``random_state``: a seed, a generator, or None."""

CLUSTERING_CHECK = {
    "check_clustering": ("the check uses standardized (negative) blobs; the non-negative "
                         "models are checked on planted clusters in the tests"),
}
"""The scikit-learn check every factorization model fails, declared once here."""
LABELLED_FIT_CHECKS = {
    **dict.fromkeys(("check_transformer_general", "check_transformer_data_not_an_array"),
                    "the checks fit with labels, and a fit with labels holds the labelled "
                    "documents to their class, which transform (given no labels) does not know"),
    **CLUSTERING_CHECK,
}
"""The checks a model whose labels shape its document factor fails besides."""


# -- the parameters every factorization model shares, documented once -------------------------
# numpydoc entries, in one wording for all models; ``{default}`` is each class's own default.
# A docstring's line ``{n_components}`` or ``{loop parameters}`` (the other eight) becomes
# these entries (:func:`shared_parameters`).
SHARED_PARAMETERS = {
    "n_components": """int ≥ 1, "auto", "min:max" or (int, int), default={default}
    Number of factors, and of clusters; ``"auto"`` or a range (``"2:40"``, ``(2, 40)``):
    chosen in that range (``"auto"``: 3–30) without labels before the fit
    (:mod:`textcluster.models.cluster_count`; the fitted ``n_components_`` and the
    choice's curve ``cluster_count_``).""",
    "max_iter": """int ≥ 1, default={default}
    Total iterations of the kept run, restarts included.""",
    "tol": """float ≥ 0, default={default}
    Stop when the objective's relative decrease per iteration falls below ``tol``; 0 runs
    exactly ``max_iter`` iterations, as Cai's code does.""",
    "n_init": """int ≥ 1, default={default}
    Random starts; each runs ``init_iter`` iterations and the one with the lowest objective
    is continued to ``max_iter`` (DESIGN §5.4, Cai's ``nRepeat``/``minIter``).""",
    "init_iter": """int ≥ 1, default={default}
    Iterations of each start before the best one is kept.""",
    "init": """{options}, default={default}
    ``"random"``: ``n_init`` random starts; ``"custom"``: the start ``W`` (n × k), ``H``
    (k × m) passed to ``fit`` (each model says what it makes of them).""",
    "assign": """{assign_options}, default={default}
    How ``labels_`` are read off the document factor, and ``predict`` assigns new documents
    (:func:`textcluster.assign.fit_assignment`): the nearest k-means centroid of its rows, of
    its rows scaled to unit length, or the largest entry of each row.""",
    "n_assign_init": """int ≥ 1, default={default}
    k-means restarts of ``assign="kmeans"`` and ``"cosine"``.""",
    "random_state": """int, RandomState instance or None, default={default}
    Seed of the random starts and of the k-means of ``assign``.""",
}
LSA_START = """
    ``"lsa-kmeans"``: one start from the clusters of LSA + k-means
    (:class:`~textcluster.models.baselines.LSIKMeans` with the model's seed)."""
AUTO_ASSIGN = """
    ``"auto"``: ``"kmeans"`` when fitted with labels (the papers' reading), ``"cosine"`` (the
    unsupervised base model's) without."""


def fitted_with_labels(model) -> bool:
    """Whether a semi-supervised ``model`` is (being) fitted with labels: its ``_prepare`` sets
    ``n_label_classes_``; before a fit, as without labels."""
    return bool(getattr(model, "n_label_classes_", 0))


def shared_parameters(cls):
    """Class decorator: replace the lines ``{n_components}`` and ``{loop parameters}`` of
    ``cls``'s docstring by the entries of :data:`SHARED_PARAMETERS`, with the defaults of
    ``cls.__init__`` and the ``init`` and ``assign`` options its parameter constraints allow,
    and a line ``{inherited parameters}`` by the parent class's other entries, as it documents
    them."""
    defaults = {name: parameter.default
                for name, parameter in inspect.signature(cls.__init__).parameters.items()}
    options = {name: cls._parameter_constraints[name][0].options for name in ("init", "assign")}

    def listed(name, order):
        return "{" + ", ".join(f'"{o}"' for o in order if o in options[name]) + "}"

    def entry(name, indent):
        default = defaults[name]
        text = SHARED_PARAMETERS[name].format(
            default=f'"{default}"' if isinstance(default, str) else repr(default),
            options=listed("init", ["random", "custom", "lsa-kmeans"]),
            assign_options=listed("assign", ["kmeans", "cosine", "argmax", "auto"]))
        if name == "init" and "lsa-kmeans" in options["init"]:
            text += LSA_START
        if name == "assign" and "auto" in options["assign"]:
            text += AUTO_ASSIGN
        return "\n".join(f"{indent}{line}" for line in f"{name} : {text}".splitlines())

    def expand(match):
        indent, marker = match.group(1), match.group(2)
        if marker == "inherited parameters":
            return _own_entries(cls.__mro__[1], indent)
        names = ["n_components"] if marker == "n_components" else list(SHARED_PARAMETERS)[1:]
        return "\n".join(entry(name, indent) for name in names)

    cls.__doc__ = re.sub(r"^([ \t]*)\{(n_components|loop parameters|inherited parameters)\}$",
                         expand, cls.__doc__, flags=re.M)
    return cls


def _own_entries(cls, indent):
    """The entries of ``cls``'s Parameters section but the shared ones, indented by
    ``indent``."""
    section = inspect.cleandoc(cls.__doc__).split("Parameters\n----------\n", 1)[1]
    entries, keep = [], False
    for line in section.split("\n\n", 1)[0].splitlines():
        if not line[:1].isspace():  # an entry's first line: "name : type"
            keep = line.split(" : ", 1)[0] not in SHARED_PARAMETERS
        if keep:
            entries.append(indent + line)
    return "\n".join(entries)


# -- the hook contract: what a family prepares and what one start iterates ---------------------
@dataclass(kw_only=True)
class Context:
    """What a family's ``_prepare`` computes once per fit; every start reads it, none writes."""

    dtype: np.dtype
    """The data's float dtype, that of every factor."""
    order: np.ndarray | None = None
    """The documents in the order the fit holds them (row i of its factors is document
    ``order[i]``; a large graph model's :func:`~textcluster.models._linalg.locality_order`), or
    None: as given."""


DataclassT = TypeVar("DataclassT")


@dataclass(kw_only=True)
class Factors:
    """One start's iterate: its factor matrices, and the products of them that an update
    leaves for the next one (fields that are None until computed; never shared by starts)."""

    document_fields: ClassVar[tuple[str, ...]] = ()
    """The fields with a row per document (what a fit in another document order reorders)."""

    def copy(self) -> Self:
        """A snapshot: every array copied (floats and None as they are)."""
        return replace(self, **{f.name: _copied(getattr(self, f.name)) for f in fields(self)})

    def rows_taken(self, rows: np.ndarray) -> Self:
        """The factors with the rows ``rows`` of each document field, in that order."""
        return replace(self, **{name: getattr(self, name)[rows] for name in self.document_fields
                                if getattr(self, name) is not None})


def _copied(value: Any) -> Any:
    return value.copy() if hasattr(value, "copy") else value


def kept_copy(array: np.ndarray, buffer: np.ndarray | None) -> np.ndarray:
    """A copy of ``array`` in ``buffer`` when it has the same shape and dtype (a fit's loop
    keeps its n × k arrays instead of allocating them again each iteration)."""
    if buffer is None or buffer.shape != array.shape or buffer.dtype != array.dtype:
        return array.copy()
    np.copyto(buffer, array)
    return buffer


def extend(instance: Any, cls: type[DataclassT], **more: Any) -> DataclassT:
    """The dataclass ``cls`` (which extends ``type(instance)``) with ``instance``'s fields
    (the same objects, not copies) and the fields ``more``."""
    return cls(**{f.name: getattr(instance, f.name) for f in fields(instance)}, **more)


def loop_threads():
    """The threads every fit's update loop runs with: BLAS on one thread, the sparse products
    on the package's own (:mod:`textcluster._threads`). The k × k products are too small to
    gain from BLAS threads, and BLAS threads that spin while the sparse products run stall
    them: one default GNMF iteration on TDT2 took 18.5 ms so and 22.4 ms with two BLAS threads
    (alternated in one process; ``benchmarks/bench_gnmf_iteration.py`` times it so)."""
    return threadpool_limits(limits=1, user_api="blas")


class Beside(ThreadPoolExecutor):
    """``workers`` threads beside the fitting one, each task run in its submitter's context
    (the progress display). One update loop keeps two cores busy only in its sparse products
    (the default GNMF run on TDT2: 1.17 cores on average), so independent fits and scores gain
    from running side by side: a fit's restarts (:meth:`FactorizationModel._run_starts`) and
    the λ selection's scores and graph-led fits (:mod:`.selection`). When the block fails or
    is interrupted, an update loop beside it stops at its next update and the tasks not yet
    started are dropped, instead of running to their end."""

    def __init__(self, workers: int = 1):
        super().__init__(workers, thread_name_prefix="textcluster-beside")
        self._stop = threading.Event()

    def submit(self, fn, *args):
        return super().submit(contextvars.copy_context().run, self._run, fn, *args)

    def _run(self, fn, *args):
        with stopping_on(self._stop):  # an update loop stops at its next step
            return fn(*args)

    def __exit__(self, kind, error, trace):
        if kind is not None:  # the fit failed or was interrupted: do not wait for the rest
            self._stop.set()
        self.shutdown(wait=True, cancel_futures=kind is not None)
        return False


class InThisThread:
    """An executor running each task at once, in the calling thread (a context manager)."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def submit(self, fn, *args):
        future: Future = Future()
        future.set_result(fn(*args))
        return future


def run_updates(update, factors, ctx, n_iter, tol, history):
    """Apply ``update`` up to ``n_iter`` times, appending each objective to ``history``.

    Stops early when the relative decrease of the objective falls below ``tol``.
    Returns True when it stopped on ``tol``.
    """
    for _ in range(n_iter):
        objective = update(factors, ctx)
        if not np.isfinite(objective):
            raise FloatingPointError("the objective is not finite; check the input scale")
        previous = history[-1]
        history.append(float(objective))
        progress_step()
        if tol > 0 and abs(previous - objective) <= tol * max(abs(previous), EPS):
            return True
    return False


@shared_parameters
class FactorizationModel(FittedState, ClusterMixin, TransformerMixin, BaseEstimator):
    """Base class of the factorization models (NMF, GNMF, ...).

    Parameters
    ----------
    {n_components}
    {loop parameters}

    Attributes
    ----------
    fit_seconds_ : dict
        Wall seconds of the last fit's stages (``FIT_STAGES``): ``prepare`` (a graph model's
        kNN graph), ``factorize`` (with a graph model's choice of λ) and ``assign``.
    """

    semi_supervised: ClassVar[bool] = False  # fit(X, y) takes partial labels (-1: none)
    _state_attributes: ClassVar[tuple[str, ...]] = (
        "n_features_in_", "n_components_", "components_", "cluster_centers_", "labels_")
    uses_document_graph: ClassVar[bool] = False  # fit(X, graph=...) uses a document graph
    # scikit-learn's estimator checks this model fails, with why (strict xfails in the tests)
    _expected_failed_checks: ClassVar[dict[str, str]] = CLUSTERING_CHECK

    _parameter_constraints = {
        "n_components": N_COMPONENTS,
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "n_init": [Interval(Integral, 1, None, closed="left")],
        "init_iter": [Interval(Integral, 1, None, closed="left")],
        "init": [StrOptions({"random", "custom"})],
        "assign": [StrOptions({"cosine", "kmeans", "argmax"})],
        "n_assign_init": [Interval(Integral, 1, None, closed="left")],
        "random_state": ["random_state"],
    }

    def __init__(self, n_components: NComponents = 8, *, max_iter: int = 100, tol: float = 0.0,
                 n_init: int = 10, init_iter: int = 30, init: str = "random",
                 assign: str = "kmeans", n_assign_init: int = 20,
                 random_state: Seed = None) -> None:
        self.n_components = n_components
        self.max_iter = max_iter
        self.tol = tol
        self.n_init = n_init
        self.init_iter = init_iter
        self.init = init
        self.assign = assign
        self.n_assign_init = n_assign_init
        self.random_state = random_state

    # -- public API -------------------------------------------------------------------
    def fit(self, X: MatrixLike, y: ArrayLike | None = None, W: ArrayLike | None = None,
            H: ArrayLike | None = None, graph: MatrixLike | None = None) -> Self:
        """Factorize ``X`` (documents × terms) and cluster the documents.

        ``W``, ``H``: initial document factor and components for ``init="custom"``.
        ``graph``: precomputed document graph (n × n, symmetric, non-negative) for
        graph-regularized models; built from ``X`` when omitted. Returns the model.
        """
        self.fit_transform(X, y, W=W, H=H, graph=graph)
        return self

    def fit_transform(self, X: MatrixLike, y: ArrayLike | None = None,
                      W: ArrayLike | None = None, H: ArrayLike | None = None,
                      graph: MatrixLike | None = None) -> NDArray[np.floating]:
        """Fit and return the training documents' codes (n × k): what :meth:`transform`
        gives them, the model's objective restricted to each row solved for the fitted basis
        (and, for graph models, the fitted neighbours) — one exact step of the document factor
        after the fit's last update (a semi-supervised fit with labels returns its factor,
        which holds the labelled documents to their class). The clusters are the assignment
        rule fitted on the fit's document factor (the papers' protocol: k-means on it)
        applied to these codes, so ``labels_`` is ``predict`` of the training documents."""
        return self._fit_transform(X, y, W, H, graph=graph)

    def fit_predict(self, X: MatrixLike, y: ArrayLike | None = None,
                    **fit_params: Any) -> NDArray[np.intp]:
        """Fit and return ``labels_``; ``fit_params`` as in :meth:`fit`."""
        return self.fit(X, y, **fit_params).labels_

    def transform(self, X: MatrixLike) -> NDArray[np.floating]:
        """Document factor of new documents with the learned components held fixed: their
        non-negative codes, solved to a tolerance (:func:`~textcluster.models._codes.
        nonnegative_codes`); each family's Notes say what it solves."""
        check_is_fitted(self)
        return self._transform(self._check_input(X, reset=False))

    def predict(self, X: MatrixLike) -> NDArray[np.intp]:
        """Cluster of new documents: the fitted assignment rule (nearest of
        ``cluster_centers_``, on unit rows for ``assign="cosine"``; the largest entry for
        ``"argmax"``) applied to :meth:`transform`."""
        return self.assignment_rule().predict(self.transform(X))

    def assignment_rule(self) -> AssignmentRule:
        """The fitted :class:`~textcluster.assign.AssignmentRule` (``assign``,
        ``cluster_centers_``)."""
        check_is_fitted(self)
        return AssignmentRule(self._assign(), self.cluster_centers_)

    def _assign(self) -> str:
        """The ``assign`` method in use; ``"auto"`` (semi-supervised models):
        ``"kmeans"`` when fitted with labels, ``"cosine"`` without."""
        if self.assign != "auto":
            return self.assign
        return "kmeans" if fitted_with_labels(self) else "cosine"

    def _fit_transform(self, X, y, W, H, **data):
        """:meth:`fit_transform`, with the data-dependent inputs ``data`` that ``_prepare``
        takes (``graph``; ``term_graph`` too for the dual-graph models)."""
        self._validate_params()
        with chosen_n_components(self, X):
            return self._fit_chosen(X, y, W, H, **data)

    def _fit_chosen(self, X, y, W, H, **data):
        X = self._check_input(X, reset=True)
        clock = [time.perf_counter()]
        ctx = self._prepare(X, y, **data)
        clock.append(time.perf_counter())
        factors = self._fit_factors(ctx, W, H)
        fitted = self._finish(factors, ctx)
        if ctx.order is not None:  # back to the given order
            given = np.argsort(ctx.order)
            factors, fitted = factors.rows_taken(given), fitted[given]
        self._keep_for_transform(X, fitted, factors, ctx)
        clock.append(time.perf_counter())
        rule = fit_assignment(fitted, self.n_components, method=self._assign(),
                              n_init=self.n_assign_init, random_state=self.random_state)
        self.cluster_centers_ = rule.centers
        # a semi-supervised fit holds its labelled documents to their class, which transform
        # does not know: its factor is kept as the training codes
        labelled = self.semi_supervised and y is not None and bool(np.any(np.asarray(y) >= 0))
        codes = fitted if labelled else self._transform(X)
        self.labels_ = rule.predict(codes)
        clock.append(time.perf_counter())
        self.fit_seconds_ = dict(zip(FIT_STAGES, np.diff(clock).round(4).tolist()))
        return codes

    def _transform(self, X):
        return basis_codes(X, self.components_)

    def _keep_for_transform(self, X: Any, embedding: NDArray[np.floating], factors: Any,
                            ctx: Any) -> None:
        """Keep what :meth:`transform` needs beyond the fitted basis (a hook; nothing by
        default): ``X`` the training documents as checked, ``embedding`` their factor,
        ``factors`` the fit's last iterate."""

    # -- the hooks a family implements (see the module docstring) -----------------------
    def _prepare(self, X: Any, y: Any, graph: Any = None) -> Context:
        """Precomputations shared by every start (may set fitted attributes)."""
        raise NotImplementedError

    def _random_factors(self, ctx: Any, rng: np.random.RandomState) -> Factors:
        """A random start."""
        raise NotImplementedError

    def _custom_factors(self, ctx: Any, W: Any, H: Any) -> Factors:
        """The start given by the caller (``init="custom"``)."""
        raise NotImplementedError

    def _lsa_start(self, ctx: Any) -> Factors:
        """The start from the clusters of LSA + k-means (``init="lsa-kmeans"``)."""
        raise NotImplementedError

    def _objective(self, factors: Any, ctx: Any) -> float:
        """The objective at ``factors``."""
        raise NotImplementedError

    def _update(self, factors: Any, ctx: Any) -> float:
        """One iteration, in place; returns the objective at the new point."""
        raise NotImplementedError

    def _finish(self, factors: Any, ctx: Any) -> NDArray[np.floating]:
        """Set the fitted attributes; return the document factor (n × k)."""
        raise NotImplementedError

    # -- the shared driver ----------------------------------------------------------------
    def _fit_factors(self, ctx, W, H):
        with loop_threads():
            return self._restarts(ctx, W, H)

    def _restarts(self, ctx, W, H):
        if self.init != "custom" and (W is not None or H is not None):
            raise InvalidInputError("W and H are used only with init='custom'")
        if self.init == "custom":
            return self._best_start([self._custom_factors(ctx, in_fit_order(W, ctx), H)], ctx)
        if self.init == "lsa-kmeans":
            return self._best_start([self._lsa_start(ctx)], ctx)
        return self._best_start(self._random_starts(ctx), ctx)

    def _random_starts(self, ctx):
        rng = check_random_state(self.random_state)
        return [self._random_factors(ctx, rng) for _ in range(self.n_init)]

    def _best_start(self, starts, ctx):
        """Run each start ``init_iter`` iterations (all of them for a single start), continue
        the one with the lowest objective to ``max_iter`` in total."""
        burn_in = self._burn_in(len(starts))
        runs = self._run_starts(starts, ctx, burn_in)
        factors, history, converged = min(runs, key=lambda run: run[1][-1])
        remaining = self.max_iter - (len(history) - 1)
        if not converged and remaining > 0:
            converged = run_updates(self._update, factors, ctx, remaining, self.tol, history)
        self._record(history, converged)
        return factors

    def _run_starts(self, starts, ctx, n_iter):
        """``_start(factors, ctx, n_iter)`` of each start, in their order: ``STARTS_SIDE_BY_SIDE``
        at a time when the process may use as many cores (:func:`~textcluster._threads.
        n_threads`). The starts are drawn before any of them runs and share only the read-only
        context, so each run, and the one kept, is that of running them in turn (at the cost
        of a second set of one update's temporaries, a few (n + m) × k arrays). The papers'
        protocol on TDT2 (``benchmarks/bench_starts.py``): GNMF 0.88, NMF 0.84 of the time."""
        lanes = min(len(starts), STARTS_SIDE_BY_SIDE, n_threads())
        if lanes < 2:
            return [self._start(factors, ctx, n_iter) for factors in starts]
        with Beside(lanes) as pool:
            runs = [pool.submit(self._start, factors, ctx, n_iter) for factors in starts]
            wait(runs, return_when=FIRST_EXCEPTION)
            return [run.result() for run in runs]

    def _burn_in(self, n_starts):
        """Iterations of each start before the best one is kept."""
        return self.max_iter if n_starts == 1 else min(self.init_iter, self.max_iter)

    def planned_iterations(self):
        """Iterations ``fit`` runs at most, restarts included (for progress displays)."""
        n_starts = self.n_init if self.init == "random" else 1
        burn_in = self._burn_in(n_starts)
        return n_starts * burn_in + self.max_iter - burn_in

    def _start(self, factors, ctx, n_iter):
        history = [self._objective(factors, ctx)]
        converged = run_updates(self._update, factors, ctx, n_iter, self.tol, history)
        return factors, history, converged

    def _record(self, history, converged):
        self.objective_history_ = np.asarray(history)
        self.n_iter_ = len(history) - 1
        self.reconstruction_err_ = float(history[-1])
        if not converged and self.tol > 0:
            warnings.warn(
                f"{type(self).__name__} stopped at max_iter={self.max_iter} before the "
                f"objective's relative change fell below tol={self.tol}",
                ConvergenceWarning,
            )

    # -- input checks ------------------------------------------------------------------
    def _check_input(self, X, reset):
        X = validate_data(self, X, accept_sparse="csr", dtype=[np.float64, np.float32],
                          reset=reset)
        values = X.data if sp.issparse(X) else X
        if values.size and values.min() < 0:
            raise InvalidInputError(
                f"Negative values in data passed to {type(self).__name__} (minimum "
                f"{values.min():.3g}): it needs non-negative data such as counts or tf-idf"
            )
        if reset and self.n_components > min(X.shape):
            raise InvalidInputError(
                f"n_components={self.n_components} is larger than the data allows "
                f"({X.shape[0]} documents × {X.shape[1]} terms); choose at most {min(X.shape)}"
            )
        if reset and self.n_components > 1 and self.n_components > distinct_rows(X):
            raise InvalidInputError(
                f"the data has only {distinct_rows(X)} distinct documents (rows) of "
                f"{X.shape[0]}; n_components={self.n_components} clusters need at least as "
                f"many: choose a smaller k"
            )
        return X

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.input_tags.positive_only = True
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        return tags


class TermGraphFit(FactorizationModel):
    """A model with a term graph too: ``fit(X, y, W, H, graph, term_graph)`` takes a
    precomputed m × m term graph, as scikit-learn takes data-dependent arrays (and the base
    class the document graph), and passes it to ``_prepare(X, y, graph, term_graph)``."""

    def fit(self, X: MatrixLike, y: ArrayLike | None = None, W: ArrayLike | None = None,
            H: ArrayLike | None = None, graph: MatrixLike | None = None,
            term_graph: MatrixLike | None = None) -> Self:
        """Factorize ``X`` and cluster the documents; ``graph`` (n × n) and ``term_graph``
        (m × m) are precomputed graphs, built from ``X`` when omitted. Returns the model."""
        self.fit_transform(X, y, W=W, H=H, graph=graph, term_graph=term_graph)
        return self

    def fit_transform(self, X: MatrixLike, y: ArrayLike | None = None,
                      W: ArrayLike | None = None, H: ArrayLike | None = None,
                      graph: MatrixLike | None = None,
                      term_graph: MatrixLike | None = None) -> NDArray[np.floating]:
        """Fit and return the document factor (n × k)."""
        return self._fit_transform(X, y, W, H, graph=graph, term_graph=term_graph)


def in_fit_order(W, ctx):
    """The caller's start ``W`` (a row per document) with its rows in the fit's document order
    (``W`` that has not a row per document is left for the family to refuse)."""
    if ctx.order is None or W is None or np.shape(W)[:1] != ctx.order.shape:
        return W
    return np.asarray(W)[ctx.order]


def check_custom_factor(name, array, shape, dtype):
    """A caller-supplied initial factor: right shape, finite, non-negative."""
    if array is None:
        raise InvalidInputError(f"init='custom' needs {name} (shape {shape}) passed to fit")
    array = check_array(array, dtype=dtype, copy=True)
    if array.shape != shape:
        raise InvalidInputError(f"{name} has shape {array.shape}, expected {shape}")
    if array.min() < 0:
        raise InvalidInputError(f"{name} has negative entries; initial factors must be ≥ 0")
    return array

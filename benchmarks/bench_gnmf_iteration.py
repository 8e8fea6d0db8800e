"""Per-iteration cost of textcluster's GNMF against scikit-learn's ``NMF(solver="mu")``.

Data: full TDT2 (Deng Cai's top-30 file, 9394 documents; ``represent`` gives the
9394 × 36093 tf-idf matrix with 1.22 M non-zeros), ``k = 30`` by default.

Default mode: the cost of ONE multiplicative-update iteration
-----------------------------------------------------------------
Contenders (all on the same matrix, in the same process):

``gnmf``          ``GNMF(k)`` (``scaling="scale-free"``, the default), float64.
``gnmf-cai``      ``GNMF(k, scaling="cai")``, float64.
``gnmf-float32``  ``GNMF(k)`` on ``X.astype(np.float32)``.
``sklearn-mu``    ``sklearn.decomposition.NMF(k, solver="mu", init="random", tol=0)``.

GNMF: the hot path is timed directly. ``ctx = model._prepare(X, None, graph)`` is built once
(the kNN graph is built once by the first ``_prepare(X, None, None)`` and handed to the other
GNMF contexts, so every GNMF row uses the same graph). In each repeat the factors are drawn
afresh with ``model._random_factors(ctx, RandomState(seed))``, one untimed warm-up
``model._update(factors, ctx)`` is made, then ``--iters`` consecutive ``_update`` calls are
timed; the sample is their total time / ``--iters``. Each ``_update`` includes the objective
(textcluster evaluates it at every iteration).

scikit-learn: its update loop is not callable on its own, so the per-iteration cost is
isolated by differencing: in each repeat ``fit_transform`` is run with
``max_iter = N1 = --sk-base-iter`` and with ``max_iter = N2 = N1 + --iters`` (``tol=0``,
``init="random"``, same seed, so both runs do identical work up to iteration N1), and the
sample is ``(t(N2) − t(N1)) / (N2 − N1)``. This removes the fixed costs (input validation,
random init, the initial and final error computations). With ``tol=0`` scikit-learn computes
no objective inside the loop, so its per-iteration figure does NOT include an objective
evaluation while GNMF's does; ``--profile`` shows what the objective costs GNMF.

Repeats are interleaved: every repeat measures each contender once, and the order of the
contenders is rotated from one repeat to the next so that all of them share the machine's
noise. Reported: the median over repeats, min/max and the inter-quartile range, the ratio of
medians GNMF / scikit-learn, and the median of the per-repeat (paired) ratios.

``--profile`` adds an operation-level breakdown of one default-GNMF iteration (sparse
products ``X.tdot(V)`` / ``X.dot(U)``, the k × k Gram products, the ``(n|m) × k × k``
products, the elementwise updates, the graph product ``W @ V``, the objective). It runs the
model's own ``_update`` on instrumented arrays (an ndarray subclass timing every ufunc, ``@``
and numpy function; timing proxies for the sparse operands of ``ctx``; the functions of
``textcluster.models.nmf`` wrapped to attribute each operation to its step), so it follows
whatever ``_update`` currently does; the result is checked against a plain ``_update``.
scikit-learn's Frobenius MU step is replayed operation by operation (checked against its
private ``_multiplicative_update_w/_h``). The sparse products are also timed on their own:
textcluster's threaded operator, one thread, and SciPy, in float64 and float32.

``--end-to-end`` mode
---------------------
Wall time of the whole ``textcluster run tdt2 --model gnmf`` path, called in-process as
``textcluster.pipeline.run("tdt2", "gnmf", k=k, data_dir=...)`` (load, preprocess, fit
with graph construction, restarts and k-means assignment, evaluate), against scikit-learn's
``KMeans(n_clusters=k, n_init=10)`` on the same tf-idf matrix: reported both for the KMeans
fit alone and for load + represent + KMeans fit (the like-for-like pipeline). Interleaved
and rotated as above; ``--repeats`` defaults to 3 in this mode.

Output: a plain-text table on stdout; ``--json PATH`` also writes all samples, medians,
spreads, ratios and machine information (CPU count, library versions, BLAS/OpenMP pools via
threadpoolctl, load average).

Data folder: ``--data-dir``, else ``$TEXTCLUSTER_DATA``, else ``../shared/data`` relative to
the repository root.
"""

import argparse
import json
import os
import platform
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from _common import resolve_data_dir
import scipy
import scipy.sparse as sp
import sklearn
from sklearn.cluster import KMeans
from sklearn.decomposition import NMF as SkNMF
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import normalized_mutual_info_score
from sklearn.utils.extmath import safe_sparse_dot
from threadpoolctl import threadpool_info, threadpool_limits

import textcluster
from textcluster import pipeline
from textcluster.ingest import load_corpus
from textcluster.models import _linalg
from textcluster.models.nmf import GNMF

CORPUS = "tdt2"
SK_EPSILON = np.finfo(np.float32).eps  # scikit-learn's _nmf.EPSILON


# -- helpers ------------------------------------------------------------------------------
def summarize(samples):
    a = np.asarray(samples, dtype=float)
    q1, med, q3 = np.percentile(a, [25, 50, 75])
    return {"median": float(med), "min": float(a.min()), "max": float(a.max()),
            "q1": float(q1), "q3": float(q3), "iqr": float(q3 - q1), "n": int(a.size),
            "samples": [float(x) for x in a]}


def rotated(items, shift):
    shift %= len(items)
    return items[shift:] + items[:shift]


def machine_info():
    try:
        affinity = len(os.sched_getaffinity(0))
    except AttributeError:
        affinity = None
    try:
        load = list(os.getloadavg())
    except OSError:
        load = None
    return {
        "cpu_count": os.cpu_count(),
        "cpu_affinity": affinity,
        "load_average_at_start": load,
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "python": sys.version.split()[0],
        "numpy": np.__version__,
        "scipy": scipy.__version__,
        "sklearn": sklearn.__version__,
        "textcluster": getattr(textcluster, "__version__", None),
        "textcluster_sparse_threads": _linalg.n_threads(),
        "env": {k: os.environ[k] for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                                           "MKL_NUM_THREADS", "TEXTCLUSTER_THREADS")
                if k in os.environ},
        # library file paths left out: the JSON should not carry machine paths
        "threadpools": [{key: value for key, value in pool.items() if key != "filepath"}
                        for pool in threadpool_info()],
    }


def fmt_ms(seconds):
    return f"{seconds * 1e3:9.1f}"


def load_tfidf(data_dir):
    corpus = load_corpus(CORPUS, data_dir=data_dir)
    rep = pipeline.represent(corpus)
    return rep.X, rep.corpus


# -- per-iteration mode -------------------------------------------------------------------
class GnmfContender:
    def __init__(self, name, model, ctx, seed, iters):
        self.name, self.model, self.ctx, self.seed, self.iters = name, model, ctx, seed, iters
        self.single_iterations = []

    def measure(self):
        rng = np.random.RandomState(self.seed)
        factors = self.model._random_factors(self.ctx, rng)
        self.model._update(factors, self.ctx)  # warm-up, untimed
        times = []
        for _ in range(self.iters):
            start = time.perf_counter()
            objective = self.model._update(factors, self.ctx)
            times.append(time.perf_counter() - start)
        if not np.isfinite(objective):
            raise FloatingPointError(f"{self.name}: objective is not finite")
        self.single_iterations.extend(times)
        return sum(times) / self.iters


class SklearnContender:
    name = "sklearn-mu"

    def __init__(self, X, k, seed, base_iter, iters):
        self.X, self.k, self.seed = X, k, seed
        self.n1, self.n2 = base_iter, base_iter + iters
        self.fit_times = {self.n1: [], self.n2: []}

    def fit_time(self, max_iter):
        model = SkNMF(n_components=self.k, solver="mu", beta_loss="frobenius", init="random",
                      tol=0.0, max_iter=max_iter, random_state=self.seed)
        start = time.perf_counter()
        model.fit_transform(self.X)
        elapsed = time.perf_counter() - start
        if model.n_iter_ != max_iter:
            raise RuntimeError(f"sklearn ran {model.n_iter_} iterations, not {max_iter}")
        return elapsed

    def warm_up(self):
        self.fit_time(1)

    def measure(self):
        t1 = self.fit_time(self.n1)
        t2 = self.fit_time(self.n2)
        self.fit_times[self.n1].append(t1)
        self.fit_times[self.n2].append(t2)
        return (t2 - t1) / (self.n2 - self.n1)


def build_gnmf_contenders(X, k, seed, iters, log):
    start = time.perf_counter()
    default = GNMF(n_components=k, random_state=seed)
    ctx = default._prepare(X, None, None)
    log(f"kNN graph + GNMF context: {time.perf_counter() - start:.1f} s "
        f"(graph nnz {ctx['W'].nnz})")
    graph = ctx["W"]
    cai = GNMF(n_components=k, scaling="cai", random_state=seed)
    ctx_cai = cai._prepare(X, None, graph)
    default32 = GNMF(n_components=k, random_state=seed)
    ctx32 = default32._prepare(X.astype(np.float32), None, graph)
    return graph, [
        GnmfContender("gnmf", default, ctx, seed, iters),
        GnmfContender("gnmf-cai", cai, ctx_cai, seed, iters),
        GnmfContender("gnmf-float32", default32, ctx32, seed, iters),
    ]


def iteration_benchmark(args, X, log):
    graph, gnmf = build_gnmf_contenders(X, args.k, args.seed, args.iters, log)
    skl = SklearnContender(X, args.k, args.seed, args.sk_base_iter, args.iters)
    skl.warm_up()
    contenders = gnmf + [skl]
    samples = {c.name: [] for c in contenders}
    for r in range(args.repeats):
        for c in rotated(contenders, r):
            samples[c.name].append(c.measure())
        log(f"repeat {r + 1}/{args.repeats}: " + ", ".join(
            f"{name} {vals[-1] * 1e3:.0f} ms" for name, vals in samples.items()))

    sk = samples[skl.name]
    rows = {}
    for c in contenders:
        row = summarize(samples[c.name])
        if c is not skl:
            row["ratio_of_medians_vs_sklearn"] = row["median"] / summarize(sk)["median"]
            row["median_paired_ratio_vs_sklearn"] = float(np.median(
                np.asarray(samples[c.name]) / np.asarray(sk)))
            row["single_iteration"] = summarize(c.single_iterations)
            del row["single_iteration"]["samples"]
        else:
            row["fit_seconds"] = {f"max_iter={n}": summarize(v)
                                  for n, v in skl.fit_times.items()}
        rows[c.name] = row
    return graph, {
        "mode": "iteration",
        "method": {
            "gnmf": f"mean of {args.iters} consecutive model._update calls after 1 warm-up, "
                    "fresh random factors per repeat; objective included",
            "sklearn": f"(t(max_iter={skl.n2}) - t(max_iter={skl.n1})) / {skl.n2 - skl.n1} "
                       "of fit_transform, tol=0, init='random'; no objective in the loop",
            "interleaving": "each repeat measures every contender once, order rotated",
        },
        "iters_per_sample": args.iters,
        "repeats": args.repeats,
        "results_seconds_per_iteration": rows,
    }


def print_iteration_table(result):
    rows = result["results_seconds_per_iteration"]
    print()
    print(f"Per-iteration time (ms), {result['repeats']} repeats × "
          f"{result['iters_per_sample']} iterations per sample")
    print(f"{'contender':<14}{'median':>9}{'min':>9}{'max':>9}{'IQR':>9}"
          f"{'ratio':>8}{'paired':>8}")
    for name, row in rows.items():
        ratio = row.get("ratio_of_medians_vs_sklearn")
        paired = row.get("median_paired_ratio_vs_sklearn")
        print(f"{name:<14}{fmt_ms(row['median'])}{fmt_ms(row['min'])}{fmt_ms(row['max'])}"
              f"{fmt_ms(row['iqr'])}"
              + (f"{ratio:8.2f}{paired:8.2f}" if ratio is not None else f"{'1':>8}{'':>8}"))
    print("ratio = median(GNMF) / median(sklearn); paired = median of per-repeat ratios")


# -- profile: one iteration, operation by operation ---------------------------------------
#
# The GNMF profile does not re-implement ``_update``: it runs the model's own ``_update`` on
# factors that are instances of ``TimedArray`` (an ndarray subclass that times every ufunc,
# ``@`` and numpy function applied to it), with the sparse operands of ``ctx`` wrapped in
# timing proxies and the functions of ``textcluster.models.nmf`` (and the model's helper
# methods) wrapped so that each operation is attributed to the step it belongs to
# (U update, V update, objective, ...). The result is checked against a plain ``_update``.

class _Probe:
    """Accumulates seconds per (phase, operation) while an instrumented update runs."""

    def __init__(self, n, m):
        self.n, self.m = n, m
        self.seconds = {}
        self.phases = []
        self.depth = 0  # > 0 while inside a timed operation (nested numpy calls not counted)

    def record(self, op, seconds):
        phase = self.phases[0] if self.phases else "update (top level)"
        key = f"{phase}: {op}"
        self.seconds[key] = self.seconds.get(key, 0.0) + seconds

    def matmul_name(self, a, b):
        a_shape, b_shape = np.shape(a), np.shape(b)
        if len(a_shape) != 2 or len(b_shape) != 2:
            return "matmul (other)"
        rows, inner, cols = a_shape[0], a_shape[1], b_shape[1]
        side = {self.n: "n", self.m: "m"}
        if rows == cols and inner in side:
            factor = "V" if inner == self.n else "U"
            return f"gram {factor}ᵀ{factor} ({side[inner]}·k²)"
        if rows in side and inner == cols:
            factor = "V" if rows == self.n else "U"
            return f"{factor}@(k×k) ({side[rows]}·k²)"
        return f"matmul {a_shape}@{b_shape}"


class TimedArray(np.ndarray):
    """ndarray whose ufuncs, ``@`` and numpy functions are timed into ``TimedArray.probe``."""

    probe = None

    def __array_ufunc__(self, ufunc, method, *inputs, out=None, **kwargs):
        plain = [_plain(x) for x in inputs]
        if out is not None:
            kwargs["out"] = tuple(_plain(o) for o in out)
        probe = TimedArray.probe
        probe.depth += 1
        start = time.perf_counter()
        try:
            result = getattr(ufunc, method)(*plain, **kwargs)
        finally:
            elapsed = time.perf_counter() - start
            probe.depth -= 1
        if probe.depth == 0:
            if ufunc is np.matmul:
                name = probe.matmul_name(*plain[:2])
            elif method == "reduce":
                name = "reductions"
            else:
                name = "elementwise"
            probe.record(name, elapsed)
        if out is not None:
            return out[0] if len(out) == 1 else out
        return _timed(result)

    def __array_function__(self, func, types, args, kwargs):
        args = tuple(_plain_nested(a) for a in args)
        kwargs = {key: _plain_nested(value) for key, value in kwargs.items()}
        probe = TimedArray.probe
        probe.depth += 1
        start = time.perf_counter()
        try:
            result = func(*args, **kwargs)
        finally:
            elapsed = time.perf_counter() - start
            probe.depth -= 1
        if probe.depth == 0:
            probe.record("reductions" if func.__name__ in REDUCTIONS else func.__name__,
                         elapsed)
        return _timed(result)


REDUCTIONS = {"vdot", "einsum", "dot", "sum", "norm", "inner"}


def _plain(x):
    return x.view(np.ndarray) if isinstance(x, TimedArray) else x


def _plain_nested(x):
    if isinstance(x, (list, tuple)):
        return type(x)(_plain(item) for item in x)
    return _plain(x)


def _timed(x):
    return x.view(TimedArray) if isinstance(x, np.ndarray) and x.ndim > 0 else x


class _TimedOperand:
    """Proxy for a sparse operand of ``ctx``: times ``@``, ``dot`` and ``tdot``."""

    def __init__(self, target, label):
        self._target, self._label = target, label

    def _timed_call(self, name, fn, B):
        probe = TimedArray.probe
        shape = getattr(B, "shape", ())  # attribute access: not a timed numpy call
        rows = shape[0] if len(shape) == 2 else None
        name = name.replace("(B)", "(V)" if rows == probe.n else "(U)" if rows == probe.m
                            else "(B)")
        name = name.replace("@ B", "@ V" if rows == probe.n else "@ U" if rows == probe.m
                            else "@ B")
        start = time.perf_counter()
        result = fn(_plain(B))
        probe.record(name, time.perf_counter() - start)
        return _timed(np.asarray(result))

    def __matmul__(self, B):
        return self._timed_call(f"sparse {self._label} @ B", self._target.__matmul__, B)

    def dot(self, B):
        return self._timed_call(f"sparse {self._label}.dot(B)", self._target.dot, B)

    def tdot(self, B):
        return self._timed_call(f"sparse {self._label}.tdot(B)", self._target.tdot, B)

    def __getattr__(self, name):
        return getattr(self._target, name)


PHASE_NAMES = {"update_basis": "U update", "update_documents": "V update",
               "reconstruction_error": "objective", "_graph_term": "objective",
               "_objective": "objective", "graph_smoothness": "graph smoothness vᵀLv",
               "normalize_basis": "normalize basis"}


def _phase_wrapper(name, fn):
    phase = PHASE_NAMES.get(name, name)

    def wrapped(*args, **kwargs):
        probe = TimedArray.probe
        probe.phases.append(phase)
        try:
            return fn(*args, **kwargs)
        finally:
            probe.phases.pop()
    return wrapped


def instrumented_update(model, factors, ctx, probe):
    """Run ``model._update`` once with every operation timed; returns its objective."""
    import textcluster.models.nmf as nmf_module

    timed_factors = {key: _timed(value) for key, value in factors.items()}
    timed_ctx = dict(ctx)
    for key, value in ctx.items():
        if sp.issparse(value) or isinstance(value, _linalg.SparseOperator):
            timed_ctx[key] = _TimedOperand(value, "W" if key == "W" else key)
    patched_functions = {
        name: fn for name, fn in vars(nmf_module).items()
        if callable(fn) and getattr(fn, "__module__", None) == nmf_module.__name__
        and not isinstance(fn, type)
    }
    patched_methods = [name for name in ("_graph_term", "_objective") if hasattr(model, name)]
    TimedArray.probe = probe
    try:
        for name, fn in patched_functions.items():
            setattr(nmf_module, name, _phase_wrapper(name, fn))
        for name in patched_methods:
            setattr(model, name, _phase_wrapper(name, getattr(model, name)))
        start = time.perf_counter()
        objective = model._update(timed_factors, timed_ctx)
        total = time.perf_counter() - start
    finally:
        for name, fn in patched_functions.items():
            setattr(nmf_module, name, fn)
        for name in patched_methods:
            delattr(model, name)
        TimedArray.probe = None
    for key, value in timed_factors.items():  # copy back (the update may rebind arrays)
        factors[key][...] = _plain(value)
    probe.seconds["(whole instrumented _update)"] = total
    return float(objective)


def op_category(label):
    """Coarse category of a profiled operation, for the summary."""
    phase, _, op = label.partition(": ")
    if label.startswith("("):
        return None
    if op.startswith("sparse W"):
        kind = "graph product W@V"
    elif op.startswith("sparse"):
        kind = "sparse products with X"
    elif op.startswith("gram"):
        kind = "Gram products (k×k)"
    elif "@(k×k)" in op:
        kind = "factor × (k×k) products"
    elif op == "elementwise":
        kind = "elementwise"
    else:
        kind = "reductions / other numpy"
    return f"objective: {kind}" if phase == "objective" else kind


def replay_sklearn_iteration(X, W, H, t):
    """scikit-learn's Frobenius MU iteration (``_multiplicative_update_w`` then ``_h``)."""
    XHt = t("sparse X@H.T", safe_sparse_dot, X, H.T)
    HHt = t("gram H@H.T (m·k²)", np.dot, H, H.T)
    den = t("W@(k×k) (n·k²)", np.dot, W, HHt)
    t("elementwise: W update", _sklearn_elementwise, W, XHt, den)
    WtX = t("sparse W.T@X", safe_sparse_dot, W.T, X)
    WtW = t("gram W.T@W (n·k²)", np.dot, W.T, W)
    den = t("(k×k)@H (m·k²)", np.dot, WtW, H)
    t("elementwise: H update", _sklearn_elementwise, H, WtX, den)


def _sklearn_elementwise(factor, numerator, den):
    """scikit-learn's in-place step ``factor *= numerator / den`` (zeros in den floored)."""
    den[den == 0] = SK_EPSILON
    numerator /= den
    factor *= numerator


class OpTimer:
    def __init__(self):
        self.seconds = {}

    def __call__(self, name, fn, *args):
        start = time.perf_counter()
        out = fn(*args)
        self.seconds[name] = self.seconds.get(name, 0.0) + time.perf_counter() - start
        return out


def _check_sklearn_replay(X, W, H):
    """The replay gives the same W, H as scikit-learn's own update functions."""
    try:
        from sklearn.decomposition._nmf import (_multiplicative_update_h,
                                                _multiplicative_update_w)
    except ImportError:
        return "not checked (private scikit-learn functions not found)"
    W1, H1 = W.copy(), H.copy()
    W1, *_ = _multiplicative_update_w(X, W1, H1, beta_loss=2, l1_reg_W=0, l2_reg_W=0, gamma=1)
    H1 = _multiplicative_update_h(X, W1, H1, beta_loss=2, l1_reg_H=0, l2_reg_H=0, gamma=1)
    W2, H2 = W.copy(), H.copy()
    replay_sklearn_iteration(X, W2, H2, OpTimer())
    if not (np.allclose(W1, W2, rtol=1e-10) and np.allclose(H1, H2, rtol=1e-10)):
        raise AssertionError("the scikit-learn replay does not match its update functions")
    return "matches sklearn.decomposition._nmf._multiplicative_update_w/_h"


def sparse_product_variants(X, k, seed, repeats):
    """X·U and Xᵀ·V alone: textcluster's threaded operator vs one thread vs SciPy, f64/f32."""
    rng = np.random.RandomState(seed)
    n, m = X.shape
    U, V = rng.uniform(size=(m, k)), rng.uniform(size=(n, k))
    variants = {}
    for dtype in (np.float64, np.float32):
        Xd, Ud, Vd = X.astype(dtype), U.astype(dtype), V.astype(dtype)
        threaded, single = _linalg.SparseOperator(Xd), _linalg.SparseOperator(Xd, threads=1)
        name = np.dtype(dtype).name
        variants[f"X.dot(U) textcluster {threaded.threads} threads {name}"] = \
            lambda op=threaded, U=Ud: op.dot(U)
        variants[f"X.dot(U) textcluster 1 thread {name}"] = lambda op=single, U=Ud: op.dot(U)
        variants[f"X.tdot(V) textcluster {threaded.threads} threads {name}"] = \
            lambda op=threaded, V=Vd: op.tdot(V)
        variants[f"X @ U scipy CSR {name}"] = lambda X=Xd, U=Ud: X @ U
        variants[f"V.T @ X scipy (sklearn's form) {name}"] = lambda X=Xd, V=Vd: V.T @ X
    samples = {name: [] for name in variants}
    for r in range(repeats):
        for name, fn in rotated(list(variants.items()), r):
            start = time.perf_counter()
            fn()
            samples[name].append(time.perf_counter() - start)
    return {name: summarize(values) for name, values in samples.items()}


def profile_benchmark(args, X, graph, log):
    model = GNMF(n_components=args.k, random_state=args.seed)
    ctx = model._prepare(X, None, graph)
    n, m = X.shape
    factors = model._random_factors(ctx, np.random.RandomState(args.seed))
    model._update(factors, ctx)  # warm-up
    # the instrumentation must not change the result
    plain = {key: value.copy() for key, value in factors.items()}
    probed = {key: value.copy() for key, value in factors.items()}
    expected = model._update(plain, ctx)
    got = instrumented_update(model, probed, ctx, _Probe(n, m))
    if not np.isclose(expected, got, rtol=1e-9):
        raise AssertionError(f"instrumented objective {got} != _update objective {expected}")

    rng = np.random.RandomState(args.seed)
    avg = np.sqrt(X.mean() / args.k)
    Wsk = np.abs(avg * rng.standard_normal((n, args.k)))
    Hsk = np.abs(avg * rng.standard_normal((args.k, m)))
    sk_check = _check_sklearn_replay(X, Wsk, Hsk)

    gnmf_runs, sk_runs, whole = [], [], []
    for r in range(args.repeats):
        probe = _Probe(n, m)
        instrumented_update(model, factors, ctx, probe)
        gnmf_runs.append(probe.seconds)
        start = time.perf_counter()
        model._update(factors, ctx)
        whole.append(time.perf_counter() - start)
        timer = OpTimer()
        replay_sklearn_iteration(X, Wsk, Hsk, timer)
        sk_runs.append(timer.seconds)
        log(f"profile repeat {r + 1}/{args.repeats}")

    def table(runs):
        names = sorted({name for run in runs for name in run})
        return {name: summarize([run.get(name, 0.0) for run in runs]) for name in names}

    def categories(runs):
        per_run = []
        for run in runs:
            totals = {}
            for label, seconds in run.items():
                category = op_category(label)
                if category is not None:
                    totals[category] = totals.get(category, 0.0) + seconds
            tracked = sum(totals.values())
            totals["untracked (Python, copies)"] = max(
                run["(whole instrumented _update)"] - tracked, 0.0)
            per_run.append(totals)
        return table(per_run)

    log("timing the sparse products on their own")
    return {"gnmf_ops_seconds": table(gnmf_runs),
            "gnmf_categories_seconds": categories(gnmf_runs),
            "gnmf_whole_update_seconds": summarize(whole),
            "sklearn_ops_seconds": table(sk_runs),
            "sklearn_replay_check": sk_check,
            "sparse_product_variants_seconds": sparse_product_variants(
                X, args.k, args.seed, max(args.repeats, 5)),
            "repeats": args.repeats,
            "method": "GNMF: model._update run on instrumented arrays (every ufunc, @ and "
                      "numpy function timed, attributed to the nmf function it ran in), checked "
                      "against a plain _update; scikit-learn: its Frobenius MU step replayed "
                      "op by op, checked against its private update functions"}


def _print_ops(title, ops, repeats, total_key=None):
    rows = {name: op for name, op in ops.items() if not name.startswith("(")}
    total = sum(op["median"] for op in rows.values())
    print()
    print(f"{title}: medians over {repeats} repeats (ms)")
    print(f"{'operation':<48}{'median':>9}{'min':>9}{'max':>9}{'share':>8}")
    for name, op in sorted(rows.items(), key=lambda kv: -kv[1]["median"]):
        print(f"{name:<48}{fmt_ms(op['median'])}{fmt_ms(op['min'])}{fmt_ms(op['max'])}"
              f"{100 * op['median'] / max(total, 1e-12):7.1f}%")
    print(f"{'sum of medians':<48}{fmt_ms(total)}")
    if total_key and total_key in ops:
        print(f"{total_key:<48}{fmt_ms(ops[total_key]['median'])}")


def print_profile(prof):
    reps = prof["repeats"]
    _print_ops("GNMF one iteration, by step and operation", prof["gnmf_ops_seconds"], reps,
               "(whole instrumented _update)")
    _print_ops("GNMF one iteration, by kind of operation", prof["gnmf_categories_seconds"],
               reps)
    print(f"{'GNMF._update uninstrumented (same repeats)':<48}"
          f"{fmt_ms(prof['gnmf_whole_update_seconds']['median'])}")
    _print_ops("scikit-learn MU one iteration", prof["sklearn_ops_seconds"], reps)
    print(f"(scikit-learn replay {prof['sklearn_replay_check']})")
    variants = prof["sparse_product_variants_seconds"]
    print()
    print(f"Sparse products alone (k columns), median ms over {next(iter(variants.values()))['n']}")
    for name, row in variants.items():
        print(f"  {name:<46}{fmt_ms(row['median'])}  (min {row['min'] * 1e3:.1f})")


# -- end-to-end mode ----------------------------------------------------------------------
def end_to_end_benchmark(args, data_dir, log):
    gnmf_wall, gnmf_stages, gnmf_nmi = [], [], []
    km_fit, km_total, km_nmi = [], [], []

    def run_gnmf():
        start = time.perf_counter()
        result = pipeline.run(CORPUS, "gnmf", k=args.k, seed=args.seed, data_dir=data_dir)
        gnmf_wall.append(time.perf_counter() - start)
        gnmf_stages.append(dict(result.timings))
        gnmf_nmi.append(result.metrics.get("nmi"))

    def run_kmeans():
        start = time.perf_counter()
        X, corpus = load_tfidf(data_dir)
        fit_start = time.perf_counter()
        labels = KMeans(n_clusters=args.k, n_init=10, random_state=args.seed).fit_predict(X)
        end = time.perf_counter()
        km_fit.append(end - fit_start)
        km_total.append(end - start)
        if corpus.labels is not None:
            km_nmi.append(float(normalized_mutual_info_score(corpus.labels, labels)))

    contenders = [("gnmf", run_gnmf), ("kmeans", run_kmeans)]
    for r in range(args.repeats):
        for _, fn in rotated(contenders, r):
            fn()
        log(f"repeat {r + 1}/{args.repeats}: gnmf {gnmf_wall[-1]:.1f} s, "
            f"kmeans fit {km_fit[-1]:.1f} s (with load {km_total[-1]:.1f} s)")

    stages = {name: summarize([s[name] for s in gnmf_stages]) for name in gnmf_stages[0]}
    g, kf, kt = summarize(gnmf_wall), summarize(km_fit), summarize(km_total)
    return {
        "mode": "end-to-end",
        "repeats": args.repeats,
        "gnmf_pipeline_run_seconds": g,
        "gnmf_stage_seconds": stages,
        "kmeans_fit_seconds": kf,
        "kmeans_load_represent_fit_seconds": kt,
        "ratio_gnmf_over_kmeans_fit": g["median"] / kf["median"],
        "ratio_gnmf_over_kmeans_with_load": g["median"] / kt["median"],
        "nmi": {"gnmf": gnmf_nmi, "kmeans": km_nmi},
        "method": "pipeline.run('tdt2','gnmf') wall time vs KMeans(n_clusters=k, n_init=10); "
                  "interleaved, order rotated per repeat",
    }


def print_end_to_end(result):
    print()
    print(f"End to end on TDT2 (s), {result['repeats']} repeats")
    print(f"{'contender':<34}{'median':>9}{'min':>9}{'max':>9}")
    for label, key in (("gnmf pipeline.run (all stages)", "gnmf_pipeline_run_seconds"),
                       ("kmeans fit", "kmeans_fit_seconds"),
                       ("kmeans load+represent+fit", "kmeans_load_represent_fit_seconds")):
        row = result[key]
        print(f"{label:<34}{row['median']:9.2f}{row['min']:9.2f}{row['max']:9.2f}")
    print("gnmf stages (median s): " + ", ".join(
        f"{name} {row['median']:.2f}" for name, row in result["gnmf_stage_seconds"].items()))
    print(f"ratio gnmf / kmeans fit: {result['ratio_gnmf_over_kmeans_fit']:.2f}; "
          f"gnmf / kmeans with load: {result['ratio_gnmf_over_kmeans_with_load']:.2f}")
    nmi = result["nmi"]
    if nmi["gnmf"] and nmi["kmeans"]:
        print(f"NMI (median): gnmf {np.median(nmi['gnmf']):.3f}, "
              f"kmeans {np.median(nmi['kmeans']):.3f}")


# -- main ---------------------------------------------------------------------------------
def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data-dir", help="folder holding tdt2/TDT2.mat (default: "
                   "$TEXTCLUSTER_DATA, else ../shared/data from the repository root)")
    p.add_argument("--k", type=int, default=30, help="number of factors / clusters (30)")
    p.add_argument("--repeats", type=int, default=None,
                   help="interleaved repeats (default 5; 3 with --end-to-end)")
    p.add_argument("--iters", type=int, default=10,
                   help="iterations per timing sample; sklearn: N2 - N1 (default 10)")
    p.add_argument("--sk-base-iter", type=int, default=2,
                   help="N1, the shorter scikit-learn fit (default 2)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--blas-threads", type=int, default=None,
                   help="limit the BLAS pools (threadpoolctl) for the whole run, for every "
                   "contender; textcluster's sparse-product threads follow this limit unless "
                   "$TEXTCLUSTER_THREADS is set (default: no limit)")
    p.add_argument("--profile", action="store_true",
                   help="also break one GNMF and one sklearn iteration down by operation")
    p.add_argument("--end-to-end", action="store_true",
                   help="time pipeline.run('tdt2', 'gnmf') against KMeans(n_init=10) instead")
    p.add_argument("--json", metavar="PATH", help="also write the results to this JSON file")
    p.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    args = p.parse_args(argv)
    if args.repeats is None:
        args.repeats = 3 if args.end_to_end else 5
    if min(args.repeats, args.iters, args.sk_base_iter, args.k) < 1 or (
            args.blas_threads is not None and args.blas_threads < 1):
        p.error("--repeats, --iters, --sk-base-iter, --k and --blas-threads must be positive")
    return args


def main(argv=None):
    args = parse_args(argv)
    data_dir = resolve_data_dir(args.data_dir)

    def log(message):
        if not args.quiet:
            print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)

    if args.blas_threads:
        # kept for the whole process; applies to every contender alike
        blas_limit = threadpool_limits(  # noqa: F841
            limits=args.blas_threads, user_api="blas")
    info = machine_info()
    info["blas_threads_option"] = args.blas_threads
    out = {"benchmark": "bench_gnmf_iteration", "corpus": CORPUS, "k": args.k,
           "seed": args.seed, "machine": info}
    warnings.filterwarnings("ignore", category=ConvergenceWarning)

    if args.end_to_end:
        result = end_to_end_benchmark(args, data_dir, log)
        out.update(result)
        print_end_to_end(result)
    else:
        X, _ = load_tfidf(data_dir)
        if not sp.issparse(X):
            raise SystemExit("expected a sparse tf-idf matrix")
        out["matrix"] = {"shape": list(X.shape), "nnz": int(X.nnz), "dtype": str(X.dtype)}
        log(f"TDT2 tf-idf {X.shape[0]} × {X.shape[1]}, nnz {X.nnz}; k = {args.k}; "
            f"{info['cpu_count']} CPUs, textcluster threads {info['textcluster_sparse_threads']}")
        graph, result = iteration_benchmark(args, X, log)
        out.update(result)
        print(f"TDT2 {X.shape[0]} × {X.shape[1]} (nnz {X.nnz}), k = {args.k}")
        print_iteration_table(result)
        if args.profile:
            prof = profile_benchmark(args, X, graph, log)
            out["profile"] = prof
            print_profile(prof)

    try:
        out["machine"]["load_average_at_end"] = list(os.getloadavg())
    except OSError:
        pass
    print(f"\nload average start {info['load_average_at_start']}, end "
          f"{out['machine'].get('load_average_at_end')}; {info['cpu_count']} CPUs "
          "(shared machine: treat the numbers as indicative)")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2, default=str))
        log(f"wrote {args.json}")


if __name__ == "__main__":
    main()

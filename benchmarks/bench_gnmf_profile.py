"""One GNMF iteration and one scikit-learn ``NMF(solver="mu")`` iteration, operation by
operation.

Data: full TDT2 (Deng Cai's top-30 file; the 9394 × 36093 tf-idf matrix of ``represent``),
``k = 30`` by default.

GNMF: the breakdown of one default-GNMF iteration (sparse products ``X.tdot(V)`` /
``X.dot(U)``, the k × k Gram products, the ``(n|m) × k × k`` products, the elementwise
updates, the graph product ``W @ V``, the objective), by step (U update, V update, objective)
and by kind. It runs the model's own ``_update`` on instrumented arrays (an ndarray subclass
timing every ufunc, ``@`` and numpy function; timing proxies for the sparse operands of
``ctx``; the functions of ``textcluster.models.nmf`` wrapped to attribute each operation to
its step), so it follows whatever ``_update`` currently does; the result is checked against a
plain ``_update``.

scikit-learn: its Frobenius MU step is replayed operation by operation (checked against its
private ``_multiplicative_update_w/_h``).

The sparse products are also timed on their own: textcluster's threaded operator, one thread,
and SciPy, in float64 and float32.

Output: tables of medians over ``--repeats`` on stdout; ``--json PATH`` also writes every
summary and machine information.
"""

import time
from dataclasses import fields, replace

import numpy as np
import _common as common
from sklearn.utils.extmath import safe_sparse_dot

from textcluster.models import _linalg
from textcluster.models._base import loop_threads
from textcluster.models.nmf import GNMF

CORPUS = "tdt2"
SK_EPSILON = np.finfo(np.float32).eps  # scikit-learn's _nmf.EPSILON


# -- GNMF: the model's own update on instrumented arrays ------------------------------------
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

    def call(self, fn, *args, **kwargs):
        """``(seconds, fn(*args, **kwargs))``; seconds is None for a call made inside another
        timed operation (its time is counted there)."""
        self.depth += 1
        try:
            seconds, result = common.timed(fn, *args, **kwargs)
        finally:
            self.depth -= 1
        return (seconds if self.depth == 0 else None), result

    def record(self, op, seconds):
        """Add ``seconds`` to ``op`` in the innermost phase (in "objective" when inside it)."""
        if not self.phases:
            phase = "update (top level)"
        else:
            phase = "objective" if "objective" in self.phases else self.phases[-1]
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
        elapsed, result = probe.call(getattr(ufunc, method), *plain, **kwargs)
        if elapsed is not None:
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
        elapsed, result = probe.call(func, *args, **kwargs)
        if elapsed is not None:
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
    """Proxy for a sparse operand of ``ctx``: times ``@``, ``dot`` and ``tdot``.

    An update fused into a product (``rowwise``, run block by block in the threads of the
    product) is applied after it, to all rows at once in this thread, so that its operations
    are timed on their own."""

    def __init__(self, target, label):
        self._target, self._label = target, label

    def _timed_call(self, name, fn, B, rowwise=None):
        probe = TimedArray.probe
        shape = getattr(B, "shape", ())  # attribute access: not a timed numpy call
        rows = shape[0] if len(shape) == 2 else None
        name = name.replace("(B)", "(V)" if rows == probe.n else "(U)" if rows == probe.m
                            else "(B)")
        name = name.replace("@ B", "@ V" if rows == probe.n else "@ U" if rows == probe.m
                            else "@ B")
        seconds, result = common.timed(fn, _plain(B))
        probe.record(name, seconds)
        result = np.asarray(result)
        if rowwise is not None:
            rowwise(0, result.shape[0], result)
        return _timed(result)

    def __matmul__(self, B):
        return self._timed_call(f"sparse {self._label} @ B", self._target.__matmul__, B)

    def dot(self, B, rowwise=None):
        return self._timed_call(f"sparse {self._label}.dot(B)", self._target.dot, B, rowwise)

    def tdot(self, B, rowwise=None):
        return self._timed_call(f"sparse {self._label}.tdot(B)", self._target.tdot, B, rowwise)

    def __getattr__(self, name):
        return getattr(self._target, name)


PHASE_NAMES = {"update_basis": "U update", "update_documents": "V update",
               "multiplicative_step": "U and V updates", "unit_basis_step": "U update",
               "unit_columns": "U update",
               "reconstruction_error": "objective", "_graph_term": "objective",
               "_graph_products": "graph term W V and vᵀLv", "_objective": "objective",
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

    timed_factors = replace(factors, **{f.name: _timed(getattr(factors, f.name))
                                        for f in fields(factors)})
    timed_ctx = replace(ctx, **{
        f.name: _TimedOperand(getattr(ctx, f.name), f.name) for f in fields(ctx)
        if isinstance(getattr(ctx, f.name), _linalg.SparseOperator)})
    patched_functions = {
        name: fn for name, fn in vars(nmf_module).items()
        if callable(fn) and not isinstance(fn, type)
        and (getattr(fn, "__module__", None) == nmf_module.__name__ or name == "unit_columns")
    }
    patched_methods = [name for name in ("_graph_term", "_graph_products", "_objective")
                       if hasattr(model, name)]
    TimedArray.probe = probe
    try:
        for name, fn in patched_functions.items():
            setattr(nmf_module, name, _phase_wrapper(name, fn))
        for name in patched_methods:
            setattr(model, name, _phase_wrapper(name, getattr(model, name)))
        total, objective = common.timed(model._update, timed_factors, timed_ctx)
    finally:
        for name, fn in patched_functions.items():
            setattr(nmf_module, name, fn)
        for name in patched_methods:
            delattr(model, name)
        TimedArray.probe = None
    for f in fields(factors):  # copy back (the update may rebind arrays or set caches)
        value, target = _plain(getattr(timed_factors, f.name)), getattr(factors, f.name)
        if isinstance(target, np.ndarray) and isinstance(value, np.ndarray) \
                and target.shape == value.shape:
            target[...] = value
        else:
            setattr(factors, f.name, value)
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
    """Seconds per named operation: ``timer(name, fn, *args)`` calls ``fn(*args)``."""

    def __init__(self):
        self.seconds = {}

    def __call__(self, name, fn, *args):
        seconds, out = common.timed(fn, *args)
        self.seconds[name] = self.seconds.get(name, 0.0) + seconds
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
    seconds = {name: (lambda fn=fn: common.timed(fn)[0]) for name, fn in variants.items()}
    samples = common.interleaved(seconds, repeats)
    return {name: common.summarize(values) for name, values in samples.items()}


SETTLE_SECONDS = 0.2  # longer than OpenBLAS's workers spin after a threaded call (about 0.1 s)


def _untimed_updates(model, factors, ctx, seconds=SETTLE_SECONDS):
    """Updates for ``seconds``, untimed: the iteration timed next runs as inside a fit's loop,
    not beside the BLAS threads the scikit-learn replay before it left spinning (see
    ``bench_gnmf_iteration.py``)."""
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        model._update(factors, ctx)


def profile_benchmark(args, X, log):
    model = GNMF(n_components=args.k, random_state=args.seed)
    seconds, ctx = common.timed(model._prepare, X, None, None)
    log(f"kNN graph + GNMF context: {seconds:.1f} s (graph nnz {ctx.W.nnz})")
    n, m = X.shape
    factors = model._random_factors(ctx, np.random.RandomState(args.seed))
    model._update(factors, ctx)  # warm-up
    # the instrumentation must not change the result
    plain, probed = factors.copy(), factors.copy()
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
        with loop_threads():  # the threads a fit's update loop runs with
            _untimed_updates(model, factors, ctx)  # past the BLAS threads scikit-learn left
            instrumented_update(model, factors, ctx, probe)
            whole.append(common.timed(model._update, factors, ctx)[0])
        gnmf_runs.append(probe.seconds)
        timer = OpTimer()
        replay_sklearn_iteration(X, Wsk, Hsk, timer)
        sk_runs.append(timer.seconds)
        log(f"profile repeat {r + 1}/{args.repeats}")

    def table(runs):
        names = sorted({name for run in runs for name in run})
        return {name: common.summarize([run.get(name, 0.0) for run in runs]) for name in names}

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
            "gnmf_whole_update_seconds": common.summarize(whole),
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
        print(f"{name:<48}{common.fmt_ms(op['median'], op['min'], op['max'])}"
              f"{100 * op['median'] / max(total, 1e-12):7.1f}%")
    print(f"{'sum of medians':<48}{common.fmt_ms(total)}")
    if total_key and total_key in ops:
        print(f"{total_key:<48}{common.fmt_ms(ops[total_key]['median'])}")


def print_profile(prof):
    reps = prof["repeats"]
    _print_ops("GNMF one iteration, by step and operation", prof["gnmf_ops_seconds"], reps,
               "(whole instrumented _update)")
    _print_ops("GNMF one iteration, by kind of operation", prof["gnmf_categories_seconds"],
               reps)
    print(f"{'GNMF._update uninstrumented (same repeats)':<48}"
          f"{common.fmt_ms(prof['gnmf_whole_update_seconds']['median'])}")
    _print_ops("scikit-learn MU one iteration", prof["sklearn_ops_seconds"], reps)
    print(f"(scikit-learn replay {prof['sklearn_replay_check']})")
    variants = prof["sparse_product_variants_seconds"]
    print()
    print(f"Sparse products alone (k columns), median ms over {next(iter(variants.values()))['n']}")
    for name, row in variants.items():
        print(f"  {name:<46}{common.fmt_ms(row['median'])}  (min {row['min'] * 1e3:.1f})")


def measure(args, record, log):
    X = common.load_matrix(CORPUS, args, record, log)
    record["mode"] = "profile"
    record["profile"] = profile_benchmark(args, X, log)
    print_profile(record["profile"])


def main(argv=None):
    args = common.model_parser(__doc__, repeats=5).parse_args(argv)
    common.run_model_benchmark("bench_gnmf_profile", CORPUS, args, measure)


if __name__ == "__main__":
    main()

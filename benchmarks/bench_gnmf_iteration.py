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
products, the elementwise updates, the graph product ``W @ V``, the objective) and of one
scikit-learn iteration, by replaying the same operations as ``GNMF._update`` /
scikit-learn's ``_multiplicative_update_w/h`` one at a time with a timer around each.
The GNMF replay is checked against ``model._update`` (same factors and objective).

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
from textcluster.models._base import EPS
from textcluster.models.nmf import GNMF, graph_smoothness

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA_DIR = REPO_ROOT.parent / "shared" / "data"
CORPUS = "tdt2"
SK_EPSILON = np.finfo(np.float32).eps  # scikit-learn's _nmf.EPSILON


# -- helpers ------------------------------------------------------------------------------
def resolve_data_dir(arg):
    if arg:
        return Path(arg)
    if os.environ.get("TEXTCLUSTER_DATA"):
        return Path(os.environ["TEXTCLUSTER_DATA"])
    return DEFAULT_DATA_DIR


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
class OpTimer:
    def __init__(self):
        self.seconds = {}

    def __call__(self, name, fn, *args):
        start = time.perf_counter()
        out = fn(*args)
        self.seconds[name] = self.seconds.get(name, 0.0) + time.perf_counter() - start
        return out


def replay_gnmf_update(U, V, ctx, t):
    """The operations of ``GNMF._update`` (scaling="scale-free"), one timed call each."""
    X, W, lam, degree = ctx["X"], ctx["W"], ctx["lam"], ctx["degree"]
    WV = t("graph W@V", lambda: W @ V)
    penalty = t("elementwise: penalty vᵀLv", lambda: lam * graph_smoothness(V, WV, degree))
    # update_basis(U, V, X.tdot(V), penalty)
    XtV = t("sparse X.tdot(V)", X.tdot, V)
    VtV = t("gram V.T@V (n·k²)", lambda: V.T @ V)
    den = t("U@(k×k) (m·k²)", lambda: U @ VtV)

    def basis_elementwise():
        d = den + U * penalty
        U.__imul__(XtV / np.maximum(d, EPS))
    t("elementwise: U update", basis_elementwise)

    def normalize():
        norms = np.maximum(np.linalg.norm(U, axis=0), EPS)
        U.__itruediv__(norms)
        V.__imul__(norms)
        WV.__imul__(norms)
    t("normalize basis", normalize)
    XU = t("sparse X.dot(U)", X.dot, U)
    # update_documents(U, V, XU, lam, WV, degree)
    UtU = t("gram U.T@U (m·k²)", lambda: U.T @ U)
    den = t("V@(k×k) (n·k²)", lambda: V @ UtU)

    def documents_elementwise():
        num = XU + lam * WV
        d = den + lam * degree[:, None] * V
        V.__imul__(num / np.maximum(d, EPS))
    t("elementwise: V update", documents_elementwise)
    # reconstruction_error(X_norm2, V, U, XU)
    cross = t("objective: vdots + graph einsums", np.vdot, V, XU)
    UtU2 = t("objective: gram U.T@U again", lambda: U.T @ U)
    VtV2 = t("objective: gram V.T@V again", lambda: V.T @ V)
    gram = t("objective: vdots + graph einsums", np.vdot, UtU2, VtV2)
    error = max(ctx["X_norm2"] - 2.0 * cross + gram, 0.0)
    # _graph_term
    WV2 = t("objective: graph W@V again", lambda: W @ V)

    def graph_term():
        smooth = graph_smoothness(V, WV2, degree) * np.einsum("ij,ij->j", U, U)
        return lam * float(smooth.sum())
    return error + t("objective: vdots + graph einsums", graph_term)


def replay_sklearn_iteration(X, W, H, t):
    """scikit-learn's Frobenius MU iteration (``_multiplicative_update_w`` then ``_h``)."""
    XHt = t("sparse X@H.T", safe_sparse_dot, X, H.T)
    HHt = t("gram H@H.T (m·k²)", np.dot, H, H.T)
    den = t("W@(k×k) (n·k²)", np.dot, W, HHt)

    def w_elementwise():
        den[den == 0] = SK_EPSILON
        XHt.__itruediv__(den)
        W.__imul__(XHt)
    t("elementwise: W update", w_elementwise)
    WtX = t("sparse W.T@X", safe_sparse_dot, W.T, X)
    WtW = t("gram W.T@W (n·k²)", np.dot, W.T, W)
    den = t("(k×k)@H (m·k²)", np.dot, WtW, H)

    def h_elementwise():
        den[den == 0] = SK_EPSILON
        WtX.__itruediv__(den)
        H.__imul__(WtX)
    t("elementwise: H update", h_elementwise)


def profile_benchmark(args, X, graph, log):
    model = GNMF(n_components=args.k, random_state=args.seed)
    ctx = model._prepare(X, None, graph)
    factors = model._random_factors(ctx, np.random.RandomState(args.seed))
    model._update(factors, ctx)  # warm-up
    # correctness of the replay: same start, same result as model._update
    check = {"U": factors["U"].copy(), "V": factors["V"].copy()}
    expected = model._update(check, ctx)
    got = replay_gnmf_update(factors["U"].copy(), factors["V"].copy(), ctx, OpTimer())
    if not np.isclose(expected, got, rtol=1e-9):
        raise AssertionError(f"replay objective {got} != _update objective {expected}")

    gnmf_runs, sk_runs, whole = [], [], []
    rng = np.random.RandomState(args.seed)
    n, m = X.shape
    avg = np.sqrt(X.mean() / args.k)
    Wsk = np.abs(avg * rng.standard_normal((n, args.k)))
    Hsk = np.abs(avg * rng.standard_normal((args.k, m)))
    for r in range(args.repeats):
        timer = OpTimer()
        replay_gnmf_update(factors["U"], factors["V"], ctx, timer)
        gnmf_runs.append(timer.seconds)
        start = time.perf_counter()
        model._update(factors, ctx)
        whole.append(time.perf_counter() - start)
        timer = OpTimer()
        replay_sklearn_iteration(X, Wsk, Hsk, timer)
        sk_runs.append(timer.seconds)
        log(f"profile repeat {r + 1}/{args.repeats}")

    def table(runs):
        names = list(runs[0])
        return {name: summarize([run.get(name, 0.0) for run in runs]) for name in names}

    return {"gnmf_ops_seconds": table(gnmf_runs),
            "gnmf_whole_update_seconds": summarize(whole),
            "sklearn_ops_seconds": table(sk_runs),
            "repeats": args.repeats}


def print_profile(prof):
    for title, key in (("GNMF (scale-free) one iteration", "gnmf_ops_seconds"),
                       ("scikit-learn MU one iteration", "sklearn_ops_seconds")):
        ops = prof[key]
        total = sum(op["median"] for op in ops.values())
        print()
        print(f"{title}: medians over {prof['repeats']} repeats (ms)")
        print(f"{'operation':<36}{'median':>9}{'min':>9}{'max':>9}{'share':>8}")
        for name, op in sorted(ops.items(), key=lambda kv: -kv[1]["median"]):
            print(f"{name:<36}{fmt_ms(op['median'])}{fmt_ms(op['min'])}{fmt_ms(op['max'])}"
                  f"{100 * op['median'] / total:7.1f}%")
        print(f"{'sum of medians':<36}{fmt_ms(total)}")
    print(f"{'GNMF._update (whole, same repeats)':<36}"
          f"{fmt_ms(prof['gnmf_whole_update_seconds']['median'])}")


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

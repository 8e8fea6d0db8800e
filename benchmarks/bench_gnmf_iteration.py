"""Per-iteration cost of textcluster's GNMF against scikit-learn's ``NMF(solver="mu")``.

Data: full TDT2 (Deng Cai's top-30 file, 9394 documents; ``represent`` gives the
9394 × 36093 tf-idf matrix with 1.22 M non-zeros), ``k = 30`` by default.

Contenders (all on the same matrix, in the same process):

``gnmf``          ``GNMF(k, lam=1e5)`` (``scaling="unit-basis"``, the default) on the matrix
                  as ``represent`` gives it (float32 by default): the update at the graph
                  strength the default's label-free selection fits its graph-led candidate
                  with and picks on TDT2 (``selection.GRAPH_LED_LAM``; ``lam="auto"`` itself
                  has no strength until it has chosen one).
``gnmf-cai``      ``GNMF(k, scaling="cai")`` (Cai's λ = 100, multiplicative U-update).
``gnmf-float32``  ``GNMF(k, lam=1e5)`` on ``X.astype(np.float32)`` (the same as ``gnmf``
                  while ``represent`` makes float32 matrices).
``sklearn-mu``    ``sklearn.decomposition.NMF(k, solver="mu", init="random", tol=0)``.

GNMF: the hot path is timed directly. ``ctx = model._prepare(X, None, graph)`` is built once
(the kNN graph is built once by the first ``_prepare(X, None, None)`` and handed to the other
GNMF contexts, so every GNMF row uses the same graph). In each sample the factors are drawn
afresh with ``model._random_factors(ctx, RandomState(seed))``, one untimed warm-up
``model._update(factors, ctx)`` is made, then ``--iters`` consecutive ``_update`` calls are
timed; the sample is their total time / ``--iters``. Each ``_update`` includes the objective
(textcluster evaluates it at every iteration). The draw and the calls run with the threads of
a fit's update loop (``textcluster.models._base.loop_threads``: BLAS on one thread, the sparse
products on the package's threads), as inside a fit; scikit-learn runs as it does by default.

scikit-learn: its update loop is not callable on its own, so the per-iteration cost is
isolated by differencing: in each repeat ``fit_transform`` is run with
``max_iter = N1 = --sk-base-iter`` and with ``max_iter = N2 = N1 + --iters`` (``tol=0``,
``init="random"``, same seed, so both runs do identical work up to iteration N1), and the
sample is ``(t(N2) − t(N1)) / (N2 − N1)``. This removes the fixed costs (input validation,
random init, the initial and final error computations). With ``tol=0`` scikit-learn computes
no objective inside the loop, so its per-iteration figure does NOT include an objective
evaluation while GNMF's does; ``bench_gnmf_profile.py`` shows what the objective costs GNMF.

Repeats are interleaved: every repeat measures each contender once, in a new seeded order
(``_common.interleaved``), so that all of them share the machine's noise, and each timed
sample comes right after the same sample of the same contender, untimed: a contender is not
timed beside what the one before it left running. OpenBLAS's workers spin for about 0.1 s
after a threaded call, and on two cores that slowed GNMF's iteration by a third after
scikit-learn's fits (and after a random start drawn with two BLAS threads); scikit-learn's
after GNMF's was slower too. Reported: the median over repeats, min/max and the inter-quartile
range, the ratio of medians GNMF / scikit-learn, and the median of the per-repeat (paired)
ratios.

Output: a plain-text table on stdout; ``--json PATH`` also writes all samples, medians,
spreads, ratios and machine information. The whole ``textcluster run`` path is timed by
``bench_end_to_end.py``, one iteration operation by operation by ``bench_gnmf_profile.py``.
"""

import numpy as np
import _common as common
from sklearn.decomposition import NMF as SkNMF

from textcluster.models._base import loop_threads
from textcluster.models.nmf import GNMF
from textcluster.models.selection import GRAPH_LED_LAM

CORPUS = "tdt2"


class GnmfContender:
    """``--iters`` consecutive ``_update`` calls of one GNMF model from fresh random factors."""

    def __init__(self, name, model, ctx, seed, iters):
        self.name, self.model, self.ctx, self.seed, self.iters = name, model, ctx, seed, iters
        self.single_iterations = []

    def measure(self, record=True):
        """The mean of ``--iters`` timed iterations (with ``record``, each also kept in
        ``single_iterations``)."""
        times = []
        with loop_threads():  # as inside a fit: the start drawn and the updates run in them
            factors = self.model._random_factors(self.ctx, np.random.RandomState(self.seed))
            self.model._update(factors, self.ctx)  # warm-up, untimed
            for _ in range(self.iters):
                seconds, objective = common.timed(self.model._update, factors, self.ctx)
                times.append(seconds)
        if not np.isfinite(objective):
            raise FloatingPointError(f"{self.name}: objective is not finite")
        if record:
            self.single_iterations.extend(times)
        return sum(times) / self.iters


class SklearnContender:
    """scikit-learn's per-iteration cost, by differencing two fits of different lengths."""

    name = "sklearn-mu"

    def __init__(self, X, k, seed, base_iter, iters):
        self.X, self.k, self.seed = X, k, seed
        self.n1, self.n2 = base_iter, base_iter + iters
        self.fit_times = {self.n1: [], self.n2: []}

    def fit_time(self, max_iter):
        model = SkNMF(n_components=self.k, solver="mu", beta_loss="frobenius", init="random",
                      tol=0.0, max_iter=max_iter, random_state=self.seed)
        seconds, _ = common.timed(model.fit_transform, self.X)
        if model.n_iter_ != max_iter:
            raise RuntimeError(f"sklearn ran {model.n_iter_} iterations, not {max_iter}")
        return seconds

    def warm_up(self):
        self.fit_time(1)

    def measure(self, record=True):
        t1 = self.fit_time(self.n1)
        t2 = self.fit_time(self.n2)
        if record:
            self.fit_times[self.n1].append(t1)
            self.fit_times[self.n2].append(t2)
        return (t2 - t1) / (self.n2 - self.n1)


def build_gnmf_contenders(X, k, seed, iters, log):
    default = GNMF(n_components=k, lam=GRAPH_LED_LAM, random_state=seed)
    seconds, ctx = common.timed(default._prepare, X, None, None)
    graph = ctx.W  # built once, shared by every GNMF row
    log(f"kNN graph + GNMF context: {seconds:.1f} s (graph nnz {graph.nnz})")
    cai = GNMF(n_components=k, scaling="cai", random_state=seed)
    ctx_cai = cai._prepare(X, None, graph)
    default32 = GNMF(n_components=k, lam=GRAPH_LED_LAM, random_state=seed)
    ctx32 = default32._prepare(X.astype(np.float32), None, graph)
    return [
        GnmfContender("gnmf", default, ctx, seed, iters),
        GnmfContender("gnmf-cai", cai, ctx_cai, seed, iters),
        GnmfContender("gnmf-float32", default32, ctx32, seed, iters),
    ]


def iteration_benchmark(args, X, log):
    gnmf = build_gnmf_contenders(X, args.k, args.seed, args.iters, log)
    skl = SklearnContender(X, args.k, args.seed, args.sk_base_iter, args.iters)
    skl.warm_up()
    contenders = gnmf + [skl]

    def progress(r, samples):
        log(f"repeat {r + 1}/{args.repeats}: " + ", ".join(
            f"{name} {values[-1] * 1e3:.0f} ms" for name, values in samples.items()))

    # each timed sample right after an untimed one of its own (see the module docstring)
    samples = common.interleaved({c.name: c.measure for c in contenders}, args.repeats, progress,
                                 before={c.name: lambda c=c: c.measure(record=False)
                                         for c in contenders})
    sk_median = common.summarize(samples[skl.name])["median"]
    rows = {}
    for c in contenders:
        row = common.summarize(samples[c.name])
        if c is skl:
            row["fit_seconds"] = {f"max_iter={n}": common.summarize(v)
                                  for n, v in skl.fit_times.items()}
        else:
            row["ratio_of_medians_vs_sklearn"] = row["median"] / sk_median
            row["median_paired_ratio_vs_sklearn"] = float(np.median(
                np.asarray(samples[c.name]) / np.asarray(samples[skl.name])))
            row["single_iteration"] = common.summarize(c.single_iterations, keep_samples=False)
        rows[c.name] = row
    return {
        "mode": "iteration",
        "method": {
            "gnmf": f"mean of {args.iters} consecutive model._update calls after 1 warm-up, "
                    "fresh random factors per repeat; objective included",
            "sklearn": f"(t(max_iter={skl.n2}) - t(max_iter={skl.n1})) / {skl.n2 - skl.n1} "
                       "of fit_transform, tol=0, init='random'; no objective in the loop",
            "interleaving": "each repeat measures every contender once, in a new seeded order",
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
        print(f"{name:<14}{common.fmt_ms(row['median'], row['min'], row['max'], row['iqr'])}"
              + (f"{ratio:8.2f}{paired:8.2f}" if ratio is not None else f"{'1':>8}{'':>8}"))
    print("ratio = median(GNMF) / median(sklearn); paired = median of per-repeat ratios")


def parse_args(argv=None):
    parser = common.model_parser(__doc__, repeats=5)
    parser.add_argument("--iters", type=common.positive_int, default=10,
                        help="iterations per timing sample; sklearn: N2 - N1 (default 10)")
    parser.add_argument("--sk-base-iter", type=common.positive_int, default=2,
                        help="N1, the shorter scikit-learn fit (default 2)")
    return parser.parse_args(argv)


def measure(args, record, log):
    X = common.load_matrix(CORPUS, args, record, log)
    record.update(iteration_benchmark(args, X, log))
    print_iteration_table(record)


def main(argv=None):
    common.run_model_benchmark("bench_gnmf_iteration", CORPUS, parse_args(argv), measure)


if __name__ == "__main__":
    main()

"""scikit-learn's k-means in one OpenMP thread against its default threads, on an idle machine
and beside a process that holds one core, in one process run; and the default
``textcluster run tdt2 --model gnmf`` with textcluster's rule (``kmeans_threads``: one thread
for a small Lloyd iteration) against the same run with every k-means in the default threads.

Data: full TDT2 (the 9394 × 36093 tf-idf matrix of ``represent``, float32) and its LSA rows
(30 dimensions, unit length: what the default graph models' start clusters, the same shape
as the document factor their choice of λ clusters 15 times). k = 30. Rows:

| row | what is timed |
|---|---|
| `small-1`, `small-default` | ``KMeans(30, n_init=5)`` on the LSA rows (8.5 M multiply-adds an iteration), one thread / scikit-learn's |
| `tfidf-1`, `tfidf-default` | ``KMeans(30, n_init=3)`` on the tf-idf rows (37 M), one thread / scikit-learn's |
| `run-rule`, `run-default` | ``textcluster.run("tdt2", "gnmf")``, with textcluster's rule / every k-means in scikit-learn's threads (``--runs``) |

"busy": a child process spins on one core while the rows are timed (``--no-busy``: idle only).
Repeats interleaved, in a new order every repeat; medians; ratios one thread / default (and rule / default).

    python benchmarks/bench_kmeans_threads.py --json benchmarks/results/kmeans_threads.json
"""

import multiprocessing
import time
from contextlib import nullcontext

from sklearn.cluster import KMeans
from sklearn.decomposition import TruncatedSVD
from sklearn.preprocessing import normalize
from threadpoolctl import threadpool_limits

import _common as common

import textcluster
from textcluster import _threads


def spin(seconds):
    """Hold a core for ``seconds`` (the other process of a shared machine)."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


class Busy:
    """A child process spinning on one core while the block runs (nothing when not ``on``)."""

    def __init__(self, on):
        self.on, self.child = on, None

    def __enter__(self):
        if self.on:
            self.child = multiprocessing.Process(target=spin, args=(3600,), daemon=True)
            self.child.start()
            time.sleep(0.2)

    def __exit__(self, *exc):
        if self.child is not None:
            self.child.terminate()
            self.child.join()


def kmeans(rows, k, n_init, threads):
    """``KMeans(k, n_init)`` of ``rows`` in ``threads`` OpenMP threads (None: the default)."""
    with threadpool_limits(threads, user_api="openmp") if threads else nullcontext():
        return KMeans(k, n_init=n_init, random_state=0).fit(rows)


def gnmf_run(data_dir, rule):
    """The default GNMF run on TDT2; ``rule=False``: every k-means in the default threads."""
    saved = _threads.SMALL_KMEANS_WORK
    _threads.SMALL_KMEANS_WORK = saved if rule else 0
    try:
        return textcluster.run("tdt2", "gnmf", data_dir=data_dir)
    finally:
        _threads.SMALL_KMEANS_WORK = saved


def main():
    parser = common.model_parser(__doc__, repeats=5)
    parser.add_argument("--runs", type=int, default=3,
                        help="repeats of the whole GNMF run per condition (0: none; default 3)")
    parser.add_argument("--no-busy", action="store_true", help="time on the idle machine only")
    args = parser.parse_args()
    log = common.logger(args.quiet)
    machine = common.machine_info()
    record = {"benchmark": "kmeans_threads", "corpus": "tdt2", "k": args.k,
              "small_kmeans_work": _threads.SMALL_KMEANS_WORK, "machine": machine,
              "results_seconds": {}}
    X = common.load_matrix("tdt2", args, record, log)
    data_dir = common.resolve_data_dir(args.data_dir)
    lsa = normalize(TruncatedSVD(args.k, random_state=args.seed).fit_transform(X))
    contenders = {
        "small-1": lambda: common.timed(kmeans, lsa, args.k, 5, 1)[0],
        "small-default": lambda: common.timed(kmeans, lsa, args.k, 5, None)[0],
        "tfidf-1": lambda: common.timed(kmeans, X, args.k, 3, 1)[0],
        "tfidf-default": lambda: common.timed(kmeans, X, args.k, 3, None)[0],
    }
    runs = {"run-rule": lambda: common.timed(gnmf_run, data_dir, True)[0],
            "run-default": lambda: common.timed(gnmf_run, data_dir, False)[0]}
    gnmf_run(data_dir, True)  # the corpus cache and the compiled kernels
    print(f"\n{'condition':<10}{'row':<16}{'median s':>10}{'IQR s':>9}")
    for condition in ("idle",) + (() if args.no_busy else ("busy",)):
        with Busy(condition == "busy"):
            times = common.interleaved(contenders, args.repeats,
                                       lambda r, _: log(f"{condition}: repeat {r + 1}"))
            if args.runs:
                times.update(common.interleaved(runs, args.runs,
                                                lambda r, _: log(f"{condition}: run {r + 1}")))
        summaries = {name: common.summarize(values) for name, values in times.items()}
        medians = {name: s["median"] for name, s in summaries.items()}
        ratios = {"small one thread / default": medians["small-1"] / medians["small-default"],
                  "tfidf one thread / default": medians["tfidf-1"] / medians["tfidf-default"]}
        if args.runs:
            ratios["gnmf run rule / default"] = medians["run-rule"] / medians["run-default"]
        record["results_seconds"][condition] = {"rows": summaries, "ratios": ratios}
        for name, s in summaries.items():
            print(f"{condition:<10}{name:<16}{s['median']:10.3f}{s['iqr']:9.3f}")
        for name, ratio in ratios.items():
            print(f"{condition:<10}{name}: {ratio:.2f}")
    print(f"(rule: one thread below {_threads.SMALL_KMEANS_WORK:.0e} multiply-adds an "
          f"iteration; LSA rows {lsa.size * args.k:.1e}, tf-idf rows {X.nnz * args.k:.1e})")
    common.finish(record, machine, args.json, log)


if __name__ == "__main__":
    main()

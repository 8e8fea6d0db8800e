"""The choice of k (``--k auto``, ``choose_n_clusters``) with its tests run side by side over
the cores against the same choice in one thread (``TEXTCLUSTER_THREADS=1``: the tests one
after the other, as before they ran side by side), in one process run; the two curves are
checked to be identical.

Data: a corpus' tf-idf rows as ``textcluster run`` makes them (``--corpus``, default AG News of
the development panel, 7,600 documents), candidates 3–30, sixteen halvings each: 448 tests of
two k-means fits on half of the documents' 100-dimensional LSA rows. Repeats interleaved, in
a new order every repeat; medians; ratio = all cores / one thread.

    python benchmarks/bench_cluster_count.py --json benchmarks/results/cluster_count.json
"""

import os
import warnings

import _common as common

from textcluster.models.cluster_count import choose_n_clusters


def chooser(X, threads, seed):
    def choose():
        os.environ["TEXTCLUSTER_THREADS"] = str(threads)
        return common.timed(choose_n_clusters, X, random_state=seed)
    return choose


def main():
    parser = common.benchmark_parser(__doc__, repeats=3)
    parser.add_argument("--corpus", default="agnews")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    log = common.logger()
    X, _ = common.load_tfidf(args.corpus, common.resolve_data_dir(args.data_dir))
    machine = common.machine_info()
    cores = machine["cpu_affinity"] or machine["cpu_count"] or 1
    contenders = {"one thread": chooser(X, 1, args.seed),
                  f"{cores} threads": chooser(X, cores, args.seed)}
    given = os.environ.get("TEXTCLUSTER_THREADS")
    try:
        runs = common.interleaved(contenders, args.repeats,
                                  lambda r, _: log(f"repeat {r + 1} of {args.repeats}"))
    finally:
        os.environ.pop("TEXTCLUSTER_THREADS", None)
        if given is not None:
            os.environ["TEXTCLUSTER_THREADS"] = given
    curves = {(choice.k, tuple(choice.instability)) for timings in runs.values()
              for _, choice in timings}
    if len(curves) != 1:
        raise SystemExit("the curves differ between the runs")
    (k, _), = curves
    seconds = {name: common.summarize([t for t, _ in timings]) for name, timings in runs.items()}
    ratio = seconds[f"{cores} threads"]["median"] / seconds["one thread"]["median"]
    for name, summary in seconds.items():
        print(f"{name:12s} median {summary['median']:6.1f} s (min {summary['min']:.1f})")
    print(f"ratio {ratio:.2f}; the same curve in every run, k = {k}")
    record = {"benchmark": "bench_cluster_count", "corpus": args.corpus, "seed": args.seed,
              "matrix": {"shape": list(X.shape), "nnz": int(X.nnz)}, "k_chosen": k,
              "identical_curves": True, "results_seconds": seconds, "ratio": ratio,
              "machine": machine}
    common.finish(record, machine, args.json, log)


if __name__ == "__main__":
    main()

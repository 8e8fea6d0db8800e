"""``textcluster run tdt2 --model gnmf`` end to end against scikit-learn's KMeans.

Wall time of the whole ``textcluster run tdt2 --model gnmf`` path, called in-process as
``textcluster.run("tdt2", "gnmf", k=k, data_dir=...)`` (load, preprocess, fit with
graph construction, restarts and k-means assignment, evaluate; the stage times are reported
too; the process's kNN graph cache is emptied before each run, so that every run builds its
graph as ``textcluster run`` in a new process does; the parsed corpus comes from the on-disk
cache, as for a second ``textcluster run``), against ``KMeans(n_clusters=k, n_init=10)`` on the same tf-idf matrix: reported both for
the KMeans fit alone and for load + represent + KMeans fit (the like-for-like pipeline).

Data: full TDT2 (Deng Cai's top-30 file, 9394 documents), ``k = 30`` by default.

Repeats are interleaved: every repeat runs both contenders once, in a new order every
repeat. Reported: medians, min and max, the ratios of the medians and the NMI of
each run.

Output: a plain-text table on stdout; ``--json PATH`` also writes all samples, the stage
times, ratios and machine information.
"""

import numpy as np
import _common as common
from sklearn.cluster import KMeans
from sklearn.metrics import normalized_mutual_info_score

import textcluster
from textcluster.graph import clear_graph_cache

CORPUS = "tdt2"


def run_gnmf(args, data_dir):
    clear_graph_cache()  # as in a new process: the run builds its kNN graph
    seconds, result = common.timed(textcluster.run, CORPUS, "gnmf", k=args.k, seed=args.seed,
                            data_dir=data_dir)
    return {"wall": seconds, "stages": dict(result.timings), "nmi": result.metrics.get("nmi")}


def run_kmeans(args, data_dir):
    load_seconds, (X, corpus) = common.timed(common.load_tfidf, CORPUS, data_dir)
    kmeans = KMeans(n_clusters=args.k, n_init=10, random_state=args.seed)
    fit_seconds, labels = common.timed(kmeans.fit_predict, X)
    nmi = (None if corpus.labels is None
           else float(normalized_mutual_info_score(corpus.labels, labels)))
    return {"fit": fit_seconds, "total": load_seconds + fit_seconds, "nmi": nmi}


def end_to_end_benchmark(args, data_dir, log):
    def progress(r, runs):
        gnmf, kmeans = runs["gnmf"][-1], runs["kmeans"][-1]
        log(f"repeat {r + 1}/{args.repeats}: gnmf {gnmf['wall']:.1f} s, "
            f"kmeans fit {kmeans['fit']:.1f} s (with load {kmeans['total']:.1f} s)")

    runs = common.interleaved({"gnmf": lambda: run_gnmf(args, data_dir),
                        "kmeans": lambda: run_kmeans(args, data_dir)}, args.repeats, progress)
    gnmf, kmeans = runs["gnmf"], runs["kmeans"]
    stages = {name: common.summarize([run["stages"][name] for run in gnmf])
              for name in gnmf[0]["stages"]}
    g = common.summarize([run["wall"] for run in gnmf])
    kf = common.summarize([run["fit"] for run in kmeans])
    kt = common.summarize([run["total"] for run in kmeans])
    return {
        "mode": "end-to-end",
        "repeats": args.repeats,
        "gnmf_pipeline_run_seconds": g,
        "gnmf_stage_seconds": stages,
        "kmeans_fit_seconds": kf,
        "kmeans_load_represent_fit_seconds": kt,
        "ratio_gnmf_over_kmeans_fit": g["median"] / kf["median"],
        "ratio_gnmf_over_kmeans_with_load": g["median"] / kt["median"],
        "nmi": {"gnmf": [run["nmi"] for run in gnmf],
                "kmeans": [run["nmi"] for run in kmeans if run["nmi"] is not None]},
        "method": "textcluster.run('tdt2','gnmf') wall time vs KMeans(n_clusters=k, n_init=10); "
                  "interleaved, new order every repeat",
    }


def print_end_to_end(result):
    print()
    print(f"End to end on TDT2 (s), {result['repeats']} repeats")
    print(f"{'contender':<34}{'median':>9}{'min':>9}{'max':>9}")
    for label, key in (("gnmf textcluster.run (all stages)", "gnmf_pipeline_run_seconds"),
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


def measure(args, record, log):
    record.update(end_to_end_benchmark(args, common.resolve_data_dir(args.data_dir), log))
    print_end_to_end(record)


def main(argv=None):
    args = common.model_parser(__doc__, repeats=3).parse_args(argv)
    common.run_model_benchmark("bench_end_to_end", CORPUS, args, measure)


if __name__ == "__main__":
    main()

"""The kernel product of concept factorization and convex NMF, ``K B`` with ``K = X Xᵀ``: through
the sparse documents (``X (Xᵀ B)``, the package's threaded sparse products) against the dense
n × n kernel (``gram_matrix``, then BLAS in row blocks over the threads), in one process, and
the form ``document_kernel`` chooses for each corpus (dense only where n² ≤ 40 · nnz).

Data: each corpus' tf-idf rows as ``textcluster run`` makes them (TDT2, Reuters and panel
corpora), ``B`` a random float32 n × k matrix with k the number of classes. Repeats
interleaved; medians; ratio = through X / dense. The dense kernel's one-off cost (computing
``X Xᵀ``) and size are reported beside. ``--fit CORPUS`` also times whole default LCCF fits
(λ chosen without labels; seed 0) on that corpus with each form imposed, alternated, and
checks that they give the same clusters.

    python benchmarks/bench_kernel_products.py --fit agnews \
        --json benchmarks/results/kernel_products.json
"""

import statistics
from unittest import mock

import numpy as np

import _common as common

from textcluster.metrics import nmi
from textcluster.models import LCCF, _kernel
from textcluster.models._gram import DataGram
from textcluster.models._kernel import DenseKernel, document_kernel
from textcluster.models._linalg import gram_matrix

FORMS = {"dense": lambda X: DenseKernel(gram_matrix(X)), "through_x": DataGram}

CORPORA = "tdt2,reuters,agnews,stackoverflow,cluto:la1,cluto:tr11"


def bench(name, X, k, repeats, seed):
    B = np.random.default_rng(seed).random((X.shape[0], k), dtype=np.float32)
    build_seconds, K = common.timed(gram_matrix, X)
    dense, factored = DenseKernel(K), DataGram(X)
    difference = np.abs(dense.dot(B) - factored.dot(B)).max() / np.abs(dense.dot(B)).max()
    times = common.interleaved({"dense": lambda: common.timed(dense.dot, B)[0],
                                "through_x": lambda: common.timed(factored.dot, B)[0]},
                               repeats + 1)
    medians = {key: statistics.median(values[1:]) for key, values in times.items()}
    chosen = document_kernel(X)
    return {"corpus": name, "n": X.shape[0], "nnz": int(X.nnz), "k": k, **medians,
            "ratio": medians["through_x"] / medians["dense"],
            "chosen": "dense" if isinstance(chosen, DenseKernel) else "through_x",
            "dense_build_seconds": build_seconds, "dense_bytes": int(K.nbytes),
            "max_relative_difference": float(difference)}


def bench_fit(name, X, labels, repeats):
    """Default LCCF fits with each form of the kernel imposed: seconds and NMI per form."""
    k = len(np.unique(labels))
    samples = {form: [] for form in FORMS}

    def fit(form):
        with mock.patch.object(_kernel, "document_kernel", FORMS[form]):
            seconds, model = common.timed(LCCF(k, random_state=0).fit, X)
        samples[form].append((seconds, nmi(labels, model.labels_)))
        return model.labels_

    found = common.interleaved({form: lambda form=form: fit(form) for form in FORMS}, repeats)
    same = all(np.array_equal(a, b) for a, b in zip(found["dense"], found["through_x"]))
    medians = {form: statistics.median(s for s, _ in samples[form]) for form in FORMS}
    return {"corpus": name, "k": k, "fit_seconds": medians,
            "ratio": medians["through_x"] / medians["dense"],
            "nmi": {form: samples[form][0][1] for form in FORMS}, "same_clusters": same}


def main():
    parser = common.benchmark_parser(__doc__, repeats=7)
    parser.add_argument("--corpora", default=CORPORA)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--fit", default=None, help="corpus for whole LCCF fits (none: skip)")
    parser.add_argument("--fit-repeats", type=int, default=2)
    args = parser.parse_args()
    log = common.logger()
    machine = common.machine_info()
    data_dir = common.resolve_data_dir(args.data_dir)
    record = {"benchmark": "kernel_products", "machine": machine, "rows": []}
    for name in args.corpora.split(","):
        X, corpus = common.load_tfidf(name, data_dir)
        k = len(np.unique(corpus.labels))
        log(f"{name}: {X.shape[0]} documents, k = {k}")
        row = bench(name, X.astype(np.float32), k, args.repeats, args.seed)
        record["rows"].append(row)
        print(f"{name:>14} ({row['n']:,} documents, {row['nnz']:,} non-zeros, k = {k}): "
              f"dense {row['dense'] * 1e3:.1f} ms, through X {row['through_x'] * 1e3:.1f} ms "
              f"({row['ratio']:.2f}×); chosen: {row['chosen']}; dense kernel "
              f"{row['dense_bytes'] / 2**20:,.0f} MiB, built in {row['dense_build_seconds']:.2f} s",
              flush=True)
    if args.fit:
        X, corpus = common.load_tfidf(args.fit, data_dir)
        log(f"{args.fit}: default LCCF fits, each form of the kernel")
        row = bench_fit(args.fit, X, corpus.labels, args.fit_repeats)
        record["fit"] = row
        print(f"LCCF on {args.fit} (k = {row['k']}): dense {row['fit_seconds']['dense']:.1f} s, "
              f"through X {row['fit_seconds']['through_x']:.1f} s ({row['ratio']:.2f}×); NMI "
              f"{row['nmi']['dense']:.4f} and {row['nmi']['through_x']:.4f}; same clusters: "
              f"{row['same_clusters']}", flush=True)
    common.finish(record, machine, args.json, log)


if __name__ == "__main__":
    main()

"""One GNMF iteration with the documents in their kNN graph's locality order (reverse
Cuthill–McKee, what a graph model fits in from ``LOCALITY_MIN_DOCS`` documents) against the same
iteration in the documents' given order, at growing sizes, in one process.

The documents are those of ``bench_scale.py`` (real texts of the panel and Reuters-21578,
copies with words dropped beyond 97,947). At each size: the tf-idf rows, the default kNN graph
(5 neighbours, binary weights; NN-descent from 80,000 documents) and k = 20 random factors; then,
interleaved, one multiplicative GNMF iteration as ``GNMF._update`` runs it
(``multiplicative_step``: ``Xᵀ V`` and ``X U`` with their updates in two threads; then ``W V``
and the graph term in one pass over the edges, kept for the next iteration) and each of its
three sparse products alone, in both orders. Medians; ratio = time in locality order / time in the given
order.

    python benchmarks/bench_locality.py --sizes 30000,100000,300000 --json locality.json
"""

import statistics
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
from threadpoolctl import threadpool_limits

import _common as common
from bench_knn_graph import pool_texts
from bench_scale import write_corpus

from textcluster import graph as graphs
from textcluster.corpora import Corpus
from textcluster.models._linalg import SparseOperator, graph_products, locality_order
from textcluster.models.nmf import multiplicative_step
from textcluster.pipeline import represent

K = 20


def documents(texts, sources, n, seed, work_dir):
    path = Path(work_dir) / f"corpus_{n}.csv"
    write_corpus(texts, sources, n, seed, path)
    table = pd.read_csv(path, dtype=str, keep_default_na=False)
    corpus = Corpus(name=f"scale-{n}", ids=table["id"].to_numpy(),
                    labels=table["label"].to_numpy(), texts=list(table["text"]))
    return represent(corpus).X


def contenders(X, W, seed):
    """Timed callables of one iteration and of each product, on ``X`` and ``W`` as given."""
    rng = np.random.default_rng(seed)
    op = SparseOperator(X)
    degree = np.asarray(W.sum(axis=1)).ravel()
    U = rng.random((X.shape[1], K)).astype(X.dtype)
    V = rng.random((X.shape[0], K)).astype(X.dtype)

    products = {"VtV": V.T @ V, "WV": graph_products(W, V, degree)[1]}

    def iteration():  # as GNMF._update: VᵀV and W V of the new V serve the next iteration
        multiplicative_step(op, U, V, 1.0, W, degree, products["VtV"], products["WV"])
        graph_products(W, V, degree, out=products["WV"])
        products["VtV"] = V.T @ V

    return {"iteration": iteration, "W V": lambda: graph_products(W, V, degree),
            "Xᵀ V": lambda: op.tdot(V), "X U": lambda: op.dot(U)}


def bench(X, W, order, repeats, seed):
    given = contenders(X, W, seed)
    local = contenders(X[order], W[order][:, order], seed)
    row = {}
    for name in given:
        times = common.interleaved({"given": lambda: common.timed(given[name])[0],
                                    "locality": lambda: common.timed(local[name])[0]},
                                   repeats + 1)
        medians = {key: statistics.median(values[1:]) for key, values in times.items()}
        row[name] = {**medians, "ratio": medians["locality"] / medians["given"]}
    return row


def main():
    parser = common.benchmark_parser(__doc__, repeats=5)
    parser.add_argument("--sizes", default="30000,100000,300000")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    log = common.logger()
    machine = common.machine_info()
    _, texts, sources = pool_texts(str(common.resolve_data_dir(args.data_dir)))
    record = {"benchmark": "locality", "k": K, "machine": machine, "sizes": []}
    with tempfile.TemporaryDirectory() as work_dir, threadpool_limits(1, user_api="blas"):
        for n in map(int, args.sizes.split(",")):
            X = documents(texts, sources, n, args.seed, work_dir)
            log(f"{n} documents: {X.nnz} non-zeros; building the kNN graph")
            W = graphs.knn_graph(X, 5)
            order_seconds, order = common.timed(locality_order, W, min_docs=0)
            row = {"n": X.shape[0], "nnz": int(X.nnz), "graph_nnz": int(W.nnz),
                   "order_seconds": order_seconds, **bench(X, W, order, args.repeats, args.seed)}
            record["sizes"].append(row)
            print(f"{row['n']:>9,} documents: " + ", ".join(
                f"{name} {row[name]['given'] * 1e3:.1f} → {row[name]['locality'] * 1e3:.1f} ms "
                f"({row[name]['ratio']:.2f}×)" for name in ("iteration", "W V", "Xᵀ V", "X U"))
                + f"; order {row['order_seconds']:.2f} s", flush=True)
    common.finish(record, machine, args.json, log)


if __name__ == "__main__":
    main()

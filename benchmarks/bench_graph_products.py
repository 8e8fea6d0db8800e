"""The graph term of the graph models — ``W V`` and ``tr(Vᵀ(D − W)V)`` — as textcluster
computes it (``graph_products``: one compiled pass over the graph's edges, row blocks on every
core, sums in float64, ``W V`` stored in ``V``'s dtype) against the same values from SciPy and
NumPy (``W₆₄ @ V₆₄``, SciPy's one-thread sparse product, then the trace with ``einsum`` and
``W V`` cast back to ``V``'s dtype), in one process.

Data: full TDT2 and the documents of ``bench_scale.py`` at growing sizes, each with its default
kNN graph (5 neighbours, binary; NN-descent from 80,000 documents), in its locality order
from 50,000 documents (as GNMF fits it), and k = 20 random float32 factors. Repeats
interleaved; medians; ratio = textcluster / SciPy. The bytes each pass must read at least (the
graph's indices and weights, each gathered row of ``V``, ``V`` and ``W V`` once) over the
time gives the bandwidth it reaches.

    python benchmarks/bench_graph_products.py --sizes 100000,300000 --json graph_products.json
"""

import statistics
import tempfile

import numpy as np
from threadpoolctl import threadpool_limits

import _common as common
from bench_knn_graph import pool_texts
from bench_locality import documents

from textcluster import graph as graphs
from textcluster.models._linalg import graph_products, locality_order

K = 20


def scipy_products(W64, V, degree):
    """The same values with SciPy and NumPy (float64 copies of ``V`` and ``W V``)."""
    V64 = V.astype(np.float64)
    WV = W64 @ V64
    return float(np.einsum("ij,ij->", V64, degree[:, None] * V64 - WV)), WV.astype(V.dtype)


def bench(name, W, repeats, seed):
    order = locality_order(W)
    if order is not None:
        W = W[order][:, order].tocsr()
    degree = np.asarray(W.sum(axis=1)).ravel()
    V = np.random.default_rng(seed).random((W.shape[0], K), dtype=np.float32)
    W64, out = W.astype(np.float64), np.empty_like(V)
    ours, theirs = graph_products(W, V, degree, out), scipy_products(W64, V, degree)
    assert np.array_equal(ours[1], theirs[1]), "W V differs from SciPy's float64 product"
    times = common.interleaved({"textcluster": lambda: common.timed(graph_products, W, V,
                                                                    degree, out)[0],
                                "scipy": lambda: common.timed(scipy_products, W64, V,
                                                              degree)[0]}, repeats + 1)
    medians = {key: statistics.median(values[1:]) for key, values in times.items()}
    least_bytes = W.nnz * (4 + W.data.itemsize + K * 4) + 2 * V.nbytes
    return {"corpus": name, "n": W.shape[0], "graph_nnz": int(W.nnz), **medians,
            "ratio": medians["textcluster"] / medians["scipy"],
            "trace_relative_difference": abs(ours[0] - theirs[0]) / abs(theirs[0]),
            "least_bytes": least_bytes,
            "bandwidth_gb_s": least_bytes / medians["textcluster"] / 1e9}


def main():
    parser = common.benchmark_parser(__doc__, repeats=7)
    parser.add_argument("--sizes", default="100000,300000")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    log = common.logger()
    machine = common.machine_info()
    data_dir = common.resolve_data_dir(args.data_dir)
    record = {"benchmark": "graph_products", "k": K, "machine": machine, "rows": []}
    _, texts, sources = pool_texts(str(data_dir))
    with tempfile.TemporaryDirectory() as work_dir, threadpool_limits(1, user_api="blas"):
        inputs = [("tdt2", lambda: common.load_tfidf("tdt2", data_dir)[0])] + [
            (f"scale-{n}", lambda n=n: documents(texts, sources, n, args.seed, work_dir))
            for n in map(int, args.sizes.split(","))]
        for name, load in inputs:
            X = load()
            log(f"{name}: {X.shape[0]} documents; building the kNN graph")
            row = bench(name, graphs.knn_graph(X, 5), args.repeats, args.seed)
            record["rows"].append(row)
            print(f"{name:>12} ({row['n']:,} documents, {row['graph_nnz']:,} edges): "
                  f"textcluster {row['textcluster'] * 1e3:.2f} ms, SciPy + NumPy "
                  f"{row['scipy'] * 1e3:.2f} ms ({row['ratio']:.2f}×); "
                  f"{row['bandwidth_gb_s']:.1f} GB/s of the least bytes", flush=True)
    common.finish(record, machine, args.json, log)


if __name__ == "__main__":
    main()

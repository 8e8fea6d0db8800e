"""How far one GNMF iteration is from the machine's floor: memory bandwidth and the rate of
the iteration's own products, measured on full TDT2 (9,394 × 36,093 tf-idf, k = 30).

Measured in one process: the copy bandwidth (``np.copyto`` of 512 MB), the two sparse × dense
products of an iteration (``X U`` and ``Xᵀ V``, one thread: SciPy's, textcluster's compiled
one, and MKL's where the ``fast`` extra is installed) with their bytes and FLOPs, and the
``m × k × k`` / ``n × k × k`` dense products (one BLAS thread). From these, two floors for one
iteration: moving the data once at the copy bandwidth, and the products at their measured
one-thread rates (the fastest library's) split over the cores. Compare with
``bench_gnmf_iteration.py``.

    python benchmarks/bench_floor.py --json benchmarks/results/floor.json
"""

import os

import numpy as np
import _common as common
from threadpoolctl import threadpool_limits

from textcluster._compat import mkl_sparse_product
from textcluster.models._linalg import SparseOperator

K = 30


def median_seconds(fn, repeats):
    return float(np.median([common.timed(fn)[0] for _ in range(repeats)]))


def main():
    args = common.benchmark_parser(__doc__, repeats=7).parse_args()
    log = common.logger()
    machine = common.machine_info()
    source = np.ones(2**26)
    target = np.empty_like(source)
    copy = median_seconds(lambda: np.copyto(target, source), args.repeats)
    bandwidth = 2 * source.nbytes / copy
    X, _ = common.load_tfidf("tdt2", common.resolve_data_dir(args.data_dir))
    X = X.tocsr()
    XT = X.T.tocsr()
    rng = np.random.default_rng(0)
    U = rng.random((X.shape[1], K)).astype(X.dtype)
    V = rng.random((X.shape[0], K)).astype(X.dtype)
    with threadpool_limits(1):
        sparse = {"X U": median_seconds(lambda: X @ U, args.repeats),
                  "Xt V": median_seconds(lambda: XT @ V, args.repeats)}
        compiled = SparseOperator(X, threads=1)  # the models' products, on one thread
        sparse_compiled = {"X U": median_seconds(lambda: compiled.dot(U), args.repeats),
                           "Xt V": median_seconds(lambda: compiled.tdot(V), args.repeats)}
        mkl = mkl_sparse_product()
        sparse_mkl = {} if mkl is None else {
            "X U": median_seconds(lambda: mkl(X, U), args.repeats),
            "Xt V": median_seconds(lambda: mkl(XT, V), args.repeats)}
        dense = {"Ut U": median_seconds(lambda: U.T @ U, args.repeats),
                 "U (Vt V)": median_seconds(lambda: U @ (V.T @ V), args.repeats),
                 "V (Ut U)": median_seconds(lambda: V @ (U.T @ U), args.repeats)}
    csr_bytes = X.data.nbytes + X.indices.nbytes + X.indptr.nbytes
    moved = 2 * (csr_bytes + U.nbytes + V.nbytes)  # each sparse product reads X and both factors
    cores = len(os.sched_getaffinity(0))
    floors = {"bandwidth_seconds": moved / bandwidth,
              "products_seconds": (sum(min(seconds, sparse_compiled[name],
                                           sparse_mkl.get(name, seconds))
                                       for name, seconds in sparse.items())
                                   + sum(dense.values())) / cores}
    print(f"copy bandwidth: {bandwidth / 1e9:.1f} GB/s")
    print(f"X: {X.shape[0]} x {X.shape[1]}, {X.nnz} non-zeros, {X.dtype}; CSR {csr_bytes / 1e6:.1f} MB,"
          f" U {U.nbytes / 1e6:.1f} MB, V {V.nbytes / 1e6:.1f} MB")
    for library, products in (("SciPy", sparse), ("textcluster", sparse_compiled),
                              ("MKL", sparse_mkl)):
        for name, seconds in products.items():
            print(f"{name:>9}: {seconds * 1e3:6.1f} ms, {2 * X.nnz * K / seconds / 1e9:.1f} "
                  f"GFLOP/s ({library}, one thread)")
    for name, seconds in dense.items():
        print(f"{name:>9}: {seconds * 1e3:6.1f} ms (one BLAS thread)")
    print(f"floor of one iteration: {floors['bandwidth_seconds'] * 1e3:.1f} ms moving the data once"
          f" at the copy bandwidth; {floors['products_seconds'] * 1e3:.1f} ms for its products at"
          f" their one-thread rates over {cores} cores")
    record = {"benchmark": "bench_floor", "corpus": "tdt2", "k": K, "machine": machine,
              "copy_bandwidth_bytes_per_second": bandwidth, "sparse_seconds": sparse,
              "sparse_seconds_compiled": sparse_compiled, "sparse_seconds_mkl": sparse_mkl,
              "dense_seconds": dense, "bytes_moved_per_iteration": moved, "floors": floors}
    common.finish(record, machine, args.json, log)


if __name__ == "__main__":
    main()

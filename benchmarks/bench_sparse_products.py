"""The two sparse × dense products of an NMF iteration on one thread: textcluster's compiled
product against MKL's sparse BLAS (``sparse_dot_mkl``, the ``fast`` extra) and SciPy's.

Data: full TDT2 (the 9,394 × 36,093 tf-idf matrix of ``represent``, 1.22 M non-zeros), random
dense factors with ``--k`` columns; ``X U`` (CSR X) and ``Xᵀ V`` (CSR Xᵀ), float32 and float64.
Each repeat times every contender once, in a new order (``_common.interleaved``); one thread
each (``SparseOperator(X, threads=1)``, the models' operator, one block). The results are
checked equal bit for bit to SciPy's.

    python benchmarks/bench_sparse_products.py --repeats 31 --json benchmarks/results/sparse_products.json
"""

import numpy as np
import _common as common
from threadpoolctl import threadpool_limits

from textcluster._compat import mkl_sparse_product
from textcluster.models._linalg import SparseOperator


def main():
    parser = common.benchmark_parser(__doc__, repeats=31)
    parser.add_argument("--k", type=common.positive_int, default=30)
    args = parser.parse_args()
    log = common.logger()
    machine = common.machine_info()
    X, _ = common.load_tfidf("tdt2", common.resolve_data_dir(args.data_dir))
    mkl = mkl_sparse_product()
    rng = np.random.default_rng(0)
    record = {"benchmark": "bench_sparse_products", "corpus": "tdt2", "k": args.k,
              "nnz": int(X.nnz), "machine": machine, "results_seconds": {}}
    print(f"TDT2 {X.shape[0]} × {X.shape[1]}, {X.nnz} non-zeros, k = {args.k}; one thread; "
          f"median ms over {args.repeats} interleaved repeats")
    print(f"{'product':<18}{'textcluster':>12}{'MKL':>8}{'SciPy':>8}{'÷ MKL':>8}{'÷ SciPy':>9}"
          f"{'ns / nnz':>10}")
    with threadpool_limits(1):
        for dtype in (np.float32, np.float64):
            A = X.astype(dtype).tocsr()
            operator = SparseOperator(A, threads=1)  # the models' products, on one thread
            for name, M, compiled in (("X U", A, operator.dot),
                                      ("Xt V", A.T.tocsr(), operator.tdot)):
                B = rng.random((M.shape[1], args.k)).astype(dtype)
                if not np.array_equal(compiled(B), M @ B):
                    raise SystemExit(f"{name} {dtype.__name__}: not SciPy's product bit for bit")
                contenders = {"textcluster": lambda: compiled(B), "scipy": lambda: M @ B}
                if mkl is not None:
                    contenders["mkl"] = lambda: mkl(M, B)
                samples = common.interleaved(
                    {key: (lambda f=f: common.timed(f)[0]) for key, f in contenders.items()},
                    args.repeats)
                summary = {key: common.summarize(value) for key, value in samples.items()}
                median = {key: value["median"] for key, value in summary.items()}
                label = f"{name} {np.dtype(dtype).name}"
                record["results_seconds"][label] = summary
                over_mkl = median["textcluster"] / median["mkl"] if "mkl" in median else None
                over_scipy = median["textcluster"] / median["scipy"]
                summary["ratio_of_medians_vs_mkl"] = over_mkl
                summary["ratio_of_medians_vs_scipy"] = over_scipy
                mkl_ms = f"{median['mkl'] * 1e3:8.2f}" if "mkl" in median else f"{'-':>8}"
                mkl_ratio = f"{over_mkl:8.2f}" if over_mkl is not None else f"{'-':>8}"
                print(f"{label:<18}{median['textcluster'] * 1e3:12.2f}{mkl_ms}"
                      f"{median['scipy'] * 1e3:8.2f}{mkl_ratio}{over_scipy:9.2f}"
                      f"{median['textcluster'] / M.nnz * 1e9:10.2f}")
                log(f"{label} done")
    common.finish(record, machine, args.json, log)


if __name__ == "__main__":
    main()

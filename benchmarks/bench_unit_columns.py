"""The unit-basis step of GNMF (every basis column in turn set to its best non-negative unit
column given the others) as textcluster computes it (``unit_columns``: ``U VᵀV`` formed once,
the columns' changes passed on in blocks, each column one compiled pass) against the same
sweep in NumPy column by column (one matrix-vector product with all of ``U`` per column, on
column-major copies: the step as GNMF computed it before), in one process.

Data: full TDT2 (the 9394 × 36093 tf-idf matrix of ``represent``, float32) and its factors
after 20 iterations of scikit-learn's coordinate-descent NMF from NNDSVDa (basis columns scaled
to unit length, the document factor scaled back), k = 30 by default. (Not its MU solver: 20
MU iterations leave 3 % of the basis subnormal, on which both sweeps take 27 ms.) Both run
with one BLAS thread, as inside a fit (``loop_threads``), and both return the new ``UᵀU``
(which the update needs next). Repeats interleaved; medians;
ratio = textcluster / NumPy.
The least work of a sweep: k passes of k multiply-adds over the m × k basis (m k² FMAs); the
NumPy sweep reads all of ``U`` once per column (k · m · k · 4 bytes), the compiled one about
``block`` + 4 columns per column.

    python benchmarks/bench_unit_columns.py --json benchmarks/results/unit_columns.json
"""

import statistics

import numpy as np
from sklearn.decomposition import NMF

import _common as common

from textcluster.models._base import loop_threads
from textcluster.models._linalg import UNIT_COLUMN_BLOCK, column_major, unit_columns


def numpy_columns(U, XtV, VtV):
    """The sweep column by column in NumPy (the reference), returning ``UᵀU`` as
    ``unit_columns`` does."""
    columns, residuals = column_major(U), column_major(XtV)
    for c in range(columns.shape[1]):
        r = residuals[:, c]
        r -= columns @ VtV[:, c]
        r += VtV[c, c] * columns[:, c]
        np.maximum(r, 0, out=r)
        norm = np.linalg.norm(r)
        if norm > 0:
            columns[:, c] = r / norm
    U[...] = columns
    return U.T @ U


def factors(X, k, seed):
    """TDT2's factors after 20 NMF iterations: basis ``U`` (m × k, unit columns), ``V``."""
    model = NMF(k, init="nndsvda", solver="cd", max_iter=20, random_state=seed)
    V = model.fit_transform(X).astype(X.dtype)
    U = model.components_.T.astype(X.dtype)
    norms = np.linalg.norm(U, axis=0)
    return U / norms, V * norms


def sweep_value(U, XtV, VtV):
    """``−2 tr(Uᵀ XᵀV) + tr(UᵀU VᵀV)``: the objective up to ``‖X‖²``, in float64."""
    U64 = U.astype(np.float64)
    return float(-2.0 * np.vdot(U64, XtV) + np.vdot(U64.T @ U64, VtV.astype(np.float64)))


def main():
    parser = common.model_parser(__doc__, repeats=21)
    args = parser.parse_args()
    log = common.logger()
    machine = common.machine_info()
    record = {"benchmark": "unit_columns", "corpus": "tdt2", "k": args.k,
              "block": UNIT_COLUMN_BLOCK, "machine": machine}
    X = common.load_matrix("tdt2", args, record, log)
    U0, V = factors(X, args.k, args.seed)
    XtV, VtV = np.asarray(X.T @ V), V.T @ V
    results = {}
    with loop_threads():
        for name, sweep in (("textcluster", unit_columns), ("numpy", numpy_columns)):
            U = U0.copy()
            sweep(U, XtV, VtV)  # compiles the kernel on its first call
            results[name] = U

        def run(sweep):
            U = U0.copy()
            return common.timed(sweep, U, XtV, VtV)[0]

        times = common.interleaved({"textcluster": lambda: run(unit_columns),
                                    "numpy": lambda: run(numpy_columns)}, args.repeats)
    medians = {name: statistics.median(values) for name, values in times.items()}
    m, k = U0.shape
    values = {name: sweep_value(U, XtV, VtV) for name, U in results.items()}
    record["result"] = {
        **{f"{name}_ms": seconds * 1e3 for name, seconds in medians.items()},
        "ratio": medians["textcluster"] / medians["numpy"],
        "max_abs_difference": float(np.abs(results["textcluster"] - results["numpy"]).max()),
        "objective_before": sweep_value(U0, XtV, VtV), "objective_after": values,
        "gflop_s": m * k * k * 2 / medians["textcluster"] / 1e9,
    }
    r = record["result"]
    print(f"unit-basis sweep, TDT2 {m} × {k}: textcluster {r['textcluster_ms']:.2f} ms, NumPy "
          f"{r['numpy_ms']:.2f} ms ({r['ratio']:.2f}×); largest difference "
          f"{r['max_abs_difference']:.1e}; objective {r['objective_before']:.6f} → "
          f"{values['textcluster']:.6f} (NumPy {values['numpy']:.6f}); "
          f"{r['gflop_s']:.1f} GFLOP/s")
    common.finish(record, machine, args.json, log)


if __name__ == "__main__":
    main()

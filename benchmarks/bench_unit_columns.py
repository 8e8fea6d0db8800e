"""The unit-basis step of GNMF as textcluster computes it (``unit_columns``: the basis columns
in ``UNIT_BLOCKS`` blocks, each block's columns set together to ``[g]₊`` scaled to unit length
given the others; one pass over the rows per block, in chunks over the threads, a BLAS product
and a compiled pass each) against the same step in NumPy (the named peer: block by block, whole
columns), and beside them the same code with all columns in one block and the exact sweep
GNMF took before (every column in turn the best unit column given the others, NumPy column by
column on column-major copies): their times and the objective each step reaches.

Data: full TDT2 (the 9394 × 36093 tf-idf matrix of ``represent``, float32) and its factors
after 20 iterations of scikit-learn's coordinate-descent NMF from NNDSVDa (basis columns scaled
to unit length, the document factor scaled back), k = 30 by default. All run with one BLAS
thread, as inside a fit (``loop_threads``), and all return the new ``UᵀU`` (which the update
needs next). Repeats interleaved; medians; ratio = textcluster / NumPy (the same step).
The least work of the step: one m × k by k × k product and ``UᵀU`` (1.5 m k² multiply-adds)
and a few passes over the m × k basis (4 m k bytes each).

    python benchmarks/bench_unit_columns.py --json benchmarks/results/unit_columns.json
"""

import statistics

import numpy as np
from sklearn.decomposition import NMF

import _common as common

from textcluster.models._base import loop_threads
from textcluster.models._linalg import UNIT_BLOCKS, column_major, unit_columns


def numpy_step(U, XtV, VtV, blocks=UNIT_BLOCKS):
    """The step in NumPy (the peer), returning ``UᵀU`` as ``unit_columns`` does."""
    block = -(-U.shape[1] // blocks)
    for start in range(0, U.shape[1], block):
        b = slice(start, start + block)
        g = XtV[:, b] - U @ VtV[:, b] + U[:, b] * VtV[b, b].sum(axis=0)
        np.maximum(g, 0, out=g)
        norms = np.linalg.norm(g, axis=0)
        kept = norms > 0
        U[:, b][:, kept] = g[:, kept] / norms[kept]
    return U.T @ U


def one_block(U, XtV, VtV):
    """``unit_columns`` with all columns in one block (the step's bound at its loosest)."""
    return unit_columns(U, XtV, VtV, blocks=1)


def exact_sweep(U, XtV, VtV):
    """The sweep column by column in NumPy (each column the best unit column given the
    others: the step GNMF took before), returning ``UᵀU``."""
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
    record = {"benchmark": "unit_columns", "corpus": "tdt2", "k": args.k, "machine": machine}
    X = common.load_matrix("tdt2", args, record, log)
    U0, V = factors(X, args.k, args.seed)
    XtV, VtV = np.asarray(X.T @ V), V.T @ V
    steps = {"textcluster": unit_columns, "numpy": numpy_step, "one_block": one_block,
             "exact_sweep": exact_sweep}
    results = {}

    def run(step):  # unit_columns overwrites its XᵀV: every step gets fresh copies
        U, G = U0.copy(), XtV.copy()
        return common.timed(step, U, G, VtV)[0], U

    with loop_threads():
        for name, step in steps.items():
            results[name] = run(step)[1]  # the first call compiles the kernel
        times = common.interleaved({name: (lambda step=step: run(step)[0])
                                    for name, step in steps.items()}, args.repeats)
    medians = {name: statistics.median(values) for name, values in times.items()}
    m, k = U0.shape
    values = {name: sweep_value(U, XtV, VtV) for name, U in results.items()}
    record["result"] = {
        **{f"{name}_ms": seconds * 1e3 for name, seconds in medians.items()},
        "ratio": medians["textcluster"] / medians["numpy"],
        "ratio_to_exact_sweep": medians["textcluster"] / medians["exact_sweep"],
        "blocks": UNIT_BLOCKS,
        "max_abs_difference": float(np.abs(results["textcluster"] - results["numpy"]).max()),
        "objective_before": sweep_value(U0, XtV, VtV), "objective_after": values,
        "gflop_s": 1.5 * m * k * k * 2 / medians["textcluster"] / 1e9,
    }
    r = record["result"]
    print(f"unit-basis step, TDT2 {m} × {k}, {UNIT_BLOCKS} blocks: textcluster "
          f"{r['textcluster_ms']:.2f} ms, NumPy {r['numpy_ms']:.2f} ms ({r['ratio']:.2f}×), one "
          f"block {r['one_block_ms']:.2f} ms, exact sweep {r['exact_sweep_ms']:.2f} ms "
          f"({r['ratio_to_exact_sweep']:.2f}×); largest difference "
          f"{r['max_abs_difference']:.1e}; objective {r['objective_before']:.6f} → "
          f"{values['textcluster']:.6f} (NumPy {values['numpy']:.6f}, one block "
          f"{values['one_block']:.6f}, exact sweep {values['exact_sweep']:.6f}); "
          f"{r['gflop_s']:.1f} GFLOP/s")
    common.finish(record, machine, args.json, log)


if __name__ == "__main__":
    main()

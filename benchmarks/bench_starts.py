"""A fit's random starts side by side (two at a time, the default on two cores) against the
same starts one at a time, in one process run, with the same result checked.

Data: full TDT2 (the 9394 × 36093 tf-idf matrix of ``represent``, float32), k = 30. Rows: the
papers' protocol (ten random starts of 30 iterations, the best continued to 100; k-means with
20 starts on the document factor) for

| row | the fit |
|---|---|
| `gnmf-1`, `gnmf-2` | ``GNMF(k, lam=1e5)`` (the strength the default chooses on TDT2; its kNN graph built once, before the repeats), starts one / two at a time |
| `nmf-1`, `nmf-2` | ``NMF(k)``, starts one / two at a time |
| `kmeans` | ``KMeans(k, n_init=10)`` on the same rows (scikit-learn's threads), for scale |

Repeats interleaved, in a new order every repeat; medians; ratios two at a time / one at a time. Each
fit's labels and objective history must be the same both ways (checked every repeat).

    python benchmarks/bench_starts.py --json benchmarks/results/starts.json
"""

import numpy as np
from sklearn.cluster import KMeans

import _common as common

from textcluster.models import GNMF, NMF, _base


def fit(model_class, X, k, seed, lanes, fits, **params):
    """``model_class(k, **params)`` on ``X`` with ``lanes`` starts at a time; its labels and
    history are checked against the first fit of the same model."""
    saved = _base.STARTS_SIDE_BY_SIDE
    _base.STARTS_SIDE_BY_SIDE = lanes
    try:
        model = model_class(k, random_state=seed, **params).fit(X)
    finally:
        _base.STARTS_SIDE_BY_SIDE = saved
    first = fits.setdefault(model_class.__name__, model)
    if not (np.array_equal(first.labels_, model.labels_)
            and np.array_equal(first.objective_history_, model.objective_history_)):
        raise AssertionError(f"{model_class.__name__}: {lanes} at a time changed the fit")
    return model


def main():
    parser = common.model_parser(__doc__, repeats=5)
    args = parser.parse_args()
    log = common.logger(args.quiet)
    machine = common.machine_info()
    record = {"benchmark": "starts", "corpus": "tdt2", "k": args.k, "machine": machine,
              "starts_side_by_side": _base.STARTS_SIDE_BY_SIDE, "results_seconds": {}}
    X = common.load_matrix("tdt2", args, record, log)
    fits = {}
    gnmf = {"lam": 1e5}
    fit(GNMF, X, args.k, args.seed, 1, fits, **gnmf)  # builds and keeps the kNN graph
    contenders = {
        "gnmf-1": lambda: common.timed(fit, GNMF, X, args.k, args.seed, 1, fits, **gnmf)[0],
        "gnmf-2": lambda: common.timed(fit, GNMF, X, args.k, args.seed, 2, fits, **gnmf)[0],
        "nmf-1": lambda: common.timed(fit, NMF, X, args.k, args.seed, 1, fits)[0],
        "nmf-2": lambda: common.timed(fit, NMF, X, args.k, args.seed, 2, fits)[0],
        "kmeans": lambda: common.timed(
            KMeans(args.k, n_init=10, random_state=args.seed).fit, X)[0],
    }
    times = common.interleaved(contenders, args.repeats, lambda r, _: log(f"repeat {r + 1}"))
    summaries = {name: common.summarize(values) for name, values in times.items()}
    medians = {name: s["median"] for name, s in summaries.items()}
    ratios = {"gnmf two / one at a time": medians["gnmf-2"] / medians["gnmf-1"],
              "nmf two / one at a time": medians["nmf-2"] / medians["nmf-1"],
              "gnmf two at a time / kmeans": medians["gnmf-2"] / medians["kmeans"]}
    record["results_seconds"] = {"rows": summaries, "ratios": ratios}
    print(f"\n{'row':<10}{'median s':>10}{'IQR s':>9}")
    for name, s in summaries.items():
        print(f"{name:<10}{s['median']:10.3f}{s['iqr']:9.3f}")
    for name, ratio in ratios.items():
        print(f"{name}: {ratio:.2f}")
    common.finish(record, machine, args.json, log)


if __name__ == "__main__":
    main()

"""What choosing a graph model's strength without labels costs: ``textcluster run CORPUS
--model gnmf`` (λ = "auto", the default) against the same run with λ fixed at the value the
selection chose (``--set lam=…``, the papers' ten random starts), end to end in one process;
``--model`` another model that chooses its strength (lccf, anmf; agpnmf and kagpnmf: γ, whose
fixed fit is one random start; sodnmf: α), ``--fixed`` a strength for the fixed run other than the chosen
one (e.g. AGPNMF's previous default, γ = 100).

Both runs load the corpus and its term counts from the cache (the first, untimed run fills
it), build the kNN graph (the process's graph cache is emptied before each run), fit and score; the repeats are interleaved and the medians compared.

    python benchmarks/bench_lam_selection.py --data-dir ../shared/data --json lam.json
"""

import statistics
import warnings

import _common as common

import textcluster
from textcluster.graph import clear_graph_cache

CORPORA = ("tdt2", "cluto:la1", "agnews")


def timed_run(corpus, model, data_dir, settings):
    clear_graph_cache()  # as in a new process: every run builds its kNN graph
    return common.timed(textcluster.run, corpus, model, data_dir=data_dir, settings=settings)


def bench(corpus, model, data_dir, repeats, fixed_lam=None):
    _, first = timed_run(corpus, model, data_dir, {})  # fills the cache; gives the chosen λ
    lam = first.model.lam_
    fixed = {first.model.strength_parameter: lam if fixed_lam is None else fixed_lam}
    times = common.interleaved({"auto": lambda: timed_run(corpus, model, data_dir, {})[0],
                                "fixed": lambda: timed_run(corpus, model, data_dir, fixed)[0]},
                               repeats)
    medians = {name: statistics.median(values) for name, values in times.items()}
    return {"corpus": corpus, "model": model, "chosen_lam": lam, "fixed": fixed,
            "nmi_auto": first.metrics.get("nmi"),
            "seconds": times, "median_auto": medians["auto"], "median_fixed": medians["fixed"],
            "ratio": medians["auto"] / medians["fixed"]}


def main():
    parser = common.benchmark_parser(__doc__, repeats=3)
    parser.add_argument("--corpora", default=",".join(CORPORA))
    parser.add_argument("--model", default="gnmf")
    parser.add_argument("--fixed", type=float, default=None,
                        help="the strength of the fixed run (default: the one chosen)")
    args = parser.parse_args()
    data_dir = str(common.resolve_data_dir(args.data_dir))
    warnings.simplefilter("ignore")
    rows = []
    for corpus in args.corpora.split(","):
        row = bench(corpus, args.model, data_dir, args.repeats, args.fixed)
        rows.append(row)
        print(f"{corpus:12s} λ chosen {row['chosen_lam']:g}: auto {row['median_auto']:.1f} s, "
              f"fixed {row['fixed']} {row['median_fixed']:.1f} s, ratio {row['ratio']:.2f}", flush=True)
    if args.json:
        common.write_json(args.json, rows)


if __name__ == "__main__":
    main()

"""GNMF on the approximate kNN graph against GNMF on the exact one, on panel corpora.

For each corpus: the tf-idf rows as ``textcluster run`` makes them
(``textcluster.pipeline.represent``); the recall of the approximate kNN graph's directed
edges (``knn_graph(X, 5, method="approximate")``, pynndescent with the search seed every
model uses) against the exact graph's (``method="exact"``, what GNMF builds by default on a
corpus of this size), k = 5 per document; then default GNMF as ``textcluster run`` fits it,
building its own graph each way (``make_model("gnmf", n_components=k, random_state=seed,
graph_method=method).fit(X)``, k = the number of classes; so its choice of λ also scores the
candidates on the held-out edges, as the default does), for seeds 0, 1 and 2, and the NMI of
each clustering against the classes. Every corpus of the development panel. The acceptance
bar: NMI within 0.01 of the exact graph's, mean over the seeds (the panel's protocol); each
fit's difference is listed too.

    python reports/approximate_knn.py --data-dir ../shared/data

writes ``reports/approximate_knn/README.md`` and ``results.csv``. The README's first table,
time and recall on up to 100,000 documents, is read from ``benchmarks/results/knn_graph.json``
(``python benchmarks/bench_knn_graph.py --json benchmarks/results/knn_graph.json``).
"""

import argparse
import json
import platform
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

import textcluster
from textcluster.corpora import load_corpus
from textcluster.corpora.cards import find_card
from textcluster.corpora.loaders import CORPORA as LOADERS
from textcluster.graph import APPROXIMATE_FROM, _approximate, clear_graph_cache, knn_graph
from textcluster.metrics import nmi
from textcluster.models import make_model
from textcluster.pipeline import represent

# every corpus whose card places it in the development panel's folder
CORPORA = tuple(name for name in LOADERS.names()
                if (card := find_card(name)) is not None and card.folder.startswith("panel/"))
SEEDS = (0, 1, 2)
K_NEIGHBORS = 5
BAR = 0.01
OUT = Path(__file__).resolve().parent / "approximate_knn"
BENCHMARK = Path(__file__).resolve().parents[1] / "benchmarks" / "results" / "knn_graph.json"


def recall(X):
    """Shares of the exact graph's directed edges the approximate graph has: as sets, and
    counting an edge whose similarity reaches the exact k-th neighbour's (ties)."""
    exact, approximate = (knn_graph(X, K_NEIGHBORS, weighting="cosine", symmetrize="none",
                                    method=method)
                          for method in ("exact", "approximate"))
    reach = np.full(X.shape[0], np.inf)
    coo = exact.tocoo()
    np.minimum.at(reach, coo.row, coo.data)
    approx = approximate.tocoo()
    ties = float((approx.data >= reach[approx.row] - 1e-6).sum()) / exact.nnz
    return exact.multiply(approximate > 0).nnz / exact.nnz, ties


def measure(name, data_dir):
    corpus = load_corpus(name, data_dir=data_dir)
    rep = represent(corpus)
    X, labels = rep.X, rep.corpus.labels
    k = len(np.unique(labels))
    clear_graph_cache()
    set_recall, tie_recall = recall(X)
    rows = [{"corpus": name, "n_docs": X.shape[0], "k": k, "seed": seed,
             "recall": round(set_recall, 4), "recall_tie_aware": round(tie_recall, 4)}
            for seed in SEEDS]
    for method in ("exact", "approximate"):
        clear_graph_cache()
        started = time.perf_counter()  # the graph every seed's model then takes from the cache
        knn_graph(X, K_NEIGHBORS, method=method)
        seconds = round(time.perf_counter() - started, 2)
        for seed, row in zip(SEEDS, rows):
            model = make_model("gnmf", n_components=k, random_state=seed,
                               graph_method=method).fit(X)
            row[f"graph_s_{method}"] = seconds
            row[f"nmi_{method}"] = round(nmi(labels, model.labels_), 4)
            row[f"lam_{method}"] = model.lam_
            row[f"edges_{method}"] = model.graph_.nnz // 2
    for row in rows:
        row["difference"] = round(row["nmi_approximate"] - row["nmi_exact"], 4)
        row["within_bar"] = abs(row["difference"]) <= BAR
        print(row, flush=True)
    return rows


def per_corpus(frame):
    """Mean NMI over the seeds with each graph, their difference and the bar, per corpus."""
    means = frame.groupby("corpus", sort=False).agg(
        n_docs=("n_docs", "first"), k=("k", "first"), recall=("recall", "first"),
        nmi_exact=("nmi_exact", "mean"), nmi_approximate=("nmi_approximate", "mean"),
        fits_within=("within_bar", "sum"), fits=("within_bar", "size")).reset_index()
    means["difference"] = (means["nmi_approximate"] - means["nmi_exact"]).round(4)
    means["within_bar"] = means["difference"].abs() <= BAR
    return means.round({"nmi_exact": 4, "nmi_approximate": 4})


def timing_lines():
    """The benchmark's table (median seconds, ratio, recall per size), or a pointer to it."""
    if not BENCHMARK.exists():
        return ["(run `benchmarks/bench_knn_graph.py --json benchmarks/results/knn_graph.json` "
                "for the timings)"]
    record = json.loads(BENCHMARK.read_text(encoding="utf-8"))
    lines = ["| documents | exact (s) | approximate (s) | exact / approximate | recall | "
             "recall, ties counted |", "|---|---|---|---|---|---|"]
    for size in record["sizes"]:
        seconds = size["seconds"]
        lines.append(f"| {size['n']:,} | {seconds['exact']['median']:.1f} | "
                     f"{seconds['approximate']['median']:.1f} | "
                     f"{size['ratio_exact_over_approximate']:.2f} | {size['recall']:.3f} | "
                     f"{size['recall_tie_aware']:.3f} |")
    first = record.get("first_approximate_seconds_2000_rows")
    return lines + ["", f"Medians of {record['sizes'][0]['seconds']['exact']['n']} interleaved "
                    f"builds per method (k = {record['k']}, the directed graphs); the first "
                    f"approximate build in a process also compiles pynndescent's code "
                    f"({first:.1f} s for 2,000 rows here), not counted above."]


def markdown(frame, columns):
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for _, row in frame[columns].iterrows():
        lines.append("| " + " | ".join(str(row[c]) for c in columns) + " |")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default="../shared/data")
    parser.add_argument("--corpora", default=",".join(CORPORA))
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    knn_graph(np.eye(40)[:, :30] + 0.1, 3, method="approximate")  # compile pynndescent first
    rows = [row for name in args.corpora.split(",") for row in measure(name, args.data_dir)]
    frame = pd.DataFrame(rows)
    OUT.mkdir(exist_ok=True)
    frame.to_csv(OUT / "results.csv", index=False)
    corpora = per_corpus(frame)
    passed, total = int(corpora["within_bar"].sum()), len(corpora)
    fits_passed, fits = int(frame["within_bar"].sum()), len(frame)
    mean_abs = frame["difference"].abs().mean()
    text = [
        "# Approximate kNN graphs: time, recall, and GNMF's clusters",
        "",
        "`textcluster.graph.knn_graph` searches the neighbours exactly (every similarity, "
        "blockwise sparse products: O(n²) time) below "
        f"{APPROXIMATE_FROM:,} documents and approximately from there on (`method=\"auto\"`, "
        "the default): pynndescent's NN-descent on the unit tf-idf rows, cosine distance, "
        f"{_approximate.SEARCH_NEIGHBORS} neighbours per row, options "
        f"`{_approximate.SEARCH_OPTIONS}`; then the {_approximate.EXACT_SHARE:.0%} of the rows "
        "whose k-th neighbour found is least similar (at most "
        f"{_approximate.EXACT_MAX_ROWS:,}) are searched exactly; then the same weights and "
        "max-symmetrization. "
        "`method=\"exact\"` or `\"approximate\"` forces one.",
        "",
        "## Time and recall on real documents",
        "",
        "`python benchmarks/bench_knn_graph.py --sizes 10000,40000,100000 "
        "--json benchmarks/results/knn_graph.json`: random draws from 107,332 documents (the "
        "panel's six text corpora and Reuters-21578 as one corpus, with TDT2 on its own terms; "
        "see the script), 2 cores shared with other jobs. Recall: the share of the exact "
        "graph's directed edges (k = 5 per document) the approximate graph has; with ties: an "
        "approximate neighbour as similar as the exact k-th counts.",
        "",
        *timing_lines(),
        "",
        "## GNMF on each graph, panel corpora",
        "",
        f"`python reports/approximate_knn.py --data-dir ../shared/data` (textcluster "
        f"{textcluster.__version__}, Python {platform.python_version()}, {platform.machine()}). "
        "For each corpus: the recall of the approximate graph against the exact one; for each "
        "seed of the model, the λ default GNMF chooses and the NMI of its clusters (k = the "
        "number of classes) when it builds its graph exactly and approximately "
        "(`graph_method`; the choice scores its candidates on held-out edges, as "
        "`textcluster run` does). These corpora are below the threshold, so `auto` gives them "
        "the exact graph; the approximate one is forced here.",
        "",
        f"Mean over seeds {', '.join(map(str, SEEDS))}, per corpus:",
        "",
        markdown(corpora, ["corpus", "n_docs", "k", "recall", "nmi_exact", "nmi_approximate",
                           "difference", "within_bar", "fits_within", "fits"]),
        "",
        f"Within {BAR} NMI of the exact graph (mean over the seeds): {passed} of {total} "
        f"corpora. Fit by fit: {fits_passed} of {fits} within {BAR}; mean |difference| "
        f"{mean_abs:.4f}; largest {frame['difference'].abs().max():.4f}.",
        "",
        "Every fit:",
        "",
        markdown(frame, ["corpus", "seed", "lam_exact", "nmi_exact", "lam_approximate",
                         "nmi_approximate", "difference", "within_bar"]),
        "",
    ]
    (OUT / "README.md").write_text("\n".join(text), encoding="utf-8")
    print(f"{passed}/{total} corpora, {fits_passed}/{fits} fits within {BAR}")


if __name__ == "__main__":
    main()

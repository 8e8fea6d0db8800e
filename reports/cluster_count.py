"""The number of clusters chosen without labels (``--k auto``) against the number of classes.

For every corpus of the development panel, TDT2 and Reuters: the tf-idf rows as ``textcluster
run`` makes them (``textcluster.pipeline.represent``), then
``textcluster.models.cluster_count.choose_n_clusters`` with its defaults (candidates 3–30) for
seeds 0, 1 and 2, the k chosen, whether it is within ±30 % of the number of classes (the
acceptance bar of ``--k auto``), the seconds it took and the criterion curve.

    python reports/cluster_count.py --data-dir ../shared/data

writes ``reports/cluster_count/README.md``, ``results.csv`` and ``curves.png``/``.svg``.
"""

import argparse
import json
import platform
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

import textcluster
from textcluster.corpora import load_corpus
from textcluster.models.cluster_count import AUTO_RANGE, choose_n_clusters
from textcluster.pipeline import represent
from textcluster.report import plots

TEXT_CORPORA = ("agnews", "classic4", "r8", "dbpedia", "stackoverflow", "biomedical")
CLUTO = tuple(f"cluto:{name}" for name in (
    "fbis", "tr31", "tr41", "tr45", "wap", "re0", "k1a", "k1b", "hitech", "la1", "la2",
    "tr11", "tr12", "tr23"))
CORPORA = (*TEXT_CORPORA, *CLUTO, "tdt2", "reuters")
SEEDS = (0, 1, 2)
BAR = 0.3
OUT = Path(__file__).resolve().parent / "cluster_count"


def measure(name, data_dir):
    rep = represent(load_corpus(name, data_dir=data_dir))
    classes = len(np.unique(rep.corpus.labels))
    for seed in SEEDS:
        choice = choose_n_clusters(rep.X, random_state=seed)
        row = {"corpus": name, "n_docs": rep.X.shape[0], "classes": classes, "seed": seed,
               "k_chosen": choice.k,
               "within_bar": bool(abs(choice.k - classes) <= BAR * classes),
               "seconds": choice.seconds,
               "candidates": json.dumps(choice.candidates),
               "instability": json.dumps(choice.instability),
               "std_error": json.dumps(choice.std_error)}
        print(row["corpus"], seed, classes, choice.k, choice.seconds, flush=True)
        yield row


def markdown(frame):
    table = frame.groupby("corpus", sort=False).agg(
        n_docs=("n_docs", "first"), classes=("classes", "first"),
        k_chosen=("k_chosen", lambda k: " / ".join(map(str, k))),
        within=("within_bar", "sum"), seconds=("seconds", "median"))
    lines = ["| corpus | documents | classes | k chosen (seeds 0 / 1 / 2) | within ±30 % | "
             "median seconds |", "|---|---|---|---|---|---|"]
    for corpus, row in table.iterrows():
        lines.append(f"| {corpus} | {row.n_docs:,} | {row.classes} | {row.k_chosen} | "
                     f"{row.within} of {len(SEEDS)} | {row.seconds:.1f} |")
    return "\n".join(lines)


def curves_figure(frame):
    """The text corpora's curves, seed 0."""
    rows = frame[(frame["seed"] == 0) & frame["corpus"].isin(TEXT_CORPORA)]
    return plots.criterion_curves(
        [(row.corpus, json.loads(row.candidates), json.loads(row.instability))
         for row in rows.itertuples()],
        "k", "instability (1 = chance)", "--k auto on the panel's text corpora, seed 0")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default="../shared/data")
    parser.add_argument("--corpora", default=",".join(CORPORA))
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    frame = pd.DataFrame([row for name in args.corpora.split(",")
                          for row in measure(name, args.data_dir)])
    OUT.mkdir(exist_ok=True)
    frame.to_csv(OUT / "results.csv", index=False)
    per_text = frame[frame["corpus"].isin(TEXT_CORPORA)].groupby("corpus")["within_bar"]
    text_majority = int((per_text.sum() >= 2).sum())
    lines = [
        "# The number of clusters chosen without labels (`--k auto`)",
        "",
        f"`python reports/cluster_count.py --data-dir ../shared/data` (textcluster "
        f"{textcluster.__version__}, Python {platform.python_version()}, "
        f"{platform.machine()}). Each corpus' tf-idf rows as `textcluster run` makes them; "
        f"`choose_n_clusters` with its defaults (candidates {AUTO_RANGE[0]}–{AUTO_RANGE[1]}, "
        "fewer on small corpora; the rule is in `textcluster/models/cluster_count.py`) for "
        f"seeds {', '.join(map(str, SEEDS))}. Within ±30 %: |k − classes| ≤ 0.3 × classes.",
        "",
        markdown(frame),
        "",
        f"Text corpora where the chosen k is within ±30 % for at least two of three seeds: "
        f"{text_majority} of {len(TEXT_CORPORA)}. All runs within ±30 %: "
        f"{int(frame['within_bar'].sum())} of {len(frame)}.",
        "",
        "![instability curves](curves.png)",
        "",
    ]
    (OUT / "README.md").write_text("\n".join(lines), encoding="utf-8")
    try:
        plots.save(curves_figure(frame), OUT / "curves")
    except textcluster.TextclusterError as exc:
        print(f"no figure: {exc}")


if __name__ == "__main__":
    main()

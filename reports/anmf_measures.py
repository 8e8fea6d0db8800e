"""What paper 002's Tables 3-4 measure: k-means and NMF on TDT2 and Reuters, two weightings.

Paper 002 (Xiong et al., ANMF) reports, on the whole corpora with k = number of classes,
"clustering accuracy" values far above the one-to-one (Hungarian) accuracy any method reaches
with 30 or 65 clusters, and NMI values below ours. This script runs its two baselines, which
have no parameter to choose, under two term weightings:

* ``tf``  term frequencies scaled to unit length (Deng Cai's matrices as distributed),
* ``cai`` textcluster's default tf-idf, ``(1 + ln tf) · ln(N / df)``, unit length,

and prints, averaged over the seeds, the accuracy (Hungarian), NMI (MI / max H, ours; and
MI / √(H·H), Strehl & Ghosh's, which paper 002 cites), the Rand index and the paper's numbers.
Writes ``reports/anmf_measures.md``.

Usage: python reports/anmf_measures.py [--data-dir DIR] [--seeds 3]
"""

import argparse
import time
import warnings
from pathlib import Path

import numpy as np

from textcluster import metrics
from textcluster import run

CORPORA = {"tdt2": "TDT2 (30 classes)", "reuters-cai": "Reuters, Cai's matrix (65 classes)"}
WEIGHTINGS = {"tf": "term frequency", "cai": "tf-idf"}
MODELS = ("kmeans", "nmf")
AS_MADE = {"nmf": {"assign": "kmeans"}}  # NMF's clusters read as when the report was made
# Paper 002, Tables 3 (accuracy) and 4 (NMI), in %.
PUBLISHED = {("tdt2", "kmeans"): (90.92, 64.54), ("tdt2", "nmf"): (90.11, 58.75),
             ("reuters-cai", "kmeans"): (74.04, 33.90), ("reuters-cai", "nmf"): (73.68, 29.98)}
MEASURES = {
    "AC": metrics.accuracy,
    "NMI": metrics.nmi,
    "NMI √": lambda y, p: metrics.nmi(y, p, average_method="geometric"),
    "RI": metrics.rand_index,
}


def scores(corpus, model, weighting, seeds, data):
    """Mean of each measure, in %, over ``seeds`` runs on the whole corpus."""
    values = {name: [] for name in MEASURES}
    for seed in range(seeds):
        result = run(corpus, model, seed=seed, data_dir=data,
                     settings={"weighting": weighting, **AS_MADE.get(model, {})})
        for name, measure in MEASURES.items():
            values[name].append(100 * measure(result.corpus.labels, result.labels))
    return {name: float(np.mean(v)) for name, v in values.items()}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", help="corpus folder (default: as textcluster run)")
    parser.add_argument("--seeds", type=int, default=3)
    args = parser.parse_args()
    data = args.data_dir  # None: $TEXTCLUSTER_DATA, then corpora/ (textcluster.corpora.loaders)
    warnings.simplefilter("ignore")
    start = time.perf_counter()
    header = "| corpus | model | weighting | " + " | ".join(MEASURES) + " | paper: accuracy / NMI |"
    lines = [header, "|" + "---|" * (len(MEASURES) + 4)]
    for corpus, corpus_label in CORPORA.items():
        for model in MODELS:
            published = "{:.2f} / {:.2f}".format(*PUBLISHED[corpus, model])
            for weighting, weighting_label in WEIGHTINGS.items():
                mean = scores(corpus, model, weighting, args.seeds, data)
                cells = " | ".join(f"{mean[name]:.1f}" for name in MEASURES)
                lines.append(f"| {corpus_label} | {model} | {weighting_label} | {cells} | "
                             f"{published} |")
                print(lines[-1], flush=True)
    minutes = (time.perf_counter() - start) / 60
    text = "\n".join([
        "# What paper 002's Tables 3-4 measure",
        "",
        f"Made by `python reports/anmf_measures.py --seeds {args.seeds}` ({minutes:.1f} min). "
        f"k-means and NMF on the whole corpus, k = number of classes, mean over {args.seeds} "
        "seeds, in %. AC: one-to-one (Hungarian) accuracy; NMI: MI / max entropy; NMI √: "
        "MI / √(H·H) (Strehl & Ghosh); RI: Rand index. Paper 002 gives no parameter to these "
        "two baselines, so they show how it measured and weighted.",
        "",
        *lines,
        "",
    ])
    out = Path(__file__).with_suffix(".md")
    out.write_text(text, encoding="utf-8")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()

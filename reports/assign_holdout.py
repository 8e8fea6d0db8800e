"""Fit on 80 % of a labelled panel corpus, assign the other 20 % with the saved model.

For each corpus and model: a random 80 % of the documents (``numpy.random.default_rng(0)``) is
clustered with ``textcluster.run`` (defaults, k = the number of classes, seed 0), the model is
saved as a bundle and loaded back, and the held-out 20 % are assigned with it
(``textcluster.load_model(...).assign``). Reported: the NMI of the fitted part (against its
classes) and of the assigned part; the acceptance bar is |difference| ≤ 0.03.

    python reports/assign_holdout.py --data-dir ../shared/data

writes ``reports/assign_holdout/README.md`` and ``results.csv``.
"""

import argparse
import platform
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

import textcluster
from textcluster.metrics import nmi
from textcluster.report.markup import Table, to_markdown

CORPORA = ("agnews", "classic4", "r8")
MODELS = ("gnmf", "nmf")  # the default model and plain NMF
AS_MADE = {"nmf": {"assign": "kmeans"}}  # NMF's clusters read as when the report was made
BAR = 0.03
OUT = Path(__file__).resolve().parent / "assign_holdout"


def split(corpus, share=0.8, seed=0):
    order = np.random.default_rng(seed).permutation(corpus.n_docs)
    cut = int(round(share * corpus.n_docs))
    return (corpus.subset(np.sort(order[:cut]), name=f"{corpus.name}-fit"),
            corpus.subset(np.sort(order[cut:]), name=f"{corpus.name}-held-out"))


def measure(name, model, data_dir):
    corpus = textcluster.load_corpus(name, data_dir=data_dir)
    fit_part, held_out = split(corpus)
    started = time.perf_counter()
    result = textcluster.run(fit_part, model=model, k=len(corpus.classes), seed=0,
                             settings=AS_MADE.get(model))
    fit_seconds = time.perf_counter() - started
    with tempfile.TemporaryDirectory() as folder:
        textcluster.save_model(result, Path(folder) / "model")
        bundle = textcluster.load_model(Path(folder) / "model")
        started = time.perf_counter()
        assigned = bundle.assign(held_out)
        assign_seconds = time.perf_counter() - started
    fitted = result.metrics["nmi"]
    held = nmi(assigned.corpus.labels, assigned.labels)
    return {"corpus": name, "model": model, "n_fit": result.metrics["n_docs"],
            "n_assigned": len(assigned.labels), "n_left_out": len(assigned.dropped),
            "nmi_fitted": round(fitted, 4), "nmi_assigned": round(held, 4),
            "difference": round(held - fitted, 4), "passes": abs(held - fitted) <= BAR,
            "fit_s": round(fit_seconds, 1), "assign_s": round(assign_seconds, 2)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default="../shared/data")
    args = parser.parse_args()
    rows = []
    for name in CORPORA:
        for model in MODELS:
            rows.append(measure(name, model, args.data_dir))
            print(rows[-1], flush=True)
    frame = pd.DataFrame(rows)
    OUT.mkdir(exist_ok=True)
    frame.to_csv(OUT / "results.csv", index=False)
    passed = int(frame["passes"].sum())
    text = [
        "# Fit on 80 %, assign the other 20 %",
        "",
        f"Measured with `python reports/assign_holdout.py --data-dir ../shared/data` "
        f"(textcluster {textcluster.__version__}, Python {platform.python_version()}, "
        f"{platform.machine()}, 2 cores). Each corpus of the development panel is split "
        "at random (`default_rng(0)`) into 80 % clustered with `textcluster.run` (defaults, k "
        "= the number of classes, seed 0) and 20 % assigned with the saved and re-loaded "
        "bundle (`textcluster.load_model(...).assign`). NMI against the classes; bar: the "
        f"assigned part within {BAR} of the fitted part.",
        "",
        to_markdown([Table(list(frame.columns), frame.astype(str).values.tolist())]),
        "",
        f"{passed} of {len(frame)} pass.",
        "",
    ]
    (OUT / "README.md").write_text("\n".join(text), encoding="utf-8")


if __name__ == "__main__":
    main()

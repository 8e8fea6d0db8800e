"""Default GNMF against NMF (and Cai's reference GNMF) on every labelled corpus at hand.

Writes ``reports/gnmf_defaults.md``: mean NMI per corpus over seeds or class draws, for

* ``nmf``        NMF (k-means on the document factor),
* ``gnmf``       GNMF with its defaults (scale-free λ = 10⁸, graph check on),
* ``gnmf-cai``   Deng Cai's reference (``scaling="cai"``, λ = 100),
* ``gnmf-random-graph``  default GNMF given a random 5-regular graph instead of the kNN graph
  (a graph that carries no cluster information: the graph check must fall back to NMF).

Corpora: TDT2 (full, 30 classes), TDT2 five-class subsets (class draws, tf-idf on the whole
corpus first), Reuters-21578 raw SGML (single-label, classes with ≥ 50 documents), Deng Cai's
Reuters matrix (30 largest classes, and three-class draws of them, whose classes are often
very unequal), and a folder corpus of five Reuters topics written as
``.txt`` files and read back through the folder loader.

Usage: python reports/gnmf_defaults.py [--data-dir DIR] [--draws 8] [--seeds 3]
"""

import argparse
import os
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from textcluster.corpora import load_corpus
from textcluster.metrics import nmi
from textcluster.models import GNMF, NMF
from textcluster.pipeline import represent

FOLDER_CLASSES = ["crude", "ship", "sugar", "coffee", "gold"]


def data_dir(arg):
    if arg:
        return Path(arg)
    if os.environ.get("TEXTCLUSTER_DATA"):
        return Path(os.environ["TEXTCLUSTER_DATA"])
    return Path(__file__).resolve().parents[2] / "shared" / "data"


def write_folder_corpus(folder, data):
    """Reuters articles of five topics as ``folder/<topic>/<id>.txt``."""
    corpus = load_corpus("reuters", data).select_classes(classes=FOLDER_CLASSES)
    for doc_id, text, label in zip(corpus.ids, corpus.texts, corpus.labels):
        (folder / label).mkdir(parents=True, exist_ok=True)
        (folder / label / f"{doc_id}.txt").write_text(text, encoding="utf-8")
    return folder


def corpora(data, draws, seeds, tmp):
    """``(name, X, labels, runs)``; ``runs`` lists the seeds to average over."""
    tdt2 = load_corpus("tdt2", data)
    X = represent(tdt2, dtype="float64").X
    yield "TDT2, 30 classes", X, tdt2.labels, range(1)
    rng = np.random.default_rng(2024)
    for draw in range(draws):
        mask = np.isin(tdt2.labels, rng.choice(tdt2.classes, 5, replace=False))
        yield f"TDT2, 5 classes, draw {draw}", X[mask], tdt2.labels[mask], range(1)
    reuters = load_corpus("reuters", data, min_class_size=50)
    yield "Reuters raw SGML, classes ≥ 50 docs", represent(reuters, dtype="float64").X, reuters.labels, range(1)
    cai = load_corpus("reuters-cai", data, top=30)
    X = represent(cai, dtype="float64").X
    yield "Reuters (Cai), 30 classes", X, cai.labels, range(1)
    for draw in range(draws):  # unequal classes: one large class beside small ones is common
        mask = np.isin(cai.labels, rng.choice(cai.classes, 3, replace=False))
        yield f"Reuters (Cai), 3 classes, draw {draw}", X[mask], cai.labels[mask], range(1)
    folder = load_corpus(str(write_folder_corpus(tmp / "reuters-5-topics", data)))
    yield "folder corpus, 5 Reuters topics", represent(folder, dtype="float64").X, folder.labels, range(seeds)


def random_graph(n, degree, seed):
    rng = np.random.default_rng(seed)
    rows, cols = np.repeat(np.arange(n), degree), rng.integers(0, n, degree * n)
    G = sp.csr_matrix((np.ones(degree * n), (rows, cols)), shape=(n, n))
    G = G.maximum(G.T).tolil()
    G.setdiag(0)
    G = G.tocsr()
    G.eliminate_zeros()
    G.data[:] = 1.0
    return G


# The default this study was made for (λ = 10⁸ scale-free, raw k-means on the factor); the
# default now chooses λ per corpus (reports/defaults_panel/).
STUDIED_DEFAULT = {"scaling": "scale-free", "lam": 1e8, "assign": "kmeans"}


def scores(X, y, runs):
    """Mean NMI per model, and how many runs kept their graph after the graph check."""
    k = len(np.unique(y))
    result, kept = {}, {"gnmf": 0, "gnmf-random-graph": 0}
    for seed in runs:
        models = {"nmf": (NMF(k, assign="kmeans", random_state=seed), None),  # as made
                  "gnmf": (GNMF(k, random_state=seed, **STUDIED_DEFAULT), None),
                  "gnmf-cai": (GNMF(k, scaling="cai", random_state=seed), None),
                  "gnmf-random-graph": (GNMF(k, random_state=seed, **STUDIED_DEFAULT),
                                        random_graph(X.shape[0], 5, seed))}
        for name, (model, graph) in models.items():
            fit = model.fit if graph is None else (lambda X, g=graph, m=model: m.fit(X, graph=g))
            result.setdefault(name, []).append(nmi(y, fit(X).labels_))
            if name in kept:
                kept[name] += bool(model.graph_check_["passed"])
    return {name: float(np.mean(v)) for name, v in result.items()}, kept


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir")
    parser.add_argument("--draws", type=int, default=8)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--out", default=str(Path(__file__).with_suffix(".md")))
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    rows, start = [], time.time()
    with tempfile.TemporaryDirectory() as tmp:
        for name, X, y, runs in corpora(data_dir(args.data_dir), args.draws, args.seeds,
                                         Path(tmp)):
            row, kept = scores(X, y, runs)
            rows.append((name, X.shape, len(runs), row, kept))
            print(name, {k: round(v, 4) for k, v in row.items()}, kept, file=sys.stderr,
                  flush=True)
    Path(args.out).write_text(render(rows, time.time() - start), encoding="utf-8")


def render(rows, seconds):
    models = list(rows[0][3])
    lines = ["# Default GNMF against NMF on every labelled corpus", "",
             "Produced by `python reports/gnmf_defaults.py` "
             f"({seconds / 60:.0f} min on 2 cores). NMI (MI / max entropy), mean over the runs "
             "listed; k = number of classes; float64 tf-idf; clusters by k-means on the "
             "document factor. Graph kept: runs whose graph passed the graph check, with the "
             "kNN graph (gnmf) and with a random graph (which should not pass).", "",
             "| corpus | documents × terms | runs | " + " | ".join(models)
             + " | gnmf − nmf | graph kept: kNN / random |",
             "|---|---|---|" + "---|" * (len(models) + 2)]
    for name, shape, runs, row, kept in rows:
        cells = " | ".join(f"{row[m]:.3f}" for m in models)
        lines.append(f"| {name} | {shape[0]} × {shape[1]} | {runs} | {cells} | "
                     f"{row['gnmf'] - row['nmf']:+.3f} | {kept['gnmf']} / "
                     f"{kept['gnmf-random-graph']} |")
    for corpus in ("TDT2, 5 classes", "Reuters (Cai), 3 classes"):
        draws = [(r, kept) for n, _, _, r, kept in rows if n.startswith(corpus + ", draw")]
        if not draws:
            continue
        means = " | ".join(f"{np.mean([r[m] for r, _ in draws]):.3f}" for m in models)
        diff = np.mean([r["gnmf"] - r["nmf"] for r, _ in draws])
        lines.append(f"| {corpus}, mean of {len(draws)} draws | | {len(draws)} | {means} | "
                     f"{diff:+.3f} | {sum(k['gnmf'] for _, k in draws)} / "
                     f"{sum(k['gnmf-random-graph'] for _, k in draws)} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()

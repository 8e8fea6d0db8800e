"""The acceptance table of the defaults panel: every model with its defaults against the
baselines a user reaches for, on every corpus of ``pipelines/defaults_panel.toml``.

Reads the ledger of ``textcluster batch pipelines/defaults_panel.toml`` and writes
``reports/defaults_panel/acceptance.md``: per corpus, the mean over the seeds of NMI (and AC,
purity) for k-means, LSA + k-means, NMF and each graph model, the bar a graph model must
clear — NMF's NMI − 0.01 and max(k-means, LSA + k-means) − 0.02 — and whether it does, and
the λ each selection chose.

Usage: python reports/defaults_panel.py [--ledger runs/defaults_panel] [--out DIR]

The ledger the committed table was made from is kept beside it
(``reports/defaults_panel/ledger.sqlite``); copied to ``runs/defaults_panel/`` it lets
``textcluster batch pipelines/defaults_panel.toml`` run only the jobs it does not hold yet.
"""

import argparse
from pathlib import Path

import numpy as np

from textcluster.batch.ledger import load_results  # every finished job, of every run

BASELINES = ("kmeans", "lsi-kmeans", "nmf")
JUDGED = ("gnmf", "anmf", "lccf")
LEARNED_GRAPH = ("agpnmf", "kagpnmf")  # γ chosen without labels too, run where n² fits
OTHERS = ("pnmf", "cf", "convex-nmf")
UNLABELLED = ("gsnmfc", "grscf", "sodnmf")  # semi-supervised models run without labels


def summary(jobs):
    """Mean metrics per corpus and model over the finished seeds, and the chosen λ."""
    done = jobs[jobs["status"] == "done"]
    rows = {}
    for (corpus, model), group in done.groupby(["corpus", "model"], sort=False):
        lam = group["metric.lam"].dropna() if "metric.lam" in group else []
        rows[corpus, model] = {
            "nmi": group["metric.nmi"].mean(), "accuracy": group["metric.accuracy"].mean(),
            "purity": group["metric.purity"].mean(), "runs": len(group),
            "lam": sorted({float(v) for v in lam}),
        }
    return rows


def bar(rows, corpus):
    """The NMI a graph model must reach on ``corpus``, or None without the baselines."""
    try:
        km, lsa, nmf = (rows[corpus, m]["nmi"] for m in BASELINES)
    except KeyError:
        return None
    return max(nmf - 0.01, max(km, lsa) - 0.02)


def fmt(value):
    return "–" if value is None or np.isnan(value) else f"{100 * value:.1f}"


def lam_text(lams):
    return "/".join(f"{v:g}" for v in lams) if lams else ""


def clears(rows, corpus, model):
    """Whether ``model`` reaches the bar on ``corpus``; None when either was not run."""
    need = bar(rows, corpus)
    if need is None or (corpus, model) not in rows:
        return None
    return bool(rows[corpus, model]["nmi"] >= need - 1e-12)


def cleared(rows, corpora, models):
    """``{model: [corpora at or above the bar, corpora run]}``."""
    results = {m: [clears(rows, c, m) for c in corpora] for m in models}
    return {m: [sum(r is True for r in rs), sum(r is not None for r in rs)]
            for m, rs in results.items()}


def table(rows, corpora, models=JUDGED, chosen=True):
    """The acceptance table of ``models`` on ``corpora`` (those where none of them ran left
    out; with a column of the λ each chose when ``chosen``) and ``{model: [corpora at or above
    the bar, corpora run]}``."""
    head = ("| corpus | k-means | LSA + k-means | NMF | bar | " + " | ".join(models) + " |"
            + (" λ chosen (" + ", ".join(models) + ") |" if chosen else ""))
    lines = [head, "|" + "---|" * (5 + len(models) + chosen)]
    for corpus in corpora:
        if not any((corpus, model) in rows for model in models):
            continue
        cells, lams = [], []
        for model in models:
            ok = clears(rows, corpus, model)
            if ok is None:
                cells.append("not run")
                lams.append("")
                continue
            row = rows[corpus, model]
            cells.append(f"{fmt(row['nmi'])} {'✓' if ok else '✗'}")
            lams.append(lam_text(row["lam"]))
        base = [fmt(rows[corpus, m]["nmi"]) if (corpus, m) in rows else "–" for m in BASELINES]
        lines.append(f"| {corpus} | " + " | ".join(base) + f" | {fmt(bar(rows, corpus))} | "
                     + " | ".join(cells) + " |" + (" " + "; ".join(lams) + " |" if chosen else ""))
    return lines, cleared(rows, corpora, models)


def detail(rows, corpora, models):
    lines = ["| corpus | model | runs | NMI | AC | purity |", "|---|---|---|---|---|---|"]
    for corpus in corpora:
        for model in models:
            row = rows.get((corpus, model))
            if row is not None:
                lines.append(f"| {corpus} | {model} | {row['runs']} | {fmt(row['nmi'])} | "
                             f"{fmt(row['accuracy'])} | {fmt(row['purity'])} |")
    return lines


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ledger", default="runs/defaults_panel")
    parser.add_argument("--out", default=str(Path(__file__).parent / "defaults_panel"))
    args = parser.parse_args()
    jobs = load_results(args.ledger)
    rows = summary(jobs)
    corpora = list(dict.fromkeys(jobs["corpus"]))
    lines, passed = table(rows, corpora)
    learned_lines, learned = table(rows, corpora, LEARNED_GRAPH)
    counts = ", ".join(f"{m} {p} of {n}" for m, (p, n) in passed.items())
    learned_counts = ", ".join(f"{m} {p} of {n}" for m, (p, n) in learned.items() if n)
    other_lines, other = table(rows, corpora, OTHERS, chosen=False)
    others = ", ".join(f"{m} {p} of {n}" for m, (p, n) in other.items() if n)
    semi_lines, semi = table(rows, corpora, UNLABELLED)
    semis = ", ".join(f"{m} {p} of {n}" for m, (p, n) in semi.items() if n)
    text = "\n".join([
        "# Defaults on the development panel, TDT2 and Reuters: the acceptance table",
        "",
        "Made by `python reports/defaults_panel.py` from the ledger of `textcluster batch "
        "pipelines/defaults_panel.toml` (whole corpus, k = number of classes, seeds 0–2, every "
        "model with its defaults). NMI in %, mean over the seeds. *bar*: the NMI a graph model "
        "must reach, max(NMF − 1, max(k-means, LSA + k-means) − 2) points; ✓ reached, ✗ not. "
        "λ chosen: the graph strength each seed's selection chose (0: the clusters of LSA + "
        "k-means the selection starts from, or the fit at λ = 0 from them).",
        "",
        f"Corpora passed: {counts}.",
        "",
        *lines,
        "",
        "## AGPNMF and kernel AGPNMF",
        "",
        "With γ chosen without labels (0: the clusters of LSA + k-means; 100: the learned "
        "graph's, from random starts), on the corpora they have run on: "
        f"{learned_counts or 'none (not in this ledger)'}.",
        "",
        *(learned_lines if learned_counts else []),
        "",
        "## PNMF, CF and convex NMF",
        "",
        "No graph and no strength to choose: one start from the clusters of LSA + k-means "
        "(their default), against the same bar, on the corpora they have run on: "
        f"{others or 'none (not in this ledger)'}.",
        "",
        *(other_lines if others else []),
        "",
        "## GSNMFC, GRSCF and SODNMF without labels",
        "",
        "Semi-supervised models run as a user without labels runs them: GSNMFC and GRSCF "
        "with GNMF's and LCCF's defaults, SODNMF with its own objective (both graphs, the "
        "ridge, the sparsity and R), each with its graph strength (λ; SODNMF's α) chosen "
        "without labels and k-means on the factor's unit rows, on the corpora they have run "
        f"on: {semis or 'none (not in this ledger)'}.",
        "",
        *(semi_lines if semis else []),
        "",
        "## Every model, NMI / AC / purity in %",
        "",
        *detail(rows, corpora, BASELINES + JUDGED + LEARNED_GRAPH + OTHERS + UNLABELLED),
        "",
    ])
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "acceptance.md").write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()

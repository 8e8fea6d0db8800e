"""The growth of ``textcluster run`` with the number of documents: table and plot.

Reads ``benchmarks/results/scale.json`` (``python benchmarks/bench_scale.py --json
benchmarks/results/scale.json``) and writes ``reports/scale/README.md`` (each size's stage
times, peak memory and NMI; the growth exponents between sizes) and ``growth.png`` (time of
each stage against the number of documents, log-log, beside n and n log n).

    python reports/scale.py
"""

import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "scale.json"
OUT = Path(__file__).resolve().parent / "scale"


def recorded_stages(record):
    """The stages the benchmark timed, in its order (the keys of a finished run's stages)."""
    return list(next(run["stages"] for size in record["sizes"] for run in size["runs"].values()
                     if run["finished"]))


def table(record):
    stages = recorded_stages(record)
    lines = ["| documents | model | total (s) | " + " | ".join(f"{s} (s)" for s in stages)
             + " | peak memory (GB) | NMI (sources) |",
             "|---|---|---|" + "---|" * len(stages) + "---|---|"]
    for size in record["sizes"]:
        for model, run in size["runs"].items():
            if not run["finished"]:
                lines.append(f"| {size['n']:,} | {model} | {run['seconds']:.0f} "
                             f"| not finished: {run['note'][:120]} |" + " |" * (len(stages) + 1))
                continue
            cells = " | ".join("–" if run["stages"].get(s) is None
                               else f"{run['stages'][s]:.1f}" for s in stages)
            lines.append(f"| {size['n']:,} | {model} | {run['seconds']:.1f} | {cells} | "
                         f"{run['peak_gb']:.2f} | {run['nmi']:.3f} |")
    return lines


def growth_lines(record):
    stages = recorded_stages(record)
    lines = ["| model | from | to | " + " | ".join(stages) + " | total |",
             "|---|---|---|" + "---|" * (len(stages) + 1)]
    for model, steps in record["growth"].items():
        for step in steps:
            cells = " | ".join(str(step.get(s, "–")) for s in (*stages, "total"))
            lines.append(f"| {model} | {step['from']:,} | {step['to']:,} | {cells} |")
    return lines


def span_lines(record, first=100_000, last=1_000_000):
    """Each stage's exponent from ``first`` to ``last`` documents, every stage included."""
    stages = recorded_stages(record)
    sizes = {size["n"]: size["runs"] for size in record["sizes"]}
    lines = ["| model | " + " | ".join(stages) + " | total |",
             "|---|" + "---|" * (len(stages) + 1)]
    for model in record["models"]:
        a, b = (sizes.get(n, {}).get(model, {}) for n in (first, last))
        if not (a.get("finished") and b.get("finished")):
            continue
        exponent = {s: np.log(b["stages"][s] / a["stages"][s]) / np.log(last / first)
                    for s in stages if a["stages"].get(s) and b["stages"].get(s)}
        exponent["total"] = np.log(b["seconds"] / a["seconds"]) / np.log(last / first)
        lines.append(f"| {model} | " + " | ".join(
            f"{exponent[s]:.2f}" if s in exponent else "–" for s in (*stages, "total")) + " |")
    return lines


def plot(record, path):
    stages = recorded_stages(record)
    models = record["models"]
    fig, axes = plt.subplots(1, len(models), figsize=(5.5 * len(models), 4.2), sharey=True)
    for ax, model in zip(np.atleast_1d(axes), models):
        done = [s for s in record["sizes"] if s["runs"].get(model, {}).get("finished")]
        n = np.array([s["n"] for s in done], dtype=float)
        for stage in (*stages, "total"):
            t = np.array([s["runs"][model]["seconds"] if stage == "total"
                          else (s["runs"][model]["stages"].get(stage) or np.nan) for s in done])
            ax.loglog(n, t, marker="o", label=stage, lw=2.5 if stage == "total" else 1.2)
        if n.size:
            base = done[0]["runs"][model]["seconds"]
            ax.loglog(n, base * n / n[0], "k:", lw=0.8, label="∝ n")
            ax.loglog(n, base * (n * np.log(n)) / (n[0] * np.log(n[0])), "k--", lw=0.8,
                      label="∝ n log n")
        ax.set_title(f"textcluster run --model {model} --k {record['k']}")
        ax.set_xlabel("documents")
        ax.grid(True, which="both", alpha=0.3)
    np.atleast_1d(axes)[0].set_ylabel("seconds")
    np.atleast_1d(axes)[-1].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main():
    record = json.loads(RESULTS.read_text(encoding="utf-8"))
    OUT.mkdir(exist_ok=True)
    plot(record, OUT / "growth.png")
    machine = record["machine"]
    text = [
        "# `textcluster run` from 10 k documents up: time per stage and peak memory",
        "",
        "Measured by `python benchmarks/bench_scale.py` (see its docstring: real documents of "
        f"the panel's text corpora and Reuters-21578, {record['pool_texts']:,} texts, copies "
        f"beyond that with {record['drop']:.0%} of their words dropped; k = {record['k']}; "
        "each run in a fresh process with `--no-cache`) and rendered by `python "
        f"reports/scale.py`. Machine: {machine['cpu_count']} CPUs, shared (load average "
        f"{machine['load_average_at_start'][0]:.1f} at the start); times are wall seconds.",
        *(["", f"Note: {record['note']}."] if record.get("note") else []),
        "",
        "The fit is split into its stages: *graph* (the kNN graph: exact below 80,000 "
        "documents, NN-descent above), *factorize* (the factorization, with the default's "
        "label-free choice of λ) and *assign* (k-means on the document factor); k-means' "
        "whole fit is under *factorize*.",
        "",
        *table(record),
        "",
        "Growth exponent of each stage between successive sizes (time ∝ n^e; n log n from "
        "100 k to 1 M is e ≈ 1.08; stages under half a second are left out):",
        "",
        *growth_lines(record),
        "",
        "From 100,000 to 1,000,000 documents, every stage (n log n: 1.08):",
        "",
        *span_lines(record),
        "",
        "![time of each stage against the number of documents](growth.png)",
        "",
    ]
    (OUT / "README.md").write_text("\n".join(text), encoding="utf-8")
    print(f"wrote {OUT / 'README.md'}")


if __name__ == "__main__":
    main()

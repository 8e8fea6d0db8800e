"""Growth of ``textcluster run`` with the number of documents: each stage's time and peak memory.

At each size n, a CSV of n real documents is written and ``textcluster run FILE --model M
--k 20 --no-cache`` runs on it in a fresh process, for the default graph model (gnmf) and for
k-means; the stages' times are read from the run's ``metrics.json`` (load, preprocess, fit —
the kNN graph, the factorization and the assignment — and evaluate), the whole run's wall time
and its peak resident memory (the largest of the run's processes, ``getrusage``) are measured
here. The growth exponent of each stage between two sizes is log(t₂/t₁) / log(n₂/n₁); n log n
from 100 k to 1 M is 1.08.

The documents: the texts of the panel's six text corpora (agnews, classic4, dbpedia, r8,
stackoverflow, biomedical) and every record of Reuters-21578 (97,947 texts), labelled by their
source. A size up to that is a random draw of them (``--seed``); a larger size repeats them:
copy c ≥ 1 of a text drops each of its words with probability ``DROP`` (seeded by the copy),
so copies are near-duplicates, as reposted news and re-titled questions are, and no two rows
are the same text. NMI is against the source (7 classes; k = 20 is the issue's setting).

    python benchmarks/bench_scale.py --sizes 10000,30000,100000,300000,1000000 \\
        --json benchmarks/results/scale.json
"""

import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (benchmark_parser, finish, logger, machine_info,  # noqa: E402
                     resolve_data_dir, write_json)

from bench_knn_graph import pool_texts  # noqa: E402

DROP = 0.15
# the run's stages; a factorization model's fit split into its kNN graph, factorization
# (with the choice of λ) and assignment (its fit_seconds_); k-means' fit is all "factorize"
STAGES = ("load", "preprocess", "graph", "factorize", "assign", "evaluate")
# runs the command given, then prints the peak resident memory of it and its children (kB)
_CHILD = ("import resource, subprocess, sys; code = subprocess.run(sys.argv[1:]).returncode; "
          "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss); sys.exit(code)")


def write_corpus(texts, sources, n, seed, path):
    """A CSV (id, text, label) of ``n`` documents made from ``texts`` as described above."""
    rng = np.random.default_rng(seed)
    pool = len(texts)
    order = rng.permutation(pool)
    rows = []
    for j in range(n):
        copy, i = divmod(j, pool)
        text = texts[order[i]]
        if copy:
            words = text.split()
            keep = np.random.default_rng([seed, copy, int(order[i])]).random(len(words)) >= DROP
            text = " ".join(w for w, k in zip(words, keep) if k) or text
        rows.append((f"d{j}", text, sources[order[i]]))
    pd.DataFrame(rows, columns=["id", "text", "label"]).to_csv(path, index=False)


def run(path, model, k, out, timeout):
    """One ``textcluster run`` in a fresh process: wall seconds, peak memory (GB), stages and
    NMI (None where it did not finish)."""
    command = [sys.executable, "-c", _CHILD, shutil.which("textcluster") or "textcluster", "run",
               str(path), "--model", model, "--k", str(k), "--no-cache", "--terms", "0",
               "--out", str(out)]
    start = time.perf_counter()
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"finished": False, "seconds": time.perf_counter() - start,
                "note": f"stopped after {timeout} s"}
    seconds = time.perf_counter() - start
    peak_kb = int(done.stdout.strip().splitlines()[-1])
    if done.returncode != 0:
        return {"finished": False, "seconds": seconds, "note": done.stderr.strip()[-500:]}
    metrics = json.loads((out / "metrics.json").read_text())
    timings = metrics["timings"]
    fit = metrics.get("fit_stages") or {"factorize": timings["fit"]}
    stages = {"load": timings["load"], "preprocess": timings["preprocess"],
              "graph": fit.get("prepare"), "factorize": fit["factorize"],
              "assign": fit.get("assign"), "evaluate": timings["evaluate"]}
    return {"finished": True, "seconds": seconds, "peak_gb": peak_kb / 2**20,
            "stages": stages, "nmi": metrics["nmi"], "lam": metrics.get("lam")}


def growth(rows, model):
    """Each stage's growth exponent between successive sizes."""
    done = [r for r in rows if r["runs"].get(model, {}).get("finished")]
    out = []
    for a, b in zip(done, done[1:]):
        ratio = np.log(b["n"] / a["n"])
        ra, rb = a["runs"][model], b["runs"][model]
        exps = {s: np.log(rb["stages"][s] / ra["stages"][s]) / ratio for s in STAGES
                if ra["stages"][s] and rb["stages"][s] and ra["stages"][s] > 0.5}
        exps["total"] = np.log(rb["seconds"] / ra["seconds"]) / ratio
        out.append({"from": a["n"], "to": b["n"], **{s: round(float(e), 2)
                                                     for s, e in exps.items()}})
    return out


def main():
    parser = benchmark_parser(__doc__, repeats=1)
    parser.add_argument("--sizes", default="10000,30000,100000,300000,1000000",
                        help="numbers of documents, comma-separated")
    parser.add_argument("--models", default="gnmf,kmeans", help="models, comma-separated")
    parser.add_argument("--k", type=int, default=20, help="number of clusters (default 20)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the draws and copies")
    parser.add_argument("--timeout", type=float, default=3600,
                        help="seconds a run may take before it is stopped (default 3600)")
    parser.add_argument("--work-dir", type=Path, default=None,
                        help="folder for the corpora and runs (default: a temporary folder)")
    parser.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    args = parser.parse_args()
    log = logger(args.quiet)
    models = args.models.split(",")
    record = {"benchmark": "scale", "k": args.k, "seed": args.seed, "drop": DROP,
              "models": models, "machine": machine_info(), "sizes": []}
    _, texts, sources = pool_texts(resolve_data_dir(args.data_dir))
    sources = np.array(sources)
    record["pool_texts"] = len(texts)
    work = args.work_dir or Path(tempfile.mkdtemp(prefix="textcluster-scale-"))
    work.mkdir(parents=True, exist_ok=True)
    header = f"{'n':>9} {'model':>7} {'total s':>9} {'peak GB':>8} " + " ".join(
        f"{s:>10}" for s in STAGES) + f" {'NMI':>6}"
    print(header, flush=True)
    for n in (int(s) for s in args.sizes.split(",")):
        path = work / f"corpus_{n}.csv"
        write_corpus(texts, sources, n, args.seed, path)
        log(f"n = {n}: corpus written ({path.stat().st_size / 2**20:.0f} MB)")
        row = {"n": n, "runs": {}}
        for model in models:
            result = run(path, model, args.k, work / f"run_{n}_{model}", args.timeout)
            row["runs"][model] = result
            stages = result.get("stages", {})
            print(f"{n:>9} {model:>7} {result['seconds']:9.1f} {result.get('peak_gb', 0):8.2f} "
                  + " ".join(f"{stages.get(s) or 0:10.1f}" for s in STAGES)
                  + (f" {result['nmi']:6.3f}" if result["finished"] else
                     f"  not finished: {result['note'][:200]}"), flush=True)
        record["sizes"].append(row)
        record["growth"] = {model: growth(record["sizes"], model) for model in models}
        path.unlink()
        if args.json:  # each size as it is measured: the largest take hours
            write_json(args.json, record)
    for model, steps in record["growth"].items():
        for step in steps:
            print(f"growth {model} {step['from']} -> {step['to']}: "
                  + ", ".join(f"{s} n^{e}" for s, e in step.items() if s not in ("from", "to")))
    finish(record, record["machine"], args.json, log)


if __name__ == "__main__":
    main()

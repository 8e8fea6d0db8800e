"""Throughput of ``textcluster batch`` with one and two worker processes.

Workload: the class-subset protocol on Deng Cai's TDT2 matrix (the tf-idf of all 30 classes,
then the rows of k drawn classes), one model (default GNMF with its defaults), k = 2..5 with
``--draws`` draws per k: 16 jobs by default.

Contenders, each a complete ``run_batch`` into a fresh ledger (nothing skipped):

``pool-1``   the local executor with one worker process (``--jobs 1`` through the pool, so
             it pays the same start-up as ``pool-2``: spawning, imports, representing the
             corpus once in the worker); the worker gets both cores' threads.
``pool-2``   the local executor with two worker processes, one thread each.
``serial``   (``--serial``) the jobs in this process, as ``--jobs 1`` runs them.
``pool-1t``  (``--one-thread``) one worker process limited to one thread, as each ``pool-2``
             worker is: pool-2 / pool-1t is the pool's parallel efficiency, without the
             second thread that helps a lone worker.

Each sample records the wall time of the whole batch and, from the ledger, the span from
the first job's start to the last job's end (start-up excluded) and the mean time of a job
(``s/job``: a pool-1 job has both cores' threads, a pool-2 job one). Throughput = jobs per
minute.
Repeats are interleaved, the contenders in a new order every repeat, so they share the
machine's noise. Reported: medians, spreads, and the ratio of the median throughputs
pool-2 / pool-1 (target: at least 1.8 on two idle cores), plus the median of the per-repeat
(paired) ratios.

Run it on an idle machine (``uptime``: load below 1): other processes on the cores make the
two-worker figure meaningless. ``--json PATH`` writes every sample and the machine's state.

    python benchmarks/bench_batch_throughput.py --data-dir ../shared/data --json \
        benchmarks/results/batch_throughput.json
"""

import itertools
import os
import tempfile
from pathlib import Path

import numpy as np
import _common as common

from textcluster.batch import load_pipeline, load_results, run_batch
from textcluster.batch.executors import ProcessExecutor, SerialExecutor


PIPELINE = """
[pipeline]
name = "bench_batch_throughput"

[[corpora]]
name = "tdt2"

[[models]]
name = "{model}"

[protocol]
kind = "class-subset"
k = {{ from = {k_from}, to = {k_to} }}
draws = {draws}
seed = 0

[output]
dir = "{output}"
"""


def executor_for(name):
    if name == "serial":
        return SerialExecutor()
    executor = ProcessExecutor(int(name.split("-")[1].rstrip("t")))
    if name.endswith("t"):  # pool-1t: one worker with one thread, as each pool-2 worker has
        executor.threads = 1
    return executor


def one_sample(name, args, workdir, index):
    """Run the whole batch once with contender ``name``; returns its timings."""
    output = workdir / f"{name}-{index}"
    path = workdir / f"{name}-{index}.toml"
    path.write_text(PIPELINE.format(model=args.model, k_from=args.k_from, k_to=args.k_to,
                                    draws=args.draws, output=output.as_posix()),
                    encoding="utf-8")
    pipeline = load_pipeline(path, data_dir=str(args.data_dir))
    wall, summary = common.timed(run_batch, pipeline, executor_for(name), report=False)
    if summary.failed:
        raise SystemExit(f"{name}: {len(summary.failed)} jobs failed: {summary.failed[0][1]}")
    frame = load_results(pipeline.ledger_path)
    span = float(frame["finished"].max() - frame["started"].min())
    jobs = len(frame)
    return {"jobs": jobs, "wall_s": wall, "span_s": span,
            "jobs_per_min": 60 * jobs / wall, "jobs_per_min_span": 60 * jobs / span,
            "job_s_mean": float(frame["time.total"].mean()),
            "nmi_mean": float(frame["metric.nmi"].mean())}


def parse_args(argv=None):
    parser = common.benchmark_parser(__doc__, repeats=3)
    parser.add_argument("--model", default="gnmf")
    parser.add_argument("--k-from", type=int, default=2)
    parser.add_argument("--k-to", type=int, default=5)
    parser.add_argument("--draws", type=int, default=4)
    parser.add_argument("--serial", action="store_true", help="also time the in-process run")
    parser.add_argument("--one-thread", action="store_true",
                        help="also time one worker limited to one thread (pool-1t)")
    parser.add_argument("--max-load", type=float, default=1.0,
                        help="refuse to start when the 1-minute load average is above this")
    args = parser.parse_args(argv)
    args.data_dir = common.resolve_data_dir(args.data_dir)
    return args


def main(argv=None):
    args = parse_args(argv)
    load = os.getloadavg()[0]
    if load > args.max_load:
        raise SystemExit(f"load average {load:.2f} > {args.max_load}: the machine is busy and "
                         "the two-worker throughput would not mean anything; retry when it is "
                         "idle (or pass --max-load)")
    contenders = (["pool-1", "pool-2"] + (["pool-1t"] if args.one_thread else [])
                  + (["serial"] if args.serial else []))
    machine = common.machine_info()
    log = common.logger()
    index = itertools.count()  # a fresh output folder per sample

    def progress(r, samples):
        log(f"repeat {r + 1}/{args.repeats}: " + ", ".join(
            f"{name} {runs[-1]['jobs']} jobs in {runs[-1]['wall_s']:.1f} s "
            f"({runs[-1]['jobs_per_min']:.1f} jobs/min, in-job span "
            f"{runs[-1]['jobs_per_min_span']:.1f})" for name, runs in samples.items()))

    with tempfile.TemporaryDirectory() as tmp:
        samples = common.interleaved(
            {name: (lambda name=name: one_sample(name, args, Path(tmp), next(index)))
             for name in contenders}, args.repeats, progress)
    machine["load_average_at_end"] = common.load_average()
    result = report(args, samples, machine)
    if args.json:
        common.write_json(args.json, result)


def report(args, samples, machine):
    summary = {name: {key: common.summarize([s[key] for s in runs], keep_samples=False)
                      for key in ("jobs_per_min", "jobs_per_min_span", "wall_s", "job_s_mean")}
               for name, runs in samples.items()}
    ratio, span_ratio = (summary["pool-2"][key]["median"] / summary["pool-1"][key]["median"]
                         for key in ("jobs_per_min", "jobs_per_min_span"))
    paired = [b["jobs_per_min"] / a["jobs_per_min"]
              for a, b in zip(samples["pool-1"], samples["pool-2"])]
    print(f"TDT2 class subsets, {args.model}, k = {args.k_from}..{args.k_to}, {args.draws} draws "
          f"per k: {samples['pool-1'][0]['jobs']} jobs; medians over {args.repeats} repeats")
    print(f"{'contender':10s} {'jobs/min':>9s} {'(span)':>8s} {'wall s':>8s} {'s/job':>7s}")
    for name, stats in summary.items():
        print(f"{name:10s} {stats['jobs_per_min']['median']:9.1f} "
              f"{stats['jobs_per_min_span']['median']:8.1f} {stats['wall_s']['median']:8.1f} "
              f"{stats['job_s_mean']['median']:7.2f}")
    print(f"pool-2 / pool-1 throughput: {ratio:.2f} (paired median {np.median(paired):.2f}; "
          f"start-up excluded: {span_ratio:.2f}; target >= 1.8)")
    extra = {}
    if "pool-1t" in summary:
        extra["ratio_pool2_over_pool1t"] = (summary["pool-2"]["jobs_per_min"]["median"]
                                            / summary["pool-1t"]["jobs_per_min"]["median"])
        print(f"pool-2 / pool-1t throughput (one thread each): "
              f"{extra['ratio_pool2_over_pool1t']:.2f}")
    return {**extra, "benchmark": "bench_batch_throughput", "model": args.model,
            "k": [args.k_from, args.k_to], "draws": args.draws, "repeats": args.repeats,
            "machine": machine, "samples": samples, "summary": summary,
            "ratio_pool2_over_pool1": ratio, "paired_ratio_median": float(np.median(paired)),
            "span_ratio_pool2_over_pool1": span_ratio}


if __name__ == "__main__":
    main()

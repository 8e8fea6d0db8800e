"""What the benchmark scripts share: where the real corpora are, loading a tf-idf matrix,
interleaved timing and its summaries, machine information, BLAS thread limits, the common
command-line options and JSON output."""

import argparse
import contextlib
import json
import os
import platform
import sys
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import numpy as np
import scipy
import scipy.sparse as sp
import sklearn
from sklearn.exceptions import ConvergenceWarning
from threadpoolctl import threadpool_info, threadpool_limits

import textcluster

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA_DIR = REPO_ROOT.parent / "shared" / "data"
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                    "TEXTCLUSTER_THREADS")


# -- data ---------------------------------------------------------------------------------------


def resolve_data_dir(arg: str | None) -> Path:
    """``--data-dir``, else ``$TEXTCLUSTER_DATA``, else ``../shared/data`` beside the repo."""
    if arg:
        return Path(arg)
    if os.environ.get("TEXTCLUSTER_DATA"):
        return Path(os.environ["TEXTCLUSTER_DATA"])
    return DEFAULT_DATA_DIR


def load_tfidf(corpus: str, data_dir: Path | str):
    """The corpus' tf-idf matrix as ``textcluster run`` makes it, and the corpus."""
    from textcluster.corpora import load_corpus
    from textcluster.pipeline import represent

    representation = represent(load_corpus(corpus, data_dir=data_dir))
    return representation.X, representation.corpus


def load_matrix(corpus: str, args: argparse.Namespace, record: dict,
                log: Callable[[str], None]):
    """The corpus' tf-idf matrix from ``--data-dir``, which must be sparse; its shape goes in
    ``record["matrix"]`` and is printed with ``--k``."""
    X, _ = load_tfidf(corpus, resolve_data_dir(args.data_dir))
    if not sp.issparse(X):
        raise SystemExit(f"expected a sparse tf-idf matrix of {corpus}")
    log(f"{corpus} tf-idf loaded")
    record["matrix"] = {"shape": list(X.shape), "nnz": int(X.nnz), "dtype": str(X.dtype)}
    print(f"{corpus} {X.shape[0]} × {X.shape[1]} (nnz {X.nnz}), k = {args.k}")
    return X


# -- timing -------------------------------------------------------------------------------------


def timed(fn: Callable, *args, **kwargs) -> tuple[float, object]:
    """``(seconds, fn(*args, **kwargs))``, wall time by ``time.perf_counter``."""
    start = time.perf_counter()
    result = fn(*args, **kwargs)
    return time.perf_counter() - start, result


def interleaved(contenders: Mapping[str, Callable[[], object]], repeats: int,
                on_repeat: Callable[[int, dict], None] | None = None,
                before: Mapping[str, Callable[[], object]] | None = None) -> dict[str, list]:
    """Call every contender once per repeat, in a new order each repeat (a permutation seeded
    by the repeat's number) so that all of them share the machine's noise and none always
    runs right after the same other. ``before[name]``, where given, runs right before each
    call of ``name`` (e.g. the same work untimed, so that what the contender before left
    running, such as the BLAS threads scikit-learn leaves spinning, is not timed). Returns each
    contender's results in repeat order. ``on_repeat(r, results)`` runs after repeat ``r``
    (e.g. to log progress)."""
    results = {name: [] for name in contenders}
    for r in range(repeats):
        for name in np.random.default_rng(r).permutation(list(contenders)):
            if before and name in before:
                before[name]()
            results[name].append(contenders[name]())
        if on_repeat is not None:
            on_repeat(r, results)
    return results


def summarize(samples: Sequence[float], keep_samples: bool = True) -> dict:
    """Median, min, max, quartiles, IQR and count of ``samples`` (and the samples)."""
    a = np.asarray(samples, dtype=float)
    q1, median, q3 = np.percentile(a, [25, 50, 75])
    summary = {"median": float(median), "min": float(a.min()), "max": float(a.max()),
               "q1": float(q1), "q3": float(q3), "iqr": float(q3 - q1), "n": int(a.size)}
    if keep_samples:
        summary["samples"] = [float(x) for x in a]
    return summary


def fmt_ms(*seconds: float) -> str:
    """Seconds as milliseconds, each in a 9-character column."""
    return "".join(f"{value * 1e3:9.1f}" for value in seconds)


# -- machine ------------------------------------------------------------------------------------


def load_average() -> list | None:
    try:
        return list(os.getloadavg())
    except OSError:
        return None


def machine_info() -> dict:
    """CPUs, load average, library versions, thread settings and the BLAS/OpenMP pools (without
    their file paths: the JSON carries no machine paths)."""
    from textcluster.models import _linalg

    try:
        affinity = len(os.sched_getaffinity(0))
    except AttributeError:
        affinity = None
    return {
        "cpu_count": os.cpu_count(),
        "cpu_affinity": affinity,
        "load_average_at_start": load_average(),
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpu_model": cpu_model(),
        "python": sys.version.split()[0],
        "numpy": np.__version__,
        "scipy": scipy.__version__,
        "sklearn": sklearn.__version__,
        "textcluster": getattr(textcluster, "__version__", None),
        "textcluster_sparse_threads": _linalg.n_threads(),
        "env": {key: os.environ[key] for key in THREAD_VARIABLES if key in os.environ},
        "threadpools": [{key: value for key, value in pool.items() if key != "filepath"}
                        for pool in threadpool_info()],
    }


def cpu_model() -> str | None:
    """The CPU's model name, family and model numbers (Linux's ``/proc/cpuinfo``; None
    elsewhere): the ratios against scikit-learn move with the CPU (MKL's sparse products
    against SciPy's, on Intel and AMD), and a virtual machine may name only the vendor's line."""
    fields = {}
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            for line in info:
                key, _, value = line.partition(":")
                if not key.strip():  # the first processor's entry ends here
                    break
                fields.setdefault(key.strip(), value.strip())
    except OSError:
        return None
    name = fields.get("model name")
    if name is None:
        return None
    return f"{name} (family {fields.get('cpu family', '?')}, model {fields.get('model', '?')})"


def limit_blas(threads: int | None):
    """A context that limits the BLAS pools to ``threads`` (threadpoolctl); none when None."""
    if threads is None:
        return contextlib.nullcontext()
    return threadpool_limits(limits=threads, user_api="blas")


# -- command line and output --------------------------------------------------------------------


def positive_int(text: str) -> int:
    """An argparse type: a whole number of at least 1."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {text}")
    return value


def benchmark_parser(doc: str, repeats: int = 3) -> argparse.ArgumentParser:
    """A parser described by the first paragraph of ``doc``, with ``--data-dir``,
    ``--repeats`` and ``--json``."""
    parser = argparse.ArgumentParser(description=doc.strip().split("\n\n")[0])
    parser.add_argument("--data-dir", help="folder of the real corpora (default: "
                        "$TEXTCLUSTER_DATA, else ../shared/data beside the repository)")
    parser.add_argument("--repeats", type=positive_int, default=repeats,
                        help=f"interleaved repeats (default {repeats})")
    parser.add_argument("--json", metavar="PATH", type=Path,
                        help="also write the results to this JSON file")
    return parser


def model_parser(doc: str, repeats: int, k: int = 30) -> argparse.ArgumentParser:
    """:func:`benchmark_parser` with ``--k``, ``--seed``, ``--blas-threads`` and ``--quiet``,
    as the GNMF benchmarks take them."""
    parser = benchmark_parser(doc, repeats)
    parser.add_argument("--k", type=positive_int, default=k,
                        help=f"number of factors / clusters (default {k})")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--blas-threads", type=positive_int, default=None,
                        help="limit the BLAS pools (threadpoolctl) for the whole run, for every "
                        "contender (textcluster's fits use one BLAS thread anyway; its own "
                        "sparse-product threads follow $TEXTCLUSTER_THREADS) (default: no limit)")
    parser.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    return parser


def run_model_benchmark(benchmark: str, corpus: str, args: argparse.Namespace,
                        measure: Callable[..., None]) -> dict:
    """Run ``measure(args, record, log)`` under the ``--blas-threads`` limit, scikit-learn's
    convergence warnings silenced; ``record`` starts with what runs, on what, and the machine,
    and gets the load average at the end; written to ``--json`` if given."""
    log = logger(args.quiet)
    warnings.filterwarnings("ignore", category=ConvergenceWarning)
    with limit_blas(args.blas_threads):  # the whole run, every contender alike
        machine = machine_info()
        machine["blas_threads_option"] = args.blas_threads
        record = {"benchmark": benchmark, "corpus": corpus, "k": args.k, "seed": args.seed,
                  "machine": machine}
        measure(args, record, log)
    finish(record, machine, args.json, log)
    return record


def finish(record, machine, json_path, log):
    """Print the machine's load at the start and now; write ``record`` to ``json_path``."""
    machine["load_average_at_end"] = load_average()
    print(f"\nload average start {machine['load_average_at_start']}, end "
          f"{machine['load_average_at_end']}; {machine['cpu_count']} CPUs "
          "(shared machine: treat the numbers as indicative)")
    if json_path:
        write_json(json_path, record)
        log(f"wrote {json_path}")


def logger(quiet: bool = False) -> Callable[[str], None]:
    """A function printing timestamped progress lines on stderr (nothing when ``quiet``)."""

    def log(message):
        if not quiet:
            print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)

    return log


def write_json(path: Path | str, data) -> Path:
    """Write ``data`` as indented JSON (values JSON does not know as strings)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2, default=str) + "\n", encoding="utf-8")
    return path

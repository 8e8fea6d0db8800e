"""One AGPNMF iteration: textcluster against a direct dense transcription of paper 000.

The peer is paper 000's iteration written as printed (Pei, Wu & Chen 2014, eqs. 16–17, the
terms × documents orientation, float64, ``X`` dense): ``XᵀX`` formed once (outside the timed
iteration), then per iteration ``S ← S ⊙ (XᵀX + γ/2 HHᵀ) / (XᵀXS + αS + γ/4(…) + β/2)`` and
the H-update with every product evaluated left to right as written (``H Hᵀ XᵀX H`` …, ``D``
a dense diagonal matrix). The H-update is the corrected eq. 17 that textcluster uses (the
printed one is not monotone; see ``textcluster/models/projective.py``), so both compute the
same iterates: the script checks that they agree to ``--rtol`` (relative, float64).

``--start knn`` starts ``S`` on the documents' cosine kNN graph (AGPNMF's default) instead of
uniform random: textcluster then holds ``S`` on that support (its zeros stay zero) and
computes ``G`` and ``G S`` only there, while the peers iterate the same start as a dense
n × n ``S`` (the same iterates).

A second peer, ``dense-blas``, is the same iteration with the products associated well
(``(XᵀX)S`` as one BLAS-3 product, everything else thin) but still dense: it shows how much
comes from exploiting the sparsity of ``X`` rather than from associativity.

Data: the raw Reuters-21578 single-label corpus (9,494 documents) or TDT2, tf-idf as
``textcluster.pipeline.prepare.represent`` makes it; subsets of ``--sizes`` documents drawn at random
(seed 0) from the whole corpus. Timing: every contender runs one iteration from the same
start per sample, in a new order every repeat (interleaved); medians are reported.
Memory: each contender runs once more (precomputation and one iteration) in a child process
that loads the same subset; it reports the peak of the memory it allocated (tracemalloc, which
sees every NumPy and SciPy array; S is counted for every contender) and the process' peak
resident memory (VmHWM, which includes the interpreter and the imported libraries).

    python benchmarks/bench_agpnmf_iteration.py --data-dir ../shared/data \\
        --json benchmarks/results/agpnmf_iteration.json
"""

import json
import os
import resource
import subprocess
import sys
import tempfile
import tracemalloc
from pathlib import Path

import numpy as np
import scipy.sparse as sp
import _common as common

from textcluster.models import AGPNMF, _gram

GAMMA = ALPHA = BETA = 0.01  # paper 000's setting


# -- the peers: paper 000's iteration, dense, float64 ---------------------------------------
def s_update(XtX, H, S, gamma=GAMMA, alpha=ALPHA, beta=BETA):
    """Eq. 16 of paper 000, the S-rule (its one large product, ``XᵀX S``, is BLAS-3 as
    written)."""
    HHt = H @ H.T
    d = np.diag(HHt)
    return S * (XtX + 0.5 * gamma * HHt) / (
        XtX @ S + alpha * S + 0.25 * gamma * (d[:, None] + d[None, :]) + 0.5 * beta)


def paper_iteration(Xp, XtX, H, S, gamma=GAMMA, alpha=ALPHA, beta=BETA):
    """Eqs. 16–17 of paper 000 as printed (H-rule corrected), every product left to right."""
    S = s_update(XtX, H, S, gamma, alpha, beta)
    R = (S + S.T) / 2
    D = np.diag(R.sum(axis=0))
    numerator = 2 * XtX @ H + gamma * (D @ H + R @ H)
    denominator = H @ H.T @ XtX @ H + XtX @ H @ H.T @ H + 2 * gamma * D @ H
    H = H * np.cbrt(numerator / denominator)
    return H, S


def blas_iteration(Xp, XtX, H, S, gamma=GAMMA, alpha=ALPHA, beta=BETA):
    """The same iteration, dense, with the products associated to keep them thin."""
    S = s_update(XtX, H, S, gamma, alpha, beta)
    degree = 0.5 * (S.sum(axis=0) + S.sum(axis=1))
    RH = 0.5 * (S @ H + S.T @ H)
    KH = XtX @ H
    DH = degree[:, None] * H
    numerator = 2 * KH + gamma * (DH + RH)
    denominator = H @ (H.T @ KH) + KH @ (H.T @ H) + 2 * gamma * DH
    return H * np.cbrt(numerator / denominator), S


# -- textcluster's iteration ------------------------------------------------------------------
def textcluster_state(X, k, seed, start="random"):
    """Prepared context and a random start of AGPNMF (G formed once, like XᵀX above): the
    paper's reading of γ, ``S`` from ``start`` and the plain majorization step, as
    transcribed above."""
    model = AGPNMF(k, gamma=GAMMA, alpha=ALPHA, beta=BETA, scaling="paper",
                   start_graph=start, accelerate=False, random_state=seed)
    model._validate_params()
    ctx = model._prepare(X, None, None)
    factors = model._random_factors(ctx, np.random.RandomState(seed))
    return model, ctx, factors


def copy_factors(factors):
    """A fresh copy of a start (every array copied), so each sample starts from it."""
    return factors.copy()


def textcluster_iteration(model, ctx, factors):
    with common.limit_blas(1):  # as inside fit
        model._update(factors, ctx)
    return factors.H, dense(factors.S)


def dense(S):
    return S.toarray() if sp.issparse(S) else S


# -- data ---------------------------------------------------------------------------------------
def load_subsets(corpus, data_dir, sizes):
    X = sp.csr_matrix(common.load_tfidf(corpus, data_dir)[0])
    order = np.random.default_rng(0).permutation(X.shape[0])
    return {n: X[np.sort(order[:n])] for n in sizes if n <= X.shape[0]}, X.shape


# -- timing -------------------------------------------------------------------------------------
def time_contenders(X32, k, seed, repeats, rtol, log, start):
    X64 = X32.astype(np.float64)
    model64, ctx64, start64 = textcluster_state(X64, k, seed, start)
    model32, ctx32, start32 = textcluster_state(X32, k, seed, start)
    Xp = X64.T.toarray()  # the paper's X: terms × documents, dense
    XtX = Xp.T @ Xp
    H0, S0 = start64.H, dense(start64.S)
    contenders = {
        "textcluster-float64": lambda: textcluster_iteration(model64, ctx64,
                                                             copy_factors(start64)),
        "textcluster-float32": lambda: textcluster_iteration(model32, ctx32,
                                                             copy_factors(start32)),
        "paper-dense": lambda: paper_iteration(Xp, XtX, H0.copy(), S0.copy()),
        "dense-blas": lambda: blas_iteration(Xp, XtX, H0.copy(), S0.copy()),
    }
    results = {}  # each contender's last (H, S)

    def timing(name):
        def run():
            seconds, results[name] = common.timed(contenders[name])
            return seconds
        return run

    def progress(r, samples):
        log(f"  repeat {r + 1}/{repeats}: " + ", ".join(
            f"{name} {values[-1]:.3f} s" for name, values in samples.items()))

    samples = common.interleaved({name: timing(name) for name in contenders}, repeats, progress)
    return samples, compare(results, rtol)


def compare(results, rtol):
    """Relative max difference of each contender's H and S to the paper transcription's."""
    H_ref, S_ref = results["paper-dense"]
    out = {}
    for name, (H, S) in results.items():
        if name == "paper-dense":
            continue
        out[name] = {
            "H": float(np.abs(H - H_ref).max() / np.abs(H_ref).max()),
            "S": float(np.abs(S - S_ref).max() / np.abs(S_ref).max()),
        }
        if name != "textcluster-float32":  # float32 is reported, not held to rtol
            out[name]["within_rtol"] = bool(max(out[name]["H"], out[name]["S"]) <= rtol)
    return out


# -- memory (child processes) -----------------------------------------------------------------
def peak_rss_bytes():
    """This process' own peak resident memory (VmHWM: unlike ``ru_maxrss`` it does not
    inherit the parent's high-water mark across fork)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def child_memory(path, contender, k, seed, start):
    """Run one iteration of ``contender`` (its precomputation included) in this process and
    print its memory as JSON. The baseline is the sparse X and H; S is counted for both."""
    X32 = sp.load_npz(path).astype(np.float32)
    X = X32 if contender == "textcluster-float32" else X32.astype(np.float64)
    rng = np.random.RandomState(seed)
    H = rng.uniform(size=(X.shape[0], k)).astype(X.dtype)
    inputs = rss_bytes()
    tracemalloc.start()
    if contender.startswith("textcluster"):
        model, ctx, factors = textcluster_state(X, k, seed, start)
        textcluster_iteration(model, ctx, factors)
    else:
        S = _gram.random_square(rng, X.shape[0], X.dtype)
        Xp = X.T.toarray()
        XtX = Xp.T @ Xp
        (paper_iteration if contender == "paper-dense" else blas_iteration)(Xp, XtX, H, S)
    traced_peak = tracemalloc.get_traced_memory()[1]
    peak = peak_rss_bytes()
    print(json.dumps({"peak_rss": peak, "inputs_rss": inputs, "rss_above_inputs": peak - inputs,
                      "allocated_peak": traced_peak}))


def measure_memory(X32, k, seed, log, start):
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "X.npz"
        sp.save_npz(path, X32)
        for contender in ("textcluster-float32", "textcluster-float64", "paper-dense",
                          "dense-blas"):
            proc = subprocess.run(
                [sys.executable, __file__, "--child", str(path), contender, str(k), str(seed),
                 start],
                capture_output=True, text=True, check=True)
            out[contender] = json.loads(proc.stdout.strip().splitlines()[-1])
            log(f"  memory {contender}: peak RSS {out[contender]['peak_rss'] / 2**30:.2f} GiB, "
                f"peak allocated {out[contender]['allocated_peak'] / 2**30:.2f} GiB")
    return out


# -- report ---------------------------------------------------------------------------------------
def agpnmf_machine_info():
    """The machine, and the thresholds AGPNMF's projective steps choose their products by."""
    return {**common.machine_info(), "blas3_threads": _gram.BLAS3.threads,
            "sparse_slowdown": _gram.SPARSE_SLOWDOWN}


def main(argv=None):
    parser = common.benchmark_parser(__doc__, repeats=3)
    parser.add_argument("--corpus", default="reuters", choices=["reuters", "tdt2"])
    parser.add_argument("--sizes", type=int, nargs="+", default=[3000, 9494])
    parser.add_argument("--k", type=int, default=30)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rtol", type=float, default=1e-8)
    parser.add_argument("--start", default="random", choices=["random", "knn"],
                        help="where S starts: uniform random (the paper's) or on the kNN graph")
    parser.add_argument("--no-memory", action="store_true")
    parser.add_argument("--update", action="store_true",
                        help="replace only the measured sizes in an existing --json file")
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)
    log = common.logger(args.quiet)

    report = {"method": __doc__, "corpus": args.corpus, "start": args.start, "k": args.k,
              "gamma": GAMMA,
              "alpha": ALPHA, "beta": BETA, "repeats": args.repeats, "rtol": args.rtol,
              "machine_start": agpnmf_machine_info(), "sizes": {}}
    subsets, shape = load_subsets(args.corpus, common.resolve_data_dir(args.data_dir), args.sizes)
    report["corpus_shape"] = list(shape)
    for n, X in subsets.items():
        log(f"n = {n}: {X.shape[0]} × {X.shape[1]}, nnz {X.nnz}")
        samples, agreement = time_contenders(X, args.k, args.seed, args.repeats, args.rtol, log,
                                             args.start)
        timing = {name: common.summarize(values) for name, values in samples.items()}
        entry = {"shape": list(X.shape), "nnz": int(X.nnz), "timing_seconds": timing,
                 "agreement_with_paper_dense": agreement,
                 "ratio_paper_over_textcluster_float64":
                     timing["paper-dense"]["median"] / timing["textcluster-float64"]["median"],
                 "ratio_paper_over_textcluster_float32":
                     timing["paper-dense"]["median"] / timing["textcluster-float32"]["median"],
                 "ratio_dense_blas_over_textcluster_float64":
                     timing["dense-blas"]["median"] / timing["textcluster-float64"]["median"]}
        if not args.no_memory:
            entry["memory"] = measure_memory(X, args.k, args.seed, log, args.start)
        report["sizes"][str(n)] = entry
        print_table(n, entry)
    report["machine_end"] = agpnmf_machine_info()
    if args.json:
        write_report(args.json, report, args.update)


def write_report(path, report, update):
    """Write ``report``; with ``update``, merge its sizes (and their machine information)
    into the report already at ``path``."""
    if update and path.exists():
        previous = json.loads(path.read_text())
        for n, entry in report["sizes"].items():
            entry["machine"] = {"start": report["machine_start"], "end": report["machine_end"]}
            previous["sizes"][n] = entry
        report = previous
    common.write_json(path, report)


def print_table(n, entry):
    print(f"\nn = {n} documents ({entry['shape'][1]} terms, nnz {entry['nnz']}), one iteration:")
    for name, t in entry["timing_seconds"].items():
        memory = entry.get("memory", {}).get(name)
        extra = (f"  peak allocated {memory['allocated_peak'] / 2**30:6.2f} GiB, RSS "
                 f"{memory['peak_rss'] / 2**30:6.2f} GiB" if memory else "")
        print(f"  {name:22s} median {t['median']:9.3f} s  (min {t['min']:.3f}, "
              f"max {t['max']:.3f}){extra}")
    print(f"  paper-dense / textcluster-float64: "
          f"{entry['ratio_paper_over_textcluster_float64']:.1f}×; / float32: "
          f"{entry['ratio_paper_over_textcluster_float32']:.1f}×; dense-blas / float64: "
          f"{entry['ratio_dense_blas_over_textcluster_float64']:.1f}×")
    for name, a in entry["agreement_with_paper_dense"].items():
        verdict = f"; within rtol: {a['within_rtol']}" if "within_rtol" in a else ""
        print(f"  {name} vs paper-dense: H {a['H']:.2e}, S {a['S']:.2e} (relative max "
              f"difference{verdict})")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child_memory(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), sys.argv[6])
    else:
        main()

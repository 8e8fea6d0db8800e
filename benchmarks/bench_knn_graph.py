"""Exact against approximate kNN graphs of real documents: time and recall at several sizes.

``textcluster.graph.knn_graph(X, k, method="exact")`` (every similarity, blockwise sparse
products, O(n²)) against ``method="approximate"`` (pynndescent's NN-descent, the ``large``
extra, then an exact search for the share of rows it served worst) on the same tf-idf rows in
the same process.

The documents: every document of the panel's six text corpora (agnews, classic4, dbpedia, r8,
stackoverflow, biomedical) and every record of Reuters-21578 (its raw SGML files: labelled or
not), tokenized and weighted together as one corpus by ``textcluster.pipeline.represent``
(one vocabulary), and TDT2's documents (Deng Cai's term counts, weighted by ``represent`` on
their own terms, which no other document shares): 107,332 documents with terms in all. Each
size n is a random draw of n of them (``numpy.random.default_rng(--seed)``).

At each size, ``--repeats`` interleaved builds of the directed kNN graph of each method
(``weighting="cosine", symmetrize="none"``: each row's k neighbours and their similarities;
the cache of graphs cleared before each build) give the median times and their ratio, exact /
approximate. Recall: the share of the exact graph's directed edges the approximate graph has
(k per document); tie-aware: the share of the approximate graph's edges whose similarity
reaches the exact k-th neighbour's (another neighbour at the same similarity counts). The
approximate search's first use in the process compiles pynndescent's code (numba, every
process): that build is timed apart ("first") and is not among the samples.

    python benchmarks/bench_knn_graph.py --sizes 10000,30000,100000 \\
        --json benchmarks/results/knn_graph.json
"""

import json
import sys
import warnings
from pathlib import Path

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (benchmark_parser, finish, interleaved, logger,  # noqa: E402
                     machine_info, resolve_data_dir, summarize, timed)

from textcluster.corpora import Corpus, load_corpus  # noqa: E402
from textcluster.corpora.loaders.reuters import parse_sgm_file, reuters_files  # noqa: E402
from textcluster.graph import _approximate, clear_graph_cache, knn_graph  # noqa: E402
from textcluster.pipeline import represent  # noqa: E402

TEXT_CORPORA = ("agnews", "classic4", "dbpedia", "r8", "stackoverflow", "biomedical")


def pool_texts(data_dir):
    """Ids, texts and sources of the panel's text corpora and every Reuters-21578 record."""
    ids, texts, sources = [], [], []
    for name in TEXT_CORPORA:
        corpus = load_corpus(name, data_dir=data_dir)
        ids += [f"{name}/{i}" for i in corpus.ids]
        texts += list(corpus.texts)
        sources += [name] * corpus.n_docs
    records = [rec for path in reuters_files(data_dir) for rec in parse_sgm_file(path)]
    ids += [f"reuters/{rec['id']}" for rec in records]
    texts += [rec["text"] for rec in records]
    sources += ["reuters"] * len(records)
    return ids, texts, sources


def document_pool(data_dir, log):
    """The tf-idf rows of every document described above (CSR, unit rows) and their sources."""
    ids, texts, sources = pool_texts(data_dir)
    log(f"{len(texts)} texts; tokenizing and weighting them")
    text = represent(Corpus(name="knn-pool", ids=np.array(ids), labels=np.array(sources),
                            texts=texts))
    tdt2 = represent(load_corpus("tdt2", data_dir=data_dir))
    X = sp.block_diag([text.X, tdt2.X], format="csr")
    sources = np.concatenate([text.corpus.labels, np.full(tdt2.X.shape[0], "tdt2")])
    return X, sources


def directed(X, k, method):
    clear_graph_cache()
    return knn_graph(X, k, weighting="cosine", symmetrize="none", method=method)


def recall(exact, approximate):
    """(recall, tie-aware recall) of the approximate directed graph against the exact one."""
    found = exact.multiply(approximate > 0)
    reach = np.full(exact.shape[0], np.inf)
    coo = exact.tocoo()
    np.minimum.at(reach, coo.row, coo.data)
    approx = approximate.tocoo()
    good = approx.data >= reach[approx.row] - 1e-6  # float32 rows
    return found.nnz / exact.nnz, float(good.sum()) / exact.nnz


def measure(X, n, args, log):
    rows = np.sort(np.random.default_rng(args.seed).choice(X.shape[0], n, replace=False))
    Xn = X[rows]
    contenders = {method: (lambda m=method: timed(directed, Xn, args.k, m))
                  for method in ("exact", "approximate")}
    runs = interleaved(contenders, args.repeats,
                       lambda r, _: log(f"n = {n}: repeat {r + 1} of {args.repeats} done"))
    seconds = {m: summarize([t for t, _ in results]) for m, results in runs.items()}
    set_recall, tie_recall = recall(runs["exact"][-1][1], runs["approximate"][-1][1])
    ratio = seconds["exact"]["median"] / seconds["approximate"]["median"]
    print(f"{n:>8} {seconds['exact']['median']:10.1f} {seconds['approximate']['median']:10.1f}"
          f" {ratio:7.2f} {set_recall:8.4f} {tie_recall:8.4f}", flush=True)
    return {"n": n, "nnz": int(Xn.nnz), "seconds": seconds, "ratio_exact_over_approximate": ratio,
            "recall": set_recall, "recall_tie_aware": tie_recall}


def main():
    parser = benchmark_parser(__doc__, repeats=3)
    parser.add_argument("--sizes", default="10000,20000,30000,40000,100000",
                        help="numbers of documents, comma-separated")
    parser.add_argument("--k", type=int, default=5, help="neighbours per document (default 5)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the draws of documents")
    parser.add_argument("--search-neighbors", type=int, default=None,
                        help="neighbours per row of NN-descent (default: textcluster's, "
                             f"{_approximate.SEARCH_NEIGHBORS})")
    parser.add_argument("--search-options", type=json.loads, default=None,
                        help="NNDescent's other options as JSON (default: textcluster's, "
                             f"{json.dumps(_approximate.SEARCH_OPTIONS)})")
    parser.add_argument("--exact-share", type=float, default=None,
                        help="share of the rows searched exactly after NN-descent (default: "
                             f"textcluster's, {_approximate.EXACT_SHARE})")
    parser.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    args = parser.parse_args()
    log = logger(args.quiet)
    warnings.simplefilter("ignore")
    if args.search_neighbors is not None:
        _approximate.SEARCH_NEIGHBORS = args.search_neighbors
    if args.search_options is not None:
        _approximate.SEARCH_OPTIONS = args.search_options
    if args.exact_share is not None:
        _approximate.EXACT_SHARE = args.exact_share
    record = {"benchmark": "knn_graph", "k": args.k, "seed": args.seed,
              "search_neighbors": _approximate.SEARCH_NEIGHBORS,
              "search_options": _approximate.SEARCH_OPTIONS,
              "exact_share": _approximate.EXACT_SHARE,
              "exact_max_rows": _approximate.EXACT_MAX_ROWS, "machine": machine_info()}
    X, sources = document_pool(resolve_data_dir(args.data_dir), log)
    sizes = [min(int(s), X.shape[0]) for s in args.sizes.split(",")]
    names, counts = np.unique(sources, return_counts=True)
    record["pool"] = {"shape": list(X.shape), "nnz": int(X.nnz),
                      "sources": {s: int(c) for s, c in zip(names, counts)}}
    print(f"pool: {X.shape[0]} documents × {X.shape[1]} terms (nnz {X.nnz}), k = {args.k}, "
          f"NN-descent: {_approximate.SEARCH_NEIGHBORS} neighbours, {_approximate.SEARCH_OPTIONS}, "
          f"then {_approximate.EXACT_SHARE:.0%} of the rows (at most "
          f"{_approximate.EXACT_MAX_ROWS}) exactly")
    first, _ = timed(directed, X[:2000], args.k, "approximate")
    record["first_approximate_seconds_2000_rows"] = first
    print(f"first approximate build in this process (2,000 rows, compilation included): "
          f"{first:.1f} s\n")
    print(f"{'n':>8} {'exact s':>10} {'approx s':>10} {'ratio':>7} {'recall':>8} {'tie-rec':>8}")
    record["sizes"] = [measure(X, n, args, log) for n in sizes]
    finish(record, record["machine"], args.json, log)


if __name__ == "__main__":
    main()

"""Preprocessing throughput: documents per second of ``count_terms`` (tokenize + count).

Contenders, on the same texts in the same process, interleaved in a new order every repeat,
each with a fresh Analyzer (an empty memo of pieces):

* ``today``: spaCy's tokenizer on every whole text in one process (``Analyzer.reference``,
  what ``count_terms`` did before the memo and the worker processes);
* ``memo-1``: ``count_terms(..., n_jobs=1)``: the memo of pieces, one process;
* ``parallel``: ``count_terms(..., n_jobs=None)``: worker processes, one per core this process
  may use, fed from a generator;
* ``sklearn-regex``: scikit-learn's ``CountVectorizer()`` with its default regex tokenizer
  (the floor of a pure-regex tokenizer; other tokens).

The counts of ``memo-1`` and ``parallel`` are checked to be identical to ``today``'s. A
profile of ``today`` splits its time into spaCy's tokenizer, reading the tokens' text, the
filtering (case, word pattern, stop words, normalization) and the counting.
"""

import sys
import time
from pathlib import Path

import numpy as np
from sklearn.feature_extraction.text import CountVectorizer

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (benchmark_parser, interleaved, logger, machine_info,  # noqa: E402
                     resolve_data_dir, summarize, write_json)

import textcluster  # noqa: E402
from textcluster.text.tfidf import available_cores, count_terms  # noqa: E402
from textcluster.text.tokenize import Analyzer, _spacy_tokenizer  # noqa: E402


class _Today(Analyzer):
    """The Analyzer as it was: spaCy on the whole text, no memo."""

    def __call__(self, text):
        return self.reference(text)


def profile(texts):
    tokenizer = _spacy_tokenizer()
    analyzer = Analyzer()
    t0 = time.perf_counter()
    docs = [tokenizer(t) for t in texts]
    t1 = time.perf_counter()
    tokens = [[t.text for t in d] for d in docs]
    t2 = time.perf_counter()
    terms = [analyzer._terms(ts) for ts in tokens]
    t3 = time.perf_counter()
    CountVectorizer(analyzer=lambda x: x).fit_transform(terms)
    t4 = time.perf_counter()
    return {"spacy_tokenizer": t1 - t0, "token_text": t2 - t1, "filter_normalize": t3 - t2,
            "count": t4 - t3}


def main():
    parser = benchmark_parser(__doc__)
    parser.add_argument("--corpora", default="reuters",
                        help="comma-separated corpus names whose texts are joined (reuters)")
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args()
    log = logger(args.quiet)
    data_dir = resolve_data_dir(args.data_dir)
    texts = []
    for name in args.corpora.split(","):
        texts += list(textcluster.load_corpus(name, data_dir=data_dir).texts)
    n = len(texts)
    log(f"{n} documents from {args.corpora}")
    reference = count_terms(texts, _Today(), n_jobs=1)
    contenders = {
        "today": lambda: count_terms(texts, _Today(), n_jobs=1),
        "memo-1": lambda: count_terms(texts, Analyzer(), n_jobs=1),
        "parallel": lambda: count_terms((t for t in texts), Analyzer(), n_jobs=None),
        "sklearn-regex": lambda: CountVectorizer(dtype=np.float64).fit_transform(texts),
    }
    seconds = {name: [] for name in contenders}

    def run(name):
        start = time.perf_counter()
        out = contenders[name]()
        seconds[name].append(time.perf_counter() - start)
        if name in ("memo-1", "parallel"):
            counts, vocabulary = out
            same = (np.array_equal(vocabulary, reference[1])
                    and np.array_equal(counts.indptr, reference[0].indptr)
                    and np.array_equal(counts.indices, reference[0].indices)
                    and np.array_equal(counts.data, reference[0].data))
            if not same:
                raise SystemExit(f"{name}: counts differ from today's")

    interleaved({name: (lambda name=name: run(name)) for name in contenders}, args.repeats,
                lambda r, _: log(f"repeat {r + 1}/{args.repeats} done"))
    med = {name: float(np.median(s)) for name, s in seconds.items()}
    rate = {name: n / med[name] for name in med}
    prof = profile(texts)
    print(f"{n} documents ({args.corpora}), {available_cores()} cores, medians of "
          f"{args.repeats}")
    print(f"{'contender':15}{'docs/s':>10}{'seconds':>10}{'× today':>10}")
    for name in contenders:
        print(f"{name:15}{rate[name]:10.0f}{med[name]:10.2f}{rate[name] / rate['today']:10.2f}")
    print("profile of today (s): " + ", ".join(f"{k} {v:.2f}" for k, v in prof.items()))
    if args.json:
        write_json(args.json, {
            "benchmark": "preprocess", "machine": machine_info(), "corpus": args.corpora,
            "n_docs": n, "repeats": args.repeats, "cores": available_cores(),
            "seconds": {name: summarize(s) for name, s in seconds.items()},
            "docs_per_second": rate,
            "ratio_parallel_over_today": rate["parallel"] / rate["today"],
            "ratio_memo1_over_today": rate["memo-1"] / rate["today"],
            "sklearn_regex_floor_docs_per_second": rate["sklearn-regex"],
            "profile_today_seconds": prof, "counts_identical": True,
        })


if __name__ == "__main__":
    main()

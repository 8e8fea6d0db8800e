"""Threads for the hot loops (SciPy's sparse products release the GIL) and for k-means."""

import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, nullcontext
from functools import lru_cache
from typing import TypeVar

import scipy.sparse as sp
from threadpoolctl import ThreadpoolController

# multiply-adds of one Lloyd iteration (rows' entries × clusters) below which scikit-learn's
# k-means runs in one OpenMP thread (see kmeans_threads; benchmarks/bench_kmeans_threads.py)
SMALL_KMEANS_WORK = 3 * 10**7
T = TypeVar("T")
R = TypeVar("R")


def n_threads() -> int:
    """Threads for sparse products: ``$TEXTCLUSTER_THREADS``, else the cores this process
    may use (batch workers set the variable to avoid oversubscription)."""
    if os.environ.get("TEXTCLUSTER_THREADS"):
        return max(1, int(os.environ["TEXTCLUSTER_THREADS"]))
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


@lru_cache(maxsize=4)
def thread_pool(workers: int) -> ThreadPoolExecutor:
    return ThreadPoolExecutor(workers, thread_name_prefix="textcluster-spmm")


def each(work: Callable[[T], R], items: Sequence[T], workers: int | None = None) -> list[R]:
    """``[work(item) for item in items]`` in their order, in at most ``workers`` threads (one
    per item by default) when there are several: the calling thread and ``workers − 1`` of
    the pool take the next item in turn. The caller works instead of waiting, one hand-over
    less per call (one default GNMF iteration on TDT2 makes eight such calls: 13.7 against
    14.7 ms with the pool's ``map``, medians of 15, alternated); a helper that has not
    started when the items are done is dropped, so a pool kept busy by another caller never
    holds this one up."""
    workers = min(len(items), workers or len(items))
    if workers < 2:
        return [work(item) for item in items]
    results: list = [None] * len(items)
    pending = iter(range(len(items)))
    lock = threading.Lock()

    def take_turns():
        while True:
            with lock:
                i = next(pending, None)
            if i is None:
                return
            results[i] = work(items[i])

    helpers = [thread_pool(workers - 1).submit(take_turns) for _ in range(workers - 1)]
    try:
        take_turns()
    finally:
        for helper in helpers:
            if not helper.cancel():
                helper.result()
    return results


def kmeans_threads(rows, n_clusters: int) -> AbstractContextManager:
    """The OpenMP threads for scikit-learn's k-means of ``rows`` (dense or sparse) into
    ``n_clusters``: one when a Lloyd iteration is small (:data:`SMALL_KMEANS_WORK`), else its
    default. Every iteration waits for all of k-means' threads; when another process holds a
    core, the thread that shares it runs late, and an iteration of a millisecond or two then
    waits several times its own work. Threads pay only where an iteration is long against
    that wait. Measured on TDT2, 2 cores (``benchmarks/bench_kmeans_threads.py``): five starts
    on the 9,394 × 30 LSA rows (8.5 M multiply-adds an iteration) 0.17 s in one thread, 0.60 s
    in two beside a process spinning on one core, 0.16 and 0.13 s idle; three starts on the
    tf-idf rows (37 M) 4.3 and 4.9 s busy, 4.2 and 2.8 s idle; the default GNMF run (about
    100 k-means starts on its document factor) 13.2 s with this rule against 14.6 s busy,
    9.7 against 10.0 s idle. The clusters found do not depend on the threads."""
    work = (rows.nnz if sp.issparse(rows) else rows.size) * n_clusters
    if work >= SMALL_KMEANS_WORK:
        return nullcontext()
    return one_thread("openmp")


def one_thread(user_api: str | None = None) -> AbstractContextManager:
    """Every thread pool (or those of ``user_api``: "blas", "openmp") limited to one thread
    while in the context. OpenMP's limit holds for the calling thread only; BLAS's for the
    process."""
    return _controller().limit(limits=1, user_api=user_api)


@lru_cache(maxsize=1)
def _controller() -> ThreadpoolController:
    """The process's thread pools, found once (``threadpool_limits`` searches the loaded
    libraries on every call, about 1 ms; a choice of k runs a few hundred small k-means)."""
    return ThreadpoolController()

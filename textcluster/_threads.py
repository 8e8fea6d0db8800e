"""Threads for the hot loops (SciPy's sparse products release the GIL)."""

import os
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache


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

"""Where jobs run: in this process, in a local process pool, or on a Dask cluster.

An executor's ``run(fn, jobs)`` yields ``(job, outcome)`` as jobs finish (in any order), where
``outcome`` is ``fn(job)`` or the exception that kept ``fn`` from returning (a worker that
died, a lost connection). ``fn`` must be importable by name (it is sent to other processes).

Threads: ``n`` workers on ``c`` cores each get ``max(1, c // n)`` threads for BLAS, OpenMP and
textcluster's sparse products (``TEXTCLUSTER_THREADS``), so they do not oversubscribe the
cores. The variables are in the workers' environment before they import NumPy.
"""

import multiprocessing
import os
import threading
import time
from collections import deque
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager

THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                    "BLIS_NUM_THREADS", "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS",
                    "TEXTCLUSTER_THREADS")
_thread_limits = None  # the worker's threadpoolctl limits, kept alive for its lifetime


def available_cores():
    """The cores this process may run on (``TEXTCLUSTER_THREADS`` aside: workers share the
    machine's cores, whatever this process was told to use)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def threads_per_worker(n_workers, cores=None):
    """Threads each of ``n_workers`` concurrent jobs may use: ``max(1, cores // n_workers)``."""
    return max(1, (cores or available_cores()) // max(1, n_workers))


@contextmanager
def thread_environment(threads):
    """Within the block, processes started by this one inherit ``threads`` in every
    :data:`THREAD_VARIABLES`; the variables are restored afterwards."""
    saved = {name: os.environ.get(name) for name in THREAD_VARIABLES}
    os.environ.update({name: str(threads) for name in THREAD_VARIABLES})
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def limit_threads(threads):
    """Limit this process' BLAS/OpenMP pools and textcluster's threads to ``threads``."""
    global _thread_limits
    from threadpoolctl import threadpool_limits

    os.environ.update({name: str(threads) for name in THREAD_VARIABLES})
    _thread_limits = threadpool_limits(limits=threads)


def _init_worker(threads, parent_pid):
    """Pool worker start-up: thread limits, and exit when the batch process is gone (a
    killed batch must not leave workers behind)."""
    limit_threads(threads)
    threading.Thread(target=_exit_with_parent, args=(parent_pid,), daemon=True).start()


def _worker_pid(_):
    return os.getpid()


def _exit_with_parent(parent_pid, interval=1.0):
    while os.getppid() == parent_pid:
        time.sleep(interval)
    os._exit(1)


class SerialExecutor:
    """Jobs one after another in this process (``--jobs 1``)."""

    name = "serial"

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def run(self, fn, jobs):
        for job in jobs:
            try:
                yield job, fn(job)
            except Exception as exc:  # noqa: BLE001 - recorded as the job's failure
                yield job, exc


class ProcessExecutor:
    """A pool of ``n_workers`` processes (start method ``spawn``: a fresh interpreter with the
    thread variables set before NumPy loads). At most two jobs per worker are queued, so a
    worker that dies (out of memory, killed) costs only the jobs it held; the pool is then
    restarted for the rest."""

    name = "local"

    def __init__(self, n_workers, start_method="spawn"):
        self.n_workers = n_workers
        self.threads = threads_per_worker(n_workers)
        self._context = multiprocessing.get_context(start_method)
        self._pool = None

    def __enter__(self):
        return self

    def __exit__(self, exc_type, *exc):
        self._shutdown(terminate=exc_type is not None)
        return False

    def _start(self):
        with thread_environment(self.threads):
            self._pool = ProcessPoolExecutor(
                self.n_workers, mp_context=self._context, initializer=_init_worker,
                initargs=(self.threads, os.getpid()),
            )
            # Start every worker now, while the environment holds the thread limits.
            list(self._pool.map(_worker_pid, range(self.n_workers)))

    def _shutdown(self, terminate=False):
        """Stop the pool; ``terminate``: do not wait for running jobs (interrupted batch)."""
        if self._pool is None:
            return
        if terminate:
            for process in list(getattr(self._pool, "_processes", {}).values()):
                process.terminate()
        self._pool.shutdown(wait=not terminate, cancel_futures=True)
        self._pool = None

    def run(self, fn, jobs):
        queue, running = deque(jobs), {}
        while queue or running:
            if self._pool is None:
                self._start()
            broken = self._fill(fn, queue, running)
            if not broken:
                done, _ = wait(running, return_when=FIRST_COMPLETED)
                broken = any(isinstance(f.exception(), BrokenProcessPool) for f in done)
            if broken:
                yield from self._drain_broken(running)
                continue
            for future in done:
                job = running.pop(future)
                yield job, (future.exception() or future.result())

    def _fill(self, fn, queue, running):
        while queue and len(running) < 2 * self.n_workers:
            job = queue.popleft()
            try:
                running[self._pool.submit(fn, job)] = job
            except BrokenProcessPool:
                queue.appendleft(job)
                return True
        return False

    def _drain_broken(self, running):
        """Report the jobs the broken pool held and start a new pool."""
        message = ("a worker process died while running this job or one beside it (killed, "
                   "out of memory, or crashed); it will be retried on the next run")
        for future, job in list(running.items()):
            if future.done() and not isinstance(future.exception(), BrokenProcessPool):
                yield job, (future.exception() or future.result())
            else:
                yield job, RuntimeError(message)
        running.clear()
        self._shutdown(terminate=True)


class DaskExecutor:
    """Jobs on a Dask cluster: the scheduler at ``address``, or a ``LocalCluster`` of
    ``n_workers`` single-threaded worker processes when no address is given.

    Each worker process keeps its own cache of represented corpora, as a pool worker does.
    A job gets ``cores // t`` threads, with ``t`` the worker threads (concurrent jobs) on its
    machine, so workers that share a machine do not oversubscribe its cores; the same number
    of jobs at once on the same machine gives the local pool's threads and results.
    """

    name = "dask"

    def __init__(self, address=None, n_workers=1):
        self.address, self.n_workers = address, n_workers
        self._client = self._cluster = None

    def __enter__(self):
        from distributed import Client, LocalCluster

        if self.address is None:
            with thread_environment(threads_per_worker(self.n_workers)):
                self._cluster = LocalCluster(n_workers=self.n_workers, threads_per_worker=1,
                                             processes=True, dashboard_address=None)
            self._client = Client(self._cluster)
        else:
            self._client = Client(self.address, timeout="30s")
        return self

    def __exit__(self, *exc):
        if self._client is not None:
            self._client.close()
        if self._cluster is not None:
            self._cluster.close()
        return False

    def run(self, fn, jobs):
        from distributed import as_completed

        threads = self._threads_by_worker()
        futures = {}
        for job in jobs:
            future = self._client.submit(_dask_task, fn, job, threads, key=f"job-{job.key}",
                                         pure=False)
            futures[future] = job
        for future in as_completed(futures):
            job = futures.pop(future)
            try:
                outcome = future.result()
            except Exception as exc:  # noqa: BLE001 - a lost worker, recorded as a failure
                outcome = exc
            future.release()
            yield job, outcome

    def _threads_by_worker(self):
        """``{worker address: threads per job}``: the cores of the worker's machine divided
        by the worker threads on that machine."""
        workers = self._client.scheduler_info(n_workers=-1)["workers"]
        cores = self._client.run(available_cores)
        on_host = {}
        for info in workers.values():
            on_host[info["host"]] = on_host.get(info["host"], 0) + info["nthreads"]
        return {address: threads_per_worker(on_host[info["host"]], cores.get(address))
                for address, info in workers.items()}


def _dask_task(fn, job, threads_by_worker):
    """``fn(job)`` on a Dask worker, within the worker's share of its machine's cores."""
    from distributed import get_worker
    from threadpoolctl import threadpool_limits

    worker = get_worker()
    threads = threads_by_worker.get(worker.address) or threads_per_worker(worker.state.nthreads)
    os.environ["TEXTCLUSTER_THREADS"] = str(threads)
    with threadpool_limits(limits=threads):
        return fn(job)


def make_executor(kind="local", n_workers=1, scheduler=None):
    """The executor for the command line's ``--executor``, ``--jobs``, ``--scheduler``."""
    if kind == "dask" or scheduler is not None:
        return DaskExecutor(scheduler, n_workers)
    if n_workers == 1:
        return SerialExecutor()
    return ProcessExecutor(n_workers)

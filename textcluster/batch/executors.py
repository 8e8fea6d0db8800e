"""Where jobs run: in this process, in a local process pool, or on a Dask cluster.

An executor's ``run(fn, jobs)`` takes the jobs as they are needed (``jobs`` may be a
generator) and yields ``(job, outcome)`` as jobs finish (in any order), where ``outcome`` is
``fn(job)`` or the exception that kept ``fn`` from returning (a worker that died, a lost
connection). ``fn`` must be importable by name (it is sent to other processes).

A pool worker that dies (killed, out of memory, crashed — at start-up or in a job) breaks the
pool: each job the pool held yields a :class:`WorkerDiedError` naming it and is run again,
alone, in a new pool, up to :data:`MAX_ATTEMPTS` times; its last attempt's outcome is final.

Threads: ``n`` workers on ``c`` cores each get ``max(1, c // n)`` threads for BLAS, OpenMP and
textcluster's sparse products (``TEXTCLUSTER_THREADS``), so they do not oversubscribe the
cores. The variables are in the workers' environment before they import NumPy.
"""

import itertools
import multiprocessing
import os
import threading
import time
from collections import deque
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager

from .._compat import require
from .._errors import TextclusterError
from .faults import fault_point

THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                    "BLIS_NUM_THREADS", "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS",
                    "TEXTCLUSTER_THREADS")
_thread_limits = None  # the worker's threadpoolctl limits, kept alive for its lifetime
MAX_ATTEMPTS = 3  # runs of a job whose worker died, before it is recorded as failed
MAX_BREAKS = 10  # pool breaks in a row, with no job finished between them, before giving up


class WorkerDiedError(TextclusterError, RuntimeError):
    """The worker process running a job died. ``attempt``: which run of the job it was;
    ``retry``: whether the job is run again."""

    def __init__(self, job, attempt, retry):
        self.job, self.attempt, self.retry = job, attempt, retry
        what = f"the worker process running the job {describe_job(job)}"
        if retry:
            message = (f"attempt {attempt} of {MAX_ATTEMPTS} died: {what} died (killed, out of "
                       "memory, or crashed); it is run again")
        else:
            message = (f"{what} died on each of its {MAX_ATTEMPTS} attempts (killed, out of "
                       "memory, or crashed); it is recorded as failed. Check the memory it "
                       "needs (e.g. run the batch with --jobs 1); the next run of the batch "
                       "tries it again")
        super().__init__(message)


class WorkersKeepDyingError(TextclusterError, RuntimeError):
    """The pool's workers died again and again without finishing a job."""


def describe_job(job):
    """``key (corpus …, model …, k=…, draw …, seed …)`` of a batch job, else its repr."""
    if not hasattr(job, "key"):
        return repr(job)
    return (f"{job.key} (corpus {job.corpus}, model {job.model}"
            f"{f' {job.variant}' if job.variant else ''}, k={job.k}, draw {job.draw}, "
            f"seed {job.seed})")


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


def _worker_pid(_):  # kept for pools started by earlier versions
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
    worker that dies costs only the jobs the pool held; those are then run again one at a
    time in a new pool (see the module's docstring)."""

    name = "local"

    def __init__(self, n_workers, start_method="spawn"):
        self.n_workers = n_workers
        self.threads = threads_per_worker(n_workers)
        self._context = multiprocessing.get_context(start_method)
        self._pool = None
        self._starting = False  # no job submitted to the pool yet

    def __enter__(self):
        return self

    def __exit__(self, exc_type, *exc):
        self._shutdown(terminate=exc_type is not None)
        return False

    def _start(self):
        self._pool = ProcessPoolExecutor(
            self.n_workers, mp_context=self._context, initializer=_init_worker,
            initargs=(self.threads, os.getpid()),
        )
        self._starting = True

    def _submit(self, fn, job):
        """Submit ``job``; workers start as jobs are submitted, with the thread limits in
        their environment."""
        with thread_environment(self.threads):
            future = self._pool.submit(fn, job)
        if self._starting:
            self._starting = False
            fault_point("pool-start")
        return future

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
        jobs = iter(jobs)
        again = deque()  # (job, attempts that died): run alone, one after another
        running = {}  # future -> (job, attempts that died)
        breaks = 0  # pool breaks since a job last finished
        while True:
            if self._pool is None:
                self._start()
            broken = self._fill(fn, jobs, again, running)
            if not running and not broken:
                return
            if not broken:
                done, _ = wait(running, return_when=FIRST_COMPLETED)
                broken = any(isinstance(f.exception(), BrokenProcessPool) for f in done)
            if broken:
                breaks += 1
                yield from self._drain_broken(running, again, breaks)
                continue
            breaks = 0
            for future in done:
                job, _ = running.pop(future)
                yield job, (future.exception() or future.result())

    def _fill(self, fn, jobs, again, running):
        """Submit jobs while there is room (two per worker), except that a job whose worker
        died runs alone: nothing else is submitted while one waits or runs. True when the
        pool was found broken."""
        while True:
            alone = again or any(died for _, died in running.values())
            if running and (alone or len(running) >= 2 * self.n_workers):
                return False
            if again:
                job, died = again.popleft()
            else:
                job, died = next(jobs, None), 0
                if job is None:
                    return False
            try:
                running[self._submit(fn, job)] = (job, died)
            except (BrokenProcessPool, OSError):  # OSError: a worker could not be started
                again.appendleft((job, died))  # it never ran: first into the new pool
                return True

    def _drain_broken(self, running, again, breaks):
        """Yield the outcomes of the jobs the broken pool held: a finished job's result, else a
        :class:`WorkerDiedError`; those with attempts left go to ``again``. Then stop the
        pool (a new one is started for the rest)."""
        wait(running)  # a broken pool fails every job it still holds
        for future, (job, died) in running.items():
            error = future.exception()
            if not isinstance(error, BrokenProcessPool):
                yield job, (error or future.result())
                continue
            died += 1
            yield job, WorkerDiedError(job, died, retry=died < MAX_ATTEMPTS)
            if died < MAX_ATTEMPTS:
                again.append((job, died))
        running.clear()
        self._shutdown(terminate=True)
        if breaks >= MAX_BREAKS:
            raise WorkersKeepDyingError(
                f"the worker processes died {breaks} times in a row without finishing a job: "
                "they cannot start, or the jobs kill them. Check that `python -c \"import "
                "textcluster.batch.runner\"` works, and the memory available, or run with "
                "--jobs 1. The results recorded so far are kept; run the same command again "
                "to go on"
            )



class DaskExecutor:
    """Jobs on a Dask cluster: the scheduler at ``address``, or a ``LocalCluster`` of
    ``n_workers`` single-threaded worker processes when no address is given. Two jobs per
    worker thread are submitted at a time; a job whose worker dies is retried by Dask
    (``distributed.scheduler.allowed-failures`` times) before it fails.

    Each worker process keeps its own cache of represented corpora, as a pool worker does.
    A job gets ``cores // t`` threads, with ``t`` the worker threads (concurrent jobs) on its
    machine, so workers that share a machine do not oversubscribe its cores; the same number
    of jobs at once on the same machine gives the local pool's threads and results.
    """

    name = "dask"

    def __init__(self, address=None, n_workers=1):
        require("distributed", extra="dask", package="dask[distributed]",
                feature="textcluster batch --executor dask")
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
        in_flight = 2 * max(1, sum(self._client.nthreads().values()))
        futures, completed = {}, as_completed()

        def submit(job):
            future = self._client.submit(_dask_task, fn, job, threads, key=f"job-{job.key}",
                                         pure=False)
            futures[future] = job
            completed.add(future)

        jobs = iter(jobs)
        for job in itertools.islice(jobs, in_flight):
            submit(job)
        for future in completed:
            job = futures.pop(future)
            try:
                outcome = future.result()
            except Exception as exc:  # noqa: BLE001 - a lost worker, recorded as a failure
                outcome = exc
            future.release()
            yield job, outcome
            following = next(jobs, None)
            if following is not None:
                submit(following)

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

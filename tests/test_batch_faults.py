"""The batch runner under faults: dying workers, SIGKILLs at many points, a full disk and
writes that fail mid-transaction. After each, a resume gives exactly one result per job, with
the metrics of an uninterrupted run."""

import os
import random
import shutil
import signal
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest

from textcluster.batch import load_pipeline, load_results, make_executor, run_batch
from textcluster.batch import executors, runner

from ._batch import write_pipeline, write_planted_mat

TOKEN = "TEXTCLUSTER_TEST_DIE_TOKEN"  # a file: the first worker that removes it dies


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    return write_planted_mat(tmp_path_factory.mktemp("faults-data"))


def _die_once_at_start_up(threads, parent_pid):  # a pool worker's initializer
    try:
        Path(os.environ[TOKEN]).unlink()
    except FileNotFoundError:
        return executors.limit_threads(threads)
    os.kill(os.getpid(), signal.SIGKILL)


def _kill_worker_on_nmf_k3(job):  # runs in a pool worker instead of run_recorded
    if job.model == "nmf" and job.k == 3:
        os.kill(os.getpid(), signal.SIGKILL)
    return runner.run_recorded(job)


@pytest.mark.slow
def test_a_dying_worker_is_recorded_and_retried_and_the_batch_goes_on(tmp_path, data_dir,
                                                                     monkeypatch):
    """A worker killed during the pool's start-up costs a failed attempt of the jobs it was
    given, which then run again; a job that kills its worker every time is given up after
    MAX_ATTEMPTS attempts with a clear error; every other job is done."""
    token = tmp_path / "die"
    token.touch()
    monkeypatch.setenv(TOKEN, str(token))
    monkeypatch.setattr(executors, "_init_worker", _die_once_at_start_up)
    monkeypatch.setattr(runner, "run_recorded", _kill_worker_on_nmf_k3)
    pipeline = write_pipeline(tmp_path / "p.toml", output=tmp_path / "out", k="[2, 3]",
                              draws=1)
    summary = run_batch(load_pipeline(pipeline, data_dir=str(data_dir)),
                        make_executor("local", 2), report=False)
    assert not token.exists()  # a worker died at start-up
    frame = load_results(tmp_path / "out").set_index(["model", "k"])
    assert summary.done == 3 and [(j.model, j.k) for j, _ in summary.failed] == [("nmf", 3)]
    error = frame.loc[("nmf", 3), "error"]
    assert frame.loc[("nmf", 3), "status"] == "failed"
    assert f"died on each of its {executors.MAX_ATTEMPTS} attempts" in error
    assert "corpus tdt2, model nmf, k=3" in error
    assert (frame.drop(index=("nmf", 3))["status"] == "done").all()
    # Every attempt that died was recorded, naming its job.
    assert summary.retried and all(job.key in message for job, message in summary.retried)
    died_at_start = {job.key for job, _ in summary.retried} - {frame.loc[("nmf", 3), "key"]}
    assert died_at_start  # the jobs given to the pool when the worker died
    notes = frame.set_index("key").loc[sorted(died_at_start), "error"]
    assert notes.str.contains("attempt 1 of 3 died").all()


def _always_die(threads, parent_pid):  # a pool worker's initializer
    os.kill(os.getpid(), signal.SIGKILL)


@pytest.mark.slow
def test_workers_that_cannot_start_stop_the_batch_with_a_clear_error(tmp_path, data_dir,
                                                                     monkeypatch):
    """When every worker dies at start-up the batch gives up after MAX_BREAKS pool breaks in
    a row (here 2) instead of trying every job: a clear error, the attempts recorded."""
    from textcluster.batch.executors import WorkersKeepDyingError

    monkeypatch.setattr(executors, "_init_worker", _always_die)
    monkeypatch.setattr(executors, "MAX_BREAKS", 2)
    pipeline = write_pipeline(tmp_path / "p.toml", output=tmp_path / "out", k="[2, 3]",
                              draws=1)
    with pytest.raises(WorkersKeepDyingError, match="died 2 times in a row without finishing "
                                                    "a job.*--jobs 1"):
        run_batch(load_pipeline(pipeline, data_dir=str(data_dir)), make_executor("local", 2),
                  report=False)
    frame = load_results(tmp_path / "out")
    assert len(frame) == 4 and set(frame["status"]) == {"failed"}
    assert frame["error"].str.contains(r"attempt \d of 3 died: the worker process running "
                                       r"the job \w{32} \(corpus tdt2").all()


# -- the harness: a real batch in a child process, killed and resumed ----------------------------
# A small pipeline: 8 jobs of milliseconds, clusters kept. Each run is a child of a fork server
# that has textcluster loaded, so a run costs a fork, not an interpreter start.
JOBS = 8
SEED = 20_14
N_SERIAL = 46  # kill points in runs with --jobs 1 (the runner alone)
N_POOL = 6  # kill points in runs with --jobs 2 (the runner, its workers, or both)


@pytest.fixture(scope="module")
def fork_server():
    import multiprocessing

    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["textcluster.cli", "textcluster.batch.runner",
                                    "textcluster.report.writer", "tests.test_batch_faults"])
    return context


@pytest.fixture(scope="module")
def faults_pipeline(tmp_path_factory, data_dir):
    """The pipeline file and the results (:func:`_results`) of an uninterrupted run."""
    folder = tmp_path_factory.mktemp("faults")
    path = write_pipeline(folder / "p.toml", output=folder / "reference", k="[2, 3]", draws=2)
    path.write_text(path.read_text(encoding="utf-8").replace(
        '[output]\n', '[output]\nclusters = true\n'), encoding="utf-8")
    summary = run_batch(load_pipeline(path, data_dir=str(data_dir)), report=False)
    assert summary.done == JOBS
    return path, _results(folder / "reference")


def _results(out):
    """``{key: (status, metrics, clusters CSV or None)}`` of a batch output folder; reading
    checks the ledger (integrity, checksums)."""
    frame = load_results(out)
    assert frame["key"].is_unique
    clusters = out / "clusters"
    return {row.key: (row.status, row.metrics, _text(clusters / f"{row.key}.csv"))
            for row in frame.itertuples()}


def _text(path):
    return path.read_text(encoding="utf-8") if path.exists() else None


def _cli(args, environment, log):  # runs in a child of the fork server
    os.environ.update(environment)
    handle = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(handle, 1)
    os.dup2(handle, 2)
    from textcluster.cli import main

    main(["batch", *map(str, args)])


class Run:
    """``textcluster batch`` in a child process, with a fault (``$TEXTCLUSTER_FAULT``)."""

    def __init__(self, context, pipeline, out, data_dir, jobs=1, fault="", report=False):
        self.log = out.with_name(out.name + ".log")
        args = [pipeline, "--data-dir", data_dir, "--jobs", jobs,
                "--set", f"output.dir={out.as_posix()}"] + ([] if report else ["--no-report"])
        self.process = context.Process(target=_cli, args=(args, {"TEXTCLUSTER_FAULT": fault},
                                                          str(self.log)))
        self.process.start()

    def workers(self):
        import psutil

        try:
            children = psutil.Process(self.process.pid).children()
            return [c for c in children if "spawn_main" in " ".join(c.cmdline())]
        except psutil.Error:
            return []

    def kill(self):
        self.process.kill()

    def wait(self, timeout=120):
        self.process.join(timeout)
        assert self.process.exitcode is not None, f"the batch hangs: {self.output()}"
        return self.process.exitcode

    def output(self):
        return _text(self.log) or ""


def _check_recorded(out, reference):
    """Every recorded result is one of the reference's, with the same metrics and clusters."""
    from textcluster.batch.ledger import read_statuses

    if not read_statuses(out / "ledger.sqlite"):  # checks the ledger; none yet, or empty
        return {}
    found = _results(out)
    for key, (status, metrics, clusters) in found.items():
        assert key in reference
        if status == "done":
            assert (metrics, clusters) == reference[key][1:], key
    return found


def _finish(context, pipeline, out, data_dir, reference, report=False):
    """Resume without faults: exactly one result per job, equal to the reference."""
    run = Run(context, pipeline, out, data_dir, report=report)
    assert run.wait() == 0, run.output()
    assert _results(out) == reference
    if report:
        assert (out / "report" / "report.md").exists()


def _statuses(out):
    from textcluster.batch.ledger import read_statuses

    try:
        return read_statuses(out / "ledger.sqlite")
    except Exception:  # noqa: BLE001 - being created
        return {}


def _wait_gone(processes, timeout=30):
    import psutil

    deadline = time.monotonic() + timeout
    for process in processes:
        try:
            process.wait(max(0.1, deadline - time.monotonic()))
        except psutil.TimeoutExpired:
            raise AssertionError(f"worker {process.pid} outlived its batch") from None
        except psutil.Error:
            pass


def _serial_fault(rng, left):
    """A kill point for a run of the runner alone with ``left`` jobs to do: ``(fault, delay,
    report)`` — at the n-th ledger write (inside its transaction), result received, clusters
    file or job start; during the report; or at a random time (``delay``)."""
    kind = rng.choice(["ledger-write", "result", "clusters-write", "job", "report", "time"])
    if kind == "report":
        return "report:1:%.2f" % rng.uniform(0, 0.8), None, True
    if kind == "time":
        return "", rng.uniform(0.05, 1.0), False
    return f"{kind}:{rng.randint(1, left)}", None, False


@pytest.mark.slow
def test_sigkills_at_many_points_lose_and_repeat_nothing(tmp_path, fork_server, faults_pipeline,
                                                         data_dir):
    """≥ 50 seeded kill points: the runner killed at ledger writes (inside the transaction),
    between a result and its record, before a clusters file, at a job's start, during the
    report, at random times; with --jobs 2, the runner at the pool's start-up or at a random
    time, a worker while it starts up or runs a job, or both. After each kill the ledger
    holds only correct results, and a resume gives exactly the uninterrupted run's results."""
    pipeline, reference = faults_pipeline
    rng = random.Random(SEED)
    kills, chains = Counter(), 0
    while kills.total() < N_SERIAL and chains < N_SERIAL:  # killed runs in a row, then a resume
        out, report = tmp_path / f"serial{chains}", False
        chains += 1
        for _ in range(3):
            left = JOBS - sum(s == "done" for s, _, _ in _check_recorded(out, reference).values())
            if not left:
                break
            fault, delay, in_report = _serial_fault(rng, left)
            run = Run(fork_server, pipeline, out, data_dir, fault=fault, report=in_report)
            if delay is not None:
                time.sleep(delay)
                run.kill()
            code = run.wait()
            assert code in (0, -signal.SIGKILL), run.output()
            kills[fault.split(":")[0] or "time"] += code == -signal.SIGKILL
            report = report or in_report
        _check_recorded(out, reference)
        _finish(fork_server, pipeline, out, data_dir, reference, report)

    for i in range(N_POOL):
        out = tmp_path / f"pool{i}"
        target = ["runner-start", "worker-start", "worker", "both", "runner", "worker-start"][i]
        run = Run(fork_server, pipeline, out, data_dir, jobs=2,
                  fault="pool-start:1" if target == "runner-start" else "")
        deadline = time.monotonic() + 60
        while not run.workers() and run.process.is_alive():
            assert time.monotonic() < deadline, run.output()
            time.sleep(0.01)
        if target in ("worker", "both"):  # once jobs are being recorded
            while not _statuses(out) and run.process.is_alive():
                assert time.monotonic() < deadline, run.output()
                time.sleep(0.01)
        elif target == "runner":
            time.sleep(rng.uniform(0.5, 4.0))
        workers, alive = run.workers(), run.process.is_alive()
        killed_worker = alive and target != "runner" and bool(workers)
        if killed_worker:
            rng.choice(workers).kill()  # SIGKILL
        if alive and target in ("runner", "both"):
            run.kill()
        code = run.wait()
        kills[f"pool: {target}"] += code == -signal.SIGKILL or killed_worker
        _wait_gone(workers)
        _check_recorded(out, reference)
        if code == 0:  # only a worker was killed: its jobs were run again, the batch finished
            assert _results(out) == reference
        else:
            assert code == -signal.SIGKILL, run.output()
            _finish(fork_server, pipeline, out, data_dir, reference)
    print(f"kill points: {kills.total()} {dict(kills)}")
    assert kills.total() >= 50


# -- a full disk and writes that fail --------------------------------------------------------------
def _batch(pipeline, out, data_dir, *options):
    from click.testing import CliRunner

    from textcluster.cli import main

    return CliRunner().invoke(main, ["batch", str(pipeline), "--data-dir", str(data_dir),
                                     "--set", f"output.dir={out.as_posix()}", *options])


@pytest.fixture
def small_disk(tmp_path):
    """A 8 MB tmpfs (mounting needs root on Linux); None when it cannot be mounted."""
    folder = tmp_path / "disk"
    folder.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(folder)],
                             capture_output=True).returncode == 0
    yield folder if mounted else None
    if mounted:
        if subprocess.run(["umount", str(folder)], capture_output=True).returncode:
            subprocess.run(["umount", "-l", str(folder)], capture_output=True)


def _fill(disk, free):
    """Fill ``disk`` but ``free`` bytes; returns the filler file."""
    stats = os.statvfs(disk)
    filler = disk / "filler"
    with open(filler, "wb") as handle:
        handle.write(b"\0" * max(0, stats.f_bavail * stats.f_frsize - free))
    return filler


@pytest.mark.slow
def test_a_full_disk_stops_the_batch_cleanly_and_a_resume_completes(small_disk, tmp_path,
                                                                    faults_pipeline, data_dir):
    """On a small disk filled to various levels the batch fails where it runs out of space —
    opening the ledger, recording a result, writing the report — with a clear message; no
    result is lost or repeated, and once space is freed a resume completes."""
    pipeline, reference = faults_pipeline
    if small_disk is None:  # no tmpfs here: the write hook's disk-full error instead
        pytest.skip("cannot mount a tmpfs; the disk-full error is injected in the next tests")
    where = set()
    for i, free in enumerate([8_192, 90_000, 150_000, 450_000]):  # bytes left free
        out = small_disk / f"out{i}"
        filler = _fill(small_disk, free)
        outcome = _batch(pipeline, out, data_dir)
        text = outcome.output
        assert "Traceback" not in text and not isinstance(outcome.exception, AssertionError)
        if outcome.exit_code:
            assert ("disk is full" in text or "No space left on device" in text
                    or "disk I/O error" in text), text
            assert "run the same command again" in text or "`textcluster report" in text, text
            where.add("report" if "report could not be written" in text else
                      "result" if "result saved before it is kept" in text else "start")
        else:
            assert "report written to" in text, text
        filler.unlink()
        _check_recorded(out, reference)
        resumed = _batch(pipeline, out, data_dir)
        assert resumed.exit_code == 0, resumed.output
        assert _results(out) == reference
        assert (out / "report" / "report.md").exists()
        shutil.rmtree(out)
    assert where == {"start", "result", "report"}, where


@pytest.mark.parametrize("fault, saved", [("ledger-write:3:enospc", 2),
                                          ("clusters-write:5:enospc", 4),
                                          ("report:1:enospc", JOBS)])
def test_a_write_failing_mid_transaction_loses_and_repeats_nothing(tmp_path, faults_pipeline,
                                                                   data_dir, monkeypatch, fault,
                                                                   saved):
    """A write that fails (here: the disk-full error raised inside the ledger's transaction,
    before a clusters file, or as the report starts) stops the batch with a clear message;
    the results before it are kept, the failing one is not half-recorded, and a resume
    completes."""
    from textcluster.batch import faults

    pipeline, reference = faults_pipeline
    out = tmp_path / "out"
    monkeypatch.setattr(faults, "_passes", {})
    monkeypatch.setenv(faults.VARIABLE, fault)
    outcome = _batch(pipeline, out, data_dir)
    assert outcome.exit_code == 1 and "Traceback" not in outcome.output
    assert "No space left on device" in outcome.output
    if fault.startswith("report"):
        assert "the report could not be written" in outcome.output
    else:
        assert "could not be " in outcome.output
        assert "every result saved before it is kept" in outcome.output
        assert "run the same command again" in outcome.output
    recorded = _check_recorded(out, reference)
    assert len(recorded) == saved and {s for s, _, _ in recorded.values()} == {"done"}
    monkeypatch.delenv(faults.VARIABLE)
    resumed = _batch(pipeline, out, data_dir)
    assert resumed.exit_code == 0, resumed.output
    assert f"{JOBS - saved} done now, {saved} done before" in resumed.output
    assert _results(out) == reference

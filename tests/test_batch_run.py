"""``textcluster batch``: running, resuming, failing, executors, and the shipped pipelines."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from textcluster.report import write_report
from textcluster.batch import load_pipeline, load_results, make_executor, run_batch
from textcluster.batch.executors import ProcessExecutor
from textcluster.batch.ledger import Ledger, read_statuses
from textcluster.batch.spec import expand, tomllib
from textcluster.cli import main
from textcluster.models import MODELS

from ._batch import MILLION, time_limit, write_pipeline, write_planted_mat
from ._citeulike import KEPT_ARTICLES, write_citeulike

PIPELINES = Path(__file__).resolve().parents[1] / "pipelines"
RESULT_COLUMNS = ["key", "status", "k", "draw", "seed", "metrics", "objective"]


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    """A planted 4-class term-count matrix, stored where the ``tdt2`` loader looks."""
    return write_planted_mat(tmp_path_factory.mktemp("batch-data"))


def batch(*args):
    return CliRunner().invoke(main, ["batch", *[str(a) for a in args]])


def results(path):
    return load_results(path)[RESULT_COLUMNS].reset_index(drop=True)


def test_a_batch_runs_every_job_once_and_a_rerun_skips_them(tmp_path, data_dir):
    pipeline = write_pipeline(tmp_path / "p.toml", output=tmp_path / "out")
    first = batch(pipeline, "--data-dir", data_dir, "--no-report")
    assert first.exit_code == 0, first.output
    assert "8 jobs; 8 done now, 0 done before, 0 failed" in first.output
    frame = load_results(tmp_path / "out")
    assert len(frame) == 8 and set(frame["status"]) == {"done"}
    assert set(frame["model"]) == {"kmeans", "nmf"}
    for name in ("purity", "entropy", "nmi", "accuracy", "ari", "n_docs"):
        assert frame[f"metric.{name}"].notna().all()
    assert (frame["metric.n_docs"] == frame["k"] * 20).all()  # all documents of k classes
    assert all(len(obj) == 1 for obj in frame["objective"])  # the final objective
    before = results(tmp_path / "out")
    again = batch(pipeline, "--data-dir", data_dir, "--no-report")
    assert "0 done now, 8 done before" in again.output
    assert results(tmp_path / "out").equals(before)


def test_dry_run_lists_the_jobs_and_their_status(tmp_path, data_dir):
    pipeline = write_pipeline(tmp_path / "p.toml", output=tmp_path / "out", models=("nmf",))
    listing = batch(pipeline, "--dry-run", "--set", "protocol.draws=1")
    assert listing.exit_code == 0, listing.output
    lines = listing.output.splitlines()
    assert lines[0].split() == ["#", "corpus", "model", "variant", "k", "draw", "seed",
                                "status", "key"]
    assert [line.split()[4] for line in lines[1:3]] == ["2", "3"]
    assert "2 jobs, 0 done, 0 failed, 2 to run" in lines[-1]
    assert not (tmp_path / "out").exists()  # nothing ran
    batch(pipeline, "--data-dir", data_dir, "--no-report", "--set", "protocol.k=[2]",
          "--set", "protocol.draws=1")
    listing = batch(pipeline, "--dry-run", "--set", "protocol.draws=1")
    assert [line.split()[7] for line in listing.output.splitlines()[1:3]] == ["done", "to"]
    assert "2 jobs, 1 done, 0 failed, 1 to run" in listing.output


def test_a_failed_job_is_recorded_and_does_not_stop_the_others(tmp_path, data_dir):
    # The planted corpus has 4 classes: the k = 5 draws cannot be made.
    pipeline = write_pipeline(tmp_path / "p.toml", output=tmp_path / "out", k="[2, 5]",
                              draws=1)
    outcome = batch(pipeline, "--data-dir", data_dir, "--no-report")
    assert outcome.exit_code == 1, outcome.output
    assert "2 done now, 0 done before, 2 failed" in outcome.output
    assert "k=5 classes cannot be drawn: the corpus has 4 classes" in outcome.output
    frame = load_results(tmp_path / "out")
    failed = frame[frame["status"] == "failed"]
    assert list(failed["k"]) == [5, 5]
    assert failed["error"].str.contains("InvalidInputError: k=5").all()
    retry = batch(pipeline, "--data-dir", data_dir, "--no-report")
    assert retry.exit_code == 1 and "0 done now, 2 done before, 2 failed" in retry.output


def test_bad_pipelines_and_busy_ledgers_exit_with_code_2(tmp_path, data_dir):
    pipeline = write_pipeline(tmp_path / "p.toml", output=tmp_path / "out")
    unknown = batch(pipeline, "--set", "models.nmf.name=nmff")
    assert unknown.exit_code == 2 and "unknown model 'nmff'; known models:" in unknown.output
    with Ledger.open(tmp_path / "out" / "ledger.sqlite"):
        busy = batch(pipeline, "--data-dir", data_dir)
    assert busy.exit_code == 2
    assert f"in use by another batch run (pid {os.getpid()}" in busy.output
    assert "Traceback" not in busy.output


def test_labelled_fraction_scores_unlabelled_documents_separately(tmp_path, data_dir):
    pipeline = write_pipeline(tmp_path / "p.toml", output=tmp_path / "out", k="[3]",
                              models=("nmf", "dnmf"), extra="labeled_fraction = 0.25\n",
                              params={"dnmf": "{ n_init = 2, init_iter = 5, max_iter = 20 }"})
    summary = run_batch(load_pipeline(pipeline, data_dir=str(data_dir)), report=False)
    assert summary.done == 4 and not summary.failed
    frame = load_results(tmp_path / "out")
    assert (frame["metric.n_docs_unlabeled"] == 60 - 15).all()  # 5 of each class labelled
    assert frame["metric.nmi_unlabeled"].between(0, 1).all()
    labelled = {(row.draw, row.model): row.labeled for row in frame.itertuples()}
    for draw in (0, 1):  # both models of a draw saw the same labels
        assert labelled[(draw, "nmf")] == labelled[(draw, "dnmf")]
        assert labelled[(draw, "nmf")]["n_labeled"] == 15


def test_convergence_records_the_objective_per_iteration(tmp_path, data_dir):
    pipeline = tmp_path / "p.toml"
    pipeline.write_text(
        '[[corpora]]\nname = "tdt2"\n[[models]]\nname = "nmf"\n'
        'params = { n_init = 1, max_iter = 25, n_assign_init = 2 }\n'
        '[protocol]\nkind = "convergence"\nk = "classes"\n'
        f'[output]\ndir = "{(tmp_path / "out").as_posix()}"\n', encoding="utf-8")
    run_batch(load_pipeline(pipeline, data_dir=str(data_dir)), report=False)
    row = load_results(tmp_path / "out").iloc[0]
    assert row["k"] == 4 and pd.isna(row["draw"])  # k = number of classes, all documents
    history = np.array(row["objective"])
    assert len(history) == 26  # the start and 25 iterations
    assert np.all(np.diff(history) <= 1e-6 * history[:-1])


def test_kept_clusters_give_the_report_cross_view_agreement(tmp_path):
    """[output] clusters = true keeps each job's clusters; on corpora without labels the
    report compares the views and the seeds with the NMI of textcluster.pipeline.export.agreement."""
    from textcluster.report.crossview import read_clusters
    from textcluster.pipeline.export import agreement

    data_dir = tmp_path / "data"
    write_citeulike(data_dir)
    pipeline = tmp_path / "p.toml"
    views = "".join(f'[[corpora]]\nname = "citeulike-t:{view}"\nselect = {{ min_count = 2 }}\n'
                    for view in ("tags", "combined"))
    pipeline.write_text(
        views + '[[models]]\nname = "kmeans"\nparams = { n_init = 2 }\n'
        '[protocol]\nkind = "full"\nk = 2\nrepeats = 2\n'
        f'[output]\ndir = "{(tmp_path / "out").as_posix()}"\nclusters = true\n',
        encoding="utf-8")
    loaded = load_pipeline(pipeline, data_dir=str(data_dir))
    unkept = load_pipeline(pipeline, ["output.clusters=false"], data_dir=str(data_dir))
    assert [j.key for j in expand(loaded)] == [j.key for j in expand(unkept)]
    summary = run_batch(loaded, report=write_report)
    assert summary.done == 4 and summary.report_error is None
    frame = load_results(tmp_path / "out")
    clusters = {(row.corpus, row.seed): read_clusters(tmp_path / "out" / "clusters", row.key)
                for row in frame.itertuples()}
    assert all(sorted(ids) == KEPT_ARTICLES for ids, _ in clusters.values())
    used = dict(zip(zip(frame["corpus"], frame["seed"]), frame["metric.n_clusters"]))
    assert all(len(set(labels)) == used[run] for run, (_, labels) in clusters.items())
    table = pd.read_csv(tmp_path / "out" / "report" / "tables" / "agreement.csv")
    across = table[table["between"] == "corpora"].set_index("k")
    tags, both = "citeulike-t:tags", "citeulike-t:combined"
    expected = np.mean([agreement(clusters[tags, s][1], clusters[both, s][1],
                                  clusters[tags, s][0], clusters[both, s][0]) for s in (0, 1)])
    assert across.loc[2, "mean"] == pytest.approx(expected)
    assert across.loc[2, "pairs"] == 2 and across.loc[2, "n_shared"] == 4
    assert len(table[table["between"] == "seeds"]) == 2  # one seed pair per view
    text = (tmp_path / "out" / "report" / "report.md").read_text(encoding="utf-8")
    assert "Across corpora (views)" in text and "citeulike-t:tags ↔ citeulike-t:combined" in text
    assert "no class labels" in text and "final objective" in text


def test_the_report_is_written_after_the_batch(tmp_path, data_dir, monkeypatch):
    import textcluster.report.writer as report

    calls = []
    monkeypatch.setattr(report, "write_report", lambda ledger, out: calls.append((ledger, out)))
    pipeline = write_pipeline(tmp_path / "p.toml", output=tmp_path / "out", k="[2]", draws=1,
                              models=("nmf",))
    outcome = batch(pipeline, "--data-dir", data_dir)
    assert outcome.exit_code == 0, outcome.output
    assert calls == [(tmp_path / "out" / "ledger.sqlite", tmp_path / "out" / "report")]


def test_a_failing_report_is_reported_after_the_results(tmp_path, data_dir, monkeypatch):
    import textcluster.report.writer as report

    def broken(ledger, out):
        raise ValueError("no plots today")

    monkeypatch.setattr(report, "write_report", broken)
    pipeline = write_pipeline(tmp_path / "p.toml", output=tmp_path / "out", k="[2]", draws=1,
                              models=("nmf",))
    outcome = batch(pipeline, "--data-dir", data_dir)
    assert outcome.exit_code == 1, outcome.output
    assert "1 done now" in outcome.output
    assert "the report could not be written: " in outcome.output
    assert "ValueError: no plots today" in outcome.output
    assert read_statuses(tmp_path / "out" / "ledger.sqlite") != {}


@pytest.mark.slow
def test_a_killed_batch_resumes_without_losing_or_repeating_a_result(tmp_path, data_dir):
    slow = "{ n_init = 3, init_iter = 50, max_iter = 250, n_assign_init = 5 }"  # ~0.1-0.2 s
    pipeline = write_pipeline(tmp_path / "p.toml", output=tmp_path / "reference",
                              models=("nmf", "gnmf"), draws=6, params={"nmf": slow, "gnmf": slow})
    # Every run here has two workers: threads per job, hence the last bits, are the same.
    reference = run_batch(load_pipeline(pipeline, data_dir=str(data_dir)),
                          make_executor("local", 2), report=False)
    assert reference.done == 24
    killed = tmp_path / "killed"
    command = [sys.executable, "-c", "from textcluster.cli import main; main()", "batch",
               str(pipeline), "--data-dir", str(data_dir), "--no-report", "--jobs", "2",
               "--set", f"output.dir={killed.as_posix()}"]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    ledger = killed / "ledger.sqlite"
    deadline = time.monotonic() + 120
    while len(_done(ledger)) < 3:
        assert process.poll() is None, process.stderr.read().decode()
        assert time.monotonic() < deadline, "the batch recorded no results"
        time.sleep(0.05)
    workers = _children(process.pid)
    process.send_signal(signal.SIGKILL)
    process.wait()
    recorded = _done(ledger)
    assert 3 <= len(recorded) < 24, "the batch was not killed part-way"
    _wait_until_gone(workers)  # the pool's workers exit with their batch
    resumed = run_batch(load_pipeline(pipeline, data_dir=str(data_dir),
                                      overrides=[f"output.dir={killed.as_posix()}"]),
                        make_executor("local", 2), report=False)
    assert resumed.skipped == len(recorded) and resumed.done == 24 - len(recorded)
    assert results(killed).equals(results(tmp_path / "reference"))


def _done(ledger):
    try:
        return [k for k, status in read_statuses(ledger).items() if status == "done"]
    except Exception:  # noqa: BLE001 - the ledger is being created
        return []


def _children(pid):
    import psutil

    return [child.pid for child in psutil.Process(pid).children(recursive=True)]


def _wait_until_gone(pids, timeout=15):
    import psutil

    deadline = time.monotonic() + timeout
    while any(psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE
              for p in pids):
        assert time.monotonic() < deadline, "pool workers outlived their killed batch"
        time.sleep(0.1)


@pytest.fixture(scope="module")
def local_reference(tmp_path_factory, data_dir):
    """A small pipeline run by the local executor with two worker processes."""
    folder = tmp_path_factory.mktemp("executors")
    pipeline = write_pipeline(folder / "p.toml", output=folder / "local",
                              models=("kmeans", "nmf", "gnmf"), k="[2, 3]", draws=2)
    summary = run_batch(load_pipeline(pipeline, data_dir=str(data_dir)),
                        make_executor("local", 2), report=False)
    assert summary.done == 12
    return pipeline, results(folder / "local")


@pytest.mark.slow
def test_dask_on_a_scheduler_gives_the_local_executors_results(tmp_path, data_dir,
                                                                local_reference):
    from distributed import LocalCluster

    pipeline, expected = local_reference
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster:
        outcome = batch(pipeline, "--data-dir", data_dir, "--no-report", "--executor", "dask",
                        "--scheduler", cluster.scheduler_address,
                        "--set", f"output.dir={(tmp_path / 'dask').as_posix()}")
    assert outcome.exit_code == 0, outcome.output
    assert results(tmp_path / "dask").equals(expected)


@pytest.mark.slow
def test_dask_on_its_own_local_cluster_gives_the_same_results(tmp_path, data_dir,
                                                              local_reference):
    pipeline, expected = local_reference
    remote = load_pipeline(pipeline, data_dir=str(data_dir),
                           overrides=[f"output.dir={(tmp_path / 'dask').as_posix()}"])
    summary = run_batch(remote, make_executor("dask", 2), report=False)
    assert summary.done == 12 and not summary.failed
    assert results(tmp_path / "dask").equals(expected)


def test_the_corpus_is_represented_once_per_worker(tmp_path, data_dir, monkeypatch):
    from textcluster.pipeline import job

    calls = []
    real = job.represent
    monkeypatch.setattr(job, "represent", lambda *a, **kw: calls.append(1) or real(*a, **kw))
    pipeline = write_pipeline(tmp_path / "p.toml", output=tmp_path / "out")
    run_batch(load_pipeline(pipeline, data_dir=str(data_dir)), report=False)
    assert len(calls) == 1  # 8 jobs, one corpus, this process


def test_progress_shows_done_failed_remaining_and_eta(capsys):
    from textcluster.batch.runner import BatchSummary
    from textcluster.cli.batch import BatchProgress

    progress = BatchProgress()
    progress.start -= 30  # 30 s ago
    progress(BatchSummary("ledger", total=10, skipped=2, done=2, failed=[("job", "boom")]))
    line = capsys.readouterr().err
    assert line.startswith("\rjobs: 4 done, 1 failed, 5 remaining; ETA 0m50s")


def _exit_on_three(value):  # runs in a pool worker
    if value == 3:
        os._exit(1)
    return value * 10


def _thread_settings(_):
    from threadpoolctl import threadpool_info

    from textcluster._threads import n_threads

    return n_threads(), sorted({pool["num_threads"] for pool in threadpool_info()})


@pytest.mark.slow
def test_pool_workers_share_the_cores_and_a_dead_worker_fails_only_its_jobs():
    from textcluster.batch.executors import MAX_ATTEMPTS, WorkerDiedError, threads_per_worker

    with ProcessExecutor(2) as executor:
        settings = dict(executor.run(_thread_settings, range(2)))
        outcomes = list(executor.run(_exit_on_three, range(8)))
        after = dict(executor.run(_exit_on_three, [5]))  # a new pool took over
    expected = threads_per_worker(2)
    assert all(s == (expected, [expected]) for s in settings.values()), settings
    final = dict(outcomes)  # the last outcome of each job
    assert sorted(final) == list(range(8))
    assert isinstance(final[3], WorkerDiedError) and not final[3].retry
    assert f"job 3 died on each of its {MAX_ATTEMPTS} attempts" in str(final[3])
    # Its neighbours in the broken pool were run again, alone, and finished.
    assert {v: o for v, o in final.items() if v != 3} == {v: 10 * v for v in range(8) if v != 3}
    attempts = [o.attempt for v, o in outcomes if v == 3]
    assert attempts == list(range(1, MAX_ATTEMPTS + 1))
    assert after == {5: 50}


def _pipeline_models(path):
    config = tomllib.loads(path.read_text(encoding="utf-8"))
    return [entry["name"] for entry in config["models"]]


@pytest.mark.parametrize("path", sorted(p for p in PIPELINES.glob("*.toml")
                                     if p.name != "nightly.toml"), ids=lambda p: p.name)
def test_every_shipped_pipeline_expands(path):
    missing = [m for m in _pipeline_models(path) if m not in MODELS]
    if missing:
        pytest.skip(f"{path.name} uses models not registered yet: {', '.join(missing)}")
    assert path.read_text(encoding="utf-8").lstrip().startswith("#")  # commented
    listing = batch(path, "--dry-run")
    assert listing.exit_code == 0, listing.output
    summary = listing.output.splitlines()[-1]
    assert summary.startswith(f"pipeline {path.stem}: ") and " 0 jobs" not in summary


def test_a_nightly_file_is_not_a_batch():
    listing = batch(PIPELINES / "nightly.toml", "--dry-run")
    assert listing.exit_code == 2 and "textcluster nightly" in listing.output


def test_the_smoke_pipeline_runs_on_real_data(tmp_path, real_data_dir):
    outcome = batch(PIPELINES / "smoke.toml", "--data-dir", real_data_dir, "--no-report",
                    "--set", f"output.dir={(tmp_path / 'smoke').as_posix()}")
    assert outcome.exit_code == 0, outcome.output
    frame = load_results(tmp_path / "smoke")
    assert len(frame) == 8 and set(frame["status"]) == {"done"}
    assert frame["metric.nmi"].between(0, 1).all()


class _Stop(Exception):
    pass


def _stop_after_first_result(summary):
    if summary.done + len(summary.failed):
        raise _Stop


def test_a_huge_grid_asks_for_yes_lists_a_few_jobs_and_starts_at_once(tmp_path, data_dir):
    pipeline = tmp_path / "p.toml"
    pipeline.write_text(MILLION + f'\n[output]\ndir = "{(tmp_path / "out").as_posix()}"\n',
                        encoding="utf-8")
    with time_limit(60):
        refused = batch(pipeline, "--data-dir", data_dir)  # not interactive, no --yes
        assert not (tmp_path / "out").exists()
        listing = batch(pipeline, "--dry-run")
        started = time.monotonic()
        with pytest.raises(_Stop):
            run_batch(load_pipeline(pipeline, data_dir=str(data_dir)),
                      progress=_stop_after_first_result)
        first_result = time.monotonic() - started
    assert refused.exit_code == 2, refused.output
    assert "1,000,000 jobs" in refused.output and "--yes" in refused.output
    assert "Traceback" not in refused.output
    lines = listing.output.splitlines()
    assert listing.exit_code == 0 and len(lines) < 30, listing.output[:2000]
    assert "1,000,000 jobs" in lines[-1]
    assert first_result < 15
    assert len(load_results(tmp_path / "out")) == 1


def test_above_the_threshold_yes_runs_and_a_terminal_is_asked(tmp_path, data_dir, monkeypatch):
    from textcluster.cli import batch as batch_cli

    monkeypatch.setattr(batch_cli, "CONFIRM_ABOVE", 5)
    pipeline = write_pipeline(tmp_path / "p.toml", output=tmp_path / "out")  # 8 jobs
    refused = batch(pipeline, "--data-dir", data_dir, "--no-report")
    assert refused.exit_code == 2 and "has 8 jobs, more than 5: pass --yes" in refused.output
    monkeypatch.setattr(batch_cli, "_interactive", lambda: True)
    declined = CliRunner().invoke(main, ["batch", str(pipeline), "--data-dir", str(data_dir)],
                                  input="n\n")
    assert declined.exit_code == 1 and "Run them all? [y/N]" in declined.output
    assert not (tmp_path / "out").exists()
    accepted = batch(pipeline, "--data-dir", data_dir, "--no-report", "--yes")
    assert accepted.exit_code == 0 and "8 done now" in accepted.output


def test_a_whole_corpus_job_checks_k_as_run_does(tmp_path, data_dir):
    """k above the corpus' documents: the job is recorded failed with run's own message, for
    k-means too (whose estimator would otherwise give scikit-learn's error)."""
    pipeline = tmp_path / "p.toml"
    pipeline.write_text(
        '[[corpora]]\nname = "tdt2"\n[[models]]\nname = "kmeans"\nparams = { n_init = 2 }\n'
        '[protocol]\nkind = "full"\nk = 500\n'
        f'[output]\ndir = "{(tmp_path / "out").as_posix()}"\n', encoding="utf-8")
    summary = run_batch(load_pipeline(pipeline, data_dir=str(data_dir)), report=False)
    assert len(summary.failed) == 1
    error = load_results(tmp_path / "out")["error"].iloc[0]
    assert "--k 500 is not possible" in error and "80 documents" in error


@pytest.mark.parametrize("model, settings", [("nmf", ["max_iter=40"]),
                                             ("gnmf", ["lam=10", "n_neighbors=3"])])
def test_run_is_a_batch_of_one_job(tmp_path, data_dir, model, settings):
    """``textcluster run`` and a one-job batch go through the same run path: the same
    clusters for the same seed, and the same metrics."""
    out = tmp_path / "run"
    ran = CliRunner().invoke(main, ["run", "tdt2", "--data-dir", str(data_dir), "--model", model,
                                    "-k", "3", "--seed", "5", "--out", str(out),
                                    *[a for s in settings for a in ("--set", s)]])
    assert ran.exit_code == 0, ran.output
    pipeline = tmp_path / "one.toml"
    params = ", ".join(s.replace("=", " = ") for s in settings)
    pipeline.write_text(
        f'[[corpora]]\nname = "tdt2"\n[[models]]\nname = "{model}"\nparams = {{ {params} }}\n'
        f'[protocol]\nkind = "full"\nk = 3\nseed = 5\n'
        f'[output]\ndir = "{(tmp_path / "batch").as_posix()}"\nclusters = true\n',
        encoding="utf-8")
    done = batch(pipeline, "--data-dir", data_dir, "--no-report")
    assert done.exit_code == 0, done.output
    [key] = load_results(tmp_path / "batch")["key"]
    from_run = pd.read_csv(out / "clusters.csv")[["doc_id", "cluster"]]
    from_batch = pd.read_csv(tmp_path / "batch" / "clusters" / f"{key}.csv")
    assert from_run.astype(str).equals(from_batch.astype(str))
    metrics = load_results(tmp_path / "batch").iloc[0]
    run_metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["metric.nmi"] == pytest.approx(run_metrics["nmi"], abs=0)

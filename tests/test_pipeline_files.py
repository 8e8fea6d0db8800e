"""Every shipped pipeline file (``pipelines/*.toml``) run end to end on tiny fixture corpora.

``test_batch_run`` dry-runs the shipped files; here each one really runs: the corpora it names
are written into a data folder as a few dozen planted documents, the file is loaded with
``--set`` overrides that shrink it (one draw and one seed, small k, two values per grid or
sweep, few iterations and restarts for every model, the corpus-size thresholds lowered to fit
the fixtures), and every job must finish and the report be written. A pipeline file that no
longer runs (a renamed parameter, a corpus option a loader lost, a protocol the runner no
longer handles) fails here.
"""

import gzip
import json
import random
from pathlib import Path

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp

from textcluster.report import write_report
from textcluster.batch import load_pipeline, load_results, run_batch
from textcluster.batch.spec import tomllib
from textcluster.corpora.loaders.cluto import SETS
from textcluster.corpora.loaders.panel import TABLES
from textcluster.models import MODELS

from ._batch import write_planted_mat
from ._corpora import FILLER, VOCABULARIES
from .test_ingest_cluto import cluto_text, converted_text, one_hot_text, write
from .test_ingest_reuters import HEADER, record

PIPELINES = Path(__file__).resolve().parents[1] / "pipelines"
PIPELINE_FILES = sorted(p for p in PIPELINES.glob("*.toml")
                        if "nightly" not in tomllib.loads(p.read_text(encoding="utf-8")))
# 22 corpora × 11 models with their defaults (the graph models choose λ per corpus: several
# fits per job), and a report over 22 corpora: about 50 s of jobs and 30 s of report even on
# the fixtures, more than all the other files together.
SLOW = {"defaults_panel"}

# Few iterations and restarts for every model that has the parameter.
FAST = {"n_init": 1, "max_iter": 5, "init_iter": 3, "n_assign_init": 2}
SMALL_K = 3  # an integer k above this is lowered to it; a range of k becomes [2, 3]
MIN_CLASS_SIZE = 5  # select.min_class_size is lowered to this (the fixtures' classes are small)
MIN_COUNT = 4  # the CiteULike fixture keeps every article at the papers' threshold of 4


# -- fixture corpora ------------------------------------------------------------------------
def planted_counts(n_classes, n_per_class, terms_per_class=8, seed=0):
    """Poisson term counts in which each class favours its own block of terms, and the class
    of each row (as in ``_batch.write_planted_mat``)."""
    rng = np.random.default_rng(seed)
    n, m = n_classes * n_per_class, n_classes * terms_per_class
    labels = np.repeat(np.arange(n_classes), n_per_class)
    rates = np.full((n, m), 0.3)
    for c in range(n_classes):
        rates[np.ix_(labels == c, np.arange(c * terms_per_class, (c + 1) * terms_per_class))] = 2.0
    counts = rng.poisson(rates).astype(float)
    counts[counts.sum(axis=1) == 0, 0] = 1.0
    return counts, labels


def write_reuters_cai(data_dir, n_classes=5, n_per_class=10):
    """``reuters21578_cai/Reuters21578.mat`` in Deng Cai's ``fea``/``gnd`` layout."""
    counts, labels = planted_counts(n_classes, n_per_class, seed=1)
    folder = data_dir / "reuters21578_cai"
    folder.mkdir(parents=True, exist_ok=True)
    scipy.io.savemat(folder / "Reuters21578.mat",
                     {"fea": sp.csr_matrix(counts), "gnd": (labels + 1)[:, None]})


def documents(n_per_class, seed):
    """``(text, class)`` pairs drawn from the separable vocabularies of ``_corpora``."""
    rng = random.Random(seed)
    for label, vocabulary in VOCABULARIES.items():
        words = vocabulary.split()
        for _ in range(n_per_class):
            yield " ".join(rng.choices(words, k=12) + rng.choices(FILLER, k=3)), label


def write_reuters_sgml(data_dir, n_per_class=10):
    """``reuters21578/reut2-000.sgm``: single-topic records of three topics."""
    records = [record(i + 1, [label], title=f"Story {i}", body=text)
               for i, (text, label) in enumerate(documents(n_per_class, seed=2))]
    folder = data_dir / "reuters21578"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "reut2-000.sgm").write_bytes((HEADER + "".join(records)).encode("latin-1"))


def write_panel_tables(data_dir, n_per_class=10):
    """``panel/<name>/<name>.csv.gz`` (id, text, label) for each of the panel's text corpora."""
    for seed, name in enumerate(TABLES):
        rows = [f"{name}{i},{text},{label}\n"
                for i, (text, label) in enumerate(documents(n_per_class, seed))]
        folder = data_dir / "panel" / name
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{name}.csv.gz").write_bytes(
            gzip.compress(("id,text,label\n" + "".join(rows)).encode()))


def write_cluto_sets(data_dir, n_classes=3, n_per_class=10):
    """Every CLUTO set of the panel, in the format of its folder (Karypis' ``<set>.mat`` or
    ntyaan's converted ``sparse_<set>.txt``), with its class files."""
    for seed, (name, folder) in enumerate(SETS.items()):
        counts, classes = planted_counts(n_classes, n_per_class, seed=10 + seed)
        labels = [f"c{c}" for c in classes]
        folder = data_dir / folder
        if folder.name == "cluto_karypis":
            write(folder / f"{name}.mat", cluto_text(counts))
            write(folder / f"{name}.mat.rclass", "".join(f"{c}\n" for c in labels))
            write(folder / f"{name}.mat.clabel",
                  "".join(f"term{j}\n" for j in range(counts.shape[1])))
        else:
            write(folder / f"sparse_{name}.txt", converted_text(counts))
            write(folder / f"{name}.rclass", "".join(f"{c}\n" for c in labels))
            write(folder / f"{name}_correct.txt", one_hot_text(labels, sorted(set(labels))))


def write_citeulike_t(data_dir, n_groups=2, n_per_group=20, users_per_group=8,
                      tags_per_group=6):
    """``citeulike/citeulike-t/``: two groups of articles, each bookmarked by its own users
    and tagged with its own tags, so that every article, user and tag has at least
    ``MIN_COUNT`` bookmarks and nothing is dropped at the papers' threshold."""
    users, tags, tag_names = [], [], []
    for g in range(n_groups):
        articles = [g * n_per_group + j for j in range(n_per_group)]
        for u in range(users_per_group):  # each user skips a window of 3 articles
            skipped = {(3 * u + s) % n_per_group for s in range(3)}
            users.append([a for j, a in enumerate(articles) if j not in skipped])
        for t in range(tags_per_group):  # each tag covers 12 consecutive articles (cyclic)
            tags.append([a for j, a in enumerate(articles) if (j + 3 * t) % n_per_group < 12])
            tag_names.append(f"group{g}-tag{t}")
    n_articles = n_groups * n_per_group

    def lists(rows):
        return "".join(" ".join(map(str, [len(ids), *ids])) + "\n" for ids in rows)

    folder = data_dir / "citeulike" / "citeulike-t"
    folder.mkdir(parents=True, exist_ok=True)
    files = {
        "users.dat": lists(users),
        "tag-item.dat": lists(tags),
        "tags.dat": "".join(f"{name}\n" for name in tag_names),
        "citations.dat": lists([[a + 1] if a % 2 == 0 else [] for a in range(n_articles)]),
        "mult.dat": "".join(f"2 {a // n_per_group}:2 2:1\n" for a in range(n_articles)),
        "vocabulary.dat": "gene\nprotein\ngraph\n",
    }
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    """Every corpus a shipped pipeline names, as a tiny fixture in one data folder."""
    root = tmp_path_factory.mktemp("pipeline-data")
    write_planted_mat(root, n_classes=6, n_per_class=10, terms_per_class=8)  # tdt2
    write_reuters_cai(root)
    write_reuters_sgml(root)
    write_panel_tables(root)
    write_cluto_sets(root)
    write_citeulike_t(root)
    return root


# -- shrinking a pipeline -------------------------------------------------------------------
def toml(value):
    """``value`` written as a TOML value, for ``--set``."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(toml(v) for v in value) + "]"
    return repr(value)


def shrinking_overrides(path, output):
    """``--set`` overrides that make the pipeline file ``path`` small enough for a test, with
    its output in ``output``."""
    config = tomllib.loads(path.read_text(encoding="utf-8"))
    overrides = [f"output.dir={toml(output.as_posix())}"]
    protocol = config.get("protocol", {})
    if "draws" in protocol:
        overrides.append("protocol.draws=1")
    if "repeats" in protocol:
        overrides.append("protocol.repeats=1")
    if "seeds" in protocol:
        overrides.append(f"protocol.seeds={toml(protocol['seeds'][:1])}")
    k = protocol.get("k")
    if isinstance(k, int):
        overrides.append(f"protocol.k={min(k, SMALL_K)}")
    elif isinstance(k, (dict, list)):
        overrides.append("protocol.k=[2, 3]")
    for name, values in protocol.get("sweep", {}).items():
        overrides.append(f"protocol.sweep.{name}={toml(values[:2])}")
    for i, corpus in enumerate(config["corpora"]):
        select = corpus.get("select", {})
        if select.get("min_class_size", 0) > MIN_CLASS_SIZE:
            overrides.append(f"corpora.{i}.select.min_class_size={MIN_CLASS_SIZE}")
        if select.get("min_count", 0) > MIN_COUNT:
            overrides.append(f"corpora.{i}.select.min_count={MIN_COUNT}")
    for i, model in enumerate(config["models"]):
        known = MODELS.get(model["name"])().get_params()
        params = model.get("params", {})
        for param, value in FAST.items():
            if param in known:
                overrides.append(f"models.{i}.params.{param}={value}")
        for param, value in params.items():
            if isinstance(value, list) and len(value) > 2:  # a grid: two of its values
                overrides.append(f"models.{i}.params.{param}={toml(value[:2])}")
        for variant, settings in model.get("variants", {}).items():
            for param, value in FAST.items():  # a variant's own setting would win
                if param in settings:
                    overrides.append(f"models.{i}.variants.{variant}.{param}={value}")
    return overrides


# -- the test -------------------------------------------------------------------------------
def test_every_pipeline_file_is_tested():
    assert len(PIPELINE_FILES) >= 12


@pytest.mark.parametrize("path", [
    pytest.param(path, id=path.stem, marks=[pytest.mark.slow] if path.stem in SLOW else [])
    for path in PIPELINE_FILES])
def test_the_pipeline_file_runs_end_to_end(path, data_dir, tmp_path):
    output = tmp_path / "out"
    pipeline = load_pipeline(path, shrinking_overrides(path, output), data_dir=str(data_dir))
    summary = run_batch(pipeline, report=write_report)
    errors = "\n".join(f"{job.corpus} {job.model}:{job.variant} k={job.k}: {error}"
                       for job, error in summary.failed)
    assert not summary.failed, f"{len(summary.failed)} of {summary.total} jobs failed:\n{errors}"
    assert summary.done == summary.total > 0
    frame = load_results(output)
    assert len(frame) == summary.total and set(frame["status"]) == {"done"}
    corpora = {entry["name"] for entry in pipeline.config["corpora"]}
    models = {entry["name"] for entry in pipeline.config["models"]}
    assert set(frame["corpus"]) == corpora and set(frame["model"]) == models
    assert summary.report_error is None, summary.report_error
    assert summary.report is not None and (Path(summary.report) / "report.md").is_file()
    if pipeline.keep_clusters:
        assert len(list(pipeline.clusters_dir.glob("*.csv"))) == summary.total

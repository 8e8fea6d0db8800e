"""Pipeline files: validation, ``--set`` overrides and the expansion into jobs."""

import itertools

import pytest

from textcluster._errors import InvalidInputError
from textcluster.batch.overrides import apply_overrides
from textcluster.batch.spec import count_jobs, expand, iter_jobs, load_pipeline
from textcluster.registry import UnknownNameError

from ._batch import MILLION, pipeline_text, time_limit, write_pipeline


def load(tmp_path, text, overrides=()):
    path = tmp_path / "p.toml"
    path.write_text(text, encoding="utf-8")
    return load_pipeline(path, overrides)


def jobs_of(tmp_path, text, overrides=()):
    return expand(load(tmp_path, text, overrides))


def test_class_subset_jobs_pair_every_model_with_the_same_draws(tmp_path):
    jobs = jobs_of(tmp_path, pipeline_text(models=("kmeans", "nmf", "gnmf"),
                                           k="{ from = 2, to = 4 }", draws=3))
    assert len(jobs) == 3 * 3 * 3  # k × draws × models
    by_draw = {}
    for job in jobs:
        by_draw.setdefault((job.k, job.draw), []).append(job)
    for (k, draw), group in by_draw.items():
        assert sorted(j.model for j in group) == ["gnmf", "kmeans", "nmf"]
        assert {j.selection["draw_seed"] for j in group} == {1000 * k + draw}
        assert {j.seed for j in group} == {0}
    seeds = {j.selection["draw_seed"] for j in jobs}
    assert len(seeds) == 9  # a different draw seed for every (k, draw)
    assert len({j.key for j in jobs}) == len(jobs)


def test_keys_are_stable_and_follow_the_identity(tmp_path):
    text = pipeline_text(models=("nmf",), k="[2]", draws=1)
    first, again = jobs_of(tmp_path, text), jobs_of(tmp_path, text)
    assert [j.key for j in first] == [j.key for j in again]
    changed = jobs_of(tmp_path, text, ["models.nmf.params.max_iter=21"])
    assert changed[0].key != first[0].key
    moved = jobs_of(tmp_path, text, ["output.dir=elsewhere"])
    assert moved[0].key == first[0].key  # where results go is not part of a job


def test_grid_values_become_one_job_each_with_a_variant_label(tmp_path):
    text = pipeline_text(models=("gnmf",), k="[2]", draws=1,
                         params={"gnmf": "{ lam = [1.0, 10.0], n_neighbors = [3, 5], "
                                         "max_iter = 5 }"})
    jobs = jobs_of(tmp_path, text)
    assert sorted(j.variant for j in jobs) == [
        "lam=1.0,n_neighbors=3", "lam=1.0,n_neighbors=5",
        "lam=10.0,n_neighbors=3", "lam=10.0,n_neighbors=5"]
    assert {(j.params["lam"], j.params["n_neighbors"]) for j in jobs} == {
        (1.0, 3), (1.0, 5), (10.0, 3), (10.0, 5)}
    assert all(j.params["max_iter"] == 5 for j in jobs)


def test_sweep_varies_one_parameter_at_a_time_and_keeps_baselines_once(tmp_path):
    text = pipeline_text(models=("kmeans", "gnmf"), k="[2]", draws=1,
                         params={"gnmf": "{ lam = 100.0, n_neighbors = 5 }"},
                         extra="documents = \"class-subset\"\n[protocol.sweep]\n"
                               "lam = [1.0, 10.0, 1000.0]\nn_neighbors = [3, 7]\n")
    text = text.replace('kind = "class-subset"', 'kind = "sweep"')
    jobs = jobs_of(tmp_path, text)
    gnmf = {j.variant: j.params for j in jobs if j.model == "gnmf"}
    assert sorted(gnmf) == ["lam=1.0", "lam=10.0", "lam=1000.0", "n_neighbors=3",
                            "n_neighbors=7"]
    assert gnmf["lam=10.0"]["n_neighbors"] == 5  # the other parameter stays fixed
    assert gnmf["n_neighbors=7"]["lam"] == 100.0
    assert [j.variant for j in jobs if j.model == "kmeans"] == [""]
    assert {j.protocol for j in jobs} == {"sweep"}


def test_ablation_variants_override_the_model_params(tmp_path):
    text = pipeline_text(models=("gnmf",), k="[2, 3]", draws=2,
                         params={"gnmf": "{ lam = 100.0, max_iter = 5 }"})
    text = text.replace('kind = "class-subset"', 'kind = "ablation"\ndocuments = "class-subset"')
    text = text.replace('params = { lam = 100.0, max_iter = 5 }',
                        'params = { lam = 100.0, max_iter = 5 }\n'
                        'variants = { full = {}, "no-graph" = { lam = 0.0 } }')
    jobs = jobs_of(tmp_path, text)
    assert len(jobs) == 2 * 2 * 2
    params = {j.variant: j.params for j in jobs}
    assert params == {"full": {"lam": 100.0, "max_iter": 5},
                      "no-graph": {"lam": 0.0, "max_iter": 5}}


def test_full_documents_convergence_and_seeds(tmp_path):
    text = ('[[corpora]]\nname = "tdt2"\n[[models]]\nname = "nmf"\n'
            '[protocol]\nkind = "convergence"\nk = "classes"\nseeds = [3, 7]\n')
    jobs = jobs_of(tmp_path, text)
    assert [(j.k, j.draw, j.seed) for j in jobs] == [(None, None, 3), (None, None, 7)]
    assert all(j.record_history and j.selection["draw_seed"] is None for j in jobs)
    repeats = jobs_of(tmp_path, text.replace("seeds = [3, 7]", "seed = 5\nrepeats = 3"))
    assert [j.seed for j in repeats] == [5, 6, 7]


def test_labelled_fraction_is_part_of_every_job(tmp_path):
    jobs = jobs_of(tmp_path, pipeline_text(models=("nmf", "dnmf"), k="[2]", draws=1,
                                           extra="labeled_per_class = 2\n"))
    assert {str(j.labeled) for j in jobs} == {"{'per_class': 2}"}


def test_overrides_reach_tables_entries_by_name_index_or_star():
    config = {"protocol": {"draws": 5}, "models": [{"name": "nmf"}, {"name": "gnmf"}]}
    apply_overrides(config, ["protocol.draws=2"])
    apply_overrides(config, ["protocol.k=[2, 3]"])
    apply_overrides(config, ["models.gnmf.params.lam=1e3"])
    apply_overrides(config, ["models.0.params.ncw=true"])
    apply_overrides(config, ["models.*.params.max_iter=7"])
    apply_overrides(config, ["output.dir=runs/x"])
    assert config["protocol"] == {"draws": 2, "k": [2, 3]}
    assert config["models"][0]["params"] == {"ncw": True, "max_iter": 7}
    assert config["models"][1]["params"] == {"lam": 1000.0, "max_iter": 7}
    assert config["output"]["dir"] == "runs/x"


@pytest.mark.parametrize("override, message", [
    ("protocol.draws", "key=value"),
    ("models.sodnmf.params.alpha=1", "no entry named 'sodnmf'"),
    ("models.5.params.alpha=1", "out of range"),
    ("protocol.draws.x=1", "not a table"),
])
def test_bad_overrides_say_what_is_wrong(override, message):
    config = {"protocol": {"draws": 5}, "models": [{"name": "nmf"}]}
    with pytest.raises(InvalidInputError, match=message):
        apply_overrides(config, [override])


@pytest.mark.parametrize("change, message", [
    (('[protocol]', '[protocl]'), "unknown key 'protocl'; the known keys are: pipeline, "),
    (('draws = 2', 'draws = 2\nfolds = 3'), "unknown key 'folds'"),
    (('name = "nmf"', 'name = "nmff"'), "unknown model 'nmff'; known models: .*gnmf"),
    (('name = "tdt2"', 'name = "tdt3"'), "unknown corpus 'tdt3'; known corpora: .*reuters"),
    (('name = "tdt2"', 'name = "tdt2"\nselect = { topp = 3 }'),
     "unknown key 'topp'; the known keys are: variant, min_class_size, top"),
    (('name = "tdt2"', 'name = "tdt2"\npreprocess = { stopwords = "x" }'),
     "unknown key 'stopwords'.*stop_words"),
    (('n_init = 2, init_iter', 'n_init = 2, n_components = 4, init_iter'),
     "n_components is set by --k"),
    (('n_init = 2, init_iter', 'n_inits = 2, init_iter'), "unknown parameter 'n_inits'"),
    (('n_init = 2, init_iter', 'n_init = -2, init_iter'), "'n_init' parameter of NMF"),
    (('kind = "class-subset"', 'kind = "bootstrap"'), "unknown kind 'bootstrap'"),
    (('draws = 2', 'draws = 0'), "draws"),
    (('k = { from = 2, to = 3 }', 'k = { from = 3, to = 2 }'), "from <= to"),
    (('k = { from = 2, to = 3 }', 'k = "classes"'), "needs documents = \"full\""),
    (('kind = "class-subset"', 'kind = "ablation"\ndocuments = "class-subset"'),
     "needs a model with variants"),
    (('draws = 2', 'draws = 2\nlabeled_fraction = 1.5'), "labeled_fraction must be in"),
    (('draws = 2', 'draws = 2\nlabeled_fraction = 0.1\nlabeled_per_class = 2'), "not both"),
    (('draws = 2', 'draws = 2\nseeds = [1]\nrepeats = 2'), "not both"),
    (('draws = 2', 'draws = 2\nk = [2, 2]'), None),  # TOML itself refuses a repeated key
])
def test_bad_pipelines_fail_with_a_clear_message(tmp_path, change, message):
    text = pipeline_text(models=("nmf",)).replace(*change)
    assert text != pipeline_text(models=("nmf",))
    with pytest.raises((InvalidInputError, UnknownNameError), match=message or "TOML"):
        load(tmp_path, text)


def test_a_job_listed_twice_is_refused(tmp_path):
    text = pipeline_text(models=("nmf",), k="[2, 3, 2]")
    with pytest.raises(InvalidInputError, match="listed twice"):
        load(tmp_path, text)


def test_the_default_output_folder_is_named_after_the_pipeline(tmp_path):
    pipeline = load_pipeline(write_pipeline(tmp_path / "p.toml", name="my-run"))
    assert pipeline.name == "my-run"
    assert pipeline.ledger_path.as_posix() == "runs/my-run/ledger.sqlite"


def test_a_million_job_grid_is_counted_without_being_expanded(tmp_path):
    with time_limit(30):
        pipeline = load(tmp_path, MILLION)
        assert count_jobs(pipeline) == 10 ** 6
        first = list(itertools.islice(iter_jobs(pipeline), 3))
    assert [j.params for j in first] == [{"n_init": 1, "init_iter": 1, "max_iter": m}
                                         for m in (1, 2, 3)]
    assert first[0].variant == "n_init=1,init_iter=1,max_iter=1"


def test_counting_follows_the_expansion(tmp_path):
    text = pipeline_text(models=("kmeans", "gnmf"), k="{ from = 2, to = 4 }", draws=3,
                         params={"gnmf": "{ lam = [1.0, 10.0], n_neighbors = [3, 5, 7] }"},
                         extra="seeds = [1, 2]\n")
    pipeline = load(tmp_path, text)
    assert count_jobs(pipeline) == len(expand(pipeline)) == 3 * 3 * 2 * (1 + 6)
    sweep = load(tmp_path, text.replace('kind = "class-subset"', 'kind = "sweep"\n'
                                        'documents = "class-subset"') +
                 "[protocol.sweep]\nlam = [0.1, 1.0, 5.0]\n",
                 ["models.gnmf.params.lam=2.0"])
    assert count_jobs(sweep) == len(expand(sweep)) == 3 * 3 * 2 * (1 + 3 * 3)


@pytest.mark.parametrize("params", ["{ max_iter = [] }", "{ lam = [1.0], max_iter = [] }"])
def test_an_empty_list_in_a_grid_is_an_error_naming_the_key(tmp_path, params):
    text = pipeline_text(models=("kmeans", "gnmf"), params={"gnmf": params})
    with pytest.raises(InvalidInputError, match=r"model 'gnmf'.*max_iter = \[\] is empty"):
        load(tmp_path, text)
    variant = pipeline_text(models=("gnmf",)).replace(
        'params = {', 'variants = { a = {}, b = { max_iter = [] } }\nparams = {')
    with pytest.raises(InvalidInputError, match=r"variant 'b'.*max_iter = \[\] is empty"):
        load(tmp_path, variant)


def test_a_pipeline_file_that_is_not_utf8_names_the_file_and_the_byte(tmp_path):
    path = tmp_path / "p.toml"
    text = pipeline_text(models=("nmf",)).replace('name = "tiny"', 'name = "caf\u00e9"')
    path.write_bytes(text.encode("latin-1"))
    offset = text.encode("latin-1").index(b"\xe9")
    with pytest.raises(InvalidInputError, match=rf"{path}.* not UTF-8.* byte 0xe9 at offset "
                                                rf"{offset} \(line 2\)"):
        load_pipeline(path)
    path.write_bytes(b"\xef\xbb\xbf" + text.encode("utf-8"))  # a byte-order mark is fine
    assert load_pipeline(path).name == "caf\u00e9"

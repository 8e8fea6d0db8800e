"""``textcluster models``, model names checked with "did you mean", ``-k`` and boolean ``--set``
values on ``textcluster run``."""

import ast

import numpy as np
import pytest
import scipy.sparse as sp
from click.testing import CliRunner

from textcluster.cli import main
from textcluster.batch.overrides import parse_override
from textcluster.models import MODELS
from textcluster.models._memory import MEMORY_ENV, InsufficientMemoryError
from textcluster.registry import describe_model

from ._corpora import write_folder_corpus

FAST_NMF = ["--set", "n_init=2", "--set", "max_iter=30", "--set", "n_assign_init=3"]
N_BY_N = {"kagpnmf"}  # AGPNMF holds S on its kNN support by default


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def fails(*args):
    """A command that must stop with a one-paragraph message and exit code 2."""
    result = invoke(*args)
    assert result.exit_code == 2, result.output
    assert isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output
    return result.output


@pytest.fixture(scope="module")
def corpus_dir(tmp_path_factory):
    return write_folder_corpus(tmp_path_factory.mktemp("cli-models") / "news")


def test_models_lists_every_model_on_one_line():
    result = invoke("models")
    assert result.exit_code == 0, result.output
    rows = {line.split()[0]: line for line in result.output.splitlines() if line.strip()}
    for name in MODELS.names():
        cls = MODELS.get(name)
        _, supervision, n_by_n, *_ = rows[name].split()
        assert supervision == ("semi-supervised" if cls.semi_supervised else "unsupervised")
        assert n_by_n == ("yes" if name in N_BY_N else "no"), name
    assert "Graph-regularized NMF" in rows["gnmf"] and "003 eqs. 8, 15–16" in rows["gnmf"]
    assert "paper" in result.output.splitlines()[0]


@pytest.mark.parametrize("name", MODELS.names())
def test_n_by_n_memory_is_what_the_fit_checks(name, monkeypatch):
    """The models said to need n × n memory are those that refuse a fit for lack of it."""
    monkeypatch.setenv(MEMORY_ENV, "1K")  # below one 40 × 40 matrix
    cls = MODELS.get(name)
    rng = np.random.default_rng(0)
    X = sp.random(40, 30, density=0.3, random_state=0, format="csr")
    fast = {"n_components": 2, "max_iter": 3, "n_init": 1, "init_iter": 1, "lam": 1.0,
            "n_assign_init": 1, "random_state": 0}
    model = cls(**{p: v for p, v in fast.items() if p in cls().get_params()})
    y = np.where(rng.random(40) < 0.3, rng.integers(0, 2, 40), -1) if cls.semi_supervised \
        else None
    y = None if y is None else np.r_[0, 1, y[2:]]  # both classes labelled
    if describe_model(name, cls).dense_memory:
        with pytest.raises(InsufficientMemoryError):
            model.fit(X, y)
    else:
        model.fit(X, y)
    assert describe_model(name, cls).dense_memory == (name in N_BY_N)


@pytest.mark.parametrize("name", MODELS.names())
def test_models_name_shows_every_parameter_with_its_default(name):
    result = invoke("models", name)
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    cls = MODELS.get(name)
    defaults = cls().get_params()
    shown = {}
    for line in lines:
        words = line.split()
        if line.startswith("  ") and words and words[0] in defaults and "default" in words:
            shown[words[0]] = line.split(" default ", 1)[1].split(" (set with")[0].strip()
    assert set(shown) == set(defaults)
    for param, default in shown.items():
        expected = defaults[param]
        assert (default == "None" if expected is None
                else ast.literal_eval(default) == expected), (param, default)
    assert lines[0].startswith(f"{name}: ")
    supervision = "semi-supervised" if cls.semi_supervised else "unsupervised"
    assert any(line.split()[:2] == ["supervision", supervision] for line in lines)
    graph = "a document graph" if cls.uses_document_graph else "none"
    assert any(line.strip() == f"graph        {graph}" for line in lines)


def test_models_gnmf_describes_its_parameters():
    output = invoke("models", "gnmf").output
    assert 'lam            float ≥ 0 or "auto"' in output
    assert "The graph weight λ" in output
    assert "(set with --k (protocol.k" in output and "(set with --seed (protocol.seeds" in output
    assert "O(nnz + (n + m)k + n·n_neighbors)" in output


def test_models_unknown_name_suggests_the_closest():
    output = fails("models", "gmnf")
    assert "unknown model 'gmnf' (did you mean 'gnmf'?)" in output
    assert "known models:" in output and "sodnmf" in output
    assert "did you mean 'kmeans'" in fails("models", "KMeans")
    assert "did you mean" not in fails("models", "lda")


def test_run_unknown_model_suggests_before_loading_the_corpus():
    output = fails("run", "no-such-corpus", "--model", "gmnf")
    assert "unknown model 'gmnf' (did you mean 'gnmf'?)" in output
    assert "corpus" not in output  # the model is checked first


def test_run_takes_k_as_short_option(corpus_dir):
    result = invoke("run", corpus_dir, "--model", "nmf", "-k", 2, *FAST_NMF, "--terms", 0)
    assert result.exit_code == 0, result.output
    assert "2 clusters" in result.output


@pytest.mark.parametrize("value", ["True", "true", "False", "false"])
def test_run_accepts_python_and_json_booleans(corpus_dir, value):
    result = invoke("run", corpus_dir, "--model", "nmf", *FAST_NMF, "--set", f"ncw={value}",
                    "--terms", 0)
    assert result.exit_code == 0, result.output


def test_override_values_are_toml_and_python_booleans():
    pairs = [parse_override(text) for text in
             ["a=True", "b=False", "c=true", "d=false", "e=10", "f=heat", "g=TRUE", "h=1e3",
              "i=[2, 3]", 'j="x y"']]
    assert dict(pairs) == {"a": True, "b": False, "c": True, "d": False, "e": 10, "f": "heat",
                           "g": "TRUE", "h": 1000.0, "i": [2, 3], "j": "x y"}


@pytest.mark.parametrize("name", ["nmf", "gnmf", "agpnmf", "lccf", "sodnmf"])
def test_models_name_says_how_new_documents_are_placed(name):
    output = invoke("models", name).output
    assert "new documents (transform, predict, textcluster assign):" in output
    assert "Out of sample" in output

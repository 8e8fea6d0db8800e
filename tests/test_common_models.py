"""Checks every registered model must pass (DESIGN §3.7)."""

import threading
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.estimator_checks import parametrize_with_checks

from textcluster.metrics import nmi
from textcluster.models import MODELS, make_model
from textcluster.models._base import FactorizationModel

from ._planted import planted_corpus, poisson_tfidf

ALL = MODELS.names()
FACTORIZATIONS = [n for n in ALL if issubclass(MODELS.get(n), FactorizationModel)]
# The projective models' cube-root steps move slowly once the graph term leads (their scale-free
# default γ): on the planted corpora 60 iterations gave NMI 0.56-0.96, 200 gave 0.93-1.0.
PROJECTIVE = {"n_init": 3, "init_iter": 10, "max_iter": 200, "n_assign_init": 5}
FAST = {"kmeans": {"n_init": 3}, "lsi-kmeans": {"n_init": 3}, "agpnmf": PROJECTIVE,
        "kagpnmf": PROJECTIVE}


def fast_model(name, **params):
    """A quick configuration of a registered model for tests."""
    defaults = FAST.get(name, {"n_init": 3, "init_iter": 10, "max_iter": 60,
                               "n_assign_init": 5})
    return make_model(name, **{**defaults, **params})


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        yield


def fit_quietly(model, X, **fit_params):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # e.g. GNMF's graph-check fallback
        return model.fit(X, **fit_params)


def _sklearn_instances():
    for name in ALL:
        yield fast_model(name, n_components=2, random_state=0)


def _expected_failures(estimator):
    """The checks a model declares it fails (``_expected_failed_checks``), as strict xfails."""
    return dict(getattr(estimator, "_expected_failed_checks", {}))


@parametrize_with_checks(list(_sklearn_instances()), expected_failed_checks=_expected_failures,
                         xfail_strict=True)
def test_sklearn_compatible(estimator, check):
    check(estimator)


@pytest.mark.parametrize("name", ALL)
def test_planted_clusters_recovered(name):
    X, y = planted_corpus(seed=1)
    labels = fast_model(name, n_components=3, random_state=0).fit_predict(X)
    assert nmi(y, labels) > 0.9


@pytest.mark.parametrize("name", ALL)
def test_same_seed_same_result(name):
    X, _ = planted_corpus(seed=2)
    a = fast_model(name, n_components=3, random_state=7).fit(X)
    b = fast_model(name, n_components=3, random_state=7).fit(X)
    np.testing.assert_array_equal(a.labels_, b.labels_)
    if hasattr(a, "components_"):
        np.testing.assert_array_equal(a.components_, b.components_)


@pytest.mark.parametrize("name", ALL)
def test_sparse_equals_dense(name):
    X, _ = planted_corpus(seed=3)
    a = fast_model(name, n_components=3, random_state=0).fit_transform(X)
    b = fast_model(name, n_components=3, random_state=0).fit_transform(X.toarray())
    np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("name", ALL)
def test_k_larger_than_documents_is_a_clear_error(name):
    X, _ = planted_corpus(n_per_class=2, seed=4)
    with pytest.raises(ValueError, match="(documents|larger)"):
        fast_model(name, n_components=X.shape[0] + 1).fit(X)


@pytest.mark.parametrize("name", FACTORIZATIONS)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_objective_never_increases(name, seed):
    rng = np.random.default_rng(seed)
    X = sp.random(80, 50, density=0.2, random_state=seed, format="csr")
    model = make_model(name, n_components=int(rng.integers(2, 6)), n_init=1, max_iter=150,
                       tol=0, random_state=seed, n_assign_init=2)
    for strength, fixed in (("lam", 1.0), ("gamma", 100.0), ("alpha", 100.0)):  # the update
        if model.get_params().get(strength) == "auto":  # rules at one λ (the choice: elsewhere)
            model.set_params(**{strength: fixed})
    model.fit(X)
    history = model.objective_history_
    assert len(history) == 151
    assert np.all(np.diff(history) <= 1e-10 * history[0])


@pytest.mark.parametrize("name", FACTORIZATIONS)
@pytest.mark.parametrize("seed", [0, 1])
def test_objective_never_increases_in_float32(name, seed):
    """float32 is the pipeline's default: the recorded objective must stay monotone up to
    float32 rounding of the objective itself, also when a graph term dominates it."""
    X, _ = poisson_tfidf(seed=seed)
    model = make_model(name, n_components=2, n_init=1, max_iter=60, tol=0, random_state=seed,
                       n_assign_init=2)
    history = fit_quietly(model, X).objective_history_
    assert np.all(np.diff(history) <= 1e-5 * np.abs(history[1:]))


@pytest.mark.parametrize("name", FACTORIZATIONS)
def test_factors_nonnegative_finite_with_right_shapes(name):
    X, _ = planted_corpus(seed=5)
    model = fast_model(name, n_components=4, random_state=0)
    V = model.fit_transform(X)
    assert V.shape == (X.shape[0], 4)
    assert model.components_.shape == (4, X.shape[1])
    for factor in (V, model.components_):
        assert np.all(np.isfinite(factor)) and factor.min() >= 0


@pytest.mark.parametrize("name", FACTORIZATIONS)
def test_dtype_kept(name):
    X, _ = planted_corpus(seed=6)
    model = fast_model(name, n_components=3, random_state=0)
    V = model.fit_transform(X.astype(np.float32))
    assert V.dtype == np.float32 and model.components_.dtype == np.float32


@pytest.mark.parametrize("name", FACTORIZATIONS)
def test_custom_init_is_used(name):
    X, _ = planted_corpus(seed=7)
    rng = np.random.default_rng(0)
    W, H = rng.random((X.shape[0], 3)), rng.random((3, X.shape[1]))
    # (a fixed seed: with λ chosen, the candidates' clusters come from k-means)
    a, b = (make_model(name, n_components=3, init="custom", max_iter=5, tol=0, random_state=0)
            .fit(X, W=W, H=H) for _ in range(2))
    np.testing.assert_array_equal(a.components_, b.components_)
    # every update kept: with λ chosen, five at each λ of the path until it ended (after
    # the start; no graph-led fit)
    selection = getattr(a, "lam_selection_", None)
    assert a.n_iter_ == (5 * (len(selection["candidates"]) - 1) if selection else 5)


@pytest.mark.parametrize("name", FACTORIZATIONS)
def test_zero_document_and_zero_term_stay_finite(name):
    X, _ = planted_corpus(seed=8, sparse=False)
    X[0] = 0.0
    X[:, 0] = 0.0
    model = fast_model(name, n_components=3, random_state=0)
    V = model.fit_transform(sp.csr_matrix(X))
    assert np.all(np.isfinite(V)) and np.all(np.isfinite(model.components_))


@pytest.mark.parametrize("name", FACTORIZATIONS)
def test_negative_input_is_a_clear_error(name):
    X, _ = planted_corpus(seed=9, sparse=False)
    X[3, 3] = -1.0
    with pytest.raises(ValueError, match="non-negative|Negative"):
        fast_model(name, n_components=3).fit(X)


@pytest.mark.parametrize("name", FACTORIZATIONS)
def test_one_component(name):
    X, _ = planted_corpus(seed=10)
    labels = fast_model(name, n_components=1, random_state=0).fit_predict(X)
    assert set(labels) == {0}


@pytest.mark.parametrize("name", FACTORIZATIONS)
def test_starts_side_by_side_give_the_fit_run_in_turn(name, monkeypatch):
    # a fit's random starts run two at a time on two cores; they are drawn before any of them
    # runs, so the starts' fits, the one kept and the clusters are those of one at a time
    from textcluster.models import _base

    X, _ = planted_corpus(seed=2)
    monkeypatch.setattr(_base, "n_threads", lambda: 2)
    fits, lanes = {}, set()
    start = _base.FactorizationModel._start

    def spied(self, factors, ctx, n_iter):
        lanes.add(threading.current_thread().name)
        return start(self, factors, ctx, n_iter)

    monkeypatch.setattr(_base.FactorizationModel, "_start", spied)
    for side_by_side in (1, 2):
        monkeypatch.setattr(_base, "STARTS_SIDE_BY_SIDE", side_by_side)
        model = fit_quietly(fast_model(name, n_components=3, random_state=7), X)
        fits[side_by_side] = model
    np.testing.assert_array_equal(fits[1].labels_, fits[2].labels_)
    np.testing.assert_array_equal(fits[1].objective_history_, fits[2].objective_history_)
    np.testing.assert_array_equal(fits[1].components_, fits[2].components_)
    protocol = getattr(fits[1], "lam_selection_", None) is None  # not a choice of λ
    if fits[1].init == "random" and fits[1].n_init > 1 and protocol:
        assert any(lane.startswith("textcluster-beside") for lane in lanes)

"""What is special to convex NMF and cluster-NMF (common checks: test_common_models.py)."""

import numpy as np
import pytest
import scipy.sparse as sp

from textcluster.corpora import load_corpus
from textcluster.metrics import nmi
from textcluster.models import CF, PNMF, ConvexNMF, LSIKMeans
from textcluster.models.convex import (
    update_cluster_indicators,
    update_convex_documents,
    update_convex_weights,
)
from textcluster.pipeline import represent
from textcluster.pipeline.protocol import class_subset

from ._planted import planted_corpus


def dense(X):
    return X.toarray() if sp.issparse(X) else np.asarray(X)


@pytest.mark.parametrize("variant", ["convex", "cluster"])
def test_the_default_start_is_the_clusters_of_lsa_kmeans(variant):
    X, _ = planted_corpus(seed=41, noise=0.6)
    model = ConvexNMF(3, variant=variant, random_state=2)
    start = model._lsa_start(model._prepare(X, None, None))
    lsa = LSIKMeans(3, random_state=2).fit(X).labels_
    assert nmi(start.G.argmax(axis=1), lsa) == pytest.approx(1.0)
    if variant == "convex":  # Ding, Li & Jordan: G = H + 0.2, W = G / cluster sizes
        np.testing.assert_allclose(start.W * np.bincount(lsa), start.G, rtol=1e-6)
        assert start.G.min() == pytest.approx(0.2)


@pytest.mark.parametrize("cls", [PNMF, CF, ConvexNMF])
def test_the_zoo_starts_once_from_lsa_kmeans_by_default(cls):
    X, _ = planted_corpus(seed=42)
    model = cls(3, max_iter=20, random_state=0).fit(X)
    assert model.init == "lsa-kmeans" and model.n_iter_ == 20 == model.planned_iterations()
    history = model.objective_history_
    assert len(history) == 21 and np.all(np.diff(history) <= 1e-9 * history[0])


def test_convex_updates_match_ding_li_jordan():
    rng = np.random.default_rng(0)
    X = rng.random((30, 12))
    K, G, W = X @ X.T, rng.random((30, 3)), rng.random((30, 3))
    G_expected = G * np.sqrt(K @ W / (G @ W.T @ K @ W))
    update_convex_documents(G, K @ W, W.T @ K @ W)
    np.testing.assert_allclose(G, G_expected)
    W_expected = W * np.sqrt(K @ G / (K @ W @ G.T @ G))
    update_convex_weights(W, K @ W, K @ G, G)
    np.testing.assert_allclose(W, W_expected)


def test_cluster_update_matches_the_derived_rule():
    rng = np.random.default_rng(1)
    X = rng.random((30, 12))
    K, H = X @ X.T, rng.random((30, 4))
    expected = H * np.cbrt(2 * K @ H / (K @ H @ H.T @ H + H @ H.T @ K @ H))
    update_cluster_indicators(H, K @ H)
    np.testing.assert_allclose(H, expected)


@pytest.mark.parametrize("seed", range(6))
def test_cluster_update_never_increases_the_objective_from_any_start(seed):
    """The derived 1/3-power rule is a majorization step: check it on random data and
    starts of every scale (too small, too large, uneven columns)."""
    rng = np.random.default_rng(seed)
    X = rng.random((40, 25)) * (rng.random((40, 25)) < 0.3)
    K = X @ X.T
    H = rng.random((40, 1 + seed % 4)) * 10.0 ** rng.integers(-3, 3)
    H[:, 0] *= 7

    def objective(H):
        return np.linalg.norm(X - H @ H.T @ X) ** 2

    values = [objective(H)]
    for _ in range(200):
        update_cluster_indicators(H, K @ H)
        values.append(objective(H))
    assert np.all(np.diff(values) <= 1e-10 * values[0])
    assert values[-1] < values[0]


@pytest.mark.parametrize("variant", ["convex", "cluster"])
def test_recorded_objective_equals_the_dense_objective(variant):
    X, _ = planted_corpus(seed=40)
    model = ConvexNMF(3, variant=variant, init="random", n_init=1, max_iter=12,
                      random_state=0).fit(X)
    ctx = model._prepare(X, None, None)
    factors = model._random_factors(ctx, np.random.RandomState(0))
    for _ in range(12):
        last = model._update(factors, ctx)
    G, W = factors.G, factors.W
    expected = np.linalg.norm(dense(X) - G @ W.T @ dense(X)) ** 2
    assert last == pytest.approx(expected, rel=1e-9)
    assert model.objective_history_[-1] == pytest.approx(expected, rel=1e-9)


def test_convex_nmf_and_concept_factorization_reach_the_same_fit():
    """Same objective (‖X − G Wᵀ X‖², non-negative data), different update rules."""
    X, _ = planted_corpus(n_per_class=30, seed=41)
    convex = ConvexNMF(3, n_init=1, max_iter=2000, random_state=0).fit(X)
    cf = CF(3, ncw=False, n_init=1, max_iter=2000, random_state=0).fit(X)
    assert convex.objective_history_[-1] == pytest.approx(cf.objective_history_[-1], rel=0.02)


def test_cluster_variant_uses_one_factor():
    X, _ = planted_corpus(seed=42)
    model = ConvexNMF(3, variant="cluster", n_init=2, init_iter=10, max_iter=60,
                      random_state=0)
    H = model.fit(X).concept_weights_  # the one factor: the codes and the basis weights
    np.testing.assert_allclose(model.components_, H.T @ dense(X), rtol=1e-10)
    # a custom start needs only W; H (the basis) has no role in cluster-NMF
    W0 = np.random.default_rng(0).random((X.shape[0], 3))
    a = ConvexNMF(3, variant="cluster", init="custom", max_iter=5).fit(X, W=W0)
    b = ConvexNMF(3, variant="cluster", init="custom", max_iter=5).fit(
        X, W=W0, H=np.ones((3, X.shape[1])))
    np.testing.assert_array_equal(a.components_, b.components_)


@pytest.mark.parametrize("variant", ["convex", "cluster"])
def test_as_many_components_as_documents(variant):
    X, _ = planted_corpus(n_per_class=4, terms_per_class=8, seed=43)
    model = ConvexNMF(X.shape[0], variant=variant, n_init=1, max_iter=30, random_state=0,
                      n_assign_init=1)
    V = model.fit_transform(X)
    assert V.shape == (12, 12) and np.all(np.isfinite(V)) and V.min() >= 0
    assert np.all(np.diff(model.objective_history_) <= 1e-10 * model.objective_history_[0])


@pytest.mark.parametrize("variant", ["convex", "cluster"])
def test_a_kernel_that_does_not_fit_is_used_through_the_documents(monkeypatch, variant):
    X, _ = planted_corpus(seed=44)
    model = ConvexNMF(3, variant=variant, n_init=1, max_iter=30, random_state=0,
                      n_assign_init=1)
    dense_fit = np.array(model.fit(X).objective_history_)
    monkeypatch.setenv("TEXTCLUSTER_MEMORY_LIMIT", "50K")  # K: 112.5 KB (float64)
    np.testing.assert_allclose(model.fit(X).objective_history_, dense_fit, rtol=1e-9)


@pytest.mark.slow
def test_convex_and_cluster_nmf_reach_concept_factorizations_fit_on_tdt2(real_data_dir):
    """On a TDT2 five-class draw (tf-idf on the whole corpus, 713 documents) the three
    factorizations of the form ``X ≈ V Aᵀ X`` reach about the same least-squares fit, with
    objectives that never increase. Measured (draw 3, 300 iterations): convex NMF 584.97,
    cluster-NMF 585.08, CF without NCW 584.94."""
    corpus = load_corpus("tdt2", real_data_dir)
    X, labels = represent(corpus).X, np.asarray(corpus.labels)
    X = X[class_subset(labels, 5, 3)]
    fits = {}
    for name, model in (("convex", ConvexNMF(5, max_iter=300, random_state=0)),
                        ("cluster", ConvexNMF(5, variant="cluster", max_iter=300,
                                              random_state=0)),
                        ("cf", CF(5, ncw=False, max_iter=300, random_state=0))):
        V = model.fit_transform(X)
        history = model.objective_history_
        assert np.all(np.diff(history) <= 1e-6 * history[0]), name
        assert V.dtype == np.float32 and V.min() >= 0 and np.all(np.isfinite(V))
        fits[name] = history[-1]
    assert fits["convex"] == pytest.approx(fits["cf"], rel=0.01), fits
    assert fits["cluster"] == pytest.approx(fits["cf"], rel=0.01), fits

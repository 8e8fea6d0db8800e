"""What is special to the dual-graph models ANMF and SODNMF (the common checks are in
test_common_models.py)."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from textcluster import graph as graphs
from textcluster._errors import InvalidInputError
from textcluster.models import ANMF, GNMF, NMF, SODNMF
from textcluster.graph import label_aware_graph, term_knn_graph
from textcluster.metrics import nmi
from textcluster.models.dual import l2_half_penalty, label_slots
from textcluster.models.selection import LAM_PATH, cohesion

from ._planted import following_graph, linking_graph, planted_corpus

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")


def start(X, k, seed=0):
    rng = np.random.default_rng(seed)
    return rng.random((X.shape[0], k)), rng.random((k, X.shape[1]))


def some_labels(y, fraction=0.2, seed=0):
    """``y`` with all but ``fraction`` of each class set to -1 (unlabelled)."""
    rng = np.random.default_rng(seed)
    return np.where(rng.random(y.size) < fraction, y, -1)


def laplacian(W):
    return graphs.laplacian(W).toarray()


# -- the term graph ------------------------------------------------------------------------------
def test_term_graph_is_the_knn_graph_of_the_columns_and_skips_absent_terms():
    X, _ = planted_corpus(seed=20, sparse=False)
    X[:, [0, 7]] = 0.0
    G = term_knn_graph(sp.csr_matrix(X), n_neighbors=4)
    assert sp.issparse(G) and G.shape == (X.shape[1], X.shape[1])
    assert G[[0, 7]].nnz == 0 and G[:, [0, 7]].nnz == 0
    keep = np.setdiff1d(np.arange(X.shape[1]), [0, 7])
    expected = graphs.knn_graph(X[:, keep].T, n_neighbors=4)
    np.testing.assert_array_equal(G[keep][:, keep].toarray(), expected.toarray())


def test_precomputed_term_graph_is_used():
    X, _ = planted_corpus(seed=21)
    W, H = start(X, 3)
    built = ANMF(3, mu=1.0, init="custom", max_iter=20, graph_check=False).fit(X, W=W, H=H)
    same = ANMF(3, mu=1.0, init="custom", max_iter=20, graph_check=False).fit(
        X, W=W, H=H, term_graph=built.term_graph_)
    empty = ANMF(3, mu=1.0, init="custom", max_iter=20, graph_check=False).fit(
        X, W=W, H=H, term_graph=sp.csr_matrix((X.shape[1], X.shape[1])))
    np.testing.assert_array_equal(same.components_, built.components_)
    assert not np.allclose(empty.components_, built.components_)
    assert empty.term_graph_.nnz == 0


@pytest.mark.parametrize("model", [ANMF, SODNMF])
def test_term_graph_of_the_wrong_shape_is_a_clear_error(model):
    X, _ = planted_corpus(seed=22)
    with pytest.raises(InvalidInputError, match="term graph has one row and one column per"):
        model(3, n_init=1, max_iter=2).fit(X, term_graph=sp.eye(X.shape[0]))


# -- ANMF ----------------------------------------------------------------------------------------
def test_anmf_basis_update_is_the_derived_eq_9():
    X, _ = planted_corpus(seed=23, sparse=False)
    W, H = start(X, 3)
    model = ANMF(3, lam=2.0, mu=3.0, scaling="cai", init="custom", max_iter=1,
                 graph_check=False)
    ctx = model._prepare(X, None, None)
    factors = model._custom_factors(ctx, W, H)
    U, V = factors.U.copy(), factors.V.copy()
    Wd, Wt = ctx.W.toarray(), ctx.Wt.toarray()
    Dd, Dt = np.diag(Wd.sum(1)), np.diag(Wt.sum(1))
    U_ref = U * (X.T @ V + 3.0 * Wt @ U) / (U @ V.T @ V + 3.0 * Dt @ U)
    V_ref = V * (X @ U_ref + 2.0 * Wd @ V) / (V @ U_ref.T @ U_ref + 2.0 * Dd @ V)
    value = model._update(factors, ctx)
    np.testing.assert_allclose(factors.U, U_ref, rtol=1e-12)
    np.testing.assert_allclose(factors.V, V_ref, rtol=1e-12)
    expected = (np.linalg.norm(X - V_ref @ U_ref.T) ** 2
                + 2.0 * np.trace(V_ref.T @ laplacian(ctx.W) @ V_ref)
                + 3.0 * np.trace(U_ref.T @ laplacian(ctx.Wt) @ U_ref))
    assert value == pytest.approx(expected, rel=1e-10)


@pytest.mark.parametrize("scaling", ["scale-free", "cai"])
def test_anmf_with_zero_mu_is_gnmf(scaling):
    # the document graph is left to the defaults: ANMF's is GNMF's
    X, _ = planted_corpus(seed=24)
    W, H = start(X, 3)
    common = dict(lam=50.0, scaling=scaling, graph_check=False)
    gnmf = GNMF(3, init="custom", max_iter=40, **common).fit(X, W=W, H=H)
    anmf = ANMF(3, mu=0.0, init="custom", max_iter=40, **common).fit(X, W=W, H=H)
    np.testing.assert_allclose(anmf.components_, gnmf.components_, rtol=1e-10)
    np.testing.assert_allclose(anmf.objective_history_, gnmf.objective_history_, rtol=1e-10)
    # random starts too: the same generator draws, the same kept run
    gnmf = GNMF(3, n_init=3, init_iter=5, max_iter=30, random_state=3, **common).fit(X)
    anmf = ANMF(3, mu=0.0, n_init=3, init_iter=5, max_iter=30, random_state=3, **common).fit(X)
    np.testing.assert_allclose(anmf.objective_history_, gnmf.objective_history_, rtol=1e-10)
    np.testing.assert_array_equal(anmf.labels_, gnmf.labels_)


def test_anmf_with_zero_weights_is_nmf():
    X, _ = planted_corpus(seed=25)
    W, H = start(X, 3)
    nmf = NMF(3, init="custom", max_iter=40).fit(X, W=W, H=H)
    anmf = ANMF(3, lam=0.0, mu=0.0, scaling="cai", graph_check=False, init="custom",
                max_iter=40).fit(X, W=W, H=H)
    np.testing.assert_allclose(anmf.components_, nmf.components_, rtol=1e-10)
    np.testing.assert_allclose(anmf.objective_history_, nmf.objective_history_, rtol=1e-10)


@pytest.mark.parametrize("scaling", ["scale-free", "cai"])
def test_anmf_objective_never_increases_with_both_graphs(scaling):
    X, _ = planted_corpus(seed=26)
    for mu in (0.1, 10.0):
        model = ANMF(3, lam=10.0, mu=mu, scaling=scaling, n_init=1, max_iter=120,
                     graph_check=False, random_state=0).fit(X)
        history = model.objective_history_
        assert np.all(np.diff(history) <= 1e-12 * history[0]), mu
        assert history[-1] < history[0]


@pytest.mark.parametrize("scaling", ["scale-free", "unit-basis"])
def test_anmf_term_graph_weight_acts_on_the_basis(scaling):
    # the caller's start has basis columns longer than 1: on the unit sphere the term graph's
    # step must still move them (it once compared against the columns off the sphere and kept
    # them all: the basis stayed at the start, rougher with μ = 1 than with μ = 0)
    X, _ = planted_corpus(seed=27)
    W, H = start(X, 3)
    assert np.linalg.norm(H, axis=1).min() > 1.5
    # at one λ: a λ chosen per fit would compare two document-graph strengths as well
    fits = [ANMF(3, lam=1.0, mu=mu, scaling=scaling, init="custom", max_iter=60,
                 graph_check=False).fit(X, W=W, H=H) for mu in (0.0, 1.0)]
    L = laplacian(fits[0].term_graph_)
    unit = [f.components_ / np.linalg.norm(f.components_, axis=1, keepdims=True) for f in fits]
    rough = [np.trace(c @ L @ c.T) for c in unit]
    assert rough[1] < rough[0]  # the term graph makes the basis smoother over the terms


def test_anmf_scale_free_weights_do_not_depend_on_the_data_or_edge_scale():
    X, _ = planted_corpus(seed=28)
    def fit(X, **graphs):
        return ANMF(3, mu=1.0, n_init=2, init_iter=5, max_iter=30, random_state=0).fit(X, **graphs)

    a, b = fit(X), fit(X * 1000.0)
    # the graphs given (judged on their own edges, where the model's own are judged on held-out
    # neighbours), as they are and scaled
    c = fit(X, graph=a.graph_, term_graph=a.term_graph_)
    d = fit(X, graph=a.graph_ * 3.0, term_graph=a.term_graph_ * 7.0)
    for one, other in ((a, b), (c, d)):
        np.testing.assert_array_equal(one.labels_, other.labels_)
        np.testing.assert_allclose(one.components_, other.components_, rtol=1e-6, atol=1e-12)


# -- SODNMF --------------------------------------------------------------------------------------
def dense_sodnmf_step(X, P, A, C, r, labelled, ctx):
    """One iteration of eqs. 32-35 (θQP corrected) with dense matrices."""
    aP, aS, b, t = ctx.terms.alpha, ctx.documents.alpha, ctx.beta, ctx.theta
    WP, WS = ctx.terms.W.toarray(), ctx.documents.W.toarray()
    DP, DS = np.diag(WP.sum(1)), np.diag(WS.sum(1))
    R = np.diag(r)
    S = C @ A
    Q = np.diag(1.0 / (4.0 * np.maximum(np.linalg.norm(P, axis=1) ** 1.5, 1e-10)))
    P = P * (X.T @ S @ R + aP * WP @ P) / (P @ R @ S.T @ S @ R + aP * DP @ P + b * P
                                            + t * Q @ P)
    A = A * (C.T @ X @ P @ R + aS * C.T @ WS @ C @ A) / (
        C.T @ C @ A @ R @ P.T @ P @ R + aS * C.T @ DS @ C @ A + b * C.T @ C @ A)
    C_new = C * (X @ P @ R @ A.T + aS * WS @ C @ A @ A.T) / np.maximum(
        C @ A @ R @ P.T @ P @ R @ A.T + aS * DS @ C @ A @ A.T + b * C @ A @ A.T, 1e-300)
    C = np.where(labelled[:, None], C_new, C)
    S = C @ A
    r = r * np.diag(S.T @ X @ P) / np.diag(P.T @ P @ R @ S.T @ S)
    value = (np.linalg.norm(X - S @ np.diag(r) @ P.T) ** 2
             + aP * np.trace(P.T @ laplacian(ctx.terms.W) @ P)
             + aS * np.trace(S.T @ laplacian(ctx.documents.W) @ S)
             + b * (np.sum(P * P) + np.sum(S * S)) + t * l2_half_penalty(P))
    return P, A, C, r, value


def test_sodnmf_updates_are_eqs_32_to_35():
    X, y = planted_corpus(seed=29, sparse=False)
    labels = some_labels(y, 0.3)
    model = SODNMF(3, alpha=2.0, beta=0.5, theta=0.3, init="custom", max_iter=1)
    ctx = model._prepare(X, labels, None)
    factors = model._random_factors(ctx, np.random.RandomState(0))
    factors.C.data[:] = np.random.default_rng(1).uniform(0.5, 1.5, X.shape[0])
    factors.S = factors.C @ factors.A
    P, A, C, r = (factors.P.copy(), factors.A.copy(), factors.C.toarray(),
                  factors.r.copy())
    for _ in range(3):
        P, A, C, r, expected = dense_sodnmf_step(X, P, A, C, r, labels >= 0, ctx)
        value = model._update(factors, ctx)
        assert value == pytest.approx(expected, rel=1e-9)
    np.testing.assert_allclose(factors.P, P, rtol=1e-9)
    np.testing.assert_allclose(factors.A, A, rtol=1e-9)
    np.testing.assert_allclose(factors.C.toarray(), C, rtol=1e-9)
    np.testing.assert_allclose(factors.r, r, rtol=1e-9)


def test_sodnmf_without_penalties_labels_and_scaling_is_nmf():
    X, _ = planted_corpus(seed=30)
    W, H = start(X, 3)
    nmf = NMF(3, init="custom", max_iter=40).fit(X, W=W, H=H)
    sod = SODNMF(3, alpha=0.0, beta=0.0, theta=0.0, scaling_matrix=False, init="custom",
                 max_iter=40).fit(X, W=W, H=H)
    np.testing.assert_allclose(sod.components_, nmf.components_, rtol=1e-10)
    np.testing.assert_allclose(sod.objective_history_, nmf.objective_history_, rtol=1e-10)


def test_sodnmf_with_only_the_graphs_is_anmf():
    X, _ = planted_corpus(seed=31)
    W, H = start(X, 3)
    sod = SODNMF(3, alpha=5.0, beta=0.0, theta=0.0, scaling_matrix=False, init="custom",
                 max_iter=40)
    sod.fit(X, W=W, H=H)
    ctx = sod._prepare(X, None, None)
    anmf = ANMF(3, lam=ctx.documents.alpha, mu=ctx.terms.alpha, scaling="cai",
                graph_check=False, init="custom", max_iter=40)
    anmf.fit(X, W=W, H=H, graph=sod.graph_, term_graph=sod.term_graph_)
    np.testing.assert_allclose(sod.components_, anmf.components_, rtol=1e-9)
    np.testing.assert_allclose(sod.objective_history_, anmf.objective_history_, rtol=1e-9)


ABLATIONS = {"full": {}, "alpha=0": {"alpha": 0.0}, "beta=0": {"beta": 0.0},
             "no R": {"scaling_matrix": False}, "theta=0": {"theta": 0.0}}


@pytest.mark.parametrize("ablation", list(ABLATIONS))
@pytest.mark.parametrize("with_labels", [False, True])
def test_sodnmf_objective_never_increases(ablation, with_labels):
    X, y = planted_corpus(seed=32)
    labels = some_labels(y) if with_labels else None
    # the paper's α, fixed (without labels α="auto" is chosen: one history per candidate)
    params = {"alpha": 100.0, **ABLATIONS[ablation]}
    model = SODNMF(3, n_init=1, max_iter=120, random_state=0, **params)
    V = model.fit_transform(X, labels)
    history = model.objective_history_
    assert np.all(np.diff(history) <= 1e-12 * history[0])
    assert history[-1] < history[0]
    assert np.all(np.isfinite(V)) and V.min() >= 0


def test_sodnmf_labelled_documents_of_a_class_share_a_direction():
    X, y = planted_corpus(seed=33)
    labels = some_labels(y, 0.3)
    V = SODNMF(3, n_init=1, max_iter=50, random_state=0).fit_transform(X, labels)
    for c in range(3):
        rows = V[labels == c]
        unit = rows / np.linalg.norm(rows, axis=1, keepdims=True)
        np.testing.assert_allclose(unit, np.broadcast_to(unit[0], unit.shape), atol=1e-10)


def test_sodnmf_labels_only_matter_when_given():
    X, y = planted_corpus(seed=34)
    a = SODNMF(3, n_init=1, max_iter=30, random_state=0).fit(X)
    b = SODNMF(3, n_init=1, max_iter=30, random_state=0).fit(X, np.full(y.size, -1))
    np.testing.assert_array_equal(a.components_, b.components_)
    c = SODNMF(3, n_init=1, max_iter=30, random_state=0).fit(X, some_labels(y))
    assert not np.allclose(a.components_, c.components_)


FAST = {"max_iter": 60, "n_init": 3, "init_iter": 10, "n_assign_init": 5}


def test_sodnmf_chooses_alpha_without_labels_and_keeps_the_papers_with_them():
    X, y = planted_corpus(seed=36)
    model = SODNMF(3, random_state=0, **FAST).fit(X)
    selection = model.lam_selection_
    assert selection["chosen"]["lam"] == model.lam_
    path = [c["lam"] for c in selection["candidates"] if c["start"] == "lsa-kmeans"]
    assert path == [0.0, *LAM_PATH]  # the start, then the whole path
    assert sum(c["chosen"] for c in selection["candidates"]) == 1
    assert model._assign() == "cosine"
    labelled = SODNMF(3, random_state=0, **FAST).fit(X, some_labels(y))
    assert labelled.lam_ == 100.0 and labelled.lam_selection_ is None
    assert labelled._assign() == "kmeans"
    assert SODNMF(3, alpha=3.0, random_state=0, **FAST).fit(X).lam_selection_ is None


@pytest.mark.parametrize("seed", [0, 1])
def test_sodnmf_keeps_a_graph_that_links_the_classes_weak(seed):
    X, y = planted_corpus(n_per_class=50, noise=0.3, seed=seed)
    G = linking_graph(y)
    model = SODNMF(3, random_state=seed, **FAST).fit(X, graph=G)
    # the graph-led clusters are not admitted, and the path's choice is as coherent as the fit
    # without the graph (SODNMF's path moves the clusters less than GNMF's: its penalties fade
    # as R grows, see Scale, so larger α stay admissible)
    candidates = model.lam_selection_["candidates"]
    assert model.lam_selection_["chosen"]["start"] == "lsa-kmeans"
    assert not candidates[-1]["admissible"] and candidates[-1]["start"] == "random"
    assert cohesion(X, model.labels_) >= 0.99 * candidates[1]["cohesion"]
    strong = SODNMF(3, alpha=1e3, random_state=seed, **FAST).fit(X, graph=G)
    assert nmi(y, model.labels_) > nmi(y, strong.labels_) + 0.1


@pytest.mark.parametrize("seed", [0, 1])
def test_sodnmf_uses_a_graph_that_follows_the_classes(seed):
    X, y = planted_corpus(n_per_class=50, noise=0.6, seed=seed)
    without = SODNMF(3, alpha=0.0, init="lsa-kmeans", random_state=seed, **FAST).fit(X)
    model = SODNMF(3, random_state=seed, **FAST).fit(X, graph=following_graph(X, y))
    assert model.lam_ > 0
    assert nmi(y, model.labels_) >= max(nmi(y, without.labels_), 0.9)


def test_sodnmf_labels_help_on_ambiguous_data():
    # heavy noise: at the paper's α, unsupervised clustering is poor; 20 % labels should
    # lift it (the same α with and without labels)
    X, y = planted_corpus(n_per_class=50, noise=0.6, seed=35)
    from textcluster.metrics import nmi

    scores = {}
    for name, labels in (("none", None), ("20%", some_labels(y, 0.2))):
        model = SODNMF(3, alpha=100.0, assign="kmeans", n_init=3, init_iter=10, max_iter=80,
                       random_state=0)
        scores[name] = nmi(y, model.fit(X, labels).labels_)
    assert scores["20%"] > scores["none"], scores


def test_sodnmf_scale_free_weights_do_not_depend_on_the_data_scale():
    X, y = planted_corpus(seed=36)
    labels = some_labels(y)
    a = SODNMF(3, n_init=2, init_iter=5, max_iter=30, random_state=0).fit(X, labels)
    b = SODNMF(3, n_init=2, init_iter=5, max_iter=30, random_state=0).fit(X * 1000.0, labels)
    np.testing.assert_array_equal(a.labels_, b.labels_)
    np.testing.assert_allclose(a.components_, b.components_, rtol=1e-6, atol=1e-12)


def test_label_aware_graph_links_same_labels_and_cuts_different_ones():
    W = sp.csr_matrix(np.array([[0, .2, .5, .3], [.2, 0, .4, 0], [.5, .4, 0, 0],
                                [.3, 0, 0, 0]]))
    G = label_aware_graph(W, np.array([0, 0, 1, -1])).toarray()
    assert G[0, 1] == G[1, 0] == 0.5  # same label: the largest weight
    assert G[0, 2] == G[1, 2] == 0.0  # different labels: cut
    assert G[0, 3] == G[3, 0] == 0.3  # an unlabelled end keeps its weight


def test_sodnmf_scale_free_weights_do_not_depend_on_the_edge_weight_scale():
    X, y = planted_corpus(seed=38)
    labels = some_labels(y)
    a = SODNMF(3, n_init=2, init_iter=5, max_iter=30, random_state=0).fit(X, labels)
    b = SODNMF(3, n_init=2, init_iter=5, max_iter=30, random_state=0).fit(
        X, labels, graph=a.graph_ * 3.0, term_graph=a.term_graph_ * 7.0)
    np.testing.assert_allclose(a.components_, b.components_, rtol=1e-6, atol=1e-12)


def test_label_slots_share_a_column_per_class():
    slot, n_slots = label_slots(np.array([-1, 3, 0, 3, -1]))
    assert n_slots == 2 + 2
    assert slot[1] == slot[3] != slot[2]
    assert len({slot[0], slot[4], slot[1], slot[2]}) == 4


@pytest.mark.parametrize("y, message", [  # the checks of the other semi-supervised models
    (np.zeros(5), "one class code per document"),
    ("length", "one class code per document"),
    ("float", "integer class codes"),
    ("minus2", "-1 marks an unlabelled document"),
])
def test_bad_labels_are_a_clear_error(y, message):
    X, _ = planted_corpus(seed=37)
    n = X.shape[0]
    y = {"length": np.zeros(n + 1), "float": np.full(n, 0.5),
         "minus2": np.full(n, -2)}.get(y, y) if isinstance(y, str) else y
    with pytest.raises(InvalidInputError, match=message):
        SODNMF(3, n_init=1, max_iter=2).fit(X, y)


@pytest.mark.parametrize("model", [ANMF, SODNMF])
def test_as_many_components_as_documents_stays_finite(model):
    rng = np.random.default_rng(0)
    X = sp.random(8, 30, density=0.4, random_state=1, format="csr")
    X.data = rng.random(X.nnz)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        V = model(8, n_init=1, max_iter=30, random_state=0).fit_transform(X)
    assert V.shape == (8, 8) and np.all(np.isfinite(V))


@pytest.mark.parametrize("model", [ANMF, SODNMF])
def test_one_document_is_a_clear_error(model):
    with pytest.raises(InvalidInputError, match="at least 2 documents"):
        model(1, n_init=1, max_iter=2).fit(np.ones((1, 5)))


# -- real data -----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def tdt2_five_classes(real_data_dir):
    """TDT2 tf-idf over the whole corpus, then the documents of 5 classes drawn with
    ``default_rng(0)`` (the class-subset protocol's draw 0: 1,605 documents, where NMF is weak)."""
    from textcluster.corpora import load_corpus
    from textcluster.pipeline import represent

    rep = represent(load_corpus("tdt2", real_data_dir), dtype="float64")
    y = np.asarray(rep.corpus.labels)
    mask = np.isin(y, np.random.default_rng(0).choice(np.unique(y), 5, replace=False))
    _, codes = np.unique(y[mask], return_inverse=True)
    return rep.X[mask], codes


@pytest.mark.slow
def test_dual_graph_models_beat_nmf_on_a_tdt2_class_subset(tdt2_five_classes):
    from textcluster.metrics import nmi

    X, y = tdt2_five_classes
    rng = np.random.default_rng(10)
    labels = np.where(rng.random(y.size) < 0.1, y, -1)  # about 10 % of each class
    unlabelled = labels < 0
    term_graph = term_knn_graph(X, n_neighbors=7)  # built once, used by both models
    nmf = NMF(5, random_state=0).fit(X)
    anmf = ANMF(5, random_state=0).fit(X, term_graph=term_graph)
    sod = SODNMF(5, term_neighbors=7, term_weighting="binary", random_state=0)
    sod.fit(X, labels, term_graph=term_graph)
    for model in (anmf, sod):
        history = model.objective_history_
        assert np.all(np.diff(history) <= 1e-10 * history[0]), type(model).__name__
    base = nmi(y, nmf.labels_)
    assert nmi(y, anmf.labels_) >= base + 0.2
    assert nmi(y[unlabelled], sod.labels_[unlabelled]) >= nmi(y[unlabelled],
                                                              nmf.labels_[unlabelled]) + 0.2

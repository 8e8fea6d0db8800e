"""What is special to the semi-supervised NMF models: CNMF, DNMF, GSNMFC (paper 004 §2.3–2.5).

The common checks (without labels) are in test_common_models.py.
"""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from textcluster import graph as graphs
from textcluster._errors import InvalidInputError
from textcluster.metrics import accuracy, nmi
from textcluster.models import DNMF, GNMF, GSNMFC, NMF, ConstrainedNMF
from textcluster.models._base import EPS
from textcluster.models.nmf import update_documents
from textcluster.models.semi import (
    LabelConstraint,
    check_partial_labels,
    fit_label_map,
    label_misfit,
    update_basis_ridge,
    update_documents_discriminative,
)
from textcluster.pipeline.protocol import labeled_subset

from ._planted import planted_corpus

FAST = {"n_init": 3, "init_iter": 10, "max_iter": 60, "n_assign_init": 5}
SEMI = [ConstrainedNMF, DNMF, GSNMFC]


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        yield


def partial_labels(y, fraction=0.1, seed=0):
    return labeled_subset(y, fraction=fraction, random_state=seed)


def dense_A(codes):
    return LabelConstraint(check_partial_labels(codes, len(codes)), np.float64).A.toarray()


def assert_same_fit(a, b):
    np.testing.assert_array_equal(a.objective_history_, b.objective_history_)
    np.testing.assert_array_equal(a.components_, b.components_)
    np.testing.assert_array_equal(a.labels_, b.labels_)


# -- the base models they reduce to -------------------------------------------------------
@pytest.mark.parametrize("unlabelled", [None, "all -1"])
def test_cnmf_without_labels_is_nmf(unlabelled):
    X, _ = planted_corpus(seed=20)
    y = None if unlabelled is None else np.full(X.shape[0], -1)
    assert_same_fit(ConstrainedNMF(3, random_state=4, **FAST).fit(X, y),
                    NMF(3, random_state=4, **FAST).fit(X))


def test_dnmf_without_labels_or_with_alpha_zero_is_nmf():
    X, y = planted_corpus(seed=21)
    nmf = NMF(3, random_state=4, **FAST).fit(X)
    assert_same_fit(DNMF(3, random_state=4, **FAST).fit(X), nmf)
    assert_same_fit(DNMF(3, alpha=0.0, random_state=4, **FAST).fit(X, partial_labels(y)), nmf)


@pytest.mark.parametrize("scaling", ["scale-free", "cai"])
def test_gsnmfc_without_labels_and_beta_zero_is_gnmf(scaling):
    X, _ = planted_corpus(seed=22)
    assert_same_fit(GSNMFC(3, beta=0.0, scaling=scaling, random_state=4, **FAST).fit(X),
                    GNMF(3, scaling=scaling, random_state=4, **FAST).fit(X))


@pytest.mark.parametrize("unlabelled", [None, "all -1"])
def test_gsnmfc_without_labels_is_gnmf_with_its_defaults(unlabelled):
    X, y = planted_corpus(seed=22)
    none = None if unlabelled is None else np.full(X.shape[0], -1)
    gsnmfc = GSNMFC(3, random_state=4).fit(X, none)
    assert GSNMFC(3).planned_iterations() == GNMF(3).planned_iterations()  # before a fit
    assert gsnmfc.lam_selection_ is not None  # λ chosen without labels, as GNMF's
    assert_same_fit(gsnmfc, GNMF(3, random_state=4).fit(X))
    labelled = GSNMFC(3, random_state=4, **FAST).fit(X, partial_labels(y))
    assert labelled.lam_ == 1e8 and labelled.lam_selection_ is None  # scale-free, as measured


@pytest.mark.parametrize("cls", SEMI)
def test_clusters_read_as_the_papers_with_labels_and_by_cosine_without(cls):
    X, y = planted_corpus(seed=21)
    params = {**FAST, "random_state": 4, **({"lam": 1.0} if cls is GSNMFC else {})}
    assert cls(3, **params).fit(X, partial_labels(y)).assignment_rule().method == "kmeans"
    assert cls(3, **params).fit(X).assignment_rule().method == "cosine"
    assert cls(3, assign="argmax", **params).fit(X).assignment_rule().method == "argmax"
    assert NMF().assign == "cosine"


def test_gsnmfc_without_graph_and_ridge_is_cnmf():
    X, y = planted_corpus(seed=23)
    labels = partial_labels(y)
    gsnmfc = GSNMFC(3, lam=0.0, beta=0.0, scaling="cai", graph_check=False, random_state=4,
                    **FAST).fit(X, labels)
    assert_same_fit(gsnmfc, ConstrainedNMF(3, random_state=4, **FAST).fit(X, labels))


def test_class_codes_need_not_be_contiguous():
    X, y = planted_corpus(seed=24)
    labels = partial_labels(y)
    shifted = np.where(labels >= 0, 10 * labels + 5, -1)
    for cls in SEMI:
        assert_same_fit(cls(3, random_state=0, **FAST).fit(X, shifted),
                        cls(3, random_state=0, **FAST).fit(X, labels))


# -- the update rules against dense formulas ----------------------------------------------
def _random_problem(seed=0, n=30, m=20, k=3):
    rng = np.random.default_rng(seed)
    X = rng.random((n, m))
    codes = rng.integers(-1, 3, n)
    return rng, X, codes, rng.random((m, k))


def test_z_updates_match_the_dense_formulas():
    rng, X, codes, U = _random_problem()
    constraint = LabelConstraint(check_partial_labels(codes, len(codes)), np.float64)
    A = constraint.A.toarray()
    Z = rng.random((constraint.n_rows, 3))
    W = graphs.knn_graph(rng.random((30, 5)), n_neighbors=4)
    Wd, lam = W.toarray(), 2.5
    D = np.diag(Wd.sum(axis=1))
    # CNMF: Z ← Z ⊙ AᵀXU / (AᵀA Z UᵀU)
    expected = Z * (A.T @ X @ U) / (A.T @ A @ Z @ U.T @ U)
    Z_cnmf = Z.copy()
    update_documents(Z_cnmf, constraint.mean(X @ U), U.T @ U)
    np.testing.assert_allclose(Z_cnmf, expected, rtol=1e-12)
    # GSNMFC: Z ← Z ⊙ (AᵀXU + λAᵀWAZ) / (AᵀA Z UᵀU + λAᵀDAZ)
    expected = Z * (A.T @ X @ U + lam * A.T @ Wd @ A @ Z) / (
        A.T @ A @ Z @ U.T @ U + lam * A.T @ D @ A @ Z)
    V = constraint.expand(Z)
    update_documents(Z, constraint.mean(X @ U), U.T @ U, lam, constraint.mean(W @ V),
                     constraint.mean(graphs.degree(W)))
    np.testing.assert_allclose(Z, expected, rtol=1e-12)


def test_ridge_basis_update_matches_the_dense_formula():
    rng, X, _, U = _random_problem(1)
    V, beta = rng.random((30, 3)), 0.7
    expected = U * (X.T @ V) / (U @ V.T @ V + beta * U)
    update_basis_ridge(U, V, X.T @ V, beta)
    np.testing.assert_allclose(U, expected, rtol=1e-12)


def test_discriminative_update_matches_the_dense_formula():
    rng, X, codes, U = _random_problem(2)
    V, alpha = rng.random((30, 3)), 1.3
    labelled = np.flatnonzero(codes >= 0)
    targets = np.eye(3)[codes[labelled]]
    A = fit_label_map(V[labelled], targets)
    M, P = A.T @ A, targets @ A
    neg, pos = np.maximum(-M, 0), np.maximum(M, 0)
    numerator, denominator = X @ U, V @ U.T @ U
    V_l = V[labelled]
    numerator[labelled] += alpha * (2 * V_l @ neg + np.maximum(P, 0))
    denominator[labelled] += alpha * (V_l @ (pos + neg) + np.maximum(-P, 0))
    expected = V * numerator / np.maximum(denominator, EPS)
    update_documents_discriminative(V, X @ U, U.T @ U, labelled, targets, A, alpha)
    np.testing.assert_allclose(V, expected, rtol=1e-12)


def test_label_map_is_the_least_squares_fit_of_eq_14():
    rng = np.random.default_rng(3)
    V_l, targets = rng.random((12, 3)), np.eye(4)[rng.integers(0, 4, 12)]
    A = fit_label_map(V_l, targets)
    np.testing.assert_allclose(A, targets.T @ V_l @ np.linalg.inv(V_l.T @ V_l), rtol=1e-10)


def dense_objective(model, X, factors, ctx, codes):
    X = X.toarray() if sp.issparse(X) else X
    U, V = factors.U, factors.V
    value = np.linalg.norm(X - V @ U.T) ** 2
    if isinstance(model, GSNMFC):
        L = graphs.laplacian(model.graph_).toarray()
        value += ctx.lam * np.trace(V.T @ L @ V) + ctx.beta * np.sum(U**2)
        np.testing.assert_allclose(V, dense_A(codes) @ factors.Z, rtol=1e-12)
    if isinstance(model, DNMF):
        labelled = codes >= 0
        Q = np.eye(codes.max() + 1)[codes[labelled]].T
        value += ctx.alpha * np.linalg.norm(Q - factors.A @ V[labelled].T) ** 2
    return value


@pytest.mark.parametrize("cls", SEMI)
def test_recorded_objective_equals_the_dense_objective(cls):
    X, y = planted_corpus(seed=25)
    codes = partial_labels(y, 0.2)
    model = cls(3, n_init=1, max_iter=15, random_state=0)
    model.fit(X, codes)
    ctx = model._prepare(model._check_input(X, reset=False), codes, None)
    factors = model._random_factors(ctx, np.random.RandomState(0))
    for _ in range(15):
        last = model._update(factors, ctx)
    expected = dense_objective(model, X, factors, ctx, codes)
    assert last == pytest.approx(expected, rel=1e-9)
    assert model.objective_history_[-1] == pytest.approx(expected, rel=1e-9)


# -- monotone with labels -----------------------------------------------------------------
@pytest.mark.parametrize("cls", SEMI)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_objective_never_increases_with_labels(cls, seed):
    rng = np.random.default_rng(seed)
    X = sp.random(80, 50, density=0.2, random_state=seed, format="csr")
    y = rng.integers(-1, 4, 80)  # about a fifth unlabelled, four classes
    extra = {"graph_check": False} if cls is GSNMFC else {}
    for params in ({}, {"alpha": 50.0} if cls is DNMF else {"beta": 1.0} if cls is GSNMFC
                   else {"n_components": 6}):
        model = cls(**{"n_components": int(rng.integers(2, 6)), "n_init": 1, "max_iter": 150,
                       "random_state": seed, "n_assign_init": 2, **extra, **params})
        history = model.fit(X, y).objective_history_
        assert len(history) == 151
        assert np.all(np.diff(history) <= 1e-10 * history[0]), params


def _printed_eq13(V, XU, UtU, labelled, targets, A, alpha):
    """Paper 004's eq. 13 as printed: the products ``(V_l AᵀA)^±`` are split."""
    numerator, denominator = XU.copy(), V @ UtU
    VM, P = V[labelled] @ (A.T @ A), targets @ A
    numerator[labelled] += alpha * (np.maximum(-VM, 0) + np.maximum(P, 0))
    denominator[labelled] += alpha * (np.maximum(VM, 0) + np.maximum(-P, 0))
    V *= numerator / np.maximum(denominator, EPS)


def test_printed_eq13_can_increase_the_objective_the_derived_rule_does_not(monkeypatch):
    X = sp.random(80, 50, density=0.2, random_state=0, format="csr")
    y = np.random.default_rng(0).integers(-1, 3, 80)
    model = DNMF(4, alpha=10.0, n_init=1, max_iter=100, random_state=0, n_assign_init=2)
    ours = model.fit(X, y).objective_history_
    monkeypatch.setattr("textcluster.models.semi.update_documents_discriminative",
                        _printed_eq13)
    printed = model.fit(X, y).objective_history_
    assert np.all(np.diff(ours) <= 1e-10 * ours[0])
    assert np.max(np.diff(printed)) > 1e-3 * printed[0]  # measured: +27 % of the start value


# -- what the labels do -------------------------------------------------------------------
@pytest.mark.parametrize("cls", [ConstrainedNMF, GSNMFC])
def test_hard_constraint_puts_each_labelled_class_in_one_cluster(cls):
    X, y = planted_corpus(n_per_class=30, n_classes=4, seed=26)
    codes = partial_labels(y, 0.2, seed=1)
    model = cls(4, random_state=0, **FAST)
    V = model.fit_transform(X, codes)
    for code in range(4):
        rows = V[codes == code]
        np.testing.assert_array_equal(rows, np.broadcast_to(rows[0], rows.shape))
        assert len(set(model.labels_[codes == code])) == 1
    labelled = codes >= 0
    assert accuracy(codes[labelled], model.labels_[labelled]) == 1.0
    assert model.n_label_classes_ == 4


def test_dnmf_labelled_documents_follow_their_classes():
    X, y = planted_corpus(n_per_class=30, n_classes=4, seed=27)
    codes = partial_labels(y, 0.2, seed=1)
    model = DNMF(4, random_state=0, **FAST).fit(X, codes)
    labelled = codes >= 0
    assert accuracy(codes[labelled], model.labels_[labelled]) == 1.0
    assert nmi(y, model.labels_) > 0.9


def test_dnmf_fits_the_labels_better_than_nmf():
    X, y = planted_corpus(n_per_class=30, n_classes=4, seed=28)
    codes = partial_labels(y, 0.2, seed=1)
    labelled = np.flatnonzero(codes >= 0)
    targets = np.eye(4)[codes[labelled]]

    def misfit(V):  # the label term at the best map A, so the factor scale does not matter
        V_l = V[labelled]
        return label_misfit(targets, V_l, fit_label_map(V_l, targets))

    nmf = misfit(NMF(4, random_state=0, **FAST).fit_transform(X))
    dnmf = misfit(DNMF(4, alpha=1.0, random_state=0, **FAST).fit_transform(X, codes))
    assert dnmf < 0.5 * nmf


def test_gsnmfc_accepts_a_precomputed_graph():
    X, y = planted_corpus(seed=29)
    codes = partial_labels(y)
    W = graphs.knn_graph(X, n_neighbors=5)
    a = GSNMFC(3, random_state=0, **FAST).fit(X, codes)
    b = GSNMFC(3, random_state=0, **FAST).fit(X, codes, graph=W)
    np.testing.assert_allclose(a.components_, b.components_, rtol=1e-10)
    c = GSNMFC(3, n_neighbors=3, weighting="heat", random_state=0, **FAST).fit(X, codes)
    assert not np.allclose(a.components_, c.components_)


@pytest.mark.parametrize("cls", SEMI)
def test_custom_start_puts_each_class_at_the_mean_of_its_rows(cls):
    X, y = planted_corpus(seed=30)
    codes = partial_labels(y, 0.2)
    rng = np.random.default_rng(0)
    W, H = rng.random((X.shape[0], 3)), rng.random((3, X.shape[1]))
    model = cls(3, init="custom")
    ctx = model._prepare(model._check_input(X, reset=True), codes, None)
    factors = model._custom_factors(ctx, W, H)
    np.testing.assert_array_equal(factors.U, H.T)
    if cls is DNMF:
        np.testing.assert_array_equal(factors.V, W)
    else:
        for code in range(3):
            np.testing.assert_allclose(factors.V[codes == code],
                                       np.broadcast_to(W[codes == code].mean(axis=0),
                                                       ((codes == code).sum(), 3)))
        np.testing.assert_array_equal(factors.V[codes < 0], W[codes < 0])


# -- the LSA + k-means start ----------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("cls", SEMI)
def test_lsa_kmeans_start_fits_with_labels(cls, dtype):
    X, y = planted_corpus(n_per_class=30, n_classes=4, seed=36)
    codes = partial_labels(y, 0.2, seed=1)
    model = cls(4, init="lsa-kmeans", max_iter=60, n_assign_init=5, random_state=0)
    V = model.fit_transform(X.astype(dtype), codes)
    history = model.objective_history_
    assert model.n_iter_ == 60 and np.all(np.isfinite(history))
    rounding = 1e-10 if dtype == np.float64 else 1e-6  # float32: the objective's rounding
    assert np.all(np.diff(history) <= rounding * history[0])
    assert V.dtype == dtype and model.components_.dtype == dtype
    assert V.min() >= 0 and model.components_.min() >= 0
    labelled = codes >= 0
    assert accuracy(codes[labelled], model.labels_[labelled]) == 1.0
    assert nmi(y, model.labels_) > 0.9


@pytest.mark.parametrize("cls", SEMI)
def test_lsa_kmeans_start_is_nmfs_made_into_the_models_factors(cls):
    X, y = planted_corpus(seed=37)
    codes = partial_labels(y, 0.2)
    model = cls(3, init="lsa-kmeans", random_state=0)
    ctx = model._prepare(model._check_input(X, reset=True), codes, None)
    start = model._lsa_start(ctx)
    nmf = NMF(3, init="lsa-kmeans", random_state=0)
    nmf_start = nmf._lsa_start(nmf._prepare(nmf._check_input(X, reset=True), None))
    np.testing.assert_array_equal(start.U, nmf_start.U)
    assert start.V.min() >= 0
    if cls is DNMF:
        np.testing.assert_array_equal(start.V, nmf_start.V)
        labelled = np.flatnonzero(codes >= 0)
        np.testing.assert_array_equal(start.A, fit_label_map(start.V[labelled],
                                                             np.eye(3)[codes[labelled]]))
        return
    # each class at the mean of its rows of NMF's start, unlabelled rows as they were, all
    # scaled by one factor (the least-squares scale of the constrained start)
    means = nmf_start.V.copy()
    for code in range(3):
        means[codes == code] = nmf_start.V[codes == code].mean(axis=0)
    scale = start.V[0, 0] / means[0, 0]
    np.testing.assert_allclose(start.V, scale * means, rtol=1e-12)
    np.testing.assert_array_equal(start.Z[ctx.constraint.rows], start.V)
    ls_scale = np.vdot(means, X @ start.U) / np.vdot(start.U.T @ start.U, means.T @ means)
    assert scale == pytest.approx(ls_scale, rel=1e-12)


def test_lsa_kmeans_start_without_labels_is_nmfs_and_gnmfs():
    X, _ = planted_corpus(seed=38)
    params = {"init": "lsa-kmeans", "max_iter": 30, "n_assign_init": 5, "random_state": 4}
    nmf = NMF(3, **params).fit(X)
    assert_same_fit(ConstrainedNMF(3, **params).fit(X), nmf)
    assert_same_fit(DNMF(3, **params).fit(X), nmf)
    for scaling in ("scale-free", "cai"):
        assert_same_fit(GSNMFC(3, beta=0.0, scaling=scaling, **params).fit(X),
                        GNMF(3, scaling=scaling, **params).fit(X))


# -- degenerate input ---------------------------------------------------------------------
@pytest.mark.parametrize("cls", SEMI)
def test_all_documents_labelled_zero_document_and_k_one_stay_finite(cls):
    X, y = planted_corpus(seed=31, sparse=False)
    X[0] = 0.0
    X[:, 1] = 0.0
    for k, codes in ((3, y), (1, partial_labels(y)), (3, np.where(np.arange(len(y)) == 0, 0, -1))):
        model = cls(k, random_state=0, **FAST)
        V = model.fit_transform(sp.csr_matrix(X), codes)
        assert np.all(np.isfinite(V)) and np.all(np.isfinite(model.components_))
        assert np.all(np.isfinite(model.objective_history_))


@pytest.mark.parametrize("cls", SEMI)
def test_k_equal_to_n_documents(cls):
    X, y = planted_corpus(n_per_class=3, seed=32)
    codes = np.where(np.arange(9) % 3 == 0, y, -1)
    model = cls(9, n_init=1, max_iter=20, n_assign_init=1, random_state=0)
    V = model.fit_transform(X, codes)
    assert V.shape == (9, 9) and np.all(np.isfinite(V))


@pytest.mark.parametrize("cls", SEMI)
def test_float32_is_kept_with_labels(cls):
    X, y = planted_corpus(seed=33)
    model = cls(3, random_state=0, **FAST)
    V = model.fit_transform(X.astype(np.float32), partial_labels(y))
    assert V.dtype == np.float32 and model.components_.dtype == np.float32


@pytest.mark.parametrize("cls", SEMI)
@pytest.mark.parametrize("y, message", [
    (np.zeros(5, dtype=int), "expected \\(120,\\)"),
    (np.array(["a", "b", "c"] * 40), "integer class codes"),
    (np.full(120, 0.5), "integer class codes"),
    (np.full(120, -2), "code -2"),
])
def test_bad_labels_are_clear_errors(cls, y, message):
    X, _ = planted_corpus(seed=34)
    with pytest.raises(InvalidInputError, match=message):
        cls(3, **FAST).fit(X, y)


@pytest.mark.parametrize("cls", SEMI)
def test_transform_new_documents(cls):
    X, y = planted_corpus(seed=35)
    model = cls(3, random_state=0, **FAST).fit(X, partial_labels(y))
    V = model.transform(X[:10])
    assert V.shape == (10, 3) and V.min() >= 0 and np.all(np.isfinite(V))


# -- real data: paper 004's setting on TDT2 (5 classes, 10 % of each class labelled) -------
@pytest.fixture(scope="module")
def tdt2_draws(real_data_dir):
    from textcluster.corpora import load_corpus
    from textcluster.pipeline import represent
    from textcluster.pipeline.protocol import class_subset

    corpus = load_corpus("tdt2", real_data_dir)
    X = represent(corpus).X  # tf-idf on the whole corpus before subsetting (DESIGN §5)
    draws = []
    for draw in (0, 1):
        index = class_subset(corpus.labels, 5, draw)
        truth = corpus.labels[index]
        draws.append((X[index], truth, labeled_subset(truth, fraction=0.1, random_state=draw)))
    return draws


@pytest.mark.slow
def test_semi_supervised_models_on_tdt2_class_subsets(tdt2_draws):
    from textcluster.pipeline.protocol import evaluate_split

    models = {"nmf": NMF, "constrained-nmf": ConstrainedNMF, "dnmf": DNMF, "gsnmfc": GSNMFC}
    scores = {name: [] for name in models}
    for X, truth, codes in tdt2_draws:
        for name, cls in models.items():
            model = cls(5, random_state=0).fit(X, None if cls is NMF else codes)
            scores[name].append(evaluate_split(truth, model.labels_, codes)["unlabelled"]["nmi"])
            if cls is not DNMF and cls is not NMF:  # the hard constraint
                for code in np.unique(codes[codes >= 0]):
                    assert len(set(model.labels_[codes == code])) == 1
    mean = {name: np.mean(values) for name, values in scores.items()}
    # measured (draws 0, 1): NMF 0.775, CNMF 0.777, DNMF 0.775, GSNMFC 0.979 (paper 004, TDT2
    # averages over k = 2..10: NMF 0.746, CNMF 0.800, DNMF 0.788, GSNMFC 0.892)
    assert mean["gsnmfc"] >= mean["nmf"] + 0.1, mean
    for name in ("constrained-nmf", "dnmf"):
        assert min(np.subtract(scores[name], scores["nmf"])) >= -0.01, scores


@pytest.mark.slow
@pytest.mark.parametrize("cls", SEMI)
def test_objective_never_increases_on_tdt2_with_labels(cls, tdt2_draws):
    X, _, codes = tdt2_draws[1]
    model = cls(5, n_init=1, max_iter=60, n_assign_init=2, random_state=0).fit(X, codes)
    history = model.objective_history_
    assert np.all(np.diff(history) <= 1e-10 * history[0])
    assert model.components_.min() >= 0

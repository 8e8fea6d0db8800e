"""``predict`` on every model: the fitted assignment rule applied to ``transform``, which for
the training documents agrees with ``labels_``; the fitted state round trip; the attachment of
new documents to a fitted document graph."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import nnls
from sklearn.exceptions import ConvergenceWarning
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import FunctionTransformer

from textcluster import graph as graphs
from textcluster.metrics import nmi
from textcluster.models import MODELS, make_model
from textcluster.models._attach import attached_codes, attachment_edges

from ._planted import planted_corpus
from .test_common_models import fast_model

ALL = MODELS.names()


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        warnings.simplefilter("ignore", UserWarning)  # e.g. GNMF's graph-check fallback
        yield


@pytest.fixture(scope="module")
def fitted():
    """Every model fitted (the tests' quick settings) on the planted corpus, and the factor
    ``fit_transform`` gave (the distances for the k-means models)."""
    X, y = planted_corpus(seed=1)
    models = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in ALL:
            model = fast_model(name, n_components=3, random_state=0)
            models[name] = (model, model.fit_transform(X))
    return X, y, models


def agreement(model, X):
    return float(np.mean(model.predict(X) == model.labels_))


@pytest.mark.parametrize("name", ALL)
def test_predict_on_the_training_documents_gives_labels(fitted, name):
    X, _, models = fitted
    model, _ = models[name]
    np.testing.assert_array_equal(model.predict(X), model.labels_)


@pytest.mark.parametrize("name", ALL)
def test_labels_are_the_fitted_rule_applied_to_the_training_codes(fitted, name):
    X, _, models = fitted
    model, embedding = models[name]
    rule = model.assignment_rule()
    assert model.cluster_centers_.shape[0] == 3
    if name in ("kmeans", "lsi-kmeans"):
        rows = model._represent(X, fitting=False)
        np.testing.assert_array_equal(model.labels_, model.kmeans_.labels_)
    else:
        rows = embedding
        assert model.cluster_centers_.shape == (3, model.n_components)
        # fit_transform returns what transform gives the training documents
        np.testing.assert_allclose(model.transform(X), embedding, rtol=1e-6,
                                   atol=1e-9 * embedding.max())
    np.testing.assert_array_equal(model.labels_, rule.predict(rows))


@pytest.mark.parametrize("name", ALL)
def test_a_pipeline_predicts(fitted, name):
    X, _, models = fitted
    pipeline = Pipeline([("rows", FunctionTransformer(accept_sparse=True)),
                         ("model", fast_model(name, n_components=3, random_state=0))])
    labels = pipeline.fit(X).predict(X)
    np.testing.assert_array_equal(labels, models[name][0].predict(X))


@pytest.mark.parametrize("name", ALL)
def test_new_documents_of_a_class_join_its_cluster(name):
    X, y = planted_corpus(n_per_class=50, seed=5)
    held_out = np.arange(len(y)) % 5 == 0
    model = fast_model(name, n_components=3, random_state=0).fit(X[~held_out])
    assert nmi(y[held_out], model.predict(X[held_out])) > 0.9
    one = model.predict(X[np.flatnonzero(held_out)[:1]])  # one document at a time
    assert one.shape == (1,) and one[0] == model.predict(X[held_out])[0]


@pytest.mark.parametrize("name", ALL)
def test_fitted_state_round_trip_is_bit_identical(fitted, name):
    X, _, models = fitted
    model, _ = models[name]
    state = model.fitted_state()
    for key, value in state.items():
        assert isinstance(value, (np.ndarray, int, float, str)) or sp.issparse(value), key
    assert {"cluster_centers_", "n_features_in_"} <= set(state)
    restored = type(model).from_fitted_state(model.get_params(), state)
    new = sp.csr_matrix(X[::3].toarray() * np.linspace(0.5, 1.5, X.shape[1]))
    for rows in (X, new):
        assert np.array_equal(restored.predict(rows), model.predict(rows))
        assert np.array_equal(restored.transform(rows), model.transform(rows))
    assert np.array_equal(restored.labels_, model.labels_)


def test_from_fitted_state_refuses_an_unknown_or_incomplete_state(fitted):
    _, _, models = fitted
    model, _ = models["gnmf"]
    state = model.fitted_state()
    with pytest.raises(ValueError, match="no fitted attribute 'bogus_'"):
        type(model).from_fitted_state(model.get_params(), {**state, "bogus_": 1})
    del state["cluster_centers_"]
    with pytest.raises(ValueError, match="cluster_centers_"):
        type(model).from_fitted_state(model.get_params(), state)


@pytest.mark.parametrize("weighting", ["binary", "cosine"])
def test_a_new_document_is_attached_as_the_kNN_graph_would_link_it(weighting):
    X = sp.random(40, 30, density=0.2, random_state=1, format="csr")
    new = sp.random(6, 30, density=0.2, random_state=2, format="csr")
    W = graphs.knn_graph(X, 4, weighting)
    width, reach = graphs.knn_reach(X, 4, weighting)
    edges, known = attachment_edges(new, X, W, 4, weighting, width, reach)
    assert np.all(known == -1)
    for i in range(new.shape[0]):
        appended = graphs.knn_graph(sp.vstack([X, new[i]]).tocsr(), 4, weighting)
        np.testing.assert_allclose(edges[i].toarray().ravel(), appended[40, :40].toarray().ravel())
    # a fitted document passed again is that document: its edges are its row of the graph
    again, known = attachment_edges(X[[3, 7]], X, W, 4, weighting, width, reach)
    assert known.tolist() == [3, 7]
    np.testing.assert_array_equal(again.toarray(), W[[3, 7]].toarray())


def test_attached_codes_solve_the_objective_restricted_to_the_new_row():
    rng = np.random.default_rng(0)
    m, k, n_fit, n_new = 25, 4, 30, 5
    B, Phi = rng.random((m, k)), rng.random((n_new, m))
    V = rng.random((n_fit, k))
    edges = sp.random(n_new, n_fit, density=0.2, random_state=3, format="csr")
    weight, shrink = rng.random(k) * 3, rng.random(k)
    codes = attached_codes(Phi @ B, B.T @ B, edges, V, weight, shrink)
    for i in range(n_new):  # ‖φ − Bv‖² + Σ_j s_j Σ_c w_c (v_c − v_jc)² + Σ_c b_c v_c²
        blocks, targets = [B], [Phi[i]]
        for j, s in zip(edges[i].indices, edges[i].data):
            blocks.append(np.diag(np.sqrt(s * weight)))
            targets.append(np.sqrt(s * weight) * V[j])
        blocks.append(np.diag(np.sqrt(shrink)))
        targets.append(np.zeros(k))
        expected = nnls(np.vstack(blocks), np.concatenate(targets))[0]
        np.testing.assert_allclose(codes[i], expected, atol=1e-6)


def test_a_graph_model_transform_is_its_own_row_optimum_at_a_stationary_fit():
    """GNMF run long enough: the codes fit_transform (and transform) give the training
    documents are the fitted factor (each row of a stationary fit is optimal given the
    others)."""
    X, _ = planted_corpus(n_per_class=40, noise=0.3, seed=6)
    model = make_model("gnmf", n_components=3, lam=10.0, max_iter=2000, n_init=1,
                       random_state=0)
    codes = model.fit_transform(X)
    V = model.neighbour_factor_  # the fit's own factor, as its last update saw it
    np.testing.assert_allclose(codes, V, rtol=1e-3, atol=1e-3 * V.max())


# -- a real corpus ----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def la1(real_data_dir):
    from textcluster.corpora import load_corpus
    from textcluster.pipeline import represent

    if not (real_data_dir / "panel").is_dir():
        pytest.skip(f"the development panel is not in {real_data_dir}")
    corpus = load_corpus("cluto:la1", data_dir=real_data_dir)
    keep = np.sort(np.random.default_rng(0).choice(corpus.n_docs, 2000, replace=False))
    representation = represent(corpus.subset(keep))
    return representation.X, np.asarray(representation.corpus.labels)


@pytest.mark.slow
@pytest.mark.realdata
@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("name", ALL)
def test_predict_agrees_with_labels_on_2000_la_times_documents(la1, name):
    X, y = la1
    model = make_model(name, n_components=len(np.unique(y)), random_state=0).fit(X)
    assert agreement(model, X) >= 0.99


def test_reconstruction_weights_solve_the_new_column_of_the_learned_graph():
    from textcluster.models._attach import reconstruction_weights

    X = sp.random(30, 20, density=0.3, random_state=4, format="csr")
    new = sp.random(5, 20, density=0.3, random_state=5, format="csr")
    support = sp.random(5, 30, density=0.3, random_state=6, format="csr")
    alpha, beta = 0.1, 0.05
    weights = reconstruction_weights(new, X, support, lambda A, B: (A @ B.T).toarray(),
                                     alpha, beta)
    for i in range(5):  # ‖x − Σ s_j x_j‖² + α‖s‖² + β Σ s = ‖[X_Jᵀ; √α I] s − [x; −β/(2√α)]‖²
        J = support[i].indices
        A = np.vstack([X[J].toarray().T, np.sqrt(alpha) * np.eye(len(J))])
        b = np.concatenate([new[i].toarray().ravel(),
                            np.full(len(J), -beta / (2 * np.sqrt(alpha)))])
        np.testing.assert_allclose(weights[i, J].toarray().ravel(), nnls(A, b)[0], atol=1e-8)

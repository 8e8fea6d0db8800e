"""The approximate kNN search of ``knn_graph`` (pynndescent, the ``large`` extra) and the
``method`` choice: recall against the exact graph, the same form of graph, ``auto`` identical
to the exact search below the threshold, and the fallback without pynndescent.

pynndescent compiles its code (numba) on first use in a process (some 20 s); the tests share
one module-scoped corpus so that the graphs they need are built once.
"""

import importlib.util
import sys
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.preprocessing import normalize

import textcluster.graph as graph_module
from textcluster._errors import InvalidInputError, MissingDependencyError
from textcluster.graph import (APPROXIMATE_FROM, clear_graph_cache, document_graph, knn_graph,
                               knn_reach)

needs_pynndescent = pytest.mark.skipif(importlib.util.find_spec("pynndescent") is None,
                                       reason="pynndescent (the large extra) is not installed")
K = 5


def planted_corpus(n=3000, m=2000, topics=30, seed=0):
    """Sparse non-negative rows: each a few words of one topic's vocabulary plus noise words;
    a few exact duplicates and one all-zero row."""
    rng = np.random.default_rng(seed)
    vocabularies = [rng.choice(m, 120, replace=False) for _ in range(topics)]
    rows, cols, values = [], [], []
    for i in range(n):
        words = np.unique(np.concatenate([rng.choice(vocabularies[rng.integers(topics)], 20),
                                          rng.choice(m, 8)]))
        rows += [i] * words.size
        cols += list(words)
        values += list(rng.random(words.size) + 0.1)
    X = sp.csr_matrix((values, (rows, cols)), shape=(n, m)).tolil()
    X[10], X[11], X[12] = X[3], X[3], X[3]  # four identical rows
    X[20] = 0
    return X.tocsr()


@pytest.fixture(scope="module")
def corpus():
    return planted_corpus()


def directed(X, method, weighting="cosine", **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the all-zero row
        return knn_graph(X, K, weighting=weighting, symmetrize="none", method=method, **options)


@needs_pynndescent
def test_recall_against_the_exact_graph(corpus):
    exact, approximate = directed(corpus, "exact"), directed(corpus, "approximate")
    assert approximate.nnz == exact.nnz  # k neighbours per non-zero row
    found = exact.multiply(approximate > 0).nnz / exact.nnz
    assert found >= 0.95, found


@needs_pynndescent
@pytest.mark.parametrize("weighting", ["binary", "cosine", "heat"])
def test_the_approximate_graph_has_the_exact_graph_s_form(corpus, weighting):
    """Symmetric (max), non-negative, no self loops, the zero row isolated, and each edge
    weighted as the exact graph weighs it (heat: the same width t, from all rows here)."""
    with pytest.warns(UserWarning, match="all zero"):
        W = knn_graph(corpus, K, weighting=weighting, method="approximate")
    with pytest.warns(UserWarning, match="all zero"):
        E = knn_graph(corpus, K, weighting=weighting, method="exact")
    assert sp.isspmatrix_csr(W) and W.dtype == np.float64
    assert abs(W - W.T).max() == 0
    assert W.data.min() > 0 and W.diagonal().max() == 0
    assert W[20].nnz == 0 and W[:, 20].nnz == 0
    shared = E.multiply(W > 0)  # the edges both graphs have: the same weights
    np.testing.assert_allclose(W.multiply(E > 0).data, shared.data, rtol=1e-9)
    if weighting == "binary":
        assert set(W.data) == {1.0}


@needs_pynndescent
def test_approximate_similarities_are_the_rows_cosines(corpus):
    W = directed(corpus, "approximate").tocoo()
    Y = normalize(corpus)
    expected = np.asarray(Y[W.row].multiply(Y[W.col]).sum(axis=1)).ravel()
    np.testing.assert_allclose(W.data, np.clip(expected, 0, 1), rtol=1e-12)


def test_weakest_rows_are_those_with_the_least_similar_kth_neighbour(monkeypatch):
    monkeypatch.setattr(graph_module._approximate, "EXACT_SHARE", 0.5)
    rows = np.array([0, 0, 1, 1, 2, 3, 3])  # row 2: one neighbour found of k = 2
    sims = np.array([0.9, 0.8, 0.5, 0.1, 0.9, 0.7, 0.6])
    assert list(graph_module._approximate.weakest_rows(rows, sims, 4, 2)) == [1, 2]
    found = (rows, rows + 10, sims)
    new = (np.array([1, 2]), np.array([7, 8]), np.array([0.6, 0.95]))
    r, c, s = graph_module._approximate.replace_rows(np.array([1, 2]), found, new)
    assert list(r) == [0, 0, 3, 3, 1, 2] and list(c) == [10, 10, 13, 13, 7, 8]


@needs_pynndescent
def test_rows_searched_exactly_get_their_exact_neighbours(corpus, monkeypatch):
    """With every row searched exactly after NN-descent, the graph is the exact one."""
    exact = directed(corpus, "exact")
    clear_graph_cache()
    monkeypatch.setattr(graph_module._approximate, "EXACT_SHARE", 1.0)
    everything = directed(corpus, "approximate")
    assert (everything != exact).nnz == 0


@needs_pynndescent
def test_the_same_seed_gives_the_same_graph(corpus):
    first = directed(corpus, "approximate", random_state=3)
    clear_graph_cache()
    again = directed(corpus, "approximate", random_state=3)
    assert (first != again).nnz == 0


@needs_pynndescent
def test_knn_reach_follows_the_method(corpus):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _, reach = knn_reach(corpus, K, method="approximate")
    W = directed(corpus, "approximate").tocoo()
    lowest = np.full(corpus.shape[0], np.inf)
    np.minimum.at(lowest, W.row, W.data)
    np.testing.assert_array_equal(reach, lowest)


def test_auto_below_the_threshold_is_the_exact_graph(corpus):
    assert corpus.shape[0] < APPROXIMATE_FROM
    for weighting in ("binary", "heat"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            clear_graph_cache()
            auto = knn_graph(corpus, K, weighting=weighting)
            clear_graph_cache()
            exact = knn_graph(corpus, K, weighting=weighting, method="exact")
        for part in ("indptr", "indices", "data"):
            np.testing.assert_array_equal(getattr(auto, part), getattr(exact, part))
    X = corpus[100:600]  # no zero row
    np.testing.assert_array_equal(document_graph(X).toarray(),
                                  document_graph(X, method="exact").toarray())


@needs_pynndescent
def test_auto_above_the_threshold_searches_approximately(corpus, monkeypatch):
    monkeypatch.setattr(graph_module, "APPROXIMATE_FROM", 1000)
    X = corpus[:1500]
    auto, approximate = directed(X, "auto"), directed(X, "approximate")
    assert (auto != approximate).nnz == 0


def missing_pynndescent(monkeypatch):
    for module in [m for m in sys.modules if m.startswith("pynndescent.")]:
        monkeypatch.delitem(sys.modules, module)
    monkeypatch.setitem(sys.modules, "pynndescent", None)


def test_without_pynndescent_auto_falls_back_to_the_exact_graph(corpus, monkeypatch):
    missing_pynndescent(monkeypatch)
    monkeypatch.setattr(graph_module, "APPROXIMATE_FROM", 1000)
    X = corpus[100:1600]  # no zero row
    with pytest.warns(UserWarning) as caught:
        W = knn_graph(X, K)
    message = str(caught[0].message)
    assert "exact kNN graph" in message and "pip install 'textcluster[large]'" in message
    assert "\n" not in message
    np.testing.assert_array_equal(W.toarray(), knn_graph(X, K, method="exact").toarray())
    with pytest.raises(MissingDependencyError, match=r"textcluster\[large\]"):
        knn_graph(X, K, method="approximate")


@pytest.mark.parametrize("options, match", [
    ({"method": "fast"}, "method='fast' is not supported"),
    ({"method": "approximate", "random_state": 1.5}, "random_state=1.5"),
])
def test_bad_options_are_refused(options, match):
    X = sp.random(30, 20, density=0.3, random_state=0, format="csr")
    with pytest.raises(InvalidInputError, match=match):
        knn_graph(X, 3, **options)


@needs_pynndescent
@pytest.mark.slow
def test_recall_on_real_text(real_data_dir):
    """AG News' 7,600 test documents as ``textcluster run`` weighs them: recall >= 0.95."""
    from textcluster.corpora import load_corpus
    from textcluster.pipeline import represent

    X = represent(load_corpus("agnews", data_dir=real_data_dir)).X
    exact, approximate = directed(X, "exact"), directed(X, "approximate")
    assert exact.multiply(approximate > 0).nnz / exact.nnz >= 0.95


@needs_pynndescent
@pytest.mark.parametrize("name", ["gnmf", "lccf", "anmf", "sodnmf"])
@pytest.mark.parametrize("method", ["exact", "approximate"])
def test_a_graph_model_searches_its_graph_as_graph_method_says(corpus, monkeypatch, name,
                                                               method):
    import textcluster.graph as graphs
    from textcluster.models import make_model

    asked = []

    def spy(method, n, *args, **kwargs):
        if n == 600:  # the document graph's search (the term graph has 2,000 rows)
            asked.append(method)
        return approximate_search(method, n, *args, **kwargs)

    approximate_search = graphs.approximate_search
    monkeypatch.setattr(graphs, "approximate_search", spy)
    clear_graph_cache()
    model = make_model(name, n_components=3, n_neighbors=5, weighting="binary",
                       graph_method=method, max_iter=5, n_init=1, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(corpus[:600])
    assert asked and set(asked) == {method}
    assert model.get_params()["graph_method"] == method

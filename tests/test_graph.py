"""kNN graphs against a brute-force dense computation; Laplacians; validation of user graphs."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from textcluster._errors import InvalidInputError
from textcluster import graph as graph_module
from textcluster.graph import _exact as exact_search
from textcluster.graph import (
    WEIGHTINGS,
    check_graph,
    clear_graph_cache,
    degree,
    knn_graph,
    laplacian,
)
from textcluster.registry import UnknownNameError


@pytest.fixture(autouse=True)
def built_afresh():
    """Every test here builds its graphs, none comes from an earlier test's cache."""
    clear_graph_cache()
    yield
    clear_graph_cache()


# -- brute force: the dense n × n computation knn_graph must reproduce ---------------------------


def unit_rows(X):
    X = X.toarray() if sp.issparse(X) else np.asarray(X, dtype=float)
    norms = np.linalg.norm(X, axis=1, keepdims=True)
    return np.divide(X, norms, out=np.zeros_like(X), where=norms > 0)


def brute_force_knn(X, k, weighting="binary", symmetrize="max"):
    """Binary or cosine kNN graph from the full n × n similarity matrix."""
    Y = unit_rows(X)
    S = Y @ Y.T
    nonzero = np.flatnonzero(np.linalg.norm(Y, axis=1) > 0)
    W = np.zeros_like(S)
    for i in nonzero:
        others = [j for j in nonzero if j != i]
        for j in sorted(others, key=lambda j: -S[i, j])[:k]:  # stable: ties keep the lower index
            W[i, j] = 1.0 if weighting == "binary" else max(S[i, j], 0.0)
    return {"max": np.maximum(W, W.T), "mean": (W + W.T) / 2, "none": W}[symmetrize]


def brute_force_heat(X, k, symmetrize="max", t=None):
    """Heat-kernel kNN graph, with d the Euclidean distance between unit rows."""
    Y = unit_rows(X)
    pattern = brute_force_knn(X, k, "binary", "none") > 0
    D = np.linalg.norm(Y[:, None, :] - Y[None, :, :], axis=2)
    width = {None: D.mean(), "knn": D[pattern].mean()}.get(t, t)
    W = np.where(pattern, np.exp(-(D**2) / (2 * width**2)), 0.0)
    return {"max": np.maximum(W, W.T), "mean": (W + W.T) / 2, "none": W}[symmetrize]


def expected_graph(X, k, weighting, symmetrize, t=None):
    if weighting == "heat":
        return brute_force_heat(X, k, symmetrize, t)
    return brute_force_knn(X, k, weighting, symmetrize)


def random_data(n=30, m=12, density=0.5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.random((n, m)) * (rng.random((n, m)) < density)
    assert (np.abs(X).sum(axis=1) > 0).all()
    return X


def assert_valid_graph(W, n, symmetric=True):
    assert sp.isspmatrix_csr(W)
    assert W.dtype == np.float64
    assert W.shape == (n, n)
    assert (W.data > 0).all()
    assert np.all(W.diagonal() == 0)
    if symmetric:
        assert abs(W - W.T).max() == 0


# -- knn_graph against brute force ---------------------------------------------------------------


@pytest.mark.parametrize("weighting", ["binary", "heat", "cosine"])
@pytest.mark.parametrize("symmetrize", ["max", "mean", "none"])
@pytest.mark.parametrize("block_size", [None, 1, 7, 30])
@pytest.mark.parametrize("sparse", [False, True])
def test_knn_graph_equals_brute_force(weighting, symmetrize, block_size, sparse):
    X = random_data()
    data = sp.csr_matrix(X) if sparse else X
    W = knn_graph(data, 4, weighting=weighting, symmetrize=symmetrize, block_size=block_size)
    assert_valid_graph(W, len(X), symmetric=symmetrize != "none")
    np.testing.assert_allclose(
        W.toarray(), expected_graph(X, 4, weighting, symmetrize), rtol=1e-9, atol=1e-12
    )


@pytest.mark.parametrize("t", ["knn", 0.3, 2.0])
def test_heat_width_options(t):
    X = random_data(seed=1)
    W = knn_graph(X, 3, weighting="heat", t=t, block_size=8)
    np.testing.assert_allclose(W.toarray(), brute_force_heat(X, 3, "max", t), rtol=1e-9)


def test_heat_default_width_is_mean_distance_over_all_pairs():
    # Cai's constructW: t = mean(mean(EuDist2(fea))), self pairs (distance 0) included.
    X = random_data(n=12, seed=2)
    Y = unit_rows(X)
    D = np.linalg.norm(Y[:, None, :] - Y[None, :, :], axis=2)
    W = knn_graph(X, 2, weighting="heat", symmetrize="none").tocoo()
    expected = np.exp(-D[W.row, W.col] ** 2 / (2 * D.mean() ** 2))
    np.testing.assert_allclose(W.data, expected, rtol=1e-9)


def test_sparse_and_dense_input_agree():
    X = random_data(n=50, m=20, density=0.3, seed=3)
    for weighting in WEIGHTINGS:
        dense = knn_graph(X, 5, weighting=weighting, block_size=16)
        sparse = knn_graph(sp.csc_matrix(X), 5, weighting=weighting, block_size=16)
        np.testing.assert_allclose(dense.toarray(), sparse.toarray(), rtol=1e-12)


def test_ties_go_to_the_lower_index_whatever_the_block_size():
    # One-hot rows in 3 groups: similarities are exactly 1 (same group) or 0 (other group), so
    # most choices are ties; they must be broken towards the lower row index, in every block.
    groups = np.array([0, 1, 2, 0, 1, 2, 0, 1, 0, 2, 1, 0])
    X = np.eye(3)[groups]
    expected = brute_force_knn(X, 3, "binary", "none")
    for block_size in (1, 2, 5, 12):
        W = knn_graph(X, 3, symmetrize="none", block_size=block_size)
        np.testing.assert_array_equal(W.toarray(), expected)
    # row 0's group-mates are rows 3, 6, 8, 11: the three lowest are taken
    assert list(W[0].indices) == [3, 6, 8]


def very_sparse_data(dtype, seed=0):
    """Rows with 1-3 of 40 terms, values in {1, 2, 3}: the similarity blocks are mostly
    empty (ranked sparse), many rows have fewer stored neighbours than k, and ties abound."""
    rng = np.random.default_rng(seed)
    X = np.zeros((60, 40))
    for row in X:
        row[rng.choice(40, size=rng.integers(1, 4), replace=False)] = rng.integers(1, 4)
    return sp.csr_matrix(X, dtype=dtype)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("k", [1, 4, 12])
@pytest.mark.parametrize("block_size", [None, 7])
def test_sparse_ranking_equals_dense_ranking(dtype, k, block_size, monkeypatch):
    X = very_sparse_data(dtype)
    Y = X.toarray()
    Y /= np.linalg.norm(Y, axis=1, keepdims=True)
    assert np.count_nonzero(Y @ Y.T) < 0.25 * Y.shape[0] ** 2  # the sparse ranking is used
    for weighting in ("binary", "cosine", "heat"):
        ranked_sparse = knn_graph(X, k, weighting=weighting, block_size=block_size)
        monkeypatch.setattr("textcluster.graph._exact.SPARSE_TOP_K", -1.0)  # always dense
        clear_graph_cache()
        ranked_dense = knn_graph(X, k, weighting=weighting, block_size=block_size)
        monkeypatch.undo()
        if weighting == "heat":  # the width sums the distances in another order
            assert (ranked_sparse.astype(bool) != ranked_dense.astype(bool)).nnz == 0
            np.testing.assert_allclose(ranked_sparse.data, ranked_dense.data, rtol=1e-12)
        else:
            assert (ranked_sparse != ranked_dense).nnz == 0
        if dtype == np.float64:
            expected = (brute_force_heat(X, k) if weighting == "heat"
                        else brute_force_knn(X, k, weighting))
            np.testing.assert_allclose(ranked_sparse.toarray(), expected, rtol=1e-12)


@pytest.mark.parametrize("k", [1, 3, 6])
def test_each_row_has_at_least_k_neighbours(k):
    X = random_data(n=40, seed=4)
    directed = knn_graph(X, k, symmetrize="none")
    assert np.all(np.diff(directed.indptr) == k)
    W = knn_graph(X, k)
    assert np.all(np.diff(W.indptr) >= k)


def test_zero_rows_get_no_edges_and_a_warning():
    X = random_data(n=20, seed=5)
    X[[3, 11]] = 0
    with pytest.warns(UserWarning, match="2 of the 20 rows of X are all zero"):
        W = knn_graph(sp.csr_matrix(X), 3, weighting="heat", block_size=6)
    assert W[3].nnz == 0 and W[:, 11].nnz == 0
    np.testing.assert_allclose(W.toarray(), brute_force_heat(X, 3), rtol=1e-9)


def test_fewer_nonzero_rows_than_neighbours():
    X = np.zeros((6, 3))
    X[0, 0] = X[1, 1] = 1.0
    with pytest.warns(UserWarning):
        W = knn_graph(X, 3)
    np.testing.assert_array_equal(W.toarray()[:2, :2], [[0, 1], [1, 0]])
    assert W.nnz == 2


def test_no_warning_without_zero_rows():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        knn_graph(random_data(), 3)


def test_cosine_weights_drop_orthogonal_neighbours():
    X = np.array([[1.0, 0, 0], [1.0, 0.1, 0], [0, 0, 1.0]])
    W = knn_graph(X, 1, weighting="cosine", symmetrize="none")
    assert W[2].nnz == 0  # its nearest neighbour has similarity 0


@pytest.mark.parametrize("k", [10, 11, 50])
def test_too_many_neighbours(k):
    with pytest.raises(InvalidInputError, match=rf"n_neighbors={k}.*n=10.*<= 9"):
        knn_graph(random_data(n=10), k)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"n_neighbors": 0}, "n_neighbors=0"),
        ({"n_neighbors": 2.5}, "n_neighbors must be an integer"),
        ({"symmetrize": "min"}, "symmetrize='min'.*max, mean, none"),
        ({"metric": "euclidean"}, "metric='euclidean' is not supported"),
        ({"t": -1.0}, "t=-1.0"),
        ({"t": "mean"}, "t='mean'"),
        ({"block_size": 0}, "block_size=0"),
    ],
)
def test_bad_parameters(kwargs, match):
    with pytest.raises(InvalidInputError, match=match):
        knn_graph(random_data(), **kwargs)


@pytest.mark.parametrize(
    "X, match",
    [
        (np.ones(5), "2-D"),
        (np.ones((1, 4)), "at least 2 rows"),
        (np.array([[1.0, np.nan], [1.0, 2.0], [0.5, 1.0]]), "NaN or infinite"),
        (sp.csr_matrix(np.array([[1.0, np.inf], [1.0, 2.0], [0.5, 1.0]])), "NaN or infinite"),
        ([["a", "b"], ["c", "d"]], "numeric"),
    ],
)
def test_bad_data(X, match):
    with pytest.raises(InvalidInputError, match=match):
        knn_graph(X, 1)


def test_unknown_weighting_lists_the_known_ones():
    with pytest.raises(UnknownNameError, match="known weightings: binary, cosine, heat"):
        knn_graph(random_data(), 3, weighting="gaussian")


def test_large_sparse_matrix_stays_sparse():
    n, m, k = 5000, 20000, 5
    X = sp.random(n, m, density=0.01, format="csr", random_state=np.random.default_rng(6))
    W = knn_graph(X, k)
    assert sp.isspmatrix_csr(W)
    assert k * n <= W.nnz <= 2 * k * n
    assert np.all(np.diff(W.indptr) >= k)


# -- degree, Laplacian ---------------------------------------------------------------------------


def test_degree():
    W = knn_graph(random_data(), 3, weighting="heat")
    np.testing.assert_allclose(degree(W), W.toarray().sum(axis=1))
    np.testing.assert_allclose(degree(W.toarray()), W.toarray().sum(axis=1))


def test_laplacian_rows_sum_to_zero():
    W = knn_graph(random_data(), 4, weighting="heat")
    L = laplacian(W)
    assert sp.isspmatrix_csr(L)
    np.testing.assert_allclose(np.asarray(L.sum(axis=1)).ravel(), 0, atol=1e-12)
    np.testing.assert_allclose(L.toarray(), np.diag(degree(W)) - W.toarray())


def test_normalized_laplacian():
    W = knn_graph(random_data(), 4, weighting="cosine").toarray()
    W[5, :] = W[:, 5] = 0  # an isolated node: zero row and column in L
    d = W.sum(axis=1)
    inv_sqrt = np.where(d > 0, 1 / np.sqrt(np.where(d > 0, d, 1)), 0)
    expected = np.diag((d > 0).astype(float)) - inv_sqrt[:, None] * W * inv_sqrt[None, :]
    L = laplacian(sp.csr_matrix(W), normalized=True)
    np.testing.assert_allclose(L.toarray(), expected, atol=1e-12)
    eigenvalues = np.linalg.eigvalsh(L.toarray())
    assert eigenvalues.min() > -1e-10 and eigenvalues.max() < 2 + 1e-10
    np.testing.assert_allclose(L.toarray()[5], 0)


def test_laplacian_rejects_non_square():
    with pytest.raises(InvalidInputError, match="square"):
        laplacian(np.ones((2, 3)))


# -- check_graph ---------------------------------------------------------------------------------


def test_check_graph_accepts_dense_and_sparse():
    W = np.array([[1.0, 2.0, 0.0], [2.0, 0.0, 0.5], [0.0, 0.5, 3.0]])
    for graph in (W, sp.csr_matrix(W), sp.coo_matrix(W), W.tolist()):
        G = check_graph(graph, 3)
        assert_valid_graph(G, 3)
        np.testing.assert_array_equal(G.toarray(), W - np.diag(np.diag(W)))


def test_check_graph_symmetrizes_within_tolerance():
    W = np.array([[0.0, 1.0], [1.0 + 1e-12, 0.0]])
    G = check_graph(W, 2)
    assert abs(G - G.T).max() == 0


@pytest.mark.parametrize(
    "W, match",
    [
        (np.ones((3, 4)), "shape \\(3, 4\\).*n=3"),
        (np.ones((4, 4)), "shape \\(4, 4\\).*n=3"),
        (np.ones(3), "2-D"),
        (np.array([[0, -1.0, 0], [-1.0, 0, 0], [0, 0, 0]]), "negative"),
        (np.array([[0, 1.0, 0], [0.5, 0, 0], [0, 0, 0]]), "not symmetric.*W.maximum"),
        (sp.csr_matrix(np.array([[0, 1.0, 0], [0, 0, 0], [0, 0, 0]])), "not symmetric"),
        (np.array([[0, np.nan, 0], [np.nan, 0, 0], [0, 0, 0]]), "NaN"),
        (np.array([[0, np.inf, 0], [np.inf, 0, 0], [0, 0, 0]]), "infinite"),
        ([["a", "b", "c"]] * 3, "numeric"),
    ],
)
def test_check_graph_rejects(W, match):
    with pytest.raises(InvalidInputError, match=match):
        check_graph(W, 3)


def test_a_repeated_graph_comes_from_the_cache_and_is_a_copy(monkeypatch):
    X = sp.random(40, 30, density=0.3, random_state=0, format="lil")
    X[3] = 0  # a zero row: its warning is repeated on every call
    X = X.tocsr()
    builds = []
    build = graph_module._build_knn_graph
    monkeypatch.setattr(graph_module, "_build_knn_graph",
                        lambda *args: builds.append(args) or build(*args))
    with pytest.warns(UserWarning, match="no edges"):
        first = knn_graph(X, 4)
    first.data[:] = 7.0  # the caller's copy: the cache keeps its own
    with pytest.warns(UserWarning, match="no edges"):
        second = knn_graph(X.copy(), 4)
    assert len(builds) == 1
    np.testing.assert_array_equal(second.toarray(), brute_force_knn(X, 4))
    Z = X.copy()
    Z.data[0] += 1.0  # other content, other options: built again
    for data, k, weighting in ((Z, 4, "binary"), (X, 5, "binary"), (X, 4, "cosine")):
        with pytest.warns(UserWarning):
            knn_graph(data, k, weighting)
    assert len(builds) == 4
    for n in range(graph_module.GRAPH_CACHE_SIZE + 1):  # the oldest is forgotten
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            knn_graph(X[: 10 + n], 3)
    assert len(graph_module.GRAPH_CACHE) == graph_module.GRAPH_CACHE_SIZE


def test_edge_lift_by_brute_force_and_on_planted_documents():
    from textcluster.graph import edge_lift

    rng = np.random.default_rng(5)
    X = sp.random(30, 20, density=0.3, random_state=rng, format="lil")
    X[4] = 0  # an all-zero row: cosine 0 with everything
    X = X.tocsr()
    W = sp.random(30, 30, density=0.1, random_state=rng)
    W = (W + W.T).tocsr()
    Y = unit_rows(X)
    S = Y @ Y.T
    Wd = W.toarray()
    by_hand = (Wd * S).sum() / Wd.sum() / ((S.sum() - np.trace(S)) / (30 * 29))
    assert edge_lift(X, W) == pytest.approx(by_hand, rel=1e-10)
    assert edge_lift(X.toarray(), W) == pytest.approx(by_hand, rel=1e-10)
    assert np.isnan(edge_lift(X, sp.csr_matrix((30, 30))))

    labels = np.repeat(np.arange(3), 40)
    rows = rng.random((120, 60)) * (rng.random((120, 60)) < 0.1)
    for c in range(3):
        rows[labels == c, 20 * c:20 * c + 20] += rng.random((40, 20))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert edge_lift(rows, knn_graph(rows, 5)) > 2.0
    n = 120
    random = sp.csr_matrix((np.ones(5 * n), (np.repeat(np.arange(n), 5),
                                             rng.integers(0, n, 5 * n))), shape=(n, n))
    assert 0.7 < edge_lift(rows, random.maximum(random.T)) < 1.3


# -- MKL's dense similarities: the same graph as SciPy's sparse product, bit for bit -----------


def tied_corpus(dtype, density=0.08, n=300, m=120, seed=0):
    """Short tf-idf-like rows with exact ties (duplicate rows), near ties (rows differing in one
    small entry), rows sharing terms with fewer than 7 others and an empty row; at density 0.08
    most pairs of rows share a term (the similarities are ranked densely), at 0.01 few do."""
    rng = np.random.default_rng(seed)
    X = sp.random(n, m, density=density, random_state=seed, format="lil", dtype=np.float64)
    X[10] = X[11]  # an exact tie
    X[20] = X[21]
    X[20, 0] = X[21, 0] + 1e-6  # a near tie
    X[30] = 0  # an empty row
    X[31] = 0
    X[31, m - 1] = 1.0  # a term no other row has...
    X[32] = 0
    X[32, m - 1] = 2.0  # ...but this one: fewer than k others with a shared term
    X = sp.csr_matrix(X, dtype=dtype)
    X.data = X.data.astype(dtype) + rng.random(X.nnz).astype(dtype) * dtype(1e-3)
    return X


def mkl_or_skip():
    from textcluster._compat import mkl_sparse_product

    mkl = mkl_sparse_product()
    if mkl is None:
        pytest.skip("the fast extra (MKL) is not installed")
    return mkl


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_row_dots_sum_as_scipys_product(dtype):
    Y = graph_module._unit_rows(tied_corpus(dtype), warn=False)[0]
    S = (Y @ Y.T.tocsr()).tocoo()
    dots = exact_search._row_dots(Y.indptr, Y.indices, Y.data, S.row, S.col)
    assert dots.dtype == dtype and np.array_equal(dots, S.data)


def blocks_both_ways(monkeypatch, Y, k, block_size, queries=None):
    """``_knn_blocks`` through SciPy's sparse product and through MKL's dense one."""
    mkl = mkl_or_skip()
    found = []
    for choice in (None, mkl):
        monkeypatch.setattr(exact_search, "_dense_similarities", lambda *args, c=choice: c)
        found.append(exact_search._knn_blocks(Y, k, block_size, False, queries=queries))
    return found


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("density", [0.08, 0.01])
@pytest.mark.parametrize("k", [1, 5, 7])
@pytest.mark.parametrize("queries", [False, True])
def test_dense_similarities_find_scipys_neighbours_in_its_order(monkeypatch, dtype, density, k,
                                                                  queries):
    # the same neighbours, similarities and order (a heat kernel's width t="knn" sums them)
    Y = graph_module._unit_rows(tied_corpus(dtype, density), warn=False)[0]
    chosen = np.arange(0, Y.shape[0], 3) if queries else None
    scipy_found, mkl_found = blocks_both_ways(monkeypatch, Y, k, 64, chosen)
    for a, b in zip(scipy_found, mkl_found):
        assert np.array_equal(a, b)


@pytest.mark.parametrize("weighting", ["binary", "cosine", "heat"])
def test_dense_similarities_give_scipys_graph(monkeypatch, weighting):
    mkl = mkl_or_skip()
    X = tied_corpus(np.float32)
    graphs = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the empty row
        for choice in (None, mkl):
            clear_graph_cache()
            monkeypatch.setattr(exact_search, "_dense_similarities", lambda *args, c=choice: c)
            graphs.append(knn_graph(X, 5, weighting=weighting, t="knn", method="exact",
                                    block_size=64))
    assert np.array_equal(graphs[0].indptr, graphs[1].indptr)
    assert np.array_equal(graphs[0].indices, graphs[1].indices)
    assert np.array_equal(graphs[0].data, graphs[1].data)


def test_dense_similarities_only_where_most_pairs_share_a_term():
    mkl_or_skip()
    dense = graph_module._unit_rows(sp.random(200, 30, density=0.5, random_state=0,
                                              format="csr"), warn=False)[0]
    sparse = sp.csr_matrix(sp.eye(200) + sp.random(200, 200, density=0.002, random_state=0))
    for Y, used in ((dense, True), (sparse, False)):
        chosen = exact_search._dense_similarities(Y, Y.T.tocsr())
        assert (chosen is not None) == used
    assert exact_search._dense_similarities(dense.toarray(), dense.T.toarray()) is None

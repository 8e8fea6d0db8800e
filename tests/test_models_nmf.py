"""What is special to NMF and GNMF (the common checks are in test_common_models.py)."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.decomposition import NMF as SklearnNMF

from textcluster import graph as graphs
from textcluster.models import GNMF, NMF
from textcluster.models import _linalg as linalg
from textcluster.models._linalg import (SparseOperator, column_major, graph_products,
                                        unit_columns)
from textcluster.models.nmf import (normal_floor, unit_basis_step, update_basis,
                                    update_documents)

from ._planted import planted_corpus, poisson_tfidf


def dense_objective(X, V, U, lam=0.0, W=None):
    X = X.toarray() if sp.issparse(X) else X
    value = np.linalg.norm(X - V @ U.T) ** 2
    if W is not None:
        L = graphs.laplacian(W).toarray()
        value += lam * np.trace(V.T @ L @ V)
    return value


def test_updates_match_the_dense_formulas():
    rng = np.random.default_rng(0)
    X, W = rng.random((30, 20)), graphs.knn_graph(rng.random((30, 20)), n_neighbors=4)
    U, V, lam = rng.random((20, 3)), rng.random((30, 3)), 2.5
    U_ref = U * (X.T @ V) / (U @ V.T @ V)
    update_basis(U, V, X.T @ V)
    np.testing.assert_allclose(U, U_ref)
    D = np.diag(np.asarray(W.sum(axis=1)).ravel())
    Wd = W.toarray()
    V_ref = V * (X @ U + lam * Wd @ V) / (V @ U.T @ U + lam * D @ V)
    update_documents(V, X @ U, U.T @ U, lam, W @ V, np.diag(D))
    np.testing.assert_allclose(V, V_ref)


@pytest.mark.parametrize("chunk_rows", [8192, 7])
def test_fused_step_equals_the_separate_updates(monkeypatch, chunk_rows):
    from textcluster.models import _linalg
    from textcluster.models.nmf import multiplicative_step

    monkeypatch.setattr(_linalg, "ROWWISE_ROWS", chunk_rows)  # the update in chunks of rows
    rng = np.random.default_rng(1)
    X = sp.random(300, 120, density=0.1, random_state=1, format="csr")
    W = graphs.knn_graph(X, n_neighbors=4)
    degree = graphs.degree(W)
    U, V = rng.random((120, 4)), rng.random((300, 4))
    U_ref, V_ref = U.copy(), V.copy()
    update_basis(U_ref, V_ref, X.T @ V_ref)
    update_documents(V_ref, X @ U_ref, U_ref.T @ U_ref, 3.0, W @ V_ref, degree)
    multiplicative_step(SparseOperator(X, threads=2), U, V, 3.0, W, degree)
    np.testing.assert_allclose(U, U_ref, rtol=1e-12)
    np.testing.assert_allclose(V, V_ref, rtol=1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("k", [1, 7, 8, 9, 16, 17, 33])  # within, at and across the lanes
def test_sparse_products_are_scipys_bit_for_bit(dtype, threads, k):
    rng = np.random.default_rng(k)
    keep = np.ones(400)
    keep[7] = 0  # an empty row
    X = sp.csr_matrix(sp.diags(keep) @ sp.random(400, 250, density=0.05, random_state=2)
                      ).astype(dtype)
    U, V = rng.random((250, k)).astype(dtype), rng.random((400, k)).astype(dtype)
    op = SparseOperator(X, threads=threads)
    assert np.array_equal(op.dot(U), X @ U)
    assert np.array_equal(op.tdot(V), X.T.tocsr() @ V)
    assert np.array_equal(op.dot(np.asfortranarray(U)), X @ U)
    np.testing.assert_allclose(op.dot(U.astype(np.float16)), X @ U, rtol=1e-2)  # SciPy's


def _in_random_stored_order(X, rng):
    """``X`` (CSR) with each row's entries stored in a random order."""
    for row in range(X.shape[0]):
        span = slice(X.indptr[row], X.indptr[row + 1])
        order = rng.permutation(span.stop - span.start)
        X.indices[span], X.data[span] = X.indices[span][order], X.data[span][order]
    X.has_sorted_indices = False
    return X


def _scaled_normals(rng, shape, dtype):
    """Normal numbers times powers of ten from 10⁻⁸ to 10⁷, some −0.0, in ``dtype``."""
    values = rng.standard_normal(shape) * 10.0 ** rng.integers(-8, 8, shape)
    values[rng.random(shape) < 0.1] = -0.0
    return values.astype(dtype)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 40), st.integers(0, 30), st.integers(0, 40), st.floats(0.0, 1.0),
       st.sampled_from([np.float32, np.float64]), st.sampled_from([np.int32, np.int64]),
       st.integers(0, 2**32 - 1))
def test_compiled_product_is_scipys_on_any_matrix(n, m, k, density, dtype, index_dtype, seed):
    # any shape (empty ones too), density and scale, entries in a random stored order (a
    # sorted sum differs), 32- or 64-bit indices
    rng = np.random.default_rng(seed)
    X = sp.random(n, m, density=density, random_state=seed, format="csr", dtype=np.float64)
    X.data *= 10.0 ** rng.integers(-8, 8, X.nnz)
    X = _in_random_stored_order(X, rng).astype(dtype)
    B = _scaled_normals(rng, (m, k), dtype)
    out = np.full((n, k), np.nan, dtype=dtype)  # every entry written
    linalg._csr_dense_rows(X.indptr.astype(index_dtype), X.indices.astype(index_dtype),
                           X.data, B, out)
    assert np.array_equal(out, X @ B)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 40), st.integers(1, 40), st.data(),
       st.sampled_from([np.float32, np.float64]), st.integers(0, 2**32 - 1))
def test_compiled_clip_is_the_loop_as_written(n, k, data, dtype, seed):
    # [g + XᵗV]₊ into U's block of columns, the old U into XᵗV, and the squares summed in
    # float64 row after row: the same bits as the scalar loop, −0.0 kept as max(x, 0.0) does
    width = data.draw(st.integers(1, k))
    start = data.draw(st.integers(0, k - width))
    rng = np.random.default_rng(seed)
    U, XtV = _scaled_normals(rng, (n, k), dtype), _scaled_normals(rng, (n, k), dtype)
    g = _scaled_normals(rng, (n, width), dtype)
    g[: n // 3] = -XtV[: n // 3, start:start + width]  # exact zeros
    block = slice(start, start + width)
    value = g + XtV[:, block]
    value = np.where(value < 0, dtype(0), value)
    expected_U, expected_XtV = U.copy(), XtV.copy()
    expected_U[:, block], expected_XtV[:, block] = value, U[:, block]
    squares = linalg._clip_block(U, g, XtV, start)
    assert U.tobytes() == expected_U.tobytes() and XtV.tobytes() == expected_XtV.tobytes()
    in_row_order = np.cumsum(value.astype(np.float64) ** 2, axis=0)[-1] if n else np.zeros(width)
    assert squares.tobytes() == in_row_order.tobytes()


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 40), st.integers(1, 40), st.sampled_from([np.float32, np.float64]),
       st.sampled_from(["python", "same", "wider"]), st.booleans(), st.integers(0, 2**32 - 1))
def test_compiled_graph_document_update_is_numpys(n, k, dtype, lam_type, floored, seed):
    # the compiled pass where NumPy would compute in V's dtype (the same bits); NumPy's own
    # operations where it would not (a float64 λ with float32 factors)
    rng = np.random.default_rng(seed)
    V, XU, WV = (np.abs(_scaled_normals(rng, (n, k), dtype)) for _ in range(3))
    V[rng.random((n, k)) < 0.2] = 0.0
    UtU = np.abs(_scaled_normals(rng, (k, k), dtype))
    degree = np.abs(_scaled_normals(rng, n, dtype))
    lam = float(rng.random() * 10.0 ** rng.integers(-3, 6))
    lam = {"python": lam, "same": dtype(lam), "wider": np.float64(lam)}[lam_type]
    floor = normal_floor(V) if floored else 0.0
    expected = V.copy()  # the NumPy operations of update_documents, as written
    numerator = XU + lam * WV
    denominator = expected @ UtU
    denominator += lam * degree[:, None] * expected
    np.maximum(denominator, 1e-10, out=denominator)
    expected *= np.divide(numerator, denominator, out=denominator)
    if floor:
        np.maximum(expected, floor, out=expected)
    update_documents(V, XU, UtU, lam, WV, degree, floor)
    assert V.tobytes() == expected.tobytes()


def test_product_blocks_balance_entries_or_cost():
    # 10 rows of 100 entries, then 990 rows of 1: the blocks by entries split the entries in
    # half; by cost (a row counts 12 entries more) the short rows are shared out too
    lengths = np.r_[np.full(10, 100), np.ones(990, dtype=int)]
    indptr = np.r_[0, np.cumsum(lengths)]
    A = sp.csr_matrix((np.ones(indptr[-1]), np.zeros(indptr[-1], dtype=np.int32), indptr),
                      shape=(1000, 1))
    rows = linalg._Rows(A, 2)
    for spans in (rows.by_entries, rows.by_cost):
        assert spans[0][0] == 0 and spans[-1][1] == 1000
        assert all(a[1] == b[0] for a, b in zip(spans, spans[1:]))
    assert rows.by_entries[0][1] == 10  # 1,000 of 1,990 entries
    assert rows.by_cost[0][1] == 462  # the first row whose cost to it, 990 + 13 i, is half


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("scaling", ["scale-free", "unit-basis"])
def test_float32_objective_is_monotone_when_the_graph_term_dominates(seed, scaling):
    # D V − W V cancels to rounding noise in float32; the objective is computed in float64
    X, _ = poisson_tfidf(seed=seed)
    model = GNMF(2, lam=1e8, scaling=scaling, n_init=1, max_iter=60, graph_check=False,
                 random_state=seed, n_assign_init=2).fit(X)
    history = model.objective_history_
    assert history[0] > 1e6 * history[-1]  # the graph term dominated at the start
    assert np.all(np.diff(history) <= 1e-6 * history[1:])


@pytest.mark.parametrize("shape", [(0, 3), (1, 1), (257, 2), (1000, 7)])
def test_column_major_copies_by_blocks(shape):
    A = np.random.default_rng(0).random(shape).astype(np.float32)
    B = column_major(A)
    assert B.flags.f_contiguous and np.array_equal(A, B) and not np.shares_memory(A, B)


@pytest.mark.parametrize("threads", ["1", "3"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("k", [4, 8, 9, 17])  # within, at and across the float64 lanes
def test_graph_products_are_the_float64_product(monkeypatch, threads, dtype, k):
    # the compiled pass over the edges: W V as SciPy's float64 product rounded to V's dtype, bit
    # for bit, in any number of threads; the trace to float64 rounding, into a given array too
    monkeypatch.setenv("TEXTCLUSTER_THREADS", threads)
    X, _ = planted_corpus(seed=3)
    W = graphs.knn_graph(X, 5)
    V = np.random.default_rng(0).random((X.shape[0], k)).astype(dtype)
    out = np.empty_like(V)
    smoothness, WV = graph_products(W, V, W.sum(1).A1, out=out)
    V64 = V.astype(np.float64)
    assert WV is out and np.array_equal(WV, (W.astype(np.float64) @ V64).astype(dtype))
    assert smoothness == pytest.approx(np.trace(V64.T @ (graphs.laplacian(W) @ V64)), rel=1e-12)


@pytest.mark.parametrize("scaling", ["unit-basis", "scale-free", "cai"])
def test_recorded_objective_equals_the_dense_objective(scaling):
    X, _ = planted_corpus(seed=11)
    model = GNMF(3, lam=5.0, scaling=scaling, n_init=1, max_iter=20, graph_check=False,
                 random_state=0)
    model.fit(X)
    # refit without the final normalization to read the factors the history refers to
    ctx = model._prepare(X, None, None)
    factors = model._random_factors(ctx, np.random.RandomState(0))
    for _ in range(20):
        last = model._update(factors, ctx)
    expected = dense_objective(X, factors.V, factors.U, ctx.lam, model.graph_)
    assert last == pytest.approx(expected, rel=1e-9)
    assert model.objective_history_[-1] == pytest.approx(expected, rel=1e-9)


def test_gnmf_with_zero_lambda_is_nmf():
    X, _ = planted_corpus(seed=12)
    nmf = NMF(3, n_init=3, init_iter=10, max_iter=50, random_state=4).fit(X)
    gnmf = GNMF(3, lam=0.0, scaling="cai", graph_check=False, n_init=3, init_iter=10,
                max_iter=50, assign="kmeans", random_state=4).fit(X)
    np.testing.assert_allclose(gnmf.components_, nmf.components_, rtol=1e-10)
    np.testing.assert_allclose(gnmf.objective_history_, nmf.objective_history_, rtol=1e-10)
    np.testing.assert_array_equal(gnmf.labels_, nmf.labels_)


def test_nmf_reaches_the_same_fit_as_scikit_learn():
    X, _ = planted_corpus(n_per_class=60, seed=13)
    rng = np.random.default_rng(0)
    W0, H0 = rng.random((X.shape[0], 4)), rng.random((4, X.shape[1]))
    ours = NMF(4, init="custom", max_iter=400).fit(X, W=W0.copy(), H=H0.copy())
    theirs = SklearnNMF(4, solver="mu", init="custom", max_iter=400, tol=0)
    theirs.fit_transform(X, W=W0.copy(), H=H0.copy())
    ours_error = np.sqrt(ours.objective_history_[-1])
    assert ours_error == pytest.approx(theirs.reconstruction_err_, rel=0.02)


def test_scale_free_lambda_does_not_depend_on_the_data_scale():
    X, _ = planted_corpus(seed=14)
    a = GNMF(3, n_init=2, init_iter=5, max_iter=30, random_state=0).fit(X)
    b = GNMF(3, n_init=2, init_iter=5, max_iter=30, random_state=0).fit(X * 1000.0)
    np.testing.assert_array_equal(a.labels_, b.labels_)
    np.testing.assert_allclose(a.components_, b.components_, rtol=1e-6, atol=1e-12)


def test_scale_free_lambda_does_not_depend_on_the_edge_weight_scale():
    X, _ = planted_corpus(seed=15)
    W = graphs.knn_graph(X, n_neighbors=5)
    a = GNMF(3, n_init=2, init_iter=5, max_iter=30, random_state=0).fit(X, graph=W)
    b = GNMF(3, n_init=2, init_iter=5, max_iter=30, random_state=0).fit(X, graph=W * 7.0)
    np.testing.assert_allclose(a.components_, b.components_, rtol=1e-6, atol=1e-12)


def test_graph_that_disagrees_with_the_data_falls_back_to_nmf():
    X, y = planted_corpus(n_per_class=60, seed=16)
    n = X.shape[0]
    rng = np.random.default_rng(0)
    G = sp.csr_matrix((np.ones(5 * n), (np.repeat(np.arange(n), 5), rng.integers(0, n, 5 * n))),
                      shape=(n, n))
    G = G.maximum(G.T).tolil()
    G.setdiag(0)
    model = GNMF(3, n_init=3, init_iter=10, max_iter=60, random_state=0)
    with pytest.warns(UserWarning, match="does not agree with the data"):
        model.fit(X, graph=G.tocsr())
    assert model.graph_check_["passed"] is False
    assert model.graph_check_["lift"] < 2.0
    assert model.lam_ == 0.0 and model.lam_selection_ is None
    plain = GNMF(3, lam=0.0, graph_check=False, n_init=3, init_iter=10, max_iter=60,
                 random_state=0).fit(X, graph=G.tocsr())
    np.testing.assert_array_equal(model.labels_, plain.labels_)  # fitted without the graph


def test_graph_that_agrees_with_the_data_is_kept():
    X, _ = planted_corpus(n_per_class=60, seed=17)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        model = GNMF(3, n_init=3, init_iter=10, max_iter=60, random_state=0).fit(X)
    assert model.graph_check_["passed"] is True
    assert model.graph_check_["lift"] > 2.0


def test_transform_of_training_documents_is_close_to_their_factor():
    X, y = planted_corpus(seed=18)
    model = NMF(3, n_init=1, max_iter=300, random_state=0)
    V = model.fit_transform(X)
    V_new = model.transform(X)
    assert np.argmax(V_new, axis=1).tolist() == np.argmax(V, axis=1).tolist()


def test_ncw_weighting_runs_and_keeps_shapes():
    X, y = planted_corpus(seed=19)
    V = NMF(3, ncw=True, n_init=2, init_iter=5, max_iter=30, random_state=0).fit_transform(X)
    assert V.shape == (X.shape[0], 3) and np.all(np.isfinite(V))


@pytest.mark.parametrize("seed", range(20))
def test_unit_basis_step_never_increases_the_objective_and_keeps_unit_norms(seed):
    rng = np.random.default_rng(seed)
    X = sp.random(60, 40, density=0.3, random_state=seed, format="csr")
    k = (1, 4, 13)[seed % 3]
    V = rng.random((60, k)) ** (1 + seed % 4)  # from overlapping to nearly disjoint columns
    U = rng.random((40, k))
    U /= np.linalg.norm(U, axis=0)
    for _ in range(5):
        before = dense_objective(X, V, U)
        unit_basis_step(U, X.T @ V, V.T @ V)
        np.testing.assert_allclose(np.linalg.norm(U, axis=0), 1.0)
        assert np.all(U >= 0)
        assert dense_objective(X, V, U) <= before * (1 + 1e-12)


def test_unit_basis_step_is_the_best_unit_column_where_the_documents_columns_do_not_overlap():
    # VᵀV diagonal: the step is exact, each column optimal given the others
    rng = np.random.default_rng(3)
    X = sp.random(60, 40, density=0.3, random_state=3, format="csr")
    V = np.zeros((60, 4))
    V[np.arange(60), np.arange(60) % 4] = rng.random(60) + 0.1
    U = rng.random((40, 4))
    U /= np.linalg.norm(U, axis=0)
    unit_basis_step(U, X.T @ V, V.T @ V)
    best = dense_objective(X, V, U)
    for _ in range(200):
        trial = U.copy()
        column = rng.random(40) ** 3
        trial[:, rng.integers(4)] = column / np.linalg.norm(column)
        assert dense_objective(X, V, trial) >= best - 1e-9


def in_blocks(U, XtV, VtV, blocks):
    """The unit-basis step as written: each block of columns in turn set to ``[g]₊`` scaled to
    unit columns, ``g = XᵀV_b − U (VᵀV)_{:,b} + U_b diag(d_b)`` from the current ``U``."""
    U, block = U.copy(), -(-U.shape[1] // blocks)
    for start in range(0, U.shape[1], block):
        b = slice(start, start + block)
        g = XtV[:, b] - U @ VtV[:, b] + U[:, b] * VtV[b, b].sum(axis=0)
        g = np.maximum(g, 0)
        norms = np.linalg.norm(g, axis=0)
        U[:, b] = np.where(norms > 0, g / np.where(norms > 0, norms, 1), U[:, b])
    return U


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("k", [1, 3, 4, 5, 9])
@pytest.mark.parametrize("rows_per_chunk", [7, 8192])
@pytest.mark.parametrize("blocks", [1, 2, linalg.UNIT_BLOCKS])
def test_unit_columns_is_the_step_as_written_whatever_the_threads(monkeypatch, dtype, k,
                                                                  rows_per_chunk, blocks):
    monkeypatch.setattr(linalg, "ROWWISE_ROWS", rows_per_chunk)
    rng = np.random.default_rng(k)
    X = sp.random(50, 70, density=0.2, random_state=k, format="csr")
    V = rng.random((50, k))
    U = rng.random((70, k))
    U /= np.linalg.norm(U, axis=0)
    XtV, VtV = X.T @ V, V.T @ V
    XtV[:, 0] = -1e3  # a column without a positive entry is kept
    expected = in_blocks(U, XtV, VtV, blocks)
    results = []
    for threads in ("1", "2", "3"):
        monkeypatch.setenv("TEXTCLUSTER_THREADS", threads)
        got = U.astype(dtype, order="F" if threads == "3" else "C")  # any layout
        gram = unit_columns(got, XtV.astype(dtype), VtV.astype(dtype), blocks)
        assert got.dtype == gram.dtype == dtype
        tolerance = 1e-5 if dtype == np.float32 else 1e-12
        np.testing.assert_allclose(gram, got.T @ got, atol=tolerance)  # the new UᵀU
        np.testing.assert_allclose(got, expected, atol=tolerance)
        np.testing.assert_array_equal(got[:, 0], U[:, 0].astype(dtype))
        results.append((got, gram))
    for got, gram in results[1:]:  # the same sums in the same order
        np.testing.assert_array_equal(got, results[0][0])
        np.testing.assert_array_equal(gram, results[0][1])


def test_unit_basis_keeps_the_document_factor_normal():
    X, _ = planted_corpus(seed=21)
    X = X.astype(np.float32)
    floor = normal_floor(np.zeros(1, np.float32))
    assert floor ** 2 >= np.finfo(np.float32).tiny  # a product of two floored entries is normal
    model = GNMF(3, lam=10.0, n_init=1, max_iter=1, graph_check=False, random_state=0)
    model._validate_params()
    ctx = model._prepare(model._check_input(X, reset=True), None, None)
    factors = model._random_factors(ctx, np.random.RandomState(0))
    factors.V[:, 0] = 1e-30  # entries the update keeps shrinking
    before = model._objective(factors, ctx)
    for _ in range(200):
        model._update(factors, ctx)
    assert factors.V.min() >= floor
    assert model._objective(factors, ctx) <= before


def test_unit_basis_gnmf_keeps_its_scale_where_the_free_basis_drifts():
    X, _ = planted_corpus(seed=20)
    free = GNMF(3, lam=1e3, scaling="scale-free", n_init=1, max_iter=200, graph_check=False,
                random_state=0)
    unit = GNMF(3, lam=1e3, scaling="unit-basis", n_init=1, max_iter=200, graph_check=False,
                random_state=0)
    for model in (free, unit):
        model._validate_params()
        ctx = model._prepare(model._check_input(X, reset=True), None, None)
        factors = model._random_factors(ctx, np.random.RandomState(0))
        for _ in range(200):
            model._update(factors, ctx)
        model.basis_norms = np.linalg.norm(factors.U, axis=0)
    assert free.basis_norms.max() > 2.0  # the free basis grows: λ fades
    np.testing.assert_allclose(unit.basis_norms, 1.0, rtol=1e-5)


def test_nonnegative_codes_solve_the_least_squares_problem():
    from scipy.optimize import nnls

    from textcluster.models._codes import nonnegative_codes

    rng = np.random.default_rng(0)
    B, Phi = rng.random((30, 4)), rng.random((12, 30))
    V = nonnegative_codes(Phi @ B, B.T @ B)
    expected = np.array([nnls(B, row)[0] for row in Phi])
    np.testing.assert_allclose(V, expected, atol=1e-6)


def test_transform_does_not_depend_on_the_iteration_count():
    X, _ = planted_corpus(seed=18)
    model = NMF(3, n_init=1, max_iter=20, random_state=0).fit(X)
    V = model.transform(X)
    model.max_iter = 500  # transform solves to a tolerance, not for max_iter steps
    np.testing.assert_array_equal(model.transform(X), V)


def _shuffled_planted(seed=3):
    # planted classes in random row order, so that the locality order is not the given one
    X, y = planted_corpus(n_per_class=30, seed=seed)
    rows = np.random.default_rng(seed).permutation(X.shape[0])
    return X[rows], y[rows]


@pytest.mark.parametrize("model", ["gnmf", "anmf"])
def test_fit_in_the_graph_locality_order_equals_the_fit_in_the_given_order(model, monkeypatch):
    from textcluster.models import MODELS
    from textcluster.models import _linalg

    X, _ = _shuffled_planted()
    rng = np.random.default_rng(0)
    W0, H0 = rng.random((X.shape[0], 3)), rng.random((3, X.shape[1]))
    fits = {}
    for minimum in (10**9, 1):  # as given; then every corpus in its locality order
        monkeypatch.setattr(_linalg, "LOCALITY_MIN_DOCS", minimum)
        est = MODELS.get(model)(3, init="custom", max_iter=20, random_state=0)
        codes = est.fit_transform(X, W=W0.copy(), H=H0.copy())
        fits[minimum] = est, codes
    (given, given_codes), (ordered, ordered_codes) = fits[10**9], fits[1]
    order = _linalg.locality_order(given.graph_)
    assert not np.array_equal(order, np.arange(X.shape[0]))  # the fit did reorder
    assert (given.graph_ != ordered.graph_).nnz == 0  # the graph kept in the given order
    np.testing.assert_allclose(ordered_codes, given_codes, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(ordered.components_, given.components_, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(ordered.neighbour_factor_, given.neighbour_factor_, rtol=1e-6,
                               atol=1e-9)
    np.testing.assert_array_equal(ordered.labels_, given.labels_)
    np.testing.assert_allclose(ordered.objective_history_, given.objective_history_, rtol=1e-9)
    new = X[:7] * 0.9
    np.testing.assert_allclose(ordered.transform(new), given.transform(new), rtol=1e-6, atol=1e-9)


def test_locality_order_keeps_neighbours_near_and_small_corpora_as_given(monkeypatch):
    from textcluster.models import _linalg

    X, _ = _shuffled_planted()
    W = graphs.knn_graph(X, n_neighbors=5)
    assert _linalg.locality_order(W) is None  # 90 documents: as given
    monkeypatch.setattr(_linalg, "LOCALITY_MIN_DOCS", 1)
    order = _linalg.locality_order(W)
    assert np.array_equal(np.sort(order), np.arange(X.shape[0]))
    bandwidth = lambda A: np.abs(A.nonzero()[0] - A.nonzero()[1]).max()  # noqa: E731
    assert bandwidth(W[order][:, order]) < bandwidth(W) / 2


def test_a_failed_start_stops_the_starts_beside_it(monkeypatch):
    # one of the random starts fails at its first update: the start running beside it stops
    # at its next update, the starts not yet begun never run, and no thread is left behind
    import threading

    from textcluster.models import _base

    X, _ = planted_corpus(seed=1)
    monkeypatch.setattr(_base, "n_threads", lambda: 2)
    draw, original, updates = NMF._random_starts, NMF._update, []

    def starts(self, ctx):
        found = draw(self, ctx)
        found[0].failing = True
        return found

    def update(self, factors, ctx):
        if getattr(factors, "failing", False):
            raise FloatingPointError("the first start failed")
        updates.append(threading.current_thread().name)
        return original(self, factors, ctx)

    monkeypatch.setattr(NMF, "_random_starts", starts)
    monkeypatch.setattr(NMF, "_update", update)
    model = NMF(3, n_init=6, init_iter=100_000, max_iter=100_000, random_state=0)
    with pytest.raises(FloatingPointError, match="the first start failed"):
        model.fit(X)
    assert len(updates) < 100_000  # not one other start's 100,000 updates, let alone five
    assert not any(t.name.startswith("textcluster-beside") for t in threading.enumerate())

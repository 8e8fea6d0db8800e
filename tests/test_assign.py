import numpy as np
import pytest
import scipy.sparse as sp

from textcluster.assign import assign_clusters, cluster_scores, fit_assignment
from textcluster._errors import InvalidInputError


def test_cluster_scores_are_one_minus_the_ratio_of_own_to_nearest_other_centroid_distance():
    rng = np.random.default_rng(0)
    rows, labels = rng.random((20, 5)), rng.integers(0, 3, 20)
    centroids = np.vstack([rows[labels == c].mean(axis=0) for c in range(3)])
    distances = np.linalg.norm(rows[:, None, :] - centroids[None], axis=2)
    own = distances[np.arange(20), labels]
    distances[np.arange(20), labels] = np.inf
    expected = np.clip(1 - own / distances.min(axis=1), 0, 1)
    np.testing.assert_allclose(cluster_scores(rows, labels), expected, atol=1e-12)
    np.testing.assert_allclose(cluster_scores(sp.csr_matrix(rows), labels), expected, atol=1e-12)


def test_cluster_scores_bounds_and_edge_cases():
    rows = np.array([[0.0, 0.0], [0.0, 0.2], [10.0, 0.0], [8.0, 0.0]])
    scores = cluster_scores(rows, np.array([0, 0, 1, 0]))
    assert np.all((scores >= 0) & (scores <= 1))
    assert scores[2] == 1.0  # alone at its cluster's centroid
    assert scores[3] == 0.0  # nearer to the other cluster than to its own
    assert np.all(cluster_scores(rows, np.zeros(4, dtype=int)) == 1.0)  # one cluster: no rival
    np.testing.assert_allclose(cluster_scores(rows, np.array([0, 0, 2, 2])),  # cluster 1 empty
                               cluster_scores(rows, np.array([0, 0, 1, 1])))


def test_argmax_and_kmeans_assignment():
    embedding = np.array([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0], [0.1, 0.8]])
    assert assign_clusters(embedding, 2, method="argmax").tolist() == [0, 0, 1, 1]
    labels = assign_clusters(embedding, 2, n_init=3, random_state=0)
    assert labels[0] == labels[1] != labels[2] == labels[3]


def test_assignment_rejects_nan_and_too_many_clusters():
    with pytest.raises(InvalidInputError, match="NaN"):
        assign_clusters(np.array([[np.nan, 1.0]]), 1)
    with pytest.raises(InvalidInputError, match="clusters"):
        assign_clusters(np.ones((2, 2)), 3)


def test_the_fitted_rule_is_the_nearest_centroid_in_its_space():
    rng = np.random.default_rng(1)
    rows = rng.random((60, 4)) ** 3
    for method in ("kmeans", "cosine"):
        rule = fit_assignment(rows, 3, method, n_init=3, random_state=0)
        space = rows / np.linalg.norm(rows, axis=1, keepdims=True) if method == "cosine" else rows
        np.testing.assert_allclose(rule.rows(rows), space)
        distances = ((space[:, None, :] - rule.centers[None]) ** 2).sum(axis=2)
        np.testing.assert_array_equal(rule.predict(rows), distances.argmin(axis=1))
        np.testing.assert_array_equal(assign_clusters(rows, 3, method, 3, 0), rule.predict(rows))
        np.testing.assert_array_equal(rule.predict(sp.csr_matrix(rows)), rule.predict(rows))
    argmax = fit_assignment(rows, 4, "argmax")
    np.testing.assert_array_equal(argmax.centers, np.eye(4))
    np.testing.assert_array_equal(argmax.predict(rows), rows.argmax(axis=1))


def test_the_rule_of_a_row_does_not_depend_on_the_other_rows():
    rows = np.random.default_rng(2).random((30, 3))
    rule = fit_assignment(rows, 3, "cosine", n_init=2, random_state=0)
    alone = np.concatenate([rule.predict(rows[i:i + 1]) for i in range(30)])
    np.testing.assert_array_equal(alone, rule.predict(rows))


def test_restarts_on_a_sample_of_a_large_corpus_then_lloyd_on_all_rows(monkeypatch):
    # beyond KMEANS_SAMPLE_ROWS the restarts see a sample; the centroids are then refined on
    # every row: Lloyd's fixed point of all rows, at an inertia as low as the full restarts'
    from textcluster import assign

    rng = np.random.default_rng(3)
    centres = rng.random((6, 5)) * 4
    truth = rng.integers(0, 6, 3000)
    rows = centres[truth] + rng.normal(scale=0.6, size=(3000, 5))
    full = fit_assignment(rows, 6, n_init=10, random_state=0)
    monkeypatch.setattr(assign, "KMEANS_SAMPLE_ROWS", 300)
    sampled = fit_assignment(rows, 6, n_init=10, random_state=0)
    labels = sampled.predict(rows)
    means = np.vstack([rows[labels == c].mean(axis=0) for c in range(6)])
    np.testing.assert_allclose(sampled.centers, means, atol=1e-3)  # refined on all rows

    def inertia(rule):
        return float(((rows - rule.centers[rule.predict(rows)]) ** 2).sum())

    assert inertia(sampled) <= 1.001 * inertia(full)


def test_small_kmeans_runs_in_one_openmp_thread_and_finds_the_same_clusters(monkeypatch):
    # a Lloyd iteration below SMALL_KMEANS_WORK multiply-adds runs in one OpenMP thread (a
    # thread scheduled late on a busy core stalls every small iteration); larger ones keep
    # scikit-learn's threads; the clusters do not depend on it
    from threadpoolctl import threadpool_info

    from textcluster import _threads, assign

    def openmp_threads():
        return [pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "openmp"]

    default = openmp_threads()
    small, large = np.zeros((100, 10)), sp.random(10**4, 10**3, density=0.1, format="csr")
    with _threads.kmeans_threads(small, 5):
        assert all(n == 1 for n in openmp_threads())
    with _threads.kmeans_threads(large, 30):  # 3·10⁷ multiply-adds an iteration
        assert openmp_threads() == default
    assert openmp_threads() == default

    rng = np.random.default_rng(4)
    rows = rng.random((6, 8))[rng.integers(0, 6, 2000)] + rng.normal(scale=0.3, size=(2000, 8))
    one_thread = assign_clusters(rows, 6, n_init=3, random_state=0)
    monkeypatch.setattr(_threads, "SMALL_KMEANS_WORK", 0)
    np.testing.assert_array_equal(assign.assign_clusters(rows, 6, n_init=3, random_state=0),
                                  one_thread)

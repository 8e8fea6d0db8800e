import numpy as np
import pytest
import scipy.sparse as sp

from textcluster.assign import assign_clusters, cluster_scores
from textcluster._errors import InvalidInputError


def test_cluster_scores_are_cosines_to_the_cluster_mean_for_dense_and_sparse_rows():
    rng = np.random.default_rng(0)
    rows, labels = rng.random((20, 5)), rng.integers(0, 3, 20)
    means = np.vstack([rows[labels == c].mean(axis=0) for c in range(3)])[labels]
    expected = np.einsum("ij,ij->i", rows, means) / (
        np.linalg.norm(rows, axis=1) * np.linalg.norm(means, axis=1))
    np.testing.assert_allclose(cluster_scores(rows, labels), expected)
    np.testing.assert_allclose(cluster_scores(sp.csr_matrix(rows), labels), expected)


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

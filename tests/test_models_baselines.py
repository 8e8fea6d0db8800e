"""The baselines against scikit-learn: k-means on the tf-idf rows, and LSI + k-means."""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.cluster import KMeans
from sklearn.decomposition import TruncatedSVD
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import Normalizer

from textcluster.models import make_model


@pytest.fixture(scope="module")
def X():
    rng = np.random.default_rng(0)
    blocks = [sp.random(30, 40, density=0.2, random_state=rng) for _ in range(3)]
    return sp.csr_matrix(sp.block_diag(blocks) + sp.random(90, 120, density=0.02,
                                                             random_state=rng))


def test_kmeans_is_scikit_learns_kmeans_on_the_rows(X):
    ours = make_model("kmeans", n_components=3, n_init=4, random_state=1).fit(X)
    theirs = KMeans(3, n_init=4, random_state=1).fit(X)
    np.testing.assert_array_equal(ours.labels_, theirs.labels_)


@pytest.mark.parametrize("normalize", [True, False])
def test_lsi_is_truncated_svd_then_kmeans(X, normalize):
    ours = make_model("lsi-kmeans", n_components=3, n_dims=5, normalize=normalize, n_init=4,
                      random_state=1).fit(X)
    steps = [TruncatedSVD(5, random_state=1)] + ([Normalizer()] if normalize else [])
    projected = make_pipeline(*steps).fit_transform(X)
    theirs = KMeans(3, n_init=4, random_state=1).fit(projected)
    np.testing.assert_array_equal(ours.labels_, theirs.labels_)
    np.testing.assert_allclose(ours.transform(X), theirs.transform(projected), rtol=1e-10)
    if normalize:
        np.testing.assert_allclose(np.linalg.norm(ours._represent(X, fitting=False), axis=1), 1)

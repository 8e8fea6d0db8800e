"""Clusters from a document representation."""

import numpy as np
import scipy.sparse as sp
from sklearn.cluster import KMeans

from ._errors import InvalidInputError


def assign_clusters(embedding, n_clusters, method="kmeans", n_init=20, random_state=None):
    """Cluster label of each row of ``embedding`` (documents × factors).

    ``"kmeans"`` runs k-means with ``n_init`` restarts on the rows, as the GNMF papers do
    (on TDT2 it gives NMI 0.87 where argmax of the same factor gives 0.17, DESIGN §5.6);
    ``"argmax"`` takes the largest entry of each row.
    """
    embedding = np.asarray(embedding)
    if not np.all(np.isfinite(embedding)):
        raise InvalidInputError("the document representation has NaN or infinite values")
    if method == "argmax":
        return np.argmax(embedding, axis=1)
    if method != "kmeans":
        raise InvalidInputError(f"unknown assignment {method!r}; choose kmeans or argmax")
    if n_clusters > embedding.shape[0]:
        raise InvalidInputError(
            f"cannot make {n_clusters} clusters from {embedding.shape[0]} documents"
        )
    km = KMeans(n_clusters, n_init=n_init, random_state=random_state)
    return km.fit_predict(embedding)


def cluster_scores(rows, labels):
    """Confidence of each assignment: cosine similarity of a document's row to the mean row
    of its cluster (1 = exactly the cluster's profile, 0 = orthogonal to it).

    ``rows`` may be sparse (tf-idf rows); only the k × m centroids are dense.
    """
    labels = np.asarray(labels)
    n, k = len(labels), int(labels.max()) + 1
    indicator = sp.csr_matrix((np.ones(n), (labels, np.arange(n))), shape=(k, n))
    centroids = indicator @ rows
    centroids = centroids.toarray() if sp.issparse(centroids) else np.asarray(centroids)
    centroids = centroids / np.maximum(np.bincount(labels, minlength=k), 1)[:, None]
    dots = np.asarray(rows @ centroids.T)[np.arange(n), labels]
    squares = rows.multiply(rows) if sp.issparse(rows) else np.square(rows)
    norms = np.sqrt(np.asarray(squares.sum(axis=1)).ravel())
    norms *= np.linalg.norm(centroids, axis=1)[labels]
    return np.clip(dots / np.maximum(norms, 1e-12), 0.0, 1.0)

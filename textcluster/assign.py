"""Clusters from a document representation."""

import numpy as np
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


def cluster_scores(embedding, labels):
    """Confidence of each assignment: cosine similarity of a document's row to the mean row
    of its cluster (1 = exactly the cluster's profile, 0 = orthogonal to it)."""
    embedding = np.asarray(embedding, dtype=np.float64)
    centroids = np.vstack([embedding[labels == c].mean(axis=0) if np.any(labels == c)
                           else np.zeros(embedding.shape[1]) for c in range(labels.max() + 1)])
    rows = np.linalg.norm(embedding, axis=1) * np.linalg.norm(centroids[labels], axis=1)
    cos = np.einsum("ij,ij->i", embedding, centroids[labels]) / np.maximum(rows, 1e-12)
    return np.clip(cos, 0.0, 1.0)

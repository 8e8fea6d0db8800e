"""Small synthetic corpora with planted clusters, written at test time."""

import numpy as np
import scipy.sparse as sp

from textcluster import graph as graphs


def planted_corpus(n_per_class=40, n_classes=3, terms_per_class=20, noise=0.05, seed=0,
                   sparse=True):
    """Documents × terms counts where each class uses its own block of terms, plus noise.

    Returns ``(X, y)``; X rows are L2-normalized tf-like weights.
    """
    rng = np.random.default_rng(seed)
    n, m = n_per_class * n_classes, terms_per_class * n_classes
    y = np.repeat(np.arange(n_classes), n_per_class)
    X = rng.random((n, m)) * (rng.random((n, m)) < noise)
    for c in range(n_classes):
        block = slice(c * terms_per_class, (c + 1) * terms_per_class)
        rows = y == c
        X[np.ix_(rows, np.arange(m)[block])] += rng.random((rows.sum(), terms_per_class)) * (
            rng.random((rows.sum(), terms_per_class)) < 0.5)
    X[X.sum(axis=1) == 0, 0] = 1.0
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    return (sp.csr_matrix(X) if sparse else X), y


def poisson_tfidf(seed=0, n_per_class=20, n_classes=2, terms_per_class=15, dtype=np.float32):
    """Tf-idf (the pipeline's default weighting) of Poisson term counts in which each class
    favours its own block of terms: rows are close to each other, so a kNN graph term
    dominates graph-regularized objectives (a hard case for float32 rounding)."""
    from textcluster.text.tfidf import tfidf

    rng = np.random.default_rng(seed)
    y = np.repeat(np.arange(n_classes), n_per_class)
    rates = np.full((len(y), n_classes * terms_per_class), 0.5)
    for c in range(n_classes):
        block = np.arange(c * terms_per_class, (c + 1) * terms_per_class)
        rates[np.ix_(y == c, block)] = 0.9
    counts = rng.poisson(rates).astype(float)
    counts[counts.sum(axis=1) == 0, 0] = 1.0
    X, _ = tfidf(sp.csr_matrix(counts))
    return X.astype(dtype), y


def linking_graph(y, n_neighbors=5, seed=0):
    """A graph that links every document to documents of the other classes only."""
    rng = np.random.default_rng(seed)
    n = len(y)
    rows, cols = [], []
    for i in range(n):
        others = np.flatnonzero(y != y[i])
        rows += [i] * n_neighbors
        cols += list(rng.choice(others, n_neighbors, replace=False))
    G = sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(n, n))
    return G.maximum(G.T)


def following_graph(X, y, n_neighbors=5):
    """The kNN graph of X with the edges between classes removed."""
    G = graphs.knn_graph(X, n_neighbors=n_neighbors).tocoo()
    keep = y[G.row] == y[G.col]
    return sp.csr_matrix((G.data[keep], (G.row[keep], G.col[keep])), shape=G.shape)

"""textcluster: document clustering with the graph-regularized NMF family."""

__version__ = "0.1.0"

"""The dense document kernel ``K = X Xᵀ`` shared by concept factorization and convex NMF.

These models write the basis as a combination of the documents (``U = Xᵀ A``), so every update
and the objective need only ``K = X Xᵀ`` (n × n, documents × documents) times thin n × k
matrices. ``K`` is dense whatever the sparsity of ``X``: memory O(n²), checked with
:func:`~textcluster.models._memory.require_memory` before it is allocated. It is computed one
block of rows at a time from sparse ``X`` (no dense n × m matrix), in ``X``'s precision, and
multiplied by the factors in row blocks spread over threads. :class:`KernelContext` is what
these models prepare (:func:`kernel_context`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from .._threads import n_threads, thread_pool
from ._base import EPS, Context, check_custom_factor
from ._linalg import gram_matrix
from ._memory import dense_bytes, require_memory

KERNEL_ADVICE = (
    "Models with a document kernel (cf, lccf, grscf, convex-nmf) keep n × n numbers; for a "
    "corpus this large use nmf or gnmf (memory O(nnz + (n + m)k)), or cluster a subset of the "
    "documents."
)


class DenseKernel:
    """``K`` (n × n, dense) with ``K @ B`` in row blocks over threads and its trace."""

    def __init__(self, K, threads=None):
        self.K = K
        self.shape = K.shape
        self.dtype = K.dtype
        parts = threads or n_threads()
        cuts = np.linspace(0, K.shape[0], min(parts, max(K.shape[0] // 64, 1)) + 1).astype(int)
        self._blocks = list(zip(cuts[:-1], cuts[1:]))

    def dot(self, B):
        """``K @ B``."""
        if len(self._blocks) == 1:
            return self.K @ B
        out = np.empty((self.shape[0], B.shape[1]), dtype=np.result_type(self.dtype, B.dtype))

        def work(block):
            start, stop = block
            np.matmul(self.K[start:stop], B, out=out[start:stop])

        list(thread_pool(len(self._blocks)).map(work, self._blocks))
        return out

    def trace(self):
        """``tr K = ‖X‖²_F``, accumulated in float64."""
        return float(np.trace(self.K, dtype=np.float64))


def linear_kernel(X, owner: str) -> np.ndarray:
    """``K = X Xᵀ`` (:func:`~textcluster.models._linalg.gram_matrix`), dense n × n in ``X``'s
    dtype, once the memory for it is known to be there.

    Raises :class:`~textcluster.models._memory.InsufficientMemoryError` before allocating when
    ``K`` would not fit; ``owner`` names the model in that message.
    """
    n = X.shape[0]
    dtype = np.dtype(X.dtype)
    require_memory(dense_bytes(n, n, dtype.itemsize),
                   f"The {n * n:,} entries of {owner}'s dense {n:,} × {n:,} {dtype.name} "
                   "document kernel X Xᵀ",
                   KERNEL_ADVICE)
    return gram_matrix(X)


@dataclass(kw_only=True)
class KernelContext(Context):
    """What a model that sees the documents through ``K = X Xᵀ`` prepares."""

    X: sp.csr_matrix | np.ndarray
    """The documents as factorized (after any weighting), n × m."""
    K: DenseKernel
    """``K = X Xᵀ`` (n × n, dense)."""
    K_trace: float
    """``tr K = ‖X‖²_F``."""


def kernel_context(X, owner: str, context: type[KernelContext] = KernelContext,
                   **fields) -> KernelContext:
    """``context`` (:class:`KernelContext` or an extension of it, with its other ``fields``)
    of the documents ``X`` as factorized: the dense kernel :func:`linear_kernel` of ``X``
    (``owner`` names the model) and its trace."""
    K = DenseKernel(linear_kernel(X, owner))
    return context(X=X, K=K, K_trace=K.trace(), dtype=X.dtype, **fields)


# -- the math shared by the kernel models --------------------------------------------------
def kernel_fit_error(K_trace, V, KA, AtKA):
    """``‖X − V Aᵀ X‖²_F = tr K − 2 tr(Vᵀ K A) + tr(AᵀKA VᵀV)``, accumulated in float64."""
    cross = np.einsum("ij,ij->", V, KA, dtype=np.float64)
    gram = np.einsum("ij,ij->", AtKA, V.T @ V, dtype=np.float64)
    return max(K_trace - 2.0 * cross + gram, 0.0)


def normalize_concepts(A, V, KA):
    """Scale each concept ``Xᵀ a_k`` to unit L2 norm (``a_kᵀ K a_k = 1``); ``V`` absorbs the
    scale (Cai's ``NormalizeUV`` with ``NormV = 0``). ``KA`` is rescaled with ``A``."""
    norms = np.sqrt(np.maximum(np.einsum("ij,ij->j", A, KA), EPS)).astype(A.dtype)
    A /= norms
    KA /= norms
    V *= norms
    return norms


def concepts_for_basis(X, basis):
    """Concept weights ``A`` (n × k) for an initial basis (k × m): each concept starts as the
    documents weighted by their similarity to that basis vector, ``A = X basisᵀ``, scaled so
    that ``‖Xᵀ a_k‖`` equals the basis vector's norm."""
    basis_t = np.ascontiguousarray(basis.T)
    A = np.asarray(X @ basis_t)
    concept_norms = np.linalg.norm(np.asarray(X.T @ A), axis=0)
    A *= (np.linalg.norm(basis_t, axis=0) / np.maximum(concept_norms, EPS)).astype(A.dtype)
    return A


def custom_concept_start(ctx: KernelContext, W, H, k):
    """``(V, A)`` from the caller's ``W`` (n × k document factor) and ``H`` (k × m basis)."""
    n, m = ctx.X.shape
    V = check_custom_factor("W", W, (n, k), ctx.dtype)
    basis = check_custom_factor("H", H, (k, m), ctx.dtype)
    return V, concepts_for_basis(ctx.X, basis)

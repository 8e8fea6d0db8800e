"""The document kernel ``K = X Xᵀ`` shared by concept factorization and convex NMF.

These models write the basis as a combination of the documents (``U = Xᵀ A``), so every update
and the objective need only ``K = X Xᵀ`` (n × n, documents × documents) times thin n × k
matrices and its trace ``‖X‖²_F``. :func:`kernel_context` gives them ``K`` in one of two
forms (:func:`document_kernel`): through sparse ``X``, ``K B = X (Xᵀ B)`` (2·nnz
multiply-adds per column of ``B``, nothing n × n stored), or dense (n² per column, BLAS),
computed one block of rows at a time from sparse ``X`` and multiplied in row blocks spread
over threads. The dense form is kept where n² ≤ 2·nnz·``SPARSE_SLOWDOWN`` (at most 40 numbers
per non-zero of ``X``, the threshold of the projective models' products) and it fits in
memory, so memory is O(nnz + n k) either way. Measured (``benchmarks/bench_kernel_products.py``,
two threads, k = number of classes): through ``X`` 1.5–14 ms against 44–331 ms dense on TDT2,
Reuters, AG News and StackOverflow (7,600–20,000 documents), and a default LCCF fit on AG
News 3.1 s against 39.2 s, the same clusters; on the CLUTO sets the dense form is kept (LA
Times 1, 3,204 documents: 4.4 ms dense against 2.3 ms through ``X``; tr11, 414 documents: 0.1
against 0.7 ms).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from .._threads import each, n_threads
from ._base import EPS, Context, check_custom_factor
from ._gram import DataGram, factored_gram_pays
from ._linalg import gram_matrix
from ._memory import dense_bytes, memory_fits


class DenseKernel:
    """``K`` (n × n, dense) with ``K @ B`` in row blocks over threads and its trace (as a
    :class:`~textcluster.models._gram.DataGram` has them)."""

    def __init__(self, K, threads=None):
        self.K = K
        self.shape = K.shape
        self.dtype = K.dtype
        self.trace = float(np.trace(K, dtype=np.float64))  # ``tr K = ‖X‖²_F``
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

        each(work, self._blocks)
        return out


def document_kernel(X) -> DenseKernel | DataGram:
    """``K = X Xᵀ`` for ``K @ B`` products: a :class:`DenseKernel` (dense n × n in ``X``'s
    dtype, :func:`~textcluster.models._linalg.gram_matrix`) where that is faster than the two
    sparse products of a :class:`~textcluster.models._gram.DataGram` and the memory for it is
    available, else the ``DataGram`` (nothing n × n stored)."""
    n = X.shape[0]
    nnz = X.nnz if sp.issparse(X) else n * X.shape[1]
    if not factored_gram_pays(n, nnz) and memory_fits(dense_bytes(n, n, X.dtype.itemsize)):
        return DenseKernel(gram_matrix(X))
    return DataGram(X)


@dataclass(kw_only=True)
class KernelContext(Context):
    """What a model that sees the documents through ``K = X Xᵀ`` prepares."""

    X: sp.csr_matrix | np.ndarray
    """The documents as factorized (after any weighting), n × m."""
    K: DenseKernel | DataGram
    """``K = X Xᵀ`` (n × n), dense or through ``X`` (:func:`document_kernel`)."""
    K_trace: float
    """``tr K = ‖X‖²_F``."""


def kernel_context(X, context: type[KernelContext] = KernelContext,
                   **fields) -> KernelContext:
    """``context`` (:class:`KernelContext` or an extension of it, with its other ``fields``)
    of the documents ``X`` as factorized: their kernel (:func:`document_kernel`) and its
    trace."""
    K = document_kernel(X)
    return context(X=X, K=K, K_trace=K.trace, dtype=X.dtype, **fields)


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

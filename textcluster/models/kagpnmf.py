"""Kernel AGPNMF (Pei, Wu & Chen 2014; paper 000, eqs. 18–21): :class:`AGPNMF` with a kernel
in place of the document Gram matrix."""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp

from .._compat import Interval, StrOptions
from ._base import Seed, shared_parameters
from ._gram import KernelGram, cross_kernel, kernel_matrix
from .cluster_count import NComponents
from .projective import AGPNMF

@shared_parameters
class KernelAGPNMF(AGPNMF):
    """Kernel AGPNMF (Pei, Wu & Chen 2014; paper 000, eqs. 18–21).

    :class:`AGPNMF` with a kernel ``K`` in place of ``G = X Xᵀ``:
    ``min ‖φ(X) − H Hᵀφ(X)‖² + γ tr(HᵀLH) + ‖φ(X) − Sᵀφ(X)‖² + α tr(SᵀS) + β ‖S‖₁``,
    whose updates (eqs. 20–21, the H-rule corrected as in the module docstring) read the
    data only through ``K``. The rule stays a majorization step for every kernel here: ``K``
    is positive semi-definite with non-negative entries (``coef0 ≥ 0`` for the polynomial).

    Kernels: ``linear`` ``⟨x_i, x_j⟩`` (= :class:`AGPNMF`, computed through the sparse X);
    ``polynomial`` ``(⟨x_i, x_j⟩ + coef0)^degree``; ``gaussian``
    ``exp(−‖x_i − x_j‖² / (2σ²))`` with σ = ``sigma``, or the mean distance between the
    documents when None (the width is kept in ``sigma_``).

    Cost: a non-linear ``K`` is dense and stored. With a sparse start (the default kNN one)
    ``S`` is held on its support, as in :class:`AGPNMF`, and ``K S`` is summed there from
    ``K``'s entries; the products ``K H`` take n² k multiply-adds. A random or dense start
    makes ``K S`` an n × n × n BLAS-3 product per iteration (on ``BLAS3_THREADS`` BLAS
    threads). Memory: n² numbers for ``K``, ``2·n_init · n²`` more for a random or dense
    start, plus the fitted documents (O(nnz)) kept for ``transform``.

    ``gamma="auto"`` chooses between the clusters of LSA + k-means and the learned graph's
    without AGPNMF's path over γ (``lam_path = ()``): each update's ``K H`` costs n² k, and
    with the path the choice took 148–149 s on TDT2 against 73–80 s without it. Nor would
    the path move the three panel corpora where kernel AGPNMF stays below the bar, as LSA +
    k-means does (CLUTO la2, tr31, k1b; measured with AGPNMF's path, seed 0): from the start,
    50 iterations at γ = 0 already make la2's and k1b's clusters less coherent (0.197 against
    0.204, 0.205 against 0.211: the path ends), and on tr31 every γ cuts more held-out
    neighbour edges than the start (0.313–0.342 against 0.304). The squared-cosine kernel
    moves the clusters away from the tf-idf geometry the choice measures them in.

    ``components_`` is the input-space basis ``HᵀX`` (unit rows); ``transform`` solves
    ``φ(x) ≈ (Φ H) v``, ``v ≥ 0``, through the kernel. Otherwise as :class:`AGPNMF`.

    Defaults. Paper 000 does not give its kernel or kernel parameters. A kernel that is
    positive for unrelated (orthogonal) documents — ``coef0 > 0``, or a Gaussian, which gives
    ``exp(−1/σ²)`` to every such pair of unit rows — adds a component common to all documents
    that the projection fits first: on the planted three-class corpora of the tests the
    default Gaussian (σ ≈ 1.3) gave NMI 0.02–0.06 and ``coef0 = 1`` 0.32–0.47, while
    ``(⟨x_i, x_j⟩)²`` (the default) and the linear kernel gave 1.0 (measured). Hence
    ``degree=2, coef0=0``: the squared cosine on unit tf-idf rows, which keeps unrelated
    documents at 0 and sharpens the similarity of related ones.

    Parameters
    ----------
    {n_components}
    kernel : {"linear", "polynomial", "gaussian"}, default="polynomial"
        The kernel ``K`` (see above).
    degree : int ≥ 1, default=2
        Degree of the polynomial kernel.
    coef0 : float ≥ 0, default=0.0
        Constant of the polynomial kernel.
    sigma : float > 0 or None, default=None
        Width σ of the Gaussian kernel; None: the mean distance between the documents.
    {inherited parameters}
    {loop parameters}

    Attributes
    ----------
    components_, labels_, objective_history_, n_iter_, graph_, lam_, lam_selection_ : as in
    :class:`AGPNMF`.
    sigma_ : float or None, the Gaussian width used.

    Notes
    -----
    Out of sample: as :class:`AGPNMF`, through the kernel (codes for ``ΦH``,
    reconstruction weights from kernel values).
    """

    _state_attributes = AGPNMF._state_attributes + ("basis_coef_", "basis_gram_", "sigma_")

    _parameter_constraints = {
        **AGPNMF._parameter_constraints,
        "kernel": [StrOptions({"linear", "polynomial", "gaussian"})],
        "degree": [Interval(Integral, 1, None, closed="left")],
        "coef0": [Interval(Real, 0, None, closed="left")],
        "sigma": [Interval(Real, 0, None, closed="neither"), None],
    }

    def __init__(self, n_components: NComponents = 8, *, kernel: str = "polynomial",
                 degree: int = 2,
                 coef0: float = 0.0, sigma: float | None = None, gamma: float | str = "auto",
                 alpha: float = 0.01, beta: float = 0.01, start_graph: str = "knn",
                 n_neighbors: int = 10, scaling: str = "scale-free", self_loops: bool = False,
                 accelerate: bool = True, max_iter: int = 100, tol: float = 0.0, n_init: int = 1,
                 init_iter: int = 30, init: str = "random", assign: str = "cosine",
                 n_assign_init: int = 20, random_state: Seed = None) -> None:
        super().__init__(n_components, gamma=gamma, alpha=alpha, beta=beta,
                         start_graph=start_graph, n_neighbors=n_neighbors, scaling=scaling,
                         self_loops=self_loops, accelerate=accelerate, max_iter=max_iter,
                         tol=tol, n_init=n_init, init_iter=init_iter, init=init,
                         assign=assign, n_assign_init=n_assign_init,
                         random_state=random_state)
        self.kernel = kernel
        self.degree = degree
        self.coef0 = coef0
        self.sigma = sigma

    lam_path = ()  # see the docstring

    @property
    def _stores_kernel(self):
        return self.kernel != "linear"

    def _gram(self, X, dense=True):
        self.sigma_ = None
        if self.kernel == "linear":
            return super()._gram(X, dense)
        K, self.sigma_ = kernel_matrix(X, self.kernel, self.degree, self.coef0, self.sigma)
        self.X_fit_ = sp.csr_matrix(X) if sp.issparse(X) else np.array(X)
        return KernelGram(K)

    def _finish(self, factors, ctx):
        embedding = super()._finish(factors, ctx)
        H, GH, scale = factors.H, factors.GH, self.factor_scale_
        self.basis_coef_ = H / scale  # feature-space basis Φ H / ‖Φ H‖ (unit columns)
        self.basis_gram_ = self.basis_coef_.T @ GH / scale
        return embedding

    def _transform(self, X):
        if self.kernel == "linear":
            return super()._transform(X)
        cross = self._kernel(X, self.X_fit_) @ self.basis_coef_.astype(X.dtype)
        return self._codes(X, cross @ self.code_map_.T.astype(X.dtype), self.basis_gram_)

    def _kernel(self, A, B):
        if self.kernel == "linear":
            return super()._kernel(A, B)
        return cross_kernel(A, B, self.kernel, self.degree, self.coef0, self.sigma_)

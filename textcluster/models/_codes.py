"""The non-negative codes of new documents for a fitted basis: what every ``transform`` solves.

With the basis ``B`` (m × k, or a feature-space basis) held fixed, a document's codes are
``argmin_{v ≥ 0} ‖φ − B v‖²``, a non-negative least-squares problem that needs only
``cross = φᵀB`` (one row per document) and ``gram = BᵀB``. It is solved by exact coordinate
steps (hierarchical ALS, Cichocki & Phan 2009) from the clipped least-squares solution until no
code moves by more than ``tol`` of the largest, so the result does not depend on a starting
point or on an iteration count.
"""

import numpy as np

from ._linalg import SparseOperator

CODES_TOL = 1e-8  # largest code change of a sweep, relative to the largest code
CODES_MAX_ITER = 2000  # sweeps; a safeguard only, reached on nearly collinear bases
_FLOOR = 1e-12  # a basis vector of smaller squared norm gets no code
_SYSTEMS_BUDGET = 2**21  # entries of the k × k systems solved at once


def nonnegative_codes(cross: np.ndarray, gram: np.ndarray, tol: float = CODES_TOL,
                      max_iter: int = CODES_MAX_ITER) -> np.ndarray:
    """``argmin_{V ≥ 0} ‖Φ − V Bᵀ‖²_F`` from ``cross = Φ B`` (n × k) and ``gram = BᵀB``.

    Computed in float64, returned in ``cross``'s dtype."""
    dtype = np.asarray(cross).dtype
    cross = np.asarray(cross, dtype=np.float64)
    gram = np.asarray(gram, dtype=np.float64)
    diagonal = np.diag(gram)
    active = diagonal > _FLOOR
    V = np.zeros_like(cross)
    if cross.size and active.any():
        start = np.linalg.lstsq(gram[np.ix_(active, active)], cross[:, active].T, rcond=None)[0]
        V[:, active] = np.maximum(start.T, 0.0)
    for _ in range(max_iter):
        largest_step = 0.0
        for j in np.flatnonzero(active):
            column = np.maximum(V[:, j] + (cross[:, j] - V @ gram[:, j]) / diagonal[j], 0.0)
            largest_step = max(largest_step, float(np.abs(column - V[:, j]).max(initial=0.0)))
            V[:, j] = column
        if largest_step <= tol * max(float(np.abs(V).max(initial=0.0)), _FLOOR):
            break
    return V.astype(dtype, copy=False)


def basis_codes(X, basis: np.ndarray) -> np.ndarray:
    """:func:`nonnegative_codes` of the rows of ``X`` (n × m) for a basis given as its rows
    (``components_``, k × m)."""
    basis = basis.astype(X.dtype, copy=False)
    return nonnegative_codes(SparseOperator(X).dot(np.ascontiguousarray(basis.T)),
                             basis @ basis.T)


def ridge_codes(cross: np.ndarray, gram: np.ndarray, ridge: np.ndarray, target: np.ndarray,
                tol: float = CODES_TOL, max_iter: int = CODES_MAX_ITER) -> np.ndarray:
    """Row by row, ``argmin_{v ≥ 0} ‖φ − B v‖² + Σ_j r_j (v_j − t_j)²`` from ``cross = Φ B``
    (n × k), ``gram = BᵀB``, ``ridge`` r (n × k, ≥ 0) and ``target`` t (n × k): an NNLS with
    the stacked basis ``[B; diag(√r)]`` and data ``[φ; √r ⊙ t]``. Rows with no ridge are
    :func:`nonnegative_codes`. Solved as there (from the clipped solution of each row's
    linear system, exact coordinate steps to ``tol``); float64 inside, ``cross``'s dtype out."""
    dtype = np.asarray(cross).dtype
    ridge = np.asarray(ridge, dtype=np.float64)
    cross = np.asarray(cross, dtype=np.float64) + ridge * target
    gram = np.asarray(gram, dtype=np.float64)
    V = np.zeros_like(cross)
    plain = ~np.any(ridge > 0, axis=1)
    if plain.any():
        V[plain] = nonnegative_codes(cross[plain], gram, tol, max_iter)
    rows = np.flatnonzero(~plain)
    if rows.size == 0:
        return V.astype(dtype, copy=False)
    cross, ridge = cross[rows], ridge[rows]
    k = gram.shape[0]
    W = np.maximum(_solve(gram, ridge, cross), 0.0)
    diagonal = np.diag(gram)[None, :] + ridge
    active = diagonal > _FLOOR
    for _ in range(max_iter):
        largest_step = 0.0
        for j in range(k):
            step = (cross[:, j] - W @ gram[:, j] - ridge[:, j] * W[:, j]) / np.where(
                active[:, j], diagonal[:, j], 1.0)
            column = np.where(active[:, j], np.maximum(W[:, j] + step, 0.0), 0.0)
            largest_step = max(largest_step, float(np.abs(column - W[:, j]).max(initial=0.0)))
            W[:, j] = column
        if largest_step <= tol * max(float(np.abs(W).max(initial=0.0)), _FLOOR):
            break
    V[rows] = W
    return V.astype(dtype, copy=False)


def _solve(gram: np.ndarray, ridge: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """The solutions of the systems ``(gram + diag(ridge_i)) w_i = rhs_i``, in blocks of rows
    (least squares for a block with a singular system)."""
    k = gram.shape[0]
    out = np.empty_like(rhs)
    step = max(1, _SYSTEMS_BUDGET // max(k * k, 1))
    for start in range(0, rhs.shape[0], step):
        block = slice(start, start + step)
        systems = gram[None] + ridge[block, :, None] * np.eye(k)[None]
        try:
            out[block] = np.linalg.solve(systems, rhs[block, :, None])[:, :, 0]
        except np.linalg.LinAlgError:
            out[block] = np.einsum("nij,nj->ni", np.linalg.pinv(systems), rhs[block])
    return out

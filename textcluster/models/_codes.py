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

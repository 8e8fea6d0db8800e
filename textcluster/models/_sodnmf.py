"""The math of SODNMF (paper 004, §3) as small pure functions: the scale of a row of P, the
L2,1/2 sparsity term, the label constraint ``S = C A`` and the multiplicative updates of ``A``,
the labelled entries of ``C`` and the diagonal ``R`` (see :class:`~textcluster.models.dual.
SODNMF`)."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ._base import EPS


# -- scales ------------------------------------------------------------------------------------
def typical_row_norm(X, k):
    """``√(k / m')``: the norm of a row of an m' × k matrix with unit-norm columns (m' = the
    terms that occur in X)."""
    present = np.count_nonzero(np.asarray((X != 0).sum(axis=0)).ravel())
    return float(np.sqrt(k / max(present, 1)))


# -- the L2,1/2 sparsity term (paper 004 eqs. 21, 26-27) ---------------------------------------
def row_norms(P):
    return np.sqrt(np.einsum("ij,ij->i", P, P))


def l2_half_penalty(P):
    """``‖P‖_{2,1/2}^{1/2} = Σ_i ‖P_i‖₂^{1/2}`` over the rows (terms) of ``P``."""
    return float(np.sqrt(row_norms(P)).sum())


def l2_half_weights(P):
    """``q_i = 1 / (4 max(‖P_i‖^{3/2}, ε))`` (eq. 27): ``Σ_i q_i ‖P_i‖²`` + const majorizes
    ``Σ_i ‖P_i‖^{1/2}`` at the current ``P`` (the power 1/4 of ‖P_i‖² is concave)."""
    return 1.0 / (4.0 * np.maximum(row_norms(P) ** 1.5, EPS))


# -- the label constraint S = C A (paper 004 eqs. 16-17) ---------------------------------------
def label_slots(labels):
    """Column of the label constraint matrix ``C`` that each document's row uses.

    ``C = [[D, 0], [0, I]]``: the labelled documents of one class share a column (their class),
    each unlabelled document has its own. Returns ``(slot, n_slots)``."""
    labelled = labels >= 0
    _, class_slot = np.unique(labels[labelled], return_inverse=True)
    n_classes = int(class_slot.max()) + 1 if class_slot.size else 0
    slot = np.empty(labels.size, dtype=np.intp)
    slot[labelled] = class_slot
    slot[~labelled] = n_classes + np.arange(np.count_nonzero(~labelled))
    return slot, n_classes + np.count_nonzero(~labelled)


def constraint_matrix(slot, n_slots, weights):
    """``C`` (n × n_slots, one non-zero per row: the document's weight in its slot)."""
    n = slot.size
    return sp.csr_matrix((weights, slot, np.arange(n + 1)), shape=(n, n_slots))


def update_auxiliary(A, C, numerator_rows, G, shrink_rows):
    """``A ← A ⊙ Cᵀ(XPR + αWˢS) / (CᵀC A RPᵀPR + (αCᵀDˢC + βCᵀC) A)`` (eq. 33).

    ``numerator_rows`` = ``XPR + αWˢS`` (n × k); ``CᵀC`` and ``CᵀDˢC`` are diagonal because
    ``C`` has one non-zero per row: ``shrink_rows`` holds ``(cc, α·cdc + β·cc)`` per slot."""
    cc, shrink = shrink_rows
    numerator = C.T @ numerator_rows
    denominator = cc[:, None] * (A @ G) + shrink[:, None] * A
    np.maximum(denominator, EPS, out=denominator)
    A *= np.divide(numerator, denominator, out=denominator)


def update_label_weights(weights, labelled, A_rows, numerator_rows, S, G, shrink):
    """Eq. 34 on the labelled entries of ``C``: ``c_i ← c_i · a_i·(XPR + αWˢS)_i /
    a_i·(S_i RPᵀPR + (α d_i + β) S_i)`` with ``a_i`` the row of ``A`` in document i's slot.

    An unlabelled document's entry multiplies its own row of ``A``, so it stays 1."""
    rows = np.flatnonzero(labelled)
    a = A_rows[rows]
    numerator = np.einsum("ij,ij->i", a, numerator_rows[rows])
    denominator = np.einsum("ij,ij->i", a, S[rows] @ G + shrink[rows, None] * S[rows])
    weights[rows] *= numerator / np.maximum(denominator, EPS)


def update_scaling(r, S, XP, PtP):
    """``R ← R ⊙ diag(SᵀXP) / ((SᵀS ⊙ PᵀP) r)`` — eq. 35 on the diagonal of ``R`` (the
    Lee-Seung step of the quadratic ``‖X − S diag(r) Pᵀ‖²`` in ``r``)."""
    numerator = np.einsum("ij,ij->j", S, XP)
    denominator = ((S.T @ S) * PtP) @ r
    r *= numerator / np.maximum(denominator, EPS)

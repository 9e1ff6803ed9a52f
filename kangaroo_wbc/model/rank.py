"""Numerical rank and independent rows of a constraint Jacobian (row selection of ``J_l``).

Declared closure directions can repeat each other (a loop that is planar in fact, two loops that
share a constraint): the model keeps a maximal set of independent rows of ``J_l`` at the reference
configuration. Rank decisions are relative to the largest singular value, so that they are
scale-free whatever the units and size of the mechanism.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg

#: Relative rank tolerance of the closure Jacobian for a file written to machine precision: a
#: direction is dependent when its singular value is below ``RANK_RTOL`` times the largest.
RANK_RTOL = 1e-7


def numerical_rank(sv: np.ndarray, rtol: float) -> int:
    """The number of singular values ``sv`` (descending) above ``rtol`` times the largest."""
    return int(np.sum(sv > rtol * sv[0])) if sv.size and sv[0] > 0.0 else 0


def select_independent_rows(J: np.ndarray, rtol: float = RANK_RTOL) -> np.ndarray:
    """Indices (sorted) of a maximal set of linearly independent rows of ``J``.

    The rank is decided on the singular values of ``J``, relative to the largest
    (:func:`numerical_rank`): scale-free, whatever the units and size of the mechanism. The rows are
    the first ``rank`` pivots of a QR with column pivoting on ``J^T`` (the pivot order ranks the rows).
    """
    if J.shape[0] == 0 or J.shape[1] == 0:
        return np.zeros(0, dtype=int)
    rank = numerical_rank(np.linalg.svd(J, compute_uv=False), rtol)
    if rank == 0:
        return np.zeros(0, dtype=int)
    _, _, piv = scipy.linalg.qr(J.T, mode="economic", pivoting=True)
    return np.sort(piv[:rank])


__all__ = ["RANK_RTOL", "numerical_rank", "select_independent_rows"]

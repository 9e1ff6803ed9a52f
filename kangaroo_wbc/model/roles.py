"""Joint roles: which joints the model takes as actuated or holds when the files leave it open.

Every joint of a closed-chain model is *actuated*, *passive* (determined by the loops and couplings
through ``J_lu``, Assumption 1 of the Kangaroo paper), *held* at its reference value (a spring taken
as rigid, a lock) or the floating base. Files name the actuated joints (a closure file, MJCF
actuators) and may name held ones (``held_joints``, ``--hold``); where they do not, the model
chooses, here, and says so (:meth:`~kangaroo_wbc.model.closed_loop_model.ClosedLoopModel.joint_roles`,
a warning naming the alternatives).

Both choices pick rows of a basis ``N`` (n, k) of the mechanism's free motions: joints are taken in
a preference order while each adds a direction (``rank N[S]`` grows, :func:`greedy_span`), so that
fixing them (held) or driving them (actuated) determines every other coordinate. The result is a
basis of the row space whatever the order (a matroid); the order only decides among valid choices.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

#: Relative tolerance of the rank tests on an orthonormal motion basis (its rows have norms in [0, 1]).
SPAN_RTOL = 1e-7


def _rank(rows: np.ndarray) -> int:
    if rows.size == 0:
        return 0
    sv = np.linalg.svd(rows, compute_uv=False)
    return int(np.sum(sv > SPAN_RTOL * max(float(sv[0]), 1.0)))


def greedy_span(N: np.ndarray, order: Sequence[int], count: int | None = None) -> list[int]:
    """Rows of ``N`` taken in ``order`` while each raises the rank, until ``count`` (default: the
    number of columns of ``N``) are taken or ``order`` is exhausted."""
    count = N.shape[1] if count is None else count
    chosen: list[int] = []
    for i in order:
        if len(chosen) == count:
            break
        if _rank(N[chosen + [int(i)]]) == len(chosen) + 1:
            chosen.append(int(i))
    return chosen


def alternatives(N: np.ndarray, chosen: Sequence[int], candidates: Sequence[int]) -> list[int]:
    """The ``candidates`` (not chosen) that could replace one of ``chosen`` with ``N[chosen]`` keeping
    its rank: the other valid choices."""
    full = len(chosen)
    out = []
    for j in candidates:
        if j in chosen:
            continue
        if any(_rank(N[[c for c in chosen if c != i] + [j]]) == full for i in chosen):
            out.append(int(j))
    return out


def motion_basis(A: np.ndarray, rtol: float) -> np.ndarray:
    """An orthonormal basis (columns) of the null space of ``A``: the motions that keep every row of
    ``A`` at zero, rank decided at ``rtol`` relative to the largest singular value."""
    n = A.shape[1]
    if A.shape[0] == 0:
        return np.eye(n)
    _, sv, Vt = np.linalg.svd(A)
    rank = int(np.sum(sv > rtol * sv[0])) if sv.size and sv[0] > 0.0 else 0
    return Vt[rank:].T


__all__ = ["SPAN_RTOL", "alternatives", "greedy_span", "motion_basis"]

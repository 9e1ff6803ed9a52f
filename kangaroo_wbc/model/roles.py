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
from typing import NamedTuple

import numpy as np
import pinocchio as pin
import scipy.linalg

from kangaroo_wbc.errors import ModelError

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


def choose_actuated(model: pin.Model, J: np.ndarray, movable: Sequence[str], followers: set[str],
                    rtol: float) -> list[str]:
    """The actuated joints of a file that names none (an MJCF file without actuators).

    With the joints not in ``movable`` fixed (held joints and springs), the mechanism's motions are
    the null space ``N`` of the declared rows' Jacobian ``J`` (n_c, nv); 1-DOF joints that follow no
    coupling (not in ``followers``) are taken closest to the root first (then in file order) while
    each adds a direction of ``N`` (``rank N[S]`` grows), until ``N`` is spanned or no joint adds one.
    """
    m = model
    cols = np.array([m.joints[m.getJointId(n)].idx_v + i for n in movable
                     for i in range(m.joints[m.getJointId(n)].nv)], dtype=int)
    N = motion_basis(J[:, cols], rtol)
    col = {int(v): i for i, v in enumerate(cols)}
    candidates = sorted((n for n in movable if m.joints[m.getJointId(n)].nv == 1 and n not in followers),
                        key=lambda n: (len(m.supports[m.getJointId(n)]), m.getJointId(n)))
    row_of = {col[int(m.joints[m.getJointId(n)].idx_v)]: n for n in candidates}
    return [row_of[r] for r in greedy_span(N, list(row_of))]


class IdleHolds(NamedTuple):
    """The passive joints held to fix the idle motions (:func:`choose_idle_holds`)."""

    #: the joints held, and the other 1-DOF joints that could replace one of them
    names: list[str]
    alternatives: list[str]
    #: the number of idle motions
    n_idle: int


def choose_idle_holds(model: pin.Model, J_u: np.ndarray, passive_joint_names: Sequence[str],
                      idx_v_u: np.ndarray, springs: dict[str, float], rtol: float, source: str) -> IdleHolds:
    """Passive joints to hold so that the closures determine every other passive joint.

    Some descriptions (e.g. a cut joint split into two half-joints with a 6D closure, a spring in
    a leg that no actuator drives) leave passive motions: the null space ``N`` (n_u, k) of ``J_lu``
    (``J_u``, the passive columns of the kept rows at the closed reference). ``k`` passive 1-DOF
    joints are held so that the remaining ``J_lu`` is square and invertible: taken greedily while
    each adds a direction of ``N`` (``rank N[S]`` grows), springs first (taking a spring as rigid is
    the physical choice), then in the order of a pivoted QR of ``N^T`` (the joints that carry most
    of the idle motion). ``alternatives``: the joints that would do as well.

    Raises:
        ModelError: an idle motion of multi-DOF joints (only 1-DOF joints can be held).
    """
    N = motion_basis(J_u, rtol)  # (n_u, k)
    k = N.shape[1]
    if k == 0:
        return IdleHolds([], [], 0)
    m = model
    n_u = len(idx_v_u)
    owner = {}
    for n in passive_joint_names:
        jm = m.joints[m.getJointId(n)]
        for i in range(jm.nv):
            owner[int(np.flatnonzero(idx_v_u == jm.idx_v + i)[0])] = n
    _, _, piv = scipy.linalg.qr(N.T, pivoting=True)
    order = sorted(range(n_u), key=lambda i: (m.joints[m.getJointId(owner[i])].nv != 1,
                                              owner[i] not in springs, int(np.flatnonzero(piv == i)[0])))
    chosen = greedy_span(N, order)
    names = list(dict.fromkeys(owner[i] for i in chosen))
    multi = [n for n in names if m.joints[m.getJointId(n)].nv != 1]
    if multi or len(chosen) < k:
        raise ModelError(f"{source}: undetermined passive motion on multi-DOF joints "
                         f"{multi or sorted(set(owner.values()))} that is not a free rotation of a ball joint "
                         f"(only 1-DOF joints can be held)")
    others = sorted({owner[j] for j in alternatives(N, chosen, [j for j in range(n_u)
                                                              if m.joints[m.getJointId(owner[j])].nv == 1])})
    return IdleHolds(names, others, k)


__all__ = ["IdleHolds", "SPAN_RTOL", "alternatives", "choose_actuated", "choose_idle_holds", "greedy_span",
           "motion_basis"]

"""Free rotations of passive ball joints, fixed by added closures.

A rod between two ball joints spins freely about its own axis: moving the rod's ball joint alone
along ``n`` leaves every loop closed, i.e. ``n`` spans the null space of ``J_l`` restricted to the
ball joints' columns (:func:`free_ball_directions`). Each such joint gets an added closure
(:func:`free_rotation_closures`) between a frame on its parent (``<joint>_free_a``) and one on its
body (``<joint>_free_u``), both at the joint centre and equal at the reference ``q``, with axes
``Q`` chosen so that the free directions are the constrained ones:

* one free direction ``n`` (a rod's spin): ``Q = [c_1, c_2, n]`` and the universal-joint row ``rz``
  (exact: it vanishes for every swing ``R_x(alpha) R_y(beta)``, see ``closures_format.md``), the
  spin stays at its reference value;
* two or three: the rotation-vector rows of those directions (the joint keeps one or no degree of
  freedom).

The spin's inertia is reported (``free_rotations`` of ``model info``): for a slender rod it is
negligible, which is what makes fixing it the physical choice.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pinocchio as pin

from kangaroo_wbc.model.closures import DIRECTIONS, ClosureSpec
from kangaroo_wbc.model.constraint_rows import STRUCTURAL_ZERO, ConstraintRows


def free_ball_directions(model: pin.Model, J: np.ndarray, passive_joint_names: Sequence[str],
                         rtol: float) -> dict[str, np.ndarray]:
    """Free directions of the passive ball joints: ``{joint: N}``, ``N`` (3, k) orthonormal in
    the joint's child frame.

    The motions of the ball joints alone that leave every loop closed are the null space of
    ``J`` (``J_l``, (n_c, nv)) restricted to their columns. A rod's spin shows up on one joint, or,
    where the rod hangs between two ball joints of the tree, as a combined motion (one turns by
    ``+phi`` about the rod axis, the other by ``-phi``). Each null vector is charged to the joint
    that carries most of it, its component there becomes that joint's free direction, and the
    null space is recomputed with that direction blocked, until none is left.
    """
    m = model
    balls = [n for n in passive_joint_names if m.joints[m.getJointId(n)].shortname() == "JointModelSpherical"]
    if not balls or J.shape[0] == 0:
        return {}
    starts = [m.joints[m.getJointId(n)].idx_v for n in balls]
    cols = np.concatenate([np.arange(i, i + 3) for i in starts])
    A = J[:, cols]
    tol = rtol * max(float(np.max(np.abs(J))), 1e-300)
    out: dict[str, list[np.ndarray]] = {}
    for _ in range(len(cols)):
        _, sv, Vt = np.linalg.svd(A)
        rank = int(np.sum(sv > tol))
        N = Vt[rank:]
        if N.shape[0] == 0:
            break
        blocks = np.linalg.norm(N.reshape(N.shape[0], len(balls), 3), axis=2)  # (k, joints)
        r, b = np.unravel_index(int(np.argmax(blocks)), blocks.shape)
        d = N[r, 3 * b:3 * b + 3] / blocks[r, b]
        out.setdefault(balls[b], []).append(d)
        row = np.zeros(len(cols))
        row[3 * b:3 * b + 3] = d * max(float(np.max(np.abs(J))), 1.0)
        A = np.vstack([A, row])
    return {n: np.linalg.qr(np.column_stack(ds))[0] for n, ds in out.items()}


def free_rotation_closures(rows: ConstraintRows, J: np.ndarray, q: np.ndarray, passive_joint_names: Sequence[str],
                           rtol: float) -> tuple[list[ClosureSpec], list[dict]]:
    """The closures that fix the free rotations of the passive ball joints at ``q`` (``J``: the kept
    rows' Jacobian there), their frames added to ``rows.model``; and one report per joint (its free
    directions, their axes and the inertia about them [kg·m²], how it is fixed).

    An added closure belongs to the sub-mechanism of the first loop that uses the joint (its own
    otherwise).
    """
    m = rows.model
    added: list[ClosureSpec] = []
    reports: list[dict] = []
    for name, N in free_ball_directions(m, J, passive_joint_names, rtol).items():
        jid = int(m.getJointId(name))
        jm = m.joints[jid]
        Jj = J[:, jm.idx_v:jm.idx_v + 3]
        k = N.shape[1]
        C = np.linalg.svd(N.T)[2][k:].T  # the determined directions: the complement of N
        if k == 1:
            Q = np.column_stack([C, N])
            dirs: tuple[str, ...] = ("rz",)
        else:
            Q = np.column_stack([N, C])
            dirs = DIRECTIONS[3:3 + k]
        if np.linalg.det(Q) < 0:
            Q[:, 0] *= -1.0
        R_joint = pin.Quaternion(q[jm.idx_q:jm.idx_q + 4]).normalized().matrix()
        base = f"{name}_free"
        fa, fu = f"{base}_a", f"{base}_u"
        parent = int(m.parents[jid])
        m.addFrame(pin.Frame(fa, parent, m.jointPlacements[jid] * pin.SE3(R_joint @ Q, np.zeros(3)),
                             pin.FrameType.OP_FRAME))
        m.addFrame(pin.Frame(fu, jid, pin.SE3(Q, np.zeros(3)), pin.FrameType.OP_FRAME))
        using = rows.row_closure[np.max(np.abs(Jj), axis=1) > STRUCTURAL_ZERO] if Jj.size else []
        using = [k for k in using if k < len(rows.closures)]
        sub = rows.closures[int(using[0])].spec.submechanism if len(using) else base
        added.append(ClosureSpec(base, sub, fa, fu, dirs))
        inertia = m.inertias[jid]
        c = inertia.lever
        I_o = inertia.inertia + inertia.mass * (c.dot(c) * np.eye(3) - np.outer(c, c))
        reports.append({
            "joint": name,
            "free_directions": int(k),
            "axes_in_joint_frame": (N.T.round(9) + 0.0).tolist(),
            "inertia_about_axes_kg_m2": [float(n @ I_o @ n) for n in N.T],
            "resolution": (f"fixed at the reference by the added closure {base!r} "
                           f"({'universal-joint row: spin held' if k == 1 else 'rotation rows'})"),
        })
    return added, reports


__all__ = ["free_ball_directions", "free_rotation_closures"]

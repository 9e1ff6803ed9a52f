"""Compiled closure kinematics: frame placements, ``e_l`` and ``J_l`` in one call (eq. (2)-(5)).

The quantities are those of :meth:`ClosedLoopModel.error_and_jacobian` (same rows, same sign
conventions: position rows in ``F_a``, ``log3`` rotation rows, exact universal-joint rows), computed
by one `numba <https://numba.pydata.org>`_-compiled function that walks the spanning tree itself
instead of many pinocchio calls and per-frame Python accesses. The tree (parents, joint placements,
axes) is read from the pinocchio model once; pinocchio stays the reference: the tests compare every
output with pinocchio's frame Jacobians. Supported joints: revolute (``RX``/``RY``/``RZ``/unaligned,
bounded or unbounded: URDF ``revolute`` and ``continuous``), prismatic (``PX``/``PY``/``PZ``/
unaligned), universal, spherical and the free flyer; :func:`build_kernel` raises ModelError for
other models (planar, helical, composite joints).

For a joint ``i`` with world placement ``(R_i, p_i)`` and local axis ``a``, the world Jacobian
column (spatial velocity at the world origin, pinocchio's ``WORLD`` convention) is

.. math::

    \\text{revolute: } \\omega = R_i a,\\; v = p_i \\times \\omega, \\qquad
    \\text{prismatic: } \\omega = 0,\\; v = R_i a,

and a loop's Jacobian uses the signed support ``D = J (mask_u - mask_a)`` as in
:mod:`kangaroo_wbc.model.closed_loop_model`:
``J_pos = R_a^T (D_lin - p_u \\times D_ang)``, ``J_log = Jlog3(R_a^T R_u) R_u^T D_ang`` and, for a
universal-joint cut ``e_k = s (R_a^T R_u)_{ij}``, ``J_k = -s (r \\times e_j)^T R_u^T D_ang`` with
``r`` the ``i``-th row of ``R_a^T R_u``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pinocchio as pin

from kangaroo_wbc.errors import ModelError
from kangaroo_wbc.model.compiled import buffers, compiled
from kangaroo_wbc.model.couplings import CouplingTables, coupling_tables
from kangaroo_wbc.model.so3 import jlog3_into, log3_into


@compiled
def frame_placements(oR, op, joints, f_R, f_p, R_out, p_out):
    """World placements of frames from their parent joints' (``oR``, ``op``, e.g. a
    :class:`ClosureKernel`'s after a pass) and their fixed placements in the joint frame:
    ``R = oR[j] f_R``, ``p = op[j] + oR[j] f_p``."""
    for f in range(joints.shape[0]):
        j = joints[f]
        for i in range(3):
            for c in range(3):
                R_out[f, i, c] = oR[j, i, 0] * f_R[f, 0, c] + oR[j, i, 1] * f_R[f, 1, c] + oR[j, i, 2] * f_R[f, 2, c]
            p_out[f, i] = op[j, i] + oR[j, i, 0] * f_p[f, 0] + oR[j, i, 1] * f_p[f, 1] + oR[j, i, 2] * f_p[f, 2]

#: A kinematic tree's tables read from the pinocchio model (``parent`` ... ``jnv``, ``f_joint``,
#: ``f_R``, ``f_p``: the listed frames' parent joints and fixed placements) and the placements of a
#: pass: joints ``oR``, ``op`` (``oRpre`` before the joint's own motion), frames ``R``, ``p``.
TreeBuffers = buffers("TreeBuffers", ("parent", "jtype", "axis", "axis2", "R0", "p0", "idx_q", "idx_v", "jnv",
                                      "oRpre", "oR", "op", "f_joint", "f_R", "f_p", "R", "p"))
#: The closure loops' tables (frame slots, rotation-row type, kept rows, the joint columns with
#: their signs and output positions), the kernel's ``e_l`` and ``J_l`` and the buffers of
#: :func:`closure_velocity_bias`; then the joint couplings' rows and terms
#: (:class:`~kangaroo_wbc.model.couplings.CouplingTables`, ``cp_term_out``: the output column of each
#: term, -1 if none) and ``cp_d2``: ``p''(x - x_0)`` at the last configuration.
LoopBuffers = buffers("LoopBuffers", ("slot_a", "slot_u", "rot_type", "uj_ijks", "rowmap", "col_joint", "col_dof",
                                      "col_sign", "col_out", "e_l", "J_l", "joint_velocity", "joint_bias_acceleration",
                                      "frame_velocity", "frame_bias_acceleration", "bias_l", "cp_row", "cp_term_q",
                                      "cp_term_v", "cp_term_kind", "cp_term_coef", "cp_term_side", "cp_term_out",
                                      "cp_poly", "cp_offset", "cp_d2"))
#: The passive joints of :func:`integrate_passive` (``iq``, ``iu``, ``kind``) and the chord
#: iteration's buffers (``e``: closure error, ``q``: trial configuration).
PassiveBuffers = buffers("PassiveBuffers", ("iq", "iu", "kind", "e", "q"))

#: Joint types; an unbounded revolute joint (URDF ``continuous``) has ``q = (cos, sin)``.
REVOLUTE, PRISMATIC, FREE_FLYER, SPHERICAL, UNIVERSAL, REVOLUTE_UNBOUNDED = 0, 1, 2, 3, 4, 5
ROT_NONE, ROT_LOG3, ROT_UNIVERSAL = 0, 1, 2
_AXES = {"X": (1.0, 0.0, 0.0), "Y": (0.0, 1.0, 0.0), "Z": (0.0, 0.0, 1.0)}
_NO_AXIS = (0.0, 0.0, 0.0)
#: pinocchio's joints about or along a coordinate axis, by name without the axis letter
_AXIS_JOINTS = {"JointModelR": REVOLUTE, "JointModelRUB": REVOLUTE_UNBOUNDED, "JointModelP": PRISMATIC}
_UNALIGNED_JOINTS = {"JointModelRevoluteUnaligned": REVOLUTE, "JointModelPrismaticUnaligned": PRISMATIC,
                     "JointModelRevoluteUnboundedUnaligned": REVOLUTE_UNBOUNDED}


def _joint_code(jm: Any) -> tuple[int, Any, Any] | None:
    """``(type, axis, second axis)`` of a pinocchio joint for the kernels; None if not supported."""
    name = jm.shortname()
    if name[:-1] in _AXIS_JOINTS and name[-1] in _AXES:
        return _AXIS_JOINTS[name[:-1]], _AXES[name[-1]], _NO_AXIS
    if name in _UNALIGNED_JOINTS:
        return _UNALIGNED_JOINTS[name], tuple(jm.extract().axis), _NO_AXIS
    if name == "JointModelUniversal":
        u = jm.extract()
        return UNIVERSAL, tuple(u.axis1), tuple(u.axis2)
    if name == "JointModelFreeFlyer":
        return FREE_FLYER, _NO_AXIS, _NO_AXIS
    if name == "JointModelSpherical":
        return SPHERICAL, _NO_AXIS, _NO_AXIS
    return None


# ---------------------------------------------------------------------- compiled functions
@compiled
def _right_multiply(oR, jid, m00, m01, m02, m10, m11, m12, m20, m21, m22):
    """``oR[jid] <- oR[jid] M`` for the 3x3 matrix ``M`` given by its entries."""
    for i in range(3):
        r0, r1, r2 = oR[jid, i, 0], oR[jid, i, 1], oR[jid, i, 2]
        oR[jid, i, 0] = r0 * m00 + r1 * m10 + r2 * m20
        oR[jid, i, 1] = r0 * m01 + r1 * m11 + r2 * m21
        oR[jid, i, 2] = r0 * m02 + r1 * m12 + r2 * m22


@compiled
def _rotate_right(oR, jid, ax, ay, az, th):
    """``oR[jid] <- oR[jid] exp(th [a]_x)`` (Rodrigues)."""
    c, s_ = math.cos(th), math.sin(th)
    C = 1.0 - c
    m00, m01, m02 = c + ax * ax * C, ax * ay * C - az * s_, ax * az * C + ay * s_
    m10, m11, m12 = ay * ax * C + az * s_, c + ay * ay * C, ay * az * C - ax * s_
    m20, m21, m22 = az * ax * C - ay * s_, az * ay * C + ax * s_, c + az * az * C
    _right_multiply(oR, jid, m00, m01, m02, m10, m11, m12, m20, m21, m22)


@compiled
def _rotate_quat(oR, jid, q, iq):
    """``oR[jid] <- oR[jid] R(quaternion q[iq:iq+4])``, quaternion x, y, z, w (normalised here)."""
    x, y, z, w = q[iq], q[iq + 1], q[iq + 2], q[iq + 3]
    nrm = math.sqrt(x * x + y * y + z * z + w * w)
    x, y, z, w = x / nrm, y / nrm, z / nrm, w / nrm
    m00, m01, m02 = 1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)
    m10, m11, m12 = 2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)
    m20, m21, m22 = 2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)
    _right_multiply(oR, jid, m00, m01, m02, m10, m11, m12, m20, m21, m22)


@compiled
def _times_axis(M, jid, a):
    """``M[jid] @ a[jid]`` as three floats."""
    return (M[jid, 0, 0] * a[jid, 0] + M[jid, 0, 1] * a[jid, 1] + M[jid, 0, 2] * a[jid, 2],
            M[jid, 1, 0] * a[jid, 0] + M[jid, 1, 1] * a[jid, 1] + M[jid, 1, 2] * a[jid, 2],
            M[jid, 2, 0] * a[jid, 0] + M[jid, 2, 1] * a[jid, 1] + M[jid, 2, 2] * a[jid, 2])


@compiled
def _compose(oR, op, src, R_loc, p_loc, k, out_R, out_p, dst):
    """``(out_R[dst], out_p[dst]) = (oR[src], op[src]) * (R_loc[k], p_loc[k])`` (placement product)."""
    for i in range(3):
        s = op[src, i]
        for m in range(3):
            s += oR[src, i, m] * p_loc[k, m]
        out_p[dst, i] = s
        for j in range(3):
            s = 0.0
            for m in range(3):
                s += oR[src, i, m] * R_loc[k, m, j]
            out_R[dst, i, j] = s


@compiled
def _placements(q, tree):
    """World placements of every joint (``tree.oR``, ``tree.op``; ``tree.oRpre`` before the joint's
    own motion) and of the listed frames (``tree.R``, ``tree.p``)."""
    parent, jtype, axis, axis2, R0, p0 = tree.parent, tree.jtype, tree.axis, tree.axis2, tree.R0, tree.p0
    idx_q, oRpre, oR, op, f_joint = tree.idx_q, tree.oRpre, tree.oR, tree.op, tree.f_joint
    f_R, f_p, fR, fp = tree.f_R, tree.f_p, tree.R, tree.p
    n = parent.shape[0]
    for i in range(3):
        for j in range(3):
            oR[0, i, j] = 1.0 if i == j else 0.0
        op[0, i] = 0.0
    for jid in range(1, n):
        _compose(oR, op, parent[jid], R0, p0, jid, oR, op, jid)
        for i in range(3):
            for j in range(3):
                oRpre[jid, i, j] = oR[jid, i, j]
        t = jtype[jid]
        iq = idx_q[jid]
        if t == REVOLUTE:
            _rotate_right(oR, jid, axis[jid, 0], axis[jid, 1], axis[jid, 2], q[iq])
        elif t == REVOLUTE_UNBOUNDED:
            _rotate_right(oR, jid, axis[jid, 0], axis[jid, 1], axis[jid, 2], math.atan2(q[iq + 1], q[iq]))
        elif t == PRISMATIC:
            d = q[iq]
            for i in range(3):
                op[jid, i] += d * (oR[jid, i, 0] * axis[jid, 0] + oR[jid, i, 1] * axis[jid, 1]
                                   + oR[jid, i, 2] * axis[jid, 2])
        elif t == UNIVERSAL:
            _rotate_right(oR, jid, axis[jid, 0], axis[jid, 1], axis[jid, 2], q[iq])
            _rotate_right(oR, jid, axis2[jid, 0], axis2[jid, 1], axis2[jid, 2], q[iq + 1])
        elif t == SPHERICAL:
            _rotate_quat(oR, jid, q, iq)
        else:  # free flyer: translation (parent axes of the joint frame) then quaternion
            tx, ty, tz = q[iq], q[iq + 1], q[iq + 2]
            for i in range(3):
                op[jid, i] += oR[jid, i, 0] * tx + oR[jid, i, 1] * ty + oR[jid, i, 2] * tz
            _rotate_quat(oR, jid, q, iq + 3)
    for f in range(f_joint.shape[0]):
        _compose(oR, op, f_joint[f], f_R, f_p, f, fR, fp, f)


@compiled
def _coupling_arguments(q, loops, k):
    """``(y - y_0, x - x_0)`` of coupling ``k`` at ``q`` (:mod:`kangaroo_wbc.model.couplings`)."""
    y = -loops.cp_offset[k, 0]
    x = -loops.cp_offset[k, 1]
    for t in range(loops.cp_term_side.shape[1]):
        side = loops.cp_term_side[k, t]
        if side < 0:
            break
        iq = loops.cp_term_q[k, t]
        value = q[iq] if loops.cp_term_kind[k, t] == 0 else math.atan2(q[iq + 1], q[iq])
        if side == 0:
            y += loops.cp_term_coef[k, t] * value
        else:
            x += loops.cp_term_coef[k, t] * value
    return y, x


@compiled
def _coupling_rows(q, loops, want_jacobian, e_out, J_out):
    """Coupling rows ``e = y - p(x)`` and their Jacobian ``[c_i; -p'(x) d_j]``; ``p''(x)`` into ``cp_d2``."""
    for k in range(loops.cp_row.shape[0]):
        y, x = _coupling_arguments(q, loops, k)
        a0, a1, a2, a3, a4 = (loops.cp_poly[k, 0], loops.cp_poly[k, 1], loops.cp_poly[k, 2], loops.cp_poly[k, 3],
                              loops.cp_poly[k, 4])
        r = loops.cp_row[k]
        e_out[r] = y - (a0 + x * (a1 + x * (a2 + x * (a3 + x * a4))))
        dp = a1 + x * (2.0 * a2 + x * (3.0 * a3 + x * 4.0 * a4))
        loops.cp_d2[k] = 2.0 * a2 + x * (6.0 * a3 + x * 12.0 * a4)
        if not want_jacobian:
            continue
        W = loops.cp_term_side.shape[1]
        for t in range(W):
            if loops.cp_term_side[k, t] < 0:
                break
            if loops.cp_term_out[k, t] >= 0:
                J_out[r, loops.cp_term_out[k, t]] = 0.0
        for t in range(W):
            side = loops.cp_term_side[k, t]
            if side < 0:
                break
            out = loops.cp_term_out[k, t]
            if out >= 0:
                J_out[r, out] += loops.cp_term_coef[k, t] * (1.0 if side == 0 else -dp)


@compiled
def coupling_curvature(q, loops):
    """``p''(x - x_0)`` of every coupling at ``q`` into ``loops.cp_d2`` (for :func:`closure_velocity_bias`)."""
    for k in range(loops.cp_row.shape[0]):
        _, x = _coupling_arguments(q, loops, k)
        loops.cp_d2[k] = 2.0 * loops.cp_poly[k, 2] + x * (6.0 * loops.cp_poly[k, 3] + x * 12.0 * loops.cp_poly[k, 4])


@compiled
def closure_error_jacobian(q, tree, loops, want_jacobian, e_out, J_out):
    """Closure error rows ``e_l`` into ``e_out`` and, if ``want_jacobian``, Jacobian rows ``J_l`` into
    ``J_out`` (columns ``loops.col_out``) at the configuration ``q`` (compiled; the placements of
    ``q`` are left in ``tree`` for :func:`closure_velocity_bias`).

    ``tree``, ``loops``: a :class:`ClosureKernel`'s :attr:`~ClosureKernel.tree` and
    :attr:`~ClosureKernel.loops`; kernels of other modules that fuse this pass with their own work
    call it with them.
    """
    _placements(q, tree)
    jtype, axis, axis2, oRpre, oR, op = tree.jtype, tree.axis, tree.axis2, tree.oRpre, tree.oR, tree.op
    fR, fp, slot_a, slot_u, rot_type = tree.R, tree.p, loops.slot_a, loops.slot_u, loops.rot_type
    uj_ijks, rowmap, col_joint, col_dof = loops.uj_ijks, loops.rowmap, loops.col_joint, loops.col_dof
    col_sign, col_out = loops.col_sign, loops.col_out
    K = slot_a.shape[0]
    Rau = np.empty((3, 3))
    RaT_d = np.empty(3)
    w = np.empty(3)
    Jl = np.empty((3, 3))
    G = np.empty((3, 3))  # rotation-row map applied to R_u^T D_ang (rows 3..5)
    for k in range(K):
        a, u = slot_a[k], slot_u[k]
        for i in range(3):
            s = 0.0
            for m in range(3):
                s += fR[a, m, i] * (fp[u, m] - fp[a, m])
            RaT_d[i] = s
            for j in range(3):
                s = 0.0
                for m in range(3):
                    s += fR[a, m, i] * fR[u, m, j]
                Rau[i, j] = s
        for i in range(3):
            r = rowmap[k, i]
            if r >= 0:
                e_out[r] = RaT_d[i]
        rt = rot_type[k]
        for i in range(3):
            for j in range(3):
                G[i, j] = 0.0
        if rt == ROT_LOG3:
            th = log3_into(Rau, w)
            for i in range(3):
                r = rowmap[k, 3 + i]
                if r >= 0:
                    e_out[r] = w[i]
            if want_jacobian:
                jlog3_into(w, th, Jl)
                for i in range(3):
                    for j in range(3):
                        G[i, j] = Jl[i, j]
        elif rt == ROT_UNIVERSAL:
            ui, uj, uk, sg = uj_ijks[k, 0], uj_ijks[k, 1], uj_ijks[k, 2], uj_ijks[k, 3]
            r = rowmap[k, 3 + uk]
            if r >= 0:
                e_out[r] = sg * Rau[ui, uj]
            # g = -s (r_i x e_j), r_i the i-th row of R_au
            ri0, ri1, ri2 = Rau[ui, 0], Rau[ui, 1], Rau[ui, 2]
            ej0, ej1, ej2 = (1.0 if uj == 0 else 0.0), (1.0 if uj == 1 else 0.0), (1.0 if uj == 2 else 0.0)
            G[uk, 0] = -sg * (ri1 * ej2 - ri2 * ej1)
            G[uk, 1] = -sg * (ri2 * ej0 - ri0 * ej2)
            G[uk, 2] = -sg * (ri0 * ej1 - ri1 * ej0)
        if not want_jacobian:
            continue
        pu0, pu1, pu2 = fp[u, 0], fp[u, 1], fp[u, 2]
        for c in range(col_joint.shape[1]):
            sgn = col_sign[k, c]
            if sgn == 0.0:
                break
            jid = col_joint[k, c]
            out = col_out[k, c]
            t = jtype[jid]
            dof = col_dof[k, c]
            # world column of the joint: (v, omega)
            if t == REVOLUTE or t == REVOLUTE_UNBOUNDED:
                o0, o1, o2 = _times_axis(oR, jid, axis)
                pj0, pj1, pj2 = op[jid, 0], op[jid, 1], op[jid, 2]
                v0, v1, v2 = pj1 * o2 - pj2 * o1, pj2 * o0 - pj0 * o2, pj0 * o1 - pj1 * o0
            elif t == PRISMATIC:
                o0 = o1 = o2 = 0.0
                v0, v1, v2 = _times_axis(oR, jid, axis)
            else:
                if t == UNIVERSAL:  # first axis in the frame before the joint, second in the child frame
                    if dof == 0:
                        o0, o1, o2 = _times_axis(oRpre, jid, axis)
                    else:
                        o0, o1, o2 = _times_axis(oR, jid, axis2)
                    lin = False
                elif t == SPHERICAL:  # local angular velocity components
                    o0, o1, o2 = oR[jid, 0, dof], oR[jid, 1, dof], oR[jid, 2, dof]
                    lin = False
                else:  # free flyer: dof 0..2 linear, 3..5 angular (local axes)
                    e = dof % 3
                    o0, o1, o2 = oR[jid, 0, e], oR[jid, 1, e], oR[jid, 2, e]
                    lin = dof < 3
                if lin:
                    v0, v1, v2 = o0, o1, o2
                    o0 = o1 = o2 = 0.0
                else:
                    pj0, pj1, pj2 = op[jid, 0], op[jid, 1], op[jid, 2]
                    v0, v1, v2 = pj1 * o2 - pj2 * o1, pj2 * o0 - pj0 * o2, pj0 * o1 - pj1 * o0
            v0, v1, v2, o0, o1, o2 = sgn * v0, sgn * v1, sgn * v2, sgn * o0, sgn * o1, sgn * o2
            # position rows: R_a^T (D_lin - p_u x D_ang)
            l0 = v0 - (pu1 * o2 - pu2 * o1)
            l1 = v1 - (pu2 * o0 - pu0 * o2)
            l2 = v2 - (pu0 * o1 - pu1 * o0)
            for i in range(3):
                r = rowmap[k, i]
                if r >= 0:
                    J_out[r, out] = fR[a, 0, i] * l0 + fR[a, 1, i] * l1 + fR[a, 2, i] * l2
            if rt != ROT_NONE:
                wl0 = fR[u, 0, 0] * o0 + fR[u, 1, 0] * o1 + fR[u, 2, 0] * o2  # R_u^T D_ang
                wl1 = fR[u, 0, 1] * o0 + fR[u, 1, 1] * o1 + fR[u, 2, 1] * o2
                wl2 = fR[u, 0, 2] * o0 + fR[u, 1, 2] * o1 + fR[u, 2, 2] * o2
                for i in range(3):
                    r = rowmap[k, 3 + i]
                    if r >= 0:
                        J_out[r, out] = G[i, 0] * wl0 + G[i, 1] * wl1 + G[i, 2] * wl2
    _coupling_rows(q, loops, want_jacobian, e_out, J_out)


@compiled
def _joint_column(jid, dof, jtype, axis, axis2, oRpre, oR, op):
    """World column of velocity ``dof`` of joint ``jid``: ``(v_O, omega)`` (spatial, world origin)."""
    t = jtype[jid]
    if t == REVOLUTE or t == REVOLUTE_UNBOUNDED:
        o0, o1, o2 = _times_axis(oR, jid, axis)
        lin = False
    elif t == PRISMATIC:
        o0, o1, o2 = _times_axis(oR, jid, axis)
        lin = True
    elif t == UNIVERSAL:
        if dof == 0:
            o0, o1, o2 = _times_axis(oRpre, jid, axis)
        else:
            o0, o1, o2 = _times_axis(oR, jid, axis2)
        lin = False
    elif t == SPHERICAL:
        o0, o1, o2 = oR[jid, 0, dof], oR[jid, 1, dof], oR[jid, 2, dof]
        lin = False
    else:
        e = dof % 3
        o0, o1, o2 = oR[jid, 0, e], oR[jid, 1, e], oR[jid, 2, e]
        lin = dof < 3
    if lin:
        return o0, o1, o2, 0.0, 0.0, 0.0
    p0, p1, p2 = op[jid, 0], op[jid, 1], op[jid, 2]
    return p1 * o2 - p2 * o1, p2 * o0 - p0 * o2, p0 * o1 - p1 * o0, o0, o1, o2


@compiled
def _cross3(a0, a1, a2, b0, b1, b2):
    return a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0


@compiled
def closure_velocity_bias(v, tree, loops):
    """Frame twists / velocity-product accelerations and the closure bias ``Jdot_l v`` (compiled).

    Needs the placements of the same configuration in ``tree`` (a previous :func:`_placements` or
    :func:`closure_error_jacobian` call) and, for the coupling rows ``-p''(x) (Σ d_j q̇_j)^2``, its
    ``loops.cp_d2`` (:func:`closure_error_jacobian` or :func:`coupling_curvature`). Writes into
    ``loops``: ``joint_velocity`` /
    ``joint_bias_acceleration`` (n, 6): per joint, world spatial velocity and ``Jdot v`` at the
    world origin (linear first); ``frame_velocity`` / ``frame_bias_acceleration`` (F, 6): the same
    for the frames' bodies; ``bias_l``: the bias rows (log3 rows: ``Jlog3 d/dt(R_u^T w_rel)``, exact
    on the closure, where the derivative of ``Jlog3`` adds nothing).
    """
    parent, jtype, axis, axis2, idx_v, jnv = tree.parent, tree.jtype, tree.axis, tree.axis2, tree.idx_v, tree.jnv
    oRpre, oR, op, f_joint, fR, fp = tree.oRpre, tree.oR, tree.op, tree.f_joint, tree.R, tree.p
    slot_a, slot_u, rot_type, uj_ijks = loops.slot_a, loops.slot_u, loops.rot_type, loops.uj_ijks
    rowmap, Vj, Aj = loops.rowmap, loops.joint_velocity, loops.joint_bias_acceleration
    fV, fA, bias_out = loops.frame_velocity, loops.frame_bias_acceleration, loops.bias_l
    n = parent.shape[0]
    for c in range(6):
        Vj[0, c] = 0.0
        Aj[0, c] = 0.0
    for jid in range(1, n):
        par = parent[jid]
        for c in range(6):
            Vj[jid, c] = Vj[par, c]
            Aj[jid, c] = Aj[par, c]
        # joint velocity first (the cross term of its own column with itself vanishes)
        for d in range(jnv[jid]):
            s0, s1, s2, s3, s4, s5 = _joint_column(jid, d, jtype, axis, axis2, oRpre, oR, op)
            qd = v[idx_v[jid] + d]
            Vj[jid, 0] += s0 * qd
            Vj[jid, 1] += s1 * qd
            Vj[jid, 2] += s2 * qd
            Vj[jid, 3] += s3 * qd
            Vj[jid, 4] += s4 * qd
            Vj[jid, 5] += s5 * qd
        vx, vy, vz, wx, wy, wz = Vj[jid, 0], Vj[jid, 1], Vj[jid, 2], Vj[jid, 3], Vj[jid, 4], Vj[jid, 5]
        for d in range(jnv[jid]):
            s0, s1, s2, s3, s4, s5 = _joint_column(jid, d, jtype, axis, axis2, oRpre, oR, op)
            qd = v[idx_v[jid] + d]
            if jtype[jid] == UNIVERSAL and d == 0:
                # the first axis is fixed in the intermediate frame, which the second rotation
                # does not move: its column turns with the velocity before the second axis
                t0, t1, t2, t3, t4, t5 = _joint_column(jid, 1, jtype, axis, axis2, oRpre, oR, op)
                q2 = v[idx_v[jid] + 1]
                vx, vy, vz = vx - t0 * q2, vy - t1 * q2, vz - t2 * q2
                wx, wy, wz = wx - t3 * q2, wy - t4 * q2, wz - t5 * q2
            elif jtype[jid] == UNIVERSAL:
                vx, vy, vz, wx, wy, wz = Vj[jid, 0], Vj[jid, 1], Vj[jid, 2], Vj[jid, 3], Vj[jid, 4], Vj[jid, 5]
            # motion cross product V x S = (w x s_lin + v x s_ang, w x s_ang)
            a0, a1, a2 = _cross3(wx, wy, wz, s0, s1, s2)
            b0, b1, b2 = _cross3(vx, vy, vz, s3, s4, s5)
            c0, c1, c2 = _cross3(wx, wy, wz, s3, s4, s5)
            Aj[jid, 0] += (a0 + b0) * qd
            Aj[jid, 1] += (a1 + b1) * qd
            Aj[jid, 2] += (a2 + b2) * qd
            Aj[jid, 3] += c0 * qd
            Aj[jid, 4] += c1 * qd
            Aj[jid, 5] += c2 * qd
    for f in range(f_joint.shape[0]):
        jid = f_joint[f]
        for c in range(6):
            fV[f, c] = Vj[jid, c]
            fA[f, c] = Aj[jid, c]
    pd = np.empty((2, 3))
    pdd = np.empty((2, 3))
    w = np.empty(3)
    wd = np.empty(3)
    Rau = np.empty((3, 3))
    rot = np.empty(3)
    Jl = np.empty((3, 3))
    for k in range(slot_a.shape[0]):
        for side in range(2):
            f = slot_a[k] if side == 0 else slot_u[k]
            px, py, pz = fp[f, 0], fp[f, 1], fp[f, 2]
            wx, wy, wz = fV[f, 3], fV[f, 4], fV[f, 5]
            ax, ay, az = fA[f, 3], fA[f, 4], fA[f, 5]
            c0, c1, c2 = _cross3(wx, wy, wz, px, py, pz)
            pd[side, 0], pd[side, 1], pd[side, 2] = fV[f, 0] + c0, fV[f, 1] + c1, fV[f, 2] + c2
            c0, c1, c2 = _cross3(ax, ay, az, px, py, pz)
            e0, e1, e2 = _cross3(wx, wy, wz, pd[side, 0], pd[side, 1], pd[side, 2])
            pdd[side, 0], pdd[side, 1], pdd[side, 2] = fA[f, 0] + c0 + e0, fA[f, 1] + c1 + e1, fA[f, 2] + c2 + e2
        a, u = slot_a[k], slot_u[k]
        d0, d1, d2 = fp[u, 0] - fp[a, 0], fp[u, 1] - fp[a, 1], fp[u, 2] - fp[a, 2]
        dd0, dd1, dd2 = pd[1, 0] - pd[0, 0], pd[1, 1] - pd[0, 1], pd[1, 2] - pd[0, 2]
        ddd0, ddd1, ddd2 = pdd[1, 0] - pdd[0, 0], pdd[1, 1] - pdd[0, 1], pdd[1, 2] - pdd[0, 2]
        wa0, wa1, wa2 = fV[a, 3], fV[a, 4], fV[a, 5]
        aa0, aa1, aa2 = fA[a, 3], fA[a, 4], fA[a, 5]
        c0, c1, c2 = _cross3(d0, d1, d2, wa0, wa1, wa2)
        w0, w1, w2 = dd0 + c0, dd1 + c1, dd2 + c2
        c0, c1, c2 = _cross3(dd0, dd1, dd2, wa0, wa1, wa2)
        e0, e1, e2 = _cross3(d0, d1, d2, aa0, aa1, aa2)
        g0, g1, g2 = _cross3(wa0, wa1, wa2, w0, w1, w2)
        x0, x1, x2 = ddd0 + c0 + e0 - g0, ddd1 + c1 + e1 - g1, ddd2 + c2 + e2 - g2
        for i in range(3):
            r = rowmap[k, i]
            if r >= 0:
                bias_out[r] = fR[a, 0, i] * x0 + fR[a, 1, i] * x1 + fR[a, 2, i] * x2
        rt = rot_type[k]
        if rt == ROT_NONE:
            continue
        # relative angular velocity and its derivative in F_u: w = R_u^T (w_u - w_a),
        # wd = R_u^T (alpha_u - alpha_a + w_u x w_a)
        wu0, wu1, wu2 = fV[u, 3], fV[u, 4], fV[u, 5]
        au0, au1, au2 = fA[u, 3], fA[u, 4], fA[u, 5]
        c0, c1, c2 = _cross3(wu0, wu1, wu2, wa0, wa1, wa2)
        r0, r1, r2 = wu0 - wa0, wu1 - wa1, wu2 - wa2
        s0, s1, s2 = au0 - aa0 + c0, au1 - aa1 + c1, au2 - aa2 + c2
        for i in range(3):
            w[i] = fR[u, 0, i] * r0 + fR[u, 1, i] * r1 + fR[u, 2, i] * r2
            wd[i] = fR[u, 0, i] * s0 + fR[u, 1, i] * s1 + fR[u, 2, i] * s2
        if rt == ROT_LOG3:
            # rows Jlog3(log3(R_au)) wd: exact on the closure (log3 = 0, where the derivative of
            # Jlog3 contributes (1/2) w x w = 0), first order off it
            for i in range(3):
                for j in range(3):
                    Rau[i, j] = fR[a, 0, i] * fR[u, 0, j] + fR[a, 1, i] * fR[u, 1, j] + fR[a, 2, i] * fR[u, 2, j]
            th = log3_into(Rau, rot)
            jlog3_into(rot, th, Jl)
            for i in range(3):
                r = rowmap[k, 3 + i]
                if r >= 0:
                    bias_out[r] = Jl[i, 0] * wd[0] + Jl[i, 1] * wd[1] + Jl[i, 2] * wd[2]
        else:
            ui, uj, uk, sg = uj_ijks[k, 0], uj_ijks[k, 1], uj_ijks[k, 2], uj_ijks[k, 3]
            r = rowmap[k, 3 + uk]
            if r < 0:
                continue
            # M = Sw Sw + skew(wd); Sw Sw = w w^T - |w|^2 I; need (R_au M)[ui, uj]
            ww = w[0] * w[0] + w[1] * w[1] + w[2] * w[2]
            total = 0.0
            for m in range(3):
                Mmj = w[m] * w[uj] - (ww if m == uj else 0.0)
                # skew(wd)[m, uj]
                if m == uj:
                    sk = 0.0
                elif m == 0:
                    sk = -wd[2] if uj == 1 else wd[1]
                elif m == 1:
                    sk = wd[2] if uj == 0 else -wd[0]
                else:
                    sk = -wd[1] if uj == 0 else wd[0]
                Mmj += sk
                # R_au[ui, m] = sum_l R_a[l, ui] R_u[l, m]
                rau = fR[a, 0, ui] * fR[u, 0, m] + fR[a, 1, ui] * fR[u, 1, m] + fR[a, 2, ui] * fR[u, 2, m]
                total += rau * Mmj
            bias_out[r] = sg * total
    for k in range(loops.cp_row.shape[0]):
        xd = 0.0
        for t in range(loops.cp_term_side.shape[1]):
            side = loops.cp_term_side[k, t]
            if side < 0:
                break
            if side == 1:
                xd += loops.cp_term_coef[k, t] * v[loops.cp_term_v[k, t]]
        bias_out[loops.cp_row[k]] = -loops.cp_d2[k] * xd * xd


#: The joint types :func:`integrate_passive` integrates, and its code for each.
_INTEGRATION_KIND = {REVOLUTE: 1, PRISMATIC: 1, UNIVERSAL: 2, SPHERICAL: 3, REVOLUTE_UNBOUNDED: 4}

#: Status codes of :func:`_chord_fk`.
CHORD_CONVERGED, CHORD_STALLED, CHORD_MAX_ITER = 0, 1, 2


@compiled
def frame_terms(J, P, mask, V, A, Jf, twist, drift):
    """Frame Jacobians, twists and bias accelerations at the frames' origins (world axes).

    ``J`` (6, nv): pinocchio's joint Jacobians stacked as ``data.J`` (world, at the origin, linear
    first); ``P`` (U, 3) frame origins; ``mask`` (U, nv) support of each frame; ``V``, ``A`` (U, 6)
    body spatial velocity and ``Jdot v`` at the world origin (linear first). Fills ``Jf`` (U, 6, nv)
    with ``[J_lin - [p]x J_ang; J_ang]`` on the support, ``twist`` (U, 6) with ``(v_p, w)`` and
    ``drift`` (U, 6) with the classical acceleration ``(a_p, alpha)`` of the origin at zero
    acceleration (``Jdot v``; the caller adds ``J k``).
    """
    U, nv = P.shape[0], J.shape[1]
    for i in range(U):
        px, py, pz = P[i, 0], P[i, 1], P[i, 2]
        for c in range(nv):
            m = mask[i, c]
            Jf[i, 0, c] = m * (J[0, c] - (py * J[5, c] - pz * J[4, c]))
            Jf[i, 1, c] = m * (J[1, c] - (pz * J[3, c] - px * J[5, c]))
            Jf[i, 2, c] = m * (J[2, c] - (px * J[4, c] - py * J[3, c]))
            Jf[i, 3, c] = m * J[3, c]
            Jf[i, 4, c] = m * J[4, c]
            Jf[i, 5, c] = m * J[5, c]
        wx, wy, wz = V[i, 3], V[i, 4], V[i, 5]
        ax, ay, az = A[i, 3], A[i, 4], A[i, 5]
        vx = V[i, 0] + wy * pz - wz * py
        vy = V[i, 1] + wz * px - wx * pz
        vz = V[i, 2] + wx * py - wy * px
        twist[i, 0], twist[i, 1], twist[i, 2] = vx, vy, vz
        twist[i, 3], twist[i, 4], twist[i, 5] = wx, wy, wz
        drift[i, 0] = A[i, 0] + ay * pz - az * py + wy * vz - wz * vy
        drift[i, 1] = A[i, 1] + az * px - ax * pz + wz * vx - wx * vz
        drift[i, 2] = A[i, 2] + ax * py - ay * px + wx * vy - wy * vx
        drift[i, 3], drift[i, 4], drift[i, 5] = ax, ay, az


@compiled
def local_frame_jacobians(J, R, P, mask, out):
    """Frame Jacobians in the frames' own axes (pinocchio's ``LOCAL``) from the joint Jacobians.

    ``J`` (6, nv): ``data.J`` after ``computeJointJacobians`` (world, at the origin, linear first);
    ``R`` (U, 3, 3), ``P`` (U, 3): frame placements; ``mask`` (U, nv): support of each frame.
    Fills ``out`` (6 U, nv), rows ``6 i .. 6 i + 5``: ``R_i^T [J_lin - [p_i]x J_ang; J_ang]``.
    """
    U, nv = P.shape[0], J.shape[1]
    for i in range(U):
        px, py, pz = P[i, 0], P[i, 1], P[i, 2]
        r = 6 * i
        for c in range(nv):
            if mask[i, c] == 0.0:
                for k in range(6):
                    out[r + k, c] = 0.0
                continue
            wx, wy, wz = J[3, c], J[4, c], J[5, c]
            vx = J[0, c] - (py * wz - pz * wy)
            vy = J[1, c] - (pz * wx - px * wz)
            vz = J[2, c] - (px * wy - py * wx)
            for k in range(3):
                out[r + k, c] = R[i, 0, k] * vx + R[i, 1, k] * vy + R[i, 2, k] * vz
                out[r + 3 + k, c] = R[i, 0, k] * wx + R[i, 1, k] * wy + R[i, 2, k] * wz


@compiled
def integrate_passive(q, dv_u, pj_iq, pj_iu, pj_kind, out):
    """``out = q (+) dv`` for the passive joints (``dv_u`` in ``idx_v_u`` order), as ``pin.integrate``:
    1-DOF and universal joints add, unbounded revolute joints turn their ``(cos, sin)``, spherical
    joints right-multiply ``exp(omega)``."""
    for i in range(q.shape[0]):
        out[i] = q[i]
    for n in range(pj_iq.shape[0]):
        iq, iu, kind = pj_iq[n], pj_iu[n], pj_kind[n]
        if kind == 1:
            out[iq] += dv_u[iu]
        elif kind == 2:
            out[iq] += dv_u[iu]
            out[iq + 1] += dv_u[iu + 1]
        elif kind == 4:  # unbounded revolute: (cos, sin) of the angle
            th = math.atan2(q[iq + 1], q[iq]) + dv_u[iu]
            out[iq], out[iq + 1] = math.cos(th), math.sin(th)
        else:  # spherical: quaternion (x, y, z, w) times exp(omega / 2)
            wx, wy, wz = dv_u[iu], dv_u[iu + 1], dv_u[iu + 2]
            th = math.sqrt(wx * wx + wy * wy + wz * wz)
            if th < 1e-8:
                c, k = 1.0 - th * th / 8.0, 0.5 - th * th / 48.0
            else:
                c, k = math.cos(0.5 * th), math.sin(0.5 * th) / th
            bx, by, bz, bw = k * wx, k * wy, k * wz, c
            ax, ay, az, aw = q[iq], q[iq + 1], q[iq + 2], q[iq + 3]
            x = aw * bx + ax * bw + ay * bz - az * by
            y = aw * by - ax * bz + ay * bw + az * bx
            z = aw * bz + ax * by - ay * bx + az * bw
            w = aw * bw - ax * bx - ay * by - az * bz
            nrm = math.sqrt(x * x + y * y + z * z + w * w)
            out[iq], out[iq + 1], out[iq + 2], out[iq + 3] = x / nrm, y / nrm, z / nrm, w / nrm


@compiled
def _chord_fk(q, tree, loops, passive, J_inv, tol, max_iter, contraction):
    """Chord Newton on the passive coordinates with a fixed ``J_lu^{-1}`` (updates ``q`` in place).

    Returns ``(status, iterations, residual)``: converged (inf-norm <= tol), stalled (a step did
    not shrink the residual by ``contraction``: ``q`` is the last accepted point) or out of steps.
    """
    e_buf, q_buf = passive.e, passive.q
    J_dummy = np.empty((0, 0))
    closure_error_jacobian(q, tree, loops, False, e_buf, J_dummy)
    n_c, n_u = J_inv.shape[1], J_inv.shape[0]
    norm = 0.0
    for r in range(n_c):
        norm = max(norm, abs(e_buf[r]))
    step = np.empty(n_u)
    it = 0
    while norm > tol:
        if it >= max_iter:
            return CHORD_MAX_ITER, it, norm
        it += 1
        for i in range(n_u):
            s = 0.0
            for r in range(n_c):
                s -= J_inv[i, r] * e_buf[r]
            step[i] = s
        integrate_passive(q, step, passive.iq, passive.iu, passive.kind, q_buf)
        closure_error_jacobian(q_buf, tree, loops, False, e_buf, J_dummy)
        new = 0.0
        for r in range(n_c):
            new = max(new, abs(e_buf[r]))
        if not new < contraction * norm:
            # restore e at the accepted point is the caller's job (it refreshes J there)
            return CHORD_STALLED, it, norm
        for i in range(q.shape[0]):
            q[i] = q_buf[i]
        norm = new
    return CHORD_CONVERGED, it, norm


class ClosureKernel:
    """Compiled ``e_l``/``J_l``/placements for one closed-loop model (see the module docstring).

    Args:
        model: the pinocchio spanning-tree model.
        frame_ids: frames whose placements are computed (closure sides and any others).
        slot_a, slot_u: per loop, the index in ``frame_ids`` of ``F_a`` and ``F_u``.
        signed_mask: (K, nv) ``mask_u - mask_a`` (the loop's joint columns with their sign).
        flat_rows: kept rows as flat indices into the (K, 6) stacked full error.
        rot_log3: loops whose rotation rows are ``log3``.
        universal: loops with one exact universal-joint row, and their ``(i, j, k, sign)``.
        couplings: the joint couplings (:class:`~kangaroo_wbc.model.couplings.CouplingTables`), rows
            after the loops' (default: none).
        columns: velocity indices forming the Jacobian's columns, in output order (default: all).

    Build it with :func:`build_kernel`. Outputs are internal buffers overwritten by the next call.
    """

    def __init__(self, model: pin.Model, frame_ids, slot_a, slot_u, signed_mask, flat_rows, rot_log3,
                 universal: tuple[np.ndarray, np.ndarray], couplings: CouplingTables | None = None,
                 columns: np.ndarray | None = None) -> None:
        n = model.njoints
        self.nq, self.nv = model.nq, model.nv
        self.parent = np.array([model.parents[j] for j in range(n)], dtype=np.int64)
        self.jtype = np.zeros(n, dtype=np.int64)
        self.axis = np.zeros((n, 3))
        self.axis2 = np.zeros((n, 3))
        self.R0 = np.zeros((n, 3, 3))
        self.p0 = np.zeros((n, 3))
        self.idx_q = np.zeros(n, dtype=np.int64)
        self.idx_v = np.zeros(n, dtype=np.int64)
        self.jnv = np.zeros(n, dtype=np.int64)
        self.R0[0] = np.eye(3)
        for j in range(1, n):
            code = _joint_code(model.joints[j])
            if code is None:
                raise ModelError(f"the compiled closure kinematics do not support joint {model.names[j]!r} "
                                 f"({model.joints[j].shortname()}; supported: revolute, prismatic, universal, "
                                 f"spherical, free flyer)")
            self.jtype[j], self.axis[j], self.axis2[j] = code
            M = model.jointPlacements[j]
            self.R0[j], self.p0[j] = M.rotation, M.translation
            self.idx_q[j], self.idx_v[j] = model.joints[j].idx_q, model.joints[j].idx_v
            self.jnv[j] = model.joints[j].nv
        frame_ids = [int(f) for f in frame_ids]
        self.f_joint = np.array([model.frames[f].parentJoint for f in frame_ids], dtype=np.int64)
        self.f_R = np.array([model.frames[f].placement.rotation for f in frame_ids]).reshape(-1, 3, 3)
        self.f_p = np.array([model.frames[f].placement.translation for f in frame_ids]).reshape(-1, 3)
        K = len(slot_a)
        self.K = K
        self.slot_a = np.asarray(slot_a, dtype=np.int64)
        self.slot_u = np.asarray(slot_u, dtype=np.int64)
        self.rot_type = np.full(K, ROT_NONE, dtype=np.int64)
        self.rot_type[np.asarray(rot_log3, dtype=int)] = ROT_LOG3
        uj_loops, uj_ijk = universal
        self.uj_ijks = np.zeros((K, 4), dtype=np.int64)
        for k, ijks in zip(np.asarray(uj_loops, dtype=int), np.asarray(uj_ijk, dtype=int).reshape(-1, 4)):
            self.rot_type[k] = ROT_UNIVERSAL
            self.uj_ijks[k] = ijks
        flat_rows = np.asarray(flat_rows, dtype=int)
        n_loop = len(flat_rows)
        self.rowmap = np.full((K, 6), -1, dtype=np.int64)
        self.rowmap.reshape(-1)[flat_rows] = np.arange(n_loop)
        columns = np.arange(model.nv) if columns is None else np.asarray(columns, dtype=int)
        self.n_cols = len(columns)
        out_of = np.full(model.nv, -1, dtype=np.int64)
        out_of[columns] = np.arange(len(columns))
        cp = couplings if couplings is not None else coupling_tables(model, [])
        P = cp.term_q.shape[0]
        self.n_c = n_loop + P
        self.cp_row = n_loop + np.arange(P, dtype=np.int64)
        self.cp_term_q, self.cp_term_v = np.array(cp.term_q, dtype=np.int64), np.array(cp.term_v, dtype=np.int64)
        self.cp_term_kind = np.array(cp.term_kind, dtype=np.int64)
        self.cp_term_coef = np.array(cp.term_coef, dtype=float)
        self.cp_term_side = np.array(cp.term_side, dtype=np.int64)
        self.cp_term_out = np.where(self.cp_term_side >= 0, out_of[self.cp_term_v], -1).astype(np.int64)
        self.cp_poly, self.cp_offset = np.array(cp.poly, dtype=float), np.array(cp.offset, dtype=float)
        self.cp_d2 = np.zeros(P)
        v_joint = np.zeros(model.nv, dtype=np.int64)
        v_dof = np.zeros(model.nv, dtype=np.int64)
        for j in range(1, n):
            for d in range(model.joints[j].nv):
                v_joint[model.joints[j].idx_v + d] = j
                v_dof[model.joints[j].idx_v + d] = d
        signed_mask = np.asarray(signed_mask, dtype=float)
        involved = [np.flatnonzero(signed_mask[k]) for k in range(K)]
        for k, cols in enumerate(involved):
            missing = [int(c) for c in cols if out_of[c] < 0]
            if missing:
                raise ValueError(f"loop {k} moves velocity indices {missing} that are not output columns")
        W = max((len(c) for c in involved), default=0) + 1  # a 0 sign ends every row
        self.col_joint = np.zeros((K, W), dtype=np.int64)
        self.col_dof = np.zeros((K, W), dtype=np.int64)
        self.col_sign = np.zeros((K, W))
        self.col_out = np.zeros((K, W), dtype=np.int64)
        for k, cols in enumerate(involved):
            self.col_joint[k, :len(cols)] = v_joint[cols]
            self.col_dof[k, :len(cols)] = v_dof[cols]
            self.col_sign[k, :len(cols)] = signed_mask[k, cols]
            self.col_out[k, :len(cols)] = out_of[cols]
        self.oR = np.zeros((n, 3, 3))
        self.oRpre = np.zeros((n, 3, 3))
        self.op = np.zeros((n, 3))
        self.R = np.zeros((len(frame_ids), 3, 3))  #: frame rotations of the last call
        self.p = np.zeros((len(frame_ids), 3))  #: frame positions of the last call
        self.e_l = np.zeros(self.n_c)
        self.J_l = np.zeros((self.n_c, self.n_cols))
        self._J_dummy = np.zeros((0, 0))
        F = len(frame_ids)
        #: per joint: world spatial velocity and ``Jdot v`` at the world origin (linear first), from
        #: the last :meth:`velocity_bias` (work buffers of :func:`closure_velocity_bias`)
        self.joint_velocity, self.joint_bias_acceleration = np.zeros((n, 6)), np.zeros((n, 6))
        #: per frame: the body's world spatial velocity and ``Jdot v`` at the world origin (linear
        #: first), from the last :meth:`velocity_bias`
        self.frame_velocity, self.frame_bias_acceleration = np.zeros((F, 6)), np.zeros((F, 6))
        self.bias_l = np.zeros(self.n_c)
        # The kernels' buffer objects (every array above is updated in place, never rebound).
        #: the tree and its placement buffers (:data:`TreeBuffers`), for :func:`closure_error_jacobian`
        #: and kernels of other modules that fuse the closure pass with their own work
        self.tree = TreeBuffers.make(**{f: getattr(self, f) for f in TreeBuffers.fields})
        #: the loops' rows and the bias buffers (:data:`LoopBuffers`)
        self.loops = LoopBuffers.make(**{f: getattr(self, f) for f in LoopBuffers.fields})

    def _run(self, q: np.ndarray, jacobian: bool) -> None:
        closure_error_jacobian(q, self.tree, self.loops, jacobian, self.e_l, self.J_l if jacobian else self._J_dummy)

    def placements(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """World rotations (F, 3, 3) and positions (F, 3) [m] of the frames at ``q``."""
        _placements(q, self.tree)
        return self.R, self.p

    def error(self, q: np.ndarray) -> np.ndarray:
        """Closure error ``e_l`` [m, rad] at ``q`` (kept rows)."""
        self._run(q, False)
        return self.e_l

    def error_and_jacobian(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(e_l, J_l)``; ``J_l`` has the requested columns (entries of other loops' columns stay 0)."""
        self._run(q, True)
        return self.e_l, self.J_l

    def warm_up(self, model: pin.Model) -> None:
        """Compile (or load from numba's cache) every function now, not at the first use in a
        control loop: a lazy compilation stalls that tick for up to a second and adds tens of MB."""
        q = pin.neutral(model)
        self.error_and_jacobian(q)
        self.error(q)
        self.velocity_bias(q, np.zeros(model.nv))

    def velocity_bias(self, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        """Closure bias ``Jdot_l v`` [m/s², rad/s²] at ``(q, v)`` (kept rows); also fills
        :attr:`frame_velocity` and :attr:`frame_bias_acceleration` (F, 6): the frames' bodies'
        world spatial velocity and ``Jdot v`` at the world origin, linear first.
        """
        self.placements(q)
        if self.cp_row.size:
            coupling_curvature(q, self.loops)
        closure_velocity_bias(v, self.tree, self.loops)
        return self.bias_l

    def integration_tables(self, model: pin.Model,
                           idx_v: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """``(iq, iu, kind)`` of :func:`integrate_passive` for the joints of the velocity indices
        ``idx_v`` (a step vector in ``idx_v`` order moves them); None if one of them is only partly
        listed or of a type that cannot be integrated here."""
        pos = {int(v): i for i, v in enumerate(idx_v)}
        iq, iu, kind = [], [], []
        for j in range(1, model.njoints):
            jm = model.joints[j]
            if jm.idx_v not in pos:
                continue
            if any(jm.idx_v + d not in pos or pos[jm.idx_v + d] != pos[jm.idx_v] + d for d in range(jm.nv)):
                return None
            k = _INTEGRATION_KIND.get(int(self.jtype[j]))
            if k is None:
                return None
            iq.append(jm.idx_q)
            iu.append(pos[jm.idx_v])
            kind.append(k)
        return np.array(iq, dtype=np.int64), np.array(iu, dtype=np.int64), np.array(kind, dtype=np.int64)

    def set_passive_joints(self, model: pin.Model, idx_v_u: np.ndarray) -> bool:
        """Prepare :meth:`chord` for the passive velocity indices ``idx_v_u``; False if a passive
        joint type cannot be integrated here (then :meth:`chord` must not be used)."""
        tables = self.integration_tables(model, idx_v_u)
        if tables is None:
            return False
        self.pj_iq, self.pj_iu, self.pj_kind = tables
        self._passive = PassiveBuffers.make(iq=self.pj_iq, iu=self.pj_iu, kind=self.pj_kind, e=np.zeros(self.n_c),
                                            q=np.zeros(self.nq))
        # compile the chord iteration now (no step taken: max_iter 0)
        self.chord(pin.neutral(model), np.zeros((len(idx_v_u), self.n_c)), 0.0, 0, 0.1)
        return True

    def chord(self, q: np.ndarray, J_inv: np.ndarray, tol: float, max_iter: int,
              contraction: float) -> tuple[int, int, float]:
        """Chord Newton steps ``dtheta_u = -J_inv e_l`` from ``q`` (updated in place), compiled.

        Returns ``(status, iterations, residual)`` with status ``CHORD_CONVERGED``,
        ``CHORD_STALLED`` (a step shrank the inf-norm residual by less than ``contraction``; ``q``
        is the last accepted point) or ``CHORD_MAX_ITER``.
        """
        status, it, norm = _chord_fk(q, self.tree, self.loops, self._passive, J_inv, tol, max_iter, contraction)
        return int(status), int(it), float(norm)


def build_kernel(model: pin.Model, frame_ids, slot_a, slot_u, signed_mask, flat_rows, rot_log3,
                 universal, couplings: CouplingTables | None = None, columns=None) -> ClosureKernel:
    """A :class:`ClosureKernel`, compiled (or loaded from numba's cache) now.

    Raises:
        ModelError: a joint type that is not supported (planar, helical, composite).
    """
    kernel = ClosureKernel(model, frame_ids, slot_a, slot_u, signed_mask, flat_rows, rot_log3, universal, couplings,
                           columns)
    kernel.warm_up(model)
    return kernel


__all__ = ["CHORD_CONVERGED", "CHORD_MAX_ITER", "CHORD_STALLED", "ClosureKernel", "build_kernel",
           "closure_error_jacobian", "closure_velocity_bias", "coupling_curvature", "frame_placements",
           "integrate_passive"]

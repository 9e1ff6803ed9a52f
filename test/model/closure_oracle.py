"""Test oracle: the closure kinematics ``e_l``, ``J_l`` and ``Jdot_l v`` written out with pinocchio.

The readable form of :mod:`kangaroo_wbc.model.closure_kernel` (the package's one implementation),
loop by loop from pinocchio's frame placements, ``LOCAL_WORLD_ALIGNED`` frame Jacobians and
classical frame accelerations. Per loop, with ``d = p_u - p_a`` and ``R_au = R_a^T R_u``:

* position rows ``e = R_a^T d``, ``J = R_a^T (J^v_u - J^v_a + [d]x J^w_a)``;
* ``log3`` rotation rows ``e = log3(R_au)``, ``J = Jlog3(R_au) R_u^T (J^w_u - J^w_a)``;
* a universal-joint cut ``e_k = s R_au[i, j]``, ``J_k = -s (R_au[i, :] x e_j)^T R_u^T (J^w_u - J^w_a)``.

The bias is the second time derivative of ``e`` along ``v`` at zero acceleration (with ``w = d_dot
+ d x w_a``: position part ``R_a^T (w_dot - w_a x w)``; ``log3`` part ``dJlog3/dt w_rel + Jlog3
w_rel_dot`` with ``w_rel = R_u^T (w_u - w_a)``, the derivative of ``Jlog3`` by central differences).
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin

LWA = pin.ReferenceFrame.LOCAL_WORLD_ALIGNED


def closure_kinematics(clm, q: np.ndarray, v: np.ndarray | None = None):
    """``(e_l, J_l, Jdot_l v)`` of ``clm``'s kept rows at ``q`` (bias None without ``v``)."""
    m = clm.model
    data = m.createData()
    t = clm.kernel_tables()
    rot_log3 = set(np.asarray(t.rot_log3).tolist())
    universal = {int(k): ijks for k, ijks in zip(t.universal[0], np.asarray(t.universal[1]).reshape(-1, 4))}
    pin.computeJointJacobians(m, data, q)
    pin.forwardKinematics(m, data, q, np.zeros(m.nv) if v is None else v, np.zeros(m.nv))
    pin.updateFramePlacements(m, data)
    K = len(clm.closures)
    e, J, bias = np.zeros((K, 6)), np.zeros((K, 6, m.nv)), np.zeros((K, 6))
    for k, c in enumerate(clm.closures):
        Ma, Mu = data.oMf[c.frame_a_id], data.oMf[c.frame_u_id]
        Ja = pin.getFrameJacobian(m, data, c.frame_a_id, LWA)
        Ju = pin.getFrameJacobian(m, data, c.frame_u_id, LWA)
        Ra, Ru = Ma.rotation, Mu.rotation
        d = Mu.translation - Ma.translation
        Rau = Ra.T @ Ru
        D_ang = Ru.T @ (Ju[3:] - Ja[3:])  # d/dt of the relative rotation, in F_u
        e[k, :3] = Ra.T @ d
        J[k, :3] = Ra.T @ (Ju[:3] - Ja[:3] + pin.skew(d) @ Ja[3:])
        if k in rot_log3:
            e[k, 3:] = pin.log3(Rau)
            J[k, 3:] = pin.Jlog3(Rau) @ D_ang
        elif k in universal:
            i, j, kk, s = universal[k]
            e[k, 3 + kk] = s * Rau[i, j]
            J[k, 3 + kk] = -s * np.cross(Rau[i], np.eye(3)[j]) @ D_ang
        if v is None:
            continue
        Va, Vu = pin.getFrameVelocity(m, data, c.frame_a_id, LWA), pin.getFrameVelocity(m, data, c.frame_u_id, LWA)
        Aa = pin.getFrameClassicalAcceleration(m, data, c.frame_a_id, LWA)
        Au = pin.getFrameClassicalAcceleration(m, data, c.frame_u_id, LWA)
        wa, wu, wa_dot, wu_dot = Va.angular, Vu.angular, Aa.angular, Au.angular
        d_dot, d_ddot = Vu.linear - Va.linear, Au.linear - Aa.linear
        w = d_dot + np.cross(d, wa)
        w_dot = d_ddot + np.cross(d_dot, wa) + np.cross(d, wa_dot)
        bias[k, :3] = Ra.T @ (w_dot - np.cross(wa, w))
        w_rel = Ru.T @ (wu - wa)
        w_rel_dot = Ru.T @ (wu_dot - wa_dot + np.cross(wu, wa))
        if k in rot_log3:
            h = 1e-6
            dJlog = (pin.Jlog3(Rau @ pin.exp3(h * w_rel)) - pin.Jlog3(Rau @ pin.exp3(-h * w_rel))) / (2 * h)
            bias[k, 3:] = dJlog @ w_rel + pin.Jlog3(Rau) @ w_rel_dot
        elif k in universal:
            Sw = pin.skew(w_rel)
            bias[k, 3 + kk] = s * (Rau @ (Sw @ Sw + pin.skew(w_rel_dot)))[i, j]
    rows = np.asarray(t.flat_rows, dtype=int)
    return (e.reshape(-1)[rows], J.reshape(K * 6, m.nv)[rows],
            None if v is None else bias.reshape(-1)[rows])

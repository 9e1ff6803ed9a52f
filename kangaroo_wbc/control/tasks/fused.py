"""The controller's always-present tasks stacked in one compiled pass.

:class:`~kangaroo_wbc.control.wbc.WholeBodyController` builds a CoM task, a base orientation task,
a posture task and an angular-momentum task ahead of the swing-foot tasks. Task by task, their
rows cost some twenty small numpy operations and a ``log3`` per tick; this kernel writes the same
rows into the controller's stacked buffers (tested against each task's
:meth:`~kangaroo_wbc.control.tasks.base.Task.jacobian_and_target`). The controller uses it while
its first four tasks are exactly the objects it built, else the generic loop.
"""

from __future__ import annotations

import numpy as np

from kangaroo_wbc.model.compiled import compiled
from kangaroo_wbc.model.so3 import log3


@compiled
def pose_target(R_ref, p_ref, R, p, a_ref, twist_ref, twist, drift, kp, kd, r):
    """:class:`~kangaroo_wbc.control.tasks.frame_pose_task.FramePoseTask`'s target into ``r`` (6):
    ``a_ref + kp [p_ref - p; log3(R_ref Rᵀ)] + kd (twist_ref - twist) - drift``."""
    M = np.empty((3, 3))
    for i in range(3):
        for j in range(3):
            M[i, j] = R_ref[i, 0] * R[j, 0] + R_ref[i, 1] * R[j, 1] + R_ref[i, 2] * R[j, 2]
    e = log3(M)
    for i in range(6):
        err = p_ref[i] - p[i] if i < 3 else e[i - 3]
        r[i] = a_ref[i] + kp[i] * err + kd[i] * (twist_ref[i] - twist[i]) - drift[i]


@compiled
def fill_default_tasks(J_com, com, com_velocity, com_drift, c_pos, c_vel, c_acc, c_kp, c_kd, c_w, c_on,
                       R_all, Jf_T, drift_all, twist_all, b_user, b_row, b_R, b_wref, b_aref, b_kp, b_kd, b_w, b_on,
                       q, nu, n_b, idx_q_a, p_pos, p_vel, p_acc, p_kp, p_kd, p_w, p_on,
                       A_G, h_G, A_G_drift, m_L, m_rate, m_kd, m_w, m_on, Jb, rb, wb):
    """Rows ``J``, targets ``r`` and weights of the enabled tasks among CoM (``c_*``), base
    orientation (``b_*``: frame ``b_user`` of the projected model, its rotation ``R_all[b_row]``),
    posture (``p_*``) and angular momentum (``m_*``), in that order, into ``Jb``, ``rb``, ``wb`` from
    row 0. Returns the number of rows written."""
    n_nu = Jb.shape[1]
    k = 0
    if c_on:  # CoM: a_des = a_ref + kp (p_ref - c) + kd (v_ref - c_dot); r = a_des - drift
        for i in range(3):
            for j in range(n_nu):
                Jb[k + i, j] = J_com[i, j]
            rb[k + i] = (c_acc[i] + c_kp[i] * (c_pos[i] - com[i]) + c_kd[i] * (c_vel[i] - com_velocity[i])
                         - com_drift[i])
            wb[k + i] = c_w[i]
        k += 3
    if b_on:  # base orientation: e = log3(R_ref Rᵀ), angular rows of the frame terms
        M = np.empty((3, 3))
        for i in range(3):
            for j in range(3):
                M[i, j] = (b_R[i, 0] * R_all[b_row, j, 0] + b_R[i, 1] * R_all[b_row, j, 1]
                           + b_R[i, 2] * R_all[b_row, j, 2])
        e = log3(M)
        for i in range(3):
            for j in range(n_nu):
                Jb[k + i, j] = Jf_T[b_user, 3 + i, j]
            rb[k + i] = (b_aref[i] + b_kp[i] * e[i] + b_kd[i] * (b_wref[i] - twist_all[b_user, 3 + i])
                         - drift_all[b_user, 3 + i])
            wb[k + i] = b_w[i]
        k += 3
    n_a = idx_q_a.shape[0]
    if p_on:  # posture: J = [0 | I], r = a_ref + kp (theta_ref - theta) + kd (theta_dot_ref - theta_dot)
        for i in range(n_a):
            for j in range(n_nu):
                Jb[k + i, j] = 1.0 if j == n_b + i else 0.0
            rb[k + i] = (p_acc[i] + p_kp[i] * (p_pos[i] - q[idx_q_a[i]]) + p_kd[i] * (p_vel[i] - nu[n_b + i]))
            wb[k + i] = p_w[i]
        k += n_a
    if m_on:  # angular momentum: r = L_dot_ref + kd (L_ref - L) - drift
        for i in range(3):
            for j in range(n_nu):
                Jb[k + i, j] = A_G[3 + i, j]
            rb[k + i] = m_rate[i] + m_kd[i] * (m_L[i] - h_G[3 + i]) - A_G_drift[3 + i]
            wb[k + i] = m_w[i]
        k += 3
    return k


__all__ = ["fill_default_tasks", "pose_target"]

"""Pose and orientation tasks of a frame, world axes at the frame origin.

Pose (a swing foot), six rows:

.. math::

    e = \\begin{bmatrix} p_{ref} - p \\\\ \\log_3(R_{ref} R^T) \\end{bmatrix}, \\quad
    a_{des} = a_{ref} + K_p e + K_d (\\mathcal V_{ref} - \\mathcal V), \\quad
    J = J_f T, \\quad r = a_{des} - (\\dot J_f v + J_f k)

``J_f`` is the ``LOCAL_WORLD_ALIGNED`` frame Jacobian (linear rows first); ``a`` is the classical
acceleration of the frame origin and the angular acceleration. Orientation (the floating base, by
default): the three angular rows of the same,

.. math::

    e_R = \\log_3(R_{ref} R^T), \\qquad
    \\dot\\omega_{des} = \\dot\\omega_{ref} + K_p e_R + K_d (\\omega_{ref} - \\omega), \\qquad
    J = J^{\\omega}_f T, \\quad r = \\dot\\omega_{des} - (\\dot J^\\omega_f v + J^\\omega_f k)
"""

from __future__ import annotations

import numpy as np

from kangaroo_wbc.control.tasks.base import Reference, Task, frame_terms
from kangaroo_wbc.model.compiled import compiled
from kangaroo_wbc.model.projected_model import ProjectedModel
from kangaroo_wbc.model.so3 import orientation_error

#: the position reference of the orientation rows (not read)
_NO_POSITION = np.zeros(3)


class FramePoseTask(Task):
    """6D pose of ``frame`` [m, rad]."""

    position = Reference((3,))
    rotation = Reference((3, 3))
    twist = Reference((6,))
    acceleration = Reference((6,))

    dim = 6

    def __init__(self, frame: str, weight=1.0, kp=200.0, kd=30.0, name: str | None = None) -> None:
        super().__init__(name or f"{frame}_pose", weight, kp, kd)
        self.frame = frame
        self.position = np.zeros(3)
        self.rotation = np.eye(3)
        self.twist = np.zeros(6)  # [m/s, rad/s]
        self.acceleration = np.zeros(6)  # [m/s², rad/s²]

    def set_reference(self, position, rotation=None, twist=None, acceleration=None) -> None:
        self.position = position
        if rotation is not None:
            self.rotation = rotation
        self.twist = np.zeros(6) if twist is None else twist
        self.acceleration = np.zeros(6) if acceleration is None else acceleration

    def set_reference_from_current(self, pm: ProjectedModel) -> None:
        R, p = pm.placement(self.frame)
        self.set_reference(p, R)

    def fill(self, pm: ProjectedModel, rows: tuple[np.ndarray, np.ndarray, np.ndarray], k: int) -> int:
        ref = (self.position, self.rotation, self.twist, self.acceleration)
        return _pose_rows(frame_terms(pm), self.frame_rows(pm), 0, ref, self.gains(), rows, k)


class OrientationTask(Task):
    """Orientation of ``frame`` (3 angular rows, world axes) [rad]."""

    rotation = Reference((3, 3))
    angular_velocity = Reference((3,))
    angular_acceleration = Reference((3,))

    dim = 3

    def __init__(self, frame: str, weight=1.0, kp=100.0, kd=20.0, name: str = "base_orientation") -> None:
        super().__init__(name, weight, kp, kd)
        self.frame = frame
        self.rotation = np.eye(3)
        self.angular_velocity = np.zeros(3)  # [rad/s], world axes
        self.angular_acceleration = np.zeros(3)  # [rad/s²]

    def set_reference(self, rotation, angular_velocity=None, angular_acceleration=None) -> None:
        self.rotation = rotation
        self.angular_velocity = np.zeros(3) if angular_velocity is None else angular_velocity
        self.angular_acceleration = np.zeros(3) if angular_acceleration is None else angular_acceleration

    def fill(self, pm: ProjectedModel, rows: tuple[np.ndarray, np.ndarray, np.ndarray], k: int) -> int:
        ref = (_NO_POSITION, self.rotation, self.angular_velocity, self.angular_acceleration)
        return _pose_rows(frame_terms(pm), self.frame_rows(pm), 3, ref, self.gains(), rows, k)


@compiled
def _pose_rows(frames, frame_rows, first, ref, gains, rows, k):
    """Rows ``k..`` of ``rows = (J, r, w)``: the rows ``first..6`` of the frame's ``J_f T``, ``a_ref + kp e
    + kd (V_ref - V) - drift`` (module docstring) and the weights (``first``: 0 for the pose, 3 for the
    orientation); ``frames``: :func:`frame_terms`, ``frame_rows = (u, s)``, ``ref = (position, rotation,
    twist, acceleration)``, ``gains = (kp, kd, weight)`` (twist, acceleration and gains: of those rows
    only). Returns the next row."""
    J, r, w = rows
    R_all, p_all, Jf_T, drift, twist = frames
    u, s = frame_rows
    position, rotation, twist_ref, acceleration = ref
    kp, kd, weight = gains
    e = orientation_error(rotation, R_all[s])
    for i in range(first, 6):
        a = k + i - first
        for j in range(J.shape[1]):
            J[a, j] = Jf_T[u, i, j]
        err = position[i] - p_all[s, i] if i < 3 else e[i - 3]
        b = i - first
        r[a] = acceleration[b] + kp[b] * err + kd[b] * (twist_ref[b] - twist[u, i]) - drift[u, i]
        w[a] = weight[b]
    return k + 6 - first


__all__ = ["FramePoseTask", "OrientationTask"]

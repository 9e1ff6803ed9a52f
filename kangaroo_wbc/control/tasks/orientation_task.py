"""Orientation task of a frame (the floating base, by default), world axes.

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
        self.angular_acceleration = (np.zeros(3) if angular_acceleration is None
                                     else angular_acceleration)

    def fill(self, pm: ProjectedModel, rows: tuple[np.ndarray, np.ndarray, np.ndarray], k: int) -> int:
        return _orientation_rows(frame_terms(pm), self.frame_rows(pm),
                                 (self.rotation, self.angular_velocity, self.angular_acceleration), self.gains(),
                                 rows, k)


@compiled
def _orientation_rows(frames, frame_rows, ref, gains, rows, k):
    """Rows ``k..k+3`` of ``rows = (J, r, w)``: the angular rows of the frame's ``J_f T``,
    ``a_des - drift`` (module docstring) and the weights; ``frames``: :func:`frame_terms`,
    ``frame_rows = (u, s)``, ``ref = (rotation, angular_velocity, angular_acceleration)``,
    ``gains = (kp, kd, weight)``."""
    J, r, w = rows
    R_all, Jf_T, drift, twist = frames[0], frames[2], frames[3], frames[4]
    u, s = frame_rows
    rotation, angular_velocity, angular_acceleration = ref
    kp, kd, weight = gains
    e = orientation_error(rotation, R_all[s])
    for i in range(3):
        for j in range(J.shape[1]):
            J[k + i, j] = Jf_T[u, 3 + i, j]
        r[k + i] = (angular_acceleration[i] + kp[i] * e[i] + kd[i] * (angular_velocity[i] - twist[u, 3 + i])
                    - drift[u, 3 + i])
        w[k + i] = weight[i]
    return k + 3


__all__ = ["OrientationTask"]

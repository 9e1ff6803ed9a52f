"""Pose task of a frame (a swing foot): position and orientation, world axes at the frame origin.

.. math::

    e = \\begin{bmatrix} p_{ref} - p \\\\ \\log_3(R_{ref} R^T) \\end{bmatrix}, \\quad
    a_{des} = a_{ref} + K_p e + K_d (\\mathcal V_{ref} - \\mathcal V), \\quad
    J = J_f T, \\quad r = a_{des} - (\\dot J_f v + J_f k)

``J_f`` is the ``LOCAL_WORLD_ALIGNED`` frame Jacobian (linear rows first); ``a`` is the classical
acceleration of the frame origin and the angular acceleration.
"""

from __future__ import annotations

import numpy as np

from kangaroo_wbc.control.tasks.base import Reference, Task, frame_terms
from kangaroo_wbc.model.compiled import compiled
from kangaroo_wbc.model.projected_model import ProjectedModel
from kangaroo_wbc.model.so3 import orientation_error


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
        return _pose_rows(frame_terms(pm), self.frame_rows(pm), ref, self.gains(), rows, k)


@compiled
def _pose_rows(frames, frame_rows, ref, gains, rows, k):
    """Rows ``k..k+6`` of ``rows = (J, r, w)``: the frame's ``J_f T``, ``a_ref + kp e + kd (V_ref - V) -
    drift`` (module docstring) and the weights; ``frames``: :func:`frame_terms`, ``frame_rows = (u, s)``,
    ``ref = (position, rotation, twist, acceleration)``, ``gains = (kp, kd, weight)``."""
    J, r, w = rows
    R_all, p_all, Jf_T, drift, twist = frames
    u, s = frame_rows
    position, rotation, twist_ref, acceleration = ref
    kp, kd, weight = gains
    e = orientation_error(rotation, R_all[s])
    for i in range(6):
        for j in range(J.shape[1]):
            J[k + i, j] = Jf_T[u, i, j]
        err = position[i] - p_all[s, i] if i < 3 else e[i - 3]
        r[k + i] = acceleration[i] + kp[i] * err + kd[i] * (twist_ref[i] - twist[u, i]) - drift[u, i]
        w[k + i] = weight[i]
    return k + 6


__all__ = ["FramePoseTask"]

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
import pinocchio as pin

from kangaroo_wbc.control.tasks.base import Reference, Task
from kangaroo_wbc.control.tasks.fused import pose_target as _pose_target
from kangaroo_wbc.model.projected_model import ProjectedModel


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

    def error(self, pm: ProjectedModel) -> np.ndarray:
        R, p = pm.placement(self.frame)
        return np.concatenate([self.position - p, pin.log3(self.rotation @ R.T)])

    def jacobian_and_target(self, pm: ProjectedModel) -> tuple[np.ndarray, np.ndarray]:
        # one compiled pass: a_ref + kp error + kd (V_ref - V) - drift (tested against that formula)
        R, p = pm.placement(self.frame)
        r = np.empty(6)
        _pose_target(self.rotation, self.position, R, p, self.acceleration, self.twist, pm.twist(self.frame),
                     pm.drift(self.frame), self.kp, self.kd, r)
        return pm.jacobian(self.frame), r


__all__ = ["FramePoseTask"]

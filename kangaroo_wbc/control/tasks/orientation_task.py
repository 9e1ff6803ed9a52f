"""Orientation task of a frame (the floating base, by default), world axes.

.. math::

    e_R = \\log_3(R_{ref} R^T), \\qquad
    \\dot\\omega_{des} = \\dot\\omega_{ref} + K_p e_R + K_d (\\omega_{ref} - \\omega), \\qquad
    J = J^{\\omega}_f T, \\quad r = \\dot\\omega_{des} - (\\dot J^\\omega_f v + J^\\omega_f k)
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin

from kangaroo_wbc.control.tasks.base import Reference, Task
from kangaroo_wbc.model.projected_model import ProjectedModel


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

    def error(self, pm: ProjectedModel) -> np.ndarray:
        R, _ = pm.placement(self.frame)
        return pin.log3(self.rotation @ R.T)

    def jacobian_and_target(self, pm: ProjectedModel) -> tuple[np.ndarray, np.ndarray]:
        w = pm.twist(self.frame)[3:]
        a_des = (self.angular_acceleration + self.kp * self.error(pm)
                 + self.kd * (self.angular_velocity - w))
        return pm.jacobian(self.frame)[3:], a_des - pm.drift(self.frame)[3:]


__all__ = ["OrientationTask"]

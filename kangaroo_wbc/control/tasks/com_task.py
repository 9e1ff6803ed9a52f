"""Centre-of-mass position task.

.. math::

    J = J_{com} T = A_{G,lin} T / m, \\qquad
    \\ddot c_{des} = \\ddot c_{ref} + K_p (c_{ref} - c) + K_d (\\dot c_{ref} - \\dot c) - \\hat d, \\qquad
    r = \\ddot c_{des} - (\\dot J_{com} v + J_{com} k)

with ``A_G`` the centroidal momentum matrix (eq. (33) of the Kangaroo paper), all in world axes [m].
``d_hat`` (:attr:`ComTask.disturbance`) is the CoM acceleration the robot adds to the planned one,
estimated by :class:`~kangaroo_wbc.control.com_disturbance.ComDisturbanceObserver` (zero without it).
"""

from __future__ import annotations

import numpy as np

from kangaroo_wbc.control.tasks.base import Reference, Task
from kangaroo_wbc.model.compiled import compiled
from kangaroo_wbc.model.projected_model import ProjectedModel


class ComTask(Task):
    """CoM position tracking (3 rows, world axes)."""

    position = Reference((3,))
    velocity = Reference((3,))
    acceleration = Reference((3,))
    #: estimated CoM acceleration disturbance ``d_hat`` [m/s²], subtracted from the desired acceleration
    disturbance = Reference((3,))

    dim = 3

    def __init__(self, weight=1.0, kp=100.0, kd=20.0, name: str = "com") -> None:
        super().__init__(name, weight, kp, kd)
        self.position = np.zeros(3)  # [m]
        self.velocity = np.zeros(3)  # [m/s]
        self.acceleration = np.zeros(3)  # [m/s²]
        self.disturbance = np.zeros(3)  # [m/s²]

    def set_reference(self, position, velocity=None, acceleration=None) -> None:
        self.position = position
        self.velocity = np.zeros(3) if velocity is None else velocity
        self.acceleration = np.zeros(3) if acceleration is None else acceleration

    def fill(self, pm: ProjectedModel, rows: tuple[np.ndarray, np.ndarray, np.ndarray], k: int) -> int:
        return _com_rows(pm.J_com, (pm.com, pm.com_velocity, pm.com_drift),
                         (self.position, self.velocity, self.acceleration, self.disturbance), self.gains(), rows, k)


@compiled
def _com_rows(J_com, state, ref, gains, rows, k):
    """Rows ``k..k+3`` of ``rows = (J, r, w)``: ``J_com``, ``a_des - com_drift`` (module docstring) and the
    weights; ``state = (com, com_velocity, com_drift)``, ``ref = (position, velocity, acceleration,
    disturbance)``, ``gains = (kp, kd, weight)``."""
    J, r, w = rows
    com, com_velocity, com_drift = state
    position, velocity, acceleration, disturbance = ref
    kp, kd, weight = gains
    for i in range(3):
        for j in range(J.shape[1]):
            J[k + i, j] = J_com[i, j]
        r[k + i] = (acceleration[i] + kp[i] * (position[i] - com[i]) + kd[i] * (velocity[i] - com_velocity[i])
                    - disturbance[i] - com_drift[i])
        w[k + i] = weight[i]
    return k + 3


__all__ = ["ComTask"]

"""Posture task in actuated coordinates (ball-screw displacements).

.. math::

    J = [0_{n_a \\times n_b}\\; I_{n_a}], \\qquad
    r = \\ddot\\theta_{a,ref} + K_p (\\theta_{a,ref} - \\theta_a) + K_d (\\dot\\theta_{a,ref} - \\dot\\theta_a)

Regularises the redundancy left by the Cartesian tasks toward a nominal actuator posture [m].
"""

from __future__ import annotations

import numpy as np

from kangaroo_wbc.control.tasks.base import Reference, Task
from kangaroo_wbc.model.compiled import compiled
from kangaroo_wbc.model.projected_model import ProjectedModel


class PostureTask(Task):
    """Actuator-space posture (n_a rows) [m or rad]."""

    position = Reference("n_a")
    velocity = Reference("n_a")
    acceleration = Reference("n_a")

    def __init__(self, n_b: int, n_a: int, idx_q_a: np.ndarray, weight=1e-2, kp=50.0, kd=10.0,
                 name: str = "posture") -> None:
        self.dim = n_a
        super().__init__(name, weight, kp, kd)
        self.n_b, self.n_a = n_b, n_a
        self.idx_q_a = np.asarray(idx_q_a, dtype=np.int64)
        self.position = np.zeros(n_a)
        self.velocity = np.zeros(n_a)
        self.acceleration = np.zeros(n_a)

    def set_reference(self, position, velocity=None, acceleration=None) -> None:
        self.position = position
        self.velocity = np.zeros(self.n_a) if velocity is None else velocity
        self.acceleration = np.zeros(self.n_a) if acceleration is None else acceleration

    def fill(self, pm: ProjectedModel, rows: tuple[np.ndarray, np.ndarray, np.ndarray], k: int) -> int:
        return _posture_rows(pm.q, pm.nu, self.n_b, self.idx_q_a, (self.position, self.velocity, self.acceleration),
                             self.gains(), rows, k)


@compiled
def _posture_rows(q, nu, n_b, idx_q_a, ref, gains, rows, k):
    """Rows ``k..k+n_a`` of ``rows = (J, r, w)``: ``[0 | I]``, ``r`` of the module docstring and the weights
    (``theta = q[idx_q_a]``, ``theta_dot = nu[n_b:]``); ``ref = (position, velocity, acceleration)``,
    ``gains = (kp, kd, weight)``."""
    J, r, w = rows
    position, velocity, acceleration = ref
    kp, kd, weight = gains
    n_a = idx_q_a.shape[0]
    for i in range(n_a):
        for j in range(J.shape[1]):
            J[k + i, j] = 1.0 if j == n_b + i else 0.0
        r[k + i] = acceleration[i] + kp[i] * (position[i] - q[idx_q_a[i]]) + kd[i] * (velocity[i] - nu[n_b + i])
        w[k + i] = weight[i]
    return k + n_a


__all__ = ["PostureTask"]

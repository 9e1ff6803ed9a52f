"""Posture task in actuated coordinates (ball-screw displacements).

.. math::

    J = [0_{n_a \\times n_b}\\; I_{n_a}], \\qquad
    r = \\ddot\\theta_{a,ref} + K_p (\\theta_{a,ref} - \\theta_a) + K_d (\\dot\\theta_{a,ref} - \\dot\\theta_a)

Regularises the redundancy left by the Cartesian tasks toward a nominal actuator posture [m].
"""

from __future__ import annotations

import numpy as np

from kangaroo_wbc.control.tasks.base import Reference, Task
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
        self.idx_q_a = np.asarray(idx_q_a, dtype=int)
        self._J = np.zeros((n_a, n_b + n_a))
        self._J[:, n_b:] = np.eye(n_a)
        self.position = np.zeros(n_a)
        self.velocity = np.zeros(n_a)
        self.acceleration = np.zeros(n_a)

    def set_reference(self, position, velocity=None, acceleration=None) -> None:
        self.position = position
        self.velocity = np.zeros(self.n_a) if velocity is None else velocity
        self.acceleration = np.zeros(self.n_a) if acceleration is None else acceleration

    def error(self, pm: ProjectedModel) -> np.ndarray:
        return self.position - pm.q[self.idx_q_a]

    def jacobian_and_target(self, pm: ProjectedModel) -> tuple[np.ndarray, np.ndarray]:
        theta_dot = pm.nu[self.n_b:]
        r = self.acceleration + self.kp * self.error(pm) + self.kd * (self.velocity - theta_dot)
        return self._J, r


__all__ = ["PostureTask"]

"""Actuator force limits through the actuated rows of the projected dynamics (eq. (69), (29)).

.. math::

    \\tau_a = M_{p,a} \\dot\\nu + h_{p,a} - (J_{sole,a}^T W) f, \\qquad
    \\tau_{min} - h_{p,a} \\le \\begin{bmatrix} M_{p,a} & -J_{sole,a}^T W \\end{bmatrix} x
      \\le \\tau_{max} - h_{p,a}

``tau_a`` is the axial force of each ball screw [N] (or torque [N·m] for a revolute actuator); the
passive joints' torques are mapped onto the actuators through ``J_m^T`` inside ``T`` (eq. (18)).
"""

from __future__ import annotations

import numpy as np

from kangaroo_wbc.control.constraints.floating_base_dynamics import DynamicsRows
from kangaroo_wbc.control.contacts import DecisionLayout
from kangaroo_wbc.errors import InputError


class ActuatorForceLimits(DynamicsRows):
    """Two-sided limits on the actuator forces (n_a rows)."""

    kind = "ineq"
    name = "actuator_force_limits"

    def __init__(self, layout: DecisionLayout, force_min: np.ndarray, force_max: np.ndarray) -> None:
        super().__init__(layout)
        self.force_min = np.asarray(force_min, dtype=float)
        self.force_max = np.asarray(force_max, dtype=float)
        if self.force_min.shape != (layout.n_a,) or self.force_max.shape != (layout.n_a,):
            raise InputError(f"actuator force limits must have shape ({layout.n_a},)")
        if np.any(self.force_min >= self.force_max):
            raise InputError("actuator force limits: need force_min < force_max")
        self.first_row = layout.n_b
        self.limits = (self.force_min, self.force_max)

    def n_rows(self) -> int:
        return self.layout.n_a


__all__ = ["ActuatorForceLimits"]

"""Actuator force limits through the actuated rows of the projected dynamics (eq. (69), (29)).

.. math::

    \\tau_a = M_{p,a} \\dot\\nu + h_{p,a} - (J_{sole,a}^T W) f, \\qquad
    \\tau_{min} - h_{p,a} \\le \\begin{bmatrix} M_{p,a} & -J_{sole,a}^T W \\end{bmatrix} x
      \\le \\tau_{max} - h_{p,a}

``tau_a`` is the axial force of each ball screw [N] (or torque [N·m] for a revolute actuator); the
passive joints' torques are mapped onto the actuators through ``J_m^T`` inside ``T`` (eq. (18)).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from kangaroo_wbc.control.constraints.base import NO_CONTACT, Constraint
from kangaroo_wbc.control.contacts import ContactTerms, DecisionLayout
from kangaroo_wbc.errors import InputError
from kangaroo_wbc.model.compiled import compiled
from kangaroo_wbc.model.projected_model import ProjectedModel


class ActuatorForceLimits(Constraint):
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

    def n_rows(self) -> int:
        return self.layout.n_a

    def fill(self, M: np.ndarray | None, lo: np.ndarray, hi: np.ndarray, pm: ProjectedModel,
             contacts: Mapping[str, ContactTerms]) -> None:
        terms = self.contact_terms(contacts)
        Js, Ws = (tuple([t.J for t in terms]), tuple([t.W for t in terms])) if terms else (NO_CONTACT, NO_CONTACT)
        _force_limit_rows(pm.M_p, pm.h_p, self.layout.n_b, Js, Ws, self.force_columns,
                          (self.force_min, self.force_max), M, lo, hi)


@compiled
def _force_limit_rows(M_p, h_p, n_b, Js, Ws, force_columns, limits, M, lo, hi):
    """The ``n_a`` rows ``tau_min - h_p,a <= [M_p,a | -(J_i^T W_i)_a ...] x <= tau_max - h_p,a``
    (``limits = (tau_min, tau_max)``; contacts as in the floating-base rows)."""
    force_min, force_max = limits
    n_a, n_nu = M.shape[0], M_p.shape[1]
    for r in range(n_a):
        for j in range(n_nu):
            M[r, j] = M_p[n_b + r, j]
        lo[r] = force_min[r] - h_p[n_b + r]
        hi[r] = force_max[r] - h_p[n_b + r]
    for i in range(force_columns.shape[0]):
        J, W, c0 = Js[i], Ws[i], force_columns[i, 0]
        for r in range(n_a):
            for k in range(force_columns[i, 1]):
                s = 0.0
                for d in range(6):
                    s += J[d, n_b + r] * W[d, k]
                M[r, c0 + k] = -s


__all__ = ["ActuatorForceLimits"]

"""Actuator stroke (and speed) limits turned into acceleration bounds over a horizon.

With constant acceleration over the horizon ``dt`` [s], position and velocity stay in range when

.. math::

    \\frac{2(\\theta_{min} - \\theta - \\dot\\theta\\, dt)}{dt^2} \\le \\ddot\\theta
      \\le \\frac{2(\\theta_{max} - \\theta - \\dot\\theta\\, dt)}{dt^2}, \\qquad
    \\frac{-\\dot\\theta_{max} - \\dot\\theta}{dt} \\le \\ddot\\theta \\le \\frac{\\dot\\theta_{max} - \\dot\\theta}{dt}

intersected with ``|theta_ddot| <= acceleration_max``. If position and speed bounds conflict (the
actuator already moves too fast toward a limit) the interval collapses to the position bound's
nearest feasible value, so the QP stays feasible and brakes as hard as allowed.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from kangaroo_wbc.control.constraints.base import Constraint
from kangaroo_wbc.control.contacts import ContactTerms, DecisionLayout
from kangaroo_wbc.control.projected_model import ProjectedModel
from kangaroo_wbc.errors import InputError


class ActuatorStrokeLimits(Constraint):
    """Box bounds on ``theta_ddot_a`` from stroke [m], speed [m/s] and acceleration [m/s²] limits."""

    kind = "box"
    name = "actuator_stroke_limits"

    def __init__(self, layout: DecisionLayout, idx_q_a: np.ndarray, position_min: np.ndarray,
                 position_max: np.ndarray, velocity_max: np.ndarray | None = None, horizon_s: float = 0.05,
                 acceleration_max: float | np.ndarray = 1e3) -> None:
        super().__init__(layout)
        n_a = layout.n_a
        self.idx_q_a = np.asarray(idx_q_a, dtype=int)
        self.position_min = np.asarray(position_min, dtype=float)
        self.position_max = np.asarray(position_max, dtype=float)
        vmax = np.full(n_a, np.inf) if velocity_max is None else np.asarray(velocity_max, dtype=float)
        self.velocity_max = np.where(vmax > 0, vmax, np.inf)
        self.acceleration_max = np.broadcast_to(np.asarray(acceleration_max, dtype=float), (n_a,)).copy()
        if not horizon_s > 0:
            raise InputError(f"stroke-limit horizon must be positive, got {horizon_s}")
        self.horizon_s = float(horizon_s)
        if np.any(self.position_min >= self.position_max):
            raise InputError("actuator stroke limits: need position_min < position_max")

    def n_rows(self) -> int:
        return 0

    def bounds(self, theta: np.ndarray, theta_dot: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Acceleration bounds ``(lo, hi)`` [m/s²] for positions ``theta`` and speeds ``theta_dot``."""
        dt = self.horizon_s
        lo_p = 2.0 * (self.position_min - theta - theta_dot * dt) / dt**2
        hi_p = 2.0 * (self.position_max - theta - theta_dot * dt) / dt**2
        lo_v = (-self.velocity_max - theta_dot) / dt
        hi_v = (self.velocity_max - theta_dot) / dt
        lo = np.maximum(lo_p, lo_v)
        hi = np.minimum(hi_p, hi_v)
        bad = lo > hi
        if bad.any():
            pinned = np.minimum(np.maximum(0.5 * (lo + hi), lo_p), hi_p)
            lo = np.where(bad, pinned, lo)
            hi = np.where(bad, pinned, hi)
        amax = self.acceleration_max  # np.clip is several times slower on 12 entries
        np.minimum(np.maximum(lo, -amax, out=lo), amax, out=lo)
        np.minimum(np.maximum(hi, -amax, out=hi), amax, out=hi)
        return lo, hi

    def fill(self, M: np.ndarray | None, lo: np.ndarray, hi: np.ndarray, pm: ProjectedModel,
             contacts: Mapping[str, ContactTerms]) -> None:
        a = self.layout.actuated
        lo[a], hi[a] = self.bounds(pm.q[self.idx_q_a], pm.nu[a])


__all__ = ["ActuatorStrokeLimits"]

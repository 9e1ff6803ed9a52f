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
from kangaroo_wbc.errors import InputError
from kangaroo_wbc.model.compiled import compiled
from kangaroo_wbc.model.projected_model import ProjectedModel


class ActuatorStrokeLimits(Constraint):
    """Box bounds on ``theta_ddot_a`` from stroke [m], speed [m/s] and acceleration [m/s²] limits."""

    kind = "box"
    name = "actuator_stroke_limits"

    def __init__(self, layout: DecisionLayout, idx_q_a: np.ndarray, position_min: np.ndarray,
                 position_max: np.ndarray, velocity_max: np.ndarray | None = None, horizon_s: float = 0.05,
                 acceleration_max: float | np.ndarray = 1e3) -> None:
        super().__init__(layout)
        n_a = layout.n_a
        self.idx_q_a = np.asarray(idx_q_a, dtype=np.int64)
        self.position_min = np.asarray(position_min, dtype=float)
        self.position_max = np.asarray(position_max, dtype=float)
        vmax = np.full(n_a, np.inf) if velocity_max is None else np.asarray(velocity_max, dtype=float)
        self.velocity_max = np.where(vmax > 0, vmax, np.inf)
        self.acceleration_max = np.broadcast_to(np.asarray(acceleration_max, dtype=float), (n_a,)).copy()
        if not horizon_s > 0:
            raise InputError(f"stroke-limit horizon must be positive, got {horizon_s}")
        self.horizon_s = float(horizon_s)
        for what, arr in (("position_min", self.position_min), ("position_max", self.position_max),
                          ("velocity_max", self.velocity_max)):
            if arr.shape != (n_a,):
                raise InputError(f"actuator stroke limits: {what} has shape {arr.shape}, expected ({n_a},)")
        if np.any(self.position_min >= self.position_max):
            raise InputError("actuator stroke limits: need position_min < position_max")
        self._actuators = np.arange(n_a, dtype=np.int64)
        self._bounds: tuple[np.ndarray, np.ndarray] | None = None  # (lb, ub) of the last fill

    def n_rows(self) -> int:
        return 0

    def bounds(self, theta: np.ndarray, theta_dot: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Acceleration bounds ``(lo, hi)`` [m/s²] for positions ``theta`` and speeds ``theta_dot``."""
        theta = np.asarray(theta, dtype=float)
        theta_dot = np.asarray(theta_dot, dtype=float)
        n = self.position_min.shape[0]
        if theta.shape != (n,) or theta_dot.shape != (n,):
            raise InputError(f"stroke bounds: theta {theta.shape} and theta_dot {theta_dot.shape}, expected ({n},)")
        lo, hi = np.empty(n), np.empty(n)
        stroke_bounds(theta, self._actuators, theta_dot, 0, self.limits(), self.horizon_s, lo, hi)
        return lo, hi

    def limits(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(position_min, position_max, velocity_max, acceleration_max)``, one argument of the kernel."""
        return self.position_min, self.position_max, self.velocity_max, self.acceleration_max

    def fill(self, M: np.ndarray | None, lo: np.ndarray, hi: np.ndarray, pm: ProjectedModel,
             contacts: Mapping[str, ContactTerms]) -> None:
        stroke_bounds(pm.q, self.idx_q_a, pm.nu, self.layout.n_b, self.limits(), self.horizon_s, lo, hi)
        self._bounds = (lo, hi)

    def active(self, x: np.ndarray, tol: float = 1e-5) -> list[tuple[int, str]]:
        """``(actuator index, "lower" | "upper")`` of the stroke bounds binding ``x`` (the solution of
        the QP the last :meth:`fill` wrote, within ``tol (1 + |bound|)``), where the bound is a
        stroke or speed bound (not only the acceleration limit): the actuator brakes toward, or rests
        at, that end."""
        if self._bounds is None:
            return []
        lo, hi = self._bounds
        n_b, out = self.layout.n_b, []
        for i in range(self.layout.n_a):
            a, lo_i, hi_i = x[n_b + i], lo[n_b + i], hi[n_b + i]
            if hi_i < self.acceleration_max[i] and a >= hi_i - tol * (1.0 + abs(hi_i)):
                out.append((i, "upper"))
            elif lo_i > -self.acceleration_max[i] and a <= lo_i + tol * (1.0 + abs(lo_i)):
                out.append((i, "lower"))
        return out


@compiled
def stroke_bounds(q, idx_q_a, nu, n_b, limits, dt, lo, hi):
    """The bounds of the module docstring on ``theta_ddot_a[i]`` into ``lo[n_b + i]``, ``hi[n_b + i]``
    with ``theta = q[idx_q_a[i]]``, ``theta_dot = nu[n_b + i]`` and ``limits = (position_min,
    position_max, velocity_max, acceleration_max)``, over the horizon ``dt`` [s]."""
    position_min, position_max, velocity_max, acceleration_max = limits
    dt2 = dt * dt
    for i in range(idx_q_a.shape[0]):
        theta, theta_dot = q[idx_q_a[i]], nu[n_b + i]
        lo_p = 2.0 * (position_min[i] - theta - theta_dot * dt) / dt2
        hi_p = 2.0 * (position_max[i] - theta - theta_dot * dt) / dt2
        lo_i = max(lo_p, (-velocity_max[i] - theta_dot) / dt)
        hi_i = min(hi_p, (velocity_max[i] - theta_dot) / dt)
        if lo_i > hi_i:  # speed and stroke conflict: the position bound's nearest feasible value
            lo_i = hi_i = min(max(0.5 * (lo_i + hi_i), lo_p), hi_p)
        a = acceleration_max[i]
        lo[n_b + i] = min(max(lo_i, -a), a)
        hi[n_b + i] = min(max(hi_i, -a), a)


__all__ = ["ActuatorStrokeLimits", "stroke_bounds"]

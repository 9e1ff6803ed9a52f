"""Passive-joint limits as rows on the decision variables, through the closed-chain maps.

A passive joint ``u`` moves with the actuators through the closures (eq. (7), (10)):

.. math::

    \\dot\\theta_u = J_m \\dot\\theta_a, \\qquad
    \\ddot\\theta_u = J_m \\ddot\\theta_a + k_u, \\quad k_u = -J_{l,u}^{-1} \\dot J_l v,

i.e. row ``u`` of ``v_dot = T nu_dot + k`` (:class:`~kangaroo_wbc.model.projected_model.ProjectedModel`:
``T`` holds ``J_m`` in its passive rows, ``k`` the drift). The joint's limits ``[theta_min + m,
theta_max - m]`` (the model's limits moved inwards by the margin ``m``,
:meth:`~kangaroo_wbc.model.ClosedLoopModel.passive_joint_limits`) and its speed limit become, with
the same constant-acceleration damper over the horizon ``dt`` as the actuator strokes
(:mod:`~kangaroo_wbc.control.constraints.actuator_stroke_limits`),

.. math::

    \\max\\Big(\\tfrac{2(\\theta_{min} + m - \\theta - \\dot\\theta dt)}{dt^2},
              \\tfrac{-\\dot\\theta_{max} - \\dot\\theta}{dt}\\Big) - k_u
    \\le T_u \\dot\\nu \\le
    \\min\\Big(\\tfrac{2(\\theta_{max} - m - \\theta - \\dot\\theta dt)}{dt^2},
              \\tfrac{\\dot\\theta_{max} - \\dot\\theta}{dt}\\Big) - k_u .

Constant acceleration at the bound stops the joint exactly at the (margined) limit at the end of
the horizon; re-planned every tick, the bound decelerates the joint as it approaches and it never
crosses. Where speed and position bounds conflict the interval collapses to the position bound's
nearest feasible value (as for the strokes); a bound the actuators cannot reach within their own
acceleration box (the stroke bounds of the tick) is moved to the reachable end, so that the row and
the box never make the QP infeasible on their own: the joint then brakes as hard as allowed.

Only joints near a limit get a row: the constraint owns a fixed number of rows (``slots``; the QP
keeps one shape), each tick given to the joints whose acceleration *slack* — the distance of the
previous tick's solution ``T_u nu_dot_prev + k_u`` (:meth:`PassiveJointLimits.observe`) to this
tick's bounds, ``min(hi - a, a - lo)`` — is below ``activation`` [rad/s²], smallest first (a
negative slack: the previous solution would cross the bound). The bounds shrink as a joint nears
its limit (``2 d / dt²`` at a distance ``d`` at rest), so a joint at its limit always has a row, and
a row appears while it is still inactive, ``activation`` ahead of where it binds: no jump in the
solution when a joint enters. A joint keeps its slot while it stays a candidate (the active-set
solver's prediction stays valid). Empty slots are zero rows with infinite bounds. One compiled
kernel selects and writes the rows.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from kangaroo_wbc.control.constraints.actuator_stroke_limits import (
    ActuatorStrokeLimits,
    stroke_bounds,
)
from kangaroo_wbc.control.constraints.base import Constraint
from kangaroo_wbc.control.contacts import ContactTerms, DecisionLayout
from kangaroo_wbc.errors import InputError
from kangaroo_wbc.model.closed_loop_model import PassiveLimits
from kangaroo_wbc.model.compiled import buffers, compiled
from kangaroo_wbc.model.projected_model import ProjectedModel

#: Relative tolerance of :meth:`PassiveJointLimits.active`: a row counts as binding when its value
#: is within ``ACTIVE_TOL (1 + |bound|)`` of the bound (the QP solvers' primal tolerance scale).
ACTIVE_TOL = 1e-5

#: The kernel's arrays, built once (:class:`PassiveJointLimits`): the limited joints' ``idx_q``,
#: ``idx_v``, ``lower``, ``upper``, ``velocity`` (:class:`~kangaroo_wbc.model.closed_loop_model.PassiveLimits`);
#: the slots' ``selected`` joints and the last solution ``nu_dot_prev``; per joint work ``slack``,
#: ``taken``, ``lo_j``, ``hi_j``; the stroke box ``box_lo``, ``box_hi`` of ``x`` and the stroke limits'
#: ``strokes`` tuple ``(idx_q_a, position_min, position_max, velocity_max, acceleration_max)`` (the
#: stroke constraint's own arrays); ``params = [horizon_s, activation, n_b]``.
PassiveLimitBuffers = buffers("PassiveLimitBuffers", (
    "idx_q", "idx_v", "lower", "upper", "velocity", "selected", "nu_dot_prev", "slack", "taken", "lo_j", "hi_j",
    "box_lo", "box_hi", "strokes", "params"))


class PassiveJointLimits(Constraint):
    """Rows ``lo <= T_u nu_dot <= hi`` keeping passive joints inside their limits (module docstring).

    Args:
        layout: the decision layout.
        limits: the limited passive joints, margins applied
            (:meth:`~kangaroo_wbc.model.ClosedLoopModel.passive_joint_limits`).
        strokes: the actuator stroke limits: their horizon [s] is this constraint's, their box on
            ``theta_ddot_a`` bounds what the rows may ask.
        slots: number of rows (joints constrained at once).
        activation: acceleration slack [rad/s² or m/s²] below which a joint gets a row.
    """

    kind = "ineq"
    name = "passive_joint_limits"

    def __init__(self, layout: DecisionLayout, limits: PassiveLimits, strokes: ActuatorStrokeLimits,
                 slots: int = 6, activation: float = 50.0) -> None:
        super().__init__(layout)
        if not (isinstance(slots, int | np.integer) and slots >= 0):
            raise InputError(f"passive-joint limits: slots must be an integer >= 0, got {slots!r}")
        if not (np.isfinite(activation) and activation > 0):
            raise InputError(f"passive-joint limits: activation must be positive and finite, got {activation!r}")
        self.limits = limits
        self.strokes = strokes
        self.activation = float(activation)
        n_j = len(limits.names)
        self.n_slots = min(int(slots), n_j)
        #: per slot: the index (in ``limits``) of the joint it constrains, -1 when empty
        self.selected = np.full(self.n_slots, -1, dtype=np.int64)
        #: the last solution's ``nu_dot`` (:meth:`observe`), zero before the first
        self.nu_dot_prev = np.zeros(layout.n_nu)
        n = layout.n
        self._params = np.array([strokes.horizon_s, self.activation, layout.n_b], dtype=float)
        self._buf = PassiveLimitBuffers.make(
            idx_q=limits.idx_q, idx_v=limits.idx_v, lower=limits.lower, upper=limits.upper, velocity=limits.velocity,
            selected=self.selected, nu_dot_prev=self.nu_dot_prev, slack=np.empty(n_j),
            taken=np.zeros(n_j, dtype=np.bool_), lo_j=np.empty(n_j), hi_j=np.empty(n_j), box_lo=np.full(n, -np.inf),
            box_hi=np.full(n, np.inf), strokes=(strokes.idx_q_a, *strokes.limits()), params=self._params)
        self._rows: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None  # views of the last fill

    def n_rows(self) -> int:
        return self.n_slots

    def fill(self, M: np.ndarray | None, lo: np.ndarray, hi: np.ndarray, pm: ProjectedModel,
             contacts: Mapping[str, ContactTerms]) -> None:
        if self.n_slots == 0:
            return
        self._params[0] = self.strokes.horizon_s
        _passive_limit_rows(pm.q, pm.v, pm.nu, pm.T, pm.k, self._buf, M, lo, hi)
        self._rows = (M, lo, hi)

    def observe(self, x: np.ndarray) -> None:
        """Keep the solution ``x`` of this tick's QP: the next :meth:`fill` selects the joints near
        their limits by how far that solution is from their bounds (module docstring)."""
        self.nu_dot_prev[:] = x[:self.layout.n_nu]

    def mark_pattern(self, M: np.ndarray) -> None:
        """Every slot may constrain any passive joint: its row is dense over ``nu_dot`` (the
        sparsity pattern the solver is set up on)."""
        if self.n_slots:
            M[:, :self.layout.n_nu] = 1.0

    @property
    def engaged(self) -> list[str]:
        """The joints that have a row this tick (near a limit)."""
        return [self.limits.names[j] for j in self.selected if j >= 0]

    def active(self, x: np.ndarray, tol: float = ACTIVE_TOL) -> list[tuple[str, str]]:
        """``(joint, "lower" | "upper")`` of the rows binding ``x`` (the solution of the QP the last
        :meth:`fill` wrote): the joint brakes toward, or rests at, that limit."""
        if self._rows is None:
            return []
        M, lo, hi = self._rows
        out = []
        for s, j in enumerate(self.selected):
            if j < 0:
                continue
            val = float(M[s] @ x)
            if np.isfinite(hi[s]) and val >= hi[s] - tol * (1.0 + abs(hi[s])):
                out.append((self.limits.names[j], "upper"))
            elif np.isfinite(lo[s]) and val <= lo[s] + tol * (1.0 + abs(lo[s])):
                out.append((self.limits.names[j], "lower"))
        return out


@compiled
def _passive_limit_rows(q, v, nu, T, k, buf, M, lo, hi):
    """Select the limited joints of ``buf`` (:data:`PassiveLimitBuffers`) near their limits into its
    slots and write their rows ``M[s, :n_nu] = T[idx_v]`` and bounds ``lo``, ``hi`` (module
    docstring), the stroke box of the tick first (:func:`stroke_bounds` at ``q``, ``nu``)."""
    idx_q, idx_v, lower, upper, velocity = buf.idx_q, buf.idx_v, buf.lower, buf.upper, buf.velocity
    params = buf.params
    dt, activation, n_b = params[0], params[1], int(params[2])
    box_lo, box_hi = buf.box_lo, buf.box_hi
    strokes = buf.strokes
    stroke_bounds(q, strokes[0], nu, n_b, (strokes[1], strokes[2], strokes[3], strokes[4]), dt, box_lo, box_hi)
    slack, taken, lo_j, hi_j = buf.slack, buf.taken, buf.lo_j, buf.hi_j
    selected, nu_dot_prev = buf.selected, buf.nu_dot_prev
    n_j, n_s, n_nu = idx_q.shape[0], selected.shape[0], T.shape[1]
    dt2 = dt * dt
    # 1. every joint's bounds on its acceleration, and its slack at the previous solution
    for j in range(n_j):
        r = idx_v[j]
        theta, theta_dot = q[idx_q[j]], v[r]
        lo_p = 2.0 * (lower[j] - theta - theta_dot * dt) / dt2
        hi_p = 2.0 * (upper[j] - theta - theta_dot * dt) / dt2
        lo_i = max(lo_p, (-velocity[j] - theta_dot) / dt)
        hi_i = min(hi_p, (velocity[j] - theta_dot) / dt)
        if lo_i > hi_i:  # speed and position conflict: the position bound's nearest feasible value
            lo_i = hi_i = min(max(0.5 * (lo_i + hi_i), lo_p), hi_p)
        a = k[r]
        for c in range(n_nu):
            a += T[r, c] * nu_dot_prev[c]
        lo_j[j], hi_j[j] = lo_i, hi_i
        s = min(hi_i - a, a - lo_i)
        slack[j] = s if s < activation else np.inf
        taken[j] = False
    # 2. the slots: a joint keeps its slot while it is a candidate; the best remaining candidates
    # fill empty slots, or replace a candidate of larger slack
    for s in range(n_s):
        j = selected[s]
        if j >= 0:
            if slack[j] == np.inf:
                selected[s] = -1
            else:
                taken[j] = True
    while True:
        best = -1
        for j in range(n_j):
            if not taken[j] and slack[j] < np.inf and (best < 0 or slack[j] < slack[best]):
                best = j
        if best < 0:
            break
        slot = -1
        for s in range(n_s):
            if selected[s] < 0:
                slot = s
                break
        if slot < 0:
            for s in range(n_s):
                if slot < 0 or slack[selected[s]] > slack[selected[slot]]:
                    slot = s
            if slack[selected[slot]] <= slack[best]:
                break
            taken[selected[slot]] = False
            slack[selected[slot]] = np.inf  # dropped this tick
        selected[slot] = best
        taken[best] = True
    # 3. the rows
    for s in range(n_s):
        j = selected[s]
        for c in range(M.shape[1]):
            M[s, c] = 0.0
        if j < 0:
            lo[s], hi[s] = -np.inf, np.inf
            continue
        r = idx_v[j]
        lo_i, hi_i = lo_j[j], hi_j[j]
        # what the actuators' acceleration box can give this joint (a free base column: anything)
        reach_lo, reach_hi, free = k[r], k[r], False
        for c in range(n_nu):
            a = T[r, c]
            M[s, c] = a
            if a == 0.0:
                continue
            if c < n_b:
                free = True
            else:
                e1, e2 = a * box_lo[c], a * box_hi[c]
                reach_lo += min(e1, e2)
                reach_hi += max(e1, e2)
        if not free:
            if lo_i > reach_hi:  # brake (or push back) as hard as the actuators allow
                lo_i = reach_hi
                hi_i = max(hi_i, lo_i)
            if hi_i < reach_lo:
                hi_i = reach_lo
                lo_i = min(lo_i, hi_i)
        lo[s] = lo_i - k[r]
        hi[s] = hi_i - k[r]


__all__ = ["PassiveJointLimits", "ACTIVE_TOL"]

"""CoM disturbance observer: the CoM acceleration the controller planned but the robot did not make.

Each tick ``k`` the QP plans a CoM acceleration (the CoM task's rows, eq. (65) of the Kangaroo paper
with ``v = T nu``)

.. math::

    a_k = J_{com} T \\dot\\nu_k + \\dot J_{com} v_k + J_{com} k_k

and the robot makes ``a_k + d`` over the control period that follows: ``d`` is the CoM acceleration
of the forces the model does not know. With the ball-screw drives most of it is the drives' force
error: a per-boot torque-constant error (a few percent of every force, left and right legs
unequal) and the dry friction the drive's velocity feed-forward leaves where an actuator reverses
(inside the stiction zone its ``tanh(x_dot / v_s)`` is near zero while the screw sticks). Over the
period from the state of stamp ``t_{k-1}`` to that of ``t_k``,

.. math::

    r_k = \\frac{\\dot c_k - \\dot c_{k-1}}{t_k - t_{k-1}} - a_{k-1}

is a noisy sample of ``d`` (``c_dot``: the estimated CoM velocity); the estimate is its first-order
low-pass with cutoff ``f_c`` [Hz], bounded per axis,

.. math::

    \\hat d_k = \\operatorname{clip}\\big(\\hat d_{k-1} + \\alpha_k (r_k - \\hat d_{k-1}),\\, \\pm d_{max}\\big),
    \\qquad \\alpha_k = 1 - e^{-2\\pi f_c (t_k - t_{k-1})}.

The CoM task subtracts ``d_hat`` from its desired acceleration
(:class:`~kangaroo_wbc.control.tasks.com_task.ComTask`). With the task's PD, ``e = c_ref - c``
obeys ``e'' + k_d e' + k_p e = \\hat d - d``, and with ``\\hat d = d\\, \\omega_c / (s + \\omega_c)``
(``omega_c = 2 pi f_c``)

.. math::

    \\frac{e(s)}{d(s)} = \\frac{-s}{(s + \\omega_c)(s^2 + k_d s + k_p)}

zero at steady state (the PD alone leaves ``d / k_p``), the PD's poles unchanged. An integral of the
CoM error does the former but moves the latter: with ``k_p = 100``, ``k_d = 20`` an integral gain of
300 already puts a pair at ``-2.7 ± 3.6j``, which amplifies a disturbance at twice the sway
frequency where the observer attenuates it.

**Bound** ``d_max`` (anti-windup): the estimate stays within what drive force errors explain. A
larger force (a push on the pelvis) saturates it: the observer then takes the part below the bound
and the PD the rest, which keeps the compensation from driving the soles to slip.

**History.** A sample needs two consecutive states and the plan applied between them: after a gap
longer than ``max_gap_s``, a tick without a plan (the QP failed) or :meth:`restart` (the
supervisor's safe mode: its command, not the plan, acted) the next state only restarts the history
and the estimate is held. :meth:`reset` also clears the estimate (the robot or the estimator restarted).
"""

from __future__ import annotations

import math

import numpy as np

from kangaroo_wbc.errors import InputError


class ComDisturbanceObserver:
    """Low-pass estimate of the unmodelled CoM acceleration (module docstring).

    Args:
        cutoff_hz: cutoff ``f_c`` of the low-pass [Hz]; 0: the estimate stays zero.
        max_m_s2: bound ``d_max`` of each axis of the estimate [m/s²].
        max_gap_s: longest period between two states that forms a sample [s].
    """

    def __init__(self, cutoff_hz: float = 3.0, max_m_s2: float = 0.5, max_gap_s: float = 0.02) -> None:
        #: the estimate ``d_hat`` [m/s²], world axes
        self.estimate = np.zeros(3)
        #: the last sample ``r_k`` [m/s²] (NaN until one is formed)
        self.residual = np.full(3, np.nan)
        self._stamp: float | None = None
        self._velocity = np.zeros(3)
        self._plan: np.ndarray | None = None
        self.max_gap_s = 0.0
        self.configure(cutoff_hz, max_m_s2, max_gap_s)

    def configure(self, cutoff_hz: float, max_m_s2: float, max_gap_s: float | None = None) -> None:
        """Set the cutoff [Hz], the bound [m/s²] and (optionally) the longest gap [s]; the estimate
        is clipped to the new bound at once.

        Raises:
            InputError: a negative or non-finite value (nothing changed).
        """
        gap = self.max_gap_s if max_gap_s is None else max_gap_s
        for name, value in (("cutoff_hz", cutoff_hz), ("max_m_s2", max_m_s2), ("max_gap_s", gap)):
            if not (math.isfinite(value) and value >= 0.0):
                raise InputError(f"CoM disturbance observer: {name} must be finite and >= 0, got {value}")
        self.omega_c = 2.0 * math.pi * float(cutoff_hz)  # [rad/s]
        self.max_m_s2 = float(max_m_s2)
        self.max_gap_s = float(gap)
        np.clip(self.estimate, -self.max_m_s2, self.max_m_s2, out=self.estimate)

    def update(self, stamp_s: float, com_velocity: np.ndarray) -> np.ndarray:
        """The estimate [m/s²] after the state of time ``stamp_s`` [s] with CoM velocity
        ``com_velocity`` [m/s] (world axes); the returned array is :attr:`estimate`."""
        vx, vy, vz = (float(c) for c in com_velocity)  # three axes: plain floats beat numpy here
        if not (math.isfinite(stamp_s) and math.isfinite(vx + vy + vz)):
            self.restart()
            return self.estimate
        if self._stamp is not None and self._plan is not None:
            dt = stamp_s - self._stamp
            if 0.0 < dt <= self.max_gap_s:
                alpha = 1.0 - math.exp(-self.omega_c * dt)
                bound, est, res, v0, plan = self.max_m_s2, self.estimate, self.residual, self._velocity, self._plan
                for i, v in enumerate((vx, vy, vz)):
                    r = (v - v0[i]) / dt - plan[i]
                    res[i] = r
                    e = est[i] + alpha * (r - est[i])
                    est[i] = min(max(e, -bound), bound)
        self._stamp = float(stamp_s)
        self._velocity[:] = (vx, vy, vz)
        self._plan = None
        return self.estimate

    def planned(self, com_acceleration: np.ndarray) -> None:
        """The CoM acceleration ``a_k`` [m/s²] the solution of the last :meth:`update`'s state plans."""
        if self._stamp is not None:
            self._plan = np.array(com_acceleration, dtype=float)

    def restart(self) -> None:
        """Forget the history (the next state only starts it again); the estimate is held."""
        self._stamp, self._plan = None, None

    def reset(self) -> None:
        """Forget the history and the estimate."""
        self.restart()
        self.estimate[:] = 0.0
        self.residual[:] = np.nan


__all__ = ["ComDisturbanceObserver"]

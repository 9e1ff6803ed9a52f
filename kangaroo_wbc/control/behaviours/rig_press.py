""":class:`RigCircleAndPress`: on the one-leg test bench the sole circles in the air, then presses a force plate."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from kangaroo_wbc.control.behaviours.base import Behaviour, blend, min_jerk
from kangaroo_wbc.control.wbc import FrameReference, WbcReferences
from kangaroo_wbc.errors import InputError


@dataclass
class RigCircleAndPress(Behaviour):
    """One-leg test bench (the pelvis clamped, ``docs/morphology.md`` "One-leg rig"): the sole draws
    circles in the air, then presses on a force plate below it.

    1. **Circle** (``turns`` periods of ``period_s``): in the sagittal plane (the base's forward
       axis, made horizontal, and the world's vertical), about the sole's start position ``c``, the
       sole level (its start rotation):

       .. math::  p(t) = c + a(t)\\,(\\sin\\omega t\\; e_x + \\cos\\omega t\\; e_z),\\quad \\omega = 2\\pi/T

       the radius ``a`` ramping from 0 to ``radius_m`` over the first period and back to 0 over the
       last (minimum jerk), with the analytic velocity and acceleration as feed-forward.
    2. **Approach** (``approach_s``): minimum-jerk descent to ``press_depth_m`` below the plate, whose
       top lies ``plate_below_m`` under ``c`` (the rig's geometry); the sole meets the plate just
       before the end, at a few millimetres per second.
    3. **Press**: the sole is a contact (stationary) and its normal force rises to ``press_force_n``
       over ``force_ramp_s`` (minimum jerk), then holds (:attr:`WbcReferences.contact_normal_force`:
       each corner ``F / 4``: a prescribed force, not a lower bound, since below about half the
       leg's weight the QP's force regularisation, which splits that weight between the clamp and
       the sole, would push harder than asked). With a measured normal force (:meth:`measure_normal_force`, the rig's
       force plate) the reference is corrected by the integral of the error,

       .. math::  F_{ref}(t) = F_d(t) + \\mathrm{clip}\\Big(k_i \\int (F_d - F_{meas})\\,dt,\\; \\pm\\Delta_{max}\\Big)

       (``force_ki_per_s``, ``force_correction_max_n``): the screws' dry friction holds part of a
       force built up at standstill (the linkage does not move once the sole is on the plate), which
       no model of the drives can predict; ``force_ki_per_s = 0`` presses open loop.

    The clamp (``fixture``) is a contact throughout; sensing never drops it (no measured-contact
    veto: the behaviour plans every contact itself). :attr:`phase` names the phase of the last
    :meth:`references` call.
    """

    name: str = "rig"
    sole: str = "left"
    fixture: str = "pelvis_clamp"
    radius_m: float = 0.04
    period_s: float = 1.5
    turns: int = 3
    plate_below_m: float = 0.07
    approach_s: float = 1.0
    press_depth_m: float = 0.002
    press_force_n: float = 200.0
    force_ramp_s: float = 0.5
    force_ki_per_s: float = 10.0
    force_correction_max_n: float = 100.0
    #: a measured force older than this [s] is not integrated
    force_timeout_s: float = 0.05
    measured_contact_veto = False

    def __post_init__(self) -> None:
        for key in ("radius_m", "period_s", "plate_below_m", "approach_s", "force_ramp_s"):
            value = getattr(self, key)
            if not (math.isfinite(value) and value > 0):
                raise InputError(f"rig behaviour: {key} must be positive and finite, got {value}")
        if not (isinstance(self.turns, int) and self.turns >= 2):
            raise InputError(f"rig behaviour: turns must be an integer >= 2 (ramp in, ramp out), got {self.turns}")
        if not (math.isfinite(self.press_force_n) and self.press_force_n >= 0):
            raise InputError(f"rig behaviour: press_force_n must be >= 0 [N], got {self.press_force_n}")
        for key in ("press_depth_m", "force_ki_per_s", "force_correction_max_n", "force_timeout_s"):
            value = getattr(self, key)
            if not (math.isfinite(value) and value >= 0):
                raise InputError(f"rig behaviour: {key} must be >= 0 and finite, got {value}")
        self.phase = "circle"
        #: the integral correction of the press's normal force [N] (module docstring)
        self.force_correction_n = 0.0
        self._measured: tuple[float, float] | None = None  # (normal force [N], stamp [s])
        self._last_tau: float | None = None

    def measure_normal_force(self, newtons: float, stamp_s: float) -> None:
        """The sole's measured normal force [N] (e.g. the rig's force plate) at time ``stamp_s`` [s]
        (the clock of :meth:`references`); a non-finite value is ignored."""
        if math.isfinite(newtons) and math.isfinite(stamp_s):
            self._measured = (float(newtons), float(stamp_s))

    def _on_start(self) -> None:
        for key in ("sole", "fixture"):
            name = getattr(self, key)
            if name not in self.state.soles:
                raise InputError(f"rig behaviour: {key} {name!r} is not a contact; contacts are "
                                 f"{list(self.state.soles)}")
        self._R, self._center = (a.copy() for a in self.state.soles[self.sole])
        forward = self.state.base_rotation[:, 0].copy()
        forward[2] = 0.0
        self._ex, self._ez = forward / np.linalg.norm(forward), np.array([0.0, 0.0, 1.0])
        self._t_circle = self.turns * self.period_s
        self._t_press = self._t_circle + self.approach_s
        self._low = self._center - (self.plate_below_m + self.press_depth_m) * self._ez

    def circle(self, tau: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The circle's position [m], velocity [m/s] and acceleration [m/s²] ``tau`` [s] after the start."""
        T, w = self.period_s, 2 * math.pi / self.period_s
        tau = min(max(tau, 0.0), self._t_circle)
        up, dup, ddup = min_jerk(tau / T)
        down, ddown, dddown = min_jerk((self._t_circle - tau) / T)
        a = self.radius_m * up * down
        da = self.radius_m * (dup * down - up * ddown) / T
        dda = self.radius_m * (ddup * down - 2 * dup * ddown + up * dddown) / T**2
        u = math.sin(w * tau) * self._ex + math.cos(w * tau) * self._ez
        du = w * (math.cos(w * tau) * self._ex - math.sin(w * tau) * self._ez)
        ddu = -(w**2) * u
        return self._center + a * u, da * u + a * du, dda * u + 2 * da * du + a * ddu

    def _references(self, tau: float) -> WbcReferences:
        zero = np.zeros(3)
        if tau < self._t_press:
            if tau < self._t_circle:
                self.phase = "circle"
                p, v, acc = self.circle(tau)
            else:
                self.phase = "approach"
                p, v, acc = blend(self._center, self._low, tau - self._t_circle, self.approach_s)
            foot = FrameReference(position=p, rotation=self._R, twist=np.concatenate([v, zero]),
                                  acceleration=np.concatenate([acc, zero]))
            return WbcReferences(active_contacts=(self.fixture,), base_rotation=self.state.base_rotation,
                                 foot_poses={self.sole: foot}, contact_normal_force={self.sole: None})
        self.phase = "press"
        s, _, _ = min_jerk((tau - self._t_press) / self.force_ramp_s)
        desired = s * self.press_force_n
        measured, last = self._measured, self._last_tau
        self._last_tau = tau
        if (measured is not None and last is not None and self.force_ki_per_s > 0
                and abs(self.t0 + tau - measured[1]) <= self.force_timeout_s):
            limit = self.force_correction_max_n
            integral = self.force_correction_n + self.force_ki_per_s * (desired - measured[0]) * (tau - last)
            self.force_correction_n = min(max(integral, -limit), limit)
        force = max(desired + self.force_correction_n, 0.0)
        return WbcReferences(active_contacts=(self.fixture, self.sole), base_rotation=self.state.base_rotation,
                             contact_normal_force={self.sole: force})

    @property
    def circle_s(self) -> float:
        """Length of the circle phase [s]."""
        return self.turns * self.period_s

    @property
    def press_starts_s(self) -> float:
        """Time from the start to the press phase [s]."""
        return self.turns * self.period_s + self.approach_s

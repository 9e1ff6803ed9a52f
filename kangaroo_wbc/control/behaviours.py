"""Balance behaviours: task references over time for :class:`~kangaroo_wbc.control.wbc.WholeBodyController`.

A behaviour is started from the robot's current state (:class:`BehaviourState`: CoM, base rotation,
sole poses) and then maps time to :class:`~kangaroo_wbc.control.wbc.WbcReferences`. Trajectories
are smooth (minimum-jerk blends, sinusoids with ramped amplitude) and carry their velocity and
acceleration feed-forward terms.

* :class:`Stand` — hold the CoM and the base orientation (balance).
* :class:`Squat` — CoM height cycles (the leg-length actuators do most of the work).
* :class:`LateralSway` — CoM (hence ZMP, quasi-statically) moves sideways between the feet.
* :class:`WeightShift` — CoM over one sole, lift the other (single support), hold, put it back.
* :class:`PushRecovery` — stand with stiffer CoM and angular-momentum damping after a push.
* :class:`RigCircleAndPress` — on the one-leg test bench: the sole circles in the air, then presses
  a force plate (:data:`RIG_BEHAVIOURS`).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from kangaroo_wbc.control.wbc import FrameReference, WbcReferences
from kangaroo_wbc.errors import InputError


def min_jerk(tau: float) -> tuple[float, float, float]:
    """Minimum-jerk blend ``s(τ) = 10τ³ - 15τ⁴ + 6τ⁵`` and its first two derivatives, τ clipped to [0, 1]."""
    t = min(max(tau, 0.0), 1.0)
    s = t**3 * (10 - 15 * t + 6 * t**2)
    ds = 30 * t**2 * (1 - t) ** 2
    dds = 60 * t * (1 - t) * (1 - 2 * t)
    return s, ds, dds


def blend(p0: np.ndarray, p1: np.ndarray, t: float, duration: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Minimum-jerk move from ``p0`` to ``p1`` over ``duration`` [s]: position, velocity, acceleration."""
    s, ds, dds = min_jerk(t / duration)
    d = p1 - p0
    return p0 + s * d, ds / duration * d, dds / duration**2 * d


@dataclass
class BehaviourState:
    """Robot state a behaviour starts from (world frame).

    Attributes:
        com: CoM position [m].
        base_rotation: base orientation (3, 3).
        soles: contact name → (rotation (3, 3), position (3,) [m]) of each sole frame.
        contacts: names of the soles in contact.
        actuators: actuator name → position [m or rad], in the controller's actuator order.
    """

    com: np.ndarray
    base_rotation: np.ndarray
    soles: dict[str, tuple[np.ndarray, np.ndarray]]
    contacts: tuple[str, ...]
    actuators: dict[str, float] = field(default_factory=dict)

    @classmethod
    def from_controller(cls, wbc) -> BehaviourState:
        """Current state of a :class:`WholeBodyController` (after at least one ``step``)."""
        pm = wbc.pm
        R_base, _ = pm.placement(wbc.settings.base_frame)
        soles = {c.name: tuple(a.copy() for a in pm.placement(c.frame)) for c in wbc.contacts}
        theta = pm.q[wbc.clm.idx_q_a]
        return cls(com=pm.com.copy(), base_rotation=R_base.copy(), soles=soles, contacts=tuple(wbc.active_contacts),
                   actuators=dict(zip(wbc.clm.actuated_joint_names, theta.tolist())))


@dataclass
class Behaviour(ABC):
    """Maps time since :meth:`start` [s] to WBC references."""

    name: str = "behaviour"
    state: BehaviourState | None = field(default=None, init=False, repr=False)
    t0: float = field(default=0.0, init=False)
    #: whether sensing may drop a contact of the plan (a sole measured unloaded; the supervisor's
    #: measured contacts). A gait plans every contact change itself: a sole it unloads before a
    #: lift-off is still on the ground, and dropping it early on a lagging force estimate made the
    #: walk fall in the real-time node graph.
    measured_contact_veto = True

    def start(self, t: float, state: BehaviourState) -> None:
        """Start at time ``t`` [s] from ``state``."""
        self.t0 = float(t)
        self.state = state
        self._on_start()

    def _on_start(self) -> None:  # noqa: B027 - optional hook
        pass

    def references(self, t: float) -> WbcReferences:
        """References at absolute time ``t`` [s]."""
        if self.state is None:
            raise InputError(f"behaviour {self.name!r} used before start()")
        return self._references(max(t - self.t0, 0.0))

    @abstractmethod
    def _references(self, tau: float) -> WbcReferences:
        """References ``tau`` seconds after the start."""

    def finished(self, t: float) -> bool:
        """Whether the behaviour has completed (it keeps returning its final references)."""
        return False

    def observe(self, com: np.ndarray, com_velocity: np.ndarray,  # noqa: B027 - optional hook
                actuators: np.ndarray | None = None) -> None:
        """The measured CoM [m] and its velocity [m/s] (world) and the actuator positions [m or rad]
        (in :attr:`BehaviourState.actuators`' order) of this tick, before :meth:`references`
        (behaviours that plan from the measured state use them; the others ignore them)."""

    def _all_contacts(self) -> tuple[str, ...]:
        return tuple(self.state.soles)


@dataclass
class Stand(Behaviour):
    """Hold the CoM above the middle of the soles at its starting height (``com_offset_m`` added)."""

    name: str = "stand"
    com_offset_m: tuple[float, float, float] = (0.0, 0.0, 0.0)
    center_over_feet: bool = True
    settle_s: float = 1.0

    def _on_start(self) -> None:
        target = self.state.com.copy()
        if self.center_over_feet:
            target[:2] = np.mean([p for _, p in self.state.soles.values()], axis=0)[:2]
        self._target = target + np.asarray(self.com_offset_m, dtype=float)

    def _references(self, tau: float) -> WbcReferences:
        p, v, a = blend(self.state.com, self._target, tau, self.settle_s)
        return WbcReferences(active_contacts=self._all_contacts(), com_position=p, com_velocity=v,
                             com_acceleration=a, base_rotation=self.state.base_rotation)


@dataclass
class Squat(Behaviour):
    """CoM height ``z(t) = z0 - depth/2 (1 - cos(2π t / period))`` for ``cycles`` periods [m, s].

    The CoM keeps its starting horizontal position (start from a centred :class:`Stand`).
    """

    name: str = "squat"
    depth_m: float = 0.05
    period_s: float = 4.0
    cycles: int = 2

    def _references(self, tau: float) -> WbcReferences:
        w = 2 * math.pi / self.period_s
        tau = min(tau, self.cycles * self.period_s)
        z = -0.5 * self.depth_m * (1 - math.cos(w * tau))
        dz = -0.5 * self.depth_m * w * math.sin(w * tau)
        ddz = -0.5 * self.depth_m * w**2 * math.cos(w * tau)
        if tau >= self.cycles * self.period_s:
            dz = ddz = 0.0
        e = np.array([0.0, 0.0, 1.0])
        com = self.state.com
        return WbcReferences(active_contacts=self._all_contacts(), com_position=com + z * e, com_velocity=dz * e,
                             com_acceleration=ddz * e, base_rotation=self.state.base_rotation)

    def finished(self, t: float) -> bool:
        return t - self.t0 >= self.cycles * self.period_s


@dataclass
class LateralSway(Behaviour):
    """CoM sways sideways between the soles: ``y = y_mid + ratio · half_gap · sin(2π t / period)``.

    ``ratio`` in [0, 1) is the fraction of the half distance between the sole centres; the
    amplitude ramps in over the first period; the sway is centred on the starting CoM.
    """

    name: str = "sway"
    ratio: float = 0.6
    period_s: float = 3.0
    cycles: int = 3

    def _on_start(self) -> None:
        soles = [p for _, p in self.state.soles.values()]
        if len(soles) < 2:
            raise InputError("lateral sway needs two soles")
        gap = soles[0] - soles[1]
        gap[2] = 0.0
        self._axis = gap / np.linalg.norm(gap)
        self._half_gap = 0.5 * float(np.linalg.norm(gap))

    def _references(self, tau: float) -> WbcReferences:
        T = self.period_s
        tau = min(tau, self.cycles * T)
        w = 2 * math.pi / T
        amp = self.ratio * self._half_gap
        ramp, dramp, ddramp = min_jerk(tau / T)
        dramp, ddramp = dramp / T, ddramp / T**2
        s, ds, dds = math.sin(w * tau), w * math.cos(w * tau), -(w**2) * math.sin(w * tau)
        y = amp * ramp * s
        dy = amp * (dramp * s + ramp * ds)
        ddy = amp * (ddramp * s + 2 * dramp * ds + ramp * dds)
        if tau >= self.cycles * T:
            dy = ddy = 0.0
        mid = self.state.com
        return WbcReferences(active_contacts=self._all_contacts(), com_position=mid + y * self._axis,
                             com_velocity=dy * self._axis, com_acceleration=ddy * self._axis,
                             base_rotation=self.state.base_rotation)

    def finished(self, t: float) -> bool:
        return t - self.t0 >= self.cycles * self.period_s


@dataclass
class WeightShift(Behaviour):
    """Shift the CoM over ``stance`` sole, lift the other one (single support), hold, put it back.

    Phases [s]: shift ``shift_s``, lift ``lift_s`` (to ``lift_height_m``), hold ``hold_s``, lower
    ``lift_s`` (the sole ends ``touchdown_depth_m`` below its start height, pressing on the floor),
    shift back ``shift_s``. The swing sole is a contact again from the end of the lowering phase.
    """

    name: str = "weight_shift"
    stance: str = "left"
    shift_s: float = 2.0
    lift_s: float = 1.0
    hold_s: float = 2.0
    lift_height_m: float = 0.05
    touchdown_depth_m: float = 0.002
    com_inset_m: float = 0.0

    def _on_start(self) -> None:
        if self.stance not in self.state.soles:
            raise InputError(f"unknown stance sole {self.stance!r}; soles are {list(self.state.soles)}")
        others = [n for n in self.state.soles if n != self.stance]
        if not others:
            raise InputError("weight shift needs a second sole")
        self.swing = others[0]
        R_st, p_st = self.state.soles[self.stance]
        com0 = self.state.com.copy()
        over = com0.copy()
        over[:2] = p_st[:2]
        towards = com0[:2] - p_st[:2]
        dist = float(np.linalg.norm(towards))
        if dist > 0 and self.com_inset_m:
            over[:2] += self.com_inset_m * towards / dist
        self._com_mid, self._com_over = com0, over
        self._t = np.cumsum([self.shift_s, self.lift_s, self.hold_s, self.lift_s, self.shift_s])

    def _swing_ref(self, tau_phase: float, up: bool) -> FrameReference:
        R, p0 = self.state.soles[self.swing]
        top = p0 + np.array([0.0, 0.0, self.lift_height_m])
        low = p0 - np.array([0.0, 0.0, self.touchdown_depth_m])
        a, b = (p0, top) if up else (top, low)
        p, v, acc = blend(a, b, tau_phase, self.lift_s)
        return FrameReference(position=p, rotation=R, twist=np.concatenate([v, np.zeros(3)]),
                              acceleration=np.concatenate([acc, np.zeros(3)]))

    def _references(self, tau: float) -> WbcReferences:
        t1, t2, t3, t4, t5 = self._t
        both = self._all_contacts()
        single = (self.stance,)
        R_base = self.state.base_rotation
        if tau < t1:
            p, v, a = blend(self._com_mid, self._com_over, tau, self.shift_s)
            return WbcReferences(active_contacts=both, com_position=p, com_velocity=v, com_acceleration=a,
                                 base_rotation=R_base)
        if tau < t4:
            if tau < t2:
                foot = self._swing_ref(tau - t1, up=True)
            elif tau < t3:
                R, p0 = self.state.soles[self.swing]
                foot = FrameReference(position=p0 + np.array([0.0, 0.0, self.lift_height_m]), rotation=R)
            else:
                foot = self._swing_ref(tau - t3, up=False)
            return WbcReferences(active_contacts=single, com_position=self._com_over, com_velocity=np.zeros(3),
                                 com_acceleration=np.zeros(3), base_rotation=R_base, foot_poses={self.swing: foot})
        p, v, a = blend(self._com_over, self._com_mid, tau - t4, self.shift_s)
        return WbcReferences(active_contacts=both, com_position=p, com_velocity=v, com_acceleration=a,
                             base_rotation=R_base)

    def finished(self, t: float) -> bool:
        return t - self.t0 >= self._t[-1]


@dataclass
class PushRecovery(Stand):
    """Stand, with gains meant for rejecting pushes (applied by the caller, not here).

    ``gains`` are overrides of the :class:`~kangaroo_wbc.control.wbc.WbcSettings` fields of the same
    names for the caller to apply while the behaviour runs (stiffer CoM, stronger angular-momentum
    damping).
    """

    name: str = "push_recovery"
    gains: Mapping[str, float] = field(default_factory=lambda: {"com_kp": 150.0, "com_kd": 30.0,
                                                                 "angular_momentum_kd": 10.0,
                                                                 "angular_momentum_weight": 0.05})


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


BEHAVIOURS = {"stand": Stand, "squat": Squat, "sway": LateralSway, "weight_shift": WeightShift,
              "push_recovery": PushRecovery}
#: Behaviours of a test bench: they need the rig's clamp (a bilateral fixture contact,
#: :mod:`kangaroo_wbc.control.rig`), so they are not offered on the free robot (:data:`BEHAVIOURS`,
#: the command line's and the launch file's choices) but :func:`make_behaviour` builds them.
RIG_BEHAVIOURS = {"rig": RigCircleAndPress}

# the locomotion behaviours (walk, jump) build on Behaviour and add themselves to BEHAVIOURS when
# their module is imported: here, after both are defined, so that either module may come first
from kangaroo_wbc.control import locomotion  # noqa: E402,F401


def make_behaviour(name: str, **kwargs) -> Behaviour:
    """Behaviour by name (``stand``, ``squat``, ``sway``, ``weight_shift``, ``push_recovery``, ``walk``, ``jump``;
    on a test bench ``rig``)."""
    cls = BEHAVIOURS.get(name) or RIG_BEHAVIOURS.get(name)
    if cls is None:
        raise InputError(f"unknown behaviour {name!r}; known: {sorted(BEHAVIOURS)} "
                         f"(test bench: {sorted(RIG_BEHAVIOURS)})")
    return cls(**kwargs)


__all__ = ["Behaviour", "BehaviourState", "Stand", "Squat", "LateralSway", "WeightShift", "PushRecovery",
           "RigCircleAndPress", "BEHAVIOURS", "RIG_BEHAVIOURS", "make_behaviour", "min_jerk", "blend"]

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

    def observe(self, com: np.ndarray, com_velocity: np.ndarray) -> None:  # noqa: B027 - optional hook
        """The measured CoM [m] and its velocity [m/s] (world) of this tick, before :meth:`references`
        (behaviours that plan from the measured state use it; the others ignore it)."""

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


BEHAVIOURS = {"stand": Stand, "squat": Squat, "sway": LateralSway, "weight_shift": WeightShift,
              "push_recovery": PushRecovery}

# the locomotion behaviours (walk, jump) build on Behaviour and add themselves to BEHAVIOURS when
# their module is imported: here, after both are defined, so that either module may come first
from kangaroo_wbc.control import locomotion  # noqa: E402,F401


def make_behaviour(name: str, **kwargs) -> Behaviour:
    """Behaviour by name (``stand``, ``squat``, ``sway``, ``weight_shift``, ``push_recovery``, ``walk``, ``jump``)."""
    if name not in BEHAVIOURS:
        raise InputError(f"unknown behaviour {name!r}; known: {sorted(BEHAVIOURS)}")
    return BEHAVIOURS[name](**kwargs)


__all__ = ["Behaviour", "BehaviourState", "Stand", "Squat", "LateralSway", "WeightShift", "PushRecovery",
           "BEHAVIOURS", "make_behaviour", "min_jerk", "blend"]

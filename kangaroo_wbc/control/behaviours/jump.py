"""The knee-only jump (``docs/locomotion.md``, "Jump"): crouch, push, flight, landing, recovery."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from kangaroo_wbc.control.behaviours.base import Behaviour, min_jerk, quintic
from kangaroo_wbc.control.behaviours.walk import GRAVITY
from kangaroo_wbc.control.wbc import WbcReferences
from kangaroo_wbc.errors import InputError


@dataclass
class Jump(Behaviour):
    """In-place vertical jump driven by the leg-length actuators (the Kangaroo paper's Fig. 13).

    The CoM moves vertically above the soles' middle; the whole-body controller distributes the
    motion over the leg actuators (the leg-length actuators take most of it; in the model as built a
    vertical crouch also needs hip pitch, which turns the sole, and the ankle actuators cancel that:
    docs/locomotion.md).

    Phases (``phase``), CoM height ``z`` relative to standing ``z0``: ``crouch`` (down ``crouch_m``
    in ``crouch_s``, min-jerk, the pelvis pitching ``crouch_pitch_rad`` forward), ``hold``
    (``hold_s``), ``push`` (quintic to the take-off state: ``z0 + takeoff_height_m``,
    ``takeoff_velocity_mps`` up and ``-g``, so that the contact forces vanish, in ``push_s``; the
    pelvis pitches back with the CoM height, ``push_pitch_gain_rad_per_m`` per metre, and the
    angular-momentum task is weighted ``push_momentum_weight``, the base orientation
    ``push_base_weight``: in this leg a vertical CoM velocity with the pelvis upright carries pitch
    angular momentum, which the flight keeps; the stroke-limit horizon shortens to
    ``push_stroke_horizon_s``: the legs extend fast near their stroke end), ``flight`` (no contact;
    the legs held in actuator space at the strokes measured at the switch to flight, the leg-length
    actuators at ``flight_leg_length_m`` (nearly straight: the sole forward, under the CoM), with the
    posture gains ``flight_posture_kp`` / ``flight_posture_kd``, the CoM, sole and base tasks off for the tick:
    :attr:`WbcReferences.task_weights`; touchdown expected ``2 v / g`` after the switch to flight,
    ``v`` the vertical CoM velocity measured then), ``landing`` (both soles in contact; the flight
    posture held for ``landing_hold_s``; quintic from the measured CoM height and velocity to
    ``landing_crouch_m`` below standing in ``landing_s``), ``recover`` (back to standing in
    ``recover_s``), ``done`` (stand). With the ankles held a flat-footed push moves the CoM mostly
    horizontally in this model (docs/locomotion.md), so the push uses them.
    """

    name: str = "jump"
    measured_contact_veto = False  # the jump plans its contacts (Behaviour.measured_contact_veto)
    crouch_m: float = 0.08
    crouch_s: float = 1.0
    hold_s: float = 0.3
    push_s: float = 0.15
    takeoff_height_m: float = -0.01
    takeoff_velocity_mps: float = 1.3
    push_stroke_horizon_s: float = 0.01
    #: the pelvis pitched forward in the crouch [rad] and pitched back in the push with the CoM
    #: height, ``push_pitch_gain_rad_per_m`` per metre of rise (rate and acceleration fed forward);
    #: the push weights the angular-momentum task ``push_momentum_weight`` and the base orientation
    #: ``push_base_weight`` (docs/locomotion.md: the lift-off momentum against the apex)
    crouch_pitch_rad: float = 0.15
    push_pitch_gain_rad_per_m: float = 3.5
    push_momentum_weight: float = 1.0
    push_base_weight: float = 0.1
    landing_crouch_m: float = 0.05
    landing_s: float = 0.6
    recover_s: float = 1.5
    #: flight: the legs held in actuator space at the strokes measured at the switch to flight, the
    #: leg-length actuators at ``flight_leg_length_m`` [m of stroke] (nearly straight: this leg's
    #: leg-length actuator moves the sole forward as it extends, which keeps the soles under the
    #: CoM while the body pitches in the air), posture weight ``flight_posture_weight``; the CoM,
    #: sole and base-orientation tasks off (nothing but the legs can move in the air)
    flight_leg_length_m: float = 0.005
    flight_posture_weight: float = 10.0
    #: the posture task's ``(kp, kd)`` in the flight and the landing's hold: the legs leave the
    #: ground extending at up to 1 m/s of stroke and must stop within millimetres (0: its own gains)
    flight_posture_kp: float = 1000.0
    flight_posture_kd: float = 60.0
    #: touchdown expected ``2 v / g`` after the switch to flight, ``v`` the measured vertical CoM
    #: velocity then; the landing's contacts start ``touchdown_lead_s`` before it
    touchdown_lead_s: float = 0.0
    #: landing: the legs' flight posture held as in flight for ``landing_hold_s``, the CoM task
    #: weighted ``landing_com_weight`` meanwhile
    landing_hold_s: float = 0.1
    landing_com_weight: float = 1.0

    PHASES = ("crouch", "hold", "push", "flight", "landing", "recover", "done")
    TRACE = ("phase", "com_z_ref")

    def __post_init__(self) -> None:
        for name in ("crouch_s", "hold_s", "push_s", "landing_s", "recover_s", "takeoff_velocity_mps",
                     "push_stroke_horizon_s"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
                raise InputError(f"jump: {name} must be a positive finite number, got {value!r}")
        for name in ("flight_leg_length_m", "flight_posture_weight", "flight_posture_kp", "flight_posture_kd",
                     "touchdown_lead_s", "landing_hold_s",
                     "landing_com_weight", "push_pitch_gain_rad_per_m", "push_momentum_weight", "push_base_weight"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value >= 0):
                raise InputError(f"jump: {name} must be a finite number >= 0, got {value!r}")
        if not (0.0 <= self.crouch_m <= 0.15 and 0.0 <= self.landing_crouch_m <= 0.15
                and -self.crouch_m < self.takeoff_height_m <= 0.05 and self.takeoff_velocity_mps <= 2.0
                and isinstance(self.crouch_pitch_rad, (int, float)) and abs(self.crouch_pitch_rad) <= 0.5
                and self.push_pitch_gain_rad_per_m <= 10.0):
            raise InputError("jump: crouch_m and landing_crouch_m must lie in [0, 0.15] m, takeoff_height_m in "
                             "(-crouch_m, 0.05] m, takeoff_velocity_mps in (0, 2] m/s, crouch_pitch_rad in "
                             "[-0.5, 0.5] rad, push_pitch_gain_rad_per_m in [0, 10] rad/m")

    @property
    def phase(self) -> str:
        return self._phase

    @property
    def flight_time_planned_s(self) -> float:
        """The predicted flight [s]: ``2 v / g``."""
        return 2.0 * self.takeoff_velocity_mps / GRAVITY

    def observe(self, com: np.ndarray, com_velocity: np.ndarray, actuators: np.ndarray | None = None) -> None:
        self._measured = (np.array(com, dtype=float), np.array(com_velocity, dtype=float))
        self._measured_strokes = None if actuators is None else np.array(actuators, dtype=float)

    def trace(self) -> np.ndarray:
        """This tick's phase (index in :attr:`PHASES`) and CoM height reference [m]."""
        return np.array([self.PHASES.index(self._phase), self._z])

    def _on_start(self) -> None:
        st = self.state
        self._xy = np.mean([p for _, p in st.soles.values()], axis=0)[:2]
        self._z0 = float(st.com[2])
        self._z, self._phase = self._z0, "crouch"
        self._measured: tuple[np.ndarray, np.ndarray] | None = None
        #: measured CoM position and velocity at the switch to flight
        self._takeoff: tuple[np.ndarray, np.ndarray] | None = None
        self._landed_at: float | None = None  # time of the touchdown [s since the start]
        self._landing_from: tuple[float, float, float] | None = None
        self._ends = dict(zip(("crouch", "hold", "push"), np.cumsum([self.crouch_s, self.hold_s, self.push_s])))
        names = list(st.actuators)
        self._standing_strokes = np.array([st.actuators[n] for n in names], dtype=float)
        self._leg_length = [i for i, n in enumerate(names) if "leg_length" in n]
        self._measured_strokes: np.ndarray | None = None
        self._flight_posture = self._in_flight(self._standing_strokes)

    def _in_flight(self, strokes: np.ndarray) -> np.ndarray:
        """The flight posture: ``strokes`` with the leg-length actuators at ``flight_leg_length_m``."""
        posture = np.array(strokes, dtype=float)
        posture[self._leg_length] = self.flight_leg_length_m
        return posture

    def _pelvis_pitch(self, tau: float, z: tuple[float, float, float]) -> tuple[float, float, float]:
        """The pelvis pitch [rad] (forward positive), its rate and acceleration: ``crouch_pitch_rad``
        reached with the crouch, then in the push ``crouch_pitch_rad - k (z - z_crouch)``, ``z`` the
        CoM height reference (with its rate and acceleration) and ``k`` ``push_pitch_gain_rad_per_m``."""
        e, p0 = self._ends, self.crouch_pitch_rad
        if tau < e["crouch"]:
            s, ds, dds = min_jerk(tau / self.crouch_s)
            return s * p0, ds * p0 / self.crouch_s, dds * p0 / self.crouch_s**2
        if tau < e["hold"]:
            return p0, 0.0, 0.0
        k, zc = self.push_pitch_gain_rad_per_m, self._z0 - self.crouch_m
        return p0 - k * (z[0] - zc), -k * z[1], -k * z[2]

    def finished(self, t: float) -> bool:
        return self._landed_at is not None and t - self.t0 >= self._landed_at + self.landing_s + self.recover_s

    def _touchdown(self, t_flight: float) -> bool:
        """The flight's expected end: ``2 v / g`` after the switch to flight, ``v`` the measured
        vertical CoM velocity then (the legs keep their length in the air, so the CoM comes back to
        its take-off height at touchdown), at most twice the planned flight."""
        v = self.takeoff_velocity_mps if self._takeoff is None else max(float(self._takeoff[1][2]), 0.0)
        expected = min(2.0 * v / GRAVITY, 2.0 * self.flight_time_planned_s)
        return t_flight >= expected - self.touchdown_lead_s

    def _references(self, tau: float) -> WbcReferences:
        e, z0, g = self._ends, self._z0, GRAVITY
        contacts, feet, horizon, weights, gains = self._all_contacts(), {}, self.push_stroke_horizon_s, {}, {}
        held = {"posture": (self.flight_posture_kp, self.flight_posture_kd)} if self.flight_posture_kp > 0 else {}
        posture = None
        z_to, v_to = z0 + self.takeoff_height_m, self.takeoff_velocity_mps
        if tau < e["crouch"]:
            s, ds, dds = min_jerk(tau / self.crouch_s)
            d = -self.crouch_m
            phase, horizon = "crouch", None
            z, dz, ddz = z0 + s * d, ds * d / self.crouch_s, dds * d / self.crouch_s**2
        elif tau < e["hold"]:
            phase, horizon, (z, dz, ddz) = "hold", None, (z0 - self.crouch_m, 0.0, 0.0)
        elif tau < e["push"]:
            phase = "push"
            z, dz, ddz = quintic((z0 - self.crouch_m, 0.0, 0.0), (z_to, v_to, -g), self.push_s, tau - e["hold"])
            weights = {"angular_momentum": self.push_momentum_weight, "base_orientation": self.push_base_weight}
        elif self._landed_at is None and not self._touchdown(tau - e["push"]):
            phase, t, horizon = "flight", tau - e["push"], None
            if self._takeoff is None:
                com = self._measured if self._measured is not None else (self.state.com, np.r_[0.0, 0.0, v_to])
                self._takeoff = (com[0].copy(), com[1].copy())
                if self._measured_strokes is not None:  # the legs stay as they left the ground
                    self._flight_posture = self._in_flight(self._measured_strokes)
            zt, vt = float(self._takeoff[0][2]), float(self._takeoff[1][2])
            z, dz, ddz = zt + vt * t - 0.5 * g * t * t, vt - g * t, -g
            contacts, posture = (), self._flight_posture
            weights = {"com": 0.0, "base_orientation": 0.0, "posture": self.flight_posture_weight,
                       **{f"foot_{name}": 0.0 for name in self.state.soles}}
            gains = held
        else:
            if self._landed_at is None:  # touchdown: from the measured CoM height and velocity
                self._landed_at = tau
                zm, vm = ((float(self._measured[0][2]), float(self._measured[1][2])) if self._measured is not None
                          else (z_to, -v_to))
                self._landing_from = (zm, vm, 0.0)
            t = tau - self._landed_at
            horizon = None
            if t < self.landing_s:
                phase = "landing"
                if t < self.landing_hold_s:  # the impact on the held legs; the CoM task takes over after
                    posture = self._flight_posture
                    weights = {"posture": self.flight_posture_weight, "com": self.landing_com_weight}
                    gains = held
                z, dz, ddz = quintic(self._landing_from, (z0 - self.landing_crouch_m, 0.0, 0.0), self.landing_s, t)
            else:
                phase, horizon = "recover", None
                s, ds, dds = min_jerk((t - self.landing_s) / self.recover_s)
                d = self.landing_crouch_m
                z, dz, ddz = z0 - d + s * d, ds * d / self.recover_s, dds * d / self.recover_s**2
                if t >= self.landing_s + self.recover_s:
                    phase = "done"
        self._phase, self._z = phase, z
        # the CoM moves over the soles' middle while crouching (the start-up stand centred it already)
        s, ds, dds = min_jerk(tau / self.crouch_s)
        c0, c1 = self.state.com[:2], self._xy
        xy, dxy, ddxy = c0 + s * (c1 - c0), ds / self.crouch_s * (c1 - c0), dds / self.crouch_s**2 * (c1 - c0)
        # the pelvis' pitch about its own y axis, from the crouch through the push; upright again after
        R0 = self.state.base_rotation
        pushing = phase in ("crouch", "hold", "push")
        pitch, rate, acc = self._pelvis_pitch(tau, (z, dz, ddz)) if pushing else (0.0, 0.0, 0.0)
        c, sn = math.cos(pitch), math.sin(pitch)
        axis = R0[:, 1]
        return WbcReferences(active_contacts=contacts, com_position=np.array([xy[0], xy[1], z]),
                             com_velocity=np.array([dxy[0], dxy[1], dz]),
                             com_acceleration=np.array([ddxy[0], ddxy[1], ddz]),
                             base_rotation=R0 @ np.array([[c, 0.0, sn], [0.0, 1.0, 0.0], [-sn, 0.0, c]]),
                             base_angular_velocity=rate * axis, base_angular_acceleration=acc * axis,
                             foot_poses=feet, stroke_horizon_s=horizon, posture=posture, task_weights=weights,
                             task_gains=gains)

"""Optional ankle force/torque sensors compared with the estimated sole wrenches (issue #37).

A sensor (``force_torque_sensor_broadcaster``'s ``~/wrench``, ``docs/ros2_control.md``) at frame
``S`` of the foot reads the wrench the foot exerts on the leg through it, ``[f_S; τ_S]`` about
``S``'s origin in ``S``'s axes. Quasi-statically the foot below the sensor (the inertia of the
sensor frame's parent body, mass ``m_f``, CoM ``c``) carries the ground's wrench and its weight:

.. math::

    f_{gr} = R_S f_S - m_f g, \\qquad
    τ_{gr}(p_S) = R_S τ_S - (c - p_S) × m_f g, \\qquad
    τ_{gr}(p_C) = τ_{gr}(p_S) + (p_S - p_C) × f_{gr}

with ``g = (0, 0, -9.81)`` [m/s²] in the world and ``R_S, p_S`` / ``p_C`` the sensor's and the
sole's placement at the estimator's configuration; the ground's wrench on the sole in the sole's
axes is ``R_Cᵀ [f_gr; τ_gr(p_C)]``, its CoP ``(-τ_y / f_z, τ_x / f_z)``. The foot's own
acceleration is neglected (``m_f a``: a 1.6 kg foot at 10 m/s² is 16 N, within the walking
threshold; standing, nothing).

With a ``low_pass`` (the estimator's own Butterworth filter: cutoff, rate, order) the measured sole
wrench goes through the same filter as the estimate before the comparison, at each estimate (the
latest sample held between samples): the estimate lags the raw sensor by the filter's delay, which
alone would show as a difference while the load moves.

Per sole the comparison gives the force difference ``‖f_meas - f_est‖`` [N], the CoP difference
``‖cop_meas - cop_est‖`` [m] (both loaded above ``min_normal_force_n``) and the sample's age [s];
the ``ankle_ft`` status is WARN when a difference exceeds its threshold or a sample is older than
``max_age_s``, OK otherwise, and OK "no F/T" while none has arrived: the sensors are never required.
Bad samples (non-finite, another frame, an unknown sensor) are skipped with an event naming them.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from kangaroo_wbc.components.samples import Level, Status
from kangaroo_wbc.errors import FrameNotFound, InputError, suggest
from kangaroo_wbc.estimation.filters import ButterworthFilter

GRAVITY_M_S2 = 9.81


@dataclass(frozen=True)
class AnkleFtSensor:
    """One ankle sensor: its broadcaster (topic ``/<broadcaster>/wrench``), the ``frame_id`` its
    messages carry (a frame of the model) and the sole frame it is compared with."""

    broadcaster: str
    frame_id: str
    sole: str


@dataclass(frozen=True)
class AnkleFtSettings:
    """Thresholds of the comparison."""

    max_force_difference_n: float = 30.0  #: [N] WARN above
    max_cop_difference_m: float = 0.03  #: [m] WARN above
    max_age_s: float = 0.1  #: [s] a sample older than this than the estimate is stale: not compared
    min_normal_force_n: float = 10.0  #: [N] CoPs compared above this normal force (both)


@dataclass
class AnkleFtReading:
    """The latest accepted sample of one sensor."""

    force_in_sensor: np.ndarray
    torque_in_sensor: np.ndarray
    stamp_s: float


class AnkleFtComparison:
    """Measured ankle wrenches against the estimator's sole wrenches (module docstring).

    Args:
        model: the pinocchio model (its frames and inertias).
        sensors: the sensors; each sole at most once.
        settings: :class:`AnkleFtSettings`.
        event: where the events go (``Component.event`` of the component that owns it).
        low_pass: ``(cutoff_hz, sample_rate_hz, order)`` of the filter on the measured wrenches
            (module docstring); None: unfiltered.

    Raises:
        FrameNotFound: a sensor or sole frame the model does not have (the valid ones listed).
    """

    def __init__(self, model: pin.Model, sensors: list[AnkleFtSensor] | tuple[AnkleFtSensor, ...],
                 settings: AnkleFtSettings | None = None,
                 event: Callable[[Level, str, str], None] | None = None,
                 low_pass: tuple[float, float, int] | None = None) -> None:
        self.event = event or (lambda level, key, message: None)
        self._filters = ({s.broadcaster: ButterworthFilter(low_pass[0], low_pass[1], 6, low_pass[2]) for s in sensors}
                         if low_pass is not None else {})
        self.model, self.data = model, model.createData()
        self.sensors = {s.broadcaster: s for s in sensors}
        self.settings = settings or AnkleFtSettings()
        names = [f.name for f in model.frames]
        self._fid: dict[str, tuple[int, int]] = {}
        self._below: dict[str, tuple[float, np.ndarray]] = {}  # mass [kg], CoM in the sensor frame [m]
        for s in sensors:
            for name in (s.frame_id, s.sole):
                if not model.existFrame(name):
                    raise FrameNotFound(f"ankle F/T {s.broadcaster!r}: unknown frame {name!r}." + suggest(name, names))
            fs, fc = model.getFrameId(s.frame_id), model.getFrameId(s.sole)
            self._fid[s.broadcaster] = (fs, fc)
            frame = model.frames[fs]
            inertia = model.inertias[frame.parentJoint]  # the body below the sensor, in its joint's frame
            com_in_sensor = frame.placement.actInv(inertia.lever.copy())
            self._below[s.broadcaster] = (float(inertia.mass), np.asarray(com_in_sensor))
        self.readings: dict[str, AnkleFtReading] = {}
        #: per broadcaster the last comparison: force difference [N], CoP difference [m] (NaN: not
        #: both loaded), age [s]; and the measured ground wrench on the sole in the sole frame
        self.results: dict[str, dict[str, float]] = {}
        self.measured_wrench_sole_in_sole: dict[str, np.ndarray] = {}
        self.skipped = 0
        self.last_skipped = ""  #: why the last bad sample was skipped
        self._skipped_reported = 0
        self._stale: set[str] = set()

    def mass_below_kg(self, broadcaster: str) -> float:
        """The mass below ``broadcaster``'s sensor [kg] (its parent body's)."""
        return self._below[broadcaster][0]

    def on_wrench(self, broadcaster: str, frame_id: str, force: np.ndarray, torque: np.ndarray,
                  stamp_s: float) -> bool:
        """One sample of ``/<broadcaster>/wrench``; False (skipped, an event names why) if bad."""
        try:
            sensor = self.sensors.get(broadcaster)
            if sensor is None:
                raise InputError(f"unknown sensor {broadcaster!r} (known: {sorted(self.sensors)})")
            if frame_id != sensor.frame_id:
                raise InputError(f"frame_id {frame_id!r}, expected {sensor.frame_id!r}")
            f, t = np.asarray(force, dtype=float), np.asarray(torque, dtype=float)
            if f.shape != (3,) or t.shape != (3,) or not (np.all(np.isfinite(f)) and np.all(np.isfinite(t))):
                raise InputError("non-finite force or torque")
            if not math.isfinite(stamp_s):
                raise InputError("non-finite stamp")
        except InputError as exc:
            self.skipped += 1
            self.last_skipped = f"/{broadcaster}/wrench: {exc}"
            self.event(Level.WARN, f"ankle_ft {broadcaster}", f"/{broadcaster}/wrench sample skipped: {exc}")
            return False
        self.readings[broadcaster] = AnkleFtReading(f.copy(), t.copy(), float(stamp_s))
        return True

    def ground_wrench_in_sole(self, broadcaster: str, q: np.ndarray, force_in_sensor: np.ndarray,
                              torque_in_sensor: np.ndarray) -> np.ndarray:
        """The ground's wrench on the sole ``[f; τ]`` about the sole origin in its axes (6,)
        [N, N·m], from a reading at configuration ``q`` (module docstring)."""
        fs, fc = self._fid[broadcaster]
        pin.framesForwardKinematics(self.model, self.data, q)
        oMs, oMc = self.data.oMf[fs], self.data.oMf[fc]
        m_f, com_in_sensor = self._below[broadcaster]
        weight = np.array([0.0, 0.0, -m_f * GRAVITY_M_S2])
        p_s = oMs.translation
        f_gr = oMs.rotation @ force_in_sensor - weight
        tau_s = oMs.rotation @ torque_in_sensor - np.cross(oMs.rotation @ com_in_sensor, weight)
        tau_c = tau_s + np.cross(p_s - oMc.translation, f_gr)
        R_c = oMc.rotation
        return np.concatenate([R_c.T @ f_gr, R_c.T @ tau_c])

    def compare(self, q: np.ndarray, wrench_sole_in_sole: dict[str, np.ndarray], stamp_s: float) -> None:
        """Compare every sensor's latest reading with the estimate ``{sole: [f; τ]}`` (sole frame)
        of time ``stamp_s`` at configuration ``q``."""
        s = self.settings
        for name, sensor in self.sensors.items():
            r = self.readings.get(name)
            if r is None or sensor.sole not in wrench_sole_in_sole:
                continue
            age = stamp_s - r.stamp_s
            if abs(age) > s.max_age_s:
                if name not in self._stale:
                    self.event(Level.WARN, f"ankle_ft {name}", f"/{name}/wrench stale: {age:.3f} s from the estimate "
                               f"(limit {s.max_age_s:.3f} s), not compared")
                self._stale.add(name)
                if name in self._filters:
                    self._filters[name].reset(None)  # restarts at the next fresh sample
                self.results[name] = {"force_difference_n": math.nan, "cop_difference_m": math.nan, "age_s": age}
                continue
            self._stale.discard(name)
            meas = self.ground_wrench_in_sole(name, q, r.force_in_sensor, r.torque_in_sensor)
            if name in self._filters:
                meas = self._filters[name](meas).copy()
            est = np.asarray(wrench_sole_in_sole[sensor.sole], dtype=float)
            self.measured_wrench_sole_in_sole[name] = meas
            cop_diff = math.nan
            if meas[2] > s.min_normal_force_n and est[2] > s.min_normal_force_n:
                cop_m = np.array([-meas[4] / meas[2], meas[3] / meas[2]])
                cop_e = np.array([-est[4] / est[2], est[3] / est[2]])
                cop_diff = float(np.linalg.norm(cop_m - cop_e))
            self.results[name] = {"force_difference_n": float(np.linalg.norm(meas[:3] - est[:3])),
                                  "cop_difference_m": cop_diff, "age_s": float(age)}

    def status(self) -> Status:
        """The ``ankle_ft`` status (module docstring); samples skipped since the last call make it WARN."""
        s = self.settings
        new_skips, self._skipped_reported = self.skipped - self._skipped_reported, self.skipped
        values: dict = {"skipped": self.skipped, "last_skipped": self.last_skipped}
        problems = [f"{new_skips} F/T sample(s) skipped, last {self.last_skipped}"] if new_skips else []
        if not self.readings:
            if problems:
                return Status("ankle_ft", Level.WARN, "; ".join(problems), values)
            return Status("ankle_ft", Level.OK, "no F/T (optional)", values)
        for name, res in self.results.items():
            sole = self.sensors[name].sole
            for k, v in res.items():
                values[f"{sole}.{k}"] = v
            if name in self._stale:
                problems.append(f"{name} stale ({res['age_s']:.3f} s)")
            elif res["force_difference_n"] > s.max_force_difference_n:
                problems.append(f"{sole} force differs by {res['force_difference_n']:.1f} N "
                                f"(limit {s.max_force_difference_n:.1f} N)")
            elif res["cop_difference_m"] > s.max_cop_difference_m:  # NaN compares False
                problems.append(f"{sole} CoP differs by {res['cop_difference_m'] * 1e3:.1f} mm "
                                f"(limit {s.max_cop_difference_m * 1e3:.1f} mm)")
        if problems:
            return Status("ankle_ft", Level.WARN, "; ".join(problems), values)
        if not self.results:
            return Status("ankle_ft", Level.OK, "F/T received, not compared yet", values)
        return Status("ankle_ft", Level.OK, "F/T agrees with the estimate", values)

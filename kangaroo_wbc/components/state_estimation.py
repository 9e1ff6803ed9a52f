"""The ``state_estimator`` node's behaviour: calibration, passive state and floating base (paper §VI-A).

Per ``actuators/state`` sample (:meth:`StateEstimation.step`):

1. **Order**: a sample older than the newest one is skipped
   (:class:`~kangaroo_wbc.estimation.stamp_order.StampOrder`); ``clock_restart_samples`` of them in
   a row are a restarted clock (hardware or simulator restart): the estimates and the calibration
   are dropped and the robot is recalibrated.
2. **Encoder sanity** (:mod:`~kangaroo_wbc.estimation.encoder_sanity`): a reading that jumps faster
   than the actuator can move is skipped; a persistent jump or a frozen reading drops the
   calibration (recalibration, which needs the robot still).
3. **Calibration** while uncalibrated: ``calibration_samples`` still samples with fresh
   ``passive_encoders/state`` are averaged and the relative encoders calibrated (eq. (41)-(42));
   a failed attempt is reported and the next window is tried.
4. **Estimation** once calibrated: the passive-state estimator (eq. (35)-(40)) and, with a fresh
   IMU sample, the floating-base estimator (IMU + leg odometry, contacts from the soles' normal
   forces with hysteresis; every sole in contact while no fresh force arrives).
5. **On the crane.** By the start-up contract the robot hangs still until the controller is ready
   (``wbc/ready``): until :meth:`StateEstimation.set_released` says otherwise after a
   (re)calibration, the floating base takes zero-velocity updates instead of leg odometry (the
   soles carry no weight yet) and estimates the gyro bias; its anchors are taken when the robot
   is released. Without the handshake (``held_until_ready`` False) the robot is taken as standing.

Nothing non-finite leaves :meth:`StateEstimation.step`; the ROS node and the composed loop publish
what it returns.

**Locked or limp actuators** (issue #25) need nothing here: the estimators read positions, never
motor torques, a locked actuator's encoder still reads (still, with its noise: neither a jump nor a
freeze) and the closed chain keeps its joints, and the soles' normal forces come from the
contact-wrench estimator, which is told the modes
(:meth:`~kangaroo_wbc.components.contact_wrench.ContactWrenchEstimation.set_actuator_mode`).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from kangaroo_wbc.components.base import Component
from kangaroo_wbc.components.samples import (
    ActuatorSample,
    EncoderSample,
    ImuSample,
    Level,
    Status,
)
from kangaroo_wbc.errors import CalibrationError, EstimationError, InputError
from kangaroo_wbc.estimation.calibration import (
    CalibrationConfig,
    CalibrationResult,
    EncoderCalibrator,
)
from kangaroo_wbc.estimation.encoder_sanity import (
    EncoderSanityChecker,
    EncoderSanityConfig,
    EncoderVerdict,
)
from kangaroo_wbc.estimation.floating_base import (
    ContactDetector,
    FloatingBaseConfig,
    FloatingBaseEstimator,
)
from kangaroo_wbc.estimation.passive_state import PassiveStateConfig, PassiveStateEstimator
from kangaroo_wbc.estimation.stamp_order import StampOrder, StampVerdict
from kangaroo_wbc.model import ClosedLoopModel
from kangaroo_wbc.model.compiled import all_finite, finite

#: Failed calibration windows in a row reported as WARN (a robot settling on its crane) before
#: the failures become an ERROR.
CALIBRATION_ERROR_AFTER = 3


@dataclass
class StateEstimationConfig:
    """Settings of :class:`StateEstimation` (the node's parameters of the same names)."""

    rate_hz: float = 1000.0  # nominal sample rate [Hz] (dt when stamps are unusable)
    alpha: float = 1.0  # closure-error gain of eq. (38) [1/s]
    beta: float = 1000.0  # actuated-position gain of eq. (38) [1/s]
    calibration_samples: int = 200
    calibration: CalibrationConfig = None  # type: ignore[assignment]
    encoder_sanity: EncoderSanityConfig = None  # type: ignore[assignment]
    floating_base: FloatingBaseConfig = None  # type: ignore[assignment]
    sole_frames: tuple[str, ...] = ("left_sole", "right_sole")
    imu_frame: str = "imu"
    contact_force_on_n: float = 60.0
    contact_force_off_n: float = 30.0
    contact_timeout_s: float = 0.1  # without fresh sole forces every sole counts as in contact [s]
    max_input_age_s: float = 0.05  # IMU / encoder samples older than this are stale [s]
    imu_error_after_s: float = 0.5
    input_timeout_s: float = 0.5  # no actuators/state for this long (steady clock): ERROR [s]
    clock_restart_samples: int = 10
    closure_error_warn: float = 1e-3
    held_until_ready: bool = True  # the robot hangs on the crane until set_released(True)

    def __post_init__(self) -> None:
        self.calibration = self.calibration or CalibrationConfig()
        self.encoder_sanity = self.encoder_sanity or EncoderSanityConfig(nominal_dt_s=1.0 / self.rate_hz)
        self.floating_base = self.floating_base or FloatingBaseConfig()
        self.sole_frames = tuple(self.sole_frames)


@dataclass
class StateEstimate:
    """What one sample gives: closed configuration ``q`` and velocity ``v`` at the sample's stamp
    (pinocchio order; the base part valid when ``base_valid``), and the base filter's variances.
    The arrays are the component's buffers, overwritten by the next sample."""

    q: np.ndarray
    v: np.ndarray
    stamp_s: float
    base_valid: bool
    position_variance: float
    velocity_variance: float


class StateEstimation(Component):
    """Calibration state machine, encoder sanity, stamp order, passive state and floating base.

    Args:
        clm: the closed-loop model (floating base).
        config: :class:`StateEstimationConfig`.
        monotonic: steady clock [s] (injectable for tests).
    """

    def __init__(self, clm: ClosedLoopModel, config: StateEstimationConfig | None = None,
                 monotonic=time.monotonic) -> None:
        super().__init__()
        self.clm, self.config = clm, config or StateEstimationConfig()
        cfg = self.config
        self._monotonic = monotonic
        m = clm.model
        self.calibrator = EncoderCalibrator(clm, config=cfg.calibration)
        linear = [m.joints[m.getJointId(n)].shortname().startswith("JointModelP")
                  for n in clm.actuated_joint_names]
        self.encoders = EncoderSanityChecker(clm.actuated_joint_names, np.asarray(m.velocityLimit)[clm.idx_v_a],
                                             cfg.encoder_sanity, linear=linear)
        # the base estimator places the soles itself: no full-model update needed here
        self.passive = PassiveStateEstimator(clm, PassiveStateConfig(alpha=cfg.alpha, beta=cfg.beta,
                                                                     dt_s=1.0 / cfg.rate_hz), model_data=False)
        self.base = FloatingBaseEstimator(clm, cfg.sole_frames, cfg.imu_frame, cfg.floating_base)
        self.contacts = ContactDetector(len(cfg.sole_frames), cfg.contact_force_on_n, cfg.contact_force_off_n)
        self.order = StampOrder(cfg.clock_restart_samples)
        self.calibration: CalibrationResult | None = None
        #: set by the sample that completed a calibration (the adapter publishes it once), else None
        self.new_calibration: CalibrationResult | None = None
        self._window: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self._encoder_sample: EncoderSample | None = None
        self._imu: ImuSample | None = None
        self._normal_force = np.full(len(cfg.sole_frames), np.nan)
        self._force_stamp = np.full(len(cfg.sole_frames), -math.inf)
        self._first_stamp: float | None = None
        self._stamp = 0.0  # newest valid actuators/state [s]
        self._last_stamp: float | None = None  # of the last estimated sample [s]
        self._last_input: float | None = None  # steady time of the newest valid sample [s]
        self.stats = dict.fromkeys(("ticks", "rejected", "out_of_order", "imu_stale", "bad_dt",
                                    "calibration_failures", "encoder_rejected", "encoder_faults",
                                    "restarts"), 0)
        self._reported = dict(self.stats)
        self.last_error = ""
        self._restart = self._calibration_error = self._encoder_fault = ""
        self._calibration_failures_in_a_row = 0
        self._encoder_events = ["", ""]  # last rejected sample, last persistent fault
        self._estimate = StateEstimate(np.zeros(m.nq), np.zeros(m.nv), 0.0, False, 0.0, 0.0)
        self.held = cfg.held_until_ready  # the base hangs still on the crane (zero-velocity updates)

    # ------------------------------------------------------------------ side inputs
    def reject(self, topic: str, exc: Exception | str) -> None:
        """A malformed sample of ``topic`` (found by the adapter or here): counted and reported."""
        self.stats["rejected"] += 1
        self.last_error = f"{topic}: {exc}"
        self.event(Level.WARN, topic, f"{topic} sample skipped: {exc}")

    def on_encoders(self, sample: EncoderSample) -> None:
        """``passive_encoders/state`` in ``clm.absolute_encoders`` order [rad]."""
        self._encoder_sample = sample

    def on_imu(self, sample: ImuSample) -> None:
        """``imu/data`` (orientation required)."""
        if not (finite(sample.orientation_xyzw) and all_finite(sample.angular_velocity, sample.linear_acceleration)):
            return self.reject("imu/data", "non-finite values")
        self._imu = sample

    def set_released(self, released: bool) -> None:
        """The start-up handshake: True once the controller is ready (the crane lets go then). The
        robot counts as held again after a recalibration until the next True."""
        if released and self.held:
            self.held = False
            self.event(Level.OK, "released", "released from the crane: leg odometry from now on")

    def on_sole_force(self, index: int, normal_force_n: float, stamp_s: float) -> None:
        """Normal force [N] of sole ``index`` (ground on sole, sole frame) at ``stamp_s``."""
        if not math.isfinite(normal_force_n):
            return self.reject("contact/wrench", "non-finite normal force")
        self._normal_force[index], self._force_stamp[index] = normal_force_n, stamp_s

    # ------------------------------------------------------------------ main input
    def step(self, sample: ActuatorSample) -> StateEstimate | None:
        """One ``actuators/state`` sample (calibrated ``clm.actuated_joint_names`` order): the
        estimate at its stamp, or None (calibrating, skipped sample, fault: see the events)."""
        self.new_calibration = None
        if not all_finite(sample.position, sample.velocity):
            self.reject("actuators/state", "non-finite position or velocity")
            return None
        self._last_input = self._monotonic()
        verdict = self.order.update(sample.stamp_s)
        if verdict is StampVerdict.OUT_OF_ORDER:
            self.stats["out_of_order"] += 1
            self.last_error = (f"actuators/state: out-of-order stamp, {self.order.last_lag_s * 1e3:.1f} ms older "
                               "than the newest sample (skipped)")
            self.event(Level.WARN, "out_of_order", self.last_error)
            return None
        if verdict is StampVerdict.RESTARTED:
            self._on_clock_restart(sample.stamp_s)
        self._stamp = sample.stamp_s
        if self._first_stamp is None:
            self._first_stamp = sample.stamp_s
        check = self.encoders.update(sample.position, sample.velocity, sample.stamp_s)
        if not check.accepted:
            self._on_encoder_fault(check)
        if self.calibration is None:
            if check.accepted:
                self._collect(sample)
            return None
        if not check.accepted:
            return None
        return self._estimate_at(sample)

    def _on_clock_restart(self, stamp: float) -> None:
        order = self.order
        self.stats["restarts"] += 1
        self._restart = (f"actuators/state clock went back by {order.last_lag_s:.3f} s for {order.restart_after} "
                         "samples (hardware or simulator restarted)")
        self.last_error = f"actuators/state: {self._restart}"
        self.calibration = None
        self._window.clear()
        self.encoders.reset()
        self.base.initialized = False
        self._imu = self._encoder_sample = None
        self._force_stamp[:] = -math.inf
        self._last_stamp = None
        self._first_stamp = stamp
        self.event(Level.ERROR, "restart", f"{self._restart}: estimates dropped, recalibrating (needs the robot still)")

    def _on_encoder_fault(self, verdict: EncoderVerdict) -> None:
        self.stats["encoder_rejected"] += 1
        self.last_error = f"actuators/state: {verdict.message}"
        self._encoder_events[0] = verdict.message
        key = f"encoder {verdict.persistent} {verdict.jumped} {verdict.frozen}"
        if not verdict.persistent:
            self.event(Level.WARN, key, verdict.message)
            return
        if not self._encoder_fault:
            self.stats["encoder_faults"] += 1
        self._encoder_fault = self._encoder_events[1] = verdict.message
        self.calibration = None
        self._window.clear()
        self.event(Level.ERROR, key, f"{verdict.message}: joint_states withheld, recalibrating (needs the robot still)")

    # ------------------------------------------------------------------ calibration
    def _calibration_level(self) -> Level:
        """WARN for the first failed windows (a robot still settling on its crane), then ERROR."""
        return Level.ERROR if self._calibration_failures_in_a_row >= CALIBRATION_ERROR_AFTER else Level.WARN

    def _collect(self, sample: ActuatorSample) -> None:
        cfg, enc = self.config, self._encoder_sample
        if enc is None or abs(sample.stamp_s - enc.stamp_s) > cfg.max_input_age_s:
            self.event(Level.WARN, "waiting_encoders", "calibration: waiting for fresh passive_encoders/state")
            return
        self._window.append((sample.position, sample.velocity, enc.position))
        if len(self._window) < cfg.calibration_samples:
            return
        pos, vel, encoders = (np.array(x) for x in zip(*self._window))
        self._window.clear()
        try:
            res = self.calibrator.calibrate(pos, dict(zip(self.calibrator.encoder_names, encoders.T)), vel)
        except CalibrationError as exc:
            self.stats["calibration_failures"] += 1
            self.last_error = f"calibration: {exc}"
            self._calibration_error = str(exc)
            self._calibration_failures_in_a_row += 1
            self.event(self._calibration_level(), f"calibration {str(exc).split(':')[0]}",
                       f"calibration failed, retrying: {exc}")
            return
        if self._encoder_fault or self._restart:
            self.event(Level.OK, "recalibrated", f"recalibrated after: {self._encoder_fault or self._restart}")
        self.calibration = self.new_calibration = res
        self.held = self.config.held_until_ready  # a (re)calibrated robot hangs until ready
        self._calibration_error = self._encoder_fault = self._restart = ""
        self._calibration_failures_in_a_row = 0
        self.passive.reset(res.q)
        self.base.initialized = False
        self._last_stamp = sample.stamp_s
        self.event(Level.OK, "calibrated", f"calibrated in {res.iterations} iterations "
                   f"(|e| = {res.residual_history[-1]:.1e}); offsets [m]: {np.array2string(res.offsets, precision=5)}")

    # ------------------------------------------------------------------ estimation
    def _estimate_at(self, sample: ActuatorSample) -> StateEstimate | None:
        cfg, t0 = self.config, time.perf_counter()
        stamp = sample.stamp_s
        dt = stamp - self._last_stamp if self._last_stamp is not None else 0.0
        if not 0.0 < dt <= 10.0 / cfg.rate_hz:
            self.stats["bad_dt"] += 1
            dt = 1.0 / cfg.rate_hz
        imu = self._imu
        imu_ok = imu is not None and abs(stamp - imu.stamp_s) <= cfg.max_input_age_s
        if not imu_ok:
            self.stats["imu_stale"] += 1
            self.event(Level.WARN, "imu", "imu/data missing or stale: base odometry not updated")
        self._last_stamp = stamp
        passive, base = self.passive, self.base
        calibration = self.calibration
        assert calibration is not None  # step() estimates only once calibrated
        try:
            passive.update(calibration.correct(sample.position), sample.velocity, dt)
            if imu_ok:
                assert imu is not None  # imu_ok implies a sample
                fresh = stamp - self._force_stamp <= cfg.contact_timeout_s
                contact = self.contacts.update(self._normal_force) if fresh.all() else np.ones(len(fresh), bool)
                q = passive.q_at_sample
                if not base.initialized:
                    base.reset(q, imu.orientation_xyzw, contact)
                base.update(q, passive.v, imu.orientation_xyzw, imu.angular_velocity, imu.linear_acceleration,
                            contact, dt, held=self.held)
                passive.set_base_state(base.q_base, base.v_base)
        except (EstimationError, InputError) as exc:
            self.reject("estimation", exc)
            return None
        est = self._estimate
        est.q[:], est.v[:] = passive.q_at_sample, passive.v  # the estimate at the sample's instant
        if imu_ok:  # the base of this instant (the passive estimator keeps it for the next sample)
            est.q[:7], est.v[:6] = base.q_base, base.v_base
        if not all_finite(est.q, est.v):
            self.reject("estimation", "non-finite estimate, not published")
            return None
        est.stamp_s, est.base_valid = stamp, imu_ok and base.initialized
        est.position_variance, est.velocity_variance = base.position_variance, base.velocity_variance
        self.stats["ticks"] += 1
        self._timed(t0)
        return est

    # ------------------------------------------------------------------ diagnostics
    def statuses(self) -> list[Status]:
        """``calibration``, ``estimator``, ``encoders`` and ``imu`` statuses since the last call."""
        cfg, s, cal = self.config, self.stats, self.calibration
        if cal is None:
            progress = f"{len(self._window)}/{cfg.calibration_samples} samples"
            if self._calibration_error:
                level = self._calibration_level()
                text = f"calibration failed, retrying ({progress}): {self._calibration_error}"
            elif self._encoder_fault:
                level, text = Level.ERROR, f"recalibrating after an encoder fault ({progress})"
            elif self._restart:
                level, text = Level.ERROR, f"recalibrating after a restart ({progress}): {self._restart}"
            else:
                level, text = Level.WARN, f"calibrating ({progress})"
            status = Status("calibration", level, text,
                            {"failures": s["calibration_failures"], "last_error": self.last_error})
        else:
            status = Status("calibration", Level.OK, "calibrated",
                            {"iterations": cal.iterations, "residual": cal.residual_history[-1],
                             "max_offset_m": float(np.max(np.abs(cal.offsets)))})
        err = self.passive.closure_error_norm
        recent = {k: v - self._reported[k] for k, v in s.items()}
        self._reported = dict(s)
        bad = (recent["rejected"] or recent["out_of_order"] or recent["imu_stale"] or recent["encoder_rejected"]
               or (cal is not None and not recent["ticks"]))
        level = Level.WARN if err > cfg.closure_error_warn or bad else Level.OK
        message = "running" if level == Level.OK else "degraded"
        silent = None if self._last_input is None else self._monotonic() - self._last_input
        if silent is not None and silent > cfg.input_timeout_s:
            level, message = Level.ERROR, f"inputs stale: no actuators/state for {silent:.1f} s, nothing published"
            self.event(Level.ERROR, "inputs stale", f"{message} (steady clock)")
        values = {"closure_error": err, **self._step_timing(), "reprojections": self.passive.reprojections,
                  "contacts": self.base.contact.tolist(), **s, "last_error": self.last_error}
        return [status, Status("estimator", level, message, values), self._encoder_status(recent),
                self._imu_status()]

    def _encoder_status(self, recent: dict) -> Status:
        rejected, persistent = self._encoder_events
        values = {"rejected": recent["encoder_rejected"], "faults": recent["encoder_faults"]}
        if self._encoder_fault:
            return Status("encoders", Level.ERROR, f"{self._encoder_fault}; joint_states withheld until recalibrated "
                          "(needs the robot still)", values)
        if recent["encoder_faults"]:
            return Status("encoders", Level.ERROR, f"{persistent}; recalibrated", values)
        if recent["encoder_rejected"]:
            return Status("encoders", Level.WARN, f"{recent['encoder_rejected']} sample(s) skipped, last: {rejected}",
                          values)
        return Status("encoders", Level.OK, "consistent", values)

    def _imu_status(self) -> Status:
        cfg, first, imu = self.config, self._first_stamp, self._imu
        if first is None:
            return Status("imu", Level.WARN, "no actuators/state yet")
        age = self._stamp - (first if imu is None else imu.stamp_s)
        values = {"age_ms": 1e3 * age}
        if age <= cfg.max_input_age_s:
            return Status("imu", Level.OK, "fresh", values)
        level = Level.ERROR if age > cfg.imu_error_after_s else Level.WARN
        what = "no imu/data received" if imu is None else "imu/data stale"
        return Status("imu", level, f"{what} for {1e3 * age:.0f} ms: base odometry and TF withheld (base estimate "
                      "frozen), joint_states continue", values)

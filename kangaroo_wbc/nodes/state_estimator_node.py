"""``state_estimator`` node: encoder calibration, passive state and floating base (paper Section VI-A).

Event-driven on ``actuators/state``. At start-up it averages ``calibration_samples`` still samples
of ``actuators/state`` and ``passive_encoders/state`` and calibrates the relative encoders
(:class:`~kangaroo_wbc.estimation.calibration.EncoderCalibrator`, eq. (41)-(42)); the offsets go out
latched on ``estimation/calibration``. Afterwards every actuator sample runs the passive-state
estimator (eq. (35)-(40)) and the floating-base estimator (IMU + legs, contacts from
``contact/<sole>/wrench`` with hysteresis, all soles in contact while no wrench arrives) and
publishes ``joint_states`` (all joints), ``estimation/base_odometry`` and TF ``odom → base_link``,
stamped with the actuator sample's stamp. Bad input is skipped and reported (throttled log +
``/diagnostics``); nothing non-finite is published. Topics: ``docs/interface.md``.

Encoder faults (:mod:`~kangaroo_wbc.estimation.encoder_sanity`): a sample whose reading jumps
faster than the actuator can move is skipped (WARN ``encoders``); a persistent jump or a frozen
reading invalidates the calibration: ``joint_states`` stop (the controller's staleness watchdog
takes over), ERROR ``encoders``, and the node recalibrates as at start-up, which needs the robot
still. Without fresh ``imu/data`` ``joint_states`` continue but the base odometry and TF are
withheld (WARN ``imu``, ERROR after ``imu_error_after_s``). A failed calibration attempt is an
ERROR ``calibration`` naming the reason; the next window is tried.

Input order and silence: an ``actuators/state`` sample older than the newest one is skipped
(:class:`~kangaroo_wbc.estimation.stamp_order.StampOrder`); ``clock_restart_samples`` of them in a
row are a restarted hardware (or simulator) clock: the estimates and the calibration are dropped
and the node recalibrates (ERROR ``calibration``). No ``actuators/state`` for longer than
``input_timeout_s`` (steady clock) after the first one is an ERROR ``estimator`` "inputs stale".
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from geometry_msgs.msg import WrenchStamped
from nav_msgs.msg import Odometry
from sensor_msgs.msg import Imu, JointState

from kangaroo_wbc.errors import (
    CalibrationError,
    ConfigError,
    EstimationError,
    InputError,
    KangarooWbcError,
)
from kangaroo_wbc.estimation.calibration import CalibrationConfig, EncoderCalibrator
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
from kangaroo_wbc.nodes import urdf_dir_parameter
from kangaroo_wbc.ros import qos
from kangaroo_wbc.ros.conversions import (
    JointIndexMap,
    arrays_to_odometry_msg,
    arrays_to_transform_stamped,
    imu_msg_to_arrays,
    time_msg_to_seconds,
    wrench_msg_to_vector,
)
from kangaroo_wbc.ros.diagnostics import Level
from kangaroo_wbc.ros.node_base import KangarooNode, main_for
from kangaroo_wbc.ros.params import parameter


@dataclass
class StateEstimatorParams:
    """Parameters of the ``state_estimator`` node (``config/state_estimator.yaml``)."""

    rate_hz: float = parameter(
        1000.0,
        "Nominal rate of actuators/state [Hz] (dt when stamps are unusable)",
        bounds=(1.0, 10000.0),
        read_only=True,
    )
    urdf_dir: str = urdf_dir_parameter()
    alpha: float = parameter(
        1.0, "Closure-error gain alpha of eq. (38) [1/s], at most rate_hz", bounds=(0.0, 1e4)
    )
    beta: float = parameter(
        1000.0, "Actuated-position gain beta of eq. (38) [1/s], at most rate_hz", bounds=(0.0, 1e4)
    )
    calibration_samples: int = parameter(
        200,
        "Still samples averaged by the start-up calibration",
        bounds=(1, 100000),
        read_only=True,
    )
    calibration_max_velocity_m_s: float = parameter(
        5e-3, "Largest actuator speed while calibrating [m/s]", bounds=(0.0, None)
    )
    calibration_max_drift_m: float = parameter(
        2e-4, "Largest mean-position drift over the window [m]", bounds=(0.0, None)
    )
    calibration_limit_margin: float = parameter(
        0.01,
        "A calibrated actuator position or passive encoder reading "
        "beyond the position limits by more than this fails the "
        "calibration [m, rad]",
        bounds=(0.0, None),
        read_only=True,
    )
    encoder_jump_speed_factor: float = parameter(
        1.5,
        "A reading implying more than this times the actuator's "
        "speed limit is a jump: sample skipped [-]",
        bounds=(1.0, 100.0),
        read_only=True,
    )
    encoder_position_tolerance_m: float = parameter(
        1e-4, "Noise allowance of the jump check [m]", bounds=(0.0, 0.1), read_only=True
    )
    encoder_max_rejected_samples: int = parameter(
        3,
        "Jumped samples in a row that make the jump persistent (recalibration)",
        bounds=(1, 1000),
        read_only=True,
    )
    encoder_freeze_samples: int = parameter(
        20,
        "Bit-identical samples in a row, while the reported velocity "
        "moves, that make a reading frozen (recalibration)",
        bounds=(2, 100000),
        read_only=True,
    )
    encoder_freeze_min_travel_m: float = parameter(
        5e-4,
        "Travel the reported velocity must integrate to over those samples [m]",
        bounds=(0.0, None),
        read_only=True,
    )
    imu_error_after_s: float = parameter(
        0.5,
        "imu/data silent for longer than this, relative to actuators/state, "
        "is an ERROR (a WARN from max_input_age_s) [s]",
        bounds=(0.0, None),
    )
    sole_frames: list[str] = parameter(
        ["left_sole", "right_sole"], "Contact frames (URDF)", read_only=True
    )
    imu_frame: str = parameter("imu", "IMU frame (URDF, on the base link)", read_only=True)
    odom_frame: str = parameter("odom", "World frame of the odometry")
    base_frame: str = parameter("base_link", "Floating-base frame (URDF root link)")
    contact_force_on_n: float = parameter(
        60.0, "Normal force above which a sole enters contact [N]", bounds=(0.0, None)
    )
    contact_force_off_n: float = parameter(
        30.0, "Normal force below which a sole leaves contact [N]", bounds=(0.0, None)
    )
    contact_timeout_s: float = parameter(
        0.1,
        "Without a fresh contact/<sole>/wrench every sole counts as in contact [s]",
        bounds=(0.0, None),
    )
    max_input_age_s: float = parameter(
        0.05,
        "IMU / encoder samples older than this, relative to the actuator sample, are stale [s]",
        bounds=(0.0, None),
    )
    input_timeout_s: float = parameter(
        0.5,
        "No actuators/state for longer than this (steady clock) is an ERROR (inputs stale) [s]",
        bounds=(0.01, 60.0),
    )
    clock_restart_samples: int = parameter(
        10,
        "Out-of-order actuators/state samples in a row taken as a restarted "
        "clock (hardware or simulator restart: recalibration) instead of "
        "skipped",
        bounds=(2, 100000),
        read_only=True,
    )
    accel_noise_std: float = parameter(
        1.0, "Process noise of the base acceleration [m/s^2]", bounds=(1e-6, None)
    )
    leg_velocity_std: float = parameter(
        0.02, "Leg-odometry velocity noise [m/s]", bounds=(1e-6, None)
    )
    foot_position_std: float = parameter(
        0.005, "Anchored-foot position noise [m]", bounds=(1e-6, None)
    )
    use_accelerometer: bool = parameter(True, "Predict the base velocity with the accelerometer")
    snap_to_ground: bool = parameter(
        True, "Anchor soles touching down at ground_height_m (flat ground)"
    )
    ground_height_m: float = parameter(0.0, "Height of the flat ground in odom [m]")
    publish_tf: bool = parameter(True, "Broadcast TF odom -> base_link")
    closure_error_warn: float = parameter(
        1e-3, "Closure error reported as WARN above this [m, rad]", bounds=(0.0, None)
    )

    def __post_init__(self) -> None:
        if self.alpha > self.rate_hz or self.beta > self.rate_hz:
            raise ValueError("alpha and beta must not exceed rate_hz (alpha dt, beta dt <= 1)")
        if self.contact_force_off_n >= self.contact_force_on_n:
            raise ValueError("contact_force_off_n must be below contact_force_on_n (hysteresis)")
        if self.imu_error_after_s < self.max_input_age_s:
            raise ValueError(
                "imu_error_after_s must not be below max_input_age_s (WARN before ERROR)"
            )


def load_model(urdf_dir: str, floating_base: bool = True):
    """The Kangaroo closed-loop model from ``urdf_dir`` (empty: the source tree or installed share).

    Raises:
        ConfigError: the files are missing or malformed (the message names the parameter and the file).
    """
    from kangaroo_wbc.robots.kangaroo.robot import load_kangaroo

    try:
        return load_kangaroo(
            floating_base=floating_base, urdf_dir=Path(urdf_dir) if urdf_dir else None
        )
    except (KangarooWbcError, OSError) as exc:
        raise ConfigError(f"parameter 'urdf_dir' ({urdf_dir or 'package urdf/'}): {exc}") from exc


class StateEstimatorNode(KangarooNode):
    """Calibration, passive state and floating base behind the topic contract."""

    def __init__(self) -> None:
        super().__init__("state_estimator", StateEstimatorParams)
        p = self.params
        self.clm = clm = load_model(p.urdf_dir)
        m = clm.model
        if any(m.joints[m.getJointId(n)].nq != 1 for n in clm.joint_names):
            raise ConfigError(
                "state_estimator: every joint must be 1-DOF with nq = 1 to be published"
            )
        self._idx_q = np.array([m.joints[m.getJointId(n)].idx_q for n in clm.joint_names])
        self._idx_v = np.array([m.joints[m.getJointId(n)].idx_v for n in clm.joint_names])
        self._act = JointIndexMap(clm.actuated_joint_names, what="actuator")
        self._enc = JointIndexMap(clm.absolute_encoders, what="passive encoder", allow_extra=True)
        self._joints = JointIndexMap(clm.joint_names)
        self.calibrator = EncoderCalibrator(
            clm,
            config=CalibrationConfig(
                max_velocity=p.calibration_max_velocity_m_s,
                max_position_drift=p.calibration_max_drift_m,
                limit_margin=p.calibration_limit_margin,
            ),
        )
        linear = [
            m.joints[m.getJointId(n)].shortname().startswith("JointModelP")
            for n in clm.actuated_joint_names
        ]
        self.encoders = EncoderSanityChecker(
            clm.actuated_joint_names,
            np.asarray(m.velocityLimit)[clm.idx_v_a],
            EncoderSanityConfig(
                jump_speed_factor=p.encoder_jump_speed_factor,
                position_tolerance=p.encoder_position_tolerance_m,
                max_rejected_samples=p.encoder_max_rejected_samples,
                freeze_samples=p.encoder_freeze_samples,
                freeze_min_travel=p.encoder_freeze_min_travel_m,
                nominal_dt_s=1.0 / p.rate_hz,
            ),
            linear=linear,
        )
        self.estimator = PassiveStateEstimator(
            clm, PassiveStateConfig(alpha=p.alpha, beta=p.beta, dt_s=1 / p.rate_hz)
        )
        self.base = FloatingBaseEstimator(
            clm,
            p.sole_frames,
            p.imu_frame,
            FloatingBaseConfig(
                accel_noise_std=p.accel_noise_std,
                leg_velocity_std=p.leg_velocity_std,
                foot_position_std=p.foot_position_std,
                use_accelerometer=p.use_accelerometer,
                ground_height_m=p.ground_height_m if p.snap_to_ground else None,
            ),
        )
        self.contacts = ContactDetector(
            len(p.sole_frames), p.contact_force_on_n, p.contact_force_off_n
        )
        self.calibration = None
        self._window: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self._encoders: tuple[np.ndarray, float] | None = None
        self._imu = None
        self._first_actuator_stamp: float | None = None  # of a valid actuators/state [s]
        self._actuator_stamp = 0.0  # latest valid actuators/state [s]
        self._normal_force = np.full(len(p.sole_frames), np.nan)
        self._wrench_time = np.full(len(p.sole_frames), -math.inf)
        self._last_stamp: float | None = None
        self._order = StampOrder(p.clock_restart_samples)  # of actuators/state
        self._last_input: float | None = (
            None  # steady time [s] of the latest valid actuators/state
        )
        self._stats = {
            "ticks": 0,
            "rejected": 0,
            "out_of_order": 0,
            "imu_stale": 0,
            "bad_dt": 0,
            "calibration_failures": 0,
            "encoder_rejected": 0,
            "encoder_faults": 0,
            "restarts": 0,
        }
        self._last_error = ""
        self._restart = ""  # clock restart waiting for the recalibration
        self._calibration_error = ""  # reason of the last failed calibration attempt
        self._encoder_fault = ""  # persistent encoder fault waiting for the recalibration
        self._encoder_events = ["", ""]  # last rejected sample, last persistent fault
        self._reported = dict(self._stats)  # counts at the last diagnostics report
        self._step_s = [0.0, 0.0, 0]  # sum, max, count since the last report
        self._msgs = {"js": JointState(), "odom": Odometry()}
        pub = self.create_publisher
        self._pub_js = pub(JointState, "joint_states", qos.SENSOR_STATE)
        self._pub_odom = pub(Odometry, "estimation/base_odometry", qos.SENSOR_STATE)
        self._pub_cal = pub(JointState, "estimation/calibration", qos.LATCHED)
        self._tf = None
        if p.publish_tf:
            from kangaroo_wbc.ros.tf import make_tf_broadcaster

            self._tf = make_tf_broadcaster(self)
        sub = self.create_subscription
        sub(JointState, "actuators/state", self._on_actuators, qos.SENSOR_STATE)
        sub(JointState, "passive_encoders/state", self._on_encoders, qos.SENSOR_STATE)
        sub(Imu, "imu/data", self._on_imu, qos.SENSOR_STATE)
        for i, sole in enumerate(p.sole_frames):
            sub(
                WrenchStamped,
                f"contact/{sole}/wrench",
                lambda msg, i=i: self._on_wrench(i, msg),
                qos.SENSOR_STATE,
            )
        self.get_logger().info(
            f"state_estimator: {clm.n_a} actuators, {len(clm.joint_names)} joints, "
            f"{len(clm.absolute_encoders)} passive encoders; calibrating over "
            f"{p.calibration_samples} samples"
        )

    # ------------------------------------------------------------------ inputs
    def _reject(self, topic: str, exc: Exception) -> None:
        self._stats["rejected"] += 1
        self._last_error = f"{topic}: {exc}"
        self.throttled.warning(topic, f"{topic} sample skipped: {exc}")

    def _on_encoders(self, msg: JointState) -> None:
        try:
            arr = self._enc.from_joint_state(msg)
        except InputError as exc:
            return self._reject("passive_encoders/state", exc)
        self._encoders = (arr.position, arr.stamp_s)

    def _on_imu(self, msg: Imu) -> None:
        try:
            imu = imu_msg_to_arrays(msg)
            if imu.quaternion_xyzw is None:
                raise InputError("the IMU gives no orientation (orientation_covariance[0] = -1)")
        except InputError as exc:
            return self._reject("imu/data", exc)
        self._imu = imu

    def _on_wrench(self, i: int, msg: WrenchStamped) -> None:
        try:
            self._normal_force[i] = wrench_msg_to_vector(msg.wrench)[2]
        except InputError as exc:
            return self._reject("contact/wrench", exc)
        self._wrench_time[i] = time_msg_to_seconds(msg.header.stamp)

    def _on_actuators(self, msg: JointState) -> None:
        try:
            arr = self._act.from_joint_state(msg, required=("position", "velocity"))
        except InputError as exc:
            return self._reject("actuators/state", exc)
        self._last_input = time.monotonic()
        order = self._order.update(arr.stamp_s)
        if order is StampVerdict.OUT_OF_ORDER:
            self._stats["out_of_order"] += 1
            self._last_error = (
                f"actuators/state: out-of-order stamp, {self._order.last_lag_s * 1e3:.1f} ms older "
                "than the newest sample (skipped)"
            )
            self.throttled.warning("out_of_order", self._last_error)
            return
        if order is StampVerdict.RESTARTED:
            self._on_clock_restart(arr.stamp_s)
        self._actuator_stamp = arr.stamp_s
        if self._first_actuator_stamp is None:
            self._first_actuator_stamp = arr.stamp_s
        verdict = self.encoders.update(arr.position, arr.velocity, arr.stamp_s)
        if not verdict.accepted:
            self._on_encoder_fault(verdict)
        if self.calibration is None:
            if verdict.accepted:
                self._collect(arr.position, arr.velocity, arr.stamp_s, msg)
        else:
            self._estimate(arr.position, arr.velocity, arr.stamp_s, msg, verdict.accepted)

    def _on_clock_restart(self, stamp: float) -> None:
        """The hardware's clock went back for good (restart): drop every estimate and recalibrate."""
        order = self._order
        self._stats["restarts"] += 1
        self._restart = (
            f"actuators/state clock went back by {order.last_lag_s:.3f} s for {order.restart_after} "
            "samples (hardware or simulator restarted)"
        )
        self._last_error = f"actuators/state: {self._restart}"
        self.calibration = None
        self._window.clear()
        self.encoders.reset()
        self.base.initialized = False
        self._imu = self._encoders = None
        self._wrench_time[:] = -math.inf
        self._last_stamp = None
        self._first_actuator_stamp = stamp
        self.throttled.error(
            "restart", f"{self._restart}: estimates dropped, recalibrating (needs the robot still)"
        )

    def _on_encoder_fault(self, verdict: EncoderVerdict) -> None:
        """A rejected sample: skipped; a persistent fault also drops the calibration (recalibrate)."""
        self._stats["encoder_rejected"] += 1
        self._last_error = f"actuators/state: {verdict.message}"
        self._encoder_events[0] = verdict.message
        key = f"encoder {verdict.persistent} {verdict.jumped} {verdict.frozen}"  # throttled per fault and actuator
        if not verdict.persistent:
            self.throttled.warning(key, verdict.message)
            return
        if not self._encoder_fault:
            self._stats["encoder_faults"] += 1
        self._encoder_fault = self._encoder_events[1] = verdict.message
        self.calibration = None
        self._window.clear()
        self.throttled.error(
            key, f"{verdict.message}: joint_states withheld, recalibrating (needs the robot still)"
        )

    # ------------------------------------------------------------------ calibration
    def _collect(self, pos: np.ndarray, vel: np.ndarray, stamp: float, msg: JointState) -> None:
        p = self.params
        if self._encoders is None or abs(stamp - self._encoders[1]) > p.max_input_age_s:
            self.throttled.warning(
                "waiting_encoders", "calibration: waiting for fresh passive_encoders/state"
            )
            return
        self._window.append((pos, vel, self._encoders[0]))
        if len(self._window) < p.calibration_samples:
            return
        pos_w, vel_w, enc_w = (np.array(x) for x in zip(*self._window))
        self._window.clear()
        try:
            res = self.calibrator.calibrate(
                pos_w, dict(zip(self.calibrator.encoder_names, enc_w.T)), vel_w
            )
        except CalibrationError as exc:
            self._stats["calibration_failures"] += 1
            self._last_error = f"calibration: {exc}"
            self._calibration_error = str(exc)
            reason = str(exc).split(":")[0]  # throttled per reason: a new reason is logged at once
            self.throttled.error(f"calibration {reason}", f"calibration failed, retrying: {exc}")
            return
        if self._encoder_fault or self._restart:
            self.get_logger().info(f"recalibrated after: {self._encoder_fault or self._restart}")
        self.calibration = res
        self._calibration_error = self._encoder_fault = self._restart = ""
        self.estimator.reset(res.q)
        self._last_stamp = stamp
        self._pub_cal.publish(self._act.to_joint_state(res.offsets, stamp=msg.header.stamp))
        self.get_logger().info(
            f"calibrated in {res.iterations} iterations (|e| = {res.residual_history[-1]:.1e}); "
            f"offsets [m]: {np.array2string(res.offsets, precision=5)}"
        )

    # ------------------------------------------------------------------ estimation
    def _estimate(
        self, pos: np.ndarray, vel: np.ndarray, stamp: float, msg: JointState, accepted: bool
    ) -> None:
        p, cal = self.params, self.calibration
        t0 = time.perf_counter()
        dt = stamp - self._last_stamp if self._last_stamp is not None else 0.0
        if not 0.0 < dt <= 10.0 / p.rate_hz:
            self._stats["bad_dt"] += 1
            dt = 1.0 / p.rate_hz
        imu = self._imu
        imu_ok = imu is not None and abs(stamp - imu.stamp_s) <= p.max_input_age_s
        if not imu_ok:
            self._stats["imu_stale"] += 1
            self.throttled.warning("imu", "imu/data missing or stale: base odometry not updated")
        if not accepted:  # encoder fault: nothing published for this sample
            return
        self._last_stamp = stamp
        try:
            self.estimator.update(cal.correct(pos), vel, dt)
            if imu_ok:
                fresh = stamp - self._wrench_time <= p.contact_timeout_s
                contact = (
                    self.contacts.update(self._normal_force)
                    if fresh.all()
                    else np.ones(len(fresh), bool)
                )
                est = self.estimator
                if not self.base.initialized:
                    self.base.reset(est.q, imu.quaternion_xyzw, contact, data=est.data)
                self.base.update(
                    est.q,
                    est.v,
                    imu.quaternion_xyzw,
                    imu.angular_velocity,
                    imu.linear_acceleration,
                    contact,
                    dt,
                    data=est.data,
                )
                est.set_base_state(self.base.q_base, self.base.v_base)
        except EstimationError as exc:
            return self._reject("estimation", exc)
        self._publish(msg, imu_ok)
        self._stats["ticks"] += 1
        dt_step = time.perf_counter() - t0
        s = self._step_s
        s[0], s[1], s[2] = s[0] + dt_step, max(s[1], dt_step), s[2] + 1

    def _publish(self, msg: JointState, with_base: bool) -> None:
        est, p = self.estimator, self.params
        q, v = est.q_at_sample, est.v
        if not (np.isfinite(q).all() and np.isfinite(v).all()):
            return self._reject(
                "estimation", EstimationError("non-finite estimate, not published")
            )
        stamp = msg.header.stamp
        self._pub_js.publish(
            self._joints.to_joint_state(
                q[self._idx_q], v[self._idx_v], stamp=stamp, msg=self._msgs["js"]
            )
        )
        if not with_base:
            return
        b = self.base
        cov_p = np.diag([b.position_variance] * 3 + [1e-4] * 3)
        cov_v = np.diag([b.velocity_variance] * 3 + [1e-4] * 3)
        self._pub_odom.publish(
            arrays_to_odometry_msg(
                b.q_base[:3],
                b.q_base[3:],
                b.v_base[:3],
                b.v_base[3:],
                frame_id=p.odom_frame,
                child_frame_id=p.base_frame,
                stamp=stamp,
                pose_covariance=cov_p,
                twist_covariance=cov_v,
                msg=self._msgs["odom"],
            )
        )
        if self._tf is not None:
            self._tf.sendTransform(
                arrays_to_transform_stamped(
                    b.q_base[:3],
                    b.q_base[3:],
                    parent_frame=p.odom_frame,
                    child_frame=p.base_frame,
                    stamp=stamp,
                )
            )

    # ------------------------------------------------------------------ diagnostics
    def diagnostic_statuses(self) -> list:
        d, s, p = self.diagnostics, self._stats, self.params
        cal = self.calibration
        if cal is None:
            progress = f"{len(self._window)}/{p.calibration_samples} samples"
            if self._calibration_error:
                level, message = (
                    Level.ERROR,
                    f"calibration failed, retrying ({progress}): {self._calibration_error}",
                )
            elif self._encoder_fault:
                level, message = Level.ERROR, f"recalibrating after an encoder fault ({progress})"
            elif self._restart:
                level, message = (
                    Level.ERROR,
                    f"recalibrating after a restart ({progress}): {self._restart}",
                )
            else:
                level, message = Level.WARN, f"calibrating ({progress})"
            status = d.status(
                "calibration",
                level,
                message,
                {"failures": s["calibration_failures"], "last_error": self._last_error},
            )
        else:
            status = d.status(
                "calibration",
                Level.OK,
                "calibrated",
                {
                    "iterations": cal.iterations,
                    "residual": cal.residual_history[-1],
                    "max_offset_m": float(np.max(np.abs(cal.offsets))),
                },
            )
        total, worst, n = self._step_s
        self._step_s = [0.0, 0.0, 0]
        err = self.estimator.closure_error_norm
        recent = {k: v - self._reported[k] for k, v in s.items()}  # since the last report
        self._reported = dict(s)
        bad_input = (
            recent["rejected"]
            or recent["out_of_order"]
            or recent["imu_stale"]
            or recent["encoder_rejected"]
            or (cal is not None and not recent["ticks"])
        )
        level = Level.WARN if err > p.closure_error_warn or bad_input else Level.OK
        message = "running" if level == Level.OK else "degraded"
        silent = None if self._last_input is None else time.monotonic() - self._last_input
        if silent is not None and silent > p.input_timeout_s:
            level, message = (
                Level.ERROR,
                f"inputs stale: no actuators/state for {silent:.1f} s, nothing published",
            )
            self.throttled.error("inputs stale", f"{message} (steady clock)")
        values = {
            "closure_error": err,
            "step_mean_ms": 1e3 * total / max(n, 1),
            "step_max_ms": 1e3 * worst,
            "reprojections": self.estimator.reprojections,
            "contacts": self.base.contact.tolist(),
            **s,
            "last_error": self._last_error,
        }
        return [
            status,
            d.status("estimator", level, message, values),
            self._encoder_status(recent),
            self._imu_status(),
        ]

    def _encoder_status(self, recent: dict):
        """ERROR while a persistent encoder fault waits for the recalibration or when one happened
        since the last report; WARN when samples were rejected since then."""
        rejected, persistent = self._encoder_events
        values = {"rejected": recent["encoder_rejected"], "faults": recent["encoder_faults"]}
        if self._encoder_fault:
            return self.diagnostics.status(
                "encoders",
                Level.ERROR,
                f"{self._encoder_fault}; joint_states withheld "
                "until recalibrated (needs the robot still)",
                values,
            )
        if recent["encoder_faults"]:
            return self.diagnostics.status(
                "encoders", Level.ERROR, f"{persistent}; recalibrated", values
            )
        if recent["encoder_rejected"]:
            return self.diagnostics.status(
                "encoders",
                Level.WARN,
                f"{recent['encoder_rejected']} sample(s) skipped, last: {rejected}",
                values,
            )
        return self.diagnostics.status("encoders", Level.OK, "consistent", values)

    def _imu_status(self):
        """Age of imu/data relative to the latest actuators/state: WARN above max_input_age_s,
        ERROR above imu_error_after_s."""
        p, first, imu = self.params, self._first_actuator_stamp, self._imu
        if first is None:
            return self.diagnostics.status("imu", Level.WARN, "no actuators/state yet")
        age = self._actuator_stamp - (first if imu is None else imu.stamp_s)
        values = {"age_ms": 1e3 * age}
        if age <= p.max_input_age_s:
            return self.diagnostics.status("imu", Level.OK, "fresh", values)
        level = Level.ERROR if age > p.imu_error_after_s else Level.WARN
        what = "no imu/data received" if imu is None else "imu/data stale"
        return self.diagnostics.status(
            "imu",
            level,
            f"{what} for {1e3 * age:.0f} ms: base odometry and TF "
            "withheld (base estimate frozen), joint_states continue",
            values,
        )


main = main_for(StateEstimatorNode)

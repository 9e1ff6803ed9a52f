"""``state_estimator`` node: encoder calibration, passive state and floating base (paper Section VI-A).

A thin adapter around :class:`~kangaroo_wbc.components.state_estimation.StateEstimation`, which
holds the whole behaviour (calibration state machine, encoder sanity, stamp order, estimators; see
its module docstring). This file converts ``actuators/state``, ``passive_encoders/state``,
``imu/data`` and ``contact/<sole>/wrench`` to samples and publishes ``joint_states`` (all joints),
``estimation/base_odometry`` and TF ``odom → base_link`` (while the IMU is fresh), the latched
``estimation/calibration`` and ``/diagnostics``, all stamped with the actuator sample's stamp.
Topics: ``docs/interface.md``. The model follows the payloads the controller publishes on the
latched ``model/payloads`` (``docs/morphology.md``), applied before the next sample. With ``rig``
(``one_leg``) it runs on the test bench's model with its one sole and is never told that the robot
left the crane (``wbc/ready`` is not followed): the clamped pelvis keeps its zero-velocity updates
(:func:`~kangaroo_wbc.pipeline.rig.rig_estimation_config`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from nav_msgs.msg import Odometry
from sensor_msgs.msg import Imu, JointState
from std_msgs.msg import Bool

from kangaroo_wbc.components.samples import ActuatorSample, EncoderSample, ImuSample
from kangaroo_wbc.components.state_estimation import (
    StateEstimate,
    StateEstimation,
    StateEstimationConfig,
)
from kangaroo_wbc.errors import ConfigError, InputError
from kangaroo_wbc.estimation.calibration import CalibrationConfig
from kangaroo_wbc.estimation.encoder_sanity import EncoderSanityConfig
from kangaroo_wbc.estimation.floating_base import FloatingBaseConfig
from kangaroo_wbc.nodes import (
    PayloadFollower,
    joint_indices,
    load_node_model,
    rig_leg_parameter,
    rig_parameter,
    rig_sole,
    subscribe_sole_wrenches,
    urdf_dir_parameter,
)
from kangaroo_wbc.ros import qos
from kangaroo_wbc.ros.conversions import (
    JointIndexMap,
    arrays_to_transform_stamped,
    imu_msg_to_arrays,
    seconds_to_time_msg,
)
from kangaroo_wbc.ros.node_base import KangarooNode, main_for
from kangaroo_wbc.ros.params import SharedFields, parameter
from kangaroo_wbc.ros.serialized import joint_state_writer, odometry_writer

_D = StateEstimationConfig()  # the defaults are the component's (and its parts')


@dataclass
class StateEstimatorParams:
    """Parameters of the ``state_estimator`` node (``config/state_estimator.yaml``)."""

    rate_hz: float = parameter(
        _D.rate_hz, "Nominal rate of actuators/state [Hz] (dt when stamps are unusable)",
        bounds=(1.0, 10000.0), read_only=True)
    urdf_dir: str = urdf_dir_parameter()
    alpha: float = parameter(
        _D.alpha, "Closure-error gain alpha of eq. (38) [1/s], at most rate_hz", bounds=(0.0, 1e4))
    beta: float = parameter(
        _D.beta, "Actuated-position gain beta of eq. (38) [1/s], at most rate_hz",
        bounds=(0.0, 1e4))
    calibration_samples: int = parameter(
        _D.calibration_samples, "Still samples averaged by the start-up calibration",
        bounds=(1, 100000), read_only=True)
    calibration_max_velocity_m_s: float = parameter(
        _D.calibration.max_velocity, "Largest actuator speed while calibrating [m/s]",
        bounds=(0.0, None))
    calibration_max_drift_m: float = parameter(
        _D.calibration.max_position_drift, "Largest mean-position drift over the window [m]",
        bounds=(0.0, None))
    calibration_limit_margin: float = parameter(
        _D.calibration.limit_margin,
        "A calibrated actuator position or passive encoder reading beyond the position limits "
        "by more than this fails the calibration [m, rad]", bounds=(0.0, None), read_only=True)
    encoder_jump_speed_factor: float = parameter(
        _D.encoder_sanity.jump_speed_factor,
        "A reading implying more than this times the actuator's speed limit is a jump: sample "
        "skipped [-]", bounds=(1.0, 100.0), read_only=True)
    encoder_position_tolerance_m: float = parameter(
        _D.encoder_sanity.position_tolerance, "Noise allowance of the jump check [m]",
        bounds=(0.0, 0.1), read_only=True)
    encoder_max_rejected_samples: int = parameter(
        _D.encoder_sanity.max_rejected_samples,
        "Jumped samples in a row that make the jump persistent (recalibration)", bounds=(1, 1000),
        read_only=True)
    encoder_freeze_samples: int = parameter(
        _D.encoder_sanity.freeze_samples,
        "Bit-identical samples in a row, while the reported velocity moves, that make a reading "
        "frozen (recalibration)", bounds=(2, 100000), read_only=True)
    encoder_freeze_min_travel_m: float = parameter(
        _D.encoder_sanity.freeze_min_travel,
        "Travel the reported velocity must integrate to over those samples [m]",
        bounds=(0.0, None), read_only=True)
    imu_error_after_s: float = parameter(
        _D.imu_error_after_s,
        "imu/data silent for longer than this, relative to actuators/state, is an ERROR (a WARN "
        "from max_input_age_s) [s]", bounds=(0.0, None))
    sole_frames: list[str] = parameter(
        list(_D.sole_frames), "Contact frames (URDF)", read_only=True)
    imu_frame: str = parameter(_D.imu_frame, "IMU frame (URDF, on the base link)", read_only=True)
    odom_frame: str = parameter("odom", "World frame of the odometry")
    base_frame: str = parameter("base_link", "Floating-base frame (URDF root link)")
    contact_force_on_n: float = parameter(
        _D.contact_force_on_n, "Normal force above which a sole enters contact [N]",
        bounds=(0.0, None))
    contact_force_off_n: float = parameter(
        _D.contact_force_off_n, "Normal force below which a sole leaves contact [N]",
        bounds=(0.0, None))
    contact_timeout_s: float = parameter(
        _D.contact_timeout_s,
        "Without a fresh contact/<sole>/wrench every sole counts as in contact [s]",
        bounds=(0.0, None))
    max_input_age_s: float = parameter(
        _D.max_input_age_s,
        "IMU / encoder samples older than this, relative to the actuator sample, are stale [s]",
        bounds=(0.0, None))
    input_timeout_s: float = parameter(
        _D.input_timeout_s,
        "No actuators/state for longer than this (steady clock) is an ERROR (inputs stale) [s]",
        bounds=(0.01, 60.0))
    clock_restart_samples: int = parameter(
        _D.clock_restart_samples,
        "Out-of-order actuators/state samples in a row taken as a restarted clock (hardware or "
        "simulator restart: recalibration) instead of skipped", bounds=(2, 100000), read_only=True)
    accel_noise_std: float = parameter(
        _D.floating_base.accel_noise_std, "Process noise of the base acceleration [m/s^2]",
        bounds=(1e-6, None))
    leg_velocity_std: float = parameter(
        _D.floating_base.leg_velocity_std, "Leg-odometry velocity noise [m/s]",
        bounds=(1e-6, None))
    foot_position_std: float = parameter(
        _D.floating_base.foot_position_std, "Anchored-foot position noise [m]",
        bounds=(1e-6, None))
    use_accelerometer: bool = parameter(
        _D.floating_base.use_accelerometer, "Predict the base velocity with the accelerometer")
    snap_to_ground: bool = parameter(
        _D.floating_base.ground_height_m is not None,
        "Anchor soles touching down at ground_height_m (flat ground)")
    ground_height_m: float = parameter(
        _D.floating_base.ground_height_m or 0.0, "Height of the flat ground in odom [m]")
    publish_tf: bool = parameter(True, "Broadcast TF odom -> base_link")
    tf_rate_hz: float = parameter(
        100.0,
        "Largest rate of TF odom -> base_link [Hz] (stamp-based; the odometry keeps the sample "
        "rate)", bounds=(1.0, 10000.0))
    held_until_ready: bool = parameter(
        _D.held_until_ready,
        "The robot hangs on the crane (zero-velocity updates of the base) after each "
        "calibration until wbc/ready is true (the start-up handshake); false: always standing",
        read_only=True)
    closure_error_warn: float = parameter(
        _D.closure_error_warn, "Closure error reported as WARN above this [m, rad]",
        bounds=(0.0, None))
    rig: str = rig_parameter()
    rig_leg: str = rig_leg_parameter()

    def __post_init__(self) -> None:
        if self.alpha > self.rate_hz or self.beta > self.rate_hz:
            raise ValueError("alpha and beta must not exceed rate_hz (alpha dt, beta dt <= 1)")
        if self.contact_force_off_n >= self.contact_force_on_n:
            raise ValueError("contact_force_off_n must be below contact_force_on_n (hysteresis)")
        if self.imu_error_after_s < self.max_input_age_s:
            raise ValueError("imu_error_after_s must not be below max_input_age_s (WARN before ERROR)")


#: The parameters that are fields of the component's configuration and of its parts' (the
#: component's under the same names; its parts' under a prefix, some renamed with their unit).
SHARED_FIELDS = (
    SharedFields(StateEstimationConfig),
    SharedFields(CalibrationConfig, "calibration_", {"max_velocity": "calibration_max_velocity_m_s",
                                                     "max_position_drift": "calibration_max_drift_m"}),
    SharedFields(EncoderSanityConfig, "encoder_", {"position_tolerance": "encoder_position_tolerance_m",
                                                   "freeze_min_travel": "encoder_freeze_min_travel_m"}),
    SharedFields(FloatingBaseConfig),
)


def component_config(p: StateEstimatorParams) -> StateEstimationConfig:
    """The component's settings from the node's parameters."""
    state, calibration, encoders, base = SHARED_FIELDS
    return state.build(
        p, calibration=calibration.build(p), encoder_sanity=encoders.build(p, nominal_dt_s=1.0 / p.rate_hz),
        floating_base=base.build(p, ground_height_m=p.ground_height_m if p.snap_to_ground else None))


class StateEstimatorNode(KangarooNode):
    """Calibration, passive state and floating base behind the topic contract.

    Args:
        clm: a loaded model to share (composed deployment); None loads ``urdf_dir``.
        chained: True when the composed deployment feeds :meth:`process` directly: the sensor
            topics are then not subscribed (the outputs are still published).
    """

    def __init__(self, clm=None, chained: bool = False) -> None:
        super().__init__("state_estimator", StateEstimatorParams)
        p = self.params
        self.clm = clm = clm or load_node_model(p.urdf_dir, p.rig, p.rig_leg)
        self.rig = p.rig
        m = clm.model
        if any(m.joints[m.getJointId(n)].nq != 1 for n in clm.joint_names):
            raise ConfigError("state_estimator: every joint must be 1-DOF with nq = 1 to be published")
        config = component_config(p)
        if p.rig:  # the bench's one sole; never released (module docstring)
            from kangaroo_wbc.pipeline.rig import rig_estimation_config

            config = rig_estimation_config(rig_sole(p.rig_leg), config)
        try:
            self.component = StateEstimation(clm, config)
        except InputError as exc:
            raise ConfigError(f"state_estimator: {exc}") from exc
        self._idx_q, self._idx_v = joint_indices(m, clm.joint_names)
        self._act = JointIndexMap(clm.actuated_joint_names, what="actuator")
        self._enc = JointIndexMap(clm.absolute_encoders, what="passive encoder", allow_extra=True)
        # preserialised 1 kHz messages (kangaroo_wbc.ros.serialized): microseconds per message
        self._w_js = joint_state_writer(clm.joint_names, ("position", "velocity"))
        self._w_odom = odometry_writer(p.odom_frame, p.base_frame)
        self._cov = np.diag([0.0] * 3 + [1e-4] * 3).ravel()  # [0, 7, 14]: set per estimate
        #: composed deployment: called with ``(sample, estimate)`` after each published estimate
        self.estimate_listener = None
        pub, stream = self.create_publisher, self.create_stream_publisher
        self._pub_js = stream(JointState, "joint_states", qos.SENSOR_STATE)
        self._pub_odom = stream(Odometry, "estimation/base_odometry", qos.SENSOR_STATE)
        self._pub_cal = pub(JointState, "estimation/calibration", qos.LATCHED)
        self._tf = None
        self._next_tf = -float("inf")  # stamp [s] from which the next TF goes out
        if p.publish_tf:
            from kangaroo_wbc.ros.tf import make_tf_broadcaster

            self._tf = make_tf_broadcaster(self)
        self._payloads = PayloadFollower(self, clm)  # the controller's model/payloads
        if not chained:
            sub = self.create_subscription
            sub(JointState, "actuators/state", self._on_actuators, qos.SENSOR_LATEST)
            sub(JointState, "passive_encoders/state", self._on_encoders, qos.SENSOR_LATEST)
            sub(Imu, "imu/data", self._on_imu, qos.SENSOR_LATEST)
            subscribe_sole_wrenches(self, config.sole_frames)
            if not p.rig:  # on the bench the pelvis stays clamped
                sub(Bool, "wbc/ready", lambda msg: self.component.set_released(msg.data), qos.LATCHED)
        self.get_logger().info(
            f"state_estimator: {clm.n_a} actuators, {len(clm.joint_names)} joints, "
            f"{len(clm.absolute_encoders)} passive encoders; calibrating over {p.calibration_samples} samples"
        )

    # ------------------------------------------------------------------ messages → samples
    def _on_encoders(self, msg: JointState) -> None:
        try:
            arr = self._enc.from_joint_state(msg)
        except InputError as exc:
            return self.component.reject("passive_encoders/state", exc)
        self.component.on_encoders(EncoderSample(arr.position, arr.stamp_s))

    def _on_imu(self, msg: Imu) -> None:
        try:
            imu = imu_msg_to_arrays(msg)
            if imu.quaternion_xyzw is None:
                raise InputError("the IMU gives no orientation (orientation_covariance[0] = -1)")
        except InputError as exc:
            return self.component.reject("imu/data", exc)
        self.component.on_imu(
            ImuSample(imu.quaternion_xyzw, imu.angular_velocity, imu.linear_acceleration, imu.stamp_s))

    def _on_actuators(self, msg: JointState) -> None:
        try:
            arr = self._act.from_joint_state(msg, required=("position", "velocity"))
        except InputError as exc:
            self.component.reject("actuators/state", exc)
            return self.log_events(self.component)
        self.process(ActuatorSample(arr.position, arr.velocity, arr.effort, arr.stamp_s), msg.header.stamp)

    # ------------------------------------------------------------------ one sample
    def process(self, sample: ActuatorSample, stamp=None) -> StateEstimate | None:
        """Run the component on one actuator sample and publish its outputs (``stamp``: the
        sample's ``builtin_interfaces/Time``, made from ``sample.stamp_s`` when None)."""
        self._payloads.apply()
        est = self.component.step(sample)
        self.tick_count += 1
        if stamp is None:
            stamp = seconds_to_time_msg(sample.stamp_s)
        cal = self.component.new_calibration
        if cal is not None:
            self._pub_cal.publish(self._act.to_joint_state(cal.offsets, stamp=stamp))
        if est is not None:
            self._publish(est, stamp)
        self.log_events(self.component)
        if est is not None and self.estimate_listener is not None:
            self.estimate_listener(sample, est)
        return est

    def _publish(self, est: StateEstimate, stamp) -> None:
        p, t = self.params, est.stamp_s
        if self._pub_js.wanted():  # 1 kHz streams: only what somebody subscribes to
            self._pub_js.publish(self._w_js.write(t, position=est.q[self._idx_q], velocity=est.v[self._idx_v]))
        if not est.base_valid:
            return
        q_base, v_base = est.q[:7], est.v[:6]
        if self._pub_odom.wanted():
            cov = self._cov
            cov[0] = cov[7] = cov[14] = est.position_variance
            self._w_odom.write(pose_covariance=cov)
            cov[0] = cov[7] = cov[14] = est.velocity_variance
            self._pub_odom.publish(self._w_odom.write(t, pose=q_base, twist=v_base, twist_covariance=cov))
        if self._tf is not None and t >= self._next_tf:
            self._next_tf = t + 1.0 / p.tf_rate_hz - 1e-9
            self._tf.sendTransform(arrays_to_transform_stamped(
                q_base[:3], q_base[3:], parent_frame=p.odom_frame, child_frame=p.base_frame, stamp=stamp))

    def on_parameters_changed(self, params: StateEstimatorParams, changed: set[str]) -> None:
        if changed & {"odom_frame", "base_frame"}:
            self._w_odom = odometry_writer(params.odom_frame, params.base_frame)


main = main_for(StateEstimatorNode)

"""``state_estimator`` node: encoder calibration, passive state and floating base (paper Section VI-A).

A thin adapter around :class:`~kangaroo_wbc.components.state_estimation.StateEstimation`, which
holds the whole behaviour (calibration state machine, encoder sanity, stamp order, estimators; see
its module docstring). This file converts ``actuators/state``, ``passive_encoders/state``,
``imu/data`` and ``contact/<sole>/wrench`` to samples (with ``interface: ros2_control``: the
broadcasters' ``joint_states`` and ``imu`` through the boundary,
:class:`~kangaroo_wbc.ros.ros2_control_topics.BroadcasterInput`, the converted actuator sample
republished on ``actuators/state``) and publishes ``joint_states`` (all joints),
``estimation/base_odometry`` and TF ``odom → base_link`` (while the IMU is fresh), the latched
``estimation/calibration`` and ``/diagnostics``, all stamped with the actuator sample's stamp.
Topics: ``docs/interface.md``. The model follows the payloads the controller publishes on the
latched ``model/payloads`` (``docs/morphology.md``), applied before the next sample. With ``rig``
(``one_leg``) it runs on the test bench's model with its one sole and is never told that the robot
left the crane (``wbc/ready`` is not followed): the clamped pelvis keeps its zero-velocity updates
(:func:`~kangaroo_wbc.components.assembly.build_estimation`).
"""

from __future__ import annotations

import numpy as np
from nav_msgs.msg import Odometry
from sensor_msgs.msg import Imu, JointState
from std_msgs.msg import Bool

from kangaroo_wbc.components.assembly import apply_ready, build_estimation
from kangaroo_wbc.components.estimator_params import StateEstimatorParams
from kangaroo_wbc.components.ros2_control.settings import build_boundary
from kangaroo_wbc.components.samples import ActuatorSample, EncoderSample, ImuSample
from kangaroo_wbc.components.state_estimation import (
    StateEstimate,
)
from kangaroo_wbc.errors import ConfigError, InputError
from kangaroo_wbc.ros import qos
from kangaroo_wbc.ros.conversions import (
    JointIndexMap,
    arrays_to_transform_stamped,
    imu_msg_to_arrays,
    seconds_to_time_msg,
)
from kangaroo_wbc.ros.node_base import KangarooNode, main_for
from kangaroo_wbc.ros.node_support import joint_indices, load_node_model, subscribe_sole_wrenches
from kangaroo_wbc.ros.payloads import PayloadFollower
from kangaroo_wbc.ros.ros2_control_topics import BroadcasterInput
from kangaroo_wbc.ros.serialized import joint_state_writer, odometry_writer


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
        self.component = build_estimation(clm, p)  # on a bench: its one sole, never released
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
        #: ros2_control: the boundary of the broadcasters' messages (the composed chain uses it too)
        self.boundary = build_boundary(clm, p) if p.interface == "ros2_control" else None
        if not chained:
            sub = self.create_subscription
            if self.boundary is not None:  # the broadcasters' topics, converted to the native samples
                self.hardware = BroadcasterInput(self, self.boundary, self.process)
                if p.sim_clock == "stamps":
                    self.take_clock_from_stamps(self.hardware.joint_states_topic)
            else:
                if p.sim_clock == "stamps":
                    self.take_clock_from_stamps("actuators/state")
                self.create_joint_state_subscription("actuators/state", self._on_actuators, qos.SENSOR_LATEST)
                self.create_joint_state_subscription("passive_encoders/state", self._on_encoders, qos.SENSOR_LATEST)
                self.create_stamped_subscription(Imu, "imu/data", self._on_imu, qos.SENSOR_LATEST)
            subscribe_sole_wrenches(self, self.component.config.sole_frames)
            sub(Bool, "wbc/ready", lambda msg: apply_ready(msg.data, bool(p.rig), estimation=self.component),
                qos.LATCHED)
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
        assert arr.position is not None  # required by default: from_joint_state raised otherwise
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
        assert arr.position is not None and arr.velocity is not None  # required: from_joint_state raised otherwise
        self.process(ActuatorSample(arr.position, arr.velocity, arr.effort, arr.stamp_s), msg.header.stamp)

    # ------------------------------------------------------------------ one sample
    def process(self, sample: ActuatorSample, stamp=None) -> StateEstimate | None:
        """Run the component on one actuator sample and publish its outputs (``stamp``: the
        sample's ``builtin_interfaces/Time``, made from ``sample.stamp_s`` when None)."""
        self.stamp_clock(sample.stamp_s)  # with the clock taken from the stamps
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

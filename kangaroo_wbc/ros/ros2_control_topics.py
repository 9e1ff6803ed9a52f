"""The nodes' side of ``interface: ros2_control``: the broadcasters' messages in, the effort
controllers' commands out, through the boundary
(:class:`~kangaroo_wbc.components.ros2_control.boundary.Ros2ControlBoundary`).

* :class:`BroadcasterInput` (the ``state_estimator``): ``joint_state_broadcaster``'s
  ``JointState`` (read by name, any order; serial joints to the actuators through the exact
  closed-chain maps) and ``imu_sensor_broadcaster``'s ``Imu`` become the component's samples; the
  actuator sample is republished on ``actuators/state`` (the native contract), so the contact-wrench
  estimator and the controller's fault detector read the converted sample instead of each
  converting again. A message the boundary refuses (a joint missing, NaN, the IMU in another
  frame...) is skipped and reported by the component (``/diagnostics``, throttled log).
* :class:`EffortCommandOutput` (the ``whole_body_controller``): the actuator forces as each effort
  controller's ``Float64MultiArray`` (its ``joints`` order; serial torques of the same virtual
  work at the configuration the forces were computed at), behind the hand-over gate
  (:class:`~kangaroo_wbc.components.ros2_control.hand_over.CommandGate`: nothing before the
  controller's first ready); a command the boundary refuses is not published (throttled error).
  With ``switch_controllers`` it asks the controller manager for the switch at that first ready
  (:class:`~kangaroo_wbc.ros.controller_switch.SwitchClient`); if the switch fails the commands are
  withheld again (ERROR ``controller_switch``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from sensor_msgs.msg import Imu, JointState
from std_msgs.msg import Float64MultiArray

from kangaroo_wbc.components.ros2_control.boundary import BoundaryInputError, Ros2ControlBoundary
from kangaroo_wbc.components.ros2_control.hand_over import CommandGate
from kangaroo_wbc.components.samples import ActuatorSample
from kangaroo_wbc.ros import qos
from kangaroo_wbc.ros.conversions import read_stamped, time_msg_to_seconds
from kangaroo_wbc.ros.serialized import joint_state_writer


class BroadcasterInput:
    """The broadcasters' topics into a state-estimation component (module docstring).

    Args:
        node: the node (its ``component`` takes the encoders, the IMU and the rejections).
        boundary: the boundary (the topics come from its controllers' file).
        process: ``process(sample, stamp)``: the node's step on one actuator sample.
    """

    def __init__(self, node: Any, boundary: Ros2ControlBoundary, process: Callable[[ActuatorSample, Any], Any]) -> None:
        self.node, self.boundary, self._process = node, boundary, process
        cfg = boundary.config
        self.joint_states_topic = cfg.joint_states_topic().lstrip("/")  # the controller manager's namespace
        self.imu_topic = cfg.imu_topic().lstrip("/")
        node.create_joint_state_subscription(self.joint_states_topic, self._on_joint_states, qos.SENSOR_LATEST)
        node.create_stamped_subscription(Imu, self.imu_topic, self._on_imu, qos.SENSOR_LATEST)  # serialised form
        names = boundary.clm.actuated_joint_names
        self._writer = joint_state_writer(names)
        self._pub = node.create_stream_publisher(JointState, "actuators/state", qos.SENSOR_STATE)
        self._nan = np.full(len(names), np.nan)

    def _on_joint_states(self, msg: JointState) -> None:
        node = self.node
        try:
            state = self.boundary.state(msg.name, msg.position, msg.velocity, msg.effort,
                                        time_msg_to_seconds(msg.header.stamp))
        except BoundaryInputError as exc:
            node.component.reject(self.joint_states_topic, exc)
            return node.log_events(node.component)
        node.component.on_encoders(state.encoders)
        a = state.actuators
        if self._pub.wanted():
            self._pub.publish(self._writer.write(a.stamp_s, position=a.position, velocity=a.velocity,
                                                 effort=self._nan if a.effort is None else a.effort))
        self._process(a, msg.header.stamp)

    def _on_imu(self, msg: Imu | bytes) -> None:
        if isinstance(msg, bytes):  # the serialised form (1 kHz): no nested message built
            view, at = read_stamped(Imu, msg)
            if at is not None:
                v = view.values
                o, w, f = v[at["orientation"]], v[at["angular_velocity"]], v[at["linear_acceleration"]]
                return self._imu(view.frame_id, o, w, f, view.stamp_s, float(v[at["orientation_covariance"]][0]))
            msg = view
        o, w, f = msg.orientation, msg.angular_velocity, msg.linear_acceleration
        self._imu(msg.header.frame_id, (o.x, o.y, o.z, o.w), (w.x, w.y, w.z), (f.x, f.y, f.z),
                  time_msg_to_seconds(msg.header.stamp), msg.orientation_covariance[0])

    def _imu(self, frame_id: str, o: Any, w: Any, f: Any, stamp_s: float, orientation_covariance_0: float) -> None:
        try:
            imu = self.boundary.imu(frame_id, o, w, f, stamp_s, orientation_covariance_0)
        except BoundaryInputError as exc:
            return self.node.component.reject(self.imu_topic, exc)
        self.node.component.on_imu(imu)


class EffortCommandOutput:
    """The controller's forces to the effort controllers' command topics (module docstring)."""

    def __init__(self, node: Any, boundary: Ros2ControlBoundary) -> None:
        self.node, self.boundary = node, boundary
        self.gate = CommandGate()
        p = node.params
        self.switch = None  # the hand-over's switch client (switch_controllers)
        if getattr(p, "switch_controllers", False):
            from kangaroo_wbc.components.ros2_control.hand_over import SwitchRequester
            from kangaroo_wbc.components.ros2_control.settings import hand_over_plan
            from kangaroo_wbc.ros.controller_switch import SwitchClient

            requester = SwitchRequester(hand_over_plan(p, boundary.config), p.switch_timeout_s)
            self.switch = SwitchClient(node, requester, p.controller_manager)
        topics = {c: t.lstrip("/") for c, t in boundary.config.command_topics().items()}
        self._pub = {c: node.create_stream_publisher(Float64MultiArray, t, qos.COMMAND) for c, t in topics.items()}
        for topic in topics.values():  # a second source on an effort controller's topic is an ERROR
            node.watch_single_writer(topic, node.get_name())
        self._msg = {c: Float64MultiArray() for c in self._pub}

    def publish(self, force_n: np.ndarray, q: np.ndarray | None, ready: bool, stamp_s: float) -> None:
        """The forces [N] (model order) computed at ``q`` (the state's configuration), once the
        controller was ready."""
        if self.switch is not None:
            self.switch.on_ready(ready)
        if not self.gate.admit(ready, stamp_s) or self.withholds:
            return
        if self.gate.opened_at_s == stamp_s:
            self.node.get_logger().info(f"hand-over: effort commands out from t = {stamp_s:.3f} s")
        wanted = [c for c, pub in self._pub.items() if pub.wanted()]  # composed: nobody subscribes
        if not wanted:
            return
        try:
            data = self.boundary.commands(force_n, q)
        except BoundaryInputError as exc:
            self.node.throttled.error(exc.key, f"effort command not sent: {exc}")
            return
        for controller in wanted:
            msg = self._msg[controller]
            msg.data = data[controller].tolist()
            self._pub[controller].publish(msg)

    @property
    def withholds(self) -> bool:
        """The switch failed: no effort command goes out (the position controllers hold)."""
        return self.switch is not None and self.switch.requester.withholds

    def statuses(self) -> list:
        """The ``hand_over`` and ``controller_switch`` diagnostic statuses."""
        return [self.gate.status()] + ([self.switch.requester.status()] if self.switch is not None else [])

    def zero(self) -> None:
        """Zero effort on every controller (shutdown), if the commands were handed over."""
        if self.gate.open and not self.withholds:
            for controller, joints in self.boundary.hw.controllers.items():
                self._pub[controller].publisher.publish(Float64MultiArray(data=[0.0] * len(joints)))


__all__ = ["BroadcasterInput", "EffortCommandOutput"]

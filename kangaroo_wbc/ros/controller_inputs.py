"""The whole-body controller's inputs besides the state: the references (``wbc/com_reference``,
``wbc/<sole>/pose_reference``, stamped with the node's clock; a malformed one is refused and the last
stays), the walk's ``cmd_vel`` and the behaviour services (``docs/interface.md``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from geometry_msgs.msg import PointStamped, PoseStamped, Twist
from rclpy.clock import Clock, ClockType
from std_srvs.srv import Trigger

from kangaroo_wbc.control.wbc import FrameReference
from kangaroo_wbc.errors import InputError
from kangaroo_wbc.ros import qos
from kangaroo_wbc.ros.conversions import (
    pose_msg_to_arrays,
    vector3_msg_to_array,
    xyzw_to_pin_quaternion,
)


class ReferenceInputs:
    """The references of ``sole_frames`` and ``cmd_vel`` to the controller ``node``'s ``component``
    (``set_com_reference``, ``set_foot_reference``, ``set_velocity_command``, ``refused``)."""

    def __init__(self, node: Any, component: Any, sole_frames: Sequence[str]) -> None:
        self._node, self._component = node, component
        sub = node.create_subscription
        for sole in sole_frames:
            sub(PoseStamped, f"wbc/{sole}/pose_reference", lambda msg, s=sole: self.on_foot_reference(s, msg),
                qos.SENSOR_STATE)
        sub(PointStamped, "wbc/com_reference", self.on_com_reference, qos.SENSOR_STATE)
        # the walk's velocity command (teleop_twist_keyboard, a joystick's teleop_twist_joy, nav2...)
        sub(Twist, "cmd_vel", self.on_cmd_vel, qos.SENSOR_STATE)
        node.create_timer(1.0, self.check_cmd_vel_sources, clock=Clock(clock_type=ClockType.STEADY_TIME))

    def now_s(self) -> float:
        """The node's clock [s]: the time a reference is received at."""
        return self._node.get_clock().now().nanoseconds * 1e-9

    def on_com_reference(self, msg: PointStamped) -> None:
        """``wbc/com_reference``: the CoM position to hold (odom frame).

        Raises:
            InputError: a malformed point (also the subscription guard's WARN; the last reference stays).
        """
        try:
            point = vector3_msg_to_array(msg.point)
        except InputError as exc:
            self._component.refused("wbc/com_reference", f"{exc}: the last reference stays")
            raise
        self._component.set_com_reference(point, self.now_s())

    def on_foot_reference(self, sole: str, msg: PoseStamped) -> None:
        """``wbc/<sole>/pose_reference``: the pose of ``sole`` to follow (odom frame)."""
        try:
            position, quat = pose_msg_to_arrays(msg.pose)
        except InputError as exc:
            self._component.refused(f"wbc/{sole}/pose_reference", f"{exc}: the last reference stays")
            self._node.throttled.warning("pose_reference", f"wbc/{sole}/pose_reference skipped: {exc}")
            return
        R = xyzw_to_pin_quaternion(quat).toRotationMatrix()
        self._component.set_foot_reference(sole, FrameReference(position=position, rotation=R), self.now_s())

    def on_cmd_vel(self, msg: Twist) -> None:
        """``cmd_vel``: the walk's velocity command (forward, lateral [m/s], yaw rate [rad/s])."""
        try:
            self._component.set_velocity_command(msg.linear.x, msg.linear.y, msg.angular.z, self.now_s())
        except InputError as exc:
            self._node.throttled.warning("cmd_vel", f"cmd_vel skipped: {exc}")

    def check_cmd_vel_sources(self) -> None:
        """Two cmd_vel publishers fight over the walk: say so (a twist_mux picks one)."""
        node = self._node
        n = node.count_publishers(node.resolve_topic_name("cmd_vel"))
        if n > 1:
            node.throttled.warning("cmd_vel sources", f"cmd_vel has {n} publishers: their commands interleave; "
                                   "use one source (e.g. twist_mux)")


class BehaviourServices:
    """``node``'s ``std_srvs/Trigger`` services ``wbc/behaviour/<name>`` for each of ``names``
    (``select(name, how)`` starts it, InputError if it cannot) and ``wbc/reset`` (``reset()`` clears
    the safe-mode latch)."""

    def __init__(self, node: Any, names: Sequence[str], select: Callable[[str, str], None],
                 reset: Callable[[], None]) -> None:
        self._select, self._reset = select, reset
        for name in names:
            node.create_service(Trigger, f"wbc/behaviour/{name}", lambda req, res, n=name: self.on_behaviour(n, res))
        node.create_service(Trigger, "wbc/reset", self.on_reset)

    def on_behaviour(self, name: str, response: Trigger.Response) -> Trigger.Response:
        """Start behaviour ``name``; the response says why not when it cannot."""
        try:
            self._select(name, " (service)")
        except InputError as exc:
            response.success, response.message = False, str(exc)
            return response
        response.success, response.message = True, f"behaviour {name} starts at the next state sample"
        return response

    def on_reset(self, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        """Clear the safe-mode latch."""
        self._reset()
        response.success, response.message = True, "safe-mode latch cleared"
        return response


__all__ = ["ReferenceInputs", "BehaviourServices"]

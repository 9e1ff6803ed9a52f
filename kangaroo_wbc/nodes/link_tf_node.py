"""``link_tf`` node: TF of every link from ``joint_states``, and the URDF on ``robot_description``.

A stand-in for ``robot_state_publisher`` where it is not installed (pip-based ROS 2), used by
``kangaroo_wbc.launch.py`` in that case. Same contract: for every URDF joint, the transform of its
child link in its parent link (:class:`~kangaroo_wbc.model.link_poses.LinkPoses`), on ``/tf`` for
movable joints (from ``joint_states``, all 76 joints, decimated to ``rate_hz`` on the message
stamps) and once, latched, on ``/tf_static`` for fixed joints; the URDF text on
``robot_description`` (latched). With ``frame_prefix`` every frame name is prefixed
(``ground_truth/`` draws the simulator's truth as a ghost).

In the composed deployment the node is hosted in the composed process with ``chained=True``: it
subscribes nothing and the chain hands it each estimate (:meth:`LinkTfNode.on_positions`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
from builtin_interfaces.msg import Time
from rclpy.clock import ClockType
from rclpy.serialization import deserialize_message
from rclpy.time import Time as RosTime
from sensor_msgs.msg import JointState
from std_msgs.msg import String

from kangaroo_wbc.components.parameters import rig_leg_parameter, rig_parameter, urdf_dir_parameter
from kangaroo_wbc.errors import ConfigError, InputError, KangarooWbcError
from kangaroo_wbc.model.link_poses import LinkPoses
from kangaroo_wbc.ros import qos
from kangaroo_wbc.ros.conversions import (
    JointIndexMap,
    arrays_to_transform_stamped,
)
from kangaroo_wbc.ros.diagnostics import Level
from kangaroo_wbc.ros.node_base import KangarooNode, main_for
from kangaroo_wbc.ros.params import parameter
from kangaroo_wbc.ros.serialized import stamp_of_serialized, tf_message_writer

__all__ = ["LinkTfNode", "LinkTfParams", "main"]


@dataclass
class LinkTfParams:
    """Parameters of the ``link_tf`` node (``config/link_tf.yaml``)."""

    rate_hz: float = parameter(50.0, "Largest rate of /tf, on joint_states stamps [Hz]",
                               bounds=(0.1, 10000.0))
    urdf_dir: str = urdf_dir_parameter()
    frame_prefix: str = parameter("", "Prefix of every published frame name", read_only=True)
    rig: str = rig_parameter()  # a bench: its links and URDF (one leg)
    rig_leg: str = rig_leg_parameter()


class LinkTfNode(KangarooNode):
    """Publishes link transforms and the robot description (robot_state_publisher's contract).

    Args:
        node_name: the node's name (``ground_truth_link_tf`` for the composed deployment's ghost).
        chained: no ``joint_states`` subscription; positions come through :meth:`on_positions`.
        joint_states_topic, description_topic: topic names (launch remaps them in a process of
            its own; in the composed process the ghost's are given here).
        **node_kwargs: passed to the node (e.g. ``parameter_overrides``).
    """

    def __init__(self, node_name: str = "link_tf", *, chained: bool = False,
                 joint_states_topic: str = "joint_states", description_topic: str = "robot_description",
                 **node_kwargs) -> None:
        super().__init__(node_name, LinkTfParams, **node_kwargs)
        from kangaroo_wbc.robots.kangaroo.files import kangaroo_files
        from kangaroo_wbc.robots.kangaroo.robot import load_kangaroo

        p = self.params
        try:
            urdf_dir = Path(p.urdf_dir) if p.urdf_dir else None
            if p.rig:  # the bench's URDF (one leg), derived from the same files as every node's
                from kangaroo_wbc.robots.kangaroo.rig import load_one_leg, one_leg_texts

                urdf_text = one_leg_texts(p.rig_leg, urdf_dir)["urdf"]
                clm = load_one_leg(p.rig_leg, urdf_dir, floating_base=False)
            else:
                urdf_text = kangaroo_files(urdf_dir)[0].read_text()
                clm = load_kangaroo(floating_base=False, urdf_dir=urdf_dir)
            self.poses = LinkPoses(urdf_text, clm.model, clm.joint_names)
        except (KangarooWbcError, OSError) as exc:
            raise ConfigError(f"parameter 'urdf_dir' ({p.urdf_dir or 'package urdf/'}): {exc}") from exc
        self.joint_names = clm.joint_names
        self._joints = JointIndexMap(clm.joint_names, allow_extra=True)
        self._period_s = 1.0 / p.rate_hz
        self._last_s: float | None = None
        self._received = self._published = 0
        self._tf = self._tf_publisher()
        self._pub_static = self._static_publisher()
        self._pub_description = self.create_publisher(String, description_topic, qos.LATCHED)
        self._pub_description.publish(String(data=urdf_text))
        if self._pub_static is not None:
            self._pub_static(self._messages(self.poses.fixed(), self.get_clock().now().to_msg()))
        # its clock follows the stamps it receives: no /clock subscription at 1 kHz with sim time
        self._follow_stamps = bool(self.get_parameter("use_sim_time").value)
        if self._follow_stamps:
            self.use_time_set_in_process()
        if not chained:
            # serialised: a 1 kHz stream costs only the stamp's 8 bytes until a transform is due
            self.create_subscription(JointState, joint_states_topic, self._on_joint_states, qos.SENSOR_LATEST,
                                     raw=True)
        self.get_logger().info(f"{node_name}: {self.poses.n_moving} moving and {self.poses.n_fixed} fixed "
                               f"joints, /tf at most {p.rate_hz:g} Hz")

    def _tf_publisher(self):
        """``publish(stamp_s, (n_moving, 7) poses)`` on ``/tf`` (preserialised ``tf2_msgs/TFMessage``,
        tf2_ros' topic and QoS), or None without tf2_msgs."""
        try:
            from tf2_msgs.msg import TFMessage
        except ImportError:
            self.get_logger().warning("link_tf: no tf2_msgs; link transforms are not published")
            return None
        prefix = self.params.frame_prefix
        writer = tf_message_writer([(prefix + a, prefix + b) for a, b in self.poses.moving_pairs()])
        names = [f"t{i}" for i in range(self.poses.n_moving)]
        publisher = self.create_publisher(TFMessage, "/tf", qos.TF)
        return lambda stamp_s, poses: publisher.publish(writer.write(stamp_s, **dict(zip(names, poses))))

    def _static_publisher(self):
        """``publish(list of TransformStamped)`` on ``/tf_static`` (latched), or None without tf2."""
        try:
            from tf2_ros import StaticTransformBroadcaster
        except ImportError:
            pass
        else:
            return StaticTransformBroadcaster(self).sendTransform
        try:
            from tf2_msgs.msg import TFMessage
        except ImportError:
            self.get_logger().warning("link_tf: no tf2_msgs; fixed joints are not published")
            return None
        publisher = self.create_publisher(TFMessage, "/tf_static", qos.LATCHED)
        return lambda transforms: publisher.publish(TFMessage(transforms=transforms))

    def _messages(self, transforms, stamp: Time) -> list:
        prefix = self.params.frame_prefix
        return [arrays_to_transform_stamped(t.translation, t.quaternion_xyzw, parent_frame=prefix + t.parent,
                                            child_frame=prefix + t.child, stamp=stamp) for t in transforms]

    def due(self, stamp_s: float) -> bool:
        """Whether a sample stamped ``stamp_s`` [s] is published (``rate_hz`` on the stamps; a
        stamp that goes back in time restarts the decimation)."""
        return self._last_s is None or not self._last_s <= stamp_s < self._last_s + self._period_s

    def on_positions(self, positions: np.ndarray, stamp_s: float) -> None:
        """Publish the links' TF at ``positions`` (:attr:`joint_names` order) when due."""
        self._received += 1
        if not self.due(stamp_s):
            return
        try:
            poses = self.poses.moving_array(positions)
        except InputError as exc:
            self.throttled.warning("joint_states", f"joint_states sample skipped: {exc}")
            return
        self._last_s = stamp_s
        if self._follow_stamps:
            self.get_clock().set_ros_time_override(RosTime(  # type: ignore[attr-defined]  # rclpy: a node's clock is a ROSClocknanoseconds=round(stamp_s * 1e9),
                                                           clock_type=ClockType.ROS_TIME))
        if self._tf is not None:
            self._tf(stamp_s, poses)
        self._published += 1

    def _on_joint_states(self, raw: bytes) -> None:
        if not self.due(stamp_of_serialized(raw)):
            self._received += 1
            return
        msg = deserialize_message(raw, JointState)
        try:
            position = self._joints.from_joint_state(msg).position
        except InputError as exc:
            self._received += 1
            self.throttled.warning("joint_states", f"joint_states sample skipped: {exc}")
            return
        stamp = msg.header.stamp
        assert position is not None  # required by default: from_joint_state raised otherwise
        self.on_positions(position, stamp.sec + 1e-9 * stamp.nanosec)

    def diagnostic_statuses(self):
        values = {"received": self._received, "published": self._published}
        if not self._published:
            return [self.diagnostics.status("tf", Level.WARN, "no joint_states yet", values)]
        return [self.diagnostics.status("tf", Level.OK, "publishing link transforms", values)]


main = main_for(LinkTfNode)

"""``link_tf`` node: TF of every link from ``joint_states``, and the URDF on ``robot_description``.

A stand-in for ``robot_state_publisher`` where it is not installed (pip-based ROS 2), used by
``kangaroo_wbc.launch.py`` in that case. Same contract: for every URDF joint, the transform of its
child link in its parent link, on ``/tf`` for movable joints (from ``joint_states``, all 76 joints,
decimated to ``rate_hz`` on the message stamps) and once, latched, on ``/tf_static`` for fixed
joints; the URDF text on ``robot_description`` (latched). With ``frame_prefix`` every frame name is
prefixed (``ground_truth/`` draws the simulator's truth as a ghost). The link poses come from
pinocchio's forward kinematics of the spanning tree (fixed base), which is the URDF's own tree:

.. math:: {}^{p}T_{c} = ({}^{0}T_{p})^{-1}\\,{}^{0}T_{c}
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pinocchio as pin
from builtin_interfaces.msg import Time
from rclpy.serialization import deserialize_message
from rclpy.time import Time as RosTime
from sensor_msgs.msg import JointState
from std_msgs.msg import String

from kangaroo_wbc.errors import ConfigError, InputError, KangarooWbcError
from kangaroo_wbc.nodes import urdf_dir_parameter
from kangaroo_wbc.ros import qos
from kangaroo_wbc.ros.conversions import (
    JointIndexMap,
    arrays_to_transform_stamped,
    pin_quaternion_to_xyzw,
)
from kangaroo_wbc.ros.diagnostics import Level
from kangaroo_wbc.ros.node_base import KangarooNode, main_for
from kangaroo_wbc.ros.params import parameter
from kangaroo_wbc.ros.serialized import stamp_of_serialized
from kangaroo_wbc.ros.tf import make_tf_broadcaster


@dataclass
class LinkTfParams:
    """Parameters of the ``link_tf`` node (``config/link_tf.yaml``)."""

    rate_hz: float = parameter(50.0, "Largest rate of /tf, on joint_states stamps [Hz]",
                               bounds=(0.1, 10000.0))
    urdf_dir: str = urdf_dir_parameter()
    frame_prefix: str = parameter("", "Prefix of every published frame name", read_only=True)


def urdf_joints(urdf_text: str) -> list[tuple[str, str, str, str]]:
    """``(joint, type, parent link, child link)`` of every joint of a URDF document."""
    return [(j.get("name"), j.get("type"), j.find("parent").get("link"), j.find("child").get("link"))
            for j in ET.fromstring(urdf_text).iter("joint")]


class LinkTfNode(KangarooNode):
    """Publishes link transforms and the robot description (robot_state_publisher's contract)."""

    def __init__(self) -> None:
        super().__init__("link_tf", LinkTfParams)
        from kangaroo_wbc.robots.kangaroo.robot import load_kangaroo
        from kangaroo_wbc.sim.kangaroo import kangaroo_files

        p = self.params
        try:
            urdf_dir = Path(p.urdf_dir) if p.urdf_dir else None
            urdf_text = kangaroo_files(urdf_dir)[0].read_text()
            self.clm = load_kangaroo(floating_base=False, urdf_dir=urdf_dir)
        except (KangarooWbcError, OSError) as exc:
            raise ConfigError(f"parameter 'urdf_dir' ({p.urdf_dir or 'package urdf/'}): {exc}") from exc
        m = self.model = self.clm.model
        self.data = m.createData()
        self._joints = JointIndexMap(self.clm.joint_names, allow_extra=True)
        self._idx_q = np.array([m.joints[m.getJointId(n)].idx_q for n in self.clm.joint_names])
        self._q = pin.neutral(m)
        frame = {f.name: i for i, f in enumerate(m.frames) if f.type == pin.FrameType.BODY}
        joints = urdf_joints(urdf_text)
        unknown = sorted({link for *_, parent, child in joints for link in (parent, child)} - set(frame))
        if unknown:
            raise ConfigError(f"link_tf: URDF links without a pinocchio body frame: {unknown}")
        pairs = [(frame[parent], frame[child], parent, child) for _, kind, parent, child in joints]
        fixed = [kind == "fixed" for _, kind, _, _ in joints]
        self._moving = [pair for pair, f in zip(pairs, fixed, strict=True) if not f]
        self._period_s = 1.0 / p.rate_hz
        self._last_s: float | None = None
        self._received = self._published = 0
        self._tf = make_tf_broadcaster(self)
        self._pub_static = self._static_publisher()
        self._pub_description = self.create_publisher(String, "robot_description", qos.LATCHED)
        self._pub_description.publish(String(data=urdf_text))
        static = [pair for pair, f in zip(pairs, fixed, strict=True) if f]
        if self._pub_static is not None:
            self._pub_static(self._transforms(static, self.get_clock().now().to_msg()))
        # its clock follows the stamps it receives: no /clock subscription at 1 kHz with sim time
        if self.get_parameter("use_sim_time").value:
            from rclpy.parameter import Parameter

            self.set_parameters([Parameter("use_sim_time", Parameter.Type.BOOL, False)])
            self.get_clock()._set_ros_time_is_active(True)  # rclpy's TimeSource does the same
            self._follow_stamps = True
        else:
            self._follow_stamps = False
        # serialised: a 1 kHz stream costs only the stamp's 8 bytes until a transform is due
        self.create_subscription(JointState, "joint_states", self._on_joint_states, qos.SENSOR_LATEST, raw=True)
        self.get_logger().info(f"link_tf: {len(self._moving)} moving and {len(static)} fixed "
                               f"joints, /tf at most {p.rate_hz:g} Hz")

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

    def _transforms(self, pairs, stamp: Time) -> list:
        """TransformStamped of each ``(parent frame id, child frame id, parent, child)``."""
        pin.framesForwardKinematics(self.model, self.data, self._q)
        prefix, oMf = self.params.frame_prefix, self.data.oMf
        out = []
        for i_parent, i_child, parent, child in pairs:
            pose = oMf[i_parent].actInv(oMf[i_child])
            out.append(arrays_to_transform_stamped(
                pose.translation, pin_quaternion_to_xyzw(pin.Quaternion(pose.rotation)),
                parent_frame=prefix + parent, child_frame=prefix + child, stamp=stamp))
        return out

    def _on_joint_states(self, raw: bytes) -> None:
        self._received += 1
        t = stamp_of_serialized(raw)
        if self._last_s is not None and self._last_s <= t < self._last_s + self._period_s:
            return
        msg = deserialize_message(raw, JointState)
        try:
            position = self._joints.from_joint_state(msg).position
        except InputError as exc:
            self.throttled.warning("joint_states", f"joint_states sample skipped: {exc}")
            return
        self._last_s = t
        if self._follow_stamps:
            self.get_clock().set_ros_time_override(RosTime.from_msg(msg.header.stamp))
        self._q[self._idx_q] = position
        self._tf.sendTransform(self._transforms(self._moving, msg.header.stamp))
        self._published += 1

    def diagnostic_statuses(self):
        values = {"received": self._received, "published": self._published}
        if not self._published:
            return [self.diagnostics.status("tf", Level.WARN, "no joint_states yet", values)]
        return [self.diagnostics.status("tf", Level.OK, "publishing link transforms", values)]


main = main_for(LinkTfNode)

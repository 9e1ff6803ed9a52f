"""The whole-body controller's messages besides the command: ``wbc/timing``, ``wbc/com_target``, a
walk's ``wbc/footsteps`` and the bench's ``rig/sole_target`` (``docs/interface.md``)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pinocchio as pin
from geometry_msgs.msg import PointStamped, PoseStamped
from std_msgs.msg import Float64MultiArray, Header, MultiArrayDimension
from visualization_msgs.msg import Marker, MarkerArray

from kangaroo_wbc.components.rig import sole_target_in_base
from kangaroo_wbc.control.behaviours import footstep_markers
from kangaroo_wbc.ros import qos
from kangaroo_wbc.ros.conversions import arrays_to_pose_msg, seconds_to_time_msg
from kangaroo_wbc.ros.serialized import point_stamped_writer

#: ``wbc/timing``: seconds per phase of the tick, then the QP's iterations.
TIMING_LABELS = ("model", "build", "solve", "output", "total", "iterations")


def timing_msg(output: Any) -> Float64MultiArray:
    """``wbc/timing`` of a controller output (zeros when the tick gave none: safe mode)."""
    msg = Float64MultiArray()
    msg.layout.dim = [MultiArrayDimension(label=label, size=1, stride=1) for label in TIMING_LABELS]
    msg.data = ([output.timing.get(k, 0.0) for k in TIMING_LABELS[:-1]] + [float(output.qp.iterations)]
                if output else [0.0] * len(TIMING_LABELS))
    return msg


def footsteps_msg(boxes: list, contacts: Any, stamp_s: float, frame: str) -> MarkerArray:
    """``wbc/footsteps``: a walk's soles and planned footsteps as boxes in ``frame`` (the earlier
    plan's markers deleted first)."""
    header = Header(stamp=seconds_to_time_msg(stamp_s), frame_id=frame)
    markers = [Marker(header=header, ns="footsteps", id=0, action=Marker.DELETEALL)]
    for i, (spec, colour, size) in enumerate(footstep_markers(boxes, contacts), start=1):
        m = Marker(header=header, ns="footsteps", id=i, type=Marker.CUBE, action=Marker.ADD)
        m.pose.position.x, m.pose.position.y, m.pose.position.z = (float(x) for x in spec[:3])
        o = m.pose.orientation
        o.x, o.y, o.z, o.w = (float(x) for x in spec[3:7])
        m.scale.x, m.scale.y, m.scale.z = (float(x) for x in size)
        m.color.r, m.color.g, m.color.b, m.color.a = colour
        markers.append(m)
    return MarkerArray(markers=markers)


def pose_stamped(position: np.ndarray, rotation: np.ndarray, frame: str, stamp_s: float) -> PoseStamped:
    """A PoseStamped of a position [m] and a rotation matrix in ``frame``."""
    quat = pin.Quaternion(np.asarray(rotation, dtype=float))
    msg = PoseStamped(header=Header(stamp=seconds_to_time_msg(stamp_s), frame_id=frame))
    arrays_to_pose_msg(position, [quat.x, quat.y, quat.z, quat.w], msg.pose)
    return msg


class ControllerOutputs:
    """The messages above of ``node``'s controller ``component`` (its ``contacts``: the footsteps'
    soles), at the node's ``timing_rate_hz`` of state time."""

    def __init__(self, node: Any, component: Any, contacts: list) -> None:
        self._node, self._component, self._contacts = node, component, contacts
        p, pub = node.params, node.create_publisher
        self._pub_timing = pub(Float64MultiArray, "wbc/timing", qos.VISUALIZATION)
        self._pub_com = pub(PointStamped, "wbc/com_target", qos.VISUALIZATION)
        self._pub_footsteps = pub(MarkerArray, "wbc/footsteps", qos.VISUALIZATION)
        self._pub_sole_target = pub(PoseStamped, "rig/sole_target", qos.VISUALIZATION) if p.rig else None
        self._w_com = point_stamped_writer(p.odom_frame)
        self._footstep_plan = 0  # the walk's plan count of the last footsteps published
        self._next_timing = -float("inf")  # stamp [s] from which the next wbc/timing goes out

    def publish(self, cmd: Any, stamp_s: float) -> None:
        """The messages of command ``cmd`` of the state of ``stamp_s`` [s], at ``timing_rate_hz``
        (NaN stamp: none)."""
        if not stamp_s >= self._next_timing:  # rate-limited by the stamps (NaN: no timing)
            return
        p = self._node.params
        self._next_timing = stamp_s + 1.0 / p.timing_rate_hz - 1e-9
        self._pub_timing.publish(timing_msg(cmd.output))
        ref = self._component.supervisor.last_references
        if cmd.mode == "control" and ref is not None and ref.com_position is not None:
            self._pub_com.publish(self._w_com.write(stamp_s, point=ref.com_position))
        if self._pub_sole_target is not None:  # the bench sole's reference in the estimated pelvis
            target = sole_target_in_base(self._component, p.rig_leg)  # frame, while the behaviour gives one
            if target is not None:
                self._pub_sole_target.publish(pose_stamped(*target, "base_link", stamp_s))
        walk = self._component.supervisor.behaviour  # wbc/footsteps at each new plan of a walk
        if hasattr(walk, "footstep_boxes") and walk.plan_count != self._footstep_plan:
            self._footstep_plan = walk.plan_count
            self._pub_footsteps.publish(footsteps_msg(walk.footstep_boxes(), self._contacts, stamp_s, p.odom_frame))


__all__ = ["TIMING_LABELS", "timing_msg", "footsteps_msg", "pose_stamped", "ControllerOutputs"]

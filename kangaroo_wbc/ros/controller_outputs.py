"""The whole-body controller's messages besides the command: ``wbc/timing``, a walk's
``wbc/footsteps`` and the bench's ``rig/sole_target`` (``docs/interface.md``)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pinocchio as pin
from geometry_msgs.msg import PoseStamped
from std_msgs.msg import Float64MultiArray, Header, MultiArrayDimension
from visualization_msgs.msg import Marker, MarkerArray

from kangaroo_wbc.control.behaviours import footstep_markers
from kangaroo_wbc.ros.conversions import arrays_to_pose_msg, seconds_to_time_msg

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


__all__ = ["TIMING_LABELS", "timing_msg", "footsteps_msg", "pose_stamped"]

"""Messages the tests send, written by the package's one encoder of each (:mod:`kangaroo_wbc.ros.serialized`)
and read back with rclpy: a test's odometry or IMU sample is what a node would publish."""

from __future__ import annotations

from functools import cache
from typing import Any

import numpy as np
from rclpy.serialization import deserialize_message

from kangaroo_wbc.ros.conversions import time_msg_to_seconds
from kangaroo_wbc.ros.serialized import (
    SerializedWriter,
    imu_writer,
    odometry_writer,
    wrench_stamped_writer,
)


@cache
def _odometry_writer(frame_id: str, child_frame_id: str) -> SerializedWriter:
    return odometry_writer(frame_id, child_frame_id)


@cache
def _imu_writer(frame_id: str) -> SerializedWriter:
    return imu_writer(frame_id)


@cache
def _wrench_writer(frame_id: str) -> SerializedWriter:
    return wrench_stamped_writer(frame_id)


def arrays_to_odometry_msg(position: Any, quaternion_xyzw: Any, linear: Any, angular: Any, *, frame_id: str,
                           child_frame_id: str, stamp: Any, pose_covariance: Any = None,
                           twist_covariance: Any = None) -> Any:
    """``nav_msgs/Odometry``: the pose of ``child_frame_id`` in ``frame_id``, its twist in
    ``child_frame_id`` (linear [m/s], angular [rad/s]), 6x6 covariances (zero if None)."""
    from nav_msgs.msg import Odometry

    raw = _odometry_writer(frame_id, child_frame_id).write(
        time_msg_to_seconds(stamp), pose=np.r_[position, quaternion_xyzw], twist=np.r_[linear, angular],
        pose_covariance=np.zeros(36) if pose_covariance is None else np.reshape(pose_covariance, 36),
        twist_covariance=np.zeros(36) if twist_covariance is None else np.reshape(twist_covariance, 36))
    return deserialize_message(raw, Odometry)


def arrays_to_imu_msg(angular_velocity: Any, linear_acceleration: Any, *, frame_id: str, stamp: Any,
                      quaternion_xyzw: Any = None) -> Any:
    """``sensor_msgs/Imu``; without ``quaternion_xyzw`` the orientation is marked absent (REP 145:
    ``orientation_covariance[0] = -1``)."""
    from sensor_msgs.msg import Imu

    raw = _imu_writer(frame_id).write(
        time_msg_to_seconds(stamp), orientation=[0.0, 0.0, 0.0, 1.0] if quaternion_xyzw is None else quaternion_xyzw,
        angular_velocity=angular_velocity, linear_acceleration=linear_acceleration)
    msg = deserialize_message(raw, Imu)
    if quaternion_xyzw is None:
        msg.orientation_covariance[0] = -1.0
    return msg


def vector_to_wrench_stamped(wrench: Any, *, frame_id: str, stamp: Any) -> Any:
    """``geometry_msgs/WrenchStamped`` of ``wrench`` = force then torque [N, N·m] in ``frame_id``."""
    from geometry_msgs.msg import WrenchStamped

    raw = _wrench_writer(frame_id).write(time_msg_to_seconds(stamp), wrench=np.asarray(wrench, dtype=float))
    return deserialize_message(raw, WrenchStamped)

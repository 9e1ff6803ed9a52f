"""The ros2_control boundary, where the nodes import it: the arrays of the standard broadcasters and
effort controllers <-> the package's native samples.

The code lives in :mod:`kangaroo_wbc.components.ros2_control` (no rclpy), so that the one-process
loop converts through the very same functions as the nodes; see ``docs/ros2_control.md``.
"""

from kangaroo_wbc.components.ros2_control.boundary import (
    IMU_SENSOR_BROADCASTER,
    JOINT_STATE_BROADCASTER,
    QUATERNION_NORM_TOL,
    BoundaryInputError,
    NativeState,
    Ros2ControlBoundary,
    Ros2ControlConfig,
)

__all__ = ["IMU_SENSOR_BROADCASTER", "JOINT_STATE_BROADCASTER", "QUATERNION_NORM_TOL", "BoundaryInputError",
           "NativeState", "Ros2ControlBoundary", "Ros2ControlConfig"]

"""Acceleration-level tasks of the whole-body QP; each writes its rows ``J nu_dot = r`` and weights."""

from kangaroo_wbc.control.tasks.angular_momentum_task import AngularMomentumTask
from kangaroo_wbc.control.tasks.base import Task
from kangaroo_wbc.control.tasks.com_task import ComTask
from kangaroo_wbc.control.tasks.frame_pose_task import FramePoseTask, OrientationTask
from kangaroo_wbc.control.tasks.posture_task import PostureTask

__all__ = ["Task", "ComTask", "OrientationTask", "FramePoseTask", "PostureTask", "AngularMomentumTask"]

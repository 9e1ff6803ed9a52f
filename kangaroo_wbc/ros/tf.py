"""TF broadcasting that degrades cleanly where tf2 is not installed.

:func:`make_tf_broadcaster` returns, in order of preference:

1. ``tf2_ros.TransformBroadcaster`` (any ROS 2 installation),
2. a plain publisher of ``tf2_msgs/TFMessage`` on ``/tf`` with tf2_ros' QoS (environments that have
   the message package but not tf2_ros, e.g. pip-installed ROS wheels); on the wire this is exactly
   what TransformBroadcaster sends,
3. a no-op object (no TF at all; odometry topics still carry the same information).

Each call logs exactly one line naming the backend chosen. All three expose
``sendTransform(transform_or_list)`` (tf2_ros' name) and :attr:`backend`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from geometry_msgs.msg import TransformStamped

from kangaroo_wbc.ros import qos

TF_TOPIC = "/tf"


def _as_list(transform: TransformStamped | Iterable[TransformStamped]) -> list[TransformStamped]:
    if isinstance(transform, TransformStamped):
        return [transform]
    return list(transform)


class Tf2RosBroadcaster:
    """Thin wrapper of ``tf2_ros.TransformBroadcaster`` adding :attr:`backend`."""

    backend = "tf2_ros"

    def __init__(self, node: Any, broadcaster_cls: Any) -> None:
        self._broadcaster = broadcaster_cls(node)

    def sendTransform(self, transform: TransformStamped | Iterable[TransformStamped]) -> None:  # noqa: N802
        """Broadcast one or several transforms."""
        self._broadcaster.sendTransform(_as_list(transform))


class TfMessagePublisher:
    """Publishes ``tf2_msgs/TFMessage`` on ``/tf`` itself (same topic and QoS as tf2_ros)."""

    backend = "tf2_msgs"

    def __init__(self, node: Any, tf_message_cls: Any) -> None:
        self._msg_cls = tf_message_cls
        self._publisher = node.create_publisher(tf_message_cls, TF_TOPIC, qos.TF)

    def sendTransform(self, transform: TransformStamped | Iterable[TransformStamped]) -> None:  # noqa: N802
        """Broadcast one or several transforms."""
        self._publisher.publish(self._msg_cls(transforms=_as_list(transform)))


class NoTfBroadcaster:
    """Stand-in when neither tf2_ros nor tf2_msgs is importable: drops every transform."""

    backend = "none"

    def sendTransform(self, transform: TransformStamped | Iterable[TransformStamped]) -> None:  # noqa: N802
        """Do nothing."""


TfBroadcaster = Tf2RosBroadcaster | TfMessagePublisher | NoTfBroadcaster


def make_tf_broadcaster(node: Any) -> TfBroadcaster:
    """The best TF broadcaster available for ``node``; logs one info line naming it."""
    logger = node.get_logger()
    try:
        from tf2_ros import TransformBroadcaster
    except ImportError:
        pass
    else:
        logger.info("TF: broadcasting on /tf with tf2_ros.TransformBroadcaster")
        return Tf2RosBroadcaster(node, TransformBroadcaster)
    try:
        from tf2_msgs.msg import TFMessage
    except ImportError:
        pass
    else:
        logger.info("TF: tf2_ros not importable; publishing tf2_msgs/TFMessage on /tf directly")
        return TfMessagePublisher(node, TFMessage)
    logger.warning("TF: neither tf2_ros nor tf2_msgs importable; TF broadcasting disabled")
    return NoTfBroadcaster()

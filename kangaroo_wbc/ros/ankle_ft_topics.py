"""The contact-wrench node's optional ankle F/T inputs: each ``force_torque_sensor_broadcaster``'s
``<broadcaster>/wrench`` (``geometry_msgs/WrenchStamped``, relative to the node's namespace, as the
broadcasters publish in the controller manager's) handed to the component's
:class:`~kangaroo_wbc.components.ankle_ft.AnkleFtComparison`; a bad sample is skipped there with a
throttled WARN naming the topic (``docs/ros2_control.md``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from geometry_msgs.msg import WrenchStamped

from kangaroo_wbc.ros import qos
from kangaroo_wbc.ros.conversions import time_msg_to_seconds


def subscribe_ankle_ft(node: Any, component: Any) -> list[str]:
    """Subscribe ``node`` to the wrench topic of every sensor ``component.ankle_ft`` compares
    (none when it is off); returns the topics."""
    comparison = component.ankle_ft
    if comparison is None:
        return []
    topics = []
    for name in comparison.sensors:
        topic = f"{name}/wrench"

        def on_wrench(msg: WrenchStamped, name: str = name) -> None:
            f, t = msg.wrench.force, msg.wrench.torque
            comparison.on_wrench(name, msg.header.frame_id, np.array([f.x, f.y, f.z]), np.array([t.x, t.y, t.z]),
                                 time_msg_to_seconds(msg.header.stamp))
            node.log_events(component)

        node.create_subscription(WrenchStamped, topic, on_wrench, qos.SENSOR_LATEST)
        topics.append(topic)
    return topics


__all__ = ["subscribe_ankle_ft"]

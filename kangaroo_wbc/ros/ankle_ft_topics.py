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
from kangaroo_wbc.ros.conversions import wrench_stamped_to_arrays


def subscribe_ankle_ft(node: Any, component: Any) -> list[str]:
    """Subscribe ``node`` to the wrench topic of every sensor ``component.ankle_ft`` compares
    (none when it is off); returns the topics."""
    comparison = component.ankle_ft
    if comparison is None:
        return []
    topics = []
    for name in comparison.sensors:
        topic = f"{name}/wrench"

        def on_wrench(msg: WrenchStamped | bytes, name: str = name) -> None:
            wrench, frame_id, stamp_s = wrench_stamped_to_arrays(msg)
            comparison.on_wrench(name, frame_id, np.array(wrench[:3]), np.array(wrench[3:]), stamp_s)
            node.log_events(component)

        node.create_stamped_subscription(WrenchStamped, topic, on_wrench, qos.SENSOR_LATEST)  # serialised form
        topics.append(topic)
    return topics


__all__ = ["subscribe_ankle_ft"]

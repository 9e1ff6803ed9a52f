"""ROS 2 nodes of kangaroo_wbc: thin adapters around the library (one file per node)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def urdf_dir_parameter() -> Any:
    """The ``urdf_dir`` parameter of the nodes that load the Kangaroo model (read-only)."""
    from kangaroo_wbc.ros.params import parameter

    return parameter("", "Folder with kangaroo.urdf and kangaroo_closures.yaml (empty: the package's)",
                     read_only=True)


def load_model(urdf_dir: str, floating_base: bool = True) -> Any:
    """The Kangaroo closed-loop model from ``urdf_dir`` (empty: the source tree or installed share).

    Raises:
        ConfigError: the files are missing or malformed (the message names the parameter and the file).
    """
    from pathlib import Path

    from kangaroo_wbc.errors import ConfigError, KangarooWbcError
    from kangaroo_wbc.robots.kangaroo.robot import load_kangaroo

    try:
        return load_kangaroo(floating_base=floating_base, urdf_dir=Path(urdf_dir) if urdf_dir else None)
    except (KangarooWbcError, OSError) as exc:
        raise ConfigError(f"parameter 'urdf_dir' ({urdf_dir or 'package urdf/'}): {exc}") from exc


def joint_indices(model: Any, names: Sequence[str]) -> tuple[Any, Any]:
    """``(idx_q, idx_v)``: where the 1-DOF joints ``names`` sit in pinocchio's ``q`` and ``v``."""
    import numpy as np

    joints = [model.joints[model.getJointId(n)] for n in names]
    return np.array([j.idx_q for j in joints]), np.array([j.idx_v for j in joints])


def subscribe_sole_wrenches(node: Any, sole_frames: Sequence[str]) -> None:
    """``contact/<sole>/wrench`` → ``node.component.on_sole_force(i, normal force [N], stamp [s])``."""
    from geometry_msgs.msg import WrenchStamped

    from kangaroo_wbc.ros import qos
    from kangaroo_wbc.ros.conversions import time_msg_to_seconds

    def on_wrench(i: int, msg: WrenchStamped) -> None:
        node.component.on_sole_force(i, msg.wrench.force.z, time_msg_to_seconds(msg.header.stamp))

    for i, sole in enumerate(sole_frames):
        node.create_subscription(WrenchStamped, f"contact/{sole}/wrench",
                                 lambda msg, i=i: on_wrench(i, msg), qos.SENSOR_LATEST)

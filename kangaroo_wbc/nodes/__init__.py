"""ROS 2 nodes of kangaroo_wbc: thin adapters around the library (one file per node)."""

from __future__ import annotations

from typing import Any


def urdf_dir_parameter() -> Any:
    """The ``urdf_dir`` parameter of the nodes that load the Kangaroo model (read-only)."""
    from kangaroo_wbc.ros.params import parameter

    return parameter("", "Folder with kangaroo.urdf and kangaroo_closures.yaml (empty: the package's)",
                     read_only=True)

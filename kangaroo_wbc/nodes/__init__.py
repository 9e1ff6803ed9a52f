"""ROS 2 nodes of kangaroo_wbc: thin adapters around the library (one file per node)."""

from __future__ import annotations

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

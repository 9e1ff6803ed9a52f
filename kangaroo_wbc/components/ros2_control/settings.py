"""The nodes' ros2_control parameters and the boundary and simulated system built from them.

Every node that touches the hardware (``sim``, ``state_estimator``, ``whole_body_controller``)
declares the same four parameters: ``interface`` (``native``: the package's topic contract,
``docs/interface.md``; ``ros2_control``: the standard broadcasters and effort controllers,
``docs/ros2_control.md``), ``joint_space`` (``actuator`` or ``serial``: what the hardware exposes),
``hardware_map`` (an override of ``config/hardware_map.yaml``) and ``ros2_controllers`` (the
controller manager's file; empty: the package's for the joint space). :func:`build_boundary` and
:func:`build_system` read the files they name, once, at start-up.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kangaroo_wbc.components.parameters import parameter
from kangaroo_wbc.errors import ConfigError, KangarooWbcError
from kangaroo_wbc.model.hardware_map import JOINT_SPACES, HardwareMap, load_hardware_map

#: The hardware interfaces a node speaks.
INTERFACES = ("native", "ros2_control")
#: The nodes that touch the hardware: each takes its ``interface`` and ``joint_space``.
HARDWARE_NODES = ("sim", "state_estimator", "whole_body_controller")


def hardware_overrides(interface: str, joint_space: str = "actuator") -> dict[str, dict[str, str]]:
    """The parameters that put every node of :data:`HARDWARE_NODES` on ``interface`` (and, for
    ros2_control, ``joint_space``), by node name: none for ``native`` (the parameters' default).
    The one source of this mapping: the launch file, the one-process loop and the node graph
    runner take it from here.

    Raises:
        ConfigError: an unknown interface or joint space.
    """
    if interface not in INTERFACES or joint_space not in JOINT_SPACES:
        raise ConfigError(f"interface must be one of {list(INTERFACES)} and joint_space one of "
                          f"{list(JOINT_SPACES)}; got {interface!r}, {joint_space!r}")
    values = {} if interface == "native" else {"interface": interface, "joint_space": joint_space}
    return {name: dict(values) for name in HARDWARE_NODES}


def _one_of(valid: tuple[str, ...]):
    return lambda v: None if v in valid else f"must be one of {list(valid)}"


def interface_parameter() -> Any:
    """``interface``: native | ros2_control (read-only)."""
    return parameter("native", "Hardware interface: native (actuators/state, actuators/command...: docs/interface.md) "
                     "| ros2_control (joint_state_broadcaster, imu_sensor_broadcaster, effort controllers: "
                     "docs/ros2_control.md)", read_only=True, check=_one_of(INTERFACES))


def joint_space_parameter() -> Any:
    """``joint_space``: actuator | serial (read-only)."""
    return parameter("actuator", "ros2_control: the joints the hardware exposes: actuator (the 12 actuators) | "
                     "serial (six serial-equivalent joints per leg)", read_only=True, check=_one_of(JOINT_SPACES))


def hardware_map_parameter() -> Any:
    """``hardware_map``: an override file of the hardware map (read-only)."""
    return parameter("", "ros2_control: override of config/hardware_map.yaml (same structure: renames, signs, "
                     "units); empty: none", read_only=True)


def ros2_controllers_parameter() -> Any:
    """``ros2_controllers``: the controller manager's parameter file (read-only)."""
    return parameter("", "ros2_control: the controller manager's file (its effort controllers, broadcasters); "
                     "empty: the package's config/ros2_controllers[_serial].yaml", read_only=True)


def _config_dir() -> Path:
    from kangaroo_wbc.components.assembly import package_config_dir

    return package_config_dir()


def controllers_file(joint_space: str, path: str = "") -> Path:
    """The controller manager's file: ``path``, else the package's for ``joint_space``."""
    if path:
        return Path(path)
    return _config_dir() / ("ros2_controllers_serial.yaml" if joint_space == "serial" else "ros2_controllers.yaml")


def load_hardware(p: Any) -> tuple[HardwareMap, Any]:
    """The hardware map and the controllers' configuration of parameters ``p`` (``joint_space``,
    ``hardware_map``, ``ros2_controllers``).

    Raises:
        ConfigError: a missing or malformed file (named with the parameter).
    """
    from kangaroo_wbc.components.ros2_control.boundary import Ros2ControlConfig

    try:
        hw = load_hardware_map(_config_dir() / "hardware_map.yaml", p.hardware_map or None, joint_space=p.joint_space)
    except (KangarooWbcError, OSError) as exc:
        raise ConfigError(f"parameter 'hardware_map' ({p.hardware_map or 'none'}): {exc}") from exc
    path = controllers_file(p.joint_space, p.ros2_controllers)
    try:
        config = Ros2ControlConfig.from_file(path)
    except (KangarooWbcError, OSError) as exc:
        raise ConfigError(f"parameter 'ros2_controllers' ({path}): {exc}") from exc
    return hw, config


def build_boundary(clm: Any, p: Any) -> Any:
    """The nodes' :class:`~kangaroo_wbc.components.ros2_control.boundary.Ros2ControlBoundary` of
    parameters ``p`` on model ``clm``.

    Raises:
        ConfigError: the files do not fit each other or the model.
    """
    from kangaroo_wbc.components.ros2_control.boundary import Ros2ControlBoundary

    hw, config = load_hardware(p)
    return Ros2ControlBoundary(hw, clm, config)


def build_system(clm: Any, p: Any, actuator_names: list[str], encoder_names: list[str]) -> Any:
    """The simulator's :class:`~kangaroo_wbc.components.ros2_control.system.SimulatedRos2ControlSystem`
    of parameters ``p`` (the same files as the nodes' boundary).

    Raises:
        ConfigError: the files do not fit each other, the model or the simulator.
    """
    from kangaroo_wbc.components.ros2_control.boundary import Ros2ControlBoundary
    from kangaroo_wbc.components.ros2_control.system import SimulatedRos2ControlSystem

    hw, config = load_hardware(p)
    Ros2ControlBoundary(hw, clm, config)  # the same checks of the controllers' file against the map
    return SimulatedRos2ControlSystem(hw, clm, actuator_names, encoder_names, config, hand_over_plan(p, config))


def hand_over_plan(p: Any, config: Any) -> Any:
    """The :class:`~kangaroo_wbc.components.ros2_control.hand_over.HandOverPlan` of parameters ``p``
    (the controllers' file) and its effort controllers (``config``).

    Raises:
        ConfigError: the file does not list them (named with the parameter).
    """
    from kangaroo_wbc.components.ros2_control.hand_over import HandOverPlan

    path = controllers_file(p.joint_space, p.ros2_controllers)
    try:
        return HandOverPlan.from_file(path, list(config.controllers))
    except (KangarooWbcError, OSError) as exc:
        raise ConfigError(f"parameter 'ros2_controllers' ({path}): {exc}") from exc


def ankle_ft_sensors(hw: HardwareMap, config: Any) -> list[Any]:
    """The ankle F/T sensors both files describe: the map's ``force_torque`` entries whose
    broadcaster the controllers' file configures, as
    :class:`~kangaroo_wbc.components.ankle_ft.AnkleFtSensor` (a sensor in one file only is left out:
    the sensors are optional).

    Raises:
        ConfigError: a broadcaster whose ``frame_id`` differs between the two files.
    """
    from kangaroo_wbc.components.ankle_ft import AnkleFtSensor

    out = []
    for ft in hw.force_torque:
        frame = config.force_torque.get(ft.broadcaster)
        if frame is None:
            continue
        if frame != ft.frame_id:
            raise ConfigError(f"{config.source}: {ft.broadcaster}.frame_id {frame!r} differs from the hardware map's "
                              f"{ft.frame_id!r} ({hw.source})")
        out.append(AnkleFtSensor(ft.broadcaster, ft.frame_id, ft.sole))
    return out


__all__ = ["ankle_ft_sensors", "INTERFACES", "interface_parameter", "joint_space_parameter", "hardware_map_parameter",
           "ros2_controllers_parameter", "controllers_file", "load_hardware", "build_boundary", "build_system",
           "hand_over_plan"]

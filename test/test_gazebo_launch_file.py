"""``launch/gazebo.launch.py`` evaluated against stand-ins of the launch API (no ROS launch needed).

Unit tests: ``launch`` and ``launch_ros`` are replaced by recording classes, the ament index by a
temporary prefix, so the file's own logic runs: the clean error naming every missing package, and
with them "installed", the processes it would start and the files it hands them. Gazebo itself is
not run (not installable here).
"""

from __future__ import annotations

import sys
import types
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
GAZEBO = REPO / "launch" / "gazebo.launch.py"
REQUIRED = ["ros_gz_sim", "ros_gz_bridge", "gz_ros2_control", "controller_manager", "robot_state_publisher"]


class Recorded:
    """Any launch action: keeps its positional and keyword arguments."""

    def __init__(self, *args, **kwargs):
        self.args, self.kwargs = args, kwargs


class LaunchConfiguration:
    def __init__(self, name):
        self.name = name

    def perform(self, context):
        return context.launch_configurations[self.name]


@pytest.fixture
def gazebo_launch(monkeypatch):
    """The launch file as a module, over recording stand-ins of launch and launch_ros (unit-test helper)."""
    stubs = {
        "launch": {"LaunchDescription": Recorded},
        "launch.actions": {n: type(n, (Recorded,), {}) for n in
                           ("DeclareLaunchArgument", "IncludeLaunchDescription", "OpaqueFunction",
                            "RegisterEventHandler")},
        "launch.event_handlers": {"OnProcessExit": type("OnProcessExit", (Recorded,), {})},
        "launch.launch_description_sources": {"PythonLaunchDescriptionSource": Recorded},
        "launch.substitutions": {"LaunchConfiguration": LaunchConfiguration},
        "launch_ros": {},
        "launch_ros.actions": {"Node": type("Node", (Recorded,), {})},
    }
    for name, attrs in stubs.items():
        module = types.ModuleType(name)
        module.__dict__.update(attrs)
        monkeypatch.setitem(sys.modules, name, module)
    module = types.ModuleType("gazebo_launch")
    exec(compile(GAZEBO.read_text(), str(GAZEBO), "exec"), module.__dict__)
    return module


def _prefix(tmp_path, monkeypatch, packages):
    """An ament prefix where ``packages`` are registered; kangaroo_wbc's share is this source tree."""
    index = tmp_path / "share" / "ament_index" / "resource_index" / "packages"
    index.mkdir(parents=True)
    for name in packages:
        (index / name).touch()
        share = tmp_path / "share" / name
        share.mkdir()
        if name == "kangaroo_wbc":
            for folder in ("config", "urdf"):
                (share / folder).symlink_to(REPO / folder)
    monkeypatch.setenv("AMENT_PREFIX_PATH", str(tmp_path))
    return tmp_path / "share"


def _context(**configs):
    values = {"world": "empty.sdf", "spawn_z": "1.0", "joint_space": "actuator", "hardware_map": ""}
    return types.SimpleNamespace(launch_configurations={**values, **configs})


def test_arguments(gazebo_launch):
    ld = gazebo_launch.generate_launch_description()
    declared = {a.args[0]: a.kwargs for a in ld.args[0] if type(a).__name__ == "DeclareLaunchArgument"}
    assert declared["joint_space"]["default_value"] == "actuator"
    assert declared["joint_space"]["choices"] == ["actuator", "serial"]
    assert declared["hardware_map"]["default_value"] == ""


def test_missing_packages_are_named_before_anything_starts(gazebo_launch, tmp_path, monkeypatch):
    _prefix(tmp_path, monkeypatch, ["kangaroo_wbc", "ros_gz_sim"])
    with pytest.raises(RuntimeError, match="needs ros_gz_bridge, gz_ros2_control, controller_manager, "
                                           "robot_state_publisher \\(not installed\\); nothing was started"):
        gazebo_launch.gazebo(_context())


@pytest.mark.parametrize("space, sfx", [("actuator", ""), ("serial", "_serial")])
def test_processes_and_files(gazebo_launch, tmp_path, monkeypatch, space, sfx):
    share = _prefix(tmp_path, monkeypatch, ["kangaroo_wbc", *REQUIRED])
    actions = gazebo_launch.gazebo(_context(joint_space=space, world="my.sdf", spawn_z="0.95"))
    by_type = {}
    for a in actions:
        by_type.setdefault(type(a).__name__, []).append(a)
    (include,) = by_type["IncludeLaunchDescription"]
    assert dict(include.kwargs["launch_arguments"])["gz_args"] == "-r my.sdf"
    nodes = {n.kwargs["executable"]: n for n in by_type["Node"]}
    rsp = nodes["robot_state_publisher"].kwargs
    assert rsp["namespace"] == "ros2_control" and rsp["remappings"] == [("/tf", "tf"), ("/tf_static", "tf_static")]
    assert rsp["parameters"][0]["robot_description"] == (REPO / "urdf" / f"kangaroo_ros2_control{sfx}.urdf").read_text()
    create = nodes["create"].kwargs["arguments"]
    sdf = Path(create[create.index("-file") + 1])
    assert create[create.index("-z") + 1] == "0.95"
    controllers = f"{share}/kangaroo_wbc/config/ros2_controllers{sfx}.yaml"
    assert f"<parameters>{controllers}</parameters>" in sdf.read_text()
    assert nodes["parameter_bridge"].kwargs["arguments"] == ["/clock@rosgraph_msgs/msg/Clock[gz.msgs.Clock"]
    (handler,) = by_type["RegisterEventHandler"]
    on_exit = handler.args[0]
    assert on_exit.kwargs["target_action"] is nodes["create"]
    active, inactive = (n.kwargs["arguments"] for n in on_exit.kwargs["on_exit"])
    assert active == ["joint_state_broadcaster", "imu_sensor_broadcaster", "leg_left_position_controller",
                      "leg_right_position_controller", "--param-file", controllers]
    assert inactive == ["leg_left_effort_controller", "leg_right_effort_controller", "--inactive",
                        "--param-file", controllers]

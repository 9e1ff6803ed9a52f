"""Unit tests: the nodes' ros2_control parameters, their files, and the one assembly's overrides."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from kangaroo_wbc.components.assembly import ChainSettings, loop_overrides
from kangaroo_wbc.components.estimator_params import StateEstimatorParams
from kangaroo_wbc.components.parameters import params_from_values
from kangaroo_wbc.components.ros2_control.settings import build_boundary, controllers_file
from kangaroo_wbc.components.sim_params import SimParams
from kangaroo_wbc.errors import ConfigError
from kangaroo_wbc.robots.kangaroo.robot import load_kangaroo


def test_loop_overrides_give_the_hardware_nodes_the_interface():
    over = loop_overrides(behaviour="sway", interface="ros2_control", joint_space="serial")
    for node in ("state_estimator", "whole_body_controller"):
        assert over[node]["interface"] == "ros2_control" and over[node]["joint_space"] == "serial"
    assert "interface" not in over["contact_wrench_estimator"]  # reads the estimator's actuators/state
    assert "interface" not in loop_overrides(behaviour="sway")["state_estimator"]  # native: the files' value
    s = ChainSettings.load(overrides=over)
    assert (s.estimator.interface, s.controller.joint_space) == ("ros2_control", "serial")


def test_parameters_are_checked():
    with pytest.raises(ConfigError, match="interface.*must be one of"):
        params_from_values(StateEstimatorParams, {"interface": "ethercat"}, "state_estimator")
    with pytest.raises(ConfigError, match="joint_space.*must be one of"):
        params_from_values(SimParams, {"joint_space": "cartesian"}, "sim")
    with pytest.raises(ConfigError, match="not a rig"):
        params_from_values(SimParams, {"interface": "ros2_control", "rig": "one_leg"}, "sim")
    with pytest.raises(ConfigError, match="not a rig"):
        params_from_values(StateEstimatorParams, {"interface": "ros2_control", "rig": "one_leg"}, "state_estimator")


def test_files_are_found_and_a_bad_one_is_named(tmp_path):
    assert controllers_file("serial").name == "ros2_controllers_serial.yaml"
    assert controllers_file("actuator").name == "ros2_controllers.yaml"
    clm = load_kangaroo(floating_base=True)
    b = build_boundary(clm, SimpleNamespace(joint_space="serial", hardware_map="", ros2_controllers=""))
    assert b.serial and list(b.config.controllers) == ["leg_left_effort_controller", "leg_right_effort_controller"]
    missing = tmp_path / "nope.yaml"
    with pytest.raises(ConfigError, match="parameter 'ros2_controllers'.*nope.yaml"):
        build_boundary(clm, SimpleNamespace(joint_space="actuator", hardware_map="", ros2_controllers=str(missing)))
    with pytest.raises(ConfigError, match="parameter 'hardware_map'"):
        build_boundary(clm, SimpleNamespace(joint_space="actuator", hardware_map=str(missing), ros2_controllers=""))
    # the actuator-space controllers' file with the serial map: refused, not silently mismatched
    with pytest.raises(ConfigError, match="differ"):
        build_boundary(clm, SimpleNamespace(joint_space="serial", hardware_map="",
                                            ros2_controllers=str(controllers_file("actuator"))))


def test_ankle_ft_sensors_of_both_files(tmp_path):
    """The package's files: one sensor per ankle in both; a frame that differs between them is named;
    a broadcaster the controllers' file lacks is left out (optional)."""
    import yaml

    from kangaroo_wbc.components.assembly import ankle_ft_sensors as named_sensors
    from kangaroo_wbc.components.ros2_control.boundary import Ros2ControlConfig
    from kangaroo_wbc.components.ros2_control.settings import ankle_ft_sensors, load_hardware

    p = SimpleNamespace(joint_space="serial", hardware_map="", ros2_controllers="")
    hw, config = load_hardware(p)
    assert config.wrench_topics() == {"leg_left_ft_sensor_broadcaster": "/leg_left_ft_sensor_broadcaster/wrench",
                                      "leg_right_ft_sensor_broadcaster": "/leg_right_ft_sensor_broadcaster/wrench"}
    sensors = ankle_ft_sensors(hw, config)
    expected = [("left_foot_link", "left_sole"), ("right_foot_link", "right_sole")]
    assert [(s.frame_id, s.sole) for s in sensors] == expected
    assert named_sensors(["leg_right_ft_sensor_broadcaster"]) == sensors[1:]
    with pytest.raises(ConfigError, match="unknown sensor 'leg_rigth_ft_sensor_broadcaster'"):
        named_sensors(["leg_rigth_ft_sensor_broadcaster"])
    doc = yaml.safe_load(controllers_file("serial").read_text())
    doc["leg_left_ft_sensor_broadcaster"]["ros__parameters"]["frame_id"] = "left_ankle_cross_link"
    del doc["controller_manager"]["ros__parameters"]["leg_right_ft_sensor_broadcaster"]
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(doc))
    with pytest.raises(ConfigError, match="leg_left_ft_sensor_broadcaster.frame_id 'left_ankle_cross_link' differs"):
        ankle_ft_sensors(hw, Ros2ControlConfig.from_file(path))
    doc["leg_left_ft_sensor_broadcaster"]["ros__parameters"]["frame_id"] = "left_foot_link"
    path.write_text(yaml.safe_dump(doc))
    assert [s.sole for s in ankle_ft_sensors(hw, Ros2ControlConfig.from_file(path))] == ["left_sole"]
    doc["leg_left_ft_sensor_broadcaster"]["ros__parameters"]["frame_id"] = ""
    path.write_text(yaml.safe_dump(doc))
    with pytest.raises(ConfigError, match="frame_id: required by force_torque_sensor_broadcaster"):
        Ros2ControlConfig.from_file(path)

"""The Kangaroo's generated ros2_control files: committed = regenerated, and consistent with the model.

Unit tests (no ROS): the files are regenerated from ``params.yaml`` in memory.
"""

from __future__ import annotations

import numpy as np
import pytest

from kangaroo_wbc.errors import ConfigError
from kangaroo_wbc.model.ball_screw import BallScrewActuators
from kangaroo_wbc.model.hardware_map import check_against_model, load_hardware_map
from kangaroo_wbc.model.serial_map import SerialJointMap
from kangaroo_wbc.robots.kangaroo.ros2_control import ROOT, generated_texts

MAP = ROOT / "config" / "hardware_map.yaml"


@pytest.fixture(scope="module")
def texts() -> dict[str, str]:
    """Every generated file, regenerated from the packaged parameters (unit-test data)."""
    return generated_texts()


def test_committed_files_are_the_generated_ones(texts):
    stale = [rel for rel, text in texts.items() if not (ROOT / rel).is_file() or (ROOT / rel).read_text() != text]
    assert not stale, f"regenerate with: kangaroo-wbc model ros2-control ({stale})"


@pytest.mark.parametrize("space", ["actuator", "serial"])
def test_hardware_map_matches_the_model(kangaroo, space):
    hw = load_hardware_map(MAP, joint_space=space)
    check_against_model(hw, kangaroo)
    assert list(hw.controllers) == ["leg_left_effort_controller", "leg_right_effort_controller"]
    assert [len(j) for j in hw.controllers.values()] == [6, 6]
    commanded = [hw.joint(n).model for n in hw.commanded()]
    if space == "actuator":
        assert commanded == kangaroo.actuated_joint_names
        screws = BallScrewActuators.from_model(kangaroo, default_screw_lead_m=1.0, default_screw_efficiency=1.0)
        for j in hw.role("actuator"):
            i = kangaroo.actuated_joint_names.index(j.model)
            assert (j.screw_lead_m, j.screw_efficiency) == (screws.screw_lead_m[i], screws.efficiency[i])
            assert (j.encoder == "absolute") == (j.model in kangaroo.absolute_actuators)
        assert sorted(j.model for j in hw.role("encoder")) == sorted(kangaroo.absolute_encoders)
    else:
        assert hw.controllers["leg_left_effort_controller"] == (
            "leg_left_1_joint", "leg_left_2_joint", "leg_left_3_joint", "leg_left_length_joint",
            "leg_left_4_joint", "leg_left_5_joint")
        assert commanded[:6] == ["left_hip_yaw_joint", "left_hip_pitch_joint", "left_hip_roll_joint",
                                 "left_knee_joint", "left_ankle_pitch_joint", "left_ankle_roll_joint"]
        SerialJointMap(kangaroo, commanded)  # square and made of passive 1-DOF joints


def test_wrong_model_joint_is_named(kangaroo):
    over = {"joint_spaces": {"serial": {"joints": {"leg_left_length_joint": {"model": "left_knee"}}}}}
    hw = load_hardware_map(MAP, over, joint_space="serial")
    named = r"leg_left_length_joint.model: 'left_knee' is not one of the model's serial joints.*left_knee_joint"
    with pytest.raises(ConfigError, match=named):
        check_against_model(hw, kangaroo)
    drop = {"joint_spaces": {"actuator": {"joints": {"left_hip_yaw_joint": {"model": "left_knee_joint"}}}}}
    with pytest.raises(ConfigError, match=r"'left_knee_joint' is not one of the model's encoder joints"):
        check_against_model(load_hardware_map(MAP, drop, joint_space="actuator"), kangaroo)


# ------------------------------------------------------------------ the generated ros2_control files
SPACES = {"actuator": "", "serial": "_serial"}


def _block(urdf_text: str):
    import xml.etree.ElementTree as ET

    robot = ET.fromstring(urdf_text.split("-->", 1)[1])
    (block,) = robot.findall("ros2_control")
    return robot, block


@pytest.mark.parametrize("space", sorted(SPACES))
def test_block_controllers_and_sdf_name_the_map_joints_in_order(texts, space):
    import xml.etree.ElementTree as ET

    import yaml

    hw = load_hardware_map(MAP, joint_space=space)
    sfx = SPACES[space]
    robot, block = _block(texts[f"urdf/kangaroo_ros2_control{sfx}.urdf"])
    assert block.find("hardware/plugin").text == "gz_ros2_control/GazeboSimSystem"
    joints = block.findall("joint")
    state_only = [j.name for j in hw.joints if j.name not in hw.commanded()]
    assert [j.get("name") for j in joints] == hw.commanded() + state_only
    for j in joints:
        commands = [c.get("name") for c in j.findall("command_interface")]
        assert commands == (["effort", "position"] if j.get("name") in hw.commanded() else [])
        assert all(s.find("param") is None for s in j.findall("state_interface"))  # no initial_value reset
    urdf_joints = {j.get("name"): j for j in robot.findall("joint")}
    assert all(j.get("name") in urdf_joints and urdf_joints[j.get("name")].get("type") != "fixed" for j in joints)
    (sensor,) = block.findall("sensor")
    assert sensor.get("name") == hw.imu.sensor_name and len(sensor.findall("state_interface")) == 10

    cfg = yaml.safe_load(texts[f"config/ros2_controllers{sfx}.yaml"])
    cm = cfg["controller_manager"]["ros__parameters"]
    assert cm["update_rate"] == 1000
    for name, cjoints in hw.controllers.items():
        hold = name.replace("effort_controller", "position_controller")
        assert cm[name] == {"type": "effort_controllers/JointGroupEffortController", "fallback_controllers": [hold]}
        assert cfg[name]["ros__parameters"]["joints"] == list(cjoints)
        assert cfg[hold]["ros__parameters"]["joints"] == list(cjoints)
    assert cfg["joint_state_broadcaster"]["ros__parameters"] == {"use_local_topics": True}
    assert cfg["imu_sensor_broadcaster"]["ros__parameters"] == {"sensor_name": "imu_sensor", "frame_id": "imu"}

    sdf = ET.fromstring(texts[f"urdf/kangaroo_gz{sfx}.sdf"].split("-->", 1)[1]).find("model")
    sdf_joints = {j.get("name"): j.get("type") for j in sdf.findall("joint")}
    assert all(sdf_joints.get(n) in ("revolute", "prismatic") for n in hw.names)
    assert [s.get("name") for s in sdf.iter("sensor")] == [hw.imu.sensor_name]
    plugin = [p for p in sdf.findall("plugin") if p.get("filename") == "gz_ros2_control-system"]
    assert plugin[0].find("parameters").text == f"$(find kangaroo_wbc)/config/ros2_controllers{sfx}.yaml"


def test_serial_joints_get_an_effort_limit(texts, kangaroo):
    robot, block = _block(texts["urdf/kangaroo_ros2_control_serial.urdf"])
    hw = load_hardware_map(MAP, joint_space="serial")
    limits = {j.get("name"): float(j.find("limit").get("effort")) for j in robot.findall("joint")
              if j.find("limit") is not None}
    for j in block.findall("joint"):
        top = float(j.find("command_interface/param[@name='max']").text)
        assert top == limits[j.get("name")] > 0.0
    # the bound covers the standing pose's serial torques at the actuators' force limits
    from kangaroo_wbc.robots.kangaroo.robot import standing_configuration

    smap = SerialJointMap(kangaroo, [hw.joint(n).model for n in hw.commanded()])
    q = standing_configuration(kangaroo)
    f_max = kangaroo.model.effortLimit[kangaroo.idx_v_a]
    tau = abs(np.linalg.inv(smap.output_jacobian(q)).T) @ f_max
    assert all(limits[n] >= t for n, t in zip(hw.commanded(), tau))


def test_gazebo_files_from_the_share_and_with_an_override(tmp_path):
    from kangaroo_wbc.robots.kangaroo.ros2_control import gazebo_files

    files = gazebo_files(ROOT, "serial", tmp_path / "a")
    assert files.controllers_path == ROOT / "config" / "ros2_controllers_serial.yaml"
    assert f"<parameters>{ROOT}/config/ros2_controllers_serial.yaml</parameters>" in files.sdf_path.read_text()
    assert files.active == ("joint_state_broadcaster", "imu_sensor_broadcaster", "leg_left_position_controller",
                            "leg_right_position_controller")
    assert files.inactive == ("leg_left_effort_controller", "leg_right_effort_controller")
    assert '<joint name="leg_left_length_joint">' in files.urdf
    over = tmp_path / "over.yaml"
    over.write_text("joint_spaces: {serial: {rename: {leg_left_length_joint: left_knee}}}\n")
    files = gazebo_files(ROOT, "serial", tmp_path / "b", over)
    assert files.controllers_path.parent == tmp_path / "b"
    assert "left_knee" in files.controllers_path.read_text() and '<joint name="left_knee">' in files.urdf
    assert '<joint name="left_knee" type="revolute">' in files.sdf_path.read_text()
    with pytest.raises(ConfigError, match="joint_space: 'motor'"):
        gazebo_files(ROOT, "motor", tmp_path / "c")
    with pytest.raises(ConfigError, match="generated ros2_control files not found"):
        gazebo_files(tmp_path, "actuator", tmp_path / "d")


def test_cli_writes_a_urdf_for_another_hardware_plugin(tmp_path):
    from kangaroo_wbc_tools.cli import main

    out = tmp_path / "robot.urdf"
    assert main(["model", "ros2-control", "--hardware-plugin", "robot_control/RobotControl", "--joint-space", "serial",
                 "--out", str(out)]) == 0
    robot, block = _block(out.read_text())
    assert block.find("hardware/plugin").text == "robot_control/RobotControl"
    assert block.find("joint").get("name") == "leg_left_1_joint"

"""The Kangaroo's generated ros2_control files: committed = regenerated, and consistent with the model.

Unit tests (no ROS): the files are regenerated from ``params.yaml`` in memory.
"""

from __future__ import annotations

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
    assert not stale, f"regenerate with: python -m kangaroo_wbc.robots.kangaroo.ros2_control ({stale})"


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

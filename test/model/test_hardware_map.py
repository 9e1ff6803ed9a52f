"""The hardware map loader: valid files, overrides, and a named error for each malformed entry.

Unit tests (no ROS, no model): small in-memory documents of the format.
"""

from __future__ import annotations

import copy

import pytest
import yaml

from kangaroo_wbc.errors import ConfigError, JointNotFound
from kangaroo_wbc.model.hardware_map import FORMAT, load_hardware_map, parse_hardware_map


def document() -> dict:
    """Two actuators, one encoder, two serial joints (unit-test data)."""
    act = {"role": "actuator", "encoder": "relative", "effort_state": "motor_torque",
           "effort_command": "axial_force", "screw_lead_m": 0.05, "screw_efficiency": 0.9}
    return {
        "format": FORMAT, "robot": "toy", "joint_space": "actuator",
        "imu": {"sensor_name": "imu_sensor", "frame_id": "imu"},
        "joint_spaces": {
            "actuator": {
                "controllers": {"legs": ["a1", "a2"]},
                "joints": {"a1": {"model": "act_1", **act}, "a2": {"model": "act_2", **act, "encoder": "absolute"},
                           "e1": {"model": "pitch", "role": "encoder"}},
            },
            "serial": {
                "controllers": {"left": ["s1"], "right": ["s2"]},
                "joints": {"s1": {"model": "pitch", "role": "serial", "scale": -1.0, "offset": 0.1},
                           "s2": {"model": "roll", "role": "serial"}},
                "rename": {},
            },
        },
    }


def test_valid_document_both_spaces():
    hw = parse_hardware_map(document())
    assert hw.joint_space == "actuator" and hw.names == ["a1", "a2", "e1"]
    assert hw.controllers == {"legs": ("a1", "a2")} and hw.commanded() == ["a1", "a2"]
    a1 = hw.joint("a1")
    assert (a1.encoder, a1.effort_state, a1.effort_command) == ("relative", "motor_torque", "axial_force")
    assert a1.motor_torque_per_newton() == pytest.approx(0.05 / (2 * 3.141592653589793 * 0.9))
    assert hw.joint("e1").effort_state is None and hw.imu.frame_id == "imu"
    s = parse_hardware_map(document(), joint_space="serial")
    assert s.commanded() == ["s1", "s2"] and (s.joint("s1").scale, s.joint("s1").offset) == (-1.0, 0.1)
    assert s.joint("s2").effort_command == "joint_torque"


def test_override_file_renames_and_selects(tmp_path):
    base, over = tmp_path / "map.yaml", tmp_path / "over.yaml"
    base.write_text(yaml.safe_dump(document()))
    over.write_text(yaml.safe_dump({"joint_space": "serial",
                                    "joint_spaces": {"serial": {"rename": {"s1": "leg_1_joint"},
                                                                "joints": {"s2": {"scale": 2.0}}}}}))
    hw = load_hardware_map(base, over)
    assert hw.joint_space == "serial" and hw.controllers == {"left": ("leg_1_joint",), "right": ("s2",)}
    assert hw.joint("leg_1_joint").model == "pitch" and hw.joint("s2").scale == 2.0
    assert hw.joint("s2").model == "roll"  # merged, not replaced
    with pytest.raises(JointNotFound, match=r"'s1'.*leg_1_joint"):
        hw.joint("s1")


def _broken(path: str, value) -> dict:
    doc = copy.deepcopy(document())
    *keys, last = path.split(".")
    node = doc
    for k in keys:
        node = node[k]
    if value is None:
        del node[last]
    else:
        node[last] = value
    return doc


@pytest.mark.parametrize("path, value, message", [
    ("format", "kangaroo_wbc/hardware_map/0", "format: expected"),
    ("joint_space", "motor", r"joint_space: 'motor' is not one of \['actuator', 'serial'\]"),
    ("joint_spaces.actuator.joints.a1.role", "drive", r"joints.a1.role: 'drive' is not one of"),
    ("joint_spaces.actuator.joints.a1.effort_state", "current", r"a1.effort_state: 'current'"),
    ("joint_spaces.actuator.joints.a1.screw_lead_m", -0.05, r"a1.screw_lead_m: expected a finite positive"),
    ("joint_spaces.actuator.joints.a1.screw_efficiency", 1.2, r"a1.screw_efficiency: must be <= 1"),
    ("joint_spaces.actuator.joints.a1.modle", "x", r"joints.a1: unknown key 'modle'.*'model'"),
    ("joint_spaces.actuator.joints.e1.encoder", "relative", r"e1.encoder: 'relative' is for actuators only"),
    ("joint_spaces.actuator.joints.a2.model", "act_1", r"model joints \['act_1'\] mapped twice"),
    ("joint_spaces.actuator.controllers.legs", ["a1", "a3"], r"legs: unknown joint 'a3'.*Did you mean"),
    ("joint_spaces.actuator.controllers.legs", ["a1", "a2", "e1"], r"'e1' is an encoder"),
    ("joint_spaces.actuator.controllers.legs", ["a1"], r"commandable joints \['a2'\] are in no controller"),
    ("joint_spaces.actuator.controllers.more", ["a1"], r"joints \['a1'\] in more than one place"),
    ("joint_spaces.actuator.joints.s9", {"model": "x", "role": "serial"}, r"\['s9'\] have a role that does not"),
    ("imu.frame_id", "", r"imu.frame_id: expected a non-empty name"),
    ("imu", None, r"imu: expected a mapping"),
    ("joint_spaces.serial.joints.s1.scale", 0.0, r"s1.scale: must not be 0"),
    ("joint_spaces.serial.rename", {"s3": "x"}, r"serial.rename: unknown joint 's3'"),  # every space is checked
    ("joint_spaces.motor", {}, r"joint_spaces: unknown key 'motor'"),
])
def test_malformed_entries_are_named(path, value, message):
    doc = _broken(path, value)
    with pytest.raises(ConfigError, match=message) as err:
        parse_hardware_map(doc, "m.yaml")
    assert str(err.value).startswith("m.yaml")


def test_rename_collision_and_files(tmp_path):
    doc = _broken("joint_spaces.serial.rename", {"s1": "s2"})
    with pytest.raises(ConfigError, match=r"names \['s2'\] used twice"):
        parse_hardware_map(doc, joint_space="serial")
    with pytest.raises(ConfigError, match="not found"):
        load_hardware_map(tmp_path / "none.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("joint_space: [\n")
    with pytest.raises(ConfigError, match="bad.yaml: not valid YAML"):
        load_hardware_map(bad)


def test_force_torque_sensors_are_optional_and_checked():
    assert parse_hardware_map(document()).force_torque == ()  # absent: none
    doc = document()
    doc["force_torque"] = {"ft_l": {"sensor_name": "l_ft", "frame_id": "l_foot", "sole": "l_sole"}}
    (ft,) = parse_hardware_map(doc).force_torque
    assert (ft.broadcaster, ft.sensor_name, ft.frame_id, ft.sole) == ("ft_l", "l_ft", "l_foot", "l_sole")
    bad = copy.deepcopy(doc)
    bad["force_torque"]["ft_l"]["frame"] = "x"
    with pytest.raises(ConfigError, match="force_torque.ft_l.*frame"):
        parse_hardware_map(bad)
    bad = copy.deepcopy(doc)
    bad["force_torque"]["ft_l"]["sole"] = ""
    with pytest.raises(ConfigError, match=r"force_torque.ft_l.sole: expected a non-empty name"):
        parse_hardware_map(bad)
    bad = copy.deepcopy(doc)
    bad["force_torque"]["ft_r"] = dict(doc["force_torque"]["ft_l"], sensor_name="r_ft")
    with pytest.raises(ConfigError, match=r"sole \['l_sole'\] used by more than one sensor"):
        parse_hardware_map(bad)

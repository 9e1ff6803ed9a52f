"""Generated model files: no drift from the generator, valid SDF/closure files, cage option.

Unit tests (no ROS, no simulator).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pinocchio as pin
import pytest
import yaml

from kangaroo_wbc.model.closures import load_closure_file
from kangaroo_wbc.robots.kangaroo import FILE_NAMES, build, generate, generate_texts
from test.robots.conftest import CLOSURES, URDF, URDF_DIR

#: Total mass of the lower body without / with the torso cages [kg] (paper Section IV: ~36 / ~42).
MASS_KG = 36.0
MASS_CAGE_KG = 42.0


def test_committed_files_match_the_generator(tmp_path):
    """Regenerating from params.yaml reproduces the committed urdf/ files byte for byte."""
    paths = generate(tmp_path)
    assert {"urdf", "closures", "sdf", "serial_urdf"} <= set(paths)
    for key, path in paths.items():
        committed = URDF_DIR / FILE_NAMES[key]
        assert committed.is_file(), f"{committed.name} missing; run kangaroo-wbc model generate urdf"
        assert path.read_bytes() == committed.read_bytes(), (
            f"urdf/{committed.name} drifted from the generator; regenerate with "
            f"kangaroo-wbc model generate urdf")


def test_generated_files_carry_no_machine_paths():
    for key in ("urdf", "closures", "sdf", "serial_urdf", "mjcf"):
        path = URDF_DIR / FILE_NAMES[key]
        if path.is_file():
            text = path.read_text()
            assert "/tmp" not in text and "/home" not in text, path.name


def test_closure_file_keys_and_actuator_data():
    cf = load_closure_file(CLOSURES)
    assert len(cf.actuated_joints) == 12
    assert cf.absolute_actuators == ["left_leg_length_actuator", "right_leg_length_actuator"]
    assert len(cf.absolute_encoders) == 10
    assert set(cf.actuators) == set(cf.actuated_joints)
    for name, a in cf.actuators.items():
        assert {"screw_lead_m", "screw_efficiency", "max_force_n", "stroke_m"} <= set(a), name
        assert 0.0 < a["screw_efficiency"] <= 1.0 and a["screw_lead_m"] > 0.0 and a["max_force_n"] > 0.0
    # paper values by default (Section VI-B): 0.1 m leg length, 0.05 m hip and ankle, eta = 0.95
    assert cf.actuators["left_leg_length_actuator"]["screw_lead_m"] == pytest.approx(0.1)
    assert cf.actuators["left_ankle_inner_actuator"]["screw_lead_m"] == pytest.approx(0.05)
    assert cf.actuators["left_hip_inner_actuator"]["screw_efficiency"] == pytest.approx(0.95)
    assert sorted({c.submechanism for c in cf.closures}) == sorted(
        f"{s}_{m}" for s in ("left", "right") for m in ("hip_yaw", "hip_pitch_roll", "knee", "ankle"))


def test_pal_screw_model_is_selectable(params):
    desc = build(params.with_overrides({"screw_model": "pal"}))
    a = desc.actuators["left_leg_length_actuator"]
    assert a["screw_lead_m"] == pytest.approx(0.005) and a["screw_efficiency"] == pytest.approx(0.9)


def test_sdf_closes_every_loop():
    """SDF 1.7 holds every tree joint plus one joint per cut loop."""
    root = ET.parse(URDF_DIR / FILE_NAMES["sdf"]).getroot()
    assert root.tag == "sdf" and root.get("version") == "1.7"
    sdf_joints = {j.get("name"): j for j in root.iter("joint")}
    urdf_joints = {j.get("name") for j in ET.parse(URDF).getroot().iter("joint") if j.get("type") != "fixed"}
    assert urdf_joints <= set(sdf_joints)
    loops = [c.name for c in load_closure_file(CLOSURES).closures]
    assert set(loops) <= set(sdf_joints)
    for name in loops:
        j = sdf_joints[name]
        assert j.get("type") in ("revolute", "universal")
        assert j.find("parent").text != j.find("child").text
    links = {link.get("name") for link in root.iter("link")}
    frames = {f.get("name") for f in root.iter("frame")}
    assert {"left_sole", "right_sole", "imu"} <= frames
    assert all(f.get("attached_to") in links for f in root.iter("frame"))


def test_mass_with_and_without_cage(params):
    """~36 kg without the torso cages, ~42 kg with them (paper Section IV)."""
    texts = generate_texts(params, cage=True, mjcf=False)
    with_cage = pin.buildModelFromXML(texts["urdf"])
    without = pin.buildModelFromUrdf(str(URDF))
    mass = sum(i.mass for i in without.inertias)
    assert 35.0 <= mass <= 37.0 and mass == pytest.approx(MASS_KG, abs=0.5)
    assert sum(i.mass for i in with_cage.inertias) == pytest.approx(MASS_CAGE_KG, abs=0.5)
    serial = pin.buildModelFromXML(texts["serial_urdf"])
    assert sum(i.mass for i in serial.inertias) == pytest.approx(sum(i.mass for i in with_cage.inertias))
    assert yaml.safe_load(texts["closures"])["format"] == "kangaroo_wbc/closures/1"

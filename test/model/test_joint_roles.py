"""Joint roles: actuated, passive and held joints, named by the user (``--actuated``, ``--hold``, the
closure file's ``held_joints``) or chosen by the model with the reason and a warning when another
choice would do as well (unit tests; ``test/data/spring_leg.xml``: a leg with a leaf spring in its
shin, pinocchio's Cassie MJCF, the four-bar of ``test/model/mechanisms.py``)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest
import yaml

from kangaroo_wbc.errors import JointNotFound, ModelError
from kangaroo_wbc.model import ClosedLoopModel
from kangaroo_wbc.model.checks import run_checks
from kangaroo_wbc_tools.cli import main

DATA = Path(__file__).resolve().parents[1] / "data"
SPRING_LEG = DATA / "spring_leg.xml"
CASSIE = DATA / "cassie_closed_chain.xml"

#: A knee step [rad] and how far the foot may land from where the rigid leg puts it [m].
KNEE_STEP = 0.1
FOOT_TOL = 1e-9


def _foot_after_knee_step(clm: ClosedLoopModel) -> np.ndarray:
    """World position of the ``foot`` site after the knee turns by :data:`KNEE_STEP` from the reference."""
    theta = clm.q_ref[clm.idx_q_a].copy()
    theta[clm.actuated_joint_names.index("knee")] += KNEE_STEP
    q, info = clm.closure_fk(theta, clm.q_ref)
    assert info.converged
    data = clm.model.createData()
    pin.framesForwardKinematics(clm.model, data, q)
    return data.oMf[clm.model.getFrameId("foot")].translation.copy()


def test_the_spring_is_held_with_the_reason_and_the_alternatives():
    clm = ClosedLoopModel.from_files(SPRING_LEG, None)
    roles = clm.joint_roles()
    assert clm.locked_joint_names == ["shin_spring"]
    assert roles["shin_spring"]["role"] == "held" and "spring (stiffness 1500)" in roles["shin_spring"]["why"]
    assert roles["tarsus"]["role"] == roles["rod_joint"]["role"] == "passive"
    assert roles["knee"] == {"role": "actuated", "why": "MJCF actuator 'knee_motor'"}
    assert any("holding one of ['rod_joint', 'tarsus'] instead" in w for w in clm.warnings)
    assert run_checks(clm).ok


def test_holding_the_spring_moves_the_foot_as_the_rigid_leg(tmp_path):
    """Oracle: the same leg without its spring joint (the shin one rigid body)."""
    rigid = tmp_path / "rigid_leg.xml"
    text = SPRING_LEG.read_text()
    line = next(s for s in text.splitlines() if 'name="shin_spring"' in s)
    rigid.write_text(text.replace(line + "\n", ""))
    foot_rigid = _foot_after_knee_step(ClosedLoopModel.from_files(rigid, None))
    foot_spring_held = _foot_after_knee_step(ClosedLoopModel.from_files(SPRING_LEG, None))
    assert np.max(np.abs(foot_spring_held - foot_rigid)) <= FOOT_TOL
    # holding the tarsus instead leaves the spring to absorb the step: the foot lands elsewhere
    tarsus_held = ClosedLoopModel.from_files(SPRING_LEG, None, held=["tarsus"])
    assert np.linalg.norm(_foot_after_knee_step(tarsus_held) - foot_rigid) > 0.01


def test_named_held_joint_is_no_ambiguity():
    clm = ClosedLoopModel.from_files(SPRING_LEG, None, held=["tarsus"])
    assert clm.locked_joint_names == ["tarsus"] and clm.passive_joint_names == ["rod_joint", "shin_spring"]
    assert clm.joint_roles()["tarsus"] == {"role": "held", "why": "named by --hold"}
    assert not [w for w in clm.warnings if "instead would do as well" in w]
    assert run_checks(clm).ok


def test_held_joints_key_of_the_closure_file(mechanism_dir, tmp_path):
    doc = yaml.safe_load((mechanism_dir / "four_bar_closures.yaml").read_text())
    doc["actuated_joints"], doc["held_joints"] = [], ["crank_joint"]
    yml = tmp_path / "held.yaml"
    yml.write_text(yaml.safe_dump(doc))
    clm = ClosedLoopModel.from_files(mechanism_dir / "four_bar.urdf", yml)
    info = clm.info()
    assert info["n_dof"] == 0 and info["locked_joints"] == ["crank_joint"] and clm.n_u == clm.n_c == 2
    assert info["joint_roles"]["crank_joint"] == {"role": "held", "why": f"{yml}: held_joints"}


def test_actuated_joints_named_on_the_command_line(capsys):
    assert main(["model", "check", str(DATA / "four_bar_sites.xml"), "--actuated", "rocker_joint", "--json"]) == 0
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["ok"] is True
    assert main(["model", "info", str(DATA / "four_bar_sites.xml"), "--actuated", "rocker_joint", "--json"]) == 0
    roles = json.loads(capsys.readouterr().out.strip().splitlines()[-1])["joint_roles"]
    assert roles["rocker_joint"] == {"role": "actuated", "why": "named by --actuated"}
    assert roles["crank_joint"]["role"] == "passive"


def test_a_file_without_actuators_gets_them_chosen_with_a_warning():
    """Cassie's MJCF (test/data) has no actuator section: the model chooses, closest to the root first
    with the springs held, exactly Cassie's motors (hip roll, yaw, pitch, knee, foot crank per leg)."""
    clm = ClosedLoopModel.from_files(CASSIE, None)
    motors = [f"{side}-{j}" for side in ("left", "right") for j in ("hip-roll", "hip-yaw", "hip-pitch", "knee",
                                                                   "foot-crank")]
    assert sorted(clm.actuated_joint_names) == sorted(motors)
    assert sorted(clm.locked_joint_names) == sorted(f"{s}-{j}" for s in ("left", "right")
                                                    for j in ("shin", "heel-spring"))
    assert any("names no actuator" in w for w in clm.warnings)
    assert clm.joint_roles()["left-knee"]["why"].startswith("chosen by the model")


@pytest.mark.parametrize("kwargs, error, pattern", [
    ({"held": ["knee"]}, ModelError, r"\['knee'\] are both held and actuated"),
    ({"held": ["tarsos"]}, JointNotFound, r"unknown joint 'tarsos'.*Did you mean \['tarsus'\]"),
    ({"actuated": ["tarsus", "knee", "hip", "rod_joint"]}, ModelError, "not square"),
])
def test_bad_roles_are_refused(kwargs, error, pattern):
    with pytest.raises(error, match=pattern):
        ClosedLoopModel.from_files(SPRING_LEG, None, **kwargs)


def test_bad_role_on_the_command_line_is_exit_2(capsys):
    assert main(["model", "info", str(SPRING_LEG), "--hold", "tarsos", "--json"]) == 2
    assert "unknown joint 'tarsos'" in json.loads(capsys.readouterr().out.strip().splitlines()[-1])["error"]

"""The one-leg rig's model: derived at load time from the committed files, one leg's counts and
names, the same kinematics as the full model's leg, the pelvis welded in the simulator and the
force plate under the foot.

Unit tests on the model (pinocchio only); the simulator tests are integration tests (MuJoCo).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

import numpy as np
import pinocchio as pin
import pytest
import yaml

from kangaroo_wbc.errors import InputError
from kangaroo_wbc.model import ClosedLoopModel
from kangaroo_wbc.robots.kangaroo.rig import (
    PLATE_BELOW_SOLE_M,
    RIG_PELVIS_HEIGHT_M,
    load_one_leg,
    make_rig,
    make_rig_sim,
    one_leg_texts,
)
from test.robots.conftest import CLOSURES, URDF

#: Table II of the Kangaroo paper, per leg: actuated / passive joints and constraints per sub-mechanism.
LEG_COUNTS = {"hip_yaw": (1, 2, 2), "hip_pitch_roll": (2, 8, 8), "knee": (1, 6, 6), "ankle": (2, 16, 16)}
EXACT_TOL = 1e-9  # [m, rad]: the same model evaluated twice


@pytest.fixture(scope="module")
def left() -> ClosedLoopModel:
    """Unit-test data: the one-leg model keeping the left leg (floating base)."""
    return load_one_leg("left")


@pytest.fixture(scope="module")
def full() -> ClosedLoopModel:
    """Unit-test data: the committed full model (floating base)."""
    return ClosedLoopModel.from_files(URDF, CLOSURES, floating_base=True)


def test_one_leg_counts_are_one_leg_of_table_ii(left, full):
    info = left.info()
    assert info["floating_base"] and info["n_actuated"] == 6 and info["n_dof"] == 12
    assert info["n_passive"] == 32 and info["n_closures"] == 12 and info["n_constraints"] == 32
    assert info["constraint_rank"] == 32
    assert info["submechanisms"] == {f"left_{k}": {"n_actuated": a, "n_passive": p, "n_constraints": c}
                                     for k, (a, p, c) in LEG_COUNTS.items()}
    assert info["submechanisms"] == {k: v for k, v in full.info()["submechanisms"].items() if k.startswith("left_")}
    assert left.absolute_encoders == [n for n in full.absolute_encoders if n.startswith("left_")]
    assert left.absolute_actuators == [n for n in full.absolute_actuators if n.startswith("left_")]


def test_the_kept_leg_keeps_every_name_and_nothing_of_the_other_is_left(left, full):
    assert set(left.joint_names) == {n for n in full.joint_names if not n.startswith("right_")}
    assert left.actuated_joint_names == [n for n in full.actuated_joint_names if n.startswith("left_")]
    frames = {f.name for f in left.model.frames}
    assert not any(f.startswith("right_") for f in frames)
    assert {"base_link", "imu", "left_sole"} <= frames
    texts = one_leg_texts("left")
    links = {e.get("name") for e in ET.fromstring(texts["urdf"].split("\n", 1)[1]).iter("link")}
    committed = {e.get("name") for e in ET.parse(URDF).getroot().iter("link")}
    assert links == {n for n in committed if not n.startswith("right_")}
    doc = yaml.safe_load(texts["closures"])
    assert [c["name"] for c in doc["closures"]] == [c["name"] for c in yaml.safe_load(CLOSURES.read_text())["closures"]
                                                    if c["name"].startswith("left_")]
    assert set(doc["actuators"]) == set(left.actuated_joint_names)


def test_mass_is_the_pelvis_and_one_leg(left, full):
    pelvis = full.model.inertias[1].mass  # the free flyer's body: base_link and its fixed frames
    assert abs((full.mass_kg - left.mass_kg) - (left.mass_kg - pelvis)) < EXACT_TOL


def test_the_kept_leg_has_the_full_models_kinematics(left, full):
    """The sole's pose in the pelvis frame at the same actuator positions (closure FK on each model)."""
    rng = np.random.default_rng(3)
    lo, hi = (np.asarray(x)[left.idx_q_a] for x in (left.model.lowerPositionLimit, left.model.upperPositionLimit))
    for _ in range(3):
        theta = lo + (hi - lo) * rng.uniform(0.3, 0.7, left.n_a)
        q_left, _ = left.closure_fk(theta, left.q_ref)
        theta_full = np.zeros(full.n_a)
        theta_full[[full.actuated_joint_names.index(n) for n in left.actuated_joint_names]] = theta
        q_full, _ = full.closure_fk(theta_full, full.q_ref)
        poses = []
        for clm, q in ((left, q_left), (full, q_full)):
            data = clm.model.createData()
            pin.framesForwardKinematics(clm.model, data, q)
            base = data.oMf[clm.model.getFrameId("base_link")]
            poses.append(base.actInv(data.oMf[clm.model.getFrameId("left_sole")]))
        assert np.allclose(poses[0].translation, poses[1].translation, atol=1e-7)
        assert np.allclose(poses[0].rotation, poses[1].rotation, atol=1e-7)


def test_the_right_leg_can_be_kept_and_a_typo_is_an_input_error():
    texts = one_leg_texts("right")
    assert "right_sole" in texts["urdf"] and "left_sole" not in texts["urdf"]
    assert "left_" not in texts["closures"].split("\n", 2)[2]
    with pytest.raises(InputError, match="'left', 'right'"):
        one_leg_texts("middle")
    with pytest.raises(InputError, match="one_leg"):
        make_rig("two_legs")


@pytest.mark.integration
def test_simulated_rig_welds_the_pelvis_and_the_plate_measures_the_foot():
    """Integration (MuJoCo): the root has no free joint, the sole hangs ``PLATE_BELOW_SOLE_M`` above
    the plate at boot; with every drive off the leg falls onto the plate and stays on it, the pelvis
    does not move, and the plate's reading is the foot's contact force."""
    rig = make_rig("one_leg")
    sim = make_rig_sim(rig, seed=0, sensor_noise=False, ideal_actuators=True)
    assert not sim.floating_base and sim.actuator_names == rig.clm.actuated_joint_names
    assert sim.sole_names == [rig.sole]
    gt = sim.ground_truth()
    assert np.allclose(gt.base_position_in_world, [0.0, 0.0, RIG_PELVIS_HEIGHT_M])
    q = np.zeros(rig.clm.model.nq)
    m = rig.clm.model
    q[:3], q[3:7] = gt.base_position_in_world, gt.base_orientation_xyzw
    q[[m.joints[m.getJointId(n)].idx_q for n in gt.joint_names]] = gt.joint_positions
    data = m.createData()
    pin.framesForwardKinematics(m, data, q)
    sole_z = data.oMf[m.getFrameId(rig.sole)].translation[2]
    assert abs(sole_z - PLATE_BELOW_SOLE_M - rig.plate_top_in_world_m) < 1e-6
    assert np.allclose(sim.plate_force(), 0.0)
    sim.hold_base(True)
    assert sim.base_held  # the boot hold of the start-up contract, on a welded pelvis
    sim.hold_base(False)
    assert not sim.base_held
    for name in sim.actuator_names:
        sim.set_actuator_mode(name, "limp")
    sim.step(1500)  # 1.5 s
    gt = sim.ground_truth()
    assert np.allclose(gt.base_position_in_world, [0.0, 0.0, RIG_PELVIS_HEIGHT_M], atol=1e-9)
    plate, sole = sim.plate_force(), gt.contacts[rig.sole]
    assert sole.in_contact and -plate[2] > 10.0
    normal = float(np.linalg.norm(sole.force_in_sole))
    assert abs(np.linalg.norm(plate) - normal) < 1e-6 * max(1.0, normal)

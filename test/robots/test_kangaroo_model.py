"""Structure of the Kangaroo full model: Table II counts, rank, frames, mass properties.

Unit tests (no ROS, no simulator).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import numpy as np
import pinocchio as pin
import pytest
import yaml

from kangaroo_wbc.robots.kangaroo.files import standing_configuration
from test.robots.conftest import CLOSURES, URDF

#: Paper Table II per sub-mechanism: (actuated joints, passive joints in the tree, constraint rows).
TABLE_II = {"hip_yaw": (1, 2, 2), "hip_pitch_roll": (2, 8, 8), "knee": (1, 6, 6), "ankle": (2, 16, 16)}
#: Order of the sub-mechanisms along a leg (a joint is owned by the first one whose loops use it).
CHAIN = ("hip_yaw", "hip_pitch_roll", "knee", "ankle")
#: |J_l| entries below this are structural zeros.
STRUCTURAL_ZERO = 1e-9


def test_totals(kangaroo):
    """76 joints, 12 linear actuators, 64 passive joints, 64 independent constraint rows."""
    info = kangaroo.info()
    assert info["n_joints"] == 76 and info["n_actuated"] == 12 and info["n_passive"] == 64
    assert info["n_constraints_declared"] == 64 and info["n_constraints"] == 64
    assert info["constraint_rank"] == 64
    m = kangaroo.model
    kinds = {m.joints[m.getJointId(n)].shortname() for n in kangaroo.actuated_joint_names}
    assert all("JointModelP" in k for k in kinds), kinds
    assert all("JointModelR" in m.joints[m.getJointId(n)].shortname() for n in kangaroo.passive_joint_names)


def test_zero_configuration_is_closed(kangaroo):
    assert np.max(np.abs(kangaroo.closure_error(pin.neutral(kangaroo.model)))) < 1e-8


def _ownership(clm, params) -> dict[str, dict[str, set[str]]]:
    """Per sub-mechanism, the joints whose columns its rows use first along the leg."""
    q = standing_configuration(clm, params)
    J = np.abs(clm.constraint_jacobian(q))
    m = clm.model
    owned: dict[str, dict[str, set[str]]] = {}
    taken: set[str] = set()
    for side in ("left", "right"):
        for sub in CHAIN:
            name = f"{side}_{sub}"
            rows = clm.submechanisms[name].rows
            used = {n for n in clm.joint_names if J[rows, m.joints[m.getJointId(n)].idx_v].max() > STRUCTURAL_ZERO}
            mine = used - taken
            taken |= mine
            owned[name] = {"actuated": mine & set(clm.actuated_joint_names),
                           "passive": mine & set(clm.passive_joint_names), "used": used}
    return owned


def test_table_ii_counts_per_submechanism(kangaroo, params):
    """Each sub-mechanism owns Table II's actuated / passive joints and has Table II's rows."""
    owned = _ownership(kangaroo, params)
    declared = yaml.safe_load(CLOSURES.read_text())["submechanism_joints"]
    for side in ("left", "right"):
        for sub, (n_a, n_u, n_c) in TABLE_II.items():
            name = f"{side}_{sub}"
            assert len(owned[name]["actuated"]) == n_a, name
            assert len(owned[name]["passive"]) == n_u, name
            assert len(kangaroo.submechanisms[name].rows) == n_c, name
            assert set(declared[name]["actuated"]) == owned[name]["actuated"], name
            assert set(declared[name]["passive"]) == owned[name]["passive"], name
        # The only coupling between sub-mechanisms: the lower ankle rods span the knee joint.
        ankle = owned[f"{side}_ankle"]
        assert ankle["used"] - ankle["actuated"] - ankle["passive"] == {f"{side}_knee_joint"}


def test_passive_block_is_square_and_full_rank(kangaroo):
    q = pin.neutral(kangaroo.model)
    J_lu = kangaroo.constraint_jacobian(q)[:, kangaroo.idx_v_u]
    assert J_lu.shape == (64, 64)
    assert np.linalg.matrix_rank(J_lu) == 64


def test_frames_exist(kangaroo):
    m = kangaroo.model
    names = ["imu", "base_link"] + [f"{s}_sole{c}" for s in ("left", "right")
                                    for c in ("", "_corner_fl", "_corner_fr", "_corner_rl", "_corner_rr")]
    for n in names:
        assert m.existFrame(n), n


def test_soles_are_level_rectangles(kangaroo, params):
    """Sole frames: z up, corners at (+-L/2, +-W/2, 0) in the sole frame."""
    m, d = kangaroo.model, kangaroo.data
    pin.framesForwardKinematics(m, d, pin.neutral(m))
    L, W = params.num("leg.sole_length_m"), params.num("leg.sole_width_m")
    for side in ("left", "right"):
        sole = d.oMf[m.getFrameId(f"{side}_sole")]
        assert np.allclose(sole.rotation, np.eye(3), atol=1e-9)
        for tag, sx, sy in (("fl", 1, 1), ("fr", 1, -1), ("rl", -1, 1), ("rr", -1, -1)):
            p = sole.actInv(d.oMf[m.getFrameId(f"{side}_sole_corner_{tag}")]).translation
            assert np.allclose(p, [0.5 * sx * L, 0.5 * sy * W, 0.0], atol=1e-9)


def test_legs_are_mirror_images(kangaroo):
    m, d = kangaroo.model, kangaroo.data
    pin.framesForwardKinematics(m, d, pin.neutral(m))
    M = np.diag([1.0, -1.0, 1.0])
    swap = {"fl": "fr", "fr": "fl", "rl": "rr", "rr": "rl"}  # corners are named in the sole frame
    for f in m.frames:
        if f.name.startswith("left_"):
            right = "right_" + f.name[5:]
            right = re.sub(r"_corner_(fl|fr|rl|rr)", lambda g: "_corner_" + swap[g.group(1)], right)
            p_l = d.oMf[m.getFrameId(f.name)].translation
            p_r = d.oMf[m.getFrameId(right)].translation
            assert np.allclose(M @ p_l, p_r, atol=1e-9), f.name


def _urdf_inertials():
    for link in ET.parse(URDF).getroot().iter("link"):
        inertial = link.find("inertial")
        if inertial is None:
            continue
        a = inertial.find("inertia").attrib
        I = np.array([[a["ixx"], a["ixy"], a["ixz"]], [a["ixy"], a["iyy"], a["iyz"]], [a["ixz"], a["iyz"], a["izz"]]],
                     float)
        yield link.get("name"), float(inertial.find("mass").get("value")), I


def test_inertias_are_physical():
    """Positive mass, positive definite inertia, principal moments obey the triangle inequality."""
    count = 0
    for name, mass, I in _urdf_inertials():
        count += 1
        assert mass > 0.0, name
        assert np.allclose(I, I.T), name
        ev = np.linalg.eigvalsh(I)
        assert ev.min() > 0.0, name
        assert ev[0] + ev[1] >= ev[2] * (1.0 - 1e-9), name
    assert count == 77  # base_link + one body per joint


def test_centre_of_mass_near_the_pelvis(kangaroo, params):
    """Actuators at the pelvis and thigh: the CoM sits in the upper quarter of the standing robot."""
    q = standing_configuration(kangaroo, params)
    com = pin.centerOfMass(kangaroo.model, kangaroo.data, q)
    pin.framesForwardKinematics(kangaroo.model, kangaroo.data, q)
    sole_z = kangaroo.data.oMf[kangaroo.model.getFrameId("left_sole")].translation[2]
    assert abs(com[1]) < 1e-6
    assert com[2] - sole_z > 0.75 * (0.0 - sole_z)
    assert mass_of(kangaroo) == pytest.approx(36.0, abs=1.0)


def mass_of(clm) -> float:
    return float(sum(i.mass for i in clm.model.inertias))


#: PAL's public link masses [kg], each the total of the parameter file's bodies riding on that segment
#: (urdf/README.md, "Where the numbers come from"); the Table III fit moves mass within them only.
PAL_LINK_MASSES = {
    "hip_yaw_link": (2.75, {"hip_yaw_link": 1}),
    "hip_roll_link": (3.66, {"hip_roll_link": 1, "hip_actuator_cross": 2, "hip_actuator_cylinder": 2,
                             "hip_actuator_rod": 2, "hip_actuator_rod_end": 2}),
    "femur": (3.95, {"femur": 1, "knee_actuator_cylinder": 1, "knee_actuator_rod": 1, "knee_rocker1": 1,
                     "knee_relay": 1, "knee_rocker2": 1, "knee_pushrod": 1, "ankle_actuator_cylinder": 2,
                     "ankle_actuator_rod": 2, "ankle_crank": 2, "ankle_long_rod": 2, "ankle_knee_crank": 2}),
    "tibia": (1.02, {"tibia": 1, "ankle_lower_rod_cross": 2, "ankle_lower_rod": 2, "ankle_lower_rod_end": 2}),
}


@pytest.mark.parametrize("link", sorted(PAL_LINK_MASSES))
def test_pal_link_masses_are_kept(params, link):
    total, bodies = PAL_LINK_MASSES[link]
    assert sum(n * params.mass(b) for b, n in bodies.items()) == pytest.approx(total, abs=1e-9)


def test_segment_boxes_follow_mass_distribution(params):
    """The tibia's box sits where ``mass_distribution`` puts it: the tibia link's own CoM (no other
    body rides on that link) at ``com_fraction`` of the shank below the knee."""
    from kangaroo_wbc.robots.kangaroo.generator import build

    desc = build(params)
    tibia = desc.link("left_tibia_link").inertial
    f = params.num("mass_distribution.tibia.com_fraction")
    L = params.num("leg.tibia_length_m")
    assert tibia.com == pytest.approx([0.0, 0.0, -f * L], abs=1e-12)
    lf = params.num("mass_distribution.tibia.length_fraction")
    sx, sy = params.vec("mass_distribution.tibia.section_m", 2)
    m = params.mass("tibia")
    assert tibia.inertia[0, 0] == pytest.approx(m / 12.0 * (sy**2 + (lf * L) ** 2), rel=1e-12)


@pytest.mark.parametrize("key, value", [("mass_distribution.tibia.com_fraction", 0.2),
                                        ("mass_distribution.femur.length_fraction", 1.2),
                                        ("mass_distribution.foot_plate_height_m", 0.0),
                                        ("mass_distribution.hip_yaw_link_size_m", [0.1, -0.1, 0.1])])
def test_mass_distribution_outside_its_body_is_a_config_error(params, key, value):
    from kangaroo_wbc.errors import ConfigError

    with pytest.raises(ConfigError, match=key.split(".")[1]):
        params.with_overrides({key: value})

"""Unit tests of the MJCF exporter: determinism, MuJoCo loading, frames, closures, limits, errors."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import mujoco
import numpy as np
import pinocchio as pin
import pytest

from kangaroo_wbc.errors import FrameNotFound, JointNotFound, ModelError
from kangaroo_wbc.model.closures import ClosureSpec
from kangaroo_wbc.sim.mjcf_export import (
    classify_closure,
    export_mjcf,
    matrix_to_quat_wxyz,
    rpy_to_matrix,
)
from test.model.conftest import third_party_dir
from test.sim.conftest import MECHANISMS, RRPR_SOLE, paths

FRAME_TOL = 1e-12  # [m], [-]: exported frames must match pinocchio's URDF frames exactly


def _spec(dirs: tuple[str, ...]) -> ClosureSpec:
    return ClosureSpec("loop", "sub", "a", "u", dirs)


def test_export_is_deterministic():
    for name in MECHANISMS:
        a = export_mjcf(*paths(name), floating_base=False)
        b = export_mjcf(*paths(name), floating_base=False)
        assert a == b
    a = export_mjcf(*paths("rrpr"), floating_base=True, soles=RRPR_SOLE)
    assert a == export_mjcf(*paths("rrpr"), floating_base=True, soles=RRPR_SOLE)


@pytest.mark.parametrize("name", MECHANISMS)
def test_exported_model_loads_with_expected_elements(name, mjcf_fixed):
    m = mujoco.MjModel.from_xml_string(mjcf_fixed[name])
    assert m.nu == 1
    assert m.neq == 1
    # motor limits from the URDF effort / max_force_n
    assert m.actuator_forcelimited[0] and m.actuator_ctrlrange[0, 1] > 0
    # every URDF link is a body with a site of the same name
    root = ET.parse(paths(name)[0]).getroot()
    for link in root.findall("link"):
        assert mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, link.get("name")) >= 0
        assert mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_SITE, link.get("name")) >= 0
    # limited joints carry the URDF range
    for joint in root.findall("joint"):
        lim = joint.find("limit")
        if joint.get("type") == "fixed" or lim is None:
            continue
        j = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, joint.get("name"))
        assert m.jnt_limited[j]
        np.testing.assert_allclose(m.jnt_range[j], [float(lim.get("lower")), float(lim.get("upper"))])
    # IMU sensors and actuator sensors
    for s in ("imu_orientation", "imu_gyro", "imu_accelerometer"):
        assert mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_SENSOR, s) >= 0


@pytest.mark.parametrize("name", MECHANISMS)
def test_site_frames_match_pinocchio(name, mjcf_fixed):
    """Every link frame of the MJCF at a random configuration equals pinocchio's URDF frame."""
    urdf, _ = paths(name)
    pm = pin.buildModelFromUrdf(str(urdf))
    pd = pm.createData()
    m = mujoco.MjModel.from_xml_string(mjcf_fixed[name])
    d = mujoco.MjData(m)
    rng = np.random.default_rng(3)
    q = np.zeros(pm.nq)
    for j in range(1, pm.njoints):
        jm = pm.joints[j]
        val = rng.uniform(-0.5, 0.5)
        q[jm.idx_q] = val
        mj = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, pm.names[j])
        d.qpos[m.jnt_qposadr[mj]] = val
    pin.framesForwardKinematics(pm, pd, q)
    mujoco.mj_kinematics(m, d)
    base = m.body_pos[1]  # the fixed root is placed at base_position
    for f in pm.frames:
        if f.type != pin.FrameType.BODY:
            continue
        s = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_SITE, f.name)
        assert s >= 0
        fid = pm.getFrameId(f.name)
        np.testing.assert_allclose(d.site_xpos[s] - base, pd.oMf[fid].translation, atol=FRAME_TOL)
        np.testing.assert_allclose(d.site_xmat[s].reshape(3, 3), pd.oMf[fid].rotation, atol=FRAME_TOL)


def test_inertias_match_pinocchio(mjcf_fixed):
    urdf, _ = paths("rrpr")
    pm = pin.buildModelFromUrdf(str(urdf))
    m = mujoco.MjModel.from_xml_string(mjcf_fixed["rrpr"])
    assert np.sum(m.body_mass[1:]) == pytest.approx(sum(i.mass for i in pm.inertias))


def test_planar_pin_cut_becomes_connect(mjcf_fixed):
    m = mujoco.MjModel.from_xml_string(mjcf_fixed["four_bar"])
    assert m.eq_type[0] == mujoco.mjtEq.mjEQ_CONNECT
    assert m.eq_objtype[0] == mujoco.mjtObj.mjOBJ_SITE


def test_prismatic_cut_becomes_cut_body_with_slide(mjcf_fixed):
    m = mujoco.MjModel.from_xml_string(mjcf_fixed["rrpr_prismatic_cut"])
    assert m.eq_type[0] == mujoco.mjtEq.mjEQ_WELD
    j = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, "cut__slider_loop__z")
    assert j >= 0 and m.jnt_type[j] == mujoco.mjtJoint.mjJNT_SLIDE


def test_classification_rules():
    planar_structural = {"z": 0.0, "rx": 0.0, "ry": 0.0}  # planar loop in the x-y plane
    assert classify_closure(_spec(("x", "y")), planar_structural).kind == "connect"
    assert classify_closure(_spec(("x", "y", "z")), {}).kind == "connect"
    assert classify_closure(_spec(("x", "y", "z", "rx", "ry", "rz")), {}).kind == "weld"
    hinge = classify_closure(_spec(("x", "y", "z", "rx", "ry")), {})
    assert hinge.kind == "hinge" and hinge.free_axis == 2
    # redundant 6D closure on a planar loop: everything fixed -> weld
    assert classify_closure(_spec(("x", "y", "z", "rx", "ry", "rz")), planar_structural).kind == "weld"
    # prismatic cut (slide along x free) and universal cut (two free rotations) need a cut body
    assert classify_closure(_spec(("y", "rz")), planar_structural).kind == "cut_body"
    assert classify_closure(_spec(("x", "y", "z", "rz")), {}).kind == "cut_body"
    # a structural offset out of the plane shifts the F_a site
    shifted = classify_closure(_spec(("x", "y")), {"z": 0.02, "rx": 0.0, "ry": 0.0})
    assert shifted.kind == "connect" and shifted.offset_translation == (0.0, 0.0, 0.02)


def test_rotation_helpers_match_mujoco_and_the_urdf_convention():
    rng = np.random.default_rng(0)
    for _ in range(20):
        roll, pitch, yaw = rng.uniform(-3, 3, 3)
        R = rpy_to_matrix((roll, pitch, yaw))
        Rx, Ry, Rz = (pin.exp3(a * np.eye(3)[i]) for i, a in enumerate((roll, pitch, yaw)))
        np.testing.assert_allclose(R, Rz @ Ry @ Rx, atol=1e-12)  # URDF: R = Rz(yaw) Ry(pitch) Rx(roll)
        q = matrix_to_quat_wxyz(R)
        assert q[0] >= 0.0
        Rq = np.zeros(9)
        mujoco.mju_quat2Mat(Rq, q)
        np.testing.assert_allclose(Rq.reshape(3, 3), R, atol=1e-12)
        np.testing.assert_allclose(R, pin.rpy.rpyToMatrix(*pin.rpy.matrixToRpy(R)), atol=1e-12)


def test_floating_export_has_freejoint_and_sole_box(mjcf_rrpr_floating):
    m = mujoco.MjModel.from_xml_string(mjcf_rrpr_floating)
    assert m.jnt_type[0] == mujoco.mjtJoint.mjJNT_FREE
    g = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_GEOM, "sole__box")
    assert g >= 0
    np.testing.assert_allclose(2 * m.geom_size[g][:2], RRPR_SOLE["sole"])
    floor = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_GEOM, "floor")
    # floor <-> robot collide, robot <-> robot never
    assert (m.geom_contype[floor] & m.geom_conaffinity[g]) or (m.geom_contype[g] & m.geom_conaffinity[floor])
    robot = [i for i in range(m.ngeom) if m.geom_bodyid[i] != 0]
    for a in robot:
        for b in robot:
            assert not (m.geom_contype[a] & m.geom_conaffinity[b])


def test_errors_name_the_problem(tmp_path):
    urdf, yml = paths("four_bar")
    bad = tmp_path / "bad.yaml"
    bad.write_text(yml.read_text().replace("frame_u: coupler_tip", "frame_u: coupler_tp"))
    with pytest.raises(FrameNotFound, match="coupler_tip"):
        export_mjcf(urdf, bad, floating_base=False)
    bad.write_text(yml.read_text().replace("actuated_joints: [crank_joint]", "actuated_joints: [crank]"))
    with pytest.raises(JointNotFound, match="crank_joint"):
        export_mjcf(urdf, bad, floating_base=False)
    with pytest.raises(FrameNotFound):
        export_mjcf(urdf, yml, floating_base=False, soles={"left_sole": (0.2, 0.1)})
    with pytest.raises(ModelError, match="effort"):
        export_mjcf(urdf, yml, floating_base=False, actuator_params={"crank_joint": {"max_force_n": 0.0}})


@pytest.mark.parametrize("name", ["5bar_linkage", "digit_like_2legs"])
def test_third_party_fixtures_export(name):
    d = third_party_dir(name)
    xml = export_mjcf(d / "robot.urdf", d / "robot.yaml", floating_base=False, imu_frame=None)
    m = mujoco.MjModel.from_xml_string(xml)
    assert m.neq >= 1 and m.nu >= 2
    if name == "digit_like_2legs":  # joint_name/joint_type: 6 spherical and 6 universal joints
        assert int(np.sum(m.jnt_type == mujoco.mjtJoint.mjJNT_BALL)) == 6
        assert mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, "spherical_free_knee__x") >= 0
        assert mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, "spherical_free_knee__y") >= 0


def test_a_joint_marked_fixed_is_welded_in_the_export(tmp_path):
    """``joint_type: FIXED`` in an extended-URDF closure file: no MuJoCo joint for it (its child
    body is welded at the neutral position), the weld closure becomes an equality, MuJoCo loads
    the model and keeps the loop closed."""
    import mujoco

    from test.model.linkages import welded_four_bar

    urdf, closures = welded_four_bar(tmp_path)
    xml = export_mjcf(urdf, closures, floating_base=False)
    model = mujoco.MjModel.from_xml_string(xml)
    names = [model.joint(i).name for i in range(model.njnt)]
    assert "spare_joint" not in names and not any(n.startswith("spare_joint__") for n in names)
    assert model.neq >= 1
    data = mujoco.MjData(model)
    for _ in range(200):
        mujoco.mj_step(model, data)
    assert np.all(np.isfinite(data.qpos))

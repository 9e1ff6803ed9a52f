"""MJCF read as MuJoCo reads it (``kangaroo_wbc.model.mjcf``). Oracle: MuJoCo itself, on the same file:
its forward kinematics (``mj_kinematics``: body and site placements) and its equality residuals
(``efc_pos`` of ``mj_forward``). Unit tests (no ROS); the models are in ``test/data`` or written here."""

from __future__ import annotations

from pathlib import Path

import mujoco
import numpy as np
import pinocchio as pin
import pytest

from kangaroo_wbc.errors import ModelError
from kangaroo_wbc.model import ClosedLoopModel, sources
from kangaroo_wbc.model.checks import run_checks
from kangaroo_wbc.model.mjcf import MjcfModel, load_mjcf
from kangaroo_wbc_tools.cli import main

DATA = Path(__file__).resolve().parents[1] / "data"
FOUR_BAR_SITES = DATA / "four_bar_sites.xml"

#: Placement agreement with MuJoCo [m] (the acceptance figure); rotations compared entrywise.
PLACEMENT_TOL = 1e-9

#: Every joint type, a joint ref on hinges and slides, several joints in one body, joint anchors off
#: the body origin, a free joint with an unusual name, a body without joints, degrees and a zyx euler
#: sequence, and two top-level bodies beside the floating one.
TREE = """<mujoco model="tree">
  <compiler angle="degree" eulerseq="zyx"/>
  <worldbody>
    <body name="floor" pos="0.3 -0.2 0.1" euler="10 20 30">
      <geom type="box" size="0.1 0.1 0.1" mass="1"/>
    </body>
    <body name="base" pos="0 0 1" quat="0.9 0.1 0.2 0.3">
      <freejoint name="the base's free joint"/>
      <geom type="box" size="0.1 0.1 0.1" mass="2"/>
      <body name="a" pos="0.1 0.2 0.3" euler="30 -10 5">
        <joint name="ja" type="hinge" axis="1 1 0" pos="0.05 0 0.02" ref="20" range="-90 90"/>
        <joint name="jb" type="slide" axis="0 0.6 0.8" ref="0.03"/>
        <geom type="capsule" fromto="0 0 0 0 0.15 0" size="0.01" mass="0.3"/>
        <body name="b" pos="0 0.15 0">
          <joint name="jc" type="ball" pos="0.01 0.02 0.03"/>
          <geom type="sphere" size="0.02" mass="0.1" pos="0.1 0 0"/>
          <site name="tip" pos="0.2 0 0" euler="0 90 0"/>
          <body name="c" pos="0.2 0 0">
            <geom type="sphere" size="0.02" mass="0.1"/>
            <body name="d" pos="0.1 0 0">
              <joint name="jd" type="hinge" axis="0 0 1" ref="-45"/>
              <geom type="sphere" size="0.02" mass="0.2" pos="0.05 0 0"/>
            </body>
          </body>
        </body>
      </body>
    </body>
    <body name="other" pos="1 1 0">
      <joint name="jo" type="hinge" axis="0 1 0" ref="10"/>
      <geom type="sphere" size="0.02" mass="0.2" pos="0.05 0 0"/>
    </body>
  </worldbody>
</mujoco>
"""

#: Connect and weld on bodies (a weld with a relative pose and an anchor) and on sites, a
#: polynomial joint equality, and an equality on a fixed tendon: not a closable mechanism, only the
#: residuals are compared.
EQUALITIES = """<mujoco model="equalities">
  <worldbody>
    <body name="ground" pos="0.1 0.2 0.3" quat="0.9238795 0 0 0.3826834">
      <geom type="box" size="0.25 0.05 0.02" mass="3"/>
      <body name="crank">
        <joint name="crank_joint" type="hinge" axis="0 0 1" ref="0.2"/>
        <geom type="capsule" fromto="0 0 0 0 0.15 0" size="0.01" mass="0.3"/>
        <body name="coupler" pos="0 0.15 0">
          <joint name="coupler_joint" type="hinge" axis="0 1 1"/>
          <geom type="capsule" fromto="0 0 0 0.4 0 0" size="0.01" mass="0.6"/>
          <site name="coupler_end" pos="0.4 0 0" euler="0.1 0.2 0.3"/>
        </body>
      </body>
      <body name="rocker" pos="0.4 0 0">
        <joint name="rocker_joint" type="hinge" axis="1 0 1"/>
        <joint name="rocker_slide" type="slide" axis="0 0 1" ref="0.01"/>
        <geom type="capsule" fromto="0 0 0 0 0.15 0" size="0.01" mass="0.5"/>
        <site name="rocker_end" pos="0 0.15 0"/>
      </body>
    </body>
  </worldbody>
  <tendon>
    <fixed name="sum"><joint joint="crank_joint" coef="0.5"/><joint joint="rocker_slide" coef="2"/></fixed>
    <fixed name="single"><joint joint="coupler_joint" coef="-1.5"/></fixed>
  </tendon>
  <equality>
    <connect name="site_connect" site1="coupler_end" site2="rocker_end"/>
    <connect name="body_connect" body1="coupler" body2="rocker" anchor="0.4 0 0"/>
    <weld name="body_weld" body1="coupler" body2="rocker" relpose="0.01 0.02 0 0.9950042 0 0.0998334 0"
          anchor="0.1 0 0"/>
    <weld name="site_weld" site1="coupler_end" site2="rocker_end"/>
    <joint name="poly" joint1="coupler_joint" joint2="rocker_joint" polycoef="0.1 2 0.3 -0.4 0.5"/>
    <tendon name="tendons" tendon1="sum" tendon2="single" polycoef="0.02 0.7 0.1 0 0"/>
  </equality>
</mujoco>
"""


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def _random_qpos(mj, rng: np.random.Generator, scale: float) -> np.ndarray:
    """``qpos0`` moved by ``scale``, quaternions normalised."""
    qpos = np.array(mj.qpos0) + rng.normal(0.0, scale, mj.nq)
    for j in range(mj.njnt):
        adr = int(mj.jnt_qposadr[j])
        if mj.jnt_type[j] == mujoco.mjtJoint.mjJNT_FREE:
            qpos[adr + 3:adr + 7] /= np.linalg.norm(qpos[adr + 3:adr + 7])
        elif mj.jnt_type[j] == mujoco.mjtJoint.mjJNT_BALL:
            qpos[adr:adr + 4] /= np.linalg.norm(qpos[adr:adr + 4])
    return qpos


def _placement_error(mm: MjcfModel, model: pin.Model, q: np.ndarray) -> float:
    """Largest difference between our body and site placements and MuJoCo's at ``q`` [m]."""
    mj = mm.mj
    d = mujoco.MjData(mj)
    d.qpos[:] = mm.qpos_from_q(q)
    mujoco.mj_kinematics(mj, d)
    data = model.createData()
    pin.framesForwardKinematics(model, data, q)
    err = 0.0
    for b, fid in mm.body_frames.items():
        M = data.oMf[fid]
        err = max(err, float(np.max(np.abs(M.translation - d.xpos[b]))),
                  float(np.max(np.abs(M.rotation - d.xmat[b].reshape(3, 3)))))
    for s in range(mj.nsite):
        M = data.oMf[model.getFrameId(mj.site(s).name)]
        err = max(err, float(np.max(np.abs(M.translation - d.site_xpos[s]))),
                  float(np.max(np.abs(M.rotation - d.site_xmat[s].reshape(3, 3)))))
    return err


def test_tree_placements_equal_mujoco_forward_kinematics(tmp_path):
    mm = load_mjcf(_write(tmp_path, "tree.xml", TREE))
    mj, model = mm.mj, mm.model
    assert model.nq == mj.nq and model.nv == mj.nv
    assert model.joints[1].shortname() == "JointModelFreeFlyer"  # the floating base is joint 1
    assert sum(inertia.mass for inertia in model.inertias) == pytest.approx(float(np.sum(mj.body_mass)), rel=1e-14)
    rng = np.random.default_rng(0)
    assert _placement_error(mm, model, mm.q0) <= PLACEMENT_TOL
    for _ in range(5):
        qpos = _random_qpos(mj, rng, 0.5)
        q = mm.q_from_qpos(qpos)
        np.testing.assert_allclose(mm.qpos_from_q(q), qpos, atol=1e-15)
        assert _placement_error(mm, model, q) <= PLACEMENT_TOL
    # the centre of mass of the moving bodies (pinocchio leaves out the universe's) equals MuJoCo's
    d = mujoco.MjData(mj)
    mujoco.mj_forward(mj, d)
    moving = [b for b in range(1, mj.nbody) if mj.body_rootid[b] != b or mj.body_jntnum[b]]
    com = sum(mj.body_mass[b] * d.xipos[b] for b in moving) / sum(mj.body_mass[b] for b in moving)
    np.testing.assert_allclose(pin.centerOfMass(model, model.createData(), mm.q0), com, atol=1e-12)


def test_equality_residuals_equal_mujoco(tmp_path):
    """Connect/weld closures vanish exactly where MuJoCo's do (positions equal MuJoCo's rows, rotation
    rows ``2 asin |MuJoCo's|``); coupling rows equal MuJoCo's rows."""
    mm = load_mjcf(_write(tmp_path, "equalities.xml", EQUALITIES))
    mj, model = mm.mj, mm.model
    data = model.createData()
    d = mujoco.MjData(mj)
    rng = np.random.default_rng(1)
    closures = {c.name: c for c in mm.closure_file.closures}
    assert [c.directions for c in closures.values()] == [("x", "y", "z")] * 2 + [("x", "y", "z", "rx", "ry", "rz")] * 2
    for _ in range(4):
        qpos = _random_qpos(mj, rng, 0.3)
        d.qpos[:] = qpos
        mujoco.mj_forward(mj, d)
        q = mm.q_from_qpos(qpos)
        pin.framesForwardKinematics(model, data, q)
        for i in range(mj.neq):
            rows = d.efc_pos[:d.nefc][(d.efc_type[:d.nefc] == mujoco.mjtConstraint.mjCNSTR_EQUALITY)
                                      & (d.efc_id[:d.nefc] == i)]
            name = mj.equality(i).name
            if name in closures:
                c = closures[name]
                Ma, Mu = data.oMf[model.getFrameId(c.frame_a)], data.oMf[model.getFrameId(c.frame_u)]
                np.testing.assert_allclose(Ma.translation - Mu.translation, rows[:3], atol=1e-12)
                if len(rows) == 6:
                    angle = np.linalg.norm(pin.log3(Ma.rotation.T @ Mu.rotation))
                    assert 2.0 * np.arcsin(np.linalg.norm(rows[3:])) == pytest.approx(angle, abs=1e-12)
    # coupling rows through the model's kernel: a model with only the couplings of the file
    names = [c.name for c in mm.closure_file.couplings]
    assert names == ["poly", "tendons"]
    from kangaroo_wbc.model.closure_kernel import build_kernel
    from kangaroo_wbc.model.couplings import coupling_tables

    kernel = build_kernel(model, [], [], [], np.zeros((0, model.nv)), [], [], (np.zeros(0), np.zeros((0, 4))),
                          coupling_tables(model, mm.closure_file.couplings))
    for _ in range(4):
        qpos = _random_qpos(mj, rng, 0.3)
        d.qpos[:] = qpos
        mujoco.mj_forward(mj, d)
        eq = d.efc_pos[:d.nefc][d.efc_type[:d.nefc] == mujoco.mjtConstraint.mjCNSTR_EQUALITY]
        np.testing.assert_allclose(kernel.error(mm.q_from_qpos(qpos)), eq[-2:], atol=1e-12)


def test_site_anchored_four_bar_closes_at_its_ref_pose_and_matches_mujoco():
    """The loop closes at MuJoCo's ``qpos0`` (the joints' ref values), without assembly; at every closed
    pose our placements equal MuJoCo's and MuJoCo's own connect residual vanishes."""
    clm = ClosedLoopModel.from_files(FOUR_BAR_SITES, None)
    mm = clm.mjcf
    assert clm.reference_assembled is False and clm.reference_closure_residual <= 1e-12
    np.testing.assert_allclose(clm.q_ref, mm.q0, atol=1e-12)
    np.testing.assert_allclose(mm.qpos_from_q(clm.q_ref), mm.mj.qpos0, atol=1e-12)
    assert clm.actuated_joint_names == ["crank_joint"] and clm.n_u == clm.n_c == 2
    d = mujoco.MjData(mm.mj)
    for theta in (1.0, 0.7, 1.4, 2.0):
        q, info = clm.closure_fk(np.array([theta]), clm.q_ref)
        assert info.converged
        assert _placement_error(mm, clm.model, q) <= PLACEMENT_TOL
        d.qpos[:] = mm.qpos_from_q(q)
        mujoco.mj_forward(mm.mj, d)
        assert np.max(np.abs(d.efc_pos[:d.nefc][d.efc_type[:d.nefc] == 0])) <= 1e-12
    assert run_checks(clm).ok


def test_site_anchored_four_bar_through_the_cli(capsys):
    assert main(["model", "check", str(FOUR_BAR_SITES), "--json"]) == 0
    assert '"ok": true' in capsys.readouterr().out


@pytest.mark.parametrize("name, n_dof, actuated", [
    ("parallel_gripper.xml", 1, ["left_slide"]),
    ("arm_gripper.xml", 8, [f"joint{i}" for i in range(1, 8)] + ["left_slide"]),
    ("parallel_gripper.urdf", 1, ["left_slide"]),
])
def test_coupled_grippers_have_their_degrees_of_freedom(name, n_dof, actuated):
    clm = ClosedLoopModel.from_files(DATA / name, None)
    info = clm.info()
    assert info["n_dof"] == n_dof and info["actuated_joints"] == actuated
    assert clm.passive_joint_names == ["right_slide"] and len(info["couplings"]) == 1
    q, _ = clm.closure_fk(np.full(clm.n_a, 0.01))
    names = list(clm.model.names)
    right = q[clm.model.joints[names.index("right_slide")].idx_q]
    assert right == pytest.approx(0.01, abs=1e-12)  # the fingers close together
    for seed in (0, 1):
        assert run_checks(clm, seed=seed).ok


def test_tendon_actuator_drives_one_of_its_joints():
    clm = ClosedLoopModel.from_files(DATA / "parallel_gripper.xml", None)
    assert "fixed tendon 'grip'" in clm.closure_file.actuated_why["left_slide"]


def test_a_crashing_compiler_is_an_error_not_a_crash(monkeypatch):
    """The compiler runs in a child process: a crash there (here a forced SIGSEGV) is a ModelError."""
    monkeypatch.setattr(sources, "_MJCF_CHILD", "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)")
    with pytest.raises(ModelError, match="crashed on this file \\(SIGSEGV\\)"):
        load_mjcf(FOUR_BAR_SITES)


def test_mujoco_refusal_is_a_one_line_error(tmp_path, capsys):
    path = _write(tmp_path, "bad.xml", '<mujoco><worldbody><body><joint type="hinge" axis="0 0 0"/>'
                                       '<geom size="0.1"/></body></worldbody></mujoco>')
    assert main(["model", "info", str(path), "--json"]) == 2
    out = capsys.readouterr().out
    assert "MuJoCo could not compile the MJCF" in out and len(out.strip().splitlines()) == 1


def test_unsupported_equality_is_named(tmp_path):
    text = EQUALITIES.replace('<fixed name="single"><joint joint="coupler_joint" coef="-1.5"/></fixed>',
                              '<spatial name="single"><site site="coupler_end"/><site site="rocker_end"/></spatial>')
    with pytest.raises(ModelError, match="equality tendon 'tendons': tendon 'single' is spatial"):
        load_mjcf(_write(tmp_path, "spatial.xml", text))

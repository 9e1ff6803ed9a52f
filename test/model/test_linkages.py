"""Unit tests: the closed-chain cases third-party models bring, on small linkages written for the
tests (``test/model/linkages.py``): a ball-joint rod's free spin, a welded (``FIXED``) loop and a
``FIXED`` joint, a reference that only assembles with the actuator moved, a mimic pair, and
pinocchio's Cassie MJCF. Oracles: pinocchio's constrained dynamics (``constraintDynamics``),
finite differences of closure FK, the first-order optimality of the assembly."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest

from kangaroo_wbc.errors import JointNotFound, ModelError
from kangaroo_wbc.model import (
    ClosedLoopModel,
    gravity_actuated,
    inverse_dynamics,
    projected_dynamics,
)
from kangaroo_wbc.model.checks import random_closed_configuration, run_checks
from test.model import linkages
from test.model.conftest import third_party_paths

LOCAL = pin.ReferenceFrame.LOCAL
DATA = Path(__file__).resolve().parents[1] / "data"
CASSIE = DATA / "cassie_closed_chain.xml"


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    """Folder holding the test linkages' URDF + closure files (unit-test data)."""
    d = tmp_path_factory.mktemp("linkages")
    for make in (linkages.rssr, linkages.rod_between_tree_balls, linkages.welded_four_bar,
                 linkages.unassembled_four_bar, linkages.mimic_pair):
        make(d)
    linkages.unassembled_four_bar(d, ground=0.8)
    return d


def _load(folder: Path, name: str, **kwargs) -> ClosedLoopModel:
    return ClosedLoopModel.from_files(folder / f"{name}.urdf", folder / f"{name}_closures.yaml", **kwargs)


def _pinocchio_loops(clm: ClosedLoopModel) -> list:
    """The declared loops (not the added spin rows) as pinocchio rigid constraints: 3D for a
    position-only loop, 6D otherwise."""
    cms = []
    for c in [c for c in clm.closures if c.spec.name not in clm.added_closures]:
        fa, fu = clm.model.frames[c.frame_a_id], clm.model.frames[c.frame_u_id]
        kind = pin.ContactType.CONTACT_3D if max(c.spec.direction_indices) < 3 else pin.ContactType.CONTACT_6D
        cms.append(pin.RigidConstraintModel(kind, clm.model, int(fa.parentJoint), fa.placement,
                                            int(fu.parentJoint), fu.placement, LOCAL))
    return cms


def _forward(clm, q, v, tau, cms):
    """pinocchio's proximal constrained forward dynamics: (a, lambda, constraint Jacobian)."""
    data = clm.model.createData()
    models = pin.StdVec_RigidConstraintModel()
    datas = pin.StdVec_RigidConstraintData()
    for cm in cms:
        models.append(cm)
        datas.append(cm.createData())
    pin.initConstraintDynamics(clm.model, data, models, datas)
    a = pin.constraintDynamics(clm.model, data, q, v, tau, models, datas, pin.ProximalSettings(1e-14, 1e-12, 200))
    return a.copy(), data.lambda_c.copy(), pin.getConstraintsJacobian(clm.model, data, models, datas)


def _fd_mapping_jacobian(clm, q, h=1e-6):
    """``d theta_u / d theta_a`` by central differences of closure FK (on the manifold)."""
    cols = []
    for i in range(clm.n_a):
        th = q[clm.idx_q_a].copy()
        th[i] += h
        qp, _ = clm.closure_fk(th, q, tol=1e-14)
        th[i] -= 2 * h
        qm, _ = clm.closure_fk(th, q, tol=1e-14)
        cols.append(pin.difference(clm.model, qm, qp)[clm.idx_v_u] / (2 * h))
    return np.array(cols).T


# ---------------------------------------------------------------------------- ball-joint rod


def test_rod_spin_is_found_and_fixed_by_an_added_row(folder):
    clm = _load(folder, "rssr")
    assert clm.n_u == 4 and clm.n_c == 4  # rocker + ball (3) = 3 loop rows + 1 added spin row
    (free,) = clm.free_rotations
    assert free["joint"] == "rod_ball" and free["free_directions"] == 1
    axis = np.array(free["axes_in_joint_frame"][0])
    assert abs(abs(axis[0]) - 1.0) < 1e-9  # the rod's own axis (x of its joint frame)
    assert free["inertia_about_axes_kg_m2"][0] == pytest.approx(linkages.ROD_AXIAL_INERTIA, rel=1e-9)
    # spinning the rod alone leaves the declared loop closed and moves only the added row
    jm = clm.model.joints[clm.model.getJointId("rod_ball")]
    dv = np.zeros(clm.model.nv)
    dv[jm.idx_v:jm.idx_v + 3] = 0.3 * axis
    e = clm.closure_error(pin.integrate(clm.model, clm.q_ref, dv))
    assert np.max(np.abs(e[:3])) < 1e-12
    assert abs(e[3]) == pytest.approx(np.sin(0.3), rel=1e-9)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_rod_model_checks(folder, seed):
    report = run_checks(_load(folder, "rssr"), seed=seed)
    assert report.ok, report


def test_rod_mapping_jacobian_matches_closure_fk_finite_differences(folder):
    clm = _load(folder, "rssr")
    q = random_closed_configuration(clm, np.random.default_rng(4))
    np.testing.assert_allclose(clm.mapping_jacobian(q), _fd_mapping_jacobian(clm, q), atol=1e-7)


def test_rod_dynamics_match_pinocchio_constrained_dynamics(folder):
    """pinocchio lets the rod spin (3D loop only); the model holds the spin. They differ by terms
    proportional to the rod's axial inertia (1e-8 kg·m²), far below the tolerances."""
    clm = _load(folder, "rssr")
    rng = np.random.default_rng(7)
    cms = _pinocchio_loops(clm)
    rocker = clm.model.joints[clm.model.getJointId("rocker_joint")].idx_v
    for _ in range(3):
        q = random_closed_configuration(clm, rng)
        # gravity compensation holds the linkage still
        tau = np.zeros(clm.model.nv)
        tau[clm.idx_v_a] = gravity_actuated(clm, q)
        a, _, _ = _forward(clm, q, np.zeros(clm.model.nv), tau, cms)
        assert np.max(np.abs(a)) < 1e-6
        # inverse dynamics (eq. (19)) -> pinocchio's forward dynamics -> the same accelerations
        v = clm.complete_velocity(q, rng.normal(0, 1.0, clm.n_a))
        a_a = rng.normal(0, 5.0, clm.n_a)
        res = inverse_dynamics(clm, q, v, a_a)
        tau[:] = 0.0
        tau[clm.idx_v_a] = res.tau_a
        a, _, _ = _forward(clm, q, v, tau, cms)
        np.testing.assert_allclose(a[clm.idx_v_a], a_a, atol=1e-5)
        assert abs(a[rocker] - res.a[rocker]) < 1e-5


def test_rod_projected_dynamics_match_pinocchio(folder):
    """Floating base held by a 6D contact on the ground link: eq. (69) gives back pinocchio's torque."""
    clm = _load(folder, "rssr", floating_base=True)
    m = clm.model
    rng = np.random.default_rng(2)
    q = random_closed_configuration(clm, rng)
    q[:7] = np.r_[0.1, -0.2, 0.5, pin.Quaternion(rng.normal(size=4)).normalized().coeffs()]
    v = clm.complete_velocity(q, rng.normal(0, 1.0, clm.n_a), np.zeros(6))
    pin.framesForwardKinematics(m, clm.data, q)
    ground = m.getFrameId("ground")
    fg = m.frames[ground]
    contact = pin.RigidConstraintModel(pin.ContactType.CONTACT_6D, m, int(fg.parentJoint), fg.placement, 0,
                                       clm.data.oMf[ground], LOCAL)
    tau_a = rng.normal(0, 2.0, clm.n_a)
    tau = np.zeros(m.nv)
    tau[clm.idx_v_a] = tau_a
    a, lam, J_all = _forward(clm, q, v, tau, _pinocchio_loops(clm) + [contact])
    f_gen = J_all[-6:].T @ lam[-6:]
    pd = projected_dynamics(clm, q, v, ["ground"], reference_frame=LOCAL)
    nu_dot = np.r_[a[:6], a[clm.idx_v_a]]
    rhs = pd.T.T @ f_gen
    tau_rec = pd.M[pd.actuated_rows] @ nu_dot + pd.h[pd.actuated_rows] - rhs[pd.actuated_rows]
    np.testing.assert_allclose(tau_rec, tau_a, atol=1e-5)
    assert np.max(np.abs(pd.M[pd.base_rows] @ nu_dot + pd.h[pd.base_rows] - rhs[pd.base_rows])) < 1e-5


def test_rod_between_two_tree_ball_joints(folder):
    """The spin spans both ball joints' columns: it is found, charged to one of them and held."""
    clm = _load(folder, "rod_between_tree_balls")
    assert clm.n_u == 7 and clm.n_c == 7  # rocker + 2 balls; 6 weld rows + 1 spin row
    (free,) = clm.free_rotations
    assert free["joint"] in ("rod_ball", "end_ball") and free["free_directions"] == 1
    assert abs(abs(free["axes_in_joint_frame"][0][0]) - 1.0) < 1e-9  # the rod axis (x in both)
    # the combined spin (+phi on one ball, -phi on the other, about the rod axis) keeps the weld
    m = clm.model
    dv = np.zeros(m.nv)
    for name, sign in (("rod_ball", 1.0), ("end_ball", -1.0)):
        dv[m.joints[m.getJointId(name)].idx_v] = sign * 0.2
    e = clm.closure_error(pin.integrate(m, clm.q_ref, dv))
    assert np.max(np.abs(e[:6])) < 1e-12 and abs(e[6]) > 0.1
    for seed in (0, 1):
        assert run_checks(clm, seed=seed).ok
    q = random_closed_configuration(clm, np.random.default_rng(5))
    np.testing.assert_allclose(clm.mapping_jacobian(q), _fd_mapping_jacobian(clm, q), atol=1e-7)


def test_holding_the_rod_spin_differs_from_free_spin_only_by_its_inertia(folder):
    """Inverse dynamics (spin held) -> pinocchio's constrained forward dynamics (spin free): the
    actuator acceleration comes back up to a difference proportional to the rod's axial inertia
    (tenfold inertia, tenfold difference), i.e. nothing else differs."""
    diffs = []
    for inertia in (1e-8, 1e-7):
        name = f"rod_spin_inertia_{inertia:g}"
        linkages.rod_between_tree_balls(folder, inertia, name)
        clm = _load(folder, name)
        rng = np.random.default_rng(8)
        q = random_closed_configuration(clm, rng)
        v = clm.complete_velocity(q, rng.normal(0, 1.0, clm.n_a))
        a_a = rng.normal(0, 5.0, clm.n_a)
        res = inverse_dynamics(clm, q, v, a_a)
        tau = np.zeros(clm.model.nv)
        tau[clm.idx_v_a] = res.tau_a
        a, _, _ = _forward(clm, q, v, tau, _pinocchio_loops(clm))
        diffs.append(float(np.max(np.abs(a[clm.idx_v_a] - a_a))))
    assert diffs[0] < 1e-4
    assert 8.0 < diffs[1] / diffs[0] < 12.0, diffs


# ------------------------------------------------------------------------------ FIXED loop


def test_welded_loop_and_fixed_joint(folder):
    clm = _load(folder, "welded_four_bar")
    assert clm.n_c_declared == 6 and clm.n_c == 3 == clm.n_u  # a planar weld: x, y, rz
    assert "spare_joint" not in clm.joint_names  # joint_type FIXED: welded at neutral
    assert clm.mass_kg == pytest.approx(4.5, abs=1e-12)  # the welded body's mass is kept
    assert run_checks(clm).ok
    q = random_closed_configuration(clm, np.random.default_rng(1))
    np.testing.assert_allclose(clm.mapping_jacobian(q), _fd_mapping_jacobian(clm, q), atol=1e-7)
    rng = np.random.default_rng(3)
    v = clm.complete_velocity(q, rng.normal(0, 1.0, clm.n_a))
    a_a = rng.normal(0, 5.0, clm.n_a)
    res = inverse_dynamics(clm, q, v, a_a)
    tau = np.zeros(clm.model.nv)
    tau[clm.idx_v_a] = res.tau_a
    a, _, _ = _forward(clm, q, v, tau, _pinocchio_loops(clm))
    np.testing.assert_allclose(a, res.a, atol=1e-6)


# ------------------------------------------------------------------------------- assembly


def test_reference_that_does_not_close_is_assembled(folder):
    clm = _load(folder, "unassembled_four_bar")
    assert clm.reference_assembled
    assert clm.reference_closure_residual < 1e-9
    assert abs(clm.q_ref[clm.idx_q_a][0]) > 0.1  # the loop closes only with the crank turned
    # least distance to the neutral pose: the displacement lies in the row space of J_l
    J = clm.constraint_jacobian(clm.q_ref)
    d = pin.difference(clm.model, pin.neutral(clm.model), clm.q_ref)
    d_free = d - np.linalg.pinv(J) @ (J @ d)
    assert np.linalg.norm(d_free) < 1e-6 * max(1.0, np.linalg.norm(d))
    for seed in range(3):
        assert run_checks(clm, seed=seed).ok


def test_reference_pose_file(folder, tmp_path):
    assembled = _load(folder, "unassembled_four_bar")
    pose = {n: float(assembled.q_ref[assembled.model.joints[assembled.model.getJointId(n)].idx_q])
            for n in assembled.joint_names}
    path = tmp_path / "pose.json"
    path.write_text(json.dumps(pose))
    clm = _load(folder, "unassembled_four_bar", reference=path)
    assert not clm.reference_assembled  # closed already: nothing to assemble
    np.testing.assert_allclose(clm.q_ref, assembled.q_ref, atol=1e-9)
    path.write_text(json.dumps({"crank_jiont": 1.0}))
    with pytest.raises(JointNotFound, match="crank_jiont.*crank_joint"):
        _load(folder, "unassembled_four_bar", reference=path)


def test_reference_that_cannot_assemble_is_refused_with_the_residual(folder):
    with pytest.raises(ModelError, match=r"do not close at the reference pose.*residual of [0-9.e-]+ .*'loop'"):
        _load(folder, "unassemblable_four_bar")


# ---------------------------------------------------------------------------------- mimic


def test_mimic_joint_is_a_coupling(folder):
    """``follower = 2 leader``: one degree of freedom, the follower passive and moved by closure FK."""
    clm = _load(folder, "mimic_pair")
    info = clm.info()
    assert info["n_dof"] == 1 and clm.passive_joint_names == ["follower"] and clm.n_c == 1
    assert [c["name"] for c in info["couplings"]] == ["follower"]
    q, _ = clm.closure_fk(np.array([0.3]))
    assert q[1] == pytest.approx(0.6, abs=1e-12)
    for seed in (0, 1):
        assert run_checks(clm, seed=seed).ok


def test_mimic_dynamics_equal_pinocchio_mimic_joints(folder):
    """Oracle: pinocchio's own mimic joints (``buildModelFromUrdf(mimic=True)``: the follower moves with
    the leader, one coordinate): the projected mass matrix and gravity of the coupled model equal
    its ``crba`` and ``rnea``."""
    clm = _load(folder, "mimic_pair")
    ref = pin.buildModelFromUrdf(str(folder / "mimic_pair.urdf"), mimic=True)
    assert ref.nv == 1
    rdata = ref.createData()
    for theta in (-0.4, 0.2, 1.1):
        q, _ = clm.closure_fk(np.array([theta]))
        q_ref = np.array([theta])
        pd = projected_dynamics(clm, q, np.zeros(clm.model.nv), [])
        np.testing.assert_allclose(pd.M, pin.crba(ref, rdata, q_ref), atol=1e-12)
        np.testing.assert_allclose(gravity_actuated(clm, q), pin.rnea(ref, rdata, q_ref, np.zeros(1), np.zeros(1)),
                                   atol=1e-12)


def test_actuated_mimic_follower_is_refused(folder, tmp_path):
    yml = tmp_path / "follower_actuated.yaml"
    yml.write_text((folder / "mimic_pair_closures.yaml").read_text().replace("- leader", "- follower"))
    with pytest.raises(ModelError, match=r"\['follower'\] mimic other joints"):
        ClosedLoopModel.from_files(folder / "mimic_pair.urdf", yml)


# ------------------------------------------------------------------------- mass, Cassie


def test_mass_is_the_whole_robot_whatever_the_base():
    urdf, yml = third_party_paths("digit_like_2legs")
    fixed = ClosedLoopModel.from_files(urdf, yml)
    floating = ClosedLoopModel.from_files(urdf, yml, floating_base=True)
    links = [float(x) for x in re.findall(r'<mass\s+value="([^"]+)"', urdf.read_text())]
    assert fixed.mass_kg == pytest.approx(sum(links), rel=1e-12)
    assert floating.mass_kg == pytest.approx(sum(links), rel=1e-12)


def test_cassie_mjcf_achilles_rods():
    """pinocchio's Cassie MJCF (test/data, BSD-2): the achilles rods between two ball joints."""
    clm = ClosedLoopModel.from_files(CASSIE, None)
    rods = {r["joint"]: r for r in clm.free_rotations}
    assert sorted(rods) == ["left-achilles-rod", "right-achilles-rod"]
    for r in rods.values():
        assert r["free_directions"] == 1
        assert abs(abs(r["axes_in_joint_frame"][0][0]) - 1.0) < 1e-9  # the rod's x axis
        assert r["inertia_about_axes_kg_m2"][0] == pytest.approx(3.754e-6, rel=1e-3)
    masses = [float(x) for x in re.findall(r'mass="([^"]+)"', CASSIE.read_text())]
    assert clm.mass_kg == pytest.approx(sum(masses), rel=1e-12)  # every body, the pelvis included
    for seed in (0, 1):
        assert run_checks(clm, seed=seed).ok

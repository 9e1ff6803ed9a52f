"""Unit tests of the compiled closure kinematics against pinocchio (kangaroo_wbc.model.closure_kernel)."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

from kangaroo_wbc.errors import ModelError
from kangaroo_wbc.model.closure_kernel import ClosureKernel, build_kernel
from test.model.closure_oracle import closure_kinematics
from test.model.conftest import THIRD_PARTY, load
from test.model.mechanisms import ALL

TOL = 1e-12
FD_STEP = 1e-7
FD_TOL = 1e-6


def _configurations(clm, n: int, seed: int = 0):
    """The reference configuration and random perturbations of it (not closed), on the manifold."""
    rng = np.random.default_rng(seed)
    yield clm.q_ref
    for _ in range(n):
        yield pin.integrate(clm.model, clm.q_ref, 0.2 * rng.standard_normal(clm.model.nv))


@pytest.mark.parametrize("name", list(ALL) + THIRD_PARTY)
@pytest.mark.parametrize("floating_base", [False, True])
def test_kernel_equals_pinocchio_path(name, floating_base, mechanism_dir) -> None:
    clm = load(name, mechanism_dir, floating_base)
    for q in _configurations(clm, 5):
        e_ref, J_ref, _ = closure_kinematics(clm, q)  # pinocchio, loop by loop
        e, J = clm.kernel.error_and_jacobian(q)
        np.testing.assert_allclose(e, e_ref, rtol=0, atol=TOL)
        np.testing.assert_allclose(J, J_ref, rtol=0, atol=TOL)
        np.testing.assert_allclose(clm.kernel.error(q), e_ref, rtol=0, atol=TOL)


def test_kernel_on_kangaroo_and_placements_equal_pinocchio() -> None:
    from kangaroo_wbc.robots.kangaroo.robot import load_kangaroo

    clm = load_kangaroo(floating_base=True)
    data = clm.model.createData()
    for q in _configurations(clm, 3, seed=1):
        e_ref, J_ref, _ = closure_kinematics(clm, q)
        e, J = clm.kernel.error_and_jacobian(q)
        np.testing.assert_allclose(e, e_ref, rtol=0, atol=TOL)
        np.testing.assert_allclose(J, J_ref, rtol=0, atol=TOL)
        R, p = clm.kernel.placements(q)
        pin.framesForwardKinematics(clm.model, data, q)
        for k, fid in enumerate(clm.kernel_tables().frame_ids):
            np.testing.assert_allclose(R[k], data.oMf[int(fid)].rotation, rtol=0, atol=TOL)
            np.testing.assert_allclose(p[k], data.oMf[int(fid)].translation, rtol=0, atol=TOL)


def test_column_selection_matches_full_jacobian(mechanism_dir) -> None:
    clm = load("u2ups", mechanism_dir)
    cols = np.concatenate([clm.idx_v_u, clm.idx_v_a])
    k = build_kernel(clm.model, *clm.kernel_tables(), columns=cols)
    q = next(_configurations(clm, 0))
    _, J_ref, _ = closure_kinematics(clm, q)
    np.testing.assert_allclose(k.error_and_jacobian(q)[1], J_ref[:, cols], rtol=0, atol=TOL)


@pytest.mark.parametrize("name", ["u2ups", "four_bar"])
def test_log3_rotation_rows_against_pinocchio_and_finite_differences(name, mechanism_dir) -> None:
    """Every loop declared as a full 6-D cut with log3 rotation rows (a case the bundled models
    do not use): error = log3(R_a^T R_u), Jacobian = central differences on the manifold."""
    clm = load(name, mechanism_dir)
    m = clm.model
    K = len(clm.closures)
    t = clm.kernel_tables()
    kernel = ClosureKernel(m, t.frame_ids, t.slot_a, t.slot_u, t.signed_mask, np.arange(6 * K),
                           np.arange(K), (np.zeros(0, dtype=int), np.zeros((0, 4), dtype=int)))
    data = m.createData()
    rng = np.random.default_rng(3)
    for q in _configurations(clm, 3, seed=2):
        e, J = (x.copy() for x in kernel.error_and_jacobian(q))
        pin.framesForwardKinematics(m, data, q)
        for k, c in enumerate(clm.closures):
            Ma, Mu = data.oMf[c.frame_a_id], data.oMf[c.frame_u_id]
            np.testing.assert_allclose(e[6 * k:6 * k + 3], Ma.rotation.T @ (Mu.translation - Ma.translation),
                                       rtol=0, atol=TOL)
            np.testing.assert_allclose(e[6 * k + 3:6 * k + 6], pin.log3(Ma.rotation.T @ Mu.rotation),
                                       rtol=0, atol=1e-10)
        dv = rng.standard_normal(m.nv)
        fd = (kernel.error(pin.integrate(m, q, FD_STEP * dv)).copy()
              - kernel.error(pin.integrate(m, q, -FD_STEP * dv)).copy()) / (2 * FD_STEP)
        np.testing.assert_allclose(J @ dv, fd, rtol=0, atol=FD_TOL)


def test_unsupported_joint_is_refused() -> None:
    model = pin.Model()
    j = model.addJoint(0, pin.JointModelPlanar(), pin.SE3.Identity(), "planar")
    model.appendBodyToJoint(j, pin.Inertia.Random(), pin.SE3.Identity())
    f = model.addFrame(pin.Frame("tip", j, 0, pin.SE3.Identity(), pin.FrameType.OP_FRAME))
    with pytest.raises(ModelError, match="'planar' .*JointModelPlanar"):
        build_kernel(model, [f, f], [0], [1], np.ones((1, model.nv)), np.arange(3), [],
                     (np.zeros(0, dtype=int), np.zeros((0, 4), dtype=int)))


@pytest.mark.parametrize("name", ["u2ups", "digit_like_2legs"])
def test_compiled_chord_fk_matches_the_newton_fallback(name, mechanism_dir, monkeypatch) -> None:
    """Closure FK with the compiled chord iteration and with its fallback, damped Newton (the chord
    iteration disabled: every solve is Newton's), give the same closed configuration, along a
    trajectory and after a large jump."""
    from kangaroo_wbc_tools.bench.workload import reachable_trajectory

    fast = load(name, mechanism_dir)
    slow = load(name, mechanism_dir)
    monkeypatch.setattr(slow.closure_fk_solver, "chord", lambda q, tol, max_iter: None)
    traj, _ = reachable_trajectory(fast, 60, 1000.0)
    for k in list(range(0, 60, 3)) + [0]:  # small steps, then a jump back to the start
        q_f, info_f = fast.closure_fk(traj.theta_a[k])
        q_s, info_s = slow.closure_fk(traj.theta_a[k])
        assert info_f.converged and info_s.converged
        assert np.max(np.abs(fast.closure_error(q_f))) <= 1e-12
        np.testing.assert_allclose(pin.difference(fast.model, q_s, q_f), 0.0, atol=1e-9)


def test_passive_integration_matches_pinocchio(mechanism_dir) -> None:
    """The compiled chord's integration of the passive joints equals pin.integrate (spherical too)."""
    from kangaroo_wbc.model.closure_kernel import integrate_passive

    clm = load("digit_like_2legs", mechanism_dir)
    k = clm.kernel
    assert k.set_passive_joints(clm.model, clm.idx_v_u)
    assert 3 in set(k.pj_kind.tolist())  # the fixture has spherical passive joints
    rng = np.random.default_rng(5)
    for scale in (1e-9, 0.3):
        dv_u = scale * rng.standard_normal(clm.n_u)
        dv = np.zeros(clm.model.nv)
        dv[clm.idx_v_u] = dv_u
        out = np.zeros(clm.model.nq)
        integrate_passive(clm.q_ref, dv_u, k.pj_iq, k.pj_iu, k.pj_kind, out)
        np.testing.assert_allclose(out, pin.integrate(clm.model, clm.q_ref, dv), rtol=0, atol=1e-12)


@pytest.mark.parametrize("name", ["kangaroo", "digit_like_2legs", "u2ups"])
def test_velocity_bias_equals_pinocchio_path(name, mechanism_dir) -> None:
    """Jdot_l v of the compiled path equals the core's (pinocchio) bias; the digit-like legs have
    universal and spherical joints (their subspace moves): their loops are checked on the
    position rows (the compiled path has no log3 rows)."""
    if name == "kangaroo":
        from kangaroo_wbc.robots.kangaroo.robot import load_kangaroo

        clm = load_kangaroo(floating_base=True)
    else:
        clm = load(name, mechanism_dir, floating_base=True)
    t = clm.kernel_tables()
    keep = np.array([i for i, r in enumerate(t.flat_rows) if r % 6 < 3 or clm.row_closure[i] in t.universal[0]])
    kernel = ClosureKernel(clm.model, t.frame_ids, t.slot_a, t.slot_u, t.signed_mask,
                           t.flat_rows[keep], np.zeros(0, dtype=int), t.universal)
    rng = np.random.default_rng(6)
    for q in _configurations(clm, 3, seed=7):
        v = rng.standard_normal(clm.model.nv)
        _, _, bias_ref = closure_kinematics(clm, q, v)
        np.testing.assert_allclose(kernel.velocity_bias(q, v), bias_ref[keep], rtol=0, atol=1e-11)


def test_finiteness_checks_take_sequences_and_any_shape() -> None:
    """``finite`` accepts what callers pass (an IMU orientation tuple, lists, 2-D arrays) and
    ``all_finite`` two vectors; a NaN or an inf anywhere is found."""
    from kangaroo_wbc.model.compiled import all_finite, finite

    assert finite((0.0, 0.0, 0.0, 1.0)) and finite([1.0, 2.0]) and finite(np.zeros((2, 6)))
    assert not finite((0.0, float("nan"), 0.0, 1.0))
    wrench = np.zeros((2, 6))
    wrench[1, 4] = np.inf
    assert not finite(wrench)
    assert not finite(np.zeros((4, 6))[:, 1] + np.array([0.0, 0.0, np.nan, 0.0]))  # non-contiguous source
    assert all_finite(np.zeros(3), np.ones(12)) and not all_finite(np.zeros(3), np.array([1.0, -np.inf]))


def test_unbounded_revolute_joints_equal_the_pinocchio_path(mechanism_dir, tmp_path) -> None:
    """URDF ``continuous`` joints (pinocchio's unbounded revolute, q = (cos, sin)): the compiled
    error, Jacobian, bias and passive integration equal the pinocchio path."""
    from kangaroo_wbc.model import ClosedLoopModel
    from kangaroo_wbc.model.closure_kernel import integrate_passive

    urdf = (mechanism_dir / "four_bar.urdf").read_text()
    for joint in ("coupler_joint", "rocker_joint"):
        urdf = urdf.replace(f'<joint name="{joint}" type="revolute"', f'<joint name="{joint}" type="continuous"')
    (tmp_path / "four_bar.urdf").write_text(urdf)
    clm = ClosedLoopModel.from_files(tmp_path / "four_bar.urdf", mechanism_dir / "four_bar_closures.yaml")
    kinds = {clm.model.joints[j].shortname() for j in range(1, clm.model.njoints)}
    assert "JointModelRUBZ" in kinds and clm.kernel is not None
    rng = np.random.default_rng(3)
    for q in _configurations(clm, 4):
        e_ref, J_ref, _ = closure_kinematics(clm, q)
        e, J = clm.kernel.error_and_jacobian(q)
        np.testing.assert_allclose(e, e_ref, rtol=0, atol=TOL)
        np.testing.assert_allclose(J, J_ref, rtol=0, atol=TOL)
        v = rng.standard_normal(clm.model.nv)
        _, _, bias_ref = closure_kinematics(clm, q, v)
        np.testing.assert_allclose(clm.kernel.velocity_bias(q, v), bias_ref, rtol=0, atol=1e-11)
    k = clm.kernel
    assert k.set_passive_joints(clm.model, clm.idx_v_u)
    dv_u = 0.4 * rng.standard_normal(clm.n_u)
    dv = np.zeros(clm.model.nv)
    dv[clm.idx_v_u] = dv_u
    out = np.zeros(clm.model.nq)
    integrate_passive(clm.q_ref, dv_u, k.pj_iq, k.pj_iu, k.pj_kind, out)
    np.testing.assert_allclose(out, pin.integrate(clm.model, clm.q_ref, dv), rtol=0, atol=1e-12)
    q, info = clm.closure_fk(clm.q_ref[clm.idx_q_a] + 0.05)
    assert info.converged and np.max(np.abs(clm.closure_error(q))) <= 1e-12

"""Unit tests of the real-time projected model against the core reference implementation.

The reference is :func:`kangaroo_wbc.model.projected_dynamics` (per-frame pinocchio calls),
:func:`projected_oracle` (App. B written out with pinocchio) and pinocchio's own frame and centroidal
algorithms; the compiled path and the fallback must agree to round-off at closed configurations, with
universal and spherical joints (Digit-like fixture) and log3 closure rows (five-bar) included.
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

from kangaroo_wbc.errors import FrameNotFound, InputError
from kangaroo_wbc.model import (
    ClosedLoopModel,
    centroidal_momentum_matrix,
    lagrange_multipliers,
    projected_dynamics,
)
from kangaroo_wbc.model.projected_model import ProjectedModel
from test.control.conftest import EXACT_TOL, random_state
from test.model.closure_oracle import closure_kinematics
from test.model.conftest import third_party_paths
from test.model.mechanisms import u2ups

CASES = [
    ("u2ups_fb", ["sole"]),
    ("digit_fb", ["right_sole", "left_sole"]),
    ("kangaroo_fb", ["left_sole", "right_sole"]),
]

LWA = pin.ReferenceFrame.LOCAL_WORLD_ALIGNED


def projected_oracle(clm: ClosedLoopModel, q: np.ndarray, nu: np.ndarray, frames: list[str]) -> dict:
    """The projected quantities of App. B from their equations, with pinocchio (the closure terms
    from :meth:`ClosedLoopModel.kinematics`, its pinocchio sweep):

    .. math::
        J_m = -J_{lu}^{-1} J_{la}, \\quad v = T \\nu, \\quad k_u = -J_{lu}^{-1} \\dot J_l v, \\quad
        M_p = T^T M T, \\quad h_p = T^T (h + M k), \\quad J_f T, \\quad J_f k + \\dot J_f v,
        \\quad A_G T, \\quad A_G k + \\dot A_G v

    (eq. (7), (10), (62)-(73) and (33)). Keys are the :class:`ProjectedModel` attribute names.
    """
    m, data = clm.model, clm.model.createData()
    n_b, n_a = clm.n_b, clm.n_a
    J_l = closure_kinematics(clm, q)[1]
    J_lu, J_la = J_l[:, clm.idx_v_u], J_l[:, clm.idx_v_a]
    J_m = -np.linalg.solve(J_lu, J_la)
    T = np.zeros((m.nv, n_b + n_a))
    T[clm.idx_v_base, np.arange(n_b)] = 1.0
    T[clm.idx_v_a, n_b + np.arange(n_a)] = 1.0
    T[clm.idx_v_u, n_b:] = J_m
    v = T @ nu
    bias_l = closure_kinematics(clm, q, v)[2]
    k = np.zeros(m.nv)
    k[clm.idx_v_u] = -np.linalg.solve(J_lu, bias_l)
    M = pin.crba(m, data, q)
    M = np.triu(M) + np.triu(M, 1).T
    h = pin.nonLinearEffects(m, data, q, v)
    pin.forwardKinematics(m, data, q, v, k)  # frame accelerations at nu_dot = 0: v_dot = k
    pin.computeJointJacobians(m, data, q)
    pin.updateFramePlacements(m, data)
    fids = [m.getFrameId(name) for name in frames]
    A_G = pin.ccrba(m, data, q, v) @ T
    dhg = pin.computeCentroidalMomentumTimeVariation(m, data, q, v, k)
    return {
        "J_l": J_l, "J_m": J_m, "T": T, "v": v, "k": k, "bias_l": bias_l,
        "M_p": T.T @ M @ T, "h_p": T.T @ (h + M @ k), "A_G": A_G, "A_G_drift": dhg.vector,
        "frame_jacobians_T": np.array([pin.getFrameJacobian(m, data, f, LWA) @ T for f in fids]),
        "frame_drifts": np.array([pin.getFrameClassicalAcceleration(m, data, f, LWA).vector for f in fids]),
        "frame_twists": np.array([pin.getFrameVelocity(m, data, f, LWA).vector for f in fids]),
    }


@pytest.fixture(scope="module")
def five_bar_fb() -> ClosedLoopModel:
    """The third-party planar five-bar on a floating base: its 6D loop keeps a ``log3`` rotation row,
    which the compiled closure chain does not serve (the fallback of :class:`ProjectedModel`)."""
    urdf, yml = third_party_paths("5bar_linkage")
    return ClosedLoopModel.from_files(urdf, yml, floating_base=True)


@pytest.mark.parametrize("fixture, frames", CASES)
@pytest.mark.parametrize("seed", [0, 1])
def test_matches_core_projected_dynamics(fixture, frames, seed, request):
    clm = request.getfixturevalue(fixture)
    q, nu, v = random_state(clm, seed)
    pm = ProjectedModel(clm, frames)
    pm.update(q, nu)
    ref = projected_dynamics(clm, q, v, frames, 6)
    scale = max(1.0, np.max(np.abs(ref.gamma_c)), np.max(np.abs(ref.h)))
    np.testing.assert_allclose(pm.v, v, atol=EXACT_TOL)
    np.testing.assert_allclose(pm.T, ref.T, atol=EXACT_TOL)
    np.testing.assert_allclose(pm.k, ref.k, atol=EXACT_TOL * scale)
    np.testing.assert_allclose(pm.M_p, ref.M, atol=EXACT_TOL)
    np.testing.assert_allclose(pm.h_p, ref.h, atol=EXACT_TOL * scale)
    np.testing.assert_allclose(pm.frame_jacobians_T.reshape(-1, pm.n_nu), ref.J_c, atol=EXACT_TOL)
    np.testing.assert_allclose(pm.frame_drifts.reshape(-1), ref.gamma_c, atol=EXACT_TOL * scale)
    np.testing.assert_allclose(pm.A_G, centroidal_momentum_matrix(clm, q), atol=EXACT_TOL)


@pytest.mark.parametrize("fixture, frames", CASES)
def test_frame_kinematics_match_pinocchio(fixture, frames, request):
    clm = request.getfixturevalue(fixture)
    q, nu, v = random_state(clm, 3)
    pm = ProjectedModel(clm, frames)
    pm.update(q, nu)
    m, data = clm.model, clm.model.createData()
    pin.forwardKinematics(
        m, data, q, v, pm.k
    )  # drift = acceleration at nu_dot = 0, i.e. v_dot = k
    pin.updateFramePlacements(m, data)
    pin.computeJointJacobians(m, data, q)
    lwa = pin.ReferenceFrame.LOCAL_WORLD_ALIGNED
    for name in frames:
        fid = m.getFrameId(name)
        R, p = pm.placement(name)
        np.testing.assert_allclose(p, data.oMf[fid].translation, atol=EXACT_TOL)
        np.testing.assert_allclose(R, data.oMf[fid].rotation, atol=EXACT_TOL)
        J = pin.getFrameJacobian(m, data, fid, lwa)
        np.testing.assert_allclose(pm.jacobian(name), J @ pm.T, atol=EXACT_TOL)
        twist = pin.getFrameVelocity(m, data, fid, lwa)
        np.testing.assert_allclose(pm.twist(name), twist.vector, atol=EXACT_TOL)
        acc = pin.getFrameClassicalAcceleration(m, data, fid, lwa)
        np.testing.assert_allclose(pm.drift(name), acc.vector, atol=1e-8)
    pin.centerOfMass(m, data, q, v, pm.k)
    np.testing.assert_allclose(pm.com, data.com[0], atol=EXACT_TOL)
    np.testing.assert_allclose(pm.com_velocity, data.vcom[0], atol=EXACT_TOL)
    np.testing.assert_allclose(pm.com_drift, data.acom[0], atol=1e-8)


@pytest.mark.parametrize("fixture, frames", CASES + [("u2ups_fixed", ["sole"]), ("five_bar_fb", ["effector"])])
def test_centroidal_momentum_and_its_rate_match_pinocchio(fixture, frames, request, tmp_path_factory):
    """``h_G``, ``com`` and ``A_G_drift = Adot_G v + A_G k`` (linear and angular) equal pinocchio's
    ``ccrba`` / ``computeCentroidalMomentumTimeVariation`` at ``(q, v, v_dot = k)``; floating-base
    models take them from the base rows of ``M`` and ``h``, fixed-base ones from pinocchio (the
    five-bar: the fallback, base placement from pinocchio's data)."""
    if fixture == "u2ups_fixed":
        urdf, yml = u2ups(tmp_path_factory.mktemp("u2ups_fixed"))
        clm = ClosedLoopModel.from_files(urdf, yml, floating_base=False)
    else:
        clm = request.getfixturevalue(fixture)
    for seed in (4, 5):
        q, nu, v = random_state(clm, seed)
        pm = ProjectedModel(clm, frames)
        pm.update(q, nu)
        m, data = clm.model, clm.model.createData()
        pin.ccrba(m, data, q, v)
        np.testing.assert_allclose(pm.h_G, np.concatenate([data.hg.linear, data.hg.angular]), atol=EXACT_TOL)
        np.testing.assert_allclose(pm.com, data.com[0], atol=EXACT_TOL)
        np.testing.assert_allclose(pm.mass * (pm.J_com @ nu), data.Ag[:3] @ v, atol=EXACT_TOL * pm.mass)
        pin.computeCentroidalMomentumTimeVariation(m, data, q, v, pm.k)
        scale = max(1.0, np.max(np.abs(data.dhg.vector)))
        np.testing.assert_allclose(pm.A_G_drift, np.concatenate([data.dhg.linear, data.dhg.angular]),
                                   atol=EXACT_TOL * scale)


def test_lagrange_multipliers_match_core(digit_fb):
    clm = digit_fb
    frames = ["right_sole", "left_sole"]
    q, nu, v = random_state(clm, 4)
    pm = ProjectedModel(clm, frames)
    pm.update(q, nu)
    rng = np.random.default_rng(5)
    nu_dot, f = rng.normal(size=pm.n_nu), rng.normal(0, 50, 12)
    ref_pd = projected_dynamics(clm, q, v, frames, 6)
    lam_ref = lagrange_multipliers(clm, q, v, ref_pd, nu_dot, f)
    gen = ref_pd.J_c_full.T @ f
    np.testing.assert_allclose(
        pm.lagrange_multipliers(nu_dot, gen), lam_ref, atol=1e-7 * max(1, np.abs(lam_ref).max())
    )


def test_bad_inputs(u2ups_fb):
    pm = ProjectedModel(u2ups_fb, ["sole"])
    q, nu, _ = random_state(u2ups_fb, 0)
    with pytest.raises(InputError):
        pm.update(q, np.full_like(nu, np.nan))
    with pytest.raises(InputError):
        pm.update(q[:-1], nu)
    with pytest.raises(FrameNotFound, match="Valid names"):
        ProjectedModel(u2ups_fb, ["no_such_frame"])
    pm.update(q, nu)
    with pytest.raises(FrameNotFound):
        pm.jacobian("base")


def test_jlu_pivot_ratio_over_the_reachable_stroke_box_stays_far_from_the_singularity_threshold(kangaroo_fb):
    """The near-singularity check never trips on the way from standing to the corners of the left
    leg's actuator stroke box (closure FK by continuation), even at 10 x the node's default
    threshold, while the passive joints stay inside their limits: the reachable set is the box cut
    by the lower rods' limits, 10° inside their dead points (urdf/README.md); a path that leaves
    it stops there. Measured: 8 of the 64 corners are reached along the straight paths."""
    import itertools

    from kangaroo_wbc.robots.kangaroo.robot import standing_configuration

    clm = kangaroo_fb
    pm = ProjectedModel(clm, ["left_sole"])
    pm.min_pivot_ratio = 1e-2  # the node's min_jlu_pivot_ratio is 1e-3
    m = clm.model
    limits = clm.passive_joint_limits()
    legs = [i for i, n in enumerate(clm.actuated_joint_names) if n.startswith("left_")]
    lo, hi = m.lowerPositionLimit[clm.idx_q_a], m.upperPositionLimit[clm.idx_q_a]
    stand = standing_configuration(clm)
    theta0 = stand[clm.idx_q_a]
    reached = checked = 0
    for corner in itertools.product((0, 1), repeat=len(legs)):
        target = theta0.copy()
        target[legs] = np.where(corner, hi[legs], lo[legs])
        q, inside = stand, True
        for s in np.linspace(0.0, 1.0, 15):
            q, _ = clm.closure_fk(theta0 + s * (target - theta0), q)
            theta_u = q[limits.idx_q]
            inside = bool(np.all((theta_u >= limits.lower) & (theta_u <= limits.upper)))
            if not inside:
                break
            pm.update(q, np.zeros(pm.n_nu))  # raises ModelError below the threshold
            checked += 1
        reached += inside
    assert reached >= 8 and checked > 64 * 5  # not vacuous: most of each path is checked


@pytest.mark.parametrize("fixture", ["u2ups_fb", "digit_fb", "kangaroo_fb", "five_bar_fb"])
def test_closure_terms_and_projections_equal_the_equations(fixture, request):
    """``J_l``, ``J_m``, ``T``, ``v``, ``Jdot_l v``, ``k``, ``M_p``, ``h_p``, the centroidal map and
    drift and the frames' projected Jacobians, drifts and twists equal :func:`projected_oracle`
    along random moving states (the compiled closure chain; the fallback for the Digit-like legs and
    the five-bar, whose 6D loops keep ``log3`` rotation rows)."""
    clm = request.getfixturevalue(fixture)
    frames = [f for f in ("base_link", "right_sole", "left_sole", "sole", "effector") if clm.model.existFrame(f)]
    pm = ProjectedModel(clm, frames)
    for seed in (0, 1, 2):
        q, nu, _ = random_state(clm, seed, speed=0.5)
        pm.update(q, nu)
        ref = projected_oracle(clm, q, nu, frames)
        for name, b in ref.items():
            np.testing.assert_allclose(getattr(pm, name), b, rtol=1e-12, atol=1e-12 * max(1.0, np.abs(b).max()),
                                       err_msg=name)
        assert np.abs(pm.k).max() > 1e-6 and np.abs(pm.bias_l).max() > 1e-6  # moving: nontrivial

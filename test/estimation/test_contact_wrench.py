"""Unit tests of the quasi-static contact wrench estimator (Kangaroo paper eq. (43)-(47)).

Synthetic static poses: choose sole wrenches ``f``, compute the actuator forces that balance them
with the core's projected dynamics (actuated rows, zero acceleration), feed them back and recover
``f``.
"""

from __future__ import annotations

import math

import numpy as np
import pinocchio as pin
import pytest

from kangaroo_wbc.errors import EstimationError, FrameNotFound, InputError
from kangaroo_wbc.estimation.contact_wrench import (
    ContactWrenchConfig,
    ContactWrenchEstimator,
    paper_screws,
)
from kangaroo_wbc.model import projected_dynamics
from test.estimation.conftest import (
    DIGIT,
    DIGIT_SOLES,
    KANGAROO_SOLES,
    closed_configuration,
    model,
)

WRENCH_TOL = 1e-6  # [N], [N·m]
ROBOTS = {"digit": (DIGIT, DIGIT_SOLES), "kangaroo": ("kangaroo", KANGAROO_SOLES)}
RAW = ContactWrenchConfig(filter_enabled=False, base_row_weight=0.0)  # the paper's eq. (46) alone


def _balanced_forces(clm, q, soles, f, v=None):
    """Actuator forces of the projected dynamics with zero acceleration: tau = h_p,a - J_c,m^T f."""
    v = np.zeros(clm.model.nv) if v is None else v
    pd = projected_dynamics(clm, q, v, soles, 6, pin.LOCAL)
    return pd.actuated_forces(np.zeros(pd.M.shape[0]), f), pd


@pytest.mark.parametrize("robot", list(ROBOTS))
def test_recovers_chosen_wrenches(robot, mechanism_dir):
    name, soles = ROBOTS[robot]
    clm = model(name, mechanism_dir, True)
    est = ContactWrenchEstimator(clm, soles, config=RAW)
    rng = np.random.default_rng(0)
    for seed in range(3):
        q = closed_configuration(clm, seed, spread=0.1)
        f = rng.normal(0.0, 20.0, 12)
        f[[2, 8]] += 150.0
        tau, _ = _balanced_forces(clm, q, soles, f)
        out = est.update(q, actuator_force=tau)
        np.testing.assert_allclose(out.wrench_sole_in_sole_raw.reshape(-1), f, rtol=0, atol=WRENCH_TOL)
        assert out.residual == 0.0


@pytest.mark.parametrize("robot", list(ROBOTS))
def test_fast_path_equals_projected_dynamics(robot, mechanism_dir):
    """g_a + J_m^T g_u and J_c,m^T are the actuated rows of T^T g and (J_c T)^T (App. B)."""
    name, soles = ROBOTS[robot]
    clm = model(name, mechanism_dir, True)
    est = ContactWrenchEstimator(clm, soles, config=RAW)
    q = closed_configuration(clm, 4, spread=0.1)
    est.update(q, actuator_force=np.zeros(clm.n_a))
    pd = projected_dynamics(clm, q, np.zeros(clm.model.nv), soles, 6, pin.LOCAL)
    np.testing.assert_allclose(est.g_pa, pd.h[pd.actuated_rows], atol=1e-9)
    np.testing.assert_allclose(est.J_cm_T, pd.J_c[:, pd.actuated_rows].T, atol=1e-9)


@pytest.mark.parametrize("robot", list(ROBOTS))
def test_standing_robot_wrenches_carry_its_weight(robot, mechanism_dir):
    """At rest the ground wrenches balance gravity: the base rows of the projected dynamics (the
    robot's Newton-Euler equations) fix the total, the actuators its split between the soles."""
    name, soles = ROBOTS[robot]
    clm = model(name, mechanism_dir, True)
    q = closed_configuration(clm, 1, spread=0.05, base_rpy=(0.05, -0.03, 0.4))
    pd = projected_dynamics(clm, q, np.zeros(clm.model.nv), soles, 6, pin.LOCAL)
    base = pd.base_rows
    f = np.linalg.lstsq(pd.J_c[:, base].T, pd.h[base], rcond=None)[0]  # min-norm balancing wrenches
    tau = pd.actuated_forces(np.zeros(pd.M.shape[0]), f)
    est = ContactWrenchEstimator(clm, soles, config=RAW)
    out = est.update(q, actuator_force=tau)
    weight = clm.mass_kg * 9.81
    np.testing.assert_allclose(out.total_force_in_world, [0.0, 0.0, weight], atol=1e-6 * weight)


def test_velocity_terms(mechanism_dir):
    """With a moving robot (zero acceleration) the quasi-static estimate is biased by C v; the
    optional velocity terms remove the bias."""
    clm = model(DIGIT, mechanism_dir, True)
    q = closed_configuration(clm, 2, spread=0.1)
    rng = np.random.default_rng(3)
    v = clm.complete_velocity(q, rng.normal(0.0, 2.0, clm.n_a), rng.normal(0.0, 0.5, 6))
    f = rng.normal(0.0, 20.0, 12)
    tau, _ = _balanced_forces(clm, q, DIGIT_SOLES, f, v)
    fast = ContactWrenchEstimator(clm, DIGIT_SOLES, config=RAW).update(q, actuator_force=tau, v=v)
    assert np.max(np.abs(fast.wrench_sole_in_sole_raw.reshape(-1) - f)) > 1e-3
    cfg = ContactWrenchConfig(filter_enabled=False, include_velocity_terms=True, base_row_weight=0.0)
    full = ContactWrenchEstimator(clm, DIGIT_SOLES, config=cfg).update(q, actuator_force=tau, v=v)
    np.testing.assert_allclose(full.wrench_sole_in_sole_raw.reshape(-1), f, atol=WRENCH_TOL)


def test_cop_and_zmp_definitions(mechanism_dir):
    """CoP: no tangential moment about it in the sole plane; ZMP: the total moment about it has no
    horizontal component. Needs soles whose z axis is the sole normal (Kangaroo)."""
    clm = model("kangaroo", mechanism_dir, True)
    soles = KANGAROO_SOLES
    q = closed_configuration(clm, 0, spread=0.1, base_rpy=(0.02, -0.03, 0.3))
    est = ContactWrenchEstimator(clm, soles, config=RAW)
    rng = np.random.default_rng(1)
    f_world = rng.normal(0.0, 5.0, (2, 6))
    f_world[:, 2] = [200.0, 120.0]  # upward ground reactions
    pin.framesForwardKinematics(clm.model, clm.data, q)
    rotations = [clm.data.oMf[clm.model.getFrameId(s)].rotation for s in soles]
    f = np.concatenate([np.concatenate([R.T @ w[:3], R.T @ w[3:]]) for R, w in zip(rotations, f_world)])
    tau, _ = _balanced_forces(clm, q, soles, f)
    out = est.update(q, actuator_force=tau)
    assert out.cop_valid.all()
    for i in range(2):
        w = out.wrench_sole_in_sole[i]
        c = out.cop_sole_in_sole[i]
        moment = w[3:] - np.cross(c, w[:3])
        np.testing.assert_allclose(moment[:2], 0.0, atol=1e-9)
    assert out.zmp_valid
    F = out.wrench_sole_in_world[:, :3].sum(axis=0)
    T = np.zeros(3)
    for i, frame in enumerate(soles):
        p = clm.data.oMf[clm.model.getFrameId(frame)].translation
        T += out.wrench_sole_in_world[i, 3:] + np.cross(p, out.wrench_sole_in_world[i, :3])
        np.testing.assert_allclose(out.cop_in_world[i], clm.data.oMf[clm.model.getFrameId(frame)].act(
            out.cop_sole_in_sole[i]), atol=1e-12)
    m_zmp = T - np.cross(out.zmp_in_world, F)
    np.testing.assert_allclose(m_zmp[:2], 0.0, atol=1e-8)


def test_unloaded_sole_has_no_cop(mechanism_dir):
    clm = model(DIGIT, mechanism_dir, True)
    q = closed_configuration(clm, 0, spread=0.05)
    f = np.zeros(12)
    f[2] = 300.0
    tau, _ = _balanced_forces(clm, q, DIGIT_SOLES, f)
    out = ContactWrenchEstimator(clm, DIGIT_SOLES, config=RAW).update(q, actuator_force=tau)
    assert out.cop_valid.tolist() == [True, False]
    assert np.all(np.isnan(out.cop_sole_in_sole[1]))


def test_motor_torque_conversion_eq47(mechanism_dir):
    """tau_bar = tau_m 2 pi eta / L: with the paper's hip/ankle lead (0.05 m) and eta = 0.95,
    1 N·m of motor torque is 2 pi 0.95 / 0.05 = 119.38 N."""
    clm = model("u2ups", mechanism_dir, False)
    tr = paper_screws(clm)
    np.testing.assert_allclose(tr.paper_force(np.ones(2)), 2 * math.pi * 0.95 / 0.05)
    tr = paper_screws(clm, overrides={"left_actuator": {"screw_lead_m": 0.1}})
    np.testing.assert_allclose(tr.paper_force(np.ones(2)), [2 * math.pi * 0.95 / 0.1, 2 * math.pi * 0.95 / 0.05])
    np.testing.assert_allclose(tr.torque_from_force(tr.paper_force(np.array([0.3, -2.0])), 0.0, switch=False,
                                                    friction=False), [0.3, -2.0])
    digit = paper_screws(model(DIGIT, mechanism_dir, True))
    assert not digit.is_linear.any()  # revolute actuators: the effort is the joint torque
    np.testing.assert_allclose(digit.paper_force(np.arange(12.0)), np.arange(12.0))


def test_motor_torque_input_matches_force_input(mechanism_dir):
    clm = model(DIGIT, mechanism_dir, True)
    q = closed_configuration(clm, 0, spread=0.05)
    est = ContactWrenchEstimator(clm, DIGIT_SOLES, config=RAW)
    tau = np.random.default_rng(0).normal(0.0, 5.0, clm.n_a)
    a = est.update(q, actuator_force=tau).wrench_sole_in_sole_raw.copy()
    b = est.update(q, motor_torque=tau / est.transmission.paper_gain).wrench_sole_in_sole_raw
    np.testing.assert_allclose(a, b, atol=1e-12)


def test_filtered_output_converges_to_raw(mechanism_dir):
    clm = model(DIGIT, mechanism_dir, True)
    q = closed_configuration(clm, 0, spread=0.05)
    est = ContactWrenchEstimator(clm, DIGIT_SOLES, config=ContactWrenchConfig(base_row_weight=0.0))
    f0 = np.zeros(12)
    f0[[2, 8]] = 100.0
    f1 = f0 + 50.0
    est.update(q, actuator_force=_balanced_forces(clm, q, DIGIT_SOLES, f0)[0])
    tau1 = _balanced_forces(clm, q, DIGIT_SOLES, f1)[0]
    first = est.update(q, actuator_force=tau1).wrench_sole_in_sole.reshape(-1).copy()
    assert np.max(np.abs(first - f0)) < 1.0  # 5 Hz at 1 kHz: a step barely moves the first sample
    for _ in range(1000):
        out = est.update(q, actuator_force=tau1)
    np.testing.assert_allclose(out.wrench_sole_in_sole.reshape(-1), f1, atol=1e-3)


def test_bad_input_raises(mechanism_dir):
    clm = model(DIGIT, mechanism_dir, True)
    with pytest.raises(FrameNotFound, match="Valid names"):
        ContactWrenchEstimator(clm, ["foot_frme", "foot_left_frame"])
    est = ContactWrenchEstimator(clm, DIGIT_SOLES)
    q = clm.q_ref.copy()
    tau = np.zeros(clm.n_a)
    tau[0] = np.nan
    with pytest.raises(EstimationError, match="finite"):
        est.update(q, actuator_force=tau)
    with pytest.raises(EstimationError):
        est.update(q[:-1], actuator_force=np.zeros(clm.n_a))
    with pytest.raises(InputError, match="exactly one"):
        est.update(q)


# ---------------------------------------------------------------------- floating base: base rows
def _near_straight_knees(clm, leg_length_m=5e-4):
    """Kangaroo standing with nearly stretched knees (the pose the closed loop settles in)."""
    from kangaroo_wbc.robots.kangaroo.robot import standing_configuration

    q0 = standing_configuration(clm)
    theta = q0[clm.idx_q_a].copy()
    theta[[i for i, n in enumerate(clm.actuated_joint_names) if "leg_length" in n]] = leg_length_m
    q, _ = clm.closure_fk(theta, q0, max_iter=100)
    return q


def _static_base_balance(clm, q, soles, base_rhs_extra=None):
    """Min-norm wrenches satisfying the base rows ``J_c,b^T f = g_b (+ extra)``, and the actuator
    forces that make the actuated rows consistent with them."""
    pd = projected_dynamics(clm, q, np.zeros(clm.model.nv), soles, 6, pin.LOCAL)
    b = pd.h[pd.base_rows] + (0.0 if base_rhs_extra is None else base_rhs_extra)
    f = np.linalg.lstsq(pd.J_c[:, pd.base_rows].T, b, rcond=None)[0]
    return f, pd.actuated_forces(np.zeros(pd.M.shape[0]), f)


def test_base_rows_make_the_stretched_leg_estimate_well_conditioned(mechanism_dir):
    """A force along a straight leg loads no actuator: J_c,m^T is ill-conditioned near stretched
    knees and the paper's actuated rows amplify 0.25 N of force noise into newtons of f_z. The base
    rows (the robot's Newton-Euler equations) bound the total and the split."""
    clm = model("kangaroo", mechanism_dir, True)
    soles = KANGAROO_SOLES
    q = _near_straight_knees(clm)
    f, tau = _static_base_balance(clm, q, soles)
    paper = ContactWrenchEstimator(clm, soles, config=RAW)
    both = ContactWrenchEstimator(clm, soles, config=ContactWrenchConfig(filter_enabled=False))
    np.testing.assert_allclose(both.update(q, actuator_force=tau).wrench_sole_in_sole_raw.reshape(-1), f, atol=1e-6)
    assert both.estimate.residual < 1e-6 and both.estimate.base_residual < 1e-6
    assert np.linalg.cond(paper.J_cm_T if paper.update(q, actuator_force=tau) else None) > 300.0
    assert np.linalg.cond(np.vstack([both.J_cm_T, 10.0 * both.J_cb_T])) < 100.0
    weight = clm.mass_kg * 9.81
    rng = np.random.default_rng(0)
    err = {"paper": [], "both": []}
    for _ in range(100):
        noisy = tau + rng.normal(0.0, 0.25, clm.n_a)
        for name, est in (("paper", paper), ("both", both)):
            out = est.update(q, actuator_force=noisy)
            err[name].append([out.total_force_in_world[2] - weight, out.wrench_sole_in_sole_raw[0, 2] - f[2]])
    rms = {k: np.sqrt(np.mean(np.square(v), axis=0)) for k, v in err.items()}
    assert rms["paper"][0] > 2.0  # [N] sum of f_z
    assert rms["both"][0] < 0.05 and rms["both"][1] < 0.5, rms


def test_momentum_rate_enters_the_base_rows(mechanism_dir):
    """Base accelerating at a (joints still): the momentum rate is m a (moment about the base
    origin: (c - p_b) x m a), and the ground wrenches carry m (a - g)."""
    clm = model("kangaroo", mechanism_dir, True)
    soles = KANGAROO_SOLES
    m = clm.model
    q0 = _near_straight_knees(clm)
    q0[:3] = [0.7, -0.4, 0.95]  # away from the world origin: the moment transfer p x f is exercised
    q0[3:7] = pin.Quaternion(pin.rpy.rpyToMatrix(0.02, -0.03, 0.4)).coeffs()
    R = pin.Quaternion(q0[3:7]).toRotationMatrix()
    a = np.array([0.8, -0.5, 1.2])  # [m/s^2] world
    dt = 1e-3
    q1 = q0.copy()
    q1[:3] += 0.5 * a * dt * dt
    v0, v1 = np.zeros(m.nv), np.zeros(m.nv)
    v1[:3] = R.T @ (a * dt)  # free-flyer: linear velocity in the base frame
    est = ContactWrenchEstimator(clm, soles, config=ContactWrenchConfig(filter_enabled=False))
    _, tau0 = _static_base_balance(clm, q0, soles)
    est.update(q0, actuator_force=tau0, v=v0)
    np.testing.assert_array_equal(est.momentum_rate_in_base, 0.0)  # no history yet
    mass = clm.mass_kg
    c1 = pin.centerOfMass(m, m.createData(), q1)
    expected = np.concatenate([R.T @ (mass * a), R.T @ np.cross(c1 - q1[:3], mass * a)])
    f, tau1 = _static_base_balance(clm, q1, soles, expected)
    out = est.update(q1, actuator_force=tau1, v=v1)
    np.testing.assert_allclose(est.momentum_rate_in_base, expected, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(out.wrench_sole_in_sole_raw.reshape(-1), f, atol=1e-5)
    np.testing.assert_allclose(out.total_force_in_world, mass * (a + [0.0, 0.0, 9.81]), atol=1e-5)
    # without the velocity the base rows hold the static weight: most of m a_z is missed
    static = ContactWrenchEstimator(clm, soles, config=ContactWrenchConfig(filter_enabled=False))
    fz_static = static.update(q1, actuator_force=tau1).total_force_in_world[2]
    assert abs(fz_static - mass * 9.81) < 0.1 * mass * a[2]


def test_filter_acts_on_measured_inputs(mechanism_dir):
    """Still configuration: filtering the inputs equals filtering the wrenches (linear map). A
    configuration change with balanced forces moves the static wrench without filter lag."""
    from kangaroo_wbc.estimation.filters import ButterworthFilter

    clm = model("kangaroo", mechanism_dir, True)
    soles = KANGAROO_SOLES
    q = _near_straight_knees(clm, 2e-3)
    f, tau = _static_base_balance(clm, q, soles)
    est = ContactWrenchEstimator(clm, soles)
    ref = ButterworthFilter(5.0, 1000.0, 12, 2)
    rng = np.random.default_rng(1)
    for _ in range(200):
        out = est.update(q, actuator_force=tau + rng.normal(0.0, 5.0, clm.n_a))
        np.testing.assert_allclose(out.wrench_sole_in_sole.reshape(-1),
                                   ref(out.wrench_sole_in_sole_raw.reshape(-1)), atol=1e-8)
    est.reset_filter()
    for _ in range(10):
        est.update(q, actuator_force=tau)
    # same actuator forces, base tilted by 0.1 rad: the weight now loads the soles differently and
    # the estimate follows at once (the gravity terms are model terms, not filtered)
    q2 = q.copy()
    q2[3:7] = pin.Quaternion(pin.rpy.rpyToMatrix(0.1, 0.0, 0.0)).coeffs()
    raw = est.update(q2, actuator_force=tau).wrench_sole_in_sole_raw.copy()
    np.testing.assert_allclose(est.estimate.wrench_sole_in_sole, raw, atol=1e-9)


def test_shared_full_model_update_gives_the_same_wrenches() -> None:
    """update_model(kinematics=<the passive estimator's>) + estimate_wrenches == update (own kinematics)."""
    from kangaroo_wbc.estimation.passive_state import PassiveStateEstimator
    from kangaroo_wbc.model import gravity_actuated
    from kangaroo_wbc.robots.kangaroo.robot import load_kangaroo, standing_configuration

    clm = load_kangaroo(floating_base=True)
    q0 = standing_configuration(clm)
    est = PassiveStateEstimator(clm, q0=q0)
    soles = ["left_sole", "right_sole"]
    own, shared = ContactWrenchEstimator(clm, soles), ContactWrenchEstimator(clm, soles)
    g = gravity_actuated(clm, q0)
    rng = np.random.default_rng(4)
    theta = q0[clm.idx_q_a].copy()
    for _ in range(20):
        theta_dot = 0.01 * rng.standard_normal(clm.n_a)
        theta += 1e-3 * theta_dot
        est.update(theta, theta_dot, 1e-3)
        force = g * (1.0 + 0.05 * rng.standard_normal(clm.n_a))
        a = own.update(est.q, actuator_force=force, v=est.v)
        a_w, a_zmp = a.wrench_sole_in_sole.copy(), a.zmp_in_world.copy()
        shared.update_model(est.q, est.v, kinematics=est.kin)
        b = shared.estimate_wrenches(actuator_force=force)
        np.testing.assert_allclose(b.wrench_sole_in_sole, a_w, rtol=0, atol=1e-9)
        np.testing.assert_allclose(b.zmp_in_world, a_zmp, rtol=0, atol=1e-12)


def test_estimate_before_model_update_is_an_error() -> None:
    from kangaroo_wbc.robots.kangaroo.robot import load_kangaroo

    cwe = ContactWrenchEstimator(load_kangaroo(floating_base=True), ["left_sole", "right_sole"])
    with pytest.raises(EstimationError, match="update_model"):
        cwe.estimate_wrenches(actuator_force=np.zeros(12))


@pytest.mark.parametrize("velocity_terms", [False, True])
def test_projected_model_terms_give_the_same_wrenches(velocity_terms: bool) -> None:
    """update_model(projected=<the controller's ProjectedModel at q>) == the estimator's own update,
    along a moving, tilted state (momentum rate, gravity direction, optional velocity terms)."""
    from kangaroo_wbc.model import gravity_actuated
    from kangaroo_wbc.model.projected_model import ProjectedModel
    from kangaroo_wbc.robots.kangaroo.robot import load_kangaroo, standing_configuration

    clm = load_kangaroo(floating_base=True)
    soles = ["left_sole", "right_sole"]
    pm = ProjectedModel(clm, ["base_link", *soles])
    cfg = ContactWrenchConfig(include_velocity_terms=velocity_terms)
    own, shared = ContactWrenchEstimator(clm, soles, config=cfg), ContactWrenchEstimator(clm, soles, config=cfg)
    q = standing_configuration(clm)
    q[3:7] = pin.Quaternion(pin.rpy.rpyToMatrix(0.08, -0.05, 0.3)).coeffs()
    g = gravity_actuated(clm, q)
    rng = np.random.default_rng(7)
    nu = np.zeros(clm.n_b + clm.n_a)
    for k in range(8):
        nu += 0.05 * rng.standard_normal(nu.size)
        theta = q[clm.idx_q_a] + 1e-3 * nu[clm.n_b:]
        q, _ = clm.closure_fk(theta, q_guess=q)
        pm.update(q, nu)
        v = pm.v.copy()
        force = g * (1.0 + 0.05 * rng.standard_normal(clm.n_a))
        a = own.update(q, actuator_force=force, v=v)
        a_w, a_raw = a.wrench_sole_in_sole.copy(), a.wrench_sole_in_sole_raw.copy()
        a_world, a_cop, a_zmp = a.wrench_sole_in_world.copy(), a.cop_in_world.copy(), a.zmp_in_world.copy()
        b = shared.update(q, actuator_force=force, v=v, projected=pm)
        np.testing.assert_allclose(shared.J_cm_T, own.J_cm_T, rtol=0, atol=1e-10)
        np.testing.assert_allclose(shared.J_cb_T, own.J_cb_T, rtol=0, atol=1e-10)
        np.testing.assert_allclose(shared._sole_R, own._sole_R, rtol=0, atol=1e-12)
        np.testing.assert_allclose(shared._sole_p, own._sole_p, rtol=0, atol=1e-12)
        np.testing.assert_allclose(shared.g_pa, own.g_pa, rtol=0, atol=1e-9)
        np.testing.assert_allclose(shared.g_base, own.g_base, rtol=0, atol=1e-9)
        np.testing.assert_allclose(shared.momentum_rate_in_base, own.momentum_rate_in_base, rtol=0, atol=1e-8)
        np.testing.assert_allclose(b.wrench_sole_in_sole_raw, a_raw, rtol=0, atol=1e-8)
        np.testing.assert_allclose(b.wrench_sole_in_sole, a_w, rtol=0, atol=1e-8)
        np.testing.assert_allclose(b.wrench_sole_in_world, a_world, rtol=0, atol=1e-8)
        np.testing.assert_allclose(b.cop_in_world, a_cop, rtol=0, atol=1e-10)
        np.testing.assert_allclose(b.zmp_in_world, a_zmp, rtol=0, atol=1e-10)
        assert b.zmp_valid and np.isfinite(a_zmp).all()
        assert k == 0 or np.abs(own.momentum_rate_in_base).max() > 1e-3  # the moving case is exercised


def test_projected_model_terms_reject_a_stale_or_foreign_model() -> None:
    from kangaroo_wbc.model import ClosedLoopModel
    from kangaroo_wbc.model.projected_model import ProjectedModel
    from kangaroo_wbc.robots.kangaroo.robot import load_kangaroo, standing_configuration
    from test.estimation.conftest import KANGAROO_CLOSURES, KANGAROO_URDF

    clm = load_kangaroo(floating_base=True)
    soles = ["left_sole", "right_sole"]
    cwe = ContactWrenchEstimator(clm, soles)
    q = standing_configuration(clm)
    nu = np.zeros(clm.n_b + clm.n_a)
    pm = ProjectedModel(clm, soles)
    with pytest.raises(InputError, match="not updated at this configuration"):
        cwe.update_model(q, projected=pm)  # never updated
    pm.update(q, nu)
    q2 = q.copy()
    q2[0] += 1e-3
    with pytest.raises(InputError, match="not updated at this configuration"):
        cwe.update_model(q2, projected=pm)
    with pytest.raises(InputError, match="not registered"):
        cwe.update_model(q, projected=ProjectedModel(clm, ["left_sole"]))
    other = ClosedLoopModel.from_files(KANGAROO_URDF, KANGAROO_CLOSURES, floating_base=True)
    other_pm = ProjectedModel(other, soles)
    other_pm.update(q, nu)
    with pytest.raises(InputError, match="another model"):
        cwe.update_model(q, projected=other_pm)
    with pytest.raises(InputError, match="not both"):
        cwe.update_model(q, kinematics=cwe.kin, projected=pm)
    cwe.update_model(q, projected=pm)  # the current one is accepted


def test_normal_equation_map_matches_a_dense_solve_and_rejects_rank_loss():
    """The compiled Cholesky map of the base-row estimate equals ``N^{-1} [A^T, w^2 J_b^T]`` by a
    dense solve; a rank-deficient ``N`` (two soles with the same Jacobian columns) is refused and
    leaves the map untouched (the estimate then falls back to LU / least squares)."""
    from kangaroo_wbc.estimation.contact_wrench import _normal_equations_map

    rng = np.random.default_rng(5)
    A, J_b, w2 = rng.standard_normal((12, 12)), rng.standard_normal((6, 12)), 0.3
    P = np.zeros((12, 18))
    assert _normal_equations_map(A, np.arange(12), J_b, w2, P)
    N = A.T @ A + w2 * J_b.T @ J_b
    expected = np.linalg.solve(N, np.hstack([A.T, w2 * J_b.T]))
    np.testing.assert_allclose(P, expected, rtol=0, atol=1e-10 * np.abs(expected).max())
    A[:, 6:], J_b[:, 6:] = A[:, :6], J_b[:, :6]  # the second sole's columns repeat the first's
    P[:] = 7.0
    assert not _normal_equations_map(A, np.arange(12), J_b, w2, P)
    assert (P == 7.0).all()


@pytest.mark.parametrize("filtered", [True, False])
def test_compiled_estimation_step_equals_the_least_squares_fallback(filtered, mechanism_dir):
    """The per-tick step through the factored map (compiled: right-hand sides, F = P B, residuals,
    CoP/ZMP) gives the wrenches, residuals, CoPs and ZMP of the dense least-squares path the
    estimator falls back to when that map is unavailable."""
    clm = model("kangaroo", mechanism_dir, True)
    soles = KANGAROO_SOLES
    q = _near_straight_knees(clm, 2e-3)
    q[:3] = [0.3, -0.2, 0.9]
    q[3:7] = pin.Quaternion(pin.rpy.rpyToMatrix(0.03, -0.02, 0.2)).coeffs()
    _, tau = _static_base_balance(clm, q, soles)
    cfg = ContactWrenchConfig(filter_enabled=filtered)
    fast, slow = ContactWrenchEstimator(clm, soles, config=cfg), ContactWrenchEstimator(clm, soles, config=cfg)
    rng = np.random.default_rng(4)
    v = np.zeros(clm.model.nv)
    for _ in range(30):
        v[:6] = rng.normal(0.0, 0.05, 6)
        force = tau * (1.0 + 0.2 * rng.standard_normal(clm.n_a))  # one sole unloads on some ticks
        a = fast.update(q, actuator_force=force, v=v)
        slow.update_model(q, v)
        slow._solver_ready = False  # the fallback path: dense normal equations / least squares
        b = slow.estimate_wrenches(actuator_force=force)
        assert fast._solver_ready
        for name in ("wrench_sole_in_sole_raw", "wrench_sole_in_sole", "wrench_sole_in_world",
                     "total_force_in_world"):
            np.testing.assert_allclose(getattr(a, name), getattr(b, name), rtol=0, atol=1e-7, err_msg=name)
        np.testing.assert_array_equal(a.cop_valid, b.cop_valid)
        np.testing.assert_allclose(a.cop_in_world, b.cop_in_world, rtol=0, atol=1e-9)
        np.testing.assert_allclose(a.zmp_in_world, b.zmp_in_world, rtol=0, atol=1e-9)
        assert a.zmp_valid == b.zmp_valid
        assert a.residual == pytest.approx(b.residual, abs=1e-7)
        assert a.base_residual == pytest.approx(b.base_residual, abs=1e-7)
    assert a.residual > 1e-3 and a.base_residual > 1e-6  # the residuals are exercised, not zero


def test_compiled_model_terms_equal_the_pinocchio_and_dense_path() -> None:
    """Sole placements and Jacobians, base placement of the momentum rate and the projection through
    the block LU (compiled) against pinocchio's frames and LAPACK solves, along a moving, tilted state."""
    from kangaroo_wbc.estimation.passive_state import PassiveStateEstimator
    from kangaroo_wbc.robots.kangaroo.robot import load_kangaroo, standing_configuration

    clm = load_kangaroo(floating_base=True)
    soles = ["left_sole", "right_sole"]
    q0 = standing_configuration(clm)
    q0[3:7] = pin.Quaternion(pin.rpy.rpyToMatrix(0.1, -0.07, 0.4)).coeffs()
    est = PassiveStateEstimator(clm, q0=q0)
    fast, dense = ContactWrenchEstimator(clm, soles), ContactWrenchEstimator(clm, soles)
    assert fast.kin.block_lu is not None
    dense.kin.block_lu = None
    dense.kin.kernel = None  # closure terms, sole and base placements from pinocchio's data
    rng = np.random.default_rng(5)
    theta = q0[clm.idx_q_a].copy()
    for _ in range(10):
        theta_dot = 0.05 * rng.standard_normal(clm.n_a)
        theta += 1e-3 * theta_dot
        est.update(theta, theta_dot, 1e-3)
        fast.update_model(est.q, est.v, kinematics=est.kin)
        dense.update_model(est.q, est.v)
        for name in ("J_cm_T", "g_pa", "J_cb_T", "g_base", "momentum_rate_in_base"):
            np.testing.assert_allclose(getattr(fast, name), getattr(dense, name), rtol=0, atol=1e-9, err_msg=name)
        # the sole Jacobians (compiled from data.J) against pinocchio's LOCAL frame Jacobians
        Jc_pin = np.vstack([pin.getFrameJacobian(dense.model, dense.data, fid, pin.LOCAL) for fid in dense.frame_ids])
        np.testing.assert_allclose(fast._Jc, Jc_pin, rtol=0, atol=1e-12)
        np.testing.assert_allclose(dense._Jc, Jc_pin, rtol=0, atol=1e-12)
        np.testing.assert_allclose(fast._sole_R, dense._sole_R, rtol=0, atol=1e-13)
        np.testing.assert_allclose(fast._sole_p, dense._sole_p, rtol=0, atol=1e-13)
    assert np.abs(fast.g_pa).max() > 1.0 and np.abs(fast.J_cm_T).max() > 1e-2  # not trivially zero

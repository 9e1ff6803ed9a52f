"""Unit tests of the closed-linkage kinematics (Kangaroo paper eq. (2)-(10), App. A)."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

from kangaroo_wbc.errors import ClosureFkError, InputError
from kangaroo_wbc.model.checks import fd_jacobian, random_closed_configuration
from test.model.conftest import THIRD_PARTY, load

MECHANISMS = ["rrpr", "four_bar", "u2ups"] + THIRD_PARTY
FD_TOL = 1e-6  # central differences with h = 1e-7: truncation ~1e-14 * |d3e| + rounding ~1e-9


@pytest.fixture(params=[(n, fb) for n in MECHANISMS for fb in (False, True)],
                ids=lambda p: f"{p[0]}-{'floating' if p[1] else 'fixed'}")
def closed_state(request, mechanism_dir):
    return _state(*request.param, mechanism_dir)


def _state(name, fb, mechanism_dir):
    """A random closed state ``(clm, q, v, rng)`` of mechanism ``name`` (free-floating if ``fb``)."""
    clm = load(name, mechanism_dir, fb)
    rng = np.random.default_rng(7)
    q = random_closed_configuration(clm, rng)
    if fb:
        q[:3] = rng.normal(0, 0.2, 3)
        q[3:7] = pin.Quaternion(rng.normal(size=4)).normalized().coeffs()
    v_a = rng.normal(0, 1, clm.n_a)
    v = clm.complete_velocity(q, v_a, rng.normal(0, 1, 6) if fb else None)
    return clm, q, v, rng


def test_reference_configuration_is_closed(closed_state):
    clm, q, _, _ = closed_state
    assert np.max(np.abs(clm.closure_error(clm.q_ref))) < 1e-10
    assert np.max(np.abs(clm.closure_error(q))) < 1e-10


def test_jacobian_matches_finite_differences(closed_state):
    clm, q, _, _ = closed_state
    J = clm.constraint_jacobian(q)
    assert J.shape == (clm.n_c, clm.model.nv)
    assert np.max(np.abs(J - fd_jacobian(clm, q))) < FD_TOL


def test_jacobian_matches_finite_differences_away_from_closure(closed_state):
    """e_l and J_l are exact derivatives of each other also where the loop is open."""
    clm, q, _, rng = closed_state
    dv = np.zeros(clm.model.nv)
    dv[clm.idx_v_u] = rng.normal(0, 0.05, clm.n_u)
    q_open = pin.integrate(clm.model, q, dv)
    assert np.max(np.abs(clm.closure_error(q_open))) > 1e-4
    assert np.max(np.abs(clm.constraint_jacobian(q_open) - fd_jacobian(clm, q_open))) < FD_TOL


def test_bias_matches_finite_differences(closed_state):
    clm, q, v, _ = closed_state
    h = 1e-6
    Jv_p = clm.constraint_jacobian(pin.integrate(clm.model, q, h * v)) @ v
    Jv_m = clm.constraint_jacobian(pin.integrate(clm.model, q, -h * v)) @ v
    assert np.max(np.abs(clm.constraint_bias(q, v) - (Jv_p - Jv_m) / (2 * h))) < 1e-5


def test_dfk_velocity_satisfies_constraint(closed_state):
    clm, q, v, _ = closed_state
    assert np.max(np.abs(clm.constraint_jacobian(q) @ v)) < 1e-10


def test_passive_acceleration_satisfies_eq8(closed_state):
    """theta_ddot_u from eq. (10) makes J_l a + Jdot_l v = 0 (eq. (8))."""
    clm, q, v, rng = closed_state
    a_a = rng.normal(0, 1, clm.n_a)
    a = clm.complete_acceleration(q, v, a_a, rng.normal(0, 1, 6) if clm.floating_base else None)
    residual = clm.constraint_jacobian(q) @ a + clm.constraint_bias(q, v)
    assert np.max(np.abs(residual)) < 1e-9


@pytest.mark.parametrize("name", MECHANISMS)
def test_passive_acceleration_matches_closure_fk_trajectory(name, mechanism_dir):
    """Second differences of closure-FK positions along theta_a(t) match eq. (10) (fixed base:
    the base plays no role in the closures)."""
    clm, q, _, rng = _state(name, False, mechanism_dir)
    th0 = q[clm.idx_q_a]
    v_a, a_a = rng.normal(0, 0.2, clm.n_a), rng.normal(0, 0.2, clm.n_a)
    dt = 1e-3  # truncation O(dt^2) ~ 1e-7; closure-FK residual 1e-12 / dt^2 ~ 1e-6
    qs = [clm.closure_fk(th0 + v_a * t + 0.5 * a_a * t * t, q, tol=1e-13)[0] for t in (-dt, 0.0, dt)]
    a_fd = (pin.difference(clm.model, qs[1], qs[2]) - pin.difference(clm.model, qs[0], qs[1])) / dt**2
    v = clm.complete_velocity(qs[1], v_a)
    a_u = clm.passive_acceleration(qs[1], v, a_a)
    assert np.max(np.abs(a_u - a_fd[clm.idx_v_u])) < 1e-4 * max(1.0, np.max(np.abs(a_u)))


def test_closure_fk_from_perturbed_configuration(closed_state):
    clm, q, _, rng = closed_state
    dv = np.zeros(clm.model.nv)
    dv[clm.idx_v_u] = rng.normal(0, 0.03, clm.n_u)
    q_fk, info = clm.closure_fk(q[clm.idx_q_a], pin.integrate(clm.model, q, dv))
    assert info.converged and info.iterations <= 10
    assert np.max(np.abs(clm.closure_error(q_fk))) < 1e-10
    np.testing.assert_allclose(q_fk[clm.idx_q_a], q[clm.idx_q_a])


def test_power_balance_of_torque_map(closed_state):
    """tau_a . theta_dot_a = tau_u . theta_dot_u for tau_a = J_m^T tau_u (eq. (18))."""
    clm, q, v, rng = closed_state
    tau_u = rng.normal(0, 5, clm.n_u)
    tau_a = clm.torque_map(q, tau_u)
    assert abs(tau_a @ v[clm.idx_v_a] - tau_u @ v[clm.idx_v_u]) < 1e-9 * max(1.0, abs(tau_u @ v[clm.idx_v_u]))


def test_dik_and_inverse_torque_map_round_trip(mechanism_dir):
    """Eq. (21)-(23) on the 2-DOF platform: select its two output joints."""
    clm = load("u2ups", mechanism_dir)
    q = clm.q_ref
    joints = ["platform_pitch", "platform_roll"]
    v_s = np.array([0.3, -0.2])
    v_a = clm.differential_ik(q, joints, v_s)
    v = clm.complete_velocity(q, v_a)
    idx = [clm.passive_joint_names.index(j) for j in joints]
    np.testing.assert_allclose(v[clm.idx_v_u][idx], v_s, atol=1e-12)
    tau_s = np.array([4.0, -1.5])
    tau_a = clm.torque_map(q, np.eye(clm.n_u)[idx].T @ tau_s)
    np.testing.assert_allclose(clm.inverse_torque_map(q, joints, tau_a), tau_s, atol=1e-9)


def _four_bar_path(clm, target: float, samples: int = 81) -> np.ndarray:
    """Closed configuration at crank angle ``target`` followed from q_ref in small steps."""
    q = clm.q_ref.copy()
    for t in np.linspace(0.0, target, samples)[1:]:
        q, _ = clm.closure_fk(np.array([t]), q, max_step=0.05)
    return q


@pytest.mark.parametrize("target", [-2.5, 1.0, 2.0, 3.0])
def test_closure_fk_continues_to_far_targets_on_the_branch_of_the_guess(mechanism_dir, target):
    """A far actuator target is reached in continuation steps from the guess: same assembly mode as
    following the input in small steps (one Newton solve from q_ref flips the four-bar's mode)."""
    clm = load("four_bar", mechanism_dir)
    q_path = _four_bar_path(clm, target)
    q, info = clm.closure_fk(np.array([target]), clm.q_ref)
    assert info.converged
    np.testing.assert_allclose(q, q_path, atol=1e-9)


def test_closure_fk_small_steps_solve_directly(mechanism_dir):
    """Within the step limit the solve is the direct chord iteration: same result and iterations as
    with continuation switched off (max_step = inf)."""
    rng = np.random.default_rng(3)
    a, b = load("u2ups", mechanism_dir), load("u2ups", mechanism_dir)
    q_a = q_b = a.q_ref
    for _ in range(20):
        theta = q_a[a.idx_q_a] + rng.normal(0.0, 0.002, a.n_a)
        q_a, info_a = a.closure_fk(theta, q_a)
        q_b, info_b = b.closure_fk(theta, q_b, max_step=np.inf)
        assert info_a.iterations == info_b.iterations
        np.testing.assert_array_equal(q_a, q_b)


def test_closure_fk_step_limit(mechanism_dir):
    """An explicit max_step splits the change into equal steps (their iterations are counted)."""
    clm = load("u2ups", mechanism_dir)
    theta = np.array([0.03, -0.02])
    q_one, info_one = clm.closure_fk(theta, clm.q_ref, max_step=np.inf)
    q_many, info_many = clm.closure_fk(theta, clm.q_ref, max_step=0.001)
    np.testing.assert_allclose(q_many, q_one, atol=1e-10)
    assert info_many.iterations >= 30 > info_one.iterations
    with pytest.raises(InputError, match="max_step"):
        clm.closure_fk(theta, clm.q_ref, max_step=0.0)
    with pytest.raises(InputError, match="max_step"):
        clm.closure_fk(theta, clm.q_ref, max_step=[0.01, 0.01, 0.01])


def test_closure_fk_failure_is_reported(mechanism_dir):
    clm = load("rrpr", mechanism_dir)
    with pytest.raises(ClosureFkError, match="did not converge"):
        clm.closure_fk(np.array([5.0]))  # slider far beyond any closable length


def test_bad_inputs_raise_input_error(mechanism_dir):
    clm = load("four_bar", mechanism_dir)
    with pytest.raises(InputError, match="shape"):
        clm.closure_error(np.zeros(clm.model.nq + 1))
    q = clm.q_ref.copy()
    q[0] = np.nan
    with pytest.raises(InputError, match="non-finite"):
        clm.constraint_jacobian(q)
    with pytest.raises(InputError, match="actuator positions"):
        clm.closure_fk(np.array([np.inf]))


def test_payload_updates_the_shared_model_in_place():
    """A point payload at a body's CoM: the mass grows, the CoM lever and rotational inertia stay, and
    a projected model built before sees the new mass at its next update."""
    import pinocchio as pin

    from kangaroo_wbc.errors import FrameNotFound, InputError
    from kangaroo_wbc.model.projected_model import ProjectedModel
    from kangaroo_wbc.robots.kangaroo.robot import load_kangaroo

    clm = load_kangaroo(floating_base=True)
    pm = ProjectedModel(clm)
    j = clm.model.frames[clm.model.getFrameId("base_link")].parentJoint
    before, mass0 = clm.model.inertias[j].copy(), clm.mass_kg
    clm.add_payload("base_link", 6.0)
    after = clm.model.inertias[j]
    assert after.mass == pytest.approx(before.mass + 6.0) and clm.mass_kg == pytest.approx(mass0 + 6.0)
    np.testing.assert_allclose(after.lever, before.lever)
    np.testing.assert_allclose(after.inertia, before.inertia)
    pm.update(clm.q_ref, np.zeros(clm.n_b + clm.n_a))
    assert pm.mass == pytest.approx(pin.computeTotalMass(clm.model)) == pytest.approx(mass0 + 6.0)
    with pytest.raises(FrameNotFound):
        clm.add_payload("torso", 1.0)
    with pytest.raises(InputError):
        clm.add_payload("base_link", float("nan"))


def test_info_counts_a_locked_actuator_out():
    from kangaroo_wbc.errors import InputError
    from kangaroo_wbc.robots.kangaroo.robot import load_kangaroo

    clm = load_kangaroo(floating_base=True)
    full, locked = clm.info(), clm.info(locked_actuators=["left_ankle_inner_actuator"])
    assert locked["n_actuated"] == full["n_actuated"] - 1 and locked["n_dof"] == full["n_dof"] - 1 == 17
    assert locked["submechanisms"]["left_ankle"]["n_actuated"] == full["submechanisms"]["left_ankle"]["n_actuated"] - 1
    assert locked["n_passive"] == full["n_passive"] and locked["locked_actuators"] == ["left_ankle_inner_actuator"]
    with pytest.raises(InputError, match="left_ankle_inner_actuator"):
        clm.info(locked_actuators=["left_ankle"])

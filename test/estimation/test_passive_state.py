"""Unit tests of the passive-state estimator (Kangaroo paper eq. (35)-(40)) at 1 kHz.

Synthetic measurements: sinusoidal actuator positions and their exact derivatives; the reference
passive state comes from closure FK and the mapping Jacobian of the core.
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

from kangaroo_wbc.errors import EstimationError, InputError
from kangaroo_wbc.estimation.passive_state import PassiveStateConfig, PassiveStateEstimator
from test.estimation.conftest import DIGIT, closed_configuration, model

DT = 1e-3  # [s]
#: Closure drift of one-step Euler is ~dt^2 |v|^2 |d2e| per tick and is corrected at rate alpha,
#: so the steady closure error scales as 1/alpha; the passive-position error is that error mapped
#: through J_lu^{-1}. Bounds over 1 s of motion:
CLOSURE_TOL = {1.0: 2e-4, 100.0: 2e-5}  # [m, rad], paper gain alpha = 1 and a stiffer alpha = 100
VEL_TOL = 1e-3  # relative to the largest passive speed, alpha = 100
#: (model, floating, amplitude [m or rad]) — amplitudes inside the reachable workspace
CASES = [("u2ups", False, 0.02), (DIGIT, True, 0.05), ("kangaroo", True, 0.01)]


def _trajectory(clm, q0, amplitude, seed=0):
    rng = np.random.default_rng(seed)
    theta0 = q0[clm.idx_q_a].copy()
    f = rng.uniform(0.5, 1.5, clm.n_a)  # [Hz]
    phase = rng.uniform(0.0, 2 * np.pi, clm.n_a)
    w = 2 * np.pi * f

    def theta(t):
        return theta0 + amplitude * (np.sin(w * t + phase) - np.sin(phase))

    def theta_dot(t):
        return amplitude * w * np.cos(w * t + phase)

    return theta, theta_dot


@pytest.mark.parametrize("alpha", [1.0, 100.0])
@pytest.mark.parametrize("name,floating,amplitude", CASES, ids=[c[0] for c in CASES])
def test_tracks_sinusoidal_actuators(name, floating, amplitude, alpha, mechanism_dir):
    """Paper's validation (Fig. 19): sinusoidal actuators at 1 kHz, beta = 1000."""
    clm = model(name, mechanism_dir, floating)
    q0 = closed_configuration(clm, 0, spread=0.0)
    est = PassiveStateEstimator(clm, PassiveStateConfig(alpha=alpha, beta=1000.0, dt_s=DT), q0=q0)
    theta, theta_dot = _trajectory(clm, q0, amplitude)
    q_fk = q0.copy()
    worst = {"pos": 0.0, "pos_bound": 0.0, "vel": 0.0, "closure": 0.0, "act": 0.0}
    for k in range(1000):
        t = k * DT
        est.update(theta(t), theta_dot(t))
        worst["closure"] = max(worst["closure"], est.closure_error_norm)
        if k % 100 == 99:
            # theta_{k+1} integrates the measurement at t over dt (eq. (39), beta dt = 1): the
            # reference is closure FK at theta(t) + dt theta_dot(t).
            q_fk, _ = clm.closure_fk(theta(t) + DT * theta_dot(t), q_fk)
            d = pin.difference(clm.model, q_fk, est.q)
            worst["pos"] = max(worst["pos"], float(np.max(np.abs(d[clm.idx_v_u]))))
            worst["act"] = max(worst["act"], float(np.max(np.abs(d[clm.idx_v_a]))))
            # first-order bound: |d theta_u| <= ||J_lu^{-1}||_inf |e_l|_inf (e_l at the estimate)
            J_lu = clm.constraint_jacobian(est.q)[:, clm.idx_v_u]
            gain = np.linalg.norm(np.linalg.inv(J_lu), np.inf)
            worst["pos_bound"] = max(worst["pos_bound"], gain * np.max(np.abs(clm.closure_error(est.q))))
            q_t, _ = clm.closure_fk(theta(t), q_fk)
            v_ref = clm.passive_velocity(q_t, theta_dot(t))
            scale = max(1e-3, float(np.max(np.abs(v_ref))))
            worst["vel"] = max(worst["vel"], float(np.max(np.abs(est.v[clm.idx_v_u] - v_ref))) / scale)
            np.testing.assert_array_equal(est.v[clm.idx_v_a], theta_dot(t))
    assert worst["act"] < 1e-9  # beta dt = 1: dead-beat tracking of the actuated positions
    assert worst["closure"] < CLOSURE_TOL[alpha], worst
    assert worst["pos"] < 1.5 * worst["pos_bound"] + 1e-9, worst
    if alpha >= 100.0:
        assert worst["vel"] < VEL_TOL, worst


def test_closure_error_decays_at_rate_alpha(mechanism_dir):
    """Error dynamics de/dt = -alpha e (eq. (37)): after a step disturbance of the passive state the
    closure error contracts by (1 - alpha dt) per tick."""
    clm = model(DIGIT, mechanism_dir, True)
    alpha = 20.0
    est = PassiveStateEstimator(clm, PassiveStateConfig(alpha=alpha, dt_s=DT))
    theta = clm.q_ref[clm.idx_q_a].copy()
    zero = np.zeros(clm.n_a)
    rng = np.random.default_rng(2)
    dv = np.zeros(clm.model.nv)
    dv[clm.idx_v_u] = rng.normal(0.0, 1e-3, clm.n_u)
    est.reset(pin.integrate(clm.model, clm.q_ref, dv))
    est.update(theta, zero)
    e0 = np.linalg.norm(est.closure_error)
    assert e0 > 1e-4
    for _ in range(100):
        est.update(theta, zero)
    e100 = np.linalg.norm(est.closure_error)
    expected = (1 - alpha * DT) ** 100
    assert 0.9 * expected < e100 / e0 < 1.1 * expected
    for _ in range(400):
        est.update(theta, zero)
    assert est.closure_error_norm < 1e-5


def test_recovers_from_a_measurement_step(mechanism_dir):
    """A 1 mm jump of every actuator reading is absorbed in one tick (beta dt = 1); the passive
    joints follow through J_m and the closure error stays small and decays."""
    clm = model("u2ups", mechanism_dir, False)
    est = PassiveStateEstimator(clm, PassiveStateConfig(alpha=50.0, dt_s=DT))
    theta = clm.q_ref[clm.idx_q_a] + 1e-3
    zero = np.zeros(clm.n_a)
    est.update(theta, zero)
    np.testing.assert_allclose(est.q[clm.idx_q_a], theta, atol=1e-12)
    peak = 0.0
    for _ in range(300):
        est.update(theta, zero)
        peak = max(peak, est.closure_error_norm)
    assert peak < 1e-4
    q_fk, _ = clm.closure_fk(theta, clm.q_ref)
    assert np.max(np.abs(pin.difference(clm.model, q_fk, est.q))) < 1e-6


def test_large_disturbance_is_reprojected(mechanism_dir):
    clm = model("u2ups", mechanism_dir, False)
    est = PassiveStateEstimator(clm, PassiveStateConfig(reproject_above=0.01))
    dv = np.zeros(clm.model.nv)
    dv[clm.idx_v_u] = 0.1
    est.reset(pin.integrate(clm.model, clm.q_ref, dv))
    theta = clm.q_ref[clm.idx_q_a]
    est.update(theta, np.zeros(clm.n_a))
    est.update(theta, np.zeros(clm.n_a))
    assert est.reprojections == 1
    assert est.closure_error_norm < 1e-9


def test_velocity_satisfies_the_closures(mechanism_dir):
    """eq. (35)-(36): J_l v = 0 at the configuration where J_m was evaluated."""
    clm = model(DIGIT, mechanism_dir, True)
    est = PassiveStateEstimator(clm)
    q = est.q.copy()
    v_a = np.random.default_rng(0).normal(0.0, 1.0, clm.n_a)
    est.update(q[clm.idx_q_a], v_a)
    J = clm.constraint_jacobian(q)
    assert np.max(np.abs(J @ est.v)) < 1e-10


def test_rod_spin_stays_on_the_cores_closure(mechanism_dir):
    """Kangaroo's ankle rods end in universal-joint cuts whose rotation row is exact in the core
    (``(R_a^T R_u)_ij``, not ``log3``, which differs by a second-order term of a few mrad at a tilted
    ankle). Started on the core's closed configuration with still actuators, the estimate must stay
    there: with the ``log3`` row it slid the idle rod spin by 4-19 mrad."""
    clm = model("kangaroo", mechanism_dir, True)
    spin = [i for i, n in enumerate(clm.passive_joint_names) if n.endswith("lower_rod_spin")]
    assert len(spin) == 4
    for seed in range(3):
        q = closed_configuration(clm, seed, spread=0.3)
        assert np.max(np.abs(clm.closure_error(q))) < 1e-9
        est = PassiveStateEstimator(clm, PassiveStateConfig(alpha=100.0), q0=q)
        assert est.closure_error_norm < 1e-9
        for _ in range(300):
            est.update(q[clm.idx_q_a], np.zeros(clm.n_a))
        assert est.closure_error_norm < 1e-9
        np.testing.assert_allclose(est.q[clm.idx_q_u], q[clm.idx_q_u], rtol=0, atol=1e-9)


def test_bad_input_raises_and_keeps_state(mechanism_dir):
    clm = model("u2ups", mechanism_dir, False)
    est = PassiveStateEstimator(clm)
    q0 = est.q.copy()
    theta = q0[clm.idx_q_a].copy()
    bad = theta.copy()
    bad[0] = np.nan
    with pytest.raises(EstimationError, match="non-finite"):
        est.update(bad, np.zeros(clm.n_a))
    with pytest.raises(EstimationError, match="shapes"):
        est.update(theta[:1], np.zeros(clm.n_a))
    with pytest.raises(EstimationError, match="dt_s"):
        est.update(theta, np.zeros(clm.n_a), dt_s=5.0)
    np.testing.assert_array_equal(est.q, q0)


def test_gains_are_bounded_by_the_rate():
    with pytest.raises(InputError, match="beta"):
        PassiveStateConfig(beta=2000.0, dt_s=1e-3)
    with pytest.raises(InputError, match="alpha"):
        PassiveStateConfig(alpha=-1.0)


def test_without_model_data_the_estimate_is_the_same(mechanism_dir):
    """``model_data=False`` (the full-model update taken from elsewhere) leaves the pinocchio data
    alone and gives the same estimate, bit for bit: the compiled closure terms do not read it."""
    clm = model(DIGIT, mechanism_dir, True)
    full, lean = PassiveStateEstimator(clm), PassiveStateEstimator(clm, model_data=False)
    assert full.kin.kernel is not None and lean.kin.kernel is not None
    theta, theta_dot = _trajectory(clm, full.q, 0.05)
    J_before = lean.data.J.copy()
    for k in range(50):
        for est in (full, lean):
            est.update(theta(k * DT), theta_dot(k * DT), DT)
        np.testing.assert_array_equal(lean.q, full.q)
        np.testing.assert_array_equal(lean.v, full.v)
    np.testing.assert_array_equal(lean.data.J, J_before)  # not updated
    assert not np.array_equal(full.data.J, J_before)  # the default keeps it current


@pytest.mark.parametrize("shared", [False, True], ids=["alone", "shared"])
@pytest.mark.parametrize("name,floating", [(DIGIT, True), ("kangaroo", True)])
def test_one_call_tick_equals_the_step_by_step_path(name, floating, shared, mechanism_dir):
    """The compiled one-call tick (closure terms, J_lu block LU, solve, velocities) gives the
    step-by-step path's estimate bit for bit, also when another user of the closure kinematics
    (the wrench model terms, ``shared``) evaluated and factorised J_lu at the new estimate between
    ticks: the tick then reuses them, as the step-by-step path does."""
    clm = model(name, mechanism_dir, floating)
    fused, steps = PassiveStateEstimator(clm), PassiveStateEstimator(clm)
    assert fused._fused
    steps._fused = False
    theta, theta_dot = _trajectory(clm, fused.q, 0.05 if name == DIGIT else 0.01)
    for k in range(60):
        noise = 1e-4 * np.sin(np.arange(clm.n_a) + k)  # measurements off the estimate: the correction acts
        for est in (fused, steps):
            est.update(theta(k * DT) + noise, theta_dot(k * DT), DT)
            if shared:  # a transposed solve at theta_{k+1}, as ContactWrenchEstimator.update_model
                est.kin.solve(np.ones((clm.n_u, 1)), transpose=True)
                # J_lu scaled after its factorisation: a tick that factorised it again would differ
                est.kin.kernel.J_l[:, : clm.n_u] *= 1.5
        np.testing.assert_array_equal(fused.q, steps.q)
        np.testing.assert_array_equal(fused.v, steps.v)
        np.testing.assert_array_equal(fused.q_at_sample, steps.q_at_sample)
        assert fused.closure_error_norm == steps.closure_error_norm
    assert fused.closure_error_norm > 0.0


@pytest.mark.parametrize("bad", [0.0, np.nan])
def test_one_call_tick_at_a_singular_jacobian_raises_and_keeps_state(bad, mechanism_dir):
    """J_lu singular (zero) or not finite: EstimationError, the state as it was, no factors kept."""
    clm = model("kangaroo", mechanism_dir, True)
    est = PassiveStateEstimator(clm)
    theta = est.q[clm.idx_q_a].copy()
    est.update(theta, np.zeros(clm.n_a))
    q0, v0 = est.q.copy(), est.v.copy()
    kernel = est.kin.kernel
    est.kin.evaluate()  # the closure terms at theta_k, then a singular J_lu in their place
    kernel.J_l[:, : clm.n_u] = bad
    with pytest.raises(EstimationError, match="singular"):
        est.update(theta, np.zeros(clm.n_a))
    np.testing.assert_array_equal(est.q, q0)
    np.testing.assert_array_equal(est.v, v0)
    assert est.kin.block_lu.ok is False

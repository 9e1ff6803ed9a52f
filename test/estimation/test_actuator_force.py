"""Actuator forces from motor torques beyond eq. (47) (unit tests, synthetic data with known
parameters): each compensation recovers the force the ball-screw model puts on the linkage, and
eq. (47) alone does not."""

from __future__ import annotations

import numpy as np
import pytest

from kangaroo_wbc.estimation.actuator_force import ActuatorCompensation, ActuatorForceEstimator
from kangaroo_wbc.model.ball_screw import BallScrewActuators

N = 6
RATE_HZ = 1000.0
RECOVERY_TOL_N = 1e-6  # the inverse model is exact on noise-free data
BIAS_TOL_NM = 1e-3  # bias learnt from an exact residual after 10 time constants


@pytest.fixture
def actuators() -> BallScrewActuators:
    """Six screws: leads 0.05 / 0.1 m, eta 0.92, eta' 0.8, rotor 3e-5 kg·m², F_c 15 N (unit data)."""
    return BallScrewActuators([f"a{i}" for i in range(N)], np.ones(N, bool), [0.05, 0.05, 0.05, 0.1, 0.05, 0.05],
                              0.92, 0.8, 3e-5, 15.0, 100.0, 2e-3, 4000.0)


def motion(n_ticks: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sinusoidal actuator trajectories: positions are not needed, velocities [m/s] and their exact
    one-tick differences as accelerations [m/s²]; forces [N] of a swaying robot."""
    t = np.arange(n_ticks + 1) / RATE_HZ
    f = 1.0 + 0.3 * np.arange(N)
    v = 0.02 * np.sin(2 * np.pi * np.outer(t, f) + np.arange(N))
    a = np.diff(v, axis=0) * RATE_HZ
    force = 300.0 * np.cos(2 * np.pi * 0.6 * t[1:, None] + np.arange(N)) + 50.0
    return v[1:], a, force


def test_each_compensation_recovers_the_force_eq_47_does_not(actuators) -> None:
    v, a, force = motion(2000)
    bias = np.linspace(-0.05, 0.05, N)  # current-sensor offsets [N·m]
    tau_true = actuators.torque_from_force(force, v, a)  # what the motors do
    measured = tau_true + bias
    full = ActuatorForceEstimator(actuators, ActuatorCompensation(sample_rate_hz=RATE_HZ))
    full.bias_nm[:] = bias  # as learnt (test_bias_is_learnt_from_the_residual)
    paper = ActuatorForceEstimator(actuators, ActuatorCompensation.paper())
    no_inertia = ActuatorForceEstimator(actuators, ActuatorCompensation(rotor_inertia=False, sample_rate_hz=RATE_HZ))
    no_inertia.bias_nm[:] = bias
    full.estimate(measured[0], v[0] - a[0] / RATE_HZ)  # the velocity history before the first tick
    err_full, err_paper, err_no_inertia = [], [], []
    for k in range(v.shape[0]):
        err_full.append(full.estimate(measured[k], v[k]) - force[k])
        err_paper.append(paper.estimate(measured[k], v[k]) - force[k])
        err_no_inertia.append(no_inertia.estimate(measured[k], v[k]) - force[k])
    assert np.max(np.abs(err_full)) < RECOVERY_TOL_N
    # without the inertia term: off by m_r a (0.47 kg times up to 2.5 m/s² here)
    expected = actuators.reflected_inertia_kg * a
    assert np.allclose(np.asarray(err_no_inertia), expected, atol=RECOVERY_TOL_N)
    # eq. (47) alone: the efficiency band and the friction, tens of newtons
    assert np.sqrt(np.mean(np.square(err_paper))) > 20.0


def test_back_driven_actuator_needs_the_switch(actuators) -> None:
    """A load pushing a screw back (force against the motion): eq. (47) underestimates it by
    eta eta' (the motor torque is eta' times the load's power over the motor speed)."""
    v = np.full(N, -0.1)  # 50 stiction widths
    force = np.full(N, 400.0)
    tau = actuators.torque_from_force(force, v)
    no_friction = actuators.force_from_torque(tau, v, switch=False, friction=False)
    comp = ActuatorForceEstimator(actuators, ActuatorCompensation(rotor_inertia=False, torque_bias=False))
    assert np.allclose(comp.estimate(tau, v), force, atol=RECOVERY_TOL_N)
    # eq. (47) reads eta * y where the screw gives y / eta' (minus the friction)
    ratio = no_friction / (force + actuators.friction_force(v))
    assert np.allclose(ratio, 0.92 * 0.8, rtol=1e-3)


def test_bias_is_learnt_from_the_residual(actuators) -> None:
    """The residual of exact wrenches is the force offset: the bias follows it with its time constant."""
    comp = ActuatorCompensation(actuator_model=False, rotor_inertia=False, sample_rate_hz=RATE_HZ,
                                bias_time_constant_s=0.1)
    est = ActuatorForceEstimator(actuators, comp)
    bias = np.linspace(-0.2, 0.3, N)
    tau_true = np.full(N, 5.0)
    still, soles = np.zeros(N), np.array([200.0, 150.0])
    for _ in range(1000):  # 10 time constants
        force = est.estimate(tau_true + bias, still)
        residual = force - actuators.paper_force(tau_true)  # J_cm^T f - (g_pa - tau_bar) with the true f
        assert est.update_bias(residual, still, soles)
    assert np.allclose(est.bias_nm, bias, atol=BIAS_TOL_NM)
    # moving, or a sole unloaded: nothing learnt
    before = est.bias_nm.copy()
    assert not est.update_bias(np.ones(N), np.full(N, 0.01), soles)
    assert not est.update_bias(np.ones(N), still, np.array([200.0, 10.0]))
    assert np.array_equal(est.bias_nm, before)


def test_paper_compensation_is_eq_47(actuators) -> None:
    rng = np.random.default_rng(3)
    tau, v = rng.normal(size=N), rng.normal(size=N)
    est = ActuatorForceEstimator(actuators, ActuatorCompensation.paper())
    assert np.allclose(est.estimate(tau, v), actuators.paper_force(tau))
    assert not est.update_bias(np.ones(N), np.zeros(N), np.array([200.0, 200.0]))

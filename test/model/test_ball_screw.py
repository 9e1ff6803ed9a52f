"""The ball-screw actuator model (unit tests: numpy only): power balance, the driving/back-driving
switch, the exact inverse, eq. (47) as its ideal case, and the Kangaroo's parameters."""

from __future__ import annotations

import math

import numpy as np
import pytest

from kangaroo_wbc.errors import InputError
from kangaroo_wbc.model.ball_screw import BallScrewActuators, paper_gain, reflected_inertia

LEAD_M = 0.05
ETA, ETA_BACK = 0.9, 0.8
INVERSE_TOL = 1e-9  # relative: torque_from_force inverts force_from_torque
ENERGY_RTOL = 1e-3  # energy balance of the integrated 1-DOF load (first-order integration error)


def screws(n: int = 3, friction: bool = True) -> BallScrewActuators:
    """Identical ball screws with losses (``friction``: Coulomb and viscous too)."""
    return BallScrewActuators([f"a{i}" for i in range(n)], np.ones(n, bool), LEAD_M, ETA, ETA_BACK, 3e-5,
                              20.0 if friction else 0.0, 50.0 if friction else 0.0, 2e-3, 4000.0)


def test_switch_gives_eta_driving_and_one_over_eta_prime_back_driven() -> None:
    a = screws(friction=False)
    k = 2 * math.pi / LEAD_M
    tau = np.array([1.0, 1.0, -1.0])
    fast = 0.2  # [m/s], 100 stiction widths
    f = a.force_from_torque(tau, np.array([fast, -fast, fast]))
    assert f[0] / (k * tau[0]) == pytest.approx(ETA, rel=1e-6)  # driving: torque along the motion
    assert f[1] / (k * tau[1]) == pytest.approx(1 / ETA_BACK, rel=1e-6)  # back-driven: the load pushes
    assert f[2] / (k * tau[2]) == pytest.approx(1 / ETA_BACK, rel=1e-6)
    # at standstill the screw sits mid-band, and the paper's eq. (47) is the driving case
    still = a.force_from_torque(tau, np.zeros(3))
    assert still[0] / k == pytest.approx(0.5 * (ETA + 1 / ETA_BACK))
    assert np.allclose(a.force_from_torque(tau, np.zeros(3), switch=False, friction=False), a.paper_force(tau))


def test_paper_gain_is_eq47_of_the_former_copies() -> None:
    """Eq. (47) has one implementation, :func:`paper_gain`. The readable forms it replaced (the
    contact-wrench estimator's ``2 pi eta / L``, the simulated sensors' ``tau 2 pi eta / L`` and
    ``F L / (2 pi eta)``) agree to round-off (at most 1 ulp per operation), and bit for bit on the
    gain for the Kangaroo's screws (leads 0.05 and 0.1 m, eta 0.95) and the simulator's default
    (0.005 m, 0.9); revolute actuators pass their torque."""
    lead = np.array([0.05, 0.1, 0.005, 0.004, 0.02, 1.0])
    eta = np.array([0.95, 0.95, 0.9, 0.8, 0.98, 1.0])
    lin = np.array([True, True, True, True, True, False])
    g = paper_gain(lin, lead, eta)
    np.testing.assert_array_equal(g[:3], 2.0 * math.pi * eta[:3] / lead[:3])
    np.testing.assert_allclose(g[:5], 2.0 * math.pi * eta[:5] / lead[:5], rtol=4e-16, atol=0.0)
    assert g[5] == 1.0
    tau = np.random.default_rng(0).normal(0.0, 3.0, (1000, 6))
    np.testing.assert_allclose((g * tau)[:, :5], tau[:, :5] * 2.0 * math.pi * eta[:5] / lead[:5], rtol=8e-16)
    np.testing.assert_allclose((tau / g)[:, :5], tau[:, :5] * lead[:5] / (2.0 * math.pi * eta[:5]), rtol=8e-16)
    a = BallScrewActuators([f"a{i}" for i in range(6)], lin, lead, eta, np.nan, 0.0, 0.0, 0.0, 1e-3, np.inf)
    np.testing.assert_array_equal(a.paper_gain, g)
    np.testing.assert_array_equal(a.paper_force(tau), g * tau)


def test_reflected_inertia_is_the_rotor_through_the_screw() -> None:
    """``m_r = J_r (2 pi / L)^2``: the actuators' and the MJCF armature's one implementation; the
    exporter's former ``J_r (2 pi / L) ** 2`` to round-off, bit for bit for the Kangaroo's rotor
    (3e-5 kg·m², leads 0.05 and 0.1 m)."""
    assert reflected_inertia(3e-5, 0.05) == 3e-5 * (2.0 * math.pi / 0.05) ** 2
    assert reflected_inertia(3e-5, 0.1) == 3e-5 * (2.0 * math.pi / 0.1) ** 2
    lead, rotor = np.array([0.005, 0.004, 0.05]), np.array([3e-5, 1.2e-5, 4e-5])
    np.testing.assert_allclose(reflected_inertia(rotor, lead), rotor * (2.0 * math.pi / lead) ** 2, rtol=4e-16)
    a = BallScrewActuators(["a", "b", "r"], [True, True, False], lead, 0.9, np.nan, rotor, 0.0, 0.0, 1e-3, np.inf)
    np.testing.assert_array_equal(a.reflected_inertia_kg, [*reflected_inertia(rotor[:2], lead[:2]), rotor[2]])


def test_power_flow_back_driven_loses_one_minus_eta_prime() -> None:
    """Back-driven, the motor receives eta' of the power the load puts in."""
    a = screws(friction=False)
    tau, v = np.array([2.0, 2.0, 2.0]), np.full(3, -0.3)
    f = a.force_from_torque(tau, v)
    p_load_in = -f * v
    p_motor_out = -a.torque_to_force * tau * v
    assert np.allclose(p_motor_out / p_load_in, ETA_BACK, rtol=1e-6)


def _power_loss(a: BallScrewActuators, tau: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Motor power ``y x_dot`` minus the power into the linkage and the rotor, ``(F + m_r x_ddot) x_dot``."""
    return (a.torque_to_force * tau - a.force_from_torque(tau, v)) * v


def test_losses_are_positive_outside_the_stiction_zone() -> None:
    rng = np.random.default_rng(0)
    a = screws(n=200)
    tau = rng.uniform(-30, 30, 200)
    v = rng.choice([-1, 1], 200) * rng.uniform(2e-3, 0.5, 200)
    loss = _power_loss(a, tau, v)
    assert np.all(loss > 0)
    # friction alone (no torque): Coulomb plus viscous times the velocity
    assert np.allclose(_power_loss(a, np.zeros(200), v), (20.0 * np.tanh(v / 2e-3) + 50.0 * v) * v)


def test_energy_balance_of_a_driven_load() -> None:
    """A 20 kg load on a vertical ball screw under a torque profile: the motor's mechanical work
    equals the kinetic energy of load and rotor, the potential energy and the model's losses."""
    a = screws(n=1)
    m_load, g, dt = 20.0, 9.81, 1e-5
    m = m_load + a.reflected_inertia_kg[0]
    x = v = 0.0
    work = loss = 0.0
    for i in range(int(0.4 / dt)):
        t = i * dt
        tau = np.array([2.0 + 3.0 * math.sin(2 * math.pi * 4.0 * t)])  # lifts, lowers (back-driven)
        f = a.force_from_torque(tau, np.array([v]))[0]
        y = a.torque_to_force[0] * tau[0]
        work += y * v * dt
        loss += _power_loss(a, tau, np.array([v]))[0] * dt
        v += (f - m_load * g) / m * dt
        x += v * dt
    energy = 0.5 * m * v * v + m_load * g * x
    assert loss > 0
    assert work == pytest.approx(energy + loss, rel=ENERGY_RTOL, abs=ENERGY_RTOL * abs(work))


def test_inverse_is_exact_in_and_out_of_the_stiction_zone() -> None:
    rng = np.random.default_rng(1)
    a = screws(n=500)
    tau = rng.uniform(-30, 30, 500)
    v = rng.normal(0, 5e-3, 500)
    acc = rng.normal(0, 2.0, 500)
    for kw in ({}, {"switch": False}, {"friction": False}):
        f = a.force_from_torque(tau, v, acc, **kw)
        assert np.allclose(a.torque_from_force(f, v, acc, **kw), tau, rtol=INVERSE_TOL, atol=1e-12)


def test_reflected_inertia_and_torque_limit() -> None:
    a = screws(n=1)
    assert a.reflected_inertia_kg[0] == pytest.approx(3e-5 * (2 * math.pi / LEAD_M) ** 2)
    assert a.max_motor_torque_nm[0] == pytest.approx(4000.0 * LEAD_M / (2 * math.pi * ETA))
    assert a.force_from_torque(np.zeros(1), np.zeros(1), np.ones(1))[0] == pytest.approx(-a.reflected_inertia_kg[0])


def test_invalid_back_drive_efficiency_is_refused() -> None:
    with pytest.raises(InputError, match="a0"):
        BallScrewActuators(["a0"], [True], LEAD_M, 0.8, 0.9, 0.0, 0.0, 0.0, 1e-3, 100.0)


def test_kangaroo_parameters_come_from_the_parameter_file() -> None:
    """params.yaml → closure file → the model: every actuator a ball screw with eta' < eta."""
    from kangaroo_wbc.robots.kangaroo.params import load_params
    from kangaroo_wbc.robots.kangaroo.robot import load_kangaroo

    clm = load_kangaroo(floating_base=True)
    a = BallScrewActuators.from_model(clm, default_screw_lead_m=1.0, default_screw_efficiency=1.0)
    dyn = load_params().data["actuator_dynamics"]
    assert a.is_linear.all()
    assert np.all(a.back_drive_efficiency == dyn["back_drive_efficiency"])
    assert np.all(a.back_drive_efficiency < a.efficiency)
    assert np.all(a.coulomb_friction_n == dyn["coulomb_friction_n"])
    assert np.all(a.extra["encoder_counts_per_rev"] == dyn["encoder_counts_per_rev"])


def test_parameter_file_refuses_a_back_drive_efficiency_above_eta() -> None:
    from kangaroo_wbc.errors import ConfigError
    from kangaroo_wbc.robots.kangaroo.params import load_params

    with pytest.raises(ConfigError, match="actuator_dynamics.back_drive_efficiency"):
        load_params().with_overrides({"actuator_dynamics.back_drive_efficiency": 0.99})


def _force_reference(a: BallScrewActuators, tau, v, acc, switch, friction):
    """The model's equations in numpy (module docstring), the oracle of the compiled form."""
    s = np.tanh(v / a.stiction_velocity_m_s)
    y = a.torque_to_force * tau
    f = a.mean_efficiency * y - a.efficiency_switch * np.abs(y) * s if switch else a.paper_force(tau)
    if friction:
        f = f - (a.coulomb_friction_n * s + a.viscous_friction_n_s_per_m * v)
    f = f - a.reflected_inertia_kg * acc
    return np.where(a.is_linear, f, tau)


def _torque_reference(a: BallScrewActuators, force, v, acc, switch, friction):
    s = np.tanh(v / a.stiction_velocity_m_s)
    S = force + (a.coulomb_friction_n * s + a.viscous_friction_n_s_per_m * v if friction else 0.0)
    S = S + a.reflected_inertia_kg * acc
    if switch:
        tau = S / (a.mean_efficiency - a.efficiency_switch * s * np.sign(S)) / a.torque_to_force
    else:
        tau = S / a.paper_force(np.ones_like(S))
    return np.where(a.is_linear, tau, force)


@pytest.mark.parametrize("switch", [True, False])
@pytest.mark.parametrize("friction", [True, False])
def test_compiled_model_matches_its_numpy_form(switch: bool, friction: bool) -> None:
    rng = np.random.default_rng(4)
    a = BallScrewActuators(["p0", "p1", "r2", "p3"], [True, True, False, True], [0.05, 0.004, 0.01, 0.005],
                           [0.9, 0.85, 0.9, 0.95], [0.8, np.nan, 0.7, 0.6], [3e-5, 1e-5, 2e-3, 0.0],
                           [20.0, 5.0, 0.0, 0.0], [50.0, 0.0, 0.0, 10.0], [2e-3, 1e-3, 1e-3, 5e-3],
                           [4000.0, 3000.0, 50.0, 2000.0])
    for shape in [(4,), (7, 4)]:
        x = rng.normal(0.0, 5.0, shape)
        v = rng.normal(0.0, 0.02, shape) * (rng.random(shape) < 0.8)
        acc = rng.normal(0.0, 2.0, shape)
        for accel in (None, acc):
            acc_or_0 = 0.0 if accel is None else accel
            np.testing.assert_allclose(a.force_from_torque(x, v, accel, switch=switch, friction=friction),
                                       _force_reference(a, x, v, acc_or_0, switch, friction), rtol=1e-13, atol=1e-12)
            np.testing.assert_allclose(a.torque_from_force(x, v, accel, switch=switch, friction=friction),
                                       _torque_reference(a, x, v, acc_or_0, switch, friction), rtol=1e-13, atol=1e-12)
    # scalars and a single actuator broadcast as before
    one = screws(n=1)
    v = np.linspace(-0.1, 0.1, 9)
    np.testing.assert_allclose(one.force_from_torque(np.full(9, 2.0), v),
                               _force_reference(one, 2.0, v, 0.0, True, True), rtol=1e-13)

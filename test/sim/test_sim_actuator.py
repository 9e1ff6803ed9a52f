"""The simulated ball-screw drives: unit tests of :class:`ActuatorDrives` (numpy) and integration
tests on the Kangaroo simulator (its actuators' forces, friction and torque readings; ideal mode
reads the eq. (47) inverse as before)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from kangaroo_wbc.model.ball_screw import BallScrewActuators
from kangaroo_wbc.sim.actuator import ActuatorDrives

DT = 1e-3
LEAD = 0.05


def drives(bandwidth_hz: float = 500.0, **extra) -> ActuatorDrives:
    """Two screws, eta 0.9, eta' 0.8, F_c 10 N (unit data)."""
    model = BallScrewActuators(["a", "b"], [True, True], LEAD, 0.9, 0.8, 3e-5, 10.0, 50.0, 2e-3, 2000.0,
                               {"current_bandwidth_hz": bandwidth_hz, **extra})
    return ActuatorDrives(model, DT)


def test_current_loop_is_first_order_with_its_bandwidth() -> None:
    d = drives(bandwidth_hz=100.0)
    ctrl, fric = np.zeros(2), np.zeros(2)
    force, v = np.array([500.0, -500.0]), np.zeros(2)
    tau_ref = d.model.torque_from_force(force, v)
    for k in range(1, 6):
        d.command(force, v, ctrl, fric)
        assert np.allclose(d.current_nm, tau_ref * (1 - math.exp(-2 * math.pi * 100.0 * DT * k)))


def test_drive_delivers_the_commanded_force_through_the_model() -> None:
    """Infinite bandwidth, exact k_t: the MuJoCo force minus the model's losses is the command."""
    d = drives(bandwidth_hz=math.inf)
    ctrl, fric = np.zeros(2), np.zeros(2)
    force, v = np.array([800.0, 800.0]), np.array([0.05, -0.05])  # driving, back-driven
    d.command(force, v, ctrl, fric)
    m = d.model
    y = m.torque_to_force * d.motor_torque_nm
    assert np.allclose(ctrl, m.mean_efficiency * y)
    assert np.allclose(fric, m.coulomb_friction_n + m.efficiency_switch * np.abs(y))
    # the force on the linkage, as the model gives it, is the command
    assert np.allclose(m.force_from_torque(d.motor_torque_nm, v), force)
    # driving needs more motor torque than holding the same force back-driven
    assert d.motor_torque_nm[0] > d.motor_torque_nm[1] * 1.3


def test_torque_limit_clamps_the_reference() -> None:
    d = drives(bandwidth_hz=math.inf)
    ctrl, fric = np.zeros(2), np.zeros(2)
    d.command(np.array([1e5, -1e5]), np.zeros(2), ctrl, fric)
    assert np.allclose(np.abs(d.torque_reference_nm), d.model.max_motor_torque_nm)
    assert d.saturated.all()


def test_measured_torque_carries_bias_noise_and_hides_the_torque_constant_error() -> None:
    d = drives(bandwidth_hz=math.inf, torque_constant_error=0.05, current_bias_std_nm=0.1, current_noise_std_nm=0.0)
    d.boot(np.random.default_rng(4))
    assert np.all(np.abs(d.torque_constant_ratio - 1) <= 0.05) and np.any(d.torque_constant_ratio != 1)
    ctrl, fric = np.zeros(2), np.zeros(2)
    d.command(np.array([300.0, 300.0]), np.zeros(2), ctrl, fric)
    measured = d.measured_torque(np.random.default_rng(5))
    # the sensor reads the commanded current (nominal k_t) plus its offset; the motor gives k_true i
    assert np.allclose(measured, d.torque_reference_nm + d.bias_nm)
    assert np.allclose(d.motor_torque_nm, d.torque_reference_nm * d.torque_constant_ratio)


def test_encoder_quantisation() -> None:
    d = drives(encoder_counts_per_rev=1000.0)
    x = np.array([1.23456e-3, -7.7e-6])
    step = LEAD / 1000.0
    q = d.quantise(x.copy())
    assert np.allclose(q / step, np.round(q / step)) and np.all(np.abs(q - x) <= step / 2 + 1e-15)


@pytest.fixture(scope="module")
def kangaroo_sims():
    """The Kangaroo on its crane, realistic and ideal actuators (integration data)."""
    from kangaroo_wbc.robots.kangaroo.robot import standing_actuator_positions
    from kangaroo_wbc.robots.kangaroo.sim import make_kangaroo_sim

    pose = standing_actuator_positions()
    return {ideal: make_kangaroo_sim(floating_base=True, seed=0, initial_actuator_positions=pose,
                                     ideal_actuators=ideal) for ideal in (False, True)}


@pytest.mark.integration
def test_kangaroo_drives_in_mujoco(kangaroo_sims) -> None:
    """Realistic: MuJoCo's actuator force is eta_m y of the drives' torque, the joints' dry friction
    F_c + Delta |y|; the torque reading is the drives' (bias, noise), not the eq. (47) inverse."""
    sim = kangaroo_sims[False]
    assert not sim.ideal_actuators
    sim.reset(seed=0)
    sim.hold_base(True)
    force = sim.actuator_bias_forces() + 50.0
    sim.set_command(force)
    sim.step(20)
    d, m = sim.drives, sim.actuator_model
    y = m.torque_to_force * d.motor_torque_nm
    assert np.allclose(sim.data.actuator_force, m.mean_efficiency * y)
    friction = sim.model.dof_frictionloss[sim._act_dadr]
    assert np.allclose(friction, m.coulomb_friction_n + m.efficiency_switch * np.abs(y))
    r = sim.read_sensors()
    reading_err = r.motor_torque - (d.current_nm + d.bias_nm)
    assert np.max(np.abs(reading_err)) < 6 * (d.noise_std_nm.max() + sim.sensors.config.motor_torque_noise_std)
    step = d.encoder_step
    assert np.allclose(r.actuator_position / step, np.round(r.actuator_position / step))


@pytest.mark.integration
def test_ideal_actuators_read_the_eq_47_inverse(kangaroo_sims) -> None:
    from kangaroo_wbc.sim.sensors import SensorConfig

    sim = kangaroo_sims[True]
    assert sim.ideal_actuators and sim.drives is None
    sim.sensors.config = SensorConfig.noiseless()
    sim.reset(seed=0)
    sim.hold_base(True)
    force = sim.actuator_bias_forces() + 50.0
    sim.set_command(force)
    sim.step()
    r = sim.read_sensors()
    expected = force * sim.sensors.screw_lead_m / (2 * math.pi * sim.sensors.screw_efficiency)
    assert np.allclose(r.motor_torque, expected)
    assert np.allclose(sim.data.actuator_force, force)

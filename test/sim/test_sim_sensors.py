"""Unit tests of the sensor models: encoder boot offsets, eq. (47), noise statistics, IMU."""

from __future__ import annotations

import math

import numpy as np
import pytest

from kangaroo_wbc.errors import InputError
from kangaroo_wbc.sim.sensors import SensorConfig, SensorSuite
from kangaroo_wbc.sim.simulator import ClosedChainSim

N_SAMPLES = 20000
STD_RTOL = 0.05  # sample standard deviation within 5 % of the configured one
MEAN_SIGMAS = 5.0  # sample mean within 5 standard errors of the expected mean


def _suite(config: SensorConfig, absolute: list[str] | None = None) -> SensorSuite:
    return SensorSuite(["a_lin", "b_lin", "c_rev"], np.array([True, True, False]), absolute or ["b_lin"],
                       np.array([0.005, np.nan, np.nan]), np.array([0.9, 0.95, np.nan]), ["p1", "p2"], config)


def _read(s: SensorSuite, rng: np.random.Generator, force=(0.0, 0.0, 0.0)):
    return s.read(rng, 0.0, np.zeros(3), np.zeros(3), np.array(force, dtype=float), np.zeros(2),
                  np.array([1.0, 0.0, 0.0, 0.0]), np.zeros(3), np.array([0.0, 0.0, 9.81]))


def test_eq47_round_trip_and_value():
    # tau_m = F L / (2 pi eta): 1000 N through a 5 mm lead at 90 % efficiency; the second actuator
    # takes the default lead (NaN) and eta 0.95
    s = _suite(SensorConfig.noiseless())
    f = np.array([1000.0, -2500.0, 1234.5])
    tau = _read(s, np.random.default_rng(0), f).motor_torque
    lead = SensorConfig().default_screw_lead_m
    np.testing.assert_allclose(tau[:2], [1000 * 0.005 / (2 * math.pi * 0.9), -2500 * lead / (2 * math.pi * 0.95)],
                               rtol=1e-15)
    np.testing.assert_allclose(tau[:2] * 2 * math.pi * np.array([0.9, 0.95]) / [0.005, lead], f[:2], rtol=1e-14)
    # revolute actuators report their torque unchanged; NaN parameters take the defaults
    assert tau[2] == f[2]
    assert s.screw_lead_m[1] == lead


def test_relative_encoders_get_a_new_offset_each_boot():
    cfg = SensorConfig.noiseless()
    s = _suite(cfg)
    offsets = []
    for seed in range(5):
        s.boot(np.random.default_rng(seed))
        r = _read(s, np.random.default_rng(100))
        offsets.append(r.actuator_position.copy())
    offsets = np.array(offsets)
    # relative linear encoder: different offsets, all within the configured range
    assert len(set(offsets[:, 0].round(12))) == 5
    assert np.all(np.abs(offsets[:, 0]) <= cfg.encoder_offset_range_m)
    assert np.all(np.abs(offsets[:, 2]) <= cfg.encoder_offset_range_rad)
    # absolute encoder: never an offset
    np.testing.assert_array_equal(offsets[:, 1], 0.0)
    # same seed, same boot
    s.boot(np.random.default_rng(3))
    np.testing.assert_array_equal(_read(s, np.random.default_rng(0)).actuator_position, offsets[3])


def test_simulator_encoder_reads_truth_plus_boot_offset(mjcf_fixed):
    sim = ClosedChainSim(mjcf_fixed["rrpr"], seed=11, sensor_config=SensorConfig.noiseless())
    r1 = sim.read_sensors()
    off1 = r1.actuator_position - sim.actuator_positions()
    assert abs(off1[0]) > 0
    sim.step(20)
    off_later = sim.read_sensors().actuator_position - sim.actuator_positions()
    np.testing.assert_allclose(off_later, off1, atol=1e-15)  # constant during a boot
    sim.reset(seed=12)
    off2 = sim.read_sensors().actuator_position - sim.actuator_positions()
    assert abs(off2[0] - off1[0]) > 1e-6
    # passive absolute encoder reads the true joint angle
    gt = sim.ground_truth()
    assert sim.read_sensors().passive_encoder_position[0] == pytest.approx(gt.joint_position("output_joint"))


def test_simulator_motor_torque_follows_eq47(mjcf_fixed):
    sim = ClosedChainSim(mjcf_fixed["rrpr"], sensor_config=SensorConfig.noiseless())
    sim.set_command([300.0])
    sim.step()
    tau_m = sim.read_sensors().motor_torque[0]
    # rrpr_closures.yaml: screw_lead_m 0.005, screw_efficiency 0.9
    assert tau_m == pytest.approx(300.0 * 0.005 / (2 * math.pi * 0.9), rel=1e-12)


def test_noise_statistics():
    cfg = SensorConfig()
    s = _suite(cfg)
    s.boot(np.random.default_rng(1))
    rng = np.random.default_rng(2)
    reads = [_read(s, rng) for _ in range(N_SAMPLES)]
    pos = np.array([r.actuator_position for r in reads]) - s.encoder_offset
    vel = np.array([r.actuator_velocity for r in reads])
    tau = np.array([r.motor_torque for r in reads])
    gyro = np.array([r.imu.angular_velocity_imu_in_imu for r in reads])
    acc = np.array([r.imu.linear_acceleration_imu_in_imu for r in reads])
    quats = np.array([r.imu.orientation_xyzw for r in reads])
    for x, std, mean in ((pos, cfg.actuator_position_noise_std, 0.0),
                         (vel, cfg.actuator_velocity_noise_std, 0.0),
                         (tau, cfg.motor_torque_noise_std, 0.0),
                         (gyro, cfg.gyro_noise_std, s.gyro_bias),
                         (acc, cfg.accel_noise_std, s.accel_bias + [0.0, 0.0, 9.81])):
        np.testing.assert_allclose(x.std(axis=0), std, rtol=STD_RTOL)
        np.testing.assert_array_less(np.abs(x.mean(axis=0) - mean), MEAN_SIGMAS * std / math.sqrt(N_SAMPLES))
    np.testing.assert_allclose(np.linalg.norm(quats, axis=1), 1.0, atol=1e-12)
    # orientation noise: rotation angle ~ std * sqrt(3) on average (chi distribution, 3 DOF)
    angle = 2 * np.arccos(np.clip(np.abs(quats[:, 3]), 0, 1))
    assert np.sqrt(np.mean(angle**2)) == pytest.approx(cfg.imu_orientation_noise_std * math.sqrt(3), rel=STD_RTOL)


def test_bad_sensor_config_is_rejected():
    with pytest.raises(InputError):
        SensorConfig(gyro_noise_std=-1.0)
    with pytest.raises(InputError):
        SensorConfig(default_screw_efficiency=1.5)


def test_noise_channels_match_one_draw_per_noisy_channel():
    """Readings with some channels noise-free: those read the truth exactly, the others carry the
    numbers of one ``rng.normal(0, std, size)`` per noisy channel, in channel order."""
    cfg = SensorConfig(motor_torque_noise_std=0.0, gyro_noise_std=0.0)
    s = _suite(cfg)
    force = np.array([100.0, -50.0, 3.0])
    for seed in (3, 4):
        r = _read(s, np.random.default_rng(seed), force)
        ref = np.random.default_rng(seed)
        pos = ref.normal(0.0, cfg.actuator_position_noise_std, 3)
        vel = ref.normal(0.0, cfg.actuator_velocity_noise_std, 3)
        passive = ref.normal(0.0, cfg.passive_encoder_noise_std, 2)
        ref.normal(0.0, cfg.imu_orientation_noise_std, 3)
        acc = ref.normal(0.0, cfg.accel_noise_std, 3)
        np.testing.assert_array_equal(r.actuator_position, s.encoder_offset + pos)
        np.testing.assert_array_equal(r.actuator_velocity, vel)
        np.testing.assert_array_equal(r.passive_encoder_position, passive)
        np.testing.assert_array_equal(r.imu.linear_acceleration_imu_in_imu, np.array([0.0, 0.0, 9.81]) + acc)
        np.testing.assert_array_equal(r.imu.angular_velocity_imu_in_imu, np.zeros(3))
        expected_tau = force / (2.0 * math.pi / s.screw_lead_m * s.screw_efficiency)  # eq. (47) inverse
        expected_tau[2] = force[2]  # revolute: its joint torque
        np.testing.assert_array_equal(r.motor_torque, expected_tau)


def _quat_times_exp_half(q_wxyz, e):
    """Reference: ``q ⊗ exp(e / 2)`` normalised, ``x, y, z, w`` (plain Python floats)."""
    w1, x1, y1, z1 = (float(x) for x in q_wxyz)
    th = math.sqrt(sum(float(x) ** 2 for x in e))
    sn = math.sin(0.5 * th) / th
    w2, x2, y2, z2 = math.cos(0.5 * th), sn * e[0], sn * e[1], sn * e[2]
    q = (w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2, w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2,
         w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2, w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2)
    nrm = math.sqrt(sum(x * x for x in q))
    return np.array([x / nrm for x in q])


def test_readings_are_the_numpy_expressions_bit_for_bit():
    """Every channel noisy, nonzero truth: offsets, eq. (47), biases and the orientation noise as
    the plain numpy / math expressions give them, bit for bit."""
    cfg = SensorConfig(gyro_bias_std=0.01, accel_bias_std=0.05)
    s = _suite(cfg)
    s.boot(np.random.default_rng(7))
    theta, theta_dot = np.array([0.11, -0.02, 0.7]), np.array([0.3, -0.1, 2.0])
    force, passive = np.array([812.5, -43.0, 12.25]), np.array([0.4, -1.2])
    quat = np.array([0.9, 0.1, -0.3, 0.2])
    quat /= np.linalg.norm(quat)
    gyro, accel = np.array([0.5, -0.2, 0.1]), np.array([0.3, 0.1, 9.7])
    for seed in (1, 2, 3):
        r = s.read(np.random.default_rng(seed), 0.5, theta, theta_dot, force, passive, quat, gyro, accel)
        ref = np.random.default_rng(seed)
        noise = [ref.normal(0.0, std, k) for std, k in (
            (cfg.actuator_position_noise_std, 3), (cfg.actuator_velocity_noise_std, 3),
            (cfg.motor_torque_noise_std, 3), (cfg.passive_encoder_noise_std, 2), (cfg.imu_orientation_noise_std, 3),
            (cfg.gyro_noise_std, 3), (cfg.accel_noise_std, 3))]
        np.testing.assert_array_equal(r.actuator_position, theta + s.encoder_offset + noise[0])
        np.testing.assert_array_equal(r.actuator_velocity, theta_dot + noise[1])
        tau = np.where(s.actuator_is_linear, force / (2.0 * math.pi / s.screw_lead_m * s.screw_efficiency), force)
        np.testing.assert_array_equal(r.motor_torque, tau + noise[2])
        np.testing.assert_array_equal(r.passive_encoder_position, passive + noise[3])
        np.testing.assert_array_equal(r.imu.orientation_xyzw, _quat_times_exp_half(quat, noise[4]))
        np.testing.assert_array_equal(r.imu.angular_velocity_imu_in_imu, gyro + s.gyro_bias + noise[5])
        np.testing.assert_array_equal(r.imu.linear_acceleration_imu_in_imu, accel + s.accel_bias + noise[6])
    with pytest.raises(InputError, match="shapes"):
        s.read(np.random.default_rng(0), 0.0, theta[:2], theta_dot, force, passive, quat, gyro, accel)
    with pytest.raises(InputError, match="IMU"):
        s.read(np.random.default_rng(0), 0.0, theta, theta_dot, force, passive, quat[:3], gyro, accel)

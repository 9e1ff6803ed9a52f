"""Unit tests of the floating-base estimator (IMU + contact-aided leg kinematics).

Synthetic motion with the feet fixed on the ground: the base follows a chosen twist and the
actuators follow ``theta_dot_a = -J_c,m^{-1} J_c,b v_base`` (sole velocities zero), integrated on
the manifold and re-closed with closure FK. The IMU reads the exact base orientation, angular
velocity and specific force.
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

from kangaroo_wbc.errors import EstimationError, InputError, ModelError
from kangaroo_wbc.estimation.floating_base import (
    ContactDetector,
    FloatingBaseConfig,
    FloatingBaseEstimator,
)
from test.estimation.conftest import (
    DIGIT,
    DIGIT_SOLES,
    KANGAROO_SOLES,
    closed_configuration,
    model,
)

DT = 1e-3  # [s]
ROBOTS = {"digit": (DIGIT, DIGIT_SOLES, "torso"), "kangaroo": ("kangaroo", KANGAROO_SOLES, "imu")}
G = np.array([0.0, 0.0, -9.81])


def _feet_fixed_motion(clm, soles, q0, n_steps, seed=0):
    """Yields (q, v, a_world) along a base motion with both soles fixed."""
    m, data = clm.model, clm.data
    fids = [m.getFrameId(s) for s in soles]
    rng = np.random.default_rng(seed)
    amp = np.concatenate([rng.uniform(0.02, 0.05, 3), rng.uniform(0.05, 0.1, 3)])  # [m/s], [rad/s]
    w = 2 * np.pi * rng.uniform(0.5, 1.0, 6)
    q = q0.copy()
    v_w_prev = None
    out = []
    for k in range(n_steps + 1):
        t = k * DT
        v_b = amp * np.sin(w * t)  # base twist in the base frame
        pin.computeJointJacobians(m, data, q)
        pin.updateFramePlacements(m, data)
        Jc = np.vstack([pin.getFrameJacobian(m, data, f, pin.LOCAL) for f in fids])
        J_m = clm.mapping_jacobian(q)
        J_cm = Jc[:, clm.idx_v_a] + Jc[:, clm.idx_v_u] @ J_m
        theta_dot = -np.linalg.solve(J_cm, Jc[:, :6] @ v_b)
        v = np.zeros(m.nv)
        v[:6] = v_b
        v[clm.idx_v_a] = theta_dot
        v[clm.idx_v_u] = J_m @ theta_dot
        R = pin.Quaternion(q[3:7]).toRotationMatrix()
        v_w = R @ v_b[:3]
        a_w = np.zeros(3) if v_w_prev is None else (v_w - v_w_prev) / DT
        v_w_prev = v_w
        out.append((q.copy(), v.copy(), a_w))
        q_next = pin.integrate(m, q, v * DT)
        q, _ = clm.closure_fk(q_next[clm.idx_q_a], q_next)
    return out[1:]  # drop the first sample (no acceleration estimate)


def _imu(clm, imu_frame, q, v, a_world):
    """Exact IMU reading (orientation xyzw, gyro, specific force) with the IMU on the base."""
    m = clm.model
    R_b_imu = m.frames[m.getFrameId(imu_frame)].placement.rotation
    R_w_b = pin.Quaternion(q[3:7]).toRotationMatrix()
    R_w_imu = R_w_b @ R_b_imu
    quat = pin.Quaternion(R_w_imu).coeffs()  # x, y, z, w
    gyro = R_b_imu.T @ v[3:6]
    accel = R_w_imu.T @ (a_world - G)
    return quat, gyro, accel


@pytest.mark.parametrize("robot", list(ROBOTS))
def test_tracks_base_motion_with_feet_fixed(robot, mechanism_dir):
    name, soles, imu = ROBOTS[robot]
    clm = model(name, mechanism_dir, True)
    q0 = closed_configuration(clm, 0, spread=0.05, base_rpy=(0.0, 0.0, 0.2))
    traj = _feet_fixed_motion(clm, soles, q0, 400)
    est = FloatingBaseEstimator(clm, soles, imu, FloatingBaseConfig(ground_height_m=None))
    q_first, v_first, a_first = traj[0]
    quat, gyro, accel = _imu(clm, imu, q_first, v_first, a_first)
    est.reset(q_first, quat, np.array([True, True]))
    offset = q_first[:3] - est.position_in_world  # the estimator starts at x = y = 0
    worst_p = worst_v = worst_r = 0.0
    for q, v, a_w in traj:
        quat, gyro, accel = _imu(clm, imu, q, v, a_w)
        est.update(q, v, quat, gyro, accel, np.array([True, True]), DT)
        worst_p = max(worst_p, float(np.max(np.abs(est.position_in_world + offset - q[:3]))))
        R = pin.Quaternion(q[3:7]).toRotationMatrix()
        worst_v = max(worst_v, float(np.max(np.abs(est.v_base[:3] - v[:3]))))
        worst_r = max(worst_r, float(np.linalg.norm(pin.log3(R.T @ est.R_world_base))))
        np.testing.assert_allclose(est.v_base[3:], v[3:6], atol=1e-12)
    assert worst_r < 1e-9
    assert worst_v < 1e-3, worst_v  # leg odometry is exact; residual from the discrete accelerations
    assert worst_p < 1e-4, worst_p


def test_standing_with_noisy_imu_does_not_drift(mechanism_dir):
    name, soles, imu = ROBOTS["digit"]
    clm = model(name, mechanism_dir, True)
    q = closed_configuration(clm, 1, spread=0.05, base_rpy=(0.0, 0.0, 0.0))
    est = FloatingBaseEstimator(clm, soles, imu)
    rng = np.random.default_rng(0)
    v = np.zeros(clm.model.nv)
    quat, _, accel = _imu(clm, imu, q, v, np.zeros(3))
    est.reset(q, quat)
    z0 = est.position_in_world.copy()
    for _ in range(2000):  # 2 s
        est.update(q, v, quat, rng.normal(0.0, 2e-3, 3), accel + rng.normal(0.0, 0.05, 3) + 0.05,
                   np.array([True, True]), DT)
    assert np.max(np.abs(est.position_in_world - z0)) < 1e-3
    assert np.max(np.abs(est.linear_velocity_in_world)) < 5e-3
    # flat ground: the lowest sole is on it
    pin.framesForwardKinematics(clm.model, clm.data, q)
    soles_z = [clm.data.oMf[clm.model.getFrameId(s)].translation[2] - q[2] + est.position_in_world[2]
               for s in soles]
    assert abs(np.mean(soles_z)) < 1e-3


def test_flight_integrates_the_accelerometer(mechanism_dir):
    """No contact: p(t) = p0 + v0 t + a t^2 / 2 with the specific-force model a = R f + g."""
    name, soles, imu = ROBOTS["digit"]
    clm = model(name, mechanism_dir, True)
    q = closed_configuration(clm, 1, spread=0.05, base_rpy=(0.0, 0.0, 0.0))
    est = FloatingBaseEstimator(clm, soles, imu)
    v = np.zeros(clm.model.nv)
    a = np.array([0.5, -0.2, 1.0])
    quat, gyro, accel = _imu(clm, imu, q, v, a)
    est.reset(q, quat)
    p0 = est.position_in_world.copy()
    n = 500
    for _ in range(n):
        est.update(q, v, quat, gyro, accel, np.array([False, False]), DT)
    t = n * DT
    np.testing.assert_allclose(est.position_in_world, p0 + 0.5 * a * t * t, atol=1e-9)
    np.testing.assert_allclose(est.linear_velocity_in_world, a * t, atol=1e-9)


def test_contact_detector_hysteresis():
    det = ContactDetector(2, force_on_n=60.0, force_off_n=30.0, initial=False)
    seq = [(10, 70), (65, 50), (40, 25), (29, 61), (np.nan, 100)]
    expected = [(False, True), (True, True), (True, False), (False, True), (False, True)]
    for f, e in zip(seq, expected):
        before = det.state
        kept = before.copy()
        assert tuple(det.update(np.array(f, dtype=float)).tolist()) == e
        np.testing.assert_array_equal(before, kept)  # a new array each tick: one kept by a caller stays
    with pytest.raises(InputError):
        ContactDetector(2, force_on_n=10.0, force_off_n=20.0)


def test_invalid_setups_and_inputs_raise(mechanism_dir):
    name, soles, imu = ROBOTS["digit"]
    with pytest.raises(ModelError, match="floating base"):
        FloatingBaseEstimator(model(name, mechanism_dir, False), soles, imu)
    clm = model(name, mechanism_dir, True)
    with pytest.raises(ModelError, match="base link"):
        FloatingBaseEstimator(clm, soles, "foot_frame")
    est = FloatingBaseEstimator(clm, soles, imu)
    q = closed_configuration(clm, 1, spread=0.05)
    v = np.zeros(clm.model.nv)
    est.reset(q)
    with pytest.raises(EstimationError, match="quaternion"):
        est.update(q, v, np.array([0.0, 0.0, 0.0, 0.0]), np.zeros(3), None, np.array([True, True]), DT)
    with pytest.raises(EstimationError, match="angular velocity"):
        est.update(q, v, np.array([0.0, 0.0, 0.0, 1.0]), np.array([np.nan, 0, 0]), None,
                   np.array([True, True]), DT)
    for acc in (np.array([0.0, np.inf, 9.8]), np.zeros(2)):
        with pytest.raises(EstimationError, match="linear acceleration"):
            est.update(q, v, np.array([0.0, 0.0, 0.0, 1.0]), np.zeros(3), acc, np.array([True, True]), DT)
    with pytest.raises(EstimationError, match="angular velocity"):  # both bad: the gyro named
        est.update(q, v, np.array([0.0, 0.0, 0.0, 1.0]), np.zeros(4), np.array([np.nan, 0.0, 9.8]),
                   np.array([True, True]), DT)


def test_held_base_keeps_its_position_and_learns_the_gyro_bias(mechanism_dir):
    """Hanging on the crane: a zero-velocity update instead of leg odometry, so a spurious
    accelerometer reading (1 m/s^2 here) does not move the base (dead reckoning: 0.125 m in 0.5 s);
    the mean gyro reading is the bias, removed after release."""
    name, soles, imu = ROBOTS["digit"]
    clm = model(name, mechanism_dir, True)
    q = closed_configuration(clm, 1, spread=0.05, base_rpy=(0.0, 0.0, 0.0))
    est = FloatingBaseEstimator(clm, soles, imu)
    v = np.zeros(clm.model.nv)
    quat, _, accel = _imu(clm, imu, q, v, np.zeros(3))
    est.reset(q, quat, np.array([True, True]))
    p0 = est.position_in_world.copy()
    bias = np.array([2e-3, -1e-3, 1.5e-3])  # [rad/s]
    rng = np.random.default_rng(0)
    for _ in range(500):
        est.update(q, v, quat, bias + rng.normal(0.0, 2e-3, 3), accel + [1.0, 0.0, 0.0], np.array([True, True]),
                   DT, held=True)
        assert not est.contact.any()
    assert np.max(np.abs(est.position_in_world - p0)) < 1e-4
    np.testing.assert_allclose(est.gyro_bias, bias, atol=3e-4)  # 2e-3 / sqrt(500) noise
    est.update(q, v, quat, bias, accel, np.array([True, True]), DT)
    assert est.contact.all()
    assert np.max(np.abs(est.angular_velocity_base_in_base)) < 3e-4


@pytest.mark.parametrize("window_s", [0.0, 0.03])
def test_touchdown_anchor_averages_the_orientation_noise(window_s, mechanism_dir):
    """A tilted IMU sample at touchdown (5 mrad here, ~5 mm at the soles) would sit in a
    single-sample anchor, hence in the base position, for the whole stance; averaged over
    ``anchor_window_s`` it is divided by the number of samples."""
    name, soles, imu = ROBOTS["digit"]
    clm = model(name, mechanism_dir, True)
    q = closed_configuration(clm, 1, spread=0.05, base_rpy=(0.0, 0.0, 0.0))
    v = np.zeros(clm.model.nv)
    quat, gyro, accel = _imu(clm, imu, q, v, np.zeros(3))
    q_tilt = q.copy()
    q_tilt[3:7] = pin.Quaternion(pin.rpy.rpyToMatrix(0.005, 0.0, 0.0)).coeffs()
    quat_bad = _imu(clm, imu, q_tilt, v, np.zeros(3))[0]
    est = FloatingBaseEstimator(clm, soles, imu, FloatingBaseConfig(anchor_window_s=window_s))
    est.reset(q, quat, np.array([True, True]))
    p0 = est.position_in_world.copy()
    est.update(q, v, quat, gyro, accel, np.array([False, False]), DT)  # lift-off
    est.update(q, v, quat_bad, gyro, accel, np.array([True, True]), DT)  # touchdown, bad sample
    for _ in range(300):
        est.update(q, v, quat, gyro, accel, np.array([True, True]), DT)
    err = float(np.max(np.abs(est.position_in_world[:2] - p0[:2])))
    if window_s == 0.0:
        assert err > 2e-3
    else:
        assert err < 3e-4, err


def _reference_filter_step(est, x, P, q, v, quat, gyro, accel, contact, dt, anchors, anchored):
    """One tick of the filter in textbook matrix form, per world axis: ``x = [p, v]``,
    ``F = [[1, dt], [0, 1]]``, ``B = [dt²/2, dt]``, ``Q = σ_a² B B^T``, then the leg-velocity update
    (``H = [0 1]``) and the anchored-position update (``H = [1 0]``), gains ``K = P H^T / (H P H^T + r)``.
    The measurements come from pinocchio's frame Jacobians (not from the estimator)."""
    cfg, m = est.config, est.model
    data = m.createData()
    pin.computeJointJacobians(m, data, q)
    pin.updateFramePlacements(m, data)
    R_b_imu = est.R_base_imu
    R = pin.Quaternion(quat[3], *quat[:3]).normalized().toRotationMatrix() @ R_b_imu.T
    omega = R_b_imu @ gyro
    Rb, pb = data.oMi[1].rotation, data.oMi[1].translation
    F = np.array([[1.0, dt], [0.0, 1.0]])
    B = np.array([0.5 * dt * dt, dt])
    a = R @ (R_b_imu @ accel) + np.array([0.0, 0.0, -cfg.gravity_m_s2])
    X = F @ x + np.outer(B, a)  # rows p, v; one column per axis
    P = F @ P @ F.T + cfg.accel_noise_std ** 2 * np.outer(B, B)
    n = int(np.sum(contact))
    z_v, z_p = np.zeros(3), np.zeros(3)
    for i, fid in enumerate(est.sole_ids):
        if not contact[i]:
            continue
        r = Rb.T @ (data.oMf[fid].translation - pb)
        u = Rb.T @ (pin.getFrameJacobian(m, data, fid, pin.LOCAL_WORLD_ALIGNED)[:3, 6:] @ v[6:])
        z_v += R @ (-np.cross(omega, r) - u) / n
        z_p += (anchors[i] - R @ r) / sum(anchored)
    for H, z, r in ((np.array([0.0, 1.0]), z_v, cfg.leg_velocity_std ** 2 / n),
                    (np.array([1.0, 0.0]), z_p, cfg.foot_position_std ** 2 / sum(anchored))):
        K = P @ H / (H @ P @ H + r)
        X = X + np.outer(K, z - H @ X)
        P = (np.eye(2) - np.outer(K, H)) @ P
    return X, P


def test_one_tick_equals_a_matrix_form_kalman_filter(mechanism_dir):
    """Standing on both (anchored) soles with random joint velocities and IMU readings, each tick's
    state and covariance equal a textbook Kalman filter fed with pinocchio's sole kinematics."""
    name, soles, imu = ROBOTS["kangaroo"]
    clm = model(name, mechanism_dir, True)
    est = FloatingBaseEstimator(clm, soles, imu, FloatingBaseConfig(estimate_gyro_bias=False))
    q = closed_configuration(clm, 1, spread=0.05, base_rpy=(0.02, -0.03, 0.1))
    both = np.array([True, True])
    est.reset(q, _imu(clm, imu, q, np.zeros(clm.model.nv), np.zeros(3))[0], both)
    rng = np.random.default_rng(3)
    for k in range(40):
        v = rng.normal(0.0, 0.2, clm.model.nv)
        quat = pin.Quaternion(pin.rpy.rpyToMatrix(*rng.normal(0.0, 0.05, 3))).coeffs().copy()
        quat *= 1.0 + 0.01 * k  # not normalised: the estimator normalises
        gyro, accel = rng.normal(0.0, 0.1, 3), rng.normal(0.0, 0.5, 3) + [0.0, 0.0, 9.81]
        x_ref, P_ref = _reference_filter_step(est, est.x.copy(), est.P.copy(), q, v, quat, gyro, accel, both, DT,
                                              est.anchor_in_world.copy(), both)
        est.update(q, v, quat, gyro, accel, both, DT)
        np.testing.assert_allclose(est.x, x_ref, rtol=0, atol=1e-12)
        np.testing.assert_allclose(est.P, P_ref, rtol=1e-12, atol=0)
        R = pin.Quaternion(quat[3], *quat[:3]).normalized().toRotationMatrix() @ est.R_base_imu.T
        np.testing.assert_allclose(est.R_world_base, R, atol=1e-14)
        np.testing.assert_allclose(est.v_base[:3], R.T @ est.x[1], atol=1e-14)
        np.testing.assert_allclose(pin.Quaternion(est.q_base[6], *est.q_base[3:6]).toRotationMatrix(), R, atol=1e-14)


def test_malformed_inputs_are_rejected_without_changing_the_state(mechanism_dir):
    name, soles, imu = ROBOTS["digit"]
    clm = model(name, mechanism_dir, True)
    est = FloatingBaseEstimator(clm, soles, imu)
    q = closed_configuration(clm, 1, spread=0.05)
    v = np.zeros(clm.model.nv)
    quat = np.array([0.0, 0.0, 0.0, 1.0])
    est.reset(q, quat, np.array([True, True]))
    before = (est.x.copy(), est.P.copy(), est.contact.copy(), est.anchor_in_world.copy())
    bad = [dict(linear_acceleration_imu_in_imu=np.array([0.0, np.inf, 9.8])),
           dict(linear_acceleration_imu_in_imu=np.zeros(2)),
           dict(orientation_imu_xyzw=np.array([0.0, 0.0, np.nan, 1.0])),
           dict(orientation_imu_xyzw=np.array([0.0, 0.0, 1.0])),
           dict(contact=np.array([True, True, True])),
           dict(v=np.zeros(clm.model.nv + 1))]
    for override in bad:
        args = dict(q=q, v=v, orientation_imu_xyzw=quat, angular_velocity_imu_in_imu=np.zeros(3),
                    linear_acceleration_imu_in_imu=np.array([0.0, 0.0, 9.81]), contact=np.array([False, True]),
                    dt_s=DT)
        args.update(override)
        with pytest.raises(EstimationError):
            est.update(**args)
        for a, b in zip((est.x, est.P, est.contact, est.anchor_in_world), before):
            np.testing.assert_array_equal(a, b)

"""Unit tests of :class:`~kangaroo_wbc.components.state_estimation.StateEstimation` (no ROS).

The behaviour the ``state_estimator`` node's DDS fault tests exercise, on plain samples of a still
standing Kangaroo: the calibration state machine (window, failure and retry, recalibration after a
clock restart or a persistent encoder fault), stamp order, IMU freshness, and the estimate's base.
"""

from __future__ import annotations

import numpy as np
import pytest

from kangaroo_wbc.components.samples import ActuatorSample, EncoderSample, ImuSample, Level
from kangaroo_wbc.components.state_estimation import (
    CALIBRATION_ERROR_AFTER,
    StateEstimation,
    StateEstimationConfig,
)
from kangaroo_wbc.robots.kangaroo.robot import load_kangaroo, standing_configuration

DT = 1e-3
N_CAL = 20


@pytest.fixture(scope="module")
def robot():
    """Unit fixture: the floating-base Kangaroo standing, its true actuator positions and encoders."""
    clm = load_kangaroo(floating_base=True)
    q = standing_configuration(clm)
    m = clm.model
    enc = np.array([q[m.joints[m.getJointId(n)].idx_q] for n in clm.absolute_encoders])
    offsets = np.where([n in clm.absolute_actuators for n in clm.actuated_joint_names], 0.0,
                       np.linspace(-0.01, 0.01, clm.n_a))
    return clm, q, enc, offsets


class Stream:
    """A still robot sampled at 1 kHz: readings with the boot offsets, encoders and a level IMU."""

    def __init__(self, robot, component: StateEstimation) -> None:
        self.clm, self.q, self.enc, self.offsets = robot
        self.c = component
        self.t = 0.0

    def tick(self, *, stamp: float | None = None, position_delta: np.ndarray | None = None, imu: bool = True):
        t = self.t if stamp is None else stamp
        theta = self.q[self.clm.idx_q_a] + self.offsets
        if position_delta is not None:
            theta = theta + position_delta
        self.c.on_encoders(EncoderSample(self.enc.copy(), t))
        if imu:
            self.c.on_imu(ImuSample(np.array([0.0, 0.0, 0.0, 1.0]), np.zeros(3), np.array([0.0, 0.0, 9.81]), t))
        out = self.c.step(ActuatorSample(theta, np.zeros(self.clm.n_a), np.zeros(self.clm.n_a), t))
        if stamp is None:
            self.t += DT
        return out


def _component(robot, **kw) -> StateEstimation:
    return StateEstimation(robot[0], StateEstimationConfig(calibration_samples=N_CAL, **kw))


def test_calibrates_after_a_still_window_then_estimates_with_the_base(robot):
    clm, q, _, offsets = robot
    c = _component(robot)
    s = Stream(robot, c)
    outs = [s.tick() for _ in range(N_CAL - 1)]
    assert all(o is None for o in outs) and c.calibration is None
    assert c.statuses()[0].level == Level.WARN  # "calibrating (19/20 samples)"
    assert s.tick() is None and c.new_calibration is not None  # the window's last sample calibrates
    np.testing.assert_allclose(c.calibration.offsets, offsets, atol=1e-8)
    est = s.tick()
    assert est is not None and est.base_valid
    np.testing.assert_allclose(est.q[clm.idx_q_u], q[clm.idx_q_u], atol=1e-6)
    # the base of the sample's instant: soles on the ground at the standing height
    assert abs(est.q[2] - q[2]) < 2e-3 and abs(np.linalg.norm(est.q[3:7]) - 1.0) < 1e-9
    assert any(e.key == "calibrated" for e in c.drain_events())
    assert c.statuses()[0].level == Level.OK


def test_a_moving_robot_fails_the_window_and_the_next_still_one_calibrates(robot):
    c = _component(robot)
    s = Stream(robot, c)
    ramp = np.zeros(robot[0].n_a)
    for k in range(N_CAL):  # 0.05 m/s: a plausible motion, 1 mm over the window (drift limit 0.2 mm)
        ramp[0] = 5e-5 * k
        s.tick(position_delta=ramp)
    assert c.calibration is None and c.stats["calibration_failures"] == 1
    # the first failures are a warning (a robot settling on its crane), repeated ones an error
    assert any(e.level == Level.WARN and "calibration failed" in e.message for e in c.drain_events())
    assert c.statuses()[0].level == Level.WARN
    for k in range(N_CAL, N_CAL * CALIBRATION_ERROR_AFTER):  # still moving
        ramp[0] = 5e-5 * k
        s.tick(position_delta=ramp)
    assert c.calibration is None and c.stats["calibration_failures"] == CALIBRATION_ERROR_AFTER
    assert any(e.level == Level.ERROR and "calibration failed" in e.message for e in c.drain_events())
    assert c.statuses()[0].level == Level.ERROR
    for _ in range(N_CAL):
        s.tick(position_delta=ramp)
    assert c.calibration is not None


def test_out_of_order_samples_are_skipped_and_a_restarted_clock_recalibrates(robot):
    c = _component(robot, clock_restart_samples=5)
    s = Stream(robot, c)
    for _ in range(N_CAL + 5):
        s.tick()
    assert c.calibration is not None
    t_old = s.t - 0.5
    assert s.tick(stamp=t_old) is None and c.stats["out_of_order"] == 1
    assert s.tick() is not None  # the stream goes on
    for k in range(5):  # the clock went back for good: a restart
        s.tick(stamp=0.001 * k)
    assert c.stats["restarts"] == 1 and c.calibration is None
    assert any("restarted" in e.message for e in c.drain_events())
    s.t = 0.006
    for _ in range(N_CAL):
        s.tick()
    assert c.calibration is not None


def test_a_frozen_encoder_drops_the_calibration(robot):
    clm = robot[0]
    c = _component(robot)
    s = Stream(robot, c)
    for _ in range(N_CAL + 1):
        s.tick()
    assert c.calibration is not None
    # the reported velocity says the actuator moves while its reading stays bit-identical
    for _ in range(c.config.encoder_sanity.freeze_samples + 5):
        theta = s.q[clm.idx_q_a] + s.offsets
        vel = np.zeros(clm.n_a)
        vel[1] = 0.2
        s.c.on_imu(ImuSample(np.array([0.0, 0.0, 0.0, 1.0]), np.zeros(3), np.array([0.0, 0.0, 9.81]), s.t))
        c.step(ActuatorSample(theta, vel, np.zeros(clm.n_a), s.t))
        s.t += DT
    assert c.calibration is None and c.stats["encoder_faults"] == 1
    assert [st for st in c.statuses() if st.name == "encoders"][0].level == Level.ERROR


def test_stale_imu_withholds_the_base_and_non_finite_input_is_rejected(robot):
    clm = robot[0]
    c = _component(robot)
    s = Stream(robot, c)
    for _ in range(N_CAL + 2):
        s.tick()
    est = s.tick(imu=False)
    assert est is not None  # joint states go on
    s.t += 0.1  # the IMU's last sample is now 0.1 s old
    est = s.tick(imu=False)
    assert est is not None and not est.base_valid and c.stats["imu_stale"] >= 1
    bad = np.full(clm.n_a, np.nan)
    assert c.step(ActuatorSample(bad, np.zeros(clm.n_a), None, s.t)) is None
    assert c.stats["rejected"] == 1 and "non-finite" in c.last_error
    c.on_imu(ImuSample(np.array([np.nan, 0, 0, 1.0]), np.zeros(3), np.zeros(3), s.t))
    assert c.stats["rejected"] == 2


def test_sole_forces_switch_the_contacts_with_hysteresis(robot):
    c = _component(robot)
    s = Stream(robot, c)
    for _ in range(N_CAL + 2):
        s.tick()
    c.set_released(True)  # on the crane no sole counts as a contact
    c.on_sole_force(0, 400.0, s.t)
    c.on_sole_force(1, 10.0, s.t)  # below the off threshold: the right sole leaves contact
    s.tick()
    assert c.base.contact.tolist() == [True, False]
    c.on_sole_force(1, 45.0, s.t)  # between off and on: unchanged
    s.tick()
    assert c.base.contact.tolist() == [True, False]
    c.on_sole_force(1, 100.0, s.t)
    s.tick()
    assert c.base.contact.tolist() == [True, True]


def test_hanging_on_the_crane_keeps_the_base_until_released(robot):
    """Until the handshake says the robot is released, moving legs do not move the estimated base
    (zero-velocity updates: the soles carry no weight); afterwards leg odometry does."""
    clm = robot[0]

    def base_travel(released: bool) -> float:
        c = _component(robot)
        s = Stream(robot, c)
        for _ in range(N_CAL + 5):
            s.tick()
        assert c.held
        if released:
            c.set_released(True)
            assert not c.held and any(e.key == "released" for e in c.drain_events())
        start = s.tick().q[:3].copy()
        delta = np.zeros(clm.n_a)
        for k in range(100):  # one actuator at 0.05 m/s for 0.1 s: the legs move under the base
            delta[0] = 5e-5 * k
            est = s.tick(position_delta=delta)
        return float(np.linalg.norm(est.q[:3] - start))

    assert base_travel(released=False) < 1e-4
    assert base_travel(released=True) > 5e-4

"""Fault injection over real DDS into the real ``state_estimator`` executable: start-up calibration
that cannot succeed, IMU dropout, encoder jump (glitch and persistent step) and frozen encoder.

One node process serves the whole module (tests run in file order: the first one needs the node
uncalibrated). The test plays the hardware at 200 Hz with synthetic stamps: actuator readings of
Kangaroo's standing configuration plus known boot offsets, optionally moving (a 1 Hz sinusoid of
a few millimetres, velocities consistent with it), passive absolute encoders and an upright IMU
(50 Hz). Expected per fault: a WARN/ERROR status naming it, a throttled log line, the process
alive, and no wrong state published as if healthy. The table is in ``docs/safety.md``.
"""

from __future__ import annotations

import math
import threading

import numpy as np
import pytest

pytest.importorskip("rclpy", reason="rclpy is not importable (ROS 2 not sourced)")

from nav_msgs.msg import Odometry  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402

from kangaroo_wbc.ros import qos  # noqa: E402
from kangaroo_wbc.ros.conversions import (  # noqa: E402
    JointIndexMap,
    seconds_to_time_msg,
    time_msg_to_seconds,
)
from test.integration.ros_harness import ros_environment  # noqa: E402,F401 - fixture
from test.ros.messages import arrays_to_imu_msg  # noqa: E402
from test.safety.dds_faults import (  # noqa: E402
    ERROR,
    OK,
    START_TIMEOUT_S,
    WARN_OR_ERROR,
    Diagnostics,
    SyntheticStream,
    estimator_params,
    module_harness,  # noqa: F401 - fixture
)

pytestmark = [pytest.mark.ros, pytest.mark.integration, pytest.mark.slow]

DT = 0.005  # [s] actuator sample period (200 Hz keeps the test light)
SLOW_EVERY = 4  # IMU and passive encoders every 4th sample (50 Hz, fresher than max_input_age_s)
AMPLITUDE_M = 0.004  # [m] motion amplitude (peak speed 25 mm/s > calibration_max_velocity_m_s)
FREQ_HZ = 1.0
IMU_ERROR_AFTER_S = 1.5  # > the 1 s diagnostics period: the WARN stage is always reported once
CAL = "state_estimator: calibration"
ENC = "state_estimator: encoders"
IMU = "state_estimator: imu"
POSITION_TOL_M = 1e-4  # published actuator position vs truth (exact data; a glitch is 5 mm)


class Robot:
    """The hardware's role: actuator readings (truth + boot offsets + injected faults), passive
    encoders and IMU. ``truth[k]`` keeps the true actuator positions of sample k."""

    def __init__(self, harness, clm, q) -> None:
        m = clm.model
        self.harness, self.clm = harness, clm
        self.names = list(clm.actuated_joint_names)
        self.theta = q[clm.idx_q_a]
        rng = np.random.default_rng(7)
        absolute = np.array([n in clm.absolute_actuators for n in self.names])
        self.offsets = np.where(
            absolute, 0.0, rng.uniform(-0.005, 0.005, clm.n_a)
        )  # [m] boot offsets
        self.enc_names = list(clm.absolute_encoders)
        self.enc_good = np.array([q[m.joints[m.getJointId(n)].idx_q] for n in self.enc_names])
        self.act_map, self.enc_map = JointIndexMap(self.names), JointIndexMap(self.enc_names)
        self.direction = np.where(np.arange(clm.n_a) % 2, 1.0, -1.0)
        self.lock = threading.Lock()
        self.encoders = self.enc_good.copy()
        self.imu_on = True
        self.move = False  # requested; the motion starts and stops at a zero of the sinusoid
        self.t_on: float | None = None
        self.step = np.zeros(clm.n_a)  # [m] persistent reading offsets (encoder slip)
        self.freeze: dict[int, float] = {}  # actuator -> stuck reading [m]
        self.glitches: dict[int, tuple[int, float]] = {}  # sample -> (actuator, +reading [m])
        self.truth: dict[int, np.ndarray] = {}
        self.stream: SyntheticStream | None = None

    def ensure_started(self) -> None:
        if self.stream is None:
            self.stream = SyntheticStream(self._publish, DT)

    def _displacement(self, t: float) -> tuple[np.ndarray, np.ndarray]:
        if self.t_on is None:
            if not self.move:
                return np.zeros(self.clm.n_a), np.zeros(self.clm.n_a)
            self.t_on = t
        w = 2 * math.pi * FREQ_HZ
        phase = w * (t - self.t_on)
        if (
            not self.move and phase // math.pi != (phase - w * DT) // math.pi
        ):  # a zero was passed: stop
            self.t_on = None
            return np.zeros(self.clm.n_a), np.zeros(self.clm.n_a)
        a = AMPLITUDE_M * self.direction
        return a * math.sin(phase), a * w * math.cos(phase)

    def _publish(self, k: int, t: float) -> None:
        h = self.harness
        stamp = seconds_to_time_msg(t)
        with self.lock:
            d, vel = self._displacement(t)
            true = self.theta + d
            self.truth[k] = true
            reading = true + self.offsets + self.step
            for i, stuck in self.freeze.items():
                reading[i] = stuck
            if k in self.glitches:
                i, delta = self.glitches[k]
                reading[i] += delta
            encoders, imu_on = self.encoders.copy(), self.imu_on
        if k % SLOW_EVERY == 0:
            if imu_on:
                h.publish(
                    "imu/data",
                    arrays_to_imu_msg(
                        np.zeros(3),
                        [0.0, 0.0, 9.81],
                        frame_id="imu",
                        stamp=stamp,
                        quaternion_xyzw=[0, 0, 0, 1],
                    ),
                    qos.SENSOR_STATE,
                )
            h.publish(
                "passive_encoders/state",
                self.enc_map.to_joint_state(encoders, stamp=stamp),
                qos.SENSOR_STATE,
            )
        h.publish(
            "actuators/state",
            self.act_map.to_joint_state(reading, vel, stamp=stamp),
            qos.SENSOR_STATE,
        )

    def k_of(self, msg) -> int:
        """Sample index of a message stamped by the node with an actuator sample's stamp."""
        return round((time_msg_to_seconds(msg.header.stamp) - self.stream.t0_s) / DT)

    def moving(self) -> bool:
        with self.lock:
            return self.t_on is not None


@pytest.fixture(scope="module")
def estimator(module_harness):
    """The running ``state_estimator`` process, the synthetic robot and the recorders (integration)."""
    from kangaroo_wbc.robots.kangaroo.robot import load_kangaroo, standing_configuration

    h = module_harness
    clm = load_kangaroo()
    q = standing_configuration(clm)
    diag = Diagnostics(h)
    joints = h.probe.recorder("/joint_states", JointState)
    odom = h.probe.recorder("/estimation/base_odometry", Odometry)
    proc = h.start_node(
        "state_estimator",
        params=estimator_params(DT, imu_error_after_s=IMU_ERROR_AFTER_S),
    )
    for topic in ("actuators/state", "imu/data", "passive_encoders/state"):
        h.wait_for_subscribers(topic, timeout_s=START_TIMEOUT_S)
    robot = Robot(h, clm, q)
    yield {
        "h": h,
        "proc": proc,
        "robot": robot,
        "diag": diag,
        "joints": joints,
        "odom": odom,
        "clm": clm,
    }
    if robot.stream is not None:
        robot.stream.stop()
    assert proc.is_running(), proc.describe()
    assert h.stop(proc) == 0


def _messages(rec, since_k: int, robot: Robot) -> list:
    with rec.lock:
        return [m for _, m in rec.items if robot.k_of(m) >= since_k]


def _wait_joint_states_from(e, k: int, timeout_s: float = 20.0):
    """The first joint_states for a sample at or after k (the estimator publishes again)."""
    return e["h"].wait_for_message(
        "joint_states",
        JointState,
        timeout_s=timeout_s,
        include_earlier=True,
        predicate=lambda m: e["robot"].k_of(m) >= k,
    )


def _calibrations(e) -> int:
    """Number of estimation/calibration messages received so far."""
    rec = e["h"].probe.recorder("/estimation/calibration", JointState, qos.LATCHED)
    with rec.lock:
        return len(rec.items)


def _calibration_offsets(e, after: int) -> np.ndarray:
    """Offsets [m] of the first calibration published after the first ``after`` ones."""
    rec = e["h"].probe.recorder("/estimation/calibration", JointState, qos.LATCHED)
    e["h"]._poll(lambda: len(rec.items) > after, 20.0, "no new estimation/calibration", True)
    with rec.lock:
        msg = rec.items[after][1]
    return e["robot"].act_map.reorder(msg.name, msg.position)


def _ensure_still_and_calibrated(e) -> None:
    robot = e["robot"]
    robot.ensure_started()
    with robot.lock:
        robot.move, robot.freeze, robot.imu_on = False, {}, True
        robot.encoders = robot.enc_good.copy()
    e["h"]._poll(lambda: not robot.moving(), 10.0, "the synthetic robot did not stop", True)
    _wait_joint_states_from(e, robot.stream.k)


def _assert_actuators_match_truth(e, msgs) -> None:
    robot = e["robot"]
    for m in msgs:
        pos = JointIndexMap(robot.names, allow_extra=True).reorder(m.name, m.position)
        truth = robot.truth[robot.k_of(m)]
        assert np.max(np.abs(pos - truth)) < POSITION_TOL_M, (robot.k_of(m), pos - truth)


# ------------------------------------------------------------------------------ calibration


def test_calibration_that_cannot_succeed_is_an_error_and_is_retried(estimator):
    e = estimator
    h, robot, diag = e["h"], e["robot"], e["diag"]
    assert not e["joints"].items, "the node published joint_states before it was calibrated"
    n_cal = _calibrations(e)
    # 1. the robot moves during every still window
    robot.move = True
    robot.ensure_started()
    diag.mark()
    st = diag.wait(CAL, ERROR, "calibration failed", "robot moving")
    assert "retrying" in st.message
    # 2. still, but a passive encoder reads an angle the mechanism cannot reach
    bad_joint = robot.enc_names[0]
    with robot.lock:
        robot.move = False
        robot.encoders[0] = 1.0  # [rad], beyond the joint's limit
    h._poll(lambda: not robot.moving(), 10.0, "the synthetic robot did not stop", True)
    diag.mark()
    st = diag.wait(CAL, ERROR, "implausible calibration", bad_joint)
    assert not e["joints"].items, "joint_states published from a failed calibration"
    assert e["proc"].is_running()
    # 3. good data: calibrated, offsets recovered, joint_states flow
    with robot.lock:
        robot.encoders = robot.enc_good.copy()
    diag.mark()
    diag.wait(CAL, OK, "calibrated")
    np.testing.assert_allclose(_calibration_offsets(e, n_cal), robot.offsets, atol=1e-7)
    first = _wait_joint_states_from(e, 0)
    _assert_actuators_match_truth(e, [first])
    log = e["proc"].output()
    assert "calibration failed, retrying: robot moving" in log and "implausible calibration" in log


# ------------------------------------------------------------------------------ IMU


def test_imu_dropout_warns_then_errors_and_withholds_only_the_odometry(estimator):
    e = estimator
    h, robot, diag = e["h"], e["robot"], e["diag"]
    _ensure_still_and_calibrated(e)
    h.wait_for_message("estimation/base_odometry", Odometry, timeout_s=10.0)
    with robot.lock:
        robot.imu_on = False
        k_off = robot.stream.k
    diag.mark()
    warn = diag.wait(IMU, (1,), "imu/data stale")
    err = diag.wait(IMU, ERROR, "imu/data stale")
    assert float({kv.key: kv.value for kv in err.values}["age_ms"]) > 1e3 * IMU_ERROR_AFTER_S
    assert "joint_states continue" in warn.message
    # joint_states keep flowing, finite and right; odometry stopped within max_input_age_s (50 ms)
    k_err = robot.stream.k
    _wait_joint_states_from(e, k_err + 20)
    flowing = _messages(e["joints"], k_off, robot)
    assert all(np.isfinite(m.position).all() and np.isfinite(m.velocity).all() for m in flowing)
    _assert_actuators_match_truth(e, flowing)
    last_imu_k = k_off - k_off % SLOW_EVERY  # sample k_off may have been published with the IMU
    late = [robot.k_of(m) for m in _messages(e["odom"], last_imu_k + round(0.05 / DT) + 1, robot)]
    assert not late, f"odometry published without a fresh IMU sample: samples {late[:5]}"
    assert e["proc"].is_running()
    # back: fresh again, odometry resumes
    with robot.lock:
        robot.imu_on = True
        k_on = robot.stream.k
    diag.mark()
    diag.wait(IMU, OK, "fresh")
    h.wait_for_message(
        "estimation/base_odometry",
        Odometry,
        timeout_s=10.0,
        include_earlier=True,
        predicate=lambda m: robot.k_of(m) >= k_on,
    )
    assert "imu/data missing or stale" in e["proc"].output()


# ------------------------------------------------------------------------------ encoders


def test_encoder_glitch_is_skipped_and_never_published(estimator):
    e = estimator
    h, robot, diag = e["h"], e["robot"], e["diag"]
    _ensure_still_and_calibrated(e)
    robot.move = True
    h._poll(robot.moving, 10.0, "the synthetic robot did not start moving", True)
    robot.stream.wait_samples(20, h)
    i = robot.names.index("left_hip_inner_actuator")  # 0.5 m/s actuator: 5 mm in 5 ms is 1 m/s
    diag.mark()
    glitched = []
    for attempt in range(3):  # a loaded machine may drop the one sample in the node's queue: retry
        with robot.lock:
            glitched.append(robot.stream.k + 10)
            robot.glitches[glitched[-1]] = (i, 0.005)
        try:
            st = diag.wait(
                ENC,
                WARN_OR_ERROR,
                "encoder jump",
                "left_hip_inner_actuator",
                timeout_s=8.0 if attempt == 2 else 3.0,
            )
            break
        except AssertionError:
            if attempt == 2:
                raise
    assert "rejected" in st.message
    _wait_joint_states_from(e, glitched[-1] + 30)
    around = [
        m
        for m in _messages(e["joints"], glitched[0] - 20, robot)
        if robot.k_of(m) <= glitched[-1] + 30
    ]
    ks = [robot.k_of(m) for m in around]
    assert not set(glitched) & set(ks), "a glitched sample was published"
    assert any(k > glitched[-1] for k in ks), "joint_states did not continue after the glitch"
    _assert_actuators_match_truth(e, around)
    assert all(s.level[0] == 0 for s in diag.statuses(CAL)), (
        "a one-sample glitch must not cost the calibration"
    )
    assert "encoder jump on ['left_hip_inner_actuator']" in e["proc"].output()


def test_frozen_encoder_withholds_joint_states_until_recalibrated(estimator):
    e = estimator
    h, robot, diag = e["h"], e["robot"], e["diag"]
    _ensure_still_and_calibrated(e)
    robot.move = True
    h._poll(robot.moving, 10.0, "the synthetic robot did not start moving", True)
    robot.stream.wait_samples(20, h)
    i = robot.names.index("right_hip_outer_actuator")
    n_cal = _calibrations(e)
    diag.mark()
    with robot.lock:  # the position field sticks; the velocity field keeps reporting the motion
        k_freeze = robot.stream.k
        robot.freeze = {i: float(robot.truth[k_freeze - 1][i] + robot.offsets[i] + robot.step[i])}
    st = diag.wait(ENC, ERROR, "encoder frozen", "right_hip_outer_actuator")
    assert "joint_states withheld" in st.message
    k_err = robot.stream.k
    diag.mark()  # one more report while the fault persists: the node is alive and still withholding
    diag.wait(ENC, ERROR, "encoder frozen")
    diag.wait(CAL, ERROR)  # recalibrating (and failing while the robot moves)
    published = [robot.k_of(m) for m in _messages(e["joints"], k_err, robot)]
    assert not published, (
        f"joint_states published while the encoder was frozen: samples {published[:5]}"
    )
    # the reading moves again and the robot stands still: recalibrated, joint_states resume
    with robot.lock:
        robot.freeze = {}
        robot.move = False
    h._poll(lambda: not robot.moving(), 10.0, "the synthetic robot did not stop", True)
    resumed = _wait_joint_states_from(e, robot.stream.k)
    _assert_actuators_match_truth(e, [resumed])
    np.testing.assert_allclose(
        _calibration_offsets(e, n_cal), robot.offsets + robot.step, atol=1e-7
    )
    assert "encoder frozen" in e["proc"].output()


def test_persistent_encoder_step_triggers_a_recalibration_that_absorbs_it(estimator):
    e = estimator
    robot, diag = e["robot"], e["diag"]
    _ensure_still_and_calibrated(e)
    i = robot.names.index("left_hip_yaw_actuator")
    step = 0.02  # [m]: more than 3 samples x 0.75 m/s x 5 ms, so not absorbed as motion
    n_cal = _calibrations(e)
    diag.mark()
    # every sample reaches the checker: a skipped one stretches the stamp gap, and the jump bound
    # grows with it (a step that a few skipped samples make look like motion is absorbed by design)
    robot.stream.wall_period_s = 8 * DT
    try:
        with robot.lock:
            robot.step[i] += step
            k_step = robot.stream.k + 1  # sample k may be on its way without the step
        st = diag.wait(ENC, ERROR, "persistent encoder jump", "left_hip_yaw_actuator")
        assert "recalibrat" in st.message
        resumed = _wait_joint_states_from(e, k_step + 5)
    finally:
        robot.stream.wall_period_s = DT
    expected = robot.offsets + robot.step
    np.testing.assert_allclose(_calibration_offsets(e, n_cal), expected, atol=1e-7)
    _assert_actuators_match_truth(e, [resumed])
    skipped = [
        robot.k_of(m)
        for m in _messages(e["joints"], k_step, robot)
        if robot.k_of(m) < robot.k_of(resumed)
    ]
    assert not skipped, f"joint_states published from the stepped reading: samples {skipped[:5]}"
    assert "persistent encoder jump on ['left_hip_yaw_actuator']" in e["proc"].output()

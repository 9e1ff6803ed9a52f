"""Fault injection over real DDS into the real ``whole_body_controller`` executable: a configuration
near a kinematic singularity (``J_l,u`` ill-conditioned) and an infeasible QP.

One controller process serves the module; the test plays the state estimator at 200 Hz
(``joint_states`` and ``estimation/base_odometry`` of the Kangaroo, stamped with the wall clock as
the node checks the state's age). Expected per fault: an ERROR ``wbc`` status naming the cause, a
log line when the cause appears (then at most one per 5 s), the process alive, every command
finite and within ``max_force_n``, the commands of the faulty samples equal to the damping
``-d theta_dot`` of the safe mode, and control resuming once the fault is gone. The table of what
is proven is in ``docs/safety.md``.
"""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

pytest.importorskip("rclpy", reason="rclpy is not importable (ROS 2 not sourced)")

from geometry_msgs.msg import WrenchStamped  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402

from kangaroo_wbc.ros import qos  # noqa: E402
from kangaroo_wbc.ros.conversions import seconds_to_time_msg  # noqa: E402
from test.control.conftest import ankle_dead_point_configuration  # noqa: E402
from test.integration.ros_harness import ros_environment  # noqa: E402,F401 - fixture
from test.safety.conftest import max_force_n  # noqa: E402
from test.safety.dds_faults import (  # noqa: E402
    ERROR,
    OK,
    START_TIMEOUT_S,
    Diagnostics,
    SyntheticStream,
    assert_commands_safe,
    joint_state,
    module_harness,  # noqa: F401 - fixture
    set_parameters,
    still_odometry,
    values,
)

pytestmark = [pytest.mark.ros, pytest.mark.integration, pytest.mark.slow]

DT = 0.005  # [s] between state samples (200 Hz keeps the test light)
DAMPING_N_S_PER_M = 200.0
SPEED_M_S = 0.01  # [m/s] every actuator's velocity in the faulty states: damping command -2 N
NODE = "whole_body_controller"
WBC = "whole_body_controller: wbc"
MAX_LOG_LINES = 3  # per fault of a few seconds: one when the cause appears, then one per 5 s
SOLES = ("left_sole", "right_sole")
WARN = (1,)  # DiagnosticStatus.WARN


class EstimatorRole:
    """Publishes ``estimation/base_odometry`` then ``joint_states`` of configuration :attr:`q`
    (actuator velocities :attr:`speed`, others zero), stamped with the wall clock."""

    def __init__(self, harness, clm, q: np.ndarray) -> None:
        m = clm.model
        self.harness = harness
        self.names = list(clm.joint_names)
        self.idx_q = [m.joints[m.getJointId(n)].idx_q for n in self.names]
        self.actuated = np.array([n in set(clm.actuated_joint_names) for n in self.names])
        self.lock = threading.Lock()
        self.q, self.speed = q, 0.0
        self.alternate_bad = False  # every other joint_states sample carries a NaN position
        self.sole_force_n: float | None = None  # also publish contact/<sole>/wrench with this Fz
        self.stream = SyntheticStream(self._publish, DT)

    def set(self, q: np.ndarray, speed: float) -> None:
        with self.lock:
            self.q, self.speed = q, speed

    def _publish(self, k: int, _synthetic_stamp: float) -> None:
        with self.lock:
            q, speed, bad, force = self.q, self.speed, self.alternate_bad and k % 2, self.sole_force_n
        now = time.time()
        self.harness.publish("estimation/base_odometry", still_odometry(q, now), qos.SENSOR_STATE)
        velocity = np.where(self.actuated, speed, 0.0)
        position = q[self.idx_q].copy()
        if bad:
            position[0] = np.nan
        self.harness.publish(
            "joint_states",
            joint_state(self.names, now, position=position, velocity=velocity),
            qos.SENSOR_STATE,
        )
        if force is not None:
            for sole in SOLES:
                msg = WrenchStamped()
                msg.header.stamp = seconds_to_time_msg(now)
                msg.header.frame_id = sole
                msg.wrench.force.z = force
                self.harness.publish(f"contact/{sole}/wrench", msg, qos.SENSOR_STATE)


@pytest.fixture(scope="module")
def controller(module_harness):
    """The running controller, the estimator's role (standing Kangaroo) and the recorders."""
    from kangaroo_wbc.robots.kangaroo.robot import load_kangaroo, standing_configuration

    h = module_harness
    clm = load_kangaroo()
    stand = standing_configuration(clm)
    diag = Diagnostics(h)
    commands = h.probe.recorder("/actuators/command", JointState)
    proc = h.start_node(
        NODE,
        params={
            "use_measured_contacts": False,
            "max_state_age_s": 0.5,
            "damping_n_s_per_m": DAMPING_N_S_PER_M,
        },
    )
    h.wait_for_subscribers("joint_states", timeout_s=START_TIMEOUT_S)
    role = EstimatorRole(h, clm, stand)
    diag.wait(WBC, OK, "behaviour stand", timeout_s=START_TIMEOUT_S)
    yield {
        "h": h,
        "proc": proc,
        "clm": clm,
        "stand": stand,
        "diag": diag,
        "commands": commands,
        "role": role,
    }
    role.stream.stop()
    assert proc.is_running(), proc.describe()
    assert h.stop(proc) == 0


def _newest_commands(c, n: int) -> list[JointState]:
    """The ``n`` commands received after this call."""
    rec = c["commands"]
    with rec.lock:
        start = rec.total
    c["h"]._poll(
        lambda: rec.total >= start + n, 20.0, f"fewer than {n} new actuators/command", True
    )
    with rec.lock:
        return [m for _, m in rec.items[-(rec.total - start) :]][:n]


def _all_commands(c) -> list[JointState]:
    with c["commands"].lock:
        return [m for _, m in c["commands"].items]


def _assert_damping(messages: list[JointState]) -> None:
    """The safe mode's command: ``-d theta_dot`` on every actuator (well within the limits)."""
    for msg in messages:
        np.testing.assert_allclose(msg.effort, -DAMPING_N_S_PER_M * SPEED_M_S, rtol=1e-12)


def test_near_singular_configuration_is_a_safe_mode_naming_the_sub_mechanism(controller):
    """joint_states of the left ankle near the lower rods' dead point (pivot ratio of J_l,u ~2e-4 <
    min_jlu_pivot_ratio 1e-3; actuators within their strokes, so no stroke limit latches)."""
    c = controller
    near = ankle_dead_point_configuration(c["clm"], 0.005)
    c["diag"].mark()
    c["role"].set(near, SPEED_M_S)
    st = c["diag"].wait(
        WBC,
        ERROR,
        "safe mode: singular configuration: J_lu ill-conditioned",
        "22 passive joints (left_ankle_",
        "dead point",
    )
    assert int(values(st)["singular"]) > 0 and values(st)["latched"] == "false"
    _assert_damping(_newest_commands(c, 10))
    assert c["proc"].is_running()
    c["diag"].mark()
    c["role"].set(c["stand"], 0.0)
    st = c["diag"].wait(WBC, OK, "behaviour stand")
    log = c["proc"].output()
    lines = log.count("singular configuration: J_lu ill-conditioned")
    assert 1 <= lines <= MAX_LOG_LINES < int(values(st)["safe_ticks"]), (lines, values(st))
    assert "control resumed" in log
    assert_commands_safe(_all_commands(c), max_force_n())


def test_infeasible_qp_is_a_safe_mode_until_the_constraint_is_relaxed(controller):
    """min_normal_force_n = 100 N per sole corner (800 N on 8 corners, the robot weighs 353 N): the
    nearly extended legs cannot push the base up that hard within their strokes, OSQP reports the
    QP primal infeasible. Set at run time through the node's parameter service, then relaxed."""
    c = controller
    h = c["h"]
    c["role"].set(c["stand"], SPEED_M_S)
    c["diag"].mark()
    result = set_parameters(h, NODE, min_normal_force_n=100.0)
    assert result.successful, result.reason
    st = c["diag"].wait(
        WBC, ERROR, "safe mode: QP infeasible: OSQP returned status 'primal infeasible'"
    )
    assert int(values(st)["qp_failures"]) > 0
    _assert_damping(_newest_commands(c, 10))
    assert c["proc"].is_running()
    c["diag"].mark()
    result = set_parameters(h, NODE, min_normal_force_n=0.0)
    assert result.successful, result.reason
    c["role"].set(c["stand"], 0.0)
    st = c["diag"].wait(WBC, OK, "behaviour stand")
    commands = _newest_commands(c, 10)  # control again: the weight is held (leg-length forces)
    assert all(np.max(np.abs(m.effort)) > 10.0 for m in commands)
    lines = c["proc"].output().count("QP infeasible: OSQP")
    assert 1 <= lines <= MAX_LOG_LINES < int(values(st)["qp_failures"]), (lines, values(st))
    assert_commands_safe(_all_commands(c), max_force_n())


def test_a_second_command_source_is_an_error_within_a_second(controller):
    """Another node publishing actuators/command (here the test's probe, 0 N at 200 Hz) is an ERROR
    ``writers`` status naming it within 1 s of its appearance; OK again once it is gone."""
    c = controller
    h = c["h"]
    writers = f"{NODE}: writers"
    c["diag"].wait(writers, OK, "one writer")
    c["diag"].mark()
    rogue = h.probe.node.create_publisher(JointState, "/actuators/command", qos.COMMAND)
    t0 = time.monotonic()
    stop = threading.Event()

    def spam() -> None:
        zero = JointState(name=list(c["clm"].actuated_joint_names), effort=[0.0] * c["clm"].n_a)
        while not stop.is_set():
            rogue.publish(zero)
            time.sleep(0.005)

    thread = threading.Thread(target=spam, daemon=True)
    thread.start()
    try:
        st = c["diag"].wait(writers, ERROR, "more than one writer", "kangaroo_wbc_test_probe", timeout_s=5.0)
        delay = time.monotonic() - t0
        assert delay < 1.0, f"ERROR {delay:.2f} s after the second publisher appeared"
        assert "/actuators/command" in st.message
    finally:
        stop.set()
        thread.join()
        h.probe.node.destroy_publisher(rogue)
    c["diag"].mark()
    c["diag"].wait(writers, OK, "one writer", timeout_s=5.0)


def test_alternating_good_and_bad_states_cannot_flood_the_log(controller):
    """joint_states alternately good and NaN at 200 Hz for 4 s: every cause is logged when it
    appears and then at most once per 5 s, however often the causes alternate."""
    c = controller
    before = len(c["proc"].output().splitlines())
    with c["commands"].lock:
        first = c["commands"].total
    c["role"].alternate_bad = True
    try:
        time.sleep(4.0)
    finally:
        c["role"].alternate_bad = False
    c["diag"].mark()
    c["diag"].wait(WBC, OK, "behaviour stand")
    lines = c["proc"].output().splitlines()[before:]
    assert len(lines) <= 8, "\n".join(lines)
    assert any("joint_states rejected" in line for line in lines), "\n".join(lines)
    assert c["proc"].is_running()
    # every command carries the controller's name as its source tag, those of the rejected
    # (unstamped) states included
    with c["commands"].lock:
        during = [m for _, m in c["commands"].items[-(c["commands"].total - first):]]
    assert during and {m.header.frame_id for m in during} == {NODE}


def test_wrenches_that_stop_are_a_warning_and_the_plan_takes_over(controller):
    """With measured contacts on, sole wrenches that stop (a dead wrench estimator) are a WARN
    naming them; control goes on with the behaviour's planned contacts; OK once they are back."""
    c = controller
    h = c["h"]
    assert set_parameters(h, NODE, use_measured_contacts=True).successful
    try:
        c["role"].sole_force_n = 180.0
        c["diag"].mark()
        st = c["diag"].wait(WBC, OK, "measured", value="contacts")
        c["diag"].mark()
        c["role"].sole_force_n = None  # the wrench estimator died
        st = c["diag"].wait(WBC, WARN, "contact wrenches stale")
        assert values(st)["contacts"] == "planned"
        commands = _newest_commands(c, 10)  # still in control: the weight is held
        assert all(np.max(np.abs(m.effort)) > 10.0 for m in commands)
        assert "contact wrenches stale" in c["proc"].output()
        c["diag"].mark()
        c["role"].sole_force_n = 180.0
        st = c["diag"].wait(WBC, OK, "behaviour stand")
        assert values(st)["contacts"] == "measured"
    finally:
        c["role"].sole_force_n = None
        assert set_parameters(h, NODE, use_measured_contacts=False).successful


@pytest.mark.parametrize("field", ["x", "z"])
def test_a_nan_com_reference_is_a_warning_and_the_node_stays_up(controller, field):
    """A ``geometry_msgs/PointStamped`` with a NaN on ``wbc/com_reference`` (it once ended the
    process with a FATAL line): the message is skipped, the node keeps its previous reference, an
    ``inputs`` WARN and a log line name the topic and the error, the process stays up and every
    command stays finite and within ``max_force_n``, the robot's weight still held."""
    from geometry_msgs.msg import PointStamped

    c = controller
    h = c["h"]
    inputs = f"{NODE}: inputs"
    c["role"].set(c["stand"], 0.0)
    msg = PointStamped()
    msg.header.frame_id = "odom"
    msg.point.x, msg.point.y, msg.point.z = 0.0, 0.0, 0.9
    setattr(msg.point, field, float("nan"))
    c["diag"].mark()
    for _ in range(5):
        h.publish("wbc/com_reference", msg, qos.SENSOR_STATE)
        time.sleep(0.02)
    st = c["diag"].wait(inputs, WARN, "/wbc/com_reference: message rejected", "non-finite")
    assert int(values(st)["/wbc/com_reference rejected"]) >= 1
    commands = _newest_commands(c, 20)
    assert c["proc"].is_running(), c["proc"].describe()
    assert all(np.max(np.abs(m.effort)) > 10.0 for m in commands)  # still standing: weight held
    assert_commands_safe(commands, max_force_n())
    c["diag"].wait(WBC, OK, "behaviour stand")
    log = c["proc"].output()
    assert "/wbc/com_reference: message rejected" in log and "the previous input is kept" in log

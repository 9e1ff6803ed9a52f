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

from sensor_msgs.msg import JointState  # noqa: E402

from kangaroo_wbc.ros import qos  # noqa: E402
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
        self.stream = SyntheticStream(self._publish, DT)

    def set(self, q: np.ndarray, speed: float) -> None:
        with self.lock:
            self.q, self.speed = q, speed

    def _publish(self, k: int, _synthetic_stamp: float) -> None:
        with self.lock:
            q, speed = self.q, self.speed
        now = time.time()
        self.harness.publish("estimation/base_odometry", still_odometry(q, now), qos.SENSOR_STATE)
        velocity = np.where(self.actuated, speed, 0.0)
        self.harness.publish(
            "joint_states",
            joint_state(self.names, now, position=q[self.idx_q], velocity=velocity),
            qos.SENSOR_STATE,
        )


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
    """joint_states of the left ankle 0.3 mm from the lower rods' dead point (pivot ratio of J_l,u
    ~3e-4 < min_jlu_pivot_ratio 1e-3; actuators within their stroke margin, so no limit latches)."""
    c = controller
    near = ankle_dead_point_configuration(c["clm"], 0.0247)
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

"""The simulator dying and coming back, with the real ``sim``, ``state_estimator`` and
``whole_body_controller`` executables running as separate processes over real DDS.

The simulator runs in lockstep (one 1 ms step per command, every node on its simulated time), as in
``kangaroo-wbc demo --processes separate``; it is killed with SIGKILL while the loop runs, then a
new one is started with another seed (other encoder boot offsets, as a rebooted robot; its clock
starts again at 0). Expected: the controller reports its safe mode (stale state) and the estimator
stale inputs while the simulator is gone; the estimator takes the clock going back as a restart,
drops its estimates and recalibrates (the new offsets: its ``joint_states`` match the simulator's
ground truth); the controller resumes control; every command finite and within ``max_force_n``;
all processes alive, exit code 0 on SIGINT. The table is in ``docs/safety.md``.
"""

from __future__ import annotations

import signal

import numpy as np
import pytest

pytest.importorskip("rclpy", reason="rclpy is not importable (ROS 2 not sourced)")

from sensor_msgs.msg import JointState  # noqa: E402

from kangaroo_wbc.ros import qos  # noqa: E402
from kangaroo_wbc.ros.conversions import JointIndexMap, time_msg_to_seconds  # noqa: E402
from test.integration.ros_harness import ros_environment, ros_harness  # noqa: E402,F401 - fixtures
from test.safety.conftest import max_force_n  # noqa: E402
from test.safety.dds_faults import (  # noqa: E402
    ERROR,
    OK,
    START_TIMEOUT_S,
    Diagnostics,
    assert_commands_safe,
)

pytestmark = [pytest.mark.ros, pytest.mark.integration, pytest.mark.slow]

WBC = "whole_body_controller: wbc"
CAL = "state_estimator: calibration"
EST = "state_estimator: estimator"
LOOP_TIMEOUT_S = (
    60.0  # calibration over republished samples, then the first commands, loaded machine
)
POSITION_TOL_M = (
    1e-4  # estimated vs true actuator positions (noiseless sensors; boot offsets: up to 20 mm)
)


def _sim(h, seed: int):
    return h.start_node(
        "sim", params={"lockstep": True, "seed": seed, "sensor_noise": False, "tf_rate_hz": 0.0,
                     "ground_truth_decimation": 1}
    )


def _received(rec) -> int:
    with rec.lock:
        return rec.total


def _since(rec, total_before: int) -> list:
    """The messages ``rec`` received after it had received ``total_before``."""
    with rec.lock:
        n_new = rec.total - total_before
        return [m for _, m in rec.items[len(rec.items) - n_new:]] if n_new > 0 else []


def _assert_estimates_match_truth(estimates, truth, names: list[str]) -> int:
    """Actuator positions of ``joint_states`` equal the simulator's ground truth at the same stamp;
    returns the number of samples compared."""
    truth_by_stamp = {time_msg_to_seconds(m.header.stamp): m for m in truth}
    actuators = JointIndexMap(names, allow_extra=True)
    compared = 0
    for m in estimates:
        t = truth_by_stamp.get(time_msg_to_seconds(m.header.stamp))
        if t is None:
            continue
        error = actuators.reorder(m.name, m.position) - actuators.reorder(t.name, t.position)
        assert np.max(np.abs(error)) < POSITION_TOL_M, dict(zip(names, error))
        compared += 1
    return compared


def test_simulator_killed_and_restarted(ros_harness):
    from kangaroo_wbc.robots.kangaroo.robot import load_kangaroo

    h = ros_harness
    names = list(load_kangaroo().actuated_joint_names)
    diag = Diagnostics(h)
    commands = h.probe.recorder("/actuators/command", JointState)
    joints = h.probe.recorder("/joint_states", JointState)
    truth = h.probe.recorder("/sim/ground_truth/joint_states", JointState)
    calibrations = h.probe.recorder("/estimation/calibration", JointState, qos.LATCHED)
    sim = _sim(h, seed=1)
    est = h.start_node(
        "state_estimator",
        params={"use_sim_time": True, "calibration_samples": 20, "publish_tf": False},
    )
    wbc = h.start_node(
        "whole_body_controller", params={"use_sim_time": True, "use_measured_contacts": False}
    )
    # 1. the loop runs: calibrated, commands flowing, control
    diag.wait(WBC, OK, "behaviour stand", timeout_s=START_TIMEOUT_S + LOOP_TIMEOUT_S)
    # ready (in control for ready_ticks in a row): from then on a lost state is a fault (ERROR)
    diag.wait(WBC, OK, "true", value="ready", timeout_s=LOOP_TIMEOUT_S)
    n0 = _received(commands)
    h._poll(lambda: _received(commands) > n0 + 20, LOOP_TIMEOUT_S, "the loop does not run", True)
    assert _received(calibrations) == 1
    # 2. the simulator dies: safe mode (stale state) and stale inputs, both nodes alive
    sim.send_signal(signal.SIGKILL)
    assert sim.wait_exit() == -signal.SIGKILL
    diag.mark()
    diag.wait(WBC, ERROR, "safe mode: stale state (no state for")
    diag.wait(EST, ERROR, "inputs stale: no actuators/state for")
    assert est.is_running() and wbc.is_running()
    # 3. a new simulator (clock from 0, other boot offsets): restart detected, recalibration
    # from here on only the new simulator's messages count: the old one's ground truth has the
    # same stamps (both clocks start at 0) and describes another run
    joints_before, truth_before = _received(joints), _received(truth)
    diag.mark()
    new_sim = _sim(h, seed=2)
    st = diag.wait(
        CAL,
        ERROR,
        "recalibrating after a restart",
        "clock went back",
        timeout_s=START_TIMEOUT_S + LOOP_TIMEOUT_S,
    )
    assert "hardware or simulator restarted" in st.message
    diag.wait(CAL, OK, "calibrated", timeout_s=LOOP_TIMEOUT_S)
    h._poll(
        lambda: _received(calibrations) == 2,
        LOOP_TIMEOUT_S,
        "no second estimation/calibration",
        True,
    )
    with calibrations.lock:
        (_, first), (_, second) = calibrations.items[:2]
    assert np.max(np.abs(np.subtract(first.position, second.position))) > 1e-3  # new offsets found
    # 4. control resumes on the new simulator, with the new offsets
    diag.mark()
    diag.wait(WBC, OK, "behaviour stand", timeout_s=LOOP_TIMEOUT_S)
    n1 = _received(commands)
    h._poll(
        lambda: _received(commands) > n1 + 20, LOOP_TIMEOUT_S, "the loop does not run again", True
    )

    def compared() -> int:
        after, true_states = _since(joints, joints_before), _since(truth, truth_before)
        return _assert_estimates_match_truth(after, true_states, names)

    h._poll(
        lambda: compared() >= 10,
        LOOP_TIMEOUT_S,
        "fewer than 10 estimates with their ground truth",
        True,
    )
    log = est.output()
    assert "hardware or simulator restarted" in log and "recalibrated after" in log
    with commands.lock:
        sent = [m for _, m in commands.items]
    assert_commands_safe(sent, max_force_n())
    assert [h.stop(p) for p in (wbc, est, new_sim)] == [0, 0, 0]

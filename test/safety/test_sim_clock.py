"""The chain's simulated time taken from the stamps of ``actuators/state`` (``sim_clock: stamps``,
the default), with the real ``sim``, ``state_estimator`` and ``whole_body_controller``
executables as separate processes over real DDS, all with ``use_sim_time``.

The simulator runs in real time (it keeps stepping whatever the controller does). Expected: no
node of the chain subscribes to ``/clock``; the controller's clock is the simulated time (its
``/diagnostics`` stamps, next to the simulator's); when the estimator is killed, the controller's
clock keeps following the simulator (it reads ``actuators/state`` itself), so its watchdog sees
the lost state on the simulated clock and reports its safe mode, and its clock still advances.
"""

from __future__ import annotations

import signal

import pytest

pytest.importorskip("rclpy", reason="rclpy is not importable (ROS 2 not sourced)")

from rosgraph_msgs.msg import Clock  # noqa: E402

from kangaroo_wbc.ros import qos  # noqa: E402
from kangaroo_wbc.ros.conversions import time_msg_to_seconds  # noqa: E402
from test.integration.ros_harness import ros_environment, ros_harness  # noqa: E402,F401 - fixtures
from test.safety.dds_faults import ERROR, OK, START_TIMEOUT_S, Diagnostics  # noqa: E402

pytestmark = [pytest.mark.ros, pytest.mark.integration, pytest.mark.slow]

WBC = "whole_body_controller: wbc"
LOOP_TIMEOUT_S = 60.0  # calibration, then the first commands, loaded machine
#: the controller's /diagnostics stamp (1 Hz, steady timer) and the simulator's /clock are this close
#: [s]; a clock that stopped or followed the system clock is far outside
STAMP_TOLERANCE_S = 3.0


def _sim_time(clock) -> float:
    """The simulator's latest /clock [s]."""
    with clock.lock:
        return time_msg_to_seconds(clock.items[-1][1].clock)


def test_chain_takes_simulated_time_from_actuator_stamps(ros_harness):
    h = ros_harness
    diag = Diagnostics(h)
    clock = h.probe.recorder("/clock", Clock, qos.SENSOR_STATE, maxlen=10)  # the simulator's time, for comparison
    sim = h.start_node("sim", params={"lockstep": False, "sensor_noise": False, "tf_rate_hz": 0.0})
    est = h.start_node("state_estimator", params={"use_sim_time": True, "publish_tf": False})
    wbc = h.start_node("whole_body_controller", params={"use_sim_time": True, "use_measured_contacts": False})
    diag.wait(WBC, OK, "behaviour stand", timeout_s=START_TIMEOUT_S + LOOP_TIMEOUT_S)
    # no node of the chain follows /clock
    clock_readers = {i.node_name for i in h.probe.node.get_subscriptions_info_by_topic("/clock")}
    assert not clock_readers & {"state_estimator", "whole_body_controller"}, clock_readers
    # the controller's clock is the simulated time, next to the simulator's
    diag.mark()
    h._poll(lambda: len(diag.stamps("whole_body_controller")) >= 2, 10.0, "no /diagnostics from the controller", True)
    wbc_t, sim_t = diag.stamps("whole_body_controller")[-1], _sim_time(clock)
    assert 0.0 < wbc_t < 1e6 and abs(wbc_t - sim_t) < STAMP_TOLERANCE_S, (wbc_t, sim_t)
    # the estimator dies: the controller's clock keeps following the simulator; its watchdog trips
    est.send_signal(signal.SIGKILL)
    assert est.wait_exit() == -signal.SIGKILL
    diag.mark()
    diag.wait(WBC, ERROR, "safe mode: stale state (no state for", timeout_s=LOOP_TIMEOUT_S)  # the watchdog
    diag.mark()
    h._poll(lambda: len(diag.stamps("whole_body_controller")) >= 3, 15.0,
            "no /diagnostics from the controller after the estimator died", True)
    stamps = diag.stamps("whole_body_controller")
    assert all(b > a for a, b in zip(stamps, stamps[1:])), stamps  # the clock still advances
    assert abs(stamps[-1] - _sim_time(clock)) < STAMP_TOLERANCE_S, (stamps[-1], _sim_time(clock))
    assert sim.is_running() and wbc.is_running()
    codes = h.stop_all()
    assert (codes["sim"], codes["whole_body_controller"]) == (0, 0), codes

"""Integration test of the ``whole_body_controller`` node over DDS (real executable, no simulator).

The test plays the state estimator: it publishes ``estimation/base_odometry`` and ``joint_states``
of the still Kangaroo in its standing configuration (stamped with the wall clock, as the node
checks the state's age) and checks the commands, the safe mode on bad input, the behaviour service
and the clean shutdown.
"""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

pytest.importorskip("rclpy", reason="rclpy is not importable (ROS 2 not sourced)")

from diagnostic_msgs.msg import DiagnosticArray  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import Float64MultiArray  # noqa: E402
from std_srvs.srv import Trigger  # noqa: E402

from kangaroo_wbc.ros import qos  # noqa: E402
from kangaroo_wbc.ros.conversions import JointIndexMap, seconds_to_time_msg  # noqa: E402
from test.control.conftest import KANGAROO_DIR  # noqa: E402
from test.integration.ros_harness import ros_environment, ros_harness  # noqa: E402,F401 - fixtures
from test.ros.messages import arrays_to_odometry_msg  # noqa: E402

pytestmark = [pytest.mark.ros, pytest.mark.integration, pytest.mark.slow,
              pytest.mark.skipif(not (KANGAROO_DIR / "kangaroo.urdf").is_file(), reason="Kangaroo not generated")]

DT = 0.005  # [s] between synthetic samples


def _wbc_status(d: DiagnosticArray):
    return next((s for s in d.status if s.name.endswith("wbc")), None)


def test_commands_safe_mode_behaviour_service_and_shutdown(ros_harness):
    from kangaroo_wbc.robots.kangaroo.robot import load_kangaroo, standing_configuration

    clm = load_kangaroo()
    q = standing_configuration(clm)
    m = clm.model
    pos = np.array([q[m.joints[m.getJointId(n)].idx_q] for n in clm.joint_names])
    acts = JointIndexMap(clm.actuated_joint_names)
    node = ros_harness.start_node("whole_body_controller", params={"use_measured_contacts": False,
                                                                       "max_state_age_s": 0.5})
    ros_harness.wait_for_subscribers("joint_states", timeout_s=60.0)
    commands = ros_harness.probe.recorder("/actuators/command", JointState)
    timing = ros_harness.probe.recorder("/wbc/timing", Float64MultiArray)

    state = {"position": pos, "run": True}

    def stream():  # the estimator's role, at 200 Hz, until the test ends
        while state["run"]:
            position, stamp = state["position"], seconds_to_time_msg(time.time())
            ros_harness.publish("estimation/base_odometry", arrays_to_odometry_msg(
                q[:3], q[3:7], np.zeros(3), np.zeros(3), frame_id="odom", child_frame_id="base_link", stamp=stamp),
                qos.SENSOR_STATE)
            ros_harness.publish("joint_states", _raw_joint_state(clm, position, stamp), qos.SENSOR_STATE)
            time.sleep(DT)

    thread = threading.Thread(target=stream, daemon=True)
    thread.start()
    try:
        _scenario(ros_harness, clm, pos, state, commands, timing, acts)
    finally:
        state["run"] = False
        thread.join(timeout=5.0)
    assert ros_harness.stop(node) == 0


def _scenario(ros_harness, clm, pos, state, commands, timing, acts) -> None:
    last = ros_harness.wait_for_message("/actuators/command", JointState, include_earlier=True, timeout_s=20.0,
                                        predicate=lambda msg: np.max(np.abs(msg.effort)) > 1.0)  # holds the weight
    effort = acts.reorder(last.name, last.effort)
    assert np.all(np.isfinite(effort))
    # in control and ready (a state lost before the first ready is start-up: a WARN, not the ERROR below)
    ok = ros_harness.wait_for_message("/diagnostics", DiagnosticArray, timeout_s=30.0,
                                      predicate=lambda d: (s := _wbc_status(d)) is not None and s.level[0] == 0
                                      and _values(s).get("ready") == "true")
    assert "stand" in _wbc_status(ok).message
    assert [d.label for d in timing.items[-1][1].layout.dim][:3] == ["model", "build", "solve"]
    # A non-finite state: the node falls back to damping (zero velocity: zero force), never NaN.
    bad = pos.copy()
    bad[0] = np.nan
    state["position"] = bad
    ros_harness.wait_for_message("/diagnostics", DiagnosticArray, timeout_s=30.0,
                                 predicate=lambda d: (s := _wbc_status(d)) is not None and s.level[0] == 2)
    with commands.lock:
        efforts = [acts.reorder(msg.name, msg.effort) for _, msg in commands.items[-5:]]
    assert all(np.all(np.isfinite(e)) for e in efforts)
    # Behaviour service, then control resumes on good input.
    client = ros_harness.probe.node.create_client(Trigger, "/wbc/behaviour/sway")
    assert client.wait_for_service(timeout_sec=10.0)
    future = client.call_async(Trigger.Request())
    deadline = time.time() + 10.0
    while not future.done() and time.time() < deadline:
        time.sleep(0.01)
    assert future.done() and future.result().success
    state["position"] = pos
    ros_harness.wait_for_message("/diagnostics", DiagnosticArray, timeout_s=30.0,
                                 predicate=lambda d: (s := _wbc_status(d)) is not None and s.level[0] == 0
                                 and "sway" in s.message)


def _raw_joint_state(clm, position, stamp) -> JointState:
    msg = JointState()
    msg.header.stamp = stamp
    msg.name = list(clm.joint_names)
    msg.position = [float(x) for x in position]
    msg.velocity = [0.0] * len(position)
    return msg


def _values(status) -> dict[str, str]:
    return {kv.key: kv.value for kv in status.values}


def test_walk_takes_cmd_vel_publishes_footsteps_and_stops_when_it_goes_stale(ros_harness):
    """The controller walks at cmd_vel (geometry_msgs/Twist): the command reaches the walk, the plan's
    footsteps come out as markers, and a silent cmd_vel stops the walk with a WARN."""
    from geometry_msgs.msg import Twist
    from visualization_msgs.msg import MarkerArray

    from kangaroo_wbc.robots.kangaroo.robot import load_kangaroo, standing_configuration

    clm = load_kangaroo()
    q = standing_configuration(clm)
    m = clm.model
    pos = np.array([q[m.joints[m.getJointId(n)].idx_q] for n in clm.joint_names])
    node = ros_harness.start_node("whole_body_controller", params={
        "use_measured_contacts": False, "max_state_age_s": 0.5, "behaviour": "walk", "behaviour_delay_s": 0.0,
        "cmd_vel_timeout_s": 2.0})
    ros_harness.wait_for_subscribers("joint_states", timeout_s=60.0)
    footsteps = ros_harness.probe.recorder("/wbc/footsteps", MarkerArray)
    state = {"run": True, "cmd": True}

    def stream():  # the estimator's role (the robot standing still) and a teleop, as fast as they go
        while state["run"]:
            stamp = seconds_to_time_msg(time.time())
            ros_harness.publish("estimation/base_odometry", arrays_to_odometry_msg(
                q[:3], q[3:7], np.zeros(3), np.zeros(3), frame_id="odom", child_frame_id="base_link", stamp=stamp),
                qos.SENSOR_STATE)
            ros_harness.publish("joint_states", _raw_joint_state(clm, pos, stamp), qos.SENSOR_STATE)
            if state["cmd"]:
                twist = Twist()
                twist.linear.x, twist.angular.z = 0.2, 0.1
                ros_harness.publish("cmd_vel", twist)
            time.sleep(DT)

    thread = threading.Thread(target=stream, daemon=True)
    thread.start()
    try:
        walking = ros_harness.wait_for_message(
            "/diagnostics", DiagnosticArray, timeout_s=60.0,
            predicate=lambda d: (s := _wbc_status(d)) is not None and _values(s).get("cmd_vel_source") == "topic"
            and "0.1" in _values(s).get("cmd_vel", ""))
        assert "walk" in _wbc_status(walking).message
        markers = ros_harness.wait_for_message("/wbc/footsteps", MarkerArray, include_earlier=True, timeout_s=30.0)
        assert markers.markers[0].action == markers.markers[0].DELETEALL
        assert all(b.type == b.CUBE and b.header.frame_id == "odom" for b in markers.markers[1:])
        state["cmd"] = False  # the teleop stops: the walk is told to stop, with a WARN
        stale = ros_harness.wait_for_message(
            "/diagnostics", DiagnosticArray, timeout_s=30.0,
            predicate=lambda d: (s := _wbc_status(d)) is not None and _values(s).get("cmd_vel_stale") == "true")
        assert _values(_wbc_status(stale))["cmd_vel_source"] == "topic"
        assert len(footsteps.items) >= 1
    finally:
        state["run"] = False
        thread.join(timeout=5.0)
    assert ros_harness.stop(node) == 0

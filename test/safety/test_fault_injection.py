"""Fault injection over real DDS into the real node executables (``sim``, ``state_estimator``,
``whole_body_controller``).

Each test starts its node(s) once and injects a group of faults from the test probe: NaN / inf
values, wrong array lengths, unknown / missing / duplicated joint names, stale or out-of-order
stamps. Expected for every fault: a WARN/ERROR status on ``/diagnostics`` naming the fault, the
process alive and still publishing, and every ``actuators/command`` it publishes finite and within
``max_force_n`` of ``urdf/kangaroo_closures.yaml``. The table of what is proven is in
``docs/safety.md``.
"""

from __future__ import annotations

import math
import time

import numpy as np
import pytest

pytest.importorskip("rclpy", reason="rclpy is not importable (ROS 2 not sourced)")

from nav_msgs.msg import Odometry  # noqa: E402
from sensor_msgs.msg import Imu, JointState  # noqa: E402

from kangaroo_wbc.ros import qos  # noqa: E402
from kangaroo_wbc.ros.conversions import (  # noqa: E402
    seconds_to_time_msg,
)
from kangaroo_wbc.ros.diagnostics import Level  # noqa: E402
from test.integration.ros_harness import ros_environment, ros_harness  # noqa: E402,F401 - fixtures
from test.safety.conftest import max_force_n  # noqa: E402
from test.safety.dds_faults import (  # noqa: E402
    ERROR,
    OK,
    START_TIMEOUT_S,
    WARN_OR_ERROR,
    Diagnostics,
    SyntheticStream,
    assert_commands_safe,
    estimator_params,
    joint_state,
    name_faults,
    still_odometry,
    values,
)

pytestmark = [pytest.mark.ros, pytest.mark.integration, pytest.mark.slow]

DT = 0.005  # [s] period of the streams the tests play (200 Hz)

# ------------------------------------------------------------------------------------------ sim


def test_sim_rejects_or_clamps_bad_commands_and_keeps_stepping(ros_harness):
    diag = Diagnostics(ros_harness)
    states = ros_harness.probe.recorder("/actuators/state", JointState)
    sim = ros_harness.start_node(
        "sim",
        params={
            "lockstep": True,
            "sensor_noise": False,
            "tf_rate_hz": 0.0,
            "publish_ground_truth": False,
        },
    )
    first = ros_harness.wait_for_message(
        "actuators/state", JointState, timeout_s=START_TIMEOUT_S, include_earlier=True
    )
    ros_harness.wait_for_subscribers("actuators/command", timeout_s=START_TIMEOUT_S)
    names = list(first.name)
    limits = max_force_n()
    assert set(names) == set(limits)

    def command(msg):
        with states.lock:
            n0 = len(states.items)
        diag.mark()
        msg.header.frame_id = "whole_body_controller"  # the source tag the simulator applies
        ros_harness.publish("actuators/command", msg, qos.COMMAND)
        return n0

    def stepped_after(
        n0,
    ):  # lockstep: one step (and one actuators/state) per command, even rejected
        ros_harness._poll(
            lambda: len(states.items) > n0, 10.0, "no actuators/state after the command", True
        )
        with states.lock:
            last = states.items[-1][1]
        assert np.all(np.isfinite(last.position)) and np.all(np.isfinite(last.velocity))

    # over-limit but finite: clamped (WARN naming the actuators), applied within the limits
    n0 = command(joint_state(names, 0.0, effort=[1e9] * len(names)))
    diag.wait("sim: command", (int(Level.WARN),), "clamped to the force limits")
    stepped_after(n0)
    # rejected messages: ERROR naming the fault; the last valid command (then the watchdog) applies
    for label, msg_names, fields, fragment in name_faults(names, "effort", [0.0] * len(names)) + [
        ("no effort", names, {"position": [0.0] * len(names)}, "no effort")
    ]:
        n0 = command(joint_state(msg_names, 0.0, **fields))
        status = diag.wait("sim: command", ERROR, fragment)
        assert "rejected" in status.message, label
        stepped_after(n0)
    assert sim.is_running()
    assert ros_harness.stop(sim) == 0


# ------------------------------------------------------------------------------------ estimator


def test_state_estimator_skips_bad_inputs_and_keeps_publishing(ros_harness):
    from kangaroo_wbc.robots.kangaroo.robot import load_kangaroo, standing_configuration
    from kangaroo_wbc.ros.conversions import JointIndexMap
    from test.ros.messages import arrays_to_imu_msg

    clm = load_kangaroo()
    q = standing_configuration(clm)
    m = clm.model
    names = list(clm.actuated_joint_names)
    theta = q[clm.idx_q_a]
    enc = np.array([q[m.joints[m.getJointId(n)].idx_q] for n in clm.absolute_encoders])
    enc_map, act_map = JointIndexMap(clm.absolute_encoders), JointIndexMap(names)
    diag = Diagnostics(ros_harness)
    joints = ros_harness.probe.recorder("/joint_states", JointState)
    est = ros_harness.start_node(
        "state_estimator",
        params=estimator_params(DT),
    )
    for topic in ("actuators/state", "imu/data", "passive_encoders/state"):
        ros_harness.wait_for_subscribers(topic, timeout_s=START_TIMEOUT_S)

    def publish(k: int, t: float) -> None:  # the sim's role: a still robot, 200 Hz
        stamp = seconds_to_time_msg(t)
        imu = arrays_to_imu_msg(
            np.zeros(3),
            [0.0, 0.0, 9.81],
            frame_id="imu",
            stamp=stamp,
            quaternion_xyzw=[0, 0, 0, 1],
        )
        ros_harness.publish("imu/data", imu)
        ros_harness.publish("passive_encoders/state", enc_map.to_joint_state(enc, stamp=stamp))
        ros_harness.publish(
            "actuators/state",
            act_map.to_joint_state(theta, np.zeros(clm.n_a), stamp=stamp),
            qos.SENSOR_STATE,
        )

    stream = SyntheticStream(publish, DT)
    try:
        _estimator_faults(ros_harness, diag, joints, names, stream.stamp)
    finally:
        stream.stop()
    assert est.is_running()
    assert ros_harness.stop(est) == 0


def _inject(ros_harness, topic: str, msg, copies: int = 3) -> None:
    """Publish a faulty sample a few times, 2 ms apart: the node keeps only the newest sample of a
    stream (best effort, depth 1), so a single one may be overwritten by the next good sample."""
    for _ in range(copies):
        ros_harness.publish(topic, msg, qos.SENSOR_STATE)
        time.sleep(0.002)


def _estimator_faults(ros_harness, diag, joints, names, latest_stamp):
    ros_harness.wait_for_message("joint_states", JointState, timeout_s=30.0)  # calibrated
    est = "state_estimator: estimator"

    def still_publishing() -> None:
        with joints.lock:
            n0 = len(joints.items)
        ros_harness._poll(lambda: len(joints.items) > n0 + 5, 10.0, "joint_states stopped", True)
        with joints.lock:
            recent = [m for _, m in joints.items[n0:]]
        assert all(
            np.all(np.isfinite(m.position)) and np.all(np.isfinite(m.velocity)) for m in recent
        )

    zeros = [0.0] * len(names)
    for label, msg_names, fields, fragment in name_faults(
        names, "position", zeros, {"velocity": zeros}
    ):
        diag.mark()
        msg = joint_state(msg_names, latest_stamp(), **fields)
        _inject(ros_harness, "actuators/state", msg)
        st = diag.wait(est, WARN_OR_ERROR, fragment, value="last_error")
        assert "actuators/state" in values(st)["last_error"], label
        still_publishing()

    def imu(stamp_s, orientation=(0.0, 0.0, 0.0, 1.0), gyro=(0.0, 0.0, 0.0)) -> Imu:
        msg = Imu()
        msg.header.stamp = seconds_to_time_msg(stamp_s)
        msg.orientation.x, msg.orientation.y, msg.orientation.z, msg.orientation.w = orientation
        msg.angular_velocity.x, msg.angular_velocity.y, msg.angular_velocity.z = gyro
        msg.linear_acceleration.z = 9.81
        return msg

    for label, msg, fragment in [
        ("imu nan", imu(latest_stamp(), orientation=(math.nan, 0.0, 0.0, 1.0)), "imu/data"),
        ("imu inf", imu(latest_stamp(), gyro=(0.0, math.inf, 0.0)), "imu/data"),
    ]:
        diag.mark()
        _inject(ros_harness, "imu/data", msg)
        st = diag.wait(est, WARN_OR_ERROR, fragment, value="last_error")
        assert "imu/data" in values(st)["last_error"], label
        still_publishing()

    # stale / out-of-order actuators/state (0.5 s in the past): skipped, counted and reported; the
    # estimator keeps publishing
    diag.mark()
    before = int(values(diag.wait(est, (0, 1, 2)))["out_of_order"])
    diag.mark()
    t_old = max(latest_stamp() - 0.5, 0.0)
    msg = joint_state(names, t_old, position=zeros, velocity=zeros)
    _inject(ros_harness, "actuators/state", msg)
    st = diag.wait(est, WARN_OR_ERROR, "out-of-order stamp", value="last_error")
    assert int(values(st)["out_of_order"]) > before, values(st)
    still_publishing()


# ----------------------------------------------------------------------------------- controller


def test_whole_body_controller_enters_safe_mode_on_bad_inputs_with_bounded_commands(ros_harness):
    from kangaroo_wbc.robots.kangaroo.robot import load_kangaroo, standing_configuration

    clm = load_kangaroo()
    q = standing_configuration(clm)
    m = clm.model
    names = list(clm.joint_names)
    pos = [float(q[m.joints[m.getJointId(n)].idx_q]) for n in names]
    diag = Diagnostics(ros_harness)
    commands = ros_harness.probe.recorder("/actuators/command", JointState)
    node = ros_harness.start_node(
        "whole_body_controller", params={"use_measured_contacts": False, "max_state_age_s": 0.5}
    )
    ros_harness.wait_for_subscribers("joint_states", timeout_s=START_TIMEOUT_S)

    fault = {"joints": None, "odom": None, "age_s": 0.0}

    def publish(k: int, _synthetic: float) -> None:
        # the estimator's role at 200 Hz (wall-clock stamps); a fault replaces the good samples
        now = time.time()
        stamp = seconds_to_time_msg(now)
        if fault["odom"] is None:
            odom = still_odometry(q, now)
        else:
            odom = _bad_odometry(fault["odom"], stamp)
        ros_harness.publish("estimation/base_odometry", odom, qos.SENSOR_STATE)
        if fault["joints"] is not None:
            msg_names, fields = fault["joints"]
            msg = joint_state(msg_names, now, **fields)
        else:
            msg = joint_state(
                names, now - fault["age_s"], position=pos, velocity=[0.0] * len(names)
            )
        ros_harness.publish("joint_states", msg, qos.SENSOR_STATE)

    stream = SyntheticStream(publish, DT)
    wbc = "whole_body_controller: wbc"
    try:
        ros_harness.wait_for_message(
            "actuators/command", JointState, timeout_s=START_TIMEOUT_S, include_earlier=True
        )
        # ready first (ready_ticks good ticks in control): before that, a missing or rejected state
        # is waited for (WARN, a start-up without a state yet), not a fault
        diag.wait(wbc, OK, "true", value="ready")
        faults = [
            (label, (n_, f), "safe mode")
            for label, n_, f, _ in name_faults(
                names, "position", pos, {"velocity": [0.0] * len(names)}
            )
            if label != "unknown name"  # extra names are allowed (ignored) by design
        ]
        faults.append(
            (
                "unknown replaces a name",
                (
                    names[:-1] + ["no_such_joint"],
                    {"position": pos, "velocity": [0.0] * len(names)},
                ),
                "safe mode",
            )
        )
        for label, joints_fault, fragment in faults:
            diag.mark()
            fault["joints"] = joints_fault
            st = diag.wait(wbc, ERROR, fragment)
            assert "stale state" in st.message, label  # rejected input counts as infinitely old
            fault["joints"] = None
        for label, key, value in [
            ("stale stamp (5 s old)", "age_s", 5.0),
            ("odometry nan", "odom", np.array([math.nan, 0.0, 0.0])),
        ]:
            diag.mark()
            fault[key] = value
            st = diag.wait(wbc, ERROR, "stale state")
            assert "safe mode" in st.message, label
            fault[key] = 0.0 if key == "age_s" else None
        # back to good input: control resumes
        diag.mark()
        diag.wait(wbc, OK, "behaviour")
    finally:
        stream.stop()
    with commands.lock:
        sent = [msg for _, msg in commands.items]
    assert len(sent) > 50
    assert_commands_safe(sent, max_force_n())
    assert node.is_running()
    assert ros_harness.stop(node) == 0


def _bad_odometry(position, stamp) -> Odometry:
    """An Odometry message with the (non-finite) ``position`` written field by field."""
    msg = Odometry()
    msg.header.stamp = stamp
    msg.header.frame_id, msg.child_frame_id = "odom", "base_link"
    msg.pose.pose.position.x, msg.pose.pose.position.y, msg.pose.pose.position.z = (
        float(x) for x in position
    )
    msg.pose.pose.orientation.w = 1.0
    return msg

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
import threading
import time

import numpy as np
import pytest

pytest.importorskip("rclpy", reason="rclpy is not importable (ROS 2 not sourced)")

from diagnostic_msgs.msg import DiagnosticArray  # noqa: E402
from sensor_msgs.msg import Imu, JointState  # noqa: E402

from kangaroo_wbc.ros import qos  # noqa: E402
from kangaroo_wbc.ros.conversions import (  # noqa: E402
    arrays_to_odometry_msg,
    seconds_to_time_msg,
)
from kangaroo_wbc.ros.diagnostics import Level  # noqa: E402
from test.integration.ros_harness import ros_environment, ros_harness  # noqa: E402,F401 - fixtures
from test.safety.conftest import max_force_n  # noqa: E402

pytestmark = [pytest.mark.ros, pytest.mark.integration, pytest.mark.slow]

START_TIMEOUT_S = 90.0  # node start-up (model loading) on a loaded CI machine
DIAG_TIMEOUT_S = 6.0


class Diagnostics:
    """Finds, among the /diagnostics messages received after :meth:`mark`, a matching status."""

    def __init__(self, harness) -> None:
        self.harness = harness
        self.rec = harness.probe.recorder("/diagnostics", DiagnosticArray)
        self._start = 0

    def mark(self) -> None:
        with self.rec.lock:
            self._start = len(self.rec.items)

    def wait(self, name_suffix: str, levels: tuple[int, ...], fragment: str, *, in_values: bool = False,
             timeout_s: float = DIAG_TIMEOUT_S):
        found = []

        def text(s) -> str:
            return s.message + (" " + " ".join(f"{kv.key}={kv.value}" for kv in s.values) if in_values else "")

        def match() -> bool:
            with self.rec.lock:
                for _, arr in self.rec.items[self._start:]:
                    for s in arr.status:
                        if s.name.endswith(name_suffix) and s.level[0] in levels and fragment in text(s):
                            found.append(s)
                            return True
            return False

        try:
            self.harness._poll(match, timeout_s, f"no {name_suffix} status with {fragment!r}", True)
        except TimeoutError:
            with self.rec.lock:
                seen = [(s.name, s.level[0], s.message) for _, a in self.rec.items[self._start:] for s in a.status]
            raise AssertionError(f"no /diagnostics '{name_suffix}' at {levels} mentioning {fragment!r}; "
                                 f"seen: {seen[-12:]}") from None
        return found[0]


WARN_OR_ERROR = (int(Level.WARN), int(Level.ERROR))


def _joint_state(names, stamp, **fields) -> JointState:
    msg = JointState()
    msg.header.stamp = stamp
    msg.name = list(names)
    for key, values in fields.items():
        setattr(msg, key, [float(x) for x in values])
    return msg


def _name_faults(names: list[str], field: str, values: list[float], extra: dict | None = None):
    """(label, names, {field: values}) of the name / length / finiteness faults of one message."""
    n = len(names)
    extra = extra or {}

    def fields(vals):
        return {field: vals, **{k: v for k, v in extra.items()}}

    def drop_last(d):
        return {k: v[:-1] for k, v in d.items()}

    nan = list(values)
    nan[0] = math.nan
    inf = list(values)
    inf[-1] = math.inf
    return [
        ("nan", names, fields(nan), "non-finite"),
        ("inf", names, fields(inf), "non-finite"),
        ("wrong length", names, {k: v[:-1] for k, v in fields(values).items()}, f"for {n}"),
        ("unknown name", names[:-1] + ["no_such_joint"], fields(values), "no_such_joint"),
        ("missing name", names[:-1], drop_last(fields(values)), "lacks"),
        ("duplicated name", names[:-1] + [names[0]], fields(values), "duplicated"),
    ]


# ------------------------------------------------------------------------------------------ sim


def test_sim_rejects_or_clamps_bad_commands_and_keeps_stepping(ros_harness):
    diag = Diagnostics(ros_harness)
    states = ros_harness.probe.recorder("/actuators/state", JointState)
    sim = ros_harness.start_node("sim", params={"lockstep": True, "sensor_noise": False, "tf_rate_hz": 0.0,
                                                "publish_ground_truth": False})
    first = ros_harness.wait_for_message("actuators/state", JointState, timeout_s=START_TIMEOUT_S,
                                         include_earlier=True)
    ros_harness.wait_for_subscribers("actuators/command", timeout_s=START_TIMEOUT_S)
    names = list(first.name)
    limits = max_force_n()
    assert set(names) == set(limits)

    def command(msg):
        with states.lock:
            n0 = len(states.items)
        diag.mark()
        ros_harness.publish("actuators/command", msg, qos.COMMAND)
        return n0

    def stepped_after(n0):  # lockstep: one step (and one actuators/state) per command, even rejected
        ros_harness._poll(lambda: len(states.items) > n0, 10.0, "no actuators/state after the command", True)
        with states.lock:
            last = states.items[-1][1]
        assert np.all(np.isfinite(last.position)) and np.all(np.isfinite(last.velocity))

    stamp = seconds_to_time_msg(0.0)
    # over-limit but finite: clamped (WARN naming the actuators), applied within the limits
    n0 = command(_joint_state(names, stamp, effort=[1e9] * len(names)))
    diag.wait("sim: command", (int(Level.WARN),), "clamped to the force limits")
    stepped_after(n0)
    # rejected messages: ERROR naming the fault; the last valid command (then the watchdog) applies
    for label, msg_names, fields, fragment in _name_faults(names, "effort", [0.0] * len(names)) + [
            ("no effort", names, {"position": [0.0] * len(names)}, "no effort")]:
        n0 = command(_joint_state(msg_names, stamp, **fields))
        status = diag.wait("sim: command", (int(Level.ERROR),), fragment)
        assert "rejected" in status.message, label
        stepped_after(n0)
    assert sim.is_running()
    assert ros_harness.stop(sim) == 0


# ------------------------------------------------------------------------------------ estimator


def test_state_estimator_skips_bad_inputs_and_keeps_publishing(ros_harness):
    from kangaroo_wbc.robots.kangaroo.robot import load_kangaroo, standing_configuration
    from kangaroo_wbc.ros.conversions import JointIndexMap, arrays_to_imu_msg

    clm = load_kangaroo()
    q = standing_configuration(clm)
    m = clm.model
    names = list(clm.actuated_joint_names)
    theta = q[clm.idx_q_a]
    enc = np.array([q[m.joints[m.getJointId(n)].idx_q] for n in clm.absolute_encoders])
    enc_map, act_map = JointIndexMap(clm.absolute_encoders), JointIndexMap(names)
    diag = Diagnostics(ros_harness)
    joints = ros_harness.probe.recorder("/joint_states", JointState)
    dt, t0 = 0.005, 100.0
    est = ros_harness.start_node("state_estimator", params={"rate_hz": 1.0 / dt, "beta": 1.0 / dt,
                                                            "calibration_samples": 20, "publish_tf": False})
    for topic in ("actuators/state", "imu/data", "passive_encoders/state"):
        ros_harness.wait_for_subscribers(topic, timeout_s=START_TIMEOUT_S)
    clock = {"k": 0, "run": True}

    def stream():  # the sim's role: a still robot, 200 Hz
        while clock["run"]:
            stamp = seconds_to_time_msg(t0 + clock["k"] * dt)
            ros_harness.publish("imu/data", arrays_to_imu_msg(np.zeros(3), [0.0, 0.0, 9.81], frame_id="imu",
                                                              stamp=stamp, quaternion_xyzw=[0, 0, 0, 1]))
            ros_harness.publish("passive_encoders/state", enc_map.to_joint_state(enc, stamp=stamp))
            ros_harness.publish("actuators/state", act_map.to_joint_state(theta, np.zeros(clm.n_a), stamp=stamp),
                                qos.SENSOR_STATE)
            clock["k"] += 1
            time.sleep(dt)

    thread = threading.Thread(target=stream, daemon=True)
    thread.start()
    try:
        _estimator_faults(ros_harness, diag, joints, names, lambda: t0 + clock["k"] * dt)
    finally:
        clock["run"] = False
        thread.join(timeout=5.0)
    assert est.is_running()
    assert ros_harness.stop(est) == 0


def _estimator_faults(ros_harness, diag, joints, names, latest_stamp):
    ros_harness.wait_for_message("joint_states", JointState, timeout_s=30.0)  # calibrated

    def still_publishing() -> None:
        with joints.lock:
            n0 = len(joints.items)
        ros_harness._poll(lambda: len(joints.items) > n0 + 5, 10.0, "joint_states stopped", True)
        with joints.lock:
            recent = [m for _, m in joints.items[n0:]]
        assert all(np.all(np.isfinite(m.position)) and np.all(np.isfinite(m.velocity)) for m in recent)

    zeros = [0.0] * len(names)
    for label, msg_names, fields, fragment in _name_faults(names, "position", zeros, {"velocity": zeros}):
        diag.mark()
        ros_harness.publish("actuators/state", _joint_state(msg_names, seconds_to_time_msg(latest_stamp()),
                                                            **fields), qos.SENSOR_STATE)
        st = diag.wait("state_estimator: estimator", WARN_OR_ERROR, fragment, in_values=True)
        assert "actuators/state" in dict((kv.key, kv.value) for kv in st.values)["last_error"], label
        still_publishing()

    def imu(stamp_s, orientation=(0.0, 0.0, 0.0, 1.0), gyro=(0.0, 0.0, 0.0)) -> Imu:
        msg = Imu()
        msg.header.stamp = seconds_to_time_msg(stamp_s)
        msg.orientation.x, msg.orientation.y, msg.orientation.z, msg.orientation.w = orientation
        msg.angular_velocity.x, msg.angular_velocity.y, msg.angular_velocity.z = gyro
        msg.linear_acceleration.z = 9.81
        return msg

    for label, msg, fragment in [("imu nan", imu(latest_stamp(), orientation=(math.nan, 0.0, 0.0, 1.0)), "imu/data"),
                                 ("imu inf", imu(latest_stamp(), gyro=(0.0, math.inf, 0.0)), "imu/data")]:
        diag.mark()
        ros_harness.publish("imu/data", msg, qos.SENSOR_STATE)
        st = diag.wait("state_estimator: estimator", WARN_OR_ERROR, fragment, in_values=True)
        assert "imu/data" in dict((kv.key, kv.value) for kv in st.values)["last_error"], label
        still_publishing()

    # stale / out-of-order actuators/state (0.5 s in the past): the IMU no longer matches it and
    # the step dt is invalid; the sample is reported and the estimator recovers
    def counts(st) -> dict:
        v = dict((kv.key, kv.value) for kv in st.values)
        return {k: int(v[k]) for k in ("imu_stale", "bad_dt")}

    diag.mark()
    before = counts(diag.wait("state_estimator: estimator", (0, 1, 2), ""))
    diag.mark()
    t_old = max(latest_stamp() - 0.5, 0.0)
    ros_harness.publish("actuators/state", _joint_state(names, seconds_to_time_msg(t_old), position=zeros,
                                                        velocity=zeros), qos.SENSOR_STATE)
    st = diag.wait("state_estimator: estimator", WARN_OR_ERROR, "", in_values=True)
    after = counts(st)
    assert after["imu_stale"] > before["imu_stale"] and after["bad_dt"] > before["bad_dt"], (before, after)
    still_publishing()


# ----------------------------------------------------------------------------------- controller


def test_whole_body_controller_enters_safe_mode_on_bad_inputs_with_bounded_commands(ros_harness):
    from kangaroo_wbc.robots.kangaroo.robot import load_kangaroo, standing_configuration

    clm = load_kangaroo()
    q = standing_configuration(clm)
    m = clm.model
    names = list(clm.joint_names)
    pos = [float(q[m.joints[m.getJointId(n)].idx_q]) for n in names]
    limits = max_force_n()
    diag = Diagnostics(ros_harness)
    commands = ros_harness.probe.recorder("/actuators/command", JointState)
    node = ros_harness.start_node("whole_body_controller", params={"use_measured_contacts": False,
                                                                       "max_state_age_s": 0.5})
    ros_harness.wait_for_subscribers("joint_states", timeout_s=START_TIMEOUT_S)

    good = {"names": names, "position": pos, "velocity": [0.0] * len(names)}
    fault = {"joints": None, "odom": None, "age_s": 0.0}
    run = {"on": True}

    def stream():  # the estimator's role at 200 Hz; a fault replaces the good samples while set
        while run["on"]:
            now = time.time()
            stamp = seconds_to_time_msg(now)
            if fault["odom"] is None:
                odom = arrays_to_odometry_msg(q[:3], q[3:7], np.zeros(3), np.zeros(3), frame_id="odom",
                                              child_frame_id="base_link", stamp=stamp)
            else:
                odom = _bad_odometry(fault["odom"], stamp)
            ros_harness.publish("estimation/base_odometry", odom, qos.SENSOR_STATE)
            if fault["joints"] is not None:
                msg_names, fields = fault["joints"]
                msg = _joint_state(msg_names, stamp, **fields)
            else:
                msg = _joint_state(names, seconds_to_time_msg(now - fault["age_s"]), position=good["position"],
                                   velocity=good["velocity"])
            ros_harness.publish("joint_states", msg, qos.SENSOR_STATE)
            time.sleep(0.005)

    thread = threading.Thread(target=stream, daemon=True)
    thread.start()
    try:
        ros_harness.wait_for_message("actuators/command", JointState, timeout_s=START_TIMEOUT_S,
                                     include_earlier=True)
        faults = [(label, (n_, f), "safe mode") for label, n_, f, _ in
                  _name_faults(names, "position", pos, {"velocity": [0.0] * len(names)})
                  if label != "unknown name"]  # extra names are allowed (ignored) by design
        faults.append(("unknown replaces a name", (names[:-1] + ["no_such_joint"],
                                                   {"position": pos, "velocity": [0.0] * len(names)}), "safe mode"))
        for label, joints_fault, fragment in faults:
            diag.mark()
            fault["joints"] = joints_fault
            st = diag.wait("whole_body_controller: wbc", (int(Level.ERROR),), fragment)
            assert "stale state" in st.message, label  # rejected input counts as infinitely old
            fault["joints"] = None
        for label, key, value in [("stale stamp (5 s old)", "age_s", 5.0),
                                  ("odometry nan", "odom", np.array([math.nan, 0.0, 0.0]))]:
            diag.mark()
            fault[key] = value
            st = diag.wait("whole_body_controller: wbc", (int(Level.ERROR),), "stale state")
            assert "safe mode" in st.message, label
            fault[key] = 0.0 if key == "age_s" else None
        # back to good input: control resumes
        diag.mark()
        diag.wait("whole_body_controller: wbc", (int(Level.OK),), "behaviour")
    finally:
        run["on"] = False
        thread.join(timeout=5.0)
    with commands.lock:
        sent = [msg for _, msg in commands.items]
    assert len(sent) > 50
    for msg in sent:
        effort = np.asarray(msg.effort, dtype=float)
        assert np.all(np.isfinite(effort))
        bound = np.array([limits[n] for n in msg.name])
        assert np.all(np.abs(effort) <= bound + 1e-9), dict(zip(msg.name, effort))
    assert node.is_running()
    assert ros_harness.stop(node) == 0


def _bad_odometry(position, stamp):
    """An Odometry message with the (non-finite) ``position`` written field by field."""
    from nav_msgs.msg import Odometry

    msg = Odometry()
    msg.header.stamp = stamp
    msg.header.frame_id, msg.child_frame_id = "odom", "base_link"
    msg.pose.pose.position.x, msg.pose.pose.position.y, msg.pose.pose.position.z = (float(x) for x in position)
    msg.pose.pose.orientation.w = 1.0
    return msg

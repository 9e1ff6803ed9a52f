"""Fault injection over real DDS into the real ``contact_wrench_estimator`` executable.

One node process serves the module. The test plays the state estimator and the hardware at
200 Hz with synthetic stamps (Kangaroo standing, motor torques balancing its weight;
``joint_states`` and odometry at 100 Hz) and injects, on each of the node's three inputs, NaN /
inf values, wrong array lengths, unknown / missing / duplicated joint names, a zero quaternion,
an out-of-order stamp and a stream that lags by 0.5 s. Expected per fault: a WARN/ERROR status
``contact_wrench_estimator: wrench`` whose message names the topic and the fault, a throttled log
line, the process alive, every published wrench / CoP / ZMP finite, and nothing published for a
rejected actuator sample. The table is in ``docs/safety.md``.
"""

from __future__ import annotations

import math
import threading

import numpy as np
import pytest

pytest.importorskip("rclpy", reason="rclpy is not importable (ROS 2 not sourced)")

from geometry_msgs.msg import PointStamped, WrenchStamped  # noqa: E402
from nav_msgs.msg import Odometry  # noqa: E402

from kangaroo_wbc.ros import qos  # noqa: E402
from kangaroo_wbc.ros.conversions import (  # noqa: E402
    JointIndexMap,
    seconds_to_time_msg,
    time_msg_to_seconds,
    wrench_msg_to_vector,
)
from test.integration.ros_harness import ros_environment  # noqa: E402,F401 - fixture
from test.safety.dds_faults import (  # noqa: E402
    DIAG_TIMEOUT_S,
    ERROR,
    START_TIMEOUT_S,
    WARN_OR_ERROR,
    Diagnostics,
    SyntheticStream,
    joint_state,
    module_harness,  # noqa: F401 - fixture
    name_faults,
    still_odometry,
    values,
)

pytestmark = [pytest.mark.ros, pytest.mark.integration, pytest.mark.slow]

DT = 0.005  # [s] actuator sample period
WRENCH = "contact_wrench_estimator: wrench"
ACT, JOINTS, ODOM = "actuators/state", "joint_states", "estimation/base_odometry"
LAG_S = 0.5  # [s] lag of a stale stream (max_input_age_s is 0.05 s)
OUTPUT_TOPICS = ("/contact/left_sole/wrench", "/contact/right_sole/wrench")


class Inputs:
    """The upstream nodes' role: actuators/state every sample, joint_states and odometry every
    second one, each stream stamped ``t - lag[topic]``."""

    def __init__(self, harness) -> None:
        import pinocchio as pin

        from kangaroo_wbc.estimation.contact_wrench import paper_screws
        from kangaroo_wbc.model import projected_dynamics
        from kangaroo_wbc.robots.kangaroo.robot import load_kangaroo, standing_configuration

        self.h = harness
        clm = load_kangaroo()
        q = standing_configuration(clm)
        m = clm.model
        pd = projected_dynamics(clm, q, np.zeros(m.nv), ["left_sole", "right_sole"], 6, pin.LOCAL)
        f = np.linalg.lstsq(pd.J_c[:, pd.base_rows].T, pd.h[pd.base_rows], rcond=None)[0]
        tau = pd.actuated_forces(np.zeros(pd.M.shape[0]), f)
        self.q = q
        self.act_names, self.joint_names = list(clm.actuated_joint_names), list(clm.joint_names)
        self.theta = q[clm.idx_q_a]
        self.effort = tau / paper_screws(clm).paper_gain  # eq. (47) inverse
        self.positions = np.array([q[m.joints[m.getJointId(n)].idx_q] for n in self.joint_names])
        self.act_map, self.joint_map = (
            JointIndexMap(self.act_names),
            JointIndexMap(self.joint_names),
        )
        self.lock = threading.Lock()
        self.lag = {ACT: 0.0, JOINTS: 0.0, ODOM: 0.0}
        self.stream = SyntheticStream(self._publish, DT)

    def odometry(self, stamp_s: float) -> Odometry:
        return still_odometry(self.q, stamp_s)

    def actuators(self, stamp_s: float):
        return self.act_map.to_joint_state(
            self.theta, np.zeros(len(self.theta)), self.effort, stamp=seconds_to_time_msg(stamp_s)
        )

    def _publish(self, k: int, t: float) -> None:
        with self.lock:
            lag = dict(self.lag)
        if k % 2 == 0:
            self.h.publish(
                JOINTS,
                self.joint_map.to_joint_state(
                    self.positions,
                    np.zeros(len(self.positions)),
                    stamp=seconds_to_time_msg(t - lag[JOINTS]),
                ),
                qos.SENSOR_STATE,
            )
            self.h.publish(ODOM, self.odometry(t - lag[ODOM]), qos.SENSOR_STATE)
        self.h.publish(ACT, self.actuators(t - lag[ACT]), qos.SENSOR_STATE)


@pytest.fixture(scope="module")
def wrench_node(module_harness):
    """The running ``contact_wrench_estimator`` process and its synthetic inputs (integration)."""
    h = module_harness
    diag = Diagnostics(h)
    outputs = {t: h.probe.recorder(t, WrenchStamped) for t in OUTPUT_TOPICS}
    points = {t: h.probe.recorder(t, PointStamped) for t in ("/zmp", "/contact/left_sole/cop")}
    proc = h.start_node(
        "contact_wrench_estimator", params={"rate_hz": 1.0 / DT, "marker_rate_hz": 0.0}
    )
    for topic in (ACT, JOINTS, ODOM):
        h.wait_for_subscribers(topic, timeout_s=START_TIMEOUT_S)
    inputs = Inputs(h)
    h.wait_for_message(OUTPUT_TOPICS[0], WrenchStamped, timeout_s=30.0, include_earlier=True)
    e = {
        "h": h,
        "proc": proc,
        "inputs": inputs,
        "diag": diag,
        "outputs": outputs,
        "points": points,
    }
    yield e
    inputs.stream.stop()
    for rec in list(outputs.values()) + list(points.values()):  # never anything non-finite
        with rec.lock:
            msgs = [m for _, m in rec.items]
        for msg in msgs:
            vec = wrench_msg_to_vector(msg.wrench) if isinstance(msg, WrenchStamped) else None
            assert vec is None or np.all(np.isfinite(vec))
            if isinstance(msg, PointStamped):
                assert all(math.isfinite(x) for x in (msg.point.x, msg.point.y, msg.point.z))
    assert proc.is_running(), proc.describe()
    assert h.stop(proc) == 0


def _stamps(e, since: int = 0) -> list[float]:
    """Stamps [s] of the wrenches received, from the ``since``-th one on."""
    rec = e["outputs"][OUTPUT_TOPICS[0]]
    with rec.lock:
        return [time_msg_to_seconds(m.header.stamp) for _, m in rec.items[since:]]


def _output_after(e, t: float) -> None:
    """Wait for a wrench stamped after ``t`` [s]: the node publishes again."""
    e["h"].wait_for_message(
        OUTPUT_TOPICS[0],
        WrenchStamped,
        timeout_s=10.0,
        include_earlier=True,
        predicate=lambda m: time_msg_to_seconds(m.header.stamp) > t,
    )


def _inject(e, topic: str, make, *fragments: str, offset_s: float = 0.5 * DT) -> list[float]:
    """Publish one faulty message ``make(stamp)`` on ``topic``, stamped ``offset_s`` from the newest
    sample (default: between two samples, a stamp no good sample has); the status must name the
    topic and the fault in one of the ``;``-separated reasons of its message. A loaded machine may
    drop a single sample in the node's queue: up to three messages are sent. Returns their stamps."""
    stamps: list[float] = []
    for attempt in range(3):
        stamps.append(e["inputs"].stream.stamp() + offset_s)
        e["diag"].mark()
        e["h"].publish(topic, make(stamps[-1]), qos.SENSOR_STATE)
        try:
            e["diag"].wait(
                WRENCH,
                WARN_OR_ERROR,
                f"{topic}: ",
                *fragments,
                separator="; ",
                timeout_s=DIAG_TIMEOUT_S if attempt == 2 else 3.0,
            )
            return stamps
        except AssertionError:
            if attempt == 2:
                raise
    return stamps


def _assert_no_output_at(e, stamps: list[float]) -> None:
    out = _stamps(e)
    bad = [t for t in stamps if any(abs(s - t) < 1e-6 for s in out)]
    assert not bad, f"an output carries the faulty stamps {bad}"


def test_bad_actuator_samples_are_skipped_and_produce_no_output(wrench_node):
    e = wrench_node
    inp = e["inputs"]
    n = len(inp.act_names)
    extra = {"position": list(inp.theta), "velocity": [0.0] * n}
    for label, names, fields, fragment in name_faults(
        inp.act_names, "effort", list(inp.effort), extra
    ):
        stamps = _inject(
            e, ACT, lambda t, names=names, fields=fields: joint_state(names, t, **fields), fragment
        )
        _output_after(e, stamps[-1])
        _assert_no_output_at(e, stamps)
        assert e["proc"].is_running(), label
    # older than the newest sample, off the grid
    stamps = _inject(e, ACT, inp.actuators, "out-of-order", offset_s=-LAG_S + 0.5 * DT)
    _output_after(e, inp.stream.stamp())
    _assert_no_output_at(e, stamps)
    log = e["proc"].output()
    assert "actuators/state sample skipped" in log and "out-of-order stamp" in log


def test_bad_joint_states_are_skipped_and_the_output_stays_finite(wrench_node):
    e = wrench_node
    inp = e["inputs"]
    n = len(inp.joint_names)
    faults = name_faults(inp.joint_names, "position", list(inp.positions), {"velocity": [0.0] * n})
    for label, names, fields, fragment in faults:
        if (
            label == "unknown name"
        ):  # extra names are ignored by design: an unknown one replacing a joint
            fragment = "lacks"
        stamps = _inject(
            e,
            JOINTS,
            lambda t, names=names, fields=fields: joint_state(names, t, **fields),
            fragment,
        )
        _output_after(e, stamps[-1])
    _inject(
        e,
        JOINTS,
        lambda t: inp.joint_map.to_joint_state(inp.positions, stamp=seconds_to_time_msg(t)),
        "out-of-order",
        offset_s=-LAG_S,
    )
    _output_after(e, inp.stream.stamp())
    assert "joint_states sample skipped" in e["proc"].output()


def test_bad_odometry_is_skipped(wrench_node):
    e = wrench_node
    inp = e["inputs"]

    def odom(
        stamp_s, position=(0.0, 0.0, 0.9), quaternion=(0.0, 0.0, 0.0, 1.0), angular=(0.0, 0.0, 0.0)
    ):
        msg = inp.odometry(stamp_s)
        p, o, w = msg.pose.pose.position, msg.pose.pose.orientation, msg.twist.twist.angular
        p.x, p.y, p.z = (float(x) for x in position)
        o.x, o.y, o.z, o.w = (float(x) for x in quaternion)
        w.x, w.y, w.z = (float(x) for x in angular)
        return msg

    for label, kwargs, fragment in [
        ("nan position", {"position": (math.nan, 0.0, 0.9)}, "non-finite"),
        ("inf angular velocity", {"angular": (0.0, math.inf, 0.0)}, "non-finite"),
        ("zero quaternion", {"quaternion": (0.0, 0.0, 0.0, 0.0)}, "zero quaternion"),
    ]:
        stamps = _inject(e, ODOM, lambda t, kwargs=kwargs: odom(t, **kwargs), fragment)
        _output_after(e, stamps[-1])
        assert e["proc"].is_running(), label
    _inject(e, ODOM, inp.odometry, "out-of-order", offset_s=-LAG_S)
    _output_after(e, inp.stream.stamp())
    assert "estimation/base_odometry sample skipped" in e["proc"].output()


@pytest.mark.parametrize(
    "topic, fragment",
    [
        (JOINTS, "older than actuators/state"),
        (ODOM, "older than actuators/state"),
        (ACT, "newer than actuators/state"),
    ],
)
def test_lagging_stream_stops_the_output_until_it_is_fresh_again(wrench_node, topic, fragment):
    e = wrench_node
    h, inp, diag = e["h"], e["inputs"], e["diag"]
    _output_after(e, inp.stream.stamp())
    diag.mark()
    n_before = len(_stamps(e))
    with inp.lock:
        inp.lag[topic] = LAG_S
        t_lag = inp.stream.stamp()
    st = diag.wait(WRENCH, ERROR, "stale input", fragment, separator="; ")
    assert st.message.startswith("no output")
    assert int(values(st)["stale"]) >= 20  # many samples skipped ...
    stale_lines = [line for line in e["proc"].output().splitlines() if "stale input" in line]
    assert 1 <= len(stale_lines) <= 2 * 3  # ... one throttled line per input (5 s) so far
    # received since the lag began: nothing for actuator samples more than max_input_age_s after the
    # last fresh input (the newest output may still be on its way from before), nothing lagging
    late = [s for s in _stamps(e, n_before) if not t_lag - 0.3 <= s <= t_lag + 0.05 + 2 * DT]
    assert not late, f"outputs published from stale input: stamps {late[:5]}"
    with inp.lock:
        inp.lag[topic] = 0.0
        t_back = inp.stream.stamp()
    _output_after(e, t_back)
    h.check_alive()

"""Integration tests of the nodes' ros2_control side over DDS: the ``state_estimator`` with
``interface: ros2_control`` reads joint_state_broadcaster's and imu_sensor_broadcaster's topics
through the boundary, republishes the converted actuator sample, and reports bad input (a joint
missing from ``joint_states``, an IMU in another frame) by name without using it.

The test publishes synthetic broadcaster messages of a still Kangaroo in its standing
configuration (relative encoders with known boot offsets, in the broadcaster's order and names);
no simulator.
"""

from __future__ import annotations

import math
import time

import numpy as np
import pytest

pytest.importorskip("rclpy", reason="rclpy is not importable (ROS 2 not sourced)")

from diagnostic_msgs.msg import DiagnosticArray  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import Header  # noqa: E402

from kangaroo_wbc.model.hardware_map import load_hardware_map  # noqa: E402
from kangaroo_wbc.ros import qos  # noqa: E402
from kangaroo_wbc.ros.conversions import JointIndexMap, seconds_to_time_msg  # noqa: E402
from test.integration.ros_harness import ros_environment, ros_harness  # noqa: E402,F401 - fixtures
from test.nodes.test_sim_node import ROOT  # noqa: E402
from test.ros.messages import arrays_to_imu_msg  # noqa: E402

pytestmark = [pytest.mark.ros, pytest.mark.integration, pytest.mark.slow]

DT = 0.005  # [s] between synthetic samples
T0 = 50.0  # [s] first stamp
JOINT_STATES, IMU = "/joint_state_broadcaster/joint_states", "/imu_sensor_broadcaster/imu"


def _last_error(ros_harness, needle: str) -> str:
    """The state estimator's ``last_error`` once it holds ``needle`` (from /diagnostics)."""
    found: list[str] = []

    def holds(d: DiagnosticArray) -> bool:
        for s in d.status:
            if s.name == "state_estimator: estimator":
                text = {kv.key: kv.value for kv in s.values}.get("last_error", "")
                if needle in text:
                    found.append(text)
                    return True
        return False

    ros_harness.wait_for_message("/diagnostics", DiagnosticArray, timeout_s=30.0, predicate=holds)
    return found[0]


def test_state_estimator_reads_the_broadcasters_and_reports_bad_input(ros_harness):
    from kangaroo_wbc.robots.kangaroo.robot import load_kangaroo, standing_configuration

    clm = load_kangaroo(floating_base=True)
    hw = load_hardware_map(ROOT / "config" / "hardware_map.yaml", joint_space="actuator")
    q = standing_configuration(clm)
    m = clm.model
    rng = np.random.default_rng(1)
    offsets = np.where([n in clm.absolute_actuators for n in clm.actuated_joint_names], 0.0,
                       rng.uniform(-0.01, 0.01, clm.n_a))
    value = dict(zip(clm.actuated_joint_names, q[clm.idx_q_a] + offsets))
    value.update({n: q[m.joints[m.getJointId(n)].idx_q] for n in clm.absolute_encoders})
    names = hw.commanded() + [j.name for j in hw.role("encoder")]  # the broadcaster's order
    position = [float(value[hw.joint(n).model]) for n in names]
    n_act = len(hw.commanded())
    effort = [0.0] * n_act + [math.nan] * (len(names) - n_act)  # encoders: no effort interface

    def joint_states(k: int, drop: str | None = None) -> JointState:
        keep = [i for i, n in enumerate(names) if n != drop]
        return JointState(header=Header(stamp=seconds_to_time_msg(T0 + k * DT)),
                          name=[names[i] for i in keep], position=[position[i] for i in keep],
                          velocity=[0.0] * len(keep), effort=[effort[i] for i in keep])

    def imu(k: int, frame: str = "imu"):
        return arrays_to_imu_msg(np.zeros(3), [0.0, 0.0, 9.81], frame_id=frame, stamp=seconds_to_time_msg(T0 + k * DT),
                                 quaternion_xyzw=[0, 0, 0, 1])

    node = ros_harness.start_node("state_estimator", params={
        "interface": "ros2_control", "calibration_samples": 20, "rate_hz": 1.0 / DT, "beta": 1.0 / DT})
    for topic in (JOINT_STATES, IMU):
        ros_harness.wait_for_subscribers(topic, timeout_s=60.0)
    republished = ros_harness.probe.recorder("/actuators/state", JointState)  # subscribed before the stream
    ros_harness.probe.recorder("/joint_states", JointState)
    for k in range(80):
        ros_harness.publish(IMU, imu(k))
        ros_harness.publish(JOINT_STATES, joint_states(k), qos.SENSOR_STATE)
        time.sleep(DT)  # pacing of the synthetic stream, not synchronisation
    out = ros_harness.wait_for_message("/joint_states", JointState, include_earlier=True, timeout_s=30.0)
    est = JointIndexMap(clm.joint_names).reorder(out.name, out.position)
    truth = np.array([q[m.joints[m.getJointId(n)].idx_q] for n in clm.joint_names])
    assert np.max(np.abs(est - truth)) < 1e-6  # calibrated from the broadcaster's raw readings
    ros_harness.wait_for_message("/actuators/state", JointState, include_earlier=True, timeout_s=10.0)
    with republished.lock:
        sample = republished.items[-1][1]
    assert list(sample.name) == clm.actuated_joint_names  # the native contract, for the other nodes
    # a joint missing from joint_states: skipped, reported by name
    ros_harness.publish(JOINT_STATES, joint_states(80, drop="left_ankle_outer_actuator"), qos.SENSOR_STATE)
    text = _last_error(ros_harness, "missing")
    assert "joint_state_broadcaster/joint_states" in text and "left_ankle_outer_actuator" in text
    # an IMU message in another frame: refused, its frame named
    ros_harness.publish(IMU, imu(81, frame="imu_link"))
    text = _last_error(ros_harness, "imu_link")
    assert "imu_sensor_broadcaster/imu" in text and "'imu'" in text
    # NaN in a joint's position: refused whole
    bad = joint_states(82)
    bad.position[3] = math.nan
    ros_harness.publish(JOINT_STATES, bad, qos.SENSOR_STATE)
    assert names[3] in _last_error(ros_harness, "non-finite position")
    assert ros_harness.stop(node) == 0

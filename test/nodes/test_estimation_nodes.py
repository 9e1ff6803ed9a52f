"""Integration tests of the ``state_estimator`` and ``contact_wrench_estimator`` nodes over DDS.

The real node executables run in an isolated ROS environment (``test/integration/ros_harness.py``);
the test publishes synthetic hardware topics for a still Kangaroo in its standing configuration
(relative encoders with known boot offsets, passive absolute encoders, an upright IMU) and checks
what the nodes publish. No simulator.
"""

from __future__ import annotations

import math
import threading
import time

import numpy as np
import pytest

pytest.importorskip("rclpy", reason="rclpy is not importable (ROS 2 not sourced)")

import pinocchio as pin  # noqa: E402
from diagnostic_msgs.msg import DiagnosticArray  # noqa: E402
from geometry_msgs.msg import PointStamped, WrenchStamped  # noqa: E402
from nav_msgs.msg import Odometry  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402

from kangaroo_wbc.model import projected_dynamics  # noqa: E402
from kangaroo_wbc.ros import qos  # noqa: E402
from kangaroo_wbc.ros.conversions import (  # noqa: E402
    JointIndexMap,
    seconds_to_time_msg,
    wrench_msg_to_vector,
)
from test.estimation.conftest import KANGAROO_SOLES, model  # noqa: E402
from test.integration.ros_harness import ros_environment, ros_harness  # noqa: E402,F401 - fixtures
from test.ros.messages import arrays_to_imu_msg, arrays_to_odometry_msg  # noqa: E402

pytestmark = [pytest.mark.ros, pytest.mark.integration, pytest.mark.slow]

DT = 0.005  # [s] between synthetic samples (200 Hz keeps the test light)
T0 = 100.0  # [s] first stamp


@pytest.fixture(scope="module")
def standing(tmp_path_factory):
    """Kangaroo standing configuration, its actuator forces balancing a chosen ground wrench."""
    from kangaroo_wbc.robots.kangaroo.robot import standing_configuration

    clm = model("kangaroo", tmp_path_factory.mktemp("unused"), True)
    q = standing_configuration(clm)
    pd = projected_dynamics(clm, q, np.zeros(clm.model.nv), KANGAROO_SOLES, 6, pin.LOCAL)
    f = np.linalg.lstsq(pd.J_c[:, pd.base_rows].T, pd.h[pd.base_rows], rcond=None)[0]
    tau = pd.actuated_forces(np.zeros(pd.M.shape[0]), f)
    return clm, q, f, tau


def _stamp(k: int):
    return seconds_to_time_msg(T0 + k * DT)


def _actuators(clm, theta, effort, k):
    return JointIndexMap(clm.actuated_joint_names).to_joint_state(theta, np.zeros(clm.n_a), effort, stamp=_stamp(k))


def test_state_estimator_calibrates_and_publishes(ros_harness, standing):
    clm, q, _, _ = standing
    rng = np.random.default_rng(0)
    offsets = np.where([n in clm.absolute_actuators for n in clm.actuated_joint_names], 0.0,
                       rng.uniform(-0.01, 0.01, clm.n_a))
    theta_read = q[clm.idx_q_a] + offsets
    m = clm.model
    enc = np.array([q[m.joints[m.getJointId(n)].idx_q] for n in clm.absolute_encoders])
    enc_map = JointIndexMap(clm.absolute_encoders)
    node = ros_harness.start_node("state_estimator",
                                  params={"calibration_samples": 20, "rate_hz": 1.0 / DT, "beta": 1.0 / DT})
    for topic in ("actuators/state", "imu/data", "passive_encoders/state"):
        ros_harness.wait_for_subscribers(topic, timeout_s=60.0)
    # recorders with the harness' default QoS, the one wait_for_message uses
    js = ros_harness.probe.recorder("/joint_states", JointState)
    odom = ros_harness.probe.recorder("/estimation/base_odometry", Odometry)
    bad = JointIndexMap(clm.actuated_joint_names).to_joint_state(theta_read, np.zeros(clm.n_a), stamp=_stamp(0))
    bad.position[0] = math.nan  # rejected whole, never propagated

    def sample(k: int) -> None:
        ros_harness.publish("imu/data", arrays_to_imu_msg(np.zeros(3), [0.0, 0.0, 9.81], frame_id="imu",
                                                          stamp=_stamp(k), quaternion_xyzw=[0, 0, 0, 1]))
        ros_harness.publish("passive_encoders/state", enc_map.to_joint_state(enc, stamp=_stamp(k)))
        ros_harness.publish("actuators/state", _actuators(clm, theta_read, None, k), qos.SENSOR_STATE)

    # the hardware's role until the node has calibrated and published a state: the node keeps only
    # the newest sample, so a busy machine may drop many of them before 20 count for the calibration
    streaming, count = threading.Event(), [0]

    def stream() -> None:
        while not streaming.is_set():
            sample(count[0])
            count[0] += 1
            time.sleep(DT)  # pacing of the synthetic stream, not synchronisation

    thread = threading.Thread(target=stream, daemon=True)
    thread.start()
    try:
        ros_harness.wait_for_message("/joint_states", JointState, include_earlier=True, timeout_s=60.0)
        offsets_msg = ros_harness.wait_for_message("/estimation/calibration", JointState, qos=qos.LATCHED,
                                                   include_earlier=True, timeout_s=30.0)
        ros_harness.wait_for_message("/estimation/base_odometry", Odometry, include_earlier=True, timeout_s=30.0)
    finally:
        streaming.set()
        thread.join(timeout=5.0)
    last_k = count[0]
    np.testing.assert_allclose(JointIndexMap(clm.actuated_joint_names).reorder(offsets_msg.name, offsets_msg.position),
                               offsets, atol=1e-8)
    with js.lock:
        last = js.items[-1][1]
    positions = JointIndexMap(clm.joint_names).reorder(last.name, last.position)
    truth = np.array([q[m.joints[m.getJointId(n)].idx_q] for n in clm.joint_names])
    assert np.max(np.abs(positions - truth)) < 1e-6
    with odom.lock:
        o = odom.items[-1][1]
    assert o.header.frame_id == "odom" and o.child_frame_id == "base_link"
    assert all(math.isfinite(x) for x in (o.pose.pose.position.x, o.pose.pose.position.z, o.twist.twist.linear.x))
    # a malformed sample is skipped and reported; the next good one is processed normally (the
    # node keeps only the newest sample: the good one goes out once the bad one was seen)
    def rejected(d: DiagnosticArray) -> bool:
        values = {kv.key: kv.value for s in d.status if s.name == "state_estimator: estimator" for kv in s.values}
        return int(values.get("rejected", 0)) >= 1

    ros_harness.publish("actuators/state", bad, qos.SENSOR_STATE)
    ros_harness.wait_for_message("/diagnostics", DiagnosticArray, timeout_s=30.0, predicate=rejected)
    sample(last_k + 1)
    ros_harness.wait_for_message("/joint_states", JointState, include_earlier=True, timeout_s=30.0,
                                 predicate=lambda msg: msg.header.stamp == _stamp(last_k + 1))
    assert ros_harness.stop(node) == 0


def test_contact_wrench_estimator_recovers_the_ground_wrench(ros_harness, standing):
    clm, q, f, tau = standing
    from kangaroo_wbc.estimation.contact_wrench import paper_screws

    motor_torque = tau / paper_screws(clm).paper_gain  # eq. (47) inverse
    m = clm.model
    joints = JointIndexMap(clm.joint_names)
    pos = np.array([q[m.joints[m.getJointId(n)].idx_q] for n in clm.joint_names])
    # eq. (47) algebra on synthetic torques: the ball-screw compensations off
    node = ros_harness.start_node("contact_wrench_estimator", params={
        "rate_hz": 1.0 / DT, "actuator_model": False, "rotor_inertia_compensation": False,
        "torque_bias_estimation": False})
    for topic in ("actuators/state", "joint_states", "estimation/base_odometry"):
        ros_harness.wait_for_subscribers(topic, timeout_s=60.0)
    wrench = ros_harness.probe.recorder("/contact/left_sole/wrench", WrenchStamped)
    zmp = ros_harness.probe.recorder("/zmp", PointStamped)
    for k in range(60):
        stamp = _stamp(k)
        ros_harness.publish("joint_states", joints.to_joint_state(pos, np.zeros(len(pos)), stamp=stamp),
                            qos.SENSOR_STATE)
        ros_harness.publish("estimation/base_odometry", arrays_to_odometry_msg(
            q[:3], q[3:7], np.zeros(3), np.zeros(3), frame_id="odom", child_frame_id="base_link", stamp=stamp),
            qos.SENSOR_STATE)
        msg = _actuators(clm, q[clm.idx_q_a], motor_torque, k)
        if k == 30:
            msg.effort[2] = math.inf  # rejected, nothing published for this sample
        ros_harness.publish("actuators/state", msg, qos.SENSOR_STATE)
        time.sleep(DT)  # pacing of the synthetic stream, not synchronisation
    ros_harness.wait_for_message("/zmp", PointStamped, include_earlier=True, timeout_s=30.0)
    with wrench.lock:
        msgs = [msg for _, msg in wrench.items]
    assert msgs and all(msg.header.frame_id == "left_sole" for msg in msgs)
    np.testing.assert_allclose(wrench_msg_to_vector(msgs[-1].wrench), f[:6], atol=1e-6)
    assert _stamp(30) not in [msg.header.stamp for msg in msgs]
    with zmp.lock:
        assert zmp.items[-1][1].header.frame_id == "odom"
    assert ros_harness.stop(node) == 0

"""Integration test of the ``contact_wrench_estimator``'s optional ankle F/T over DDS: with
``ankle_ft_broadcasters`` it compares each ``<broadcaster>/wrench`` with its estimate and reports
the comparison in ``/diagnostics`` (``ankle_ft``); a NaN F/T message is skipped with a diagnostic.

Synthetic topics of a still Kangaroo standing on a known ground wrench (as
``test_estimation_nodes.py``); the F/T messages are what the ankle sensors would read for that
wrench (the ground's wrench plus the foot's weight, in the foot link's frame), the right one with
100 N of extra load. No simulator.
"""

from __future__ import annotations

import math
import time

import numpy as np
import pinocchio as pin
import pytest

pytest.importorskip("rclpy", reason="rclpy is not importable (ROS 2 not sourced)")

from diagnostic_msgs.msg import DiagnosticArray  # noqa: E402

from kangaroo_wbc.components.ankle_ft import GRAVITY_M_S2  # noqa: E402
from kangaroo_wbc.estimation.contact_wrench import paper_screws  # noqa: E402
from kangaroo_wbc.ros import qos  # noqa: E402
from kangaroo_wbc.ros.conversions import JointIndexMap  # noqa: E402
from test.integration.ros_harness import ros_environment, ros_harness  # noqa: E402,F401 - fixtures
from test.nodes.test_estimation_nodes import DT, _actuators, _stamp, standing  # noqa: E402,F401 - fixture
from test.ros.messages import arrays_to_odometry_msg, vector_to_wrench_stamped  # noqa: E402

pytestmark = [pytest.mark.ros, pytest.mark.integration, pytest.mark.slow]

SENSORS = {"leg_left_ft_sensor_broadcaster": ("left_foot_link", "left_sole"),
           "leg_right_ft_sensor_broadcaster": ("right_foot_link", "right_sole")}
EXTRA_RIGHT_N = 100.0


def _sensor_reading(clm, q, frame: str, sole: str, wrench_in_sole: np.ndarray) -> np.ndarray:
    """What the sensor at ``frame`` reads when the ground's wrench on ``sole`` is ``wrench_in_sole``."""
    m, d = clm.model, clm.model.createData()
    pin.framesForwardKinematics(m, d, q)
    fs, fc = m.getFrameId(frame), m.getFrameId(sole)
    oMs, oMc = d.oMf[fs], d.oMf[fc]
    body = m.inertias[m.frames[fs].parentJoint]
    com = d.oMi[m.frames[fs].parentJoint].act(body.lever)
    weight = np.array([0.0, 0.0, -body.mass * GRAVITY_M_S2])
    f_gr = oMc.rotation @ wrench_in_sole[:3]
    tau = oMc.rotation @ wrench_in_sole[3:] + np.cross(oMc.translation - oMs.translation, f_gr)
    tau += np.cross(com - oMs.translation, weight)
    return np.concatenate([oMs.rotation.T @ (f_gr + weight), oMs.rotation.T @ tau])


def _ankle_ft_status(ros_harness, predicate) -> dict:
    found: list[dict] = []

    def holds(d: DiagnosticArray) -> bool:
        for s in d.status:
            if s.name.endswith("ankle_ft"):
                values = {kv.key: kv.value for kv in s.values}
                values.update(level=int.from_bytes(s.level, "little") if isinstance(s.level, bytes) else int(s.level),
                              message=s.message)
                if predicate(values):
                    found.append(values)
                    return True
        return False

    ros_harness.wait_for_message("/diagnostics", DiagnosticArray, timeout_s=30.0, predicate=holds)
    return found[0]


def test_wrench_node_reports_the_ankle_ft_comparison(ros_harness, standing):
    clm, q, f, tau = standing
    motor_torque = tau / paper_screws(clm).paper_gain  # eq. (47) inverse
    m = clm.model
    joints = JointIndexMap(clm.joint_names)
    pos = np.array([q[m.joints[m.getJointId(n)].idx_q] for n in clm.joint_names])
    truth = {"left_sole": f[:6], "right_sole": f[6:12]}
    readings = {}
    for name, (frame, sole) in SENSORS.items():
        w = truth[sole].copy()
        if sole == "right_sole":
            w[2] += EXTRA_RIGHT_N
        readings[name] = (frame, _sensor_reading(clm, q, frame, sole, w))
    node = ros_harness.start_node("contact_wrench_estimator", params={
        "rate_hz": 1.0 / DT, "actuator_model": False, "rotor_inertia_compensation": False,
        "torque_bias_estimation": False, "ankle_ft_broadcasters": list(SENSORS)})
    for topic in ("actuators/state", "joint_states", "estimation/base_odometry", *(f"{b}/wrench" for b in SENSORS)):
        ros_harness.wait_for_subscribers(topic, timeout_s=60.0)
    for k in range(200):  # 1 s: the estimator's 5 Hz filter settles
        stamp = _stamp(k)
        ros_harness.publish("joint_states", joints.to_joint_state(pos, np.zeros(len(pos)), stamp=stamp),
                            qos.SENSOR_STATE)
        ros_harness.publish("estimation/base_odometry", arrays_to_odometry_msg(
            q[:3], q[3:7], np.zeros(3), np.zeros(3), frame_id="odom", child_frame_id="base_link", stamp=stamp),
            qos.SENSOR_STATE)
        for name, (frame, w) in readings.items():
            ros_harness.publish(f"{name}/wrench", vector_to_wrench_stamped(w, frame_id=frame, stamp=stamp),
                                qos.SENSOR_STATE)
        ros_harness.publish("actuators/state", _actuators(clm, q[clm.idx_q_a], motor_torque, k), qos.SENSOR_STATE)
        time.sleep(DT)  # pacing of the synthetic stream, not synchronisation
    status = _ankle_ft_status(ros_harness, lambda v: "right_sole.force_difference_n" in v
                              and abs(float(v["right_sole.force_difference_n"]) - EXTRA_RIGHT_N) < 5.0)
    assert float(status["left_sole.force_difference_n"]) < 5.0  # the left sensor agrees
    assert float(status["left_sole.cop_difference_m"]) < 0.005
    assert status["level"] == 1 and "right_sole force differs" in status["message"]  # WARN: the 100 N
    # a NaN F/T message: skipped, named in the status
    bad = vector_to_wrench_stamped(np.zeros(6), frame_id="left_foot_link", stamp=_stamp(200))
    bad.wrench.force.z = math.nan
    ros_harness.publish("leg_left_ft_sensor_broadcaster/wrench", bad, qos.SENSOR_STATE)
    status = _ankle_ft_status(ros_harness, lambda v: "non-finite" in v.get("last_skipped", ""))
    assert "leg_left_ft_sensor_broadcaster/wrench" in status["last_skipped"] and int(status["skipped"]) >= 1
    assert node.is_running()
    assert ros_harness.stop(node) == 0

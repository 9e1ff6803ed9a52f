"""Integration test of the ``link_tf`` node over DDS (real executable, isolated ROS environment).

One ``joint_states`` sample (all 76 joints, a random configuration, names shuffled) goes in; every
movable URDF joint's child-in-parent transform on ``/tf`` must match pinocchio's forward kinematics
of a model built here straight from the URDF (not the package's loader), every fixed joint is on
``/tf_static`` (latched), the URDF text is on ``robot_description`` (latched), and ``/tf`` is
decimated to ``rate_hz`` on the message stamps.
"""

from __future__ import annotations

import contextlib
import time

import numpy as np
import pytest

pytest.importorskip("rclpy", reason="rclpy is not importable (ROS 2 not sourced)")
pytest.importorskip("tf2_msgs.msg", reason="tf2_msgs is not built (scripts/build_interfaces.sh tf2_msgs)")

import pinocchio as pin  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import String  # noqa: E402
from tf2_msgs.msg import TFMessage  # noqa: E402

from kangaroo_wbc.model.link_poses import urdf_joints  # noqa: E402
from kangaroo_wbc.robots.kangaroo.files import kangaroo_files  # noqa: E402
from kangaroo_wbc.ros import qos  # noqa: E402
from kangaroo_wbc.ros.conversions import seconds_to_time_msg  # noqa: E402
from test.integration.ros_harness import ros_environment, ros_harness  # noqa: E402,F401 - fixtures

pytestmark = [pytest.mark.ros, pytest.mark.integration]

#: Largest difference [m, rad-ish] between a published transform and pinocchio's.
TF_TOLERANCE = 1e-9
T0 = 50.0  # [s] stamp of the first sample


@pytest.fixture(scope="module")
def urdf():
    """The URDF text, its joints, and a fixed-base pinocchio model built straight from it."""
    path = kangaroo_files()[0]
    text = path.read_text()
    model = pin.buildModelFromUrdf(str(path))
    return text, urdf_joints(text), model


def _random_configuration(model: pin.Model, rng: np.random.Generator) -> dict[str, float]:
    """Random position [rad or m] of every 1-DOF joint, inside its limits."""
    out = {}
    for jid in range(1, model.njoints):
        i = model.joints[jid].idx_q
        lo, hi = model.lowerPositionLimit[i], model.upperPositionLimit[i]
        lo, hi = (lo, hi) if np.isfinite(lo) and np.isfinite(hi) and hi > lo else (-1.0, 1.0)
        out[model.names[jid]] = float(rng.uniform(lo, hi))
    return out


def _joint_state(positions: dict[str, float], stamp_s: float, rng: np.random.Generator) -> JointState:
    """All joints, names in a random order, stamped ``stamp_s``."""
    names = list(positions)
    rng.shuffle(names)
    msg = JointState(name=names, position=[positions[n] for n in names])
    msg.header.stamp = seconds_to_time_msg(stamp_s)
    return msg


def _transform_matrix(t) -> np.ndarray:
    r, p = t.transform.rotation, t.transform.translation
    return pin.SE3(pin.Quaternion(r.w, r.x, r.y, r.z).matrix(), np.array([p.x, p.y, p.z])).homogeneous


def test_link_tf_matches_pinocchio(ros_harness, urdf) -> None:
    text, joints, model = urdf
    data = model.createData()
    rng = np.random.default_rng(7)
    positions = _random_configuration(model, rng)
    assert len(positions) == 76
    q = pin.neutral(model)
    for name, value in positions.items():
        q[model.joints[model.getJointId(name)].idx_q] = value
    pin.framesForwardKinematics(model, data, q)

    def expected(parent: str, child: str) -> np.ndarray:
        o_parent = data.oMf[model.getFrameId(parent, pin.FrameType.BODY)]
        return o_parent.actInv(data.oMf[model.getFrameId(child, pin.FrameType.BODY)]).homogeneous

    node = ros_harness.start_node("link_tf", params={"rate_hz": 50.0})
    ros_harness.wait_for_subscribers("joint_states", timeout_s=60.0)
    tf = ros_harness.probe.recorder("/tf", TFMessage)
    ros_harness.wait_matched(tf, timeout_s=30.0)
    description = ros_harness.wait_for_message("/robot_description", String, qos=qos.LATCHED,
                                               include_earlier=True, timeout_s=30.0)
    assert description.data == text
    static = ros_harness.wait_for_message("/tf_static", TFMessage, qos=qos.LATCHED,
                                          include_earlier=True, timeout_s=30.0)

    # link_tf reads joint_states best effort: a sample sent before its reader has matched the probe's
    # writer is dropped (matching is not symmetric), so the first sample is repeated until /tf comes;
    # repeats carry the same stamp, which link_tf's decimation drops after the first
    moving = None
    for _ in range(30):
        ros_harness.publish("joint_states", _joint_state(positions, T0, rng), qos.SENSOR_STATE)
        with contextlib.suppress(TimeoutError):
            moving = ros_harness.wait_for_message("/tf", TFMessage, include_earlier=True, timeout_s=1.0)
            break
    assert moving is not None, "link_tf published no /tf for 30 s of joint_states"

    movable = {(p, c) for _, kind, p, c in joints if kind != "fixed"}
    fixed = {(p, c) for _, kind, p, c in joints if kind == "fixed"}
    assert {(t.header.frame_id, t.child_frame_id) for t in moving.transforms} == movable
    assert {(t.header.frame_id, t.child_frame_id) for t in static.transforms} == fixed
    assert all(t.header.stamp == seconds_to_time_msg(T0) for t in moving.transforms)
    errors = [np.max(np.abs(_transform_matrix(t) - expected(t.header.frame_id, t.child_frame_id)))
              for t in list(moving.transforms) + list(static.transforms)]
    assert max(errors) < TF_TOLERANCE

    # decimation on the stamps: 10 ms later (< 1/50 Hz) is dropped, 25 ms later is published
    for dt in (0.010, 0.025):
        ros_harness.publish("joint_states", _joint_state(positions, T0 + dt, rng), qos.SENSOR_STATE)
    later = seconds_to_time_msg(T0 + 0.025)
    ros_harness.wait_for_message("/tf", TFMessage, include_earlier=True, timeout_s=30.0,
                                 predicate=lambda m: m.transforms[0].header.stamp == later)
    time.sleep(0.2)  # let a wrongly published 10 ms sample arrive before counting
    with tf.lock:
        stamps = [m.transforms[0].header.stamp for _, m in tf.items]
    assert stamps == [seconds_to_time_msg(T0), later]
    assert ros_harness.stop(node) == 0

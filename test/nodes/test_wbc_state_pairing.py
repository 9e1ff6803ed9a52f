"""The ``whole_body_controller`` node pairs ``joint_states`` with the base odometry of its time:
after a stall the executor may hand it the newest ``joint_states`` before the odometry sample of
the same time. That must not read as "no base state" (a safe-mode entry): the node waits for the
odometry (for at most ``odometry_max_lag_s`` of joint-states time) and then runs on the pair. An
odometry that does not come keeps the old behaviour: no consistent state (NaN stamp, safe mode).

In-process node, its message callbacks fed directly (no DDS timing involved)."""

from __future__ import annotations

import math

import numpy as np
import pytest

pytest.importorskip("rclpy", reason="rclpy is not importable (ROS 2 not sourced)")

from sensor_msgs.msg import JointState  # noqa: E402

from kangaroo_wbc.ros.conversions import seconds_to_time_msg  # noqa: E402
from test.control.conftest import KANGAROO_DIR  # noqa: E402
from test.integration.ros_harness import ros_environment  # noqa: E402,F401 - fixture
from test.ros.messages import arrays_to_odometry_msg  # noqa: E402

pytestmark = pytest.mark.skipif(not (KANGAROO_DIR / "kangaroo.urdf").is_file(), reason="Kangaroo not generated")


@pytest.fixture(scope="module")
def wbc_node(ros_environment):
    import rclpy

    from kangaroo_wbc.nodes.whole_body_controller_node import WholeBodyControllerNode
    from kangaroo_wbc.robots.kangaroo.robot import load_kangaroo, standing_configuration

    rclpy.init(domain_id=ros_environment.domain_id)
    node = WholeBodyControllerNode()
    clm = load_kangaroo()
    q = standing_configuration(clm)
    m = clm.model
    position = np.array([q[m.joints[m.getJointId(n)].idx_q] for n in clm.joint_names])
    calls: list[float] = []
    node.process = lambda q_, v_, stamp_s, stamp=None, **kw: calls.append(stamp_s)  # record the pairing only
    try:
        yield node, clm, q, position, calls
    finally:
        node.destroy_node()
        rclpy.try_shutdown()


def _joints(clm, position, t):
    msg = JointState()
    msg.header.stamp = seconds_to_time_msg(t)
    msg.name = list(clm.joint_names)
    msg.position = position.tolist()
    msg.velocity = [0.0] * len(position)
    return msg


def _odometry(q, t):
    return arrays_to_odometry_msg(q[:3], q[3:7], np.zeros(3), np.zeros(3), frame_id="odom",
                                  child_frame_id="base_link", stamp=seconds_to_time_msg(t))


def test_joint_states_wait_for_the_odometry_of_their_time(wbc_node):
    node, clm, q, position, calls = wbc_node
    lag = node.params.odometry_max_lag_s
    t0 = 100.0
    node.pairing.on_odometry(_odometry(q, t0))
    node.pairing.on_joints(_joints(clm, position, t0))
    assert calls == [t0]  # the usual order: odometry, then joint_states of the same sample

    t1 = t0 + 3 * lag  # after a stall: the newest joint_states first ...
    node.pairing.on_joints(_joints(clm, position, t1))
    assert calls == [t0]  # ... waits for its odometry instead of running without a base
    node.pairing.on_odometry(_odometry(q, t1))
    assert calls == [t0, t1]  # ... and runs on the pair

    t2 = t1 + 3 * lag  # an odometry that does not come: within lag of joint-states time it waits,
    node.pairing.on_joints(_joints(clm, position, t2))
    node.pairing.on_joints(_joints(clm, position, t2 + 0.5 * lag))
    assert calls == [t0, t1]
    node.pairing.on_joints(_joints(clm, position, t2 + 1.5 * lag))  # then runs without a base state
    assert len(calls) == 3 and math.isnan(calls[2])
    node.pairing.on_odometry(_odometry(q, t2 - 0.01))  # a late, older odometry does not revive the old sample
    assert len(calls) == 3


def test_joint_states_older_than_the_odometry_are_skipped_a_bounded_number_of_times(wbc_node):
    from kangaroo_wbc.ros.state_pairing import MAX_JOINT_STATES_BEHIND

    node, clm, q, position, calls = wbc_node
    calls.clear()
    lag = node.params.odometry_max_lag_s
    t0 = 200.0
    node.pairing.on_odometry(_odometry(q, t0))
    node.pairing.on_joints(_joints(clm, position, t0 - 3 * lag))  # an older joint_states: the newer one comes
    assert calls == []
    node.pairing.on_joints(_joints(clm, position, t0))
    assert calls == [t0]
    calls.clear()
    for _ in range(MAX_JOINT_STATES_BEHIND):  # joint_states stuck behind the odometry ...
        node.pairing.on_joints(_joints(clm, position, t0 - 3 * lag))
    assert calls == []
    node.pairing.on_joints(_joints(clm, position, t0 - 3 * lag))  # ... then no consistent state (safe mode)
    assert len(calls) == 1 and math.isnan(calls[0])

""":class:`~kangaroo_wbc.ros.state_pairing.StatePairing` without waiting (``wait=False``), as the
contact-wrench estimator uses it: every ``joint_states`` goes out at once, stamped with its base's
odometry when that is older by more than ``max_lag_s`` (the receiver then finds it stale), and the
state goes out again when the odometry of that ``joint_states`` comes after it. Out-of-order and
malformed messages go to the receiver's accounting, not into the state.

The pairing's callbacks are fed directly (no DDS, no node)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("rclpy", reason="rclpy is not importable (ROS 2 not sourced)")

from sensor_msgs.msg import JointState  # noqa: E402

from kangaroo_wbc.ros.conversions import seconds_to_time_msg  # noqa: E402
from kangaroo_wbc.ros.state_pairing import JOINT_STATES, ODOMETRY, StatePairing  # noqa: E402
from test.control.conftest import KANGAROO_DIR  # noqa: E402
from test.ros.messages import arrays_to_odometry_msg  # noqa: E402

pytestmark = pytest.mark.skipif(not (KANGAROO_DIR / "kangaroo.urdf").is_file(), reason="Kangaroo not generated")

LAG_S = 0.05


@pytest.fixture(scope="module")
def robot():
    from kangaroo_wbc.robots.kangaroo.robot import load_kangaroo, standing_configuration

    clm = load_kangaroo()
    q = standing_configuration(clm)
    m = clm.model
    position = np.array([q[m.joints[m.getJointId(n)].idx_q] for n in clm.joint_names])
    return clm, q, position


class Receiver:
    """Records the states, refusals and order checks the pairing hands over."""

    def __init__(self) -> None:
        self.states: list[tuple[float, str, np.ndarray]] = []
        self.rejected: list[str] = []
        self.newest: dict[str, float] = {}

    def on_state(self, q, v, stamp_s, header_stamp, source) -> None:
        self.states.append((stamp_s, source, q.copy()))

    def reject(self, topic: str, exc: Exception) -> None:
        self.rejected.append(topic)

    def in_order(self, topic: str, stamp_s: float) -> bool:
        if stamp_s < self.newest.get(topic, -float("inf")):
            return False
        self.newest[topic] = stamp_s
        return True


def _pairing(clm, receiver: Receiver) -> StatePairing:
    def warn(key, text):
        raise AssertionError(f"warn called instead of reject: {text}")

    return StatePairing(clm, receiver.on_state, warn, LAG_S, ("position",), wait=False,
                        reject=receiver.reject, in_order=receiver.in_order)


def _joints(clm, position, t, velocity=True):
    msg = JointState(name=list(clm.joint_names), position=position.tolist())
    if velocity:
        msg.velocity = [0.0] * len(position)
    msg.header.stamp = seconds_to_time_msg(t)
    return msg


def _odometry(q, t, x=0.0):
    return arrays_to_odometry_msg(q[:3] + [x, 0.0, 0.0], q[3:7], np.zeros(3), np.zeros(3), frame_id="odom",
                                  child_frame_id="base_link", stamp=seconds_to_time_msg(t))


def test_every_joint_states_goes_out_stamped_with_the_older_of_it_and_its_base(robot):
    clm, q, position = robot
    rx = Receiver()
    pairing = _pairing(clm, rx)
    t0 = 10.0
    pairing.on_joints(_joints(clm, position, t0, velocity=False))  # no odometry yet: as old as no base
    assert [(s, src) for s, src, _ in rx.states] == [(-float("inf"), ODOMETRY)]
    pairing.on_odometry(_odometry(q, t0, x=0.25))  # the base of that joint sample: the state again
    assert [(s, src) for s, src, _ in rx.states[1:]] == [(t0, JOINT_STATES)]
    np.testing.assert_allclose(rx.states[-1][2][:3], q[:3] + [0.25, 0.0, 0.0])
    pairing.on_joints(_joints(clm, position, t0 + 0.5 * LAG_S))  # base within the lag: the joints' stamp
    assert rx.states[-1][:2] == (t0 + 0.5 * LAG_S, JOINT_STATES)
    pairing.on_odometry(_odometry(q, t0 + 0.2 * LAG_S))  # an odometry of another time: no state
    assert len(rx.states) == 3
    pairing.on_joints(_joints(clm, position, t0 + 3 * LAG_S))  # the base lags: the state is as old as it
    assert rx.states[-1][:2] == (t0 + 0.2 * LAG_S, ODOMETRY)


def test_refused_and_out_of_order_messages_leave_the_state_alone(robot):
    clm, q, position = robot
    rx = Receiver()
    pairing = _pairing(clm, rx)
    t0 = 20.0
    pairing.on_odometry(_odometry(q, t0))
    pairing.on_joints(_joints(clm, position, t0))
    assert len(rx.states) == 1
    before = pairing.q.copy()
    pairing.on_joints(_joints(clm, position + 0.1, t0 - 1.0))  # out of order: skipped
    pairing.on_odometry(_odometry(q, t0 - 1.0, x=1.0))
    assert len(rx.states) == 1
    np.testing.assert_array_equal(pairing.q, before)
    bad = _joints(clm, position, t0 + 0.01)
    bad.position[0] = float("nan")
    pairing.on_joints(bad)  # malformed: to the receiver's accounting, no state (no NaN stamp either)
    odom = _odometry(q, t0 + 0.01)
    odom.pose.pose.orientation.w = float("nan")
    pairing.on_odometry(odom)
    assert rx.rejected == [JOINT_STATES, ODOMETRY]
    assert len(rx.states) == 1
    np.testing.assert_array_equal(pairing.q, before)

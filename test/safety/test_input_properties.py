"""Property test: no message on any subscribed topic of any node can end the node or make the
controller command something unsafe (issue #38, item 1).

Every node of the separate deployment is built in this process (``sim``, ``state_estimator``,
``contact_wrench_estimator``, ``whole_body_controller``, ``link_tf``) and each of its subscription
callbacks, as registered (behind :meth:`KangarooNode.create_subscription`'s guard), is fed messages
drawn by hypothesis from the message type's own fields: random, NaN, infinite, extreme, empty,
oversized, shuffled and unknown names (:mod:`test.safety.message_strategies`); a ``raw``
subscription gets them serialised. Between the drawn messages the controller gets
the state of the Kangaroo standing still. Properties:

* no callback raises (the process would end): a message it cannot take becomes an ``inputs``
  status naming the topic, a WARN (rejected), never an ERROR (a callback that failed instead of
  checking its input);
* every command the controller computes, during and after the barrage, is finite and within each
  actuator's ``max_force_n``;
* afterwards the standing state is still controlled (the weight held), the previous inputs kept.

Integration test (the nodes' real construction, models and compiled kernels; callbacks called
directly, no DDS timing involved; the regression over DDS is in ``test_controller_faults.py``).
"""

from __future__ import annotations

import time

import numpy as np
import pytest

pytest.importorskip("rclpy", reason="rclpy is not importable (ROS 2 not sourced)")
pytest.importorskip("hypothesis")

from hypothesis import HealthCheck, given, settings  # noqa: E402

from test.integration.ros_harness import ros_environment  # noqa: E402,F401 - fixture
from test.safety.conftest import max_force_n  # noqa: E402
from test.safety.message_strategies import messages, payloads  # noqa: E402

pytestmark = [pytest.mark.ros, pytest.mark.integration, pytest.mark.slow]

#: Messages drawn per subscribed topic (deterministic: derandomised).
EXAMPLES = 25
NODES = ("sim", "state_estimator", "contact_wrench_estimator", "whole_body_controller", "link_tf")


@pytest.fixture(scope="module")
def graph(ros_environment):  # noqa: F811
    """The nodes (in this process's default context), the standing state and the commands."""
    import rclpy

    from kangaroo_wbc.nodes.contact_wrench_node import ContactWrenchNode
    from kangaroo_wbc.nodes.link_tf_node import LinkTfNode
    from kangaroo_wbc.nodes.sim_node import SimNode
    from kangaroo_wbc.nodes.state_estimator_node import StateEstimatorNode
    from kangaroo_wbc.nodes.whole_body_controller_node import WholeBodyControllerNode
    from kangaroo_wbc.robots.kangaroo.robot import load_kangaroo, standing_configuration

    rclpy.init(domain_id=ros_environment.domain_id)
    built = {}
    try:
        built["sim"] = SimNode()
        built["sim"].on_shutdown()  # its simulation loop stops: only its callbacks are under test
        built["state_estimator"] = StateEstimatorNode()
        built["contact_wrench_estimator"] = ContactWrenchNode()
        built["whole_body_controller"] = WholeBodyControllerNode()
        built["link_tf"] = LinkTfNode()
        clm = load_kangaroo()
        q = standing_configuration(clm)
        commands: list = []
        built["whole_body_controller"].command_listener = commands.append
        names = [*clm.joint_names, *clm.actuated_joint_names, "left_sole", "right_sole", "base_link", "odom"]
        yield {"nodes": built, "clm": clm, "q": q, "commands": commands, "names": names}
    finally:
        for node in built.values():
            node.destroy_node()
        rclpy.try_shutdown()


def _stand(g) -> None:
    """The state estimator's word: the Kangaroo standing still, stamped now (the node's clock)."""
    from rclpy.serialization import serialize_message
    from sensor_msgs.msg import JointState

    from kangaroo_wbc.ros.conversions import seconds_to_time_msg
    from test.ros.messages import arrays_to_odometry_msg

    wbc, clm, q = g["nodes"]["whole_body_controller"], g["clm"], g["q"]
    m = clm.model
    stamp = seconds_to_time_msg(wbc.get_clock().now().nanoseconds * 1e-9)
    odom = arrays_to_odometry_msg(q[:3], q[3:7], np.zeros(3), np.zeros(3), frame_id="odom",
                                  child_frame_id="base_link", stamp=stamp)
    joints = JointState(name=list(clm.joint_names),
                        position=[float(q[m.joints[m.getJointId(n)].idx_q]) for n in clm.joint_names],
                        velocity=[0.0] * len(clm.joint_names))
    joints.header.stamp = stamp
    subs = {s.topic_name: s for s in wbc.subscriptions}
    for topic, msg in (("/estimation/base_odometry", odom), ("/joint_states", joints)):
        sub = subs[topic]  # a raw subscription (the 1 kHz JointState streams) takes the bytes
        sub.callback(serialize_message(msg) if sub.raw else msg)


def _assert_safe(g, since: int) -> None:
    limits = max_force_n()
    bound = np.array([limits[n] for n in g["clm"].actuated_joint_names])
    for cmd in g["commands"][since:]:
        force = np.asarray(cmd.force, dtype=float)
        assert np.all(np.isfinite(force)), force
        assert np.all(np.abs(force) <= bound + 1e-9), dict(zip(g["clm"].actuated_joint_names, force))


def _feed(g, callback, strategy) -> None:
    """``EXAMPLES`` messages drawn from ``strategy`` to ``callback``, the standing state after each."""

    @settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(msg=strategy)
    def feed(msg) -> None:
        callback(msg)  # behind the guard: returns, whatever the message
        _stand(g)

    feed()


@pytest.mark.parametrize("node_name", NODES)
def test_no_message_ends_a_node_or_unsettles_the_commands(graph, node_name):
    g = graph
    node = g["nodes"][node_name]
    subscriptions = [s for s in node.subscriptions if s.topic_name != "/parameter_events"]
    assert subscriptions, f"{node_name} subscribes nothing"
    for _ in range(3):
        _stand(g)
    start = len(g["commands"])
    for sub in subscriptions:
        _feed(g, sub.callback, payloads(sub.msg_type, g["names"]) if sub.raw else messages(sub.msg_type, g["names"]))
    _assert_safe(g, start)
    for _ in range(3):
        _stand(g)
    last = g["commands"][-1]
    assert np.max(np.abs(last.force)) > 10.0, "the standing robot's weight is no longer held"
    faults = node.input_faults.topics
    assert set(faults) <= {s.topic_name for s in subscriptions}
    errors = {t: e[3] for t, e in faults.items() if int(e[0]) >= 2}
    assert not errors, f"callbacks that failed instead of rejecting the message: {errors}"


def test_a_rejected_message_is_named_in_the_nodes_inputs_status(graph):
    """The controller, a NaN CoM reference: a WARN ``inputs`` status naming the topic."""
    from geometry_msgs.msg import PointStamped

    wbc = graph["nodes"]["whole_body_controller"]
    callback = next(s.callback for s in wbc.subscriptions if s.topic_name == "/wbc/com_reference")
    msg = PointStamped()
    msg.point.x = float("nan")
    t0 = time.monotonic()
    callback(msg)
    level, message, values = wbc.input_faults.summary()
    assert int(level) == 1 and "/wbc/com_reference: message rejected" in message, message
    assert int(values["/wbc/com_reference rejected"]) >= 1
    assert wbc.input_faults.topics["/wbc/com_reference"][2] >= t0

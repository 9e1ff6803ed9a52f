"""Unit tests of :mod:`kangaroo_wbc.ros.publication`: messages handed to the native publication
thread reach a real DDS subscriber intact and in order; deferred wake-ups wait for the flush; what
cannot be queued is refused (the caller then publishes it)."""

from __future__ import annotations

import time

import numpy as np
import pytest

pytest.importorskip("rclpy", reason="rclpy is not importable (ROS 2 not sourced)")

from rclpy.qos import QoSProfile, ReliabilityPolicy  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402

from kangaroo_wbc.ros.publication import SLOT_BYTES, SLOTS, PublicationThread, rcl_libraries  # noqa: E402
from kangaroo_wbc.ros.serialized import joint_state_writer  # noqa: E402

QOS = QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE)


@pytest.fixture
def link(make_node, rclpy_context):
    """(publisher, received raw messages, spin(until, timeout)) on one topic in this context."""
    from rclpy.executors import SingleThreadedExecutor

    node = make_node("publication_test")
    pub = node.create_publisher(JointState, "publication_test/js", QOS)
    received: list[bytes] = []
    node.create_subscription(JointState, "publication_test/js", received.append, QOS, raw=True)
    executor = SingleThreadedExecutor(context=rclpy_context)
    executor.add_node(node)

    def spin(until, timeout_s=5.0):
        deadline = time.monotonic() + timeout_s
        while not until() and time.monotonic() < deadline:
            executor.spin_once(timeout_sec=0.01)
        return until()

    assert spin(lambda: pub.get_subscription_count() > 0)
    yield pub, received, spin
    executor.shutdown()


@pytest.fixture
def thread():
    t = PublicationThread(*rcl_libraries())
    yield t
    t.stop()


def test_messages_arrive_intact_and_in_order(link, thread):
    pub, received, spin = link
    key = thread.register(pub)
    w = joint_state_writer([f"j{i}" for i in range(76)])
    rng = np.random.default_rng(3)
    sent = []
    for k in range(300):  # more than the ring: the sender keeps up, or refuses (then we publish)
        data = w.write(1e-3 * k, position=rng.normal(size=76), velocity=rng.normal(size=76), effort=rng.normal(size=76))
        sent.append(data)
        if not thread.send(key, data):
            time.sleep(0.001)
            assert thread.send(key, data), "the ring stayed full"
    assert spin(lambda: len(received) >= len(sent))
    assert received == sent
    assert thread.errors == 0 and thread.pending == 0


def test_deferred_messages_wait_for_the_flush(link, thread):
    pub, received, spin = link
    key = thread.register(pub)
    data = joint_state_writer(["a", "b"]).write(1.0, position=[1.0, 2.0], velocity=[0, 0], effort=[0, 0])
    thread.defer_wakeups()
    assert thread.send(key, data)
    assert not spin(lambda: len(received) > 0, timeout_s=0.3)  # queued, not woken
    assert thread.pending == 1
    thread.flush()
    # the thread publishes, then moves its tail: the message may arrive a moment before pending drops
    assert spin(lambda: len(received) == 1 and thread.pending == 0)
    assert received == [data]


def test_refusals_and_stop(link, thread):
    pub, received, spin = link
    key = thread.register(pub)
    assert not thread.send(key, bytes(SLOT_BYTES + 1))  # larger than a slot: publish it yourself
    assert thread.overflows == 1
    thread.defer_wakeups()
    data = joint_state_writer(["a"]).write(2.0, position=[1.0], velocity=[0.0], effort=[0.0])
    assert all(thread.send(key, data) for _ in range(SLOTS))
    assert not thread.send(key, data)  # the ring is full (nothing woke the thread)
    thread.stop()  # publishes what is queued, then ends
    assert thread.pending == 0
    assert spin(lambda: len(received) == SLOTS)
    assert not thread.send(key, data)  # stopped
    thread.stop()  # idempotent

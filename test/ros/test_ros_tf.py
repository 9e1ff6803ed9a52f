"""Unit tests of kangaroo_wbc.ros.tf: backend choice, one log line, the TFMessage fallback."""

from __future__ import annotations

import sys
import time
import types

import pytest

pytest.importorskip("rclpy", reason="rclpy is not importable (ROS 2 not sourced)")

from builtin_interfaces.msg import Time  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402

from kangaroo_wbc.ros.conversions import arrays_to_transform_stamped  # noqa: E402
from kangaroo_wbc.ros.tf import make_tf_broadcaster  # noqa: E402
from test.ros.conftest import LogRecorder  # noqa: E402


def transform(child: str = "base_link"):
    return arrays_to_transform_stamped([0.0, 0.0, 1.0], [0.0, 0.0, 0.0, 1.0], parent_frame="odom",
                                       child_frame=child, stamp=Time(sec=1))


class FakeNode:
    """Records the publisher created by the fallback and the log lines."""

    def __init__(self) -> None:
        self.logger = LogRecorder()
        self.published: list = []
        self.publishers: list[tuple] = []

    def get_logger(self):
        return self.logger

    def create_publisher(self, msg_type, topic, qos):
        self.publishers.append((msg_type, topic, qos))
        return types.SimpleNamespace(publish=self.published.append)


class FakeTFMessage:
    def __init__(self, transforms=()):
        self.transforms = list(transforms)


def _fake_module(name: str, **attrs) -> types.ModuleType:
    module = types.ModuleType(name)
    module.__dict__.update(attrs)
    return module


def test_prefers_tf2_ros(monkeypatch) -> None:
    sent: list = []

    class FakeBroadcaster:
        def __init__(self, node) -> None:
            self.node = node

        def sendTransform(self, transforms) -> None:  # noqa: N802
            sent.append(transforms)

    monkeypatch.setitem(sys.modules, "tf2_ros", _fake_module("tf2_ros", TransformBroadcaster=FakeBroadcaster))
    node = FakeNode()
    tf = make_tf_broadcaster(node)
    assert tf.backend == "tf2_ros"
    tf.sendTransform(transform())
    tf.sendTransform([transform("a"), transform("b")])
    assert [len(batch) for batch in sent] == [1, 2]
    assert len(node.logger.lines) == 1 and "tf2_ros.TransformBroadcaster" in node.logger.lines[0][1]


def test_falls_back_to_tfmessage_publisher(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "tf2_ros", None)  # import raises ImportError
    msg_module = _fake_module("tf2_msgs.msg", TFMessage=FakeTFMessage)
    monkeypatch.setitem(sys.modules, "tf2_msgs", _fake_module("tf2_msgs", msg=msg_module))
    monkeypatch.setitem(sys.modules, "tf2_msgs.msg", msg_module)
    node = FakeNode()
    tf = make_tf_broadcaster(node)
    assert tf.backend == "tf2_msgs"
    msg_type, topic, qos = node.publishers[0]
    assert (msg_type, topic, qos.depth) == (FakeTFMessage, "/tf", 100)
    tf.sendTransform([transform("a"), transform("b")])
    assert [t.child_frame_id for t in node.published[0].transforms] == ["a", "b"]
    assert node.logger.lines == [
        ("info", "TF: tf2_ros not importable; publishing tf2_msgs/TFMessage on /tf directly")]


def test_no_tf_at_all_logs_one_warning(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "tf2_ros", None)
    monkeypatch.setitem(sys.modules, "tf2_msgs", None)
    monkeypatch.setitem(sys.modules, "tf2_msgs.msg", None)
    node = FakeNode()
    tf = make_tf_broadcaster(node)
    assert tf.backend == "none"
    tf.sendTransform(transform())
    assert node.logger.lines == [
        ("warning", "TF: neither tf2_ros nor tf2_msgs importable; TF broadcasting disabled")]
    assert node.publishers == []


def test_real_backend_on_a_node(make_node, rclpy_context, monkeypatch) -> None:
    """With the real modules: whichever backend is available, a real node works; when
    tf2_msgs is importable, the transforms arrive on /tf as TFMessage."""
    node = make_node("tf_source")
    lines = LogRecorder()
    monkeypatch.setattr(node, "get_logger", lambda: lines)
    tf = make_tf_broadcaster(node)
    assert len(lines.lines) == 1
    try:
        from tf2_msgs.msg import TFMessage
    except ImportError:
        assert tf.backend in ("tf2_ros", "none")
        tf.sendTransform(transform())
        return
    listener = make_node("tf_listener")
    received: list = []
    listener.create_subscription(TFMessage, "/tf", received.append, 100)
    executor = SingleThreadedExecutor(context=rclpy_context)
    executor.add_node(listener)
    deadline = time.monotonic() + 10.0
    while not received and time.monotonic() < deadline:
        tf.sendTransform(transform())
        executor.spin_once(timeout_sec=0.05)
    executor.shutdown()
    assert received and received[0].transforms[0].child_frame_id == "base_link"

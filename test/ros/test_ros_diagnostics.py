"""Unit tests of kangaroo_wbc.ros.diagnostics (message building, publishing, throttled logging)."""

from __future__ import annotations

import time

import numpy as np
import pytest

pytest.importorskip("rclpy", reason="rclpy is not importable (ROS 2 not sourced)")

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402

from kangaroo_wbc.ros.diagnostics import (  # noqa: E402
    DiagnosticsPublisher,
    Level,
    ThrottledLogger,
    format_value,
    make_status,
)
from test.ros.conftest import LogRecorder  # noqa: E402


def test_make_status_levels_and_values() -> None:
    status = make_status("est: input", Level.WARN, "IMU stale",
                         {"age_ms": 12.3456789, "ok": False, "n": 3, "v": np.array([1.0, 2.5])},
                         hardware_id="kangaroo")
    assert status.level == DiagnosticStatus.WARN
    assert (status.name, status.message, status.hardware_id) == ("est: input", "IMU stale", "kangaroo")
    assert [(kv.key, kv.value) for kv in status.values] == [
        ("age_ms", "12.3457"), ("ok", "false"), ("n", "3"), ("v", "[1. , 2.5]")]
    for level, constant in ((Level.OK, DiagnosticStatus.OK), (Level.ERROR, DiagnosticStatus.ERROR),
                            (Level.STALE, DiagnosticStatus.STALE)):
        assert make_status("x", level, "").level == constant
    assert format_value([1, 2.0]) == "[1, 2]" and format_value("s") == "s"
    with pytest.raises(ValueError):
        make_status("x", 7, "")


def test_publisher_sends_on_absolute_topic(make_node, rclpy_context) -> None:
    node = make_node("diag_source", namespace="/kangaroo")
    listener = make_node("diag_listener")
    received: list[DiagnosticArray] = []
    listener.create_subscription(DiagnosticArray, "/diagnostics", received.append, 10)
    diag = DiagnosticsPublisher(node)
    executor = SingleThreadedExecutor(context=rclpy_context)
    executor.add_node(listener)
    deadline = time.monotonic() + 10.0
    while not received and time.monotonic() < deadline:
        diag.publish([diag.status("loop", Level.OK, "running", {"rate_hz": 1000.0})])
        executor.spin_once(timeout_sec=0.05)
    executor.shutdown()
    assert received, "no DiagnosticArray received on /diagnostics"
    status = received[0].status[0]
    assert status.name == "diag_source: loop" and status.hardware_id == "kangaroo"
    assert status.values[0].key == "rate_hz"


class FakeClock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def test_throttled_logger_per_key() -> None:
    log, clock = LogRecorder(), FakeClock()
    throttled = ThrottledLogger(log, period_s=5.0, clock=clock)
    assert throttled.warning("qp", "QP failed")
    assert not throttled.warning("qp", "QP failed")
    assert throttled.error("imu", "IMU stale")  # another key is independent
    clock.t += 1.0
    assert not throttled.warning("qp", "QP failed")
    clock.t += 4.0
    assert throttled.log("info", "qp", "QP failed")
    assert log.lines == [
        ("warning", "QP failed"),
        ("error", "IMU stale"),
        ("info", "QP failed (repeated 2 more times in the last 5.0 s)"),
    ]
    with pytest.raises(ValueError):
        ThrottledLogger(log, period_s=-1.0)


def test_throttled_logger_with_rclpy_logger(make_node) -> None:
    node = make_node("diag_throttle")
    throttled = ThrottledLogger(node.get_logger(), period_s=60.0)
    assert throttled.warning("k", "printed once")
    assert not throttled.warning("k", "swallowed")


def test_throttled_logger_mixes_levels_on_a_real_rclpy_logger():
    """rclpy binds one severity per call site; the throttled logger must allow mixed levels."""
    import rclpy.logging

    from kangaroo_wbc.ros.diagnostics import ThrottledLogger

    log = ThrottledLogger(rclpy.logging.get_logger("throttle_mix_test"), period_s=0.0)
    assert log.warning("a", "first warning")
    assert log.error("b", "then an error")
    assert log.log("info", "c", "then info")
    assert log.warning("a", "warning again")

"""``/diagnostics`` publishing and throttled logging for kangaroo_wbc nodes.

A node reports its health as ``diagnostic_msgs/DiagnosticArray`` on the absolute topic
``/diagnostics`` (what ``diagnostic_aggregator`` and ``rqt_robot_monitor`` read; it is not pushed
into the launch namespace). Status names follow the ``"<node name>: <check>"`` convention of
``diagnostic_updater``.

Fallbacks in a 1 kHz loop must not flood the log: :class:`ThrottledLogger` prints a given key at
most once per period and says how many repetitions it swallowed.

Example::

    diag = DiagnosticsPublisher(node)
    diag.publish([diag.status("input", Level.WARN, "IMU stale", {"age_ms": 12.5})])
    throttled = ThrottledLogger(node.get_logger(), period_s=5.0)
    throttled.warning("qp_failed", "QP failed, damping")
"""

from __future__ import annotations

import enum
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue

from kangaroo_wbc.ros import qos

DIAGNOSTICS_TOPIC = "/diagnostics"


class Level(enum.IntEnum):
    """Diagnostic levels of ``diagnostic_msgs/DiagnosticStatus``."""

    OK = 0
    WARN = 1
    ERROR = 2
    STALE = 3


def format_value(value: Any) -> str:
    """Human-readable string of a key-value entry (floats to 6 significant digits)."""
    if isinstance(value, bool | np.bool_):
        return "true" if value else "false"
    if isinstance(value, float | np.floating):
        return f"{float(value):.6g}"
    if isinstance(value, np.ndarray):
        return np.array2string(value, precision=6, separator=", ", max_line_width=10_000)
    if isinstance(value, list | tuple) and all(isinstance(v, float | int) for v in value):
        return "[" + ", ".join(format_value(v) for v in value) + "]"
    return str(value)


def make_status(
    name: str,
    level: Level | int,
    message: str,
    values: Mapping[str, Any] | None = None,
    *,
    hardware_id: str = "",
) -> DiagnosticStatus:
    """Build one DiagnosticStatus; ``values`` become KeyValue pairs in insertion order."""
    status = DiagnosticStatus()
    status.level = bytes([int(Level(level))])
    status.name = name
    status.message = message
    status.hardware_id = hardware_id
    status.values = [KeyValue(key=str(k), value=format_value(v)) for k, v in (values or {}).items()]
    return status


def worst_level(statuses: Iterable[DiagnosticStatus]) -> Level:
    """Highest level among ``statuses`` (OK for none)."""
    return max((Level(s.level[0]) for s in statuses), default=Level.OK)


class DiagnosticsPublisher:
    """Publishes DiagnosticArrays on ``/diagnostics`` for one node.

    Args:
        node: the rclpy node (its name prefixes status names, its clock stamps the arrays).
        hardware_id: ``hardware_id`` of every status.
        topic: topic name (absolute by convention).
    """

    def __init__(self, node: Any, *, hardware_id: str = "kangaroo", topic: str = DIAGNOSTICS_TOPIC):
        self._node = node
        self._hardware_id = hardware_id
        self._publisher = node.create_publisher(DiagnosticArray, topic, qos.DIAGNOSTICS)

    def status(
        self, check: str, level: Level | int, message: str, values: Mapping[str, Any] | None = None
    ) -> DiagnosticStatus:
        """A status named ``"<node name>: <check>"``."""
        return make_status(
            f"{self._node.get_name()}: {check}", level, message, values, hardware_id=self._hardware_id
        )

    def publish(self, statuses: Iterable[DiagnosticStatus]) -> DiagnosticArray:
        """Stamp with the node clock and publish; returns the message sent."""
        msg = DiagnosticArray()
        msg.header.stamp = self._node.get_clock().now().to_msg()
        msg.status = list(statuses)
        self._publisher.publish(msg)
        return msg

    def destroy(self) -> None:
        """Destroy the publisher (before the node is destroyed)."""
        self._node.destroy_publisher(self._publisher)


class ThrottledLogger:
    """Log each *key* at most once per ``period_s`` [s]; repetitions in between are counted.

    Args:
        logger: an rclpy logger (or anything with ``debug/info/warning/error`` methods).
        period_s: minimum time between two lines of the same key [s].
        clock: monotonic time source in seconds (injectable for tests).
    """

    def __init__(
        self, logger: Any, period_s: float = 5.0, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        if not period_s >= 0.0:
            raise ValueError(f"period_s must be >= 0, got {period_s}")
        self._logger = logger
        self._period_s = period_s
        self._clock = clock
        self._last: dict[str, float] = {}
        self._suppressed: dict[str, int] = {}

    def log(self, level: str, key: str, message: str) -> bool:
        """Log ``message`` at ``level`` ("debug", "info", "warning", "error") unless ``key`` was
        logged less than ``period_s`` ago. Returns True if a line was written."""
        now = self._clock()
        last = self._last.get(key)
        if last is not None and now - last < self._period_s:
            self._suppressed[key] = self._suppressed.get(key, 0) + 1
            return False
        suppressed = self._suppressed.pop(key, 0)
        if suppressed and last is not None:
            message = f"{message} (repeated {suppressed} more times in the last {now - last:.1f} s)"
        self._last[key] = now
        # rclpy binds a severity to each call site (file and line), so every level is logged from a
        # line of its own: one throttled logger may mix levels.
        if level == "debug":
            self._logger.debug(message)
        elif level == "info":
            self._logger.info(message)
        elif level == "warning":
            self._logger.warning(message)
        elif level == "error":
            self._logger.error(message)
        else:
            raise ValueError(f"unknown log level {level!r}; valid: debug, info, warning, error")
        return True

    def debug(self, key: str, message: str) -> bool:
        """Throttled debug line."""
        return self.log("debug", key, message)

    def info(self, key: str, message: str) -> bool:
        """Throttled info line."""
        return self.log("info", key, message)

    def warning(self, key: str, message: str) -> bool:
        """Throttled warning line."""
        return self.log("warning", key, message)

    warn = warning

    def error(self, key: str, message: str) -> bool:
        """Throttled error line."""
        return self.log("error", key, message)

    def suppressed(self, key: str) -> int:
        """Repetitions of ``key`` swallowed since its last line."""
        return self._suppressed.get(key, 0)

    def reset(self, key: str | None = None) -> None:
        """Forget ``key`` (or every key): its next message is logged immediately."""
        if key is None:
            self._last.clear()
            self._suppressed.clear()
        else:
            self._last.pop(key, None)
            self._suppressed.pop(key, None)

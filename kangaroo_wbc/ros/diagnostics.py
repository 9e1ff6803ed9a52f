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

import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue

from kangaroo_wbc.components.samples import Level, format_value  # the levels of DiagnosticStatus
from kangaroo_wbc.ros import qos

DIAGNOSTICS_TOPIC = "/diagnostics"
#: :class:`Level` -> :class:`ThrottledLogger` level of an event.
LOG_LEVELS = ("info", "warning", "error", "error")
#: ``hardware_id`` of every status a node publishes.
HARDWARE_ID = "kangaroo"


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


#: The actuator modes a ``actuators/modes`` message may carry (``WholeBodyController.set_actuator_mode``).
ACTUATOR_MODES = ("active", "locked", "limp")


def actuator_modes_msg(modes: Mapping[str, str], message: str) -> DiagnosticStatus:
    """``actuators/modes``: one KeyValue per actuator (name → ``active``, ``locked`` or ``limp``);
    level OK when every actuator is active, else WARN; ``message`` says who set them."""
    out = any(m != "active" for m in modes.values())
    return make_status("actuator modes", Level.WARN if out else Level.OK, message, modes, hardware_id=HARDWARE_ID)


def actuator_modes_from_msg(msg: DiagnosticStatus) -> dict[str, str]:
    """The modes of an ``actuators/modes`` message by actuator name.

    Raises:
        InputError: a value that is not a mode (:data:`ACTUATOR_MODES`).
    """
    from kangaroo_wbc.errors import InputError

    modes = {kv.key: kv.value for kv in msg.values}
    bad = {k: v for k, v in modes.items() if v not in ACTUATOR_MODES}
    if bad:
        raise InputError(f"actuators/modes: not a mode {bad}; modes are {list(ACTUATOR_MODES)}")
    return modes


class DiagnosticsPublisher:
    """Publishes DiagnosticArrays on ``/diagnostics`` for one node.

    Args:
        node: the rclpy node (its name prefixes status names, its clock stamps the arrays).
    """

    def __init__(self, node: Any):
        self._node = node
        self._publisher = node.create_publisher(DiagnosticArray, DIAGNOSTICS_TOPIC, qos.DIAGNOSTICS)

    def status(
        self, check: str, level: Level | int, message: str, values: Mapping[str, Any] | None = None
    ) -> DiagnosticStatus:
        """A status named ``"<node name>: <check>"``."""
        return make_status(
            f"{self._node.get_name()}: {check}", level, message, values, hardware_id=HARDWARE_ID
        )

    def publish(self, statuses: Iterable[DiagnosticStatus]) -> DiagnosticArray:
        """Stamp with the node clock and publish; returns the message sent."""
        msg = DiagnosticArray()
        msg.header.stamp = self._node.get_clock().now().to_msg()
        msg.status = list(statuses)
        self._publisher.publish(msg)
        return msg


class ThrottledLogger:
    """Log each *key* at most once per ``period_s`` [s]; repetitions in between are counted.

    Args:
        logger: an rclpy logger (or anything with ``info/warning/error`` methods).
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
        """Log ``message`` at ``level`` ("info", "warning", "error") unless ``key`` was
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
        if level == "info":
            self._logger.info(message)
        elif level == "warning":
            self._logger.warning(message)
        elif level == "error":
            self._logger.error(message)
        else:
            raise ValueError(f"unknown log level {level!r}; valid: info, warning, error")
        return True

    def warning(self, key: str, message: str) -> bool:
        """Throttled warning line."""
        return self.log("warning", key, message)

    def error(self, key: str, message: str) -> bool:
        """Throttled error line."""
        return self.log("error", key, message)

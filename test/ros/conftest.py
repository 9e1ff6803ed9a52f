"""Fixtures for the ROS adapter tests (unit tests: in-process rclpy, no other process)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from test.integration.ros_harness import RosEnvironment, ros_environment  # noqa: F401


@pytest.fixture
def rclpy_context(ros_environment: RosEnvironment) -> Iterator[Any]:
    """A fresh rclpy context in the session's isolated domain (unit-test infrastructure)."""
    import rclpy

    context = rclpy.Context()
    rclpy.init(context=context, domain_id=ros_environment.domain_id)
    try:
        yield context
    finally:
        context.try_shutdown()


@pytest.fixture
def make_node(rclpy_context: Any) -> Iterator[Any]:
    """Factory ``make_node(name, **kwargs)`` of rclpy nodes in :func:`rclpy_context`, destroyed after."""
    from rclpy.node import Node

    nodes: list[Node] = []

    def make(name: str, cls: type = Node, **kwargs: Any) -> Any:
        node = cls(name, context=rclpy_context, **kwargs)
        nodes.append(node)
        return node

    yield make
    for node in nodes:
        node.destroy_node()


class LogRecorder:
    """Stand-in logger recording ``(level, message)`` pairs (unit-test helper)."""

    def __init__(self) -> None:
        self.lines: list[tuple[str, str]] = []

    def _record(self, level: str):
        return lambda message, **kwargs: self.lines.append((level, message)) or True

    def __getattr__(self, level: str):
        if level in ("debug", "info", "warning", "warn", "error", "fatal"):
            return self._record(level)
        raise AttributeError(level)
